/* cutune — the GPU runner's parent side, shared by gpu_runner.c (worker processes, conv and GEMM workloads, the
 * vendor baselines) and gpu_runner_kernel.c (a user kernel's work: prepare_kernel, run_kernel, energy_kernel)
 * (internal header). Everything here runs in the parent, which never creates a CUDA context. */
#ifndef CUTUNE_MEASURE_GPU_RUNNER_INT_H
#define CUTUNE_MEASURE_GPU_RUNNER_INT_H

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
    int worker_prepared;

    int have_workload;
    int is_gemm;   /* 1: the workload is gemm (PREPARE_GEMM; in/w are A/B), 0: conv (PREPARE) */
    int is_kernel; /* 1: the workload is a user kernel's (PREPARE_KERNEL): kw, with in/w/ref unused */
    cut_wp_prepare_kernel kw; /* its work with owned copies of every buffer's data (timing unused) */
    cut_conv conv;
    cut_gemm gemm;
    uint64_t seed;
    /* Two input sets (set 1 checks a candidate again after timing, on inputs it has not seen), owned; ref[s] is the
     * double reference rounded to float, or NULL for a GEMM whose worker computes it. */
    float *in[2], *w[2], *ref[2];
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
/* Frees the kept conv/GEMM tensors of both sets. */
void cut_gr_tensors_free(gpu_impl *g);
/* Makes sure the worker holds the kept workload: one retry on a fresh worker. 0, or -1 with e. */
int cut_gr_workload_send(gpu_impl *g, cut_err *e);
/* A missing cubin is the candidate's COMPILE_ERROR in res, with the first line of the log. 0 when there is one. */
int cut_gr_compile_failed(const cut_compiled *bin, cut_result *res);
/* The one place a request's deadline comes from (seconds the parent waits for the reply before it kills the worker):
 * MEASURE / RUN_KERNEL: the timing policy's timeout_s (10 s when unset), plus EMU_COMPILE_ALLOWANCE_S for a kernel
 * the emulation worker compiles first (emu_compile); ENERGY / ENERGY_KERNEL (p not NULL): the plan's own length
 * (cut_wp_energy_timeout_s); CUDNN / CUBLAS: max(300 s, 30 x timeout_s), since cudnnFind tries every algorithm;
 * VENDOR: its budget (vendor_budget_s) + 300 s + 3 x timeout_s for loading cuBLAS(Lt) and the enumeration's checks. */
double cut_gr_deadline_s(const cut_runner *r, uint32_t type, const cut_energy_plan *p, int emu_compile,
                         double vendor_budget_s);


/* ---- gpu_runner_kernel.c: a user kernel's work ---- */

/* Forgets a kept user kernel's work (frees its copies). */
void cut_gr_kernel_forget(gpu_impl *g);
/* The runner methods of measure.h for a user kernel (prepare_kernel keeps a deep copy of the work in r's gpu_impl). */
int cut_gr_prepare_kernel(cut_runner *r, const cut_work *w, cut_err *e);
int cut_gr_run_kernel(cut_runner *r, const cut_call *c, cut_result *res, cut_work_outputs *outs, cut_err *e);
int cut_gr_energy_kernel(cut_runner *r, const cut_call *c, const cut_energy_plan *p, cut_result *res,
                         cut_energy_result *er, cut_err *e);

#endif
