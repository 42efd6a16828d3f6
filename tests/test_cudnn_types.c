/* The cuDNN baseline's description of a Conv2D workload (issue 20), without a GPU: data type, tensor format and
 * math type per dtype and layout, the tolerance factor of TF32 math on fp32 data, the engine filter on numerical
 * notes, and NHWC/NCHW strides of the graph API's tensors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "measure/cudnn_types.h"

#include <cudnn.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types_per_dtype),
        cmocka_unit_test(test_engine_notes),
        cmocka_unit_test(test_tensor_strides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
