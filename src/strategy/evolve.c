/* cutune — random + evolutionary search, guided by the learned cost model.
 *
 * Without a trained model (the first round, or XGBoost missing) proposals are random schedules and mutations of the
 * best measured ones. With a model, each round runs Ansor's evolutionary search in model space: a population of
 * the best measured schedules plus fresh random ones evolves for a few generations with the model's score as the
 * fitness, and the best-scored schedules never measured become the proposals. A share epsilon of every round stays
 * random (it starts at random_share and decays to random_share_final), so the model keeps seeing the whole space.
 * The search never knows which op it searches: the op's cut_space (cutune/strategy.h) gives the templates, the
 * sampler, mutation, validity check and cost-model features. */
#include "cutune/log.h"
#include "cutune/search.h"
#include "cutune/costmodel.h"
#include "cutune/util.h"
#include "strategy/hset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Model-space evolution per round (Ansor uses a population of 2048 and 4 generations on a far bigger space; these
 * sizes cost about 2500 feature vectors and model predictions, a few ms, per round). */
#define EVO_POPULATION 256 /* schedules kept per generation, by score */
#define EVO_RANDOM 256     /* fresh random schedules in the first generation */
#define EVO_CHILDREN 512   /* children per generation */
#define EVO_GENERATIONS 4
#define EVO_CROSSOVER 0.3  /* share of children made by crossover of two parents (then mutated) */

typedef struct member {
    cut_sched sc;
    double ms;
} member;

struct cut_search {
    cut_space *sp; /* owned */
    cut_search_opts o;
    cut_rng rng;
    cut_hset seen;   /* observed or proposed */
    cut_hset in_uni; /* members of o.universe */
    member *pop; /* sorted ascending by ms, at most o.population */
    int npop;
    int ntpl;
    int tpls[32];
    int nobs;             /* observations so far */
    int nprior;           /* trials of other workloads given to the model */
    cut_costmodel *model; /* NULL: plain evolutionary search */
    int new_obs;          /* observations since the last training */
};

void cut_search_opts_default(cut_search_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->random_share = 0.3;
    o->random_share_final = 0.05;
    o->random_decay = 256;
    o->population = 32;
    o->tpl_mask = 0;
    o->use_model = 1;
    o->universe = NULL;
    o->nuniverse = 0;
}

static uint64_t key_of(const cut_search *s, const cut_sched *sc)
{
    uint64_t h = cut_space_hash(s->sp, sc);
    return h ? h : 1;
}

cut_search *cut_search_new_space(cut_space *sp, const cut_search_opts *o)
{
    cut_search *s = cut_xcalloc(1, sizeof *s);
    s->sp = sp;
    if (o)
        s->o = *o;
    else
        cut_search_opts_default(&s->o);
    if (s->o.population < 2)
        s->o.population = 2;
    if (s->o.use_model && sp->features) {
        cut_err e;
        s->model = cut_costmodel_new(&e);
        if (!s->model)
            cut_log(CUT_LOG_WARN, "cutune: cost model unavailable, searching without it: %s\n", e.msg);
    }
    cut_rng_seed(&s->rng, s->o.seed);
    cut_hset_grow(&s->seen);
    cut_hset_grow(&s->in_uni);
    for (int i = 0; i < s->o.nuniverse; i++)
        cut_hset_add(&s->in_uni, key_of(s, &s->o.universe[i]));
    s->pop = cut_xcalloc((size_t)s->o.population, sizeof *s->pop);
    for (int t = 0; t < sp->ntpl && s->ntpl < 32; t++) {
        if (s->o.tpl_mask && !(s->o.tpl_mask & (1 << t)))
            continue;
        if (sp->applies(sp, t))
            s->tpls[s->ntpl++] = t;
    }
    return s;
}

const cut_space *cut_search_space(const cut_search *s) { return s->sp; }

int cut_search_templates(const cut_search *s) { return s->ntpl; }

