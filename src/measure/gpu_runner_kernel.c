/* cutune — the GPU runner's parent side for a user kernel's work (kwork.h), for a GPU worker and for the emulation
 * worker alike: prepare_kernel keeps a deep copy of the work and sends it (PREPARE_KERNEL); run_kernel sends one call
 * (RUN_KERNEL: the cubin, or the source for the emulation worker, which compiles it) and reads back the result and
 * any captured outputs (KERNEL_RESULT); energy_kernel sends the call with an energy plan (ENERGY_KERNEL) and reads
 * back the result and the measurement (ENERGY_RESULT). A fault or hang of the call ends the worker only; the next
 * request starts a fresh one, which gets the kept work again. */
#include "measure/gpu_runner_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cut_gr_kernel_forget(gpu_impl *g)
{
    cut_wp_prepare_kernel_free(&g->kw);
    memset(&g->kw, 0, sizeof g->kw);
    g->is_kernel = 0;
}

/* Keeps a deep copy of w (every buffer's data) in g, replacing any workload. */
static void kernel_keep(gpu_impl *g, const cut_work *w)
{
    cut_gr_tensors_free(g);
    cut_gr_kernel_forget(g);
    g->kw.work = *w;
    for (int i = 0; i < w->nbufs; i++)
        for (int s = 0; s < 2; s++) {
            const void *src = w->bufs[i].data[s];
            const size_t n = w->bufs[i].elems * cut_elem_size(w->bufs[i].dtype);
            g->kw.work.bufs[i].data[s] = src ? memcpy(cut_xmalloc(n), src, n) : NULL;
        }
    g->is_kernel = 1;
    g->is_gemm = 0;
    g->have_workload = 1;
    g->worker_prepared = 0;
}

int cut_gr_prepare_kernel(cut_runner *r, const cut_work *w, cut_err *e)
{
    if (cut_work_check(w, e) != 0)
        return -1;
    kernel_keep(r->impl, w);
    return cut_gr_workload_send(r->impl, e);
}

/* The energy part of a kernel request (ENERGY_KERNEL instead of RUN_KERNEL). */
typedef struct kernel_energy {
    const cut_energy_plan *plan;
    cut_energy_result *er;
    int ok;                     /* the meter succeeded */
    char why[CUT_ERR_LEN - 64]; /* its sentence when not */
} kernel_energy;

/* The reply to RUN_KERNEL (en NULL: into res and outs) or ENERGY_KERNEL (into res and en); an ERROR reply is a
 * setup error (-1, e set). A reply that does not decode, or of the wrong type, is res's FAULT. */
static int kernel_reply(gpu_impl *g, const cut_wp_frame *f, double timeout_s, kernel_energy *en, cut_result *res,
                        cut_work_outputs *outs, cut_err *e)
{
    cut_err err = {{0}};
    cut_work_outputs none;
    const uint32_t want = en ? CUT_WP_ENERGY_RESULT : CUT_WP_KERNEL_RESULT;
    if (f->type == want) {
        const int bad = en ? cut_wp_energy_result_decode(f, res, &en->ok, en->why, sizeof en->why, en->er, &err)
                           : cut_wp_kernel_result_decode(f, &g->kw.work, res, outs ? outs : &none, &err);
        if (bad)
            cut_gr_reply_failure(g, -1, timeout_s, &err, res);
        else if (res->status == CUT_ST_FAULT || (g->emu && res->status == CUT_ST_TIMEOUT))
            cut_gr_worker_stop(g, 0, NULL, 0); /* its context is dead, or its watchdog fired: it exits by itself */
        return 0;
    }
    if (f->type == CUT_WP_ERROR) {
        char msg[CUT_ERR_LEN - 64];
        cut_wp_error_decode(f, msg, sizeof msg);
        if (g->emu)
            return cut_err_set(e, "emulation worker: %s", msg);
        return cut_err_set(e, "measurement worker on GPU %d: %s", g->dev, msg);
    }
    cut_err_set(&err, "unexpected %s reply to %s", cut_wp_type_name(f->type), en ? "ENERGY_KERNEL" : "RUN_KERNEL");
    cut_gr_reply_failure(g, -1, timeout_s, &err, res);
    return 0;
}

