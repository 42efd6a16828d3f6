/* Tests of the one work type (src/work/work.c) and the works the ops build (src/ops/conv2d/work.c,
 * src/ops/gemm/work.c).
 *
 * Check rules: CLOSE counts wrong elements and names the first, NaN never passes unless the reference is NaN, the
 * call's tol_scale widens both tolerances; FROBENIUS passes a small relative error, fails a large one and any NaN
 * (+Inf error); EXACT fails a one-ulp difference that CLOSE passes. Structural checks: runner references only for a
 * GEMM and without data, TMA arguments only over inputs of the map's element size.
 * Conv work: three fp32 buffers, set 1 fresh, each reference the double reference rounded to float, the shape's
 * tolerance and FLOPs, the op descriptor round trip. GEMM work: fp16 inputs stored as halves, the reference from the
 * rounded inputs, the Frobenius rule with the dtype's tolerance; past 2^32 FLOP the references are left to a runner
 * that can compute them and kept on the host otherwise; a bad op descriptor is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/gemm.h"
#include "cutune/half.h"
#include "cutune/util.h"
#include "cutune/work.h"
#include "cutune/workload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cut_work_buf fbuf(const char *name, size_t n)
{
    cut_work_buf b = {.is_output = 1, .dtype = CUT_EL_F32, .elems = n};
    snprintf(b.name, sizeof b.name, "%s", name);
    return b;
}

static void test_compare_rules(void **state)
{
    (void)state;
    const float ref[4] = {1.0f, 2.0f, -3.0f, 4.0f};
    float got[4] = {1.0f, 2.0f, -3.0f, 4.0f};
    cut_work_buf b = fbuf("y", 4);
    char msg[200];
    double maxe = -1;
    for (int r = 0; r < CUT_CHECK_COUNT; r++)
        assert_int_equal(cut_work_compare(&b, got, ref, (cut_check_rule)r, 0, 0, &maxe, msg, sizeof msg), 0);
    /* one ulp: CLOSE with a tolerance passes, EXACT does not */
    got[1] = nextafterf(2.0f, 3.0f);
    assert_int_equal(cut_work_compare(&b, got, ref, CUT_CHECK_CLOSE, 1e-6, 1e-6, &maxe, msg, sizeof msg), 0);
    assert_int_equal(cut_work_compare(&b, got, ref, CUT_CHECK_EXACT, 1, 1, &maxe, msg, sizeof msg), 1);
    assert_non_null(strstr(msg, "1 of 4 outputs wrong: y[1]"));
    /* CLOSE: two wrong, the first named; NaN fails whatever the tolerance */
    got[1] = 2.5f;
    got[3] = NAN;
    assert_int_equal(cut_work_compare(&b, got, ref, CUT_CHECK_CLOSE, 0.1, 0.0, &maxe, msg, sizeof msg), 2);
    assert_non_null(strstr(msg, "2 of 4 outputs wrong: y[1] = 2.5, want 2"));
    assert_true(fabs(maxe - 0.5) < 1e-12);
    got[1] = 2.0f;
    assert_int_equal(cut_work_compare(&b, got, ref, CUT_CHECK_CLOSE, 1e9, 1e9, &maxe, msg, sizeof msg), 1);
    /* FROBENIUS: the NaN makes the error infinite */
    assert_int_equal(cut_work_compare(&b, got, ref, CUT_CHECK_FROBENIUS, 0, 1e9, &maxe, msg, sizeof msg), 1);
    assert_true(isinf(maxe));
    assert_non_null(strstr(msg, "relative Frobenius error inf > tolerance"));
    assert_non_null(strstr(msg, "y[3] = nan"));
    /* a small relative error passes, a larger one fails: ||(0, 0.01, 0, 0)|| / ||ref|| = 0.01 / sqrt(30) */
    got[3] = 4.0f;
    got[1] = 2.01f;
    const double rel = (double)(2.01f - 2.0f) / sqrt(30.0);
    assert_int_equal(cut_work_compare(&b, got, ref, CUT_CHECK_FROBENIUS, 0, 2 * rel, &maxe, msg, sizeof msg), 0);
    assert_true(fabs(maxe - rel) < 1e-9);
    assert_int_equal(cut_work_compare(&b, got, ref, CUT_CHECK_FROBENIUS, 0, rel / 2, &maxe, msg, sizeof msg), 1);
    assert_non_null(strstr(msg, "(y[1] = 2.01"));
    /* integers compare exactly under every rule */
    const int32_t ri[2] = {5, 6}, gi[2] = {5, 7};
    cut_work_buf bi = {.is_output = 1, .dtype = CUT_EL_I32, .elems = 2};
    snprintf(bi.name, sizeof bi.name, "n");
    assert_int_equal(cut_work_compare(&bi, gi, ri, CUT_CHECK_CLOSE, 10, 10, &maxe, msg, sizeof msg), 1);
    assert_int_equal(cut_work_compare(&bi, gi, ri, CUT_CHECK_FROBENIUS, 10, 10, &maxe, msg, sizeof msg), 1);
    assert_non_null(strstr(msg, "n[1] = 7, want 6"));
    /* a call's factor widens both tolerances; <= 1 leaves them */
    cut_work w = {.atol = 1e-5, .rtol = 2e-5};
    cut_call c = {.tol_scale = 4};
    double at, rt;
    cut_call_tolerance(&w, &c, &at, &rt);
    assert_true(at == 4e-5 && rt == 8e-5);
    c.tol_scale = 0.5;
    cut_call_tolerance(&w, &c, &at, &rt);
    assert_true(at == 1e-5 && rt == 2e-5);
}

