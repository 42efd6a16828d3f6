/* Tests of the energy meter (src/energy/meter.c) and the kernel_outputs file formats (src/energy/outputs.c).
 *
 * The meter runs against the fake libnvidia-ml ($CUTUNE_FAKE_NVML): its counter is W x (whole steps of step_ms of
 * CLOCK_MONOTONIC) x step_ms, i.e. a board drawing exactly W watts whose counter updates every step_ms. The
 * "kernel" is a busy wait of a known time per iteration, so the right answers are known: power W, energy per
 * iteration W x t, time per iteration t. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/energy.h"
#include "cutune/util.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H200_UUID "GPU-fa4e0000-0000-4000-8000-000000000000"

/* A "kernel" that busy-waits per_iter_s per iteration. queue_one_ahead: behaves like a GPU stream (the chunk
 * queued by call k is reported by call k + 1), else like the emulator (reported at once). */
typedef struct spin {
    double per_iter_s;
    long long launched;
    long long fail_after; /* > 0: the run fails once this many iterations were launched */
    int queue_one_ahead;
    long long queued;
    double queued_s;
} spin;

static int spin_run(void *ctx, long long iters, long long *done_iters, double *done_s, cut_err *e)
{
    spin *s = ctx;
    if (s->fail_after > 0 && s->launched + iters > s->fail_after)
        return cut_err_set(e, "kernel fault (planted)");
    double t0 = cut_now_s(), want = s->per_iter_s * (double)iters;
    while (cut_now_s() - t0 < want) {
    }
    s->launched += iters;
    /* device time as a GPU's events give it: what the kernel took, not the host's wall clock (which a loaded test
     * machine stretches by preempting this thread) */
    double took = want;
    if (!s->queue_one_ahead) {
        *done_iters = iters;
        *done_s = took;
        return 0;
    }
    *done_iters = s->queued;
    *done_s = s->queued_s;
    s->queued = iters;
    s->queued_s = took;
    return 0;
}

static void plan_for_test(cut_energy_plan *p, int lrounds, int steps)
{
    cut_energy_plan_default(p);
    snprintf(p->uuid, sizeof p->uuid, "%s", H200_UUID);
    p->lrounds = lrounds;
    p->min_steps = steps;
    p->warmup_s = 0.03;
    p->max_wait_s = 0.5;
}

/* The figures a loaded test machine can disturb, because the host clock decides where an edge falls and how long
 * the meter's own work between chunks takes (ctest runs this test alone, RUN_SERIAL, and it gets 3 attempts):
 * each window's power within 10% of the fake's 200 W, energy per iteration within 50% of 200 W x the device time
 * (the meter's own work between chunks is charged at the fake's full 200 W), the counter period within 25%. */
static int timing_figures_ok(const cut_energy_result *r)
{
    int ok = fabs(r->energy_mj - 200.0 * r->time_ms) < 200.0 * r->time_ms * 0.5 &&
             fabs(r->step_period_s - 0.010) < 0.010 * 0.25;
    for (int i = 0; i < r->lrounds; i++)
        ok &= fabs(r->round[i].avg_power_w - 200.0) < 200.0 * 0.1;
    if (!ok)
        fprintf(stderr, "timing figures off: %.1f / %.1f / %.1f W, %.3f mJ per %.5f ms, period %.4f s\n",
                r->round[0].avg_power_w, r->round[1].avg_power_w, r->round[2].avg_power_w, r->energy_mj,
                r->time_ms, r->step_period_s);
    return ok;
}

/* What must hold however loaded the machine is: whole counter steps per window, the run's own device time per
 * iteration, the arithmetic, the drain. */
