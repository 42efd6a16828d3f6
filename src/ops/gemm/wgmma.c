/* cutune — the Hopper GEMM template "wgmma" (sm_90a): TMA + mbarriers + wgmma, producer/consumer warp groups.
 *
 * A block of (NC + 1) warp groups computes a BM x BN tile of C, BM = NC * MI * 64:
 *   - warp group 0 is the producer: it gives most of its registers back (setmaxnreg.dec) and one thread walks K in
 *     steps of BK, waiting for a free stage (mbarrier "empty"), then asks the TMA unit to copy the A box and the B
 *     box(es) of the step into that stage; the copies complete on the stage's "full" mbarrier with a byte count.
 *   - warp groups 1..NC are consumers (setmaxnreg.inc): consumer c owns rows [c*MI*64, (c+1)*MI*64) of the tile. Per
 *     stage it waits on "full", issues BK/KS x MI wgmma.mma_async (m64 n=BN k=KS, fp32 accumulators in registers,
 *     operands read by the tensor cores straight from shared memory through matrix descriptors), commits, and
 *     releases the stage on "empty" once the group that read it has completed (WAITD groups may stay in flight).
 *   - epilogue: each consumer stores its accumulators to C with guarded float2 stores (tails).
 * Shared memory of a stage: the A tile as BM rows of 128 bytes (BK elements of K, K-major) and the B tile, K-major
 * (NT: BN rows of 128 bytes) or MN-major (NN: BN/64 boxes of BK rows of 128 bytes = 64 elements of N, read
 * with wgmma's transpose flag), all in the TMA's 128-byte swizzle, which is what the descriptors declare. BK is
 * the 128-byte swizzle span: 64 fp16/bf16 or 32 tf32 elements. Elements past M, N or K are zero-filled by the TMA,
 * so no size needs to be a multiple of a tile; TMA needs 16-byte aligned rows (K, and N for NN, times the element
 * size a multiple of 16).
 *
 * Tiles are numbered along M in groups of GM rows of tiles (blocks that run together share A and B in L2).
 *
 * Knobs: BN (wgmma n: 64..256), MI (m64 blocks per consumer: 1, 2), NC (consumer warp groups: 1, 2), ST (stages:
 * 2..6), WAITD (wgmma groups left in flight before a stage is released: 0, 1), GM (raster group: 1, 8, 16) and
 * CL (cluster size along M: 1, 2; with 2 the blocks of a cluster are launched together on neighbouring SMs and
 * each loads half of the B tile and multicasts it to both, halving B's L2 traffic).
 *
 * What they trade. BM x BN: reuse of each loaded byte against registers (MI*BN/2 accumulators per thread) and
 * blocks to fill 132 SMs. ST: latency hiding against shared memory (one block per SM at most tiles). WAITD 1 keeps
 * the tensor cores busy across stage boundaries. NC 2 lets two warp groups share one B tile.
 *
 * Every PTX instruction sits in a helper of src/ops/gemm/wgmma_text.c, which under CUT_EMU implements it on the host
 * emulator as the PTX ISA documents it (mbarrier phases and tx-counts, TMA tile loads with the swizzle and zero
 * fill from the emulated map the emulation runner passes, wgmma from the descriptors in the accumulator fragment
 * layout), so the same source runs on the GPU and, with CL 1, under emulation (tests/test_gemm_wgmma_emu.c). */
#include "codegen/emit.h"
#include "ops/gemm/simt.h"
#include "ops/gemm/wgmma_text.h"
#include "cutune/gemm_space.h"
#include "cutune/util.h"

#include "codegen/knobs.h"

#include <stdio.h>
#include <string.h>

enum { K_BN, K_MI, K_NC, K_ST, K_WAITD, K_GM, K_CL, K_N };

static const char *const knob_names[K_N] = {"bn", "mi", "nc", "st", "waitd", "gm", "cl"};
static const int v_bn[] = {64, 128, 192, 256}; /* multiples of 64: NN loads B in boxes of 64 columns */
static const int v_mi[] = {1, 2};
static const int v_nc[] = {1, 2};
static const int v_st[] = {2, 3, 4, 5, 6};
static const int v_waitd[] = {0, 1};
static const int v_gm[] = {1, 8, 16};
static const int v_cl[] = {1, 2};

