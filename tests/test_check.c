/* Tests of the CPU-side checking helpers (src/measure/check.c): reference convolution on hand-worked cases and
 * against an independent naive loop, comparison, tolerance (correct orders pass, wrong indices fail), inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/measure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cut_conv mk(int n, int h, int w, int co, int ci, int kh, int kw, int s, int p)
{
    cut_conv c = {n, h, w, co, ci, kh, kw, s, p};
    return c;
}

static void test_timing_default(void **state)
{
    (void)state;
    cut_timing t;
    memset(&t, 0xff, sizeof t);
    cut_timing_default(&t);
    assert_int_equal(t.warmup, 2);
    assert_int_equal(t.min_repeats, 5);
    assert_int_equal(t.max_repeats, 200);
    assert_true(t.min_total_ms == 20.0);
    assert_int_equal(t.flush_l2, 1);
    assert_true(t.timeout_s == 10.0);
}

static int destroyed;
static void fake_destroy(cut_runner *r)
{
    destroyed++;
    free(r);
}

static void test_runner_free(void **state)
{
    (void)state;
    cut_runner_free(NULL); /* no-op */
    cut_runner *r = calloc(1, sizeof *r);
    r->destroy = fake_destroy;
    destroyed = 0;
    cut_runner_free(r);
    assert_int_equal(destroyed, 1);
}

static void test_fill_uniform(void **state)
{
    (void)state;
    enum { N = 100000 };
    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *c = malloc(N * sizeof *c);
    cut_fill_uniform(a, N, 42);
    cut_fill_uniform(b, N, 42);
    cut_fill_uniform(c, N, 43);
    assert_memory_equal(a, b, N * sizeof *a);
    int differ = 0, neg = 0;
    double sum = 0, sumsq = 0;
    for (int i = 0; i < N; i++) {
        assert_true(a[i] >= -1.0f && a[i] < 1.0f);
        differ += a[i] != c[i];
        neg += a[i] < 0;
        sum += a[i];
        sumsq += (double)a[i] * a[i];
    }
    assert_true(differ > N - 100);
    assert_true(fabs(sum / N) < 0.02);             /* mean 0 */
    assert_true(fabs(sumsq / N - 1.0 / 3) < 0.01); /* variance 1/3 */
    assert_true(neg > N * 0.48 && neg < N * 0.52);
    free(a);
    free(b);
    free(c);
}

/* 1x1 kernel: every output channel is a scaled copy of the input. */
static void test_ref_1x1_scaled_copy(void **state)
{
    (void)state;
    cut_conv c = mk(1, 2, 3, 2, 1, 1, 1, 1, 0);
    float in[6] = {1, 2, 3, 4, 5, 6}, w[2] = {2.0f, -0.5f};
    double out[12];
    cut_conv_reference(&c, in, w, out);
    for (int i = 0; i < 6; i++) {
        assert_true(out[i] == 2.0 * in[i]);
        assert_true(out[6 + i] == -0.5 * in[i]);
    }
}

/* 3x3 ones over a 3x3 ones image, pad 1: each output counts the in-bounds taps. */
static void test_ref_padding(void **state)
{
    (void)state;
    cut_conv c = mk(1, 3, 3, 1, 1, 3, 3, 1, 1);
    float in[9], w[9];
    for (int i = 0; i < 9; i++)
        in[i] = w[i] = 1.0f;
    double out[9];
    cut_conv_reference(&c, in, w, out);
    const double want[9] = {4, 6, 4, 6, 9, 6, 4, 6, 4};
    for (int i = 0; i < 9; i++)
        assert_true(out[i] == want[i]);
}

/* Stride 2, no padding: 2x2 diagonal kernel over 0..15. */
static void test_ref_stride2(void **state)
{
    (void)state;
    cut_conv c = mk(1, 4, 4, 1, 1, 2, 2, 2, 0);
    float in[16], w[4] = {1, 0, 0, 1};
    for (int i = 0; i < 16; i++)
        in[i] = (float)i;
    double out[4];
    cut_conv_reference(&c, in, w, out);
    /* out[0][0] = in[0][0]+in[1][1] = 0+5; [0][1] = 2+7; [1][0] = 8+13; [1][1] = 10+15 */
    assert_true(out[0] == 5 && out[1] == 9 && out[2] == 21 && out[3] == 25);
}

