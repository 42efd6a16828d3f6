/* cutune — the optimizer's variants and baseline: materialise, patch and write a variant (the task's codegen), its
 * compile's outputs (the task's compiled hook), its result.json (the journal's record); the baseline and its
 * references. The loop compiles and measures. */
#include "pipeline/optimize_int.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- SASS ---- */

/* The first of cuobjdump or nvdisasm found (cut_find_cuda_tool). */
static const char *sass_tool(char *buf, size_t n, int *is_nvdisasm)
{
    *is_nvdisasm = 0;
    if (cut_find_cuda_tool("cuobjdump", buf, n))
        return buf;
    *is_nvdisasm = 1;
    return cut_find_cuda_tool("nvdisasm", buf, n);
}

void cut_opt_write_sass(const char *dir, const char *scratch, const cut_compiled *bin, char *why, size_t n)
{
    char tool[1200], cubin[1200], out[1400], err[1200];
    int nvdisasm = 0;
    why[0] = '\0';
    if (!bin || !bin->cubin || !bin->cubin_size) {
        snprintf(why, n, "no cubin to disassemble");
        return;
    }
    if (!sass_tool(tool, sizeof tool, &nvdisasm)) {
        snprintf(why, n, "neither cuobjdump nor nvdisasm was found ($CUDA_HOME/bin, /usr/local/cuda/bin, PATH)");
        return;
    }
    snprintf(cubin, sizeof cubin, "%s/sass_%d.cubin", scratch, (int)getpid());
    snprintf(out, sizeof out, "%s/kernel.sass", dir);
    snprintf(err, sizeof err, "%s/sass_%d.err", scratch, (int)getpid());
    cut_err e = {{0}};
    if (cut_write_file_atomic(cubin, bin->cubin, bin->cubin_size, &e) != 0) {
        snprintf(why, n, "%s", e.msg);
        return;
    }
    char *argv[] = {tool, nvdisasm ? "-g" : "-sass", cubin, NULL};
    const int rc = cut_run_tool(argv, out, err, &e);
    if (rc != 0) {
        snprintf(why, n, "%s %s", tool, rc < 0 ? e.msg : "failed");
        remove(out);
    }
    remove(cubin);
    remove(err);
}

/* ---- one variant ---- */

const char *cut_opt_src_name(const cut_kspec *k) { return k->lang == CUT_KS_TRITON ? "kernel.py" : "kernel.cu"; }

/* A Triton variant's PTX as the worker left it in dir (kernel.ptx, on a GPU): its normalised key with launch l, 0
 * without one (the interpreter compiles nothing). Recorded, not used for transpositions: Triton compiles at the
 * variant's first launch, inside its measurement. */
static uint64_t triton_ptx_key(const char *dir, const cut_ks_launch *l)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/kernel.ptx", dir);
    char *ptx = NULL;
    size_t len = 0;
    cut_err ignore;
    if (!cut_path_exists(path) || cut_read_file(path, &ptx, &len, &ignore) != 0)
        return 0;
    const uint64_t key = cut_kstate_ptx_key(ptx, l);
    free(ptx);
    return key;
}

/* Triton's word on the binary (triton_meta.json in dir: regs, spill_stores, shared_bytes) into r; nothing without. */
static void triton_meta(const char *dir, cJSON *r)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/triton_meta.json", dir);
    char *text = NULL;
    size_t len = 0;
    cut_err ignore;
    if (!cut_path_exists(path) || cut_read_file(path, &text, &len, &ignore) != 0)
        return;
    cJSON *m = cJSON_Parse(text);
    free(text);
    static const char *const keys[] = {"regs", "spill_stores", "shared_bytes"};
    for (size_t i = 0; i < CUT_ARRAY_LEN(keys); i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, keys[i]);
        if (cJSON_IsNumber(v))
            cJSON_AddNumberToObject(r, keys[i], v->valuedouble);
    }
    cJSON_Delete(m);
}

