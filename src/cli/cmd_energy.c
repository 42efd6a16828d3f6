/* cutune energy — seed 001 phase 3 (+ phase 4's CSVs): every representative in tuningresults/, at every power cap,
 * measured for time and energy with NVML's counter (cutune/energy.h), into kernel_outputs/:
 *
 *   kernel_outputs/powercaps.csv                       powercap index -> limit (W) of the last run at each index
 *   kernel_outputs/caseN/powercapP/output_kernelK.txt  seed 001's lines + details
 *   kernel_outputs/caseN/powercapP/results.csv         id,perf(GFLOP/s),energy(mJ),EDP(ms*mJ)
 *   kernel_outputs/caseN/powercapP/energy.jsonl        one object per kernel: per-lround numbers, clocks, ...
 *   kernel_outputs/caseN/all.csv                       id + 3 columns per cap, from every powercapP/results.csv
 * A run updates the rows of the kernels it measures and keeps the others' (cut_energy_folder_record), so that the
 * run scripts of cutune export (one kernel, one cap: --power-cap-index P) add up to seed 001's files.
 * A tuned GEMM's representatives (tuningresults/gemm_*.json) are measured the same way into
 * kernel_outputs/<gemm name>/ (the GEMM's workload prepared by the runner instead of a conv case's).
 *
 * The cap changes only with --allow-power-cap, only on the measured GPU (by UUID), and is restored on every way
 * out (cutune/powercap.h). Kernels are checked against the reference before and after they are measured. */
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/idle_cli.h"
#include "cutune/emu.h"
#include "cutune/energy.h"
#include "cutune/export.h"
#include "cutune/gpu.h"
#include "cutune/measure.h"
#include "cutune/powercap.h"
#include "cutune/task.h"
#include "cutune/util.h"
#include "gpu/nvml.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDLE_STEPS 3 /* counter steps of the idle-power reading taken at each cap */

static const char energy_usage[] =
    "usage: cutune energy [options]\n"
    "  --outdir DIR          where tuningresults/ is and kernel_outputs/ goes (default .)\n"
    "  --results DIR         the representatives (default DIR/tuningresults)\n"
    "  --power-caps SPEC     current (default; nothing is changed), all (the GPU model's 5 caps), or W1,W2,..\n"
    "                        cap I of the list goes to powercapI/ (current: powercap1/)\n"
    "  --power-cap-index P   only the P-th cap of --power-caps (default all: seed 001's powercapP, 1 = lowest),\n"
    "                        into powercapP/; other kernels' rows there stay (the run scripts of cutune export)\n"
    "  --allow-power-cap     allow changing the power limit (root); restored on exit, error, signal or crash.\n"
    "                        Without it a cap that differs from the limit in force is refused, never measured at\n"
    "                        the wrong limit: set it yourself first (nvidia-smi -pl W), or use --power-caps current\n"
    "  --detect              print the GPU, its power-limit range and its 5 caps, then exit\n"
    "  --test                1 lround instead of 3 (seed 001's test mode)\n"
    "  --lrounds N           windows per kernel and cap (default 3)\n"
    "  --min-steps N         energy-counter steps each window spans (default 10)\n"
    "  --warmup S            seconds of warm-up per kernel (default 0.3)\n"
    "  --case N, --kernel K  measure only this conv case / kernel id\n"
    "  --gemm G              measure only the G-th tuned GEMM (tuningresults/gemm_*.json by name, as export numbers)\n"
    "  --gpu I               GPU index (default 0)\n"
    "  --backend B           cuda (default) or emu (host emulation; energy from whatever NVML is loaded)\n"
    "  --nvml-uuid UUID      with --backend emu: the NVML device to read (default NVML's first)\n"
    "  --optimized OPT_DIR   instead: each kernel cutune optimize tuned in OPT_DIR, its baseline (kernel 1) and best\n"
    "                        variant (kernel 2) -> kernel_outputs/opt_NAME/ (--opt-kernel NAME: only that one)\n"
    CUT_CLI_IDLE_HELP;

