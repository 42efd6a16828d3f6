/* cutune — the SIMT GEMM template's internals shared by its space and its generator. */
#ifndef CUTUNE_GEMM_SIMT_H
#define CUTUNE_GEMM_SIMT_H

#include "cutune/gemm_space.h"
#include "cutune/util.h"

/* The rules that make a schedule generatable whatever the device: fp32, sizes > 0, every knob on its list, thread
 * tile within the block tile, at least one whole row of loaders (BK/VEC and BN/VEC vectors fit the block), the
 * vector width allowed by the rows' alignment, unroll <= BK. 0, or -1 with a sentence. */
int cut_gemm_simt_check_shape(const cut_gemm *g, const cut_gemm_sched *s, cut_err *e);

/* The banner of a GEMM kernel: the workload (cut_gemm_name), the operands' layout, the schedule (through the GEMM
 * registry) and, when note is not NULL, one more comment line. */
void cut_emit_gemm_banner(cut_buf *b, const cut_gemm *g, const cut_sched *s, const char *note);

#endif
