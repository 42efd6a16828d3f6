/* cutune — cuDNN's description of a Conv2D workload and its engine filter (see cudnn_types.h). */
#include "measure/cudnn_types.h"

#include <cudnn.h>

void cut_cudnn_conv_types(const cut_conv *c, int tf32_math, cut_cudnn_types *t)
{
    t->data_type = c->dtype == CUT_DT_FP16 ? CUDNN_DATA_HALF : c->dtype == CUT_DT_BF16 ? CUDNN_DATA_BFLOAT16
                                                                                        : CUDNN_DATA_FLOAT;
    t->format = c->layout == CUT_NHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    t->tensor_cores = c->dtype != CUT_DT_FP32 || tf32_math;
    /* tensor-op math, never ..._ALLOW_CONVERSION: fp32 data must not be converted to fp16 */
    t->math = t->tensor_cores ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
    t->tol_scale = 1.0;
    if (c->dtype == CUT_DT_FP32 && tf32_math) {
        /* fp32 data through TF32 tensor cores: the tf32 workload's tolerance (reference.c derives it) */
        cut_conv tf = *c;
        tf.dtype = CUT_DT_TF32;
        double a32, r32, atf, rtf;
        cut_conv_tolerance(c, &a32, &r32);
        cut_conv_tolerance(&tf, &atf, &rtf);
        t->tol_scale = atf / a32 > rtf / r32 ? atf / a32 : rtf / r32;
    }
}

int cut_cudnn_notes_ok(const int *notes, int n, const cut_cudnn_types *t)
{
    for (int i = 0; i < n; i++) {
        if (notes[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)
            return 0;
        if (!t->tensor_cores &&
            (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS))
            return 0;
    }
    return 1;
}

void cut_cudnn_tensor_dims(const cut_conv *c, int which, int64_t dims[4], int64_t strides[4])
{
    const int64_t v[3][4] = {{c->n, c->ci, c->h, c->w},
                             {c->co, c->ci, c->kh, c->kw},
                             {c->n, c->co, cut_conv_oh(c), cut_conv_ow(c)}};
    const int64_t *d = v[which < 0 || which > 2 ? 0 : which];
    for (int i = 0; i < 4; i++)
        dims[i] = d[i];
    if (c->layout == CUT_NHWC) { /* channels innermost: n, h, w, c */
        strides[1] = 1, strides[3] = d[1], strides[2] = d[1] * d[3], strides[0] = d[1] * d[2] * d[3];
    } else {
        strides[3] = 1, strides[2] = d[3], strides[1] = d[2] * d[3], strides[0] = d[1] * d[2] * d[3];
    }
}
