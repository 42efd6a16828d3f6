/* cutune — the conv reference (double precision, multi-threaded) and its tolerances (see cutune/workload.h). */
#include "cutune/workload.h"
#include "cutune/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reference convolution ---------------------------------------------------------------------------- */

/* Work is split into (image, output channel) planes; threads take planes from a shared counter. Each plane is
 * accumulated in double as out[oh][ow] += w[co][ci][kh][kw] * in[ci][oh*s+kh-p][ow*s+kw-p] with the valid
 * ow range computed up front, so the inner loop has no branches and vectorises (stride 1). */
typedef struct ref_job {
    const cut_conv *c;
    const float *in, *w;
    double *out;
    int oh, ow;
    long total; /* output planes (N x CO), handed out one at a time by cut_parallel_for */
} ref_job;

static void ref_plane(void *arg, long plane)
{
    const ref_job *j = arg;
    const cut_conv *c = j->c;
    const int n = (int)(plane / c->co), co = (int)(plane % c->co);
    const int OH = j->oh, OW = j->ow, S = c->stride, P = c->pad;
    double *o = j->out + (size_t)plane * OH * OW;
    memset(o, 0, sizeof(double) * (size_t)OH * OW);
    for (int ci = 0; ci < c->ci; ci++) {
        const float *ip = j->in + ((size_t)n * c->ci + ci) * c->h * c->w;
        const float *wp = j->w + ((size_t)co * c->ci + ci) * c->kh * c->kw;
        for (int kh = 0; kh < c->kh; kh++) {
            for (int kw = 0; kw < c->kw; kw++) {
                const double wv = wp[kh * c->kw + kw];
                /* ow range with 0 <= ow*S + kw - P < W */
                int ow0 = 0, ow1 = OW; /* [ow0, ow1) */
                if (kw - P < 0)
                    ow0 = (P - kw + S - 1) / S;
                int lim = c->w - kw + P; /* ow*S < lim */
                if (lim <= 0)
                    continue;
                ow1 = CUT_MIN(OW, (lim + S - 1) / S);
                if (ow0 >= ow1)
                    continue;
                for (int oh = 0; oh < OH; oh++) {
                    const int ih = oh * S + kh - P;
                    if (ih < 0 || ih >= c->h)
                        continue;
                    const float *row = ip + (size_t)ih * c->w;
                    double *orow = o + (size_t)oh * OW;
                    const int off = kw - P;
                    if (S == 1) {
                        for (int x = ow0; x < ow1; x++)
                            orow[x] += wv * (double)row[x + off];
                    } else {
                        for (int x = ow0; x < ow1; x++)
                            orow[x] += wv * (double)row[x * S + off];
                    }
                }
            }
        }
    }
}

static void ref_nchw(const cut_conv *c, const float *in, const float *w, double *out)
{
    ref_job j = {.c = c, .in = in, .w = w, .out = out, .oh = cut_conv_oh(c), .ow = cut_conv_ow(c)};
    j.total = (long)c->n * c->co;
    cut_parallel_for(j.total, (double)j.total * j.oh * j.ow * c->ci * c->kh * c->kw, ref_plane, &j);
}

/* [A][B][C] -> [A][C][B] for A groups of a B x C matrix: NHWC <-> NCHW of each image (B = H*W, C = channels, or
 * the reverse), KRSC -> KCRS of each filter. Element type by the caller's macro instantiation below. */
#define CUT_TRANSPOSE_GROUPS(name, T)                                                                              \
    static void name(const T *src, T *dst, size_t groups, size_t b, size_t cc)                                    \
    {                                                                                                              \
        for (size_t g = 0; g < groups; g++)                                                                        \
            for (size_t i = 0; i < b; i++)                                                                         \
                for (size_t k = 0; k < cc; k++)                                                                    \
                    dst[(g * cc + k) * b + i] = src[(g * b + i) * cc + k];                                         \
    }
