/* cutune — the "mma" GEMM template's knob space (src/ops/gemm/mma_codegen.c explains the kernel and what each knob
 * trades): fp16, bf16 and tf32 inputs, fp32 accumulate, sm_80 and later.
 *
 * Knob lists are powers of two so that every warp count, loader stride and shared-memory row is one. The space
 * excludes what cannot run: more than 16 warps or fewer than 2, dynamic shared memory over the device's limit
 * (STAGES * (BM + BN) * BK * elem bytes), a register estimate over 255 per thread or over the register file for
 * the block (accumulators WM*WN/32 + double-buffered fragments + addresses), a cp.async width the rows'
 * alignment does not allow, a split-K with more slices than k tiles. */
#include "ops/gemm/mma.h"

#include "codegen/knobs.h"

#include <stdio.h>
#include <string.h>

static const char *const knob_names[CUT_GM_NKNOBS] = {
    "bm", "bn", "bk", "wm", "wn", "stages", "swizzle", "group_m", "cpw", "splitk",
};

static const int v_bm[] = {64, 128, 256};
static const int v_bn[] = {64, 128, 256};
static const int v_bk16[] = {32, 64}; /* fp16, bf16: rows of 64 or 128 bytes */
static const int v_bk32[] = {16, 32}; /* tf32: rows of 64 or 128 bytes */
static const int v_wm[] = {32, 64};
static const int v_wn[] = {32, 64};
static const int v_stages[] = {2, 3, 4};
static const int v_swizzle[] = {0, 1};
static const int v_group_m[] = {1, 4, 8};
static const int v_cpw[] = {4, 8, 16};
static const int v_splitk[] = {1, 2, 4, 8};
/* Output tiles (over the batch) below which split-K is worth sampling: fewer than two waves of 132 SMs. */
#define SPLITK_TILES 264
/* Serial split-K keeps one turn counter per output tile in a module variable. */
#define SPLITK_MAX_TURNS (1 << 20)

#define PICK(r, v) cut_pick(r, v, (int)CUT_ARRAY_LEN(v))
#define STEP(r, v, cur) cut_step_in(r, v, (int)CUT_ARRAY_LEN(v), cur)

#define MIN_WARPS 2
#define MAX_WARPS 16
/* Registers beyond accumulators and fragments: shared/global addresses, loop state, epilogue indices. */
#define REGS_OTHER 40
/* cp.async copies per thread per k tile: each keeps an address in registers (narrow widths with few threads
 * spill) */
#define MAX_COPIES 16
/* Registers kept free below ptxas's cap (spills seen without them on random compiles) */
#define REGS_MARGIN 8
#define REGS_MARGIN_512 16



static int is_16bit(cut_dtype d) { return d == CUT_DT_FP16 || d == CUT_DT_BF16; }
static int elem_bytes(cut_dtype d) { return is_16bit(d) ? 2 : 4; }

const char *cut_gemm_mma_knob_name(int knob) { return knob >= 0 && knob < CUT_GM_NKNOBS ? knob_names[knob] : "?"; }

void cut_gemm_mma_describe(const cut_sched *s, char *buf, size_t n)
{
    size_t off = (size_t)snprintf(buf, n, "mma");
    for (int i = 0; i < CUT_GM_NKNOBS && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, " %s=%d", knob_names[i], s->k[i]);
}


int cut_gemm_mma_max_cpw(const cut_gemm *g)
{
    const int e = elem_bytes(g->dtype);
    const int row_a = cut_gemm_a_trans(g) ? g->m : g->k, row_b = cut_gemm_b_trans(g) ? g->k : g->n;
    for (int w = 16; w >= 4; w /= 2)
        if (w >= e && ((long)row_a * e) % w == 0 && ((long)row_b * e) % w == 0)
            return w;
    return 0;
}

/* The rows of A and B named for the sentences: "A (K=70) and of B (N=130)". */
static void rows_phrase(const cut_gemm *g, char *buf, size_t n)
{
    const int at = cut_gemm_a_trans(g), bt = cut_gemm_b_trans(g);
    snprintf(buf, n, "A (%s=%d) and of B (%s=%d)", at ? "M" : "K", at ? g->m : g->k, bt ? "K" : "N",
             bt ? g->k : g->n);
}

