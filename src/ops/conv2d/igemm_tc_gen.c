/* cutune — code generator of the tensor-core implicit-GEMM convolution "igemm_tc" (src/ops/conv2d/igemm_tc_space.c
 * holds the space).
 *
 * The convolution as a GEMM C[M][N] = A[M][K] · B[N][K]ᵀ: M = N*OH*OW output pixels (row m is image m / (OH*OW),
 * pixel m % (OH*OW)), N = CO, K = KH*KW*CI with CI innermost (NHWC) or CI*KH*KW with KW innermost (NCHW): the
 * order in which the weights lie, so that B is the weight tensor as stored, rows of K contiguous elements, and
 * A is the im2col view of the input, never materialised. The kernel is the "mma" GEMM's (src/ops/gemm/mma_text.c,
 * explained in src/ops/gemm/mma_codegen.c): block tile BM x BN of C, (BM/WM) x (BN/WN) warps of
 * mma.sync.m16n8k16 (fp16, bf16) or m16n8k8 (tf32) with fp32 accumulators, a STAGES-deep cp.async ring of k
 * tiles in XOR-swizzled shared memory, ldmatrix fragments. This file adds what a convolution changes:
 *
 *   load_tile (one k tile): each A row is an output pixel, each k a (filter tap, channel); a thread's piece of
 *     A_UNIT elements at (m, k) decodes m into (image, oh, ow) and k into (kh, kw, ci), and reads the input at
 *     (oh*S - P + kh, ow*S - P + kw), or zero-fills the piece in the padding and past M or K.
 *     CPA > 0 (NHWC, CI * elem a multiple of CPA): the piece is CPA bytes of consecutive channels of one tap,
 *       one cp.async (src-size 0 for the zero fill). CPA = 0 (NCHW, or NHWC with CI not aligned, e.g. the
 *       3-channel stem): element by element through registers (a load, st.shared), correct for any layout, and
 *       slower: the loads are not asynchronous.
 *     B: CPB-byte cp.async pieces of a weight row when K * elem allows (zero-filled past CO or K), else
 *       element by element.
 *   the epilogue: thread (g = lane/4, t = lane%4) holds rows g, g+8 and columns 2t, 2t+1 of each m16n8 tile; an
 *     output element (m, co) is out[m][co] (NHWC: pairs of channels are one 32-bit or 64-bit store when CO is
 *     even) or out[image][co][pixel] (NCHW: scalar stores, consecutive g are consecutive pixels). fp16 and bf16
 *     outputs are rounded from the fp32 sums to nearest even (cvt.rn), tf32's are fp32.
 *
 *   split-K (SPLITK > 1): slice blockIdx.z sums k tiles [z*KPS, (z+1)*KPS) and the tile's last block to arrive
 *     adds the slices' fp32 partials in slice order (deterministic; CUT_EMIT_SPLITK_TEXT, as the fp32 igemm),
 *     then stores and rounds once as above.
 *   the fused epilogue (the workload's, EPI 1 or 2): + bias[co] (the inputs' type), then ReLU, on the fp32 sum
 *     before the one rounding to the output type; the bias is the kernel's fourth argument.
 *   the A rows' decode (image, oh*S-P, ow*S-P, their input offset) is a shared table filled once per block; a
 *     piece decodes only its k (multiply-shift divisions by constants).
 *
 * Under CUT_EMU (the host emulation) the PTX is replaced by its semantics (mma_text.c), so the same text runs on
 * the CPU against the double reference.
 *
 * What the knobs trade: as the mma GEMM's (tile reuse against waves over the SMs and shared memory, pipeline
 * depth, swizzle), plus CPA/CPB: 16-byte asynchronous copies against narrower ones and the synchronous gather
 * the layout forces. */
#include "codegen/emit.h"
#include "ops/conv2d/templates.h"
#include "ops/gemm/mma_text.h"

#include <stdio.h>
#include <string.h>

