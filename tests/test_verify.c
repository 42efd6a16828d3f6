/* Tests of the one check-and-time protocol (src/measure/verify.c) on a fake device: a "kernel" written in C that
 * computes y = 2 x + 1 on the armed input set, honestly or with one cheat. Each cheat must get the status that names
 * it; the honest kernel must pass (and be timed), every input a cheat modified must be back as it was, a kernel that
 * would skip its work when its output already holds an answer must do the work in every timed launch (each is armed
 * with poison; the check after timing then rejects it), and a work without references captures both sets.
 *   honest -> ok; unwritten -> wrong_result; input_write -> input_modified (restored); state_skip, state_cache ->
 *   stateful; wrong_later -> wrong_later; other_data -> wrong_other_data; too_fast -> too_fast (timed twice, the
 *   floor from the work's FLOPs and bytes); escape -> timing_escape; a fault while timing -> fault, fatal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "measure/verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 64

enum cheat { HONEST, UNWRITTEN, INPUT_WRITE, STATE_SKIP, STATE_CACHE, WRONG_LATER, OTHER_DATA, TOO_FAST, ESCAPE,
             OUTPUT_CACHE, FAULT_TIMED };

typedef struct fake_state {
    int done;
    float cache[N];
} fake_state;

typedef struct fake {
    enum cheat cheat;
    float x[2][N];       /* the inputs the kernel reads (and may write) */
    float y[N];
    int set;
    fake_state st, st0;  /* the module state, and as loaded */
    int launches, worked, timed, timed_worked;
    double ms, wall_ms;
    const cut_work *w;   /* for the device-side comparisons */
    int reads;           /* buffers read back to the host */
} fake;

/* The device-side comparisons the fake offers (verify.h's out_check and in_same): none; honest ones (computed
 * where the buffers lie, as the GPU worker's kernels do); ones that always report a difference (the host must
 * overrule them); ones that cannot compare (the host compares). Every verdict must be the same under each. */
enum dev_mode { DEV_NONE, DEV_HONEST, DEV_ALARMIST, DEV_UNABLE, DEV_MODES };
static enum dev_mode dev_mode;

static float in0(int s, int i) { return (float)((i * 7 + s * 13) % 17) / 8.0f - 1.0f; }

static void kernel(fake *f)
{
    f->launches++;
    const float *x = f->x[f->set];
    if ((f->cheat == STATE_SKIP && f->st.done) || (f->cheat == OUTPUT_CACHE && !isnan(f->y[0])))
        return;
    if (f->cheat == STATE_CACHE && f->st.done) {
        memcpy(f->y, f->st.cache, sizeof f->y);
        return;
    }
    f->worked++;
    for (int i = 0; i < N; i++) {
        float v = 2.0f * x[i] + 1.0f;
        if (f->cheat == UNWRITTEN && i >= N - 3)
            continue;
        if (f->cheat == WRONG_LATER && !isnan(f->y[i]))
            v = 0.0f;
        if (f->cheat == OTHER_DATA && f->set == 1)
            v = 1.0f;
        f->y[i] = v;
        if (f->cheat != OUTPUT_CACHE)
            f->st.cache[i] = v; /* scratch for the honest kernel, a cache for STATE_CACHE */
    }
    if (f->cheat == INPUT_WRITE)
        for (int i = 0; i < N; i++)
            f->x[f->set][i] = 0.0f;
    if (f->cheat != OUTPUT_CACHE)
        f->st.done = 1;
}

static int d_arm(void *ctx, int s, unsigned char poison, int reset, cut_result *res, int *fatal)
{
    (void)res, (void)fatal;
    fake *f = ctx;
    memset(f->y, poison, sizeof f->y);
    if (reset)
        f->st = f->st0;
    f->set = s;
    return 0;
}

static int d_launch(void *ctx, cut_result *res, int *fatal)
{
    (void)res, (void)fatal;
    kernel(ctx);
    return 0;
}

static int d_read(void *ctx, int i, int s, void *host, cut_result *res, int *fatal)
{
    (void)res, (void)fatal;
    fake *f = ctx;
    memcpy(host, i == 1 ? f->y : f->x[s], sizeof f->y);
    f->reads++;
    return 0;
}

static int d_out_check(void *ctx, int i, int s, double atol, double rtol, size_t *bad, double *max_err,
                       cut_result *res, int *fatal)
{
    (void)res, (void)fatal;
    fake *f = ctx;
    assert_int_equal(i, 1);
    if (dev_mode == DEV_UNABLE)
        return 1;
    *bad = cut_work_compare(&f->w->bufs[1], f->y, f->w->bufs[1].data[s], f->w->check, atol, rtol, max_err, NULL, 0);
    if (dev_mode == DEV_ALARMIST)
        *bad = 1;
    return 0;
}

