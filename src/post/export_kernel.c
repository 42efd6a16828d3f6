/* cutune — export of optimized kernels (include/cutune/export.h): cutune optimize's kernels/_NAME/ folders -> one
 * stand-alone CUDA project per kernel under kernels/opt/NAME/. Loading reads and checks everything first (the spec
 * and that it reproduces the search, the measured best, sources, headers, launches, inputs), so a refused export
 * writes nothing. */
#include "record/json.h"
#include "cutune/export.h"
#include "cutune/util.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_KERNELS 256
#define MAX_STEPS 100000 /* a parent chain longer than this is a loop */

/* ---- small helpers ------------------------------------------------------------------------------------------ */


static const char *jstr(const cJSON *o, const char *key)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
    return s ? s : "";
}

static double jnum(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* v as an unsigned launch dimension; UINT_MAX (no real launch has it) when v is absent, negative or too large. */
static unsigned juint(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < (double)UINT_MAX ? (unsigned)v->valuedouble
                                                                                         : UINT_MAX;
}

/* Reads dir/name into *out (malloc'd). */
static int read_text(const char *dir, const char *name, char **out, cut_err *e)
{
    char path[4200];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return cut_read_file(path, out, &len, e);
}

static int cmp_name(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* ---- the spec ----------------------------------------------------------------------------------------------- */

/* The word after opt in cmd (summary.json's command: argv joined by single spaces) into out; 0 when absent. */
static int command_option(const char *cmd, const char *opt, char *out, size_t n)
{
    const size_t ol = strlen(opt);
    for (const char *p = strstr(cmd, opt); p; p = strstr(p + 1, opt)) {
        if ((p > cmd && p[-1] != ' ') || p[ol] != ' ')
            continue;
        const char *v = p + ol + 1, *end = strchr(v, ' ');
        const size_t len = end ? (size_t)(end - v) : strlen(v);
        if (!len || len >= n)
            return 0;
        memcpy(out, v, len);
        out[len] = 0;
        return 1;
    }
    return 0;
}

/* The folder the recorded command ran in, when the resolved opt_dir ends with its relative --outdir. */
static int command_cwd(const char *opt_dir, const char *outdir, char *out, size_t n)
{
    char rel[2048], *real = realpath(opt_dir, NULL);
    snprintf(rel, sizeof rel, "%s", strncmp(outdir, "./", 2) ? outdir : outdir + 2);
    for (size_t l = strlen(rel); l > 1 && rel[l - 1] == '/'; l--)
        rel[l - 1] = 0;
    const size_t rl = strlen(rel), pl = real ? strlen(real) : 0;
    int ok = real && rel[0] != '/' && pl > rl && real[pl - rl - 1] == '/' && strcmp(real + pl - rl, rel) == 0;
    if (ok)
        snprintf(out, n, "%.*s", (int)(pl - rl - 1), real);
    free(real);
    return ok;
}

/* Applies the run's --sizes ("N=V,...": each size the spec has) to k. */
static int apply_sizes(cut_kspec *k, const char *sizes, cut_err *e)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", sizes);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '='), *end = NULL;
        const long long v = eq ? strtoll(eq + 1, &end, 10) : 0;
        if (!eq || end == eq + 1 || *end)
            return cut_err_set(e, "the recorded --sizes: '%s' is not NAME=VALUE", tok);
        *eq = 0;
        for (int i = 0; i < k->nsizes; i++)
            if (!strcmp(k->sizes[i].name, tok) && cut_kspec_set_size(k, tok, v, e) != 0)
                return cut_err_wrap(e, "the recorded --sizes");
    }
    return 0;
}