/* The diff of the edge labelled label out of node n, regenerated: only for an edge resumed from a state file of an
 * older cutune, which kept no diffs. The rules are deterministic for a state (they ignore the context); an LLM is
 * asked again, without the context that was not kept, and its new reply may not propose the move (the build then
 * fails with why). NULL if it is gone. */
static char *edge_diff(kopt *ko, int n, const char *label, cut_err *e)
{
    cut_proposal *p = cut_xcalloc(CUT_MCGS_MAX_PROPOSALS, sizeof *p);
    const int np =
        cut_cand_gen_propose(ko->gen, ko->k, ko->s.src[n], NULL, ko->scratch, p, CUT_MCGS_MAX_PROPOSALS, e);
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

static void job_fail(vjob *j, const char *status, const char *fmt, const char *why)
{
    snprintf(j->status_name, sizeof j->status_name, "%s", status);
    snprintf(j->error, sizeof j->error, fmt, why);
    j->runnable = 0;
}

/* A new vjob of this round for ticket t. */
static vjob *vjob_new(kopt *ko, const cut_mcgs_ticket *t)
{
    if (ko->nvj == ko->vjcap) {
        ko->vjcap = ko->vjcap ? 2 * ko->vjcap : 16;
        ko->vj = cut_xrealloc(ko->vj, sizeof *ko->vj * (size_t)ko->vjcap);
    }
    vjob *j = &ko->vj[ko->nvj++];
    memset(j, 0, sizeof *j);
    j->ticket = t->ticket;
    j->ms = -1;
    snprintf(j->id, sizeof j->id, "%s", t->id);
    snprintf(j->dir, sizeof j->dir, "%s/variants/%s", ko->kdir, j->id);
    return j;
}

/* The kernel of a runnable variant: its source and launch, for the loop to compile and measure; a Triton variant's
 * folder is where the worker leaves its PTX and SASS. */
static void fill_src(const kopt *ko, const vjob *j, const char *src, const cut_call *call, cut_kernel_src *ks)
{
    ks->src = cut_xstrdup(src);
    ks->keep_dir = ko->k->lang == CUT_KS_TRITON ? cut_xstrdup(j->dir) : NULL;
    snprintf(ks->entry, sizeof ks->entry, "%s", ko->k->entry);
    memcpy(ks->grid, call->grid, sizeof ks->grid);
    memcpy(ks->block, call->block, sizeof ks->block);
    ks->smem_dynamic = call->smem;
}

/* A Triton variant's launches handed to the runner that measures it (the k-th of a round: runner k), which compiles
 * them ahead on its compile pool while the round goes on: at the spec's sizes, and at check_sizes where it is checked
 * there too (their ints specialise differently: two compiles). CUDA variants compile in the loop's compile stream. */
static void compile_ahead(kopt *ko, const char *src, const long long *vals)
{
    if (ko->k->lang != CUT_KS_TRITON)
        return;
    cut_runner *r = ko->runners[(ko->nvj - 1) % ko->nr];
    cut_call call;
    cut_err ignore;
    char why[8];
    for (int set = CUT_KS_SIZES; set <= CUT_KS_CHECK_SIZES; set++) {
        const int skip = set == CUT_KS_CHECK_SIZES && (!ko->k->has_check_sizes ||
                                                       !cut_kspec_allows_at(ko->k, set, vals, why, sizeof why));
        if (skip)
            continue;
        if (cut_kspec_call_at(ko->k, (cut_ks_sizeset)set, vals, &call, &ignore) != 0)
            continue;
        call.src = src;
        cut_runner_ahead(r, &call);
    }
}

/* Materialises, diffs, patches and writes the variant (the loop then compiles it). Errors of the variant are its
 * status; disk errors are stashed (they end the run at the next record). */
int cut_opt_build(kopt *ko, int ticket, cut_kernel_src *ks, cut_err *e)
{
    memset(ks, 0, sizeof *ks);
    const cut_mcgs_ticket *t = cut_mcgs_ticket_get(&ko->s, ticket);
    if (!t)
        return cut_err_set(e, "ticket %d is not outstanding", ticket);
    vjob *j = vjob_new(ko, t);
    const int parent = t->parent;
    const cut_edge *ed = &ko->s.g.nodes[parent].edges[t->edge];
    cut_err de = {{0}};
    if (cut_mkdirs(j->dir, &de) != 0)
        return cut_opt_stash(ko, &de);
    cut_err why = {{0}};
    /* the edge keeps its diff, in the state file too; only an older state file's edges need it made again */
    char *diff = ed->diff ? cut_xstrdup(ed->diff) : edge_diff(ko, parent, ed->label, &why);
    char *src = NULL;
    cut_call call;
    long long vals[CUT_KS_MAX_VARS];
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "kernel", ko->k->name);
    cJSON_AddStringToObject(c, "id", j->id);
    cJSON_AddStringToObject(c, "parent", ko->s.g.nodes[parent].id);
    cJSON_AddStringToObject(c, "move", cut_move_name(ed->move));
    cJSON_AddStringToObject(c, "label", ed->label);
    cJSON_AddStringToObject(c, "generator", ko->gen->name);
    cJSON *path = cJSON_AddArrayToObject(c, "path");
    for (int i = 0; i < t->plen; i++)
        cJSON_AddItemToArray(path, cJSON_CreateString(ko->s.g.nodes[t->path[i]].id));
    if (!diff) {
        job_fail(j, "patch_error", "the generator no longer proposes this move: %s", why.msg[0] ? why.msg : "gone");
    } else if (cut_patch_apply(ko->s.src[parent], diff, ko->scratch, &src, &why) != 0) {
        job_fail(j, "patch_error", "%s", why.msg);
    } else if (cut_kstate_tunables(ko->k, src, vals, &why) != 0 || cut_kspec_call(ko->k, vals, &call, &why) != 0) {
        job_fail(j, "invalid", "%s", why.msg);
    } else if (!cut_kspec_allows(ko->k, vals, why.msg, sizeof why.msg)) {
        job_fail(j, "invalid", "restriction broken: %s", why.msg); /* never compiled */
    } else {
        j->runnable = 1;
        cJSON *tu = cJSON_AddObjectToObject(c, "tunables");
        for (int i = 0; i < ko->k->ntunables; i++)
            cJSON_AddNumberToObject(tu, ko->k->tunables[i].name, (double)vals[i]);
        cJSON *l = cJSON_AddObjectToObject(c, "launch");
        cJSON_AddItemToObject(l, "grid", cJSON_CreateIntArray((const int[]){(int)call.grid[0], (int)call.grid[1], (int)call.grid[2]}, 3));
        cJSON_AddItemToObject(l, "block", cJSON_CreateIntArray((const int[]){(int)call.block[0], (int)call.block[1], (int)call.block[2]}, 3));
        cJSON_AddNumberToObject(l, "smem", call.smem);
    }
    char p[1400];
    snprintf(p, sizeof p, "%s/control.json", j->dir);
    int rc = 0;
    if (cut_opt_write_json(p, c, &de) != 0 || cut_opt_write_text(j->dir, "candidate.diff", diff, &de) != 0 ||
        cut_opt_write_text(j->dir, cut_opt_src_name(ko->k), src ? src : "", &de) != 0)
        rc = cut_opt_stash(ko, &de);
    free(diff);
    cut_ks_launch l;
    memset(&l, 0, sizeof l);
    uint64_t key = 0;
    if (rc == 0 && j->runnable && cut_kspec_resolve(ko->k, vals, &l, &why) == 0)
        key = cut_kstate_key(src, &l);
    if (rc == 0 && j->runnable)
        fill_src(ko, j, src, &call, ks);
    /* the search keeps the state (the node's source); the same source and launch as a known state (a tunable moved
     * back, two moves in either order) is a transposition found without building anything, so it does not count
     * against the budget */
    const int same_as = cut_mcgs_ticket_built(&ko->s, ticket, src, key);
    if (rc != 0)
        return -1;
    if (same_as >= 0) {
        j->runnable = 0;
        snprintf(j->status_name, sizeof j->status_name, "transposition");
        snprintf(j->error, sizeof j->error, "same source and launch as %s", ko->s.g.nodes[same_as].id);
        cut_kernel_src_free(ks);
        if (cut_opt_write_text(j->dir, "stdout.log", "", &de) != 0)
            cut_opt_stash(ko, &de);
        return -1;
    }
    ko->builds++;
    j->compiled = 1;
    j->launch = l;
    if (j->runnable) {
        compile_ahead(ko, ks->src, vals);
        return 0;
    }
    if (cut_opt_write_text(j->dir, "stdout.log", "", &de) != 0)
        cut_opt_stash(ko, &de);
    return -1;
}

