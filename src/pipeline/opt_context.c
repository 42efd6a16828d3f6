/* cutune — what the search knows of a state, as text for a candidate generator (issue 17: the LLM's prompt carries
 * the measured times of the state and its parent, the path to it, the moves tried around it and how each move has
 * done). Kept to a few KB whatever the graph's size: every list is capped, labels are cut. */
#include "pipeline/optimize_int.h"
#include "record/json.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#define CTX_MAX_TRIED 8 /* tried moves listed per state (the most recent) */
#define CTX_MAX_PATH 6  /* steps of the path listed (the last ones) */
#define CTX_LABEL 48    /* characters of a label */

/* How a failed variant failed: the status of its result (committed, else still pending), "failed" when neither can
 * be read. */
static void failed_status(const kopt *ko, const char *id, char *buf, size_t n)
{
    snprintf(buf, n, "failed");
    const char *names[] = {"result.json", CUT_OPT_PENDING};
    for (int i = 0; i < 2; i++) {
        char path[1400];
        snprintf(path, sizeof path, "%s/variants/%s/%s", ko->kdir, id, names[i]);
        if (!cut_path_exists(path))
            continue;
        cut_err ignore;
        cJSON *r = cut_rec_read_json_file(path, &ignore);
        const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "status"));
        if (st && st[0])
            snprintf(buf, n, "%s", st);
        cJSON_Delete(r);
        return;
    }
}

/* One tried edge of node from: what came of it. */
static void edge_outcome(const kopt *ko, int from, const cut_edge *ed, int self, cut_buf *b)
{
    const cut_mcgs_search *s = &ko->s;
    cut_buf_printf(b, "- %s \"%.*s\": ", cut_move_name(ed->move), CTX_LABEL, ed->label);
    if (ed->child < 0) {
        cut_buf_printf(b, "being built and measured\n");
        return;
    }
    const cut_node *c = &s->g.nodes[ed->child];
    if (ed->child == self)
        cut_buf_printf(b, "this state again (no change)\n");
    else if (s->parent[ed->child] != from || strcmp(s->via[ed->child], ed->label) != 0)
        cut_buf_printf(b, "the same state as %s (transposition)\n", c->id);
    else if (c->status == CUT_NODE_OK)
        cut_buf_printf(b, "%.4g ms, %.2fx, %+.1f%% over %s\n", c->ms, c->speedup,
                       100.0 * (c->speedup / s->g.nodes[from].speedup - 1.0), s->g.nodes[from].id);
    else {
        char st[64];
        failed_status(ko, c->id, st, sizeof st);
        cut_buf_printf(b, "%s\n", st);
    }
}

/* Recency of an edge: one in flight is the newest, else its child's index (children are numbered as made). */
static int edge_age(const cut_edge *ed) { return ed->child == -1 ? -1 : ed->child < 0 ? INT_MAX : ed->child; }

/* The moves tried from node (expanded edges, in flight included), the CTX_MAX_TRIED most recent, oldest first; from
 * the parent of self, the move that made self is left out (the path has it). */
static void tried_from(const kopt *ko, int node, int self, const char *title, cut_buf *b)
{
    const cut_node *n = &ko->s.g.nodes[node];
    int idx[CUT_MCGS_MAX_PROPOSALS], nt = 0;
    for (int k = 0; k < n->nedges && nt < CUT_MCGS_MAX_PROPOSALS; k++)
        if (edge_age(&n->edges[k]) >= 0 && (node == self || n->edges[k].child != self))
            idx[nt++] = k;
    if (!nt)
        return;
    for (int i = 1; i < nt; i++) /* newest first: an insertion sort of at most CUT_MCGS_MAX_PROPOSALS */
        for (int j = i; j > 0 && edge_age(&n->edges[idx[j - 1]]) < edge_age(&n->edges[idx[j]]); j--) {
            const int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    const int shown = nt < CTX_MAX_TRIED ? nt : CTX_MAX_TRIED;
    cut_buf_printf(b, "%s", title);
    if (nt > shown)
        cut_buf_printf(b, " (the %d most recent of %d)", shown, nt);
    cut_buf_printf(b, ":\n");
    for (int i = shown - 1; i >= 0; i--)
        edge_outcome(ko, node, &n->edges[idx[i]], self, b);
}

/* The path of moves from the baseline to node: each step's move, label and the speedup it reached. */
static void path_to(const kopt *ko, int node, cut_buf *b)
{
    const cut_mcgs_search *s = &ko->s;
    int chain[CTX_MAX_PATH], n = 0, depth = 0;
    for (int i = node; i > 0 && depth < s->g.nnodes; i = s->parent[i], depth++) /* nnodes: a loop stops */
        if (n < CTX_MAX_PATH)
            chain[n++] = i;
    cut_buf_printf(b, "Path from the baseline (%d move%s", depth, depth == 1 ? "" : "s");
    if (depth > n)
        cut_buf_printf(b, ", the last %d", n);
    cut_buf_printf(b, "):\n");
    for (int i = n - 1; i >= 0; i--)
        cut_buf_printf(b, "%d. %s \"%.*s\" -> %s, %.2fx\n", depth - i,
                       cut_move_name((cut_move)s->via_move[chain[i]]), CTX_LABEL, s->via[chain[i]],
                       s->g.nodes[chain[i]].id, s->g.nodes[chain[i]].speedup);
}

/* Each canonical move's tries and mean relative gain over the state it was applied to, from the search's history
 * (earlier runs' global tactic graph included). */
static void move_history(const kopt *ko, cut_buf *b)
{
    int n[CUT_MV_COUNT] = {0};
    double sum[CUT_MV_COUNT] = {0};
    int any = 0;
    for (int i = 0; i < ko->s.nhist; i++) {
        const cut_mcgs_hist *h = &ko->s.hist[i];
        if (h->n > 0 && (unsigned)h->move < CUT_MV_COUNT) {
            n[h->move] += h->n;
            sum[h->move] += h->sum;
            any = 1;
        }
    }
    if (!any)
        return;
    cut_buf_printf(b, "Moves so far (tries, mean gain over the state they were applied to; a failure counts "
                      "%+.0f%%):\n", 100.0 * CUT_FAIL_GAIN);
    for (int m = 0; m < CUT_MV_COUNT; m++)
        if (n[m] > 0)
            cut_buf_printf(b, "- %s: %d, %+.1f%%\n", cut_move_name((cut_move)m), n[m], 100.0 * sum[m] / n[m]);
}

void cut_opt_context(const kopt *ko, int node, cut_buf *b)
{
    const cut_mcgs_search *s = &ko->s;
    const cut_node *n = &s->g.nodes[node];
    if (node == 0) {
        cut_buf_printf(b, "State baseline: %.4g ms (the search's start; speedups below are over it).\n", n->ms);
    } else {
        const cut_node *pn = &s->g.nodes[s->parent[node]];
        cut_buf_printf(b, "Speedups (Nx) are over the baseline, %.4g ms.\n", s->baseline_ms);
        cut_buf_printf(b, "State %s: %.4g ms, %.2fx.\n", n->id, n->ms, n->speedup);
        cut_buf_printf(b, "Parent %s: %.4g ms, %.2fx.\n", pn->id, pn->ms, pn->speedup);
        path_to(ko, node, b);
    }
    tried_from(ko, node, node, "Tried from this state", b);
    if (node != 0) {
        char title[96];
        snprintf(title, sizeof title, "Tried from the parent %s besides this state's move",
                 s->g.nodes[s->parent[node]].id);
        tried_from(ko, s->parent[node], node, title, b);
    }
    move_history(ko, b);
    cut_opt_profile_context(ko, node, b);
}
