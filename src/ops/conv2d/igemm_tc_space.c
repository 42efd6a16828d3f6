/* cutune — the tensor-core implicit-GEMM template's knob space (src/ops/conv2d/igemm_tc_gen.c explains the kernel
 * and what each knob trades): tf32, fp16 and bf16 inputs, fp32 accumulate, NCHW and NHWC, sm_80 and later.
 *
 * The tile machinery is the "mma" GEMM's (src/ops/gemm/mma.c): its geometry gives warps, accumulators and shared
 * memory of a GEMM of the convolution's sizes, its limits apply. What is the convolution's own: the input is an
 * im2col view gathered on the fly, so its copies are cp.async pieces only where the layout makes a piece
 * contiguous (NHWC, CI * elem a multiple of the width), else single elements through registers; the weights are
 * rows of K contiguous elements, copied with cp.async when K * elem allows the width (tf32's 4-byte elements are
 * always aligned, so its NCHW gather may be a 4-byte cp.async per element too). Split-K cuts the k tiles into
 * slices over blockIdx.z where there are at least two tiles per slice; which count wins (more blocks against the
 * partial tiles' round trip through L2) the search decides. The space excludes more than 16 warps, shared memory
 * over the device's limit, a register estimate over 255 or over the register file, too many copies per thread,
 * block tiles far larger than the GEMM, and split-K slices of fewer than two k tiles or a workspace over 64 MiB. */
#include "ops/conv2d/templates.h"
#include "ops/gemm/mma.h"

#include <stdio.h>
#include <string.h>

static const char *const knob_names[CUT_T_NKNOBS] = {
    "bm", "bn", "bk", "wm", "wn", "stages", "swizzle", "cpa", "cpb", "splitk",
};
/* records of the first version carry no splitk: they meant one slice */
static const int knob_defaults[CUT_T_NKNOBS] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, 1};

static const int v_bm[] = {32, 64, 128, 256};
static const int v_bn[] = {32, 64, 128, 256};
static const int v_bk16[] = {32, 64}; /* fp16, bf16: rows of 64 or 128 bytes */
static const int v_bk32[] = {16, 32}; /* tf32 */
static const int v_wm[] = {32, 64};
static const int v_wn[] = {32, 64};
static const int v_stages[] = {2, 3, 4};
static const int v_swizzle[] = {0, 1};
static const int v_cp[] = {0, 4, 8, 16};
static const int v_splitk[] = {1, 2, 4, 8, 16};

#define PICK(r, v) cut_pick(r, v, (int)CUT_ARRAY_LEN(v))
#define STEP(r, v, cur) cut_step_in(r, v, (int)CUT_ARRAY_LEN(v), cur)

#define MAX_WARPS 16
/* cp.async pieces per thread per k tile (each keeps an address live across the issue) */
#define MAX_CP_UNITS 16
/* gathered elements per thread per k tile (each an im2col decode, a load and a shared store) */
#define MAX_GATHER_UNITS 64
/* Registers beyond accumulators and fragments: addresses, the im2col decode, loop state, epilogue indices */
#define REGS_OTHER 40
/* the gather loop's decode and loaded values, partly unrolled */
#define REGS_GATHER 24
/* Largest split-K workspace (fp32 partial tiles, a static __device__ array of the kernel), as the fp32 igemm's */
#define MAX_WS_BYTES (64L << 20)
/* Registers kept free below ptxas's cap of 255 (a 64x64 warp tile estimated at 252 spilled 8 bytes) */
#define REGS_MARGIN 8

static int is_16bit(cut_dtype d) { return d == CUT_DT_FP16 || d == CUT_DT_BF16; }
static int elem_bytes(const cut_conv *c) { return is_16bit(c->dtype) ? 2 : 4; }

static int applies(const cut_conv *c)
{
    return c->dtype == CUT_DT_TF32 || c->dtype == CUT_DT_FP16 || c->dtype == CUT_DT_BF16;
}

/* Largest of 16, 8, 4 that divides bytes and holds whole elements; 0 if none. */
static int widest(long bytes, int elem)
{
    for (int w = 16; w >= 4; w /= 2)
        if (w >= elem && bytes % w == 0)
            return w;
    return 0;
}

