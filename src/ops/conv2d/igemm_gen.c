/* cutune — code generator of the implicit-GEMM template (space/igemm.c holds the knob space).
 *
 * Data flow. The convolution is C[M][N] = A[M][K] * B[K][N] with M = CO, N = batch*OH*OW (n -> image, oh, ow),
 * K = CI*KH*KW (k -> ci, kh, kw). A is the weight tensor exactly as stored (row-major [CO][K]); B is the im2col
 * view of the NCHW input, never materialised: B[k][n] = in[img][ci][oh*S-P+kh][ow*S-P+kw], or 0 in the padding.
 * Block (x, y, z) computes the BM x BN tile of C at (m0, n0) = (y*BM, x*BN), over split-K slice z. Per BK step:
 *   global -> registers: each thread loads a fixed part of the A tile (BM x BK; float4 along K when VA = 4) and
 *     of the B tile (BK x BN; one float per element, consecutive threads on consecutive n, i.e. consecutive ow,
 *     so the gather coalesces for stride 1). The B gather uses per-thread state computed once per kernel for the
 *     thread's column(s) (image base offset, ih0 = oh*S-P, iw0 = ow*S-P, or a sentinel past the end of N) and
 *     one k -> (ci, kh, kw) decode per loaded row per tile: divisions by compile-time constants (multiply-shift,
 *     ~15 integer ops) or, with KTAB, one load from a __constant__ table {ci*H*W + kh*W + kw, kh<<16 | kw}
 *     emitted with the kernel (uniform across a warp when BN >= 32, so a broadcast). No division per element:
 *     per element only an add for the address and, with padding, two unsigned range tests. Without padding no
 *     range test is needed at all (every window lies inside the image).
 *   registers -> shared memory: A is stored transposed, As[k][m], and B as is, Bs[k][n], so that both operands
 *     of a k step are contiguous rows; rows are padded by PAD floats against bank conflicts of the transposing
 *     stores.
 *   shared memory -> registers -> FMAs: thread (ty, tx) reads TM values of As[k][.] and TN of Bs[k][.] in chunks
 *     of up to 4 (one 16-byte LDS each) and does the TM x TN outer product into its accumulators. Its rows are
 *     m = c*TY*VM + ty*VM + i (chunks of VM = min(TM, 4) rows strided by TY*VM), likewise its columns; so the
 *     lanes of a warp read consecutive 16-byte chunks (no bank conflicts) and the final stores coalesce.
 * With STAGES = 2 the shared tiles are double-buffered: the global loads of tile t+1 are issued into registers
 * before the FMAs of tile t and stored to the other buffer after them, so memory latency hides behind compute
 * and there is one __syncthreads per tile (two with STAGES = 1, and no overlap beyond what other warps give).
 * Epilogue: C tile -> NCHW output, float4/float2 stores along ow when OH*OW allows aligned vectors.
 * Split-K (SPLITK > 1): slice z sums k tiles [z*KPS, (z+1)*KPS); each block writes its partial tile to a static
 * __device__ workspace, then a per-tile counter (a static __device__ array, zero at module load) tells the last
 * arriving block to add the slices' partials in slice order (deterministic) and write the output once; it resets
 * the counter to 0 for the next launch (CUT_EMIT_SPLITK_TEXT, shared with igemm_tc). No atomics touch the output (outputs are NaN-poisoned before runs), and
 * no block ever waits for another. Two concurrent launches of the same loaded module would share the counters and
 * the workspace: tuning launches one at a time, and an exported kernel (CUT_WS_PARAM defined) takes both as
 * arguments instead, one workspace per stream (src/post/texts.c).
 *
 * What the knobs trade.
 *   BM, BN: the block tile. Larger tiles reuse every loaded element more (global traffic per FMA ~ 1/BM + 1/BN)
 *     but give fewer blocks: for the deep-channel layers (M = 512..1024, N = 289..1156) 128 x 128 tiles leave
 *     most of the 132 SMs idle, which is what split-K and smaller tiles are for.
 *   BK: K per shared-memory stage. Larger BK means fewer barriers and loop overheads per FMA, but more shared
 *     memory (fewer resident blocks) and more staging registers with STAGES = 2.
 *   TM, TN: the register tile. A k step costs TM + TN shared loads (in (TM+TN)/4 LDS.128) for TM*TN FMAs, so
 *     8 x 8 is the classic sweet spot; it costs TM*TN accumulators (64 registers) and bounds occupancy.
 *   WLM: how a warp's 32 lanes cover the thread grid (WLM along M, 32/WLM along N). Per k step a warp reads
 *     WLM*TM + (32/WLM)*TN distinct floats from shared memory: square-ish arrangements (4 x 8, 8 x 4) read the
 *     least; 1 x 32 makes wide coalesced stores along N but reads 4x more of Bs.
 *   STAGES: see above; 2 costs the shared memory of a second buffer and the registers of the prefetched tile.
 *   VA: float4 weight loads (4x fewer load instructions for A) when K % 4 == 0.
 *   PAD: 4 floats of row padding (keeps 16-byte alignment) against conflicts of the transposed A stores.
 *   UNROLL: unroll factor of the BK loop; full unrolling lets the compiler pipeline shared loads of step k+1
 *     under the FMAs of step k, at a code size of BK*TM*TN FMAs (NVRTC time grows with it).
 *   SPLITK: more blocks for small M x N with a long K (the 17x17x1024x512 layer: K = 4608, M x N = 1024 x 289)
 *     at the price of writing and re-reading SPLITK partial tiles (for that layer, 4 slices: ~9.5 MB through L2).
 *   MINB: __launch_bounds__(NT) leaves ptxas its own occupancy heuristic, which is erratic for these kernels
 *     (8x8 tiles at 256 threads: 127 or 153 registers depending on small code changes; 32 registers and spills
 *     at 1024 threads); (NT, 1) lets it use up to 65536/NT registers (no spills, maybe one block per SM);
 *     (NT, 2) caps it at 32768/NT so that two blocks fit (for 8x8 at 256 threads: 128 registers, a few bytes of
 *     spills). The tuner measures which wins.
 *   KTAB: the k decode of the B gather from a table (one uniform constant load per row per tile) instead of
 *     ~15 integer ops; costs constant-cache traffic and a dependent load on the prefetch path. K <= ~8000. */
