/* cutune — the energy meter: counter-edge-aligned windows around a running kernel (see cutune/energy.h). */
#include "cutune/energy.h"
#include "cutune/util.h"
#include "gpu/nvml.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void cut_energy_plan_default(cut_energy_plan *p)
{
    memset(p, 0, sizeof *p);
    p->lrounds = 3;
    p->min_steps = CUT_ENERGY_MIN_STEPS;
    p->warmup_s = 0.3;
    p->chunk_ms = 10.0;
    p->max_wait_s = 5.0;
}

int cut_energy_plan_check(const cut_energy_plan *p, cut_err *e)
{
    if (p->lrounds < 1 || p->lrounds > CUT_ENERGY_MAX_LROUNDS)
        return cut_err_set(e, "energy: lrounds must be in 1..%d, got %d", CUT_ENERGY_MAX_LROUNDS, p->lrounds);
    if (p->min_steps < 1 || p->min_steps > 1000)
        return cut_err_set(e, "energy: counter steps per lround must be in 1..1000, got %d", p->min_steps);
    if (!(p->warmup_s >= 0 && p->warmup_s <= 60))
        return cut_err_set(e, "energy: warm-up must be in 0..60 s, got %g", p->warmup_s);
    if (!(p->chunk_ms >= 0.1 && p->chunk_ms <= 1000))
        return cut_err_set(e, "energy: chunk must be in 0.1..1000 ms, got %g", p->chunk_ms);
    if (!(p->max_wait_s > 0 && p->max_wait_s <= 600))
        return cut_err_set(e, "energy: counter wait must be in (0, 600] s, got %g", p->max_wait_s);
    return 0;
}

static int open_device(const char *uuid, nvmlDevice_t *dev, cut_err *e)
{
    if (!cut_nvml_load(e))
        return -1;
    nvmlReturn_t rc = cut_nvml_device_by_uuid(uuid, dev);
    if (rc != NVML_SUCCESS) {
        char d[160];
        cut_nvml_describe(rc, d, sizeof d);
        return cut_err_set(e, "energy: NVML does not know GPU %s: %s", uuid[0] ? uuid : "(no UUID)", d);
    }
    return 0;
}

static int read_counter(nvmlDevice_t dev, cut_energy_sample *s, cut_err *e)
{
    unsigned long long mj = 0;
    nvmlReturn_t rc = cut_nvml_energy_mj(dev, &mj);
    if (rc != NVML_SUCCESS) {
        char d[160];
        cut_nvml_describe(rc, d, sizeof d);
        return cut_err_set(e, "energy: nvmlDeviceGetTotalEnergyConsumption failed: %s%s", d,
                           rc == NVML_ERROR_NOT_SUPPORTED ? " (the energy counter needs a Volta or newer GPU)" : "");
    }
    s->t_s = cut_now_s();
    s->mj = mj;
    return 0;
}

/* ---- the running kernel ---- */

/* A window edge: the counter reading where it changed, placed half-way between the chunk boundary before and the
 * one after the change (time, iterations and device time alike), so both ends of a window err the same way. */
typedef struct edge {
    cut_energy_sample s;
    double iters, device_s;
} edge;

typedef struct meter {
    const cut_energy_plan *p;
    nvmlDevice_t dev;
    cut_energy_run_fn run;
    void *ctx;
    long long chunk;     /* iterations per chunk */
    long long iters;     /* finished since the start of the measurement */
    double device_s;     /* their device time */
    long long last_done; /* finished by the last call */
    double last_done_s;
    cut_energy_result *out;
} meter;

/* Queues one chunk, collects the previous one, reads the counter (while the queued chunk runs). */
static int run_chunk(meter *m, cut_energy_sample *s, cut_err *e)
{
    long long done = 0;
    double done_s = 0;
    if (m->run(m->ctx, m->chunk, &done, &done_s, e) != 0)
        return -1;
    m->iters += done;
    m->device_s += done_s;
    m->last_done = done;
    m->last_done_s = done_s;
    return read_counter(m->dev, s, e);
}

/* Waits for the chunk still queued (nothing new is queued). */
static int drain(meter *m, cut_err *e)
{
    long long done = 0;
    double done_s = 0;
    return m->run(m->ctx, 0, &done, &done_s, e);
}

/* Chunk length: chunk_ms, but at most a tenth of the counter's period so that an edge is placed to within 5% of
 * a step (the period is estimated from the warm-up's readings; unknown: CUT_ENERGY_DEFAULT_STEP_S). */
