/* cutune — the MCGS strategy (cutune/mcgs.h): the search graph with its states' sources, the history of moves, the
 * prune threshold and the tickets it hands out, behind propose/observe. The graph's own rules (PUCT, widening,
 * backup) are in mcgs.c; what a state is and which moves it has come from the op's move space; what is written to
 * disk is the journal's, told through the notes. */
#include "cutune/mcgs.h"
#include "cutune/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tells the note hook (when there is one). */
static int tell(cut_mcgs_search *s, cut_mcgs_note n, cut_err *e)
{
    return s->note ? s->note(s->note_ctx, s, &n, e) : 0;
}

void cut_mcgs_search_init(cut_mcgs_search *s, const cut_move_space *ms, uint64_t seed, double min_pred_gain,
                          cut_mcgs_note_fn note, void *note_ctx)
{
    memset(s, 0, sizeof *s);
    cut_mcgs_init(&s->g, seed);
    s->ms = ms;
    s->min_pred_gain = s->threshold = min_pred_gain;
    s->note = note;
    s->note_ctx = note_ctx;
}

void cut_mcgs_search_free(cut_mcgs_search *s)
{
    for (int i = 0; i < s->g.nnodes; i++)
        free(s->src[i]);
    free(s->src);
    free(s->parent);
    free(s->via);
    free(s->via_move);
    for (int i = 0; i < s->ntickets; i++)
        free(s->tickets[i].src);
    free(s->tickets);
    cut_mcgs_free(&s->g);
    memset(s, 0, sizeof *s);
}

/* Grows the per-node arrays to hold one more node. */
static void ensure_cap(cut_mcgs_search *s)
{
    if (s->g.nnodes < s->cap)
        return;
    s->cap = s->cap ? 2 * s->cap : 64;
    s->src = cut_xrealloc(s->src, sizeof *s->src * (size_t)s->cap);
    s->parent = cut_xrealloc(s->parent, sizeof *s->parent * (size_t)s->cap);
    s->via = cut_xrealloc(s->via, sizeof *s->via * (size_t)s->cap);
    s->via_move = cut_xrealloc(s->via_move, sizeof *s->via_move * (size_t)s->cap);
}

int cut_mcgs_search_add(cut_mcgs_search *s, const char *id, char *src, int parent, int move, const char *via)
{
    ensure_cap(s);
    const int n = cut_mcgs_add_node(&s->g, id);
    s->src[n] = src;
    s->parent[n] = parent;
    s->via_move[n] = move;
    snprintf(s->via[n], sizeof s->via[n], "%s", via ? via : "");
    return n;
}

/* ---- history of moves (for predicted gains) ---- */

void cut_mcgs_hist_key(const char *label, char *key, size_t n)
{
    const char *arrow = strstr(label, " -> ");
    const char *sp = strchr(label, ' ');
    if (arrow && sp && sp < arrow)
        snprintf(key, n, "%.*s%s", (int)(sp - label), label, arrow);
    else
        snprintf(key, n, "%s", label);
}

cut_mcgs_hist *cut_mcgs_hist_get(cut_mcgs_search *s, cut_move m, const char *key)
{
    for (int i = 0; i < s->nhist; i++)
        if (s->hist[i].move == m && strcmp(s->hist[i].key, key) == 0)
            return &s->hist[i];
    if (s->nhist == (int)CUT_ARRAY_LEN(s->hist))
        return NULL;
    cut_mcgs_hist *h = &s->hist[s->nhist++];
    memset(h, 0, sizeof *h);
    h->move = m;
    snprintf(h->key, sizeof h->key, "%s", key);
    return h;
}

static void hist_add(cut_mcgs_search *s, cut_move m, const char *label, double gain)
{
    char key[96];
    cut_mcgs_hist_key(label, key, sizeof key);
    cut_mcgs_hist *h = cut_mcgs_hist_get(s, m, key);
    if (h) {
        h->n++;
        h->sum += gain;
    }
}

/* ---- edges of a node ---- */

