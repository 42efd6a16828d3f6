/* cutune — the measurement worker's codecs of a user kernel's messages (both sides): PREPARE_KERNEL (the work:
 * tolerances, buffers), RUN_KERNEL (cubin, launch, arguments), KERNEL_RESULT (the result and the
 * captured outputs) and ENERGY_KERNEL (RUN_KERNEL's fields and an energy plan; answered with ENERGY_RESULT). */
#include "measure/worker_proto.h"
#include "measure/worker_proto_int.h"

#include <stdlib.h>
#include <string.h>

void cut_wp_prepare_kernel_encode(const cut_wp_prepare_kernel *p, cut_buf *b)
{
    const cut_work *w = &p->work;
    cut_wp_put_f64(b, w->atol);
    cut_wp_put_f64(b, w->rtol);
    cut_wp_put_i32(b, w->nbufs);
    for (int i = 0; i < w->nbufs; i++) {
        const cut_work_buf *k = &w->bufs[i];
        const size_t bytes = k->elems * cut_elem_size(k->dtype);
        cut_wp_put_str(b, k->name);
        cut_wp_put_u32(b, (k->is_output ? 1u : 0u) | (k->is_output && k->zero_init ? 2u : 0u)); /* flags */
        cut_wp_put_i32(b, (int32_t)k->dtype);
        cut_wp_put_u64(b, k->elems);
        for (int s = 0; s < 2; s++)
            cut_wp_put_bytes(b, k->data[s], k->data[s] ? bytes : 0);
    }
}

void cut_wp_prepare_kernel_free(cut_wp_prepare_kernel *p)
{
    if (!p)
        return;
    for (int i = 0; i < CUT_WORK_MAX_BUFS; i++)
        for (int s = 0; s < 2; s++) {
            free((void *)p->work.bufs[i].data[s]);
            p->work.bufs[i].data[s] = NULL;
        }
}

/* One buffer of PREPARE_KERNEL into k: its header, then its two byte strings, each empty (NULL) or exactly
 * elems * dtype size bytes (copied). */
static int get_kw_buf(cut_wp_rd *r, int i, cut_work_buf *k, cut_err *e)
{
    uint32_t out = 0;
    int32_t dt = -1;
    uint64_t elems = 0;
    cut_wp_get_str(r, k->name, sizeof k->name);
    cut_wp_get_u32(r, &out);
    cut_wp_get_i32(r, &dt);
    cut_wp_get_u64(r, &elems);
    if (r->bad)
        return cut_err_set(e, "malformed PREPARE_KERNEL message: buffer %d's header runs past the end", i);
    if (out > 3 || out == 2 || dt < 0 || dt >= CUT_EL_COUNT || elems < 1 || elems > ((uint64_t)1 << 40))
        return cut_err_set(e, "malformed PREPARE_KERNEL message: buffer %d ('%s') has flags %u (bit 0 output, "
                              "bit 1 zero-initialised output), dtype %d, %llu elements",
                           i, k->name, out, (int)dt, (unsigned long long)elems);
    k->is_output = (int)(out & 1u);
    k->zero_init = (int)(out >> 1);
    k->dtype = (cut_elem)dt;
    k->elems = (size_t)elems;
    const size_t want = k->elems * cut_elem_size(k->dtype);
    for (int s = 0; s < 2; s++) {
        const uint8_t *p;
        size_t n;
        if (cut_wp_get_bytes(r, &p, &n) != 0)
            return cut_err_set(e, "malformed PREPARE_KERNEL message: buffer '%s' set %d runs past the end", k->name,
                               s);
        if (n == 0 && k->is_output)
            continue;
        if (n != want)
            return cut_err_set(e, "malformed PREPARE_KERNEL message: buffer '%s' set %d has %zu bytes, %zu elements "
                                  "of %s need %zu", k->name, s, n, k->elems, cut_elem_name(k->dtype), want);
        void *copy = malloc(n);
        if (!copy)
            return cut_err_set(e, "out of memory for buffer '%s' (%zu bytes)", k->name, n);
        memcpy(copy, p, n);
        k->data[s] = copy;
    }
    return 0;
}