int cut_gemm_mma_smem_limit(const cut_devlimits *d)
{
    if (d->sm_major >= 9)
        return 227 * 1024;
    if (d->sm_major == 8 && (d->sm_minor == 0 || d->sm_minor == 7))
        return 163 * 1024;
    return 99 * 1024;
}

void cut_gemm_mma_geometry(const cut_gemm *g, const cut_sched *s, cut_gemm_mma_geom *out)
{
    const int *k = s->k;
    const int bm = cut_clampi(k[CUT_GM_BM], 16, 1024), bn = cut_clampi(k[CUT_GM_BN], 16, 1024);
    const int bk = cut_clampi(k[CUT_GM_BK], 8, 1024), wm = cut_clampi(k[CUT_GM_WM], 16, 1024);
    const int wn = cut_clampi(k[CUT_GM_WN], 16, 1024), stages = cut_clampi(k[CUT_GM_STAGES], 1, 16);
    memset(out, 0, sizeof *out);
    out->elem = elem_bytes(g->dtype);
    out->kstep = is_16bit(g->dtype) ? 16 : 8;
    out->warps_m = cut_imax(bm / wm, 1);
    out->warps_n = cut_imax(bn / wn, 1);
    out->threads = 32 * out->warps_m * out->warps_n;
    out->mi = cut_imax(wm / 16, 1);
    out->ni = cut_imax(wn / 8, 1);
    out->a_row_bytes = (cut_gemm_a_trans(g) ? bm : bk) * out->elem;
    out->b_rows = cut_gemm_b_trans(g) ? bn : bk;
    out->b_row_bytes = (cut_gemm_b_trans(g) ? bk : bn) * out->elem;
    out->stage_bytes = bm * bk * out->elem + out->b_rows * out->b_row_bytes;
    out->smem_bytes = stages * out->stage_bytes;
    const int cpw = cut_clampi(k[CUT_GM_CPW], 4, 16);
    out->copies = cut_ceil_div(bm * bk * out->elem / cpw, out->threads) +
                  cut_ceil_div(out->b_rows * out->b_row_bytes / cpw, out->threads);
    out->acc = out->mi * out->ni * 4;
    /* accumulators + two k steps of fragments (A: 4 per m16 tile, B: 2 per n8 tile) + an address per cp.async
     * (ptxas keeps them across the loop) + tf32's rounded fragment copies + the rest. Checked against ptxas on
     * random sm_90 compiles (tests/test_gemm_mma.c prints the range of actual / estimated). */
    out->regs_est = out->acc + 2 * (4 * out->mi + 2 * out->ni) + out->copies + (out->elem == 4 ? 16 : 0) +
                    REGS_OTHER;
    out->tiles_m = cut_ceil_div(cut_imax(g->m, 1), bm);
    out->tiles_n = cut_ceil_div(cut_imax(g->n, 1), bn);
    out->splitk = cut_clampi(k[CUT_GM_SPLITK], 1, 64); /* 0 (a conv's view of this template): none */
    out->grid[0] = (unsigned)out->tiles_n;
    out->grid[1] = (unsigned)out->tiles_m;
    out->grid[2] = (unsigned)(cut_gemm_batch(g) * out->splitk);
}

/* Mostly the widest cp.async width the alignment allows; sometimes a narrower one, so the model sees its effect. */
static void pick_cpw(const cut_gemm *g, cut_rng *r, int *k)
{
    const int max = cut_gemm_mma_max_cpw(g);
    if (max == 0 || cut_rng_below(r, 4) != 0)
        k[CUT_GM_CPW] = max ? max : 16; /* max 0: check refuses with the alignment sentence */
    else
        do
            k[CUT_GM_CPW] = PICK(r, v_cpw);
        while (k[CUT_GM_CPW] > max);
}

