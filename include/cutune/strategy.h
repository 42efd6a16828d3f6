/* cutune — strategies: what proposes candidates and learns from their measurements, without knowing which op it
 * searches.
 *
 * A workload's schedule space is a cut_space, which its op builds (conv: cut_conv_space_new, GEMM:
 * cut_gemm_space_new, a kernel spec's tunables: cut_kspec_space_new). A schedule is a template index of that space
 * and its integer knobs (cut_sched). A strategy proposes schedules of a space and observes their measurements:
 *   - "evolve": Ansor's method, random and mutated schedules until the XGBoost cost model has data, then evolution
 *     in model space (cutune/search.h, the implementation);
 *   - "random": uniformly drawn valid schedules, never one twice;
 *   - "exhaustive": every valid schedule of a space small enough to enumerate, in order.
 *   - "mcgs": Monte Carlo Graph Search over source moves (cutune/mcgs.h); it searches states, not knob vectors, so its
 *     candidates are tickets (CUT_TPL_TICKET) the task that builds them asks it about. */
#ifndef CUTUNE_STRATEGY_H
#define CUTUNE_STRATEGY_H

#include "cutune/codegen.h"
#include "cutune/common.h"
#include "cutune/devlimits.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cut_space cut_space;

/* One workload's schedule space, as strategies see it. Every function is pure given the rng. */
struct cut_space {
    const char *op;     /* "conv2d", "gemm", "kernel": the cost model's feature layout (a model never mixes ops) */
    void *wl;           /* the op's copy of its workload, owned by the space (destroy frees it) */
    cut_devlimits dev;
    int ntpl;           /* templates: indices 0..ntpl-1 */
    /* Knobs of template tpl (0 for an index outside the space). */
    int (*nknobs)(const cut_space *sp, int tpl);
    /* 1 if template tpl can compute the workload at all. */
    int (*applies)(const cut_space *sp, int tpl);
    /* Draws up to tries samples of template tpl until one is valid: 0 (out set), or -1. */
    int (*sample_valid)(const cut_space *sp, int tpl, cut_rng *r, cut_sched *out, int tries);
    /* Changes one or a few knobs of s in place (the result may be invalid: callers check). */
    void (*mutate)(const cut_space *sp, cut_rng *r, cut_sched *s);
    /* 0 if s is a valid schedule of the space; -1 with a sentence (e may be NULL) otherwise. */
    int (*check)(const cut_space *sp, const cut_sched *s, cut_err *e);
    /* The cost model's features of s (CUT_FEAT_LEN floats; regs from the compiler, -1 unknown): CUT_FEAT_LEN, or -1.
     * NULL: the op has no features, strategies search without a model. */
    int (*features)(const cut_space *sp, const cut_sched *s, int regs, float *out, int cap);
    /* What the model learns from a measured time (higher is better: GFLOP/s, or 1/ms where FLOPs are unknown). */
    double (*score)(const cut_space *sp, double ms);
    /* Optional (NULL: not enumerable): the number of knob combinations of the whole space, and the i-th of them
     * (0 <= i < count; it may be invalid: callers check). */
    long long (*count)(const cut_space *sp);
    void (*nth)(const cut_space *sp, long long i, cut_sched *out);
    /* Frees wl and anything else the space owns (not the struct). */
    void (*destroy)(cut_space *sp);
};

/* Frees the space and the struct itself (NULL is a no-op). */
void cut_space_free(cut_space *sp);
/* Stable hash of a schedule (template + its template's knobs, never the unused tail). */
uint64_t cut_space_hash(const cut_space *sp, const cut_sched *s);
/* 1 if a and b are the same schedule (template and its knobs). */
int cut_space_equal(const cut_space *sp, const cut_sched *a, const cut_sched *b);
/* Uniform crossover of two schedules of one template (out = a when the templates differ). */
void cut_space_crossover(const cut_space *sp, const cut_sched *a, const cut_sched *b, cut_rng *r, cut_sched *out);

/* ---- strategies ---- */

/* A candidate of a strategy over states (MCGS) rather than a space: tpl is CUT_TPL_TICKET and k[0] the ticket, the
 * strategy's handle of one proposed move until it is observed (never a template index, so no space code meets it). */
#define CUT_TPL_TICKET (-1)

typedef struct cut_strategy cut_strategy;
struct cut_strategy {
    const char *name; /* "evolve", "random", "exhaustive", "mcgs" */
    void *impl;
    /* Fills up to n valid schedules never proposed or observed before. Returns how many (0: the space seems
     * exhausted). */
    int (*propose)(cut_strategy *s, int n, cut_sched *out);
    /* A measured schedule: time_ms > 0 valid, <= 0 failed; regs from the compiler or -1. Also marks it seen (a
     * resumed log is fed through here before the first proposal). */
    void (*observe)(cut_strategy *s, const cut_sched *sc, double time_ms, int regs);
    void (*destroy)(cut_strategy *s);
};

/* The strategy names --strategy takes: "evolve" (the default), "random", "exhaustive". */
typedef enum cut_strategy_kind { CUT_STRAT_EVOLVE = 0, CUT_STRAT_RANDOM, CUT_STRAT_EXHAUSTIVE } cut_strategy_kind;
const char *cut_strategy_kind_name(cut_strategy_kind k);
/* -1 with a sentence naming the three for anything else. */
int cut_strategy_kind_parse(const char *s, cut_strategy_kind *k, cut_err *e);

/* Frees the strategy (NULL is a no-op). */
void cut_strategy_free(cut_strategy *s);
/* Random: uniformly drawn valid schedules of sp (a random template that applies, then its sampler), never one twice.
 * Takes ownership of sp. Caller frees with cut_strategy_free. */
cut_strategy *cut_strategy_random_new(cut_space *sp, uint64_t seed);
/* Exhaustive: every valid schedule of sp in enumeration order, never one twice. Takes ownership of sp (freed also on
 * failure). NULL with a sentence when sp cannot be enumerated or has more than max combinations. */
cut_strategy *cut_strategy_exhaustive_new(cut_space *sp, long long max, cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
