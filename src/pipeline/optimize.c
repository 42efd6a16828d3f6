/* cutune — the optimizer's driver: one kernel spec, a search graph (mcgs.c), a candidate generator, one runner per
 * GPU, and everything persisted under <outdir>/kernels/_<name>/ as seed 002 lays it out:
 *
 *   baseline/{control.json, result.json, kernel.cu, kernel.ptx, stdout.log, stderr.log, ref_<output>_<set>.bin}
 *   variants/<id>/{control.json, result.json, kernel.cu, kernel.ptx, candidate.diff, stdout.log, stderr.log}
 *   (a Triton kernel: kernel.py, and what the Triton worker leaves on a GPU: kernel.ptx, kernel.ttgir, kernel.sass,
 *   triton_meta.json)
 *   best -> variants/<id> (or baseline), trace.md, events.jsonl, search_state.json
 *   <outdir>/global_tactic_graph.json (moves and move-to-move transitions over every kernel)
 *
 * Crash safety: a variant is finished when its result.json exists. A round's variants are written with their results
 * pending (result.pending.json); the state file is rewritten after the round, and only then are the results
 * committed (renamed result.json). --resume loads the state, commits the results of the variants it knows and
 * deletes the other variant folders: a SIGKILL loses at most the round it interrupted, which the resumed search,
 * from the same state, makes again, so it makes the decisions of an uninterrupted search.
 * The baseline's outputs are kept as the references (ref_*.bin), so a resumed search does not run the baseline.
 *
 * The search is the MCGS strategy (cutune/mcgs.h) and the loop is the one every task rides on (cutune/task.h:
 * propose, build, compile on the pool, measure on every runner in parallel, record, observe, a budget in builds,
 * resume). This file makes the optimizer a task of that loop: the kernel spec's moves as the strategy's move space,
 * the build as the task's codegen, and the journal above as the task's journal; opt_journal.c keeps the files and
 * opt_build.c builds the variants and the baseline (optimize_int.h is shared between them). */
#include "pipeline/optimize_int.h"

#include "cutune/log.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cut_opt_opts_default(cut_opt_opts *o)
{
    memset(o, 0, sizeof *o);
    o->outdir = "out";
    o->budget_builds = 50;
    o->min_pred_gain = 0.02;
    o->seed = 1;
    o->sm_major = 9;
    o->sm_minor = 0;
}

/* ---- the round's variants and errors that cannot be returned where they happen ---- */

int cut_opt_stash(kopt *ko, const cut_err *e)
{
    if (!ko->has_pending) {
        ko->pending = *e;
        ko->has_pending = 1;
    }
    return -1;
}

/* The stashed error into e: -1, or 0 when there is none. */
static int take_pending(kopt *ko, cut_err *e)
{
    if (!ko->has_pending)
        return 0;
    *e = ko->pending;
    return -1;
}

vjob *cut_opt_vjob(kopt *ko, int ticket)
{
    for (int i = 0; i < ko->nvj; i++)
        if (ko->vj[i].ticket == ticket)
            return &ko->vj[i];
    return NULL;
}

/* ---- the kernel spec's moves, as the strategy sees them ---- */

/* The generator's proposals for node's state, told what the search knows around it (cut_opt_context). */
static int ms_propose(const cut_move_space *ms, int node, const char *src, cut_proposal *out, int cap, cut_err *e)
{
    const kopt *ko = ms->impl;
    cut_buf ctx;
    cut_buf_init(&ctx);
    if (ko->gen->wants_context) /* it reads the variants' results: only for a generator that uses it */
        cut_opt_context(ko, node, &ctx);
    const int np = cut_cand_gen_propose(ko->gen, ko->k, src, ctx.data, ko->scratch, out, cap, e);
    cut_buf_free(&ctx);
    return np < 0 ? cut_err_wrap(e, "candidate generator '%s'", ko->gen->name) : np;
}

/* The profile's weights (cut_opt_ncu_weights) times the caller's prior source's, each 1 where it has none. */
static int ms_weights(const cut_move_space *ms, int node, const char *src, double *weight, cut_err *e)
{
    const kopt *ko = ms->impl;
    const cut_prior_src *ps = ko->o->priors;
    cut_opt_ncu_weights(ko, node, weight);
    double w[CUT_MV_COUNT];
    if (ps && ps->weights(ps->ctx, ko->k, src, w, e) != 0)
        return -1;
    for (int m = 0; ps && m < CUT_MV_COUNT; m++)
        weight[m] *= w[m];
    return 0;
}

