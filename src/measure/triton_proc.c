/* cutune — a Triton worker process: environment, start, reply lines (triton_proc.h). */
#define _GNU_SOURCE /* pipe2, execvpe */
#include "measure/triton_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* The worker's environment (see cut_tr_spawn). The array and its two added strings are malloc'd (free with
 * free_env); the inherited strings are environ's. */
static char **worker_env(const char *cache_dir, int interp)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = cut_xcalloc(n + 3, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "TRITON_INTERPRET=", 17) != 0 && strncmp(environ[i], "CUTUNE_TRITON_CACHE_DIR=", 24))
            env[k++] = environ[i];
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_printf(&b, "CUTUNE_TRITON_CACHE_DIR=%s/triton", cache_dir);
    env[k++] = b.data;
    env[k++] = cut_xstrdup(interp ? "TRITON_INTERPRET=1" : "TRITON_INTERPRET=0");
    return env;
}

static void free_env(char **env)
{
    size_t n = 0;
    while (env[n])
        n++;
    free(env[n - 1]);
    free(env[n - 2]);
    free(env);
}

/* Closes the ends of a pipe that are open (-1: not). */
static void close_pair(const int p[2])
{
    for (int i = 0; i < 2; i++)
        if (p[i] >= 0)
            close(p[i]);
}

int cut_tr_spawn(char *const argv[], const char *cache_dir, int interp, const char *log_path, int *pid, int *to_w,
                 int *from_w, cut_err *e)
{
    int p2c[2] = {-1, -1}, c2p[2] = {-1, -1};
    const int logfd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (logfd < 0)
        return cut_err_set(e, "cannot open the Triton worker's log %s: %s", log_path, strerror(errno));
    if (pipe2(p2c, O_CLOEXEC) != 0 || pipe2(c2p, O_CLOEXEC) != 0) {
        const int err = errno;
        close_pair(p2c);
        close_pair(c2p);
        close(logfd);
        return cut_err_set(e, "cannot create a pipe for the Triton worker: %s", strerror(err));
    }
    char **env = worker_env(cache_dir, interp);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t child = fork();
    if (child == 0) { /* async-signal-safe calls only until exec; dup2 clears close-on-exec on 0, 1, 2 */
        dup2(p2c[0], STDIN_FILENO);
        dup2(c2p[1], STDOUT_FILENO);
        dup2(logfd, STDERR_FILENO);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execvpe(argv[0], argv, env);
        _exit(127);
    }
    const int fork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    free_env(env);
    close(p2c[0]);
    close(c2p[1]);
    close(logfd);
    if (child < 0) {
        close(p2c[1]);
        close(c2p[0]);
        return cut_err_set(e, "cannot start the Triton worker: fork failed: %s", strerror(fork_errno));
    }
    *pid = (int)child;
    *to_w = p2c[1];
    *from_w = c2p[0];
    return 0;
}

int cut_tr_lines_next(cut_tr_lines *lb, char **line)
{
    if (lb->skip) {
        memmove(lb->buf, lb->buf + lb->skip, lb->len - lb->skip);
        lb->len -= lb->skip;
        lb->skip = 0;
    }
    char *nl = lb->len ? memchr(lb->buf, '\n', lb->len) : NULL;
    if (!nl)
        return 0;
    *nl = '\0';
    *line = lb->buf;
    lb->skip = (size_t)(nl - lb->buf) + 1;
    return 1;
}

long cut_tr_lines_read(cut_tr_lines *lb, int fd, size_t max)
{
    if (lb->len >= max)
        return -2;
    if (lb->cap - lb->len < 4096) {
        lb->cap = lb->cap ? 2 * lb->cap : 8192;
        lb->buf = cut_xrealloc(lb->buf, lb->cap);
    }
    const ssize_t got = read(fd, lb->buf + lb->len, lb->cap - lb->len - 1);
    if (got > 0)
        lb->len += (size_t)got;
    return got < 0 ? -1 : (long)got;
}

void cut_tr_lines_reset(cut_tr_lines *lb) { lb->len = lb->skip = 0; }

void cut_tr_lines_free(cut_tr_lines *lb)
{
    free(lb->buf);
    memset(lb, 0, sizeof *lb);
}
