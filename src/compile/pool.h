/* cutune — a small reusable thread pool (internal header).
 *
 * Jobs come in batches: cut_pool_submit queues jobs fn(ctx, 0) .. fn(ctx, n-1) and returns at once; any thread
 * of the pool runs any job, in no particular order; cut_pool_wait blocks until every job submitted so far has
 * returned. Several batches may be queued before a wait (they run in submission order, FIFO by index), so a
 * caller can compile the next batch on the pool while it measures the current one on the GPU.
 *
 * Jobs must not call cut_pool_wait or cut_pool_free on their own pool (deadlock). A job owns no pool state;
 * results go wherever ctx points (typically out[idx], so the order of completion does not matter). */
#ifndef CUTUNE_COMPILE_POOL_H
#define CUTUNE_COMPILE_POOL_H

#include "cutune/common.h"

typedef void (*cut_pool_fn)(void *ctx, int idx);

typedef struct cut_pool cut_pool;

/* Number of online CPUs (at least 1). */
int cut_pool_online_cpus(void);

/* Starts nthreads worker threads (<= 0: cut_pool_online_cpus()). Each thread gets a stack of at least 16 MiB
 * (NVRTC recurses deeply). Returns NULL with e set if a thread cannot be started.
 * Caller frees with cut_pool_free. */
cut_pool *cut_pool_new(int nthreads, cut_err *e);
/* Number of worker threads. */
int cut_pool_size(const cut_pool *p);
/* Queues n jobs (n <= 0: nothing). Returns at once. */
void cut_pool_submit(cut_pool *p, int n, cut_pool_fn fn, void *ctx);
/* Blocks until every job submitted so far has returned. */
void cut_pool_wait(cut_pool *p);
/* Runs the queued jobs to completion, stops and joins the threads, frees p. NULL is a no-op. */
void cut_pool_free(cut_pool *p);

/* One-shot helper: runs fn(ctx, 0..n-1) on min(nthreads, n) threads (nthreads <= 0: online CPUs) and waits.
 * With one thread or one job it runs inline on the caller's thread. Returns -1 with e set only if no thread
 * could be started. */
int cut_pool_run(int nthreads, int n, cut_pool_fn fn, void *ctx, cut_err *e);

#endif
