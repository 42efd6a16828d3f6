/* cutune — cuDNN's engines through the v9 graph API (the backend descriptors), as PyTorch searches them with
 * cudnn.benchmark: the convolution as an operation graph, the engine configurations cuDNN's heuristics propose
 * (mode A, then the fallback list), each made an execution plan, and every plan that fits the workspace checked and
 * timed by the same protocol as cutune's kernels. The legacy Find call (cudnn_baseline.c) proposes algorithms; this
 * proposes the engines behind them and more: heuristics mode A, then mode B, then the fallback list, each distinct
 * plan (by its JSON representation: one engine with other knobs is another plan) once. fp32 data, fp32 compute; an engine whose numerical notes say tensor
 * cores or down-converted inputs (TF32) is skipped, so that the baseline stays fp32 FMA math, as PyTorch with
 * allow_tf32 = False. A workload with a fused epilogue is one graph: the convolution into a virtual fp32 tensor,
 * a pointwise ADD of the bias (1 x CO x 1 x 1) and, for bias_relu, a pointwise RELU_FWD into y, so that the
 * engines proposed are those that fuse it (cuDNN's runtime-fusion engines among them); the names say so. */
#include "measure/cudnn_baseline.h"
#include "measure/cudnn_types.h"

#include "cutune/util.h"
#include "gpu/cuda_drv.h"

#include <cudnn.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUT_STR_(x) #x
#define CUT_STR(x) CUT_STR_(x)

#define CUT_DG_FUNCS(X)                                                                                              \
    X(cudnnGetErrorString)                                                                                           \
    X(cudnnSetStream)                                                                                                \
    X(cudnnBackendCreateDescriptor)                                                                                  \
    X(cudnnBackendDestroyDescriptor)                                                                                 \
    X(cudnnBackendSetAttribute)                                                                                      \
    X(cudnnBackendGetAttribute)                                                                                      \
    X(cudnnBackendFinalize)                                                                                          \
    X(cudnnBackendExecute)

#define CUT_DG_FIELD(fn) __typeof__(fn) *fn;
typedef struct dg_api {
    CUT_DG_FUNCS(CUT_DG_FIELD)
} dg_api;
#undef CUT_DG_FIELD

typedef cudnnBackendDescriptor_t dg_desc;

/* Engine configurations timed at most (distinct plans: an engine with other knobs is another plan): the heuristics'
 * first ones are the likely winners. */
#define DG_MAX_PLANS 32
#define DG_MAX_CFGS 160

static int dg_load(dg_api *a, cut_err *e)
{
    const char *lib = NULL;
    void *h = cut_dlopen("CUTUNE_CUDNN_LIB", "libcudnn.so.9", "cuDNN", "; install cuDNN 9 for `cutune baseline`", &lib, e);
    if (!h)
        return -1;
#define CUT_DG_RESOLVE(fn)                                                                                           \
    *(void **)(&a->fn) = dlsym(h, CUT_STR(fn));                                                                      \
    if (!a->fn)                                                                                                      \
        return cut_err_set(e, "cuDNN's graph API unavailable: %s lacks %s", lib, CUT_STR(fn));
    CUT_DG_FUNCS(CUT_DG_RESOLVE)
#undef CUT_DG_RESOLVE
    return 0;
}

