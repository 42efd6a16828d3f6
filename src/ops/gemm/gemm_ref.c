/* cutune — GEMM reference (double accumulation), relative error and tolerances (include/cutune/gemm.h). */
#include "cutune/gemm.h"
#include "cutune/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rows of C are handed out one at a time (cut_parallel_for), as cut_conv_reference does with output planes. NN walks
 * B row by row (c_row += a[i][k] * b[k][.], contiguous, vectorises); NT takes dot products of two contiguous
 * rows. */
typedef struct gemm_ref_job {
    const cut_gemm *g;
    const float *a, *b;
    double *c;
} gemm_ref_job;

static void ref_row_nn(const gemm_ref_job *j, int i)
{
    const int n = j->g->n, k = j->g->k;
    double *crow = j->c + (size_t)i * n;
    memset(crow, 0, sizeof(double) * (size_t)n);
    for (int p = 0; p < k; p++) {
        const double av = j->a[(size_t)i * k + p];
        const float *brow = j->b + (size_t)p * n;
        for (int x = 0; x < n; x++)
            crow[x] += av * (double)brow[x];
    }
}

static void ref_row_nt(const gemm_ref_job *j, int i)
{
    const int n = j->g->n, k = j->g->k;
    const float *arow = j->a + (size_t)i * k;
    for (int x = 0; x < n; x++) {
        const float *brow = j->b + (size_t)x * k;
        double s = 0.0;
        for (int p = 0; p < k; p++)
            s += (double)arow[p] * (double)brow[p];
        j->c[(size_t)i * n + x] = s;
    }
}

static void ref_row(void *arg, long i)
{
    const gemm_ref_job *j = arg;
    if (j->g->layout == CUT_GEMM_NT)
        ref_row_nt(j, (int)i);
    else
        ref_row_nn(j, (int)i);
}

void cut_gemm_reference(const cut_gemm *g, const float *a, const float *b, double *c)
{
    gemm_ref_job j = {.g = g, .a = a, .b = b, .c = c};
    cut_parallel_for(g->m, (double)g->m * g->n * g->k, ref_row, &j);
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
