/* cutune — the seen-set of strategies (see strategy/hset.h). */
#include "strategy/hset.h"
#include "cutune/util.h"

#include <stdlib.h>
#include <string.h>

int cut_hset_has(const cut_hset *s, uint64_t h)
{
    for (size_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (s->slot[i] == 0)
            return 0;
        if (s->slot[i] == h)
            return 1;
    }
}

void cut_hset_grow(cut_hset *s)
{
    uint64_t *old = s->slot;
    size_t oldcap = s->cap;
    s->cap = oldcap ? oldcap * 2 : 1024;
    s->slot = cut_xcalloc(s->cap, sizeof *s->slot);
    s->len = 0;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i])
            cut_hset_add(s, old[i]);
    free(old);
}

/* Adds h; returns 1 if it was new. */
int cut_hset_put(cut_hset *s, uint64_t h)
{
    if (!s->slot || (s->len + 1) * 2 > s->cap)
        cut_hset_grow(s);
    size_t i = h & (s->cap - 1);
    while (s->slot[i] != 0) {
        if (s->slot[i] == h)
            return 0;
        i = (i + 1) & (s->cap - 1);
    }
    s->slot[i] = h;
    s->len++;
    return 1;
}

void cut_hset_add(cut_hset *s, uint64_t h) { (void)cut_hset_put(s, h); }

void cut_hset_free(cut_hset *s)
{
    free(s->slot);
    memset(s, 0, sizeof *s);
}
