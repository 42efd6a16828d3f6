/* cutune — the Triton runner's compile pool (triton_ahead.h).
 *
 * One thread owns the workers: it hands the next queued compile to an idle worker (starting it when it has none),
 * polls the busy workers' pipes and a wake pipe (a submit or a wait writes a byte), and records each reply in its
 * job. Callers only touch the job list, under the mutex; a wait sleeps on the condition variable, which the thread
 * broadcasts whenever a job ends. A worker that dies or does not reply within JOB_LIMIT_S fails its job and is
 * replaced at the next compile. */
#define _GNU_SOURCE /* pipe2 */
#include "measure/triton_ahead.h"
#include "measure/child.h"
#include "measure/triton_proc.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A compile that takes longer is given up (its worker killed): the measuring worker compiles it itself. */
#define JOB_LIMIT_S 300.0
#define MAX_WORKERS 64
#define MAX_REPLY (1u << 20)

enum { QUEUED, RUNNING, ENDED, FAILED };

typedef struct ajob {
    uint64_t key;
    char *src, *req; /* malloc'd; freed once handed to a worker */
    int state, urgent;
    char error[400];
} ajob;

typedef struct aworker {
    int pid, to_w, from_w; /* pid 0: not started */
    int job;               /* the job it compiles, -1: idle */
    double since;          /* when it got the job */
    char module[PATH_MAX + 32];
    cut_tr_lines lines;
} aworker;

struct cut_tr_ahead {
    char python[PATH_MAX], worker_py[PATH_MAX], target[64], cache_dir[PATH_MAX], dir[PATH_MAX];
    aworker w[MAX_WORKERS];
    int nw;
    pthread_mutex_t mu;
    pthread_cond_t ended; /* broadcast when a job ends */
    ajob *jobs;           /* every compile queued (a search queues some hundreds): under mu */
    int njobs, cap, nended, nfailed, stop;
    int wake[2];
    long seq;
    pthread_t thread;
    int started;
};

uint64_t cut_tr_ahead_key(const char *src, const char *req)
{
    return cut_fnv1a(cut_fnv1a(cut_fnv1a(CUT_FNV_INIT, src, strlen(src)), "", 1), req, strlen(req));
}

/* ---- the thread's side ---- */

static void poke(cut_tr_ahead *p)
{
    const char c = 1;
    if (write(p->wake[1], &c, 1) < 0) { /* full: the thread is awake already */
    }
}

/* Ends job j (under mu): its state, its sentence, the waiters told. */
static void job_end(cut_tr_ahead *p, int j, int ok, const char *error)
{
    ajob *a = &p->jobs[j];
    a->state = ok ? ENDED : FAILED;
    snprintf(a->error, sizeof a->error, "%s", error ? error : "");
    p->nended++;
    p->nfailed += !ok;
    pthread_cond_broadcast(&p->ended);
}

/* Kills worker w and fails the job it had (under mu) with why. */
static void worker_lost(cut_tr_ahead *p, aworker *w, const char *why)
{
    char how[96] = "";
    cut_child_end(&w->pid, &w->to_w, &w->from_w, 1, 0.0, 30.0, "Triton compile worker", how, sizeof how);
    cut_tr_lines_reset(&w->lines);
    if (w->job >= 0) {
        char msg[300];
        snprintf(msg, sizeof msg, "the compile worker %s (%s)", why, how);
        job_end(p, w->job, 0, msg);
    }
    if (w->module[0])
        unlink(w->module);
    w->module[0] = '\0';
    w->job = -1;
}

/* The next job to compile (urgent first, else the oldest), marked RUNNING; -1 when none is queued. Under mu. */
static int next_job(cut_tr_ahead *p)
{
    int pick = -1;
    for (int i = 0; i < p->njobs; i++)
        if (p->jobs[i].state == QUEUED && (pick < 0 || (p->jobs[i].urgent && !p->jobs[pick].urgent)))
            pick = i;
    if (pick >= 0)
        p->jobs[pick].state = RUNNING;
    return pick;
}

/* The compile request line of req for the module at path (malloc'd), NULL when req is not a JSON object. */
static char *request_line(const char *req, const char *path)
{
    cJSON *q = cJSON_Parse(req);
    if (!cJSON_IsObject(q)) {
        cJSON_Delete(q);
        return NULL;
    }
    cJSON_AddStringToObject(q, "op", "compile");
    cJSON_AddStringToObject(q, "module", path);
    char *line = cJSON_PrintUnformatted(q);
    cJSON_Delete(q);
    return line;
}

/* Hands a job's src and req to worker w: started when it is not, the module written, the request sent (under mu: a
 * fork and a small write; waiters only wait for jobs to end). NULL, or why it could not be sent. */
