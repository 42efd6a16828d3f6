/* cutune — the measurement worker's message codecs (both sides): HELLO, a run's timing prefix, TMA descriptors,
 * energy plans and measurements, results, the vendor options and VENDOR_RESULT, ERROR. Framing and the payload
 * cursor in worker_wire.c; PREPARE_WORK, RUN's body and RUN_RESULT in worker_proto_work.c. */
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

/* The timing policy as every run request begins with it: i32 warmup, min/max repeats, flush, graph, warm; f64 min
 * total and timeout. */
void cut_wp_put_timing(cut_buf *b, const cut_timing *t)
{
    cut_wp_put_i32(b, t->warmup);
    cut_wp_put_i32(b, t->min_repeats);
    cut_wp_put_i32(b, t->max_repeats);
    cut_wp_put_i32(b, t->flush_l2);
    cut_wp_put_i32(b, t->graph);
    cut_wp_put_i32(b, t->warm);
    cut_wp_put_f64(b, t->min_total_ms);
    cut_wp_put_f64(b, t->timeout_s);
}

void cut_wp_get_timing(cut_wp_rd *r, cut_timing *tm)
{
    int32_t t[6] = {0};
    for (int i = 0; i < 6; i++)
        cut_wp_get_i32(r, &t[i]);
    cut_wp_get_f64(r, &tm->min_total_ms);
    cut_wp_get_f64(r, &tm->timeout_s);
    tm->warmup = t[0];
    tm->min_repeats = t[1];
    tm->max_repeats = t[2];
    tm->flush_l2 = t[3];
    tm->graph = t[4];
    tm->warm = t[5];
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

int cut_wp_is_run(uint32_t type) { return type == CUT_WP_RUN; }

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
    if (t->planes > dim_max)
        return cut_err_set(e, "TMA descriptor (%s): %llu planes (at most 2^32)", d, t->planes);
    if (t->planes && (t->plane_bytes % 16 || t->plane_bytes >= stride_max || t->plane_bytes / t->row_bytes < t->dims[1]))
        return cut_err_set(e, "TMA descriptor (%s): the plane stride must be a multiple of 16 bytes, hold a plane "
                              "(dims[1] rows) and be below 2^40",
                           d);
    return 0;
}

unsigned long long cut_wp_tma_span(const cut_tma_desc *t)
{
    unsigned long long a, b, c = 0, s;
    if (__builtin_mul_overflow(t->dims[0], (unsigned long long)(unsigned)t->elem_bytes, &a) ||
        __builtin_mul_overflow(t->dims[1] ? t->dims[1] - 1 : 0, t->row_bytes, &b) ||
        (t->planes && __builtin_mul_overflow(t->planes - 1, t->plane_bytes, &c)) || __builtin_add_overflow(a, b, &s) ||
        __builtin_add_overflow(s, c, &s))
        return ~0ull;
    return s;
}

void cut_wp_tma_describe(const cut_tma_desc *t, char *buf, size_t n)
{
    int w = snprintf(buf, n, "%s dims %llux%llu row %llu B box %ux%u elem %d swizzle %d",
                     t->operand == 0 ? "A" : t->operand == 1 ? "B" : "?", t->dims[0], t->dims[1], t->row_bytes,
                     t->box[0], t->box[1], t->elem_bytes, t->swizzle);
    if (t->planes && w >= 0 && (size_t)w < n)
        snprintf(buf + w, n - (size_t)w, " planes %llu of %llu B", t->planes, t->plane_bytes);
}

void cut_wp_put_tma(cut_buf *b, const cut_tma_desc *t)
{
    cut_wp_put_i32(b, t->operand);
    cut_wp_put_i32(b, t->elem_bytes);
    cut_wp_put_u64(b, t->dims[0]);
    cut_wp_put_u64(b, t->dims[1]);
    cut_wp_put_u64(b, t->row_bytes);
    cut_wp_put_u32(b, t->box[0]);
    cut_wp_put_u32(b, t->box[1]);
    cut_wp_put_i32(b, t->swizzle);
    cut_wp_put_u64(b, t->planes);
    cut_wp_put_u64(b, t->plane_bytes);
}

