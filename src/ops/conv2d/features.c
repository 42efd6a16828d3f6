/* cutune — the conv templates' feature vectors for the cost model.
 *
 * What a GPU cares about, computed from the knobs the way the generated kernels (codegen/direct.c, codegen/igemm.c,
 * codegen/winograd.c) use them:
 * parallelism (threads, blocks, waves, occupancy), reuse (outputs per thread, arithmetic intensity of a block tile,
 * loads per FMA), memory access shape (32-byte sectors per warp request, shared-memory bank conflicts), code shape
 * (unrolled body, vector width), waste (tile overhang, reduction tail, last-wave tail) and the algorithm (the
 * multiplications Winograd saves, and what its transforms cost). */
#include "strategy/features.h"
#include "cutune/space.h"
#include "ops/conv2d/templates.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    F_ONEHOT = 0, /* CUT_FEAT_NTPL slots */
    /* workload */
    F_LOG_N = CUT_FEAT_NTPL, F_LOG_OHW, F_LOG_CO, F_LOG_CI, F_LOG_KHW, F_STRIDE,
    /* parallelism and work */
    F_LOG_THREADS, F_LOG_ACC, F_LOG_BLOCK_OUT, F_LOG_FMA_THREAD, F_LOG_FMA_BLOCK, F_LOG_BLOCKS,
    /* resources and occupancy */
    F_SMEM_KB, F_REGS, F_REGS_CAPPED, F_BLOCKS_PER_SM, F_OCCUPANCY, F_LIMITER,
    F_WAVES, F_LOG_WAVES, F_TAIL, F_SM_USE, F_LOG_ACTIVE_WARPS,
    /* reuse */
    F_LOG_INTENSITY, F_LOADS_PER_FMA, F_GLOBAL_LOADS_PER_FMA, F_STAGE_PER_FMA, F_LOG_FMA_PER_SYNC,
    /* code shape */
    F_LOG_BODY, F_LOG_UNROLLED_TRIPS, F_VEC, F_LOG_RED_STEPS,
    /* waste */
    F_TILE_EFF, F_RED_EFF,
    /* access shape: sectors per warp request, bank-conflict degree */
    F_IN_SECTORS, F_W_SECTORS, F_OUT_SECTORS, F_STAGE_IN_SECTORS, F_STAGE_W_SECTORS, F_SMEM_IN_CONFLICT,
    F_SMEM_W_CONFLICT, F_LOG_WARP_SMEM_READS,
    /* template knobs, log2 (unroll: log2(1 + u)) */
    F_KNOB0,
    /* algorithm: direct multiplications per multiplication done (1; Winograd F(2x2) 2.25, F(4x4) 4), and the
     * transform operations (loads, flops, stores of the input/filter/output transforms) per GEMM FMA */
    F_MUL_SAVING = F_KNOB0 + CUT_MAX_KNOBS, F_XFORM_PER_FMA,
    /* the workload's types (issue 20): bytes per input element, tensor cores, tf32 / bf16 (fp16 is neither),
     * NHWC, the fused epilogue (0 none, 1 bias, 2 bias and ReLU); and the tensor-core template's own quantities:
     * split-K slices (log2), copies per thread per k tile (cp.async pieces and gathered elements), the gathered
     * ones among them, k tiles per block (log2) */
    F_ELEM_BYTES, F_TENSOR_CORE, F_TF32, F_BF16, F_NHWC, F_EPILOGUE,
    F_LOG_SPLITK, F_COPIES_PER_THREAD, F_GATHERED_PER_THREAD, F_LOG_KTILES_BLOCK,
    F_END
};

_Static_assert(F_END <= CUT_FEAT_LEN, "feature layout exceeds CUT_FEAT_LEN");

