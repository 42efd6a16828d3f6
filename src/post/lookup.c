/* cutune — run-time lookup of the best recorded kernel (cutune/lookup.h). */
#include "cutune/lookup.h"
#include "cutune/export.h"
#include "cutune/gemm_record.h"
#include "cutune/gemm_space.h"
#include "cutune/record.h"
#include "cutune/space.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cut_lookup_kernel_free(cut_lookup_kernel *k)
{
    if (!k)
        return;
    cut_kernel_src_free(&k->ks);
    memset(k, 0, sizeof *k);
}

/* The same GEMM, extras included: a kernel tuned for another batch, alpha or beta computes something else (its
 * launch grid, its Cin argument), even where a hand-edited log holds it under this workload's name. */
static int gemm_equal(const cut_gemm *a, const cut_gemm *b)
{
    return a->m == b->m && a->n == b->n && a->k == b->k && a->layout == b->layout && a->dtype == b->dtype &&
           cut_gemm_batch(a) == cut_gemm_batch(b) && cut_gemm_alpha(a) == cut_gemm_alpha(b) &&
           cut_gemm_beta(a) == cut_gemm_beta(b);
}

/* What a query skipped, for the message of an empty answer. */
typedef struct tally {
    int valid, other_gpu, other_backend, failed;
    char other_gpus[256]; /* distinct GPU names seen of this workload, ", "-separated */
} tally;

static void note_gpu(tally *t, const char *name)
{
    if (!name[0] || strstr(t->other_gpus, name))
        return;
    size_t used = strlen(t->other_gpus);
    snprintf(t->other_gpus + used, sizeof t->other_gpus - used, "%s%s", used ? ", " : "", name);
}

static int gpu_matches(const cut_lookup_query *q, const cut_measure_env *env)
{
    if (!q->gpu || !q->gpu[0]) /* the emulator's records: no GPU to match */
        return 1;
    if (!strncmp(q->gpu, "GPU-", 4))
        return !strcmp(env->gpu_uuid, q->gpu);
    return !strcmp(env->gpu_name, q->gpu);
}

/* 1 when a record of the workload counts; else the reason goes into t. */
static int record_counts(const cut_lookup_query *q, cut_status st, double ms, const cut_measure_env *env, tally *t)
{
    const char *backend = q->backend ? q->backend : "cuda";
    if (strcmp(env->backend, backend) != 0) {
        t->other_backend++;
        return 0;
    }
    if (!gpu_matches(q, env)) {
        t->other_gpu++;
        note_gpu(t, env->gpu_name);
        return 0;
    }
    if (st != CUT_ST_OK || !isfinite(ms) || !(ms > 0)) {
        t->failed++;
        return 0;
    }
    t->valid++;
    return 1;
}

static int check_query(const cut_lookup_query *q, cut_err *e)
{
    if (!q || !q->records_dir || !q->records_dir[0])
        return cut_err_set(e, "lookup: no records folder given");
    if ((!q->gpu || !q->gpu[0]) && !(q->backend && !strcmp(q->backend, "emu")))
        return cut_err_set(e, "lookup: no GPU given (its name or UUID, as cut_gpu_query reports it)");
    return 0;
}

static int none(const cut_lookup_query *q, const char *workload, const tally *t, cut_err *e)
{
    char seen[512] = "";
    if (t->other_gpu || t->other_backend || t->failed)
        snprintf(seen, sizeof seen, " (the folder has %d record(s) of it on other GPUs%s%s, %d of other backends, %d "
                                    "failed)",
                 t->other_gpu, t->other_gpus[0] ? ": " : "", t->other_gpus, t->other_backend, t->failed);
    else
        snprintf(seen, sizeof seen, " (the folder has no record of it at all)");
    cut_err_set(e, "no record for %s on %s (%s) in %s%s: tune this shape there first", workload,
                q->gpu && q->gpu[0] ? q->gpu : "the host emulator",
                q->backend ? q->backend : "cuda", q->records_dir, seen);
    return CUT_LOOKUP_NONE;
}

