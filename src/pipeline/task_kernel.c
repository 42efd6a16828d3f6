/* cutune — a user kernel spec as a task of the one tuning loop (cutune/task.h), Kernel Tuner's tune_kernel in
 * cutune: the spec's tunables are the space (any strategy, restrictions respected), a candidate is the materialised
 * source with its resolved launch, the runner's work is the spec's buffers with references captured from the
 * baseline (or the spec's reference kernel), and every trial is one record line in tuningrecords/kernel_<name>.json. */
#include "cutune/kstate.h"
#include "cutune/record.h"
#include "cutune/task.h"
#include "cutune/util.h"
#include "record/json.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kernel_wl {
    const cut_kspec *k;                     /* borrowed: the caller keeps it alive while the task lives */
    cut_compile_opts copts;                 /* for the reference run on a GPU */
    int use_nvrtc;
    int prepared;
    cut_work work;                         /* inputs owned (cut_kspec_work_free); outputs point at refs */
    void *refs[CUT_WORK_MAX_BUFS][2];         /* captured reference outputs, owned */
    cut_kcheck check;                      /* the spec's check_sizes: their work and references */
} kernel_wl;

static kernel_wl *wl_of(const cut_task *t) { return t->wl; }

static void kernel_destroy(cut_task *t)
{
    kernel_wl *w = wl_of(t);
    for (int b = 0; b < CUT_WORK_MAX_BUFS; b++)
        for (int s = 0; s < 2; s++) {
            free(w->refs[b][s]);
            if (w->prepared && b < w->work.nbufs && w->work.bufs[b].is_output)
                w->work.bufs[b].data[s] = NULL; /* they were the refs, freed above */
        }
    if (w->prepared)
        cut_kspec_work_free(&w->work);
    cut_kcheck_free(&w->check);
}

static cut_strategy *kernel_strategy(const cut_task *t, const cut_tune_cfg *cfg, int nold, cut_err *e)
{
    (void)nold;
    cut_space *sp = cut_kspec_space_new(wl_of(t)->k, &cfg->limits, e);
    if (!sp)
        return NULL;
    return cut_task_strategy(sp, cfg, NULL, cfg->seed ^ cut_fnv1a(CUT_FNV_INIT, t->name, strlen(t->name)), e);
}

static int kernel_check_runner(const cut_task *t, const cut_runner *r, cut_err *e)
{
    (void)t, (void)r, (void)e; /* every runner runs every work (its prepare refuses what it cannot) */
    return 0;
}

static int kernel_codegen(const cut_task *t, const cut_sched *s, cut_kernel_src *out, cut_err *e)
{
    const cut_kspec *k = wl_of(t)->k;
    long long vals[CUT_KS_MAX_VARS];
    cut_ks_launch l;
    memset(out, 0, sizeof *out);
    if (cut_kspec_sched_values(k, s, vals, e) != 0 || cut_kspec_resolve(k, vals, &l, e) != 0)
        return -1;
    out->src = cut_kstate_materialise(k, vals);
    snprintf(out->entry, sizeof out->entry, "%s", k->entry);
    memcpy(out->grid, l.grid, sizeof out->grid);
    memcpy(out->block, l.block, sizeof out->block);
    out->smem_dynamic = l.smem;
    return 0;
}

/* The call that gives the references: the baseline's, or the spec's reference kernel with the baseline's launch.
 * *src (owned) and bin hold its code. */
static int reference_call(kernel_wl *w, cut_call *c, char **src, cut_compiled *bin, cut_err *e)
{
    const cut_kspec *k = w->k;
    if (cut_kspec_call(k, NULL, c, e) != 0)
        return -1;
    *src = k->ref_source ? cut_kstate_materialise_src(k, NULL, k->ref_source) : cut_kstate_materialise(k, NULL);
    if (k->ref_source)
        snprintf(c->entry, sizeof c->entry, "%s", k->ref_entry);
    c->src = *src;
    c->bin = NULL;
    if (!w->use_nvrtc)
        return 0;
    if (cut_compile_one(*src, "reference.cu", &w->copts, bin, e) != 0)
        return -1;
    if (!bin->ok)
        return cut_err_set(e, "the %s does not compile with NVRTC: %.300s", k->ref_source ? "reference kernel" : "baseline",
                           bin->log ? bin->log : "");
    c->bin = bin;
    return 0;
}

/* The spec's buffers; a capture run of the reference call gives the references; the runner then holds both. With
 * check_sizes, the same reference call captures the references there too (once: the other runners only prepare). */