int cut_igemm_tc_max_cpa(const cut_conv *c)
{
    if (c->layout == CUT_NHWC)
        return widest((long)c->ci * elem_bytes(c), elem_bytes(c));
    /* NCHW: consecutive k are not consecutive addresses, but one tf32 element is an aligned 4-byte piece */
    return c->dtype == CUT_DT_TF32 ? 4 : 0;
}

int cut_igemm_tc_max_cpb(const cut_conv *c)
{
    return widest((long)c->ci * c->kh * c->kw * elem_bytes(c), elem_bytes(c));
}

/* The GEMM of the convolution as the mma template sees it (NT: the weights are N rows of K), and s's tile knobs
 * in that template's order. */
static void gemm_view(const cut_conv *c, const cut_sched *s, cut_gemm *g, cut_sched *gs)
{
    const long m = (long)c->n * cut_conv_oh(c) * cut_conv_ow(c);
    *g = (cut_gemm){.m = (int)CUT_MIN(m, 0x7fffffffL), .n = c->co, .k = c->ci * c->kh * c->kw,
                    .layout = CUT_GEMM_NT, .dtype = c->dtype};
    memset(gs, 0, sizeof *gs);
    gs->tpl = CUT_GEMM_TPL_MMA;
    const int map[][2] = {{CUT_GM_BM, CUT_T_BM}, {CUT_GM_BN, CUT_T_BN}, {CUT_GM_BK, CUT_T_BK},
                          {CUT_GM_WM, CUT_T_WM}, {CUT_GM_WN, CUT_T_WN}, {CUT_GM_STAGES, CUT_T_STAGES},
                          {CUT_GM_SWIZZLE, CUT_T_SWIZZLE}};
    for (size_t i = 0; i < CUT_ARRAY_LEN(map); i++)
        gs->k[map[i][0]] = s->k[map[i][1]];
    gs->k[CUT_GM_GROUP_M] = 1;
    gs->k[CUT_GM_CPW] = 16;
}

/* Copies per thread per k tile of rows x cols elements in pieces of cp bytes (0: one element each). */
static int units_per_thread(int rows, int cols, int elem, int cp, int threads)
{
    const int per_piece = cp ? cp / elem : 1;
    return cut_ceil_div(rows * cut_imax(cols / cut_imax(per_piece, 1), 1), cut_imax(threads, 1));
}

void cut_igemm_tc_geometry(const cut_conv *c, const cut_sched *s, cut_igemm_tc_geom *out)
{
    cut_gemm g;
    cut_sched gs;
    gemm_view(c, s, &g, &gs);
    cut_gemm_mma_geom gm;
    cut_gemm_mma_geometry(&g, &gs, &gm);
    memset(out, 0, sizeof *out);
    out->oh = cut_conv_oh(c), out->ow = cut_conv_ow(c);
    out->gm = g.m, out->gn = g.n, out->gk = g.k;
    out->elem = gm.elem;
    out->warps = gm.warps_m * gm.warps_n;
    out->threads = gm.threads;
    const int bm = cut_clampi(s->k[CUT_T_BM], 16, 1024), bn = cut_clampi(s->k[CUT_T_BN], 16, 1024);
    const int bk = cut_clampi(s->k[CUT_T_BK], 8, 1024);
    const int cpa = cut_clampi(s->k[CUT_T_CPA], 0, 16), cpb = cut_clampi(s->k[CUT_T_CPB], 0, 16);
    out->a_units = units_per_thread(bm, bk, gm.elem, cpa, gm.threads);
    out->b_units = units_per_thread(bn, bk, gm.elem, cpb, gm.threads);
    out->smem_ring = gm.smem_bytes;
    out->smem_bytes = gm.smem_bytes + CUT_IGEMM_TC_ROW_BYTES * bm;
    out->acc = gm.acc;
    out->split = cut_clampi(s->k[CUT_T_SPLITK], 1, 64);
    out->ktiles = cut_ceil_div(g.k, bk);
    out->kps = cut_ceil_div(out->ktiles, out->split);
    /* the mma GEMM's estimate with this kernel's copies: cp.async pieces keep an address each, a gather loop
     * its decode */
    /* the input's loop is unrolled by 4 (igemm_tc_gen.c), the weights' cp.async loop fully */
    const int cp_units = (cpa ? CUT_MIN(out->a_units, 4) : 0) + (cpb ? out->b_units : 0);
    out->regs_est = gm.acc + 2 * (4 * gm.mi + 2 * gm.ni) + CUT_MIN(cp_units, MAX_CP_UNITS) +
                    (cpa && cpb ? 0 : REGS_GATHER) + (gm.elem == 4 ? 16 : 0) + REGS_OTHER;
    out->grid[0] = (unsigned)gm.tiles_n;
    out->grid[1] = (unsigned)gm.tiles_m;
    out->grid[2] = (unsigned)out->split;
    /* one fp32 partial per element of every (overhanging) block tile and slice */
    out->ws_bytes = out->split > 1 ? 4L * out->split * gm.tiles_m * gm.tiles_n * bm * bn : 0;
}

