/* cutune — random + evolutionary search. */
#include "cutune/search.h"
#include "cutune/costmodel.h"
#include "cutune/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct member {
    cut_sched sc;
    double ms;
} member;

struct cut_search {
    cut_conv conv;
    cut_devlimits dev;
    cut_search_opts o;
    cut_rng rng;
    /* open-addressing set of schedule hashes (0 = empty slot) */
    uint64_t *set;
    size_t set_cap, set_len;
    member *pop; /* sorted ascending by ms, at most o.population */
    int npop;
    int ntpl;
    int tpls[32];
    cut_costmodel *model; /* NULL: plain evolutionary search */
    int new_obs;          /* observations since the last training */
};

void cut_search_opts_default(cut_search_opts *o)
{
    o->seed = 1;
    o->random_share = 0.3;
    o->population = 16;
    o->tpl_mask = 0;
    o->use_model = 1;
    o->oversample = 8;
}

static uint64_t key_of(const cut_sched *sc)
{
    uint64_t h = cut_sched_hash(sc);
    return h ? h : 1;
}

static int set_has(const cut_search *s, uint64_t h)
{
    for (size_t i = h & (s->set_cap - 1);; i = (i + 1) & (s->set_cap - 1)) {
        if (s->set[i] == 0)
            return 0;
        if (s->set[i] == h)
            return 1;
    }
}

static void set_add(cut_search *s, uint64_t h);

static void set_grow(cut_search *s)
{
    uint64_t *old = s->set;
    size_t oldcap = s->set_cap;
    s->set_cap = oldcap ? oldcap * 2 : 1024;
    s->set = cut_xcalloc(s->set_cap, sizeof *s->set);
    s->set_len = 0;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i])
            set_add(s, old[i]);
    free(old);
}

static void set_add(cut_search *s, uint64_t h)
{
    if ((s->set_len + 1) * 2 > s->set_cap)
        set_grow(s);
    size_t i = h & (s->set_cap - 1);
    while (s->set[i] != 0) {
        if (s->set[i] == h)
            return;
        i = (i + 1) & (s->set_cap - 1);
    }
    s->set[i] = h;
    s->set_len++;
}

cut_search *cut_search_new(const cut_conv *c, const cut_devlimits *d, const cut_search_opts *o)
{
    cut_search *s = cut_xcalloc(1, sizeof *s);
    s->conv = *c;
    s->dev = *d;
    if (o)
        s->o = *o;
    else
        cut_search_opts_default(&s->o);
    if (s->o.population < 2)
        s->o.population = 2;
    if (s->o.oversample < 1)
        s->o.oversample = 1;
    if (s->o.use_model) {
        cut_err e;
        s->model = cut_costmodel_new(&e);
        if (!s->model)
            fprintf(stderr, "cutune: cost model unavailable, searching without it: %s\n", e.msg);
    }
    cut_rng_seed(&s->rng, s->o.seed);
    set_grow(s);
    s->pop = cut_xcalloc((size_t)s->o.population, sizeof *s->pop);
    for (int t = 0; t < cut_template_count() && s->ntpl < 32; t++) {
        if (s->o.tpl_mask && !(s->o.tpl_mask & (1 << t)))
            continue;
        if (cut_template_get(t)->applies(c))
            s->tpls[s->ntpl++] = t;
    }
    return s;
}

void cut_search_free(cut_search *s)
{
    if (!s)
        return;
    cut_costmodel_free(s->model);
    free(s->set);
    free(s->pop);
    free(s);
}

int cut_search_seen(const cut_search *s) { return (int)s->set_len; }

int cut_search_model_active(const cut_search *s) { return s->model != NULL; }