typedef struct energy_opts {
    const char *outdir, *results, *caps_arg, *backend, *nvml_uuid;
    const char *optimized, *opt_kernel; /* --optimized OPT_DIR [--opt-kernel NAME] */
    int allow, detect, case_only, kernel_only, gemm_only, gpu, idle_others;
    int cap_index; /* --power-cap-index P, 0: every cap of --power-caps */
    cut_energy_plan plan;
} energy_opts;

static int parse_args(int argc, char **argv, energy_opts *o, int *help, cut_err *e)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        double warm = 0;
        const char *ws = NULL;
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            *help = 1;
        else if (!strcmp(a, "--outdir"))
            rc = cut_arg_str(argc, argv, &i, &o->outdir, e);
        else if (!strcmp(a, "--results"))
            rc = cut_arg_str(argc, argv, &i, &o->results, e);
        else if (!strcmp(a, "--power-caps"))
            rc = cut_arg_str(argc, argv, &i, &o->caps_arg, e);
        else if (!strcmp(a, "--allow-power-cap"))
            o->allow = 1;
        else if (!strcmp(a, "--idle-other-gpus"))
            o->idle_others = 1;
        else if (!strcmp(a, "--detect"))
            o->detect = 1;
        else if (!strcmp(a, "--test"))
            o->plan.lrounds = 1;
        else if (!strcmp(a, "--lrounds"))
            rc = cut_arg_int(argc, argv, &i, 1, CUT_ENERGY_MAX_LROUNDS, &o->plan.lrounds, e);
        else if (!strcmp(a, "--min-steps"))
            rc = cut_arg_int(argc, argv, &i, 1, 1000, &o->plan.min_steps, e);
        else if (!strcmp(a, "--warmup")) {
            rc = cut_arg_str(argc, argv, &i, &ws, e);
            char *end = NULL;
            if (rc == 0 && (warm = strtod(ws, &end), !*ws || *end || !(warm >= 0 && warm <= 60)))
                rc = cut_err_set(e, "--warmup wants seconds in 0..60, got '%s'", ws);
            o->plan.warmup_s = warm;
        } else if (!strcmp(a, "--case"))
            rc = cut_arg_int(argc, argv, &i, 1, 100000, &o->case_only, e);
        else if (!strcmp(a, "--gemm"))
            rc = cut_arg_int(argc, argv, &i, 1, 100000, &o->gemm_only, e);
        else if (!strcmp(a, "--power-cap-index"))
            rc = cut_arg_int(argc, argv, &i, 1, CUT_POWERCAP_MAX_LIST, &o->cap_index, e);
        else if (!strcmp(a, "--kernel"))
            rc = cut_arg_int(argc, argv, &i, 1, 100000, &o->kernel_only, e);
        else if (!strcmp(a, "--gpu"))
            rc = cut_arg_int(argc, argv, &i, 0, 1023, &o->gpu, e);
        else if (!strcmp(a, "--backend"))
            rc = cut_arg_str(argc, argv, &i, &o->backend, e);
        else if (!strcmp(a, "--nvml-uuid"))
            rc = cut_arg_str(argc, argv, &i, &o->nvml_uuid, e);
        else if (!strcmp(a, "--optimized"))
            rc = cut_arg_str(argc, argv, &i, &o->optimized, e);
        else if (!strcmp(a, "--opt-kernel"))
            rc = cut_arg_str(argc, argv, &i, &o->opt_kernel, e);
        else
            rc = cut_err_set(e, "unknown option '%s' (see cutune help energy)", a);
        if (rc != 0)
            return -1;
    }
    if (o->opt_kernel && !o->optimized)
        return cut_err_set(e, "--opt-kernel NAME selects a kernel of --optimized OPT_DIR");
    if (o->optimized && (o->results || o->case_only || o->kernel_only || o->gemm_only))
        return cut_err_set(e, "--optimized measures an optimizer's kernels: drop --results, --case, --gemm and "
                              "--kernel");
    if (o->case_only && o->gemm_only)
        return cut_err_set(e, "--case N selects a conv case and --gemm G a GEMM: give one of them");
    if (o->cap_index && o->caps_arg && !strcmp(o->caps_arg, "current"))
        return cut_err_set(e, "--power-cap-index picks one cap of --power-caps all (the default) or of a list of "
                              "watts; --power-caps current measures at the limit in force, into powercap1");
    if (!o->caps_arg)
        o->caps_arg = o->cap_index ? "all" : "current";
    if (strcmp(o->backend, "cuda") && strcmp(o->backend, "emu"))
        return cut_err_set(e, "unknown backend '%s' (cuda or emu)", o->backend);
    return 0;
}

