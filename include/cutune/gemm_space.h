/* cutune — the generic register-tiled SIMT GEMM template (issue 6): knob space and code generator.
 *
 * A block computes a BM x BN tile of C = A·B (NN) or A·Bᵀ (NT) in steps of BK along K with (BM/TM) x (BN/TN)
 * threads, each holding a TM x TN register tile. Both operand tiles are staged in shared memory with K as the
 * row index (As[k][m], Bs[k][n]), optionally double-buffered. M, N and K need not be multiples of the tiles:
 * loads and stores are guarded. fp32 only in this step. src/ops/gemm/space.c holds the space, src/ops/gemm/codegen.c the
 * generator (it explains the kernel). */
#ifndef CUTUNE_GEMM_SPACE_H
#define CUTUNE_GEMM_SPACE_H

#include "cutune/codegen.h"
#include "cutune/common.h"
#include "cutune/gemm.h"
#include "cutune/devlimits.h"
#include "cutune/search.h"
#include "cutune/strategy.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

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

/* A GEMM schedule is a cut_sched: tpl indexes the GEMM template registry below (simt is 0), k its knobs. */
typedef cut_sched cut_gemm_sched;

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

/* ---- the GEMM template registry (src/ops/gemm/registry.c): every GEMM template in the same space/search machinery ----
 *
 * Templates: "simt" (fp32 FMA, the analogue of TVM's generic tuning; this file's knobs above), "mma" (multi-stage
 * cp.async pipeline feeding mma.sync tensor cores; fp16, bf16, tf32; knobs in src/ops/gemm/mma.h, space in
 * src/ops/gemm/mma.c, kernel in src/ops/gemm/mma_codegen.c), "wgmma" (Hopper, sm_90a:
 * TMA + mbarriers + wgmma with producer/consumer warp specialisation; src/ops/gemm/wgmma.c) and "gemv" (issue 21:
 * skinny GEMMs, M <= 16, at memory bandwidth on CUDA cores; src/ops/gemm/gemv.h, gemv.c, gemv_codegen.c).
 *
 * Kernel contract (every template): extern "C" __global__ entry "cut_gemm", C fp32 row-major M x N, A row-major
 * M x K (K x M for TN, TT) and B row-major K x N (NN, TN) or N x K (NT, TT), batch of each packed (cutune/gemm.h),
 * and after C a float pointer Cin when beta != 0 (cut_kernel_src.extra_bufs), stored in the dtype's storage type (fp32 and tf32: float; fp16:
 * __half; bf16: __nv_bfloat16); arguments as cut_kernel_src says (three pointers, or two TMA maps and C). Sizes are
 * baked into the source. M, N, K need not be multiples of any tile (tails handled, never rejected for that). */

/* Numbers every template derives from a schedule: what the cost model's shared features are built from. */
typedef struct cut_gemm_geom {
    int bm, bn, bk;       /* block tile */
    int threads;          /* per block */
    int stages;           /* shared-memory buffers along K (1: none ahead) */
    int smem_bytes;       /* static + dynamic shared memory per block */
    int regs_est;         /* rough registers per thread */
    int elem_bytes;       /* bytes of one input element */
    int tensor_cores;     /* 0 SIMT FMA, 1 mma.sync, 2 wgmma */
    unsigned grid[3];
    long walked_tiles; /* a persistent kernel's (wgmma pp): the output tiles its grid of blocks walks; 0: a block a
                          tile (the grid is the work) */
} cut_gemm_geom;

