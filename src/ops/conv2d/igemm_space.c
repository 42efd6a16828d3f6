/* cutune — the implicit-GEMM template's knob space (codegen/igemm.c explains the kernel and what each knob trades).
 *
 * The convolution is the GEMM C[M][N] = A[M][K] * B[K][N] with M = CO, N = batch*OH*OW, K = CI*KH*KW; A is the
 * weight tensor as stored, B the im2col view of the input, gathered on the fly. A block computes a BM x BN tile of
 * C in steps of BK along K with (BM/TM) x (BN/TN) threads, each holding a TM x TN register tile; WLM x 32/WLM is
 * a warp's shape on that thread grid. Further knobs: shared-memory stages (1, 2), float4 weight loads, row
 * padding, unrolling of the BK loop, split-K over blockIdx.z, the min-blocks hint of __launch_bounds__ and a
 * __constant__ k table for the gather. Geometry and limits: cut_igemm_geometry() and check() below. */
#include "ops/conv2d/templates.h"

#include <stdio.h>

static const char *const knob_names[CUT_G_NKNOBS] = {
    "bm", "bn", "bk", "tm", "tn", "wlm", "stages", "va", "pad", "unroll", "splitk", "minb", "ktab",
};

static const int v_bm[] = {16, 32, 64, 128};
static const int v_bn[] = {16, 32, 64, 128};
static const int v_bk[] = {4, 8, 16, 32};
static const int v_tm[] = {1, 2, 4, 8};
static const int v_tn[] = {1, 2, 4, 8};
static const int v_wlm[] = {1, 2, 4, 8, 16, 32};
static const int v_stages[] = {1, 2};
static const int v_va[] = {1, 4};
static const int v_pad[] = {0, 4};
static const int v_unroll[] = {1, 2, 4, 8, 16, 32};
static const int v_splitk[] = {1, 2, 4, 8, 16};
static const int v_minb[] = {0, 1, 2};
static const int v_ktab[] = {0, 1};

#define PICK(r, v) cut_pick(r, v, (int)CUT_ARRAY_LEN(v))
#define STEP(r, v, cur) cut_step_in(r, v, (int)CUT_ARRAY_LEN(v), cur)

/* Largest split-K workspace (floats of partial sums, a static __device__ array of the kernel). */
#define MAX_WS_BYTES (64L << 20)
/* __constant__ k table of the B gather (user constant bank: 64 KiB) */
#define MAX_KTAB_BYTES (63 * 1024)
/* Unrolled compute body: FMAs of the unrolled part of the BK loop. NVRTC time grows with it (see check()). */
#define MAX_UNROLLED_FMAS 2048

/* fp32 NCHW only, like direct (the tensor-core igemm_tc takes the other dtypes and NHWC). */
static int applies(const cut_conv *c) { return cut_conv_is_default(c); }

static int imin(int a, int b) { return a < b ? a : b; }

/* A lane arrangement that fits the thread grid: WLM lanes along M and 32/WLM along N, WLM <= TY, 32/WLM <= TX. */
static int pick_wlm(cut_rng *r, int ty, int tx)
{
    int ok[CUT_ARRAY_LEN(v_wlm)], n = 0;
    for (size_t i = 0; i < CUT_ARRAY_LEN(v_wlm); i++)
        if (v_wlm[i] <= ty && 32 / v_wlm[i] <= tx)
            ok[n++] = v_wlm[i];
    return n ? ok[cut_rng_below(r, (uint32_t)n)] : PICK(r, v_wlm);
}

