/* cutune — code generator of the "gemv" GEMM template (src/ops/gemm/gemv.c holds the space). Issue 21.
 *
 * C[M][N] (fp32) = alpha · op(A) · op(B) (+ beta · Cin) for M <= CUT_GEMV_MAX_M, every dtype (16-bit inputs widened
 * to fp32 as they are loaded; fp32 FMA, fp32 accumulation), every layout, a strided batch. Such a GEMM reads B once
 * and little else: the kernel is written to keep enough 16-byte loads of B in flight to run at DRAM bandwidth.
 *
 * Grid: x = column tiles of BN columns, z = batch x SPLITK (blockIdx.z = batch * SPLITK + slice). A block computes
 * all M rows of its BN columns over its slice [kb0, kb1) of K (slices of KSL, a multiple of 8, the last shorter).
 *
 * A (M x K or K x M, tiny) is staged once per block: the block's slice of every row, widened to fp32, into dynamic
 * shared memory (AV-element vector loads; A stored K x M is one contiguous run per slice). B never touches shared
 * memory: each lane loads VEC consecutive elements of a row of B (one 16-byte load at VEC = 16 / element size)
 * straight into registers, COLS such loads per k step, UNROLL k steps per loop iteration, all issued before the
 * iteration's FMAs (PIPE = 1: two register buffers in turn, the next iteration's loads issued before this one's
 * FMAs, and the first ones before A is staged, so that DRAM is busy from the kernel's start). STREAM = 1 reads B with ld.global.cs
 * (evict-first: B is read once), else through the read-only path.
 *
 * Two loop structures, by where B's rows run:
 *   B stored N x K (NT, TT; "dot"): each output is a dot product along B's contiguous rows. A warp's lanes form
 *     32/LANES groups of LANES lanes; a group walks K of COLS columns (LANES x VEC consecutive elements of each row
 *     per step: whole 32-byte sectors), the block's KWARPS warps along K interleave their steps. Per k step a lane
 *     reads VEC values of A per row from shared memory (float4s; the groups of a warp read the same addresses:
 *     broadcasts) and accumulates M x COLS sums. Then the LANES lanes of a group are summed with shuffles.
 *   B stored K x N (NN, TN; "axpy"): each k row of B is contiguous along n. A group's LANES lanes take consecutive
 *     VEC-element vectors of a row (coalesced), COLS vectors LANES x VEC apart; the 32/LANES groups of a warp and the
 *     KWARPS warps take different k rows. Per k row all lanes read the same M values of A (one broadcast float4 per
 *     four rows; A is staged k-major, rows padded to MP) and accumulate M x COLS x VEC sums. Then the groups of a
 *     warp are summed with shuffles.
 * The KWARPS warps' sums meet in shared memory (A's space, no longer needed) and the block's threads sum them
 * column-wise, so C is written by coalesced stores: alpha · sum (+ beta · Cin, read only when beta != 0; through
 * EPI_FRESH of src/ops/gemm/extras.h). C is written, never accumulated: the harness's poison is overwritten.
 *
 * SPLITK > 1 (few columns, long K: the 1 x 4096 x 4096 of LLM decode has 4096 columns for 132 SMs): each slice
 * stores its block sums to a static workspace and the last slice of a tile to arrive (a counter per tile) sums
 * them in slice order and writes C (CUT_EMIT_SPLITK_TEXT, as the implicit-GEMM convolutions): deterministic, no
 * atomics on data, no block waits for another; the counter goes back to 0 for the next launch.
 *
 * Tails: VEC divides B's rows (the space's alignment rule), so a vector is wholly inside or outside; loads past N
 * are clamped to the last column or vector (their sums are dropped at the store), steps past the slice's end are
 * skipped (predicated loads, no FMAs). M may be any value up to the limit.
 *
 * What the knobs trade. VEC: bytes per load instruction. LANES: (dot) lanes per column, i.e. sector-sized pieces
 * of a row against shuffle steps and columns per warp; (axpy) columns per warp against k rows per warp. COLS: loads
 * and reuse of each A value per step against registers. WARPS, KWARPS: threads per block and K split inside the
 * block (a shared-memory reduction) against columns per block. UNROLL and PIPE: bytes in flight per warp against
 * registers. SPLITK: blocks enough to fill the SMs against workspace traffic. STREAM: the cache policy of B. */
