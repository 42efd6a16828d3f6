/* fp16 / bf16 conversions (cutune/half.h): every fp16 and bf16 bit pattern round-trips through float; midpoints
 * between neighbours round to the even one and a float ulp either side rounds to the nearer; overflow, underflow,
 * subnormals, signed zeros, inf and NaN; random floats against a brute-force nearest search (and against the
 * compiler's _Float16 where it has one); cut_dtype_round / cut_dtype_pack. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/half.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static uint32_t bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static void test_f16_roundtrip_all(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        const float f = cut_f16_to_f32((uint16_t)h);
        const int is_nan = ((h >> 10) & 0x1F) == 0x1F && (h & 0x3FF);
        if (is_nan) {
            assert_true(isnan(f));
            const uint16_t back = cut_f32_to_f16(f);
            assert_true(((back >> 10) & 0x1F) == 0x1F && (back & 0x3FF) && (back & 0x8000) == (h & 0x8000));
            continue;
        }
        if (cut_f32_to_f16(f) != h)
            fail_msg("fp16 0x%04x -> %a -> 0x%04x", h, (double)f, cut_f32_to_f16(f));
    }
    assert_true(cut_f16_to_f32(0x3C00) == 1.0f);
    assert_true(cut_f16_to_f32(0x7BFF) == 65504.0f);
    assert_true(cut_f16_to_f32(0x0001) == 0x1p-24f);
    assert_true(cut_f16_to_f32(0x0400) == 0x1p-14f);
    assert_true(isinf(cut_f16_to_f32(0x7C00)) && cut_f16_to_f32(0xFC00) < 0);
    assert_true(signbit(cut_f16_to_f32(0x8000)) && cut_f16_to_f32(0x8000) == 0.0f);
}

/* Midpoints between consecutive finite fp16 values of one sign tie to the even pattern; one float ulp either side
 * goes to the nearer one. */
static void test_f16_ties(void **state)
{
    (void)state;
    for (uint32_t s = 0; s < 2; s++) {
        for (uint32_t h = 0; h < 0x7BFF; h++) {
            const uint16_t lo = (uint16_t)(h | s << 15), hi = (uint16_t)((h + 1) | s << 15);
            const double a = cut_f16_to_f32(lo), b = cut_f16_to_f32(hi);
            const float mid = (float)(0.5 * (a + b)); /* exact: 12 significant bits */
            assert_true((double)mid == 0.5 * (a + b));
            const uint16_t even = (lo & 1) ? hi : lo;
            if (cut_f32_to_f16(mid) != even)
                fail_msg("tie %a: got 0x%04x want 0x%04x", (double)mid, cut_f32_to_f16(mid), even);
            const float below = from_bits(bits(mid) - 1), above = from_bits(bits(mid) + 1); /* |.| smaller/larger */
            assert_int_equal(cut_f32_to_f16(below), lo);
            assert_int_equal(cut_f32_to_f16(above), hi);
        }
    }
    /* Past the largest finite value: below the midpoint to 65536 stays 65504, from it on is inf. */
    assert_int_equal(cut_f32_to_f16(65519.0f), 0x7BFF);
    assert_int_equal(cut_f32_to_f16(65520.0f), 0x7C00);
    assert_int_equal(cut_f32_to_f16(-1e30f), 0xFC00);
    assert_int_equal(cut_f32_to_f16(INFINITY), 0x7C00);
    /* Underflow: half the smallest subnormal ties to zero; just above it is the smallest subnormal. */
    assert_int_equal(cut_f32_to_f16(0x1p-25f), 0x0000);
    assert_int_equal(cut_f32_to_f16(from_bits(bits(0x1p-25f) + 1)), 0x0001);
    assert_int_equal(cut_f32_to_f16(-0x1p-26f), 0x8000);
    assert_int_equal(cut_f32_to_f16(1e-45f), 0x0000); /* an fp32 subnormal */
    assert_int_equal(cut_f32_to_f16(-0.0f), 0x8000);
    /* The largest subnormal rounding up into the smallest normal. */
    assert_int_equal(cut_f32_to_f16(0x1p-14f - 0x1p-26f), 0x0400);
    const uint16_t n = cut_f32_to_f16(NAN);
    assert_true((n & 0x7C00) == 0x7C00 && (n & 0x3FF));
}

/* The nearest fp16 by search over the sorted non-negative finite patterns (ties to even), or inf. */
static uint16_t nearest_f16(float x)
{
    const double ax = fabs((double)x);
    uint16_t best = 0;
    double bd = INFINITY;
    uint32_t lo = 0, hi = 0x7BFF;
    while (lo < hi) { /* first pattern >= ax */
        uint32_t mid = (lo + hi) / 2;
        if (cut_f16_to_f32((uint16_t)mid) < ax)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint32_t c = lo ? lo - 1 : 0; c <= CUT_MIN(lo + 1, 0x7BFFu); c++) {
        const double d = fabs(cut_f16_to_f32((uint16_t)c) - ax);
        if (d < bd || (d == bd && !(c & 1))) {
            bd = d;
            best = (uint16_t)c;
        }
    }
    if (ax >= 65520.0)
        best = 0x7C00;
    return (uint16_t)(best | (signbit(x) ? 0x8000 : 0));
}

