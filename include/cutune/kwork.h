/* cutune — a user kernel as a workload for a runner (issue 7): its buffers, two input sets, references, and one call.
 *
 * The optimizer (optimize.h) turns a kernel spec (kspec.h) into a cut_kwork: every input tensor with two contents
 * (set 0 from the spec's seed, set 1 fresh: a kernel that remembers its inputs or hard-codes outputs fails on set 1)
 * and every output tensor with the reference output of each set, or none. A runner's run_kernel then, like the conv
 * and GEMM paths:
 *   1. poisons every output (bytes 0xFF: NaN for floats), runs the call on set 0, checks against reference 0;
 *   2. times the call on set 0 (the timing policy of the runner);
 *   3. poisons again with bytes 0x7F (a different value, so an unwritten integer output cannot match by chance),
 *      runs on set 1 and checks against reference 1.
 * Without references (the baseline's first run) steps 1 and 3 capture the outputs instead (cut_kw_outputs), which
 * become the references of every later call. Checks: floats |got - ref| <= atol + rtol * |ref|, NaN and Inf never
 * pass (unless the reference has the same non-finite value); integers exactly. */
#ifndef CUTUNE_KWORK_H
#define CUTUNE_KWORK_H

#include "cutune/common.h"
#include "cutune/compile.h"
#include "cutune/kspec.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUT_KW_MAX_BUFS (2 * CUT_KS_MAX_TENSORS)
#define CUT_KW_MAX_ARGS CUT_KS_MAX_ARGS
#define CUT_KW_POISON0 0xFFu
#define CUT_KW_POISON1 0x7Fu

typedef struct cut_kw_buf {
    char name[CUT_KS_NAME];
    int is_output;
    int zero_init;       /* outputs the kernel accumulates into: cleared to zero before each checked run (and
                            each timed run is then not checked) instead of poisoned */
    cut_ks_dtype dtype;
    size_t elems;
    const void *data[2]; /* inputs: contents of set 0 and set 1 (elems * cut_ks_dtype_size bytes each, not owned);
                            outputs: the references of set 0 and 1, or both NULL (capture) */
} cut_kw_buf;

typedef struct cut_kwork {
    int nbufs;
    cut_kw_buf bufs[CUT_KW_MAX_BUFS];
    double atol, rtol;
} cut_kwork;

/* One kernel argument: a buffer's device (or host, emulated) address, or a scalar's bytes. */
typedef struct cut_kw_arg {
    int buf;             /* >= 0: the address of bufs[buf]; -1: a scalar */
    unsigned size;       /* scalar: 1, 2, 4 or 8 bytes */
    unsigned char bytes[8];
} cut_kw_arg;

typedef struct cut_kcall {
    const char *src;         /* CUDA C source (the emulation runner compiles it) */
    const cut_compiled *bin; /* its cubin (the GPU runner loads it); NULL for the emulation runner */
    char entry[64];
    unsigned grid[3], block[3], smem;
    int nargs;
    cut_kw_arg args[CUT_KW_MAX_ARGS];
} cut_kcall;

/* Outputs captured by a run without references: data[i][s] for bufs[i] (outputs only) and set s, malloc'd
 * (elems * dtype size bytes); NULL elsewhere. Free with cut_kw_outputs_free. */
typedef struct cut_kw_outputs {
    void *data[CUT_KW_MAX_BUFS][2];
} cut_kw_outputs;
void cut_kw_outputs_free(cut_kw_outputs *o);

/* Checks a structurally sound work: 1..CUT_KW_MAX_BUFS buffers, each >= 1 element of a known dtype, inputs with both
 * sets, outputs with both references or none (the same for every output), at least one output, finite tolerances
 * >= 0. 0, or -1 with a sentence naming the buffer. */
int cut_kwork_check(const cut_kwork *w, cut_err *e);
/* Checks a call against its work: 1..CUT_KW_MAX_ARGS arguments, buffer indices in range, scalar sizes 1/2/4/8, a
 * non-empty launch (each dimension >= 1, <= 1024 threads per block). 0, or -1 with a sentence. */
int cut_kcall_check(const cut_kwork *w, const cut_kcall *c, cut_err *e);
/* 1 when the work has references (every run checks), 0 when runs capture. */
int cut_kwork_has_refs(const cut_kwork *w);

/* Compares output buffer b's contents got with ref (both elems of b->dtype) by the rule above. Returns the number
 * of mismatches; *max_err gets the largest |got - ref| among finite pairs; msg the first mismatch ("y[17] = nan,
 * want 0.25"). */
size_t cut_kw_compare(const cut_kw_buf *b, const void *got, const void *ref, double atol, double rtol,
                      double *max_err, char *msg, size_t msg_len);

#ifdef __cplusplus
}
#endif

#endif
