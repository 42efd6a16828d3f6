/* cutune — the optimizer's driver: one kernel spec, a search graph (mcgs.c), a candidate generator, one runner per
 * GPU, and everything persisted under <outdir>/kernels/_<name>/ as seed 002 lays it out:
 *
 *   baseline/{control.json, result.json, kernel.cu, kernel.ptx, stdout.log, stderr.log, ref_<output>_<set>.bin}
 *   variants/<id>/{control.json, result.json, kernel.cu, kernel.ptx, candidate.diff, stdout.log, stderr.log}
 *   best -> variants/<id> (or baseline), trace.md, events.jsonl, search_state.json
 *   <outdir>/global_tactic_graph.json (moves and move-to-move transitions over every kernel)
 *
 * Crash safety: a variant is finished when its result.json exists (written atomically, last). The state file is
 * rewritten after every round; --resume loads it, then takes in every finished variant the state does not know yet
 * and deletes unfinished variant folders, so a SIGKILL loses no finished variant and the graph stays consistent.
 * The baseline's outputs are kept as the references (ref_*.bin), so a resumed search does not run the baseline. */
#include "cutune/measure.h"
#include "cutune/optimize.h"
#include "cutune/util.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_PATH_LEN 64
#define MAX_PROPOSALS 96
/* Observed gain recorded for a move whose variant failed (fault, hang, wrong result, no compile): all of the parent's
 * speed lost. One failure takes a rule's predicted gain of 0.05 to (2 * 0.05 - 1) / 3 = -0.30, below RELAX_FLOOR, so
 * a rewrite that faults is not built again on every other state once the threshold relaxes (the H200 run of
 * 2026-11-23 spent 20 of layernorm's 50 builds on one faulting rewrite with -0.25 and no floor). */
#define FAIL_GAIN (-1.0)
#define RELAX_STEP 0.05    /* how far the prune threshold drops when every open move was tried */
#define RELAX_FLOOR (-0.25) /* never lower: a move predicted to lose over 25% is not built to spend the budget */
#define STATE_FORMAT 1

void cut_opt_opts_default(cut_opt_opts *o)
{
    memset(o, 0, sizeof *o);
    o->outdir = "out";
    o->budget_builds = 50;
    o->min_pred_gain = 0.02;
    o->seed = 1;
    o->sm_major = 9;
    o->sm_minor = 0;
}

/* History of one move key ("BLOCK -> 256", "fast math intrinsics"): observed relative gains. */
typedef struct hist {
    char key[96];
    cut_move move;
    int n;
    double sum;
} hist;

typedef struct kopt {
    const cut_opt_opts *o;
    const cut_kspec *k;
    cut_runner **runners;
    int nr;
    cut_cand_gen *gen;
    char kdir[1024], scratch[1100];
    cut_mcgs g;
    /* per node, parallel to g.nodes */
    char **src;
    int *parent;
    char (*via)[160];
    int *via_move;
    int cap;
    int builds, measured, failed, transpositions, next_id;
    double baseline_ms;
    int best;
    cut_kwork work;
    void *refs[CUT_KW_MAX_BUFS][2];
    double threshold; /* prune threshold: --min-pred-gain, lowered when nothing above it is left */
    int nhist;
    hist hist[512];
    cut_compile_opts copts;
    FILE *events, *trace;
    int no_disk; /* cut_opt_state_check: sources are not read */
} kopt;

/* ---- small helpers ---- */

static void ensure_cap(kopt *ko)
{
    if (ko->g.nnodes < ko->cap)
        return;
    ko->cap = ko->cap ? 2 * ko->cap : 64;
    ko->src = cut_xrealloc(ko->src, sizeof *ko->src * (size_t)ko->cap);
    ko->parent = cut_xrealloc(ko->parent, sizeof *ko->parent * (size_t)ko->cap);
    ko->via = cut_xrealloc(ko->via, sizeof *ko->via * (size_t)ko->cap);
    ko->via_move = cut_xrealloc(ko->via_move, sizeof *ko->via_move * (size_t)ko->cap);
}

static int add_node(kopt *ko, const char *id, char *src, int parent, int move, const char *via)
{
    ensure_cap(ko);
    const int n = cut_mcgs_add_node(&ko->g, id);
    ko->src[n] = src;
    ko->parent[n] = parent;
    ko->via_move[n] = move;
    snprintf(ko->via[n], sizeof ko->via[n], "%s", via ? via : "");
    return n;
}

static int write_json(const char *path, cJSON *j, cut_err *e)
{
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text)
        return cut_err_set(e, "cannot serialise %s", path);
    int rc = cut_write_file_atomic(path, text, strlen(text), e);
    free(text);
    return rc;
}

static cJSON *read_json(const char *path, cut_err *e)
{
    char *text = NULL;
    size_t len = 0;
    if (cut_read_file(path, &text, &len, e) != 0)
        return NULL;
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    if (!j)
        cut_err_set(e, "%s: not valid JSON", path);
    return j;
}

static int write_text(const char *dir, const char *name, const char *text, cut_err *e)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return cut_write_file_atomic(path, text ? text : "", text ? strlen(text) : 0, e);
}

static void hex64(uint64_t v, char *buf) { snprintf(buf, 17, "%016" PRIx64, v); }

static uint64_t parse_hex(const cJSON *j)
{
    const char *s = cJSON_GetStringValue(j);
    return s ? strtoull(s, NULL, 16) : 0;
}

static double num(const cJSON *o, const char *key, double dflt)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(x) ? x->valuedouble : dflt;
}

/* An integer field; a value outside int (a damaged file: 1e300, inf) reads as dflt, never as an overflowing cast. */
static int inum(const cJSON *o, const char *key, int dflt)
{
    const double v = num(o, key, dflt);
    return v >= INT_MIN && v <= INT_MAX ? (int)v : dflt;
}

static const char *str(const cJSON *o, const char *key)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
    return s ? s : "";
}

static void event(kopt *ko, cJSON *j)
{
    cJSON_AddNumberToObject(j, "t", (double)time(NULL));
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (text && ko->events) {
        fprintf(ko->events, "%s\n", text);
        fflush(ko->events);
        fsync(fileno(ko->events));
    }
    free(text);
}

/* ---- history of moves (for predicted gains) and the global tactic graph ---- */

/* The history key of a proposal: a tunable change keyed by its target ("BLOCK -> 256"), a rewrite by its label. */
static void hist_key(const char *label, char *key, size_t n)
{
    const char *arrow = strstr(label, " -> ");
    const char *sp = strchr(label, ' ');
    if (arrow && sp && sp < arrow)
        snprintf(key, n, "%.*s%s", (int)(sp - label), label, arrow);
    else
        snprintf(key, n, "%s", label);
}

static hist *hist_get(kopt *ko, cut_move m, const char *key)
{
    for (int i = 0; i < ko->nhist; i++)
        if (ko->hist[i].move == m && strcmp(ko->hist[i].key, key) == 0)
            return &ko->hist[i];
    if (ko->nhist == (int)CUT_ARRAY_LEN(ko->hist))
        return NULL;
    hist *h = &ko->hist[ko->nhist++];
    memset(h, 0, sizeof *h);
    h->move = m;
    snprintf(h->key, sizeof h->key, "%s", key);
    return h;
}

static void hist_add(kopt *ko, cut_move m, const char *label, double gain)
{
    char key[96];
    hist_key(label, key, sizeof key);
    hist *h = hist_get(ko, m, key);
    if (h) {
        h->n++;
        h->sum += gain;
    }
}

static void global_path(const kopt *ko, char *buf, size_t n)
{
    snprintf(buf, n, "%s/global_tactic_graph.json", ko->o->outdir);
}

/* Loads the per-key history of every kernel from the global tactic graph (priors for this kernel). */
static void load_global(kopt *ko)
{
    char path[1100];
    global_path(ko, path, sizeof path);
    cut_err e;
    if (!cut_path_exists(path))
        return;
    cJSON *j = read_json(path, &e);
    const cJSON *keys = cJSON_GetObjectItemCaseSensitive(j, "keys"), *x;
    cJSON_ArrayForEach(x, keys) {
        const int m = cut_move_parse(str(x, "move"));
        hist *h = m >= 0 ? hist_get(ko, (cut_move)m, str(x, "key")) : NULL;
        if (h) {
            h->n += inum(x, "n", 0);
            h->sum += num(x, "gain_sum", 0);
        }
    }
    cJSON_Delete(j);
}