static void sample(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    (void)d;
    int *k = s->k;
    s->tpl = CUT_GEMM_TPL_MMA;
    k[CUT_GM_BM] = PICK(r, v_bm);
    k[CUT_GM_BN] = PICK(r, v_bn);
    k[CUT_GM_BK] = is_16bit(g->dtype) ? PICK(r, v_bk16) : PICK(r, v_bk32);
    k[CUT_GM_WM] = PICK(r, v_wm);
    k[CUT_GM_WN] = PICK(r, v_wn);
    k[CUT_GM_STAGES] = PICK(r, v_stages);
    k[CUT_GM_SWIZZLE] = PICK(r, v_swizzle);
    k[CUT_GM_GROUP_M] = PICK(r, v_group_m);
    pick_cpw(g, r, k);
    /* split-K mostly where the output tiles cannot fill the GPU (skinny GEMMs, M <= 64) */
    const long tiles = (long)cut_ceil_div(g->m, k[CUT_GM_BM]) * cut_ceil_div(g->n, k[CUT_GM_BN]) * cut_gemm_batch(g);
    k[CUT_GM_SPLITK] = tiles < SPLITK_TILES || cut_rng_below(r, 8) == 0 ? PICK(r, v_splitk) : 1;
}

static void mutate(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    (void)d;
    int *k = s->k;
    const int which = (int)cut_rng_below(r, CUT_GM_NKNOBS);
    switch (which) {
    case CUT_GM_BM: k[which] = STEP(r, v_bm, k[which]); break;
    case CUT_GM_BN: k[which] = STEP(r, v_bn, k[which]); break;
    case CUT_GM_BK:
        k[which] = is_16bit(g->dtype) ? STEP(r, v_bk16, k[which]) : STEP(r, v_bk32, k[which]);
        break;
    case CUT_GM_WM: k[which] = STEP(r, v_wm, k[which]); break;
    case CUT_GM_WN: k[which] = STEP(r, v_wn, k[which]); break;
    case CUT_GM_STAGES: k[which] = STEP(r, v_stages, k[which]); break;
    case CUT_GM_SWIZZLE: k[which] = !k[which]; break;
    case CUT_GM_GROUP_M: k[which] = STEP(r, v_group_m, k[which]); break;
    case CUT_GM_SPLITK: k[which] = STEP(r, v_splitk, k[which]); break;
    default: k[which] = STEP(r, v_cpw, k[which]); break;
    }
    /* keep the schedule on the dtype's lists and within the alignment */
    if (is_16bit(g->dtype) ? !CUT_IN(v_bk16, k[CUT_GM_BK]) : !CUT_IN(v_bk32, k[CUT_GM_BK]))
        k[CUT_GM_BK] = is_16bit(g->dtype) ? v_bk16[0] : v_bk32[0];
    const int max = cut_gemm_mma_max_cpw(g);
    if (max > 0 && k[CUT_GM_CPW] > max)
        k[CUT_GM_CPW] = max;
    if (k[CUT_GM_CPW] < elem_bytes(g->dtype))
        k[CUT_GM_CPW] = elem_bytes(g->dtype);
}

static int applies(const cut_gemm *g, const cut_devlimits *d, cut_err *why)
{
    if (g->dtype != CUT_DT_FP16 && g->dtype != CUT_DT_BF16 && g->dtype != CUT_DT_TF32)
        return cut_err_set(why, "the mma template computes fp16, bf16 and tf32 inputs only (dtype %s; fp32 is the "
                                "SIMT template's)",
                           cut_dtype_name(g->dtype)),
               0;
    if (d && d->sm_major < 8)
        return cut_err_set(why, "the mma template needs sm_80 or later (cp.async, ldmatrix, bf16/tf32 mma.sync); "
                                "the device is sm_%d%d",
                           d->sm_major, d->sm_minor),
               0;
    return 1;
}

static int check_knob_lists(const cut_gemm *g, const cut_sched *s, cut_err *e)
{
    const int *k = s->k;
    const int bk_ok = is_16bit(g->dtype) ? CUT_IN(v_bk16, k[CUT_GM_BK]) : CUT_IN(v_bk32, k[CUT_GM_BK]);
    if (CUT_IN(v_bm, k[CUT_GM_BM]) && CUT_IN(v_bn, k[CUT_GM_BN]) && bk_ok && CUT_IN(v_wm, k[CUT_GM_WM]) &&
        CUT_IN(v_wn, k[CUT_GM_WN]) && CUT_IN(v_stages, k[CUT_GM_STAGES]) && CUT_IN(v_swizzle, k[CUT_GM_SWIZZLE]) &&
        CUT_IN(v_group_m, k[CUT_GM_GROUP_M]) && CUT_IN(v_cpw, k[CUT_GM_CPW]) &&
        (k[CUT_GM_SPLITK] == 0 || CUT_IN(v_splitk, k[CUT_GM_SPLITK]))) /* 0: built before the knob, as 1 */
        return 0;
    char desc[256];
    cut_gemm_mma_describe(s, desc, sizeof desc);
    return cut_err_set(e, "a knob is not one of its allowed values for %s (%s; bk is 32 or 64 for fp16/bf16, "
                          "16 or 32 for tf32)",
                       cut_dtype_name(g->dtype), desc);
}

