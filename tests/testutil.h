/* cutune tests — shared helpers (header-only). */
#ifndef CUTUNE_TESTUTIL_H
#define CUTUNE_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A fresh directory for one test: $CUTUNE_TEST_TMP/<name>.<pid> (or /tmp). Caller frees. */
static inline char *tu_tmpdir(const char *name)
{
    const char *base = getenv("CUTUNE_TEST_TMP");
    if (!base)
        base = "/tmp";
    char *p = malloc(4096);
    snprintf(p, 4096, "%s/%s.%d", base, name, (int)getpid());
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", p, p);
    if (system(cmd) != 0) {
        free(p);
        return NULL;
    }
    return p;
}

/* 1 when the tests should be quick (sanitizer builds): fewer random cases. */
static inline int tu_quick(void)
{
    const char *q = getenv("CUTUNE_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

#endif
