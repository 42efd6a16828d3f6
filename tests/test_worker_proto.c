/* Tests of the measurement worker's wire protocol (src/measure/worker_wire.c, worker_proto.c and
 * worker_proto_work.c) and of the GPU runner's parent side (src/measure/gpu_runner.c) without a GPU.
 *
 * Framing: round trips through a pipe (empty, small, and a multi-MiB payload from a writer thread); truncated,
 * garbage, unknown-type, oversized and stalled frames are errors or timeouts, never UB; EPIPE does not kill us.
 * Codecs: PREPARE_WORK (a conv's, a GEMM's of every dtype, a user kernel's work), RUN (a call, with TMA maps, with
 * an energy plan whose bytes are pinned by hand; the baselines; the vendor options), RUN_RESULT (outputs, an
 * algorithm, an energy measurement), VENDOR_RESULT, HELLO, ERROR round trips; short, padded and inconsistent
 * payloads are rejected.
 * Runner: this test binary doubles as a fake worker (`test_worker_proto __worker <dev> <in> <out>`), so the parent's
 * whole state machine runs for real: HELLO, PREPARE_WORK of a conv (checked against an independent reference),
 * per-candidate replies, a hang (killed after timeout_s -> TIMEOUT), a crash (-> FAULT "worker died (signal 6 ...)"),
 * a fault report, an exit, garbage on the pipe, restarts with the work sent again, the cuDNN run and clean shutdown;
 * a GEMM work (checked against cut_gemm_reference) and the cuBLAS run; a user kernel's energy (an energy-observed
 * RUN: meter failure, wrong result, fault, hang); held works (the fake worker keeps them in worker_hold.c's table:
 * selects that send nothing, eviction on both sides, a restart, a work dropped for a vendor run, room for one work).
 * The held works' codecs and the emulation worker's side are in test_held_worker.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "measure/worker_proto.h"
#include "measure/worker_hold.h"
#include "measure/cublaslt_baseline.h"
#include "cutune/half.h"
#include "cutune/workload.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* =============================================================================================================
 * The fake worker (runs in a child process exec'd by the runner)
 * ============================================================================================================= */

static int fake_send_error(int fd, const char *msg)
{
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_error_encode(msg, &b);
    cut_err e;
    int rc = cut_wp_send(fd, CUT_WP_ERROR, b.data, b.len, &e);
    cut_buf_free(&b);
    return rc;
}

/* FAKE_WORKER_START=error|exit|garbage changes how it starts; a call's entry name says what to do. */
/* 1 if the parent's float reference is exactly the double reference rounded to float. */
static int is_rounded(const float *got, const double *ref, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != (float)ref[i])
            return 0;
    return 1;
}

/* 1 if every value is exactly representable in dtype d (fp16/bf16: the parent rounded the inputs). */
static int is_dtype_exact(cut_dtype d, const float *x, size_t n)
{
    float *y = malloc(n * sizeof *y + 1);
    memcpy(y, x, n * sizeof *y);
    cut_dtype_round(d, y, n);
    const int same = n == 0 || memcmp(x, y, n * sizeof *y) == 0;
    free(y);
    return same;
}

/* VENDOR: echoes the options into a fake result (tried = heuristic_n, valid = max_configs % 7, top entries
 * "fake config i" at 1 + i ms). */
static int fake_vendor(int out_fd, const cut_vendor_opts *op, int verified)
{
    cut_vendor_opts o = *op;
    cut_err e;
    cut_vendor_result v;
    memset(&v, 0, sizeof v);
    v.tried = o.heuristic_n;
    v.valid = CUT_MIN(o.max_configs % 7, v.tried);
    v.enumerated = o.enumerate;
    v.ntop = CUT_MIN(v.valid, CUT_VENDOR_TOP);
    for (int i = 0; i < v.ntop; i++) {
        v.top[i].res.status = verified ? CUT_ST_OK : CUT_ST_WRONG_RESULT;
        v.top[i].res.median_ms = 1 + i;
        snprintf(v.top[i].config, sizeof v.top[i].config, "fake config %d", i);
    }
    v.best = v.top[0];
    snprintf(v.note, sizeof v.note, "budget %g", o.budget_s);
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_vendor_result_encode(&v, &b);
    int rc = cut_wp_send(out_fd, CUT_WP_VENDOR_RESULT, b.data, b.len, &e);
    cut_buf_free(&b);
    return rc;
}

static int fake_send_run_result(int fd, const cut_wp_run_result *rr, const cut_work *w)
{
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_run_result_encode(rr, w, NULL, &b);
    cut_err e;
    int rc = cut_wp_send(fd, CUT_WP_RUN_RESULT, b.data, b.len, &e);
    cut_buf_free(&b);
    return rc;
}

/* An energy-observed call on the kept work w. The entry says what to do: "ok" echoes the plan (lrounds, and
 * min_steps as the energy per iteration) and grid[0] as the median, if the image is "CUBIN:ok"; "meterfail" reports
 * the meter's failure; "wrong" a wrong result (with stray energy figures the parent must drop); "fault" a fault,
 * after which the worker exits (returns 3); "hang" never answers. Returns 0 otherwise. */
static int fake_energy_call(int out_fd, const cut_wp_run *q, const cut_work *w)
{
    const cut_call *c = &q->call;
    if (strcmp(c->entry, "hang") == 0)
        for (;;)
            pause();
    cut_wp_run_result rr;
    memset(&rr, 0, sizeof rr);
    cut_result_reset(&rr.res);
    rr.energy = 1;
    rr.energy_ok = 1;
    cut_energy_result *er = &rr.er;
    if (strcmp(c->entry, "ok") == 0) {
        rr.res.status = q->image_size == 8 && memcmp(q->image, "CUBIN:ok", 8) == 0 ? CUT_ST_OK : CUT_ST_WRONG_RESULT;
        rr.res.median_ms = c->grid[0];
        rr.res.repeats = 5;
        er->lrounds = q->plan.lrounds;
        er->energy_mj = q->plan.min_steps;
        er->power_w = 200;
    } else if (strcmp(c->entry, "meterfail") == 0) {
        rr.energy_ok = 0;
        snprintf(rr.why, sizeof rr.why, "energy: NVML's energy counter did not change (fake)");
    } else if (strcmp(c->entry, "wrong") == 0 || strcmp(c->entry, "fault") == 0) {
        const int fault = c->entry[0] == 'f';
        rr.res.status = fault ? CUT_ST_FAULT : CUT_ST_WRONG_RESULT;
        snprintf(rr.res.error, sizeof rr.res.error, "%s",
                 fault ? "cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (fake)"
                       : "after the energy run, fresh inputs: y[0] = 1, want 0");
        er->lrounds = 1;
        er->energy_mj = 99;
    } else {
        rr.res.status = CUT_ST_LAUNCH_ERROR;
        snprintf(rr.res.error, sizeof rr.res.error, "fake: unknown entry %s", c->entry);
    }
    fake_send_run_result(out_fd, &rr, w);
    return rr.res.status == CUT_ST_FAULT ? 3 : 0;
}

/* The input set s of buffer i of a conv or GEMM work as floats (caller frees). */
static float *fake_floats(const cut_work *w, int i, int s)
{
    const cut_work_buf *b = &w->bufs[i];
    float *x = malloc(b->elems * sizeof *x + 1);
    cut_elem_to_floats(b->dtype, b->data[s], b->elems, x);
    return x;
}

/* Checks the parent's references of a conv or GEMM work independently: each the double reference of its set
 * (cut_conv_reference, cut_gemm_reference) rounded to float; set 1's inputs fresh (not set 0's); a GEMM's inputs
 * stored in its dtype's storage type. */
static int fake_verify(const cut_work *w)
{
    cut_conv c;
    cut_gemm g;
    cut_err e;
    const int conv = w->op.kind == CUT_WORK_CONV && cut_conv_of_work_op(&w->op, &c, &e) == 0;
    const int gemm = w->op.kind == CUT_WORK_GEMM && cut_gemm_of_work_op(&w->op, &g, &e) == 0;
    if ((!conv && !gemm) || w->nbufs != 3 || !w->bufs[2].data[0])
        return 0;
    int ok = memcmp(w->bufs[0].data[0], w->bufs[0].data[1], w->bufs[0].elems * cut_elem_size(w->bufs[0].dtype)) != 0;
    if (gemm)
        ok = ok && w->bufs[0].dtype == cut_gemm_storage_elem(g.dtype) && w->check == CUT_CHECK_FROBENIUS &&
             w->rtol == cut_gemm_tolerance(g.dtype);
    else
        ok = ok && w->check == CUT_CHECK_CLOSE &&
             memcmp(w->bufs[1].data[0], w->bufs[1].data[1], w->bufs[1].elems * sizeof(float)) != 0;
    const size_t n = w->bufs[2].elems;
    double *ref = malloc(n * sizeof *ref);
    for (int k = 0; k < 2 && ok; k++) {
        float *a = fake_floats(w, 0, k), *b = fake_floats(w, 1, k);
        if (gemm)
            cut_gemm_reference(&g, a, b, ref);
        else
            cut_conv_reference(&c, a, b, ref);
        ok = is_rounded(w->bufs[2].data[k], ref, n) && (!gemm || (is_dtype_exact(g.dtype, a, w->bufs[0].elems) &&
                                                                   is_dtype_exact(g.dtype, b, w->bufs[1].elems)));
        free(a);
        free(b);
    }
    free(ref);
    return ok;
}

static int fake_nheld; /* the works the fake worker holds by id (HOLD_WORK), as its last HELD said */

/* A call on a conv or GEMM work: the entry name says what to do. Returns 3 when the worker must exit. */
static int fake_measure(int out_fd, const cut_wp_run *q, const cut_work *w, int verified, int prepares,
                        const cut_timing *timing)
{
    const cut_call *m = &q->call;
    cut_wp_run_result rr;
    memset(&rr, 0, sizeof rr);
    cut_result *res = &rr.res;
    if (strcmp(m->entry, "ok") == 0) {
        /* the image must be "CUBIN:" + entry; grid/block/smem echo back in the timings. */
        int cubin_ok = q->image_size == 8 && memcmp(q->image, "CUBIN:ok", 8) == 0;
        res->status = (verified && cubin_ok) ? CUT_ST_OK : CUT_ST_WRONG_RESULT;
        res->median_ms = m->grid[0] + m->block[0] / 1000.0;
        res->min_ms = m->smem;
        res->max_ms = timing->min_repeats;
        res->repeats = prepares;
        res->max_abs_err = m->args[1].tma ? (double)m->args[1].desc.box[1] : 0.0; /* TMA descriptors arrive */
        snprintf(res->error, sizeof res->error, "pid=%d held=%d", (int)getpid(), fake_nheld);
        fake_send_run_result(out_fd, &rr, w);
    } else if (strcmp(m->entry, "hang") == 0) {
        for (;;)
            pause();
    } else if (strcmp(m->entry, "abort") == 0) {
        signal(SIGABRT, SIG_DFL);
        raise(SIGABRT);
    } else if (strcmp(m->entry, "fault") == 0) {
        res->status = CUT_ST_FAULT;
        res->median_ms = res->min_ms = res->max_ms = -1.0;
        snprintf(res->error, sizeof res->error, "cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (fake)");
        fake_send_run_result(out_fd, &rr, w);
        return 3;
    } else if (strcmp(m->entry, "exit") == 0) {
        _exit(4);
    } else if (strcmp(m->entry, "garbage") == 0) {
        char junk[CUT_WP_HEADER_SIZE];
        memset(junk, 0xA5, sizeof junk);
        ssize_t k = write(out_fd, junk, sizeof junk);
        (void)k;
        pause();
    } else if (strcmp(m->entry, "error") == 0) {
        fake_send_error(out_fd, "fake setup failure");
    } else {
        res->status = CUT_ST_LAUNCH_ERROR;
        snprintf(res->error, sizeof res->error, "fake: unknown entry %s", m->entry);
        fake_send_run_result(out_fd, &rr, w);
    }
    return 0;
}

/* A work the fake worker holds (measure/worker_hold.h): the decoded work and whether its references check out. */
typedef struct fake_held {
    cut_work w;
    int verified;
} fake_held;

static int fake_prepares; /* the works the fake worker was sent (PREPARE_WORK, HOLD_WORK) */

/* FAKE_WORKER_ROOM=1: a device with room for one work only (a second is -2 while another is held). */
static int fake_load(void *ctx, cut_work *w, int others, void **state, cut_err *e)
{
    (void)ctx;
    const char *room = getenv("FAKE_WORKER_ROOM");
    if (room && others >= atoi(room)) {
        cut_work_free(w);
        return cut_err_set(e, "fake: out of memory beside %d held works", others), -2;
    }
    fake_held *k = calloc(1, sizeof *k);
    k->w = *w;
    memset(w, 0, sizeof *w);
    k->verified = fake_verify(&k->w);
    fake_prepares++;
    *state = k;
    return 0;
}

static void fake_free(void *ctx, void *state, int context_dead)
{
    (void)ctx;
    (void)context_dead;
    fake_held *k = state;
    cut_work_free(&k->w);
    free(k);
}

