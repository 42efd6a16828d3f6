/* libFuzzer target: the GPU worker's wire protocol (src/measure/worker_proto.h) on arbitrary bytes.
 *
 * The first input byte picks the mode:
 *   even: the bytes after it are written to a pipe (write end then closed) and read back frame by frame with
 *         cut_wp_recv, as both sides do (limit CUT_WP_MAX_REPLY or a small one, with and without a timeout);
 *         every frame received goes through every decoder;
 *   odd:  the second byte is a frame type, the rest its payload (an exactly sized allocation), straight into every
 *         decoder.
 * Decoders: the parent's (HELLO, RESULT / CUDNN_RESULT / CUBLAS_RESULT, ENERGY_RESULT, VENDOR_RESULT, ERROR) and
 * the worker's (PREPARE, PREPARE_GEMM, MEASURE, ENERGY, VENDOR, PREPARE_KERNEL, RUN_KERNEL, ENERGY_KERNEL), and
 * KERNEL_RESULT; RUN_KERNEL, ENERGY_KERNEL and KERNEL_RESULT against a fixed work (x input, y and n outputs) with
 * and without references.
 * Invariants:
 *   - cut_wp_recv returns 1, 0 (end of input, only after whole frames) or -1 with a sentence, never -2 (all bytes are
 *     there); a frame has a known type, a length within the limit, data NULL exactly when empty, and the frames
 *     cover the input exactly when the stream ends cleanly;
 *   - a run request's timing prefix splits off as a sane policy and the rest, which re-encodes to the payload and
 *     goes through every decoder again;
 *   - a decoder given a frame of another type fails; a failure has a sentence and leaves nothing allocated;
 *   - a decode that succeeds re-encodes to exactly the payload bytes (ERROR: a prefix of them), strings come back
 *     NUL-terminated within their buffers, MEASURE's cubin points inside the frame, PREPARE's shape validates and
 *     the tensors of both input sets are allocated (PREPARE_GEMM: the GEMM validates, its dtype is known);
 *     MEASURE / ENERGY carry 0 or 2 TMA descriptors that pass cut_wp_tma_check; ENERGY / ENERGY_KERNEL plans pass
 *     cut_energy_plan_check, and ENERGY_KERNEL decodes only against a work with references; VENDOR's options are in
 *     range;
 *     VENDOR_RESULT's counts are consistent and its top list within CUT_VENDOR_TOP; RESULT decodes the same with or
 *     without an algo buffer. */
#include "measure/worker_proto.h"
#include "fuzz_common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* 1 if b holds exactly the frame's payload (prefix: b is a prefix of it). */
static int same_payload(const cut_buf *b, const cut_wp_frame *f, int prefix)
{
    if (prefix ? b->len > f->len : b->len != f->len)
        return 0;
    return b->len == 0 || memcmp(b->data, f->data, b->len) == 0;
}

static void check_hello(const cut_wp_frame *f)
{
    cut_wp_hello h;
    memset(&h, 0x7f, sizeof h);
    cut_err e = {{0}};
    int rc = cut_wp_hello_decode(f, &h, &e);
    if (f->type != CUT_WP_HELLO)
        CHECK(rc != 0);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        return;
    }
    CHECK(memchr(h.name, 0, sizeof h.name) && memchr(h.uuid, 0, sizeof h.uuid));
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_hello_encode(&h, &b);
    CHECK(same_payload(&b, f, 0));
    cut_buf_free(&b);
}

static void check_prepare(const cut_wp_frame *f)
{
    cut_wp_prepare p;
    memset(&p, 0x7f, sizeof p);
    cut_err e = {{0}};
    int rc = cut_wp_prepare_decode(f, &p, &e);
    if (f->type != CUT_WP_PREPARE)
        CHECK(rc != 0);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        CHECK(!p.in[0] && !p.w[0] && !p.ref[0] && !p.in[1] && !p.w[1] && !p.ref[1]);
        return;
    }
    CHECK(cut_conv_validate(&p.conv, &e) == 0);
    CHECK(p.in[0] && p.w[0] && p.ref[0] && p.in[1] && p.w[1] && p.ref[1]);
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_prepare_encode(&p, &b);
    CHECK(same_payload(&b, f, 0));
    cut_buf_free(&b);
    cut_wp_prepare_free(&p);
    CHECK(!p.in[0] && !p.w[0] && !p.ref[0] && !p.in[1] && !p.w[1] && !p.ref[1]);
    cut_wp_prepare_free(&p);
}

