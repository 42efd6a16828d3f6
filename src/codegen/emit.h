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

/* CUDA C text of widen(h): the 16-bit pattern h (fp16, or bf16 under ELEM_BF16) as fp32, exactly; cvt on the GPU,
 * by bits under the host emulation (the GEMM SIMT and gemv templates load 16-bit inputs through it). */
#define CUT_EMIT_WIDEN16_TEXT \
    "static __device__ __forceinline__ float widen(unsigned int h)\n" \
    "{\n" \
    "#if ELEM_BF16\n" \
    "    return __uint_as_float(h << 16);\n" \
    "#elif !defined(CUT_EMU) /* the emulation runner knows this branch is not compiled */\n" \
    "    float f;\n" \
    "    asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"((unsigned short)h));\n" \
    "    return f;\n" \
    "#else /* host emulation: IEEE binary16 -> binary32 by bits */\n" \
    "    const unsigned int s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;\n" \
    "    if (e == 0) { const float f = (float)m * 5.9604644775390625e-8f; return s ? -f : f; }\n" \
    "    return __uint_as_float(s | (e == 31 ? 0x7F800000u | (m << 13) : ((e + 112u) << 23) | (m << 13)));\n" \
    "#endif\n" \
    "}\n"

/* CUDA C text of split-K by the last-arriving block (the fp32 igemm, igemm_tc), given SPLITK, WS_FLOATS (fp32
 * partials of all slices) and WS_TILES (output tiles, one counter each). The workspace is a static __device__
 * array and the counters another (zero at module load), or, with CUT_WS_PARAM defined (an exported kernel), the
 * kernel's trailing arguments CUT_WS_ARGS. cut_splitk_last(cnt, tid), called by every thread of a block once its
 * partial is written: true in the last block of the tile to arrive, which then sums every slice's partial in
 * slice order (bitwise the same whichever block comes last) and writes *cnt = 0 for the next launch. No block
 * waits for another and no atomics touch the output. */
#define CUT_EMIT_SPLITK_TEXT \
    "#if SPLITK > 1 && defined(CUT_WS_PARAM)\n" \
    "/* exported: the caller's workspace, WS_FLOATS floats of partials then WS_TILES counters (zero) */\n" \
    "#define CUT_WS_ARGS , float *cut_ws, unsigned int *cut_cnt\n" \
    "#elif SPLITK > 1\n" \
    "static __device__ float cut_ws[WS_FLOATS];        /* partial C tiles of every slice */\n" \
    "static __device__ unsigned int cut_cnt[WS_TILES]; /* slices done per tile; zero between launches */\n" \
    "#define CUT_WS_ARGS\n" \
    "#else\n" \
    "#define CUT_WS_ARGS\n" \
    "#endif\n" \
    "#if SPLITK > 1\n" \
    "__device__ __forceinline__ bool cut_splitk_last(unsigned int *cnt, int tid)\n" \
    "{\n" \
    "    __shared__ int s_last;\n" \
    "    __threadfence(); /* this thread's partial is visible before the block counts itself in */\n" \
    "    __syncthreads();\n" \
    "    if (tid == 0)\n" \
    "        s_last = atomicAdd(cnt, 1u) == SPLITK - 1;\n" \
    "    __syncthreads();\n" \
    "    if (!s_last)\n" \
    "        return false;\n" \
    "    __threadfence(); /* the other slices' partials are read after their counts */\n" \
    "    return true;\n" \
    "}\n" \
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
