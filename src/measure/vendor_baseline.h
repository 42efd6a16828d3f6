/* cutune — the vendor GEMM baseline inside the measurement worker (internal header; see cut_runner_gpu_vendor):
 * the tally that cuBLAS (cublas_baseline.c) and cuBLASLt (cublaslt_baseline.c) candidates are recorded in. */
#ifndef CUTUNE_MEASURE_VENDOR_BASELINE_H
#define CUTUNE_MEASURE_VENDOR_BASELINE_H

#include "measure/cudnn_baseline.h"

typedef struct cut_vendor_acc {
    cut_vendor_result *out;
    double deadline; /* cut_now_s() after which no candidate starts */
    int have_fail;   /* out->best holds the first failure (while no candidate was valid) */
} cut_vendor_acc;

/* Records one checked-and-timed candidate: tried / valid counts, the first failure while none is valid, and the
 * top list (fastest first; out->best = top[0]). */
void cut_vendor_add(cut_vendor_acc *a, const cut_result *res, const char *config);
/* 1 once the deadline has passed (then out->budget_hit is set): the caller starts no further candidate. */
int cut_vendor_over_budget(cut_vendor_acc *a);
/* Appends "; "-separated text to out->note (truncated to fit). */
void cut_vendor_note(cut_vendor_acc *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The whole search for the prepared GEMM: cuBLAS, then cuBLASLt (a missing cuBLASLt is a note). Returns -1 for
 * setup errors (no GEMM prepared, no cuBLAS; e set). *fatal = 1 when the context died. */
int cut_vendor_baseline(cut_wk *w, const cut_vendor_opts *o, cut_vendor_result *out, int *fatal, cut_err *e);

#endif