#include "codegen/emit.h"
#include "ops/conv2d/templates.h"

#include <stdio.h>
#include <string.h>

static const char igemm_head[] =
    "#define K (CI * KH * KW)\n"
    "#define RS (KH * KW)\n"
    "#define HW (H * W)\n"
    "#define OHW (OH * OW)\n"
    "#define NG (NB * OHW)\n"
    "#define TY (BM / TM)\n"
    "#define TX (BN / TN)\n"
    "#define NT (TY * TX)\n"
    "#define WLN (32 / WLM)\n"
    "#define VM (TM < 4 ? TM : 4)\n"
    "#define VN (TN < 4 ? TN : 4)\n"
    "#define LDA (BM + PAD)\n"
    "#define LDB (BN + PAD)\n"
    "#define KT ((K + BK - 1) / BK)\n"
    "#define KPS ((KT + SPLITK - 1) / SPLITK)\n"
    "#define KEXACT (K % BK == 0)\n"
    "#define A_TOT (BM * BK / VA)\n"
    "#define A_PER ((A_TOT + NT - 1) / NT)\n"
    "#define A_RSTEP (NT / (BK / VA))\n"
    "#define TBN (NT < BN ? NT : BN)\n"
    "#define TBK (NT / TBN)\n"
    "#define CB (BN / TBN)\n"
    "#define RB ((BK + TBK - 1) / TBK)\n"
    "#define GRID_MN (((NG + BN - 1) / BN) * ((CO + BM - 1) / BM))\n"
    "\n"
    CUT_EMIT_VEC_SMEM_MACROS
    "\n"
    "#define WS_FLOATS (SPLITK * CO * NG)\n"
    "#define WS_TILES GRID_MN\n"
    CUT_EMIT_SPLITK_TEXT
    "\n"
    "extern \"C\" __global__ void LAUNCH_BOUNDS\n"
    "cut_conv2d(const float *__restrict__ in, const float *__restrict__ w, float *__restrict__ out CUT_WS_ARGS)\n"
    "{\n"
    "    const int tid = threadIdx.x;\n"
    "    const int warp = tid / 32, lane = tid % 32;\n"
    "    const int ty = (warp / (TX / WLN)) * WLM + lane / WLN;\n"
    "    const int tx = (warp % (TX / WLN)) * WLN + lane % WLN;\n"
    "    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;\n"
    "#if SPLITK > 1\n"
    "    const int kt_begin = blockIdx.z * KPS;\n"
    "    const int kt_end = kt_begin + KPS < KT ? kt_begin + KPS : KT;\n"
    "#else\n"
    "    const int kt_begin = 0, kt_end = KT;\n"
    "#endif\n"
    "    __shared__ __align__(16) float As[STAGES][BK][LDA];\n"
    "    __shared__ __align__(16) float Bs[STAGES][BK][LDB];\n"
    "\n"
    "    /* A loader: vector a_kq of a row, rows a_r + i * A_RSTEP */\n"
    "    const int a_kq = tid % (BK / VA), a_r = tid / (BK / VA);\n"
    "    float a_st[A_PER][VA];\n"
    "    /* B loader: columns b_c + j * TBN, rows b_r + i * TBK; per-column gather state */\n"
    "    const int b_c = tid % TBN, b_r = tid / TBN;\n"
    "    float b_st[RB][CB];\n"
    "    int b_base[CB], b_ih[CB], b_iw[CB];\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < CB; j++) {\n"
    "        const int n = n0 + b_c + j * TBN;\n"
    "        if (NG % BN == 0 || n < NG) {\n"
    "            const int img = n / OHW, r = n - img * OHW;\n"
    "            const int oh = r / OW, ow = r - oh * OW;\n"
    "            b_ih[j] = oh * S - P;\n"
    "            b_iw[j] = ow * S - P;\n"
    "            b_base[j] = img * (CI * HW) + b_ih[j] * W + b_iw[j];\n"
    "        } else {\n"
    "            b_ih[j] = b_iw[j] = -(1 << 30); /* fails every range test */\n"
    "            b_base[j] = 0;                  /* in range whatever the row (used without padding) */\n"
    "        }\n"
    "    }\n"
    "\n"
    "    float acc[TM][TN];\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < TM; i++)\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < TN; j++)\n"
    "            acc[i][j] = 0.0f;\n"
    "\n";

