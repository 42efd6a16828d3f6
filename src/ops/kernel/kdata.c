/* cutune — a kernel spec as a runner workload: generated input sets and the call's launch and arguments. */
#include "cutune/half.h"
#include "cutune/kstate.h"
#include "cutune/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FRESH_SEED_MIX 0x9e3779b97f4a7c15ULL /* set 1: the same distribution from another stream */

/* Stores value v as element i of a buffer of dtype d. */
static void store(cut_elem d, void *p, size_t i, double v)
{
    switch (d) {
    case CUT_EL_F32:
        ((float *)p)[i] = (float)v;
        break;
    case CUT_EL_F64:
        ((double *)p)[i] = v;
        break;
    case CUT_EL_F16:
        ((uint16_t *)p)[i] = cut_f32_to_f16((float)v);
        break;
    case CUT_EL_BF16:
        ((uint16_t *)p)[i] = cut_f32_to_bf16((float)v);
        break;
    case CUT_EL_I32:
        ((int32_t *)p)[i] = (int32_t)llround(v);
        break;
    case CUT_EL_I64:
        ((int64_t *)p)[i] = (int64_t)llround(v);
        break;
    case CUT_EL_U8:
        ((uint8_t *)p)[i] = (uint8_t)((unsigned long long)llround(v) & 0xFFu);
        break;
    default:
        break;
    }
}

static void *fill(const cut_ks_tensor *t, size_t elems, uint64_t seed)
{
    void *p = cut_xmalloc(elems * cut_elem_size(t->dtype));
    cut_rng r;
    cut_rng_seed(&r, seed);
    const int integer = t->dtype == CUT_EL_I32 || t->dtype == CUT_EL_I64 || t->dtype == CUT_EL_U8;
    for (size_t i = 0; i < elems; i++) {
        double v = 0;
        switch (t->init) {
        case CUT_KS_RANDN:
            v = cut_rng_normal(&r);
            break;
        case CUT_KS_UNIFORM:
            v = t->lo + (t->hi - t->lo) * cut_rng_double(&r);
            if (integer) /* integers: uniform over [lo, hi) */
                v = floor(v);
            break;
        case CUT_KS_ZEROS:
            v = 0;
            break;
        case CUT_KS_ONES:
            v = 1;
            break;
        case CUT_KS_FULL:
            v = t->fill;
            break;
        case CUT_KS_ARANGE:
            v = (double)i;
            break;
        default:
            break;
        }
        store(t->dtype, p, i, v);
    }
    return p;
}

int cut_kspec_work(const cut_kspec *k, cut_work *w, cut_err *e)
{
    return cut_kspec_work_at(k, CUT_KS_SIZES, w, e);
}

int cut_kspec_work_at(const cut_kspec *k, cut_ks_sizeset set, cut_work *w, cut_err *e)
{
    memset(w, 0, sizeof *w);
    cut_ks_launch l;
    if (cut_kspec_resolve_at(k, set, NULL, &l, e) != 0)
        return set == CUT_KS_CHECK_SIZES ? cut_err_wrap(e, "check_sizes") : -1;
    w->atol = k->atol;
    w->rtol = k->rtol;
    /* the work's FLOPs and bytes are the physical floor of its timed launches: the check sizes are never timed */
    if (set == CUT_KS_SIZES && cut_kspec_work_size(k, &w->flops, &w->bytes, e) != 0)
        return -1;
    for (int i = 0; i < k->ninputs; i++) {
        cut_work_buf *b = &w->bufs[w->nbufs++];
        const cut_ks_tensor *t = &k->inputs[i];
        snprintf(b->name, sizeof b->name, "%s", t->name);
        b->dtype = t->dtype;
        b->elems = l.in_elems[i];
        if (t->payload) { /* given data: both sets hold it */
            for (int s = 0; s < 2; s++) {
                void *copy = cut_xmalloc(t->payload_bytes);
                memcpy(copy, t->payload, t->payload_bytes);
                b->data[s] = copy;
            }
            continue;
        }
        b->data[0] = fill(t, b->elems, t->seed);
        /* constant inits (zeros, ones, full, arange) give the same set 1: nothing fresh to draw */
        b->data[1] = fill(t, b->elems, t->seed ^ FRESH_SEED_MIX);
    }
    for (int i = 0; i < k->noutputs; i++) {
        cut_work_buf *b = &w->bufs[w->nbufs++];
        snprintf(b->name, sizeof b->name, "%s", k->outputs[i].name);
        b->is_output = 1;
        b->zero_init = k->outputs[i].accumulate;
        b->dtype = k->outputs[i].dtype;
        b->elems = l.out_elems[i];
    }
    return cut_work_check(w, e);
}