/* A cp.async width for an operand whose widest is max: mostly the widest, sometimes a narrower one or the gather,
 * so that the model sees the difference. */
static int pick_cp(cut_rng *r, int max)
{
    if (max == 0 || cut_rng_below(r, 4) != 0)
        return max;
    int w;
    do
        w = PICK(r, v_cp);
    while (w > max);
    return w;
}

/* Split-K slices for the knobs in k: half the time none, else one of the counts that leave every slice two k
 * tiles (none if K is too short). */
static int pick_split(const cut_conv *c, const int *k, cut_rng *r)
{
    const int ktiles = cut_ceil_div(c->ci * c->kh * c->kw, cut_imax(k[CUT_T_BK], 1));
    int n = 0;
    while (n < (int)CUT_ARRAY_LEN(v_splitk) && ktiles >= 2 * v_splitk[n])
        n++;
    return n <= 1 || cut_rng_below(r, 2) ? 1 : v_splitk[cut_rng_below(r, (uint32_t)n)];
}

static void sample(const cut_conv *c, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    (void)d;
    int *k = s->k;
    k[CUT_T_BM] = PICK(r, v_bm);
    k[CUT_T_BN] = PICK(r, v_bn);
    k[CUT_T_BK] = is_16bit(c->dtype) ? PICK(r, v_bk16) : PICK(r, v_bk32);
    k[CUT_T_WM] = PICK(r, v_wm);
    k[CUT_T_WN] = PICK(r, v_wn);
    k[CUT_T_STAGES] = PICK(r, v_stages);
    k[CUT_T_SWIZZLE] = PICK(r, v_swizzle);
    k[CUT_T_CPA] = pick_cp(r, cut_igemm_tc_max_cpa(c));
    k[CUT_T_CPB] = pick_cp(r, cut_igemm_tc_max_cpb(c));
    k[CUT_T_SPLITK] = pick_split(c, k, r);
}

/* A width the operand allows: w itself, else its widest (which may be 0, the gather). */
static int fit_cp(const cut_conv *c, int w, int max)
{
    return w == 0 || (w <= max && w >= elem_bytes(c)) ? w : max;
}

static void mutate(const cut_conv *c, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    (void)d;
    int *k = s->k;
    const int which = (int)cut_rng_below(r, CUT_T_NKNOBS);
    switch (which) {
    case CUT_T_BM: k[which] = STEP(r, v_bm, k[which]); break;
    case CUT_T_BN: k[which] = STEP(r, v_bn, k[which]); break;
    case CUT_T_BK: k[which] = is_16bit(c->dtype) ? STEP(r, v_bk16, k[which]) : STEP(r, v_bk32, k[which]); break;
    case CUT_T_WM: k[which] = STEP(r, v_wm, k[which]); break;
    case CUT_T_WN: k[which] = STEP(r, v_wn, k[which]); break;
    case CUT_T_STAGES: k[which] = STEP(r, v_stages, k[which]); break;
    case CUT_T_SWIZZLE: k[which] = !k[which]; break;
    case CUT_T_SPLITK: k[which] = STEP(r, v_splitk, k[which]); break;
    default: k[which] = STEP(r, v_cp, k[which]); break;
    }
    if (is_16bit(c->dtype) ? !CUT_IN(v_bk16, k[CUT_T_BK]) : !CUT_IN(v_bk32, k[CUT_T_BK]))
        k[CUT_T_BK] = is_16bit(c->dtype) ? v_bk16[0] : v_bk32[0];
    k[CUT_T_CPA] = fit_cp(c, k[CUT_T_CPA], cut_igemm_tc_max_cpa(c));
    k[CUT_T_CPB] = fit_cp(c, k[CUT_T_CPB], cut_igemm_tc_max_cpb(c));
}