static void test_structural_checks(void **state)
{
    (void)state;
    float x[2][4] = {{0}}, y[2][4] = {{0}};
    cut_work w = {.nbufs = 2, .check = CUT_CHECK_CLOSE};
    w.bufs[0] = fbuf("x", 4);
    w.bufs[0].is_output = 0;
    w.bufs[0].data[0] = x[0];
    w.bufs[0].data[1] = x[1];
    w.bufs[1] = fbuf("y", 4);
    w.bufs[1].data[0] = y[0];
    w.bufs[1].data[1] = y[1];
    cut_err e;
    assert_int_equal(cut_work_check(&w, &e), 0);
    assert_int_equal(cut_work_has_refs(&w), 1);
    /* runner references: a GEMM's only, and never with data */
    w.runner_refs = 1;
    assert_int_equal(cut_work_check(&w, &e), -1);
    assert_non_null(strstr(e.msg, "only a GEMM's references"));
    cut_gemm g = {2, 2, 1, CUT_GEMM_NN, CUT_DT_FP32};
    cut_gemm_work_op(&g, &w.op);
    assert_int_equal(cut_work_check(&w, &e), -1);
    assert_non_null(strstr(e.msg, "has references although the runner computes them"));
    w.bufs[1].data[0] = w.bufs[1].data[1] = NULL;
    assert_int_equal(cut_work_check(&w, &e), 0);
    assert_int_equal(cut_work_has_refs(&w), 1);
    w.runner_refs = 0;
    assert_int_equal(cut_work_has_refs(&w), 0); /* capture */
    w.check = CUT_CHECK_COUNT;
    assert_int_equal(cut_work_check(&w, &e), -1);
    assert_non_null(strstr(e.msg, "unknown check rule"));
    w.check = CUT_CHECK_FROBENIUS;
    w.flops = -1;
    assert_int_equal(cut_work_check(&w, &e), -1);
    w.flops = 8;
    /* TMA arguments: over an input, of its element size */
    cut_call c = {.grid = {1, 1, 1}, .block = {32, 1, 1}, .nargs = 2};
    snprintf(c.entry, sizeof c.entry, "k");
    c.args[0] = (cut_call_arg){.buf = 0, .tma = 1, .desc = {.elem_bytes = 4}};
    c.args[1] = (cut_call_arg){.buf = 1};
    assert_int_equal(cut_call_check(&w, &c, &e), 0);
    c.args[0].desc.elem_bytes = 2;
    assert_int_equal(cut_call_check(&w, &c, &e), -1);
    assert_non_null(strstr(e.msg, "2-byte elements"));
    c.args[0].desc.elem_bytes = 4;
    c.args[1].tma = 1;
    c.args[1].desc.elem_bytes = 4;
    assert_int_equal(cut_call_check(&w, &c, &e), -1);
    assert_non_null(strstr(e.msg, "TMA map of an output"));
    c.args[1].tma = 0;
    c.tol_scale = NAN;
    assert_int_equal(cut_call_check(&w, &c, &e), -1);
}

static int is_rounded(const float *got, const double *ref, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != (float)ref[i])
            return 0;
    return 1;
}

