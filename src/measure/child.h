/* cutune — a runner's worker process (internal): waiting for it with a limit, and saying how it ended. Shared by the
 * GPU and emulation runner (gpu_runner.c) and the Triton runner (triton_runner.c). */
#ifndef CUTUNE_MEASURE_CHILD_H
#define CUTUNE_MEASURE_CHILD_H

#include <stddef.h>

/* Sleeps s seconds (resumed after a signal). */
void cut_child_sleep(double s);
/* Waits for child pid up to limit_s. 1: reaped (*status set); 0: still running; -1: not our child (any more). */
int cut_child_wait(int pid, double limit_s, int *status);
/* Ends a worker: closes its pipes to_w and from_w (set to -1), SIGKILLs it when kill_now (else gives it grace_s to
 * exit first), reaps it and sets *pid to 0; how (may be NULL) gets how it ended ("signal 9: Killed", "exit status 3",
 * else "unknown status"). what names the worker in the warning about one that outlives SIGKILL by reap_s. Nothing
 * when *pid is 0. */
void cut_child_end(int *pid, int *to_w, int *from_w, int kill_now, double grace_s, double reap_s, const char *what,
                   char *how, size_t n);
/* Writes a (na bytes) then b (nb bytes, may be 0) to fd, a pipe to or from a worker. A write to a pipe whose reader
 * is gone raises SIGPIPE, which would kill the process: it is blocked in this thread for the write and the one the
 * write raised is swallowed (the usual library technique), the process-wide disposition left alone. 0, or the errno
 * of the failed write (EPIPE: the other side closed the pipe). */
int cut_child_send(int fd, const void *a, size_t na, const void *b, size_t nb);
/* How a wait status ended, into buf: "signal 11: Segmentation fault", "exit status 3". */
void cut_child_describe(int status, char *buf, size_t n);

#endif
