/* cutune — report: tables against the vendor baseline and gnuplot plots of the tuning and energy phases.
 *
 * Inputs under an output folder DIR:
 *   tuningrecords/caseN_*.json          trial logs (record.h), one line per trial
 *   tuningresults/caseN_*.json          representatives (same format; `--in` may point elsewhere)
 *   final.jsonl                         `cutune tune --final K` lines (cut_final_json); the last line per case wins
 *   kernel_outputs/powercaps.csv        "powercap,limit_w", one row per cap (P is 1-based)
 *   kernel_outputs/caseN/powercapP/results.csv  "id,perf(GFLOP/s),energy(mJ),EDP(ms*mJ)", one row per kernel
 * Output: DIR/report/ (marked with CUT_EXPORT_MARKER): summary.md and, per case, caseN_curve, caseN_times and
 * (with kernel outputs) caseN_energy, each as .dat + .gp rendered by gnuplot to .png and .svg. */
#ifndef CUTUNE_REPORT_H
#define CUTUNE_REPORT_H

#include "cutune/common.h"
#include "cutune/energy.h"
#include "cutune/gemm_record.h"
#include "cutune/record.h"
#include "cutune/util.h"
#include "cutune/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CUT_RESULTS_CSV_HEADER CUT_ENERGY_RESULTS_HEADER
#define CUT_POWERCAPS_CSV_HEADER CUT_ENERGY_CAPS_HEADER

/* One kernel's row of results.csv; time_ms = edp / energy_mj. */
typedef struct cut_kresult {
    int id;
    double gflops, energy_mj, edp, time_ms;
    int pareto; /* 1 if on its cap's time-energy Pareto front */
} cut_kresult;

/* Parses results.csv text (header CUT_RESULTS_CSV_HEADER, then "id,gflops,energy,edp" rows: integer id >= 1,
 * finite numbers, energy > 0, gflops and EDP >= 0; a '\r' before '\n' and a blank last line are accepted).
 * name names the file in errors ("<name>:<line>: ..."). Caller frees *rows (NULL when there are none). */
int cut_results_csv_parse(const char *text, size_t len, const char *name, cut_kresult **rows, int *n, cut_err *e);

/* One row of powercaps.csv. */
typedef struct cut_powercap {
    int cap;        /* P, 1-based */
    double limit_w; /* > 0 */
} cut_powercap;
/* Parses powercaps.csv text (header CUT_POWERCAPS_CSV_HEADER); caps must be distinct and >= 1. Same error and
 * ownership rules as cut_results_csv_parse. */
int cut_powercaps_csv_parse(const char *text, size_t len, const char *name, cut_powercap **rows, int *n,
                            cut_err *e);

/* Marks on_front[i] = 1 for the points not dominated by another (a point dominates when it is <= in both time
 * and energy and < in one; equal points do not dominate each other). Returns the number on the front. */
int cut_pareto_front(const double *time_ms, const double *energy, int n, int *on_front);

/* A power cap's results for one case. */
typedef struct cut_cap_results {
    cut_powercap cap;
    int n;
    cut_kresult *k; /* owned, file order, pareto filled in */
} cut_cap_results;

/* One case of the report. */
typedef struct cut_report_case {
    int case_idx;
    cut_conv conv;
    char name[512];     /* record file name without .json */
    cut_record *recs;   /* the trial log, log order; owned */
    int n;
    int valid;          /* measured trials */
    int best;           /* index of the fastest valid trial, -1 if none */
    double cudnn_ms;    /* vendor baseline, -1 if unknown */
    char cudnn_algo[128];
    double *rep_ms;     /* representatives' median times (tuningresults), owned */
    int nrep;
    cut_cap_results *caps; /* owned */
    int ncaps;
} cut_report_case;

typedef struct cut_report {
    int n;
    cut_report_case *c; /* owned, ordered by case index */
} cut_report;

/* Loads every tuningrecords/caseN_*.json of outdir, the representatives of the same name in results_dir (a
 * missing file: none), the baseline of outdir/final.jsonl (if present) and then of baseline_path (if non-NULL;
 * it must exist), and kernel_outputs/ (if present). Caller frees with cut_report_free, also after an error. */
int cut_report_load(const char *outdir, const char *results_dir, const char *baseline_path, cut_report *r,
                    cut_err *e);
void cut_report_free(cut_report *r);

/* Applies a baseline file (cut_final_json lines: "case", "shape", "cudnn_ms", "cudnn_algo", and "dtype", "layout",
 * "epilogue" where not the defaults) to the matching cases: the same case number, dtype, layout and epilogue; the
 * last line of a case wins; a negative cudnn_ms means not measured. A line whose shape differs from the case's is
 * an error. Lines of cases not in r (or of other types) are ignored. With an epilogue, cudnn_algo says whether
 * cuDNN's time is of a fused run ("... [fused bias+relu]") or of the unfused sequence ("... [unfused: ...]"). */
