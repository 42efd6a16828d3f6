/* The cuDNN baseline's description of a Conv2D workload (issue 20), without a GPU: data type, tensor format and
 * math type per dtype and layout, the tolerance factor of TF32 math on fp32 data, the engine filter on numerical
 * notes, and NHWC/NCHW strides of the graph API's tensors; for a fused epilogue, the call each algorithm gets
 * (fused or the unfused sequence), the names that say which, the bias tensor and the unfused sequence's tolerance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "measure/cudnn_types.h"

#include "cutune/measure.h"

#include <cudnn.h>
#include <math.h>
#include <string.h>

static void test_types_per_dtype(void **state)
{
    (void)state;
    cut_conv c = {2, 9, 11, 16, 8, 3, 3, 1, 1};
    cut_cudnn_types t;
    cut_cudnn_conv_types(&c, 0, &t); /* fp32 FMA: the column every earlier version measured */
    assert_int_equal(t.data_type, CUDNN_DATA_FLOAT);
    assert_int_equal(t.format, CUDNN_TENSOR_NCHW);
    assert_int_equal(t.math, CUDNN_FMA_MATH);
    assert_int_equal(t.tensor_cores, 0);
    assert_true(t.tol_scale == 1.0);
    cut_cudnn_conv_types(&c, 1, &t); /* fp32 TF32: tensor-op math, the tf32 tolerance */
    assert_int_equal(t.math, CUDNN_TENSOR_OP_MATH);
    assert_int_equal(t.tensor_cores, 1);
    assert_true(t.tol_scale > 10.0);
    c.dtype = CUT_DT_FP16, c.layout = CUT_NHWC;
    cut_cudnn_conv_types(&c, 0, &t);
    assert_int_equal(t.data_type, CUDNN_DATA_HALF);
    assert_int_equal(t.format, CUDNN_TENSOR_NHWC);
    assert_int_equal(t.math, CUDNN_TENSOR_OP_MATH);
    assert_true(t.tol_scale == 1.0);
    c.dtype = CUT_DT_BF16;
    cut_cudnn_conv_types(&c, 0, &t);
    assert_int_equal(t.data_type, CUDNN_DATA_BFLOAT16);
    c.dtype = CUT_DT_TF32;
    cut_cudnn_conv_types(&c, 0, &t);
    assert_int_equal(t.data_type, CUDNN_DATA_FLOAT);
    assert_int_equal(t.tensor_cores, 1);
}

static void test_engine_notes(void **state)
{
    (void)state;
    cut_conv c = {1, 8, 8, 8, 8, 3, 3, 1, 1};
    cut_cudnn_types fma, tc;
    cut_cudnn_conv_types(&c, 0, &fma);
    cut_cudnn_conv_types(&c, 1, &tc);
    const int none[1] = {0}, core[2] = {CUDNN_NUMERICAL_NOTE_TENSOR_CORE, CUDNN_NUMERICAL_NOTE_FFT};
    const int down[1] = {CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS};
    const int reduced[2] = {CUDNN_NUMERICAL_NOTE_TENSOR_CORE, CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION};
    assert_int_equal(cut_cudnn_notes_ok(none, 0, &fma), 1);
    assert_int_equal(cut_cudnn_notes_ok(core, 2, &fma), 0);
    assert_int_equal(cut_cudnn_notes_ok(down, 1, &fma), 0);
    assert_int_equal(cut_cudnn_notes_ok(core, 2, &tc), 1);
    assert_int_equal(cut_cudnn_notes_ok(down, 1, &tc), 1);
    assert_int_equal(cut_cudnn_notes_ok(reduced, 2, &tc), 0); /* fp16 accumulation is not the fp32 we compute */
}

static void test_tensor_strides(void **state)
{
    (void)state;
    cut_conv c = {2, 9, 11, 16, 8, 3, 5, 2, 1}; /* OH 5, OW 5 */
    int64_t d[4], s[4];
    cut_cudnn_tensor_dims(&c, 0, d, s);
    assert_true(d[0] == 2 && d[1] == 8 && d[2] == 9 && d[3] == 11);
    assert_true(s[0] == 8 * 9 * 11 && s[1] == 9 * 11 && s[2] == 11 && s[3] == 1);
    c.layout = CUT_NHWC;
    cut_cudnn_tensor_dims(&c, 1, d, s); /* KRSC filter */
    assert_true(d[0] == 16 && d[1] == 8 && d[2] == 3 && d[3] == 5);
    assert_true(s[0] == 3 * 5 * 8 && s[1] == 1 && s[2] == 5 * 8 && s[3] == 8);
    cut_cudnn_tensor_dims(&c, 2, d, s);
    assert_true(d[1] == 16 && d[2] == 5 && d[3] == 5);
    assert_true(s[0] == 5 * 5 * 16 && s[1] == 1 && s[2] == 5 * 16 && s[3] == 16);
}

