/* cutune tune — tunes Conv2D workloads (seed 000/001 phase 1) and samples the representatives. */
#include "cli/cli.h"
#include "cli/args.h"
#include "cli/idle_cli.h"
#include "cli/mpi_cli.h"
#include "cli/tune_cli.h"
#include "cutune/emu.h"
#include "cutune/gpu.h"
#include "cutune/record.h"
#include "cutune/tasksched.h"
#include "cutune/tune.h"
#include "cutune/util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: cutune tune [options]\n"
    "  --workloads NAME    seed001 (default), resnet18, yolov3, or a path to a list file\n"
    "  --case I            tune only case I (1-based, as in caseI_*.json)\n"
    "  --specify_pz I      the seeds' form: 0-based index of the case\n"
    "  --conv N,H,W,CO,CI,KH,KW,S,P   a custom shape (list 'custom'): in DIR it keeps the case number of its\n"
    "                      files there (a re-run resumes), or takes the next free one, so shapes share a folder\n"
    "  --gemm WORDS        a GEMM in seed 004's form, e.g. --gemm M=1024 N=2048 K=3072 t=2000 (MN=, MNK= set\n"
    "                      several sizes; t= is the trial count; O= is accepted and ignored)\n"
    "  --m N --n N --k N   the same GEMM sizes as long flags\n"
    "  --layout L          conv layout nchw (default) or nhwc; with a GEMM: nn (default; B is KxN), nt (B is NxK),\n"
    "                      tn or tt (A stored KxM)\n"
    "  --epilogue E        conv: none (default), bias or bias_relu, fused after the convolution (+ bias per CO in\n"
    "                      the dtype, then ReLU); tensor-core dtypes only (igemm_tc, wgmma_conv)\n"
    "  --dtype D           input type fp32 (default), tf32, fp16 or bf16 (conv and GEMM; fp32 accumulate)\n"
    "  --tpl T             GEMM templates to search: simt, mma, wgmma, gemv (M <= 16), a comma list, or all\n"
    "                      (default: every template that computes the GEMM on this device; under emulation, those\n"
    "                      the emulator runs: not wgmma); GEMM logs go to\n"
    "                      DIR/tuningrecords/gemm_<layout>_<dtype>_M_.._N_.._K_...json, the 5 fastest to tuningresults/\n"
    "  --trials N          trials per case (default 1000; 100 with --test)\n"
    "  --test              first and last case, 100 trials, keep the top 2 (seed 001's test mode)\n"
    "  --backend B         cuda (default), emu (host emulation, for small shapes without a GPU) or compile\n"
    "                      (compile only, with NVRTC for sm_90 or the serving GPUs': nothing runs; the records say\n"
    "                      whether each candidate compiles, its registers and spills, status compiled, no time)\n"
    "  --compile-on P      under MPI, where the candidates compile: ranks (default; each serving rank compiles\n"
    "                      what it measures) or root (rank 0 compiles and sends cubins); one process compiles\n"
    "                      in its own loop\n"
    "  --gpu I             GPU index (default 0)\n"
    "  --outdir DIR        where tuningrecords/ and tuningresults/ go (default .)\n"
    "  --batch B           candidates per round (default 64 on a GPU, 16 under emulation)\n"
    "  --seed S            random seed (default 1)\n"
    "  --timeout S         seconds before a hanging candidate is killed (default 10)\n"
    "  --cache-dir DIR     NVRTC cubin cache (default: cutune's cache folder, $COMPILE_CACHE_DIR or\n"
    "                      $XDG_CACHE_HOME/cutune or ~/.cache/cutune, which also keeps the emulator's kernels under\n"
    "                      emu/; cutune clean --cache removes it)\n"
    "  --no-sample         do not write tuningresults/ at the end\n"
    "  --time-budget S     stop a case after S seconds even if fewer trials ran (the log says how many): no\n"
    "                      candidate starts after that, so it overshoots by about one candidate's time\n"
    "  --final K           re-time the K best kernels of each tuned case with longer timing, interleaved with\n"
    "                      cuDNN over 2 rounds; one JSON line per case appended to DIR/final.jsonl\n"
    "                      (default 3 on a GPU, 0 under emulation; at most 8); with --gemm (default 0) against\n"
    "                      the best cuBLAS/cuBLASLt kernel on a GPU, with --kernel against the spec's baseline\n"
    "  --prior, --no-prior also train the cost model on the logs of the 3 other workloads nearest in shape\n"
    "                      (transfer learning; default on), found in DIR/tuningrecords, the --prior-dir\n"
    "                      folders and the shipped priors of this GPU ($CUTUNE_WORKLOADS/priors/<GPU name>)\n"
    "  --prior-dir P       one more folder of prior logs (repeatable); only its records of this GPU are used\n"
    "  --kernel SPEC       tune a user kernel spec's tunables (the optimizer's spec format, restrictions kept)\n"
    "  --sizes N=V,...     with --kernel: override spec sizes (e.g. a small problem for emulation)\n"
    "  --scheduler S       sequential (default: each case in turn, --trials trials each) or gradient: --trials N\n"
    "                      is the budget of all the selected cases together (default 1000 per case), given\n"
    "                      round by round (a batch) to the case where it cuts the network's time most (Ansor's\n"
    "                      task scheduler; a shape listed k times weighs k); per-case counts go to DIR/sched.json\n"
    "  --strategy S        evolve (default: evolutionary search ranked by the XGBoost cost model), random, or\n"
    "                      exhaustive (every valid schedule, for spaces of at most a million knob combinations)\n"
    "  --objective O       time (default), energy or edp: with energy/edp the 2 fastest candidates of each round\n"
    "                      also get a short tuning-time energy measurement (NVML's energy counter; records gain\n"
    "                      energy_mj, edp, power_w), and the best and tuningresults/ rank by O among those\n"
    "                      (the other trials follow by time); the cost model still learns time; --final stays\n"
    "                      time-based\n"
    "  --energy-steps N    energy/edp: counter steps per energy measurement (default 3)\n"
    "  --quiet             no progress line\n"
    "  --emu-force         with --backend emu, tune a shape the emulator would take long on (by default a shape\n"
    "                      estimated at over 1 s a trial is refused, with the estimate)\n"
    CUT_CLI_IDLE_HELP;