static int fake_worker_main(int dev, int in_fd, int out_fd)
{
    const char *start = getenv("FAKE_WORKER_START");
    if (start && strcmp(start, "error") == 0)
        return fake_send_error(out_fd, "fake worker: no GPU in here") == 0 ? 1 : 2;
    if (start && strcmp(start, "exit") == 0)
        return 5;
    if (start && strcmp(start, "garbage") == 0) {
        ssize_t k = write(out_fd, "this is not a frame!", 20);
        (void)k;
        pause();
        return 1;
    }
    cut_wp_hello h = {.sm_major = 9, .sm_minor = 0, .l2_bytes = 1 << 20, .driver_version = 13000};
    snprintf(h.name, sizeof h.name, "Fake GPU %d", dev);
    snprintf(h.uuid, sizeof h.uuid, "GPU-00000000-0000-0000-0000-%012d", dev);
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_hello_encode(&h, &b);
    cut_err e;
    if (cut_wp_send(out_fd, CUT_WP_HELLO, b.data, b.len, &e) != 0)
        return 1;
    cut_buf_free(&b);

    cut_timing timing = {0};
    cut_wk_hold hold;
    const cut_wk_hold_ops ops = {.load = fake_load, .free = fake_free};
    cut_wk_hold_init(&hold, &ops);
    static const cut_work none;
    for (;;) {
        cut_wp_frame whole, f; /* f: the request's own fields (after a run request's timing policy) */
        int rc = cut_wp_recv(in_fd, -1, CUT_WP_MAX_REQUEST, &whole, &e);
        if (rc <= 0 || whole.type == CUT_WP_QUIT)
            cut_wk_hold_free(&hold, 0);
        if (rc <= 0)
            return rc == 0 ? 0 : 1;
        const fake_held *k = cut_wk_hold_cur(&hold);
        const int prepared = k != NULL, verified = k && k->verified, prepares = fake_prepares;
        const cut_work *pw = k ? &k->w : &none;
        f = whole;
        if (cut_wp_is_run(whole.type) && cut_wp_run_split(&whole, &timing, &f, &e) != 0) {
            fake_send_error(out_fd, e.msg);
            cut_wp_frame_free(&whole);
            continue;
        }
        int code = 0;
        uint32_t reply = 0;
        cut_buf rb;
        cut_buf_init(&rb);
        const int held = cut_wk_hold_request(&hold, &f, &reply, &rb, &e);
        cut_wp_held said;
        cut_wk_hold_said(&hold, &said);
        fake_nheld = said.n;
        if (held < 0)
            fake_send_error(out_fd, e.msg);
        else if (held == 0)
            cut_wp_send(out_fd, reply, rb.data, rb.len, &e);
        cut_buf_free(&rb);
        if (held > 0 && f.type == CUT_WP_RUN) { /* held <= 0: a request about works, answered above */
            cut_wp_run q;
            if (cut_wp_run_body_decode(&f, prepared ? pw : NULL, &q, &e) != 0) {
                fake_send_error(out_fd, e.msg);
            } else if (q.what == CUT_WP_RUN_VENDOR) {
                fake_vendor(out_fd, &q.vendor, verified);
            } else if (q.what == CUT_WP_RUN_CUBLAS || q.what == CUT_WP_RUN_CUDNN) {
                const int blas = q.what == CUT_WP_RUN_CUBLAS;
                cut_wk_hold_drop_idle(&hold); /* as the GPU worker does: the vendor library gets their memory */
                cut_wp_run_result rr;
                memset(&rr, 0, sizeof rr);
                rr.res.status = verified ? CUT_ST_OK : CUT_ST_WRONG_RESULT;
                rr.res.median_ms = blas ? 1.25 : 2.5;
                rr.res.repeats = blas ? 5 : 7;
                snprintf(rr.algo, sizeof rr.algo, "%s", blas ? "FAKE_SGEMM" : "FAKE_ALGO");
                fake_send_run_result(out_fd, &rr, pw);
            } else if (q.energy) {
                code = fake_energy_call(out_fd, &q, pw);
            } else {
                code = fake_measure(out_fd, &q, pw, verified, prepares, &timing);
            }
        } else if (held > 0 && f.type == CUT_WP_QUIT) {
            cut_wp_frame_free(&whole);
            return 0;
        }
        cut_wp_frame_free(&whole);
        if (code) {
            cut_wk_hold_free(&hold, 0);
            return code;
        }
    }
}

/* =============================================================================================================
 * Framing
 * ============================================================================================================= */

static void mkpipe(int fds[2])
{
    assert_int_equal(pipe(fds), 0);
}

static void test_roundtrip_small(void **state)
{
    (void)state;
    int p[2];
    mkpipe(p);
    cut_err e = {{0}};
    assert_int_equal(cut_wp_send(p[1], CUT_WP_RUN, "hello", 5, &e), 0);
    assert_int_equal(cut_wp_send(p[1], CUT_WP_ACK, NULL, 0, &e), 0);
    cut_wp_frame f;
    assert_int_equal(cut_wp_recv(p[0], 1.0, 100, &f, &e), 1);
    assert_int_equal(f.type, CUT_WP_RUN);
    assert_int_equal(f.len, 5);
    assert_memory_equal(f.data, "hello", 5);
    cut_wp_frame_free(&f);
    assert_null(f.data);
    assert_int_equal(cut_wp_recv(p[0], 1.0, 100, &f, &e), 1);
    assert_int_equal(f.type, CUT_WP_ACK);
    assert_int_equal(f.len, 0);
    assert_null(f.data);
    close(p[1]);
    /* End of file exactly at a frame boundary is a clean 0. */
    assert_int_equal(cut_wp_recv(p[0], 1.0, 100, &f, &e), 0);
    close(p[0]);
}

typedef struct big_writer {
    int fd;
    const uint8_t *data;
    size_t len;
    int rc;
} big_writer;

static void *writer_main(void *arg)
{
    big_writer *w = arg;
    cut_err e;
    w->rc = cut_wp_send(w->fd, CUT_WP_PREPARE_WORK, w->data, w->len, &e);
    return NULL;
}

static void test_roundtrip_large_threaded(void **state)
{
    (void)state;
    /* Far larger than a pipe's buffer (64 KiB): the writer blocks until the reader drains it. */
    const size_t n = (5u << 20) + 12345;
    uint8_t *data = malloc(n);
    for (size_t i = 0; i < n; i++)
        data[i] = (uint8_t)(i * 2654435761u >> 13);
    int p[2];
    mkpipe(p);
    big_writer w = {.fd = p[1], .data = data, .len = n, .rc = -7};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, writer_main, &w), 0);
    cut_wp_frame f;
    cut_err e = {{0}};
    assert_int_equal(cut_wp_recv(p[0], 30.0, CUT_WP_MAX_REQUEST, &f, &e), 1);
    pthread_join(th, NULL);
    assert_int_equal(w.rc, 0);
    assert_int_equal(f.type, CUT_WP_PREPARE_WORK);
    assert_int_equal(f.len, n);
    assert_memory_equal(f.data, data, n);
    cut_wp_frame_free(&f);
    close(p[0]);
    close(p[1]);
    free(data);
}

static void write_raw(int fd, const void *p, size_t n)
{
    assert_int_equal(write(fd, p, n), (ssize_t)n);
}

static void header(uint8_t h[16], uint32_t magic, uint32_t type, uint64_t len)
{
    memcpy(h, &magic, 4);
    memcpy(h + 4, &type, 4);
    memcpy(h + 8, &len, 8);
}

/* Writes raw bytes, closes the write end, and expects cut_wp_recv to fail with a message containing want. */
static void expect_bad(const void *bytes, size_t n, size_t max_len, const char *want)
{
    int p[2];
    mkpipe(p);
    write_raw(p[1], bytes, n);
    close(p[1]);
    cut_wp_frame f;
    cut_err e = {{0}};
    int rc = cut_wp_recv(p[0], 2.0, max_len, &f, &e);
    if (rc != -1 || !strstr(e.msg, want))
        fail_msg("rc %d, message '%s', expected -1 and '%s'", rc, e.msg, want);
    assert_null(f.data);
    close(p[0]);
}

static void test_bad_frames(void **state)
{
    (void)state;
    uint8_t buf[64];
    /* Truncated header. */
    header(buf, CUT_WP_MAGIC, CUT_WP_RUN_RESULT, 4);
    expect_bad(buf, 7, 100, "truncated frame");
    /* Truncated payload: 10 of 40 bytes. */
    header(buf, CUT_WP_MAGIC, CUT_WP_RUN_RESULT, 40);
    memset(buf + 16, 1, 10);
    expect_bad(buf, 26, 100, "payload ended after 10 of 40");
    /* Garbage. */
    memcpy(buf, "GET / HTTP/1.1\r\nHost: x\r\n", 25);
    expect_bad(buf, 25, 100, "bad frame magic");
    /* Unknown types. */
    header(buf, CUT_WP_MAGIC, 0, 0);
    expect_bad(buf, 16, 100, "unknown frame type 0");
    header(buf, CUT_WP_MAGIC, CUT_WP_TYPE_END, 0);
    expect_bad(buf, 16, 100, "unknown frame type");
    /* A huge length is refused before anything is allocated. */
    header(buf, CUT_WP_MAGIC, CUT_WP_RUN_RESULT, UINT64_MAX);
    expect_bad(buf, 16, CUT_WP_MAX_REPLY, "exceeds the limit");
    header(buf, CUT_WP_MAGIC, CUT_WP_RUN_RESULT, 101);
    expect_bad(buf, 16, 100, "exceeds the limit of 100");
}

static void test_timeouts(void **state)
{
    (void)state;
    int p[2];
    mkpipe(p);
    cut_wp_frame f;
    cut_err e = {{0}};
    double t0 = cut_now_s();
    assert_int_equal(cut_wp_recv(p[0], 0.1, 100, &f, &e), -2);
    double dt = cut_now_s() - t0;
    assert_true(dt >= 0.09 && dt < 2.0);
    assert_non_null(strstr(e.msg, "no message within"));
    /* A header that promises more than ever arrives, with the writer still open: a timeout, not a hang. */
    uint8_t h[16];
    header(h, CUT_WP_MAGIC, CUT_WP_RUN_RESULT, 50);
    write_raw(p[1], h, 16);
    write_raw(p[1], "abc", 3);
    assert_int_equal(cut_wp_recv(p[0], 0.1, 100, &f, &e), -2);
    assert_non_null(strstr(e.msg, "3 of 50"));
    close(p[0]);
    close(p[1]);
}

static void test_send_epipe(void **state)
{
    (void)state;
    int p[2];
    mkpipe(p);
    close(p[0]);
    cut_err e = {{0}};
    /* Without the guard, SIGPIPE would kill this test process here. */
    assert_int_equal(cut_wp_send(p[1], CUT_WP_QUIT, NULL, 0, &e), -1);
    assert_non_null(strstr(e.msg, "closed the pipe"));
    sigset_t pending;
    sigpending(&pending);
    assert_false(sigismember(&pending, SIGPIPE)); /* swallowed, not left pending */
    close(p[1]);
}

/* =============================================================================================================
 * Codecs
 * ============================================================================================================= */

static cut_wp_frame frame_of(uint32_t type, const cut_buf *b)
{
    cut_wp_frame f = {.type = type, .data = (uint8_t *)b->data, .len = b->len};
    return f;
}

/* Decodes b (the encoding of p) into *q and checks that it is p: every buffer's flags, type, size and both sets, the
 * rule, tolerances, FLOPs, and the op (its shape into *qc or *qg); and that q re-encodes to the same bytes. */
static void decode_same(const cut_work *p, const cut_buf *b, cut_work *q, cut_conv *qc, cut_gemm *qg)
{
    cut_err e = {{0}};
    cut_wp_frame f = frame_of(CUT_WP_PREPARE_WORK, b);
    assert_int_equal(cut_wp_work_decode(&f, q, &e), 0);
    assert_int_equal(cut_wp_work_op(q, qc, qg, &e), 0);
    assert_int_equal(q->check, p->check);
    assert_true(q->atol == p->atol && q->rtol == p->rtol && q->flops == p->flops && q->owns_data);
    assert_memory_equal(&q->op, &p->op, sizeof p->op);
    assert_int_equal(q->nbufs, p->nbufs);
    for (int i = 0; i < p->nbufs; i++) {
        const cut_work_buf *x = &p->bufs[i], *y = &q->bufs[i];
        assert_true(x->is_output == y->is_output && x->dtype == y->dtype && x->elems == y->elems);
        for (int k = 0; k < 2; k++) { /* both input sets, in order */
            assert_true((x->data[k] == NULL) == (y->data[k] == NULL));
            if (x->data[k])
                assert_memory_equal(y->data[k], x->data[k], x->elems * cut_elem_size(x->dtype));
        }
    }
    cut_buf r;
    cut_buf_init(&r); /* re-encodes to the same bytes */
    cut_wp_work_encode(q, &r);
    assert_int_equal(r.len, b->len);
    assert_memory_equal(r.data, b->data, b->len);
    cut_buf_free(&r);
}

/* A conv work as the conv op builds it: PREPARE_WORK round-trips both input sets and references in order; every
 * truncation, trailing bytes, a shape the buffers do not fit, an invalid shape and the wrong type are refused, and a
 * failed decode leaves nothing allocated. */
static void test_work_codec_conv(void **state)
{
    (void)state;
    const cut_conv conv = {1, 5, 6, 3, 2, 3, 3, 1, 1};
    cut_work p;
    cut_err e = {{0}};
    assert_int_equal(cut_conv_work(&conv, 5, &p, &e), 0);
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_work_encode(&p, &b);
    cut_wp_frame f;
    cut_work q;
    cut_conv qc;
    cut_gemm qg;
    decode_same(&p, &b, &q, &qc, &qg);
    assert_memory_equal(&qc, &conv, sizeof conv);
    assert_int_equal(q.check, CUT_CHECK_CLOSE);
    assert_int_equal(q.bufs[2].elems, cut_conv_out_elems(&conv));
    cut_work_free(&q);
    assert_true(q.nbufs == 0 && !q.bufs[0].data[0] && !q.bufs[2].data[1]);

    /* Every truncation is rejected (no partial decode). */
    for (size_t cut = 0; cut < b.len; cut += (cut < 200 ? 1 : 97)) {
        cut_wp_frame t = {.type = CUT_WP_PREPARE_WORK, .data = (uint8_t *)b.data, .len = cut};
        assert_int_equal(cut_wp_work_decode(&t, &q, &e), -1);
        for (int i = 0; i < 3; i++)
            assert_true(!q.bufs[i].data[0] && !q.bufs[i].data[1]);
    }
    /* Trailing bytes. */
    cut_buf_append(&b, "x", 1);
    f = frame_of(CUT_WP_PREPARE_WORK, &b);
    assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
    assert_non_null(strstr(e.msg, "trailing"));
    b.len--;

    /* A shape that does not match the buffers: CO 3 -> 4 in the op (u32 rule, two f64, two i32, then the dims). */
    const size_t dims_at = 4 + 16 + 8;
    uint64_t co = 4;
    memcpy(b.data + dims_at + 3 * 8, &co, 8);
    f = frame_of(CUT_WP_PREPARE_WORK, &b);
    assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
    assert_non_null(strstr(e.msg, "buffer 1 ('w'"));
    assert_non_null(strstr(e.msg, "does not fit the Conv2D"));
    /* An invalid shape (stride 0). */
    co = 3;
    memcpy(b.data + dims_at + 3 * 8, &co, 8);
    uint64_t stride = 0;
    memcpy(b.data + dims_at + 7 * 8, &stride, 8);
    f = frame_of(CUT_WP_PREPARE_WORK, &b);
    assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
    assert_non_null(strstr(e.msg, "invalid shape"));
    assert_non_null(strstr(e.msg, "stride"));
    /* The wrong message type. */
    f.type = CUT_WP_RUN;
    assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
    assert_non_null(strstr(e.msg, "expected a PREPARE_WORK"));
    cut_buf_free(&b);
    cut_work_free(&p);
}

/* A CALL's body, as the conv and GEMM runners send one. */
static cut_wp_run run_of(const char *entry, const char *image)
{
    cut_wp_run q = {.what = CUT_WP_RUN_CALL, .image = (const uint8_t *)image, .image_size = strlen(image)};
    cut_call *c = &q.call;
    snprintf(c->entry, sizeof c->entry, "%s", entry);
    c->grid[0] = 7;
    c->grid[1] = c->grid[2] = 1;
    c->block[0] = 128;
    c->block[1] = c->block[2] = 1;
    c->smem = 64;
    c->nargs = 3;
    for (int i = 0; i < 3; i++)
        c->args[i].buf = i;
    return q;
}

