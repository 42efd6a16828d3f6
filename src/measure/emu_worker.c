/* cutune — the emulation measurement worker, `cutune __worker emu:<dir> <in_fd> <out_fd>`.
 *
 * Works run under host emulation in a process of their own, behind the GPU worker's protocol (HELLO, PREPARE_WORK,
 * HOLD_WORK, SELECT_WORK, DROP_WORK, RUN of a call, QUIT; worker_proto.h). It holds works as the GPU worker does
 * (worker_hold.c): each held work has an in-process emulation runner of its own, prepared with it once (its buffers
 * stay allocated), so selecting a held work switches runners and copies nothing. A RUN observed by an energy plan
 * reads whatever NVML the worker loads (in tests the fake library, through CUTUNE_NVML_LIB, which the worker
 * inherits). The emulator runs kernels
 * in its own address space, so a variant that writes wild or overflows its stack would otherwise take the optimizer
 * down, and one that loops forever would hang it. Here it costs that variant only: the parent (gpu_runner.c and
 * gpu_runner_kernel.c, as for a GPU) records a crash as a fault and starts a fresh worker.
 *
 * Hangs: the emulation runner calls launch_hook once the variant is compiled and before its first launch; that arms
 * a timer of the work's timeout (with an energy plan: plus the plan's time, cut_wp_energy_timeout_s). When it fires,
 * the handler writes the reply (RUN_RESULT) with status timeout, prepared before the run, and
 * exits. (Compiling is not timed: the host compiler takes seconds.) The parent's own timeout,
 * longer by EMU_COMPILE_ALLOWANCE_S, stays the backstop. */
#include "cutune/emu.h"
#include "cutune/measure.h"
#include "measure/worker_hold.h"
#include "measure/worker_proto.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

/* The timeout reply, complete with its frame header, written by the timer's signal handler. */
static struct {
    int fd;
    uint8_t *frame;
    size_t len;
    double seconds;
} wd = {-1, NULL, 0, 0};

static void on_timer(int sig)
{
    (void)sig;
    for (size_t off = 0; wd.frame && off < wd.len;) { /* write(2) and _exit(2) only: async-signal-safe */
        const ssize_t k = write(wd.fd, wd.frame + off, wd.len - off);
        if (k <= 0 && errno != EINTR)
            break;
        off += k > 0 ? (size_t)k : 0;
    }
    _exit(3);
}

static void launch_hook(void *ctx, int on)
{
    (void)ctx;
    struct itimerval it = {{0, 0}, {0, 0}};
    if (on) {
        it.it_value.tv_sec = (time_t)wd.seconds;
        it.it_value.tv_usec = (suseconds_t)((wd.seconds - (double)(time_t)wd.seconds) * 1e6);
        if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0)
            it.it_value.tv_usec = 1000;
    }
    setitimer(ITIMER_REAL, &it, NULL);
}

/* Arms the watchdog's reply (before the run; the handler cannot allocate): a frame of type with payload b, written if
 * the run outlasts seconds. The frame is allocated into wd (which owns it; the previous one is freed, the last one
 * by cut_emu_worker_main). */
static void watchdog_set(uint32_t type, const cut_buf *b, double seconds)
{
    uint8_t *frame = cut_xmalloc(CUT_WP_HEADER_SIZE + b->len);
    cut_wp_header(frame, type, b->len);
    if (b->len)
        memcpy(frame + CUT_WP_HEADER_SIZE, b->data, b->len);
    uint8_t *old = wd.frame;
    wd.frame = frame;
    wd.len = CUT_WP_HEADER_SIZE + b->len;
    wd.seconds = seconds;
    free(old);
}

/* The result the watchdog reports: status timeout after seconds. */
static void timeout_result(cut_result *res, double seconds)
{
    cut_result_reset(res);
    res->status = CUT_ST_TIMEOUT;
    snprintf(res->error, sizeof res->error, "timeout after %g s: the emulated kernel did not finish and its worker "
             "was stopped", seconds);
}

/* RUN of a call: its image bytes carry the source. Appends the RUN_RESULT payload to out (an energy meter's failure:
 * ok 0 and its sentence); -1 with e for a request that cannot run at all (the parent's setup error). */
