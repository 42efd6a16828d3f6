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
 * with wgmma's transpose flag), all in the TMA's 128-byte swizzle, which is what the descriptors declare. With A
 * stored K x M (TN, TT; fp16/bf16) the A tile is MN-major the same way: BM/64 boxes of BK rows of 64 elements of M,
 * read with wgmma's A-transpose flag. BK is
 * the 128-byte swizzle span: 64 fp16/bf16 or 32 tf32 elements. Elements past M, N or K are zero-filled by the TMA,
 * so no size needs to be a multiple of a tile; TMA needs 16-byte aligned rows (K, N for NN/TN and M for TN/TT,
 * times the element size a multiple of 16).
 *
 * tf32 NN is the exception: wgmma reads tf32 from shared memory K-major only, and an NN B is MN-major. The kernel
 * computes C^T = B^T A^T instead: wgmma's A operand is B^T, which each consumer thread loads into the registers of
 * its fragment with ld.shared from B's MN-major boxes (32 columns of N each; a row permutation keeps the loads free
 * of bank conflicts) and rounds to tf32; wgmma's B operand is A^T, i.e. A's K-major tile as TMA loads it, through a
 * descriptor. Then wgmma's n (the knob BN) runs along M: the tile is BN rows of M by NC * MI * 64 columns of N, and
 * the epilogue stores the accumulators transposed (scalar stores, 16-byte runs of a row). The fragments of one stage
 * take 16 MI registers, twice that with WAITD 1 (two sets, so that none is written while its wgmma may be in flight).
 * tf32 TT and TN take wgmma's A from registers the same way, loaded from A's MN-major boxes (32 M-columns each),
 * without the swap; TT's B is K-major (NT's), TN's B (MN-major) is copied K-major by each consumer (a_regs below).
 *
 * Tiles are numbered along M in groups of GM rows of tiles (blocks that run together share A and B in L2).
 *
 * Issue 21's extras: a strided batch (packed operands) makes both TMA maps 3-D, a plane a matrix, and the grid's y
 * the batch: block z loads its boxes from plane z (tma_load3) and moves C (and Cin) by z matrices. alpha and beta:
 * the epilogue stores EPI(acc, i) = alpha acc (+ beta Cin[i], Cin the work's separate fp32 input after C, read only
 * when beta != 0); without extras EPI is the accumulator itself and the kernel's text is what it was.
 *
 * Knobs: BN (wgmma n: 64..256), MI (m64 blocks per consumer: 1, 2), NC (consumer warp groups: 1, 2), ST (stages:
 * 2..6), WAITD (wgmma groups left in flight before a stage is released: 0, 1), GM (raster group: 1, 8, 16) and
 * CL (cluster size along M: 1, 2; with 2 the blocks of a cluster are launched together on neighbouring SMs and
 * each loads half of the B tile and multicasts it to both, halving B's L2 traffic) and SPLITK (k slices: 1, 2, 3,
 * 4, 6, 8, 16; the grid's z, each slice at least one k tile; the tile's last block to arrive adds the slices' fp32
 * partials from a static workspace, resets the tile's counter and runs the epilogue, alpha, beta and the batch
 * included, once: see "split-K" below). Schedules from before the knob (splitk 0) are splitk 1.
 *
 * What they trade. BM x BN: reuse of each loaded byte against registers (MI*BN/2 accumulators per thread, plus the
 * A fragments of tf32 NN) and
 * blocks to fill 132 SMs. ST: latency hiding against shared memory (one block per SM at most tiles). WAITD 1 keeps
 * the tensor cores busy across stage boundaries. NC 2 lets two warp groups share one B tile. SPLITK: blocks to fill
 * the SMs where the tiles cannot (M <= 64 LLM decode: one tile row, N / BN blocks) against the partials' round trip
 * through L2; the space offers it below two waves of the device's SMs only.
 *
 * Every PTX instruction sits in a helper of src/ops/gemm/wgmma_text.c, which under CUT_EMU implements it on the host
 * emulator as the PTX ISA documents it (mbarrier phases and tx-counts, TMA tile loads with the swizzle and zero
 * fill from the emulated map the emulation runner passes, wgmma from the descriptors in the accumulator fragment
 * layout), so the same source runs on the GPU and, with CL 1, under emulation (tests/test_gemm_wgmma_emu.c). The
 * kernel's head, a consumer's main loop and the wgmma tile sit there too: the conv template wgmma_conv
 * (src/ops/conv2d/wgmma_conv.c) is this kernel with another producer of A. */
#include "codegen/emit.h"
#include "ops/gemm/extras.h"
#include "ops/gemm/simt.h"
#include "ops/gemm/wgmma_persist.h"
#include "ops/gemm/wgmma_text.h"
#include "cutune/gemm_space.h"
#include "cutune/util.h"

#include "codegen/knobs.h"

#include <stdio.h>
#include <string.h>

enum { K_BN, K_MI, K_NC, K_ST, K_WAITD, K_GM, K_CL, K_SK, K_PP, K_N };

static const char *const knob_names[K_N] = {"bn", "mi", "nc", "st", "waitd", "gm", "cl", "splitk", "pp"};
static const int v_bn[] = {64, 128, 192, 256}; /* multiples of 64: NN loads B in boxes of 64 columns */
static const int v_mi[] = {1, 2};
static const int v_nc[] = {1, 2};
static const int v_st[] = {2, 3, 4, 5, 6};
static const int v_waitd[] = {0, 1};
static const int v_gm[] = {1, 8, 16};
static const int v_cl[] = {1, 2};
static const int v_sk[] = {1, 2, 3, 4, 6, 8, 16}; /* k slices (0, a schedule from before the knob: 1) */
static const int v_pp[] = {0, 1, 2};               /* a tile a block; persistent cooperative; ping-pong */

#define PICK(r, v) cut_pick(r, v, (int)CUT_ARRAY_LEN(v))
#define STEP(r, v, cur) cut_step_in(r, v, (int)CUT_ARRAY_LEN(v), cur)

#define SMEM_OPTIN_SM90 232448 /* bytes of dynamic shared memory a block may opt into on sm_90 */
#define SWZ 128                /* swizzle span in bytes: one row of a tile */
#define MAX_ACC 160            /* accumulators per consumer thread (registers after setmaxnreg: 232/240) */
#define MAX_WS_BYTES (64L << 20) /* largest split-K workspace (a static __device__ array), as wgmma_conv's */
#define SMS_DEFAULT 132          /* SMs to fill when the space is not told the device (an H100 SXM) */

static const char *knob_name(int knob) { return knob >= 0 && knob < K_N ? knob_names[knob] : "?"; }

/* What a record written before a knob existed means: splitk 1, pp 0 (a tile a block); the others are required. */
static int knob_default(int knob) { return knob == K_SK ? 1 : knob == K_PP ? 0 : -1; }

static int elem_bytes(const cut_gemm *g) { return (int)cut_dtype_size(g->dtype); }

static int applies(const cut_gemm *g, const cut_devlimits *d, cut_err *why)
{
    if (d && !(d->sm_major == 9 && d->sm_minor == 0))
        return cut_err_set(why, "the wgmma template needs sm_90a (Hopper); the device is sm_%d%d", d->sm_major,
                           d->sm_minor),
               0;
    if (g->dtype == CUT_DT_FP32)
        return cut_err_set(why, "the wgmma template computes on tensor cores: fp32 is the SIMT template's"), 0;
    return 1;
}