/* ---- the GPU to measure ---- */

/* The NVML UUID of the measured GPU: the CUDA device's (cuda), or --nvml-uuid / NVML's first device (emu). */
static int measured_uuid(const energy_opts *o, char *uuid, size_t n, cut_err *e)
{
    return cut_cli_energy_uuid(o->backend, o->gpu, o->nvml_uuid, uuid, n, e);
}

static int detect(const char *uuid, cut_err *e)
{
    cut_powercap_device d;
    if (cut_powercap_query(uuid, &d, e) != 0)
        return -1;
    printf("GPU: %s (%s)\n", d.name, d.uuid);
    printf("power limit: %.1f W now, %.1f..%.1f W allowed, %.1f W default\n", d.current_mw / 1e3, d.min_mw / 1e3,
           d.max_mw / 1e3, d.default_mw / 1e3);
    int caps[CUT_POWERCAP_PER_MODEL];
    cut_err ce = {{0}};
    if (cut_powercap_caps_for(d.name, d.min_mw, d.max_mw, caps, &ce) != 0) {
        printf("caps (all): none: %s\n", ce.msg);
    } else {
        printf("caps (all):");
        for (int i = 0; i < CUT_POWERCAP_PER_MODEL; i++)
            printf(" %d W", caps[i]);
        printf("\n");
    }
    nvmlDevice_t dev;
    unsigned long long mj = 0;
    int counter = cut_nvml_device_by_uuid(uuid, &dev) == NVML_SUCCESS && cut_nvml_energy_mj(dev, &mj) == NVML_SUCCESS;
    printf("energy counter: %s\n", counter ? "readable" : "not readable");
    return 0;
}

/* ---- files ---- */

static int write_buf(const char *path, const cut_buf *b, cut_err *e)
{
    return cut_write_file_atomic(path, b->data ? b->data : "", b->len, e);
}

/* powercaps.csv: this run's caps at their folder numbers (first_index + i), the other rows there kept. */
static int write_caps_csv(const char *odir, const cut_powercap_list *caps, int first_index, cut_err *e)
{
    char path[4200];
    int index[CUT_POWERCAP_MAX_LIST];
    for (int i = 0; i < caps->n; i++)
        index[i] = first_index + i;
    snprintf(path, sizeof path, "%s/powercaps.csv", odir);
    return cut_energy_caps_record(path, index, caps->mw, caps->n, e);
}

/* One kernel to measure: its id in its results file and its source (owned by the loaded export set). */
typedef struct run_kernel {
    int kernel_id;
    const cut_kernel_src *ks;
    cut_call *call;            /* an optimized kernel's call (its bin set once compiled), owned; NULL: conv/GEMM */
} run_kernel;

/* One workload's state while its caps are measured: a conv case or a GEMM (every op's representatives are measured
 * the same way; only the runner's prepare differs). */
typedef struct case_run {
    int case_idx;               /* conv: N of caseN; GEMM: G, its results file's index */
    char label[160];            /* folder under kernel_outputs/: "caseN" or the GEMM's name */
    int is_gemm;
    cut_conv conv;
    cut_gemm gemm;
    run_kernel *k;              /* this workload's kernels, owned */
    cut_task *task;             /* an optimized kernel's spec as a task: it prepares the runner (owned), or NULL */
    cut_kernel_src *srcs;       /* an optimized kernel's sources (baseline, best), owned */
    int n;
    cut_compiled *bins;         /* [n], cuda only */
    int failures;
} case_run;

/* ---- measuring ---- */

