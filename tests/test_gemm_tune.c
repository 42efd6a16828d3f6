/* GEMM tuning pieces: the search over the GEMM template registry (valid, never repeated), GEMM cost-model features
 * (finite, deterministic), GEMM schedules and records (round trip, tolerant loading), tuningresults, the tuning
 * loop with a fake runner (log, resume, setup errors) and the GEMM report's numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/emu.h"
#include "cutune/gemm_space.h"
#include "cutune/gemm_tune.h"
#include "cutune/report.h"
#include "cutune/search.h"
#include "cutune/util.h"
#include "cutune/op.h"
#include "strategy/features.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cut_gemm G = {256, 192, 128, CUT_GEMM_NN, CUT_DT_FP32};

static double synthetic_ms(const cut_sched *s)
{
    double t = 1.0;
    for (int i = 0; i < CUT_MAX_KNOBS; i++) {
        double x = log2(1.0 + CUT_MAX(s->k[i], 0)) - 3.0;
        t += 0.05 * x * x;
    }
    return t;
}

static void run_distinct(int use_model)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_search_opts o;
    cut_search_opts_default(&o);
    o.use_model = use_model;
    o.seed = 11;
    cut_search *s = cut_search_new_gemm(&G, &d, &o);
    assert_true(cut_search_templates(s) >= 1);
    enum { ROUNDS = 5, PER = 32 };
    cut_sched all[ROUNDS * PER];
    int n = 0;
    for (int r = 0; r < ROUNDS; r++) {
        int got = cut_search_propose(s, PER, all + n);
        assert_int_equal(got, PER);
        for (int i = n; i < n + got; i++) {
            cut_err e;
            if (cut_gemm_sched_check(&G, &all[i], &d, &e) != 0)
                fail_msg("round %d proposal %d invalid: %s", r, i - n, e.msg);
            for (int j = 0; j < i; j++)
                assert_false(cut_sched_equal(&all[i], &all[j]));
            cut_search_observe(s, &all[i], synthetic_ms(&all[i]), -1);
        }
        n += got;
    }
    assert_int_equal(cut_search_seen(s), ROUNDS * PER);
    assert_int_equal(cut_search_model_active(s), use_model);
    cut_search_free(s);
}

static void test_search_distinct_plain(void **st) { (void)st, run_distinct(0); }
static void test_search_distinct_model(void **st) { (void)st, run_distinct(1); }

/* A mask of templates that do not apply: nothing to draw from, nothing proposed. */
static void test_search_mask(void **st)
{
    (void)st;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_search_opts o;
    cut_search_opts_default(&o);
    o.tpl_mask = 1 << CUT_GEMM_TPL_MMA;
    cut_gemm g = G;
    g.dtype = CUT_DT_FP32;
    cut_search *s = cut_search_new_gemm(&g, &d, &o);
    cut_sched out[4];
    if (!cut_gemm_template_get(CUT_GEMM_TPL_MMA)->applies(&g, &d, NULL)) {
        assert_int_equal(cut_search_templates(s), 0);
        assert_int_equal(cut_search_propose(s, 4, out), 0);
    }
    cut_search_free(s);
    o.tpl_mask = 1 << CUT_GEMM_TPL_SIMT;
    s = cut_search_new_gemm(&g, &d, &o);
    assert_int_equal(cut_search_templates(s), 1);
    assert_int_equal(cut_search_propose(s, 4, out), 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(out[i].tpl, CUT_GEMM_TPL_SIMT);
    cut_search_free(s);
}

static void test_features(void **st)
{
    (void)st;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 5);
    float a[CUT_FEAT_LEN], b[CUT_FEAT_LEN];
    int differ = 0;
    cut_gemm gs[2] = {G, {1000, 3, 77, CUT_GEMM_NT, CUT_DT_FP32}};
    for (int gi = 0; gi < 2; gi++)
        for (int i = 0; i < 200; i++) {
            cut_sched s;
            cut_gemm_tpl_simt.sample(&gs[gi], &d, &r, &s); /* valid or not: features must be finite */
            assert_int_equal(cut_features_gemm(&gs[gi], &s, &d, -1, a, CUT_FEAT_LEN), CUT_FEAT_LEN);
            assert_int_equal(cut_features_gemm(&gs[gi], &s, &d, -1, b, CUT_FEAT_LEN), CUT_FEAT_LEN);
            assert_memory_equal(a, b, sizeof a);
            for (int f = 0; f < CUT_FEAT_LEN; f++)
                assert_true(isfinite(a[f]));
            assert_true(a[CUT_GEMM_TPL_SIMT] == 1.0f);
            float c[CUT_FEAT_LEN];
            cut_features_gemm(&gs[gi], &s, &d, 128, c, CUT_FEAT_LEN);
            differ += memcmp(a, c, sizeof a) != 0; /* the compiler's register count is used */
        }
    assert_true(differ > 0);
    cut_sched bad = {.tpl = 99};
    assert_int_equal(cut_features_gemm(&G, &bad, &d, -1, a, CUT_FEAT_LEN), -1);
    cut_sched s = {.tpl = CUT_GEMM_TPL_SIMT};
    assert_int_equal(cut_features_gemm(&G, &s, &d, -1, a, CUT_FEAT_LEN - 1), -1);
}

