/* cutune — the "gemv" GEMM template's knob space (src/ops/gemm/gemv_codegen.c explains the kernel and what each knob
 * trades): skinny GEMMs, M <= CUT_GEMV_MAX_M, every dtype (inputs widened to fp32, fp32 FMA on CUDA cores: tf32
 * inputs are multiplied exactly, more accurately than tf32 tensor cores would), every layout, batch, alpha/beta.
 *
 * The space excludes what cannot run or cannot help: more warps along K than in the block, a vector width the rows'
 * alignment does not allow, a split-K slice left empty, more than 65535 batch x slices, shared memory (A's slice
 * as fp32, or the reduction over the K warps) over the device's limit, a register estimate over the file, a
 * workspace over CUT_GEMV_MAX_WS, an unrolled iteration over MAX_UNROLLED_FMAS, and a block whose columns or
 * iteration far exceed the GEMM. */
#include "ops/gemm/gemv.h"
#include "ops/gemm/mma.h"

#include "codegen/knobs.h"

#include <stdio.h>
#include <string.h>

static const char *const knob_names[CUT_GV_NKNOBS] = {
    "vec", "lanes", "cols", "warps", "kwarps", "unroll", "splitk", "pipe", "stream",
};

static const int v_vec[] = {1, 2, 4, 8};
static const int v_lanes[] = {4, 8, 16, 32};
static const int v_cols[] = {1, 2, 4};
static const int v_warps[] = {1, 2, 4, 8, 16};
static const int v_kwarps[] = {1, 2, 4, 8, 16};
static const int v_unroll[] = {1, 2, 4, 8};
static const int v_splitk[] = {1, 2, 4, 8, 16, 32, 64};
static const int v_flag[] = {0, 1};

#define PICK(r, v) cut_pick(r, v, (int)CUT_ARRAY_LEN(v))
#define STEP(r, v, cur) cut_step_in(r, v, (int)CUT_ARRAY_LEN(v), cur)

/* Code size of one loop iteration (NVRTC time and instruction cache); 64 loaded elements per lane at M = 16. */
#define MAX_UNROLLED_FMAS 1024
/* The split-K workspace is a static __device__ array, snapshotted and reset around every checked launch. */
#define CUT_GEMV_MAX_WS (16L << 20)
/* Registers beyond accumulators and loads: indices, pointers, loop state; A stored K x M adds its staging loop's
 * index arithmetic (divisions by M); ptxas keeps at most about 64 of A's values ahead in the dot loop. */
#define REGS_OTHER 32
#define REGS_A_TRANS 24
#define REGS_A_AHEAD 64
/* Kept free below the cap of __launch_bounds__(threads, 1). */
#define REGS_MARGIN 16
/* A slice starts on a multiple of this many elements (aligned vectors of A and B in every slice). */
#define KSL_ALIGN 8

const char *cut_gemm_gemv_knob_name(int knob) { return knob >= 0 && knob < CUT_GV_NKNOBS ? knob_names[knob] : "?"; }

static void describe(const cut_sched *s, char *buf, size_t n)
{
    size_t off = (size_t)snprintf(buf, n, "gemv");
    for (int i = 0; i < CUT_GV_NKNOBS && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, " %s=%d", knob_names[i], s->k[i]);
}

static int elem_bytes(cut_dtype d) { return d == CUT_DT_FP16 || d == CUT_DT_BF16 ? 2 : 4; }

int cut_gemm_gemv_max_vec(const cut_gemm *g)
{
    const int row = cut_gemm_b_trans(g) ? g->k : g->n, e = elem_bytes(g->dtype);
    for (int v = 16 / e; v > 1; v /= 2)
        if (row % v == 0)
            return v;
    return 1;
}

/* Elements per load of A while it is staged: A stored M x K loads along its rows (K divisible by it); A stored K x M
 * loads the slice's contiguous run of rows (M*K divisible by it; a slice starts on a multiple of 8 rows). */