static void set_chunk(meter *m, double per_iter_s, double period_s)
{
    double target = m->p->chunk_ms * 1e-3;
    if (period_s <= 0)
        period_s = CUT_ENERGY_DEFAULT_STEP_S;
    target = CUT_MIN(target, period_s / 10);
    if (per_iter_s > 0)
        m->chunk = CUT_MAX(1LL, (long long)llround(target / per_iter_s));
}

/* Warm-up: chunks double until one takes about chunk_ms, then run for warmup_s; the counter's changes seen on
 * the way estimate its period. */
static int warm_up(meter *m, cut_energy_sample *last, cut_err *e)
{
    const double t0 = cut_now_s();
    const double target_s = m->p->chunk_ms * 1e-3;
    cut_energy_sample seen[256];
    size_t nseen = 0;
    m->chunk = 1;
    for (;;) {
        if (run_chunk(m, last, e) != 0)
            return -1;
        if (nseen < CUT_ARRAY_LEN(seen))
            seen[nseen++] = *last;
        if (m->last_done == 0)
            continue;
        const double per_iter = m->last_done_s / (double)m->last_done;
        if (per_iter * (double)m->chunk < 0.5 * target_s && m->chunk < (LLONG_MAX >> 2)) {
            m->chunk *= 2;
            continue;
        }
        if (per_iter > 0)
            m->chunk = CUT_MAX(1LL, (long long)llround(target_s / per_iter));
        if (cut_now_s() - t0 >= m->p->warmup_s)
            break;
    }
    const double per_iter = m->iters > 0 ? m->device_s / (double)m->iters : 0;
    set_chunk(m, per_iter, cut_energy_step_period_s(seen, nseen));
    return 0;
}

/* Runs chunks until the counter differs from ed's reading; ed becomes that edge. */
static int run_to_edge(meter *m, edge *ed, cut_err *e)
{
    const double t0 = cut_now_s();
    double t_prev = cut_now_s();
    for (;;) {
        cut_energy_sample s = {0}; /* set by run_chunk; initialised for GCC -O2 -Wmaybe-uninitialized */
        if (run_chunk(m, &s, e) != 0)
            return -1;
        if (s.mj < ed->s.mj)
            return cut_err_set(e, "energy: the counter went backwards (%llu mJ then %llu mJ); was the driver reloaded?",
                               ed->s.mj, s.mj);
        if (s.mj != ed->s.mj) {
            ed->s.mj = s.mj;
            ed->s.t_s = 0.5 * (t_prev + s.t_s);
            ed->iters = (double)m->iters - 0.5 * (double)m->last_done;
            ed->device_s = m->device_s - 0.5 * m->last_done_s;
            return 0;
        }
        if (s.t_s - t0 > m->p->max_wait_s)
            return cut_err_set(e, "energy: NVML's energy counter did not change in %.1f s of running the kernel "
                                  "(stuck at %llu mJ); this GPU or driver does not update it",
                               m->p->max_wait_s, s.mj);
        t_prev = s.t_s;
    }
}

/* Clocks, temperature and clock-event reasons (best effort: what NVML cannot say stays 0). Outside the windows:
 * four NVML reads can outlast a queued chunk. */
static void note_device(meter *m)
{
    cut_energy_result *o = m->out;
    unsigned int v = 0;
    unsigned long long reasons = 0;
    if (cut_nvml_clock_mhz(m->dev, NVML_CLOCK_SM, 0, &v) == NVML_SUCCESS) {
        o->sm_mhz_min = o->sm_mhz_min ? CUT_MIN(o->sm_mhz_min, v) : v;
        o->sm_mhz_max = CUT_MAX(o->sm_mhz_max, v);
    }
    if (cut_nvml_clock_mhz(m->dev, NVML_CLOCK_MEM, 0, &v) == NVML_SUCCESS)
        o->mem_mhz = v;
    if (cut_nvml_temperature_c(m->dev, &v) == NVML_SUCCESS)
        o->temp_c_max = CUT_MAX(o->temp_c_max, v);
    if (cut_nvml_throttle_reasons(m->dev, &reasons) == NVML_SUCCESS)
        o->throttle |= reasons;
}

/* One window from the edge *ed to the edge min_steps counter changes later (which becomes *ed). */
static int window(meter *m, edge *ed, double flops, cut_energy_stats *st, cut_err *e)
{
    edge start = *ed;
    int changes = 0;
    for (; changes < m->p->min_steps; changes++)
        if (run_to_edge(m, ed, e) != 0)
            return -1;
    cut_energy_sample s[2] = {start.s, ed->s};
    long long iters = llround(ed->iters - start.iters);
    if (cut_energy_compute(s, 2, ed->device_s - start.device_s, iters > 0 ? iters : 1, flops, st, e) != 0)
        return -1;
    st->counter_steps = changes; /* the two samples above hide the changes in between */
    return 0;
}

