/* cutune — the Conv2D op as a task of the one tuning loop (cutune/task.h): its case name, FLOPs, schedule space,
 * code, runner workload, prior logs and seed-001 record lines. */
#include "cutune/log.h"
#include "cutune/task.h"
#include "cutune/codegen.h"
#include "cutune/record.h"
#include "cutune/search.h"
#include "cutune/util.h"
#include "cutune/op.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRIOR_LOGS 3      /* other workloads' logs the cost model starts from: the nearest in shape */
#define PRIOR_PER_LOG 300 /* trials taken from each (training time grows with the total) */

typedef struct conv_wl {
    cut_conv c;
    int case_idx; /* 1-based */
} conv_wl;

static const conv_wl *wl_of(const cut_task *t) { return t->wl; }

/* The conv record of a trial. */
static void to_record(cut_record *rec, const conv_wl *w, const cut_trial *tr)
{
    memset(rec, 0, sizeof *rec);
    rec->case_idx = w->case_idx;
    rec->conv = w->c;
    snprintf(rec->dtype, sizeof rec->dtype, "%s", cut_dtype_name(w->c.dtype));
    rec->sched = tr->sched;
    rec->status = tr->status;
    snprintf(rec->error, sizeof rec->error, "%s", tr->error);
    rec->median_ms = tr->median_ms;
    rec->min_ms = tr->min_ms;
    rec->max_ms = tr->max_ms;
    rec->gflops = tr->status == CUT_ST_OK && tr->median_ms > 0 ? cut_conv_flops(&w->c) / (tr->median_ms * 1e6) : 0;
    rec->repeats = tr->repeats;
    rec->err = tr->err;
    rec->compile_ms = tr->compile_ms;
    rec->regs = tr->regs;
    rec->spills = tr->spills;
    rec->env = tr->env;
    snprintf(rec->ts, sizeof rec->ts, "%s", tr->ts);
    rec->trial = tr->trial;
    rec->energy_mj = tr->energy_mj;
    rec->edp = tr->edp;
    rec->power_w = tr->power_w;
}

static void conv_record(const cut_task *t, const cut_trial *tr, cut_buf *b)
{
    cut_record rec;
    to_record(&rec, wl_of(t), tr);
    cut_record_to_json(&rec, b);
}

static int conv_load(const cut_task *t, const char *path, cut_trial **out, int *n, int *extra, cut_err *e)
{
    (void)t;
    cut_record *recs = NULL;
    int nr = 0, partial = 0;
    *out = NULL;
    *n = *extra = 0;
    if (cut_records_load(path, &recs, &nr, &partial, e) != 0)
        return -1;
    cut_trial *tr = cut_xcalloc((size_t)(nr ? nr : 1), sizeof *tr);
    for (int i = 0; i < nr; i++) {
        const cut_record *r = &recs[i];
        tr[i] = (cut_trial){.trial = r->trial, .sched = r->sched, .status = r->status, .median_ms = r->median_ms,
                            .min_ms = r->min_ms, .max_ms = r->max_ms, .repeats = r->repeats, .err = r->err,
                            .compile_ms = r->compile_ms, .regs = r->regs, .spills = r->spills, .env = r->env,
                            .energy_mj = r->energy_mj, .edp = r->edp, .power_w = r->power_w};
        snprintf(tr[i].error, sizeof tr[i].error, "%s", r->error);
        snprintf(tr[i].ts, sizeof tr[i].ts, "%s", r->ts);
    }
    free(recs);
    *out = tr;
    *n = nr;
    return 0;
}

static cut_strategy *conv_strategy(const cut_task *t, const cut_tune_cfg *cfg, int nold, cut_err *e)
{
    const conv_wl *w = wl_of(t);
    uint64_t seed = cfg->seed ^ ((uint64_t)w->case_idx << 32) ^ (uint64_t)nold;
    return cut_task_strategy(cut_conv_space_new(&w->c, &cfg->limits), cfg, NULL, seed, e);
}

static int conv_codegen(const cut_task *t, const cut_sched *s, cut_kernel_src *out, cut_err *e)
{
    return cut_codegen_conv(&wl_of(t)->c, s, out, e);
}

static int conv_prepare(const cut_task *t, cut_runner *r, uint64_t seed, cut_err *e)
{
    return cut_runner_prepare_conv(r, &wl_of(t)->c, seed, e);
}

static int conv_sched_json(const cut_task *t, const cut_sched *s, char *buf, size_t n)
{
    (void)t;
    return cut_tpl_sched_json(CUT_OP_CONV2D, s, buf, n);
}

/* cuDNN's fastest fp32 (FMA-math) algorithm on the prepared case, in the GPU runner's worker. */
static int conv_baseline(const cut_task *t, cut_runner *r, const cut_compile_opts *co, int round, cut_result *res,
                         char *name, size_t n, cut_err *e)
{
    (void)t, (void)co, (void)round;
    return cut_runner_gpu_cudnn(r, res, name, n, e);
}

/* seed 001's <name>.csv beside the log: start_time, case, shape, dtype, backend, GPU, trials. */
static int conv_start(const cut_task *t, const cut_tune_cfg *cfg, cut_runner *r, cut_err *e)
{
    const conv_wl *w = wl_of(t);
    char csv[1024], start[32];
    if (snprintf(csv, sizeof csv, "%s/%s.csv", cfg->records_dir, t->name) >= (int)sizeof csv)
        return cut_err_set(e, "records path too long");
    cut_utc_timestamp(start, sizeof start);
    cut_record proto;
    memset(&proto, 0, sizeof proto);
    proto.case_idx = w->case_idx;
    proto.conv = w->c;
    snprintf(proto.dtype, sizeof proto.dtype, "%s", cut_dtype_name(w->c.dtype));
    proto.env = *r->env(r);
    return cut_write_case_csv(csv, start, &proto, cfg->trials, e);
}

