/* cutune — a Triton worker process (internal): its environment, its start and the reading of its reply lines,
 * shared by the Triton runner (triton_runner.c: the measuring worker) and its compile pool (triton_ahead.c: the
 * compile-only workers that compile variants ahead into the same Triton cache). */
#ifndef CUTUNE_MEASURE_TRITON_PROC_H
#define CUTUNE_MEASURE_TRITON_PROC_H

#include "cutune/util.h"

#include <stddef.h>

/* Starts argv (argv[0]: the Python) with pipes on its stdin and stdout and its stderr appended to log_path, in our
 * environment without TRITON_INTERPRET and CUTUNE_TRITON_CACHE_DIR, then CUTUNE_TRITON_CACHE_DIR=<cache_dir>/triton
 * and TRITON_INTERPRET=1 when interp, else 0. 0 with *pid, *to_w (its stdin) and *from_w (its stdout); -1 with e. */
int cut_tr_spawn(char *const argv[], const char *cache_dir, int interp, const char *log_path, int *pid, int *to_w,
                 int *from_w, cut_err *e);

/* Bytes read from a worker, handed out a line at a time. Zeroed is empty; cut_tr_lines_free frees it. */
typedef struct cut_tr_lines {
    char *buf;              /* len bytes read, the first skip already handed out */
    size_t len, cap, skip;
} cut_tr_lines;

/* The next whole line (NUL-terminated, valid until the next call on lb): 1 with *line, 0 when none is whole yet. */
int cut_tr_lines_next(cut_tr_lines *lb, char **line);
/* Reads what fd has (one read). >0: bytes read; 0: end of file; -1: error (errno; EINTR and EAGAIN included);
 * -2: a line longer than max bytes. */
long cut_tr_lines_read(cut_tr_lines *lb, int fd, size_t max);
void cut_tr_lines_reset(cut_tr_lines *lb);
void cut_tr_lines_free(cut_tr_lines *lb);

#endif
