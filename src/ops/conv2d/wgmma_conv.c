/* cutune — the Hopper Conv2D template "wgmma_conv" (sm_90a, issue 20): an implicit GEMM whose weights come by TMA
 * and whose input is gathered by a producer warp group, both feeding wgmma in consumer warp groups.
 *
 * The convolution as a GEMM C[M][N] = A[M][K] B[N][K]^T, NHWC fp16/bf16 with fp32 accumulators: M = N*OH*OW output
 * pixels, N = CO, K = KH*KW*CI with CI innermost, the order in which the weights (CO x KH x KW x CI) lie, so B is
 * the weight tensor as stored, a K-major matrix, and A the im2col view of the input, never materialised.
 *
 * The kernel is the GEMM's wgmma template (src/ops/gemm/wgmma.c) with its A operand's producer replaced:
 *   - warp group 0 is the producer (setmaxnreg.dec to 40 registers). Per k tile of BK = 64 (128-byte rows): wait
 *     for a free stage (mbarrier "empty"), then thread 0 asks the TMA unit for the weights' box of BN rows x 64 k
 *     (the GEMM's tiled 2-D map, unchanged; rows past CO and k past K are zero-filled) and all 128 threads gather
 *     A's BM rows: thread t copies the 16-byte chunk t % 8 (8 channels of one filter tap, as CI % 8 == 0) of rows
 *     t / 8, t / 8 + 16, ... with cp.async, zero-filled (src-size 0) in the padding and past M or K, at the
 *     position the TMA's 128-byte swizzle would give it (chunk c of row r at r * 128 + (c ^ r % 8) * 16), so that
 *     wgmma's descriptors read it exactly as they read a TMA tile.
 *   - cp.async writes through the generic proxy and wgmma reads through the async proxy: a producer thread signals
 *     a tile ("full": 128 arrivals plus thread 0's expect-tx arrival for the TMA's bytes) only once its copies have
 *     landed (cp.async.wait_group) and it has fenced them (fence.proxy.async). It keeps LAG = ST - 1 - WAITD tiles in
 *     flight before it waits for one: the most that cannot deadlock, since a consumer releases tile t's stage only
 *     after it has waited for tile t + WAITD, and the producer waits for the release of tile t - ST's stage before
 *     it signals tile t - 1 - LAG.
 *   - warp groups 1..NC are consumers (setmaxnreg.inc): the GEMM's main loop (cut_wgmma_text_consumer_loop, m64
 *     x BN x k16 wgmmas, WAITD groups in flight) and an epilogue that adds the bias, applies ReLU (the workload's
 *     fused epilogue) and rounds once to fp16/bf16 (igemm_tc's cut_conv_tc_store_text).
 *
 * Blocks walk M fastest (neighbouring blocks share the weights' tile and the input's halo rows in L2). Split-K
 * (SPLITK > 1): slice blockIdx.z walks k tiles [z KPS, (z + 1) KPS) and the tile's last block to arrive adds the
 * slices' fp32 partials in slice order (deterministic; igemm_tc's workspace and counters, CUT_EMIT_SPLITK_TEXT),
 * its consumers meeting on an mbarrier of their own since the producer warp group has left. No cluster yet. The TMA map of the weights is built by the runners from
 * out->tma as the GEMM's are (the conv's weights, buffer 1, passed as the kernel's second argument by value).
 *
 * Knobs: BN (64..256), MI (1, 2), NC (1, 2), ST (2..6), WAITD (0, 1), SPLITK (1..16); what the first five trade is
 * the GEMM's (wgmma.c), split-K more blocks for few tiles (batch 1's late layers) against the partials' round trip
 * through L2. The input gather costs each producer thread BM / 16 copies and an im2col decode per row per k tile. */
#include "codegen/emit.h"
#include "ops/conv2d/templates.h"
#include "ops/gemm/wgmma_text.h"

#include <stdio.h>
#include <string.h>

static const char *const knob_names[CUT_WC_NKNOBS] = {"bn", "mi", "nc", "st", "waitd", "splitk"};
static const int v_bn[] = {64, 128, 192, 256};
static const int v_mi[] = {1, 2};
static const int v_nc[] = {1, 2};
static const int v_st[] = {2, 3, 4, 5, 6};
static const int v_waitd[] = {0, 1};
static const int v_splitk[] = {1, 2, 4, 8, 16};

