/* cutune — cuDNN's engines through the v9 graph API (the backend descriptors), as PyTorch searches them with
 * cudnn.benchmark: the convolution as an operation graph, the engine configurations cuDNN's heuristics propose
 * (mode A, then the fallback list), each made an execution plan, and every plan that fits the workspace checked and
 * timed by the same protocol as cutune's kernels. The legacy Find call (cudnn_baseline.c) proposes algorithms; this
 * proposes the engines behind them and more: heuristics mode A, then mode B, then the fallback list, each distinct
 * plan (by its JSON representation: one engine with other knobs is another plan) once. fp32 data, fp32 compute; an engine whose numerical notes say tensor
 * cores or down-converted inputs (TF32) is skipped, so that the baseline stays fp32 FMA math, as PyTorch with
 * allow_tf32 = False. */
#include "measure/cudnn_baseline.h"
#include "measure/cudnn_types.h"

#include "cutune/util.h"
#include "gpu/cuda_drv.h"

#include <cudnn.h>
#include <dlfcn.h>
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

/* The descriptors of the convolution's graph, and the unique ids of its tensors x, w, y. */
enum { DG_X, DG_W, DG_Y, DG_CONV, DG_OP, DG_GRAPH, DG_NDESC };
static const int64_t dg_uids[3] = {'x', 'w', 'y'};

/* A finalized descriptor of tensor which (0 x, 1 w, 2 y) of c in its dtype and layout (cudnn_types.h). */
static int dg_tensor(const dg_api *a, const cut_conv *c, const cut_cudnn_types *ty, int which, dg_desc *d, cut_err *e)
{
    int64_t dims[4], strides[4];
    const int64_t align = 16, uid = dg_uids[which];
    cut_cudnn_tensor_dims(c, which, dims, strides);
    const cudnnDataType_t dt = (cudnnDataType_t)ty->data_type;
    DG(a->cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, d));
    DG(a->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
    DG(a->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims));
    DG(a->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides));
    DG(a->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    DG(a->cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
    DG(a->cudnnBackendFinalize(*d));
    return 0;
out:
    return -1;
}

/* The convolution c as a finalized operation graph (its descriptors in d[0..5), destroyed by the caller). */static int dg_graph(const dg_api *a, cudnnHandle_t h, const cut_conv *c, const cut_cudnn_types *ty,
                    dg_desc d[DG_NDESC], cut_err *e)
{
    if (dg_tensor(a, c, ty, 0, &d[DG_X], e) != 0 || dg_tensor(a, c, ty, 1, &d[DG_W], e) != 0 ||
        dg_tensor(a, c, ty, 2, &d[DG_Y], e) != 0)
        return -1;
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
                                   1, &d[DG_Y]));
    DG(a->cudnnBackendSetAttribute(d[DG_OP], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d[DG_CONV]));
    DG(a->cudnnBackendSetAttribute(d[DG_OP], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1,
                                   &alpha));
    DG(a->cudnnBackendSetAttribute(d[DG_OP], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
    DG(a->cudnnBackendFinalize(d[DG_OP]));
    DG(a->cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &d[DG_GRAPH]));
    DG(a->cudnnBackendSetAttribute(d[DG_GRAPH], CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                   &d[DG_OP]));
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

/* cfg as a finalized plan and variant pack over the worker's tensors, in r. 0, or -1 (cuDNN cannot run it, or its
 * workspace is over ws_bytes). */
static int dg_plan(const dg_api *a, cudnnHandle_t h, dg_desc cfg, void *const ptrs[3], CUdeviceptr ws, size_t ws_bytes,
                   dg_run *r)
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
    if (a->cudnnBackendSetAttribute(r->pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, dg_uids) !=
            CUDNN_STATUS_SUCCESS ||
        a->cudnnBackendSetAttribute(r->pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs) !=
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
    void *const ptrs[3] = {(void *)(uintptr_t)t->in, (void *)(uintptr_t)t->w, (void *)(uintptr_t)t->out};
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
        if (dg_plan(a, h, cfgs[i], ptrs, ws, ws_bytes, &r) != 0) {
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
        char name[64];
        snprintf(name, sizeof name, "engine %lld (%s #%d)", (long long)index, mode_names[m], i - from[m]);
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