/* The spec of an older search (no spec.json): the --input and --sizes of the command in opt_dir/summary.json. */
static int spec_from_summary(cut_export_opt *x, const char *opt_dir, cut_err *e)
{
    char path[4200], input[2048], sizes[512] = "", outd[2048] = "out", base[4096], cand[2][6200];
    snprintf(path, sizeof path, "%s/summary.json", opt_dir);
    if (!cut_path_exists(path))
        return cut_err_set(e, "%s has no spec.json and %s has no summary.json: nothing records the spec of '%s' "
                              "(run cutune optimize --resume --input SPEC for it, which records it)",
                           x->kdir, opt_dir, x->name);
    cJSON *s = cut_rec_read_json_file(path, e), *k;
    if (!s)
        return -1;
    int listed = 0, nc = 0;
    cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(s, "kernels")) listed |= !strcmp(jstr(k, "name"), x->name);
    const char *cmd = jstr(s, "command");
    const int has_input = command_option(cmd, "--input", input, sizeof input);
    command_option(cmd, "--sizes", sizes, sizeof sizes);
    command_option(cmd, "--outdir", outd, sizeof outd);
    cJSON_Delete(s);
    if (!listed || !has_input)
        return cut_err_set(e, "%s has no spec.json, and %s is of a run that %s (run cutune optimize --resume "
                              "--input SPEC for it, which records its spec)",
                           x->kdir, path, listed ? "records no --input" : "did not optimize it");
    if (input[0] == '/')
        snprintf(cand[nc++], sizeof cand[0], "%s", input);
    else {
        if (command_cwd(opt_dir, outd, base, sizeof base))
            snprintf(cand[nc++], sizeof cand[0], "%s/%s", base, input);
        snprintf(cand[nc++], sizeof cand[0], "%s", input);
    }
    int at = -1;
    for (int i = nc - 1; i >= 0; i--)
        at = cut_path_exists(cand[i]) ? i : at;
    if (at < 0)
        return cut_err_set(e, "%s has no spec.json, and the spec path that %s records (--input %s) no longer "
                              "exists (looked for '%s'): put the spec back there, or run cutune optimize --resume "
                              "--input SPEC, which records it",
                           x->kdir, path, input, cand[0]);
    struct stat st;
    if (stat(cand[at], &st) == 0 && S_ISDIR(st.st_mode)) {
        char file[6400];
        snprintf(file, sizeof file, "%s/%s.json", cand[at], x->name);
        if (!cut_path_exists(file))
            return cut_err_set(e, "%s has no spec.json, and the spec folder that %s records (--input %s) has no "
                                  "%s.json any more",
                               x->kdir, path, input, x->name);
        snprintf(cand[at], sizeof cand[0], "%s", file);
    }
    snprintf(x->spec_from, sizeof x->spec_from, "%s", cand[at]);
    if (cut_kspec_load(cand[at], &x->spec, e) != 0)
        return cut_err_wrap(e, "the spec that %s records", path);
    return sizes[0] ? apply_sizes(&x->spec, sizes, e) : 0;
}

/* kernels/_NAME/spec.json (what cutune optimize recorded), else the spec summary.json's command names. */
static int load_spec(cut_export_opt *x, const char *opt_dir, cut_err *e)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/spec.json", x->kdir);
    if (cut_path_exists(path)) {
        snprintf(x->spec_from, sizeof x->spec_from, "%s", path);
        if (cut_kspec_load(path, &x->spec, e) != 0)
            return cut_err_wrap(e, "the spec recorded with the search");
    } else if (spec_from_summary(x, opt_dir, e) != 0) {
        return -1;
    }
    if (strcmp(x->spec.name, x->name) != 0)
        return cut_err_set(e, "%s: the spec is named '%s', the search '%s'", x->spec_from, x->spec.name, x->name);
    return 0;
}

/* ---- the states -------------------------------------------------------------------------------------------- */

/* dir/result.json's median time when its status is ok; -1 with e otherwise. *speedup: its "speedup" or -1. */
static int result_ms(const char *dir, double *ms, double *speedup, cut_err *e)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/result.json", dir);
    cJSON *r = cut_rec_read_json_file(path, e);
    if (!r)
        return -1;
    *ms = jnum(r, "median_ms", -1);
    *speedup = jnum(r, "speedup", -1);
    int rc = 0;
    if (strcmp(jstr(r, "status"), "ok") != 0 || !(*ms > 0))
        rc = cut_err_set(e, "%s: status '%s', no measured time", path, jstr(r, "status"));
    cJSON_Delete(r);
    return rc;
}

