/* cutune — the GEMM reference on the GPU: cuBLAS DGEMM (fp64) of the rounded inputs, inside the worker.
 *
 * The double CPU reference (cut_gemm_reference) streams B once per row of C, which is fine for the small shapes of
 * the tests and the emulator but takes far too long at 4096^3 and beyond. The worker instead widens A and B to
 * double, multiplies them with cublasDgemm (row-major C = A·B or A·Bᵀ as the column-major Cᵀ = op(B)·Aᵀ, as
 * cublas_baseline.c explains) and keeps the fp64 result as the reference: "checked against cuBLAS in higher
 * precision". libcublas.so.13 is loaded with dlopen ($CUTUNE_CUBLAS_LIB overrides), as for the baselines. */
#include "measure/gemm_ref_gpu.h"

#include "cutune/util.h"

#include <cublas_v2.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct dgemm_api {
    __typeof__(cublasCreate_v2) *create;
    __typeof__(cublasDestroy_v2) *destroy;
    __typeof__(cublasSetStream_v2) *set_stream;
    __typeof__(cublasDgemm_v2) *dgemm;
    __typeof__(cublasGetStatusString) *status;
} dgemm_api;

static int dgemm_load(dgemm_api *api, cut_err *e)
{
    const char *lib = NULL;
    void *h = cut_dlopen("CUTUNE_CUBLAS_LIB", "libcublas.so.13", "cuBLAS",
                         "; install cuBLAS 13 for the GEMM reference on the GPU", &lib, e);
    if (!h)
        return -1;
    *(void **)&api->create = dlsym(h, "cublasCreate_v2");
    *(void **)&api->destroy = dlsym(h, "cublasDestroy_v2");
    *(void **)&api->set_stream = dlsym(h, "cublasSetStream_v2");
    *(void **)&api->dgemm = dlsym(h, "cublasDgemm_v2");
    *(void **)&api->status = dlsym(h, "cublasGetStatusString");
    if (!api->create || !api->destroy || !api->set_stream || !api->dgemm || !api->status)
        return cut_err_set(e, "cuBLAS unavailable: %s lacks cublasDgemm_v2 or its companions (not cuBLAS 13?)", lib);
    return 0;
}

/* n floats widened to doubles and copied to a new device buffer *d. */
static int upload_wide(const cut_cu_api *cu, const float *x, size_t n, CUdeviceptr *d, cut_err *e)
{
    double *w = malloc(n * sizeof *w);
    if (!w)
        return cut_err_set(e, "GPU reference: out of host memory for %zu doubles", n);
    for (size_t i = 0; i < n; i++)
        w[i] = x[i];
    CUresult rc = cu->cuMemAlloc(d, n * sizeof *w);
    if (rc == CUDA_SUCCESS && (rc = cu->cuMemcpyHtoD(*d, w, n * sizeof *w)) != CUDA_SUCCESS)
        cu->cuMemFree(*d);
    free(w);
    if (rc != CUDA_SUCCESS) {
        char dsc[160];
        cut_cu_describe(rc, dsc, sizeof dsc);
        *d = 0;
        return cut_err_set(e, "GPU reference: %zu MB of fp64 operands: %s", n * sizeof(double) >> 20, dsc);
    }
    return 0;
}

/* One cuBLAS handle for the worker's life: both input sets' references (and every later GEMM work's) share it, so
 * cuBLAS is loaded and its handle created once (the worker runs on one thread and one context). */
static struct {
    int ready;
    dgemm_api api;
    cublasHandle_t h;
} ref_state;

static int ref_handle(cut_err *e)
{
    if (ref_state.ready)
        return 0;
    if (dgemm_load(&ref_state.api, e) != 0)
        return -1;
    cublasStatus_t st = ref_state.api.create(&ref_state.h);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = ref_state.api.set_stream(ref_state.h, NULL);
    if (st != CUBLAS_STATUS_SUCCESS) {
        if (ref_state.h)
            ref_state.api.destroy(ref_state.h);
        ref_state.h = NULL;
        return cut_err_set(e, "GPU reference: cublasCreate: %s", ref_state.api.status(st));
    }
    ref_state.ready = 1;
    return 0;
}

/* alpha · op(A) · op(B) of every batch, one DGEMM per batch (a reference: simplicity over speed). A stored K×M (TN,
 * TT) is the column-major M×K with ld M, transposed; B as cublas_baseline.c explains. */
static int ref_dgemm(const cut_gemm *g, CUdeviceptr da, CUdeviceptr db, CUdeviceptr dc, cut_err *e)
{
    const double alpha = cut_gemm_alpha(g), zero = 0.0;
    const int at = cut_gemm_a_trans(g), bt = cut_gemm_b_trans(g);
    const double *a = (const double *)(uintptr_t)da, *b = (const double *)(uintptr_t)db;
    double *c = (double *)(uintptr_t)dc;
    for (int z = 0; z < cut_gemm_batch(g); z++) {
        cublasStatus_t st = ref_state.api.dgemm(ref_state.h, bt ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                at ? CUBLAS_OP_T : CUBLAS_OP_N, g->n, g->m, g->k, &alpha,
                                                b + cut_gemm_stride(g, 'B') * z, bt ? g->k : g->n,
                                                a + cut_gemm_stride(g, 'A') * z, at ? g->m : g->k, &zero,
                                                c + cut_gemm_stride(g, 'C') * z, g->n);
        if (st != CUBLAS_STATUS_SUCCESS)
            return cut_err_set(e, "GPU reference: cublasDgemm (batch %d): %s", z, ref_state.api.status(st));
    }
    return 0;
}

int cut_gemm_reference_gpu(const cut_cu_api *cu, const cut_gemm *g, const float *a, const float *b, double *ref,
                           cut_err *e)
{
    if (ref_handle(e) != 0)
        return -1;
    CUdeviceptr da = 0, db = 0, dc = 0;
    int rc = -1;
    const size_t nc = cut_gemm_c_elems(g);
    if (upload_wide(cu, a, cut_gemm_a_elems(g), &da, e) != 0 || upload_wide(cu, b, cut_gemm_b_elems(g), &db, e) != 0)
        goto out;
    CUresult cr = cu->cuMemAlloc(&dc, nc * sizeof(double));
    if (cr != CUDA_SUCCESS) {
        char dsc[160];
        cut_cu_describe(cr, dsc, sizeof dsc);
        dc = 0;
        cut_err_set(e, "GPU reference: C in fp64: %s", dsc);
        goto out;
    }
    if (ref_dgemm(g, da, db, dc, e) != 0)
        goto out;
    if ((cr = cu->cuCtxSynchronize()) != CUDA_SUCCESS || (cr = cu->cuMemcpyDtoH(ref, dc, nc * sizeof(double))) != 0) {
        char dsc[160];
        cut_cu_describe(cr, dsc, sizeof dsc);
        cut_err_set(e, "GPU reference: DGEMM result: %s", dsc);
        goto out;
    }
    rc = 0;
out:
    if (da)
        cu->cuMemFree(da);
    if (db)
        cu->cuMemFree(db);
    if (dc)
        cu->cuMemFree(dc);
    return rc;
}
