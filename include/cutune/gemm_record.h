/* cutune — GEMM records (issue 6): schedules as JSON, the record line, loading a log, the results file.
 *
 * Files (beside the conv files, which never read them):
 *   tuningrecords/<gemm name>.json   one JSON object per trial (cut_gemm_name: gemm_nn_fp32_M_1024_N_2048_K_3072),
 *                                    appended and fsync'd per batch like the conv logs; a run resumes from it
 *   tuningresults/<gemm name>.json   the CUT_GEMM_RESULTS_KEEP fastest valid records of the log, fastest first
 *   tuningresults/vendor_<gemm name>.json   the vendor baseline (written by `cutune baseline --gemm`), read by the
 *                                    report: one JSON object with at least {"tflops": x, "ms": y, "algo": "..."}
 *   report/gemm.md, report/gemm.json the report (cut_gemm_report_write)
 *
 * A record line (version 2, the one record line of cutune/record.h; version 1 lines, without "op" and "err", still
 * load):
 *   {"v":2,"op":"gemm","trial":0,"workload":{"kind":"gemm","m":64,"n":48,"k":40,"layout":"nn","dtype":"fp32"},
 *    "sched":{"tpl":"simt","bm":32,...every knob of the template by name},"status":"ok","error":"..." (failures),
 *    "median_ms":..,"min_ms":..,"max_ms":.. (null: not measured),"repeats":..,"gflops":..,"tflops":..,
 *    "rel_err":.. (relative Frobenius error of the checked run, null: not checked; also as "err"),"compile_ms":..,"regs":..,
 *    "spills":..,"backend":"cuda"|"emu","gpu":{"name","uuid","driver","driver_version","sm_clock_mhz",
 *    "power_limit_w"},"ts":"..."} */
#ifndef CUTUNE_GEMM_RECORD_H
#define CUTUNE_GEMM_RECORD_H

#include "cutune/codegen.h"
#include "cutune/common.h"
#include "cutune/gemm.h"
#include "cutune/measure.h"
#include "cutune/util.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUT_GEMM_RESULTS_KEEP 5

/* ---- schedules and records (src/record/gemm_record.c) ---- */

/* Parses a GEMM schedule object as cut_tpl_sched_json (op.h) writes it, {"tpl":"wgmma","bn":128,...} (a cJSON*, as
 * void* to keep cJSON out of the header): every knob of the template must be present as an integer, nothing else but
 * "tpl". -1 with a sentence naming the problem. */
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

#ifdef __cplusplus
}
#endif

#endif