/* Stride 2 with padding 1: only the top-left (1) and bottom-right (10) taps are set.
 * out[oh][ow] = in[2oh-1][2ow-1] + 10*in[2oh+1][2ow+1] (zero outside). */
static void test_ref_stride2_pad(void **state)
{
    (void)state;
    cut_conv c = mk(1, 4, 4, 1, 1, 3, 3, 2, 1);
    assert_int_equal(cut_conv_oh(&c), 2);
    float in[16], w[9] = {1, 0, 0, 0, 0, 0, 0, 0, 10};
    for (int i = 0; i < 16; i++)
        in[i] = (float)i;
    double out[4];
    cut_conv_reference(&c, in, w, out);
    assert_true(out[0] == 50);  /* 10*in[1][1] */
    assert_true(out[1] == 70);  /* 10*in[1][3] */
    assert_true(out[2] == 130); /* 10*in[3][1] */
    assert_true(out[3] == 155); /* in[1][1] + 10*in[3][3] */
}

/* Channels and batch: two input channels summed, per output channel weights, two images. */
static void test_ref_channels_batch(void **state)
{
    (void)state;
    cut_conv c = mk(2, 1, 2, 2, 2, 1, 1, 1, 0);
    /* in[n][ci][0][x] */
    float in[8] = {1, 2, /* n0 c0 */ 10, 20, /* n0 c1 */ 3, 4, /* n1 c0 */ 30, 40 /* n1 c1 */};
    float w[4] = {1, 1, /* co0: c0 + c1 */ 2, -1 /* co1: 2c0 - c1 */};
    double out[8];
    cut_conv_reference(&c, in, w, out);
    const double want[8] = {11, 22, -8, -16, 33, 44, -24, -32};
    for (int i = 0; i < 8; i++)
        assert_true(out[i] == want[i]);
}

/* Independent straightforward loop nest, used to check the optimised reference on odd shapes. */
static void naive_conv(const cut_conv *c, const float *in, const float *w, double *out)
{
    int OH = cut_conv_oh(c), OW = cut_conv_ow(c);
    for (int n = 0; n < c->n; n++)
        for (int co = 0; co < c->co; co++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double s = 0;
                    for (int ci = 0; ci < c->ci; ci++)
                        for (int kh = 0; kh < c->kh; kh++)
                            for (int kw = 0; kw < c->kw; kw++) {
                                int ih = oh * c->stride - c->pad + kh, iw = ow * c->stride - c->pad + kw;
                                if (ih < 0 || iw < 0 || ih >= c->h || iw >= c->w)
                                    continue;
                                s += (double)in[((n * c->ci + ci) * c->h + ih) * c->w + iw] *
                                     w[((co * c->ci + ci) * c->kh + kh) * c->kw + kw];
                            }
                    out[((n * c->co + co) * OH + oh) * OW + ow] = s;
                }
}

static void test_ref_matches_naive(void **state)
{
    (void)state;
    const cut_conv cases[] = {
        mk(2, 13, 9, 5, 3, 3, 5, 1, 2),   mk(1, 11, 11, 4, 2, 3, 3, 2, 1), mk(1, 10, 7, 3, 4, 4, 2, 3, 0),
        mk(3, 8, 8, 6, 5, 1, 1, 2, 0),    mk(1, 5, 5, 2, 2, 7, 7, 1, 3),   mk(1, 3, 3, 2, 1, 3, 3, 1, 4),
        mk(2, 40, 40, 32, 16, 3, 3, 1, 1), /* large enough for the multi-threaded path */
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        const cut_conv *c = &cases[t];
        size_t ni = (size_t)c->n * c->ci * c->h * c->w, nw = (size_t)c->co * c->ci * c->kh * c->kw;
        size_t no = (size_t)c->n * c->co * cut_conv_oh(c) * cut_conv_ow(c);
        float *in = malloc(ni * sizeof *in), *w = malloc(nw * sizeof *w);
        double *a = malloc(no * sizeof *a), *b = malloc(no * sizeof *b);
        cut_fill_uniform(in, ni, 7 + t);
        cut_fill_uniform(w, nw, 100 + t);
        cut_conv_reference(c, in, w, a);
        naive_conv(c, in, w, b);
        for (size_t i = 0; i < no; i++)
            if (fabs(a[i] - b[i]) > 1e-12) {
                fail_msg("case %zu idx %zu: %.17g vs %.17g", t, i, a[i], b[i]);
            }
        free(in);
        free(w);
        free(a);
        free(b);
    }
}