#define PICK(r, v) cut_pick(r, v, (int)CUT_ARRAY_LEN(v))
#define STEP(r, v, cur) cut_step_in(r, v, (int)CUT_ARRAY_LEN(v), cur)

#define SMEM_OPTIN_SM90 232448 /* bytes of dynamic shared memory a block may opt into on sm_90 */
#define MAX_ACC 160            /* accumulators per consumer thread (registers after setmaxnreg: 232/240) */
#define BK 64                  /* fp16/bf16 elements of a 128-byte swizzled row */
#define MAX_WS_BYTES (64L << 20) /* largest split-K workspace (a static __device__ array), as igemm_tc's */

static int applies(const cut_conv *c)
{
    return (c->dtype == CUT_DT_FP16 || c->dtype == CUT_DT_BF16) && c->layout == CUT_NHWC && c->ci % 8 == 0;
}

void cut_wgmma_conv_geometry(const cut_conv *c, const cut_sched *s, cut_wgmma_conv_geom *g)
{
    const int *k = s->k;
    memset(g, 0, sizeof *g);
    const int bn = cut_clampi(k[CUT_WC_BN], 8, 256), mi = cut_clampi(k[CUT_WC_MI], 1, 2);
    const int nc = cut_clampi(k[CUT_WC_NC], 1, 2), st = cut_clampi(k[CUT_WC_ST], 1, 8);
    g->oh = cut_conv_oh(c), g->ow = cut_conv_ow(c);
    const long m = (long)c->n * g->oh * g->ow;
    g->gm = (int)CUT_MIN(m, 0x7fffffffL), g->gn = c->co, g->gk = c->kh * c->kw * c->ci;
    g->bm = 64 * mi * nc, g->bn = bn, g->bk = BK;
    g->threads = 128 * (nc + 1);
    g->lag = cut_imax(st - 1 - cut_clampi(k[CUT_WC_WAITD], 0, 1), 0);
    g->rows = g->bm / 16;
    /* full[ST], empty[ST] and the split-K reduction's barrier */
    g->smem_bytes = 1024 + st * (g->bm + g->bn) * 128 + (2 * st + 1) * 8;
    g->acc = mi * bn / 2;
    g->regs_est = g->acc + 40;
    g->ktiles = cut_ceil_div(g->gk, BK);
    g->split = cut_clampi(k[CUT_WC_SPLITK], 1, 64);
    g->kps = cut_ceil_div(g->ktiles, g->split);
    const unsigned tiles_m = (unsigned)cut_ceil_div(g->gm, g->bm), tiles_n = (unsigned)cut_ceil_div(g->gn, bn);
    g->grid[0] = tiles_m * tiles_n;
    g->grid[1] = 1;
    g->grid[2] = (unsigned)g->split;
    g->ws_bytes = g->split > 1 ? (long)g->split * g->grid[0] * g->bm * g->bn * 4 : 0;
}

static void sample(const cut_conv *c, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    (void)c, (void)d;
    memset(s->k, 0, sizeof s->k);
    s->k[CUT_WC_BN] = PICK(r, v_bn);
    s->k[CUT_WC_MI] = PICK(r, v_mi);
    s->k[CUT_WC_NC] = PICK(r, v_nc);
    s->k[CUT_WC_ST] = PICK(r, v_st);
    s->k[CUT_WC_WAITD] = PICK(r, v_waitd);
    s->k[CUT_WC_SPLITK] = cut_rng_below(r, 2) ? 1 : PICK(r, v_splitk); /* half without: most shapes need none */
}