/* tf32 NN: wgmma reads tf32 operands K-major only, and B of NN is MN-major. The kernel computes C^T = B^T A^T
 * instead ("swap"): wgmma's A is B^T, its fragments loaded from B's MN-major tile into registers (wgmma takes A from
 * registers), wgmma's B is A^T, i.e. A's K-major tile as TMA loads it; the accumulators are stored transposed. Then
 * the knob bn (wgmma's n) is the tile's extent along M, and 64 x MI x NC its extent along N. */
static int swapped(const cut_gemm *g) { return g->dtype == CUT_DT_TF32 && g->layout == CUT_GEMM_NN; }

/* tf32 with A stored KxM (TN, TT): A is MN-major, so wgmma's A comes from registers, each consumer thread loading its
 * fragments from A's MN-major boxes as tf32 NN loads B's (no swap: wgmma's n is BN). TT's B is K-major (NT's); TN's
 * is MN-major too, and wgmma's B must come from shared memory: each consumer copies the stage's B tile transposed
 * (K-major, swizzled) into a buffer of its own with ld/st.shared, then fences it into the async proxy and waits on
 * an mbarrier of its 128 threads before its wgmmas read it. WAITD + 2 buffers a consumer: the one written at stage
 * kt was last read by the wgmmas of stage kt - WAITD - 2, which every warp of the consumer has waited for before it
 * arrived on the barrier of stage kt - 1, which the writer has passed. */
static int a_regs(const cut_gemm *g) { return g->dtype == CUT_DT_TF32 && g->layout != CUT_GEMM_NT; }
static int b_copied(const cut_gemm *g) { return g->dtype == CUT_DT_TF32 && g->layout == CUT_GEMM_TN; }

/* Everything that follows from the knobs. */
typedef struct wg_geom {
    int bm, bn, bk, ks;   /* C's tile, k per wgmma (16 for 16-bit types, 8 for tf32) */
    int swap;             /* C^T = B^T A^T (tf32 NN): wgmma's n runs along M */
    int areg, bcopy;      /* wgmma's A from registers (tf32 NN, TN, TT); B copied K-major by the consumers (tf32 TN) */
    int threads;
    int a_bytes, b_bytes; /* one stage's A and B tiles */
    int copy_bytes;       /* tf32 TN: the consumers' K-major copies of B tiles */
    int smem;             /* dynamic shared memory incl. 1024 bytes of alignment slack and the barriers */
    int acc;              /* accumulators per consumer thread */
    int frag;             /* registers of A fragments per consumer thread (swap: one stage's, two with WAITD 1) */
    unsigned tiles_m, tiles_n;
    int split, ktiles, kps; /* split-K: slices, k tiles of BK, k tiles a slice (the last may have fewer) */
    unsigned tiles_x;       /* the grid's x: tiles_m rounded up to the cluster, times tiles_n */
    unsigned ws_tiles;      /* split-K: the launch's output tiles (grid x times the batch), a counter each */
    int pp;                 /* 0 a tile a block; persistent: 1 cooperative, 2 ping-pong (see wgmma_persist.c) */
    long tiles;             /* the launch's output tiles, every plane */
    unsigned pblocks;       /* persistent: the grid, min(tiles, SMS_DEFAULT) */
    long ws_bytes;          /* split-K: every slice's fp32 partial of every tile */
} wg_geom;

static void wg_geometry(const cut_gemm *g, const cut_sched *s, wg_geom *o)
{
    const int *k = s->k;
    const int eb = elem_bytes(g) > 0 ? elem_bytes(g) : 2;
    o->pp = k[K_PP] == 1 || k[K_PP] == 2 ? k[K_PP] : 0;
    /* ping-pong: each consumer a tile of its own, MI m64 blocks tall */
    const int wn = k[K_BN] > 0 ? k[K_BN] : 64,
              wm = 64 * (k[K_MI] > 0 ? k[K_MI] : 1) * (o->pp == 2 ? 1 : k[K_NC] > 0 ? k[K_NC] : 1);
    o->swap = swapped(g);
    o->areg = a_regs(g);
    o->bcopy = b_copied(g);
    o->bn = o->swap ? wm : wn;
    o->bm = o->swap ? wn : wm;
    o->bk = SWZ / eb;
    o->ks = eb == 2 ? 16 : 8;
    o->threads = 128 * ((k[K_NC] > 0 ? k[K_NC] : 1) + 1);
    o->a_bytes = o->bm * SWZ;
    o->b_bytes = o->bn * SWZ;
    const int st = k[K_ST] > 0 ? k[K_ST] : 1;
    const int nc = k[K_NC] > 0 ? k[K_NC] : 1, waitd = k[K_WAITD] == 1 ? 1 : 0;
    o->copy_bytes = o->bcopy ? nc * (waitd + 2) * o->b_bytes : 0;
    o->smem = 1024 + st * (o->a_bytes + o->b_bytes) + o->copy_bytes + 2 * st * 8 + (o->bcopy ? nc * 8 : 0);
    o->acc = (k[K_MI] > 0 ? k[K_MI] : 1) * wn / 2;
    o->frag = o->areg ? (waitd + 1) * (k[K_MI] > 0 ? k[K_MI] : 1) * (o->bk / o->ks) * 4 : 0;
    o->tiles_m = (unsigned)((g->m + o->bm - 1) / o->bm);
    o->tiles_n = (unsigned)((g->n + o->bn - 1) / o->bn);
    o->split = k[K_SK] > 1 ? k[K_SK] : 1;
    o->ktiles = (g->k + o->bk - 1) / o->bk;
    o->kps = (o->ktiles + o->split - 1) / o->split;
    const unsigned cl = k[K_CL] == 2 ? 2 : 1;
    const unsigned batch = (unsigned)(cut_gemm_batch(g) > 0 ? cut_gemm_batch(g) : 1);
    o->tiles_x = (o->tiles_m + cl - 1) / cl * cl * o->tiles_n;
    o->ws_tiles = o->tiles_x * batch;
    o->ws_bytes = o->split > 1 ? (long)o->split * o->ws_tiles * o->bm * o->bn * 4 : 0;
    if (o->split > 1) /* the reduction's barrier (RED), and 8 bytes for its static `last`, which counts against the
                         same opt-in limit as the dynamic shared memory */
        o->smem += 16;
    if (o->pp == 2) /* the consumers' turns (TURN) */
        o->smem += nc * 8;
    o->tiles = (long)o->tiles_m * o->tiles_n * batch;
    o->pblocks = o->tiles < SMS_DEFAULT ? (unsigned)o->tiles : SMS_DEFAULT;
}

/* Split-K is offered where the output tiles cannot fill the GPU: always below one wave of the device's SMs, now and
 * then below two, never above (check refuses it there, so large shapes' spaces do not grow). */
static int sms_of(const cut_devlimits *d) { return d && d->sm_count > 0 ? d->sm_count : SMS_DEFAULT; }