int cut_wp_prepare_kernel_decode(const cut_wp_frame *f, cut_wp_prepare_kernel *p, cut_err *e)
{
    memset(p, 0, sizeof *p);
    if (cut_wp_expect_type(f, CUT_WP_PREPARE_KERNEL, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t nbufs = 0;
    cut_wp_get_f64(&r, &p->work.atol);
    cut_wp_get_f64(&r, &p->work.rtol);
    cut_wp_get_i32(&r, &nbufs);
    if (r.bad)
        return cut_err_set(e, "malformed PREPARE_KERNEL message (%zu bytes): the header fields run past the end",
                           f->len);
    if (nbufs < 1 || nbufs > CUT_WORK_MAX_BUFS)
        return cut_err_set(e, "malformed PREPARE_KERNEL message: %d buffers (1 to %d)", (int)nbufs, CUT_WORK_MAX_BUFS);
    p->work.nbufs = nbufs;
    for (int i = 0; i < nbufs; i++)
        if (get_kw_buf(&r, i, &p->work.bufs[i], e) != 0)
            goto fail;
    if (cut_wp_rd_finish(&r, f, e) != 0)
        goto fail;
    if (cut_work_check(&p->work, e) != 0) {
        cut_err_wrap(e, "PREPARE_KERNEL carries an invalid work");
        goto fail;
    }
    return 0;
fail:
    cut_wp_prepare_kernel_free(p);
    return -1;
}

void cut_wp_run_kernel_encode(const cut_call *c, const void *cubin, size_t cubin_size, cut_buf *b)
{
    for (int i = 0; i < 3; i++)
        cut_wp_put_u32(b, c->grid[i]);
    for (int i = 0; i < 3; i++)
        cut_wp_put_u32(b, c->block[i]);
    cut_wp_put_u32(b, c->smem);
    cut_wp_put_str(b, c->entry);
    cut_wp_put_bytes(b, cubin, cubin_size);
    cut_wp_put_i32(b, c->nargs);
    for (int i = 0; i < c->nargs; i++) {
        cut_wp_put_i32(b, c->args[i].buf);
        cut_wp_put_u32(b, c->args[i].size);
        cut_buf_append(b, c->args[i].bytes, sizeof c->args[i].bytes);
    }
}

/* RUN_KERNEL's fields (also the head of ENERGY_KERNEL) into c and the cubin. A short payload leaves r->bad set for
 * cut_wp_rd_finish; an argument count out of range is -1 with e naming the message (what). */
static int get_kcall(cut_wp_rd *r, cut_call *c, const uint8_t **cubin, size_t *cubin_size, const char *what,
                     cut_err *e)
{
    for (int i = 0; i < 3; i++)
        cut_wp_get_u32(r, &c->grid[i]);
    for (int i = 0; i < 3; i++)
        cut_wp_get_u32(r, &c->block[i]);
    cut_wp_get_u32(r, &c->smem);
    cut_wp_get_str(r, c->entry, sizeof c->entry);
    cut_wp_get_bytes(r, cubin, cubin_size);
    int32_t nargs = 0;
    cut_wp_get_i32(r, &nargs);
    if (!r->bad && (nargs < 1 || nargs > CUT_CALL_MAX_ARGS))
        return cut_err_set(e, "malformed %s message: %d arguments (1 to %d)", what, (int)nargs, CUT_CALL_MAX_ARGS);
    c->nargs = r->bad ? 0 : nargs;
    for (int i = 0; i < c->nargs; i++) {
        int32_t buf = 0;
        cut_wp_get_i32(r, &buf);
        cut_wp_get_u32(r, &c->args[i].size);
        if (cut_wp_rd_take(r, c->args[i].bytes, sizeof c->args[i].bytes) != 0)
            break;
        c->args[i].buf = buf;
    }
    return 0;
}

/* The checks after a decoded call (all fields read): a non-empty cubin, the call against the work. */
static int check_kcall(const cut_work *w, const cut_call *c, size_t cubin_size, const char *what, cut_err *e)
{
    if (cubin_size == 0)
        return cut_err_set(e, "malformed %s message: empty cubin", what);
    if (cut_call_check(w, c, e) != 0)
        return cut_err_wrap(e, "malformed %s message", what);
    return 0;
}

int cut_wp_run_kernel_decode(const cut_wp_frame *f, const cut_work *w, cut_call *c, const uint8_t **cubin,
                             size_t *cubin_size, cut_err *e)
{
    memset(c, 0, sizeof *c);
    *cubin = NULL;
    *cubin_size = 0;
    if (cut_wp_expect_type(f, CUT_WP_RUN_KERNEL, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    if (get_kcall(&r, c, cubin, cubin_size, "RUN_KERNEL", e) != 0 || cut_wp_rd_finish(&r, f, e) != 0)
        return -1;
    return check_kcall(w, c, *cubin_size, "RUN_KERNEL", e);
}

void cut_wp_energy_kernel_encode(const cut_call *c, const void *cubin, size_t cubin_size, const cut_energy_plan *p,
                                 cut_buf *b)
{
    cut_wp_run_kernel_encode(c, cubin, cubin_size, b);
    cut_wp_put_plan(b, p);
}

int cut_wp_energy_kernel_decode(const cut_wp_frame *f, const cut_work *w, cut_call *c, const uint8_t **cubin,
                                size_t *cubin_size, cut_energy_plan *p, cut_err *e)
{
    memset(c, 0, sizeof *c);
    memset(p, 0, sizeof *p);
    *cubin = NULL;
    *cubin_size = 0;
    if (cut_wp_expect_type(f, CUT_WP_ENERGY_KERNEL, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    if (get_kcall(&r, c, cubin, cubin_size, "ENERGY_KERNEL", e) != 0)
        return -1;
    cut_wp_get_plan(&r, p);
    if (cut_wp_rd_finish(&r, f, e) != 0 || check_kcall(w, c, *cubin_size, "ENERGY_KERNEL", e) != 0)
        return -1;
    if (cut_energy_plan_check(p, e) != 0)
        return cut_err_wrap(e, "malformed ENERGY_KERNEL message");
    if (!cut_work_has_refs(w))
        return cut_err_set(e, "ENERGY_KERNEL on a kernel work without references: capture them with RUN_KERNEL and "
                              "prepare the work again with them first");
    return 0;
}

void cut_wp_kernel_result_encode(const cut_result *r, const cut_work *w, const cut_work_outputs *o, cut_buf *b)
{
    cut_wp_result_encode(r, "", b);
    for (int i = 0; i < w->nbufs; i++) {
        const cut_work_buf *k = &w->bufs[i];
        if (!k->is_output)
            continue;
        for (int s = 0; s < 2; s++) {
            const void *p = o ? o->data[i][s] : NULL;
            cut_wp_put_bytes(b, p, p ? k->elems * cut_elem_size(k->dtype) : 0);
        }
    }
}

size_t cut_wp_kernel_result_max(const cut_work *w)
{
    size_t n = CUT_WP_MAX_REPLY;
    for (int i = 0; i < w->nbufs; i++)
        if (w->bufs[i].is_output)
            n += 2 * (w->bufs[i].elems * cut_elem_size(w->bufs[i].dtype) + sizeof(uint64_t));
    return n;
}

/* The captured outputs of KERNEL_RESULT into o: present (each exactly its size) iff want. */
static int get_kw_outputs(cut_wp_rd *r, const cut_work *w, int want, cut_work_outputs *o, cut_err *e)
{
    for (int i = 0; i < w->nbufs; i++) {
        const cut_work_buf *k = &w->bufs[i];
        const size_t size = k->elems * cut_elem_size(k->dtype);
        for (int s = 0; k->is_output && s < 2; s++) {
            const uint8_t *p;
            size_t n;
            if (cut_wp_get_bytes(r, &p, &n) != 0)
                return cut_err_set(e, "malformed KERNEL_RESULT message: output '%s' set %d runs past the end",
                                   k->name, s);
            if (n != (want ? size : 0))
                return cut_err_set(e, "malformed KERNEL_RESULT message: output '%s' set %d has %zu bytes, want %zu",
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

int cut_wp_kernel_result_decode(const cut_wp_frame *f, const cut_work *w, cut_result *res, cut_work_outputs *o,
                                cut_err *e)
{
    memset(res, 0, sizeof *res);
    memset(o, 0, sizeof *o);
    if (cut_wp_expect_type(f, CUT_WP_KERNEL_RESULT, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t st = -1, reps = 0;
    char algo[8] = "";
    cut_wp_get_result(&r, res, &st, &reps, algo, sizeof algo);
    if (r.bad)
        return cut_err_set(e, "malformed KERNEL_RESULT message (%zu bytes): the result runs past the end", f->len);
    if (cut_wp_result_status(f, res, st, reps, e) != 0)
        return -1;
    if (algo[0])
        return cut_err_set(e, "malformed KERNEL_RESULT message: an algorithm name");
    const int want = res->status == CUT_ST_OK && !cut_work_has_refs(w);
    if (get_kw_outputs(&r, w, want, o, e) != 0 || cut_wp_rd_finish(&r, f, e) != 0) {
        cut_work_outputs_free(o);
        return -1;
    }
    return 0;
}
