/* cutune tune --gemm — tunes one GEMM (seed 004, issue 6) through the same pipeline as conv: search with the cost
 * model, code from the GEMM template registry, NVRTC pool or host emulation, records in tuningrecords/. */
#include "cli/args.h"
#include "cli/mpi_cli.h"
#include "cli/tune_cli.h"
#include "cutune/gemm_space.h"
#include "cutune/gemm_tune.h"
#include "cutune/util.h"

#include <stdio.h>
#include <string.h>

/* --tpl: "all" (mask 0: every template that applies) or a comma list of registry names. */
static int parse_tpl(const char *s, int *mask, cut_err *e)
{
    *mask = 0;
    if (!s || !strcmp(s, "all"))
        return 0;
    char buf[256];
    if (snprintf(buf, sizeof buf, "%s", s) >= (int)sizeof buf)
        return cut_err_set(e, "--tpl '%.40s...' is too long", s);
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int t = cut_gemm_template_find(w);
        if (t < 0 || t >= 31)
            return cut_err_set(e, "--tpl: '%s' is not a GEMM template (simt, mma, wgmma, gemv or all)", w);
        *mask |= 1 << t;
    }
    return *mask ? 0 : cut_err_set(e, "--tpl needs a template name (simt, mma, wgmma, gemv or all)");
}

static int usage_errors(const cut_cli_gemm_opts *o, cut_err *e)
{
    if (o->conv_str)
        return cut_err_set(e, "--conv and a GEMM (--gemm, --m, --n, --k, --layout, --dtype) cannot be combined");
    if (o->gemm_trials > 0 && o->trials >= 0)
        return cut_err_set(e, "trials given twice: t=%d in --gemm and --trials %d", o->gemm_trials, o->trials);
    if (o->objective != CUT_OBJ_TIME)
        return cut_err_set(e, "--objective %s is for conv workloads; a GEMM tunes for time",
                           cut_objective_name(o->objective));
    return cut_gemm_cli_finish(&o->g, e);
}

/* Under emulation, the templates whose kernels the host emulator runs: *mask (0: every template) without the
 * GPU-only ones. Naming one of those in --tpl is an error (a sentence; the caller exits 2). */
static int emu_mask(int *mask, cut_err *e)
{
    int out = 0;
    for (int t = 0; t < cut_gemm_template_count(); t++) {
        const cut_gemm_template *tp = cut_gemm_template_get(t);
        if (*mask && !(*mask & (1 << t)))
            continue;
        if (tp->gpu_only && *mask)
            return cut_err_set(e, "--tpl %s: its kernels need a GPU (PTX the host emulator cannot run); leave it "
                                  "out of --tpl under --backend emu, or run with --backend cuda",
                               tp->name);
        if (!tp->gpu_only)
            out |= 1 << t;
    }
    *mask = out;
    return 0;
}

/* 0 if some template of mask (0: any) computes g on d; else a sentence with the reasons (the caller exits 2). */
static int check_templates(const cut_gemm *g, const cut_devlimits *d, int mask, const char *backend, cut_err *e)
{
    char why_all[1024] = "";
    size_t len = 0;
    for (int t = 0; t < cut_gemm_template_count(); t++) {
        const cut_gemm_template *tp = cut_gemm_template_get(t);
        cut_err why = {{0}};
        if (mask && !(mask & (1 << t)))
            continue;
        if (tp->applies(g, d, &why))
            return 0;
        len += (size_t)snprintf(why_all + len, len < sizeof why_all ? sizeof why_all - len : 0, "%s%s: %s",
                                len ? "; " : "", tp->name, why.msg[0] ? why.msg : "does not apply");
        len = CUT_MIN(len, sizeof why_all - 1);
    }
    return cut_err_set(e, "no GEMM template computes %s %s %s (%s)", cut_dtype_name(g->dtype),
                       cut_gemm_layout_name(g->layout), strcmp(backend, "emu") ? "here" : "under emulation", why_all);
}

static void print_result(const char *name, const cut_tune_stats *st)
{
    char desc[512] = "none";
    if (st->best_ms > 0)
        cut_gemm_sched_describe(&st->best, desc, sizeof desc);
    if (st->skipped)
        printf("%s: already finished (%d trials), skipped; ", name, st->trials_total);
    else
        printf("%s: %d trials (%d new, %d failed) in %.1f s; ", name, st->trials_total, st->trials_new,
               st->failures_new, st->seconds);
    if (st->best_ms > 0)
        printf("best %s: %.4f ms = %.3f TFLOP/s (%.1f GFLOP/s)\n", desc, st->best_ms, st->best_gflops / 1000.0,
               st->best_gflops);
    else
        printf("no valid kernel\n");
    fflush(stdout);
}

