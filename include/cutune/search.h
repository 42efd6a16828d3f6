/* cutune — search over a workload's schedule space, never proposing a schedule twice: random sampling and
 * mutation/crossover of the best measured schedules until the cost model has data, then Ansor's evolutionary
 * search in model space (the model's score is the fitness) plus a decaying share of random schedules. */
#ifndef CUTUNE_SEARCH_H
#define CUTUNE_SEARCH_H

#include "cutune/common.h"
#include "cutune/gemm.h"
#include "cutune/space.h"
#include "cutune/workload.h"

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

/* Creates a search for c under the device limits d. Caller frees with cut_search_free. */
cut_search *cut_search_new(const cut_conv *c, const cut_devlimits *d, const cut_search_opts *o);
/* Creates a search over the GEMM template registry (cutune/gemm_space.h) for g under d: every template that
 * applies to g (and is in o->tpl_mask, a bit per registry index, when that is not 0); the cost model learns
 * cut_features_gemm. Replay (o->universe) works as for conv. Caller frees with cut_search_free. */
cut_search *cut_search_new_gemm(const cut_gemm *g, const cut_devlimits *d, const cut_search_opts *o);
/* Templates the search draws from (0: none applies, nothing can be proposed). */
int cut_search_templates(const cut_search *s);
void cut_search_free(cut_search *s);
/* Reports a measured schedule: time_ms > 0 for a valid measurement, <= 0 for a failed one; regs from the
 * compiler or -1. Also marks it seen and feeds the cost model. */
void cut_search_observe(cut_search *s, const cut_sched *sc, double time_ms, int regs);
/* Conv searches only (a GEMM search returns -1). Gives the cost model a measured trial of another workload c (a prior, e.g. the other cases of a list): group
 * (!= 0) names that workload. It is not marked seen and does not enter the population. Returns -1 (and ignores it)
 * without a model, for group 0 or a schedule without features. With a prior the model guides the first round. */
int cut_search_add_prior(cut_search *s, const cut_conv *c, const cut_sched *sc, double time_ms, int regs, int group);
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

#ifdef __cplusplus
}
#endif

#endif