#include "codegen/emit.h"
#include "ops/gemm/extras.h"
#include "ops/gemm/gemv.h"
#include "ops/gemm/simt.h"

#include "cutune/util.h"

#include <stdio.h>
#include <string.h>

/* Element types, the raw vectors that hold VEC elements of B (or AV of A) as loaded, and their fp32 values. */
static const char gemv_types[] =
    "#define NTHR (WARPS * 32)\n"
    "#define WN (WARPS / KWARPS)\n"
    "#define GRPS (32 / LANES)\n"
    "#if LAYOUT_NT\n"
    "#define BN (WN * GRPS * COLS)\n"
    "#define KSTEP (KWARPS * LANES * VEC) /* k elements of one step of the block */\n"
    "#define AS_IDX(m, kl) ((m) * KSL + (kl))\n"
    "#else\n"
    "#define BN (WN * LANES * VEC * COLS)\n"
    "#define KSTEP (KWARPS * GRPS)        /* k rows of one step of the block */\n"
    "#define AS_IDX(m, kl) ((kl) * MP + (m))\n"
    "#endif\n"
    "#define KITER (KSTEP * UNROLL)\n"
    "#define TILES_N ((N + BN - 1) / BN)\n"
    "#define WS_TILES (BATCH * TILES_N)\n"
    "#define WS_FLOATS ((size_t)SPLITK * WS_TILES * M * BN)\n"
    "\n"
    "#if ELEM == 4\n"
    "typedef float elem_t;\n"
    "#else\n"
    "typedef unsigned short elem_t; /* the bits of __half or __nv_bfloat16 */\n"
    "#endif\n"
    "template <int Bytes> struct raw_of;\n"
    "template <> struct raw_of<16> { typedef uint4 t; };\n"
    "template <> struct raw_of<8> { typedef uint2 t; };\n"
    "template <> struct raw_of<4> { typedef unsigned int t; };\n"
    "template <> struct raw_of<2> { typedef unsigned short t; };\n"
    "typedef raw_of<VEC * ELEM>::t raw_t;  /* VEC elements of B */\n"
    "typedef raw_of<AV * ELEM>::t araw_t;  /* AV elements of A */\n"
    "/* 32-bit word w of a raw vector (w a constant once unrolled) */\n"
    "__device__ __forceinline__ unsigned int word_of(const uint4 &r, int w)\n"
    "{\n"
    "    return w == 0 ? r.x : w == 1 ? r.y : w == 2 ? r.z : r.w;\n"
    "}\n"
    "__device__ __forceinline__ unsigned int word_of(const uint2 &r, int w) { return w == 0 ? r.x : r.y; }\n"
    "__device__ __forceinline__ unsigned int word_of(unsigned int r, int) { return r; }\n"
    "__device__ __forceinline__ unsigned int word_of(unsigned short r, int) { return r; }\n"
    "#if ELEM == 2\n"
    CUT_EMIT_WIDEN16_TEXT
    "#endif\n"
    "/* element i of a raw vector as fp32 */\n"
    "template <class R> __device__ __forceinline__ float elem_of(const R &r, int i)\n"
    "{\n"
    "#if ELEM == 4\n"
    "    return __uint_as_float(word_of(r, i));\n"
    "#else\n"
    "    const unsigned int w = word_of(r, i >> 1);\n"
    "    return widen((i & 1) ? w >> 16 : w & 0xFFFFu);\n"
    "#endif\n"
    "}\n"
    "#if STREAM\n"
    "#define LDB(p) __ldcs(reinterpret_cast<const raw_t *>(p))\n"
    "#else\n"
    "#define LDB(p) __ldg(reinterpret_cast<const raw_t *>(p))\n"
    "#endif\n"
    "/* n consecutive floats of shared memory (n = 1, 2, or a multiple of 4; p aligned to min(n, 4) floats) */\n"
    "template <int n> __device__ __forceinline__ void lds(float *d, const float *p)\n"
    "{\n"
    "    if (n == 1) {\n"
    "        d[0] = p[0];\n"
    "    } else if (n == 2) {\n"
    "        const float2 t = *reinterpret_cast<const float2 *>(p);\n"
    "        d[0] = t.x, d[1] = t.y;\n"
    "    } else {\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < n / 4; i++) {\n"
    "            const float4 t = *reinterpret_cast<const float4 *>(p + 4 * i);\n"
    "            d[4 * i] = t.x, d[4 * i + 1] = t.y, d[4 * i + 2] = t.z, d[4 * i + 3] = t.w;\n"
    "        }\n"
    "    }\n"
    "}\n"
    "\n";

