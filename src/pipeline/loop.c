/* cutune — the one tuning loop (cutune/task.h): strategy -> codegen -> compile (overlapped) -> measure -> record ->
 * observe, resumable, for every op. */
#include "cutune/log.h"
#include "cutune/search.h"
#include "cutune/task.h"
#include "cutune/util.h"
#include "pipeline/cstream.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WARMUP_TRIALS 256

void cut_task_free(cut_task *t)
{
    if (!t)
        return;
    if (t->destroy)
        t->destroy(t);
    free(t->wl);
    free(t);
}

cut_strategy *cut_task_strategy(cut_space *sp, const cut_tune_cfg *cfg, const cut_search_opts *o, uint64_t seed,
                                cut_err *e)
{
    switch (cfg->strategy) {
    case CUT_STRAT_RANDOM:
        return cut_strategy_random_new(sp, seed);
    case CUT_STRAT_EXHAUSTIVE:
        return cut_strategy_exhaustive_new(sp, CUT_EXHAUSTIVE_MAX, e);
    case CUT_STRAT_EVOLVE:
    default: {
        cut_search_opts so;
        if (o)
            so = *o;
        else
            cut_search_opts_default(&so);
        so.seed = seed;
        return cut_strategy_evolve_new(sp, &so);
    }
    }
}

void cut_tune_progress(const cut_tune_cfg *cfg, cut_progress *p, const char *label, int done, int total, int failed,
                       double best_gflops, double rate, int final)
{
    if (!cfg->progress)
        return;
    double now = cut_now_s();
    int tty = cut_log_tty();
    if (!tty && (final ? p->printed && p->last_done == done : now - p->last_s < 10.0))
        return;
    p->last_s = now;
    p->last_done = done;
    p->printed = 1;
    double eta = rate > 0 ? (total - done) / rate : 0;
    char best[48];
    if (best_gflops < 0) /* the work's FLOPs are unknown (a user kernel): its best time, -best_gflops ms */
        snprintf(best, sizeof best, "best %.4f ms", -best_gflops);
    else
        snprintf(best, sizeof best, "best %.1f GFLOP/s", best_gflops);
    cut_log(CUT_LOG_INFO, "%s%s | trials %d/%d | failed %d | %s | %.2f trials/s | ETA %.0f s%s",
            tty ? "\r\033[K" : "", label, done, total, failed, best, rate, eta, (final || !tty) ? "\n" : "");
}

void cut_tune_dump_failure(const char *dir, const char *stem, int trial, const cut_kernel_src *ks,
                           const cut_compiled *bin, const cut_result *res)
{
    if (!dir || !ks->src)
        return;
    char path[1024];
    cut_err e;
    if (cut_mkdirs(dir, &e) != 0)
        return;
    snprintf(path, sizeof path, "%s/%s_trial%d.cu", dir, stem, trial);
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_printf(&b, "%s\n/* status: %s\n%s\n", ks->src, cut_status_name(res->status), res->error);
    if (bin && bin->log)
        cut_buf_printf(&b, "NVRTC log:\n%s\n", bin->log);
    cut_buf_printf(&b, "*/\n");
    cut_write_file_atomic(path, b.data, b.len, &e);
    cut_buf_free(&b);
}

/* Folds one trial into the best by objective o (time: the fastest valid median; energy / edp: the minimum over the
 * trials with energy measured). */
static void track_best(cut_tune_stats *st, cut_objective o, const cut_trial *tr)
{
    if (tr->status != CUT_ST_OK || !(tr->median_ms > 0))
        return;
    double v = o == CUT_OBJ_TIME ? tr->median_ms : o == CUT_OBJ_ENERGY ? tr->energy_mj : tr->edp;
    if (o != CUT_OBJ_TIME) {
        if (!(v > 0))
            return;
        st->energy_trials++;
    }
    if (st->best_obj >= 0 && v >= st->best_obj)
        return;
    st->best_obj = v;
    st->best_ms = tr->median_ms;
    st->best = tr->sched;
    st->best_energy_mj = o == CUT_OBJ_TIME ? -1 : tr->energy_mj;
    st->best_edp = o == CUT_OBJ_TIME ? -1 : tr->edp;
    st->best_power_w = o == CUT_OBJ_TIME ? -1 : tr->power_w;
}

/* Indices of the valid jobs, fastest first (ties: job order). Returns the count. */
static int order_by_time(cut_job **jobs, int n, int *order)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (jobs[i]->res.status != CUT_ST_OK || jobs[i]->res.not_run)
            continue;
        int j = m++;
        for (; j > 0 && jobs[order[j - 1]]->res.median_ms > jobs[i]->res.median_ms; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    return m;
}

