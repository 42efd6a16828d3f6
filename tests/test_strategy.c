/* Strategies behind one propose/observe interface (cutune/strategy.h): schedules hashed by their own template's
 * knobs, random and exhaustive strategies on a small enumerable space, the evolutionary strategy on the GEMM space,
 * and the errors a user can meet (--strategy names, a space too large or not enumerable). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/gemm_space.h"
#include "cutune/search.h"
#include "cutune/space.h"
#include "cutune/strategy.h"

#include <stdlib.h>
#include <string.h>

/* ---- a small enumerable space: template 0 has knobs a in 1..4 and b in 1..3 with a valid when a*b <= 6; template
 * 1 has one knob c in 0..2 and never applies when the fake's flag says so ---- */

typedef struct fake {
    int tpl1_applies;
} fake;

static int f_nknobs(const cut_space *sp, int tpl)
{
    (void)sp;
    return tpl == 0 ? 2 : tpl == 1 ? 1 : 0;
}
static int f_applies(const cut_space *sp, int tpl) { return tpl == 0 || (tpl == 1 && ((fake *)sp->wl)->tpl1_applies); }
static int f_check(const cut_space *sp, const cut_sched *s, cut_err *e)
{
    (void)sp;
    if (s->tpl == 0 && s->k[0] >= 1 && s->k[0] <= 4 && s->k[1] >= 1 && s->k[1] <= 3 && s->k[0] * s->k[1] <= 6)
        return 0;
    if (s->tpl == 1 && s->k[0] >= 0 && s->k[0] <= 2)
        return 0;
    return cut_err_set(e, "invalid");
}
static int f_sample(const cut_space *sp, int tpl, cut_rng *r, cut_sched *out, int tries)
{
    for (int i = 0; i < tries; i++) {
        memset(out, 0, sizeof *out);
        out->tpl = tpl;
        if (tpl == 0) {
            out->k[0] = 1 + (int)cut_rng_below(r, 4);
            out->k[1] = 1 + (int)cut_rng_below(r, 3);
        } else {
            out->k[0] = (int)cut_rng_below(r, 3);
        }
        if (f_check(sp, out, NULL) == 0)
            return 0;
    }
    return -1;
}
static void f_mutate(const cut_space *sp, cut_rng *r, cut_sched *s)
{
    (void)sp;
    s->k[0] += cut_rng_below(r, 2) ? 1 : -1;
}
static double f_score(const cut_space *sp, double ms)
{
    (void)sp;
    return 1.0 / ms;
}
static long long f_count(const cut_space *sp)
{
    (void)sp;
    return 4 * 3 + 3;
}
static void f_nth(const cut_space *sp, long long i, cut_sched *out)
{
    (void)sp;
    memset(out, 0, sizeof *out);
    if (i < 12) {
        out->tpl = 0;
        out->k[0] = 1 + (int)(i / 3);
        out->k[1] = 1 + (int)(i % 3);
    } else {
        out->tpl = 1;
        out->k[0] = (int)(i - 12);
    }
}

static cut_space *fake_space(int tpl1, int enumerable)
{
    cut_space *sp = calloc(1, sizeof *sp);
    fake *f = calloc(1, sizeof *f);
    f->tpl1_applies = tpl1;
    *sp = (cut_space){.op = "fake", .wl = f, .ntpl = 2, .nknobs = f_nknobs, .applies = f_applies,
                      .sample_valid = f_sample, .mutate = f_mutate, .check = f_check, .score = f_score};
    cut_devlimits_sm90(&sp->dev);
    if (enumerable) {
        sp->count = f_count;
        sp->nth = f_nth;
    }
    return sp;
}

/* The fake's destroy is free(wl): cut_space_free must call it; without one, wl leaks, so give it one. */
static void f_destroy(cut_space *sp) { free(sp->wl); }

static void test_exhaustive(void **state)
{
    (void)state;
    cut_space *sp = fake_space(1, 1);
    sp->destroy = f_destroy;
    cut_err e = {{0}};
    cut_strategy *s = cut_strategy_exhaustive_new(sp, 100, &e);
    assert_non_null(s);
    assert_string_equal(s->name, "exhaustive");
    cut_sched got[32];
    int n = 0, k;
    /* a schedule observed first (a resumed log) is never proposed */
    cut_sched seen = {.tpl = 0, .k = {2, 3}};
    s->observe(s, &seen, 1.0, -1);
    while ((k = s->propose(s, 4, got + n)) > 0)
        n += k;
    /* template 0: a*b <= 6 of 4x3 (a=1: 3, a=2: 3, a=3: 2, a=4: 1) = 9, less the observed (2,3); template 1: 3 */
    assert_int_equal(n, 8 + 3);
    for (int i = 0; i < n; i++) {
        assert_int_equal(f_check(sp, &got[i], NULL), 0);
        assert_false(got[i].tpl == 0 && got[i].k[0] == 2 && got[i].k[1] == 3);
        for (int j = 0; j < i; j++)
            assert_false(cut_space_equal(sp, &got[i], &got[j]));
    }
    assert_int_equal(s->propose(s, 4, got), 0);
    cut_strategy_free(s);
    /* a template that does not apply is never enumerated */
    sp = fake_space(0, 1);
    sp->destroy = f_destroy;
    s = cut_strategy_exhaustive_new(sp, 100, &e);
    n = 0;
    while ((k = s->propose(s, 5, got + n)) > 0)
        n += k;
    assert_int_equal(n, 9);
    cut_strategy_free(s);
    /* too large, or not enumerable: a sentence, and the space is freed (ASan would see a leak) */
    sp = fake_space(1, 1);
    sp->destroy = f_destroy;
    assert_null(cut_strategy_exhaustive_new(sp, 10, &e));
    assert_non_null(strstr(e.msg, "has 15 knob combinations, more than the 10"));
    sp = fake_space(1, 0);
    sp->destroy = f_destroy;
    assert_null(cut_strategy_exhaustive_new(sp, 100, &e));
    assert_non_null(strstr(e.msg, "the fake space cannot be enumerated"));
}