static const char *const names[CUT_FEAT_LEN] = {
    [F_LOG_N] = "log2_n", [F_LOG_OHW] = "log2_ohw", [F_LOG_CO] = "log2_co", [F_LOG_CI] = "log2_ci",
    [F_LOG_KHW] = "log2_khw", [F_STRIDE] = "stride",
    [F_LOG_THREADS] = "log2_threads", [F_LOG_ACC] = "log2_outputs_per_thread",
    [F_LOG_BLOCK_OUT] = "log2_outputs_per_block", [F_LOG_FMA_THREAD] = "log2_fma_per_thread",
    [F_LOG_FMA_BLOCK] = "log2_fma_per_block", [F_LOG_BLOCKS] = "log2_blocks",
    [F_SMEM_KB] = "smem_kib", [F_REGS] = "regs", [F_REGS_CAPPED] = "regs_at_launch_bound",
    [F_BLOCKS_PER_SM] = "blocks_per_sm", [F_OCCUPANCY] = "occupancy", [F_LIMITER] = "occupancy_limiter",
    [F_WAVES] = "waves", [F_LOG_WAVES] = "log2_waves", [F_TAIL] = "tail_waste", [F_SM_USE] = "sm_use",
    [F_LOG_ACTIVE_WARPS] = "log2_active_warps_per_sm",
    [F_LOG_INTENSITY] = "log2_block_intensity", [F_LOADS_PER_FMA] = "loads_per_fma",
    [F_GLOBAL_LOADS_PER_FMA] = "global_loads_per_fma", [F_STAGE_PER_FMA] = "staged_per_fma",
    [F_LOG_FMA_PER_SYNC] = "log2_fma_per_sync",
    [F_LOG_BODY] = "log2_unrolled_body", [F_LOG_UNROLLED_TRIPS] = "log2_unrolled_trips", [F_VEC] = "vec",
    [F_LOG_RED_STEPS] = "log2_reduction_steps",
    [F_TILE_EFF] = "tile_efficiency", [F_RED_EFF] = "reduction_efficiency",
    [F_IN_SECTORS] = "in_sectors_per_warp", [F_W_SECTORS] = "w_sectors_per_warp",
    [F_OUT_SECTORS] = "out_sectors_per_warp", [F_STAGE_IN_SECTORS] = "stage_in_sectors_per_warp",
    [F_STAGE_W_SECTORS] = "stage_w_sectors_per_warp", [F_SMEM_IN_CONFLICT] = "smem_in_bank_conflict",
    [F_SMEM_W_CONFLICT] = "smem_w_bank_conflict", [F_LOG_WARP_SMEM_READS] = "log2_warp_smem_floats_per_step",
    [F_MUL_SAVING] = "mul_saving", [F_XFORM_PER_FMA] = "transform_ops_per_fma",
    [F_ELEM_BYTES] = "input_elem_bytes", [F_TENSOR_CORE] = "tensor_core", [F_TF32] = "dtype_tf32",
    [F_BF16] = "dtype_bf16", [F_NHWC] = "layout_nhwc", [F_EPILOGUE] = "epilogue",
    [F_LOG_SPLITK] = "log2_splitk", [F_COPIES_PER_THREAD] = "copies_per_thread_per_ktile",
    [F_GATHERED_PER_THREAD] = "gathered_per_thread_per_ktile", [F_LOG_KTILES_BLOCK] = "log2_ktiles_per_block",
};

const char *cut_features_name(int i)
{
    static char buf[CUT_FEAT_NTPL + CUT_MAX_KNOBS][40];
    if (i < 0 || i >= CUT_FEAT_LEN)
        return "";
    if (i < CUT_FEAT_NTPL) {
        const cut_template *t = cut_template_get(i);
        if (!t)
            return "";
        if (!buf[i][0])
            snprintf(buf[i], sizeof buf[i], "onehot_%s", t->name);
        return buf[i];
    }
    if (i >= F_KNOB0 && i < F_KNOB0 + CUT_MAX_KNOBS) { /* knob k of whichever template the one-hot names */
        char *b = buf[CUT_FEAT_NTPL + i - F_KNOB0];
        if (!b[0])
            snprintf(b, sizeof buf[0], "knob%d", i - F_KNOB0);
        return b;
    }
    return names[i] ? names[i] : "";
}

static float lg(double x) { return x > 0 ? (float)log2(x) : 0.0f; }

/* Distinct 32-byte sectors among n (<= 128) float addresses (element offsets). */
static int sectors(const long *addr, int n)
{
    long seen[128];
    int ns = 0;
    for (int i = 0; i < n; i++) {
        long s = addr[i] >= 0 ? addr[i] / 8 : (addr[i] - 7) / 8;
        int dup = 0;
        for (int j = 0; j < ns && !dup; j++)
            dup = seen[j] == s;
        if (!dup && ns < 128)
            seen[ns++] = s;
    }
    return ns;
}

/* Worst number of distinct addresses falling in one of 32 four-byte banks (1 = conflict-free). */
static int bank_conflict(const long *addr, int n)
{
    int worst = 0;
    for (int b = 0; b < 32; b++) {
        long seen[32];
        int ns = 0;
        for (int i = 0; i < n; i++) {
            if (((addr[i] % 32) + 32) % 32 != b)
                continue;
            int dup = 0;
            for (int j = 0; j < ns && !dup; j++)
                dup = seen[j] == addr[i];
            if (!dup)
                seen[ns++] = addr[i];
        }
        if (ns > worst)
            worst = ns;
    }
    return worst ? worst : 1;
}

/* Distinct values among n. */
static int distinct(const long *v, int n)
{
    int d = 0;
    for (int i = 0; i < n; i++) {
        int dup = 0;
        for (int j = 0; j < i && !dup; j++)
            dup = v[j] == v[i];
        d += !dup;
    }
    return d;
}