static void check_prepare_gemm(const cut_wp_frame *f)
{
    cut_wp_prepare_gemm p;
    memset(&p, 0x7f, sizeof p);
    cut_err e = {{0}};
    int rc = cut_wp_prepare_gemm_decode(f, &p, &e);
    if (f->type != CUT_WP_PREPARE_GEMM)
        CHECK(rc != 0);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        CHECK(!p.a[0] && !p.b[0] && !p.ref[0] && !p.a[1] && !p.b[1] && !p.ref[1]);
        return;
    }
    CHECK(cut_gemm_validate(&p.gemm, &e) == 0 && (int)p.gemm.dtype >= 0 && p.gemm.dtype < CUT_DT_COUNT);
    CHECK(p.gemm.layout == CUT_GEMM_NN || p.gemm.layout == CUT_GEMM_NT);
    CHECK(p.a[0] && p.b[0] && p.a[1] && p.b[1]); /* a ref is NULL when sent empty: the worker's DGEMM */
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_prepare_gemm_encode(&p, &b);
    CHECK(same_payload(&b, f, 0));
    cut_buf_free(&b);
    cut_wp_prepare_gemm_free(&p);
    CHECK(!p.a[0] && !p.b[0] && !p.ref[0] && !p.a[1] && !p.b[1] && !p.ref[1]);
    cut_wp_prepare_gemm_free(&p);
}

static void check_measure(const cut_wp_frame *f)
{
    cut_wp_measure m;
    memset(&m, 0x7f, sizeof m);
    cut_err e = {{0}};
    int rc = cut_wp_measure_decode(f, &m, &e);
    if (f->type != CUT_WP_MEASURE)
        CHECK(rc != 0);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        return;
    }
    CHECK(m.entry[0] != 0 && memchr(m.entry, 0, sizeof m.entry));
    CHECK(m.cubin_size > 0 && m.cubin >= f->data && m.cubin_size <= f->len &&
          (size_t)(m.cubin - f->data) <= f->len - m.cubin_size);
    CHECK(m.ntma == 0 || m.ntma == 2);
    for (int i = 0; i < m.ntma; i++)
        CHECK(cut_wp_tma_check(&m.tma[i], &e) == 0);
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_measure_encode(&m, &b);
    CHECK(same_payload(&b, f, 0));
    cut_buf_free(&b);
}

static void check_energy(const cut_wp_frame *f)
{
    cut_wp_measure m;
    cut_energy_plan p;
    memset(&m, 0x7f, sizeof m);
    memset(&p, 0x7f, sizeof p);
    cut_err e = {{0}};
    int rc = cut_wp_energy_decode(f, &m, &p, &e);
    if (f->type != CUT_WP_ENERGY)
        CHECK(rc != 0);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        return;
    }
    CHECK(m.entry[0] != 0 && memchr(p.uuid, 0, sizeof p.uuid));
    CHECK(m.ntma == 0 || m.ntma == 2);
    CHECK(cut_energy_plan_check(&p, &e) == 0);
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_energy_encode(&m, &p, &b);
    CHECK(same_payload(&b, f, 0));
    cut_buf_free(&b);
}

static void check_energy_result(const cut_wp_frame *f)
{
    cut_result r;
    cut_energy_result er;
    char why[CUT_ERR_LEN];
    int ok = -1;
    memset(why, 0x7f, sizeof why);
    cut_err e = {{0}};
    int rc = cut_wp_energy_result_decode(f, &r, &ok, why, sizeof why, &er, &e);
    if (f->type != CUT_WP_ENERGY_RESULT)
        CHECK(rc != 0);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        return;
    }
    CHECK((ok == 0 || ok == 1) && memchr(why, 0, sizeof why));
    CHECK(er.lrounds >= 0 && er.lrounds <= CUT_ENERGY_MAX_LROUNDS);
    CHECK((int)r.status >= 0 && r.status < CUT_ST_COUNT);
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_energy_result_encode(&r, ok, why, &er, &b);
    CHECK(same_payload(&b, f, 0));
    cut_buf_free(&b);
}

