/* cutune — the built-in templates (internal). */
#ifndef CUTUNE_SPACE_TEMPLATES_H
#define CUTUNE_SPACE_TEMPLATES_H

#include "codegen/emit.h"
#include "codegen/knobs.h"
#include "cutune/space.h"

extern const cut_template cut_tpl_direct;

/* Direct convolution knobs (indices into cut_sched.k). */
enum {
    CUT_D_TCO, CUT_D_TOH, CUT_D_TOW, /* threads per block along co, oh, ow */
    CUT_D_RCO, CUT_D_ROH, CUT_D_ROW, /* outputs per thread (register tile) along co, oh, ow */
    CUT_D_RC,                        /* input channels per reduction step */
    CUT_D_RKH,                       /* filter rows per reduction step (divides KH) */
    CUT_D_SMEM,                      /* 1: stage input and weight tiles in shared memory */
    CUT_D_UNROLL,                    /* max unrolled reduction steps (TVM's auto_unroll_max_step): 0,16,64,512 */
    CUT_D_VEC,                       /* contiguous ow outputs per thread group (1, 2, 4): vector stores */
    CUT_D_NKNOBS
};

extern const cut_template cut_tpl_igemm;

/* Implicit-GEMM knobs (indices into cut_sched.k): GEMM M = CO, N = batch*OH*OW, K = CI*KH*KW. */
enum {
    CUT_G_BM, CUT_G_BN, CUT_G_BK, /* block tile along M, N, K: BM, BN in {16..128}, BK in {4..32} */
    CUT_G_TM, CUT_G_TN,           /* register tile per thread along M, N: 1, 2, 4, 8 */
    CUT_G_WLM,                    /* lanes of a warp along M (32/WLM along N): 1..32 */
    CUT_G_STAGES,                 /* shared-memory buffers: 1, or 2 (prefetch the next tile during compute) */
    CUT_G_VA,                     /* weight (A) load width along K: 1, or 4 (float4, needs K % 4 == 0) */
    CUT_G_PAD,                    /* floats of padding per shared-memory row: 0, 4 */
    CUT_G_UNROLL,                 /* unroll factor of the BK loop (<= BK; BK = fully unrolled) */
    CUT_G_SPLITK,                 /* K slices over blockIdx.z, summed by the last block of each tile: 1..16 */
    CUT_G_MINB,                   /* __launch_bounds__ min blocks per SM: 0 (not given: ptxas heuristic), 1, 2 */
    CUT_G_KTAB,                   /* B gather's k -> (ci, kh, kw): 0 divisions by constants, 1 __constant__ table */
    CUT_G_NKNOBS
};

/* Everything that follows from an implicit-GEMM schedule. */
typedef struct cut_igemm_geom {
    int oh, ow;          /* output size */
    int gm, gn, gk;      /* GEMM sizes: CO, batch*OH*OW, CI*KH*KW */
    int ty, tx, threads; /* thread grid BM/TM x BN/TN */
    int ktiles, kps;     /* BK tiles along K, and per split-K slice */
    int a_per;           /* A vectors loaded per thread per tile */
    int rb, cb;          /* B rows x columns loaded per thread per tile */
    int tbk;             /* threads along K of the B loader */
    long ktab_bytes;     /* size of the k table (whether used or not) */
    int smem_bytes;
    int acc;             /* accumulators per thread */
    int regs_est;        /* rough registers per thread */
    int unrolled_fmas;   /* FMAs in the unrolled part of the BK loop */
    long ws_bytes;       /* split-K workspace (static __device__ array), 0 without split-K */
    unsigned grid[3];    /* N tiles, M tiles, split-K slices */
} cut_igemm_geom;
void cut_igemm_geometry(const cut_conv *c, const cut_sched *s, cut_igemm_geom *g);