/* A's slice [kb0, kb1) of every row, widened to fp32, into shared memory at AS_IDX. */
static const char gemv_stage_a[] =
    "__device__ __forceinline__ void stage_a(const elem_t *__restrict__ A, float *as, int kb0, int kb1, int tid)\n"
    "{\n"
    "#if LAYOUT_TA\n"
    "    /* A stored K x M: the slice's rows are one contiguous run of (kb1 - kb0) * M elements */\n"
    "    const elem_t *__restrict__ src = A + (size_t)kb0 * M;\n"
    "    const int nv = (kb1 - kb0) * M / AV;\n"
    "#pragma unroll 4\n"
    "    for (int i = tid; i < nv; i += NTHR) {\n"
    "        const araw_t r = __ldg(reinterpret_cast<const araw_t *>(src + (size_t)i * AV));\n"
    "#pragma unroll\n"
    "        for (int v = 0; v < AV; v++)\n"
    "            as[AS_IDX((i * AV + v) % M, (i * AV + v) / M)] = elem_of(r, v);\n"
    "    }\n"
    "#else\n"
    "    const int vpr = (kb1 - kb0) / AV; /* vectors per row of the slice */\n"
    "#pragma unroll 4\n"
    "    for (int i = tid; i < M * vpr; i += NTHR) {\n"
    "        const int m = i / vpr, kl = (i % vpr) * AV;\n"
    "        const araw_t r = __ldg(reinterpret_cast<const araw_t *>(A + (size_t)m * K + kb0 + kl));\n"
    "#pragma unroll\n"
    "        for (int v = 0; v < AV; v++)\n"
    "            as[AS_IDX(m, kl + v)] = elem_of(r, v);\n"
    "    }\n"
    "#endif\n"
    "}\n"
    "\n";

/* The two loop structures: where a lane's loads point (setup), LOAD(buf, kb) of the iteration at k base kb, and
 * COMPUTE(buf, kb); then the reduction of a warp's lanes into red (shared, [KWARPS][M][BN]). */
static const char gemv_dot[] =
    "/* B stored N x K: group grp of warp (kw, wn) takes columns n0 + (wn * GRPS + grp) * COLS + c; its lane gl walks\n"
    " * K from kb0 + (kw * LANES + gl) * VEC in steps of KSTEP */\n"
    "#define SETUP()                                                                                  \\\n"
    "    const elem_t *__restrict__ bp[COLS];                                                         \\\n"
    "    _Pragma(\"unroll\") for (int c = 0; c < COLS; c++) {                                         \\\n"
    "        const int n = n0 + (wn * GRPS + grp) * COLS + c;                                         \\\n"
    "        bp[c] = B + (size_t)(n < N ? n : N - 1) * K; /* past N: a real row, its sum dropped */  \\\n"
    "    }                                                                                            \\\n"
    "    const int kfirst = kb0 + (kw * LANES + gl) * VEC;\n"
    "#define LOAD(buf, kb)                                                                            \\\n"
    "    _Pragma(\"unroll\") for (int u = 0; u < UNROLL; u++)                                         \\\n"
    "        if ((kb) + u * KSTEP < kb1)                                                              \\\n"
    "            _Pragma(\"unroll\") for (int c = 0; c < COLS; c++)                                   \\\n"
    "                buf[u][c] = LDB(bp[c] + (kb) + u * KSTEP);\n"
    "#define COMPUTE(buf, kb)                                                                         \\\n"
    "    _Pragma(\"unroll\") for (int u = 0; u < UNROLL; u++) {                                       \\\n"
    "        const int k_ = (kb) + u * KSTEP;                                                         \\\n"
    "        if (k_ < kb1) {                                                                          \\\n"
    "            float b[COLS][VEC];                                                                  \\\n"
    "            _Pragma(\"unroll\") for (int c = 0; c < COLS; c++)                                   \\\n"
    "                _Pragma(\"unroll\") for (int v = 0; v < VEC; v++) b[c][v] = elem_of(buf[u][c], v);\\\n"
    "            _Pragma(\"unroll\") for (int m = 0; m < M; m++) {                                    \\\n"
    "                float a[VEC];                                                                    \\\n"
    "                lds<VEC>(a, smem + AS_IDX(m, k_ - kb0));                                         \\\n"
    "                _Pragma(\"unroll\") for (int c = 0; c < COLS; c++)                               \\\n"
    "                    _Pragma(\"unroll\") for (int v = 0; v < VEC; v++)                            \\\n"
    "                        acc[m][c] = fmaf(a[v], b[c][v], acc[m][c]);                              \\\n"
    "            }                                                                                    \\\n"
    "        }                                                                                        \\\n"
    "    }\n"
    "#define ACC_DECL() float acc[M][COLS];                                                           \\\n"
    "    _Pragma(\"unroll\") for (int m = 0; m < M; m++)                                              \\\n"
    "        _Pragma(\"unroll\") for (int c = 0; c < COLS; c++) acc[m][c] = 0.0f;\n"
    "/* the LANES lanes of a group (consecutive lanes) summed; lane 0 of each group stores its columns */\n"
    "#define REDUCE_TO(red)                                                                           \\\n"
    "    _Pragma(\"unroll\") for (int m = 0; m < M; m++)                                              \\\n"
    "        _Pragma(\"unroll\") for (int c = 0; c < COLS; c++) {                                     \\\n"
    "            float s_ = acc[m][c];                                                                \\\n"
    "            _Pragma(\"unroll\") for (int o = LANES / 2; o > 0; o /= 2)                           \\\n"
    "                s_ += __shfl_xor_sync(0xffffffffu, s_, o);                                       \\\n"
    "            if (gl == 0)                                                                         \\\n"
    "                red[(kw * M + m) * BN + (wn * GRPS + grp) * COLS + c] = s_;                      \\\n"
    "        }\n"
    "\n";

