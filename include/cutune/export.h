/* cutune — export (seed 001 phase 2): tuningresults/ -> a stand-alone CUDA project of the representatives, and
 * clean, which removes what the export and energy phases generated.
 *
 * Layout under the output folder DIR:
 *   kernels/caseN/kernelK.cuh   generated kernel, entry extern "C" cut_conv2d_caseN_kK
 *   kernels/caseN/kernelK.cu    int launch_caseN_kK(in, w, out, stream): the schedule's grid/block/dynamic smem;
 *                               (in, w, out, bias, stream) for a kernel with a fused epilogue
 *   kernels/driver.cu           one measurement driver for all kernels (validate, then time)
 *   kernels/CMakeLists.txt      builds the driver with nvcc alone (no cutune headers or libraries)
 *   kernels/kernel_metadata.csv one row per kernel (CUT_EXPORT_CSV_HEADER)
 *   kernels/.cutune-generated   marker: the folder belongs to cutune (clean may remove it)
 * N is the case index of the results file name, K the 1-based line number in that file (seed 001's numbering). */
#ifndef CUTUNE_EXPORT_H
#define CUTUNE_EXPORT_H

#include "cutune/codegen.h"
#include "cutune/common.h"
#include "cutune/gemm.h"
#include "cutune/space.h"
#include "cutune/util.h"
#include "cutune/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A folder holding a file of this name was created by cutune; clean removes only such folders (plus an export
 * build folder, see cut_clean). The energy phase marks kernel_outputs/ and scripts/ the same way. */
#define CUT_EXPORT_MARKER ".cutune-generated"
#define CUT_EXPORT_CSV_HEADER                                                                                     \
    "case,kernel_id,n,h,w,co,ci,kh,kw,stride,pad,template,knobs,grid_x,grid_y,grid_z,block_x,block_y,block_z,"    \
    "smem_dynamic,tuned_ms,tuned_gflops"

/* One exported kernel. */
typedef struct cut_export_kernel {
    int case_idx;  /* N, 1-based */
    int kernel_id; /* K, 1-based line number in the results file */
    cut_conv conv;
    cut_sched sched;
    double tuned_ms, tuned_gflops;
    cut_kernel_src ks; /* source with entry cut_conv2d_caseN_kK; owned */
} cut_export_kernel;

typedef struct cut_export_set {
    int n;
    cut_export_kernel *k; /* owned, ordered by case, then kernel id */
    int skipped;          /* lines of unmeasured or failed trials that were left out */
    int unexportable;     /* measured kernels the launchers cannot run yet (wgmma_conv: a TMA map, sm_90a), left
                             out with a warning each */
} cut_export_set;

/* Reads every *.json in results_dir, checks each line (well-formed, workload equal to the file name's, schedule
 * valid for the workload under sm_90 limits) and generates every kernel in memory. Refuses a missing folder, no
 * results, a malformed or partial line, an invalid schedule and two files of the same case. Nothing is written.
 * Caller frees with cut_export_set_free, also after an error. */
int cut_export_load(const char *results_dir, cut_export_set *set, cut_err *e);
void cut_export_set_free(cut_export_set *set);

/* "tco=4;toh=2;..." (the template's knobs in order) into buf. Returns the length, or -1 if buf is too small. */
int cut_export_knobs(const cut_sched *s, char *buf, size_t n);
/* Appends one CSV row (no header) with '\n'. */
void cut_export_csv_row(cut_buf *b, const cut_export_kernel *k);

/* Writes the export of set under outdir (see the layout above); arch is the CUDA architecture number that
 * kernels/CMakeLists.txt defaults to ("90"). A kernels/ folder from an earlier export is replaced; one without
 * the marker is refused. Each file is written atomically. */
int cut_export_write(const cut_export_set *set, const char *outdir, const char *arch, cut_err *e);

/* Generated text (exposed for tests). Each appends to b. */
/* C++ text of cutune's input generator (fill_uniform(std::vector<float>&, uint64_t seed)), shared by the exported
 * drivers of every op. */
extern const char cut_export_rng_text[];
/* The exported drivers' timing (C++ text): time_median(launch, flush, flush_bytes, stream, iters, min_ms,
 * &median_ms, &launches), cutune's policy (warm-up, L2 flush before each launch, event pairs, median), one text for
 * the conv, GEMM and optimized-kernel drivers. */
extern const char cut_export_timing_text[];
/* CUDA_CHECK(x) of the exported drivers (C++ text): a failed runtime call printed with its expression and location,
 * its error returned. */
