/* cutune — GEMM tuning (issue 6): records, the tuning loop and the GEMM report.
 *
 * Files (beside the conv files, which never read them):
 *   tuningrecords/<gemm name>.json   one JSON object per trial (cut_gemm_name: gemm_nn_fp32_M_1024_N_2048_K_3072),
 *                                    appended and fsync'd per batch like the conv logs; a run resumes from it
 *   tuningresults/<gemm name>.json   the CUT_GEMM_RESULTS_KEEP fastest valid records of the log, fastest first
 *   tuningresults/vendor_<gemm name>.json   the vendor baseline (written by `cutune baseline --gemm`), read by the
 *                                    report: one JSON object with at least {"tflops": x, "ms": y, "algo": "..."}
 *   report/gemm.md, report/gemm.json the report (cut_gemm_report_write)
 *
 * A record line:
 *   {"v":1,"trial":0,"workload":{"kind":"gemm","m":64,"n":48,"k":40,"layout":"nn","dtype":"fp32"},
 *    "sched":{"tpl":"simt","bm":32,...every knob of the template by name},"status":"ok","error":"..." (failures),
 *    "median_ms":..,"min_ms":..,"max_ms":.. (null: not measured),"repeats":..,"gflops":..,"tflops":..,
 *    "rel_err":.. (relative Frobenius error of the checked run, null: not checked),"compile_ms":..,"regs":..,
 *    "spills":..,"backend":"cuda"|"emu","gpu":{"name","uuid","driver","driver_version","sm_clock_mhz",
 *    "power_limit_w"},"ts":"..."} */
#ifndef CUTUNE_GEMM_TUNE_H
#define CUTUNE_GEMM_TUNE_H

#include "cutune/common.h"
#include "cutune/gemm.h"
#include "cutune/measure.h"
#include "cutune/space.h"
#include "cutune/tune.h"
#include "cutune/util.h"

#include <stddef.h>

#define CUT_GEMM_RESULTS_KEEP 5

/* ---- schedules and records (src/record/gemm_record.c) ---- */

/* {"tpl":"simt","bm":64,...} with the GEMM registry's template and knob names. Returns the length, or -1 if buf
 * is too small or s->tpl is not a GEMM template. */
int cut_gemm_sched_to_json(const cut_sched *s, char *buf, size_t n);
/* Parses such an object (a cJSON*, as void* to keep cJSON out of the header): every knob of the template must be
 * present as an integer, nothing else but "tpl". -1 with a sentence naming the problem. */
int cut_gemm_sched_from_cjson(const void *obj, cut_sched *s, cut_err *e);

typedef struct cut_gemm_record {
    int trial;                        /* 0-based */
    cut_gemm gemm;
    cut_sched sched;                  /* tpl: GEMM registry index */
    cut_status status;
    char error[256];
    double median_ms, min_ms, max_ms; /* -1 when not measured */
    double gflops;                    /* 0 when not measured; TFLOP/s = gflops / 1000 */
    double rel_err;                   /* -1 when not checked */
    int repeats;
    double compile_ms;
    int regs, spills;                 /* -1 unknown */
    cut_measure_env env;
    char ts[32];
} cut_gemm_record;

/* Appends the JSON line (with '\n'). */
void cut_gemm_record_to_json(const cut_gemm_record *r, cut_buf *b);
/* Parses one line strictly. -1 with a sentence naming the field. */
int cut_gemm_record_parse(const char *line, size_t len, cut_gemm_record *r, cut_err *e);
/* Loads a GEMM log tolerantly: complete well-formed lines are kept; an incomplete last line (*partial = 1) and
 * malformed lines (counted in *bad, the first one's reason and line number in note when it is not NULL) are
 * skipped. A missing file: 0 records. -1 only when the file cannot be read. Caller frees *recs. */
int cut_gemm_records_load(const char *path, cut_gemm_record **recs, int *n, int *partial, int *bad, char *note,
                          size_t note_len, cut_err *e);
/* Index of the fastest valid record whose template passes want(tpl) (NULL: any), or -1. */
int cut_gemm_records_best(const cut_gemm_record *recs, int n, int (*want)(int tpl));
/* Writes res_dir/<gemm name>.json: the `keep` fastest valid records of rec_dir/<gemm name>.json, fastest first
 * (atomically; no valid record: no file, returns 0). Returns the records written, or -1. */
int cut_gemm_results_write(const char *rec_dir, const char *res_dir, const cut_gemm *g, int keep, cut_err *e);

/* ---- the tuning loop (src/search/tune_gemm.c) ---- */

/* Tunes one GEMM with the templates in tpl_mask (bit i: registry index i; 0: every template that applies), from
 * cfg: records_dir, trials, batch, seed, use_nvrtc + copts (a kernel with arch_a compiles for sm_XXa), limits,
 * progress, kernel_dump_dir, max_seconds (the conv-only fields are ignored). Resumes from an existing log (a log
 * with >= trials lines is finished: st->skipped). r must have prepare_gemm. st->best_gflops and best_ms are the
 * fastest valid trial of the whole log. Returns -1 only for setup errors (no template applies, runner without
 * prepare_gemm or refusing the workload, unwritable log, NVRTC unusable). */
int cut_tune_gemm(const cut_tune_cfg *cfg, int tpl_mask, cut_runner *r, const cut_gemm *g, cut_tune_stats *st,
                  cut_err *e);

/* ---- the report (src/report/gemm_report.c) ---- */

typedef struct cut_gemm_report_row {
    cut_gemm gemm;
    double generic_tflops, template_tflops, vendor_tflops; /* -1: missing */
    double generic_ms, template_ms, vendor_ms;             /* -1: missing */
    char generic_knobs[512], template_knobs[512];          /* cut_gemm_sched_describe, "" when missing */
    char vendor_algo[128];                                 /* "" when missing */
    char gpu[128];                                         /* of the best record */
} cut_gemm_report_row;

/* One row per GEMM log in rec_dir (gemm_*.json, sorted by name): best generic kernel = fastest valid "simt"
 * record, best template kernel = fastest valid record of any other template, vendor = res_dir/vendor_<gemm
 * name>.json if present ({"tflops", "ms", "algo"}; a malformed file is a note on stderr and a missing value).
 * *rows allocated (caller frees). Returns the count, or -1. */
int cut_gemm_report_collect(const char *rec_dir, const char *res_dir, cut_gemm_report_row **rows, cut_err *e);
/* Writes out_dir/gemm.md (a table per dtype: shape, layout, generic / template / vendor TFLOP/s, template/vendor
 * and generic/vendor, best knobs) and out_dir/gemm.json:
 *   {"gpu":"..."|null,"command":"...","rows":[{"m","n","k","layout","dtype","generic_tflops","template_tflops",
 *    "vendor_tflops","vendor_algo","generic_ms","template_ms","vendor_ms","generic_knobs","template_knobs"}]}
 * with null for each missing value. */
int cut_gemm_report_write(const char *out_dir, const char *command, const cut_gemm_report_row *rows, int n,
                          cut_err *e);

#endif
