/* cutune — the measurement worker: the wire protocol (framing and message codecs, used by both sides) and the
 * worker process's main loop, which owns the CUDA context and checks and times candidates.
 *
 * Protocol overview in worker_proto.h; the parent side is gpu_runner.c; cuDNN in cudnn_baseline.c, cuBLAS in
 * cublas_baseline.c. A workload is a conv (PREPARE: elementwise check) or a GEMM (PREPARE_GEMM: relative Frobenius
 * check); kernels of both take (two const float* inputs, one float* output). */
#include "measure/worker_proto.h"
#include "measure/worker_kernel.h"

#include "gpu/cuda_drv.h"
#include "measure/cublas_baseline.h"
#include "measure/gemm_ref_gpu.h"
#include "measure/cublaslt_baseline.h"
#include "measure/cudnn_baseline.h"
#include "cutune/half.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* =============================================================================================================
 * Framing
 * ============================================================================================================= */

static const char *const type_names[CUT_WP_TYPE_END] = {
    [CUT_WP_HELLO] = "HELLO",   [CUT_WP_ERROR] = "ERROR",   [CUT_WP_PREPARE] = "PREPARE",
    [CUT_WP_ACK] = "ACK",       [CUT_WP_MEASURE] = "MEASURE", [CUT_WP_RESULT] = "RESULT",
    [CUT_WP_CUDNN] = "CUDNN",   [CUT_WP_CUDNN_RESULT] = "CUDNN_RESULT", [CUT_WP_QUIT] = "QUIT",
    [CUT_WP_ENERGY] = "ENERGY", [CUT_WP_ENERGY_RESULT] = "ENERGY_RESULT", [CUT_WP_PREPARE_GEMM] = "PREPARE_GEMM",
    [CUT_WP_CUBLAS] = "CUBLAS", [CUT_WP_CUBLAS_RESULT] = "CUBLAS_RESULT", [CUT_WP_VENDOR] = "VENDOR",
    [CUT_WP_VENDOR_RESULT] = "VENDOR_RESULT", [CUT_WP_PREPARE_KERNEL] = "PREPARE_KERNEL",
    [CUT_WP_RUN_KERNEL] = "RUN_KERNEL", [CUT_WP_KERNEL_RESULT] = "KERNEL_RESULT",
};

const char *cut_wp_type_name(uint32_t type)
{
    return (type > 0 && type < CUT_WP_TYPE_END) ? type_names[type] : "UNKNOWN";
}

void cut_wp_frame_free(cut_wp_frame *f)
{
    if (!f)
        return;
    free(f->data);
    f->data = NULL;
    f->len = 0;
}

/* Writes all n bytes; 0, or -1 with errno set. */
static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, CUT_MIN(n, (size_t)1 << 30));
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

void cut_wp_header(uint8_t hdr[CUT_WP_HEADER_SIZE], uint32_t type, uint64_t len)
{
    const uint32_t magic = CUT_WP_MAGIC;
    memcpy(hdr, &magic, 4);
    memcpy(hdr + 4, &type, 4);
    memcpy(hdr + 8, &len, 8);
}

int cut_wp_send(int fd, uint32_t type, const void *payload, size_t len, cut_err *e)
{
    uint8_t hdr[CUT_WP_HEADER_SIZE];
    cut_wp_header(hdr, type, len);

    /* A write to a pipe whose reader is gone raises SIGPIPE, which would kill the parent. Block it in this thread
     * for the duration of the write and swallow the one this write raised (the usual library technique), so the
     * caller sees EPIPE instead; the process-wide disposition is left alone. */
    sigset_t pipe_set, old_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
    sigemptyset(&pending);
    sigpending(&pending);
    const int was_pending = sigismember(&pending, SIGPIPE);

    int rc = write_all(fd, hdr, sizeof hdr);
    if (rc == 0 && len > 0)
        rc = write_all(fd, payload, len);
    const int err = errno;

    if (rc != 0 && err == EPIPE && !was_pending) {
        const struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old_set, NULL);
    if (rc != 0) {
        if (err == EPIPE)
            return cut_err_set(e, "sending %s: the other side closed the pipe", cut_wp_type_name(type));
        return cut_err_set(e, "sending %s: write failed: %s", cut_wp_type_name(type), strerror(err));
    }
    return 0;
}

/* Reads exactly n bytes before the deadline (< 0: none). 0: done; 1: end of file after *got bytes; -1: error
 * (e set); -2: deadline passed. */
static int read_full(int fd, uint8_t *buf, size_t n, double deadline, size_t *got, cut_err *e)
{
    size_t off = 0;
    int rc = 0;
    while (off < n) {
        if (deadline >= 0) {
            double left = deadline - cut_now_s();
            if (left <= 0) {
                rc = -2;
                break;
            }
            struct pollfd p = {.fd = fd, .events = POLLIN};
            double ms = ceil(left * 1000.0);
            int pr = poll(&p, 1, ms > INT_MAX ? INT_MAX : (int)ms);
            if (pr < 0) {
                if (errno == EINTR)
                    continue;
                rc = cut_err_set(e, "poll failed: %s", strerror(errno));
                break;
            }
            if (pr == 0)
                continue; /* the deadline check above ends the loop */
            /* POLLIN, POLLHUP or POLLERR: read() says which (data, 0 for end of file, or an error). */
        }
        ssize_t k = read(fd, buf + off, CUT_MIN(n - off, (size_t)1 << 30));
        if (k < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            rc = cut_err_set(e, "read failed: %s", strerror(errno));
            break;
        }
        if (k == 0) {
            rc = 1;
            break;
        }
        off += (size_t)k;
    }
    *got = off;
    return rc;
}

int cut_wp_recv(int fd, double timeout_s, size_t max_len, cut_wp_frame *f, cut_err *e)
{
    f->type = 0;
    f->data = NULL;
    f->len = 0;
    const double deadline = timeout_s < 0 ? -1.0 : cut_now_s() + timeout_s;
    uint8_t hdr[CUT_WP_HEADER_SIZE];
    size_t got = 0;
    int rc = read_full(fd, hdr, sizeof hdr, deadline, &got, e);
    if (rc == -2)
        return cut_err_set(e, "no message within %g s", timeout_s), -2;
    if (rc == -1)
        return -1;
    if (rc == 1) {
        if (got == 0)
            return 0;
        return cut_err_set(e, "truncated frame: end of file after %zu of %d header bytes", got, CUT_WP_HEADER_SIZE);
    }
    uint32_t magic, type;
    uint64_t len;
    memcpy(&magic, hdr, 4);
    memcpy(&type, hdr + 4, 4);
    memcpy(&len, hdr + 8, 8);
    if (magic != CUT_WP_MAGIC)
        return cut_err_set(e, "bad frame magic 0x%08x (expected 0x%08x): garbage on the pipe", magic, CUT_WP_MAGIC);
    if (type == 0 || type >= CUT_WP_TYPE_END)
        return cut_err_set(e, "unknown frame type %u", type);
    if (len > max_len)
        return cut_err_set(e, "%s frame of %llu bytes exceeds the limit of %zu bytes", cut_wp_type_name(type),
                           (unsigned long long)len, max_len);
    uint8_t *data = NULL;
    if (len > 0) {
        data = malloc((size_t)len);
        if (!data)
            return cut_err_set(e, "out of memory for a %llu-byte %s frame", (unsigned long long)len,
                               cut_wp_type_name(type));
        rc = read_full(fd, data, (size_t)len, deadline, &got, e);
        if (rc != 0) {
            free(data);
            if (rc == -2)
                return cut_err_set(e, "no complete %s message within %g s (%zu of %llu payload bytes)",
                                   cut_wp_type_name(type), timeout_s, got, (unsigned long long)len),
                       -2;
            if (rc == 1)
                return cut_err_set(e, "truncated frame: %s payload ended after %zu of %llu bytes",
                                   cut_wp_type_name(type), got, (unsigned long long)len);
            return -1;
        }
    }
    f->type = type;
    f->data = data;
    f->len = (size_t)len;
    return 1;
}

/* =============================================================================================================
 * Payload cursor and writers
 * ============================================================================================================= */

void cut_wp_rd_init(cut_wp_rd *r, const void *data, size_t len)
{
    r->p = data;
    r->len = data ? len : 0;
    r->off = 0;
    r->bad = 0;
}

static int rd_take(cut_wp_rd *r, void *dst, size_t n)
{
    if (r->bad || r->len - r->off < n) {
        r->bad = 1;
        return -1;
    }
    if (n)
        memcpy(dst, r->p + r->off, n);
    r->off += n;
    return 0;
}

int cut_wp_get_u32(cut_wp_rd *r, uint32_t *v) { return rd_take(r, v, sizeof *v); }
int cut_wp_get_i32(cut_wp_rd *r, int32_t *v) { return rd_take(r, v, sizeof *v); }
int cut_wp_get_u64(cut_wp_rd *r, uint64_t *v) { return rd_take(r, v, sizeof *v); }
int cut_wp_get_f64(cut_wp_rd *r, double *v) { return rd_take(r, v, sizeof *v); }

int cut_wp_get_bytes(cut_wp_rd *r, const uint8_t **p, size_t *n)
{
    uint64_t len;
    if (cut_wp_get_u64(r, &len) != 0)
        return -1;
    if (len > r->len - r->off) {
        r->bad = 1;
        return -1;
    }
    *p = r->p + r->off;
    *n = (size_t)len;
    r->off += (size_t)len;
    return 0;
}

int cut_wp_get_str(cut_wp_rd *r, char *buf, size_t n)
{
    const uint8_t *p;
    size_t len;
    if (cut_wp_get_bytes(r, &p, &len) != 0)
        return -1;
    if (n == 0 || len >= n || memchr(p, '\0', len)) {
        r->bad = 1;
        return -1;
    }
    memcpy(buf, p, len);
    buf[len] = '\0';
    return 0;
}

void cut_wp_put_u32(cut_buf *b, uint32_t v) { cut_buf_append(b, &v, sizeof v); }
void cut_wp_put_i32(cut_buf *b, int32_t v) { cut_buf_append(b, &v, sizeof v); }
void cut_wp_put_u64(cut_buf *b, uint64_t v) { cut_buf_append(b, &v, sizeof v); }
void cut_wp_put_f64(cut_buf *b, double v) { cut_buf_append(b, &v, sizeof v); }

void cut_wp_put_bytes(cut_buf *b, const void *p, size_t n)
{
    cut_wp_put_u64(b, n);
    if (n)
        cut_buf_append(b, p, n);
}

void cut_wp_put_str(cut_buf *b, const char *s) { cut_wp_put_bytes(b, s, s ? strlen(s) : 0); }

/* =============================================================================================================
 * Messages
 * ============================================================================================================= */

static int expect_type(const cut_wp_frame *f, uint32_t type, cut_err *e)
{
    if (f->type != type)
        return cut_err_set(e, "expected a %s message, got %s", cut_wp_type_name(type), cut_wp_type_name(f->type));
    return 0;
}

