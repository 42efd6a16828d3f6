/* The Triton runner (src/measure/triton_runner.c) under Triton's interpreter: a spec's baseline captured, then
 * planted variants (tests/fixtures/triton/) checked and timed: ok, wrong, writing its input, hanging (TIMEOUT, the next
 * call on a fresh worker), reading past its buffer (FAULT, likewise). Needs the Python with triton and numpy
 * ($CUTUNE_TRITON_PYTHON, set by CMake); exits 77 (skipped) saying why when it cannot import them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/kstate.h"
#include "cutune/measure.h"
#include "cutune/util.h"
#include "triton_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char spec_json[] =
    "{\"name\": \"tsoftmax\", \"language\": \"triton\", \"entry\": \"softmax_kernel\",\n"
    " \"source_path\": \"softmax_ok.py\",\n"
    " \"sizes\": {\"ROWS\": 6, \"COLS\": 100},\n"
    " \"tunables\": {\"BLOCK\": [128, 256], \"num_warps\": [4, 8], \"num_stages\": [2, 3]},\n"
    " \"restrictions\": [\"BLOCK >= COLS\"],\n"
    " \"launch\": {\"grid\": [\"ROWS\"]},\n"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"ROWS\", \"COLS\"], \"init\": \"randn\", \"seed\": 1}],\n"
    " \"outputs\": [{\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [\"ROWS\", \"COLS\"]}],\n"
    " \"scalars\": [{\"name\": \"n_cols\", \"dtype\": \"i32\", \"value\": \"COLS\"}],\n"
    " \"args\": [\"x\", \"y\", \"n_cols\"], \"tolerance\": {\"atol\": 1e-6, \"rtol\": 1e-5}}";

static const char *python, *worker;
static char fixtures[1024];

static int results_seen;
static void count_result(void *ctx, const cut_result *res)
{
    (void)ctx;
    (void)res;
    results_seen++;
}

/* The fixture `name`.py behind the spec's tunables header for vals (malloc'd). */
static char *variant(const cut_kspec *k, const char *name, const long long *vals)
{
    char path[1200], *text = NULL;
    size_t len = 0;
    cut_err e = {{0}};
    snprintf(path, sizeof path, "%s/%s.py", fixtures, name);
    if (cut_read_file(path, &text, &len, &e) != 0)
        fail_msg("%s", e.msg);
    char *src = cut_kstate_materialise_src(k, vals, text);
    free(text);
    return src;
}

/* Runs fixture name as a call with tunables vals; the result. */
static cut_result run_variant(cut_runner *r, const cut_kspec *k, const char *name, const long long *vals)
{
    cut_call c;
    cut_err e = {{0}};
    if (cut_kspec_call(k, vals, &c, &e) != 0)
        fail_msg("%s", e.msg);
    char *src = variant(k, name, vals);
    c.src = src;
    cut_result res;
    if (r->run(r, &c, 1, NULL, &res, &e) != 0)
        fail_msg("%s: %s", name, e.msg);
    free(src);
    printf("  %-22s %-16s %8.3f ms  x%-3d  %s\n", name, cut_status_name(res.status), res.median_ms, res.repeats,
           res.error);
    return res;
}

/* A Triton runner under the interpreter with this timing policy (no minimum time), its cache in the test's folder. */
static cut_runner *new_runner(int warmup, int min_repeats, int max_repeats, double timeout_s)
{
    cut_timing t;
    cut_timing_default(&t);
    t.warmup = warmup;
    t.min_repeats = min_repeats;
    t.max_repeats = max_repeats;
    t.min_total_ms = 0;
    t.timeout_s = timeout_s;
    const char *tmp = getenv("CUTUNE_TEST_TMP");
    char cache[1200];
    snprintf(cache, sizeof cache, "%s/triton_runner_cache", tmp ? tmp : "/tmp");
    cut_err e = {{0}};
    cut_runner *r = cut_runner_triton_new(python, worker, -1, &t, cache, 0, &e);
    if (!r)
        fail_msg("%s", e.msg);
    return r;
}

