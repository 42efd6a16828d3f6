/* cutune — the one tuning loop: tune(op, strategy, runner, journal) for every kind of work.
 *
 * A task is an op bound to one workload: a Conv2D case (cut_task_conv_new), a GEMM (cut_task_gemm_new) or a user
 * kernel spec's tunables (cut_task_kernel_new). It names the workload (its log's file name follows the seeds),
 * counts FLOPs, builds its schedule space, generates code, prepares the runner, measures and writes and reads its
 * record lines. cut_tune_task runs the loop any task rides on: the strategy proposes, code is generated and compiled
 * on all cores while the runner measures what has finished compiling, every trial is appended to the log (one
 * write, fsync'd per batch) and observed by the strategy, under a trial and time budget, resumed from the log.
 *
 * A task may keep a journal of its own instead of the record log (cut_journal: the optimizer's folder of variants,
 * search_state.json, events.jsonl and trace.md), count only some candidates against the budget (the optimizer's
 * budget is in builds), look at each binary before it is measured, and run in rounds (a strategy whose proposals
 * depend on every earlier observation, MCGS). The loop measures on one runner or several (one per GPU, in
 * parallel). */
#ifndef CUTUNE_TASK_H
#define CUTUNE_TASK_H

#include "cutune/codegen.h"
#include "cutune/common.h"
#include "cutune/measure.h"
#include "cutune/kspec.h"
#include "cutune/record.h"
#include "cutune/strategy.h"
#include "cutune/tune.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cut_task cut_task;

/* One finished candidate as a journal records it. */
typedef struct cut_task_outcome {
    int trial;                  /* its index in the run (the budget spent before it, counting only what counts) */
    const cut_sched *sched;
    const cut_kernel_src *ks;   /* src NULL when codegen failed */
    const cut_compiled *bin;    /* NULL: not compiled (codegen failed, or no NVRTC) */
    const cut_result *res;
    int runner;                 /* the runner that measured it (index into the loop's runners), -1: not measured */
} cut_task_outcome;

/* A task's own journal, in place of the record log <records_dir>/<name>.json. */
typedef struct cut_journal {
    /* Opens it: a fresh journal, or the one an earlier run left (resume), giving strategy s what it holds. Prepares the
     * runners r[0..nr) for the work (the task's prepare is not called). *done: the budget already spent. -1 with e. */
    int (*open)(cut_task *t, const cut_tune_cfg *cfg, cut_strategy *s, cut_runner **r, int nr, int *done, cut_err *e);
    /* A finished candidate, recorded before the strategy observes it. -1 with e (disk errors). */
    int (*record)(cut_task *t, const cut_task_outcome *o, cut_err *e);
    /* After each round of records and observations. -1 with e. */
    int (*round)(cut_task *t, cut_err *e);
} cut_journal;

