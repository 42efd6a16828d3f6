/* cutune report: Pareto front, the energy phase's CSV parsers, the tuning curve, the baseline, the summary table
 * and the gnuplot scripts (include/cutune/report.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/measure.h"
#include "cutune/report.h"
#include "cutune/tune.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cut_conv CONV = {1, 8, 8, 8, 4, 3, 3, 1, 1};

/* ---- Pareto front ---- */

static void test_pareto(void **state)
{
    (void)state;
    /* 0 and 1 tie exactly (both stay); 2 has the same time as 0 but more energy (dominated); 3 trades time for
     * energy (front); 4 is beaten in both by 3; 5 has 3's energy but is slower (dominated). */
    const double t[] = {1.0, 1.0, 1.0, 2.0, 3.0, 2.5};
    const double en[] = {5.0, 5.0, 6.0, 3.0, 4.0, 3.0};
    int f[6];
    assert_int_equal(cut_pareto_front(t, en, 6, f), 3);
    const int want[] = {1, 1, 0, 1, 0, 0};
    for (int i = 0; i < 6; i++)
        assert_int_equal(f[i], want[i]);
    const double t1 = 7, e1 = 9;
    int f1 = 0;
    assert_int_equal(cut_pareto_front(&t1, &e1, 1, &f1), 1);
    assert_int_equal(f1, 1);
    assert_int_equal(cut_pareto_front(NULL, NULL, 0, NULL), 0);
}

/* ---- results.csv / powercaps.csv ---- */

static int parse(const char *text, cut_kresult **rows, int *n, cut_err *e)
{
    return cut_results_csv_parse(text, strlen(text), "r.csv", rows, n, e);
}

static void test_results_csv_good(void **state)
{
    (void)state;
    cut_kresult *k;
    int n;
    cut_err e = {{0}};
    const char *text = "id,perf(GFLOP/s),energy(mJ),EDP(ms*mJ)\r\n1,20155.3,2.18450,0.0312\r\n7,100,0.5,1e-3\n\n";
    assert_int_equal(parse(text, &k, &n, &e), 0);
    assert_int_equal(n, 2);
    assert_int_equal(k[0].id, 1);
    assert_true(fabs(k[0].gflops - 20155.3) < 1e-9);
    assert_true(fabs(k[0].time_ms - 0.0312 / 2.18450) < 1e-12);
    assert_int_equal(k[1].id, 7);
    assert_true(fabs(k[1].time_ms - 0.002) < 1e-12);
    free(k);
    assert_int_equal(parse(CUT_RESULTS_CSV_HEADER "\n", &k, &n, &e), 0);
    assert_int_equal(n, 0);
    assert_null(k);
}

/* The parse fails and the sentence names "r.csv:<line>" and contains what. */
static void expect_csv_error(const char *text, int line, const char *what)
{
    cut_kresult *k = (cut_kresult *)(uintptr_t)1;
    int n = -1;
    cut_err e = {{0}};
    char at[32];
    assert_int_equal(parse(text, &k, &n, &e), -1);
    assert_null(k);
    assert_int_equal(n, 0);
    snprintf(at, sizeof at, "r.csv:%d:", line);
    if (!strstr(e.msg, at) || !strstr(e.msg, what))
        fail_msg("error '%s' lacks '%s' or '%s'", e.msg, at, what);
}

static void test_results_csv_bad(void **state)
{
    (void)state;
    const char *h = CUT_RESULTS_CSV_HEADER "\n";
    char buf[256];
    expect_csv_error("", 1, "missing header");
    expect_csv_error("1,2,3,4\n", 1, "missing header");
    expect_csv_error("id,perf,energy,EDP\n1,2,3,4\n", 1, "missing header");
    snprintf(buf, sizeof buf, "%s1,2,3,4\n2,abc,3,4\n", h);
    expect_csv_error(buf, 3, "not a number");
    snprintf(buf, sizeof buf, "%s1,2,3\n", h);
    expect_csv_error(buf, 2, "expected 4 columns");
    snprintf(buf, sizeof buf, "%s1,2,3,4,5\n", h);
    expect_csv_error(buf, 2, "expected 4 columns");
    snprintf(buf, sizeof buf, "%s1,2,0,4\n", h);
    expect_csv_error(buf, 2, "energy");
    snprintf(buf, sizeof buf, "%s1.5,2,1,4\n", h);
    expect_csv_error(buf, 2, "kernel id");
    snprintf(buf, sizeof buf, "%s1,2,1,4\n\n1,2,1,4\n", h);
    expect_csv_error(buf, 3, "empty line");
    snprintf(buf, sizeof buf, "%s3,2,1,4\n3,2,1,4\n", h);
    expect_csv_error(buf, 3, "twice");
    snprintf(buf, sizeof buf, "%s1,nan,1,4\n", h);
    expect_csv_error(buf, 2, "not a number");
    snprintf(buf, sizeof buf, "%s1, 2,1,4\n", h);
    expect_csv_error(buf, 2, "not a number");
}

