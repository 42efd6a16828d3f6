/* cutune — the optimizer's driver: one kernel spec, a search graph (mcgs.c), a candidate generator, one runner per
 * GPU, and everything persisted under <outdir>/kernels/_<name>/ as seed 002 lays it out:
 *
 *   baseline/{control.json, result.json, kernel.cu, kernel.ptx, stdout.log, stderr.log, ref_<output>_<set>.bin}
 *   variants/<id>/{control.json, result.json, kernel.cu, kernel.ptx, candidate.diff, stdout.log, stderr.log}
 *   best -> variants/<id> (or baseline), trace.md, events.jsonl, search_state.json
 *   <outdir>/global_tactic_graph.json (moves and move-to-move transitions over every kernel)
 *
 * Crash safety: a variant is finished when its result.json exists (written atomically, last). The state file is
 * rewritten after every round; --resume loads it, then takes in every finished variant the state does not know yet
 * and deletes unfinished variant folders, so a SIGKILL loses no finished variant and the graph stays consistent.
 * The baseline's outputs are kept as the references (ref_*.bin), so a resumed search does not run the baseline.
 *
 * This file is the search loop (selection, expansion, backup); opt_journal.c keeps the files above and
 * opt_build.c builds and measures the variants and the baseline (optimize_int.h is shared between them). */
#include "pipeline/optimize_int.h"

#include <cjson/cJSON.h>
#include <math.h>
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

/* ---- the graph's nodes ---- */

static void ensure_cap(kopt *ko)
{
    if (ko->g.nnodes < ko->cap)
        return;
    ko->cap = ko->cap ? 2 * ko->cap : 64;
    ko->src = cut_xrealloc(ko->src, sizeof *ko->src * (size_t)ko->cap);
    ko->parent = cut_xrealloc(ko->parent, sizeof *ko->parent * (size_t)ko->cap);
    ko->via = cut_xrealloc(ko->via, sizeof *ko->via * (size_t)ko->cap);
    ko->via_move = cut_xrealloc(ko->via_move, sizeof *ko->via_move * (size_t)ko->cap);
}

int cut_opt_add_node(kopt *ko, const char *id, char *src, int parent, int move, const char *via)
{
    ensure_cap(ko);
    const int n = cut_mcgs_add_node(&ko->g, id);
    ko->src[n] = src;
    ko->parent[n] = parent;
    ko->via_move[n] = move;
    snprintf(ko->via[n], sizeof ko->via[n], "%s", via ? via : "");
    return n;
}

/* ---- history of moves (for predicted gains; the global tactic graph is in opt_journal.c) ---- */

/* The history key of a proposal: a tunable change keyed by its target ("BLOCK -> 256"), a rewrite by its label. */
void cut_opt_hist_key(const char *label, char *key, size_t n)
{
    const char *arrow = strstr(label, " -> ");
    const char *sp = strchr(label, ' ');
    if (arrow && sp && sp < arrow)
        snprintf(key, n, "%.*s%s", (int)(sp - label), label, arrow);
    else
        snprintf(key, n, "%s", label);
}

hist *cut_opt_hist_get(kopt *ko, cut_move m, const char *key)
{
    for (int i = 0; i < ko->nhist; i++)
        if (ko->hist[i].move == m && strcmp(ko->hist[i].key, key) == 0)
            return &ko->hist[i];
    if (ko->nhist == (int)CUT_ARRAY_LEN(ko->hist))
        return NULL;
    hist *h = &ko->hist[ko->nhist++];
    memset(h, 0, sizeof *h);
    h->move = m;
    snprintf(h->key, sizeof h->key, "%s", key);
    return h;
}

static void hist_add(kopt *ko, cut_move m, const char *label, double gain)
{
    char key[96];
    cut_opt_hist_key(label, key, sizeof key);
    hist *h = cut_opt_hist_get(ko, m, key);
    if (h) {
        h->n++;
        h->sum += gain;
    }
}