static void mutate(const cut_conv *c, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    (void)c, (void)d;
    switch (cut_rng_below(r, CUT_WC_NKNOBS)) {
    case CUT_WC_BN: s->k[CUT_WC_BN] = STEP(r, v_bn, s->k[CUT_WC_BN]); break;
    case CUT_WC_MI: s->k[CUT_WC_MI] = STEP(r, v_mi, s->k[CUT_WC_MI]); break;
    case CUT_WC_NC: s->k[CUT_WC_NC] = STEP(r, v_nc, s->k[CUT_WC_NC]); break;
    case CUT_WC_ST: s->k[CUT_WC_ST] = STEP(r, v_st, s->k[CUT_WC_ST]); break;
    case CUT_WC_SPLITK: s->k[CUT_WC_SPLITK] = STEP(r, v_splitk, s->k[CUT_WC_SPLITK]); break;
    default: s->k[CUT_WC_WAITD] = STEP(r, v_waitd, s->k[CUT_WC_WAITD]); break;
    }
}

/* The workload's refusals, each a sentence (applies() says only yes or no). */
static int check_workload(const cut_conv *c, const cut_devlimits *d, cut_err *e)
{
    if (d && !(d->sm_major == 9 && d->sm_minor == 0))
        return cut_err_set(e, "wgmma_conv needs sm_90a (Hopper); the device is sm_%d%d", d->sm_major, d->sm_minor);
    if (c->dtype != CUT_DT_FP16 && c->dtype != CUT_DT_BF16)
        return cut_err_set(e, "wgmma_conv computes fp16 and bf16 only (%s: the igemm_tc template)",
                           cut_dtype_name(c->dtype));
    if (c->layout != CUT_NHWC)
        return cut_err_set(e, "wgmma_conv reads NHWC only (NCHW's im2col rows are not contiguous channels: the "
                              "igemm_tc template)");
    if (c->ci % 8 != 0)
        return cut_err_set(e, "wgmma_conv copies 16 bytes (8 channels) of a filter tap at a time, so CI must be a "
                              "multiple of 8 (CI=%d: the igemm_tc template)", c->ci);
    if ((long)c->n * cut_conv_oh(c) * cut_conv_ow(c) > 0x7fffffffL - 512)
        return cut_err_set(e, "wgmma_conv: N*OH*OW does not fit the kernel's int row index");
    return 0;
}

static int check(const cut_conv *c, const cut_sched *s, const cut_devlimits *d, cut_err *e)
{
    if (check_workload(c, d, e) != 0)
        return -1;
    const int *k = s->k;
    if (!CUT_IN(v_bn, k[CUT_WC_BN]) || !CUT_IN(v_mi, k[CUT_WC_MI]) || !CUT_IN(v_nc, k[CUT_WC_NC]) ||
        !CUT_IN(v_st, k[CUT_WC_ST]) || !CUT_IN(v_waitd, k[CUT_WC_WAITD]) || !CUT_IN(v_splitk, k[CUT_WC_SPLITK]))
        return cut_err_set(e, "wgmma_conv: a knob is off its list (bn=%d mi=%d nc=%d st=%d waitd=%d splitk=%d)",
                           k[CUT_WC_BN], k[CUT_WC_MI], k[CUT_WC_NC], k[CUT_WC_ST], k[CUT_WC_WAITD], k[CUT_WC_SPLITK]);
    cut_wgmma_conv_geom g;
    cut_wgmma_conv_geometry(c, s, &g);
    if (g.acc > MAX_ACC)
        return cut_err_set(e, "wgmma_conv: %d accumulators per thread (mi=%d x bn=%d / 2) exceed %d registers' worth",
                           g.acc, k[CUT_WC_MI], k[CUT_WC_BN], MAX_ACC);
    if (g.smem_bytes > SMEM_OPTIN_SM90)
        return cut_err_set(e, "wgmma_conv: %d stages of %d x 128 bytes need %d bytes of shared memory, over %d",
                           k[CUT_WC_ST], g.bm + g.bn, g.smem_bytes, SMEM_OPTIN_SM90);
    if (d && g.threads > d->max_threads_per_block)
        return cut_err_set(e, "wgmma_conv: %d threads per block, over the device's %d", g.threads,
                           d->max_threads_per_block);
    /* tiles far larger than the problem only waste the tensor cores on zeros */
    if (g.bm >= 128 && g.gm <= g.bm / 2)
        return cut_err_set(e, "wgmma_conv: a %d-row tile for M=%d leaves most of it empty", g.bm, g.gm);
    if (g.bn >= 128 && g.gn <= g.bn / 2)
        return cut_err_set(e, "wgmma_conv: a %d-column tile for CO=%d leaves most of it empty", g.bn, g.gn);
    if (g.split > 1 && g.kps < 2)
        return cut_err_set(e, "wgmma_conv: split-K %d leaves slices of %d k tile (of %d): at least two a slice",
                           g.split, g.kps, g.ktiles);
    if (g.split > 1 && (long)(g.split - 1) * g.kps >= g.ktiles)
        return cut_err_set(e, "wgmma_conv: split-K %d with %d k tiles a slice leaves the last of %d tiles' slices "
                              "empty", g.split, g.kps, g.ktiles);
    if (g.ws_bytes > MAX_WS_BYTES)
        return cut_err_set(e, "wgmma_conv: the split-K workspace would take %ld bytes, over %ld", g.ws_bytes,
                           MAX_WS_BYTES);
    return 0;
}

