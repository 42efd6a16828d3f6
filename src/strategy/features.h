/* cutune — feature vectors of schedules for the cost model (internal).
 *
 * Layout (CUT_FEAT_LEN floats, every template): slots [0, CUT_FEAT_NTPL) are a one-hot of the template id; then
 * features every template defines the same way (workload sizes, threads, work per thread and block, occupancy,
 * waves, intensity, ...); then template-specific knobs. Sizes are log2'd, so the trees split on ratios. Unused
 * slots are 0. */
#ifndef CUTUNE_MODEL_FEATURES_H
#define CUTUNE_MODEL_FEATURES_H

#include "cutune/costmodel.h"
#include "cutune/gemm.h"
#include "cutune/space.h"
#include "cutune/workload.h"

/* Templates the one-hot can name (direct, igemm, winograd, and one more). */
#define CUT_FEAT_NTPL 4

/* Fills out[0..cap) (cap >= CUT_FEAT_LEN) with the features of schedule s for workload c on device d. regs: the
 * compiler's registers per thread, or -1 (unknown: an estimate is used). Pure and deterministic; every value is
 * finite. Templates direct, igemm and winograd get derived features; any other template its one-hot, the workload
 * and its knobs. Returns the number of features written (CUT_FEAT_LEN), or -1 for a template id outside the registry (or
 * past CUT_FEAT_NTPL), a knob the geometry divides by at 0 or below, or a too-small cap. */
int cut_features_conv(const cut_conv *c, const cut_sched *s, const cut_devlimits *d, int regs, float *out, int cap);

/* GEMM features (a separate cost model from conv's: slot meanings differ by kind, see features.c): one-hot of the
 * GEMM template (registry index < CUT_FEAT_NTPL), log2 M/N/K, dtype, layout, and from the template's geometry:
 * tile sizes, threads, stages, shared memory, blocks per SM, waves and tail-wave efficiency, arithmetic intensity
 * per block, tile-padding waste, tensor cores; then the raw knobs (log2(1 + k)). regs: the compiler's count or -1
 * (the geometry's estimate). Deterministic and finite. Returns CUT_FEAT_LEN, or -1 for a template outside the
 * registry or past CUT_FEAT_NTPL, or a too-small cap. */
int cut_features_gemm(const cut_gemm *g, const cut_sched *s, const cut_devlimits *d, int regs, float *out, int cap);

/* Name of feature i ("onehot_direct", "log2_threads", ..., "knob3": knob 3 of the schedule's template), "" for
 * unused slots. Static storage. */
const char *cut_features_name(int i);

/* Resident blocks per SM of a kernel with the given threads, registers per thread and static shared memory, from
 * the device's compute capability (threads, warps, register and shared-memory limits per SM). */
int cut_features_blocks_per_sm(const cut_devlimits *d, int threads, int regs, int smem_bytes);

#endif
