/* cutune — Monte Carlo Graph Search over moves (seed 002): the move vocabulary, proposals and the search graph.
 * The graph knows moves, proposals and measured values, never what a state is (the kernel op's states live in
 * cutune/kstate.h, the optimizer's journal in cutune/optimize.h). */
#ifndef CUTUNE_MCGS_H
#define CUTUNE_MCGS_H

#include "cutune/common.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- moves ---- */

typedef enum cut_move {
    CUT_MV_ASYNC_PIPELINE,  /* enable_async_pipeline: cp.async for a marked staging copy */
    CUT_MV_VECTORIZE,       /* vectorize_global_loads: a VEC tunable up */
    CUT_MV_MMA,             /* switch_to_mma_or_wgmma: an MMA tunable on */
    CUT_MV_PAD_TAIL,        /* pad_tail_and_mask: pad 2-D shared arrays (bank conflicts), a PAD tunable */
    CUT_MV_BLOCK_SIZES,     /* change_block_sizes: a size tunable to another allowed value */
    CUT_MV_CACHE_CG,        /* cache_policy_cg: reads of const pointers through __ldcg */
    CUT_MV_AVOID_ATOMICS,   /* avoid_atomics_reduce: warp / block aggregation before atomicAdd */
    CUT_MV_GROUPED,         /* grouped_gemm_colmajor: grouped column-major raster of a 2-D grid */
    CUT_MV_MATH_FUSION,     /* softmax_math_fusion: fast SFU intrinsics, rsqrtf */
    CUT_MV_COUNT
} cut_move;

const char *cut_move_name(cut_move m);
/* The move named s, or -1. */
int cut_move_parse(const char *s);

/* ---- proposals ---- */

typedef struct cut_proposal {
    cut_move move;
    char label[160];  /* what it does ("BLOCK 128 -> 256"); unique among one state's proposals */
    char *diff;       /* unified diff against the state's source, malloc'd */
    double pred_gain; /* the generator's estimate of the relative gain (0.1: 10% faster) */
} cut_proposal;
void cut_proposal_free(cut_proposal *p);

/* ---- the search graph (mcgs.c) ---- */

/* Constants, named as seed 002 names them. */
#define CUT_PUCT_C 1.4           /* exploration weight of the prior in PUCT */
#define CUT_ROOT_NOISE_EPS 0.25  /* share of Dirichlet noise in the root's priors */
#define CUT_ROOT_NOISE_ALPHA 0.3 /* Dirichlet concentration of that noise */
#define CUT_PROG_WIDEN_C 1.0     /* children allowed = ceil(C * (visits + 1)^ALPHA) */
#define CUT_PROG_WIDEN_ALPHA 0.5
#define CUT_FPU_REDUCTION 0.1    /* an untried edge's value: the parent's Q minus this */
#define CUT_PRED_PRIOR_WEIGHT 2.0 /* pseudo-observations behind a rule's predicted gain when history updates it */

/* Value backed up for a measured variant: speedup s over the baseline mapped to s / (1 + s) (baseline 0.5, 2x
 * 0.667, 10x 0.909); a failed variant 0. */
double cut_mcgs_value(double speedup);

typedef enum cut_node_status { CUT_NODE_PENDING, CUT_NODE_OK, CUT_NODE_FAILED } cut_node_status;

typedef struct cut_edge {
    int child;        /* node index, -1 until expanded */
    cut_move move;
    char label[160];
    double prior;     /* normalised over the parent's proposals */
    double pred_gain; /* after history (cut_mcgs_pred_gain) */
    double rule_gain; /* the generator's own estimate */
    uint64_t key;     /* state key of the child it leads to (cut_kstate_key), 0 if unknown */
    char *diff;       /* the proposal's diff (owned), kept for the build; NULL after a resume (regenerated then) */
    int pruned;       /* pred_gain < --min-pred-gain: never expanded */
    int visits;
} cut_edge;

typedef struct cut_node {
    char id[32];          /* "baseline" or the variant id "v0007" */
    cut_node_status status;
    uint64_t key, ptx_hash;
    double ms, speedup;   /* measured (OK nodes) */
    int visits;
    double value_sum;     /* of backed-up values */
    int virtual_loss;     /* in-flight evaluations below */
    int nedges;
    cut_edge *edges;      /* proposals, once generated (edges_ready) */
    int edges_ready;
    int depth;
} cut_node;

typedef struct cut_mcgs {
    int nnodes, cap;
    cut_node *nodes; /* nodes[0] is the root (the baseline) */
    cut_rng rng;
    int noise_applied;
} cut_mcgs;

void cut_mcgs_init(cut_mcgs *g, uint64_t seed);
void cut_mcgs_free(cut_mcgs *g);
/* Adds a node (status PENDING, no edges); returns its index. */
int cut_mcgs_add_node(cut_mcgs *g, const char *id);
/* The node with this PTX hash (OK or PENDING), or -1. */
int cut_mcgs_find_ptx(const cut_mcgs *g, uint64_t ptx_hash);
/* The node with this state key (source and launch; OK or PENDING), or -1. */
int cut_mcgs_find_key(const cut_mcgs *g, uint64_t key);
int cut_mcgs_find_id(const cut_mcgs *g, const char *id);
/* Gives node n its edges from proposals (priors from pred gains, normalised; pruned below min_pred_gain; each diff
 * copied); at the root (n == 0) mixes Dirichlet noise into the priors once. */
void cut_mcgs_set_edges(cut_mcgs *g, int n, const cut_proposal *p, const double *pred_gain, int np,
                        double min_pred_gain);
/* Progressive widening: how many children node n may have expanded now. */
int cut_mcgs_widen_limit(const cut_node *n);
/* PUCT score of edge e of node n (Q of its child, or the first-play value, plus the prior term). */
double cut_mcgs_puct(const cut_mcgs *g, const cut_node *n, const cut_edge *e);
/* Selection: walks from the root by PUCT until a node may expand a new edge; returns that node and edge (through
 * *node, *edge) and the path of node indices (path[0] = 0) in path and *plen (at most maxlen). -1 when nothing is left to
 * expand anywhere on the walk. Adds a virtual loss along the path (undone by cut_mcgs_backup). Nodes whose edges are
 * not generated yet stop the walk with *edge = -1: the caller generates them and selects again. */
int cut_mcgs_select(cut_mcgs *g, int *node, int *edge, int *path, int *plen, int maxlen);
/* Backs value up along path (node visits, value sums, edge visits along it, and the final edge edge_last of the
 * last node), removing the virtual loss. */
void cut_mcgs_backup(cut_mcgs *g, const int *path, int plen, int edge_last, double value);
/* Dirichlet(alpha) sample of n values into out (deterministic for the rng's state). */
void cut_dirichlet(cut_rng *r, double alpha, int n, double *out);
/* Predicted gain of a move after history: (rule_gain * W + sum of observed gains) / (W + n), W =
 * CUT_PRED_PRIOR_WEIGHT. */
double cut_mcgs_pred_gain(double rule_gain, double observed_sum, int observed_n);

#ifdef __cplusplus
}
#endif

#endif
