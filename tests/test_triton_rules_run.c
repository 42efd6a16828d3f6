/* The Triton rewrites (src/ops/kernel/rules_triton.c) run: every rewrite of every suite kernel (kernels/triton/) and
 * of the per-element atomics fixture (tests/fixtures/triton/rowsum_atomic_elem.py) goes through the Triton runner
 * under Triton's interpreter at the spec's check sizes, against the baseline's captured outputs. No rewrite may fail
 * to load (compile_error: the module is not valid Python, or an entry or keyword Triton does not know); the exact ones
 * (cache_modifier, eviction_policy, the hints, the grouped raster, the atomics) must pass the check; so must all the
 * exact ones applied together. Needs the Python with triton and numpy ($CUTUNE_TRITON_PYTHON, set by CMake); exits 77
 * (skipped) saying why when it cannot import them. */
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

static const char atomic_spec[] =
    "{\"name\": \"trowsum_elem\", \"language\": \"triton\", \"entry\": \"rowsum_elem_kernel\",\n"
    " \"source_path\": \"rowsum_atomic_elem.py\",\n"
    " \"sizes\": {\"ROWS\": 19, \"COLS\": 100},\n"
    " \"tunables\": {\"BLOCK\": [32, 64], \"num_warps\": [4, 8]},\n"
    " \"launch\": {\"grid\": [\"ROWS\", \"cdiv(COLS, BLOCK)\"]},\n"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"ROWS\", \"COLS\"], \"init\": \"randn\", \"seed\": 1}],\n"
    " \"outputs\": [{\"name\": \"s\", \"dtype\": \"f32\", \"shape\": [\"ROWS\"], \"accumulate\": true}],\n"
    " \"scalars\": [{\"name\": \"n_cols\", \"dtype\": \"i32\", \"value\": \"COLS\"}],\n"
    " \"args\": [\"x\", \"s\", \"n_cols\"], \"tolerance\": {\"atol\": 1e-4, \"rtol\": 1e-4}}";

static const char *python, *worker;
static char fixtures[1024];

static char *tf32x3(const char *src) { return cut_rule_triton_dot_precision(src, "tf32x3"); }
static char *tf32(const char *src) { return cut_rule_triton_dot_precision(src, "tf32"); }

/* exact: the same results up to summation order, so the check must pass. The others change rounding: tl.dot's
 * input_precision is ignored by the interpreter (numpy matmul in fp32) but not by a GPU, and exp2(x * log2 e) and
 * rsqrt round differently from exp and 1 / sqrt; only that they load and run is asserted for them. */
static const struct {
    const char *name;
    char *(*rewrite)(const char *src);
    int exact;
} rules[] = {
    {"cache_cg", cut_rule_triton_cache_cg, 1},     {"evict_first", cut_rule_triton_evict_first, 1},
    {"hints", cut_rule_triton_hints, 1},           {"grouped", cut_rule_triton_grouped, 1},
    {"atomics", cut_rule_triton_avoid_atomics, 1}, {"tf32x3", tf32x3, 0},
    {"tf32", tf32, 0},                             {"fast_math", cut_rule_triton_fast_math, 0},
};
#define NRULES (sizeof rules / sizeof rules[0])

static cut_runner *runner(void)
{
    cut_timing t;
    cut_timing_default(&t);
    t.warmup = 0;
    t.min_repeats = t.max_repeats = 1;
    t.min_total_ms = 0;
    t.timeout_s = 120;
    const char *tmp = getenv("CUTUNE_TEST_TMP");
    char cache[1200];
    snprintf(cache, sizeof cache, "%s/triton_rules_cache", tmp ? tmp : "/tmp");
    cut_err e = {{0}};
    cut_runner *r = cut_runner_triton_new(python, worker, -1, &t, cache, 0, &e);
    if (!r)
        fail_msg("%s", e.msg);
    return r;
}

/* Runs source src as the call c; its status (printed with what). */
static cut_status run_src(cut_runner *r, cut_call *c, const char *src, const char *what)
{
    cut_result res;
    cut_err e = {{0}};
    c->src = src;
    if (r->run(r, c, 1, NULL, &res, &e) != 0)
        fail_msg("%s: %s", what, e.msg);
    printf("  %-34s %-14s %s\n", what, cut_status_name(res.status), res.error);
    return res.status;
}

/* Every rule on spec k's baseline at size set set, run against the baseline's outputs; applied[r] counts the rules
 * that applied. */