/* Energy objective: measures the energy of the round's cfg->energy_top fastest valid jobs into er (the others
 * stay zero). The runner checks and times each again first; the recorded time stays the round's. A meter failure
 * is a setup error. */
static int measure_energy(cut_job **jobs, int n, const cut_tune_cfg *cfg, cut_runner *r, int first_trial,
                          cut_energy_result *er, cut_err *e)
{
    int *order = cut_xcalloc((size_t)n, sizeof *order);
    int m = order_by_time(jobs, n, order), top = cfg->energy_top > 0 ? cfg->energy_top : 2, rc = 0;
    const double stop_at = r->stop_at;
    r->stop_at = 0; /* the energy of trials already measured is part of them, budget or not */
    for (int k = 0; k < CUT_MIN(top, m) && rc == 0; k++) {
        int i = order[k];
        cut_candidate cand = {&jobs[i]->ks, cfg->use_nvrtc ? &jobs[i]->bin : NULL};
        cut_result res;
        cut_energy_result x;
        memset(&res, 0, sizeof res);
        if (cut_runner_energy(r, &cand, &cfg->energy_plan, &res, &x, e) != 0)
            rc = cut_err_wrap(e, "--objective %s: measuring the energy of trial %d", cut_objective_name(cfg->objective),
                              first_trial + i);
        else if (res.status == CUT_ST_OK)
            er[i] = x;
        else
            cut_log(CUT_LOG_WARN, "\ncutune: trial %d passed its check but failed it before the energy measurement (%s: %s);"
                            " recorded without energy\n",
                    first_trial + i, cut_status_name(res.status), res.error);
    }
    r->stop_at = stop_at;
    free(order);
    return rc;
}

int cut_tune_measure_jobs(cut_job **jobs, int n, int use_nvrtc, cut_runner *r, cut_err *e)
{
    return cut_tune_measure_jobs_with(NULL, jobs, n, use_nvrtc, &r, 1, e);
}

/* A batch's measurable candidates c[0..m) and their results res[0..m), jobs map[0..m) of the batch, shared by the
 * runners' threads: with several runners each takes the next candidate nobody has taken (a dynamic queue), so a
 * slow GPU or a slow candidate holds up no other runner. done(ctx, job) for each result a runner reports at once. */
typedef struct measure_queue {
    const cut_task *t;
    const cut_candidate *c;
    cut_result *res;
    int m;
    cut_job **jobs;
    const int *map;
    void (*done)(void *ctx, int i);
    void *ctx;
    pthread_mutex_t mu;
    int whole;  /* one runner: it takes the whole batch in one call */
    int next;   /* the next candidate nobody has taken */
    int failed; /* a runner failed (a setup error): the others take nothing more */
} measure_queue;

/* One runner's thread: runner k, its first candidate k (with as many candidates as runners, candidate k goes to
 * runner k: the optimizer relies on it), then the next free one each time. A single runner takes the whole batch
 * in one call instead (the emulator compiles a batch in parallel). */
typedef struct measure_part {
    measure_queue *q;
    cut_runner *r;
    int k, rc;
    cut_err e;
} measure_part;

/* The runner's on_result: a result of the queue's array, stored in its job and reported. */
static void part_result(void *arg, const cut_result *res)
{
    measure_part *p = arg;
    measure_queue *q = p->q;
    if (res < q->res || res >= q->res + q->m)
        return; /* a result the task's measure keeps elsewhere: reported with the batch */
    const int j = (int)(res - q->res);
    q->jobs[q->map[j]]->res = *res;
    q->done(q->ctx, q->map[j]);
}

/* Measures candidates [at, at + n) of the queue on p's runner. */
static int measure_some(measure_part *p, int at, int n)
{
    const measure_queue *q = p->q;
    for (int j = at; j < at + n; j++)
        q->jobs[q->map[j]]->runner = p->k;
    return q->t && q->t->measure ? q->t->measure(q->t, p->r, q->c + at, n, q->res + at, &p->e)
                                 : cut_runner_measure(p->r, q->c + at, n, q->res + at, &p->e);
}

static void *measure_part_run(void *arg)
{
    measure_part *p = arg;
    measure_queue *q = p->q;
    if (q->done) {
        p->r->on_result = part_result;
        p->r->on_result_ctx = p;
    }
    if (q->whole) {
        p->rc = q->m > 0 ? measure_some(p, 0, q->m) : 0;
    } else {
        pthread_mutex_lock(&q->mu);
        int j = q->failed ? -1 : p->k;
        pthread_mutex_unlock(&q->mu);
        while (j >= 0) {
            p->rc = measure_some(p, j, 1);
            pthread_mutex_lock(&q->mu);
            q->failed |= p->rc != 0;
            j = !q->failed && q->next < q->m ? q->next++ : -1;
            pthread_mutex_unlock(&q->mu);
        }
    }
    p->r->on_result = NULL;
    p->r->on_result_ctx = NULL;
    return NULL;
}