static void test_powercaps_csv(void **state)
{
    (void)state;
    cut_powercap *p;
    int n;
    cut_err e = {{0}};
    const char *good = "powercap,limit_w\n1,700.000\n2,450.5\n";
    assert_int_equal(cut_powercaps_csv_parse(good, strlen(good), "caps.csv", &p, &n, &e), 0);
    assert_int_equal(n, 2);
    assert_int_equal(p[1].cap, 2);
    assert_true(fabs(p[1].limit_w - 450.5) < 1e-12);
    free(p);
    const char *dup = "powercap,limit_w\n1,700\n1,400\n";
    assert_int_equal(cut_powercaps_csv_parse(dup, strlen(dup), "caps.csv", &p, &n, &e), -1);
    assert_non_null(strstr(e.msg, "caps.csv:3:"));
    const char *zero = "powercap,limit_w\n0,700\n";
    assert_int_equal(cut_powercaps_csv_parse(zero, strlen(zero), "caps.csv", &p, &n, &e), -1);
    assert_non_null(strstr(e.msg, "caps.csv:2:"));
}

/* ---- records, curve, summary ---- */

static cut_record a_record(int trial, cut_status st, double ms)
{
    cut_record r;
    memset(&r, 0, sizeof r);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng rng;
    cut_rng_seed(&rng, 5 + (uint64_t)trial);
    assert_int_equal(cut_sched_sample_valid(&CONV, &d, 0, &rng, &r.sched, 1000), 0);
    r.case_idx = 1;
    r.conv = CONV;
    snprintf(r.dtype, sizeof r.dtype, "fp32");
    r.status = st;
    if (st != CUT_ST_OK)
        snprintf(r.error, sizeof r.error, "planted");
    r.median_ms = r.min_ms = r.max_ms = ms;
    r.gflops = st == CUT_ST_OK ? cut_conv_gflops(&CONV, ms) : 0;
    r.repeats = 10;
    r.regs = r.spills = -1;
    snprintf(r.env.backend, sizeof r.env.backend, "emu");
    snprintf(r.ts, sizeof r.ts, "2026-01-01T00:00:00Z");
    r.trial = trial;
    return r;
}

/* Writes a log of the given times (ms <= 0: a failed trial with a fast bogus time) to path. */
static void write_log(const char *path, const double *ms, int n)
{
    cut_buf b;
    cut_err e = {{0}};
    cut_buf_init(&b);
    for (int i = 0; i < n; i++) {
        cut_record r = ms[i] > 0 ? a_record(i, CUT_ST_OK, ms[i]) : a_record(i, CUT_ST_WRONG_RESULT, 1e-6);
        cut_record_to_json(&r, &b);
    }
    if (cut_write_file_atomic(path, b.data, b.len, &e) != 0)
        fail_msg("%s", e.msg);
    cut_buf_free(&b);
}

static const double TIMES[] = {-1, 0.5, 0.7, -1, 0.25, 0.3, 0.2, -1, 0.9};

static void test_curve(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("report_curve"), path[4200];
    snprintf(path, sizeof path, "%s/log.json", dir);
    int nt = (int)CUT_ARRAY_LEN(TIMES);
    write_log(path, TIMES, nt);
    cut_record *recs;
    int n, partial;
    cut_err e = {{0}};
    assert_int_equal(cut_records_load(path, &recs, &n, &partial, &e), 0);
    assert_int_equal(n, nt);
    double curve[16];
    cut_report_curve(recs, n, curve);
    double best_ms = INFINITY;
    for (int i = 0; i < n; i++) {
        if (TIMES[i] > 0)
            best_ms = fmin(best_ms, TIMES[i]);
        double want = isinf(best_ms) ? 0 : cut_conv_gflops(&CONV, best_ms);
        assert_true(fabs(curve[i] - want) <= 1e-9 * fmax(1, want));
        if (i > 0)
            assert_true(curve[i] >= curve[i - 1]);
    }
    assert_true(curve[0] == 0);
    assert_true(curve[n - 1] > curve[1]);
    free(recs);
    free(dir);
}

