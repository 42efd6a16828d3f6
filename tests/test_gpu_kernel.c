/* GPU test of the user-kernel workload (kwork.h) through cut_runner_gpu_new (skips with 77 where there is no GPU).
 *
 * A saxpy-style kernel k(x, y, a, n) compiled with cut_compile_one for the device's sm_XX: the first run without
 * references captures y for both input sets (checked against the CPU), then runs with those references are OK and
 * timed; a kernel writing y = x and one skipping the last element (left as poison: NaN) are WRONG_RESULT; one writing
 * far out of bounds is FAULT, and the next run works on a restarted worker; energy_kernel measures the kernel on the
 * GPU's own energy counter, and a wrong kernel gets its status and no energy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/compile.h"
#include "cutune/measure.h"
#include "gpu_testutil.h"
#include "measure/worker_proto.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 1000

static const char *SRC =
    "extern \"C\" __global__ void k(const float *x, float *y, float a, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + 1.0f;\n"
    "}\n"
    "extern \"C\" __global__ void wrong(const float *x, float *y, float a, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = x[i];\n"
    "}\n"
    "extern \"C\" __global__ void shortk(const float *x, float *y, float a, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n - 1) y[i] = a * x[i] + 1.0f;\n"
    "}\n"
    "extern \"C\" __global__ void oob(const float *x, float *y, float a, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  volatile float *far = y + ((size_t)1 << 40);\n"
    "  far[i] = a * x[i % n];\n"
    "}\n";

static cut_gpu_info g_info;
static cut_compiled g_bin;
static float g_x[2][N];

static cut_call call_of(const char *entry)
{
    cut_call c = {.src = SRC, .bin = &g_bin, .grid = {(N + 127) / 128, 1, 1}, .block = {128, 1, 1}, .nargs = 4};
    snprintf(c.entry, sizeof c.entry, "%s", entry);
    c.args[0].buf = 0;
    c.args[1].buf = 1;
    const float a = 2.0f;
    const int32_t n = N;
    c.args[2] = (cut_call_arg){.buf = -1, .size = 4};
    memcpy(c.args[2].bytes, &a, 4);
    c.args[3] = (cut_call_arg){.buf = -1, .size = 4};
    memcpy(c.args[3].bytes, &n, 4);
    return c;
}

static void run_expect(cut_runner *r, const char *entry, cut_status want, const char *msg_part)
{
    const cut_call c = call_of(entry);
    cut_result res;
    cut_err e = {{0}};
    if (cut_runner_run_call(r, &c, &res, NULL, &e) != 0)
        fail_msg("run_kernel(%s): %s", entry, e.msg);
    printf("%-7s %s %s median %.4f ms x%d\n", entry, cut_status_name(res.status), res.error, res.median_ms,
           res.repeats);
    assert_int_equal(res.status, want);
    if (want == CUT_ST_OK)
        assert_true(res.repeats > 0 && res.median_ms > 0);
    if (msg_part)
        assert_non_null(strstr(res.error, msg_part));
}

static void test_kernel_work(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_timing t;
    cut_timing_default(&t);
    t.timeout_s = 5.0;
    cut_runner *r = cut_runner_gpu_new(0, getenv("CUTUNE_BIN"), &t, &e);
    if (!r)
        fail_msg("cut_runner_gpu_new: %s", e.msg);
    assert_non_null(r->prepare);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < N; i++)
            g_x[s][i] = (float)((i * (s ? 7 : 3)) % 101) / 50.0f - 1.0f;
    cut_work w = {.nbufs = 2, .atol = 1e-6, .rtol = 1e-6};
    w.bufs[0] = (cut_work_buf){.name = "x", .is_output = 0, .dtype = CUT_EL_F32, .elems = N, .data = {g_x[0], g_x[1]}};
    w.bufs[1] = (cut_work_buf){.name = "y", .is_output = 1, .dtype = CUT_EL_F32, .elems = N, .data = {NULL, NULL}};
    if (cut_runner_prepare_work(r, &w, &e) != 0)
        fail_msg("prepare_kernel: %s", e.msg);

    /* Capture: both sets' outputs come back and match the CPU. */
    const cut_call c = call_of("k");
    cut_result res;
    cut_work_outputs outs;
    if (cut_runner_run_call(r, &c, &res, &outs, &e) != 0)
        fail_msg("run_kernel (capture): %s", e.msg);
    assert_int_equal(res.status, CUT_ST_OK);
    for (int s = 0; s < 2; s++) {
        const float *y = outs.data[1][s];
        assert_non_null(y);
        for (int i = 0; i < N; i++)
            assert_true(fabsf(y[i] - (2.0f * g_x[s][i] + 1.0f)) <= 1e-6f);
    }
    assert_null(outs.data[0][0]);

    /* With the captured references. */
    w.bufs[1].data[0] = outs.data[1][0];
    w.bufs[1].data[1] = outs.data[1][1];
    if (cut_runner_prepare_work(r, &w, &e) != 0)
        fail_msg("prepare_kernel (references): %s", e.msg);
    cut_work_outputs_free(&outs); /* the runner keeps its own copy */
    run_expect(r, "k", CUT_ST_OK, NULL);
    run_expect(r, "wrong", CUT_ST_WRONG_RESULT, "y[");
    run_expect(r, "shortk", CUT_ST_WRONG_RESULT, "y[999] = ");
    const int starts = cut_runner_gpu_worker_starts(r);
    run_expect(r, "oob", CUT_ST_FAULT, NULL);
    run_expect(r, "k", CUT_ST_OK, NULL);
    assert_int_equal(cut_runner_gpu_worker_starts(r), starts + 1);

    /* energy_kernel (ENERGY_KERNEL): the call checked, run under the meter on this GPU's own counter, checked again;
     * a wrong call is a status with no energy. */
    cut_energy_plan p;
    cut_energy_plan_default(&p);
    snprintf(p.uuid, sizeof p.uuid, "%s", g_info.uuid);
    p.lrounds = 1;
    p.min_steps = 2;
    p.warmup_s = 0.1;
    cut_energy_result er;
    cut_call ck = call_of("k");
    if (cut_runner_energy_call(r, &ck, &p, &res, &er, &e) != 0)
        fail_msg("energy_kernel: %s", e.msg);
    printf("energy  %s %s %.6f mJ per %.6f ms, %.1f W, %lld iterations\n", cut_status_name(res.status), res.error,
           er.energy_mj, er.time_ms, er.power_w, er.round[0].iters);
    assert_int_equal(res.status, CUT_ST_OK);
    assert_int_equal(er.lrounds, 1);
    assert_true(er.energy_mj > 0 && er.time_ms > 0 && er.power_w > 0 && er.round[0].counter_steps >= 2);
    ck = call_of("wrong");
    assert_int_equal(cut_runner_energy_call(r, &ck, &p, &res, &er, &e), 0);
    assert_int_equal(res.status, CUT_ST_WRONG_RESULT);
    assert_true(er.lrounds == 0 && er.energy_mj == 0);
    cut_runner_free(r);
}

int main(void)
{
    int code = tu_gpu_start(&g_info);
    if (code >= 0)
        return code;
    cut_compile_opts o = {.sm_major = g_info.sm_major, .sm_minor = g_info.sm_minor, .nthreads = 1};
    cut_err e = {{0}};
    if (cut_compile_one(SRC, "test_gpu_kernel.cu", &o, &g_bin, &e) != 0 || !g_bin.ok) {
        printf("cut_compile_one: %s %s\n", e.msg, g_bin.log ? g_bin.log : "");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel_work),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    cut_compiled_free(&g_bin);
    return rc;
}