/* Every run request begins with its timing policy; cut_wp_run_split hands the rest to RUN's body decoder. */
static void test_run_prefix_codec(void **state)
{
    (void)state;
    assert_int_equal(cut_wp_is_run(CUT_WP_RUN), 1);
    const uint32_t others[] = {CUT_WP_HELLO, CUT_WP_PREPARE_WORK, CUT_WP_ACK, CUT_WP_RUN_RESULT, CUT_WP_VENDOR_RESULT,
                               CUT_WP_QUIT, CUT_WP_TYPE_END};
    for (size_t i = 0; i < CUT_ARRAY_LEN(others); i++)
        assert_int_equal(cut_wp_is_run(others[i]), 0);

    cut_timing t, got;
    cut_timing_default(&t);
    t.min_repeats = 9;
    t.max_repeats = 90;
    t.warmup = 4;
    t.flush_l2 = 1;
    t.min_total_ms = 12.5;
    t.timeout_s = 3;
    const cut_conv conv = {1, 4, 4, 2, 2, 3, 3, 1, 1};
    cut_work w;
    cut_err e = {{0}};
    assert_int_equal(cut_conv_work(&conv, 1, &w, &e), 0);
    const cut_wp_run m = run_of("k", "CUBIN:k");
    cut_buf body, b;
    cut_buf_init(&body);
    cut_buf_init(&b);
    cut_wp_run_body_encode(&m, &body);
    cut_wp_run_encode(&t, body.data, body.len, &b);
    cut_wp_frame f = frame_of(CUT_WP_RUN, &b), q;
    assert_int_equal(cut_wp_run_split(&f, &got, &q, &e), 0);
    assert_true(got.warmup == 4 && got.min_repeats == 9 && got.max_repeats == 90 && got.flush_l2 == 1);
    assert_true(got.min_total_ms == 12.5 && got.timeout_s == 3);
    assert_int_equal(q.type, CUT_WP_RUN);
    assert_int_equal(q.len, body.len);
    assert_memory_equal(q.data, body.data, body.len);
    cut_wp_run mq;
    assert_int_equal(cut_wp_run_body_decode(&q, &w, &mq, &e), 0);
    assert_int_equal(mq.call.grid[0], 7);
    assert_string_equal(mq.call.entry, "k");

    /* A baseline's body is its kind alone. */
    cut_buf_free(&b);
    cut_buf_init(&b);
    body.len = 0;
    const cut_wp_run dnn = {.what = CUT_WP_RUN_CUDNN};
    cut_wp_run_body_encode(&dnn, &body);
    cut_wp_run_encode(&t, body.data, body.len, &b);
    f = frame_of(CUT_WP_RUN, &b);
    assert_int_equal(cut_wp_run_split(&f, &got, &q, &e), 0);
    assert_int_equal(q.len, 4);
    assert_int_equal(got.min_repeats, 9);
    assert_int_equal(cut_wp_run_body_decode(&q, &w, &mq, &e), 0);
    assert_int_equal(mq.what, CUT_WP_RUN_CUDNN);

    /* A policy cut short is malformed; so is an unusable policy, named with its message. */
    for (size_t cut = 0; cut < b.len - 4; cut++) {
        cut_wp_frame s = {.type = CUT_WP_RUN, .data = (uint8_t *)b.data, .len = cut};
        assert_int_equal(cut_wp_run_split(&s, &got, &q, &e), -1);
        assert_non_null(strstr(e.msg, "malformed RUN"));
    }
    const cut_timing bad[] = {{.warmup = -1, .min_repeats = 1, .max_repeats = 1, .timeout_s = 1},
                              {.min_repeats = 0, .max_repeats = 1, .timeout_s = 1},
                              {.min_repeats = 5, .max_repeats = 4, .timeout_s = 1},
                              {.min_repeats = 1, .max_repeats = 1, .min_total_ms = -1, .timeout_s = 1},
                              {.min_repeats = 1, .max_repeats = 1, .min_total_ms = NAN, .timeout_s = 1},
                              {.min_repeats = 1, .max_repeats = 1, .timeout_s = 0}};
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad); i++) {
        b.len = 0;
        cut_wp_run_encode(&bad[i], body.data, body.len, &b);
        f = frame_of(CUT_WP_RUN, &b);
        assert_int_equal(cut_wp_run_split(&f, &got, &q, &e), -1);
        assert_non_null(strstr(e.msg, "RUN carries an invalid timing policy"));
    }
    cut_buf_free(&b);
    cut_buf_free(&body);
    cut_work_free(&w);
}

/* A small user-kernel work: x (input f32, 5), y (output f32, 5), n (output i32, 3); references when refs. */
static float KX[2][5] = {{1, 2, 3, 4, 5}, {-1, -2, -3, -4, -5}}, KY[2][5] = {{2, 4, 6, 8, 10}, {0, 1, 0, 1, 0}};
static int32_t KN[2][3] = {{7, 8, 9}, {1, 2, 3}};

static cut_work kwork_of(int refs)
{
    cut_work w = {.nbufs = 3, .atol = 1e-5, .rtol = 1e-4};
    w.bufs[0] = (cut_work_buf){.name = "x", .is_output = 0, .dtype = CUT_EL_F32, .elems = 5, .data = {KX[0], KX[1]}};
    w.bufs[1] = (cut_work_buf){.name = "y", .is_output = 1, .dtype = CUT_EL_F32, .elems = 5, .data = {refs ? KY[0] : NULL, refs ? KY[1] : NULL}};
    w.bufs[2] = (cut_work_buf){.name = "n", .is_output = 1, .dtype = CUT_EL_I32, .elems = 3, .data = {refs ? KN[0] : NULL, refs ? KN[1] : NULL}};
    return w;
}

/* Where PREPARE_WORK's fields sit in a PLAIN work's payload: u32 rule, f64 atol, rtol, i32 op kind, i32 ndims (0),
 * u32 runner_refs, f64 flops, f64 bytes (issue 15), i32 nbufs; then the first buffer: its name "x" (u64 length + 1
 * byte), u32 flags, i32 dtype, u64 elems. */
enum { W_NBUFS_AT = 4 + 16 + 4 + 4 + 4 + 8 + 8, W_X_ELEMS_AT = W_NBUFS_AT + 4 + 8 + 1 + 4 + 4 };

static void test_work_codec_kernel(void **state)
{
    (void)state;
    for (int refs = 0; refs < 2; refs++) {
        const cut_work p = kwork_of(refs);
        cut_buf b;
        cut_buf_init(&b);
        cut_wp_work_encode(&p, &b);
        cut_wp_frame f = frame_of(CUT_WP_PREPARE_WORK, &b);
        cut_work q;
        cut_err e = {{0}};
        assert_int_equal(cut_wp_work_decode(&f, &q, &e), 0);
        assert_int_equal(q.nbufs, 3);
        assert_true(q.atol == 1e-5 && q.rtol == 1e-4);
        assert_int_equal(q.op.kind, CUT_WORK_PLAIN);
        assert_string_equal(q.bufs[2].name, "n");
        assert_int_equal(q.bufs[2].dtype, CUT_EL_I32);
        assert_int_equal(q.bufs[1].is_output, 1);
        assert_memory_equal(q.bufs[0].data[1], KX[1], sizeof KX[1]);
        assert_int_equal(cut_work_has_refs(&q), refs);
        if (refs)
            assert_memory_equal(q.bufs[2].data[1], KN[1], sizeof KN[1]);
        cut_buf re;
        cut_buf_init(&re);
        cut_wp_work_encode(&q, &re);
        assert_int_equal(re.len, b.len);
        assert_memory_equal(re.data, b.data, b.len);
        cut_buf_free(&re);
        cut_work_free(&q);
        for (size_t cut = 0; cut < b.len; cut++) {
            cut_wp_frame t = {.type = CUT_WP_PREPARE_WORK, .data = (uint8_t *)b.data, .len = cut};
            assert_int_equal(cut_wp_work_decode(&t, &q, &e), -1);
            assert_true(e.msg[0] != 0);
            for (int i = 0; i < CUT_WORK_MAX_BUFS; i++)
                assert_true(!q.bufs[i].data[0] && !q.bufs[i].data[1]);
        }
        cut_buf_free(&b);
    }
    cut_err e = {{0}};
    cut_work q;
    cut_buf b;
    /* An output with one reference. */
    cut_work p = kwork_of(1);
    p.bufs[1].data[1] = NULL;
    cut_buf_init(&b);
    cut_wp_work_encode(&p, &b);
    cut_wp_frame f = frame_of(CUT_WP_PREPARE_WORK, &b);
    assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
    assert_non_null(strstr(e.msg, "one input set only"));
    cut_buf_free(&b);
    /* Sizes that do not match elems * dtype size: x declared with 5 elements, sent with 4. */
    p = kwork_of(1);
    p.bufs[0].elems = 4; /* sends 16 bytes of x */
    cut_buf_init(&b);
    cut_wp_work_encode(&p, &b);
    uint64_t five = 5;
    memcpy(b.data + W_X_ELEMS_AT, &five, 8);
    f = frame_of(CUT_WP_PREPARE_WORK, &b);
    assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
    assert_non_null(strstr(e.msg, "has 16 bytes"));
    /* An unknown dtype. */
    int32_t dt = CUT_EL_COUNT;
    memcpy(b.data + W_X_ELEMS_AT - 4, &dt, 4);
    assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
    assert_non_null(strstr(e.msg, "dtype"));
    /* No buffers, too many. */
    for (int32_t nb = 0; nb <= CUT_WORK_MAX_BUFS + 1; nb += CUT_WORK_MAX_BUFS + 1) {
        memcpy(b.data + W_NBUFS_AT, &nb, 4);
        assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
        assert_non_null(strstr(e.msg, "buffers"));
    }
    f.type = CUT_WP_RUN;
    assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
    cut_buf_free(&b);
    /* A work without outputs, a negative tolerance, an unknown rule, runner references of a PLAIN work, an op of 17
     * parameters. */
    p = kwork_of(0);
    p.nbufs = 1;
    cut_buf_init(&b);
    cut_wp_work_encode(&p, &b);
    f = frame_of(CUT_WP_PREPARE_WORK, &b);
    assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
    assert_non_null(strstr(e.msg, "no output"));
    cut_buf_free(&b);
    const char *want[] = {"tolerance", "check rule 3", "only a GEMM's references", "op of 17 parameters"};
    for (int k = 0; k < 4; k++) {
        p = kwork_of(0);
        if (k == 0)
            p.rtol = -1;
        if (k == 2)
            p.runner_refs = 1;
        cut_buf_init(&b);
        cut_wp_work_encode(&p, &b);
        const uint32_t rule = CUT_CHECK_COUNT;
        const int32_t nd = CUT_WORK_OP_DIMS + 1;
        if (k == 1)
            memcpy(b.data, &rule, 4);
        if (k == 3)
            memcpy(b.data + 4 + 16 + 4, &nd, 4);
        f = frame_of(CUT_WP_PREPARE_WORK, &b);
        assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
        if (!strstr(e.msg, want[k]))
            fail_msg("case %d: %s", k, e.msg);
        cut_buf_free(&b);
    }
}

static cut_call kcall_of(void)
{
    cut_call c = {.entry = "k", .grid = {2, 1, 1}, .block = {128, 1, 1}, .smem = 64, .nargs = 3};
    c.args[0].buf = 0;
    c.args[1].buf = 1;
    c.args[2] = (cut_call_arg){.buf = -1, .size = 4};
    const float a = 2.5f;
    memcpy(c.args[2].bytes, &a, 4);
    return c;
}

static cut_wp_run call_run(const cut_call *c, const char *image, size_t n)
{
    cut_wp_run q = {.what = CUT_WP_RUN_CALL, .call = *c, .image = (const uint8_t *)image, .image_size = n};
    return q;
}

static void test_run_call_codec(void **state)
{
    (void)state;
    const cut_work w = kwork_of(0);
    cut_call c = kcall_of();
    cut_wp_run r = call_run(&c, "ELF!", 4);
    r.call.tol_scale = 3;
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_run_body_encode(&r, &b);
    cut_wp_frame f = frame_of(CUT_WP_RUN, &b);
    cut_wp_run q;
    cut_err e = {{0}};
    assert_int_equal(cut_wp_run_body_decode(&f, &w, &q, &e), 0);
    assert_int_equal(q.what, CUT_WP_RUN_CALL);
    assert_int_equal(q.energy, 0);
    assert_int_equal(q.image_size, 4);
    assert_memory_equal(q.image, "ELF!", 4);
    assert_string_equal(q.call.entry, "k");
    assert_int_equal(q.call.nargs, 3);
    assert_int_equal(q.call.smem, 64);
    assert_int_equal(q.call.block[0], 128);
    assert_true(q.call.tol_scale == 3);
    assert_int_equal(q.call.args[2].buf, -1);
    assert_memory_equal(q.call.args[2].bytes, c.args[2].bytes, 8);
    assert_null(q.call.src);
    for (size_t cut = 0; cut < b.len; cut++) {
        cut_wp_frame t = {.type = CUT_WP_RUN, .data = (uint8_t *)b.data, .len = cut};
        assert_int_equal(cut_wp_run_body_decode(&t, &w, &q, &e), -1);
    }
    /* Before any work, nothing runs. */
    assert_int_equal(cut_wp_run_body_decode(&f, NULL, &q, &e), -1);
    assert_non_null(strstr(e.msg, "before PREPARE_WORK"));
    cut_buf_free(&b);
    /* A bad buffer index, a bad scalar size, an empty launch, an empty image, a tolerance factor out of range. */
    const char *want[] = {"names buffer 3", "has 3 bytes", "empty launch", "empty module image", "tolerance factor"};
    for (int k = 0; k < 5; k++) {
        c = kcall_of();
        if (k == 0)
            c.args[1].buf = 3;
        if (k == 1)
            c.args[2].size = 3;
        if (k == 2)
            c.grid[1] = 0;
        if (k == 4)
            c.tol_scale = -1;
        r = call_run(&c, "ELF!", k == 3 ? 0 : 4);
        cut_buf_init(&b);
        cut_wp_run_body_encode(&r, &b);
        f = frame_of(CUT_WP_RUN, &b);
        assert_int_equal(cut_wp_run_body_decode(&f, &w, &q, &e), -1);
        assert_non_null(strstr(e.msg, want[k]));
        cut_buf_free(&b);
    }
    /* An unknown kind of run; the baselines only on their op's work. */
    cut_buf_init(&b);
    cut_wp_put_u32(&b, CUT_WP_RUN_WHAT_END);
    f = frame_of(CUT_WP_RUN, &b);
    assert_int_equal(cut_wp_run_body_decode(&f, &w, &q, &e), -1);
    assert_non_null(strstr(e.msg, "unknown kind of run"));
    b.len = 0;
    cut_wp_put_u32(&b, CUT_WP_RUN_CUDNN);
    f = frame_of(CUT_WP_RUN, &b);
    assert_int_equal(cut_wp_run_body_decode(&f, &w, &q, &e), -1);
    assert_non_null(strstr(e.msg, "CUDNN runs on a Conv2D work only"));
    b.len = 0;
    cut_wp_put_u32(&b, CUT_WP_RUN_CUBLAS);
    f = frame_of(CUT_WP_RUN, &b);
    assert_int_equal(cut_wp_run_body_decode(&f, &w, &q, &e), -1);
    assert_non_null(strstr(e.msg, "CUBLAS runs on a GEMM work only"));
    cut_buf_free(&b);
}

