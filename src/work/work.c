/* cutune — the work a runner measures (work.h): element types, structural checks and the output comparison under
 * each check rule. */
#include "cutune/work.h"

#include "cutune/half.h"
#include "cutune/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const elem_names[CUT_EL_COUNT] = {"f32", "f64", "f16", "bf16", "i32", "i64", "u8"};
static const size_t elem_sizes[CUT_EL_COUNT] = {4, 8, 2, 2, 4, 8, 1};

const char *cut_elem_name(cut_elem d) { return d >= 0 && d < CUT_EL_COUNT ? elem_names[d] : "?"; }
size_t cut_elem_size(cut_elem d) { return d >= 0 && d < CUT_EL_COUNT ? elem_sizes[d] : 0; }

const char *cut_check_rule_name(cut_check_rule r)
{
    static const char *const names[CUT_CHECK_COUNT] = {"close", "frobenius", "exact"};
    return r >= 0 && r < CUT_CHECK_COUNT ? names[r] : "?";
}

double cut_elem_get(cut_elem d, const void *p, size_t i)
{
    switch (d) {
    case CUT_EL_F32:
        return ((const float *)p)[i];
    case CUT_EL_F64:
        return ((const double *)p)[i];
    case CUT_EL_F16:
        return cut_f16_to_f32(((const uint16_t *)p)[i]);
    case CUT_EL_BF16:
        return cut_bf16_to_f32(((const uint16_t *)p)[i]);
    case CUT_EL_I32:
        return ((const int32_t *)p)[i];
    case CUT_EL_I64:
        return (double)((const int64_t *)p)[i];
    case CUT_EL_U8:
        return ((const uint8_t *)p)[i];
    default:
        return NAN;
    }
}

void cut_elem_to_floats(cut_elem d, const void *p, size_t n, float *out)
{
    if (d == CUT_EL_F32) {
        memcpy(out, p, n * sizeof *out);
    } else if (d == CUT_EL_F16) {
        for (size_t i = 0; i < n; i++)
            out[i] = cut_f16_to_f32(((const uint16_t *)p)[i]);
    } else if (d == CUT_EL_BF16) {
        for (size_t i = 0; i < n; i++)
            out[i] = cut_bf16_to_f32(((const uint16_t *)p)[i]);
    } else {
        for (size_t i = 0; i < n; i++)
            out[i] = (float)cut_elem_get(d, p, i);
    }
}

static int is_int_elem(cut_elem d) { return d == CUT_EL_I32 || d == CUT_EL_I64 || d == CUT_EL_U8; }

void cut_work_free(cut_work *w)
{
    if (!w)
        return;
    if (w->owns_data)
        for (int i = 0; i < w->nbufs && i < CUT_WORK_MAX_BUFS; i++)
            for (int s = 0; s < 2; s++)
                free((void *)w->bufs[i].data[s]);
    memset(w, 0, sizeof *w);
}

static int same_buf(const cut_work_buf *a, const cut_work_buf *b)
{
    if (strcmp(a->name, b->name) || a->is_output != b->is_output || a->zero_init != b->zero_init ||
        a->dtype != b->dtype || a->elems != b->elems)
        return 0;
    const size_t n = a->elems * cut_elem_size(a->dtype);
    for (int s = 0; s < 2; s++) {
        if (!a->data[s] != !b->data[s])
            return 0;
        if (a->data[s] && a->data[s] != b->data[s] && memcmp(a->data[s], b->data[s], n))
            return 0;
    }
    return 1;
}

int cut_work_same(const cut_work *a, const cut_work *b)
{
    /* a NaN tolerance or count never equals itself: such a work is sent again, never wrongly taken for a held one */
    if (a->nbufs != b->nbufs || a->check != b->check || a->atol != b->atol || a->rtol != b->rtol ||
        a->runner_refs != b->runner_refs || a->flops != b->flops || a->bytes != b->bytes ||
        a->op.kind != b->op.kind || a->op.ndims != b->op.ndims)
        return 0;
    for (int i = 0; i < a->op.ndims && i < CUT_WORK_OP_DIMS; i++)
        if (a->op.dims[i] != b->op.dims[i])
            return 0;
    for (int i = 0; i < a->nbufs && i < CUT_WORK_MAX_BUFS; i++)
        if (!same_buf(&a->bufs[i], &b->bufs[i]))
            return 0;
    return 1;
}

