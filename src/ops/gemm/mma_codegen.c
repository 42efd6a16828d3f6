/* cutune — code generator of the "mma" GEMM template (src/ops/gemm/mma.c holds the space).
 *
 * C[M][N] (fp32) = A[M][K] · B with B[K][N] (NN) or B[N][K] (NT, C = A·Bᵀ); A and B fp16, bf16 (16-bit storage)
 * or tf32 (float storage, rounded with cvt.rna.tf32.f32 in the kernel); sizes baked in. Needs sm_80+ (plain
 * sm_80/sm_90 PTX; no architecture-specific features).
 *
 * Block: (BM/WM) x (BN/WN) warps; block (bx, by) computes the BM x BN tile of C at the tile coordinates that
 * the rasterisation gives it (GROUP_M > 1: blocks walk GROUP_M tile rows column by column, so that consecutive
 * blocks share A and B tiles in L2). Warp (wm, wn) computes a WM x WN sub-tile as (WM/16) x (WN/8) mma tiles:
 * mma.sync.aligned.m16n8k16 (fp16, bf16) or m16n8k8 (tf32), fp32 accumulate, all accumulators in registers.
 *
 * Pipeline: STAGES shared-memory buffers, each one k tile of A (BM rows of BK elements, k contiguous) and of B
 * (NT: BN rows of BK, k contiguous; NN: BK rows of BN, n contiguous: B's own layout, no transposition on the
 * way). Global -> shared with cp.async (CPW = 16: cp.async.cg, bypassing L1; 8 or 4: cp.async.ca), one commit
 * group per k tile; the prologue issues tiles 0..STAGES-2; iteration kt issues tile kt+STAGES-1 into the buffer
 * that tile kt-1 left, computes tile kt, then waits (cp.async.wait_group STAGES-2) for tile kt+1 and passes the
 * block's one __syncthreads of the iteration. Chunks past M, N or K are copied with src-size 0 (zero-fill), so
 * tails need no branches in the compute loop; the source address is then the matrix base (never read).
 *
 * Shared -> registers per k step of 16 (8 for tf32) elements, i.e. two 16-byte chunks of a row:
 *   A: ldmatrix.x4 per m16 tile (the four 8x8 b16 matrices are rows 0-7/8-15 x chunk 0/1: a0..a3). For tf32 the
 *      same instruction works because an 8x8 b16 matrix is an 8x4 tf32 one and thread t receives element
 *      (t/4, t%4): exactly a0..a3 of m16n8k8.tf32.
 *   B, NT: ldmatrix.x4 per pair of n8 tiles (rows n 0-7 x chunks 0/1, then n 8-15): b0, b1 of both; also tf32.
 *   B, NN, 16-bit: ldmatrix.x4.trans per pair of n8 tiles (rows k 0-7/8-15 x n chunk 0/1).
 *   B, NN, tf32: ldmatrix cannot transpose 32-bit elements, so each thread reads its two elements with plain
 *      32-bit LDS (b0 = B[k0+t][n0+g], b1 = B[k0+t+4][n0+g]); correct, with some bank conflicts.
 * The fragments of k step kk+1 are loaded before the mmas of step kk (two register buffers).
 *
 * Swizzle (SWIZZLE = 1): rows are split into 16-byte chunks; chunk c of row r is stored at chunk
 * c ^ (r % 8) (rows of >= 8 chunks) or c ^ ((r / 2) % 4) (rows of 4 chunks, two per 128-byte line): the eight rows
 * an ldmatrix phase reads at one logical chunk, and the eight chunks eight consecutive loader threads store,
 * fall into eight different 16-byte bank groups (cut_gemm_mma_swz in src/ops/gemm/mma.h; tests/test_gemm_mma.c checks
 * it). SWIZZLE = 0 keeps plain rows (up to 8-way conflicts) so that the model can learn the difference.
 *
 * Epilogue: each thread holds pairs of adjacent columns (c0 c1, c2 c3 of the mma's C fragment): float2 stores
 * when N is even, else guarded scalar stores; rows past M and columns past N are skipped.
 *
 * What the knobs trade. BM, BN: reuse of every loaded element (global traffic ~ 1/BM + 1/BN per FMA) against the
 * number of blocks (waves over 132 SMs) and shared memory. BK: fewer barriers and larger cp.async batches per k
 * tile against shared memory per stage. WM, WN: ldmatrix per mma (A loads scale with WM/16, B with WN/8 per k
 * step) against accumulator registers (WM*WN/32) and warps per block. STAGES: latency hidden by tiles in flight
 * against shared memory (fewer blocks per SM). SWIZZLE: bank conflicts. GROUP_M: L2 hit rate of A and B across
 * concurrently running blocks. CPW: 16-byte copies where the rows allow, narrower ones otherwise.
 *
 * Issue 21. TN/TT (A stored K×M): A's tile is staged as BK rows of BM (m contiguous, A's own layout) and its
 * fragments come from ldmatrix.x4.trans (16-bit; the same transposition NN's B uses) or four 32-bit LDS (tf32).
 * Strided batch and split-K share blockIdx.z = batch × SPLITK + slice. SPLITK > 1 (skinny or few-tile GEMMs that
 * cannot fill the SMs): slice s sums k tiles [s·KT/SPLITK, (s+1)·KT/SPLITK), and the slices of a tile write C in turn
 * (serial split-K, deterministic: always the same order of additions): slice 0 stores alpha·acc (+ beta·Cin), each
 * later one waits for its turn on a module variable, adds its alpha·acc to C and passes the turn on; the last resets
 * it to 0, so the next launch (and the harness's module-state checks) find it as loaded. No workspace, no atomics
 * on data. Epilogue values through EPI (src/ops/gemm/extras.h). */
