/* cutune — the GPU runner, parent side: a persistent worker process per GPU owns the CUDA context.
 *
 * The parent never creates a CUDA context (it only asks the driver and NVML for facts). It fork+execs
 * `<worker> __worker <dev> <in_fd> <out_fd>` (the cutune CLI itself, or cutune-worker: cut_worker_path) connected
 * by two pipes and speaks the framed protocol of worker_proto.h.
 * A candidate that faults makes the worker report CUT_ST_FAULT and exit; one that hangs is killed after
 * timing.timeout_s (CUT_ST_TIMEOUT); a worker that dies without a word gives CUT_ST_FAULT "worker died (...)".
 * In every case the next candidate gets a fresh worker, which is sent the selected work again (HOLD_WORK): the op
 * builds it once per workload and seed (cut_conv_work, cut_gemm_work; a user kernel's is copied) and the parent keeps
 * it. The parent holds up to CUT_HELD_MAX works (held.h: a user kernel's spec sizes and check sizes, between which
 * src/pipeline/kcheck.c switches for every checked build) and so does the worker, each by the id of its held copy:
 * a prepare of a work the worker holds is a SELECT_WORK (nothing sent again), an evicted work is a DROP_WORK (its
 * buffers freed in the worker), and a fresh worker holds none (each is sent again when it is selected). Every run is
 * one RUN request (gpu_runner_kernel.c: cut_gr_run, cut_gr_call); the state both files share in
 * gpu_runner_int.h. */
#define _GNU_SOURCE /* pipe2 */
#include "measure/child.h"
#include "measure/gpu_runner_int.h"

#include "cutune/emu.h"
#include "cutune/gpu.h"
#include "cutune/half.h"
#include "cutune/log.h"
#include "gpu/nvml.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The worker holds every work the runner holds (the runner drops an evicted one before it sends the next). */
_Static_assert(CUT_WP_HOLD_MAX >= CUT_HELD_MAX, "a worker must hold as many works as its runner");

/* How long a new worker may take to create its context and say HELLO, or to take a workload (PREPARE). */
#define START_TIMEOUT_S 120.0
/* How long an exiting worker gets before SIGKILL, and how long a killed one is waited for. */
#define EXIT_GRACE_S 2.0
#define REAP_LIMIT_S 30.0

/* ---- spawning and reaping ---- */

int cut_wp_spawn(const char *exe, int dev, int *pid, int *to_worker, int *from_worker, cut_err *e)
{
    char dev_s[16];
    snprintf(dev_s, sizeof dev_s, "%d", dev);
    return cut_wp_spawn_arg(exe, dev_s, pid, to_worker, from_worker, e);
}

int cut_wp_spawn_arg(const char *exe, const char *dev_arg, int *pid, int *to_worker, int *from_worker, cut_err *e)
{
    int p2c[2], c2p[2];
    /* Close-on-exec everywhere, so that workers started concurrently (one per GPU) never inherit each other's
     * pipes; the child clears the flag on its own two ends only. */
    if (pipe2(p2c, O_CLOEXEC) != 0)
        return cut_err_set(e, "cannot create a pipe for the worker: %s", strerror(errno));
    if (pipe2(c2p, O_CLOEXEC) != 0) {
        int err = errno;
        close(p2c[0]);
        close(p2c[1]);
        return cut_err_set(e, "cannot create a pipe for the worker: %s", strerror(err));
    }
    char in_s[16], out_s[16];
    snprintf(in_s, sizeof in_s, "%d", p2c[0]);
    snprintf(out_s, sizeof out_s, "%d", c2p[1]);
    char *argv[] = {(char *)exe, "__worker", (char *)dev_arg, in_s, out_s, NULL};

    /* Block signals across fork so the child runs none of the parent's handlers before exec. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t child = fork();
    if (child == 0) {
        /* Only async-signal-safe calls until exec. */
        fcntl(p2c[0], F_SETFD, 0);
        fcntl(c2p[1], F_SETFD, 0);
        if (p2c[0] != STDOUT_FILENO && c2p[1] != STDOUT_FILENO)
            dup2(STDERR_FILENO, STDOUT_FILENO); /* keep the parent's stdout clean (JSON output) */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execv(exe, argv);
        _exit(127);
    }
    const int fork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(p2c[0]);
    close(c2p[1]);
    if (child < 0) {
        close(p2c[1]);
        close(c2p[0]);
        return cut_err_set(e, "cannot start the worker: fork failed: %s", strerror(fork_errno));
    }
    *pid = (int)child;
    *to_worker = p2c[1];
    *from_worker = c2p[0];
    return 0;
}