CUT_TRANSPOSE_GROUPS(transpose_f, float)
CUT_TRANSPOSE_GROUPS(transpose_d, double)
#undef CUT_TRANSPOSE_GROUPS

/* NHWC: the NCHW reference on transposed copies (the reference is not timed; one code path stays the one tested
 * against every template since the first version). */
void cut_conv_reference(const cut_conv *c, const float *in, const float *w, double *out)
{
    if (c->layout != CUT_NHWC) {
        ref_nchw(c, in, w, out);
        return;
    }
    const size_t hw = (size_t)c->h * c->w, khw = (size_t)c->kh * c->kw;
    const size_t ohw = (size_t)cut_conv_oh(c) * cut_conv_ow(c);
    float *in_t = cut_xmalloc(cut_conv_in_elems(c) * sizeof *in_t);
    float *w_t = cut_xmalloc(cut_conv_w_elems(c) * sizeof *w_t);
    double *out_t = cut_xmalloc(cut_conv_out_elems(c) * sizeof *out_t);
    transpose_f(in, in_t, (size_t)c->n, hw, (size_t)c->ci);
    transpose_f(w, w_t, (size_t)c->co, khw, (size_t)c->ci);
    ref_nchw(c, in_t, w_t, out_t);
    transpose_d(out_t, out, (size_t)c->n, (size_t)c->co, ohw);
    free(in_t), free(w_t), free(out_t);
}

void cut_conv_reference_epilogue(const cut_conv *c, const float *bias, double *out)
{
    if (c->epilogue == CUT_EPI_NONE)
        return;
    const size_t ohw = (size_t)cut_conv_oh(c) * cut_conv_ow(c), n = cut_conv_out_elems(c);
    for (size_t i = 0; i < n; i++) {
        /* NHWC: co innermost; NCHW: planes of OH*OW per co */
        const size_t co = c->layout == CUT_NHWC ? i % (size_t)c->co : i / ohw % (size_t)c->co;
        const double y = out[i] + bias[co];
        out[i] = c->epilogue == CUT_EPI_BIAS_RELU && y < 0.0 ? 0.0 : y;
    }
}

/* ---- comparison --------------------------------------------------------------------------------------- */

/* Inputs are uniform in [-1, 1) (cut_work_pair), K = CI*KH*KW products per output, u = 2^-24.
 *
 * fp32 (FMA): each of the K fp32 adds rounds by at most u of the partial sum (<= K in size, ~sqrt(K) typically);
 * the errors of a random-sign sum grow like sqrt(K) * u * sqrt(K), so atol 4uK (1e-5 at least) and rtol
 * 32u*sqrt(K) bound it with room to spare (measured over every template since the first version).
 *
 * Tensor cores (tf32, fp16, bf16; mma.sync with fp32 accumulate): products of the (tf32-rounded or 16-bit) inputs
 * are exact in fp32, but the accumulation inside an mma aligns the addends to the largest exponent and truncates
 * rather than rounding to nearest, so each add may lose up to 2u instead of u: atol 8uK (twice fp32's).
 *   tf32: the inputs are stored as fp32 and rounded to tf32 (10 mantissa bits, nearest) by the kernel: each
 *     operand moves by at most 2^-11 of itself. A product a*b then errs by a*e_b + b*e_a, of variance
 *     2 * E[a^2] * E[b^2] * 2^-22 / 3 = 2^-22 * 2/27 for uniform inputs (std 0.27 * 2^-11); K independent terms:
 *     std 0.27 * 2^-11 * sqrt(K). atol adds 4 * 2^-11 * sqrt(K), ~15 standard deviations (the largest of ~10^7
 *     outputs is within 6). A wrong index moves an output by |a*b| ~ 0.25 per term, 2.9x atol at K = 4608.
 *     The output is fp32: rtol as fp32.
 *   fp16, bf16: the stored inputs are the reference's inputs (no input error). The output is rounded to the
 *     16-bit type both by the kernel (from its fp32 sum) and by the work (from the double reference): the two may
 *     fall on either side of a rounding boundary, one unit in the last place apart: rtol 2^-10 (fp16, 10 mantissa
 *     bits: an ulp is at most 2^-10 of the value) and 2^-7 (bf16). Near zero the ulp is absolute (fp16
 *     subnormals: 2^-24 <= atol).
 *
 * The epilogue (bias, bias_relu) adds the dtype-rounded bias (exact in the reference) to the fp32 sum: one more
 * fp32 rounding, u of the result, added to rtol; ReLU moves no error (max(y, 0) is 1-Lipschitz). */