static void test_triton_runner(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_kspec k;
    if (cut_kspec_parse(spec_json, strlen(spec_json), fixtures, &k, &e) != 0)
        fail_msg("%s", e.msg);
    cut_work w;
    assert_int_equal(cut_kspec_work(&k, &w, &e), 0);

    cut_runner *r = new_runner(1, 2, 3, 5);
    const cut_measure_env *env = r->env(r);
    assert_string_equal(env->backend, "triton-interp");
    assert_non_null(strstr(env->gpu_name, "interpreter"));

    /* the baseline, captured */
    assert_int_equal(r->prepare(r, &w, 0, &e), 0);
    cut_call c;
    assert_int_equal(cut_kspec_call(&k, NULL, &c, &e), 0);
    assert_int_equal(c.args[2].scalar_type, 1 + CUT_EL_I32);
    char *base = cut_kstate_materialise(&k, NULL);
    c.src = base;
    cut_result res;
    cut_work_outputs outs;
    if (cut_runner_run_call(r, &c, &res, &outs, &e) != 0)
        fail_msg("%s", e.msg);
    printf("  %-22s %-16s %8.3f ms  x%-3d  %s\n", "baseline (capture)", cut_status_name(res.status), res.median_ms,
           res.repeats, res.error);
    assert_int_equal(res.status, CUT_ST_OK);
    assert_non_null(outs.data[1][0]);
    assert_non_null(outs.data[1][1]);
    assert_null(outs.data[0][0]);
    const float *y0 = outs.data[1][0];
    double rowsum = 0;
    for (int j = 0; j < 100; j++)
        rowsum += y0[j];
    assert_true(rowsum > 0.999 && rowsum < 1.001); /* a softmax row */
    free(base);

    /* the references are the captured outputs */
    w.bufs[1].data[0] = outs.data[1][0];
    w.bufs[1].data[1] = outs.data[1][1];
    assert_int_equal(r->prepare(r, &w, 0, &e), 0);
    cut_work_outputs_free(&outs);

    const long long wide[3] = {256, 8, 3};
    res = run_variant(r, &k, "softmax_ok", wide);
    assert_int_equal(res.status, CUT_ST_OK);
    assert_true(res.median_ms > 0);
    assert_true(res.repeats >= 2);
    assert_true(res.max_abs_err < 1e-5);
    assert_int_equal(run_variant(r, &k, "softmax_wrong", NULL).status, CUT_ST_WRONG_RESULT);
    res = run_variant(r, &k, "softmax_writes_input", NULL);
    assert_int_equal(res.status, CUT_ST_INPUT_MODIFIED);
    assert_non_null(strstr(res.error, "'x'"));

    /* a hang: killed after the timeout; the next call gets a fresh worker with the work */
    res = run_variant(r, &k, "softmax_hang", NULL);
    assert_int_equal(res.status, CUT_ST_TIMEOUT);
    assert_non_null(strstr(res.error, "timeout after 5 s"));
    assert_int_equal(run_variant(r, &k, "softmax_ok", NULL).status, CUT_ST_OK);

    /* past the end of its buffer: the guard page kills the worker */
    res = run_variant(r, &k, "softmax_oob", NULL);
    assert_int_equal(res.status, CUT_ST_FAULT);
    assert_non_null(strstr(res.error, "signal 11"));
    res = run_variant(r, &k, "softmax_fault", NULL);
    assert_int_equal(res.status, CUT_ST_FAULT);
    assert_int_equal(run_variant(r, &k, "softmax_ok", NULL).status, CUT_ST_OK);

    /* a module that does not load, and a header line that is not an assignment */
    assert_int_equal(run_variant(r, &k, "syntax_error", NULL).status, CUT_ST_COMPILE_ERROR);
    char *ok = variant(&k, "softmax_ok", NULL);
    char *bad = cut_xmalloc(strlen(ok) + 64);
    const char *at = strstr(ok, "BLOCK = 128");
    assert_non_null(at);
    snprintf(bad, strlen(ok) + 64, "%.*sBLOCK = 128 + 1%s", (int)(at - ok), ok, at + strlen("BLOCK = 128"));
    c.src = bad;
    assert_int_equal(r->run(r, &c, 1, NULL, &res, &e), 0);
    assert_int_equal(res.status, CUT_ST_COMPILE_ERROR);
    assert_non_null(strstr(res.error, "not NAME = INTEGER"));
    free(bad);

    /* a batch: results reported in order; a spent budget starts nothing */
    cut_call calls[2] = {c, c};
    calls[0].src = calls[1].src = ok;
    cut_result two[2];
    r->on_result = count_result;
    assert_int_equal(r->run(r, calls, 2, NULL, two, &e), 0);
    assert_int_equal(results_seen, 2);
    assert_int_equal(two[0].status, CUT_ST_OK);
    assert_int_equal(two[1].status, CUT_ST_OK);
    r->stop_at = 1.0;
    assert_int_equal(r->run(r, calls, 2, NULL, two, &e), 0);
    assert_true(two[0].not_run && two[1].not_run);
    assert_int_equal(results_seen, 4);
    free(ok);

    w.bufs[1].data[0] = w.bufs[1].data[1] = NULL;
    cut_kspec_work_free(&w);
    cut_runner_free(r);
    cut_kspec_free(&k);
}

/* The spec at other sizes (ROWS 5, COLS 77), parsed into k, and its work with references captured on r into w (the
 * references malloc'd: freed by free_refs). */