/* Ends the current worker: closes the pipes, SIGKILLs it when kill_now (else gives it EXIT_GRACE_S to exit on its
 * own first) and reaps it. how (if non-NULL) says how it ended: "signal 9: Killed", "exit status 3". */
void cut_gr_worker_stop(gpu_impl *g, int kill_now, char *how, size_t n)
{
    /* a worker that outlives SIGKILL is most likely stuck in the driver */
    cut_child_end(&g->pid, &g->to_w, &g->from_w, kill_now, EXIT_GRACE_S, REAP_LIMIT_S, "worker", how, n);
    g->worker_prepared = 0;
    memset(&g->wk, 0, sizeof g->wk); /* a fresh worker holds nothing */
}

static const cut_work no_work;

const cut_work *cut_gr_work(const gpu_impl *g)
{
    const cut_held_work *h = cut_held_cur(&g->held);
    return h ? &h->work : &no_work;
}

/* A reply that is not the one expected (rc from cut_wp_recv): says what came instead into msg, frees the frame and
 * stops the worker (errors and timeouts: kill; else it exits once the pipes close), saying how into how. */
static void fail_reply(gpu_impl *g, int rc, cut_wp_frame *f, const char *unexpected, const char *closed,
                       const cut_err *e, char *msg, size_t msg_len, char *how, size_t how_len)
{
    if (rc == 1 && f->type == CUT_WP_ERROR)
        cut_wp_error_decode(f, msg, msg_len);
    else if (rc == 1)
        snprintf(msg, msg_len, "unexpected %s %s", cut_wp_type_name(f->type), unexpected);
    else if (rc == 0)
        snprintf(msg, msg_len, "%s", closed);
    else
        snprintf(msg, msg_len, "%s", e->msg);
    cut_wp_frame_free(f);
    cut_gr_worker_stop(g, rc < 0, how, how_len);
}

/* Sends a request about held works (type, payload b: HOLD_WORK, SELECT_WORK or DROP_WORK) and takes the worker's
 * HELD reply into g->wk. 0; else -1 with e and the worker stopped (it died, did not answer in time, refused or said
 * something else). */
static int held_request(gpu_impl *g, uint32_t type, const cut_buf *b, cut_err *e)
{
    int rc = cut_wp_send(g->to_w, type, b->data, b->len, e);
    if (rc != 0) {
        char how[96];
        cut_gr_worker_stop(g, 1, how, sizeof how);
        return cut_err_wrap(e, "worker on GPU %d (%s)", g->dev, how);
    }
    cut_wp_frame f;
    rc = cut_wp_recv(g->from_w, START_TIMEOUT_S, CUT_WP_MAX_REPLY, &f, e);
    char msg[CUT_ERR_LEN - 64], how[96];
    if (rc == 1 && f.type == CUT_WP_HELD) {
        cut_err de = {{0}};
        const int bad = cut_wp_held_decode(&f, &g->wk, &de);
        cut_wp_frame_free(&f);
        if (!bad)
            return 0;
        cut_gr_worker_stop(g, 1, how, sizeof how);
        snprintf(msg, sizeof msg, "%s", de.msg);
    } else {
        fail_reply(g, rc, &f, "reply", "the worker closed its pipe", e, msg, sizeof msg, how, sizeof how);
    }
    return cut_err_set(e, "worker on GPU %d could not %s: %s (worker: %s)", g->dev,
                       type == CUT_WP_DROP_WORK ? "drop a held work" : "take the workload", msg, how);
}