void cut_conv_tolerance(const cut_conv *c, double *atol, double *rtol)
{
    const double u = 0x1.0p-24;
    const double k = (double)c->ci * c->kh * c->kw;
    *atol = CUT_MAX(4.0 * u * k, 1e-5);
    *rtol = CUT_MAX(32.0 * u * sqrt(k), 1e-5);
    switch (c->dtype) {
    case CUT_DT_TF32: *atol = 8.0 * u * k + 4.0 * 0x1.0p-11 * sqrt(k); break;
    case CUT_DT_FP16: *atol = CUT_MAX(8.0 * u * k, 1e-5), *rtol = 0x1.0p-10; break;
    case CUT_DT_BF16: *atol = CUT_MAX(8.0 * u * k, 1e-5), *rtol = 0x1.0p-7; break;
    default: break;
    }
    if (c->epilogue != CUT_EPI_NONE)
        *rtol += u;
}

void cut_conv_tolerance_scaled(const cut_conv *c, double scale, double *atol, double *rtol)
{
    cut_conv_tolerance(c, atol, rtol);
    if (isfinite(scale) && scale > 1.0) {
        *atol *= scale;
        *rtol *= scale;
    }
}

/* Winograd F(m x m, 3x3) (space/winograd.c has the matrices). Its rounding is not that of a sum of products: each
 * channel's contribution passes through the input and filter transforms (G has entries 1/3, 1/15 that round) and
 * the alpha^2 partial sums, of the size of the inputs times the transforms' norms, are combined by A^T with
 * cancellation (weights up to 8 x 8 for m = 4). So the error has a part per channel that does not shrink with the
 * reduction length like cut_conv_tolerance's 4*u*K assumes.
 * Measured, as the largest |err| / atol over all outputs, inputs and weights uniform in [-1, 1):
 *   m = 2: 0.07 / 0.17 / 0.09 at CI 1 / 5 / 32 (emulated kernel, 2 x 16 x 20 x 20 = 12,800 outputs each); at
 *          most 0.23 in a simulation of the kernel's arithmetic over 320,000 outputs for CI 1..512 (0.05 at CI 32
 *          and 512): within the plain tolerance, factor 1.
 *   m = 4: 0.54 / 0.84 / 1.00 / 0.82 / 0.59 / 0.48 at CI 1 / 3 / 5 / 8 / 32 / 64 (emulated kernel, 12,800
 *          outputs each, padding 1); the simulation over 320,000 outputs: 0.97 at CI 5, 0.84 at CI 8, 0.76
 *          at CI 32, 0.34 at CI 512 (and test_winograd measures CI 5, 32 and 512 on every run). On an H200
 *          (NVRTC, sm_90) over the seed-001 layers: 0.86 at 272x272, CI 32 (4.7 million outputs), 0.73 at
 *          68x68, CI 128, 0.62 at 34x34, CI 256; F(2x2) there: 0.08..0.12. Such maxima grow slowly with the
 *          number of outputs, so the plain tolerance would reject correct F(4x4) kernels now and then. Factor 4:
 *          the worst measured ratio becomes 0.25, and a wrong index (at least one product term, |x*w| ~ 0.25)
 *          still exceeds atol by ~50x at K = 4608 (atol 4.4e-3) and by ~6000x at CI 1 (atol 4e-5). */
double cut_tolerance_scale_winograd(int m) { return m >= 4 ? 4.0 : 1.0; }
