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
 * transposed for NT. A stored K×M (TN, TT) is the column-major M×K (lda = M), transposed.
 *
 * Strided-batched workloads run cublasGemmStridedBatchedEx / cublasSgemmStridedBatched with the packed batch strides;
 * alpha is passed as is. beta != 0 is not measured here: cuBLAS updates C in place, while the work keeps C's old
 * contents apart (Cin, so that the harness's poisoned-output check stands); only cuBLASLt's C/D pair reads one
 * buffer and writes another, so cuBLASLt measures those workloads (cublaslt_baseline.c). */
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
    X(cublasSgemm_v2)                                                                                                \
    X(cublasGemmEx)                                                                                                  \
    X(cublasSgemmStridedBatched)                                                                                     \
    X(cublasGemmStridedBatchedEx)

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
    cublasOperation_t op_a, op_b;
    int m, n, k, lda, ldb, batch;
    long long stride_a, stride_b, stride_c;
    float alpha;
    CUdeviceptr a, b, c;
    /* cublasGemmEx (ex = 1): input type and compute type */
    int ex;
    cudaDataType_t ab_type;
    cublasComputeType_t compute;
} blas_run;

/* One call: GemmEx or Sgemm for one matrix, their strided-batched forms for a batch. */
static cublasStatus_t blas_call(const blas_run *r)
{
    const blas_state *s = r->s;
    const float zero = 0.0f;
    const void *a = (const void *)(uintptr_t)r->a, *b = (const void *)(uintptr_t)r->b;
    void *c = (void *)(uintptr_t)r->c;
    if (r->ex && r->batch > 1)
        return s->cublasGemmStridedBatchedEx(s->handle, r->op_b, r->op_a, r->n, r->m, r->k, &r->alpha, b, r->ab_type,
                                             r->ldb, r->stride_b, a, r->ab_type, r->lda, r->stride_a, &zero, c,
                                             CUDA_R_32F, r->n, r->stride_c, r->batch, r->compute, CUBLAS_GEMM_DEFAULT);
    if (r->ex)
        return s->cublasGemmEx(s->handle, r->op_b, r->op_a, r->n, r->m, r->k, &r->alpha, b, r->ab_type, r->ldb, a,
                               r->ab_type, r->lda, &zero, c, CUDA_R_32F, r->n, r->compute, CUBLAS_GEMM_DEFAULT);
    if (r->batch > 1)
        return s->cublasSgemmStridedBatched(s->handle, r->op_b, r->op_a, r->n, r->m, r->k, &r->alpha, b, r->ldb,
                                            r->stride_b, a, r->lda, r->stride_a, &zero, c, r->n, r->stride_c,
                                            r->batch);
    return s->cublasSgemm_v2(s->handle, r->op_b, r->op_a, r->n, r->m, r->k, &r->alpha, b, r->ldb, a, r->lda, &zero, c,
                             r->n);
}

static int blas_launch(void *arg, CUstream stream, char *msg, size_t n, int *sticky)
{
    blas_run *r = arg;
    cublasStatus_t st = r->s->cublasSetStream_v2(r->s->handle, (cudaStream_t)stream);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = blas_call(r);
    if (st == CUBLAS_STATUS_SUCCESS)
        return 0;
    snprintf(msg, n, "%s%s: %s", r->ex ? "cublasGemm" : "cublasSgemm", r->batch > 1 ? "StridedBatched" : "",
             r->s->cublasGetStatusString(st));
    /* An execution failure may have killed the context: ask the driver. */
    *sticky = cut_cu()->cuCtxSynchronize() != CUDA_SUCCESS;
    return -1;
}

/* The handle's math mode for the next calls. */
static int blas_math(blas_state *s, cublasMath_t mode, cut_err *e)
{
    cublasStatus_t st = s->cublasSetMathMode(s->handle, mode);
    if (st != CUBLAS_STATUS_SUCCESS)
        return cut_err_set(e, "cuBLAS did not accept math mode %d: %s", (int)mode, s->cublasGetStatusString(st));
    return 0;
}

/* The run of the prepared GEMM (row-major as the column-major Cᵀ = Bᵀ·Aᵀ, see the top of this file). */
static blas_run blas_run_of(blas_state *s, const cut_wk_tensors *t)
{
    const cut_gemm *g = t->gemm;
    const int at = cut_gemm_a_trans(g), bt = cut_gemm_b_trans(g);
    return (blas_run){.s = s, .op_a = at ? CUBLAS_OP_T : CUBLAS_OP_N, .op_b = bt ? CUBLAS_OP_T : CUBLAS_OP_N,
                      .m = g->m, .n = g->n, .k = g->k, .lda = at ? g->m : g->k, .ldb = bt ? g->k : g->n,
                      .batch = cut_gemm_batch(g), .stride_a = (long long)cut_gemm_stride(g, 'A'),
                      .stride_b = (long long)cut_gemm_stride(g, 'B'), .stride_c = (long long)cut_gemm_stride(g, 'C'),
                      .alpha = (float)cut_gemm_alpha(g), .a = t->in, .b = t->w, .c = t->out};
}

