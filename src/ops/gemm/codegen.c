/* cutune — code generator of the generic register-tiled SIMT GEMM template (src/ops/gemm/space.c holds the space).
 *
 * C[M][N] = A[M][K] · B with B[K][N] (NN) or B[N][K] (NT, C = A·Bᵀ); all row-major, sizes baked in. C is fp32; A and
 * B are in the dtype's storage (fp32 and tf32: float; fp16 and bf16: 16-bit, widened to fp32 as they are loaded).
 * Block (x, y) computes the BM x BN tile of C at (m0, n0) = (y*BM, x*BN) in KT = ceil(K/BK) steps. Per step:
 *   global -> registers: the threads walk the A tile (BM rows of BK floats) and the B tile (NN: BK rows of BN
 *     floats; NT: BN rows of BK floats) as flat arrays of VEC-float vectors, thread t taking vectors t, t+NT, ...
 *     so consecutive threads read consecutive vectors of a row (coalesced). VEC = 2, 4 uses float2/float4 loads;
 *     the space allows it only when every row starts on a vector boundary (K, and N for NN, divisible by VEC),
 *     so a vector is either wholly inside the matrix or wholly past its end and one guard per vector suffices.
 *     Loads past M, N or K read 0 (tails: no size needs to be a multiple of a tile).
 *   registers -> shared memory: both operands are stored with k as the row, As[k][m] and Bs[k][n] (A and NT's B
 *     are transposed on the way, one float per store), rows padded by PAD floats against bank conflicts of the
 *     transposing stores; NN's B keeps its row order, so each loaded vector goes in with one VEC-wide store.
 *   shared memory -> registers -> FMAs: thread (ty, tx) reads TM floats of As[k][.] and TN of Bs[k][.] in chunks
 *     of up to 4 (one 16-byte LDS each) and accumulates the TM x TN outer product. Its rows are
 *     m = c*TY*VM + ty*VM + i (chunks of VM = min(TM, 4) rows strided by TY*VM), likewise its columns, so a warp's
 *     lanes read consecutive 16-byte chunks and the final stores coalesce.
 * With DBUF = 1 the shared tiles are double-buffered: the global loads of tile t+1 are issued into registers
 * before the FMAs of tile t and stored to the other buffer after them (one __syncthreads per tile instead of two).
 * Epilogue: guarded stores of the register tile, float2/float4 along n when N allows aligned vectors; each value is
 * alpha·acc (+ beta·Cin when beta != 0: Cin is read only then), through EPI (src/ops/gemm/extras.h).
 * Issue 21: A stored K×M (TN, TT) is loaded like NN's B: BK rows of BM floats, vectors along m, stored to As[k][m]
 * with one vector store (no transposition on the way). A strided batch is blockIdx.z: each block moves A, B, C
 * (and Cin) to its matrix first (BATCH_SLICE).
 *
 * What the knobs trade. BM, BN: reuse of every loaded element (global traffic per FMA ~ 1/BM + 1/BN) against the
 * number of blocks. BK: fewer barriers per FMA against shared memory and staging registers. TM, TN: TM + TN shared
 * loads per TM*TN FMAs against TM*TN accumulator registers. VEC: fewer, wider global loads. DBUF: latency hiding
 * against twice the shared memory and the live prefetched tile. PAD: bank conflicts of the transposing stores.
 * UNROLL: unroll factor of the BK loop (code size UNROLL*TM*TN FMAs). */
#include "codegen/emit.h"
#include "ops/gemm/extras.h"
#include "ops/gemm/simt.h"

#include "cutune/util.h"

#include <stdio.h>
#include <string.h>

static const char gemm_head[] =
    "#define TY (BM / TM)\n"
    "#define TX (BN / TN)\n"
    "#define NTHR (TY * TX)\n"
    "#define NBUF (DBUF + 1)\n"
    "#define VM (TM < 4 ? TM : 4)\n"
    "#define VN (TN < 4 ? TN : 4)\n"
    "#define LDA (BM + PAD)\n"
    "#define LDB (BN + PAD)\n"
    "#define KT ((K + BK - 1) / BK)\n"
    "#if LAYOUT_TA\n"
    "#define A_VPR (BM / VEC) /* A tile: BK rows (k) of BM/VEC vectors (m) */\n"
    "#define A_TOT (BK * A_VPR)\n"
    "#else\n"
    "#define A_VPR (BK / VEC) /* A tile: BM rows (m) of BK/VEC vectors (k) */\n"
    "#define A_TOT (BM * A_VPR)\n"
    "#endif\n"
    "#define A_PER ((A_TOT + NTHR - 1) / NTHR)\n"
    "#if LAYOUT_NT\n"
    "#define B_VPR (BK / VEC) /* B tile: BN rows (n) of BK/VEC vectors (k) */\n"
    "#define B_TOT (BN * B_VPR)\n"
    "#else\n"
    "#define B_VPR (BN / VEC) /* B tile: BK rows (k) of BN/VEC vectors (n) */\n"
    "#define B_TOT (BK * B_VPR)\n"
    "#endif\n"
    "#define B_PER ((B_TOT + NTHR - 1) / NTHR)\n"
    "\n"
    ;

