/* cutune — report: loading an output folder (trial logs, representatives, baseline, kernel outputs). */
#include "post/report_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int measured(const cut_record *r)
{
    return r->status == CUT_ST_OK && isfinite(r->median_ms) && r->median_ms > 0;
}

/* Counts the valid trials of c and finds the fastest. */
static void case_stats(cut_report_case *c)
{
    c->valid = 0;
    c->best = -1;
    for (int i = 0; i < c->n; i++) {
        if (!measured(&c->recs[i]))
            continue;
        c->valid++;
        if (c->best < 0 || c->recs[i].median_ms < c->recs[c->best].median_ms)
            c->best = i;
    }
}

/* Representatives' times from results_dir/<name>.json (missing file: none). */
static int load_reps(cut_report_case *c, const char *results_dir, cut_err *e)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s.json", results_dir, c->name) >= (int)sizeof path)
        return cut_err_set(e, "path too long under '%s'", results_dir);
    cut_record *recs;
    int n, partial;
    if (cut_records_load(path, &recs, &n, &partial, e) != 0)
        return -1;
    c->rep_ms = cut_xcalloc((size_t)(n > 0 ? n : 1), sizeof *c->rep_ms);
    for (int i = 0; i < n; i++)
        if (measured(&recs[i]))
            c->rep_ms[c->nrep++] = recs[i].median_ms;
    free(recs);
    return 0;
}

/* One trial log: tuningrecords/<fname>. */
static int load_case(cut_report_case *c, const char *rec_dir, const char *fname, const char *results_dir,
                     cut_err *e)
{
    char path[4096];
    int partial;
    c->cudnn_ms = -1;
    snprintf(c->name, sizeof c->name, "%.*s", (int)(strlen(fname) - strlen(".json")), fname);
    if (cut_conv_parse_case_name(fname, &c->case_idx, &c->conv, e) != 0)
        return cut_err_wrap(e, "%s/%s", rec_dir, fname);
    if (cut_path_join(path, sizeof path, rec_dir, fname, e) != 0 ||
        cut_records_load(path, &c->recs, &c->n, &partial, e) != 0)
        return -1;
    case_stats(c);
    return load_reps(c, results_dir, e);
}

static int by_case(const void *a, const void *b)
{
    const cut_report_case *x = a, *y = b;
    return (x->case_idx > y->case_idx) - (x->case_idx < y->case_idx);
}

static int load_cases(cut_report *r, const char *rec_dir, const char *results_dir, cut_err *e)
{
    char **names;
    int n;
    if (cut_records_dir_list(rec_dir, ".json", &names, &n, e) != 0)
        return -1;
    r->c = cut_xcalloc((size_t)(n > 0 ? n : 1), sizeof *r->c);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++, r->n++)
        rc = load_case(&r->c[i], rec_dir, names[i], results_dir, e);
    cut_records_names_free(names, n);
    if (rc != 0)
        return -1;
    if (n == 0)
        return cut_err_set(e, "no trial logs (caseN_*.json) in '%s'", rec_dir);
    qsort(r->c, (size_t)r->n, sizeof *r->c, by_case);
    for (int i = 1; i < r->n; i++)
        if (r->c[i].case_idx == r->c[i - 1].case_idx)
            return cut_err_set(e, "'%s' holds two logs of case %d: %s.json and %s.json", rec_dir, r->c[i].case_idx,
                               r->c[i - 1].name, r->c[i].name);
    return 0;
}

/* Applies a baseline file; required: a missing file is an error. */
static int load_baseline(cut_report *r, const char *path, int required, cut_err *e)
{
    if (!required && !cut_path_exists(path))
        return 0;
    char *text;
    size_t len;
    if (cut_read_file(path, &text, &len, e) != 0)
        return -1;
    int rc = cut_report_baseline_apply(r, text, len, path, e);
    free(text);
    return rc;
}

int cut_report_load(const char *outdir, const char *results_dir, const char *baseline_path, cut_report *r,
                    cut_err *e)
{
    char rec_dir[4096], final_path[4096], kdir[4096];
    memset(r, 0, sizeof *r);
    if (cut_path_join(rec_dir, sizeof rec_dir, outdir, "tuningrecords", e) != 0 ||
        cut_path_join(final_path, sizeof final_path, outdir, "final.jsonl", e) != 0 ||
        cut_path_join(kdir, sizeof kdir, outdir, "kernel_outputs", e) != 0)
        return -1;
    if (load_cases(r, rec_dir, results_dir, e) != 0 || load_baseline(r, final_path, 0, e) != 0)
        return -1;
    if (baseline_path && load_baseline(r, baseline_path, 1, e) != 0)
        return -1;
    if (cut_path_exists(kdir))
        return cut_report_load_energy(r, kdir, e);
    return 0;
}

void cut_report_free(cut_report *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n; i++) {
        cut_report_case *c = &r->c[i];
        free(c->recs);
        free(c->rep_ms);
        for (int p = 0; p < c->ncaps; p++)
            free(c->caps[p].k);
        free(c->caps);
    }
    free(r->c);
    memset(r, 0, sizeof *r);
}
