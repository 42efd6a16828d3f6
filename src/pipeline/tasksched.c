/* cutune — the task scheduler (cutune/tasksched.h): Ansor's gradient rule over several tasks' loops, one batch at a
 * time on the same runners. */
#include "cutune/log.h"
#include "cutune/tasksched.h"
#include "cutune/util.h"
#include "pipeline/cstream.h"

#include <stdlib.h>
#include <string.h>

#define LEAVE_GROUP_ROUNDS 5 /* rounds ahead of every other member before a slow task leaves its group (Ansor's) */

void cut_tasksched_opts_default(cut_tasksched_opts *o)
{
    *o = (cut_tasksched_opts){.alpha = 0.2, .beta = 2, .window = 3, .eps = 0.05, .seed = 0};
}

void cut_tasksched_init(cut_tasksched *s, int n, const cut_tasksched_opts *o)
{
    memset(s, 0, sizeof *s);
    if (o)
        s->o = *o;
    else
        cut_tasksched_opts_default(&s->o);
    s->n = n;
    s->t = cut_xcalloc((size_t)(n > 0 ? n : 1), sizeof *s->t);
    for (int i = 0; i < n; i++)
        s->t[i] = (cut_tasksched_task){.weight = 1, .group = -1, .best = CUT_TASKSCHED_NO_TIME};
    cut_rng_seed(&s->rng, s->o.seed);
}

void cut_tasksched_free(cut_tasksched *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        free(s->t[i].hist);
    free(s->t);
    memset(s, 0, sizeof *s);
}

/* The task's best, appended to its history. */
static void push_best(cut_tasksched_task *k)
{
    k->hist = cut_xrealloc(k->hist, (size_t)(k->nhist + 1) * sizeof *k->hist);
    k->hist[k->nhist++] = k->best;
}

/* The highest speed (FLOPs per unit of time) reached in task i's group, and how many rounds its other members had at
 * most (into *others). 0 when i has no group, the group no other member, or nobody a time yet. */
static double group_speed(const cut_tasksched *s, int i, int *others)
{
    const cut_tasksched_task *k = &s->t[i];
    double v = 0;
    int members = 0;
    *others = 0;
    for (int j = 0; k->group >= 0 && j < s->n; j++) {
        const cut_tasksched_task *m = &s->t[j];
        if (m->group != k->group)
            continue;
        members++;
        if (j != i)
            *others = CUT_MAX(*others, m->rounds);
        if (m->flops > 0 && m->best < CUT_TASKSCHED_NO_TIME)
            v = CUT_MAX(v, m->flops / m->best);
    }
    return members > 1 ? v : 0;
}

/* A task tuned for many rounds that still runs far below its group's speed is not like its members: it leaves. */
static void leave_group(cut_tasksched *s, int i)
{
    cut_tasksched_task *k = &s->t[i];
    int others;
    const double v = group_speed(s, i, &others);
    if (v > 0 && k->flops > 0 && k->flops / k->best < v / s->o.beta && k->rounds > LEAVE_GROUP_ROUNDS + others)
        k->group = -1;
}

void cut_tasksched_observe(cut_tasksched *s, int i, int trials, double best, int exhausted)
{
    cut_tasksched_task *k = &s->t[i];
    k->rounds++;
    k->trials += trials;
    if (best > 0 && best < k->best)
        k->best = best;
    push_best(k);
    k->dead |= exhausted;
    leave_group(s, i);
}

void cut_tasksched_resume(cut_tasksched *s, int i, int trials, double best, int round)
{
    cut_tasksched_task *k = &s->t[i];
    k->trials = trials;
    k->rounds = round > 0 ? (trials + round / 2) / round : 0;
    if (best > 0)
        k->best = best;
    if (trials > 0)
        push_best(k);
}

double cut_tasksched_gradient(const cut_tasksched *s, int i)
{
    const cut_tasksched_task *k = &s->t[i];
    const int w = s->o.window;
    if (k->dead || k->rounds == 0)
        return 0;
    double backward = 0; /* the gain per round over the last w rounds */
    if (w > 0 && k->nhist > w)
        backward = (k->hist[k->nhist - 1] - k->hist[k->nhist - 1 - w]) / w;
    double next = k->best - k->best / k->rounds; /* the time falling like 1/t */
    int others;
    const double v = k->flops > 0 ? group_speed(s, i, &others) : 0;
    if (v > 0) /* or down to what 1/beta of its group's best speed would give, when that is lower */
        next = CUT_MIN(next, s->o.beta * k->flops / v);
    const double forward = next - k->best;
    return k->weight * (s->o.alpha * backward + (1 - s->o.alpha) * forward);
}

