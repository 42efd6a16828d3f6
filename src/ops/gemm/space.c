/* cutune — the SIMT GEMM template's knob space (src/ops/gemm/codegen.c explains the kernel and what each knob trades).
 *
 * Knob lists follow the implicit-GEMM conv template (src/ops/conv2d/igemm_space.c): power-of-two tiles, so that every thread
 * count, loader stride and shared-memory row is a power of two or a multiple of 4 floats. Geometry and limits:
 * cut_gemm_simt_geometry() and cut_gemm_simt_check() below. */
#include "ops/gemm/simt.h"

#include "codegen/knobs.h"

#include <stdio.h>
#include <string.h>

static const char *const knob_names[CUT_GS_NKNOBS] = {
    "bm", "bn", "bk", "tm", "tn", "vec", "dbuf", "pad", "unroll",
};

static const int v_bm[] = {16, 32, 64, 128};
static const int v_bn[] = {16, 32, 64, 128};
static const int v_bk[] = {4, 8, 16, 32};
static const int v_tm[] = {1, 2, 4, 8};
static const int v_tn[] = {1, 2, 4, 8};
static const int v_vec[] = {1, 2, 4};
static const int v_dbuf[] = {0, 1};
static const int v_pad[] = {0, 4};
static const int v_unroll[] = {1, 2, 4, 8, 16, 32};

#define PICK(r, v) cut_pick(r, v, (int)CUT_ARRAY_LEN(v))
#define STEP(r, v, cur) cut_step_in(r, v, (int)CUT_ARRAY_LEN(v), cur)

/* Unrolled compute body: FMAs of the unrolled part of the BK loop (NVRTC time grows with it). */
#define MAX_UNROLLED_FMAS 2048
/* Global loads staged in registers per thread per k tile (A and B). */
#define MAX_STAGED 32



const char *cut_gemm_simt_knob_name(int knob)
{
    return knob >= 0 && knob < CUT_GS_NKNOBS ? knob_names[knob] : "?";
}

void cut_gemm_simt_describe(const cut_gemm_sched *s, char *buf, size_t n)
{
    size_t off = (size_t)snprintf(buf, n, "simt");
    for (int i = 0; i < CUT_GS_NKNOBS && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, " %s=%d", knob_names[i], s->k[i]);
}

/* Largest vector width the rows of A and B allow: A's rows are K long (NN, NT) or M long (TN, TT); B's rows are N
 * long (NN, TN) or K long (NT, TT). Every row then starts on a vector boundary (the buffers themselves are at least
 * 16-byte aligned, and the batch strides are whole numbers of rows). */
static int max_vec(const cut_gemm *g)
{
    const int row_a = cut_gemm_a_trans(g) ? g->m : g->k, row_b = cut_gemm_b_trans(g) ? g->k : g->n;
    for (int v = 4; v > 1; v /= 2)
        if (row_a % v == 0 && row_b % v == 0)
            return v;
    return 1;
}

void cut_gemm_simt_geometry(const cut_gemm *g, const cut_gemm_sched *s, cut_gemm_simt_geom *out)
{
    const int *k = s->k;
    int bm = cut_clampi(k[CUT_GS_BM], 1, 1024), bn = cut_clampi(k[CUT_GS_BN], 1, 1024),
        bk = cut_clampi(k[CUT_GS_BK], 1, 1024);
    int tm = cut_clampi(k[CUT_GS_TM], 1, 64), tn = cut_clampi(k[CUT_GS_TN], 1, 64),
        vec = cut_clampi(k[CUT_GS_VEC], 1, 4);
    int dbuf = cut_clampi(k[CUT_GS_DBUF], 0, 1), pad = cut_clampi(k[CUT_GS_PAD], 0, 64);
    int unroll = cut_clampi(k[CUT_GS_UNROLL], 1, 1024);
    out->ty = cut_imax(bm / tm, 1);
    out->tx = cut_imax(bn / tn, 1);
    out->threads = out->ty * out->tx;
    out->a_per = cut_ceil_div(bm * bk / vec, out->threads);
    out->b_per = cut_ceil_div(bn * bk / vec, out->threads);
    out->smem_bytes = 4 * (1 + dbuf) * bk * (bm + bn + 2 * pad);
    out->staged = (out->a_per + out->b_per) * vec;
    /* accumulators + fragments + staged loads (x2 with double buffering: the prefetched tile stays live across
     * the FMAs) + an address per staged vector + the rest. Rough: ptxas used 0.5x..1.6x of this on 200 random
     * schedules (more where few threads leave it 255 registers to fill). */
    out->regs_est = tm * tn + tm + tn + (dbuf ? 2 : 1) * out->staged + out->a_per + out->b_per + 24;
    out->unrolled_fmas = (unroll < bk ? unroll : bk) * tm * tn;
    out->grid[0] = (unsigned)cut_ceil_div(cut_imax(g->n, 1), bn);
    out->grid[1] = (unsigned)cut_ceil_div(cut_imax(g->m, 1), bm);
    out->grid[2] = (unsigned)cut_gemm_batch(g);
}