/* The launch that dir/control.json recorded equals call's (the spec resolves the search's launch). */
static int check_launch(const char *dir, const cut_call *call, cut_err *e)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/control.json", dir);
    cJSON *c = cut_rec_read_json_file(path, e);
    if (!c)
        return -1;
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(c, "launch");
    l = l ? l : c; /* the baseline's control.json has grid, block and smem at its top level */
    unsigned rec[7] = {0};
    const char *keys[2] = {"grid", "block"};
    int ok = 1;
    for (int w = 0; w < 2; w++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(l, keys[w]);
        ok &= cJSON_GetArraySize(a) == 3;
        for (int d = 0; ok && d < 3; d++) {
            const cJSON *v = cJSON_GetArrayItem(a, d);
            rec[3 * w + d] = juint(v);
        }
    }
    rec[6] = juint(cJSON_GetObjectItemCaseSensitive(l, "smem"));
    cJSON_Delete(c);
    const unsigned want[7] = {call->grid[0], call->grid[1], call->grid[2], call->block[0], call->block[1],
                              call->block[2], call->smem};
    if (ok && memcmp(rec, want, sizeof want) == 0)
        return 0;
    return cut_err_set(e, "%s: the search launched grid (%u,%u,%u) block (%u,%u,%u) smem %u, the spec now resolves "
                          "grid (%u,%u,%u) block (%u,%u,%u) smem %u: the spec (or the run's --sizes) changed",
                       path, rec[0], rec[1], rec[2], rec[3], rec[4], rec[5], rec[6], want[0], want[1], want[2],
                       want[3], want[4], want[5], want[6]);
}

/* Fills role r from its source: tunables read back from it (vals: given instead), the call, the header (malloc'd
 * into st->header, owned by x). */
static int make_state(cut_export_opt *x, cut_xo_role r, const char *id, const char *from, const char *src,
                      const char *entry, const long long *vals, cut_err *e)
{
    static const char *const roles[CUT_XO_ROLES] = {"baseline", "best", "reference"};
    cut_xo_state *st = &x->st[r];
    st->present = 1;
    st->ms = -1;
    char name[CUT_KS_NAME];
    memcpy(name, x->name, sizeof name);
    snprintf(st->id, sizeof st->id, "%s", id);
    snprintf(st->entry, sizeof st->entry, "%s_%s", name, roles[r]);
    snprintf(st->ns, sizeof st->ns, "cutune_opt_%s_%s", name, roles[r]);
    if (vals)
        memcpy(st->vals, vals, sizeof st->vals);
    else if (cut_kstate_tunables(&x->spec, src, st->vals, e) != 0)
        return cut_err_wrap(e, "%s", from);
    if (cut_kspec_call(&x->spec, st->vals, &st->call, e) != 0)
        return cut_err_wrap(e, "%s", from);
    char guard[256], banner[2048];
    snprintf(guard, sizeof guard, "CUTUNE_OPT_%s_%s_CUH", x->name, roles[r]);
    for (char *p = guard; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    snprintf(banner, sizeof banner,
             "Generated by cutune %s from %s — do not edit.\n%s's %s (%s): __global__ %s in namespace\n%s (the "
             "spec's entry %s, renamed).",
             CUTUNE_VERSION, from, x->name, roles[r], id, st->entry, st->ns, entry);
    if (cut_export_opt_header(src, entry, st->entry, st->ns, guard, banner, &st->header, e) != 0)
        return cut_err_wrap(e, "%s", from);
    return 0;
}

/* The search's best (search_state.json, a measured variant or the baseline) into id, its folder into dir, its
 * measured time into *ms; x->speedup from its result.json; x->note when the best link disagrees. */
static int find_best(cut_export_opt *x, char *id, size_t idn, char *dir, size_t dn, double *ms, cut_err *e)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/search_state.json", x->kdir);
    if (!cut_path_exists(path))
        return cut_err_set(e, "%s: the search has no measured best (no search_state.json: did its baseline fail? "
                              "see %s/baseline/stderr.log)",
                           x->kdir, x->kdir);
    cJSON *s = cut_rec_read_json_file(path, e), *n;
    if (!s)
        return -1;
    snprintf(id, idn, "%s", jstr(s, "best"));
    int ok = 0;
    cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(s, "nodes")) ok |=
        !strcmp(jstr(n, "id"), id) && !strcmp(jstr(n, "status"), "ok");
    cJSON_Delete(s);
    if (!ok || !id[0] || strchr(id, '/') || strstr(id, ".."))
        return cut_err_set(e, "%s: the search has no measured best (best '%s' is not a measured node)", path, id);
    if (strcmp(id, "baseline") == 0)
        snprintf(dir, dn, "%s/baseline", x->kdir);
    else
        snprintf(dir, dn, "%s/variants/%s", x->kdir, id);
    char link[4200], target[256];
    snprintf(link, sizeof link, "%s/best", x->kdir);
    const ssize_t tl = readlink(link, target, sizeof target - 1);
    target[tl > 0 ? tl : 0] = 0;
    if (tl > 0 && strcmp(target, dir + strlen(x->kdir) + 1) != 0)
        snprintf(x->note, sizeof x->note, "The `best` link of the search points at `%s`, while search_state.json "
                                          "names %s (the search was stopped between the two): %s is exported; "
                                          "`cutune optimize --resume` reconciles them.",
                 target, id, id);
    if (result_ms(dir, ms, &x->speedup, e) != 0)
        return cut_err_wrap(e, "%s: the search has no measured best", x->kdir);
    return 0;
}