/* Resource use and what follows: registers (capped as __launch_bounds__(threads) caps them), occupancy, waves. */
static void resources(float *f, const cut_devlimits *d, int threads, int regs, int smem_bytes, double blocks)
{
    /* __launch_bounds__(threads) caps registers at the register file / threads (multiples of 8), and at 255 */
    int cap = d->max_regs_per_block / (threads > 0 ? threads : 1) / 8 * 8;
    if (cap > d->max_regs_per_thread)
        cap = d->max_regs_per_thread;
    int r = regs;
    int capped = r >= cap;
    if (r > cap)
        r = cap;
    f[F_SMEM_KB] = (float)smem_bytes / 1024.0f;
    f[F_REGS] = (float)r;
    f[F_REGS_CAPPED] = (float)capped;

    int lim = 0;
    int bps = cut_features_blocks_per_sm_lim(d, threads, r, smem_bytes, &lim);
    if (bps < 1)
        bps = 1;
    sm_caps sc = cut_features_sm_caps(d);
    f[F_BLOCKS_PER_SM] = (float)bps;
    f[F_OCCUPANCY] = (float)(bps * threads) / (float)sc.threads;
    f[F_LIMITER] = (float)lim;
    int sms = d->sm_count > 0 ? d->sm_count : 1;
    if (blocks < 1)
        blocks = 1;
    double waves = blocks / ((double)sms * bps);
    double full = ceil(waves);
    f[F_WAVES] = (float)waves;
    f[F_LOG_WAVES] = (float)log2(waves);
    f[F_TAIL] = (float)((full - waves) / full);
    f[F_SM_USE] = (float)(blocks >= sms ? 1.0 : blocks / sms);
    double resident = CUT_MIN((double)bps, ceil(blocks / sms));
    f[F_LOG_ACTIVE_WARPS] = lg(resident * threads / 32.0);
}

/* Registers per thread when the compiler's count is unknown, fitted by hand to 6,639 sm_90 compiles of the seed-001
 * cases (bench/results): median relative error 15% (the template's own estimate, acc + rco + 24, which is meant
 * as a validity bound, is 37% off, mostly low). Capped by the launch bound in resources(). */
static int regs_guess(const cut_direct_geom *g, int smem)
{
    return 40 + (int)(1.6 * g->acc) + 8 * smem;
}

static void direct_features(const cut_conv *c, const cut_sched *s, const cut_devlimits *d, int regs, float *f)
{
    const int *k = s->k;
    cut_direct_geom g;
    cut_direct_geometry(c, s, &g);
    const int toh = k[CUT_D_TOH], tow = k[CUT_D_TOW];
    const int rco = k[CUT_D_RCO], roh = k[CUT_D_ROH], row = k[CUT_D_ROW];
    const int rc = k[CUT_D_RC], rkh = k[CUT_D_RKH], smem = k[CUT_D_SMEM] != 0, vec = k[CUT_D_VEC];
    const int S = c->stride;
    const double red = (double)c->ci * c->kh * c->kw; /* FMAs per output */

    f[F_LOG_THREADS] = lg(g.threads);
    f[F_LOG_ACC] = lg(g.acc);
    f[F_LOG_BLOCK_OUT] = lg((double)g.bco * g.boh * g.bow);
    f[F_LOG_FMA_THREAD] = lg(g.acc * red);
    f[F_LOG_FMA_BLOCK] = lg((double)g.bco * g.boh * g.bow * red);
    double blocks = (double)g.grid[0] * g.grid[1] * g.grid[2];
    f[F_LOG_BLOCKS] = lg(blocks);

    resources(f, d, g.threads, regs > 0 ? regs : regs_guess(&g, smem), g.smem_bytes, blocks);

    /* one reduction step of a block: RC channels x RKH rows x KW columns */
    double step_fma = (double)g.bco * g.boh * g.bow * rc * rkh * c->kw;
    double step_in = (double)rc * g.iht * g.iwt, step_w = (double)g.bco * rc * rkh * c->kw;
    f[F_LOG_INTENSITY] = lg(2.0 * step_fma / (4.0 * (step_in + step_w)));
    double thread_loads = (double)(rco + roh * row) / g.acc; /* per FMA, from registers' point of view */
    f[F_LOADS_PER_FMA] = (float)thread_loads;
    f[F_GLOBAL_LOADS_PER_FMA] = (float)(smem ? (step_in + step_w) / step_fma : thread_loads);
    f[F_STAGE_PER_FMA] = (float)(smem ? (step_in + step_w) / step_fma * g.bco * g.boh * g.bow / g.acc : 0.0);
    f[F_LOG_FMA_PER_SYNC] = smem ? lg((double)g.acc * rc * rkh * c->kw) : 0.0f;

    f[F_LOG_BODY] = lg((double)g.unrolled_trips * g.acc);
    f[F_LOG_UNROLLED_TRIPS] = lg(g.unrolled_trips);
    f[F_VEC] = (float)vec;
    f[F_LOG_RED_STEPS] = lg((double)CUT_CEIL_DIV(c->ci, rc) * (c->kh / rkh));

    double tiles_w = CUT_CEIL_DIV(g.ow, g.bow), tiles_h = CUT_CEIL_DIV(g.oh, g.boh);
    double computed = (double)g.grid[1] * g.bco * tiles_h * g.boh * tiles_w * g.bow;
    f[F_TILE_EFF] = (float)((double)c->co * g.oh * g.ow / computed);
    f[F_RED_EFF] = (float)((double)c->ci / (CUT_CEIL_DIV(c->ci, rc) * rc));

    /* The first warp's addresses for one instruction of each access (interior tile, bounds ignored). */
    int nw = CUT_MIN(32, g.threads);
    long a_in[32], a_w[32], a_out[128], a_sin[32], a_sw[32], a_rin[32], a_rw[32];
    int nout = 0;
    for (int t = 0; t < nw; t++) {
        int tx = t % tow, ty = (t / tow) % toh, tz = t / (tow * toh);
        int lh = ty, lw = tx * vec;
        a_in[t] = (long)lh * S * c->w + (long)lw * S;
        a_w[t] = (long)tz * rco * c->ci * c->kh * c->kw;
        long o = ((long)tz * rco * g.oh + ty) * g.ow + (long)tx * vec;
        for (int v = 0; v < vec && nout < 128; v++)
            a_out[nout++] = o + v;
        /* staging loops: idx = tid */
        int ci = t / (g.iht * g.iwt), rr = (t / g.iwt) % g.iht, q = t % g.iwt;
        a_sin[t] = ((long)ci * c->h + rr) * c->w + q;
        int co = t / (rc * rkh * c->kw), cc = (t / (rkh * c->kw)) % rc, r2 = (t / c->kw) % rkh, q2 = t % c->kw;
        a_sw[t] = (((long)co * c->ci + cc) * c->kh + r2) * c->kw + q2;
        /* shared-memory reads in the FMA loop */
        a_rin[t] = (long)lh * S * g.iwt + (long)lw * S;
        a_rw[t] = (long)tz * rco * rc * rkh * c->kw;
    }
    f[F_IN_SECTORS] = smem ? 0.0f : (float)sectors(a_in, nw);
    f[F_W_SECTORS] = smem ? 0.0f : (float)sectors(a_w, nw);
    f[F_OUT_SECTORS] = (float)sectors(a_out, nout);
    f[F_STAGE_IN_SECTORS] = smem ? (float)sectors(a_sin, nw) : 0.0f;
    f[F_STAGE_W_SECTORS] = smem ? (float)sectors(a_sw, nw) : 0.0f;
    f[F_SMEM_IN_CONFLICT] = smem ? (float)bank_conflict(a_rin, nw) : 0.0f;
    f[F_SMEM_W_CONFLICT] = smem ? (float)bank_conflict(a_rw, nw) : 0.0f;
    f[F_LOG_WARP_SMEM_READS] = smem ? lg(distinct(a_rin, nw) + distinct(a_rw, nw)) : 0.0f;

    for (int i = 0; i < CUT_D_NKNOBS; i++)
        f[F_KNOB0 + i] = i == CUT_D_UNROLL ? lg(1.0 + k[i]) : i == CUT_D_SMEM ? (float)smem : lg(k[i]);
}