#include "codegen/emit.h"
#include "ops/gemm/extras.h"
#include "ops/gemm/simt.h"
#include "ops/gemm/mma.h"
#include "ops/gemm/mma_text.h"

#include "cutune/util.h"

#include <stdio.h>
#include <string.h>

/* The GEMM's own text around the shared machinery (mma_text.h): its cp.async units, load_tile, and kernel. */
static const char gemm_units[] =
    "#define A_UPR (A_ROWB / CPW)            /* cp.async units per row of A */\n"
    "#define A_UNITS ((LAYOUT_TA ? BK : BM) * A_UPR)\n"
    "#define A_ITERS ((A_UNITS + NTHR - 1) / NTHR)\n"
    "#define B_UPR (B_ROWB / CPW)\n"
    "#define B_UNITS (B_ROWS * B_UPR)\n"
    "#define B_ITERS ((B_UNITS + NTHR - 1) / NTHR)\n"
    "/* issues the cp.async copies of k tile kt into the stage at shared address st */\n"
    "__device__ __forceinline__ void load_tile(unsigned st, const T *__restrict__ A, const T *__restrict__ B,\n"
    "                                          int m0, int n0, int kt, int tid)\n"
    "{\n"
    "    const int k0 = kt * BK;\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < A_ITERS; i++) {\n"
    "        const int u = tid + i * NTHR;\n"
    "        if (A_UNITS % NTHR == 0 || u < A_UNITS) {\n"
    "            const int r = u / A_UPR, cb = (u % A_UPR) * CPW; /* row, byte column */\n"
    "#if LAYOUT_TA\n"
    "            const int k = k0 + r, m = m0 + cb / E;\n"
    "            const bool ok = (M % BM == 0 || m < M) && (K % BK == 0 || k < K);\n"
    "            const T *src = ok ? A + (size_t)k * M + m : A;\n"
    "#else\n"
    "            const int m = m0 + r, k = k0 + cb / E;\n"
    "            const bool ok = (M % BM == 0 || m < M) && (K % BK == 0 || k < K);\n"
    "            const T *src = ok ? A + (size_t)m * K + k : A;\n"
    "#endif\n"
    "            cp_async<CPW>(st + r * A_ROWB + swz(r, cb >> 4, A_CPR) * 16 + (cb & 15), src, ok ? CPW : 0);\n"
    "        }\n"
    "    }\n"
    "    st += A_BYTES;\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < B_ITERS; i++) {\n"
    "        const int u = tid + i * NTHR;\n"
    "        if (B_UNITS % NTHR == 0 || u < B_UNITS) {\n"
    "            const int r = u / B_UPR, cb = (u % B_UPR) * CPW;\n"
    "#if LAYOUT_NT\n"
    "            const int n = n0 + r, k = k0 + cb / E;\n"
    "            const bool ok = (N % BN == 0 || n < N) && (K % BK == 0 || k < K);\n"
    "            const T *src = ok ? B + (size_t)n * K + k : B;\n"
    "#else\n"
    "            const int k = k0 + r, n = n0 + cb / E;\n"
    "            const bool ok = (K % BK == 0 || k < K) && (N % BN == 0 || n < N);\n"
    "            const T *src = ok ? B + (size_t)k * N + n : B;\n"
    "#endif\n"
    "            cp_async<CPW>(st + r * B_ROWB + swz(r, cb >> 4, B_CPR) * 16 + (cb & 15), src, ok ? CPW : 0);\n"
    "        }\n"
    "    }\n"
    "}\n"
    "\n"
