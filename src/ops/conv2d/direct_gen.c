/* cutune — code generator of the direct-convolution template (space/direct.c describes the knobs).
 *
 * The shape and the knobs become compile-time constants; the kernel body below is written once, with the
 * preprocessor choosing between shared-memory staging and direct global reads, and the unroll pragmas chosen
 * from the `unroll` knob the way TVM's auto_unroll_max_step does: a reduction loop nest is fully unrolled when
 * its trip count is within the step. */
#include "codegen/emit.h"
#include "ops/conv2d/templates.h"

#include <stdio.h>
#include <string.h>

static const char direct_body[] =
    "#define NT (TCO * TOH * TOW)\n"
    "#define BCO (TCO * RCO)\n"
    "#define BOH (TOH * ROH)\n"
    "#define BOW (TOW * ROW)\n"
    "#define IHT ((BOH - 1) * S + RKH)\n"
    "#define IWT ((BOW - 1) * S + KW)\n"
    "#define TILES_W ((OW + BOW - 1) / BOW)\n"
    "\n"
    "extern \"C\" __global__ void __launch_bounds__(NT)\n"
    "cut_conv2d(const float *__restrict__ in, const float *__restrict__ w, float *__restrict__ out)\n"
    "{\n"
    "    const int tid = threadIdx.x;\n"
    "    const int tx = tid % TOW, ty = (tid / TOW) % TOH, tz = tid / (TOW * TOH);\n"
    "    const int n = blockIdx.z;\n"
    "    const int co0 = blockIdx.y * BCO;\n"
    "    const int oh0 = (blockIdx.x / TILES_W) * BOH, ow0 = (blockIdx.x % TILES_W) * BOW;\n"
    "    const int ih0 = oh0 * S - P, iw0 = ow0 * S - P;\n"
    "    const float *__restrict__ in_n = in + (size_t)n * CI * H * W;\n"
    "    float acc[RCO][ROH][ROW];\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < RCO; j++)\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < ROH; i++)\n"
    "#pragma unroll\n"
    "            for (int l = 0; l < ROW; l++)\n"
    "                acc[j][i][l] = 0.0f;\n"
    "#if SMEM\n"
    "    __shared__ float s_in[RC * IHT * IWT];\n"
    "    __shared__ float s_w[BCO * RC * RKH * KW];\n"
    "#endif\n"
    "    for (int c0 = 0; c0 < CI; c0 += RC) {\n"
    "        for (int kh0 = 0; kh0 < KH; kh0 += RKH) {\n"
    "#if SMEM\n"
    "            for (int idx = tid; idx < RC * IHT * IWT; idx += NT) {\n"
    "                const int c = idx / (IHT * IWT), r = (idx / IWT) % IHT, q = idx % IWT;\n"
    "                const int ci = c0 + c, ih = ih0 + kh0 + r, iw = iw0 + q;\n"
    "                s_in[idx] = (ci < CI && ih >= 0 && ih < H && iw >= 0 && iw < W)\n"
    "                                ? __ldg(&in_n[(ci * H + ih) * W + iw]) : 0.0f;\n"
    "            }\n"
    "            for (int idx = tid; idx < BCO * RC * RKH * KW; idx += NT) {\n"
    "                const int co = idx / (RC * RKH * KW), c = (idx / (RKH * KW)) % RC;\n"
    "                const int r = (idx / KW) % RKH, q = idx % KW;\n"
    "                s_w[idx] = (co0 + co < CO && c0 + c < CI)\n"
    "                               ? __ldg(&w[(((co0 + co) * CI + c0 + c) * KH + kh0 + r) * KW + q]) : 0.0f;\n"
    "            }\n"
    "            __syncthreads();\n"
    "#endif\n"
    "            UNROLL_C\n"
    "            for (int c = 0; c < RC; c++) {\n"
    "                if (CI % RC != 0 && c0 + c >= CI)\n"
    "                    break;\n"
    "                UNROLL_R\n"
    "                for (int r = 0; r < RKH; r++) {\n"
    "                    UNROLL_Q\n"
    "                    for (int q = 0; q < KW; q++) {\n"
    "                        float wv[RCO];\n"
    "#pragma unroll\n"
    "                        for (int j = 0; j < RCO; j++) {\n"
    "#if SMEM\n"
    "                            wv[j] = s_w[(((tz * RCO + j) * RC + c) * RKH + r) * KW + q];\n"
    "#else\n"
    "                            const int co = co0 + tz * RCO + j;\n"
    "                            wv[j] = co < CO ? __ldg(&w[((co * CI + c0 + c) * KH + kh0 + r) * KW + q]) : 0.0f;\n"
    "#endif\n"
    "                        }\n"
    "#pragma unroll\n"
    "                        for (int i = 0; i < ROH; i++) {\n"
    "#pragma unroll\n"
    "                            for (int l = 0; l < ROW; l++) {\n"
    "                                const int lh = i * TOH + ty;\n"
    "                                const int lw = (l / VEC) * (TOW * VEC) + tx * VEC + (l % VEC);\n"
    "#if SMEM\n"
    "                                const float x = s_in[(c * IHT + lh * S + r) * IWT + lw * S + q];\n"
    "#else\n"
    "                                const int ih = ih0 + lh * S + kh0 + r, iw = iw0 + lw * S + q;\n"
    "                                const float x = (ih >= 0 && ih < H && iw >= 0 && iw < W)\n"
    "                                                    ? __ldg(&in_n[((c0 + c) * H + ih) * W + iw]) : 0.0f;\n"
    "#endif\n"
    "#pragma unroll\n"
    "                                for (int j = 0; j < RCO; j++)\n"
    "                                    acc[j][i][l] = fmaf(wv[j], x, acc[j][i][l]);\n"
    "                            }\n"
    "                        }\n"
    "                    }\n"
    "                }\n"
    "            }\n"
    "#if SMEM\n"
    "            __syncthreads();\n"
    "#endif\n"
    "        }\n"
    "    }\n"
    "    float *__restrict__ out_n = out + (size_t)n * CO * OH * OW;\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < RCO; j++) {\n"
    "        const int co = co0 + tz * RCO + j;\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < ROH; i++) {\n"
    "            const int oh = oh0 + i * TOH + ty;\n"
    "            if (co >= CO || oh >= OH)\n"
    "                continue;\n"
    "#pragma unroll\n"
    "            for (int g = 0; g < ROW / VEC; g++) {\n"
    "                const int ow = ow0 + g * (TOW * VEC) + tx * VEC;\n"
    "                if (ow >= OW)\n"
    "                    continue;\n"
    "                float *p = &out_n[(co * OH + oh) * OW + ow];\n"
    "#if VEC == 4\n"
    "                *reinterpret_cast<float4 *>(p) = make_float4(acc[j][i][g * 4], acc[j][i][g * 4 + 1],\n"
    "                                                             acc[j][i][g * 4 + 2], acc[j][i][g * 4 + 3]);\n"
    "#elif VEC == 2\n"
    "                *reinterpret_cast<float2 *>(p) = make_float2(acc[j][i][g * 2], acc[j][i][g * 2 + 1]);\n"
    "#else\n"
    "                *p = acc[j][i][g];\n"
    "#endif\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "}\n";

