/* cutune — the CUDA C text of the mma.sync machinery, shared by the templates that run it: the "mma" GEMM
 * (src/ops/gemm/mma_codegen.c, which explains the kernel, the fragment layouts and the swizzle) and the tensor-core
 * implicit-GEMM convolution "igemm_tc" (src/ops/conv2d/igemm_tc_gen.c).
 *
 * A template's text is: its #defines (cut_mma_emit_tile_defines, plus M, N, K, LAYOUT_NT and its own), then
 * cut_mma_text_prims, its own load_tile(st, A, B, m0, n0, kt, tid) (one k tile's copies into a stage), then
 * cut_mma_text_frags and cut_mma_text_mainloop, then its kernel, which declares float acc[MI][NI][4], calls
 * mainloop() and writes the accumulators (thread lane holds rows lane/4 and lane/4 + 8, columns 2*(lane%4) and
 * 2*(lane%4) + 1 of each m16n8 tile). */
#ifndef CUTUNE_GEMM_MMA_TEXT_H
#define CUTUNE_GEMM_MMA_TEXT_H

#include "cutune/half.h"
#include "cutune/util.h"

/* The element type T (fp16/bf16 bits or tf32's floats) and E, the tile geometry (KSTEP, MI, NI, NTHR, A_ROWB,
 * B_ROWB, STAGE_BYTES, KT, ...), swz(), and the PTX wrappers cp_async<W>, cp_async_commit, cp_async_wait<n>,
 * ldsm_x4(_trans), lds32, to_tf32, mma (or, under CUT_EMU, the host emulation of each, shared memory then being
 * the static array smem). */
extern const char cut_mma_text_prims[];
/* load_frags(): the A and B fragments of one k step from a stage (ldmatrix; B as NT or NN by LAYOUT_NT). */
extern const char cut_mma_text_frags[];
/* mainloop(acc, A, B, m0, n0, kt0, kt1, tid): acc = the cp.async pipeline's sum over k tiles kt0..kt1-1 (shared
 * memory at smem_base()). */
extern const char cut_mma_text_mainloop[];

/* #define DT (0 fp16, 1 bf16, 2 tf32), BM, BN, BK, WM, WN, STAGES, SWIZZLE. */
void cut_mma_emit_tile_defines(cut_buf *b, cut_dtype dt, int bm, int bn, int bk, int wm, int wn, int stages,
                               int swizzle);

#endif
