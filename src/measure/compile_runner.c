/* cutune — the compile runner (cutune/measure.h: cut_runner_compile_new): calls compiled from their CUDA source
 * here, each in a process of its own (compile_child.h), then run on an inner runner, or not run at all (the
 * `compile` backend). A serving rank of an MPI job measures through it, so that the compiles of a search spread over
 * the ranks as its measurements do; in one process it answers "does every candidate of this space compile, and with
 * how many registers?". */
#include "compile/pool.h"
#include "measure/compile_child.h"
#include "measure/gpu_runner_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct compile_impl {
    cut_runner *inner;      /* runs the cubins (owned); NULL: compile only */
    cut_compile_opts o;     /* its strings point at the copies below */
    char *cache_dir, *extra;
    double limit_s;
    cut_work work;          /* compile only: the prepared work, which calls are checked against */
    cut_measure_env env;    /* compile only */
    /* the batch being run: its calls, and their compiles, bins[i] for calls[i] */
    const cut_call *calls;
    cut_compiled *bins;
    int n;
    cut_err *errs;          /* a compile's setup error (NVRTC unusable, no process) */
    int *failed;
} compile_impl;

static int compile_prepare(cut_runner *r, cut_work *w, int take, cut_err *e)
{
    compile_impl *m = r->impl;
    if (m->inner) {
        const int rc = m->inner->prepare(m->inner, w, take, e);
        r->work = rc == 0 ? m->inner->work : NULL;
        return rc;
    }
    cut_work copy;
    if (cut_work_keep(w, take, &copy, e) != 0)
        return -1;
    cut_work_free(&m->work);
    m->work = copy;
    r->work = &m->work;
    return 0;
}

/* Pool job i: call i compiled for its target (sm_XXa when it asks for it). */
static void compile_job(void *ctx, int i)
{
    compile_impl *m = ctx;
    cut_compile_opts o;
    cut_compile_opts_for_kernel(&m->o, m->calls[i].arch_a, &o);
    m->failed[i] = cut_compile_isolated(m->calls[i].src, NULL, &o, m->limit_s, &m->bins[i], &m->errs[i]) != 0;
}

/* One call of the batch, compiled already: a compile error, a result of "compiled" (compile only), or the inner
 * runner's result, with the compile's numbers. */
static int run_compiled(cut_runner *r, const cut_call *c, const cut_run_opts *o, cut_result *res, cut_err *e)
{
    compile_impl *m = r->impl;
    const int i = (int)(c - m->calls);
    cut_result_reset(res);
    if (m->failed[i]) {
        *e = m->errs[i];
        return -1;
    }
    cut_compile_info info;
    cut_compile_info_of(&m->bins[i], &info);
    cut_err ce = {{0}};
    if (!m->inner && cut_call_check(r->work, c, &ce) != 0) {
        res->status = CUT_ST_LAUNCH_ERROR;
        snprintf(res->error, sizeof res->error, "%.250s", ce.msg);
    } else if (cut_gr_compile_failed(&m->bins[i], res) != 0 || !m->inner) {
        if (res->status == CUT_ST_OK)
            res->status = CUT_ST_COMPILED; /* compiled, not run: no time */
    } else {
        cut_call call = *c;
        call.bin = &m->bins[i];
        m->inner->timing = r->timing;
        if (m->inner->run(m->inner, &call, 1, o, res, e) != 0)
            return -1;
    }
    res->comp = info;
    return 0;
}

static int compile_run(cut_runner *r, const cut_call *calls, int n, const cut_run_opts *o, cut_result *res, cut_err *e)
{
    compile_impl *m = r->impl;
    if (!r->work)
        return cut_err_set(e, "compile runner: run called before prepare");
    for (int i = 0; i < n; i++)
        if (!calls[i].src)
            return cut_err_set(e, "compile runner: call %d comes without its CUDA source", i);
    m->calls = calls;
    m->n = n;
    m->bins = cut_xcalloc((size_t)(n > 0 ? n : 1), sizeof *m->bins);
    m->errs = cut_xcalloc((size_t)(n > 0 ? n : 1), sizeof *m->errs);
    m->failed = cut_xcalloc((size_t)(n > 0 ? n : 1), sizeof *m->failed);
    int rc = cut_pool_run(m->o.nthreads, n, compile_job, m, e);
    if (rc == 0)
        rc = cut_runner_run_each(r, calls, n, o, res, run_compiled, e);
    for (int i = 0; i < n; i++)
        cut_compiled_free(&m->bins[i]);
    free(m->bins), free(m->errs), free(m->failed);
    m->bins = NULL, m->errs = NULL, m->failed = NULL, m->calls = NULL;
    return rc;
}

static const cut_measure_env *compile_env(cut_runner *r)
{
    compile_impl *m = r->impl;
    return m->inner ? m->inner->env(m->inner) : &m->env;
}

static void compile_destroy(cut_runner *r)
{
    if (!r)
        return;
    compile_impl *m = r->impl;
    if (m) {
        cut_runner_free(m->inner);
        cut_work_free(&m->work);
        free(m->cache_dir);
        free(m->extra);
        free(m);
    }
    free(r);
}

int cut_runner_compiles(const cut_runner *r)
{
    return r && r->run == compile_run;
}

/* The env of the compile-only runner: backend "compile", the target and the NVRTC that compiles for it. */
static void compile_only_env(const cut_compile_opts *o, int version, cut_measure_env *env)
{
    memset(env, 0, sizeof *env);
    snprintf(env->backend, sizeof env->backend, "compile");
    snprintf(env->gpu_name, sizeof env->gpu_name, "NVRTC sm_%d%d (not run)", o->sm_major, o->sm_minor);
    env->driver_version = version;
    snprintf(env->driver_string, sizeof env->driver_string, "NVRTC %d.%d", version / 1000, version % 1000 / 10);
    env->sm_clock_mhz = -1;
    env->power_limit_w = -1;
    env->other_procs = -1;
    env->clock_events = -1;
}

/* Caller frees with cut_runner_free (inner is freed with it, also when this fails). */
cut_runner *cut_runner_compile_new(cut_runner *inner, const cut_compile_opts *o, double compile_limit_s, cut_err *e)
{
    const int version = cut_nvrtc_version(e);
    char worker[4096];
    /* each compile runs in the worker executable (compile_child.h): one that cannot be found ends the run here,
     * before any candidate, with the sentence that names CUTUNE_WORKER and the paths tried */
    if (version < 0 || cut_worker_path(worker, sizeof worker, e) != 0) {
        if (version >= 0)
            cut_err_wrap(e, "the compile runner compiles in the cutune-worker executable");
        cut_runner_free(inner);
        return NULL;
    }
    compile_impl *m = cut_xcalloc(1, sizeof *m);
    m->inner = inner;
    m->o = *o;
    m->cache_dir = o->cache_dir ? cut_xstrdup(o->cache_dir) : NULL;
    m->extra = o->extra_opts ? cut_xstrdup(o->extra_opts) : NULL;
    m->o.cache_dir = m->cache_dir;
    m->o.extra_opts = m->extra;
    m->limit_s = compile_limit_s;
    compile_only_env(o, version, &m->env);
    cut_runner *r = cut_xcalloc(1, sizeof *r);
    r->impl = m;
    r->prepare = compile_prepare;
    r->run = compile_run;
    r->env = compile_env;
    r->destroy = compile_destroy;
    /* compile only: nothing is checked, so a GEMM's references are left to this runner, which never needs them */
    r->runner_refs = inner ? inner->runner_refs : 1;
    if (inner)
        r->timing = inner->timing;
    else
        cut_timing_default(&r->timing);
    return r;
}