#define DG(expr)                                                                                                     \
    do {                                                                                                             \
        cudnnStatus_t st_ = (expr);                                                                                  \
        if (st_ != CUDNN_STATUS_SUCCESS) {                                                                           \
            cut_err_set(e, "cuDNN graph API: %s: %s", #expr, a->cudnnGetErrorString(st_));                           \
            goto out;                                                                                                \
        }                                                                                                            \
    } while (0)

/* The descriptors of the convolution's graph: tensors x, w, y, the epilogue's bias b and its virtual fp32
 * intermediates c (the convolution's sum) and a (after the bias, before ReLU); the convolution and its operation;
 * the pointwise ADD and RELU_FWD and their operations; the graph last (destroyed first). */
enum {
    DG_X, DG_W, DG_Y, DG_B, DG_C, DG_A, DG_CONV, DG_OP, DG_ADD, DG_ADD_OP, DG_RELU, DG_RELU_OP, DG_GRAPH, DG_NDESC
};
static const int64_t dg_uids[4] = {'x', 'w', 'y', 'b'};

/* A finalized descriptor of tensor which (0 x, 1 w, 2 y, 3 bias) of c in its dtype and layout (cudnn_types.h), or
 * with is_virtual an fp32 intermediate of y's shape, unique id uid, that never leaves the fused kernel. */
static int dg_tensor(const dg_api *a, const cut_conv *c, const cut_cudnn_types *ty, int which, int is_virtual,
                     int64_t uid, dg_desc *d, cut_err *e)
{
    int64_t dims[4], strides[4];
    const int64_t align = 16;
    cut_cudnn_tensor_dims(c, which, dims, strides);
    const cudnnDataType_t dt = is_virtual ? CUDNN_DATA_FLOAT : (cudnnDataType_t)ty->data_type;
    const bool virt = is_virtual != 0;
    DG(a->cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, d));
    DG(a->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
    DG(a->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims));
    DG(a->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides));
    DG(a->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    DG(a->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
    if (virt)
        DG(a->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt));
    DG(a->cudnnBackendFinalize(*d));
    return 0;
out:
    return -1;
}

/* A finalized pointwise operation (mode ADD: y = x + b; RELU_FWD: y = max(x, 0)) in fp32 into d[pw], d[op]. */
static int dg_pointwise(const dg_api *a, cudnnPointwiseMode_t mode, dg_desc x, dg_desc b, dg_desc y, dg_desc *pw,
                        dg_desc *op, cut_err *e)
{
    const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    DG(a->cudnnBackendCreateDescriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, pw));
    DG(a->cudnnBackendSetAttribute(*pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
    DG(a->cudnnBackendSetAttribute(*pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec));
    DG(a->cudnnBackendFinalize(*pw));
    DG(a->cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op));
    DG(a->cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                   1, pw));
    DG(a->cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
    if (b)
        DG(a->cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                       &b));
    DG(a->cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
    DG(a->cudnnBackendFinalize(*op));
    return 0;
out:
    return -1;
}

