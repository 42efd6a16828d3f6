/* cutune — the cuDNN baseline, run inside the measurement worker (see cudnn_baseline.h).
 *
 * libcudnn.so.9 is loaded with dlopen (cudnn.h for types and prototypes only), so cutune neither links cuDNN nor
 * needs it except for `cutune baseline`. The convolution is set up exactly as cutune's workload: its dtype and
 * layout (cudnn_types.h: NCHW with weights [CO][CI][KH][KW], or NHWC with KRSC weights), symmetric zero padding,
 * square stride, cross-correlation, fp32 compute. fp32 data has two columns: CUDNN_FMA_MATH (on Ampere and later
 * CUDNN_DEFAULT_MATH permits TF32 tensor-core kernels for fp32 data, which would not be a like-for-like fp32
 * baseline) and TF32 (tensor-op math, checked with the tf32 tolerance); fp16, bf16 and tf32 data run with tensor-op
 * math. cudnnFindConvolutionForwardAlgorithmEx proposes the algorithms, then the v9 graph
 * API's heuristics the engines (cudnn_engines.c); cuDNN's own times are ignored and every candidate goes through the
 * same check-and-time protocol as generated kernels, the fastest cold time wins. A fused epilogue (bias, bias_relu)
 * is measured as cuDNN gives it, checked against the same reference (which includes the epilogue): each algorithm
 * through cudnnConvolutionBiasActivationForward where cuDNN fuses it, else the convolution, cudnnAddTensor and
 * cudnnActivationForward timed together as one run (cudnn_types.h: cut_cudnn_epi_plan); the engines on the fused
 * graph. */
#include "measure/cudnn_baseline.h"
#include "measure/cudnn_types.h"

#include "cutune/util.h"
#include "gpu/cuda_drv.h"

#include <cudnn.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUT_STR_(x) #x
#define CUT_STR(x) CUT_STR_(x)

#define CUT_DNN_FUNCS(X)                                                                                             \
    X(cudnnGetVersion)                                                                                               \
    X(cudnnGetErrorString)                                                                                           \
    X(cudnnCreate)                                                                                                   \
    X(cudnnDestroy)                                                                                                  \
    X(cudnnSetStream)                                                                                                \
    X(cudnnCreateTensorDescriptor)                                                                                   \
    X(cudnnSetTensor4dDescriptor)                                                                                    \
    X(cudnnDestroyTensorDescriptor)                                                                                  \
    X(cudnnCreateFilterDescriptor)                                                                                   \
    X(cudnnSetFilter4dDescriptor)                                                                                    \
    X(cudnnDestroyFilterDescriptor)                                                                                  \
    X(cudnnCreateConvolutionDescriptor)                                                                              \
    X(cudnnSetConvolution2dDescriptor)                                                                               \
    X(cudnnSetConvolutionMathType)                                                                                   \
    X(cudnnGetConvolutionMathType)                                                                                   \
    X(cudnnDestroyConvolutionDescriptor)                                                                             \
    X(cudnnGetConvolution2dForwardOutputDim)                                                                         \
    X(cudnnGetConvolutionForwardAlgorithmMaxCount)                                                                   \
    X(cudnnFindConvolutionForwardAlgorithmEx)                                                                        \
    X(cudnnConvolutionForward)                                                                                       \
    X(cudnnConvolutionBiasActivationForward)                                                                         \
    X(cudnnAddTensor)                                                                                                \
    X(cudnnCreateActivationDescriptor)                                                                               \
    X(cudnnSetActivationDescriptor)                                                                                  \
    X(cudnnDestroyActivationDescriptor)                                                                              \
    X(cudnnActivationForward)

#define CUT_DNN_FIELD(fn) __typeof__(fn) *fn;
typedef struct dnn_state {
    void *lib;
    cudnnHandle_t handle;
    CUT_DNN_FUNCS(CUT_DNN_FIELD)
} dnn_state;
#undef CUT_DNN_FIELD

