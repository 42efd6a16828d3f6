/* cutune — schedule spaces' generic operations and the strategies behind one propose/observe interface: evolve (the
 * cost-model search of evolve.c), random and exhaustive. */
#include "cutune/search.h"
#include "cutune/strategy.h"
#include "cutune/util.h"
#include "strategy/hset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void cut_space_free(cut_space *sp)
{
    if (!sp)
        return;
    if (sp->destroy)
        sp->destroy(sp);
    free(sp);
}

static int knobs_of(const cut_space *sp, int tpl)
{
    int n = sp->nknobs(sp, tpl);
    return n < 0 ? 0 : n > CUT_MAX_KNOBS ? CUT_MAX_KNOBS : n;
}

uint64_t cut_space_hash(const cut_space *sp, const cut_sched *s)
{
    uint64_t h = cut_fnv1a(CUT_FNV_INIT, &s->tpl, sizeof s->tpl);
    return cut_fnv1a(h, s->k, sizeof s->k[0] * (size_t)knobs_of(sp, s->tpl));
}

int cut_space_equal(const cut_space *sp, const cut_sched *a, const cut_sched *b)
{
    return a->tpl == b->tpl && memcmp(a->k, b->k, sizeof a->k[0] * (size_t)knobs_of(sp, a->tpl)) == 0;
}

void cut_space_crossover(const cut_space *sp, const cut_sched *a, const cut_sched *b, cut_rng *r, cut_sched *out)
{
    *out = *a;
    if (a->tpl != b->tpl)
        return;
    for (int i = 0; i < knobs_of(sp, a->tpl); i++)
        out->k[i] = (cut_rng_next(r) & 1) ? a->k[i] : b->k[i];
}

static const char *const kind_names[] = {"evolve", "random", "exhaustive"};

const char *cut_strategy_kind_name(cut_strategy_kind k)
{
    return (unsigned)k < CUT_ARRAY_LEN(kind_names) ? kind_names[k] : "unknown";
}

int cut_strategy_kind_parse(const char *s, cut_strategy_kind *k, cut_err *e)
{
    for (int i = 0; s && i < (int)CUT_ARRAY_LEN(kind_names); i++)
        if (strcasecmp(s, kind_names[i]) == 0) {
            *k = (cut_strategy_kind)i;
            return 0;
        }
    return cut_err_set(e, "unknown strategy '%s': use evolve (the cost-model search), random or exhaustive",
                       s ? s : "(null)");
}

void cut_strategy_free(cut_strategy *s)
{
    if (!s)
        return;
    if (s->destroy)
        s->destroy(s);
    free(s);
}

/* ---- evolve: cut_search ---- */

static int evolve_propose(cut_strategy *s, int n, cut_sched *out) { return cut_search_propose(s->impl, n, out); }

static void evolve_observe(cut_strategy *s, const cut_sched *sc, double ms, int regs)
{
    cut_search_observe(s->impl, sc, ms, regs);
}

static void evolve_destroy(cut_strategy *s) { cut_search_free(s->impl); }

cut_strategy *cut_strategy_evolve_new(cut_space *sp, const cut_search_opts *o)
{
    cut_strategy *s = cut_xcalloc(1, sizeof *s);
    *s = (cut_strategy){"evolve", cut_search_new_space(sp, o), evolve_propose, evolve_observe, evolve_destroy};
    return s;
}

cut_search *cut_strategy_search(cut_strategy *s) { return s && s->propose == evolve_propose ? s->impl : NULL; }

/* ---- random and exhaustive: a space and what has been seen ---- */

typedef struct plain {
    cut_space *sp;        /* owned */
    cut_rng rng;
    cut_hset seen;
    int tpls[32], ntpl;   /* templates that apply */
    long long next, count; /* exhaustive: the next combination to try, and how many there are */
} plain;

static uint64_t plain_key(const plain *p, const cut_sched *sc)
{
    uint64_t h = cut_space_hash(p->sp, sc);
    return h ? h : 1;
}

static void plain_observe(cut_strategy *s, const cut_sched *sc, double ms, int regs)
{
    (void)ms, (void)regs;
    plain *p = s->impl;
    cut_hset_add(&p->seen, plain_key(p, sc));
}

static void plain_destroy(cut_strategy *s)
{
    plain *p = s->impl;
    cut_space_free(p->sp);
    cut_hset_free(&p->seen);
    free(p);
}

static int random_propose(cut_strategy *s, int n, cut_sched *out)
{
    plain *p = s->impl;
    int got = 0;
    for (int misses = 0; got < n && p->ntpl > 0 && misses < 2000;) {
        int tpl = p->tpls[cut_rng_below(&p->rng, (uint32_t)p->ntpl)];
        if (p->sp->sample_valid(p->sp, tpl, &p->rng, &out[got], 256) != 0 ||
            !cut_hset_put(&p->seen, plain_key(p, &out[got]))) {
            misses++;
            continue;
        }
        got++;
    }
    return got;
}

static int exhaustive_propose(cut_strategy *s, int n, cut_sched *out)
{
    plain *p = s->impl;
    int got = 0;
    for (; got < n && p->next < p->count; p->next++) {
        cut_sched sc;
        memset(&sc, 0, sizeof sc);
        p->sp->nth(p->sp, p->next, &sc);
        if (!p->sp->applies(p->sp, sc.tpl) || p->sp->check(p->sp, &sc, NULL) != 0 ||
            !cut_hset_put(&p->seen, plain_key(p, &sc)))
            continue;
        out[got++] = sc;
    }
    return got;
}

static cut_strategy *plain_new(cut_space *sp, uint64_t seed, const char *name,
                               int (*propose)(cut_strategy *, int, cut_sched *))
{
    plain *p = cut_xcalloc(1, sizeof *p);
    p->sp = sp;
    cut_rng_seed(&p->rng, seed);
    cut_hset_grow(&p->seen);
    for (int t = 0; t < sp->ntpl && p->ntpl < 32; t++)
        if (sp->applies(sp, t))
            p->tpls[p->ntpl++] = t;
    cut_strategy *s = cut_xcalloc(1, sizeof *s);
    *s = (cut_strategy){name, p, propose, plain_observe, plain_destroy};
    return s;
}

cut_strategy *cut_strategy_random_new(cut_space *sp, uint64_t seed)
{
    return plain_new(sp, seed, "random", random_propose);
}

cut_strategy *cut_strategy_exhaustive_new(cut_space *sp, long long max, cut_err *e)
{
    if (!sp->count || !sp->nth) {
        cut_err_set(e, "the %s space cannot be enumerated: use --strategy evolve or random", sp->op);
        cut_space_free(sp);
        return NULL;
    }
    long long count = sp->count(sp);
    if (count < 0 || count > max) {
        cut_err_set(e, "the %s space has %lld knob combinations, more than the %lld an exhaustive search takes: use "
                       "--strategy evolve or random",
                    sp->op, count, max);
        cut_space_free(sp);
        return NULL;
    }
    cut_strategy *s = plain_new(sp, 0, "exhaustive", exhaustive_propose);
    ((plain *)s->impl)->count = count;
    return s;
}
