/* cutune — the GPU runner's parent side, shared by gpu_runner.c (worker processes, the kept work, the runner's
 * prepare and run, the vendor baselines) and gpu_runner_kernel.c (one RUN request and its reply) (internal header). Everything here runs in the parent, which never creates a CUDA context. */
#ifndef CUTUNE_MEASURE_GPU_RUNNER_INT_H
#define CUTUNE_MEASURE_GPU_RUNNER_INT_H

#include "measure/held.h"
#include "measure/worker_proto.h"

#include <limits.h>
#include <stdint.h>

/* An emulation worker compiles each variant with the host C++ compiler before the timed part (which its own
 * watchdog limits): the parent waits this much longer for its reply. */
#define EMU_COMPILE_ALLOWANCE_S 120.0

typedef struct gpu_impl {
    int dev;
    int emu;      /* an emulation worker (cut_runner_emu_worker_new): user kernels on the host, .so files in emu_dir */
    int emu_temp; /* emu_dir is ours: removed with the runner */
    char emu_dir[PATH_MAX];
    char exe[PATH_MAX];
    cut_measure_env env;
    int have_info; /* env filled from the parent's own query; otherwise from the first HELLO */

    int pid; /* 0: no worker */
    int to_w, from_w;
    int starts;
    int worker_prepared; /* the live worker has the selected work selected */
    cut_wp_held wk;      /* the works the live worker holds: its last HELD reply (cleared with the worker) */

    cut_prep_stats *prep; /* the runner's counters: works sent (HOLD_WORK) and their bytes, held ones selected */
    /* The works kept (held.h: deep copies, or the op's own work), the selected one the prepared work: a work the live
     * worker holds is selected there (SELECT_WORK), any other sent (HOLD_WORK), also to a new worker. */
    cut_held held;
} gpu_impl;

/* ---- gpu_runner.c ---- */

/* Ends the current worker: closes the pipes, SIGKILLs it when kill_now (else gives it a grace period to exit on its
 * own first) and reaps it. how (if non-NULL) says how it ended: "signal 9: Killed", "exit status 3". */
void cut_gr_worker_stop(gpu_impl *g, int kill_now, char *how, size_t n);
/* Sends one request and waits for its reply (at most max_reply bytes), restarting a worker that turns out to be gone
 * before it got the request. Returns like cut_wp_recv (1 reply in *f, caller frees; 0 EOF, -1 error, -2 timeout),
 * or -3 for a setup error (no worker can be started; e set). */
int cut_gr_request(gpu_impl *g, const cut_timing *t, uint32_t type, const cut_buf *b, double timeout_s,
                   size_t max_reply, cut_wp_frame *f, cut_err *e);
/* Turns a failed wait for a reply (rc from cut_gr_request, or -1 for a reply that did not decode, err saying why)
 * into res's status (TIMEOUT, FAULT) and ends the worker. */
void cut_gr_reply_failure(gpu_impl *g, int rc, double timeout_s, const cut_err *err, cut_result *res);
/* The prepared work (the selected held one), or an empty work (nbufs 0) before the first prepare. */
const cut_work *cut_gr_work(const gpu_impl *g);
/* Makes sure the worker holds the kept workload: one retry on a fresh worker. 0, or -1 with e. */
int cut_gr_workload_send(gpu_impl *g, cut_err *e);
/* A missing cubin is the candidate's COMPILE_ERROR in res, with the first line of the log. 0 when there is one. */
int cut_gr_compile_failed(const cut_compiled *bin, cut_result *res);
/* The one place a request's deadline comes from (seconds the parent waits for the reply before it kills the worker):
 * a call: the timing policy's timeout_s (10 s when unset), plus EMU_COMPILE_ALLOWANCE_S for a kernel the emulation
 * worker compiles first (emu_compile); observed by an energy plan p: the plan's own length (cut_wp_energy_timeout_s);
 * CUDNN / CUBLAS: max(300 s, 30 x timeout_s), since cudnnFind tries every algorithm; VENDOR: its budget
 * (vendor_budget_s) + 300 s + 3 x timeout_s for loading cuBLAS(Lt) and the enumeration's checks. */
double cut_gr_deadline_s(const cut_runner *r, cut_wp_what what, const cut_energy_plan *p, int emu_compile,
                         double vendor_budget_s);
/* Sends one RUN (q's body under r's timing policy) and reads the reply into *rr and outs (CALL on a work without
 * references). A failure of the worker (timeout, death, a reply that does not decode) is rr->res's status. Returns -1
 * only for setup errors: no worker, an ERROR reply (e set). VENDOR's reply goes to *vendor instead. */
int cut_gr_run(cut_runner *r, const cut_wp_run *q, cut_wp_run_result *rr, cut_work_outputs *outs,
               cut_vendor_result *vendor, cut_err *e);

/* ---- gpu_runner_kernel.c: the runs ---- */

/* One call on the kept work: compile failures (no cubin on a GPU) are res's COMPILE_ERROR and a TMA descriptor the
 * worker would refuse res's LAUNCH_ERROR, not sent; with plan the run is observed by the energy meter (*er,
 * *energy_ok, why); outs gets the captured outputs of a work without references. -1 only for setup errors. */
int cut_gr_call(cut_runner *r, const cut_call *c, const cut_energy_plan *plan, cut_result *res,
                cut_work_outputs *outs, cut_energy_result *er, int *energy_ok, char *why, size_t why_len,
                cut_err *e);

#endif