static void sample_split(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    wg_geom gm;
    s->k[K_SK] = 1;
    wg_geometry(g, s, &gm);
    const long tiles = (long)gm.ws_tiles, sms = sms_of(d);
    if (tiles < sms || (tiles < 2 * sms && cut_rng_below(r, 4) == 0))
        s->k[K_SK] = PICK(r, v_sk);
}

/* Persistence is offered where the plain kernel runs (A from shared memory) and the tiles fill the device's SMs
 * more than once (check refuses it below), without a cluster or split-K; ping-pong with 2 consumers. */
static void sample_pp(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    const int pp = PICK(r, v_pp);
    if (pp == 0 || a_regs(g))
        return;
    cut_sched t = *s;
    t.k[K_PP] = pp;
    t.k[K_CL] = t.k[K_SK] = 1;
    if (pp == 2)
        t.k[K_NC] = 2;
    wg_geom gm;
    wg_geometry(g, &t, &gm);
    if (gm.tiles > sms_of(d))
        *s = t;
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
    s->k[K_PP] = 0;
    sample_pp(g, d, r, s);
    if (s->k[K_PP] == 0)
        sample_split(g, d, r, s);
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
    case K_CL: k[K_CL] = STEP(r, v_cl, k[K_CL]); break;
    case K_PP: k[K_PP] = STEP(r, v_pp, k[K_PP]); break;
    default: k[K_SK] = STEP(r, v_sk, k[K_SK] > 1 ? k[K_SK] : 1); break;
    }
}

/* A slice needs at least one k tile (slices of KPS tiles, the last one what is left), and the workspace a bound. */
static int check_split(const wg_geom *gm, cut_err *e)
{
    if (gm->split <= 1)
        return 0;
    if ((long)(gm->split - 1) * gm->kps >= gm->ktiles)
        return cut_err_set(e, "wgmma: splitk=%d in slices of %d k tiles leaves the last of K's %d tiles of %d empty",
                           gm->split, gm->kps, gm->ktiles, gm->bk);
    if (gm->ws_bytes > MAX_WS_BYTES)
        return cut_err_set(e, "wgmma: the split-K workspace of splitk=%d would take %ld bytes, over %ld", gm->split,
                           gm->ws_bytes, MAX_WS_BYTES);
    return 0;
}

/* The rules that hold whatever the device: dtype/layout, knob lists, TMA alignment, registers, shared memory. */
static int check_shape(const cut_gemm *g, const cut_sched *s, cut_err *e)
{
    if (!applies(g, NULL, e))
        return -1;
    if (g->m <= 0 || g->n <= 0 || g->k <= 0)
        return cut_err_set(e, "wgmma: sizes must be positive (M=%d N=%d K=%d)", g->m, g->n, g->k);
    if (cut_gemm_batch(g) > 65535)
        return cut_err_set(e, "wgmma: a batch of %d is over the grid's 65535 blocks along y (one plane each)",
                           cut_gemm_batch(g));
    const int *k = s->k;
    if (!CUT_IN(v_bn, k[K_BN]) || !CUT_IN(v_mi, k[K_MI]) || !CUT_IN(v_nc, k[K_NC]) || !CUT_IN(v_st, k[K_ST]) ||
        !CUT_IN(v_waitd, k[K_WAITD]) || !CUT_IN(v_gm, k[K_GM]) || !CUT_IN(v_cl, k[K_CL]) ||
        (k[K_SK] != 0 && !CUT_IN(v_sk, k[K_SK])) || !CUT_IN(v_pp, k[K_PP]))
        return cut_err_set(e, "wgmma: a knob is off its list (bn=%d mi=%d nc=%d st=%d waitd=%d gm=%d cl=%d "
                              "splitk=%d pp=%d)", k[K_BN], k[K_MI], k[K_NC], k[K_ST], k[K_WAITD], k[K_GM], k[K_CL],
                           k[K_SK], k[K_PP]);
    if (k[K_PP] != 0 && a_regs(g))
        return cut_err_set(e, "wgmma: pp=%d (persistent) runs the kernel that reads A from shared memory; tf32 %s "
                              "reads it from registers", k[K_PP], cut_gemm_layout_name(g->layout));
    if (k[K_PP] != 0 && (k[K_CL] == 2 || k[K_SK] > 1))
        return cut_err_set(e, "wgmma: pp=%d (persistent) takes neither a cluster (cl=%d) nor split-K (splitk=%d)",
                           k[K_PP], k[K_CL], k[K_SK]);
    if (k[K_PP] == 2 && k[K_NC] != 2)
        return cut_err_set(e, "wgmma: pp=2 (ping-pong) alternates 2 consumer warp groups; nc=%d", k[K_NC]);
    const int eb = elem_bytes(g);
    if (((long)g->k * eb) % 16 != 0)
        return cut_err_set(e, "wgmma: TMA needs 16-byte aligned rows: K=%d x %d bytes is not a multiple of 16", g->k,
                           eb);
    if (cut_gemm_a_trans(g) && ((long)g->m * eb) % 16 != 0)
        return cut_err_set(e, "wgmma: TMA needs 16-byte aligned rows: M=%d x %d bytes (A's rows, stored KxM) is not "
                              "a multiple of 16", g->m, eb);
    if (!cut_gemm_b_trans(g) && ((long)g->n * eb) % 16 != 0)
        return cut_err_set(e, "wgmma: TMA needs 16-byte aligned rows: N=%d x %d bytes (B's rows) is not a multiple of "
                              "16", g->n, eb);
    wg_geom gm;
    wg_geometry(g, s, &gm);
    if (gm.acc > MAX_ACC)
        return cut_err_set(e, "wgmma: %d accumulators per thread (mi=%d x bn=%d / 2) exceed %d registers' worth",
                           gm.acc, k[K_MI], k[K_BN], MAX_ACC);
    if (gm.acc + gm.frag > MAX_ACC)
        return cut_err_set(e, "wgmma: %d accumulators and %d registers of A fragments per thread (tf32 %s: mi=%d, "
                                "waitd=%d) exceed %d registers' worth", gm.acc, gm.frag,
                           cut_gemm_layout_name(g->layout), k[K_MI], k[K_WAITD], MAX_ACC);
    if (gm.smem > SMEM_OPTIN_SM90)
        return cut_err_set(e, "wgmma: %d stages of %d + %d bytes%s need %d bytes of shared memory, over %d", k[K_ST],
                           gm.a_bytes, gm.b_bytes, gm.bcopy ? " and the consumers' copies of B (tf32 TN)" : "",
                           gm.smem, SMEM_OPTIN_SM90);
    return check_split(&gm, e);
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
    if (gm.pp && gm.tiles <= sms_of(d))
        return cut_err_set(e, "wgmma: pp=%d (persistent) for %ld output tiles, which one wave of the %d SMs holds: a "
                              "tile a block", gm.pp, gm.tiles, sms_of(d));
    if (d && gm.pp && sms_of(d) != SMS_DEFAULT)
        return cut_err_set(e, "wgmma: pp=%d launches a persistent grid of %d blocks, one an SM of an H100/H200; the "
                              "device has %d SMs", gm.pp, SMS_DEFAULT, sms_of(d));
    if (d && gm.split > 1 && (long)gm.ws_tiles >= 2L * sms_of(d))
        return cut_err_set(e, "wgmma: splitk=%d for %u output tiles, which fill the %d SMs twice without it", gm.split,
                           gm.ws_tiles, sms_of(d));
    return 0;
}