void cut_wp_get_tma(cut_wp_rd *r, cut_tma_desc *t)
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
    uint64_t p[2] = {0};
    cut_wp_get_u64(r, &p[0]);
    cut_wp_get_u64(r, &p[1]);
    t->planes = p[0];
    t->plane_bytes = p[1];
    t->operand = v[0];
    t->elem_bytes = v[1];
    t->swizzle = v[2];
    t->dims[0] = u[0];
    t->dims[1] = u[1];
    t->row_bytes = u[2];
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

void cut_wp_put_energy(cut_buf *b, int ok, const char *why, const cut_energy_result *er)
{
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

int cut_wp_get_energy(cut_wp_rd *r, int *ok, char *why, size_t why_len, cut_energy_result *er, cut_err *e)
{
    memset(er, 0, sizeof *er);
    int32_t lrounds = -1;
    char w[CUT_ERR_LEN];
    uint32_t okv = 0;
    cut_wp_get_u32(r, &okv);
    cut_wp_get_str(r, w, sizeof w);
    cut_wp_get_i32(r, &lrounds);
    if (r->bad)
        return cut_err_set(e, "malformed RUN_RESULT message: the energy part runs past the end");
    if (lrounds < 0 || lrounds > CUT_ENERGY_MAX_LROUNDS)
        return cut_err_set(e, "malformed RUN_RESULT message: %d lrounds", (int)lrounds);
    if (okv > 1)
        return cut_err_set(e, "malformed RUN_RESULT message: energy ok flag %u", okv);
    er->lrounds = lrounds;
    for (int i = 0; i < lrounds; i++)
        get_stats(r, &er->round[i]);
    double *v[] = {&er->time_ms, &er->energy_mj, &er->gflops,        &er->power_w, &er->edp,
                   &er->cv_energy, &er->cv_time, &er->step_period_s, &er->seconds};
    for (size_t i = 0; i < CUT_ARRAY_LEN(v); i++)
        cut_wp_get_f64(r, v[i]);
    cut_wp_get_u32(r, &er->sm_mhz_min);
    cut_wp_get_u32(r, &er->sm_mhz_max);
    cut_wp_get_u32(r, &er->mem_mhz);
    cut_wp_get_u32(r, &er->temp_c_max);
    uint64_t thr = 0;
    cut_wp_get_u64(r, &thr);
    er->throttle = thr;
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
    cut_wp_put_f64(b, res->warm_ms);
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
    cut_wp_get_f64(r, &res->warm_ms);
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

void cut_wp_put_vendor(cut_buf *b, const cut_vendor_opts *o)
{
    cut_wp_put_i32(b, o->heuristic_n);
    cut_wp_put_i32(b, o->enumerate);
    cut_wp_put_i32(b, o->max_configs);
    cut_wp_put_f64(b, o->budget_s);
}

int cut_wp_vendor_check(const cut_vendor_opts *o, cut_err *e)
{
    if (o->heuristic_n < 0 || o->heuristic_n > 256 || (o->enumerate != 0 && o->enumerate != 1) || o->max_configs < 0 ||
        o->max_configs > 4096 || !isfinite(o->budget_s) || !(o->budget_s > 0) || o->budget_s > 1e6)
        return cut_err_set(e,
                           "vendor options: heuristic %d (0..256), enumerate %d (0 or 1), max configs %d "
                           "(0..4096), budget %g s (0..1e6)",
                           o->heuristic_n, o->enumerate, o->max_configs, o->budget_s);
    return 0;
}

void cut_wp_get_vendor(cut_wp_rd *r, cut_vendor_opts *o)
{
    int32_t v[3] = {0};
    for (int i = 0; i < 3; i++)
        cut_wp_get_i32(r, &v[i]);
    cut_wp_get_f64(r, &o->budget_s);
    o->heuristic_n = v[0];
    o->enumerate = v[1];
    o->max_configs = v[2];
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