extern const char cut_export_cuda_check_text[];
/* A launcher's opt-in to the kernel's dynamic shared memory above 48 KiB (nothing when it uses none); the launcher
 * has `smem` in scope and returns an int. */
/* The launcher's opt-in to more than 48 KiB of dynamic shared memory for the kernel named qualified (with its
 * namespace); nothing when the kernel needs none. */
void cut_export_smem_optin_text(cut_buf *b, const cut_kernel_src *ks, const char *qualified);
/* kernelK.cu: launch_caseN_kK, launch_caseN_kK_ws and launch_caseN_kK_workspace_bytes (cutune_kernels.h). */
void cut_export_wrapper_text(cut_buf *b, const cut_export_kernel *k);
/* 1 when the launchers of a kernel of c are the plain fp32 ones, (const float *in, const float *w, float *out, ...):
 * data stored as floats (fp32, tf32) and no epilogue. */
int cut_export_conv_plain(const cut_conv *c);
/* The launcher's parameters before the workspace and the stream: "const float *in, const float *w, float *out" for
 * fp32 and tf32 data, void pointers for fp16 and bf16 (16-bit patterns), then with an epilogue its bias
 * ("const float *bias" or "const void *bias"). */
void cut_export_conv_params(const cut_conv *c, char *buf, size_t n);
/* The arguments that pass them on: "in, w, out" and ", bias" with an epilogue; from_void: from void pointers, cast to
 * float pointers for fp32 and tf32 data (the driver's adapters). */
void cut_export_conv_args(const cut_conv *c, int from_void, char *buf, size_t n);
/* C++ text of the conv driver's host part (plain C++ after cut_export_rng_text and <algorithm>, <cmath>, <cstdint>,
 * <cstdio>, <cstring>, <vector>): the workload's enums and conv_case {id, n, h, w, co, ci, kh, kw, stride, pad,
 * dtype, layout, epi}; make_inputs(case, seed, in, w, bias), cutune's input set 0 of the seed rounded to the dtype
 * (the bias of an epilogue from its own stream); pack / unpack to and from the storage type; reference(case, in, w,
 * bias, out), in double in the case's layout with its epilogue, rounded as cutune stores its reference;
 * tolerance(case, scale, &atol, &rtol) and compare(case, kernel, out, ref, atol, rtol, &max_err), cutune's check. */
extern const char cut_export_conv_host_text[];
/* kernelK.cuh's namespace ("cut_caseN_kK") and include guard ("CUTUNE_CASEN_KK_CUH"). */
void cut_export_kernel_names(const cut_export_kernel *k, char *ns, size_t nsn, char *guard, size_t gn);
/* 1 when k needs a workspace (split-K), with its partial-sum floats and tile counters; 0 (both 0) otherwise. */
int cut_export_workspace(const cut_export_kernel *k, size_t *partial_floats, size_t *counters);
/* Bytes of k's workspace (0: none). */
size_t cut_export_workspace_bytes(const cut_export_kernel *k);
/* kernels/cutune_runtime.cu: the per-stream workspaces. */
void cut_export_runtime_text(cut_buf *b);
void cut_export_driver_text(cut_buf *b, const cut_export_set *set);
void cut_export_cmake_text(cut_buf *b, const cut_export_set *set, const char *arch);

/* ---- GEMMs (src/post/export_gemm.c, export_gemm_texts.c) ----
 *
 * Layout under DIR/kernels/gemm/ (a CUDA project of its own, added to kernels/CMakeLists.txt):
 *   <gemm name>/kernelK.cuh   generated kernel, entry extern "C" cut_gemmG_kK
 *   <gemm name>/kernelK.cu    int launch_gemmG_kK(A, B, C, stream), or (A, B, C, Cin, stream) for a GEMM with
 *                             beta != 0: grid/block/dynamic smem (the grid's z over the batch and split-K slices,
 *                             as the template's cut_kernel_src says), and the TMA maps of A and B encoded with
 *                             cuTensorMapEncodeTiled where the kernel takes them
 *   driver.cu                 one measurement driver (cutune's inputs with Cin, a double GEMM on the GPU as the
 *                             reference in the layout, per batch, with alpha and beta; relative Frobenius check per
 *                             dtype, L2 flush, events, median; checked again after)
 *   CMakeLists.txt            builds gemm_driver with nvcc alone (sm_90a when a kernel needs it)
 *   gemm_metadata.csv         one row per kernel (CUT_EXPORT_GEMM_CSV_HEADER; batch, alpha and beta last, so that
 *                             readers of the older columns read on)
 * G is the 1-based index of the GEMM's results file (tuningresults/gemm_*.json, sorted by name), K the 1-based line
 * number in that file. Split-K kernels of the mma and gemv templates keep their state in module variables, as when
 * cutune measured them: one launch at a time (their .cuh, .cu and cutune_kernels.h say so). */