#define PICK(r, v) cut_pick(r, v, (int)CUT_ARRAY_LEN(v))
#define STEP(r, v, cur) cut_step_in(r, v, (int)CUT_ARRAY_LEN(v), cur)

#define SMEM_OPTIN_SM90 232448 /* bytes of dynamic shared memory a block may opt into on sm_90 */
#define SWZ 128                /* swizzle span in bytes: one row of a tile */
#define MAX_ACC 160            /* accumulators per consumer thread (registers after setmaxnreg: 232/240) */

static const char *knob_name(int knob) { return knob >= 0 && knob < K_N ? knob_names[knob] : "?"; }

static int elem_bytes(const cut_gemm *g) { return (int)cut_dtype_size(g->dtype); }

static int applies(const cut_gemm *g, const cut_devlimits *d, cut_err *why)
{
    if (d && !(d->sm_major == 9 && d->sm_minor == 0))
        return cut_err_set(why, "the wgmma template needs sm_90a (Hopper); the device is sm_%d%d", d->sm_major,
                           d->sm_minor),
               0;
    if (g->dtype == CUT_DT_FP32)
        return cut_err_set(why, "the wgmma template computes on tensor cores: fp32 is the SIMT template's"), 0;
    if (g->dtype == CUT_DT_TF32 && g->layout == CUT_GEMM_NN)
        return cut_err_set(why, "wgmma reads tf32 operands K-major only, so the wgmma template computes tf32 as NT "
                                "(an NN B would need a transpose)"),
               0;
    if (cut_gemm_a_trans(g))
        return cut_err_set(why, "the wgmma template reads A as M rows of K through its TMA box; A stored KxM (%s) is "
                                "the mma and SIMT templates' for now",
                           cut_gemm_layout_name(g->layout)),
               0;
    if (cut_gemm_has_extras(g))
        return cut_err_set(why, "the wgmma template computes one GEMM with alpha 1 and beta 0 (its TMA maps are 2-D "
                                "and its epilogue plain); a batch, alpha or beta is the mma and SIMT templates'"),
               0;
    return 1;
}

/* Everything that follows from the knobs. */
typedef struct wg_geom {
    int bm, bn, bk, ks;   /* tile, k per wgmma (16 for 16-bit types, 8 for tf32) */
    int threads;
    int a_bytes, b_bytes; /* one stage's A and B tiles */
    int smem;             /* dynamic shared memory incl. 1024 bytes of alignment slack and the barriers */
    int acc;              /* accumulators per consumer thread */
    unsigned tiles_m, tiles_n;
} wg_geom;

static void wg_geometry(const cut_gemm *g, const cut_sched *s, wg_geom *o)
{
    const int *k = s->k;
    const int eb = elem_bytes(g) > 0 ? elem_bytes(g) : 2;
    o->bn = k[K_BN] > 0 ? k[K_BN] : 64;
    o->bm = 64 * (k[K_MI] > 0 ? k[K_MI] : 1) * (k[K_NC] > 0 ? k[K_NC] : 1);
    o->bk = SWZ / eb;
    o->ks = eb == 2 ? 16 : 8;
    o->threads = 128 * ((k[K_NC] > 0 ? k[K_NC] : 1) + 1);
    o->a_bytes = o->bm * SWZ;
    o->b_bytes = o->bn * SWZ;
    const int st = k[K_ST] > 0 ? k[K_ST] : 1;
    o->smem = 1024 + st * (o->a_bytes + o->b_bytes) + 2 * st * 8;
    o->acc = (k[K_MI] > 0 ? k[K_MI] : 1) * o->bn / 2;
    o->tiles_m = (unsigned)((g->m + o->bm - 1) / o->bm);
    o->tiles_n = (unsigned)((g->n + o->bn - 1) / o->bn);
}

static void sample(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    (void)g, (void)d;
    s->tpl = CUT_GEMM_TPL_WGMMA;
    s->k[K_BN] = PICK(r, v_bn);
    s->k[K_MI] = PICK(r, v_mi);
    s->k[K_NC] = PICK(r, v_nc);
    s->k[K_ST] = PICK(r, v_st);
    s->k[K_WAITD] = PICK(r, v_waitd);
    s->k[K_GM] = PICK(r, v_gm);
    s->k[K_CL] = PICK(r, v_cl);
}

