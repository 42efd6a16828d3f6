/* cutune — the Triton runner's compile pool (internal): compile-only Triton workers (`python worker_py --compile-for
 * TARGET`: no device, no torch) that compile launches ahead of their measurement, on the host's other cores, into the
 * Triton cache the measuring worker uses, so that its JIT finds them there (docs/triton_worker.md, "Compiling
 * ahead"). One thread drives the workers; compiles are queued by key (a launch: its module source and compile
 * request), the oldest first unless a measurement waits for one. A failed compile is only noted: the measuring
 * worker compiles the launch again and reports the failure as it always did. */
#ifndef CUTUNE_MEASURE_TRITON_AHEAD_H
#define CUTUNE_MEASURE_TRITON_AHEAD_H

#include "cutune/util.h"

#include <stddef.h>
#include <stdint.h>

typedef struct cut_tr_ahead cut_tr_ahead;

/* The pool: its thread started, its workers (at most jobs) started as compiles come, each
 * `python worker_py --compile-for target` with the cache <cache_dir>/triton and TRITON_INTERPRET=0, their modules
 * and their stderr (ahead.log) in dir (which must exist). NULL with e when the thread cannot start. Free with
 * cut_tr_ahead_free. */
cut_tr_ahead *cut_tr_ahead_new(const char *python, const char *worker_py, const char *target, const char *cache_dir,
                               const char *dir, int jobs, cut_err *e);
/* Queues the compile of the module source src with req, a compile request's JSON object without "op" and
 * "module" (the pool writes src to a file of its own). A key queued before is not queued again. */
void cut_tr_ahead_submit(cut_tr_ahead *p, uint64_t key, const char *src, const char *req);
/* Waits up to timeout_s for key's compile, first in the queue from now on. 1: compiled (in the cache); 0: never
 * queued, or not done in time; -1: it failed, the worker's sentence into why (n bytes). */
int cut_tr_ahead_wait(cut_tr_ahead *p, uint64_t key, double timeout_s, char *why, size_t n);
/* Compiles queued so far, and how many of them ended, failed. */
void cut_tr_ahead_counts(cut_tr_ahead *p, int *queued, int *ended, int *failed);
/* Live worker processes (a test checks that none outlives the pool). */
int cut_tr_ahead_live(cut_tr_ahead *p);
/* Stops the thread, kills the workers (a compile in flight is not waited for) and reaps them. NULL is a no-op. */
void cut_tr_ahead_free(cut_tr_ahead *p);

/* The key of a launch: FNV-1a over the module source and its compile request. */
uint64_t cut_tr_ahead_key(const char *src, const char *req);

#endif