static cut_sched simt_sched(uint64_t seed)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, seed);
    cut_sched s;
    cut_err e;
    assert_int_equal(cut_gemm_sched_sample_valid(&G, &d, CUT_GEMM_TPL_SIMT, &r, &s, 1000, &e), 0);
    return s;
}

static void test_sched_json(void **st)
{
    (void)st;
    cut_sched s = simt_sched(3), t;
    char buf[1024];
    assert_true(cut_tpl_sched_json(CUT_OP_GEMM, &s, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "\"tpl\":\"simt\""));
    cJSON *o = cJSON_Parse(buf);
    cut_err e = {{0}};
    assert_int_equal(cut_gemm_sched_from_cjson(o, &t, &e), 0);
    assert_true(cut_sched_equal(&s, &t));
    cJSON_Delete(o);
    assert_int_equal(cut_tpl_sched_json(CUT_OP_GEMM, &s, buf, 10), -1);
    static const char *const bad[][2] = {
        {"{\"tpl\":\"tensor\"}", "not a GEMM template"},
        {"{\"tpl\":\"simt\",\"bm\":64}", "lacks knob"},
        {"{\"tpl\":\"simt\",\"zz\":1}", "not a knob"},
        {"[1]", "object"},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad); i++) {
        o = cJSON_Parse(bad[i][0]);
        assert_int_equal(cut_gemm_sched_from_cjson(o, &t, &e), -1);
        if (!strstr(e.msg, bad[i][1]))
            fail_msg("'%s': got '%s'", bad[i][0], e.msg);
        cJSON_Delete(o);
    }
}

static cut_gemm_record make_record(int trial, int tpl, double ms)
{
    cut_gemm_record r;
    memset(&r, 0, sizeof r);
    r.trial = trial;
    r.gemm = G;
    r.sched = simt_sched((uint64_t)trial + 1);
    r.sched.tpl = tpl;
    r.status = ms > 0 ? CUT_ST_OK : CUT_ST_WRONG_RESULT;
    if (ms <= 0)
        snprintf(r.error, sizeof r.error, "relative error 1 is over the fp32 tolerance");
    r.median_ms = r.min_ms = r.max_ms = ms > 0 ? ms : -1;
    r.rel_err = ms > 0 ? 1e-7 : -1;
    r.repeats = 5;
    r.regs = 40;
    r.spills = 0;
    snprintf(r.env.backend, sizeof r.env.backend, "emu");
    snprintf(r.env.gpu_name, sizeof r.env.gpu_name, "host-emulation");
    snprintf(r.ts, sizeof r.ts, "2026-01-01T00:00:00Z");
    return r;
}

static void test_record_round_trip(void **st)
{
    (void)st;
    for (int k = 0; k < 2; k++) {
        cut_gemm_record a = make_record(7, CUT_GEMM_TPL_SIMT, k ? 0.125 : -1), b;
        cut_buf t1, t2;
        cut_buf_init(&t1);
        cut_buf_init(&t2);
        cut_gemm_record_to_json(&a, &t1);
        cut_err e = {{0}};
        if (cut_gemm_record_parse(t1.data, t1.len, &b, &e) != 0)
            fail_msg("%s: %.*s", e.msg, (int)t1.len, t1.data);
        cut_gemm_record_to_json(&b, &t2);
        assert_int_equal(t1.len, t2.len);
        assert_memory_equal(t1.data, t2.data, t1.len);
        assert_true(cut_sched_equal(&a.sched, &b.sched));
        assert_int_equal(b.gemm.m, 256);
        assert_int_equal(b.status, a.status);
        assert_true(b.median_ms == a.median_ms);
        if (k)
            assert_true(fabs(b.gflops - cut_gemm_gflops(&G, 0.125)) < 1e-9);
        assert_non_null(strstr(t1.data, "\"kind\":\"gemm\""));
        assert_non_null(strstr(t1.data, k ? "\"tflops\":" : "\"median_ms\":null"));
        cut_buf_free(&t1);
        cut_buf_free(&t2);
    }
}