static int kernel_prepare(const cut_task *t, cut_runner *r, uint64_t seed, cut_err *e)
{
    (void)seed; /* a spec's inputs carry their own seeds */
    kernel_wl *w = wl_of(t);
    if (w->prepared)
        return cut_runner_prepare_work(r, &w->work, e);
    if (cut_kspec_work(w->k, &w->work, e) != 0)
        return -1;
    w->prepared = 1;
    cut_call call;
    char *src = NULL;
    cut_compiled bin;
    memset(&bin, 0, sizeof bin);
    cut_result res;
    cut_work_outputs outs;
    memset(&outs, 0, sizeof outs);
    int rc = reference_call(w, &call, &src, &bin, e);
    if (rc == 0 && (rc = cut_runner_prepare_work(r, &w->work, e)) == 0)
        rc = cut_runner_run_call(r, &call, &res, &outs, e);
    if (rc == 0 && res.status != CUT_ST_OK)
        rc = cut_err_set(e, "the %s failed its capture run: %s: %s", w->k->ref_source ? "reference kernel" : "baseline",
                         cut_status_name(res.status), res.error);
    for (int b = 0; rc == 0 && b < w->work.nbufs; b++)
        for (int s = 0; s < 2 && w->work.bufs[b].is_output; s++) {
            w->refs[b][s] = outs.data[b][s];
            outs.data[b][s] = NULL;
            w->work.bufs[b].data[s] = w->refs[b][s];
        }
    cut_work_outputs_free(&outs);
    if (rc == 0)
        rc = cut_runner_prepare_work(r, &w->work, e);
    if (rc == 0)
        rc = cut_kcheck_init(&w->check, w->k, r, &call, &w->work, e);
    cut_compiled_free(&bin);
    free(src);
    return rc;
}

static int kernel_measure(const cut_task *t, cut_runner *r, const cut_candidate *c, int n, cut_result *res,
                          cut_err *e)
{
    const kernel_wl *w = wl_of(t);
    return cut_kspec_run_candidates(w->k, &w->check, r, c, n, res, e);
}

/* The spec's baseline (each tunable's first value), checked and timed like a candidate. */
static int kernel_baseline(const cut_task *t, cut_runner *r, const cut_compile_opts *co, int round, cut_result *res,
                           char *name, size_t n, cut_err *e)
{
    (void)round;
    cut_sched s;
    memset(&s, 0, sizeof s); /* index 0 of every tunable: its first value */
    cut_kernel_src ks;
    cut_compiled bin;
    memset(&bin, 0, sizeof bin);
    int rc = kernel_codegen(t, &s, &ks, e);
    if (rc == 0 && co)
        rc = cut_compile_one(ks.src, "baseline.cu", co, &bin, e);
    if (rc == 0 && co && !bin.ok)
        rc = cut_err_set(e, "the baseline does not compile with NVRTC: %.300s", bin.log ? bin.log : "");
    cut_candidate c = {.ks = &ks, .bin = co ? &bin : NULL};
    if (rc == 0)
        rc = kernel_measure(t, r, &c, 1, res, e);
    snprintf(name, n, "baseline");
    cut_compiled_free(&bin);
    cut_kernel_src_free(&ks);
    return rc;
}

/* {"tpl":"tunables","BLOCK":128,...}: the values, not their indices. */
static cJSON *sched_json(const cut_kspec *k, const cut_sched *s)
{
    long long vals[CUT_KS_MAX_VARS];
    if (cut_kspec_sched_values(k, s, vals, NULL) != 0)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "tpl", "tunables");
    for (int i = 0; i < k->ntunables; i++)
        cJSON_AddNumberToObject(o, k->tunables[i].name, (double)vals[i]);
    return o;
}

static int kernel_sched_json(const cut_task *t, const cut_sched *s, char *buf, size_t n)
{
    cJSON *o = sched_json(wl_of(t)->k, s);
    char *txt = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    int len = txt && strlen(txt) < n ? snprintf(buf, n, "%s", txt) : -1;
    cJSON_free(txt);
    return len;
}

