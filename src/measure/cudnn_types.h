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

/* Dimensions (N, C, H, W order, as the graph API wants them) and strides of tensor which (0 x, 1 w, 2 y) of c in
 * its layout. */
void cut_cudnn_tensor_dims(const cut_conv *c, int which, int64_t dims[4], int64_t strides[4]);

#endif
