/* cutune optimize — the MCGS kernel optimizer of seed 002 over kernel specs (kernels/NAME.json). */
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/mpi_cli.h"
#include "cutune/emu.h"
#include "cutune/gpu.h"
#include "cutune/llm_gen.h"
#include "cutune/measure.h"
#include "cutune/optimize.h"
#include "cutune/util.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SPECS 64
#define MAX_SIZES 16

static const char usage_text[] =
    "usage: cutune optimize --input FILE|DIR [options]\n"
    "  --input P            a kernel spec (kernels/NAME.json) or a folder of them\n"
    "  --outdir D           results: D/kernels/_NAME/..., D/global_tactic_graph.json, D/summary.json (out)\n"
    "  --gpus 0,1           one measurement worker per GPU, variants measured in parallel (0)\n"
    "  --budget-builds N    variants built per kernel (50)\n"
    "  --min-pred-gain G    prune moves whose predicted gain is below G (0.02)\n"
    "  --ncu-every N        profile the incumbent with Nsight Compute every N builds (and the baseline first); its\n"
    "                       metrics weight the moves the search tries and go into the LLM's prompt (0: off). ncu is\n"
    "                       $CUTUNE_NCU, else in $CUDA_HOME/bin, /usr/local/cuda/bin or PATH; clocks are left alone\n"
    "  --ncu-timeout S      one profile, the profiled run included (300)\n"
    "  --llm-model M        the model proposing rewrites beside the rules (gpt-5-mini), over an OpenAI-compatible\n"
    "                       API at $OPENAI_BASE_URL (https://api.openai.com/v1) with $OPENAI_API_KEY; without a key\n"
    "                       the run says so and uses the rules alone\n"
    "  --llm-api A          chat (Chat Completions, the default) or responses (the Responses API)\n"
    "  --llm-budget N       at most N requests per run, retries included (200)\n"
    "  --llm-token-budget N at most N tokens per run, prompt and completion as the server reports them (0: no limit)\n"
    "  --llm-per-expansion N  LLM proposals asked per expansion (1)\n"
    "  --llm-timeout S      per request (120)\n"
    "  --no-llm             rule-based moves only\n"
    "  --resume             continue D/kernels/_NAME/search_state.json without re-running the baseline\n"
    "  --seed S             seed of the root's Dirichlet noise (1)\n"
    "  --backend B          cuda, emu (host emulation: CPU times) or auto (cuda when a GPU is found) (auto)\n"
    "  --sizes N=V,...      override spec sizes (e.g. a small problem for emulation)\n"
    "  --timeout S          per variant: a hung kernel is killed after S seconds (10; a Triton variant compiles in\n"
    "                       its run on a GPU, so it gets 60 s more)\n"
    "  --python P           the Python that runs Triton specs' worker (triton, numpy; torch on a GPU; under\n"
    "                       --backend emu Triton's interpreter) ($CUTUNE_PYTHON, else python3)\n"
    "  --triton-compile-jobs N  on a GPU, Triton variants are compiled ahead by N compile-only workers on the host's\n"
    "                       other cores, shared by the GPUs (min(cores - 1, 8); 0: each compiles in its measurement)\n"
    "  --quiet              no per-variant lines\n"
    "  --worker FILE        seed 002's worker: run the variant of FILE (variants/<id>/control.json or\n"
    "                       baseline/control.json of a search folder) on the first of --gpus: compiled, checked\n"
    "                       against the search's references and timed as the search does, into runner_result.json\n"
    "  --profile-run        with --worker: launch the variant once and check nothing (what ncu wraps)\n"
    "Environment: COMPILE_CACHE_DIR (default $XDG_CACHE_HOME/cutune, else ~/.cache/cutune; a folder another user\n"
    "can write is refused; Triton's cache is its triton/); CUTUNE_TRITON_WORKER (the Triton worker script, else\n"
    "triton_worker.py beside cutune or in <prefix>/libexec/cutune); OPENAI_API_KEY, OPENAI_BASE_URL. The LLM's replies are cached in D/llm_cache/ (a rerun\n"
    "or --resume asks nothing twice) and every request is a line of D/llm_events.jsonl; the key is written nowhere.\n";