/* --objective energy|edp: the tuning-time energy plan (one window of min_steps counter steps after a short
 * warm-up: enough to rank the few fastest candidates of a round, not seed 001's final measurement), checked up
 * front: NVML's counter of the measured GPU moves (every runner observes energy around a run). */
static int energy_setup(cut_tune_cfg *cfg, const char *backend, int gpu, int steps, cut_err *e)
{
    const char *name = cut_objective_name(cfg->objective);
    cut_energy_plan *p = &cfg->energy_plan;
    cut_energy_plan_default(p);
    p->lrounds = 1;
    p->min_steps = steps;
    p->warmup_s = 0.05;
    cfg->energy_top = 2;
    double idle_w;
    if (cut_energy_plan_check(p, e) != 0 || cut_cli_energy_uuid(backend, gpu, NULL, p->uuid, sizeof p->uuid, e) != 0 ||
        cut_energy_idle_w(p->uuid, 1, p->max_wait_s, &idle_w, e) != 0)
        return cut_err_wrap(e, "--objective %s needs NVML's energy counter, which cannot be read (use --objective "
                               "time, the default)",
                            name);
    fprintf(stderr, "cutune: objective %s: energy of the %d fastest candidates per round, GPU %s (idle %.1f W)\n",
            name, cfg->energy_top, p->uuid, idle_w);
    return 0;
}

/* The line of a compile-only run. */
static void say_compile_only(const cut_devlimits *lim)
{
    fprintf(stderr, "cutune: compiling only, with NVRTC for sm_%d%d: nothing runs; each record says whether its candidate "
                    "compiles, with its registers and spills (status compiled, no time)\n", lim->sm_major, lim->sm_minor);
}

int cut_cli_tune_backend(const char *backend, int gpu, const char *cache_dir, const cut_timing *tm, cut_tune_cfg *cfg,
                         cut_runner **out)
{
    cut_err e = {{0}};
    *out = NULL;
    if (!strcmp(backend, "cuda")) {
        int n = cut_gpu_init(&e);
        cut_gpu_info info;
        if (n < 0 || n <= gpu) {
            if (n >= 0)
                cut_err_set(&e, "GPU %d does not exist (%d found)", gpu, n);
            fprintf(stderr,
                    "cutune tune: no usable GPU: %s. Run with --backend emu to tune on the CPU emulator "
                    "(small shapes only).\n",
                    e.msg);
            return CUT_EXIT_USAGE;
        }
        if (cut_gpu_query(gpu, &info, &e) != 0) {
            fprintf(stderr, "cutune tune: %s\n", e.msg);
            return CUT_EXIT_USAGE;
        }
        cut_gpu_limits(&info, &cfg->limits);
        cfg->use_nvrtc = 1;
        cfg->copts.sm_major = info.sm_major;
        cfg->copts.sm_minor = info.sm_minor;
        cfg->copts.cache_dir = cache_dir;
        cfg->copts.nthreads = cut_cli_compile_threads();
        char self[PATH_MAX];
        *out = cut_runner_gpu_new(gpu, cut_cli_worker_exe(self, sizeof self), tm, &e);
        if (!*out) {
            fprintf(stderr, "cutune tune: %s\n", e.msg);
            return CUT_EXIT_FAIL;
        }
        fprintf(stderr, "cutune: tuning on GPU %d: %s (sm_%d%d, %d SMs)\n", gpu, info.name, info.sm_major,
                info.sm_minor, info.sm_count);
    } else if (!strcmp(backend, "emu")) {
        char emu_dir[4200];
        if (cut_cli_cache_dir("emu", emu_dir, sizeof emu_dir, &e) != 0) {
            fprintf(stderr, "cutune tune: the emulator's cache: %s\n", e.msg);
            return CUT_EXIT_FAIL;
        }
        *out = cut_runner_emu_new(emu_dir, tm, &e);
        if (!*out) {
            fprintf(stderr, "cutune tune: %s\n", e.msg);
            return CUT_EXIT_FAIL;
        }
        fprintf(stderr, "cutune: tuning on the host emulator (no GPU used; times are CPU times)\n");
    } else if (!strcmp(backend, "compile")) {
        if (!(*out = cut_cli_compile_runner(NULL, &cfg->limits, cache_dir, NULL, &e))) {
            fprintf(stderr, "cutune tune: %s\n", e.msg);
            return CUT_EXIT_FAIL;
        }
        say_compile_only(&cfg->limits);
    } else {
        fprintf(stderr, "cutune tune: unknown backend '%s' (cuda, emu or compile)\n", backend);
        return CUT_EXIT_USAGE;
    }
    return CUT_EXIT_OK;
}

