/* cutune — cuDNN's description of a Conv2D workload and its engine filter (see cudnn_types.h). */
#include "measure/cudnn_types.h"

#include "cutune/measure.h"

#include <cudnn.h>
#include <stdio.h>
#include <string.h>

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
    const int64_t v[4][4] = {{c->n, c->ci, c->h, c->w},
                             {c->co, c->ci, c->kh, c->kw},
                             {c->n, c->co, cut_conv_oh(c), cut_conv_ow(c)},
                             {1, c->co, 1, 1}};
    const int64_t *d = v[which < 0 || which > 3 ? 0 : which];
    for (int i = 0; i < 4; i++)
        dims[i] = d[i];
    if (c->layout == CUT_NHWC) { /* channels innermost: n, h, w, c */
        strides[1] = 1, strides[3] = d[1], strides[2] = d[1] * d[3], strides[0] = d[1] * d[2] * d[3];
    } else {
        strides[3] = 1, strides[2] = d[3], strides[1] = d[2] * d[3], strides[0] = d[1] * d[2] * d[3];
    }
}

void cut_cudnn_epi_plan(const cut_conv *c, int algo, int fused_refused, cut_cudnn_epi *p)
{
    p->activation = c->epilogue == CUT_EPI_BIAS_RELU ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY;
    if (c->epilogue == CUT_EPI_NONE) {
        p->mode = CUT_CUDNN_EPI_NONE;
        p->calls = 1;
        return;
    }
    /* IDENTITY is documented for IMPLICIT_PRECOMP_GEMM only; RELU for every algorithm */
    const int takes = c->epilogue == CUT_EPI_BIAS_RELU || algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    if (takes && !fused_refused) {
        p->mode = CUT_CUDNN_EPI_FUSED;
        p->calls = 1;
    } else {
        p->mode = CUT_CUDNN_EPI_UNFUSED;
        p->activation = CUDNN_ACTIVATION_RELU; /* the unfused ReLU step (bias alone has none) */
        p->calls = c->epilogue == CUT_EPI_BIAS_RELU ? 3 : 2;
    }
}

int cut_cudnn_status_refusal(int status) { return status / 1000 == 2 || status / 1000 == 3; }

void cut_cudnn_epi_label(const char *name, const cut_conv *c, cut_cudnn_epi_mode mode, char *buf, size_t n)
{
    const int relu = c->epilogue == CUT_EPI_BIAS_RELU;
    const char *tail = "";
    if (c->epilogue != CUT_EPI_NONE && mode == CUT_CUDNN_EPI_FUSED)
        tail = relu ? " [fused bias+relu]" : " [fused bias]";
    else if (c->epilogue != CUT_EPI_NONE && mode == CUT_CUDNN_EPI_UNFUSED)
        tail = relu ? " [unfused: conv, AddTensor, Activation]" : " [unfused: conv, AddTensor]";
    if (n == 0)
        return;
    /* the tail is what says how the epilogue ran: the name gives way when both do not fit */
    const size_t tl = strlen(tail), room = n - 1 > tl ? n - 1 - tl : 0;
    snprintf(buf, n, "%.*s%s", (int)(room < strlen(name) ? room : strlen(name)), name, tail);
}

int cut_cudnn_algo_fused(const char *algo)
{
    if (!algo)
        return -1;
    if (strstr(algo, " [fused bias"))
        return 1;
    if (strstr(algo, " [unfused: conv"))
        return 0;
    return -1;
}

double cut_cudnn_unfused_tol_scale(const cut_conv *c, double base)
{
    if (!(base >= 1.0))
        base = 1.0;
    if (c->epilogue == CUT_EPI_NONE)
        return base;
    const double e = c->dtype == CUT_DT_FP16 ? 0x1.0p-11 : c->dtype == CUT_DT_BF16 ? 0x1.0p-8 : 0x1.0p-24;
    double atol, rtol;
    cut_conv_tolerance(c, &atol, &rtol);
    const double sa = base + e / atol, sr = base + e / rtol;
    return sa > sr ? sa : sr;
}