static void test_f16_random(void **state)
{
    (void)state;
    cut_rng r;
    cut_rng_seed(&r, 7);
    for (int i = 0; i < 200000; i++) {
        /* exponents around fp16's range, random mantissas and signs */
        const uint32_t e = 100 + cut_rng_below(&r, 45), m = (uint32_t)cut_rng_next(&r) & 0x7FFFFF;
        const float x = from_bits((uint32_t)(cut_rng_next(&r) & 1) << 31 | e << 23 | m);
        const uint16_t got = cut_f32_to_f16(x), want = nearest_f16(x);
        if (got != want)
            fail_msg("%a: got 0x%04x want 0x%04x", (double)x, got, want);
#ifdef __FLT16_MAX__
        const _Float16 hv = (_Float16)x;
        uint16_t hb;
        memcpy(&hb, &hv, 2);
        assert_int_equal(got, hb);
#endif
    }
}

static void test_bf16(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        const float f = cut_bf16_to_f32((uint16_t)h);
        assert_int_equal(bits(f), h << 16);
        if (isnan(f))
            assert_true(isnan(cut_bf16_to_f32(cut_f32_to_bf16(f))));
        else
            assert_int_equal(cut_f32_to_bf16(f), h);
    }
    /* ties to even, and one ulp either side */
    assert_int_equal(cut_f32_to_bf16(from_bits(0x3F808000u)), 0x3F80); /* tie, even below */
    assert_int_equal(cut_f32_to_bf16(from_bits(0x3F818000u)), 0x3F82); /* tie, even above */
    assert_int_equal(cut_f32_to_bf16(from_bits(0x3F808001u)), 0x3F81);
    assert_int_equal(cut_f32_to_bf16(from_bits(0x3F807FFFu)), 0x3F80);
    assert_int_equal(cut_f32_to_bf16(from_bits(0xBF818000u)), 0xBF82);
    assert_int_equal(cut_f32_to_bf16(from_bits(0x7F7FFFFFu)), 0x7F80); /* rounds up to inf */
    assert_int_equal(cut_f32_to_bf16(INFINITY), 0x7F80);
    const uint16_t n = cut_f32_to_bf16(from_bits(0x7F800001u)); /* a NaN whose payload is only in the low bits */
    assert_true((n & 0x7F80) == 0x7F80 && (n & 0x7F));
    cut_rng r;
    cut_rng_seed(&r, 9);
    for (int i = 0; i < 100000; i++) {
        const uint32_t u = (uint32_t)cut_rng_next(&r);
        if ((u & 0x7F800000u) == 0x7F800000u)
            continue;
        const uint16_t got = cut_f32_to_bf16(from_bits(u));
        const uint32_t lo = u & 0xFFFF0000u, rest = u & 0xFFFFu;
        uint32_t want = lo >> 16;
        if (rest > 0x8000u || (rest == 0x8000u && (want & 1)))
            want++;
        assert_int_equal(got, want);
    }
}

static void test_dtype_round_pack(void **state)
{
    (void)state;
    float x[4] = {1.0f + 0x1p-12f, 0.1f, -3.0f, 1e-9f};
    float y[4];
    memcpy(y, x, sizeof x);
    cut_dtype_round(CUT_DT_FP32, y, 4);
    assert_memory_equal(x, y, sizeof x);
    cut_dtype_round(CUT_DT_TF32, y, 4);
    assert_memory_equal(x, y, sizeof x);
    cut_dtype_round(CUT_DT_FP16, y, 4);
    assert_true(y[0] == 1.0f && y[2] == -3.0f && y[3] == 0.0f && y[1] == cut_f16_to_f32(cut_f32_to_f16(0.1f)));
    uint16_t h[4];
    cut_dtype_pack(CUT_DT_FP16, x, 4, h);
    for (int i = 0; i < 4; i++)
        assert_true(cut_f16_to_f32(h[i]) == y[i]);
    memcpy(y, x, sizeof x);
    cut_dtype_round(CUT_DT_BF16, y, 4);
    cut_dtype_pack(CUT_DT_BF16, x, 4, h);
    for (int i = 0; i < 4; i++)
        assert_true(cut_bf16_to_f32(h[i]) == y[i]);
    float f[4];
    cut_dtype_pack(CUT_DT_TF32, x, 4, f);
    assert_memory_equal(f, x, sizeof x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_roundtrip_all), cmocka_unit_test(test_f16_ties), cmocka_unit_test(test_f16_random),
        cmocka_unit_test(test_bf16),              cmocka_unit_test(test_dtype_round_pack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
