/* cutune — the cuBLAS baseline, run inside the measurement worker (see cublas_baseline.h).
 *
 * libcublas.so.13 is loaded with dlopen (cublas_v2.h for types and prototypes only), so cutune never links cuBLAS.
 * Math: CUBLAS_PEDANTIC_MATH, i.e. plain fp32 FMA kernels: no TF32 tensor-core math (which CUBLAS_DEFAULT_MATH
 * would also exclude for cublasSgemm, but PEDANTIC additionally rules out any reduced-precision shortcut), so the
 * baseline is like-for-like with cutune's fp32 SIMT kernels.
 *
 * cutune's matrices are row-major: C[M][N] = A[M][K] · B with B = B[K][N] (NN) or B[N][K] (NT, C = A·Bᵀ). cuBLAS is
 * column-major; a row-major X[r][c] is the column-major Xᵀ with leading dimension c. So we ask cuBLAS for
 * Cᵀ (N×M, ldc = N) = op(B) · Aᵀ, where Aᵀ is A's memory as a K×M column-major matrix (lda = K) and op(B) is
 * B's memory as N×K column-major (ldb = N, no transpose) for NN, or B's memory as K×N column-major (ldb = K)
 * transposed for NT. */
#include "measure/cublas_baseline.h"

#include "cutune/util.h"
#include "gpu/cuda_drv.h"

#include <cublas_v2.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUT_STR_(x) #x
#define CUT_STR(x) CUT_STR_(x)

/* Symbol names as exported (cublas_v2.h maps cublasCreate to cublasCreate_v2 and so on). */
#define CUT_BLAS_FUNCS(X)                                                                                            \
    X(cublasCreate_v2)                                                                                               \
    X(cublasDestroy_v2)                                                                                              \
    X(cublasGetVersion_v2)                                                                                           \
    X(cublasGetStatusString)                                                                                         \
    X(cublasSetMathMode)                                                                                             \
    X(cublasGetMathMode)                                                                                             \
    X(cublasSetStream_v2)                                                                                            \
    X(cublasSgemm_v2)

#define CUT_BLAS_FIELD(fn) __typeof__(fn) *fn;
typedef struct blas_state {
    void *lib;
    cublasHandle_t handle;
    CUT_BLAS_FUNCS(CUT_BLAS_FIELD)
} blas_state;
#undef CUT_BLAS_FIELD

void cut_cublas_state_free(void *state)
{
    blas_state *s = state;
    if (!s)
        return;
    if (s->handle)
        s->cublasDestroy_v2(s->handle);
    /* The library stays loaded (process-wide state; the worker exits soon after). */
    free(s);
}

/* Resolves every function of CUT_BLAS_FUNCS from h. 0, or -1 with e naming the missing one. */
static int blas_resolve(blas_state *s, void *h, const char *lib, cut_err *e)
{
#define CUT_BLAS_RESOLVE(fn)                                                                                         \
    *(void **)(&s->fn) = dlsym(h, CUT_STR(fn));                                                                      \
    if (!s->fn)                                                                                                      \
        return cut_err_set(e, "cuBLAS unavailable: %s lacks %s (not cuBLAS 13?)", lib, CUT_STR(fn));
    CUT_BLAS_FUNCS(CUT_BLAS_RESOLVE)
#undef CUT_BLAS_RESOLVE
    return 0;
}

/* Loads cuBLAS, creates a handle on the current (primary) context, on the legacy default stream, with pedantic fp32
 * math. Caller frees with cut_cublas_state_free. */
static blas_state *blas_load(cut_err *e)
{
    const char *lib = NULL;
    void *h = cut_dlopen("CUTUNE_CUBLAS_LIB", "libcublas.so.13", "cuBLAS", "; install cuBLAS 13 for the GEMM baseline",
                         &lib, e);
    if (!h)
        return NULL;
    blas_state *s = cut_xcalloc(1, sizeof *s);
    s->lib = h;
    if (blas_resolve(s, h, lib, e) != 0) {
        free(s);
        return NULL;
    }
    cublasStatus_t st = s->cublasCreate_v2(&s->handle);
    if (st != CUBLAS_STATUS_SUCCESS) {
        cut_err_set(e, "cublasCreate failed: %s", s->cublasGetStatusString(st));
        s->handle = NULL;
        cut_cublas_state_free(s);
        return NULL;
    }
    cublasMath_t mode = CUBLAS_DEFAULT_MATH;
    if ((st = s->cublasSetStream_v2(s->handle, NULL)) != CUBLAS_STATUS_SUCCESS ||
        (st = s->cublasSetMathMode(s->handle, CUBLAS_PEDANTIC_MATH)) != CUBLAS_STATUS_SUCCESS ||
        (st = s->cublasGetMathMode(s->handle, &mode)) != CUBLAS_STATUS_SUCCESS || mode != CUBLAS_PEDANTIC_MATH) {
        cut_err_set(e, "cuBLAS did not accept the legacy stream and CUBLAS_PEDANTIC_MATH: %s (math mode %d)",
                    s->cublasGetStatusString(st), (int)mode);
        cut_cublas_state_free(s);
        return NULL;
    }
    return s;
}

typedef struct blas_run {
    blas_state *s;
    cublasOperation_t op_b;
    int m, n, k, ldb;
    CUdeviceptr a, b, c;
} blas_run;

static int blas_launch(void *arg, char *msg, size_t n, int *sticky)
{
    blas_run *r = arg;
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st = r->s->cublasSgemm_v2(r->s->handle, r->op_b, CUBLAS_OP_N, r->n, r->m, r->k, &one,
                                             (const float *)(uintptr_t)r->b, r->ldb, (const float *)(uintptr_t)r->a,
                                             r->k, &zero, (float *)(uintptr_t)r->c, r->n);
    if (st == CUBLAS_STATUS_SUCCESS)
        return 0;
    snprintf(msg, n, "cublasSgemm: %s", r->s->cublasGetStatusString(st));
    /* An execution failure may have killed the context: ask the driver. */
    *sticky = cut_cu()->cuCtxSynchronize() != CUDA_SUCCESS;
    return -1;
}

int cut_cublas_baseline(cut_wk *w, cut_result *best, char *algo, size_t algo_len, int *fatal, cut_err *e)
{
    *fatal = 0;
    cut_result_reset(best);
    if (algo_len)
        algo[0] = '\0';
    cut_wk_tensors t;
    cut_wk_get_tensors(w, &t);
    if (!t.gemm)
        return cut_err_set(e, "cuBLAS baseline: no GEMM workload prepared");
    const cut_gemm *g = t.gemm;
    if (g->dtype != CUT_DT_FP32)
        return cut_err_set(e, "cuBLAS baseline: dtype %s is not supported yet (fp32 only)", cut_dtype_name(g->dtype));
    void **slot = cut_wk_cublas_slot(w);
    if (!*slot && !(*slot = blas_load(e)))
        return -1;
    const int nt = g->layout == CUT_GEMM_NT;
    blas_run r = {.s = *slot, .op_b = nt ? CUBLAS_OP_T : CUBLAS_OP_N, .m = g->m, .n = g->n, .k = g->k,
                  .ldb = nt ? g->k : g->n, .a = t.in, .b = t.w, .c = t.out};
    cut_wk_launcher l = {blas_launch, &r};
    cut_wk_check_and_time(w, &l, best, fatal);
    snprintf(algo, algo_len, "SGEMM_PEDANTIC_%s", nt ? "NT" : "NN");
    return 0;
}