/* Everything that follows from a direct-convolution schedule: block tile, grid, shared-memory tile. */
typedef struct cut_direct_geom {
    int oh, ow;              /* output size */
    int threads;             /* tco * toh * tow */
    int bco, boh, bow;       /* block tile */
    int iht, iwt;            /* staged input tile: rows and columns */
    int smem_in, smem_w;     /* staged floats per reduction step (0 without staging) */
    int smem_bytes;
    int acc;                 /* accumulators per thread */
    int regs_est;            /* rough registers per thread */
    int unrolled_trips;      /* reduction steps in the fully unrolled inner loop nest (1 if none unrolled) */
    unsigned grid[3];
} cut_direct_geom;
void cut_direct_geometry(const cut_conv *c, const cut_sched *s, cut_direct_geom *g);

extern const cut_template cut_tpl_winograd;

/* Winograd knobs (indices into cut_sched.k): F(m x m, 3x3) for 3x3 stride-1 convolutions (codegen/winograd.c).
 * A block computes BCO output channels x BT output tiles (m x m outputs of one image each) as alpha^2 independent
 * GEMMs M[xi][co][t] = sum_c U[xi][c][co] * V[xi][c][t] over the input channels, in chunks of BC channels. */
enum {
    CUT_W_M,            /* output tile: 2 -> F(2x2,3x3) (alpha 4), 4 -> F(4x4,3x3) (alpha 6) */
    CUT_W_BCO, CUT_W_BT, /* block tile: output channels 8..128, tiles 4..64 */
    CUT_W_BC,           /* input channels per shared-memory chunk: 1..16 */
    CUT_W_RCO, CUT_W_RT, /* register tile per thread and transformed element: co x tiles, 1..8 each */
    CUT_W_RXI,          /* transformed elements (xi) per thread: 1, 2, 3 (m=4 only), 4 */
    CUT_W_PAD,          /* floats of padding per shared-memory row: 0, 4 */
    CUT_W_UNROLL,       /* unroll factor of the channel loop of a chunk (<= BC; BC = fully unrolled) */
    CUT_W_PF,           /* 1: the next chunk's global loads are issued before the current chunk's FMAs */
    CUT_W_MINB,         /* __launch_bounds__ min blocks per SM: 0 (not given), 1, 2 */
    CUT_W_NKNOBS
};

/* A transform matrix with rational entries: entry (r, c) = num[r * cols + c] / den[r]. */
typedef struct cut_wino_mat {
    int rows, cols;
    const int *num; /* rows x cols, row-major */
    const int *den; /* per row, > 0 */
} cut_wino_mat;

/* The matrices of F(m x m, 3x3): Y = A^T [(G g G^T) .* (B^T d B)] A for a 3x3 filter g and an alpha x alpha input
 * patch d (correlation, as convolution layers compute it). */
typedef struct cut_wino_mats {
    int m, alpha;
    cut_wino_mat bt; /* alpha x alpha */
    cut_wino_mat g;  /* alpha x 3 */
    cut_wino_mat at; /* m x alpha */
} cut_wino_mats;
/* m = 2 or 4; NULL otherwise. Static storage. */
const cut_wino_mats *cut_winograd_mats(int m);
static inline double cut_wino_entry(const cut_wino_mat *x, int r, int c)
{
    return (double)x->num[r * x->cols + c] / x->den[r];
}

/* Everything that follows from a Winograd schedule. */
typedef struct cut_wino_geom {
    int m, alpha, a2;            /* output tile m x m, input patch alpha x alpha, alpha^2 transformed elements */
    int oh, ow;                  /* output size */
    int tiles_h, tiles_w, tiles; /* tiles per image along OH and OW; tiles over the batch */
    int tco, tt, xg, threads;    /* threads along co, along tiles, xi groups (alpha^2 / RXI); their product */
    int vco, vt;                 /* vector width of the shared-memory reads along co and tiles: min(R, 4) */
    int nin, nfi, ipt;           /* transform items per chunk (input patches, filters) and slots per thread */
    int chunks;                  /* channel chunks: ceil(CI / BC) */
    int epi, epj, passes;        /* epilogue: register rows x columns through shared memory per pass, passes */
    int stage_floats;            /* U and V staging buffers of one chunk */
    int epi_floats;              /* epilogue buffer of one pass (shares the storage) */
    int smem_bytes;
    int acc;                     /* accumulators per thread: RXI * RCO * RT */
    int regs_est;                /* rough registers per thread */
    int unrolled_fmas;           /* FMAs in the unrolled part of the channel loop */
    unsigned grid[3];            /* tile blocks, co blocks, 1 */
} cut_wino_geom;
void cut_winograd_geometry(const cut_conv *c, const cut_sched *s, cut_wino_geom *g);

