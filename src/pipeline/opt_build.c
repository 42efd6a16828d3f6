/* cutune — the optimizer's variants and baseline: materialise, patch and write a variant, compile a round on the
 * compile pool, measure it on the runners in parallel, write its result.json; the baseline and its references. */
#include "pipeline/optimize_int.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- one variant ---- */

/* The diff of edge ed of node n, regenerated (generators are deterministic for a state). NULL if it is gone. */
static char *edge_diff(kopt *ko, int n, const char *label, cut_err *e)
{
    cut_proposal *p = cut_xcalloc(MAX_PROPOSALS, sizeof *p);
    const int np = cut_cand_gen_propose(ko->gen, ko->k, ko->src[n], ko->scratch, p, MAX_PROPOSALS, e);
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

static void job_fail(job *j, const char *status, const char *fmt, const char *why)
{
    snprintf(j->status_name, sizeof j->status_name, "%s", status);
    snprintf(j->error, sizeof j->error, fmt, why);
    j->runnable = 0;
}

/* Materialises, diffs, patches and writes job j (cut_opt_compile_jobs then compiles it). Errors of the variant are
 * its status; -1 only for disk errors. */
int cut_opt_build(kopt *ko, job *j, cut_err *e)
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
    } else if (!cut_kspec_allows(ko->k, vals, why.msg, sizeof why.msg)) {
        job_fail(j, "invalid", "restriction broken: %s", why.msg); /* never compiled */
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
    if (cut_opt_write_json(p, c, e) != 0 || cut_opt_write_text(j->dir, "candidate.diff", j->diff, e) != 0 ||
        cut_opt_write_text(j->dir, "kernel.cu", j->src ? j->src : "", e) != 0)
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
            return cut_opt_write_text(j->dir, "stdout.log", "", e);
        }
    }
    ko->builds++;
    j->compiled = 1;
    j->launch = l;
    return j->runnable ? 0 : cut_opt_write_text(j->dir, "stdout.log", "", e);
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
    int rc = cut_opt_write_text(j->dir, "stdout.log", log.data, e);
    cut_buf_free(&log);
    if (rc != 0)
        return -1;
    if (!j->bin.ok) {
        job_fail(j, "compile_error", "%s", "NVRTC rejected the variant (stdout.log has its log)");
        return 0;
    }
    j->ptx = cut_kstate_ptx_key(j->bin.ptx, &j->launch);
    if (cut_opt_write_text(j->dir, "kernel.ptx", j->bin.ptx, e) != 0)
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
int cut_opt_compile_jobs(kopt *ko, job *jobs, int n, cut_err *e)
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
int cut_opt_measure_jobs(kopt *ko, job *jobs, int n, cut_err *e)
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

/* Writes job j's result.json (the variant is finished from then on) and applies it. */
int cut_opt_finish_job(kopt *ko, job *j, cut_err *e)
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
    cut_opt_hex64(j->key, hx);
    cJSON_AddStringToObject(r, "state_key", hx);
    cut_opt_hex64(j->ptx, hx);
    cJSON_AddStringToObject(r, "ptx_hash", hx);
    if (j->bin.ok) {
        cJSON_AddNumberToObject(r, "regs", j->bin.regs);
        cJSON_AddNumberToObject(r, "spill_stores", j->bin.spill_stores);
    }
    char path[1400];
    snprintf(path, sizeof path, "%s/result.json", j->dir);
    if (cut_opt_write_text(j->dir, "stderr.log", j->runnable ? j->res.error : j->error, e) != 0)
        return -1;
    cJSON_AddBoolToObject(r, "compiled", j->compiled);
    if (cut_opt_write_json(path, r, e) != 0)
        return -1;
    oc.src = j->src;
    j->src = NULL;
    return cut_opt_apply_outcome(ko, &oc, 1, e);
}

void cut_opt_job_free(job *j)
{
    free(j->diff);
    free(j->src);
    cut_compiled_free(&j->bin);
    j->diff = j->src = NULL;
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

int cut_opt_load_refs(kopt *ko, cut_err *e)
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
    if (cut_opt_write_text(dir, "reference.cu", src, e) != 0 ||
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
int cut_opt_run_baseline(kopt *ko, cut_err *e)
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
    if (cut_kspec_call(ko->k, NULL, &call, e) != 0 || cut_opt_write_text(dir, "kernel.cu", src, e) != 0)
        goto out;
    if (cut_compile_one(src, "kernel.cu", &ko->copts, &bin, e) != 0)
        goto out;
    cut_opt_write_text(dir, "stdout.log", bin.log, e);
    if (!bin.ok) {
        cut_err_set(e, "the baseline does not compile with NVRTC (%s/stdout.log has the log)", dir);
        goto out;
    }
    cut_opt_write_text(dir, "kernel.ptx", bin.ptx, e);
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
    if (cut_opt_write_json(path, c, e) != 0)
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
        cut_opt_write_text(dir, "stderr.log", res.error, e);
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
    cut_opt_write_text(dir, "stderr.log", res.error, e);
    cJSON *j = cJSON_CreateObject();
    write_run_result(j, &res);
    char hx[17];
    cut_ks_launch l;
    if (cut_kspec_resolve(ko->k, NULL, &l, e) != 0)
        goto out;
    cut_opt_hex64(cut_kstate_ptx_key(bin.ptx, &l), hx);
    cJSON_AddStringToObject(j, "ptx_hash", hx);
    /* what every variant is checked against */
    cJSON_AddStringToObject(j, "references", ko->k->ref_source ? ko->k->ref_entry : "baseline");
    snprintf(path, sizeof path, "%s/result.json", dir);
    if (cut_opt_write_json(path, j, e) != 0)
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
    const int root = cut_opt_add_node(ko, "baseline", src, 0, -1, "");
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
    cut_opt_event(ko, ev);
    rc = cut_opt_update_best_link(ko, e);
out:
    free(src);
    free((char *)(ko->k->ref_source ? ref.src : NULL));
    cut_compiled_free(&bin);
    cut_compiled_free(&ref_bin);
    return rc;
}
