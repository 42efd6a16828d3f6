/* cutune — a compile in a child process of its own (measure/compile_child.h).
 *
 * The parent writes the request (the source, its name and the options, in the worker protocol's field codecs) into
 * an anonymous file, starts `<worker> __worker compile 0 3` with posix_spawn (stdin that file, descriptor 3 a pipe
 * back) and reads the reply until the pipe's end or the time limit. The helper reads all of its request, compiles
 * on a thread with the stack NVRTC needs, writes the reply and exits. A fork without exec would not do: the
 * parent has threads (the compile pool, MPI's progress threads), and a child forked while one of them holds the
 * dynamic loader's lock or an allocator's (NVRTC dlopens libnvrtc-builtins) waits for it forever. */
#define _GNU_SOURCE /* close_range, memfd_create, mkostemp, posix_spawn_file_actions_addclosefrom_np */
#include "measure/compile_child.h"
#include "cutune/measure.h"
#include "measure/child.h"
#include "measure/worker_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* The helper writes its reply on this descriptor; its request is its stdin. */
#define REPLY_FD 3
/* The first field of a request: a helper of another build, or a stray input, is told apart from a request. */
#define REQUEST_MAGIC 0x43545543u /* "CUTC" in memory order on little-endian machines */
/* The largest request the helper reads (a source of a few MiB at most; a runaway input is refused). */
#define REQUEST_MAX ((size_t)1 << 30)

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
    cut_compiled_free(&j->out); /* the placeholder a reply needs when no compile runs; cut_compile_one starts afresh */
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

/* A compile request as the helper decoded it: o's strings point at the copies here. */
typedef struct compile_req {
    char *src, *name, *cache_dir, *extra;
    cut_compile_opts o;
    uint64_t parent; /* the process that asked */
} compile_req;

/* A string that may be NULL: u32 1 and the text, or u32 0 and "". */
static void put_opt_text(cut_buf *b, const char *s)
{
    cut_wp_put_u32(b, s != NULL);
    cut_wp_put_str(b, s ? s : "");
}

/* Its copy (NULL for one sent as NULL, or when the cursor fails: a flag over 1 fails it). */
static char *get_opt_text(cut_wp_rd *r)
{
    uint32_t has = 0;
    cut_wp_get_u32(r, &has);
    char *s = get_text(r);
    if (has > 1)
        r->bad = 1;
    if (has != 1 || r->bad) {
        free(s);
        return NULL;
    }
    return s;
}

/* The request: u32 REQUEST_MAGIC, the source, the name (may be NULL), then every field of the options that
 * cut_compile_one reads: i32 sm_major, sm_minor, arch_suffix_a, the cache folder (may be NULL), i32 nthreads, the
 * extra NVRTC options (may be NULL), i32 want_ptx; then u64 the asking process's id. */
static void request_encode(const char *src, const char *name, const cut_compile_opts *o, cut_buf *b)
{
    cut_wp_put_u32(b, REQUEST_MAGIC);
    cut_wp_put_str(b, src);
    put_opt_text(b, name);
    cut_wp_put_i32(b, o->sm_major);
    cut_wp_put_i32(b, o->sm_minor);
    cut_wp_put_i32(b, o->arch_suffix_a);
    put_opt_text(b, o->cache_dir);
    cut_wp_put_i32(b, o->nthreads);
    put_opt_text(b, o->extra_opts);
    cut_wp_put_i32(b, o->want_ptx);
    cut_wp_put_u64(b, (uint64_t)getpid());
}

static void request_free(compile_req *q)
{
    free(q->src), free(q->name), free(q->cache_dir), free(q->extra);
    memset(q, 0, sizeof *q);
}

