/* cutune — the optimizer's internals, shared by its files (internal): the task of the one loop (optimize.c), the journal
 * (opt_journal.c: search_state.json, events.jsonl, trace.md, the best link, global_tactic_graph.json) and the variants
 * and baseline (opt_build.c: materialise, patch, the compile's outputs, result.json). */
#ifndef CUTUNE_PIPELINE_OPTIMIZE_INT_H
#define CUTUNE_PIPELINE_OPTIMIZE_INT_H

#include "cutune/measure.h"
#include "cutune/optimize.h"
#include "cutune/task.h"
#include "cutune/util.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- shared types ---- */

#define STATE_FORMAT 1
#define MAX_ROUND 16 /* variants built, compiled and measured together (one per runner) */

/* One variant from its build to its record (a ticket of the MCGS strategy): what the search does not keep. */
typedef struct vjob {
    int ticket;        /* the strategy's ticket: the variant's number */
    char id[32], dir[1200];
    int runnable;      /* built, not a transposition: to be compiled and measured */
    int compiled;      /* counted against the budget */
    cut_ks_launch launch;
    char status_name[32]; /* set when it ends before its measurement (patch_error, invalid, compile_error,
                           * transposition); empty: the runner's status */
    char error[512];
    double ms;         /* measured median, -1 none */
    char sass[200];    /* why the variant has no kernel.sass ("" when it has one) */
} vjob;

/* The optimizer of one kernel: options, runners, generator, the MCGS search with its move space, the budget spent,
 * references and the open logs. Made by cut_optimize_kernel (or cut_opt_state_check), freed by cut_opt_kopt_free.
 * One thread drives it; only the loop's measurement starts threads, each on its own runner. */
/* Writes dir/kernel.sass, the cubin of bin disassembled by cuobjdump -sass ($CUDA_HOME/bin, /usr/local/cuda/bin,
 * else PATH; nvdisasm when there is no cuobjdump), through a temporary cubin in scratch. why gets "" or the reason
 * there is none (no tool, the tool failed): a variant's result says it, the search goes on either way. */
void cut_opt_write_sass(const char *dir, const char *scratch, const cut_compiled *bin, char *why, size_t n);

typedef struct opt_profile opt_profile; /* opt_ncu.c */

typedef struct kopt {
    const cut_opt_opts *o;
    const cut_kspec *k;
    cut_runner **runners;
    int nr;
    cut_cand_gen *gen;
    char kdir[1024], scratch[1100];
    char cache[1024];   /* the compile cache folder (o->compile_cache, else the per-user one) */
    cut_mcgs_search s;
    cut_move_space ms;
    int builds;
    int builds_to_best; /* builds when the best was found (with several runners: by the end of its round) */
    cut_work work;
    void *refs[CUT_WORK_MAX_BUFS][2];
    cut_kcheck check;   /* the spec's check_sizes: their work and references (captured again on --resume) */
    cut_compile_opts copts;
    FILE *events, *trace;
    int no_disk;     /* cut_opt_state_check: sources are not read */
    int have_state;  /* a search_state.json to resume */
    vjob *vj;        /* this round's variants */
    int nvj, vjcap;
    opt_profile *prof; /* Nsight Compute profiles of nodes (opt_ncu.c) */
    int nprof, profcap;
    int ncu_off;       /* a profile failed: no more this search */
    int ncu_last;      /* builds when the incumbent was last considered for a profile; -1: never */
    cut_err pending; /* an error met where none can be returned (a note, a build's disk error): ends the run */
    int has_pending;
} kopt;

/* ---- optimize.c: the optimizer as a task of the one loop ---- */

/* Frees what ko owns: the search, the references, the work, the round's variants, the open logs. */
void cut_opt_kopt_free(kopt *ko);
/* Keeps the first error met where it cannot be returned; the journal's next record or round returns it. Returns -1. */
int cut_opt_stash(kopt *ko, const cut_err *e);
/* The round's variant of ticket, or NULL. */
vjob *cut_opt_vjob(kopt *ko, int ticket);
/* The note hook of the search: what it does goes to the trace, events.jsonl, the console, the global tactic graph and
 * the best link. */
int cut_opt_note(void *ctx, const cut_mcgs_search *s, const cut_mcgs_note *n, cut_err *e);

/* A variant's result until the round that built it is in the state file (then renamed result.json). */
#define CUT_OPT_PENDING "result.pending.json"

/* ---- opt_ncu.c: Nsight Compute priors ---- */