#define WS_MAX ((size_t)1 << 30) /* workspace limit: 1 GiB */

const char *cut_cudnn_fwd_algo_name(int algo)
{
    static const char *const names[] = {
        [CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM] = "IMPLICIT_GEMM",
        [CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM] = "IMPLICIT_PRECOMP_GEMM",
        [CUDNN_CONVOLUTION_FWD_ALGO_GEMM] = "GEMM",
        [CUDNN_CONVOLUTION_FWD_ALGO_DIRECT] = "DIRECT",
        [CUDNN_CONVOLUTION_FWD_ALGO_FFT] = "FFT",
        [CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING] = "FFT_TILING",
        [CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD] = "WINOGRAD",
        [CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED] = "WINOGRAD_NONFUSED",
    };
    return (algo >= 0 && (size_t)algo < CUT_ARRAY_LEN(names) && names[algo]) ? names[algo] : "UNKNOWN";
}

void cut_cudnn_state_free(void *state)
{
    dnn_state *s = state;
    if (!s)
        return;
    if (s->handle)
        s->cudnnDestroy(s->handle);
    /* The library stays loaded: cuDNN registers process-wide state (and the process exits soon after). */
    free(s);
}

/* Loads cuDNN and creates a handle on the current (primary) context. Caller frees with cut_cudnn_state_free. */
static dnn_state *dnn_load(cut_err *e)
{
    const char *lib = NULL;
    void *h = cut_dlopen("CUTUNE_CUDNN_LIB", "libcudnn.so.9", "cuDNN", "; install cuDNN 9 for `cutune baseline`", &lib, e);
    if (!h)
        return NULL;
    dnn_state *s = cut_xcalloc(1, sizeof *s);
    s->lib = h;
#define CUT_DNN_RESOLVE(fn)                                                                                          \
    *(void **)(&s->fn) = dlsym(h, CUT_STR(fn));                                                                      \
    if (!s->fn) {                                                                                                    \
        cut_err_set(e, "cuDNN unavailable: %s lacks %s (not cuDNN 9?)", lib, CUT_STR(fn));                           \
        free(s);                                                                                                     \
        return NULL;                                                                                                 \
    }
    CUT_DNN_FUNCS(CUT_DNN_RESOLVE)
#undef CUT_DNN_RESOLVE
    cudnnStatus_t st = s->cudnnCreate(&s->handle);
    if (st != CUDNN_STATUS_SUCCESS) {
        cut_err_set(e, "cudnnCreate failed: %s (cuDNN %zu)", s->cudnnGetErrorString(st), s->cudnnGetVersion());
        s->handle = NULL;
        cut_cudnn_state_free(s);
        return NULL;
    }
    return s;
}

typedef struct dnn_run {
    dnn_state *s;
    cudnnTensorDescriptor_t xd, yd, bd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnActivationDescriptor_t ad, rd; /* the fused call's activation; the unfused sequence's ReLU */
    cudnnConvolutionFwdAlgo_t algo;
    cut_cudnn_epi epi;                  /* how this algorithm runs the workload's epilogue */
    CUdeviceptr x, w, y, bias, z, ws;   /* z: the fused call's blended tensor, zeros (alpha2 = 0) */
    size_t ws_bytes;
    int refused; /* the fused call's last status was a refusal (cut_cudnn_status_refusal) */
} dnn_run;

/* One run of r: the convolution alone, the fused call, or the unfused sequence (convolution, bias added in place,
 * ReLU in place), all enqueued on stream. */
