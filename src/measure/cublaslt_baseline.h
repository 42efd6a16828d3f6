/* cutune — the cuBLASLt part of the vendor GEMM baseline, run inside the measurement worker (internal header). */
#ifndef CUTUNE_MEASURE_CUBLASLT_BASELINE_H
#define CUTUNE_MEASURE_CUBLASLT_BASELINE_H

#include "measure/vendor_baseline.h"

#include <stddef.h>

/* worker.c: a slot where the cuBLASLt code keeps its state (handle, 64 MiB workspace) across requests. */
void **cut_wk_cublaslt_slot(cut_wk *w);

/* Loads libcublasLt.so.13 ($CUTUNE_CUBLASLT_LIB overrides) on first use; for the prepared GEMM, times the heuristic's
 * top o->heuristic_n algorithms and (o->enumerate) up to o->max_configs enumerated configurations, deduplicated by
 * their configuration, each recorded with cut_vendor_add until the budget runs out. Returns -1 for setup errors
 * (library missing, descriptor errors; e set). *fatal = 1 when the context died. */
int cut_cublaslt_vendor(cut_wk *w, const cut_vendor_opts *o, cut_vendor_acc *a, int *fatal, cut_err *e);
/* Frees the handle, descriptors and workspace (NULL is a no-op); context_dead: skip the CUDA calls. */
void cut_cublaslt_state_free(void *state, int context_dead);

/* "128x256" for CUBLASLT_MATMUL_TILE_128x256, "64x4" for CUBLASLT_MATMUL_STAGES_64x4, "auto" for UNDEFINED; an id
 * the table lacks is written as "#<id>" into buf. */
const char *cut_lt_tile_name(unsigned id, char *buf, size_t n);
const char *cut_lt_stages_name(unsigned id, char *buf, size_t n);

#endif