static void mutate(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    (void)g, (void)d;
    int *k = s->k;
    switch (cut_rng_below(r, K_N)) {
    case K_BN: k[K_BN] = STEP(r, v_bn, k[K_BN]); break;
    case K_MI: k[K_MI] = STEP(r, v_mi, k[K_MI]); break;
    case K_NC: k[K_NC] = STEP(r, v_nc, k[K_NC]); break;
    case K_ST: k[K_ST] = STEP(r, v_st, k[K_ST]); break;
    case K_WAITD: k[K_WAITD] = STEP(r, v_waitd, k[K_WAITD]); break;
    case K_GM: k[K_GM] = STEP(r, v_gm, k[K_GM]); break;
    default: k[K_CL] = STEP(r, v_cl, k[K_CL]); break;
    }
}

/* The rules that hold whatever the device: dtype/layout, knob lists, TMA alignment, registers, shared memory. */
static int check_shape(const cut_gemm *g, const cut_sched *s, cut_err *e)
{
    if (!applies(g, NULL, e))
        return -1;
    if (g->m <= 0 || g->n <= 0 || g->k <= 0)
        return cut_err_set(e, "wgmma: sizes must be positive (M=%d N=%d K=%d)", g->m, g->n, g->k);
    const int *k = s->k;
    if (!CUT_IN(v_bn, k[K_BN]) || !CUT_IN(v_mi, k[K_MI]) || !CUT_IN(v_nc, k[K_NC]) || !CUT_IN(v_st, k[K_ST]) ||
        !CUT_IN(v_waitd, k[K_WAITD]) || !CUT_IN(v_gm, k[K_GM]) || !CUT_IN(v_cl, k[K_CL]))
        return cut_err_set(e, "wgmma: a knob is off its list (bn=%d mi=%d nc=%d st=%d waitd=%d gm=%d cl=%d)", k[K_BN],
                           k[K_MI], k[K_NC], k[K_ST], k[K_WAITD], k[K_GM], k[K_CL]);
    const int eb = elem_bytes(g);
    if (((long)g->k * eb) % 16 != 0)
        return cut_err_set(e, "wgmma: TMA needs 16-byte aligned rows: K=%d x %d bytes is not a multiple of 16", g->k,
                           eb);
    if (g->layout == CUT_GEMM_NN && ((long)g->n * eb) % 16 != 0)
        return cut_err_set(e, "wgmma: TMA needs 16-byte aligned rows: N=%d x %d bytes (B's rows) is not a multiple of "
                              "16", g->n, eb);
    wg_geom gm;
    wg_geometry(g, s, &gm);
    if (gm.acc > MAX_ACC)
        return cut_err_set(e, "wgmma: %d accumulators per thread (mi=%d x bn=%d / 2) exceed %d registers' worth",
                           gm.acc, k[K_MI], k[K_BN], MAX_ACC);
    if (gm.smem > SMEM_OPTIN_SM90)
        return cut_err_set(e, "wgmma: %d stages of %d + %d bytes need %d bytes of shared memory, over %d", k[K_ST],
                           gm.a_bytes, gm.b_bytes, gm.smem, SMEM_OPTIN_SM90);
    return 0;
}

static int check(const cut_gemm *g, const cut_sched *s, const cut_devlimits *d, cut_err *e)
{
    if (!applies(g, d, e) || check_shape(g, s, e) != 0)
        return -1;
    wg_geom gm;
    wg_geometry(g, s, &gm);
    if (d && gm.threads > d->max_threads_per_block)
        return cut_err_set(e, "wgmma: %d threads per block, over the device's %d", gm.threads,
                           d->max_threads_per_block);
    /* Tiles far larger than the problem only waste the tensor cores on zeros. */
    if (gm.bm >= 2 * 64 && g->m <= gm.bm / 2)
        return cut_err_set(e, "wgmma: a %d-row tile for M=%d leaves most of it empty", gm.bm, g->m);
    if (gm.bn >= 128 && g->n <= gm.bn / 2)
        return cut_err_set(e, "wgmma: a %d-column tile for N=%d leaves most of it empty", gm.bn, g->n);
    return 0;
}