struct cut_task {
    const char *op;        /* "conv2d", "gemm", "kernel" */
    char name[256];        /* the workload's name: its log is <records_dir>/<name>.json */
    char label[64];        /* the progress line's label ("case 3/7", the GEMM's name) */
    char what[64];         /* the workload in messages ("case 3", the GEMM's name) */
    char stem[64];         /* failed candidates' dumps: <kernel_dump_dir>/<stem>_trial<N>.cu ("case3", the name) */
    void *wl;              /* the op's workload, owned */
    double flops;          /* per launch; 0 when unknown (GFLOP/s are then not reported) */
    double bytes;          /* the least DRAM traffic of one launch (every input read once, every output written once);
                              bytes / time is the bandwidth a roofline compares with the GPU's; 0 when unknown */
    int batch;             /* candidates per round when the configuration does not say (conv 16, GEMM 32) */
    int has_energy;        /* 1: its records carry energy, so --objective energy|edp is possible */
    int baseline_once;     /* 1: the baseline is a search of its own (the vendor GEMM): run it in the first round only */
    int in_rounds;         /* 1: the next round is proposed only once the last is observed, and a round is recorded
                            * and observed in the order proposed (MCGS: each selection depends on every result) */
    const cut_journal *journal; /* NULL: the record log (load, record, resume from it) */
    /* The strategy of this task under cfg (cfg->strategy; seeds derived from cfg->seed and nold, the trials already in
     * the log). NULL with e when none can search it (no template applies, a space too large to enumerate). */
    cut_strategy *(*strategy)(const cut_task *t, const cut_tune_cfg *cfg, int nold, cut_err *e);
    /* Optional: gives the strategy what it may learn from before the first trial (conv: other workloads' logs). Returns
     * the prior trials given. */
    int (*priors)(const cut_task *t, cut_strategy *s, const cut_tune_cfg *cfg, const char *gpu, int nold);
    /* The kernel of a valid schedule (caller frees out with cut_kernel_src_free, also after an error). */
    int (*codegen)(const cut_task *t, const cut_sched *s, cut_kernel_src *out, cut_err *e);
    /* Optional: 0 if runner r can measure this kind of work, else -1 with a sentence (checked before the log opens). */
    int (*check_runner)(const cut_task *t, const cut_runner *r, cut_err *e);
    /* Optional: 0 when candidate s cost nothing of the budget (the optimizer: a known state, found before compiling);
     * NULL: every candidate counts. Asked once its codegen ran. */
    int (*counts)(const cut_task *t, const cut_sched *s);
    /* Optional: sees candidate s's binary after its compile and before it is measured; setting res->status to a
     * failure (an error in res->error) keeps it from being measured. -1 with e for setup errors (disk). */
    int (*compiled)(cut_task *t, const cut_sched *s, const cut_kernel_src *ks, const cut_compiled *bin,
                    cut_result *res, cut_err *e);
    /* Prepares the runner for the workload (inputs from seed, references). -1 with e for setup errors. NULL only with a
     * journal, whose open prepares the runners. */
    int (*prepare)(const cut_task *t, cut_runner *r, uint64_t seed, cut_err *e);
    /* Optional (NULL: cut_runner_measure): checks and times n candidates on the prepared runner; res[i] for c[i]. */
    int (*measure)(const cut_task *t, cut_runner *r, const cut_candidate *c, int n, cut_result *res, cut_err *e);
    /* The schedule as the JSON object its record line holds ({"tpl":...}) into buf: its length, or -1. */
    int (*sched_json)(const cut_task *t, const cut_sched *s, char *buf, size_t n);
    /* Appends the record line of tr (with '\n') to b (unused with a journal). */
    void (*record)(const cut_task *t, const cut_trial *tr, cut_buf *b);
    /* Loads the log at path (a missing file: none; unused with a journal): its trials into *out (caller frees), their count in *n, and in
     * *extra the lines that could not be read but still count as trials run. -1 with e when the log cannot be used. */
    int (*load)(const cut_task *t, const char *path, cut_trial **out, int *n, int *extra, cut_err *e);
    /* Optional: the op's baseline on the prepared runner, checked and timed with r->timing (cuDNN's fastest algorithm
     * for a conv, the best cuBLAS/cuBLASLt kernel for a GEMM, the spec's baseline for a user kernel): res and its name
     * ("IMPLICIT_PRECOMP_GEMM", "cublasLt algo=..", "baseline"). round: 0 first (an expensive search may run then
     * only). co: NVRTC options, NULL under emulation. -1 with e for setup errors. */
    int (*baseline)(const cut_task *t, cut_runner *r, const cut_compile_opts *co, int round, cut_result *res,
                    char *name, size_t n, cut_err *e);
    /* Optional: writes what goes beside the log before the first new trial (conv: seed 001's <name>.csv). */
    int (*start)(const cut_task *t, const cut_tune_cfg *cfg, cut_runner *r, cut_err *e);
    void (*destroy)(cut_task *t);
};

/* Frees the task (NULL is a no-op). */
void cut_task_free(cut_task *t);

