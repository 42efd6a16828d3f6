/* cutune — how a Conv2D workload is described to cuDNN, and which engines may serve as its baseline (internal; pure
 * functions of the workload, tested without a GPU by tests/test_cudnn_types.c).
 *
 * The baseline runs in the workload's dtype and layout: fp16/bf16 data (CUDNN_DATA_HALF / BFLOAT16) with fp32
 * compute and tensor-core math allowed; tf32 data as fp32 tensors with tensor-core (TF32) math; fp32 data twice,
 * once restricted to FMA (CUDNN_FMA_MATH, engines without tensor-core notes: the like-for-like baseline of the
 * CUDA-core templates) and once with TF32 math (the fastest fp32 convolution cuDNN offers, checked with the tf32
 * tolerance). NHWC tensors are NHWC, the filter KRSC (CUDNN_TENSOR_NHWC for both). */
#ifndef CUTUNE_MEASURE_CUDNN_TYPES_H
#define CUTUNE_MEASURE_CUDNN_TYPES_H

#include "cutune/workload.h"

#include <stdint.h>

typedef struct cut_cudnn_types {
    int data_type;    /* cudnnDataType_t of x, w and y */
    int format;       /* cudnnTensorFormat_t of x, w and y */
    int math;         /* cudnnMathType_t of the legacy convolution descriptor */
    int tensor_cores; /* 1: algorithms and engines that use tensor cores are candidates */
    double tol_scale; /* >= 1: the factor on the work's tolerance (TF32 math on fp32 data), else 1 */
} cut_cudnn_types;

/* The description of c for the baseline column tf32_math (only fp32 data has two: 0 FMA, 1 TF32; other dtypes
 * ignore it). */
void cut_cudnn_conv_types(const cut_conv *c, int tf32_math, cut_cudnn_types *t);

/* 1 when an engine with these numerical notes (cudnnBackendNumericalNote_t values) may be a candidate of t: never
 * one that reduces in lower precision than fp32 (REDUCED_PRECISION_REDUCTION); without tensor cores none with the
 * TENSOR_CORE or DOWN_CONVERT_INPUTS notes. */
int cut_cudnn_notes_ok(const int *notes, int n, const cut_cudnn_types *t);

/* Dimensions (N, C, H, W order, as the graph API wants them) and strides of tensor which (0 x, 1 w, 2 y, 3 the
 * epilogue's bias: 1 x CO x 1 x 1) of c in its layout. */
void cut_cudnn_tensor_dims(const cut_conv *c, int which, int64_t dims[4], int64_t strides[4]);

/* ---- the fused epilogue (bias, bias_relu) ----
 *
 * cuDNN's legacy fused call, cudnnConvolutionBiasActivationForward, computes y = act(conv(x, w) + 0 * z + bias) in
 * one call: with CUDNN_ACTIVATION_RELU for any forward algorithm, with CUDNN_ACTIVATION_IDENTITY (bias alone) only
 * with IMPLICIT_PRECOMP_GEMM, as cuDNN documents. Elsewhere (and where cuDNN refuses the fused call for an
 * algorithm) the baseline is the unfused sequence, timed together as one run: cudnnConvolutionForward, then
 * cudnnAddTensor of the bias, then for bias_relu cudnnActivationForward (ReLU, in place). The graph API's engines
 * run the fused graph conv -> add bias -> ReLU (cudnn_engines.c). */
typedef enum cut_cudnn_epi_mode {
    CUT_CUDNN_EPI_NONE = 0, /* no epilogue: cudnnConvolutionForward */
    CUT_CUDNN_EPI_FUSED,    /* cudnnConvolutionBiasActivationForward with activation */
    CUT_CUDNN_EPI_UNFUSED,  /* the convolution, cudnnAddTensor, then (bias_relu) cudnnActivationForward */
} cut_cudnn_epi_mode;

typedef struct cut_cudnn_epi {
    cut_cudnn_epi_mode mode;
    int activation; /* cudnnActivationMode_t: of the fused call (RELU or IDENTITY), of the unfused ReLU step */
    int calls;      /* cuDNN calls in one run: 1 (none, fused), 2 (convolution, AddTensor), 3 (and Activation) */
} cut_cudnn_epi;

/* How forward algorithm algo (cudnnConvolutionFwdAlgo_t) serves c's epilogue: none without one; fused where the
 * fused call takes the algorithm, unless fused_refused (cuDNN refused that call for it at run time); else unfused. */
void cut_cudnn_epi_plan(const cut_conv *c, int algo, int fused_refused, cut_cudnn_epi *p);

/* 1 when a cuDNN status says that cuDNN refused the call before running anything (CUDNN_STATUS_BAD_PARAM and
 * CUDNN_STATUS_NOT_SUPPORTED with their sub-codes): the fused call's refusal of an algorithm, answered with the
 * unfused sequence. Execution and internal errors are not refusals. */
int cut_cudnn_status_refusal(int status);

/* The candidate's name in results and records: name itself without an epilogue; else name followed by
 * " [fused bias]", " [fused bias+relu]", " [unfused: conv, AddTensor]" or " [unfused: conv, AddTensor,
 * Activation]" (cut_cudnn_algo_fused in cutune/measure.h reads it back). Truncated to fit n. */
void cut_cudnn_epi_label(const char *name, const cut_conv *c, cut_cudnn_epi_mode mode, char *buf, size_t n);

/* The tolerance factor of the unfused sequence: the convolution's result is rounded to the output type before the
 * bias is added, one more rounding of a value of |y| + |bias| <= |y| + 1 (the bias is uniform in [-1, 1)): at most
 * half an ulp of the output type, e (2^-24 fp32 and tf32, 2^-11 fp16, 2^-8 bf16), so the bound widens by e in
 * atol and e in rtol. Returns the factor on c's tolerance that covers the candidate's own scale base (>= 1: TF32
 * math on fp32 data, cut_cudnn_conv_types) plus that: max(base + e / atol, base + e / rtol); base without an
 * epilogue. */
double cut_cudnn_unfused_tol_scale(const cut_conv *c, double base);

#endif