static const char gemv_axpy[] =
    "/* B stored K x N: lane gl of warp (kw, wn) takes the vectors at columns n0 + wn * LANES * VEC * COLS +\n"
    " * c * LANES * VEC + gl * VEC; its group grp walks the k rows kb0 + kw * GRPS + grp in steps of KSTEP */\n"
    "#define SETUP()                                                                                  \\\n"
    "    const elem_t *__restrict__ bp[COLS];                                                         \\\n"
    "    _Pragma(\"unroll\") for (int c = 0; c < COLS; c++) {                                         \\\n"
    "        const int n = n0 + wn * (LANES * VEC * COLS) + c * (LANES * VEC) + gl * VEC;             \\\n"
    "        bp[c] = B + (n < N ? n : N - VEC); /* past N: a real vector, its sums dropped */        \\\n"
    "    }                                                                                            \\\n"
    "    const int kfirst = kb0 + kw * GRPS + grp;\n"
    "#define LOAD(buf, kb)                                                                            \\\n"
    "    _Pragma(\"unroll\") for (int u = 0; u < UNROLL; u++)                                         \\\n"
    "        if ((kb) + u * KSTEP < kb1)                                                              \\\n"
    "            _Pragma(\"unroll\") for (int c = 0; c < COLS; c++)                                   \\\n"
    "                buf[u][c] = LDB(bp[c] + (size_t)((kb) + u * KSTEP) * N);\n"
    "#define COMPUTE(buf, kb)                                                                         \\\n"
    "    _Pragma(\"unroll\") for (int u = 0; u < UNROLL; u++) {                                       \\\n"
    "        const int k_ = (kb) + u * KSTEP;                                                         \\\n"
    "        if (k_ < kb1) {                                                                          \\\n"
    "            float a[MP];                                                                         \\\n"
    "            lds<MP>(a, smem + AS_IDX(0, k_ - kb0));                                              \\\n"
    "            _Pragma(\"unroll\") for (int c = 0; c < COLS; c++) {                                 \\\n"
    "                float b[VEC];                                                                    \\\n"
    "                _Pragma(\"unroll\") for (int v = 0; v < VEC; v++) b[v] = elem_of(buf[u][c], v);  \\\n"
    "                _Pragma(\"unroll\") for (int m = 0; m < M; m++)                                  \\\n"
    "                    _Pragma(\"unroll\") for (int v = 0; v < VEC; v++)                            \\\n"
    "                        acc[m][c][v] = fmaf(a[m], b[v], acc[m][c][v]);                           \\\n"
    "            }                                                                                    \\\n"
    "        }                                                                                        \\\n"
    "    }\n"
    "#define ACC_DECL() float acc[M][COLS][VEC];                                                      \\\n"
    "    _Pragma(\"unroll\") for (int m = 0; m < M; m++)                                              \\\n"
    "        _Pragma(\"unroll\") for (int c = 0; c < COLS; c++)                                       \\\n"
    "            _Pragma(\"unroll\") for (int v = 0; v < VEC; v++) acc[m][c][v] = 0.0f;\n"
    "/* the GRPS groups of a warp (lanes LANES apart) summed; group 0 stores its columns */\n"
    "#define REDUCE_TO(red)                                                                           \\\n"
    "    _Pragma(\"unroll\") for (int m = 0; m < M; m++)                                              \\\n"
    "        _Pragma(\"unroll\") for (int c = 0; c < COLS; c++)                                       \\\n"
    "            _Pragma(\"unroll\") for (int v = 0; v < VEC; v++) {                                  \\\n"
    "                float s_ = acc[m][c][v];                                                         \\\n"
    "                _Pragma(\"unroll\") for (int o = LANES; o < 32; o *= 2)                          \\\n"
    "                    s_ += __shfl_xor_sync(0xffffffffu, s_, o);                                   \\\n"
    "                if (grp == 0)                                                                    \\\n"
    "                    red[(kw * M + m) * BN + wn * (LANES * VEC * COLS) + c * (LANES * VEC) + gl * VEC + v] = s_; \\\n"
    "            }\n"
    "\n";