void cut_search_free(cut_search *s)
{
    if (!s)
        return;
    cut_costmodel_free(s->model);
    cut_space_free(s->sp);
    cut_hset_free(&s->seen);
    cut_hset_free(&s->in_uni);
    free(s->pop);
    free(s);
}

int cut_search_seen(const cut_search *s) { return (int)s->seen.len; }

int cut_search_model_active(const cut_search *s) { return s->model != NULL; }

double cut_search_epsilon(const cut_search *s)
{
    const cut_search_opts *o = &s->o;
    if (o->random_decay <= 0 || o->random_share_final >= o->random_share)
        return o->random_share;
    double f = (double)s->nobs / o->random_decay;
    return f >= 1 ? o->random_share_final : o->random_share + (o->random_share_final - o->random_share) * f;
}

void cut_search_observe(cut_search *s, const cut_sched *sc, double time_ms, int regs)
{
    cut_hset_add(&s->seen, key_of(s, sc));
    s->nobs++;
    float f[CUT_FEAT_LEN];
    if (s->model && s->sp->features(s->sp, sc, regs, f, CUT_FEAT_LEN) >= 0) {
        cut_costmodel_add(s->model, f, time_ms > 0 ? s->sp->score(s->sp, time_ms) : 0.0);
        s->new_obs++;
    }
    if (!(time_ms > 0))
        return;
    int cap = s->o.population;
    if (s->npop == cap && time_ms >= s->pop[cap - 1].ms)
        return;
    int at = s->npop < cap ? s->npop++ : cap - 1;
    while (at > 0 && s->pop[at - 1].ms > time_ms) {
        s->pop[at] = s->pop[at - 1];
        at--;
    }
    s->pop[at].sc = *sc;
    s->pop[at].ms = time_ms;
}

int cut_search_add_prior_features(cut_search *s, const float *f, double score, int group)
{
    if (!s->model || group == 0)
        return -1;
    cut_costmodel_add_group(s->model, f, score, group);
    s->nprior++;
    s->new_obs++;
    return 0;
}

/* ---- the space as the search sees it: the template spaces, or a recorded universe (replay) ---- */

/* Distance between two schedules of one template: sum over knobs of |log2(1+a) - log2(1+b)|. */
static double knob_distance(const cut_space *sp, const cut_sched *a, const cut_sched *b)
{
    double d = 0;
    for (int i = 0; i < sp->nknobs(sp, a->tpl) && i < CUT_MAX_KNOBS; i++)
        d += fabs(log2(1.0 + CUT_MAX(a->k[i], 0)) - log2(1.0 + CUT_MAX(b->k[i], 0)));
    return d;
}

/* In replay mode a schedule outside the universe is replaced by the nearest member of its template (ties: the
 * first); members are returned as they are. Returns -1 if the universe has no member of that template. */
static int snap(const cut_search *s, cut_sched *c)
{
    if (!s->o.universe || cut_hset_has(&s->in_uni, key_of(s, c)))
        return 0;
    int best = -1;
    double bd = INFINITY;
    for (int i = 0; i < s->o.nuniverse; i++) {
        if (s->o.universe[i].tpl != c->tpl)
            continue;
        double d = knob_distance(s->sp, c, &s->o.universe[i]);
        if (d < bd)
            bd = d, best = i;
    }
    if (best < 0)
        return -1;
    *c = s->o.universe[best];
    return 0;
}

static int random_valid(cut_search *s, cut_sched *out)
{
    if (s->o.universe) {
        if (s->o.nuniverse <= 0)
            return -1;
        *out = s->o.universe[cut_rng_below(&s->rng, (uint32_t)s->o.nuniverse)];
        return 0;
    }
    if (s->ntpl == 0)
        return -1;
    int tpl = s->tpls[cut_rng_below(&s->rng, (uint32_t)s->ntpl)];
    return s->sp->sample_valid(s->sp, tpl, &s->rng, out, 256);
}

