/* cutune — the CUDA C text of the wgmma template's PTX (src/ops/gemm/wgmma.c explains the kernel): each instruction
 * in a device helper, for the GPU and, under #ifdef CUT_EMU, as its PTX ISA semantics on the host emulator.
 *
 * The kernel's text is: its #defines (M, N, K, BM, BN, BK, KS, MI, NC, ST, WAITD, GM, CL, REGS_INC), u64, struct
 * cut_tmap and THREADS, then cut_wgmma_text_ptx and cut_wgmma_text_emu, then its wgmma_tile (the one wgmma shape it
 * issues, one asm statement; under CUT_EMU a call of emu_wgmma), then the kernel. */
#ifndef CUTUNE_GEMM_WGMMA_TEXT_H
#define CUTUNE_GEMM_WGMMA_TEXT_H

#include "codegen/emit.h"
#include "cutune/half.h"

/* smem_u32, mbar_init, fence_mbarrier_init, mbar_expect_tx, mbar_arrive, mbar_arrive_cluster, mbar_wait, tma_load,
 * tma_load_mc, tma_load3 and tma_load3_mc (3-D maps: plane c2), cluster_rank, cluster_sync, setmaxnreg_dec<R>, setmaxnreg_inc<R>, wgmma_fence, wgmma_commit,
 * wgmma_wait<G>, lds32 (ld.shared.b32), to_tf32 (cvt.rna.tf32.f32), sts32 (st.shared.b32), fence_proxy_async
 * (fence.proxy.async.shared::cta): the GPU's (inside #ifndef CUT_EMU). */
extern const char cut_wgmma_text_ptx[];
/* The same helpers but the cluster ones (a cluster cannot be emulated: CL > 1 is an #error) as host code, and
 * emu_wgmma(d, n, dt, da, areg, db, ta, tb, scale_d, scale_a, scale_b), the emulated wgmma.mma_async (A from the
 * descriptor da, or from registers areg when not NULL), inside #ifdef CUT_EMU. */
extern const char cut_wgmma_text_emu[];

/* The kernel's common text after its knobs' #defines (M, N, K, BM, BN, BK, NC, ST): u64, cut_tmap, KT, THREADS,
 * A_BYTES, B_BYTES, STAGE_BYTES, the stage macros FULL, EMPTY, SA, SB (from the kernel's base and bars) and desc(),
 * the 128-byte-swizzle matrix descriptor. Used by the GEMM's wgmma and the conv's wgmma_conv. */
extern const char cut_wgmma_text_head[];
/* A consumer warp group's main loop (inside the kernel, after setmaxnreg_inc): d[MI][BN / 2] zeroed, row0, warp,
 * lane, then per k tile: wait on FULL, BK / KS x MI wgmmas (A K-major from SA unless TA, B through DESC_B(s, kk)),
 * commit, RELEASE(s) of the stage WAITD groups back; ends with every wgmma complete. The epilogue follows. */
extern const char cut_wgmma_text_consumer_loop[];
/* wgmma_tile(d, da, db) and WGMMA(d, da, db): the one wgmma.mma_async shape m64 n=bn k16 (k8 tf32) of dtype dt, A and
 * B from descriptors, ta / tb its transpose flags (1: MN-major); under CUT_EMU the emulated one. */
void cut_wgmma_emit_tile(cut_buf *b, cut_dtype dt, int bn, int ta, int tb);

/* tf32 NN (C^T = B^T A^T, wgmma.c): the tile column, within its consumer's m64 block, that row 16 w + g + 8 h of
 * wgmma's A fragment (w: the warp in the warpgroup, g = lane / 4, h = 0, 1) carries. A permutation of 0..63 chosen
 * so that CUT_WGMMA_SWAP_LDS's loads are free of bank conflicts. */
#define CUT_WGMMA_NROW(w, g, h) (32 * ((w) / 2) + 8 * ((w) % 2) + (g) % 4 + 4 * (h) + 16 * ((g) / 4))
/* The byte of tf32 element (k, n) (k < 32, n < the tile's columns) in a stage's B tile: boxes of 32 columns, 32
 * rows of 128 bytes each, as the TMA unit writes them with the 128-byte swizzle. */
#define CUT_WGMMA_SWAP_LDS(n, k) (((n) / 32) * 4096 + (k) * 128 + (((((n) % 32) / 4) ^ ((k) % 8)) << 4) + ((n) % 4) * 4)
/* tf32 TN (wgmma.c): the byte of element (k, n) (k < 32) in a consumer's K-major copy of the B tile, one row of 128
 * bytes per n, in the 128-byte swizzle that wgmma's descriptor declares (the copy is 1024-byte aligned). */
#define CUT_WGMMA_TRANS_STS(n, k) ((n) * 128 + ((((k) / 4) ^ ((n) % 8)) << 4) + ((k) % 4) * 4)
/* tf32 TN's transposition: a warp copies 32 columns n0.. x 4 rows k0.. (n0 a multiple of 32, k0 of 4) in 4 steps q,
 * lane l the element (k0 + CUT_WGMMA_TRANS_K(l, q), n0 + l) at step q: every element once, and each step's loads
 * (CUT_WGMMA_SWAP_LDS) and stores (CUT_WGMMA_TRANS_STS) hit the 32 banks once. */
#define CUT_WGMMA_TRANS_K(lane, q) (((lane) / 8) ^ (q))

#endif