static void geometry(const cut_gemm *g, const cut_sched *s, cut_gemm_geom *out)
{
    wg_geom gm;
    wg_geometry(g, s, &gm);
    const int cl = s->k[K_CL] == 2 ? 2 : 1;
    *out = (cut_gemm_geom){
        .bm = gm.bm, .bn = gm.bn, .bk = gm.bk, .threads = gm.threads, .stages = s->k[K_ST],
        .smem_bytes = gm.smem, .regs_est = gm.acc + gm.frag + 40, .elem_bytes = elem_bytes(g), .tensor_cores = 2,
        .grid = {((gm.tiles_m + (unsigned)cl - 1) / (unsigned)cl) * (unsigned)cl * gm.tiles_n,
                 (unsigned)cut_gemm_batch(g), (unsigned)gm.split},
    };
    if (gm.pp) { /* persistent: every tile of every plane from one row of blocks */
        out->grid[0] = gm.pblocks;
        out->grid[1] = out->grid[2] = 1;
        out->walked_tiles = gm.tiles;
    }
}

/* ---- code generation ---- */

/* The kernel up to a consumer's first statement: the tile raster, the barriers, the producer. WGMMA(d, da, db) (or
 * WGMMA_RS), DESC_B, LOAD_B and RELEASE come before it (they depend on BN, the layout and the cluster). */
static const char wg_body[] =
    "\n"
    "extern \"C\" __global__ void __launch_bounds__(THREADS, 1) CLUSTER_ATTR\n"
    "cut_gemm(const __grid_constant__ cut_tmap tmA, const __grid_constant__ cut_tmap tmB, float *__restrict__ C\n"
    "         CIN_PARAM)\n"
    "{\n"
    "    extern __shared__ unsigned char smem_raw[];\n"
    "    const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u; /* 128-byte swizzle atoms: 1024-aligned */\n"
    "    /* full[ST] then empty[ST] (and tf32 TN's copied[NC]), 8 bytes each, after the stages (and TN's copies) */\n"
    "    const unsigned bars = base + ST * STAGE_BYTES + COPY_BYTES;\n"
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
    "#if BATCH > 1\n"
    "    const int z = blockIdx.y; /* the batch: A and B its planes of the 3-D maps (LOAD_A, LOAD_B), C (Cin) moved */\n"
    "    C += (size_t)z * STRIDE_C;\n"
    "#if HAS_BETA\n"
    "    Cin += (size_t)z * STRIDE_C;\n"
    "#endif\n"
    "#endif\n";

/* The rest of the kernel's head: barrier init (a split-K kernel inits its RED between the two parts), producer. */
static const char wg_body_init[] =
    "\n"
    "    if (threadIdx.x == 0) {\n"
    "        for (int s = 0; s < ST; s++) {\n"
    "            mbar_init(FULL(s), 1);\n"
    "            mbar_init(EMPTY(s), NC * 4 * CL); /* a warp of each consumer of each block of the cluster */\n"
    "        }\n";

static const char wg_body_producer[] =
    "#if BCOPY\n"
    "        for (int c = 0; c < NC; c++)\n"
    "            mbar_init(COPIED(c), 128); /* the consumer's threads: its K-major copy of B is written */\n"
    "#endif\n"
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
    "            PRODUCER_UNROLL\n"
    "            for (int kt = 0; kt < KT; kt++) {\n"
    "                const int s = kt % ST;\n"
    "                if (kt >= ST)\n"
    "                    mbar_wait(EMPTY(s), ((kt / ST) + 1) & 1);\n"
    "                mbar_expect_tx(FULL(s), STAGE_BYTES);\n"
    "                LOAD_A /* rows past M: zeros (bytes still count) */\n"
    "                LOAD_B\n"
    "            }\n"
    "        }\n"
    "        __syncwarp();\n"
    "    } else { /* consumer wg-1 */\n"
    "        setmaxnreg_inc<REGS_INC>();\n";

/* The epilogue after a consumer's main loop (cut_wgmma_text_consumer_loop, or wg_consumer_swap for AREG): its
 * accumulators stored as rows of C, row EROW of the m64 block (the fragment layout's, or AREG's permutation). */
static const char wg_consumer_epi[] =
    "        /* epilogue: accumulator j of m64 block i holds row EROW(warp, lane / 4, (j / 2) % 2) of the block,\n"
    "           column 8 (j / 4) + 2 (lane % 4) + j % 2 */\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < MI; i++) {\n"
    "#pragma unroll\n"
    "            for (int h = 0; h < 2; h++) {\n"
    "                const int r = m0 + row0 + i * 64 + EROW(warp, lane / 4, h);\n"
    "                if (r >= M)\n"
    "                    continue;\n"
    "                float *crow = C + (size_t)r * N;\n"
    "#pragma unroll\n"
    "                for (int j = 0; j < BN / 8; j++) {\n"
    "                    const int c = n0 + 8 * j + 2 * (lane % 4);\n"
    "                    const float v0 = d[i][4 * j + 2 * h], v1 = d[i][4 * j + 2 * h + 1];\n"
    "                    if ((N % 2) == 0 && c + 1 < N) {\n"
    "                        *reinterpret_cast<float2 *>(crow + c) =\n"
    "                            make_float2(EPI(v0, (size_t)r * N + c), EPI(v1, (size_t)r * N + c + 1));\n"
    "                    } else {\n"
    "                        if (c < N) crow[c] = EPI(v0, (size_t)r * N + c);\n"
    "                        if (c + 1 < N) crow[c + 1] = EPI(v1, (size_t)r * N + c + 1);\n"
    "                    }\n"
    "                }\n"
    "            }\n"
    "        }\n";

/* wgmma's A from registers (tf32 NN as C^T = B^T A^T, SWAP; tf32 TN and TT, AREG): one k tile of stage kt % ST into
 * the accumulators d, A's fragments read with ld.shared from FRAG_TILE, the MN-major boxes of B (SWAP) or A (AREG),
 * wgmma's B through DESC_RS: A's K-major tile (SWAP), B's (TT), or the consumer's K-major copy tb of B's MN-major
 * tile (TN, BCOPY). The fragment of m64 block i holds rows NROW(warp, lane / 4, h) of the consumer's 64: a
 * permutation of the tile's rows (SWAP: columns) that makes each ld.shared free of bank conflicts (the 8 lanes of
 * one k row read two 16-byte chunks 64 bytes apart, which the 128-byte swizzle of the 4 k rows spreads over all 8
 * chunks), at the price of 16-byte instead of 32-byte runs in the epilogue's stores. af: the stage's fragments,
 * registers apart from those of the stage whose wgmma may still be in flight (WAITD 1). */