static void test_epilogue_plan(void **state)
{
    (void)state;
    cut_conv c = {1, 8, 8, 16, 8, 3, 3, 1, 1, CUT_DT_FP16, CUT_NHWC, CUT_EPI_NONE};
    cut_cudnn_epi p;
    for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; a++) { /* no epilogue: the convolution alone */
        cut_cudnn_epi_plan(&c, a, 0, &p);
        assert_int_equal(p.mode, CUT_CUDNN_EPI_NONE);
        assert_int_equal(p.calls, 1);
    }
    c.epilogue = CUT_EPI_BIAS_RELU; /* ReLU: the fused call with every algorithm, unless cuDNN refused it */
    for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; a++) {
        cut_cudnn_epi_plan(&c, a, 0, &p);
        assert_int_equal(p.mode, CUT_CUDNN_EPI_FUSED);
        assert_int_equal(p.activation, CUDNN_ACTIVATION_RELU);
        assert_int_equal(p.calls, 1);
        cut_cudnn_epi_plan(&c, a, 1, &p);
        assert_int_equal(p.mode, CUT_CUDNN_EPI_UNFUSED);
        assert_int_equal(p.activation, CUDNN_ACTIVATION_RELU);
        assert_int_equal(p.calls, 3); /* conv, AddTensor, Activation */
    }
    c.epilogue = CUT_EPI_BIAS; /* IDENTITY: documented for IMPLICIT_PRECOMP_GEMM only */
    int fused = 0;
    for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; a++) {
        cut_cudnn_epi_plan(&c, a, 0, &p);
        if (a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) {
            assert_int_equal(p.mode, CUT_CUDNN_EPI_FUSED);
            assert_int_equal(p.activation, CUDNN_ACTIVATION_IDENTITY);
            assert_int_equal(p.calls, 1);
        } else {
            assert_int_equal(p.mode, CUT_CUDNN_EPI_UNFUSED);
            assert_int_equal(p.calls, 2); /* conv, AddTensor: no activation to run */
        }
        fused += p.mode == CUT_CUDNN_EPI_FUSED;
    }
    assert_int_equal(fused, 1);
    cut_cudnn_epi_plan(&c, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, 1, &p);
    assert_int_equal(p.mode, CUT_CUDNN_EPI_UNFUSED);
    /* what counts as cuDNN refusing the fused call (then the unfused sequence runs), and what does not */
    assert_int_equal(cut_cudnn_status_refusal(CUDNN_STATUS_NOT_SUPPORTED), 1);
    assert_int_equal(cut_cudnn_status_refusal(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE), 1);
    assert_int_equal(cut_cudnn_status_refusal(CUDNN_STATUS_BAD_PARAM), 1);
    assert_int_equal(cut_cudnn_status_refusal(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH), 1);
    assert_int_equal(cut_cudnn_status_refusal(CUDNN_STATUS_SUCCESS), 0);
    assert_int_equal(cut_cudnn_status_refusal(CUDNN_STATUS_EXECUTION_FAILED), 0);
    assert_int_equal(cut_cudnn_status_refusal(CUDNN_STATUS_INTERNAL_ERROR), 0);
    assert_int_equal(cut_cudnn_status_refusal(CUDNN_STATUS_NOT_INITIALIZED), 0);
}