static int a_vec(const cut_gemm *g)
{
    const long run = cut_gemm_a_trans(g) ? (long)g->m * g->k : g->k;
    for (int v = 16 / elem_bytes(g->dtype); v > 1; v /= 2)
        if (run % v == 0)
            return v;
    return 1;
}

void cut_gemm_gemv_geometry(const cut_gemm *g, const cut_sched *s, cut_gemm_gemv_geom *out)
{
    const int *k = s->k;
    const int vec = cut_clampi(k[CUT_GV_VEC], 1, 8), lanes = cut_clampi(k[CUT_GV_LANES], 1, 32);
    const int cols = cut_clampi(k[CUT_GV_COLS], 1, 16), warps = cut_clampi(k[CUT_GV_WARPS], 1, 32);
    const int kwarps = cut_clampi(k[CUT_GV_KWARPS], 1, warps), unroll = cut_clampi(k[CUT_GV_UNROLL], 1, 64);
    const int splitk = cut_clampi(k[CUT_GV_SPLITK], 1, 1024), pipe = cut_clampi(k[CUT_GV_PIPE], 0, 1);
    const int m = cut_clampi(g->m, 1, 1024), kk = cut_imax(g->k, 1), batch = cut_gemm_batch(g);
    memset(out, 0, sizeof *out);
    out->dot = cut_gemm_b_trans(g);
    out->elem = elem_bytes(g->dtype);
    out->groups = cut_imax(32 / lanes, 1);
    out->wn = cut_imax(warps / kwarps, 1);
    out->threads = 32 * warps;
    out->bn = out->dot ? out->wn * out->groups * cols : out->wn * lanes * vec * cols;
    out->kstep = out->dot ? kwarps * lanes * vec : kwarps * out->groups;
    out->kiter = out->kstep * unroll;
    out->ksl = cut_ceil_div(cut_ceil_div(kk, splitk), KSL_ALIGN) * KSL_ALIGN;
    out->mp = m <= 2 ? m : cut_ceil_div(m, 4) * 4;
    out->av = a_vec(g);
    out->tiles_n = cut_ceil_div(cut_imax(g->n, 1), out->bn);
    out->smem_a = 4L * (out->dot ? (long)m * out->ksl : (long)out->mp * out->ksl);
    out->smem_red = 4L * kwarps * m * out->bn;
    const long smem = out->smem_a > out->smem_red ? out->smem_a : out->smem_red;
    out->smem_bytes = (int)(smem < (1L << 30) ? smem : 1L << 30);
    const double ws = 4.0 * splitk * batch * out->tiles_n * m * out->bn; /* in double: an invalid batch is huge */
    out->ws_bytes = splitk > 1 ? (ws < 4e18 ? (long)ws : (long)4e18) : 0;
    /* accumulators (dot: one per row and column; else a vector per row and column) + the loaded words of one
     * iteration (twice with PIPE) + their fp32 values + A's values (dot: VEC per row, which ptxas loads ahead; else
     * one per row) + pointers + the rest. Checked against ptxas on 1,100 random sm_90 compiles, none spilling: 300 of
     * them with 512 threads, where __launch_bounds__ caps registers at 128 and estimates up to 112 (the margin's
     * limit) fit; with registers to spare ptxas takes up to 1.7x the estimate for scheduling (tests/test_gemm_gemv.c
     * prints the range). */
    const int acc = out->dot ? m * cols : m * cols * vec;
    const int words = unroll * cols * cut_imax(vec * out->elem / 4, 1);
    out->regs_est = acc + (1 + pipe) * words + cols * vec + (out->dot ? CUT_MIN(m * vec, REGS_A_AHEAD) : out->mp) +
                    2 * cols + REGS_OTHER + (cut_gemm_a_trans(g) ? REGS_A_TRANS : 0);
    out->unrolled_fmas = unroll * cols * vec * m;
    out->grid[0] = (unsigned)out->tiles_n;
    out->grid[1] = 1;
    out->grid[2] = (unsigned)CUT_MIN((long)batch * splitk, 0xFFFFFFFFL);
}

