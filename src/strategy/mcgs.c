/* cutune — Monte Carlo Graph Search over kernel states (optimize.h).
 *
 * Nodes are states; an edge is one proposal of a candidate generator. An edge's child is another node, possibly one
 * reached before by another path (a transposition, found by PTX hash), so statistics live on nodes: Q of an edge is
 * its child's mean backed-up value. Selection walks from the root: at each node, progressive widening decides whether
 * a new edge may be expanded there (the untried, unpruned edge of highest prior); otherwise PUCT picks among the
 * expanded edges whose child is a measured state, not on the current path and not exhausted. A node none of whose
 * expanded children can be descended into (all pending, failed or exhausted) widens past the limit: a second worker
 * then gets the next open edge instead of waiting. */
#include "cutune/mcgs.h"
#include "cutune/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EDGE_UNEXPANDED (-1)
#define EDGE_IN_FLIGHT (-2)

static const char *const move_names[CUT_MV_COUNT] = {
    [CUT_MV_ASYNC_PIPELINE] = "enable_async_pipeline", [CUT_MV_VECTORIZE] = "vectorize_global_loads",
    [CUT_MV_MMA] = "switch_to_mma_or_wgmma",           [CUT_MV_PAD_TAIL] = "pad_tail_and_mask",
    [CUT_MV_BLOCK_SIZES] = "change_block_sizes",       [CUT_MV_CACHE_CG] = "cache_policy_cg",
    [CUT_MV_AVOID_ATOMICS] = "avoid_atomics_reduce",   [CUT_MV_GROUPED] = "grouped_gemm_colmajor",
    [CUT_MV_MATH_FUSION] = "softmax_math_fusion",
};

const char *cut_move_name(cut_move m) { return (unsigned)m < CUT_MV_COUNT ? move_names[m] : "unknown"; }

int cut_move_parse(const char *s)
{
    for (int i = 0; s && i < CUT_MV_COUNT; i++)
        if (strcmp(s, move_names[i]) == 0)
            return i;
    return -1;
}

void cut_proposal_free(cut_proposal *p)
{
    if (p) {
        free(p->diff);
        p->diff = NULL;
    }
}

double cut_mcgs_value(double speedup) { return (isfinite(speedup) && speedup > 0) ? speedup / (1.0 + speedup) : 0.0; }

double cut_mcgs_pred_gain(double rule_gain, double observed_sum, int observed_n)
{
    return (rule_gain * CUT_PRED_PRIOR_WEIGHT + observed_sum) / (CUT_PRED_PRIOR_WEIGHT + (observed_n > 0 ? observed_n : 0));
}

void cut_mcgs_init(cut_mcgs *g, uint64_t seed)
{
    memset(g, 0, sizeof *g);
    cut_rng_seed(&g->rng, seed);
}

static void free_edges(cut_node *n)
{
    for (int k = 0; k < n->nedges; k++)
        free(n->edges[k].diff);
    free(n->edges);
    n->edges = NULL;
    n->nedges = 0;
}

void cut_mcgs_free(cut_mcgs *g)
{
    for (int i = 0; i < g->nnodes; i++)
        free_edges(&g->nodes[i]);
    free(g->nodes);
    memset(g, 0, sizeof *g);
}

int cut_mcgs_add_node(cut_mcgs *g, const char *id)
{
    if (g->nnodes == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 32;
        g->nodes = cut_xrealloc(g->nodes, sizeof *g->nodes * (size_t)g->cap);
    }
    cut_node *n = &g->nodes[g->nnodes];
    memset(n, 0, sizeof *n);
    snprintf(n->id, sizeof n->id, "%s", id);
    n->status = CUT_NODE_PENDING;
    n->ms = n->speedup = -1;
    return g->nnodes++;
}

int cut_mcgs_find_ptx(const cut_mcgs *g, uint64_t ptx_hash)
{
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].status != CUT_NODE_FAILED && g->nodes[i].ptx_hash == ptx_hash)
            return i;
    return -1;
}