/* 0, or -1 for a malformed request (q is freeable either way: free it with request_free). */
static int request_decode(const void *data, size_t len, compile_req *q)
{
    memset(q, 0, sizeof *q);
    cut_wp_rd r;
    cut_wp_rd_init(&r, data, len);
    uint32_t magic = 0;
    int32_t v[5] = {0};
    cut_wp_get_u32(&r, &magic);
    q->src = get_text(&r);
    q->name = get_opt_text(&r);
    for (int i = 0; i < 3; i++)
        cut_wp_get_i32(&r, &v[i]);
    q->cache_dir = get_opt_text(&r);
    cut_wp_get_i32(&r, &v[3]);
    q->extra = get_opt_text(&r);
    cut_wp_get_i32(&r, &v[4]);
    cut_wp_get_u64(&r, &q->parent);
    cut_compile_opts_default(&q->o);
    q->o.sm_major = v[0], q->o.sm_minor = v[1], q->o.arch_suffix_a = v[2];
    q->o.cache_dir = q->cache_dir;
    q->o.nthreads = v[3];
    q->o.extra_opts = q->extra;
    q->o.want_ptx = v[4];
    return r.bad || r.off != r.len || magic != REQUEST_MAGIC || !q->src ? -1 : 0;
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

/* Reads fd to its end into b (at most REQUEST_MAX bytes). 0, or -1 with errno set. */
static int read_request(int fd, cut_buf *b)
{
    char chunk[65536];
    for (;;) {
        const ssize_t got = read(fd, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -1;
        if (got == 0)
            return 0;
        if (b->len + (size_t)got > REQUEST_MAX) {
            errno = EFBIG;
            return -1;
        }
        cut_buf_append(b, chunk, (size_t)got);
    }
}

/* The helper (`cutune __worker compile <in_fd> <out_fd>`). Descriptors above the two it uses that the parent's
 * process had left open without close-on-exec (another library's) are closed first, so that a compile that runs for
 * minutes holds none of them. It dies with its parent (a killed MPI rank leaves no compile behind): the parent's
 * thread that started it waits for it, so only the parent's end ends that thread first; a parent gone before the
 * request is read (the helper's parent is then another process) ends it too. The exit status is 0 once the reply is
 * written, whether or not the source compiled. */
int cut_compile_child_main(int in_fd, int out_fd)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    close_range((unsigned)(in_fd > out_fd ? in_fd : out_fd) + 1, ~0u, 0);
    cut_buf req;
    cut_buf_init(&req);
    compile_req q = {0};
    child_job j = {.rc = -1};
    cut_compiled_init(&j.out);
    if (read_request(in_fd, &req) != 0) {
        cut_err_set(&j.e, "the compile helper could not read its request: %s", strerror(errno));
    } else if (request_decode(req.data, req.len, &q) != 0) {
        cut_err_set(&j.e, "the compile helper got a malformed request of %zu bytes (is " CUT_WORKER_ENV
                          " a cutune-worker of another build?)", req.len);
    } else if ((uint64_t)getppid() != q.parent) {
        cut_err_set(&j.e, "the process that asked for this compile is gone");
    } else {
        j.src = q.src, j.name = q.name, j.o = &q.o;
        pthread_attr_t attr;
        pthread_t th;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 16u << 20); /* NVRTC recurses deeply on large unrolled kernels */
        if (pthread_create(&th, &attr, compile_thread, &j) != 0)
            cut_err_set(&j.e, "the compile helper could not start its compile thread");
        else
            pthread_join(th, NULL);
        pthread_attr_destroy(&attr);
    }
    close(in_fd);
    cut_buf b;
    cut_buf_init(&b);
    reply_encode(&j, &b);
    const int sent = cut_child_send(out_fd, b.data, b.len, NULL, 0);
    close(out_fd);
    cut_buf_free(&b);
    cut_buf_free(&req);
    cut_compiled_free(&j.out);
    request_free(&q);
    return sent == 0 ? 0 : 5;
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

/* The request in a file of its own, read from its start: an anonymous memory file (a temporary file where the kernel
 * has none). The helper reads it at its own pace, so a request larger than a pipe holds never blocks the parent
 * against a helper that has not started reading yet, or never will (it died, or hangs). The descriptor
 * (close-on-exec), or -1 with e. */
static int request_file(const cut_buf *b, cut_err *e)
{
    int fd = memfd_create("cutune-compile-request", MFD_CLOEXEC);
    if (fd < 0) {
        const char *tmp = getenv("TMPDIR");
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/cutune-compile-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        fd = mkostemp(path, O_CLOEXEC);
        if (fd >= 0)
            unlink(path);
    }
    if (fd < 0)
        return cut_err_set(e, "a file for a compile request: %s", strerror(errno));
    for (size_t off = 0; off < b->len;) {
        const ssize_t k = write(fd, b->data + off, b->len - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            const int err = k < 0 ? errno : EIO;
            close(fd);
            return cut_err_set(e, "writing a compile request: %s", strerror(err));
        }
        off += (size_t)k;
    }
    if (lseek(fd, 0, SEEK_SET) != 0) {
        const int err = errno;
        close(fd);
        return cut_err_set(e, "rewinding a compile request: %s", strerror(err));
    }
    return fd;
}

/* *fd moved above REPLY_FD (close-on-exec), so that the spawn's two dup2s, onto 0 and REPLY_FD, neither overwrite
 * one another's source nor meet a descriptor equal to its target (whose close-on-exec flag dup2 leaves set). 0, or
 * -1 with errno set (*fd closed). */
static int above_reply_fd(int *fd)
{
    if (*fd > REPLY_FD)
        return 0;
    const int k = fcntl(*fd, F_DUPFD_CLOEXEC, REPLY_FD + 1), err = errno;
    close(*fd);
    *fd = k;
    errno = err;
    return k < 0 ? -1 : 0;
}

/* Starts `worker __worker compile 0 REPLY_FD` with posix_spawn: stdin the request file, REPLY_FD the reply pipe,
 * every other descriptor of this process's left behind (close-on-exec, and closed from REPLY_FD + 1 where the C
 * library can), every signal at its default and none blocked, whatever the calling thread had set. 0 with *pid, or
 * an errno. */
static int spawn_helper(const char *worker, int req_fd, int reply_fd, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc != 0)
        return rc;
    if ((rc = posix_spawnattr_init(&at)) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return rc;
    }
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    rc = posix_spawn_file_actions_adddup2(&fa, req_fd, 0);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&fa, reply_fd, REPLY_FD);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    if (rc == 0)
        rc = posix_spawn_file_actions_addclosefrom_np(&fa, REPLY_FD + 1);
