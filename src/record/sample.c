/* cutune — representative sampling of tuning records (seed 000/001: tuningrecords/ -> tuningresults/).
 *
 * Only successful, measured trials (status ok, finite median > 0) take part. They are sorted by median time,
 * fastest first; equal times are ordered by trial number, then by position in the log, so the choice is
 * deterministic. With m such records:
 *   - m <= keep: all of them, in rank order;
 *   - keep < 5 (test mode keeps 2): the keep fastest;
 *   - otherwise G = keep / 5 groups of 5 consecutive ranks. Group 0 starts at rank 0 and also takes the
 *     remainder keep % 5 (keep = 27: the 7 fastest). Group g > 0 starts at rank floor(p_g * m) where
 *     p = 0.10, 0.25, 0.50, 0.75 when G == 5 (the seeds' 25 = top 5 + p10/p25/p50/p75), and p_g = g / G for
 *     any other G (keep = 10: top 5 + median; keep = 20: top 5 + p25/p50/p75). A group that would overlap the
 *     previous one starts right after it instead, so no record is chosen twice.
 * Percentile positions are computed in integer arithmetic (floor(m * pct / 100), floor(m * g / G)).
 *
 * With an energy objective (--objective energy|edp) only a few trials per round have energy measured, so the
 * ranking is in two tiers: the trials with the objective measured first, by the objective (then by time, trial,
 * position), then all other successful trials by time. The groups above are taken over that one ranking. */
#include "cutune/gemm_record.h"
#include "cutune/record.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUT_SAMPLE_GROUP 5

typedef struct rank_item {
    int tier; /* 0: objective measured (energy/edp only), 1: ranked by time */
    double obj;
    double t;
    int trial;
    int i;
} rank_item;

static int cmp_rank(const void *pa, const void *pb)
{
    const rank_item *a = pa, *b = pb;
    if (a->tier != b->tier)
        return a->tier < b->tier ? -1 : 1;
    if (a->obj != b->obj)
        return a->obj < b->obj ? -1 : 1;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->trial != b->trial)
        return a->trial < b->trial ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Rank at which group g (> 0) of ngroups starts, before overlap handling. */
static int group_start(int g, int ngroups, int m)
{
    static const int seed_pct[5] = {0, 10, 25, 50, 75};
    if (ngroups == 5)
        return (int)((int64_t)m * seed_pct[g] / 100);
    return (int)((int64_t)m * g / ngroups);
}

int cut_sample_select(const cut_record *recs, int n, int keep, int *idx)
{
    return cut_sample_select_obj(recs, n, keep, CUT_OBJ_TIME, idx);
}

int cut_sample_select_obj(const cut_record *recs, int n, int keep, cut_objective o, int *idx)
{
    if (n <= 0 || keep <= 0)
        return 0;
    rank_item *v = cut_xmalloc((size_t)n * sizeof *v);
    int m = 0;
    for (int i = 0; i < n; i++) {
        const cut_record *r = &recs[i];
        if (r->status != CUT_ST_OK || !isfinite(r->median_ms) || !(r->median_ms > 0))
            continue;
        double obj = o == CUT_OBJ_TIME ? -1 : cut_record_objective(r, o);
        v[m++] = (rank_item){obj > 0 ? 0 : 1, obj > 0 ? obj : 0, r->median_ms, r->trial, i};
    }
    qsort(v, (size_t)m, sizeof *v, cmp_rank);
    int count = 0;
    if (m <= keep || keep < CUT_SAMPLE_GROUP) {
        int take = CUT_MIN(m, keep);
        for (int j = 0; j < take; j++)
            idx[count++] = v[j].i;
        free(v);
        return count;
    }
    int ngroups = keep / CUT_SAMPLE_GROUP, extra = keep % CUT_SAMPLE_GROUP;
    int next = 0; /* first rank not yet taken */
    for (int g = 0; g < ngroups; g++) {
        int size = CUT_SAMPLE_GROUP + (g == 0 ? extra : 0);
        int start = g == 0 ? 0 : group_start(g, ngroups, m);
        if (start < next)
            start = next;
        int j = start;
        for (; j < start + size && j < m && count < keep; j++)
            idx[count++] = v[j].i;
        next = j;
    }
    free(v);
    return count;
}

