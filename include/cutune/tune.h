/* cutune — the tuning loop of one case: search -> codegen -> compile -> measure -> record, resumable.
 *
 * Records go to <records_dir>/caseN_conv2d_....json (one line per trial, appended, fsync'd per batch) with the
 * .csv beside it. An existing log is resumed: its schedules are fed to the search and never measured again; a log
 * with >= trials lines is a finished case and is skipped. */
#ifndef CUTUNE_TUNE_H
#define CUTUNE_TUNE_H

#include "cutune/compile.h"
#include "cutune/energy.h"
#include "cutune/record.h"
#include "cutune/measure.h"
#include "cutune/search.h"
#include "cutune/space.h"
#include "cutune/workload.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cut_tune_cfg {
    const char *records_dir; /* tuningrecords/ */
    int trials;              /* per case */
    int batch;               /* candidates per round (default 16) */
    uint64_t seed;
    int use_nvrtc;           /* 1: compile with NVRTC and hand cubins to the runner (GPU backend) */
    cut_compile_opts copts;
    cut_devlimits limits;
    int progress;            /* 1: the progress line, through the log (log.h) */
    cut_strategy_kind strategy; /* --strategy: evolve (0, the default), random or exhaustive (cutune/strategy.h) */
    int case_pos, case_total;/* for the progress line: "case 7 (i/n)", the i-th of n cases this run tunes */
    const char *kernel_dump_dir; /* NULL: none; else failed candidates' source + log are written here */
    double max_seconds;      /* > 0: no candidate starts after this long, also within a batch (the log says how many ran) */
    int use_prior;           /* 1: the cost model also learns from the nearest other workloads' logs in records_dir,
                              * prior_dirs and the shipped priors of the runner's GPU (see cut_prior_select) */
    const char *const *prior_dirs; /* nprior_dirs extra folders of prior logs (--prior-dir), or NULL */
    int nprior_dirs;
    /* --objective. CUT_OBJ_TIME (0, the default): nothing below is used and NVML is never touched. energy / edp:
     * after each round is measured, its energy_top fastest valid candidates also get r->energy with energy_plan
     * (a short tuning-time measurement, not seed 001's final one); their records carry energy_mj / edp / power_w,
     * and the case's best is the minimum objective over those trials. The cost model still learns time only:
     * energy is measured for a few candidates per round, time for every one, and the fast candidates it finds
     * are those whose energy gets measured. A meter failure is a setup error (the run stops). */
    cut_objective objective;
    int energy_top;             /* candidates per round measured for energy (<= 0: 2) */
    cut_energy_plan energy_plan;/* uuid set by the caller */
} cut_tune_cfg;

typedef struct cut_tune_stats {
    int trials_total;    /* lines in the log after the run */
    int trials_new;      /* measured in this run */
    int failures_new;
    int skipped;         /* 1: the case was already finished */
    /* The best trial of the whole log by cfg->objective: time: the fastest valid median; energy / edp: the
     * minimum energy / EDP over the trials with energy measured (its median time in best_ms). -1 if none. */
    double best_ms;
    double best_gflops;
    cut_sched best;
    double best_obj;     /* its objective value (ms, mJ or ms*mJ), -1 if none */
    double best_energy_mj, best_edp, best_power_w; /* energy / edp: its energy fields; else -1 */
    int energy_trials;   /* trials of the whole log with energy measured (energy / edp only) */
    double seconds;      /* wall time of this run */
    int prior_trials;    /* trials of other workloads the cost model started from */
} cut_tune_stats;

/* Tunes one case (1-based case_idx). Returns -1 only for setup errors (unwritable log, runner failure, and with
 * an energy objective a runner without an energy method or a failing meter). */
int cut_tune_case(const cut_tune_cfg *cfg, cut_runner *r, const cut_conv *c, int case_idx, cut_tune_stats *st,
                  cut_err *e);
/* The same over runners r[0..nr) (several GPUs, or MPI ranks: cut_tune_task_on). */
int cut_tune_case_on(const cut_tune_cfg *cfg, cut_runner **r, int nr, const cut_conv *c, int case_idx,
                     cut_tune_stats *st, cut_err *e);