/* The selected work to the live worker: a select when it holds it (nothing sent again), else the whole work
 * (HOLD_WORK: inputs of both sets, references), counted as held or sent. */
static int worker_prepare(gpu_impl *g, cut_err *e)
{
    const cut_held_work *h = cut_held_cur(&g->held);
    cut_buf b;
    cut_buf_init(&b);
    if (cut_wp_held_has(&g->wk, h->id)) {
        cut_wp_id_encode(h->id, &b);
        const int rc = held_request(g, CUT_WP_SELECT_WORK, &b, e);
        cut_buf_free(&b);
        if (rc != 0)
            return -1;
        if (g->wk.selected == h->id) {
            g->prep->held++;
            g->worker_prepared = 1;
            cut_log(CUT_LOG_DEBUG, "GPU runner: work %llu held by the worker: selected\n", (unsigned long long)h->id);
            return 0;
        }
        cut_buf_init(&b); /* the worker dropped it meanwhile (it needed the memory): sent again */
    }
    cut_wp_hold_encode(h->id, &h->work, &b);
    g->prep->sent++;
    g->prep->bytes += (double)b.len;
    cut_log(CUT_LOG_DEBUG, "GPU runner: work %llu sent to the worker (HOLD_WORK, %zu bytes)\n",
            (unsigned long long)h->id, b.len);
    const int rc = held_request(g, CUT_WP_HOLD_WORK, &b, e);
    cut_buf_free(&b);
    if (rc != 0)
        return -1;
    if (g->wk.selected != h->id) {
        cut_gr_worker_stop(g, 1, NULL, 0);
        return cut_err_set(e, "worker on GPU %d could not take the workload: its HELD reply does not select work %llu",
                           g->dev, (unsigned long long)h->id);
    }
    g->worker_prepared = 1;
    return 0;
}

/* A held work evicted (held.h): a worker that holds it frees its buffers (DROP_WORK). A worker that cannot be told
 * is stopped: a fresh one holds nothing. */
static void evict_work(void *ctx, cut_held_work *h)
{
    gpu_impl *g = ctx;
    if (!g->pid || !cut_wp_held_has(&g->wk, h->id))
        return;
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_id_encode(h->id, &b);
    cut_err e = {{0}};
    if (held_request(g, CUT_WP_DROP_WORK, &b, &e) != 0)
        cut_log(CUT_LOG_DEBUG, "GPU runner: %s\n", e.msg);
    else if (cut_wp_held_has(&g->wk, h->id))
        cut_gr_worker_stop(g, 1, NULL, 0);
    cut_buf_free(&b);
}

/* Starts a worker and waits for HELLO; then sends the workload if there is one. */
static int worker_start(gpu_impl *g, cut_err *e)
{
    char dev_arg[PATH_MAX + 8];
    if (g->emu)
        snprintf(dev_arg, sizeof dev_arg, "emu:%s", g->emu_dir);
    else
        snprintf(dev_arg, sizeof dev_arg, "%d", g->dev);
    if (cut_wp_spawn_arg(g->exe, dev_arg, &g->pid, &g->to_w, &g->from_w, e) != 0)
        return -1;
    g->starts++;
    cut_wp_frame f;
    int rc = cut_wp_recv(g->from_w, START_TIMEOUT_S, CUT_WP_MAX_REPLY, &f, e);
    if (rc != 1 || f.type != CUT_WP_HELLO) {
        char msg[CUT_ERR_LEN - 128], how[96];
        fail_reply(g, rc, &f, "message instead of HELLO", "it exited before it was ready", e, msg, sizeof msg, how,
                   sizeof how);
        return cut_err_set(e, "the measurement worker (%s __worker %s) failed: %s (%s)", g->exe, dev_arg, msg, how);
    }
    cut_wp_hello h;
    int dec = cut_wp_hello_decode(&f, &h, e);
    cut_wp_frame_free(&f);
    if (dec != 0) {
        cut_gr_worker_stop(g, 1, NULL, 0);
        return cut_err_wrap(e, "the measurement worker's HELLO");
    }
    if (!g->have_info) {
        snprintf(g->env.gpu_name, sizeof g->env.gpu_name, "%s", h.name);
        snprintf(g->env.gpu_uuid, sizeof g->env.gpu_uuid, "%s", h.uuid);
        g->env.driver_version = h.driver_version;
        g->have_info = 1;
    }
    if (cut_held_cur(&g->held))
        return worker_prepare(g, e);
    return 0;
}