void cut_kspec_work_free(cut_work *w)
{
    for (int i = 0; i < w->nbufs; i++)
        for (int s = 0; s < 2; s++) {
            free((void *)w->bufs[i].data[s]);
            w->bufs[i].data[s] = NULL;
        }
    w->nbufs = 0;
}

/* The index of name among the work's buffers (inputs, then outputs), or the scalar's index as -2 - i; -1 if none. */
static int find_arg(const cut_kspec *k, const char *name)
{
    for (int i = 0; i < k->ninputs; i++)
        if (strcmp(k->inputs[i].name, name) == 0)
            return i;
    for (int i = 0; i < k->noutputs; i++)
        if (strcmp(k->outputs[i].name, name) == 0)
            return k->ninputs + i;
    for (int i = 0; i < k->nscalars; i++)
        if (strcmp(k->scalars[i].name, name) == 0)
            return -2 - i;
    return -1;
}

int cut_kspec_call(const cut_kspec *k, const long long *vals, cut_call *c, cut_err *e)
{
    return cut_kspec_call_at(k, CUT_KS_SIZES, vals, c, e);
}

int cut_kspec_call_at(const cut_kspec *k, cut_ks_sizeset set, const long long *vals, cut_call *c, cut_err *e)
{
    cut_ks_launch l;
    if (cut_kspec_resolve_at(k, set, vals, &l, e) != 0)
        return -1;
    memset(c, 0, sizeof *c);
    snprintf(c->entry, sizeof c->entry, "%s", k->entry);
    memcpy(c->grid, l.grid, sizeof c->grid);
    memcpy(c->block, l.block, sizeof c->block);
    c->smem = l.smem;
    for (int i = 0; i < k->nargs; i++) {
        const int at = find_arg(k, k->args[i]);
        cut_call_arg *a = &c->args[c->nargs++];
        if (at == -1)
            return cut_err_set(e, "args[%d]: '%s' is not an input, output or scalar", i, k->args[i]);
        if (at >= 0) {
            a->buf = at;
            continue;
        }
        const int s = -2 - at;
        a->buf = -1;
        a->size = (unsigned)cut_elem_size(k->scalars[s].dtype);
        a->scalar_type = 1 + (int)k->scalars[s].dtype;
        union {
            float f;
            double d;
            int32_t i32;
            int64_t i64;
            uint16_t h;
            uint8_t u8;
        } v;
        const long long x = l.scalars[s];
        const double fx = k->scalars[s].is_number ? k->scalars[s].number : (double)x;
        switch (k->scalars[s].dtype) {
        case CUT_EL_F32: v.f = (float)fx; break;
        case CUT_EL_F64: v.d = fx; break;
        case CUT_EL_F16: v.h = cut_f32_to_f16((float)fx); break;
        case CUT_EL_BF16: v.h = cut_f32_to_bf16((float)fx); break;
        case CUT_EL_I32: v.i32 = (int32_t)x; break;
        case CUT_EL_I64: v.i64 = x; break;
        default: v.u8 = (uint8_t)x; break;
        }
        memcpy(a->bytes, &v, a->size);
    }
    return 0;
}