/* Implicit GEMM (space/igemm.c, codegen/igemm.c): M = CO, N = batch*OH*OW, K = CI*KH*KW in BM x BN x BK tiles. */
/* The work and resources of a GEMM-like block (the implicit GEMMs): threads, accumulators per thread, a block
 * tile of block_out outputs over kblock of K, blocks in the grid, then occupancy and waves (resources). */
static void gemm_block_features(float *f, const cut_devlimits *d, int threads, int acc, double block_out,
                                double kblock, double blocks, int regs, int smem_bytes)
{
    f[F_LOG_THREADS] = lg(threads);
    f[F_LOG_ACC] = lg(acc);
    f[F_LOG_BLOCK_OUT] = lg(block_out);
    f[F_LOG_FMA_THREAD] = lg(acc * kblock);
    f[F_LOG_FMA_BLOCK] = lg(block_out * kblock);
    f[F_LOG_BLOCKS] = lg(blocks);
    resources(f, d, threads, regs, smem_bytes, blocks);
}

static void igemm_features(const cut_conv *c, const cut_sched *s, const cut_devlimits *d, int regs, float *f)
{
    const int *k = s->k;
    cut_igemm_geom g;
    cut_igemm_geometry(c, s, &g);
    const int bm = k[CUT_G_BM], bn = k[CUT_G_BN], bk = k[CUT_G_BK], tm = k[CUT_G_TM], tn = k[CUT_G_TN];
    const int wlm = k[CUT_G_WLM], stages = k[CUT_G_STAGES];
    const int threads = g.threads > 0 ? g.threads : 1, acc = g.acc > 0 ? g.acc : 1;
    const double kblock = (double)g.kps * bk; /* K handled by one block (one split-K slice) */

    double blocks = (double)g.grid[0] * g.grid[1] * g.grid[2];
    gemm_block_features(f, d, threads, acc, (double)bm * bn, kblock, blocks, regs > 0 ? regs : g.regs_est,
                        g.smem_bytes);

    /* one BK step: BM x BN x BK FMAs from (BM + BN) x BK staged floats */
    f[F_LOG_INTENSITY] = lg(2.0 * bm * bn / (4.0 * (bm + bn)));
    f[F_LOADS_PER_FMA] = (float)((double)(tm + tn) / acc);
    f[F_GLOBAL_LOADS_PER_FMA] = (float)((double)(bm + bn) / ((double)bm * bn));
    f[F_STAGE_PER_FMA] = (float)((double)(bm + bn) / ((double)threads * acc));
    f[F_LOG_FMA_PER_SYNC] = lg((double)acc * bk / (stages == 2 ? 1 : 2));

    f[F_LOG_BODY] = lg(g.unrolled_fmas);
    f[F_LOG_UNROLLED_TRIPS] = lg(CUT_MIN(k[CUT_G_UNROLL], bk));
    f[F_VEC] = (float)k[CUT_G_VA];
    f[F_LOG_RED_STEPS] = lg(g.kps);

    double computed = (double)g.grid[1] * bm * g.grid[0] * bn;
    f[F_TILE_EFF] = (float)((double)g.gm * g.gn / computed);
    f[F_RED_EFF] = (float)((double)g.gk / ((double)g.ktiles * bk));

    /* B gather of the first warp: thread t loads column t % min(threads, BN) of row t / min(threads, BN) */
    int nw = CUT_MIN(32, threads), tbn = CUT_MIN(threads, bn);
    long a_b[32];
    for (int t = 0; t < nw; t++) {
        int col = t % tbn, row = t / tbn;
        int ci = row / (c->kh * c->kw), kh = (row / c->kw) % c->kh, kw = row % c->kw;
        int nn = col % (g.gn > 0 ? g.gn : 1), oh = nn / g.ow, ow = nn % g.ow;
        a_b[t] = ((long)ci * c->h + (long)oh * c->stride + kh) * c->w + (long)ow * c->stride + kw;
    }
    f[F_STAGE_IN_SECTORS] = (float)sectors(a_b, nw);
    /* epilogue: WLM rows of (32 / WLM) lanes x min(TN, 4) consecutive outputs */
    int span = (32 / wlm) * CUT_MIN(tn, 4);
    f[F_OUT_SECTORS] = (float)(wlm * CUT_CEIL_DIV(span, 8));
    /* per k step a warp reads WLM*TM floats of As and (32/WLM)*TN of Bs */
    f[F_LOG_WARP_SMEM_READS] = lg((double)wlm * tm + (32.0 / wlm) * tn);

    for (int i = 0; i < CUT_G_NKNOBS && i < CUT_MAX_KNOBS; i++)
        f[F_KNOB0 + i] = lg(1.0 + k[i]);
}