/* --compile-on P under MPI: 1 for ranks (also NULL, the default), 0 for root. -1 with a sentence for another word, and
 * for root with the compile backend (its ranks would have nothing to do). */
static int compile_on_ranks(const char *p, const char *backend, cut_err *e)
{
    if (!p || !strcmp(p, "ranks"))
        return 1;
    if (strcmp(p, "root") != 0)
        return cut_err_set(e, "--compile-on %s: ranks or root", p);
    if (!strcmp(backend, "compile"))
        return cut_err_set(e, "--backend compile compiles on the serving ranks (--compile-on root would leave them "
                              "nothing to do)");
    return 0;
}

int cut_cli_tune_runners(const char *backend, const char *compile_on, int gpu, const char *cache_dir,
                         const cut_timing *tm, cut_tune_cfg *cfg, cut_runner ***out, int *n)
{
    *out = NULL;
    *n = 0;
    cut_err e = {{0}};
    const int on_ranks = compile_on_ranks(compile_on, backend, &e);
    if (on_ranks < 0) {
        fprintf(stderr, "cutune tune: %s\n", e.msg);
        return CUT_EXIT_USAGE;
    }
    if (!cut_cli_mpi_active()) {
        cut_runner *r = NULL;
        const int code = cut_cli_tune_backend(backend, gpu, cache_dir, tm, cfg, &r);
        if (code == CUT_EXIT_OK) {
            *out = cut_xcalloc(1, sizeof **out);
            (*out)[0] = r;
            *n = 1;
        }
        return code;
    }
    if (strcmp(backend, "cuda") != 0 && strcmp(backend, "emu") != 0 && strcmp(backend, "compile") != 0) {
        fprintf(stderr, "cutune tune: unknown backend '%s' (cuda, emu or compile)\n", backend);
        return CUT_EXIT_USAGE;
    }
    cut_mpi_setup s = {.compile = on_ranks};
    snprintf(s.backend, sizeof s.backend, "%s", backend);
    snprintf(s.nvrtc_opts, sizeof s.nvrtc_opts, "%s", cfg->copts.extra_opts ? cfg->copts.extra_opts : "");
    cut_mpi_hello h;
    if (cut_cli_mpi_runners("tune", &s, tm, out, n, &h, &e) != 0) {
        fprintf(stderr, "cutune tune: %s\n", e.msg);
        return CUT_EXIT_FAIL;
    }
    if (strcmp(h.env.backend, "emu") != 0) /* the serving ranks' GPU (sm_90 for the compile backend) */
        cfg->limits = h.limits;
    if (!strcmp(h.env.backend, "cuda") && !h.compiles) { /* compiled here, for the serving ranks' GPU */
        cfg->use_nvrtc = 1;
        cfg->copts.sm_major = h.limits.sm_major;
        cfg->copts.sm_minor = h.limits.sm_minor;
        cfg->copts.cache_dir = cache_dir;
        cfg->copts.nthreads = cut_cli_compile_threads();
    }
    return CUT_EXIT_OK;
}

/* Under MPI (rank 0 of a job with serving ranks), what does not run there yet: a usage error naming it. */
static int mpi_unsupported(int idle_others, cut_objective obj, int final_k)
{
    const char *what = idle_others ? "--idle-other-gpus" : obj != CUT_OBJ_TIME ? "--objective energy|edp"
                       : final_k > 0                     ? "--final"
                                                         : NULL;
    if (!cut_cli_mpi_active() || !what)
        return 0;
    fprintf(stderr, "cutune tune: %s is not run over MPI yet: run it without mpirun\n", what);
    return -1;
}

/* A duration for people: "42 s", "3.5 min", "2.1 h", "4.0 days". */
static void say_seconds(double s, char *buf, size_t n)
{
    if (s < 10)
        snprintf(buf, n, "%.1f s", s);
    else if (s < 120)
        snprintf(buf, n, "%.0f s", s);
    else if (s < 7200)
        snprintf(buf, n, "%.1f min", s / 60);
    else if (s < 172800)
        snprintf(buf, n, "%.1f h", s / 3600);
    else
        snprintf(buf, n, "%.1f days", s / 86400);
}