typedef struct energy_ctx {
    energy_opts *o;
    cut_runner *runner;
    char odir[4096]; /* kernel_outputs */
    int first_index; /* the folder number of the run's first cap: powercap<first_index + p> */
    double limit_w;  /* cap in force */
    double idle_w;
} energy_ctx;

/* One kernel at the cap in force: output_kernelK.txt, and its line of energy.jsonl and row of results.csv (the
 * other kernels' stay). A kernel that fails is written down (output file with the reason, no row) and counted; a
 * meter that fails stops the run (-1). */
static int measure_kernel(energy_ctx *x, case_run *cr, int i, const char *cdir, cut_err *e)
{
    const run_kernel *k = &cr->k[i];
    cut_candidate cand = {.ks = k->ks, .bin = cr->bins ? &cr->bins[i] : NULL};
    cut_result res;
    cut_energy_result er;
    memset(&er, 0, sizeof er);
    if (k->call)
        k->call->bin = cand.bin;
    if ((k->call ? cut_runner_energy_call(x->runner, k->call, &x->o->plan, &res, &er, e)
                 : cut_runner_energy(x->runner, &cand, &x->o->plan, &res, &er, e)) != 0)
        return cut_err_wrap(e, "%s kernel %d", cr->label, k->kernel_id);
    char path[4400];
    cut_buf b;
    cut_buf_init(&b);
    int rc = 0, dropped = 0;
    snprintf(path, sizeof path, "%s/output_kernel%d.txt", cdir, k->kernel_id);
    if (res.status != CUT_ST_OK) {
        cr->failures++;
        cut_buf_printf(&b, "Error: %s: %s\n", cut_status_name(res.status), res.error);
        fprintf(stderr, "cutune energy: %s kernel %d: %s: %s\n", cr->label, k->kernel_id,
                cut_status_name(res.status), res.error);
        rc = write_buf(path, &b, e);
        if (rc == 0)
            rc = cut_energy_folder_record(cdir, k->kernel_id, NULL, NULL, x->limit_w, &dropped, e);
    } else {
        cut_energy_output_text(&b, &er, x->limit_w, x->idle_w);
        rc = write_buf(path, &b, e);
        b.len = 0;
        cut_energy_json_line(&b, cr->case_idx, k->kernel_id, x->limit_w, x->idle_w, &er);
        cut_buf_append(&b, "", 1); /* NUL-terminated for the folder's merge */
        if (rc == 0)
            rc = cut_energy_folder_record(cdir, k->kernel_id, &er, b.data, x->limit_w, &dropped, e);
        printf("%s kernel %2d @ %.0f W: %9.4f ms %10.4f mJ %8.1f W %9.1f GFLOP/s  CV %.2f%%  %.2f s\n",
               cr->label, k->kernel_id, x->limit_w, er.time_ms, er.energy_mj, er.power_w, er.gflops,
               100 * er.cv_energy, er.seconds);
        fflush(stdout);
    }
    if (dropped)
        fprintf(stderr, "cutune energy: %s: dropped %d kernel(s) measured there at another power limit than %.1f W\n",
                cdir, dropped, x->limit_w);
    cut_buf_free(&b);
    return rc;
}

/* One case at the cap in force (the run's p-th): its kernels into its powercap folder, then its all.csv. */
static int measure_case_at_cap(energy_ctx *x, case_run *cr, int p, cut_err *e)
{
    int prc = cr->task ? cr->task->prepare(cr->task, x->runner, 7, e)
              : cr->is_gemm ? cut_runner_prepare_gemm(x->runner, &cr->gemm, 7, e)
                            : cut_runner_prepare_conv(x->runner, &cr->conv, 7, e);
    if (prc != 0)
        return cut_err_wrap(e, "%s", cr->label);
    char cdir[4200];
    snprintf(cdir, sizeof cdir, "%s/%s/powercap%d", x->odir, cr->label, x->first_index + p);
    if (cut_mkdirs(cdir, e) != 0)
        return -1;
    for (int i = 0; i < cr->n; i++)
        if (measure_kernel(x, cr, i, cdir, e) != 0)
            return -1;
    snprintf(cdir, sizeof cdir, "%s/%s", x->odir, cr->label);
    return cut_energy_all_rebuild(cdir, e);
}