/* The moves from the baseline to the best, from each variant's control.json (parent, move, label) and result.json,
 * into x->steps (malloc'd, owned by x). A broken chain is noted, not refused: the export does not need it. */
static void load_steps(cut_export_opt *x, const char *best)
{
    char id[64];
    int cap = 0;
    snprintf(id, sizeof id, "%s", best);
    for (int guard = 0; strcmp(id, "baseline") != 0; guard++) {
        char dir[4200], path[4300];
        cut_err ignore;
        snprintf(dir, sizeof dir, "%s/variants/%s", x->kdir, id);
        snprintf(path, sizeof path, "%s/control.json", dir);
        cJSON *c = guard < MAX_STEPS ? cut_rec_read_json_file(path, &ignore) : NULL;
        if (!c) {
            snprintf(x->note + strlen(x->note), sizeof x->note - strlen(x->note),
                     "%sThe moves before %s are not listed: its control.json is missing or unreadable.",
                     x->note[0] ? " " : "", id);
            break;
        }
        if (x->nsteps == cap) {
            cap = cap ? 2 * cap : 16;
            x->steps = cut_xrealloc(x->steps, (size_t)cap * sizeof *x->steps);
        }
        cut_xo_step *s = &x->steps[x->nsteps++];
        memset(s, 0, sizeof *s);
        snprintf(s->id, sizeof s->id, "%s", id);
        snprintf(s->move, sizeof s->move, "%s", jstr(c, "move"));
        snprintf(s->label, sizeof s->label, "%s", jstr(c, "label"));
        for (char *p = s->label; *p; p++) /* a Markdown table cell */
            *p = *p == '|' || *p == '\n' ? ' ' : *p;
        if (result_ms(dir, &s->ms, &s->speedup, &ignore) != 0)
            s->ms = s->speedup = -1;
        snprintf(id, sizeof id, "%s", jstr(c, "parent"));
        cJSON_Delete(c);
        if (!id[0] || strchr(id, '/'))
            break;
    }
    for (int i = 0; i < x->nsteps / 2; i++) {
        const cut_xo_step t = x->steps[i];
        x->steps[i] = x->steps[x->nsteps - 1 - i];
        x->steps[x->nsteps - 1 - i] = t;
    }
}

/* Each output's reference file of the search holds the bytes the spec's shape needs (sizes unchanged). */
static int check_ref_sizes(const cut_export_opt *x, cut_err *e)
{
    for (int i = 0; i < x->work.nbufs; i++) {
        const cut_work_buf *b = &x->work.bufs[i];
        char path[4400];
        struct stat st;
        snprintf(path, sizeof path, "%s/baseline/ref_%s_0.bin", x->kdir, b->name);
        if (b->is_output && stat(path, &st) == 0 && (size_t)st.st_size != b->elems * cut_elem_size(b->dtype))
            return cut_err_set(e, "%s: %lld bytes, the spec's output %s now needs %zu: the spec (or the run's "
                                  "--sizes) changed",
                               path, (long long)st.st_size, b->name, b->elems * cut_elem_size(b->dtype));
    }
    return 0;
}

static void load_summary(cut_export_opt *x, const char *opt_dir)
{
    char path[4200];
    cut_err ignore;
    snprintf(path, sizeof path, "%s/summary.json", opt_dir);
    cJSON *s = cut_path_exists(path) ? cut_rec_read_json_file(path, &ignore) : NULL;
    snprintf(x->gpu, sizeof x->gpu, "%s", s ? jstr(s, "gpu") : "");
    snprintf(x->backend, sizeof x->backend, "%s", s ? jstr(s, "backend") : "");
    cJSON_Delete(s);
}

