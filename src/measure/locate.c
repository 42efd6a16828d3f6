/* cutune — where the measurement worker executable is (cut_worker_path, cutune/measure.h).
 *
 * The runners fork+exec `<worker> __worker <dev> <in_fd> <out_fd>`. The cutune CLI passes itself; a program that
 * uses the library finds cutune-worker here, without /proc: $CUTUNE_WORKER, then next to the running executable
 * (the build tree, or a bin/ that holds both), then relative to the library (a relocated install), then the install
 * location compiled in. The Triton worker (tools/triton_worker.py, a Python script) is looked for the same way
 * (cut_triton_worker_path, $CUTUNE_TRITON_WORKER). */
#define _GNU_SOURCE /* dladdr */
#include "measure/locate.h"
#include "cutune/measure.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CUTUNE_WORKER_INSTALLED /* CMake sets both: <libexecdir>/cutune/cutune-worker, and relative to <libdir> */
#define CUTUNE_WORKER_INSTALLED "/usr/local/libexec/cutune/cutune-worker"
#endif
#ifndef CUTUNE_WORKER_FROM_LIBDIR
#define CUTUNE_WORKER_FROM_LIBDIR "../libexec/cutune/cutune-worker"
#endif
#ifndef CUTUNE_TRITON_WORKER_INSTALLED /* the Triton worker beside cutune-worker */
#define CUTUNE_TRITON_WORKER_INSTALLED "/usr/local/libexec/cutune/triton_worker.py"
#endif

#define WORKER_NAME "cutune-worker"

/* 0 when path is a regular file we may access with mode (X_OK, R_OK), else -1 with errno set. */
static int regular_file(const char *path, int mode)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    if (!S_ISREG(st.st_mode)) {
        errno = EISDIR;
        return -1;
    }
    return access(path, mode);
}

static int executable_file(const char *path) { return regular_file(path, X_OK); }

int cut_worker_path_search(const char *env, const char *const *cands, int ncand, char *buf, size_t n, cut_err *e)
{
    if (env && *env) {
        if (executable_file(env) != 0)
            return cut_err_set(e, "%s=%s is not an executable file: %s", CUT_WORKER_ENV, env,
                               errno == EISDIR ? "not a regular file" : strerror(errno));
        if (snprintf(buf, n, "%s", env) >= (int)n)
            return cut_err_set(e, "%s=%s: path too long", CUT_WORKER_ENV, env);
        return 0;
    }
    char tried[CUT_ERR_LEN / 2] = "";
    size_t used = 0;
    for (int i = 0; i < ncand; i++) {
        if (!cands[i] || !*cands[i])
            continue;
        if (executable_file(cands[i]) == 0 && snprintf(buf, n, "%s", cands[i]) < (int)n)
            return 0;
        if (used < sizeof tried) {
            int k = snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "", cands[i]);
            used += k > 0 ? (size_t)k : 0;
        }
    }
    return cut_err_set(e,
                       "no measurement worker found: set %s to the path of the " WORKER_NAME
                       " executable (installed with cutune; tried: %s)",
                       CUT_WORKER_ENV, used ? tried : "nothing");
}

/* dir/name into out; "" when dir is unknown or the result does not fit. */
static void join(char *out, size_t n, const char *dir, const char *name)
{
    if (!dir || !*dir || snprintf(out, n, "%s/%s", dir, name) >= (int)n)
        out[0] = '\0';
}

/* The folder of path (resolved to an absolute, symlink-free path) into out; "" when it cannot be resolved. */
static void folder_of(const char *path, char *out)
{
    char real[PATH_MAX];
    out[0] = '\0';
    if (!path || !*path || !realpath(path, real))
        return;
    char *slash = strrchr(real, '/');
    if (!slash)
        return;
    *slash = '\0';
    snprintf(out, PATH_MAX, "%s", slash == real ? "/" : real);
}

int cut_worker_path(char *buf, size_t n, cut_err *e)
{
    /* the running executable as the kernel exec'd it (AT_EXECFN: no /proc needed) */
    char exe_dir[PATH_MAX], lib_dir[PATH_MAX];
    folder_of((const char *)getauxval(AT_EXECFN), exe_dir);
    /* the object that holds this code: libcutune.so, or the executable that linked libcutune.a */
    Dl_info info;
    lib_dir[0] = '\0';
    if (dladdr((void *)cut_worker_path, &info) && info.dli_fname && info.dli_fname[0] == '/')
        folder_of(info.dli_fname, lib_dir);
    char next_to_exe[PATH_MAX + 32], from_lib[2 * PATH_MAX];
    join(next_to_exe, sizeof next_to_exe, exe_dir, WORKER_NAME);
    join(from_lib, sizeof from_lib, lib_dir, CUTUNE_WORKER_FROM_LIBDIR);
    const char *cands[] = {next_to_exe, from_lib, CUTUNE_WORKER_INSTALLED};
    return cut_worker_path_search(getenv(CUT_WORKER_ENV), cands, (int)CUT_ARRAY_LEN(cands), buf, n, e);
}


int cut_triton_worker_path(char *buf, size_t n, cut_err *e)
{
    const char *env = getenv("CUTUNE_TRITON_WORKER");
    if (env && *env) {
        if (regular_file(env, R_OK) != 0)
            return cut_err_set(e, "CUTUNE_TRITON_WORKER=%s is not a readable file: %s", env,
                               errno == EISDIR ? "not a regular file" : strerror(errno));
        return snprintf(buf, n, "%s", env) < (int)n ? 0 : cut_err_set(e, "CUTUNE_TRITON_WORKER: path too long");
    }
    char exe_dir[PATH_MAX], next_to_exe[PATH_MAX + 32], up[PATH_MAX + 64];
    folder_of((const char *)getauxval(AT_EXECFN), exe_dir);
    join(next_to_exe, sizeof next_to_exe, exe_dir, "triton_worker.py");
    join(up, sizeof up, exe_dir, "../libexec/cutune/triton_worker.py");
    const char *cands[] = {next_to_exe, up, CUTUNE_TRITON_WORKER_INSTALLED};
    for (size_t i = 0; i < CUT_ARRAY_LEN(cands); i++)
        if (*cands[i] && regular_file(cands[i], R_OK) == 0 && snprintf(buf, n, "%s", cands[i]) < (int)n)
            return 0;
    return cut_err_set(e, "no Triton worker found: set CUTUNE_TRITON_WORKER to tools/triton_worker.py (tried %s, %s, "
                          "%s)", next_to_exe, up, CUTUNE_TRITON_WORKER_INSTALLED);
}