int cut_tune_measure_jobs_with(const cut_task *t, cut_job **jobs, int n, int use_nvrtc, cut_runner **r, int nr,
                               cut_err *e)
{
    return cut_tune_measure_jobs_each(t, jobs, n, use_nvrtc, r, nr, NULL, NULL, e);
}

int cut_tune_measure_jobs_each(const cut_task *t, cut_job **jobs, int n, int use_nvrtc, cut_runner **r, int nr,
                               void (*done)(void *ctx, int i), void *ctx, cut_err *e)
{
    cut_candidate *cands = cut_xcalloc((size_t)n, sizeof *cands);
    cut_result *mres = cut_xcalloc((size_t)n, sizeof *mres);
    int *map = cut_xcalloc((size_t)n, sizeof *map);
    int m = 0, rc = 0; /* only candidates that generated code measure; the runners see a compact array */
    for (int i = 0; i < n; i++) {
        jobs[i]->runner = -1;
        if (jobs[i]->res.status != CUT_ST_OK)
            continue;
        cands[m].ks = &jobs[i]->ks;
        cands[m].bin = use_nvrtc ? &jobs[i]->bin : NULL;
        map[m++] = i;
    }
    const int used = CUT_MIN(nr, m);
    measure_queue q = {.t = t, .c = cands, .res = mres, .m = m, .jobs = jobs, .map = map, .done = done, .ctx = ctx,
                       .whole = used <= 1, .next = used};
    pthread_mutex_init(&q.mu, NULL);
    measure_part *parts = cut_xcalloc((size_t)(used > 0 ? used : 1), sizeof *parts);
    pthread_t *th = cut_xcalloc((size_t)(used > 0 ? used : 1), sizeof *th);
    int *started = cut_xcalloc((size_t)(used > 0 ? used : 1), sizeof *started);
    for (int k = 0; k < used; k++) {
        parts[k] = (measure_part){&q, r[k], k, 0, {{0}}};
        /* one runner measures in this thread, as always; several each in a thread of their own */
        started[k] = used > 1 && pthread_create(&th[k], NULL, measure_part_run, &parts[k]) == 0;
        if (!started[k])
            measure_part_run(&parts[k]);
    }
    for (int k = 0; k < used; k++) {
        if (started[k])
            pthread_join(th[k], NULL);
        if (parts[k].rc != 0 && rc == 0) {
            *e = parts[k].e;
            rc = -1;
        }
    }
    for (int j = 0; rc == 0 && j < m; j++)
        jobs[map[j]]->res = mres[j];
    pthread_mutex_destroy(&q.mu);
    free(parts), free(th), free(started);
    free(cands), free(mres), free(map);
    return rc;
}

/* The trial of a measured job. */
static void fill_trial(cut_trial *tr, int trial, const cut_job *jb, const cut_compiled *bin, const cut_measure_env *env,
                       const cut_energy_result *er)
{
    const cut_result *res = &jb->res;
    memset(tr, 0, sizeof *tr);
    tr->trial = trial;
    tr->sched = jb->sched;
    tr->status = res->status;
    snprintf(tr->error, sizeof tr->error, "%s", res->error);
    tr->median_ms = tr->min_ms = tr->max_ms = tr->err = -1;
    if (res->status == CUT_ST_OK) {
        tr->median_ms = res->median_ms;
        tr->min_ms = res->min_ms;
        tr->max_ms = res->max_ms;
        tr->err = res->max_abs_err;
    }
    tr->repeats = res->repeats;
    cut_compile_info ci = res->comp; /* the runner's compile when it compiled the source itself (a serving rank) */
    if (bin)
        cut_compile_info_of(bin, &ci);
    tr->compile_ms = ci.compiled ? ci.compile_ms : 0;
    tr->regs = ci.compiled ? ci.regs : -1;
    tr->spills = ci.compiled && ci.spill_stores >= 0 ? ci.spill_stores + ci.spill_loads : -1;
    tr->env = *env;
    cut_utc_timestamp(tr->ts, sizeof tr->ts);
    tr->energy_mj = er->energy_mj;
    tr->edp = er->edp;
    tr->power_w = er->power_w;
}

typedef struct loop_run {
    const cut_tune_cfg *cfg;
    cut_task *t;
    cut_runner **r; /* r[0..nr) */
    int nr;
    cut_strategy *strat;
    cut_reclog log;
    cut_tune_stats *st;
} loop_run;