static void write_text(const char *path, const char *text)
{
    cut_err e;
    assert_int_equal(cut_write_file_atomic(path, text, strlen(text), &e), 0);
}

/* Good lines are kept; a garbage line, a conv record and an incomplete last line are skipped. */
static void test_load_tolerant(void **st)
{
    (void)st;
    char *dir = tu_tmpdir("gemm_load");
    char path[4200];
    snprintf(path, sizeof path, "%s/gemm_nn_fp32_M_256_N_192_K_128.json", dir);
    cut_buf b;
    cut_buf_init(&b);
    cut_gemm_record r1 = make_record(0, CUT_GEMM_TPL_SIMT, 2.0), r2 = make_record(1, CUT_GEMM_TPL_SIMT, 1.0);
    cut_gemm_record_to_json(&r1, &b);
    cut_buf_printf(&b, "not json\n{\"v\":1,\"workload\":{\"op\":\"conv2d\"}}\n\n");
    cut_gemm_record_to_json(&r2, &b);
    cut_buf_printf(&b, "{\"v\":1,\"tri");
    cut_err e;
    assert_int_equal(cut_write_file_atomic(path, b.data, b.len, &e), 0);
    cut_buf_free(&b);
    cut_gemm_record *recs = NULL;
    int n, partial, bad;
    char note[512];
    assert_int_equal(cut_gemm_records_load(path, &recs, &n, &partial, &bad, note, sizeof note, &e), 0);
    assert_int_equal(n, 2);
    assert_int_equal(bad, 2);
    assert_int_equal(partial, 1);
    assert_non_null(strstr(note, ":2: "));
    assert_int_equal(cut_gemm_records_best(recs, n, NULL), 1);
    free(recs);
    snprintf(path, sizeof path, "%s/missing.json", dir);
    assert_int_equal(cut_gemm_records_load(path, &recs, &n, &partial, &bad, NULL, 0, &e), 0);
    assert_int_equal(n, 0);
    free(dir);
}

