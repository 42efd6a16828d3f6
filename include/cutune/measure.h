/* cutune — measurement behind a small interface (DESIGN.md style point 7).
 *
 * A runner prepares one work (work.h: whatever op built it) and checks and times calls on it. Two methods, prepare
 * and run; energy is an observer of a run (cut_run_opts), not a method. Implementations:
 *   - the GPU runner: a persistent worker process per GPU (fork+exec of `cutune __worker`) owns the CUDA context;
 *     a fault or hang kills only the worker, the parent records the error and starts a new one;
 *   - the emulation runner (emu.h): compiles the calls' CUDA C with the host compiler and runs it on the CPU; the
 *     emulation worker runs it in a process of its own behind the GPU worker's protocol;
 *   - replay runners in tests.
 * Every runner checks before timing: poisoned outputs, compare with the references by the work's rule, then times
 * on input set 0, then checks again on the fresh input set 1. The helpers below put each op's workload and
 * candidates onto the interface. */
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
    double max_abs_err; /* against the reference, on the checked runs: the largest |got - ref| (a work checked by
                           relative Frobenius error, a GEMM's: that error) */
    double warm_ms;     /* with the timing policy's warm: the time per launch back to back, L2 warm (a CUDA graph of
                           many launches replayed); -1: not measured. median_ms is always the cold single launch. */
    int not_run;        /* 1: never started, the runner's stop_at had passed (a time budget spent): no result at all,
                           nothing to record */
    cut_compile_info comp; /* a runner that compiled the call's source itself (cut_runner_compile_new, a serving rank
                              of an MPI job): its compile's numbers (comp.compiled 1); else comp.compiled 0 */
} cut_result;

/* A result before measuring: status OK, no error, times -1 (not measured), no repeats. */
void cut_result_reset(cut_result *r);

/* Timing policy. Defaults: 2 warm-ups, >= 5 repeats and >= 20 ms of timed work, at most 200 repeats, the L2
 * flushed, each timed launch a CUDA graph, no warm time. */
typedef struct cut_timing {
    int warmup;
    int min_repeats, max_repeats;
    double min_total_ms;
    int flush_l2;          /* write a buffer larger than L2 before each timed launch */
    int graph;             /* GPU: each timed launch is a captured one-launch CUDA graph, so that no host overhead of
                              the launch (a library call's checks, its descriptors) falls between the two events;
                              a call that cannot be captured is launched directly */
    int warm;              /* GPU: also the warm back-to-back time (cut_result.warm_ms), after the checks pass */
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
    int other_procs;       /* other processes computing on the GPU (NVML), -1 unknown: a busy GPU times slower */
    long long clock_events; /* NVML's clock-event (throttle) reasons mask, -1 unknown */
} cut_measure_env;

/* What a run observes besides each call's result. */
typedef struct cut_run_opts {
    cut_work_outputs *outs;        /* a work without references: the captured outputs of the one call (n == 1; caller
                                      frees with cut_work_outputs_free) */
    const cut_energy_plan *energy; /* observe the one call's energy with the meter of cutune/energy.h under this plan
                                      (n == 1, a work with references) into *er: the call launched back to back in
                                      chunks, windows between counter changes, then checked on set 1 once more */
    cut_energy_result *er;
} cut_run_opts;

/* What a runner's prepares cost (the runners that keep works: Triton, GPU and emulation workers): prepares that sent a
 * work to the worker process, the bytes sent or written for them (a restart's resend included), and prepares of a
 * work the runner held already, which sent no data (a select). */
typedef struct cut_prep_stats {
    long sent, held;
    double bytes;
} cut_prep_stats;

