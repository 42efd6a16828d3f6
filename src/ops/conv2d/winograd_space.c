/* cutune — the Winograd template's knob space and transform matrices (codegen/winograd.c explains the kernel).
 *
 * F(m x m, 3x3) computes an m x m tile of outputs from an alpha x alpha input patch (alpha = m + 2) with alpha^2
 * multiplications instead of 9 m^2: Y = A^T [(G g G^T) .* (B^T d B)] A. Summed over input channels, the
 * element-wise products become alpha^2 independent GEMMs M[xi] = U[xi]^T V[xi] (U: CI x CO transformed filters,
 * V: CI x tiles transformed patches), which is where the time goes. The knobs shape the block tile of those GEMMs
 * (BCO x BT per xi, BC channels per chunk), how threads split them (RXI elements xi per thread, an RCO x RT
 * register tile), the shared-memory padding, the unrolling, prefetching of the next chunk and the launch bound.
 * Geometry and limits: cut_winograd_geometry() and check() below. */
#include "ops/conv2d/templates.h"

#include <stdio.h>

/* ---- transform matrices ---------------------------------------------------------------------------------
 *
 * F(2x2, 3x3), points 0, 1, -1 and infinity (Lavin & Gray):
 *   B^T = [1  0 -1  0]     G = [ 1    0    0 ]     A^T = [1 1  1  0]
 *         [0  1  1  0]         [1/2  1/2  1/2]           [0 1 -1 -1]
 *         [0 -1  1  0]         [1/2 -1/2  1/2]
 *         [0  1  0 -1]         [ 0    0    1 ]
 *
 * F(4x4, 3x3), points 0, 1, -1, 2, -1/2 and infinity. Lavin & Gray's symmetric set 0, +-1, +-2 (and likewise
 * 0, +-1, +-1/2) puts a large point and its negative in the same transform: the fp32 error of a 4x4 tile is then
 * 2-3x that of this mixed set, which pairs 2 with -1/2 (Barabasz et al., "Error analysis and improving the accuracy
 * of Winograd convolution for deep neural networks", 2020). Measured by a simulation of this kernel's arithmetic
 * (fp32 transforms, sequential fp32 sums over channels, 32,000 outputs, inputs and weights uniform in [-1, 1)),
 * as the largest error over cut_conv_tolerance's bound (atol + rtol |ref|):
 *   points 0, +-1, +-2:      0.70 (CI 512), 0.86 (CI 32)   -- too close to the bound for millions of outputs
 *   points 0, +-1, +-1/2:    1.37 (CI 512), 0.75 (CI 32)
 *   points 0, 1, -1, 2, -1/2: 0.34 (CI 512), 0.41 (CI 32)   -- this set; F(2x2): 0.05
 * B^T and A^T of this set are dyadic (exact in fp32); only G has entries (1/3, 1/15) that round.
 *   B^T = [1  3/2  -2  -3/2   1   0]    G = [  1      0      0  ]    A^T = [1 1  1 1    1    0]
 *         [0  -1  -5/2 -1/2   1   0]        [-1/3   -1/3   -1/3 ]          [0 1 -1 2  -1/2   0]
 *         [0   1   1/2 -5/2   1   0]        [ 1/3   -1/3    1/3 ]          [0 1  1 4   1/4   0]
 *         [0 -1/2  -1   1/2   1   0]        [ 1/15   2/15   4/15]          [0 1 -1 8  -1/8   1]
 *         [0   2   -1   -2    1   0]        [-16/15  8/15  -4/15]
 *         [0   1   3/2  -2  -3/2  1]        [  0      0      1  ]
 * (A^T's columns are the points' powers p^0..p^3, G's rows p^0..p^2 over prod_{l != j} (p_j - p_l), B^T follows
 * from the identity; test_winograd checks the 1-D identity y = A^T [(G g) .* (B^T d)] in double.) */

static const int bt2_num[] = {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1};
static const int bt2_den[] = {1, 1, 1, 1};
static const int g2_num[] = {1, 0, 0, 1, 1, 1, 1, -1, 1, 0, 0, 1};
static const int g2_den[] = {1, 2, 2, 1};
static const int at2_num[] = {1, 1, 1, 0, 0, 1, -1, -1};
static const int at2_den[] = {1, 1};