/* The tensor-core implicit GEMM (igemm_tc_space.c): the mma GEMM's tile quantities over the convolution's GEMM,
 * its waves over the SMs with split-K's slices, shared memory (ring and row table), copies per thread. */
static void igemm_tc_features(const cut_conv *c, const cut_sched *s, const cut_devlimits *d, int regs, float *f)
{
    const int *k = s->k;
    cut_igemm_tc_geom g;
    cut_igemm_tc_geometry(c, s, &g);
    const int bm = k[CUT_T_BM], bn = k[CUT_T_BN], bk = k[CUT_T_BK];
    const int threads = g.threads > 0 ? g.threads : 1, acc = g.acc > 0 ? g.acc : 1;
    const double kblock = (double)g.kps * bk; /* K of one block (one split-K slice) */
    const double blocks = (double)g.grid[0] * g.grid[1] * g.grid[2];
    gemm_block_features(f, d, threads, acc, (double)bm * bn, kblock, blocks, regs > 0 ? regs : g.regs_est,
                        g.smem_bytes);
    /* one k tile: BM x BN x BK MACs from (BM + BN) x BK staged elements */
    f[F_LOG_INTENSITY] = lg(2.0 * bm * bn / ((double)g.elem * (bm + bn)));
    f[F_GLOBAL_LOADS_PER_FMA] = (float)((double)(bm + bn) / ((double)bm * bn));
    f[F_STAGE_PER_FMA] = (float)((double)(bm + bn) / ((double)threads * acc));
    f[F_LOG_FMA_PER_SYNC] = lg((double)acc * bk);
    f[F_VEC] = (float)CUT_MIN(k[CUT_T_CPA], k[CUT_T_CPB]);
    f[F_LOG_RED_STEPS] = lg(g.kps);
    f[F_TILE_EFF] = (float)((double)g.gm * g.gn / ((double)g.grid[1] * bm * g.grid[0] * bn));
    f[F_RED_EFF] = (float)((double)g.gk / ((double)g.ktiles * bk));
    f[F_LOG_SPLITK] = lg(g.split);
    f[F_COPIES_PER_THREAD] = (float)(g.a_units + g.b_units);
    f[F_GATHERED_PER_THREAD] = (float)((k[CUT_T_CPA] ? 0 : g.a_units) + (k[CUT_T_CPB] ? 0 : g.b_units));
    f[F_LOG_KTILES_BLOCK] = lg(g.kps);
    for (int i = 0; i < CUT_T_NKNOBS && i < CUT_MAX_KNOBS; i++)
        f[F_KNOB0 + i] = lg(1.0 + k[i]);
}

/* The Hopper implicit GEMM (wgmma_conv.c): the tile quantities of its consumers over the convolution's GEMM, its
 * waves over the SMs with split-K's slices, its ring's shared memory, the producer's copies per thread. */