/* Adds one variant's outcome to the global tactic graph: per move, per key and per transition prev -> move. */
static void update_global(kopt *ko, int prev_move, cut_move m, const char *label, double gain, int ok, cut_err *e)
{
    char path[1100], key[96];
    global_path(ko, path, sizeof path);
    hist_key(label, key, sizeof key);
    cJSON *j = cut_path_exists(path) ? read_json(path, e) : NULL;
    if (!j) {
        j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "format", 1);
        cJSON_AddItemToObject(j, "moves", cJSON_CreateObject());
        cJSON_AddItemToObject(j, "transitions", cJSON_CreateObject());
        cJSON_AddItemToObject(j, "keys", cJSON_CreateArray());
        cJSON_AddItemToObject(j, "kernels", cJSON_CreateArray());
    }
    cJSON *kernels = cJSON_GetObjectItemCaseSensitive(j, "kernels"), *x;
    int known = 0;
    cJSON_ArrayForEach(x, kernels) known |= strcmp(cJSON_GetStringValue(x) ? x->valuestring : "", ko->k->name) == 0;
    if (!known && cJSON_IsArray(kernels))
        cJSON_AddItemToArray(kernels, cJSON_CreateString(ko->k->name));
    char tname[96];
    snprintf(tname, sizeof tname, "%s -> %s", prev_move >= 0 ? cut_move_name((cut_move)prev_move) : "baseline",
             cut_move_name(m));
    const char *groups[2] = {"moves", "transitions"};
    const char *names[2] = {cut_move_name(m), tname};
    for (int gi = 0; gi < 2; gi++) {
        cJSON *grp = cJSON_GetObjectItemCaseSensitive(j, groups[gi]);
        if (!cJSON_IsObject(grp))
            continue;
        cJSON *s = cJSON_GetObjectItemCaseSensitive(grp, names[gi]);
        if (!s) {
            s = cJSON_AddObjectToObject(grp, names[gi]);
            cJSON_AddNumberToObject(s, "attempts", 0);
            cJSON_AddNumberToObject(s, "ok", 0);
            cJSON_AddNumberToObject(s, "improved", 0);
            cJSON_AddNumberToObject(s, "gain_sum", 0);
            cJSON_AddNumberToObject(s, "best_gain", -1);
        }
        const double best = num(s, "best_gain", -1);
        cJSON_ReplaceItemInObject(s, "attempts", cJSON_CreateNumber(num(s, "attempts", 0) + 1));
        cJSON_ReplaceItemInObject(s, "ok", cJSON_CreateNumber(num(s, "ok", 0) + ok));
        cJSON_ReplaceItemInObject(s, "improved", cJSON_CreateNumber(num(s, "improved", 0) + (ok && gain > 0)));
        cJSON_ReplaceItemInObject(s, "gain_sum", cJSON_CreateNumber(num(s, "gain_sum", 0) + gain));
        cJSON_ReplaceItemInObject(s, "best_gain", cJSON_CreateNumber(gain > best ? gain : best));
    }
    cJSON *keys = cJSON_GetObjectItemCaseSensitive(j, "keys"), *hit = NULL;
    cJSON_ArrayForEach(x, keys) if (strcmp(str(x, "key"), key) == 0 && strcmp(str(x, "move"), cut_move_name(m)) == 0)
        hit = x;
    if (!hit && cJSON_IsArray(keys)) {
        hit = cJSON_CreateObject();
        cJSON_AddStringToObject(hit, "move", cut_move_name(m));
        cJSON_AddStringToObject(hit, "key", key);
        cJSON_AddNumberToObject(hit, "n", 0);
        cJSON_AddNumberToObject(hit, "gain_sum", 0);
        cJSON_AddItemToArray(keys, hit);
    }
    if (hit) {
        cJSON_ReplaceItemInObject(hit, "n", cJSON_CreateNumber(num(hit, "n", 0) + 1));
        cJSON_ReplaceItemInObject(hit, "gain_sum", cJSON_CreateNumber(num(hit, "gain_sum", 0) + gain));
    }
    if (write_json(path, j, e) != 0 && !ko->o->quiet)
        fprintf(stderr, "cutune optimize: warning: %s\n", e->msg);
}

/* ---- edges of a node ---- */

/* The state key the diff leads to from node n (patched, tunables read, launch resolved), or 0 when any step fails
 * (the build then records why). */
static uint64_t proposal_key(kopt *ko, int n, const char *diff)
{
    char *src = NULL;
    long long vals[CUT_KS_MAX_VARS];
    cut_ks_launch l;
    cut_err ignore;
    uint64_t key = 0;
    if (cut_patch_apply(ko->src[n], diff, ko->scratch, &src, &ignore) == 0 &&
        cut_kstate_tunables(ko->k, src, vals, &ignore) == 0 && cut_kspec_resolve(ko->k, vals, &l, &ignore) == 0)
        key = cut_kstate_key(src, &l);
    free(src);
    return key;
}

static int gen_edges(kopt *ko, int n, cut_err *e)
{
    cut_proposal *p = cut_xcalloc(MAX_PROPOSALS, sizeof *p);
    const int np = ko->gen->propose(ko->gen->ctx, ko->k, ko->src[n], ko->scratch, p, MAX_PROPOSALS, e);
    if (np < 0) {
        free(p);
        return cut_err_wrap(e, "candidate generator '%s'", ko->gen->name);
    }
    double pred[MAX_PROPOSALS], weight[CUT_MV_COUNT];
    for (int m = 0; m < CUT_MV_COUNT; m++)
        weight[m] = 1.0;
    cut_err pe = {{0}};
    const cut_prior_src *ps = ko->o->priors;
    if (ps && ps->weights(ps->ctx, ko->k, ko->src[n], weight, &pe) != 0 && ko->trace) {
        fprintf(ko->trace, "- *%s priors unavailable for %s: %s*\n", ps->name, ko->g.nodes[n].id, pe.msg);
        for (int m = 0; m < CUT_MV_COUNT; m++)
            weight[m] = 1.0;
    }
    for (int m = 0; m < CUT_MV_COUNT; m++) /* a weight is a factor in [0, 100]; anything else is neutral */
        weight[m] = isfinite(weight[m]) && weight[m] >= 0 ? fmin(weight[m], 100.0) : 1.0;
    for (int i = 0; i < np; i++) {
        char key[96];
        hist_key(p[i].label, key, sizeof key);
        const hist *h = hist_get(ko, p[i].move, key);
        /* the profile weights the rule's estimate; history then corrects it as for any move */
        pred[i] = cut_mcgs_pred_gain(p[i].pred_gain * weight[p[i].move], h ? h->sum : 0, h ? h->n : 0);
    }
    cut_mcgs_set_edges(&ko->g, n, p, pred, np, ko->o->min_pred_gain);
    for (int i = 0; i < np; i++) {
        ko->g.nodes[n].edges[i].key = proposal_key(ko, n, p[i].diff);
        cut_proposal_free(&p[i]);
    }
    free(p);
    return 0;
}

/* The diff of edge ed of node n, regenerated (generators are deterministic for a state). NULL if it is gone. */
static char *edge_diff(kopt *ko, int n, const char *label, cut_err *e)
{
    cut_proposal *p = cut_xcalloc(MAX_PROPOSALS, sizeof *p);
    const int np = ko->gen->propose(ko->gen->ctx, ko->k, ko->src[n], ko->scratch, p, MAX_PROPOSALS, e);
    char *diff = NULL;
    for (int i = 0; i < np; i++) {
        if (!diff && strcmp(p[i].label, label) == 0) {
            diff = p[i].diff;
            p[i].diff = NULL;
        }
        cut_proposal_free(&p[i]);
    }
    free(p);
    return diff;
}

/* ---- one variant ---- */

typedef struct job {
    int parent, edge;
    int path[MAX_PATH_LEN], plen;
    char id[32], dir[1200];
    char *diff, *src;
    cut_kcall call;
    cut_compiled bin;
    int runnable;      /* built, not a transposition: to be measured */
    int compiled;      /* counted against the budget */
    cut_ks_launch launch;
    int same_as;       /* transposition: the existing node */
    cut_status status;
    char status_name[32];
    char error[512];
    cut_result res;
    int runner;
    uint64_t key, ptx;
} job;

static void job_fail(job *j, const char *status, const char *fmt, const char *why)
{
    snprintf(j->status_name, sizeof j->status_name, "%s", status);
    snprintf(j->error, sizeof j->error, fmt, why);
    j->runnable = 0;
}

/* Materialises, diffs, patches and writes job j (compile_jobs then compiles it). Errors of the variant are its
 * status; -1 only for disk errors. */