/* Records job jb as trial `trial`: a record line of the log (one write), or the task's journal. */
static int record_job(loop_run *x, const cut_job *jb, int trial, const cut_measure_env *env, const cut_energy_result *er,
                      cut_trial *tr, cut_err *e)
{
    const cut_compiled *bin = x->cfg->use_nvrtc ? &jb->bin : NULL;
    fill_trial(tr, trial, jb, bin, env, er);
    if (x->t->journal) {
        cut_task_outcome o = {trial, &jb->sched, &jb->ks, bin, &jb->res, jb->runner};
        return x->t->journal->record(x->t, &o, e);
    }
    cut_buf b;
    cut_buf_init(&b);
    x->t->record(x->t, tr, &b);
    int rc = cut_reclog_append_line(&x->log, b.data, b.len, e);
    cut_buf_free(&b);
    return rc;
}

/* 1 when job jb counts against the budget (the task decides; by default every candidate does). */
static int counts(const loop_run *x, const cut_job *jb)
{
    return x->t->counts ? x->t->counts(x->t, &jb->sched) != 0 : 1;
}

/* Records written the moment each trial is measured (time objective, a record log): jobs are committed in batch
 * order, each as soon as it and every job before it are final, one write and an fsync each, so a kill loses at most
 * the trial being measured. */
typedef struct commit_run {
    loop_run *x;
    cut_job **jobs;
    int n, next, trial;
    int *ready, *written;
    const cut_measure_env **envs; /* each runner's, by jobs' runner index */
    pthread_mutex_t mu;
    int rc;
    cut_err e;
} commit_run;

/* Each runner's env, refreshed: a trial's record says where it was measured (one of several GPUs, or ranks). */
static void runner_envs(const loop_run *x, const cut_measure_env **envs)
{
    for (int k = 0; k < x->nr; k++)
        envs[k] = x->r[k]->env(x->r[k]);
}

static const cut_measure_env *job_env(const cut_measure_env *const *envs, const cut_job *jb)
{
    return envs[jb->runner > 0 ? jb->runner : 0];
}

/* Writes the ready jobs from c->next on (c->mu held). */
static void commit_ready(commit_run *c)
{
    int wrote = 0;
    while (c->rc == 0 && c->next < c->n && c->ready[c->next]) {
        cut_job *jb = c->jobs[c->next];
        if (jb->res.not_run) { /* the time budget ran out before it: nothing to record */
            c->next++;
            continue;
        }
        cut_trial tr;
        const cut_energy_result none = {0};
        if ((c->rc = record_job(c->x, jb, c->trial, job_env(c->envs, jb), &none, &tr, &c->e)) != 0)
            break;
        c->written[c->next] = 1;
        wrote = 1;
        c->trial += counts(c->x, jb);
        c->next++;
    }
    if (wrote && c->rc == 0)
        c->rc = cut_reclog_sync(&c->x->log, &c->e);
}

/* $CUTUNE_MEASURE_TRACE names a file that gets one line per measured trial ("measured <seq>"), written when its
 * result is final and before its record: a kill test counts trials measured but never recorded against it. */
static void trace_measured(const cut_job *jb)
{
    const char *path = getenv("CUTUNE_MEASURE_TRACE");
    if (!path || !*path)
        return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    char line[64];
    int n = snprintf(line, sizeof line, "measured %d\n", jb->seq);
    (void)!write(fd, line, (size_t)n);
    close(fd);
}

static void commit_done(void *ctx, int i)
{
    commit_run *c = ctx;
    if (!c->jobs[i]->res.not_run)
        trace_measured(c->jobs[i]);
    pthread_mutex_lock(&c->mu);
    c->ready[i] = 1;
    commit_ready(c);
    pthread_mutex_unlock(&c->mu);
}

/* Measures finished jobs (and with an energy objective the energy of the fastest few), records them (one write
 * each, then fsync, each as soon as it is measured when the objective is time; or the task's journal) and feeds the
 * strategy. first_trial: the budget spent before them. */
