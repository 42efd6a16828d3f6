/* cutune — runner helpers shared by every runner (see cutune/measure.h). */
#include "cutune/measure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cut_result_reset(cut_result *r)
{
    memset(r, 0, sizeof *r);
    r->status = CUT_ST_OK;
    r->median_ms = r->min_ms = r->max_ms = r->warm_ms = -1.0;
}

void cut_timing_default(cut_timing *t)
{
    t->warmup = 2;
    t->min_repeats = 5;
    t->max_repeats = 200;
    t->min_total_ms = 20.0;
    t->flush_l2 = 1;
    t->graph = 1;
    t->warm = 0;
    t->timeout_s = 10.0;
}

void cut_runner_free(cut_runner *r)
{
    if (r && r->destroy)
        r->destroy(r);
}

int cut_call_of_kernel(const cut_kernel_src *ks, const cut_compiled *bin, cut_call *c, cut_result *res)
{
    memset(c, 0, sizeof *c);
    if (ks->ntma < 0 || ks->ntma > 2 || (ks->ntma == 2 && ks->tma[0].operand == ks->tma[1].operand)) {
        res->status = CUT_ST_LAUNCH_ERROR;
        snprintf(res->error, sizeof res->error, "the kernel has %d TMA maps (0, 1 or 2 of distinct operands)",
                 ks->ntma);
        return -1;
    }
    c->src = ks->src;
    c->bin = bin;
    snprintf(c->entry, sizeof c->entry, "%s", ks->entry);
    memcpy(c->grid, ks->grid, sizeof c->grid);
    memcpy(c->block, ks->block, sizeof c->block);
    c->smem = ks->smem_dynamic;
    c->tol_scale = ks->tol_scale;
    c->gpu_only = ks->uses_inline_ptx;
    c->arch_a = ks->arch_a;
    if (ks->extra_bufs < 0 || 3 + ks->extra_bufs > CUT_CALL_MAX_ARGS) {
        res->status = CUT_ST_LAUNCH_ERROR;
        snprintf(res->error, sizeof res->error, "the kernel asks for %d buffers after the three", ks->extra_bufs);
        return -1;
    }
    c->nargs = 3 + ks->extra_bufs;
    for (int i = 0; i < c->nargs; i++)
        c->args[i].buf = i;
    /* a map of the work's buffer 0 or 1 (a GEMM's A and B, a conv's weights) takes that buffer's place, by value */
    for (int j = 0; j < ks->ntma; j++) {
        const int at = ks->tma[j].operand == 1 ? 1 : 0;
        c->args[at].tma = 1;
        c->args[at].desc = ks->tma[j];
    }
    return 0;
}

/* ---- every op onto the one interface ---- */

int cut_run_opts_check(const char *who, int n, const cut_run_opts *o, const cut_work *refs, cut_err *e)
{
    if (!o)
        return 0;
    if ((o->outs || o->energy) && n != 1)
        return cut_err_set(e, "%s: captured outputs and energy are for one call at a time (%d given)", who, n);
    if (o->energy && (!o->er || cut_energy_plan_check(o->energy, e) != 0))
        return o->er ? -1 : cut_err_set(e, "%s: an energy plan without a result to fill", who);
    if (o->energy && refs && !cut_work_has_refs(refs))
        return cut_err_set(e, "%s: an energy run needs a work with references", who);
    return 0;
}

int cut_runner_run_each(cut_runner *r, const cut_call *calls, int n, const cut_run_opts *o, cut_result *res,
                        int (*one)(cut_runner *r, const cut_call *c, const cut_run_opts *o, cut_result *res, cut_err *e),
                        cut_err *e)
{
    for (int i = 0; i < n; i++) {
        if (r->stop_at > 0 && cut_now_s() >= r->stop_at) {
            cut_result_reset(&res[i]);
            res[i].not_run = 1; /* the time budget is spent: this call is not started */
        } else if (one(r, &calls[i], o, &res[i], e) != 0) {
            return -1;
        }
        if (r->on_result)
            r->on_result(r->on_result_ctx, &res[i]);
    }
    return 0;
}

/* The op's work from (op, seed) is the one the runner holds: nothing to build. */
static int same_key(const cut_runner *r, const cut_work_op *op, uint64_t seed)
{
    return r->work && r->keyed && r->key_seed == seed && memcmp(&r->key_op, op, sizeof *op) == 0;
}

/* Prepares the op's freshly built work w (taken over; freed here on failure) and remembers its key. */
static int prepare_keyed(cut_runner *r, cut_work *w, uint64_t seed, cut_err *e)
{
    const cut_work_op op = w->op;
    r->keyed = 0;
    const int rc = r->prepare(r, w, 1, e);
    cut_work_free(w);
    if (rc == 0) {
        r->keyed = 1;
        r->key_op = op;
        r->key_seed = seed;
    }
    return rc;
}

int cut_runner_prepare_conv(cut_runner *r, const cut_conv *c, uint64_t seed, cut_err *e)
{
    if (cut_conv_validate(c, e) != 0)
        return -1;
    cut_work_op op;
    cut_conv_work_op(c, &op);
    if (same_key(r, &op, seed))
        return 0;
    cut_work w;
    if (cut_conv_work(c, seed, &w, e) != 0)
        return -1;
    return prepare_keyed(r, &w, seed, e);
}

