/* cutune — the measurement worker's codecs of the work and its runs (both sides): PREPARE_WORK (work.h: the check
 * rule, the op, the buffers with both input sets and references), RUN's body (a call with its arguments and an
 * optional energy plan, or the op's vendor baseline) and RUN_RESULT (the result, the energy measurement, the
 * captured outputs). */
#include "measure/worker_proto.h"
#include "measure/worker_proto_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t buf_bytes(const cut_work_buf *k) { return k->elems * cut_elem_size(k->dtype); }

void cut_wp_work_encode(const cut_work *w, cut_buf *b)
{
    cut_wp_put_u32(b, (uint32_t)w->check);
    cut_wp_put_f64(b, w->atol);
    cut_wp_put_f64(b, w->rtol);
    cut_wp_put_i32(b, (int32_t)w->op.kind);
    cut_wp_put_i32(b, w->op.ndims);
    for (int i = 0; i < w->op.ndims && i < CUT_WORK_OP_DIMS; i++)
        cut_wp_put_u64(b, (uint64_t)w->op.dims[i]);
    cut_wp_put_u32(b, w->runner_refs ? 1u : 0u);
    cut_wp_put_f64(b, w->flops);
    cut_wp_put_f64(b, w->bytes);
    cut_wp_put_i32(b, w->nbufs);
    for (int i = 0; i < w->nbufs; i++) {
        const cut_work_buf *k = &w->bufs[i];
        cut_wp_put_str(b, k->name);
        cut_wp_put_u32(b, (k->is_output ? 1u : 0u) | (k->is_output && k->zero_init ? 2u : 0u)); /* flags */
        cut_wp_put_i32(b, (int32_t)k->dtype);
        cut_wp_put_u64(b, k->elems);
        for (int s = 0; s < 2; s++)
            cut_wp_put_bytes(b, k->data[s], k->data[s] ? buf_bytes(k) : 0);
    }
}

/* One buffer of PREPARE_WORK into k: its header, then its two byte strings, each empty (NULL) or exactly
 * elems * dtype size bytes (copied). */
static int get_buf(cut_wp_rd *r, int i, cut_work_buf *k, cut_err *e)
{
    uint32_t out = 0;
    int32_t dt = -1;
    uint64_t elems = 0;
    cut_wp_get_str(r, k->name, sizeof k->name);
    cut_wp_get_u32(r, &out);
    cut_wp_get_i32(r, &dt);
    cut_wp_get_u64(r, &elems);
    if (r->bad)
        return cut_err_set(e, "malformed PREPARE_WORK message: buffer %d's header runs past the end", i);
    if (out > 3 || out == 2 || dt < 0 || dt >= CUT_EL_COUNT || elems < 1 || elems > ((uint64_t)1 << 40))
        return cut_err_set(e, "malformed PREPARE_WORK message: buffer %d ('%s') has flags %u (bit 0 output, "
                              "bit 1 zero-initialised output), dtype %d, %llu elements",
                           i, k->name, out, (int)dt, (unsigned long long)elems);
    k->is_output = (int)(out & 1u);
    k->zero_init = (int)(out >> 1);
    k->dtype = (cut_elem)dt;
    k->elems = (size_t)elems;
    const size_t want = buf_bytes(k);
    for (int s = 0; s < 2; s++) {
        const uint8_t *p;
        size_t n;
        if (cut_wp_get_bytes(r, &p, &n) != 0)
            return cut_err_set(e, "malformed PREPARE_WORK message: buffer '%s' set %d runs past the end", k->name, s);
        if (n == 0 && k->is_output)
            continue;
        if (n != want)
            return cut_err_set(e, "malformed PREPARE_WORK message: buffer '%s' set %d has %zu bytes, %zu elements "
                                  "of %s need %zu", k->name, s, n, k->elems, cut_elem_name(k->dtype), want);
        void *copy = malloc(n);
        if (!copy)
            return cut_err_set(e, "out of memory for buffer '%s' (%zu bytes)", k->name, n);
        memcpy(copy, p, n);
        k->data[s] = copy;
    }
    return 0;
}

