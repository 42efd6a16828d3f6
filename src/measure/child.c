/* cutune — a runner's worker process: waiting for it with a limit, and saying how it ended (measure/child.h). */
#include "measure/child.h"
#include "cutune/common.h"
#include "cutune/log.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

void cut_child_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int cut_child_wait(int pid, double limit_s, int *status)
{
    const double end = cut_now_s() + limit_s;
    for (;;) {
        pid_t k = waitpid(pid, status, WNOHANG);
        if (k == pid)
            return 1;
        if (k < 0 && errno != EINTR)
            return -1;
        if (cut_now_s() >= end)
            return 0;
        cut_child_sleep(0.005);
    }
}

void cut_child_describe(int status, char *buf, size_t n)
{
    if (WIFSIGNALED(status)) {
        const char *name = strsignal(WTERMSIG(status));
        snprintf(buf, n, "signal %d: %s", WTERMSIG(status), name ? name : "?");
    } else if (WIFEXITED(status)) {
        snprintf(buf, n, "exit status %d", WEXITSTATUS(status));
    } else {
        snprintf(buf, n, "wait status 0x%x", status);
    }
}

void cut_child_end(int *pid, int *to_w, int *from_w, int kill_now, double grace_s, double reap_s, const char *what,
                   char *how, size_t n)
{
    if (how && n)
        snprintf(how, n, "unknown status");
    if (!*pid)
        return;
    close(*to_w);
    close(*from_w);
    *to_w = *from_w = -1;
    int st = 0, r = 0;
    if (!kill_now)
        r = cut_child_wait(*pid, grace_s, &st);
    if (r == 0) {
        kill(*pid, SIGKILL);
        r = cut_child_wait(*pid, reap_s, &st);
        if (r == 0)
            cut_log(CUT_LOG_WARN, "cutune: %s %d did not exit %g s after SIGKILL\n", what, *pid, reap_s);
    }
    if (r == 1 && how)
        cut_child_describe(st, how, n);
    *pid = 0;
}

/* Writes all n bytes; 0, or -1 with errno set. */
static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        const ssize_t k = write(fd, p, n < ((size_t)1 << 30) ? n : (size_t)1 << 30);
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

int cut_child_send(int fd, const void *a, size_t na, const void *b, size_t nb)
{
    sigset_t pipe_set, old_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
    sigemptyset(&pending);
    sigpending(&pending);
    const int was_pending = sigismember(&pending, SIGPIPE);
    int rc = write_all(fd, a, na);
    if (rc == 0 && nb > 0)
        rc = write_all(fd, b, nb);
    const int err = rc ? errno : 0;
    if (err == EPIPE && !was_pending) {
        const struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old_set, NULL);
    return err;
}