/* The folders prior logs come from, in priority order (cut_prior_select): records_dir, the --prior-dir folders,
 * the shipped priors of gpu. shipped is the caller's buffer for that path. Returns the count (dirs holds
 * 2 + cfg->nprior_dirs). */
static int prior_dirs(const cut_tune_cfg *cfg, const char *gpu, cut_prior_dir *dirs, char *shipped, size_t n)
{
    int nd = 0;
    dirs[nd++] = (cut_prior_dir){cfg->records_dir, NULL};
    for (int i = 0; i < cfg->nprior_dirs; i++)
        dirs[nd++] = (cut_prior_dir){cfg->prior_dirs[i], gpu};
    char slug[128];
    cut_prior_gpu_slug(gpu, slug, sizeof slug);
    if (slug[0] && snprintf(shipped, n, "%s/priors/%s", cut_workloads_dir(), slug) < (int)n)
        dirs[nd++] = (cut_prior_dir){shipped, gpu};
    return nd;
}

/* Feeds the cost model up to PRIOR_PER_LOG random trials of each of the PRIOR_LOGS other workloads' logs nearest
 * to c in shape (never c itself), and says which logs they were: Ansor-style transfer, so the first rounds are
 * guided by what was fast on similar convolutions. Returns the trials added. */
static int conv_priors(const cut_task *t, cut_strategy *strat, const cut_tune_cfg *cfg, const char *gpu, int nold)
{
    const cut_conv *c = &wl_of(t)->c;
    int case_idx = wl_of(t)->case_idx;
    uint64_t seed = cfg->seed ^ ((uint64_t)case_idx << 32) ^ (uint64_t)nold; /* the search's seed */
    cut_search *search = cut_strategy_search(strat);
    if (!search)
        return 0; /* only the cost-model search learns from other workloads */
    char shipped[1024];
    cut_prior_dir *dirs = cut_xcalloc((size_t)cfg->nprior_dirs + 2, sizeof *dirs);
    int nd = prior_dirs(cfg, gpu, dirs, shipped, sizeof shipped), added = 0;
    cut_prior_log *logs = NULL;
    int nlogs = cut_prior_select(dirs, nd, c, PRIOR_LOGS, &logs);
    cut_rng rng;
    cut_rng_seed(&rng, seed);
    cut_buf from; /* the message naming the logs, said once */
    cut_buf_init(&from);
    for (int f = 0; f < nlogs; f++) {
        cut_record *recs = logs[f].recs;
        int n = logs[f].n, take = CUT_MIN(n, PRIOR_PER_LOG);
        for (int i = 0; i < take; i++) { /* a partial Fisher-Yates shuffle: distinct random lines */
            int j = i + (int)cut_rng_below(&rng, (uint32_t)(n - i));
            cut_record tmp = recs[i];
            recs[i] = recs[j];
            recs[j] = tmp;
            const cut_record *r = &recs[i];
            added += cut_search_add_prior(search, &r->conv, &r->sched, r->status == CUT_ST_OK ? r->median_ms : -1,
                                          r->regs, f + 1) == 0;
        }
        if (f == 0)
            cut_buf_printf(&from, "cutune: case %d: cost model prior from ", case_idx);
        cut_buf_printf(&from, "%s%s (%d trials)%s", f ? ", " : "", logs[f].path, take, f + 1 == nlogs ? "\n" : "");
    }
    if (from.len)
        cut_log(CUT_LOG_INFO, "%s", from.data);
    cut_buf_free(&from);
    cut_prior_logs_free(logs, nlogs);
    free(dirs);
    return added;
}

cut_task *cut_task_conv_new(const cut_conv *c, int case_idx, const cut_tune_cfg *cfg)
{
    cut_task *t = cut_xcalloc(1, sizeof *t);
    conv_wl *w = cut_xcalloc(1, sizeof *w);
    w->c = *c;
    w->case_idx = case_idx;
    t->op = "conv2d";
    t->wl = w;
    cut_conv_case_name(c, case_idx, t->name, sizeof t->name);
    /* the case tuned, and where it is in this run's selection ("case 7 (2/2)" under --test) */
    if (cfg && cfg->case_total > 0)
        snprintf(t->label, sizeof t->label, "case %d (%d/%d)", case_idx, cfg->case_pos, cfg->case_total);
    else
        snprintf(t->label, sizeof t->label, "case %d", case_idx);
    snprintf(t->what, sizeof t->what, "case %d", case_idx);
    snprintf(t->stem, sizeof t->stem, "case%d", case_idx);
    t->flops = cut_conv_flops(c);
    t->bytes = cut_conv_bytes(c);
    t->batch = 16;
    t->has_energy = 1;
    t->strategy = conv_strategy;
    t->priors = conv_priors;
    t->codegen = conv_codegen;
    t->prepare = conv_prepare;
    t->record = conv_record;
    t->load = conv_load;
    t->start = conv_start;
    t->baseline = conv_baseline;
    t->sched_json = conv_sched_json;
    return t;
}

int cut_tune_case(const cut_tune_cfg *cfg, cut_runner *r, const cut_conv *c, int case_idx, cut_tune_stats *st,
                  cut_err *e)
{
    return cut_tune_case_on(cfg, &r, 1, c, case_idx, st, e);
}

int cut_tune_case_on(const cut_tune_cfg *cfg, cut_runner **r, int nr, const cut_conv *c, int case_idx,
                     cut_tune_stats *st, cut_err *e)
{
    cut_task *t = cut_task_conv_new(c, case_idx, cfg);
    int rc = cut_tune_task_on(cfg, t, r, nr, st, e);
    cut_task_free(t);
    return rc;
}