/* ---- prior logs (src/pipeline/prior.c) ----
 *
 * Before its first trial, a case's cost model learns from the logs of the other workloads nearest in shape. They
 * come from a list of folders, in priority order: the records folder (any GPU), the --prior-dir folders and the
 * shipped priors $CUTUNE_WORKLOADS/priors/<gpu-slug>/ (written by scripts/make-priors.py); from the last two only
 * records measured on the runner's GPU are used. */

/* One folder of prior logs; gpu NULL: every record, else only the records whose GPU name equals gpu. */
typedef struct cut_prior_dir {
    const char *path;
    const char *gpu;
} cut_prior_dir;

/* One chosen log. */
typedef struct cut_prior_log {
    char path[1024];
    cut_record *recs; /* n (> 0), owned */
    int n;
    double dist;      /* shape distance to the workload being tuned */
} cut_prior_log;

/* The GPU name with every non-alphanumeric character replaced by '_' ("NVIDIA H200" -> "NVIDIA_H200"). */
void cut_prior_gpu_slug(const char *gpu, char *buf, size_t n);
/* Distance between two workloads in log2 shape space (output pixels, channels, filter size, stride, batch). */
double cut_prior_shape_distance(const cut_conv *a, const cut_conv *b);
/* Chooses at most max logs (*.json) over dirs, nearest to c in shape first: never a log of c itself, never one
 * without usable records, and a workload found in several folders only from the first. A missing folder is
 * skipped; an unreadable log is skipped with a warning through the log (a prior is an optimisation, never fatal).
 * Returns the count; *out (allocated, owned) is freed with cut_prior_logs_free. */
int cut_prior_select(const cut_prior_dir *dirs, int ndirs, const cut_conv *c, int max, cut_prior_log **out);
void cut_prior_logs_free(cut_prior_log *logs, int n);

/* ---- the final measurement (src/pipeline/final.c) ---- */

#define CUT_FINAL_MAX 8

typedef struct cut_final {
    int k;                          /* kernels re-timed: the k fastest valid records */
    cut_sched sched[CUT_FINAL_MAX];
    double search_ms[CUT_FINAL_MAX]; /* median recorded during the search */
    double final_ms[CUT_FINAL_MAX];  /* best round's median with the longer timing, -1 if it failed */
    double warm_ms[CUT_FINAL_MAX];   /* best round's warm back-to-back time per launch (a CUDA graph), -1: none */
    int best;                        /* index of the fastest re-timed kernel (cold), -1 if none */
    double vendor_ms;                /* cuDNN's fastest algorithm, best round; -1 if not measured */
    double vendor_warm_ms;           /* the baseline's warm time, best round; -1: none */
    char vendor_algo[128];
    double vendor_tf32_ms;           /* an fp32 conv's second cuDNN column, TF32 tensor-core math (cutune baseline,
                                        timed once after the rounds); -1: not measured */
    char vendor_tf32_algo[128];
} cut_final;

/* The longer timing policy of the final measurement: >= 20 launches and >= 200 ms per kernel, and the warm
 * back-to-back time besides the cold one. */
void cut_final_timing(cut_timing *t);
/* Re-times the topk fastest valid records of a case (regenerated, compiled with co unless co is NULL, i.e. the
 * emulation runner) with cut_final_timing over `rounds` rounds; with_vendor (GPU runner only) times cuDNN after
 * the kernels in every round. r must be prepared for c. r->timing is restored afterwards. Returns -1 for setup
 * errors. */
int cut_final_case(cut_runner *r, const cut_compile_opts *co, const cut_conv *c, const cut_record *recs, int n,
                   int topk, int rounds, int with_vendor, cut_final *out, cut_err *e);
/* One line for people, and one JSON object per line (the format of `cutune baseline --json`); search_s is the
 * tuning time of this run (-1: unknown). */
void cut_final_print(FILE *f, const cut_conv *c, int case_idx, const cut_final *fin);
void cut_final_json(FILE *f, const cut_conv *c, int case_idx, int trials, double search_s, const cut_final *fin);

#ifdef __cplusplus
}
#endif

#endif
