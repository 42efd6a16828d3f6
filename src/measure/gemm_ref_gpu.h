/* cutune — the GEMM reference computed on the GPU with cuBLAS DGEMM (internal; see gemm_ref_gpu.c). */
#ifndef CUTUNE_MEASURE_GEMM_REF_GPU_H
#define CUTUNE_MEASURE_GEMM_REF_GPU_H

#include "cutune/common.h"
#include "cutune/gemm.h"
#include "gpu/cuda_drv.h"

/* ref[M*N] = A·B (NN) or A·Bᵀ (NT) in fp64 from the float inputs (already rounded to the dtype), on the current
 * context's device. 0, or -1 with e set (no cuBLAS, out of device memory, a CUDA error). */
int cut_gemm_reference_gpu(const cut_cu_api *cu, const cut_gemm *g, const float *a, const float *b, double *ref,
                           cut_err *e);

#endif