#define WG_STR(...) #__VA_ARGS__
#define WG_XSTR(...) WG_STR(__VA_ARGS__)
static const char wg_swap_stage[] =
    "#define NROW(w, g, h) " WG_XSTR(CUT_WGMMA_NROW(w, g, h)) "\n"
    "#define SWAP_LDS(n, k) " WG_XSTR(CUT_WGMMA_SWAP_LDS(n, k)) "\n"
    "#define TRANS_STS(n, k) " WG_XSTR(CUT_WGMMA_TRANS_STS(n, k)) "\n"
    "#define TRANS_K(lane, q) " WG_XSTR(CUT_WGMMA_TRANS_K(lane, q)) "\n"
    "static __device__ __forceinline__ void swap_stage(float (&d)[MI][WN / 2], unsigned (&af)[MI][BK / KS][4],\n"
    "                                                  unsigned base, unsigned bars, int kt, int row0, int warp,\n"
    "                                                  int lane)\n"
    "{\n"
    "    const int s = kt % ST, g = lane / 4, t = lane % 4;\n"
    "    mbar_wait(FULL(s), (kt / ST) & 1);\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < MI; i++)\n"
    "#pragma unroll\n"
    "        for (int kk = 0; kk < BK / KS; kk++)\n"
    "#pragma unroll\n"
    "            for (int r = 0; r < 4; r++) { /* A fragment: (row g [+ 8], k t [+ 4]) */\n"
    "                const int n = row0 + i * 64 + NROW(warp, g, r & 1), k = kk * KS + t + 4 * (r >> 1);\n"
    "                af[i][kk][r] = to_tf32(lds32(FRAG_TILE(s) + SWAP_LDS(n, k)));\n"
    "            }\n"
    "#if BCOPY\n"
    "    /* B's MN-major tile into this consumer's K-major copy (wgmma reads tf32 K-major only), rounded to tf32; a\n"
    "       warp 32 columns x 4 rows at a time; the copy then fenced into the async proxy and waited for */\n"
    "    const int c = row0 / (MI * 64);\n"
    "    const unsigned tb = COPY(c, kt % NCOPY);\n"
    "#pragma unroll 1\n"
    "    for (int p = warp; p < (BN / 32) * (BK / 4); p += 4) {\n"
    "        const int n = (p / (BK / 4)) * 32 + lane;\n"
    "#pragma unroll\n"
    "        for (int q = 0; q < 4; q++) {\n"
    "            const int k = (p % (BK / 4)) * 4 + TRANS_K(lane, q);\n"
    "            sts32(tb + TRANS_STS(n, k), to_tf32(lds32(SB(s) + SWAP_LDS(n, k))));\n"
    "        }\n"
    "    }\n"
    "    fence_proxy_async();\n"
    "    mbar_arrive(COPIED(c));\n"
    "    mbar_wait(COPIED(c), kt & 1);\n"
    "#endif\n"
    "    wgmma_fence();\n"
    "#pragma unroll\n"
    "    for (int kk = 0; kk < BK / KS; kk++)\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < MI; i++)\n"
    "            WGMMA_RS(d[i], af[i][kk], DESC_RS(s, kk));\n"
    "    wgmma_commit();\n"
    "#if WAITD == 0\n"
    "    wgmma_wait<0>();\n"
    "    if (lane == 0)\n"
    "        RELEASE(s);\n"
    "#else\n"
    "    wgmma_wait<1>();\n"
    "    if (lane == 0 && kt > 0)\n"
    "        RELEASE((kt - 1) % ST);\n"
    "#endif\n"
    "}\n";

/* A consumer whose wgmma takes A from registers. SWAP (C^T = B^T A^T, tf32 NN): its 64 MI columns of the tile as
 * wgmma's rows, the tile's BM rows as wgmma's n; the accumulators stored transposed. AREG (tf32 TN, TT): its 64 MI
 * rows, wgmma's n the tile's BN columns, stored as rows of C in the row permutation of the fragments. */
static const char wg_consumer_swap[] =
    "        float d[MI][WN / 2];\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < MI; i++)\n"
    "#pragma unroll\n"
    "            for (int j = 0; j < WN / 2; j++)\n"
    "                d[i][j] = 0.0f;\n"
    "        const int row0 = (wg - 1) * MI * 64; /* first column of the tile (row of C^T) of this consumer */\n"
    "        const int warp = lt / 32, lane = lt % 32;\n"
    "        unsigned af0[MI][BK / KS][4];\n"
    "#if WAITD == 0\n"
    "        for (int kt = 0; kt < KT; kt++)\n"
    "            swap_stage(d, af0, base, bars, kt, row0, warp, lane);\n"
    "#else\n"
    "        /* stages alternate between two sets of fragment registers, so that no path of the control flow writes\n"
    "           a set whose wgmma may be in flight (ptxas would serialize the wgmmas); an odd last stage starts with\n"
    "           none in flight, its fragments' registers then being the compiler's choice */\n"
    "        unsigned af1[MI][BK / KS][4];\n"
    "        int kt = 0;\n"
    "        for (; kt + 1 < KT; kt += 2) {\n"
    "            swap_stage(d, af0, base, bars, kt, row0, warp, lane);\n"
    "            swap_stage(d, af1, base, bars, kt + 1, row0, warp, lane);\n"
    "        }\n"
    "        if (kt < KT) {\n"
    "            wgmma_wait<0>();\n"
    "            swap_stage(d, af0, base, bars, kt, row0, warp, lane);\n"
    "        }\n"
    "#endif\n"
    "        wgmma_wait<0>();\n"
    "\n";

/* SWAP's epilogue (wg_consumer_swap's, tf32 NN): the accumulators stored transposed. */
static const char wg_swap_epi[] =
    "        /* epilogue: accumulator j of m64 block i holds C^T's row NROW(warp, lane / 4, (j / 2) % 2), i.e.\n"
    "           column n0 + row0 + 64 i + that of C, and C^T's column 8 (j / 4) + 2 (lane % 4) + j % 2, i.e. that\n"
    "           row of C */\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < MI; i++) {\n"
    "#pragma unroll\n"
    "            for (int h = 0; h < 2; h++) {\n"
    "                const int c = n0 + row0 + i * 64 + NROW(warp, lane / 4, h);\n"
    "                if (c >= N)\n"
    "                    continue;\n"
    "#pragma unroll\n"
    "                for (int j = 0; j < BM / 8; j++) {\n"
    "                    const int r = m0 + 8 * j + 2 * (lane % 4);\n"
    "                    if (r < M)\n"
    "                        C[(size_t)r * N + c] = EPI(d[i][4 * j + 2 * h], (size_t)r * N + c);\n"
    "                    if (r + 1 < M)\n"
    "                        C[(size_t)(r + 1) * N + c] = EPI(d[i][4 * j + 2 * h + 1], (size_t)(r + 1) * N + c);\n"
    "                }\n"
    "            }\n"
    "        }\n";

static const char wg_end[] =
    "    }\n"
    "#if CL > 1\n"
    "    __syncwarp();\n"
    "    cluster_sync(); /* no block may exit while its peer can still multicast into it or arrive on it */\n"
    "#endif\n"
    "}\n";