/* The state key the diff leads to from src (patched, tunables read, launch resolved), or 0 when any step fails (the
 * build then records why). */
static uint64_t ms_key(const cut_move_space *ms, const char *src, const char *diff)
{
    const kopt *ko = ms->impl;
    char *out = NULL;
    long long vals[CUT_KS_MAX_VARS];
    cut_ks_launch l;
    cut_err ignore;
    uint64_t key = 0;
    if (cut_patch_apply(src, diff, ko->scratch, &out, &ignore) == 0 &&
        cut_kstate_tunables(ko->k, out, vals, &ignore) == 0 && cut_kspec_resolve(ko->k, vals, &l, &ignore) == 0)
        key = cut_kstate_key(out, &l);
    free(out);
    return key;
}

/* ---- the optimizer as a task ---- */

static kopt *ko_of(const cut_task *t) { return t->wl; }

static cut_strategy *opt_strategy(const cut_task *t, const cut_tune_cfg *cfg, int nold, cut_err *e)
{
    (void)cfg, (void)nold, (void)e;
    return cut_strategy_mcgs_new(&ko_of(t)->s);
}

static int opt_codegen(const cut_task *t, const cut_sched *s, cut_kernel_src *out, cut_err *e)
{
    return cut_opt_build(ko_of(t), s->k[0], out, e);
}

static int opt_counts(const cut_task *t, const cut_sched *s)
{
    const vjob *j = cut_opt_vjob(ko_of(t), s->k[0]);
    return j && j->compiled;
}

static int opt_compiled(cut_task *t, const cut_sched *s, const cut_kernel_src *ks, const cut_compiled *bin,
                        cut_result *res, cut_err *e)
{
    (void)ks;
    return cut_opt_after_compile(ko_of(t), s->k[0], bin, res, e);
}

/* Each variant through the runner's kernel call: its tunables read back from its source give the arguments (as
 * when it was built). */
static int opt_measure(const cut_task *t, cut_runner *r, const cut_candidate *c, int n, cut_result *res, cut_err *e)
{
    const kopt *ko = ko_of(t);
    return cut_kspec_run_candidates(ko->k, &ko->check, r, c, n, res, e);
}

/* The journal's open: a search to resume (its state, references, and finished variants the state missed), or the
 * baseline run that starts one. Either prepares every runner. */
static int journal_open(cut_task *t, const cut_tune_cfg *cfg, cut_strategy *s, cut_runner **r, int nr, int *done,
                        cut_err *e)
{
    (void)cfg, (void)s, (void)r, (void)nr; /* the search and the runners are the kopt's */
    kopt *ko = ko_of(t);
    if (ko->have_state) {
        if (cut_opt_load_state(ko, e) != 0 || cut_opt_load_refs(ko, e) != 0 || cut_opt_reconcile(ko, e) != 0 ||
            cut_opt_save_state(ko, e) != 0)
            return -1;
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "event", "resume");
        cJSON_AddNumberToObject(ev, "builds", ko->builds);
        cut_opt_event(ko, ev);
        if (!ko->o->quiet)
            printf("  resumed: %d builds done, best %s (%.2fx)\n", ko->builds, ko->s.g.nodes[ko->s.best].id,
                   ko->s.g.nodes[ko->s.best].speedup);
    } else {
        if (cut_opt_run_baseline(ko, e) != 0 || cut_opt_save_state(ko, e) != 0)
            return -1;
        if (!ko->o->quiet && ko->k->ref_source)
            printf("  baseline %.4f ms, matches the reference kernel %s; variants are checked against it\n",
                   ko->s.baseline_ms, ko->k->ref_entry);
        else if (!ko->o->quiet)
            printf("  baseline %.4f ms\n", ko->s.baseline_ms);
    }
    cut_opt_ncu_start(ko); /* before the first expansion: the baseline's profile steers the root's moves */
    *done = ko->builds;
    return take_pending(ko, e);
}