const cut_template cut_tpl_wgmma_conv = {
    .name = "wgmma_conv",
    .nknobs = CUT_WC_NKNOBS,
    .knob_names = knob_names,
    .knob_defaults = NULL,
    .applies = applies,
    .sample = sample,
    .mutate = mutate,
    .check = check,
};

/* ---- code generation ---- */

/* The producer's helpers (cp.async with zero fill, its groups) for the GPU and, under CUT_EMU, as their semantics: a
 * copy lands at once, so waiting is nothing; the conv epilogue's fp16 bias value. The proxy fence (fence_proxy_async)
 * is the GEMM's text's (cut_wgmma_text_ptx, cut_wgmma_text_emu), the same instruction. */
static const char wc_helpers[] =
    "#ifndef CUT_EMU\n"
    "/* 16 bytes from src to shared address dst, or (bytes 0) 16 zeros */\n"
    "static __device__ __forceinline__ void cp_async16(unsigned dst, const void *src, int bytes)\n"
    "{ asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"(dst), \"l\"(src), \"r\"(bytes) : "
    "\"memory\"); }\n"
    "static __device__ __forceinline__ void cp_async_commit(void)\n"
    "{ asm volatile(\"cp.async.commit_group;\" ::: \"memory\"); }\n"
    "template <int G> static __device__ __forceinline__ void cp_async_wait(void)\n"
    "{ asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(G) : \"memory\"); }\n"
    "#else\n"
    "static __device__ __forceinline__ void cp_async16(unsigned dst, const void *src, int bytes)\n"
    "{\n"
    "    if (dst % 16 != 0)\n"
    "        cut_emu_fail(\"cp.async: a 16-byte copy to a shared address not 16-byte aligned\");\n"
    "    if (bytes)\n"
    "        __builtin_memcpy(emu_smem(dst, 16), src, 16);\n"
    "    else\n"
    "        __builtin_memset(emu_smem(dst, 16), 0, 16);\n"
    "}\n"
    "static __device__ __forceinline__ void cp_async_commit(void) {}\n"
    "template <int G> static __device__ __forceinline__ void cp_async_wait(void) {}\n"
    "static __device__ __forceinline__ float emu_val(unsigned h, int) { return emu_f16(h & 0xFFFFu); }\n"
    "#endif\n";

/* The producer warp group (thread lt of 128): the weights of k tiles kt0 .. kt0 + nk - 1 by TMA (thread 0) and
 * their input rows by cp.async (all), signalled LAG tiles late (the file's comment says why); j counts the block's
 * tiles, which the stages and their phases follow. */