static const char conv_load[] =
    "#define OHW (OH * OW)\n"
    "#define A_UNIT (CPA ? CPA / E : 1)     /* elements per copy of A (a cp.async piece or one gathered) */\n"
    "#define A_UPR (BK / A_UNIT)\n"
    "#define A_UNITS (BM * A_UPR)\n"
    "#define A_ITERS ((A_UNITS + NTHR - 1) / NTHR)\n"
    "#define B_UNIT (CPB ? CPB / E : 1)\n"
    "#define B_UPR (BK / B_UNIT)\n"
    "#define B_UNITS (BN * B_UPR)\n"
    "#define B_ITERS ((B_UNITS + NTHR - 1) / NTHR)\n"
    "\n"
    "/* stores one element at shared address addr (the gathered copies) */\n"
    "#ifdef CUT_EMU\n"
    "__device__ __forceinline__ void sts(unsigned addr, T v) { __builtin_memcpy(smem + addr, &v, E); }\n"
    "#elif DT == 2\n"
    "__device__ __forceinline__ void sts(unsigned addr, T v)\n"
    "{\n"
    "    asm volatile(\"st.shared.b32 [%0], %1;\\n\" :: \"r\"(addr), \"r\"(__float_as_uint(v)) : \"memory\");\n"
    "}\n"
    "#else\n"
    "__device__ __forceinline__ void sts(unsigned addr, T v)\n"
    "{\n"
    "    asm volatile(\"st.shared.b16 [%0], %1;\\n\" :: \"r\"(addr), \"h\"(v) : \"memory\");\n"
    "}\n"
    "#endif\n"
    "\n"
    "/* The im2col decode of the block's A rows, once per block (a row's pixel is the same in every k tile): row r\n"
    " * is {input offset of (image, ih0, iw0, channel 0), ih0 = oh*S-P, iw0 = ow*S-P}; a row past M has ih0 far\n"
    " * below zero, so that every range test zero-fills it */\n"
    "__shared__ int4 a_rows[BM];\n"
    "__device__ __forceinline__ void decode_rows(int m0, int tid)\n"
    "{\n"
    "    for (int r = tid; r < BM; r += NTHR) {\n"
    "        const int m = m0 + r, b = m / OHW, p = m - b * OHW, oh = p / OW, ow = p - oh * OW;\n"
    "        const int ih0 = oh * SH - PD, iw0 = ow * SH - PD;\n"
    "#if NHWC\n"
    "        const int off = ((b * IH + ih0) * IW + iw0) * CI;\n"
    "#else\n"
    "        const int off = (b * CI * IH + ih0) * IW + iw0;\n"
    "#endif\n"
    "        a_rows[r] = M % BM == 0 || m < M ? make_int4(off, ih0, iw0, 0) : make_int4(0, -(1 << 30), 0, 0);\n"
    "    }\n"
    "    __syncthreads();\n"
    "}\n"
    "\n"
    "/* index into the input of im2col element (row r of the block, k), or -1 where it lies in the padding or past\n"
    " * M; only k is decoded here (divisions by constants: multiply-shift) */\n"
    "__device__ __forceinline__ int a_index(int r, int k)\n"
    "{\n"
    "    const int4 row = a_rows[r];\n"
    "#if NHWC\n"
    "    const int ci = k % CI, t = k / CI, kh = t / KW, kw = t - kh * KW;\n"
    "#else\n"
    "    const int kw = k % KW, t = k / KW, kh = t % KH, ci = t / KH;\n"
    "#endif\n"
    "    if ((unsigned)(row.y + kh) >= (unsigned)IH || (unsigned)(row.z + kw) >= (unsigned)IW)\n"
    "        return -1;\n"
    "#if NHWC\n"
    "    return row.x + (kh * IW + kw) * CI + ci;\n"
    "#else\n"
    "    return row.x + (ci * IH + kh) * IW + kw;\n"
    "#endif\n"
    "}\n"
    "\n"
    "/* shared address of element column kc of row r in a tile of rows of rowb bytes, cpr 16-byte chunks */\n"
    "__device__ __forceinline__ unsigned tile_at(unsigned st, int r, int kc, int rowb, int cpr)\n"
    "{\n"
    "    return st + r * rowb + swz(r, (kc * E) >> 4, cpr) * 16 + ((kc * E) & 15);\n"
    "}\n"
    "\n"
    "/* issues the copies of k tile kt into the stage at shared address st: the input's im2col rows, the weights */\n"
    "__device__ __forceinline__ void load_tile(unsigned st, const T *__restrict__ A, const T *__restrict__ B,\n"
    "                                          int m0, int n0, int kt, int tid)\n"
    "{\n"
    "    const int k0 = kt * BK;\n"
    "    /* four pieces per unrolled step: fully unrolled, every piece's im2col decode stays live across the loop\n"
    "     * (and a gather's loaded values), which spills at large tiles */\n"
    "#pragma unroll 4\n"
    "    for (int i = 0; i < A_ITERS; i++) {\n"
    "        const int u = tid + i * NTHR;\n"
    "        if (A_UNITS % NTHR == 0 || u < A_UNITS) {\n"
    "            const int r = u / A_UPR, kc = (u % A_UPR) * A_UNIT, k = k0 + kc;\n"
    "            const int x = K % BK == 0 || k < K ? a_index(r, k) : -1;\n"
    "#if CPA\n"
    "            cp_async<CPA>(tile_at(st, r, kc, A_ROWB, A_CPR), A + (x < 0 ? 0 : x), x < 0 ? 0 : CPA);\n"
    "#else\n"
    "            sts(tile_at(st, r, kc, A_ROWB, A_CPR), x < 0 ? (T)0 : A[x]);\n"
    "#endif\n"
    "        }\n"
    "    }\n"
    "    st += A_BYTES;\n"
    "#if CPB\n"
    "#pragma unroll\n"
    "#else\n"
    "#pragma unroll 4 /* a few gathered loads in flight, as for A */\n"
    "#endif\n"
    "    for (int i = 0; i < B_ITERS; i++) {\n"
    "        const int u = tid + i * NTHR;\n"
    "        if (B_UNITS % NTHR == 0 || u < B_UNITS) {\n"
    "            const int r = u / B_UPR, kc = (u % B_UPR) * B_UNIT, n = n0 + r, k = k0 + kc;\n"
    "            const bool ok = (N % BN == 0 || n < N) && (K % BK == 0 || k < K);\n"
    "#if CPB\n"
    "            cp_async<CPB>(tile_at(st, r, kc, B_ROWB, B_CPR), ok ? B + (size_t)n * K + k : B, ok ? CPB : 0);\n"
    "#else\n"
    "            sts(tile_at(st, r, kc, B_ROWB, B_CPR), ok ? B[(size_t)n * K + k] : (T)0);\n"
    "#endif\n"
    "        }\n"
    "    }\n"
    "}\n"
    "\n";