/* After its compile: the log, the PTX key, a transposition by PTX; the variant is then ready to measure. */
int cut_opt_after_compile(kopt *ko, int ticket, const cut_compiled *bin, cut_result *res, cut_err *e)
{
    vjob *j = cut_opt_vjob(ko, ticket);
    if (j && !bin && ko->k->lang == CUT_KS_TRITON) /* Triton compiles it in the worker, at its first launch */
        return cut_opt_write_text(j->dir, "stdout.log",
                                  "Triton compiles the variant in the worker at its first launch: a compile error "
                                  "is the run's status (stderr.log)\n", e);
    if (!j || !bin)
        return cut_err_set(e, "variant %d was not built for NVRTC", ticket);
    cut_buf log;
    cut_buf_init(&log);
    cut_buf_printf(&log, "NVRTC sm_%d%d%s: %s in %.0f ms\n%s", ko->copts.sm_major, ko->copts.sm_minor,
                   bin->cache_hit ? " (cache hit)" : "", bin->ok ? "compiled" : "failed", bin->compile_ms,
                   bin->log ? bin->log : "");
    cut_buf_append(&log, "", 1);
    int rc = cut_opt_write_text(j->dir, "stdout.log", log.data, e);
    cut_buf_free(&log);
    if (rc != 0)
        return -1;
    if (!bin->ok) {
        job_fail(j, "compile_error", "%s", "NVRTC rejected the variant (stdout.log has its log)");
        res->status = CUT_ST_COMPILE_ERROR;
        snprintf(res->error, sizeof res->error, "%s", j->error);
        return 0;
    }
    const uint64_t ptx = cut_kstate_ptx_key(bin->ptx, &j->launch);
    if (cut_opt_write_text(j->dir, "kernel.ptx", bin->ptx, e) != 0)
        return -1;
    cut_opt_write_sass(j->dir, ko->scratch, bin, j->sass, sizeof j->sass);
    const int same_as = cut_mcgs_ticket_ptx(&ko->s, ticket, ptx);
    if (same_as >= 0) {
        j->runnable = 0;
        snprintf(j->status_name, sizeof j->status_name, "transposition");
        snprintf(j->error, sizeof j->error, "same normalised PTX and launch as %s", ko->s.g.nodes[same_as].id);
        res->status = CUT_ST_INVALID; /* not measured: the state is known */
        snprintf(res->error, sizeof res->error, "%s", j->error);
    }
    return 0;
}

