/* The loop's dynamic queue over several runners (src/pipeline/loop.c: cut_tune_measure_jobs_each), with fake
 * runners: with as many candidates as runners candidate k goes to runner k; a slow runner holds up no other (it
 * measures little, the fast one the rest); each job keeps the runner that measured it and its own result, in job
 * order; each result is reported once as it ends; a runner's setup error stops the others and is the batch's. And
 * through the whole loop: each record carries the env of the runner that measured it, and a resume accepts them. */
#include "cutune/measure.h"
#include "cutune/record.h"
#include "cutune/task.h"
#include "cutune/util.h"
#include "cutune/workload.h"
#include "pipeline/cstream.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fake_runner.h"

/* A call's result says who measured it: median_ms = id + 1. */
static int fake_one(cut_runner *r, const cut_call *c, const cut_run_opts *o, cut_result *res, cut_err *e)
{
    (void)c, (void)o;
    fake *f = r->impl;
    if (++f->calls == f->fail_at)
        return cut_err_set(e, "runner %d lost", f->id);
    const struct timespec ts = {0, (long)(f->delay_s * 1e9)};
    nanosleep(&ts, NULL);
    cut_result_reset(res);
    res->median_ms = res->min_ms = res->max_ms = f->id + 1;
    res->repeats = 1;
    return 0;
}

static cut_runner *fake_new(int id, double delay_s, int fail_at)
{
    cut_runner *r = fake_runner_new(id, fake_one);
    fake *f = r->impl;
    f->delay_s = delay_s;
    f->fail_at = fail_at;
    const cut_conv c = {1, 6, 6, 4, 3, 3, 3, 1, 1};
    cut_err e = {{0}};
    assert_int_equal(cut_runner_prepare_conv(r, &c, 7, &e), 0);
    return r;
}

static cut_job **jobs_new(int n)
{
    cut_job **jobs = calloc((size_t)n, sizeof *jobs);
    for (int i = 0; i < n; i++) {
        jobs[i] = calloc(1, sizeof **jobs);
        jobs[i]->ks.src = strdup("/* a kernel */");
        snprintf(jobs[i]->ks.entry, sizeof jobs[i]->ks.entry, "cut_conv2d");
        for (int d = 0; d < 3; d++)
            jobs[i]->ks.grid[d] = jobs[i]->ks.block[d] = 1;
        jobs[i]->seq = i;
        cut_result_reset(&jobs[i]->res);
    }
    return jobs;
}

static void jobs_free(cut_job **jobs, int n)
{
    for (int i = 0; i < n; i++)
        cut_job_free(jobs[i]);
    free(jobs);
}

typedef struct seen {
    pthread_mutex_t mu;
    int count[64];
} seen;

static void on_done(void *ctx, int i)
{
    seen *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->count[i]++;
    pthread_mutex_unlock(&s->mu);
}

static void test_first_by_index(void **state)
{
    (void)state;
    cut_runner *r[3] = {fake_new(0, 0.05, 0), fake_new(1, 0.0, 0), fake_new(2, 0.01, 0)};
    cut_job **jobs = jobs_new(3);
    cut_err e = {{0}};
    assert_int_equal(cut_tune_measure_jobs_with(NULL, jobs, 3, 0, r, 3, &e), 0);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(jobs[k]->runner, k);
        assert_true(jobs[k]->res.median_ms == k + 1);
    }
    jobs_free(jobs, 3);
    for (int k = 0; k < 3; k++)
        cut_runner_free(r[k]);
}

static void test_slow_runner(void **state)
{
    (void)state;
    enum { N = 24 };
    cut_runner *r[2] = {fake_new(0, 0.5, 0), fake_new(1, 0.005, 0)};
    cut_job **jobs = jobs_new(N);
    jobs[5]->res.status = CUT_ST_COMPILE_ERROR; /* codegen failed: never measured */
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    cut_err e = {{0}};
    assert_int_equal(cut_tune_measure_jobs_each(NULL, jobs, N, 0, r, 2, on_done, &s, &e), 0);
    int by[2] = {0, 0};
    for (int i = 0; i < N; i++) {
        if (i == 5) {
            assert_int_equal(jobs[i]->runner, -1);
            assert_int_equal(jobs[i]->res.status, CUT_ST_COMPILE_ERROR);
            assert_int_equal(s.count[i], 0);
            continue;
        }
        assert_true(jobs[i]->runner == 0 || jobs[i]->runner == 1);
        assert_true(jobs[i]->res.median_ms == jobs[i]->runner + 1); /* its own result, where its runner put it */
        assert_int_equal(s.count[i], 1);
        by[jobs[i]->runner]++;
    }
    assert_int_equal(jobs[0]->runner, 0);
    assert_int_equal(jobs[1]->runner, 1);
    printf("slow runner measured %d, fast runner %d\n", by[0], by[1]);
    assert_true(by[0] <= 2 && by[0] + by[1] == N - 1);
    jobs_free(jobs, N);
    cut_runner_free(r[0]);
    cut_runner_free(r[1]);
}

