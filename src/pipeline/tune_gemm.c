/* cutune — the tuning loop of one GEMM: search (cut_search_new_gemm) -> codegen (the schedule's template) ->
 * compile (the compile stream, sm_90a for kernels that need it) overlapped with measuring -> record, resumable.
 * The structure is tune.c's; the pieces both use (measuring a batch of jobs, the progress line, failure dumps)
 * live there. */
#include "cutune/gemm_space.h"
#include "cutune/gemm_tune.h"
#include "cutune/log.h"
#include "cutune/record.h"
#include "cutune/util.h"
#include "pipeline/cstream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WARMUP_TRIALS 256 /* as tune.c: in the first trials the model learns from nearly every trial first */

typedef struct gemm_run {
    const cut_tune_cfg *cfg;
    cut_runner *r;
    cut_gemm g;
    char name[256];
    cut_search *search;
    cut_reclog log;
    cut_tune_stats *st;
} gemm_run;

static void fill_record(cut_gemm_record *rec, const cut_gemm *g, int trial, const cut_job *jb, const cut_compiled *bin,
                        const cut_measure_env *env)
{
    const cut_result *res = &jb->res;
    memset(rec, 0, sizeof *rec);
    rec->trial = trial;
    rec->gemm = *g;
    rec->sched = jb->sched;
    rec->status = res->status;
    snprintf(rec->error, sizeof rec->error, "%s", res->error);
    rec->median_ms = rec->min_ms = rec->max_ms = rec->rel_err = -1;
    if (res->status == CUT_ST_OK) {
        rec->median_ms = res->median_ms;
        rec->min_ms = res->min_ms;
        rec->max_ms = res->max_ms;
        rec->gflops = cut_gemm_gflops(g, res->median_ms);
        rec->rel_err = res->max_abs_err;
    }
    rec->repeats = res->repeats;
    rec->compile_ms = bin ? bin->compile_ms : 0;
    rec->regs = bin ? bin->regs : -1;
    rec->spills = bin && bin->spill_stores >= 0 ? bin->spill_stores + bin->spill_loads : -1;
    rec->env = *env;
    cut_utc_timestamp(rec->ts, sizeof rec->ts);
}

static void track_best(cut_tune_stats *st, const cut_gemm_record *rec)
{
    if (rec->status != CUT_ST_OK || !(rec->median_ms > 0) || (st->best_ms > 0 && rec->median_ms >= st->best_ms))
        return;
    st->best_ms = st->best_obj = rec->median_ms;
    st->best = rec->sched;
}

/* Measures finished jobs, appends their records (fsync per batch) and feeds the search. */
static int measure_record(gemm_run *run, cut_job **jobs, int n, int first_trial, cut_err *e)
{
    const cut_tune_cfg *cfg = run->cfg;
    if (cut_tune_measure_jobs(jobs, n, cfg->use_nvrtc, run->r, e) != 0)
        return -1;
    const cut_measure_env *env = run->r->env(run->r);
    for (int i = 0; i < n; i++) {
        cut_job *jb = jobs[i];
        const cut_compiled *bin = cfg->use_nvrtc ? &jb->bin : NULL;
        cut_gemm_record rec;
        fill_record(&rec, &run->g, first_trial + i, jb, bin, env);
        cut_buf b;
        cut_buf_init(&b);
        cut_gemm_record_to_json(&rec, &b);
        int rc = cut_reclog_append_line(&run->log, b.data, b.len, e);
        cut_buf_free(&b);
        if (rc != 0)
            return -1;
        track_best(run->st, &rec);
        cut_search_observe(run->search, &jb->sched, jb->res.status == CUT_ST_OK ? jb->res.median_ms : -1,
                           bin ? bin->regs : -1);
        if (jb->res.status != CUT_ST_OK) {
            run->st->failures_new++;
            cut_tune_dump_failure(cfg->kernel_dump_dir, run->name, first_trial + i, &jb->ks, bin, &jb->res);
        }
    }
    return cut_reclog_sync(&run->log, e);
}

/* Proposes up to want new schedules, generates their code and queues them for compilation. Returns how many. */
static int refill(cut_cstream *cs, gemm_run *run, int want, cut_sched *buf)
{
    int got = cut_search_propose(run->search, want, buf);
    for (int i = 0; i < got; i++) {
        cut_job *j = cut_xcalloc(1, sizeof *j);
        j->sched = buf[i];
        cut_err e;
        if (cut_codegen_gemm(&run->g, &j->sched, &j->ks, &e) != 0) {
            j->res.status = CUT_ST_COMPILE_ERROR;
            snprintf(j->res.error, sizeof j->res.error, "codegen: %s", e.msg);
        }
        cut_cstream_submit(cs, j);
    }
    return got;
}

static void report_progress(const gemm_run *run, int done, double t0, int final)
{
    const cut_tune_stats *st = run->st;
    double el = cut_now_s() - t0;
    cut_tune_progress(run->cfg, run->name, done, run->cfg->trials, st->failures_new,
                      st->best_ms > 0 ? cut_gemm_gflops(&run->g, st->best_ms) : 0,
                      el > 0 ? st->trials_new / el : 0, final);
}

/* The rounds: compile and measure overlapped (see tune.c), until the trial or time budget is spent or the space
 * is exhausted. done: trials in the log so far. */