typedef struct opt_cli {
    const char *input, *backend, *sizes;
    const char *llm_model, *llm_api;
    const char *worker;   /* --worker FILE: run one variant */
    int profile_run;
    int no_llm, llm_budget, llm_per_expansion;
    long llm_token_budget;
    double llm_timeout;
    cut_opt_opts o;
    int gpus[16], ngpus;
    double timeout_s;
    const char *python;  /* --python: the Triton worker's interpreter */
    int compile_jobs;    /* --triton-compile-jobs: the Triton compile pools' workers, over every GPU (-1: default) */
    cut_timing timing;   /* the runners' timing policy (make_runners) */
    int on_gpu;          /* the runners are GPU workers (else the host emulator: Triton's interpreter) */
} opt_cli;

static int parse_gpus(const char *s, opt_cli *c, cut_err *e)
{
    c->ngpus = 0;
    for (const char *p = s; *p;) {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 255 || (*end && *end != ','))
            return cut_err_set(e, "--gpus: '%s' is not a list of GPU indices like 0,1", s);
        if (c->ngpus == (int)CUT_ARRAY_LEN(c->gpus))
            return cut_err_set(e, "--gpus: more than %d GPUs", (int)CUT_ARRAY_LEN(c->gpus));
        for (int i = 0; i < c->ngpus; i++)
            if (c->gpus[i] == v)
                return cut_err_set(e, "--gpus: GPU %ld listed twice", v);
        c->gpus[c->ngpus++] = (int)v;
        p = *end ? end + 1 : end;
    }
    return c->ngpus ? 0 : cut_err_set(e, "--gpus: empty list");
}

static int parse_double(const char *opt, const char *s, double lo, double hi, double *out, cut_err *e)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v < lo || v > hi)
        return cut_err_set(e, "%s: '%s' is not a number in [%g, %g]", opt, s, lo, hi);
    *out = v;
    return 0;
}