/* A live worker that has the current workload; (re)started as needed. The timing policy travels with each run
 * request instead (cut_gr_request). */
static int worker_ready(gpu_impl *g, cut_err *e)
{
    if (!g->pid && worker_start(g, e) != 0)
        return -1;
    if (cut_held_cur(&g->held) && !g->worker_prepared)
        return worker_prepare(g, e);
    return 0;
}

/* Sends one request and waits for its reply (at most max_reply bytes), restarting a worker that turns out to be gone
 * before it got the request. Returns like cut_wp_recv (1 reply in *f, 0 EOF, -1 error, -2 timeout), or -3 for a
 * setup error (no worker can be started; e set). */
int cut_gr_request(gpu_impl *g, const cut_timing *t, uint32_t type, const cut_buf *b, double timeout_s,
                   size_t max_reply, cut_wp_frame *f, cut_err *e)
{
    cut_buf run; /* a run request: the timing policy, then b */
    cut_buf_init(&run);
    if (cut_wp_is_run(type))
        cut_wp_run_encode(t, b ? b->data : NULL, b ? b->len : 0, &run);
    const cut_buf *payload = cut_wp_is_run(type) ? &run : b;
    int rc = -3;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (worker_ready(g, e) != 0)
            break;
        if (cut_wp_send(g->to_w, type, payload ? payload->data : NULL, payload ? payload->len : 0, e) == 0) {
            rc = cut_wp_recv(g->from_w, timeout_s, max_reply, f, e);
            break;
        }
        cut_gr_worker_stop(g, 1, NULL, 0); /* it died between requests: not this request's fault */
    }
    cut_buf_free(&run);
    return rc;
}

/* Turns a failed wait for a reply into a status and ends the worker. */
void cut_gr_reply_failure(gpu_impl *g, int rc, double timeout_s, const cut_err *err, cut_result *res)
{
    char how[96];
    if (rc == -2) {
        cut_gr_worker_stop(g, 1, NULL, 0);
        res->status = CUT_ST_TIMEOUT;
        snprintf(res->error, sizeof res->error, "timeout after %g s", timeout_s);
    } else if (rc == 0) {
        cut_gr_worker_stop(g, 0, how, sizeof how);
        res->status = CUT_ST_FAULT;
        /* the emulator's own faults: a guard page past a buffer, a trapped array bound (what a GPU would fault on) */
        const char *why = !g->emu                                  ? ""
                          : !strncmp(how, "signal 11:", 10)         ? ": an out-of-bounds memory access, as a GPU faults"
                          : !strncmp(how, "signal 4:", 9)           ? ": an out-of-bounds array index or __trap()"
                                                                    : "";
        snprintf(res->error, sizeof res->error, "worker died (%s)%s", how, why);
    } else {
        cut_gr_worker_stop(g, 1, how, sizeof how);
        res->status = CUT_ST_FAULT;
        snprintf(res->error, sizeof res->error, "worker protocol error: %.200s", err->msg);
    }
}

/* ---- the runner interface ---- */

/* Makes sure the worker holds the kept workload: one retry on a fresh worker (the old one may have died since the
 * last candidate). */
