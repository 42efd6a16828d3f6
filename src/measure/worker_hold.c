/* cutune — the works a measurement worker holds (worker_hold.h). */
#include "measure/worker_hold.h"

#include <stdio.h>
#include <string.h>

void cut_wk_hold_init(cut_wk_hold *h, const cut_wk_hold_ops *ops)
{
    memset(h, 0, sizeof *h);
    h->ops = *ops;
    h->cur = -1;
}

void *cut_wk_hold_cur(const cut_wk_hold *h)
{
    return h->cur >= 0 ? h->state[h->cur] : NULL;
}

static void drop(cut_wk_hold *h, int i, int context_dead)
{
    if (!h->state[i])
        return;
    h->ops.free(h->ops.ctx, h->state[i], context_dead);
    h->state[i] = NULL;
    h->id[i] = 0;
    if (h->cur == i)
        h->cur = -1;
}

int cut_wk_hold_drop_idle(cut_wk_hold *h)
{
    int n = 0;
    for (int i = 0; i < CUT_WP_HOLD_MAX; i++)
        if (h->state[i] && i != h->cur) {
            drop(h, i, 0);
            n++;
        }
    return n;
}

void cut_wk_hold_free(cut_wk_hold *h, int context_dead)
{
    for (int i = 0; i < CUT_WP_HOLD_MAX; i++)
        drop(h, i, context_dead);
}

void cut_wk_hold_said(const cut_wk_hold *h, cut_wp_held *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < CUT_WP_HOLD_MAX; i++)
        if (h->state[i] && h->id[i])
            out->id[out->n++] = h->id[i];
    if (h->cur >= 0)
        out->selected = h->id[h->cur];
}

/* The slot of held work id (>= 1), -1 when none. */
static int find(const cut_wk_hold *h, uint64_t id)
{
    for (int i = 0; i < CUT_WP_HOLD_MAX; i++)
        if (h->state[i] && h->id[i] == id)
            return i;
    return -1;
}

static int count(const cut_wk_hold *h)
{
    int n = 0;
    for (int i = 0; i < CUT_WP_HOLD_MAX; i++)
        n += h->state[i] != NULL;
    return n;
}

/* The work of PREPARE_WORK (id 0) or HOLD_WORK into *w (owned; freed on failure). */
static int decode(const cut_wp_frame *f, uint64_t *id, cut_work *w, cut_err *e)
{
    if (f->type == CUT_WP_PREPARE_WORK) {
        *id = 0;
        return cut_wp_work_decode(f, w, e);
    }
    return cut_wp_hold_decode(f, id, w, e);
}

/* PREPARE_WORK (every held work dropped first) or HOLD_WORK (a work of the same id and PREPARE_WORK's replaced):
 * the work prepared into a free slot and selected. A malformed request changes nothing; a failure after it leaves
 * none selected. */
static int take(cut_wk_hold *h, const cut_wp_frame *f, cut_err *e)
{
    uint64_t id;
    cut_work w;
    if (decode(f, &id, &w, e) != 0)
        return -1;
    h->cur = -1;
    for (int i = 0; i < CUT_WP_HOLD_MAX; i++)
        if (id == 0 || h->id[i] == id || h->id[i] == 0)
            drop(h, i, 0);
    int at = -1;
    for (int i = CUT_WP_HOLD_MAX - 1; i >= 0; i--)
        if (!h->state[i])
            at = i;
    if (at < 0) {
        cut_work_free(&w);
        return cut_err_set(e, "worker: HOLD_WORK of work %llu while it holds %d works (at most %d): drop one first",
                           (unsigned long long)id, CUT_WP_HOLD_MAX, CUT_WP_HOLD_MAX);
    }
    const int others = count(h);
    void *st = NULL;
    int rc = h->ops.load(h->ops.ctx, &w, others, &st, e);
    if (rc == -2 && others > 0) {
        /* no room beside the others: they go (the runner sends them again when it selects them) */
        fprintf(stderr, "cutune worker: %s; dropping the %d other work%s held and trying again\n", e->msg, others,
                others == 1 ? "" : "s");
        cut_wk_hold_free(h, 0);
        if (decode(f, &id, &w, e) != 0)
            return -1;
        rc = h->ops.load(h->ops.ctx, &w, 0, &st, e);
    }
    if (rc != 0)
        return -1;
    h->state[at] = st;
    h->id[at] = id;
    h->cur = at;
    return 0;
}

/* SELECT_WORK: the held work selected (PREPARE_WORK's dropped), or none when the worker does not hold it. */
static int select_work(cut_wk_hold *h, uint64_t id, cut_err *e)
{
    const int i = find(h, id);
    h->cur = -1;
    if (i < 0)
        return 0;
    for (int j = 0; j < CUT_WP_HOLD_MAX; j++)
        if (h->state[j] && h->id[j] == 0)
            drop(h, j, 0);
    if (h->ops.select && h->ops.select(h->ops.ctx, h->state[i], e) != 0) {
        drop(h, i, 0);
        return cut_err_wrap(e, "worker: selecting held work %llu", (unsigned long long)id);
    }
    h->cur = i;
    return 0;
}

int cut_wk_hold_request(cut_wk_hold *h, const cut_wp_frame *f, uint32_t *reply, cut_buf *b, cut_err *e)
{
    uint64_t id = 0;
    switch (f->type) {
    case CUT_WP_PREPARE_WORK:
    case CUT_WP_HOLD_WORK:
        if (take(h, f, e) != 0)
            return -1;
        break;
    case CUT_WP_SELECT_WORK:
        if (cut_wp_id_decode(f, f->type, &id, e) != 0 || select_work(h, id, e) != 0)
            return -1;
        break;
    case CUT_WP_DROP_WORK:
        if (cut_wp_id_decode(f, f->type, &id, e) != 0)
            return -1;
        if (find(h, id) >= 0)
            drop(h, find(h, id), 0);
        break;
    default:
        return 1;
    }
    *reply = f->type == CUT_WP_PREPARE_WORK ? CUT_WP_ACK : CUT_WP_HELD;
    if (*reply == CUT_WP_HELD) {
        cut_wp_held said;
        cut_wk_hold_said(h, &said);
        cut_wp_held_encode(&said, b);
    }
    return 0;
}