static int build(kopt *ko, job *j, cut_err *e)
{
    const cut_edge *ed = &ko->g.nodes[j->parent].edges[j->edge];
    snprintf(j->id, sizeof j->id, "v%04d", ++ko->next_id);
    snprintf(j->dir, sizeof j->dir, "%s/variants/%s", ko->kdir, j->id);
    if (cut_mkdirs(j->dir, e) != 0)
        return -1;
    j->same_as = -1;
    cut_err why = {{0}};
    /* the edge keeps its diff; after a resume it is regenerated (generators are deterministic for a state) */
    j->diff = ed->diff ? cut_xstrdup(ed->diff) : edge_diff(ko, j->parent, ed->label, &why);
    long long vals[CUT_KS_MAX_VARS];
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "kernel", ko->k->name);
    cJSON_AddStringToObject(c, "id", j->id);
    cJSON_AddStringToObject(c, "parent", ko->g.nodes[j->parent].id);
    cJSON_AddStringToObject(c, "move", cut_move_name(ed->move));
    cJSON_AddStringToObject(c, "label", ed->label);
    cJSON_AddStringToObject(c, "generator", ko->gen->name);
    cJSON *path = cJSON_AddArrayToObject(c, "path");
    for (int i = 0; i < j->plen; i++)
        cJSON_AddItemToArray(path, cJSON_CreateString(ko->g.nodes[j->path[i]].id));
    if (!j->diff) {
        job_fail(j, "patch_error", "the generator no longer proposes this move: %s", why.msg[0] ? why.msg : "gone");
    } else if (cut_patch_apply(ko->src[j->parent], j->diff, ko->scratch, &j->src, &why) != 0) {
        job_fail(j, "patch_error", "%s", why.msg);
    } else if (cut_kstate_tunables(ko->k, j->src, vals, &why) != 0 || cut_kspec_call(ko->k, vals, &j->call, &why) != 0) {
        job_fail(j, "invalid", "%s", why.msg);
    } else {
        j->runnable = 1;
        cJSON *t = cJSON_AddObjectToObject(c, "tunables");
        for (int i = 0; i < ko->k->ntunables; i++)
            cJSON_AddNumberToObject(t, ko->k->tunables[i].name, (double)vals[i]);
        cJSON *l = cJSON_AddObjectToObject(c, "launch");
        cJSON_AddItemToObject(l, "grid", cJSON_CreateIntArray((const int[]){(int)j->call.grid[0], (int)j->call.grid[1], (int)j->call.grid[2]}, 3));
        cJSON_AddItemToObject(l, "block", cJSON_CreateIntArray((const int[]){(int)j->call.block[0], (int)j->call.block[1], (int)j->call.block[2]}, 3));
        cJSON_AddNumberToObject(l, "smem", j->call.smem);
    }
    char p[1400];
    snprintf(p, sizeof p, "%s/control.json", j->dir);
    if (write_json(p, c, e) != 0 || write_text(j->dir, "candidate.diff", j->diff, e) != 0 ||
        write_text(j->dir, "kernel.cu", j->src ? j->src : "", e) != 0)
        return -1;
    cut_ks_launch l;
    memset(&l, 0, sizeof l);
    if (j->runnable && cut_kspec_resolve(ko->k, vals, &l, &why) == 0) {
        j->key = cut_kstate_key(j->src, &l);
        /* the same source and launch as a known state (a tunable moved back, two moves in either order): a
         * transposition found without building anything, so it does not count against the budget */
        j->same_as = cut_mcgs_find_key(&ko->g, j->key);
        if (j->same_as >= 0) {
            j->runnable = 0;
            snprintf(j->status_name, sizeof j->status_name, "transposition");
            snprintf(j->error, sizeof j->error, "same source and launch as %s", ko->g.nodes[j->same_as].id);
            return write_text(j->dir, "stdout.log", "", e);
        }
    }
    ko->builds++;
    j->compiled = 1;
    j->launch = l;
    return j->runnable ? 0 : write_text(j->dir, "stdout.log", "", e);
}

/* After the round's compile: the log, the PTX key, a transposition by PTX; job j is then ready to measure. */
static int after_compile(kopt *ko, job *j, cut_err *e)
{
    cut_buf log;
    cut_buf_init(&log);
    cut_buf_printf(&log, "NVRTC sm_%d%d%s: %s in %.0f ms\n%s", ko->copts.sm_major, ko->copts.sm_minor,
                   j->bin.cache_hit ? " (cache hit)" : "", j->bin.ok ? "compiled" : "failed", j->bin.compile_ms,
                   j->bin.log ? j->bin.log : "");
    cut_buf_append(&log, "", 1);
    int rc = write_text(j->dir, "stdout.log", log.data, e);
    cut_buf_free(&log);
    if (rc != 0)
        return -1;
    if (!j->bin.ok) {
        job_fail(j, "compile_error", "%s", "NVRTC rejected the variant (stdout.log has its log)");
        return 0;
    }
    j->ptx = cut_kstate_ptx_key(j->bin.ptx, &j->launch);
    if (write_text(j->dir, "kernel.ptx", j->bin.ptx, e) != 0)
        return -1;
    j->same_as = cut_mcgs_find_ptx(&ko->g, j->ptx);
    if (j->same_as >= 0) {
        j->runnable = 0;
        snprintf(j->status_name, sizeof j->status_name, "transposition");
        snprintf(j->error, sizeof j->error, "same normalised PTX and launch as %s", ko->g.nodes[j->same_as].id);
    }
    j->call.src = j->src;
    j->call.bin = &j->bin;
    return 0;
}

/* Compiles the round's runnable jobs together (NVRTC on the compile pool's threads), then finishes each. */
static int compile_jobs(kopt *ko, job *jobs, int n, cut_err *e)
{
    const char *srcs[16];
    int idx[16], k = 0;
    for (int i = 0; i < n; i++)
        if (jobs[i].runnable) {
            srcs[k] = jobs[i].src;
            idx[k++] = i;
        }
    if (k == 0)
        return 0;
    cut_compiled bins[16];
    if (cut_compile_batch(srcs, k, &ko->copts, bins, e) != 0) {
        for (int i = 0; i < k; i++)
            cut_compiled_free(&bins[i]);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < k; i++) {
        jobs[idx[i]].bin = bins[i]; /* the job owns it now */
        if (rc == 0)
            rc = after_compile(ko, &jobs[idx[i]], e);
    }
    return rc;
}

typedef struct run_arg {
    kopt *ko;
    job *j;
    cut_err e;
    int rc;
} run_arg;

static void *run_thread(void *arg)
{
    run_arg *a = arg;
    cut_runner *r = a->ko->runners[a->j->runner];
    a->rc = r->run_kernel(r, &a->j->call, &a->j->res, NULL, &a->e);
    return NULL;
}

/* Measures the runnable jobs, each on its own runner, in parallel. */
static int measure_jobs(kopt *ko, job *jobs, int n, cut_err *e)
{
    run_arg args[16];
    pthread_t th[16];
    int started[16] = {0}, k = 0;
    for (int i = 0; i < n; i++) {
        if (!jobs[i].runnable)
            continue;
        jobs[i].runner = k;
        args[k] = (run_arg){ko, &jobs[i], {{0}}, 0};
        started[k] = pthread_create(&th[k], NULL, run_thread, &args[k]) == 0;
        if (!started[k])
            run_thread(&args[k]);
        k++;
    }
    int rc = 0;
    for (int i = 0; i < k; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        if (args[i].rc != 0 && rc == 0) {
            *e = args[i].e;
            rc = -1;
        }
    }
    return rc;
}

/* ---- results into the graph ---- */

/* The outcome of one finished variant, from a live job or from disk on resume. */
typedef struct outcome {
    char id[32];
    int parent;
    char label[160];
    int path[MAX_PATH_LEN], plen;
    char status[32];
    char error[512];
    double ms;
    uint64_t key, ptx;
    int same_as;
    char *src; /* owned by the node afterwards */
} outcome;

static void trace_line(kopt *ko, const outcome *oc, const cut_edge *ed, double speedup)
{
    if (!ko->trace)
        return;
    fprintf(ko->trace, "- **%s** from %s, %s: %s — ", oc->id, ko->g.nodes[oc->parent].id, cut_move_name(ed->move),
            ed->label);
    if (strcmp(oc->status, "ok") == 0)
        fprintf(ko->trace, "%.4f ms, %.2fx the baseline%s\n", oc->ms, speedup,
                ko->best >= 0 && strcmp(ko->g.nodes[ko->best].id, oc->id) == 0 ? " (new best)" : "");
    else
        fprintf(ko->trace, "%s: %s\n", oc->status, oc->error);
    fflush(ko->trace);
}

