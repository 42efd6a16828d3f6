/* cutune — the CUDA driver API, loaded from libcuda.so.1 with dlopen (internal header).
 *
 * cuda.h is included for types and prototypes only; every call goes through the table below. cuda.h renames many
 * entry points (cuMemAlloc -> cuMemAlloc_v2); the X-macro picks up the same renaming for the field names and the
 * dlsym strings, so `cut_cu()->cuMemAlloc(...)` calls the versioned symbol. */
#ifndef CUTUNE_GPU_CUDA_DRV_H
#define CUTUNE_GPU_CUDA_DRV_H

#include "cutune/common.h"

#include <cuda.h>

#define CUT_CU_FUNCS(X)                                                                                              \
    X(cuInit)                                                                                                        \
    X(cuDriverGetVersion)                                                                                            \
    X(cuDeviceGetCount)                                                                                              \
    X(cuDeviceGet)                                                                                                   \
    X(cuDeviceGetName)                                                                                               \
    X(cuDeviceGetAttribute)                                                                                          \
    X(cuDeviceTotalMem)                                                                                              \
    X(cuDeviceGetUuid)                                                                                               \
    X(cuDevicePrimaryCtxRetain)                                                                                      \
    X(cuDevicePrimaryCtxRelease)                                                                                     \
    X(cuCtxSetCurrent)                                                                                               \
    X(cuCtxSynchronize)                                                                                              \
    X(cuMemAlloc)                                                                                                    \
    X(cuMemFree)                                                                                                     \
    X(cuMemGetInfo)                                                                                                  \
    X(cuMemcpyHtoD)                                                                                                  \
    X(cuMemcpyDtoH)                                                                                                  \
    X(cuMemcpyDtoD)                                                                                                  \
    X(cuMemcpyDtoDAsync)                                                                                             \
    X(cuMemsetD8)                                                                                                    \
    X(cuMemsetD32)                                                                                                   \
    X(cuModuleLoadData)                                                                                              \
    X(cuModuleUnload)                                                                                                \
    X(cuModuleGetFunction)                                                                                           \
    X(cuModuleGetGlobal)                                                                                             \
    X(cuFuncGetAttribute)                                                                                            \
    X(cuFuncSetAttribute)                                                                                            \
    X(cuLaunchKernel)                                                                                                \
    X(cuTensorMapEncodeTiled)                                                                                        \
    X(cuStreamCreate)                                                                                                \
    X(cuStreamDestroy)                                                                                               \
    X(cuStreamSynchronize)                                                                                           \
    X(cuStreamBeginCapture)                                                                                          \
    X(cuStreamEndCapture)                                                                                            \
    X(cuGraphInstantiateWithFlags)                                                                                   \
    X(cuGraphLaunch)                                                                                                 \
    X(cuGraphExecDestroy)                                                                                            \
    X(cuGraphDestroy)                                                                                                \
    X(cuEventCreate)                                                                                                 \
    X(cuEventDestroy)                                                                                                \
    X(cuEventRecord)                                                                                                 \
    X(cuEventSynchronize)                                                                                            \
    X(cuEventElapsedTime)                                                                                            \
    X(cuGetErrorName)                                                                                                \
    X(cuGetErrorString)

#define CUT_CU_FIELD(fn) __typeof__(fn) *fn;
typedef struct cut_cu_api {
    CUT_CU_FUNCS(CUT_CU_FIELD)
} cut_cu_api;
#undef CUT_CU_FIELD

/* Loads libcuda.so.1 (once, thread-safe) and resolves every entry point. Returns the table, or NULL with a
 * sentence in e: "no NVIDIA driver found: libcuda.so.1 could not be loaded (...)". Does not call cuInit. */
const cut_cu_api *cut_cu_load(cut_err *e);
/* The loaded table (NULL before a successful cut_cu_load). */
const cut_cu_api *cut_cu(void);

/* "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)" into buf. */
void cut_cu_describe(CUresult r, char *buf, size_t n);

/* CU_CHECK: for setup paths; on failure sets e with the expression, file:line and the error, and returns -1. */
#define CU_CHECK(expr, e)                                                                                            \
    do {                                                                                                             \
        CUresult cut_rc_ = (expr);                                                                                   \
        if (cut_rc_ != CUDA_SUCCESS) {                                                                               \
            char cut_d_[256];                                                                                        \
            cut_cu_describe(cut_rc_, cut_d_, sizeof cut_d_);                                                         \
            return cut_err_set((e), "%s failed at %s:%d: %s", #expr, __FILE__, __LINE__, cut_d_);                    \
        }                                                                                                            \
    } while (0)

#endif
