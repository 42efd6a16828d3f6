/* cutune — the work a runner measures, whatever op built it (issue 14): typed buffers with two input sets, the
 * references of both sets, a check rule, and the calls that run on it.
 *
 * Each op builds its work: Conv2D (cut_conv_work), GEMM (cut_gemm_work) and a user kernel spec (cut_kspec_work).
 * A runner prepares a work once, then checks and times calls on it (measure.h):
 *   1. poisons every output (bytes 0xFF: NaN for floats), runs the call on set 0, checks against reference 0;
 *   2. times the call on set 0 (the runner's timing policy);
 *   3. poisons again with bytes 0x7F (a different value, so an unwritten integer output cannot match by chance),
 *      runs on set 1 and checks against reference 1.
 * Set 1 holds fresh inputs, so a kernel that remembers its inputs or hard-codes its outputs fails step 3.
 * Without references (a user kernel's baseline, run first) steps 1 and 3 capture the outputs instead
 * (cut_work_outputs), which become the references of every later call. A GEMM work may leave its references to the
 * runner (runner_refs): the GPU runner computes them with cuBLAS DGEMM from the inputs it holds.
 *
 * Check rules (cut_work_compare), per output buffer:
 *   CLOSE      |got - ref| <= atol + rtol * |ref| for every element; integers exactly; NaN and Inf never pass
 *              unless the reference has the same non-finite value
 *   FROBENIUS  ||got - ref||_F / ||ref||_F <= rtol (any NaN or Inf in got fails: the poison left unwritten)
 *   EXACT      every element bit for bit
 * A call may widen the tolerances by its tol_scale (a kernel whose algorithm rounds differently). */
#ifndef CUTUNE_WORK_H
#define CUTUNE_WORK_H

#include "cutune/common.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- element types ---- */

typedef enum cut_elem { CUT_EL_F32, CUT_EL_F64, CUT_EL_F16, CUT_EL_BF16, CUT_EL_I32, CUT_EL_I64, CUT_EL_U8,
                        CUT_EL_COUNT } cut_elem;
/* "f32", "f64", "f16", "bf16", "i32", "i64", "u8" ("?" outside the enum). */
const char *cut_elem_name(cut_elem d);
/* Bytes of one element (0 outside the enum). */
size_t cut_elem_size(cut_elem d);
/* Element i of an array of d as a double (NaN outside the enum). */
double cut_elem_get(cut_elem d, const void *p, size_t i);
/* The n elements of an array p of d as floats into out (a GEMM's stored A or B, for its reference). */
void cut_elem_to_floats(cut_elem d, const void *p, size_t n, float *out);

/* ---- TMA maps ---- */

/* A TMA tensor map the GPU worker encodes (cuTensorMapEncodeTiled) for a Hopper kernel: a 2-D row-major view of
 * a buffer in global memory, copied in boxes into shared memory with the given swizzle. Elements past dims read
 * as zero (tails). With planes > 0 it is 3-D: planes such views plane_bytes apart (a strided batch of matrices),
 * the box one plane deep. */
typedef struct cut_tma_desc {
    int operand;            /* the work's buffer it maps: 0 (a GEMM's A) or 1 (a GEMM's B, a conv's weights) */
    int elem_bytes;         /* 2 (fp16/bf16) or 4 (fp32/tf32) */
    unsigned long long dims[2];   /* elements, innermost (contiguous) dimension first */
    unsigned long long row_bytes; /* byte stride of dimension 1 (a multiple of 16) */
    unsigned box[2];        /* box in elements, innermost first (each <= 256; box[0] * elem_bytes <= swizzle span) */
    int swizzle;            /* 0 (none), 32, 64 or 128 bytes */
    unsigned long long planes;      /* 3-D maps: dimension 2's extent (1 .. 2^32); 0: a 2-D map */
    unsigned long long plane_bytes; /* 3-D maps: byte stride of dimension 2 (a multiple of 16, holding a plane) */
} cut_tma_desc;

/* ---- the work ---- */

