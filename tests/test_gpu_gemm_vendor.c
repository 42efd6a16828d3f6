/* GPU test of the vendor GEMM baseline and of the GEMM dtypes and TMA launches in the worker (issue 6): skips with
 * 77 where there is no GPU.
 *
 * 512x512x512 GEMMs prepared with cut_runner_prepare_gemm: fp16 NN, bf16 NN, tf32 NT, fp32 NN and fp16 NT with
 * an odd shape; cut_runner_gpu_vendor (cuBLAS GemmEx + cuBLASLt heuristic and a short enumeration) finds at least
 * one valid algorithm, the best within the dtype's tolerance (and <= 1e-2), the top list sorted by time and every
 * entry within tolerance. Then a kernel that takes two TMA maps (by value, __grid_constant__) and C: with valid
 * descriptors it launches (and, writing nothing, fails the check: WRONG_RESULT); a descriptor the driver refuses
 * (a box row of 10 bytes) is a LAUNCH_ERROR naming cuTensorMapEncodeTiled; one reaching past A is a LAUNCH_ERROR
 * before the driver is asked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/compile.h"
#include "cutune/gemm.h"
#include "cutune/gpu.h"
#include "cutune/measure.h"
#include "gpu_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cut_gpu_info g_info;
static cut_runner *g_runner;

static void run_vendor(int m, int n, int k, cut_gemm_layout layout, cut_dtype dt)
{
    const cut_gemm g = {m, n, k, layout, dt};
    char name[128];
    cut_gemm_name(&g, name, sizeof name);
    cut_err e = {{0}};
    if (cut_runner_prepare_gemm(g_runner, &g, 3, &e) != 0)
        fail_msg("%s: prepare_gemm: %s", name, e.msg);
    cut_vendor_opts o;
    cut_vendor_opts_default(&o);
    o.max_configs = 40;
    o.budget_s = 30;
    cut_vendor_result *v = calloc(1, sizeof *v);
    if (cut_runner_gpu_vendor(g_runner, &o, v, &e) != 0)
        fail_msg("%s: vendor: %s", name, e.msg);
    printf("%s: %d tried, %d valid (%d heuristic, %d enumerated)%s%s\n", name, v->tried, v->valid, v->heuristic,
           v->enumerated, v->note[0] ? " note: " : "", v->note);
    for (int i = 0; i < v->ntop; i++)
        printf("  %d. %8.4f ms  %8.2f TFLOP/s  rel.err %.3g  %s\n", i + 1, v->top[i].res.median_ms,
               cut_gemm_gflops(&g, v->top[i].res.median_ms) / 1000, v->top[i].res.max_abs_err, v->top[i].config);
    if (v->best.res.status != CUT_ST_OK)
        fail_msg("%s: no valid vendor GEMM: %s %s: %s", name, v->best.config, cut_status_name(v->best.res.status),
                 v->best.res.error);
    const double tol = cut_gemm_tolerance(dt);
    assert_true(v->valid >= 1 && v->tried >= v->valid && v->ntop >= 1);
    assert_true(v->best.res.max_abs_err <= tol && v->best.res.max_abs_err <= 1e-2);
    assert_true(v->best.res.median_ms > 0);
    assert_string_equal(v->best.config, v->top[0].config);
    for (int i = 0; i < v->ntop; i++) {
        assert_int_equal(v->top[i].res.status, CUT_ST_OK);
        assert_true(v->top[i].res.max_abs_err <= tol);
        if (i)
            assert_true(v->top[i].res.median_ms >= v->top[i - 1].res.median_ms);
    }
    free(v);
}

static void test_vendor_dtypes(void **state)
{
    (void)state;
    run_vendor(512, 512, 512, CUT_GEMM_NN, CUT_DT_FP16);
    run_vendor(512, 512, 512, CUT_GEMM_NN, CUT_DT_BF16);
    run_vendor(512, 512, 512, CUT_GEMM_NT, CUT_DT_TF32);
    run_vendor(512, 512, 512, CUT_GEMM_NN, CUT_DT_FP32);
    run_vendor(520, 264, 136, CUT_GEMM_NT, CUT_DT_FP16); /* sizes multiples of 8, not of the tiles */
}

