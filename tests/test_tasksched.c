/* The task scheduler (cutune/tasksched.h): Ansor's gradient on synthetic histories (the formula's value, the
 * similarity bound), the warm-up order, the choice of a heavy task with a recent gain, a dead task never chosen, the
 * epsilon choice the same under the same seed; and a scheduled run of three conv cases on a fake runner: the budget
 * spent exactly, each log holding what the scheduler counted, a resumed run going on from the logs. */
#include "cutune/measure.h"
#include "cutune/record.h"
#include "cutune/tasksched.h"
#include "cutune/util.h"
#include "cutune/workload.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_runner.h"
#include "testutil.h"

/* No random rounds: the choice is the gradient's alone. */
static void greedy(cut_tasksched *s, int n)
{
    cut_tasksched_opts o;
    cut_tasksched_opts_default(&o);
    o.eps = 0;
    cut_tasksched_init(s, n, &o);
}

/* Task i given rounds whose bests were b[0..nb). */
static void history(cut_tasksched *s, int i, const double *b, int nb)
{
    for (int k = 0; k < nb; k++)
        cut_tasksched_observe(s, i, 4, b[k], 0);
}

static void test_gradient_value(void **state)
{
    (void)state;
    cut_tasksched s;
    greedy(&s, 2);
    s.t[0].weight = 2;
    history(&s, 0, (const double[]){10, 8, 6, 5}, 4);
    /* backward (5 - 10) / 3, forward (5 - 5 / 4) - 5; w (0.2 b + 0.8 f) */
    const double want = 2 * (0.2 * (5.0 - 10.0) / 3 + 0.8 * -1.25);
    assert_true(fabs(cut_tasksched_gradient(&s, 0) - want) < 1e-12);
    assert_true(cut_tasksched_gradient(&s, 1) == 0); /* never given a round */
    assert_true(fabs(cut_tasksched_network(&s) - 10) < 1e-12);
    cut_tasksched_free(&s);
}

/* Two tasks of one group: the slower is bounded by 1/beta of the faster's speed (its time could fall to 2). */
static void test_similarity_bound(void **state)
{
    (void)state;
    cut_tasksched s;
    greedy(&s, 2);
    for (int i = 0; i < 2; i++) {
        s.t[i].flops = 100;
        s.t[i].group = 7;
    }
    history(&s, 0, (const double[]){5}, 1);
    history(&s, 1, (const double[]){1}, 1);
    /* speeds 20 and 100: task 0's next time min(5 - 5, 2 * 100 / 100) = 0 -> the 1/t guess is lower here */
    assert_true(fabs(cut_tasksched_gradient(&s, 0) - 0.8 * -5) < 1e-12);
    history(&s, 0, (const double[]){5}, 1); /* two rounds: 1/t gives 2.5, the bound 2 */
    assert_true(fabs(cut_tasksched_gradient(&s, 0) - 0.8 * (2 - 5)) < 1e-12);
    s.t[1].group = 8; /* alone in its group: no bound */
    assert_true(fabs(cut_tasksched_gradient(&s, 0) - 0.8 * -2.5) < 1e-12);
    cut_tasksched_free(&s);
}

/* A task far below its group's speed after 5 rounds more than the others leaves the group. */
static void test_leaves_group(void **state)
{
    (void)state;
    cut_tasksched s;
    greedy(&s, 2);
    for (int i = 0; i < 2; i++) {
        s.t[i].flops = 100;
        s.t[i].group = 3;
    }
    history(&s, 1, (const double[]){1}, 1);
    history(&s, 0, (const double[]){9, 9, 9, 9, 9, 9}, 6);
    assert_int_equal(s.t[0].group, 3); /* 6 rounds: not more than 5 + 1 */
    history(&s, 0, (const double[]){9}, 1);
    assert_int_equal(s.t[0].group, -1);
    cut_tasksched_free(&s);
}

static void test_warmup_order(void **state)
{
    (void)state;
    cut_tasksched s;
    greedy(&s, 4);
    s.t[2].dead = 1;
    s.t[3].weight = 100; /* the warm-up follows the list, whatever the weights */
    const int want[] = {0, 1, 3};
    for (int k = 0; k < 3; k++) {
        const int i = cut_tasksched_next(&s);
        assert_int_equal(i, want[k]);
        cut_tasksched_observe(&s, i, 4, 1, 0);
    }
    cut_tasksched_free(&s);
}

/* After the warm-up: the task whose weight times recent gain is largest gets the round. */
static void test_heavy_recent_gain(void **state)
{
    (void)state;
    cut_tasksched s;
    greedy(&s, 3);
    history(&s, 0, (const double[]){4, 4, 4, 4, 4}, 5);
    history(&s, 1, (const double[]){8, 6, 4, 2, 1}, 5);
    history(&s, 2, (const double[]){4, 4, 4, 4, 4}, 5);
    s.t[1].weight = 3;
    assert_int_equal(cut_tasksched_next(&s), 1);
    s.t[1].weight = 1; /* task 0's weight now outweighs task 1's recent gain */
    s.t[0].weight = 5;
    assert_int_equal(cut_tasksched_next(&s), 0);
    cut_tasksched_free(&s);
}