static const int bt4_num[] = {
    2, 3, -4, -3, 2, 0,  0, -2, -5, -1, 2, 0, 0, 2, 1, -5, 2, 0,
    0, -1, -2, 1, 2, 0,  0, 4, -2, -4, 2, 0,  0, 2, 3, -4, -3, 2,
};
static const int bt4_den[] = {2, 2, 2, 2, 2, 2};
static const int g4_num[] = {1, 0, 0, -1, -1, -1, 1, -1, 1, 1, 2, 4, -16, 8, -4, 0, 0, 1};
static const int g4_den[] = {1, 3, 3, 15, 15, 1};
static const int at4_num[] = {1, 1, 1, 1, 1, 0, 0, 2, -2, 4, -1, 0, 0, 4, 4, 16, 1, 0, 0, 8, -8, 64, -1, 8};
static const int at4_den[] = {1, 2, 4, 8};

static const cut_wino_mats mats2 = {
    2, 4, {4, 4, bt2_num, bt2_den}, {4, 3, g2_num, g2_den}, {2, 4, at2_num, at2_den},
};
static const cut_wino_mats mats4 = {
    4, 6, {6, 6, bt4_num, bt4_den}, {6, 3, g4_num, g4_den}, {4, 6, at4_num, at4_den},
};

const cut_wino_mats *cut_winograd_mats(int m) { return m == 2 ? &mats2 : m == 4 ? &mats4 : NULL; }

/* ---- knobs ---------------------------------------------------------------------------------------------- */

static const char *const knob_names[CUT_W_NKNOBS] = {
    "m", "bco", "bt", "bc", "rco", "rt", "rxi", "pad", "unroll", "pf", "minb",
};

static const int v_m[] = {2, 4};
static const int v_bco[] = {8, 16, 32, 64, 128};
static const int v_bt[] = {4, 8, 16, 32, 64};
static const int v_bc[] = {1, 2, 4, 8, 16};
static const int v_rco[] = {1, 2, 4, 8};
static const int v_rt[] = {1, 2, 4, 8};
static const int v_rxi[] = {1, 2, 3, 4};
static const int v_pad[] = {0, 4};
static const int v_unroll[] = {1, 2, 4, 8, 16};
static const int v_pf[] = {0, 1};
static const int v_minb[] = {0, 1, 2};

#define PICK(r, v) cut_pick(r, v, (int)CUT_ARRAY_LEN(v))
#define STEP(r, v, cur) cut_step_in(r, v, (int)CUT_ARRAY_LEN(v), cur)

/* Unrolled compute body (FMAs of the unrolled part of the channel loop): NVRTC time grows with it. */
#define MAX_UNROLLED_FMAS 2048
/* Transform items (patches or filters) per thread per chunk: each is an alpha^2-value transform in the code,
 * and with prefetching alpha^2 live registers. */
#define MAX_IPT 4

static int applies(const cut_conv *c)
{
    return cut_conv_is_default(c) && c->kh == 3 && c->kw == 3 && c->stride == 1;
}


/* Largest block tile worth having: tiles may overhang CO, the tile count and CI (guards handle the tails), but
 * not by more than the next power of two (or the smallest value, so that small problems keep schedules). */
static int max_bco(const cut_conv *c) { return cut_imax(cut_next_pow2(c->co), 8); }
static int max_bt(const cut_conv *c, int m)
{
    int th = CUT_CEIL_DIV(cut_conv_oh(c), m), tw = CUT_CEIL_DIV(cut_conv_ow(c), m);
    return cut_imax(cut_next_pow2(c->n * th * tw), 4);
}
static int max_bc(const cut_conv *c) { return cut_next_pow2(c->ci); }

