/* libFuzzer target: the GPU worker's wire protocol (src/measure/worker_proto.h) on arbitrary bytes.
 *
 * The first input byte picks the mode:
 *   even: the bytes after it are written to a pipe (write end then closed) and read back frame by frame with
 *         cut_wp_recv, as both sides do (limit CUT_WP_MAX_REPLY or a small one, with and without a timeout);
 *         every frame received goes through every decoder;
 *   odd:  the second byte is a frame type, the rest its payload (an exactly sized allocation), straight into every
 *         decoder.
 * Decoders: the parent's (HELLO, RUN_RESULT, VENDOR_RESULT, ERROR, HELD) and the worker's (PREPARE_WORK, RUN's body,
 * HOLD_WORK, SELECT_WORK and DROP_WORK; and the worker's table of held works, worker_hold.c, given every frame);
 * RUN's body and RUN_RESULT against fixed works: a user kernel's (x input, y and n outputs) with and without
 * references, a small Conv2D's and a small GEMM's.
 * Invariants:
 *   - cut_wp_recv returns 1, 0 (end of input, only after whole frames) or -1 with a sentence, never -2 (all bytes are
 *     there); a frame has a known type, a length within the limit, data NULL exactly when empty, and the frames
 *     cover the input exactly when the stream ends cleanly;
 *   - a run request's timing prefix splits off as a sane policy and the rest, which re-encodes to the payload and
 *     goes through every decoder again;
 *   - a decoder given a frame of another type fails; a failure has a sentence and leaves nothing allocated;
 *   - a decode that succeeds re-encodes to exactly the payload bytes (ERROR: a prefix of them), strings come back
 *     NUL-terminated within their buffers; PREPARE_WORK's work passes cut_work_check and its op fits its buffers
 *     (cut_wp_work_op); a RUN's call passes cut_call_check against the work, its image lies inside the frame, its
 *     TMA descriptors pass cut_wp_tma_check, an energy plan passes cut_energy_plan_check and comes only on a work
 *     with references, CUDNN only on the Conv2D, CUBLAS and VENDOR only on the GEMM, VENDOR's options in range;
 *     RUN_RESULT's status is known, outputs come exactly for an OK run on a work without references;
 *     VENDOR_RESULT's counts are consistent and its top list within CUT_VENDOR_TOP; HOLD_WORK's id is >= 1 and its
 *     work passes the same checks; SELECT_WORK's and DROP_WORK's id is >= 1; HELD lists at most CUT_WP_HOLD_MAX
 *     distinct ids >= 1 and selects one of them or none;
 *   - the worker's table answers a request about works with ACK (PREPARE_WORK) or a HELD that decodes, or an ERROR
 *     sentence, and 1 for any other type; it holds at most one work here and frees it. */
#include "measure/worker_hold.h"
#include "measure/worker_proto.h"
#include "cutune/workload.h"
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

static void check_work(const cut_wp_frame *f)
{
    cut_work w;
    memset(&w, 0x7f, sizeof w);
    cut_err e = {{0}};
    int rc = cut_wp_work_decode(f, &w, &e);
    if (f->type != CUT_WP_PREPARE_WORK)
        CHECK(rc != 0);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        for (int i = 0; i < CUT_WORK_MAX_BUFS; i++)
            CHECK(!w.bufs[i].data[0] && !w.bufs[i].data[1]);
        return;
    }
    cut_conv c;
    cut_gemm g;
    CHECK(cut_work_check(&w, &e) == 0 && cut_wp_work_op(&w, &c, &g, &e) == 0 && w.owns_data);
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_work_encode(&w, &b);
    CHECK(same_payload(&b, f, 0));
    cut_buf_free(&b);
    cut_work_free(&w);
    cut_work_free(&w);
}