#define CUT_WORK_MAX_BUFS 32
#define CUT_CALL_MAX_ARGS 32
#define CUT_WORK_NAME 64
#define CUT_WORK_POISON0 0xFFu
#define CUT_WORK_POISON1 0x7Fu

typedef enum cut_check_rule { CUT_CHECK_CLOSE, CUT_CHECK_FROBENIUS, CUT_CHECK_EXACT, CUT_CHECK_COUNT } cut_check_rule;
/* "close", "frobenius", "exact" ("?" outside the enum). */
const char *cut_check_rule_name(cut_check_rule r);

/* What a work computes, for what a runner adds of its own: the vendor baseline (cuDNN for a conv, cuBLAS/cuBLASLt
 * for a GEMM) and references it computes (runner_refs). dims are the op's parameters in the op's order
 * (cut_conv_work_op / cut_gemm_work_op write and read them); PLAIN: none, nothing but the calls can run. */
#define CUT_WORK_OP_DIMS 16
typedef enum cut_work_op_kind { CUT_WORK_PLAIN, CUT_WORK_CONV, CUT_WORK_GEMM, CUT_WORK_OP_COUNT } cut_work_op_kind;
typedef struct cut_work_op {
    cut_work_op_kind kind;
    int ndims;
    long long dims[CUT_WORK_OP_DIMS];
} cut_work_op;

typedef struct cut_work_buf {
    char name[CUT_WORK_NAME];
    int is_output;
    int zero_init;       /* outputs the kernel accumulates into: cleared to zero before each checked run (and
                            each timed run is then not checked) instead of poisoned */
    cut_elem dtype;
    size_t elems;
    const void *data[2]; /* inputs: contents of set 0 and set 1 (elems * cut_elem_size bytes each);
                            outputs: the references of set 0 and 1, or both NULL (capture, or runner_refs) */
} cut_work_buf;

typedef struct cut_work {
    int nbufs;
    cut_work_buf bufs[CUT_WORK_MAX_BUFS];
    cut_check_rule check;
    double atol, rtol;   /* CLOSE: per element; FROBENIUS: rtol bounds the relative error (atol unused) */
    cut_work_op op;
    int runner_refs;     /* 1: no output has data; the runner computes both references from op (GEMM only) */
    double flops;        /* per call (0: not counted): GFLOP/s of an energy run, the physical floor (verify.h) */
    double bytes;        /* per call, the least memory traffic it needs (each input read once; 0: not counted):
                            the physical floor when the L2 is flushed before each timed launch */
    int owns_data;       /* 1: every data pointer is malloc'd and freed by cut_work_free */
} cut_work;

/* The frame of an op's work with two inputs and one output (a conv's input, weights and output; a GEMM's A, B, C):
 * three buffers named names, n[i] elements each, the inputs of in_dtype, the output fp32 without references yet,
 * owns_data, bytes the two inputs' sizes. x[s][t] gets a malloc'd array of the n[t] float values of input t in set s, uniform in [-1, 1): set s
 * from cut_input_set_seed(seed, s), the second input from that seed ^ the golden-ratio constant; the four fill in
 * parallel. The caller stores them (or a packed copy) as the inputs' data and adds the references. */
void cut_work_pair(cut_work *w, const char *const names[3], cut_elem in_dtype, const size_t n[3], uint64_t seed,
                   float *x[2][2]);

/* Frees the data of a work that owns it (owns_data) and clears the work; NULL is a no-op. */
void cut_work_free(cut_work *w);

/* 1 when a and b are the same work to a runner: every field but owns_data equal and every buffer's bytes equal (a
 * full comparison, no hash: a runner that holds a copy takes a work for its copy only when nothing differs). */
int cut_work_same(const cut_work *a, const cut_work *b);

/* ---- a call on a work ---- */