/* A slice needs at least one k tile, and serial split-K one turn counter per output tile. */
static int check_splitk(const cut_gemm *g, const cut_sched *s, cut_err *e)
{
    const int sk = s->k[CUT_GM_SPLITK], kt = cut_ceil_div(g->k, s->k[CUT_GM_BK]);
    if (sk > kt)
        return cut_err_set(e, "splitk=%d slices K=%d into more parts than its %d k tiles of bk=%d", sk, g->k, kt,
                           s->k[CUT_GM_BK]);
    const long turns = (long)cut_ceil_div(g->m, s->k[CUT_GM_BM]) * cut_ceil_div(g->n, s->k[CUT_GM_BN]) *
                       cut_gemm_batch(g);
    if ((long)cut_gemm_batch(g) * (sk > 1 ? sk : 1) > 65535) /* batch x slices is blockIdx.z */
        return cut_err_set(e, "batch %d x splitk %d blocks along the grid's z exceed its 65535", cut_gemm_batch(g),
                           sk > 1 ? sk : 1);
    if (sk > 1 && turns > SPLITK_MAX_TURNS)
        return cut_err_set(e, "splitk=%d keeps a turn counter per output tile, and %ld tiles exceed %d: such a GEMM "
                              "fills the GPU without splitting K",
                           sk, turns, SPLITK_MAX_TURNS);
    return 0;
}

int cut_gemm_mma_check_shape(const cut_gemm *g, const cut_sched *s, cut_err *e)
{
    const int *k = s->k;
    if (!applies(g, NULL, e))
        return -1;
    if (g->m <= 0 || g->n <= 0 || g->k <= 0)
        return cut_err_set(e, "GEMM sizes must be positive (M=%d N=%d K=%d)", g->m, g->n, g->k);
    if (cut_gemm_validate(g, e) != 0) /* layout, batch, alpha, beta, operands under 2^31 elements */
        return -1;
    if (check_knob_lists(g, s, e) != 0)
        return -1;
    if (k[CUT_GM_WM] > k[CUT_GM_BM] || k[CUT_GM_WN] > k[CUT_GM_BN])
        return cut_err_set(e, "warp tile %dx%d exceeds the block tile %dx%d", k[CUT_GM_WM], k[CUT_GM_WN],
                           k[CUT_GM_BM], k[CUT_GM_BN]);
    const int max = cut_gemm_mma_max_cpw(g);
    char rows[96];
    rows_phrase(g, rows, sizeof rows);
    if (max == 0)
        return cut_err_set(e, "cp.async copies at least 4 bytes: the rows of %s of %s must be a multiple of 4 bytes",
                           rows, cut_dtype_name(g->dtype));
    if (k[CUT_GM_CPW] > max || k[CUT_GM_CPW] < elem_bytes(g->dtype))
        return cut_err_set(e, "cp.async width %d bytes needs the rows of %s aligned to it (%d bytes at most here, and "
                              "at least one %s element)",
                           k[CUT_GM_CPW], rows, max, cut_dtype_name(g->dtype));
    return check_splitk(g, s, e);
}