static void summarise(cut_energy_result *o, double flops)
{
    double t[CUT_ENERGY_MAX_LROUNDS], en[CUT_ENERGY_MAX_LROUNDS];
    double window_s = 0, power = 0;
    int steps = 0;
    for (int i = 0; i < o->lrounds; i++) {
        t[i] = o->round[i].time_per_iter_ms;
        en[i] = o->round[i].energy_per_iter_mj;
        o->time_ms += t[i] / o->lrounds;
        o->energy_mj += en[i] / o->lrounds;
        power += o->round[i].avg_power_w;
        window_s += o->round[i].window_s;
        steps += o->round[i].counter_steps;
    }
    o->power_w = power / o->lrounds;
    o->gflops = o->time_ms > 0 ? flops / (o->time_ms * 1e6) : 0;
    o->edp = o->time_ms * o->energy_mj;
    o->cv_energy = cut_energy_cv(en, (size_t)o->lrounds);
    o->cv_time = cut_energy_cv(t, (size_t)o->lrounds);
    o->step_period_s = steps > 0 ? window_s / steps : 0;
}

int cut_energy_measure(const cut_energy_plan *p, cut_energy_run_fn run, void *ctx, double flops_per_iter,
                       cut_energy_result *out, cut_err *e)
{
    memset(out, 0, sizeof *out);
    if (cut_energy_plan_check(p, e) != 0)
        return -1;
    const double t0 = cut_now_s();
    meter m = {.p = p, .run = run, .ctx = ctx, .out = out};
    if (open_device(p->uuid, &m.dev, e) != 0)
        return -1;
    edge ed = {{0}};
    note_device(&m);
    if (warm_up(&m, &ed.s, e) != 0 || run_to_edge(&m, &ed, e) != 0) {
        cut_err ignore;
        drain(&m, &ignore);
        return -1;
    }
    for (int r = 0; r < p->lrounds; r++) {
        if (window(&m, &ed, flops_per_iter, &out->round[r], e) != 0) {
            cut_err ignore;
            drain(&m, &ignore);
            return -1;
        }
        out->lrounds = r + 1;
    }
    note_device(&m);
    if (drain(&m, e) != 0)
        return -1;
    summarise(out, flops_per_iter);
    out->seconds = cut_now_s() - t0;
    return 0;
}

/* ---- idle power ---- */

static void nap_ms(double ms)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(ms * 1e6)};
    nanosleep(&ts, NULL);
}

/* Polls (every 2 ms, nothing running) until the counter differs from *last. */
static int idle_to_edge(nvmlDevice_t dev, cut_energy_sample *last, double max_wait_s, cut_err *e)
{
    const double t0 = cut_now_s();
    double t_prev = t0;
    for (;;) {
        cut_energy_sample s;
        nap_ms(1.0);
        if (read_counter(dev, &s, e) != 0)
            return -1;
        const double t_read = s.t_s;
        s.t_s = 0.5 * (t_prev + t_read); /* the change happened between the two readings */
        t_prev = t_read;
        if (s.mj < last->mj)
            return cut_err_set(e, "energy: the counter went backwards while idle (%llu mJ then %llu mJ)", last->mj,
                               s.mj);
        if (s.mj != last->mj) {
            *last = s;
            return 0;
        }
        if (t_read - t0 > max_wait_s)
            return cut_err_set(e, "energy: NVML's energy counter did not change in %.1f s (stuck at %llu mJ)",
                               max_wait_s, s.mj);
    }
}

int cut_energy_idle_w(const char *uuid, int steps, double max_wait_s, double *watts, cut_err *e)
{
    nvmlDevice_t dev;
    if (steps < 1)
        return cut_err_set(e, "energy: idle power needs at least 1 counter step, got %d", steps);
    if (open_device(uuid, &dev, e) != 0)
        return -1;
    cut_energy_sample a, b;
    if (read_counter(dev, &a, e) != 0 || idle_to_edge(dev, &a, max_wait_s, e) != 0)
        return -1;
    b = a;
    for (int i = 0; i < steps; i++)
        if (idle_to_edge(dev, &b, max_wait_s, e) != 0)
            return -1;
    *watts = (double)(b.mj - a.mj) / ((b.t_s - a.t_s) * 1e3);
    return 0;
}