/* The output type, the fused epilogue and the stores (templates.h: cut_conv_tc_store_text). */
const char cut_conv_tc_store_text[] =
    "#if DT == 2\n"
    "typedef float OutT;\n"
    "__device__ __forceinline__ OutT to_out(float v) { return v; }\n"
    "#elif defined(CUT_EMU)\n"
    "typedef unsigned short OutT;\n"
    "/* float -> fp16 (DT 0) or bf16 (DT 1) bits, round to nearest even, as cvt.rn does */\n"
    "__device__ __forceinline__ OutT to_out(float v)\n"
    "{\n"
    "    const unsigned x = __float_as_uint(v), s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;\n"
    "#if DT == 1\n"
    "    return a > 0x7f800000u ? (OutT)(s | 0x7fc0u) : (OutT)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);\n"
    "#else\n"
    "    if (a > 0x7f800000u)\n"
    "        return (OutT)(s | 0x7e00u);\n"
    "    if (a >= 0x477ff000u) /* 65520 and up round to infinity */\n"
    "        return (OutT)(s | 0x7c00u);\n"
    "    if (a < 0x38800000u) /* below 2^-14: a subnormal, |v| * 2^24 rounded to an integer */\n"
    "        return (OutT)(s | (unsigned)__builtin_rintf(__uint_as_float(a) * 16777216.0f));\n"
    "    return (OutT)(s | ((a + 0x0fffu + ((a >> 13) & 1u) - 0x38000000u) >> 13));\n"
    "#endif\n"
    "}\n"
    "#else\n"
    "typedef unsigned short OutT;\n"
    "__device__ __forceinline__ OutT to_out(float v)\n"
    "{\n"
    "    unsigned short h;\n"
    "#if DT == 1\n"
    "    asm(\"cvt.rn.bf16.f32 %0, %1;\\n\" : \"=h\"(h) : \"f\"(v));\n"
    "#else\n"
    "    asm(\"cvt.rn.f16.f32 %0, %1;\\n\" : \"=h\"(h) : \"f\"(v));\n"
    "#endif\n"
    "    return h;\n"
    "}\n"
    "#endif\n"
    "\n"
    "#if EPI\n"
    "#define EPI_ARGS , const T *__restrict__ bias\n"
    "/* the bias of channel n (< N) as fp32 */\n"
    "__device__ __forceinline__ float bias_at(const T *__restrict__ bias, int n)\n"
    "{\n"
    "#if DT == 2\n"
    "    return bias[n];\n"
    "#elif DT == 1\n"
    "    return __uint_as_float((unsigned)bias[n] << 16);\n"
    "#elif defined(CUT_EMU)\n"
    "    return emu_val(bias[n], 0);\n"
    "#else\n"
    "    float f;\n"
    "    asm(\"cvt.f32.f16 %0, %1;\\n\" : \"=f\"(f) : \"h\"(bias[n]));\n"
    "    return f;\n"
    "#endif\n"
    "}\n"
    "#else\n"
    "#define EPI_ARGS\n"
    "#endif\n"
    "\n"
    "/* the fused epilogue of output channel n on the fp32 sum v, before the one rounding to OutT: EPI 1 adds the\n"
    " * bias, EPI 2 then applies ReLU */\n"
    "__device__ __forceinline__ float epi(float v, const T *__restrict__ bias, int n)\n"
    "{\n"
    "#if EPI\n"
    "    v += N % BN == 0 || n < N ? bias_at(bias, n) : 0.0f;\n"
    "#if EPI == 2\n"
    "    v = fmaxf(v, 0.0f);\n"
    "#endif\n"
    "#endif\n"
    "    return v;\n"
    "}\n"
    "\n"
    "/* the two adjacent channels n, n+1 of output row m (NHWC: row points at pixel m; NCHW: at channel 0 of it) */\n"
    "__device__ __forceinline__ void store2(OutT *__restrict__ row, int n, float v0, float v1)\n"
    "{\n"
    "#if NHWC && N % 2 == 0\n"
    "    if (N % BN == 0 || n < N) {\n"
    "#if DT == 2\n"
    "        *reinterpret_cast<float2 *>(row + n) = make_float2(v0, v1);\n"
    "#else\n"
    "        *reinterpret_cast<unsigned *>(row + n) = (unsigned)to_out(v0) | (unsigned)to_out(v1) << 16;\n"
    "#endif\n"
    "    }\n"
    "#else\n"
    "    const int step = NHWC ? 1 : OHW;\n"
    "    if (n < N)\n"
    "        row[(size_t)n * step] = to_out(v0);\n"
    "    if (n + 1 < N)\n"
    "        row[(size_t)(n + 1) * step] = to_out(v1);\n"
    "#endif\n"
    "}\n"
    "\n";

