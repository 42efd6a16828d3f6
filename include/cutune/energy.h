/* cutune — measuring a kernel's energy with NVML's total-energy counter (the energy component, src/energy/).
 *
 * The counter (mJ) moves in steps (~100 ms apart on an A100; see the step period each measurement reports), so a
 * window that starts and ends at arbitrary times is off by up to one step at each end. The meter therefore aligns
 * its windows to the counter's own updates: it keeps the kernel running in short synchronised chunks, reads the
 * counter after each chunk, and opens and closes each lround's window at a chunk where the counter has just
 * changed. Energy over the window is then whole steps, and the iterations counted in it are off by at most one
 * chunk at each end (both ends late by about the same amount, so it mostly cancels).
 *
 *     plan: warm-up (>= warmup_s, also times an iteration and estimates the step period)
 *           -> run until the counter changes (window edge 0)
 *           -> lround r: run until >= min_steps counter changes have been seen, ending at a change (edge r+1)
 *
 * Lrounds are contiguous: lround r + 1 starts at the edge where lround r ended. The kernel-time per iteration is
 * the sum of the chunks' device times (CUDA events for the GPU) over the iterations; energy per iteration is the
 * window's energy over the same iterations. Chunks are queued one ahead (cut_energy_run_fn), so the GPU never
 * waits for the meter's NVML reads; each read falls while the next chunk runs.
 *
 * A measurement can fail with a sentence: NVML missing, the GPU not found, the counter unsupported, the counter
 * not moving (no update within max_wait_s), the counter going backwards, or the run callback failing. */
#ifndef CUTUNE_ENERGY_H
#define CUTUNE_ENERGY_H

#include "cutune/common.h"
#include "cutune/powercap.h"
#include "cutune/util.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUT_ENERGY_MAX_LROUNDS 16

typedef struct cut_energy_plan {
    char uuid[96];      /* the GPU whose counter is read (NVML, by UUID) */
    int lrounds;        /* windows per kernel, 1..CUT_ENERGY_MAX_LROUNDS (seed 001: 3, 1 with --test) */
    int min_steps;      /* counter changes each window spans, >= 1 (CUT_ENERGY_MIN_STEPS) */
    double warmup_s;    /* warm-up before the first window */
    double chunk_ms;    /* target device time of one synchronised chunk of iterations */
    double max_wait_s;  /* a window may wait this long for one counter change before the meter gives up */
} cut_energy_plan;

/* lrounds 3, min_steps CUT_ENERGY_MIN_STEPS, warmup 0.3 s, chunk 10 ms (at most a tenth of the counter's
 * period), max_wait 5 s; uuid empty. */
void cut_energy_plan_default(cut_energy_plan *p);
/* Checks the numbers; a sentence naming the field when one is out of range. */
int cut_energy_plan_check(const cut_energy_plan *p, cut_err *e);

typedef struct cut_energy_result {
    int lrounds;
    cut_energy_stats round[CUT_ENERGY_MAX_LROUNDS];
    double time_ms, energy_mj, gflops, power_w, edp; /* means over the lrounds (EDP of the means) */
    double cv_energy, cv_time;                       /* cut_energy_cv over the lrounds */
    double step_period_s;                            /* counter update period seen during the measurement */
    double seconds;                                  /* wall time of the whole measurement, warm-up included */
    unsigned int sm_mhz_min, sm_mhz_max, mem_mhz;    /* sampled before the first and after the last window */
    unsigned int temp_c_max;
    unsigned long long throttle;                     /* OR of the clock-event reasons seen then */
} cut_energy_result;

/* Runs the kernel: queues iters more iterations (0: none) behind those already queued, then waits until the
 * batch queued by the previous call has finished, and reports that batch: *done_iters iterations that took
 * *done_s seconds of device time (0 and 0 on the first call). So the GPU keeps running while the meter reads
 * NVML (which can take milliseconds). A runner without a queue (the emulator) runs the iterations at once and
 * reports them. Returns 0, or -1 with a sentence in e (the meter stops and returns -1). */
typedef int (*cut_energy_run_fn)(void *ctx, long long iters, long long *done_iters, double *done_s, cut_err *e);

/* Measures one kernel as described above. flops_per_iter for GFLOP/s (0: none). NVML is loaded on first use. */
int cut_energy_measure(const cut_energy_plan *p, cut_energy_run_fn run, void *ctx, double flops_per_iter,
                       cut_energy_result *out, cut_err *e);