static void spec_work(cut_runner *r, const char *sizes, cut_kspec *k, cut_work *w)
{
    char json[sizeof spec_json + 32];
    const char *at = strstr(spec_json, "\"ROWS\": 6, \"COLS\": 100");
    snprintf(json, sizeof json, "%.*s%s%s", (int)(at - spec_json), spec_json, sizes,
             at + strlen("\"ROWS\": 6, \"COLS\": 100"));
    cut_err e = {{0}};
    if (cut_kspec_parse(json, strlen(json), fixtures, k, &e) != 0 || cut_kspec_work(k, w, &e) != 0 ||
        r->prepare(r, w, 0, &e) != 0)
        fail_msg("%s", e.msg);
    cut_call c;
    assert_int_equal(cut_kspec_call(k, NULL, &c, &e), 0);
    char *base = cut_kstate_materialise(k, NULL);
    c.src = base;
    cut_result res;
    cut_work_outputs outs;
    if (cut_runner_run_call(r, &c, &res, &outs, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(res.status, CUT_ST_OK);
    free(base);
    w->bufs[1].data[0] = outs.data[1][0];
    w->bufs[1].data[1] = outs.data[1][1];
}

static void free_refs(cut_work *w, cut_kspec *k)
{
    free((void *)w->bufs[1].data[0]);
    free((void *)w->bufs[1].data[1]);
    w->bufs[1].data[0] = w->bufs[1].data[1] = NULL;
    cut_kspec_work_free(w);
    cut_kspec_free(k);
}

static void prepare_ok(cut_runner *r, const cut_work *w)
{
    cut_err e = {{0}};
    if (cut_runner_prepare_work(r, w, &e) != 0)
        fail_msg("%s", e.msg);
}

/* Two works held (the spec's sizes and others, as kcheck.c switches between them): switching back and forth sends
 * nothing after the first prepare of each, the results are a fresh prepare's, a candidate that wrote its input leaves
 * the held work clean, a work that differs in one element is sent, and a fresh worker (after a fault) loads the
 * work it is switched to. */
static void test_triton_runner_held(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_runner *r = new_runner(0, 1, 1, 20);
    cut_kspec ka, kb;
    cut_work wa, wb;
    spec_work(r, "\"ROWS\": 6, \"COLS\": 100", &ka, &wa);
    spec_work(r, "\"ROWS\": 5, \"COLS\": 77", &kb, &wb);
    prepare_ok(r, &wa);
    const cut_result fresh = run_variant(r, &ka, "softmax_ok", NULL);
    assert_int_equal(fresh.status, CUT_ST_OK);
    prepare_ok(r, &wb);
    assert_int_equal(run_variant(r, &kb, "softmax_ok", NULL).status, CUT_ST_OK);

    const cut_prep_stats before = r->prep;
    prepare_ok(r, &wa);
    cut_result res = run_variant(r, &ka, "softmax_ok", NULL);
    assert_int_equal(res.status, CUT_ST_OK);
    assert_true(res.max_abs_err == fresh.max_abs_err); /* the same data: the same outputs */
    assert_int_equal(run_variant(r, &ka, "softmax_writes_input", NULL).status, CUT_ST_INPUT_MODIFIED);
    prepare_ok(r, &wb);
    prepare_ok(r, &wa);
    res = run_variant(r, &ka, "softmax_ok", NULL);
    assert_int_equal(res.status, CUT_ST_OK); /* the input the last candidate wrote was restored */
    assert_true(res.max_abs_err == fresh.max_abs_err);
    printf("  held: %ld sent (%.0f bytes), %ld held\n", r->prep.sent - before.sent, r->prep.bytes - before.bytes,
           r->prep.held - before.held);
    assert_int_equal(r->prep.sent, before.sent);
    assert_true(r->prep.bytes == before.bytes);
    assert_int_equal(r->prep.held, before.held + 3);

    /* one element of set 1 changed: another work, sent; its set-1 check then fails against the old references */
    cut_work changed;
    assert_int_equal(cut_work_keep(&wa, 0, &changed, &e), 0);
    ((float *)changed.bufs[0].data[1])[7] += 1.0f;
    prepare_ok(r, &changed);
    assert_int_equal(r->prep.sent, before.sent + 1);
    assert_int_equal(run_variant(r, &ka, "softmax_ok", NULL).status, CUT_ST_WRONG_OTHER_DATA);
    cut_work_free(&changed);

    /* a fault ends the worker; the fresh one loads the work it is switched to from the files kept */
    prepare_ok(r, &wb);
    assert_int_equal(run_variant(r, &kb, "softmax_oob", NULL).status, CUT_ST_FAULT);
    const long sent = r->prep.sent;
    prepare_ok(r, &wb);
    assert_int_equal(r->prep.sent, sent + 1);
    assert_int_equal(run_variant(r, &kb, "softmax_ok", NULL).status, CUT_ST_OK);
    free_refs(&wa, &ka);
    free_refs(&wb, &kb);
    cut_runner_free(r);
}

/* A worker that cannot start says why in a sentence. */
static void test_triton_runner_bad_python(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_runner *r = cut_runner_triton_new("/nonexistent/python3", worker, -1, NULL, "/tmp", 0, &e);
    assert_null(r);
    printf("  no python: %s\n", e.msg);
    assert_non_null(strstr(e.msg, "could not start"));
    assert_non_null(strstr(e.msg, "exit status 127"));
}

int main(void)
{
    const char *fx;
    const int skip = tu_triton_env(&python, &worker, &fx);
    if (skip)
        return skip;
    snprintf(fixtures, sizeof fixtures, "%s/triton", fx);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_triton_runner),
        cmocka_unit_test(test_triton_runner_held),
        cmocka_unit_test(test_triton_runner_bad_python),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