/* An output folder with case 1's log, its representatives and a final.jsonl line saying cuDNN took cudnn_ms. */
static char *make_outdir(const char *name, double cudnn_ms)
{
    char *dir = tu_tmpdir(name), path[4200], cname[512], line[512];
    cut_err e = {{0}};
    cut_conv_case_name(&CONV, 1, cname, sizeof cname);
    snprintf(path, sizeof path, "%s/tuningrecords", dir);
    assert_int_equal(cut_mkdirs(path, &e), 0);
    snprintf(path, sizeof path, "%s/tuningrecords/%s.json", dir, cname);
    write_log(path, TIMES, (int)CUT_ARRAY_LEN(TIMES));
    snprintf(path, sizeof path, "%s/tuningresults", dir);
    assert_int_equal(cut_mkdirs(path, &e), 0);
    snprintf(path, sizeof path, "%s/tuningresults/%s.json", dir, cname);
    const double reps[] = {0.2, 0.25};
    write_log(path, reps, 2);
    snprintf(path, sizeof path, "%s/final.jsonl", dir);
    int len = snprintf(line, sizeof line,
                       "{\"case\":1,\"shape\":[1,8,8,8,4,3,3,1,1],\"cudnn_ms\":-1.0,\"cudnn_algo\":\"\"}\n"
                       "{\"case\":1,\"shape\":[1,8,8,8,4,3,3,1,1],\"cudnn_ms\":%.6f,\"cudnn_algo\":\"IMPLICIT_GEMM\"}\n"
                       "{\"case\":9,\"shape\":[1,1,1,1,1,1,1,1,0],\"cudnn_ms\":1.0,\"cudnn_algo\":\"x\"}\n",
                       cudnn_ms);
    assert_int_equal(cut_write_file_atomic(path, line, (size_t)len, &e), 0);
    return dir;
}

static void load_outdir(const char *dir, const char *baseline, cut_report *r)
{
    char results[4200];
    cut_err e = {{0}};
    snprintf(results, sizeof results, "%s/tuningresults", dir);
    if (cut_report_load(dir, results, baseline, r, &e) != 0)
        fail_msg("%s", e.msg);
}

static void test_summary_speedup(void **state)
{
    (void)state;
    const double cudnn = 0.31;
    char *dir = make_outdir("report_summary", cudnn);
    cut_report r;
    load_outdir(dir, NULL, &r);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.c[0].n, (int)CUT_ARRAY_LEN(TIMES));
    assert_int_equal(r.c[0].valid, 6);
    assert_int_equal(r.c[0].nrep, 2);
    assert_true(fabs(r.c[0].cudnn_ms - cudnn) < 1e-9);
    cut_buf b;
    cut_buf_init(&b);
    cut_report_summary_md(&b, &r);
    char want[256];
    /* best ms is 0.2 (trial 7); speedup = cuDNN ms / best ms */
    snprintf(want, sizeof want, "| 1 | `%s` | 9 | 6 | 0.2000 | %.1f | %s | 0.3100 | IMPLICIT_GEMM | %.2fx |",
             r.c[0].name, cut_conv_gflops(&CONV, 0.2), cut_template_get(r.c[0].recs[6].sched.tpl)->name,
             cudnn / 0.2);
    if (!strstr(b.data, want))
        fail_msg("summary lacks\n%s\n in\n%s", want, b.data);
    assert_null(strstr(b.data, "Energy per power cap"));
    cut_buf_free(&b);
    cut_report_free(&r);
    free(dir);
}