static void sample(const cut_conv *c, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    (void)d;
    int *k = s->k;
    k[CUT_G_BM] = PICK(r, v_bm);
    k[CUT_G_BN] = PICK(r, v_bn);
    k[CUT_G_BK] = PICK(r, v_bk);
    k[CUT_G_TM] = PICK(r, v_tm);
    k[CUT_G_TN] = PICK(r, v_tn);
    k[CUT_G_WLM] = pick_wlm(r, k[CUT_G_BM] / k[CUT_G_TM], k[CUT_G_BN] / k[CUT_G_TN]);
    k[CUT_G_STAGES] = PICK(r, v_stages);
    int kk = c->ci * c->kh * c->kw;
    k[CUT_G_VA] = kk % 4 == 0 ? PICK(r, v_va) : 1;
    k[CUT_G_PAD] = PICK(r, v_pad);
    do
        k[CUT_G_UNROLL] = PICK(r, v_unroll);
    while (k[CUT_G_UNROLL] > k[CUT_G_BK]);
    /* Split-K pays only when the M x N grid leaves SMs idle: keep it rare in random draws. */
    k[CUT_G_SPLITK] = cut_rng_below(r, 2) ? 1 : PICK(r, v_splitk);
    k[CUT_G_MINB] = PICK(r, v_minb);
    k[CUT_G_KTAB] = PICK(r, v_ktab);
}

static void mutate(const cut_conv *c, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    (void)c;
    (void)d;
    int which = (int)cut_rng_below(r, CUT_G_NKNOBS);
    int *k = s->k;
    switch (which) {
    case CUT_G_BM: k[which] = STEP(r, v_bm, k[which]); break;
    case CUT_G_BN: k[which] = STEP(r, v_bn, k[which]); break;
    case CUT_G_BK: k[which] = STEP(r, v_bk, k[which]); break;
    case CUT_G_TM: k[which] = STEP(r, v_tm, k[which]); break;
    case CUT_G_TN: k[which] = STEP(r, v_tn, k[which]); break;
    case CUT_G_WLM:
        k[which] = pick_wlm(r, k[CUT_G_BM] / cut_imax(k[CUT_G_TM], 1), k[CUT_G_BN] / cut_imax(k[CUT_G_TN], 1));
        break;
    case CUT_G_STAGES: k[which] = k[which] == 1 ? 2 : 1; break;
    case CUT_G_VA: k[which] = k[which] == 1 ? 4 : 1; break;
    case CUT_G_PAD: k[which] = k[which] ? 0 : 4; break;
    case CUT_G_UNROLL: k[which] = STEP(r, v_unroll, k[which]); break;
    case CUT_G_MINB: k[which] = STEP(r, v_minb, k[which]); break;
    case CUT_G_KTAB: k[which] = !k[which]; break;
    default: k[which] = STEP(r, v_splitk, k[which]); break;
    }
    /* Keep the lane arrangement consistent with a changed thread grid where one exists. */
    int ty = k[CUT_G_BM] / cut_imax(k[CUT_G_TM], 1), tx = k[CUT_G_BN] / cut_imax(k[CUT_G_TN], 1);
    if (which != CUT_G_WLM && (k[CUT_G_WLM] > ty || 32 / cut_imax(k[CUT_G_WLM], 1) > tx))
        k[CUT_G_WLM] = pick_wlm(r, ty, tx);
    if (k[CUT_G_UNROLL] > k[CUT_G_BK])
        k[CUT_G_UNROLL] = k[CUT_G_BK];
}

