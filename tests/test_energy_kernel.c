/* End-to-end test of a user kernel's energy (runner method energy_kernel, an energy-observed RUN on the wire) without a GPU:
 * the emulation worker (`cutune __worker emu:<dir>`, started by cut_runner_emu_worker_new from $CUTUNE_BIN) runs
 * kernels/softmax_row.json at small sizes under the host emulator while the energy meter reads the fake
 * libnvidia-ml ($CUTUNE_FAKE_NVML, inherited by the worker through CUTUNE_NVML_LIB). The fake board draws a set
 * power (200 W, its counter stepping every 10 ms), so the meter must find about 200 W, and energy per iteration
 * about 200 W x the time per iteration.
 *
 * As task_kernel.c does it: the work without references, a capture run of the baseline (run_kernel), the work again
 * with the captured outputs as references; then energy_kernel on the baseline (status OK, energy > 0, power about
 * 200 W), on a wrong variant (its output scaled: a wrong result, no energy), on a hanging one (the worker's watchdog:
 * a timeout, a fresh worker for the next call), and the setup errors (no references, a GPU NVML does not know, a bad
 * plan). The in-process emulation runner measures the baseline and the wrong variant too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/emu.h"
#include "cutune/energy.h"
#include "cutune/kspec.h"
#include "cutune/kstate.h"
#include "cutune/measure.h"
#include "measure/worker_proto.h" /* cut_runner_gpu_worker_pid, _starts */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define H200_UUID "GPU-fa4e0000-0000-4000-8000-000000000000"
#define FAKE_W 200.0

typedef struct fixture {
    cut_kspec spec;
    cut_work work;    /* data pointers owned (cut_kspec_work_free); outputs get the captured references */
    cut_call base;    /* the baseline's call; src points at base_src */
    char *base_src;    /* the materialised baseline */
    char *tmp;         /* this test's folder; so/ holds the host-compiled kernels */
    char so_dir[4200];
    cut_timing timing;
} fixture;

static fixture g_fx;

/* A quick timing policy: the emulator is slow and the energy run is what is tested. */
static void quick_timing(cut_timing *t)
{
    cut_timing_default(t);
    t->warmup = 1;
    t->min_repeats = 2;
    t->max_repeats = 5;
    t->min_total_ms = 1.0;
    t->timeout_s = 60.0;
}

static void plan_for_test(cut_energy_plan *p)
{
    cut_energy_plan_default(p);
    snprintf(p->uuid, sizeof p->uuid, "%s", H200_UUID);
    p->lrounds = 3;
    p->min_steps = 10;
    p->warmup_s = 0.03;
    p->max_wait_s = 2.0;
}

static int setup(void **state)
{
    (void)state;
    fixture *fx = &g_fx;
    cut_err e = {{0}};
    char path[4200];
    snprintf(path, sizeof path, "%s/../../kernels/softmax_row.json", getenv("CUTUNE_FIXTURES"));
    if (cut_kspec_load(path, &fx->spec, &e) != 0 || cut_kspec_set_size(&fx->spec, "ROWS", 8, &e) != 0 ||
        cut_kspec_set_size(&fx->spec, "COLS", 256, &e) != 0 || cut_kspec_work(&fx->spec, &fx->work, &e) != 0 ||
        cut_kspec_call(&fx->spec, NULL, &fx->base, &e) != 0) {
        fprintf(stderr, "setup: %s\n", e.msg);
        return -1;
    }
    fx->base_src = cut_kstate_materialise(&fx->spec, NULL);
    fx->base.src = fx->base_src;
    fx->base.bin = NULL;
    fx->tmp = tu_tmpdir("test_energy_kernel");
    if (!fx->tmp)
        return -1;
    snprintf(fx->so_dir, sizeof fx->so_dir, "%s/so", fx->tmp);
    quick_timing(&fx->timing);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cut_kspec_work_free(&g_fx.work);
    cut_kspec_free(&g_fx.spec);
    free(g_fx.base_src);
    free(g_fx.tmp);
    return 0;
}

/* The baseline's outputs become the work's references (as task_kernel.c's kernel_prepare): a capture run, then the
 * work prepared again with them. energy_kernel before that is a setup error. */
