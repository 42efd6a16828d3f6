/* cutune — the compile stream of the tuning loop (internal).
 *
 * Candidates are compiled by a pool of threads and handed back in the order they finish, so that the measuring
 * side never waits for the slowest compile of a batch (a fully unrolled kernel can take NVRTC 5-20 s while the
 * median takes 0.3 s). Without NVRTC (the emulation backend compiles for itself) a job is done at once. */
#ifndef CUTUNE_SEARCH_CSTREAM_H
#define CUTUNE_SEARCH_CSTREAM_H

#include "cutune/codegen.h"
#include "cutune/compile.h"
#include "cutune/measure.h"
#include "cutune/space.h"

typedef struct cut_job {
    cut_sched sched;
    cut_kernel_src ks;
    cut_compiled bin;
    cut_result res;     /* status != OK before measuring: codegen failed */
    int setup_failed;   /* cut_compile_one returned -1 (NVRTC unusable) */
    cut_err err;
    int seq;            /* its place in the order proposed */
    int runner;         /* the runner that measured it, -1 none */
    struct cut_job *next;
} cut_job;

typedef struct cut_cstream cut_cstream;

/* Starts nthreads compile threads (<= 0: online CPUs) when opts is non-NULL; with NULL jobs are done at once.
 * Returns NULL with e set if no thread can be started. Caller frees with cut_cstream_free. */
cut_cstream *cut_cstream_new(const cut_compile_opts *opts, cut_err *e);
/* Queues a job (ownership moves to the stream until it comes back from cut_cstream_take). */
void cut_cstream_submit(cut_cstream *s, cut_job *j);
/* Jobs submitted and not yet taken back. */
int cut_cstream_inflight(cut_cstream *s);
/* Takes up to max finished jobs into out, waiting until at least min(want, inflight) are finished.
 * Returns the count. */
int cut_cstream_take(cut_cstream *s, cut_job **out, int max, int want);
/* Stops the threads (after their current compile) and frees every job still inside. NULL is a no-op. */
void cut_cstream_free(cut_cstream *s);
/* Frees a job and what it owns. */
void cut_job_free(cut_job *j);

/* ---- pieces of the tuning loop (src/pipeline/loop.c) ---- */

struct cut_tune_cfg;

/* Measures the jobs whose code was generated (res.status OK) in one cut_runner_measure call (cubins when use_nvrtc) and
 * stores each result in its job. -1 only for setup errors. */
int cut_tune_measure_jobs(cut_job **jobs, int n, int use_nvrtc, cut_runner *r, cut_err *e);
/* The same through task t's own measure when it has one (t NULL or without one: cut_runner_measure), over runners r[0..nr):
 * the measurable jobs split into nr contiguous parts, measured in parallel, each job's runner noted. */
struct cut_task;
int cut_tune_measure_jobs_with(const struct cut_task *t, cut_job **jobs, int n, int use_nvrtc, cut_runner **r, int nr,
                               cut_err *e);
/* The same, calling done(ctx, i) as soon as jobs[i]'s result is final and stored in it (from the measuring threads:
 * done locks what it shares); jobs whose runner does not report results one by one are not reported. */
int cut_tune_measure_jobs_each(const struct cut_task *t, cut_job **jobs, int n, int use_nvrtc, cut_runner **r, int nr,
                               void (*done)(void *ctx, int i), void *ctx, cut_err *e);
/* What the progress lines of one case printed so far (zero it, or set last_s to the case's start). */
typedef struct cut_progress {
    double last_s; /* cut_now_s() of the last line printed */
    int last_done; /* its trial count */
    int printed;   /* 1 once a line is printed */
} cut_progress;
/* The progress line, an info message of the log ("<label> | trials 10/100 | failed 1 | best ... GFLOP/s | ..."; a
 * negative best_gflops is shown as "best <-best_gflops> ms", for work whose FLOPs are unknown): rewritten in place
 * where cut_log_tty() (the default handler on a terminal), else a line at most every 10 s after p->last_s, and at the
 * end (final) unless the last line printed already said as many trials (a log never gets one line twice). */
void cut_tune_progress(const struct cut_tune_cfg *cfg, cut_progress *p, const char *label, int done, int total,
                       int failed, double best_gflops, double rate, int final);
/* Writes dir/<stem>_trial<trial>.cu: a failed candidate's source, status and NVRTC log (dir NULL: nothing). */
void cut_tune_dump_failure(const char *dir, const char *stem, int trial, const cut_kernel_src *ks,
                           const cut_compiled *bin, const cut_result *res);

#endif