/* Writes out_path with the chosen records' original lines, in rank order. */
static int sample_file(const char *in_path, const char *out_path, int keep, cut_objective o, cut_err *e)
{
    cut_records_file f;
    if (cut_records_read(in_path, &f, e) != 0) {
        cut_records_file_free(&f);
        return -1;
    }
    int *idx = cut_xmalloc((size_t)keep * sizeof *idx);
    int k = cut_sample_select_obj(f.recs, f.n, keep, o, idx);
    cut_buf out;
    cut_buf_init(&out);
    for (int j = 0; j < k; j++) {
        int i = idx[j];
        cut_buf_append(&out, f.text + f.line_off[i], f.line_len[i]);
        cut_buf_append(&out, "\n", 1);
    }
    int rc = cut_write_file_atomic(out_path, out.data ? out.data : "", out.len, e);
    cut_buf_free(&out);
    free(idx);
    cut_records_file_free(&f);
    return rc;
}

/* The GEMM log in_path sampled like a conv log (by median time: GEMM trials carry no energy) into out_path, the
 * chosen records in rank order, each written again as its record line. A log with unreadable lines is sampled from
 * its readable ones. */
static int sample_gemm_file(const char *in_path, const char *out_path, int keep, cut_err *e)
{
    cut_gemm_record *recs = NULL;
    int n = 0, partial = 0, bad = 0;
    char note[256];
    if (cut_gemm_records_load(in_path, &recs, &n, &partial, &bad, note, sizeof note, e) != 0)
        return -1;
    cut_record *ranks = cut_xcalloc((size_t)(n ? n : 1), sizeof *ranks);
    for (int i = 0; i < n; i++) {
        ranks[i].status = recs[i].status;
        ranks[i].median_ms = recs[i].median_ms;
        ranks[i].trial = recs[i].trial;
    }
    int *idx = cut_xmalloc((size_t)keep * sizeof *idx);
    int k = cut_sample_select(ranks, n, keep, idx);
    cut_buf out;
    cut_buf_init(&out);
    for (int j = 0; j < k; j++)
        cut_gemm_record_to_json(&recs[idx[j]], &out);
    int rc = cut_write_file_atomic(out_path, out.data ? out.data : "", out.len, e);
    cut_buf_free(&out);
    free(idx);
    free(ranks);
    free(recs);
    return rc;
}

int cut_sample_dir(const char *in_dir, const char *out_dir, int keep, cut_objective o, cut_err *e)
{
    if (keep <= 0)
        return cut_err_set(e, "cannot keep %d records per case: keep must be at least 1", keep);
    char *ri = realpath(in_dir, NULL);
    if (!ri)
        return cut_err_set(e, "cannot open tuning records folder '%s': %s", in_dir, strerror(errno));
    char *ro = realpath(out_dir, NULL);
    int same = ro && strcmp(ri, ro) == 0;
    free(ri);
    free(ro);
    if (same)
        return cut_err_set(e, "the results folder '%s' is the records folder '%s': sampling would overwrite the raw "
                              "logs",
                           out_dir, in_dir);
    char **names;
    int n;
    if (cut_records_dir_list(in_dir, ".json", &names, &n, e) != 0)
        return -1;
    if (n > 0 && cut_mkdirs(out_dir, e) != 0) {
        cut_records_names_free(names, n);
        return -1;
    }
    int written = 0;
    for (int i = 0; i < n; i++) {
        char in_path[4096], out_path[4096];
        if (cut_path_join(in_path, sizeof in_path, in_dir, names[i], e) != 0 ||
            cut_path_join(out_path, sizeof out_path, out_dir, names[i], e) != 0 ||
            sample_file(in_path, out_path, keep, o, e) != 0) {
            cut_records_names_free(names, n);
            return -1;
        }
        written++;
    }
    cut_records_names_free(names, n);
    /* Every op's logs: the GEMM logs (gemm_*.json) too. */
    if (cut_gemm_records_dir_list(in_dir, &names, &n, e) != 0)
        return -1;
    if (n > 0 && cut_mkdirs(out_dir, e) != 0) {
        cut_records_names_free(names, n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char in_path[4096], out_path[4096];
        if (cut_path_join(in_path, sizeof in_path, in_dir, names[i], e) != 0 ||
            cut_path_join(out_path, sizeof out_path, out_dir, names[i], e) != 0 ||
            sample_gemm_file(in_path, out_path, keep, e) != 0) {
            cut_records_names_free(names, n);
            return -1;
        }
        written++;
    }
    cut_records_names_free(names, n);
    return written;
}
