/* cutune — user-kernel workloads: structural checks and the typed output comparison (kwork.h). */
#include "cutune/half.h"
#include "cutune/kwork.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cut_kw_outputs_free(cut_kw_outputs *o)
{
    if (!o)
        return;
    for (int i = 0; i < CUT_KW_MAX_BUFS; i++)
        for (int s = 0; s < 2; s++) {
            free(o->data[i][s]);
            o->data[i][s] = NULL;
        }
}

int cut_kwork_has_refs(const cut_kwork *w)
{
    for (int i = 0; i < w->nbufs; i++)
        if (w->bufs[i].is_output)
            return w->bufs[i].data[0] != NULL;
    return 0;
}

int cut_kwork_check(const cut_kwork *w, cut_err *e)
{
    if (w->nbufs < 1 || w->nbufs > CUT_KW_MAX_BUFS)
        return cut_err_set(e, "kernel work: %d buffers (1 to %d)", w->nbufs, CUT_KW_MAX_BUFS);
    if (!isfinite(w->atol) || !isfinite(w->rtol) || w->atol < 0 || w->rtol < 0)
        return cut_err_set(e, "kernel work: tolerance atol=%g rtol=%g must be finite and >= 0", w->atol, w->rtol);
    int outputs = 0, refs = -1;
    for (int i = 0; i < w->nbufs; i++) {
        const cut_kw_buf *b = &w->bufs[i];
        if ((int)b->dtype < 0 || b->dtype >= CUT_KS_DTYPE_COUNT)
            return cut_err_set(e, "kernel work: buffer %d ('%s') has an unknown dtype", i, b->name);
        if (b->elems < 1 || b->elems > ((size_t)1 << 40) / cut_ks_dtype_size(b->dtype))
            return cut_err_set(e, "kernel work: buffer %d ('%s') has %zu elements", i, b->name, b->elems);
        const int have = (b->data[0] != NULL) + (b->data[1] != NULL);
        if (!b->is_output && have != 2)
            return cut_err_set(e, "kernel work: input '%s' lacks the contents of set %d", b->name, b->data[0] ? 1 : 0);
        if (b->is_output) {
            outputs++;
            if (have == 1)
                return cut_err_set(e, "kernel work: output '%s' has a reference for one input set only", b->name);
            if (refs >= 0 && refs != (have == 2))
                return cut_err_set(e, "kernel work: output '%s': some outputs have references, others not", b->name);
            refs = have == 2;
        }
    }
    if (!outputs)
        return cut_err_set(e, "kernel work: no output buffer (nothing could be checked)");
    return 0;
}

int cut_kcall_check(const cut_kwork *w, const cut_kcall *c, cut_err *e)
{
    if (c->nargs < 1 || c->nargs > CUT_KW_MAX_ARGS)
        return cut_err_set(e, "kernel call: %d arguments (1 to %d)", c->nargs, CUT_KW_MAX_ARGS);
    if (!memchr(c->entry, 0, sizeof c->entry) || !c->entry[0])
        return cut_err_set(e, "kernel call: no entry point name");
    for (int i = 0; i < c->nargs; i++) {
        const cut_kw_arg *a = &c->args[i];
        if (a->buf >= w->nbufs || a->buf < -1)
            return cut_err_set(e, "kernel call: argument %d names buffer %d of %d", i, a->buf, w->nbufs);
        if (a->buf < 0 && a->size != 1 && a->size != 2 && a->size != 4 && a->size != 8)
            return cut_err_set(e, "kernel call: scalar argument %d has %u bytes (1, 2, 4 or 8)", i, a->size);
    }
    unsigned long long threads = 1;
    for (int d = 0; d < 3; d++) {
        if (c->grid[d] < 1 || c->block[d] < 1)
            return cut_err_set(e, "kernel call: empty launch grid (%u,%u,%u) block (%u,%u,%u)", c->grid[0], c->grid[1],
                               c->grid[2], c->block[0], c->block[1], c->block[2]);
        threads *= c->block[d];
    }
    if (threads > 1024)
        return cut_err_set(e, "kernel call: block (%u,%u,%u) has %llu threads (at most 1024)", c->block[0],
                           c->block[1], c->block[2], threads);
    return 0;
}

/* Element i of a buffer of dtype d as a double; *is_int says whether d is an integer type. */
static double elem(cut_ks_dtype d, const void *p, size_t i)
{
    switch (d) {
    case CUT_KS_F32:
        return ((const float *)p)[i];
    case CUT_KS_F64:
        return ((const double *)p)[i];
    case CUT_KS_F16:
        return cut_f16_to_f32(((const uint16_t *)p)[i]);
    case CUT_KS_BF16:
        return cut_bf16_to_f32(((const uint16_t *)p)[i]);
    case CUT_KS_I32:
        return ((const int32_t *)p)[i];
    case CUT_KS_I64:
        return (double)((const int64_t *)p)[i];
    case CUT_KS_U8:
        return ((const uint8_t *)p)[i];
    default:
        return NAN;
    }
}

static int is_int_dtype(cut_ks_dtype d) { return d == CUT_KS_I32 || d == CUT_KS_I64 || d == CUT_KS_U8; }

size_t cut_kw_compare(const cut_kw_buf *b, const void *got, const void *ref, double atol, double rtol,
                      double *max_err, char *msg, size_t msg_len)
{
    size_t bad = 0;
    double maxe = 0;
    if (msg_len)
        msg[0] = 0;
    const int exact = is_int_dtype(b->dtype);
    const size_t es = cut_ks_dtype_size(b->dtype);
    for (size_t i = 0; i < b->elems; i++) {
        int ok;
        if (exact) {
            ok = memcmp((const char *)got + i * es, (const char *)ref + i * es, es) == 0;
            if (!ok && b->dtype == CUT_KS_I64 && msg_len && !bad)
                snprintf(msg, msg_len, "%s[%zu] = %lld, want %lld", b->name, i, (long long)((const int64_t *)got)[i],
                         (long long)((const int64_t *)ref)[i]);
        } else {
            const double g = elem(b->dtype, got, i), r = elem(b->dtype, ref, i);
            if (isfinite(g) && isfinite(r)) {
                const double d = fabs(g - r);
                maxe = d > maxe ? d : maxe;
                ok = d <= atol + rtol * fabs(r);
            } else {
                /* a non-finite reference must be matched exactly (inf by inf of the same sign, NaN by NaN) */
                ok = !isfinite(r) && (isnan(r) ? isnan(g) : g == r);
            }
        }
        if (!ok) {
            if (!bad && msg_len && (b->dtype != CUT_KS_I64 || !exact))
                snprintf(msg, msg_len, "%s[%zu] = %.9g, want %.9g", b->name, i, elem(b->dtype, got, i),
                         elem(b->dtype, ref, i));
            bad++;
        }
    }
    if (max_err)
        *max_err = maxe;
    return bad;
}