/* The conv case case_idx (1-based) of c; label "case idx (pos/total)" from cfg. Caller frees with cut_task_free. */
cut_task *cut_task_conv_new(const cut_conv *c, int case_idx, const cut_tune_cfg *cfg);
/* The GEMM g over the templates of tpl_mask (bit i: registry index i; 0: every template that applies). */
cut_task *cut_task_gemm_new(const cut_gemm *g, int tpl_mask);
/* The tunables of kernel spec k (which must outlive the task): its log is kernel_<name>.json; on a GPU (cfg->use_nvrtc)
 * the reference run compiles with cfg->copts. Caller frees with cut_task_free. */
cut_task *cut_task_kernel_new(const cut_kspec *k, const cut_tune_cfg *cfg);

/* The strategy cfg->strategy over sp (taking ownership of sp), seeded with seed: evolve with the cost model (o:
 * its options, NULL the defaults; o->seed is replaced by seed), random, or exhaustive (at most
 * CUT_EXHAUSTIVE_MAX combinations). NULL with e when it cannot be made. */
#define CUT_EXHAUSTIVE_MAX 1000000LL
cut_strategy *cut_task_strategy(cut_space *sp, const cut_tune_cfg *cfg, const cut_search_opts *o, uint64_t seed,
                                cut_err *e);

/* ---- a user kernel's candidates on a runner (kcheck.c) ---- */

/* A kernel spec's second size set on the runners ("check_sizes", cutune/kspec.h): its work at those sizes with
 * references of its own, on which every candidate checked and timed at the spec's sizes is checked once more. */
typedef struct cut_kcheck {
    int on;                           /* the spec has check_sizes and the references there are captured */
    const cut_work *main;             /* borrowed: the work at the spec's sizes (with its references), which the
                                         runner gets back after each check */
    cut_work work;                    /* at check_sizes: inputs owned, outputs pointing at refs */
    void *refs[CUT_WORK_MAX_BUFS][2]; /* the references at check_sizes, owned */
} cut_kcheck;

/* For spec k (nothing to do, kc->on 0, when it gives no check_sizes): builds the work at check_sizes and captures
 * its references on r with ref, the call whose outputs are the references at the spec's sizes (the spec's reference
 * kernel or the baseline: its entry, source and cubin are used; its launch and arguments are resolved again at
 * check_sizes); then r gets main (which must outlive kc) back. A capture that fails is an error naming check_sizes.
 * kc must be zeroed or from an earlier init (freed first); free it with cut_kcheck_free (also on failure). */
int cut_kcheck_init(cut_kcheck *kc, const cut_kspec *k, cut_runner *r, const cut_call *ref, const cut_work *main,
                    cut_err *e);
void cut_kcheck_free(cut_kcheck *kc);

/* Checks and times n candidates of kernel spec k on r (which holds the work at the spec's sizes), one call each
 * (cut_runner_run_call): each candidate's tunables, read back from its source, give the call's launch and arguments
 * (a source that does not give them is the candidate's LAUNCH_ERROR). With kc on (NULL: none), every candidate that
 * passed is then checked at check_sizes through the same protocol under a timing policy of one launch (its time
 * discarded): wrong there is WRONG_OTHER_DATA, any other failure keeps its status, both with a message that begins "at
 * check_sizes (N=.., ...): ". A candidate whose tunables break a restriction at check_sizes, or whose launch does
 * not resolve there, keeps its result, with a note in its error field ("not checked at check_sizes (...): ...")
 * while its status stays OK. With kc on, r's on_result fires for none of them (the loop records the batch when this
 * returns: no result is final before its check). res[i] for c[i]. -1 with e only for the runner's setup errors. */
int cut_kspec_run_candidates(const cut_kspec *k, const cut_kcheck *kc, cut_runner *r, const cut_candidate *c, int n,
                             cut_result *res, cut_err *e);