static void assert_exact_figures(const cut_energy_result *r, const spin *s)
{
    assert_int_equal(r->lrounds, 3);
    for (int i = 0; i < 3; i++) {
        const cut_energy_stats *st = &r->round[i];
        assert_true(st->counter_steps >= 10);
        /* whole steps between two edges: the window's energy is a multiple of one step's 200 W x 10 ms = 2000 mJ */
        assert_true(fmod(st->energy_mj, 2000.0) < 1e-6);
        assert_true(st->energy_mj >= 10 * 2000.0);
    }
    /* time per iteration: the device time the run reported, 50 us, up to the half-chunk placement of the edges;
     * energy per iteration: 200 W x wall time per iteration, never less than the device time */
    if (fabs(r->time_ms - 0.050) >= 0.050 * 0.01)
        fprintf(stderr, "time per iteration %.6f ms\n", r->time_ms);
    assert_true(fabs(r->time_ms - 0.050) < 0.050 * 0.01);
    assert_true(r->energy_mj >= 200.0 * r->time_ms * 0.95);
    assert_true(fabs(r->gflops - 1e6 / (r->time_ms * 1e6)) < 1e-6 * r->gflops);
    assert_true(fabs(r->edp - r->time_ms * r->energy_mj) < 1e-9);
    assert_true(r->seconds > 3 * 10 * 0.010);
    assert_true(r->sm_mhz_max > 0 && r->temp_c_max > 0);
    assert_int_equal(s->queued, 0); /* drained: nothing left queued */
}

static void meter_recovers_known_power(int queue_one_ahead)
{
    setenv("FAKE_NVML_ENERGY", "200:10", 1); /* 200 W, a step every 10 ms */
    cut_energy_plan p;
    plan_for_test(&p, 3, 10);
    for (int attempt = 0; attempt < 3; attempt++) {
        spin s = {.per_iter_s = 50e-6, .queue_one_ahead = queue_one_ahead};
        cut_energy_result r;
        cut_err e = {{0}};
        int rc = cut_energy_measure(&p, spin_run, &s, 1e6, &r, &e);
        if (rc != 0)
            fprintf(stderr, "%s\n", e.msg);
        assert_int_equal(rc, 0);
        assert_exact_figures(&r, &s);
        if (timing_figures_ok(&r))
            return;
    }
    fail_msg("the power, energy or counter period was off in 3 attempts (see above)");
}

static void test_meter_known_power_sync(void **state)
{
    (void)state;
    meter_recovers_known_power(0);
}

/* queued one ahead, as the GPU worker runs: every queued chunk is collected (the last by the final drain) */
static void test_meter_known_power_queued(void **state)
{
    (void)state;
    meter_recovers_known_power(1);
}

static void test_meter_counter_stuck(void **state)
{
    (void)state;
    setenv("FAKE_NVML_ENERGY", "0:5", 1); /* a counter that never moves */
    cut_energy_plan p;
    plan_for_test(&p, 1, 10);
    p.max_wait_s = 0.1;
    spin s = {.per_iter_s = 20e-6};
    cut_energy_result r;
    cut_err e = {{0}};
    assert_int_equal(cut_energy_measure(&p, spin_run, &s, 0, &r, &e), -1);
    assert_non_null(strstr(e.msg, "did not change"));
}

static void test_meter_errors(void **state)
{
    (void)state;
    setenv("FAKE_NVML_ENERGY", "200:5", 1);
    cut_energy_plan p;
    cut_energy_result r;
    cut_err e = {{0}};
    spin s = {.per_iter_s = 20e-6};
    plan_for_test(&p, 1, 10);
    snprintf(p.uuid, sizeof p.uuid, "GPU-00000000-0000-0000-0000-000000000bad");
    assert_int_equal(cut_energy_measure(&p, spin_run, &s, 0, &r, &e), -1);
    assert_non_null(strstr(e.msg, "GPU-00000000-0000-0000-0000-000000000bad"));

    plan_for_test(&p, 0, 10);
    assert_int_equal(cut_energy_measure(&p, spin_run, &s, 0, &r, &e), -1);
    assert_non_null(strstr(e.msg, "lrounds"));
    plan_for_test(&p, 1, 0);
    assert_int_equal(cut_energy_measure(&p, spin_run, &s, 0, &r, &e), -1);
    assert_non_null(strstr(e.msg, "steps"));

    /* the run itself failing mid-measurement: the meter stops with the run's sentence */
    plan_for_test(&p, 2, 10);
    s.fail_after = 3000;
    assert_int_equal(cut_energy_measure(&p, spin_run, &s, 0, &r, &e), -1);
    assert_non_null(strstr(e.msg, "planted"));
}

