/* cutune — one variant from its control.json, as seed 002's worker runs it (`cutune optimize --worker FILE`): the
 * variant folder (variants/<id>/ or baseline/) holds control.json and kernel.cu (kernel.py: Triton); the search's
 * folder above it holds spec.json (the spec as the search saw it) and baseline/ref_*.bin (the references). The variant
 * is compiled with NVRTC (a Triton one by the Triton worker, the runner given) and, on the runner given, checked against the references and timed exactly as the search measures it; the
 * outcome goes to runner_result.json in its folder. With profile_only it is launched once on fresh inputs and nothing
 * is checked, timed or written: the run Nsight Compute wraps (opt_ncu.c). */
#include "pipeline/optimize_int.h"

#include <cjson/cJSON.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The search folder of a variant folder: the first of dir/.., dir/../.. holding spec.json. */
static int find_kdir(const char *dir, char *kdir, size_t n, cut_err *e)
{
    char probe[2200];
    for (int up = 1; up <= 2; up++) {
        snprintf(kdir, n, "%s", dir);
        for (int i = 0; i < up; i++)
            snprintf(kdir + strlen(kdir), n - strlen(kdir), "/..");
        snprintf(probe, sizeof probe, "%s/spec.json", kdir);
        if (cut_path_exists(probe))
            return 0;
    }
    return cut_err_set(e, "%s: no spec.json in the folders above it (is it a variant folder of `cutune optimize`?)",
                       dir);
}

/* The control file's id (the folder's name when it has none): a check that it is a control file at all. */
static int read_control(const char *path, char *id, size_t n, cut_err *e)
{
    char *text = NULL;
    size_t len = 0;
    if (cut_read_file(path, &text, &len, e) != 0)
        return -1;
    cJSON *c = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *v = c ? cJSON_GetObjectItemCaseSensitive(c, "id") : NULL;
    const int ok = cJSON_IsObject(c) && cJSON_IsString(v) && v->valuestring[0];
    if (ok)
        snprintf(id, n, "%s", v->valuestring);
    cJSON_Delete(c);
    return ok ? 0 : cut_err_set(e, "%s: not a control file of `cutune optimize` (a JSON object with an \"id\")", path);
}

static int write_result(const char *dir, const char *id, const cut_result *res, int gpu, cut_err *e)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "id", id);
    cut_opt_run_result(r, res);
    cJSON_AddNumberToObject(r, "worker", gpu);
    char path[1400];
    snprintf(path, sizeof path, "%s/runner_result.json", dir);
    return cut_opt_write_json(path, r, e);
}

/* The control file's variant folder (dir), id, search folder (kdir) and the search's spec (k, caller frees with
 * cut_kspec_free). 0, or -1 with e. */
static int open_control(const char *control, char *dir, char *id, char *kdir, cut_kspec *k, cut_err *e)
{
    char path[1400];
    snprintf(path, sizeof path, "%s", control);
    snprintf(dir, 1200, "%s", dirname(path));
    if (read_control(control, id, 64, e) != 0 || find_kdir(dir, kdir, 1300, e) != 0)
        return -1;
    memset(k, 0, sizeof *k);
    snprintf(path, sizeof path, "%s/spec.json", kdir);
    return cut_kspec_load(path, k, e);
}

int cut_opt_worker_lang(const char *control, cut_ks_lang *lang, cut_err *e)
{
    char dir[1200], id[64], kdir[1300];
    cut_kspec k;
    if (open_control(control, dir, id, kdir, &k, e) != 0)
        return -1;
    *lang = k.lang;
    cut_kspec_free(&k);
    return 0;
}

/* One launch on the work's inputs, outputs captured and dropped. */
static int launch_once(kopt *ko, const cut_call *call, cut_result *res, cut_err *e)
{
    for (int b = 0; b < ko->work.nbufs; b++)
        if (ko->work.bufs[b].is_output)
            ko->work.bufs[b].data[0] = ko->work.bufs[b].data[1] = NULL;
    cut_work_outputs outs;
    memset(&outs, 0, sizeof outs);
    const int rc = cut_runner_prepare_work(ko->runners[0], &ko->work, e) != 0 ||
                   cut_runner_run_call(ko->runners[0], call, res, &outs, e) != 0;
    cut_work_outputs_free(&outs);
    return rc ? -1 : 0;
}

int cut_opt_worker(const cut_opt_opts *o, const char *control, cut_runner *r, int gpu, int profile_only,
                   cut_result *res, cut_err *e)
{
    memset(res, 0, sizeof *res);
    char dir[1200], id[64], kdir[1300], path[1400];
    cut_kspec k;
    if (open_control(control, dir, id, kdir, &k, e) != 0)
        return -1;
    kopt ko;
    memset(&ko, 0, sizeof ko);
    ko.o = o;
    ko.k = &k;
    ko.runners = &r;
    ko.nr = 1;
    snprintf(ko.kdir, sizeof ko.kdir, "%s", kdir);
    cut_compile_opts_default(&ko.copts);
    ko.copts.sm_major = o->sm_major;
    ko.copts.sm_minor = o->sm_minor;
    char *src = NULL;
    size_t len = 0;
    long long vals[CUT_KS_MAX_VARS];
    char why[512];
    cut_call call;
    cut_compiled bin;
    memset(&bin, 0, sizeof bin);
    int rc = -1;
    if (o->compile_cache)
        snprintf(ko.cache, sizeof ko.cache, "%s", o->compile_cache);
    else if (cut_default_cache_dir(ko.cache, sizeof ko.cache, e) != 0)
        goto out;
    ko.copts.cache_dir = ko.cache;
    const int triton = k.lang == CUT_KS_TRITON;
    snprintf(path, sizeof path, "%s/%s", dir, cut_opt_src_name(&k));
    if (cut_read_file(path, &src, &len, e) != 0 || cut_kstate_tunables(&k, src, vals, e) != 0)
        goto out;
    if (!cut_kspec_allows(&k, vals, why, sizeof why)) {
        cut_err_set(e, "%s: restriction broken: %s", path, why);
        goto out;
    }
    if (cut_kspec_call(&k, vals, &call, e) != 0 ||
        (!triton && cut_compile_one(src, "kernel.cu", &ko.copts, &bin, e) != 0) || cut_kspec_work(&k, &ko.work, e) != 0)
        goto out;
    if (!triton && !bin.ok) {
        res->status = CUT_ST_COMPILE_ERROR;
        snprintf(res->error, sizeof res->error, "NVRTC: %.400s", bin.log ? bin.log : "");
        rc = profile_only ? 0 : write_result(dir, id, res, gpu, e);
        goto out;
    }
    call.src = src;
    call.bin = triton ? NULL : &bin;
    call.keep_dir = triton ? dir : NULL;
    if (profile_only) {
        rc = launch_once(&ko, &call, res, e);
        goto out;
    }
    cut_kernel_src ks = {.src = src, .keep_dir = triton ? dir : NULL};
    const cut_candidate cand = {.ks = &ks, .bin = call.bin};
    if (cut_opt_load_refs(&ko, e) != 0 || cut_kspec_run_candidates(&k, &ko.check, r, &cand, 1, res, e) != 0)
        goto out;
    rc = write_result(dir, id, res, gpu, e);
out:
    free(src);
    cut_compiled_free(&bin);
    cut_opt_kopt_free(&ko);
    cut_kspec_free(&k);
    return rc;
}
