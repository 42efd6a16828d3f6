/* cutune — the cuBLAS baseline, run inside the measurement worker (internal header; see cublas_baseline.c). */
#ifndef CUTUNE_MEASURE_CUBLAS_BASELINE_H
#define CUTUNE_MEASURE_CUBLAS_BASELINE_H

#include "measure/vendor_baseline.h"

#include <stddef.h>

/* worker.c: a slot where the cuBLAS code keeps its state across requests (freed by cut_cublas_state_free). */
void **cut_wk_cublas_slot(cut_wk *w);

/* Loads libcublas.so.13 ($CUTUNE_CUBLAS_LIB overrides) on first use and runs cublasSgemm with
 * CUBLAS_PEDANTIC_MATH on the prepared GEMM (row-major C = A·B or A·Bᵀ as the column-major Cᵀ = Bᵀ·Aᵀ), checked and
 * timed with cut_wk_check_and_time. best gets the result, algo "SGEMM_PEDANTIC_NN" / "_NT". Returns -1 for setup
 * errors (no GEMM prepared, dtype other than fp32, no cuBLAS, handle or math-mode errors; e set). *fatal = 1 when
 * the context died. */
int cut_cublas_baseline(cut_wk *w, cut_result *best, char *algo, size_t algo_len, int *fatal, cut_err *e);
/* The plain cuBLAS calls for the prepared GEMM's dtype, each checked, timed and recorded with cut_vendor_add: fp32
 * cublasSgemm (pedantic math) and cublasGemmEx (CUBLAS_COMPUTE_32F, default math); tf32 cublasGemmEx
 * (CUBLAS_COMPUTE_32F_FAST_TF32); fp16 / bf16 cublasGemmEx (CUDA_R_16F / CUDA_R_16BF inputs, CUDA_R_32F output,
 * CUBLAS_COMPUTE_32F). Returns -1 for setup errors (no cuBLAS; e set). *fatal = 1 when the context died. */
int cut_cublas_vendor(cut_wk *w, cut_vendor_acc *a, int *fatal, cut_err *e);
/* Destroys the cuBLAS handle kept in the slot (NULL is a no-op). */
void cut_cublas_state_free(void *state);

#endif
