/* cutune — GEMM reference (double accumulation), relative error and tolerances (include/cutune/gemm.h). */
#include "cutune/gemm.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Rows of C are handed out one at a time under a mutex, as cut_conv_reference does with output planes. NN walks
 * B row by row (c_row += a[i][k] * b[k][.], contiguous, vectorises); NT takes dot products of two contiguous
 * rows. */
typedef struct gemm_ref_job {
    const cut_gemm *g;
    const float *a, *b;
    double *c;
    long next; /* next row to take (under mu) */
    pthread_mutex_t mu;
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

static void *ref_worker(void *arg)
{
    gemm_ref_job *j = arg;
    for (;;) {
        pthread_mutex_lock(&j->mu);
        long i = j->next < j->g->m ? j->next++ : -1;
        pthread_mutex_unlock(&j->mu);
        if (i < 0)
            return NULL;
        if (j->g->layout == CUT_GEMM_NT)
            ref_row_nt(j, (int)i);
        else
            ref_row_nn(j, (int)i);
    }
}

void cut_gemm_reference(const cut_gemm *g, const float *a, const float *b, double *c)
{
    gemm_ref_job j = {.g = g, .a = a, .b = b, .c = c, .next = 0};
    pthread_mutex_init(&j.mu, NULL);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1)
        ncpu = 1;
    /* Tiny problems are not worth a thread start (~20 us each). */
    if ((double)g->m * g->n * g->k < 1e6)
        ncpu = 1;
    int nt = (int)CUT_MIN(CUT_MIN(ncpu, (long)g->m), 256L);
    pthread_t tids[256];
    int started = 0;
    for (int i = 1; i < nt; i++) {
        if (pthread_create(&tids[started], NULL, ref_worker, &j) != 0)
            break; /* fewer threads is still correct */
        started++;
    }
    ref_worker(&j);
    for (int i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    pthread_mutex_destroy(&j.mu);
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