/* ---- edges of a node ---- */

/* The state key the diff leads to from node n (patched, tunables read, launch resolved), or 0 when any step fails
 * (the build then records why). */
static uint64_t proposal_key(kopt *ko, int n, const char *diff)
{
    char *src = NULL;
    long long vals[CUT_KS_MAX_VARS];
    cut_ks_launch l;
    cut_err ignore;
    uint64_t key = 0;
    if (cut_patch_apply(ko->src[n], diff, ko->scratch, &src, &ignore) == 0 &&
        cut_kstate_tunables(ko->k, src, vals, &ignore) == 0 && cut_kspec_resolve(ko->k, vals, &l, &ignore) == 0)
        key = cut_kstate_key(src, &l);
    free(src);
    return key;
}

int cut_opt_gen_edges(kopt *ko, int n, cut_err *e)
{
    cut_proposal *p = cut_xcalloc(MAX_PROPOSALS, sizeof *p);
    const int np = cut_cand_gen_propose(ko->gen, ko->k, ko->src[n], ko->scratch, p, MAX_PROPOSALS, e);
    if (np < 0) {
        free(p);
        return cut_err_wrap(e, "candidate generator '%s'", ko->gen->name);
    }
    double pred[MAX_PROPOSALS], weight[CUT_MV_COUNT];
    for (int m = 0; m < CUT_MV_COUNT; m++)
        weight[m] = 1.0;
    cut_err pe = {{0}};
    const cut_prior_src *ps = ko->o->priors;
    if (ps && ps->weights(ps->ctx, ko->k, ko->src[n], weight, &pe) != 0 && ko->trace) {
        fprintf(ko->trace, "- *%s priors unavailable for %s: %s*\n", ps->name, ko->g.nodes[n].id, pe.msg);
        for (int m = 0; m < CUT_MV_COUNT; m++)
            weight[m] = 1.0;
    }
    for (int m = 0; m < CUT_MV_COUNT; m++) /* a weight is a factor in [0, 100]; anything else is neutral */
        weight[m] = isfinite(weight[m]) && weight[m] >= 0 ? fmin(weight[m], 100.0) : 1.0;
    for (int i = 0; i < np; i++) {
        char key[96];
        cut_opt_hist_key(p[i].label, key, sizeof key);
        const hist *h = cut_opt_hist_get(ko, p[i].move, key);
        /* the profile weights the rule's estimate; history then corrects it as for any move */
        pred[i] = cut_mcgs_pred_gain(p[i].pred_gain * weight[p[i].move], h ? h->sum : 0, h ? h->n : 0);
    }
    cut_mcgs_set_edges(&ko->g, n, p, pred, np, ko->o->min_pred_gain);
    for (int i = 0; i < np; i++) {
        ko->g.nodes[n].edges[i].key = proposal_key(ko, n, p[i].diff);
        cut_proposal_free(&p[i]);
    }
    free(p);
    return 0;
}

/* ---- results into the graph ---- */

static void trace_line(kopt *ko, const outcome *oc, const cut_edge *ed, double speedup)
{
    if (!ko->trace)
        return;
    fprintf(ko->trace, "- **%s** from %s, %s: %s — ", oc->id, ko->g.nodes[oc->parent].id, cut_move_name(ed->move),
            ed->label);
    if (strcmp(oc->status, "ok") == 0)
        fprintf(ko->trace, "%.4f ms, %.2fx the baseline%s\n", oc->ms, speedup,
                ko->best >= 0 && strcmp(ko->g.nodes[ko->best].id, oc->id) == 0 ? " (new best)" : "");
    else
        fprintf(ko->trace, "%s: %s\n", oc->status, oc->error);
    fflush(ko->trace);
}

/* Puts a finished variant into the graph: its node (or the transposition's), the backup along its path, history, the
 * global tactic graph, the trace and the best link. */