int cut_lookup_conv(const cut_lookup_query *q, const cut_conv *c, const char *entry, cut_lookup_kernel *out,
                    cut_err *e)
{
    memset(out, 0, sizeof *out);
    if (check_query(q, e) != 0)
        return -1;
    char shape[256];
    cut_conv_name(c, shape, sizeof shape);
    cut_err why = {{0}};
    if (cut_conv_validate(c, &why) != 0)
        return cut_err_set(e, "lookup: %s is not a convolution: %s", shape, why.msg);
    char **names;
    int n;
    if (cut_records_dir_list(q->records_dir, ".json", &names, &n, e) != 0)
        return -1;
    tally t = {0};
    cut_record best = {0};
    int rc = 0, have = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        int idx;
        cut_conv fc;
        if (cut_conv_parse_case_name(names[i], &idx, &fc, &why) != 0 || !cut_conv_equal(&fc, c))
            continue; /* another workload, or not a conv log */
        char path[4096];
        cut_record *recs = NULL;
        int nr = 0, partial = 0;
        if (cut_path_join(path, sizeof path, q->records_dir, names[i], e) != 0 ||
            cut_records_load(path, &recs, &nr, &partial, e) != 0) {
            rc = -1;
        } else {
            for (int j = 0; j < nr; j++) {
                const cut_record *r = &recs[j];
                if (!cut_conv_equal(&r->conv, c) || strcmp(r->dtype, "fp32") != 0 ||
                    !record_counts(q, r->status, r->median_ms, &r->env, &t))
                    continue;
                if (!have || r->median_ms < best.median_ms) {
                    best = *r;
                    have = 1;
                    snprintf(out->file, sizeof out->file, "%s", path);
                    out->line = j + 1;
                }
            }
        }
        free(recs);
    }
    cut_records_names_free(names, n);
    if (rc != 0)
        return cut_err_wrap(e, "lookup");
    if (!have)
        return none(q, shape, &t, e);
    cut_devlimits lim;
    cut_devlimits_sm90(&lim);
    cut_sched_describe(&best.sched, out->sched, sizeof out->sched);
    if (cut_sched_check(c, &best.sched, &lim, &why) != 0 ||
        cut_codegen_conv_named(c, &best.sched, entry ? entry : "cut_conv2d", &out->ks, &why) != 0) {
        cut_kernel_src_free(&out->ks);
        return cut_err_set(e, "lookup: %s line %d: the schedule '%s' cannot be generated any more: %s", out->file,
                           out->line, out->sched, why.msg);
    }
    /* a split-K kernel takes its workspace as arguments (see lookup.h) */
    cut_export_kernel k = {.conv = *c, .sched = best.sched, .ks = out->ks};
    if (cut_export_workspace(&k, &out->ws_partial_floats, &out->ws_counters)) {
        static const char def[] = "#define CUT_WS_PARAM 1 /* the split-K workspace is the caller's (lookup.h) */\n";
        const size_t len = strlen(out->ks.src);
        char *src = cut_xmalloc(sizeof def + len);
        memcpy(src, def, sizeof def - 1);
        memcpy(src + sizeof def - 1, out->ks.src, len + 1);
        free(out->ks.src);
        out->ks.src = src;
    }
    out->median_ms = best.median_ms;
    out->gflops = best.gflops;
    out->candidates = t.valid;
    return CUT_LOOKUP_FOUND;
}

int cut_lookup_gemm(const cut_lookup_query *q, const cut_gemm *g, const char *entry, cut_lookup_kernel *out,
                    cut_err *e)
{
    memset(out, 0, sizeof *out);
    if (check_query(q, e) != 0)
        return -1;
    char name[128], file[160], path[4096];
    cut_gemm_name(g, name, sizeof name);
    snprintf(file, sizeof file, "%s.json", name);
    cut_err why = {{0}};
    if (cut_path_join(path, sizeof path, q->records_dir, file, e) != 0)
        return -1;
    if (!cut_path_exists(q->records_dir))
        return cut_err_set(e, "lookup: there is no records folder '%s'", q->records_dir);
    cut_gemm_record *recs = NULL;
    int nr = 0, partial = 0, bad = 0;
    char note[256] = "";
    if (cut_gemm_records_load(path, &recs, &nr, &partial, &bad, note, sizeof note, e) != 0) {
        free(recs);
        return cut_err_wrap(e, "lookup");
    }
    tally t = {0};
    int best = -1;
    for (int j = 0; j < nr; j++) {
        const cut_gemm_record *r = &recs[j];
        if (!gemm_equal(&r->gemm, g) || !record_counts(q, r->status, r->median_ms, &r->env, &t))
            continue;
        if (best < 0 || r->median_ms < recs[best].median_ms)
            best = j;
    }
    if (best < 0) {
        free(recs);
        return none(q, name, &t, e);
    }
    const cut_gemm_record *r = &recs[best];
    snprintf(out->file, sizeof out->file, "%s", path);
    out->line = best + 1; /* of the well-formed lines: the loader skips malformed ones */
    cut_gemm_sched_describe(&r->sched, out->sched, sizeof out->sched);
    cut_devlimits lim;
    cut_devlimits_sm90(&lim);
    int rc = CUT_LOOKUP_FOUND;
    if (cut_gemm_sched_check(g, &r->sched, &lim, &why) != 0 || cut_codegen_gemm(g, &r->sched, &out->ks, &why) != 0 ||
        (entry && cut_codegen_rename_entry(&out->ks, entry, &why) != 0)) {
        cut_kernel_src_free(&out->ks);
        rc = cut_err_set(e, "lookup: %s: the schedule '%s' cannot be generated any more: %s", path, out->sched,
                         why.msg);
    } else {
        out->median_ms = r->median_ms;
        out->gflops = r->gflops;
        out->candidates = t.valid;
    }
    free(recs);
    return rc;
}