int cut_gr_workload_send(gpu_impl *g, cut_err *e)
{
    if (worker_ready(g, e) == 0)
        return 0;
    cut_gr_worker_stop(g, 1, NULL, 0);
    return worker_ready(g, e);
}

static int gpu_run(cut_runner *r, const cut_call *calls, int n, const cut_run_opts *o, cut_result *res, cut_err *e);

/* Selects the work: a held one as it is (take: w's data freed), else kept (taken over, or a deep copy) in a slot of
 * its own, the least recently used evicted (and dropped by the worker). Then the worker gets it: selected when it
 * holds it too, else sent. */
static int gpu_prepare(cut_runner *r, cut_work *w, int take, cut_err *e)
{
    gpu_impl *g = r->impl;
    int i = cut_held_find(&g->held, w);
    if (i >= 0 && take)
        cut_work_free(w);
    if (i < 0) {
        cut_work copy;
        r->work = NULL;
        if (cut_work_keep(w, take, &copy, e) != 0)
            return -1;
        i = cut_held_put(&g->held, &copy, evict_work, g);
    }
    r->work = &g->held.slot[i].work;
    g->worker_prepared = 0;
    return cut_gr_workload_send(g, e);
}

double cut_gr_deadline_s(const cut_runner *r, cut_wp_what what, const cut_energy_plan *p, int emu_compile,
                         double vendor_budget_s)
{
    const double t = r->timing.timeout_s > 0 ? r->timing.timeout_s : 10.0;
    switch (what) {
    case CUT_WP_RUN_CUDNN:
    case CUT_WP_RUN_CUDNN_TF32:
    case CUT_WP_RUN_CUBLAS:
        return CUT_MAX(300.0, 30.0 * r->timing.timeout_s);
    case CUT_WP_RUN_VENDOR:
        return vendor_budget_s + 300.0 + 3.0 * r->timing.timeout_s;
    default: /* a call */
        if (p)
            return cut_wp_energy_timeout_s(r->timing.timeout_s, p) + (emu_compile ? EMU_COMPILE_ALLOWANCE_S : 0);
        return t + (emu_compile ? EMU_COMPILE_ALLOWANCE_S : 0);
    }
}

/* A missing cubin is the candidate's COMPILE_ERROR, with the first line of the log. 0 when there is one. */
int cut_gr_compile_failed(const cut_compiled *bin, cut_result *res)
{
    if (bin && bin->ok && bin->cubin && bin->cubin_size > 0)
        return 0;
    res->status = CUT_ST_COMPILE_ERROR;
    const char *log = (bin && bin->log) ? bin->log : "";
    size_t len = strcspn(log, "\n");
    snprintf(res->error, sizeof res->error, "compile error%s%.*s", len ? ": " : "", (int)CUT_MIN(len, 200), log);
    return -1;
}

/* One call: one RUN, observed by o's energy plan when there is one. A call that does not fit the work is its own
 * LAUNCH_ERROR (a generated kernel whose TMA map has another element size than the buffer it maps). */
static int run_one(cut_runner *r, const cut_call *c, const cut_run_opts *o, cut_result *res, cut_err *e)
{
    gpu_impl *g = r->impl;
    cut_result_reset(res);
    cut_err ce = {{0}};
    if (cut_call_check(cut_gr_work(g), c, &ce) != 0) {
        res->status = CUT_ST_LAUNCH_ERROR;
        snprintf(res->error, sizeof res->error, "%.250s", ce.msg);
        return 0;
    }
    const cut_energy_plan *plan = o ? o->energy : NULL;
    int ok = 0;
    char why[CUT_ERR_LEN - 64] = "";
    if (cut_gr_call(r, c, plan, res, o ? o->outs : NULL, plan ? o->er : NULL, &ok, why, sizeof why, e) != 0)
        return -1;
    if (!plan)
        return 0;
    if (res->status != CUT_ST_OK) {
        memset(o->er, 0, sizeof *o->er); /* no energy for a call that failed */
        return 0;
    }
    return ok ? 0 : cut_err_set(e, "%s", why[0] ? why : "the energy measurement failed");
}