static void test_conv_work(void **state)
{
    (void)state;
    const cut_conv c = {1, 9, 9, 4, 3, 3, 3, 1, 1};
    cut_work w;
    cut_err e;
    assert_int_equal(cut_conv_work(&c, 42, &w, &e), 0);
    assert_int_equal(cut_work_check(&w, &e), 0);
    assert_int_equal(w.nbufs, 3);
    assert_int_equal(w.check, CUT_CHECK_CLOSE);
    double atol, rtol;
    cut_conv_tolerance(&c, &atol, &rtol);
    assert_true(w.atol == atol && w.rtol == rtol);
    assert_true(w.flops == cut_conv_flops(&c));
    assert_int_equal(w.bufs[0].elems, cut_conv_in_elems(&c));
    assert_int_equal(w.bufs[1].elems, cut_conv_w_elems(&c));
    assert_int_equal(w.bufs[2].elems, cut_conv_out_elems(&c));
    assert_true(w.bufs[2].is_output && !w.bufs[0].is_output && !w.bufs[1].is_output);
    assert_memory_not_equal(w.bufs[0].data[0], w.bufs[0].data[1], w.bufs[0].elems * sizeof(float));
    assert_memory_not_equal(w.bufs[1].data[0], w.bufs[1].data[1], w.bufs[1].elems * sizeof(float));
    /* set 0 is what every earlier version drew from the seed */
    float *x = malloc(w.bufs[0].elems * sizeof *x);
    cut_fill_uniform(x, w.bufs[0].elems, cut_input_set_seed(42, 0));
    assert_memory_equal(x, w.bufs[0].data[0], w.bufs[0].elems * sizeof *x);
    free(x);
    double *ref = malloc(w.bufs[2].elems * sizeof *ref);
    for (int s = 0; s < 2; s++) {
        cut_conv_reference(&c, w.bufs[0].data[s], w.bufs[1].data[s], ref);
        assert_true(is_rounded(w.bufs[2].data[s], ref, w.bufs[2].elems));
    }
    free(ref);
    cut_conv back;
    assert_int_equal(cut_conv_of_work_op(&w.op, &back, &e), 0);
    assert_memory_equal(&back, &c, sizeof c);
    cut_work_op bad = w.op;
    bad.dims[7] = 0; /* stride 0 */
    assert_int_equal(cut_conv_of_work_op(&bad, &back, &e), -1);
    bad = w.op;
    bad.kind = CUT_WORK_GEMM;
    assert_int_equal(cut_conv_of_work_op(&bad, &back, &e), -1);
    assert_non_null(strstr(e.msg, "not a Conv2D"));
    cut_work_free(&w);
    assert_int_equal(w.nbufs, 0);
    const cut_conv impossible = {1, 2, 2, 4, 3, 5, 5, 1, 0};
    assert_int_equal(cut_conv_work(&impossible, 1, &w, &e), -1);
}

/* cut_work_same: a deep copy is the same work; one byte, a tolerance, a name, references present or not: another. */
static void test_work_same(void **state)
{
    (void)state;
    const cut_conv c = {1, 9, 9, 4, 3, 3, 3, 1, 1};
    cut_work w, copy;
    cut_err e;
    assert_int_equal(cut_conv_work(&c, 42, &w, &e), 0);
    assert_int_equal(cut_work_keep(&w, 0, &copy, &e), 0);
    assert_true(cut_work_same(&w, &copy) && cut_work_same(&copy, &w));
    ((unsigned char *)copy.bufs[1].data[1])[3] ^= 1;
    assert_false(cut_work_same(&w, &copy));
    ((unsigned char *)copy.bufs[1].data[1])[3] ^= 1;
    copy.rtol *= 2;
    assert_false(cut_work_same(&w, &copy));
    copy.rtol = w.rtol;
    copy.bufs[0].name[0] ^= 1;
    assert_false(cut_work_same(&w, &copy));
    copy.bufs[0].name[0] ^= 1;
    const void *ref = copy.bufs[2].data[0];
    copy.bufs[2].data[0] = NULL;
    assert_false(cut_work_same(&w, &copy));
    copy.bufs[2].data[0] = ref;
    copy.op.dims[2]++;
    assert_false(cut_work_same(&w, &copy));
    copy.op.dims[2]--;
    assert_true(cut_work_same(&w, &copy));
    cut_work_free(&copy);
    cut_work_free(&w);
}