extern const cut_template cut_tpl_igemm_tc;

/* Tensor-core implicit-GEMM knobs (indices into cut_sched.k; src/ops/conv2d/igemm_tc_gen.c explains the kernel):
 * GEMM M = N*OH*OW (output pixels), N = CO, K = KH*KW*CI (NHWC: CI innermost) or CI*KH*KW (NCHW). */
enum {
    CUT_T_BM, CUT_T_BN, /* block tile along M, N: 32..256 */
    CUT_T_BK,           /* block tile along K: 32, 64 (fp16/bf16); 16, 32 (tf32): rows of 64 or 128 bytes */
    CUT_T_WM, CUT_T_WN, /* warp tile along M, N: 32, 64 */
    CUT_T_STAGES,       /* cp.async pipeline depth: 2, 3, 4 */
    CUT_T_SWIZZLE,      /* 1: XOR-swizzled shared-memory rows; 0: plain */
    CUT_T_CPA,          /* input (im2col) copies: 16, 8, 4 bytes of cp.async (NHWC, CI aligned), 0: gathered
                           element by element */
    CUT_T_CPB,          /* weight copies: 16, 8, 4 bytes of cp.async (K aligned), 0: gathered */
    CUT_T_SPLITK,       /* K slices over blockIdx.z, summed in slice order by the last block of each tile: 1..16
                           (records written before it existed mean 1) */
    CUT_T_NKNOBS
};

/* Everything that follows from an igemm_tc schedule (knobs clamped: finite also for an invalid one). */
typedef struct cut_igemm_tc_geom {
    int oh, ow;
    int gm, gn, gk;      /* GEMM sizes */
    int elem;            /* bytes of one input element: 2 or 4 */
    int warps, threads;
    int a_units, b_units; /* copies (cp.async pieces or gathered elements) per thread per k tile */
    int smem_ring;       /* the cp.async ring (dynamic shared memory) */
    int smem_bytes;      /* the ring and the table of the A rows' im2col decode (static) */
    int acc;             /* fp32 accumulators per thread */
    int regs_est;        /* rough registers per thread */
    int ktiles, kps;     /* BK tiles along K, and per split-K slice */
    int split;           /* split-K slices (1: none) */
    long ws_bytes;       /* split-K workspace: SPLITK x tiles x BM x BN fp32 partials, 0 without split-K */
    unsigned grid[3];    /* N tiles, M tiles, split-K slices */
} cut_igemm_tc_geom;
void cut_igemm_tc_geometry(const cut_conv *c, const cut_sched *s, cut_igemm_tc_geom *g);
/* Bytes per A row of the block's decode table (igemm_tc_gen.c: an int4 of offset, ih0, iw0). */
#define CUT_IGEMM_TC_ROW_BYTES 16
/* Largest cp.async width (16, 8, 4; 0: none) of the input (NHWC with CI * elem a multiple of it) and of the
 * weights (K * elem a multiple of it). */
int cut_igemm_tc_max_cpa(const cut_conv *c);
int cut_igemm_tc_max_cpb(const cut_conv *c);

