/* cutune — code generator of the Winograd template (space/winograd.c holds the knob space and the matrices).
 *
 * One fused kernel, F(m x m, 3x3), stride 1, any padding, tails in every dimension. Tiles are numbered over
 * (image, tile row, tile column); block (x, y) computes the BT tiles from x*BT and the BCO output channels from
 * y*BCO. Its threads are split as XG = alpha^2 / RXI groups of transformed elements xi, times TCO = BCO/RCO
 * along co, times TT = BT/RT along tiles (TT fastest): thread (xg, tco, tt) accumulates, for its RXI elements xi,
 * an RCO x RT register tile of the alpha^2 independent GEMMs M[xi][co][t] = sum_c U[xi][c][co] * V[xi][c][t].
 *
 * Per chunk of BC input channels:
 *   staging: the block's BC*BT input items (an alpha x alpha patch of one channel around one tile, zero outside
 *     the image) and BC*BCO filter items (one 3x3 filter) form one list handed out round-robin to the threads
 *     (IPT slots each), so that input and filter work share every thread. A patch becomes V = B^T d B, a filter
 *     U = G g G^T, both written to shared memory as Vs[xi][c][t] and Us[xi][c][co] (rows padded by PAD floats).
 *     Consecutive threads take consecutive tiles (patch loads walk along W, stride m) and, for filters,
 *     consecutive channels of one co (the 9-float filters of a co are contiguous in memory).
 *   compute: for each channel c of the chunk and each of the thread's xi: RCO values of Us and RT of Vs, in
 *     16-byte (or 8-byte) chunks: RCO/4 + RT/4 LDS.128 for RCO*RT FMAs, i.e. (RCO+RT)/(RCO*RT) floats per FMA
 *     (0.25 at 8x8, as a GEMM's 8x8 register tile). Lanes of a warp take consecutive tt: they read consecutive
 *     16-byte chunks of Vs and broadcast chunks of Us, without bank conflicts (lanes of different xi, when
 *     TCO * TT < 8, can conflict: PAD shifts their rows).
 *   With PF = 1 the next chunk's raw patches and filters are loaded into registers (IPT x alpha^2 floats) before
 *   the FMAs of the current chunk and transformed after them, so global latency hides behind the FMAs; with
 *   PF = 0 only other resident blocks hide it.
 * Epilogue: a thread holds only its own elements xi, so the output transform Y = A^T M A of a (co, tile) pair
 * goes through shared memory (the staging storage, reused): in passes of EPI register rows x EPJ columns, every
 * thread stores its accumulators as Ms[xi][co][t] (vector stores), then each thread takes (co, tile) pairs,
 * reads their alpha^2 values, transforms and writes the m x m outputs (float4/float2 rows when OW % m == 0; tail
 * tiles guarded). Consecutive threads take consecutive tiles of one co.
 *
 * Work. Per output and input channel alpha^2 / m^2 multiplications (4 for m = 2, 2.25 for m = 4) instead of 9.
 * The transforms are the price, as straight-line code with one add or FMA per nonzero matrix entry (explicit
 * fmaf, so that the host emulation rounds like the GPU):
 *   per (channel, tile) a patch transform: alpha^2 loads, 64 (m = 2) or 312 (m = 4) flops, alpha^2 stores,
 *     against alpha^2 * BCO GEMM FMAs of the block;
 *   per (channel, co) a filter transform: 9 loads, 56 or 126 flops, alpha^2 stores, against alpha^2 * BT FMAs.
 *     Every block along the tile axis (grid.x of them) recomputes it, the price of one fused launch without a
 *     workspace: for m = 4 and BT = 32 about 0.11 flops, 0.01 loads and 0.03 shared stores per GEMM FMA, and in
 *     total the weight tensor read grid.x times (from L2). The patch transform costs 0.27 flops per FMA at
 *     BCO = 32. For m = 2 at the same tile sizes: 0.13 (patch) and 0.11 (filter), which offsets part of m = 4's
 *     larger saving; the H200 measurements show both winning, depending on the layer.
 *   per (co, tile) once: the output transform (alpha^2 shared loads, ~(alpha + m) * m * alpha flops).
 *
 * What the knobs trade: BCO, BT: reuse of the transformed operands (Us per tile, Vs per co) against registers
 * and blocks; BC: fewer barriers per FMA against shared memory; RCO, RT: shared loads per FMA against registers;
 * RXI: fewer threads (and transform slots per thread) at the same register tile; PAD: bank conflicts of the
 * transposing stores; UNROLL: the channel loop; PF: latency hiding at the price of IPT*alpha^2 registers; MINB:
 * the register cap of __launch_bounds__. */