/* Writes the variant's stderr.log and its result as result.pending.json; the strategy observes it next, and the
 * round's state save commits it (cut_opt_commit_round: result.json, the variant finished from then on). */
int cut_opt_finish(kopt *ko, const cut_task_outcome *o, cut_err *e)
{
    vjob *j = cut_opt_vjob(ko, o->sched->k[0]);
    const cut_mcgs_ticket *t = cut_mcgs_ticket_get(&ko->s, o->sched->k[0]);
    if (!j || !t)
        return cut_err_set(e, "variant %d was not built", o->sched->k[0]);
    char status[32], error[512];
    const cut_result *res = o->res;
    if (j->status_name[0]) {
        snprintf(status, sizeof status, "%s", j->status_name);
        snprintf(error, sizeof error, "%s", j->error);
    } else {
        snprintf(status, sizeof status, "%s", cut_status_name(res->status));
        snprintf(error, sizeof error, "%s", res->error);
        snprintf(j->status_name, sizeof j->status_name, "%s", status); /* for the trace and the console */
        snprintf(j->error, sizeof j->error, "%s", error);
        if (res->status == CUT_ST_OK)
            j->ms = res->median_ms;
    }
    cJSON *r = cJSON_CreateObject();
    char hx[17];
    const int note = !strcmp(status, cut_status_name(CUT_ST_OK)) && error[0]; /* not checked at check_sizes */
    cJSON_AddStringToObject(r, "id", j->id);
    cJSON_AddStringToObject(r, "status", status);
    cJSON_AddStringToObject(r, "error", note ? "" : error);
    if (note)
        cJSON_AddStringToObject(r, "note", error);
    if (j->ms > 0) {
        cJSON_AddNumberToObject(r, "median_ms", j->ms);
        cJSON_AddNumberToObject(r, "min_ms", res->min_ms);
        cJSON_AddNumberToObject(r, "max_ms", res->max_ms);
        cJSON_AddNumberToObject(r, "repeats", res->repeats);
        cJSON_AddNumberToObject(r, "max_abs_err", res->max_abs_err);
        cJSON_AddNumberToObject(r, "speedup", ko->s.baseline_ms / j->ms);
    }
    if (o->runner >= 0) /* which worker measured it: the GPU of --gpus */
        cJSON_AddNumberToObject(r, "worker", ko->o->gpus ? ko->o->gpus[o->runner] : o->runner);
    if (t->same_as >= 0)
        cJSON_AddStringToObject(r, "same_as", ko->s.g.nodes[t->same_as].id);
    cut_opt_hex64(t->key, hx);
    cJSON_AddStringToObject(r, "state_key", hx);
    cut_opt_hex64(ko->k->lang == CUT_KS_TRITON ? triton_ptx_key(j->dir, &j->launch) : t->ptx, hx);
    cJSON_AddStringToObject(r, "ptx_hash", hx);
    if (o->bin && o->bin->ok) {
        cJSON_AddNumberToObject(r, "regs", o->bin->regs);
        cJSON_AddNumberToObject(r, "spill_stores", o->bin->spill_stores);
        cJSON_AddStringToObject(r, "sass", j->sass[0] ? j->sass : "kernel.sass");
    } else if (ko->k->lang == CUT_KS_TRITON && j->compiled) {
        triton_meta(j->dir, r);
    }
    char path[1400];
    snprintf(path, sizeof path, "%s/" CUT_OPT_PENDING, j->dir);
    if (cut_opt_write_text(j->dir, "stderr.log", o->runner >= 0 ? res->error : j->error, e) != 0) {
        cJSON_Delete(r);
        return -1;
    }
    cJSON_AddBoolToObject(r, "compiled", j->compiled);
    return cut_opt_write_json(path, r, e);
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
        if (cut_runner_prepare_work(ko->runners[i], &ko->work, e) != 0)
            return -1;
    return 0;
}