static const char gemv_kernel[] =
    "extern \"C\" __global__ void __launch_bounds__(NTHR, 1)\n"
    "cut_gemm(const elem_t *__restrict__ A, const elem_t *__restrict__ B, float *__restrict__ C CIN_PARAM CUT_WS_ARGS)\n"
    "{\n"
    "    BATCH_SLICE()\n"
    "    extern __shared__ __align__(16) float smem[]; /* A's slice, then the warps' sums */\n"
    "    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;\n"
    "    const int kw = warp % KWARPS, wn = warp / KWARPS, gl = lane % LANES, grp = lane / LANES;\n"
    "    const int n0 = blockIdx.x * BN;\n"
    "    const int kb0 = slice * KSL, kb1 = kb0 + KSL < K ? kb0 + KSL : K; /* the space leaves no slice empty */\n"
    "    SETUP()\n"
    "    raw_t cur[UNROLL][COLS];\n"
    "#if PIPE\n"
    "    LOAD(cur, kfirst) /* in flight while A is staged */\n"
    "#endif\n"
    "    stage_a(A, smem, kb0, kb1, tid);\n"
    "    __syncthreads();\n"
    "    ACC_DECL()\n"
    "#if PIPE\n"
    "    /* two register buffers in turn: each iteration's loads are in flight during the other's FMAs */\n"
    "    raw_t nxt[UNROLL][COLS];\n"
    "#pragma unroll 1\n"
    "    for (int kb = kfirst; kb < kb1; kb += 2 * KITER) {\n"
    "        LOAD(nxt, kb + KITER)\n"
    "        COMPUTE(cur, kb)\n"
    "        LOAD(cur, kb + 2 * KITER)\n"
    "        COMPUTE(nxt, kb + KITER)\n"
    "    }\n"
    "#else\n"
    "#pragma unroll 1\n"
    "    for (int kb = kfirst; kb < kb1; kb += KITER) {\n"
    "        LOAD(cur, kb)\n"
    "        COMPUTE(cur, kb)\n"
    "    }\n"
    "#endif\n"
    "    __syncthreads(); /* every warp is done with A: its space takes the sums */\n"
    "    float *red = smem;\n"
    "    REDUCE_TO(red)\n"
    "    __syncthreads();\n"
    "#if SPLITK > 1\n"
    "    /* publish this slice's block sums; the tile's last slice to arrive sums every slice in slice order */\n"
    "    const int tile = z * TILES_N + blockIdx.x;\n"
    "    for (int i = tid; i < M * BN; i += NTHR) {\n"
    "        float s = 0.0f;\n"
    "#pragma unroll\n"
    "        for (int q = 0; q < KWARPS; q++)\n"
    "            s += red[q * M * BN + i];\n"
    "        cut_ws[((size_t)slice * WS_TILES + tile) * (M * BN) + i] = s;\n"
    "    }\n"
    "    if (!cut_splitk_last(&cut_cnt[tile], tid))\n"
    "        return;\n"
    "    for (int i = tid; i < M * BN; i += NTHR) {\n"
    "        const int m = i / BN, n = n0 + i % BN;\n"
    "        float s = 0.0f;\n"
    "#pragma unroll 4\n"
    "        for (int q = 0; q < SPLITK; q++)\n"
    "            s += __ldcg(&cut_ws[((size_t)q * WS_TILES + tile) * (M * BN) + i]);\n"
    "        if (N % BN == 0 || n < N)\n"
    "            C[(size_t)m * N + n] = EPI_FRESH(s, (size_t)m * N + n);\n"
    "    }\n"
    "    if (tid == 0)\n"
    "        cut_cnt[tile] = 0u; /* every slice has arrived: ready for the next launch */\n"
    "#else\n"
    "    for (int i = tid; i < M * BN; i += NTHR) {\n"
    "        const int m = i / BN, n = n0 + i % BN;\n"
    "        float s = 0.0f;\n"
    "#pragma unroll\n"
    "        for (int q = 0; q < KWARPS; q++)\n"
    "            s += red[q * M * BN + i];\n"
    "        if (N % BN == 0 || n < N)\n"
    "            C[(size_t)m * N + n] = EPI_FRESH(s, (size_t)m * N + n);\n"
    "    }\n"
    "#endif\n"
    "}\n";