static void test_run_result_codec(void **state)
{
    (void)state;
    const cut_work w = kwork_of(0), wr = kwork_of(1);
    cut_wp_run_result r;
    memset(&r, 0, sizeof r);
    cut_result_reset(&r.res);
    r.res.median_ms = 0.25;
    r.res.repeats = 11;
    cut_work_outputs o;
    memset(&o, 0, sizeof o);
    for (int s = 0; s < 2; s++) {
        o.data[1][s] = malloc(sizeof KY[s]);
        memcpy(o.data[1][s], KY[s], sizeof KY[s]);
        o.data[2][s] = malloc(sizeof KN[s]);
        memcpy(o.data[2][s], KN[s], sizeof KN[s]);
    }
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_run_result_encode(&r, &w, &o, &b);
    cut_wp_frame f = frame_of(CUT_WP_RUN_RESULT, &b);
    assert_true(b.len <= cut_wp_run_result_max(&w));
    cut_wp_run_result q;
    cut_work_outputs qo;
    cut_err e = {{0}};
    assert_int_equal(cut_wp_run_result_decode(&f, &w, &q, &qo, &e), 0);
    assert_int_equal(q.res.status, CUT_ST_OK);
    assert_int_equal(q.res.repeats, 11);
    assert_true(q.res.median_ms == 0.25);
    assert_int_equal(q.energy, 0);
    assert_memory_equal(qo.data[1][1], KY[1], sizeof KY[1]);
    assert_memory_equal(qo.data[2][0], KN[0], sizeof KN[0]);
    assert_null(qo.data[0][0]);
    cut_work_outputs_free(&qo);
    for (size_t cut = 0; cut < b.len; cut++) {
        cut_wp_frame t = {.type = CUT_WP_RUN_RESULT, .data = (uint8_t *)b.data, .len = cut};
        assert_int_equal(cut_wp_run_result_decode(&t, &w, &q, &qo, &e), -1);
        assert_null(qo.data[1][0]);
    }
    /* Outputs where the work has references, or after a failed run, are refused. */
    assert_int_equal(cut_wp_run_result_decode(&f, &wr, &q, &qo, &e), -1);
    assert_non_null(strstr(e.msg, "want 0"));
    cut_buf_free(&b);
    r.res.status = CUT_ST_WRONG_RESULT;
    snprintf(r.res.error, sizeof r.res.error, "after timing, fresh inputs: y[3] = nan, want 1");
    cut_buf_init(&b);
    cut_wp_run_result_encode(&r, &w, &o, &b);
    f = frame_of(CUT_WP_RUN_RESULT, &b);
    assert_int_equal(cut_wp_run_result_decode(&f, &w, &q, &qo, &e), -1);
    cut_buf_free(&b);
    /* Without outputs a failed run decodes, with its sentence. */
    cut_buf_init(&b);
    cut_wp_run_result_encode(&r, &w, NULL, &b);
    f = frame_of(CUT_WP_RUN_RESULT, &b);
    assert_int_equal(cut_wp_run_result_decode(&f, &w, &q, &qo, &e), 0);
    assert_int_equal(q.res.status, CUT_ST_WRONG_RESULT);
    assert_string_equal(q.res.error, r.res.error);
    /* An OK result of a capturing work without its outputs is refused. */
    r.res.status = CUT_ST_OK;
    b.len = 0;
    cut_wp_run_result_encode(&r, &w, NULL, &b);
    f = frame_of(CUT_WP_RUN_RESULT, &b);
    assert_int_equal(cut_wp_run_result_decode(&f, &w, &q, &qo, &e), -1);
    assert_non_null(strstr(e.msg, "output 'y' set 0 has 0 bytes"));
    cut_buf_free(&b);
    cut_work_outputs_free(&o);
    /* A baseline's result carries its algorithm's name (and no outputs: its work has references). */
    memset(&r, 0, sizeof r);
    r.res = (cut_result){.status = CUT_ST_WRONG_RESULT, .median_ms = 1.5, .min_ms = 1.25, .max_ms = 2.0,
                         .repeats = 17, .max_abs_err = 0.125};
    snprintf(r.res.error, sizeof r.res.error, "idx 3: got nan want 1");
    snprintf(r.algo, sizeof r.algo, "IMPLICIT_GEMM");
    cut_buf_init(&b);
    cut_wp_run_result_encode(&r, &wr, NULL, &b);
    f = frame_of(CUT_WP_RUN_RESULT, &b);
    assert_int_equal(cut_wp_run_result_decode(&f, &wr, &q, &qo, &e), 0);
    assert_int_equal(q.res.status, CUT_ST_WRONG_RESULT);
    assert_string_equal(q.res.error, r.res.error);
    assert_true(q.res.median_ms == 1.5 && q.res.min_ms == 1.25 && q.res.max_ms == 2.0 && q.res.max_abs_err == 0.125);
    assert_int_equal(q.res.repeats, 17);
    assert_string_equal(q.algo, "IMPLICIT_GEMM");
    /* An out-of-range status is refused; so is another type. */
    int32_t bad = CUT_ST_COUNT;
    memcpy(b.data, &bad, 4);
    assert_int_equal(cut_wp_run_result_decode(&f, &wr, &q, &qo, &e), -1);
    assert_non_null(strstr(e.msg, "unknown status"));
    f.type = CUT_WP_ACK;
    assert_int_equal(cut_wp_run_result_decode(&f, &wr, &q, &qo, &e), -1);
    cut_buf_free(&b);
}

/* An energy plan as it has always travelled, written by hand: uuid string, i32 lrounds, min_steps, f64 warm-up,
 * chunk, wait. A RUN observed by a plan carries these bytes after its call's fields and a u32 1. */
static void put_plan_by_hand(cut_buf *b, const cut_energy_plan *p)
{
    cut_wp_put_u64(b, strlen(p->uuid));
    cut_buf_append(b, p->uuid, strlen(p->uuid));
    cut_wp_put_i32(b, p->lrounds);
    cut_wp_put_i32(b, p->min_steps);
    cut_wp_put_f64(b, p->warmup_s);
    cut_wp_put_f64(b, p->chunk_ms);
    cut_wp_put_f64(b, p->max_wait_s);
}

static cut_energy_plan plan_of(void)
{
    cut_energy_plan p;
    cut_energy_plan_default(&p);
    snprintf(p.uuid, sizeof p.uuid, "GPU-fa4e0000-0000-4000-8000-000000000000");
    p.lrounds = 5;
    p.min_steps = 7;
    p.warmup_s = 0.25;
    p.chunk_ms = 2.5;
    p.max_wait_s = 3.0;
    return p;
}

/* An energy-observed call: the plain call's bytes with the flag 1 then the plan's bytes; round trip; truncated,
 * padded, mistyped frames, bad plans, bad calls and a work without references are refused. */
static void test_run_energy_codec(void **state)
{
    (void)state;
    const cut_work w = kwork_of(1), w0 = kwork_of(0);
    const cut_call c = kcall_of();
    const cut_energy_plan p = plan_of();
    cut_wp_run er = call_run(&c, "ELF!", 4), plain = er;
    er.energy = 1;
    er.plan = p;
    cut_buf b, rk, hand;
    cut_buf_init(&b);
    cut_buf_init(&rk);
    cut_buf_init(&hand);
    cut_wp_run_body_encode(&er, &b);
    cut_wp_run_body_encode(&plain, &rk);
    put_plan_by_hand(&hand, &p);
    assert_int_equal(b.len, rk.len + hand.len);
    assert_memory_equal(b.data, rk.data, rk.len - 4); /* the same call, then energy flag 1 instead of 0 */
    uint32_t flag;
    memcpy(&flag, b.data + rk.len - 4, 4);
    assert_int_equal(flag, 1);
    assert_memory_equal(b.data + rk.len, hand.data, hand.len);

    cut_wp_frame f = frame_of(CUT_WP_RUN, &b);
    cut_wp_run q;
    cut_err e = {{0}};
    assert_int_equal(cut_wp_run_body_decode(&f, &w, &q, &e), 0);
    assert_int_equal(q.energy, 1);
    assert_int_equal(q.image_size, 4);
    assert_memory_equal(q.image, "ELF!", 4);
    assert_string_equal(q.call.entry, "k");
    assert_int_equal(q.call.nargs, 3);
    assert_int_equal(q.call.smem, 64);
    assert_memory_equal(q.call.grid, c.grid, sizeof c.grid);
    assert_memory_equal(q.call.block, c.block, sizeof c.block);
    assert_memory_equal(q.call.args, c.args, sizeof c.args[0] * 3);
    assert_string_equal(q.plan.uuid, p.uuid);
    assert_int_equal(q.plan.lrounds, 5);
    assert_int_equal(q.plan.min_steps, 7);
    assert_true(q.plan.warmup_s == 0.25 && q.plan.chunk_ms == 2.5 && q.plan.max_wait_s == 3.0);
    cut_buf re;
    cut_buf_init(&re);
    cut_wp_run_body_encode(&q, &re);
    assert_int_equal(re.len, b.len);
    assert_memory_equal(re.data, b.data, b.len);
    cut_buf_free(&re);
    /* The worker's wait covers the timeout, the warm-up and every window's waits. */
    assert_true(cut_wp_energy_timeout_s(2.0, &p) == 2.0 + 0.25 + (1 + 5 * 7) * 3.0);
    assert_true(cut_wp_energy_timeout_s(0.0, &p) == 10.0 + 0.25 + (1 + 5 * 7) * 3.0);

    /* Every truncation is refused with a sentence; so are trailing bytes and another type. */
    for (size_t cut = 0; cut < b.len; cut++) {
        cut_wp_frame t = {.type = CUT_WP_RUN, .data = (uint8_t *)b.data, .len = cut};
        e.msg[0] = '\0';
        assert_int_equal(cut_wp_run_body_decode(&t, &w, &q, &e), -1);
        assert_true(e.msg[0] != 0);
    }
    cut_buf_append(&b, "x", 1);
    f = frame_of(CUT_WP_RUN, &b);
    assert_int_equal(cut_wp_run_body_decode(&f, &w, &q, &e), -1);
    assert_non_null(strstr(e.msg, "trailing"));
    b.len--;
    f = frame_of(CUT_WP_PREPARE_WORK, &b);
    assert_int_equal(cut_wp_run_body_decode(&f, &w, &q, &e), -1);
    assert_non_null(strstr(e.msg, "expected a RUN"));
    /* A work without references: an energy run never captures. */
    f = frame_of(CUT_WP_RUN, &b);
    assert_int_equal(cut_wp_run_body_decode(&f, &w0, &q, &e), -1);
    assert_non_null(strstr(e.msg, "without references"));
    assert_string_equal(cut_wp_type_name(CUT_WP_RUN), "RUN");
    /* An energy flag of 2. */
    flag = 2;
    memcpy(b.data + rk.len - 4, &flag, 4);
    assert_int_equal(cut_wp_run_body_decode(&f, &w, &q, &e), -1);
    assert_non_null(strstr(e.msg, "energy flag 2"));
    cut_buf_free(&b);
    cut_buf_free(&rk);
    cut_buf_free(&hand);

    /* Bad plans. */
    const struct {
        int field;
        double v;
        const char *why;
    } bad_plan[] = {{0, 0, "lrounds"}, {0, CUT_ENERGY_MAX_LROUNDS + 1, "lrounds"}, {1, 0, "steps"},
                    {2, -1, "warm-up"}, {3, NAN, "chunk"},       {4, 0, "counter wait"}};
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad_plan); i++) {
        cut_wp_run bq = er;
        switch (bad_plan[i].field) {
        case 0: bq.plan.lrounds = (int)bad_plan[i].v; break;
        case 1: bq.plan.min_steps = (int)bad_plan[i].v; break;
        case 2: bq.plan.warmup_s = bad_plan[i].v; break;
        case 3: bq.plan.chunk_ms = bad_plan[i].v; break;
        default: bq.plan.max_wait_s = bad_plan[i].v; break;
        }
        cut_buf_init(&b);
        cut_wp_run_body_encode(&bq, &b);
        f = frame_of(CUT_WP_RUN, &b);
        assert_int_equal(cut_wp_run_body_decode(&f, &w, &q, &e), -1);
        assert_non_null(strstr(e.msg, "malformed RUN message"));
        if (!strstr(e.msg, bad_plan[i].why))
            fail_msg("plan %zu: %s", i, e.msg);
        cut_buf_free(&b);
    }
    /* A uuid longer than the plan holds is refused, not truncated. */
    cut_buf_init(&b);
    cut_wp_run_body_encode(&plain, &b);
    b.len -= 4;
    cut_wp_put_u32(&b, 1);
    char longid[sizeof p.uuid + 8];
    memset(longid, 'u', sizeof longid - 1);
    longid[sizeof longid - 1] = '\0';
    cut_wp_put_str(&b, longid);
    cut_wp_put_i32(&b, 1);
    cut_wp_put_i32(&b, 1);
    for (int i = 0; i < 3; i++)
        cut_wp_put_f64(&b, 1.0);
    f = frame_of(CUT_WP_RUN, &b);
    assert_int_equal(cut_wp_run_body_decode(&f, &w, &q, &e), -1);
    cut_buf_free(&b);
    /* Bad calls, as a plain run refuses them. */
    const char *want[] = {"names buffer 3", "has 3 bytes", "empty launch", "empty module image", "arguments"};
    for (int k = 0; k < 5; k++) {
        cut_call bc = kcall_of();
        if (k == 0)
            bc.args[1].buf = 3;
        if (k == 1)
            bc.args[2].size = 3;
        if (k == 2)
            bc.block[0] = 0;
        if (k == 4)
            bc.nargs = 0;
        cut_wp_run bq = call_run(&bc, "ELF!", k == 3 ? 0 : 4);
        bq.energy = 1;
        bq.plan = p;
        cut_buf_init(&b);
        cut_wp_run_body_encode(&bq, &b);
        f = frame_of(CUT_WP_RUN, &b);
        assert_int_equal(cut_wp_run_body_decode(&f, &w, &q, &e), -1);
        assert_non_null(strstr(e.msg, want[k]));
        assert_non_null(strstr(e.msg, "RUN"));
        cut_buf_free(&b);
    }
}

