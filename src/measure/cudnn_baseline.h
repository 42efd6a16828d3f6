/* cutune — the worker side of measurement (internal header): the one check-and-time routine that candidates and
 * cuDNN algorithms share, and the cuDNN baseline that uses it. Everything here runs inside `cutune __worker`, which
 * owns the CUDA context (the device's primary context, current on the worker's only thread). */
#ifndef CUTUNE_MEASURE_CUDNN_BASELINE_H
#define CUTUNE_MEASURE_CUDNN_BASELINE_H

#include "cutune/gemm.h"
#include "cutune/measure.h"
#include "cutune/workload.h"

#include <cuda.h>
#include <stddef.h>

typedef struct cut_wk cut_wk; /* worker state (worker_int.h) */

/* One run of the thing being measured, enqueued on stream s (NULL: the legacy default stream; else the worker's
 * stream, which the timing captures into CUDA graphs), reading the worker's input/weight tensors and writing its
 * output tensor. Returns 0, or -1 with a message; sets *sticky = 1 when the CUDA context is dead (the worker must
 * exit). */
typedef struct cut_wk_launcher {
    int (*launch)(void *arg, CUstream s, char *msg, size_t n, int *sticky);
    void *arg;
    double tol_scale; /* > 1: checked with the work's tolerances times this (TF32 math on fp32 data); else as is */
} cut_wk_launcher;

/* harness.c: poison the output with NaN, run once, synchronise, copy back and compare with the reference; then
 * warm-up, timed repeats (L2 flush before each, outside the events; CUDA events around the run only; >= min_repeats
 * and >= min_total_ms, <= max_repeats; median/min/max); then poison, run and compare again. Fills res (status OK,
 * LAUNCH_ERROR, WRONG_RESULT or FAULT). *fatal = 1 when the context is dead. */
void cut_wk_check_and_time(cut_wk *w, const cut_wk_launcher *l, cut_result *res, int *fatal);

/* worker_work.c: the prepared work's shape and device tensors of set 0 (conv NULL unless a conv is prepared, gemm
 * NULL unless a GEMM is; for a GEMM in/w/out are A/B/C, and cin C's old contents when beta != 0, else 0; bias a
 * conv epilogue's CO values in the inputs' type, else 0). */
typedef struct cut_wk_tensors {
    const cut_conv *conv;
    const cut_gemm *gemm;
    CUdeviceptr in, w, out, cin, bias;
} cut_wk_tensors;
void cut_wk_get_tensors(cut_wk *w, cut_wk_tensors *t);
/* cuDNN's candidates as they are checked and timed (cudnn_baseline.c): the legacy Find call's algorithms, then the
 * v9 graph API's engines (cudnn_engines.c). */
typedef struct cut_cudnn_search {
    cut_result best;  /* the fastest valid cold time; else the first failure (a fault that killed the context wins) */
    char name[128];   /* its algorithm or engine */
    int have_best, have_fail;
    double warm_ms;   /* the best warm time of any valid candidate (warm, another may win), -1: none */
    int proposed, timed, skipped_tc; /* engine configurations proposed, timed, skipped for tensor-core math */
} cut_cudnn_search;
/* Keeps res of the candidate name (fatal: the context died with it). */
void cut_cudnn_search_add(cut_cudnn_search *s, const cut_result *res, const char *name, int fatal);
/* cudnn_engines.c: the engines cuDNN's heuristics (mode A, then fallback) propose for the prepared conv, each an
 * execution plan over t's tensors with a workspace of at most ws_bytes at ws, checked and timed by the protocol into
 * s. 0; -1 with e when the graph API cannot be used (s keeps what it had). */
struct cut_cudnn_types;
int cut_cudnn_engines(cut_wk *w, void *handle, const cut_wk_tensors *t, const struct cut_cudnn_types *ty,
                      CUdeviceptr ws, size_t ws_bytes, cut_cudnn_search *s, int *fatal, cut_err *e);
/* worker.c: a slot where the cuDNN code keeps its state across requests (freed by cut_cudnn_state_free). */
void **cut_wk_cudnn_slot(cut_wk *w);

/* cudnn_baseline.c: loads libcudnn.so.9 ($CUTUNE_CUDNN_LIB overrides) on first use, finds the forward algorithms
 * for the prepared workload (its dtype and layout, cross-correlation, workspace up to 1 GiB; math as
 * cut_cudnn_conv_types gives it for tf32_math: fp32 data FMA (0) or TF32 (1), tensor-op math for the other
 * dtypes), checks and times each
 * successful one with cut_wk_check_and_time, and returns the fastest valid one in best (status OK) with its name in
 * algo; when none is valid, best holds the first failure and algo the name of that algorithm. A workload with a
 * fused epilogue runs each algorithm as cut_cudnn_epi_plan says (the fused call, or the unfused sequence timed as
 * one) and the engines on the fused graph; the names say which (cut_cudnn_epi_label). Returns -1 for setup
 * errors (no cuDNN, descriptor errors; e set). *fatal = 1 when the context died. */
int cut_cudnn_baseline(cut_wk *w, int tf32_math, cut_result *best, char *algo, size_t algo_len, int *fatal,
                       cut_err *e);
/* Destroys the cuDNN handle kept in the slot (NULL is a no-op). */
void cut_cudnn_state_free(void *state);
/* "IMPLICIT_PRECOMP_GEMM" for CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, "UNKNOWN" otherwise. */
const char *cut_cudnn_fwd_algo_name(int algo);

#endif