static int update_best_link(kopt *ko, cut_err *e)
{
    char link[1200], tmp[1200], target[64];
    snprintf(link, sizeof link, "%s/best", ko->kdir);
    snprintf(tmp, sizeof tmp, "%s/.best.tmp", ko->kdir);
    if (ko->best == 0)
        snprintf(target, sizeof target, "baseline");
    else
        snprintf(target, sizeof target, "variants/%s", ko->g.nodes[ko->best].id);
    unlink(tmp);
    if (symlink(target, tmp) != 0 || rename(tmp, link) != 0)
        return cut_err_set(e, "cannot point %s at %s: %s", link, target, strerror(errno));
    return 0;
}

/* Puts a finished variant into the graph: its node (or the transposition's), the backup along its path, history, the
 * global tactic graph, the trace and the best link. */
static int apply_outcome(kopt *ko, outcome *oc, int live, cut_err *e)
{
    cut_node *pn = &ko->g.nodes[oc->parent];
    int ed = -1;
    for (int i = 0; i < pn->nedges; i++)
        if (strcmp(pn->edges[i].label, oc->label) == 0)
            ed = i;
    if (ed < 0)
        return cut_err_set(e, "variant %s: its parent %s has no move '%s'", oc->id, pn->id, oc->label);
    const int ok = strcmp(oc->status, "ok") == 0, tr = strcmp(oc->status, "transposition") == 0;
    int child;
    if (tr && oc->same_as >= 0) {
        child = oc->same_as;
        free(oc->src);
        ko->transpositions++;
    } else {
        child = add_node(ko, oc->id, oc->src, oc->parent, pn->edges[ed].move, oc->label);
        pn = &ko->g.nodes[oc->parent]; /* add_node may move the array */
        cut_node *c = &ko->g.nodes[child];
        c->status = ok ? CUT_NODE_OK : CUT_NODE_FAILED;
        c->key = oc->key;
        c->ptx_hash = oc->ptx;
        c->depth = pn->depth + 1;
        if (ok) {
            c->ms = oc->ms;
            c->speedup = ko->baseline_ms / oc->ms;
            ko->measured++;
        } else {
            ko->failed++;
        }
    }
    oc->src = NULL;
    pn->edges[ed].child = child;
    const cut_node *c = &ko->g.nodes[child];
    const double speedup = c->status == CUT_NODE_OK ? c->speedup : 0;
    const double value = c->status == CUT_NODE_OK ? cut_mcgs_value(speedup) : 0;
    if (!tr) {
        ko->g.nodes[child].visits++;
        ko->g.nodes[child].value_sum += value;
    }
    if (live)
        cut_mcgs_backup(&ko->g, oc->path, oc->plen, ed, value);
    else /* resumed: no virtual loss was taken */
        for (int i = 0; i < oc->plen; i++) {
            ko->g.nodes[oc->path[i]].visits++;
            ko->g.nodes[oc->path[i]].value_sum += value;
        }
    const double gain = c->status == CUT_NODE_OK ? speedup / pn->speedup - 1.0 : FAIL_GAIN;
    hist_add(ko, pn->edges[ed].move, oc->label, gain);
    if (c->status == CUT_NODE_OK && speedup > ko->g.nodes[ko->best].speedup) {
        ko->best = child;
        if (update_best_link(ko, e) != 0)
            return -1;
    }
    if (live) {
        update_global(ko, ko->via_move[oc->parent], pn->edges[ed].move, oc->label, gain, c->status == CUT_NODE_OK, e);
        trace_line(ko, oc, &pn->edges[ed], speedup);
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "event", "variant");
        cJSON_AddStringToObject(ev, "id", oc->id);
        cJSON_AddStringToObject(ev, "parent", pn->id);
        cJSON_AddStringToObject(ev, "move", cut_move_name(pn->edges[ed].move));
        cJSON_AddStringToObject(ev, "label", oc->label);
        cJSON_AddStringToObject(ev, "status", oc->status);
        if (ok)
            cJSON_AddNumberToObject(ev, "ms", oc->ms);
        cJSON_AddNumberToObject(ev, "speedup", speedup);
        cJSON_AddStringToObject(ev, "node", ko->g.nodes[child].id);
        cJSON_AddStringToObject(ev, "best", ko->g.nodes[ko->best].id);
        event(ko, ev);
        if (!ko->o->quiet) {
            char what[96];
            if (ok)
                snprintf(what, sizeof what, "%.4f ms  %.2fx", oc->ms, speedup);
            else
                snprintf(what, sizeof what, "%.70s", oc->error);
            printf("  %-6s %-24s %-34.34s %-14s %s\n", oc->id, cut_move_name(pn->edges[ed].move), oc->label,
                   oc->status, what);
            fflush(stdout);
        }
    }
    return 0;
}

/* Writes job j's result.json (the variant is finished from then on) and applies it. */
static int finish_job(kopt *ko, job *j, cut_err *e)
{
    outcome oc = {0};
    snprintf(oc.id, sizeof oc.id, "%s", j->id);
    oc.parent = j->parent;
    snprintf(oc.label, sizeof oc.label, "%s", ko->g.nodes[j->parent].edges[j->edge].label);
    memcpy(oc.path, j->path, sizeof oc.path);
    oc.plen = j->plen;
    oc.key = j->key;
    oc.ptx = j->ptx;
    oc.same_as = j->same_as;
    oc.ms = -1;
    if (j->status_name[0]) {
        snprintf(oc.status, sizeof oc.status, "%s", j->status_name);
        snprintf(oc.error, sizeof oc.error, "%s", j->error);
    } else {
        snprintf(oc.status, sizeof oc.status, "%s", cut_status_name(j->res.status));
        snprintf(oc.error, sizeof oc.error, "%s", j->res.error);
        if (j->res.status == CUT_ST_OK)
            oc.ms = j->res.median_ms;
    }
    cJSON *r = cJSON_CreateObject();
    char hx[17];
    cJSON_AddStringToObject(r, "id", j->id);
    cJSON_AddStringToObject(r, "status", oc.status);
    cJSON_AddStringToObject(r, "error", oc.error);
    if (oc.ms > 0) {
        cJSON_AddNumberToObject(r, "median_ms", oc.ms);
        cJSON_AddNumberToObject(r, "min_ms", j->res.min_ms);
        cJSON_AddNumberToObject(r, "max_ms", j->res.max_ms);
        cJSON_AddNumberToObject(r, "repeats", j->res.repeats);
        cJSON_AddNumberToObject(r, "max_abs_err", j->res.max_abs_err);
        cJSON_AddNumberToObject(r, "speedup", ko->baseline_ms / oc.ms);
    }
    if (j->runnable) /* which worker measured it: the GPU of --gpus */
        cJSON_AddNumberToObject(r, "worker", ko->o->gpus ? ko->o->gpus[j->runner] : j->runner);
    if (j->same_as >= 0)
        cJSON_AddStringToObject(r, "same_as", ko->g.nodes[j->same_as].id);
    hex64(j->key, hx);
    cJSON_AddStringToObject(r, "state_key", hx);
    hex64(j->ptx, hx);
    cJSON_AddStringToObject(r, "ptx_hash", hx);
    if (j->bin.ok) {
        cJSON_AddNumberToObject(r, "regs", j->bin.regs);
        cJSON_AddNumberToObject(r, "spill_stores", j->bin.spill_stores);
    }
    char path[1400];
    snprintf(path, sizeof path, "%s/result.json", j->dir);
    if (write_text(j->dir, "stderr.log", j->runnable ? j->res.error : j->error, e) != 0)
        return -1;
    cJSON_AddBoolToObject(r, "compiled", j->compiled);
    if (write_json(path, r, e) != 0)
        return -1;
    oc.src = j->src;
    j->src = NULL;
    return apply_outcome(ko, &oc, 1, e);
}

/* ---- the state file ---- */