void cut_winograd_geometry(const cut_conv *c, const cut_sched *s, cut_wino_geom *g)
{
    /* Knobs clamped to a sane range so that any schedule (also an invalid one: check() rejects it afterwards,
     * and cost-model features are computed from unchecked ones) gives finite, overflow-free numbers. */
    const int *k = s->k;
    g->m = k[CUT_W_M] >= 4 ? 4 : 2;
    g->alpha = g->m + 2;
    g->a2 = g->alpha * g->alpha;
    int bco = cut_clampi(k[CUT_W_BCO], 1, 1024), bt = cut_clampi(k[CUT_W_BT], 1, 1024),
        bc = cut_clampi(k[CUT_W_BC], 1, 1024);
    int rco = cut_clampi(k[CUT_W_RCO], 1, 64), rt = cut_clampi(k[CUT_W_RT], 1, 64),
        rxi = cut_clampi(k[CUT_W_RXI], 1, 64);
    int pad = cut_clampi(k[CUT_W_PAD], 0, 64), unroll = cut_clampi(k[CUT_W_UNROLL], 1, 1024);
    g->oh = cut_conv_oh(c);
    g->ow = cut_conv_ow(c);
    g->tiles_h = CUT_CEIL_DIV(g->oh, g->m);
    g->tiles_w = CUT_CEIL_DIV(g->ow, g->m);
    g->tiles = c->n * g->tiles_h * g->tiles_w;
    g->tco = cut_imax(bco / rco, 1);
    g->tt = cut_imax(bt / rt, 1);
    g->xg = cut_imax(g->a2 / rxi, 1);
    g->threads = g->xg * g->tco * g->tt;
    g->vco = rco < 4 ? rco : 4;
    g->vt = rt < 4 ? rt : 4;
    g->nin = bc * bt;
    g->nfi = bc * bco;
    g->ipt = CUT_CEIL_DIV(g->nin + g->nfi, g->threads);
    g->chunks = CUT_CEIL_DIV(c->ci, bc);
    g->stage_floats = g->a2 * bc * (bco + pad) + g->a2 * bc * (bt + pad);
    /* Epilogue: per pass, EPI register rows (of RCO) x EPJ columns (of RT, a multiple of VT so that a pass covers
     * whole runs of consecutive tiles) go through shared memory; as many per pass as the staging storage holds,
     * on a tie the longer runs of tiles (coalesced output rows). */
    g->epi = 1;
    g->epj = g->vt;
    for (int ei = 1; ei <= rco; ei *= 2)
        for (int ej = g->vt; ej <= rt; ej *= 2) {
            long need = (long)g->a2 * g->tco * ei * g->tt * ej;
            int better = ei * ej > g->epi * g->epj || (ei * ej == g->epi * g->epj && ej > g->epj);
            if (rco % ei == 0 && rt % ej == 0 && need <= g->stage_floats && better)
                g->epi = ei, g->epj = ej;
        }
    g->passes = CUT_CEIL_DIV(rco, g->epi) * CUT_CEIL_DIV(rt, g->epj);
    g->epi_floats = g->a2 * g->tco * g->epi * g->tt * g->epj;
    g->smem_bytes = 4 * cut_imax(g->stage_floats, g->epi_floats);
    g->acc = rxi * rco * rt;
    /* accumulators + live transform values (the slots' patches and their partial transforms while staging; with
     * prefetching half as much again for the next chunk's raw values) or operand fragments + addressing. Against
     * ptxas (sm_90, 60 random valid schedules): mostly within 20%; where the launch bound caps registers below the
     * estimate ptxas fits them without spilling (test_winograd prints both for the large tiles). */
    int stage_live = g->ipt * g->a2 * (k[CUT_W_PF] ? 3 : 2) / 2 + 2 * g->alpha;
    g->regs_est = g->acc + cut_imax(rco + rt, stage_live) + 24;
    g->unrolled_fmas = (unroll < bc ? unroll : bc) * g->acc;
    g->grid[0] = (unsigned)CUT_CEIL_DIV(g->tiles, bt);
    g->grid[1] = (unsigned)CUT_CEIL_DIV(c->co, bco);
    g->grid[2] = 1;
}

/* A block tile (BCO, BT) for the drawn register tile and m that gives a legal thread count and no pointless
 * overhang, drawn uniformly among those; an arbitrary one when none exists (check() rejects it). */
static void pick_block(const cut_conv *c, const cut_devlimits *d, cut_rng *r, int *k)
{
    int ok[CUT_ARRAY_LEN(v_bco) * CUT_ARRAY_LEN(v_bt)][2], n = 0;
    int a2 = (k[CUT_W_M] + 2) * (k[CUT_W_M] + 2);
    if (a2 % k[CUT_W_RXI] != 0)
        k[CUT_W_RXI] = 1; /* rxi=3 exists for m=4 only */
    for (size_t i = 0; i < CUT_ARRAY_LEN(v_bco); i++)
        for (size_t j = 0; j < CUT_ARRAY_LEN(v_bt); j++) {
            int bco = v_bco[i], bt = v_bt[j];
            if (bco < k[CUT_W_RCO] || bt < k[CUT_W_RT] || bco > max_bco(c) || bt > max_bt(c, k[CUT_W_M]))
                continue;
            int threads = a2 / k[CUT_W_RXI] * (bco / k[CUT_W_RCO]) * (bt / k[CUT_W_RT]);
            if (threads >= d->warp_size && threads <= d->max_threads_per_block && threads % d->warp_size == 0) {
                ok[n][0] = bco;
                ok[n++][1] = bt;
            }
        }
    if (n) {
        int at = (int)cut_rng_below(r, (uint32_t)n);
        k[CUT_W_BCO] = ok[at][0];
        k[CUT_W_BT] = ok[at][1];
    } else {
        k[CUT_W_BCO] = PICK(r, v_bco);
        k[CUT_W_BT] = PICK(r, v_bt);
    }
}