static void capture_references(cut_runner *r, fixture *fx)
{
    cut_err e = {{0}};
    cut_result res;
    cut_energy_result er;
    cut_energy_plan p;
    plan_for_test(&p);
    assert_int_equal(cut_runner_prepare_work(r, &fx->work, &e), 0);
    assert_int_equal(cut_runner_energy_call(r, &fx->base, &p, &res, &er, &e), -1);
    assert_non_null(strstr(e.msg, "references"));
    cut_work_outputs outs;
    if (cut_runner_run_call(r, &fx->base, &res, &outs, &e) != 0)
        fail_msg("capture run: %s", e.msg);
    if (res.status != CUT_ST_OK)
        fail_msg("capture run: %s: %s", cut_status_name(res.status), res.error);
    for (int b = 0; b < fx->work.nbufs; b++)
        for (int s = 0; s < 2 && fx->work.bufs[b].is_output; s++) {
            assert_non_null(outs.data[b][s]);
            fx->work.bufs[b].data[s] = outs.data[b][s]; /* owned by the work now */
            outs.data[b][s] = NULL;
        }
    cut_work_outputs_free(&outs);
    assert_int_equal(cut_work_has_refs(&fx->work), 1);
    assert_int_equal(cut_runner_prepare_work(r, &fx->work, &e), 0);
}

/* energy_kernel on the baseline: status OK, lrounds windows with energy, and (up to 3 attempts: a loaded machine
 * moves edges) every window's power within 10% of the fake's 200 W and energy per iteration within 50% of 200 W x
 * the time per iteration, the tolerances of test_energy.c. */
static void assert_baseline_energy(cut_runner *r, fixture *fx)
{
    cut_energy_plan p;
    plan_for_test(&p);
    for (int attempt = 0; attempt < 3; attempt++) {
        cut_err e = {{0}};
        cut_result res;
        cut_energy_result er;
        if (cut_runner_energy_call(r, &fx->base, &p, &res, &er, &e) != 0)
            fail_msg("energy_kernel: %s", e.msg);
        if (res.status != CUT_ST_OK)
            fail_msg("energy_kernel: %s: %s", cut_status_name(res.status), res.error);
        assert_true(res.repeats >= 2 && res.median_ms > 0);
        assert_int_equal(er.lrounds, 3);
        assert_true(er.energy_mj > 0 && er.time_ms > 0 && er.edp > 0);
        assert_true(er.gflops == 0); /* a spec counts no FLOPs */
        for (int i = 0; i < er.lrounds; i++)
            assert_true(er.round[i].counter_steps >= 10 && er.round[i].iters > 0 && er.round[i].energy_mj > 0);
        int ok = fabs(er.energy_mj - FAKE_W * er.time_ms) < FAKE_W * er.time_ms * 0.5;
        for (int i = 0; i < er.lrounds; i++)
            ok &= fabs(er.round[i].avg_power_w - FAKE_W) < FAKE_W * 0.1;
        if (ok)
            return;
        fprintf(stderr, "timing figures off: %.1f / %.1f / %.1f W, %.4f mJ per %.5f ms\n", er.round[0].avg_power_w,
                er.round[1].avg_power_w, er.round[2].avg_power_w, er.energy_mj, er.time_ms);
    }
    fail_msg("the power or energy per iteration was off in 3 attempts (see above)");
}

/* A variant whose output is scaled by 2: a wrong result, caught before the energy run, and no energy. */
static void assert_wrong_variant(cut_runner *r, fixture *fx)
{
    const char *write = "v[j] = expf(v[j] - m) * inv;";
    const char *at = strstr(fx->base_src, write);
    assert_non_null(at);
    size_t n = strlen(fx->base_src) + 16;
    char *src = malloc(n);
    snprintf(src, n, "%.*sv[j] = expf(v[j] - m) * inv * 2.0f;%s", (int)(at - fx->base_src), fx->base_src,
             at + strlen(write));
    cut_call c = fx->base;
    c.src = src;
    cut_energy_plan p;
    plan_for_test(&p);
    cut_err e = {{0}};
    cut_result res;
    cut_energy_result er;
    memset(&er, 0x55, sizeof er);
    assert_int_equal(cut_runner_energy_call(r, &c, &p, &res, &er, &e), 0);
    assert_int_equal(res.status, CUT_ST_WRONG_RESULT);
    assert_non_null(strstr(res.error, "want"));
    assert_true(er.lrounds == 0 && er.energy_mj == 0 && er.power_w == 0 && er.round[0].iters == 0);
    free(src);
}