static void geometry(const cut_gemm *g, const cut_sched *s, cut_gemm_geom *out)
{
    wg_geom gm;
    wg_geometry(g, s, &gm);
    const int cl = s->k[K_CL] == 2 ? 2 : 1;
    *out = (cut_gemm_geom){
        .bm = gm.bm, .bn = gm.bn, .bk = gm.bk, .threads = gm.threads, .stages = s->k[K_ST],
        .smem_bytes = gm.smem, .regs_est = gm.acc + 40, .elem_bytes = elem_bytes(g), .tensor_cores = 2,
        .grid = {((gm.tiles_m + (unsigned)cl - 1) / (unsigned)cl) * (unsigned)cl * gm.tiles_n, 1, 1},
    };
}

/* ---- code generation ---- */

/* The device text after the knobs' #defines, before the PTX helpers (wgmma_text.h). */
static const char wg_head[] =
    "typedef unsigned long long u64;\n"
    "struct __align__(64) cut_tmap { u64 v[16]; };\n"
    "#define KT ((K + BK - 1) / BK)\n"
    "#define THREADS (128 * (NC + 1))\n"
    "#define A_BYTES (BM * 128)\n"
    "#define B_BYTES (BN * 128)\n"
    "#define STAGE_BYTES (A_BYTES + B_BYTES)\n"
    "/* wgmma shared-memory matrix descriptor: 128-byte swizzle (layout type 1) */\n"
    "static __device__ __forceinline__ u64 desc(unsigned addr, unsigned lbo, unsigned sbo)\n"
    "{\n"
    "    return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)(sbo >> 4) << 32) | (1ull << 62);\n"
    "}\n";

/* The kernel: the tile raster, producer, consumers, epilogue. WGMMA(d, da, db), DESC_B, LOAD_B and RELEASE come
 * before it (they depend on BN, the layout and the cluster). */