static int check_knob_lists(const cut_conv *c, const cut_sched *s, cut_err *e)
{
    const int *k = s->k;
    const int bk_ok = is_16bit(c->dtype) ? CUT_IN(v_bk16, k[CUT_T_BK]) : CUT_IN(v_bk32, k[CUT_T_BK]);
    if (CUT_IN(v_bm, k[CUT_T_BM]) && CUT_IN(v_bn, k[CUT_T_BN]) && bk_ok && CUT_IN(v_wm, k[CUT_T_WM]) &&
        CUT_IN(v_wn, k[CUT_T_WN]) && CUT_IN(v_stages, k[CUT_T_STAGES]) && CUT_IN(v_swizzle, k[CUT_T_SWIZZLE]) &&
        CUT_IN(v_cp, k[CUT_T_CPA]) && CUT_IN(v_cp, k[CUT_T_CPB]) && CUT_IN(v_splitk, k[CUT_T_SPLITK]))
        return 0;
    char desc[256];
    cut_sched_describe(s, desc, sizeof desc);
    return cut_err_set(e, "a knob is not one of its allowed values for %s (%s; bk is 32 or 64 for fp16/bf16, 16 or "
                          "32 for tf32)",
                       cut_dtype_name(c->dtype), desc);
}

/* The copy widths against the layout and the alignment of the rows. */
static int check_copies(const cut_conv *c, const int *k, cut_err *e)
{
    const int ma = cut_igemm_tc_max_cpa(c), mb = cut_igemm_tc_max_cpb(c);
    if (k[CUT_T_CPA] != 0 && (k[CUT_T_CPA] > ma || k[CUT_T_CPA] < elem_bytes(c)))
        return cut_err_set(e, "cpa=%d: cp.async of the input needs NHWC with CI x %d bytes a multiple of the width, "
                              "or tf32 NCHW with 4 bytes (CI=%d, %s: %d bytes at most; cpa=0 gathers element by "
                              "element)",
                           k[CUT_T_CPA], elem_bytes(c), c->ci, cut_conv_layout_name(c->layout), ma);
    if (k[CUT_T_CPB] != 0 && (k[CUT_T_CPB] > mb || k[CUT_T_CPB] < elem_bytes(c)))
        return cut_err_set(e, "cpb=%d: cp.async of the weights needs rows of K=%d elements x %d bytes aligned to the "
                              "width (%d bytes at most; cpb=0 gathers element by element)",
                           k[CUT_T_CPB], c->ci * c->kh * c->kw, elem_bytes(c), mb);
    return 0;
}

static int check_resources(const cut_sched *s, const cut_igemm_tc_geom *g, const cut_devlimits *d, cut_err *e)
{
    const int *k = s->k;
    if (g->warps < 1 || g->warps > MAX_WARPS || g->threads > d->max_threads_per_block)
        return cut_err_set(e, "%d warps per block (BM/WM x BN/WN = %d/%d x %d/%d; allowed 1..%d)", g->warps,
                           k[CUT_T_BM], k[CUT_T_WM], k[CUT_T_BN], k[CUT_T_WN], MAX_WARPS);
    const int units[2] = {g->a_units, g->b_units}, widths[2] = {k[CUT_T_CPA], k[CUT_T_CPB]};
    for (int i = 0; i < 2; i++) {
        const int max = widths[i] ? MAX_CP_UNITS : MAX_GATHER_UNITS;
        if (units[i] > max)
            return cut_err_set(e, "%d %s per thread per k tile of the %s exceed %d (%d threads for a %dx%d tile)",
                               units[i], widths[i] ? "cp.async copies" : "gathered elements", i ? "weights" : "input",
                               max, g->threads, k[i ? CUT_T_BN : CUT_T_BM], k[CUT_T_BK]);
    }
    const int limit = cut_gemm_mma_smem_limit(d);
    if (g->smem_bytes > limit)
        return cut_err_set(e, "%d bytes of shared memory (STAGES x (BM + BN) x BK x %d bytes, and %d per A row of "
                              "the decode table) exceed the %d bytes a block may use on sm_%d%d",
                           g->smem_bytes, g->elem, CUT_IGEMM_TC_ROW_BYTES, limit, d->sm_major, d->sm_minor);
    if (g->regs_est + REGS_MARGIN > d->max_regs_per_thread || (long)g->regs_est * g->threads > d->max_regs_per_block)
        return cut_err_set(e, "about %d registers per thread (%d accumulators) x %d threads exceed the register file",
                           g->regs_est, g->acc, g->threads);
    return 0;
}