static int check(const cut_gemm *g, const cut_sched *s, const cut_devlimits *d, cut_err *e)
{
    if (!applies(g, d, e) || cut_gemm_mma_check_shape(g, s, e) != 0)
        return -1;
    const int *k = s->k;
    cut_gemm_mma_geom gm;
    cut_gemm_mma_geometry(g, s, &gm);
    const int warps = gm.warps_m * gm.warps_n;
    if (warps < MIN_WARPS || warps > MAX_WARPS || gm.threads > d->max_threads_per_block)
        return cut_err_set(e, "%d warps per block (BM/WM x BN/WN = %dx%d; allowed %d..%d)", warps, gm.warps_m,
                           gm.warps_n, MIN_WARPS, MAX_WARPS);
    if (gm.copies > MAX_COPIES)
        return cut_err_set(e, "%d cp.async copies per thread per k tile exceed %d (%d threads copy %dx%d and "
                              "%dx%d bytes in %d-byte pieces)",
                           gm.copies, MAX_COPIES, gm.threads, k[CUT_GM_BM], gm.a_row_bytes, gm.b_rows,
                           gm.b_row_bytes, k[CUT_GM_CPW]);
    const int limit = cut_gemm_mma_smem_limit(d);
    if (gm.smem_bytes > limit)
        return cut_err_set(e, "%d bytes of shared memory (STAGES %d x (BM %d + BN %d) x BK %d x %d bytes) exceed "
                              "the %d-byte limit",
                           gm.smem_bytes, k[CUT_GM_STAGES], k[CUT_GM_BM], k[CUT_GM_BN], k[CUT_GM_BK], gm.elem, limit);
    /* __launch_bounds__(threads, 1) gives ptxas min(255, register file / threads) registers; keep a margin below
     * that (a wider one for 512 threads, where the 128-register cap leaves ptxas little room) */
    int cap = d->max_regs_per_block / gm.threads / 8 * 8;
    cap = cap < d->max_regs_per_thread ? cap : d->max_regs_per_thread;
    const int margin = gm.threads >= 512 ? REGS_MARGIN_512 : REGS_MARGIN;
    if (gm.regs_est + margin > cap)
        return cut_err_set(e, "about %d registers per thread (%d accumulators of a %dx%d warp tile) x %d threads "
                              "exceed the register file (%d per thread at most, with a margin of %d)",
                           gm.regs_est, gm.acc, k[CUT_GM_WM], k[CUT_GM_WN], gm.threads, cap, margin);
    /* Tiles may overhang the GEMM (cp.async zero-fills, stores are guarded) but not by more than the next power
     * of two (or the smallest tile, so that small problems keep some schedules). */
    if (k[CUT_GM_BM] > cut_imax(cut_next_pow2(g->m), 64) || k[CUT_GM_BN] > cut_imax(cut_next_pow2(g->n), 64) ||
        k[CUT_GM_BK] > cut_imax(cut_next_pow2(g->k), is_16bit(g->dtype) ? 32 : 16))
        return cut_err_set(e, "block tile %dx%dx%d far exceeds the GEMM %dx%dx%d", k[CUT_GM_BM], k[CUT_GM_BN],
                           k[CUT_GM_BK], g->m, g->n, g->k);
    return 0;
}

static void geometry(const cut_gemm *g, const cut_sched *s, cut_gemm_geom *out)
{
    cut_gemm_mma_geom mg;
    cut_gemm_mma_geometry(g, s, &mg);
    *out = (cut_gemm_geom){
        .bm = cut_clampi(s->k[CUT_GM_BM], 16, 1024), .bn = cut_clampi(s->k[CUT_GM_BN], 16, 1024),
        .bk = cut_clampi(s->k[CUT_GM_BK], 8, 1024), .threads = mg.threads,
        .stages = cut_clampi(s->k[CUT_GM_STAGES], 1, 16), .smem_bytes = mg.smem_bytes, .regs_est = mg.regs_est,
        .elem_bytes = mg.elem, .tensor_cores = 1,
    };
    memcpy(out->grid, mg.grid, sizeof out->grid);
}

/* Knobs added after records were first written read as their neutral value when a record lacks them. */
static int knob_default(int knob) { return knob == CUT_GM_SPLITK ? 1 : -1; }

const cut_gemm_template cut_gemm_tpl_mma = {
    .name = "mma",
    .knob_default = knob_default,
    .nknobs = CUT_GM_NKNOBS,
    .knob_name = cut_gemm_mma_knob_name,
    .applies = applies,
    .sample = sample,
    .mutate = mutate,
    .check = check,
    .geometry = geometry,
    .codegen = cut_codegen_gemm_mma,
};