static int dnn_launch(void *arg, CUstream stream, char *msg, size_t n, int *sticky)
{
    dnn_run *r = arg;
    const dnn_state *s = r->s;
    const float one = 1.0f, zero = 0.0f;
    void *ws = r->ws_bytes ? (void *)(uintptr_t)r->ws : NULL, *y = (void *)(uintptr_t)r->y;
    const void *x = (const void *)(uintptr_t)r->x, *w = (const void *)(uintptr_t)r->w;
    const void *b = (const void *)(uintptr_t)r->bias, *z = (const void *)(uintptr_t)r->z;
    const char *what = "cudnnSetStream";
    cudnnStatus_t st = s->cudnnSetStream(s->handle, (cudaStream_t)stream);
    if (st == CUDNN_STATUS_SUCCESS && r->epi.mode == CUT_CUDNN_EPI_FUSED) {
        what = "cudnnConvolutionBiasActivationForward";
        st = s->cudnnConvolutionBiasActivationForward(s->handle, &one, r->xd, x, r->wd, w, r->cd, r->algo, ws,
                                                      r->ws_bytes, &zero, r->yd, z, r->bd, b, r->ad, r->yd, y);
        r->refused = st != CUDNN_STATUS_SUCCESS && cut_cudnn_status_refusal((int)st);
    } else if (st == CUDNN_STATUS_SUCCESS) {
        what = "cudnnConvolutionForward";
        st = s->cudnnConvolutionForward(s->handle, &one, r->xd, x, r->wd, w, r->cd, r->algo, ws, r->ws_bytes, &zero,
                                        r->yd, y);
        if (st == CUDNN_STATUS_SUCCESS && r->epi.mode == CUT_CUDNN_EPI_UNFUSED) {
            what = "cudnnAddTensor"; /* y += bias, broadcast over N, H, W */
            st = s->cudnnAddTensor(s->handle, &one, r->bd, b, &one, r->yd, y);
        }
        if (st == CUDNN_STATUS_SUCCESS && r->epi.mode == CUT_CUDNN_EPI_UNFUSED && r->epi.calls == 3) {
            what = "cudnnActivationForward";
            st = s->cudnnActivationForward(s->handle, r->rd, &one, r->yd, y, &zero, r->yd, y);
        }
    }
    if (st == CUDNN_STATUS_SUCCESS)
        return 0;
    snprintf(msg, n, "%s(%s): %s", what, cut_cudnn_fwd_algo_name(r->algo), s->cudnnGetErrorString(st));
    /* An execution failure may have killed the context: ask the driver. */
    *sticky = cut_cu()->cuCtxSynchronize() != CUDA_SUCCESS;
    return -1;
}

void cut_cudnn_search_add(cut_cudnn_search *s, const cut_result *res, const char *name, int fatal)
{
    if (fatal) { /* the context died with this candidate: its fault is the outcome (the worker exits) */
        s->best = *res;
        snprintf(s->name, sizeof s->name, "%s", name);
        s->have_best = 0;
        s->have_fail = 1;
        return;
    }
    if (res->status == CUT_ST_OK) {
        if (res->warm_ms > 0 && (s->warm_ms < 0 || res->warm_ms < s->warm_ms))
            s->warm_ms = res->warm_ms;
        if (!s->have_best || res->median_ms < s->best.median_ms) {
            s->best = *res;
            snprintf(s->name, sizeof s->name, "%s", name);
        }
        s->have_best = 1;
    } else if (!s->have_best && !s->have_fail) { /* the first failure, in case nothing passes */
        s->best = *res;
        snprintf(s->name, sizeof s->name, "%s", name);
        s->have_fail = 1;
    }
}