static int parse_cli(int argc, char **argv, opt_cli *c, cut_err *e)
{
    memset(c, 0, sizeof *c);
    cut_opt_opts_default(&c->o);
    c->backend = "auto";
    c->timeout_s = 10;
    c->compile_jobs = -1;
    c->llm_model = "gpt-5-mini";
    c->llm_api = "chat";
    c->llm_budget = 200;
    c->llm_per_expansion = 1;
    c->llm_timeout = 120;
    c->gpus[0] = 0;
    c->ngpus = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        int rc = 0, iv = 0;
        if (!strcmp(a, "--input"))
            rc = cut_arg_str(argc, argv, &i, &c->input, e);
        else if (!strcmp(a, "--outdir"))
            rc = cut_arg_str(argc, argv, &i, &c->o.outdir, e);
        else if (!strcmp(a, "--gpus"))
            rc = cut_arg_str(argc, argv, &i, &v, e) || parse_gpus(v, c, e);
        else if (!strcmp(a, "--budget-builds"))
            rc = cut_arg_int(argc, argv, &i, 1, 100000, &c->o.budget_builds, e);
        else if (!strcmp(a, "--min-pred-gain"))
            rc = cut_arg_str(argc, argv, &i, &v, e) || parse_double(a, v, -1.0, 10.0, &c->o.min_pred_gain, e);
        else if (!strcmp(a, "--ncu-every"))
            rc = cut_arg_int(argc, argv, &i, 0, 1000000, &c->o.ncu_every, e);
        else if (!strcmp(a, "--ncu-timeout"))
            rc = cut_arg_str(argc, argv, &i, &v, e) || parse_double(a, v, 1, 86400, &c->o.ncu_timeout_s, e);
        else if (!strcmp(a, "--worker"))
            rc = cut_arg_str(argc, argv, &i, &c->worker, e);
        else if (!strcmp(a, "--profile-run"))
            c->profile_run = 1;
        else if (!strcmp(a, "--no-llm"))
            c->no_llm = 1;
        else if (!strcmp(a, "--llm-model"))
            rc = cut_arg_str(argc, argv, &i, &c->llm_model, e);
        else if (!strcmp(a, "--llm-api"))
            rc = cut_arg_str(argc, argv, &i, &c->llm_api, e);
        else if (!strcmp(a, "--llm-budget"))
            rc = cut_arg_int(argc, argv, &i, 1, 1000000, &c->llm_budget, e);
        else if (!strcmp(a, "--llm-token-budget")) {
            rc = cut_arg_int(argc, argv, &i, 0, 2147483647, &iv, e);
            c->llm_token_budget = iv;
        } else if (!strcmp(a, "--llm-per-expansion"))
            rc = cut_arg_int(argc, argv, &i, 1, 16, &c->llm_per_expansion, e);
        else if (!strcmp(a, "--llm-timeout"))
            rc = cut_arg_str(argc, argv, &i, &v, e) || parse_double(a, v, 0.1, 3600, &c->llm_timeout, e);
        else if (!strcmp(a, "--resume"))
            c->o.resume = 1;
        else if (!strcmp(a, "--seed")) {
            rc = cut_arg_int(argc, argv, &i, 0, 2147483647, &iv, e);
            c->o.seed = (uint64_t)iv;
        } else if (!strcmp(a, "--backend"))
            rc = cut_arg_str(argc, argv, &i, &c->backend, e);
        else if (!strcmp(a, "--sizes"))
            rc = cut_arg_str(argc, argv, &i, &c->sizes, e);
        else if (!strcmp(a, "--timeout"))
            rc = cut_arg_str(argc, argv, &i, &v, e) || parse_double(a, v, 0.1, 3600, &c->timeout_s, e);
        else if (!strcmp(a, "--quiet"))
            c->o.quiet = 1;
        else if (!strcmp(a, "--python"))
            rc = cut_arg_str(argc, argv, &i, &c->python, e);
        else if (!strcmp(a, "--triton-compile-jobs"))
            rc = cut_arg_int(argc, argv, &i, 0, 64, &c->compile_jobs, e);
        else
            return cut_err_set(e, "unknown option '%s' (see cutune help optimize)", a);
        if (rc)
            return -1;
    }
    if (!c->input && !c->worker)
        return cut_err_set(e, "--input is required (a kernel spec or a folder of them)");
    if (c->input && c->worker)
        return cut_err_set(e, "--worker runs one variant: it takes no --input");
    if (c->profile_run && !c->worker)
        return cut_err_set(e, "--profile-run goes with --worker");
    if (strcmp(c->llm_api, "chat") && strcmp(c->llm_api, "responses"))
        return cut_err_set(e, "--llm-api: '%s' is not chat or responses", c->llm_api);
    if (strcmp(c->backend, "auto") && strcmp(c->backend, "cuda") && strcmp(c->backend, "emu"))
        return cut_err_set(e, "--backend: '%s' is not cuda, emu or auto", c->backend);
    return 0;
}