int cut_runner_prepare_gemm(cut_runner *r, const cut_gemm *g, uint64_t seed, cut_err *e)
{
    if (cut_gemm_validate(g, e) != 0)
        return -1;
    if ((int)g->dtype < 0 || g->dtype >= CUT_DT_COUNT)
        return cut_err_set(e, "GEMM dtype %d is unknown", (int)g->dtype);
    cut_work_op op;
    cut_gemm_work_op(g, &op);
    if (same_key(r, &op, seed))
        return 0;
    cut_work w;
    if (cut_gemm_work(g, seed, r->runner_refs, &w, e) != 0)
        return -1;
    return prepare_keyed(r, &w, seed, e);
}

int cut_runner_prepare_like(cut_runner *r, const cut_runner *from, cut_err *e)
{
    if (!from->work || !from->keyed || from->runner_refs != r->runner_refs)
        return 0;
    if (same_key(r, &from->key_op, from->key_seed))
        return 1;
    r->keyed = 0;
    if (r->prepare(r, (cut_work *)from->work, 0, e) != 0)
        return -1;
    r->keyed = 1;
    r->key_op = from->key_op;
    r->key_seed = from->key_seed;
    return 1;
}

void cut_runner_ahead(cut_runner *r, const cut_call *c)
{
    if (r && r->ahead)
        r->ahead(r, c);
}

int cut_runner_prepare_work(cut_runner *r, const cut_work *w, cut_err *e)
{
    if (cut_work_check(w, e) != 0)
        return -1;
    r->keyed = 0;
    return r->prepare(r, (cut_work *)w, 0, e);
}

/* Generated candidates as calls; NULL where a candidate has no launch configuration or its calls cannot be made
 * (res set: LAUNCH_ERROR). */
static int measure_calls(cut_runner *r, const cut_candidate *cands, int n, const cut_run_opts *o, cut_result *res,
                         cut_err *e)
{
    if (!r->work || r->work->op.kind == CUT_WORK_PLAIN)
        return cut_err_set(e, "runner: candidates measured before a conv or GEMM workload was prepared");
    cut_call *calls = cut_xcalloc((size_t)(n > 0 ? n : 1), sizeof *calls);
    int *ok = cut_xcalloc((size_t)(n > 0 ? n : 1), sizeof *ok);
    int m = 0;
    for (int i = 0; i < n; i++) {
        cut_result_reset(&res[i]);
        if (!cands[i].ks) {
            res[i].status = CUT_ST_LAUNCH_ERROR;
            snprintf(res[i].error, sizeof res[i].error, "candidate has no launch configuration");
            continue;
        }
        if (cut_call_of_kernel(cands[i].ks, cands[i].bin, &calls[m], &res[i]) != 0)
            continue;
        ok[i] = 1;
        m++;
    }
    int rc = 0;
    if (m == n) { /* every candidate makes a call: results straight into res (its on_result sees them there) */
        rc = n > 0 ? r->run(r, calls, n, o, res, e) : 0;
    } else {
        cut_result *out = cut_xcalloc((size_t)(m > 0 ? m : 1), sizeof *out);
        rc = m > 0 ? r->run(r, calls, m, o, out, e) : 0;
        for (int i = 0, j = 0; i < n && rc == 0; i++)
            if (ok[i])
                res[i] = out[j++];
        free(out);
    }
    free(ok);
    free(calls);
    return rc;
}

int cut_runner_measure(cut_runner *r, const cut_candidate *cands, int n, cut_result *res, cut_err *e)
{
    return measure_calls(r, cands, n, NULL, res, e);
}

int cut_runner_energy(cut_runner *r, const cut_candidate *c, const cut_energy_plan *p, cut_result *res,
                      cut_energy_result *er, cut_err *e)
{
    memset(er, 0, sizeof *er);
    if (cut_energy_plan_check(p, e) != 0)
        return -1;
    const cut_run_opts o = {.energy = p, .er = er};
    return measure_calls(r, c, 1, &o, res, e);
}

/* The checks both user-kernel calls share before anything runs: a prepared work, the call against it. */
static int call_usable(cut_runner *r, const cut_call *c, cut_err *e)
{
    if (!r->work)
        return cut_err_set(e, "runner: a kernel call before its work was prepared");
    return cut_call_check(r->work, c, e);
}

int cut_runner_run_call(cut_runner *r, const cut_call *c, cut_result *res, cut_work_outputs *outs, cut_err *e)
{
    cut_result_reset(res);
    if (outs)
        memset(outs, 0, sizeof *outs);
    if (call_usable(r, c, e) != 0)
        return -1;
    const int capture = !cut_work_has_refs(r->work);
    if (capture && !outs)
        return cut_err_set(e, "kernel call: the work has no references, so the outputs need somewhere to go");
    const cut_run_opts o = {.outs = capture ? outs : NULL};
    const int rc = r->run(r, c, 1, &o, res, e);
    if ((rc != 0 || res->status != CUT_ST_OK) && capture)
        cut_work_outputs_free(outs); /* nothing half-captured becomes a reference */
    return rc;
}

int cut_runner_energy_call(cut_runner *r, const cut_call *c, const cut_energy_plan *p, cut_result *res,
                           cut_energy_result *er, cut_err *e)
{
    cut_result_reset(res);
    memset(er, 0, sizeof *er);
    if (call_usable(r, c, e) != 0 || cut_energy_plan_check(p, e) != 0)
        return -1;
    if (!cut_work_has_refs(r->work))
        return cut_err_set(e, "runner: an energy run needs a work with references (capture them with a plain run, "
                              "then prepare the work again with them)");
    const cut_run_opts o = {.energy = p, .er = er};
    return r->run(r, c, 1, &o, res, e);
}