#define CUT_EXPORT_GEMM_CSV_HEADER                                                                                \
    "gemm,kernel_id,m,n,k,layout,dtype,template,knobs,grid_x,grid_y,grid_z,block_x,block_y,block_z,smem_dynamic,"  \
    "tuned_ms,tuned_tflops,batch,alpha,beta"

typedef struct cut_export_gemm_kernel {
    int gemm_id, kernel_id; /* G and K above */
    cut_gemm gemm;
    cut_sched sched;        /* a GEMM registry schedule */
    double tuned_ms, tuned_tflops;
    cut_kernel_src ks;      /* entry cut_gemmG_kK; owned */
} cut_export_gemm_kernel;

typedef struct cut_export_gemm_set {
    int n;
    cut_export_gemm_kernel *k; /* owned, by GEMM, then kernel id */
    int skipped;               /* unmeasured or failed trials left out */
} cut_export_gemm_set;

/* Reads every gemm_*.json in results_dir (vendor_* and conv files are not read), checks each line (well-formed,
 * workload equal to the file name's, schedule valid under sm_90 limits) and generates every kernel in memory.
 * Refuses, with a sentence, a kernel the launcher cannot take: arguments other than A, B, C and Cin (with beta != 0)
 * or than two TMA maps and C for a plain GEMM, or a grid past CUDA's limits. No GEMM file: an empty set, not an
 * error. Caller frees with cut_export_gemm_set_free, also after an error. */
int cut_export_gemm_load(const char *results_dir, cut_export_gemm_set *set, cut_err *e);
void cut_export_gemm_set_free(cut_export_gemm_set *set);
/* Writes kdir/gemm/ (kdir is the prepared kernels/ folder of cut_export_write_all); nothing for an empty set. */
int cut_export_gemm_write(const cut_export_gemm_set *set, const char *kdir, const char *arch, cut_err *e);
/* The launcher's parameters before the stream: "const void *A, const void *B, float *C", then ", const float *Cin"
 * when g reads C (beta != 0). A and B are in the dtype's storage type (float for fp32 and tf32, the 16-bit patterns
 * of __half and __nv_bfloat16 for fp16 and bf16). */
void cut_export_gemm_params(const cut_gemm *g, char *buf, size_t n);
/* 1 when k keeps split-K state in module variables (a "splitk" knob above 1: mma's turn counters, gemv's partial
 * sums and counters), with what it keeps in what (may be NULL); 0 otherwise. */
int cut_export_gemm_module_state(const cut_export_gemm_kernel *k, char *what, size_t n);
void cut_export_gemm_launcher_text(cut_buf *b, const cut_export_gemm_kernel *k);
/* C++ text of the GEMM driver's host part (plain C++ after cut_export_rng_text and <cmath>, <cstdint>, <cstring>,
 * <vector>): the enums and gemm_case {id, m, n, k, layout, dtype, batch, alpha, beta, name}; make_inputs(case, seed,
 * a, b, cin), cutune's input set 0 of the seed (A and B rounded to the dtype; Cin fp32, only when beta != 0);
 * pack / unpack to and from the storage type; reference_at(case, a, b, cin, idx), one output of the double
 * reference as cutune sums and stores it (a __host__ __device__ function under nvcc); tolerance(dtype) and
 * rel_error(c, ref), cutune's check. */
extern const char cut_export_gemm_host_text[];
void cut_export_gemm_driver_text(cut_buf *b, const cut_export_gemm_set *set);
void cut_export_gemm_cmake_text(cut_buf *b, const cut_export_gemm_set *set, const char *arch);
/* kernels/cutune_kernels.h: every launcher of the conv and GEMM kernels, for C and C++. */
void cut_export_api_header_text(cut_buf *b, const cut_export_set *set, const cut_export_gemm_set *gemm);

/* ---- every op at once ---- */