static int d_in_same(void *ctx, int i, int s, int *same, cut_result *res, int *fatal)
{
    (void)res, (void)fatal;
    fake *f = ctx;
    assert_int_equal(i, 0);
    if (dev_mode == DEV_UNABLE)
        return 1;
    *same = dev_mode == DEV_HONEST && !memcmp(f->x[s], f->w->bufs[0].data[s], sizeof f->x[s]);
    return 0;
}

static int d_restore(void *ctx, int i, int s, cut_result *res, int *fatal)
{
    (void)res, (void)fatal;
    assert_int_equal(i, 0);
    fake *f = ctx;
    for (int j = 0; j < N; j++)
        f->x[s][j] = in0(s, j);
    return 0;
}

static int d_state(void *ctx, void *host, cut_result *res, int *fatal)
{
    (void)res, (void)fatal;
    memcpy(host, &((fake *)ctx)->st, sizeof(fake_state));
    return 0;
}

static int d_time(void *ctx, cut_result *res, int *fatal)
{
    fake *f = ctx;
    for (int r = 0; r < 5; r++) {
        d_arm(f, 0, CUT_WORK_POISON0, 1, res, fatal);
        if (f->cheat == FAULT_TIMED && r == 3) {
            res->status = CUT_ST_FAULT;
            snprintf(res->error, sizeof res->error, "illegal address");
            *fatal = 1;
            return -1;
        }
        const int before = f->worked;
        kernel(f);
        f->timed++;
        f->timed_worked += f->worked - before;
    }
    res->median_ms = res->min_ms = res->max_ms = f->ms;
    res->repeats = 5;
    return 0;
}

static int d_wall(void *ctx, double *ms, cut_result *res, int *fatal)
{
    (void)res, (void)fatal;
    *ms = ((fake *)ctx)->wall_ms;
    return 0;
}

/* The work: x (two sets), y with the references 2 x + 1; the fake's buffers as loaded. */
static void setup(fake *f, cut_work *w, float ref[2][N], float xs[2][N], enum cheat cheat)
{
    memset(f, 0, sizeof *f);
    memset(w, 0, sizeof *w);
    f->cheat = cheat;
    f->ms = 0.5;
    f->wall_ms = 0.51;
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < N; i++) {
            xs[s][i] = f->x[s][i] = in0(s, i);
            ref[s][i] = 2.0f * xs[s][i] + 1.0f;
        }
    w->nbufs = 2;
    w->bufs[0] = (cut_work_buf){.name = "x", .dtype = CUT_EL_F32, .elems = N, .data = {xs[0], xs[1]}};
    w->bufs[1] = (cut_work_buf){.name = "y", .is_output = 1, .dtype = CUT_EL_F32, .elems = N, .data = {ref[0], ref[1]}};
    w->check = CUT_CHECK_CLOSE;
    w->atol = 1e-6;
    w->rtol = 1e-6;
    w->flops = 2.0 * N;
    w->bytes = 8.0 * N;
}

static cut_vf_dev device(fake *f)
{
    return (cut_vf_dev){.ctx = f, .arm = d_arm, .launch = d_launch, .read = d_read, .restore = d_restore,
                        .state_bytes = sizeof(fake_state), .state = d_state, .time = d_time, .wall = d_wall,
                        .out_check = dev_mode != DEV_NONE ? d_out_check : NULL,
                        .in_same = dev_mode != DEV_NONE ? d_in_same : NULL};
}

/* Runs cheat through the protocol; returns the result, *f as it ended. */
static cut_result run(fake *f, enum cheat cheat, int *fatal)
{
    static float ref[2][N], xs[2][N];
    cut_work w;
    setup(f, &w, ref, xs, cheat);
    f->w = &w;
    cut_vf_dev d = device(f);
    if (cheat == TOO_FAST) {
        d.peak_flops = 2.0 * N / 1e-3; /* the work's FLOPs take 1 ms at this peak: 0.5 ms is too fast */
        d.peak_bytes_s = 1e12;
    }
    if (cheat == ESCAPE)
        f->wall_ms = 5.0;
    cut_vf v = {.work = &w, .atol = w.atol, .rtol = w.rtol};
    cut_result res;
    cut_vf_check_and_time(&v, &d, &res, fatal);
    for (int s = 0; s < 2; s++) /* whatever happened, the inputs are back as they were */
        for (int i = 0; i < N && !*fatal; i++)
            assert_true(f->x[s][i] == xs[s][i]);
    return res;
}

static void expect(enum cheat cheat, cut_status want, const char *word)
{
    fake f;
    int fatal = 0;
    cut_result res = run(&f, cheat, &fatal);
    printf("cheat %d: %s: %s\n", (int)cheat, cut_status_name(res.status), res.error);
    assert_int_equal(res.status, want);
    assert_int_equal(fatal, 0);
    if (word)
        assert_non_null(strstr(res.error, word));
    if (want != CUT_ST_OK) {
        assert_true(res.median_ms < 0); /* a rejected kernel has no time */
        assert_int_equal(res.repeats, 0);
    }
}

