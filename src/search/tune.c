/* cutune — the tuning loop of one case. */
#include "cutune/tune.h"
#include "cutune/codegen.h"
#include "cutune/record.h"
#include "cutune/util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void progress(const cut_tune_cfg *cfg, int done, int total, int failed, double best_gflops, double rate,
                     int final)
{
    if (!cfg->progress)
        return;
    static double last;
    double now = cut_now_s();
    int tty = isatty(2);
    if (!final && !tty && now - last < 10.0)
        return;
    last = now;
    double eta = rate > 0 ? (total - done) / rate : 0;
    fprintf(stderr, "%scase %d/%d | trials %d/%d | failed %d | best %.1f GFLOP/s | %.2f trials/s | ETA %.0f s%s",
            tty ? "\r\033[K" : "", cfg->case_pos, cfg->case_total, done, total, failed, best_gflops, rate, eta,
            (final || !tty) ? "\n" : "");
    fflush(stderr);
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

static void dump_failure(const cut_tune_cfg *cfg, int case_idx, int trial, const cut_kernel_src *ks,
                         const cut_compiled *bin, const cut_result *res)
{
    if (!cfg->kernel_dump_dir || !ks->src)
        return;
    char path[1024];
    cut_err e;
    if (cut_mkdirs(cfg->kernel_dump_dir, &e) != 0)
        return;
    snprintf(path, sizeof path, "%s/case%d_trial%d.cu", cfg->kernel_dump_dir, case_idx, trial);
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_printf(&b, "%s\n/* status: %s\n%s\n", ks->src, cut_status_name(res->status), res->error);
    if (bin && bin->log)
        cut_buf_printf(&b, "NVRTC log:\n%s\n", bin->log);
    cut_buf_printf(&b, "*/\n");
    cut_write_file_atomic(path, b.data, b.len, &e);
    cut_buf_free(&b);
}

/* One batch in flight: proposed schedules, their sources, cubins and results. */
typedef struct slot {
    int cap, got;
    cut_sched *scheds;
    cut_kernel_src *ks;
    cut_compiled *bins;
    cut_result *res;
    const char **srcs;
    cut_candidate *cands;
    int *map;
    /* asynchronous compile */
    pthread_t thread;
    int compiling;
    const cut_compile_opts *copts;
    int compile_rc;
    cut_err compile_err;
} slot;

static void slot_init(slot *s, int cap)
{
    memset(s, 0, sizeof *s);
    s->cap = cap;
    s->scheds = cut_xcalloc((size_t)cap, sizeof *s->scheds);
    s->ks = cut_xcalloc((size_t)cap, sizeof *s->ks);
    s->bins = cut_xcalloc((size_t)cap, sizeof *s->bins);
    s->res = cut_xcalloc((size_t)cap, sizeof *s->res);
    s->srcs = cut_xcalloc((size_t)cap, sizeof *s->srcs);
    s->cands = cut_xcalloc((size_t)cap, sizeof *s->cands);
    s->map = cut_xcalloc((size_t)cap, sizeof *s->map);
}

static void slot_clear(slot *s)
{
    for (int i = 0; i < s->cap; i++) {
        cut_kernel_src_free(&s->ks[i]);
        cut_compiled_free(&s->bins[i]);
    }
    s->got = 0;
}

static void slot_free(slot *s)
{
    slot_clear(s);
    free(s->scheds), free(s->ks), free(s->bins), free(s->res), free(s->srcs), free(s->cands), free(s->map);
}

/* Proposes up to want schedules and generates their code; codegen failures become compile errors. */
static void slot_fill(slot *s, cut_search *search, const cut_conv *c, int want)
{
    s->got = cut_search_propose(search, want, s->scheds);
    for (int i = 0; i < s->got; i++) {
        cut_err e;
        memset(&s->res[i], 0, sizeof s->res[i]);
        if (cut_codegen_conv(c, &s->scheds[i], &s->ks[i], &e) != 0) {
            s->res[i].status = CUT_ST_COMPILE_ERROR;
            snprintf(s->res[i].error, sizeof s->res[i].error, "codegen: %s", e.msg);
        }
        s->srcs[i] = s->ks[i].src ? s->ks[i].src : "";
    }
}

static void *compile_thread(void *arg)
{
    slot *s = arg;
    s->compile_rc = cut_compile_batch(s->srcs, s->got, s->copts, s->bins, &s->compile_err);
    return NULL;
}

static void slot_compile_start(slot *s, const cut_tune_cfg *cfg)
{
    s->compile_rc = 0;
    if (!cfg->use_nvrtc || s->got == 0)
        return;
    s->copts = &cfg->copts;
    if (pthread_create(&s->thread, NULL, compile_thread, s) == 0) {
        s->compiling = 1;
        return;
    }
    compile_thread(s); /* no thread to be had: compile inline */
}

static int slot_compile_join(slot *s, cut_err *e)
{
    if (s->compiling) {
        pthread_join(s->thread, NULL);
        s->compiling = 0;
    }
    if (s->compile_rc != 0)
        return cut_err_set(e, "%s", s->compile_err.msg);
    return 0;
}

/* Measures the batch, appends its records (one write each, then fsync) and feeds the search. */
static int slot_measure_record(slot *s, const cut_tune_cfg *cfg, cut_runner *r, const cut_conv *c, int case_idx,
                               int first_trial, cut_reclog *log, cut_search *search, cut_tune_stats *st, cut_err *e)
{
    int m = 0; /* only candidates that generated code measure; the runner sees a compact array */
    for (int i = 0; i < s->got; i++) {
        if (s->res[i].status != CUT_ST_OK)
            continue;
        s->cands[m].ks = &s->ks[i];
        s->cands[m].bin = cfg->use_nvrtc ? &s->bins[i] : NULL;
        s->map[m++] = i;
    }
    cut_result *mres = cut_xcalloc((size_t)(m ? m : 1), sizeof *mres);
    if (m > 0 && r->measure(r, s->cands, m, mres, e) != 0) {
        free(mres);
        return -1;
    }
    for (int j = 0; j < m; j++)
        s->res[s->map[j]] = mres[j];
    free(mres);
    const cut_measure_env *env = r->env(r);
    for (int i = 0; i < s->got; i++) {
        const cut_compiled *bin = cfg->use_nvrtc ? &s->bins[i] : NULL;
        cut_record rec;
        fill_record(&rec, c, case_idx, first_trial + i, &s->scheds[i], &s->res[i], bin, env);
        if (cut_reclog_append(log, &rec, e) != 0)
            return -1;
        if (s->res[i].status == CUT_ST_OK) {
            cut_search_observe(search, &s->scheds[i], s->res[i].median_ms);
            if (st->best_ms < 0 || s->res[i].median_ms < st->best_ms) {
                st->best_ms = s->res[i].median_ms;
                st->best = s->scheds[i];
            }
        } else {
            cut_search_observe(search, &s->scheds[i], -1);
            st->failures_new++;
            dump_failure(cfg, case_idx, first_trial + i, &s->ks[i], bin, &s->res[i]);
        }
    }
    return cut_reclog_sync(log, e);
}

int cut_tune_case(const cut_tune_cfg *cfg, cut_runner *r, const cut_conv *c, int case_idx, cut_tune_stats *st,
                  cut_err *e)
{
    memset(st, 0, sizeof *st);
    st->best_ms = -1;
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
        cut_search_observe(search, &old[i].sched, old[i].status == CUT_ST_OK ? old[i].median_ms : -1);
        if (old[i].status == CUT_ST_OK && (st->best_ms < 0 || old[i].median_ms < st->best_ms)) {
            st->best_ms = old[i].median_ms;
            st->best = old[i].sched;
        }
    }
    free(old);
    st->trials_total = nold;
    if (nold >= cfg->trials) {
        st->skipped = 1;
        st->best_gflops = st->best_ms > 0 ? cut_conv_flops(c) / (st->best_ms * 1e6) : 0;
        cut_search_free(search);
        return 0;
    }

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
    slot slots[2];
    slot_init(&slots[0], batch);
    slot_init(&slots[1], batch);
    int rc = 0, done = nold, cur = 0;
    double flops = cut_conv_flops(c);
    /* Pipeline: while the runner measures batch i, batch i+1 (proposed without i's results) compiles on the
     * other cores. */
    slot_fill(&slots[cur], search, c, CUT_MIN(batch, cfg->trials - done));
    slot_compile_start(&slots[cur], cfg);
    while (slots[cur].got > 0) {
        slot *s = &slots[cur], *nx = &slots[!cur];
        if (slot_compile_join(s, e) != 0) {
            rc = -1;
            break;
        }
        int left = cfg->trials - done - s->got;
        int out_of_time = cfg->max_seconds > 0 && cut_now_s() - t0 > cfg->max_seconds;
        nx->got = 0;
        if (left > 0 && !out_of_time) {
            slot_fill(nx, search, c, CUT_MIN(batch, left));
            slot_compile_start(nx, cfg);
        }
        rc = slot_measure_record(s, cfg, r, c, case_idx, done, &log, search, st, e);
        if (rc != 0) {
            slot_compile_join(nx, NULL);
            break;
        }
        done += s->got;
        st->trials_new += s->got;
        slot_clear(s);
        double el = cut_now_s() - t0;
        progress(cfg, done, cfg->trials, st->failures_new, st->best_ms > 0 ? flops / (st->best_ms * 1e6) : 0,
                 el > 0 ? st->trials_new / el : 0, 0);
        cur = !cur;
    }
    if (rc == 0 && done < cfg->trials && cfg->progress)
        fprintf(stderr, "\ncase %d: stopped after %d trials: %s\n", case_idx, done,
                cfg->max_seconds > 0 && cut_now_s() - t0 > cfg->max_seconds ? "time budget spent"
                                                                             : "the schedule space is exhausted");
    if (rc == 0)
        progress(cfg, done, cfg->trials, st->failures_new, st->best_ms > 0 ? flops / (st->best_ms * 1e6) : 0,
                 st->trials_new / (cut_now_s() - t0 + 1e-9), 1);
    slot_free(&slots[0]);
    slot_free(&slots[1]);
    cut_reclog_close(&log);
    cut_search_free(search);
    st->trials_total = done;
    st->best_gflops = st->best_ms > 0 ? flops / (st->best_ms * 1e6) : 0;
    st->seconds = cut_now_s() - t0;
    return rc;
}