int cut_wp_work_decode(const cut_wp_frame *f, cut_work *w, cut_err *e)
{
    memset(w, 0, sizeof *w);
    w->owns_data = 1;
    if (cut_wp_expect_type(f, CUT_WP_PREPARE_WORK, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    uint32_t check = 0, runner_refs = 0;
    int32_t kind = -1, ndims = -1, nbufs = 0;
    cut_wp_get_u32(&r, &check);
    cut_wp_get_f64(&r, &w->atol);
    cut_wp_get_f64(&r, &w->rtol);
    cut_wp_get_i32(&r, &kind);
    cut_wp_get_i32(&r, &ndims);
    if (!r.bad && (ndims < 0 || ndims > CUT_WORK_OP_DIMS))
        return cut_err_set(e, "malformed PREPARE_WORK message: an op of %d parameters (0 to %d)", (int)ndims,
                           CUT_WORK_OP_DIMS);
    for (int i = 0; i < ndims && !r.bad; i++) {
        uint64_t v = 0;
        cut_wp_get_u64(&r, &v);
        w->op.dims[i] = (long long)v;
    }
    cut_wp_get_u32(&r, &runner_refs);
    cut_wp_get_f64(&r, &w->flops);
    cut_wp_get_f64(&r, &w->bytes);
    cut_wp_get_i32(&r, &nbufs);
    if (r.bad)
        return cut_err_set(e, "malformed PREPARE_WORK message (%zu bytes): the header fields run past the end",
                           f->len);
    if (check >= CUT_CHECK_COUNT || kind < 0 || kind >= CUT_WORK_OP_COUNT || runner_refs > 1)
        return cut_err_set(e, "malformed PREPARE_WORK message: check rule %u, op %d, runner references %u", check,
                           (int)kind, runner_refs);
    w->check = (cut_check_rule)check;
    w->op.kind = (cut_work_op_kind)kind;
    w->op.ndims = ndims;
    w->runner_refs = (int)runner_refs;
    if (nbufs < 1 || nbufs > CUT_WORK_MAX_BUFS)
        return cut_err_set(e, "malformed PREPARE_WORK message: %d buffers (1 to %d)", (int)nbufs, CUT_WORK_MAX_BUFS);
    w->nbufs = nbufs;
    for (int i = 0; i < nbufs; i++)
        if (get_buf(&r, i, &w->bufs[i], e) != 0)
            goto fail;
    if (cut_wp_rd_finish(&r, f, e) != 0)
        goto fail;
    if (cut_work_check(w, e) != 0) {
        cut_err_wrap(e, "PREPARE_WORK carries an invalid work");
        goto fail;
    }
    cut_conv c;
    cut_gemm g;
    if (cut_wp_work_op(w, &c, &g, e) != 0)
        goto fail;
    return 0;
fail:
    cut_work_free(w);
    return -1;
}

int cut_wp_work_op(const cut_work *w, cut_conv *conv, cut_gemm *gemm, cut_err *e)
{
    cut_elem in = CUT_EL_F32, out = CUT_EL_F32;
    if (w->op.kind == CUT_WORK_PLAIN)
        return 0;
    const int is_conv = w->op.kind == CUT_WORK_CONV;
    const char *what = is_conv ? "Conv2D" : "GEMM";
    if ((is_conv ? cut_conv_of_work_op(&w->op, conv, e) : cut_gemm_of_work_op(&w->op, gemm, e)) != 0)
        return cut_err_wrap(e, "PREPARE_WORK carries an invalid shape");
    if (!is_conv)
        in = cut_gemm_storage_elem(gemm->dtype);
    else
        in = cut_conv_in_elem(conv), out = cut_conv_out_elem(conv);
    const size_t want[4] = {is_conv ? cut_conv_in_elems(conv) : cut_gemm_a_elems(gemm),
                            is_conv ? cut_conv_w_elems(conv) : cut_gemm_b_elems(gemm),
                            is_conv ? cut_conv_out_elems(conv) : cut_gemm_c_elems(gemm),
                            is_conv ? (size_t)conv->co : cut_gemm_c_elems(gemm)};
    /* A fourth buffer, an input: a conv epilogue's bias (CO values of the inputs' type), or a GEMM's C old contents
     * when it reads them (beta != 0: fp32, cut_gemm_work). */
    const int nbufs = (is_conv ? conv->epilogue != CUT_EPI_NONE : cut_gemm_cin_buf(gemm) >= 0) ? 4 : 3;
    if (w->nbufs != nbufs)
        return cut_err_set(e, "PREPARE_WORK: a %s work has %d buffers (%s)", what, w->nbufs,
                           nbufs == 3  ? "two inputs and the output"
                           : is_conv   ? "two inputs, the output and the epilogue's bias"
                                       : "two inputs, the output and C's old contents");
    for (int i = 0; i < nbufs; i++) {
        const cut_elem want_el = i < 2 || (i == 3 && is_conv) ? in : out;
        if (w->bufs[i].is_output != (i == 2) || w->bufs[i].dtype != want_el || w->bufs[i].elems != want[i])
            return cut_err_set(e, "PREPARE_WORK: buffer %d ('%s': %s %s of %zu elements) does not fit the %s, which "
                                  "needs %s %s of %zu",
                               i, w->bufs[i].name, cut_elem_name(w->bufs[i].dtype),
                               w->bufs[i].is_output ? "output" : "input", w->bufs[i].elems, what,
                               cut_elem_name(want_el), i == 2 ? "output" : "input", want[i]);
    }
    return 0;
}

void cut_wp_run_body_encode(const cut_wp_run *q, cut_buf *b)
{
    cut_wp_put_u32(b, (uint32_t)q->what);
    if (q->what == CUT_WP_RUN_VENDOR) {
        cut_wp_put_vendor(b, &q->vendor);
        return;
    }
    if (q->what != CUT_WP_RUN_CALL)
        return;
    const cut_call *c = &q->call;
    for (int i = 0; i < 3; i++)
        cut_wp_put_u32(b, c->grid[i]);
    for (int i = 0; i < 3; i++)
        cut_wp_put_u32(b, c->block[i]);
    cut_wp_put_u32(b, c->smem);
    cut_wp_put_str(b, c->entry);
    cut_wp_put_bytes(b, q->image, q->image_size);
    cut_wp_put_f64(b, c->tol_scale);
    cut_wp_put_i32(b, c->nargs);
    for (int i = 0; i < c->nargs; i++) {
        cut_wp_put_i32(b, c->args[i].buf);
        cut_wp_put_u32(b, c->args[i].size);
        cut_buf_append(b, c->args[i].bytes, sizeof c->args[i].bytes);
        cut_wp_put_u32(b, c->args[i].tma ? 1u : 0u);
        if (c->args[i].tma)
            cut_wp_put_tma(b, &c->args[i].desc);
    }
    cut_wp_put_u32(b, q->energy ? 1u : 0u);
    if (q->energy)
        cut_wp_put_plan(b, &q->plan);
}

/* A CALL's fields into q. A short payload leaves r->bad set for cut_wp_rd_finish; a count or flag out of range is
 * -1 with e. */
static int get_call(cut_wp_rd *r, cut_wp_run *q, cut_err *e)
{
    cut_call *c = &q->call;
    for (int i = 0; i < 3; i++)
        cut_wp_get_u32(r, &c->grid[i]);
    for (int i = 0; i < 3; i++)
        cut_wp_get_u32(r, &c->block[i]);
    cut_wp_get_u32(r, &c->smem);
    cut_wp_get_str(r, c->entry, sizeof c->entry);
    cut_wp_get_bytes(r, &q->image, &q->image_size);
    cut_wp_get_f64(r, &c->tol_scale);
    int32_t nargs = 0;
    cut_wp_get_i32(r, &nargs);
    if (!r->bad && (nargs < 1 || nargs > CUT_CALL_MAX_ARGS))
        return cut_err_set(e, "malformed RUN message: %d arguments (1 to %d)", (int)nargs, CUT_CALL_MAX_ARGS);
    c->nargs = r->bad ? 0 : nargs;
    for (int i = 0; i < c->nargs && !r->bad; i++) {
        cut_call_arg *a = &c->args[i];
        int32_t buf = 0;
        uint32_t tma = 0;
        cut_wp_get_i32(r, &buf);
        cut_wp_get_u32(r, &a->size);
        cut_wp_rd_take(r, a->bytes, sizeof a->bytes);
        cut_wp_get_u32(r, &tma);
        if (!r->bad && tma > 1)
            return cut_err_set(e, "malformed RUN message: argument %d has TMA flag %u", i, tma);
        a->buf = buf;
        a->tma = (int)tma;
        if (tma)
            cut_wp_get_tma(r, &a->desc);
    }
    uint32_t energy = 0;
    cut_wp_get_u32(r, &energy);
    if (!r->bad && energy > 1)
        return cut_err_set(e, "malformed RUN message: energy flag %u", energy);
    q->energy = (int)energy;
    if (energy)
        cut_wp_get_plan(r, &q->plan);
    return 0;
}

/* The checks of a decoded call against the work. */
static int check_call(const cut_work *w, const cut_wp_run *q, cut_err *e)
{
    if (q->image_size == 0)
        return cut_err_set(e, "malformed RUN message: an empty module image");
    if (!(q->call.tol_scale >= 0.0 && q->call.tol_scale <= 1000.0))
        return cut_err_set(e, "malformed RUN message: tolerance factor %g", q->call.tol_scale);
    for (int i = 0; i < q->call.nargs; i++)
        if (q->call.args[i].tma && cut_wp_tma_check(&q->call.args[i].desc, e) != 0)
            return cut_err_wrap(e, "malformed RUN message: argument %d", i);
    if (cut_call_check(w, &q->call, e) != 0)
        return cut_err_wrap(e, "malformed RUN message");
    if (q->energy && cut_energy_plan_check(&q->plan, e) != 0)
        return cut_err_wrap(e, "malformed RUN message");
    if (q->energy && !cut_work_has_refs(w))
        return cut_err_set(e, "an energy run on a work without references: capture them with a plain run and "
                              "prepare the work again with them first");
    return 0;
}

int cut_wp_run_body_decode(const cut_wp_frame *body, const cut_work *w, cut_wp_run *q, cut_err *e)
{
    memset(q, 0, sizeof *q);
    if (cut_wp_expect_type(body, CUT_WP_RUN, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, body->data, body->len);
    uint32_t what = CUT_WP_RUN_WHAT_END;
    cut_wp_get_u32(&r, &what);
    if (r.bad || what >= CUT_WP_RUN_WHAT_END)
        return cut_err_set(e, "malformed RUN message: %s", r.bad ? "no kind of run" : "an unknown kind of run");
    q->what = (cut_wp_what)what;
    if (q->what == CUT_WP_RUN_CALL && get_call(&r, q, e) != 0)
        return -1;
    if (q->what == CUT_WP_RUN_VENDOR)
        cut_wp_get_vendor(&r, &q->vendor);
    if (cut_wp_rd_finish(&r, body, e) != 0)
        return -1;
    static const char *const names[] = {"a call", "CUDNN", "CUBLAS", "VENDOR", "CUDNN_TF32"};
    if (!w)
        return cut_err_set(e, "worker: RUN (%s) before PREPARE_WORK", names[q->what]);
    if ((q->what == CUT_WP_RUN_CUDNN || q->what == CUT_WP_RUN_CUDNN_TF32) && w->op.kind != CUT_WORK_CONV)
        return cut_err_set(e, "worker: CUDNN runs on a Conv2D work only");
    if ((q->what == CUT_WP_RUN_CUBLAS || q->what == CUT_WP_RUN_VENDOR) && w->op.kind != CUT_WORK_GEMM)
        return cut_err_set(e, "worker: %s runs on a GEMM work only", names[q->what]);
    if (q->what == CUT_WP_RUN_VENDOR && cut_wp_vendor_check(&q->vendor, e) != 0)
        return cut_err_wrap(e, "malformed RUN message");
    if (q->what == CUT_WP_RUN_CALL)
        return check_call(w, q, e);
    return 0;
}

void cut_wp_run_result_encode(const cut_wp_run_result *rr, const cut_work *w, const cut_work_outputs *o, cut_buf *b)
{
    cut_wp_result_encode(&rr->res, rr->algo, b);
    cut_wp_put_u32(b, rr->energy ? 1u : 0u);
    if (rr->energy)
        cut_wp_put_energy(b, rr->energy_ok, rr->why, &rr->er);
    for (int i = 0; w && i < w->nbufs; i++) {
        const cut_work_buf *k = &w->bufs[i];
        if (!k->is_output)
            continue;
        for (int s = 0; s < 2; s++) {
            const void *p = o ? o->data[i][s] : NULL;
            cut_wp_put_bytes(b, p, p ? buf_bytes(k) : 0);
        }
    }
}

size_t cut_wp_run_result_max(const cut_work *w)
{
    size_t n = CUT_WP_MAX_REPLY;
    for (int i = 0; w && i < w->nbufs; i++)
        if (w->bufs[i].is_output)
            n += 2 * (buf_bytes(&w->bufs[i]) + sizeof(uint64_t));
    return n;
}

/* The captured outputs of RUN_RESULT into o: present (each exactly its size) iff want. */
static int get_outputs(cut_wp_rd *r, const cut_work *w, int want, cut_work_outputs *o, cut_err *e)
{
    for (int i = 0; w && i < w->nbufs; i++) {
        const cut_work_buf *k = &w->bufs[i];
        const size_t size = buf_bytes(k);
        for (int s = 0; k->is_output && s < 2; s++) {
            const uint8_t *p;
            size_t n;
            if (cut_wp_get_bytes(r, &p, &n) != 0)
                return cut_err_set(e, "malformed RUN_RESULT message: output '%s' set %d runs past the end", k->name,
                                   s);
            if (n != (want ? size : 0))
                return cut_err_set(e, "malformed RUN_RESULT message: output '%s' set %d has %zu bytes, want %zu",
                                   k->name, s, n, want ? size : 0);
            if (!want)
                continue;
            if (!(o->data[i][s] = malloc(n)))
                return cut_err_set(e, "out of memory for output '%s' (%zu bytes)", k->name, n);
            memcpy(o->data[i][s], p, n);
        }
    }
    return 0;
}

int cut_wp_run_result_decode(const cut_wp_frame *f, const cut_work *w, cut_wp_run_result *rr, cut_work_outputs *o,
                             cut_err *e)
{
    memset(rr, 0, sizeof *rr);
    memset(o, 0, sizeof *o);
    if (cut_wp_expect_type(f, CUT_WP_RUN_RESULT, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t st = -1, reps = 0;
    uint32_t energy = 0;
    cut_wp_get_result(&r, &rr->res, &st, &reps, rr->algo, sizeof rr->algo);
    cut_wp_get_u32(&r, &energy);
    if (r.bad)
        return cut_err_set(e, "malformed RUN_RESULT message (%zu bytes): the result runs past the end", f->len);
    if (cut_wp_result_status(f, &rr->res, st, reps, e) != 0)
        return -1;
    if (energy > 1)
        return cut_err_set(e, "malformed RUN_RESULT message: energy flag %u", energy);
    rr->energy = (int)energy;
    if (energy && rr->algo[0])
        return cut_err_set(e, "malformed RUN_RESULT message: an algorithm name with an energy measurement");
    if (energy && cut_wp_get_energy(&r, &rr->energy_ok, rr->why, sizeof rr->why, &rr->er, e) != 0)
        return -1;
    const int want = rr->res.status == CUT_ST_OK && w && !cut_work_has_refs(w) && !rr->algo[0];
    if (get_outputs(&r, w, want, o, e) != 0 || cut_wp_rd_finish(&r, f, e) != 0) {
        cut_work_outputs_free(o);
        return -1;
    }
    return 0;
}