/* Reads and checks the search opt_dir/kernels/_name into x (x owns what it gets, also after an error). */
static int load_kernel(cut_export_opt *x, const char *opt_dir, const char *name, cut_err *e)
{
    char best[64], bdir[4200], base_dir[4200], from[128];
    char *base = NULL, *want = NULL, *src = NULL, *ref = NULL;
    double best_ms = -1, unused;
    snprintf(x->name, sizeof x->name, "%s", name);
    snprintf(x->kdir, sizeof x->kdir, "%s/kernels/_%s", opt_dir, name);
    snprintf(base_dir, sizeof base_dir, "%s/baseline", x->kdir);
    int rc = -1;
    if (find_best(x, best, sizeof best, bdir, sizeof bdir, &best_ms, e) != 0 || load_spec(x, opt_dir, e) != 0)
        goto out;
    if (x->spec.lang == CUT_KS_TRITON) { /* a stand-alone CUDA project cannot hold it: its best is kernel.py */
        cut_err_set(e, "%s is a Triton search: its best kernel is %s/kernel.py, a Python module to import; "
                       "export writes CUDA projects only", name, bdir);
        goto out;
    }
    if (read_text(base_dir, "kernel.cu", &base, e) != 0)
        goto out;
    want = cut_kstate_materialise(&x->spec, NULL);
    if (strcmp(base, want) != 0) {
        cut_err_set(e, "%s/kernel.cu is not the source of the spec (%s) with its baseline tunables: the spec "
                       "changed since the search",
                    base_dir, x->spec_from);
        goto out;
    }
    if (make_state(x, CUT_XO_BASELINE, "baseline", "baseline/kernel.cu", base, x->spec.entry, NULL, e) != 0 ||
        check_launch(base_dir, &x->st[CUT_XO_BASELINE].call, e) != 0 ||
        result_ms(base_dir, &x->st[CUT_XO_BASELINE].ms, &unused, e) != 0)
        goto out;
    const int is_base = strcmp(best, "baseline") == 0;
    snprintf(from, sizeof from, "variants/%s/kernel.cu", best);
    if (is_base) { /* exported twice, under the best's names */
        if (make_state(x, CUT_XO_BEST, "baseline", "baseline/kernel.cu", base, x->spec.entry, NULL, e) != 0)
            goto out;
    } else if (read_text(bdir, "kernel.cu", &src, e) != 0 ||
               make_state(x, CUT_XO_BEST, best, from, src, x->spec.entry, NULL, e) != 0 ||
               check_launch(bdir, &x->st[CUT_XO_BEST].call, e) != 0) {
        goto out;
    }
    x->st[CUT_XO_BEST].ms = best_ms;
    if (is_base || !(x->speedup > 0))
        x->speedup = is_base ? 1.0 : x->st[CUT_XO_BASELINE].ms / best_ms;
    if (x->spec.ref_source) { /* as the optimizer wrote it, else as it would have */
        cut_err ignore;
        if (read_text(base_dir, "reference.cu", &ref, &ignore) != 0)
            ref = cut_kstate_materialise_src(&x->spec, NULL, x->spec.ref_source);
        if (make_state(x, CUT_XO_REFERENCE, "reference", "baseline/reference.cu", ref, x->spec.ref_entry,
                       x->st[CUT_XO_BASELINE].vals, e) != 0)
            goto out;
        snprintf(x->st[CUT_XO_REFERENCE].call.entry, sizeof x->st[CUT_XO_REFERENCE].call.entry, "%s",
                 x->spec.ref_entry);
    }
    if (cut_kspec_work(&x->spec, &x->work, e) != 0 || check_ref_sizes(x, e) != 0)
        goto out;
    load_summary(x, opt_dir);
    load_steps(x, best);
    rc = 0;
out:
    free(base);
    free(want);
    free(src);
    free(ref);
    return rc;
}

/* ---- loading all ------------------------------------------------------------------------------------------- */

