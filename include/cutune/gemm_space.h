/* cutune — the generic register-tiled SIMT GEMM template (issue 6): knob space and code generator.
 *
 * A block computes a BM x BN tile of C = A·B (NN) or A·Bᵀ (NT) in steps of BK along K with (BM/TM) x (BN/TN)
 * threads, each holding a TM x TN register tile. Both operand tiles are staged in shared memory with K as the
 * row index (As[k][m], Bs[k][n]), optionally double-buffered. M, N and K need not be multiples of the tiles:
 * loads and stores are guarded. fp32 only in this step. src/gemm/space.c holds the space, src/gemm/codegen.c the
 * generator (it explains the kernel). */
#ifndef CUTUNE_GEMM_SPACE_H
#define CUTUNE_GEMM_SPACE_H

#include "cutune/codegen.h"
#include "cutune/common.h"
#include "cutune/gemm.h"
#include "cutune/space.h"

#include <stddef.h>

/* Knobs (indices into cut_gemm_sched.k). */
enum {
    CUT_GS_BM, CUT_GS_BN, CUT_GS_BK, /* block tile along M, N: 16..128; along K: 4..32 */
    CUT_GS_TM, CUT_GS_TN,            /* register tile per thread along M, N: 1, 2, 4, 8 */
    CUT_GS_VEC,                      /* global load width in floats: 1, 2, 4 (needs aligned rows, see check) */
    CUT_GS_DBUF,                     /* 1: double-buffered shared memory (prefetch the next tile during FMAs) */
    CUT_GS_PAD,                      /* floats of padding per shared-memory row: 0, 4 */
    CUT_GS_UNROLL,                   /* unroll factor of the BK loop: 1..32, <= BK (BK: fully unrolled) */
    CUT_GS_NKNOBS
};

typedef struct cut_gemm_sched {
    int k[CUT_GS_NKNOBS];
} cut_gemm_sched;

/* Everything that follows from a schedule (knobs clamped, so also an invalid one gives finite numbers). */
typedef struct cut_gemm_simt_geom {
    int ty, tx, threads;  /* thread grid BM/TM x BN/TN */
    int a_per, b_per;     /* global vectors per thread per k tile of A and of B */
    int staged;           /* floats staged in registers per thread per k tile: (a_per + b_per) * VEC */
    int smem_bytes;       /* static shared memory */
    int regs_est;         /* rough registers per thread */
    int unrolled_fmas;    /* FMAs of the unrolled part of the BK loop */
    unsigned grid[3];     /* N tiles, M tiles, 1 */
} cut_gemm_simt_geom;

/* Knob names in index order ("bm", "bn", ...). */
const char *cut_gemm_simt_knob_name(int knob);
/* "simt bm=64 bn=64 bk=8 tm=4 tn=4 vec=4 dbuf=1 pad=4 unroll=8" */
void cut_gemm_simt_describe(const cut_gemm_sched *s, char *buf, size_t n);
void cut_gemm_simt_geometry(const cut_gemm *g, const cut_gemm_sched *s, cut_gemm_simt_geom *out);

/* Draws a random schedule (it may be invalid: callers check). VEC is drawn among the widths g allows. */
void cut_gemm_simt_sample(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_gemm_sched *s);
/* Changes one knob of s in place (one step in its value list). */
void cut_gemm_simt_mutate(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_gemm_sched *s);
/* 0 if s is valid for g on d; -1 with a sentence otherwise (dtype other than fp32, a knob off its list, threads
 * outside 32..max, shared memory over the static limit, more than 32 staged floats per thread, register
 * estimate, a vector width the rows' alignment does not allow, unroll > BK, code size, a tile far larger than
 * the problem). */
int cut_gemm_simt_check(const cut_gemm *g, const cut_gemm_sched *s, const cut_devlimits *d, cut_err *e);
/* Draws up to max_tries samples until one is valid. Returns 0, or -1 with e set if none was. */
int cut_gemm_simt_sample_valid(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_gemm_sched *s,
                               int max_tries, cut_err *e);

/* Generates the kernel of a valid schedule: entry cut_gemm, extern "C" __global__ void cut_gemm(const float* A,
 * const float* B, float* C) with the sizes baked in, a 1-D block, static shared memory only, no inline PTX.
 * Returns -1 with e set if s is invalid for g (checked against the sm_90 limits' structural rules). Caller frees
 * out with cut_kernel_src_free. */
int cut_codegen_gemm_simt(const cut_gemm *g, const cut_gemm_sched *s, cut_kernel_src *out, cut_err *e);

#endif