int cut_mcgs_find_key(const cut_mcgs *g, uint64_t key)
{
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].status != CUT_NODE_FAILED && g->nodes[i].key == key)
            return i;
    return -1;
}

int cut_mcgs_find_id(const cut_mcgs *g, const char *id)
{
    for (int i = 0; i < g->nnodes; i++)
        if (strcmp(g->nodes[i].id, id) == 0)
            return i;
    return -1;
}

/* Gamma(alpha, 1) by Marsaglia and Tsang (alpha < 1 through the boost u^(1/alpha)). */
static double gamma_sample(cut_rng *r, double alpha)
{
    if (alpha < 1.0) {
        double u = cut_rng_double(r);
        return gamma_sample(r, alpha + 1.0) * pow(u > 0 ? u : 1e-300, 1.0 / alpha);
    }
    const double d = alpha - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do {
            x = cut_rng_normal(r);
            v = 1.0 + c * x;
        } while (v <= 0);
        v = v * v * v;
        const double u = cut_rng_double(r);
        if (u < 1.0 - 0.0331 * x * x * x * x || log(u > 0 ? u : 1e-300) < 0.5 * x * x + d * (1.0 - v + log(v)))
            return d * v;
    }
}

void cut_dirichlet(cut_rng *r, double alpha, int n, double *out)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += out[i] = gamma_sample(r, alpha);
    for (int i = 0; i < n; i++)
        out[i] = sum > 0 ? out[i] / sum : 1.0 / n;
}

void cut_mcgs_set_edges(cut_mcgs *g, int n, const cut_proposal *p, const double *pred_gain, int np,
                        double min_pred_gain)
{
    cut_node *node = &g->nodes[n];
    free_edges(node);
    node->edges = cut_xcalloc((size_t)(np > 0 ? np : 1), sizeof *node->edges);
    node->nedges = np;
    node->edges_ready = 1;
    double sum = 0;
    int open = 0;
    for (int i = 0; i < np; i++) {
        cut_edge *e = &node->edges[i];
        e->child = EDGE_UNEXPANDED;
        e->move = p[i].move;
        snprintf(e->label, sizeof e->label, "%s", p[i].label);
        e->pred_gain = pred_gain[i];
        e->rule_gain = p[i].pred_gain;
        e->diff = p[i].diff ? cut_xstrdup(p[i].diff) : NULL;
        e->pruned = pred_gain[i] < min_pred_gain;
        e->prior = e->pruned ? 0 : fmax(pred_gain[i], 0.01);
        sum += e->prior;
        open += !e->pruned;
    }
    for (int i = 0; i < np; i++)
        node->edges[i].prior = sum > 0 ? node->edges[i].prior / sum : 0;
    if (n == 0 && open > 0 && !g->noise_applied) {
        double *eta = cut_xmalloc(sizeof *eta * (size_t)open);
        cut_dirichlet(&g->rng, CUT_ROOT_NOISE_ALPHA, open, eta);
        for (int i = 0, j = 0; i < np; i++)
            if (!node->edges[i].pruned) {
                cut_edge *e = &node->edges[i];
                e->prior = (1.0 - CUT_ROOT_NOISE_EPS) * e->prior + CUT_ROOT_NOISE_EPS * eta[j++];
            }
        free(eta);
        g->noise_applied = 1;
    }
}

int cut_mcgs_widen_limit(const cut_node *n)
{
    return (int)ceil(CUT_PROG_WIDEN_C * pow((double)n->visits + 1.0, CUT_PROG_WIDEN_ALPHA));
}

static double node_q(const cut_node *n)
{
    const int v = n->visits + n->virtual_loss;
    return v > 0 ? n->value_sum / v : -1.0; /* -1: unknown */
}

double cut_mcgs_puct(const cut_mcgs *g, const cut_node *n, const cut_edge *e)
{
    double q = e->child >= 0 ? node_q(&g->nodes[e->child]) : -1.0;
    if (q < 0) {
        const double pq = node_q(n);
        q = fmax((pq < 0 ? 0.5 : pq) - CUT_FPU_REDUCTION, 0.0);
    }
    const int child_vl = e->child >= 0 ? g->nodes[e->child].virtual_loss : 0;
    return q + CUT_PUCT_C * e->prior * sqrt((double)n->visits + n->virtual_loss) / (1.0 + e->visits + child_vl);
}