int cut_report_baseline_apply(cut_report *r, const char *text, size_t len, const char *name, cut_err *e);

/* Best-so-far GFLOP/s after each trial of recs (log order); 0 before the first valid trial. out has n entries. */
void cut_report_curve(const cut_record *recs, int n, double *out);

/* Markdown tables: per case (trials, valid, best, template, cuDNN, speedup = cuDNN ms / best ms) and per case and
 * power cap (kernels with GFLOP/s, time, energy, EDP, Pareto). Appends to b. */
void cut_report_summary_md(cut_buf *b, const cut_report *r);

/* Plot data and scripts. png_term is "pngcairo" or "png". base is the file name stem ("case1_curve"); the
 * scripts read base.dat and write base.png and base.svg in the folder they are run in. Each appends to b.
 * The energy plot of a case whose caps have no kernels writes nothing. */
void cut_report_curve_dat(cut_buf *b, const cut_report_case *c);
void cut_report_curve_gp(cut_buf *b, const cut_report_case *c, const char *base, const char *png_term);
void cut_report_times_dat(cut_buf *b, const cut_report_case *c);
void cut_report_times_gp(cut_buf *b, const cut_report_case *c, const char *base, const char *png_term);
void cut_report_energy_dat(cut_buf *b, const cut_report_case *c);
void cut_report_energy_gp(cut_buf *b, const cut_report_case *c, const char *base, const char *png_term);

/* gnuplot on PATH: writes its path into buf and returns 1, or 0 if there is none. */
int cut_gnuplot_find(char *buf, size_t n);
/* "pngcairo" if this gnuplot has it, else "png". */
const char *cut_gnuplot_png_term(const char *gnuplot);
/* Runs `gnuplot script` in dir (fork + exec). A failure is -1 with a sentence naming the script and gnuplot's
 * standard error. */
int cut_gnuplot_run(const char *gnuplot, const char *dir, const char *script, cut_err *e);

/* What cut_report_write did. */
typedef struct cut_report_out {
    int scripts;  /* .gp files written */
    int rendered; /* of them rendered (0 without gnuplot) */
    int gnuplot;  /* 1 if gnuplot was found */
} cut_report_out;
/* Writes outdir/report/ (marked): summary.md and, unless plots is 0, the plots' .dat/.gp files, rendered when
 * gnuplot is on PATH. Returns -1 with a sentence for a write or gnuplot failure. */
int cut_report_write(const cut_report *r, const char *outdir, int plots, cut_report_out *out, cut_err *e);

/* ---- the user-kernel reports (src/post/kernel_report.c) ---- */

/* `cutune report --optimized OPT_DIR`: OPT_DIR/summary.json (cutune optimize) as a table (kernel, baseline and best
 * ms, speedup, builds, failed, best variant, its moves) and the geomean speedup, appended to md and written with the
 * summary to OPT_DIR/report/optimize.md and optimize.json (command recorded). -1 with a sentence naming the folder
 * when there is no summary, it is not one, or a write fails. */
int cut_opt_report(const char *opt_dir, const char *command, cut_buf *md, cut_err *e);
/* `cutune report --kernel`: every OUTDIR/tuningrecords/kernel_*.json (cutune tune --kernel): trials, failed, the best
 * valid trial and its tunables, and its last OUTDIR/final.jsonl line (re-timed ms, baseline ms, speedup) when there
 * is one; appended to md and written to OUTDIR/report/kernel.md and kernel.json. -1 with a sentence when there are
 * no kernel logs or a write fails. */
int cut_kernel_report(const char *outdir, const char *command, cut_buf *md, cut_err *e);

/* ---- the GEMM report (src/post/gemm_report.c) ---- */

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
 * name>.json if present ({"tflops", "ms", "algo"}; a malformed file is a warning through the log (log.h) and a
 * missing value). *rows allocated (caller frees). Returns the count, or -1. */
int cut_gemm_report_collect(const char *rec_dir, const char *res_dir, cut_gemm_report_row **rows, cut_err *e);
/* Writes out_dir/gemm.md (a table per dtype: shape, layout, generic / template / vendor TFLOP/s, template/vendor
 * and generic/vendor, best knobs) and out_dir/gemm.json:
 *   {"gpu":"..."|null,"command":"...","rows":[{"m","n","k","layout","dtype","batch","alpha","beta","generic_tflops",
 *    "template_tflops","vendor_tflops","vendor_algo","generic_ms","template_ms","vendor_ms","generic_knobs",
 *    "template_knobs"}]}
 * with null for each missing value (batch 1, alpha 1, beta 0 for a plain GEMM; gemm.md adds them to the layout cell
 * only when they are not those). */
int cut_gemm_report_write(const char *out_dir, const char *command, const cut_gemm_report_row *rows, int n,
                          cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