/* cuBLAS computes C in place: a workload with beta != 0 (C's old contents apart, in Cin) is cuBLASLt's. */
static int blas_refuse_beta(const cut_gemm *g, const char *what, cut_err *e)
{
    if (cut_gemm_beta(g) == 0.0)
        return 0;
    return cut_err_set(e, "%s: beta is %g, and cuBLAS updates C in place while cutune keeps C's old contents in a "
                          "separate input (Cin); cuBLASLt, which reads C and writes D, measures this workload",
                       what, cut_gemm_beta(g));
}

/* Loads cuBLAS into the worker's slot on first use; the prepared GEMM's tensors into t. */
static blas_state *blas_get(cut_wk *w, cut_wk_tensors *t, const char *what, cut_err *e)
{
    cut_wk_get_tensors(w, t);
    if (!t->gemm)
        return cut_err_set(e, "%s: no GEMM workload prepared", what), NULL;
    void **slot = cut_wk_cublas_slot(w);
    if (!*slot)
        *slot = blas_load(e);
    return *slot;
}

/* One cuBLAS call, checked and timed under math mode, recorded as name. -1 for setup errors. */
static int blas_time(cut_wk *w, blas_run *r, cublasMath_t mode, const char *name, cut_vendor_acc *a, int *fatal,
                     cut_err *e)
{
    if (blas_math(r->s, mode, e) != 0)
        return -1;
    cut_wk_launcher l = {blas_launch, r};
    cut_result res;
    cut_wk_check_and_time(w, &l, &res, fatal);
    cut_vendor_add(a, &res, name);
    return 0;
}

int cut_cublas_vendor(cut_wk *w, cut_vendor_acc *a, int *fatal, cut_err *e)
{
    *fatal = 0;
    cut_wk_tensors t;
    blas_state *s = blas_get(w, &t, "cuBLAS vendor baseline", e);
    if (!s)
        return -1;
    cut_err why = {{0}};
    if (blas_refuse_beta(t.gemm, "cuBLAS", &why) != 0) {
        cut_vendor_note(a, "%s", why.msg); /* cuBLASLt's alone */
        return 0;
    }
    blas_run r = blas_run_of(s, &t);
    r.ex = 1;
    r.compute = CUBLAS_COMPUTE_32F;
    switch (t.gemm->dtype) {
    case CUT_DT_FP32:
        r.ex = 0;
        if (blas_time(w, &r, CUBLAS_PEDANTIC_MATH, "cublasSgemm pedantic", a, fatal, e) != 0)
            return -1;
        if (*fatal || cut_vendor_over_budget(a))
            return 0;
        r.ex = 1;
        r.ab_type = CUDA_R_32F;
        return blas_time(w, &r, CUBLAS_DEFAULT_MATH, "cublasGemmEx default (COMPUTE_32F)", a, fatal, e);
    case CUT_DT_TF32:
        r.ab_type = CUDA_R_32F;
        r.compute = CUBLAS_COMPUTE_32F_FAST_TF32;
        return blas_time(w, &r, CUBLAS_DEFAULT_MATH, "cublasGemmEx default (COMPUTE_32F_FAST_TF32)", a, fatal, e);
    case CUT_DT_FP16:
        r.ab_type = CUDA_R_16F;
        return blas_time(w, &r, CUBLAS_DEFAULT_MATH, "cublasGemmEx default (16F in, 32F out, COMPUTE_32F)", a, fatal,
                         e);
    case CUT_DT_BF16:
        r.ab_type = CUDA_R_16BF;
        return blas_time(w, &r, CUBLAS_DEFAULT_MATH, "cublasGemmEx default (16BF in, 32F out, COMPUTE_32F)", a,
                         fatal, e);
    default:
        return cut_err_set(e, "cuBLAS vendor baseline: unknown dtype %d", (int)t.gemm->dtype);
    }
}

int cut_cublas_baseline(cut_wk *w, cut_result *best, char *algo, size_t algo_len, int *fatal, cut_err *e)
{
    *fatal = 0;
    cut_result_reset(best);
    if (algo_len)
        algo[0] = '\0';
    cut_wk_tensors t;
    cut_wk_get_tensors(w, &t);
    if (t.gemm && t.gemm->dtype != CUT_DT_FP32)
        return cut_err_set(e, "cuBLAS SGEMM baseline: dtype %s is not fp32 (the vendor baseline covers it)",
                           cut_dtype_name(t.gemm->dtype));
    if (t.gemm && blas_refuse_beta(t.gemm, "cuBLAS SGEMM baseline", e) != 0)
        return -1;
    blas_state *s = blas_get(w, &t, "cuBLAS baseline", e);
    if (!s || blas_math(s, CUBLAS_PEDANTIC_MATH, e) != 0)
        return -1;
    blas_run r = blas_run_of(s, &t);
    cut_wk_launcher l = {blas_launch, &r};
    cut_wk_check_and_time(w, &l, best, fatal);
    snprintf(algo, algo_len, "SGEMM_PEDANTIC_%c%c%s", r.op_a == CUBLAS_OP_T ? 'T' : 'N',
             r.op_b == CUBLAS_OP_T ? 'T' : 'N', r.batch > 1 ? "_STRIDED_BATCHED" : "");
    return 0;
}