static void check_result(const cut_wp_frame *f)
{
    cut_result r, r2;
    char algo[128], small[5];
    memset(&r, 0x7f, sizeof r);
    memset(algo, 0x7f, sizeof algo);
    memset(small, 0x7f, sizeof small);
    cut_err e = {{0}};
    int rc = cut_wp_result_decode(f, &r, algo, sizeof algo, &e);
    if (f->type != CUT_WP_RESULT && f->type != CUT_WP_CUDNN_RESULT && f->type != CUT_WP_CUBLAS_RESULT)
        CHECK(rc != 0);
    int rc2 = cut_wp_result_decode(f, &r2, NULL, 0, &e);
    CHECK(rc2 == rc);
    CHECK(cut_wp_result_decode(f, &r2, small, sizeof small, &e) == rc);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        return;
    }
    CHECK((int)r.status >= 0 && r.status < CUT_ST_COUNT);
    CHECK(memchr(r.error, 0, sizeof r.error) && memchr(algo, 0, sizeof algo));
    CHECK(memchr(small, 0, sizeof small) && strncmp(small, algo, sizeof small - 1) == 0);
    CHECK(r2.status == r.status && r2.repeats == r.repeats && strcmp(r2.error, r.error) == 0);
    CHECK(memcmp(&r2.median_ms, &r.median_ms, sizeof(double)) == 0 &&
          memcmp(&r2.min_ms, &r.min_ms, sizeof(double)) == 0 && memcmp(&r2.max_ms, &r.max_ms, sizeof(double)) == 0 &&
          memcmp(&r2.max_abs_err, &r.max_abs_err, sizeof(double)) == 0);
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_result_encode(&r, algo, &b);
    CHECK(same_payload(&b, f, 0));
    cut_buf_free(&b);
}

static void check_vendor(const cut_wp_frame *f)
{
    cut_vendor_opts o;
    memset(&o, 0x7f, sizeof o);
    cut_err e = {{0}};
    int rc = cut_wp_vendor_decode(f, &o, &e);
    if (f->type != CUT_WP_VENDOR)
        CHECK(rc != 0);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        return;
    }
    CHECK(o.heuristic_n >= 0 && o.heuristic_n <= 256 && (o.enumerate == 0 || o.enumerate == 1));
    CHECK(o.max_configs >= 0 && o.max_configs <= 4096 && isfinite(o.budget_s) && o.budget_s > 0);
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_vendor_encode(&o, &b);
    CHECK(same_payload(&b, f, 0));
    cut_buf_free(&b);
}

static void check_vendor_result(const cut_wp_frame *f)
{
    cut_vendor_result *v = malloc(sizeof *v);
    CHECK(v != NULL);
    memset(v, 0x7f, sizeof *v);
    cut_err e = {{0}};
    int rc = cut_wp_vendor_result_decode(f, v, &e);
    if (f->type != CUT_WP_VENDOR_RESULT)
        CHECK(rc != 0);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        free(v);
        return;
    }
    CHECK(v->tried >= v->valid && v->valid >= 0 && v->heuristic >= 0 && v->enumerated >= 0);
    CHECK((v->budget_hit == 0 || v->budget_hit == 1) && v->ntop >= 0 && v->ntop <= CUT_VENDOR_TOP);
    CHECK(memchr(v->note, 0, sizeof v->note) && memchr(v->best.config, 0, sizeof v->best.config));
    CHECK((int)v->best.res.status >= 0 && v->best.res.status < CUT_ST_COUNT);
    for (int i = 0; i < v->ntop; i++)
        CHECK((int)v->top[i].res.status >= 0 && v->top[i].res.status < CUT_ST_COUNT);
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_vendor_result_encode(v, &b);
    CHECK(same_payload(&b, f, 0));
    cut_buf_free(&b);
    free(v);
}

static void check_error(const cut_wp_frame *f)
{
    char msg[CUT_ERR_LEN], small[6];
    memset(msg, 0x7f, sizeof msg);
    memset(small, 0x7f, sizeof small);
    int rc = cut_wp_error_decode(f, msg, sizeof msg);
    CHECK(cut_wp_error_decode(f, small, sizeof small) == rc);
    CHECK(memchr(msg, 0, sizeof msg) && memchr(small, 0, sizeof small));
    CHECK(strncmp(small, msg, sizeof small - 1) == 0);
    if (f->type != CUT_WP_ERROR)
        CHECK(rc != 0);
    if (rc != 0) {
        CHECK(rc == -1 && msg[0] != 0);
        return;
    }
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_error_encode(msg, &b);
    CHECK(same_payload(&b, f, 1));
    cut_buf_free(&b);
}

