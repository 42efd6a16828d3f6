/* cutune — a small reusable thread pool: batches of indexed jobs, FIFO, wait for all. */
#include "compile/pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cutune/util.h"

#define CUT_POOL_MIN_STACK ((size_t)16 << 20)

typedef struct cut_pool_batch {
    cut_pool_fn fn;
    void *ctx;
    int n, next; /* next: first index not yet handed out */
    struct cut_pool_batch *link;
} cut_pool_batch;

struct cut_pool {
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* a batch was queued, or stop was set */
    pthread_cond_t done_cv; /* outstanding dropped to 0 */
    pthread_t *threads;
    int nthreads;
    cut_pool_batch *head, *tail;
    long outstanding; /* jobs submitted and not yet returned */
    int stop;
};

int cut_pool_online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void *pool_worker(void *arg)
{
    cut_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stop)
            pthread_cond_wait(&p->work_cv, &p->mu);
        if (!p->head) /* stop, and the queue is drained */
            break;
        cut_pool_batch *b = p->head;
        cut_pool_fn fn = b->fn;
        void *ctx = b->ctx;
        int idx = b->next++;
        if (b->next >= b->n) { /* last index handed out: the batch record is no longer needed */
            p->head = b->link;
            if (!p->head)
                p->tail = NULL;
            free(b);
        }
        pthread_mutex_unlock(&p->mu);
        fn(ctx, idx);
        pthread_mutex_lock(&p->mu);
        if (--p->outstanding == 0)
            pthread_cond_broadcast(&p->done_cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Stops and joins the first n threads of p (queued work is finished first). */
static void pool_stop_join(cut_pool *p, int n)
{
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < n; i++)
        pthread_join(p->threads[i], NULL);
}

/* Caller frees with cut_pool_free. */
cut_pool *cut_pool_new(int nthreads, cut_err *e)
{
    if (nthreads <= 0)
        nthreads = cut_pool_online_cpus();
    cut_pool *p = cut_xcalloc(1, sizeof *p);
    p->threads = cut_xcalloc((size_t)nthreads, sizeof *p->threads);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);

    pthread_attr_t attr;
    pthread_attr_init(&attr);
    size_t stack = 0;
    if (pthread_attr_getstacksize(&attr, &stack) != 0 || stack < CUT_POOL_MIN_STACK)
        pthread_attr_setstacksize(&attr, CUT_POOL_MIN_STACK);
    for (int i = 0; i < nthreads; i++) {
        int rc = pthread_create(&p->threads[i], &attr, pool_worker, p);
        if (rc != 0) {
            pthread_attr_destroy(&attr);
            cut_err_set(e, "cannot start compile thread %d of %d: %s", i + 1, nthreads, strerror(rc));
            pool_stop_join(p, i);
            pthread_mutex_destroy(&p->mu);
            pthread_cond_destroy(&p->work_cv);
            pthread_cond_destroy(&p->done_cv);
            free(p->threads);
            free(p);
            return NULL;
        }
        p->nthreads = i + 1;
    }
    pthread_attr_destroy(&attr);
    return p;
}

int cut_pool_size(const cut_pool *p) { return p->nthreads; }

void cut_pool_submit(cut_pool *p, int n, cut_pool_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    cut_pool_batch *b = cut_xcalloc(1, sizeof *b); /* freed by the worker that takes its last index */
    b->fn = fn;
    b->ctx = ctx;
    b->n = n;
    pthread_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->link = b;
    else
        p->head = b;
    p->tail = b;
    p->outstanding += n;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
}

void cut_pool_wait(cut_pool *p)
{
    pthread_mutex_lock(&p->mu);
    while (p->outstanding > 0)
        pthread_cond_wait(&p->done_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void cut_pool_free(cut_pool *p)
{
    if (!p)
        return;
    pool_stop_join(p, p->nthreads);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->done_cv);
    free(p->threads);
    free(p);
}

int cut_pool_run(int nthreads, int n, cut_pool_fn fn, void *ctx, cut_err *e)
{
    if (n <= 0)
        return 0;
    if (nthreads <= 0)
        nthreads = cut_pool_online_cpus();
    if (nthreads > n)
        nthreads = n;
    if (nthreads == 1) {
        for (int i = 0; i < n; i++)
            fn(ctx, i);
        return 0;
    }
    cut_pool *p = cut_pool_new(nthreads, e);
    if (!p)
        return -1;
    cut_pool_submit(p, n, fn, ctx);
    cut_pool_wait(p);
    cut_pool_free(p);
    return 0;
}
