/* cutune — run-time lookup, as TVM's apply_history_best: given the tuning records, an op's workload and the GPU a
 * program runs on, the best valid kernel cutune measured for exactly that (source, entry and launch), or a clear
 * "no record for this shape on this GPU".
 *
 * The records are the raw logs of cutune tune (DIR/tuningrecords/: caseN_conv2d_*.json, gemm_*.json). A record
 * counts when it is a measured success (status ok, a median time > 0) of the same workload (a conv's shape in
 * fp32; a GEMM's sizes, layout and dtype), the same backend ("cuda" unless asked otherwise) and the same GPU: its
 * name ("NVIDIA H200") or UUID ("GPU-...") as the records carry it, so that a time measured on another GPU or on
 * the host emulator never chooses a kernel. Among those, the fastest median wins (the earlier line on a tie). The
 * kernel is generated again from its schedule, as cutune generated it when it measured it.
 *
 * A split-K conv kernel keeps its partial sums and tile counters in global memory. The looked-up source takes them
 * as two more kernel arguments (CUT_WS_PARAM), so that launches on different streams never share them: after
 * (in, w, out) pass a float pointer to ws_partial_floats floats and an unsigned pointer to ws_counters counters,
 * zeroed before the first launch (each launch leaves them zero), one pair per stream. Other kernels take the op's
 * arguments only: a conv (in, w, out), a GEMM (A, B, C) or, when ks.ntma == 2, the two TMA maps then C. A GEMM's
 * split-K kernels (mma's turn counters, gemv's partial sums and counters) keep that state in module variables, as
 * they did when measured: one launch at a time per loaded module. */
#ifndef CUTUNE_LOOKUP_H
#define CUTUNE_LOOKUP_H

#include "cutune/codegen.h"
#include "cutune/common.h"
#include "cutune/gemm.h"
#include "cutune/workload.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cut_lookup_query {
    const char *records_dir; /* the tuning records folder (DIR/tuningrecords) */
    const char *gpu;         /* the GPU's name or UUID ("GPU-..."), as cut_gpu_query reports it; with the "emu"
                                backend it may be NULL or "" (the emulator's records name no GPU) */
    const char *backend;     /* NULL: "cuda" */
} cut_lookup_query;

typedef struct cut_lookup_kernel {
    cut_kernel_src ks;              /* source, entry, grid, block, dynamic shared memory, TMA maps; owned */
    size_t ws_partial_floats;       /* split-K workspace (see above); both 0 for a kernel that needs none */
    size_t ws_counters;
    double median_ms, gflops;       /* as recorded */
    char sched[256];                /* the schedule, described ("igemm bm=64 ...") */
    char file[1024];                /* the records file and 1-based line of the chosen record */
    int line;
    int candidates;                 /* valid records of this workload on this GPU and backend */
} cut_lookup_kernel;

/* Return values besides -1 (an error: no such folder, an unreadable or malformed file, a record that cannot be
 * generated any more, with a sentence in e). */
#define CUT_LOOKUP_FOUND 0
#define CUT_LOOKUP_NONE 1 /* no valid record for this workload on this GPU and backend: e says what there is */

/* The best conv kernel for c (fp32, NCHW) into *out. CUT_LOOKUP_NONE leaves *out empty and says in e "no record
 * for conv2d_N_..._padding_P on GPU (backend) in DIR", with what the folder does hold of that shape (records on
 * other GPUs or backends, failed trials). The kernel's entry is entry (NULL: "cut_conv2d"). Free with
 * cut_lookup_kernel_free, also after an error. */
int cut_lookup_conv(const cut_lookup_query *q, const cut_conv *c, const char *entry, cut_lookup_kernel *out,
                    cut_err *e);
/* The same for a GEMM (its sizes, layout and dtype). */
int cut_lookup_gemm(const cut_lookup_query *q, const cut_gemm *g, const char *entry, cut_lookup_kernel *out,
                    cut_err *e);
void cut_lookup_kernel_free(cut_lookup_kernel *k);

#ifdef __cplusplus
}
#endif

#endif