static int save_state(kopt *ko, cut_err *e)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "format", STATE_FORMAT);
    cJSON_AddStringToObject(s, "kernel", ko->k->name);
    cJSON_AddNumberToObject(s, "baseline_ms", ko->baseline_ms);
    cJSON_AddNumberToObject(s, "builds", ko->builds);
    cJSON_AddNumberToObject(s, "next_id", ko->next_id);
    cJSON_AddNumberToObject(s, "measured", ko->measured);
    cJSON_AddNumberToObject(s, "failed", ko->failed);
    cJSON_AddNumberToObject(s, "transpositions", ko->transpositions);
    cJSON_AddStringToObject(s, "best", ko->g.nodes[ko->best].id);
    cJSON_AddNumberToObject(s, "noise_applied", ko->g.noise_applied);
    cJSON_AddNumberToObject(s, "prune_threshold", ko->threshold);
    cJSON *rng = cJSON_AddArrayToObject(s, "rng");
    for (int i = 0; i < 4; i++) {
        char hx[17];
        hex64(ko->g.rng.s[i], hx);
        cJSON_AddItemToArray(rng, cJSON_CreateString(hx));
    }
    cJSON *nodes = cJSON_AddArrayToObject(s, "nodes");
    for (int i = 0; i < ko->g.nnodes; i++) {
        const cut_node *n = &ko->g.nodes[i];
        cJSON *o = cJSON_CreateObject();
        char hx[17];
        cJSON_AddStringToObject(o, "id", n->id);
        cJSON_AddStringToObject(o, "status", n->status == CUT_NODE_OK ? "ok" : "failed");
        cJSON_AddStringToObject(o, "parent", i ? ko->g.nodes[ko->parent[i]].id : "");
        cJSON_AddStringToObject(o, "via", ko->via[i]);
        cJSON_AddStringToObject(o, "via_move", ko->via_move[i] >= 0 ? cut_move_name((cut_move)ko->via_move[i]) : "");
        hex64(n->key, hx);
        cJSON_AddStringToObject(o, "key", hx);
        hex64(n->ptx_hash, hx);
        cJSON_AddStringToObject(o, "ptx_hash", hx);
        cJSON_AddNumberToObject(o, "ms", n->ms);
        cJSON_AddNumberToObject(o, "speedup", n->speedup);
        cJSON_AddNumberToObject(o, "visits", n->visits);
        cJSON_AddNumberToObject(o, "value_sum", n->value_sum);
        cJSON_AddNumberToObject(o, "depth", n->depth);
        cJSON_AddBoolToObject(o, "edges_ready", n->edges_ready);
        cJSON *edges = cJSON_AddArrayToObject(o, "edges");
        for (int k = 0; k < n->nedges; k++) {
            const cut_edge *ed = &n->edges[k];
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "move", cut_move_name(ed->move));
            cJSON_AddStringToObject(x, "label", ed->label);
            cJSON_AddNumberToObject(x, "prior", ed->prior);
            cJSON_AddNumberToObject(x, "pred_gain", ed->pred_gain);
            cJSON_AddNumberToObject(x, "rule_gain", ed->rule_gain);
            char hk[17];
            hex64(ed->key, hk);
            cJSON_AddStringToObject(x, "key", hk);
            cJSON_AddBoolToObject(x, "pruned", ed->pruned);
            cJSON_AddNumberToObject(x, "visits", ed->visits);
            if (ed->child >= 0)
                cJSON_AddStringToObject(x, "child", ko->g.nodes[ed->child].id);
            else
                cJSON_AddNullToObject(x, "child");
            cJSON_AddItemToArray(edges, x);
        }
        cJSON_AddItemToArray(nodes, o);
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/search_state.json", ko->kdir);
    return write_json(path, s, e);
}

static char *read_src(const kopt *ko, const char *id, cut_err *e)
{
    if (ko->no_disk) /* cut_opt_state_check: the graph only */
        return cut_xstrdup("");
    char path[1400];
    if (strcmp(id, "baseline") == 0)
        snprintf(path, sizeof path, "%s/baseline/kernel.cu", ko->kdir);
    else
        snprintf(path, sizeof path, "%s/variants/%s/kernel.cu", ko->kdir, id);
    char *text = NULL;
    size_t len = 0;
    return cut_read_file(path, &text, &len, e) == 0 ? text : NULL;
}

static int state_from_json(kopt *ko, const cJSON *s, const char *path, cut_err *e);

static int load_state(kopt *ko, cut_err *e)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/search_state.json", ko->kdir);
    cJSON *s = read_json(path, e);
    if (!s)
        return -1;
    const int rc = state_from_json(ko, s, path, e);
    cJSON_Delete(s);
    return rc;
}

/* The graph, counters and rng of a parsed state file (path names it in messages). */
static int state_from_json(kopt *ko, const cJSON *s, const char *path, cut_err *e)
{
    int rc = -1;
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(s, "nodes"), *o;
    if (inum(s, "format", 0) != STATE_FORMAT || !cJSON_IsArray(nodes) || cJSON_GetArraySize(nodes) < 1) {
        cut_err_set(e, "%s: not a search state of this version", path);
        goto out;
    }
    ko->baseline_ms = num(s, "baseline_ms", -1);
    ko->builds = inum(s, "builds", 0);
    ko->next_id = inum(s, "next_id", 0);
    ko->measured = inum(s, "measured", 0);
    ko->failed = inum(s, "failed", 0);
    ko->transpositions = inum(s, "transpositions", 0);
    ko->g.noise_applied = inum(s, "noise_applied", 0);
    ko->threshold = num(s, "prune_threshold", ko->threshold);
    const cJSON *rng = cJSON_GetObjectItemCaseSensitive(s, "rng");
    uint64_t any = 0;
    for (int i = 0; i < 4 && cJSON_GetArraySize(rng) == 4; i++)
        any |= ko->g.rng.s[i] = parse_hex(cJSON_GetArrayItem(rng, i));
    if (!any) /* missing or all zero: xoshiro would be stuck at zero */
        cut_rng_seed(&ko->g.rng, ko->o->seed);
    cJSON_ArrayForEach(o, nodes) {
        char *src = read_src(ko, str(o, "id"), e);
        if (!src)
            goto out;
        const int n = add_node(ko, str(o, "id"), src, 0, cut_move_parse(str(o, "via_move")), str(o, "via"));
        cut_node *nd = &ko->g.nodes[n];
        nd->status = strcmp(str(o, "status"), "ok") == 0 ? CUT_NODE_OK : CUT_NODE_FAILED;
        nd->key = parse_hex(cJSON_GetObjectItemCaseSensitive(o, "key"));
        nd->ptx_hash = parse_hex(cJSON_GetObjectItemCaseSensitive(o, "ptx_hash"));
        nd->ms = num(o, "ms", -1);
        nd->speedup = num(o, "speedup", -1);
        nd->visits = inum(o, "visits", 0);
        nd->value_sum = num(o, "value_sum", 0);
        nd->depth = inum(o, "depth", 0);
    }
    int i = 0;
    cJSON_ArrayForEach(o, nodes) {
        cut_node *nd = &ko->g.nodes[i];
        const int p = cut_mcgs_find_id(&ko->g, str(o, "parent"));
        ko->parent[i] = p >= 0 ? p : 0;
        const cJSON *edges = cJSON_GetObjectItemCaseSensitive(o, "edges"), *x;
        nd->edges_ready = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "edges_ready"));
        nd->nedges = cJSON_GetArraySize(edges);
        nd->edges = cut_xcalloc((size_t)(nd->nedges ? nd->nedges : 1), sizeof *nd->edges);
        int k = 0;
        cJSON_ArrayForEach(x, edges) {
            cut_edge *ed = &nd->edges[k++];
            const int m = cut_move_parse(str(x, "move"));
            ed->move = m >= 0 ? (cut_move)m : CUT_MV_BLOCK_SIZES;
            snprintf(ed->label, sizeof ed->label, "%s", str(x, "label"));
            ed->prior = num(x, "prior", 0);
            ed->pred_gain = num(x, "pred_gain", 0);
            ed->rule_gain = num(x, "rule_gain", ed->pred_gain);
            ed->key = parse_hex(cJSON_GetObjectItemCaseSensitive(x, "key"));
            ed->pruned = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "pruned"));
            ed->visits = inum(x, "visits", 0);
            const char *cid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "child"));
            ed->child = cid ? cut_mcgs_find_id(&ko->g, cid) : -1;
        }
        i++;
    }
    ko->best = cut_mcgs_find_id(&ko->g, str(s, "best"));
    if (ko->best < 0)
        ko->best = 0;
    rc = 0;
out:
    return rc;
}

/* Takes in finished variants the state file does not know (killed after result.json, before the state was saved)
 * and removes unfinished variant folders. */
