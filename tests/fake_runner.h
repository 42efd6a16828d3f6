/* cutune tests — a fake runner (header-only): it keeps the prepared work, and each call's result comes from the
 * test's own function (through cut_runner_run_each), so the loop above it runs without compiling or timing. */
#ifndef CUTUNE_TEST_FAKE_RUNNER_H
#define CUTUNE_TEST_FAKE_RUNNER_H

#include "cutune/measure.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct fake {
    int id;
    double delay_s; /* per call */
    int fail_at;    /* >= 1: the fail_at-th call is a setup error */
    int calls;
    cut_work work;
    cut_measure_env env;
    /* One call's result (it may use the fields above). */
    int (*one)(cut_runner *r, const cut_call *c, const cut_run_opts *o, cut_result *res, cut_err *e);
} fake;

static int fake_prepare(cut_runner *r, cut_work *w, int take, cut_err *e)
{
    fake *f = r->impl;
    cut_work_free(&f->work);
    if (cut_work_keep(w, take, &f->work, e) != 0)
        return -1;
    r->work = &f->work;
    return 0;
}

static int fake_run(cut_runner *r, const cut_call *calls, int n, const cut_run_opts *o, cut_result *res, cut_err *e)
{
    return cut_runner_run_each(r, calls, n, o, res, ((fake *)r->impl)->one, e);
}

static const cut_measure_env *fake_env(cut_runner *r) { return &((fake *)r->impl)->env; }

static void fake_destroy(cut_runner *r)
{
    fake *f = r->impl;
    cut_work_free(&f->work);
    free(f);
    free(r);
}

/* Fake runner id ("replay" backend, GPU "fake <id>") whose calls end in one. Freed with cut_runner_free. */
static cut_runner *fake_runner_new(int id,
                                   int (*one)(cut_runner *, const cut_call *, const cut_run_opts *, cut_result *,
                                              cut_err *))
{
    fake *f = calloc(1, sizeof *f);
    f->id = id;
    f->one = one;
    snprintf(f->env.backend, sizeof f->env.backend, "replay");
    snprintf(f->env.gpu_name, sizeof f->env.gpu_name, "fake %d", id);
    cut_runner *r = calloc(1, sizeof *r);
    r->impl = f;
    r->prepare = fake_prepare;
    r->run = fake_run;
    r->env = fake_env;
    r->destroy = fake_destroy;
    cut_timing_default(&r->timing);
    return r;
}

#endif