static void test_baseline_override_and_missing(void **state)
{
    (void)state;
    char *dir = make_outdir("report_baseline", 0.31), path[4200];
    cut_err e = {{0}};
    snprintf(path, sizeof path, "%s/other.jsonl", dir);
    const char *none = "{\"case\":1,\"shape\":[1,8,8,8,4,3,3,1,1],\"cudnn_ms\":-1,\"cudnn_algo\":\"\"}\n";
    assert_int_equal(cut_write_file_atomic(path, none, strlen(none), &e), 0);
    cut_report r;
    load_outdir(dir, path, &r);
    assert_true(r.c[0].cudnn_ms < 0);
    cut_buf b;
    cut_buf_init(&b);
    cut_report_summary_md(&b, &r);
    assert_non_null(strstr(b.data, "| 0.2000 |"));
    assert_non_null(strstr(b.data, "| - | - | - |\n"));
    cut_buf_free(&b);
    cut_report_free(&r);

    const char *bad = "\n{\"case\":1,\"shape\":[1,8,8,8,4,3,3,2,1],\"cudnn_ms\":1,\"cudnn_algo\":\"a\"}\n";
    assert_int_equal(cut_write_file_atomic(path, bad, strlen(bad), &e), 0);
    char results[4200];
    snprintf(results, sizeof results, "%s/tuningresults", dir);
    assert_int_equal(cut_report_load(dir, results, path, &r, &e), -1);
    assert_non_null(strstr(e.msg, "other.jsonl:2:"));
    assert_non_null(strstr(e.msg, "shape"));
    cut_report_free(&r);
    snprintf(path, sizeof path, "%s/absent.jsonl", dir);
    assert_int_equal(cut_report_load(dir, results, path, &r, &e), -1);
    assert_non_null(strstr(e.msg, "absent.jsonl"));
    cut_report_free(&r);
    free(dir);
}

static void write_text(const char *dir, const char *rel, const char *text)
{
    char path[4200];
    cut_err e = {{0}};
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    char *slash = strrchr(path, '/');
    *slash = 0;
    assert_int_equal(cut_mkdirs(path, &e), 0);
    *slash = '/';
    assert_int_equal(cut_write_file_atomic(path, text, strlen(text), &e), 0);
}

static void test_energy_tables(void **state)
{
    (void)state;
    char *dir = make_outdir("report_energy", 0.31);
    write_text(dir, "kernel_outputs/powercaps.csv", "powercap,limit_w\n1,700.000\n2,300.000\n");
    /* kernel 1: 0.01 ms, 2 mJ; kernel 2: 0.02 ms, 1 mJ; kernel 3: 0.03 ms, 3 mJ (dominated by both) */
    write_text(dir, "kernel_outputs/case1/powercap1/results.csv",
               CUT_RESULTS_CSV_HEADER "\n1,900.5,2.0,0.02\n2,450,1.0,0.02\n3,300,3.0,0.09\n");
    cut_report r;
    load_outdir(dir, NULL, &r);
    assert_int_equal(r.c[0].ncaps, 1); /* cap 2 has no results.csv for case 1 */
    const cut_cap_results *cr = &r.c[0].caps[0];
    assert_int_equal(cr->cap.cap, 1);
    assert_int_equal(cr->n, 3);
    assert_int_equal(cr->k[0].pareto + 2 * cr->k[1].pareto + 4 * cr->k[2].pareto, 3);
    cut_buf b;
    cut_buf_init(&b);
    cut_report_summary_md(&b, &r);
    assert_non_null(strstr(b.data, "### case 1, power cap 1 (700.0 W): 3 kernel(s), 2 on the Pareto front"));
    assert_non_null(strstr(b.data, "| 2 | 450.0 | 0.02000 | 1.00000 | 0.02 | yes |"));
    assert_non_null(strstr(b.data, "| 3 | 300.0 | 0.03000 | 3.00000 | 0.09 |  |"));
    cut_buf_free(&b);
    cut_report_free(&r);

    write_text(dir, "kernel_outputs/case1/powercap2/results.csv", CUT_RESULTS_CSV_HEADER "\n1,900.5,2.0\n");
    char results[4200];
    cut_err e = {{0}};
    snprintf(results, sizeof results, "%s/tuningresults", dir);
    assert_int_equal(cut_report_load(dir, results, NULL, &r, &e), -1);
    assert_non_null(strstr(e.msg, "powercap2/results.csv:2:"));
    cut_report_free(&r);
    free(dir);
}

/* ---- gnuplot scripts ---- */

