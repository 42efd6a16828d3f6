/* cutune — the tuning loop of one case. */
#include "cutune/tune.h"
#include "cutune/codegen.h"
#include "cutune/log.h"
#include "cutune/record.h"
#include "cutune/util.h"
#include "pipeline/cstream.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WARMUP_TRIALS 256
#define PRIOR_LOGS 3      /* other workloads' logs the cost model starts from: the nearest in shape */
#define PRIOR_PER_LOG 300 /* trials taken from each (training time grows with the total) */

void cut_tune_progress(const cut_tune_cfg *cfg, const char *label, int done, int total, int failed,
                       double best_gflops, double rate, int final)
{
    if (!cfg->progress)
        return;
    static double last;
    double now = cut_now_s();
    int tty = cut_log_tty();
    if (!final && !tty && now - last < 10.0)
        return;
    last = now;
    double eta = rate > 0 ? (total - done) / rate : 0;
    cut_log(CUT_LOG_INFO, "%s%s | trials %d/%d | failed %d | best %.1f GFLOP/s | %.2f trials/s | ETA %.0f s%s",
            tty ? "\r\033[K" : "", label, done, total, failed, best_gflops, rate, eta, (final || !tty) ? "\n" : "");
}

static void progress(const cut_tune_cfg *cfg, int done, int total, int failed, double best_gflops, double rate,
                     int final)
{
    char label[64];
    snprintf(label, sizeof label, "case %d/%d", cfg->case_pos, cfg->case_total);
    cut_tune_progress(cfg, label, done, total, failed, best_gflops, rate, final);
}