static int gpu_run(cut_runner *r, const cut_call *calls, int n, const cut_run_opts *o, cut_result *res, cut_err *e)
{
    gpu_impl *g = r->impl;
    if (!cut_held_cur(&g->held))
        return cut_err_set(e, "GPU runner: run called before prepare");
    if (cut_run_opts_check("GPU runner", n, o, cut_gr_work(g), e) != 0)
        return -1;
    return cut_runner_run_each(r, calls, n, o, res, run_one, e);
}

static const cut_measure_env *gpu_env(cut_runner *r)
{
    gpu_impl *g = r->impl;
    cut_gpu_sample_clocks(g->env.gpu_uuid, &g->env.sm_clock_mhz, &g->env.power_limit_w);
    if (!g->emu) {
        const int prev_procs = g->env.other_procs;
        const long long prev_throttle = cut_gpu_throttling(g->env.clock_events);
        const int ours = g->pid;
        cut_gpu_sample_load(g->env.gpu_uuid, &ours, ours > 0, &g->env.other_procs, &g->env.clock_events);
        /* a busy or throttled GPU times slower and noisier: said once per change, recorded with every trial */
        if (g->env.other_procs > 0 && g->env.other_procs != prev_procs)
            cut_log(CUT_LOG_WARN, "cutune: warning: %d other process%s computing on GPU %s: times may be slower and "
                    "noisier (recorded as gpu.other_procs)\n", g->env.other_procs,
                    g->env.other_procs == 1 ? " is" : "es are", g->env.gpu_uuid);
        const long long thr = cut_gpu_throttling(g->env.clock_events);
        if (thr && thr != prev_throttle) {
            char why[160];
            cut_nvml_throttle_describe((unsigned long long)thr, why, sizeof why);
            cut_log(CUT_LOG_WARN, "cutune: warning: GPU %s clocks held back (%s): recorded as gpu.clock_events\n",
                    g->env.gpu_uuid, why);
        }
    }
    if (!g->env.driver_string[0] && cut_nvml_load(NULL))
        cut_nvml_driver_string(g->env.driver_string, sizeof g->env.driver_string);
    return &g->env;
}

static void gpu_destroy(cut_runner *r)
{
    if (!r)
        return;
    gpu_impl *g = r->impl;
    if (g) {
        if (g->pid) {
            cut_err ignore;
            cut_wp_send(g->to_w, CUT_WP_QUIT, NULL, 0, &ignore);
            cut_gr_worker_stop(g, 0, NULL, 0);
        }
        cut_held_free(&g->held);
        if (g->emu_temp)
            cut_remove_tree(g->emu_dir, NULL, NULL);
        free(g);
    }
    free(r);
}

/* A baseline run (CUDNN or CUBLAS) answered by RUN_RESULT with the algorithm's name; what names it in sentences. */
static int baseline_request(cut_runner *r, cut_wp_what what_run, const char *what, cut_result *out, char *algo,
                            size_t algo_len, cut_err *e)
{
    gpu_impl *g = r->impl;
    cut_result_reset(out);
    if (algo && algo_len)
        algo[0] = '\0';
    cut_wp_run q = {.what = what_run};
    cut_wp_run_result rr;
    cut_err err = {{0}};
    if (cut_gr_run(r, &q, &rr, NULL, NULL, &err) != 0)
        return cut_err_set(e, "%s baseline on GPU %d: %s", what, g->dev, err.msg);
    *out = rr.res;
    if (algo && algo_len)
        snprintf(algo, algo_len, "%s", rr.algo);
    return 0;
}

int cut_runner_gpu_cudnn(cut_runner *r, cut_result *out, char *algo, size_t algo_len, cut_err *e)
{
    return cut_runner_gpu_cudnn_math(r, 0, out, algo, algo_len, e);
}