/* RUN_RESULT of an energy-observed run: round trip; truncations, an algorithm name, ok > 1, lrounds over the maximum
 * and an unknown status are refused. */
static void test_run_result_energy_codec(void **state)
{
    (void)state;
    const cut_work w = kwork_of(1);
    cut_wp_run_result r;
    memset(&r, 0, sizeof r);
    cut_result_reset(&r.res);
    r.res.median_ms = 0.5;
    r.res.repeats = 9;
    r.res.max_abs_err = 1e-7;
    r.energy = 1;
    r.energy_ok = 1;
    cut_energy_result *er = &r.er;
    er->lrounds = 2;
    er->round[1] = (cut_energy_stats){.iters = 1234, .energy_mj = 4000, .window_s = 0.02, .energy_per_iter_mj = 3.25,
                                      .time_per_iter_ms = 0.0125, .avg_power_w = 200, .counter_steps = 2};
    er->energy_mj = 3.0;
    er->power_w = 201.5;
    er->sm_mhz_max = 1980;
    er->throttle = 0x4;
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_run_result_encode(&r, &w, NULL, &b);
    cut_wp_frame f = frame_of(CUT_WP_RUN_RESULT, &b);
    cut_wp_run_result q;
    cut_work_outputs qo;
    cut_err e = {{0}};
    assert_int_equal(cut_wp_run_result_decode(&f, &w, &q, &qo, &e), 0);
    assert_int_equal(q.energy, 1);
    assert_int_equal(q.energy_ok, 1);
    assert_string_equal(q.why, "");
    assert_int_equal(q.res.status, CUT_ST_OK);
    assert_int_equal(q.res.repeats, 9);
    assert_true(q.res.median_ms == 0.5 && q.res.max_abs_err == 1e-7);
    assert_int_equal(q.er.lrounds, 2);
    assert_memory_equal(&q.er.round[1], &er->round[1], sizeof er->round[1]);
    assert_true(q.er.energy_mj == 3.0 && q.er.power_w == 201.5 && q.er.sm_mhz_max == 1980 && q.er.throttle == 0x4);
    for (size_t cut = 0; cut < b.len; cut++) {
        cut_wp_frame t = {.type = CUT_WP_RUN_RESULT, .data = (uint8_t *)b.data, .len = cut};
        assert_int_equal(cut_wp_run_result_decode(&t, &w, &q, &qo, &e), -1);
    }
    f.type = CUT_WP_VENDOR_RESULT;
    assert_int_equal(cut_wp_run_result_decode(&f, &w, &q, &qo, &e), -1);
    cut_buf_free(&b);
    /* The meter's failure travels as ok 0 with its sentence. */
    r.energy_ok = 0;
    snprintf(r.why, sizeof r.why, "energy: NVML's energy counter did not change");
    cut_buf_init(&b);
    cut_wp_run_result_encode(&r, &w, NULL, &b);
    f = frame_of(CUT_WP_RUN_RESULT, &b);
    assert_int_equal(cut_wp_run_result_decode(&f, &w, &q, &qo, &e), 0);
    assert_int_equal(q.energy_ok, 0);
    assert_non_null(strstr(q.why, "did not change"));
    cut_buf_free(&b);
    /* ok 2, an algorithm name, 17 lrounds, an unknown status (hand-made frames). */
    for (int k = 0; k < 4; k++) {
        cut_buf_init(&b);
        cut_result rr = r.res;
        if (k == 3)
            rr.status = (cut_status)CUT_ST_COUNT;
        cut_wp_result_encode(&rr, k == 1 ? "ALGO" : "", &b);
        cut_wp_put_u32(&b, 1); /* energy */
        cut_wp_put_u32(&b, k == 0 ? 2u : 1u);
        cut_wp_put_str(&b, "");
        const int lr = k == 2 ? CUT_ENERGY_MAX_LROUNDS + 1 : 0;
        cut_wp_put_i32(&b, lr);
        for (int i = 0; i < 9; i++)
            cut_wp_put_f64(&b, 0);
        for (int i = 0; i < 4; i++)
            cut_wp_put_u32(&b, 0);
        cut_wp_put_u64(&b, 0);
        for (int i = 0; i < 4; i++) /* two outputs, no captures */
            cut_wp_put_u64(&b, 0);
        f = frame_of(CUT_WP_RUN_RESULT, &b);
        assert_int_equal(cut_wp_run_result_decode(&f, &w, &q, &qo, &e), -1);
        const char *want[] = {"ok flag", "algorithm name", "lrounds", "unknown status"};
        if (!strstr(e.msg, want[k]))
            fail_msg("case %d: %s", k, e.msg);
        cut_buf_free(&b);
    }
}

/* A GEMM work as the GEMM op builds it, its references left to the runner for set 1's sake: round trip and re-encode
 * to the same bytes; truncations, trailing bytes, buffers that do not fit the shape, every dtype's storage, an
 * unknown dtype or layout, M = 0 and the wrong type are refused. */
static void test_work_codec_gemm(void **state)
{
    (void)state;
    const cut_gemm g = {7, 5, 3, CUT_GEMM_NT, CUT_DT_FP32};
    cut_work p;
    cut_err e = {{0}};
    assert_int_equal(cut_gemm_work(&g, 3, 0, &p, &e), 0);
    const size_t nb = cut_gemm_b_elems(&g);
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_work_encode(&p, &b);
    cut_wp_frame f;
    cut_work q;
    cut_conv qc;
    cut_gemm qg;
    decode_same(&p, &b, &q, &qc, &qg);
    assert_memory_equal(&qg, &g, sizeof g);
    assert_int_equal(q.check, CUT_CHECK_FROBENIUS);
    assert_true(q.rtol == cut_gemm_tolerance(CUT_DT_FP32));
    cut_work_free(&q);
    assert_true(!q.bufs[0].data[0] && !q.bufs[0].data[1] && !q.bufs[2].data[0]);

    for (size_t cut = 0; cut < b.len; cut += 7) { /* every truncation is rejected, nothing left allocated */
        cut_wp_frame t = {.type = CUT_WP_PREPARE_WORK, .data = (uint8_t *)b.data, .len = cut};
        assert_int_equal(cut_wp_work_decode(&t, &q, &e), -1);
        for (int k = 0; k < 3; k++)
            assert_true(q.bufs[k].data[0] == NULL && q.bufs[k].data[1] == NULL);
    }
    cut_buf_append(&b, "x", 1);
    f = frame_of(CUT_WP_PREPARE_WORK, &b);
    assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
    assert_non_null(strstr(e.msg, "trailing"));
    b.len--;

    const size_t dims_at = 4 + 16 + 8;
    uint64_t v = 6; /* N 5 -> 6: B no longer matches */
    memcpy(b.data + dims_at + 8, &v, 8);
    f = frame_of(CUT_WP_PREPARE_WORK, &b);
    assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
    assert_non_null(strstr(e.msg, "buffer 1 ('B'"));
    assert_non_null(strstr(e.msg, "does not fit the GEMM"));
    v = 5;
    memcpy(b.data + dims_at + 8, &v, 8);
    /* fp32 inputs are floats: tf32 is the one other dtype that stores them so; fp16 and bf16 need 16-bit buffers */
    for (int d = CUT_DT_TF32; d < CUT_DT_COUNT; d++) {
        v = (uint64_t)d;
        memcpy(b.data + dims_at + 4 * 8, &v, 8);
        f = frame_of(CUT_WP_PREPARE_WORK, &b);
        const int rc = cut_wp_work_decode(&f, &q, &e);
        if (d == CUT_DT_TF32) {
            assert_int_equal(rc, 0);
            assert_int_equal(cut_wp_work_op(&q, &qc, &qg, &e), 0);
            assert_int_equal(qg.dtype, d);
            cut_work_free(&q);
        } else {
            assert_int_equal(rc, -1);
            if (!strstr(e.msg, "does not fit the GEMM"))
                fail_msg("dtype %d: %s", d, e.msg);
        }
    }
    for (int d = CUT_DT_FP32; d < CUT_DT_COUNT; d++) { /* every dtype travels in its own storage */
        const cut_gemm gd = {7, 5, 3, CUT_GEMM_NN, (cut_dtype)d};
        cut_work pd;
        assert_int_equal(cut_gemm_work(&gd, 3, 0, &pd, &e), 0);
        cut_buf bd;
        cut_buf_init(&bd);
        cut_wp_work_encode(&pd, &bd);
        cut_wp_frame fd = frame_of(CUT_WP_PREPARE_WORK, &bd);
        assert_int_equal(cut_wp_work_decode(&fd, &q, &e), 0);
        assert_int_equal(q.bufs[0].dtype, cut_gemm_storage_elem((cut_dtype)d));
        assert_memory_equal(q.bufs[1].data[1], pd.bufs[1].data[1], nb * cut_elem_size(q.bufs[1].dtype));
        cut_work_free(&q);
        cut_work_free(&pd);
        cut_buf_free(&bd);
    }
    v = 9; /* unknown dtype, then unknown layout, then M = 0 */
    memcpy(b.data + dims_at + 4 * 8, &v, 8);
    f = frame_of(CUT_WP_PREPARE_WORK, &b);
    assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
    assert_non_null(strstr(e.msg, "unknown dtype"));
    v = CUT_DT_FP32;
    memcpy(b.data + dims_at + 4 * 8, &v, 8);
    v = 4; /* 2 and 3 are TN and TT since issue 21 */
    memcpy(b.data + dims_at + 3 * 8, &v, 8);
    f = frame_of(CUT_WP_PREPARE_WORK, &b);
    assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
    assert_non_null(strstr(e.msg, "unknown layout"));
    v = CUT_GEMM_NT;
    memcpy(b.data + dims_at + 3 * 8, &v, 8);
    v = 0;
    memcpy(b.data + dims_at, &v, 8);
    f = frame_of(CUT_WP_PREPARE_WORK, &b);
    assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
    assert_non_null(strstr(e.msg, "invalid shape"));
    f.type = CUT_WP_RUN; /* the wrong message type */
    assert_int_equal(cut_wp_work_decode(&f, &q, &e), -1);
    assert_non_null(strstr(e.msg, "expected a PREPARE_WORK"));
    cut_buf_free(&b);
    cut_work_free(&p);

    /* runner references travel as a flag with empty outputs */
    const cut_gemm big = {2048, 1024, 2048, CUT_GEMM_NN, CUT_DT_FP32};
    assert_int_equal(cut_gemm_work(&big, 1, 1, &p, &e), 0);
    assert_int_equal(p.runner_refs, 1);
    cut_buf_init(&b);
    cut_wp_work_encode(&p, &b);
    f = frame_of(CUT_WP_PREPARE_WORK, &b);
    assert_int_equal(cut_wp_work_decode(&f, &q, &e), 0);
    assert_int_equal(q.runner_refs, 1);
    assert_null(q.bufs[2].data[0]);
    assert_int_equal(cut_work_has_refs(&q), 1);
    cut_work_free(&q);
    cut_buf_free(&b);
    cut_work_free(&p);
    assert_string_equal(cut_wp_type_name(CUT_WP_PREPARE_WORK), "PREPARE_WORK");
    assert_string_equal(cut_wp_type_name(CUT_WP_RUN_RESULT), "RUN_RESULT");
}