/* Idle power (W) of the GPU: with nothing launched, the energy over >= steps counter changes, edge to edge. */
int cut_energy_idle_w(const char *uuid, int steps, double max_wait_s, double *watts, cut_err *e);

/* ---- seed 001's files (kernel_outputs/) ---- */

#define CUT_ENERGY_RESULTS_HEADER "id,perf(GFLOP/s),energy(mJ),EDP(ms*mJ)"
#define CUT_ENERGY_CAPS_HEADER "powercap,limit_w"

/* output_kernelK.txt: seed 001's three lines first, then the details (lrounds, CV, clocks, idle power ...).
 * idle_w < 0: not measured. */
void cut_energy_output_text(cut_buf *b, const cut_energy_result *r, double power_limit_w, double idle_w);
/* One results.csv row "id,perf,energy,EDP\n". */
void cut_energy_results_row(cut_buf *b, int id, const cut_energy_result *r);
/* One JSON object (one line, '\n'-terminated) for energy.jsonl: case, id, power limit, per-lround arrays. */
void cut_energy_json_line(cut_buf *b, int case_idx, int id, double power_limit_w, double idle_w,
                          const cut_energy_result *r);

/* One cap's rows of results.csv, in memory (cutune report parses the files: cut_results_csv_parse). */
typedef struct cut_energy_table {
    int n;
    int *id;
    double (*v)[3]; /* perf, energy, EDP */
} cut_energy_table;
void cut_energy_table_add(cut_energy_table *t, int id, double perf, double energy_mj, double edp);
void cut_energy_table_free(cut_energy_table *t);
/* all.csv from the caps' tables (in cap order): header "id" + the 3 columns once per cap, one row per id of any
 * table, sorted by id; an id missing from a cap (or a cap with no table rows) gets empty fields there. */
void cut_energy_all_csv(cut_buf *b, const cut_energy_table *caps, int ncaps);
/* Sets kernel id's row of t (replacing the one there), keeping t sorted by id when it was. */
void cut_energy_table_set(cut_energy_table *t, int id, double perf, double energy_mj, double edp);
/* Removes kernel id's row of t, if it has one. */
void cut_energy_table_remove(cut_energy_table *t, int id);
/* results.csv's text: CUT_ENERGY_RESULTS_HEADER, then t's rows in order. */
void cut_energy_results_csv(cut_buf *b, const cut_energy_table *t);
/* Parses results.csv's text (NUL-terminated) into t, sorted by id (a repeated id: the last row). The header must be
 * CUT_ENERGY_RESULTS_HEADER; a row that is not "id,perf,energy,EDP" is refused with a sentence naming name:line.
 * Caller frees t with cut_energy_table_free, also after an error. */
int cut_energy_results_parse(const char *text, const char *name, cut_energy_table *t, cut_err *e);

/* Records one kernel's measurement in a powercapP folder dir, keeping every other kernel's: results.csv's row of
 * id is replaced (r NULL: the kernel failed here, its row is removed), rows sorted by id; json_line (one
 * cut_energy_json_line, may be NULL) replaces id's line of energy.jsonl. Kernels whose energy.jsonl line says they
 * were measured at another power limit than limit_w (more than 0.5 W apart: the folder had another cap) lose their
 * line, their row and their output_kernelK.txt, so that one folder never mixes two limits; *dropped gets how many.
 * Both files are written atomically. 0, or -1 with e (a malformed results.csv is refused, not overwritten). */
int cut_energy_folder_record(const char *dir, int id, const cut_energy_result *r, const char *json_line,
                             double limit_w, int *dropped, cut_err *e);
/* Rebuilds case_dir/all.csv from every case_dir/powercapP/results.csv present (seed 001 phase 4): the columns of
 * cap P are the P-th triple (caps up to the highest present; a missing one's fields are empty). Nothing is written
 * when no results.csv is there. 0, or -1 with e. */
int cut_energy_all_rebuild(const char *case_dir, cut_err *e);
/* Merges caps into powercaps.csv at path (CUT_ENERGY_CAPS_HEADER, "P,limit_w" rows sorted by P): index[i] (1-based
 * folder number) gets mw[i]; the rows of other indices already there stay. Written atomically. 0, or -1 with e. */
int cut_energy_caps_record(const char *path, const int *index, const unsigned int *mw, int n, cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
