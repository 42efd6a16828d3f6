/* cutune tests — shared helpers (header-only). */
#ifndef CUTUNE_TESTUTIL_H
#define CUTUNE_TESTUTIL_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A fresh directory for one test: $CUTUNE_TEST_TMP/<name>.<pid> (or /tmp). Caller frees. */
static inline char *tu_tmpdir(const char *name)
{
    const char *base = getenv("CUTUNE_TEST_TMP");
    if (!base)
        base = "/tmp";
    char *p = malloc(4096);
    snprintf(p, 4096, "%s/%s.%d", base, name, (int)getpid());
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", p, p);
    if (system(cmd) != 0) {
        free(p);
        return NULL;
    }
    return p;
}

/* Forks a child that runs child(ready_fd, arg) with the default action for every signal that ends a process (as in an
 * interactive run: ctest or a non-interactive shell may have left SIGINT ignored, and the restore sessions leave
 * ignored signals alone) and waits until it writes one byte to ready_fd. Returns its pid, or -1 when it died before
 * it was ready (said on stderr with what). child must not return. */
static inline pid_t tu_fork_ready(void (*child)(int ready_fd, long arg), long arg, const char *what)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        const int dfl[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
        for (size_t i = 0; i < sizeof dfl / sizeof dfl[0]; i++)
            signal(dfl[i], SIG_DFL);
        close(fds[0]);
        child(fds[1], arg);
        _exit(99);
    }
    close(fds[1]);
    char c = 0;
    const ssize_t k = read(fds[0], &c, 1);
    close(fds[0]);
    if (k != 1) {
        int status = 0;
        waitpid(pid, &status, 0);
        fprintf(stderr, "%s child failed: exit %d\n", what, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return -1;
    }
    return pid;
}

/* tu_fork_ready's child, then sig sent to it and the child reaped: its wait status, or -1. */
static inline int tu_signal_child(void (*child)(int ready_fd, long arg), long arg, int sig, const char *what)
{
    const pid_t pid = tu_fork_ready(child, arg, what);
    int status = 0;
    if (pid < 0 || kill(pid, sig) != 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return status;
}

/* 1 when the tests should be quick (sanitizer builds): fewer random cases. */
/* Replaces the first occurrence of from in the malloc'd string *src with to (a planted bug in generated code). 0, or
 * -1 when from does not occur (*src unchanged). */
static inline int tu_replace_first(char **src, const char *from, const char *to)
{
    char *at = strstr(*src, from);
    if (!at)
        return -1;
    const size_t pre = (size_t)(at - *src), fl = strlen(from), tl = strlen(to), rest = strlen(at + fl);
    char *s = malloc(pre + tl + rest + 1);
    if (!s)
        return -1;
    memcpy(s, *src, pre);
    memcpy(s + pre, to, tl);
    memcpy(s + pre + tl, at + fl, rest + 1);
    free(*src);
    *src = s;
    return 0;
}

static inline int tu_quick(void)
{
    const char *q = getenv("CUTUNE_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

#endif
