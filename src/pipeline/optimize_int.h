/* cutune — the optimizer's internals, shared by its three files (internal): the search loop (optimize.c), the journal
 * (opt_journal.c: search_state.json, events.jsonl, trace.md, the best link, global_tactic_graph.json) and the variants
 * and baseline (opt_build.c: materialise, patch, compile, measure). One thread drives a kopt; only
 * cut_opt_measure_jobs starts threads, each touching its own job and runner. */
#ifndef CUTUNE_PIPELINE_OPTIMIZE_INT_H
#define CUTUNE_PIPELINE_OPTIMIZE_INT_H

#include "cutune/measure.h"
#include "cutune/optimize.h"
#include "cutune/util.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- shared types ---- */

#define MAX_PATH_LEN 64
#define MAX_PROPOSALS 96
/* Observed gain recorded for a move whose variant failed (fault, hang, wrong result, no compile): all of the parent's
 * speed lost. One failure takes a rule's predicted gain of 0.05 to (2 * 0.05 - 1) / 3 = -0.30, below RELAX_FLOOR, so
 * a rewrite that faults is not built again on every other state once the threshold relaxes (the H200 run of
 * 2026-11-23 spent 20 of layernorm's 50 builds on one faulting rewrite with -0.25 and no floor). */
#define FAIL_GAIN (-1.0)
#define RELAX_STEP 0.05    /* how far the prune threshold drops when every open move was tried */
#define RELAX_FLOOR (-0.25) /* never lower: a move predicted to lose over 25% is not built to spend the budget */
#define STATE_FORMAT 1

/* History of one move key ("BLOCK -> 256", "fast math intrinsics"): observed relative gains. */
typedef struct hist {
    char key[96];
    cut_move move;
    int n;
    double sum;
} hist;

/* The optimizer of one kernel: options, runners, generator, the graph with its per-node data, counters, references,
 * history and the open logs. Made by cut_optimize_kernel (or cut_opt_state_check), freed by cut_opt_kopt_free. */
typedef struct kopt {
    const cut_opt_opts *o;
    const cut_kspec *k;
    cut_runner **runners;
    int nr;
    cut_cand_gen *gen;
    char kdir[1024], scratch[1100];
    cut_mcgs g;
    /* per node, parallel to g.nodes */
    char **src;
    int *parent;
    char (*via)[160];
    int *via_move;
    int cap;
    int builds, measured, failed, transpositions, next_id;
    double baseline_ms;
    int best;
    cut_kwork work;
    void *refs[CUT_KW_MAX_BUFS][2];
    double threshold; /* prune threshold: --min-pred-gain, lowered when nothing above it is left */
    int nhist;
    hist hist[512];
    cut_compile_opts copts;
    FILE *events, *trace;
    int no_disk; /* cut_opt_state_check: sources are not read */
} kopt;

/* One variant of a round, from its selected edge to its result (cut_opt_build .. cut_opt_finish_job); what it
 * allocates is freed by cut_opt_job_free. */
typedef struct job {
    int parent, edge;
    int path[MAX_PATH_LEN], plen;
    char id[32], dir[1200];
    char *diff, *src;
    cut_kcall call;
    cut_compiled bin;
    int runnable;      /* built, not a transposition: to be measured */
    int compiled;      /* counted against the budget */
    cut_ks_launch launch;
    int same_as;       /* transposition: the existing node */
    cut_status status;
    char status_name[32];
    char error[512];
    cut_result res;
    int runner;
    uint64_t key, ptx;
} job;

/* The outcome of one finished variant, from a live job or from disk on resume. */
typedef struct outcome {
    char id[32];
    int parent;
    char label[160];
    int path[MAX_PATH_LEN], plen;
    char status[32];
    char error[512];
    double ms;
    uint64_t key, ptx;
    int same_as;
    char *src; /* owned by the node afterwards */
} outcome;

/* ---- optimize.c: the graph, the history of moves, the search loop ---- */

/* Adds node id to the graph (the per-node arrays of ko grown as needed; ko->g.nodes may move). Takes src, which the
 * node owns from then on (freed by cut_opt_kopt_free). Returns the node's index. */
int cut_opt_add_node(kopt *ko, const char *id, char *src, int parent, int move, const char *via);
/* The history key of a proposal label into key (n bytes): a tunable change by its target, a rewrite by its label. */
void cut_opt_hist_key(const char *label, char *key, size_t n);
/* The history of (m, key), created empty when new; NULL when ko->hist is full. Points into ko (nothing allocated). */
hist *cut_opt_hist_get(kopt *ko, cut_move m, const char *key);
/* Expands node n: the generator's proposals, weighted by the priors and the history, become its edges (owned by the
 * graph, freed by cut_mcgs_free). 0, or -1 with e when the generator fails. */
