/* cutune — random + evolutionary search. */
#include "cutune/search.h"
#include "cutune/util.h"

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
};

void cut_search_opts_default(cut_search_opts *o)
{
    o->seed = 1;
    o->random_share = 0.3;
    o->population = 16;
    o->tpl_mask = 0;
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
    free(s->set);
    free(s->pop);
    free(s);
}

int cut_search_seen(const cut_search *s) { return (int)s->set_len; }

void cut_search_observe(cut_search *s, const cut_sched *sc, double time_ms)
{
    set_add(s, key_of(sc));
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

int cut_search_propose(cut_search *s, int n, cut_sched *out)
{
    int got = 0;
    int misses = 0;
    while (got < n && misses < 2000) {
        cut_sched c;
        int ok;
        if (s->npop == 0 || cut_rng_double(&s->rng) < s->o.random_share)
            ok = random_valid(s, &c);
        else
            ok = evolve(s, &c);
        uint64_t h = key_of(&c);
        if (ok != 0 || set_has(s, h)) {
            misses++;
            continue;
        }
        set_add(s, h);
        out[got++] = c;
    }
    return got;
}