static void test_compare(void **state)
{
    (void)state;
    enum { N = 10 };
    double ref[N];
    float out[N];
    for (int i = 0; i < N; i++) {
        ref[i] = 1.25 * (i + 1);
        out[i] = (float)ref[i];
    }
    char msg[256];
    double maxe = -1;
    assert_int_equal(cut_compare(out, ref, N, 1e-5, 1e-5, &maxe, msg, sizeof msg), 0);
    assert_true(maxe == 0.0);
    assert_string_equal(msg, "");

    /* rounding-level noise passes */
    for (int i = 0; i < N; i++)
        out[i] = nextafterf((float)ref[i], 1e9f);
    assert_int_equal(cut_compare(out, ref, N, 1e-5, 1e-5, &maxe, msg, sizeof msg), 0);
    assert_true(maxe > 0 && maxe < 1e-5);

    /* NaN, +Inf, -Inf and an offset fail; only the first three are written */
    for (int i = 0; i < N; i++)
        out[i] = (float)ref[i];
    out[1] = NAN;
    out[3] = INFINITY;
    out[5] = -INFINITY;
    out[7] = 1.5f; /* want 10 */
    assert_int_equal(cut_compare(out, ref, N, 1e-5, 1e-5, &maxe, msg, sizeof msg), 4);
    assert_true(isinf(maxe));
    assert_non_null(strstr(msg, "idx 1: got nan want 2.5"));
    assert_non_null(strstr(msg, "idx 3: got inf want 5"));
    assert_non_null(strstr(msg, "idx 5: got -inf want 7.5"));
    assert_null(strstr(msg, "idx 7"));

    /* offset error alone; rtol is relative to |ref| */
    for (int i = 0; i < N; i++)
        out[i] = (float)ref[i];
    out[0] = 1.5f; /* want 1.25 */
    assert_int_equal(cut_compare(out, ref, N, 1e-3, 1e-3, &maxe, msg, sizeof msg), 1);
    assert_string_equal(msg, "idx 0: got 1.5 want 1.25");
    assert_true(fabs(maxe - 0.25) < 1e-12);
    assert_int_equal(cut_compare(out, ref, N, 0.0, 0.25, &maxe, msg, sizeof msg), 0); /* 0.25 <= 0.25*1.25 */
    assert_int_equal(cut_compare(out, ref, N, 0.25, 0.0, &maxe, msg, sizeof msg), 0);
    assert_int_equal(cut_compare(out, ref, N, 0.2, 0.0, &maxe, msg, sizeof msg), 1);

    /* tiny buffer and NULL outputs are safe */
    char small[8];
    assert_int_equal(cut_compare(out, ref, N, 0, 0, NULL, small, sizeof small), 1);
    assert_int_equal(strlen(small), 7);
    assert_int_equal(cut_compare(out, ref, N, 0, 0, NULL, NULL, 0), 1);
}

/* Sums of K products in fp32 in various orders a correct kernel might use. */
enum { ORD_SEQ, ORD_SEQ_FMA, ORD_REV, ORD_PAIRWISE, ORD_BLOCKED, ORD_COUNT };

static float pairwise(const float *p, int n)
{
    if (n == 1)
        return p[0];
    int h = n / 2;
    return pairwise(p, h) + pairwise(p + h, n - h);
}