static int measure_record(loop_run *x, cut_job **jobs, int n, int first_trial, cut_err *e)
{
    const cut_tune_cfg *cfg = x->cfg;
    const int early = cfg->objective == CUT_OBJ_TIME && !x->t->journal;
    const cut_measure_env **envs = cut_xcalloc((size_t)x->nr, sizeof *envs);
    runner_envs(x, envs);
    commit_run c = {.x = x, .jobs = jobs, .n = n, .trial = first_trial, .envs = envs};
    c.ready = cut_xcalloc((size_t)(n > 0 ? n : 1), sizeof *c.ready);
    c.written = cut_xcalloc((size_t)(n > 0 ? n : 1), sizeof *c.written);
    pthread_mutex_init(&c.mu, NULL);
    for (int i = 0; i < n; i++)
        c.ready[i] = jobs[i]->res.status != CUT_ST_OK; /* codegen failed: final already */
    int rc = cut_tune_measure_jobs_each(x->t, jobs, n, cfg->use_nvrtc, x->r, x->nr, early ? commit_done : NULL, &c, e);
    for (int i = 0; i < n && rc == 0; i++)
        if (!c.ready[i] && jobs[i]->runner >= 0 && !jobs[i]->res.not_run)
            trace_measured(jobs[i]);
    if (rc == 0 && early) { /* what the runners did not report one by one */
        for (int i = 0; i < n; i++)
            c.ready[i] = 1;
        commit_ready(&c);
        if ((rc = c.rc) != 0)
            *e = c.e;
    } else if (rc == 0 && c.rc != 0) {
        rc = -1;
        *e = c.e;
    }
    cut_energy_result *er = cut_xcalloc((size_t)n, sizeof *er);
    if (rc == 0 && cfg->objective != CUT_OBJ_TIME)
        rc = measure_energy(jobs, n, cfg, x->r[0], first_trial, er, e);
    if (rc == 0)
        runner_envs(x, envs);
    for (int i = 0, trial = first_trial; rc == 0 && i < n; i++) {
        cut_job *jb = jobs[i];
        const cut_compiled *bin = cfg->use_nvrtc ? &jb->bin : NULL;
        cut_trial tr;
        if (jb->res.not_run)
            continue; /* never started: not recorded, not observed, no budget spent */
        if (c.written[i])
            fill_trial(&tr, trial, jb, bin, job_env(envs, jb), &er[i]);
        else if ((rc = record_job(x, jb, trial, job_env(envs, jb), &er[i], &tr, e)) != 0)
            break;
        track_best(x->st, cfg->objective, &tr);
        /* The strategy learns time, the dense signal (every candidate has it); energy is measured only for the
         * few fastest of each round. */
        x->strat->observe(x->strat, &jb->sched, jb->res.status == CUT_ST_OK ? jb->res.median_ms : -1, tr.regs);
        if (jb->res.status != CUT_ST_OK && jb->res.status != CUT_ST_COMPILED) { /* compiled, not run: no failure */
            x->st->failures_new++;
            cut_tune_dump_failure(cfg->kernel_dump_dir, x->t->stem, trial, &jb->ks, bin, &jb->res);
        }
        trial += counts(x, jb);
    }
    free(er);
    free(envs);
    pthread_mutex_destroy(&c.mu);
    free(c.ready);
    free(c.written);
    if (rc == 0 && x->t->journal)
        return x->t->journal->round(x->t, e);
    return rc == 0 ? cut_reclog_sync(&x->log, e) : -1;
}

/* Proposes up to want new schedules, generates their code and queues them for compilation. Returns how many. */
static int refill(loop_run *x, cut_cstream *cs, int want, cut_sched *buf, int *seq)
{
    int got = x->strat->propose(x->strat, want, buf);
    for (int i = 0; i < got; i++) {
        cut_job *j = cut_xcalloc(1, sizeof *j);
        j->sched = buf[i];
        j->seq = (*seq)++;
        j->runner = -1;
        cut_err e;
        if (x->t->codegen(x->t, &j->sched, &j->ks, &e) != 0) {
            j->res.status = CUT_ST_COMPILE_ERROR;
            snprintf(j->res.error, sizeof j->res.error, "codegen: %s", e.msg);
        }
        cut_cstream_submit(cs, j);
    }
    return got;
}

static double best_gflops(const loop_run *x)
{
    return x->st->best_ms > 0 && x->t->flops > 0 ? x->t->flops / (x->st->best_ms * 1e6) : 0;
}

/* What the progress line shows as the best: GFLOP/s, or minus the best ms when the FLOPs are unknown. */
static double progress_best(const loop_run *x)
{
    return x->t->flops > 0 ? best_gflops(x) : x->st->best_ms > 0 ? -x->st->best_ms : 0;
}

/* Jobs in the order proposed (a round of a task in_rounds: the cstream hands them back as they finish compiling). */
static void sort_by_seq(cut_job **jobs, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && jobs[j - 1]->seq > jobs[j]->seq; j--) {
            cut_job *tmp = jobs[j];
            jobs[j] = jobs[j - 1];
            jobs[j - 1] = tmp;
        }
}

