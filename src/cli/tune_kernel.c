/* cutune tune --kernel — tunes a user kernel spec's tunables with any strategy (Kernel Tuner's tune_kernel): the
 * spec's restrictions hold for every candidate, each candidate is checked against the baseline's (or the spec's
 * reference kernel's) outputs and timed, every trial goes to tuningrecords/kernel_<name>.json. */
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/mpi_cli.h"
#include "cli/tune_cli.h"
#include "cutune/emu.h"
#include "cutune/kstate.h"
#include "cutune/task.h"
#include "cutune/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The emulator in a worker process of its own, in this process. */
static int kernel_runner(const cut_cli_kernel_opts *o, const char *cache, const cut_timing *tm, cut_tune_cfg *cfg,
                         cut_runner **r)
{
    char so_dir[4200];
    cut_err e = {{0}};
    if (cut_cli_cache_dir("emu", so_dir, sizeof so_dir, &e) != 0) {
        fprintf(stderr, "cutune tune: the emulator's cache: %s\n", e.msg);
        return CUT_EXIT_FAIL;
    }
    cfg->copts.cache_dir = o->cache_dir ? o->cache_dir : cache; /* the reference run compiles with NVRTC */
    if (!(*r = cut_runner_emu_worker_new(NULL, so_dir, tm, &e))) {
        fprintf(stderr, "cutune tune: %s\n", e.msg);
        return CUT_EXIT_FAIL;
    }
    fprintf(stderr, "cutune: tuning on the host emulator (no GPU used; times are CPU times)\n");
    return CUT_EXIT_OK;
}

/* The runners of --backend: a GPU worker (cut_cli_tune_backend), or the emulator in a worker process of its own (a
 * kernel that crashes or hangs is that trial's fault or timeout); under MPI one per serving rank, whose local runners
 * are those (cut_cli_tune_runners). *rs (allocated) holds *nr. */
static int kernel_runners(const cut_cli_kernel_opts *o, const char *cache, const cut_timing *tm, cut_tune_cfg *cfg,
                          cut_runner ***rs, int *nr)
{
    if (!strcmp(o->backend, "compile")) {
        fprintf(stderr, "cutune tune: --backend compile is for the generated conv and GEMM kernels: a kernel spec's "
                        "references come from running its baseline (tune it with --backend cuda or emu)\n");
        return CUT_EXIT_USAGE;
    }
    if (strcmp(o->backend, "emu") != 0 || cut_cli_mpi_active()) {
        if (!strcmp(o->backend, "emu"))
            cfg->copts.cache_dir = o->cache_dir ? o->cache_dir : cache; /* the reference run compiles with NVRTC */
        return cut_cli_tune_runners(o->backend, o->compile_on, o->gpu, o->cache_dir ? o->cache_dir : cache, tm, cfg,
                                    rs, nr);
    }
    *rs = cut_xcalloc(1, sizeof **rs);
    *nr = 1;
    return kernel_runner(o, cache, tm, cfg, *rs);
}

static void print_best(const cut_kspec *k, const cut_tune_stats *st)
{
    printf("%s: %d trials (%d new, %d failed) in %.1f s", k->name, st->trials_total, st->trials_new, st->failures_new,
           st->seconds);
    long long vals[CUT_KS_MAX_VARS];
    if (st->best_ms > 0 && cut_kspec_sched_values(k, &st->best, vals, NULL) == 0) {
        printf("; best %.4f ms with", st->best_ms);
        for (int i = 0; i < k->ntunables; i++)
            printf(" %s=%lld", k->tunables[i].name, vals[i]);
        printf("\n");
    } else {
        printf("; no valid kernel\n");
    }
    fflush(stdout);
}

int cut_cli_final(const cut_tune_cfg *cfg, cut_task *t, cut_runner *r, int k, int with_baseline, const char *outdir,
                  int trials, cut_err *e)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.json", cfg->records_dir, t->name);
    cut_trial *tr = NULL;
    int n = 0, extra = 0, rc = t->load(t, path, &tr, &n, &extra, e);
    cut_final fin;
    if (rc == 0)
        rc = cut_final_task(r, cfg->use_nvrtc ? &cfg->copts : NULL, t, tr, n, k, 2, with_baseline, &fin, e);
    free(tr);
    if (rc != 0)
        return -1;
    cut_final_task_print(stdout, t, &fin);
    snprintf(path, sizeof path, "%s/final.jsonl", outdir);
    FILE *f = fopen(path, "a");
    if (!f)
        return cut_err_set(e, "cannot append to %s", path);
    cut_final_task_json(f, t, trials, &fin);
    return fclose(f) == 0 ? 0 : cut_err_set(e, "writing %s failed", path);
}

int cut_cli_tune_kernel(const cut_cli_kernel_opts *o)
{
    cut_err e = {{0}};
    cut_kspec k;
    memset(&k, 0, sizeof k);
    char rec_dir[1024], cache[4200];
    if (cut_kspec_load(o->spec, &k, &e) != 0 || cut_cli_sizes_known(o->sizes, &k, 1, &e) != 0 ||
        cut_cli_apply_sizes(o->sizes, &k, &e) != 0 || cut_path_join(rec_dir, sizeof rec_dir, o->outdir, "tuningrecords", &e) != 0 ||
        cut_check_writable_dir(rec_dir, &e) != 0) {
        fprintf(stderr, "cutune tune: %s\n", e.msg);
        cut_kspec_free(&k);
        return CUT_EXIT_USAGE;
    }
    if (!o->cache_dir && cut_cli_cache_dir(NULL, cache, sizeof cache, &e) != 0) {
        fprintf(stderr, "cutune tune: the compile cache: %s\n", e.msg);
        cut_kspec_free(&k);
        return CUT_EXIT_FAIL;
    }
    cut_tune_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.records_dir = rec_dir;
    cfg.trials = o->trials > 0 ? o->trials : o->test ? 20 : 200;
    cfg.batch = o->batch;
    cfg.seed = o->seed;
    cfg.progress = !o->quiet;
    cfg.case_pos = cfg.case_total = 1;
    cfg.max_seconds = o->budget;
    cfg.strategy = o->strategy;
    cut_devlimits_sm90(&cfg.limits);
    cut_compile_opts_default(&cfg.copts);
    cut_timing tm;
    cut_timing_default(&tm);
    tm.timeout_s = o->timeout;
    tm.min_total_ms = 10;
    cut_runner **rs = NULL;
    int nr = 0;
    int code = kernel_runners(o, cache, &tm, &cfg, &rs, &nr);
    cut_runner *r = nr > 0 ? rs[0] : NULL;
    cut_task *t = code == CUT_EXIT_OK ? cut_task_kernel_new(&k, &cfg) : NULL;
    cut_tune_stats st;
    if (code == CUT_EXIT_OK && cut_tune_task_on(&cfg, t, rs, nr, &st, &e) != 0) {
        fprintf(stderr, "cutune tune: %s: %s\n", k.name, e.msg);
        code = CUT_EXIT_FAIL;
    }
    if (code == CUT_EXIT_OK)
        print_best(&k, &st);
    if (code == CUT_EXIT_OK && o->final_k > 0 && cut_cli_final(&cfg, t, r, o->final_k, 1, o->outdir, st.trials_total, &e) != 0) {
        fprintf(stderr, "cutune tune: %s: the final measurement: %s\n", k.name, e.msg);
        code = CUT_EXIT_FAIL;
    }
    cut_task_free(t);
    cut_cli_runners_free(rs, nr);
    cut_kspec_free(&k);
    return code;
}
