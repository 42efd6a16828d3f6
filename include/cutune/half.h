/* cutune — fp16 and bf16 bit conversions and rounding of GEMM inputs to their dtype (pure C, no CUDA).
 *
 * fp16 is IEEE 754 binary16 (1 sign, 5 exponent, 10 mantissa bits; subnormals, inf, NaN); bf16 is the upper half
 * of an fp32 (1, 8, 7). float -> 16-bit conversions round to nearest, ties to even, as the CUDA intrinsics
 * __float2half_rn and __float2bfloat16_rn do; overflow gives inf, NaN stays a (quiet) NaN with the sign kept.
 * 16-bit -> float is exact. */
#ifndef CUTUNE_HALF_H
#define CUTUNE_HALF_H

#include "cutune/gemm.h"

#include <stddef.h>
#include <stdint.h>

uint16_t cut_f32_to_f16(float x);
float cut_f16_to_f32(uint16_t h);
uint16_t cut_f32_to_bf16(float x);
float cut_bf16_to_f32(uint16_t h);

/* Rounds n floats in place to the values dtype d can hold (fp16, bf16: round to nearest even; fp32 and tf32: left
 * alone, since tf32 rounding happens inside the tensor cores and is covered by the tolerance). */
void cut_dtype_round(cut_dtype d, float *x, size_t n);
/* Writes n floats in d's storage type to out (cut_dtype_size(d) * n bytes): 16-bit patterns for fp16/bf16 (round
 * to nearest even), the floats themselves for fp32/tf32. */
void cut_dtype_pack(cut_dtype d, const float *x, size_t n, void *out);

#endif
