/* cutune — file-system helpers and a growable buffer. */
#include "cutune/util.h"
#include "cutune/log.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <spawn.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>

static void oom(size_t n)
{
    cut_log(CUT_LOG_ERROR, "cutune: out of memory (allocating %zu bytes)\n", n);
    abort();
}

void *cut_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *cut_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *cut_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *cut_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = cut_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

int cut_mkdirs(const char *path, cut_err *e)
{
    char tmp[4096];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof tmp)
        return cut_err_set(e, "invalid directory path '%s'", path);
    memcpy(tmp, path, len + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return cut_err_set(e, "cannot create directory '%s': %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return cut_err_set(e, "cannot create directory '%s': %s", tmp, strerror(errno));
    struct stat st;
    if (stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode))
        return cut_err_set(e, "'%s' exists and is not a directory", tmp);
    return 0;
}

int cut_read_regular_file(const char *path, size_t max, char **out, size_t *len, cut_err *e)
{
    *out = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not block the open */
    if (fd < 0)
        return cut_err_set(e, "cannot read '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return cut_err_set(e, "'%s' is not a regular file", path);
    }
    if ((unsigned long long)st.st_size > (unsigned long long)max) {
        close(fd);
        return cut_err_set(e, "'%s' is %lld bytes, over the %zu-byte limit", path, (long long)st.st_size, max);
    }
    close(fd);
    if (cut_read_file(path, out, len, e) != 0)
        return -1;
    if (*len > max) { /* it grew in between */
        free(*out);
        *out = NULL;
        return cut_err_set(e, "'%s' is over the %zu-byte limit", path, max);
    }
    return 0;
}

int cut_private_dir(const char *path, cut_err *e)
{
    if (cut_mkdirs(path, e) != 0)
        return -1;
    struct stat st;
    if (lstat(path, &st) != 0)
        return cut_err_set(e, "cannot stat '%s': %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cut_err_set(e, "cache folder '%s' is a symbolic link or not a folder: refusing to load code from it",
                           path);
    if (st.st_uid != geteuid())
        return cut_err_set(e, "cache folder '%s' belongs to uid %ld, not to you (uid %ld): refusing to load code "
                           "from it (another user could plant a library there); give a folder of your own",
                           path, (long)st.st_uid, (long)geteuid());
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return cut_err_set(e, "cache folder '%s' is writable by %s (mode %03o): refusing to load code from it "
                           "(chmod go-w it, or give a folder of your own)", path,
                           (st.st_mode & S_IWOTH) ? "every user" : "its group", (unsigned)(st.st_mode & 0777));
    return 0;
}

int cut_default_cache_path(char *buf, size_t n, cut_err *e)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int len;
    if (xdg && xdg[0] == '/')
        len = snprintf(buf, n, "%s/cutune", xdg);
    else if (home && home[0] == '/')
        len = snprintf(buf, n, "%s/.cache/cutune", home);
    else
        return cut_err_set(e, "no cache folder: neither XDG_CACHE_HOME nor HOME is an absolute path");
    if (len < 0 || (size_t)len >= n)
        return cut_err_set(e, "cache folder path too long");
    return 0;
}

int cut_default_cache_dir(char *buf, size_t n, cut_err *e)
{
    if (cut_default_cache_path(buf, n, e) != 0)
        return -1;
    if (cut_mkdirs(buf, e) != 0)
        return -1;
    (void)chmod(buf, 0700); /* ours: only we read and write it */
    return cut_private_dir(buf, e);
}

int cut_check_writable_dir(const char *dir, cut_err *e)
{
    if (cut_mkdirs(dir, e) != 0)
        return -1;
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/.cutune_write_probe.%d", dir, (int)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return cut_err_set(e, "output folder '%s' is not writable: %s", dir, strerror(errno));
    close(fd);
    unlink(probe);
    return 0;
}

int cut_read_file(const char *path, char **out, size_t *len, cut_err *e)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return cut_err_set(e, "cannot open '%s': %s", path, strerror(errno));
    cut_buf b;
    cut_buf_init(&b);
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        cut_buf_append(&b, chunk, got);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        cut_buf_free(&b);
        return cut_err_set(e, "cannot read '%s'", path);
    }
    cut_buf_append(&b, "", 0); /* ensures a NUL-terminated allocation even when empty */
    *out = b.data;
    if (len)
        *len = b.len;
    return 0;
}

int cut_write_file_atomic(const char *path, const void *data, size_t len, cut_err *e)
{
    char tmp[4096];
    /* mkstemp: unique per call, so concurrent writers (threads or processes) never share a temporary file. */
    if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp)
        return cut_err_set(e, "path too long: '%s'", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return cut_err_set(e, "cannot create '%s': %s", tmp, strerror(errno));
    fchmod(fd, 0644);
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            int err = errno;
            close(fd);
            unlink(tmp);
            return cut_err_set(e, "cannot write '%s': %s", tmp, strerror(err));
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        unlink(tmp);
        return cut_err_set(e, "cannot flush '%s': %s", tmp, strerror(errno));
    }
    if (rename(tmp, path) != 0) {
        int err = errno;
        unlink(tmp);
        return cut_err_set(e, "cannot rename '%s' to '%s': %s", tmp, path, strerror(err));
    }
    return 0;
}

