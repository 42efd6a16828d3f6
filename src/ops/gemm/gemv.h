/* cutune — the "gemv" GEMM template's internals shared by its space (src/ops/gemm/gemv.c) and its generator
 * (src/ops/gemm/gemv_codegen.c, which explains the kernel and what each knob trades). Issue 21: skinny GEMMs (M up
 * to CUT_GEMV_MAX_M, LLM decode's 1x4096x4096 and 16x4096x4096) on CUDA cores at memory bandwidth. */
#ifndef CUTUNE_GEMM_GEMV_H
#define CUTUNE_GEMM_GEMV_H

#include "cutune/gemm_space.h"

/* The largest M the template takes. Each element of B read from DRAM feeds M FMAs: at 4.8 TB/s (H200) 16-bit B
 * arrives at 2.4e12 elements/s, so M = 16 asks for 3.8e13 FMA/s, past the 3.3e13 of the fp32 CUDA cores
 * (132 SMs x 128 lanes x 1.98 GHz) before any conversion or address work: beyond 16 the kernel is compute-bound on
 * CUDA cores and the tensor-core templates (mma with split-K, wgmma) are the tool. */
#define CUT_GEMV_MAX_M 16

/* Knobs (indices into cut_sched.k). "The contiguous dimension" is B's rows: K when B is stored N x K (NT, TT: each
 * output a dot product along K), N when B is stored K x N (NN, TN: lanes walk n, each k row a broadcast of A). */
enum {
    CUT_GV_VEC,    /* elements per load of B: 1, 2, 4, 8 (at most 16 bytes; the rows' alignment decides the most) */
    CUT_GV_LANES,  /* lanes of a warp along the contiguous dimension: 4, 8, 16, 32; the 32/LANES lane groups take
                      other columns (B N x K) or other k rows (B K x N) */
    CUT_GV_COLS,   /* loads of B per lane per k step, at different columns: 1, 2, 4 */
    CUT_GV_WARPS,  /* warps per block: 1, 2, 4, 8, 16 */
    CUT_GV_KWARPS, /* of those, warps that split the block's K range (the rest take other columns): 1..16 */
    CUT_GV_UNROLL, /* k steps per loop iteration, their loads issued together: 1, 2, 4, 8 */
    CUT_GV_SPLITK, /* blocks along K (slices summed by the last block of a tile to arrive): 1, 2, .., 64 */
    CUT_GV_PIPE,   /* 1: the next iteration's loads are issued before this one's FMAs (and the first before A is
                      staged); 0: load, then compute */
    CUT_GV_STREAM, /* 1: B read with evict-first loads (ld.global.cs; B is read once); 0: through the
                      read-only path (ld.global.nc) */
    CUT_GV_NKNOBS
};

/* Everything that follows from a schedule (knobs clamped, so also an invalid one gives finite numbers). */
typedef struct cut_gemm_gemv_geom {
    int dot;          /* 1: B stored N x K (NT, TT); 0: B stored K x N (NN, TN) */
    int elem;         /* bytes of one input element: 2 or 4 */
    int groups;       /* 32 / LANES lane groups per warp */
    int wn;           /* warps along the columns: WARPS / KWARPS */
    int threads;
    int bn;           /* columns of C per block */
    int kstep;        /* k covered by one step of the block (dot: KWARPS*LANES*VEC elements; else KWARPS*groups rows) */
    int kiter;        /* k covered by one loop iteration: kstep * UNROLL */
    int ksl;          /* k per split-K slice: ceil(K / SPLITK) rounded up to a multiple of 8 */
    int mp;           /* A's row of M values in shared memory (B K x N: k-major, padded to 1, 2 or a multiple of 4) */
    int av;           /* elements per load of A while staging it */
    int tiles_n;      /* blocks along N */
    long smem_a;      /* A's slice in shared memory, fp32: M x ksl */
    long smem_red;    /* the reduction over KWARPS: KWARPS x M x bn floats (shares A's space) */
    int smem_bytes;   /* dynamic shared memory: the larger of the two */
    long ws_bytes;    /* split-K workspace: SPLITK x batch x tiles x M x bn floats, 0 without split-K */
    int regs_est;     /* rough registers per thread */
    int unrolled_fmas; /* FMAs of one loop iteration (code size) */
    unsigned grid[3]; /* tiles_n, 1, batch x SPLITK */
} cut_gemm_gemv_geom;

const char *cut_gemm_gemv_knob_name(int knob);
void cut_gemm_gemv_geometry(const cut_gemm *g, const cut_sched *s, cut_gemm_gemv_geom *out);
/* Largest VEC the rows of B allow (16 bytes at most): K (B N x K) or N (B K x N) divisible by it. */
int cut_gemm_gemv_max_vec(const cut_gemm *g);
/* The structural rules (dtype, M, sizes, knob lists, KWARPS <= WARPS, VEC within the alignment, no empty split-K
 * slice, grid), without device limits. 0, or -1 with a sentence. */
int cut_gemm_gemv_check_shape(const cut_gemm *g, const cut_sched *s, cut_err *e);

int cut_codegen_gemm_gemv(const cut_gemm *g, const cut_sched *s, cut_kernel_src *out, cut_err *e);

#endif