/* The LLM generator around the rules when a key is set (said once otherwise). *gen (the rules) is taken over. */
static int make_llm_gen(const opt_cli *c, cut_cand_gen **gen, cut_err *e)
{
    const char *key = getenv("OPENAI_API_KEY");
    if (!key || !key[0])
        key = getenv("CUTUNE_LLM_API_KEY");
    if (!key || !key[0]) {
        fprintf(stderr, "cutune optimize: no OPENAI_API_KEY: rule-based moves only (--no-llm says so)\n");
        return 0;
    }
    char cache[1200], events[1200];
    const char *out = c->o.outdir ? c->o.outdir : "out";
    snprintf(cache, sizeof cache, "%s/llm_cache", out);
    snprintf(events, sizeof events, "%s/llm_events.jsonl", out);
    if (cut_mkdirs(out, e) != 0)
        return -1;
    cut_llm_gen_cfg cfg = {.api = {.model = c->llm_model, .responses_api = !strcmp(c->llm_api, "responses"),
                                   .timeout_s = c->llm_timeout, .max_retries = 4, .backoff_s = 1,
                                   .max_requests = c->llm_budget, .max_tokens = c->llm_token_budget},
                           .per_expansion = c->llm_per_expansion, .cache_dir = cache, .events_path = events,
                           .rules = *gen};
    *gen = cut_llm_gen_new(&cfg, e);
    if (!*gen)
        return -1;
    fprintf(stderr, "cutune optimize: LLM %s proposes beside the rules (%d per expansion, at most %d requests)\n",
            c->llm_model, c->llm_per_expansion, c->llm_budget);
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The spec files of --input: the file, or every *.json of the folder in name order. */
static int spec_paths(const char *input, char **paths, int *n, cut_err *e)
{
    struct stat st;
    *n = 0;
    if (stat(input, &st) != 0)
        return cut_err_set(e, "--input: '%s' does not exist", input);
    if (!S_ISDIR(st.st_mode)) {
        paths[(*n)++] = cut_xstrdup(input);
        return 0;
    }
    DIR *d = opendir(input);
    if (!d)
        return cut_err_set(e, "--input: cannot open folder '%s'", input);
    struct dirent *de;
    while ((de = readdir(d)) && *n < MAX_SPECS) {
        const size_t len = strlen(de->d_name);
        if (len > 5 && strcmp(de->d_name + len - 5, ".json") == 0) {
            char p[2048];
            snprintf(p, sizeof p, "%s/%s", input, de->d_name);
            paths[(*n)++] = cut_xstrdup(p);
        }
    }
    closedir(d);
    qsort(paths, (size_t)*n, sizeof *paths, cmp_str);
    return *n ? 0 : cut_err_set(e, "--input: no *.json kernel spec in '%s'", input);
}

/* With $CUTUNE_REPLAY_TIMES (a table file), every runner times the calls the table knows with its times
 * (cut_runner_replay_new): a test hook that shows a resumed search making an uninterrupted one's decisions. */
static int replay_runners(opt_cli *c, cut_runner **r, cut_err *e)
{
    const char *table = getenv("CUTUNE_REPLAY_TIMES");
    for (int i = 0; table && *table && i < c->ngpus; i++) {
        cut_runner *w = cut_runner_replay_new(r[i], table, e);
        if (!w)
            return -1;
        r[i] = w;
    }
    return 0;
}

static int make_runners_direct(opt_cli *c, cut_runner **r, char *gpu_name, size_t gn, cut_err *e);

/* One runner per --gpus entry: GPU workers, or emulators (auto falls back to them without a GPU, saying so). */
static int make_runners(opt_cli *c, cut_runner **r, char *gpu_name, size_t gn, cut_err *e)
{
    return make_runners_direct(c, r, gpu_name, gn, e) != 0 ? -1 : replay_runners(c, r, e);
}

/* Under MPI: one runner per serving rank (at most as many as --gpus takes), the timing and the NVRTC target after
 * what the ranks measure on; a variant's "worker" is its serving rank. */
static int mpi_runners(opt_cli *c, cut_runner **r, char *gpu_name, size_t gn, cut_err *e)
{
    if (c->o.ncu_every > 0)
        return cut_err_set(e, "--ncu-every is not run over MPI yet (it profiles on this host's GPU): run it without "
                              "mpirun");
    if (cut_mpi_size() - 1 > (int)CUT_ARRAY_LEN(c->gpus))
        return cut_err_set(e, "under MPI at most %d serving ranks (this job has %d)", (int)CUT_ARRAY_LEN(c->gpus),
                           cut_mpi_size() - 1);
    cut_timing t;
    cut_timing_default(&t);
    t.timeout_s = c->timeout_s;
    cut_runner **rs = NULL;
    int n = 0;
    cut_mpi_hello h;
    /* the variants compile here: the search needs each one's PTX before it is measured (a transposition by PTX is
     * not measured) and keeps its PTX and SASS */
    cut_mpi_setup s = {.compile = 0};
    snprintf(s.backend, sizeof s.backend, "%s", c->backend);
    if (cut_cli_mpi_runners("optimize", &s, &t, &rs, &n, &h, e) != 0)
        return -1;
    c->on_gpu = !strcmp(h.env.backend, "cuda");
    if (c->on_gpu) { /* as below: the variants compile here for the ranks' GPU */
        c->o.sm_major = h.limits.sm_major;
        c->o.sm_minor = h.limits.sm_minor;
        t.flush_l2 = 1;
    } else {
        t.warmup = 0;
        t.min_repeats = t.max_repeats = 3;
        t.min_total_ms = 0;
    }
    c->timing = t;
    snprintf(gpu_name, gn, "%s", h.env.gpu_name);
    for (int i = 0; i < n; i++) {
        r[i] = rs[i];
        r[i]->timing = t;
        c->gpus[i] = i + 1;
    }
    free(rs); /* the runners are r's now */
    c->ngpus = n;
    return 0;
}

static int make_runners_direct(opt_cli *c, cut_runner **r, char *gpu_name, size_t gn, cut_err *e)
{
    if (cut_cli_mpi_active())
        return mpi_runners(c, r, gpu_name, gn, e);
    cut_err ge = {{0}};
    const int count = strcmp(c->backend, "emu") ? cut_gpu_init(&ge) : -1;
    if (!strcmp(c->backend, "cuda") && count < 1)
        return cut_err_set(e, "--backend cuda: no usable GPU: %s", count < 0 ? ge.msg : "the driver reports none");
    cut_timing t;
    cut_timing_default(&t);
    t.timeout_s = c->timeout_s;
    char self[PATH_MAX];
    if (count >= 1) {
        cut_gpu_info info;
        if (cut_gpu_query(c->gpus[0], &info, e) != 0)
            return -1;
        c->o.sm_major = info.sm_major;
        c->o.sm_minor = info.sm_minor;
        snprintf(gpu_name, gn, "%s", info.name);
        t.flush_l2 = 1;
        c->timing = t;
        c->on_gpu = 1;
        for (int i = 0; i < c->ngpus; i++)
            if (!(r[i] = cut_runner_gpu_new(c->gpus[i], cut_cli_worker_exe(self, sizeof self), &t, e)))
                return cut_err_wrap(e, "GPU %d", c->gpus[i]);
        return 0;
    }
    if (!strcmp(c->backend, "auto"))
        fprintf(stderr, "cutune optimize: no GPU found (%s): running on the host emulator instead; variants are "
                        "compiled with NVRTC for sm_%d%d and checked, but times are CPU times\n",
                ge.msg, c->o.sm_major, c->o.sm_minor);
    snprintf(gpu_name, gn, "host-emulation");
    t.warmup = 0;
    t.min_repeats = t.max_repeats = 3;
    t.min_total_ms = 0;
    c->timing = t;
    /* each in a worker process of its own: a variant that crashes or hangs the emulator is that variant's fault or
     * timeout, as on a GPU; host-compiled kernels kept in the compile cache (a resumed search compiles nothing twice) */
    const char *cache = getenv("COMPILE_CACHE_DIR");
    char so_dir[PATH_MAX], root[PATH_MAX];
    if (cache && *cache)
        snprintf(root, sizeof root, "%s", cache);
    else if (cut_default_cache_dir(root, sizeof root, e) != 0)
        return -1;
    snprintf(so_dir, sizeof so_dir, "%s/emu", root);
    for (int i = 0; i < c->ngpus; i++)
        if (!(r[i] = cut_runner_emu_worker_new(cut_cli_worker_exe(self, sizeof self), so_dir, &t, e)))
            return -1;
    return 0;
}

/* Triton compiles a variant inside its first launch: the per-variant limit on a GPU gets this much more. */
#define TRITON_COMPILE_S 60.0

/* Each GPU's share of --triton-compile-jobs (default: min(cores - 1, 8), the core left for the measuring worker), at
 * least 1 when compiling ahead is on; 0 when it is off. */
static int compile_jobs_per_gpu(const opt_cli *c)
{
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const int total = c->compile_jobs >= 0 ? c->compile_jobs : (int)CUT_MAX(1, CUT_MIN(cores - 1, 8));
    return total > 0 ? CUT_MAX(1, total / c->ngpus) : 0;
}

/* One Triton runner per --gpus entry, made at the first Triton spec (after make_runners: the same GPUs and timing,
 * or Triton's interpreter where the CUDA variants run on the host emulator). */
static int make_triton_runners(const opt_cli *c, cut_runner **r, cut_err *e)
{
    if (r[0])
        return 0;
    if (cut_cli_mpi_active())
        return cut_err_set(e, "Triton specs are not run over MPI yet: run them without mpirun");
    const char *py = c->python ? c->python : getenv("CUTUNE_PYTHON");
    char worker[PATH_MAX], cache[PATH_MAX];
    const char *cc = getenv("COMPILE_CACHE_DIR");
    if (cut_triton_worker_path(worker, sizeof worker, e) != 0)
        return -1;
    if (cc && *cc)
        snprintf(cache, sizeof cache, "%s", cc);
    else if (cut_default_cache_dir(cache, sizeof cache, e) != 0)
        return -1;
    cut_timing t = c->timing;
    if (c->on_gpu)
        t.timeout_s += TRITON_COMPILE_S;
    const int jobs = compile_jobs_per_gpu(c);
    for (int i = 0; i < c->ngpus; i++)
        if (!(r[i] = cut_runner_triton_new(py && *py ? py : "python3", worker, c->on_gpu ? c->gpus[i] : -1, &t,
                                           cache, jobs, e)))
            return cut_err_wrap(e, "the Triton worker (%s %s)", py && *py ? py : "python3", worker);
    return 0;
}

/* Keeps the spec as this run sees it (sources inline, --sizes applied) as <outdir>/kernels/_NAME/spec.json, which
 * `cutune export --optimized` reads: the search stays exportable when the spec or its source file moves. Left alone
 * when a search is there and --resume is not given (the optimizer refuses that run). */
static int save_spec(const opt_cli *c, const cut_kspec *k, const char *spec_path, cut_err *e)
{
    char kdir[2048], path[2200];
    snprintf(kdir, sizeof kdir, "%s/kernels/_%s", c->o.outdir, k->name);
    snprintf(path, sizeof path, "%s/search_state.json", kdir);
    if (cut_path_exists(path) && !c->o.resume)
        return 0;
    char *json = NULL;
    snprintf(path, sizeof path, "%s/spec.json", kdir);
    int rc = cut_mkdirs(kdir, e) == 0 && cut_kspec_to_json(k, spec_path, &json, e) == 0 ? 0 : -1;
    if (rc == 0)
        rc = cut_write_file_atomic(path, json, strlen(json), e);
    free(json);
    return rc;
}

static void add_summary(cJSON *arr, const cut_opt_summary *s, const cut_kspec *spec, const char *backend)
{
    cJSON *k = cJSON_CreateObject();
    cJSON_AddStringToObject(k, "name", s->name);
    cJSON_AddStringToObject(k, "language", cut_ks_lang_name(spec->lang));
    cJSON_AddStringToObject(k, "backend", backend);
    cJSON_AddNumberToObject(k, "baseline_ms", s->baseline_ms);
    cJSON_AddNumberToObject(k, "best_ms", s->best_ms);
    cJSON_AddNumberToObject(k, "speedup", s->speedup);
    cJSON_AddNumberToObject(k, "builds", s->builds);
    cJSON_AddNumberToObject(k, "builds_to_best", s->builds_to_best);
    cJSON_AddStringToObject(k, "best_variant", s->best_id);
    cJSON *m = cJSON_AddArrayToObject(k, "best_moves");
    for (int i = 0; i < s->nbest_moves; i++)
        cJSON_AddItemToArray(m, cJSON_CreateString(s->best_moves[i]));
    cJSON_AddNumberToObject(k, "measured", s->measured);
    cJSON_AddNumberToObject(k, "failed", s->failed);
    cJSON_AddNumberToObject(k, "transpositions", s->transpositions);
    cJSON_AddItemToArray(arr, k);
}

/* The profiler for --ncu-every: $CUTUNE_NCU, else ncu among the CUDA tools; none is said once (no profile priors). */
static void find_ncu(opt_cli *c, char *buf, size_t n)
{
    if (c->o.ncu_every <= 0)
        return;
    const char *env = getenv("CUTUNE_NCU");
    if (env && *env)
        snprintf(buf, n, "%s", env);
    if ((env && *env) ? access(buf, X_OK) == 0 : cut_find_cuda_tool("ncu", buf, n) != NULL) {
        c->o.ncu_tool = buf;
        return;
    }
    fprintf(stderr, "cutune optimize: --ncu-every %d: %s; going on without profile priors\n", c->o.ncu_every,
            env && *env ? "$CUTUNE_NCU is not an executable" : "no ncu in $CUDA_HOME/bin, /usr/local/cuda/bin or PATH");
}

/* --worker: the variant of one control file on the first of --gpus; runner_result.json unless --profile-run. */
static int run_worker(opt_cli *c)
{
    cut_runner *r[16] = {0}, *tr[16] = {0};
    char gpu_name[128] = "";
    cut_err e = {{0}};
    cut_result res;
    cut_ks_lang lang = CUT_KS_CUDA;
    const char *cache = getenv("COMPILE_CACHE_DIR");
    c->o.compile_cache = cache && *cache ? cache : NULL;
    c->ngpus = 1;
    int code = CUT_EXIT_FAIL;
    if (c->o.compile_cache && cut_private_dir(c->o.compile_cache, &e) != 0)
        fprintf(stderr, "cutune optimize --worker: COMPILE_CACHE_DIR: %s\n", e.msg);
    else if (cut_opt_worker_lang(c->worker, &lang, &e) != 0 || make_runners(c, r, gpu_name, sizeof gpu_name, &e) != 0 ||
             (lang == CUT_KS_TRITON && make_triton_runners(c, tr, &e) != 0) ||
             cut_opt_worker(&c->o, c->worker, lang == CUT_KS_TRITON ? tr[0] : r[0], c->gpus[0], c->profile_run,
                            &res, &e) != 0)
        fprintf(stderr, "cutune optimize --worker %s: %s\n", c->worker, e.msg);
    else {
        if (!c->o.quiet || res.status != CUT_ST_OK)
            fprintf(c->profile_run ? stderr : stdout, "%s: %s%s%s", c->worker, cut_status_name(res.status),
                    res.error[0] ? ": " : "", res.error);
        if (!c->profile_run && res.status == CUT_ST_OK && !c->o.quiet)
            printf(", %.4f ms (%s)", res.median_ms, gpu_name);
        if (!c->o.quiet || res.status != CUT_ST_OK)
            fputc('\n', c->profile_run ? stderr : stdout);
        code = res.status == CUT_ST_OK ? CUT_EXIT_OK : CUT_EXIT_FAIL;
    }
    cut_runner_free(r[0]);
    cut_runner_free(tr[0]);
    return code;
}

int cut_cmd_optimize(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_text, stdout);
            return CUT_EXIT_OK;
        }
    opt_cli c;
    cut_err e = {{0}};
    if (parse_cli(argc, argv, &c, &e) != 0) { /* one line, as every command says it: the usage is a command away */
        fprintf(stderr, "cutune optimize: %s\n", e.msg);
        return CUT_EXIT_USAGE;
    }
    if (c.worker)
        return run_worker(&c);
    char *paths[MAX_SPECS];
    int np = 0, bad = 0;
    if (spec_paths(c.input, paths, &np, &e) != 0) {
        fprintf(stderr, "cutune optimize: %s\n", e.msg);
        return CUT_EXIT_USAGE;
    }
    cut_kspec *specs = cut_xcalloc((size_t)np, sizeof *specs);
    for (int i = 0; i < np; i++)
        if (cut_kspec_load(paths[i], &specs[i], &e) != 0 || cut_cli_apply_sizes(c.sizes, &specs[i], &e) != 0) {
            fprintf(stderr, "cutune optimize: %s\n", e.msg);
            bad++;
        }
    if (!bad && cut_cli_sizes_known(c.sizes, specs, np, &e) != 0) {
        fprintf(stderr, "cutune optimize: %s\n", e.msg);
        bad++;
    }
    int code = CUT_EXIT_USAGE;
    cut_runner *runners[16] = {0}, *truns[16] = {0};
    char gpu_name[128] = "";
    cut_cand_gen *gen = NULL;
    cJSON *summary = NULL;
    if (bad)
        goto out;
    code = CUT_EXIT_FAIL;
    /* the compile cache holds code this run loads: refused before anything is built when another user can write it */
    const char *cache_env = getenv("COMPILE_CACHE_DIR");
    if (cache_env && *cache_env && cut_private_dir(cache_env, &e) != 0) {
        fprintf(stderr, "cutune optimize: COMPILE_CACHE_DIR: %s\n", e.msg);
        goto out;
    }
    if (make_runners(&c, runners, gpu_name, sizeof gpu_name, &e) != 0) {
        fprintf(stderr, "cutune optimize: %s\n", e.msg);
        goto out;
    }
    const char *cache = getenv("COMPILE_CACHE_DIR");
    c.o.compile_cache = cache && *cache ? cache : NULL;
    c.o.gpus = c.gpus;
    char ncu[PATH_MAX], self[PATH_MAX];
    find_ncu(&c, ncu, sizeof ncu);
    c.o.self_exe = cut_cli_worker_exe(self, sizeof self);
    c.o.backend = runners[0]->env(runners[0])->backend;
    gen = cut_rules_gen_new();
    if (!c.no_llm && make_llm_gen(&c, &gen, &e) != 0) {
        fprintf(stderr, "cutune optimize: %s\n", e.msg);
        goto out;
    }
    summary = cJSON_CreateObject();
    cJSON_AddStringToObject(summary, "gpu", gpu_name);
    cJSON_AddStringToObject(summary, "backend", runners[0]->env(runners[0])->backend);
    cut_buf cmd;
    cut_buf_init(&cmd);
    for (int i = 0; i < argc; i++)
        cut_buf_printf(&cmd, "%s%s", i ? " " : "", argv[i]);
    cJSON_AddStringToObject(summary, "command", cmd.data ? cmd.data : "");
    cut_buf_free(&cmd);
    cJSON *arr = cJSON_AddArrayToObject(summary, "kernels");
    double log_sum = 0;
    int done = 0, failed = 0;
    for (int i = 0; i < np; i++) {
        cut_opt_summary s;
        const int triton = specs[i].lang == CUT_KS_TRITON;
        printf("== %s (%s, budget %d builds, %d worker%s)\n", specs[i].name,
               triton && !c.on_gpu ? "Triton's interpreter" : gpu_name, c.o.budget_builds, c.ngpus,
               c.ngpus == 1 ? "" : "s");
        fflush(stdout);
        if (triton && make_triton_runners(&c, truns, &e) != 0) {
            fprintf(stderr, "cutune optimize: %s: %s\n", specs[i].name, e.msg);
            failed++;
            continue;
        }
        cut_runner **rs = triton ? truns : runners;
        c.o.backend = rs[0]->env(rs[0])->backend;
        if (save_spec(&c, &specs[i], paths[i], &e) != 0 ||
            cut_optimize_kernel(&c.o, &specs[i], rs, c.ngpus, gen, &s, &e) != 0) {
            fprintf(stderr, "cutune optimize: %s: %s\n", specs[i].name, e.msg);
            failed++;
            continue;
        }
        printf("   best %s: %.4f ms vs baseline %.4f ms = %.2fx after %d builds (%d measured, %d failed, %d "
               "transpositions)\n",
               s.best_id, s.best_ms, s.baseline_ms, s.speedup, s.builds, s.measured, s.failed, s.transpositions);
        add_summary(arr, &s, &specs[i], c.o.backend);
        log_sum += log(s.speedup);
        done++;
    }
    if (done) {
        cJSON_AddNumberToObject(summary, "geomean_speedup", exp(log_sum / done));
        printf("geomean speedup over %d kernel%s: %.2fx\n", done, done == 1 ? "" : "s", exp(log_sum / done));
    }
    char path[2048];
    if (gen && !strcmp(gen->name, "llm")) {
        const cut_llm_usage u = cut_llm_gen_usage(gen);
        cJSON *llm = cJSON_AddObjectToObject(summary, "llm");
        cJSON_AddStringToObject(llm, "model", c.llm_model);
        cJSON_AddNumberToObject(llm, "requests", (double)u.requests);
        cJSON_AddNumberToObject(llm, "retries", (double)u.retries);
        cJSON_AddNumberToObject(llm, "prompt_tokens", (double)u.prompt_tokens);
        cJSON_AddNumberToObject(llm, "completion_tokens", (double)u.completion_tokens);
        printf("LLM %s: %ld requests (%ld retries), %ld prompt and %ld completion tokens\n", c.llm_model, u.requests,
               u.retries, u.prompt_tokens, u.completion_tokens);
    }
    snprintf(path, sizeof path, "%s/summary.json", c.o.outdir);
    char *text = cJSON_Print(summary);
    if (text && cut_write_file_atomic(path, text, strlen(text), &e) != 0)
        fprintf(stderr, "cutune optimize: %s\n", e.msg);
    free(text);
    code = failed ? CUT_EXIT_FAIL : CUT_EXIT_OK;
out:
    cJSON_Delete(summary);
    cut_cand_gen_free(gen);
    for (int i = 0; i < 16; i++) {
        cut_runner_free(runners[i]);
        cut_runner_free(truns[i]);
    }
    for (int i = 0; i < np; i++) {
        cut_kspec_free(&specs[i]);
        free(paths[i]);
    }
    free(specs);
    return code;
}