static void test_idle_power(void **state)
{
    (void)state;
    setenv("FAKE_NVML_ENERGY", "80:5", 1);
    double w = 0;
    cut_err e = {{0}};
    assert_int_equal(cut_energy_idle_w(H200_UUID, 0, 0.5, &w, &e), -1);
    for (int attempt = 0; attempt < 3; attempt++) { /* the 1 ms polls can be preempted on a loaded machine */
        assert_int_equal(cut_energy_idle_w(H200_UUID, 20, 0.5, &w, &e), 0);
        if (fabs(w - 80.0) < 80.0 * 0.05)
            return;
        fprintf(stderr, "idle power %.2f W (want 80 W)\n", w);
    }
    fail_msg("idle power off in 3 attempts");
}

/* ---- files ---- */

static cut_energy_result fixed_result(void)
{
    cut_energy_result r;
    memset(&r, 0, sizeof r);
    r.lrounds = 2;
    r.round[0] = (cut_energy_stats){.iters = 1000, .energy_per_iter_mj = 2.0, .time_per_iter_ms = 0.01,
                                    .avg_power_w = 200, .counter_steps = 10, .window_s = 1.0};
    r.round[1] = (cut_energy_stats){.iters = 1100, .energy_per_iter_mj = 2.2, .time_per_iter_ms = 0.011,
                                    .avg_power_w = 200, .counter_steps = 11, .window_s = 1.1};
    r.time_ms = 0.0105;
    r.energy_mj = 2.1;
    r.gflops = 1234.5;
    r.power_w = 200;
    r.edp = 0.0105 * 2.1;
    r.cv_energy = 0.0673;
    return r;
}

static void test_output_text_has_seed_lines(void **state)
{
    (void)state;
    cut_energy_result r = fixed_result();
    cut_buf b;
    cut_buf_init(&b);
    cut_energy_output_text(&b, &r, 450.0, 75.5);
    cut_buf_append(&b, "", 1);
    /* the three lines seed 001's generate_perfenergy.py parses, first and in its format */
    assert_true(strncmp(b.data, "GFLOP/s: 1234.50\nMean energy per iteration: 2.1000 mJ\n"
                                "Mean time per iteration: 0.010500 ms\n",
                        strlen("GFLOP/s: 1234.50\nMean energy per iteration: 2.1000 mJ\n"
                               "Mean time per iteration: 0.010500 ms\n")) == 0);
    assert_non_null(strstr(b.data, "Power limit: 450.0 W"));
    assert_non_null(strstr(b.data, "Idle power: 75.5 W"));
    assert_non_null(strstr(b.data, "lround 2: iterations 1100"));
    assert_non_null(strstr(b.data, "energy CV 6.73%"));
    cut_buf_free(&b);
}

static void test_json_line(void **state)
{
    (void)state;
    cut_energy_result r = fixed_result();
    cut_buf b;
    cut_buf_init(&b);
    cut_energy_json_line(&b, 3, 7, 700.0, -1, &r);
    cut_buf_append(&b, "", 1);
    assert_non_null(strstr(b.data, "{\"case\":3,\"id\":7,\"power_limit_w\":700.000,"));
    assert_non_null(strstr(b.data, "\"time_ms\":[0.01,0.011]"));
    assert_non_null(strstr(b.data, "\"energy_mj\":[2,2.2]"));
    assert_non_null(strstr(b.data, "\"iters\":[1000,1100]"));
    assert_null(strstr(b.data, "idle_w"));
    assert_int_equal(b.data[b.len - 2], '\n');
    assert_null(memchr(b.data, '\n', b.len - 2));
    cut_buf_free(&b);
}