static void wgmma_conv_features(const cut_conv *c, const cut_sched *s, const cut_devlimits *d, int regs, float *f)
{
    cut_wgmma_conv_geom g;
    cut_wgmma_conv_geometry(c, s, &g);
    const int ktiles = g.kps; /* of one block (one split-K slice) */
    gemm_block_features(f, d, g.threads - 128, g.acc, (double)g.bm * g.bn, (double)ktiles * g.bk,
                        (double)g.grid[0] * g.grid[2], regs > 0 ? regs : g.regs_est, g.smem_bytes);
    f[F_LOG_INTENSITY] = lg(2.0 * g.bm * g.bn / (2.0 * (g.bm + g.bn)));
    f[F_GLOBAL_LOADS_PER_FMA] = (float)((double)(g.bm + g.bn) / ((double)g.bm * g.bn));
    f[F_LOG_FMA_PER_SYNC] = lg((double)g.acc * g.bk);
    f[F_VEC] = 16.0f;
    f[F_LOG_RED_STEPS] = lg(ktiles);
    f[F_TILE_EFF] = (float)((double)g.gm * g.gn / ((double)g.grid[0] * g.bm * g.bn));
    f[F_RED_EFF] = (float)((double)g.gk / ((double)g.ktiles * g.bk));
    f[F_LOG_SPLITK] = lg(g.split);
    f[F_COPIES_PER_THREAD] = (float)g.rows;
    f[F_LOG_KTILES_BLOCK] = lg(ktiles);
    for (int i = 0; i < CUT_WC_NKNOBS && i < CUT_MAX_KNOBS; i++)
        f[F_KNOB0 + i] = lg(1.0 + s->k[i]);
}

/* Operations of the straight-line transform dst = L src R^T (codegen/winograd.c): one per nonzero coefficient of
 * each emitted row, cols(src) rows of L then rows(L) rows of R. */
static int nnz(const cut_wino_mat *x)
{
    int n = 0;
    for (int i = 0; i < x->rows * x->cols; i++)
        n += x->num[i] != 0;
    return n;
}

static double sandwich_ops(const cut_wino_mat *l, const cut_wino_mat *r, int src_cols)
{
    return (double)src_cols * nnz(l) + (double)l->rows * nnz(r);
}

/* Winograd F(m x m, 3x3) (space/winograd.c, codegen/winograd.c): alpha^2 GEMMs of BCO x BT per block over chunks
 * of BC channels, plus the transforms. "FMAs" here are the GEMMs' multiply-adds, the work left after Winograd's
 * saving (alpha^2 / m^2 per output and channel instead of 9); the transforms are counted separately. */