static void test_honest(void **state)
{
    (void)state;
    for (dev_mode = DEV_NONE; dev_mode < DEV_MODES; dev_mode++) {
        fake f;
        int fatal = 0;
        cut_result res = run(&f, HONEST, &fatal);
        assert_int_equal(res.status, CUT_ST_OK);
        assert_true(res.median_ms == 0.5 && res.repeats == 5);
        assert_int_equal(f.timed_worked, f.timed);
        /* A, then (its scratch state changed) B, which passes, the timed launches, C */
        assert_int_equal(f.launches, 1 + 1 + 5 + 1);
        /* compared where they lie, nothing comes back to the host; otherwise every output and input of A, B, T, C */
        assert_int_equal(f.reads, dev_mode == DEV_HONEST ? 0 : 2 * 4);
    }
    dev_mode = DEV_NONE;
}

/* Every cheat gets its status whether the device compares (honestly, alarmed at everything, or not at all). */
static void test_cheats(void **state)
{
    (void)state;
    for (dev_mode = DEV_NONE; dev_mode < DEV_MODES; dev_mode++) {
        printf("device comparisons: mode %d\n", (int)dev_mode);
        expect(UNWRITTEN, CUT_ST_WRONG_RESULT, "3 of 64 outputs wrong: y[61] = ");
        expect(INPUT_WRITE, CUT_ST_INPUT_MODIFIED, "input 'x' (set 0)");
        expect(STATE_SKIP, CUT_ST_STATEFUL, "state kept across launches");
        expect(STATE_CACHE, CUT_ST_STATEFUL, "a second launch that finds them is wrong");
        expect(WRONG_LATER, CUT_ST_WRONG_LATER, "wrong on either input set");
        expect(OTHER_DATA, CUT_ST_WRONG_OTHER_DATA, "fresh inputs");
        expect(TOO_FAST, CUT_ST_TOO_FAST, "too fast");
        expect(ESCAPE, CUT_ST_TIMING_ESCAPE, "escapes the timed region");
    }
    dev_mode = DEV_NONE;
}

/* A kernel that skips its work when its output already holds an answer cannot gain while it is timed (every timed
 * launch finds poison and does the work), and the check after timing, with a poison that is not NaN, rejects it. */
static void test_output_cache_neutralised(void **state)
{
    (void)state;
    fake f;
    int fatal = 0;
    cut_result res = run(&f, OUTPUT_CACHE, &fatal);
    assert_int_equal(res.status, CUT_ST_WRONG_LATER);
    assert_int_equal(f.timed, 5);
    assert_int_equal(f.timed_worked, 5);
    assert_int_equal(f.launches, 1 + 5 + 1 + 1); /* no module state changed: no B; C failed: its diagnosis */
}

static void test_fault_while_timing(void **state)
{
    (void)state;
    fake f;
    int fatal = 0;
    cut_result res = run(&f, FAULT_TIMED, &fatal);
    assert_int_equal(res.status, CUT_ST_FAULT);
    assert_int_equal(fatal, 1); /* nothing more ran on the device */
    assert_true(res.median_ms < 0);
}

/* Without references the outputs of both sets are captured, nothing is compared, and the floor is the work's. */
static void test_capture_and_floor(void **state)
{
    (void)state;
    fake f;
    static float ref[2][N], xs[2][N];
    cut_work w;
    setup(&f, &w, ref, xs, HONEST);
    w.bufs[1].data[0] = w.bufs[1].data[1] = NULL;
    cut_vf_dev d = device(&f);
    cut_work_outputs outs;
    memset(&outs, 0, sizeof outs);
    cut_vf v = {.work = &w, .atol = w.atol, .rtol = w.rtol, .capture = &outs};
    cut_result res;
    int fatal = 0;
    cut_vf_check_and_time(&v, &d, &res, &fatal);
    assert_int_equal(res.status, CUT_ST_OK);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < N; i++)
            assert_true(((float *)outs.data[1][s])[i] == 2.0f * xs[s][i] + 1.0f);
    assert_null(outs.data[0][0]);
    cut_work_outputs_free(&outs);

    d.peak_flops = 1e9, d.peak_bytes_s = 0;
    assert_true(fabs(cut_vf_floor_ms(&w, &d) - 2.0 * N / 1e9 * 1e3 / CUT_VF_FLOOR_SLACK) < 1e-12);
    d.peak_bytes_s = 1e9; /* the bytes take longer: they set the floor */
    assert_true(fabs(cut_vf_floor_ms(&w, &d) - 8.0 * N / 1e9 * 1e3 / CUT_VF_FLOOR_SLACK) < 1e-12);
    d.peak_flops = d.peak_bytes_s = 0;
    assert_true(cut_vf_floor_ms(&w, &d) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_honest),
        cmocka_unit_test(test_cheats),
        cmocka_unit_test(test_output_cache_neutralised),
        cmocka_unit_test(test_fault_while_timing),
        cmocka_unit_test(test_capture_and_floor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