/* Split-K: at least two k tiles per slice (shorter slices are mostly the partials' round trip), none empty,
 * and the workspace within the limit. */
static int check_split(const cut_sched *s, const cut_igemm_tc_geom *g, cut_err *e)
{
    if (g->split <= 1)
        return 0;
    if (g->ktiles < 2 * g->split)
        return cut_err_set(e, "splitk=%d needs at least %d k tiles (two per slice); K=%d has %d of bk=%d", g->split,
                           2 * g->split, g->gk, g->ktiles, s->k[CUT_T_BK]);
    if ((g->split - 1) * g->kps >= g->ktiles)
        return cut_err_set(e, "splitk=%d leaves a slice without k tiles (%d tiles of bk=%d, %d per slice)", g->split,
                           g->ktiles, s->k[CUT_T_BK], g->kps);
    if (g->ws_bytes > MAX_WS_BYTES)
        return cut_err_set(e, "splitk=%d needs a %ld-byte workspace of partial tiles (limit %ld)", g->split,
                           g->ws_bytes, MAX_WS_BYTES);
    return 0;
}

static int check(const cut_conv *c, const cut_sched *s, const cut_devlimits *d, cut_err *e)
{
    const int *k = s->k;
    if (!applies(c))
        return cut_err_set(e, "igemm_tc computes tf32, fp16 and bf16 inputs (dtype %s: fp32 is the CUDA-core "
                              "templates')",
                           cut_dtype_name(c->dtype));
    if (d->sm_major < 8)
        return cut_err_set(e, "igemm_tc needs sm_80 or later (cp.async, ldmatrix, bf16/tf32 mma.sync); the device "
                              "is sm_%d%d",
                           d->sm_major, d->sm_minor);
    if (check_knob_lists(c, s, e) != 0 || check_copies(c, k, e) != 0)
        return -1;
    if (k[CUT_T_WM] > k[CUT_T_BM] || k[CUT_T_WN] > k[CUT_T_BN])
        return cut_err_set(e, "warp tile %dx%d exceeds the block tile %dx%d", k[CUT_T_WM], k[CUT_T_WN], k[CUT_T_BM],
                           k[CUT_T_BN]);
    cut_igemm_tc_geom g;
    cut_igemm_tc_geometry(c, s, &g);
    /* Tiles may overhang the GEMM (zero-filled copies, guarded stores) but not by more than the next power of
     * two (or the smallest tile, so that small problems keep schedules). */
    if (k[CUT_T_BM] > cut_imax(cut_next_pow2(g.gm), 32) || k[CUT_T_BN] > cut_imax(cut_next_pow2(g.gn), 32) ||
        k[CUT_T_BK] > cut_imax(cut_next_pow2(g.gk), is_16bit(c->dtype) ? 32 : 16))
        return cut_err_set(e, "block tile %dx%dx%d far exceeds the GEMM %dx%dx%d (M = N*OH*OW, N = CO, K = "
                              "CI*KH*KW)",
                           k[CUT_T_BM], k[CUT_T_BN], k[CUT_T_BK], g.gm, g.gn, g.gk);
    if (check_split(s, &g, e) != 0)
        return -1;
    return check_resources(s, &g, d, e);
}

const cut_template cut_tpl_igemm_tc = {
    .name = "igemm_tc",
    .nknobs = CUT_T_NKNOBS,
    .knob_names = knob_names,
    .knob_defaults = knob_defaults,
    .applies = applies,
    .sample = sample,
    .mutate = mutate,
    .check = check,
};