#include "codegen/emit.h"
#include "cutune/workload.h"
#include "ops/conv2d/templates.h"

#include <stdio.h>
#include <string.h>

static const char wino_head[] =
    "#define A2 (AL * AL)\n"
    "#define TH ((OH + WM - 1) / WM)\n"
    "#define TW ((OW + WM - 1) / WM)\n"
    "#define TPI (TH * TW)\n"
    "#define NTILE (NB * TPI)\n"
    "#define TCO (BCO / RCO)\n"
    "#define TT (BT / RT)\n"
    "#define NT ((A2 / RXI) * TCO * TT)\n"
    "#define VCO (RCO < 4 ? RCO : 4)\n"
    "#define VT (RT < 4 ? RT : 4)\n"
    "#define LDU (BCO + PAD)\n"
    "#define LDV (BT + PAD)\n"
    "#define U_FLOATS (A2 * BC * LDU)\n"
    "#define V_FLOATS (A2 * BC * LDV)\n"
    "#define NIN (BC * BT)\n"
    "#define NFI (BC * BCO)\n"
    "#define NITEM (NIN + NFI)\n"
    "#define IPT ((NITEM + NT - 1) / NT)\n"
    "#define EPC (TCO * EPI)\n"
    "#define EPT (TT * EPJ)\n"
    "#define NPJ (RT / EPJ)\n"
    "#define NPASS ((RCO / EPI) * NPJ)\n"
    "#define SM_FLOATS (U_FLOATS + V_FLOATS > A2 * EPC * EPT ? U_FLOATS + V_FLOATS : A2 * EPC * EPT)\n"
    "/* slot k (item g) of a thread holds an input patch: known at compile time when NIN is a multiple of NT */\n"
    "#define SLOT_IS_IN(k, g) ((NIN % NT == 0) ? ((k) < NIN / NT) : ((g) < NIN))\n"
    "#define SLOT_USED(g) (NITEM % NT == 0 || (g) < NITEM)\n"
    "\n"
    "#if VCO == 4\n"
    "#define LDS_VCO(d, p) { const float4 t_ = *reinterpret_cast<const float4 *>(p); "
    "(d)[0] = t_.x; (d)[1] = t_.y; (d)[2] = t_.z; (d)[3] = t_.w; }\n"
    "#elif VCO == 2\n"
    "#define LDS_VCO(d, p) { const float2 t_ = *reinterpret_cast<const float2 *>(p); (d)[0] = t_.x; (d)[1] = t_.y; }\n"
    "#else\n"
    "#define LDS_VCO(d, p) { (d)[0] = *(p); }\n"
    "#endif\n"
    "#if VT == 4\n"
    "#define LDS_VT(d, p) { const float4 t_ = *reinterpret_cast<const float4 *>(p); "
    "(d)[0] = t_.x; (d)[1] = t_.y; (d)[2] = t_.z; (d)[3] = t_.w; }\n"
    "#define ST_VT(p, s) *reinterpret_cast<float4 *>(p) = make_float4((s)[0], (s)[1], (s)[2], (s)[3])\n"
    "#elif VT == 2\n"
    "#define LDS_VT(d, p) { const float2 t_ = *reinterpret_cast<const float2 *>(p); (d)[0] = t_.x; (d)[1] = t_.y; }\n"
    "#define ST_VT(p, s) *reinterpret_cast<float2 *>(p) = make_float2((s)[0], (s)[1])\n"
    "#else\n"
    "#define LDS_VT(d, p) { (d)[0] = *(p); }\n"
    "#define ST_VT(p, s) *(p) = (s)[0]\n"
    "#endif\n"
    "#if WM == 4\n"
    "#define ST_ROW(p, s) *reinterpret_cast<float4 *>(p) = make_float4((s)[0], (s)[1], (s)[2], (s)[3])\n"
    "#else\n"
    "#define ST_ROW(p, s) *reinterpret_cast<float2 *>(p) = make_float2((s)[0], (s)[1])\n"
    "#endif\n"
    "\n";