/* Conv kernels as cut_export_load, except that a folder with no conv results gives an empty set (allow_empty 1). */
int cut_export_load_conv(const char *results_dir, int allow_empty, cut_export_set *set, cut_err *e);
/* Writes DIR/kernels/ with the conv kernels of conv (its driver, CMakeLists.txt and CSV as cut_export_write) and the
 * GEMMs of gemm under kernels/gemm/; kernels/CMakeLists.txt adds the gemm project when there is one. Either set may
 * be empty, not both. */
int cut_export_write_all(const cut_export_set *conv, const cut_export_gemm_set *gemm, const char *outdir,
                         const char *arch, cut_err *e);

/* Creates dir (if needed) and its marker file. */
int cut_export_mark_dir(const char *dir, cut_err *e);
/* Readies dir to be written by cutune: marked (created if needed); the files an earlier run listed in the marker's
 * manifest ("file" lines) removed, an older cutune's folder without a manifest removed whole; whatever is left is
 * someone else's and recorded as "keep". 0, or -1 with e. */
int cut_export_reset_dir(const char *dir, cut_err *e);
/* After writing: every entry of dir that is not "keep" (nested marked folders aside) is recorded as cutune's
 * ("file" lines), so that a re-export or cut_clean removes exactly those. */
int cut_export_seal_dir(const char *dir, cut_err *e);
/* 1 if dir is a real directory (not a symbolic link) holding the marker. */
int cut_export_dir_marked(const char *dir);

/* What clean did with one candidate path. */
typedef void (*cut_clean_report)(void *ctx, const char *path, int removed, const char *why);
/* Removes from outdir what cutune generated, never tuningrecords/ or tuningresults/:
 *   kernels/, kernel_outputs/, scripts/  when they hold the marker: the files its manifest lists (marked folders
 *                                       inside first), the folder itself only when nothing else is left in it;
 *   build/                              when it holds the marker, or it is the CMake build folder of the
 *                                       exported kernels/ (its CMakeCache.txt names outdir/kernels as the source
 *                                       folder and outdir/kernels holds the marker);
 *   kernel_metadata.csv                 when its first line is CUT_EXPORT_CSV_HEADER;
 *   CMakeLists.txt, run_all.sh,         when cut_export_root_file_ours (CUT_EXPORT_ROOT_TAG at the top); build/
 *   run_layer_*.sh                      also qualifies when its CMakeCache.txt names DIR and DIR/CMakeLists.txt is
 *                                       cutune's.
 * Symbolic links are never followed. report (may be NULL) is called for every candidate that exists. Returns the
 * number of paths removed, or -1. */
int cut_clean(const char *outdir, cut_clean_report report, void *ctx, cut_err *e);
/* Removes cutune's cache folders: the per-user one (cut_default_cache_path: $XDG_CACHE_HOME/cutune or
 * ~/.cache/cutune, with the NVRTC cubins and the emulator's host-compiled kernels under emu/) and the per-folder
 * caches earlier versions kept in outdir (.cutune_emu/, .cutune_cache/). Each only when it is a real folder (a
 * symbolic link is reported and kept, its target untouched), owned by this user, and has cutune's name; removal never
 * follows a link. A folder named by $COMPILE_CACHE_DIR is the user's and is reported, not removed. report (may be
 * NULL) is called for every one that exists. Returns the number of folders removed, or -1. */
int cut_clean_cache(const char *outdir, cut_clean_report report, void *ctx, cut_err *e);

/* ---- seed 001's run scripts and root files (src/post/export_scripts.c) ----
 *
 * Beside kernels/ under the output folder DIR (seed 001's places):
 *   scripts/<W>/run_kernelK_powercapP.sh  cutune energy --case N (GEMM: --gemm G) --kernel K --power-cap-index P,
 *                                         P = 1..CUT_POWERCAP_PER_MODEL -> kernel_outputs/<W>/powercapP/
 *   run_layer_<W>.sh                      every kernel of W, one cutune energy call per cap
 *   run_all.sh                            every run_layer_*.sh
 *   kernel_metadata.csv                   the conv kernels' CSV (as kernels/kernel_metadata.csv); none for GEMMs only
 *   CMakeLists.txt                        add_subdirectory(kernels): cmake -S DIR -B DIR/build builds the drivers
 * W is caseN or the GEMM's name (cut_gemm_name). Every script is bash (set -euo pipefail), executable, changes to DIR
 * relative to its own place (the folder can be moved), calls ${CUTUNE:-<the exporting binary>} and passes its
 * arguments on to cutune energy. scripts/ is a marked folder like kernels/; the root files carry CUT_EXPORT_ROOT_TAG
 * at their top (the CSV: export's header), and a root file without it is never overwritten. */