void cut_igemm_geometry(const cut_conv *c, const cut_sched *s, cut_igemm_geom *g)
{
    /* Knobs clamped to a sane range so that any schedule (also an invalid one: check() rejects it afterwards,
     * and cost-model features are computed from unchecked ones) gives finite, overflow-free numbers. */
    const int *k = s->k;
    int bm = cut_clampi(k[CUT_G_BM], 1, 1024), bn = cut_clampi(k[CUT_G_BN], 1, 1024),
        bk = cut_clampi(k[CUT_G_BK], 1, 1024);
    int tm = cut_clampi(k[CUT_G_TM], 1, 64), tn = cut_clampi(k[CUT_G_TN], 1, 64), va = cut_clampi(k[CUT_G_VA], 1, 4);
    int split = cut_clampi(k[CUT_G_SPLITK], 1, 1024), stages = cut_clampi(k[CUT_G_STAGES], 1, 4);
    int pad = cut_clampi(k[CUT_G_PAD], 0, 64), unroll = cut_clampi(k[CUT_G_UNROLL], 1, 1024);
    g->oh = cut_conv_oh(c);
    g->ow = cut_conv_ow(c);
    g->gm = c->co;
    g->gn = c->n * g->oh * g->ow;
    g->gk = c->ci * c->kh * c->kw;
    g->ty = bm / tm;
    g->tx = bn / tn;
    g->threads = g->ty * g->tx;
    int nt = cut_imax(g->threads, 1);
    g->ktiles = CUT_CEIL_DIV(g->gk, bk);
    g->kps = CUT_CEIL_DIV(g->ktiles, split);
    g->a_per = CUT_CEIL_DIV(bm * bk / va, nt);
    int tbn = imin(nt, bn), tbk = nt / tbn;
    g->cb = bn / tbn;
    g->rb = CUT_CEIL_DIV(bk, tbk);
    g->tbk = tbk;
    g->ktab_bytes = 8L * ((long)g->ktiles * bk + tbk);
    g->smem_bytes = 4 * stages * bk * (bm + bn + 2 * pad) + (split > 1 ? 4 : 0);
    g->acc = tm * tn;
    /* accumulators + fragments + staged loads (x2 with two stages: the prefetched tile and its addresses stay
     * live across the FMAs) + per-column gather state + addressing. Rough: ptxas with __launch_bounds__(NT, 1)
     * used 0.5x..1.4x of this on 200 random schedules (127 for 128x128x8 / 8x8 / 256 threads, estimate 127). */
    g->regs_est = g->acc + tm + tn + (stages == 2 ? 2 : 1) * (g->a_per * va + g->rb * g->cb) + 3 * g->cb + 28;
    g->unrolled_fmas = imin(unroll, bk) * g->acc;
    g->ws_bytes = split > 1 ? 4L * split * g->gm * g->gn : 0;
    g->grid[0] = (unsigned)CUT_CEIL_DIV(g->gn, bn);
    g->grid[1] = (unsigned)CUT_CEIL_DIV(g->gm, bm);
    g->grid[2] = (unsigned)split;
}


