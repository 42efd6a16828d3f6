/* cutune — the MCGS kernel optimizer (issue 7, seed 002): states, moves, candidate generators, the search graph and
 * the driver behind `cutune optimize`.
 *
 * A state is a materialised source: the spec's tunables as #define lines in a marked header, then the user's source
 * (cut_kstate_materialise). The launch configuration follows from the tunables through the spec's expressions, so the
 * source alone is the state; its key hashes the source and the resolved launch. A second key hashes the normalised
 * PTX (comments and blank lines dropped): two sources that compile to the same PTX are one state (a transposition).
 *
 * A move is one of seed 002's nine tactics. A candidate generator (rules today, an LLM later) proposes candidates for
 * a state as unified diffs against its source; the optimizer applies each with GNU patch, never by editing lines
 * itself. */
#ifndef CUTUNE_OPTIMIZE_H
#define CUTUNE_OPTIMIZE_H

#include "cutune/common.h"
#include "cutune/kspec.h"
#include "cutune/kwork.h"

#include <stddef.h>
#include <stdint.h>

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

/* ---- states ---- */

#define CUT_KST_BEGIN "// cutune: tunables (edit these values, the launch follows)"
#define CUT_KST_END "// cutune: end of tunables"

/* The materialised source for tunable values vals (NULL: the baseline's), malloc'd. */
char *cut_kstate_materialise(const cut_kspec *k, const long long *vals);
/* The same header in front of another source (the spec's reference kernel). */
char *cut_kstate_materialise_src(const cut_kspec *k, const long long *vals, const char *source);
/* Reads the tunable values back from a materialised source: each tunable defined exactly once in the header, with an
 * allowed value. 0, or -1 with a sentence ("tunable BLOCK: 384 is not an allowed value (128, 256)"). */
int cut_kstate_tunables(const cut_kspec *k, const char *src, long long *vals, cut_err *e);
/* The state key: FNV-1a over the source and the resolved launch. */
uint64_t cut_kstate_key(const char *src, const cut_ks_launch *l);
/* Hash of PTX with comments, blank lines and leading/trailing blanks removed. */
uint64_t cut_ptx_norm_hash(const char *ptx);
/* The transposition key: the normalised PTX and the launch (a tunable that only sizes the launch leaves the PTX as
 * it was, yet is another state). */
uint64_t cut_kstate_ptx_key(const char *ptx, const cut_ks_launch *l);

/* ---- diffs (GNU diff and patch) ---- */

/* A unified diff from a to b with file labels a/kernel.cu and b/kernel.cu (`diff -u`), malloc'd into *out ("" when
 * equal). work_dir holds the temporary files. */
int cut_diff_unified(const char *a, const char *b, const char *work_dir, char **out, cut_err *e);
/* Applies a unified diff to src with `patch` (no fuzz beyond patch's default, no reject files): *out gets the new
 * text. A diff that does not apply: -1 with patch's message. */
int cut_patch_apply(const char *src, const char *diff, const char *work_dir, char **out, cut_err *e);

/* ---- candidate generators ---- */

typedef struct cut_proposal {
    cut_move move;
    char label[160];  /* what it does ("BLOCK 128 -> 256"); unique among one state's proposals */
    char *diff;       /* unified diff against the state's source, malloc'd */
    double pred_gain; /* the generator's estimate of the relative gain (0.1: 10% faster) */
} cut_proposal;
void cut_proposal_free(cut_proposal *p);

typedef struct cut_cand_gen {
    const char *name; /* "rules", "llm" */
    void *ctx;
    /* Proposes up to max candidates for the state src of spec k: out[0..n), n returned (0: nothing applies), -1 on
     * an error of the generator itself (e). work_dir: scratch space. */
    int (*propose)(void *ctx, const cut_kspec *k, const char *src, const char *work_dir, cut_proposal *out, int max,
                   cut_err *e);
    void (*destroy)(void *ctx);
} cut_cand_gen;

/* The rule generator: every rule of the nine moves that applies to the state (rules.c lists what each recognises). */
cut_cand_gen *cut_rules_gen_new(void);
void cut_cand_gen_free(cut_cand_gen *g);

