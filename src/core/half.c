/* cutune — dtypes and fp16 / bf16 conversions (see cutune/half.h). */
#include "cutune/half.h"

#include <string.h>
#include <strings.h>

static const char *const dtype_names[CUT_DT_COUNT] = {"fp32", "tf32", "fp16", "bf16"};
static const size_t dtype_sizes[CUT_DT_COUNT] = {4, 4, 2, 2};

const char *cut_dtype_name(cut_dtype d) { return (unsigned)d < CUT_DT_COUNT ? dtype_names[d] : "unknown"; }

size_t cut_dtype_size(cut_dtype d) { return (unsigned)d < CUT_DT_COUNT ? dtype_sizes[d] : 0; }

int cut_dtype_parse(const char *s, cut_dtype *d, cut_err *e)
{
    for (int i = 0; i < CUT_DT_COUNT; i++)
        if (strcasecmp(s, dtype_names[i]) == 0) {
            *d = (cut_dtype)i;
            return 0;
        }
    return cut_err_set(e, "unknown dtype '%s': use fp32, tf32, fp16 or bf16", s);
}

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float bits_f32(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Shifts m right by s (s >= 1) rounding to nearest, ties to even. */
static uint32_t shift_rne(uint32_t m, unsigned s)
{
    if (s > 31)
        return 0;
    const uint32_t kept = m >> s, rest = m & ((1u << s) - 1u), half = 1u << (s - 1);
    return kept + (rest > half || (rest == half && (kept & 1u)));
}

uint16_t cut_f32_to_f16(float x)
{
    const uint32_t u = f32_bits(x);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t exp = (u >> 23) & 0xFFu, man = u & 0x7FFFFFu;
    if (exp == 0xFFu) /* inf, or NaN kept quiet with its top mantissa bits */
        return (uint16_t)(sign | 0x7C00u | (man ? 0x200u | (man >> 13) : 0u));
    const int e = (int)exp - 127 + 15; /* the binary16 biased exponent */
    if (e >= 31)
        return (uint16_t)(sign | 0x7C00u);
    if (e <= 0) {
        /* Subnormal (or zero) in binary16: the value is (1.man) * 2^(exp-127) = m * 2^-24 with m below 2^10; a
         * carry into bit 10 becomes the smallest normal, which the bit pattern expresses by itself. */
        if (exp == 0 || e < -10)
            return sign; /* fp32 subnormals and values below half the smallest fp16 subnormal */
        const uint32_t m = man | 0x800000u;
        return (uint16_t)(sign | shift_rne(m, (unsigned)(14 - e)));
    }
    /* Normal: keep 10 mantissa bits; a carry out of the mantissa bumps the exponent (to inf past 65504). */
    const uint32_t r = shift_rne(((uint32_t)e << 23) | man, 13);
    return (uint16_t)(sign | (r >= 0x7C00u ? 0x7C00u : r));
}

float cut_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
    if (exp == 0x1Fu)
        return bits_f32(sign | 0x7F800000u | (man << 13));
    if (exp == 0) {
        if (man == 0)
            return bits_f32(sign);
        /* subnormal: man * 2^-24, exact in fp32 */
        const float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

uint16_t cut_f32_to_bf16(float x)
{
    const uint32_t u = f32_bits(x);
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu)) /* NaN: quiet, sign kept */
        return (uint16_t)((u >> 16) | 0x40u);
    /* Round to nearest even on the low 16 bits; a carry may overflow into inf, which is correct. */
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

float cut_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

void cut_dtype_round(cut_dtype d, float *x, size_t n)
{
    if (d == CUT_DT_FP16)
        for (size_t i = 0; i < n; i++)
            x[i] = cut_f16_to_f32(cut_f32_to_f16(x[i]));
    else if (d == CUT_DT_BF16)
        for (size_t i = 0; i < n; i++)
            x[i] = cut_bf16_to_f32(cut_f32_to_bf16(x[i]));
}

void cut_dtype_pack(cut_dtype d, const float *x, size_t n, void *out)
{
    if (d == CUT_DT_FP16 || d == CUT_DT_BF16) {
        uint16_t *o = out;
        for (size_t i = 0; i < n; i++)
            o[i] = d == CUT_DT_FP16 ? cut_f32_to_f16(x[i]) : cut_f32_to_bf16(x[i]);
    } else if (n) {
        memcpy(out, x, n * sizeof(float));
    }
}
