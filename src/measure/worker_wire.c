/* cutune — the measurement worker's wire protocol, its lowest layer (both sides): frames on a pipe (send, receive
 * with a deadline) and the bounds-checked payload cursor and writers that the message codecs are built from. */
#include "measure/child.h"
#include "measure/worker_proto.h"
#include "measure/worker_proto_int.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* =============================================================================================================
 * Framing
 * ============================================================================================================= */

static const char *const type_names[CUT_WP_TYPE_END] = {
    [CUT_WP_HELLO] = "HELLO",         [CUT_WP_ERROR] = "ERROR",           [CUT_WP_ACK] = "ACK",
    [CUT_WP_QUIT] = "QUIT",           [CUT_WP_PREPARE_WORK] = "PREPARE_WORK", [CUT_WP_RUN] = "RUN",
    [CUT_WP_RUN_RESULT] = "RUN_RESULT", [CUT_WP_VENDOR_RESULT] = "VENDOR_RESULT",
    [CUT_WP_HOLD_WORK] = "HOLD_WORK", [CUT_WP_SELECT_WORK] = "SELECT_WORK", [CUT_WP_DROP_WORK] = "DROP_WORK",
    [CUT_WP_HELD] = "HELD",
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

    const int err = cut_child_send(fd, hdr, sizeof hdr, payload, len); /* SIGPIPE blocked: EPIPE instead */
    if (err != 0) {
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

int cut_wp_rd_take(cut_wp_rd *r, void *dst, size_t n)
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

int cut_wp_get_u32(cut_wp_rd *r, uint32_t *v) { return cut_wp_rd_take(r, v, sizeof *v); }
int cut_wp_get_i32(cut_wp_rd *r, int32_t *v) { return cut_wp_rd_take(r, v, sizeof *v); }
int cut_wp_get_u64(cut_wp_rd *r, uint64_t *v) { return cut_wp_rd_take(r, v, sizeof *v); }
int cut_wp_get_f64(cut_wp_rd *r, double *v) { return cut_wp_rd_take(r, v, sizeof *v); }

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

void cut_wp_comp_encode(const cut_compile_info *c, cut_buf *b)
{
    cut_wp_put_u32(b, c->compiled ? 1u : 0u);
    cut_wp_put_u32(b, c->ok ? 1u : 0u);
    const int nums[5] = {c->regs, c->spill_stores, c->spill_loads, c->smem_static, c->stack_frame};
    for (int i = 0; i < 5; i++)
        cut_wp_put_i32(b, nums[i]);
    cut_wp_put_f64(b, c->compile_ms);
    cut_wp_put_u32(b, c->cache_hit ? 1u : 0u);
    cut_wp_put_u64(b, c->key);
}

int cut_wp_comp_decode(cut_wp_rd *r, cut_compile_info *c)
{
    uint32_t flags[3] = {0};
    int32_t nums[5] = {0};
    memset(c, 0, sizeof *c);
    cut_wp_get_u32(r, &flags[0]);
    cut_wp_get_u32(r, &flags[1]);
    for (int i = 0; i < 5; i++)
        cut_wp_get_i32(r, &nums[i]);
    cut_wp_get_f64(r, &c->compile_ms);
    cut_wp_get_u32(r, &flags[2]);
    if (cut_wp_get_u64(r, &c->key) != 0 || flags[0] > 1 || flags[1] > 1 || flags[2] > 1 || !isfinite(c->compile_ms) ||
        c->compile_ms < 0)
        return -1;
    c->compiled = (int)flags[0], c->ok = (int)flags[1], c->cache_hit = (int)flags[2];
    c->regs = nums[0], c->spill_stores = nums[1], c->spill_loads = nums[2];
    c->smem_static = nums[3], c->stack_frame = nums[4];
    return 0;
}
