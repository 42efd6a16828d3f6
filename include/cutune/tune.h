/* cutune — the tuning loop of one case: search -> codegen -> compile -> measure -> record, resumable.
 *
 * Records go to <records_dir>/caseN_conv2d_....json (one line per trial, appended, fsync'd per batch) with the
 * .csv beside it. An existing log is resumed: its schedules are fed to the search and never measured again; a log
 * with >= trials lines is a finished case and is skipped. */
#ifndef CUTUNE_TUNE_H
#define CUTUNE_TUNE_H

#include "cutune/compile.h"
#include "cutune/measure.h"
#include "cutune/search.h"
#include "cutune/space.h"
#include "cutune/workload.h"

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
} cut_tune_stats;

/* Tunes one case (1-based case_idx). Returns -1 only for setup errors (unwritable log, runner failure). */
int cut_tune_case(const cut_tune_cfg *cfg, cut_runner *r, const cut_conv *c, int case_idx, cut_tune_stats *st,
                  cut_err *e);

#endif