static void test_all_csv(void **state)
{
    (void)state;
    cut_energy_table caps[5];
    memset(caps, 0, sizeof caps);
    for (int c = 0; c < 5; c++) {
        cut_energy_table_add(&caps[c], 1, 100 + c, 1.5, 2.5);
        if (c != 3) /* cap 4 lacks kernel 2 (it failed there) */
            cut_energy_table_add(&caps[c], 2, 200 + c, 3, 4);
    }
    cut_buf b;
    cut_buf_init(&b);
    cut_energy_all_csv(&b, caps, 5);
    cut_buf_append(&b, "", 1);
    char *line2 = strchr(b.data, '\n') + 1, *line3 = strchr(line2, '\n') + 1;
    /* 16 columns: id + 3 per cap */
    int commas = 0;
    for (const char *p = b.data; *p != '\n'; p++)
        commas += *p == ',';
    assert_int_equal(commas, 15);
    assert_true(strncmp(b.data, "id,perf(GFLOP/s),energy(mJ),EDP(ms*mJ),perf(GFLOP/s)", 52) == 0);
    assert_true(strncmp(line2, "1,100.00,1.500000,2.50000000,101.00,", 36) == 0);
    assert_non_null(strstr(line3, ",202.00,3.000000,4.00000000,,,,204.00,"));
    for (int c = 0; c < 5; c++)
        cut_energy_table_free(&caps[c]);
    cut_buf_free(&b);
}

/* A file's text, "" when it cannot be read. Caller frees. */
static char *slurp(const char *dir, const char *name)
{
    char path[4300], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (cut_read_file(path, &text, &len, NULL) != 0)
        return strdup("");
    return text;
}

static cut_energy_result fake_result(double gflops, double energy_mj, double edp)
{
    cut_energy_result r;
    memset(&r, 0, sizeof r);
    r.gflops = gflops;
    r.energy_mj = energy_mj;
    r.edp = edp;
    return r;
}

/* One kernel measured at a time (cutune export's run scripts): each replaces its own results.csv row and
 * energy.jsonl line, the others stay, rows sorted by id; a failure removes only its row; kernels measured at
 * another limit are dropped; all.csv is rebuilt from every powercapP/results.csv. */