void cut_gemm_simt_sample(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_gemm_sched *s)
{
    (void)d;
    int *k = s->k;
    s->tpl = CUT_GEMM_TPL_SIMT;
    k[CUT_GS_BM] = PICK(r, v_bm);
    k[CUT_GS_BN] = PICK(r, v_bn);
    k[CUT_GS_BK] = PICK(r, v_bk);
    k[CUT_GS_TM] = PICK(r, v_tm);
    k[CUT_GS_TN] = PICK(r, v_tn);
    int nv = 1;
    while (nv < (int)CUT_ARRAY_LEN(v_vec) && v_vec[nv] <= max_vec(g))
        nv++;
    k[CUT_GS_VEC] = v_vec[cut_rng_below(r, (uint32_t)nv)];
    k[CUT_GS_DBUF] = PICK(r, v_dbuf);
    k[CUT_GS_PAD] = PICK(r, v_pad);
    do
        k[CUT_GS_UNROLL] = PICK(r, v_unroll);
    while (k[CUT_GS_UNROLL] > k[CUT_GS_BK]);
}

void cut_gemm_simt_mutate(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_gemm_sched *s)
{
    (void)d;
    int which = (int)cut_rng_below(r, CUT_GS_NKNOBS);
    int *k = s->k;
    switch (which) {
    case CUT_GS_BM: k[which] = STEP(r, v_bm, k[which]); break;
    case CUT_GS_BN: k[which] = STEP(r, v_bn, k[which]); break;
    case CUT_GS_BK: k[which] = STEP(r, v_bk, k[which]); break;
    case CUT_GS_TM: k[which] = STEP(r, v_tm, k[which]); break;
    case CUT_GS_TN: k[which] = STEP(r, v_tn, k[which]); break;
    case CUT_GS_VEC: k[which] = STEP(r, v_vec, k[which]); break;
    case CUT_GS_DBUF: k[which] = !k[which]; break;
    case CUT_GS_PAD: k[which] = k[which] ? 0 : 4; break;
    default: k[which] = STEP(r, v_unroll, k[which]); break;
    }
    if (k[CUT_GS_VEC] > max_vec(g))
        k[CUT_GS_VEC] = max_vec(g);
    if (k[CUT_GS_UNROLL] > k[CUT_GS_BK])
        k[CUT_GS_UNROLL] = k[CUT_GS_BK];
}

static int check_knob_lists(const cut_gemm_sched *s, cut_err *e)
{
    const int *k = s->k;
    if (CUT_IN(v_bm, k[CUT_GS_BM]) && CUT_IN(v_bn, k[CUT_GS_BN]) && CUT_IN(v_bk, k[CUT_GS_BK]) &&
        CUT_IN(v_tm, k[CUT_GS_TM]) && CUT_IN(v_tn, k[CUT_GS_TN]) && CUT_IN(v_vec, k[CUT_GS_VEC]) &&
        CUT_IN(v_dbuf, k[CUT_GS_DBUF]) && CUT_IN(v_pad, k[CUT_GS_PAD]) && CUT_IN(v_unroll, k[CUT_GS_UNROLL]))
        return 0;
    char desc[256];
    cut_gemm_simt_describe(s, desc, sizeof desc);
    return cut_err_set(e, "a knob is not one of its allowed values (%s)", desc);
}

int cut_gemm_simt_check_shape(const cut_gemm *g, const cut_gemm_sched *s, cut_err *e)
{
    const int *k = s->k;
    if (g->dtype < 0 || g->dtype >= CUT_DT_COUNT)
        return cut_err_set(e, "unknown GEMM dtype %d", (int)g->dtype);
    if (g->m <= 0 || g->n <= 0 || g->k <= 0)
        return cut_err_set(e, "GEMM sizes must be positive (M=%d N=%d K=%d)", g->m, g->n, g->k);
    if (cut_gemm_validate(g, e) != 0) /* layout, batch, alpha, beta, operands under 2^31 elements */
        return -1;
    if (check_knob_lists(s, e) != 0)
        return -1;
    if (cut_gemm_batch(g) > 65535) /* the batch is blockIdx.z */
        return cut_err_set(e, "batch %d: the SIMT template runs the batch along the grid's z, at most 65535",
                           cut_gemm_batch(g));
    if (k[CUT_GS_TM] > k[CUT_GS_BM] || k[CUT_GS_TN] > k[CUT_GS_BN])
        return cut_err_set(e, "thread tile %dx%d exceeds the block tile %dx%d", k[CUT_GS_TM], k[CUT_GS_TN],
                           k[CUT_GS_BM], k[CUT_GS_BN]);
    if (k[CUT_GS_VEC] > max_vec(g))
        return cut_err_set(e, "vec=%d needs the rows of A (%s: %d) and of B (%s: %d) divisible by %d", k[CUT_GS_VEC],
                           cut_gemm_a_trans(g) ? "M" : "K", cut_gemm_a_trans(g) ? g->m : g->k,
                           cut_gemm_b_trans(g) ? "K" : "N", cut_gemm_b_trans(g) ? g->k : g->n, k[CUT_GS_VEC]);
    if (k[CUT_GS_UNROLL] > k[CUT_GS_BK])
        return cut_err_set(e, "unroll=%d exceeds bk=%d", k[CUT_GS_UNROLL], k[CUT_GS_BK]);
    return 0;
}

