/* cutune — GEMM reference (double accumulation), relative error and tolerances (include/cutune/gemm.h). */
#include "cutune/gemm.h"
#include "cutune/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rows of C (over every batch) are handed out one at a time (cut_parallel_for), as cut_conv_reference does with
 * output planes. A's row i is contiguous for N* layouts and strided by M for T* layouts; it is gathered first. Then
 * B row-major K×N (NN, TN) is walked row by row (c_row += a[k] * b[k][.], contiguous, vectorises), and B N×K (NT,
 * TT) by dot products of two contiguous rows. */
typedef struct gemm_ref_job {
    const cut_gemm *g;
    const float *a, *b;
    double *c;
} gemm_ref_job;

/* Row i of op(A) of batch z into arow (K doubles, scaled by alpha so the product needs no further pass). */
static void ref_a_row(const gemm_ref_job *j, int z, int i, double *arow)
{
    const cut_gemm *g = j->g;
    const float *a = j->a + cut_gemm_stride(g, 'A') * (size_t)z;
    const double alpha = cut_gemm_alpha(g);
    const int t = cut_gemm_a_trans(g);
    for (int p = 0; p < g->k; p++)
        arow[p] = alpha * (double)a[t ? (size_t)p * g->m + i : (size_t)i * g->k + p];
}

static void ref_row(void *arg, long row)
{
    const gemm_ref_job *j = arg;
    const cut_gemm *g = j->g;
    const int n = g->n, k = g->k, z = (int)(row / g->m), i = (int)(row % g->m);
    const float *b = j->b + cut_gemm_stride(g, 'B') * (size_t)z;
    double *crow = j->c + (size_t)row * n, *arow = cut_xmalloc((size_t)k * sizeof *arow);
    ref_a_row(j, z, i, arow);
    if (cut_gemm_b_trans(g)) {
        for (int x = 0; x < n; x++) {
            const float *brow = b + (size_t)x * k;
            double s = 0.0;
            for (int p = 0; p < k; p++)
                s += arow[p] * (double)brow[p];
            crow[x] = s;
        }
    } else {
        memset(crow, 0, sizeof(double) * (size_t)n);
        for (int p = 0; p < k; p++) {
            const double av = arow[p];
            const float *brow = b + (size_t)p * n;
            for (int x = 0; x < n; x++)
                crow[x] += av * (double)brow[x];
        }
    }
    free(arow);
}

void cut_gemm_reference(const cut_gemm *g, const float *a, const float *b, double *c)
{
    gemm_ref_job j = {.g = g, .a = a, .b = b, .c = c};
    const long rows = (long)g->m * cut_gemm_batch(g);
    cut_parallel_for(rows, (double)rows * g->n * g->k, ref_row, &j);
}

void cut_gemm_reference_beta(const cut_gemm *g, const float *cin, double *c)
{
    const double beta = cut_gemm_beta(g);
    if (beta == 0.0 || !cin)
        return;
    const size_t n = cut_gemm_c_elems(g);
    for (size_t i = 0; i < n; i++)
        c[i] += beta * (double)cin[i];
}

int cut_gemm_cin_buf(const cut_gemm *g) { return cut_gemm_beta(g) != 0.0 ? 3 : -1; }

const float *cut_gemm_work_cin(const cut_gemm *g, const cut_work *w, int s)
{
    const int i = cut_gemm_cin_buf(g);
    return i >= 0 && i < w->nbufs ? w->bufs[i].data[s] : NULL;
}

double cut_gemm_rel_error(const float *out, const double *ref, size_t n)
{
    double diff2 = 0.0, ref2 = 0.0, out2 = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(out[i]) || !isfinite(ref[i]))
            return INFINITY;
        const double d = (double)out[i] - ref[i];
        diff2 += d * d;
        ref2 += ref[i] * ref[i];
        out2 += (double)out[i] * out[i];
    }
    if (ref2 == 0.0)
        return sqrt(out2);
    return sqrt(diff2 / ref2);
}

double cut_gemm_tolerance(cut_dtype d)
{
    switch (d) {
    case CUT_DT_FP32: return 1e-5;
    case CUT_DT_TF32: return 2e-3;
    case CUT_DT_FP16:
    case CUT_DT_BF16: return 1e-2;
    default: return 0.0;
    }
}
