/* cutune — compile stream: a queue of candidates, compile threads, and a finished list. */
#include "pipeline/cstream.h"
#include "cutune/util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cut_cstream {
    pthread_mutex_t mu;
    pthread_cond_t work, finished;
    cut_job *pending_head, *pending_tail; /* FIFO */
    cut_job *done_head, *done_tail;       /* FIFO in finishing order */
    int ndone, inflight, stop;
    const cut_compile_opts *opts;
    pthread_t *threads;
    int nthreads;
};

static void push(cut_job **head, cut_job **tail, cut_job *j)
{
    j->next = NULL;
    if (*tail)
        (*tail)->next = j;
    else
        *head = j;
    *tail = j;
}

static cut_job *pop(cut_job **head, cut_job **tail)
{
    cut_job *j = *head;
    if (j) {
        *head = j->next;
        if (!*head)
            *tail = NULL;
        j->next = NULL;
    }
    return j;
}

static void *compile_main(void *arg)
{
    cut_cstream *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->stop && !s->pending_head)
            pthread_cond_wait(&s->work, &s->mu);
        if (s->stop)
            break;
        cut_job *j = pop(&s->pending_head, &s->pending_tail);
        pthread_mutex_unlock(&s->mu);
        cut_compile_opts o; /* sm_90a for a kernel that needs it (cut_kernel_src.arch_a) */
        cut_compile_opts_for_kernel(s->opts, j->ks.arch_a, &o);
        if (j->res.status == CUT_ST_OK && cut_compile_one(j->ks.src, NULL, &o, &j->bin, &j->err) != 0)
            j->setup_failed = 1;
        pthread_mutex_lock(&s->mu);
        push(&s->done_head, &s->done_tail, j);
        s->ndone++;
        pthread_cond_broadcast(&s->finished);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

cut_cstream *cut_cstream_new(const cut_compile_opts *opts, cut_err *e)
{
    cut_cstream *s = cut_xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->finished, NULL);
    s->opts = opts;
    if (!opts)
        return s;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int n = opts->nthreads > 0 ? opts->nthreads : (int)(cpus > 0 ? cpus : 1);
    s->threads = cut_xcalloc((size_t)n, sizeof *s->threads);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 16u << 20); /* NVRTC recurses deeply */
    for (int i = 0; i < n; i++) {
        if (pthread_create(&s->threads[i], &attr, compile_main, s) != 0)
            break;
        s->nthreads++;
    }
    pthread_attr_destroy(&attr);
    if (s->nthreads == 0) {
        cut_cstream_free(s);
        cut_err_set(e, "cannot start compile threads");
        return NULL;
    }
    return s;
}

void cut_cstream_submit(cut_cstream *s, cut_job *j)
{
    pthread_mutex_lock(&s->mu);
    s->inflight++;
    if (s->nthreads == 0 || j->res.status != CUT_ST_OK) {
        push(&s->done_head, &s->done_tail, j);
        s->ndone++;
    } else {
        push(&s->pending_head, &s->pending_tail, j);
        pthread_cond_signal(&s->work);
    }
    pthread_mutex_unlock(&s->mu);
}

int cut_cstream_inflight(cut_cstream *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->inflight;
    pthread_mutex_unlock(&s->mu);
    return n;
}

int cut_cstream_take(cut_cstream *s, cut_job **out, int max, int want)
{
    pthread_mutex_lock(&s->mu);
    int need = CUT_MIN(want, s->inflight);
    while (s->ndone < need)
        pthread_cond_wait(&s->finished, &s->mu);
    int n = 0;
    while (n < max && s->done_head) {
        out[n++] = pop(&s->done_head, &s->done_tail);
        s->ndone--;
        s->inflight--;
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

void cut_job_free(cut_job *j)
{
    if (!j)
        return;
    cut_kernel_src_free(&j->ks);
    cut_compiled_free(&j->bin);
    free(j);
}

void cut_cstream_free(cut_cstream *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->nthreads; i++)
        pthread_join(s->threads[i], NULL);
    cut_job *j;
    while ((j = pop(&s->pending_head, &s->pending_tail)))
        cut_job_free(j);
    while ((j = pop(&s->done_head, &s->done_tail)))
        cut_job_free(j);
    free(s->threads);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->finished);
    free(s);
}
