/* cutune — element types (dtypes), fp16 and bf16 bit conversions and rounding to a dtype (pure C, no CUDA).
 *
 * fp16 is IEEE 754 binary16 (1 sign, 5 exponent, 10 mantissa bits; subnormals, inf, NaN); bf16 is the upper half
 * of an fp32 (1, 8, 7). float -> 16-bit conversions round to nearest, ties to even, as the CUDA intrinsics
 * __float2half_rn and __float2bfloat16_rn do; overflow gives inf, NaN stays a (quiet) NaN with the sign kept.
 * 16-bit -> float is exact. */
#ifndef CUTUNE_HALF_H
#define CUTUNE_HALF_H

#include "cutune/common.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Input element types of the tuned kernels; accumulation and outputs stay fp32. */
typedef enum cut_dtype { CUT_DT_FP32 = 0, CUT_DT_TF32, CUT_DT_FP16, CUT_DT_BF16, CUT_DT_COUNT } cut_dtype;
/* "fp32", "tf32", "fp16", "bf16" ("unknown" outside the enum). */
const char *cut_dtype_name(cut_dtype d);
/* Case-insensitive; an unknown name is an error naming the four. */
int cut_dtype_parse(const char *s, cut_dtype *d, cut_err *e);
/* Bytes of one element (4, 4, 2, 2; 0 outside the enum). */
size_t cut_dtype_size(cut_dtype d);

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

#ifdef __cplusplus
}
#endif

#endif