int cut_opt_apply_outcome(kopt *ko, outcome *oc, int live, cut_err *e)
{
    cut_node *pn = &ko->g.nodes[oc->parent];
    int ed = -1;
    for (int i = 0; i < pn->nedges; i++)
        if (strcmp(pn->edges[i].label, oc->label) == 0)
            ed = i;
    if (ed < 0)
        return cut_err_set(e, "variant %s: its parent %s has no move '%s'", oc->id, pn->id, oc->label);
    const int ok = strcmp(oc->status, "ok") == 0, tr = strcmp(oc->status, "transposition") == 0;
    int child;
    if (tr && oc->same_as >= 0) {
        child = oc->same_as;
        free(oc->src);
        ko->transpositions++;
    } else {
        child = cut_opt_add_node(ko, oc->id, oc->src, oc->parent, pn->edges[ed].move, oc->label);
        pn = &ko->g.nodes[oc->parent]; /* cut_opt_add_node may move the array */
        cut_node *c = &ko->g.nodes[child];
        c->status = ok ? CUT_NODE_OK : CUT_NODE_FAILED;
        c->key = oc->key;
        c->ptx_hash = oc->ptx;
        c->depth = pn->depth + 1;
        if (ok) {
            c->ms = oc->ms;
            c->speedup = ko->baseline_ms / oc->ms;
            ko->measured++;
        } else {
            ko->failed++;
        }
    }
    oc->src = NULL;
    pn->edges[ed].child = child;
    const cut_node *c = &ko->g.nodes[child];
    const double speedup = c->status == CUT_NODE_OK ? c->speedup : 0;
    const double value = c->status == CUT_NODE_OK ? cut_mcgs_value(speedup) : 0;
    if (!tr) {
        ko->g.nodes[child].visits++;
        ko->g.nodes[child].value_sum += value;
    }
    if (live)
        cut_mcgs_backup(&ko->g, oc->path, oc->plen, ed, value);
    else /* resumed: no virtual loss was taken */
        for (int i = 0; i < oc->plen; i++) {
            ko->g.nodes[oc->path[i]].visits++;
            ko->g.nodes[oc->path[i]].value_sum += value;
        }
    const double gain = c->status == CUT_NODE_OK ? speedup / pn->speedup - 1.0 : FAIL_GAIN;
    hist_add(ko, pn->edges[ed].move, oc->label, gain);
    if (c->status == CUT_NODE_OK && speedup > ko->g.nodes[ko->best].speedup) {
        ko->best = child;
        if (cut_opt_update_best_link(ko, e) != 0)
            return -1;
    }
    if (live) {
        cut_opt_update_global(ko, ko->via_move[oc->parent], pn->edges[ed].move, oc->label, gain,
                              c->status == CUT_NODE_OK, e);
        trace_line(ko, oc, &pn->edges[ed], speedup);
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "event", "variant");
        cJSON_AddStringToObject(ev, "id", oc->id);
        cJSON_AddStringToObject(ev, "parent", pn->id);
        cJSON_AddStringToObject(ev, "move", cut_move_name(pn->edges[ed].move));
        cJSON_AddStringToObject(ev, "label", oc->label);
        cJSON_AddStringToObject(ev, "status", oc->status);
        if (ok)
            cJSON_AddNumberToObject(ev, "ms", oc->ms);
        cJSON_AddNumberToObject(ev, "speedup", speedup);
        cJSON_AddStringToObject(ev, "node", ko->g.nodes[child].id);
        cJSON_AddStringToObject(ev, "best", ko->g.nodes[ko->best].id);
        cut_opt_event(ko, ev);
        if (!ko->o->quiet) {
            char what[96];
            if (ok)
                snprintf(what, sizeof what, "%.4f ms  %.2fx", oc->ms, speedup);
            else
                snprintf(what, sizeof what, "%.70s", oc->error);
            printf("  %-6s %-24s %-34.34s %-14s %s\n", oc->id, cut_move_name(pn->edges[ed].move), oc->label,
                   oc->status, what);
            fflush(stdout);
        }
    }
    return 0;
}