static const char *dispatch(cut_tr_ahead *p, aworker *w, const char *src, const char *req, char *why, size_t n)
{
    cut_err e = {{0}};
    if (!w->pid) {
        char log_path[PATH_MAX + 16];
        snprintf(log_path, sizeof log_path, "%s/ahead.log", p->dir);
        char *argv[] = {p->python, p->worker_py, "--compile-for", p->target, NULL};
        if (cut_tr_spawn(argv, p->cache_dir, 0, log_path, &w->pid, &w->to_w, &w->from_w, &e) != 0) {
            snprintf(why, n, "%s", e.msg);
            return why;
        }
    }
    snprintf(w->module, sizeof w->module, "%s/a%ld.py", p->dir, ++p->seq);
    char *line = request_line(req, w->module);
    if (!line)
        return "the compile request is not a JSON object";
    int rc = cut_write_file_atomic(w->module, src, strlen(src), &e);
    if (rc == 0 && cut_child_send(w->to_w, line, strlen(line), "\n", 1) != 0)
        rc = snprintf(why, n, "does not take requests (its pipe is closed)");
    else if (rc != 0)
        snprintf(why, n, "%s", e.msg);
    free(line);
    return rc == 0 ? NULL : why;
}

/* Idle workers get queued jobs. Under mu. */
static void hand_out(cut_tr_ahead *p)
{
    for (int i = 0; i < p->nw; i++) {
        aworker *w = &p->w[i];
        int j;
        if (w->job >= 0 || (j = next_job(p)) < 0)
            continue;
        char why[300];
        w->job = j;
        w->since = cut_now_s();
        const char *err = dispatch(p, w, p->jobs[j].src, p->jobs[j].req, why, sizeof why);
        free(p->jobs[j].src);
        free(p->jobs[j].req);
        p->jobs[j].src = p->jobs[j].req = NULL;
        if (err)
            worker_lost(p, w, err);
    }
}

/* A reply line of worker w: its job ended (a status "ok") or failed (its error). Under mu. */
static void take_reply(cut_tr_ahead *p, aworker *w, const char *line)
{
    cJSON *r = cJSON_Parse(line);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(r, "status");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(r, "error");
    const int ok = cJSON_IsString(st) && !strcmp(st->valuestring, "ok");
    char msg[400];
    snprintf(msg, sizeof msg, "%s%s%s", cJSON_IsString(st) ? st->valuestring : "refused",
             cJSON_IsString(err) && err->valuestring[0] ? ": " : "", cJSON_IsString(err) ? err->valuestring : "");
    cJSON_Delete(r);
    if (w->job >= 0)
        job_end(p, w->job, ok, ok ? NULL : msg);
    w->job = -1;
    unlink(w->module);
    w->module[0] = '\0';
}

/* Reads what worker w sent (its pipe is readable). Under mu. */
static void read_worker(cut_tr_ahead *p, aworker *w)
{
    const long got = cut_tr_lines_read(&w->lines, w->from_w, MAX_REPLY);
    if (got < 0 && got != -2 && (errno == EINTR || errno == EAGAIN))
        return;
    if (got <= 0) {
        worker_lost(p, w, got == 0 ? "exited" : "sent an unreadable reply");
        return;
    }
    char *line;
    while (cut_tr_lines_next(&w->lines, &line))
        take_reply(p, w, line);
}

/* One poll over the wake pipe and the busy workers, up to a second; what came is taken in. Under mu (released
 * around the poll). */
static void poll_once(cut_tr_ahead *p)
{
    struct pollfd fds[MAX_WORKERS + 1];
    int who[MAX_WORKERS + 1], n = 0;
    fds[n] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
    who[n++] = -1;
    for (int i = 0; i < p->nw; i++)
        if (p->w[i].job >= 0 && p->w[i].pid) {
            fds[n] = (struct pollfd){.fd = p->w[i].from_w, .events = POLLIN};
            who[n++] = i;
        }
    pthread_mutex_unlock(&p->mu);
    const int pr = poll(fds, (nfds_t)n, 1000);
    pthread_mutex_lock(&p->mu);
    if (pr > 0 && (fds[0].revents & POLLIN)) {
        char drain[64];
        if (read(p->wake[0], drain, sizeof drain) < 0) { /* EAGAIN: drained already */
        }
    }
    for (int k = 1; pr > 0 && k < n; k++)
        if (fds[k].revents & (POLLIN | POLLHUP | POLLERR))
            read_worker(p, &p->w[who[k]]);
    const double now = cut_now_s();
    for (int i = 0; i < p->nw; i++)
        if (p->w[i].job >= 0 && now - p->w[i].since > JOB_LIMIT_S)
            worker_lost(p, &p->w[i], "did not finish within the compile limit");
}