void cut_search_observe(cut_search *s, const cut_sched *sc, double time_ms, int regs)
{
    set_add(s, key_of(sc));
    if (s->model && cut_costmodel_add_sched(s->model, &s->conv, &s->dev, sc, regs,
                                            time_ms > 0 ? cut_conv_gflops(&s->conv, time_ms) : 0.0, NULL) == 0)
        s->new_obs++;
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

/* Tournament of two over the population: the faster wins. */
static const cut_sched *pick_parent(cut_search *s)
{
    int a = (int)cut_rng_below(&s->rng, (uint32_t)s->npop);
    int b = (int)cut_rng_below(&s->rng, (uint32_t)s->npop);
    return &s->pop[a < b ? a : b].sc;
}

static int random_valid(cut_search *s, cut_sched *out)
{
    if (s->ntpl == 0)
        return -1;
    int tpl = s->tpls[cut_rng_below(&s->rng, (uint32_t)s->ntpl)];
    return cut_sched_sample_valid(&s->conv, &s->dev, tpl, &s->rng, out, 256);
}

static int evolve(cut_search *s, cut_sched *out)
{
    const cut_sched *p = pick_parent(s);
    *out = *p;
    if (s->npop >= 2 && cut_rng_double(&s->rng) < 0.3) {
        const cut_sched *q = pick_parent(s);
        if (q->tpl == p->tpl)
            cut_sched_crossover(p, q, &s->rng, out);
    }
    const cut_template *t = cut_template_get(out->tpl);
    int steps = 1 + (int)cut_rng_below(&s->rng, 2);
    for (int i = 0; i < steps; i++)
        t->mutate(&s->conv, &s->dev, &s->rng, out);
    return cut_sched_check(&s->conv, out, &s->dev, NULL);
}

/* Draws one candidate (random or evolved) that is valid and neither seen nor in the first npool of pool. */
static int draw(cut_search *s, cut_sched *c, const cut_sched *pool, int npool, int random_only)
{
    int ok = (random_only || s->npop == 0 || cut_rng_double(&s->rng) < s->o.random_share) ? random_valid(s, c)
                                                                                        : evolve(s, c);
    if (ok != 0 || set_has(s, key_of(c)))
        return -1;
    for (int i = 0; i < npool; i++)
        if (cut_sched_equal(&pool[i], c))
            return -1;
    return 0;
}

static int propose_plain(cut_search *s, int n, cut_sched *out, int random_only)
{
    int got = 0, misses = 0;
    while (got < n && misses < 2000) {
        if (draw(s, &out[got], NULL, 0, random_only) != 0) {
            misses++;
            continue;
        }
        set_add(s, key_of(&out[got]));
        got++;
    }
    return got;
}

/* Trains the model on new observations; drops it (and says so once) if XGBoost fails. 1 if usable. */
static int model_ready(cut_search *s)
{
    if (!s->model || s->npop == 0)
        return 0;
    if (s->new_obs > 0) {
        cut_err e;
        if (cut_costmodel_train(s->model, &e) != 0) {
            fprintf(stderr, "cutune: cost model failed, searching without it: %s\n", e.msg);
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
    int n_rand = (int)(n * s->o.random_share + 0.5), n_model = n - n_rand;
    int cap = n_model * s->o.oversample, np = 0, misses = 0;
    cut_sched *pool = cut_xcalloc((size_t)(cap ? cap : 1), sizeof *pool);
    int *order = cut_xcalloc((size_t)(cap ? cap : 1), sizeof *order);
    /* The pool is drawn from the usual mix but only the model's best are marked seen: the rest stay proposable. */
    while (np < cap && misses < 4000) {
        if (draw(s, &pool[np], pool, np, 0) != 0)
            misses++;
        else
            np++;
    }
    cut_costmodel_rank(s->model, &s->conv, &s->dev, pool, np, order); /* order is the identity on failure */
    int got = 0;
    for (int i = 0; i < np && got < n_model; i++) {
        out[got] = pool[order[i]];
        set_add(s, key_of(&out[got]));
        got++;
    }
    got += propose_plain(s, n - got, out + got, 1);
    free(pool);
    free(order);
    return got;
}