/* Loaders, stagers and the kernel (after the transform functions). */
static const char wino_body[] =
    "/* The alpha x alpha patch of input item g (channel c0 + g / BT, tile x*BT + g % BT) into r, zero outside the\n"
    " * image, past CI and past the last tile. */\n"
    "static __device__ __forceinline__ void load_in(const float *__restrict__ in, int g, int c0, float *r)\n"
    "{\n"
    "    const int c = g / BT, tl = g - c * BT;\n"
    "    const int t = blockIdx.x * BT + tl, ci = c0 + c;\n"
    "    const bool ok = (NTILE % BT == 0 || t < NTILE) && (CI % BC == 0 || ci < CI);\n"
    "    const int ts = ok ? t : 0, cs = ok ? ci : 0; /* decoded offsets stay in range */\n"
    "    const int n = ts / TPI, rem = ts - n * TPI, th = rem / TW, tw = rem - th * TW;\n"
    "    const int ih0 = th * WM - P, iw0 = tw * WM - P;\n"
    "    const int base = ((n * CI + cs) * H + ih0) * W + iw0;\n"
    "#pragma unroll\n"
    "    for (int a = 0; a < AL; a++) {\n"
    "        const bool rok = ok && (unsigned)(ih0 + a) < (unsigned)H;\n"
    "#pragma unroll\n"
    "        for (int b = 0; b < AL; b++)\n"
    "            r[a * AL + b] = rok && (unsigned)(iw0 + b) < (unsigned)W ? __ldg(in + (base + a * W + b)) : 0.0f;\n"
    "    }\n"
    "}\n"
    "\n"
    "/* The 3x3 filter of filter item g (channel c0 + g % BC of output channel y*BCO + g / BC) into r[0..9). */\n"
    "static __device__ __forceinline__ void load_w(const float *__restrict__ w, int g, int c0, float *r)\n"
    "{\n"
    "    const int col = g / BC, c = g - col * BC;\n"
    "    const int co = blockIdx.y * BCO + col, ci = c0 + c;\n"
    "    const bool ok = (CO % BCO == 0 || co < CO) && (CI % BC == 0 || ci < CI);\n"
    "    const int off = ok ? (co * CI + ci) * 9 : 0;\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < 9; j++)\n"
    "        r[j] = ok ? __ldg(w + off + j) : 0.0f;\n"
    "}\n"
    "\n"
    "static __device__ __forceinline__ void store_in(float *sm, int g, const float *r)\n"
    "{\n"
    "    const int c = g / BT, tl = g - c * BT;\n"
    "    float v[A2];\n"
    "    wino_in(r, v);\n"
    "#pragma unroll\n"
    "    for (int x = 0; x < A2; x++)\n"
    "        sm[U_FLOATS + (x * BC + c) * LDV + tl] = v[x];\n"
    "}\n"
    "\n"
    "static __device__ __forceinline__ void store_w(float *sm, int g, const float *r)\n"
    "{\n"
    "    const int col = g / BC, c = g - col * BC;\n"
    "    float u[A2];\n"
    "    wino_w(r, u);\n"
    "#pragma unroll\n"
    "    for (int x = 0; x < A2; x++)\n"
    "        sm[(x * BC + c) * LDU + col] = u[x];\n"
    "}\n"
    "\n"
    "#if PF\n"
    "/* Raw values of the thread's slots for the chunk at c0 (prefetch). */\n"
    "static __device__ __forceinline__ void stage_load(const float *__restrict__ in, const float *__restrict__ w,\n"
    "                                                  int c0, float (*raw)[A2])\n"
    "{\n"
    "#pragma unroll\n"
    "    for (int k = 0; k < IPT; k++) {\n"
    "        const int g = threadIdx.x + k * NT;\n"
    "        if (SLOT_IS_IN(k, g))\n"
    "            load_in(in, g, c0, raw[k]);\n"
    "        else if (SLOT_USED(g))\n"
    "            load_w(w, g - NIN, c0, raw[k]);\n"
    "    }\n"
    "}\n"
    "\n"
    "static __device__ __forceinline__ void stage_store(float *sm, float (*raw)[A2])\n"
    "{\n"
    "#pragma unroll\n"
    "    for (int k = 0; k < IPT; k++) {\n"
    "        const int g = threadIdx.x + k * NT;\n"
    "        if (SLOT_IS_IN(k, g))\n"
    "            store_in(sm, g, raw[k]);\n"
    "        else if (SLOT_USED(g))\n"
    "            store_w(sm, g - NIN, raw[k]);\n"
    "    }\n"
    "}\n"
    "#else\n"
    "/* Loads, transforms and stores the thread's slots of the chunk at c0. */\n"
    "static __device__ __forceinline__ void stage(float *sm, const float *__restrict__ in,\n"
    "                                             const float *__restrict__ w, int c0)\n"
    "{\n"
    "#pragma unroll\n"
    "    for (int k = 0; k < IPT; k++) {\n"
    "        const int g = threadIdx.x + k * NT;\n"
    "        float r[A2];\n"
    "        if (SLOT_IS_IN(k, g)) {\n"
    "            load_in(in, g, c0, r);\n"
    "            store_in(sm, g, r);\n"
    "        } else if (SLOT_USED(g)) {\n"
    "            load_w(w, g - NIN, c0, r);\n"
    "            store_w(sm, g - NIN, r);\n"
    "        }\n"
    "    }\n"
    "}\n"
    "#endif\n"
    "\n"
    "extern \"C\" __global__ void LAUNCH_BOUNDS\n"
    "cut_conv2d(const float *__restrict__ in, const float *__restrict__ w, float *__restrict__ out)\n"
    "{\n"
    "    __shared__ __align__(16) float sm[SM_FLOATS];\n"
    "    const int tid = threadIdx.x;\n"
    "    const int tt = tid % TT, tco = (tid / TT) % TCO, xg = tid / (TT * TCO);\n"
    "    float acc[RXI][RCO][RT];\n"
    "#pragma unroll\n"
    "    for (int rx = 0; rx < RXI; rx++)\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < RCO; i++)\n"
    "#pragma unroll\n"
    "            for (int j = 0; j < RT; j++)\n"
    "                acc[rx][i][j] = 0.0f;\n"
    "\n"
    "#if PF\n"
    "    float raw[IPT][A2];\n"
    "    stage_load(in, w, 0, raw);\n"
    "#endif\n"
    "#pragma unroll 1\n"
    "    for (int c0 = 0; c0 < CI; c0 += BC) {\n"
    "#if PF\n"
    "        stage_store(sm, raw);\n"
    "        __syncthreads();\n"
    "        if (c0 + BC < CI)\n"
    "            stage_load(in, w, c0 + BC, raw);\n"
    "#else\n"
    "        stage(sm, in, w, c0);\n"
    "        __syncthreads();\n"
    "#endif\n"
    "        UNROLL_C\n"
    "        for (int c = 0; c < BC; c++) {\n"
    "#pragma unroll\n"
    "            for (int rx = 0; rx < RXI; rx++) {\n"
    "                const int x = xg * RXI + rx;\n"
    "                const float *up = sm + (x * BC + c) * LDU + tco * VCO;\n"
    "                const float *vp = sm + U_FLOATS + (x * BC + c) * LDV + tt * VT;\n"
    "                float a[RCO], b[RT];\n"
    "#pragma unroll\n"
    "                for (int i = 0; i < RCO / VCO; i++)\n"
    "                    LDS_VCO(&a[i * VCO], up + i * (TCO * VCO));\n"
    "#pragma unroll\n"
    "                for (int j = 0; j < RT / VT; j++)\n"
    "                    LDS_VT(&b[j * VT], vp + j * (TT * VT));\n"
    "#pragma unroll\n"
    "                for (int i = 0; i < RCO; i++)\n"
    "#pragma unroll\n"
    "                    for (int j = 0; j < RT; j++)\n"
    "                        acc[rx][i][j] = fmaf(a[i], b[j], acc[rx][i][j]);\n"
    "            }\n"
    "        }\n"
    "        __syncthreads();\n"
    "    }\n"
    "\n"
    "    /* Epilogue, in NPASS passes: pass p = (pi, pj) covers register rows [pi*EPI, +EPI) and columns\n"
    "     * [pj*EPJ, +EPJ). Its accumulators go to Ms[xi][cl][tl] (cl = row-in-pass * TCO + tco; tl runs over\n"
    "     * the pass's tiles in order: column j of thread tt is tile (j / VT) * TT * VT + tt * VT + j % VT), then\n"
    "     * threads take (cl, tl) pairs and write their m x m outputs. */\n"
    "#pragma unroll 1\n"
    "    for (int p = 0; p < NPASS; p++) {\n"
    "        const int pi = p / NPJ, pj = p - pi * NPJ;\n"
    "        if (p)\n"
    "            __syncthreads();\n"
    "#pragma unroll\n"
    "        for (int rx = 0; rx < RXI; rx++)\n"
    "#pragma unroll\n"
    "            for (int i = 0; i < RCO; i++)\n"
    "#pragma unroll\n"
    "                for (int j = 0; j < RT; j += VT)\n"
    "                    if (i / EPI == pi && j / EPJ == pj)\n"
    "                        ST_VT(&sm[((xg * RXI + rx) * EPC + (i % EPI) * TCO + tco) * EPT\n"
    "                                  + ((j % EPJ) / VT) * (TT * VT) + tt * VT], &acc[rx][i][j]);\n"
    "        __syncthreads();\n"
    "#pragma unroll 1\n"
    "        for (int q = tid; q < EPC * EPT; q += NT) {\n"
    "            const int cl = q / EPT, tl = q - cl * EPT;\n"
    "            const int i = pi * EPI + cl / TCO, tq = cl % TCO;\n"
    "            const int co = blockIdx.y * BCO + (i / VCO) * (TCO * VCO) + tq * VCO + i % VCO;\n"
    "            const int t = blockIdx.x * BT + pj * EPJ * TT + tl;\n"
    "            if ((CO % BCO != 0 && co >= CO) || (NTILE % BT != 0 && t >= NTILE))\n"
    "                continue;\n"
    "            float mm[A2], y[WM * WM];\n"
    "#pragma unroll\n"
    "            for (int x = 0; x < A2; x++)\n"
    "                mm[x] = sm[(x * EPC + cl) * EPT + tl];\n"
    "            wino_out(mm, y);\n"
    "            const int n = t / TPI, rem = t - n * TPI, th = rem / TW, tw = rem - th * TW;\n"
    "            const int base = ((n * CO + co) * OH + th * WM) * OW + tw * WM;\n"
    "#pragma unroll\n"
    "            for (int r = 0; r < WM; r++) {\n"
    "                if (OH % WM != 0 && th * WM + r >= OH)\n"
    "                    break;\n"
    "#if OW % WM == 0\n"
    "                ST_ROW(out + (base + r * OW), &y[r * WM]);\n"
    "#else\n"
    "#pragma unroll\n"
    "                for (int s = 0; s < WM; s++)\n"
    "                    if (tw * WM + s < OW)\n"
    "                        out[base + r * OW + s] = y[r * WM + s];\n"
    "#endif\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "}\n";

