/* cutune — learned cost model: XGBoost through its C API (libxgboost-dev), trained from scratch each round on all
 * measured trials of a case, as Ansor does.
 *
 * Choices, by measurement on the seed-001 H200 logs (7 cases, 768-1000 trials each; tests/test_costmodel.c has the
 * replay experiment):
 *   - objective rank:pairwise on log(GFLOP/s), one query group per training set: held-out Spearman about equal to
 *     reg:squarederror (0.89-0.94 either way) but the guided replay found the optimum in 54 trials on average
 *     instead of 60 (20 seeds x 7 cases; random selection: 379). Only the order of the scores means something.
 *   - nthread 1: on a loaded 2-core machine (the tune loop compiles the next batch while the model trains) OpenMP
 *     with 2 threads took 2-7 s per training instead of 0.2 s; one thread trains 2000 points in about 0.2 s.
 *   - 100 rounds, depth 6, eta 0.3, hist trees (Ansor's settings are similar). */
#include "cutune/costmodel.h"
#include "cutune/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xgboost/c_api.h>

#define MAX_PARAMS 16

struct cut_costmodel {
    float *x;        /* n x CUT_FEAT_LEN, owned */
    double *gflops;  /* n, owned; <= 0 for failures */
    int *group;      /* n, owned: 0 for the case being tuned, other ids for other workloads' trials (a prior) */
    int n, cap, nvalid;
    BoosterHandle bst; /* NULL until trained */
    int rounds;
    char keys[MAX_PARAMS][32], vals[MAX_PARAMS][32];
    int nparams;
    char err[CUT_ERR_LEN];
};

static int xgb_err(cut_err *e, const char *what)
{
    const char *m = XGBGetLastError();
    return cut_err_set(e, "XGBoost %s: %s", what, m && *m ? m : "unknown error");
}

static void param_set(cut_costmodel *m, const char *k, const char *v)
{
    for (int i = 0; i < m->nparams; i++)
        if (strcmp(m->keys[i], k) == 0) {
            snprintf(m->vals[i], sizeof m->vals[i], "%s", v);
            return;
        }
    if (m->nparams < MAX_PARAMS) {
        snprintf(m->keys[m->nparams], sizeof m->keys[0], "%s", k);
        snprintf(m->vals[m->nparams], sizeof m->vals[0], "%s", v);
        m->nparams++;
    }
}

static const char *param_get(const cut_costmodel *m, const char *k)
{
    for (int i = 0; i < m->nparams; i++)
        if (strcmp(m->keys[i], k) == 0)
            return m->vals[i];
    return "";
}

/* Ownership: the caller frees the result with cut_costmodel_free. */
cut_costmodel *cut_costmodel_new(cut_err *e)
{
    /* XGBoost prints warnings (e.g. about defaults) on stderr unless told otherwise; the setting is process-wide */
    if (XGBSetGlobalConfig("{\"verbosity\": 0}") != 0) {
        xgb_err(e, "global config");
        return NULL;
    }
    cut_costmodel *m = cut_xcalloc(1, sizeof *m);
    m->rounds = 100;
    param_set(m, "booster", "gbtree");
    param_set(m, "objective", "rank:pairwise");
    param_set(m, "tree_method", "hist");
    param_set(m, "max_depth", "6");
    param_set(m, "eta", "0.3");
    param_set(m, "min_child_weight", "1");
    param_set(m, "nthread", "1");
    param_set(m, "seed", "0");
    param_set(m, "verbosity", "0");
    return m;
}

void cut_costmodel_free(cut_costmodel *m)
{
    if (!m)
        return;
    if (m->bst)
        XGBoosterFree(m->bst);
    free(m->x);
    free(m->gflops);
    free(m->group);
    free(m);
}

int cut_costmodel_set_param(cut_costmodel *m, const char *key, const char *value, cut_err *e)
{
    if (strcmp(key, "rounds") == 0) {
        char *end;
        long r = strtol(value, &end, 10);
        if (*end || r < 1 || r > 10000)
            return cut_err_set(e, "cost model: rounds must be 1..10000, not '%s'", value);
        m->rounds = (int)r;
        return 0;
    }
    if (strlen(key) >= sizeof m->keys[0] || strlen(value) >= sizeof m->vals[0])
        return cut_err_set(e, "cost model: parameter '%s' or its value too long", key);
    int known = 0;
    for (int i = 0; i < m->nparams; i++)
        known |= strcmp(m->keys[i], key) == 0;
    if (!known && m->nparams == MAX_PARAMS)
        return cut_err_set(e, "cost model: more than %d parameters", MAX_PARAMS);
    param_set(m, key, value);
    return 0;
}

void cut_costmodel_add_group(cut_costmodel *m, const float *features, double gflops, int group)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 256;
        m->x = cut_xrealloc(m->x, sizeof(float) * CUT_FEAT_LEN * (size_t)m->cap);
        m->gflops = cut_xrealloc(m->gflops, sizeof(double) * (size_t)m->cap);
        m->group = cut_xrealloc(m->group, sizeof(int) * (size_t)m->cap);
    }
    memcpy(m->x + (size_t)m->n * CUT_FEAT_LEN, features, sizeof(float) * CUT_FEAT_LEN);
    int ok = gflops > 0 && isfinite(gflops);
    m->group[m->n] = group;
    m->gflops[m->n++] = ok ? gflops : 0.0;
    m->nvalid += ok;
}