int cut_cli_emu_cost_check(const char *what, double flops, int trials, int force, cut_err *e)
{
    const double per = cut_emu_trial_seconds(flops);
    if (force || per <= CUT_EMU_MAX_TRIAL_S)
        return 0;
    char one[32], all[32];
    say_seconds(per, one, sizeof one);
    say_seconds(per * trials, all, sizeof all);
    return cut_err_set(e, "%s is too large to emulate: %.3g GFLOP a launch, so at least %s a trial on the host "
                          "emulator (%d launches at <= %.0f GFLOP/s) and at least %s for %d trials. Tune it on a GPU "
                          "(--backend cuda), emulate a smaller shape (under %.0f MFLOP a launch), or pass --emu-force "
                          "to run it anyway",
                       what, flops / 1e9, one, CUT_EMU_LAUNCHES_PER_TRIAL, CUT_EMU_GFLOPS, all, trials,
                       CUT_EMU_MAX_TRIAL_S * CUT_EMU_GFLOPS * 1e3 / CUT_EMU_LAUNCHES_PER_TRIAL);
}

/* The line for one case. */
static void print_case(const char *name, const cut_tune_cfg *cfg, const cut_tune_stats *st)
{
    char desc[512] = "none";
    if (st->best_ms > 0)
        cut_sched_describe(&st->best, desc, sizeof desc);
    if (cfg->objective != CUT_OBJ_TIME) {
        printf("%s: %d trials (%d new, %d failed, %d with energy) in %.1f s; best %s: ", name, st->trials_total,
               st->trials_new, st->failures_new, st->energy_trials, st->seconds, cut_objective_name(cfg->objective));
        if (st->best_obj > 0)
            printf("EDP %.6g ms*mJ, energy %.6g mJ, %.4f ms = %.1f GFLOP/s, %.1f W [%s]\n", st->best_edp,
                   st->best_energy_mj, st->best_ms, st->best_gflops, st->best_power_w, desc);
        else
            printf("none (no trial with energy measured)\n");
    } else if (st->skipped) {
        printf("%s: already finished (%d trials), skipped; best %.4f ms (%.1f GFLOP/s)\n", name, st->trials_total,
               st->best_ms, st->best_gflops);
    } else {
        printf("%s: %d trials (%d new, %d failed) in %.1f s; best %.4f ms = %.1f GFLOP/s [%s]%s\n", name,
               st->trials_total, st->trials_new, st->failures_new, st->seconds, st->best_ms, st->best_gflops, desc,
               st->prior_trials > 0 ? "; cost model started from other workloads' trials" : "");
    }
    fflush(stdout);
}

/* Re-times the best k kernels of a case just tuned (the runner prepared for it again: a no-op where it still holds
 * it), interleaved with cuDNN on a GPU, and appends the result to <outdir>/final.jsonl. */
static int final_step(const cut_tune_cfg *cfg, cut_runner *r, const char *outdir, const cut_conv *c, int idx, int k,
                      int with_vendor, double search_s, cut_err *e)
{
    char name[512], path[1024], jpath[1024];
    cut_conv_case_name(c, idx, name, sizeof name);
    if (snprintf(path, sizeof path, "%s/%s.json", cfg->records_dir, name) >= (int)sizeof path ||
        cut_path_join(jpath, sizeof jpath, outdir, "final.jsonl", e) != 0)
        return cut_err_set(e, "path too long");
    cut_record *recs = NULL;
    int n = 0, partial = 0;
    if (cut_runner_prepare_conv(r, c, cfg->seed, e) != 0 || cut_records_load(path, &recs, &n, &partial, e) != 0)
        return -1;
    cut_final fin;
    int rc = cut_final_case(r, cfg->use_nvrtc ? &cfg->copts : NULL, c, recs, n, k, 2, with_vendor, &fin, e);
    if (rc == 0) {
        FILE *f = fopen(jpath, "a");
        if (!f) {
            rc = cut_err_set(e, "cannot open '%s' for appending", jpath);
        } else {
            cut_final_print(stdout, c, idx, &fin);
            cut_final_json(f, c, idx, n, search_s, &fin);
            if (fclose(f) != 0)
                rc = cut_err_set(e, "writing '%s' failed", jpath);
        }
    }
    free(recs);
    return rc;
}

/* The selected cases of a conv tune and what to do with them. */
typedef struct conv_run {
    cut_tune_cfg *cfg;
    cut_runner **r;
    int nr;
    const cut_conv_list *list;
    const int *cases; /* nsel 1-based case numbers */
    int nsel;
    int custom_case;  /* --conv: its case number in the folder, else 0 */
    int final_k, with_vendor;
    const char *outdir;
} conv_run;

/* The case number of the i-th selected case. */
static int case_idx(const conv_run *cr, int i) { return cr->custom_case ? cr->custom_case : cr->cases[i]; }

static const cut_conv *case_conv(const conv_run *cr, int i) { return &cr->list->cases[cr->cases[i] - 1]; }

/* A tuned case's line, then --final: the exit code. */
static int case_done(const conv_run *cr, int i, const cut_tune_stats *st)
{
    cut_err e = {{0}};
    char name[512];
    cut_conv_case_name(case_conv(cr, i), case_idx(cr, i), name, sizeof name);
    print_case(name, cr->cfg, st);
    if (cr->final_k > 0 && !st->skipped && st->best_ms > 0 &&
        final_step(cr->cfg, cr->r[0], cr->outdir, case_conv(cr, i), case_idx(cr, i), cr->final_k, cr->with_vendor,
                   st->seconds, &e) != 0) {
        fprintf(stderr, "cutune tune: case %d: final measurement: %s\n", case_idx(cr, i), e.msg);
        return CUT_EXIT_FAIL;
    }
    return CUT_EXIT_OK;
}

