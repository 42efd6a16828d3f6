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
} cut_search_opts;
void cut_search_opts_default(cut_search_opts *o);

typedef struct cut_search cut_search;

/* Creates a search for c under the device limits d. Caller frees with cut_search_free. */
cut_search *cut_search_new(const cut_conv *c, const cut_devlimits *d, const cut_search_opts *o);
void cut_search_free(cut_search *s);
/* Reports a measured schedule: time_ms > 0 for a valid measurement, <= 0 for a failed one. Also marks it seen. */
void cut_search_observe(cut_search *s, const cut_sched *sc, double time_ms);
/* Fills up to n new valid schedules never seen or proposed before. Returns how many (0 when the space seems
 * exhausted). */
int cut_search_propose(cut_search *s, int n, cut_sched *out);
/* Number of distinct schedules seen (observed or proposed). */
int cut_search_seen(const cut_search *s);

#endif