/* The smallest SPLITK of the list whose slice of A fits the shared memory of d, and the largest that leaves no
 * slice empty; lo > hi when none does. */
static void splitk_range(const cut_gemm *g, const cut_devlimits *d, int *lo, int *hi)
{
    const int limit = d ? cut_gemm_mma_smem_limit(d) : 227 * 1024, mp = g->m <= 2 ? g->m : cut_ceil_div(g->m, 4) * 4;
    *lo = (int)CUT_ARRAY_LEN(v_splitk);
    *hi = -1;
    for (int i = 0; i < (int)CUT_ARRAY_LEN(v_splitk); i++) {
        const int ksl = cut_ceil_div(cut_ceil_div(g->k, v_splitk[i]), KSL_ALIGN) * KSL_ALIGN;
        if (*lo > i && 4L * mp * ksl <= limit)
            *lo = i;
        if ((long)(v_splitk[i] - 1) * ksl < g->k)
            *hi = i;
    }
}

static void sample(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    int *k = s->k;
    s->tpl = CUT_GEMM_TPL_GEMV;
    const int max = cut_gemm_gemv_max_vec(g);
    if (cut_rng_below(r, 4) != 0)
        k[CUT_GV_VEC] = max; /* mostly the widest load the alignment allows */
    else
        do
            k[CUT_GV_VEC] = PICK(r, v_vec);
        while (k[CUT_GV_VEC] > max);
    k[CUT_GV_LANES] = PICK(r, v_lanes);
    k[CUT_GV_COLS] = PICK(r, v_cols);
    k[CUT_GV_WARPS] = PICK(r, v_warps);
    do
        k[CUT_GV_KWARPS] = PICK(r, v_kwarps);
    while (k[CUT_GV_KWARPS] > k[CUT_GV_WARPS]);
    k[CUT_GV_UNROLL] = PICK(r, v_unroll);
    int lo, hi;
    splitk_range(g, d, &lo, &hi);
    k[CUT_GV_SPLITK] = lo <= hi ? v_splitk[lo + (int)cut_rng_below(r, (uint32_t)(hi - lo + 1))] : PICK(r, v_splitk);
    k[CUT_GV_PIPE] = PICK(r, v_flag);
    k[CUT_GV_STREAM] = PICK(r, v_flag);
}

static void mutate(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    (void)d;
    int *k = s->k;
    const int which = (int)cut_rng_below(r, CUT_GV_NKNOBS);
    switch (which) {
    case CUT_GV_VEC: k[which] = STEP(r, v_vec, k[which]); break;
    case CUT_GV_LANES: k[which] = STEP(r, v_lanes, k[which]); break;
    case CUT_GV_COLS: k[which] = STEP(r, v_cols, k[which]); break;
    case CUT_GV_WARPS: k[which] = STEP(r, v_warps, k[which]); break;
    case CUT_GV_KWARPS: k[which] = STEP(r, v_kwarps, k[which]); break;
    case CUT_GV_UNROLL: k[which] = STEP(r, v_unroll, k[which]); break;
    case CUT_GV_SPLITK: k[which] = STEP(r, v_splitk, k[which]); break;
    default: k[which] = !k[which]; break; /* pipe, stream */
    }
    /* keep the schedule within the alignment and the block */
    if (k[CUT_GV_VEC] > cut_gemm_gemv_max_vec(g))
        k[CUT_GV_VEC] = cut_gemm_gemv_max_vec(g);
    if (k[CUT_GV_KWARPS] > k[CUT_GV_WARPS] && which == CUT_GV_KWARPS)
        k[CUT_GV_WARPS] = k[CUT_GV_KWARPS]; /* more warps along K: a block that holds them */
    else if (k[CUT_GV_KWARPS] > k[CUT_GV_WARPS])
        k[CUT_GV_KWARPS] = k[CUT_GV_WARPS]; /* fewer warps: all of them along K at most */
}