int cut_mcgs_expand(cut_mcgs_search *s, int n, cut_err *e)
{
    cut_proposal *p = cut_xcalloc(CUT_MCGS_MAX_PROPOSALS, sizeof *p);
    const int np = s->ms->propose(s->ms, n, s->src[n], p, CUT_MCGS_MAX_PROPOSALS, e);
    if (np < 0) {
        free(p);
        return -1;
    }
    double pred[CUT_MCGS_MAX_PROPOSALS], weight[CUT_MV_COUNT];
    for (int m = 0; m < CUT_MV_COUNT; m++)
        weight[m] = 1.0;
    cut_err pe = {{0}};
    if (s->ms->weights && s->ms->weights(s->ms, n, s->src[n], weight, &pe) != 0) {
        cut_err ignore; /* a note hook's failure to write the trace does not stop the search */
        tell(s, (cut_mcgs_note){.kind = CUT_MCGS_NOTE_NO_PRIORS, .node = n, .msg = pe.msg}, &ignore);
        for (int m = 0; m < CUT_MV_COUNT; m++)
            weight[m] = 1.0;
    }
    for (int m = 0; m < CUT_MV_COUNT; m++) /* a weight is a factor in [0, 100]; anything else is neutral */
        weight[m] = isfinite(weight[m]) && weight[m] >= 0 ? fmin(weight[m], 100.0) : 1.0;
    for (int i = 0; i < np; i++) {
        char key[96];
        cut_mcgs_hist_key(p[i].label, key, sizeof key);
        const cut_mcgs_hist *h = cut_mcgs_hist_get(s, p[i].move, key);
        /* the profile weights the rule's estimate; history then corrects it as for any move */
        pred[i] = cut_mcgs_pred_gain(p[i].pred_gain * weight[p[i].move], h ? h->sum : 0, h ? h->n : 0);
    }
    cut_mcgs_set_edges(&s->g, n, p, pred, np, s->min_pred_gain);
    for (int i = 0; i < np; i++) {
        s->g.nodes[n].edges[i].key = s->ms->key(s->ms, s->src[n], p[i].diff);
        cut_proposal_free(&p[i]);
    }
    free(p);
    return 0;
}

/* ---- results into the graph ---- */

int cut_mcgs_apply(cut_mcgs_search *s, cut_mcgs_outcome *oc, int live, cut_err *e)
{
    cut_node *pn = &s->g.nodes[oc->parent];
    int ed = -1;
    for (int i = 0; i < pn->nedges; i++)
        if (strcmp(pn->edges[i].label, oc->label) == 0)
            ed = i;
    if (ed < 0) {
        free(oc->src);
        oc->src = NULL;
        return cut_err_set(e, "variant %s: its parent %s has no move '%s'", oc->id, pn->id, oc->label);
    }
    int child;
    if (oc->transposition && oc->same_as >= 0) {
        child = oc->same_as;
        free(oc->src);
        s->transpositions++;
    } else {
        child = cut_mcgs_search_add(s, oc->id, oc->src, oc->parent, pn->edges[ed].move, oc->label);
        pn = &s->g.nodes[oc->parent]; /* adding may move the array */
        cut_node *c = &s->g.nodes[child];
        c->status = oc->ok ? CUT_NODE_OK : CUT_NODE_FAILED;
        c->key = oc->key;
        c->ptx_hash = oc->ptx;
        c->depth = pn->depth + 1;
        if (oc->ok) {
            c->ms = oc->ms;
            c->speedup = s->baseline_ms / oc->ms;
            s->measured++;
        } else {
            s->failed++;
        }
    }
    oc->src = NULL;
    pn->edges[ed].child = child;
    const cut_node *c = &s->g.nodes[child];
    const double speedup = c->status == CUT_NODE_OK ? c->speedup : 0;
    const double value = c->status == CUT_NODE_OK ? cut_mcgs_value(speedup) : 0;
    if (!oc->transposition) {
        s->g.nodes[child].visits++;
        s->g.nodes[child].value_sum += value;
    }
    if (live)
        cut_mcgs_backup(&s->g, oc->path, oc->plen, ed, value);
    else /* resumed: no virtual loss was taken */
        for (int i = 0; i < oc->plen; i++) {
            s->g.nodes[oc->path[i]].visits++;
            s->g.nodes[oc->path[i]].value_sum += value;
        }
    const double gain = c->status == CUT_NODE_OK ? speedup / pn->speedup - 1.0 : CUT_FAIL_GAIN;
    hist_add(s, pn->edges[ed].move, oc->label, gain);
    if (c->status == CUT_NODE_OK && speedup > s->g.nodes[s->best].speedup) {
        s->best = child;
        if (tell(s, (cut_mcgs_note){.kind = CUT_MCGS_NOTE_BEST, .node = child}, e) != 0)
            return -1;
    }
    if (!live)
        return 0;
    return tell(s, (cut_mcgs_note){.kind = CUT_MCGS_NOTE_VARIANT, .node = child, .parent = oc->parent, .edge = ed,
                                   .ticket = oc->ticket, .gain = gain},
                e);
}

/* ---- selection ---- */

/* Edge ed of node leads to a state the graph has (same source and launch): the edge points at that node, which is
 * backed up along the path with its own mean value. Nothing is built. */
