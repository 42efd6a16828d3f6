/* cutune — tuning records: one JSON object per line per trial, appended with one write(2) per line and fsync'd
 * per batch, so that a killed run leaves at most one incomplete last line, which opening the log repairs.
 *
 * Files follow seed 001: tuningrecords/caseN_conv2d_N_..._padding_P.json (+ .csv with start_time),
 * tuningresults/ (representatives), performance/ (one integer GFLOP/s per line). */
#ifndef CUTUNE_RECORD_H
#define CUTUNE_RECORD_H

#include "cutune/common.h"
#include "cutune/measure.h"
#include "cutune/space.h"
#include "cutune/util.h"
#include "cutune/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cut_record {
    int case_idx;       /* 1-based */
    cut_conv conv;
    char dtype[8];      /* "fp32" */
    cut_sched sched;
    cut_status status;
    char error[256];
    double median_ms, min_ms, max_ms; /* -1 when not measured */
    double gflops;                    /* 0 when not measured */
    double err;                       /* the check's max abs error, -1 when unknown (version 1 lines) */
    int repeats;
    double compile_ms;
    int regs, spills;                 /* -1 unknown */
    cut_measure_env env;
    char ts[32];                      /* ISO-8601 UTC */
    int trial;                        /* 0-based trial number within the case */
    /* Energy of one iteration, measured only for the few fastest candidates of a round when tuning with
     * --objective energy|edp (cutune/energy.h, a short tuning-time measurement). 0 = not measured: the JSON
     * fields "energy_mj", "edp", "power_w" are then absent (each is written only when > 0). */
    double energy_mj;                 /* mJ per iteration */
    double edp;                       /* energy-delay product, ms * mJ */
    double power_w;                   /* mean power over the energy window */
} cut_record;

/* What tuning and sampling rank by. time: the median time (the default; energy is never needed). energy / edp:
 * the measured energy (or EDP) of the trials that have it. */
typedef enum cut_objective { CUT_OBJ_TIME = 0, CUT_OBJ_ENERGY, CUT_OBJ_EDP } cut_objective;
/* "time" | "energy" | "edp". */
const char *cut_objective_name(cut_objective o);
/* Parses one of those names; -1 with a sentence naming --objective otherwise. */
int cut_objective_parse(const char *s, cut_objective *o, cut_err *e);
/* The record's value of o (lower is better): median ms, energy mJ or EDP; -1 when the trial failed or o was not
 * measured for it. */
double cut_record_objective(const cut_record *r, cut_objective o);

/* Appends the JSON line (with '\n') to b. */
void cut_record_to_json(const cut_record *r, cut_buf *b);
/* Parses one line. Returns -1 with a sentence for malformed input. */
int cut_record_parse(const char *line, size_t len, cut_record *r, cut_err *e);

/* Loads all complete, well-formed lines. A trailing partial line is ignored (and counted in *partial).
 * Malformed complete lines are an error naming the line number. Caller frees *recs. Missing file: 0 records. */
int cut_records_load(const char *path, cut_record **recs, int *n, int *partial, cut_err *e);

/* A log read with each record's original line, for tools that copy lines verbatim (sampling). */
typedef struct cut_records_file {
    char *text;         /* the file's bytes, NUL-terminated, owned */
    size_t len;
    int n;              /* records: complete, non-blank lines */
    cut_record *recs;   /* n, owned */
    size_t *line_off;   /* n: offset of record i's line in text, owned */
    size_t *line_len;   /* n: length of record i's line without its '\n', owned */
    int partial;        /* 1 if an incomplete last line (no '\n') was ignored */
} cut_records_file;
/* Same rules as cut_records_load (missing file: 0 records). Caller frees with cut_records_file_free, also after
 * an error. */
int cut_records_read(const char *path, cut_records_file *f, cut_err *e);
void cut_records_file_free(cut_records_file *f);

/* Names (not paths) of the regular files in dir ending in suffix (".json"), sorted, hidden files skipped, and
 * GEMM logs and vendor files (gemm_*, vendor_*: cutune/gemm_tune.h) skipped, so conv tools never read them.
 * A missing folder is an error. Caller frees with cut_records_names_free. */
int cut_records_dir_list(const char *dir, const char *suffix, char ***names, int *n, cut_err *e);
/* The same for GEMM logs: only gemm_*.json. */
int cut_gemm_records_dir_list(const char *dir, char ***names, int *n, cut_err *e);
void cut_records_names_free(char **names, int n);
/* 1 when environments a and b measure in the same place, so their times belong in one log: the same backend and,
 * where both know the GPU's UUID, the same UUID, else the same GPU name. 0 otherwise. */
int cut_env_same_place(const cut_measure_env *a, const cut_measure_env *b);
/* "backend cuda, GPU 'NVIDIA H100 80GB HBM3' (GPU-1234...)", "the host emulator (backend emu, 'host-emulation')":
 * where env measures, for messages. */
void cut_env_describe(const cut_measure_env *env, char *buf, size_t n);

/* The case number of a shape tuned on its own (tune --conv, list 'custom') among the case files (caseN_<shape>.json)
 * of the folders dirs[0..ndirs) (tuningrecords/, tuningresults/): the number of a file of the same shape there (the
 * smallest, if several), so a re-run resumes its log; else one more than the largest case number there, so several
 * shapes share one folder (and `cutune export`, which needs one shape per case number). 1 when there is none;
 * missing folders and other files are ignored. */
int cut_conv_custom_case(const char *const *dirs, int ndirs, const cut_conv *c);