/* The references at the spec's check_sizes (none without): captured on the first runner with ref, the call whose
 * outputs are the references (the baseline's or the spec's reference kernel's), or, ref NULL (a resumed search: they
 * are not saved, a run at check sizes is small), with that call built again (compiled again: a cache hit). */
static int check_refs(kopt *ko, const cut_call *ref, cut_err *e)
{
    const cut_kspec *k = ko->k;
    if (!k->has_check_sizes)
        return 0;
    if (ref)
        return cut_kcheck_init(&ko->check, k, ko->runners[0], ref, &ko->work, e);
    cut_call call; /* its launch and arguments are made at check_sizes: only its code and entry matter */
    cut_compiled bin;
    memset(&call, 0, sizeof call);
    memset(&bin, 0, sizeof bin);
    char *src = k->ref_source ? cut_kstate_materialise_src(k, NULL, k->ref_source) : cut_kstate_materialise(k, NULL);
    const char *what = k->ref_source ? "reference kernel" : "baseline";
    const int triton = k->lang == CUT_KS_TRITON; /* the worker compiles it */
    int rc = triton ? 0 : cut_compile_one(src, k->ref_source ? "reference.cu" : "kernel.cu", &ko->copts, &bin, e);
    if (rc == 0 && !triton && !bin.ok)
        rc = cut_err_set(e, "the %s does not compile with NVRTC: %.300s", what, bin.log ? bin.log : "");
    if (rc == 0) {
        call.src = src;
        call.bin = triton ? NULL : &bin;
        snprintf(call.entry, sizeof call.entry, "%s", k->ref_source ? k->ref_entry : k->entry);
        rc = cut_kcheck_init(&ko->check, k, ko->runners[0], &call, &ko->work, e);
    }
    cut_compiled_free(&bin);
    free(src);
    return rc;
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
            if (len != ko->work.bufs[b].elems * cut_elem_size(ko->work.bufs[b].dtype)) {
                free(data);
                return cut_err_set(e, "%s: %zu bytes, the spec's output needs %zu", path, len,
                                   ko->work.bufs[b].elems * cut_elem_size(ko->work.bufs[b].dtype));
            }
            ko->refs[b][s] = data;
        }
    return prepare_runners(ko, e) != 0 || check_refs(ko, NULL, e) != 0 ? -1 : 0;
}

