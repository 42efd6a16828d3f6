/* cutune — internal: the measurement worker's lookup with its inputs given, so that a test sets the order without
 * touching the environment or the install folders (cut_worker_path in cutune/measure.h is the public entry). */
#ifndef CUTUNE_MEASURE_LOCATE_H
#define CUTUNE_MEASURE_LOCATE_H

#include "cutune/common.h"

#include <stddef.h>

/* env: the value of $CUTUNE_WORKER (NULL or "": unset); when set it wins, and a path that is not an executable
 * file is an error (no fallback: the caller asked for that one). Else the first of cands[0..ncand) (NULL entries
 * skipped) that is an executable file. Fills buf (n bytes); -1 with a sentence naming CUTUNE_WORKER and every path
 * tried when none is found. */
int cut_worker_path_search(const char *env, const char *const *cands, int ncand, char *buf, size_t n, cut_err *e);

#endif