/* --scheduler sequential: each case in turn, --trials trials each. */
static int tune_sequential(const conv_run *cr)
{
    for (int i = 0; i < cr->nsel; i++) {
        cut_err e = {{0}};
        cut_tune_stats st;
        cr->cfg->case_pos = i + 1;
        if (cut_tune_case_on(cr->cfg, cr->r, cr->nr, case_conv(cr, i), case_idx(cr, i), &st, &e) != 0) {
            fprintf(stderr, "cutune tune: case %d: %s\n", case_idx(cr, i), e.msg);
            return CUT_EXIT_FAIL;
        }
        const int code = case_done(cr, i, &st);
        if (code != CUT_EXIT_OK)
            return code;
    }
    return CUT_EXIT_OK;
}

/* The tasks of a scheduled run: one per distinct shape of the selection (its first case), weighted by how often the
 * shape occurs in it (a network's repeated layers), grouped by filter size and stride (the shape families expected
 * to reach like speeds). first[k]: the selected index of task k's case. Returns the task count. */
static int sched_tasks(conv_run *cr, cut_tasksched_item *items, int *first)
{
    int n = 0;
    for (int i = 0; i < cr->nsel; i++) {
        const cut_conv *c = case_conv(cr, i);
        int k = 0;
        while (k < n && !cut_conv_equal(case_conv(cr, first[k]), c))
            k++;
        if (k < n) {
            items[k].weight += 1;
            continue;
        }
        first[n] = i;
        items[n] = (cut_tasksched_item){.weight = 1, .group = n};
        for (int j = 0; j < n; j++) {
            const cut_conv *d = case_conv(cr, first[j]);
            if (d->kh == c->kh && d->kw == c->kw && d->stride == c->stride) {
                items[n].group = items[j].group;
                break;
            }
        }
        n++;
    }
    for (int k = 0; k < n; k++) {
        cr->cfg->case_pos = k + 1;
        cr->cfg->case_total = n;
        items[k].t = cut_task_conv_new(case_conv(cr, first[k]), case_idx(cr, first[k]), cr->cfg);
    }
    return n;
}

/* --scheduler gradient: --trials is the budget of all the cases together, given round by round where it helps the
 * network most (cutune/tasksched.h); OUTDIR/sched.json says where it went. */
static int tune_gradient(conv_run *cr)
{
    cut_err e = {{0}};
    cut_tasksched_item *items = cut_xcalloc((size_t)cr->nsel, sizeof *items);
    int *first = cut_xcalloc((size_t)cr->nsel, sizeof *first);
    const int n = sched_tasks(cr, items, first);
    char json[1024];
    cut_tasksched_opts o;
    cut_tasksched_opts_default(&o);
    o.seed = cr->cfg->seed;
    int code = CUT_EXIT_OK;
    if (cut_path_join(json, sizeof json, cr->outdir, "sched.json", &e) != 0 ||
        cut_tasksched_tune(cr->cfg, items, n, cr->r, cr->nr, &o, json, &e) != 0) {
        fprintf(stderr, "cutune tune: --scheduler gradient: %s\n", e.msg);
        code = CUT_EXIT_FAIL;
    }
    for (int k = 0; k < n && code == CUT_EXIT_OK; k++)
        code = case_done(cr, first[k], &items[k].st);
    if (code == CUT_EXIT_OK) {
        int spent = 0;
        for (int k = 0; k < n; k++)
            spent += items[k].st.trials_total;
        printf("scheduler gradient: %d of %d trials over %d workload(s):", spent, cr->cfg->trials, n);
        for (int k = 0; k < n; k++)
            printf("%s %s %d (weight %g, %d rounds)", k ? "," : "", items[k].t->what, items[k].st.trials_total,
                   items[k].weight, items[k].rounds);
        printf("; see %s\n", json);
    }
    for (int k = 0; k < n; k++)
        cut_task_free(items[k].t);
    free(items);
    free(first);
    return code;
}

/* The command once its options are read; idle: --idle-other-gpus, begun here after the options are checked and
 * ended by cut_cmd_tune on every way out. */