static int applies(const cut_gemm *g, const cut_devlimits *d, cut_err *why)
{
    (void)d;
    if (g->dtype < 0 || g->dtype >= CUT_DT_COUNT)
        return cut_err_set(why, "unknown GEMM dtype %d", (int)g->dtype), 0;
    if (g->m > CUT_GEMV_MAX_M)
        return cut_err_set(why, "the gemv template computes M <= %d only (M=%d: past that CUDA cores cannot keep up "
                                "with the memory, the tensor-core templates are the tool)",
                           CUT_GEMV_MAX_M, g->m),
               0;
    return 1;
}

static int check_knob_lists(const cut_sched *s, cut_err *e)
{
    const int *k = s->k;
    if (CUT_IN(v_vec, k[CUT_GV_VEC]) && CUT_IN(v_lanes, k[CUT_GV_LANES]) && CUT_IN(v_cols, k[CUT_GV_COLS]) &&
        CUT_IN(v_warps, k[CUT_GV_WARPS]) && CUT_IN(v_kwarps, k[CUT_GV_KWARPS]) && CUT_IN(v_unroll, k[CUT_GV_UNROLL]) &&
        CUT_IN(v_splitk, k[CUT_GV_SPLITK]) && CUT_IN(v_flag, k[CUT_GV_PIPE]) && CUT_IN(v_flag, k[CUT_GV_STREAM]))
        return 0;
    char desc[256];
    describe(s, desc, sizeof desc);
    return cut_err_set(e, "a knob is not one of its allowed values (%s)", desc);
}

int cut_gemm_gemv_check_shape(const cut_gemm *g, const cut_sched *s, cut_err *e)
{
    const int *k = s->k;
    if (!applies(g, NULL, e))
        return -1;
    if (g->m <= 0 || g->n <= 0 || g->k <= 0)
        return cut_err_set(e, "GEMM sizes must be positive (M=%d N=%d K=%d)", g->m, g->n, g->k);
    if (cut_gemm_validate(g, e) != 0) /* layout, batch, alpha, beta, operands under 2^31 elements */
        return -1;
    if (check_knob_lists(s, e) != 0)
        return -1;
    if (k[CUT_GV_KWARPS] > k[CUT_GV_WARPS])
        return cut_err_set(e, "kwarps=%d exceeds the block's warps=%d", k[CUT_GV_KWARPS], k[CUT_GV_WARPS]);
    const int max = cut_gemm_gemv_max_vec(g), bt = cut_gemm_b_trans(g);
    if (k[CUT_GV_VEC] > max)
        return cut_err_set(e, "vec=%d loads %d bytes of B's rows, which need %s=%d divisible by %d (the most here "
                              "is %d)",
                           k[CUT_GV_VEC], k[CUT_GV_VEC] * elem_bytes(g->dtype), bt ? "K" : "N", bt ? g->k : g->n,
                           k[CUT_GV_VEC], max);
    cut_gemm_gemv_geom gm;
    cut_gemm_gemv_geometry(g, s, &gm);
    if ((long)(k[CUT_GV_SPLITK] - 1) * gm.ksl >= g->k)
        return cut_err_set(e, "splitk=%d leaves its last slice of K=%d empty (slices of %d, a multiple of %d)",
                           k[CUT_GV_SPLITK], g->k, gm.ksl, KSL_ALIGN);
    if ((long)cut_gemm_batch(g) * k[CUT_GV_SPLITK] > 65535)
        return cut_err_set(e, "batch %d x splitk %d blocks along z exceed the grid's 65535", cut_gemm_batch(g),
                           k[CUT_GV_SPLITK]);
    return 0;
}

