/* cutune — measurement behind a small interface (DESIGN.md style point 7).
 *
 * A runner validates and times candidates of one workload. Implementations:
 *   - the GPU runner: a persistent worker process per GPU (fork+exec of `cutune __worker`) owns the CUDA context;
 *     a fault or hang kills only the worker, the parent records the error and starts a new one;
 *   - the emulation runner (emu.h): compiles the generated CUDA C with the host compiler and runs it on the CPU;
 *   - replay runners in tests.
 * Every runner checks before timing: poisoned output, compare with the reference (atol + rtol*|ref|, NaN never
 * passes, unwritten elements caught by the poison; a GEMM in the GPU runner: relative Frobenius error, NaN poison
 * likewise), then times, then checks the output again. */
#ifndef CUTUNE_MEASURE_H
#define CUTUNE_MEASURE_H

#include "cutune/codegen.h"
#include "cutune/common.h"
#include "cutune/compile.h"
#include "cutune/energy.h"
#include "cutune/gemm.h"
#include "cutune/work.h"
#include "cutune/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One candidate to measure: generated source (for emulation) and its cubin (for the GPU). */
typedef struct cut_candidate {
    const cut_kernel_src *ks;
    const cut_compiled *bin; /* NULL for the emulation runner */
} cut_candidate;

typedef struct cut_result {
    cut_status status;
    char error[256];    /* first mismatch, CUDA error name, "timeout after 10 s", ... */
    double median_ms, min_ms, max_ms;
    int repeats;        /* timed launches */
    double max_abs_err; /* against the reference, on the checked run; for a GEMM workload (GPU runner after
                           cut_runner_gpu_prepare_gemm): the relative Frobenius error cut_gemm_rel_error */
} cut_result;

/* A result before measuring: status OK, no error, times -1 (not measured), no repeats. */
void cut_result_reset(cut_result *r);

/* Timing policy. Defaults: 2 warm-ups, >= 5 repeats and >= 20 ms of timed work, at most 200 repeats. */
typedef struct cut_timing {
    int warmup;
    int min_repeats, max_repeats;
    double min_total_ms;
    int flush_l2;          /* write a buffer larger than L2 before each timed launch */
    double timeout_s;      /* per candidate: worker killed after this (GPU runner) */
} cut_timing;
void cut_timing_default(cut_timing *t);

/* Environment facts recorded with each trial. */
typedef struct cut_measure_env {
    char backend[16];      /* "cuda" | "emu" | "replay" */
    char gpu_name[128];
    char gpu_uuid[64];
    int driver_version;
    char driver_string[32];
    int sm_clock_mhz;
    double power_limit_w;
} cut_measure_env;

typedef struct cut_runner cut_runner;
struct cut_runner {
    void *impl;
    /* Prepares inputs and the reference for a workload (random inputs from seed). */
    int (*prepare)(cut_runner *r, const cut_conv *c, uint64_t seed, cut_err *e);
    /* Optional (NULL when the runner cannot measure GEMMs): prepares inputs A, B and the reference C of a GEMM
     * (random inputs from seed); candidates then get (A, B, C) as (in, w, out) and are checked by relative
     * Frobenius error against cut_gemm_tolerance(dtype). Replaces a conv workload (and the other way round).
     * The GPU runner's is cut_runner_gpu_prepare_gemm; the emulation runner's takes fp32 only. */
    int (*prepare_gemm)(cut_runner *r, const cut_gemm *g, uint64_t seed, cut_err *e);
    /* Validates and times n candidates; res[i] for cands[i]. Returns -1 only for setup errors. */
    int (*measure)(cut_runner *r, const cut_candidate *cands, int n, cut_result *res, cut_err *e);
    /* Optional (NULL when the runner cannot): checks and times one candidate as measure does, then measures its
     * energy with the meter of cutune/energy.h and checks the output once more. res as for measure; *er is
     * filled when res->status is CUT_ST_OK. Returns -1 for setup errors and when the meter fails (NVML missing,
     * counter not moving ...), with the reason in e. */
    int (*energy)(cut_runner *r, const cut_candidate *c, const cut_energy_plan *p, cut_result *res,
                  cut_energy_result *er, cut_err *e);
    /* Optional, with prepare_kernel (NULL when the runner cannot): energy's counterpart for one call on the prepared
     * kernel work, which must have references (capture them with run_kernel first). Checks the call exactly as
     * run_kernel does (poisoned outputs, set 0 checked against its reference with the work's atol/rtol, timed, set
     * 1 checked), then measures its energy with the meter of cutune/energy.h under plan p as energy does (the call
     * launched back to back in chunks, windows between counter changes, p->lrounds of them; GFLOP/s stays 0: a
     * spec counts no FLOPs), then checks set 1 once more. A faulting, hanging or wrong call is res->status, never an
     * error, and leaves *er zeroed; *er is filled when res->status is CUT_ST_OK. Returns -1 for setup errors (not
     * prepared, no references, a bad call or plan) and when the meter fails (NVML missing, counter not moving ...),
     * with the reason in e. The GPU runner and the emulation worker's runner (cut_runner_emu_worker_new) measure it
     * in their worker process (ENERGY_KERNEL); the in-process emulation runner too, without a watchdog. */
    int (*energy_kernel)(cut_runner *r, const cut_call *c, const cut_energy_plan *p, cut_result *res,
                         cut_energy_result *er, cut_err *e);
    /* Optional (NULL when the runner cannot): prepares a user kernel's buffers (kwork.h), copying what it needs
     * from w. Replaces a conv or GEMM workload (and the other way round). Returns -1 for setup errors. */
    int (*prepare_kernel)(cut_runner *r, const cut_work *w, cut_err *e);
    /* Optional, with prepare_kernel: checks, times and checks again one call on the prepared kernel work as
     * kwork.h describes. When the work has no references, outs gets the captured outputs (caller frees with
     * cut_work_outputs_free; outs must not be NULL then). A faulting, hanging or wrong call is res->status, never an
     * error. Returns -1 only for setup errors (not prepared, bad call). */
    int (*run_kernel)(cut_runner *r, const cut_call *c, cut_result *res, cut_work_outputs *outs, cut_err *e);
    /* Refreshes env (clocks) and returns it. */
    const cut_measure_env *(*env)(cut_runner *r);
    void (*destroy)(cut_runner *r);
    cut_timing timing;
};