/* A chunk size BC whose staging fits the shared memory, drawn uniformly among those (any when none does). */
static void pick_bc(const cut_conv *c, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    int ok[CUT_ARRAY_LEN(v_bc)], n = 0;
    for (size_t i = 0; i < CUT_ARRAY_LEN(v_bc); i++) {
        if (v_bc[i] > max_bc(c))
            continue;
        s->k[CUT_W_BC] = v_bc[i];
        cut_wino_geom g;
        cut_winograd_geometry(c, s, &g);
        if (g.smem_bytes <= d->max_smem_per_block && g.ipt <= MAX_IPT)
            ok[n++] = v_bc[i];
    }
    s->k[CUT_W_BC] = n ? ok[cut_rng_below(r, (uint32_t)n)] : PICK(r, v_bc);
}

static void pick_unroll(cut_rng *r, int *k)
{
    do
        k[CUT_W_UNROLL] = PICK(r, v_unroll);
    while (k[CUT_W_UNROLL] > k[CUT_W_BC] && k[CUT_W_UNROLL] > 1);
}

static void sample(const cut_conv *c, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    int *k = s->k;
    k[CUT_W_M] = PICK(r, v_m);
    k[CUT_W_RCO] = PICK(r, v_rco);
    k[CUT_W_RT] = PICK(r, v_rt);
    k[CUT_W_RXI] = PICK(r, v_rxi);
    pick_block(c, d, r, k);
    k[CUT_W_PAD] = PICK(r, v_pad);
    k[CUT_W_PF] = PICK(r, v_pf);
    k[CUT_W_MINB] = PICK(r, v_minb);
    pick_bc(c, d, r, s);
    pick_unroll(r, k);
}

static void mutate(const cut_conv *c, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    (void)c;
    (void)d;
    int which = (int)cut_rng_below(r, CUT_W_NKNOBS);
    int *k = s->k;
    switch (which) {
    case CUT_W_M: k[which] = k[which] == 2 ? 4 : 2; break;
    case CUT_W_BCO: k[which] = STEP(r, v_bco, k[which]); break;
    case CUT_W_BT: k[which] = STEP(r, v_bt, k[which]); break;
    case CUT_W_BC: k[which] = STEP(r, v_bc, k[which]); break;
    case CUT_W_RCO: k[which] = STEP(r, v_rco, k[which]); break;
    case CUT_W_RT: k[which] = STEP(r, v_rt, k[which]); break;
    case CUT_W_RXI: k[which] = STEP(r, v_rxi, k[which]); break;
    case CUT_W_PAD: k[which] = k[which] ? 0 : 4; break;
    case CUT_W_UNROLL: k[which] = STEP(r, v_unroll, k[which]); break;
    case CUT_W_PF: k[which] = !k[which]; break;
    default: k[which] = STEP(r, v_minb, k[which]); break;
    }
    if (k[CUT_W_UNROLL] > k[CUT_W_BC])
        k[CUT_W_UNROLL] = k[CUT_W_BC];
}


/* Registers per thread that a block of `threads` can have with `blocks` blocks resident per SM: each of the SM's
 * 4 sub-partitions holds a quarter of the register file for its share of the warps, in units of 8 registers per
 * thread. ptxas's caps under __launch_bounds__ follow it (168 at 288 threads: 3 warps per sub-partition). */
static int regs_cap(const cut_devlimits *d, int threads, int blocks)
{
    int per_sub = CUT_CEIL_DIV(CUT_CEIL_DIV(threads, d->warp_size) * blocks, 4);
    int cap = d->max_regs_per_block / 4 / (per_sub * d->warp_size) / 8 * 8;
    return cap < d->max_regs_per_thread ? cap : d->max_regs_per_thread;
}