static int run_call(cut_runner *r, const cut_work *w, const cut_wp_frame *body, cut_buf *out, cut_err *e)
{
    cut_wp_run q;
    if (cut_wp_run_body_decode(body, w, &q, e) != 0)
        return -1;
    if (q.what != CUT_WP_RUN_CALL)
        return cut_err_set(e, "the emulation worker runs calls only, not the vendor baselines");
    char *src = cut_xmalloc(q.image_size + 1);
    memcpy(src, q.image, q.image_size);
    src[q.image_size] = '\0';
    q.call.src = src;
    const double seconds = q.energy ? cut_wp_energy_timeout_s(r->timing.timeout_s, &q.plan)
                                    : (r->timing.timeout_s > 0 ? r->timing.timeout_s : 10.0);
    cut_wp_run_result rr;
    memset(&rr, 0, sizeof rr);
    rr.energy = q.energy;
    timeout_result(&rr.res, seconds);
    cut_buf tb;
    cut_buf_init(&tb);
    cut_wp_run_result_encode(&rr, w, NULL, &tb);
    watchdog_set(CUT_WP_RUN_RESULT, &tb, seconds);
    cut_buf_free(&tb);
    cut_work_outputs outs;
    memset(&outs, 0, sizeof outs);
    int rc;
    if (q.energy) {
        cut_err why = {{0}};
        /* decode checked the call, the plan and the references: a failure here is the meter's */
        rc = cut_runner_energy_call(r, &q.call, &q.plan, &rr.res, &rr.er, &why);
        rr.energy_ok = rc == 0;
        snprintf(rr.why, sizeof rr.why, "%s", rc == 0 ? "" : why.msg);
        rc = 0;
    } else {
        rc = cut_runner_run_call(r, &q.call, &rr.res, cut_work_has_refs(w) ? NULL : &outs, e);
    }
    launch_hook(NULL, 0);
    if (rc == 0)
        cut_wp_run_result_encode(&rr, w, rr.res.status == CUT_ST_OK ? &outs : NULL, out);
    cut_work_outputs_free(&outs);
    free(src);
    return rc;
}

/* Held works (worker_hold.h), ctx the work folder: an emulation runner of the work's own (its compiled kernels in
 * the same folder), prepared with the decoded work (taken over). Ownership: *state is that runner (hold_free). */
static int hold_load(void *ctx, cut_work *w, int others, void **state, cut_err *e)
{
    (void)others;
    cut_runner *r = cut_runner_emu_new(ctx, NULL, e);
    if (!r) {
        cut_work_free(w);
        return -1;
    }
    cut_runner_emu_set_launch_hook(r, launch_hook, NULL);
    if (r->prepare(r, w, 1, e) != 0) { /* take: w is freed either way */
        cut_runner_free(r);
        return -1;
    }
    *state = r;
    return 0;
}

static void hold_free(void *ctx, void *state, int context_dead)
{
    (void)ctx;
    (void)context_dead;
    cut_runner_free(state);
}

int cut_emu_worker_main(const char *work_dir, int in_fd, int out_fd)
{
    signal(SIGPIPE, SIG_IGN);
    wd.fd = out_fd;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_timer;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);

    cut_err e = {{0}};
    cut_runner *r = cut_runner_emu_new(work_dir, NULL, &e); /* prepared with none: runs before a work fail */
    if (!r) {
        cut_wp_reply_error(out_fd, e.msg);
        return 1;
    }
    cut_runner_emu_set_launch_hook(r, launch_hook, NULL);
    cut_wp_hello h;
    memset(&h, 0, sizeof h);
    snprintf(h.name, sizeof h.name, "host-emulation");
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_hello_encode(&h, &b);
    int code = cut_wp_reply(out_fd, CUT_WP_HELLO, &b) == 0 ? -1 : 1;
    cut_wk_hold hold;
    const cut_wk_hold_ops ops = {.load = hold_load, .free = hold_free, .ctx = (void *)work_dir};
    cut_wk_hold_init(&hold, &ops);
    while (code < 0) {
        cut_wp_frame f;
        const int rc = cut_wp_recv(in_fd, -1.0, CUT_WP_MAX_REQUEST, &f, &e);
        if (rc <= 0) { /* the parent closed the pipe (0), or garbage */
            if (rc < 0)
                fprintf(stderr, "cutune emulation worker: %s\n", e.msg);
            code = rc == 0 ? 0 : 1;
            break;
        }
        b.len = 0;
        cut_wp_frame q = f; /* a run request's own fields, after its timing policy */
        cut_runner *sel = cut_wk_hold_cur(&hold);
        if (!sel)
            sel = r;
        if (cut_wp_is_run(f.type) && cut_wp_run_split(&f, &sel->timing, &q, &e) != 0) {
            code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            cut_wp_frame_free(&f);
            continue;
        }
        uint32_t reply = CUT_WP_ACK;
        const int held = cut_wk_hold_request(&hold, &f, &reply, &b, &e);
        if (held <= 0) { /* PREPARE_WORK, HOLD_WORK, SELECT_WORK, DROP_WORK */
            code = (held == 0 ? cut_wp_reply(out_fd, reply, &b) : cut_wp_reply_error(out_fd, e.msg)) == 0 ? -1 : 1;
            cut_wp_frame_free(&f);
            continue;
        }
        switch (f.type) {
        case CUT_WP_RUN:
            if (run_call(sel, sel->work, &q, &b, &e) != 0)
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            else
                code = cut_wp_reply(out_fd, CUT_WP_RUN_RESULT, &b) == 0 ? -1 : 1;
            break;
        case CUT_WP_QUIT:
            code = 0;
            break;
        default: {
            char msg[160];
            snprintf(msg, sizeof msg, "emulation worker: unexpected %s message", cut_wp_type_name(f.type));
            code = cut_wp_reply_error(out_fd, msg) == 0 ? -1 : 1;
        }
        }
        cut_wp_frame_free(&f);
    }
    cut_buf_free(&b);
    cut_wk_hold_free(&hold, 0);
    cut_runner_free(r);
    free(wd.frame);
    return code;
}
