/* cutune — GEMM workloads (seed 004): C[b] = alpha · op(A[b]) · op(B[b]) + beta · C[b], row-major, fp32 accumulate.
 *
 * Layouts (seed 004's NN and NT, and the CUTLASS profiler's TN and TT): the first letter is A's, the second B's; N
 * for A is A stored M×K, T is A stored K×M (op(A) = Aᵀ); N for B is B stored K×N, T is B stored N×K (C = A · Bᵀ).
 * Input dtypes fp32, tf32 (fp32 storage, tf32 tensor-core math), fp16 and bf16; C is fp32 in every case.
 *
 * Strided-batched (issue 21): batch matrices per operand, packed one after the other (batch strides M·K, K·N and
 * M·N elements; cut_gemm_stride). alpha and beta: with beta != 0 the kernel reads C's old contents, which the work
 * keeps as a separate input buffer "Cin" (the cuBLASLt model, D = alpha·A·B + beta·C with D apart from C): the output
 * stays poisoned before every checked run and Cin is an input whose integrity is checked, so neither check loses its
 * meaning, and every run (timed ones too) reads the same fresh Cin. A zero-initialised cut_gemm is today's: batch 0
 * reads as 1, scaled 0 as alpha 1, beta 0.
 *
 * Seed 004's argument form is accepted as is: KEY=VALUE words where KEY is any combination of M, N, K (each at
 * most once over all words: "MN=1024" sets M and N), t (trials) and O (seed 004's option, accepted and ignored by
 * cutune); e.g. "M=1024 N=2048 K=3072 t=2000", "MN=1024 K=2048", "MNK=7384 t=2398". cutune adds the named words
 * batch=N, alpha=X, beta=X, layout=nn|nt|tn|tt and dtype=fp32|tf32|fp16|bf16 ("M=16 N=4096 K=4096 batch=8
 * alpha=0.5 beta=0.25 layout=TN"). */
#ifndef CUTUNE_GEMM_H
#define CUTUNE_GEMM_H

#include "cutune/common.h"
#include "cutune/half.h"
#include "cutune/work.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cut_gemm_layout { CUT_GEMM_NN = 0, CUT_GEMM_NT = 1, CUT_GEMM_TN = 2, CUT_GEMM_TT = 3 } cut_gemm_layout;

typedef struct cut_gemm {
    int m, n, k;
    cut_gemm_layout layout;
    cut_dtype dtype;
    int batch;           /* matrices per operand (0 or 1: one) */
    int scaled;          /* 1: alpha and beta below apply; 0: alpha 1, beta 0 */
    double alpha, beta;
} cut_gemm;

/* ---- workload (src/ops/gemm/gemm.c) ---- */

/* "nn", "nt", "tn", "tt". */
const char *cut_gemm_layout_name(cut_gemm_layout l);
int cut_gemm_layout_parse(const char *s, cut_gemm_layout *l, cut_err *e);
/* 1 when A is stored K×M (TN, TT); 1 when B is stored N×K (NT, TT). */
int cut_gemm_a_trans(const cut_gemm *g);
int cut_gemm_b_trans(const cut_gemm *g);

/* The batch count (>= 1), alpha and beta as they apply (1 and 0 unless scaled). */
int cut_gemm_batch(const cut_gemm *g);
double cut_gemm_alpha(const cut_gemm *g);
double cut_gemm_beta(const cut_gemm *g);
/* 1 when the workload differs from seed 004's plain GEMM by a batch, alpha or beta (names and records carry them). */
int cut_gemm_has_extras(const cut_gemm *g);
/* Sets batch, alpha and beta (scaled only when they are not 1 and 0, so a default stays a default). */
void cut_gemm_set_extras(cut_gemm *g, int batch, double alpha, double beta);
/* Batch strides in elements of A, B and C (one matrix each: packed). */
size_t cut_gemm_stride(const cut_gemm *g, char which);

/* Rejects M, N or K <= 0, a batch < 0, an alpha or beta not finite, or an operand of 2^31 or more elements (over
 * every batch); the sentence names the field and its value. */