static int check_knob_sets(const int *k, cut_err *e)
{
    static const int *const sets[CUT_W_NKNOBS] = {v_m,   v_bco, v_bt,     v_bc, v_rco, v_rt,
                                                  v_rxi, v_pad, v_unroll, v_pf, v_minb};
    static const int lens[CUT_W_NKNOBS] = {
        (int)CUT_ARRAY_LEN(v_m),   (int)CUT_ARRAY_LEN(v_bco), (int)CUT_ARRAY_LEN(v_bt),     (int)CUT_ARRAY_LEN(v_bc),
        (int)CUT_ARRAY_LEN(v_rco), (int)CUT_ARRAY_LEN(v_rt),  (int)CUT_ARRAY_LEN(v_rxi),    (int)CUT_ARRAY_LEN(v_pad),
        (int)CUT_ARRAY_LEN(v_unroll), (int)CUT_ARRAY_LEN(v_pf), (int)CUT_ARRAY_LEN(v_minb),
    };
    for (int i = 0; i < CUT_W_NKNOBS; i++)
        if (!cut_in_set(sets[i], lens[i], k[i])) {
            if (i == CUT_W_M)
                return cut_err_set(e, "knob m=%d: F(m x m, 3x3) exists for m = 2 and 4", k[i]);
            return cut_err_set(e, "knob %s=%d is not one of its allowed values", knob_names[i], k[i]);
        }
    return 0;
}

static int check(const cut_conv *c, const cut_sched *s, const cut_devlimits *d, cut_err *e)
{
    const int *k = s->k;
    if (check_knob_sets(k, e) != 0)
        return -1;
    cut_wino_geom g;
    cut_winograd_geometry(c, s, &g);
    if (g.a2 % k[CUT_W_RXI] != 0)
        return cut_err_set(e, "rxi=%d does not divide the %d transformed elements of m=%d", k[CUT_W_RXI], g.a2,
                           g.m);
    if (k[CUT_W_RCO] > k[CUT_W_BCO] || k[CUT_W_RT] > k[CUT_W_BT])
        return cut_err_set(e, "register tile %dx%d exceeds the block tile %dx%d", k[CUT_W_RCO], k[CUT_W_RT],
                           k[CUT_W_BCO], k[CUT_W_BT]);
    if (g.threads < d->warp_size || g.threads > d->max_threads_per_block || g.threads % d->warp_size != 0)
        return cut_err_set(e, "%d threads per block (%d xi groups x %d x %d; allowed %d..%d, whole warps)",
                           g.threads, g.xg, g.tco, g.tt, d->warp_size, d->max_threads_per_block);
    if (k[CUT_W_UNROLL] > k[CUT_W_BC])
        return cut_err_set(e, "unroll=%d exceeds bc=%d", k[CUT_W_UNROLL], k[CUT_W_BC]);
    if (k[CUT_W_BCO] > max_bco(c) || k[CUT_W_BT] > max_bt(c, g.m) || k[CUT_W_BC] > max_bc(c))
        return cut_err_set(e, "block tile %d co x %d tiles x %d channels far exceeds CO=%d x %d tiles x CI=%d",
                           k[CUT_W_BCO], k[CUT_W_BT], k[CUT_W_BC], c->co, g.tiles, c->ci);
    if (g.smem_bytes > d->max_smem_per_block)
        return cut_err_set(e, "%d bytes of shared memory (limit %d)", g.smem_bytes, d->max_smem_per_block);
    if (g.ipt > MAX_IPT)
        return cut_err_set(e, "%d transform items per thread per chunk (limit %d): bc=%d too large for %d threads",
                           g.ipt, MAX_IPT, k[CUT_W_BC], g.threads);
    if (g.unrolled_fmas > MAX_UNROLLED_FMAS)
        return cut_err_set(e, "unrolled body of %d FMAs exceeds %d", g.unrolled_fmas, MAX_UNROLLED_FMAS);
    if (g.grid[1] > 65535u)
        return cut_err_set(e, "grid of %u co blocks exceeds 65535", g.grid[1]);
    int blocks = cut_imax(k[CUT_W_MINB], 1), cap = regs_cap(d, g.threads, blocks);
    if (g.regs_est > cap)
        return cut_err_set(e, "about %d registers per thread exceed the %d that %d threads x %d blocks can have",
                           g.regs_est, cap, g.threads, blocks);
    return 0;
}

const cut_template cut_tpl_winograd = {
    .name = "winograd",
    .nknobs = CUT_W_NKNOBS,
    .knob_names = knob_names,
    .applies = applies,
    .sample = sample,
    .mutate = mutate,
    .check = check,
};