void cut_costmodel_add(cut_costmodel *m, const float *features, double gflops)
{
    cut_costmodel_add_group(m, features, gflops, 0);
}

int cut_costmodel_count(const cut_costmodel *m) { return m->n; }
int cut_costmodel_count_valid(const cut_costmodel *m) { return m->nvalid; }
int cut_costmodel_trained(const cut_costmodel *m) { return m->bst != NULL; }
const char *cut_costmodel_error(const cut_costmodel *m) { return m->err; }

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The training set in group order (XGBoost's query groups are contiguous runs of rows): order[] of the points,
 * gsize[] the size of each of the *ngroups groups. Caller frees both. */
static void group_order(const cut_costmodel *m, int **order, unsigned **gsize, int *ngroups)
{
    int *ids = cut_xmalloc(sizeof(int) * (size_t)m->n);
    memcpy(ids, m->group, sizeof(int) * (size_t)m->n);
    qsort(ids, (size_t)m->n, sizeof *ids, cmp_int);
    int ng = 0;
    for (int i = 0; i < m->n; i++)
        if (i == 0 || ids[i] != ids[i - 1])
            ids[ng++] = ids[i];
    *order = cut_xmalloc(sizeof(int) * (size_t)m->n);
    *gsize = cut_xcalloc((size_t)ng, sizeof(unsigned));
    int k = 0;
    for (int g = 0; g < ng; g++)
        for (int i = 0; i < m->n; i++)
            if (m->group[i] == ids[g]) {
                (*order)[k++] = i;
                (*gsize)[g]++;
            }
    *ngroups = ng;
    free(ids);
}

/* Ranking weights per group: the case being tuned (group 0) weighs as much as all prior groups together, so a
 * large prior shapes the trees where the case's own trials are silent but never outvotes them. */
static int set_group_weights(const cut_costmodel *m, const int *order, const unsigned *gsize, int ng, DMatrixHandle dm,
                             cut_err *e)
{
    float *w = cut_xmalloc(sizeof(float) * (size_t)ng);
    unsigned own = 0, prior = 0;
    for (int g = 0, at = 0; g < ng; at += (int)gsize[g++]) {
        if (m->group[order[at]] == 0)
            own += gsize[g];
        else
            prior += gsize[g];
    }
    for (int g = 0, at = 0; g < ng; at += (int)gsize[g++])
        w[g] = (m->group[order[at]] == 0 && own > 0) ? (float)CUT_MAX(1.0, (double)prior / own) : 1.0f;
    int rc = XGDMatrixSetFloatInfo(dm, "weight", w, (bst_ulong)ng) != 0 ? xgb_err(e, "setting group weights") : 0;
    free(w);
    return rc;
}

int cut_costmodel_train(cut_costmodel *m, cut_err *e)
{
    if (m->nvalid < 2)
        return 0;
    int *order, ng;
    unsigned *gsize;
    group_order(m, &order, &gsize, &ng);
    /* labels: log throughput; failures one e-fold below the slowest success of their group */
    float *x = cut_xmalloc(sizeof(float) * CUT_FEAT_LEN * (size_t)m->n);
    float *y = cut_xmalloc(sizeof(float) * (size_t)m->n);
    double sum = 0;
    for (int g = 0, at = 0; g < ng; at += (int)gsize[g++]) {
        double lo = INFINITY;
        for (int j = at; j < at + (int)gsize[g]; j++)
            if (m->gflops[order[j]] > 0 && log(m->gflops[order[j]]) < lo)
                lo = log(m->gflops[order[j]]);
        if (!isfinite(lo))
            lo = 0;
        for (int j = at; j < at + (int)gsize[g]; j++) {
            int i = order[j];
            memcpy(x + (size_t)j * CUT_FEAT_LEN, m->x + (size_t)i * CUT_FEAT_LEN, sizeof(float) * CUT_FEAT_LEN);
            y[j] = (float)(m->gflops[i] > 0 ? log(m->gflops[i]) : lo - 1.0);
            sum += y[j];
        }
    }
    DMatrixHandle dm = NULL;
    BoosterHandle bst = NULL;
    int rc = -1;
    if (XGDMatrixCreateFromMat(x, (bst_ulong)m->n, CUT_FEAT_LEN, NAN, &dm) != 0) {
        xgb_err(e, "creating the training matrix");
        goto out;
    }
    if (XGDMatrixSetFloatInfo(dm, "label", y, (bst_ulong)m->n) != 0) {
        xgb_err(e, "setting labels");
        goto out;
    }
    const char *obj = param_get(m, "objective");
    /* one query group per workload: pairs are only formed between trials of the same workload */
    if (strncmp(obj, "rank:", 5) == 0 && XGDMatrixSetUIntInfo(dm, "group", gsize, (bst_ulong)ng) != 0) {
        xgb_err(e, "setting the ranking groups");
        goto out;
    }
    if (strncmp(obj, "rank:", 5) == 0 && ng > 1 && set_group_weights(m, order, gsize, ng, dm, e) != 0)
        goto out;
    if (XGBoosterCreate(&dm, 1, &bst) != 0) {
        xgb_err(e, "creating the booster");
        goto out;
    }
    for (int i = 0; i < m->nparams; i++)
        if (XGBoosterSetParam(bst, m->keys[i], m->vals[i]) != 0) {
            xgb_err(e, "setting a parameter");
            cut_err_wrap(e, "%s=%s", m->keys[i], m->vals[i]);
            goto out;
        }
    if (strncmp(obj, "reg:", 4) == 0) {
        char mean[32];
        snprintf(mean, sizeof mean, "%.6g", sum / m->n);
        if (XGBoosterSetParam(bst, "base_score", mean) != 0) {
            xgb_err(e, "setting base_score");
            goto out;
        }
    }
    for (int it = 0; it < m->rounds; it++)
        if (XGBoosterUpdateOneIter(bst, it, dm) != 0) {
            xgb_err(e, "training");
            goto out;
        }
    if (m->bst)
        XGBoosterFree(m->bst);
    m->bst = bst;
    bst = NULL;
    rc = 0;
out:
    if (bst)
        XGBoosterFree(bst);
    if (dm)
        XGDMatrixFree(dm);
    free(y);
    free(x);
    free(order);
    free(gsize);
    return rc;
}

int cut_costmodel_predict(cut_costmodel *m, const float *feats, int n, float *scores)
{
    m->err[0] = '\0';
    if (!m->bst) {
        snprintf(m->err, sizeof m->err, "cost model not trained");
        return -1;
    }
    if (n <= 0)
        return 0;
    DMatrixHandle dm = NULL;
    bst_ulong len = 0;
    const float *res = NULL;
    int rc = -1;
    cut_err e;
    if (XGDMatrixCreateFromMat(feats, (bst_ulong)n, CUT_FEAT_LEN, NAN, &dm) != 0)
        xgb_err(&e, "creating the prediction matrix");
    else if (XGBoosterPredict(m->bst, dm, 0, 0, 0, &len, &res) != 0)
        xgb_err(&e, "predicting");
    else if (len != (bst_ulong)n)
        cut_err_set(&e, "XGBoost predicted %llu values for %d rows", (unsigned long long)len, n);
    else {
        memcpy(scores, res, sizeof(float) * (size_t)n);
        rc = 0;
    }
    if (rc != 0)
        snprintf(m->err, sizeof m->err, "%s", e.msg);
    if (dm)
        XGDMatrixFree(dm);
    return rc;
}

typedef struct scored {
    float s;
    int i;
} scored;

/* best first; ties (and NaN) by original index, so the order is a stable function of the scores */
static int by_score_desc(const void *pa, const void *pb)
{
    const scored *a = pa, *b = pb;
    float sa = isnan(a->s) ? -INFINITY : a->s, sb = isnan(b->s) ? -INFINITY : b->s;
    if (sa != sb)
        return sa > sb ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

int cut_costmodel_rank_features(cut_costmodel *m, const float *x, const char *bad, int n, int *order)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    if (!m->bst)
        return 1;
    if (n <= 0)
        return 0;
    float *s = cut_xmalloc(sizeof(float) * (size_t)n);
    int rc = cut_costmodel_predict(m, x, n, s);
    if (rc == 0) {
        scored *t = cut_xmalloc(sizeof(scored) * (size_t)n);
        for (int i = 0; i < n; i++) {
            t[i].s = bad && bad[i] ? -INFINITY : s[i];
            t[i].i = i;
        }
        qsort(t, (size_t)n, sizeof *t, by_score_desc);
        for (int i = 0; i < n; i++)
            order[i] = t[i].i;
        free(t);
    }
    free(s);
    return rc;
}

/* Average ranks (1-based) of v into r. */
static void ranks(const float *v, int n, double *r)
{
    scored *t = cut_xmalloc(sizeof(scored) * (size_t)n);
    for (int i = 0; i < n; i++) {
        t[i].s = v[i];
        t[i].i = i;
    }
    qsort(t, (size_t)n, sizeof *t, by_score_desc);
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && t[j + 1].s == t[i].s)
            j++;
        double avg = (i + j) / 2.0 + 1.0;
        for (int q = i; q <= j; q++)
            r[t[q].i] = avg;
        i = j + 1;
    }
    free(t);
}

double cut_costmodel_spearman(const float *a, const float *b, int n)
{
    if (n < 2)
        return 0.0;
    double *ra = cut_xmalloc(sizeof(double) * (size_t)n), *rb = cut_xmalloc(sizeof(double) * (size_t)n);
    ranks(a, n, ra);
    ranks(b, n, rb);
    double mean = (n + 1) / 2.0, sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < n; i++) {
        double da = ra[i] - mean, db = rb[i] - mean;
        sab += da * db;
        saa += da * da;
        sbb += db * db;
    }
    free(ra);
    free(rb);
    return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : 0.0;
}