static void emit_defines(cut_buf *b, const cut_gemm *g, const cut_sched *s, const cut_gemm_gemv_geom *gm)
{
    const int *k = s->k;
    cut_buf_printf(b, "#define M %d\n#define N %d\n#define K %d\n#define LAYOUT_NT %d\n", g->m, g->n, g->k,
                   cut_gemm_b_trans(g));
    cut_gemm_emit_extras(b, g, k[CUT_GV_SPLITK]); /* SPLITK's slices are this kernel's own: EPI_FRESH only */
    cut_buf_printf(b, "#define ELEM %d\n#define ELEM_BF16 %d\n", gm->elem, g->dtype == CUT_DT_BF16);
    cut_buf_printf(b, "#define VEC %d\n#define LANES %d\n#define COLS %d\n#define WARPS %d\n#define KWARPS %d\n",
                   k[CUT_GV_VEC], k[CUT_GV_LANES], k[CUT_GV_COLS], k[CUT_GV_WARPS], k[CUT_GV_KWARPS]);
    cut_buf_printf(b, "#define UNROLL %d\n#define PIPE %d\n#define STREAM %d\n", k[CUT_GV_UNROLL], k[CUT_GV_PIPE],
                   k[CUT_GV_STREAM]);
    cut_buf_printf(b, "#define KSL %d\n#define MP %d\n#define AV %d\n", gm->ksl, gm->mp, gm->av);
}

int cut_codegen_gemm_gemv(const cut_gemm *g, const cut_sched *s, cut_kernel_src *out, cut_err *e)
{
    memset(out, 0, sizeof *out);
    if (cut_gemm_gemv_check_shape(g, s, e) != 0)
        return cut_err_wrap(e, "codegen gemm gemv");
    cut_gemm_gemv_geom gm;
    cut_gemm_gemv_geometry(g, s, &gm);
    cut_buf b;
    cut_buf_init(&b);
    cut_emit_gemm_banner(&b, g, s, gm.dot ? "skinny GEMM: a dot product per column along B's rows (N x K)"
                                          : "skinny GEMM: lanes along B's rows (K x N), A broadcast per k row");
    emit_defines(&b, g, s, &gm);
    const char *const parts[] = {cut_gemm_extras_text, gemv_types, CUT_EMIT_SPLITK_TEXT, gemv_stage_a,
                                 gm.dot ? gemv_dot : gemv_axpy, gemv_kernel};
    for (size_t i = 0; i < CUT_ARRAY_LEN(parts); i++)
        cut_buf_append(&b, parts[i], strlen(parts[i]));
    out->src = b.data; /* ownership moves to out */
    snprintf(out->entry, sizeof out->entry, "cut_gemm");
    memcpy(out->grid, gm.grid, sizeof out->grid);
    out->block[0] = (unsigned)gm.threads;
    out->block[1] = out->block[2] = 1;
    out->smem_dynamic = (unsigned)gm.smem_bytes;
    out->uses_inline_ptx = 0; /* fp16's cvt.f32.f16 sits outside CUT_EMU: the emulator runs every dtype */
    out->tol_scale = 1.0;
    out->extra_bufs = cut_gemm_extra_bufs(g);
    return 0;
}
