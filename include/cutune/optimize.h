/* cutune — the MCGS kernel optimizer (issue 7, seed 002): the driver behind `cutune optimize` and its journal
 * (search_state.json, events.jsonl, trace.md, variants/). States are in cutune/kstate.h, the graph in
 * cutune/mcgs.h. */
#ifndef CUTUNE_OPTIMIZE_H
#define CUTUNE_OPTIMIZE_H

#include "cutune/common.h"
#include "cutune/kspec.h"
#include "cutune/kstate.h"
#include "cutune/work.h"
#include "cutune/mcgs.h"
#include "cutune/measure.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the optimizer ---- */

typedef struct cut_runner cut_runner;


typedef struct cut_opt_opts {
    const char *outdir;        /* per kernel: <outdir>/kernels/_<name>/ */
    int budget_builds;         /* variants built per kernel (the baseline not counted) */
    double min_pred_gain;      /* prune threshold */
    int resume;                /* continue <outdir>/kernels/_<name>/search_state.json */
    uint64_t seed;
    const char *compile_cache; /* COMPILE_CACHE_DIR; NULL: the per-user cut_default_cache_dir (seed 002's shared
                                  /tmp/kernel_compile_cache would let another user plant code) */
    int sm_major, sm_minor;    /* NVRTC target */
    int quiet;
    const cut_prior_src *priors; /* NULL: the generator's predicted gains alone */
    const int *gpus;             /* the device of each runner, recorded per variant (NULL: the runner's index) */
    /* Nsight Compute priors: every ncu_every builds (0: never) the incumbent is profiled by running
     * `<ncu_tool> ... <self_exe> optimize --worker <variant>/control.json --profile-run --backend <backend>
     * --gpus <gpu>` (opt_ncu.c) */
    int ncu_every;
    const char *ncu_tool;        /* the profiler (NULL: no profiles) */
    const char *self_exe;        /* the cutune CLI */
    const char *backend;         /* the worker's --backend: "cuda" or "emu" */
    double ncu_timeout_s;        /* one profile, the profiled program included (0: 300) */
} cut_opt_opts;
void cut_opt_opts_default(cut_opt_opts *o);

#define CUT_OPT_MAX_MOVES 16

typedef struct cut_opt_summary {
    char name[CUT_KS_NAME];
    double baseline_ms, best_ms, speedup;
    int builds;             /* variants built so far (all sessions) */
    int builds_to_best;     /* builds made when the best was found (0: the baseline is the best) */
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

/* Seed 002's worker: runs the variant of control (a variants/<id>/control.json or baseline/control.json of a search
 * folder, beside its kernel.cu, below the search's spec.json) on r, which stands for GPU gpu: compiled with NVRTC,
 * checked against the search's references and timed as the search measures a variant, res written to
 * runner_result.json in its folder. profile_only: one launch on fresh inputs, nothing checked, timed or written (for
 * a profiler wrapping the process). 0 with res filled (its status may be a failure), or -1 with a sentence (no spec,
 * a source whose tunables break the spec, a runner that cannot be set up, a disk error). */
int cut_opt_worker(const cut_opt_opts *o, const char *control, cut_runner *r, int gpu, int profile_only,
                   cut_result *res, cut_err *e);
/* The language of the spec above control (cut_opt_worker's search folder): which runner the worker needs. 0, or -1
 * with a sentence. */
int cut_opt_worker_lang(const char *control, cut_ks_lang *lang, cut_err *e);

/* Parses a search_state.json text into a graph (sources not read) and checks it is consistent: every edge's child a
 * node, every node's parent a node, the best node present. 0, or -1 with a sentence. Exposed for the fuzzer. */
int cut_opt_state_check(const char *json, size_t len, cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