static void test_hello_error_codecs(void **state)
{
    (void)state;
    cut_err e = {{0}};
    /* An entry name longer than the call holds is refused, not truncated. */
    const cut_work w = kwork_of(1);
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_put_u32(&b, CUT_WP_RUN_CALL);
    for (int i = 0; i < 7; i++)
        cut_wp_put_u32(&b, 1);
    char longname[sizeof((cut_call *)0)->entry + 10];
    memset(longname, 'k', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    cut_wp_put_str(&b, longname);
    cut_wp_put_bytes(&b, "x", 1);
    cut_wp_frame f = frame_of(CUT_WP_RUN, &b);
    cut_wp_run q;
    assert_int_equal(cut_wp_run_body_decode(&f, &w, &q, &e), -1);
    cut_buf_free(&b);

    cut_wp_hello h = {.sm_major = 9, .sm_minor = 0, .l2_bytes = 62914560, .driver_version = 13000};
    snprintf(h.name, sizeof h.name, "NVIDIA H200");
    snprintf(h.uuid, sizeof h.uuid, "GPU-01234567-89ab-cdef-0123-456789abcdef");
    cut_buf_init(&b);
    cut_wp_hello_encode(&h, &b);
    f = frame_of(CUT_WP_HELLO, &b);
    cut_wp_hello g;
    assert_int_equal(cut_wp_hello_decode(&f, &g, &e), 0);
    assert_string_equal(g.name, h.name);
    assert_string_equal(g.uuid, h.uuid);
    assert_int_equal(g.sm_major, 9);
    assert_int_equal(g.sm_minor, 0);
    assert_int_equal(g.l2_bytes, 62914560);
    assert_int_equal(g.driver_version, 13000);
    f.len = b.len - 2;
    assert_int_equal(cut_wp_hello_decode(&f, &g, &e), -1);
    cut_buf_free(&b);

    cut_buf_init(&b);
    cut_wp_error_encode("worker: out of memory", &b);
    f = frame_of(CUT_WP_ERROR, &b);
    char msg[64];
    assert_int_equal(cut_wp_error_decode(&f, msg, sizeof msg), 0);
    assert_string_equal(msg, "worker: out of memory");
    f.len = 3;
    assert_int_equal(cut_wp_error_decode(&f, msg, sizeof msg), -1);
    cut_buf_free(&b);
}

/* A call with two TMA arguments round-trips (with an energy plan too); bad descriptors, a map of an output and a map
 * of another element size are refused. */
static void test_run_tma_codec(void **state)
{
    (void)state;
    cut_err e = {{0}};
    const cut_gemm g = {2048, 1024, 4096, CUT_GEMM_NT, CUT_DT_FP16};
    cut_work w;
    setenv("CUTUNE_GEMM_REF", "gpu", 1); /* no host reference of a 2^34-FLOP GEMM in a codec test */
    assert_int_equal(cut_gemm_work(&g, 1, 1, &w, &e), 0);
    unsetenv("CUTUNE_GEMM_REF");
    cut_wp_run m = run_of("cut_gemm_wgmma", "CUBIN");
    m.call.args[0].tma = 1;
    m.call.args[0].desc = (cut_tma_desc){0, 2, {4096, 2048}, 8192, {64, 128}, 128};
    m.call.args[1].tma = 1;
    m.call.args[1].desc = (cut_tma_desc){1, 2, {4096, 1024}, 8192, {64, 256}, 128};
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_run_body_encode(&m, &b);
    cut_wp_frame f = frame_of(CUT_WP_RUN, &b);
    cut_wp_run q;
    assert_int_equal(cut_wp_run_body_decode(&f, &w, &q, &e), 0);
    assert_true(q.call.args[0].tma && q.call.args[1].tma && !q.call.args[2].tma);
    assert_memory_equal(&q.call.args[0].desc, &m.call.args[0].desc, sizeof(cut_tma_desc));
    assert_memory_equal(&q.call.args[1].desc, &m.call.args[1].desc, sizeof(cut_tma_desc));
    cut_wp_run m3 = m; /* a 3-D map (a batch of 2 planes) arrives whole */
    m3.call.args[0].desc.dims[1] = 1024, m3.call.args[0].desc.planes = 2, m3.call.args[0].desc.plane_bytes = 8192 * 1024;
    cut_buf b3;
    cut_buf_init(&b3);
    cut_wp_run_body_encode(&m3, &b3);
    cut_wp_frame f3 = frame_of(CUT_WP_RUN, &b3);
    assert_int_equal(cut_wp_run_body_decode(&f3, &w, &q, &e), 0);
    assert_memory_equal(&q.call.args[0].desc, &m3.call.args[0].desc, sizeof(cut_tma_desc));
    assert_true(q.call.args[0].desc.planes == 2 && q.call.args[0].desc.plane_bytes == 8192 * 1024);
    cut_buf_free(&b3);
    cut_wp_run me = m; /* an energy run carries them too */
    me.energy = 1;
    cut_energy_plan_default(&me.plan);
    snprintf(me.plan.uuid, sizeof me.plan.uuid, "GPU-x");
    cut_buf eb;
    cut_buf_init(&eb);
    cut_wp_run_body_encode(&me, &eb);
    cut_wp_frame ef = frame_of(CUT_WP_RUN, &eb);
    assert_int_equal(cut_wp_run_body_decode(&ef, &w, &q, &e), 0);
    assert_memory_equal(&q.call.args[1].desc, &m.call.args[1].desc, sizeof(cut_tma_desc));
    cut_buf_free(&eb);
    for (size_t cut = 0; cut < b.len; cut++) { /* every truncation is refused */
        cut_wp_frame t = {.type = CUT_WP_RUN, .data = (uint8_t *)b.data, .len = cut};
        assert_int_equal(cut_wp_run_body_decode(&t, &w, &q, &e), -1);
    }
    cut_buf_free(&b);
    const struct {
        cut_tma_desc d;
        const char *why;
    } bad[] = {
        {{2, 2, {64, 64}, 128, {64, 64}, 0}, "operand 2"},
        {{0, 8, {64, 64}, 512, {64, 64}, 0}, "element size 8"},
        {{0, 2, {0, 64}, 128, {64, 64}, 0}, "dimension 0"},
        {{0, 2, {64, (1ull << 32) + 1}, 128, {64, 64}, 0}, "dimension 1"},
        {{0, 2, {64, 64}, 128, {257, 64}, 0}, "dimension 0"},
        {{0, 2, {64, 64}, 120, {64, 64}, 0}, "row stride"},
        {{0, 2, {64, 64}, 64, {64, 64}, 0}, "row stride"},
        {{0, 2, {64, 64}, 1ull << 40, {64, 64}, 0}, "row stride"},
        {{1, 4, {64, 64}, 256, {32, 64}, 16}, "swizzle 16"},
        /* 3-D maps (a strided batch): too many planes, a plane stride off 16 bytes or shorter than a plane */
        {{0, 2, {64, 64}, 128, {64, 64}, 0, (1ull << 32) + 1, 8192}, "planes"},
        {{0, 2, {64, 64}, 128, {64, 64}, 0, 3, 8200}, "plane stride"},
        {{0, 2, {64, 64}, 128, {64, 64}, 0, 3, 8192 - 128}, "plane stride"},
        {{0, 2, {64, 64}, 128, {64, 64}, 0, 3, 1ull << 40}, "plane stride"},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad); i++) {
        cut_wp_run mb = m;
        mb.call.args[1].desc = bad[i].d;
        assert_int_equal(cut_wp_tma_check(&bad[i].d, &e), -1);
        assert_non_null(strstr(e.msg, bad[i].why));
        cut_buf_init(&b);
        cut_wp_run_body_encode(&mb, &b);
        f = frame_of(CUT_WP_RUN, &b);
        assert_int_equal(cut_wp_run_body_decode(&f, &w, &q, &e), -1);
        assert_non_null(strstr(e.msg, "malformed RUN message"));
        cut_buf_free(&b);
    }
    /* A map of the output, a map with 4-byte elements of an fp16 buffer, a TMA flag of 2 (hand-made). */
    const char *want[] = {"TMA map of an output", "4-byte elements", "TMA flag 2"};
    for (int k = 0; k < 3; k++) {
        cut_wp_run mb = m;
        if (k == 0) {
            mb.call.args[2].tma = 1;
            mb.call.args[2].desc = m.call.args[0].desc;
        }
        if (k == 1) {
            mb.call.args[1].desc.elem_bytes = 4;
            mb.call.args[1].desc.row_bytes = 16384;
        }
        cut_buf_init(&b);
        cut_wp_run_body_encode(&mb, &b);
        if (k == 2) { /* the third argument's flag: the last u32 before the energy flag */
            const uint32_t two = 2;
            memcpy(b.data + b.len - 8, &two, 4);
        }
        f = frame_of(CUT_WP_RUN, &b);
        assert_int_equal(cut_wp_run_body_decode(&f, &w, &q, &e), -1);
        if (!strstr(e.msg, want[k]))
            fail_msg("case %d: %s", k, e.msg);
        cut_buf_free(&b);
    }
    cut_work_free(&w);
}

/* VENDOR's options in RUN and VENDOR_RESULT round-trip; out-of-range options, counts and top lists are refused. */
static void test_vendor_codecs(void **state)
{
    (void)state;
    cut_err e = {{0}};
    const cut_gemm g = {8, 8, 8, CUT_GEMM_NN, CUT_DT_FP32};
    cut_work gw;
    assert_int_equal(cut_gemm_work(&g, 1, 0, &gw, &e), 0);
    cut_wp_run o = {.what = CUT_WP_RUN_VENDOR, .vendor = {.heuristic_n = 32, .enumerate = 1, .max_configs = 300,
                                                           .budget_s = 60}}, q;
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_run_body_encode(&o, &b);
    cut_wp_frame f = frame_of(CUT_WP_RUN, &b);
    assert_int_equal(cut_wp_run_body_decode(&f, &gw, &q, &e), 0);
    /* field by field: the padding between them is not part of the message */
    assert_true(q.vendor.heuristic_n == 32 && q.vendor.enumerate == 1 && q.vendor.max_configs == 300 &&
                q.vendor.budget_s == 60);
    f.len--;
    assert_int_equal(cut_wp_run_body_decode(&f, &gw, &q, &e), -1);
    /* on a conv work it is refused */
    const cut_work kw = kwork_of(1);
    f.len++;
    assert_int_equal(cut_wp_run_body_decode(&f, &kw, &q, &e), -1);
    assert_non_null(strstr(e.msg, "VENDOR runs on a GEMM work only"));
    cut_buf_free(&b);
    const cut_vendor_opts bad[] = {{-1, 1, 3, 1}, {257, 1, 3, 1}, {1, 2, 3, 1}, {1, 1, -1, 1}, {1, 1, 4097, 1},
                                   {1, 1, 3, 0}, {1, 1, 3, NAN}, {1, 1, 3, 2e6}};
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad); i++) {
        o.vendor = bad[i];
        cut_buf_init(&b);
        cut_wp_run_body_encode(&o, &b);
        f = frame_of(CUT_WP_RUN, &b);
        assert_int_equal(cut_wp_run_body_decode(&f, &gw, &q, &e), -1);
        assert_non_null(strstr(e.msg, "malformed RUN message"));
        assert_non_null(strstr(e.msg, "vendor options"));
        assert_int_equal(cut_wp_vendor_check(&bad[i], &e), -1);
        cut_buf_free(&b);
    }
    cut_work_free(&gw);

    cut_vendor_result v, w;
    memset(&v, 0, sizeof v);
    v.tried = 40;
    v.valid = 3;
    v.heuristic = 20;
    v.enumerated = 18;
    v.budget_hit = 1;
    v.ntop = 3;
    for (int i = 0; i < 3; i++) {
        v.top[i].res.status = CUT_ST_OK;
        v.top[i].res.median_ms = 0.5 + i;
        v.top[i].res.repeats = 10 + i;
        snprintf(v.top[i].config, sizeof v.top[i].config, "cublasLt algo=%d tile=128x256 stages=64x4", 20 + i);
    }
    v.best = v.top[0];
    snprintf(v.note, sizeof v.note, "cuBLASLt unavailable: test");
    cut_buf_init(&b);
    cut_wp_vendor_result_encode(&v, &b);
    f = frame_of(CUT_WP_VENDOR_RESULT, &b);
    assert_int_equal(cut_wp_vendor_result_decode(&f, &w, &e), 0);
    assert_int_equal(w.tried, 40);
    assert_int_equal(w.valid, 3);
    assert_int_equal(w.heuristic, 20);
    assert_int_equal(w.enumerated, 18);
    assert_int_equal(w.budget_hit, 1);
    assert_int_equal(w.ntop, 3);
    assert_string_equal(w.top[2].config, v.top[2].config);
    assert_true(w.top[2].res.median_ms == 2.5 && w.top[2].res.repeats == 12);
    assert_string_equal(w.best.config, v.top[0].config);
    assert_string_equal(w.note, v.note);
    for (size_t cut = 0; cut < b.len; cut += 5) {
        cut_wp_frame t = {.type = CUT_WP_VENDOR_RESULT, .data = (uint8_t *)b.data, .len = cut};
        assert_int_equal(cut_wp_vendor_result_decode(&t, &w, &e), -1);
    }
    cut_buf_free(&b);
    v.valid = 41; /* more valid than tried */
    cut_buf_init(&b);
    cut_wp_vendor_result_encode(&v, &b);
    f = frame_of(CUT_WP_VENDOR_RESULT, &b);
    assert_int_equal(cut_wp_vendor_result_decode(&f, &w, &e), -1);
    assert_non_null(strstr(e.msg, "counts"));
    cut_buf_free(&b);
    v.valid = 3;
    v.top[1].res.status = CUT_ST_COUNT; /* an unknown status in the top list */
    cut_buf_init(&b);
    cut_wp_vendor_result_encode(&v, &b);
    f = frame_of(CUT_WP_VENDOR_RESULT, &b);
    assert_int_equal(cut_wp_vendor_result_decode(&f, &w, &e), -1);
    assert_non_null(strstr(e.msg, "unknown status"));
    f.type = CUT_WP_RUN_RESULT;
    assert_int_equal(cut_wp_vendor_result_decode(&f, &w, &e), -1);
    cut_buf_free(&b);
    assert_string_equal(cut_wp_type_name(CUT_WP_VENDOR_RESULT), "VENDOR_RESULT");
}

/* The worker's vendor tally: counts, the first failure while nothing is valid, the top list sorted and capped, the
 * budget flag, notes; and the cuBLASLt id names. */
static void test_vendor_tally(void **state)
{
    (void)state;
    cut_vendor_result v;
    memset(&v, 0, sizeof v);
    cut_vendor_acc a = {.out = &v, .deadline = cut_now_s() + 1000};
    cut_result r;
    cut_result_reset(&r);
    r.status = CUT_ST_WRONG_RESULT;
    cut_vendor_add(&a, &r, "first failure");
    r.status = CUT_ST_LAUNCH_ERROR;
    cut_vendor_add(&a, &r, "second failure");
    assert_int_equal(v.tried, 2);
    assert_int_equal(v.valid, 0);
    assert_string_equal(v.best.config, "first failure");
    const double ms[] = {5, 3, 9, 1, 7, 2, 8, 6, 4, 10, 0.5};
    for (size_t i = 0; i < CUT_ARRAY_LEN(ms); i++) {
        r.status = CUT_ST_OK;
        r.median_ms = ms[i];
        char c[32];
        snprintf(c, sizeof c, "c%g", ms[i]);
        cut_vendor_add(&a, &r, c);
    }
    assert_int_equal(v.tried, 13);
    assert_int_equal(v.valid, 11);
    assert_int_equal(v.ntop, CUT_VENDOR_TOP);
    assert_string_equal(v.best.config, "c0.5");
    for (int i = 1; i < v.ntop; i++)
        assert_true(v.top[i].res.median_ms >= v.top[i - 1].res.median_ms);
    assert_true(v.top[CUT_VENDOR_TOP - 1].res.median_ms == 7.0);
    assert_int_equal(cut_vendor_over_budget(&a), 0);
    a.deadline = cut_now_s() - 1;
    assert_int_equal(cut_vendor_over_budget(&a), 1);
    assert_int_equal(v.budget_hit, 1);
    cut_vendor_note(&a, "one %d", 1);
    cut_vendor_note(&a, "two");
    assert_string_equal(v.note, "one 1; two");
    for (int i = 0; i < 100; i++) /* never overflows */
        cut_vendor_note(&a, "a long note that fills the buffer");
    assert_true(strlen(v.note) < sizeof v.note);
    char buf[16];
    assert_string_equal(cut_lt_tile_name(0, buf, sizeof buf), "auto");
    assert_string_equal(cut_lt_tile_name(23, buf, sizeof buf), "128x256"); /* CUBLASLT_MATMUL_TILE_128x256 */
    assert_string_equal(cut_lt_stages_name(16, buf, sizeof buf), "64x4");    /* CUBLASLT_MATMUL_STAGES_64x4 */
    assert_string_equal(cut_lt_stages_name(0, buf, sizeof buf), "auto");
    assert_string_equal(cut_lt_tile_name(100000, buf, sizeof buf), "#100000");
}