/* Loads tile ktl (an int in scope) into a_st / b_st. */
static const char igemm_load[] =
    "#pragma unroll\n"
    "        for (int i = 0; i < A_PER; i++) {\n"
    "            const int r = a_r + i * A_RSTEP, k = ktl * BK + a_kq * VA;\n"
    "            const bool ok = (A_TOT % NT == 0 || r < BM) && (CO % BM == 0 || m0 + r < CO) && (KEXACT || k < K);\n"
    "#if VA == 4\n"
    "            const float4 v = ok ? __ldg(reinterpret_cast<const float4 *>(w + (m0 + r) * K + k))\n"
    "                                : make_float4(0.0f, 0.0f, 0.0f, 0.0f);\n"
    "            a_st[i][0] = v.x; a_st[i][1] = v.y; a_st[i][2] = v.z; a_st[i][3] = v.w;\n"
    "#else\n"
    "            a_st[i][0] = ok ? __ldg(w + (m0 + r) * K + k) : 0.0f;\n"
    "#endif\n"
    "        }\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < RB; i++) {\n"
    "            const int row = b_r + i * TBK;\n"
    "#if KTAB\n"
    "            /* rows past K: offset 0 (a safe address; A is 0 there) and kh past any image row */\n"
    "            const int2 kd = cut_ktab[ktl * BK + row];\n"
    "            const int roff = kd.x, kh = kd.y >> 16, kw = kd.y & 0xffff;\n"
    "            const bool rok = BK % TBK == 0 || row < BK;\n"
    "#else\n"
    "            const int k = ktl * BK + row, ci = k / RS, rs = k - ci * RS, kh = rs / KW, kw = rs - kh * KW;\n"
    "            const int roff = ci * HW + kh * W + kw;\n"
    "            const bool rok = (BK % TBK == 0 || row < BK) && (KEXACT || k < K);\n"
    "#endif\n"
    "#pragma unroll\n"
    "            for (int j = 0; j < CB; j++) {\n"
    "#if P == 0\n"
    "                const bool ok = rok;\n"
    "#else\n"
    "                const bool ok = rok && (unsigned)(b_ih[j] + kh) < (unsigned)H\n"
    "                                    && (unsigned)(b_iw[j] + kw) < (unsigned)W;\n"
    "#endif\n"
    "                b_st[i][j] = ok ? __ldg(in + b_base[j] + roff) : 0.0f;\n"
    "            }\n"
    "        }\n";