/* ---- the search loop ---- */

/* Edge ed of node leads to a state the graph has (same source and launch): the edge points at that node, which is
 * backed up along the path with its own mean value. Nothing is built. */
static void link_transposition(kopt *ko, int node, int edge, int known, const int *path, int plen)
{
    cut_node *pn = &ko->g.nodes[node];
    cut_edge *ed = &pn->edges[edge];
    ed->child = known;
    const cut_node *t = &ko->g.nodes[known];
    const double value = t->visits > 0 ? t->value_sum / t->visits : cut_mcgs_value(t->speedup);
    cut_mcgs_backup(&ko->g, path, plen, edge, value);
    hist_add(ko, ed->move, ed->label, t->speedup / pn->speedup - 1.0);
    ko->transpositions++;
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "transposition");
    cJSON_AddStringToObject(ev, "parent", pn->id);
    cJSON_AddStringToObject(ev, "move", cut_move_name(ed->move));
    cJSON_AddStringToObject(ev, "label", ed->label);
    cJSON_AddStringToObject(ev, "node", t->id);
    cut_opt_event(ko, ev);
    if (ko->trace)
        fprintf(ko->trace, "- %s, %s: %s — the state of %s (transposition, nothing built)\n", pn->id,
                cut_move_name(ed->move), ed->label, t->id);
}

/* Selects up to max jobs (distinct edges, virtual losses along their paths). */
static int select_jobs(kopt *ko, job *jobs, int max, cut_err *e)
{
    int n = 0;
    while (n < max) {
        job *j = &jobs[n];
        memset(j, 0, sizeof *j);
        int node, edge;
        if (cut_mcgs_select(&ko->g, &node, &edge, j->path, &j->plen, MAX_PATH_LEN) != 0)
            break;
        if (edge < 0) {
            if (cut_opt_gen_edges(ko, node, e) != 0)
                return -1;
            continue;
        }
        cut_edge *ed = &ko->g.nodes[node].edges[edge];
        const int known = ed->key ? cut_mcgs_find_key(&ko->g, ed->key) : -1;
        if (known >= 0) {
            link_transposition(ko, node, edge, known, j->path, j->plen);
            continue;
        }
        j->parent = node;
        j->edge = edge;
        n++;
    }
    return n;
}

/* Nothing is left above the prune threshold: lowers it by RELAX_STEP (predicted gains refreshed from the history
 * since the edges were made) until some pruned edge opens, so the budget is spent on the next most promising moves
 * rather than left unused; never below RELAX_FLOOR. Returns the edges opened (0: none left worth building). */
static int relax_pruning(kopt *ko)
{
    int pruned = 0;
    for (int i = 0; i < ko->g.nnodes; i++)
        for (int k = 0; k < ko->g.nodes[i].nedges; k++)
            pruned += ko->g.nodes[i].status == CUT_NODE_OK && ko->g.nodes[i].edges[k].pruned &&
                      ko->g.nodes[i].edges[k].child == -1;
    int opened = 0;
    while (pruned && !opened && ko->threshold - RELAX_STEP >= RELAX_FLOOR - 1e-9) {
        ko->threshold -= RELAX_STEP;
        for (int i = 0; i < ko->g.nnodes; i++)
            for (int k = 0; k < ko->g.nodes[i].nedges; k++) {
                cut_edge *ed = &ko->g.nodes[i].edges[k];
                if (ko->g.nodes[i].status != CUT_NODE_OK || !ed->pruned || ed->child != -1)
                    continue;
                char key[96];
                cut_opt_hist_key(ed->label, key, sizeof key);
                const hist *h = cut_opt_hist_get(ko, ed->move, key);
                ed->pred_gain = cut_mcgs_pred_gain(ed->rule_gain, h ? h->sum : 0, h ? h->n : 0);
                if (ed->pred_gain >= ko->threshold) {
                    ed->pruned = 0;
                    ed->prior = 0.5 * fmax(ed->pred_gain - ko->threshold, 0.01); /* behind the first-round edges */
                    opened++;
                }
            }
    }
    if (!opened)
        return 0;
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "relax_pruning");
    cJSON_AddNumberToObject(ev, "threshold", ko->threshold);
    cJSON_AddNumberToObject(ev, "opened", opened);
    cut_opt_event(ko, ev);
    if (ko->trace)
        fprintf(ko->trace, "- *every open move tried: prune threshold lowered to %.3f, %d move(s) reopened*\n",
                ko->threshold, opened);
    if (!ko->o->quiet)
        printf("  every open move tried: prune threshold lowered to %.3f, %d move(s) reopened\n", ko->threshold,
               opened);
    return opened;
}