/* Sends call c (with en: and its energy plan) to the worker and reads the reply into res (and outs or en). A call
 * without a cubin on a GPU is res's COMPILE_ERROR, not sent. Returns -1 only for setup errors (e set). */
static int kernel_request(cut_runner *r, const cut_call *c, kernel_energy *en, cut_result *res,
                          cut_work_outputs *outs, cut_err *e)
{
    gpu_impl *g = r->impl;
    if ((!g->emu || c->bin) && cut_gr_compile_failed(c->bin, res) != 0)
        return 0;
    if (g->emu && !c->src)
        return cut_err_set(e, "emulation runner: %s without the kernel's source", en ? "energy_kernel" : "run_kernel");
    /* the emulation worker compiles the source itself */
    const void *code = g->emu ? (const void *)c->src : (const void *)c->bin->cubin;
    const size_t code_len = g->emu ? strlen(c->src) : c->bin->cubin_size;
    cut_buf b;
    cut_buf_init(&b);
    if (en)
        cut_wp_energy_kernel_encode(c, code, code_len, en->plan, &b);
    else
        cut_wp_run_kernel_encode(c, code, code_len, &b);
    const double timeout_s =
        cut_gr_deadline_s(r, en ? CUT_WP_ENERGY_KERNEL : CUT_WP_RUN_KERNEL, en ? en->plan : NULL, g->emu, 0);
    const size_t max_reply = en ? CUT_WP_MAX_REPLY : cut_wp_kernel_result_max(&g->kw.work);
    cut_wp_frame f = {0};
    cut_err err = {{0}};
    int rc = cut_gr_request(g, &r->timing, en ? CUT_WP_ENERGY_KERNEL : CUT_WP_RUN_KERNEL, &b, timeout_s, max_reply,
                            &f, &err);
    cut_buf_free(&b);
    if (rc == -3)
        return cut_err_set(e, "%s", err.msg);
    if (rc != 1) {
        cut_gr_reply_failure(g, rc, timeout_s, &err, res);
        return 0;
    }
    int ret = kernel_reply(g, &f, timeout_s, en, res, outs, e);
    cut_wp_frame_free(&f);
    return ret;
}

int cut_gr_run_kernel(cut_runner *r, const cut_call *c, cut_result *res, cut_work_outputs *outs, cut_err *e)
{
    gpu_impl *g = r->impl;
    cut_result_reset(res);
    if (outs)
        memset(outs, 0, sizeof *outs);
    if (!g->have_workload || !g->is_kernel)
        return cut_err_set(e, "GPU runner: run_kernel called before prepare_kernel");
    if (cut_call_check(&g->kw.work, c, e) != 0)
        return -1;
    if (!outs && !cut_work_has_refs(&g->kw.work))
        return cut_err_set(e, "GPU runner: run_kernel on a work without references needs outs for the captured "
                              "outputs");
    return kernel_request(r, c, NULL, res, outs, e);
}

int cut_gr_energy_kernel(cut_runner *r, const cut_call *c, const cut_energy_plan *p, cut_result *res,
                         cut_energy_result *er, cut_err *e)
{
    gpu_impl *g = r->impl;
    cut_result_reset(res);
    memset(er, 0, sizeof *er);
    if (!g->have_workload || !g->is_kernel)
        return cut_err_set(e, "GPU runner: energy_kernel called before prepare_kernel");
    if (!cut_work_has_refs(&g->kw.work))
        return cut_err_set(e, "GPU runner: energy_kernel needs a work with references (capture them with "
                              "run_kernel, then prepare_kernel again with them)");
    if (cut_call_check(&g->kw.work, c, e) != 0 || cut_energy_plan_check(p, e) != 0)
        return -1;
    kernel_energy en = {.plan = p, .er = er};
    if (kernel_request(r, c, &en, res, NULL, e) != 0)
        return -1;
    if (res->status != CUT_ST_OK) {
        memset(er, 0, sizeof *er); /* no energy for a call that failed */
        return 0;
    }
    if (!en.ok)
        return cut_err_set(e, "%s", en.why[0] ? en.why : "the energy measurement failed");
    return 0;
}