/* The text after the tensor-core kernels' #defines (DT 0 fp16, 1 bf16, 2 tf32; T; N; BN; NHWC; OHW; EPI 0 none, 1
 * bias, 2 bias and ReLU; under CUT_EMU with DT 0 an emu_val(bits, 0) giving an fp16's value): OutT and to_out (the
 * one rounding of an fp32 sum to the output type), EPI_ARGS (the bias parameter when EPI), epi(v, bias, n) (bias of
 * channel n, then ReLU) and store2(row, n, v0, v1) (channels n, n + 1 of an output row, guarded). igemm_tc_gen.c. */
extern const char cut_conv_tc_store_text[];

extern const cut_template cut_tpl_wgmma_conv;

/* Hopper implicit-GEMM knobs (indices into cut_sched.k; src/ops/conv2d/wgmma_conv.c explains the kernel): NHWC
 * fp16/bf16, M = N*OH*OW, N = CO, K = KH*KW*CI. */
enum {
    CUT_WC_BN,    /* wgmma n, the block tile along CO: 64, 128, 192, 256 */
    CUT_WC_MI,    /* m64 blocks per consumer warp group: 1, 2 */
    CUT_WC_NC,    /* consumer warp groups: 1, 2 (the block tile along M is 64 MI NC) */
    CUT_WC_ST,    /* stages of the shared-memory ring: 2..6 */
    CUT_WC_WAITD, /* wgmma groups left in flight before a stage is released: 0, 1 */
    CUT_WC_SPLITK, /* k-tile slices over blockIdx.z, summed in slice order by the tile's last block: 1..16 */
    CUT_WC_NKNOBS
};

/* Everything that follows from a wgmma_conv schedule (knobs clamped: finite also for an invalid one). */
typedef struct cut_wgmma_conv_geom {
    int oh, ow;
    int gm, gn, gk;    /* GEMM sizes */
    int bm, bn, bk;    /* block tile; BK = 64 (128-byte rows) */
    int threads;       /* 128 (NC + 1) */
    int lag;           /* k tiles a producer thread keeps in flight before it signals one: ST - 1 - WAITD */
    int rows;          /* input rows (16-byte copies) per producer thread per k tile: BM / 16 */
    int smem_bytes;    /* dynamic: the ring, its barriers, 1024 bytes of alignment slack */
    int acc;           /* fp32 accumulators per consumer thread */
    int regs_est;      /* rough registers per consumer thread */
    int ktiles, kps;   /* k tiles of 64, and per split-K slice */
    int split;         /* split-K slices (1: none) */
    long ws_bytes;     /* split-K workspace: SPLITK x tiles x BM x BN fp32 partials, 0 without split-K */
    unsigned grid[3];  /* M tiles x N tiles (M fastest), 1, split-K slices */
} cut_wgmma_conv_geom;
void cut_wgmma_conv_geometry(const cut_conv *c, const cut_sched *s, cut_wgmma_conv_geom *g);

/* ---- emitters (each appends the kernel text after the banner and fills out's launch configuration) ---- */

/* The banner of a conv kernel: the workload and the schedule. */
void cut_emit_banner(cut_buf *b, const cut_conv *c, const cut_sched *s);
/* The launch configuration every conv template shares: entry cut_conv2d, a 1-D block, static shared memory only,
 * no inline PTX. */
void cut_emit_launch(cut_kernel_src *out, const unsigned grid[3], int threads);
int cut_emit_direct(cut_buf *b, const cut_conv *c, const cut_sched *s, cut_kernel_src *out, cut_err *e);
int cut_emit_igemm(cut_buf *b, const cut_conv *c, const cut_sched *s, cut_kernel_src *out, cut_err *e);
int cut_emit_winograd(cut_buf *b, const cut_conv *c, const cut_sched *s, cut_kernel_src *out, cut_err *e);
int cut_emit_igemm_tc(cut_buf *b, const cut_conv *c, const cut_sched *s, cut_kernel_src *out, cut_err *e);
/* Also fills out's TMA map of the weights (buffer 1), its dynamic shared memory and arch_a. */
int cut_emit_wgmma_conv(cut_buf *b, const cut_conv *c, const cut_sched *s, cut_kernel_src *out, cut_err *e);

#endif
