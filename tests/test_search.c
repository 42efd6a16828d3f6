/* Search: proposals are valid and never repeat (with and without the cost model), epsilon decays as documented,
 * and — the replay experiment — cut_search itself, restricted to a case's recorded schedules whose measured times
 * stand in for the GPU, reaches the recorded optimum in fewer trials than random search, averaged over seeds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/search.h"
#include "cutune/util.h"
#include "replay_fixture.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A smooth synthetic "time" of a schedule, so the search has something to climb without a GPU. */
static double synthetic_ms(const cut_sched *s)
{
    double t = 1.0 + 0.1 * s->tpl;
    for (int i = 0; i < CUT_MAX_KNOBS; i++) {
        double x = log2(1.0 + CUT_MAX(s->k[i], 0)) - 2.0 - 0.1 * i;
        t += 0.05 * x * x;
    }
    return t;
}

static void run_distinct(int use_model)
{
    const cut_conv c = {1, 14, 14, 256, 256, 3, 3, 1, 1};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_search_opts o;
    cut_search_opts_default(&o);
    o.use_model = use_model;
    o.seed = 7;
    cut_search *s = cut_search_new(&c, &d, &o);
    enum { ROUNDS = 8, PER = 32 };
    cut_sched all[ROUNDS * PER];
    int n = 0;
    for (int r = 0; r < ROUNDS; r++) {
        int got = cut_search_propose(s, PER, all + n);
        assert_int_equal(got, PER);
        for (int i = n; i < n + got; i++) {
            cut_err e;
            if (cut_sched_check(&c, &all[i], &d, &e) != 0)
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

static void test_distinct_plain(void **state)
{
    (void)state;
    run_distinct(0);
}

static void test_distinct_model(void **state)
{
    (void)state;
    run_distinct(1);
}

static void test_epsilon_decay(void **state)
{
    (void)state;
    const cut_conv c = {1, 14, 14, 64, 64, 3, 3, 1, 1};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_search_opts o;
    cut_search_opts_default(&o);
    o.use_model = 0;
    o.random_share = 0.4;
    o.random_share_final = 0.1;
    o.random_decay = 100;
    cut_search *s = cut_search_new(&c, &d, &o);
    assert_float_equal(cut_search_epsilon(s), 0.4, 1e-12);
    cut_sched sc[100];
    assert_int_equal(cut_search_propose(s, 100, sc), 100);
    for (int i = 0; i < 50; i++)
        cut_search_observe(s, &sc[i], 1.0 + i, -1);
    assert_float_equal(cut_search_epsilon(s), 0.25, 1e-12);
    for (int i = 50; i < 100; i++)
        cut_search_observe(s, &sc[i], -1, -1); /* failures count as observations too */
    assert_float_equal(cut_search_epsilon(s), 0.1, 1e-12);
    cut_search_free(s);
    o.random_decay = 0; /* no decay */
    s = cut_search_new(&c, &d, &o);
    cut_search_observe(s, &sc[0], 1.0, -1);
    assert_float_equal(cut_search_epsilon(s), 0.4, 1e-12);
    cut_search_free(s);
}

/* Trials of another workload train the model (so the first round is model-guided) without entering the search's
 * own bookkeeping: nothing is marked seen. */
static void test_prior(void **state)
{
    (void)state;
    const cut_conv c = {1, 14, 14, 256, 256, 3, 3, 1, 1}, other = {1, 28, 28, 128, 128, 3, 3, 1, 1};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_search_opts o;
    cut_search_opts_default(&o);
    cut_search *s = cut_search_new(&c, &d, &o);
    cut_rng r;
    cut_rng_seed(&r, 5);
    cut_sched sc;
    assert_int_equal(cut_sched_sample_valid(&other, &d, 1, &r, &sc, 1000), 0);
    assert_int_equal(cut_search_add_prior(s, &other, &sc, 1.0, -1, 0), -1); /* group 0 is the case itself */
    for (int i = 0; i < 64; i++) {
        assert_int_equal(cut_sched_sample_valid(&other, &d, 1, &r, &sc, 1000), 0);
        assert_int_equal(cut_search_add_prior(s, &other, &sc, synthetic_ms(&sc), -1, 1), 0);
    }
    assert_int_equal(cut_search_seen(s), 0);
    cut_sched out[16];
    assert_int_equal(cut_search_propose(s, 16, out), 16);
    assert_int_equal(cut_search_seen(s), 16);
    assert_true(cut_search_model_active(s));
    cut_search_free(s);
    o.use_model = 0; /* without a model there is nothing to give a prior to */
    s = cut_search_new(&c, &d, &o);
    assert_int_equal(cut_search_add_prior(s, &other, &sc, 1.0, -1, 1), -1);
    cut_search_free(s);
}

/* ---------------------------------------------------------------------------------------------------------------
 * replay: the search over a recorded universe; "measuring" looks the schedule's time up in the log */

#define REPLAY_ROUND 32 /* proposals per round, all observed before the next round (as in tune's warm-up) */
#define REPLAY_SEEDS 5

static const cut_record *lookup(const cut_record *r, int n, const cut_sched *s)
{
    for (int i = 0; i < n; i++)
        if (cut_sched_equal(&r[i].sched, s))
            return &r[i];
    return NULL;
}

/* Trials until a schedule with GFLOP/s >= target is measured (n + 1 if never). */
static int replay_trials(const cut_record *r, int n, const cut_sched *uni, double target, uint64_t seed,
                         int use_model, double *propose_s)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_search_opts o;
    cut_search_opts_default(&o);
    o.seed = seed;
    o.universe = uni;
    o.nuniverse = n;
    o.use_model = use_model;
    if (!use_model)
        o.random_share = o.random_share_final = 1.0; /* pure random search over the universe */
    cut_search *s = cut_search_new(&r[0].conv, &d, &o);
    cut_sched batch[REPLAY_ROUND];
    int done = 0, found = 0;
    while (!found && done < n) {
        double t0 = cut_now_s();
        int got = cut_search_propose(s, REPLAY_ROUND, batch);
        *propose_s += cut_now_s() - t0;
        if (got == 0)
            break;
        for (int i = 0; i < got; i++) {
            const cut_record *q = lookup(r, n, &batch[i]);
            if (!q)
                fail_msg("the search proposed a schedule outside the recorded universe");
            done++;
            if (!found && q->status == CUT_ST_OK && q->gflops >= target)
                found = done;
            cut_search_observe(s, &q->sched, q->status == CUT_ST_OK ? q->median_ms : -1, q->regs);
        }
    }
    cut_search_free(s);
    return found ? found : n + 1;
}

static void test_replay_search_beats_random(void **state)
{
    (void)state;
    for (size_t f = 0; f < CUT_ARRAY_LEN(fixture_cases); f++) {
        cut_record *r;
        int n;
        load_fixture(fixture_cases[f], &r, &n);
        cut_sched *uni = malloc(sizeof *uni * (size_t)n);
        double best = 0;
        for (int i = 0; i < n; i++) {
            uni[i] = r[i].sched;
            if (r[i].status == CUT_ST_OK && r[i].gflops > best)
                best = r[i].gflops;
        }
        double sum_g = 0, sum_r = 0, prop_g = 0, prop_r = 0;
        int rounds_g = 0;
        for (int k = 0; k < REPLAY_SEEDS; k++) {
            int g = replay_trials(r, n, uni, best, 100 + (uint64_t)k, 1, &prop_g);
            int rnd = replay_trials(r, n, uni, best, 100 + (uint64_t)k, 0, &prop_r);
            printf("  %.5s seed %d: the recorded optimum after %4d trials (search), %4d (random)\n", fixture_cases[f],
                   k, g, rnd);
            sum_g += g;
            sum_r += rnd;
            rounds_g += (g + REPLAY_ROUND - 1) / REPLAY_ROUND;
        }
        printf("  %.5s: %d recorded schedules; mean %.1f trials (search) vs %.1f (random; expected %.1f); "
               "%.3f s per model-guided round\n",
               fixture_cases[f], n, sum_g / REPLAY_SEEDS, sum_r / REPLAY_SEEDS, (n + 1) / 2.0, prop_g / rounds_g);
        assert_true(sum_g < sum_r);
        assert_true(sum_g / REPLAY_SEEDS < 0.5 * (n + 1) / 2.0);
        free(uni);
        free(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distinct_plain),
        cmocka_unit_test(test_distinct_model),
        cmocka_unit_test(test_epsilon_decay),
        cmocka_unit_test(test_prior),
        cmocka_unit_test(test_replay_search_beats_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
