/* cutune — the works a measurement worker holds (internal; the requests in worker_proto.h: PREPARE_WORK, HOLD_WORK,
 * SELECT_WORK, DROP_WORK), for the GPU worker (worker_work.c: a work's device buffers) and the emulation worker
 * (emu_worker.c: a decoded work) alike. Up to CUT_WP_HOLD_MAX prepared works by id, one of them selected; a
 * PREPARE_WORK's work is held without an id (0: never listed in HELD, never selected again once another is). What a
 * prepared work is, the worker says through cut_wk_hold_ops. */
#ifndef CUTUNE_MEASURE_WORKER_HOLD_H
#define CUTUNE_MEASURE_WORKER_HOLD_H

#include "measure/worker_proto.h"

#include <stdint.h>

typedef struct cut_wk_hold_ops {
    /* Prepares decoded work w (taken over: kept in the state, or freed) into *state (owned by the table from then
     * on). others: how many other works are held. 0; -1 with e; -2 with e when it failed for want of room and others
     * > 0 (the table then drops every other work, decodes the request again and calls once more). */
    int (*load)(void *ctx, cut_work *w, int others, void **state, cut_err *e);
    /* Optional: readies held work state for runs again (SELECT_WORK): 0, or -1 with e (the work is dropped). */
    int (*select)(void *ctx, void *state, cut_err *e);
    /* Frees a state (context_dead: host memory only). */
    void (*free)(void *ctx, void *state, int context_dead);
    void *ctx;
} cut_wk_hold_ops;

typedef struct cut_wk_hold {
    cut_wk_hold_ops ops;
    uint64_t id[CUT_WP_HOLD_MAX]; /* 0 with a state: PREPARE_WORK's work */
    void *state[CUT_WP_HOLD_MAX]; /* NULL: an empty slot */
    int cur;                      /* the selected slot, -1 none */
} cut_wk_hold;

void cut_wk_hold_init(cut_wk_hold *h, const cut_wk_hold_ops *ops);
/* The selected work's state, NULL when none is. */
void *cut_wk_hold_cur(const cut_wk_hold *h);
/* Frees every held work but the selected one (a worker that needs their memory). How many were freed. */
int cut_wk_hold_drop_idle(cut_wk_hold *h);
/* Frees every held work (context_dead: host memory only). */
void cut_wk_hold_free(cut_wk_hold *h, int context_dead);
/* The held works as HELD says them. */
void cut_wk_hold_said(const cut_wk_hold *h, cut_wp_held *out);
/* One request about works: PREPARE_WORK (every held work dropped; reply ACK), HOLD_WORK, SELECT_WORK, DROP_WORK
 * (reply HELD). The reply's type into *reply and its payload appended to b. 0; -1 with e for the worker's ERROR (a
 * malformed request, a work that cannot be prepared: then none is selected); 1 for a frame of another type. */
int cut_wk_hold_request(cut_wk_hold *h, const cut_wp_frame *f, uint32_t *reply, cut_buf *b, cut_err *e);

#endif