static int reconcile(kopt *ko, cut_err *e)
{
    char vdir[1200];
    snprintf(vdir, sizeof vdir, "%s/variants", ko->kdir);
    DIR *d = opendir(vdir);
    if (!d)
        return 0;
    struct dirent *de;
    char names[1024][32];
    int n = 0;
    while ((de = readdir(d)) && n < 1024)
        if (de->d_name[0] == 'v' && strlen(de->d_name) < 32)
            snprintf(names[n++], 32, "%s", de->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    int taken = 0, dropped = 0;
    for (int i = 0; i < n; i++) {
        const int id_num = atoi(names[i] + 1);
        if (cut_mcgs_find_id(&ko->g, names[i]) >= 0) {
            ko->next_id = id_num > ko->next_id ? id_num : ko->next_id;
            continue;
        }
        char dir[1300], rpath[1400], cpath[1400];
        snprintf(dir, sizeof dir, "%s/%s", vdir, names[i]);
        snprintf(rpath, sizeof rpath, "%s/result.json", dir);
        snprintf(cpath, sizeof cpath, "%s/control.json", dir);
        cJSON *r = cut_path_exists(rpath) ? read_json(rpath, e) : NULL;
        cJSON *c = r ? read_json(cpath, e) : NULL;
        int known_transposition = 0;
        for (int k = 0; r && k < ko->g.nnodes; k++) /* a transposition leaves no node: look for its edge */
            for (int x = 0; x < ko->g.nodes[k].nedges; x++)
                known_transposition |= strcmp(str(c, "parent"), ko->g.nodes[k].id) == 0 &&
                                       strcmp(ko->g.nodes[k].edges[x].label, str(c, "label")) == 0 &&
                                       ko->g.nodes[k].edges[x].child >= 0;
        if (!r || !c) {
            cut_err re;
            if (cut_remove_tree(dir, NULL, &re) != 0 && !ko->o->quiet)
                fprintf(stderr, "cutune optimize: warning: unfinished variant %s: %s\n", names[i], re.msg);
            dropped++;
        } else if (known_transposition) {
            ko->next_id = id_num > ko->next_id ? id_num : ko->next_id;
        } else {
            ko->next_id = id_num > ko->next_id ? id_num : ko->next_id;
            outcome oc = {0};
            snprintf(oc.id, sizeof oc.id, "%s", names[i]);
            oc.parent = cut_mcgs_find_id(&ko->g, str(c, "parent"));
            snprintf(oc.label, sizeof oc.label, "%s", str(c, "label"));
            snprintf(oc.status, sizeof oc.status, "%s", str(r, "status"));
            snprintf(oc.error, sizeof oc.error, "%s", str(r, "error"));
            oc.ms = num(r, "median_ms", -1);
            oc.key = parse_hex(cJSON_GetObjectItemCaseSensitive(r, "state_key"));
            oc.ptx = parse_hex(cJSON_GetObjectItemCaseSensitive(r, "ptx_hash"));
            oc.same_as = cut_mcgs_find_id(&ko->g, str(r, "same_as"));
            const cJSON *p, *path = cJSON_GetObjectItemCaseSensitive(c, "path");
            cJSON_ArrayForEach(p, path) if (oc.plen < MAX_PATH_LEN) oc.path[oc.plen++] =
                cut_mcgs_find_id(&ko->g, cJSON_GetStringValue(p) ? p->valuestring : "");
            int bad = oc.parent < 0;
            for (int k = 0; k < oc.plen; k++)
                bad |= oc.path[k] < 0;
            if (!bad && !ko->g.nodes[oc.parent].edges_ready && gen_edges(ko, oc.parent, e) != 0)
                bad = 1;
            if (!bad) {
                oc.src = read_src(ko, names[i], e);
                bad = apply_outcome(ko, &oc, 0, e) != 0;
                free(oc.src);
            }
            if (bad && !ko->o->quiet)
                fprintf(stderr, "cutune optimize: warning: variant %s could not be taken into the graph: %s\n",
                        names[i], e->msg);
            taken += !bad;
            ko->builds += !bad && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "compiled"));
        }
        cJSON_Delete(r);
        cJSON_Delete(c);
    }
    if ((taken || dropped) && !ko->o->quiet)
        printf("  resume: %d finished variant(s) taken in from disk, %d unfinished removed\n", taken, dropped);
    return 0;
}

/* ---- the baseline ---- */

static int ref_path(const kopt *ko, int b, int s, char *buf, size_t n)
{
    return snprintf(buf, n, "%s/baseline/ref_%s_%d.bin", ko->kdir, ko->work.bufs[b].name, s);
}

/* Points every output of the work at its references and prepares every runner. */
static int prepare_runners(kopt *ko, cut_err *e)
{
    for (int b = 0; b < ko->work.nbufs; b++)
        for (int s = 0; s < 2 && ko->work.bufs[b].is_output; s++)
            ko->work.bufs[b].data[s] = ko->refs[b][s];
    for (int i = 0; i < ko->nr; i++)
        if (ko->runners[i]->prepare_kernel(ko->runners[i], &ko->work, e) != 0)
            return -1;
    return 0;
}

static int load_refs(kopt *ko, cut_err *e)
{
    for (int b = 0; b < ko->work.nbufs; b++)
        for (int s = 0; s < 2 && ko->work.bufs[b].is_output; s++) {
            char path[1400];
            ref_path(ko, b, s, path, sizeof path);
            size_t len = 0;
            char *data = NULL;
            if (cut_read_file(path, &data, &len, e) != 0)
                return cut_err_wrap(e, "the baseline's reference output");
            if (len != ko->work.bufs[b].elems * cut_ks_dtype_size(ko->work.bufs[b].dtype)) {
                free(data);
                return cut_err_set(e, "%s: %zu bytes, the spec's output needs %zu", path, len,
                                   ko->work.bufs[b].elems * cut_ks_dtype_size(ko->work.bufs[b].dtype));
            }
            ko->refs[b][s] = data;
        }
    return prepare_runners(ko, e);
}

static void write_run_result(cJSON *r, const cut_result *res)
{
    cJSON_AddStringToObject(r, "status", cut_status_name(res->status));
    cJSON_AddStringToObject(r, "error", res->error);
    cJSON_AddNumberToObject(r, "median_ms", res->median_ms);
    cJSON_AddNumberToObject(r, "min_ms", res->min_ms);
    cJSON_AddNumberToObject(r, "max_ms", res->max_ms);
    cJSON_AddNumberToObject(r, "repeats", res->repeats);
    cJSON_AddNumberToObject(r, "max_abs_err", res->max_abs_err); /* against the references (0 for its own outputs) */
}

/* The call whose outputs become the references: the baseline's, or the spec's reference kernel (materialised with
 * the baseline's tunables, compiled into ref_bin, written to dir/reference.cu) with the baseline's launch. */
static int capture_call(kopt *ko, const char *dir, const cut_kcall *call, cut_kcall *ref, cut_compiled *ref_bin,
                        cut_err *e)
{
    *ref = *call;
    if (!ko->k->ref_source)
        return 0;
    char *src = cut_kstate_materialise_src(ko->k, NULL, ko->k->ref_source);
    ref->src = src;
    snprintf(ref->entry, sizeof ref->entry, "%s", ko->k->ref_entry);
    if (write_text(dir, "reference.cu", src, e) != 0 ||
        cut_compile_one(src, "reference.cu", &ko->copts, ref_bin, e) != 0)
        return -1;
    if (!ref_bin->ok)
        return cut_err_set(e, "the reference kernel does not compile with NVRTC: %.300s", ref_bin->log);
    ref->bin = ref_bin;
    return 0;
}

/* Builds and runs the baseline: a capture run of the baseline (or of the spec's reference kernel) gives the references
 * (saved), a second run checks the baseline against them (a nondeterministic baseline, or one that disagrees with the
 * reference, fails here) and gives its time. */
