/* cutune — text shared by the templates' code generators of every op (internal). */
#ifndef CUTUNE_CODEGEN_EMIT_H
#define CUTUNE_CODEGEN_EMIT_H

#include "cutune/codegen.h"
#include "cutune/util.h"

/* CUDA C text shared by the register-tiled GEMM-like templates (conv igemm, GEMM SIMT): shared-memory loads of
 * VM / VN consecutive floats (LDS_VM, LDS_VN) and stores of VN (ST_VN), as float4/float2 where the width allows.
 * A string literal, to be concatenated into a template's text. */
#define CUT_EMIT_VEC_SMEM_MACROS \
    "#if VM == 4\n" \
    "#define LDS_VM(d, p) { const float4 t_ = *reinterpret_cast<const float4 *>(p); " \
    "(d)[0] = t_.x; (d)[1] = t_.y; (d)[2] = t_.z; (d)[3] = t_.w; }\n" \
    "#elif VM == 2\n" \
    "#define LDS_VM(d, p) { const float2 t_ = *reinterpret_cast<const float2 *>(p); (d)[0] = t_.x; (d)[1] = t_.y; }\n" \
    "#else\n" \
    "#define LDS_VM(d, p) { (d)[0] = *(p); }\n" \
    "#endif\n" \
    "#if VN == 4\n" \
    "#define LDS_VN(d, p) { const float4 t_ = *reinterpret_cast<const float4 *>(p); " \
    "(d)[0] = t_.x; (d)[1] = t_.y; (d)[2] = t_.z; (d)[3] = t_.w; }\n" \
    "#define ST_VN(p, s) *reinterpret_cast<float4 *>(p) = make_float4((s)[0], (s)[1], (s)[2], (s)[3])\n" \
    "#elif VN == 2\n" \
    "#define LDS_VN(d, p) { const float2 t_ = *reinterpret_cast<const float2 *>(p); (d)[0] = t_.x; (d)[1] = t_.y; }\n" \
    "#define ST_VN(p, s) *reinterpret_cast<float2 *>(p) = make_float2((s)[0], (s)[1])\n" \
    "#else\n" \
    "#define LDS_VN(d, p) { (d)[0] = *(p); }\n" \
    "#define ST_VN(p, s) *(p) = (s)[0]\n" \
    "#endif\n"

/* CUDA C text of the same templates' inner loop over one shared-memory k tile of buffer cb (an int in scope): each
 * thread loads its TM values of A and TN of B (LDS_VM / LDS_VN) and accumulates their outer product into acc. */
#define CUT_EMIT_OUTER_PRODUCT \
    "        UNROLL_KK\n" \
    "        for (int kk = 0; kk < BK; kk++) {\n" \
    "            float a[TM], b[TN];\n" \
    "#pragma unroll\n" \
    "            for (int c = 0; c < TM / VM; c++)\n" \
    "                LDS_VM(&a[c * VM], &As[cb][kk][c * (TY * VM) + ty * VM]);\n" \
    "#pragma unroll\n" \
    "            for (int c = 0; c < TN / VN; c++)\n" \
    "                LDS_VN(&b[c * VN], &Bs[cb][kk][c * (TX * VN) + tx * VN]);\n" \
    "#pragma unroll\n" \
    "            for (int i = 0; i < TM; i++)\n" \
    "#pragma unroll\n" \
    "                for (int j = 0; j < TN; j++)\n" \
    "                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);\n" \
    "        }\n"

/* Appends text with every line that is not a preprocessor directive indented by `extra` more spaces. */
void cut_emit_indented(cut_buf *b, const char *text, int extra);

#endif