/* The literal of a positive rational coefficient num/den != 1: integers and dyadic fractions exactly, others as
 * a constant division that the compiler folds (correctly rounded). */
static void emit_coef(cut_buf *b, int num, int den)
{
    if (num % den == 0) {
        cut_buf_printf(b, "%d.0f", num / den);
    } else if ((den & (den - 1)) == 0) {
        cut_buf_printf(b, "%.10gf", (double)num / den);
    } else {
        cut_buf_printf(b, "(%d.0f / %d.0f)", num, den);
    }
}

/* The expression sum_k X[r][k] * op(k), where op(k) is arr[k*ks + off]: a term of coefficient +-1 leads (no
 * multiply), each further term is an add or subtract (+-1) or an explicit fmaf, in column order, so that the GPU
 * and the host emulation (which does not contract a*b+c) round alike. */
static void emit_row(cut_buf *b, const cut_wino_mat *x, int r, const char *arr, int ks, int off)
{
    char expr[2048] = "", next[2048], coef[64];
    int lead = -1;
    const int den = x->den[r], *row = x->num + r * x->cols;
    for (int k = 0; k < x->cols && lead < 0; k++)
        if (row[k] == den || row[k] == -den)
            lead = k;
    if (lead >= 0)
        snprintf(expr, sizeof expr, "%s%s[%d]", row[lead] < 0 ? "-" : "", arr, lead * ks + off);
    for (int k = 0; k < x->cols; k++) {
        if (row[k] == 0 || k == lead)
            continue;
        if (row[k] == den || row[k] == -den) {
            snprintf(next, sizeof next, "%s %c %s[%d]", expr, row[k] < 0 ? '-' : '+', arr, k * ks + off);
        } else {
            cut_buf cb;
            cut_buf_init(&cb);
            if (row[k] < 0)
                cut_buf_printf(&cb, "-");
            emit_coef(&cb, row[k] < 0 ? -row[k] : row[k], den);
            snprintf(coef, sizeof coef, "%s", cb.data);
            cut_buf_free(&cb);
            if (expr[0])
                snprintf(next, sizeof next, "fmaf(%s, %s[%d], %s)", coef, arr, k * ks + off, expr);
            else
                snprintf(next, sizeof next, "%s * %s[%d]", coef, arr, k * ks + off);
        }
        memcpy(expr, next, sizeof expr);
    }
    cut_buf_printf(b, "%s", expr[0] ? expr : "0.0f");
}

