/* cutune — the measurement worker's message codecs (both sides): HELLO, the conv and GEMM workloads (PREPARE,
 * PREPARE_GEMM), MEASURE with its TMA descriptors, ENERGY and its plan, the results (RESULT, ENERGY_RESULT,
 * VENDOR_RESULT), VENDOR and ERROR. Framing and the payload cursor in worker_wire.c; the user-kernel messages
 * (ENERGY_KERNEL too) in worker_proto_kernel.c. */
#include "measure/worker_proto.h"
#include "measure/worker_proto_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* =============================================================================================================
 * Messages
 * ============================================================================================================= */

int cut_wp_expect_type(const cut_wp_frame *f, uint32_t type, cut_err *e)
{
    if (f->type != type)
        return cut_err_set(e, "expected a %s message, got %s", cut_wp_type_name(type), cut_wp_type_name(f->type));
    return 0;
}

int cut_wp_rd_finish(const cut_wp_rd *r, const cut_wp_frame *f, cut_err *e)
{
    if (r->bad)
        return cut_err_set(e, "malformed %s message (%zu bytes): a field runs past the end",
                           cut_wp_type_name(f->type), f->len);
    if (r->off != r->len)
        return cut_err_set(e, "malformed %s message: %zu trailing bytes", cut_wp_type_name(f->type),
                           r->len - r->off);
    return 0;
}

void cut_wp_hello_encode(const cut_wp_hello *h, cut_buf *b)
{
    cut_wp_put_str(b, h->name);
    cut_wp_put_str(b, h->uuid);
    cut_wp_put_i32(b, h->sm_major);
    cut_wp_put_i32(b, h->sm_minor);
    cut_wp_put_i32(b, h->l2_bytes);
    cut_wp_put_i32(b, h->driver_version);
}