/* Global loads of VEC consecutive input elements into floats: fp32 storage. */
static const char gemm_ldg32[] =
    "typedef float elem_t;\n"
    "#if VEC == 4\n"
    "#define LDG_VEC(d, p) { const float4 t_ = __ldg(reinterpret_cast<const float4 *>(p)); "
    "(d)[0] = t_.x; (d)[1] = t_.y; (d)[2] = t_.z; (d)[3] = t_.w; }\n"
    "#elif VEC == 2\n"
    "#define LDG_VEC(d, p) { const float2 t_ = __ldg(reinterpret_cast<const float2 *>(p)); "
    "(d)[0] = t_.x; (d)[1] = t_.y; }\n"
    "#else\n"
    "#define LDG_VEC(d, p) { (d)[0] = __ldg(p); }\n"
    "#endif\n"
    ;

/* The same for 16-bit storage (ELEM_BF16 picks bf16 over fp16). */
static const char gemm_ldg16[] =
    "/* 16-bit inputs (fp16 or bf16 bits), widened to fp32 on load: VEC elements in one 2-, 4- or 8-byte load */\n"
    "typedef unsigned short elem_t;\n"
    CUT_EMIT_WIDEN16_TEXT
    "#if VEC == 4\n"
    "#define LDG_VEC(d, p) { const uint2 t_ = __ldg(reinterpret_cast<const uint2 *>(p)); "
    "(d)[0] = widen(t_.x & 0xFFFFu); (d)[1] = widen(t_.x >> 16); (d)[2] = widen(t_.y & 0xFFFFu); "
    "(d)[3] = widen(t_.y >> 16); }\n"
    "#elif VEC == 2\n"
    "#define LDG_VEC(d, p) { const unsigned int t_ = __ldg(reinterpret_cast<const unsigned int *>(p)); "
    "(d)[0] = widen(t_ & 0xFFFFu); (d)[1] = widen(t_ >> 16); }\n"
    "#else\n"
    "#define LDG_VEC(d, p) { (d)[0] = widen(__ldg(p)); }\n"
    "#endif\n"
    ;

/* The kernel's start. STS_VEC: VEC floats to shared memory in one store (an NN B row is contiguous along n; the
 * row pitch BN + PAD and the column are multiples of VEC, so the vector is aligned). */
static const char gemm_start[] =
    "#if VEC == 4\n"
    "#define STS_VEC(p, s) *reinterpret_cast<float4 *>(p) = make_float4((s)[0], (s)[1], (s)[2], (s)[3])\n"
    "#elif VEC == 2\n"
    "#define STS_VEC(p, s) *reinterpret_cast<float2 *>(p) = make_float2((s)[0], (s)[1])\n"
    "#else\n"
    "#define STS_VEC(p, s) *(p) = (s)[0]\n"
    "#endif\n"
    CUT_EMIT_VEC_SMEM_MACROS
    "\n"
    "extern \"C\" __global__ void __launch_bounds__(NTHR, 1)\n"
    "cut_gemm(const elem_t *__restrict__ A, const elem_t *__restrict__ B, float *__restrict__ C CIN_PARAM)\n"
    "{\n"
    "    BATCH_SLICE()\n"
    "    const int tid = threadIdx.x;\n"
    "    const int tx = tid % TX, ty = tid / TX;\n"
    "    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;\n"
    "    __shared__ __align__(16) float As[NBUF][BK][LDA];\n"
    "    __shared__ __align__(16) float Bs[NBUF][BK][LDB];\n"
    "    float a_st[A_PER][VEC], b_st[B_PER][VEC];\n"
    "\n"
    "    float acc[TM][TN];\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < TM; i++)\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < TN; j++)\n"
    "            acc[i][j] = 0.0f;\n"
    "\n";