#define CUT_EXPORT_ROOT_TAG "# Generated by cutune export"

typedef struct cut_export_run_opts {
    const char *cutune_exe; /* the binary the scripts call by default (an absolute path); NULL or "": "cutune" */
    const char *results;    /* --results the scripts pass to cutune energy; NULL: DIR/tuningresults (the default) */
} cut_export_run_opts;

/* 1 if path is a regular file cutune export wrote at the root: its first line (the second after "#!") starts with
 * CUT_EXPORT_ROOT_TAG, or its first line is CUT_EXPORT_CSV_HEADER. */
int cut_export_root_file_ours(const char *path);
/* 1 when name is a per-workload run script's name, run_layer_<label>.sh (the label non-empty). */
int cut_export_is_layer_script(const char *name);
/* Refuses, writing nothing, when DIR/scripts exists without the marker or a root file the export would write
 * (CMakeLists.txt, run_all.sh, kernel_metadata.csv, run_layer_<W>.sh) exists and is not cutune's. */
int cut_export_check_root(const cut_export_set *set, const cut_export_gemm_set *gemm, const char *outdir,
                          cut_err *e);
/* Writes the scripts and root files above (an earlier export's scripts and run_layer_*.sh are replaced). Call after
 * cut_export_check_root and cut_export_write_all; arch as there. */
int cut_export_write_scripts(const cut_export_set *set, const cut_export_gemm_set *gemm, const char *outdir,
                             const char *arch, const cut_export_run_opts *ro, cut_err *e);
/* What `cutune export` writes: cut_export_check_root, cut_export_write_all, cut_export_write_scripts. */
int cut_export_write_project(const cut_export_set *set, const cut_export_gemm_set *gemm, const char *outdir,
                             const char *arch, const cut_export_run_opts *ro, cut_err *e);

/* ---- optimized user kernels: `cutune optimize`'s output -> one stand-alone CUDA project per kernel ----------
 *
 * For every opt_dir/kernels/_NAME/ (a finished search: search_state.json names a measured best), under
 * outdir/kernels/opt/ (which gets the CUT_EXPORT_MARKER file, so cut_clean removes it; an earlier export of NAME
 * there is replaced; outdir/kernels/ itself is not marked):
 *   NAME/baseline.cuh, best.cuh  the baseline's and the best variant's materialised sources as the optimizer wrote
 *                                them (kernel.cu), each with an include guard, the entry renamed to NAME_baseline /
 *                                NAME_best, the code in namespace cutune_opt_NAME_<role> (helpers and typedefs of
 *                                two states cannot clash), the source's top-level #include lines hoisted out of it,
 *                                and an #undef of every macro it defines (the tunables first) at its end: the
 *                                headers compose in one translation unit. A best that is the baseline is exported
 *                                twice (the README says so).
 *   NAME/reference.cuh           the spec's reference kernel (NAME_reference, the baseline's tunables), if it has one
 *   NAME/launch.h, launch.cu     int launch_NAME_<role>(<the spec's args in order>, cudaStream_t): the grid, block
 *                                and dynamic shared memory cut_kspec_call resolves for the state's tunables, the
 *                                arguments passed as bytes (cudaLaunchKernel), as cutune's runner passes them
 *   NAME/inputs/<input>.bin      input set 0 from cut_kspec_work (raw little-endian), and inputs/manifest.txt
 *                                ("name dtype elements bytes" per line after a # header)
 *   NAME/driver.cu               reference outputs (the reference kernel, else the baseline), then the baseline and
 *                                the best: poison, check, time (L2 flush, events, median), check again
 *   NAME/CMakeLists.txt, README.md
 * The spec comes from opt_dir/kernels/_NAME/spec.json (cutune optimize writes it: sources inline, --sizes applied);
 * without it, from the --input and --sizes of the command that opt_dir/summary.json records. Either way it must
 * reproduce the search: the baseline's kernel.cu and every exported state's launch (control.json) are compared. */

#include "cutune/kstate.h" /* cut_kspec, cut_work, cut_call */

typedef enum cut_xo_role { CUT_XO_BASELINE, CUT_XO_BEST, CUT_XO_REFERENCE, CUT_XO_ROLES } cut_xo_role;