static void test_folder_record_merges(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir("energy_merge");
    assert_non_null(tmp);
    char dir[4200], out[4300];
    snprintf(dir, sizeof dir, "%s/case1/powercap3", tmp);
    cut_err e = {{0}};
    assert_int_equal(cut_mkdirs(dir, &e), 0);
    int dropped = -1;
    cut_energy_result r2 = fake_result(200, 2, 0.5), r1 = fake_result(100, 1, 0.25), r1b = fake_result(150, 1.5, 1);
    /* kernel 2 first, then kernel 1: both rows, sorted by id */
    assert_int_equal(cut_energy_folder_record(dir, 2, &r2, "{\"case\":1,\"id\":2,\"power_limit_w\":450.000}\n",
                                              450, &dropped, &e), 0);
    assert_int_equal(dropped, 0);
    assert_int_equal(cut_energy_folder_record(dir, 1, &r1, "{\"case\":1,\"id\":1,\"power_limit_w\":450.000}\n",
                                              450, &dropped, &e), 0);
    char *csv = slurp(dir, "results.csv");
    assert_string_equal(csv, "id,perf(GFLOP/s),energy(mJ),EDP(ms*mJ)\n"
                             "1,100.00,1.000000,0.25000000\n"
                             "2,200.00,2.000000,0.50000000\n");
    free(csv);
    /* kernel 1 again: its row and line replaced, kernel 2's kept */
    assert_int_equal(cut_energy_folder_record(dir, 1, &r1b, "{\"case\":1,\"id\":1,\"power_limit_w\":450.000,\"x\":1}\n",
                                              450, &dropped, &e), 0);
    csv = slurp(dir, "results.csv");
    assert_string_equal(csv, "id,perf(GFLOP/s),energy(mJ),EDP(ms*mJ)\n"
                             "1,150.00,1.500000,1.00000000\n"
                             "2,200.00,2.000000,0.50000000\n");
    free(csv);
    char *jl = slurp(dir, "energy.jsonl");
    assert_string_equal(jl, "{\"case\":1,\"id\":2,\"power_limit_w\":450.000}\n"
                            "{\"case\":1,\"id\":1,\"power_limit_w\":450.000,\"x\":1}\n");
    free(jl);
    /* all.csv: cap 3's columns are the third triple, caps 1 and 2 empty */
    snprintf(out, sizeof out, "%s/case1", tmp);
    assert_int_equal(cut_energy_all_rebuild(out, &e), 0);
    char *all = slurp(out, "all.csv");
    assert_non_null(strstr(all, "\n1,,,,,,,150.00,1.500000,1.00000000\n2,,,,,,,200.00,2.000000,0.50000000\n"));
    free(all);
    /* kernel 2 fails: its row goes, kernel 1's stays */
    assert_int_equal(cut_energy_folder_record(dir, 2, NULL, NULL, 450, &dropped, &e), 0);
    csv = slurp(dir, "results.csv");
    assert_string_equal(csv, "id,perf(GFLOP/s),energy(mJ),EDP(ms*mJ)\n1,150.00,1.500000,1.00000000\n");
    free(csv);
    /* kernel 3 at another limit (the folder's cap changed): kernel 1, measured at 450 W, is dropped with its file */
    snprintf(out, sizeof out, "%s/output_kernel1.txt", dir);
    assert_int_equal(cut_write_file_atomic(out, "x\n", 2, &e), 0);
    assert_int_equal(cut_energy_folder_record(dir, 3, &r2, "{\"case\":1,\"id\":3,\"power_limit_w\":500.000}\n",
                                              500, &dropped, &e), 0);
    assert_int_equal(dropped, 1);
    assert_false(cut_path_exists(out));
    csv = slurp(dir, "results.csv");
    assert_string_equal(csv, "id,perf(GFLOP/s),energy(mJ),EDP(ms*mJ)\n3,200.00,2.000000,0.50000000\n");
    free(csv);
    /* a malformed results.csv is refused, not overwritten */
    snprintf(out, sizeof out, "%s/results.csv", dir);
    assert_int_equal(cut_write_file_atomic(out, "id,perf(GFLOP/s),energy(mJ),EDP(ms*mJ)\n1,x\n", 43, &e), 0);
    assert_int_equal(cut_energy_folder_record(dir, 1, &r1, NULL, 500, &dropped, &e), -1);
    assert_non_null(strstr(e.msg, "results.csv:2"));
    /* powercaps.csv: rows merged by index */
    snprintf(out, sizeof out, "%s/powercaps.csv", tmp);
    int idx[2] = {1, 2};
    unsigned int mw[2] = {200000, 325000}, mw3 = 450000;
    assert_int_equal(cut_energy_caps_record(out, idx, mw, 2, &e), 0);
    int three = 3;
    assert_int_equal(cut_energy_caps_record(out, &three, &mw3, 1, &e), 0);
    char *caps = slurp(tmp, "powercaps.csv");
    assert_string_equal(caps, "powercap,limit_w\n1,200.000\n2,325.000\n3,450.000\n");
    free(caps);
    free(tmp);
}

int main(void)
{
    const char *fake = getenv("CUTUNE_FAKE_NVML");
    if (!fake || !*fake) {
        printf("SKIP: CUTUNE_FAKE_NVML is not set (run through ctest)\n");
        return 77;
    }
    setenv("CUTUNE_NVML_LIB", fake, 1);
    setenv("FAKE_NVML_GPUS", "NVIDIA H200:700000:200000:700000", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meter_known_power_sync),
        cmocka_unit_test(test_meter_known_power_queued),
        cmocka_unit_test(test_meter_counter_stuck),
        cmocka_unit_test(test_meter_errors),
        cmocka_unit_test(test_idle_power),
        cmocka_unit_test(test_output_text_has_seed_lines),
        cmocka_unit_test(test_json_line),
        cmocka_unit_test(test_all_csv),
        cmocka_unit_test(test_folder_record_merges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