static void test_scripts(void **state)
{
    (void)state;
    char *dir = make_outdir("report_scripts", 0.31);
    write_text(dir, "kernel_outputs/powercaps.csv", "powercap,limit_w\n1,700.000\n");
    write_text(dir, "kernel_outputs/case1/powercap1/results.csv", CUT_RESULTS_CSV_HEADER "\n1,900.5,2.0,0.02\n");
    cut_report r;
    load_outdir(dir, NULL, &r);
    void (*gps[])(cut_buf *, const cut_report_case *, const char *, const char *) = {
        cut_report_curve_gp, cut_report_times_gp, cut_report_energy_gp};
    for (size_t i = 0; i < CUT_ARRAY_LEN(gps); i++) {
        for (int cairo = 0; cairo < 2; cairo++) {
            cut_buf b;
            cut_buf_init(&b);
            gps[i](&b, &r.c[0], "base", cairo ? "pngcairo" : "png");
            assert_non_null(strstr(b.data, cairo ? "set terminal pngcairo " : "set terminal png "));
            assert_non_null(strstr(b.data, "set output 'base.png'"));
            assert_non_null(strstr(b.data, "set terminal svg "));
            assert_non_null(strstr(b.data, "set output 'base.svg'"));
            assert_non_null(strstr(b.data, "'base.dat'"));
            assert_true(strstr(b.data, "set terminal svg") > strstr(b.data, "set output 'base.png'"));
            cut_buf_free(&b);
        }
    }
    cut_buf b;
    cut_buf_init(&b);
    cut_report_curve_gp(&b, &r.c[0], "base", "pngcairo");
    char cudnn_line[64];
    snprintf(cudnn_line, sizeof cudnn_line, "%.3f with lines", cut_conv_gflops(&CONV, 0.31));
    assert_non_null(strstr(b.data, cudnn_line));
    cut_buf_free(&b);
    cut_buf_init(&b);
    cut_report_curve_dat(&b, &r.c[0]);
    assert_non_null(strstr(b.data, "\n1 0.000 ?\n"));
    cut_buf_free(&b);
    cut_buf_init(&b);
    cut_report_times_dat(&b, &r.c[0]);
    const char *reps = strstr(b.data, "# index 1");
    assert_non_null(reps); /* the representatives, after the bins, at the highest bin's height */
    assert_non_null(strstr(reps, "\n0.2 "));
    assert_non_null(strstr(reps, "\n0.25 "));
    assert_null(strstr(reps, "\n0.3 "));
    cut_buf_free(&b);
    cut_report_free(&r);
    free(dir);
}

/* The final.jsonl line of an epilogue workload (cut_final_json) as a string: cuDNN's time, algorithm and whether
 * fused; the caller frees it. */
static char *final_line(const cut_conv *c, double cudnn_ms, const char *algo)
{
    cut_final fin;
    memset(&fin, 0, sizeof fin);
    fin.best = -1;
    fin.vendor_ms = cudnn_ms;
    fin.vendor_warm_ms = -1;
    fin.vendor_tf32_ms = -1;
    snprintf(fin.vendor_algo, sizeof fin.vendor_algo, "%s", algo);
    FILE *f = tmpfile();
    assert_non_null(f);
    cut_final_json(f, c, 1, 0, -1, &fin);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    char *text = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return text;
}

/* The baseline of an epilogue workload: the JSON line says the epilogue and whether cuDNN's time is of a fused run;
 * the report applies a line only to the case of its dtype, layout and epilogue (one folder may hold case 1 in
 * several), and its table shows the algorithm with how the epilogue ran. */
