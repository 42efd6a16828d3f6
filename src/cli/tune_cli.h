/* cutune tune — pieces shared by the conv and GEMM paths of the subcommand (src/cli/cmd_tune.c,
 * src/cli/tune_gemm.c). */
#ifndef CUTUNE_CLI_TUNE_H
#define CUTUNE_CLI_TUNE_H

#include "cutune/gemm.h"
#include "cutune/measure.h"
#include "cutune/record.h"
#include "cutune/task.h"
#include "cutune/tune.h"

/* Opens the runner of --backend (cuda: GPU gpu, NVRTC with cache_dir, cfg->limits and copts from the GPU; emu:
 * the host emulator, its compiled kernels under cut_cli_cache_dir("emu")) and says which on stderr. No GPU with
 * cuda: a sentence pointing at --backend emu. Returns the exit code (CUT_EXIT_OK with *out set; the caller frees it
 * with cut_runner_free). */
int cut_cli_tune_backend(const char *backend, int gpu, const char *cache_dir, const cut_timing *tm, cut_tune_cfg *cfg,
                         cut_runner **out);

/* The runners of a tune: the one of --backend (cut_cli_tune_backend), or on rank 0 of an MPI job one per serving
 * rank (cut_cli_mpi_runners), cfg's limits from their GPU; the candidates compile where compile_on says (--compile-on:
 * "ranks", the default when NULL, or "root": then cfg's NVRTC options are for their GPU). *out (allocated) holds *n
 * of them: free with cut_cli_runners_free. Returns the exit code. */
int cut_cli_tune_runners(const char *backend, const char *compile_on, int gpu, const char *cache_dir,
                         const cut_timing *tm, cut_tune_cfg *cfg, cut_runner ***out, int *n);

/* Under --backend emu: 0 when a trial of the work `what` (flops FLOP per launch) is estimated to take at most
 * CUT_EMU_MAX_TRIAL_S on the emulator (cut_emu_trial_seconds), or force (--emu-force) is given; else -1 with a
 * sentence naming it, the estimate per trial and for the run's trials, and what to do instead. */
int cut_cli_emu_cost_check(const char *what, double flops, int trials, int force, cut_err *e);

/* Everything `cutune tune` read that a GEMM run uses. */
typedef struct cut_cli_gemm_opts {
    cut_gemm g;
    int gemm_trials;    /* t= of --gemm, 0 when absent */
    int trials;         /* --trials, -1 when absent */
    int test;
    const char *conv_str; /* --conv (an error with a GEMM) */
    const char *tpl;    /* --tpl, NULL when absent */
    const char *backend, *outdir, *cache_dir;
    const char *compile_on; /* --compile-on, NULL when absent */
    int gpu, batch;
    uint64_t seed;
    double timeout;
    int budget;         /* --time-budget seconds, 0: none */
    int quiet, no_sample;
    cut_objective objective;
    cut_strategy_kind strategy;
    int final_k;        /* --final: re-time the K best against the best vendor kernel (on a GPU; default 0) */
    int emu_force;      /* --emu-force: emulate a GEMM however long it takes */
} cut_cli_gemm_opts;

/* tune --final K for any task t tuned into cfg->records_dir with runner r (still prepared for it): the K fastest of
 * its log re-timed with the longer policy over 2 rounds in the same worker, against t->baseline when with_baseline;
 * a line on stdout and one in OUTDIR/final.jsonl (cut_final_task_json; trials: the log's count). -1 with e. */
int cut_cli_final(const cut_tune_cfg *cfg, cut_task *t, cut_runner *r, int k, int with_baseline, const char *outdir,
                  int trials, cut_err *e);

/* `cutune tune --gemm ...`: tunes one GEMM. Returns the exit code (2: a usage error, or no template computes the
 * dtype on the backend; 1: a setup error). */
int cut_cli_tune_gemm(const cut_cli_gemm_opts *o);

/* Everything `cutune tune --kernel SPEC` reads. */
typedef struct cut_cli_kernel_opts {
    const char *spec;       /* --kernel */
    const char *sizes;      /* --sizes N=V,..., NULL when absent */
    int trials;             /* --trials, -1 when absent (200; --test 20) */
    int test;
    const char *backend, *outdir, *cache_dir;
    const char *compile_on; /* --compile-on, NULL when absent */
    int gpu, batch;
    uint64_t seed;
    double timeout;
    int budget;
    int quiet;
    int final_k;            /* --final: re-time the K best against the spec's baseline (default 3 on a GPU, 0 emulated) */
    cut_strategy_kind strategy;
} cut_cli_kernel_opts;

/* `cutune tune --kernel SPEC`: tunes a kernel spec's tunables. Returns the exit code (2: a bad spec or option). */
int cut_cli_tune_kernel(const cut_cli_kernel_opts *o);

#endif
