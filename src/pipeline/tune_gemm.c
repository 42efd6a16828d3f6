/* cutune — the GEMM op as a task of the one tuning loop (cutune/task.h): its name (seed 004's sizes, layout, dtype),
 * FLOPs, the GEMM template registry as its schedule space, code, runner workload and record lines. */
#include "cutune/log.h"
#include "cutune/gemm_space.h"
#include "cutune/gemm_tune.h"
#include "cutune/record.h"
#include "cutune/task.h"
#include "cutune/util.h"
#include "cutune/op.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gemm_wl {
    cut_gemm g;
    int tpl_mask;
} gemm_wl;

static const gemm_wl *wl_of(const cut_task *t) { return t->wl; }

static void gemm_record(const cut_task *t, const cut_trial *tr, cut_buf *b)
{
    const cut_gemm *g = &wl_of(t)->g;
    cut_gemm_record rec;
    memset(&rec, 0, sizeof rec);
    rec.trial = tr->trial;
    rec.gemm = *g;
    rec.sched = tr->sched;
    rec.status = tr->status;
    snprintf(rec.error, sizeof rec.error, "%s", tr->error);
    rec.median_ms = tr->median_ms;
    rec.min_ms = tr->min_ms;
    rec.max_ms = tr->max_ms;
    rec.rel_err = tr->status == CUT_ST_OK ? tr->err : -1;
    rec.gflops = tr->status == CUT_ST_OK && tr->median_ms > 0 ? cut_gemm_gflops(g, tr->median_ms) : 0;
    rec.repeats = tr->repeats;
    rec.compile_ms = tr->compile_ms;
    rec.regs = tr->regs;
    rec.spills = tr->spills;
    rec.env = tr->env;
    snprintf(rec.ts, sizeof rec.ts, "%s", tr->ts);
    cut_gemm_record_to_json(&rec, b);
}

/* A GEMM log loads tolerantly: malformed lines are skipped with a note, and still count as trials run. */
static int gemm_load(const cut_task *t, const char *path, cut_trial **out, int *n, int *extra, cut_err *e)
{
    (void)t;
    cut_gemm_record *old = NULL;
    int nold = 0, partial = 0, bad = 0;
    char note[512];
    *out = NULL;
    *n = *extra = 0;
    if (cut_gemm_records_load(path, &old, &nold, &partial, &bad, note, sizeof note, e) != 0)
        return -1;
    if (bad)
        cut_log(CUT_LOG_WARN, "cutune: %d malformed line(s) of %s skipped (first: %s)\n", bad, path, note);
    cut_trial *tr = cut_xcalloc((size_t)(nold ? nold : 1), sizeof *tr);
    for (int i = 0; i < nold; i++) {
        const cut_gemm_record *r = &old[i];
        tr[i] = (cut_trial){.trial = r->trial, .sched = r->sched, .status = r->status, .median_ms = r->median_ms,
                            .min_ms = r->min_ms, .max_ms = r->max_ms, .repeats = r->repeats, .err = r->rel_err,
                            .compile_ms = r->compile_ms, .regs = r->regs, .spills = r->spills, .env = r->env};
        snprintf(tr[i].error, sizeof tr[i].error, "%s", r->error);
        snprintf(tr[i].ts, sizeof tr[i].ts, "%s", r->ts);
    }
    free(old);
    *out = tr;
    *n = nold;
    *extra = bad;
    return 0;
}

static cut_strategy *gemm_strategy(const cut_task *t, const cut_tune_cfg *cfg, int nold, cut_err *e)
{
    (void)nold;
    const gemm_wl *w = wl_of(t);
    cut_search_opts so;
    cut_search_opts_default(&so);
    so.tpl_mask = w->tpl_mask;
    cut_space *sp = cut_gemm_space_new(&w->g, &cfg->limits);
    int any = 0;
    for (int i = 0; i < sp->ntpl && !any; i++)
        any = (!so.tpl_mask || (so.tpl_mask & (1 << i))) && sp->applies(sp, i);
    if (!any) {
        cut_space_free(sp);
        cut_err_set(e, "no selected GEMM template computes %s (%s inputs) on this device", t->name,
                    cut_dtype_name(w->g.dtype));
        return NULL;
    }
    return cut_task_strategy(sp, cfg, &so, cfg->seed ^ cut_fnv1a(CUT_FNV_INIT, t->name, strlen(t->name)), e);
}