/* After their compile: setup failures end the run; the task's compiled hook may keep a job from being measured. */
static int after_compile(loop_run *x, cut_job **jobs, int n, cut_err *e)
{
    for (int i = 0; i < n; i++) {
        if (jobs[i]->setup_failed)
            return cut_err_set(e, "%s", jobs[i]->err.msg);
        if (x->t->compiled && jobs[i]->res.status == CUT_ST_OK &&
            x->t->compiled(x->t, &jobs[i]->sched, &jobs[i]->ks, x->cfg->use_nvrtc ? &jobs[i]->bin : NULL,
                           &jobs[i]->res, e) != 0)
            return -1;
    }
    return 0;
}

/* One task's loop between its start and its end (cut_tune_begin .. cut_tune_end): what persists from one batch to
 * the next. */
struct cut_tune_run {
    loop_run x;
    double t0;
    int done;      /* the budget spent so far (trials in the log, or what the journal counts) */
    int batch;     /* candidates per batch */
    int seq;       /* the next job's place in the order proposed */
    int exhausted; /* the strategy proposed nothing more: the space is searched */
    cut_cstream *cs;
    cut_sched *buf;
    cut_job **jobs;
};

/* The time budget holds within a batch too: the runners start no candidate once it is spent (on = 0: lifted, for
 * what follows the search, e.g. --final, or another task's batch). */
static void time_limit(cut_tune_run *u, int on)
{
    const double max_s = u->x.cfg->max_seconds;
    for (int i = 0; i < u->x.nr; i++)
        u->x.r[i]->stop_at = on && max_s > 0 ? u->t0 + max_s : 0;
}

/* Takes the next finished jobs (a task in_rounds: its whole round, in the order proposed), measures, records and
 * observes them, and adds the budget they spent to u->done. */
static int take_measure(cut_tune_run *u, cut_err *e)
{
    loop_run *x = &u->x;
    const int in_rounds = x->t->in_rounds, inflight = cut_cstream_inflight(u->cs);
    int n = cut_cstream_take(u->cs, u->jobs, u->batch, in_rounds ? inflight : CUT_MIN(8, inflight));
    if (in_rounds)
        sort_by_seq(u->jobs, n);
    int *cost = cut_xcalloc((size_t)(n > 0 ? n : 1), sizeof *cost); /* asked before they are recorded */
    for (int i = 0; i < n; i++)
        cost[i] = counts(x, u->jobs[i]);
    int rc = after_compile(x, u->jobs, n, e);
    if (rc == 0)
        rc = measure_record(x, u->jobs, n, u->done, e);
    int spent = 0, ran = 0; /* a job the time budget kept from starting is neither */
    for (int i = 0; i < n; i++) {
        spent += !u->jobs[i]->res.not_run && cost[i];
        ran += !u->jobs[i]->res.not_run;
        cut_job_free(u->jobs[i]);
    }
    free(cost);
    if (rc != 0)
        return rc;
    u->done += spent;
    x->st->trials_new += ran;
    return 0;
}

/* The rounds: proposals compile on all cores while the runner measures whatever has finished compiling; up to two
 * batches are in flight, so a slow compile never holds up the measurements. In the first WARMUP_TRIALS the next
 * batch waits until the current one is mostly measured: the cost model then learns from nearly every trial before
 * it proposes, which matters most while it has little data (it costs a little GPU idle time). A task in_rounds has
 * one round in flight: it compiles on all cores, is measured on every runner, then recorded and observed in the
 * order proposed before the next is proposed. */
static int rounds(cut_tune_run *u, cut_err *e)
{
    loop_run *x = &u->x;
    const cut_tune_cfg *cfg = x->cfg;
    int rc = 0, out_of_time = 0;
    cut_progress prog = {.last_s = u->t0};
    time_limit(u, 1);
    while (rc == 0) {
        int inflight = cut_cstream_inflight(u->cs), remaining = cfg->trials - u->done - inflight;
        if ((out_of_time = cfg->max_seconds > 0 && cut_now_s() - u->t0 >= cfg->max_seconds))
            break; /* what is still compiling or queued is dropped (cut_cstream_free) */
        int depth = x->t->in_rounds ? 1 : u->done < WARMUP_TRIALS ? CUT_MAX(u->batch / 4, 1) : 2 * u->batch;
        if (remaining > 0 && inflight < depth && !u->exhausted)
            u->exhausted = refill(x, u->cs, CUT_MIN(u->batch, remaining), u->buf, &u->seq) == 0;
        if (cut_cstream_inflight(u->cs) == 0)
            break;
        if ((rc = take_measure(u, e)) != 0)
            break;
        double el = cut_now_s() - u->t0;
        cut_tune_progress(cfg, &prog, x->t->label, u->done, cfg->trials, x->st->failures_new, progress_best(x),
                          el > 0 ? x->st->trials_new / el : 0, 0);
    }
    if (rc == 0 && u->done < cfg->trials && cfg->progress) /* on a terminal, after the line rewritten in place */
        cut_log(CUT_LOG_INFO, "%s%s: stopped after %d trials: %s\n", cut_log_tty() && prog.printed ? "\n" : "",
                x->t->what, u->done, out_of_time ? "time budget spent" : "the schedule space is exhausted");
    if (rc == 0)
        cut_tune_progress(cfg, &prog, x->t->label, u->done, cfg->trials, x->st->failures_new, progress_best(x),
                          x->st->trials_new / (cut_now_s() - u->t0 + 1e-9), 1);
    time_limit(u, 0);
    x->st->trials_total = u->done;
    return rc;
}