static void check_spec(cut_runner *r, const cut_kspec *k, cut_ks_sizeset set, int *applied)
{
    cut_err e = {{0}};
    cut_work w;
    cut_call c;
    if (cut_kspec_work_at(k, set, &w, &e) != 0 || cut_kspec_call_at(k, set, NULL, &c, &e) != 0)
        fail_msg("%s: %s", k->name, e.msg);
    /* the baseline, captured: its outputs become the references */
    assert_int_equal(r->prepare(r, &w, 0, &e), 0);
    char *base = cut_kstate_materialise(k, NULL);
    c.src = base;
    cut_result res;
    cut_work_outputs outs;
    if (cut_runner_run_call(r, &c, &res, &outs, &e) != 0)
        fail_msg("%s: %s", k->name, e.msg);
    if (res.status != CUT_ST_OK)
        fail_msg("%s baseline: %s %s", k->name, cut_status_name(res.status), res.error);
    for (int b = 0; b < w.nbufs; b++)
        if (w.bufs[b].is_output)
            w.bufs[b].data[0] = outs.data[b][0], w.bufs[b].data[1] = outs.data[b][1];
    assert_int_equal(r->prepare(r, &w, 0, &e), 0);

    char *all = cut_xstrdup(base); /* the exact rewrites one after the other */
    int nall = 0;
    for (size_t i = 0; i < NRULES; i++) {
        char *src = rules[i].rewrite(base), what[160];
        if (!src)
            continue;
        applied[i]++;
        snprintf(what, sizeof what, "%s %s", k->name, rules[i].name);
        const cut_status st = run_src(r, &c, src, what);
        if (st == CUT_ST_COMPILE_ERROR || st == CUT_ST_FAULT || (rules[i].exact && st != CUT_ST_OK))
            fail_msg("%s: %s\n%s", what, cut_status_name(st), src);
        free(src);
        char *next = rules[i].exact ? rules[i].rewrite(all) : NULL;
        if (next) {
            free(all);
            all = next;
            nall++;
        }
    }
    if (nall > 1 && run_src(r, &c, all, "  all exact rewrites together") != CUT_ST_OK)
        fail_msg("%s: the exact rewrites together fail:\n%s", k->name, all);
    free(all);
    free(base);
    for (int b = 0; b < w.nbufs; b++)
        if (w.bufs[b].is_output)
            w.bufs[b].data[0] = w.bufs[b].data[1] = NULL;
    cut_work_outputs_free(&outs);
    cut_kspec_work_free(&w);
}

static void test_suite_rewrites(void **state)
{
    (void)state;
    static const char *const suite[] = {"softmax_row", "layernorm", "matmul", "lora_expand", "gelu"};
    int applied[NRULES] = {0};
    cut_runner *r = runner();
    for (size_t i = 0; i < sizeof suite / sizeof suite[0]; i++) {
        char path[1300];
        snprintf(path, sizeof path, "%s/../../kernels/triton/%s.json", fixtures, suite[i]);
        cut_kspec k;
        cut_err e = {{0}};
        if (cut_kspec_load(path, &k, &e) != 0)
            fail_msg("%s", e.msg);
        check_spec(r, &k, CUT_KS_CHECK_SIZES, applied);
        cut_kspec_free(&k);
    }
    /* the check sizes give matmul at most 8 rows of programs, where the grouped raster is the identity: 10 rows of
     * BM = 32 (two groups, the second of 2 rows) make it a real remap */
    int big[NRULES] = {0};
    char path[1300];
    snprintf(path, sizeof path, "%s/../../kernels/triton/matmul.json", fixtures);
    cut_kspec k;
    cut_err e = {{0}};
    if (cut_kspec_load(path, &k, &e) != 0 || cut_kspec_set_size(&k, "M", 300, &e) != 0 ||
        cut_kspec_set_size(&k, "N", 45, &e) != 0 || cut_kspec_set_size(&k, "K", 53, &e) != 0)
        fail_msg("%s", e.msg);
    check_spec(r, &k, CUT_KS_SIZES, big);
    assert_int_equal(big[3], 1);
    cut_kspec_free(&k);
    /* what each rule finds in the suite: a rule that stops matching fails here */
    const int want[NRULES] = {5, 5, 5, 2, 0, 2, 2, 3}; /* grouped: matmul, lora; fast math: softmax, layernorm, gelu */
    for (size_t i = 0; i < NRULES; i++)
        if (applied[i] != want[i])
            fail_msg("%s applied to %d suite kernels, want %d", rules[i].name, applied[i], want[i]);
    cut_runner_free(r);
}

static void test_atomics_fixture(void **state)
{
    (void)state;
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/triton", fixtures);
    cut_kspec k;
    cut_err e = {{0}};
    if (cut_kspec_parse(atomic_spec, strlen(atomic_spec), dir, &k, &e) != 0)
        fail_msg("%s", e.msg);
    int applied[NRULES] = {0};
    cut_runner *r = runner();
    check_spec(r, &k, CUT_KS_SIZES, applied);
    assert_int_equal(applied[4], 1); /* the per-element atomics, summed first */
    assert_int_equal(applied[3], 1); /* a 2-D grid of 19 x 4 programs: grouped, three groups of rows */
    cut_runner_free(r);
    cut_kspec_free(&k);
}

int main(void)
{
    const char *fx;
    const int skip = tu_triton_env(&python, &worker, &fx);
    if (skip)
        return skip;
    snprintf(fixtures, sizeof fixtures, "%s", fx);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suite_rewrites),
        cmocka_unit_test(test_atomics_fixture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
