/* cutune — the works a runner holds (internal): up to CUT_HELD_MAX deep copies, each with an id the runner's worker
 * knows it by, least recently used first to go. Switching between works the runner holds (a user kernel's spec sizes
 * and its check sizes, src/pipeline/kcheck.c) is then a select: nothing is written or sent again.
 *
 * A work is found by cut_work_same, a full comparison with the held copy (no hash that could collide: a changed work
 * is never taken for a held one); ids are never reused within a runner, so an id names one content for good. */
#ifndef CUTUNE_MEASURE_HELD_H
#define CUTUNE_MEASURE_HELD_H

#include "cutune/work.h"

#include <stdint.h>

/* Two: the spec's sizes and the check sizes; a third work evicts the one used least recently. */
#define CUT_HELD_MAX 2

typedef struct cut_held_work {
    cut_work work; /* the runner's own copy (owns_data) */
    uint64_t id;   /* 0: the slot is empty */
    uint64_t used; /* the held clock when last selected */
    char *line;    /* the runner's own: its prepare request for this work (malloc'd; freed with the slot) */
} cut_held_work;

typedef struct cut_held {
    cut_held_work slot[CUT_HELD_MAX];
    uint64_t next_id, clock;
    int cur; /* the selected slot, -1 none */
} cut_held;

void cut_held_init(cut_held *h);
/* The slot holding a work cut_work_same as w, selected; -1 when none does. */
int cut_held_find(cut_held *h, const cut_work *w);
/* The slot for a new work: an empty one, else the least recently used, which evict(ctx, slot) is told of before it
 * is freed. The slot gets *copy (taken over, *copy cleared) and a fresh id, and is selected. */
int cut_held_put(cut_held *h, cut_work *copy, void (*evict)(void *ctx, cut_held_work *), void *ctx);
/* Frees slot i (its work and line) and empties it; the selection is dropped when it was i. */
void cut_held_drop(cut_held *h, int i);
void cut_held_free(cut_held *h);
/* The selected work, NULL when none. */
const cut_held_work *cut_held_cur(const cut_held *h);

#endif