static const char wc_producer[] =
    "#define OHW (OH * OW)\n"
    "static __device__ __forceinline__ void produce(const T *__restrict__ A, const cut_tmap *tmB, unsigned base,\n"
    "                                               unsigned bars, int m0, int n0, int lt, int kt0, int nk)\n"
    "{\n"
    "    const int c8 = lt % 8; /* this thread's 16-byte chunk of every row it copies */\n"
    "#pragma unroll 1\n"
    "    for (int j = 0; j < nk; j++) {\n"
    "        const int s = j % ST, kt = kt0 + j;\n"
    "        if (j >= ST)\n"
    "            mbar_wait(EMPTY(s), ((j / ST) + 1) & 1);\n"
    "        if (lt == 0) {\n"
    "            mbar_expect_tx(FULL(s), B_BYTES);\n"
    "            tma_load(SB(s), tmB, kt * BK, n0, FULL(s)); /* rows past CO, k past K: zeros */\n"
    "        }\n"
    "        const int k = kt * BK + 8 * c8; /* 8 channels of one filter tap (CI % 8 == 0) */\n"
    "        const int tap = k / CI, ci = k - tap * CI, kh = tap / KW, kw = tap - kh * KW;\n"
    "#pragma unroll 1\n"
    "        for (int r = lt / 8; r < BM; r += 16) {\n"
    "            const int m = m0 + r, img = m / OHW, p = m - img * OHW, oh = p / OW, ow = p - oh * OW;\n"
    "            const int ih = oh * SH - PD + kh, iw = ow * SH - PD + kw;\n"
    "            const bool ok = m < M && k < K && (unsigned)ih < (unsigned)IH && (unsigned)iw < (unsigned)IW;\n"
    "            const T *src = ok ? A + (((size_t)img * IH + ih) * IW + iw) * CI + ci : A;\n"
    "            cp_async16(SA(s) + r * 128 + ((c8 ^ (r % 8)) << 4), src, ok ? 16 : 0);\n"
    "        }\n"
    "        cp_async_commit();\n"
    "        cp_async_wait<LAG>(); /* the block's tile j - LAG has landed */\n"
    "        if (j >= LAG) {\n"
    "            fence_proxy_async();\n"
    "            mbar_arrive(FULL((j - LAG) % ST));\n"
    "        }\n"
    "    }\n"
    "    cp_async_wait<0>();\n"
    "    fence_proxy_async();\n"
    "    for (int j = nk > LAG ? nk - LAG : 0; j < nk; j++)\n"
    "        mbar_arrive(FULL(j % ST));\n"
    "}\n"
    "\n"
    "#define KPS ((KT + SPLITK - 1) / SPLITK) /* k tiles per split-K slice */\n"
    "#define ACCN (MI * BN / 2)               /* accumulators per consumer thread */\n"
    "#define CTHR (NC * 128)                  /* consumer threads */\n"
    "#define WS_TILES ((M + BM - 1) / BM * ((N + BN - 1) / BN))\n"
    "#define WS_FLOATS (SPLITK * WS_TILES * CTHR * ACCN)\n"
    "#define RED (bars + 16u * ST) /* the consumers' barrier of the split-K reduction */\n"
    CUT_EMIT_SPLITK_TEXT
    "#if SPLITK > 1\n"
    "/* Publishes this slice's accumulators (partial [slice][tile][accumulator][consumer thread]: coalesced, no bounds\n"
    " * to test); false in every block but the tile's last to arrive, whose d becomes the sum of the slices in slice\n"
    " * order (its own from registers). The consumers meet on the mbarrier RED (phases 0, 1): the producer warp group\n"
    " * has left, so __syncthreads (cut_splitk_last) would wait for it forever. */\n"
    "static __device__ __forceinline__ bool splitk_reduce(float (&d)[MI][BN / 2], unsigned bars, int ct)\n"
    "{\n"
    "    __shared__ int last;\n"
    "    const int tile = blockIdx.x, z = blockIdx.z;\n"
    "    float *__restrict__ tw = cut_ws + (size_t)tile * ACCN * CTHR + ct;\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < ACCN; e++)\n"
    "        tw[(size_t)z * WS_TILES * ACCN * CTHR + e * CTHR] = d[e / (BN / 2)][e % (BN / 2)];\n"
    "    __threadfence(); /* this thread's partial is visible before the block counts itself in */\n"
    "    mbar_arrive(RED);\n"
    "    mbar_wait(RED, 0);\n"
    "    if (ct == 0)\n"
    "        last = atomicAdd(&cut_cnt[tile], 1u) == SPLITK - 1;\n"
    "    mbar_arrive(RED);\n"
    "    mbar_wait(RED, 1);\n"
    "    if (!last)\n"
    "        return false;\n"
    "    __threadfence(); /* the other slices' partials are read after their counts */\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < ACCN; e++) {\n"
    "        float sum = 0.0f;\n"
    "#pragma unroll 1\n"
    "        for (int q = 0; q < SPLITK; q++)\n"
    "            sum += q == z ? d[e / (BN / 2)][e % (BN / 2)]\n"
    "                          : __ldcg(&tw[(size_t)q * WS_TILES * ACCN * CTHR + e * CTHR]);\n"
    "        d[e / (BN / 2)][e % (BN / 2)] = sum;\n"
    "    }\n"
    "    if (ct == 0)\n"
    "        cut_cnt[tile] = 0u; /* every slice has arrived: ready for the next launch */\n"
    "    return true;\n"
    "}\n"
    "#endif\n";

