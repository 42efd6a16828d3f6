/* cutune — the "mma" GEMM template's internals shared by its space (src/ops/gemm/mma.c) and its generator
 * (src/ops/gemm/mma_codegen.c, which explains the kernel and what each knob trades). */
#ifndef CUTUNE_GEMM_MMA_H
#define CUTUNE_GEMM_MMA_H

#include "cutune/gemm_space.h"

/* Knobs (indices into cut_sched.k). */
enum {
    CUT_GM_BM, CUT_GM_BN, /* block tile along M, N: 64, 128, 256 */
    CUT_GM_BK,            /* block tile along K in elements: 32, 64 (fp16/bf16); 16, 32 (tf32): 64 or 128 bytes */
    CUT_GM_WM, CUT_GM_WN, /* warp tile along M, N: 32, 64 (warps = BM/WM x BN/WN, 2..16) */
    CUT_GM_STAGES,        /* shared-memory pipeline depth: 2, 3, 4 k tiles in flight */
    CUT_GM_SWIZZLE,       /* 1: XOR-swizzled shared-memory rows (no bank conflicts); 0: plain rows */
    CUT_GM_GROUP_M,       /* block rasterisation: 1 (row by row), 4, 8 (groups of GROUP_M tile rows, for L2 reuse) */
    CUT_GM_CPW,           /* cp.async width in bytes: 16, 8, 4 (narrower when rows are not 16-byte aligned) */
    CUT_GM_SPLITK,        /* k slices per output tile, summed in turn (serial split-K): 1, 2, 4, 8. Issue 21; a
                             record without it reads as 1 (cut_gemm_template.knob_default) */
    CUT_GM_NKNOBS
};

/* Everything that follows from a schedule (knobs clamped, so also an invalid one gives finite numbers). */
typedef struct cut_gemm_mma_geom {
    int elem;              /* bytes of one input element: 2 or 4 */
    int kstep;             /* k of one mma: 16 (fp16/bf16) or 8 (tf32) */
    int warps_m, warps_n, threads;
    int mi, ni;            /* m16 and n8 tiles per warp */
    int a_row_bytes;       /* shared row of A: BK elements */
    int b_rows, b_row_bytes; /* B tile: BN rows of BK (NT) or BK rows of BN (NN) */
    int stage_bytes, smem_bytes;
    int copies;            /* cp.async copies per thread per k tile (A and B) */
    int acc;               /* fp32 accumulators per thread: WM*WN/32 */
    int regs_est;          /* rough registers per thread */
    int tiles_m, tiles_n;
    int splitk;            /* k slices (1: none) */
    unsigned grid[3];      /* tiles_n, tiles_m, batch x splitk */
} cut_gemm_mma_geom;

const char *cut_gemm_mma_knob_name(int knob);
void cut_gemm_mma_geometry(const cut_gemm *g, const cut_sched *s, cut_gemm_mma_geom *out);
/* The structural rules (dtype, layout, sizes, knob lists, warp tiles within the block tile, alignment for the
 * cp.async width), without device limits. 0, or -1 with a sentence. */
int cut_gemm_mma_check_shape(const cut_gemm *g, const cut_sched *s, cut_err *e);
/* Dynamic shared memory a block may use on sm_XY (227 KiB on sm_90, 163 KiB on sm_80/87, 99 KiB otherwise). */
int cut_gemm_mma_smem_limit(const cut_devlimits *d);
/* Largest cp.async width (16, 8, 4 bytes) that the rows of A and B allow: A's rows are K elements (M for TN, TT),
 * B's are K (NT, TT) or N (NN, TN). 0 if not even 4 bytes (a 16-bit GEMM with an odd K, or odd N in NN). */
int cut_gemm_mma_max_cpw(const cut_gemm *g);

/* The shared-memory swizzle, exactly as the generated kernel computes it (the generator emits the same formula):
 * the physical 16-byte chunk of logical chunk `chunk` in row `row` of a tile whose rows hold `cpr` chunks
 * (cpr a power of two >= 4). swizzle 0: the identity. swizzle 1: rows of >= 8 chunks XOR the chunk's low three
 * bits with row % 8; rows of 4 chunks (two rows per 128-byte line) XOR with (row / 2) % 4. */
static inline int cut_gemm_mma_swz(int row, int chunk, int cpr, int swizzle)
{
    if (!swizzle)
        return chunk;
    return cpr >= 8 ? chunk ^ (row & 7) : chunk ^ ((row >> 1) & 3);
}

/* "mma bm=128 bn=256 ..." */
void cut_gemm_mma_describe(const cut_sched *s, char *buf, size_t n);

int cut_codegen_gemm_mma(const cut_gemm *g, const cut_sched *s, cut_kernel_src *out, cut_err *e);

#endif
