/* cutune tests — the start of a GPU test (header-only). */
#ifndef CUTUNE_GPU_TESTUTIL_H
#define CUTUNE_GPU_TESTUTIL_H

#include "cutune/gpu.h"

#include <stdio.h>
#include <stdlib.h>

/* Checks that the worker binary ($CUTUNE_BIN) and GPU 0 are there and fills *info. Returns -1 to go on, else the
 * exit code: 77 (skip, with the reason printed) or 1 (the GPU is there but cannot be queried). */
static inline int tu_gpu_start(cut_gpu_info *info)
{
    const char *bin = getenv("CUTUNE_BIN");
    if (!bin || !*bin) {
        printf("skipping: CUTUNE_BIN (the cutune binary, used as the worker) is not set\n");
        return 77;
    }
    cut_err e = {{0}};
    int n = cut_gpu_init(&e);
    if (n <= 0) {
        printf("skipping: no GPU here (%s)\n", n < 0 ? e.msg : "the driver reports no devices");
        return 77;
    }
    if (cut_gpu_query(0, info, &e) != 0) {
        printf("cut_gpu_query: %s\n", e.msg);
        return 1;
    }
    printf("GPU 0: %s sm_%d%d %s\n", info->name, info->sm_major, info->sm_minor, info->uuid);
    return -1;
}

#endif