int cut_gemm_simt_check(const cut_gemm *g, const cut_gemm_sched *s, const cut_devlimits *d, cut_err *e)
{
    if (cut_gemm_simt_check_shape(g, s, e) != 0)
        return -1;
    const int *k = s->k;
    cut_gemm_simt_geom gm;
    cut_gemm_simt_geometry(g, s, &gm);
    if (gm.threads < d->warp_size || gm.threads > d->max_threads_per_block)
        return cut_err_set(e, "%d threads per block (BM/TM x BN/TN = %dx%d; allowed %d..%d)", gm.threads, gm.ty,
                           gm.tx, d->warp_size, d->max_threads_per_block);
    if (gm.smem_bytes > d->max_smem_per_block)
        return cut_err_set(e, "%d bytes of shared memory (limit %d)", gm.smem_bytes, d->max_smem_per_block);
    /* Tiles may overhang the GEMM (guards handle tails) but not by more than the next power of two (or the
     * smallest tile, so that small problems keep some schedules). */
    if (k[CUT_GS_BM] > cut_imax(cut_next_pow2(g->m), 16) || k[CUT_GS_BN] > cut_imax(cut_next_pow2(g->n), 32) ||
        k[CUT_GS_BK] > cut_imax(cut_next_pow2(g->k), 4))
        return cut_err_set(e, "block tile %dx%dx%d far exceeds the GEMM %dx%dx%d", k[CUT_GS_BM], k[CUT_GS_BN],
                           k[CUT_GS_BK], g->m, g->n, g->k);
    /* Few threads for a large tile: each thread stages many loads per k tile (spills at 255 registers). */
    if (gm.staged > MAX_STAGED)
        return cut_err_set(e, "%d staged floats per thread per k tile exceed %d (%d threads load %dx%d of A and "
                              "%dx%d of B)",
                           gm.staged, MAX_STAGED, gm.threads, k[CUT_GS_BM], k[CUT_GS_BK], k[CUT_GS_BK],
                           k[CUT_GS_BN]);
    if (gm.unrolled_fmas > MAX_UNROLLED_FMAS)
        return cut_err_set(e, "unrolled body of %d FMAs exceeds %d", gm.unrolled_fmas, MAX_UNROLLED_FMAS);
    if (gm.regs_est > d->max_regs_per_thread || (long)gm.regs_est * gm.threads > d->max_regs_per_block)
        return cut_err_set(e, "about %d registers per thread x %d threads exceed the register file", gm.regs_est,
                           gm.threads);
    return 0;
}

int cut_gemm_simt_sample_valid(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_gemm_sched *s,
                               int max_tries, cut_err *e)
{
    cut_err last = {{0}};
    for (int i = 0; i < max_tries; i++) {
        cut_gemm_simt_sample(g, d, r, s);
        if (cut_gemm_simt_check(g, s, d, &last) == 0)
            return 0;
    }
    return cut_err_set(e, "no valid SIMT GEMM schedule in %d samples (last: %s)", max_tries, last.msg);
}

/* ---- the template as the registry sees it ---- */

/* Every dtype: inputs are widened to fp32 on load and multiplied with fp32 FMAs (tf32 inputs are fp32 values, so
 * the SIMT kernel is at least as accurate as the tensor-core math the dtype allows). */
static int simt_applies(const cut_gemm *g, const cut_devlimits *d, cut_err *why)
{
    (void)d;
    if (g->dtype < 0 || g->dtype >= CUT_DT_COUNT)
        return cut_err_set(why, "unknown GEMM dtype %d", (int)g->dtype), 0;
    return 1;
}

static void simt_geometry(const cut_gemm *g, const cut_sched *s, cut_gemm_geom *out)
{
    cut_gemm_simt_geom sg;
    cut_gemm_simt_geometry(g, s, &sg);
    *out = (cut_gemm_geom){
        .bm = cut_clampi(s->k[CUT_GS_BM], 1, 1024), .bn = cut_clampi(s->k[CUT_GS_BN], 1, 1024),
        .bk = cut_clampi(s->k[CUT_GS_BK], 1, 1024), .threads = sg.threads,
        .stages = 1 + cut_clampi(s->k[CUT_GS_DBUF], 0, 1), .smem_bytes = sg.smem_bytes, .regs_est = sg.regs_est,
        .elem_bytes = (int)cut_dtype_size(g->dtype), .tensor_cores = 0,
    };
    memcpy(out->grid, sg.grid, sizeof out->grid);
}

const cut_gemm_template cut_gemm_tpl_simt = {
    .name = "simt",
    .nknobs = CUT_GS_NKNOBS,
    .knob_name = cut_gemm_simt_knob_name,
    .applies = simt_applies,
    .sample = cut_gemm_simt_sample,
    .mutate = cut_gemm_simt_mutate,
    .check = cut_gemm_simt_check,
    .geometry = simt_geometry,
    .codegen = cut_codegen_gemm_simt,
};
