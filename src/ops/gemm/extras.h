/* cutune — issue 21's workload extras (strided batch, alpha/beta, A stored K×M, serial split-K) as the SIMT and mma
 * GEMM kernels see them: one set of #defines and one text of macros, so every template reads them alike. */
#ifndef CUTUNE_GEMM_EXTRAS_H
#define CUTUNE_GEMM_EXTRAS_H

#include "cutune/gemm.h"
#include "cutune/util.h"

/* #define LAYOUT_TA (A stored K×M), BATCH, STRIDE_A/B/C (elements), HAS_BETA, ALPHA, BETA (float literals),
 * SPLITK (k slices per output tile; 1 for templates without split-K). */
void cut_gemm_emit_extras(cut_buf *b, const cut_gemm *g, int splitk);

/* After the #defines: CIN_PARAM (", const float *Cin" when beta != 0, else nothing) for the kernel's parameter list;
 * BATCH_SLICE() (in the kernel's body: z, the batch, and slice, the k slice, from blockIdx.z = z * SPLITK + slice,
 * and A, B, C, Cin moved to batch z); EPI(v, i), the value to store at C[i] for the accumulated sum v: alpha·v,
 * plus beta·Cin[i] (beta != 0; Cin is never read otherwise), or under split-K for slices after the first plus what
 * the earlier slices left in C[i]. */
extern const char cut_gemm_extras_text[];

/* The kernel arguments a GEMM of g passes after A, B and C (cut_kernel_src.extra_bufs): 1 (Cin) when beta != 0. */
int cut_gemm_extra_bufs(const cut_gemm *g);

#endif