/* A device function dst = L src R^T as straight-line code: L is p x q, src is q x s (row-major, s columns), R is
 * u x s; dst is p x u. The intermediate t = L src (p x s) is a local array (registers once inlined). */
static void emit_sandwich(cut_buf *b, const char *name, const char *src, const char *dst, const cut_wino_mat *l,
                          const cut_wino_mat *rm, int s)
{
    int p = l->rows, u = rm->rows;
    cut_buf_printf(b, "static __device__ __forceinline__ void %s(const float *%s, float *%s)\n{\n    float t[%d];\n",
                   name, src, dst, p * s);
    for (int i = 0; i < p; i++)
        for (int j = 0; j < s; j++) {
            cut_buf_printf(b, "    t[%d] = ", i * s + j);
            emit_row(b, l, i, src, s, j); /* sum_a L[i][a] src[a][j] */
            cut_buf_printf(b, ";\n");
        }
    for (int i = 0; i < p; i++)
        for (int j = 0; j < u; j++) {
            cut_buf_printf(b, "    %s[%d] = ", dst, i * u + j);
            emit_row(b, rm, j, "t", 1, i * s); /* sum_b R[j][b] t[i][b] */
            cut_buf_printf(b, ";\n");
        }
    cut_buf_printf(b, "}\n\n");
}