/* Loads k tile ktl (an int in scope) into a_st / b_st; zeros past M, N, K. */
static const char gemm_load[] =
    "#pragma unroll\n"
    "        for (int i = 0; i < A_PER; i++) {\n"
    "            const int idx = tid + i * NTHR;\n"
    "#if LAYOUT_TA\n"
    "            const int k = ktl * BK + idx / A_VPR, m = m0 + (idx % A_VPR) * VEC;\n"
    "            const size_t off = (size_t)k * M + m;\n"
    "#else\n"
    "            const int m = m0 + idx / A_VPR, k = ktl * BK + (idx % A_VPR) * VEC;\n"
    "            const size_t off = (size_t)m * K + k;\n"
    "#endif\n"
    "            if ((A_TOT % NTHR == 0 || idx < A_TOT) && (M % BM == 0 || m < M) && (K % BK == 0 || k < K))\n"
    "                LDG_VEC(a_st[i], A + off)\n"
    "            else {\n"
    "#pragma unroll\n"
    "                for (int v = 0; v < VEC; v++)\n"
    "                    a_st[i][v] = 0.0f;\n"
    "            }\n"
    "        }\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < B_PER; i++) {\n"
    "            const int idx = tid + i * NTHR;\n"
    "#if LAYOUT_NT\n"
    "            const int n = n0 + idx / B_VPR, k = ktl * BK + (idx % B_VPR) * VEC;\n"
    "            const size_t off = (size_t)n * K + k;\n"
    "#else\n"
    "            const int k = ktl * BK + idx / B_VPR, n = n0 + (idx % B_VPR) * VEC;\n"
    "            const size_t off = (size_t)k * N + n;\n"
    "#endif\n"
    "            if ((B_TOT % NTHR == 0 || idx < B_TOT) && (N % BN == 0 || n < N) && (K % BK == 0 || k < K))\n"
    "                LDG_VEC(b_st[i], B + off)\n"
    "            else {\n"
    "#pragma unroll\n"
    "                for (int v = 0; v < VEC; v++)\n"
    "                    b_st[i][v] = 0.0f;\n"
    "            }\n"
    "        }\n";

/* Stores a_st / b_st into buffer sb (an int in scope), k as the row of both tiles. */
static const char gemm_store[] =
    "#pragma unroll\n"
    "        for (int i = 0; i < A_PER; i++) {\n"
    "            const int idx = tid + i * NTHR, r = idx / A_VPR, c = (idx % A_VPR) * VEC;\n"
    "            if (A_TOT % NTHR == 0 || idx < A_TOT) {\n"
    "#if LAYOUT_TA\n"
    "                STS_VEC(&As[sb][r][c], a_st[i]); /* A stored KxM: the row is k already */\n"
    "#else\n"
    "#pragma unroll\n"
    "                for (int v = 0; v < VEC; v++)\n"
    "                    As[sb][c + v][r] = a_st[i][v];\n"
    "#endif\n"
    "            }\n"
    "        }\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < B_PER; i++) {\n"
    "            const int idx = tid + i * NTHR, r = idx / B_VPR, c = (idx % B_VPR) * VEC;\n"
    "            if (B_TOT % NTHR == 0 || idx < B_TOT) {\n"
    "#if LAYOUT_NT\n"
    "#pragma unroll\n"
    "                for (int v = 0; v < VEC; v++)\n"
    "                    Bs[sb][c + v][r] = b_st[i][v];\n"
    "#else\n"
    "                STS_VEC(&Bs[sb][r][c], b_st[i]); /* one vector: scalar stores 4 floats apart conflict */\n"
    "#endif\n"
    "            }\n"
    "        }\n";

/* The outer products of buffer cb (an int in scope). */
static const char gemm_compute[] = CUT_EMIT_OUTER_PRODUCT;

static const char gemm_tail[] =
    "\n"
    "    /* register tile -> C, guarded at the M and N tails */\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < TM; i++) {\n"
    "        const int m = m0 + (i / VM) * (TY * VM) + ty * VM + i % VM;\n"
    "        if (M % BM != 0 && m >= M)\n"
    "            continue;\n"
    "        float *__restrict__ c_row = C + (size_t)m * N;\n"
    "#pragma unroll\n"
    "        for (int c = 0; c < TN / VN; c++) {\n"
    "            const int n = n0 + c * (TX * VN) + tx * VN;\n"
    "#if N % VN == 0\n"
    "            /* n is a multiple of VN, so the chunk is aligned and wholly inside or outside the row */\n"
    "            if (N % BN == 0 || n < N) {\n"
    "                float o[VN];\n"
    "#pragma unroll\n"
    "                for (int v = 0; v < VN; v++)\n"
    "                    o[v] = EPI(acc[i][c * VN + v], (size_t)m * N + n + v);\n"
    "                ST_VN(&c_row[n], o);\n"
    "            }\n"
    "#else\n"
    "#pragma unroll\n"
    "            for (int v = 0; v < VN; v++)\n"
    "                if (n + v < N)\n"
    "                    c_row[n + v] = EPI(acc[i][c * VN + v], (size_t)m * N + n + v);\n"
    "#endif\n"
    "        }\n"
    "    }\n"
    "}\n";