static const char wg_body[] =
    "\n"
    "extern \"C\" __global__ void __launch_bounds__(THREADS, 1) CLUSTER_ATTR\n"
    "cut_gemm(const __grid_constant__ cut_tmap tmA, const __grid_constant__ cut_tmap tmB, float *__restrict__ C)\n"
    "{\n"
    "    extern __shared__ unsigned char smem_raw[];\n"
    "    const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u; /* 128-byte swizzle atoms: 1024-aligned */\n"
    "    const unsigned bars = base + ST * STAGE_BYTES;                 /* full[ST] then empty[ST], 8 bytes each */\n"
    "#define FULL(s) (bars + 8u * (s))\n"
    "#define EMPTY(s) (bars + 8u * (ST + (s)))\n"
    "#define SA(s) (base + (unsigned)(s) * STAGE_BYTES)\n"
    "#define SB(s) (SA(s) + A_BYTES)\n"
    "    const int wg = threadIdx.x / 128, lt = threadIdx.x % 128;\n"
    "\n"
    "    /* tile raster: groups of GM tile rows; a cluster takes CL consecutive tile rows of one tile column */\n"
    "    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;\n"
    "    const int tiles_mc = (tiles_m + CL - 1) / CL;            /* cluster rows */\n"
    "    const int id = blockIdx.x / CL;\n"
    "    const int group = GM * tiles_n;\n"
    "    const int first = (id / group) * GM;\n"
    "    const int gsize = min(tiles_mc - first, GM);\n"
    "    const int tm = (first + (id % group) % gsize) * CL + (int)(blockIdx.x % CL);\n"
    "    const int tn = (id % group) / gsize;\n"
    "    const int m0 = tm * BM, n0 = tn * BN;\n"
    "\n"
    "    if (threadIdx.x == 0) {\n"
    "        for (int s = 0; s < ST; s++) {\n"
    "            mbar_init(FULL(s), 1);\n"
    "            mbar_init(EMPTY(s), NC * 4 * CL); /* a warp of each consumer of each block of the cluster */\n"
    "        }\n"
    "        fence_mbarrier_init();\n"
    "    }\n"
    "#if CL > 1\n"
    "    cluster_sync();\n"
    "    const unsigned rank = cluster_rank();\n"
    "#else\n"
    "    __syncthreads();\n"
    "    const unsigned rank = 0;\n"
    "#endif\n"
    "    (void)rank;\n"
    "\n"
    "    if (wg == 0) { /* producer */\n"
    "        setmaxnreg_dec<40>();\n"
    "        if (lt == 0) {\n"
    "            for (int kt = 0; kt < KT; kt++) {\n"
    "                const int s = kt % ST;\n"
    "                if (kt >= ST)\n"
    "                    mbar_wait(EMPTY(s), ((kt / ST) + 1) & 1);\n"
    "                mbar_expect_tx(FULL(s), STAGE_BYTES);\n"
    "                tma_load(SA(s), &tmA, kt * BK, m0, FULL(s)); /* rows past M: zeros (bytes still count) */\n"
    "                LOAD_B\n"
    "            }\n"
    "        }\n"
    "        __syncwarp();\n"
    "    } else { /* consumer wg-1 */\n"
    "        setmaxnreg_inc<REGS_INC>();\n"
    "        float d[MI][BN / 2];\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < MI; i++)\n"
    "#pragma unroll\n"
    "            for (int j = 0; j < BN / 2; j++)\n"
    "                d[i][j] = 0.0f;\n"
    "        const int row0 = (wg - 1) * MI * 64; /* first row of this consumer within the tile */\n"
    "        const int warp = lt / 32, lane = lt % 32;\n"
    "        for (int kt = 0; kt < KT; kt++) {\n"
    "            const int s = kt % ST;\n"
    "            mbar_wait(FULL(s), (kt / ST) & 1);\n"
    "            wgmma_fence();\n"
    "#pragma unroll\n"
    "            for (int kk = 0; kk < BK / KS; kk++) {\n"
    "#pragma unroll\n"
    "                for (int i = 0; i < MI; i++) {\n"
    "                    const u64 da = desc(SA(s) + (row0 + i * 64) * 128 + kk * 32, 16, 1024);\n"
    "                    const u64 db = DESC_B(s, kk);\n"
    "                    WGMMA(d[i], da, db);\n"
    "                }\n"
    "            }\n"
    "            wgmma_commit();\n"
    "#if WAITD == 0\n"
    "            wgmma_wait<0>();\n"
    "            if (lane == 0)\n"
    "                RELEASE(s);\n"
    "#else\n"
    "            wgmma_wait<1>();\n"
    "            if (lane == 0 && kt > 0)\n"
    "                RELEASE((kt - 1) % ST);\n"
    "#endif\n"
    "        }\n"
    "        wgmma_wait<0>();\n"
    "\n"
    "        /* epilogue: accumulator j of m64 block i holds row 16*warp + lane/4 + 8*((j/2)%2), column\n"
    "           8*(j/4) + 2*(lane%4) + j%2 */\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < MI; i++) {\n"
    "#pragma unroll\n"
    "            for (int h = 0; h < 2; h++) {\n"
    "                const int r = m0 + row0 + i * 64 + warp * 16 + lane / 4 + 8 * h;\n"
    "                if (r >= M)\n"
    "                    continue;\n"
    "                float *crow = C + (size_t)r * N;\n"
    "#pragma unroll\n"
    "                for (int j = 0; j < BN / 8; j++) {\n"
    "                    const int c = n0 + 8 * j + 2 * (lane % 4);\n"
    "                    const float v0 = d[i][4 * j + 2 * h], v1 = d[i][4 * j + 2 * h + 1];\n"
    "                    if ((N % 2) == 0 && c + 1 < N) {\n"
    "                        *reinterpret_cast<float2 *>(crow + c) = make_float2(v0, v1);\n"
    "                    } else {\n"
    "                        if (c < N) crow[c] = v0;\n"
    "                        if (c + 1 < N) crow[c + 1] = v1;\n"
    "                    }\n"
    "                }\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "#if CL > 1\n"
    "    __syncwarp();\n"
    "    cluster_sync(); /* no block may exit while its peer can still multicast into it or arrive on it */\n"
    "#endif\n"
    "}\n";