/* Feeds the existing log to the strategy and the best (resume). Returns the trials it counts, or -1. */
static int resume(loop_run *x, const cut_trial *old, int nold, int extra)
{
    for (int i = 0; i < nold; i++) {
        x->strat->observe(x->strat, &old[i].sched, old[i].status == CUT_ST_OK ? old[i].median_ms : -1, old[i].regs);
        track_best(x->st, x->cfg->objective, &old[i]);
    }
    return nold + extra;
}

/* Resume only counts trials measured where this run measures (on one of its runners): a log of another backend or
 * GPU is refused (its times are not comparable with this run's), nothing in it changed. */
static int check_same_place(const loop_run *x, const char *path, const cut_trial *old, int nold, cut_err *e)
{
    const cut_measure_env **envs = cut_xcalloc((size_t)x->nr, sizeof *envs);
    runner_envs(x, envs);
    const cut_measure_env *now = envs[0];
    for (int i = 0; i < nold; i++) {
        int same = 0;
        for (int k = 0; k < x->nr && !same; k++)
            same = cut_env_same_place(&old[i].env, envs[k]);
        if (same)
            continue;
        char was[256], is[256];
        cut_env_describe(&old[i].env, was, sizeof was);
        cut_env_describe(now, is, sizeof is);
        free(envs);
        return cut_err_set(e, "%s holds trials measured on %s (trial %d is the first), and this run measures on %s: "
                              "resuming would count them as done and mix their times in one log. Use another "
                              "--outdir, or move the log away to start %s afresh (nothing was changed)",
                           path, was, old[i].trial, is, x->t->what);
    }
    free(envs);
    return 0;
}

/* Prepares the runners for the task's work (a no-op where they hold it already: the work is keyed by op and seed). */
static int prepare_runners(loop_run *x, cut_err *e)
{
    for (int i = 0; i < x->nr; i++) {
        const int like = i > 0 ? cut_runner_prepare_like(x->r[i], x->r[0], e) : 0; /* the op's work built once */
        if (like < 0 || (like == 0 && x->t->prepare(x->t, x->r[i], x->cfg->seed, e) != 0))
            return cut_err_wrap(e, "preparing %s", x->t->what);
    }
    return 0;
}

/* The record log's side of the start: the log opened for appending first (locked; a last line a kill tore is cut,
 * a whole last record whose newline was lost is kept), then loaded, checked to come from where this run measures,
 * and fed to the strategy. */
static int open_log(loop_run *x, const char *path, int *done, cut_err *e)
{
    cut_trial *old = NULL;
    int nold = 0, extra = 0;
    if (cut_reclog_open(path, &x->log, e) != 0 || x->t->load(x->t, path, &old, &nold, &extra, e) != 0)
        return -1;
    int rc = check_same_place(x, path, old, nold, e);
    if (rc == 0 && !(x->strat = x->t->strategy(x->t, x->cfg, nold, e)))
        rc = -1;
    for (int i = 0; rc == 0 && i < x->nr; i++)
        if (x->t->check_runner && x->t->check_runner(x->t, x->r[i], e) != 0)
            rc = -1;
    if (rc == 0)
        *done = resume(x, old, nold, extra);
    free(old);
    x->st->trials_total = *done;
    if (rc != 0 || *done >= x->cfg->trials)
        return rc;
    if (x->cfg->use_prior && x->t->priors)
        x->st->prior_trials = x->t->priors(x->t, x->strat, x->cfg, x->r[0]->env(x->r[0])->gpu_name, nold);
    return prepare_runners(x, e);
}

/* The journal's side of the start: the strategy, the runners checked, the journal opened (resumed or fresh; it
 * prepares the runners). */
static int open_journal(loop_run *x, int *done, cut_err *e)
{
    if (!(x->strat = x->t->strategy(x->t, x->cfg, 0, e)))
        return -1;
    for (int i = 0; i < x->nr; i++)
        if (x->t->check_runner && x->t->check_runner(x->t, x->r[i], e) != 0)
            return -1;
    if (x->t->journal->open(x->t, x->cfg, x->strat, x->r, x->nr, done, e) != 0)
        return -1;
    x->st->trials_total = *done;
    return 0;
}

