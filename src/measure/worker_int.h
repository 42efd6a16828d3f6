/* cutune — the measurement worker's state and the helpers its files share (internal to worker.c, harness.c, tma.c,
 * worker_energy.c and worker_work.c). Everything here runs inside `cutune __worker`, on the thread that owns the CUDA context. */
#ifndef CUTUNE_MEASURE_WORKER_INT_H
#define CUTUNE_MEASURE_WORKER_INT_H

#include "gpu/cuda_drv.h"
#include "measure/worker_proto.h"
#include "measure/worker_work.h"

#define WK_EVENT_PAIRS 256 /* timed launches per batch (one event pair each) */

struct cut_wk {
    const cut_cu_api *cu;
    CUdevice dev;
    CUcontext ctx; /* the device's primary context, retained */
    CUstream stream; /* the timing's stream (blocking: ordered with the legacy stream), captured into CUDA graphs */
    int l2_bytes;
    CUevent ev_start[WK_EVENT_PAIRS], ev_stop[WK_EVENT_PAIRS];
    int n_events;
    cut_timing timing; /* the policy of the run in progress (each RUN brings its own) */
    CUdeviceptr d_flush;
    size_t flush_bytes;
    void *cudnn;    /* cudnn_baseline.c state */
    void *cublas;   /* cublas_baseline.c state */
    void *cublaslt; /* cublaslt_baseline.c state */
    cut_wk_hold hold; /* the works held (worker_work.c's states), the selected one prepared for runs */
    void *dc;          /* devcheck.h's kernels, loaded with the first work that checks (NULL: not yet, or failed) */
    int dc_failed;     /* they could not be loaded: the host compares (said once on stderr) */
    int peaks_known;   /* cut_wk_peaks measured */
    double peak_flops, peak_bytes_s;
};

/* ---- harness.c ---- */

/* One launch through l. 0, or -1 with res LAUNCH_ERROR, or FAULT with *fatal = 1 when the context died. */
int cut_wk_launch(const cut_wk_launcher *l, cut_result *res, int *fatal);

#endif