/* A dead task is never chosen: not by the gradient (it would have the largest), not at random. */
static void test_dead_never_chosen(void **state)
{
    (void)state;
    cut_tasksched_opts o;
    cut_tasksched_opts_default(&o);
    o.eps = 0.5;
    o.seed = 11;
    cut_tasksched s;
    cut_tasksched_init(&s, 3, &o);
    history(&s, 0, (const double[]){CUT_TASKSCHED_NO_TIME}, 1); /* no valid trial: the largest gradient */
    history(&s, 1, (const double[]){2}, 1);
    history(&s, 2, (const double[]){3}, 1);
    cut_tasksched_observe(&s, 0, 0, -1, 1);
    int by[3] = {0, 0, 0};
    for (int k = 0; k < 1000; k++)
        by[cut_tasksched_next(&s)]++;
    assert_int_equal(by[0], 0);
    assert_true(by[1] > 0 && by[2] > 0);
    s.t[1].dead = s.t[2].dead = 1;
    assert_int_equal(cut_tasksched_next(&s), -1);
    cut_tasksched_free(&s);
}

/* The epsilon-greedy choice: the same seed, the same choices; every live task drawn at eps 1. */
static void test_epsilon_seeded(void **state)
{
    (void)state;
    int seq[2][200];
    for (int run = 0; run < 2; run++) {
        cut_tasksched_opts o;
        cut_tasksched_opts_default(&o);
        o.eps = 0.3;
        o.seed = 42;
        cut_tasksched s;
        cut_tasksched_init(&s, 4, &o);
        for (int i = 0; i < 4; i++)
            history(&s, i, (const double[]){1.0 + i}, 1);
        for (int k = 0; k < 200; k++) {
            seq[run][k] = cut_tasksched_next(&s);
            cut_tasksched_observe(&s, seq[run][k], 4, -1, 0);
        }
        cut_tasksched_free(&s);
    }
    assert_memory_equal(seq[0], seq[1], sizeof seq[0]);
    cut_tasksched_opts o;
    cut_tasksched_opts_default(&o);
    o.eps = 1;
    cut_tasksched s;
    cut_tasksched_init(&s, 4, &o);
    int by[4] = {0};
    for (int i = 0; i < 4; i++)
        history(&s, i, (const double[]){1.0 + i}, 1);
    for (int k = 0; k < 400; k++)
        by[cut_tasksched_next(&s)]++;
    for (int i = 0; i < 4; i++)
        assert_true(by[i] > 50);
    cut_tasksched_free(&s);
}

/* ---- a scheduled run on a fake runner ---- */

/* Every call is valid and a little faster than the last: each round finds a better best. */
static int fake_one(cut_runner *r, const cut_call *c, const cut_run_opts *o, cut_result *res, cut_err *e)
{
    (void)c, (void)o, (void)e;
    fake *f = r->impl;
    cut_result_reset(res);
    res->median_ms = res->min_ms = res->max_ms = 1 + 1.0 / ++f->calls;
    res->repeats = 1;
    return 0;
}

static const cut_conv shapes[3] = {{1, 8, 8, 8, 4, 3, 3, 1, 1}, {1, 9, 9, 6, 5, 3, 3, 2, 1}, {2, 6, 6, 4, 8, 1, 1, 1, 0}};

/* The records in the log of case i+1 in dir. */
static int log_count(const char *dir, int i)
{
    char path[1200], name[512];
    cut_conv_case_name(&shapes[i], i + 1, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    cut_record *recs = NULL;
    int n = 0, partial = 0;
    cut_err e = {{0}};
    assert_int_equal(cut_records_load(path, &recs, &n, &partial, &e), 0);
    free(recs);
    return n;
}

/* Runs the three cases under budget; each log's count is what the item says; returns the sum. */
static int scheduled(const char *dir, cut_runner *r, int budget, int *rounds_new)
{
    cut_tune_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.records_dir = dir;
    cfg.trials = budget;
    cfg.batch = 4;
    cfg.seed = 5;
    cfg.strategy = CUT_STRAT_RANDOM;
    cut_devlimits_sm90(&cfg.limits);
    cut_tasksched_item items[3];
    memset(items, 0, sizeof items);
    for (int i = 0; i < 3; i++) {
        items[i].t = cut_task_conv_new(&shapes[i], i + 1, &cfg);
        items[i].weight = i == 1 ? 4 : 1;
        items[i].group = -1;
    }
    char json[1200];
    snprintf(json, sizeof json, "%s/sched.json", dir);
    cut_err e = {{0}};
    assert_int_equal(cut_tasksched_tune(&cfg, items, 3, &r, 1, NULL, json, &e), 0);
    int sum = 0;
    *rounds_new = 0;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(log_count(dir, i), items[i].st.trials_total);
        assert_true(items[i].rounds >= 1); /* the warm-up */
        sum += items[i].st.trials_total;
        *rounds_new += items[i].st.trials_new > 0;
        cut_task_free(items[i].t);
    }
    assert_true(cut_path_exists(json));
    return sum;
}

static void test_budget_spent(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("test_tasksched");
    assert_non_null(dir);
    cut_runner *r = fake_runner_new(0, fake_one);
    int fresh;
    assert_int_equal(scheduled(dir, r, 37, &fresh), 37); /* rounds of 4 and a last one of 1 */
    assert_int_equal(fresh, 3);
    assert_int_equal(scheduled(dir, r, 37, &fresh), 37); /* resumed: nothing left to do */
    assert_int_equal(fresh, 0);
    assert_int_equal(scheduled(dir, r, 50, &fresh), 50); /* resumed: 13 more */
    cut_runner_free(r);
    cut_remove_tree(dir, NULL, NULL);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradient_value),   cmocka_unit_test(test_similarity_bound),
        cmocka_unit_test(test_leaves_group),     cmocka_unit_test(test_warmup_order),
        cmocka_unit_test(test_heavy_recent_gain), cmocka_unit_test(test_dead_never_chosen),
        cmocka_unit_test(test_epsilon_seeded),   cmocka_unit_test(test_budget_spent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
