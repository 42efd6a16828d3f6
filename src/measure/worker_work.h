/* cutune — the worker's work and its runs (internal header): what worker_work.c needs from the worker (worker.c,
 * harness.c, tma.c, worker_energy.c) and what the worker's loop calls there. Everything runs inside
 * `cutune __worker`. */
#ifndef CUTUNE_MEASURE_WORKER_WORK_H
#define CUTUNE_MEASURE_WORKER_WORK_H

#include "gpu/cuda_drv.h"
#include "measure/cudnn_baseline.h"
#include "measure/verify.h"
#include "measure/worker_hold.h"
#include "measure/worker_proto.h"

/* What readies each timed launch (verify.h's arm: outputs poisoned, module state reset), outside the timed region.
 * 0, or -1 with res set. */
typedef struct cut_wk_arm {
    int (*fn)(void *arg, cut_result *res, int *fatal);
    void *arg;
} cut_wk_arm;

/* harness.c: the timing policy's warm-up, then event-timed launches through l, each after arm (NULL: none) and the
 * L2 flush: res's median/min/max/repeats. 0, or -1 with res set. */
int cut_wk_time(cut_wk *w, const cut_wk_launcher *l, const cut_wk_arm *arm, cut_result *res, int *fatal);
/* harness.c: the warm back-to-back time per launch of l into res->warm_ms (cold_ms: the cold median, which sizes the
 * graph). 0, or -1 with res set. */
int cut_wk_time_warm(cut_wk *w, const cut_wk_launcher *l, double cold_ms, cut_result *res, int *fatal);
/* harness.c: the fastest of a few synchronised launches by the host's clock, less an empty synchronisation (ms). */
int cut_wk_wall(cut_wk *w, const cut_wk_launcher *l, double *ms, cut_result *res, int *fatal);
/* harness.c: the device's peak FLOP/s (SMs x clock x its fastest tensor-core rate) and DRAM bandwidth (measured
 * once: a 256 MiB device-to-device copy), for verify.h's physical floor. */
void cut_wk_peaks(cut_wk *w, double *flops, double *bytes_s);
/* worker_energy.c: after a successful check and time, measures the energy of l's launches per plan into *er (flops
 * per launch for GFLOP/s, 0: none) in chunks queued one ahead, then checks once more through the protocol (v on d,
 * fresh inputs unless v->fixed). 0; or -1 when the kernel failed (res set; *fatal = 1 when the context died) or
 * the meter failed (res left alone, why set). Allocates nothing that outlives the call. */
int cut_wk_energy_with(cut_wk *w, const cut_wk_launcher *l, const cut_vf *v, const cut_vf_dev *d, double flops,
                       const cut_energy_plan *plan, cut_result *res, cut_energy_result *er, int *fatal, cut_err *why);
/* A harness call (copy, memset, synchronise) failed after a launch: res FAULT naming what, *fatal = 1. */
void cut_wk_harness_fault(cut_result *res, int *fatal, const char *what, CUresult rc);
/* 1 when rc leaves the context unusable (the worker reports and exits). */
int cut_wk_sticky(CUresult rc);
/* A launch's result as the launcher hooks report it: 0, or -1 with "cuLaunchKernel: <error>" in msg and *sticky set
 * when the context is dead. */
int cut_wk_launch_status(CUresult rc, char *msg, size_t n, int *sticky);
/* Sets res's status and its error message (printf-style, truncated to fit). */
void cut_wk_set_status(cut_result *res, cut_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const cut_cu_api *cut_wk_cu(cut_wk *w);
/* Takes t as the timing policy of the runs that follow and allocates the L2 flush buffer if it needs one. */
int cut_wk_use_timing(cut_wk *w, const cut_timing *t, cut_err *e);
/* Loads a module image and finds entry in it, opting in to smem bytes of dynamic shared memory when static plus
 * dynamic exceed 48 KiB. 0 with *mod and *f set (caller unloads *mod unless the context died); else -1 with res
 * LAUNCH_ERROR, or FAULT with *fatal = 1, and nothing left loaded. */
int cut_wk_load(cut_wk *w, const uint8_t *img, size_t n, const char *entry, unsigned smem, CUmodule *mod,
                CUfunction *f, cut_result *res, int *fatal);
/* The works the worker holds (worker_hold.h), the selected one the prepared work. */
cut_wk_hold *cut_wk_holds(cut_wk *w);
/* tma.c: encodes TMA descriptor t (argument i of a call) over buffer b at base (cuTensorMapEncodeTiled: rank 2,
 * b's element type, element strides 1, no interleave, t's swizzle, L2 promotion 128 B, out-of-bounds elements read
 * as zero) into *map. 0, or -1 with res LAUNCH_ERROR naming the argument, the descriptor and why (a map that reaches
 * past the buffer or has another element size, an element type TMA cannot map, the driver's refusal). */
int cut_wk_tma_encode(const cut_cu_api *cu, const cut_tma_desc *t, int i, const cut_work_buf *b, CUdeviceptr base,
                      CUtensorMap *map, cut_result *res);

/* worker_work.c: the held works' operations (worker_hold.h) for worker w: a decoded work's buffers uploaded (and a
 * GEMM's references computed when the runner owes them, and the device checks' copies made), a held work's inputs
 * made whole again when it is selected, its device buffers freed. */
void cut_wk_hold_ops_of(cut_wk *w, cut_wk_hold_ops *ops);
/* RUN's body (the timing policy already taken) on the prepared work: the reply's type into *reply and its payload
 * into b (RUN_RESULT; VENDOR_RESULT for VENDOR); -1 (e set) when nothing could run (no work, a malformed request,
 * no cuDNN/cuBLAS). *fatal = 1 when the context died. */
int cut_wk_run(cut_wk *w, const cut_wp_frame *body, cut_buf *b, uint32_t *reply, int *fatal, cut_err *e);
/* The prepared work, or NULL. */
const cut_work *cut_wk_work(cut_wk *w);
/* Frees the slot's state; with context_dead only its host memory. */
void cut_wk_work_free(void *state, const cut_cu_api *cu, int context_dead);

#endif
