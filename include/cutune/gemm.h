/* cutune — GEMM workloads (seed 004): C[M][N] = A[M][K] · B, row-major, fp32 accumulate.
 *
 * Layouts as seed 004: NN (B is K×N) and NT (B is N×K, i.e. C = A · Bᵀ). Input dtypes fp32, tf32 (fp32 storage,
 * tf32 tensor-core math), fp16 and bf16; C is fp32 in every case.
 *
 * Seed 004's argument form is accepted as is: KEY=VALUE words where KEY is any combination of M, N, K (each at
 * most once over all words: "MN=1024" sets M and N), t (trials) and O (seed 004's option, accepted and ignored by
 * cutune); e.g. "M=1024 N=2048 K=3072 t=2000", "MN=1024 K=2048", "MNK=7384 t=2398". */
#ifndef CUTUNE_GEMM_H
#define CUTUNE_GEMM_H

#include "cutune/common.h"
#include "cutune/half.h"
#include "cutune/work.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cut_gemm_layout { CUT_GEMM_NN = 0, CUT_GEMM_NT = 1 } cut_gemm_layout;

typedef struct cut_gemm {
    int m, n, k;
    cut_gemm_layout layout;
    cut_dtype dtype;
} cut_gemm;

/* ---- workload (src/ops/gemm/gemm.c) ---- */

/* "nn", "nt". */
const char *cut_gemm_layout_name(cut_gemm_layout l);
int cut_gemm_layout_parse(const char *s, cut_gemm_layout *l, cut_err *e);

/* Rejects M, N or K <= 0 or a matrix of 2^31 or more elements; the sentence names the field and its value. */
int cut_gemm_validate(const cut_gemm *g, cut_err *e);
/* FLOPs = 2·M·N·K; GFLOP/s of a run of ms milliseconds (0 when ms <= 0). */
double cut_gemm_flops(const cut_gemm *g);
/* The least DRAM traffic of one launch: A and B read once in the dtype's storage, C written once as floats (bytes). */
double cut_gemm_bytes(const cut_gemm *g);
double cut_gemm_gflops(const cut_gemm *g, double ms);
/* Element counts of A (M×K), B (K×N or N×K) and C (M×N). */
size_t cut_gemm_a_elems(const cut_gemm *g);
size_t cut_gemm_b_elems(const cut_gemm *g);
size_t cut_gemm_c_elems(const cut_gemm *g);
/* "gemm_nn_fp32_M_1024_N_2048_K_3072" */
void cut_gemm_name(const cut_gemm *g, char *buf, size_t n);

/* Seed 004's words (see the top of this file). argv[0..argc) are the words; M, N and K must all be set. trials
 * gets t (0 when absent; may be NULL), option gets O (-1 when absent; may be NULL). Errors (one sentence naming
 * the word): not KEY=VALUE, an unknown key letter ("Q=3"), a key letter twice, an empty, negative, non-decimal
 * or out-of-range value ("M=", "M=-1"), a missing M, N or K.
 * Only g's m, n and k are set (layout and dtype are left as they are); on failure nothing is written. */
int cut_gemm_parse_args(int argc, const char *const *argv, cut_gemm *g, int *trials, int *option, cut_err *e);

/* ---- reference (src/ops/gemm/gemm_ref.c) ---- */

/* Double-precision C = A·B (NN) or A·Bᵀ (NT) from float inputs (inputs of a low-precision dtype are given already
 * rounded to it, as floats). Multi-threaded. c has M·N elements. */
void cut_gemm_reference(const cut_gemm *g, const float *a, const float *b, double *c);
/* Relative Frobenius-norm error ||out - ref|| / ||ref|| (ref all zero: ||out||); NaN/Inf anywhere: +Inf. */
double cut_gemm_rel_error(const float *out, const double *ref, size_t n);
/* The tolerance on cut_gemm_rel_error for a dtype: fp32 1e-5, tf32 2e-3, fp16 and bf16 1e-2 (seed-004 issue:
 * fp32 ≪ 1e-3, tf32 ≈ 1e-3, fp16/bf16 ≤ 1e-2). */
double cut_gemm_tolerance(cut_dtype d);

/* ---- the work to measure (src/ops/gemm/work.c) ---- */

/* The work of g (work.h): buffers "A" and "B" in the dtype's storage type (cut_gemm_storage_elem; two input sets
 * from seed as cut_work_pair draws them, rounded to the dtype), "C" (fp32) with each set's reference
 * (cut_gemm_reference of the rounded inputs, rounded to float), FROBENIUS with rtol cut_gemm_tolerance, op GEMM, the
 * FLOPs. With runner_refs (the runner computes references: the GPU runner) and past 2^32 FLOP the references are
 * left to the runner (w->runner_refs); $CUTUNE_GEMM_REF=cpu|gpu forces either. Owns its data (cut_work_free). -1 for
 * an invalid shape or dtype. */
int cut_gemm_work(const cut_gemm *g, uint64_t seed, int runner_refs, cut_work *w, cut_err *e);
/* The element type A and B are stored in: F16, BF16, or F32 (fp32, tf32). */
cut_elem cut_gemm_storage_elem(cut_dtype d);
/* The op descriptor of g, and back (checked: a GEMM op of 5 parameters that form a valid GEMM of a known dtype). */
void cut_gemm_work_op(const cut_gemm *g, cut_work_op *op);
int cut_gemm_of_work_op(const cut_work_op *op, cut_gemm *g, cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