#define DNN_CHECK(expr)                                                                                              \
    do {                                                                                                             \
        cudnnStatus_t st_ = (expr);                                                                                  \
        if (st_ != CUDNN_STATUS_SUCCESS) {                                                                           \
            cut_err_set(e, "%s failed at %s:%d: %s", #expr, __FILE__, __LINE__, s->cudnnGetErrorString(st_));        \
            goto out;                                                                                                \
        }                                                                                                            \
    } while (0)

/* r's descriptors for c in ty's types: x, w, y and the convolution (its math type and output shape checked against
 * cutune's) and, with an epilogue, the bias (1 x CO x 1 x 1 in the inputs' type) and the activations: the fused
 * call's (ReLU, or IDENTITY for bias alone) and the unfused sequence's ReLU, which propagates NaN (an output the
 * convolution left poisoned must not become a valid 0). dnn_free destroys them whatever this returns. */
static int dnn_descs(dnn_state *s, const cut_conv *c, const cut_cudnn_types *ty, dnn_run *r, cut_err *e)
{
    const cudnnDataType_t dt = (cudnnDataType_t)ty->data_type;
    const cudnnTensorFormat_t fmt = (cudnnTensorFormat_t)ty->format;
    const cudnnMathType_t math = (cudnnMathType_t)ty->math;
    const int oh = cut_conv_oh(c), ow = cut_conv_ow(c);
    DNN_CHECK(s->cudnnCreateTensorDescriptor(&r->xd));
    DNN_CHECK(s->cudnnCreateTensorDescriptor(&r->yd));
    DNN_CHECK(s->cudnnCreateFilterDescriptor(&r->wd));
    DNN_CHECK(s->cudnnCreateConvolutionDescriptor(&r->cd));
    DNN_CHECK(s->cudnnSetTensor4dDescriptor(r->xd, fmt, dt, c->n, c->ci, c->h, c->w));
    DNN_CHECK(s->cudnnSetFilter4dDescriptor(r->wd, dt, fmt, c->co, c->ci, c->kh, c->kw));
    DNN_CHECK(s->cudnnSetConvolution2dDescriptor(r->cd, c->pad, c->pad, c->stride, c->stride, 1, 1,
                                                 CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    DNN_CHECK(s->cudnnSetConvolutionMathType(r->cd, math));
    cudnnMathType_t mt;
    DNN_CHECK(s->cudnnGetConvolutionMathType(r->cd, &mt));
    if (mt != math)
        return cut_err_set(e, "cuDNN did not accept math type %d (it kept %d)", (int)math, (int)mt);
    int dn, dc, dh, dw;
    DNN_CHECK(s->cudnnGetConvolution2dForwardOutputDim(r->cd, r->xd, r->wd, &dn, &dc, &dh, &dw));
    if (dn != c->n || dc != c->co || dh != oh || dw != ow)
        return cut_err_set(e, "cuDNN's output shape %dx%dx%dx%d differs from cutune's %dx%dx%dx%d", dn, dc, dh, dw,
                           c->n, c->co, oh, ow);
    DNN_CHECK(s->cudnnSetTensor4dDescriptor(r->yd, fmt, dt, c->n, c->co, oh, ow));
    if (c->epilogue == CUT_EPI_NONE)
        return 0;
    const cudnnActivationMode_t act =
        c->epilogue == CUT_EPI_BIAS_RELU ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY;
    DNN_CHECK(s->cudnnCreateTensorDescriptor(&r->bd));
    DNN_CHECK(s->cudnnSetTensor4dDescriptor(r->bd, fmt, dt, 1, c->co, 1, 1));
    DNN_CHECK(s->cudnnCreateActivationDescriptor(&r->ad));
    DNN_CHECK(s->cudnnSetActivationDescriptor(r->ad, act, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    DNN_CHECK(s->cudnnCreateActivationDescriptor(&r->rd));
    DNN_CHECK(s->cudnnSetActivationDescriptor(r->rd, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
    return 0;
out:
    return -1;
}

static void dnn_free(dnn_state *s, const cut_cu_api *cu, dnn_run *r)
{
    if (r->ws)
        cu->cuMemFree(r->ws);
    if (r->z)
        cu->cuMemFree(r->z);
    if (r->rd)
        s->cudnnDestroyActivationDescriptor(r->rd);
    if (r->ad)
        s->cudnnDestroyActivationDescriptor(r->ad);
    if (r->bd)
        s->cudnnDestroyTensorDescriptor(r->bd);
    if (r->cd)
        s->cudnnDestroyConvolutionDescriptor(r->cd);
    if (r->wd)
        s->cudnnDestroyFilterDescriptor(r->wd);
    if (r->yd)
        s->cudnnDestroyTensorDescriptor(r->yd);
    if (r->xd)
        s->cudnnDestroyTensorDescriptor(r->xd);
}

/* The fused call's z: zeros of y's size. alpha2 = 0 blends nothing in, but z is not y itself: the check poisons y
 * with NaN before a run, and 0 * NaN would be NaN should cuDNN read z all the same. */
static int dnn_zeros(const cut_cu_api *cu, const cut_conv *c, dnn_run *r, cut_err *e)
{
    const size_t bytes = cut_conv_out_elems(c) * cut_elem_size(cut_conv_out_elem(c));
    if (cu->cuMemAlloc(&r->z, bytes) != CUDA_SUCCESS) {
        r->z = 0;
        return cut_err_set(e, "cuDNN baseline: cannot allocate the fused call's z tensor (%zu bytes)", bytes);
    }
    if (cu->cuMemsetD8(r->z, 0, bytes) != CUDA_SUCCESS)
        return cut_err_set(e, "cuDNN baseline: cannot zero the fused call's z tensor (%zu bytes)", bytes);
    return 0;
}

/* Workspace: up to 1 GiB, less if the device cannot spare it (none at all is possible: r->ws 0). */
static void dnn_workspace(const cut_cu_api *cu, dnn_run *r)
{
    size_t free_b = 0, total_b = 0;
    if (cu->cuMemGetInfo(&free_b, &total_b) == CUDA_SUCCESS)
        r->ws_bytes = CUT_MIN(WS_MAX, free_b / 2);
    else
        r->ws_bytes = WS_MAX;
    while (r->ws_bytes >= ((size_t)1 << 20) && cu->cuMemAlloc(&r->ws, r->ws_bytes) != CUDA_SUCCESS)
        r->ws_bytes /= 2;
    if (!r->ws)
        r->ws_bytes = 0;
}

/* Checks and times algorithm algo on c into srch, its epilogue as cut_cudnn_epi_plan says: the fused call where
 * cuDNN documents it for the algorithm, and the unfused sequence (with its wider tolerance) when cuDNN refuses the
 * fused call all the same; the name says which was timed. */
static void dnn_time_algo(cut_wk *w, dnn_run *r, const cut_conv *c, const cut_cudnn_types *ty,
                          cudnnConvolutionFwdAlgo_t algo, cut_cudnn_search *srch, int *fatal)
{
    r->algo = algo;
    for (int refused = 0; refused < 2 && !*fatal; refused++) {
        cut_cudnn_epi_plan(c, (int)algo, refused, &r->epi);
        r->refused = 0;
        const double scale = r->epi.mode == CUT_CUDNN_EPI_UNFUSED ? cut_cudnn_unfused_tol_scale(c, ty->tol_scale)
                                                                  : ty->tol_scale;
        const cut_wk_launcher l = {dnn_launch, r, scale};
        cut_result res;
        cut_wk_check_and_time(w, &l, &res, fatal);
        if (!*fatal && r->epi.mode == CUT_CUDNN_EPI_FUSED && r->refused && res.status != CUT_ST_OK)
            continue; /* not fused for this algorithm here: the unfused sequence instead */
        char name[64]; /* the worker's reply carries 63 characters: the label's tail always fits */
        cut_cudnn_epi_label(cut_cudnn_fwd_algo_name((int)algo), c, r->epi.mode, name, sizeof name);
        cut_cudnn_search_add(srch, &res, name, *fatal);
        return;
    }
}

int cut_cudnn_baseline(cut_wk *w, int tf32_math, cut_result *best, char *algo, size_t algo_len, int *fatal,
                       cut_err *e)
{
    *fatal = 0;
    cut_result_reset(best);
    if (algo_len)
        algo[0] = '\0';
    cut_wk_tensors t;
    cut_wk_get_tensors(w, &t);
    if (!t.conv)
        return cut_err_set(e, "cuDNN baseline: no workload prepared");
    if (t.conv->epilogue != CUT_EPI_NONE && !t.bias)
        return cut_err_set(e, "cuDNN baseline: the prepared work has no bias buffer for its %s epilogue",
                           cut_conv_epilogue_name(t.conv->epilogue));
    void **slot = cut_wk_cudnn_slot(w);
    if (!*slot && !(*slot = dnn_load(e)))
        return -1;
    dnn_state *s = *slot;
    const cut_cu_api *cu = cut_cu();
    const cut_conv *c = t.conv;
    cut_cudnn_types ty;
    cut_cudnn_conv_types(c, tf32_math, &ty);

    int rc = -1;
    dnn_run r = {.s = s, .x = t.in, .w = t.w, .y = t.out, .bias = t.bias};
    cudnnConvolutionFwdAlgoPerf_t *perf = NULL;
    if (dnn_descs(s, c, &ty, &r, e) != 0 || (c->epilogue != CUT_EPI_NONE && dnn_zeros(cu, c, &r, e) != 0))
        goto out;
    dnn_workspace(cu, &r);

    int max_algos = 0, n_algos = 0;
    DNN_CHECK(s->cudnnGetConvolutionForwardAlgorithmMaxCount(s->handle, &max_algos));
    if (max_algos < 1)
        max_algos = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    perf = cut_xcalloc((size_t)max_algos, sizeof *perf);
    /* the convolution's algorithms: the fused call takes the same ones */
    DNN_CHECK(s->cudnnFindConvolutionForwardAlgorithmEx(
        s->handle, r.xd, (const void *)(uintptr_t)r.x, r.wd, (const void *)(uintptr_t)r.w, r.cd, r.yd,
        (void *)(uintptr_t)r.y, max_algos, &n_algos, perf, r.ws ? (void *)(uintptr_t)r.ws : NULL, r.ws_bytes));
    if (cu->cuCtxSynchronize() != CUDA_SUCCESS) {
        *fatal = 1;
        cut_err_set(e, "cudnnFindConvolutionForwardAlgorithmEx left the CUDA context in an error state");
        goto out;
    }

    cut_cudnn_search srch = {.warm_ms = -1};
    for (int i = 0; i < n_algos && !*fatal; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > r.ws_bytes)
            continue;
        if (perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ||
            (!ty.tensor_cores && perf[i].mathType == CUDNN_TENSOR_OP_MATH))
            continue; /* never expected with the math type set; skipped to keep the baseline in its precision */
        dnn_time_algo(w, &r, c, &ty, perf[i].algo, &srch, fatal);
    }
    /* then the engines behind them and more, as PyTorch's benchmark mode finds them (the v9 graph API) */
    if (!*fatal) {
        cut_err ge = {{0}};
        if (cut_cudnn_engines(w, s->handle, &t, &ty, r.ws, r.ws_bytes, &srch, fatal, &ge) != 0)
            fprintf(stderr, "cutune worker: cuDNN's engines not searched (the legacy algorithms only): %s\n",
                    ge.msg);
    }
    *best = srch.best;
    snprintf(algo, algo_len, "%s", srch.name);
    if (srch.have_best)
        best->warm_ms = srch.warm_ms;
    if (!srch.have_best && !srch.have_fail && !*fatal) {
        cut_result_reset(best);
        best->status = CUT_ST_LAUNCH_ERROR;
        snprintf(best->error, sizeof best->error, "cuDNN found no usable algorithm or engine (%d algorithms, %d "
                 "engine configurations proposed, %d skipped for tensor-core math; workspace %zu MiB)", n_algos,
                 srch.proposed, srch.skipped_tc, r.ws_bytes >> 20);
    }
    rc = 0;
out:
    free(perf);
    if (!*fatal)
        dnn_free(s, cu, &r);
    return rc;
}