/* Writes a log of (tpl, ms) records for G into dir. */
static void write_log(const char *dir, const int *tpl, const double *ms, int n)
{
    char name[256], path[4400];
    cut_gemm_name(&G, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    cut_buf b;
    cut_buf_init(&b);
    for (int i = 0; i < n; i++) {
        cut_gemm_record r = make_record(i, tpl[i], ms[i]);
        cut_gemm_record_to_json(&r, &b);
    }
    cut_err e;
    assert_int_equal(cut_mkdirs(dir, &e), 0);
    assert_int_equal(cut_write_file_atomic(path, b.data, b.len, &e), 0);
    cut_buf_free(&b);
}

static void test_results_write(void **st)
{
    (void)st;
    char *dir = tu_tmpdir("gemm_results");
    char rec[4200], res[4200], path[4400];
    snprintf(rec, sizeof rec, "%s/tuningrecords", dir);
    snprintf(res, sizeof res, "%s/tuningresults", dir);
    int tpl[7] = {0, 0, 0, 0, 0, 0, 0};
    double ms[7] = {5, -1, 3, 4, 1, 2, 6};
    write_log(rec, tpl, ms, 7);
    cut_err e;
    assert_int_equal(cut_gemm_results_write(rec, res, &G, 5, &e), 5);
    snprintf(path, sizeof path, "%s/gemm_nn_fp32_M_256_N_192_K_128.json", res);
    cut_gemm_record *recs = NULL;
    int n, partial, bad;
    assert_int_equal(cut_gemm_records_load(path, &recs, &n, &partial, &bad, NULL, 0, &e), 0);
    assert_int_equal(n, 5);
    assert_int_equal(bad, 0);
    for (int i = 0; i < 5; i++)
        assert_true(recs[i].median_ms == (double)(i + 1));
    free(recs);
    free(dir);
}

static void test_report(void **st)
{
    (void)st;
    char *dir = tu_tmpdir("gemm_report");
    char rec[4200], res[4200], out[4200], path[4400];
    snprintf(rec, sizeof rec, "%s/tuningrecords", dir);
    snprintf(res, sizeof res, "%s/tuningresults", dir);
    snprintf(out, sizeof out, "%s/report", dir);
    int tpl[4] = {CUT_GEMM_TPL_SIMT, CUT_GEMM_TPL_SIMT, CUT_GEMM_TPL_WGMMA, CUT_GEMM_TPL_MMA};
    double ms[4] = {2.0, 1.0, 0.25, -1};
    write_log(rec, tpl, ms, 4);
    cut_err e;
    assert_int_equal(cut_mkdirs(res, &e), 0);
    snprintf(path, sizeof path, "%s/vendor_gemm_nn_fp32_M_256_N_192_K_128.json", res);
    write_text(path, "{\"tflops\": 0.05, \"ms\": 0.2, \"algo\": \"SGEMM_PEDANTIC_NN\"}");
    cut_gemm_report_row *rows = NULL;
    assert_int_equal(cut_gemm_report_collect(rec, res, &rows, &e), 1);
    double fl = cut_gemm_flops(&G);
    assert_true(fabs(rows[0].generic_tflops - fl / 1e9) < 1e-12);        /* 1 ms */
    assert_true(fabs(rows[0].template_tflops - fl / 0.25e9) < 1e-12);    /* 0.25 ms */
    assert_true(rows[0].vendor_tflops == 0.05);
    assert_string_equal(rows[0].vendor_algo, "SGEMM_PEDANTIC_NN");
    assert_int_equal(cut_gemm_report_write(out, "cutune report --gemm", rows, 1, &e), 0);
    free(rows);
    snprintf(path, sizeof path, "%s/gemm.json", out);
    char *text = NULL;
    size_t len;
    assert_int_equal(cut_read_file(path, &text, &len, &e), 0);
    cJSON *o = cJSON_Parse(text);
    assert_non_null(o);
    cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "rows"), 0);
    assert_int_equal(cJSON_GetObjectItem(row, "m")->valueint, 256);
    assert_string_equal(cJSON_GetObjectItem(row, "layout")->valuestring, "nn");
    assert_string_equal(cJSON_GetObjectItem(row, "dtype")->valuestring, "fp32");
    assert_int_equal(cJSON_GetObjectItem(row, "batch")->valueint, 1); /* a plain GEMM: batch 1, alpha 1, beta 0 */
    assert_true(cJSON_GetObjectItem(row, "alpha")->valuedouble == 1.0);
    assert_true(cJSON_GetObjectItem(row, "beta")->valuedouble == 0.0);
    assert_true(fabs(cJSON_GetObjectItem(row, "template_tflops")->valuedouble - fl / 0.25e9) < 1e-12);
    assert_string_equal(cJSON_GetObjectItem(o, "gpu")->valuestring, "host-emulation");
    cJSON_Delete(o);
    free(text);
    snprintf(path, sizeof path, "%s/gemm.md", out);
    assert_int_equal(cut_read_file(path, &text, &len, &e), 0);
    assert_non_null(strstr(text, "| 256 | 192 | 128 | nn |"));
    free(text);
    free(dir);
}

/* ---- the tuning loop with a fake runner: synthetic times, no compiler ---- */

typedef struct fake {
    int prepared, measured;
    int refuse; /* prepare refuses every work */
    cut_work w; /* the prepared work's description (no data) */
} fake;

static int f_prepare(cut_runner *r, cut_work *w, int take, cut_err *e)
{
    fake *f = r->impl;
    if (f->refuse) {
        if (take)
            cut_work_free(w);
        return cut_err_set(e, "fake runner: it takes no work");
    }
    f->w = *w;
    for (int i = 0; i < f->w.nbufs; i++)
        f->w.bufs[i].data[0] = f->w.bufs[i].data[1] = NULL;
    f->w.owns_data = 0;
    if (take)
        cut_work_free(w);
    r->work = &f->w;
    f->prepared++;
    return 0;
}

static int f_run(cut_runner *r, const cut_call *c, int n, const cut_run_opts *o, cut_result *res, cut_err *e)
{
    (void)e, (void)o;
    for (int i = 0; i < n; i++) {
        cut_result_reset(&res[i]);
        assert_non_null(strstr(c[i].src, "cut_gemm"));
        res[i].median_ms = res[i].min_ms = res[i].max_ms = 0.5 + 0.001 * (double)strlen(c[i].src) / 100.0;
        res[i].repeats = 3;
    }
    ((fake *)r->impl)->measured += n;
    return 0;
}