/* A kernel that takes two tensor maps by value and C, and writes nothing. */
static const char *TMA_SRC = "struct __align__(64) cut_tmap { unsigned long long v[16]; };\n"
                             "extern \"C\" __global__ void tma_args(const __grid_constant__ cut_tmap a,\n"
                             "    const __grid_constant__ cut_tmap b, float* c) {\n"
                             "  if (a.v[15] == 0x123456789ull && b.v[15] == 0x987654321ull) c[0] = 1.0f;\n"
                             "}\n";

static void test_tma_launch(void **state)
{
    (void)state;
    const cut_gemm g = {256, 128, 64, CUT_GEMM_NT, CUT_DT_FP16};
    cut_err e = {{0}};
    if (cut_runner_prepare_gemm(g_runner, &g, 5, &e) != 0)
        fail_msg("prepare_gemm: %s", e.msg);
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    o.sm_major = g_info.sm_major;
    o.sm_minor = g_info.sm_minor;
    cut_compiled bin;
    if (cut_compile_one(TMA_SRC, "tma_args", &o, &bin, &e) != 0 || !bin.ok)
        fail_msg("compile: %s %s", e.msg, bin.log ? bin.log : "");
    cut_kernel_src ks;
    memset(&ks, 0, sizeof ks);
    snprintf(ks.entry, sizeof ks.entry, "tma_args");
    ks.grid[0] = ks.grid[1] = ks.grid[2] = 1;
    ks.block[0] = 32;
    ks.block[1] = ks.block[2] = 1;
    ks.ntma = 2;
    /* A is 256x64 fp16 (rows of 128 bytes), B (NT) is 128x64 */
    ks.tma[0] = (cut_tma_desc){0, 2, {64, 256}, 128, {64, 128}, 128};
    ks.tma[1] = (cut_tma_desc){1, 2, {64, 128}, 128, {64, 64}, 128};
    cut_candidate c = {.ks = &ks, .bin = &bin};
    cut_result res;
    assert_int_equal(cut_runner_measure(g_runner, &c, 1, &res, &e), 0);
    printf("  valid maps: %s %s\n", cut_status_name(res.status), res.error);
    assert_int_equal(res.status, CUT_ST_WRONG_RESULT); /* launched; the kernel writes nothing */
    ks.tma[1].box[0] = 5; /* 10-byte box rows: the driver refuses */
    assert_int_equal(cut_runner_measure(g_runner, &c, 1, &res, &e), 0);
    printf("  bad box: %s %s\n", cut_status_name(res.status), res.error);
    assert_int_equal(res.status, CUT_ST_LAUNCH_ERROR);
    assert_non_null(strstr(res.error, "cuTensorMapEncodeTiled"));
    assert_non_null(strstr(res.error, "box 5x64"));
    ks.tma[1].box[0] = 64;
    ks.tma[0].dims[1] = 257; /* one row past A */
    assert_int_equal(cut_runner_measure(g_runner, &c, 1, &res, &e), 0);
    printf("  past A: %s %s\n", cut_status_name(res.status), res.error);
    assert_int_equal(res.status, CUT_ST_LAUNCH_ERROR);
    assert_non_null(strstr(res.error, "reaches past the end of buffer 'A'"));
    cut_compiled_free(&bin);
}

static int setup(void **state)
{
    (void)state;
    cut_timing t;
    cut_timing_default(&t);
    t.min_total_ms = 2.0;
    cut_err e = {{0}};
    g_runner = cut_runner_gpu_new(0, getenv("CUTUNE_BIN"), &t, &e);
    if (!g_runner) {
        printf("cut_runner_gpu_new: %s\n", e.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cut_runner_free(g_runner);
    return 0;
}

int main(void)
{
    int code = tu_gpu_start(&g_info);
    if (code >= 0)
        return code;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vendor_dtypes),
        cmocka_unit_test(test_tma_launch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