/* Stores a_st / b_st into buffer sb (an int in scope). */
static const char igemm_store[] =
    "#pragma unroll\n"
    "        for (int i = 0; i < A_PER; i++) {\n"
    "            const int r = a_r + i * A_RSTEP;\n"
    "            if (A_TOT % NT == 0 || r < BM) {\n"
    "#pragma unroll\n"
    "                for (int e = 0; e < VA; e++)\n"
    "                    As[sb][a_kq * VA + e][r] = a_st[i][e];\n"
    "            }\n"
    "        }\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < RB; i++) {\n"
    "            const int row = b_r + i * TBK;\n"
    "            if (BK % TBK == 0 || row < BK) {\n"
    "#pragma unroll\n"
    "                for (int j = 0; j < CB; j++)\n"
    "                    Bs[sb][row][b_c + j * TBN] = b_st[i][j];\n"
    "            }\n"
    "        }\n";

/* The outer products of buffer cb (an int in scope). */
static const char igemm_compute[] = CUT_EMIT_OUTER_PRODUCT;

static const char igemm_tail[] =
    "\n"
    "#if SPLITK > 1\n"
    "    /* Split-K: publish this slice's partial tile; the last slice to arrive sums all of them in slice order. */\n"
    "    {\n"
    "        float *__restrict__ ws = cut_ws + (size_t)blockIdx.z * CO * NG;\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < TM; i++) {\n"
    "            const int m = m0 + (i / VM) * (TY * VM) + ty * VM + i % VM;\n"
    "#pragma unroll\n"
    "            for (int j = 0; j < TN; j++) {\n"
    "                const int n = n0 + (j / VN) * (TX * VN) + tx * VN + j % VN;\n"
    "                if ((CO % BM == 0 || m < CO) && (NG % BN == 0 || n < NG))\n"
    "                    ws[m * NG + n] = acc[i][j];\n"
    "            }\n"
    "        }\n"
    "        const int tile = blockIdx.y * gridDim.x + blockIdx.x;\n"
    "        if (!cut_splitk_last(&cut_cnt[tile], tid))\n"
    "            return;\n"
    "        /* sum in slice order (bitwise reproducible whichever block arrives last), own partial included */\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < TM; i++)\n"
    "#pragma unroll\n"
    "            for (int j = 0; j < TN; j++)\n"
    "                acc[i][j] = 0.0f;\n"
    "#pragma unroll 1\n"
    "        for (int z = 0; z < SPLITK; z++) {\n"
    "            const float *__restrict__ wz = cut_ws + (size_t)z * CO * NG;\n"
    "#pragma unroll\n"
    "            for (int i = 0; i < TM; i++) {\n"
    "                const int m = m0 + (i / VM) * (TY * VM) + ty * VM + i % VM;\n"
    "#pragma unroll\n"
    "                for (int j = 0; j < TN; j++) {\n"
    "                    const int n = n0 + (j / VN) * (TX * VN) + tx * VN + j % VN;\n"
    "                    if ((CO % BM == 0 || m < CO) && (NG % BN == 0 || n < NG))\n"
    "                        acc[i][j] += __ldcg(&wz[m * NG + n]);\n"
    "                }\n"
    "            }\n"
    "        }\n"
    "        if (tid == 0)\n"
    "            cut_cnt[tile] = 0u; /* every slice has arrived: ready for the next launch */\n"
    "    }\n"
    "#endif\n"
    "\n"
    "    /* C tile -> NCHW output: column n = img*OHW + r goes to out[img][m][r]. (Offsets are recomputed here rather\n"
    "     * than kept in arrays: ptxas hoists such arrays above the main loop, 24 more live registers at 8x8.) */\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < TM; i++) {\n"
    "        const int m = m0 + (i / VM) * (TY * VM) + ty * VM + i % VM;\n"
    "        if (CO % BM != 0 && m >= CO)\n"
    "            continue;\n"
    "        float *__restrict__ out_m = out + m * OHW;\n"
    "#pragma unroll\n"
    "        for (int c = 0; c < TN / VN; c++) {\n"
    "            const int n = n0 + c * (TX * VN) + tx * VN;\n"
    "            const int img = n / OHW, r = n - img * OHW;\n"
    "#if OHW % VN == 0\n"
    "            /* the chunk of VN columns lies in one image and is VN-aligned */\n"
    "            if (NG % BN == 0 || n < NG)\n"
    "                ST_VN(&out_m[img * (CO * OHW) + r], &acc[i][c * VN]);\n"
    "#else\n"
    "#pragma unroll\n"
    "            for (int e = 0; e < VN; e++) {\n"
    "                if (n + e < NG) {\n"
    "#if OHW >= VN\n"
    "                    /* the chunk crosses at most one image boundary */\n"
    "                    const int rr = r + e, wrap = rr >= OHW;\n"
    "                    out_m[(img + wrap) * (CO * OHW) + rr - wrap * OHW] = acc[i][c * VN + e];\n"
    "#else\n"
    "                    const int ie = (n + e) / OHW;\n"
    "                    out_m[ie * (CO * OHW) + (n + e - ie * OHW)] = acc[i][c * VN + e];\n"
    "#endif\n"
    "                }\n"
    "            }\n"
    "#endif\n"
    "        }\n"
    "    }\n"
    "}\n";