/* One exported state. */
typedef struct cut_xo_state {
    int present;                  /* the reference: only when the spec has one */
    char id[32];                  /* "baseline", "v0004", "reference" */
    char entry[CUT_KS_NAME + 16]; /* NAME_baseline, NAME_best, NAME_reference */
    char ns[CUT_KS_NAME + 32];    /* cutune_opt_NAME_<role> */
    char *header;                 /* the .cuh text; owned */
    long long vals[CUT_KS_MAX_VARS];
    cut_call call;               /* launch and argument bytes (src and bin NULL) */
    double ms;                    /* median time result.json recorded; -1 for the reference */
} cut_xo_state;

/* One move on the way from the baseline to the best. */
typedef struct cut_xo_step {
    char id[32], move[48], label[160];
    double ms, speedup; /* -1 when result.json does not say */
} cut_xo_step;

typedef struct cut_export_opt {
    char name[CUT_KS_NAME];
    char kdir[4096];      /* opt_dir/kernels/_NAME */
    char spec_from[4096]; /* the file the spec was read from */
    cut_kspec spec;
    cut_work work;       /* the input sets cutune generated (set 0 is exported) */
    cut_xo_state st[CUT_XO_ROLES];
    double speedup;       /* best over baseline as result.json recorded it */
    int nsteps;
    cut_xo_step *steps;   /* owned; the first move from the baseline first */
    char gpu[128], backend[32]; /* what measured the search (summary.json), "" when unknown */
    char note[512];       /* a remark for README.md ("" when none) */
} cut_export_opt;

typedef struct cut_export_opt_set {
    int n;
    cut_export_opt *k; /* owned, by name */
} cut_export_opt_set;

/* Reads every finished search of opt_dir/kernels/ (only NAME's when name_or_null is not NULL) into memory: spec,
 * sources, headers, launches, inputs, the moves. Refuses a missing opt_dir, no optimized kernel (or no NAME), a
 * search without a measured best, a spec that cannot be read or no longer reproduces the search, and a source whose
 * entry cannot be renamed. Nothing is written. Caller frees set with cut_export_opt_set_free, also after an error. */
int cut_export_opt_load(const char *opt_dir, const char *name_or_null, cut_export_opt_set *set, cut_err *e);
void cut_export_opt_set_free(cut_export_opt_set *set);
/* Writes set under outdir/kernels/opt/ (see above); arch as in cut_export_write. A kernels/opt/ without the marker
 * is refused, as is a destination that holds the search itself. */
int cut_export_opt_write(const cut_export_opt_set *set, const char *outdir, const char *arch, cut_err *e);
/* cut_export_opt_load + cut_export_opt_write; *nexported (may be NULL) gets the number of kernels written. */
int cut_export_optimized(const char *opt_dir, const char *name_or_null, const char *outdir, const char *arch,
                         int *nexported, cut_err *e);

/* A state's source as an exported header (see above): guard and ns as given, entry renamed to new_entry, banner
 * (lines without comment marks; may be NULL) on top. *out malloc'd. */
int cut_export_opt_header(const char *src, const char *entry, const char *new_entry, const char *ns,
                          const char *guard, const char *banner, char **out, cut_err *e);
/* A generated kernel's source as a header that composes with others and with any library in one translation unit:
 * banner (lines without comment marks; may be NULL), include guard, the source's top-level #include lines, then
 * every macro the source (or prelude: extra #define lines put before the code, may be NULL) defines saved with
 * push_macro and undefined, the code in namespace ns, and at the end each macro #undef'd and the caller's popped
 * back. *out malloc'd. */
int cut_export_wrap_header(const char *src, const char *ns, const char *guard, const char *banner,
                           const char *prelude, char **out);
/* Renames every whole-word use of entry in the code of src (comments and string literals are left alone) to
 * new_entry: exactly one of them must be a definition ("entry(...) {"), and new_entry must not be used yet.
 * *out malloc'd. */
int cut_export_rename_user_entry(const char *src, const char *entry, const char *new_entry, char **out,
                                 cut_err *e);
/* Generated texts of one kernel's project (exposed for tests); each appends to b. */
void cut_export_opt_launch_h(cut_buf *b, const cut_export_opt *x);
void cut_export_opt_launch_cu(cut_buf *b, const cut_export_opt *x);
void cut_export_opt_driver(cut_buf *b, const cut_export_opt *x);
void cut_export_opt_cmake(cut_buf *b, const cut_export_opt *x, const char *arch);
void cut_export_opt_readme(cut_buf *b, const cut_export_opt *x);
void cut_export_opt_manifest(cut_buf *b, const cut_export_opt *x);

#ifdef __cplusplus
}
#endif

#endif
