/* cutune — the tuning loop of one case. */
#include "cutune/tune.h"
#include "cutune/codegen.h"
#include "cutune/record.h"
#include "cutune/util.h"

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
    cut_sched *scheds = cut_xcalloc((size_t)batch, sizeof *scheds);
    cut_kernel_src *ks = cut_xcalloc((size_t)batch, sizeof *ks);
    cut_compiled *bins = cut_xcalloc((size_t)batch, sizeof *bins);
    cut_candidate *cands = cut_xcalloc((size_t)batch, sizeof *cands);
    cut_result *res = cut_xcalloc((size_t)batch, sizeof *res);
    const char **srcs = cut_xcalloc((size_t)batch, sizeof *srcs);
    int rc = 0, done = nold;
    double flops = cut_conv_flops(c);
    while (done < cfg->trials) {
        int want = CUT_MIN(batch, cfg->trials - done);
        int got = cut_search_propose(search, want, scheds);
        if (got == 0) {
            if (cfg->progress)
                fprintf(stderr, "\ncase %d: the schedule space is exhausted after %d trials\n", case_idx, done);
            break;
        }
        for (int i = 0; i < got; i++) {
            memset(&res[i], 0, sizeof res[i]);
            if (cut_codegen_conv(c, &scheds[i], &ks[i], e) != 0) {
                res[i].status = CUT_ST_COMPILE_ERROR;
                snprintf(res[i].error, sizeof res[i].error, "codegen: %s", e->msg);
            }
            srcs[i] = ks[i].src ? ks[i].src : "";
        }
        if (cfg->use_nvrtc && cut_compile_batch(srcs, got, &cfg->copts, bins, e) != 0) {
            rc = -1;
            goto out;
        }
        /* Only candidates that generated measure; the runner sees a compact array. */
        int m = 0, map[256];
        for (int i = 0; i < got && m < 256; i++) {
            if (res[i].status != CUT_ST_OK)
                continue;
            cands[m].ks = &ks[i];
            cands[m].bin = cfg->use_nvrtc ? &bins[i] : NULL;
            map[m++] = i;
        }
        cut_result *mres = cut_xcalloc((size_t)(m ? m : 1), sizeof *mres);
        if (m > 0 && r->measure(r, cands, m, mres, e) != 0) {
            free(mres);
            rc = -1;
            goto out;
        }
        for (int j = 0; j < m; j++)
            res[map[j]] = mres[j];
        free(mres);
        const cut_measure_env *env = r->env(r);
        for (int i = 0; i < got; i++) {
            cut_record rec;
            fill_record(&rec, c, case_idx, done + i, &scheds[i], &res[i], cfg->use_nvrtc ? &bins[i] : NULL, env);
            if (cut_reclog_append(&log, &rec, e) != 0) {
                rc = -1;
                goto out;
            }
            if (res[i].status == CUT_ST_OK) {
                cut_search_observe(search, &scheds[i], res[i].median_ms);
                if (st->best_ms < 0 || res[i].median_ms < st->best_ms) {
                    st->best_ms = res[i].median_ms;
                    st->best = scheds[i];
                }
            } else {
                cut_search_observe(search, &scheds[i], -1);
                st->failures_new++;
                dump_failure(cfg, case_idx, done + i, &ks[i], cfg->use_nvrtc ? &bins[i] : NULL, &res[i]);
            }
        }
        if (cut_reclog_sync(&log, e) != 0) {
            rc = -1;
            goto out;
        }
        for (int i = 0; i < got; i++) {
            cut_kernel_src_free(&ks[i]);
            cut_compiled_free(&bins[i]);
            memset(&bins[i], 0, sizeof bins[i]);
        }
        done += got;
        st->trials_new += got;
        double el = cut_now_s() - t0;
        progress(cfg, done, cfg->trials, st->failures_new, st->best_ms > 0 ? flops / (st->best_ms * 1e6) : 0,
                 el > 0 ? st->trials_new / el : 0, 0);
    }
    progress(cfg, done, cfg->trials, st->failures_new, st->best_ms > 0 ? flops / (st->best_ms * 1e6) : 0,
             st->trials_new / (cut_now_s() - t0 + 1e-9), 1);
out:
    for (int i = 0; i < batch; i++) {
        cut_kernel_src_free(&ks[i]);
        cut_compiled_free(&bins[i]);
    }
    free(scheds);
    free(ks);
    free(bins);
    free(cands);
    free(res);
    free(srcs);
    cut_reclog_close(&log);
    cut_search_free(search);
    st->trials_total = done;
    st->best_gflops = st->best_ms > 0 ? flops / (st->best_ms * 1e6) : 0;
    st->seconds = cut_now_s() - t0;
    return rc;
}
