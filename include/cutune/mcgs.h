/* cutune — Monte Carlo Graph Search over moves (seed 002): the move vocabulary, proposals, the search graph and the
 * MCGS strategy. The graph knows moves, proposals and measured values, never what a state is: a state is a source
 * text the op's move space (cut_move_space) proposes moves of (the kernel op's states live in cutune/kstate.h, the
 * optimizer's journal in cutune/optimize.h). */
#ifndef CUTUNE_MCGS_H
#define CUTUNE_MCGS_H

#include "cutune/common.h"
#include "cutune/strategy.h"

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
    char *diff;       /* the proposal's diff (owned), kept for the build (and in the optimizer's state file while
                       * the edge is not built); NULL only when resumed from a state file that kept none */
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


/* ---- the MCGS strategy (mcgs_search.c): the graph behind propose/observe ----
 *
 * A strategy over states proposes tickets, not schedules (cutune/strategy.h, CUT_TPL_TICKET): ticket t stands for one
 * selected move (an edge of a measured node, its path from the root, the variant id it will have) until it is
 * observed. The task that builds variants reads what a ticket stands for (cut_mcgs_ticket_get), tells the search what
 * it built (cut_mcgs_ticket_built, cut_mcgs_ticket_ptx: transpositions are found there) and the loop then observes the
 * ticket's time, which backs its value up. What the search does that a journal keeps (a variant taken in, a
 * transposition linked, the prune threshold lowered, the best changed) is told to an optional note hook. */

#define CUT_MCGS_MAX_PATH 64
#define CUT_MCGS_MAX_PROPOSALS 96
/* Observed gain recorded for a move whose variant failed (fault, hang, wrong result, no compile): all of the parent's
 * speed lost. One failure takes a rule's predicted gain of 0.05 to (2 * 0.05 - 1) / 3 = -0.30, below
 * CUT_RELAX_FLOOR, so a rewrite that faults is not built again on every other state once the threshold relaxes (the
 * H200 run of 2026-11-23 spent 20 of layernorm's 50 builds on one faulting rewrite with -0.25 and no floor). */
#define CUT_FAIL_GAIN (-1.0)
#define CUT_RELAX_STEP 0.05    /* how far the prune threshold drops when every open move was tried */
#define CUT_RELAX_FLOOR (-0.25) /* never lower: a move predicted to lose over 25% is not built to spend the budget */

/* What MCGS searches, as the op gives it: the moves out of a state and the state a move leads to. */
typedef struct cut_move_space cut_move_space;
struct cut_move_space {
    void *impl;
    /* The proposals of state src, node node of the search (its graph tells the generator what was tried around it),
     * into out[0..cap): their count, or -1 with e (the generator failed: a setup error). */
    int (*propose)(const cut_move_space *ms, int node, const char *src, cut_proposal *out, int cap, cut_err *e);
    /* Optional: factors per move (weight[CUT_MV_COUNT], 1 neutral) from profiling node, the state src; -1 with e
     * when they cannot be had (the search goes on neutral and says so through its notes). */
    int (*weights)(const cut_move_space *ms, int node, const char *src, double *weight, cut_err *e);
    /* The key of the state diff leads to from src (source and launch), 0 when it cannot be had. */
    uint64_t (*key)(const cut_move_space *ms, const char *src, const char *diff);
};

/* History of one move key ("BLOCK -> 256", "fast math intrinsics"): observed relative gains. */
typedef struct cut_mcgs_hist {
    char key[96];
    cut_move move;
    int n;
    double sum;
} cut_mcgs_hist;

/* One selected move until it is observed. */
typedef struct cut_mcgs_ticket {
    int ticket;          /* the variant's number: id "v%04d" */
    char id[32];
    int parent, edge;    /* the edge of node parent it expands */
    int path[CUT_MCGS_MAX_PATH], plen; /* nodes from the root to parent (virtual losses taken along it) */
    char *src;           /* the state built (owned until observed; NULL: none) */
    uint64_t key, ptx;   /* of the state built, 0 unknown */
    int same_as;         /* a known node of the same state (transposition), or -1 */
} cut_mcgs_ticket;

/* A finished variant as the graph takes it in: live from an observed ticket, or from a journal on resume. */
typedef struct cut_mcgs_outcome {
    char id[32];
    int parent;
    char label[160];     /* the parent's edge it expands */
    int path[CUT_MCGS_MAX_PATH], plen;
    int ok;              /* measured and correct: ms holds its time */
    int transposition;   /* the state of node same_as (nothing measured) */
    double ms;
    uint64_t key, ptx;
    int same_as;
    char *src;           /* taken: owned by the new node, or freed */
    int ticket;          /* the ticket it settles (live), or -1 */
} cut_mcgs_outcome;