static void link_transposition(cut_mcgs_search *s, int node, int edge, int known, const int *path, int plen)
{
    cut_node *pn = &s->g.nodes[node];
    cut_edge *ed = &pn->edges[edge];
    ed->child = known;
    const cut_node *t = &s->g.nodes[known];
    const double value = t->visits > 0 ? t->value_sum / t->visits : cut_mcgs_value(t->speedup);
    cut_mcgs_backup(&s->g, path, plen, edge, value);
    hist_add(s, ed->move, ed->label, t->speedup / pn->speedup - 1.0);
    s->transpositions++;
    cut_err ignore; /* the journal's trouble writing it does not undo the link */
    tell(s, (cut_mcgs_note){.kind = CUT_MCGS_NOTE_TRANSPOSITION, .node = known, .parent = node, .edge = edge},
         &ignore);
}

/* A new outstanding ticket (its number is the next variant's). */
static cut_mcgs_ticket *new_ticket(cut_mcgs_search *s)
{
    if (s->ntickets == s->tcap) {
        s->tcap = s->tcap ? 2 * s->tcap : 16;
        s->tickets = cut_xrealloc(s->tickets, sizeof *s->tickets * (size_t)s->tcap);
    }
    cut_mcgs_ticket *t = &s->tickets[s->ntickets++];
    memset(t, 0, sizeof *t);
    t->ticket = ++s->next_id;
    snprintf(t->id, sizeof t->id, "v%04d", t->ticket);
    t->same_as = -1;
    return t;
}

/* Selects up to max moves (distinct edges, virtual losses along their paths) as tickets into out. -1 with e when a
 * node cannot be expanded. */
static int select_tickets(cut_mcgs_search *s, cut_sched *out, int max, cut_err *e)
{
    int n = 0;
    while (n < max) {
        int node, edge, path[CUT_MCGS_MAX_PATH], plen = 0;
        if (cut_mcgs_select(&s->g, &node, &edge, path, &plen, CUT_MCGS_MAX_PATH) != 0)
            break;
        if (edge < 0) {
            if (cut_mcgs_expand(s, node, e) != 0)
                return -1;
            continue;
        }
        const cut_edge *ed = &s->g.nodes[node].edges[edge];
        const int known = ed->key ? cut_mcgs_find_key(&s->g, ed->key) : -1;
        if (known >= 0) {
            link_transposition(s, node, edge, known, path, plen);
            continue;
        }
        cut_mcgs_ticket *t = new_ticket(s);
        t->parent = node;
        t->edge = edge;
        memcpy(t->path, path, sizeof path);
        t->plen = plen;
        memset(&out[n], 0, sizeof out[n]);
        out[n].tpl = CUT_TPL_TICKET;
        out[n].k[0] = t->ticket;
        n++;
    }
    return n;
}

/* Nothing is left above the prune threshold: lowers it by CUT_RELAX_STEP (predicted gains refreshed from the history
 * since the edges were made) until some pruned edge opens, so the budget is spent on the next most promising moves
 * rather than left unused; never below CUT_RELAX_FLOOR. Returns the edges opened (0: none left worth building). */
static int relax_pruning(cut_mcgs_search *s)
{
    int pruned = 0;
    for (int i = 0; i < s->g.nnodes; i++)
        for (int k = 0; k < s->g.nodes[i].nedges; k++)
            pruned += s->g.nodes[i].status == CUT_NODE_OK && s->g.nodes[i].edges[k].pruned &&
                      s->g.nodes[i].edges[k].child == -1;
    int opened = 0;
    while (pruned && !opened && s->threshold - CUT_RELAX_STEP >= CUT_RELAX_FLOOR - 1e-9) {
        s->threshold -= CUT_RELAX_STEP;
        for (int i = 0; i < s->g.nnodes; i++)
            for (int k = 0; k < s->g.nodes[i].nedges; k++) {
                cut_edge *ed = &s->g.nodes[i].edges[k];
                if (s->g.nodes[i].status != CUT_NODE_OK || !ed->pruned || ed->child != -1)
                    continue;
                char key[96];
                cut_mcgs_hist_key(ed->label, key, sizeof key);
                const cut_mcgs_hist *h = cut_mcgs_hist_get(s, ed->move, key);
                ed->pred_gain = cut_mcgs_pred_gain(ed->rule_gain, h ? h->sum : 0, h ? h->n : 0);
                if (ed->pred_gain >= s->threshold) {
                    ed->pruned = 0;
                    ed->prior = 0.5 * fmax(ed->pred_gain - s->threshold, 0.01); /* behind the first-round edges */
                    opened++;
                }
            }
    }
    if (opened) {
        cut_err ignore;
        tell(s, (cut_mcgs_note){.kind = CUT_MCGS_NOTE_RELAXED, .opened = opened}, &ignore);
    }
    return opened;
}