/* The NAMEs of opt_dir/kernels/_NAME/ folders, sorted; -1 with e when opt_dir or kernels/ is missing. */
static int list_kernels(const char *opt_dir, char (*names)[CUT_KS_NAME], int max, int *n, cut_err *e)
{
    char kdir[4200];
    struct stat st;
    *n = 0;
    if (stat(opt_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return cut_err_set(e, "'%s' is not a folder (the --outdir of cutune optimize)", opt_dir);
    snprintf(kdir, sizeof kdir, "%s/kernels", opt_dir);
    DIR *d = opendir(kdir);
    if (!d)
        return cut_err_set(e, "'%s' holds no optimized kernel (no kernels/ folder): run cutune optimize --outdir %s "
                              "first",
                           opt_dir, opt_dir);
    struct dirent *de;
    while ((de = readdir(d)) && *n < max) {
        char p[4500];
        snprintf(p, sizeof p, "%s/%s", kdir, de->d_name);
        if (de->d_name[0] == '_' && de->d_name[1] && strlen(de->d_name) < CUT_KS_NAME && stat(p, &st) == 0 &&
            S_ISDIR(st.st_mode))
            snprintf(names[(*n)++], CUT_KS_NAME, "%s", de->d_name + 1);
    }
    closedir(d);
    qsort(names, (size_t)*n, sizeof names[0], cmp_name);
    return 0;
}

void cut_export_opt_set_free(cut_export_opt_set *set)
{
    if (!set)
        return;
    for (int i = 0; i < set->n; i++) {
        cut_export_opt *x = &set->k[i];
        for (int r = 0; r < CUT_XO_ROLES; r++)
            free(x->st[r].header);
        free(x->steps);
        cut_kspec_work_free(&x->work);
        cut_kspec_free(&x->spec);
    }
    free(set->k);
    memset(set, 0, sizeof *set);
}

int cut_export_opt_load(const char *opt_dir, const char *name_or_null, cut_export_opt_set *set, cut_err *e)
{
    memset(set, 0, sizeof *set);
    char(*list)[CUT_KS_NAME] = cut_xcalloc(MAX_KERNELS, sizeof *list);
    int n = 0, rc = list_kernels(opt_dir, list, MAX_KERNELS, &n, e);
    if (rc == 0 && n == 0)
        rc = cut_err_set(e, "'%s' holds no optimized kernel (no kernels/_NAME/ folder): run cutune optimize --outdir "
                            "%s first",
                         opt_dir, opt_dir);
    if (rc == 0 && name_or_null) {
        int at = -1;
        cut_buf have;
        cut_buf_init(&have);
        for (int i = 0; i < n; i++) {
            at = strcmp(list[i], name_or_null) == 0 ? i : at;
            cut_buf_printf(&have, "%s%s", i ? ", " : "", list[i]);
        }
        if (at < 0)
            rc = cut_err_set(e, "'%s' has no optimized kernel '%s' (no kernels/_%s/; it has: %s)", opt_dir,
                             name_or_null, name_or_null, have.data);
        cut_buf_free(&have);
        if (at >= 0) {
            memmove(list[0], list[at], sizeof list[0]);
            n = 1;
        }
    }
    if (rc == 0) {
        set->k = cut_xcalloc((size_t)n, sizeof *set->k);
        for (int i = 0; rc == 0 && i < n; i++) {
            set->n++;
            rc = load_kernel(&set->k[i], opt_dir, list[i], e);
        }
    }
    free(list);
    return rc;
}

/* ---- writing ------------------------------------------------------------------------------------------------ */

/* CMAKE_CUDA_ARCHITECTURES value: digits with an optional feature suffix ("90", "90a", "100f"). */
static int arch_ok(const char *arch)
{
    size_t i = 0;
    while (arch && arch[i] >= '0' && arch[i] <= '9')
        i++;
    return i > 0 && i <= 4 && (arch[i] == 0 || ((arch[i] == 'a' || arch[i] == 'f') && arch[i + 1] == 0));
}

static int write_file(const char *dir, const char *name, const void *data, size_t len, cut_err *e)
{
    char path[4400];
    if (cut_path_join(path, sizeof path, dir, name, e) != 0)
        return -1;
    return cut_write_file_atomic(path, data, len, e);
}

/* Writes a cut_buf's text and frees it. */
static int write_buf(const char *dir, const char *name, cut_buf *b, cut_err *e)
{
    const int rc = write_file(dir, name, b->data ? b->data : "", b->len, e);
    cut_buf_free(b);
    cut_buf_init(b);
    return rc;
}

static int write_kernel(const cut_export_opt *x, const char *odir, const char *arch, cut_err *e)
{
    static const char *const files[CUT_XO_ROLES] = {"baseline.cuh", "best.cuh", "reference.cuh"};
    char dir[4200], in_dir[4300];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/%s", odir, x->name);
    snprintf(in_dir, sizeof in_dir, "%s/inputs", dir);
    /* the kernel's own marked folder: an earlier export of it is replaced, a user's file in it stays */
    if (lstat(dir, &st) == 0 && !cut_export_dir_marked(dir) && cut_remove_tree(dir, NULL, e) != 0)
        return -1;
    if (cut_export_reset_dir(dir, e) != 0 || cut_mkdirs(in_dir, e) != 0)
        return -1;
    for (int r = 0; r < CUT_XO_ROLES; r++)
        if (x->st[r].present && write_file(dir, files[r], x->st[r].header, strlen(x->st[r].header), e) != 0)
            return -1;
    for (int i = 0; i < x->work.nbufs; i++) {
        const cut_work_buf *b = &x->work.bufs[i];
        char name[CUT_KS_NAME + 8];
        snprintf(name, sizeof name, "%s.bin", b->name);
        if (!b->is_output && write_file(in_dir, name, b->data[0], b->elems * cut_elem_size(b->dtype), e) != 0)
            return -1;
    }
    cut_buf b;
    cut_buf_init(&b);
    cut_export_opt_manifest(&b, x);
    int rc = write_buf(in_dir, "manifest.txt", &b, e);
    if (rc == 0)
        cut_export_opt_launch_h(&b, x), rc = write_buf(dir, "launch.h", &b, e);
    if (rc == 0)
        cut_export_opt_launch_cu(&b, x), rc = write_buf(dir, "launch.cu", &b, e);
    if (rc == 0)
        cut_export_opt_driver(&b, x), rc = write_buf(dir, "driver.cu", &b, e);
    if (rc == 0)
        cut_export_opt_cmake(&b, x, arch), rc = write_buf(dir, "CMakeLists.txt", &b, e);
    if (rc == 0)
        cut_export_opt_readme(&b, x), rc = write_buf(dir, "README.md", &b, e);
    if (rc == 0)
        rc = cut_export_seal_dir(dir, e);
    cut_buf_free(&b);
    return rc;
}

/* 1 if path a lies inside folder b or is b (both resolved). */
static int path_inside(const char *a, const char *b)
{
    char *ra = realpath(a, NULL), *rb = realpath(b, NULL);
    const size_t lb = rb ? strlen(rb) : 0;
    const int inside = ra && rb && strncmp(ra, rb, lb) == 0 && (ra[lb] == '/' || ra[lb] == 0);
    free(ra);
    free(rb);
    return inside;
}

int cut_export_opt_write(const cut_export_opt_set *set, const char *outdir, const char *arch, cut_err *e)
{
    if (!arch_ok(arch))
        return cut_err_set(e, "'%s' is not a CUDA architecture number such as 90 or 90a", arch ? arch : "(null)");
    if (set->n == 0)
        return cut_err_set(e, "no optimized kernel to export");
    char odir[4200];
    struct stat st;
    snprintf(odir, sizeof odir, "%s/kernels/opt", outdir);
    if (lstat(odir, &st) == 0 && !cut_export_dir_marked(odir))
        return cut_err_set(e, "'%s' exists and was not written by cutune export (no %s file in it): move it away or "
                              "choose another --outdir",
                           odir, CUT_EXPORT_MARKER);
    for (int i = 0; i < set->n; i++) {
        char dir[4300];
        snprintf(dir, sizeof dir, "%s/%s", odir, set->k[i].name);
        if (path_inside(set->k[i].kdir, dir))
            return cut_err_set(e, "the search '%s' is inside '%s', which the export replaces", set->k[i].kdir, dir);
    }
    /* opt/ holds one marked folder per kernel; it is marked itself (with a manifest) when first made */
    if (!cut_export_dir_marked(odir) && cut_export_reset_dir(odir, e) != 0)
        return -1;
    for (int i = 0; i < set->n; i++)
        if (write_kernel(&set->k[i], odir, arch, e) != 0)
            return -1;
    return 0;
}

int cut_export_optimized(const char *opt_dir, const char *name_or_null, const char *outdir, const char *arch,
                         int *nexported, cut_err *e)
{
    cut_export_opt_set set;
    if (nexported)
        *nexported = 0;
    int rc = cut_export_opt_load(opt_dir, name_or_null, &set, e);
    if (rc == 0)
        rc = cut_export_opt_write(&set, outdir, arch, e);
    if (rc == 0 && nexported)
        *nexported = set.n;
    cut_export_opt_set_free(&set);
    return rc;
}