typedef enum cut_mcgs_note_kind {
    CUT_MCGS_NOTE_VARIANT,       /* a ticket's variant was taken in (live): node, parent, edge, ticket, gain */
    CUT_MCGS_NOTE_BEST,          /* the best node changed (live or resumed): node */
    CUT_MCGS_NOTE_TRANSPOSITION, /* an edge was linked to a known state while selecting: node (known), parent, edge */
    CUT_MCGS_NOTE_RELAXED,       /* the prune threshold was lowered: opened edges reopened */
    CUT_MCGS_NOTE_EXHAUSTED,     /* nothing left to expand: propose returns 0 */
    CUT_MCGS_NOTE_NO_PRIORS,     /* the move space's weights failed for node: msg says why */
    CUT_MCGS_NOTE_ERROR          /* the move space failed (a setup error): msg; propose returns 0 after it */
} cut_mcgs_note_kind;

typedef struct cut_mcgs_note {
    cut_mcgs_note_kind kind;
    int node, parent, edge, ticket, opened;
    double gain; /* VARIANT: relative gain over the parent (CUT_FAIL_GAIN when it failed) */
    const char *msg;
} cut_mcgs_note;

typedef struct cut_mcgs_search cut_mcgs_search;
/* Told what the search did; -1 with e fails the call that made the note (an observe drops it: the hook keeps it). */
typedef int (*cut_mcgs_note_fn)(void *ctx, const cut_mcgs_search *s, const cut_mcgs_note *n, cut_err *e);

/* The search: the graph with its per-node data (parallel to g.nodes), counters, history and outstanding tickets. The
 * journal reads and restores it (search_state.json); the strategy drives it. */
struct cut_mcgs_search {
    cut_mcgs g;
    char **src;          /* per node: its source (owned; NULL for a variant that never patched) */
    int *parent;
    char (*via)[160];    /* the label of the edge that made it */
    int *via_move;       /* that edge's move, -1 for the root */
    int cap;
    int measured, failed, transpositions, next_id;
    double baseline_ms;
    int best;
    double min_pred_gain; /* a new edge predicted to gain less is pruned (--min-pred-gain; never lowered) */
    double threshold;    /* the prune threshold relaxation lowers when nothing above it is left, from min_pred_gain;
                          * it reopens pruned edges, new edges are still pruned by min_pred_gain */
    int nhist;
    cut_mcgs_hist hist[512];
    const cut_move_space *ms; /* borrowed */
    cut_mcgs_note_fn note;
    void *note_ctx;
    cut_mcgs_ticket *tickets; /* outstanding */
    int ntickets, tcap;
};

/* An empty search (no root yet: the journal adds it) over move space ms (borrowed), rng seeded with seed, prune
 * threshold min_pred_gain; note (NULL: none) hears what it does. Free with cut_mcgs_search_free. */
void cut_mcgs_search_init(cut_mcgs_search *s, const cut_move_space *ms, uint64_t seed, double min_pred_gain,
                          cut_mcgs_note_fn note, void *note_ctx);
void cut_mcgs_search_free(cut_mcgs_search *s);
/* Adds node id (the per-node arrays grown; s->g.nodes may move). Takes src. Returns its index. */
int cut_mcgs_search_add(cut_mcgs_search *s, const char *id, char *src, int parent, int move, const char *via);
/* The history key of a proposal label into key (n bytes): a tunable change by its target, a rewrite by its label. */
void cut_mcgs_hist_key(const char *label, char *key, size_t n);
/* The history of (m, key), created empty when new; NULL when full. Points into s. */
cut_mcgs_hist *cut_mcgs_hist_get(cut_mcgs_search *s, cut_move m, const char *key);
/* Expands node n: the move space's proposals, weighted and corrected by the history, become its edges. -1 with e when
 * the move space fails. */
int cut_mcgs_expand(cut_mcgs_search *s, int n, cut_err *e);
/* Takes a finished variant into the graph (node or transposition, backup along its path, history, best; live: the
 * virtual loss taken at selection is removed, and a VARIANT note). Takes oc->src. -1 with e for an edge the parent
 * does not have, or a note hook's error. */
int cut_mcgs_apply(cut_mcgs_search *s, cut_mcgs_outcome *oc, int live, cut_err *e);

/* The MCGS strategy over s (borrowed: the caller keeps it, and its journal, beyond the strategy): propose selects up
 * to n moves (PUCT with progressive widening, virtual losses; transpositions linked without a ticket; the prune
 * threshold relaxed when nothing is open; 0 when nothing is left) and hands out their tickets; observe(ticket,
 * time_ms) takes the ticket's variant in. Proposals depend on every observation before them: a loop proposes the
 * next round once the last is observed. Caller frees with cut_strategy_free. */
cut_strategy *cut_strategy_mcgs_new(cut_mcgs_search *s);
/* The outstanding ticket, or NULL. */
const cut_mcgs_ticket *cut_mcgs_ticket_get(const cut_mcgs_search *s, int ticket);
/* The state the ticket's move built: takes src (NULL: none), key (0: unknown). Returns the known node of the same key
 * (a transposition: nothing to compile), or -1. */
int cut_mcgs_ticket_built(cut_mcgs_search *s, int ticket, char *src, uint64_t key);
/* The normalised PTX key of the state built. Returns the known node with it (a transposition), or -1. */
int cut_mcgs_ticket_ptx(cut_mcgs_search *s, int ticket, uint64_t ptx);

#ifdef __cplusplus
}
#endif

#endif