void cut_opt_run_result(cJSON *r, const cut_result *res)
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
static int capture_call(kopt *ko, const char *dir, const cut_call *call, cut_call *ref, cut_compiled *ref_bin,
                        cut_err *e)
{
    *ref = *call;
    if (!ko->k->ref_source)
        return 0;
    char *src = cut_kstate_materialise_src(ko->k, NULL, ko->k->ref_source);
    ref->src = src;
    snprintf(ref->entry, sizeof ref->entry, "%s", ko->k->ref_entry);
    const int triton = ko->k->lang == CUT_KS_TRITON;
    if (cut_opt_write_text(dir, triton ? "reference.py" : "reference.cu", src, e) != 0)
        return -1;
    if (triton) { /* compiled by the worker at its launch */
        ref->bin = NULL;
        ref->keep_dir = NULL;
        return 0;
    }
    if (cut_compile_one(src, "reference.cu", &ko->copts, ref_bin, e) != 0)
        return -1;
    if (!ref_bin->ok)
        return cut_err_set(e, "the reference kernel does not compile with NVRTC: %.300s", ref_bin->log);
    ref->bin = ref_bin;
    return 0;
}

/* The baseline's build into dir: NVRTC (bin, kernel.ptx, kernel.sass or why not in sass), or for a Triton kernel
 * nothing (the worker compiles it at its first launch and leaves its PTX and SASS in dir). 0, or -1 with e. */
