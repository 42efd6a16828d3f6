/* What the optimizer tells a candidate generator of a state (cut_opt_context, issue 17): the state's and its parent's
 * times, the path to it, the moves tried from it and from its parent with what came of each, each move's history;
 * a few KB at most however deep and wide the graph is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pipeline/optimize_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH 40
#define WIDTH 20

/* A node of the search under parent (status ok with time ms, or failed when ms <= 0), made by the edge labelled via. */
static int add(kopt *ko, const char *id, int parent, const char *via, double ms)
{
    const int n = cut_mcgs_search_add(&ko->s, id, cut_xstrdup(""), parent, parent < 0 ? -1 : CUT_MV_BLOCK_SIZES, via);
    cut_node *nd = &ko->s.g.nodes[n];
    nd->status = ms > 0 ? CUT_NODE_OK : CUT_NODE_FAILED;
    nd->ms = ms;
    nd->speedup = ms > 0 ? ko->s.baseline_ms / ms : 0;
    return n;
}

/* WIDTH edges of node with long labels, all untried. */
static void edges(kopt *ko, int node)
{
    cut_node *nd = &ko->s.g.nodes[node];
    nd->edges = cut_xcalloc(WIDTH, sizeof *nd->edges);
    nd->nedges = WIDTH;
    nd->edges_ready = 1;
    for (int k = 0; k < WIDTH; k++) {
        nd->edges[k].child = -1;
        nd->edges[k].move = (cut_move)(k % CUT_MV_COUNT);
        snprintf(nd->edges[k].label, sizeof nd->edges[k].label,
                 "%s move %d with a label long enough to be cut short in any prompt that lists it at all", nd->id, k);
    }
}

/* A chain baseline -> v1 -> ... -> vDEPTH; every node with WIDTH edges: edge 0 to the next node, edges 1..12 tried
 * (measured, failed, edge 12 a transposition to edge 10's state), edge 13 in flight, the rest untried. */
static void deep_graph(kopt *ko, cut_opt_opts *o)
{
    cut_opt_opts_default(o);
    memset(ko, 0, sizeof *ko);
    ko->o = o;
    snprintf(ko->kdir, sizeof ko->kdir, "/nonexistent/cutune-test"); /* no result.json: failures read "failed" */
    cut_mcgs_search_init(&ko->s, NULL, 1, o->min_pred_gain, NULL, NULL);
    ko->s.baseline_ms = 1.0;
    int prev = add(ko, "baseline", -1, "", 1.0), id = 0;
    for (int d = 0; d < DEPTH; d++) {
        const int node = prev;
        edges(ko, node);
        for (int k = 0, ten = 0; k < 14; k++) {
            char name[32];
            snprintf(name, sizeof name, "v%04d", ++id);
            const char *label = ko->s.g.nodes[node].edges[k].label;
            const int child =
                k == 13 ? -2 : k == 12 ? ten : add(ko, name, node, label, k % 3 == 2 ? -1 : 1.0 / (1 + d + k));
            ten = k == 10 ? child : ten;
            ko->s.g.nodes[node].edges[k].child = child;
            if (k == 0)
                prev = child;
        }
    }
    edges(ko, prev);
    for (int m = 0; m < CUT_MV_COUNT; m++) {
        cut_mcgs_hist *h = cut_mcgs_hist_get(&ko->s, (cut_move)m, "k");
        h->n = m + 1;
        h->sum = 0.05 * m;
    }
}

static void test_context_deep_graph(void **state)
{
    (void)state;
    cut_opt_opts o;
    kopt ko;
    deep_graph(&ko, &o);
    const int leaf = cut_mcgs_find_id(&ko.s.g, "v0547"); /* the chain's end: 39 * 14 + 1 */
    assert_true(leaf > 0 && ko.s.g.nodes[leaf].nedges == WIDTH);
    const int mid = ko.s.parent[leaf];
    cut_buf b;
    cut_buf_init(&b);
    cut_opt_context(&ko, mid, &b);
    printf("%s(%zu bytes)\n", b.data, b.len);
    assert_true(b.len < 3072);
    char want[128];
    snprintf(want, sizeof want, "State %s: ", ko.s.g.nodes[mid].id);
    assert_non_null(strstr(b.data, want));
    snprintf(want, sizeof want, "Parent %s: %.4g ms", ko.s.g.nodes[ko.s.parent[mid]].id,
             ko.s.g.nodes[ko.s.parent[mid]].ms);
    assert_non_null(strstr(b.data, want));
    assert_non_null(strstr(b.data, "Path from the baseline (39 moves, the last 6):"));
    assert_non_null(strstr(b.data, "Tried from this state (the 8 most recent of 14):"));
    assert_non_null(strstr(b.data, "besides this state's move (the 8 most recent of 13):\n- "));
    assert_non_null(strstr(b.data, "being built and measured"));
    assert_non_null(strstr(b.data, "(transposition)\n"));
    assert_non_null(strstr(b.data, ": failed\n"));
    assert_non_null(strstr(b.data, "- softmax_math_fusion: 9, +4.4%"));
    cut_buf_free(&b);
    /* the baseline: its time, no parent, no path */
    cut_buf_init(&b);
    cut_opt_context(&ko, 0, &b);
    assert_true(b.len < 3072);
    assert_non_null(strstr(b.data, "State baseline: 1 ms"));
    assert_null(strstr(b.data, "Parent"));
    assert_null(strstr(b.data, "Path"));
    cut_buf_free(&b);
    /* a state with nothing tried from it lists its parent's moves only */
    cut_buf_init(&b);
    cut_opt_context(&ko, leaf, &b);
    assert_null(strstr(b.data, "Tried from this state"));
    assert_non_null(strstr(b.data, "Tried from the parent"));
    cut_buf_free(&b);
    cut_opt_kopt_free(&ko);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_context_deep_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