/* A child of p (and q, if given and of the same template): crossover, then one or two mutations. 0 if valid. */
static int make_child(cut_search *s, const cut_sched *p, const cut_sched *q, cut_sched *out)
{
    *out = *p;
    if (q && q->tpl == p->tpl)
        cut_space_crossover(s->sp, p, q, &s->rng, out);
    int steps = 1 + (int)cut_rng_below(&s->rng, 2);
    for (int i = 0; i < steps; i++)
        s->sp->mutate(s->sp, &s->rng, out);
    if (s->sp->check(s->sp, out, NULL) != 0)
        return -1;
    return snap(s, out);
}

/* ---- without a model: random schedules and mutations of the best measured ones ---- */

/* Tournament of two over the measured population: the faster wins. */
static const cut_sched *pick_parent(cut_search *s)
{
    int a = (int)cut_rng_below(&s->rng, (uint32_t)s->npop);
    int b = (int)cut_rng_below(&s->rng, (uint32_t)s->npop);
    return &s->pop[a < b ? a : b].sc;
}

static int propose_plain(cut_search *s, int n, cut_sched *out, int random_only)
{
    int got = 0, misses = 0;
    while (got < n && misses < 2000) {
        cut_sched *c = &out[got];
        int ok;
        if (random_only || s->npop == 0 || cut_rng_double(&s->rng) < s->o.random_share)
            ok = random_valid(s, c);
        else
            ok = make_child(s, pick_parent(s), cut_rng_double(&s->rng) < EVO_CROSSOVER ? pick_parent(s) : NULL, c);
        if (ok != 0 || !cut_hset_put(&s->seen, key_of(s, c))) {
            misses++;
            continue;
        }
        got++;
    }
    return got;
}

/* ---- with a model: evolutionary search in model space ---- */

typedef struct scored {
    cut_sched sc;
    float score;
} scored;

static int by_score_desc(const void *pa, const void *pb)
{
    float a = ((const scored *)pa)->score, b = ((const scored *)pb)->score;
    return (a < b) - (a > b);
}

/* Scores v[0..n) with the model (features from the register estimate). -1 if prediction fails. */
static int score_all(cut_search *s, scored *v, int n)
{
    if (n <= 0)
        return 0;
    float *x = cut_xmalloc(sizeof(float) * CUT_FEAT_LEN * (size_t)n);
    float *y = cut_xmalloc(sizeof(float) * (size_t)n);
    char *bad = cut_xcalloc((size_t)n, 1);
    for (int i = 0; i < n; i++)
        if (s->sp->features(s->sp, &v[i].sc, -1, x + (size_t)i * CUT_FEAT_LEN, CUT_FEAT_LEN) < 0) {
            memset(x + (size_t)i * CUT_FEAT_LEN, 0, sizeof(float) * CUT_FEAT_LEN);
            bad[i] = 1;
        }
    int rc = cut_costmodel_predict(s->model, x, n, y);
    for (int i = 0; rc == 0 && i < n; i++)
        v[i].score = (bad[i] || isnan(y[i])) ? -INFINITY : y[i];
    free(bad);
    free(y);
    free(x);
    return rc;
}

/* Tournament of two over a population sorted best-first. */
static const cut_sched *pick_scored(cut_search *s, const scored *pop, int n)
{
    int a = (int)cut_rng_below(&s->rng, (uint32_t)n), b = (int)cut_rng_below(&s->rng, (uint32_t)n);
    return &pop[a < b ? a : b].sc;
}

/* Up to n unseen schedules, best predicted first, from EVO_GENERATIONS generations of model-guided evolution.
 * Marks them seen. Returns how many, or -1 if the model failed. */