int cut_tune_task(const cut_tune_cfg *cfg, cut_task *t, cut_runner *r, cut_tune_stats *st, cut_err *e)
{
    return cut_tune_task_on(cfg, t, &r, 1, st, e);
}

/* Ends the run u started (the log closed, the strategy freed, st's best and time filled in) and frees it. */
static void run_free(cut_tune_run *u)
{
    if (!u)
        return;
    cut_cstream_free(u->cs);
    free(u->buf);
    free(u->jobs);
    cut_reclog_close(&u->x.log);
    cut_strategy_free(u->x.strat);
    u->x.st->best_gflops = best_gflops(&u->x);
    u->x.st->seconds = cut_now_s() - u->t0;
    free(u);
}

/* The checks made before anything opens. */
static int check_start(const cut_tune_cfg *cfg, const cut_task *t, int nr, cut_err *e)
{
    if (nr < 1)
        return cut_err_set(e, "no runner to measure %s on", t->what);
    if (cfg->objective != CUT_OBJ_TIME && !t->has_energy)
        return cut_err_set(e, "--objective %s needs energy measurements, and this kind of work does not record them",
                           cut_objective_name(cfg->objective));
    return 0;
}

int cut_tune_begin(const cut_tune_cfg *cfg, cut_task *t, cut_runner **r, int nr, cut_tune_stats *st,
                   cut_tune_run **out, cut_err *e)
{
    memset(st, 0, sizeof *st);
    st->best_ms = st->best_obj = st->best_energy_mj = st->best_edp = st->best_power_w = -1;
    *out = NULL;
    if (check_start(cfg, t, nr, e) != 0)
        return -1;
    cut_tune_run *u = cut_xcalloc(1, sizeof *u);
    u->t0 = cut_now_s();
    u->x = (loop_run){.cfg = cfg, .t = t, .r = r, .nr = nr, .st = st};
    u->x.log.fd = -1;
    char path[1024];
    int rc = 0;
    if (!t->journal && snprintf(path, sizeof path, "%s/%s.json", cfg->records_dir, t->name) >= (int)sizeof path)
        rc = cut_err_set(e, "records path too long");
    if (rc == 0)
        rc = t->journal ? open_journal(&u->x, &u->done, e) : open_log(&u->x, path, &u->done, e);
    if (rc == 0 && u->done >= cfg->trials)
        st->skipped = 1;
    else if (rc == 0 && !t->journal && t->start && t->start(t, cfg, r[0], e) != 0)
        rc = -1;
    else if (rc == 0 && !(u->cs = cut_cstream_new(cfg->use_nvrtc ? &cfg->copts : NULL, e)))
        rc = -1;
    if (rc != 0) {
        run_free(u);
        return -1;
    }
    u->batch = cfg->batch > 0 ? CUT_MIN(cfg->batch, 256) : t->batch > 0 ? t->batch : 16;
    u->buf = cut_xcalloc((size_t)u->batch, sizeof *u->buf);
    u->jobs = cut_xcalloc((size_t)u->batch, sizeof *u->jobs);
    *out = u;
    return 0;
}

int cut_tune_step(cut_tune_run *u, int want, cut_err *e)
{
    const cut_tune_cfg *cfg = u->x.cfg;
    want = CUT_MIN(CUT_MIN(want, u->batch), cfg->trials - u->done);
    if (u->x.st->skipped || u->exhausted || want <= 0)
        return 0;
    if (prepare_runners(&u->x, e) != 0) /* other tasks' batches may have come between this task's */
        return -1;
    const int before = u->done;
    int rc = 0;
    time_limit(u, 1);
    u->exhausted = refill(&u->x, u->cs, want, u->buf, &u->seq) == 0;
    while (rc == 0 && cut_cstream_inflight(u->cs) > 0)
        rc = take_measure(u, e);
    time_limit(u, 0);
    u->x.st->trials_total = u->done;
    return rc == 0 ? u->done - before : -1;
}

int cut_tune_exhausted(const cut_tune_run *u) { return u->exhausted || u->x.st->skipped; }

int cut_tune_batch(const cut_tune_run *u) { return u->batch; }

void cut_tune_end(cut_tune_run *u) { run_free(u); }

int cut_tune_task_on(const cut_tune_cfg *cfg, cut_task *t, cut_runner **r, int nr, cut_tune_stats *st, cut_err *e)
{
    cut_tune_run *u;
    int rc = cut_tune_begin(cfg, t, r, nr, st, &u, e);
    if (rc == 0 && !st->skipped)
        rc = rounds(u, e);
    cut_tune_end(u);
    return rc;
}