static void test_runner_fails(void **state)
{
    (void)state;
    enum { N = 10 };
    cut_runner *r[2] = {fake_new(0, 0.01, 2), fake_new(1, 0.01, 0)};
    cut_job **jobs = jobs_new(N);
    cut_err e = {{0}};
    assert_int_equal(cut_tune_measure_jobs_with(NULL, jobs, N, 0, r, 2, &e), -1);
    assert_non_null(strstr(e.msg, "runner 0 lost"));
    assert_true(((fake *)r[1]->impl)->calls < N - 1); /* the other stopped taking candidates */
    jobs_free(jobs, N);
    cut_runner_free(r[0]);
    cut_runner_free(r[1]);
}

/* One runner: the whole batch in one call, as always. */
static void test_one_runner(void **state)
{
    (void)state;
    cut_runner *r = fake_new(4, 0.0, 0);
    cut_job **jobs = jobs_new(5);
    cut_err e = {{0}};
    assert_int_equal(cut_tune_measure_jobs(jobs, 5, 0, r, &e), 0);
    for (int i = 0; i < 5; i++)
        assert_true(jobs[i]->runner == 0 && jobs[i]->res.median_ms == 5);
    assert_int_equal(((fake *)r->impl)->calls, 5);
    jobs_free(jobs, 5);
    cut_runner_free(r);
}

/* A conv case tuned over two fake runners: every record says which measured it; the resumed run accepts both. */
static void test_records_env(void **state)
{
    (void)state;
    const char *base = getenv("CUTUNE_TEST_TMP");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/test_measure_queue", base && *base ? base : "/tmp");
    cut_err e = {{0}};
    cut_remove_tree(dir, NULL, NULL);
    assert_int_equal(cut_mkdirs(dir, &e), 0);
    cut_runner *r[2] = {fake_new(0, 0.002, 0), fake_new(1, 0.0, 0)};
    const cut_conv c = {1, 8, 8, 8, 4, 3, 3, 1, 1};
    cut_tune_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.records_dir = dir;
    cfg.trials = 16;
    cfg.batch = 8;
    cfg.seed = 1;
    cfg.strategy = CUT_STRAT_RANDOM;
    cut_devlimits_sm90(&cfg.limits);
    cut_tune_stats st;
    assert_int_equal(cut_tune_case_on(&cfg, r, 2, &c, 1, &st, &e), 0);
    assert_int_equal(st.trials_total, 16);
    char path[1200], name[512];
    cut_conv_case_name(&c, 1, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    cut_record *recs = NULL;
    int n = 0, partial = 0, by[2] = {0, 0};
    assert_int_equal(cut_records_load(path, &recs, &n, &partial, &e), 0);
    assert_int_equal(n, 16);
    for (int i = 0; i < n; i++) {
        const int k = recs[i].median_ms == 1 ? 0 : 1;
        assert_true(recs[i].median_ms == k + 1);
        char want[32];
        snprintf(want, sizeof want, "fake %d", k);
        assert_string_equal(recs[i].env.gpu_name, want);
        by[k]++;
    }
    assert_true(by[0] > 0 && by[1] > 0);
    free(recs);
    cfg.trials = 24; /* resumed: the log holds trials of both runners */
    assert_int_equal(cut_tune_case_on(&cfg, r, 2, &c, 1, &st, &e), 0);
    assert_int_equal(st.trials_total, 24);
    assert_int_equal(st.trials_new, 8);
    cut_runner_free(r[0]);
    cut_runner_free(r[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_by_index), cmocka_unit_test(test_slow_runner),
        cmocka_unit_test(test_runner_fails), cmocka_unit_test(test_one_runner), cmocka_unit_test(test_records_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