static int rd_finish(const cut_wp_rd *r, const cut_wp_frame *f, cut_err *e)
{
    if (r->bad)
        return cut_err_set(e, "malformed %s message (%zu bytes): a field runs past the end",
                           cut_wp_type_name(f->type), f->len);
    if (r->off != r->len)
        return cut_err_set(e, "malformed %s message: %zu trailing bytes", cut_wp_type_name(f->type),
                           r->len - r->off);
    return 0;
}

void cut_wp_hello_encode(const cut_wp_hello *h, cut_buf *b)
{
    cut_wp_put_str(b, h->name);
    cut_wp_put_str(b, h->uuid);
    cut_wp_put_i32(b, h->sm_major);
    cut_wp_put_i32(b, h->sm_minor);
    cut_wp_put_i32(b, h->l2_bytes);
    cut_wp_put_i32(b, h->driver_version);
}

int cut_wp_hello_decode(const cut_wp_frame *f, cut_wp_hello *h, cut_err *e)
{
    if (expect_type(f, CUT_WP_HELLO, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t v[4] = {0};
    cut_wp_get_str(&r, h->name, sizeof h->name);
    cut_wp_get_str(&r, h->uuid, sizeof h->uuid);
    for (int i = 0; i < 4; i++)
        cut_wp_get_i32(&r, &v[i]);
    h->sm_major = v[0];
    h->sm_minor = v[1];
    h->l2_bytes = v[2];
    h->driver_version = v[3];
    return rd_finish(&r, f, e);
}

/* The timing policy as PREPARE and PREPARE_GEMM carry it: i32 warmup, min/max repeats, flush; f64 min total and
 * timeout. */
static void put_timing(cut_buf *b, const cut_timing *t)
{
    cut_wp_put_i32(b, t->warmup);
    cut_wp_put_i32(b, t->min_repeats);
    cut_wp_put_i32(b, t->max_repeats);
    cut_wp_put_i32(b, t->flush_l2);
    cut_wp_put_f64(b, t->min_total_ms);
    cut_wp_put_f64(b, t->timeout_s);
}

static void get_timing(cut_wp_rd *r, cut_timing *tm)
{
    int32_t t[4] = {0};
    for (int i = 0; i < 4; i++)
        cut_wp_get_i32(r, &t[i]);
    cut_wp_get_f64(r, &tm->min_total_ms);
    cut_wp_get_f64(r, &tm->timeout_s);
    tm->warmup = t[0];
    tm->min_repeats = t[1];
    tm->max_repeats = t[2];
    tm->flush_l2 = t[3];
}

static int check_timing(const cut_timing *tm, const char *what, cut_err *e)
{
    if (tm->warmup < 0 || tm->min_repeats < 1 || tm->max_repeats < tm->min_repeats || !isfinite(tm->min_total_ms) ||
        tm->min_total_ms < 0 || !(tm->timeout_s > 0))
        return cut_err_set(e,
                           "%s carries an invalid timing policy (warmup %d, repeats %d..%d, min_total_ms %g, "
                           "timeout_s %g)",
                           what, tm->warmup, tm->min_repeats, tm->max_repeats, tm->min_total_ms, tm->timeout_s);
    return 0;
}

void cut_wp_prepare_encode(const cut_wp_prepare *p, cut_buf *b)
{
    const cut_conv *c = &p->conv;
    const int32_t shape[9] = {c->n, c->h, c->w, c->co, c->ci, c->kh, c->kw, c->stride, c->pad};
    for (int i = 0; i < 9; i++)
        cut_wp_put_i32(b, shape[i]);
    put_timing(b, &p->timing);
    cut_wp_put_bytes(b, p->in, cut_conv_in_elems(c) * sizeof(float));
    cut_wp_put_bytes(b, p->w, cut_conv_w_elems(c) * sizeof(float));
    cut_wp_put_bytes(b, p->ref, cut_conv_out_elems(c) * sizeof(float));
}

void cut_wp_prepare_free(cut_wp_prepare *p)
{
    if (!p)
        return;
    free(p->in);
    free(p->w);
    free(p->ref);
    p->in = p->w = p->ref = NULL;
}

/* Copies a length-prefixed float array of exactly want elements into a new allocation (caller frees). */
static int get_floats(cut_wp_rd *r, size_t want, const char *what, float **out, cut_err *e)
{
    const uint8_t *p;
    size_t n;
    const char *msg = strstr(what, "GEMM") ? "PREPARE_GEMM" : "PREPARE";
    if (cut_wp_get_bytes(r, &p, &n) != 0)
        return cut_err_set(e, "malformed %s message: the %s tensor runs past the end", msg, what);
    if (n != want * sizeof(float))
        return cut_err_set(e, "malformed %s message: the %s tensor has %zu bytes, the shape needs %zu", msg, what, n,
                           want * sizeof(float));
    *out = malloc(n ? n : 1);
    if (!*out)
        return cut_err_set(e, "out of memory for the %s tensor (%zu bytes)", what, n);
    memcpy(*out, p, n);
    return 0;
}

int cut_wp_prepare_decode(const cut_wp_frame *f, cut_wp_prepare *p, cut_err *e)
{
    memset(p, 0, sizeof *p);
    if (expect_type(f, CUT_WP_PREPARE, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t s[9] = {0};
    for (int i = 0; i < 9; i++)
        cut_wp_get_i32(&r, &s[i]);
    get_timing(&r, &p->timing);
    if (r.bad)
        return cut_err_set(e, "malformed PREPARE message (%zu bytes): the header fields run past the end", f->len);
    p->conv = (cut_conv){s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8]};
    if (cut_conv_validate(&p->conv, e) != 0)
        return cut_err_wrap(e, "PREPARE carries an invalid shape");
    if (check_timing(&p->timing, "PREPARE", e) != 0)
        return -1;
    if (get_floats(&r, cut_conv_in_elems(&p->conv), "input", &p->in, e) ||
        get_floats(&r, cut_conv_w_elems(&p->conv), "weight", &p->w, e) ||
        get_floats(&r, cut_conv_out_elems(&p->conv), "reference", &p->ref, e) || rd_finish(&r, f, e)) {
        cut_wp_prepare_free(p);
        return -1;
    }
    return 0;
}

void cut_wp_prepare_gemm_encode(const cut_wp_prepare_gemm *p, cut_buf *b)
{
    const cut_gemm *g = &p->gemm;
    const int32_t shape[5] = {g->m, g->n, g->k, (int32_t)g->layout, (int32_t)g->dtype};
    for (int i = 0; i < 5; i++)
        cut_wp_put_i32(b, shape[i]);
    put_timing(b, &p->timing);
    cut_wp_put_bytes(b, p->a, cut_gemm_a_elems(g) * sizeof(float));
    cut_wp_put_bytes(b, p->b, cut_gemm_b_elems(g) * sizeof(float));
    cut_wp_put_bytes(b, p->ref, p->ref ? cut_gemm_c_elems(g) * sizeof(float) : 0); /* empty: the worker's DGEMM */
}

void cut_wp_prepare_gemm_free(cut_wp_prepare_gemm *p)
{
    if (!p)
        return;
    free(p->a);
    free(p->b);
    free(p->ref);
    p->a = p->b = p->ref = NULL;
}

/* Layout NN/NT, a known dtype (A and B travel as floats already rounded to it), sizes as cut_gemm_validate. */
static int check_gemm_shape(const cut_gemm *g, cut_err *e)
{
    if (g->layout != CUT_GEMM_NN && g->layout != CUT_GEMM_NT)
        return cut_err_set(e, "PREPARE_GEMM carries an unknown layout %d (NN is 0, NT is 1)", (int)g->layout);
    if ((int)g->dtype < 0 || g->dtype >= CUT_DT_COUNT)
        return cut_err_set(e, "PREPARE_GEMM carries an unknown dtype %d", (int)g->dtype);
    if (cut_gemm_validate(g, e) != 0)
        return cut_err_wrap(e, "PREPARE_GEMM carries an invalid shape");
    return 0;
}

int cut_wp_prepare_gemm_decode(const cut_wp_frame *f, cut_wp_prepare_gemm *p, cut_err *e)
{
    memset(p, 0, sizeof *p);
    if (expect_type(f, CUT_WP_PREPARE_GEMM, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t s[5] = {0};
    for (int i = 0; i < 5; i++)
        cut_wp_get_i32(&r, &s[i]);
    get_timing(&r, &p->timing);
    if (r.bad)
        return cut_err_set(e, "malformed PREPARE_GEMM message (%zu bytes): the header fields run past the end",
                           f->len);
    p->gemm = (cut_gemm){s[0], s[1], s[2], (cut_gemm_layout)s[3], (cut_dtype)s[4]};
    if (check_gemm_shape(&p->gemm, e) != 0 || check_timing(&p->timing, "PREPARE_GEMM", e) != 0)
        return -1;
    const uint8_t *rp;
    size_t rn = 0;
    if (get_floats(&r, cut_gemm_a_elems(&p->gemm), "GEMM A", &p->a, e) ||
        get_floats(&r, cut_gemm_b_elems(&p->gemm), "GEMM B", &p->b, e)) {
        cut_wp_prepare_gemm_free(p);
        return -1;
    }
    /* The reference is optional: empty means "compute it on the GPU" (cuBLAS DGEMM in the worker). */
    cut_wp_rd peek = r;
    if (cut_wp_get_bytes(&peek, &rp, &rn) == 0 && rn == 0)
        r = peek;
    else if (get_floats(&r, cut_gemm_c_elems(&p->gemm), "GEMM reference", &p->ref, e)) {
        cut_wp_prepare_gemm_free(p);
        return -1;
    }
    if (rd_finish(&r, f, e)) {
        cut_wp_prepare_gemm_free(p);
        return -1;
    }
    return 0;
}

int cut_wp_tma_check(const cut_tma_desc *t, cut_err *e)
{
    const unsigned long long dim_max = 1ull << 32, stride_max = 1ull << 40;
    char d[160];
    cut_wp_tma_describe(t, d, sizeof d);
    if (t->operand != 0 && t->operand != 1)
        return cut_err_set(e, "TMA descriptor (%s): operand %d (0 is A, 1 is B)", d, t->operand);
    if (t->elem_bytes != 2 && t->elem_bytes != 4)
        return cut_err_set(e, "TMA descriptor (%s): element size %d bytes (2 or 4)", d, t->elem_bytes);
    for (int i = 0; i < 2; i++)
        if (t->dims[i] < 1 || t->dims[i] > dim_max || t->box[i] < 1 || t->box[i] > 256)
            return cut_err_set(e, "TMA descriptor (%s): dimension %d or its box is out of range", d, i);
    if (t->row_bytes % 16 || t->row_bytes >= stride_max || t->row_bytes < t->dims[0] * (unsigned)t->elem_bytes)
        return cut_err_set(e, "TMA descriptor (%s): the row stride must be a multiple of 16 bytes, hold a row and be "
                              "below 2^40",
                           d);
    if (t->swizzle != 0 && t->swizzle != 32 && t->swizzle != 64 && t->swizzle != 128)
        return cut_err_set(e, "TMA descriptor (%s): swizzle %d (0, 32, 64 or 128)", d, t->swizzle);
    return 0;
}

void cut_wp_tma_describe(const cut_tma_desc *t, char *buf, size_t n)
{
    snprintf(buf, n, "%s dims %llux%llu row %llu B box %ux%u elem %d swizzle %d",
             t->operand == 0 ? "A" : t->operand == 1 ? "B" : "?", t->dims[0], t->dims[1], t->row_bytes, t->box[0],
             t->box[1], t->elem_bytes, t->swizzle);
}

static void put_tma(cut_buf *b, const cut_tma_desc *t)
{
    cut_wp_put_i32(b, t->operand);
    cut_wp_put_i32(b, t->elem_bytes);
    cut_wp_put_u64(b, t->dims[0]);
    cut_wp_put_u64(b, t->dims[1]);
    cut_wp_put_u64(b, t->row_bytes);
    cut_wp_put_u32(b, t->box[0]);
    cut_wp_put_u32(b, t->box[1]);
    cut_wp_put_i32(b, t->swizzle);
}

static void get_tma(cut_wp_rd *r, cut_tma_desc *t)
{
    int32_t v[3] = {0};
    uint64_t u[3] = {0};
    cut_wp_get_i32(r, &v[0]);
    cut_wp_get_i32(r, &v[1]);
    for (int i = 0; i < 3; i++)
        cut_wp_get_u64(r, &u[i]);
    cut_wp_get_u32(r, &t->box[0]);
    cut_wp_get_u32(r, &t->box[1]);
    cut_wp_get_i32(r, &v[2]);
    t->operand = v[0];
    t->elem_bytes = v[1];
    t->swizzle = v[2];
    t->dims[0] = u[0];
    t->dims[1] = u[1];
    t->row_bytes = u[2];
}

void cut_wp_measure_encode(const cut_wp_measure *m, cut_buf *b)
{
    for (int i = 0; i < 3; i++)
        cut_wp_put_u32(b, m->grid[i]);
    for (int i = 0; i < 3; i++)
        cut_wp_put_u32(b, m->block[i]);
    cut_wp_put_u32(b, m->smem_dynamic);
    cut_wp_put_str(b, m->entry);
    cut_wp_put_bytes(b, m->cubin, m->cubin_size);
    uint64_t bits;
    memcpy(&bits, &m->tol_scale, sizeof bits);
    cut_wp_put_u64(b, bits);
    const int ntma = m->ntma == 2 ? 2 : 0;
    cut_wp_put_u32(b, (uint32_t)ntma);
    for (int i = 0; i < ntma; i++)
        put_tma(b, &m->tma[i]);
}

static void get_result(cut_wp_rd *r, cut_result *res, int32_t *st, int32_t *reps, char *algo, size_t algo_len);
static int result_status(const cut_wp_frame *f, cut_result *res, int32_t st, int32_t reps, cut_err *e);

static void get_measure(cut_wp_rd *r, cut_wp_measure *m)
{
    for (int i = 0; i < 3; i++)
        cut_wp_get_u32(r, &m->grid[i]);
    for (int i = 0; i < 3; i++)
        cut_wp_get_u32(r, &m->block[i]);
    cut_wp_get_u32(r, &m->smem_dynamic);
    cut_wp_get_str(r, m->entry, sizeof m->entry);
    cut_wp_get_bytes(r, &m->cubin, &m->cubin_size);
    uint64_t bits = 0;
    cut_wp_get_u64(r, &bits);
    memcpy(&m->tol_scale, &bits, sizeof bits);
    uint32_t ntma = 0;
    cut_wp_get_u32(r, &ntma);
    m->ntma = ntma > 2 ? 3 : (int)ntma; /* 1 and 3+ are refused by check_measure */
    for (int i = 0; i < (int)CUT_MIN(ntma, 2u); i++)
        get_tma(r, &m->tma[i]);
}

static int check_measure(const cut_wp_measure *m, const char *what, cut_err *e)
{
    if (!m->entry[0])
        return cut_err_set(e, "malformed %s message: empty entry name", what);
    if (!(m->tol_scale >= 0.0 && m->tol_scale <= 1000.0))
        return cut_err_set(e, "malformed %s message: tolerance factor %g", what, m->tol_scale);
    if (m->cubin_size == 0)
        return cut_err_set(e, "malformed %s message: empty cubin", what);
    if (m->ntma != 0 && m->ntma != 2)
        return cut_err_set(e, "malformed %s message: %s TMA descriptors (0 or 2)", what, m->ntma > 2 ? "3 or more" : "1");
    for (int i = 0; i < m->ntma; i++)
        if (cut_wp_tma_check(&m->tma[i], e) != 0)
            return cut_err_wrap(e, "malformed %s message", what);
    return 0;
}

int cut_wp_measure_decode(const cut_wp_frame *f, cut_wp_measure *m, cut_err *e)
{
    memset(m, 0, sizeof *m);
    if (expect_type(f, CUT_WP_MEASURE, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    get_measure(&r, m);
    if (rd_finish(&r, f, e))
        return -1;
    return check_measure(m, "MEASURE", e);
}

void cut_wp_energy_encode(const cut_wp_measure *m, const cut_energy_plan *p, cut_buf *b)
{
    cut_wp_measure_encode(m, b);
    cut_wp_put_str(b, p->uuid);
    cut_wp_put_i32(b, p->lrounds);
    cut_wp_put_i32(b, p->min_steps);
    cut_wp_put_f64(b, p->warmup_s);
    cut_wp_put_f64(b, p->chunk_ms);
    cut_wp_put_f64(b, p->max_wait_s);
}

int cut_wp_energy_decode(const cut_wp_frame *f, cut_wp_measure *m, cut_energy_plan *p, cut_err *e)
{
    memset(m, 0, sizeof *m);
    memset(p, 0, sizeof *p);
    if (expect_type(f, CUT_WP_ENERGY, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    get_measure(&r, m);
    int32_t lrounds = 0, steps = 0;
    cut_wp_get_str(&r, p->uuid, sizeof p->uuid);
    cut_wp_get_i32(&r, &lrounds);
    cut_wp_get_i32(&r, &steps);
    cut_wp_get_f64(&r, &p->warmup_s);
    cut_wp_get_f64(&r, &p->chunk_ms);
    cut_wp_get_f64(&r, &p->max_wait_s);
    if (rd_finish(&r, f, e) || check_measure(m, "ENERGY", e))
        return -1;
    p->lrounds = lrounds;
    p->min_steps = steps;
    if (cut_energy_plan_check(p, e) != 0)
        return cut_err_set(e, "malformed ENERGY message: %.200s", e->msg);
    return 0;
}

static void put_stats(cut_buf *b, const cut_energy_stats *s)
{
    cut_wp_put_u64(b, (uint64_t)s->iters);
    const double v[] = {s->energy_mj,   s->window_s,    s->energy_per_iter_mj, s->time_per_iter_ms,
                        s->gflops,      s->avg_power_w, s->edp_ms_mj};
    for (size_t i = 0; i < CUT_ARRAY_LEN(v); i++)
        cut_wp_put_f64(b, v[i]);
    cut_wp_put_i32(b, s->counter_steps);
}

static void get_stats(cut_wp_rd *r, cut_energy_stats *s)
{
    uint64_t iters = 0;
    int32_t steps = 0;
    cut_wp_get_u64(r, &iters);
    double *v[] = {&s->energy_mj,   &s->window_s,    &s->energy_per_iter_mj, &s->time_per_iter_ms,
                   &s->gflops,      &s->avg_power_w, &s->edp_ms_mj};
    for (size_t i = 0; i < CUT_ARRAY_LEN(v); i++)
        cut_wp_get_f64(r, v[i]);
    cut_wp_get_i32(r, &steps);
    s->iters = (long long)iters;
    s->counter_steps = steps;
}

void cut_wp_energy_result_encode(const cut_result *res, int ok, const char *why, const cut_energy_result *er,
                                 cut_buf *b)
{
    cut_wp_result_encode(res, "", b);
    cut_wp_put_u32(b, ok ? 1u : 0u);
    cut_wp_put_str(b, why ? why : "");
    cut_wp_put_i32(b, er->lrounds);
    for (int i = 0; i < er->lrounds; i++)
        put_stats(b, &er->round[i]);
    const double v[] = {er->time_ms, er->energy_mj, er->gflops,        er->power_w, er->edp,
                        er->cv_energy, er->cv_time, er->step_period_s, er->seconds};
    for (size_t i = 0; i < CUT_ARRAY_LEN(v); i++)
        cut_wp_put_f64(b, v[i]);
    cut_wp_put_u32(b, er->sm_mhz_min);
    cut_wp_put_u32(b, er->sm_mhz_max);
    cut_wp_put_u32(b, er->mem_mhz);
    cut_wp_put_u32(b, er->temp_c_max);
    cut_wp_put_u64(b, er->throttle);
}

int cut_wp_energy_result_decode(const cut_wp_frame *f, cut_result *res, int *ok, char *why, size_t why_len,
                                cut_energy_result *er, cut_err *e)
{
    memset(res, 0, sizeof *res);
    memset(er, 0, sizeof *er);
    if (expect_type(f, CUT_WP_ENERGY_RESULT, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t st = -1, reps = 0, lrounds = -1;
    char algo[8], w[CUT_ERR_LEN];
    uint32_t okv = 0;
    get_result(&r, res, &st, &reps, algo, sizeof algo);
    cut_wp_get_u32(&r, &okv);
    cut_wp_get_str(&r, w, sizeof w);
    cut_wp_get_i32(&r, &lrounds);
    if (lrounds < 0 || lrounds > CUT_ENERGY_MAX_LROUNDS)
        return cut_err_set(e, "malformed ENERGY_RESULT message: %d lrounds", (int)lrounds);
    er->lrounds = lrounds;
    for (int i = 0; i < lrounds; i++)
        get_stats(&r, &er->round[i]);
    double *v[] = {&er->time_ms, &er->energy_mj, &er->gflops,        &er->power_w, &er->edp,
                   &er->cv_energy, &er->cv_time, &er->step_period_s, &er->seconds};
    for (size_t i = 0; i < CUT_ARRAY_LEN(v); i++)
        cut_wp_get_f64(&r, v[i]);
    cut_wp_get_u32(&r, &er->sm_mhz_min);
    cut_wp_get_u32(&r, &er->sm_mhz_max);
    cut_wp_get_u32(&r, &er->mem_mhz);
    cut_wp_get_u32(&r, &er->temp_c_max);
    uint64_t thr = 0;
    cut_wp_get_u64(&r, &thr);
    er->throttle = thr;
    if (rd_finish(&r, f, e) || result_status(f, res, st, reps, e))
        return -1;
    if (algo[0] || okv > 1)
        return cut_err_set(e, "malformed ENERGY_RESULT message: %s", algo[0] ? "an algorithm name" : "ok flag > 1");
    *ok = okv != 0;
    if (why && why_len)
        snprintf(why, why_len, "%s", w);
    return 0;
}

void cut_wp_result_encode(const cut_result *res, const char *algo, cut_buf *b)
{
    cut_wp_put_i32(b, (int32_t)res->status);
    cut_wp_put_str(b, res->error);
    cut_wp_put_f64(b, res->median_ms);
    cut_wp_put_f64(b, res->min_ms);
    cut_wp_put_f64(b, res->max_ms);
    cut_wp_put_i32(b, res->repeats);
    cut_wp_put_f64(b, res->max_abs_err);
    cut_wp_put_str(b, algo ? algo : "");
}

static void get_result(cut_wp_rd *r, cut_result *res, int32_t *st, int32_t *reps, char *algo, size_t algo_len)
{
    cut_wp_get_i32(r, st);
    cut_wp_get_str(r, res->error, sizeof res->error);
    cut_wp_get_f64(r, &res->median_ms);
    cut_wp_get_f64(r, &res->min_ms);
    cut_wp_get_f64(r, &res->max_ms);
    cut_wp_get_i32(r, reps);
    cut_wp_get_f64(r, &res->max_abs_err);
    cut_wp_get_str(r, algo, algo_len);
}

static int result_status(const cut_wp_frame *f, cut_result *res, int32_t st, int32_t reps, cut_err *e)
{
    if (st < 0 || st >= CUT_ST_COUNT)
        return cut_err_set(e, "malformed %s message: unknown status %d", cut_wp_type_name(f->type), (int)st);
    res->status = (cut_status)st;
    res->repeats = reps;
    return 0;
}

int cut_wp_result_decode(const cut_wp_frame *f, cut_result *res, char *algo, size_t algo_len, cut_err *e)
{
    memset(res, 0, sizeof *res);
    if (f->type != CUT_WP_RESULT && f->type != CUT_WP_CUDNN_RESULT && f->type != CUT_WP_CUBLAS_RESULT)
        return cut_err_set(e, "expected a RESULT message, got %s", cut_wp_type_name(f->type));
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t st = -1, reps = 0;
    char a[128] = "";
    get_result(&r, res, &st, &reps, a, sizeof a);
    if (rd_finish(&r, f, e) || result_status(f, res, st, reps, e))
        return -1;
    if (algo && algo_len)
        snprintf(algo, algo_len, "%s", a);
    return 0;
}

void cut_wp_vendor_encode(const cut_vendor_opts *o, cut_buf *b)
{
    cut_wp_put_i32(b, o->heuristic_n);
    cut_wp_put_i32(b, o->enumerate);
    cut_wp_put_i32(b, o->max_configs);
    cut_wp_put_f64(b, o->budget_s);
}

int cut_wp_vendor_decode(const cut_wp_frame *f, cut_vendor_opts *o, cut_err *e)
{
    memset(o, 0, sizeof *o);
    if (expect_type(f, CUT_WP_VENDOR, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t v[3] = {0};
    for (int i = 0; i < 3; i++)
        cut_wp_get_i32(&r, &v[i]);
    cut_wp_get_f64(&r, &o->budget_s);
    if (rd_finish(&r, f, e))
        return -1;
    o->heuristic_n = v[0];
    o->enumerate = v[1];
    o->max_configs = v[2];
    if (v[0] < 0 || v[0] > 256 || (v[1] != 0 && v[1] != 1) || v[2] < 0 || v[2] > 4096 || !isfinite(o->budget_s) ||
        !(o->budget_s > 0) || o->budget_s > 1e6)
        return cut_err_set(e,
                           "malformed VENDOR message: heuristic %d (0..256), enumerate %d (0 or 1), max configs %d "
                           "(0..4096), budget %g s (0..1e6)",
                           (int)v[0], (int)v[1], (int)v[2], o->budget_s);
    return 0;
}

void cut_wp_vendor_result_encode(const cut_vendor_result *v, cut_buf *b)
{
    cut_wp_result_encode(&v->best.res, v->best.config, b);
    const int32_t c[5] = {v->tried, v->valid, v->heuristic, v->enumerated, v->budget_hit};
    for (int i = 0; i < 5; i++)
        cut_wp_put_i32(b, c[i]);
    cut_wp_put_str(b, v->note);
    const int ntop = CUT_MAX(0, CUT_MIN(v->ntop, CUT_VENDOR_TOP));
    cut_wp_put_i32(b, ntop);
    for (int i = 0; i < ntop; i++)
        cut_wp_result_encode(&v->top[i].res, v->top[i].config, b);
}

int cut_wp_vendor_result_decode(const cut_wp_frame *f, cut_vendor_result *v, cut_err *e)
{
    memset(v, 0, sizeof *v);
    if (expect_type(f, CUT_WP_VENDOR_RESULT, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t st[1 + CUT_VENDOR_TOP] = {0}, reps[1 + CUT_VENDOR_TOP] = {0}, c[5] = {0}, ntop = 0;
    get_result(&r, &v->best.res, &st[0], &reps[0], v->best.config, sizeof v->best.config);
    for (int i = 0; i < 5; i++)
        cut_wp_get_i32(&r, &c[i]);
    cut_wp_get_str(&r, v->note, sizeof v->note);
    cut_wp_get_i32(&r, &ntop);
    if (!r.bad && (ntop < 0 || ntop > CUT_VENDOR_TOP))
        return cut_err_set(e, "malformed VENDOR_RESULT message: %d top entries (at most %d)", (int)ntop,
                           CUT_VENDOR_TOP);
    if (r.bad)
        ntop = 0;
    for (int i = 0; i < ntop; i++)
        get_result(&r, &v->top[i].res, &st[i + 1], &reps[i + 1], v->top[i].config, sizeof v->top[i].config);
    if (rd_finish(&r, f, e) || result_status(f, &v->best.res, st[0], reps[0], e))
        return -1;
    for (int i = 0; i < ntop; i++)
        if (result_status(f, &v->top[i].res, st[i + 1], reps[i + 1], e))
            return -1;
    if (c[0] < 0 || c[1] < 0 || c[1] > c[0] || c[2] < 0 || c[3] < 0 || (c[4] != 0 && c[4] != 1))
        return cut_err_set(e, "malformed VENDOR_RESULT message: counts tried %d valid %d heuristic %d enumerated %d "
                              "budget flag %d",
                           (int)c[0], (int)c[1], (int)c[2], (int)c[3], (int)c[4]);
    v->tried = c[0];
    v->valid = c[1];
    v->heuristic = c[2];
    v->enumerated = c[3];
    v->budget_hit = c[4];
    v->ntop = ntop;
    return 0;
}

void cut_wp_prepare_kernel_encode(const cut_wp_prepare_kernel *p, cut_buf *b)
{
    const cut_kwork *w = &p->work;
    put_timing(b, &p->timing);
    cut_wp_put_f64(b, w->atol);
    cut_wp_put_f64(b, w->rtol);
    cut_wp_put_i32(b, w->nbufs);
    for (int i = 0; i < w->nbufs; i++) {
        const cut_kw_buf *k = &w->bufs[i];
        const size_t bytes = k->elems * cut_ks_dtype_size(k->dtype);
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
    for (int i = 0; i < CUT_KW_MAX_BUFS; i++)
        for (int s = 0; s < 2; s++) {
            free((void *)p->work.bufs[i].data[s]);
            p->work.bufs[i].data[s] = NULL;
        }
}

/* One buffer of PREPARE_KERNEL into k: its header, then its two byte strings, each empty (NULL) or exactly
 * elems * dtype size bytes (copied). */
static int get_kw_buf(cut_wp_rd *r, int i, cut_kw_buf *k, cut_err *e)
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
    if (out > 3 || out == 2 || dt < 0 || dt >= CUT_KS_DTYPE_COUNT || elems < 1 || elems > ((uint64_t)1 << 40))
        return cut_err_set(e, "malformed PREPARE_KERNEL message: buffer %d ('%s') has flags %u (bit 0 output, "
                              "bit 1 zero-initialised output), dtype %d, %llu elements",
                           i, k->name, out, (int)dt, (unsigned long long)elems);
    k->is_output = (int)(out & 1u);
    k->zero_init = (int)(out >> 1);
    k->dtype = (cut_ks_dtype)dt;
    k->elems = (size_t)elems;
    const size_t want = k->elems * cut_ks_dtype_size(k->dtype);
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
                                  "of %s need %zu", k->name, s, n, k->elems, cut_ks_dtype_name(k->dtype), want);
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
    if (expect_type(f, CUT_WP_PREPARE_KERNEL, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t nbufs = 0;
    get_timing(&r, &p->timing);
    cut_wp_get_f64(&r, &p->work.atol);
    cut_wp_get_f64(&r, &p->work.rtol);
    cut_wp_get_i32(&r, &nbufs);
    if (r.bad)
        return cut_err_set(e, "malformed PREPARE_KERNEL message (%zu bytes): the header fields run past the end",
                           f->len);
    if (check_timing(&p->timing, "PREPARE_KERNEL", e) != 0)
        return -1;
    if (nbufs < 1 || nbufs > CUT_KW_MAX_BUFS)
        return cut_err_set(e, "malformed PREPARE_KERNEL message: %d buffers (1 to %d)", (int)nbufs, CUT_KW_MAX_BUFS);
    p->work.nbufs = nbufs;
    for (int i = 0; i < nbufs; i++)
        if (get_kw_buf(&r, i, &p->work.bufs[i], e) != 0)
            goto fail;
    if (rd_finish(&r, f, e) != 0)
        goto fail;
    if (cut_kwork_check(&p->work, e) != 0) {
        cut_err_wrap(e, "PREPARE_KERNEL carries an invalid work");
        goto fail;
    }
    return 0;
fail:
    cut_wp_prepare_kernel_free(p);
    return -1;
}

void cut_wp_run_kernel_encode(const cut_kcall *c, const void *cubin, size_t cubin_size, cut_buf *b)
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

int cut_wp_run_kernel_decode(const cut_wp_frame *f, const cut_kwork *w, cut_kcall *c, const uint8_t **cubin,
                             size_t *cubin_size, cut_err *e)
{
    memset(c, 0, sizeof *c);
    *cubin = NULL;
    *cubin_size = 0;
    if (expect_type(f, CUT_WP_RUN_KERNEL, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    for (int i = 0; i < 3; i++)
        cut_wp_get_u32(&r, &c->grid[i]);
    for (int i = 0; i < 3; i++)
        cut_wp_get_u32(&r, &c->block[i]);
    cut_wp_get_u32(&r, &c->smem);
    cut_wp_get_str(&r, c->entry, sizeof c->entry);
    cut_wp_get_bytes(&r, cubin, cubin_size);
    int32_t nargs = 0;
    cut_wp_get_i32(&r, &nargs);
    if (!r.bad && (nargs < 1 || nargs > CUT_KW_MAX_ARGS))
        return cut_err_set(e, "malformed RUN_KERNEL message: %d arguments (1 to %d)", (int)nargs, CUT_KW_MAX_ARGS);
    c->nargs = r.bad ? 0 : nargs;
    for (int i = 0; i < c->nargs; i++) {
        int32_t buf = 0;
        cut_wp_get_i32(&r, &buf);
        cut_wp_get_u32(&r, &c->args[i].size);
        if (rd_take(&r, c->args[i].bytes, sizeof c->args[i].bytes) != 0)
            break;
        c->args[i].buf = buf;
    }
    if (rd_finish(&r, f, e) != 0)
        return -1;
    if (*cubin_size == 0)
        return cut_err_set(e, "malformed RUN_KERNEL message: empty cubin");
    if (cut_kcall_check(w, c, e) != 0)
        return cut_err_wrap(e, "malformed RUN_KERNEL message");
    return 0;
}

void cut_wp_kernel_result_encode(const cut_result *r, const cut_kwork *w, const cut_kw_outputs *o, cut_buf *b)
{
    cut_wp_result_encode(r, "", b);
    for (int i = 0; i < w->nbufs; i++) {
        const cut_kw_buf *k = &w->bufs[i];
        if (!k->is_output)
            continue;
        for (int s = 0; s < 2; s++) {
            const void *p = o ? o->data[i][s] : NULL;
            cut_wp_put_bytes(b, p, p ? k->elems * cut_ks_dtype_size(k->dtype) : 0);
        }
    }
}

size_t cut_wp_kernel_result_max(const cut_kwork *w)
{
    size_t n = CUT_WP_MAX_REPLY;
    for (int i = 0; i < w->nbufs; i++)
        if (w->bufs[i].is_output)
            n += 2 * (w->bufs[i].elems * cut_ks_dtype_size(w->bufs[i].dtype) + sizeof(uint64_t));
    return n;
}

/* The captured outputs of KERNEL_RESULT into o: present (each exactly its size) iff want. */
static int get_kw_outputs(cut_wp_rd *r, const cut_kwork *w, int want, cut_kw_outputs *o, cut_err *e)
{
    for (int i = 0; i < w->nbufs; i++) {
        const cut_kw_buf *k = &w->bufs[i];
        const size_t size = k->elems * cut_ks_dtype_size(k->dtype);
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

int cut_wp_kernel_result_decode(const cut_wp_frame *f, const cut_kwork *w, cut_result *res, cut_kw_outputs *o,
                                cut_err *e)
{
    memset(res, 0, sizeof *res);
    memset(o, 0, sizeof *o);
    if (expect_type(f, CUT_WP_KERNEL_RESULT, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    int32_t st = -1, reps = 0;
    char algo[8] = "";
    get_result(&r, res, &st, &reps, algo, sizeof algo);
    if (r.bad)
        return cut_err_set(e, "malformed KERNEL_RESULT message (%zu bytes): the result runs past the end", f->len);
    if (result_status(f, res, st, reps, e) != 0)
        return -1;
    if (algo[0])
        return cut_err_set(e, "malformed KERNEL_RESULT message: an algorithm name");
    const int want = res->status == CUT_ST_OK && !cut_kwork_has_refs(w);
    if (get_kw_outputs(&r, w, want, o, e) != 0 || rd_finish(&r, f, e) != 0) {
        cut_kw_outputs_free(o);
        return -1;
    }
    return 0;
}

void cut_wp_error_encode(const char *msg, cut_buf *b) { cut_wp_put_str(b, msg); }

int cut_wp_error_decode(const cut_wp_frame *f, char *msg, size_t n)
{
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    char tmp[CUT_ERR_LEN];
    if (f->type != CUT_WP_ERROR || cut_wp_get_str(&r, tmp, sizeof tmp) != 0) {
        snprintf(msg, n, "malformed ERROR message");
        return -1;
    }
    snprintf(msg, n, "%s", tmp);
    return 0;
}

/* =============================================================================================================
 * The worker process
 * ============================================================================================================= */

#define WK_EVENT_PAIRS 256 /* timed launches per batch (one event pair each) */

struct cut_wk {
    const cut_cu_api *cu;
    CUdevice dev;
    CUcontext ctx; /* the device's primary context, retained */
    int l2_bytes;
    CUevent ev_start[WK_EVENT_PAIRS], ev_stop[WK_EVENT_PAIRS];
    int n_events;

    int prepared;
    int is_gemm;   /* 1: a GEMM workload (PREPARE_GEMM): gemm is set, in/w/out hold A/B/C */
    cut_conv conv; /* the conv workload (PREPARE) */
    cut_gemm gemm;
    cut_timing timing;
    size_t n_in, n_w, n_out;
    size_t in_bytes, w_bytes; /* device sizes of the two inputs (a GEMM's A and B in their storage type) */
    CUdeviceptr d_in, d_w, d_out, d_flush;
    size_t flush_bytes;
    double *ref;     /* reference output, from the parent's floats */
    float *host_out; /* copy of the device output */
    double atol, rtol;
    double gemm_tol; /* GEMM: bound on the relative Frobenius error */
    void *cudnn;     /* cudnn_baseline.c state */
    void *cublas;    /* cublas_baseline.c state */
    void *cublaslt;  /* cublaslt_baseline.c state */
    void *kernel;    /* worker_kernel.c state: a user kernel's work (PREPARE_KERNEL) */
};

void cut_wk_get_tensors(cut_wk *w, cut_wk_tensors *t)
{
    t->conv = (w->prepared && !w->is_gemm) ? &w->conv : NULL;
    t->gemm = (w->prepared && w->is_gemm) ? &w->gemm : NULL;
    t->in = w->d_in;
    t->w = w->d_w;
    t->out = w->d_out;
}

void **cut_wk_cudnn_slot(cut_wk *w) { return &w->cudnn; }
void **cut_wk_cublas_slot(cut_wk *w) { return &w->cublas; }
void **cut_wk_cublaslt_slot(cut_wk *w) { return &w->cublaslt; }
void **cut_wk_kernel_slot(cut_wk *w) { return &w->kernel; }
const cut_cu_api *cut_wk_cu(cut_wk *w) { return w->cu; }

/* Errors after which the context is unusable: the worker must report and exit. */
int cut_wk_launch_status(CUresult rc, char *msg, size_t n, int *sticky)
{
    if (rc == CUDA_SUCCESS)
        return 0;
    char d[160];
    cut_cu_describe(rc, d, sizeof d);
    snprintf(msg, n, "cuLaunchKernel: %s", d);
    *sticky = cut_wk_sticky(rc);
    return -1;
}

int cut_wk_sticky(CUresult rc)
{
    switch (rc) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_UNKNOWN:
        return 1;
    default:
        return 0;
    }
}

static void set_status(cut_result *res, cut_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_status(cut_result *res, cut_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    res->status = st;
    vsnprintf(res->error, sizeof res->error, fmt, ap);
    va_end(ap);
}

/* A CUDA call of the harness itself (memset, event, synchronise, copy) failed: after a kernel ran, that is the
 * kernel's asynchronous fault, and the context is gone. */
void cut_wk_harness_fault(cut_result *res, int *fatal, const char *what, CUresult rc)
{
    char d[160];
    cut_cu_describe(rc, d, sizeof d);
    set_status(res, CUT_ST_FAULT, "%s: %s", what, d);
    *fatal = 1;
}

static int launch(const cut_wk_launcher *l, cut_result *res, int *fatal)
{
    char msg[200] = "";
    int sticky = 0;
    if (l->launch(l->arg, msg, sizeof msg, &sticky) == 0)
        return 0;
    set_status(res, sticky ? CUT_ST_FAULT : CUT_ST_LAUNCH_ERROR, "%s", msg);
    if (sticky)
        *fatal = 1;
    return -1;
}

/* Conv: elementwise, atol + rtol*|ref|. 0 if the output matches. */
static int compare_conv(cut_wk *w, cut_result *res, const char *when)
{
    char msg[200];
    double maxe = 0;
    size_t bad = cut_compare(w->host_out, w->ref, w->n_out, w->atol, w->rtol, &maxe, msg, sizeof msg);
    res->max_abs_err = maxe;
    if (bad) {
        set_status(res, CUT_ST_WRONG_RESULT, "%s%zu of %zu outputs wrong: %s", when, bad, w->n_out, msg);
        return -1;
    }
    return 0;
}

/* GEMM: relative Frobenius error against w->gemm_tol (NaN/Inf, e.g. the poison left unwritten, give +Inf), kept in
 * max_abs_err. On failure the message names the first non-finite or largest-error element. 0 if it passes. */
static int compare_gemm(cut_wk *w, cut_result *res, const char *when)
{
    const double rel = cut_gemm_rel_error(w->host_out, w->ref, w->n_out);
    res->max_abs_err = rel;
    if (rel <= w->gemm_tol)
        return 0;
    size_t worst = 0;
    double worst_d = -1.0;
    for (size_t i = 0; i < w->n_out; i++) {
        const double d = isfinite(w->host_out[i]) ? fabs(w->host_out[i] - w->ref[i]) : INFINITY;
        if (d > worst_d) {
            worst_d = d;
            worst = i;
        }
        if (isinf(d))
            break;
    }
    const int n = w->gemm.n > 0 ? w->gemm.n : 1;
    set_status(res, CUT_ST_WRONG_RESULT,
               "%srelative Frobenius error %.3g > tolerance %.3g (C[%zu][%zu] = %.6g, want %.6g)", when, rel, w->gemm_tol, worst / (size_t)n, worst % (size_t)n, (double)w->host_out[worst], w->ref[worst]);
    return -1;
}

/* The conv/GEMM output's checks: NaN poison before, copy back and compare after (when names the pass). */
static CUresult out_poison(void *arg, cut_wk_pass pass, const char **what)
{
    cut_wk *w = arg;
    (void)pass;
    *what = "cuMemsetD32 (poisoning the output)";
    return w->cu->cuMemsetD32(w->d_out, 0x7FC00000u, w->n_out); /* quiet NaN: unwritten outputs never pass */
}

static int out_compare(void *arg, cut_wk_pass pass, cut_result *res, int *fatal)
{
    cut_wk *w = arg;
    static const char *const when[] = {"", "after timing: ", "after the energy run: "};
    CUresult rc = w->cu->cuMemcpyDtoH(w->host_out, w->d_out, w->n_out * sizeof(float));
    if (rc != CUDA_SUCCESS)
        return cut_wk_harness_fault(res, fatal, "cuMemcpyDtoH", rc), -1;
    return w->is_gemm ? compare_gemm(w, res, when[pass]) : compare_conv(w, res, when[pass]);
}

/* Poison, run once, synchronise, copy back, compare (chk's hooks). 0 if the output matches. */
static int run_checked(cut_wk *w, const cut_wk_launcher *l, const cut_wk_check *chk, cut_wk_pass pass,
                       cut_result *res, int *fatal)
{
    const char *what = "";
    CUresult rc = chk->before(chk->arg, pass, &what);
    if (rc != CUDA_SUCCESS)
        return cut_wk_harness_fault(res, fatal, what, rc), -1;
    if (launch(l, res, fatal) != 0)
        return -1;
    if ((rc = w->cu->cuCtxSynchronize()) != CUDA_SUCCESS)
        return cut_wk_harness_fault(res, fatal, "cuCtxSynchronize", rc), -1;
    return chk->after(chk->arg, pass, res, fatal);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Warm-up, then timed repeats in batches of event pairs until >= min_repeats and >= min_total_ms (or
 * max_repeats). Fills median/min/max/repeats. */
static int time_runs(cut_wk *w, const cut_wk_launcher *l, cut_result *res, int *fatal)
{
    const cut_cu_api *cu = w->cu;
    const cut_timing *t = &w->timing;
    CUresult rc;
    for (int i = 0; i < t->warmup; i++)
        if (launch(l, res, fatal) != 0)
            return -1;
    if ((rc = cu->cuCtxSynchronize()) != CUDA_SUCCESS)
        return cut_wk_harness_fault(res, fatal, "cuCtxSynchronize (warm-up)", rc), -1;

    double *times = cut_xmalloc(sizeof(double) * (size_t)t->max_repeats);
    int n = 0, want = t->min_repeats;
    double total = 0;
    while (n < t->max_repeats) {
        int batch = CUT_MIN(CUT_MIN(want - n, WK_EVENT_PAIRS), t->max_repeats - n);
        if (batch < 1)
            batch = 1;
        for (int i = 0; i < batch; i++) {
            /* The flush runs before the start event, so it is outside the timed region. */
            if (t->flush_l2 && w->d_flush &&
                (rc = cu->cuMemsetD8(w->d_flush, (unsigned char)(n + i), w->flush_bytes)) != CUDA_SUCCESS)
                goto harness;
            if ((rc = cu->cuEventRecord(w->ev_start[i], NULL)) != CUDA_SUCCESS)
                goto harness;
            if (launch(l, res, fatal) != 0)
                goto fail;
            if ((rc = cu->cuEventRecord(w->ev_stop[i], NULL)) != CUDA_SUCCESS)
                goto harness;
        }
        if ((rc = cu->cuEventSynchronize(w->ev_stop[batch - 1])) != CUDA_SUCCESS)
            goto harness;
        for (int i = 0; i < batch; i++) {
            float ms = 0;
            if ((rc = cu->cuEventElapsedTime(&ms, w->ev_start[i], w->ev_stop[i])) != CUDA_SUCCESS)
                goto harness;
            times[n++] = ms;
            total += ms;
        }
        if (n >= t->min_repeats && total >= t->min_total_ms)
            break;
        double mean = total / n;
        double need = mean > 0 ? ceil((t->min_total_ms - total) / mean) : (double)WK_EVENT_PAIRS;
        want = n + (int)CUT_MAX(1.0, CUT_MIN(need, (double)(t->max_repeats - n)));
        want = CUT_MAX(want, t->min_repeats);
    }
    qsort(times, (size_t)n, sizeof *times, cmp_double);
    res->repeats = n;
    res->min_ms = times[0];
    res->max_ms = times[n - 1];
    res->median_ms = (n % 2) ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
    free(times);
    return 0;
harness:
    cut_wk_harness_fault(res, fatal, "timing (event record/synchronise or L2 flush)", rc);
fail:
    free(times);
    return -1;
}

void cut_wk_check_and_time_with(cut_wk *w, const cut_wk_launcher *l, const cut_wk_check *chk, cut_result *res,
                                int *fatal)
{
    cut_result_reset(res);
    *fatal = 0;
    if (run_checked(w, l, chk, CUT_WK_FIRST, res, fatal) != 0)
        return;
    const double first_err = res->max_abs_err;
    if (time_runs(w, l, res, fatal) != 0) {
        res->median_ms = res->min_ms = res->max_ms = -1.0;
        res->repeats = 0;
        return;
    }
    /* Check again after timing: catches races and faults that depend on time or on earlier runs. */
    if (run_checked(w, l, chk, CUT_WK_AFTER_TIMING, res, fatal) != 0) {
        res->median_ms = res->min_ms = res->max_ms = -1.0;
        res->repeats = 0;
        return;
    }
    res->max_abs_err = CUT_MAX(first_err, res->max_abs_err);
}

void cut_wk_check_and_time(cut_wk *w, const cut_wk_launcher *l, cut_result *res, int *fatal)
{
    if (!w->prepared) {
        cut_result_reset(res);
        *fatal = 0;
        set_status(res, CUT_ST_FAULT, "worker not prepared");
        return;
    }
    const cut_wk_check chk = {out_poison, out_compare, w};
    cut_wk_check_and_time_with(w, l, &chk, res, fatal);
}

/* ---- a generated kernel ---- */

typedef struct kern_launch {
    const cut_cu_api *cu;
    CUfunction f;
    unsigned grid[3], block[3], smem;
    void *args[3];
    CUtensorMap maps[2]; /* the kernel's TMA maps (MEASURE with two descriptors): args[0] and args[1] point here */
} kern_launch;

static CUtensorMapSwizzle tma_swizzle(int bytes)
{
    switch (bytes) {
    case 32:
        return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64:
        return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128:
        return CU_TENSOR_MAP_SWIZZLE_128B;
    default:
        return CU_TENSOR_MAP_SWIZZLE_NONE;
    }
}

/* Checks that TMA descriptor t fits the workload: its elements are the stored input's, and the rows it spans lie
 * within the operand's buffer. 0, or -1 with res a LAUNCH_ERROR naming the map (d describes it). */
static int tma_fits(const cut_wk *w, const cut_tma_desc *t, int i, const char *d, cut_result *res)
{
    const size_t elem = w->is_gemm ? cut_dtype_size(w->gemm.dtype) : sizeof(float);
    const unsigned long long have = t->operand == 0 ? w->in_bytes : w->w_bytes;
    if ((size_t)t->elem_bytes != elem)
        return set_status(res, CUT_ST_LAUNCH_ERROR, "TMA map %d (%s): %d-byte elements, the workload stores %zu-byte "
                          "ones", i, d, t->elem_bytes, elem), -1;
    /* (dims[1] - 1) * row_bytes + dims[0] * elem_bytes <= have, without overflow */
    const unsigned long long row = (unsigned long long)t->dims[0] * (unsigned)t->elem_bytes;
    if (row > have || t->dims[1] - 1 > (have - row) / t->row_bytes)
        return set_status(res, CUT_ST_LAUNCH_ERROR, "TMA map %d (%s) reaches past the end of operand %s (%llu bytes)",
                          i, d, t->operand == 0 ? "A" : "B", have), -1;
    return 0;
}

/* Encodes the kernel's TMA maps (cuTensorMapEncodeTiled: rank 2, elements of the workload's dtype, element strides
 * 1, no interleave, the descriptor's swizzle, L2 promotion 256 B, out-of-bounds elements read as zero) over the
 * worker's A and B buffers into k->maps, and points the kernel's first two arguments at them. 0, or -1 with res a
 * LAUNCH_ERROR naming the map, its descriptor and the CUresult. */
static int tma_encode(const cut_wk *w, const cut_wp_measure *m, kern_launch *k, cut_result *res)
{
    for (int i = 0; i < m->ntma; i++) {
        const cut_tma_desc *t = &m->tma[i];
        char d[160], why[160];
        cut_wp_tma_describe(t, d, sizeof d);
        if (tma_fits(w, t, i, d, res) != 0)
            return -1;
        const CUtensorMapDataType dt = t->elem_bytes == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                       : (w->is_gemm && w->gemm.dtype == CUT_DT_BF16) ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                                       : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
        const cuuint64_t dims[2] = {t->dims[0], t->dims[1]}, strides[1] = {t->row_bytes};
        const cuuint32_t box[2] = {t->box[0], t->box[1]}, estr[2] = {1, 1};
        const CUdeviceptr base = t->operand == 0 ? w->d_in : w->d_w;
        /* L2 promotion 128 B: with rows only 16-byte aligned (fp16 K = 7384: 14768-byte rows) 256-byte promotion
         * fetched past each 128-byte box row; measured on the H200 (wgmma fp16 7384^3 NN): 463 TFLOP/s at 256 B,
         * 550 at 128 B; on aligned rows (7392^3) both 727-729. */
        CUresult rc = k->cu->cuTensorMapEncodeTiled(&k->maps[i], dt, 2, (void *)(uintptr_t)base, dims, strides, box,
                                                    estr, CU_TENSOR_MAP_INTERLEAVE_NONE, tma_swizzle(t->swizzle),
                                                    CU_TENSOR_MAP_L2_PROMOTION_L2_128B, /* see below */
                                                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        if (rc != CUDA_SUCCESS) {
            cut_cu_describe(rc, why, sizeof why);
            set_status(res, CUT_ST_LAUNCH_ERROR, "cuTensorMapEncodeTiled, map %d (%s): %s", i, d, why);
            return -1;
        }
        k->args[i] = &k->maps[i];
    }
    return 0;
}

static int kern_launch_fn(void *arg, char *msg, size_t n, int *sticky)
{
    kern_launch *k = arg;
    return cut_wk_launch_status(k->cu->cuLaunchKernel(k->f, k->grid[0], k->grid[1], k->grid[2], k->block[0],
                                                      k->block[1], k->block[2], k->smem, NULL, k->args, NULL),
                                msg, n, sticky);
}

/* ---- energy: the kernel runs back to back (no L2 flush) in chunks queued one ahead, each between an event pair
 * (two pairs, alternating) ---- */

typedef struct wk_energy_run {
    cut_wk *w;
    const cut_wk_launcher *l;
    cut_result *res;
    int *fatal;
    int slot;              /* event pair of the chunk queued last */
    long long queued;      /* its iterations; 0: none queued */
} wk_energy_run;

static int wk_energy_chunk(void *arg, long long iters, long long *done_iters, double *done_s, cut_err *e)
{
    wk_energy_run *er = arg;
    const cut_cu_api *cu = er->w->cu;
    CUevent *start = er->w->ev_start, *stop = er->w->ev_stop;
    const int prev = er->slot, next = 1 - er->slot;
    CUresult rc;
    float ms = 0;
    *done_iters = 0;
    *done_s = 0;
    if (iters > 0) {
        if ((rc = cu->cuEventRecord(start[next], NULL)) != CUDA_SUCCESS)
            goto harness;
        for (long long i = 0; i < iters; i++)
            if (launch(er->l, er->res, er->fatal) != 0)
                return cut_err_set(e, "%s", er->res->error);
        if ((rc = cu->cuEventRecord(stop[next], NULL)) != CUDA_SUCCESS)
            goto harness;
    }
    if (er->queued > 0) {
        if ((rc = cu->cuEventSynchronize(stop[prev])) != CUDA_SUCCESS ||
            (rc = cu->cuEventElapsedTime(&ms, start[prev], stop[prev])) != CUDA_SUCCESS)
            goto harness;
        *done_iters = er->queued;
        *done_s = ms * 1e-3;
    }
    er->queued = iters;
    er->slot = next;
    return 0;
harness:
    cut_wk_harness_fault(er->res, er->fatal, "energy run (event record/synchronise)", rc);
    return cut_err_set(e, "%s", er->res->error);
}

/* After check_and_time succeeded: the energy measurement, then the output checked once more. A kernel that
 * fails here turns res into a failure; a meter that fails (NVML) leaves res alone and returns -1 with why. */
static int wk_energy(cut_wk *w, const cut_wk_launcher *l, const cut_energy_plan *plan, cut_result *res,
                     cut_energy_result *er, int *fatal, cut_err *why)
{
    wk_energy_run run = {.w = w, .l = l, .res = res, .fatal = fatal};
    const double flops = w->is_gemm ? cut_gemm_flops(&w->gemm) : cut_conv_flops(&w->conv);
    if (cut_energy_measure(plan, wk_energy_chunk, &run, flops, er, why) != 0)
        return -1;
    const cut_wk_check chk = {out_poison, out_compare, w};
    return run_checked(w, l, &chk, CUT_WK_AFTER_ENERGY, res, fatal) == 0 ? 0 : -1;
}

int cut_wk_load(cut_wk *w, const uint8_t *img, size_t n, const char *entry, unsigned smem, CUmodule *mod,
                CUfunction *f, cut_result *res, int *fatal)
{
    const cut_cu_api *cu = w->cu;
    char d[160];
    /* Copy the image into its own NUL-terminated allocation (alignment for the ELF parser; NUL if it is PTX). */
    char *copy = cut_xmalloc(n + 1);
    memcpy(copy, img, n);
    copy[n] = '\0';
    *mod = NULL;
    CUresult rc = cu->cuModuleLoadData(mod, copy);
    free(copy);
    if (rc != CUDA_SUCCESS) {
        cut_cu_describe(rc, d, sizeof d);
        set_status(res, cut_wk_sticky(rc) ? CUT_ST_FAULT : CUT_ST_LAUNCH_ERROR, "cuModuleLoadData: %s", d);
        *fatal = cut_wk_sticky(rc);
        *mod = NULL;
        return -1;
    }
    if ((rc = cu->cuModuleGetFunction(f, *mod, entry)) != CUDA_SUCCESS) {
        cut_cu_describe(rc, d, sizeof d);
        set_status(res, CUT_ST_LAUNCH_ERROR, "cuModuleGetFunction(\"%s\"): %s", entry, d);
        goto fail;
    }
    /* More than 48 KiB of shared memory per block (static + dynamic) needs an explicit opt-in. */
    int smem_static = 0;
    cu->cuFuncGetAttribute(&smem_static, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, *f);
    if (smem > 0 && (size_t)smem + (size_t)CUT_MAX(smem_static, 0) > 48u * 1024u &&
        (rc = cu->cuFuncSetAttribute(*f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem)) !=
            CUDA_SUCCESS) {
        cut_cu_describe(rc, d, sizeof d);
        set_status(res, CUT_ST_LAUNCH_ERROR, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES=%u): %s", smem, d);
        goto fail;
    }
    return 0;
fail:
    cu->cuModuleUnload(*mod);
    *mod = NULL;
    return -1;
}

/* Loads the module, checks and times the kernel; with plan (ENERGY) also measures its energy into *er. */
static void measure_kernel(cut_wk *w, const cut_wp_measure *m, const cut_energy_plan *plan, cut_result *res,
                           cut_energy_result *er, int *energy_ok, cut_err *why, int *fatal)
{
    cut_result_reset(res);
    *fatal = 0;
    kern_launch k = {.cu = w->cu, .smem = m->smem_dynamic};
    memcpy(k.grid, m->grid, sizeof k.grid);
    memcpy(k.block, m->block, sizeof k.block);
    if (!k.grid[0] || !k.grid[1] || !k.grid[2] || !k.block[0] || !k.block[1] || !k.block[2]) {
        set_status(res, CUT_ST_LAUNCH_ERROR, "empty launch configuration grid (%u,%u,%u) block (%u,%u,%u)", k.grid[0],
                   k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2]);
        return;
    }
    CUmodule mod;
    if (cut_wk_load(w, m->cubin, m->cubin_size, m->entry, m->smem_dynamic, &mod, &k.f, res, fatal) != 0)
        return;
    k.args[0] = &w->d_in;
    k.args[1] = &w->d_w;
    k.args[2] = &w->d_out;
    if (m->ntma == 2 && tma_encode(w, m, &k, res) != 0)
        goto out;
    cut_wk_launcher l = {kern_launch_fn, &k};
    /* the kernel's algorithm may carry a wider tolerance (cut_conv_tolerance_scaled): for this candidate only */
    const double atol = w->atol, rtol = w->rtol, gemm_tol = w->gemm_tol;
    if (m->tol_scale > 1.0) {
        w->atol *= m->tol_scale;
        w->rtol *= m->tol_scale;
        w->gemm_tol *= m->tol_scale;
    }
    cut_wk_check_and_time(w, &l, res, fatal);
    if (plan && res->status == CUT_ST_OK && !*fatal)
        *energy_ok = wk_energy(w, &l, plan, res, er, fatal, why) == 0 && res->status == CUT_ST_OK;
    w->atol = atol;
    w->rtol = rtol;
    w->gemm_tol = gemm_tol;
out:
    if (!*fatal)
        w->cu->cuModuleUnload(mod);
}

/* ---- setup ---- */

void cut_wk_release(cut_wk *w)
{
    const cut_cu_api *cu = w->cu;
    cut_wk_kernel_free(w->kernel, cu, 0);
    w->kernel = NULL;
    CUdeviceptr *ptrs[] = {&w->d_in, &w->d_w, &w->d_out};
    for (size_t i = 0; i < CUT_ARRAY_LEN(ptrs); i++) {
        if (*ptrs[i])
            cu->cuMemFree(*ptrs[i]);
        *ptrs[i] = 0;
    }
    free(w->ref);
    free(w->host_out);
    w->ref = NULL;
    w->host_out = NULL;
    w->prepared = 0;
}

static int wk_init(cut_wk *w, int dev, cut_wp_hello *h, cut_err *e)
{
    const cut_cu_api *cu = cut_cu_load(e);
    if (!cu)
        return -1;
    w->cu = cu;
    CU_CHECK(cu->cuInit(0), e);
    int count = 0;
    CU_CHECK(cu->cuDeviceGetCount(&count), e);
    if (dev < 0 || dev >= count)
        return cut_err_set(e, "GPU %d does not exist (the driver reports %d device%s)", dev, count,
                           count == 1 ? "" : "s");
    CU_CHECK(cu->cuDeviceGet(&w->dev, dev), e);
    /* The primary context, so that cuDNN (runtime API) shares it. */
    CU_CHECK(cu->cuDevicePrimaryCtxRetain(&w->ctx, w->dev), e);
    CU_CHECK(cu->cuCtxSetCurrent(w->ctx), e);
    memset(h, 0, sizeof *h);
    CU_CHECK(cu->cuDeviceGetName(h->name, (int)sizeof h->name - 1, w->dev), e);
    CUuuid u;
    CU_CHECK(cu->cuDeviceGetUuid(&u, w->dev), e);
    cut_gpu_format_uuid((const unsigned char *)u.bytes, h->uuid, sizeof h->uuid);
    CU_CHECK(cu->cuDeviceGetAttribute(&h->sm_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, w->dev), e);
    CU_CHECK(cu->cuDeviceGetAttribute(&h->sm_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, w->dev), e);
    CU_CHECK(cu->cuDeviceGetAttribute(&h->l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, w->dev), e);
    CU_CHECK(cu->cuDriverGetVersion(&h->driver_version), e);
    w->l2_bytes = h->l2_bytes;
    for (; w->n_events < WK_EVENT_PAIRS; w->n_events++) {
        CU_CHECK(cu->cuEventCreate(&w->ev_start[w->n_events], CU_EVENT_DEFAULT), e);
        if (cu->cuEventCreate(&w->ev_stop[w->n_events], CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
            cu->cuEventDestroy(w->ev_start[w->n_events]);
            return cut_err_set(e, "cuEventCreate failed");
        }
    }
    return 0;
}

/* Releases everything; skipped CUDA calls when the context is dead (the process exits right after). */
static void wk_free(cut_wk *w, int context_dead)
{
    if (!w->cu)
        return;
    if (!context_dead) {
        cut_cudnn_state_free(w->cudnn);
        cut_cublas_state_free(w->cublas);
        cut_cublaslt_state_free(w->cublaslt, 0);
        cut_wk_release(w);
        if (w->d_flush)
            w->cu->cuMemFree(w->d_flush);
        for (int i = 0; i < w->n_events; i++) {
            w->cu->cuEventDestroy(w->ev_start[i]);
            w->cu->cuEventDestroy(w->ev_stop[i]);
        }
        if (w->ctx)
            w->cu->cuDevicePrimaryCtxRelease(w->dev);
    } else {
        cut_cublaslt_state_free(w->cublaslt, 1);
        cut_wk_kernel_free(w->kernel, w->cu, 1);
        w->kernel = NULL;
        free(w->ref);
        free(w->host_out);
    }
    w->cudnn = NULL;
    w->cublas = NULL;
    w->cublaslt = NULL;
    w->ref = NULL;
    w->host_out = NULL;
}

int cut_wk_use_timing(cut_wk *w, const cut_timing *t, cut_err *e)
{
    w->timing = *t;
    if (!t->flush_l2 || w->d_flush)
        return 0;
    /* Twice the L2 size: writing it evicts everything the previous run left in L2. */
    w->flush_bytes = 2 * (size_t)(w->l2_bytes > 0 ? w->l2_bytes : 64 << 20);
    CUresult rc = w->cu->cuMemAlloc(&w->d_flush, w->flush_bytes);
    if (rc == CUDA_SUCCESS)
        return 0;
    w->d_flush = 0;
    char d[160];
    cut_cu_describe(rc, d, sizeof d);
    return cut_err_set(e, "worker: allocating the L2 flush buffer (%zu bytes): %s", w->flush_bytes, d);
}

/* Allocates and uploads the two inputs (in_bytes and w_bytes of them, in their storage type) and the output (n_out
 * floats) of the workload, the L2 flush buffer, and the reference (from the parent's floats). Frees them again on
 * failure. */
static int wk_upload(cut_wk *w, const void *in, size_t in_bytes, const void *wt, size_t w_bytes, const float *ref,
                     const char *what, cut_err *e)
{
    const cut_cu_api *cu = w->cu;
    int rc = -1;
    CUresult cr;
    char d[160];
#define WK_TRY(expr, step)                                                                                           \
    if ((cr = (expr)) != CUDA_SUCCESS) {                                                                             \
        cut_cu_describe(cr, d, sizeof d);                                                                            \
        cut_err_set(e, "worker %s: %s: %s", what, step, d);                                                          \
        goto out;                                                                                                    \
    }
    WK_TRY(cu->cuMemAlloc(&w->d_in, in_bytes), "allocating the first input tensor");
    WK_TRY(cu->cuMemAlloc(&w->d_w, w_bytes), "allocating the second input tensor");
    WK_TRY(cu->cuMemAlloc(&w->d_out, w->n_out * sizeof(float)), "allocating the output tensor");
    WK_TRY(cu->cuMemcpyHtoD(w->d_in, in, in_bytes), "uploading the first input tensor");
    WK_TRY(cu->cuMemcpyHtoD(w->d_w, wt, w_bytes), "uploading the second input tensor");
    w->in_bytes = in_bytes;
    w->w_bytes = w_bytes;
#undef WK_TRY
    if (cut_wk_use_timing(w, &w->timing, e) != 0)
        goto out;
    w->ref = cut_xmalloc(sizeof(double) * w->n_out);
    for (size_t i = 0; ref && i < w->n_out; i++) /* NULL: the caller fills it */
        w->ref[i] = ref[i];
    w->host_out = cut_xmalloc(sizeof(float) * w->n_out);
    w->prepared = 1;
    rc = 0;
out:
    if (rc != 0)
        cut_wk_release(w);
    return rc;
}

static int wk_prepare(cut_wk *w, const cut_wp_frame *f, cut_err *e)
{
    cut_wp_prepare p;
    if (cut_wp_prepare_decode(f, &p, e) != 0)
        return -1;
    cut_wk_release(w);
    w->is_gemm = 0;
    w->conv = p.conv;
    w->timing = p.timing;
    w->n_in = cut_conv_in_elems(&p.conv);
    w->n_w = cut_conv_w_elems(&p.conv);
    w->n_out = cut_conv_out_elems(&p.conv);
    cut_conv_tolerance(&w->conv, &w->atol, &w->rtol);
    int rc = wk_upload(w, p.in, w->n_in * sizeof(float), p.w, w->n_w * sizeof(float), p.ref, "PREPARE", e);
    cut_wp_prepare_free(&p);
    return rc;
}

static int wk_prepare_gemm(cut_wk *w, const cut_wp_frame *f, cut_err *e)
{
    cut_wp_prepare_gemm p;
    if (cut_wp_prepare_gemm_decode(f, &p, e) != 0)
        return -1;
    cut_wk_release(w);
    w->is_gemm = 1;
    w->gemm = p.gemm;
    w->timing = p.timing;
    w->n_in = cut_gemm_a_elems(&p.gemm);
    w->n_w = cut_gemm_b_elems(&p.gemm);
    w->n_out = cut_gemm_c_elems(&p.gemm);
    w->gemm_tol = cut_gemm_tolerance(p.gemm.dtype);
    /* A and B in their storage type: halves / bf16 bits for fp16 / bf16, floats for fp32 and tf32. */
    const size_t es = cut_dtype_size(p.gemm.dtype), a_bytes = w->n_in * es, b_bytes = w->n_w * es;
    void *a = cut_xmalloc(a_bytes ? a_bytes : 1), *b = cut_xmalloc(b_bytes ? b_bytes : 1);
    cut_dtype_pack(p.gemm.dtype, p.a, w->n_in, a);
    cut_dtype_pack(p.gemm.dtype, p.b, w->n_w, b);
    int rc = wk_upload(w, a, a_bytes, b, b_bytes, p.ref, "PREPARE_GEMM", e);
    free(a);
    free(b);
    if (rc == 0 && !p.ref && cut_gemm_reference_gpu(w->cu, &w->gemm, p.a, p.b, w->ref, e) != 0) {
        cut_err_wrap(e, "PREPARE_GEMM without a reference");
        cut_wk_release(w);
        rc = -1;
    }
    cut_wp_prepare_gemm_free(&p);
    return rc;
}

int cut_wp_reply(int fd, uint32_t type, const cut_buf *b)
{
    cut_err e;
    if (cut_wp_send(fd, type, b ? b->data : NULL, b ? b->len : 0, &e) != 0) {
        fprintf(stderr, "cutune worker: %s\n", e.msg);
        return -1;
    }
    return 0;
}

int cut_wp_reply_error(int fd, const char *msg)
{
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_error_encode(msg, &b);
    int rc = cut_wp_reply(fd, CUT_WP_ERROR, &b);
    cut_buf_free(&b);
    return rc;
}

int cut_worker_main(int dev, int in_fd, int out_fd)
{
    /* A vanished parent shows up as EPIPE / end of file, not as a signal. */
    signal(SIGPIPE, SIG_IGN);
    cut_wk w;
    memset(&w, 0, sizeof w);
    cut_err e = {{0}};
    cut_wp_hello h;
    if (wk_init(&w, dev, &h, &e) != 0) {
        cut_wp_reply_error(out_fd, e.msg);
        wk_free(&w, 0);
        return 1;
    }
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_hello_encode(&h, &b);
    int code = cut_wp_reply(out_fd, CUT_WP_HELLO, &b) == 0 ? -1 : 1;
    int dead = 0;
    while (code < 0) {
        cut_wp_frame f;
        int rc = cut_wp_recv(in_fd, -1.0, CUT_WP_MAX_REQUEST, &f, &e);
        if (rc == 0) {
            code = 0; /* the parent closed the pipe */
            break;
        }
        if (rc < 0) {
            fprintf(stderr, "cutune worker: %s\n", e.msg);
            code = 1;
            break;
        }
        b.len = 0;
        switch (f.type) {
        case CUT_WP_PREPARE:
            if (wk_prepare(&w, &f, &e) != 0)
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            else
                code = cut_wp_reply(out_fd, CUT_WP_ACK, NULL) == 0 ? -1 : 1;
            break;
        case CUT_WP_PREPARE_GEMM:
            if (wk_prepare_gemm(&w, &f, &e) != 0)
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            else
                code = cut_wp_reply(out_fd, CUT_WP_ACK, NULL) == 0 ? -1 : 1;
            break;
        case CUT_WP_PREPARE_KERNEL:
            if (cut_wk_prepare_kernel(&w, &f, &e) != 0)
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            else
                code = cut_wp_reply(out_fd, CUT_WP_ACK, NULL) == 0 ? -1 : 1;
            break;
        case CUT_WP_RUN_KERNEL:
            if (cut_wk_run_kernel(&w, &f, &b, &dead, &e) != 0)
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            else
                code = cut_wp_reply(out_fd, CUT_WP_KERNEL_RESULT, &b) == 0 ? -1 : 1;
            if (dead)
                code = 3;
            break;
        case CUT_WP_CUBLAS: {
            if (!w.prepared || !w.is_gemm) {
                code = cut_wp_reply_error(out_fd, "worker: CUBLAS before PREPARE_GEMM") == 0 ? -1 : 1;
                break;
            }
            cut_result res;
            char algo[64] = "";
            if (cut_cublas_baseline(&w, &res, algo, sizeof algo, &dead, &e) != 0) {
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            } else {
                cut_wp_result_encode(&res, algo, &b);
                code = cut_wp_reply(out_fd, CUT_WP_CUBLAS_RESULT, &b) == 0 ? -1 : 1;
            }
            if (dead)
                code = 3;
            break;
        }
        case CUT_WP_VENDOR: {
            cut_vendor_opts o;
            if (!w.prepared || !w.is_gemm || cut_wp_vendor_decode(&f, &o, &e) != 0) {
                const char *why = (w.prepared && w.is_gemm) ? e.msg : "worker: VENDOR before PREPARE_GEMM";
                code = cut_wp_reply_error(out_fd, why) == 0 ? -1 : 1;
                break;
            }
            cut_vendor_result *v = cut_xmalloc(sizeof *v);
            if (cut_vendor_baseline(&w, &o, v, &dead, &e) != 0) {
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            } else {
                cut_wp_vendor_result_encode(v, &b);
                code = cut_wp_reply(out_fd, CUT_WP_VENDOR_RESULT, &b) == 0 ? -1 : 1;
            }
            free(v);
            if (dead)
                code = 3;
            break;
        }
        case CUT_WP_MEASURE: {
            cut_wp_measure m;
            if (!w.prepared || cut_wp_measure_decode(&f, &m, &e) != 0) {
                code = cut_wp_reply_error(out_fd, w.prepared ? e.msg : "worker: MEASURE before PREPARE") == 0 ? -1 : 1;
                break;
            }
            cut_result res;
            measure_kernel(&w, &m, NULL, &res, NULL, NULL, NULL, &dead);
            cut_wp_result_encode(&res, "", &b);
            code = cut_wp_reply(out_fd, CUT_WP_RESULT, &b) == 0 ? -1 : 1;
            if (dead)
                code = 3;
            break;
        }
        case CUT_WP_ENERGY: {
            cut_wp_measure m;
            cut_energy_plan plan;
            if (!w.prepared || cut_wp_energy_decode(&f, &m, &plan, &e) != 0) {
                code = cut_wp_reply_error(out_fd, w.prepared ? e.msg : "worker: ENERGY before PREPARE") == 0 ? -1 : 1;
                break;
            }
            cut_result res;
            cut_energy_result er;
            memset(&er, 0, sizeof er);
            int ok = 0;
            cut_err why = {{0}};
            measure_kernel(&w, &m, &plan, &res, &er, &ok, &why, &dead);
            cut_wp_energy_result_encode(&res, ok, why.msg, &er, &b);
            code = cut_wp_reply(out_fd, CUT_WP_ENERGY_RESULT, &b) == 0 ? -1 : 1;
            if (dead)
                code = 3;
            break;
        }
        case CUT_WP_CUDNN: {
            if (!w.prepared) {
                code = cut_wp_reply_error(out_fd, "worker: CUDNN before PREPARE") == 0 ? -1 : 1;
                break;
            }
            cut_result res;
            char algo[64] = "";
            if (cut_cudnn_baseline(&w, &res, algo, sizeof algo, &dead, &e) != 0) {
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            } else {
                cut_wp_result_encode(&res, algo, &b);
                code = cut_wp_reply(out_fd, CUT_WP_CUDNN_RESULT, &b) == 0 ? -1 : 1;
            }
            if (dead)
                code = 3;
            break;
        }
        case CUT_WP_QUIT:
            code = 0;
            break;
        default: {
            char msg[96];
            snprintf(msg, sizeof msg, "worker: unexpected %s message", cut_wp_type_name(f.type));
            code = cut_wp_reply_error(out_fd, msg) == 0 ? -1 : 1;
            break;
        }
        }
        cut_wp_frame_free(&f);
    }
    cut_buf_free(&b);
    wk_free(&w, dead);
    return code;
}
