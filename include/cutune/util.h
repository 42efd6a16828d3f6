/* cutune — file-system and string helpers shared by every component. */
#ifndef CUTUNE_UTIL_H
#define CUTUNE_UTIL_H

#include "cutune/common.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* mkdir -p. Returns 0, or -1 with a sentence naming the path. */
int cut_mkdirs(const char *path, cut_err *e);
/* A folder code is loaded from (a compile cache): created if absent (cut_mkdirs), then refused unless it is a real
 * folder (not a symbolic link), owned by the effective user and writable by no one else. 0, or -1 with a sentence
 * naming the folder and what is wrong. */
int cut_private_dir(const char *path, cut_err *e);
/* The per-user cache folder, $XDG_CACHE_HOME/cutune (else $HOME/.cache/cutune), created mode 0700 and checked by
 * cut_private_dir, into buf. 0, or -1 with e. */
int cut_default_cache_dir(char *buf, size_t n, cut_err *e);
/* Its path only (nothing created or checked), into buf. 0, or -1 with e (neither variable is an absolute path). */
int cut_default_cache_path(char *buf, size_t n, cut_err *e);
/* Checks that dir exists (or can be created) and that a file can be created in it. */
int cut_check_writable_dir(const char *dir, cut_err *e);
/* Reads a whole regular file of at most max bytes (a device, a FIFO or a folder is refused: /dev/zero would never
 * end). Caller frees *out (NUL-terminated). 0, or -1 with a sentence naming the file. */
int cut_read_regular_file(const char *path, size_t max, char **out, size_t *len, cut_err *e);
/* Reads a whole file. Caller frees *out (NUL-terminated; *len excludes the NUL). */
int cut_read_file(const char *path, char **out, size_t *len, cut_err *e);
/* Writes a whole file atomically (tmp file + fsync + rename). */
int cut_write_file_atomic(const char *path, const void *data, size_t len, cut_err *e);
/* 1 if the path exists, else 0. */
int cut_path_exists(const char *path);
/* snprintf into buf; returns -1 with e set if truncated. */
int cut_path_join(char *buf, size_t n, const char *a, const char *b, cut_err *e);
/* Runs argv (PATH lookup) with stdin from /dev/null, stdout to out_path (NULL: /dev/null) and stderr to err_path (the
 * same path: one file for both). Returns the exit status, or -1 with e when it could not run or died of a signal. */
int cut_run_tool(char **argv, const char *out_path, const char *err_path, cut_err *e);
/* The same, killed with its process group (its children too) after timeout_s seconds (<= 0: no limit): then -1 with
 * a sentence saying so. err_path NULL: /dev/null. */
int cut_run_tool_timeout(char **argv, const char *out_path, const char *err_path, double timeout_s, cut_err *e);
/* A CUDA tool by name: $CUDA_HOME/bin/NAME, /usr/local/cuda/bin/NAME, else the first on PATH. buf, or NULL when
 * none is executable. */
const char *cut_find_cuda_tool(const char *name, char *buf, size_t n);

/* Growable string buffer. init/free pair; free of a zeroed buffer is a no-op. */
typedef struct cut_buf {
    char *data;
    size_t len, cap;
} cut_buf;
void cut_buf_init(cut_buf *b);
void cut_buf_free(cut_buf *b);
/* Appends formatted text; aborts on out-of-memory (the only exit outside main: OOM is not recoverable). */
void cut_buf_printf(cut_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cut_buf_append(cut_buf *b, const void *data, size_t n);

/* malloc/calloc/realloc that abort with a message on failure. */
/* Calls fn(arg, i) for every i in [0, n), handing the items out one at a time to up to min(online CPUs, n, 256)
 * threads (the caller's included); one thread when work (the caller's estimate of operations) is under 1e6, where a
 * thread start (~20 us) costs more than it saves. Returns when all are done. */
void cut_parallel_for(long n, double work, void (*fn)(void *arg, long i), void *arg);

/* dlopen (RTLD_NOW | RTLD_LOCAL) of $env_var when it is set and non-empty, else of default_lib; *lib = the name
 * tried. NULL with "<what> unavailable: <lib> could not be loaded (<dlerror>)<hint>" in e. */
void *cut_dlopen(const char *env_var, const char *default_lib, const char *what, const char *hint, const char **lib,
                 cut_err *e);

void *cut_xmalloc(size_t n);
void *cut_xcalloc(size_t n, size_t size);
void *cut_xrealloc(void *p, size_t n);
char *cut_xstrdup(const char *s);

/* ---- inputs and checks (src/core/numeric.c) ---- */

/* Fills a tensor with uniform random values in [-1, 1) from seed. */
void cut_fill_uniform(float *x, size_t n, uint64_t seed);
/* The seed of input set s (0 or 1) of a workload prepared from seed: set 0 is seed itself (the inputs every earlier
 * version drew), set 1 a different stream, for the fresh inputs a candidate is checked on again after timing. */
uint64_t cut_input_set_seed(uint64_t seed, int s);
/* Compares out with ref: atol + rtol*|ref|, NaN/Inf never passes. Returns the number of mismatches and fills
 * msg with the first few (index, got, want). */
size_t cut_compare(const float *out, const double *ref, size_t n, double atol, double rtol, double *max_abs_err,
                   char *msg, size_t msg_len);

/* Removes path and everything below it without following symbolic links (src/core/fs.c). Adds the number of entries
 * removed to *count (may be NULL). */
int cut_remove_tree(const char *path, long *count, cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