/* The live task of rank `nth` (0-based) in list order. */
static int nth_live(const cut_tasksched *s, int nth)
{
    for (int i = 0; i < s->n; i++)
        if (!s->t[i].dead && nth-- == 0)
            return i;
    return -1;
}

int cut_tasksched_next(cut_tasksched *s)
{
    int live = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->t[i].dead)
            continue;
        if (s->t[i].rounds == 0)
            return i; /* the warm-up: a round for each in list order */
        live++;
    }
    if (live == 0)
        return -1;
    if (cut_rng_double(&s->rng) < s->o.eps)
        return nth_live(s, (int)cut_rng_below(&s->rng, (uint32_t)live));
    int best = -1, equal = 1;
    double lo = 0, first = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->t[i].dead)
            continue;
        const double g = cut_tasksched_gradient(s, i);
        if (best < 0)
            first = g;
        equal &= g == first;
        if (best < 0 || g < lo)
            lo = g, best = i;
    }
    return equal ? nth_live(s, (int)cut_rng_below(&s->rng, (uint32_t)live)) : best;
}

double cut_tasksched_network(const cut_tasksched *s)
{
    double f = 0;
    for (int i = 0; i < s->n; i++)
        if (s->t[i].best < CUT_TASKSCHED_NO_TIME)
            f += s->t[i].weight * s->t[i].best;
    return f;
}

/* ---- the scheduled run ---- */

typedef struct sched_run {
    const cut_tune_cfg *cfg;
    cut_tasksched_item *items;
    int n;
    cut_tune_run **runs; /* n, NULL where not begun */
    cut_tasksched s;
    int budget, spent, nrounds;
    const char *json_path;
    double t0;
    cut_progress prog;
} sched_run;

/* Task i's round: at most its batch, and at most an n-th of the budget, so that the warm-up gives each a round. */
static int round_size(const sched_run *z, int i)
{
    return CUT_MIN(cut_tune_batch(z->runs[i]), CUT_MAX(1, z->budget / z->n));
}

/* The objective's best of task i (ms with --objective time), <= 0: none. */
static double best_of(const sched_run *z, int i) { return z->items[i].st.best_obj; }

/* Every task's loop begun (its log resumed) and the scheduler told what the logs hold. */
static int begin_all(sched_run *z, cut_runner **r, int nr, cut_err *e)
{
    for (int i = 0; i < z->n; i++) {
        cut_tasksched_item *it = &z->items[i];
        if (it->t->journal)
            return cut_err_set(e, "%s keeps a journal of its own: the task scheduler tunes work with a record log",
                               it->t->what);
        if (!(it->weight > 0))
            return cut_err_set(e, "%s: weight %g (it must be above 0)", it->t->what, it->weight);
        if (cut_tune_begin(z->cfg, it->t, r, nr, &it->st, &z->runs[i], e) != 0)
            return cut_err_wrap(e, "%s", it->t->what);
        cut_tasksched_task *k = &z->s.t[i];
        k->weight = it->weight;
        k->group = it->group;
        k->flops = z->cfg->objective == CUT_OBJ_TIME ? it->t->flops : 0; /* speeds compare times only */
        cut_tasksched_resume(&z->s, i, it->st.trials_total, best_of(z, i), round_size(z, i));
        k->dead = cut_tune_exhausted(z->runs[i]);
        z->spent += it->st.trials_total;
    }
    return 0;
}

/* "null" or the number, for a JSON value. */
static const char *num_or_null(double v, int valid, char *buf, size_t n)
{
    if (!valid)
        return "null";
    snprintf(buf, n, "%.9g", v);
    return buf;
}

