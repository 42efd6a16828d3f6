/* GPU test of GEMM measurement in the worker (issue 6): skips with 77 where there is no GPU.
 *
 * A 256x384x200 GEMM (tails along every axis for most tiles), NN and NT, prepared with cut_runner_prepare_gemm:
 * 20 random valid SIMT schedules (src/gemm), compiled with NVRTC for the device's sm_XX, all measure OK with a
 * relative Frobenius error within cut_gemm_tolerance; a planted wrong kernel (the first schedule's source with the
 * B operand scaled by 1.001 in the FMA) is CUT_ST_WRONG_RESULT; a correct candidate after it is OK again; the
 * cuBLAS baseline (pedantic SGEMM) in the same worker is OK. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/compile.h"
#include "cutune/gemm.h"
#include "cutune/gemm_space.h"
#include "cutune/gpu.h"
#include "gpu_testutil.h"
#include "cutune/measure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NCAND = 20 };

static cut_gpu_info g_info;

/* Replaces the first occurrence of from in *src by to (reallocates). 0, or -1 if from is absent. */
static int replace_first(char **src, const char *from, const char *to)
{
    char *p = strstr(*src, from);
    if (!p)
        return -1;
    const size_t head = (size_t)(p - *src), lf = strlen(from), lt = strlen(to), tail = strlen(p + lf);
    char *out = malloc(head + lt + tail + 1);
    memcpy(out, *src, head);
    memcpy(out + head, to, lt);
    memcpy(out + head + lt, p + lf, tail + 1);
    free(*src);
    *src = out;
    return 0;
}

/* NCAND random valid schedules of g plus, at index NCAND, the first one's text corrupted; compiled into bins. */
static void make_candidates(const cut_gemm *g, uint64_t seed, cut_kernel_src *ks, cut_compiled *bins)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    d.sm_major = g_info.sm_major;
    d.sm_minor = g_info.sm_minor;
    cut_rng r;
    cut_rng_seed(&r, seed);
    cut_err e = {{0}};
    const char *srcs[NCAND + 1];
    for (int i = 0; i < NCAND; i++) {
        cut_gemm_sched s;
        if (cut_gemm_simt_sample_valid(g, &d, &r, &s, 1000, &e) != 0)
            fail_msg("sampling: %s", e.msg);
        if (cut_codegen_gemm_simt(g, &s, &ks[i], &e) != 0)
            fail_msg("codegen: %s", e.msg);
        srcs[i] = ks[i].src;
    }
    ks[NCAND] = ks[0];
    ks[NCAND].src = strdup(ks[0].src);
    assert_int_equal(replace_first(&ks[NCAND].src, "fmaf(a[i], b[j],", "fmaf(a[i], b[j] * 1.001f,"), 0);
    srcs[NCAND] = ks[NCAND].src;
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    o.sm_major = g_info.sm_major;
    o.sm_minor = g_info.sm_minor;
    if (cut_compile_batch(srcs, NCAND + 1, &o, bins, &e) != 0)
        fail_msg("compile: %s", e.msg);
    for (int i = 0; i <= NCAND; i++)
        if (!bins[i].ok)
            fail_msg("candidate %d does not compile: %.300s", i, bins[i].log);
}

static void run_layout(cut_runner *r, cut_gemm_layout layout)
{
    const cut_gemm g = {256, 384, 200, layout, CUT_DT_FP32};
    cut_err e = {{0}};
    if (cut_runner_prepare_gemm(r, &g, 42, &e) != 0)
        fail_msg("prepare_gemm: %s", e.msg);
    cut_kernel_src ks[NCAND + 1];
    cut_compiled bins[NCAND + 1];
    make_candidates(&g, 1000 + (uint64_t)layout, ks, bins);
    cut_candidate c[NCAND + 2];
    for (int i = 0; i <= NCAND; i++)
        c[i] = (cut_candidate){.ks = &ks[i], .bin = &bins[i]};
    c[NCAND + 1] = c[0]; /* a correct one after the failure */
    cut_result res[NCAND + 2];
    if (cut_runner_measure(r, c, NCAND + 2, res, &e) != 0)
        fail_msg("measure: %s", e.msg);
    const double tol = cut_gemm_tolerance(CUT_DT_FP32);
    for (int i = 0; i < NCAND + 2; i++) {
        printf("  %s #%-2d %-13s %9.4f ms  rel.err %.3g%s\n", cut_gemm_layout_name(layout), i,
               cut_status_name(res[i].status), res[i].median_ms, res[i].max_abs_err,
               i == NCAND ? "  (planted wrong kernel)" : "");
        if (i == NCAND) {
            assert_int_equal(res[i].status, CUT_ST_WRONG_RESULT);
            assert_non_null(strstr(res[i].error, "relative Frobenius error"));
            continue;
        }
        if (res[i].status != CUT_ST_OK)
            fail_msg("candidate %d: %s %s", i, cut_status_name(res[i].status), res[i].error);
        assert_true(res[i].max_abs_err <= tol);
        assert_true(res[i].median_ms > 0);
    }
    char algo[64];
    cut_result cr;
    if (cut_runner_gpu_cublas(r, &cr, algo, sizeof algo, &e) != 0)
        fail_msg("cuBLAS: %s", e.msg);
    printf("  cuBLAS %s: %s %.4f ms rel.err %.3g %s\n", algo, cut_status_name(cr.status), cr.median_ms,
           cr.max_abs_err, cr.error);
    assert_int_equal(cr.status, CUT_ST_OK);
    assert_true(cr.max_abs_err <= tol);
    for (int i = 0; i <= NCAND; i++) {
        cut_compiled_free(&bins[i]);
        cut_kernel_src_free(&ks[i]); /* each has its own source (the planted one a copy) */
    }
}

static void test_gemm_worker(void **state)
{
    (void)state;
    cut_timing t;
    cut_timing_default(&t);
    t.min_total_ms = 2.0;
    cut_err e = {{0}};
    cut_runner *r = cut_runner_gpu_new(0, getenv("CUTUNE_BIN"), &t, &e);
    if (!r)
        fail_msg("cut_runner_gpu_new: %s", e.msg);
    run_layout(r, CUT_GEMM_NN);
    run_layout(r, CUT_GEMM_NT);
    cut_runner_free(r);
}

int main(void)
{
    int code = tu_gpu_start(&g_info);
    if (code >= 0)
        return code;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_worker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