/* A generated kernel as a call on its op's work (work.h): its entry, launch, dynamic shared memory and tolerance
 * factor; arguments (in, w, out) = buffers 0, 1, 2, or with two TMA maps (ks->ntma == 2) the maps of the buffers
 * their descriptors name (operand 0: buffer 0, 1: buffer 1), then buffer 2. src and bin are ks->src and bin. -1 with
 * res LAUNCH_ERROR for a kernel with another number of maps. */
int cut_call_of_kernel(const cut_kernel_src *ks, const cut_compiled *bin, cut_call *c, cut_result *res);

/* Frees the runner (NULL is a no-op). */
void cut_runner_free(cut_runner *r);

/* The environment variable that names the measurement worker executable. */
#define CUT_WORKER_ENV "CUTUNE_WORKER"

/* The measurement worker executable the runners start when their caller names none (worker_exe NULL): the
 * runners exec `<worker> __worker <dev>|emu:<dir> <in_fd> <out_fd>`, which both the cutune CLI and the
 * cutune-worker executable understand. Looks, in order, at $CUTUNE_WORKER (when set it must be an executable file:
 * no fallback), cutune-worker next to the running executable, <the library's folder>/../libexec/cutune/cutune-worker
 * (a relocated install) and the install location compiled in (<libexecdir>/cutune/cutune-worker). Fills buf (n
 * bytes); -1 with a sentence naming CUTUNE_WORKER when none is found. */
int cut_worker_path(char *buf, size_t n, cut_err *e);

/* GPU runner on device index dev; worker_exe is the worker executable (the cutune CLI passes itself; NULL:
 * cut_worker_path). Fails with a clear sentence when no driver/GPU is present or no worker is found. Caller frees
 * with cut_runner_free. */
cut_runner *cut_runner_gpu_new(int dev, const char *worker_exe, const cut_timing *t, cut_err *e);

/* cuDNN baseline for the prepared workload, in the GPU runner's worker (libcudnn.so.9 loaded with dlopen): fp32
 * NCHW cross-correlation, FMA math only (no tensor-op/TF32 kernels), cudnnFindConvolutionForwardAlgorithmEx with a
 * workspace of up to 1 GiB, then every algorithm it returns is checked and timed with the same routine as
 * candidates. out gets the fastest valid algorithm (out->status != CUT_ST_OK when none was valid) and algo its
 * name ("IMPLICIT_PRECOMP_GEMM"). Returns -1 for setup errors (not a GPU runner, not prepared, no cuDNN). */
int cut_runner_gpu_cudnn(cut_runner *r, cut_result *out, char *algo, size_t algo_len, cut_err *e);

/* A GEMM workload for the GPU runner (issue 6): A and B uniform in [-1, 1) from seed (B from seed ^ the golden-ratio
 * constant, as the conv weights), the reference C from cut_gemm_reference. The worker then checks every candidate by
 * relative Frobenius error (cut_gemm_rel_error <= cut_gemm_tolerance(dtype), NaN poison kept: unwritten outputs
 * fail) and launches kernels with (A, B, C) as the conv kernels' (in, w, out), or with TMA maps of A and B
 * (cut_kernel_src.ntma). Every dtype: fp16 and bf16 inputs are rounded to nearest even before the reference is
 * computed and live on the GPU as 16-bit values (halves / bf16 bits); fp32 and tf32 inputs are floats (tf32's
 * rounding happens in the tensor cores and is covered by its tolerance). A different seed gives fresh inputs (and a
 * new reference); the same workload and seed keep the inputs the worker already holds. Replaces a conv workload given to r->prepare (and the other way round). Returns -1 for setup errors. */