static void test_cursor_sticky_failure(void **state)
{
    (void)state;
    uint8_t data[6] = {1, 0, 0, 0, 9, 9};
    cut_wp_rd r;
    cut_wp_rd_init(&r, data, sizeof data);
    uint32_t v;
    uint64_t w;
    assert_int_equal(cut_wp_get_u32(&r, &v), 0);
    assert_int_equal(v, 1);
    assert_int_equal(cut_wp_get_u64(&r, &w), -1); /* only 2 bytes left */
    assert_int_equal(r.bad, 1);
    assert_int_equal(cut_wp_get_u32(&r, &v), -1); /* and everything after fails too */
    /* A byte string whose length prefix points past the end. */
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_put_u64(&b, 1000);
    cut_buf_append(&b, "abc", 3);
    cut_wp_rd_init(&r, b.data, b.len);
    const uint8_t *p;
    size_t n;
    assert_int_equal(cut_wp_get_bytes(&r, &p, &n), -1);
    /* A string with an embedded NUL. */
    b.len = 0;
    cut_wp_put_bytes(&b, "a\0b", 3);
    cut_wp_rd_init(&r, b.data, b.len);
    char s[8];
    assert_int_equal(cut_wp_get_str(&r, s, sizeof s), -1);
    cut_buf_free(&b);
    assert_string_equal(cut_wp_type_name(CUT_WP_RUN_RESULT), "RUN_RESULT");
    assert_string_equal(cut_wp_type_name(999), "UNKNOWN");
}

/* =============================================================================================================
 * The runner against the fake worker
 * ============================================================================================================= */

static cut_compiled fake_bin(const char *entry, int ok, char *storage)
{
    cut_compiled b;
    memset(&b, 0, sizeof b);
    b.ok = ok;
    sprintf(storage, "CUBIN:%s", entry);
    b.cubin = storage;
    b.cubin_size = strlen(storage);
    b.log = "line 1: error: expected a ';'\nline 2";
    return b;
}

static int proc_gone(int pid)
{
    /* Reaped children no longer exist: kill(pid, 0) fails with ESRCH. */
    return kill(pid, 0) != 0 && errno == ESRCH;
}

static void test_runner_fake_worker(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_timing t;
    cut_timing_default(&t);
    t.timeout_s = 0.5;
    unsetenv("FAKE_WORKER_START");
    cut_runner *r = cut_runner_gpu_new_with(3, NULL, &t, NULL, &e);
    if (!r)
        fail_msg("cut_runner_gpu_new_with: %s", e.msg);
    assert_int_equal(cut_runner_gpu_worker_starts(r), 1);
    const cut_measure_env *env = r->env(r);
    assert_string_equal(env->backend, "cuda");
    assert_string_equal(env->gpu_name, "Fake GPU 3");
    assert_string_equal(env->gpu_uuid, "GPU-00000000-0000-0000-0000-000000000003");
    assert_int_equal(env->driver_version, 13000);

    /* measure before prepare is a setup error */
    cut_result res[16];
    cut_candidate none = {0};
    assert_int_equal(cut_runner_measure(r, &none, 1, res, &e), -1);

    cut_conv c = {1, 6, 7, 4, 3, 3, 3, 1, 1};
    assert_int_equal(cut_runner_prepare_conv(r, &c, 11, &e), 0);
    const int pid0 = cut_runner_gpu_worker_pid(r);
    assert_true(pid0 > 0);

    const char *entries[] = {"ok", "hang", "ok", "abort", "ok", "fault", "ok", "exit", "ok", "garbage", "ok",
                             "broken", "ok"};
    enum { N = CUT_ARRAY_LEN(entries) };
    char storage[N][64];
    cut_compiled bins[N];
    cut_kernel_src ks[N];
    cut_candidate cands[N + 1];
    for (int i = 0; i < N; i++) {
        bins[i] = fake_bin(entries[i], strcmp(entries[i], "broken") != 0, storage[i]);
        memset(&ks[i], 0, sizeof ks[i]);
        snprintf(ks[i].entry, sizeof ks[i].entry, "%s", entries[i]);
        ks[i].grid[0] = ks[i].grid[1] = ks[i].grid[2] = 1;
        ks[i].block[0] = ks[i].block[1] = ks[i].block[2] = 1;
        ks[i].grid[0] = 40 + i;
        ks[i].block[0] = 64;
        ks[i].smem_dynamic = 1000u * i;
        cands[i].ks = &ks[i];
        cands[i].bin = &bins[i];
    }
    cands[N].ks = &ks[0];
    cands[N].bin = NULL; /* no binary at all: a compile error too */

    double t0 = cut_now_s();
    assert_int_equal(cut_runner_measure(r, cands, N + 1, res, &e), 0);
    double wall = cut_now_s() - t0;
    assert_true(wall < 20.0);

    for (int i = 0; i < N; i++) {
        const char *en = entries[i];
        if (strcmp(en, "ok") == 0) {
            if (res[i].status != CUT_ST_OK)
                fail_msg("candidate %d: %s %s", i, cut_status_name(res[i].status), res[i].error);
            /* grid, block and smem reached the worker; the worker got exactly one PREPARE. */
            assert_true(fabs(res[i].median_ms - (40 + i + 0.064)) < 1e-9);
            assert_true(res[i].min_ms == 1000.0 * i);
            assert_int_equal(res[i].repeats, 1);
            assert_true(res[i].max_ms == 5.0); /* the timing policy reached it */
        }
    }
    assert_int_equal(res[1].status, CUT_ST_TIMEOUT);
    assert_string_equal(res[1].error, "timeout after 0.5 s");
    assert_int_equal(res[3].status, CUT_ST_FAULT);
    assert_non_null(strstr(res[3].error, "worker died (signal 6"));
    assert_int_equal(res[5].status, CUT_ST_FAULT);
    assert_non_null(strstr(res[5].error, "CUDA_ERROR_ILLEGAL_ADDRESS"));
    assert_int_equal(res[7].status, CUT_ST_FAULT);
    assert_string_equal(res[7].error, "worker died (exit status 4)");
    assert_int_equal(res[9].status, CUT_ST_FAULT);
    assert_non_null(strstr(res[9].error, "bad frame magic"));
    assert_int_equal(res[11].status, CUT_ST_COMPILE_ERROR);
    assert_string_equal(res[11].error, "compile error: line 1: error: expected a ';'");
    assert_int_equal(res[N].status, CUT_ST_COMPILE_ERROR);
    for (int i = 1; i < N; i += 2)
        if (i != 11)
            assert_true(res[i].median_ms == -1.0);

    /* Each OK after a failure ran on a new worker: 1 + hang, abort, fault, exit, garbage. */
    assert_int_equal(cut_runner_gpu_worker_starts(r), 6);
    assert_true(proc_gone(pid0));
    int pids[5] = {0};
    for (int i = 2, k = 0; i < N; i += 2)
        if (strcmp(entries[i], "ok") == 0 && k < 5)
            sscanf(res[i].error, "pid=%d", &pids[k++]);
    for (int i = 0; i < 4; i++)
        assert_true(pids[i] != pids[i + 1]);

    /* A changed timing policy reaches the worker with the next candidate, without the tensors being sent again. */
    r->timing.min_repeats = 9;
    assert_int_equal(cut_runner_measure(r, &cands[0], 1, res, &e), 0);
    assert_int_equal(res[0].status, CUT_ST_OK);
    assert_true(res[0].max_ms == 9.0);
    assert_int_equal(res[0].repeats, 1);

    /* The cuDNN request goes through the same worker. */
    char algo[32];
    cut_result cr;
    assert_int_equal(cut_runner_gpu_cudnn(r, &cr, algo, sizeof algo, &e), 0);
    assert_int_equal(cr.status, CUT_ST_OK);
    assert_string_equal(algo, "FAKE_ALGO");
    assert_true(cr.median_ms == 2.5);

    /* cuBLAS needs a GEMM workload; a GEMM work is sent as PREPARE_WORK, checked by the fake worker against its
     * own cut_gemm_reference, measured as before, and refused for cuDNN; fp16 is refused. */
    assert_int_equal(cut_runner_gpu_cublas(r, &cr, algo, sizeof algo, &e), -1);
    assert_non_null(strstr(e.msg, "prepared GEMM"));
    cut_gemm gm = {9, 11, 5, CUT_GEMM_NT, CUT_DT_FP16};
    cut_vendor_result vr;
    assert_int_equal(cut_runner_gpu_vendor(r, NULL, &vr, &e), -1);
    assert_non_null(strstr(e.msg, "prepared GEMM"));
    for (int d = CUT_DT_COUNT - 1; d >= 0; d--) { /* inputs rounded to each dtype (the fake worker checks) */
        gm.dtype = (cut_dtype)d;
        assert_int_equal(cut_runner_prepare_gemm(r, &gm, 5, &e), 0);
        assert_int_equal(cut_runner_gpu_cublas(r, &cr, algo, sizeof algo, &e), 0);
        assert_int_equal(cr.status, CUT_ST_OK);
    }
    /* The vendor request: options out, the tally back; the worker is restarted afterwards. */
    cut_vendor_opts vo;
    cut_vendor_opts_default(&vo);
    assert_true(vo.heuristic_n == 32 && vo.enumerate == 1 && vo.max_configs == 300 && vo.budget_s == 120.0);
    vo.max_configs = 12;
    vo.budget_s = 2.5;
    const int starts = cut_runner_gpu_worker_starts(r);
    assert_int_equal(cut_runner_gpu_vendor(r, &vo, &vr, &e), 0);
    assert_int_equal(vr.tried, 32);
    assert_int_equal(vr.valid, 5);
    assert_int_equal(vr.ntop, 5);
    assert_int_equal(vr.best.res.status, CUT_ST_OK);
    assert_string_equal(vr.best.config, "fake config 0");
    assert_string_equal(vr.top[4].config, "fake config 4");
    assert_true(vr.top[4].res.median_ms == 5.0);
    assert_string_equal(vr.note, "budget 2.5");
    vo.budget_s = 0; /* refused before anything is sent */
    assert_int_equal(cut_runner_gpu_vendor(r, &vo, &vr, &e), -1);
    assert_non_null(strstr(e.msg, "out of range"));
    assert_int_equal(cut_runner_measure(r, &cands[0], 1, res, &e), 0);
    assert_int_equal(res[0].status, CUT_ST_OK);
    assert_int_equal(cut_runner_gpu_worker_starts(r), starts + 1);
    /* A kernel with TMA maps: the descriptors reach the worker; a bad one is the candidate's LAUNCH_ERROR. */
    cut_kernel_src tks = ks[0];
    tks.ntma = 2;
    for (int i = 0; i < 2; i++)
        tks.tma[i] = (cut_tma_desc){.operand = i, .elem_bytes = 4, .dims = {5, 9}, .row_bytes = 32,
                                    .box = {8, 4 + (unsigned)i}, .swizzle = 0};
    cut_candidate tc = {.ks = &tks, .bin = cands[0].bin};
    assert_int_equal(cut_runner_measure(r, &tc, 1, res, &e), 0);
    assert_int_equal(res[0].status, CUT_ST_OK);
    assert_true(res[0].max_abs_err == 5.0);
    tks.tma[1].elem_bytes = 2; /* maps 16-bit elements of the fp32 GEMM's B: the parent refuses it */
    assert_int_equal(cut_runner_measure(r, &tc, 1, res, &e), 0);
    assert_int_equal(res[0].status, CUT_ST_LAUNCH_ERROR);
    assert_non_null(strstr(res[0].error, "2-byte elements"));
    tks.tma[1].elem_bytes = 4;
    tks.tma[1].swizzle = 48;
    assert_int_equal(cut_runner_measure(r, &tc, 1, res, &e), 0);
    assert_int_equal(res[0].status, CUT_ST_LAUNCH_ERROR);
    assert_non_null(strstr(res[0].error, "swizzle 48"));
    tks.tma[1].swizzle = 0;
    tks.ntma = 3; /* more maps than a call has places for (buffers 0 and 1) */
    assert_int_equal(cut_runner_measure(r, &tc, 1, res, &e), 0);
    assert_int_equal(res[0].status, CUT_ST_LAUNCH_ERROR);
    assert_non_null(strstr(res[0].error, "3 TMA maps"));
    tks.ntma = 2;
    tks.tma[1].operand = 0; /* two maps in one place */
    assert_int_equal(cut_runner_measure(r, &tc, 1, res, &e), 0);
    assert_int_equal(res[0].status, CUT_ST_LAUNCH_ERROR);
    assert_non_null(strstr(res[0].error, "distinct operands"));
    gm.dtype = CUT_DT_FP32;
    assert_int_equal(cut_runner_prepare_gemm(r, &gm, 5, &e), 0);
    assert_int_equal(cut_runner_measure(r, &cands[0], 1, res, &e), 0);
    assert_int_equal(res[0].status, CUT_ST_OK);
    assert_int_equal(cut_runner_gpu_cublas(r, &cr, algo, sizeof algo, &e), 0);
    assert_int_equal(cr.status, CUT_ST_OK);
    assert_string_equal(algo, "FAKE_SGEMM");
    assert_true(cr.median_ms == 1.25);
    assert_int_equal(cut_runner_gpu_cudnn(r, &cr, algo, sizeof algo, &e), -1);
    assert_non_null(strstr(e.msg, "conv workload"));
    assert_int_equal(cut_runner_prepare_conv(r, &c, 11, &e), 0); /* back to the conv */
    assert_int_equal(cut_runner_measure(r, &cands[0], 1, res, &e), 0);
    assert_int_equal(res[0].status, CUT_ST_OK);

    /* A worker-side setup error (ERROR reply) is a setup error for the caller. */
    char st[64];
    cut_compiled eb = fake_bin("error", 1, st);
    cut_kernel_src eks = ks[0];
    snprintf(eks.entry, sizeof eks.entry, "error");
    cut_candidate ec = {.ks = &eks, .bin = &eb};
    assert_int_equal(cut_runner_measure(r, &ec, 1, res, &e), -1);
    assert_non_null(strstr(e.msg, "fake setup failure"));

    /* Freeing the runner ends and reaps the worker. */
    const int last = cut_runner_gpu_worker_pid(r);
    assert_true(last > 0);
    cut_runner_free(r);
    assert_true(proc_gone(last));
}

/* An energy-observed call through the GPU runner's parent side: setup errors (before a work is prepared, no references, a bad
 * call or plan, the meter failing) are -1; a compile error, a wrong result, a fault and a hang are statuses, with
 * *er zeroed; a fault or hang costs the worker only, and the next call gets a fresh one that has the work again. */