/* After the baseline run or a resume: profiles on disk read back, the incumbent profiled when due. */
void cut_opt_ncu_start(kopt *ko);
/* After a round: the incumbent profiled when --ncu-every builds passed since it was last considered. */
void cut_opt_ncu_round(kopt *ko);
/* Move weights for expanding node (its profile's, else its nearest profiled ancestor's): 1, or 0 with every weight 1
 * when no profile stands for it. */
int cut_opt_ncu_weights(const kopt *ko, int node, double *weight);
/* The summary of the profile standing for node, one paragraph for the LLM's prompt (nothing without one). */
void cut_opt_profile_context(const kopt *ko, int node, cut_buf *b);
void cut_opt_ncu_free(kopt *ko);

/* ---- opt_journal.c: files under <outdir>/kernels/_<name>/ and the global tactic graph ---- */

/* Writes j to path atomically and deletes j (also on failure). 0, or -1 with e. */
int cut_opt_write_json(const char *path, cJSON *j, cut_err *e);
/* Writes text (NULL: empty) to dir/name atomically. 0, or -1 with e. */
int cut_opt_write_text(const char *dir, const char *name, const char *text, cut_err *e);
/* v as 16 hex digits into buf (17 bytes). */
void cut_opt_hex64(uint64_t v, char *buf);
/* Appends j (with the time added) as one line of events.jsonl, fsync'd; deletes j. Nothing written without the log. */
void cut_opt_event(kopt *ko, cJSON *j);
/* Adds the per-key history of every kernel in <outdir>/global_tactic_graph.json to the search's history (missing file: none). */
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
/* After cut_opt_load_state: commits the results of the variants the state knows (a kill between the state save and
 * the commit), takes in finished variants the state does not know (folders of an older cutune, which wrote
 * result.json before the state) and removes unfinished variant folders: a result still pending belongs to the round
 * the kill interrupted, which the resumed search makes again, variant for variant. A variant that cannot be taken in
 * is a warning; returns 0. */
int cut_opt_reconcile(kopt *ko, cut_err *e);
/* After the state file holds the round: each of the round's pending results becomes its result.json. */
int cut_opt_commit_round(kopt *ko, cut_err *e);

/* ---- opt_context.c: what the search knows of a state, for the candidate generator ---- */

/* Appends to b the search's view of node: its time and speedup, its parent's, the path of moves from the baseline,
 * the moves tried from it and from its parent with what came of each (the most recent, capped), each move's tries
 * and mean gain so far, then the profile summary (cut_opt_profile_context). A few KB at most, whatever the graph. */
void cut_opt_context(const kopt *ko, int node, cut_buf *b);

/* ---- opt_build.c: one variant from ticket to result.json, and the baseline ---- */

/* A variant's source file: kernel.py for a Triton spec, else kernel.cu. */
const char *cut_opt_src_name(const cut_kspec *k);
/* The task's codegen: materialises, diffs, patches and writes ticket's variant (variants/<id>/), tells the search the
 * state built and fills ks when it is to be compiled (0). -1 when it is not (its status in its vjob; a disk error is
 * stashed). */
int cut_opt_build(kopt *ko, int ticket, cut_kernel_src *ks, cut_err *e);
/* The task's compiled hook: stdout.log, kernel.ptx, a transposition by PTX; res set when it is not to be measured. */
int cut_opt_after_compile(kopt *ko, int ticket, const cut_compiled *bin, cut_result *res, cut_err *e);
/* The journal's record: stderr.log and result.json (the variant is finished from then on). */
int cut_opt_finish(kopt *ko, const cut_task_outcome *o, cut_err *e);
/* A run's outcome into r: status, error, median/min/max ms, repeats, max_abs_err. */
void cut_opt_run_result(cJSON *r, const cut_result *res);
/* Resume: reads the baseline's reference outputs (owned by ko->refs, freed by cut_opt_kopt_free), prepares every
 * runner with them and, with check_sizes, captures the references there again (ko->check). 0, or -1 with e. */
int cut_opt_load_refs(kopt *ko, cut_err *e);
/* Builds and runs the baseline: writes baseline/, captures and saves the references (owned by ko->refs), prepares
 * the runners, captures the references at check_sizes (ko->check, not saved), checks the baseline against them
 * (at check_sizes too) and adds the root node. 0, or -1 with e. */
int cut_opt_run_baseline(kopt *ko, cut_err *e);

#endif