static int check(const cut_gemm *g, const cut_sched *s, const cut_devlimits *d, cut_err *e)
{
    if (cut_gemm_gemv_check_shape(g, s, e) != 0)
        return -1;
    const int *k = s->k;
    cut_gemm_gemv_geom gm;
    cut_gemm_gemv_geometry(g, s, &gm);
    if (gm.threads > d->max_threads_per_block)
        return cut_err_set(e, "%d threads per block exceed %d", gm.threads, d->max_threads_per_block);
    const int limit = cut_gemm_mma_smem_limit(d);
    if (gm.smem_bytes > limit)
        return cut_err_set(e, "%d bytes of shared memory (A's slice: M %d x %d k x 4 bytes; the reduction: kwarps %d "
                              "x M x %d columns x 4 bytes) exceed the %d-byte limit: split K further",
                           gm.smem_bytes, g->m, gm.ksl, k[CUT_GV_KWARPS], gm.bn, limit);
    int cap = d->max_regs_per_block / gm.threads / 8 * 8;
    cap = cap < d->max_regs_per_thread ? cap : d->max_regs_per_thread;
    if (gm.regs_est + REGS_MARGIN > cap)
        return cut_err_set(e, "about %d registers per thread (M %d x cols %d%s accumulators) x %d threads exceed the "
                              "register file (%d per thread at most, with a margin of %d)",
                           gm.regs_est, g->m, k[CUT_GV_COLS], gm.dot ? "" : " x vec", gm.threads, cap, REGS_MARGIN);
    if (gm.ws_bytes > CUT_GEMV_MAX_WS)
        return cut_err_set(e, "splitk=%d needs a %ld-byte workspace (limit %ld)", k[CUT_GV_SPLITK], gm.ws_bytes,
                           CUT_GEMV_MAX_WS);
    if (gm.unrolled_fmas > MAX_UNROLLED_FMAS)
        return cut_err_set(e, "an unrolled iteration of %d FMAs (unroll %d x cols %d x vec %d x M %d) exceeds %d",
                           gm.unrolled_fmas, k[CUT_GV_UNROLL], k[CUT_GV_COLS], k[CUT_GV_VEC], g->m,
                           MAX_UNROLLED_FMAS);
    /* A block may overhang the GEMM (loads are clamped or guarded, stores guarded) but not by more than the next
     * power of two (or 32, so that small problems keep some schedules). */
    if (gm.bn > cut_imax(cut_next_pow2(g->n), 32))
        return cut_err_set(e, "a block's %d columns far exceed N=%d", gm.bn, g->n);
    if (gm.kiter > cut_imax(cut_next_pow2(gm.ksl), 32))
        return cut_err_set(e, "one iteration of the block covers %d of K, far more than its slice of %d", gm.kiter,
                           gm.ksl);
    return 0;
}

static void geometry(const cut_gemm *g, const cut_sched *s, cut_gemm_geom *out)
{
    cut_gemm_gemv_geom vg;
    cut_gemm_gemv_geometry(g, s, &vg);
    *out = (cut_gemm_geom){
        .bm = cut_clampi(g->m, 1, 1024), .bn = vg.bn, .bk = vg.kiter, .threads = vg.threads,
        .stages = 1 + cut_clampi(s->k[CUT_GV_PIPE], 0, 1), .smem_bytes = vg.smem_bytes, .regs_est = vg.regs_est,
        .elem_bytes = vg.elem, .tensor_cores = 0,
    };
    memcpy(out->grid, vg.grid, sizeof out->grid);
}

const cut_gemm_template cut_gemm_tpl_gemv = {
    .name = "gemv",
    .nknobs = CUT_GV_NKNOBS,
    .knob_name = cut_gemm_gemv_knob_name,
    .applies = applies,
    .sample = sample,
    .mutate = mutate,
    .check = check,
    .geometry = geometry,
    .codegen = cut_codegen_gemm_gemv,
};