#endif
    if (rc == 0)
        rc = posix_spawnattr_setsigmask(&at, &none);
    if (rc == 0)
        rc = posix_spawnattr_setsigdefault(&at, &all);
    if (rc == 0)
        rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char word[] = "__worker", mode[] = "compile", in[] = "0", out[] = "3";
    char *argv[] = {(char *)worker, word, mode, in, out, NULL};
    if (rc == 0)
        rc = posix_spawn(pid, worker, &fa, &at, argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* The helper pid started at t0: its reply read from fd until the pipe's end or t0 + limit_s (then it is killed),
 * the helper reaped, out filled as cut_compile_isolated says. 0, or -1 with e (the helper's setup error). */
static int collect(int pid, int fd, double t0, double limit_s, cut_compiled *out, cut_err *e)
{
    cut_buf b;
    cut_buf_init(&b);
    const int ended = read_all(fd, limit_s > 0 ? t0 + limit_s : -1, &b);
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
        /* an exit with no reply at all, not a signal, is rather a helper that does not know the compile mode */
        const int silent = reaped && WIFEXITED(st) && b.len == 0;
        snprintf(why, sizeof why, "NVRTC crashed: its process ended with %s%s", how,
                 silent ? " before replying (is " CUT_WORKER_ENV " a cutune-worker of another build?)" : "");
        no_result(out, why);
        rc = 0;
    } else if (rc == 1) {
        rc = -1; /* the helper's setup error, in e */
    }
    cut_buf_free(&b);
    return rc;
}

/* Caller frees out with cut_compiled_free. */
int cut_compile_isolated(const char *src, const char *name, const cut_compile_opts *o, double limit_s,
                         cut_compiled *out, cut_err *e)
{
    cut_compiled_init(out);
    if (!src || !o)
        return cut_err_set(e, "cut_compile_isolated: NULL %s", src ? "options" : "source");
    /* a cached compile is a file read: no process for it (about 17 ms of spawn and exec each); NVRTC unusable (-1)
     * is the run's problem, not a candidate's */
    cut_compiled_free(out); /* cut_compile_lookup initialises it anew */
    const int hit = cut_compile_lookup(src, o, out, e);
    if (hit != 0)
        return hit > 0 ? 0 : -1;
    cut_compiled_free(out);
    cut_compiled_init(out);
    char worker[PATH_MAX];
    if (cut_worker_path(worker, sizeof worker, e) != 0)
        return cut_err_wrap(e, "a compile runs in the cutune-worker executable");
    cut_buf req;
    cut_buf_init(&req);
    request_encode(src, name, o, &req);
    int fd = request_file(&req, e), p[2] = {-1, -1};
    cut_buf_free(&req);
    if (fd < 0)
        return -1;
    if (above_reply_fd(&fd) != 0 || pipe2(p, O_CLOEXEC) != 0 || above_reply_fd(&p[1]) != 0) {
        const int err = errno;
        close(fd), close(p[0]), close(p[1]);
        return cut_err_set(e, "descriptors for a compile process: %s", strerror(err));
    }
    const double t0 = cut_now_s();
    pid_t pid = 0;
    const int err = spawn_helper(worker, fd, p[1], &pid);
    close(fd);
    close(p[1]);
    if (err != 0) {
        close(p[0]);
        return cut_err_set(e, "cannot start the compile process %s: %s", worker, strerror(err));
    }
    const int rc = collect(pid, p[0], t0, limit_s, out, e);
    close(p[0]);
    return rc;
}