static void test_gemm_work(void **state)
{
    (void)state;
    const cut_gemm g = {17, 9, 33, CUT_GEMM_NT, CUT_DT_FP16};
    cut_work w;
    cut_err e;
    assert_int_equal(cut_gemm_work(&g, 7, 1, &w, &e), 0); /* small: the host's references even for a GPU runner */
    assert_int_equal(cut_work_check(&w, &e), 0);
    assert_int_equal(w.runner_refs, 0);
    assert_int_equal(w.check, CUT_CHECK_FROBENIUS);
    assert_true(w.rtol == cut_gemm_tolerance(CUT_DT_FP16));
    assert_int_equal(w.bufs[0].dtype, CUT_EL_F16);
    assert_int_equal(w.bufs[1].dtype, CUT_EL_F16);
    assert_int_equal(w.bufs[2].dtype, CUT_EL_F32);
    assert_int_equal(w.bufs[1].elems, cut_gemm_b_elems(&g));
    const size_t na = w.bufs[0].elems, nb = w.bufs[1].elems, nc = w.bufs[2].elems;
    float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
    double *ref = malloc(nc * sizeof *ref);
    for (int s = 0; s < 2; s++) {
        for (size_t i = 0; i < na; i++)
            a[i] = cut_f16_to_f32(((const uint16_t *)w.bufs[0].data[s])[i]);
        float *a2 = malloc(na * sizeof *a2); /* the library's widening gives the same floats */
        cut_elem_to_floats(CUT_EL_F16, w.bufs[0].data[s], na, a2);
        assert_memory_equal(a2, a, na * sizeof *a);
        free(a2);
        for (size_t i = 0; i < nb; i++)
            b[i] = cut_f16_to_f32(((const uint16_t *)w.bufs[1].data[s])[i]);
        cut_gemm_reference(&g, a, b, ref);
        assert_true(is_rounded(w.bufs[2].data[s], ref, nc));
    }
    /* set 0's A: the seed's uniform values rounded to fp16 */
    float *x = malloc(na * sizeof *x);
    cut_fill_uniform(x, na, cut_input_set_seed(7, 0));
    for (size_t i = 0; i < na; i++)
        assert_int_equal(((const uint16_t *)w.bufs[0].data[0])[i], cut_f32_to_f16(x[i]));
    free(x);
    free(a);
    free(b);
    free(ref);
    cut_gemm back;
    assert_int_equal(cut_gemm_of_work_op(&w.op, &back, &e), 0);
    assert_memory_equal(&back, &g, sizeof g);
    cut_work_op bad = w.op;
    bad.dims[3] = 7;
    assert_int_equal(cut_gemm_of_work_op(&bad, &back, &e), -1);
    assert_non_null(strstr(e.msg, "layout 7"));
    bad = w.op;
    bad.dims[4] = CUT_DT_COUNT;
    assert_int_equal(cut_gemm_of_work_op(&bad, &back, &e), -1);
    cut_work_free(&w);

    /* past 2^32 FLOP a runner that computes references gets none; one that cannot gets the host's
     * (CUTUNE_GEMM_REF=cpu forces the host's: a 2048^3 host reference would take seconds, so force the policy) */
    const cut_gemm big = {2048, 1024, 2048, CUT_GEMM_NN, CUT_DT_FP32};
    unsetenv("CUTUNE_GEMM_REF");
    assert_int_equal(cut_gemm_work(&big, 1, 1, &w, &e), 0);
    assert_int_equal(w.runner_refs, 1);
    assert_null(w.bufs[2].data[0]);
    assert_int_equal(cut_work_check(&w, &e), 0);
    assert_int_equal(cut_work_has_refs(&w), 1);
    assert_int_equal(w.bufs[0].dtype, CUT_EL_F32);
    cut_work_free(&w);
    setenv("CUTUNE_GEMM_REF", "gpu", 1);
    const cut_gemm small = {8, 8, 8, CUT_GEMM_NN, CUT_DT_BF16};
    assert_int_equal(cut_gemm_work(&small, 1, 1, &w, &e), 0);
    assert_int_equal(w.runner_refs, 1);
    assert_int_equal(w.bufs[0].dtype, CUT_EL_BF16);
    cut_work_free(&w);
    assert_int_equal(cut_gemm_work(&small, 1, 0, &w, &e), 0); /* a runner that cannot: the host's after all */
    assert_int_equal(w.runner_refs, 0);
    assert_non_null(w.bufs[2].data[1]);
    cut_work_free(&w);
    unsetenv("CUTUNE_GEMM_REF");
    const cut_gemm empty = {0, 8, 8, CUT_GEMM_NN, CUT_DT_FP32};
    assert_int_equal(cut_gemm_work(&empty, 1, 0, &w, &e), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare_rules),
        cmocka_unit_test(test_structural_checks),
        cmocka_unit_test(test_conv_work),
        cmocka_unit_test(test_work_same),
        cmocka_unit_test(test_gemm_work),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