static void winograd_features(const cut_conv *c, const cut_sched *s, const cut_devlimits *d, int regs, float *f)
{
    const int *k = s->k;
    cut_wino_geom g;
    cut_winograd_geometry(c, s, &g);
    const cut_wino_mats *mt = cut_winograd_mats(g.m);
    const int bco = k[CUT_W_BCO], bt = k[CUT_W_BT], bc = k[CUT_W_BC], rco = k[CUT_W_RCO], rt = k[CUT_W_RT];
    const int rxi = k[CUT_W_RXI], pad = k[CUT_W_PAD], m = g.m, a2 = g.a2;
    const int threads = g.threads > 0 ? g.threads : 1, acc = g.acc > 0 ? g.acc : 1;
    const double kred = (double)g.chunks * bc; /* channels a block runs through, the tail chunk's padding included */

    f[F_LOG_THREADS] = lg(threads);
    f[F_LOG_ACC] = lg(acc);
    f[F_LOG_BLOCK_OUT] = lg((double)bco * bt * m * m);
    f[F_LOG_FMA_THREAD] = lg(acc * kred);
    f[F_LOG_FMA_BLOCK] = lg((double)a2 * bco * bt * kred);
    double blocks = (double)g.grid[0] * g.grid[1] * g.grid[2];
    f[F_LOG_BLOCKS] = lg(blocks);
    resources(f, d, threads, regs > 0 ? regs : g.regs_est, g.smem_bytes, blocks);

    /* one chunk: a2 * BCO * BT * BC FMAs; BC*BT patches of a2 floats and BC*BCO filters of 9 floats from global
     * memory, a2 * BC * (BCO + BT) transformed floats staged */
    double step_fma = (double)a2 * bco * bt * bc;
    double step_global = (double)bc * bt * a2 + (double)bc * bco * 9;
    double step_staged = (double)a2 * bc * (bco + bt);
    f[F_LOG_INTENSITY] = lg(2.0 * step_fma / (4.0 * step_global));
    f[F_LOADS_PER_FMA] = (float)((double)(rco + rt) / (rco * rt));
    f[F_GLOBAL_LOADS_PER_FMA] = (float)(step_global / step_fma);
    f[F_STAGE_PER_FMA] = (float)(step_staged / step_fma);
    f[F_LOG_FMA_PER_SYNC] = lg((double)acc * bc / 2.0); /* two barriers per chunk */

    f[F_LOG_BODY] = lg(g.unrolled_fmas);
    f[F_LOG_UNROLLED_TRIPS] = lg(CUT_MIN(k[CUT_W_UNROLL], bc));
    f[F_VEC] = (float)g.vt;
    f[F_LOG_RED_STEPS] = lg(g.chunks);

    /* computed outputs: whole m x m tiles (the tails of OH and OW included) of whole blocks */
    double computed = (double)g.grid[1] * bco * g.grid[0] * bt * m * m;
    f[F_TILE_EFF] = (float)((double)c->co * g.oh * g.ow / computed);
    f[F_RED_EFF] = (float)((double)c->ci / kred);

    /* The first warp's addresses (interior, bounds ignored): patch element (0, 0) of items 0..31, filter element
     * 0 of filter items 0..31, row 0 of the epilogue's first 32 (co, tile) pairs, and the compute loop's shared
     * reads (first float of each vector) for channel 0. */
    int nw = CUT_MIN(32, threads), nout = 0;
    long a_in[32], a_w[32], a_out[128], a_u[32], a_v[32];
    int tw_ = g.tiles_w > 0 ? g.tiles_w : 1, tpi = CUT_MAX(g.tiles_h * g.tiles_w, 1);
    for (int t = 0; t < nw; t++) {
        int cc = t / bt, tl = t % bt, n = tl / tpi, th = tl % tpi / tw_, tw = tl % tw_;
        a_in[t] = (((long)n * c->ci + cc) * c->h + th * m) * c->w + (long)tw * m;
        int col = t / bc, cf = t % bc;
        a_w[t] = ((long)col * c->ci + cf) * 9;
        int vw = g.ow % m == 0 ? m : 1; /* float4/float2 rows, else scalar stores */
        for (int v = 0; v < vw && nout < 128; v++)
            a_out[nout++] = ((long)n * c->co * g.oh + th * m) * g.ow + (long)tw * m + v;
        int tt = t % g.tt, tco = t / g.tt % g.tco, x = t / (g.tt * g.tco) * rxi;
        a_u[t] = (long)x * bc * (bco + pad) + (long)tco * g.vco;
        a_v[t] = (long)x * bc * (bt + pad) + (long)tt * g.vt;
    }
    f[F_STAGE_IN_SECTORS] = (float)sectors(a_in, nw);
    f[F_STAGE_W_SECTORS] = (float)sectors(a_w, nw);
    f[F_OUT_SECTORS] = (float)sectors(a_out, nout);
    f[F_SMEM_IN_CONFLICT] = (float)bank_conflict(a_v, nw);
    f[F_SMEM_W_CONFLICT] = (float)bank_conflict(a_u, nw);
    f[F_LOG_WARP_SMEM_READS] = lg((double)distinct(a_u, nw) * rco + (double)distinct(a_v, nw) * rt);

    for (int i = 0; i < CUT_W_NKNOBS && i < CUT_MAX_KNOBS; i++)
        f[F_KNOB0 + i] = lg(1.0 + k[i]);

    f[F_MUL_SAVING] = (float)(9.0 * m * m / a2);
    /* per chunk: patch transforms (a2 loads, the B^T sandwich, a2 stores), filter transforms (9 loads, the G
     * sandwich, a2 stores); per block once: the output transforms of BCO x BT tiles (a2 loads, A^T sandwich) */
    double in_ops = a2 + sandwich_ops(&mt->bt, &mt->bt, g.alpha) + a2;
    double w_ops = 9 + sandwich_ops(&mt->g, &mt->g, 3) + a2;
    double out_ops = a2 + sandwich_ops(&mt->at, &mt->at, g.alpha) + m * m;
    double xform = (double)bc * bt * in_ops + (double)bc * bco * w_ops + (double)bco * bt * out_ops / g.chunks;
    f[F_XFORM_PER_FMA] = (float)(xform / step_fma);
}

/* 1 when none of s's nknobs knobs is negative and the nsizes knobs the geometry divides by are positive. */
static int knobs_usable(const cut_sched *s, int nknobs, const int *sizes, size_t nsizes)
{
    for (int i = 0; i < nknobs; i++)
        if (s->k[i] < 0)
            return 0;
    for (size_t i = 0; i < nsizes; i++)
        if (s->k[sizes[i]] <= 0)
            return 0;
    return 1;
}