/* ---- tickets ---- */

static int ticket_index(const cut_mcgs_search *s, int ticket)
{
    for (int i = 0; i < s->ntickets; i++)
        if (s->tickets[i].ticket == ticket)
            return i;
    return -1;
}

const cut_mcgs_ticket *cut_mcgs_ticket_get(const cut_mcgs_search *s, int ticket)
{
    const int i = ticket_index(s, ticket);
    return i >= 0 ? &s->tickets[i] : NULL;
}

int cut_mcgs_ticket_built(cut_mcgs_search *s, int ticket, char *src, uint64_t key)
{
    const int i = ticket_index(s, ticket);
    if (i < 0) {
        free(src);
        return -1;
    }
    cut_mcgs_ticket *t = &s->tickets[i];
    free(t->src);
    t->src = src;
    t->key = key;
    t->same_as = key ? cut_mcgs_find_key(&s->g, key) : -1;
    return t->same_as;
}

int cut_mcgs_ticket_ptx(cut_mcgs_search *s, int ticket, uint64_t ptx)
{
    const int i = ticket_index(s, ticket);
    if (i < 0)
        return -1;
    s->tickets[i].ptx = ptx;
    s->tickets[i].same_as = cut_mcgs_find_ptx(&s->g, ptx);
    return s->tickets[i].same_as;
}

/* ---- the strategy ---- */

/* Selects; when nothing is open, relaxes the prune threshold and selects again; 0 when nothing is left. A move space
 * failure (the generator's error) is told as a note and ends the proposals: propose has no error of its own. */
static int mcgs_propose(cut_strategy *st, int n, cut_sched *out)
{
    cut_mcgs_search *s = st->impl;
    if (s->g.nnodes == 0 || n <= 0)
        return 0;
    for (;;) {
        cut_err e = {{0}};
        const int got = select_tickets(s, out, n, &e);
        if (got < 0) {
            cut_err ignore;
            tell(s, (cut_mcgs_note){.kind = CUT_MCGS_NOTE_ERROR, .msg = e.msg}, &ignore);
            return 0;
        }
        if (got > 0)
            return got;
        if (relax_pruning(s) == 0)
            break;
    }
    cut_err ignore;
    tell(s, (cut_mcgs_note){.kind = CUT_MCGS_NOTE_EXHAUSTED}, &ignore);
    return 0;
}

/* A ticket's time: its variant (or the transposition it found) goes into the graph. */
static void mcgs_observe(cut_strategy *st, const cut_sched *sc, double time_ms, int regs)
{
    (void)regs;
    cut_mcgs_search *s = st->impl;
    const int i = sc->tpl == CUT_TPL_TICKET ? ticket_index(s, sc->k[0]) : -1;
    if (i < 0)
        return;
    const cut_mcgs_ticket t = s->tickets[i];
    s->tickets[i] = s->tickets[--s->ntickets]; /* the copy owns its source now */
    cut_mcgs_outcome oc = {0};
    snprintf(oc.id, sizeof oc.id, "%s", t.id);
    oc.parent = t.parent;
    snprintf(oc.label, sizeof oc.label, "%s", s->g.nodes[t.parent].edges[t.edge].label);
    memcpy(oc.path, t.path, sizeof oc.path);
    oc.plen = t.plen;
    oc.transposition = t.same_as >= 0;
    oc.ok = !oc.transposition && time_ms > 0;
    oc.ms = oc.ok ? time_ms : -1;
    oc.key = t.key;
    oc.ptx = t.ptx;
    oc.same_as = t.same_as;
    oc.src = t.src;
    oc.ticket = t.ticket;
    cut_err e; /* a note hook's error stays with the hook (observe has no error to return) */
    cut_mcgs_apply(s, &oc, 1, &e);
}

/* Outstanding tickets' sources are freed with the search (cut_mcgs_search_free): the strategy borrows it. */
static void mcgs_destroy(cut_strategy *st) { (void)st; }

cut_strategy *cut_strategy_mcgs_new(cut_mcgs_search *s)
{
    cut_strategy *st = cut_xcalloc(1, sizeof *st);
    st->name = "mcgs";
    st->impl = s;
    st->propose = mcgs_propose;
    st->observe = mcgs_observe;
    st->destroy = mcgs_destroy;
    return st;
}