/* The convolution's operation into d[DG_CONV], d[DG_OP], writing ydesc (y, or the epilogue's virtual c). */
static int dg_conv_op(const dg_api *a, const cut_conv *c, dg_desc d[DG_NDESC], dg_desc ydesc, cut_err *e)
{
    const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const int64_t dims = 2, dil[2] = {1, 1}, stride[2] = {c->stride, c->stride}, pad[2] = {c->pad, c->pad};
    const float alpha = 1.0f, beta = 0.0f;
    DG(a->cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &d[DG_CONV]));
    DG(a->cudnnBackendSetAttribute(d[DG_CONV], CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp));
    DG(a->cudnnBackendSetAttribute(d[DG_CONV], CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    DG(a->cudnnBackendSetAttribute(d[DG_CONV], CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims));
    DG(a->cudnnBackendSetAttribute(d[DG_CONV], CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil));
    DG(a->cudnnBackendSetAttribute(d[DG_CONV], CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride));
    DG(a->cudnnBackendSetAttribute(d[DG_CONV], CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
    DG(a->cudnnBackendSetAttribute(d[DG_CONV], CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
    DG(a->cudnnBackendFinalize(d[DG_CONV]));
    DG(a->cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &d[DG_OP]));
    DG(a->cudnnBackendSetAttribute(d[DG_OP], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                   1, &d[DG_X]));
    DG(a->cudnnBackendSetAttribute(d[DG_OP], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                   1, &d[DG_W]));
    DG(a->cudnnBackendSetAttribute(d[DG_OP], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                   1, &ydesc));
    DG(a->cudnnBackendSetAttribute(d[DG_OP], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d[DG_CONV]));
    DG(a->cudnnBackendSetAttribute(d[DG_OP], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1,
                                   &alpha));
    DG(a->cudnnBackendSetAttribute(d[DG_OP], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
    DG(a->cudnnBackendFinalize(d[DG_OP]));
    return 0;
out:
    return -1;
}

/* The workload c as a finalized operation graph (its descriptors in d, destroyed by the caller): the convolution
 * alone; with an epilogue the convolution into the virtual c, + bias into y (bias) or into the virtual a, then ReLU
 * into y (bias_relu) -- one fused graph, as cuDNN's runtime-fusion engines take it. */
static int dg_graph(const dg_api *a, cudnnHandle_t h, const cut_conv *c, const cut_cudnn_types *ty,
                    dg_desc d[DG_NDESC], cut_err *e)
{
    const int epi = c->epilogue != CUT_EPI_NONE, relu = c->epilogue == CUT_EPI_BIAS_RELU;
    for (int i = 0; i < 3 + epi; i++) /* x, w, y, the bias */
        if (dg_tensor(a, c, ty, i, 0, dg_uids[i], &d[DG_X + i], e) != 0)
            return -1;
    if (epi && (dg_tensor(a, c, ty, 2, 1, 'c', &d[DG_C], e) != 0 ||
                (relu && dg_tensor(a, c, ty, 2, 1, 'a', &d[DG_A], e) != 0)))
        return -1;
    if (dg_conv_op(a, c, d, epi ? d[DG_C] : d[DG_Y], e) != 0)
        return -1;
    if (epi && dg_pointwise(a, CUDNN_POINTWISE_ADD, d[DG_C], d[DG_B], relu ? d[DG_A] : d[DG_Y], &d[DG_ADD],
                            &d[DG_ADD_OP], e) != 0)
        return -1;
    if (relu && dg_pointwise(a, CUDNN_POINTWISE_RELU_FWD, d[DG_A], NULL, d[DG_Y], &d[DG_RELU], &d[DG_RELU_OP], e) != 0)
        return -1;
    const dg_desc ops[3] = {d[DG_OP], d[DG_ADD_OP], d[DG_RELU_OP]};
    const int64_t nops = 1 + epi + relu;
    DG(a->cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &d[DG_GRAPH]));
    DG(a->cudnnBackendSetAttribute(d[DG_GRAPH], CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nops,
                                   ops));
    DG(a->cudnnBackendSetAttribute(d[DG_GRAPH], CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
    DG(a->cudnnBackendFinalize(d[DG_GRAPH]));
    return 0;
out:
    return -1;
}

/* The engine configurations the heuristics propose in mode, appended to cfgs (*n of max). A mode this cuDNN does not
 * support proposes nothing. */
static void dg_heuristics(const dg_api *a, dg_desc graph, cudnnBackendHeurMode_t mode, dg_desc *cfgs, int *n, int max)
{
    dg_desc heur = NULL;
    int64_t count = 0;
    if (a->cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur) != CUDNN_STATUS_SUCCESS)
        return;
    if (a->cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                    &graph) == CUDNN_STATUS_SUCCESS &&
        a->cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode) ==
            CUDNN_STATUS_SUCCESS &&
        a->cudnnBackendFinalize(heur) == CUDNN_STATUS_SUCCESS &&
        a->cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                    NULL) == CUDNN_STATUS_SUCCESS) {
        const int64_t want = CUT_MIN(count, (int64_t)(max - *n));
        int made = 0;
        while (made < want && a->cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[*n + made]) ==
                                  CUDNN_STATUS_SUCCESS)
            made++;
        int64_t got = 0;
        if (made > 0 && a->cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                                    made, &got, &cfgs[*n]) == CUDNN_STATUS_SUCCESS) {
            for (int64_t i = got; i < made; i++)
                a->cudnnBackendDestroyDescriptor(cfgs[*n + i]);
            *n += (int)CUT_MIN(got, (int64_t)made);
        } else {
            for (int i = 0; i < made; i++)
                a->cudnnBackendDestroyDescriptor(cfgs[*n + i]);
        }
    }
    a->cudnnBackendDestroyDescriptor(heur);
}

/* The global index of cfg's engine, and whether its numerical notes allow it as a candidate of ty
 * (cut_cudnn_notes_ok). 0, or -1 when it cannot be read. */
static int dg_engine(const dg_api *a, dg_desc cfg, const cut_cudnn_types *ty, int64_t *index, int *ok)
{
    dg_desc eng = NULL;
    int64_t n = 0;
    int rc = -1;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    if (a->cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS)
        return -1;
    if (a->cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng) ==
            CUDNN_STATUS_SUCCESS &&
        a->cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, index) ==
            CUDNN_STATUS_SUCCESS &&
        a->cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                    CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes) == CUDNN_STATUS_SUCCESS) {
        int v[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
        const int nv = (int)CUT_MIN(n, (int64_t)CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
        for (int i = 0; i < nv; i++)
            v[i] = (int)notes[i];
        *ok = cut_cudnn_notes_ok(v, nv, ty);
        rc = 0;
    }
    a->cudnnBackendDestroyDescriptor(eng);
    return rc;
}

typedef struct dg_run {
    const dg_api *a;
    cudnnHandle_t h;
    dg_desc plan, pack;
    int64_t engine;
} dg_run;

static int dg_launch(void *arg, CUstream stream, char *msg, size_t n, int *sticky)
{
    dg_run *r = arg;
    cudnnStatus_t st = r->a->cudnnSetStream(r->h, (cudaStream_t)stream);
    if (st == CUDNN_STATUS_SUCCESS)
        st = r->a->cudnnBackendExecute(r->h, r->plan, r->pack);
    if (st == CUDNN_STATUS_SUCCESS)
        return 0;
    snprintf(msg, n, "cudnnBackendExecute(engine %lld): %s", (long long)r->engine, r->a->cudnnGetErrorString(st));
    *sticky = cut_cu()->cuCtxSynchronize() != CUDA_SUCCESS;
    return -1;
}

/* cfg as a finalized plan and variant pack over the worker's tensors (x, w, y and, with an epilogue, its bias: nptrs
 * of them), in r. 0, or -1 (cuDNN cannot run it, or its
 * workspace is over ws_bytes). */
static int dg_plan(const dg_api *a, cudnnHandle_t h, dg_desc cfg, void *const ptrs[4], int64_t nptrs, CUdeviceptr ws,
                   size_t ws_bytes, dg_run *r)
{
    int64_t need = 0, n = 0;
    void *wsp = (void *)(uintptr_t)ws;
    if (a->cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &r->plan) != CUDNN_STATUS_SUCCESS)
        return -1;
    if (a->cudnnBackendSetAttribute(r->plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h) !=
            CUDNN_STATUS_SUCCESS ||
        a->cudnnBackendSetAttribute(r->plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                    &cfg) != CUDNN_STATUS_SUCCESS ||
        a->cudnnBackendFinalize(r->plan) != CUDNN_STATUS_SUCCESS ||
        a->cudnnBackendGetAttribute(r->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                    &need) != CUDNN_STATUS_SUCCESS ||
        need < 0 || (size_t)need > ws_bytes ||
        a->cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &r->pack) != CUDNN_STATUS_SUCCESS)
        return -1;
    if (a->cudnnBackendSetAttribute(r->pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, nptrs, dg_uids) !=
            CUDNN_STATUS_SUCCESS ||
        a->cudnnBackendSetAttribute(r->pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, nptrs, ptrs) !=
            CUDNN_STATUS_SUCCESS ||
        a->cudnnBackendSetAttribute(r->pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &wsp) !=
            CUDNN_STATUS_SUCCESS ||
        a->cudnnBackendFinalize(r->pack) != CUDNN_STATUS_SUCCESS)
        return -1;
    return 0;
}