;

static const char gemm_kernel[] =
    "#if SPLITK > 1\n"
    "/* serial split-K: per output tile the slice that may write next (0 between launches: the last slice resets it) */\n"
    "__device__ unsigned cut_splitk_turn[BATCH * TILES_M * TILES_N];\n"
    "#endif\n"
    "extern \"C\" __global__ void __launch_bounds__(NTHR, 1)\n"
    "cut_gemm(const T *__restrict__ A, const T *__restrict__ B, float *__restrict__ C CIN_PARAM)\n"
    "{\n"
    "    BATCH_SLICE()\n"

    "    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;\n"
    "    const int wm = warp / WARPS_N, wn = warp % WARPS_N;\n"
    "#if GROUP_M > 1\n"
    "    /* GROUP_M tile rows at a time, walked column by column */\n"
    "    const int pid = blockIdx.y * TILES_N + blockIdx.x;\n"
    "    const int first = pid / (GROUP_M * TILES_N) * GROUP_M, in_group = pid % (GROUP_M * TILES_N);\n"
    "    const int gsize = TILES_M - first < GROUP_M ? TILES_M - first : GROUP_M;\n"
    "    const int tm = first + in_group % gsize, tn = in_group / gsize;\n"
    "#else\n"
    "    const int tm = blockIdx.y, tn = blockIdx.x;\n"
    "#endif\n"
    "    const int m0 = tm * BM, n0 = tn * BN;\n"
    "\n"
    "    float acc[MI][NI][4];\n"
    "    mainloop(acc, A, B, m0, n0, slice * KT / SPLITK, (slice + 1) * KT / SPLITK, tid);\n"
    "#if SPLITK > 1\n"
    "    /* wait for the earlier slices of this tile (lower block indices, started first, so never a deadlock) */\n"
    "    unsigned *turn = &cut_splitk_turn[(z * TILES_M + tm) * TILES_N + tn];\n"
    "    if (tid == 0)\n"
    "        while (*(volatile unsigned *)turn != (unsigned)slice)\n"
    "            ;\n"
    "    __syncthreads();\n"
    "    __threadfence();\n"
    "#endif\n"
    "\n"
    "    /* accumulators -> C: c0 c1 at (g, 2t), (g, 2t+1); c2 c3 eight rows below */\n"
    "    const int g = lane >> 2, t = lane & 3;\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < MI; i++)\n"
    "#pragma unroll\n"
    "        for (int h = 0; h < 2; h++) {\n"
    "            const int m = m0 + wm * WM + i * 16 + h * 8 + g;\n"
    "            if (M % BM != 0 && m >= M)\n"
    "                continue;\n"
    "            float *__restrict__ c_row = C + (size_t)m * N;\n"
    "#pragma unroll\n"
    "            for (int j = 0; j < NI; j++) {\n"
    "                const int n = n0 + wn * WN + j * 8 + 2 * t;\n"
    "#if N % 2 == 0\n"
    "                if (N % BN == 0 || n < N)\n"
    "                    *reinterpret_cast<float2 *>(c_row + n) = make_float2(EPI(acc[i][j][2 * h], (size_t)m * N + n),\n"
    "                                                                         EPI(acc[i][j][2 * h + 1], (size_t)m * N + n + 1));\n"
    "#else\n"
    "                if (n < N)\n"
    "                    c_row[n] = EPI(acc[i][j][2 * h], (size_t)m * N + n);\n"
    "                if (n + 1 < N)\n"
    "                    c_row[n + 1] = EPI(acc[i][j][2 * h + 1], (size_t)m * N + n + 1);\n"
    "#endif\n"
    "            }\n"
    "        }\n"
    "#if SPLITK > 1\n"
    "    /* publish this slice's C, then hand the tile to the next slice (the last one leaves 0 for the next launch) */\n"
    "    __threadfence();\n"
    "    __syncthreads();\n"
    "    if (tid == 0)\n"
    "        atomicExch(turn, slice + 1 == SPLITK ? 0u : (unsigned)slice + 1u);\n"
    "#endif\n"
    "}\n"