/* Output folders and the run's configuration. */
static int setup_cfg(const cut_cli_gemm_opts *o, char *rec_dir, char *res_dir, char *cache, size_t n,
                     cut_tune_cfg *cfg, cut_err *e)
{
    if (cut_path_join(rec_dir, n, o->outdir, "tuningrecords", e) != 0 ||
        cut_path_join(res_dir, n, o->outdir, "tuningresults", e) != 0 || cut_check_writable_dir(rec_dir, e) != 0 ||
        cut_check_writable_dir(res_dir, e) != 0)
        return -1;
    if (!o->cache_dir && cut_cli_cache_dir(NULL, cache, n, e) != 0)
        return cut_err_wrap(e, "the compile cache");
    memset(cfg, 0, sizeof *cfg);
    cfg->records_dir = rec_dir;
    cfg->trials = o->gemm_trials > 0 ? o->gemm_trials : o->trials > 0 ? o->trials : o->test ? 100 : 1000;
    cfg->batch = o->batch > 0 ? o->batch : !strcmp(o->backend, "cuda") ? 64 : 16;
    cfg->seed = o->seed;
    cfg->progress = !o->quiet;
    cfg->case_pos = cfg->case_total = 1;
    cfg->max_seconds = o->budget;
    cfg->strategy = o->strategy;
    cut_devlimits_sm90(&cfg->limits);
    return 0;
}

int cut_cli_tune_gemm(const cut_cli_gemm_opts *o)
{
    cut_err e = {{0}};
    int mask = 0;
    char rec_dir[1024], res_dir[1024], cache[1024], name[256];
    cut_tune_cfg cfg;
    if (usage_errors(o, &e) != 0 || parse_tpl(o->tpl, &mask, &e) != 0 ||
        (!strcmp(o->backend, "emu") && emu_mask(&mask, &e) != 0) ||
        setup_cfg(o, rec_dir, res_dir, cache, sizeof rec_dir, &cfg, &e) != 0 ||
        check_templates(&o->g, &cfg.limits, mask, o->backend, &e) != 0 ||
        (!strcmp(o->backend, "emu") && (cut_gemm_name(&o->g, name, sizeof name),
                                        cut_cli_emu_cost_check(name, cut_gemm_flops(&o->g), cfg.trials, o->emu_force,
                                                               &e)) != 0)) {
        fprintf(stderr, "cutune tune: %s\n", e.msg);
        return CUT_EXIT_USAGE;
    }
    cut_gemm_name(&o->g, name, sizeof name);
    printf("%s: %.6g FLOP (2*M*N*K), %d trials\n", name, cut_gemm_flops(&o->g), cfg.trials);
    fflush(stdout);
    cut_timing tm;
    cut_timing_default(&tm);
    tm.timeout_s = o->timeout;
    tm.min_total_ms = 10; /* as conv: 10 ms of timed launches rank well during the search */
    cut_runner **rs = NULL;
    int nr = 0;
    int code = cut_cli_tune_runners(o->backend, o->compile_on, o->gpu, o->cache_dir ? o->cache_dir : cache, &tm, &cfg, &rs, &nr);
    cut_runner *r = nr > 0 ? rs[0] : NULL;
    if (code == CUT_EXIT_OK && check_templates(&o->g, &cfg.limits, mask, o->backend, &e) != 0) {
        fprintf(stderr, "cutune tune: %s\n", e.msg); /* the GPU's limits rule out what sm_90 allowed */
        code = CUT_EXIT_USAGE;
    }
    cut_tune_stats st;
    if (code == CUT_EXIT_OK && cut_tune_gemm_on(&cfg, mask, rs, nr, &o->g, &st, &e) != 0) {
        fprintf(stderr, "cutune tune: %s: %s\n", name, e.msg);
        code = CUT_EXIT_FAIL;
    }
    if (code == CUT_EXIT_OK)
        print_result(name, &st);
    if (code == CUT_EXIT_OK && o->final_k > 0 && st.best_ms > 0) {
        /* the best vendor kernel (cuBLAS + cuBLASLt) is the baseline on a GPU; emulation has none */
        cut_task *t = cut_task_gemm_new(&o->g, mask);
        if (t->prepare(t, r, cfg.seed, &e) != 0 ||
            cut_cli_final(&cfg, t, r, o->final_k, !strcmp(o->backend, "cuda"), o->outdir, st.trials_total, &e) != 0) {
            fprintf(stderr, "cutune tune: %s: --final: %s\n", name, e.msg);
            code = CUT_EXIT_FAIL;
        }
        cut_task_free(t);
    }
    int kept = code == CUT_EXIT_OK && !o->no_sample ?
                   cut_gemm_results_write(rec_dir, res_dir, &o->g, CUT_GEMM_RESULTS_KEEP, &e) : 0;
    if (kept < 0) {
        fprintf(stderr, "cutune tune: writing tuningresults: %s\n", e.msg);
        code = CUT_EXIT_FAIL;
    } else if (kept > 0) {
        printf("wrote the %d fastest kernel(s) to %s/%s.json\n", kept, res_dir, name);
    }
    cut_cli_runners_free(rs, nr);
    return code;
}