static const char *pragma(int unrolled) { return unrolled ? "_Pragma(\"unroll\")" : "_Pragma(\"unroll 1\")"; }

int cut_emit_direct(cut_buf *b, const cut_conv *c, const cut_sched *s, cut_kernel_src *out, cut_err *e)
{
    (void)e;
    const int *k = s->k;
    cut_direct_geom g;
    cut_direct_geometry(c, s, &g);
    cut_buf_printf(b, "#define H %d\n#define W %d\n#define CI %d\n#define CO %d\n#define KH %d\n#define KW %d\n", c->h,
                   c->w, c->ci, c->co, c->kh, c->kw);
    cut_buf_printf(b, "#define S %d\n#define P %d\n#define OH %d\n#define OW %d\n", c->stride, c->pad, g.oh, g.ow);
    cut_buf_printf(b, "#define TCO %d\n#define TOH %d\n#define TOW %d\n#define RCO %d\n#define ROH %d\n#define ROW %d\n",
                   k[CUT_D_TCO], k[CUT_D_TOH], k[CUT_D_TOW], k[CUT_D_RCO], k[CUT_D_ROH], k[CUT_D_ROW]);
    cut_buf_printf(b, "#define RC %d\n#define RKH %d\n#define SMEM %d\n#define VEC %d\n", k[CUT_D_RC], k[CUT_D_RKH],
                   k[CUT_D_SMEM], k[CUT_D_VEC]);
    int u = k[CUT_D_UNROLL];
    int inner_q = c->kw, inner_rq = k[CUT_D_RKH] * c->kw, inner_all = k[CUT_D_RC] * inner_rq;
    if (u == 0) {
        cut_buf_printf(b, "#define UNROLL_C\n#define UNROLL_R\n#define UNROLL_Q\n");
    } else {
        cut_buf_printf(b, "#define UNROLL_C %s\n#define UNROLL_R %s\n#define UNROLL_Q %s\n", pragma(inner_all <= u),
                       pragma(inner_rq <= u), pragma(inner_q <= u));
    }
    cut_buf_append(b, direct_body, strlen(direct_body));
    cut_emit_launch(out, g.grid, g.threads);
    return 0;
}
