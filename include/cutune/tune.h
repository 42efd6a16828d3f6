/* cutune — the tuning loop of one case: search -> codegen -> compile -> measure -> record, resumable.
 *
 * Records go to <records_dir>/caseN_conv2d_....json (one line per trial, appended, fsync'd per batch) with the
 * .csv beside it. An existing log is resumed: its schedules are fed to the search and never measured again; a log
 * with >= trials lines is a finished case and is skipped. */
#ifndef CUTUNE_TUNE_H
#define CUTUNE_TUNE_H

#include "cutune/compile.h"
#include "cutune/record.h"
#include "cutune/measure.h"
#include "cutune/search.h"
#include "cutune/space.h"
#include "cutune/workload.h"

#include <stdio.h>

typedef struct cut_tune_cfg {
    const char *records_dir; /* tuningrecords/ */
    int trials;              /* per case */
    int batch;               /* candidates per round (default 16) */
    uint64_t seed;
    int use_nvrtc;           /* 1: compile with NVRTC and hand cubins to the runner (GPU backend) */
    cut_compile_opts copts;
    cut_devlimits limits;
    int progress;            /* 1: print the progress line on stderr */
    int case_pos, case_total;/* for the progress line: "case i/n" */
    const char *kernel_dump_dir; /* NULL: none; else failed candidates' source + log are written here */
    double max_seconds;      /* > 0: stop proposing new batches after this long (the log says how many ran) */
    int use_prior;           /* 1: the cost model also learns from the other workloads' logs in records_dir */
} cut_tune_cfg;

typedef struct cut_tune_stats {
    int trials_total;    /* lines in the log after the run */
    int trials_new;      /* measured in this run */
    int failures_new;
    int skipped;         /* 1: the case was already finished */
    double best_ms;      /* best valid median over the whole log, -1 if none */
    double best_gflops;
    cut_sched best;
    double seconds;      /* wall time of this run */
    int prior_trials;    /* trials of other workloads the cost model started from */
} cut_tune_stats;

/* Tunes one case (1-based case_idx). Returns -1 only for setup errors (unwritable log, runner failure). */
int cut_tune_case(const cut_tune_cfg *cfg, cut_runner *r, const cut_conv *c, int case_idx, cut_tune_stats *st,
                  cut_err *e);

/* ---- the final measurement (src/search/final.c) ---- */

#define CUT_FINAL_MAX 8

typedef struct cut_final {
    int k;                          /* kernels re-timed: the k fastest valid records */
    cut_sched sched[CUT_FINAL_MAX];
    double search_ms[CUT_FINAL_MAX]; /* median recorded during the search */
    double final_ms[CUT_FINAL_MAX];  /* best round's median with the longer timing, -1 if it failed */
    int best;                        /* index of the fastest re-timed kernel, -1 if none */
    double vendor_ms;                /* cuDNN's fastest algorithm, best round; -1 if not measured */
    char vendor_algo[128];
} cut_final;

/* The longer timing policy of the final measurement: >= 20 launches and >= 200 ms per kernel. */
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

#endif