static int gemm_check_runner(const cut_task *t, const cut_runner *r, cut_err *e)
{
    (void)t, (void)r, (void)e; /* every runner runs every work (its prepare refuses what it cannot) */
    return 0;
}

static int gemm_codegen(const cut_task *t, const cut_sched *s, cut_kernel_src *out, cut_err *e)
{
    return cut_codegen_gemm(&wl_of(t)->g, s, out, e);
}

static int gemm_prepare(const cut_task *t, cut_runner *r, uint64_t seed, cut_err *e)
{
    return cut_runner_prepare_gemm(r, &wl_of(t)->g, seed, e);
}

static int gemm_sched_json(const cut_task *t, const cut_sched *s, char *buf, size_t n)
{
    (void)t;
    return cut_tpl_sched_json(CUT_OP_GEMM, s, buf, n);
}

/* The best cuBLAS / cuBLASLt kernel on the prepared GEMM (cut_runner_gpu_vendor with its defaults but a 15 s
 * budget), in the GPU runner's worker. */
static int gemm_baseline(const cut_task *t, cut_runner *r, const cut_compile_opts *co, int round, cut_result *res,
                         char *name, size_t n, cut_err *e)
{
    (void)t, (void)co, (void)round;
    cut_vendor_opts vo;
    cut_vendor_opts_default(&vo);
    vo.budget_s = 15;
    cut_vendor_result *v = cut_xcalloc(1, sizeof *v);
    int rc = cut_runner_gpu_vendor(r, &vo, v, e);
    if (rc == 0) {
        *res = v->best.res;
        snprintf(name, n, "%s", v->best.config);
    }
    free(v);
    return rc;
}

cut_task *cut_task_gemm_new(const cut_gemm *g, int tpl_mask)
{
    cut_task *t = cut_xcalloc(1, sizeof *t);
    gemm_wl *w = cut_xcalloc(1, sizeof *w);
    w->g = *g;
    w->tpl_mask = tpl_mask;
    t->op = "gemm";
    t->wl = w;
    cut_gemm_name(g, t->name, sizeof t->name);
    snprintf(t->label, sizeof t->label, "%s", t->name);
    snprintf(t->what, sizeof t->what, "%s", t->name);
    snprintf(t->stem, sizeof t->stem, "%s", t->name);
    t->flops = cut_gemm_flops(g);
    t->bytes = cut_gemm_bytes(g);
    t->batch = 32;
    t->strategy = gemm_strategy;
    t->check_runner = gemm_check_runner;
    t->codegen = gemm_codegen;
    t->prepare = gemm_prepare;
    t->record = gemm_record;
    t->load = gemm_load;
    t->baseline = gemm_baseline;
    t->baseline_once = 1;
    t->sched_json = gemm_sched_json;
    return t;
}

int cut_tune_gemm(const cut_tune_cfg *cfg, int tpl_mask, cut_runner *r, const cut_gemm *g, cut_tune_stats *st,
                  cut_err *e)
{
    return cut_tune_gemm_on(cfg, tpl_mask, &r, 1, g, st, e);
}

int cut_tune_gemm_on(const cut_tune_cfg *cfg, int tpl_mask, cut_runner **r, int nr, const cut_gemm *g,
                     cut_tune_stats *st, cut_err *e)
{
    if (cut_gemm_validate(g, e) != 0) {
        memset(st, 0, sizeof *st);
        return -1;
    }
    cut_task *t = cut_task_gemm_new(g, tpl_mask);
    int rc = cut_tune_task_on(cfg, t, r, nr, st, e);
    cut_task_free(t);
    return rc;
}
