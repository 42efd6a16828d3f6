/* cutune — feature vectors of schedules for the cost model (internal; the ops compute them, src/ops/conv2d/features.c, src/ops/gemm/features.c).
 *
 * Layout (CUT_FEAT_LEN floats, every template): slots [0, CUT_FEAT_NTPL) are a one-hot of the template id; then
 * features every template defines the same way (workload sizes, threads, work per thread and block, occupancy,
 * waves, intensity, ...); then template-specific knobs. Sizes are log2'd, so the trees split on ratios. Unused
 * slots are 0. */
#ifndef CUTUNE_MODEL_FEATURES_H
#define CUTUNE_MODEL_FEATURES_H

#include "cutune/codegen.h"
#include "cutune/costmodel.h"
#include "cutune/devlimits.h"

/* Templates the one-hot can name (direct, igemm, winograd, and one more). */
#define CUT_FEAT_NTPL 4

/* Resident blocks per SM of a kernel with the given threads, registers per thread and static shared memory, from
 * the device's compute capability (threads, warps, register and shared-memory limits per SM). */
int cut_features_blocks_per_sm(const cut_devlimits *d, int threads, int regs, int smem_bytes);

/* Per-SM limits by compute capability (CUDA occupancy tables). */
typedef struct sm_caps {
    int threads, blocks, regs, smem, smem_reserved;
} sm_caps;
sm_caps cut_features_sm_caps(const cut_devlimits *d);
/* cut_features_blocks_per_sm, and which limit binds in *limiter (0 blocks, 1 threads, 2 registers, 3 shared memory;
 * may be NULL). */
int cut_features_blocks_per_sm_lim(const cut_devlimits *d, int threads, int regs, int smem_bytes, int *limiter);

#endif