static int tune_cmd(int argc, char **argv, cut_cli_idle *idle)
{
    const char *list_name = "seed001", *conv_str = NULL, *backend = "cuda", *outdir = ".", *cache_dir = NULL;
    int budget = 0, case_sel = 0, trials = -1, test = 0, gpu = 0, batch = 0, quiet = 0, no_sample = 0, final_k = -1,
        prior = 1, energy_steps = 3, idle_others = 0, emu_force = 0;
    const char *objective = "time", *tpl = NULL, *strategy = "evolve", *kernel = NULL, *sizes = NULL,
               *compile_on = NULL;
    const char *scheduler = "sequential";
    const char *dtype = NULL, *layout = NULL; /* a GEMM's or a conv's: applied once the op is known */
    const char *epilogue = NULL;              /* a conv's fused epilogue: none, bias, bias_relu */
    long long seed = 1;
    double timeout = 10;
    cut_err e = {{0}};
    const char *prior_dirs[16]; /* --prior-dir folders, in order */
    int nprior_dirs = 0;
    cut_gemm gemm;
    int gemm_given = 0, gemm_trials = 0;
    cut_gemm_cli_init(&gemm);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return CUT_EXIT_OK;
        } else if (!strcmp(a, "--test")) {
            test = 1;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "--prior") || !strcmp(a, "--no-prior")) {
            prior = !strcmp(a, "--prior");
        } else if (!strcmp(a, "--no-sample")) {
            no_sample = 1;
        } else if (!strcmp(a, "--idle-other-gpus")) {
            idle_others = 1;
        } else if (!strcmp(a, "--emu-force")) {
            emu_force = 1;
        } else if (!strcmp(a, "--workloads")) {
            rc = cut_arg_str(argc, argv, &i, &list_name, &e);
        } else if (!strcmp(a, "--conv")) {
            rc = cut_arg_str(argc, argv, &i, &conv_str, &e);
        } else if (!strcmp(a, "--dtype")) {
            rc = cut_arg_str(argc, argv, &i, &dtype, &e);
        } else if (!strcmp(a, "--layout")) {
            rc = cut_arg_str(argc, argv, &i, &layout, &e);
        } else if (!strcmp(a, "--epilogue")) {
            rc = cut_arg_str(argc, argv, &i, &epilogue, &e);
        } else if (!strcmp(a, "--backend")) {
            rc = cut_arg_str(argc, argv, &i, &backend, &e);
        } else if (!strcmp(a, "--compile-on")) {
            rc = cut_arg_str(argc, argv, &i, &compile_on, &e);
            if (rc == 0 && strcmp(compile_on, "ranks") != 0 && strcmp(compile_on, "root") != 0)
                rc = cut_err_set(&e, "--compile-on %s: ranks or root", compile_on);
        } else if (!strcmp(a, "--outdir") || !strcmp(a, "--output_dir")) {
            rc = cut_arg_str(argc, argv, &i, &outdir, &e);
        } else if (!strcmp(a, "--prior-dir")) {
            if (nprior_dirs == (int)CUT_ARRAY_LEN(prior_dirs))
                rc = cut_err_set(&e, "at most %d --prior-dir folders", (int)CUT_ARRAY_LEN(prior_dirs));
            else
                rc = cut_arg_str(argc, argv, &i, &prior_dirs[nprior_dirs], &e);
            if (rc == 0 && !cut_path_exists(prior_dirs[nprior_dirs]))
                rc = cut_err_set(&e, "prior folder '%s' does not exist", prior_dirs[nprior_dirs]);
            nprior_dirs += rc == 0;
        } else if (!strcmp(a, "--tpl")) {
            rc = cut_arg_str(argc, argv, &i, &tpl, &e);
        } else if (!strcmp(a, "--objective")) {
            rc = cut_arg_str(argc, argv, &i, &objective, &e);
        } else if (!strcmp(a, "--kernel")) {
            rc = cut_arg_str(argc, argv, &i, &kernel, &e);
        } else if (!strcmp(a, "--sizes")) {
            rc = cut_arg_str(argc, argv, &i, &sizes, &e);
        } else if (!strcmp(a, "--strategy")) {
            rc = cut_arg_str(argc, argv, &i, &strategy, &e);
        } else if (!strcmp(a, "--scheduler")) {
            rc = cut_arg_str(argc, argv, &i, &scheduler, &e);
        } else if (!strcmp(a, "--energy-steps")) {
            rc = cut_arg_int(argc, argv, &i, 1, 1000, &energy_steps, &e);
        } else if (!strcmp(a, "--cache-dir")) {
            rc = cut_arg_str(argc, argv, &i, &cache_dir, &e);
        } else if (!strcmp(a, "--case")) {
            rc = cut_arg_int(argc, argv, &i, 1, 1 << 20, &case_sel, &e);
        } else if (!strcmp(a, "--specify_pz")) {
            rc = cut_arg_int(argc, argv, &i, 0, 1 << 20, &case_sel, &e);
            case_sel += 1;
        } else if (!strcmp(a, "--trials") || !strcmp(a, "--ntrials")) {
            rc = cut_arg_int(argc, argv, &i, 1, 10000000, &trials, &e);
        } else if (!strcmp(a, "--gpu")) {
            rc = cut_arg_int(argc, argv, &i, 0, 1024, &gpu, &e);
        } else if (!strcmp(a, "--final")) {
            rc = cut_arg_int(argc, argv, &i, 0, CUT_FINAL_MAX, &final_k, &e);
        } else if (!strcmp(a, "--batch")) {
            rc = cut_arg_int(argc, argv, &i, 1, 256, &batch, &e);
        } else if (!strcmp(a, "--seed")) {
            int s32;
            rc = cut_arg_int(argc, argv, &i, 0, 2147483647, &s32, &e);
            seed = s32;
        } else if (!strcmp(a, "--time-budget")) {
            rc = cut_arg_int(argc, argv, &i, 1, 100000000, &budget, &e);
        } else if (!strcmp(a, "--timeout")) {
            int t;
            rc = cut_arg_int(argc, argv, &i, 1, 3600, &t, &e);
            timeout = t;
        } else if ((rc = cut_gemm_parse_cli(argc, argv, &i, &gemm, &gemm_trials, &e)) == 1) {
            gemm_given = 1;
            rc = 0;
        } else if (rc == 0) {
            rc = cut_err_set(&e, "unknown option '%s' (see cutune help tune)", a);
        }
        if (rc != 0) {
            fprintf(stderr, "cutune tune: %s\n", e.msg);
            return CUT_EXIT_USAGE;
        }
    }
    cut_objective obj;
    cut_strategy_kind strat;
    if (cut_objective_parse(objective, &obj, &e) != 0 || cut_strategy_kind_parse(strategy, &strat, &e) != 0) {
        fprintf(stderr, "cutune tune: %s\n", e.msg);
        return CUT_EXIT_USAGE;
    }
    const int gradient = !strcmp(scheduler, "gradient");
    if (!gradient && strcmp(scheduler, "sequential") != 0) {
        fprintf(stderr, "cutune tune: unknown --scheduler '%s' (sequential or gradient)\n", scheduler);
        return CUT_EXIT_USAGE;
    }
    if (gradient && (kernel || gemm_given || tpl)) {
        fprintf(stderr, "cutune tune: --scheduler gradient spreads a budget over a list of conv workloads; --%s tunes "
                        "one workload: drop --scheduler\n", kernel ? "kernel" : "gemm");
        return CUT_EXIT_USAGE;
    }
    if (mpi_unsupported(idle_others, obj, final_k) != 0)
        return CUT_EXIT_USAGE;
    if (cut_cli_mpi_active())
        final_k = 0; /* the re-timing against the vendor's kernels runs in one process only, for now */
    if (idle_others && cut_cli_idle_begin(idle, backend, gpu, NULL, &e) != 0) {
        fprintf(stderr, "cutune tune: %s\n", e.msg);
        return CUT_EXIT_FAIL;
    }
    if (kernel) {
        if (gemm_given || tpl || conv_str || obj != CUT_OBJ_TIME) {
            fprintf(stderr, "cutune tune: --kernel tunes a kernel spec alone: drop --gemm/--tpl/--conv/--objective\n");
            return CUT_EXIT_USAGE;
        }
        cut_cli_kernel_opts ko = {.spec = kernel, .sizes = sizes, .trials = trials, .test = test, .backend = backend,
                                  .compile_on = compile_on, .outdir = outdir, .cache_dir = cache_dir, .gpu = gpu, .batch = batch,
                                  .seed = (uint64_t)seed, .timeout = timeout, .budget = budget, .quiet = quiet,
                                  .strategy = strat,
                                  .final_k = final_k >= 0 ? final_k : strcmp(backend, "cuda") == 0 ? 3 : 0};
        return cut_cli_tune_kernel(&ko);
    }
    if (sizes) {
        fprintf(stderr, "cutune tune: --sizes is for --kernel specs\n");
        return CUT_EXIT_USAGE;
    }
    if (gemm_given || tpl) {
        if (cut_cli_gemm_types(dtype, layout, &gemm, &e) != 0) {
            fprintf(stderr, "cutune tune: %s\n", e.msg);
            return CUT_EXIT_USAGE;
        }
        cut_cli_gemm_opts go = {.g = gemm, .gemm_trials = gemm_trials, .trials = trials, .test = test,
                                .conv_str = conv_str, .tpl = tpl, .backend = backend, .compile_on = compile_on,
                                .outdir = outdir,
                                .cache_dir = cache_dir, .gpu = gpu, .batch = batch, .seed = (uint64_t)seed,
                                .timeout = timeout, .budget = budget, .quiet = quiet, .no_sample = no_sample,
                                .objective = obj, .strategy = strat, .final_k = final_k > 0 ? final_k : 0,
                                .emu_force = emu_force};
        return cut_cli_tune_gemm(&go);
    }
    const int trials_given = trials > 0;
    if (trials < 0)
        trials = test ? 100 : 1000;
    /* On a GPU a round compiles on all cores, so a bigger batch keeps them busy; the emulator prefers small ones. */
    if (batch == 0)
        batch = strcmp(backend, "cuda") == 0 ? 64 : 16;
    if (final_k < 0)
        final_k = strcmp(backend, "cuda") == 0 ? 3 : 0;

    /* Workloads. */
    cut_conv_list list;
    if (cut_cli_workloads(conv_str, list_name, &list, &e) != 0 || cut_cli_conv_types(dtype, layout, epilogue, &list, &e) != 0) {
        fprintf(stderr, "cutune tune: %s\n", e.msg);
        cut_conv_list_free(&list);
        return CUT_EXIT_USAGE;
    }
    if (case_sel > list.count) {
        fprintf(stderr, "cutune tune: case %d does not exist: list '%s' has %d cases\n", case_sel, list.name,
                list.count);
        cut_conv_list_free(&list);
        return CUT_EXIT_USAGE;
    }
    int sel[2], nsel = 0;
    int *all = NULL;
    const int *cases;
    if (case_sel) {
        sel[nsel++] = case_sel;
        cases = sel;
    } else if (test) {
        sel[nsel++] = 1;
        if (list.count > 1)
            sel[nsel++] = list.count;
        cases = sel;
    } else {
        all = cut_xmalloc(sizeof *all * (size_t)list.count);
        for (int i = 0; i < list.count; i++)
            all[i] = i + 1;
        nsel = list.count;
        cases = all;
    }

    /* Under emulation, a shape that would take minutes a trial is refused before anything runs. */
    for (int i = 0; !strcmp(backend, "emu") && i < nsel; i++) {
        char what[256];
        const cut_conv *c = &list.cases[cases[i] - 1];
        cut_conv_name(c, what + snprintf(what, sizeof what, "case %d (", cases[i]), sizeof what - 16);
        snprintf(what + strlen(what), sizeof what - strlen(what), ")");
        if (cut_cli_emu_cost_check(what, cut_conv_flops(c), trials, emu_force, &e) != 0) {
            fprintf(stderr, "cutune tune: %s\n", e.msg);
            free(all);
            cut_conv_list_free(&list);
            return CUT_EXIT_USAGE;
        }
    }

    /* Output folders: checked before any work, so a bad path fails at once. */
    char rec_dir[1024], res_dir[1024], cache[4200];
    if (cut_path_join(rec_dir, sizeof rec_dir, outdir, "tuningrecords", &e) != 0 ||
        cut_path_join(res_dir, sizeof res_dir, outdir, "tuningresults", &e) != 0 ||
        cut_check_writable_dir(rec_dir, &e) != 0 || cut_check_writable_dir(res_dir, &e) != 0) {
        fprintf(stderr, "cutune tune: %s\n", e.msg);
        free(all);
        cut_conv_list_free(&list);
        return CUT_EXIT_USAGE;
    }
    if (!cache_dir && cut_cli_cache_dir(NULL, cache, sizeof cache, &e) != 0) {
        fprintf(stderr, "cutune tune: the compile cache: %s\n", e.msg);
        free(all);
        cut_conv_list_free(&list);
        return CUT_EXIT_FAIL;
    }
    /* A custom shape is numbered in its folder: the number its files have there, or the next free one. */
    int custom_case = 0;
    if (conv_str) {
        const char *dirs[2] = {rec_dir, res_dir};
        custom_case = cut_conv_custom_case(dirs, 2, &list.cases[0]);
        char shape[160];
        cut_conv_name(&list.cases[0], shape, sizeof shape);
        fprintf(stderr, "cutune: --conv %s is case %d of %s\n", shape, custom_case, rec_dir);
    }

    /* Backend. */
    cut_timing tm;
    cut_timing_default(&tm);
    tm.timeout_s = timeout;
    /* During the search 10 ms of timed launches per candidate rank well; --final re-times the best. */
    tm.min_total_ms = 10;
    cut_tune_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.records_dir = rec_dir;
    cfg.trials = gradient && !trials_given ? trials * nsel : trials; /* gradient: the budget of all the cases */
    cfg.batch = batch;
    cfg.seed = (uint64_t)seed;
    cfg.progress = !quiet;
    cfg.case_total = nsel;
    cfg.max_seconds = budget;
    cfg.use_prior = prior;
    cfg.prior_dirs = prior_dirs;
    cfg.nprior_dirs = nprior_dirs;
    cfg.objective = obj;
    cfg.strategy = strat;
    cut_devlimits_sm90(&cfg.limits);
    cut_runner **runners = NULL;
    int nrunners = 0;
    int exit_code = cut_cli_tune_runners(backend, compile_on, gpu, cache_dir ? cache_dir : cache, &tm, &cfg, &runners,
                                         &nrunners);
    if (exit_code != CUT_EXIT_OK)
        goto done;

    if (obj != CUT_OBJ_TIME && energy_setup(&cfg, backend, gpu, energy_steps, &e) != 0) {
        fprintf(stderr, "cutune tune: %s\n", e.msg);
        exit_code = CUT_EXIT_FAIL;
        goto done;
    }

    conv_run cr = {.cfg = &cfg, .r = runners, .nr = nrunners, .list = &list, .cases = cases, .nsel = nsel,
                   .custom_case = custom_case, .final_k = final_k, .with_vendor = !strcmp(backend, "cuda"),
                   .outdir = outdir};
    if ((exit_code = gradient ? tune_gradient(&cr) : tune_sequential(&cr)) != CUT_EXIT_OK)
        goto done;
    if (!no_sample) {
        int nfiles = cut_sample_dir(rec_dir, res_dir, test ? 2 : 25, obj, &e);
        if (nfiles < 0) {
            fprintf(stderr, "cutune tune: sampling: %s\n", e.msg);
            exit_code = CUT_EXIT_FAIL;
        } else {
            printf("wrote %d file(s) of representatives to %s (%s%s%s)\n", nfiles, res_dir,
                   test ? "top-2" : "top-5 + p10/p25/p50/p75", obj ? ", ranked by " : "",
                   obj ? cut_objective_name(obj) : "");
        }
    }
done:
    cut_cli_runners_free(runners, nrunners);
    free(all);
    cut_conv_list_free(&list);
    return exit_code;
}

int cut_cmd_tune(int argc, char **argv)
{
    cut_cli_idle idle = {.cmd = "cutune tune"};
    return cut_cli_idle_end(&idle, tune_cmd(argc, argv, &idle));
}