static void test_epilogue_labels(void **state)
{
    (void)state;
    cut_conv c = {1, 8, 8, 16, 8, 3, 3, 1, 1, CUT_DT_BF16, CUT_NCHW, CUT_EPI_NONE};
    char buf[64];
    cut_cudnn_epi_label("GEMM", &c, CUT_CUDNN_EPI_NONE, buf, sizeof buf);
    assert_string_equal(buf, "GEMM");
    assert_int_equal(cut_cudnn_algo_fused(buf), -1);
    assert_int_equal(cut_cudnn_algo_fused("IMPLICIT_PRECOMP_GEMM"), -1); /* the names of every earlier version */
    assert_int_equal(cut_cudnn_algo_fused(NULL), -1);
    c.epilogue = CUT_EPI_BIAS_RELU;
    cut_cudnn_epi_label("WINOGRAD", &c, CUT_CUDNN_EPI_FUSED, buf, sizeof buf);
    assert_string_equal(buf, "WINOGRAD [fused bias+relu]");
    assert_int_equal(cut_cudnn_algo_fused(buf), 1);
    cut_cudnn_epi_label("FFT", &c, CUT_CUDNN_EPI_UNFUSED, buf, sizeof buf);
    assert_string_equal(buf, "FFT [unfused: conv, AddTensor, Activation]");
    assert_int_equal(cut_cudnn_algo_fused(buf), 0);
    c.epilogue = CUT_EPI_BIAS;
    cut_cudnn_epi_label("IMPLICIT_PRECOMP_GEMM", &c, CUT_CUDNN_EPI_FUSED, buf, sizeof buf);
    assert_string_equal(buf, "IMPLICIT_PRECOMP_GEMM [fused bias]");
    assert_int_equal(cut_cudnn_algo_fused(buf), 1);
    cut_cudnn_epi_label("GEMM", &c, CUT_CUDNN_EPI_UNFUSED, buf, sizeof buf);
    assert_string_equal(buf, "GEMM [unfused: conv, AddTensor]");
    assert_int_equal(cut_cudnn_algo_fused(buf), 0);
    /* the longest engine name and tail fit the worker's 64-byte algorithm field whole */
    cut_cudnn_epi_label("engine 12345 (heuristics A #31)", &c, CUT_CUDNN_EPI_UNFUSED, buf, sizeof buf);
    assert_string_equal(buf, "engine 12345 (heuristics A #31) [unfused: conv, AddTensor]");
    /* too long a name gives way to the tail, which says how the epilogue ran */
    char small[24];
    cut_cudnn_epi_label("WINOGRAD_NONFUSED", &c, CUT_CUDNN_EPI_FUSED, small, sizeof small);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_non_null(strstr(small, " [fused bias]"));
    assert_int_equal(cut_cudnn_algo_fused(small), 1);
}

static void test_bias_tensor(void **state)
{
    (void)state;
    cut_conv c = {2, 9, 11, 16, 8, 3, 5, 2, 1};
    c.epilogue = CUT_EPI_BIAS;
    int64_t d[4], s[4];
    cut_cudnn_tensor_dims(&c, 3, d, s); /* 1 x CO x 1 x 1, CO contiguous values */
    assert_true(d[0] == 1 && d[1] == 16 && d[2] == 1 && d[3] == 1);
    assert_true(s[1] == 1 && s[0] == 16);
    c.layout = CUT_NHWC;
    cut_cudnn_tensor_dims(&c, 3, d, s);
    assert_true(d[0] == 1 && d[1] == 16 && d[2] == 1 && d[3] == 1);
    assert_true(s[1] == 1 && s[0] == 16 && s[2] == 16 && s[3] == 16);
}

static void test_unfused_tolerance(void **state)
{
    (void)state;
    cut_conv c = {1, 14, 14, 64, 64, 3, 3, 1, 1, CUT_DT_FP16, CUT_NHWC, CUT_EPI_NONE};
    assert_true(cut_cudnn_unfused_tol_scale(&c, 1.0) == 1.0); /* no epilogue: as given */
    assert_true(cut_cudnn_unfused_tol_scale(&c, 3.0) == 3.0);
    const cut_dtype dts[3] = {CUT_DT_FP16, CUT_DT_BF16, CUT_DT_TF32};
    const double half_ulp[3] = {0x1.0p-11, 0x1.0p-8, 0x1.0p-24};
    for (int i = 0; i < 3; i++) {
        c.dtype = dts[i];
        c.epilogue = CUT_EPI_BIAS_RELU;
        double atol, rtol;
        cut_conv_tolerance(&c, &atol, &rtol);
        for (double base = 1.0; base <= 4.0; base += 3.0) {
            const double f = cut_cudnn_unfused_tol_scale(&c, base);
            /* the scaled bound holds the base bound plus half an ulp of the output type, in both terms */
            assert_true(f * atol >= base * atol + half_ulp[i] * (1 - 1e-12));
            assert_true(f * rtol >= base * rtol + half_ulp[i] * (1 - 1e-12));
            /* and no more than that: one of the two is tight */
            assert_true(fabs(f * atol - (base * atol + half_ulp[i])) < 1e-9 * f * atol ||
                        fabs(f * rtol - (base * rtol + half_ulp[i])) < 1e-9 * f * rtol);
        }
    }
    /* fp16 at K = 576: the extra half ulp (2^-11) is larger than the fused tolerance's atol, so the factor is > 2 */
    c.dtype = CUT_DT_FP16;
    assert_true(cut_cudnn_unfused_tol_scale(&c, 1.0) > 2.0);
    assert_true(cut_cudnn_unfused_tol_scale(&c, 0.0) >= 1.0); /* a base below 1 counts as 1 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types_per_dtype),
        cmocka_unit_test(test_engine_notes),
        cmocka_unit_test(test_tensor_strides),
        cmocka_unit_test(test_epilogue_plan),
        cmocka_unit_test(test_epilogue_labels),
        cmocka_unit_test(test_bias_tensor),
        cmocka_unit_test(test_unfused_tolerance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