static void check_prepare_kernel(const cut_wp_frame *f)
{
    cut_wp_prepare_kernel p;
    memset(&p, 0, sizeof p);
    cut_err e = {{0}};
    int rc = cut_wp_prepare_kernel_decode(f, &p, &e);
    if (f->type != CUT_WP_PREPARE_KERNEL)
        CHECK(rc != 0);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        for (int i = 0; i < CUT_WORK_MAX_BUFS; i++)
            CHECK(!p.work.bufs[i].data[0] && !p.work.bufs[i].data[1]);
        return;
    }
    CHECK(cut_work_check(&p.work, &e) == 0);
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_prepare_kernel_encode(&p, &b);
    CHECK(same_payload(&b, f, 0));
    cut_buf_free(&b);
    cut_wp_prepare_kernel_free(&p);
    cut_wp_prepare_kernel_free(&p);
}

/* The fixed work RUN_KERNEL and KERNEL_RESULT are decoded against. */
static cut_work fixed_work(int refs)
{
    static const float x[5], y[5];
    static const int32_t n[3];
    cut_work w = {.nbufs = 3, .atol = 0, .rtol = 0};
    w.bufs[0] = (cut_work_buf){.name = "x", .is_output = 0, .dtype = CUT_EL_F32, .elems = 5, .data = {x, x}};
    w.bufs[1] = (cut_work_buf){.name = "y", .is_output = 1, .dtype = CUT_EL_F32, .elems = 5, .data = {refs ? y : NULL, refs ? y : NULL}};
    w.bufs[2] = (cut_work_buf){.name = "n", .is_output = 1, .dtype = CUT_EL_I32, .elems = 3, .data = {refs ? n : NULL, refs ? n : NULL}};
    return w;
}

static void check_run_kernel(const cut_wp_frame *f)
{
    const cut_work w = fixed_work(0);
    cut_call c;
    const uint8_t *cubin = NULL;
    size_t n = 0;
    cut_err e = {{0}};
    int rc = cut_wp_run_kernel_decode(f, &w, &c, &cubin, &n, &e);
    if (f->type != CUT_WP_RUN_KERNEL)
        CHECK(rc != 0);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        return;
    }
    CHECK(cut_call_check(&w, &c, &e) == 0);
    CHECK(n > 0 && cubin >= f->data && n <= f->len && (size_t)(cubin - f->data) <= f->len - n);
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_run_kernel_encode(&c, cubin, n, &b);
    CHECK(same_payload(&b, f, 0));
    cut_buf_free(&b);
}

/* ENERGY_KERNEL against the fixed work: without references it never decodes; with them a decode re-encodes to the
 * payload, with a call that passes cut_call_check, a cubin inside the frame and a plan that passes its check. */
static void check_energy_kernel(const cut_wp_frame *f)
{
    for (int refs = 0; refs < 2; refs++) {
        const cut_work w = fixed_work(refs);
        cut_call c;
        cut_energy_plan p;
        const uint8_t *cubin = NULL;
        size_t n = 0;
        cut_err e = {{0}};
        int rc = cut_wp_energy_kernel_decode(f, &w, &c, &cubin, &n, &p, &e);
        if (f->type != CUT_WP_ENERGY_KERNEL || !refs)
            CHECK(rc != 0);
        if (rc != 0) {
            CHECK(rc == -1 && e.msg[0] != 0);
            continue;
        }
        CHECK(cut_call_check(&w, &c, &e) == 0);
        CHECK(cut_energy_plan_check(&p, &e) == 0 && memchr(p.uuid, 0, sizeof p.uuid));
        CHECK(n > 0 && cubin >= f->data && n <= f->len && (size_t)(cubin - f->data) <= f->len - n);
        cut_buf b;
        cut_buf_init(&b);
        cut_wp_energy_kernel_encode(&c, cubin, n, &p, &b);
        CHECK(same_payload(&b, f, 0));
        cut_buf_free(&b);
    }
}