/* The run's state as json_path's object (cutune/tasksched.h). */
static int write_json(const sched_run *z, cut_err *e)
{
    if (!z->json_path)
        return 0;
    const cut_tasksched_opts *o = &z->s.o;
    cut_buf b;
    cut_buf_init(&b);
    char net[32];
    const double f = cut_tasksched_network(&z->s);
    cut_buf_printf(&b, "{\"scheduler\":\"gradient\",\"budget\":%d,\"trials\":%d,\"rounds_new\":%d,\"network_ms\":%s,"
                       "\"alpha\":%g,\"beta\":%g,\"window\":%d,\"eps\":%g,\"seed\":%llu,\"tasks\":[",
                   z->budget, z->spent, z->nrounds, num_or_null(f, f > 0, net, sizeof net), o->alpha, o->beta,
                   o->window, o->eps, (unsigned long long)o->seed);
    for (int i = 0; i < z->n; i++) {
        const cut_tasksched_item *it = &z->items[i];
        const cut_tasksched_task *k = &z->s.t[i];
        char best[32];
        cut_buf_printf(&b, "%s\n {\"workload\":\"%s\",\"what\":\"%s\",\"weight\":%g,\"group\":%d,\"flops\":%.6g,"
                           "\"trials\":%d,\"trials_new\":%d,\"rounds\":%d,\"best_ms\":%s,\"gradient\":%.9g,"
                           "\"dead\":%s}",
                       i ? "," : "", it->t->name, it->t->what, k->weight, k->group, it->t->flops, k->trials,
                       it->st.trials_new, k->rounds, num_or_null(it->st.best_ms, it->st.best_ms > 0, best, sizeof best),
                       cut_tasksched_gradient(&z->s, i), k->dead ? "true" : "false");
    }
    cut_buf_printf(&b, "\n]}\n");
    int rc = cut_write_file_atomic(z->json_path, b.data, b.len, e);
    cut_buf_free(&b);
    return rc;
}

static void progress(sched_run *z, int last, int final)
{
    int failed = 0, fresh = 0;
    for (int i = 0; i < z->n; i++) {
        failed += z->items[i].st.failures_new;
        fresh += z->items[i].st.trials_new;
    }
    char label[96];
    snprintf(label, sizeof label, "scheduler, round %d (%s)", z->nrounds, last >= 0 ? z->items[last].t->what : "-");
    const double el = cut_now_s() - z->t0, f = cut_tasksched_network(&z->s);
    cut_tune_progress(z->cfg, &z->prog, label, z->spent, z->budget, failed, f > 0 ? -f : 0, el > 0 ? fresh / el : 0,
                      final);
}

/* The rounds until the budget, the time or every task's space is spent. */
static int sched_rounds(sched_run *z, cut_err *e)
{
    const cut_tune_cfg *cfg = z->cfg;
    int last = -1;
    const char *why = NULL;
    while (z->spent < z->budget) {
        const int i = cfg->max_seconds > 0 && cut_now_s() - z->t0 >= cfg->max_seconds ? -2 : cut_tasksched_next(&z->s);
        if (i < 0) {
            why = i == -2 ? "time budget spent" : "every task's schedule space is searched";
            break;
        }
        const int got = cut_tune_step(z->runs[i], CUT_MIN(round_size(z, i), z->budget - z->spent), e);
        if (got < 0)
            return cut_err_wrap(e, "%s", z->items[i].t->what);
        /* a round that spent nothing (its space searched, or its time) gives the task no further round */
        cut_tasksched_observe(&z->s, i, got, best_of(z, i), got == 0 || cut_tune_exhausted(z->runs[i]));
        z->spent += got;
        z->nrounds++;
        last = i;
        if (z->s.t[i].dead && cfg->progress)
            cut_log(CUT_LOG_INFO, "%s%s: no more rounds after %d trials: its schedule space is searched\n",
                    cut_log_tty() && z->prog.printed ? "\n" : "", z->items[i].t->what, z->s.t[i].trials);
        progress(z, last, 0);
        if (write_json(z, e) != 0)
            return -1;
    }
    if (why && cfg->progress)
        cut_log(CUT_LOG_INFO, "%sscheduler: stopped after %d of %d trials: %s\n",
                cut_log_tty() && z->prog.printed ? "\n" : "", z->spent, z->budget, why);
    progress(z, last, 1);
    return write_json(z, e);
}

int cut_tasksched_tune(const cut_tune_cfg *cfg, cut_tasksched_item *items, int n, cut_runner **r, int nr,
                       const cut_tasksched_opts *o, const char *json_path, cut_err *e)
{
    if (n < 1)
        return cut_err_set(e, "the task scheduler got no task to tune");
    sched_run z = {.cfg = cfg, .items = items, .n = n, .budget = cfg->trials, .json_path = json_path};
    z.t0 = z.prog.last_s = cut_now_s();
    z.runs = cut_xcalloc((size_t)n, sizeof *z.runs);
    cut_tasksched_init(&z.s, n, o);
    int rc = begin_all(&z, r, nr, e);
    if (rc == 0)
        rc = sched_rounds(&z, e);
    for (int i = 0; i < n; i++) {
        cut_tune_end(z.runs[i]);
        items[i].rounds = z.s.t[i].rounds;
    }
    cut_tasksched_free(&z.s);
    free(z.runs);
    return rc;
}