static const char conv_kernel[] =
    "#define KPS ((KT + SPLITK - 1) / SPLITK) /* k tiles per split-K slice */\n"
    "#define ACCN (MI * NI * 4)                 /* accumulators per thread */\n"
    "#define WS_TILES (TILES_M * TILES_N)\n"
    "#define WS_FLOATS (SPLITK * WS_TILES * NTHR * ACCN)\n"
    CUT_EMIT_SPLITK_TEXT
    "\n"
    "#if SPLITK > 1\n"
    "/* Publishes this slice's accumulators (partial [slice][tile][accumulator][thread]: each store coalesced, no\n"
    " * bounds to test); false in every block but the tile's last to arrive, whose acc becomes the sum of the slices\n"
    " * in slice order (its own from registers), rounded once at the output */\n"
    "__device__ __forceinline__ bool splitk_reduce(float (&acc)[MI][NI][4], float *ws, unsigned int *cnt, int tid)\n"
    "{\n"
    "    const int tile = blockIdx.y * gridDim.x + blockIdx.x, z = blockIdx.z;\n"
    "    float *__restrict__ tw = ws + (size_t)tile * ACCN * NTHR + tid;\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < ACCN; e++)\n"
    "        tw[(size_t)z * WS_TILES * ACCN * NTHR + e * NTHR] = acc[e / (NI * 4)][e / 4 % NI][e % 4];\n"
    "    if (!cut_splitk_last(&cnt[tile], tid))\n"
    "        return false;\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < ACCN; e++) {\n"
    "        float sum = 0.0f;\n"
    "#pragma unroll 1\n"
    "        for (int q = 0; q < SPLITK; q++)\n"
    "            sum += q == z ? acc[e / (NI * 4)][e / 4 % NI][e % 4]\n"
    "                          : __ldcg(&tw[(size_t)q * WS_TILES * ACCN * NTHR + e * NTHR]);\n"
    "        acc[e / (NI * 4)][e / 4 % NI][e % 4] = sum;\n"
    "    }\n"
    "    if (tid == 0)\n"
    "        cnt[tile] = 0u; /* every slice has arrived: ready for the next launch */\n"
    "    return true;\n"
    "}\n"
    "#endif\n"
    "\n"
    "extern \"C\" __global__ void __launch_bounds__(NTHR, 1)\n"
    "cut_conv2d(const T *__restrict__ A, const T *__restrict__ B, OutT *__restrict__ C EPI_ARGS CUT_WS_ARGS)\n"
    "{\n"
    "#if !EPI\n"
    "    const T *bias = nullptr; /* epi() adds nothing */\n"
    "#endif\n"
    "    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;\n"
    "    const int wm = warp / WARPS_N, wn = warp % WARPS_N;\n"
    "    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;\n"
    "    decode_rows(m0, tid);\n"
    "    float acc[MI][NI][4];\n"
    "#if SPLITK > 1\n"
    "    const int kt0 = blockIdx.z * KPS; /* the space leaves every slice at least one tile */\n"
    "    mainloop(acc, A, B, m0, n0, kt0, kt0 + KPS < KT ? kt0 + KPS : KT, tid);\n"
    "    if (!splitk_reduce(acc, cut_ws, cut_cnt, tid))\n"
    "        return;\n"
    "#else\n"
    "    mainloop(acc, A, B, m0, n0, 0, KT, tid);\n"
    "#endif\n"
    "\n"
    "    const int g = lane >> 2, t = lane & 3;\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < MI; i++)\n"
    "#pragma unroll\n"
    "        for (int h = 0; h < 2; h++) {\n"
    "            const int m = m0 + wm * WM + i * 16 + h * 8 + g;\n"
    "            if (M % BM != 0 && m >= M)\n"
    "                continue;\n"
    "#if NHWC\n"
    "            OutT *__restrict__ row = C + (size_t)m * N;\n"
    "#else\n"
    "            const int b = m / OHW;\n"
    "            OutT *__restrict__ row = C + (size_t)b * N * OHW + (m - b * OHW);\n"
    "#endif\n"
    "#pragma unroll\n"
    "            for (int j = 0; j < NI; j++)\n"
    "            {\n"
    "                const int n = n0 + wn * WN + j * 8 + 2 * t;\n"
    "                store2(row, n, epi(acc[i][j][2 * h], bias, n), epi(acc[i][j][2 * h + 1], bias, n + 1));\n"
    "            }\n"
    "        }\n"
    "}\n";

