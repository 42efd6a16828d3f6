/* cutune — a compile in a child process of its own (internal header).
 *
 * NVRTC runs inside the process that calls it: a compiler that crashes takes the process with it, and one that runs
 * away holds its thread forever. The compile runner (cut_runner_compile_new), which serving ranks of an MPI job use,
 * compiles each candidate in a forked child instead, so that such a compile costs only that candidate, as a fault
 * in a kernel costs only a worker process. */
#ifndef CUTUNE_MEASURE_COMPILE_CHILD_H
#define CUTUNE_MEASURE_COMPILE_CHILD_H

#include "cutune/compile.h"

/* cut_compile_one in a child process (fork, no exec): a child that dies, or runs past limit_s seconds (<= 0: no
 * limit; it is killed then), leaves out->ok = 0 with a log that says so ("NVRTC crashed: signal 11: Segmentation
 * fault"), as a compile error would. The child writes the disk cache as cut_compile_one does. 0 whether or not the
 * source compiled; -1 for setup errors (NVRTC unusable, no child process), with e. Caller frees out with
 * cut_compiled_free (also after -1). */
int cut_compile_isolated(const char *src, const char *name, const cut_compile_opts *o, double limit_s,
                         cut_compiled *out, cut_err *e);

#endif