static int rounds(gemm_run *run, int done, double t0, cut_err *e)
{
    const cut_tune_cfg *cfg = run->cfg;
    int batch = cfg->batch > 0 ? CUT_MIN(cfg->batch, 256) : 32;
    int rc = 0, exhausted = 0, out_of_time = 0;
    cut_sched *buf = cut_xcalloc((size_t)batch, sizeof *buf);
    cut_job **jobs = cut_xcalloc((size_t)batch, sizeof *jobs);
    cut_cstream *cs = cut_cstream_new(cfg->use_nvrtc ? &cfg->copts : NULL, e);
    if (!cs)
        rc = -1;
    while (rc == 0) {
        int inflight = cut_cstream_inflight(cs), remaining = cfg->trials - done - inflight;
        out_of_time = cfg->max_seconds > 0 && cut_now_s() - t0 > cfg->max_seconds;
        int depth = done < WARMUP_TRIALS ? CUT_MAX(batch / 4, 1) : 2 * batch;
        if (remaining > 0 && inflight < depth && !exhausted && !out_of_time)
            exhausted = refill(cs, run, CUT_MIN(batch, remaining), buf) == 0;
        if ((inflight = cut_cstream_inflight(cs)) == 0)
            break;
        int n = cut_cstream_take(cs, jobs, batch, CUT_MIN(8, inflight));
        for (int i = 0; i < n && rc == 0; i++)
            if (jobs[i]->setup_failed)
                rc = cut_err_set(e, "%s", jobs[i]->err.msg);
        if (rc == 0)
            rc = measure_record(run, jobs, n, done, e);
        for (int i = 0; i < n; i++)
            cut_job_free(jobs[i]);
        if (rc != 0)
            break;
        done += n;
        run->st->trials_new += n;
        report_progress(run, done, t0, 0);
    }
    if (rc == 0 && done < cfg->trials && cfg->progress)
        cut_log(CUT_LOG_INFO, "\n%s: stopped after %d trials: %s\n", run->name, done,
                out_of_time ? "time budget spent" : "the schedule space is exhausted");
    if (rc == 0)
        report_progress(run, done, t0, 1);
    cut_cstream_free(cs);
    free(buf);
    free(jobs);
    run->st->trials_total = done;
    return rc;
}

/* Feeds an existing log to the search (resume). Returns its record count, or -1. */
static int resume(gemm_run *run, const char *path, cut_err *e)
{
    cut_gemm_record *old = NULL;
    int nold = 0, partial = 0, bad = 0;
    char note[512];
    if (cut_gemm_records_load(path, &old, &nold, &partial, &bad, note, sizeof note, e) != 0)
        return -1;
    if (bad)
        cut_log(CUT_LOG_WARN, "cutune: %d malformed line(s) of %s skipped (first: %s)\n", bad, path, note);
    for (int i = 0; i < nold; i++) {
        cut_search_observe(run->search, &old[i].sched, old[i].status == CUT_ST_OK ? old[i].median_ms : -1,
                           old[i].regs);
        track_best(run->st, &old[i]);
    }
    free(old);
    return nold + bad; /* malformed lines still count as trials run */
}

static int check_runner(cut_runner *r, const cut_search *search, const cut_gemm *g, const char *name, cut_err *e)
{
    if (cut_search_templates(search) == 0)
        return cut_err_set(e, "no selected GEMM template computes %s (%s inputs) on this device", name,
                           cut_dtype_name(g->dtype));
    if (!r->prepare_gemm)
        return cut_err_set(e, "this runner cannot measure GEMM kernels (it has no prepare_gemm)");
    return 0;
}

int cut_tune_gemm(const cut_tune_cfg *cfg, int tpl_mask, cut_runner *r, const cut_gemm *g, cut_tune_stats *st,
                  cut_err *e)
{
    memset(st, 0, sizeof *st);
    st->best_ms = st->best_obj = st->best_energy_mj = st->best_edp = st->best_power_w = -1;
    if (cut_gemm_validate(g, e) != 0)
        return -1;
    double t0 = cut_now_s();
    gemm_run run = {.cfg = cfg, .r = r, .g = *g, .st = st};
    run.log.fd = -1;
    cut_gemm_name(g, run.name, sizeof run.name);
    char path[1024];
    if (snprintf(path, sizeof path, "%s/%s.json", cfg->records_dir, run.name) >= (int)sizeof path)
        return cut_err_set(e, "records path too long");
    cut_search_opts so;
    cut_search_opts_default(&so);
    so.seed = cfg->seed ^ cut_fnv1a(CUT_FNV_INIT, run.name, strlen(run.name));
    so.tpl_mask = tpl_mask;
    run.search = cut_search_new_gemm(g, &cfg->limits, &so);
    int rc = check_runner(r, run.search, g, run.name, e), done = 0;
    if (rc == 0 && (done = resume(&run, path, e)) < 0)
        rc = -1;
    if (rc == 0 && done >= cfg->trials)
        st->skipped = 1;
    else if (rc == 0 && cut_reclog_open(path, &run.log, e) != 0)
        rc = -1;
    else if (rc == 0 && r->prepare_gemm(r, g, cfg->seed, e) != 0)
        rc = cut_err_wrap(e, "preparing %s", run.name);
    else if (rc == 0)
        rc = rounds(&run, done, t0, e);
    cut_reclog_close(&run.log);
    cut_search_free(run.search);
    if (st->skipped || rc != 0)
        st->trials_total = done;
    st->best_gflops = st->best_ms > 0 ? cut_gemm_gflops(g, st->best_ms) : 0;
    st->seconds = cut_now_s() - t0;
    return rc;
}