/* { const int ktl = <tile>; load } at nesting depth (4 spaces each) depth >= 1. */
static void emit_load(cut_buf *b, const char *tile, int depth)
{
    cut_buf_printf(b, "%*s{\n%*sconst int ktl = %s;\n", 4 * depth, "", 4 * depth + 4, "", tile);
    cut_emit_indented(b, igemm_load, 4 * depth - 4);
    cut_buf_printf(b, "%*s}\n", 4 * depth, "");
}

static void emit_store(cut_buf *b, const char *buf, int depth)
{
    cut_buf_printf(b, "%*s{\n%*sconst int sb = %s;\n", 4 * depth, "", 4 * depth + 4, "", buf);
    cut_emit_indented(b, igemm_store, 4 * depth - 4);
    cut_buf_printf(b, "%*s}\n", 4 * depth, "");
}

/* The k -> (ci, kh, kw) table of the B gather: entry k is {ci*H*W + kh*W + kw, kh << 16 | kw}; entries past K
 * (the last tile's tail, and rows up to TBK of a BK < TBK tile) are {0, KTAB_PAST_K << 16}: a safe offset and a
 * filter row past any image, so that the range test zeroes them (A is zero there too). */
static void emit_ktab(cut_buf *b, const cut_conv *c, const cut_igemm_geom *g, int bk)
{
    int n = g->ktiles * bk + g->tbk, rs = c->kh * c->kw;
    cut_buf_printf(b, "static __constant__ int2 cut_ktab[%d] = {", n);
    for (int k = 0; k < n; k++) {
        if (k % 8 == 0)
            cut_buf_printf(b, "\n   ");
        if (k < g->gk) {
            int ci = k / rs, kh = k % rs / c->kw, kw = k % c->kw;
            cut_buf_printf(b, " {%d, %d},", ci * c->h * c->w + kh * c->w + kw, kh << 16 | kw);
        } else {
            cut_buf_printf(b, " {0, %d},", 0x4000 << 16);
        }
    }
    cut_buf_printf(b, "\n};\n");
}