static const char wc_body[] =
    "#define TA 0 /* A K-major */\n"
    "#define DESC_B(s, kk) desc(SB(s) + (kk) * 32, 16, 1024)\n"
    "#define RELEASE(s) mbar_arrive(EMPTY(s))\n"
    "\n"
    "extern \"C\" __global__ void __launch_bounds__(THREADS, 1)\n"
    "cut_conv2d(const T *__restrict__ A, const __grid_constant__ cut_tmap tmB, OutT *__restrict__ C EPI_ARGS)\n"
    "{\n"
    "#if !EPI\n"
    "    const T *bias = nullptr; /* epi() adds nothing */\n"
    "#endif\n"
    "    extern __shared__ unsigned char smem_raw[];\n"
    "    const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u; /* 128-byte swizzle atoms: 1024-aligned */\n"
    "    const unsigned bars = base + ST * STAGE_BYTES;                 /* full[ST] then empty[ST], 8 bytes each */\n"
    "    const int wg = threadIdx.x / 128, lt = threadIdx.x % 128;\n"
    "    const int tiles_m = (M + BM - 1) / BM;\n"
    "    const int m0 = (int)(blockIdx.x % tiles_m) * BM, n0 = (int)(blockIdx.x / tiles_m) * BN;\n"
    "    const int kt0 = (int)blockIdx.z * KPS, nkt = min(KPS, KT - kt0); /* the space leaves no slice empty */\n"
    "    if (threadIdx.x == 0) {\n"
    "        for (int s = 0; s < ST; s++) {\n"
    "            mbar_init(FULL(s), 128 + 1);  /* the producer's threads and thread 0's expect-tx */\n"
    "            mbar_init(EMPTY(s), NC * 4); /* a warp of each consumer */\n"
    "        }\n"
    "        mbar_init(RED, CTHR);\n"
    "        fence_mbarrier_init();\n"
    "    }\n"
    "    __syncthreads();\n"
    "    if (wg == 0) { /* producer */\n"
    "        setmaxnreg_dec<40>();\n"
    "        produce(A, &tmB, base, bars, m0, n0, lt, kt0, nkt);\n"
    "    } else { /* consumer wg-1 */\n"
    "        setmaxnreg_inc<REGS_INC>();\n"
    "#undef KT\n"
    "#define KT nkt /* the consumer's loop (the GEMM's text) walks the block's k tiles */\n";

/* After the consumer's main loop: accumulator j of m64 block i is row 16 warp + lane / 4 + 8 ((j / 2) % 2),
 * column 8 (j / 4) + 2 (lane % 4) + j % 2 of the consumer's rows; pairs of channels stored together. */
static const char wc_epilogue[] =
    "#if SPLITK > 1\n"
    "        if (!splitk_reduce(d, bars, (int)threadIdx.x - 128))\n"
    "            return;\n"
    "#endif\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < MI; i++)\n"
    "#pragma unroll\n"
    "            for (int h = 0; h < 2; h++) {\n"
    "                const int r = m0 + row0 + i * 64 + warp * 16 + lane / 4 + 8 * h;\n"
    "                if (r >= M)\n"
    "                    continue;\n"
    "                OutT *__restrict__ row = C + (size_t)r * N;\n"
    "#pragma unroll\n"
    "                for (int j = 0; j < BN / 8; j++) {\n"
    "                    const int n = n0 + 8 * j + 2 * (lane % 4);\n"
    "                    store2(row, n, epi(d[i][4 * j + 2 * h], bias, n), epi(d[i][4 * j + 2 * h + 1], bias, n + 1));\n"
    "                }\n"
    "            }\n"
    "    }\n"
    "}\n";

