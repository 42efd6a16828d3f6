/* cutune tests — what the tests that run Triton's interpreter need (header-only). */
#ifndef CUTUNE_TRITON_TESTUTIL_H
#define CUTUNE_TRITON_TESTUTIL_H

#include "cutune/util.h"

#include <stdio.h>
#include <stdlib.h>

/* The Python, the worker script and the fixtures folder ctest sets ($CUTUNE_TRITON_PYTHON, $CUTUNE_TRITON_WORKER,
 * $CUTUNE_FIXTURES), when that Python imports triton and numpy: 0. Else 77 (ctest's "skipped") after saying why. */
static inline int tu_triton_env(const char **python, const char **worker, const char **fixtures)
{
    *python = getenv("CUTUNE_TRITON_PYTHON");
    *worker = getenv("CUTUNE_TRITON_WORKER");
    *fixtures = getenv("CUTUNE_FIXTURES");
    if (!*python || !*worker || !*fixtures) {
        printf("skipped: CUTUNE_TRITON_PYTHON, CUTUNE_TRITON_WORKER and CUTUNE_FIXTURES are set by ctest\n");
        return 77;
    }
    char *argv[] = {(char *)*python, "-c", "import triton, numpy", NULL};
    cut_err e = {{0}};
    if (cut_run_tool(argv, NULL, NULL, &e) != 0) {
        printf("skipped: %s cannot import triton and numpy (scripts/setup-deps.sh makes .venv-triton)%s%s\n", *python,
               e.msg[0] ? ": " : "", e.msg);
        return 77;
    }
    return 0;
}

#endif