typedef struct cut_runner cut_runner;
struct cut_runner {
    void *impl;
    /* Prepares a work (work.h), replacing any other. take: the runner takes over w's data (w->owns_data; w is
     * cleared), else it copies what it needs. A GEMM work whose references are left to the runner (runner_refs) gets
     * them computed. Returns -1 for setup errors (an invalid work, one this runner cannot run). */
    int (*prepare)(cut_runner *r, cut_work *w, int take, cut_err *e);
    /* Checks, times and checks again n calls on the prepared work, res[i] for calls[i], as work.h describes: set 0
     * checked (or captured into o->outs), timed, set 1 checked (or captured); with o->energy, then the energy.
     * A call that cannot run (no cubin, a TMA map the runner cannot encode, arguments that do not fit the work or the
     * kernel), faults, hangs or is wrong is res[i]'s status, never an error. Returns -1 for setup errors (nothing
     * prepared, outs or energy with n != 1) and when the energy meter fails (NVML missing, counter not moving ...),
     * with the reason in e; an observed call that fails leaves *o->er zeroed. The GPU runner runs calls in its
     * worker process (one RUN each); the emulation runner compiles a batch on the host in parallel first. */
    int (*run)(cut_runner *r, const cut_call *calls, int n, const cut_run_opts *o, cut_result *res, cut_err *e);
    /* Refreshes env (clocks) and returns it. */
    const cut_measure_env *(*env)(cut_runner *r);
    void (*destroy)(cut_runner *r);
    cut_timing timing;
    const cut_work *work; /* the prepared work (the runner's own copy), NULL before the first prepare */
    int runner_refs;      /* 1: prepare computes a GEMM work's references itself (the GPU worker's cuBLAS DGEMM) */
    int keyed;            /* the prepared work is the op's from key_op and key_seed (cut_runner_prepare_conv/gemm) */
    cut_work_op key_op;
    uint64_t key_seed;
    /* Optional: run() calls on_result(on_result_ctx, &res[i]) as soon as call i's result is final, in call order, on
     * the thread that called run() (the tuning loop records each trial the moment it is measured). */
    void (*on_result)(void *ctx, const cut_result *res);
    void *on_result_ctx;
    /* Optional: > 0, a cut_now_s() time after which run() starts no further call: each call left gets not_run = 1
     * (and is reported to on_result like any result), so a time budget is honoured within a batch, overshooting by
     * at most the call running when it passes (and, under emulation, the host compile of the calls in hand). */
    double stop_at;
    /* Optional: call c will be run (a variant just written): the runner may get ready for it, e.g. the Triton runner
     * compiles it ahead on its compile pool. Never a failure: whatever it finds, the call's run reports. */
    void (*ahead)(cut_runner *r, const cut_call *c);
    cut_prep_stats prep; /* counted by the runner's prepares (zero for runners that count none) */
};

/* ---- runner helpers (src/measure/runner.c): every op's way onto the one interface ---- */

/* For a runner's run(): calls one at a time through one(r, call, o, res, e), each left not_run once r->stop_at has
 * passed, each told to r->on_result as it ends. -1 when one() returns -1 (a setup error, e set). */
int cut_runner_run_each(cut_runner *r, const cut_call *calls, int n, const cut_run_opts *o, cut_result *res,
                        int (*one)(cut_runner *r, const cut_call *c, const cut_run_opts *o, cut_result *res, cut_err *e),
                        cut_err *e);

/* For a runner's run(): the options' checks every runner makes, its name `who` in the sentence: captured outputs
 * and energy are for one call at a time, an energy plan needs a valid plan and a result to fill, and (refs not
 * NULL: the runner's prepared work) an energy run needs references. 0, or -1 with e. */
int cut_run_opts_check(const char *who, int n, const cut_run_opts *o, const cut_work *refs, cut_err *e);

/* The work of a Conv2D (cut_conv_work) or GEMM (cut_gemm_work, its references left to a runner that computes them)
 * from seed, built and prepared unless the runner holds that op's work from that seed already. -1 for an invalid
 * shape or a setup error. */
int cut_runner_prepare_conv(cut_runner *r, const cut_conv *c, uint64_t seed, cut_err *e);
int cut_runner_prepare_gemm(cut_runner *r, const cut_gemm *g, uint64_t seed, cut_err *e);
/* r gets a copy of the op's work from holds (prepared by cut_runner_prepare_conv/gemm), when both runners compute
 * references alike: the work of several runners is built once (a conv's reference computed once, not once per GPU
 * or rank). 1 when r holds it now, 0 when r must build its own (from holds no op's work, or other runner_refs), -1
 * for a setup error. */