static void check_held_msgs(const cut_wp_frame *f)
{
    cut_err e = {{0}};
    uint64_t id = 5;
    cut_work w;
    memset(&w, 0x7f, sizeof w);
    int rc = cut_wp_hold_decode(f, &id, &w, &e);
    CHECK(rc == 0 || (rc == -1 && e.msg[0] && id == 0 && !w.bufs[0].data[0] && !w.bufs[0].data[1]));
    CHECK(f->type == CUT_WP_HOLD_WORK || rc != 0);
    if (rc == 0) {
        cut_conv c;
        cut_gemm g;
        CHECK(id >= 1 && cut_work_check(&w, &e) == 0 && cut_wp_work_op(&w, &c, &g, &e) == 0 && w.owns_data);
        cut_buf b;
        cut_buf_init(&b);
        cut_wp_hold_encode(id, &w, &b);
        CHECK(same_payload(&b, f, 0));
        cut_buf_free(&b);
        cut_work_free(&w);
    }
    for (uint32_t t = CUT_WP_SELECT_WORK; t <= CUT_WP_DROP_WORK; t++) {
        rc = cut_wp_id_decode(f, t, &id, &e);
        CHECK(f->type == t || rc != 0);
        CHECK(rc == 0 ? id >= 1 && f->len == 8 : (rc == -1 && e.msg[0] && id == 0));
    }
    cut_wp_held h;
    rc = cut_wp_held_decode(f, &h, &e);
    CHECK(f->type == CUT_WP_HELD || rc != 0);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] && h.n == 0 && h.selected == 0);
        return;
    }
    CHECK(h.n >= 0 && h.n <= CUT_WP_HOLD_MAX && (h.selected == 0 || cut_wp_held_has(&h, h.selected)));
    for (int i = 0; i < h.n; i++)
        for (int j = 0; j < i; j++)
            CHECK(h.id[i] >= 1 && h.id[i] != h.id[j]);
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_held_encode(&h, &b);
    CHECK(same_payload(&b, f, 0));
    cut_buf_free(&b);
}

/* The worker's table of held works with a host-only state (the decoded work). */
static int live_works;
static int fz_load(void *ctx, cut_work *w, int others, void **state, cut_err *e)
{
    (void)ctx;
    (void)e;
    CHECK(others >= 0 && others < CUT_WP_HOLD_MAX);
    cut_work *k = malloc(sizeof *k);
    CHECK(k != NULL);
    *k = *w;
    memset(w, 0, sizeof *w);
    *state = k;
    live_works++;
    return 0;
}

static void fz_free(void *ctx, void *state, int context_dead)
{
    (void)ctx;
    (void)context_dead;
    cut_work_free(state);
    free(state);
    live_works--;
}

static void check_hold_table(const cut_wp_frame *f)
{
    const cut_wk_hold_ops ops = {.load = fz_load, .free = fz_free};
    cut_wk_hold h;
    cut_wk_hold_init(&h, &ops);
    const int about_works = f->type == CUT_WP_PREPARE_WORK || f->type == CUT_WP_HOLD_WORK ||
                            f->type == CUT_WP_SELECT_WORK || f->type == CUT_WP_DROP_WORK;
    for (int round = 0; round < 2; round++) { /* twice: a HOLD_WORK of an id held replaces it */
        cut_buf b;
        cut_buf_init(&b);
        uint32_t reply = 0;
        cut_err e = {{0}};
        const int rc = cut_wk_hold_request(&h, f, &reply, &b, &e);
        CHECK(about_works ? (rc == 0 || rc == -1) : rc == 1);
        CHECK(rc != -1 || e.msg[0]);
        if (rc == 0 && reply == CUT_WP_HELD) {
            const cut_wp_frame r = {.type = CUT_WP_HELD, .data = (uint8_t *)b.data, .len = b.len};
            cut_wp_held said;
            CHECK(cut_wp_held_decode(&r, &said, &e) == 0 && said.n <= 1);
        } else if (rc == 0) {
            CHECK(reply == CUT_WP_ACK && f->type == CUT_WP_PREPARE_WORK && b.len == 0 && cut_wk_hold_cur(&h));
        }
        CHECK(live_works >= 0 && live_works <= 1);
        cut_buf_free(&b);
    }
    cut_wk_hold_free(&h, 0);
    CHECK(live_works == 0);
}

/* The fixed works RUN and RUN_RESULT are decoded against: 0 and 1 a user kernel's without and with references, 2 a
 * small Conv2D's, 3 a small GEMM's. */