/* The NVRTC options of the measured GPU (cuda: use_nvrtc set), for the representatives and an optimized kernel's
 * reference run; under emulation the defaults, use_nvrtc 0. 0, or -1. */
static int gpu_copts(const energy_opts *o, cut_tune_cfg *cfg, cut_err *e)
{
    memset(cfg, 0, sizeof *cfg);
    cut_devlimits_sm90(&cfg->limits);
    cut_compile_opts_default(&cfg->copts);
    if (strcmp(o->backend, "cuda") != 0)
        return 0;
    cut_gpu_info info;
    if (cut_gpu_query(o->gpu, &info, e) != 0)
        return -1;
    cfg->use_nvrtc = 1;
    cfg->copts.sm_major = info.sm_major;
    cfg->copts.sm_minor = info.sm_minor;
    return 0;
}

static int compile_case(const energy_opts *o, case_run *cr, cut_err *e)
{
    cut_tune_cfg cfg;
    if (gpu_copts(o, &cfg, e) != 0)
        return -1;
    if (!cfg.use_nvrtc)
        return 0;
    cr->bins = cut_xcalloc((size_t)cr->n, sizeof *cr->bins);
    for (int i = 0; i < cr->n; i++) {
        cut_compile_opts ko; /* sm_90a for a kernel that needs it (wgmma) */
        cut_compile_opts_for_kernel(&cfg.copts, cr->k[i].ks->arch_a, &ko);
        const char *src = cr->k[i].ks->src;
        if (cut_compile_batch(&src, 1, &ko, &cr->bins[i], e) != 0)
            return cut_err_wrap(e, "%s kernel %d", cr->label, cr->k[i].kernel_id);
    }
    return 0;
}

static void case_run_free(case_run *cr)
{
    for (int i = 0; cr->bins && i < cr->n; i++)
        cut_compiled_free(&cr->bins[i]);
    free(cr->bins);
    for (int i = 0; cr->k && i < cr->n; i++)
        free(cr->k[i].call);
    for (int i = 0; cr->srcs && i < cr->n; i++)
        cut_kernel_src_free(&cr->srcs[i]);
    free(cr->srcs);
    cut_task_free(cr->task);
    free(cr->k);
    memset(cr, 0, sizeof *cr);
}

/* Adds kernel (id, ks) to the run of the current workload, starting a new run when is_new. */
static void add_kernel(case_run *runs, int *nruns, int is_new, int id, const cut_kernel_src *ks)
{
    if (is_new)
        (*nruns)++;
    case_run *r = &runs[*nruns - 1];
    r->k = cut_xrealloc(r->k, (size_t)(r->n + 1) * sizeof *r->k);
    r->k[r->n++] = (run_kernel){.kernel_id = id, .ks = ks};
}

/* The kernels of both sets selected by --case/--kernel (--case selects a conv case only), grouped by workload into
 * runs (the sets keep ownership of the sources). Returns the number of runs, or -1. */
static int group_cases(const energy_opts *o, const cut_export_set *set, const cut_export_gemm_set *gset,
                       case_run **runs_out, cut_err *e)
{
    case_run *runs = cut_xcalloc((size_t)(set->n + gset->n + 1), sizeof *runs);
    int nruns = 0, last = -1;
    for (int i = 0; !o->gemm_only && i < set->n; i++) {
        const cut_export_kernel *k = &set->k[i];
        if ((o->case_only && k->case_idx != o->case_only) || (o->kernel_only && k->kernel_id != o->kernel_only))
            continue;
        int is_new = k->case_idx != last;
        add_kernel(runs, &nruns, is_new, k->kernel_id, &k->ks);
        if (is_new) {
            runs[nruns - 1].case_idx = k->case_idx;
            runs[nruns - 1].conv = k->conv;
            snprintf(runs[nruns - 1].label, sizeof runs[nruns - 1].label, "case%d", k->case_idx);
        }
        last = k->case_idx;
    }
    last = -1;
    for (int i = 0; !o->case_only && i < gset->n; i++) {
        const cut_export_gemm_kernel *k = &gset->k[i];
        if ((o->gemm_only && k->gemm_id != o->gemm_only) || (o->kernel_only && k->kernel_id != o->kernel_only))
            continue;
        int is_new = k->gemm_id != last;
        add_kernel(runs, &nruns, is_new, k->kernel_id, &k->ks);
        if (is_new) {
            case_run *r = &runs[nruns - 1];
            r->case_idx = k->gemm_id;
            r->is_gemm = 1;
            r->gemm = k->gemm;
            cut_gemm_name(&k->gemm, r->label, sizeof r->label);
        }
        last = k->gemm_id;
    }
    *runs_out = runs;
    if (nruns == 0)
        return cut_err_set(e, "no kernel in the results matches --%s %d --kernel %d", o->gemm_only ? "gemm" : "case",
                           o->gemm_only ? o->gemm_only : o->case_only, o->kernel_only);
    return nruns;
}