static int journal_record(cut_task *t, const cut_task_outcome *o, cut_err *e)
{
    kopt *ko = ko_of(t);
    return take_pending(ko, e) != 0 ? -1 : cut_opt_finish(ko, o, e);
}

/* After a round: the state file, then the round's results committed (a SIGKILL from here on loses nothing), the
 * round's variants forgotten. */
static int journal_round(cut_task *t, cut_err *e)
{
    kopt *ko = ko_of(t);
    const int rc = take_pending(ko, e) != 0 || cut_opt_save_state(ko, e) != 0 || cut_opt_commit_round(ko, e) != 0;
    ko->nvj = 0;
    if (rc == 0)
        cut_opt_ncu_round(ko);
    return rc || take_pending(ko, e) != 0 ? -1 : 0;
}

static const cut_journal opt_journal = {journal_open, journal_record, journal_round};

/* The task of ko: no record log, no prepare (the journal's open runs the baseline or loads its references). */
static void opt_task(kopt *ko, cut_task *t)
{
    memset(t, 0, sizeof *t);
    t->op = "kernel";
    t->wl = ko;
    snprintf(t->name, sizeof t->name, "kernel_%.200s", ko->k->name);
    snprintf(t->label, sizeof t->label, "%.60s", ko->k->name);
    snprintf(t->what, sizeof t->what, "kernel %.50s", ko->k->name);
    snprintf(t->stem, sizeof t->stem, "kernel_%.50s", ko->k->name);
    t->batch = ko->nr < MAX_ROUND ? ko->nr : MAX_ROUND;
    t->in_rounds = 1;
    t->journal = &opt_journal;
    t->strategy = opt_strategy;
    t->codegen = opt_codegen;
    t->counts = opt_counts;
    t->compiled = opt_compiled;
    t->measure = opt_measure;
}

/* ---- entry ---- */

static void summarise(const kopt *ko, cut_opt_summary *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", ko->k->name);
    const cut_node *b = &ko->s.g.nodes[ko->s.best];
    s->baseline_ms = ko->s.baseline_ms;
    s->best_ms = b->ms;
    s->speedup = b->speedup;
    s->builds = ko->builds;
    s->builds_to_best = ko->builds_to_best;
    s->measured = ko->s.measured;
    s->failed = ko->s.failed;
    s->transpositions = ko->s.transpositions;
    snprintf(s->best_id, sizeof s->best_id, "%s", b->id);
    int chain[CUT_OPT_MAX_MOVES], n = 0;
    for (int i = ko->s.best; i > 0 && n < CUT_OPT_MAX_MOVES; i = ko->s.parent[i])
        chain[n++] = i;
    for (int i = n - 1; i >= 0; i--)
        snprintf(s->best_moves[s->nbest_moves++], sizeof s->best_moves[0], "%s",
                 cut_move_name((cut_move)ko->s.via_move[chain[i]]));
}

/* What the runners' prepares cost over the search, into the "done" event: works sent to a worker (and their bytes),
 * works selected as held (docs/triton_worker.md, "Held works"). A build checked at check_sizes switches the work
 * twice. */
static void prep_costs(const kopt *ko, cJSON *ev)
{
    cut_prep_stats t = {0, 0, 0};
    for (int i = 0; i < ko->nr; i++) {
        t.sent += ko->runners[i]->prep.sent;
        t.held += ko->runners[i]->prep.held;
        t.bytes += ko->runners[i]->prep.bytes;
    }
    cJSON_AddNumberToObject(ev, "prepares_sent", (double)t.sent);
    cJSON_AddNumberToObject(ev, "prepares_held", (double)t.held);
    cJSON_AddNumberToObject(ev, "prepare_bytes", t.bytes);
    cut_log(CUT_LOG_DEBUG, "%s: %d builds, %ld prepares sent (%.1f MiB), %ld selected as held\n", ko->k->name,
            ko->builds, t.sent, t.bytes / 1048576.0, t.held);
}

