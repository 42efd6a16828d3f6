/* cutune — search over a workload's schedule space: random sampling plus an evolutionary step
 * (mutation and crossover of the best measured schedules), never proposing a schedule twice. The learned cost
 * model of the next issue plugs in as a ranking of the proposals. */
#ifndef CUTUNE_SEARCH_H
#define CUTUNE_SEARCH_H

#include "cutune/common.h"
#include "cutune/space.h"
#include "cutune/workload.h"

typedef struct cut_search_opts {
    uint64_t seed;
    double random_share; /* share of random proposals once the population exists (epsilon); default 0.3 */
    int population;      /* best measured schedules kept as parents; default 16 */
    int tpl_mask;        /* bit i set: template i may be used; 0 = all that apply */
    int use_model;       /* 1 (default): rank evolutionary proposals with the XGBoost cost model (costmodel.h) */
    int oversample;      /* model-ranked pool size per chosen proposal; default 8 */
} cut_search_opts;
void cut_search_opts_default(cut_search_opts *o);

typedef struct cut_search cut_search;

/* Creates a search for c under the device limits d. Caller frees with cut_search_free. */
cut_search *cut_search_new(const cut_conv *c, const cut_devlimits *d, const cut_search_opts *o);
void cut_search_free(cut_search *s);
/* Reports a measured schedule: time_ms > 0 for a valid measurement, <= 0 for a failed one; regs from the
 * compiler or -1. Also marks it seen and feeds the cost model. */
void cut_search_observe(cut_search *s, const cut_sched *sc, double time_ms, int regs);
/* Fills up to n new valid schedules never seen or proposed before. Returns how many (0 when the space seems
 * exhausted). Once the model has data: (1 - random_share)·n come from a pool of oversample× as many evolutionary
 * candidates ranked by the model (retrained first if new observations arrived), the rest are fresh random
 * schedules (Ansor's epsilon-greedy). */
int cut_search_propose(cut_search *s, int n, cut_sched *out);
/* Number of distinct schedules seen (observed or proposed). */
int cut_search_seen(const cut_search *s);
/* 1 while the cost model is in use (it is dropped, with one message on stderr, if XGBoost fails). */
int cut_search_model_active(const cut_search *s);

#endif