int cut_runner_gpu_prepare_gemm(cut_runner *r, const cut_gemm *g, uint64_t seed, cut_err *e);

/* cuBLAS baseline for the prepared GEMM, in the GPU runner's worker (libcublas.so.13 loaded with dlopen;
 * $CUTUNE_CUBLAS_LIB overrides): cublasSgemm with CUBLAS_PEDANTIC_MATH (fp32 FMA, no TF32 tensor cores), row-major
 * C = A·B (NN) or A·Bᵀ (NT) expressed as the column-major Cᵀ = Bᵀ·Aᵀ, checked and timed with the same routine as
 * candidates. algo gets "SGEMM_PEDANTIC_NN" or "_NT". Returns -1 for setup errors (not a GPU runner, no GEMM
 * prepared, no cuBLAS); a failed check is out->status. */
int cut_runner_gpu_cublas(cut_runner *r, cut_result *out, char *algo, size_t algo_len, cut_err *e);

/* ---- the vendor baseline of a GEMM (the CUTLASS-profiler analogue) ---- */

#define CUT_VENDOR_TOP 8        /* fastest valid candidates reported */
#define CUT_VENDOR_CONFIG_LEN 160

/* What cut_runner_gpu_vendor tries. */
typedef struct cut_vendor_opts {
    int heuristic_n;  /* cuBLASLt heuristic candidates asked for (cublasLtMatmulAlgoGetHeuristic), 0..256 */
    int enumerate;    /* 1: also enumerate algorithm ids x capabilities (tiles, stages, split-K, swizzle) */
    int max_configs;  /* enumerated configurations kept (accepted by cublasLtMatmulAlgoCheck, deduplicated), 0..4096 */
    double budget_s;  /* timing budget: no new candidate is started after it (the running one finishes), > 0 */
} cut_vendor_opts;
/* heuristic_n 32, enumerate 1, max_configs 300, budget_s 120. */
void cut_vendor_opts_default(cut_vendor_opts *o);

/* One timed vendor candidate: its result and its configuration ("cublasGemmEx default (COMPUTE_32F)",
 * "cublasLt algo=23 tile=128x256 stages=64x4 splitk=1 swizzle=1 custom=0"). */
typedef struct cut_vendor_entry {
    cut_result res;
    char config[CUT_VENDOR_CONFIG_LEN];
} cut_vendor_entry;

typedef struct cut_vendor_result {
    cut_vendor_entry best; /* the fastest valid candidate (best.res.status OK); when none was valid, the first
                              failure (status != OK) */
    int tried, valid;      /* candidates checked and timed, and those that passed the check */
    int heuristic;         /* cuBLASLt candidates from the heuristic (after deduplication) */
    int enumerated;        /* cuBLASLt candidates from the enumeration (accepted by AlgoCheck, deduplicated) */
    int budget_hit;        /* 1: candidates were left untimed when the budget ran out */
    char note[256];        /* what was skipped and why ("cuBLASLt unavailable: ..."), or "" */
    int ntop;
    cut_vendor_entry top[CUT_VENDOR_TOP]; /* the fastest valid candidates, fastest first (top[0] is best) */
} cut_vendor_result;

/* The best vendor GEMM for the prepared GEMM workload, in the GPU runner's worker, every candidate checked and timed
 * with the same routine as cutune's kernels (NaN poison, relative Frobenius error <= the dtype's tolerance, L2
 * flush, events, median): cuBLAS (libcublas.so.13, $CUTUNE_CUBLAS_LIB) cublasSgemm with pedantic math and
 * cublasGemmEx with default math for fp32, cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32 for tf32, with 16F / 16BF
 * inputs, a 32F output and CUBLAS_COMPUTE_32F for fp16 / bf16; then cuBLASLt (libcublasLt.so.13,
 * $CUTUNE_CUBLASLT_LIB) with the same types: the heuristic's top o->heuristic_n and, with o->enumerate, up to
 * o->max_configs configurations enumerated from the algorithm ids and their capabilities, all with a workspace of at
 * most 64 MiB. o NULL: the defaults. Returns -1 for setup errors (not a GPU runner, no GEMM prepared, no cuBLAS);
 * a missing cuBLASLt is a note, not an error. */
int cut_runner_gpu_vendor(cut_runner *r, const cut_vendor_opts *o, cut_vendor_result *out, cut_err *e);

/* The worker's main loop (hidden subcommand `cutune __worker <dev> <in_fd> <out_fd>`). Returns the exit code. */
int cut_worker_main(int dev, int in_fd, int out_fd);

#ifdef __cplusplus
}
#endif

#endif