static int baseline_build(kopt *ko, const char *dir, const char *src, cut_compiled *bin, char *sass, size_t n,
                          cut_err *e)
{
    sass[0] = '\0';
    if (ko->k->lang == CUT_KS_TRITON)
        return cut_opt_write_text(dir, "stdout.log", "Triton compiles the baseline in the worker at its first launch\n",
                                  e);
    if (cut_compile_one(src, "kernel.cu", &ko->copts, bin, e) != 0)
        return -1;
    cut_opt_write_text(dir, "stdout.log", bin->log, e);
    if (!bin->ok)
        return cut_err_set(e, "the baseline does not compile with NVRTC (%s/stdout.log has the log)", dir);
    cut_opt_write_text(dir, "kernel.ptx", bin->ptx, e);
    cut_opt_write_sass(dir, ko->scratch, bin, sass, n);
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
    cut_call call, ref;
    cut_compiled bin, ref_bin;
    memset(&ref, 0, sizeof ref);
    memset(&bin, 0, sizeof bin);
    memset(&ref_bin, 0, sizeof ref_bin);
    int rc = -1;
    const int triton = ko->k->lang == CUT_KS_TRITON;
    char sass[200];
    if (cut_kspec_call(ko->k, NULL, &call, e) != 0 || cut_opt_write_text(dir, cut_opt_src_name(ko->k), src, e) != 0 ||
        baseline_build(ko, dir, src, &bin, sass, sizeof sass, e) != 0)
        goto out;
    call.src = src;
    call.bin = triton ? NULL : &bin;
    call.keep_dir = triton ? dir : NULL;
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
    cut_work_outputs outs;
    memset(&outs, 0, sizeof outs);
    if (capture_call(ko, dir, &call, &ref, &ref_bin, e) != 0 || cut_runner_prepare_work(r, &ko->work, e) != 0 ||
        cut_runner_run_call(r, &ref, &res, &outs, e) != 0)
        goto out;
    if (res.status != CUT_ST_OK) {
        cut_opt_write_text(dir, "stderr.log", res.error, e);
        cut_err_set(e, "the %s failed its capture run: %s: %s", ko->k->ref_source ? "reference kernel" : "baseline",
                    cut_status_name(res.status), res.error);
        cut_work_outputs_free(&outs);
        goto out;
    }
    for (int b = 0; b < ko->work.nbufs; b++)
        for (int s = 0; s < 2 && ko->work.bufs[b].is_output; s++) {
            ko->refs[b][s] = outs.data[b][s];
            outs.data[b][s] = NULL;
            ref_path(ko, b, s, path, sizeof path);
            if (cut_write_file_atomic(path, ko->refs[b][s], ko->work.bufs[b].elems * cut_elem_size(ko->work.bufs[b].dtype), e) != 0)
                goto out;
        }
    /* the baseline checked against them (and at check_sizes against the references there) like every variant */
    cut_kernel_src ks = {.src = src, .keep_dir = triton ? dir : NULL};
    const cut_candidate cand = {.ks = &ks, .bin = triton ? NULL : &bin};
    if (prepare_runners(ko, e) != 0 || check_refs(ko, &ref, e) != 0 ||
        cut_kspec_run_candidates(ko->k, &ko->check, r, &cand, 1, &res, e) != 0)
        goto out;
    cut_opt_write_text(dir, "stderr.log", res.error, e);
    cJSON *j = cJSON_CreateObject();
    cut_opt_run_result(j, &res);
    char hx[17];
    cut_ks_launch l;
    if (cut_kspec_resolve(ko->k, NULL, &l, e) != 0)
        goto out;
    const uint64_t ptx_key = triton ? triton_ptx_key(dir, &l) : cut_kstate_ptx_key(bin.ptx, &l);
    cut_opt_hex64(ptx_key, hx);
    cJSON_AddStringToObject(j, "ptx_hash", hx);
    /* what every variant is checked against */
    cJSON_AddStringToObject(j, "references", ko->k->ref_source ? ko->k->ref_entry : "baseline");
    if (triton)
        triton_meta(dir, j);
    else
        cJSON_AddStringToObject(j, "sass", sass[0] ? sass : "kernel.sass");
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
    ko->s.baseline_ms = res.median_ms;
    const int root = cut_mcgs_search_add(&ko->s, "baseline", src, 0, -1, "");
    src = NULL;
    cut_node *n = &ko->s.g.nodes[root];
    n->status = CUT_NODE_OK;
    n->ms = res.median_ms;
    n->speedup = 1.0;
    n->ptx_hash = ptx_key;
    n->key = cut_kstate_key(ko->s.src[root], &l);
    n->visits = 1;
    n->value_sum = cut_mcgs_value(1.0);
    ko->s.best = 0;
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