static void emit_wgmma(cut_buf *b, const cut_gemm *g, int bn)
{
    const char *ty = g->dtype == CUT_DT_BF16 ? "bf16" : g->dtype == CUT_DT_TF32 ? "tf32" : "f16";
    const int ks = g->dtype == CUT_DT_TF32 ? 8 : 16;
    const int nacc = bn / 2;
    cut_buf_printf(b, "#ifndef CUT_EMU\nstatic __device__ __forceinline__ void wgmma_tile(float *d, u64 da, u64 db)\n{\n"
                      "    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n\"\n"
                      "                 \"wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s {",
                   nacc + 2, bn, ks, ty, ty);
    for (int i = 0; i < nacc; i++)
        cut_buf_printf(b, "%s%%%d", i ? ", " : "", i);
    if (g->dtype == CUT_DT_TF32)
        cut_buf_printf(b, "}, %%%d, %%%d, p, 1, 1;\\n}\"\n", nacc, nacc + 1);
    else
        cut_buf_printf(b, "}, %%%d, %%%d, p, 1, 1, 0, %d;\\n}\"\n", nacc, nacc + 1, g->layout == CUT_GEMM_NN);
    cut_buf_printf(b, "                 : ");
    for (int i = 0; i < nacc; i++)
        cut_buf_printf(b, "%s\"+f\"(d[%d])", i ? ", " : "", i);
    cut_buf_printf(b, "\n                 : \"l\"(da), \"l\"(db), \"r\"(1));\n}\n");
    /* the emulation: A and B from their descriptors, B MN-major for NN, D += A B */
    cut_buf_printf(b, "#else\nstatic __device__ __forceinline__ void wgmma_tile(float *d, u64 da, u64 db)\n"
                      "{ emu_wgmma(d, %d, %d, da, 0, db, 0, %d, 1, 1, 1); }\n#endif\n",
                   bn, g->dtype == CUT_DT_TF32 ? 2 : g->dtype == CUT_DT_BF16 ? 1 : 0, g->layout == CUT_GEMM_NN);
    cut_buf_printf(b, "#define WGMMA(d, da, db) wgmma_tile(d, da, db)\n");
}

/* B's loads and descriptors. NT: one K-major box of BN rows; with a cluster of 2, each block loads half the rows
 * and multicasts them. NN: BN/64 MN-major boxes of BK rows x 64 columns (descriptor: LBO = the stride between
 * boxes along N, SBO = 8 rows of 128 bytes; one k step of KS rows is KS*128 bytes on). */
static void emit_b(cut_buf *b, const cut_gemm *g, int cl)
{
    if (g->layout == CUT_GEMM_NT) {
        cut_buf_printf(b, "#define DESC_B(s, kk) desc(SB(s) + (kk) * 32, 16, 1024)\n");
        if (cl > 1)
            cut_buf_printf(b, "#define LOAD_B tma_load_mc(SB(s) + rank * (B_BYTES / 2), &tmB, kt * BK, n0 + (int)rank "
                              "* (BN / 2), FULL(s), 3);\n");
        else
            cut_buf_printf(b, "#define LOAD_B tma_load(SB(s), &tmB, kt * BK, n0, FULL(s));\n");
    } else {
        cut_buf_printf(b, "#define DESC_B(s, kk) desc(SB(s) + (kk) * KS * 128, BK * 128, 1024)\n");
        if (cl > 1)
            cut_buf_printf(b, "#define LOAD_B for (int j = (int)rank; j < BN / 64; j += CL) tma_load_mc(SB(s) + j * "
                              "BK * 128, &tmB, n0 + 64 * j, kt * BK, FULL(s), 3);\n");
        else
            cut_buf_printf(b, "#define LOAD_B for (int j = 0; j < BN / 64; j++) tma_load(SB(s) + j * BK * 128, &tmB, "
                              "n0 + 64 * j, kt * BK, FULL(s));\n");
    }
    /* a stage is free once every consumer warp of every block that writes into it has read it */
    if (cl > 1)
        cut_buf_printf(b, "#define RELEASE(s) { for (unsigned c_ = 0; c_ < CL; c_++) mbar_arrive_cluster(EMPTY(s), "
                          "c_); }\n");
    else
        cut_buf_printf(b, "#define RELEASE(s) mbar_arrive(EMPTY(s))\n");
}

