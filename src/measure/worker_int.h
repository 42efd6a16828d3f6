/* cutune — the measurement worker's state and the helpers its files share (internal to worker.c, harness.c, tma.c
 * and worker_energy.c). Everything here runs inside `cutune __worker`, on the thread that owns the CUDA context. */
#ifndef CUTUNE_MEASURE_WORKER_INT_H
#define CUTUNE_MEASURE_WORKER_INT_H

#include "gpu/cuda_drv.h"
#include "measure/worker_kernel.h"
#include "measure/worker_proto.h"

#define WK_EVENT_PAIRS 256 /* timed launches per batch (one event pair each) */

struct cut_wk {
    const cut_cu_api *cu;
    CUdevice dev;
    CUcontext ctx; /* the device's primary context, retained */
    int l2_bytes;
    CUevent ev_start[WK_EVENT_PAIRS], ev_stop[WK_EVENT_PAIRS];
    int n_events;

    int prepared;
    int is_gemm;   /* 1: a GEMM workload (PREPARE_GEMM): gemm is set, in/w/out hold A/B/C */
    cut_conv conv; /* the conv workload (PREPARE) */
    cut_gemm gemm;
    cut_timing timing;
    size_t n_in, n_w, n_out;
    size_t in_bytes, w_bytes; /* device sizes of the two inputs (a GEMM's A and B in their storage type) */
    /* Two input sets with their references: a candidate is checked on set 0 before timing (and timed on it) and on
     * set 1 after, so a kernel that remembers its inputs or hard-codes outputs fails. d_in, d_w and ref are the set
     * in use (cut_wk_use_set); the vendor baselines always run on set 0. */
    CUdeviceptr d_set_in[2], d_set_w[2];
    double *ref_set[2]; /* the references, from the parent's floats (or the worker's DGEMM) */
    int set;
    CUdeviceptr d_in, d_w, d_out, d_flush;
    size_t flush_bytes;
    double *ref;     /* the reference of the set in use */
    float *host_out; /* copy of the device output */
    double atol, rtol;
    double gemm_tol; /* GEMM: bound on the relative Frobenius error */
    void *cudnn;     /* cudnn_baseline.c state */
    void *cublas;    /* cublas_baseline.c state */
    void *cublaslt;  /* cublaslt_baseline.c state */
    void *kernel;    /* worker_kernel.c state: a user kernel's work (PREPARE_KERNEL) */
};

/* A generated kernel's launch (MEASURE, ENERGY): built by worker.c's measure_kernel, the argument of its launcher. */
typedef struct cut_wk_kern_launch {
    const cut_cu_api *cu;
    CUfunction f;
    unsigned grid[3], block[3], smem;
    void *args[3];
    int ntma;            /* 0, or 2: the kernel takes TMA maps */
    CUtensorMap maps[2]; /* the kernel's TMA maps (MEASURE with two descriptors): args[0] and args[1] point here */
} cut_wk_kern_launch;

/* ---- harness.c ---- */

/* Sets res's status and its error message (printf-style, truncated to fit). */
void cut_wk_set_status(cut_result *res, cut_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* One launch through l. 0, or -1 with res LAUNCH_ERROR, or FAULT with *fatal = 1 when the context died. */
int cut_wk_launch(const cut_wk_launcher *l, cut_result *res, int *fatal);
/* The conv/GEMM output's check hooks (cut_wk_check, arg is the cut_wk): NaN poison before a run; after it, the
 * output copied back into w->host_out and compared with w->ref. */
CUresult cut_wk_out_poison(void *arg, cut_wk_pass pass, const char **what);
int cut_wk_out_compare(void *arg, cut_wk_pass pass, cut_result *res, int *fatal);
/* Makes input set s (0 or 1) the one kernels read and checks compare against. */
void cut_wk_use_set(cut_wk *w, int s);
/* A generated candidate's checks: as cut_wk_out_poison / cut_wk_out_compare, on set 0 before timing and after an
 * energy run and on set 1 after timing; a kernel with TMA maps gets the maps of the pass's set (maps[set], encoded
 * over that set's A and B) copied into its launch before each pass. */
typedef struct cut_wk_cand_check {
    cut_wk *w;
    struct cut_wk_kern_launch *k;
    CUtensorMap maps[2][2]; /* [set][map], when k->ntma */
} cut_wk_cand_check;
CUresult cut_wk_cand_before(void *arg, cut_wk_pass pass, const char **what);
/* The cut_wk_check of c (its arg is c, which must outlive the checks). */
cut_wk_check cut_wk_cand_hooks(cut_wk_cand_check *c);
/* One checked run: chk->before, launch, synchronise, chk->after. 0 if the output passes, else -1 with res set. */
int cut_wk_run_checked(cut_wk *w, const cut_wk_launcher *l, const cut_wk_check *chk, cut_wk_pass pass,
                       cut_result *res, int *fatal);

/* ---- tma.c ---- */

/* Encodes m's two TMA descriptors over w's A and B buffers into k->maps and points k->args[0] and [1] at them. 0, or
 * -1 with res LAUNCH_ERROR (a map that does not fit the workload, or the driver refused it). Allocates nothing. */
int cut_wk_tma_encode(const cut_wk *w, const cut_wp_measure *m, cut_wk_kern_launch *k, cut_result *res);

/* ---- worker_energy.c ---- */

/* The prepared conv's or GEMM's FLOPs per launch. */
double cut_wk_flops(const cut_wk *w);

#endif