static float sum_order(const float *x, const float *w, int k, int order, float *prod)
{
    float s = 0.0f;
    switch (order) {
    case ORD_SEQ:
        for (int i = 0; i < k; i++) {
            volatile float p = x[i] * w[i]; /* rounded product, no contraction */
            s += p;
        }
        return s;
    case ORD_SEQ_FMA:
        for (int i = 0; i < k; i++)
            s = fmaf(x[i], w[i], s);
        return s;
    case ORD_REV:
        for (int i = k - 1; i >= 0; i--)
            s = fmaf(x[i], w[i], s);
        return s;
    case ORD_PAIRWISE:
        for (int i = 0; i < k; i++)
            prod[i] = x[i] * w[i];
        return pairwise(prod, k);
    default: { /* split-K: 4 interleaved partial sums of chunks of 9 (a 3x3 window per channel) */
        float part[4] = {0, 0, 0, 0};
        for (int i = 0; i < k; i++)
            part[(i / 9) % 4] = fmaf(x[i], w[i], part[(i / 9) % 4]);
        return (part[0] + part[1]) + (part[2] + part[3]);
    }
    }
}

/* Every realistic summation order stays well inside the tolerance (worst element below atol/2 over a few
 * thousand outputs), while dropping, duplicating or shifting one term is caught. */
static void test_tolerance(void **state)
{
    (void)state;
    const int chans[] = {3, 64, 512, 1024};
    for (size_t t = 0; t < sizeof chans / sizeof chans[0]; t++) {
        cut_conv c = mk(1, 8, 8, 8, chans[t], 3, 3, 1, 1);
        int k = c.ci * 9;
        double atol, rtol;
        cut_conv_tolerance(&c, &atol, &rtol);
        assert_true(atol > 0 && rtol > 0);
        int outputs = k > 5000 ? 800 : 2000;
        float *x = malloc((size_t)(k + 1) * sizeof *x), *w = malloc((size_t)(k + 1) * sizeof *w);
        float *prod = malloc((size_t)k * sizeof *prod);
        double worst[ORD_COUNT] = {0};
        int caught_drop = 0, caught_shift = 0;
        for (int o = 0; o < outputs; o++) {
            cut_fill_uniform(x, (size_t)k + 1, 1000 + o);
            cut_fill_uniform(w, (size_t)k + 1, 5000 + o);
            double ref = 0;
            for (int i = 0; i < k; i++)
                ref += (double)x[i] * w[i];
            for (int ord = 0; ord < ORD_COUNT; ord++) {
                double err = fabs((double)sum_order(x, w, k, ord, prod) - ref);
                if (err > worst[ord])
                    worst[ord] = err;
                float got = sum_order(x, w, k, ord, prod);
                assert_true(fabs((double)got - ref) <= atol + rtol * fabs(ref));
            }
            /* wrong index: one term dropped, or the input read one element off */
            float dropped = sum_order(x, w, k - 1, ORD_SEQ_FMA, prod);
            float shifted = sum_order(x + 1, w, k, ORD_SEQ_FMA, prod);
            caught_drop += fabs((double)dropped - ref) > atol + rtol * fabs(ref);
            caught_shift += fabs((double)shifted - ref) > atol + rtol * fabs(ref);
        }
        for (int ord = 0; ord < ORD_COUNT; ord++)
            if (worst[ord] > atol / 2)
                fail_msg("K=%d order %d: worst error %.3g above atol/2 = %.3g", k, ord, worst[ord], atol / 2);
        printf("K=%-5d atol %.3g rtol %.3g worst seq %.3g fma %.3g rev %.3g pairwise %.3g split %.3g; "
               "one dropped term caught %d/%d, shift caught %d/%d\n",
               k, atol, rtol, worst[0], worst[1], worst[2], worst[3], worst[4], caught_drop, outputs,
               caught_shift, outputs);
        /* |x*w| < 1e-3 for a dropped term happens rarely; a shift changes the whole sum. */
        assert_true(caught_drop > outputs * 9 / 10);
        assert_true(caught_shift > outputs * 99 / 100);
        free(x);
        free(w);
        free(prod);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timing_default),     cmocka_unit_test(test_runner_free),
        cmocka_unit_test(test_fill_uniform),       cmocka_unit_test(test_ref_1x1_scaled_copy),
        cmocka_unit_test(test_ref_padding),        cmocka_unit_test(test_ref_stride2),
        cmocka_unit_test(test_ref_stride2_pad),    cmocka_unit_test(test_ref_channels_batch),
        cmocka_unit_test(test_ref_matches_naive),  cmocka_unit_test(test_compare),
        cmocka_unit_test(test_tolerance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