int cut_runner_prepare_like(cut_runner *r, const cut_runner *from, cut_err *e);
/* r->ahead(r, c) when the runner has one (cut_runner.ahead), else nothing. */
void cut_runner_ahead(cut_runner *r, const cut_call *c);
/* A caller's work (a user kernel's: cut_kspec_work), copied. */
int cut_runner_prepare_work(cut_runner *r, const cut_work *w, cut_err *e);
/* The call of generated kernel ks (bin: its cubin; NULL for a runner that compiles the source itself): launch
 * configuration, arguments (the work's buffers in order; TMA maps of A and B when ks->ntma == 2), tolerance factor.
 * 0, or -1 with res LAUNCH_ERROR when it cannot be made. */
int cut_call_of_kernel(const cut_kernel_src *ks, const cut_compiled *bin, cut_call *c, cut_result *res);
/* Generated candidates as calls on the prepared conv or GEMM work (cut_call_of_kernel). -1 for setup errors (nothing
 * prepared, a user kernel's work). */
int cut_runner_measure(cut_runner *r, const cut_candidate *cands, int n, cut_result *res, cut_err *e);
/* One candidate checked and timed as measure does, then observed by the energy meter under plan p and checked once
 * more. *er is filled when res->status is CUT_ST_OK. -1 for setup errors and when the meter fails, with e. */
int cut_runner_energy(cut_runner *r, const cut_candidate *c, const cut_energy_plan *p, cut_result *res,
                      cut_energy_result *er, cut_err *e);
/* One call of a user kernel on the prepared work. When the work has no references, outs gets the captured outputs
 * (outs must not be NULL then). -1 for setup errors: nothing prepared, a call that does not fit the work
 * (cut_call_check). */
int cut_runner_run_call(cut_runner *r, const cut_call *c, cut_result *res, cut_work_outputs *outs, cut_err *e);
/* cut_runner_run_call observed by the energy meter under plan p, on a work with references (capture them first). A
 * call that fails leaves *er zeroed and is res's status. -1 for setup errors (also no references, a bad plan) and
 * when the meter fails. */
int cut_runner_energy_call(cut_runner *r, const cut_call *c, const cut_energy_plan *p, cut_result *res,
                           cut_energy_result *er, cut_err *e);

/* A runner over inner (taken: freed with it) whose times come from the table in file `table` where it knows a call
 * (by its source, entry, launch and scalar arguments), and which learns the times of the calls it does not know
 * (one line appended per call). Every call still runs, checked and timed, on inner: only the times of known calls
 * are replaced. Two searches over one table see identical times for every call they share: `cutune optimize`
 * uses it when $CUTUNE_REPLAY_TIMES names a table, to show that a search resumed after kills makes the decisions
 * of an uninterrupted one despite timer noise. NULL with e when the table cannot be read. */
cut_runner *cut_runner_replay_new(cut_runner *inner, const char *table, cut_err *e);

/* The compile runner: each call's CUDA source (c->src, for sm_XXa when c->arch_a) compiled by the compile layer with
 * o (the target, the disk cache, the NVRTC options: what the tuning loop compiles with), each compile in a child
 * process of its own (a compiler that crashes or runs past compile_limit_s costs only that call: its COMPILE_ERROR),
 * a batch's compiles on o->nthreads at once (<= 0: the online CPUs); then the cubin is run on inner, which it takes
 * (freed with it), and the result carries the compile's numbers (res.comp). With inner NULL nothing runs: the
 * `compile` backend, which says whether each candidate compiles and with how many registers and spills, a result of
 * status CUT_ST_COMPILED (no time) or CUT_ST_COMPILE_ERROR; its env's backend is "compile", its GPU "NVRTC sm_XX (not
 * run)". prepare keeps the work (calls are checked against it). A call that needs a GPU (inline PTX) compiles like
 * any other. NULL with e when NVRTC cannot be used. Caller frees with cut_runner_free. */
/* The longest one compile of the compile runner may take before it is killed (NVRTC takes 5-20 s for the largest
 * unrolled kernels; an MPI job's rank 0 adds it to the time it waits for a call compiled on a serving rank). */