/* One run per optimized kernel of oset: kernel 1 its baseline, kernel 2 its best variant (their kernel.cu as the
 * optimizer wrote them, with the launches it measured), under kernel_outputs/opt_<name>/. Returns the runs added. */
static int group_optimized(const energy_opts *o, const cut_export_opt_set *oset, case_run *runs, int nruns,
                           cut_err *e)
{
    cut_tune_cfg cfg;
    if (gpu_copts(o, &cfg, e) != 0)
        return -1;
    for (int i = 0; i < oset->n; i++) {
        const cut_export_opt *x = &oset->k[i];
        case_run *r = &runs[nruns++];
        r->case_idx = i + 1;
        snprintf(r->label, sizeof r->label, "opt_%s", x->name);
        r->task = cut_task_kernel_new(&x->spec, &cfg);
        r->srcs = cut_xcalloc(2, sizeof *r->srcs);
        r->k = cut_xcalloc(2, sizeof *r->k);
        for (int role = CUT_XO_BASELINE; role <= CUT_XO_BEST; role++) {
            const cut_xo_state *st = &x->st[role];
            char path[4400];
            if (role == CUT_XO_BASELINE || !strcmp(st->id, "baseline"))
                snprintf(path, sizeof path, "%s/baseline/kernel.cu", x->kdir);
            else
                snprintf(path, sizeof path, "%s/variants/%s/kernel.cu", x->kdir, st->id);
            cut_kernel_src *ks = &r->srcs[r->n];
            size_t len = 0;
            if (cut_read_file(path, &ks->src, &len, e) != 0)
                return cut_err_wrap(e, "%s", r->label);
            snprintf(ks->entry, sizeof ks->entry, "%s", x->spec.entry);
            cut_call *call = cut_xmalloc(sizeof *call);
            *call = st->call;
            call->src = ks->src;
            call->bin = NULL;
            r->k[r->n++] = (run_kernel){.kernel_id = role == CUT_XO_BASELINE ? 1 : 2, .ks = ks, .call = call};
        }
    }
    return nruns;
}

/* Cap by cap (one change each), every case's kernels (each case's all.csv rebuilt after each cap). Returns kernels
 * measured, or -1. */
static int run_all(energy_ctx *x, const cut_export_set *set, const cut_export_gemm_set *gset,
                   const cut_export_opt_set *oset, cut_powercap_session *s, const cut_powercap_list *caps, int *failures,
                   cut_err *e)
{
    case_run *runs = NULL;
    int nruns = oset->n ? (runs = cut_xcalloc((size_t)oset->n, sizeof *runs), group_optimized(x->o, oset, runs, 0, e))
                        : group_cases(x->o, set, gset, &runs, e), rc = nruns < 0 ? -1 : 0, done = 0;
    for (int c = 0; rc == 0 && c < nruns; c++)
        rc = compile_case(x->o, &runs[c], e);
    for (int p = 0; rc == 0 && p < caps->n; p++) {
        if ((rc = cut_powercap_set(s, caps->mw[p], e)) != 0)
            break;
        x->limit_w = caps->mw[p] / 1e3;
        x->idle_w = -1;
        cut_err ie = {{0}};
        if (cut_energy_idle_w(x->o->plan.uuid, IDLE_STEPS, x->o->plan.max_wait_s, &x->idle_w, &ie) != 0)
            fprintf(stderr, "cutune energy: idle power not measured: %s\n", ie.msg);
        for (int c = 0; rc == 0 && c < nruns; c++)
            rc = measure_case_at_cap(x, &runs[c], p, e);
    }
    for (int c = 0; c < CUT_MAX(nruns, 0); c++) {
        done += runs[c].n;
        *failures += runs[c].failures;
        case_run_free(&runs[c]);
    }
    for (int c = 0; nruns < 0 && c < oset->n; c++)
        case_run_free(&runs[c]); /* a run group_optimized left half built */
    free(runs);
    return rc == 0 ? done : -1;
}