/* tf32 NN's wgmma (SWAP): m64 x wn x k8, A from the four registers of the thread's fragment, B from a descriptor. */
static void emit_wgmma_rs(cut_buf *b, int wn)
{
    const int nacc = wn / 2;
    cut_buf_printf(b, "#ifndef CUT_EMU\n"
                      "static __device__ __forceinline__ void wgmma_tile_rs(float *d, const unsigned *a, u64 db)\n{\n"
                      "    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n\"\n"
                      "                 \"wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32 {",
                   nacc + 5, wn);
    for (int i = 0; i < nacc; i++)
        cut_buf_printf(b, "%s%%%d", i ? ", " : "", i);
    cut_buf_printf(b, "}, {%%%d, %%%d, %%%d, %%%d}, %%%d, p, 1, 1;\\n}\"\n", nacc, nacc + 1, nacc + 2, nacc + 3,
                   nacc + 4);
    cut_buf_printf(b, "                 : ");
    for (int i = 0; i < nacc; i++)
        cut_buf_printf(b, "%s\"+f\"(d[%d])", i ? ", " : "", i);
    cut_buf_printf(b, "\n                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(db), "
                      "\"r\"(1));\n}\n");
    cut_buf_printf(b, "#else\n"
                      "static __device__ __forceinline__ void wgmma_tile_rs(float *d, const unsigned *a, u64 db)\n"
                      "{ emu_wgmma(d, %d, 2, 0, a, db, 0, 0, 1, 1, 1); }\n#endif\n", wn);
    cut_buf_printf(b, "#define WGMMA_RS(d, a, db) wgmma_tile_rs(d, a, db)\n");
}

/* B's loads and descriptors. NT: one K-major box of BN rows; with a cluster of 2, each block loads half the rows
 * and multicasts them. NN: BN/BOXN MN-major boxes of BK rows x BOXN = 128 bytes of columns (64 fp16/bf16, 32 tf32;
 * descriptor: LBO = the stride between boxes along N, SBO = 8 rows of 128 bytes; one k step of KS rows is KS*128
 * bytes on; tf32 NN reads them with ld.shared instead, SWAP). */
static void emit_b(cut_buf *b, const cut_gemm *g, int cl, const char *kc)
{
    /* a batch: 3-D maps, the block's plane z as the outer coordinate */
    const int bz = cut_gemm_batch(g) > 1;
    const char *ld = bz ? "tma_load3" : "tma_load", *mc = bz ? "tma_load3_mc" : "tma_load_mc", *z = bz ? " z," : "";
    if (cut_gemm_b_trans(g)) {
        cut_buf_printf(b, "#define DESC_B(s, kk) desc(SB(s) + (kk) * 32, 16, 1024)\n");
        if (cl > 1)
            cut_buf_printf(b, "#define LOAD_B %s(SB(s) + rank * (B_BYTES / 2), &tmB, %s * BK, n0 + (int)rank * (BN / "
                              "2),%s FULL(s), 3);\n", mc, kc, z);
        else
            cut_buf_printf(b, "#define LOAD_B %s(SB(s), &tmB, %s * BK, n0,%s FULL(s));\n", ld, kc, z);
    } else {
        /* tf32's boxes are 32 columns wide: up to 8 a stage, which the producer's 40 registers cannot hold unrolled */
        const int boxn = SWZ / elem_bytes(g);
        const char *unroll = boxn < 64 ? "_Pragma(\"unroll 1\") " : "";
        cut_buf_printf(b, "#define DESC_B(s, kk) desc(SB(s) + (kk) * KS * 128, BK * 128, 1024)\n");
        if (cl > 1)
            cut_buf_printf(b, "#define LOAD_B %sfor (int j = (int)rank; j < BN / %d; j += CL) %s(SB(s) + j * BK * 128, "
                              "&tmB, n0 + %d * j, %s * BK,%s FULL(s), 3);\n", unroll, boxn, mc, boxn, kc, z);
        else
            cut_buf_printf(b, "#define LOAD_B %sfor (int j = 0; j < BN / %d; j++) %s(SB(s) + j * BK * 128, &tmB, n0 + "
                              "%d * j, %s * BK,%s FULL(s));\n", unroll, boxn, ld, boxn, kc, z);
    }
    /* a stage is free once every consumer warp of every block that writes into it has read it */
    if (cl > 1)
        cut_buf_printf(b, "#define RELEASE(s) { for (unsigned c_ = 0; c_ < CL; c_++) mbar_arrive_cluster(EMPTY(s), "
                          "c_); }\n");
    else
        cut_buf_printf(b, "#define RELEASE(s) mbar_arrive(EMPTY(s))\n");
}

/* A's loads. K-major (NN, NT): one box of BM rows of 128 bytes (BK elements of K). MN-major (TN, TT, A stored
 * K x M): boxes of BK rows of 128 bytes = 64 elements of M (fp16/bf16, read by wgmma with its A-transpose flag) or
 * 32 (tf32, read into registers as A's fragments). */
static void emit_a(cut_buf *b, const cut_gemm *g, const char *kc)
{
    const int bz = cut_gemm_batch(g) > 1, boxm = SWZ / elem_bytes(g);
    const char *ld = bz ? "tma_load3" : "tma_load", *z = bz ? " z," : "";
    if (cut_gemm_a_trans(g)) /* tf32: boxes of 32 columns, up to 8 a stage (see emit_b) */
        cut_buf_printf(b, "#define LOAD_A %sfor (int j = 0; j < BM / %d; j++) %s(SA(s) + j * BK * 128, &tmA, m0 + %d * "
                          "j, %s * BK,%s FULL(s));\n", boxm < 64 ? "_Pragma(\"unroll 1\") " : "", boxm, ld, boxm, kc,
                       z);
    else
        cut_buf_printf(b, "#define LOAD_A %s(SA(s), &tmA, %s * BK, m0,%s FULL(s));\n", ld, kc, z);
}

/* The maps of A and B (box shapes as emit_a and emit_b load them); a batch makes them 3-D, one plane a matrix. */
static void fill_tma(const cut_gemm *g, const wg_geom *gm, int cl, cut_kernel_src *out)
{
    const int eb = elem_bytes(g);
    out->ntma = 2;
    if (cut_gemm_a_trans(g))
        out->tma[0] = (cut_tma_desc){.operand = 0, .elem_bytes = eb, .dims = {(unsigned long long)g->m,
                                     (unsigned long long)g->k}, .row_bytes = (unsigned long long)g->m * (unsigned)eb,
                                     .box = {(unsigned)(SWZ / eb), (unsigned)gm->bk}, .swizzle = 128};
    else
        out->tma[0] = (cut_tma_desc){.operand = 0, .elem_bytes = eb, .dims = {(unsigned long long)g->k,
                                     (unsigned long long)g->m}, .row_bytes = (unsigned long long)g->k * (unsigned)eb,
                                     .box = {(unsigned)gm->bk, (unsigned)gm->bm}, .swizzle = 128};
    if (cut_gemm_b_trans(g))
        out->tma[1] = (cut_tma_desc){.operand = 1, .elem_bytes = eb, .dims = {(unsigned long long)g->k,
                                     (unsigned long long)g->n}, .row_bytes = (unsigned long long)g->k * (unsigned)eb,
                                     .box = {(unsigned)gm->bk, (unsigned)(gm->bn / cl)}, .swizzle = 128};
    else
        out->tma[1] = (cut_tma_desc){.operand = 1, .elem_bytes = eb, .dims = {(unsigned long long)g->n,
                                     (unsigned long long)g->k}, .row_bytes = (unsigned long long)g->n * (unsigned)eb,
                                     .box = {(unsigned)(SWZ / eb), (unsigned)gm->bk}, .swizzle = 128};
    if (cut_gemm_batch(g) > 1)
        for (int i = 0; i < 2; i++) {
            out->tma[i].planes = (unsigned long long)cut_gemm_batch(g);
            out->tma[i].plane_bytes = (unsigned long long)cut_gemm_stride(g, i ? 'B' : 'A') * (unsigned)eb;
        }
}

