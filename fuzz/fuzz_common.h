/* cutune fuzz targets — shared invariant check and comparisons (header-only). */
#ifndef CUTUNE_FUZZ_COMMON_H
#define CUTUNE_FUZZ_COMMON_H

#include "cutune/workload.h"

#include <stdio.h>
#include <stdlib.h>

/* An invariant of the code under test: a violation aborts, which libFuzzer reports as a crash. */
#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);                               \
            abort();                                                                                                   \
        }                                                                                                              \
    } while (0)

static inline int conv_eq(const cut_conv *a, const cut_conv *b) { return cut_conv_equal(a, b); }

#endif