#define CUT_COMPILE_LIMIT_S 300.0
cut_runner *cut_runner_compile_new(cut_runner *inner, const cut_compile_opts *o, double compile_limit_s, cut_err *e);
/* 1 when r is a compile runner (it compiles calls' source itself: hand it no cubins). */
int cut_runner_compiles(const cut_runner *r);

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

/* Triton runner (issue 18): drives the Triton worker (tools/triton_worker.py, docs/triton_worker.md) in a Python
 * process of its own, `python worker_py --interpret` (device -1: Triton's interpreter on the CPU, TRITON_INTERPRET=1)
 * or `--device N` (a GPU through PyTorch), its Triton cache in <cache_dir>/triton (CUTUNE_TRITON_CACHE_DIR). A call's
 * src is a Triton module; the Python assignments of its tunables header (kstate.h: CUT_KST_PY_BEGIN ..
 * CUT_KST_PY_END) are the launch's meta-parameters (num_warps, num_stages its options), its grid is c->grid, its
 * arguments buffers by name and scalars by value (typed by scalar_type). block and smem are Triton's. A worker that
 * dies is the call's FAULT, one that does not reply within t->timeout_s is killed (TIMEOUT); either way the next
 * call gets a fresh worker holding the work again. No energy runs. env(): backend "triton" or "triton-interp", the
 * worker's device name. NULL with a sentence when the worker cannot start (no triton, no numpy, no GPU: its reason).
 * On a GPU, compile_jobs > 0 gives it a compile pool (docs/triton_worker.md, "Compiling ahead"): up to compile_jobs
 * compile-only workers for the GPU's target (its worker's hello says it), fed by ahead() with the launches to come,
 * whose compiles a run waits for, so that the worker's JIT finds them in the cache; never under the interpreter.
 * Caller frees with cut_runner_free (the pool's workers killed and reaped with it). */
cut_runner *cut_runner_triton_new(const char *python, const char *worker_py, int device, const cut_timing *t,
                                  const char *cache_dir, int compile_jobs, cut_err *e);
/* The Triton worker script: $CUTUNE_TRITON_WORKER (a readable file, no fallback), triton_worker.py next to the running
 * executable (the build tree), <its folder>/../libexec/cutune/triton_worker.py, the install location compiled in.
 * Fills buf; -1 with a sentence naming CUTUNE_TRITON_WORKER and the paths tried. */
int cut_triton_worker_path(char *buf, size_t n, cut_err *e);

/* cuDNN baseline for the prepared workload, in the GPU runner's worker (libcudnn.so.9 loaded with dlopen): fp32
 * NCHW cross-correlation, FMA math only (no tensor-op/TF32 kernels), cudnnFindConvolutionForwardAlgorithmEx with a
 * workspace of up to 1 GiB, then every algorithm it returns is checked and timed with the same routine as
 * candidates. out gets the fastest valid algorithm (out->status != CUT_ST_OK when none was valid) and algo its
 * name ("IMPLICIT_PRECOMP_GEMM"). Returns -1 for setup errors (not a GPU runner, not prepared, no cuDNN). */
int cut_runner_gpu_cudnn(cut_runner *r, cut_result *out, char *algo, size_t algo_len, cut_err *e);
/* The same in the workload's dtype and layout (issue 20): tf32_math 0 is the above for fp32 data; 1 lets fp32 data
 * through TF32 tensor cores (checked with the tf32 tolerance); fp16, bf16 and tf32 workloads always run with
 * tensor-op math, whatever tf32_math says. */
int cut_runner_gpu_cudnn_math(cut_runner *r, int tf32_math, cut_result *out, char *algo, size_t algo_len,
                              cut_err *e);
/* A workload with a fused epilogue (bias, bias_relu) is measured as cuDNN gives it: the fused call
 * cudnnConvolutionBiasActivationForward where it takes the algorithm, the graph API's fused conv + bias (+ ReLU)
 * graph for the engines, else the convolution, cudnnAddTensor and cudnnActivationForward timed together. The
 * algorithm's name then ends in " [fused ...]" or " [unfused: ...]": this returns 1 for the first, 0 for the second,
 * -1 for a name without either (no epilogue). */
int cut_cudnn_algo_fused(const char *algo);

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