/* Tunes task t with runner r under cfg (records_dir, trials, batch, seed, use_nvrtc + copts, limits, progress,
 * kernel_dump_dir, max_seconds, objective, use_prior). Resumes from an existing log (a log with >= cfg->trials
 * trials is finished: st->skipped). Returns -1 only for setup errors (no strategy, unwritable log, runner failure,
 * and with an energy objective a runner without an energy method or a failing meter). */
int cut_tune_task(const cut_tune_cfg *cfg, cut_task *t, cut_runner *r, cut_tune_stats *st, cut_err *e);
/* The same over runners r[0..nr) (one per GPU): each is checked and prepared, and every batch is split over them and
 * measured in parallel (one thread per runner; the energy objective measures on r[0]). */
int cut_tune_task_on(const cut_tune_cfg *cfg, cut_task *t, cut_runner **r, int nr, cut_tune_stats *st, cut_err *e);

/* The same loop one batch at a time, so that a caller (the task scheduler, cutune/tasksched.h) can interleave the
 * batches of several tasks on the same runners. cut_tune_begin opens what cut_tune_task_on opens (the log resumed,
 * the strategy with what the log holds, the runners checked and prepared, the task's start hook): 0 with *out set,
 * or -1 with e and *out NULL (st then holds what the failed start left). st (which must outlive the run) is kept up
 * to date after every step. A log already holding cfg->trials trials is finished (st->skipped): its steps do
 * nothing. */
typedef struct cut_tune_run cut_tune_run;
int cut_tune_begin(const cut_tune_cfg *cfg, cut_task *t, cut_runner **r, int nr, cut_tune_stats *st,
                   cut_tune_run **out, cut_err *e);
/* One batch of at most want candidates (and at most the run's batch, and what is left of cfg->trials): the runners
 * prepared for this task again (a no-op when they hold its work), the batch proposed, compiled, measured on every
 * runner, recorded and observed before it returns. Returns the budget it spent (0: the space is searched, or the
 * time budget cfg->max_seconds counted from cut_tune_begin is spent), or -1 with e for setup errors. */
int cut_tune_step(cut_tune_run *u, int want, cut_err *e);
/* 1 once the task can spend no more of the budget: its strategy proposed nothing (the space is searched) or its log
 * was finished at the start. */
int cut_tune_exhausted(const cut_tune_run *u);
/* The candidates of one batch (cfg->batch, else the task's). */
int cut_tune_batch(const cut_tune_run *u);
/* Closes the log, frees the strategy and u, fills in st's best GFLOP/s and wall time. NULL is a no-op. */
void cut_tune_end(cut_tune_run *u);

/* The final measurement of task t (prepared on r): the topk fastest valid of trials[0..n) regenerated (compiled with
 * co unless NULL: emulation), re-timed with cut_final_timing over `rounds` rounds, with t->baseline after them in
 * every round when with_baseline (vendor_ms / vendor_algo of out hold it). r->timing is restored afterwards. -1 for
 * setup errors (and with_baseline for a task without a baseline). */
int cut_final_task(cut_runner *r, const cut_compile_opts *co, const cut_task *t, const cut_trial *trials, int n,
                   int topk, int rounds, int with_baseline, cut_final *out, cut_err *e);

/* One line for people ("<what>: <baseline name> X ms, cutune Y ms (best of top K re-timed), speedup Z") and one JSON
 * object per line: {"op","workload","trials","cutune_ms","cutune_search_ms","baseline_ms","baseline","speedup",
 * "cutune_gflops" (null when the FLOPs are unknown),"bytes" (t->bytes),"cutune_gbs" (bytes / cutune_ms, GB/s; null
 * when unknown),"retimed","best_sched"}; what was not measured (no baseline, nothing re-timed) is null. */
void cut_final_task_print(FILE *f, const cut_task *t, const cut_final *fin);
void cut_final_task_json(FILE *f, const cut_task *t, int trials, const cut_final *fin);

#ifdef __cplusplus
}
#endif

#endif