/* Append-only log. open: creates the file (and its directory) or repairs it by truncating an incomplete last
 * line, never rewriting complete lines. */
typedef struct cut_reclog {
    int fd;
    char path[1024];
    int pending; /* lines written since the last fsync */
} cut_reclog;
int cut_reclog_open(const char *path, cut_reclog *log, cut_err *e);
/* As cut_reclog_open, and says how many bytes of an incomplete last line were cut off (0 if none). The log is
 * locked (flock) while open: a second writer of the same file gets an error instead of tearing lines. */
int cut_reclog_open_ex(const char *path, cut_reclog *log, size_t *dropped, cut_err *e);
int cut_reclog_append(cut_reclog *log, const cut_record *r, cut_err *e);
/* Appends one complete line (ending in '\n') with the same no-torn-line guarantee (any record format). */
int cut_reclog_append_line(cut_reclog *log, const char *line, size_t len, cut_err *e);
int cut_reclog_sync(cut_reclog *log, cut_err *e);
void cut_reclog_close(cut_reclog *log);

/* Writes <dir>/<name>.csv with the columns start_time,case,shape,dtype,backend,gpu,trials if it is absent. */
int cut_write_case_csv(const char *path, const char *start_time, const cut_record *proto, int trials, cut_err *e);

/* Representative sampling (seed 000/001): failed trials excluded, sorted by median time; keep == 2: the two
 * fastest; keep == 25: top 5 then 5 each from the 10th, 25th, 50th and 75th percentile positions (no record
 * twice); fewer records than keep: all. Writes indices into idx (capacity keep). Returns the count.
 * Other keep values: keep < 5 -> the keep fastest; else keep/5 groups of 5 (group 0 at rank 0 also takes keep%5),
 * group g starting at floor(g/G * m) (src/record/sample.c). */
int cut_sample_select(const cut_record *recs, int n, int keep, int *idx);
/* cut_sample_select with the ranking of objective o. time: as above. energy / edp: the trials that have o
 * measured come first, by o (ties: time, trial), then every other successful trial by time; the groups and
 * percentiles are then taken over that one ranking, so top-5 are the best by o when >= 5 trials have it. */
int cut_sample_select_obj(const cut_record *recs, int n, int keep, cut_objective o, int *idx);
/* For every *.json in in_dir: write out_dir/<same name> with the selected records (ranked by o) in rank order.
 * The raw logs are never modified. Returns the number of files written, or -1. */
int cut_sample_dir(const char *in_dir, const char *out_dir, int keep, cut_objective o, cut_err *e);
/* For every *.json in results_dir: write perf_dir/<same name> with one integer GFLOP/s per line (rounded to the
 * nearest, file order, unmeasured records skipped). Returns the number of files written, or -1. */
int cut_report_perf_dir(const char *results_dir, const char *perf_dir, cut_err *e);

/* ---- the one record line (src/record/trial.c) ----
 *
 * Version 2 of the record line, every op's: {"v":2,"op":"conv2d"|"gemm"|"kernel","trial":N,"workload":{the op's
 * own: a conv's shape and dtype, a GEMM's sizes, layout and dtype, a kernel spec's name and sizes},"sched":{"tpl":
 * template, knob: value ...},"status":...,"error":... (failed trials),"median_ms","min_ms","max_ms" (null: not
 * measured),"repeats","gflops" (0 when the FLOPs are unknown),"err" (the check's error, null: not checked),
 * "compile_ms","regs","spills","backend","gpu":{"name","uuid","driver","driver_version","sm_clock_mhz",
 * "power_limit_w"},"ts", and "energy_mj","edp","power_w" when measured}. Version 1 lines (conv and GEMM logs of
 * earlier cutune) still load through their ops' parsers. */

#define CUT_TRIAL_VERSION 2

/* One trial as the loop knows it, whatever the op (each op writes it as its record line). */
typedef struct cut_trial {
    int trial;                        /* 0-based within the log */
    cut_sched sched;
    cut_status status;
    char error[256];
    double median_ms, min_ms, max_ms; /* -1 when not measured */
    int repeats;
    double err;                       /* the check's error (max abs, or relative Frobenius); -1 not checked */
    double compile_ms;
    int regs, spills;                 /* -1 unknown */
    cut_measure_env env;
    char ts[32];
    double energy_mj, edp, power_w;   /* 0: not measured (--objective energy|edp only) */
} cut_trial;

/* Adds every field after "sched" of tr to the record object root (gflops: the trial's GFLOP/s, 0 unknown). */
void cut_rec_add_trial(void *root, const cut_trial *tr, double gflops);
/* Appends root printed on one line plus '\n' to b and deletes root. */
void cut_rec_print(void *root, cut_buf *b);
/* Parses the schedule object of a record line (a cJSON*, as void*) for the op's space: 0, or -1 with e. */
typedef int (*cut_sched_parser)(const void *ctx, const void *obj, cut_sched *out, cut_err *e);
/* Parses one version-2 line of op: the common fields into tr, the schedule through parse(ctx, ...). -1 with a
 * sentence naming the field, a wrong op or version. */
int cut_trial_parse(const char *line, size_t len, const char *op, cut_sched_parser parse, const void *ctx,
                    cut_trial *tr, cut_err *e);
/* Loads a version-2 log of op tolerantly: complete well-formed lines into *out (caller frees), their count in *n, and
 * the lines that could not be read (skipped with a note on stderr) in *extra. A missing file: none. -1 only when the
 * file cannot be read. */
int cut_trial_log_load(const char *path, const char *op, cut_sched_parser parse, const void *ctx, cut_trial **out,
                       int *n, int *extra, cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