/* Through the emulation worker, as `cutune energy` and the optimizer run user kernels. */
static void test_energy_kernel_emu_worker(void **state)
{
    (void)state;
    fixture *fx = &g_fx;
    cut_err e = {{0}};
    cut_runner *r = cut_runner_emu_worker_new(getenv("CUTUNE_BIN"), fx->so_dir, &fx->timing, &e);
    if (!r)
        fail_msg("cut_runner_emu_worker_new: %s", e.msg);
    assert_non_null(r->run);
    capture_references(r, fx);
    assert_baseline_energy(r, fx);
    const int pid = cut_runner_gpu_worker_pid(r);
    assert_wrong_variant(r, fx);
    assert_int_equal(cut_runner_gpu_worker_pid(r), pid); /* a wrong result costs no worker */

    /* The meter failing (a GPU NVML does not know) is an error with the meter's sentence; the worker lives on. */
    cut_energy_plan p;
    plan_for_test(&p);
    snprintf(p.uuid, sizeof p.uuid, "GPU-00000000-0000-0000-0000-000000000bad");
    cut_result res;
    cut_energy_result er;
    assert_int_equal(cut_runner_energy_call(r, &fx->base, &p, &res, &er, &e), -1);
    assert_non_null(strstr(e.msg, "000000000bad"));
    assert_int_equal(cut_runner_gpu_worker_pid(r), pid);
    /* A bad plan never reaches the worker. */
    plan_for_test(&p);
    p.min_steps = 0;
    assert_int_equal(cut_runner_energy_call(r, &fx->base, &p, &res, &er, &e), -1);
    assert_non_null(strstr(e.msg, "steps"));
    assert_int_equal(cut_runner_gpu_worker_starts(r), 1);

    /* A variant that never finishes: the worker's watchdog answers ENERGY_RESULT with a timeout after the timeout
     * plus the plan's time, and exits; the next call gets a fresh worker, given the work again. */
    const char *body = "extern __shared__ float red[];";
    const char *at = strstr(fx->base_src, body);
    assert_non_null(at);
    size_t n = strlen(fx->base_src) + 64;
    char *src = malloc(n);
    snprintf(src, n, "%.*s%s for (volatile int spin = 1; spin;) { }%s", (int)(at - fx->base_src), fx->base_src, body,
             at + strlen(body));
    cut_call hang = fx->base;
    hang.src = src;
    r->timing.timeout_s = 1.0;
    p.lrounds = 1;
    p.min_steps = 1;
    p.max_wait_s = 0.05; /* the watchdog fires after 1 + 0.03 + 2 x 0.05 s */
    assert_int_equal(cut_runner_energy_call(r, &hang, &p, &res, &er, &e), 0);
    assert_int_equal(res.status, CUT_ST_TIMEOUT);
    assert_non_null(strstr(res.error, "did not finish"));
    assert_true(er.lrounds == 0 && er.energy_mj == 0);
    assert_int_equal(cut_runner_gpu_worker_pid(r), 0);
    free(src);
    r->timing = fx->timing;
    assert_baseline_energy(r, fx);
    assert_int_equal(cut_runner_gpu_worker_starts(r), 2);
    cut_runner_free(r);
}

/* The in-process emulation runner measures the same way (no watchdog). The work already has its references. */
static void test_energy_kernel_in_process(void **state)
{
    (void)state;
    fixture *fx = &g_fx;
    cut_err e = {{0}};
    cut_runner *r = cut_runner_emu_new(fx->so_dir, &fx->timing, &e);
    if (!r)
        fail_msg("cut_runner_emu_new: %s", e.msg);
    assert_non_null(r->run);
    assert_int_equal(cut_runner_prepare_work(r, &fx->work, &e), 0);
    assert_baseline_energy(r, fx);
    assert_wrong_variant(r, fx);
    cut_runner_free(r);
}

int main(void)
{
    const char *fake = getenv("CUTUNE_FAKE_NVML");
    if (!fake || !*fake) {
        printf("SKIP: CUTUNE_FAKE_NVML is not set (run through ctest)\n");
        return 77;
    }
    const char *bin = getenv("CUTUNE_BIN");
    if (!bin || access(bin, X_OK) != 0) {
        printf("SKIP: CUTUNE_BIN (the cutune binary, the emulation worker) is not set or not built\n");
        return 77;
    }
    if (!getenv("CUTUNE_FIXTURES")) {
        printf("SKIP: CUTUNE_FIXTURES is not set (run through ctest)\n");
        return 77;
    }
    setenv("CUTUNE_NVML_LIB", fake, 1);
    setenv("FAKE_NVML_GPUS", "NVIDIA H200:700000:200000:700000", 1);
    setenv("FAKE_NVML_ENERGY", "200:10", 1); /* 200 W, a counter step every 10 ms */
    unsetenv("FAKE_NVML_STATE");
    unsetenv("FAKE_NVML_LOG");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_energy_kernel_emu_worker),
        cmocka_unit_test(test_energy_kernel_in_process),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