/* What tells one plan from another: the hash of its JSON representation (engine and knobs), or the engine's index
 * where cuDNN gives none. */
static uint64_t dg_plan_key(const dg_api *a, dg_desc plan, int64_t engine)
{
    char json[8192];
    int64_t n = 0;
    if (a->cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                                    (int64_t)sizeof json, &n, json) == CUDNN_STATUS_SUCCESS &&
        n > 0 && n <= (int64_t)sizeof json)
        return cut_fnv1a(0xcbf29ce484222325ULL, json, (size_t)n);
    return (uint64_t)engine;
}

static void dg_run_free(const dg_api *a, dg_run *r)
{
    if (r->pack)
        a->cudnnBackendDestroyDescriptor(r->pack);
    if (r->plan)
        a->cudnnBackendDestroyDescriptor(r->plan);
    r->pack = r->plan = NULL;
}

int cut_cudnn_engines(cut_wk *w, void *handle, const cut_wk_tensors *t, const cut_cudnn_types *ty, CUdeviceptr ws,
                      size_t ws_bytes, cut_cudnn_search *s, int *fatal, cut_err *e)
{
    static dg_api api;
    static int loaded;
    const dg_api *a = &api;
    if (!loaded) {
        if (dg_load(&api, e) != 0)
            return -1;
        loaded = 1;
    }
    cudnnHandle_t h = handle;
    dg_desc d[DG_NDESC] = {0}, cfgs[DG_MAX_CFGS];
    int ncfg = 0, rc = -1;
    if (dg_graph(a, h, t->conv, ty, d, e) != 0)
        goto out;
    static const cudnnBackendHeurMode_t modes[] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_B, CUDNN_HEUR_MODE_FALLBACK};
    static const char *const mode_names[] = {"heuristics A", "heuristics B", "fallback"};
    int from[4] = {0};
    for (int m = 0; m < 3; m++) {
        dg_heuristics(a, d[DG_GRAPH], modes[m], cfgs, &ncfg, DG_MAX_CFGS);
        from[m + 1] = ncfg;
    }
    s->proposed += ncfg;
    void *const ptrs[4] = {(void *)(uintptr_t)t->in, (void *)(uintptr_t)t->w, (void *)(uintptr_t)t->out,
                           (void *)(uintptr_t)t->bias};
    const int64_t nptrs = t->conv->epilogue != CUT_EPI_NONE ? 4 : 3;
    uint64_t seen[DG_MAX_CFGS];
    int nseen = 0;
    for (int i = 0; i < ncfg && !*fatal && s->timed < DG_MAX_PLANS; i++) {
        int64_t index = -1;
        int ok = 0;
        const int known = dg_engine(a, cfgs[i], ty, &index, &ok) == 0;
        if (!known || !ok) {
            s->skipped_tc += known && !ok;
            continue;
        }
        dg_run r = {.a = a, .h = h, .engine = index};
        if (dg_plan(a, h, cfgs[i], ptrs, nptrs, ws, ws_bytes, &r) != 0) {
            dg_run_free(a, &r);
            continue;
        }
        /* the modes propose the same plans again: each distinct one (its JSON, else its engine) is timed once */
        const uint64_t key = dg_plan_key(a, r.plan, index);
        int dup = 0;
        for (int j = 0; j < nseen; j++)
            dup |= seen[j] == key;
        if (dup) {
            dg_run_free(a, &r);
            continue;
        }
        seen[nseen++] = key;
        const cut_wk_launcher l = {dg_launch, &r, ty->tol_scale};
        cut_result res;
        cut_wk_check_and_time(w, &l, &res, fatal);
        s->timed++;
        int m = 0;
        while (m < 2 && i >= from[m + 1])
            m++;
        char plain[64], name[64];
        snprintf(plain, sizeof plain, "engine %lld (%s #%d)", (long long)index, mode_names[m], i - from[m]);
        cut_cudnn_epi_label(plain, t->conv, CUT_CUDNN_EPI_FUSED, name, sizeof name); /* the fused graph */
        cut_cudnn_search_add(s, &res, name, *fatal);
        if (!*fatal)
            dg_run_free(a, &r);
    }
    rc = 0;
out:
    for (int i = 0; i < ncfg && !*fatal; i++)
        a->cudnnBackendDestroyDescriptor(cfgs[i]);
    for (int i = DG_NDESC - 1; i >= 0 && !*fatal; i--)
        if (d[i])
            a->cudnnBackendDestroyDescriptor(d[i]);
    return rc;
}
