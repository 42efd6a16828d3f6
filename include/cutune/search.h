/* cutune — search over a workload's schedule space, never proposing a schedule twice: random sampling and
 * mutation/crossover of the best measured schedules until the cost model has data, then Ansor's evolutionary
 * search in model space (the model's score is the fitness) plus a decaying share of random schedules. */
#ifndef CUTUNE_SEARCH_H
#define CUTUNE_SEARCH_H

#include "cutune/common.h"
#include "cutune/strategy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cut_search_opts {
    uint64_t seed;
    double random_share;       /* epsilon: share of random proposals per round at the start; default 0.3 */
    double random_share_final; /* epsilon after random_decay observations (linear in between); default 0.05 */
    int random_decay;          /* default 256; 0: epsilon stays random_share */
    int population;            /* best measured schedules kept as parents; default 32 */
    int tpl_mask;              /* bit i set: template i may be used; 0 = all that apply */
    int use_model;             /* 1 (default): evolve proposals in model space (costmodel.h) */
    /* Replay: when set, proposals are drawn from these schedules only (random: a uniform member; a mutation or
     * crossover: the member nearest to the child in log2 knob distance). The caller keeps them alive. */
    const cut_sched *universe;
    int nuniverse;
} cut_search_opts;
void cut_search_opts_default(cut_search_opts *o);

typedef struct cut_search cut_search;

/* Creates a search over the schedule space sp (cutune/strategy.h), taking ownership of it: every template of sp
 * that applies (and is in o->tpl_mask, a bit per template index, when that is not 0); the cost model learns sp's
 * features (none when sp has no features). o NULL: the defaults. Caller frees with cut_search_free. The ops' own
 * constructors: cut_search_new (conv, cutune/space.h), cut_search_new_gemm (cutune/gemm_space.h). */
cut_search *cut_search_new_space(cut_space *sp, const cut_search_opts *o);
/* The space the search searches (owned by the search). */
const cut_space *cut_search_space(const cut_search *s);
/* Templates the search draws from (0: none applies, nothing can be proposed). */
int cut_search_templates(const cut_search *s);
void cut_search_free(cut_search *s);
/* Reports a measured schedule: time_ms > 0 for a valid measurement, <= 0 for a failed one; regs from the
 * compiler or -1. Also marks it seen and feeds the cost model. */
void cut_search_observe(cut_search *s, const cut_sched *sc, double time_ms, int regs);
/* Gives the cost model a measured trial of another workload (a prior, e.g. the other cases of a list): its
 * features f (CUT_FEAT_LEN floats, computed by the same op for that workload) and score (sp->score of its time, 0
 * for a failed trial); group (!= 0) names that workload. It is not marked seen and does not enter the population.
 * Returns -1 (and ignores it) without a model or for group 0. With a prior the model guides the first round. */
int cut_search_add_prior_features(cut_search *s, const float *f, double score, int group);
/* Fills up to n new valid schedules never seen or proposed before. Returns how many (0 when the space seems
 * exhausted). Once the model has data: a share epsilon (cut_search_epsilon) of fresh random schedules, and the
 * best-scored unseen schedules of a few generations of evolution whose fitness is the model's score, started from
 * the best measured schedules plus random ones. */
int cut_search_propose(cut_search *s, int n, cut_sched *out);
/* Number of distinct schedules seen (observed or proposed). */
int cut_search_seen(const cut_search *s);
/* The current share of random proposals (decays with the number of observations). */
double cut_search_epsilon(const cut_search *s);
/* 1 while the cost model is in use (it is dropped, with one warning through the log, if XGBoost fails). */
int cut_search_model_active(const cut_search *s);

/* The evolutionary strategy (cutune/strategy.h) over sp, taking ownership of it: cut_search behind propose/observe.
 * Caller frees with cut_strategy_free. */
cut_strategy *cut_strategy_evolve_new(cut_space *sp, const cut_search_opts *o);
/* The search behind an evolve strategy (NULL for another strategy): for callers that feed it priors. */
cut_search *cut_strategy_search(cut_strategy *s);

#ifdef __cplusplus
}
#endif

#endif
