/* cutune — the worker side of a user kernel's workload (internal header): what worker_kernel.c needs from the
 * worker (worker.c, harness.c) and what the worker's loop calls there. Everything runs inside `cutune __worker`. */
#ifndef CUTUNE_MEASURE_WORKER_KERNEL_H
#define CUTUNE_MEASURE_WORKER_KERNEL_H

#include "gpu/cuda_drv.h"
#include "measure/cudnn_baseline.h"
#include "measure/worker_proto.h"

/* The checked runs of cut_wk_check_and_time: before timing, after timing, after an energy run. */
typedef enum cut_wk_pass { CUT_WK_FIRST, CUT_WK_AFTER_TIMING, CUT_WK_AFTER_ENERGY } cut_wk_pass;

/* How a workload checks one run; the launch and the synchronisation between the two hooks are the worker's. */
typedef struct cut_wk_check {
    /* Before the launch: poison the outputs, pick the pass's inputs. CUDA_SUCCESS, or the failing call's result
     * with *what naming it. */
    CUresult (*before)(void *arg, cut_wk_pass pass, const char **what);
    /* After it synchronised: copy the outputs back and compare (or capture) them. 0 when they pass, else -1 with
     * res set (cut_wk_harness_fault for a failing copy). */
    int (*after)(void *arg, cut_wk_pass pass, cut_result *res, int *fatal);
    void *arg;
} cut_wk_check;

/* cut_wk_check_and_time with chk's checks instead of the conv/GEMM output's (the caller vouches for a prepared
 * workload); the timed launches run on whatever inputs the first check picked. */
void cut_wk_check_and_time_with(cut_wk *w, const cut_wk_launcher *l, const cut_wk_check *chk, cut_result *res,
                                int *fatal);
/* worker_energy.c: after a successful check and time, measures the energy of l's launches per plan into *er (flops
 * per launch for GFLOP/s, 0: none) in chunks queued one ahead, then runs chk's check once more (pass
 * CUT_WK_AFTER_ENERGY). 0; or -1 when the kernel failed (res set; *fatal = 1 when the context died) or the meter
 * failed (res left alone, why set). Allocates nothing that outlives the call. */
int cut_wk_energy_with(cut_wk *w, const cut_wk_launcher *l, const cut_wk_check *chk, double flops,
                       const cut_energy_plan *plan, cut_result *res, cut_energy_result *er, int *fatal, cut_err *why);
/* A harness call (copy, memset, synchronise) failed after a launch: res FAULT naming what, *fatal = 1. */
void cut_wk_harness_fault(cut_result *res, int *fatal, const char *what, CUresult rc);
/* 1 when rc leaves the context unusable (the worker reports and exits). */
int cut_wk_sticky(CUresult rc);
/* A launch's result as the launcher hooks report it: 0, or -1 with "cuLaunchKernel: <error>" in msg and *sticky set
 * when the context is dead. */
int cut_wk_launch_status(CUresult rc, char *msg, size_t n, int *sticky);
const cut_cu_api *cut_wk_cu(cut_wk *w);
/* Frees the prepared workload, whichever it is (conv, GEMM, user kernel). */
void cut_wk_release(cut_wk *w);
/* Takes timing as the policy of the next workload and allocates the L2 flush buffer if it needs one. */
int cut_wk_use_timing(cut_wk *w, const cut_timing *t, cut_err *e);
/* Loads a module image and finds entry in it, opting in to smem bytes of dynamic shared memory when static plus
 * dynamic exceed 48 KiB. 0 with *mod and *f set (caller unloads *mod unless the context died); else -1 with res
 * LAUNCH_ERROR, or FAULT with *fatal = 1, and nothing left loaded. */
int cut_wk_load(cut_wk *w, const uint8_t *img, size_t n, const char *entry, unsigned smem, CUmodule *mod,
                CUfunction *f, cut_result *res, int *fatal);
/* The slot where worker_kernel.c keeps its workload (freed by cut_wk_kernel_free). */
void **cut_wk_kernel_slot(cut_wk *w);

/* worker_kernel.c: PREPARE_KERNEL: replaces the prepared workload with the decoded work, its buffers uploaded. */
int cut_wk_prepare_kernel(cut_wk *w, const cut_wp_frame *f, cut_err *e);
/* RUN_KERNEL on the prepared work: KERNEL_RESULT's payload into b; -1 (e set) when nothing could run (no kernel
 * work, a malformed request). *fatal = 1 when the context died. */
int cut_wk_run_kernel(cut_wk *w, const cut_wp_frame *f, cut_buf *b, int *fatal, cut_err *e);
/* ENERGY_KERNEL on the prepared work (which has references): the call checked and timed as RUN_KERNEL does, its
 * energy measured (cut_wk_energy_with), checked again; ENERGY_RESULT's payload into b. -1 (e set) when nothing could
 * run (no kernel work, a malformed request, a work without references). *fatal = 1 when the context died. */
int cut_wk_energy_kernel(cut_wk *w, const cut_wp_frame *f, cut_buf *b, int *fatal, cut_err *e);
/* Frees the slot's state; with context_dead only its host memory. */
void cut_wk_kernel_free(void *state, const cut_cu_api *cu, int context_dead);

#endif