static int search(kopt *ko, cut_err *e)
{
    job jobs[16];
    while (ko->builds < ko->o->budget_builds) {
        int want = ko->nr < (int)CUT_ARRAY_LEN(jobs) ? ko->nr : (int)CUT_ARRAY_LEN(jobs);
        if (want > ko->o->budget_builds - ko->builds)
            want = ko->o->budget_builds - ko->builds;
        const int n = select_jobs(ko, jobs, want, e);
        if (n < 0)
            return -1;
        if (n == 0) {
            if (relax_pruning(ko) > 0)
                continue;
            if (!ko->o->quiet)
                printf("  nothing left to expand: every move of every state was tried or is predicted to lose over "
                       "%.0f%%\n", -100 * RELAX_FLOOR);
            break;
        }
        int rc = 0;
        for (int i = 0; i < n && rc == 0; i++)
            rc = cut_opt_build(ko, &jobs[i], e);
        if (rc == 0)
            rc = cut_opt_compile_jobs(ko, jobs, n, e);
        if (rc == 0)
            rc = cut_opt_measure_jobs(ko, jobs, n, e);
        for (int i = 0; i < n && rc == 0; i++)
            rc = cut_opt_finish_job(ko, &jobs[i], e);
        for (int i = 0; i < n; i++)
            cut_opt_job_free(&jobs[i]);
        if (rc != 0 || cut_opt_save_state(ko, e) != 0)
            return -1;
    }
    return 0;
}

/* ---- entry ---- */

static void summarise(const kopt *ko, cut_opt_summary *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", ko->k->name);
    const cut_node *b = &ko->g.nodes[ko->best];
    s->baseline_ms = ko->baseline_ms;
    s->best_ms = b->ms;
    s->speedup = b->speedup;
    s->builds = ko->builds;
    s->measured = ko->measured;
    s->failed = ko->failed;
    s->transpositions = ko->transpositions;
    snprintf(s->best_id, sizeof s->best_id, "%s", b->id);
    int chain[CUT_OPT_MAX_MOVES], n = 0;
    for (int i = ko->best; i > 0 && n < CUT_OPT_MAX_MOVES; i = ko->parent[i])
        chain[n++] = i;
    for (int i = n - 1; i >= 0; i--)
        snprintf(s->best_moves[s->nbest_moves++], sizeof s->best_moves[0], "%s",
                 cut_move_name((cut_move)ko->via_move[chain[i]]));
}

void cut_opt_kopt_free(kopt *ko)
{
    for (int i = 0; i < ko->g.nnodes; i++)
        free(ko->src[i]);
    free(ko->src);
    free(ko->parent);
    free(ko->via);
    free(ko->via_move);
    cut_mcgs_free(&ko->g);
    for (int b = 0; b < CUT_KW_MAX_BUFS; b++)
        for (int s = 0; s < 2; s++) {
            free(ko->refs[b][s]);
            if (b < ko->work.nbufs && ko->work.bufs[b].is_output)
                ko->work.bufs[b].data[s] = NULL;
        }
    cut_kspec_work_free(&ko->work);
    if (ko->events)
        fclose(ko->events);
    if (ko->trace)
        fclose(ko->trace);
}