static void check_kernel_result(const cut_wp_frame *f)
{
    for (int refs = 0; refs < 2; refs++) {
        const cut_work w = fixed_work(refs);
        cut_result r;
        cut_work_outputs o;
        cut_err e = {{0}};
        int rc = cut_wp_kernel_result_decode(f, &w, &r, &o, &e);
        if (f->type != CUT_WP_KERNEL_RESULT)
            CHECK(rc != 0);
        for (int i = 0; i < CUT_WORK_MAX_BUFS; i++)
            for (int s = 0; s < 2; s++)
                CHECK(rc == 0 || !o.data[i][s]);
        if (rc != 0) {
            CHECK(rc == -1 && e.msg[0] != 0);
            continue;
        }
        CHECK((int)r.status >= 0 && r.status < CUT_ST_COUNT);
        CHECK((o.data[1][0] != NULL) == (r.status == CUT_ST_OK && !refs));
        CHECK(f->len <= cut_wp_kernel_result_max(&w));
        cut_buf b;
        cut_buf_init(&b);
        cut_wp_kernel_result_encode(&r, &w, &o, &b);
        CHECK(same_payload(&b, f, 0));
        cut_buf_free(&b);
        cut_work_outputs_free(&o);
    }
}

static void check_decoders(const cut_wp_frame *f);

/* A run request's timing prefix: a split that succeeds gives a sane policy and a body that is the rest of the
 * payload (re-encoding gives the payload back), and the body goes through every decoder as a frame of its own. */
static void check_run_split(const cut_wp_frame *f)
{
    cut_timing t;
    cut_wp_frame q;
    cut_err e = {{0}};
    int rc = cut_wp_run_split(f, &t, &q, &e);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        return;
    }
    CHECK(t.warmup >= 0 && t.min_repeats >= 1 && t.max_repeats >= t.min_repeats);
    CHECK(isfinite(t.min_total_ms) && t.min_total_ms >= 0 && t.timeout_s > 0);
    CHECK(q.type == f->type && q.len <= f->len && (q.len == 0 || q.data + q.len == f->data + f->len));
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_run_encode(&t, q.data, q.len, &b);
    CHECK(same_payload(&b, f, 0));
    cut_buf_free(&b);
    if (cut_wp_is_run(f->type))
        check_decoders(&q);
}

static void check_decoders(const cut_wp_frame *f)
{
    CHECK(cut_wp_type_name(f->type) != NULL);
    check_hello(f);
    check_prepare(f);
    check_prepare_gemm(f);
    check_measure(f);
    check_result(f);
    check_energy(f);
    check_energy_result(f);
    check_vendor(f);
    check_vendor_result(f);
    check_prepare_kernel(f);
    check_run_kernel(f);
    check_energy_kernel(f);
    check_kernel_result(f);
    check_error(f);
}

static void check_all(const cut_wp_frame *f)
{
    check_run_split(f);
    check_decoders(f);
}

static void stream_mode(uint8_t mode, const uint8_t *data, size_t size)
{
    if (size > 60000) /* stays below the pipe's capacity, so writing never blocks */
        size = 60000;
    int fds[2];
    CHECK(pipe(fds) == 0);
    CHECK(size == 0 || write(fds[1], data, size) == (ssize_t)size);
    CHECK(close(fds[1]) == 0);
    const size_t max_len = (mode & 2) ? CUT_WP_MAX_REPLY : 64;
    const double timeout_s = (mode & 4) ? 30.0 : -1.0;
    size_t consumed = 0;
    for (;;) {
        cut_wp_frame f;
        cut_err e = {{0}};
        int rc = cut_wp_recv(fds[0], timeout_s, max_len, &f, &e);
        CHECK(rc == 1 || rc == 0 || rc == -1);
        if (rc == 0) {
            CHECK(consumed == size);
            break;
        }
        if (rc == -1) {
            CHECK(e.msg[0] != 0 && f.data == NULL && f.len == 0);
            break;
        }
        CHECK(f.type > 0 && f.type < CUT_WP_TYPE_END && f.len <= max_len);
        CHECK((f.data == NULL) == (f.len == 0));
        consumed += CUT_WP_HEADER_SIZE + f.len;
        CHECK(consumed <= size);
        check_all(&f);
        cut_wp_frame_free(&f);
        CHECK(f.data == NULL && f.len == 0);
    }
    CHECK(close(fds[0]) == 0);
}

static void direct_mode(const uint8_t *data, size_t size)
{
    if (size < 1)
        return;
    cut_wp_frame f;
    f.type = data[0];
    f.len = size - 1;
    f.data = NULL;
    if (f.len) {
        f.data = malloc(f.len);
        CHECK(f.data != NULL);
        memcpy(f.data, data + 1, f.len);
    }
    check_all(&f);
    cut_wp_frame_free(&f);
    cut_wp_frame_free(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 1)
        direct_mode(data + 1, size - 1);
    else
        stream_mode(data[0], data + 1, size - 1);
    return 0;
}