;

static void emit_defines(cut_buf *b, const cut_gemm *g, const cut_sched *s)
{
    const int *k = s->k;
    cut_buf_printf(b, "#define M %d\n#define N %d\n#define K %d\n#define LAYOUT_NT %d\n", g->m, g->n, g->k,
                   cut_gemm_b_trans(g));
    cut_gemm_emit_extras(b, g, k[CUT_GM_SPLITK]);
    cut_mma_emit_tile_defines(b, g->dtype, k[CUT_GM_BM], k[CUT_GM_BN], k[CUT_GM_BK], k[CUT_GM_WM], k[CUT_GM_WN],
                              k[CUT_GM_STAGES], k[CUT_GM_SWIZZLE]);
    cut_buf_printf(b, "#define GROUP_M %d\n#define CPW %d\n", k[CUT_GM_GROUP_M], k[CUT_GM_CPW]);
}

int cut_codegen_gemm_mma(const cut_gemm *g, const cut_sched *s, cut_kernel_src *out, cut_err *e)
{
    memset(out, 0, sizeof *out);
    if (cut_gemm_mma_check_shape(g, s, e) != 0)
        return cut_err_wrap(e, "codegen gemm mma");
    cut_gemm_mma_geom gm;
    cut_gemm_mma_geometry(g, s, &gm);
    cut_buf b;
    cut_buf_init(&b);
    cut_emit_gemm_banner(&b, g, s, "cp.async pipeline -> ldmatrix -> mma.sync tensor cores (sm_80+)");
    emit_defines(&b, g, s);
    const char *const parts[] = {cut_gemm_extras_text, cut_mma_text_prims, gemm_units, cut_mma_text_frags,
                                 cut_mma_text_mainloop, gemm_kernel};
    for (size_t i = 0; i < CUT_ARRAY_LEN(parts); i++)
        cut_buf_append(&b, parts[i], strlen(parts[i]));
    out->src = b.data; /* ownership moves to out */
    snprintf(out->entry, sizeof out->entry, "cut_gemm");
    memcpy(out->grid, gm.grid, sizeof out->grid);
    out->block[0] = (unsigned)gm.threads;
    out->block[1] = out->block[2] = 1;
    out->smem_dynamic = (unsigned)gm.smem_bytes;
    out->uses_inline_ptx = 0; /* the PTX sits in #ifndef CUT_EMU branches: the emulator runs its semantics */
    out->tol_scale = 1.0;
    out->arch_a = 0;
    out->ntma = 0;
    out->extra_bufs = cut_gemm_extra_bufs(g);
    return 0;
}
