/* cutune — the worker's TMA maps: a call's TMA arguments checked against the buffers they map and encoded
 * (cuTensorMapEncodeTiled) over them. */
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

/* Encodes descriptor t over buffer b (see worker_work.h). */
int cut_wk_tma_encode(const cut_cu_api *cu, const cut_tma_desc *t, int i, const cut_work_buf *b, CUdeviceptr base,
                      CUtensorMap *map, cut_result *res)
{
    char d[160], why[160];
    cut_wp_tma_describe(t, d, sizeof d);
    const size_t elem = cut_elem_size(b->dtype);
    const unsigned long long have = (unsigned long long)b->elems * elem;
    if (b->dtype != CUT_EL_F32 && b->dtype != CUT_EL_F16 && b->dtype != CUT_EL_BF16)
        return cut_wk_set_status(res, CUT_ST_LAUNCH_ERROR, "TMA map of argument %d (%s): buffer '%s' holds %s", i, d,
                                 b->name, cut_elem_name(b->dtype)), -1;
    if ((size_t)t->elem_bytes != elem)
        return cut_wk_set_status(res, CUT_ST_LAUNCH_ERROR,
                                 "TMA map of argument %d (%s): %d-byte elements, buffer '%s' stores %zu-byte ones", i,
                                 d, t->elem_bytes, b->name, elem), -1;
    if (cut_wp_tma_span(t) > have)
        return cut_wk_set_status(res, CUT_ST_LAUNCH_ERROR,
                                 "TMA map of argument %d (%s) reaches past the end of buffer '%s' (%llu bytes)", i, d,
                                 b->name, have), -1;
    const CUtensorMapDataType dt = b->dtype == CUT_EL_F32   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                   : b->dtype == CUT_EL_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                             : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    /* a 3-D map (planes): the batch as the outer dimension, one plane a box */
    const cuuint64_t dims[3] = {t->dims[0], t->dims[1], t->planes}, strides[2] = {t->row_bytes, t->plane_bytes};
    const cuuint32_t box[3] = {t->box[0], t->box[1], 1}, estr[3] = {1, 1, 1};
    /* L2 promotion 128 B: with rows only 16-byte aligned (fp16 K = 7384: 14768-byte rows) 256-byte promotion fetched
     * past each 128-byte box row; measured on the H200 (wgmma fp16 7384^3 NN): 463 TFLOP/s at 256 B, 550 at 128 B;
     * on aligned rows (7392^3) both 727-729. */
    CUresult rc = cu->cuTensorMapEncodeTiled(map, dt, t->planes ? 3 : 2, (void *)(uintptr_t)base, dims, strides, box, estr,
                                             CU_TENSOR_MAP_INTERLEAVE_NONE, tma_swizzle(t->swizzle),
                                             CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (rc != CUDA_SUCCESS) {
        cut_cu_describe(rc, why, sizeof why);
        cut_wk_set_status(res, CUT_ST_LAUNCH_ERROR, "cuTensorMapEncodeTiled, argument %d (%s): %s", i, d, why);
        return -1;
    }
    return 0;
}
