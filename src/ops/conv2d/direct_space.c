/* cutune — the direct-convolution template's knob space.
 *
 * Each block computes a BCO x BOH x BOW tile of one image's output with TCO x TOH x TOW threads; each thread holds
 * an RCO x ROH x ROW register tile (co contiguous, oh strided by TOH, ow in groups of VEC strided by TOW*VEC so that
 * neighbouring threads touch neighbouring addresses). The reduction runs over input channels in steps of RC and
 * filter rows in steps of RKH, optionally staged through shared memory. */
#include "ops/conv2d/templates.h"

#include <stdio.h>

static const char *const knob_names[CUT_D_NKNOBS] = {
    "tco", "toh", "tow", "rco", "roh", "row", "rc", "rkh", "smem", "unroll", "vec",
};

static const int v_tco[] = {1, 2, 4, 8, 16, 32, 64};
static const int v_toh[] = {1, 2, 4, 8, 16};
static const int v_tow[] = {1, 2, 4, 8, 16, 32};
static const int v_rco[] = {1, 2, 4, 8};
static const int v_roh[] = {1, 2, 4};
static const int v_row[] = {1, 2, 4, 8};
static const int v_rc[] = {1, 2, 4, 8, 16, 32};
static const int v_smem[] = {0, 1};
static const int v_unroll[] = {0, 16, 64, 512};
static const int v_vec[] = {1, 2, 4};

#define PICK(r, v) cut_pick(r, v, (int)CUT_ARRAY_LEN(v))
#define STEP(r, v, cur) cut_step_in(r, v, (int)CUT_ARRAY_LEN(v), cur)

/* fp32 NCHW only: the CUDA-core templates read floats in that layout (igemm_tc computes the other dtypes). */
static int applies(const cut_conv *c) { return cut_conv_is_default(c); }

static int pick_divisor(cut_rng *r, int n)
{
    int divs[64], nd = 0;
    for (int i = 1; i <= n && nd < 64; i++)
        if (n % i == 0)
            divs[nd++] = i;
    return divs[cut_rng_below(r, (uint32_t)nd)];
}

static void sample(const cut_conv *c, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    (void)d;
    s->k[CUT_D_TCO] = PICK(r, v_tco);
    s->k[CUT_D_TOH] = PICK(r, v_toh);
    s->k[CUT_D_TOW] = PICK(r, v_tow);
    s->k[CUT_D_RCO] = PICK(r, v_rco);
    s->k[CUT_D_ROH] = PICK(r, v_roh);
    s->k[CUT_D_ROW] = PICK(r, v_row);
    s->k[CUT_D_RC] = PICK(r, v_rc);
    s->k[CUT_D_RKH] = pick_divisor(r, c->kh);
    s->k[CUT_D_SMEM] = PICK(r, v_smem);
    s->k[CUT_D_UNROLL] = PICK(r, v_unroll);
    s->k[CUT_D_VEC] = PICK(r, v_vec);
}

static void mutate(const cut_conv *c, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    (void)d;
    int which = (int)cut_rng_below(r, CUT_D_NKNOBS);
    int *k = s->k;
    switch (which) {
    case CUT_D_TCO: k[which] = STEP(r, v_tco, k[which]); break;
    case CUT_D_TOH: k[which] = STEP(r, v_toh, k[which]); break;
    case CUT_D_TOW: k[which] = STEP(r, v_tow, k[which]); break;
    case CUT_D_RCO: k[which] = STEP(r, v_rco, k[which]); break;
    case CUT_D_ROH: k[which] = STEP(r, v_roh, k[which]); break;
    case CUT_D_ROW: k[which] = STEP(r, v_row, k[which]); break;
    case CUT_D_RC: k[which] = STEP(r, v_rc, k[which]); break;
    case CUT_D_RKH: k[which] = pick_divisor(r, c->kh); break;
    case CUT_D_SMEM: k[which] = !k[which]; break;
    case CUT_D_UNROLL: k[which] = PICK(r, v_unroll); break;
    default: k[which] = STEP(r, v_vec, k[which]); break;
    }
}

