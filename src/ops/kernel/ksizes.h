/* cutune — a kernel spec's second size set ("check_sizes", include/cutune/kspec.h), the parser's part (internal). */
#ifndef CUTUNE_KERNEL_KSIZES_H
#define CUTUNE_KERNEL_KSIZES_H

#include "cutune/kspec.h"

/* "check_sizes" of the spec object root (a cJSON *, after "sizes" is read): absent, nothing (has_check_sizes 0);
 * else an object giving every size of "sizes" an integer from 1 to 1e12, into k->check_sizes in the order of
 * k->sizes. 0, or -1 with one sentence naming the field ("check_sizes.ROWS: must be an integer from 1 to 1e12",
 * "check_sizes: 'ROW' is not a size of the spec (its sizes: ROWS, COLS)", "check_sizes: lacks COLS (give every size
 * of \"sizes\")"). Resolving the spec there is the caller's. */
int cut_ks_get_check_sizes(const void *root, cut_kspec *k, cut_err *e);

#endif