int cut_runner_gpu_cudnn_math(cut_runner *r, int tf32_math, cut_result *out, char *algo, size_t algo_len,
                              cut_err *e)
{
    if (!r || r->run != gpu_run)
        return cut_err_set(e, "the cuDNN baseline needs the GPU runner");
    const gpu_impl *g = r->impl;
    if (cut_gr_work(g)->op.kind != CUT_WORK_CONV)
        return cut_err_set(e, "the cuDNN baseline needs a prepared conv workload");
    return baseline_request(r, tf32_math ? CUT_WP_RUN_CUDNN_TF32 : CUT_WP_RUN_CUDNN, tf32_math ? "cuDNN TF32" : "cuDNN",
                            out, algo, algo_len, e);
}

int cut_runner_gpu_cublas(cut_runner *r, cut_result *out, char *algo, size_t algo_len, cut_err *e)
{
    if (!r || r->run != gpu_run)
        return cut_err_set(e, "the cuBLAS baseline needs the GPU runner");
    const gpu_impl *g = r->impl;
    if (cut_gr_work(g)->op.kind != CUT_WORK_GEMM)
        return cut_err_set(e, "the cuBLAS baseline needs a prepared GEMM workload (cut_runner_prepare_gemm)");
    return baseline_request(r, CUT_WP_RUN_CUBLAS, "cuBLAS", out, algo, algo_len, e);
}

int cut_runner_gpu_vendor(cut_runner *r, const cut_vendor_opts *o, cut_vendor_result *out, cut_err *e)
{
    memset(out, 0, sizeof *out);
    cut_result_reset(&out->best.res);
    if (!r || r->run != gpu_run)
        return cut_err_set(e, "the vendor baseline needs the GPU runner");
    gpu_impl *g = r->impl;
    if (cut_gr_work(g)->op.kind != CUT_WORK_GEMM)
        return cut_err_set(e, "the vendor baseline needs a prepared GEMM workload (cut_runner_prepare_gemm)");
    cut_wp_run q = {.what = CUT_WP_RUN_VENDOR};
    if (o)
        q.vendor = *o;
    else
        cut_vendor_opts_default(&q.vendor);
    if (cut_wp_vendor_check(&q.vendor, e) != 0)
        return cut_err_wrap(e, "vendor baseline options out of range");
    cut_wp_run_result rr;
    cut_err err = {{0}};
    if (cut_gr_run(r, &q, &rr, NULL, out, &err) != 0)
        return cut_err_set(e, "vendor baseline on GPU %d: %s", g->dev, err.msg);
    if (out->best.res.status != CUT_ST_OK && !out->best.config[0] && !out->tried)
        snprintf(out->best.config, sizeof out->best.config, "(the worker failed during the vendor search)");
    /* A candidate may have killed the worker's context (it then exits after replying); the next request starts a
     * fresh worker either way. */
    cut_gr_worker_stop(g, 0, NULL, 0);
    return 0;
}

int cut_runner_gpu_worker_pid(const cut_runner *r)
{
    return (r && r->run == gpu_run) ? ((const gpu_impl *)r->impl)->pid : 0;
}

int cut_runner_gpu_worker_starts(const cut_runner *r)
{
    return (r && r->run == gpu_run) ? ((const gpu_impl *)r->impl)->starts : 0;
}

/* The runner around a worker process: a GPU's (dev, info) or, with emu_dir, the emulation worker's (emu_temp: the
 * folder is removed with the runner, also when it cannot start). */
