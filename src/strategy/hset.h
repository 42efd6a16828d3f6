/* cutune — an open-addressing set of 64-bit hashes (0 never stored): what a strategy has seen (internal). */
#ifndef CUTUNE_STRATEGY_HSET_H
#define CUTUNE_STRATEGY_HSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct cut_hset {
    uint64_t *slot; /* cap slots, 0 = empty; owned */
    size_t cap, len;
} cut_hset;

/* 1 if h is in s. s must have been grown once (cut_hset_grow). */
int cut_hset_has(const cut_hset *s, uint64_t h);
/* Doubles the table (the first call allocates 1024 slots). */
void cut_hset_grow(cut_hset *s);
/* Adds h; returns 1 if it was new. */
int cut_hset_put(cut_hset *s, uint64_t h);
void cut_hset_add(cut_hset *s, uint64_t h);
/* Frees the slots; s is empty and reusable. */
void cut_hset_free(cut_hset *s);

#endif