static const cut_measure_env *f_env(cut_runner *r)
{
    (void)r;
    static cut_measure_env env = {.backend = "replay", .gpu_name = "fake"};
    return &env;
}

static void f_destroy(cut_runner *r) { free(r); }

static void test_tune_loop(void **st)
{
    (void)st;
    char *dir = tu_tmpdir("gemm_tune");
    fake f = {.refuse = 1};
    cut_runner *r = cut_xcalloc(1, sizeof *r);
    r->impl = &f;
    r->prepare = f_prepare;
    r->run = f_run;
    r->env = f_env;
    r->destroy = f_destroy;
    cut_tune_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.records_dir = dir;
    cfg.trials = 40;
    cfg.batch = 16;
    cfg.seed = 3;
    cut_devlimits_sm90(&cfg.limits);
    cut_tune_stats s;
    cut_err e = {{0}};
    assert_int_equal(cut_tune_gemm(&cfg, 0, r, &G, &s, &e), -1); /* a runner that cannot take the GEMM */
    assert_non_null(strstr(e.msg, "it takes no work"));
    f.refuse = 0;
    assert_int_equal(cut_tune_gemm(&cfg, 1 << CUT_GEMM_TPL_SIMT, r, &G, &s, &e), 0);
    assert_int_equal(s.trials_total, 40);
    assert_int_equal(s.trials_new, 40);
    assert_int_equal(f.measured, 40);
    assert_true(s.best_ms > 0 && s.best_gflops > 0);
    char path[4400];
    snprintf(path, sizeof path, "%s/gemm_nn_fp32_M_256_N_192_K_128.json", dir);
    cut_gemm_record *recs = NULL;
    int n, partial, bad;
    assert_int_equal(cut_gemm_records_load(path, &recs, &n, &partial, &bad, NULL, 0, &e), 0);
    assert_int_equal(n, 40);
    assert_int_equal(bad, 0);
    for (int i = 0; i < n; i++) {
        assert_int_equal(recs[i].status, CUT_ST_OK);
        assert_int_equal(recs[i].trial, i);
        for (int j = 0; j < i; j++)
            assert_false(cut_sched_equal(&recs[i].sched, &recs[j].sched));
    }
    free(recs);
    /* resume: finished, nothing measured */
    assert_int_equal(cut_tune_gemm(&cfg, 0, r, &G, &s, &e), 0);
    assert_int_equal(s.skipped, 1);
    assert_int_equal(f.measured, 40);
    /* more trials: continues the log */
    cfg.trials = 50;
    assert_int_equal(cut_tune_gemm(&cfg, 0, r, &G, &s, &e), 0);
    assert_int_equal(s.trials_total, 50);
    assert_int_equal(s.trials_new, 10);
    /* no template applies */
    cut_gemm h = G;
    h.dtype = CUT_DT_FP16;
    if (!cut_gemm_tpl_mma.applies(&h, &cfg.limits, NULL) && !cut_gemm_tpl_wgmma.applies(&h, &cfg.limits, NULL)) {
        assert_int_equal(cut_tune_gemm(&cfg, 0, r, &h, &s, &e), -1);
        assert_non_null(strstr(e.msg, "no selected GEMM template"));
    }
    cut_runner_free(r);
    free(dir);
}

static void test_emu_prepare_gemm(void **st)
{
    (void)st;
    cut_err e = {{0}};
    cut_runner *r = cut_runner_emu_new(NULL, NULL, &e);
    assert_non_null(r);
    assert_non_null(r->prepare);
    /* every dtype: the SIMT, gemv and mma kernels run under emulation (test_gemm_gemv runs them through it) */
    for (cut_dtype dt = CUT_DT_FP32; dt < CUT_DT_COUNT; dt++) {
        cut_gemm g = {8, 8, 8, CUT_GEMM_NN, dt};
        if (cut_runner_prepare_gemm(r, &g, 1, &e) != 0)
            fail_msg("%s: %s", cut_dtype_name(dt), e.msg);
    }
    cut_runner_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_search_distinct_plain), cmocka_unit_test(test_search_distinct_model),
        cmocka_unit_test(test_search_mask),           cmocka_unit_test(test_features),
        cmocka_unit_test(test_sched_json),            cmocka_unit_test(test_record_round_trip),
        cmocka_unit_test(test_load_tolerant),         cmocka_unit_test(test_results_write),
        cmocka_unit_test(test_report),                cmocka_unit_test(test_tune_loop),
        cmocka_unit_test(test_emu_prepare_gemm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