int cut_wp_hello_decode(const cut_wp_frame *f, cut_wp_hello *h, cut_err *e)
{
    if (cut_wp_expect_type(f, CUT_WP_HELLO, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t v[4] = {0};
    cut_wp_get_str(&r, h->name, sizeof h->name);
    cut_wp_get_str(&r, h->uuid, sizeof h->uuid);
    for (int i = 0; i < 4; i++)
        cut_wp_get_i32(&r, &v[i]);
    h->sm_major = v[0];
    h->sm_minor = v[1];
    h->l2_bytes = v[2];
    h->driver_version = v[3];
    return cut_wp_rd_finish(&r, f, e);
}

/* The timing policy as every run request begins with it: i32 warmup, min/max repeats, flush; f64 min total and
 * timeout. */
void cut_wp_put_timing(cut_buf *b, const cut_timing *t)
{
    cut_wp_put_i32(b, t->warmup);
    cut_wp_put_i32(b, t->min_repeats);
    cut_wp_put_i32(b, t->max_repeats);
    cut_wp_put_i32(b, t->flush_l2);
    cut_wp_put_f64(b, t->min_total_ms);
    cut_wp_put_f64(b, t->timeout_s);
}

void cut_wp_get_timing(cut_wp_rd *r, cut_timing *tm)
{
    int32_t t[4] = {0};
    for (int i = 0; i < 4; i++)
        cut_wp_get_i32(r, &t[i]);
    cut_wp_get_f64(r, &tm->min_total_ms);
    cut_wp_get_f64(r, &tm->timeout_s);
    tm->warmup = t[0];
    tm->min_repeats = t[1];
    tm->max_repeats = t[2];
    tm->flush_l2 = t[3];
}

int cut_wp_check_timing(const cut_timing *tm, const char *what, cut_err *e)
{
    if (tm->warmup < 0 || tm->min_repeats < 1 || tm->max_repeats < tm->min_repeats || !isfinite(tm->min_total_ms) ||
        tm->min_total_ms < 0 || !(tm->timeout_s > 0))
        return cut_err_set(e,
                           "%s carries an invalid timing policy (warmup %d, repeats %d..%d, min_total_ms %g, "
                           "timeout_s %g)",
                           what, tm->warmup, tm->min_repeats, tm->max_repeats, tm->min_total_ms, tm->timeout_s);
    return 0;
}

int cut_wp_is_run(uint32_t type)
{
    switch (type) {
    case CUT_WP_MEASURE:
    case CUT_WP_ENERGY:
    case CUT_WP_CUDNN:
    case CUT_WP_CUBLAS:
    case CUT_WP_VENDOR:
    case CUT_WP_RUN_KERNEL:
    case CUT_WP_ENERGY_KERNEL:
        return 1;
    default:
        return 0;
    }
}

void cut_wp_run_encode(const cut_timing *t, const void *body, size_t len, cut_buf *b)
{
    cut_wp_put_timing(b, t);
    if (len > 0)
        cut_buf_append(b, body, len);
}

int cut_wp_run_split(const cut_wp_frame *f, cut_timing *t, cut_wp_frame *body, cut_err *e)
{
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    cut_wp_get_timing(&r, t);
    if (r.bad)
        return cut_err_set(e, "malformed %s message (%zu bytes): its timing policy runs past the end",
                           cut_wp_type_name(f->type), f->len);
    char what[32];
    snprintf(what, sizeof what, "%s", cut_wp_type_name(f->type));
    if (cut_wp_check_timing(t, what, e) != 0)
        return -1;
    *body = (cut_wp_frame){.type = f->type, .data = f->len > r.off ? f->data + r.off : NULL, .len = f->len - r.off};
    return 0;
}

void cut_wp_prepare_encode(const cut_wp_prepare *p, cut_buf *b)
{
    const cut_conv *c = &p->conv;
    const int32_t shape[9] = {c->n, c->h, c->w, c->co, c->ci, c->kh, c->kw, c->stride, c->pad};
    for (int i = 0; i < 9; i++)
        cut_wp_put_i32(b, shape[i]);
    for (int s = 0; s < 2; s++) {
        cut_wp_put_bytes(b, p->in[s], cut_conv_in_elems(c) * sizeof(float));
        cut_wp_put_bytes(b, p->w[s], cut_conv_w_elems(c) * sizeof(float));
        cut_wp_put_bytes(b, p->ref[s], cut_conv_out_elems(c) * sizeof(float));
    }
}

void cut_wp_prepare_free(cut_wp_prepare *p)
{
    if (!p)
        return;
    for (int s = 0; s < 2; s++) {
        free(p->in[s]);
        free(p->w[s]);
        free(p->ref[s]);
        p->in[s] = p->w[s] = p->ref[s] = NULL;
    }
}

/* The name of a tensor of set s in messages: "weight" for set 0 (as before there were two), "set-1 weight". */
static const char *set_name(int s, const char *what, char *buf, size_t n)
{
    if (s == 0)
        return what;
    snprintf(buf, n, "set-1 %s", what);
    return buf;
}

/* Copies a length-prefixed float array of exactly want elements into a new allocation (caller frees). */
static int get_floats(cut_wp_rd *r, size_t want, const char *what, float **out, cut_err *e)
{
    const uint8_t *p;
    size_t n;
    const char *msg = strstr(what, "GEMM") ? "PREPARE_GEMM" : "PREPARE";
    if (cut_wp_get_bytes(r, &p, &n) != 0)
        return cut_err_set(e, "malformed %s message: the %s tensor runs past the end", msg, what);
    if (n != want * sizeof(float))
        return cut_err_set(e, "malformed %s message: the %s tensor has %zu bytes, the shape needs %zu", msg, what, n,
                           want * sizeof(float));
    *out = malloc(n ? n : 1);
    if (!*out)
        return cut_err_set(e, "out of memory for the %s tensor (%zu bytes)", what, n);
    memcpy(*out, p, n);
    return 0;
}

int cut_wp_prepare_decode(const cut_wp_frame *f, cut_wp_prepare *p, cut_err *e)
{
    memset(p, 0, sizeof *p);
    if (cut_wp_expect_type(f, CUT_WP_PREPARE, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t s[9] = {0};
    for (int i = 0; i < 9; i++)
        cut_wp_get_i32(&r, &s[i]);
    if (r.bad)
        return cut_err_set(e, "malformed PREPARE message (%zu bytes): the header fields run past the end", f->len);
    p->conv = (cut_conv){s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8]};
    if (cut_conv_validate(&p->conv, e) != 0)
        return cut_err_wrap(e, "PREPARE carries an invalid shape");
    for (int k = 0; k < 2; k++) {
        char n1[32], n2[32], n3[32];
        if (get_floats(&r, cut_conv_in_elems(&p->conv), set_name(k, "input", n1, sizeof n1), &p->in[k], e) ||
            get_floats(&r, cut_conv_w_elems(&p->conv), set_name(k, "weight", n2, sizeof n2), &p->w[k], e) ||
            get_floats(&r, cut_conv_out_elems(&p->conv), set_name(k, "reference", n3, sizeof n3), &p->ref[k], e)) {
            cut_wp_prepare_free(p);
            return -1;
        }
    }
    if (cut_wp_rd_finish(&r, f, e)) {
        cut_wp_prepare_free(p);
        return -1;
    }
    return 0;
}

void cut_wp_prepare_gemm_encode(const cut_wp_prepare_gemm *p, cut_buf *b)
{
    const cut_gemm *g = &p->gemm;
    const int32_t shape[5] = {g->m, g->n, g->k, (int32_t)g->layout, (int32_t)g->dtype};
    for (int i = 0; i < 5; i++)
        cut_wp_put_i32(b, shape[i]);
    for (int s = 0; s < 2; s++) {
        cut_wp_put_bytes(b, p->a[s], cut_gemm_a_elems(g) * sizeof(float));
        cut_wp_put_bytes(b, p->b[s], cut_gemm_b_elems(g) * sizeof(float));
        /* empty: the worker's DGEMM */
        cut_wp_put_bytes(b, p->ref[s], p->ref[s] ? cut_gemm_c_elems(g) * sizeof(float) : 0);
    }
}

void cut_wp_prepare_gemm_free(cut_wp_prepare_gemm *p)
{
    if (!p)
        return;
    for (int s = 0; s < 2; s++) {
        free(p->a[s]);
        free(p->b[s]);
        free(p->ref[s]);
        p->a[s] = p->b[s] = p->ref[s] = NULL;
    }
}

/* Layout NN/NT, a known dtype (A and B travel as floats already rounded to it), sizes as cut_gemm_validate. */
static int check_gemm_shape(const cut_gemm *g, cut_err *e)
{
    if (g->layout != CUT_GEMM_NN && g->layout != CUT_GEMM_NT)
        return cut_err_set(e, "PREPARE_GEMM carries an unknown layout %d (NN is 0, NT is 1)", (int)g->layout);
    if ((int)g->dtype < 0 || g->dtype >= CUT_DT_COUNT)
        return cut_err_set(e, "PREPARE_GEMM carries an unknown dtype %d", (int)g->dtype);
    if (cut_gemm_validate(g, e) != 0)
        return cut_err_wrap(e, "PREPARE_GEMM carries an invalid shape");
    return 0;
}

int cut_wp_prepare_gemm_decode(const cut_wp_frame *f, cut_wp_prepare_gemm *p, cut_err *e)
{
    memset(p, 0, sizeof *p);
    if (cut_wp_expect_type(f, CUT_WP_PREPARE_GEMM, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t s[5] = {0};
    for (int i = 0; i < 5; i++)
        cut_wp_get_i32(&r, &s[i]);
    if (r.bad)
        return cut_err_set(e, "malformed PREPARE_GEMM message (%zu bytes): the header fields run past the end",
                           f->len);
    p->gemm = (cut_gemm){s[0], s[1], s[2], (cut_gemm_layout)s[3], (cut_dtype)s[4]};
    if (check_gemm_shape(&p->gemm, e) != 0)
        return -1;
    for (int k = 0; k < 2; k++) {
        char n1[32], n2[32], n3[40];
        const uint8_t *rp;
        size_t rn = 0;
        if (get_floats(&r, cut_gemm_a_elems(&p->gemm), set_name(k, "GEMM A", n1, sizeof n1), &p->a[k], e) ||
            get_floats(&r, cut_gemm_b_elems(&p->gemm), set_name(k, "GEMM B", n2, sizeof n2), &p->b[k], e)) {
            cut_wp_prepare_gemm_free(p);
            return -1;
        }
        /* The reference is optional: empty means "compute it on the GPU" (cuBLAS DGEMM in the worker). */
        cut_wp_rd peek = r;
        if (cut_wp_get_bytes(&peek, &rp, &rn) == 0 && rn == 0)
            r = peek;
        else if (get_floats(&r, cut_gemm_c_elems(&p->gemm), set_name(k, "GEMM reference", n3, sizeof n3), &p->ref[k],
                            e)) {
            cut_wp_prepare_gemm_free(p);
            return -1;
        }
    }
    if (cut_wp_rd_finish(&r, f, e)) {
        cut_wp_prepare_gemm_free(p);
        return -1;
    }
    return 0;
}

int cut_wp_tma_check(const cut_tma_desc *t, cut_err *e)
{
    const unsigned long long dim_max = 1ull << 32, stride_max = 1ull << 40;
    char d[160];
    cut_wp_tma_describe(t, d, sizeof d);
    if (t->operand != 0 && t->operand != 1)
        return cut_err_set(e, "TMA descriptor (%s): operand %d (0 is A, 1 is B)", d, t->operand);
    if (t->elem_bytes != 2 && t->elem_bytes != 4)
        return cut_err_set(e, "TMA descriptor (%s): element size %d bytes (2 or 4)", d, t->elem_bytes);
    for (int i = 0; i < 2; i++)
        if (t->dims[i] < 1 || t->dims[i] > dim_max || t->box[i] < 1 || t->box[i] > 256)
            return cut_err_set(e, "TMA descriptor (%s): dimension %d or its box is out of range", d, i);
    if (t->row_bytes % 16 || t->row_bytes >= stride_max || t->row_bytes < t->dims[0] * (unsigned)t->elem_bytes)
        return cut_err_set(e, "TMA descriptor (%s): the row stride must be a multiple of 16 bytes, hold a row and be "
                              "below 2^40",
                           d);
    if (t->swizzle != 0 && t->swizzle != 32 && t->swizzle != 64 && t->swizzle != 128)
        return cut_err_set(e, "TMA descriptor (%s): swizzle %d (0, 32, 64 or 128)", d, t->swizzle);
    return 0;
}

void cut_wp_tma_describe(const cut_tma_desc *t, char *buf, size_t n)
{
    snprintf(buf, n, "%s dims %llux%llu row %llu B box %ux%u elem %d swizzle %d",
             t->operand == 0 ? "A" : t->operand == 1 ? "B" : "?", t->dims[0], t->dims[1], t->row_bytes, t->box[0],
             t->box[1], t->elem_bytes, t->swizzle);
}

static void put_tma(cut_buf *b, const cut_tma_desc *t)
{
    cut_wp_put_i32(b, t->operand);
    cut_wp_put_i32(b, t->elem_bytes);
    cut_wp_put_u64(b, t->dims[0]);
    cut_wp_put_u64(b, t->dims[1]);
    cut_wp_put_u64(b, t->row_bytes);
    cut_wp_put_u32(b, t->box[0]);
    cut_wp_put_u32(b, t->box[1]);
    cut_wp_put_i32(b, t->swizzle);
}

static void get_tma(cut_wp_rd *r, cut_tma_desc *t)
{
    int32_t v[3] = {0};
    uint64_t u[3] = {0};
    cut_wp_get_i32(r, &v[0]);
    cut_wp_get_i32(r, &v[1]);
    for (int i = 0; i < 3; i++)
        cut_wp_get_u64(r, &u[i]);
    cut_wp_get_u32(r, &t->box[0]);
    cut_wp_get_u32(r, &t->box[1]);
    cut_wp_get_i32(r, &v[2]);
    t->operand = v[0];
    t->elem_bytes = v[1];
    t->swizzle = v[2];
    t->dims[0] = u[0];
    t->dims[1] = u[1];
    t->row_bytes = u[2];
}

void cut_wp_measure_encode(const cut_wp_measure *m, cut_buf *b)
{
    for (int i = 0; i < 3; i++)
        cut_wp_put_u32(b, m->grid[i]);
    for (int i = 0; i < 3; i++)
        cut_wp_put_u32(b, m->block[i]);
    cut_wp_put_u32(b, m->smem_dynamic);
    cut_wp_put_str(b, m->entry);
    cut_wp_put_bytes(b, m->cubin, m->cubin_size);
    uint64_t bits;
    memcpy(&bits, &m->tol_scale, sizeof bits);
    cut_wp_put_u64(b, bits);
    const int ntma = m->ntma == 2 ? 2 : 0;
    cut_wp_put_u32(b, (uint32_t)ntma);
    for (int i = 0; i < ntma; i++)
        put_tma(b, &m->tma[i]);
}


static void get_measure(cut_wp_rd *r, cut_wp_measure *m)
{
    for (int i = 0; i < 3; i++)
        cut_wp_get_u32(r, &m->grid[i]);
    for (int i = 0; i < 3; i++)
        cut_wp_get_u32(r, &m->block[i]);
    cut_wp_get_u32(r, &m->smem_dynamic);
    cut_wp_get_str(r, m->entry, sizeof m->entry);
    cut_wp_get_bytes(r, &m->cubin, &m->cubin_size);
    uint64_t bits = 0;
    cut_wp_get_u64(r, &bits);
    memcpy(&m->tol_scale, &bits, sizeof bits);
    uint32_t ntma = 0;
    cut_wp_get_u32(r, &ntma);
    m->ntma = ntma > 2 ? 3 : (int)ntma; /* 1 and 3+ are refused by check_measure */
    for (int i = 0; i < (int)CUT_MIN(ntma, 2u); i++)
        get_tma(r, &m->tma[i]);
}

static int check_measure(const cut_wp_measure *m, const char *what, cut_err *e)
{
    if (!m->entry[0])
        return cut_err_set(e, "malformed %s message: empty entry name", what);
    if (!(m->tol_scale >= 0.0 && m->tol_scale <= 1000.0))
        return cut_err_set(e, "malformed %s message: tolerance factor %g", what, m->tol_scale);
    if (m->cubin_size == 0)
        return cut_err_set(e, "malformed %s message: empty cubin", what);
    if (m->ntma != 0 && m->ntma != 2)
        return cut_err_set(e, "malformed %s message: %s TMA descriptors (0 or 2)", what, m->ntma > 2 ? "3 or more" : "1");
    for (int i = 0; i < m->ntma; i++)
        if (cut_wp_tma_check(&m->tma[i], e) != 0)
            return cut_err_wrap(e, "malformed %s message", what);
    return 0;
}

int cut_wp_measure_decode(const cut_wp_frame *f, cut_wp_measure *m, cut_err *e)
{
    memset(m, 0, sizeof *m);
    if (cut_wp_expect_type(f, CUT_WP_MEASURE, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    get_measure(&r, m);
    if (cut_wp_rd_finish(&r, f, e))
        return -1;
    return check_measure(m, "MEASURE", e);
}

void cut_wp_put_plan(cut_buf *b, const cut_energy_plan *p)
{
    cut_wp_put_str(b, p->uuid);
    cut_wp_put_i32(b, p->lrounds);
    cut_wp_put_i32(b, p->min_steps);
    cut_wp_put_f64(b, p->warmup_s);
    cut_wp_put_f64(b, p->chunk_ms);
    cut_wp_put_f64(b, p->max_wait_s);
}

void cut_wp_get_plan(cut_wp_rd *r, cut_energy_plan *p)
{
    int32_t lrounds = 0, steps = 0;
    cut_wp_get_str(r, p->uuid, sizeof p->uuid);
    cut_wp_get_i32(r, &lrounds);
    cut_wp_get_i32(r, &steps);
    cut_wp_get_f64(r, &p->warmup_s);
    cut_wp_get_f64(r, &p->chunk_ms);
    cut_wp_get_f64(r, &p->max_wait_s);
    p->lrounds = lrounds;
    p->min_steps = steps;
}

double cut_wp_energy_timeout_s(double timeout_s, const cut_energy_plan *p)
{
    const double t = timeout_s > 0 ? timeout_s : 10.0;
    return t + p->warmup_s + (1.0 + p->lrounds * (double)p->min_steps) * p->max_wait_s;
}

void cut_wp_energy_encode(const cut_wp_measure *m, const cut_energy_plan *p, cut_buf *b)
{
    cut_wp_measure_encode(m, b);
    cut_wp_put_plan(b, p);
}

int cut_wp_energy_decode(const cut_wp_frame *f, cut_wp_measure *m, cut_energy_plan *p, cut_err *e)
{
    memset(m, 0, sizeof *m);
    memset(p, 0, sizeof *p);
    if (cut_wp_expect_type(f, CUT_WP_ENERGY, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    get_measure(&r, m);
    cut_wp_get_plan(&r, p);
    if (cut_wp_rd_finish(&r, f, e) || check_measure(m, "ENERGY", e))
        return -1;
    if (cut_energy_plan_check(p, e) != 0)
        return cut_err_wrap(e, "malformed ENERGY message");
    return 0;
}

static void put_stats(cut_buf *b, const cut_energy_stats *s)
{
    cut_wp_put_u64(b, (uint64_t)s->iters);
    const double v[] = {s->energy_mj,   s->window_s,    s->energy_per_iter_mj, s->time_per_iter_ms,
                        s->gflops,      s->avg_power_w, s->edp_ms_mj};
    for (size_t i = 0; i < CUT_ARRAY_LEN(v); i++)
        cut_wp_put_f64(b, v[i]);
    cut_wp_put_i32(b, s->counter_steps);
}

static void get_stats(cut_wp_rd *r, cut_energy_stats *s)
{
    uint64_t iters = 0;
    int32_t steps = 0;
    cut_wp_get_u64(r, &iters);
    double *v[] = {&s->energy_mj,   &s->window_s,    &s->energy_per_iter_mj, &s->time_per_iter_ms,
                   &s->gflops,      &s->avg_power_w, &s->edp_ms_mj};
    for (size_t i = 0; i < CUT_ARRAY_LEN(v); i++)
        cut_wp_get_f64(r, v[i]);
    cut_wp_get_i32(r, &steps);
    s->iters = (long long)iters;
    s->counter_steps = steps;
}

void cut_wp_energy_result_encode(const cut_result *res, int ok, const char *why, const cut_energy_result *er,
                                 cut_buf *b)
{
    cut_wp_result_encode(res, "", b);
    cut_wp_put_u32(b, ok ? 1u : 0u);
    cut_wp_put_str(b, why ? why : "");
    cut_wp_put_i32(b, er->lrounds);
    for (int i = 0; i < er->lrounds; i++)
        put_stats(b, &er->round[i]);
    const double v[] = {er->time_ms, er->energy_mj, er->gflops,        er->power_w, er->edp,
                        er->cv_energy, er->cv_time, er->step_period_s, er->seconds};
    for (size_t i = 0; i < CUT_ARRAY_LEN(v); i++)
        cut_wp_put_f64(b, v[i]);
    cut_wp_put_u32(b, er->sm_mhz_min);
    cut_wp_put_u32(b, er->sm_mhz_max);
    cut_wp_put_u32(b, er->mem_mhz);
    cut_wp_put_u32(b, er->temp_c_max);
    cut_wp_put_u64(b, er->throttle);
}

int cut_wp_energy_result_decode(const cut_wp_frame *f, cut_result *res, int *ok, char *why, size_t why_len,
                                cut_energy_result *er, cut_err *e)
{
    memset(res, 0, sizeof *res);
    memset(er, 0, sizeof *er);
    if (cut_wp_expect_type(f, CUT_WP_ENERGY_RESULT, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t st = -1, reps = 0, lrounds = -1;
    char algo[8], w[CUT_ERR_LEN];
    uint32_t okv = 0;
    cut_wp_get_result(&r, res, &st, &reps, algo, sizeof algo);
    cut_wp_get_u32(&r, &okv);
    cut_wp_get_str(&r, w, sizeof w);
    cut_wp_get_i32(&r, &lrounds);
    if (lrounds < 0 || lrounds > CUT_ENERGY_MAX_LROUNDS)
        return cut_err_set(e, "malformed ENERGY_RESULT message: %d lrounds", (int)lrounds);
    er->lrounds = lrounds;
    for (int i = 0; i < lrounds; i++)
        get_stats(&r, &er->round[i]);
    double *v[] = {&er->time_ms, &er->energy_mj, &er->gflops,        &er->power_w, &er->edp,
                   &er->cv_energy, &er->cv_time, &er->step_period_s, &er->seconds};
    for (size_t i = 0; i < CUT_ARRAY_LEN(v); i++)
        cut_wp_get_f64(&r, v[i]);
    cut_wp_get_u32(&r, &er->sm_mhz_min);
    cut_wp_get_u32(&r, &er->sm_mhz_max);
    cut_wp_get_u32(&r, &er->mem_mhz);
    cut_wp_get_u32(&r, &er->temp_c_max);
    uint64_t thr = 0;
    cut_wp_get_u64(&r, &thr);
    er->throttle = thr;
    if (cut_wp_rd_finish(&r, f, e) || cut_wp_result_status(f, res, st, reps, e))
        return -1;
    if (algo[0] || okv > 1)
        return cut_err_set(e, "malformed ENERGY_RESULT message: %s", algo[0] ? "an algorithm name" : "ok flag > 1");
    *ok = okv != 0;
    if (why && why_len)
        snprintf(why, why_len, "%s", w);
    return 0;
}

void cut_wp_result_encode(const cut_result *res, const char *algo, cut_buf *b)
{
    cut_wp_put_i32(b, (int32_t)res->status);
    cut_wp_put_str(b, res->error);
    cut_wp_put_f64(b, res->median_ms);
    cut_wp_put_f64(b, res->min_ms);
    cut_wp_put_f64(b, res->max_ms);
    cut_wp_put_i32(b, res->repeats);
    cut_wp_put_f64(b, res->max_abs_err);
    cut_wp_put_str(b, algo ? algo : "");
}

void cut_wp_get_result(cut_wp_rd *r, cut_result *res, int32_t *st, int32_t *reps, char *algo, size_t algo_len)
{
    cut_wp_get_i32(r, st);
    cut_wp_get_str(r, res->error, sizeof res->error);
    cut_wp_get_f64(r, &res->median_ms);
    cut_wp_get_f64(r, &res->min_ms);
    cut_wp_get_f64(r, &res->max_ms);
    cut_wp_get_i32(r, reps);
    cut_wp_get_f64(r, &res->max_abs_err);
    cut_wp_get_str(r, algo, algo_len);
}

int cut_wp_result_status(const cut_wp_frame *f, cut_result *res, int32_t st, int32_t reps, cut_err *e)
{
    if (st < 0 || st >= CUT_ST_COUNT)
        return cut_err_set(e, "malformed %s message: unknown status %d", cut_wp_type_name(f->type), (int)st);
    res->status = (cut_status)st;
    res->repeats = reps;
    return 0;
}

int cut_wp_result_decode(const cut_wp_frame *f, cut_result *res, char *algo, size_t algo_len, cut_err *e)
{
    memset(res, 0, sizeof *res);
    if (f->type != CUT_WP_RESULT && f->type != CUT_WP_CUDNN_RESULT && f->type != CUT_WP_CUBLAS_RESULT)
        return cut_err_set(e, "expected a RESULT message, got %s", cut_wp_type_name(f->type));
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t st = -1, reps = 0;
    char a[128] = "";
    cut_wp_get_result(&r, res, &st, &reps, a, sizeof a);
    if (cut_wp_rd_finish(&r, f, e) || cut_wp_result_status(f, res, st, reps, e))
        return -1;
    if (algo && algo_len)
        snprintf(algo, algo_len, "%s", a);
    return 0;
}

void cut_wp_vendor_encode(const cut_vendor_opts *o, cut_buf *b)
{
    cut_wp_put_i32(b, o->heuristic_n);
    cut_wp_put_i32(b, o->enumerate);
    cut_wp_put_i32(b, o->max_configs);
    cut_wp_put_f64(b, o->budget_s);
}

int cut_wp_vendor_decode(const cut_wp_frame *f, cut_vendor_opts *o, cut_err *e)
{
    memset(o, 0, sizeof *o);
    if (cut_wp_expect_type(f, CUT_WP_VENDOR, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t v[3] = {0};
    for (int i = 0; i < 3; i++)
        cut_wp_get_i32(&r, &v[i]);
    cut_wp_get_f64(&r, &o->budget_s);
    if (cut_wp_rd_finish(&r, f, e))
        return -1;
    o->heuristic_n = v[0];
    o->enumerate = v[1];
    o->max_configs = v[2];
    if (v[0] < 0 || v[0] > 256 || (v[1] != 0 && v[1] != 1) || v[2] < 0 || v[2] > 4096 || !isfinite(o->budget_s) ||
        !(o->budget_s > 0) || o->budget_s > 1e6)
        return cut_err_set(e,
                           "malformed VENDOR message: heuristic %d (0..256), enumerate %d (0 or 1), max configs %d "
                           "(0..4096), budget %g s (0..1e6)",
                           (int)v[0], (int)v[1], (int)v[2], o->budget_s);
    return 0;
}

void cut_wp_vendor_result_encode(const cut_vendor_result *v, cut_buf *b)
{
    cut_wp_result_encode(&v->best.res, v->best.config, b);
    const int32_t c[5] = {v->tried, v->valid, v->heuristic, v->enumerated, v->budget_hit};
    for (int i = 0; i < 5; i++)
        cut_wp_put_i32(b, c[i]);
    cut_wp_put_str(b, v->note);
    const int ntop = CUT_MAX(0, CUT_MIN(v->ntop, CUT_VENDOR_TOP));
    cut_wp_put_i32(b, ntop);
    for (int i = 0; i < ntop; i++)
        cut_wp_result_encode(&v->top[i].res, v->top[i].config, b);
}

int cut_wp_vendor_result_decode(const cut_wp_frame *f, cut_vendor_result *v, cut_err *e)
{
    memset(v, 0, sizeof *v);
    if (cut_wp_expect_type(f, CUT_WP_VENDOR_RESULT, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t st[1 + CUT_VENDOR_TOP] = {0}, reps[1 + CUT_VENDOR_TOP] = {0}, c[5] = {0}, ntop = 0;
    cut_wp_get_result(&r, &v->best.res, &st[0], &reps[0], v->best.config, sizeof v->best.config);
    for (int i = 0; i < 5; i++)
        cut_wp_get_i32(&r, &c[i]);
    cut_wp_get_str(&r, v->note, sizeof v->note);
    cut_wp_get_i32(&r, &ntop);
    if (!r.bad && (ntop < 0 || ntop > CUT_VENDOR_TOP))
        return cut_err_set(e, "malformed VENDOR_RESULT message: %d top entries (at most %d)", (int)ntop,
                           CUT_VENDOR_TOP);
    if (r.bad)
        ntop = 0;
    for (int i = 0; i < ntop; i++)
        cut_wp_get_result(&r, &v->top[i].res, &st[i + 1], &reps[i + 1], v->top[i].config, sizeof v->top[i].config);
    if (cut_wp_rd_finish(&r, f, e) || cut_wp_result_status(f, &v->best.res, st[0], reps[0], e))
        return -1;
    for (int i = 0; i < ntop; i++)
        if (cut_wp_result_status(f, &v->top[i].res, st[i + 1], reps[i + 1], e))
            return -1;
    if (c[0] < 0 || c[1] < 0 || c[1] > c[0] || c[2] < 0 || c[3] < 0 || (c[4] != 0 && c[4] != 1))
        return cut_err_set(e, "malformed VENDOR_RESULT message: counts tried %d valid %d heuristic %d enumerated %d "
                              "budget flag %d",
                           (int)c[0], (int)c[1], (int)c[2], (int)c[3], (int)c[4]);
    v->tried = c[0];
    v->valid = c[1];
    v->heuristic = c[2];
    v->enumerated = c[3];
    v->budget_hit = c[4];
    v->ntop = ntop;
    return 0;
}

void cut_wp_error_encode(const char *msg, cut_buf *b) { cut_wp_put_str(b, msg); }

int cut_wp_error_decode(const cut_wp_frame *f, char *msg, size_t n)
{
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    char tmp[CUT_ERR_LEN];
    if (f->type != CUT_WP_ERROR || cut_wp_get_str(&r, tmp, sizeof tmp) != 0) {
        snprintf(msg, n, "malformed ERROR message");
        return -1;
    }
    snprintf(msg, n, "%s", tmp);
    return 0;
}