/* The three transforms of F(m x m, 3x3) from the template's matrices. */
static void emit_transforms(cut_buf *b, const cut_wino_mats *mt)
{
    int al = mt->alpha;
    cut_buf_printf(b, "/* V = B^T d B: alpha x alpha input patch d -> transformed patch v (row-major, xi = a*AL + b) "
                      "*/\n");
    emit_sandwich(b, "wino_in", "d", "v", &mt->bt, &mt->bt, al);
    cut_buf_printf(b, "/* U = G g G^T: 3x3 filter g -> transformed filter u */\n");
    emit_sandwich(b, "wino_w", "g", "u", &mt->g, &mt->g, 3);
    cut_buf_printf(b, "/* Y = A^T M A: alpha x alpha sums m -> m x m outputs y */\n");
    emit_sandwich(b, "wino_out", "m", "y", &mt->at, &mt->at, al);
}

int cut_emit_winograd(cut_buf *b, const cut_conv *c, const cut_sched *s, cut_kernel_src *out, cut_err *e)
{
    const int *k = s->k;
    cut_wino_geom g;
    cut_winograd_geometry(c, s, &g);
    const cut_wino_mats *mt = cut_winograd_mats(k[CUT_W_M]);
    if (!mt || c->kh != 3 || c->kw != 3 || c->stride != 1)
        return cut_err_set(e, "codegen: winograd needs m = 2 or 4 and a 3x3 stride-1 convolution");
    cut_buf_printf(b, "#define NB %d\n#define H %d\n#define W %d\n#define CI %d\n#define CO %d\n#define P %d\n"
                      "#define OH %d\n#define OW %d\n",
                   c->n, c->h, c->w, c->ci, c->co, c->pad, g.oh, g.ow);
    cut_buf_printf(b, "#define WM %d\n#define AL %d\n#define BCO %d\n#define BT %d\n#define BC %d\n#define RCO %d\n"
                      "#define RT %d\n#define RXI %d\n#define PAD %d\n#define PF %d\n#define EPI %d\n#define EPJ %d\n",
                   g.m, g.alpha, k[CUT_W_BCO], k[CUT_W_BT], k[CUT_W_BC], k[CUT_W_RCO], k[CUT_W_RT], k[CUT_W_RXI],
                   k[CUT_W_PAD], k[CUT_W_PF] ? 1 : 0, g.epi, g.epj);
    /* minb as in igemm: 0 leaves ptxas its own occupancy heuristic, 1 and 2 cap registers at 65536/(NT*minb). */
    if (k[CUT_W_MINB])
        cut_buf_printf(b, "#define LAUNCH_BOUNDS __launch_bounds__(NT, %d)\n", k[CUT_W_MINB]);
    else
        cut_buf_printf(b, "#define LAUNCH_BOUNDS __launch_bounds__(NT)\n");
    if (k[CUT_W_UNROLL] >= k[CUT_W_BC])
        cut_buf_printf(b, "#define UNROLL_C _Pragma(\"unroll\")\n");
    else
        cut_buf_printf(b, "#define UNROLL_C _Pragma(\"unroll %d\")\n", k[CUT_W_UNROLL]);
    cut_buf_append(b, wino_head, strlen(wino_head));
    emit_transforms(b, mt);
    cut_buf_append(b, wino_body, strlen(wino_body));
    cut_emit_launch(out, g.grid, g.threads);
    out->tol_scale = cut_tolerance_scale_winograd(g.m);
    return 0;
}