/* One kernel argument: a buffer's device (or host, emulated) address, a TMA map over a buffer, or scalar bytes. */
typedef struct cut_call_arg {
    int buf;             /* >= 0: bufs[buf] (of the input set in use); -1: a scalar */
    unsigned size;       /* scalar: 1, 2, 4 or 8 bytes */
    unsigned char bytes[8];
    int scalar_type;     /* scalar: 1 + its cut_elem when known (cut_kspec_call sets it; the Triton runner passes the
                            value typed), 0: not said (read as a signed integer of size bytes) */
    int tma;             /* 1 (buf >= 0): a CUtensorMap of bufs[buf] described by desc, passed by value */
    cut_tma_desc desc;
} cut_call_arg;

typedef struct cut_compiled cut_compiled; /* compile.h */

typedef struct cut_call {
    const char *src;         /* CUDA C source (the emulation runner compiles it) */
    const cut_compiled *bin; /* its cubin (the GPU runner loads it); NULL for the emulation runner */
    int arch_a;              /* src needs the architecture-specific target (sm_90a: wgmma, setmaxnreg): a runner that
                                compiles src itself compiles it for that */
    char entry[64];
    unsigned grid[3], block[3], smem;
    int nargs;
    cut_call_arg args[CUT_CALL_MAX_ARGS];
    double tol_scale;        /* > 1: this call's tolerances are the work's times tol_scale; else the work's */
    int gpu_only;            /* 1: the code generator says the kernel uses inline PTX: emulation refuses it (the
                                emulation runner also finds asm statements in the source by itself) */
    const char *keep_dir;    /* NULL, or where a runner that builds the kernel itself (Triton) leaves what it built */
} cut_call;

/* Outputs captured by a run without references: data[i][s] for bufs[i] (outputs only) and set s, malloc'd
 * (elems * dtype size bytes); NULL elsewhere. Free with cut_work_outputs_free. */
typedef struct cut_work_outputs {
    void *data[CUT_WORK_MAX_BUFS][2];
} cut_work_outputs;
void cut_work_outputs_free(cut_work_outputs *o);

/* Checks a structurally sound work: 1..CUT_WORK_MAX_BUFS buffers, each >= 1 element of a known dtype, inputs with
 * both sets, outputs with both references or none (the same for every output; none with runner_refs, which needs a
 * GEMM op), at least one output, a known rule, finite tolerances >= 0, a known op with 0..CUT_WORK_OP_DIMS dims,
 * flops and bytes finite and >= 0. 0, or -1 with a sentence naming the buffer. */
int cut_work_check(const cut_work *w, cut_err *e);
/* A runner's own copy of w: w checked (-1 with e; a taken w is freed), then taken over (take: *out is w, w cleared)
 * or copied deeply (out->owns_data). */
int cut_work_keep(cut_work *w, int take, cut_work *out, cut_err *e);
/* Checks a call against its work: 1..CUT_CALL_MAX_ARGS arguments, buffer indices in range, scalar sizes 1/2/4/8, a
 * TMA map over an input buffer whose element size matches, a non-empty launch (each dimension >= 1, <= 1024
 * threads per block), a finite tol_scale. 0, or -1 with a sentence. */
int cut_call_check(const cut_work *w, const cut_call *c, cut_err *e);
/* 1 when runs check (the outputs have references, or the runner computes them), 0 when runs capture. */
int cut_work_has_refs(const cut_work *w);
/* The tolerances a call runs under: the work's, times c->tol_scale when that is > 1. */
void cut_call_tolerance(const cut_work *w, const cut_call *c, double *atol, double *rtol);

/* Compares output buffer b's contents got with ref (both b->elems of b->dtype) by rule. Returns 0 when they pass,
 * else the number of wrong elements (FROBENIUS: 1), with msg a sentence ("3 of 1024 outputs wrong: y[17] = nan,
 * want 0.25", "relative Frobenius error 0.5 > tolerance 1e-05 (C[12] = 3, want 4)"); *max_err gets the largest
 * |got - ref| among finite pairs (FROBENIUS: the relative error, +Inf when got has a NaN or Inf). */
size_t cut_work_compare(const cut_work_buf *b, const void *got, const void *ref, cut_check_rule rule, double atol,
                        double rtol, double *max_err, char *msg, size_t msg_len);

#ifdef __cplusplus
}
#endif

#endif