static void fill_record(cut_record *rec, const cut_conv *c, int case_idx, int trial, const cut_sched *sc,
                        const cut_result *res, const cut_compiled *bin, const cut_measure_env *env)
{
    memset(rec, 0, sizeof *rec);
    rec->case_idx = case_idx;
    rec->conv = *c;
    snprintf(rec->dtype, sizeof rec->dtype, "fp32");
    rec->sched = *sc;
    rec->status = res->status;
    snprintf(rec->error, sizeof rec->error, "%s", res->error);
    rec->median_ms = rec->min_ms = rec->max_ms = -1;
    if (res->status == CUT_ST_OK) {
        rec->median_ms = res->median_ms;
        rec->min_ms = res->min_ms;
        rec->max_ms = res->max_ms;
        rec->gflops = cut_conv_flops(c) / (res->median_ms * 1e6);
    }
    rec->repeats = res->repeats;
    rec->compile_ms = bin ? bin->compile_ms : 0;
    rec->regs = bin ? bin->regs : -1;
    rec->spills = bin && bin->spill_stores >= 0 ? bin->spill_stores + bin->spill_loads : -1;
    rec->env = *env;
    cut_utc_timestamp(rec->ts, sizeof rec->ts);
    rec->trial = trial;
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

static void dump_failure(const cut_tune_cfg *cfg, int case_idx, int trial, const cut_kernel_src *ks,
                         const cut_compiled *bin, const cut_result *res)
{
    char stem[32];
    snprintf(stem, sizeof stem, "case%d", case_idx);
    cut_tune_dump_failure(cfg->kernel_dump_dir, stem, trial, ks, bin, res);
}

/* Folds one record into the case's best by objective o (time: the fastest valid median; energy / edp: the
 * minimum over the trials with energy measured). */
static void track_best(cut_tune_stats *st, cut_objective o, const cut_record *rec)
{
    if (rec->status != CUT_ST_OK)
        return;
    double v = o == CUT_OBJ_TIME ? rec->median_ms : cut_record_objective(rec, o);
    if (o != CUT_OBJ_TIME) {
        if (v <= 0)
            return;
        st->energy_trials++;
    }
    if (st->best_obj >= 0 && v >= st->best_obj)
        return;
    st->best_obj = v;
    st->best_ms = rec->median_ms;
    st->best = rec->sched;
    st->best_energy_mj = o == CUT_OBJ_TIME ? -1 : rec->energy_mj;
    st->best_edp = o == CUT_OBJ_TIME ? -1 : rec->edp;
    st->best_power_w = o == CUT_OBJ_TIME ? -1 : rec->power_w;
}

/* Indices of the valid jobs, fastest first (ties: job order). Returns the count. */
static int order_by_time(cut_job **jobs, int n, int *order)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (jobs[i]->res.status != CUT_ST_OK)
            continue;
        int j = m++;
        for (; j > 0 && jobs[order[j - 1]]->res.median_ms > jobs[i]->res.median_ms; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    return m;
}

/* Energy objective: measures the energy of the round's cfg->energy_top fastest valid jobs into er (the others'
 * stay zero). The runner checks and times each again first; the recorded time stays the round's. A meter failure
 * is a setup error. */
static int measure_energy(cut_job **jobs, int n, const cut_tune_cfg *cfg, cut_runner *r, int first_trial,
                          cut_energy_result *er, cut_err *e)
{
    int *order = cut_xcalloc((size_t)n, sizeof *order);
    int m = order_by_time(jobs, n, order), top = cfg->energy_top > 0 ? cfg->energy_top : 2, rc = 0;
    for (int k = 0; k < CUT_MIN(top, m) && rc == 0; k++) {
        int i = order[k];
        cut_candidate cand = {&jobs[i]->ks, cfg->use_nvrtc ? &jobs[i]->bin : NULL};
        cut_result res;
        cut_energy_result x;
        memset(&res, 0, sizeof res);
        if (r->energy(r, &cand, &cfg->energy_plan, &res, &x, e) != 0)
            rc = cut_err_wrap(e, "--objective %s: measuring the energy of trial %d", cut_objective_name(cfg->objective),
                              first_trial + i);
        else if (res.status == CUT_ST_OK)
            er[i] = x;
        else
            cut_log(CUT_LOG_WARN,
                    "\ncutune: trial %d passed its check but failed it before the energy measurement (%s: %s);"
                    " recorded without energy\n",
                    first_trial + i, cut_status_name(res.status), res.error);
    }
    free(order);
    return rc;
}

int cut_tune_measure_jobs(cut_job **jobs, int n, int use_nvrtc, cut_runner *r, cut_err *e)
{
    cut_candidate *cands = cut_xcalloc((size_t)n, sizeof *cands);
    cut_result *mres = cut_xcalloc((size_t)n, sizeof *mres);
    int *map = cut_xcalloc((size_t)n, sizeof *map);
    int m = 0, rc = 0; /* only candidates that generated code measure; the runner sees a compact array */
    for (int i = 0; i < n; i++) {
        if (jobs[i]->res.status != CUT_ST_OK)
            continue;
        cands[m].ks = &jobs[i]->ks;
        cands[m].bin = use_nvrtc ? &jobs[i]->bin : NULL;
        map[m++] = i;
    }
    if (m > 0 && r->measure(r, cands, m, mres, e) != 0)
        rc = -1;
    for (int j = 0; rc == 0 && j < m; j++)
        jobs[map[j]]->res = mres[j];
    free(cands), free(mres), free(map);
    return rc;
}

/* Measures finished jobs (and with an energy objective the energy of the fastest few), appends their records
 * (one write each, then fsync) and feeds the search. */
static int measure_record(cut_job **jobs, int n, const cut_tune_cfg *cfg, cut_runner *r, const cut_conv *c,
                          int case_idx, int first_trial, cut_reclog *log, cut_search *search, cut_tune_stats *st,
                          cut_err *e)
{
    int rc = cut_tune_measure_jobs(jobs, n, cfg->use_nvrtc, r, e);
    cut_energy_result *er = cut_xcalloc((size_t)n, sizeof *er);
    if (rc == 0 && cfg->objective != CUT_OBJ_TIME)
        rc = measure_energy(jobs, n, cfg, r, first_trial, er, e);
    const cut_measure_env *env = rc == 0 ? r->env(r) : NULL;
    for (int i = 0; rc == 0 && i < n; i++) {
        cut_job *jb = jobs[i];
        const cut_compiled *bin = cfg->use_nvrtc ? &jb->bin : NULL;
        cut_record rec;
        fill_record(&rec, c, case_idx, first_trial + i, &jb->sched, &jb->res, bin, env);
        rec.energy_mj = er[i].energy_mj;
        rec.edp = er[i].edp;
        rec.power_w = er[i].power_w;
        if (cut_reclog_append(log, &rec, e) != 0) {
            rc = -1;
            break;
        }
        track_best(st, cfg->objective, &rec);
        /* The cost model learns time, the dense signal (every candidate has it); energy is measured only for the
         * few fastest of each round. */
        cut_search_observe(search, &jb->sched, jb->res.status == CUT_ST_OK ? jb->res.median_ms : -1,
                           bin ? bin->regs : -1);
        if (jb->res.status != CUT_ST_OK) {
            st->failures_new++;
            dump_failure(cfg, case_idx, first_trial + i, &jb->ks, bin, &jb->res);
        }
    }
    free(er);
    return rc == 0 ? cut_reclog_sync(log, e) : -1;
}

/* Proposes up to want new schedules, generates their code and queues them for compilation. Returns how many. */
static int refill(cut_cstream *cs, cut_search *search, const cut_conv *c, int want, cut_sched *buf)
{
    int got = cut_search_propose(search, want, buf);
    for (int i = 0; i < got; i++) {
        cut_job *j = cut_xcalloc(1, sizeof *j);
        j->sched = buf[i];
        cut_err e;
        if (cut_codegen_conv(c, &j->sched, &j->ks, &e) != 0) {
            j->res.status = CUT_ST_COMPILE_ERROR;
            snprintf(j->res.error, sizeof j->res.error, "codegen: %s", e.msg);
        }
        cut_cstream_submit(cs, j);
    }
    return got;
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
static int add_priors(cut_search *search, const cut_tune_cfg *cfg, const char *gpu, const cut_conv *c, int case_idx,
                      uint64_t seed)
{
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
            cut_record t = recs[i];
            recs[i] = recs[j];
            recs[j] = t;
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

int cut_tune_case(const cut_tune_cfg *cfg, cut_runner *r, const cut_conv *c, int case_idx, cut_tune_stats *st,
                  cut_err *e)
{
    memset(st, 0, sizeof *st);
    st->best_ms = st->best_obj = st->best_energy_mj = st->best_edp = st->best_power_w = -1;
    if (cfg->objective != CUT_OBJ_TIME && !r->energy)
        return cut_err_set(e, "--objective %s needs energy measurements, and this runner cannot make them",
                           cut_objective_name(cfg->objective));
    double t0 = cut_now_s();
    char name[512], path[1024], csv[1024];
    cut_conv_case_name(c, case_idx, name, sizeof name);
    if (snprintf(path, sizeof path, "%s/%s.json", cfg->records_dir, name) >= (int)sizeof path ||
        snprintf(csv, sizeof csv, "%s/%s.csv", cfg->records_dir, name) >= (int)sizeof csv)
        return cut_err_set(e, "records path too long");

    cut_record *old = NULL;
    int nold = 0, partial = 0;
    if (cut_records_load(path, &old, &nold, &partial, e) != 0)
        return -1;

    cut_search_opts so;
    cut_search_opts_default(&so);
    so.seed = cfg->seed ^ ((uint64_t)case_idx << 32) ^ (uint64_t)nold;
    cut_search *search = cut_search_new(c, &cfg->limits, &so);
    for (int i = 0; i < nold; i++) {
        cut_search_observe(search, &old[i].sched, old[i].status == CUT_ST_OK ? old[i].median_ms : -1, old[i].regs);
        track_best(st, cfg->objective, &old[i]);
    }
    free(old);
    st->trials_total = nold;
    if (nold >= cfg->trials) {
        st->skipped = 1;
        st->best_gflops = st->best_ms > 0 ? cut_conv_flops(c) / (st->best_ms * 1e6) : 0;
        cut_search_free(search);
        return 0;
    }
    if (cfg->use_prior)
        st->prior_trials = add_priors(search, cfg, r->env(r)->gpu_name, c, case_idx, so.seed);

    cut_reclog log;
    if (cut_reclog_open(path, &log, e) != 0) {
        cut_search_free(search);
        return -1;
    }
    if (r->prepare(r, c, cfg->seed, e) != 0) {
        cut_reclog_close(&log);
        cut_search_free(search);
        return cut_err_wrap(e, "preparing case %d", case_idx);
    }
    char start[32];
    cut_utc_timestamp(start, sizeof start);
    {
        cut_record proto;
        memset(&proto, 0, sizeof proto);
        proto.case_idx = case_idx;
        proto.conv = *c;
        snprintf(proto.dtype, sizeof proto.dtype, "fp32");
        proto.env = *r->env(r);
        if (cut_write_case_csv(csv, start, &proto, cfg->trials, e) != 0) {
            cut_reclog_close(&log);
            cut_search_free(search);
            return -1;
        }
    }

    int batch = cfg->batch > 0 ? CUT_MIN(cfg->batch, 256) : 16;
    int rc = 0, done = nold, exhausted = 0, out_of_time = 0;
    double flops = cut_conv_flops(c);
    cut_sched *buf = cut_xcalloc((size_t)batch, sizeof *buf);
    cut_job **jobs = cut_xcalloc((size_t)batch, sizeof *jobs);
    /* Proposals compile on all cores while the runner measures whatever has finished compiling; up to two
     * batches are in flight, so a slow compile never holds up the measurements. In the first WARMUP_TRIALS the
     * next batch waits until the current one is mostly measured: the cost model then learns from nearly every
     * trial before it proposes, which matters most while it has little data (it costs a little GPU idle time). */
    cut_cstream *cs = cut_cstream_new(cfg->use_nvrtc ? &cfg->copts : NULL, e);
    if (!cs)
        rc = -1;
    while (rc == 0) {
        int inflight = cut_cstream_inflight(cs);
        int remaining = cfg->trials - done - inflight;
        out_of_time = cfg->max_seconds > 0 && cut_now_s() - t0 > cfg->max_seconds;
        int depth = done < WARMUP_TRIALS ? CUT_MAX(batch / 4, 1) : 2 * batch;
        if (remaining > 0 && inflight < depth && !exhausted && !out_of_time)
            exhausted = refill(cs, search, c, CUT_MIN(batch, remaining), buf) == 0;
        inflight = cut_cstream_inflight(cs);
        if (inflight == 0)
            break;
        int n = cut_cstream_take(cs, jobs, batch, CUT_MIN(8, inflight));
        for (int i = 0; i < n && rc == 0; i++)
            if (jobs[i]->setup_failed)
                rc = cut_err_set(e, "%s", jobs[i]->err.msg);
        if (rc == 0)
            rc = measure_record(jobs, n, cfg, r, c, case_idx, done, &log, search, st, e);
        for (int i = 0; i < n; i++)
            cut_job_free(jobs[i]);
        if (rc != 0)
            break;
        done += n;
        st->trials_new += n;
        double el = cut_now_s() - t0;
        progress(cfg, done, cfg->trials, st->failures_new, st->best_ms > 0 ? flops / (st->best_ms * 1e6) : 0,
                 el > 0 ? st->trials_new / el : 0, 0);
    }
    if (rc == 0 && done < cfg->trials && cfg->progress)
        cut_log(CUT_LOG_INFO, "\ncase %d: stopped after %d trials: %s\n", case_idx, done,
                out_of_time ? "time budget spent" : "the schedule space is exhausted");
    if (rc == 0)
        progress(cfg, done, cfg->trials, st->failures_new, st->best_ms > 0 ? flops / (st->best_ms * 1e6) : 0,
                 st->trials_new / (cut_now_s() - t0 + 1e-9), 1);
    cut_cstream_free(cs);
    free(buf);
    free(jobs);
    cut_reclog_close(&log);
    cut_search_free(search);
    st->trials_total = done;
    st->best_gflops = st->best_ms > 0 ? flops / (st->best_ms * 1e6) : 0;
    st->seconds = cut_now_s() - t0;
    return rc;
}