static void *pool_main(void *arg)
{
    cut_tr_ahead *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        hand_out(p);
        if (!p->stop)
            poll_once(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---- the callers' side ---- */

/* The job of key (under mu), or -1. */
static int find_job(const cut_tr_ahead *p, uint64_t key)
{
    for (int i = p->njobs - 1; i >= 0; i--)
        if (p->jobs[i].key == key)
            return i;
    return -1;
}

void cut_tr_ahead_submit(cut_tr_ahead *p, uint64_t key, const char *src, const char *req)
{
    if (!p || !src || !req)
        return;
    pthread_mutex_lock(&p->mu);
    if (find_job(p, key) < 0) {
        if (p->njobs == p->cap) {
            p->cap = p->cap ? 2 * p->cap : 64;
            p->jobs = cut_xrealloc(p->jobs, (size_t)p->cap * sizeof *p->jobs);
        }
        p->jobs[p->njobs++] = (ajob){.key = key, .src = cut_xstrdup(src), .req = cut_xstrdup(req), .state = QUEUED};
    }
    pthread_mutex_unlock(&p->mu);
    poke(p);
}

int cut_tr_ahead_wait(cut_tr_ahead *p, uint64_t key, double timeout_s, char *why, size_t n)
{
    if (!p)
        return 0;
    const double end = cut_now_s() + timeout_s;
    pthread_mutex_lock(&p->mu);
    int j = find_job(p, key), rc = 0;
    if (j >= 0 && p->jobs[j].state == QUEUED) {
        p->jobs[j].urgent = 1;
        poke(p);
    }
    while (j >= 0 && p->jobs[j].state <= RUNNING && cut_now_s() < end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1; /* a slice: the deadline is on the monotonic clock */
        pthread_cond_timedwait(&p->ended, &p->mu, &ts);
    }
    if (j >= 0 && p->jobs[j].state == ENDED)
        rc = 1;
    else if (j >= 0 && p->jobs[j].state == FAILED) {
        rc = -1;
        snprintf(why, n, "%s", p->jobs[j].error);
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void cut_tr_ahead_counts(cut_tr_ahead *p, int *queued, int *ended, int *failed)
{
    pthread_mutex_lock(&p->mu);
    *queued = p->njobs;
    *ended = p->nended;
    *failed = p->nfailed;
    pthread_mutex_unlock(&p->mu);
}

int cut_tr_ahead_live(cut_tr_ahead *p)
{
    int live = 0;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->nw; i++)
        live += p->w[i].pid != 0;
    pthread_mutex_unlock(&p->mu);
    return live;
}

void cut_tr_ahead_free(cut_tr_ahead *p)
{
    if (!p)
        return;
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        pthread_mutex_unlock(&p->mu);
        poke(p);
        pthread_join(p->thread, NULL);
    }
    for (int i = 0; i < p->nw; i++) {
        p->w[i].job = -1; /* nobody waits any more */
        worker_lost(p, &p->w[i], "stopped");
        cut_tr_lines_free(&p->w[i].lines);
    }
    for (int i = 0; i < p->njobs; i++) {
        free(p->jobs[i].src);
        free(p->jobs[i].req);
    }
    free(p->jobs);
    for (int i = 0; i < 2; i++)
        if (p->wake[i] >= 0)
            close(p->wake[i]);
    pthread_cond_destroy(&p->ended);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* Caller frees with cut_tr_ahead_free. */
cut_tr_ahead *cut_tr_ahead_new(const char *python, const char *worker_py, const char *target, const char *cache_dir,
                               const char *dir, int jobs, cut_err *e)
{
    cut_tr_ahead *p = cut_xcalloc(1, sizeof *p);
    p->nw = CUT_MAX(1, CUT_MIN(jobs, MAX_WORKERS));
    for (int i = 0; i < p->nw; i++)
        p->w[i] = (aworker){.to_w = -1, .from_w = -1, .job = -1};
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->ended, NULL);
    p->wake[0] = p->wake[1] = -1;
    if (snprintf(p->python, sizeof p->python, "%s", python) >= (int)sizeof p->python ||
        snprintf(p->worker_py, sizeof p->worker_py, "%s", worker_py) >= (int)sizeof p->worker_py ||
        snprintf(p->target, sizeof p->target, "%s", target) >= (int)sizeof p->target ||
        snprintf(p->cache_dir, sizeof p->cache_dir, "%s", cache_dir) >= (int)sizeof p->cache_dir ||
        snprintf(p->dir, sizeof p->dir, "%s", dir) >= (int)sizeof p->dir - 32) {
        cut_err_set(e, "the Triton compile pool's paths or target are too long");
    } else if (pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        cut_err_set(e, "cannot create the Triton compile pool's wake pipe: %s", strerror(errno));
    } else if ((errno = pthread_create(&p->thread, NULL, pool_main, p)) != 0) {
        cut_err_set(e, "cannot start the Triton compile pool's thread: %s", strerror(errno));
    } else {
        p->started = 1;
        return p;
    }
    cut_tr_ahead_free(p);
    return NULL;
}