static void test_runner_fake_worker_energy_kernel(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_timing t;
    cut_timing_default(&t);
    t.timeout_s = 0.5;
    unsetenv("FAKE_WORKER_START");
    cut_runner *r = cut_runner_gpu_new_with(2, NULL, &t, NULL, &e);
    if (!r)
        fail_msg("cut_runner_gpu_new_with: %s", e.msg);
    assert_non_null(r->run);
    cut_energy_plan p = plan_of();
    p.lrounds = 2;
    p.min_steps = 3;
    p.warmup_s = 0;
    p.max_wait_s = 0.1; /* a hang is given 0.5 + 7 x 0.1 s */
    char storage[64];
    cut_compiled bin = fake_bin("ok", 1, storage);
    cut_call c = kcall_of();
    snprintf(c.entry, sizeof c.entry, "ok");
    c.bin = &bin;
    cut_result res;
    cut_energy_result er;
    assert_int_equal(cut_runner_energy_call(r, &c, &p, &res, &er, &e), -1);
    assert_non_null(strstr(e.msg, "before its work was prepared"));
    const cut_work w0 = kwork_of(0), w = kwork_of(1);
    assert_int_equal(cut_runner_prepare_work(r, &w0, &e), 0);
    assert_int_equal(cut_runner_energy_call(r, &c, &p, &res, &er, &e), -1);
    assert_non_null(strstr(e.msg, "references"));
    assert_int_equal(cut_runner_prepare_work(r, &w, &e), 0);

    assert_int_equal(cut_runner_energy_call(r, &c, &p, &res, &er, &e), 0);
    assert_int_equal(res.status, CUT_ST_OK);
    assert_true(res.median_ms == 2.0 && res.repeats == 5);
    assert_int_equal(er.lrounds, 2);
    assert_true(er.energy_mj == 3.0 && er.power_w == 200.0);

    /* setup errors: a bad call, a bad plan; the meter failing */
    cut_call bad = c;
    bad.args[0].buf = 7;
    assert_int_equal(cut_runner_energy_call(r, &bad, &p, &res, &er, &e), -1);
    cut_energy_plan bp = p;
    bp.lrounds = 0;
    assert_int_equal(cut_runner_energy_call(r, &c, &bp, &res, &er, &e), -1);
    assert_non_null(strstr(e.msg, "lrounds"));
    const int pid = cut_runner_gpu_worker_pid(r);
    snprintf(c.entry, sizeof c.entry, "meterfail");
    assert_int_equal(cut_runner_energy_call(r, &c, &p, &res, &er, &e), -1);
    assert_non_null(strstr(e.msg, "did not change"));
    assert_int_equal(cut_runner_gpu_worker_pid(r), pid); /* the worker survives */

    /* a compile error never reaches the worker */
    bin.ok = 0;
    assert_int_equal(cut_runner_energy_call(r, &c, &p, &res, &er, &e), 0);
    assert_int_equal(res.status, CUT_ST_COMPILE_ERROR);
    assert_non_null(strstr(res.error, "expected a ';'"));
    bin.ok = 1;

    /* a wrong result: a status, no energy, the worker survives */
    snprintf(c.entry, sizeof c.entry, "wrong");
    assert_int_equal(cut_runner_energy_call(r, &c, &p, &res, &er, &e), 0);
    assert_int_equal(res.status, CUT_ST_WRONG_RESULT);
    assert_non_null(strstr(res.error, "after the energy run"));
    assert_true(er.lrounds == 0 && er.energy_mj == 0);
    assert_int_equal(cut_runner_gpu_worker_pid(r), pid);

    /* a fault and a hang end the worker only */
    const int starts = cut_runner_gpu_worker_starts(r);
    const char *ends[] = {"fault", "hang"};
    const cut_status want[] = {CUT_ST_FAULT, CUT_ST_TIMEOUT};
    for (int i = 0; i < 2; i++) {
        snprintf(c.entry, sizeof c.entry, "%s", ends[i]);
        assert_int_equal(cut_runner_energy_call(r, &c, &p, &res, &er, &e), 0);
        assert_int_equal(res.status, want[i]);
        assert_true(er.lrounds == 0 && er.energy_mj == 0);
        assert_int_equal(cut_runner_gpu_worker_pid(r), 0);
        snprintf(c.entry, sizeof c.entry, "ok"); /* a fresh worker, given the work again */
        assert_int_equal(cut_runner_energy_call(r, &c, &p, &res, &er, &e), 0);
        assert_int_equal(res.status, CUT_ST_OK);
        assert_int_equal(cut_runner_gpu_worker_starts(r), starts + i + 1);
    }
    cut_runner_free(r);
}

static void test_runner_not_gpu(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_runner fake = {0};
    cut_result out;
    char algo[8];
    assert_int_equal(cut_runner_gpu_cudnn(&fake, &out, algo, sizeof algo, &e), -1);
    assert_non_null(strstr(e.msg, "needs the GPU runner"));
    assert_int_equal(cut_runner_gpu_cublas(&fake, &out, algo, sizeof algo, &e), -1);
    assert_non_null(strstr(e.msg, "needs the GPU runner"));
    cut_vendor_result v; /* a GEMM work is any runner's now (cut_runner_prepare_gemm); its vendor baseline is not */
    assert_int_equal(cut_runner_gpu_vendor(&fake, NULL, &v, &e), -1);
    assert_non_null(strstr(e.msg, "needs the GPU runner"));
    assert_int_equal(cut_runner_gpu_worker_pid(&fake), 0);
}

/* One "ok" candidate on the prepared work: its result, and the fake worker's pid, the works it was sent (repeats)
 * and the works it holds by id, from the result. */
static cut_result fake_ok(cut_runner *r, int *pid, int *sent_to_worker, int *held_by_worker)
{
    char storage[64];
    cut_compiled bin = fake_bin("ok", 1, storage);
    cut_kernel_src ks;
    memset(&ks, 0, sizeof ks);
    snprintf(ks.entry, sizeof ks.entry, "ok");
    ks.grid[0] = ks.grid[1] = ks.grid[2] = ks.block[0] = ks.block[1] = ks.block[2] = 1;
    cut_candidate cand = {.ks = &ks, .bin = &bin};
    cut_result res;
    cut_err e = {{0}};
    assert_int_equal(cut_runner_measure(r, &cand, 1, &res, &e), 0);
    if (res.status != CUT_ST_OK)
        fail_msg("ok: %s %s", cut_status_name(res.status), res.error);
    *sent_to_worker = res.repeats;
    assert_int_equal(sscanf(res.error, "pid=%d held=%d", pid, held_by_worker), 2);
    return res;
}

/* Held works against the fake worker (its references checked by the worker for each work, so a run on a work other
 * than the one prepared fails): switching back to a work the worker holds sends nothing (the count of works the
 * worker was sent stays; the runner counts a held prepare), a third work evicts the least recently used one from
 * both sides (the worker frees it: it holds two), a worker restart (a fault) makes the next prepare of each work send
 * it again; with room for one work only (FAKE_WORKER_ROOM=1) the worker drops the other work when it takes a new one,
 * so each switch sends the work again and every result stays right. */
static void test_runner_fake_worker_held(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_timing t;
    cut_timing_default(&t);
    t.timeout_s = 0.5;
    unsetenv("FAKE_WORKER_START");
    const cut_conv a = {1, 6, 7, 4, 3, 3, 3, 1, 1}, b = {1, 5, 5, 2, 3, 3, 3, 1, 1}, c = {1, 4, 4, 2, 2, 3, 3, 1, 1};
    int pid, pid0, sent, held;

    cut_runner *r = cut_runner_gpu_new_with(1, NULL, &t, NULL, &e);
    if (!r)
        fail_msg("cut_runner_gpu_new_with: %s", e.msg);
    assert_int_equal(cut_runner_prepare_conv(r, &a, 11, &e), 0);
    fake_ok(r, &pid0, &sent, &held);
    assert_true(sent == 1 && held == 1);
    assert_int_equal(cut_runner_prepare_conv(r, &b, 11, &e), 0);
    fake_ok(r, &pid, &sent, &held);
    assert_true(sent == 2 && held == 2);
    const cut_prep_stats before = r->prep;
    for (int i = 0; i < 4; i++) { /* A, B, A, B: selects */
        assert_int_equal(cut_runner_prepare_conv(r, i % 2 ? &b : &a, 11, &e), 0);
        fake_ok(r, &pid, &sent, &held);
        assert_true(pid == pid0 && sent == 2 && held == 2);
    }
    assert_int_equal(r->prep.sent, before.sent);
    assert_true(r->prep.bytes == before.bytes);
    assert_int_equal(r->prep.held, before.held + 4);
    /* the same shape from another seed is another work: sent, evicting A (used least recently) from both sides */
    assert_int_equal(cut_runner_prepare_conv(r, &a, 12, &e), 0);
    fake_ok(r, &pid, &sent, &held);
    assert_true(sent == 3 && held == 2 && r->prep.sent == before.sent + 1 && r->prep.bytes > before.bytes);
    assert_int_equal(cut_runner_prepare_conv(r, &b, 11, &e), 0); /* B still held */
    fake_ok(r, &pid, &sent, &held);
    assert_true(sent == 3 && held == 2 && r->prep.held == before.held + 5);
    assert_int_equal(cut_runner_prepare_conv(r, &a, 11, &e), 0); /* A was evicted: sent again */
    fake_ok(r, &pid, &sent, &held);
    assert_true(sent == 4 && held == 2 && r->prep.sent == before.sent + 2);

    /* a fault ends the worker: the fresh one holds nothing, so each work is sent to it once, then selected */
    char storage[64];
    cut_compiled fb = fake_bin("fault", 1, storage);
    cut_kernel_src fks;
    memset(&fks, 0, sizeof fks);
    snprintf(fks.entry, sizeof fks.entry, "fault");
    fks.grid[0] = fks.grid[1] = fks.grid[2] = fks.block[0] = fks.block[1] = fks.block[2] = 1;
    cut_candidate fc = {.ks = &fks, .bin = &fb};
    cut_result res;
    assert_int_equal(cut_runner_measure(r, &fc, 1, &res, &e), 0);
    assert_int_equal(res.status, CUT_ST_FAULT);
    const long sent_before = r->prep.sent;
    assert_int_equal(cut_runner_prepare_conv(r, &b, 11, &e), 0);
    fake_ok(r, &pid, &sent, &held);
    assert_true(pid != pid0 && sent == 1 && held == 1 && r->prep.sent == sent_before + 1);
    assert_int_equal(cut_runner_prepare_conv(r, &a, 11, &e), 0);
    fake_ok(r, &pid, &sent, &held);
    assert_true(sent == 2 && held == 2 && r->prep.sent == sent_before + 2);
    assert_int_equal(cut_runner_prepare_conv(r, &b, 11, &e), 0);
    fake_ok(r, &pid, &sent, &held);
    assert_true(sent == 2 && held == 2 && r->prep.sent == sent_before + 2);
    assert_int_equal(cut_runner_gpu_worker_starts(r), 2);
    /* a cuDNN run makes the worker drop the works it holds beside the selected one without a word: selecting A then
     * finds it gone (HELD selects none) and sends it */
    cut_result cr;
    char algo[32];
    assert_int_equal(cut_runner_gpu_cudnn(r, &cr, algo, sizeof algo, &e), 0);
    assert_int_equal(cr.status, CUT_ST_OK);
    const cut_prep_stats mid = r->prep;
    assert_int_equal(cut_runner_prepare_conv(r, &a, 11, &e), 0);
    fake_ok(r, &pid, &sent, &held);
    assert_true(sent == 3 && held == 2 && r->prep.sent == mid.sent + 1 && r->prep.held == mid.held);
    cut_runner_free(r);

    /* room for one work: the worker drops the other to take a new one; switches are sends, results stay right */
    setenv("FAKE_WORKER_ROOM", "1", 1);
    r = cut_runner_gpu_new_with(1, NULL, &t, NULL, &e);
    if (!r)
        fail_msg("cut_runner_gpu_new_with: %s", e.msg);
    for (int i = 0; i < 5; i++) {
        const cut_conv *w[] = {&a, &b, &c};
        assert_int_equal(cut_runner_prepare_conv(r, w[i % 3], 11, &e), 0);
        fake_ok(r, &pid, &sent, &held);
        assert_true(sent == i + 1 && held == 1);
    }
    assert_int_equal(r->prep.sent, 5);
    assert_int_equal(r->prep.held, 0);
    assert_int_equal(cut_runner_gpu_worker_starts(r), 1);
    cut_runner_free(r);
    unsetenv("FAKE_WORKER_ROOM");
}

static void test_runner_start_failures(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_timing t;
    cut_timing_default(&t);
    t.timeout_s = 0.5;

    assert_null(cut_runner_gpu_new_with(0, "/nonexistent/cutune", &t, NULL, &e));
    assert_non_null(strstr(e.msg, "/nonexistent/cutune cannot be run"));

    setenv("FAKE_WORKER_START", "error", 1);
    assert_null(cut_runner_gpu_new_with(0, NULL, &t, NULL, &e));
    assert_non_null(strstr(e.msg, "fake worker: no GPU in here"));

    setenv("FAKE_WORKER_START", "exit", 1);
    assert_null(cut_runner_gpu_new_with(0, NULL, &t, NULL, &e));
    assert_non_null(strstr(e.msg, "exited before it was ready"));
    assert_non_null(strstr(e.msg, "exit status 5"));

    setenv("FAKE_WORKER_START", "garbage", 1);
    assert_null(cut_runner_gpu_new_with(0, NULL, &t, NULL, &e));
    assert_non_null(strstr(e.msg, "bad frame magic"));
    unsetenv("FAKE_WORKER_START");

    /* The runner's spawn helper on a program that is not a worker at all: it exits, we see end of file. */
    int pid, to, from;
    assert_int_equal(cut_wp_spawn("/bin/true", 0, &pid, &to, &from, &e), 0);
    cut_wp_frame f;
    assert_int_equal(cut_wp_recv(from, 10.0, 100, &f, &e), 0);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(to);
    close(from);
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "__worker") == 0)
        return fake_worker_main(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    /* The runners given no worker start cut_worker_path's: $CUTUNE_WORKER, this binary (the fake worker). */
    char self[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0 || k >= (ssize_t)sizeof self - 1)
        return 1;
    self[k] = '\0';
    setenv(CUT_WORKER_ENV, self, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_small),
        cmocka_unit_test(test_roundtrip_large_threaded),
        cmocka_unit_test(test_bad_frames),
        cmocka_unit_test(test_timeouts),
        cmocka_unit_test(test_send_epipe),
        cmocka_unit_test(test_work_codec_conv),
        cmocka_unit_test(test_run_prefix_codec),
        cmocka_unit_test(test_work_codec_gemm),
        cmocka_unit_test(test_work_codec_kernel),
        cmocka_unit_test(test_run_call_codec),
        cmocka_unit_test(test_run_result_codec),
        cmocka_unit_test(test_run_energy_codec),
        cmocka_unit_test(test_run_result_energy_codec),
        cmocka_unit_test(test_hello_error_codecs),
        cmocka_unit_test(test_run_tma_codec),
        cmocka_unit_test(test_vendor_codecs),
        cmocka_unit_test(test_vendor_tally),
        cmocka_unit_test(test_cursor_sticky_failure),
        cmocka_unit_test(test_runner_fake_worker),
        cmocka_unit_test(test_runner_fake_worker_energy_kernel),
        cmocka_unit_test(test_runner_fake_worker_held),
        cmocka_unit_test(test_runner_not_gpu),
        cmocka_unit_test(test_runner_start_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