static int propose_model(cut_search *s, int n, cut_sched *out)
{
    const int cap = EVO_POPULATION + EVO_RANDOM + EVO_CHILDREN;
    scored *pop = cut_xcalloc((size_t)cap, sizeof *pop);
    cut_hset local = {0}; /* everything that has been in a population this round */
    cut_hset_grow(&local);
    int np = 0, rc = 0;
    for (int i = 0; i < s->npop; i++) /* measured elites seed the population */
        if (cut_hset_put(&local, key_of(s, &s->pop[i].sc)))
            pop[np++].sc = s->pop[i].sc;
    for (int i = 0, misses = 0; i < EVO_RANDOM && misses < 1000;) {
        if (random_valid(s, &pop[np].sc) != 0 || !cut_hset_put(&local, key_of(s, &pop[np].sc))) {
            misses++;
            continue;
        }
        np++, i++;
    }
    /* The final choice is among everything any generation scored: keep a best-unseen list across generations. */
    int nbest = 0;
    scored *best = cut_xcalloc((size_t)(n > 0 ? n : 1), sizeof *best);
    for (int g = 0; rc == 0; g++) {
        if (score_all(s, pop, np) != 0) {
            rc = -1;
            break;
        }
        qsort(pop, (size_t)np, sizeof *pop, by_score_desc);
        for (int i = 0; i < np; i++) {
            if (cut_hset_has(&s->seen, key_of(s, &pop[i].sc)) || !isfinite(pop[i].score))
                continue;
            int dup = 0;
            for (int j = 0; j < nbest && !dup; j++)
                dup = cut_space_equal(s->sp, &best[j].sc, &pop[i].sc);
            if (dup || (nbest == n && pop[i].score <= best[n - 1].score))
                continue;
            int at = nbest < n ? nbest++ : n - 1;
            while (at > 0 && best[at - 1].score < pop[i].score) {
                best[at] = best[at - 1];
                at--;
            }
            best[at] = pop[i];
        }
        if (np > EVO_POPULATION)
            np = EVO_POPULATION;
        if (g == EVO_GENERATIONS || np == 0)
            break;
        int parents = np;
        for (int i = 0, misses = 0; i < EVO_CHILDREN && misses < 2000;) {
            const cut_sched *p = pick_scored(s, pop, parents);
            const cut_sched *q = cut_rng_double(&s->rng) < EVO_CROSSOVER ? pick_scored(s, pop, parents) : NULL;
            if (make_child(s, p, q, &pop[np].sc) != 0 || !cut_hset_put(&local, key_of(s, &pop[np].sc))) {
                misses++;
                continue;
            }
            np++, i++;
        }
    }
    int got = 0;
    for (int i = 0; rc == 0 && i < nbest; i++)
        if (cut_hset_put(&s->seen, key_of(s, &best[i].sc)))
            out[got++] = best[i].sc;
    free(best);
    cut_hset_free(&local);
    free(pop);
    return rc == 0 ? got : -1;
}

/* Trains the model on new observations; drops it (and says so once) if XGBoost fails. 1 if usable. */
static int model_ready(cut_search *s)
{
    if (!s->model || (s->npop == 0 && s->nprior == 0))
        return 0;
    if (s->new_obs > 0) {
        cut_err e;
        if (cut_costmodel_train(s->model, &e) != 0) {
            cut_log(CUT_LOG_WARN, "cutune: cost model failed, searching without it: %s\n", e.msg);
            cut_costmodel_free(s->model);
            s->model = NULL;
            return 0;
        }
        s->new_obs = 0;
    }
    return cut_costmodel_trained(s->model);
}

int cut_search_propose(cut_search *s, int n, cut_sched *out)
{
    if (n <= 0)
        return 0;
    if (!model_ready(s))
        return propose_plain(s, n, out, 0);
    int n_rand = (int)(n * cut_search_epsilon(s) + 0.5);
    int got = propose_model(s, n - n_rand, out);
    if (got < 0) {
        cut_log(CUT_LOG_WARN, "cutune: cost model prediction failed, searching without it: %s\n",
                cut_costmodel_error(s->model));
        cut_costmodel_free(s->model);
        s->model = NULL;
        return propose_plain(s, n, out, 0);
    }
    /* the random share, and whatever the model could not fill */
    return got + propose_plain(s, n - got, out + got, 1);
}