/* A rule's rewrite as text (what the generator diffs): out malloc'd, NULL when the rule does not apply. Exposed for
 * tests. */
char *cut_rule_cache_cg(const char *src);
char *cut_rule_math_fusion(const char *src);
char *cut_rule_avoid_atomics(const char *src, int block_level);
char *cut_rule_pad_smem(const char *src);
char *cut_rule_grouped_raster(const char *src);
char *cut_rule_async_stage(const char *src);

/* Move priors from profiling (Nsight Compute, a later issue) plug in here: weights per move for a state, multiplied
 * into the generator's predicted gains before priors are normalised (1: neutral). */
typedef struct cut_prior_src {
    const char *name; /* "ncu" */
    void *ctx;
    /* Fills weight[CUT_MV_COUNT] for the state src of spec k. -1 with e on failure (the search then goes on without
     * profile priors for this state and says so in the trace). */
    int (*weights)(void *ctx, const cut_kspec *k, const char *src, double *weight, cut_err *e);
} cut_prior_src;

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

/* ---- the spec as a runner workload (kdata.c) ---- */

/* Fills w with the spec's buffers for the baseline's sizes: inputs (set 0 from each input's seed, set 1 from the seed
 * mixed with a constant: fresh values of the same distribution), outputs without references. The input contents are
 * malloc'd into w's data pointers: free with cut_kspec_work_free. 0, or -1 with a sentence. */
int cut_kspec_work(const cut_kspec *k, cut_kwork *w, cut_err *e);
void cut_kspec_work_free(cut_kwork *w);
/* The call for tunable values vals: launch from the spec's expressions, arguments in the spec's order (buffers:
 * inputs then outputs as in cut_kspec_work; scalars converted to their dtype). src and bin are left to the caller. */
int cut_kspec_call(const cut_kspec *k, const long long *vals, cut_kcall *c, cut_err *e);

/* ---- the optimizer ---- */

typedef struct cut_runner cut_runner;

#define CUT_OPT_COMPILE_CACHE "/tmp/kernel_compile_cache" /* seed 002's default compile cache */

typedef struct cut_opt_opts {
    const char *outdir;        /* per kernel: <outdir>/kernels/_<name>/ */
    int budget_builds;         /* variants built per kernel (the baseline not counted) */
    double min_pred_gain;      /* prune threshold */
    int resume;                /* continue <outdir>/kernels/_<name>/search_state.json */
    uint64_t seed;
    const char *compile_cache; /* COMPILE_CACHE_DIR; NULL: CUT_OPT_COMPILE_CACHE */
    int sm_major, sm_minor;    /* NVRTC target */
    int quiet;
    const cut_prior_src *priors; /* NULL: the generator's predicted gains alone */
    const int *gpus;             /* the device of each runner, recorded per variant (NULL: the runner's index) */
} cut_opt_opts;
void cut_opt_opts_default(cut_opt_opts *o);

#define CUT_OPT_MAX_MOVES 16

typedef struct cut_opt_summary {
    char name[CUT_KS_NAME];
    double baseline_ms, best_ms, speedup;
    int builds;             /* variants built so far (all sessions) */
    int measured, failed, transpositions;
    char best_id[32];
    int nbest_moves;
    char best_moves[CUT_OPT_MAX_MOVES][40]; /* the moves from the baseline to the best variant */
    char backend[16];
} cut_opt_summary;

/* Optimizes one kernel spec with the given runners (one per GPU, evaluated in parallel; emulation: any number) and
 * candidate generator. Writes <outdir>/kernels/_<name>/ and updates <outdir>/global_tactic_graph.json. Returns 0
 * (summary filled), -1 with e for errors that stop this kernel (spec, baseline failing its own check, disk). */
int cut_optimize_kernel(const cut_opt_opts *o, const cut_kspec *k, cut_runner **runners, int nrunners,
                        cut_cand_gen *gen, cut_opt_summary *out, cut_err *e);

/* Parses a search_state.json text into a graph (sources not read) and checks it is consistent: every edge's child a
 * node, every node's parent a node, the best node present. 0, or -1 with a sentence. Exposed for the fuzzer. */
int cut_opt_state_check(const char *json, size_t len, cut_err *e);

#endif
