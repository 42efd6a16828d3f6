/* cutune — a compile in a child process of its own (internal header).
 *
 * NVRTC runs inside the process that calls it: a compiler that crashes takes the process with it, and one that runs
 * away holds its thread forever. The compile runner (cut_runner_compile_new), which serving ranks of an MPI job use,
 * compiles each candidate in a process of its own instead, so that such a compile costs only that candidate, as a
 * fault in a kernel costs only a worker process. That process is the measurement worker executable (cut_worker_path:
 * $CUTUNE_WORKER, cutune-worker beside the running executable, the installed one) in its compile mode, started with
 * posix_spawn: a fresh image, never a fork of this many-threaded process (a fork's child inherits any lock another
 * thread held at the fork, the dynamic loader's among them, and can wait for it forever). */
#ifndef CUTUNE_MEASURE_COMPILE_CHILD_H
#define CUTUNE_MEASURE_COMPILE_CHILD_H

#include "cutune/compile.h"

/* cut_compile_one in a process of its own (`<worker> __worker compile 0 3`, see above; safe to call from many
 * threads at once): a process that dies, or runs past limit_s seconds (<= 0: no limit; it is killed then), leaves
 * out->ok = 0 with a log that says so ("NVRTC crashed: its process ended with signal 11: Segmentation fault", "NVRTC
 * did not finish within 300 s: the compile was killed"), as a compile error would. The process writes the disk cache
 * as cut_compile_one does. 0 whether or not the source compiled; -1 for setup errors, with e: NVRTC unusable, no
 * worker executable found (the sentence names CUTUNE_WORKER and the paths tried), no process started, the helper's
 * own setup error (cut_compile_one's -1, a request it could not read). A compile that o's disk cache holds is read
 * from it here, no process started. Caller frees out with cut_compiled_free (also after -1). */
int cut_compile_isolated(const char *src, const char *name, const cut_compile_opts *o, double limit_s,
                         cut_compiled *out, cut_err *e);

/* The helper's side (`cutune __worker compile <in_fd> <out_fd>`, cmd_worker.c): reads one request from in_fd to its
 * end, compiles it with cut_compile_one on a thread with a 16 MiB stack, writes the reply to out_fd and returns the
 * process's exit status (0 once the reply is written). */
int cut_compile_child_main(int in_fd, int out_fd);

#endif