static void fill_tma(const cut_gemm *g, const wg_geom *gm, int cl, cut_kernel_src *out)
{
    const int eb = elem_bytes(g);
    out->ntma = 2;
    out->tma[0] = (cut_tma_desc){.operand = 0, .elem_bytes = eb, .dims = {(unsigned long long)g->k,
                                 (unsigned long long)g->m}, .row_bytes = (unsigned long long)g->k * (unsigned)eb,
                                 .box = {(unsigned)gm->bk, (unsigned)gm->bm}, .swizzle = 128};
    if (g->layout == CUT_GEMM_NT)
        out->tma[1] = (cut_tma_desc){.operand = 1, .elem_bytes = eb, .dims = {(unsigned long long)g->k,
                                     (unsigned long long)g->n}, .row_bytes = (unsigned long long)g->k * (unsigned)eb,
                                     .box = {(unsigned)gm->bk, (unsigned)(gm->bn / cl)}, .swizzle = 128};
    else
        out->tma[1] = (cut_tma_desc){.operand = 1, .elem_bytes = eb, .dims = {(unsigned long long)g->n,
                                     (unsigned long long)g->k}, .row_bytes = (unsigned long long)g->n * (unsigned)eb,
                                     .box = {64, (unsigned)gm->bk}, .swizzle = 128};
}

static int codegen(const cut_gemm *g, const cut_sched *s, cut_kernel_src *out, cut_err *e)
{
    memset(out, 0, sizeof *out);
    if (check_shape(g, s, e) != 0)
        return cut_err_wrap(e, "codegen gemm wgmma");
    wg_geom gm;
    wg_geometry(g, s, &gm);
    const int *k = s->k;
    const int cl = k[K_CL];
    cut_buf b;
    cut_buf_init(&b);
    cut_emit_gemm_banner(&b, g, s, "Hopper (sm_90a): TMA + mbarrier pipeline, wgmma, producer/consumer warp groups.");
    cut_buf_printf(&b, "#define M %d\n#define N %d\n#define K %d\n", g->m, g->n, g->k);
    cut_buf_printf(&b, "#define BM %d\n#define BN %d\n#define BK %d\n#define KS %d\n#define MI %d\n#define NC %d\n",
                   gm.bm, gm.bn, gm.bk, gm.ks, k[K_MI], k[K_NC]);
    cut_buf_printf(&b, "#define ST %d\n#define WAITD %d\n#define GM %d\n#define CL %d\n#define REGS_INC %d\n",
                   k[K_ST], k[K_WAITD], k[K_GM], cl, k[K_NC] == 2 ? 232 : 240);
    if (cl > 1)
        cut_buf_printf(&b, "#define CLUSTER_ATTR __cluster_dims__(%d, 1, 1)\n", cl);
    else
        cut_buf_printf(&b, "#define CLUSTER_ATTR\n");
    cut_buf_append(&b, wg_head, strlen(wg_head));
    cut_buf_append(&b, cut_wgmma_text_ptx, strlen(cut_wgmma_text_ptx));
    cut_buf_append(&b, cut_wgmma_text_emu, strlen(cut_wgmma_text_emu));
    emit_wgmma(&b, g, gm.bn);
    emit_b(&b, g, cl);
    cut_buf_append(&b, wg_body, strlen(wg_body));
    out->src = b.data;
    snprintf(out->entry, sizeof out->entry, "cut_gemm");
    cut_gemm_geom cg;
    geometry(g, s, &cg);
    memcpy(out->grid, cg.grid, sizeof out->grid);
    out->block[0] = (unsigned)gm.threads;
    out->block[1] = out->block[2] = 1;
    out->smem_dynamic = (unsigned)gm.smem;
    out->uses_inline_ptx = 0; /* its PTX is emulated under CUT_EMU; the emulation runner refuses a cluster (cl=2) */
    out->tol_scale = 1.0;
    out->arch_a = 1;
    fill_tma(g, &gm, cl, out);
    return 0;
}

const cut_gemm_template cut_gemm_tpl_wgmma = {
    .name = "wgmma",
    .nknobs = K_N,
    .knob_name = knob_name,
    .applies = applies,
    .sample = sample,
    .mutate = mutate,
    .check = check,
    .geometry = geometry,
    .codegen = codegen,
};