static void test_baseline_epilogue(void **state)
{
    (void)state;
    const cut_conv epi = {1, 8, 8, 8, 4, 3, 3, 1, 1, CUT_DT_FP16, CUT_NHWC, CUT_EPI_BIAS_RELU};
    char *fused = final_line(&epi, 0.5, "IMPLICIT_PRECOMP_GEMM [fused bias+relu]");
    assert_non_null(strstr(fused, "\"cudnn_algo\":\"IMPLICIT_PRECOMP_GEMM [fused bias+relu]\""));
    assert_non_null(strstr(fused, "\"dtype\":\"fp16\",\"layout\":\"NHWC\",\"epilogue\":\"bias_relu\",\"cudnn_fused\":true"));
    char *unfused = final_line(&epi, 0.75, "GEMM [unfused: conv, AddTensor, Activation]");
    assert_non_null(strstr(unfused, "\"cudnn_fused\":false"));
    char *none = final_line(&epi, -1, "");
    assert_non_null(strstr(none, "\"cudnn_fused\":null"));
    char *plain = final_line(&CONV, 0.25, "IMPLICIT_GEMM"); /* no epilogue: the line as before */
    assert_null(strstr(plain, "cudnn_fused"));
    assert_null(strstr(plain, "epilogue"));
    assert_null(strstr(plain, "dtype"));

    cut_report r;
    memset(&r, 0, sizeof r);
    r.n = 2;
    r.c = calloc(2, sizeof *r.c);
    r.c[0].conv = CONV, r.c[1].conv = epi;
    for (int i = 0; i < 2; i++) {
        r.c[i].case_idx = 1;
        r.c[i].best = -1;
        r.c[i].cudnn_ms = -1;
        cut_conv_case_name(&r.c[i].conv, 1, r.c[i].name, sizeof r.c[i].name);
    }
    cut_err e = {{0}};
    char text[2048];
    snprintf(text, sizeof text, "%s%s%s", plain, unfused, fused); /* the fused line is the epilogue case's last */
    assert_int_equal(cut_report_baseline_apply(&r, text, strlen(text), "final.jsonl", &e), 0);
    assert_true(fabs(r.c[0].cudnn_ms - 0.25) < 1e-12);
    assert_string_equal(r.c[0].cudnn_algo, "IMPLICIT_GEMM");
    assert_true(fabs(r.c[1].cudnn_ms - 0.5) < 1e-12);
    assert_string_equal(r.c[1].cudnn_algo, "IMPLICIT_PRECOMP_GEMM [fused bias+relu]");
    assert_int_equal(cut_cudnn_algo_fused(r.c[1].cudnn_algo), 1);
    cut_buf b;
    cut_buf_init(&b);
    cut_report_summary_md(&b, &r);
    assert_non_null(strstr(b.data, "| 0.5000 | IMPLICIT_PRECOMP_GEMM [fused bias+relu] | - |"));
    assert_non_null(strstr(b.data, "| 0.2500 | IMPLICIT_GEMM | - |"));
    cut_buf_free(&b);
    /* the unfused line alone: the epilogue case gets it, the plain case keeps its own */
    assert_int_equal(cut_report_baseline_apply(&r, unfused, strlen(unfused), "final.jsonl", &e), 0);
    assert_string_equal(r.c[1].cudnn_algo, "GEMM [unfused: conv, AddTensor, Activation]");
    assert_int_equal(cut_cudnn_algo_fused(r.c[1].cudnn_algo), 0);
    assert_string_equal(r.c[0].cudnn_algo, "IMPLICIT_GEMM");
    /* a line of case 1 in types the folder has no case of is ignored; a malformed epilogue is refused */
    const char *other = "{\"case\":1,\"shape\":[1,8,8,8,4,3,3,1,1],\"cudnn_ms\":9,\"cudnn_algo\":\"x\","
                        "\"dtype\":\"bf16\",\"layout\":\"NCHW\",\"epilogue\":\"bias\"}\n";
    assert_int_equal(cut_report_baseline_apply(&r, other, strlen(other), "final.jsonl", &e), 0);
    assert_true(fabs(r.c[0].cudnn_ms - 0.25) < 1e-12 && fabs(r.c[1].cudnn_ms - 0.75) < 1e-12);
    const char *bad = "{\"case\":1,\"shape\":[1,8,8,8,4,3,3,1,1],\"cudnn_ms\":9,\"epilogue\":\"gelu\"}\n";
    assert_int_equal(cut_report_baseline_apply(&r, bad, strlen(bad), "b.jsonl", &e), -1);
    assert_non_null(strstr(e.msg, "b.jsonl:1: \"epilogue\""));
    free(r.c);
    free(fused);
    free(unfused);
    free(none);
    free(plain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pareto),          cmocka_unit_test(test_results_csv_good),
        cmocka_unit_test(test_results_csv_bad), cmocka_unit_test(test_powercaps_csv),
        cmocka_unit_test(test_curve),           cmocka_unit_test(test_summary_speedup),
        cmocka_unit_test(test_baseline_override_and_missing), cmocka_unit_test(test_energy_tables),
        cmocka_unit_test(test_scripts),         cmocka_unit_test(test_baseline_epilogue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