static int run_baseline(kopt *ko, cut_err *e)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/baseline", ko->kdir);
    if (cut_mkdirs(dir, e) != 0)
        return -1;
    char *src = cut_kstate_materialise(ko->k, NULL);
    cut_kcall call, ref;
    cut_compiled bin, ref_bin;
    memset(&ref, 0, sizeof ref);
    memset(&bin, 0, sizeof bin);
    memset(&ref_bin, 0, sizeof ref_bin);
    int rc = -1;
    if (cut_kspec_call(ko->k, NULL, &call, e) != 0 || write_text(dir, "kernel.cu", src, e) != 0)
        goto out;
    if (cut_compile_one(src, "kernel.cu", &ko->copts, &bin, e) != 0)
        goto out;
    write_text(dir, "stdout.log", bin.log, e);
    if (!bin.ok) {
        cut_err_set(e, "the baseline does not compile with NVRTC (%s/stdout.log has the log)", dir);
        goto out;
    }
    write_text(dir, "kernel.ptx", bin.ptx, e);
    call.src = src;
    call.bin = &bin;
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "kernel", ko->k->name);
    cJSON_AddStringToObject(c, "id", "baseline");
    cJSON_AddItemToObject(c, "grid", cJSON_CreateIntArray((const int[]){(int)call.grid[0], (int)call.grid[1], (int)call.grid[2]}, 3));
    cJSON_AddItemToObject(c, "block", cJSON_CreateIntArray((const int[]){(int)call.block[0], (int)call.block[1], (int)call.block[2]}, 3));
    cJSON_AddNumberToObject(c, "smem", call.smem);
    char path[1400];
    snprintf(path, sizeof path, "%s/control.json", dir);
    if (write_json(path, c, e) != 0)
        goto out;
    cut_runner *r = ko->runners[0];
    for (int b = 0; b < ko->work.nbufs; b++)
        ko->work.bufs[b].data[0] = ko->work.bufs[b].is_output ? NULL : ko->work.bufs[b].data[0],
        ko->work.bufs[b].data[1] = ko->work.bufs[b].is_output ? NULL : ko->work.bufs[b].data[1];
    cut_result res;
    cut_kw_outputs outs;
    memset(&outs, 0, sizeof outs);
    if (capture_call(ko, dir, &call, &ref, &ref_bin, e) != 0 || r->prepare_kernel(r, &ko->work, e) != 0 ||
        r->run_kernel(r, &ref, &res, &outs, e) != 0)
        goto out;
    if (res.status != CUT_ST_OK) {
        write_text(dir, "stderr.log", res.error, e);
        cut_err_set(e, "the %s failed its capture run: %s: %s", ko->k->ref_source ? "reference kernel" : "baseline",
                    cut_status_name(res.status), res.error);
        cut_kw_outputs_free(&outs);
        goto out;
    }
    for (int b = 0; b < ko->work.nbufs; b++)
        for (int s = 0; s < 2 && ko->work.bufs[b].is_output; s++) {
            ko->refs[b][s] = outs.data[b][s];
            outs.data[b][s] = NULL;
            ref_path(ko, b, s, path, sizeof path);
            if (cut_write_file_atomic(path, ko->refs[b][s], ko->work.bufs[b].elems * cut_ks_dtype_size(ko->work.bufs[b].dtype), e) != 0)
                goto out;
        }
    if (prepare_runners(ko, e) != 0 || r->run_kernel(r, &call, &res, NULL, e) != 0)
        goto out;
    write_text(dir, "stderr.log", res.error, e);
    cJSON *j = cJSON_CreateObject();
    write_run_result(j, &res);
    char hx[17];
    cut_ks_launch l;
    if (cut_kspec_resolve(ko->k, NULL, &l, e) != 0)
        goto out;
    hex64(cut_kstate_ptx_key(bin.ptx, &l), hx);
    cJSON_AddStringToObject(j, "ptx_hash", hx);
    /* what every variant is checked against */
    cJSON_AddStringToObject(j, "references", ko->k->ref_source ? ko->k->ref_entry : "baseline");
    snprintf(path, sizeof path, "%s/result.json", dir);
    if (write_json(path, j, e) != 0)
        goto out;
    if (res.status != CUT_ST_OK) {
        if (ko->k->ref_source)
            cut_err_set(e, "the baseline does not match the reference kernel (%s: %s)", cut_status_name(res.status),
                        res.error);
        else
            cut_err_set(e, "the baseline does not reproduce its own output (%s: %s): is it nondeterministic, or the "
                           "tolerance too tight?", cut_status_name(res.status), res.error);
        goto out;
    }
    ko->baseline_ms = res.median_ms;
    const int root = add_node(ko, "baseline", src, 0, -1, "");
    src = NULL;
    cut_node *n = &ko->g.nodes[root];
    n->status = CUT_NODE_OK;
    n->ms = res.median_ms;
    n->speedup = 1.0;
    n->ptx_hash = cut_kstate_ptx_key(bin.ptx, &l);
    n->key = cut_kstate_key(ko->src[root], &l);
    n->visits = 1;
    n->value_sum = cut_mcgs_value(1.0);
    ko->best = 0;
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "baseline");
    cJSON_AddNumberToObject(ev, "ms", res.median_ms);
    event(ko, ev);
    rc = update_best_link(ko, e);
out:
    free(src);
    free((char *)(ko->k->ref_source ? ref.src : NULL));
    cut_compiled_free(&bin);
    cut_compiled_free(&ref_bin);
    return rc;
}

/* ---- the search loop ---- */

/* Edge ed of node leads to a state the graph has (same source and launch): the edge points at that node, which is
 * backed up along the path with its own mean value. Nothing is built. */
static void link_transposition(kopt *ko, int node, int edge, int known, const int *path, int plen)
{
    cut_node *pn = &ko->g.nodes[node];
    cut_edge *ed = &pn->edges[edge];
    ed->child = known;
    const cut_node *t = &ko->g.nodes[known];
    const double value = t->visits > 0 ? t->value_sum / t->visits : cut_mcgs_value(t->speedup);
    cut_mcgs_backup(&ko->g, path, plen, edge, value);
    hist_add(ko, ed->move, ed->label, t->speedup / pn->speedup - 1.0);
    ko->transpositions++;
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "transposition");
    cJSON_AddStringToObject(ev, "parent", pn->id);
    cJSON_AddStringToObject(ev, "move", cut_move_name(ed->move));
    cJSON_AddStringToObject(ev, "label", ed->label);
    cJSON_AddStringToObject(ev, "node", t->id);
    event(ko, ev);
    if (ko->trace)
        fprintf(ko->trace, "- %s, %s: %s — the state of %s (transposition, nothing built)\n", pn->id,
                cut_move_name(ed->move), ed->label, t->id);
}

/* Selects up to max jobs (distinct edges, virtual losses along their paths). */
static int select_jobs(kopt *ko, job *jobs, int max, cut_err *e)
{
    int n = 0;
    while (n < max) {
        job *j = &jobs[n];
        memset(j, 0, sizeof *j);
        int node, edge;
        if (cut_mcgs_select(&ko->g, &node, &edge, j->path, &j->plen, MAX_PATH_LEN) != 0)
            break;
        if (edge < 0) {
            if (gen_edges(ko, node, e) != 0)
                return -1;
            continue;
        }
        cut_edge *ed = &ko->g.nodes[node].edges[edge];
        const int known = ed->key ? cut_mcgs_find_key(&ko->g, ed->key) : -1;
        if (known >= 0) {
            link_transposition(ko, node, edge, known, j->path, j->plen);
            continue;
        }
        j->parent = node;
        j->edge = edge;
        n++;
    }
    return n;
}

static void job_free(job *j)
{
    free(j->diff);
    free(j->src);
    cut_compiled_free(&j->bin);
    j->diff = j->src = NULL;
}

/* Nothing is left above the prune threshold: lowers it by RELAX_STEP (predicted gains refreshed from the history
 * since the edges were made) until some pruned edge opens, so the budget is spent on the next most promising moves
 * rather than left unused; never below RELAX_FLOOR. Returns the edges opened (0: none left worth building). */
static int relax_pruning(kopt *ko)
{
    int pruned = 0;
    for (int i = 0; i < ko->g.nnodes; i++)
        for (int k = 0; k < ko->g.nodes[i].nedges; k++)
            pruned += ko->g.nodes[i].status == CUT_NODE_OK && ko->g.nodes[i].edges[k].pruned &&
                      ko->g.nodes[i].edges[k].child == -1;
    int opened = 0;
    while (pruned && !opened && ko->threshold - RELAX_STEP >= RELAX_FLOOR - 1e-9) {
        ko->threshold -= RELAX_STEP;
        for (int i = 0; i < ko->g.nnodes; i++)
            for (int k = 0; k < ko->g.nodes[i].nedges; k++) {
                cut_edge *ed = &ko->g.nodes[i].edges[k];
                if (ko->g.nodes[i].status != CUT_NODE_OK || !ed->pruned || ed->child != -1)
                    continue;
                char key[96];
                hist_key(ed->label, key, sizeof key);
                const hist *h = hist_get(ko, ed->move, key);
                ed->pred_gain = cut_mcgs_pred_gain(ed->rule_gain, h ? h->sum : 0, h ? h->n : 0);
                if (ed->pred_gain >= ko->threshold) {
                    ed->pruned = 0;
                    ed->prior = 0.5 * fmax(ed->pred_gain - ko->threshold, 0.01); /* behind the first-round edges */
                    opened++;
                }
            }
    }
    if (!opened)
        return 0;
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "relax_pruning");
    cJSON_AddNumberToObject(ev, "threshold", ko->threshold);
    cJSON_AddNumberToObject(ev, "opened", opened);
    event(ko, ev);
    if (ko->trace)
        fprintf(ko->trace, "- *every open move tried: prune threshold lowered to %.3f, %d move(s) reopened*\n",
                ko->threshold, opened);
    if (!ko->o->quiet)
        printf("  every open move tried: prune threshold lowered to %.3f, %d move(s) reopened\n", ko->threshold,
               opened);
    return opened;
}