static int expanded_edges(const cut_node *n)
{
    int k = 0;
    for (int i = 0; i < n->nedges; i++)
        k += n->edges[i].child != EDGE_UNEXPANDED;
    return k;
}

/* The untried, unpruned edge of highest prior, or -1. */
static int best_untried(const cut_node *n)
{
    int best = -1;
    for (int i = 0; i < n->nedges; i++)
        if (n->edges[i].child == EDGE_UNEXPANDED && !n->edges[i].pruned &&
            (best < 0 || n->edges[i].prior > n->edges[best].prior))
            best = i;
    return best;
}

/* 1 when nothing can be expanded from node i any more (its edges known, none untried, every measured child
 * exhausted). seen guards against cycles. */
static int exhausted(const cut_mcgs *g, int i, unsigned char *seen)
{
    const cut_node *n = &g->nodes[i];
    if (n->status != CUT_NODE_OK)
        return 1;
    if (!n->edges_ready || best_untried(n) >= 0)
        return 0;
    if (seen[i])
        return 1;
    seen[i] = 1;
    for (int k = 0; k < n->nedges; k++)
        if (n->edges[k].child >= 0 && !exhausted(g, n->edges[k].child, seen))
            return 0;
    return 1;
}

static int on_path(const int *path, int len, int node)
{
    for (int i = 0; i < len; i++)
        if (path[i] == node)
            return 1;
    return 0;
}

int cut_mcgs_select(cut_mcgs *g, int *node, int *edge, int *path, int *plen, int maxlen)
{
    int len = 0, cur = 0;
    unsigned char *seen = cut_xcalloc((size_t)g->nnodes, 1);
    int rc = -1;
    for (;;) {
        path[len++] = cur;
        cut_node *n = &g->nodes[cur];
        if (!n->edges_ready) {
            *node = cur, *edge = -1;
            rc = 0;
            break;
        }
        const int untried = best_untried(n);
        if (untried >= 0 && expanded_edges(n) < cut_mcgs_widen_limit(n)) {
            *node = cur, *edge = untried;
            rc = 1;
            break;
        }
        int best = -1;
        double best_s = -1e300;
        for (int k = 0; k < n->nedges; k++) {
            const cut_edge *e = &n->edges[k];
            if (e->child < 0 || g->nodes[e->child].status != CUT_NODE_OK || on_path(path, len, e->child))
                continue;
            memset(seen, 0, (size_t)g->nnodes);
            if (exhausted(g, e->child, seen))
                continue;
            const double s = cut_mcgs_puct(g, n, e);
            if (s > best_s)
                best_s = s, best = k;
        }
        if (best < 0) {
            if (untried >= 0) { /* the widening limit is reached but nothing below is open: widen anyway */
                *node = cur, *edge = untried;
                rc = 1;
            }
            break;
        }
        if (len >= maxlen)
            break;
        cur = n->edges[best].child;
    }
    free(seen);
    if (rc < 0)
        return -1;
    *plen = len;
    if (rc == 1) {
        g->nodes[*node].edges[*edge].child = EDGE_IN_FLIGHT;
        for (int i = 0; i < len; i++)
            g->nodes[path[i]].virtual_loss++;
    }
    return 0;
}

void cut_mcgs_backup(cut_mcgs *g, const int *path, int plen, int edge_last, double value)
{
    for (int i = 0; i < plen; i++) {
        cut_node *n = &g->nodes[path[i]];
        n->visits++;
        n->value_sum += value;
        if (n->virtual_loss > 0)
            n->virtual_loss--;
        if (i + 1 < plen) {
            for (int k = 0; k < n->nedges; k++)
                if (n->edges[k].child == path[i + 1]) {
                    n->edges[k].visits++;
                    break;
                }
        } else if (edge_last >= 0 && edge_last < n->nedges) {
            n->edges[edge_last].visits++;
        }
    }
}