int cut_gemm_validate(const cut_gemm *g, cut_err *e);
/* FLOPs = 2·M·N·K; GFLOP/s of a run of ms milliseconds (0 when ms <= 0). */
double cut_gemm_flops(const cut_gemm *g);
/* The least DRAM traffic of one launch: A and B read once in the dtype's storage, C written once as floats (bytes). */
double cut_gemm_bytes(const cut_gemm *g);
double cut_gemm_gflops(const cut_gemm *g, double ms);
/* Element counts of A (M×K), B (K×N or N×K) and C (M×N) over every batch. */
size_t cut_gemm_a_elems(const cut_gemm *g);
size_t cut_gemm_b_elems(const cut_gemm *g);
size_t cut_gemm_c_elems(const cut_gemm *g);
/* "gemm_nn_fp32_M_1024_N_2048_K_3072", with "_batch_32" and "_alpha_0.5_beta_0.25" appended only when they are
 * not the defaults (old names stay as they were). */
void cut_gemm_name(const cut_gemm *g, char *buf, size_t n);

/* Seed 004's words (see the top of this file). argv[0..argc) are the words; M, N and K must all be set. trials
 * gets t (0 when absent; may be NULL), option gets O (-1 when absent; may be NULL). Errors (one sentence naming
 * the word): not KEY=VALUE, an unknown key letter ("Q=3"), a key letter twice, an empty, negative, non-decimal
 * or out-of-range value ("M=", "M=-1"), a missing M, N or K.
 * Also: a named word twice, an unknown layout or dtype, a batch < 1, an alpha or beta that is not a finite number.
 * g's m, n and k are set, and batch, alpha, beta, layout and dtype where a word names them (else left as they
 * are); on failure nothing is written. */
int cut_gemm_parse_args(int argc, const char *const *argv, cut_gemm *g, int *trials, int *option, cut_err *e);

/* ---- reference (src/ops/gemm/gemm_ref.c) ---- */

/* Double-precision C = alpha · op(A) · op(B) for every batch from float inputs (inputs of a low-precision dtype are
 * given already rounded to it, as floats). Multi-threaded. c has batch·M·N elements. beta's part is
 * cut_gemm_reference_beta's. */
void cut_gemm_reference(const cut_gemm *g, const float *a, const float *b, double *c);
/* c += beta · cin (batch·M·N elements) when beta != 0; cin may be NULL when beta is 0. */
void cut_gemm_reference_beta(const cut_gemm *g, const float *cin, double *c);
/* The work's buffer index of Cin (C's old contents, an fp32 input): 3 when beta != 0, else -1 (no such buffer). */
int cut_gemm_cin_buf(const cut_gemm *g);
/* Cin's contents of set s in w (a GEMM work of g), or NULL when g reads no C. */
const float *cut_gemm_work_cin(const cut_gemm *g, const cut_work *w, int s);
/* Relative Frobenius-norm error ||out - ref|| / ||ref|| (ref all zero: ||out||); NaN/Inf anywhere: +Inf. */
double cut_gemm_rel_error(const float *out, const double *ref, size_t n);
/* The tolerance on cut_gemm_rel_error for a dtype: fp32 1e-5, tf32 2e-3, fp16 and bf16 1e-2 (seed-004 issue:
 * fp32 ≪ 1e-3, tf32 ≈ 1e-3, fp16/bf16 ≤ 1e-2). */
double cut_gemm_tolerance(cut_dtype d);

/* ---- the work to measure (src/ops/gemm/work.c) ---- */

/* The work of g (work.h): buffers "A" and "B" in the dtype's storage type (cut_gemm_storage_elem; two input sets
 * from seed as cut_work_pair draws them, rounded to the dtype), "C" (fp32) with each set's reference, and with
 * beta != 0 a fourth, "Cin" (fp32 input, uniform in [-1, 1), fresh per set), whose beta part the references add
 * (cut_gemm_reference of the rounded inputs, rounded to float), FROBENIUS with rtol cut_gemm_tolerance, op GEMM, the
 * FLOPs. With runner_refs (the runner computes references: the GPU runner) and past 2^32 FLOP the references are
 * left to the runner (w->runner_refs); $CUTUNE_GEMM_REF=cpu|gpu forces either. Owns its data (cut_work_free). -1 for
 * an invalid shape or dtype. */
int cut_gemm_work(const cut_gemm *g, uint64_t seed, int runner_refs, cut_work *w, cut_err *e);
/* The element type A and B are stored in: F16, BF16, or F32 (fp32, tf32). */
cut_elem cut_gemm_storage_elem(cut_dtype d);
/* The op descriptor of g, and back (checked: a GEMM op of 5 parameters, or 8 with batch, alpha and beta (as the
 * bits of doubles) when cut_gemm_has_extras, that form a valid GEMM of a known dtype). */
void cut_gemm_work_op(const cut_gemm *g, cut_work_op *op);
int cut_gemm_of_work_op(const cut_work_op *op, cut_gemm *g, cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