void cut_work_outputs_free(cut_work_outputs *o)
{
    if (!o)
        return;
    for (int i = 0; i < CUT_WORK_MAX_BUFS; i++)
        for (int s = 0; s < 2; s++) {
            free(o->data[i][s]);
            o->data[i][s] = NULL;
        }
}

int cut_work_has_refs(const cut_work *w)
{
    if (w->runner_refs)
        return 1;
    for (int i = 0; i < w->nbufs; i++)
        if (w->bufs[i].is_output)
            return w->bufs[i].data[0] != NULL;
    return 0;
}

void cut_call_tolerance(const cut_work *w, const cut_call *c, double *atol, double *rtol)
{
    const double f = c && c->tol_scale > 1.0 ? c->tol_scale : 1.0;
    *atol = w->atol * f;
    *rtol = w->rtol * f;
}

int cut_work_check(const cut_work *w, cut_err *e)
{
    if (w->nbufs < 1 || w->nbufs > CUT_WORK_MAX_BUFS)
        return cut_err_set(e, "work: %d buffers (1 to %d)", w->nbufs, CUT_WORK_MAX_BUFS);
    if ((int)w->check < 0 || w->check >= CUT_CHECK_COUNT)
        return cut_err_set(e, "work: unknown check rule %d", (int)w->check);
    if (!isfinite(w->atol) || !isfinite(w->rtol) || w->atol < 0 || w->rtol < 0)
        return cut_err_set(e, "work: tolerance atol=%g rtol=%g must be finite and >= 0", w->atol, w->rtol);
    if ((int)w->op.kind < 0 || w->op.kind >= CUT_WORK_OP_COUNT || w->op.ndims < 0 || w->op.ndims > CUT_WORK_OP_DIMS)
        return cut_err_set(e, "work: unknown op %d with %d parameters", (int)w->op.kind, w->op.ndims);
    if (!isfinite(w->flops) || w->flops < 0)
        return cut_err_set(e, "work: %g FLOPs per call", w->flops);
    if (!isfinite(w->bytes) || w->bytes < 0)
        return cut_err_set(e, "work: %g bytes per call", w->bytes);
    if (w->runner_refs && w->op.kind != CUT_WORK_GEMM)
        return cut_err_set(e, "work: only a GEMM's references can be left to the runner");
    int outputs = 0, refs = -1;
    for (int i = 0; i < w->nbufs; i++) {
        const cut_work_buf *b = &w->bufs[i];
        if (!memchr(b->name, 0, sizeof b->name))
            return cut_err_set(e, "work: buffer %d has an unterminated name", i);
        if ((int)b->dtype < 0 || b->dtype >= CUT_EL_COUNT)
            return cut_err_set(e, "work: buffer %d ('%s') has an unknown dtype", i, b->name);
        if (b->elems < 1 || b->elems > ((size_t)1 << 40) / cut_elem_size(b->dtype))
            return cut_err_set(e, "work: buffer %d ('%s') has %zu elements", i, b->name, b->elems);
        const int have = (b->data[0] != NULL) + (b->data[1] != NULL);
        if (!b->is_output && have != 2)
            return cut_err_set(e, "work: input '%s' lacks the contents of set %d", b->name, b->data[0] ? 1 : 0);
        if (b->is_output) {
            outputs++;
            if (have == 1)
                return cut_err_set(e, "work: output '%s' has a reference for one input set only", b->name);
            if (w->runner_refs && have)
                return cut_err_set(e, "work: output '%s' has references although the runner computes them", b->name);
            if (refs >= 0 && refs != (have == 2))
                return cut_err_set(e, "work: output '%s': some outputs have references, others not", b->name);
            refs = have == 2;
        }
    }
    if (!outputs)
        return cut_err_set(e, "work: no output buffer (nothing could be checked)");
    return 0;
}