void cut_direct_geometry(const cut_conv *c, const cut_sched *s, cut_direct_geom *g)
{
    const int *k = s->k;
    g->oh = cut_conv_oh(c);
    g->ow = cut_conv_ow(c);
    g->threads = k[CUT_D_TCO] * k[CUT_D_TOH] * k[CUT_D_TOW];
    g->bco = k[CUT_D_TCO] * k[CUT_D_RCO];
    g->boh = k[CUT_D_TOH] * k[CUT_D_ROH];
    g->bow = k[CUT_D_TOW] * k[CUT_D_ROW];
    g->iht = (g->boh - 1) * c->stride + k[CUT_D_RKH];
    g->iwt = (g->bow - 1) * c->stride + c->kw;
    if (k[CUT_D_SMEM]) {
        g->smem_in = k[CUT_D_RC] * g->iht * g->iwt;
        g->smem_w = g->bco * k[CUT_D_RC] * k[CUT_D_RKH] * c->kw;
    } else {
        g->smem_in = g->smem_w = 0;
    }
    g->smem_bytes = 4 * (g->smem_in + g->smem_w);
    g->acc = k[CUT_D_RCO] * k[CUT_D_ROH] * k[CUT_D_ROW];
    g->regs_est = g->acc + k[CUT_D_RCO] + 24;
    int u = k[CUT_D_UNROLL], q = c->kw, rq = k[CUT_D_RKH] * c->kw, all = k[CUT_D_RC] * rq;
    g->unrolled_trips = !u ? 1 : all <= u ? all : rq <= u ? rq : q <= u ? q : 1;
    int tiles_w = CUT_CEIL_DIV(g->ow, g->bow), tiles_h = CUT_CEIL_DIV(g->oh, g->boh);
    g->grid[0] = (unsigned)(tiles_w * tiles_h);
    g->grid[1] = (unsigned)CUT_CEIL_DIV(c->co, g->bco);
    g->grid[2] = (unsigned)c->n;
}

static int check(const cut_conv *c, const cut_sched *s, const cut_devlimits *d, cut_err *e)
{
    const int *k = s->k;
    for (int i = 0; i < CUT_D_NKNOBS; i++)
        if (k[i] < 0 || (k[i] == 0 && i != CUT_D_SMEM && i != CUT_D_UNROLL))
            return cut_err_set(e, "knob %s=%d out of range", knob_names[i], k[i]);
    cut_direct_geom g;
    cut_direct_geometry(c, s, &g);
    if (g.threads < d->warp_size || g.threads > d->max_threads_per_block)
        return cut_err_set(e, "%d threads per block (allowed %d..%d)", g.threads, d->warp_size,
                           d->max_threads_per_block);
    if (c->kh % k[CUT_D_RKH] != 0)
        return cut_err_set(e, "rkh=%d does not divide KH=%d", k[CUT_D_RKH], c->kh);
    if (k[CUT_D_RC] > c->ci)
        return cut_err_set(e, "rc=%d exceeds CI=%d", k[CUT_D_RC], c->ci);
    if (k[CUT_D_ROW] % k[CUT_D_VEC] != 0 || g.ow % k[CUT_D_VEC] != 0)
        return cut_err_set(e, "vec=%d needs row (%d) and OW (%d) divisible by it", k[CUT_D_VEC], k[CUT_D_ROW], g.ow);
    /* Tiles may overhang the output (guards handle tails) but not by more than the next power of two. */
    if (g.bco > cut_next_pow2(c->co) || g.boh > cut_next_pow2(g.oh) || g.bow > cut_next_pow2(g.ow))
        return cut_err_set(e, "block tile %dx%dx%d far exceeds the output %dx%dx%d", g.bco, g.boh, g.bow, c->co, g.oh,
                           g.ow);
    if (g.smem_bytes > d->max_smem_per_block)
        return cut_err_set(e, "%d bytes of shared memory (limit %d)", g.smem_bytes, d->max_smem_per_block);
    /* Code size: a fully unrolled reduction of T steps over an A-output register tile is T*A FMAs (plus, without
     * staging, as many guarded global loads). Past these sizes NVRTC takes seconds to minutes per kernel (measured
     * on seed-001 case 1: 2.5-37 s at 2304-9216 FMAs without staging, 0.1-0.5 s below 1024) for no speed. */
    int max_body = k[CUT_D_SMEM] ? 4096 : 1024;
    if (g.unrolled_trips * g.acc > max_body)
        return cut_err_set(e, "unrolled body of %d x %d FMAs exceeds %d", g.unrolled_trips, g.acc, max_body);
    if (g.regs_est > d->max_regs_per_thread || (long)g.regs_est * g.threads > d->max_regs_per_block)
        return cut_err_set(e, "about %d registers per thread x %d threads exceed the register file", g.regs_est,
                           g.threads);
    return 0;
}

const cut_template cut_tpl_direct = {
    .name = "direct",
    .nknobs = CUT_D_NKNOBS,
    .knob_names = knob_names,
    .applies = applies,
    .sample = sample,
    .mutate = mutate,
    .check = check,
};
