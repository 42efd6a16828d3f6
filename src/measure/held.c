/* cutune — the works a runner holds (held.h). */
#include "measure/held.h"

#include <stdlib.h>
#include <string.h>

void cut_held_init(cut_held *h)
{
    memset(h, 0, sizeof *h);
    h->cur = -1;
}

static void select_slot(cut_held *h, int i)
{
    h->slot[i].used = ++h->clock;
    h->cur = i;
}

int cut_held_find(cut_held *h, const cut_work *w)
{
    for (int i = 0; i < CUT_HELD_MAX; i++)
        if (h->slot[i].id && cut_work_same(&h->slot[i].work, w)) {
            select_slot(h, i);
            return i;
        }
    return -1;
}

int cut_held_put(cut_held *h, cut_work *copy, void (*evict)(void *ctx, cut_held_work *), void *ctx)
{
    int at = 0;
    for (int i = 0; i < CUT_HELD_MAX; i++) {
        if (!h->slot[i].id) {
            at = i;
            break;
        }
        if (h->slot[i].used < h->slot[at].used)
            at = i;
    }
    if (h->slot[at].id && evict)
        evict(ctx, &h->slot[at]);
    cut_held_drop(h, at);
    h->slot[at].work = *copy;
    memset(copy, 0, sizeof *copy);
    h->slot[at].id = ++h->next_id;
    select_slot(h, at);
    return at;
}

void cut_held_drop(cut_held *h, int i)
{
    cut_work_free(&h->slot[i].work);
    free(h->slot[i].line);
    memset(&h->slot[i], 0, sizeof h->slot[i]);
    if (h->cur == i)
        h->cur = -1;
}

void cut_held_free(cut_held *h)
{
    for (int i = 0; i < CUT_HELD_MAX; i++)
        cut_held_drop(h, i);
}

const cut_held_work *cut_held_cur(const cut_held *h)
{
    return h->cur >= 0 ? &h->slot[h->cur] : NULL;
}
