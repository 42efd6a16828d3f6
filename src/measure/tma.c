/* cutune — the worker's TMA maps: a MEASURE request's two TMA descriptors checked against the prepared workload
 * and encoded (cuTensorMapEncodeTiled) over its A and B buffers. */
#include "measure/worker_int.h"

#include <stdint.h>

static CUtensorMapSwizzle tma_swizzle(int bytes)
{
    switch (bytes) {
    case 32:
        return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64:
        return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128:
        return CU_TENSOR_MAP_SWIZZLE_128B;
    default:
        return CU_TENSOR_MAP_SWIZZLE_NONE;
    }
}

/* Checks that TMA descriptor t fits the workload: its elements are the stored input's, and the rows it spans lie
 * within the operand's buffer. 0, or -1 with res a LAUNCH_ERROR naming the map (d describes it). */
static int tma_fits(const cut_wk *w, const cut_tma_desc *t, int i, const char *d, cut_result *res)
{
    const size_t elem = w->is_gemm ? cut_dtype_size(w->gemm.dtype) : sizeof(float);
    const unsigned long long have = t->operand == 0 ? w->in_bytes : w->w_bytes;
    if ((size_t)t->elem_bytes != elem)
        return cut_wk_set_status(res, CUT_ST_LAUNCH_ERROR,
                                 "TMA map %d (%s): %d-byte elements, the workload stores %zu-byte ones", i, d,
                                 t->elem_bytes, elem), -1;
    /* (dims[1] - 1) * row_bytes + dims[0] * elem_bytes <= have, without overflow */
    const unsigned long long row = (unsigned long long)t->dims[0] * (unsigned)t->elem_bytes;
    if (row > have || t->dims[1] - 1 > (have - row) / t->row_bytes)
        return cut_wk_set_status(res, CUT_ST_LAUNCH_ERROR,
                                 "TMA map %d (%s) reaches past the end of operand %s (%llu bytes)", i, d,
                                 t->operand == 0 ? "A" : "B", have), -1;
    return 0;
}

/* Encodes the kernel's TMA maps (cuTensorMapEncodeTiled: rank 2, elements of the workload's dtype, element strides
 * 1, no interleave, the descriptor's swizzle, L2 promotion 256 B, out-of-bounds elements read as zero) over the
 * worker's A and B buffers into k->maps, and points the kernel's first two arguments at them. 0, or -1 with res a
 * LAUNCH_ERROR naming the map, its descriptor and the CUresult. */
int cut_wk_tma_encode(const cut_wk *w, const cut_wp_measure *m, cut_wk_kern_launch *k, cut_result *res)
{
    for (int i = 0; i < m->ntma; i++) {
        const cut_tma_desc *t = &m->tma[i];
        char d[160], why[160];
        cut_wp_tma_describe(t, d, sizeof d);
        if (tma_fits(w, t, i, d, res) != 0)
            return -1;
        const CUtensorMapDataType dt = t->elem_bytes == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                       : (w->is_gemm && w->gemm.dtype == CUT_DT_BF16) ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                                       : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
        const cuuint64_t dims[2] = {t->dims[0], t->dims[1]}, strides[1] = {t->row_bytes};
        const cuuint32_t box[2] = {t->box[0], t->box[1]}, estr[2] = {1, 1};
        const CUdeviceptr base = t->operand == 0 ? w->d_in : w->d_w;
        /* L2 promotion 128 B: with rows only 16-byte aligned (fp16 K = 7384: 14768-byte rows) 256-byte promotion
         * fetched past each 128-byte box row; measured on the H200 (wgmma fp16 7384^3 NN): 463 TFLOP/s at 256 B,
         * 550 at 128 B; on aligned rows (7392^3) both 727-729. */
        CUresult rc = k->cu->cuTensorMapEncodeTiled(&k->maps[i], dt, 2, (void *)(uintptr_t)base, dims, strides, box,
                                                    estr, CU_TENSOR_MAP_INTERLEAVE_NONE, tma_swizzle(t->swizzle),
                                                    CU_TENSOR_MAP_L2_PROMOTION_L2_128B, /* see below */
                                                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        if (rc != CUDA_SUCCESS) {
            cut_cu_describe(rc, why, sizeof why);
            cut_wk_set_status(res, CUT_ST_LAUNCH_ERROR, "cuTensorMapEncodeTiled, map %d (%s): %s", i, d, why);
            return -1;
        }
        k->args[i] = &k->maps[i];
    }
    return 0;
}