enum { NWORKS = 4 };
static const cut_work *fixed_work(int k)
{
    static cut_work works[NWORKS];
    static int ready;
    static const float x[5], y[5];
    static const int32_t n[3];
    if (!ready) {
        for (int refs = 0; refs < 2; refs++) {
            cut_work *w = &works[refs];
            *w = (cut_work){.nbufs = 3};
            w->bufs[0] = (cut_work_buf){.name = "x", .is_output = 0, .dtype = CUT_EL_F32, .elems = 5, .data = {x, x}};
            w->bufs[1] = (cut_work_buf){.name = "y", .is_output = 1, .dtype = CUT_EL_F32, .elems = 5,
                                        .data = {refs ? y : NULL, refs ? y : NULL}};
            w->bufs[2] = (cut_work_buf){.name = "n", .is_output = 1, .dtype = CUT_EL_I32, .elems = 3,
                                        .data = {refs ? n : NULL, refs ? n : NULL}};
        }
        cut_err e;
        const cut_conv c = {1, 4, 4, 2, 2, 3, 3, 1, 1};
        const cut_gemm g = {4, 4, 4, CUT_GEMM_NN, CUT_DT_FP16};
        CHECK(cut_conv_work(&c, 1, &works[2], &e) == 0 && cut_gemm_work(&g, 1, 0, &works[3], &e) == 0);
        ready = 1;
    }
    return &works[k];
}

static void check_run_body(const cut_wp_frame *f)
{
    for (int k = -1; k < NWORKS; k++) {
        const cut_work *w = k < 0 ? NULL : fixed_work(k);
        cut_wp_run q;
        cut_err e = {{0}};
        int rc = cut_wp_run_body_decode(f, w, &q, &e);
        if (f->type != CUT_WP_RUN || !w)
            CHECK(rc != 0);
        if (rc != 0) {
            CHECK(rc == -1 && e.msg[0] != 0);
            continue;
        }
        CHECK((int)q.what >= 0 && q.what < CUT_WP_RUN_WHAT_END);
        if (q.what == CUT_WP_RUN_CUDNN)
            CHECK(w->op.kind == CUT_WORK_CONV);
        if (q.what == CUT_WP_RUN_CUBLAS || q.what == CUT_WP_RUN_VENDOR)
            CHECK(w->op.kind == CUT_WORK_GEMM);
        if (q.what == CUT_WP_RUN_VENDOR)
            CHECK(cut_wp_vendor_check(&q.vendor, &e) == 0);
        if (q.what == CUT_WP_RUN_CALL) {
            CHECK(cut_call_check(w, &q.call, &e) == 0 && !q.call.src && !q.call.bin);
            CHECK(q.image_size > 0 && q.image >= f->data && q.image_size <= f->len &&
                  (size_t)(q.image - f->data) <= f->len - q.image_size);
            for (int i = 0; i < q.call.nargs; i++)
                CHECK(!q.call.args[i].tma || cut_wp_tma_check(&q.call.args[i].desc, &e) == 0);
            CHECK(!q.energy || (cut_energy_plan_check(&q.plan, &e) == 0 && memchr(q.plan.uuid, 0, sizeof q.plan.uuid) &&
                                cut_work_has_refs(w)));
        }
        cut_buf b;
        cut_buf_init(&b);
        cut_wp_run_body_encode(&q, &b);
        CHECK(same_payload(&b, f, 0));
        cut_buf_free(&b);
    }
}

static void check_run_result(const cut_wp_frame *f)
{
    for (int k = 0; k < NWORKS; k++) {
        const cut_work *w = fixed_work(k);
        cut_wp_run_result r;
        cut_work_outputs o;
        cut_err e = {{0}};
        int rc = cut_wp_run_result_decode(f, w, &r, &o, &e);
        if (f->type != CUT_WP_RUN_RESULT)
            CHECK(rc != 0);
        for (int i = 0; i < CUT_WORK_MAX_BUFS; i++)
            for (int s = 0; s < 2; s++)
                CHECK(rc == 0 || !o.data[i][s]);
        if (rc != 0) {
            CHECK(rc == -1 && e.msg[0] != 0);
            continue;
        }
        CHECK((int)r.res.status >= 0 && r.res.status < CUT_ST_COUNT);
        CHECK(memchr(r.res.error, 0, sizeof r.res.error) && memchr(r.algo, 0, sizeof r.algo));
        CHECK(!r.energy || (memchr(r.why, 0, sizeof r.why) && r.er.lrounds >= 0 &&
                            r.er.lrounds <= CUT_ENERGY_MAX_LROUNDS && !r.algo[0]));
        CHECK((o.data[1][0] != NULL) == (r.res.status == CUT_ST_OK && k == 0 && !r.algo[0]));
        CHECK(f->len <= cut_wp_run_result_max(w));
        cut_buf b;
        cut_buf_init(&b);
        cut_wp_run_result_encode(&r, w, &o, &b);
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
    check_work(f);
    check_run_body(f);
    check_run_result(f);
    check_vendor_result(f);
    check_error(f);
    check_held_msgs(f);
    check_hold_table(f);
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