int cut_features_conv(const cut_conv *c, const cut_sched *s, const cut_devlimits *d, int regs, float *out, int cap)
{
    if (cap < CUT_FEAT_LEN || s->tpl < 0 || !cut_template_get(s->tpl))
        return -1;
    memset(out, 0, sizeof(float) * CUT_FEAT_LEN);
    /* the one-hot has CUT_FEAT_NTPL slots, kept so that the layout of every feature stays as the cost model's
     * records know it; a later template (wgmma_conv) has none, its features and knobs tell it apart */
    if (s->tpl < CUT_FEAT_NTPL)
        out[F_ONEHOT + s->tpl] = 1.0f;
    out[F_LOG_N] = lg(c->n);
    out[F_LOG_OHW] = lg((double)cut_conv_oh(c) * cut_conv_ow(c));
    out[F_LOG_CO] = lg(c->co);
    out[F_LOG_CI] = lg(c->ci);
    out[F_LOG_KHW] = lg((double)c->kh * c->kw);
    out[F_STRIDE] = (float)c->stride;
    out[F_MUL_SAVING] = 1.0f;
    out[F_ELEM_BYTES] = (float)cut_elem_size(cut_conv_in_elem(c));
    out[F_TENSOR_CORE] = c->dtype != CUT_DT_FP32;
    out[F_TF32] = c->dtype == CUT_DT_TF32;
    out[F_BF16] = c->dtype == CUT_DT_BF16;
    out[F_NHWC] = c->layout == CUT_NHWC;
    out[F_EPILOGUE] = (float)c->epilogue;
    const cut_template *t = cut_template_get(s->tpl);
    if (strcmp(t->name, "direct") == 0) {
        for (int i = 0; i < CUT_D_NKNOBS; i++)
            if (s->k[i] < 0 || (s->k[i] == 0 && i != CUT_D_SMEM && i != CUT_D_UNROLL))
                return -1; /* knobs the geometry divides by */
        direct_features(c, s, d, regs, out);
    } else if (strcmp(t->name, "igemm") == 0) {
        static const int sizes[] = {CUT_G_BM,  CUT_G_BN,     CUT_G_BK, CUT_G_TM,     CUT_G_TN,
                                    CUT_G_WLM, CUT_G_STAGES, CUT_G_VA, CUT_G_UNROLL, CUT_G_SPLITK};
        if (!knobs_usable(s, CUT_G_NKNOBS, sizes, CUT_ARRAY_LEN(sizes)))
            return -1;
        igemm_features(c, s, d, regs, out);
    } else if (strcmp(t->name, "winograd") == 0) {
        static const int sizes[] = {CUT_W_BCO, CUT_W_BT, CUT_W_BC, CUT_W_RCO, CUT_W_RT, CUT_W_RXI, CUT_W_UNROLL};
        if (!knobs_usable(s, CUT_W_NKNOBS, sizes, CUT_ARRAY_LEN(sizes)))
            return -1;
        winograd_features(c, s, d, regs, out);
    } else if (strcmp(t->name, "igemm_tc") == 0) {
        static const int sizes[] = {CUT_T_BM, CUT_T_BN, CUT_T_BK, CUT_T_WM, CUT_T_WN, CUT_T_STAGES, CUT_T_SPLITK};
        if (!knobs_usable(s, CUT_T_NKNOBS, sizes, CUT_ARRAY_LEN(sizes)))
            return -1;
        igemm_tc_features(c, s, d, regs, out);
    } else if (strcmp(t->name, "wgmma_conv") == 0) {
        static const int sizes[] = {CUT_WC_BN, CUT_WC_MI, CUT_WC_NC, CUT_WC_ST, CUT_WC_SPLITK};
        if (!knobs_usable(s, CUT_WC_NKNOBS, sizes, CUT_ARRAY_LEN(sizes)))
            return -1;
        wgmma_conv_features(c, s, d, regs, out);
    } else {
        /* a template without derived features yet: its knobs, so that the model can still tell schedules apart */
        for (int i = 0; i < t->nknobs && i < CUT_MAX_KNOBS; i++)
            out[F_KNOB0 + i] = s->k[i] >= 0 ? lg(1.0 + s->k[i]) : 0.0f;
    }
    /* belt and braces: the model must never see NaN or Inf */
    for (int i = 0; i < CUT_FEAT_LEN; i++)
        if (!isfinite(out[i]))
            out[i] = 0.0f;
    return CUT_FEAT_LEN;
}

/* ---- the cost model on conv schedules ---- */

int cut_costmodel_add_sched(cut_costmodel *m, const cut_conv *c, const cut_devlimits *d, const cut_sched *s,
                            int regs, double gflops, cut_err *e)
{
    float f[CUT_FEAT_LEN];
    if (cut_features_conv(c, s, d, regs, f, CUT_FEAT_LEN) < 0)
        return cut_err_set(e, "cost model: no features for a schedule of template %d", s->tpl);
    cut_costmodel_add(m, f, gflops);
    return 0;
}

int cut_costmodel_rank(cut_costmodel *m, const cut_conv *c, const cut_devlimits *d, const cut_sched *cands, int n,
                       int *order)
{
    float *x = cut_xmalloc(sizeof(float) * CUT_FEAT_LEN * (size_t)(n > 0 ? n : 1));
    char *bad = cut_xcalloc((size_t)(n > 0 ? n : 1), 1);
    for (int i = 0; i < n; i++)
        if (cut_features_conv(c, &cands[i], d, -1, x + (size_t)i * CUT_FEAT_LEN, CUT_FEAT_LEN) < 0) {
            memset(x + (size_t)i * CUT_FEAT_LEN, 0, sizeof(float) * CUT_FEAT_LEN);
            bad[i] = 1; /* unknown template: ranked last */
        }
    int rc = cut_costmodel_rank_features(m, x, bad, n, order);
    free(bad);
    free(x);
    return rc;
}
