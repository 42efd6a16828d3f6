/* cutune — the protocol's comparisons on the device (issue 15), inside the GPU worker.
 *
 * verify.h compares every output with its reference and every input with the work's bytes, three times per
 * candidate. On the host that is a copy of each buffer back over PCIe and a pass over it: about half a second per
 * candidate of a 4096^3 GEMM (2.9x slower tuning than before the inputs were checked). Here the same comparisons run
 * as kernels next to the data and only a few numbers come back:
 *   cut_dc_diff     two buffers word by word: how many 32-bit words differ, and the hash of the second
 *   cut_dc_compare  an output against its reference by the work's rule: the elements out of tolerance and the
 *                   largest error (CLOSE), or the sums of squares of the difference and of the reference
 *                   (FROBENIUS), and the hash of the reference
 * They only ever clear a buffer: whatever they find wrong, the host reads the buffer and compares it as before, so
 * every verdict and message stays the host's. The hash (a sum over words of a 64-bit mix of each word and its index)
 * tells the worker that its device copies (a pristine copy of each input, each reference) still hold what it put
 * there: a kernel that writes outside its own buffers cannot make a wrong answer pass by overwriting them.
 *
 * The kernels are CUDA C compiled by NVRTC (cut_dc_source, also built for the host emulator in the tests). */
#ifndef CUTUNE_MEASURE_DEVCHECK_H
#define CUTUNE_MEASURE_DEVCHECK_H

#include "cutune/work.h"
#include "gpu/cuda_drv.h"

#include <stdint.h>

/* The kernels' CUDA source and entry names. */
extern const char cut_dc_source[];
#define CUT_DC_DIFF "cut_dc_diff"
#define CUT_DC_CMP_F32 "cut_dc_cmp_f32"
#define CUT_DC_CMP_F64 "cut_dc_cmp_f64"
#define CUT_DC_CMP_F16 "cut_dc_cmp_f16"
#define CUT_DC_CMP_BF16 "cut_dc_cmp_bf16"
/* What every kernel writes: CUT_DC_OUT_WORDS 64-bit words, zeroed before each launch. */
enum { CUT_DC_BAD, CUT_DC_MAXE, CUT_DC_HASH, CUT_DC_NUM, CUT_DC_DEN, CUT_DC_OUT_WORDS };
/* A kernel's launch: threads per block and at most blocks per SM. */
#define CUT_DC_THREADS 256
#define CUT_DC_BLOCKS_PER_SM 8

typedef struct cut_dc cut_dc;

/* The comparison kernels, compiled for dev (cubin cache under cache_dir; NULL: none) and loaded into the current
 * context. NULL with e when NVRTC or the load fails (the host compares instead). */
cut_dc *cut_dc_load(const cut_cu_api *cu, CUdevice dev, const char *cache_dir, cut_err *e);
/* Unloads (nothing on the device when the context is dead). */
void cut_dc_free(cut_dc *dc, int context_dead);

/* a and b, bytes long: *ndiff the 32-bit words that differ (the last one padded with zeros), *hash b's hash. 0, or
 * -1 with *rc the CUDA error. */
int cut_dc_diff(cut_dc *dc, CUdeviceptr a, CUdeviceptr b, size_t bytes, uint64_t *ndiff, uint64_t *hash, CUresult *rc);

typedef struct cut_dc_cmp {
    uint64_t bad;    /* elements out of tolerance (CLOSE), or 1 when the relative error is over it (FROBENIUS) */
    double max_err;  /* the largest |got - ref| over finite pairs (CLOSE), or the relative Frobenius error */
    uint64_t hash;   /* the reference's hash */
} cut_dc_cmp;

/* got against ref, elems of dtype dt, as cut_work_compare by rule (atol, rtol; FROBENIUS: rtol is the tolerance).
 * 0; 1 when dt has no comparison kernel (integers: compare them with cut_dc_diff, which is what EXACT means); -1
 * with *rc the CUDA error. */
int cut_dc_compare(cut_dc *dc, cut_elem dt, cut_check_rule rule, CUdeviceptr got, CUdeviceptr ref, size_t elems,
                   double atol, double rtol, cut_dc_cmp *out, CUresult *rc);

/* The hash of n bytes on the host, as the kernels compute it. */
uint64_t cut_dc_hash_host(const void *p, size_t n);

#endif