int cut_optimize_kernel(const cut_opt_opts *o, const cut_kspec *k, cut_runner **runners, int nrunners,
                        cut_cand_gen *gen, cut_opt_summary *out, cut_err *e)
{
    for (int i = 0; i < nrunners; i++)
        if (!runners[i]->prepare_kernel || !runners[i]->run_kernel)
            return cut_err_set(e, "runner %d cannot run user kernels", i);
    kopt ko;
    memset(&ko, 0, sizeof ko);
    ko.o = o;
    ko.k = k;
    ko.runners = runners;
    ko.nr = nrunners;
    ko.gen = gen;
    cut_mcgs_init(&ko.g, o->seed);
    ko.threshold = o->min_pred_gain;
    cut_compile_opts_default(&ko.copts);
    ko.copts.sm_major = o->sm_major;
    ko.copts.sm_minor = o->sm_minor;
    ko.copts.cache_dir = o->compile_cache ? o->compile_cache : CUT_OPT_COMPILE_CACHE;
    ko.copts.want_ptx = 1;
    snprintf(ko.kdir, sizeof ko.kdir, "%s/kernels/_%s", o->outdir, k->name);
    snprintf(ko.scratch, sizeof ko.scratch, "%s/.scratch", ko.kdir);
    char state[1200];
    snprintf(state, sizeof state, "%s/search_state.json", ko.kdir);
    const int have_state = cut_path_exists(state);
    int rc = -1;
    if (have_state && !o->resume) {
        cut_err_set(e, "%s holds a search already: pass --resume to continue it, or remove the folder", ko.kdir);
        goto out;
    }
    if (cut_mkdirs(ko.scratch, e) != 0 || cut_kspec_work(k, &ko.work, e) != 0)
        goto out;
    cut_opt_load_global(&ko);
    if (cut_opt_open_logs(&ko, !have_state, e) != 0)
        goto out;
    if (have_state) {
        if (cut_opt_load_state(&ko, e) != 0 || cut_opt_load_refs(&ko, e) != 0 || cut_opt_reconcile(&ko, e) != 0 ||
            cut_opt_save_state(&ko, e) != 0)
            goto out;
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "event", "resume");
        cJSON_AddNumberToObject(ev, "builds", ko.builds);
        cut_opt_event(&ko, ev);
        if (!o->quiet)
            printf("  resumed: %d builds done, best %s (%.2fx)\n", ko.builds, ko.g.nodes[ko.best].id,
                   ko.g.nodes[ko.best].speedup);
    } else {
        if (cut_opt_run_baseline(&ko, e) != 0 || cut_opt_save_state(&ko, e) != 0)
            goto out;
        if (!o->quiet && k->ref_source)
            printf("  baseline %.4f ms, matches the reference kernel %s; variants are checked against it\n",
                   ko.baseline_ms, k->ref_entry);
        else if (!o->quiet)
            printf("  baseline %.4f ms\n", ko.baseline_ms);
    }
    if (search(&ko, e) != 0)
        goto out;
    summarise(&ko, out);
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "done");
    cJSON_AddNumberToObject(ev, "builds", ko.builds);
    cJSON_AddStringToObject(ev, "best", out->best_id);
    cJSON_AddNumberToObject(ev, "speedup", out->speedup);
    cut_opt_event(&ko, ev);
    if (ko.trace)
        fprintf(ko.trace, "\nBest: %s, %.4f ms, %.2fx the baseline (%.4f ms) after %d builds.\n", out->best_id,
                out->best_ms, out->speedup, out->baseline_ms, out->builds);
    rc = 0;
out:
    cut_opt_kopt_free(&ko);
    return rc;
}