static cut_runner *runner_new(int dev, const char *emu_dir, int emu_temp, const char *worker_exe, const cut_timing *t,
                              const cut_gpu_info *info, cut_err *e)
{
    gpu_impl *g = cut_xcalloc(1, sizeof *g);
    g->dev = dev;
    cut_held_init(&g->held);
    if (emu_dir) {
        g->emu = 1;
        g->emu_temp = emu_temp;
        snprintf(g->emu_dir, sizeof g->emu_dir, "%s", emu_dir);
    }
    g->to_w = g->from_w = -1;
    int rc = 0; /* the worker: the caller's, else cut_worker_path's */
    if (!worker_exe || !*worker_exe)
        rc = cut_worker_path(g->exe, sizeof g->exe, e);
    else if (snprintf(g->exe, sizeof g->exe, "%s", worker_exe) >= (int)sizeof g->exe)
        rc = cut_err_set(e, "the measurement worker's path is too long: %s", worker_exe);
    else if (access(g->exe, X_OK) != 0)
        rc = cut_err_set(e, "the measurement worker %s cannot be run: %s", g->exe, strerror(errno));
    if (rc != 0) {
        if (g->emu_temp)
            cut_remove_tree(g->emu_dir, NULL, NULL);
        free(g);
        return NULL;
    }
    snprintf(g->env.backend, sizeof g->env.backend, g->emu ? "emu" : "cuda");
    g->env.sm_clock_mhz = -1;
    g->env.power_limit_w = -1.0;
    g->env.other_procs = -1;
    g->env.clock_events = -1;
    if (g->emu) {
        snprintf(g->env.gpu_name, sizeof g->env.gpu_name, "host-emulation");
        g->have_info = 1;
    } else if (info) {
        snprintf(g->env.gpu_name, sizeof g->env.gpu_name, "%s", info->name);
        snprintf(g->env.gpu_uuid, sizeof g->env.gpu_uuid, "%s", info->uuid);
        snprintf(g->env.driver_string, sizeof g->env.driver_string, "%s", info->driver_string);
        g->env.driver_version = info->driver_version;
        g->env.sm_clock_mhz = info->sm_clock_mhz;
        g->env.power_limit_w = info->power_limit_w;
        g->have_info = 1;
    }
    cut_runner *r = cut_xcalloc(1, sizeof *r);
    r->impl = g;
    g->prep = &r->prep;
    r->prepare = gpu_prepare;
    r->run = gpu_run;
    r->runner_refs = !g->emu; /* the GPU worker computes large GEMM references with cuBLAS DGEMM */
    r->env = gpu_env;
    r->destroy = gpu_destroy;
    if (t)
        r->timing = *t;
    else
        cut_timing_default(&r->timing);
    if (worker_start(g, e) != 0) {
        gpu_destroy(r);
        return NULL;
    }
    return r;
}

/* Caller frees with cut_runner_free. */
cut_runner *cut_runner_gpu_new_with(int dev, const char *worker_exe, const cut_timing *t, const cut_gpu_info *info,
                                    cut_err *e)
{
    return runner_new(dev, NULL, 0, worker_exe, t, info, e);
}

cut_runner *cut_runner_emu_worker_new(const char *worker_exe, const char *so_dir, const cut_timing *t, cut_err *e)
{
    char dir[PATH_MAX];
    if (so_dir) {
        if (snprintf(dir, sizeof dir, "%s", so_dir) >= (int)sizeof dir) {
            cut_err_set(e, "emulation folder path too long: %s", so_dir);
            return NULL;
        }
        if (cut_private_dir(dir, e) != 0)
            return NULL;
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/cutune-emu-worker-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            cut_err_set(e, "cannot create the emulation worker's folder %s: %s", dir, strerror(errno));
            return NULL;
        }
    }
    return runner_new(-1, dir, !so_dir, worker_exe, t, NULL, e);
}

cut_runner *cut_runner_gpu_new(int dev, const char *worker_exe, const cut_timing *t, cut_err *e)
{
    int count = cut_gpu_init(e);
    if (count < 0) {
        cut_err_wrap(e, "the GPU runner needs a GPU");
        return NULL;
    }
    if (count == 0) {
        cut_err_set(e, "the GPU runner needs a GPU: the NVIDIA driver reports no CUDA devices");
        return NULL;
    }
    cut_gpu_info info;
    if (cut_gpu_query(dev, &info, e) != 0)
        return NULL;
    return cut_runner_gpu_new_with(dev, worker_exe, t, &info, e);
}