/* The macros of a kernel whose wgmma takes A from registers (swap_stage, wg_consumer_swap): wgmma's n, the tile its
 * A fragments come from, wgmma's B descriptor and, for tf32 TN, the consumers' K-major copies of B and their
 * barriers (after the stages: 1024-byte aligned, as B_BYTES is a multiple of 8192). */
static void emit_areg(cut_buf *b, const wg_geom *gm)
{
    cut_buf_printf(b, "#define WN %s /* wgmma's n */\n#define FRAG_TILE(s) %s\n", gm->swap ? "BM" : "BN",
                   gm->swap ? "SB(s)" : "SA(s)");
    if (gm->swap)
        cut_buf_printf(b, "#define DESC_RS(s, kk) desc(SA(s) + (kk) * 32, 16, 1024)\n");
    else if (gm->bcopy)
        cut_buf_printf(b, "#define AREG 1 /* A from registers, loaded from A's MN-major boxes */\n#define BCOPY 1\n"
                          "#define NCOPY (WAITD + 2) /* K-major copies of B a consumer cycles through */\n"
                          "#define COPY(c, j) (base + ST * STAGE_BYTES + ((c) * NCOPY + (j)) * B_BYTES)\n"
                          "#define COPIED(c) (bars + 8u * (2 * ST + (c)))\n"
                          "#define DESC_RS(s, kk) desc(tb + (kk) * 32, 16, 1024)\n");
    else
        cut_buf_printf(b, "#define AREG 1 /* A from registers, loaded from A's MN-major boxes */\n"
                          "#define DESC_RS(s, kk) DESC_B(s, kk)\n");
    if (!gm->swap) /* the epilogue's rows: the fragments' permutation */
        cut_buf_printf(b, "#define EROW(w, g, h) NROW(w, g, h)\n");
}

/* ---- split-K (KSPLIT > 1) ----
 * Slice blockIdx.z walks k tiles [z KPS, z KPS + nkt) (the producer's coordinates kt0 + kt, the stages and phases
 * counted from the slice's first tile). Its consumers then publish their fp32 accumulators to the workspace cut_ws
 * ([slice][tile][accumulator][consumer thread]: coalesced, no bounds to test) and count the block in on the tile's
 * counter (a thread whose rows all lie past M, SPLIT_LIVE false, publishes and reads nothing: at M = 16 three of
 * a consumer's four warps); the last block of the tile to arrive adds every slice's partial in slice order
 * (bitwise the same whichever block comes last), resets the counter for the next launch and runs the epilogue
 * (alpha, beta Cin, the batch's C), so that it applies once. No block waits for another, no atomics touch C. The
 * consumers meet on an mbarrier of their own (RED): the producer warp group has left, so __syncthreads would wait
 * for it forever. This is wgmma_conv's reduction (src/ops/conv2d/wgmma_conv.c) with a batch: a tile is blockIdx.x
 * of plane blockIdx.y. */
static const char wg_split_reduce[] =
    "#define ACCN (MI * DW)  /* accumulators per consumer thread */\n"
    "#define CTHR (NC * 128) /* consumer threads */\n"
    "#define WS_FLOATS ((size_t)KSPLIT * WS_TILES * CTHR * ACCN)\n"
    "static __device__ float cut_ws[WS_FLOATS];        /* every slice's partial of every tile */\n"
    "static __device__ unsigned int cut_cnt[WS_TILES]; /* slices done per tile; zero between launches */\n"
    "static __device__ __forceinline__ bool splitk_reduce(float (&d)[MI][DW], unsigned bars, int ct, bool live)\n"
    "{\n"
    "    __shared__ int last;\n"
    "    const int tile = (int)blockIdx.x + WS_TILES_X * (int)blockIdx.y, z = (int)blockIdx.z;\n"
    "    float *__restrict__ tw = cut_ws + (size_t)tile * ACCN * CTHR + ct;\n"
    "    if (live) /* a thread whose rows all lie past M has nothing to publish (M = 16: 3 warps of 4) */\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < ACCN; e++)\n"
    "            tw[(size_t)z * WS_TILES * ACCN * CTHR + e * CTHR] = d[e / DW][e % DW];\n"
    "    __threadfence(); /* this thread's partial is visible before the block counts itself in */\n"
    "    mbar_arrive(RED);\n"
    "    mbar_wait(RED, 0);\n"
    "    if (ct == 0)\n"
    "        last = atomicAdd(&cut_cnt[tile], 1u) == KSPLIT - 1;\n"
    "    mbar_arrive(RED);\n"
    "    mbar_wait(RED, 1);\n"
    "    if (!last)\n"
    "        return false;\n"
    "    __threadfence(); /* the other slices' partials are read after their counts */\n"
    "    if (!live)\n"
    "        return true; /* nothing of this thread's is stored (the epilogue skips rows past M) */\n"
    "    /* slice by slice (this block's own partial read back too), all of a slice's loads in flight at once */\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < ACCN; e++)\n"
    "        d[e / DW][e % DW] = __ldcg(&tw[e * CTHR]);\n"
    "#pragma unroll 1\n"
    "    for (int q = 1; q < KSPLIT; q++)\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < ACCN; e++)\n"
    "            d[e / DW][e % DW] += __ldcg(&tw[(size_t)q * WS_TILES * ACCN * CTHR + e * CTHR]);\n"
    "    if (ct == 0)\n"
    "        cut_cnt[tile] = 0u; /* every slice has arrived: ready for the next launch */\n"
    "    return true;\n"
    "}\n";

/* In the kernel after the tile's coordinates: the block's slice of the k tiles, which KT counts from then on. */
static const char wg_split_slice[] =
    "    const int kt0 = (int)blockIdx.z * KPS, nkt = min(KPS, KT - kt0); /* the space leaves no slice empty */\n"
    "#undef KT\n"
    "#define KT nkt\n";

static void emit_split_defines(cut_buf *b, const wg_geom *gm, const int *k)
{
    cut_buf_printf(b, "#define KSPLIT %d /* k slices, blockIdx.z */\n#define KPS %d /* k tiles a slice */\n", gm->split,
                   gm->kps);
    cut_buf_printf(b, "#define WS_TILES %u /* the launch's output tiles */\n#define WS_TILES_X %u /* gridDim.x */\n",
                   gm->ws_tiles, gm->tiles_x);
    cut_buf_printf(b, "#define DW %d /* a consumer's accumulators per m64 block: wgmma's n / 2 */\n", k[K_BN] / 2);
    cut_buf_printf(b, "#define RED (bars + 8u * (2 * ST + %d)) /* the reduction's barrier, after the others */\n",
                   gm->bcopy ? k[K_NC] : 0);
    /* whether any of the consumer thread's accumulators is a row of C below M: its first row (i = 0, h = 0) is its
     * lowest; SWAP's threads each hold rows all over the tile; with 128 accumulators and more the registers the
     * test takes make ptxas spill (random sm_90a compiles, bn=256): every thread publishes its partial there */
    const char *live = gm->swap || gm->acc >= 128 ? "true"
                       : gm->areg                      ? "(m0 + row0 + NROW(warp, lane / 4, 0) < M)"
                                                       : "(m0 + row0 + warp * 16 + lane / 4 < M)";
    cut_buf_printf(b, "#define SPLIT_LIVE %s\n", live);
}