static void emit_defines(cut_buf *b, const cut_conv *c, const cut_sched *s, const cut_igemm_tc_geom *g)
{
    const int *k = s->k;
    cut_buf_printf(b, "#define NB %d\n#define IH %d\n#define IW %d\n#define CI %d\n#define CO %d\n", c->n, c->h,
                   c->w, c->ci, c->co);
    cut_buf_printf(b, "#define KH %d\n#define KW %d\n#define SH %d\n#define PD %d\n#define OH %d\n#define OW %d\n",
                   c->kh, c->kw, c->stride, c->pad, g->oh, g->ow);
    cut_buf_printf(b, "#define NHWC %d\n", c->layout == CUT_NHWC);
    cut_buf_printf(b, "#define M %d /* N*OH*OW */\n#define N %d /* CO */\n#define K %d /* CI*KH*KW */\n", g->gm,
                   g->gn, g->gk);
    cut_buf_printf(b, "#define LAYOUT_NT 1 /* the weights are N rows of K */\n");
    cut_mma_emit_tile_defines(b, c->dtype, k[CUT_T_BM], k[CUT_T_BN], k[CUT_T_BK], k[CUT_T_WM], k[CUT_T_WN],
                              k[CUT_T_STAGES], k[CUT_T_SWIZZLE]);
    cut_buf_printf(b, "#define CPA %d\n#define CPB %d\n#define SPLITK %d\n", k[CUT_T_CPA], k[CUT_T_CPB],
                   g->split);
    cut_buf_printf(b, "#define EPI %d /* 0 none, 1 bias, 2 bias and ReLU */\n", (int)c->epilogue);
}

int cut_emit_igemm_tc(cut_buf *b, const cut_conv *c, const cut_sched *s, cut_kernel_src *out, cut_err *e)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    if (cut_tpl_igemm_tc.check(c, s, &d, e) != 0)
        return cut_err_wrap(e, "codegen igemm_tc");
    cut_igemm_tc_geom g;
    cut_igemm_tc_geometry(c, s, &g);
    emit_defines(b, c, s, &g);
    const char *const parts[] = {cut_mma_text_prims,    conv_load,   cut_mma_text_frags, cut_mma_text_mainloop,
                                 cut_conv_tc_store_text, conv_kernel};
    for (size_t i = 0; i < CUT_ARRAY_LEN(parts); i++)
        cut_buf_append(b, parts[i], strlen(parts[i]));
    cut_emit_launch(out, g.grid, g.threads);
    out->smem_dynamic = (unsigned)g.smem_ring;
    out->tol_scale = 1.0;
    out->extra_bufs = c->epilogue != CUT_EPI_NONE; /* the bias after the output */
    /* the PTX sits in #ifndef CUT_EMU branches: the host emulation runs the kernel (emu_runner reads the source) */
    out->uses_inline_ptx = 0;
    return 0;
}