typedef struct cut_gemm_template {
    const char *name; /* "simt", "mma", "wgmma", "gemv" */
    int nknobs;
    /* 1: `cutune tune --backend emu` leaves the template out, since some of its kernels need a GPU (wgmma: its
     * cluster kernels; its cl=1 kernels run on the emulator in tests only); 0: the emulator runs them all. */
    int gpu_only;
    /* Knob name in index order ("bm", ...), "?" outside [0, nknobs). */
    const char *(*knob_name)(int knob);
    /* The value a record without this knob means (a knob added later, e.g. mma's splitk: 1), or -1 when every
     * record must carry it. NULL: every knob is required. */
    int (*knob_default)(int knob);
    /* 1 if the template can compute g on d at all (dtype, layout, architecture), else 0 and, when why is not
     * NULL, a sentence ("the SIMT template computes fp32 only"). */
    int (*applies)(const cut_gemm *g, const cut_devlimits *d, cut_err *why);
    /* Draws a random schedule (it may be invalid: callers check); sets s->tpl to the template's registry index. */
    void (*sample)(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_sched *s);
    /* Changes one or a few knobs of s in place. */
    void (*mutate)(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_sched *s);
    /* 0 if s is valid for g on d; -1 with a sentence otherwise. */
    int (*check)(const cut_gemm *g, const cut_sched *s, const cut_devlimits *d, cut_err *e);
    /* Geometry of a schedule (finite numbers also for an invalid one). */
    void (*geometry)(const cut_gemm *g, const cut_sched *s, cut_gemm_geom *out);
    /* The kernel of a valid schedule (sets arch_a and the TMA maps where the template needs them). Caller frees
     * out with cut_kernel_src_free (also after an error). */
    int (*codegen)(const cut_gemm *g, const cut_sched *s, cut_kernel_src *out, cut_err *e);
} cut_gemm_template;

int cut_gemm_template_count(void);
/* NULL outside [0, count). */
const cut_gemm_template *cut_gemm_template_get(int tpl);
/* -1 if no GEMM template has that name. */
int cut_gemm_template_find(const char *name);
/* "simt bm=64 bn=64 ..." for any GEMM schedule ("?" template for a bad tpl). */
void cut_gemm_sched_describe(const cut_sched *s, char *buf, size_t n);
/* Draws up to max_tries samples of template tpl until one is valid. 0, or -1 with e set. */
int cut_gemm_sched_sample_valid(const cut_gemm *g, const cut_devlimits *d, int tpl, cut_rng *r, cut_sched *s,
                                int max_tries, cut_err *e);
/* Validity through the schedule's template (a bad tpl is an error). */
int cut_gemm_sched_check(const cut_gemm *g, const cut_sched *s, const cut_devlimits *d, cut_err *e);
/* Code through the schedule's template. */
int cut_codegen_gemm(const cut_gemm *g, const cut_sched *s, cut_kernel_src *out, cut_err *e);

extern const cut_gemm_template cut_gemm_tpl_simt, cut_gemm_tpl_mma, cut_gemm_tpl_wgmma, cut_gemm_tpl_gemv;
/* Registry indices (registry.c keeps this order; the cost model's one-hot has CUT_FEAT_NTPL = 4 slots). */
enum { CUT_GEMM_TPL_SIMT = 0, CUT_GEMM_TPL_MMA = 1, CUT_GEMM_TPL_WGMMA = 2, CUT_GEMM_TPL_GEMV = 3 };

/* ---- cost-model features (src/ops/gemm/features.c) ---- */

/* GEMM features (a separate cost model from conv's: slot meanings differ by kind, see features.c): one-hot of the
 * GEMM template (registry index < CUT_FEAT_NTPL), log2 M/N/K, dtype, layout, and from the template's geometry:
 * tile sizes, threads, stages, shared memory, blocks per SM, waves and tail-wave efficiency, arithmetic intensity
 * per block, tile-padding waste, tensor cores; then the raw knobs (log2(1 + k)). regs: the compiler's count or -1
 * (the geometry's estimate). Deterministic and finite. Returns CUT_FEAT_LEN, or -1 for a template outside the
 * registry or past CUT_FEAT_NTPL, or a too-small cap. */
int cut_features_gemm(const cut_gemm *g, const cut_sched *s, const cut_devlimits *d, int regs, float *out, int cap);



/* ---- the GEMM space as strategies see it (src/ops/gemm/space_op.c) ---- */

/* The schedule space of GEMM g under d: every GEMM template (cutune/strategy.h). Caller frees with cut_space_free
 * (or hands it to a strategy, which takes ownership). */
cut_space *cut_gemm_space_new(const cut_gemm *g, const cut_devlimits *d);
/* A search over cut_gemm_space_new(g, d): every template that applies to g (and is in o->tpl_mask, a bit per
 * registry index, when that is not 0); the cost model learns cut_features_gemm. Replay (o->universe) works as for
 * conv. Caller frees with cut_search_free. */
cut_search *cut_search_new_gemm(const cut_gemm *g, const cut_devlimits *d, const cut_search_opts *o);

#ifdef __cplusplus
}
#endif

#endif