/* { const int <var> = <value>; text } at nesting depth (4 spaces each) depth >= 1. */
static void emit_block(cut_buf *b, const char *var, const char *value, const char *text, int depth)
{
    cut_buf_printf(b, "%*s{\n%*sconst int %s = %s;\n", 4 * depth, "", 4 * depth + 4, "", var, value);
    cut_emit_indented(b, text, 4 * depth - 4);
    cut_buf_printf(b, "%*s}\n", 4 * depth, "");
}

/* The main loop over the KT k tiles (KT >= 1: K > 0). */
static void emit_main_loop(cut_buf *b, int dbuf)
{
    if (dbuf) {
        emit_block(b, "ktl", "0", gemm_load, 1);
        emit_block(b, "sb", "0", gemm_store, 1);
        cut_buf_printf(b, "    __syncthreads();\n"
                          "    for (int kt = 0; kt < KT; kt++) {\n"
                          "        const int cb = kt & 1;\n"
                          "        if (kt + 1 < KT)\n");
        emit_block(b, "ktl", "kt + 1", gemm_load, 2);
        cut_buf_append(b, gemm_compute, strlen(gemm_compute));
        cut_buf_printf(b, "        if (kt + 1 < KT)\n");
        emit_block(b, "sb", "cb ^ 1", gemm_store, 2);
        cut_buf_printf(b, "        __syncthreads();\n"
                          "    }\n");
    } else {
        cut_buf_printf(b, "    for (int kt = 0; kt < KT; kt++) {\n"
                          "        const int cb = 0;\n");
        emit_block(b, "ktl", "kt", gemm_load, 2);
        emit_block(b, "sb", "0", gemm_store, 2);
        cut_buf_printf(b, "        __syncthreads();\n");
        cut_buf_append(b, gemm_compute, strlen(gemm_compute));
        cut_buf_printf(b, "        __syncthreads();\n"
                          "    }\n");
    }
}

static void emit_defines(cut_buf *b, const cut_gemm *g, const cut_gemm_sched *s)
{
    const int *k = s->k;
    cut_buf_printf(b, "#define M %d\n#define N %d\n#define K %d\n#define LAYOUT_NT %d\n", g->m, g->n, g->k,
                   cut_gemm_b_trans(g));
    cut_gemm_emit_extras(b, g, 1);
    if (cut_dtype_size(g->dtype) == 2)
        cut_buf_printf(b, "#define ELEM_BF16 %d\n", g->dtype == CUT_DT_BF16);
    cut_buf_printf(b, "#define BM %d\n#define BN %d\n#define BK %d\n#define TM %d\n#define TN %d\n", k[CUT_GS_BM],
                   k[CUT_GS_BN], k[CUT_GS_BK], k[CUT_GS_TM], k[CUT_GS_TN]);
    cut_buf_printf(b, "#define VEC %d\n#define DBUF %d\n#define PAD %d\n", k[CUT_GS_VEC], k[CUT_GS_DBUF],
                   k[CUT_GS_PAD]);
    if (k[CUT_GS_UNROLL] >= k[CUT_GS_BK])
        cut_buf_printf(b, "#define UNROLL_KK _Pragma(\"unroll\")\n");
    else
        cut_buf_printf(b, "#define UNROLL_KK _Pragma(\"unroll %d\")\n", k[CUT_GS_UNROLL]);
}

int cut_codegen_gemm_simt(const cut_gemm *g, const cut_gemm_sched *s, cut_kernel_src *out, cut_err *e)
{
    memset(out, 0, sizeof *out);
    if (cut_gemm_simt_check_shape(g, s, e) != 0)
        return cut_err_wrap(e, "codegen gemm simt");
    cut_gemm_simt_geom gm;
    cut_gemm_simt_geometry(g, s, &gm);
    cut_buf b;
    cut_buf_init(&b);
    cut_emit_gemm_banner(&b, g, s, NULL);
    emit_defines(&b, g, s);
    cut_buf_append(&b, gemm_head, strlen(gemm_head));
    cut_buf_append(&b, cut_gemm_extras_text, strlen(cut_gemm_extras_text));
    const char *ldg = cut_dtype_size(g->dtype) == 2 ? gemm_ldg16 : gemm_ldg32;
    cut_buf_append(&b, ldg, strlen(ldg));
    cut_buf_append(&b, gemm_start, strlen(gemm_start));
    emit_main_loop(&b, s->k[CUT_GS_DBUF]);
    cut_buf_append(&b, gemm_tail, strlen(gemm_tail));
    out->src = b.data; /* ownership moves to out */
    snprintf(out->entry, sizeof out->entry, "cut_gemm");
    memcpy(out->grid, gm.grid, sizeof out->grid);
    out->block[0] = (unsigned)gm.threads;
    out->block[1] = out->block[2] = 1;
    out->smem_dynamic = 0;
    out->uses_inline_ptx = 0;
    out->tol_scale = 1.0;
    out->extra_bufs = cut_gemm_extra_bufs(g);
    return 0;
}
