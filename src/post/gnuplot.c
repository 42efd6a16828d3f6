/* cutune — report: finding and running gnuplot (fork + exec, never a shell). */
#include "cutune/report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int cut_gnuplot_find(char *buf, size_t n)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        return 0;
    while (*path) {
        size_t len = strcspn(path, ":");
        struct stat st;
        int w = snprintf(buf, n, "%.*s/gnuplot", (int)len, len ? path : ".");
        if (len > 0 && w > 0 && (size_t)w < n && stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
            access(buf, X_OK) == 0)
            return 1;
        path += len + (path[len] == ':');
    }
    return 0;
}

/* Child side: stdin and stdout from/to /dev/null, stderr into errfd, working directory dir. Never returns. */
static void child_exec(const char *dir, int errfd, char *const argv[])
{
    int null = open("/dev/null", O_RDWR);
    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(errfd, 2) < 0)
        _exit(126);
    if (dir && chdir(dir) != 0) {
        dprintf(2, "cannot enter '%s': %s\n", dir, strerror(errno));
        _exit(126);
    }
    execv(argv[0], argv);
    dprintf(2, "cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Runs argv in dir; collects its standard error into err (NUL-terminated) and its wait status. */
static int run_capture(const char *dir, char *const argv[], cut_buf *err, int *status, cut_err *e)
{
    int fds[2];
    if (pipe(fds) != 0)
        return cut_err_set(e, "cannot create a pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return cut_err_set(e, "cannot start '%s': %s", argv[0], strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        child_exec(dir, fds[1], argv);
    }
    close(fds[1]);
    char chunk[4096];
    ssize_t got;
    while ((got = read(fds[0], chunk, sizeof chunk)) != 0) {
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            break;
        if (err->len < 64 * 1024)
            cut_buf_append(err, chunk, (size_t)got);
    }
    close(fds[0]);
    cut_buf_append(err, "", 1);
    err->len--;
    while (waitpid(pid, status, 0) < 0)
        if (errno != EINTR)
            return cut_err_set(e, "cannot wait for '%s': %s", argv[0], strerror(errno));
    return 0;
}

const char *cut_gnuplot_png_term(const char *gnuplot)
{
    char *argv[] = {(char *)gnuplot, "-e", "set terminal pngcairo", NULL};
    cut_buf err;
    cut_err e;
    int status = -1;
    cut_buf_init(&err);
    int rc = run_capture(NULL, argv, &err, &status, &e);
    cut_buf_free(&err);
    return rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "pngcairo" : "png";
}

int cut_gnuplot_run(const char *gnuplot, const char *dir, const char *script, cut_err *e)
{
    char *argv[] = {(char *)gnuplot, (char *)script, NULL};
    cut_buf err;
    int status = -1;
    cut_buf_init(&err);
    if (run_capture(dir, argv, &err, &status, e) != 0) {
        cut_buf_free(&err);
        return -1;
    }
    int rc = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        while (err.len > 0 && (err.data[err.len - 1] == '\n' || err.data[err.len - 1] == ' '))
            err.data[--err.len] = 0;
        char how[64];
        if (WIFEXITED(status))
            snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(status));
        else
            snprintf(how, sizeof how, "signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : -1);
        rc = cut_err_set(e, "gnuplot failed on %s/%s (%s): %.700s", dir ? dir : ".", script, how,
                         err.len ? err.data : "(no output on stderr)");
    }
    cut_buf_free(&err);
    return rc;
}
