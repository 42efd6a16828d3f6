/* cutune — the GPU runner's parent side of the runs, for a GPU worker and for the emulation worker alike: every run
 * is one RUN request (a call:
 * the cubin, or the source for the emulation worker, which compiles it; optionally observed by an energy plan; or
 * the op's vendor baseline) answered by RUN_RESULT (or VENDOR_RESULT). A fault or hang ends the worker only; the next
 * request starts a fresh one, which gets the selected work again (and the other held works when they are selected). */
#include "measure/gpu_runner_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *what_name(cut_wp_what w)
{
    static const char *const names[] = {"RUN (a call)", "RUN (CUDNN)", "RUN (CUBLAS)", "RUN (VENDOR)",
                                        "RUN (CUDNN_TF32)"};
    return w >= 0 && w < CUT_WP_RUN_WHAT_END ? names[w] : "RUN";
}

int cut_gr_run(cut_runner *r, const cut_wp_run *q, cut_wp_run_result *rr, cut_work_outputs *outs,
               cut_vendor_result *vendor, cut_err *e)
{
    gpu_impl *g = r->impl;
    cut_work_outputs none;
    memset(rr, 0, sizeof *rr);
    cut_result_reset(&rr->res);
    cut_result *res = vendor ? &vendor->best.res : &rr->res;
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_run_body_encode(q, &b);
    const double timeout_s = cut_gr_deadline_s(r, q->what, q->energy ? &q->plan : NULL,
                                               g->emu && q->what == CUT_WP_RUN_CALL, q->vendor.budget_s);
    const size_t max_reply = q->what == CUT_WP_RUN_CALL ? cut_wp_run_result_max(cut_gr_work(g)) : CUT_WP_MAX_REPLY;
    cut_wp_frame f = {0};
    cut_err err = {{0}};
    int rc = cut_gr_request(g, &r->timing, CUT_WP_RUN, &b, timeout_s, max_reply, &f, &err);
    cut_buf_free(&b);
    if (rc == -3)
        return cut_err_set(e, "%s", err.msg);
    if (rc != 1) {
        cut_gr_reply_failure(g, rc, timeout_s, &err, res);
        return 0;
    }
    int ret = 0;
    const uint32_t want = vendor ? CUT_WP_VENDOR_RESULT : CUT_WP_RUN_RESULT;
    if (f.type == want) {
        const int bad = vendor ? cut_wp_vendor_result_decode(&f, vendor, &err)
                               : cut_wp_run_result_decode(&f, cut_gr_work(g), rr, outs ? outs : &none, &err);
        if (bad)
            cut_gr_reply_failure(g, -1, timeout_s, &err, res);
        else if (res->status == CUT_ST_FAULT || (g->emu && res->status == CUT_ST_TIMEOUT))
            cut_gr_worker_stop(g, 0, NULL, 0); /* its context is dead, or its watchdog fired: it exits by itself */
        if (!outs && !bad && !vendor)
            cut_work_outputs_free(&none);
    } else if (f.type == CUT_WP_ERROR) {
        char msg[CUT_ERR_LEN - 64];
        cut_wp_error_decode(&f, msg, sizeof msg);
        if (g->emu)
            ret = cut_err_set(e, "emulation worker: %s", msg);
        else
            ret = cut_err_set(e, "measurement worker on GPU %d: %s", g->dev, msg);
    } else {
        cut_err_set(&err, "unexpected %s reply to %s", cut_wp_type_name(f.type), what_name(q->what));
        cut_gr_reply_failure(g, -1, timeout_s, &err, res);
    }
    cut_wp_frame_free(&f);
    return ret;
}

int cut_gr_call(cut_runner *r, const cut_call *c, const cut_energy_plan *plan, cut_result *res,
                cut_work_outputs *outs, cut_energy_result *er, int *energy_ok, char *why, size_t why_len, cut_err *e)
{
    gpu_impl *g = r->impl;
    cut_result_reset(res);
    if ((!g->emu || c->bin) && cut_gr_compile_failed(c->bin, res) != 0)
        return 0;
    if (g->emu && !c->src)
        return cut_err_set(e, "emulation runner: a call without the kernel's source");
    /* a TMA descriptor the worker's decode would refuse is this call's LAUNCH_ERROR, not a protocol error */
    for (int i = 0; i < c->nargs; i++) {
        cut_err te = {{0}};
        if (c->args[i].tma && cut_wp_tma_check(&c->args[i].desc, &te) != 0) {
            res->status = CUT_ST_LAUNCH_ERROR;
            snprintf(res->error, sizeof res->error, "%.250s", te.msg);
            return 0;
        }
    }
    cut_wp_run q = {.what = CUT_WP_RUN_CALL, .call = *c, .energy = plan != NULL};
    if (plan)
        q.plan = *plan;
    /* the emulation worker compiles the source itself */
    q.image = g->emu ? (const uint8_t *)c->src : (const uint8_t *)c->bin->cubin;
    q.image_size = g->emu ? strlen(c->src) : c->bin->cubin_size;
    cut_wp_run_result rr;
    if (cut_gr_run(r, &q, &rr, outs, NULL, e) != 0)
        return -1;
    *res = rr.res;
    if (plan && er)
        *er = rr.er;
    if (energy_ok)
        *energy_ok = rr.energy && rr.energy_ok;
    if (why && why_len)
        snprintf(why, why_len, "%s", rr.why);
    return 0;
}
