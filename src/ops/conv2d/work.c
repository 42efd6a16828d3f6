/* cutune — the work of a Conv2D workload (work.h): input and weights of two input sets, their fp32 references from
 * the double-precision host reference, the elementwise check with the shape's tolerance. */
#include "cutune/workload.h"

#include "cutune/util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The nine sizes, then dtype, layout and epilogue; a peer of an older version sends the nine sizes alone (fp32,
 * NCHW) or with dtype and layout (no epilogue). */
enum { CONV_SIZES = 9, CONV_TYPED = 11, CONV_DIMS = 12 };

void cut_conv_work_op(const cut_conv *c, cut_work_op *op)
{
    memset(op, 0, sizeof *op);
    op->kind = CUT_WORK_CONV;
    op->ndims = CONV_DIMS;
    const int v[CONV_DIMS] = {c->n, c->h, c->w, c->co, c->ci, c->kh, c->kw, c->stride, c->pad, (int)c->dtype,
                              (int)c->layout, (int)c->epilogue};
    for (int i = 0; i < CONV_DIMS; i++)
        op->dims[i] = v[i];
}

int cut_conv_of_work_op(const cut_work_op *op, cut_conv *c, cut_err *e)
{
    if (op->kind != CUT_WORK_CONV || (op->ndims != CONV_DIMS && op->ndims != CONV_TYPED && op->ndims != CONV_SIZES))
        return cut_err_set(e, "the work is not a Conv2D (op %d with %d parameters)", (int)op->kind, op->ndims);
    int v[CONV_DIMS] = {0};
    for (int i = 0; i < op->ndims; i++) {
        if (op->dims[i] < INT_MIN || op->dims[i] > INT_MAX)
            return cut_err_set(e, "Conv2D parameter %d is %lld", i, op->dims[i]);
        v[i] = (int)op->dims[i];
    }
    *c = (cut_conv){v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], (cut_dtype)v[9], (cut_conv_layout)v[10],
                    (cut_conv_epilogue)v[11]};
    return cut_conv_validate(c, e);
}

/* The stored form of n rounded floats x in storage type el: x itself (f32; ownership moves), else a packed copy
 * (x freed). Returned malloc'd. */
static void *conv_store(const cut_conv *c, cut_elem el, float *x, size_t n)
{
    if (el == CUT_EL_F32)
        return x;
    void *packed = cut_xmalloc(n * cut_elem_size(el));
    cut_dtype_pack(c->dtype, x, n, packed);
    free(x);
    return packed;
}

/* The epilogue's bias of each set (CO values uniform in [-1, 1), dtype-rounded, from their own stream of seed)
 * as buffer 3 "bias", after the output so that buffers 0..2 stay a conv's; b[s] gets the values (the caller frees
 * them; NULL without an epilogue). */
static void add_bias(const cut_conv *c, cut_elem in_el, uint64_t seed, cut_work *w, float *b[2])
{
    b[0] = b[1] = NULL;
    if (c->epilogue == CUT_EPI_NONE)
        return;
    cut_work_buf *bb = &w->bufs[w->nbufs++];
    snprintf(bb->name, sizeof bb->name, "bias");
    bb->dtype = in_el;
    bb->elems = (size_t)c->co;
    for (int s = 0; s < 2; s++) {
        b[s] = cut_xmalloc((size_t)c->co * sizeof(float));
        cut_fill_uniform(b[s], (size_t)c->co, cut_input_set_seed(seed, s) ^ 0xb1a5b1a5b1a5b1a5ULL);
        cut_dtype_round(c->dtype, b[s], (size_t)c->co);
        float *copy = memcpy(cut_xmalloc((size_t)c->co * sizeof(float)), b[s], (size_t)c->co * sizeof(float));
        bb->data[s] = conv_store(c, in_el, copy, (size_t)c->co);
    }
    w->bytes += (double)c->co * (double)cut_elem_size(in_el);
}

int cut_conv_work(const cut_conv *c, uint64_t seed, cut_work *w, cut_err *e)
{
    memset(w, 0, sizeof *w);
    if (cut_conv_validate(c, e) != 0)
        return -1;
    const size_t n[3] = {cut_conv_in_elems(c), cut_conv_w_elems(c), cut_conv_out_elems(c)}, n_out = n[2];
    static const char *const names[3] = {"in", "w", "out"};
    const cut_elem in_el = cut_conv_in_elem(c), out_el = cut_conv_out_elem(c);
    float *x[2][2];
    cut_work_pair(w, names, in_el, n, seed, x);
    w->bufs[2].dtype = out_el;
    float *bias[2];
    add_bias(c, in_el, seed, w, bias);
    double *ref = cut_xmalloc(n_out * sizeof(double));
    for (int s = 0; s < 2; s++) {
        /* the inputs as the kernels read them (fp16/bf16 rounded; tf32 is rounded inside the tensor cores, which
         * the tolerance covers), so that the reference is exact for the stored values */
        cut_dtype_round(c->dtype, x[s][0], n[0]);
        cut_dtype_round(c->dtype, x[s][1], n[1]);
        cut_conv_reference(c, x[s][0], x[s][1], ref);
        cut_conv_reference_epilogue(c, bias[s], ref);
        free(bias[s]);
        w->bufs[0].data[s] = conv_store(c, in_el, x[s][0], n[0]);
        w->bufs[1].data[s] = conv_store(c, in_el, x[s][1], n[1]);
        float *r = cut_xmalloc(n_out * sizeof(float));
        for (size_t i = 0; i < n_out; i++)
            r[i] = (float)ref[i];
        w->bufs[2].data[s] = conv_store(c, out_el, r, n_out);
    }
    free(ref);
    w->check = CUT_CHECK_CLOSE;
    cut_conv_tolerance(c, &w->atol, &w->rtol);
    cut_conv_work_op(c, &w->op);
    w->flops = cut_conv_flops(c);
    return 0;
}
