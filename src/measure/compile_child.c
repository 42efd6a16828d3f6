/* cutune — a compile in a child process of its own (measure/compile_child.h). The child compiles on a thread with
 * the stack NVRTC needs, sends the result back in the worker protocol's field codecs over a pipe and exits. */
#define _GNU_SOURCE /* close_range */
#include "measure/compile_child.h"
#include "measure/child.h"
#include "measure/worker_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The child writes its reply on this descriptor (every other one above stderr is closed in it). */
#define REPLY_FD 3

typedef struct child_job {
    const char *src, *name;
    const cut_compile_opts *o;
    cut_compiled out;
    cut_err e;
    int rc;
} child_job;

static void *compile_thread(void *arg)
{
    child_job *j = arg;
    j->rc = cut_compile_one(j->src, j->name, j->o, &j->out, &j->e);
    return NULL;
}

/* The reply: u32 setup failed and its sentence, the compile's numbers (cut_wp_comp_encode), the cubin, the log,
 * u32 has PTX and the PTX. */
static void reply_encode(const child_job *j, cut_buf *b)
{
    const cut_compiled *c = &j->out;
    cut_compile_info info;
    cut_compile_info_of(c, &info);
    cut_wp_put_u32(b, j->rc != 0);
    cut_wp_put_str(b, j->rc != 0 ? j->e.msg : "");
    cut_wp_comp_encode(&info, b);
    cut_wp_put_bytes(b, c->cubin, c->cubin ? c->cubin_size : 0);
    cut_wp_put_str(b, c->log);
    cut_wp_put_u32(b, c->ptx != NULL);
    cut_wp_put_str(b, c->ptx);
}

/* A NUL-terminated copy of a length-prefixed string of the reply, or NULL (the cursor then fails). */
static char *get_text(cut_wp_rd *r)
{
    const uint8_t *p;
    size_t n;
    if (cut_wp_get_bytes(r, &p, &n) != 0)
        return NULL;
    char *s = cut_xmalloc(n + 1);
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

/* Decodes the child's reply into out (initialised). 0, 1 for the child's setup error (in e), -1 for a malformed
 * reply. */
static int reply_decode(const cut_buf *b, cut_compiled *out, cut_err *e)
{
    cut_wp_rd r;
    cut_wp_rd_init(&r, b->data, b->len);
    uint32_t setup = 0, has_ptx = 0;
    cut_compile_info info;
    const uint8_t *cubin = NULL;
    size_t cubin_size = 0;
    cut_wp_get_u32(&r, &setup);
    cut_wp_get_str(&r, e->msg, sizeof e->msg);
    if (cut_wp_comp_decode(&r, &info) != 0)
        return -1;
    cut_wp_get_bytes(&r, &cubin, &cubin_size);
    free(out->log);
    out->log = get_text(&r);
    cut_wp_get_u32(&r, &has_ptx);
    out->ptx = get_text(&r);
    if (!out->log)
        out->log = cut_xstrdup("");
    if (r.bad || r.off != r.len || (info.ok && !cubin_size))
        return -1;
    if (setup)
        return 1;
    if (!has_ptx) {
        free(out->ptx);
        out->ptx = NULL;
    }
    out->ok = info.ok;
    out->regs = info.regs, out->spill_stores = info.spill_stores, out->spill_loads = info.spill_loads;
    out->smem_static = info.smem_static, out->stack_frame = info.stack_frame;
    out->compile_ms = info.compile_ms;
    out->cache_hit = info.cache_hit;
    out->key = info.key;
    if (info.ok) {
        out->cubin = cut_xmalloc(cubin_size);
        memcpy(out->cubin, cubin, cubin_size);
        out->cubin_size = cubin_size;
    }
    return 0;
}

/* The child: only REPLY_FD and the standard streams kept (a pipe of another compile, inherited from a sibling
 * thread's fork, would keep that compile's reader from seeing its end), the compile on a thread with a 16 MiB stack,
 * the reply, then _exit: nothing of the parent's (MPI's exit handlers among them) runs in it. */
static void child_main(int fd, const char *src, const char *name, const cut_compile_opts *o)
{
    if (dup2(fd, REPLY_FD) != REPLY_FD)
        _exit(3);
    close_range(REPLY_FD + 1, ~0u, 0);
    child_job j = {.src = src, .name = name, .o = o};
    cut_compiled_init(&j.out);
    pthread_attr_t attr;
    pthread_t th;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 16u << 20);
    if (pthread_create(&th, &attr, compile_thread, &j) != 0)
        _exit(4);
    pthread_join(th, NULL);
    cut_buf b;
    cut_buf_init(&b);
    reply_encode(&j, &b);
    _exit(cut_child_send(REPLY_FD, b.data, b.len, NULL, 0) == 0 ? 0 : 5);
}

/* Reads fd into b until its end (1) or the deadline (0; < 0: none). */
static int read_all(int fd, double deadline, cut_buf *b)
{
    char chunk[65536];
    for (;;) {
        const double left = deadline < 0 ? -1 : deadline - cut_now_s();
        if (deadline >= 0 && left <= 0)
            return 0;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        const int k = poll(&p, 1, left < 0 ? -1 : (int)(left * 1000) + 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k == 0)
            continue; /* the deadline is checked above */
        const ssize_t got = read(fd, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return 1; /* its end, or a broken pipe: the wait status tells */
        cut_buf_append(b, chunk, (size_t)got);
    }
}

/* A compile that gave no result: out->ok = 0 and a log that says why. */
static void no_result(cut_compiled *out, const char *why)
{
    cut_compiled_free(out);
    cut_compiled_init(out);
    free(out->log);
    out->log = cut_xstrdup(why);
}

/* Caller frees out with cut_compiled_free. */
int cut_compile_isolated(const char *src, const char *name, const cut_compile_opts *o, double limit_s,
                         cut_compiled *out, cut_err *e)
{
    cut_compiled_init(out);
    if (!src || !o)
        return cut_err_set(e, "cut_compile_isolated: NULL %s", src ? "options" : "source");
    if (cut_nvrtc_version(e) < 0) /* NVRTC unusable is the run's problem, not a candidate's */
        return -1;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return cut_err_set(e, "a pipe for a compile process: %s", strerror(errno));
    const double t0 = cut_now_s();
    const pid_t pid = fork();
    if (pid < 0) {
        const int err = errno;
        close(p[0]);
        close(p[1]);
        return cut_err_set(e, "cannot start a compile process: %s", strerror(err));
    }
    if (pid == 0)
        child_main(p[1], src, name, o);
    close(p[1]);
    cut_buf b;
    cut_buf_init(&b);
    const int ended = read_all(p[0], limit_s > 0 ? t0 + limit_s : -1, &b);
    close(p[0]);
    int st = 0;
    if (!ended)
        kill(pid, SIGKILL);
    const int reaped = cut_child_wait(pid, ended ? 30.0 : 5.0, &st) == 1;
    char how[128] = "did not exit", why[256];
    if (reaped)
        cut_child_describe(st, how, sizeof how);
    int rc = 0;
    if (!ended) {
        snprintf(why, sizeof why, "NVRTC did not finish within %g s: the compile was killed", limit_s);
        no_result(out, why);
    } else if (!reaped || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || (rc = reply_decode(&b, out, e)) < 0) {
        snprintf(why, sizeof why, "NVRTC crashed: its process ended with %s", how);
        no_result(out, why);
        rc = 0;
    } else if (rc == 1) {
        rc = -1; /* the child's setup error, in e */
    }
    cut_buf_free(&b);
    return rc;
}