int cut_path_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int cut_path_join(char *buf, size_t n, const char *a, const char *b, cut_err *e)
{
    int w = snprintf(buf, n, "%s/%s", a, b);
    if (w < 0 || (size_t)w >= n)
        return cut_err_set(e, "path too long: '%s/%s'", a, b);
    return 0;
}

void cut_buf_init(cut_buf *b) { memset(b, 0, sizeof *b); }

void cut_buf_free(cut_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

static void buf_reserve(cut_buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    b->data = cut_xrealloc(b->data, cap);
    b->cap = cap;
}

void cut_buf_append(cut_buf *b, const void *data, size_t n)
{
    buf_reserve(b, n);
    if (n)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = 0;
}

void cut_buf_printf(cut_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0)
        return;
    buf_reserve(b, (size_t)need);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)need + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)need;
}

/* ---- parallel for ---- */

typedef struct par_job {
    long n, next;
    void (*fn)(void *arg, long i);
    void *arg;
    pthread_mutex_t mu;
} par_job;

static void *par_worker(void *arg)
{
    par_job *j = arg;
    for (;;) {
        pthread_mutex_lock(&j->mu);
        long i = j->next < j->n ? j->next++ : -1;
        pthread_mutex_unlock(&j->mu);
        if (i < 0)
            return NULL;
        j->fn(j->arg, i);
    }
}

void cut_parallel_for(long n, double work, void (*fn)(void *arg, long i), void *arg)
{
    par_job j = {.n = n, .next = 0, .fn = fn, .arg = arg};
    pthread_mutex_init(&j.mu, NULL);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1 || work < 1e6)
        ncpu = 1;
    int nt = (int)CUT_MIN(CUT_MIN(ncpu, n), 256L);
    pthread_t tids[256];
    int started = 0;
    for (int i = 1; i < nt; i++) {
        if (pthread_create(&tids[started], NULL, par_worker, &j) != 0)
            break; /* fewer threads is still correct */
        started++;
    }
    par_worker(&j);
    for (int i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    pthread_mutex_destroy(&j.mu);
}

void *cut_dlopen(const char *env_var, const char *default_lib, const char *what, const char *hint, const char **lib,
                 cut_err *e)
{
    const char *env = env_var ? getenv(env_var) : NULL;
    *lib = (env && *env) ? env : default_lib;
    void *h = dlopen(*lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        cut_err_set(e, "%s unavailable: %s could not be loaded (%s)%s", what, *lib, why ? why : "unknown reason",
                    hint ? hint : "");
    }
    return h;
}

extern char **environ;

int cut_run_tool(char **argv, const char *out_path, const char *err_path, cut_err *e)
{
    return cut_run_tool_timeout(argv, out_path, err_path, 0, e);
}

int cut_run_tool_timeout(char **argv, const char *out_path, const char *err_path, double timeout_s, cut_err *e)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out_path && err_path && strcmp(out_path, err_path) == 0)
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
    else
        posix_spawn_file_actions_addopen(&fa, 2, err_path ? err_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC,
                                         0644);
    /* a group of its own when it may be killed: the tool's children (a profiled program) go with it */
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    if (timeout_s > 0) {
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
        posix_spawnattr_setpgroup(&at, 0);
    }
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0)
        return cut_err_set(e, "cannot run '%s': %s (is it installed?)", argv[0], strerror(rc));
    int st = 0;
    const double deadline = timeout_s > 0 ? cut_now_s() + timeout_s : 0;
    for (;;) {
        const pid_t w = waitpid(pid, &st, timeout_s > 0 ? WNOHANG : 0);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return cut_err_set(e, "waitpid(%s): %s", argv[0], strerror(errno));
        if (w == 0 && cut_now_s() > deadline) {
            kill(-pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            return cut_err_set(e, "'%s' did not finish in %g s and was killed", argv[0], timeout_s);
        }
        if (w == 0)
            nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    }
    if (!WIFEXITED(st))
        return cut_err_set(e, "'%s' died of signal %d", argv[0], WIFSIGNALED(st) ? WTERMSIG(st) : -1);
    return WEXITSTATUS(st);
}

const char *cut_find_cuda_tool(const char *name, char *buf, size_t n)
{
    const char *home = getenv("CUDA_HOME");
    const char *dirs[] = {home && home[0] ? home : NULL, "/usr/local/cuda"};
    for (int d = 0; d < 2; d++) {
        if (!dirs[d])
            continue;
        snprintf(buf, n, "%s/bin/%s", dirs[d], name);
        if (access(buf, X_OK) == 0)
            return buf;
    }
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p;) {
        const size_t len = strcspn(p, ":");
        snprintf(buf, n, "%.*s/%s", (int)len, p, name);
        if (len && access(buf, X_OK) == 0)
            return buf;
        p += len + (p[len] == ':');
    }
    return NULL;
}