static void emit_defines(cut_buf *b, const cut_conv *c, const cut_sched *s, const cut_wgmma_conv_geom *g)
{
    const int *k = s->k;
    cut_buf_printf(b, "#define NB %d\n#define IH %d\n#define IW %d\n#define CI %d\n#define CO %d\n", c->n, c->h,
                   c->w, c->ci, c->co);
    cut_buf_printf(b, "#define KH %d\n#define KW %d\n#define SH %d\n#define PD %d\n#define OH %d\n#define OW %d\n",
                   c->kh, c->kw, c->stride, c->pad, g->oh, g->ow);
    cut_buf_printf(b, "#define NHWC 1\n#define M %d /* N*OH*OW */\n#define N %d /* CO */\n#define K %d /* KH*KW*CI */\n",
                   g->gm, g->gn, g->gk);
    cut_buf_printf(b, "#define DT %d /* 0 fp16, 1 bf16 */\ntypedef unsigned short T; /* the bits of an input */\n",
                   c->dtype == CUT_DT_BF16);
    cut_buf_printf(b, "#define BM %d\n#define BN %d\n#define BK %d\n#define KS 16\n#define MI %d\n#define NC %d\n",
                   g->bm, g->bn, g->bk, k[CUT_WC_MI], k[CUT_WC_NC]);
    cut_buf_printf(b, "#define ST %d\n#define WAITD %d\n#define LAG %d\n#define CL 1\n#define REGS_INC %d\n",
                   k[CUT_WC_ST], k[CUT_WC_WAITD], g->lag, k[CUT_WC_NC] == 2 ? 232 : 240);
    cut_buf_printf(b, "#define EPI %d /* 0 none, 1 bias, 2 bias and ReLU */\n#define SPLITK %d\n", (int)c->epilogue,
                   g->split);
}

int cut_emit_wgmma_conv(cut_buf *b, const cut_conv *c, const cut_sched *s, cut_kernel_src *out, cut_err *e)
{
    if (check(c, s, NULL, e) != 0)
        return cut_err_wrap(e, "codegen wgmma_conv");
    cut_wgmma_conv_geom g;
    cut_wgmma_conv_geometry(c, s, &g);
    cut_buf_printf(b, "// Hopper (sm_90a): weights by TMA, input gathered by a cp.async producer warp group, wgmma "
                      "consumers.\n");
    emit_defines(b, c, s, &g);
    const char *const parts[] = {cut_wgmma_text_head, cut_wgmma_text_ptx, cut_wgmma_text_emu, wc_helpers,
                                 cut_conv_tc_store_text};
    for (size_t i = 0; i < CUT_ARRAY_LEN(parts); i++)
        cut_buf_append(b, parts[i], strlen(parts[i]));
    cut_wgmma_emit_tile(b, c->dtype, g.bn, 0, 0);
    const char *const kernel[] = {wc_producer, wc_body, cut_wgmma_text_consumer_loop, wc_epilogue};
    for (size_t i = 0; i < CUT_ARRAY_LEN(kernel); i++)
        cut_buf_append(b, kernel[i], strlen(kernel[i]));
    cut_emit_launch(out, g.grid, g.threads);
    out->smem_dynamic = (unsigned)g.smem_bytes;
    out->tol_scale = 1.0;
    out->arch_a = 1;
    out->extra_bufs = c->epilogue != CUT_EPI_NONE; /* the bias after the output */
    out->uses_inline_ptx = 0; /* its PTX sits in #ifndef CUT_EMU branches: the emulator runs the kernel */
    /* the weights: CO rows of K, boxes of BN rows x 64 k in the 128-byte swizzle */
    out->ntma = 1;
    out->tma[0] = (cut_tma_desc){.operand = 1, .elem_bytes = 2, .dims = {(unsigned long long)g.gk,
                                 (unsigned long long)g.gn}, .row_bytes = (unsigned long long)g.gk * 2u,
                                 .box = {(unsigned)BK, (unsigned)g.bn}, .swizzle = 128};
    return 0;
}