static int check(const cut_conv *c, const cut_sched *s, const cut_devlimits *d, cut_err *e)
{
    const int *k = s->k;
    if (!CUT_IN(v_bm, k[CUT_G_BM]) || !CUT_IN(v_bn, k[CUT_G_BN]) || !CUT_IN(v_bk, k[CUT_G_BK]) ||
        !CUT_IN(v_tm, k[CUT_G_TM]) || !CUT_IN(v_tn, k[CUT_G_TN]) || !CUT_IN(v_wlm, k[CUT_G_WLM]) ||
        !CUT_IN(v_stages, k[CUT_G_STAGES]) || !CUT_IN(v_va, k[CUT_G_VA]) || !CUT_IN(v_pad, k[CUT_G_PAD]) ||
        !CUT_IN(v_unroll, k[CUT_G_UNROLL]) || !CUT_IN(v_splitk, k[CUT_G_SPLITK]) || !CUT_IN(v_minb, k[CUT_G_MINB]) ||
        !CUT_IN(v_ktab, k[CUT_G_KTAB])) {
        for (int i = 0; i < CUT_G_NKNOBS; i++)
            if (k[i] < 0 || (k[i] == 0 && i != CUT_G_PAD && i != CUT_G_MINB && i != CUT_G_KTAB))
                return cut_err_set(e, "knob %s=%d out of range", knob_names[i], k[i]);
        return cut_err_set(e, "a knob is not one of its allowed values (bm=%d bn=%d bk=%d tm=%d tn=%d wlm=%d "
                              "stages=%d va=%d pad=%d unroll=%d splitk=%d minb=%d ktab=%d)",
                           k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9], k[10], k[11], k[12]);
    }
    cut_igemm_geom g;
    cut_igemm_geometry(c, s, &g);
    if (k[CUT_G_TM] > k[CUT_G_BM] || k[CUT_G_TN] > k[CUT_G_BN])
        return cut_err_set(e, "thread tile %dx%d exceeds the block tile %dx%d", k[CUT_G_TM], k[CUT_G_TN],
                           k[CUT_G_BM], k[CUT_G_BN]);
    if (g.threads < d->warp_size || g.threads > d->max_threads_per_block)
        return cut_err_set(e, "%d threads per block (allowed %d..%d)", g.threads, d->warp_size,
                           d->max_threads_per_block);
    int wlm = k[CUT_G_WLM], wln = 32 / wlm;
    if (wlm > g.ty || wln > g.tx)
        return cut_err_set(e, "warp lanes wlm=%d x %d do not fit the %dx%d thread grid", wlm, wln, g.ty, g.tx);
    if (k[CUT_G_VA] == 4 && g.gk % 4 != 0)
        return cut_err_set(e, "va=4 needs K=CI*KH*KW (%d) divisible by 4", g.gk);
    if (k[CUT_G_UNROLL] > k[CUT_G_BK])
        return cut_err_set(e, "unroll=%d exceeds bk=%d", k[CUT_G_UNROLL], k[CUT_G_BK]);
    if (k[CUT_G_KTAB] && g.ktab_bytes > MAX_KTAB_BYTES)
        return cut_err_set(e, "ktab=1: a %ld-byte k table exceeds %d bytes of constant memory", g.ktab_bytes,
                           MAX_KTAB_BYTES);
    /* Tiles may overhang the GEMM (guards handle tails) but not by more than the next power of two (or the
     * smallest tile, so that small problems keep some schedules). */
    if (k[CUT_G_BM] > cut_imax(cut_next_pow2(g.gm), 16) || k[CUT_G_BN] > cut_imax(cut_next_pow2(g.gn), 32) ||
        k[CUT_G_BK] > cut_imax(cut_next_pow2(g.gk), 4))
        return cut_err_set(e, "block tile %dx%dx%d far exceeds the GEMM %dx%dx%d", k[CUT_G_BM], k[CUT_G_BN],
                           k[CUT_G_BK], g.gm, g.gn, g.gk);
    if (g.smem_bytes > d->max_smem_per_block)
        return cut_err_set(e, "%d bytes of shared memory (limit %d)", g.smem_bytes, d->max_smem_per_block);
    int split = k[CUT_G_SPLITK];
    if (split > 1) {
        if ((split - 1) * g.kps >= g.ktiles)
            return cut_err_set(e, "splitk=%d leaves a slice without k tiles (%d tiles of bk=%d)", split, g.ktiles,
                               k[CUT_G_BK]);
        if (g.ws_bytes > MAX_WS_BYTES)
            return cut_err_set(e, "splitk=%d needs a %ld-byte workspace (limit %ld)", split, g.ws_bytes,
                               MAX_WS_BYTES);
        /* Split-K exists to fill idle SMs; past about two waves of blocks it only adds reduction traffic. */
        long mn = (long)g.grid[0] * g.grid[1];
        if (mn * (split / 2) >= 2L * d->sm_count)
            return cut_err_set(e, "splitk=%d on a grid of %ld blocks: already %ld blocks for %d SMs", split, mn,
                               mn * split, d->sm_count);
    }
    /* Code size: the unrolled part of the BK loop is unroll*TM*TN FMAs plus its shared-memory loads. */
    if (g.unrolled_fmas > MAX_UNROLLED_FMAS)
        return cut_err_set(e, "unrolled body of %d FMAs exceeds %d", g.unrolled_fmas, MAX_UNROLLED_FMAS);
    int blocks = cut_imax(k[CUT_G_MINB], 1);
    if (g.regs_est > d->max_regs_per_thread || (long)g.regs_est * g.threads * blocks > d->max_regs_per_block)
        return cut_err_set(e, "about %d registers per thread x %d threads x %d blocks exceed the register file",
                           g.regs_est, g.threads, blocks);
    return 0;
}

const cut_template cut_tpl_igemm = {
    .name = "igemm",
    .nknobs = CUT_G_NKNOBS,
    .knob_names = knob_names,
    .applies = applies,
    .sample = sample,
    .mutate = mutate,
    .check = check,
};