static void test_random(void **state)
{
    (void)state;
    cut_space *sp = fake_space(1, 0);
    sp->destroy = f_destroy;
    cut_strategy *s = cut_strategy_random_new(sp, 7);
    cut_sched got[64];
    int n = 0, k;
    while ((k = s->propose(s, 3, got + n)) > 0 && n < 40)
        n += k;
    assert_int_equal(n, 9 + 3); /* every valid schedule once, then nothing */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            assert_false(cut_space_equal(sp, &got[i], &got[j]));
    cut_strategy_free(s);
}

/* A GEMM schedule's hash covers its own template's knobs, never what lies beyond them (the conv registry's knob
 * count at the same index used to decide that). */
static void test_hash_own_knobs(void **state)
{
    (void)state;
    const cut_gemm g = {256, 192, 128, CUT_GEMM_NN, CUT_DT_FP32};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_space *sp = cut_gemm_space_new(&g, &d);
    cut_rng r;
    cut_rng_seed(&r, 1);
    cut_sched a;
    assert_int_equal(sp->sample_valid(sp, CUT_GEMM_TPL_SIMT, &r, &a, 1000), 0);
    cut_sched b = a;
    for (int i = sp->nknobs(sp, a.tpl); i < CUT_MAX_KNOBS; i++)
        b.k[i] = 1000 + i;
    assert_int_equal(cut_space_hash(sp, &a), cut_space_hash(sp, &b));
    assert_true(cut_space_equal(sp, &a, &b));
    b.k[0] ^= 1;
    assert_false(cut_space_hash(sp, &a) == cut_space_hash(sp, &b));
    /* crossover touches only the template's knobs */
    cut_sched c = a, out;
    c.k[CUT_MAX_KNOBS - 1] = 77;
    memset(&out, 0, sizeof out);
    for (int i = 0; i < 20; i++) {
        cut_space_crossover(sp, &a, &c, &r, &out);
        assert_int_equal(out.k[CUT_MAX_KNOBS - 1], a.k[CUT_MAX_KNOBS - 1]);
    }
    cut_space_free(sp);
}

/* The evolutionary strategy on the GEMM space: valid, distinct proposals; observe feeds it. */
static void test_evolve_gemm(void **state)
{
    (void)state;
    const cut_gemm g = {256, 192, 128, CUT_GEMM_NT, CUT_DT_FP32};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_search_opts o;
    cut_search_opts_default(&o);
    o.use_model = 0;
    cut_strategy *s = cut_strategy_evolve_new(cut_gemm_space_new(&g, &d), &o);
    assert_non_null(cut_strategy_search(s));
    cut_sched got[64];
    int n = s->propose(s, 32, got);
    assert_int_equal(n, 32);
    for (int i = 0; i < n; i++) {
        cut_err e = {{0}};
        assert_int_equal(cut_gemm_sched_check(&g, &got[i], &d, &e), 0);
        s->observe(s, &got[i], 1.0 + i, -1);
    }
    int m = s->propose(s, 32, got + 32);
    assert_true(m > 0);
    for (int i = 32; i < 32 + m; i++)
        for (int j = 0; j < i; j++)
            assert_false(cut_space_equal(cut_search_space(cut_strategy_search(s)), &got[i], &got[j]));
    cut_strategy_free(s);
}

static void test_kind_names(void **state)
{
    (void)state;
    cut_strategy_kind k;
    cut_err e = {{0}};
    assert_int_equal(cut_strategy_kind_parse("random", &k, &e), 0);
    assert_int_equal(k, CUT_STRAT_RANDOM);
    assert_int_equal(cut_strategy_kind_parse("Exhaustive", &k, &e), 0);
    assert_int_equal(k, CUT_STRAT_EXHAUSTIVE);
    assert_int_equal(cut_strategy_kind_parse("annealing", &k, &e), -1);
    assert_non_null(strstr(e.msg, "unknown strategy 'annealing': use evolve"));
    assert_string_equal(cut_strategy_kind_name(CUT_STRAT_EVOLVE), "evolve");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exhaustive),      cmocka_unit_test(test_random),
        cmocka_unit_test(test_hash_own_knobs),  cmocka_unit_test(test_evolve_gemm),
        cmocka_unit_test(test_kind_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