int cut_opt_gen_edges(kopt *ko, int n, cut_err *e);
/* Puts a finished variant into the graph (node or transposition, backup, history, best link; live: also the global
 * tactic graph, trace, event and console line). Takes oc->src (the new node owns it, else it is freed) and sets it
 * NULL. 0, or -1 with e (an unknown move, the best link). */
int cut_opt_apply_outcome(kopt *ko, outcome *oc, int live, cut_err *e);
/* Frees what ko owns: node sources, per-node arrays, the graph, the references, the work, the open logs. */
void cut_opt_kopt_free(kopt *ko);

/* ---- opt_journal.c: files under <outdir>/kernels/_<name>/ and the global tactic graph ---- */

/* Writes j to path atomically and deletes j (also on failure). 0, or -1 with e. */
int cut_opt_write_json(const char *path, cJSON *j, cut_err *e);
/* Writes text (NULL: empty) to dir/name atomically. 0, or -1 with e. */
int cut_opt_write_text(const char *dir, const char *name, const char *text, cut_err *e);
/* v as 16 hex digits into buf (17 bytes). */
void cut_opt_hex64(uint64_t v, char *buf);
/* Appends j (with the time added) as one line of events.jsonl, fsync'd; deletes j. Nothing written without the log. */
void cut_opt_event(kopt *ko, cJSON *j);
/* Adds the per-key history of every kernel in <outdir>/global_tactic_graph.json to ko->hist (missing file: none). */
void cut_opt_load_global(kopt *ko);
/* Adds one variant's outcome to <outdir>/global_tactic_graph.json; a write failure is a warning on stderr (unless
 * quiet), with e set. */
void cut_opt_update_global(kopt *ko, int prev_move, cut_move m, const char *label, double gain, int ok,
                           cut_err *e);
/* Points <kdir>/best at the best node's folder (atomic rename of a symlink). 0, or -1 with e. */
int cut_opt_update_best_link(kopt *ko, cut_err *e);
/* Opens events.jsonl and trace.md for appending into ko (closed by cut_opt_kopt_free) and starts the trace (fresh:
 * its title, else a resume mark). 0, or -1 with e. */
int cut_opt_open_logs(kopt *ko, int fresh, cut_err *e);
/* Writes the graph, counters and rng to search_state.json atomically. 0, or -1 with e. */
int cut_opt_save_state(kopt *ko, cut_err *e);
/* Reads search_state.json into ko's empty graph; each node's kernel.cu is read into its source (owned by the node).
 * 0, or -1 with e. */
int cut_opt_load_state(kopt *ko, cut_err *e);
/* After cut_opt_load_state: takes in finished variants the state does not know and removes unfinished variant
 * folders. A variant that cannot be taken in is a warning; returns 0. */
int cut_opt_reconcile(kopt *ko, cut_err *e);

/* ---- opt_build.c: one variant from edge to result.json, and the baseline ---- */

/* Materialises, diffs, patches and writes job j (variants/<id>/) for its parent's edge; j->diff and j->src are
 * allocated into j (freed by cut_opt_job_free). A failure of the variant is its status; -1 with e only for disk
 * errors. */
int cut_opt_build(kopt *ko, job *j, cut_err *e);
/* Compiles the round's runnable jobs together on the compile pool; each job owns its binary afterwards (freed by
 * cut_opt_job_free). -1 with e for setup or disk errors. */
int cut_opt_compile_jobs(kopt *ko, job *jobs, int n, cut_err *e);
/* Measures the runnable jobs in parallel, the k-th on runner k (one thread each). -1 with e when a runner fails. */
int cut_opt_measure_jobs(kopt *ko, job *jobs, int n, cut_err *e);
/* Writes job j's stderr.log and result.json (the variant is finished from then on) and applies it to the graph; the
 * node takes j->src. 0, or -1 with e. */
int cut_opt_finish_job(kopt *ko, job *j, cut_err *e);
/* Frees what job j owns (diff, source, binary). */
void cut_opt_job_free(job *j);
/* Resume: reads the baseline's reference outputs (owned by ko->refs, freed by cut_opt_kopt_free) and prepares every
 * runner with them. 0, or -1 with e. */
int cut_opt_load_refs(kopt *ko, cut_err *e);
/* Builds and runs the baseline: writes baseline/, captures and saves the references (owned by ko->refs), prepares
 * the runners, checks the baseline against them and adds the root node. 0, or -1 with e. */
int cut_opt_run_baseline(kopt *ko, cut_err *e);

#endif