static cut_runner *make_runner(const energy_opts *o, cut_err *e)
{
    cut_timing tm;
    cut_timing_default(&tm);
    char self[PATH_MAX];
    if (!strcmp(o->backend, "cuda"))
        return cut_runner_gpu_new(o->gpu, cut_cli_worker_exe(self, sizeof self), &tm, e);
    char dir[4200];
    if (cut_cli_cache_dir("emu", dir, sizeof dir, e) != 0)
        return NULL;
    return cut_runner_emu_new(dir, &tm, e);
}

/* Everything after the arguments; the cap session is always ended (restoring the limit) before returning. With
 * --idle-other-gpus, idle is begun just before the first measurement; the caller ends it. */
static int energy_main(energy_opts *o, cut_cli_idle *idle, cut_err *e)
{
    char results_buf[4096], note[512] = "";
    if (!o->results) {
        if (cut_path_join(results_buf, sizeof results_buf, o->outdir, "tuningresults", e) != 0)
            return CUT_EXIT_USAGE;
        o->results = results_buf;
    }
    if (cut_check_writable_dir(o->outdir, e) != 0)
        return CUT_EXIT_USAGE;
    if (measured_uuid(o, o->plan.uuid, sizeof o->plan.uuid, e) != 0)
        return CUT_EXIT_FAIL;
    char state[4096];
    if (cut_powercap_state_dir(state, sizeof state, e) != 0 || cut_powercap_recover(state, note, sizeof note, e) < 0)
        return CUT_EXIT_FAIL;
    if (note[0])
        fprintf(stderr, "cutune energy: %s\n", note);
    if (o->detect)
        return detect(o->plan.uuid, e) == 0 ? CUT_EXIT_OK : CUT_EXIT_FAIL;

    cut_powercap_spec spec;
    cut_powercap_device dev;
    cut_powercap_list caps;
    if (cut_powercap_parse(o->caps_arg, &spec, e) != 0)
        return CUT_EXIT_USAGE;
    if (cut_powercap_query(o->plan.uuid, &dev, e) != 0)
        return CUT_EXIT_FAIL;
    if (cut_powercap_resolve(&spec, &dev, &caps, e) != 0)
        return CUT_EXIT_USAGE;
    int first_index = 1; /* powercap<first_index + i> holds cap i of the run */
    if (o->cap_index) {  /* the P-th cap only, into powercapP */
        if (o->cap_index > caps.n)
            return cut_err_set(e, "--power-cap-index %d: --power-caps %s has %d cap(s)", o->cap_index, o->caps_arg,
                               caps.n),
                   CUT_EXIT_USAGE;
        caps.mw[0] = caps.mw[o->cap_index - 1];
        caps.n = 1;
        first_index = o->cap_index;
    }
    for (int i = 0; !o->allow && i < caps.n; i++)
        if (caps.mw[i] != dev.current_mw)
            return cut_err_set(e,
                               "power cap %d of --power-caps %s (%.1f W) differs from %s's power limit in force "
                               "(%.1f W), and nothing was measured: add --allow-power-cap to set it (needs root; "
                               "restored after), set it yourself first (nvidia-smi -pl %g), or measure at "
                               "--power-caps current",
                               first_index + i, o->caps_arg, caps.mw[i] / 1e3, dev.name, dev.current_mw / 1e3,
                               caps.mw[i] / 1e3),
                   CUT_EXIT_USAGE;

    cut_export_set set;
    cut_export_gemm_set gset;
    cut_export_opt_set oset;
    memset(&set, 0, sizeof set);
    memset(&gset, 0, sizeof gset);
    memset(&oset, 0, sizeof oset);
    int lrc = 0;
    if (o->optimized)
        lrc = cut_export_opt_load(o->optimized, o->opt_kernel, &oset, e);
    else if ((lrc = cut_export_load_conv(o->results, 1, &set, e)) == 0)
        lrc = cut_export_gemm_load(o->results, &gset, e);
    if (lrc == 0 && !o->optimized && set.n == 0 && gset.n == 0)
        lrc = cut_err_set(e, "the tuning results folder '%s' has no measured kernels (conv caseN_*.json or "
                             "gemm_*.json); run cutune tune or cutune sample first", o->results);
    if (lrc != 0) {
        cut_export_set_free(&set);
        cut_export_gemm_set_free(&gset);
        cut_export_opt_set_free(&oset);
        return CUT_EXIT_USAGE;
    }
    energy_ctx x = {.o = o, .first_index = first_index};
    snprintf(x.odir, sizeof x.odir, "%s/kernel_outputs", o->outdir);
    int code = CUT_EXIT_FAIL, failures = 0;
    cut_powercap_session *s = NULL;
    if ((!cut_export_dir_marked(x.odir) && cut_export_reset_dir(x.odir, e) != 0) || write_caps_csv(x.odir, &caps, first_index, e) != 0)
        goto out;
    if (!(x.runner = make_runner(o, e)))
        goto out;
    if (o->idle_others && cut_cli_idle_begin(idle, o->backend, o->gpu, o->nvml_uuid, e) != 0)
        goto out;
    if (cut_powercap_begin(o->plan.uuid, state, o->allow, &s, e) != 0)
        goto out;
    fprintf(stderr, "cutune energy: %s (%s), %d cap(s), %d lround(s) of >= %d counter steps per kernel\n", dev.name,
            o->backend, caps.n, o->plan.lrounds, o->plan.min_steps);
    int n = run_all(&x, &set, &gset, &oset, s, &caps, &failures, e);
    cut_err end_err = {{0}};
    int restored = cut_powercap_end(s, &end_err);
    s = NULL;
    if (n < 0)
        goto out;
    if (restored != 0) {
        *e = end_err;
        goto out;
    }
    printf("measured %d kernel(s) at %d cap(s) into %s; %d failed\n", n, caps.n, x.odir, failures);
    code = failures ? CUT_EXIT_FAIL : CUT_EXIT_OK;
    if (failures)
        cut_err_set(e, "%d kernel measurement(s) failed (see the output_kernelK.txt files)", failures);
out:
    if (s) {
        cut_err ignore;
        cut_powercap_end(s, &ignore);
    }
    if (cut_export_dir_marked(x.odir)) { /* what this run wrote is cutune's: clean removes it, and only it */
        cut_err ignore;
        cut_export_seal_dir(x.odir, &ignore);
    }
    cut_runner_free(x.runner);
    cut_export_set_free(&set);
    cut_export_gemm_set_free(&gset);
    cut_export_opt_set_free(&oset);
    return code;
}

int cut_cmd_energy(int argc, char **argv)
{
    energy_opts o = {.outdir = ".", .backend = "cuda"};
    cut_energy_plan_default(&o.plan);
    cut_err e = {{0}};
    int help = 0;
    if (parse_args(argc, argv, &o, &help, &e) != 0) {
        fprintf(stderr, "cutune energy: %s\n", e.msg);
        return CUT_EXIT_USAGE;
    }
    if (help) {
        fputs(energy_usage, stdout);
        return CUT_EXIT_OK;
    }
    cut_cli_idle idle = {.cmd = "cutune energy"};
    int code = energy_main(&o, &idle, &e);
    if (code != CUT_EXIT_OK)
        fprintf(stderr, "cutune energy: %s\n", e.msg);
    return cut_cli_idle_end(&idle, code);
}
