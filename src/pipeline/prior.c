/* cutune — choosing the prior logs a case's cost model starts from (Ansor-style transfer, TopHub-style shipped
 * logs): the other workloads nearest in shape, over the records folder, --prior-dir folders and the shipped priors. */
#include "cutune/record.h"
#include "cutune/log.h"
#include "cutune/tune.h"
#include "cutune/util.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cut_prior_gpu_slug(const char *gpu, char *buf, size_t n)
{
    size_t i = 0;
    if (n == 0)
        return;
    for (; gpu && gpu[i] && i + 1 < n; i++)
        buf[i] = isalnum((unsigned char)gpu[i]) ? gpu[i] : '_';
    buf[i] = 0;
}

double cut_prior_shape_distance(const cut_conv *a, const cut_conv *b)
{
    double d[6] = {
        log2((double)cut_conv_oh(a) * cut_conv_ow(a)) - log2((double)cut_conv_oh(b) * cut_conv_ow(b)),
        log2(a->co) - log2(b->co), log2(a->ci) - log2(b->ci), log2((double)a->kh * a->kw) - log2((double)b->kh * b->kw),
        log2(a->stride) - log2(b->stride), log2(a->n) - log2(b->n)};
    double s = 0;
    for (int i = 0; i < 6; i++)
        s += d[i] * d[i];
    return sqrt(s);
}

void cut_prior_logs_free(cut_prior_log *logs, int n)
{
    for (int i = 0; logs && i < n; i++)
        free(logs[i].recs);
    free(logs);
}

/* Keeps, in order, the records measured on gpu (NULL: all). Returns how many remain. */
static int keep_gpu(cut_record *recs, int n, const char *gpu)
{
    if (!gpu)
        return n;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(recs[i].env.gpu_name, gpu) == 0)
            recs[m++] = recs[i];
    return m;
}

/* Loads dir/name into l. Returns 1 when it is a usable prior for c (records left, another workload), else 0 with
 * nothing held; an unreadable log gets a note. */
static int load_log(const cut_prior_dir *dir, const char *name, const cut_conv *c, cut_prior_log *l)
{
    memset(l, 0, sizeof *l);
    if (snprintf(l->path, sizeof l->path, "%s/%s", dir->path, name) >= (int)sizeof l->path)
        return 0;
    int partial = 0;
    cut_err e;
    if (cut_records_load(l->path, &l->recs, &l->n, &partial, &e) != 0) {
        cut_log(CUT_LOG_WARN, "cutune: prior %s skipped: %s\n", l->path, e.msg);
        return 0;
    }
    l->n = keep_gpu(l->recs, l->n, dir->gpu);
    if (l->n == 0 || memcmp(&l->recs[0].conv, c, sizeof *c) == 0) {
        free(l->recs);
        l->recs = NULL;
        return 0;
    }
    l->dist = cut_prior_shape_distance(&l->recs[0].conv, c);
    return 1;
}

static int has_workload(const cut_prior_log *logs, int n, const cut_conv *c)
{
    for (int i = 0; i < n; i++)
        if (memcmp(&logs[i].recs[0].conv, c, sizeof *c) == 0)
            return 1;
    return 0;
}

/* Nearest first; equal distances by path, so the choice never depends on qsort's order. */
static int by_dist(const void *pa, const void *pb)
{
    const cut_prior_log *a = pa, *b = pb;
    if (a->dist != b->dist)
        return (a->dist > b->dist) - (a->dist < b->dist);
    return strcmp(a->path, b->path);
}

/* Appends the usable logs of one folder whose workloads are not already in *logs. A missing folder adds nothing. */
static void scan_dir(const cut_prior_dir *dir, const cut_conv *c, cut_prior_log **logs, int *n, int *cap)
{
    char **names = NULL;
    int nn = 0;
    cut_err e;
    if (!dir->path || !cut_path_exists(dir->path))
        return;
    if (cut_records_dir_list(dir->path, ".json", &names, &nn, &e) != 0) {
        cut_log(CUT_LOG_WARN, "cutune: prior folder %s skipped: %s\n", dir->path, e.msg);
        return;
    }
    for (int f = 0; f < nn; f++) {
        cut_prior_log l;
        if (!load_log(dir, names[f], c, &l))
            continue;
        if (has_workload(*logs, *n, &l.recs[0].conv)) { /* an earlier folder's log of it wins */
            free(l.recs);
            continue;
        }
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 16;
            *logs = cut_xrealloc(*logs, sizeof **logs * (size_t)*cap);
        }
        (*logs)[(*n)++] = l;
    }
    cut_records_names_free(names, nn);
}

int cut_prior_select(const cut_prior_dir *dirs, int ndirs, const cut_conv *c, int max, cut_prior_log **out)
{
    cut_prior_log *logs = NULL;
    int n = 0, cap = 0;
    for (int d = 0; d < ndirs; d++)
        scan_dir(&dirs[d], c, &logs, &n, &cap);
    if (n > 0)
        qsort(logs, (size_t)n, sizeof *logs, by_dist);
    int keep = CUT_MAX(0, CUT_MIN(n, max));
    for (int i = keep; i < n; i++)
        free(logs[i].recs);
    if (keep == 0) {
        free(logs);
        logs = NULL;
    }
    *out = logs;
    return keep;
}
