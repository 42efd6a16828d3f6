/* cutune — the task scheduler: one trial budget over several workloads (a network's layers), given round by round
 * to the workload where a round helps the network most (Ansor's gradient rule, Zheng et al., OSDI 2020, section 6).
 *
 * The network's time is f = sum_i w_i * g_i: w_i how often the network runs task i (its multiplicity in the list),
 * g_i the task's best time so far. Every task first gets one round, in list order (the warm-up). After that, each
 * round goes to the task with the most negative estimate of df/dt_i, t_i being the rounds task i was given:
 *
 *   df/dt_i ~ w_i * ( alpha * (g_i(t_i) - g_i(t_i - W)) / W                                    (backward: recent gain)
 *                   + (1 - alpha) * (min(g_i - g_i / t_i, beta * C_i / max_{k in N(i)} V_k) - g_i) )  (forward)
 *
 * The backward term is the task's improvement per round over its last W rounds (0 while it has had W rounds or fewer);
 * the forward term is an optimistic guess of the next round's gain: the time falling like 1/t_i, or down to what the
 * task would take at 1/beta of the best speed V_k = C_k / g_k (FLOPs over time) reached in its similarity group N(i)
 * (ops of one shape family, which should reach similar speeds), whichever is lower (no such bound for a task alone
 * in its group, or without FLOPs). A task that keeps far below its group (speed < max V_k / beta) after 5 rounds more than
 * any other member leaves it. With probability eps the round goes to a task drawn at random instead (epsilon-
 * greedy), and equal gradients are broken at random too. A task whose space is searched is never chosen again. A task
 * without a valid trial yet has g_i = CUT_TASKSCHED_NO_TIME, so it is chosen until it has one. */
#ifndef CUTUNE_TASKSCHED_H
#define CUTUNE_TASKSCHED_H

#include "cutune/common.h"
#include "cutune/task.h"
#include "cutune/tune.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CUT_TASKSCHED_NO_TIME 1e10 /* ms: the time of a task without a valid trial (Ansor's 1e10) */

typedef struct cut_tasksched_opts {
    double alpha; /* weight of the backward term (0.2) */
    double beta;  /* the similarity bound's factor (2) */
    int window;   /* W, the backward window in rounds (3) */
    double eps;   /* the chance a round goes to a random task (0.05) */
    uint64_t seed;
} cut_tasksched_opts;

/* Ansor's values: alpha 0.2, beta 2, window 3, eps 0.05; seed 0. */
void cut_tasksched_opts_default(cut_tasksched_opts *o);

/* What the scheduler knows of one task. */
typedef struct cut_tasksched_task {
    double weight;  /* w_i > 0: how often the network runs it */
    double flops;   /* C_i, per launch; 0: unknown (no similarity bound) */
    int group;      /* its similarity group (>= 0), -1: none */
    int rounds;     /* t_i: rounds given (after a resume, its trials over the round size, rounded) */
    int trials;     /* budget spent on it */
    double best;    /* g_i (ms, or the objective's unit), CUT_TASKSCHED_NO_TIME while it has no valid trial */
    double *hist;   /* best after each round observed, nhist of them (owned) */
    int nhist;
    int dead;       /* 1: its space is searched: never chosen again */
} cut_tasksched_task;

typedef struct cut_tasksched {
    cut_tasksched_opts o;
    int n;
    cut_tasksched_task *t; /* n, owned */
    cut_rng rng;
} cut_tasksched;

/* n tasks, each weight 1, no FLOPs, no group, no round yet. Free with cut_tasksched_free. */
void cut_tasksched_init(cut_tasksched *s, int n, const cut_tasksched_opts *o);
void cut_tasksched_free(cut_tasksched *s);
/* A round of task i ended: it spent trials, its best is now best (<= 0: still none), exhausted 1 when its space is
 * searched. The round is counted, best appended to its history, and its group left if it keeps far below it. */
void cut_tasksched_observe(cut_tasksched *s, int i, int trials, double best, int exhausted);
/* A resumed task: trials already spent, best (<= 0: none), rounds estimated as trials / round (rounded); its
 * history starts with that best. */
void cut_tasksched_resume(cut_tasksched *s, int i, int trials, double best, int round);
/* df/dt_i as above (<= 0; 0 for a task never given a round, or dead). */
double cut_tasksched_gradient(const cut_tasksched *s, int i);
/* The task the next round goes to: the first live task without a round (warm-up), else by the gradient (or at
 * random, with probability eps). -1 when every task is dead. */
int cut_tasksched_next(cut_tasksched *s);
/* sum_i w_i * g_i over the tasks with a valid trial (what the scheduler minimises). */
double cut_tasksched_network(const cut_tasksched *s);

/* ---- several tasks tuned under one budget (src/pipeline/tasksched.c) ---- */

/* One workload of a scheduled run. */
typedef struct cut_tasksched_item {
    cut_task *t;       /* borrowed */
    double weight;     /* > 0 */
    int group;         /* similarity group, -1: none */
    cut_tune_stats st; /* filled by the run */
    int rounds;        /* rounds it was given (resumed ones included) */
} cut_tasksched_item;

/* Tunes items[0..n) on runners r[0..nr) under cfg, cfg->trials being the budget of all of them together: each
 * task's loop is begun (its log resumed: trials it holds count against the budget), then rounds of at most
 * min(batch, budget / n) trials go to the task cut_tasksched_next picks, until the budget is spent, every task is
 * dead or cfg->max_seconds (counted from the start) is spent. With json_path (NULL: none), after every round a JSON
 * object is written there (atomically): {"scheduler":"gradient","budget","trials","rounds_new" (this run's),"network_ms",
 * "alpha","beta","window","eps","seed","tasks":[{"workload","what","weight","group","flops","trials","trials_new",
 * "rounds","best_ms" (null: none),"gradient","dead"}]}. -1 with e for setup errors (naming the task). */
int cut_tasksched_tune(const cut_tune_cfg *cfg, cut_tasksched_item *items, int n, cut_runner **r, int nr,
                       const cut_tasksched_opts *o, const char *json_path, cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