void cut_opt_kopt_free(kopt *ko)
{
    cut_mcgs_search_free(&ko->s);
    free(ko->vj);
    for (int b = 0; b < CUT_WORK_MAX_BUFS; b++)
        for (int s = 0; s < 2; s++) {
            free(ko->refs[b][s]);
            if (b < ko->work.nbufs && ko->work.bufs[b].is_output)
                ko->work.bufs[b].data[s] = NULL;
        }
    cut_kspec_work_free(&ko->work);
    cut_kcheck_free(&ko->check);
    cut_opt_ncu_free(ko);
    if (ko->events)
        fclose(ko->events);
    if (ko->trace)
        fclose(ko->trace);
}

int cut_optimize_kernel(const cut_opt_opts *o, const cut_kspec *k, cut_runner **runners, int nrunners,
                        cut_cand_gen *gen, cut_opt_summary *out, cut_err *e)
{
    if (!runners || nrunners < 1 || !gen)
        return cut_err_set(e, "no runner to measure %s on, or no candidate generator", k->name);
    kopt ko;
    memset(&ko, 0, sizeof ko);
    ko.o = o;
    ko.k = k;
    ko.runners = runners;
    ko.nr = nrunners;
    ko.gen = gen;
    ko.ms = (cut_move_space){.impl = &ko, .propose = ms_propose, .key = ms_key,
                             .weights = o->priors || o->ncu_every > 0 ? ms_weights : NULL};
    cut_mcgs_search_init(&ko.s, &ko.ms, o->seed, o->min_pred_gain, cut_opt_note, &ko);
    cut_compile_opts_default(&ko.copts);
    ko.copts.sm_major = o->sm_major;
    ko.copts.sm_minor = o->sm_minor;
    if (o->compile_cache)
        snprintf(ko.cache, sizeof ko.cache, "%s", o->compile_cache);
    else if (cut_default_cache_dir(ko.cache, sizeof ko.cache, e) != 0)
        return -1;
    ko.copts.cache_dir = ko.cache;
    ko.copts.want_ptx = 1;
    snprintf(ko.kdir, sizeof ko.kdir, "%s/kernels/_%s", o->outdir, k->name);
    snprintf(ko.scratch, sizeof ko.scratch, "%s/.scratch", ko.kdir);
    char state[1200];
    snprintf(state, sizeof state, "%s/search_state.json", ko.kdir);
    ko.have_state = cut_path_exists(state);
    int rc = -1;
    if (ko.have_state && !o->resume) {
        cut_err_set(e, "%s holds a search already: pass --resume to continue it, or remove the folder", ko.kdir);
        goto out;
    }
    if (cut_mkdirs(ko.scratch, e) != 0 || cut_kspec_work(k, &ko.work, e) != 0)
        goto out;
    cut_opt_load_global(&ko);
    if (cut_opt_open_logs(&ko, !ko.have_state, e) != 0)
        goto out;
    /* the one loop: a round is as many variants as runners, built and compiled together, measured in parallel (the
     * k-th on runner k), recorded and observed in the order selected; the budget counts builds */
    cut_tune_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.trials = o->budget_builds;
    cfg.batch = ko.nr < MAX_ROUND ? ko.nr : MAX_ROUND;
    cfg.seed = o->seed;
    /* CUDA: NVRTC also under emulation (the PTX finds transpositions, NVRTC's verdict is a variant's); a Triton
     * variant is compiled by Triton in the worker that measures it */
    cfg.use_nvrtc = k->lang == CUT_KS_CUDA;
    cfg.copts = ko.copts;
    cut_task t;
    opt_task(&ko, &t);
    cut_tune_stats st;
    if (cut_tune_task_on(&cfg, &t, runners, ko.nr, &st, e) != 0 || take_pending(&ko, e) != 0)
        goto out;
    summarise(&ko, out);
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "done");
    cJSON_AddNumberToObject(ev, "builds", ko.builds);
    cJSON_AddStringToObject(ev, "best", out->best_id);
    cJSON_AddNumberToObject(ev, "speedup", out->speedup);
    prep_costs(&ko, ev);
    cut_opt_event(&ko, ev);
    if (ko.trace)
        fprintf(ko.trace, "\nBest: %s, %.4f ms, %.2fx the baseline (%.4f ms) after %d builds.\n", out->best_id,
                out->best_ms, out->speedup, out->baseline_ms, out->builds);
    rc = 0;
out:
    cut_opt_kopt_free(&ko);
    return rc;
}
