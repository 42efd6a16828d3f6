/* cutune — the work of a GEMM workload (work.h): A and B of two input sets in the dtype's storage type (halves or
 * bf16 bits for fp16/bf16, floats for fp32/tf32), C's references from the double-precision product of the rounded
 * inputs (on the host, or left to the GPU runner past 2^32 FLOP), the relative Frobenius check with the dtype's
 * tolerance. */
#include "cutune/gemm.h"

#include "cutune/util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A plain GEMM's five parameters as ever (the wire and the worker's checks unchanged for it); batch, alpha and beta
 * (the doubles' bits) follow only when one is not the default. */
enum { GEMM_DIMS = 5, GEMM_DIMS_EXTRA = 8 };

static long long double_bits(double x)
{
    long long v;
    memcpy(&v, &x, sizeof v);
    return v;
}

static double bits_double(long long v)
{
    double x;
    memcpy(&x, &v, sizeof x);
    return x;
}

void cut_gemm_work_op(const cut_gemm *g, cut_work_op *op)
{
    memset(op, 0, sizeof *op);
    op->kind = CUT_WORK_GEMM;
    op->ndims = cut_gemm_has_extras(g) ? GEMM_DIMS_EXTRA : GEMM_DIMS;
    const long long v[GEMM_DIMS_EXTRA] = {g->m, g->n, g->k, g->layout, g->dtype, cut_gemm_batch(g),
                                          double_bits(cut_gemm_alpha(g)), double_bits(cut_gemm_beta(g))};
    memcpy(op->dims, v, sizeof(long long) * (size_t)op->ndims);
}

int cut_gemm_of_work_op(const cut_work_op *op, cut_gemm *g, cut_err *e)
{
    if (op->kind != CUT_WORK_GEMM || (op->ndims != GEMM_DIMS && op->ndims != GEMM_DIMS_EXTRA))
        return cut_err_set(e, "the work is not a GEMM (op %d with %d parameters)", (int)op->kind, op->ndims);
    for (int i = 0; i < 3; i++)
        if (op->dims[i] < 1 || op->dims[i] > INT_MAX)
            return cut_err_set(e, "GEMM size %d is %lld", i, op->dims[i]);
    if (op->dims[3] < CUT_GEMM_NN || op->dims[3] > CUT_GEMM_TT)
        return cut_err_set(e, "GEMM: unknown layout %lld", op->dims[3]);
    if (op->dims[4] < 0 || op->dims[4] >= CUT_DT_COUNT)
        return cut_err_set(e, "GEMM: unknown dtype %lld", op->dims[4]);
    if (op->ndims == GEMM_DIMS_EXTRA && (op->dims[5] < 1 || op->dims[5] > INT_MAX))
        return cut_err_set(e, "GEMM: batch %lld", op->dims[5]);
    *g = (cut_gemm){(int)op->dims[0], (int)op->dims[1], (int)op->dims[2], (cut_gemm_layout)op->dims[3],
                    (cut_dtype)op->dims[4]};
    if (op->ndims == GEMM_DIMS_EXTRA)
        cut_gemm_set_extras(g, (int)op->dims[5], bits_double(op->dims[6]), bits_double(op->dims[7]));
    return cut_gemm_validate(g, e);
}

cut_elem cut_gemm_storage_elem(cut_dtype d)
{
    return d == CUT_DT_FP16 ? CUT_EL_F16 : d == CUT_DT_BF16 ? CUT_EL_BF16 : CUT_EL_F32;
}

/* Adds the work's fourth buffer "Cin" (fp32 input: C's old contents, uniform in [-1, 1), fresh per set, from streams
 * apart from A's and B's) when g reads C. */
static void add_cin(const cut_gemm *g, uint64_t seed, cut_work *w)
{
    const int i = cut_gemm_cin_buf(g);
    if (i < 0)
        return;
    cut_work_buf *b = &w->bufs[i];
    snprintf(b->name, sizeof b->name, "Cin");
    b->dtype = CUT_EL_F32;
    b->elems = cut_gemm_c_elems(g);
    for (int s = 0; s < 2; s++) {
        float *x = cut_xmalloc(b->elems * sizeof *x);
        cut_fill_uniform(x, b->elems, cut_input_set_seed(seed, s) ^ 0xc2b2ae3d27d4eb4fULL);
        b->data[s] = x;
    }
    w->nbufs = i + 1;
    w->bytes += 4.0 * (double)b->elems;
}

/* Where the reference is computed: the host's double reference streams B once per row of C (seconds at 1024^3,
 * hours at 8192^3), so past 2^32 FLOP a runner that can (the GPU worker's cuBLAS DGEMM) computes it instead.
 * $CUTUNE_GEMM_REF=cpu|gpu forces one (tests). */
static int ref_on_host(const cut_gemm *g, int runner_can)
{
    const char *force = getenv("CUTUNE_GEMM_REF");
    if (!runner_can || (force && !strcmp(force, "cpu")))
        return 1;
    if (force && !strcmp(force, "gpu"))
        return 0;
    return cut_gemm_flops(g) <= 4294967296.0;
}

int cut_gemm_work(const cut_gemm *g, uint64_t seed, int runner_refs, cut_work *w, cut_err *e)
{
    memset(w, 0, sizeof *w);
    if (cut_gemm_validate(g, e) != 0)
        return -1;
    if ((int)g->dtype < 0 || g->dtype >= CUT_DT_COUNT)
        return cut_err_set(e, "GEMM dtype %d is unknown", (int)g->dtype);
    const size_t n[3] = {cut_gemm_a_elems(g), cut_gemm_b_elems(g), cut_gemm_c_elems(g)}, n_out = n[2];
    static const char *const names[3] = {"A", "B", "C"};
    const cut_elem store = cut_gemm_storage_elem(g->dtype);
    float *x[2][2];
    cut_work_pair(w, names, store, n, seed, x);
    add_cin(g, seed, w);
    const int ci = cut_gemm_cin_buf(g);
    w->runner_refs = !ref_on_host(g, runner_refs);
    double *ref = w->runner_refs ? NULL : cut_xmalloc(n_out * sizeof(double));
    for (int s = 0; s < 2; s++) {
        for (int t = 0; t < 2; t++) {
            /* the inputs as the kernels see them, so that the reference is exact for the stored values */
            cut_dtype_round(g->dtype, x[s][t], n[t]);
            if (store == CUT_EL_F32) {
                w->bufs[t].data[s] = x[s][t];
            } else {
                void *packed = cut_xmalloc(n[t] * cut_elem_size(store));
                cut_dtype_pack(g->dtype, x[s][t], n[t], packed);
                w->bufs[t].data[s] = packed;
            }
        }
        if (ref) {
            cut_gemm_reference(g, x[s][0], x[s][1], ref);
            cut_gemm_reference_beta(g, ci < 0 ? NULL : w->bufs[ci].data[s], ref);
            float *r = cut_xmalloc(n_out * sizeof(float));
            for (size_t i = 0; i < n_out; i++)
                r[i] = (float)ref[i];
            w->bufs[2].data[s] = r;
        }
        if (store != CUT_EL_F32) {
            free(x[s][0]);
            free(x[s][1]);
        }
    }
    free(ref);
    w->check = CUT_CHECK_FROBENIUS;
    w->rtol = cut_gemm_tolerance(g->dtype);
    cut_gemm_work_op(g, &w->op);
    w->flops = cut_gemm_flops(g);
    return 0;
}
