/* cutune — the SIMT GEMM template's internals shared by its space and its generator. */
#ifndef CUTUNE_GEMM_SIMT_H
#define CUTUNE_GEMM_SIMT_H

#include "cutune/gemm_space.h"

/* The rules that make a schedule generatable whatever the device: fp32, sizes > 0, every knob on its list, thread
 * tile within the block tile, at least one whole row of loaders (BK/VEC and BN/VEC vectors fit the block), the
 * vector width allowed by the rows' alignment, unroll <= BK. 0, or -1 with a sentence. */
int cut_gemm_simt_check_shape(const cut_gemm *g, const cut_gemm_sched *s, cut_err *e);


#endif