/* The kernel's #defines: sizes, knobs, the extras, the variant's macros (swap, A from registers, split-K). */
static void emit_defines(cut_buf *b, const cut_gemm *g, const cut_sched *s, const wg_geom *gm)
{
    const int *k = s->k;
    const int cl = k[K_CL];
    cut_emit_gemm_banner(b, g, s, "Hopper (sm_90a): TMA + mbarrier pipeline, wgmma, producer/consumer warp groups.");
    cut_buf_printf(b, "#define M %d\n#define N %d\n#define K %d\n", g->m, g->n, g->k);
    cut_buf_printf(b, "#define BM %d\n#define BN %d\n#define BK %d\n#define KS %d\n#define MI %d\n#define NC %d\n",
                   gm->bm, gm->bn, gm->bk, gm->ks, k[K_MI], k[K_NC]);
    cut_buf_printf(b, "#define ST %d\n#define WAITD %d\n#define GM %d\n#define CL %d\n#define REGS_INC %d\n",
                   k[K_ST], k[K_WAITD], k[K_GM], cl, k[K_NC] == 2 ? 232 : 240);
    cut_buf_printf(b, "#define TA %d /* A stored KxM: MN-major in shared memory */\n", cut_gemm_a_trans(g));
    if (cut_gemm_has_extras(g)) { /* BATCH, STRIDE_C, HAS_BETA, ALPHA, BETA; CIN_PARAM, EPI(v, i) */
        /* SPLITK 1: the extras' serial split-K is not this kernel's; KSPLIT's epilogue runs once, unchanged */
        cut_gemm_emit_extras(b, g, 1);
        cut_buf_append(b, cut_gemm_extras_text, strlen(cut_gemm_extras_text));
    } else {
        cut_buf_printf(b, "#define BATCH 1\n#define HAS_BETA 0\n#define CIN_PARAM\n#define EPI(v, i) (v)\n");
    }
    if (gm->split > 1)
        emit_split_defines(b, gm, k);
    if (gm->pp)
        cut_wgmma_persist_defines(b, gm->pp, gm->tiles_x);
    if (gm->swap)
        cut_buf_printf(b, "#define SWAP 1 /* C^T = B^T A^T: wgmma's n (the knob bn) is BM */\n");
    if (gm->areg)
        emit_areg(b, gm);
    cut_buf_printf(b, "#define COPY_BYTES %d\n", gm->copy_bytes);
    /* tf32's producers issue up to 9 (NN, TT) or 16 (TN) copies a stage: unrolled, they overflow its 40 registers */
    cut_buf_printf(b, "#define PRODUCER_UNROLL%s\n", gm->areg ? " _Pragma(\"unroll 1\")" : "");
    if (cl > 1)
        cut_buf_printf(b, "#define CLUSTER_ATTR __cluster_dims__(%d, 1, 1)\n", cl);
    else
        cut_buf_printf(b, "#define CLUSTER_ATTR\n");
}

static void append(cut_buf *b, const char *text) { cut_buf_append(b, text, strlen(text)); }

/* The kernel's text after its #defines; with split-K its slice, the reduction's barrier and the reduction before
 * the epilogue (which runs in the tile's last block only), nothing else changed. */
static void emit_kernel(cut_buf *b, const cut_gemm *g, const wg_geom *gm, int cl)
{
    const int split = gm->split > 1;
    if (gm->pp) { /* persistent (cl 1, no split-K, A from shared memory): its own head and tile loop */
        append(b, cut_wgmma_text_head);
        append(b, cut_wgmma_text_ptx);
        append(b, cut_wgmma_text_emu);
        cut_wgmma_emit_tile(b, g->dtype, gm->bn, cut_gemm_a_trans(g), !cut_gemm_b_trans(g));
        emit_a(b, g, "kt");
        emit_b(b, g, 1, "kt");
        append(b, cut_wgmma_persist_head);
        append(b, cut_wgmma_text_consumer_loop);
        append(b, cut_wgmma_persist_mid);
        append(b, wg_consumer_epi);
        append(b, cut_wgmma_persist_end);
        return;
    }
    append(b, cut_wgmma_text_head);
    append(b, cut_wgmma_text_ptx);
    append(b, cut_wgmma_text_emu);
    if (gm->areg)
        emit_wgmma_rs(b, gm->swap ? gm->bm : gm->bn);
    else
        cut_wgmma_emit_tile(b, g->dtype, gm->bn, cut_gemm_a_trans(g), !cut_gemm_b_trans(g));
    emit_a(b, g, split ? "(kt0 + kt)" : "kt");
    emit_b(b, g, cl, split ? "(kt0 + kt)" : "kt");
    if (gm->areg)
        append(b, wg_swap_stage);
    if (split)
        append(b, wg_split_reduce);
    append(b, wg_body);
    if (split)
        append(b, wg_split_slice);
    append(b, wg_body_init);
    if (split)
        append(b, "        mbar_init(RED, CTHR); /* the consumers' threads, twice: partials out, then the count */\n");
    append(b, wg_body_producer);
    append(b, gm->areg ? wg_consumer_swap : cut_wgmma_text_consumer_loop);
    if (split)
        append(b, "        if (splitk_reduce(d, bars, (int)threadIdx.x - 128, SPLIT_LIVE)) { /* the last block */\n");
    append(b, gm->swap ? wg_swap_epi : wg_consumer_epi);
    if (split)
        append(b, "        }\n");
    append(b, wg_end);
}

static int codegen(const cut_gemm *g, const cut_sched *s, cut_kernel_src *out, cut_err *e)
{
    memset(out, 0, sizeof *out);
    if (check_shape(g, s, e) != 0)
        return cut_err_wrap(e, "codegen gemm wgmma");
    wg_geom gm;
    wg_geometry(g, s, &gm);
    const int cl = s->k[K_CL];
    cut_buf b;
    cut_buf_init(&b);
    emit_defines(&b, g, s, &gm);
    emit_kernel(&b, g, &gm, cl);
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
    out->extra_bufs = cut_gemm_extra_bufs(g);
    return 0;
}

const cut_gemm_template cut_gemm_tpl_wgmma = {
    .name = "wgmma",
    .gpu_only = 1, /* not a search backend on the emulator: its cluster kernels (cl=2) need a GPU, and the emulated
                      TMA/mbarrier/wgmma path (wgmma_text.c) is the tests' check of cl=1 kernels (test_gemm_wgmma_emu) */
    .nknobs = K_N,
    .knob_name = knob_name,
    .knob_default = knob_default,
    .applies = applies,
    .sample = sample,
    .mutate = mutate,
    .check = check,
    .geometry = geometry,
    .codegen = codegen,
};