static int search(kopt *ko, cut_err *e)
{
    job jobs[16];
    while (ko->builds < ko->o->budget_builds) {
        int want = ko->nr < (int)CUT_ARRAY_LEN(jobs) ? ko->nr : (int)CUT_ARRAY_LEN(jobs);
        if (want > ko->o->budget_builds - ko->builds)
            want = ko->o->budget_builds - ko->builds;
        const int n = select_jobs(ko, jobs, want, e);
        if (n < 0)
            return -1;
        if (n == 0) {
            if (relax_pruning(ko) > 0)
                continue;
            if (!ko->o->quiet)
                printf("  nothing left to expand: every move of every state was tried or is predicted to lose over "
                       "%.0f%%\n", -100 * RELAX_FLOOR);
            break;
        }
        int rc = 0;
        for (int i = 0; i < n && rc == 0; i++)
            rc = build(ko, &jobs[i], e);
        if (rc == 0)
            rc = compile_jobs(ko, jobs, n, e);
        if (rc == 0)
            rc = measure_jobs(ko, jobs, n, e);
        for (int i = 0; i < n && rc == 0; i++)
            rc = finish_job(ko, &jobs[i], e);
        for (int i = 0; i < n; i++)
            job_free(&jobs[i]);
        if (rc != 0 || save_state(ko, e) != 0)
            return -1;
    }
    return 0;
}

/* ---- entry ---- */

static void summarise(const kopt *ko, cut_opt_summary *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", ko->k->name);
    const cut_node *b = &ko->g.nodes[ko->best];
    s->baseline_ms = ko->baseline_ms;
    s->best_ms = b->ms;
    s->speedup = b->speedup;
    s->builds = ko->builds;
    s->measured = ko->measured;
    s->failed = ko->failed;
    s->transpositions = ko->transpositions;
    snprintf(s->best_id, sizeof s->best_id, "%s", b->id);
    int chain[CUT_OPT_MAX_MOVES], n = 0;
    for (int i = ko->best; i > 0 && n < CUT_OPT_MAX_MOVES; i = ko->parent[i])
        chain[n++] = i;
    for (int i = n - 1; i >= 0; i--)
        snprintf(s->best_moves[s->nbest_moves++], sizeof s->best_moves[0], "%s",
                 cut_move_name((cut_move)ko->via_move[chain[i]]));
}

static void kopt_free(kopt *ko)
{
    for (int i = 0; i < ko->g.nnodes; i++)
        free(ko->src[i]);
    free(ko->src);
    free(ko->parent);
    free(ko->via);
    free(ko->via_move);
    cut_mcgs_free(&ko->g);
    for (int b = 0; b < CUT_KW_MAX_BUFS; b++)
        for (int s = 0; s < 2; s++) {
            free(ko->refs[b][s]);
            if (b < ko->work.nbufs && ko->work.bufs[b].is_output)
                ko->work.bufs[b].data[s] = NULL;
        }
    cut_kspec_work_free(&ko->work);
    if (ko->events)
        fclose(ko->events);
    if (ko->trace)
        fclose(ko->trace);
}

static int open_logs(kopt *ko, int fresh, cut_err *e)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/events.jsonl", ko->kdir);
    ko->events = fopen(path, "a");
    snprintf(path, sizeof path, "%s/trace.md", ko->kdir);
    ko->trace = fopen(path, "a");
    if (!ko->events || !ko->trace)
        return cut_err_set(e, "cannot open %s/events.jsonl or trace.md: %s", ko->kdir, strerror(errno));
    if (fresh)
        fprintf(ko->trace, "# %s: MCGS trace\n\nEach line: variant, the state it came from, move and what it did, "
                           "outcome.\n\n", ko->k->name);
    else
        fprintf(ko->trace, "\n*resumed*\n\n");
    return 0;
}

int cut_optimize_kernel(const cut_opt_opts *o, const cut_kspec *k, cut_runner **runners, int nrunners,
                        cut_cand_gen *gen, cut_opt_summary *out, cut_err *e)
{
    for (int i = 0; i < nrunners; i++)
        if (!runners[i]->prepare_kernel || !runners[i]->run_kernel)
            return cut_err_set(e, "runner %d cannot run user kernels", i);
    kopt ko;
    memset(&ko, 0, sizeof ko);
    ko.o = o;
    ko.k = k;
    ko.runners = runners;
    ko.nr = nrunners;
    ko.gen = gen;
    cut_mcgs_init(&ko.g, o->seed);
    ko.threshold = o->min_pred_gain;
    cut_compile_opts_default(&ko.copts);
    ko.copts.sm_major = o->sm_major;
    ko.copts.sm_minor = o->sm_minor;
    ko.copts.cache_dir = o->compile_cache ? o->compile_cache : CUT_OPT_COMPILE_CACHE;
    ko.copts.want_ptx = 1;
    snprintf(ko.kdir, sizeof ko.kdir, "%s/kernels/_%s", o->outdir, k->name);
    snprintf(ko.scratch, sizeof ko.scratch, "%s/.scratch", ko.kdir);
    char state[1200];
    snprintf(state, sizeof state, "%s/search_state.json", ko.kdir);
    const int have_state = cut_path_exists(state);
    int rc = -1;
    if (have_state && !o->resume) {
        cut_err_set(e, "%s holds a search already: pass --resume to continue it, or remove the folder", ko.kdir);
        goto out;
    }
    if (cut_mkdirs(ko.scratch, e) != 0 || cut_kspec_work(k, &ko.work, e) != 0)
        goto out;
    load_global(&ko);
    if (open_logs(&ko, !have_state, e) != 0)
        goto out;
    if (have_state) {
        if (load_state(&ko, e) != 0 || load_refs(&ko, e) != 0 || reconcile(&ko, e) != 0 || save_state(&ko, e) != 0)
            goto out;
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "event", "resume");
        cJSON_AddNumberToObject(ev, "builds", ko.builds);
        event(&ko, ev);
        if (!o->quiet)
            printf("  resumed: %d builds done, best %s (%.2fx)\n", ko.builds, ko.g.nodes[ko.best].id,
                   ko.g.nodes[ko.best].speedup);
    } else {
        if (run_baseline(&ko, e) != 0 || save_state(&ko, e) != 0)
            goto out;
        if (!o->quiet && k->ref_source)
            printf("  baseline %.4f ms, matches the reference kernel %s; variants are checked against it\n",
                   ko.baseline_ms, k->ref_entry);
        else if (!o->quiet)
            printf("  baseline %.4f ms\n", ko.baseline_ms);
    }
    if (search(&ko, e) != 0)
        goto out;
    summarise(&ko, out);
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "done");
    cJSON_AddNumberToObject(ev, "builds", ko.builds);
    cJSON_AddStringToObject(ev, "best", out->best_id);
    cJSON_AddNumberToObject(ev, "speedup", out->speedup);
    event(&ko, ev);
    if (ko.trace)
        fprintf(ko.trace, "\nBest: %s, %.4f ms, %.2fx the baseline (%.4f ms) after %d builds.\n", out->best_id,
                out->best_ms, out->speedup, out->baseline_ms, out->builds);
    rc = 0;
out:
    kopt_free(&ko);
    return rc;
}

int cut_opt_state_check(const char *json, size_t len, cut_err *e)
{
    cut_opt_opts o;
    cut_opt_opts_default(&o);
    kopt ko;
    memset(&ko, 0, sizeof ko);
    ko.o = &o;
    ko.no_disk = 1;
    cut_mcgs_init(&ko.g, o.seed);
    ko.threshold = o.min_pred_gain;
    cJSON *s = cJSON_ParseWithLength(json, len);
    int rc = s ? state_from_json(&ko, s, "search_state.json", e) : cut_err_set(e, "search_state.json: not valid JSON");
    cJSON_Delete(s);
    for (int i = 0; rc == 0 && i < ko.g.nnodes; i++) {
        const cut_node *n = &ko.g.nodes[i];
        for (int k = 0; k < n->nedges; k++)
            if (n->edges[k].child < -1 || n->edges[k].child >= ko.g.nnodes || !memchr(n->edges[k].label, 0, 160))
                rc = cut_err_set(e, "search_state.json: node %s edge %d is inconsistent", n->id, k);
        if (ko.parent[i] < 0 || ko.parent[i] >= ko.g.nnodes)
            rc = cut_err_set(e, "search_state.json: node %s has no parent", n->id);
    }
    if (rc == 0 && (ko.best < 0 || ko.best >= ko.g.nnodes))
        rc = cut_err_set(e, "search_state.json: the best node is not in the graph");
    kopt_free(&ko);
    return rc;
}
