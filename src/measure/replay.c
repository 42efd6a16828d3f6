/* cutune — a runner whose times come from a table (cutune/measure.h, cut_runner_replay_new): every call still runs,
 * checked and timed, on the runner it wraps; a call whose code and launch the table knows gets the table's times
 * instead of its own, one it does not know keeps its own, which the table then learns (one line appended, with one
 * write). Two runs over the same table time every call they share identically: a search that must make the same
 * decisions when it is resumed after a kill as when it is not can be shown to, despite timer noise. */
#include "cutune/measure.h"
#include "cutune/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct replay_row {
    uint64_t key;
    double median, min, max;
} replay_row;

typedef struct replay {
    cut_runner *inner;
    char path[1024];
    replay_row *rows;
    int n, cap;
    /* during a run: its calls and results, and which results the inner runner reported */
    const cut_call *calls;
    cut_result *res;
    int ncalls;
    unsigned char *seen;
    cut_runner *outer;
} replay;

/* The call's code and launch: its source, entry, grid, block, shared memory and scalar arguments. */
static uint64_t call_key(const cut_call *c)
{
    uint64_t h = cut_fnv1a(0xcbf29ce484222325ULL, c->src ? c->src : "", c->src ? strlen(c->src) : 0);
    h = cut_fnv1a(h, c->entry, strlen(c->entry));
    h = cut_fnv1a(h, c->grid, sizeof c->grid);
    h = cut_fnv1a(h, c->block, sizeof c->block);
    h = cut_fnv1a(h, &c->smem, sizeof c->smem);
    for (int i = 0; i < c->nargs; i++)
        if (c->args[i].buf < 0)
            h = cut_fnv1a(h, c->args[i].bytes, c->args[i].size);
    return h;
}

static replay_row *find(replay *p, uint64_t key)
{
    for (int i = 0; i < p->n; i++)
        if (p->rows[i].key == key)
            return &p->rows[i];
    return NULL;
}

static void add(replay *p, const replay_row *r)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->rows = cut_xrealloc(p->rows, (size_t)p->cap * sizeof *p->rows);
    }
    p->rows[p->n++] = *r;
}

/* Reads the table: one "KEY MEDIAN MIN MAX" line per call (hex key, ms); a torn last line is ignored. */
static int load(replay *p, cut_err *e)
{
    FILE *f = fopen(p->path, "r");
    if (!f)
        return errno == ENOENT ? 0 : cut_err_set(e, "replay table '%s': %s", p->path, strerror(errno));
    char line[256];
    while (fgets(line, sizeof line, f)) {
        replay_row r;
        if (strchr(line, '\n') && sscanf(line, "%" SCNx64 " %lf %lf %lf", &r.key, &r.median, &r.min, &r.max) == 4 &&
            !find(p, r.key))
            add(p, &r);
    }
    fclose(f);
    return 0;
}

static void learn(replay *p, const replay_row *r)
{
    add(p, r);
    char line[160];
    const int len = snprintf(line, sizeof line, "%016" PRIx64 " %.17g %.17g %.17g\n", r->key, r->median, r->min, r->max);
    const int fd = open(p->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (write(fd, line, (size_t)len) != len)
            fprintf(stderr, "cutune: replay table '%s': short write\n", p->path);
        close(fd);
    }
}

/* Result i of the run: the table's times when it knows the call, else the table learns them. */
static void apply(replay *p, int i)
{
    cut_result *r = &p->res[i];
    p->seen[i] = 1;
    if (r->status != CUT_ST_OK || !(r->median_ms > 0))
        return;
    const uint64_t key = call_key(&p->calls[i]);
    const replay_row *row = find(p, key);
    if (row) {
        r->median_ms = row->median;
        r->min_ms = row->min;
        r->max_ms = row->max;
    } else {
        const replay_row nr = {key, r->median_ms, r->min_ms, r->max_ms};
        learn(p, &nr);
    }
}

/* Each result as the inner runner finalises it (one of the run's: its times replaced first), then the outer
 * runner's own observer. */
static void on_inner_result(void *ctx, const cut_result *res)
{
    replay *p = ctx;
    if (p->res && res >= p->res && res < p->res + p->ncalls)
        apply(p, (int)(res - p->res));
    if (p->outer->on_result)
        p->outer->on_result(p->outer->on_result_ctx, res);
}

static int r_prepare(cut_runner *r, cut_work *w, int take, cut_err *e)
{
    replay *p = r->impl;
    p->inner->timing = r->timing;
    const int rc = p->inner->prepare(p->inner, w, take, e);
    r->work = p->inner->work;
    return rc;
}

static int r_run(cut_runner *r, const cut_call *calls, int n, const cut_run_opts *o, cut_result *res, cut_err *e)
{
    replay *p = r->impl;
    p->inner->timing = r->timing;
    p->inner->stop_at = r->stop_at;
    p->inner->on_result = on_inner_result;
    p->inner->on_result_ctx = p;
    p->calls = calls;
    p->res = res;
    p->ncalls = n;
    p->seen = cut_xcalloc((size_t)(n > 0 ? n : 1), 1);
    const int rc = p->inner->run(p->inner, calls, n, o, res, e);
    for (int i = 0; i < n && rc == 0; i++) /* results the inner runner did not report one by one */
        if (!p->seen[i])
            apply(p, i);
    free(p->seen);
    p->seen = NULL;
    p->calls = NULL;
    p->res = NULL;
    return rc;
}

static const cut_measure_env *r_env(cut_runner *r)
{
    replay *p = r->impl;
    return p->inner->env(p->inner);
}

static void r_destroy(cut_runner *r)
{
    replay *p = r->impl;
    cut_runner_free(p->inner);
    free(p->rows);
    free(p);
    free(r);
}

cut_runner *cut_runner_replay_new(cut_runner *inner, const char *table, cut_err *e)
{
    replay *p = cut_xcalloc(1, sizeof *p);
    if (snprintf(p->path, sizeof p->path, "%s", table) >= (int)sizeof p->path || load(p, e) != 0) {
        if (!e->msg[0])
            cut_err_set(e, "replay table path too long");
        free(p->rows);
        free(p);
        return NULL;
    }
    p->inner = inner;
    cut_runner *r = cut_xcalloc(1, sizeof *r);
    *r = *inner; /* timing, runner_refs, keyed ... as the inner runner has them */
    r->impl = p;
    r->prepare = r_prepare;
    r->run = r_run;
    r->env = r_env;
    r->destroy = r_destroy;
    r->on_result = NULL;
    r->on_result_ctx = NULL;
    p->outer = r;
    return r;
}