static void kernel_record(const cut_task *t, const cut_trial *tr, cut_buf *b)
{
    const cut_kspec *k = wl_of(t)->k;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "v", CUT_TRIAL_VERSION);
    cJSON_AddStringToObject(root, "op", "kernel");
    cJSON_AddNumberToObject(root, "trial", tr->trial);
    cJSON *wl = cJSON_AddObjectToObject(root, "workload");
    cJSON_AddStringToObject(wl, "kernel", k->name);
    cJSON *sizes = cJSON_AddObjectToObject(wl, "sizes");
    for (int i = 0; i < k->nsizes; i++)
        cJSON_AddNumberToObject(sizes, k->sizes[i].name, (double)k->sizes[i].value);
    if (k->has_check_sizes) {
        cJSON *check = cJSON_AddObjectToObject(wl, "check_sizes");
        for (int i = 0; i < k->nsizes; i++)
            cJSON_AddNumberToObject(check, k->sizes[i].name, (double)k->check_sizes[i]);
    }
    cJSON_AddItemToObject(root, "sched", sched_json(k, &tr->sched));
    cut_rec_add_trial(root, tr, 0);
    if (tr->status == CUT_ST_OK && tr->error[0]) /* passed with a note: not checked at check_sizes, and why */
        cJSON_AddStringToObject(root, "note", tr->error);
    cut_rec_print(root, b);
}

/* {"tpl":"tunables", name: value ...} of spec ctx: every tunable present with one of its values. */
static int parse_sched(const void *ctx, const void *obj, cut_sched *out, cut_err *e)
{
    const cut_kspec *k = ctx;
    const cJSON *o = obj;
    const cJSON *tpl = cJSON_GetObjectItemCaseSensitive(o, "tpl");
    if (!cJSON_IsObject(o) || !cJSON_IsString(tpl) || strcmp(tpl->valuestring, "tunables") != 0)
        return cut_err_set(e, "not a kernel spec's tunables ({\"tpl\":\"tunables\",...})");
    long long vals[CUT_KS_MAX_VARS];
    for (int i = 0; i < k->ntunables; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k->tunables[i].name);
        if (!cJSON_IsNumber(v) || !(fabs(v->valuedouble) <= 9007199254740992.0) ||
            v->valuedouble != floor(v->valuedouble))
            return cut_err_set(e, "lacks the integer tunable '%s'", k->tunables[i].name);
        vals[i] = (long long)v->valuedouble;
    }
    return cut_kspec_sched_from_values(k, vals, out, e);
}

/* A log of this kernel: every line a version-2 kernel record of this spec (its tunables by name); a line that is
 * not (another spec's tunables, a damaged line) is skipped with a note and still counts as a trial run. */
static int kernel_load(const cut_task *t, const char *path, cut_trial **out, int *n, int *extra, cut_err *e)
{
    return cut_trial_log_load(path, "kernel", parse_sched, wl_of(t)->k, out, n, extra, e);
}

/* Every tensor of the baseline's launch once (a spec's sizes do not depend on its tunables); 0 if it does not resolve. */
static double spec_bytes(const cut_kspec *k)
{
    cut_ks_launch l;
    cut_err e;
    if (cut_kspec_resolve(k, NULL, &l, &e) != 0)
        return 0;
    double b = 0;
    for (int i = 0; i < k->ninputs; i++)
        b += (double)l.in_elems[i] * (double)cut_elem_size(k->inputs[i].dtype);
    for (int i = 0; i < k->noutputs; i++)
        b += (double)l.out_elems[i] * (double)cut_elem_size(k->outputs[i].dtype);
    return b;
}

cut_task *cut_task_kernel_new(const cut_kspec *k, const cut_tune_cfg *cfg)
{
    cut_task *t = cut_xcalloc(1, sizeof *t);
    kernel_wl *w = cut_xcalloc(1, sizeof *w);
    w->k = k;
    w->use_nvrtc = cfg->use_nvrtc;
    w->copts = cfg->copts;
    t->op = "kernel";
    t->wl = w;
    snprintf(t->name, sizeof t->name, "kernel_%s", k->name);
    snprintf(t->label, sizeof t->label, "%.60s", k->name);
    snprintf(t->what, sizeof t->what, "kernel %.50s", k->name);
    snprintf(t->stem, sizeof t->stem, "kernel_%.50s", k->name);
    t->batch = 8;
    t->bytes = spec_bytes(k);
    t->strategy = kernel_strategy;
    t->check_runner = kernel_check_runner;
    t->codegen = kernel_codegen;
    t->prepare = kernel_prepare;
    t->measure = kernel_measure;
    t->record = kernel_record;
    t->load = kernel_load;
    t->destroy = kernel_destroy;
    t->baseline = kernel_baseline;
    t->sched_json = kernel_sched_json;
    return t;
}