int cut_call_check(const cut_work *w, const cut_call *c, cut_err *e)
{
    if (c->nargs < 1 || c->nargs > CUT_CALL_MAX_ARGS)
        return cut_err_set(e, "kernel call: %d arguments (1 to %d)", c->nargs, CUT_CALL_MAX_ARGS);
    if (!memchr(c->entry, 0, sizeof c->entry) || !c->entry[0])
        return cut_err_set(e, "kernel call: no entry point name");
    if (!isfinite(c->tol_scale))
        return cut_err_set(e, "kernel call: tolerance factor %g", c->tol_scale);
    for (int i = 0; i < c->nargs; i++) {
        const cut_call_arg *a = &c->args[i];
        if (a->buf >= w->nbufs || a->buf < -1)
            return cut_err_set(e, "kernel call: argument %d names buffer %d of %d", i, a->buf, w->nbufs);
        if (a->buf < 0 && a->size != 1 && a->size != 2 && a->size != 4 && a->size != 8)
            return cut_err_set(e, "kernel call: scalar argument %d has %u bytes (1, 2, 4 or 8)", i, a->size);
        if (a->tma && (a->buf < 0 || w->bufs[a->buf].is_output))
            return cut_err_set(e, "kernel call: argument %d is a TMA map of %s", i,
                               a->buf < 0 ? "no buffer" : "an output (maps are read-only views of inputs)");
        if (a->tma && (size_t)a->desc.elem_bytes != cut_elem_size(w->bufs[a->buf].dtype))
            return cut_err_set(e, "kernel call: argument %d maps '%s' (%s) with %d-byte elements", i,
                               w->bufs[a->buf].name, cut_elem_name(w->bufs[a->buf].dtype), a->desc.elem_bytes);
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

/* FROBENIUS: ||got - ref|| / ||ref|| (||ref|| == 0: the absolute error); +Inf when got has a NaN or Inf. */
static size_t compare_frobenius(const cut_work_buf *b, const void *got, const void *ref, double tol,
                                double *max_err, char *msg, size_t msg_len)
{
    double num = 0, den = 0, worst_d = -1;
    size_t worst = 0;
    if (b->dtype == CUT_EL_F32) { /* the common case (every GEMM's C), as one tight loop: a NaN or Inf in got makes
                                     num non-finite */
        const float *g = got, *r = ref;
        for (size_t i = 0; i < b->elems; i++) {
            const double d = (double)g[i] - (double)r[i];
            num += d * d;
            den += (double)r[i] * (double)r[i];
        }
    } else {
        for (size_t i = 0; i < b->elems; i++) {
            const double g = cut_elem_get(b->dtype, got, i), r = cut_elem_get(b->dtype, ref, i);
            const double d = isfinite(g) ? fabs(g - r) : INFINITY;
            num += d * d;
            den += r * r;
        }
    }
    const double rel = isfinite(num) ? (den > 0 ? sqrt(num / den) : sqrt(num)) : INFINITY;
    if (max_err)
        *max_err = rel;
    if (rel <= tol)
        return 0;
    for (size_t i = 0; i < b->elems; i++) { /* the element the message names: the first non-finite or the largest */
        const double g = cut_elem_get(b->dtype, got, i), r = cut_elem_get(b->dtype, ref, i);
        const double d = isfinite(g) ? fabs(g - r) : INFINITY;
        if (d > worst_d) {
            worst_d = d;
            worst = i;
        }
        if (isinf(d))
            break;
    }
    if (msg_len)
        snprintf(msg, msg_len, "relative Frobenius error %.3g > tolerance %.3g (%s[%zu] = %.6g, want %.6g)", rel, tol,
                 b->name, worst, cut_elem_get(b->dtype, got, worst), cut_elem_get(b->dtype, ref, worst));
    return 1;
}

size_t cut_work_compare(const cut_work_buf *b, const void *got, const void *ref, cut_check_rule rule, double atol,
                        double rtol, double *max_err, char *msg, size_t msg_len)
{
    if (msg_len)
        msg[0] = 0;
    if (rule == CUT_CHECK_FROBENIUS && !is_int_elem(b->dtype))
        return compare_frobenius(b, got, ref, rtol, max_err, msg, msg_len);
    size_t bad = 0;
    double maxe = 0;
    char first[160] = "";
    const int exact = rule == CUT_CHECK_EXACT || is_int_elem(b->dtype);
    const size_t es = cut_elem_size(b->dtype);
    size_t from = 0;
    if (!exact && b->dtype == CUT_EL_F32) { /* the common case as one tight loop, up to the first mismatch */
        const float *g = got, *r = ref;
        for (; from < b->elems; from++) {
            const double gd = g[from], rd = r[from], d = fabs(gd - rd);
            if (!(isfinite(gd) && isfinite(rd) && d <= atol + rtol * fabs(rd)))
                break;
            maxe = d > maxe ? d : maxe;
        }
    }
    for (size_t i = from; i < b->elems; i++) {
        int ok;
        if (exact) {
            ok = memcmp((const char *)got + i * es, (const char *)ref + i * es, es) == 0;
        } else {
            const double g = cut_elem_get(b->dtype, got, i), r = cut_elem_get(b->dtype, ref, i);
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
            if (!bad && b->dtype == CUT_EL_I64)
                snprintf(first, sizeof first, "%s[%zu] = %lld, want %lld", b->name, i,
                         (long long)((const int64_t *)got)[i], (long long)((const int64_t *)ref)[i]);
            else if (!bad)
                snprintf(first, sizeof first, "%s[%zu] = %.9g, want %.9g", b->name, i,
                         cut_elem_get(b->dtype, got, i), cut_elem_get(b->dtype, ref, i));
            bad++;
        }
    }
    if (max_err)
        *max_err = maxe;
    if (bad && msg_len)
        snprintf(msg, msg_len, "%zu of %zu outputs wrong: %s", bad, b->elems, first);
    return bad;
}

/* One input tensor of one set: each is its own generator stream, so the four fill in parallel with the values a
 * sequential fill gives. */
typedef struct fill_job {
    float *(*x)[2];
    const size_t *n;
    uint64_t seed;
} fill_job;

static void fill_one(void *arg, long i)
{
    const fill_job *j = arg;
    const int s = (int)(i / 2), t = (int)(i % 2);
    const uint64_t sd = cut_input_set_seed(j->seed, s);
    cut_fill_uniform(j->x[s][t], j->n[t], t ? sd ^ 0x9e3779b97f4a7c15ULL : sd);
}

void cut_work_pair(cut_work *w, const char *const names[3], cut_elem in_dtype, const size_t n[3], uint64_t seed,
                   float *x[2][2])
{
    for (int s = 0; s < 2; s++)
        for (int t = 0; t < 2; t++)
            x[s][t] = cut_xmalloc(n[t] * sizeof(float));
    fill_job j = {x, n, seed};
    cut_parallel_for(4, (double)(n[0] + n[1]) * 2, fill_one, &j);
    w->nbufs = 3;
    w->owns_data = 1;
    for (int i = 0; i < 3; i++) {
        snprintf(w->bufs[i].name, sizeof w->bufs[i].name, "%s", names[i]);
        w->bufs[i].dtype = i < 2 ? in_dtype : CUT_EL_F32;
        w->bufs[i].elems = n[i];
    }
    w->bufs[2].is_output = 1;
    w->bytes = (double)(n[0] + n[1]) * (double)cut_elem_size(in_dtype);
}

int cut_work_keep(cut_work *w, int take, cut_work *out, cut_err *e)
{
    if (cut_work_check(w, e) != 0) {
        if (take)
            cut_work_free(w);
        return -1;
    }
    *out = *w;
    if (take) {
        memset(w, 0, sizeof *w);
        return 0;
    }
    out->owns_data = 1;
    for (int i = 0; i < out->nbufs; i++)
        for (int s = 0; s < 2; s++) {
            const void *src = out->bufs[i].data[s];
            const size_t n = out->bufs[i].elems * cut_elem_size(out->bufs[i].dtype);
            out->bufs[i].data[s] = src ? memcpy(cut_xmalloc(n), src, n) : NULL;
        }
    return 0;
}