/* The main loop over the block's k tiles [kt_begin, kt_end) (never empty: the space checks every split-K slice
 * has at least one tile). */
static void emit_main_loop(cut_buf *b, int stages)
{
    if (stages == 2) {
        emit_load(b, "kt_begin", 1);
        emit_store(b, "0", 1);
        cut_buf_printf(b, "    __syncthreads();\n"
                          "    for (int kt = kt_begin; kt < kt_end; kt++) {\n"
                          "        const int cb = (kt - kt_begin) & 1;\n"
                          "        if (kt + 1 < kt_end)\n");
        emit_load(b, "kt + 1", 2);
        cut_buf_append(b, igemm_compute, strlen(igemm_compute));
        cut_buf_printf(b, "        if (kt + 1 < kt_end)\n");
        emit_store(b, "cb ^ 1", 2);
        cut_buf_printf(b, "        __syncthreads();\n"
                          "    }\n");
    } else {
        cut_buf_printf(b, "    for (int kt = kt_begin; kt < kt_end; kt++) {\n"
                          "        const int cb = 0;\n");
        emit_load(b, "kt", 2);
        emit_store(b, "0", 2);
        cut_buf_printf(b, "        __syncthreads();\n");
        cut_buf_append(b, igemm_compute, strlen(igemm_compute));
        cut_buf_printf(b, "        __syncthreads();\n"
                          "    }\n");
    }
}

int cut_emit_igemm(cut_buf *b, const cut_conv *c, const cut_sched *s, cut_kernel_src *out, cut_err *e)
{
    (void)e;
    const int *k = s->k;
    cut_igemm_geom g;
    cut_igemm_geometry(c, s, &g);
    cut_buf_printf(b, "#define NB %d\n#define H %d\n#define W %d\n#define CI %d\n#define CO %d\n#define KH %d\n"
                      "#define KW %d\n#define S %d\n#define P %d\n#define OH %d\n#define OW %d\n",
                   c->n, c->h, c->w, c->ci, c->co, c->kh, c->kw, c->stride, c->pad, g.oh, g.ow);
    cut_buf_printf(b, "#define BM %d\n#define BN %d\n#define BK %d\n#define TM %d\n#define TN %d\n#define WLM %d\n",
                   k[CUT_G_BM], k[CUT_G_BN], k[CUT_G_BK], k[CUT_G_TM], k[CUT_G_TN], k[CUT_G_WLM]);
    cut_buf_printf(b, "#define STAGES %d\n#define VA %d\n#define PAD %d\n#define SPLITK %d\n#define KTAB %d\n",
                   k[CUT_G_STAGES], k[CUT_G_VA], k[CUT_G_PAD], k[CUT_G_SPLITK], k[CUT_G_KTAB]);
    /* minb=0: ptxas's own occupancy heuristic (it may spill a little for more resident blocks, e.g. 32 registers
     * at 1024 threads); 1: no occupancy target (up to 65536/NT registers); 2: at most 32768/NT registers. */
    if (k[CUT_G_MINB])
        cut_buf_printf(b, "#define LAUNCH_BOUNDS __launch_bounds__(NT, %d)\n", k[CUT_G_MINB]);
    else
        cut_buf_printf(b, "#define LAUNCH_BOUNDS __launch_bounds__(NT)\n");
    if (k[CUT_G_UNROLL] >= k[CUT_G_BK])
        cut_buf_printf(b, "#define UNROLL_KK _Pragma(\"unroll\")\n");
    else
        cut_buf_printf(b, "#define UNROLL_KK _Pragma(\"unroll %d\")\n", k[CUT_G_UNROLL]);
    if (k[CUT_G_KTAB])
        emit_ktab(b, c, &g, k[CUT_G_BK]);
    cut_buf_append(b, igemm_head, strlen(igemm_head));
    emit_main_loop(b, k[CUT_G_STAGES]);
    cut_buf_append(b, igemm_tail, strlen(igemm_tail));
    cut_emit_launch(out, g.grid, g.threads);
    return 0;
}
