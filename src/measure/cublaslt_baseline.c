/* cutune — the cuBLASLt part of the vendor GEMM baseline, run inside the measurement worker (see
 * cublaslt_baseline.h and cut_runner_gpu_vendor).
 *
 * libcublasLt.so.13 is loaded with dlopen (cublasLt.h for types and prototypes only). The row-major GEMM is the
 * column-major Cᵀ (N×M, ld N) = op(B-memory) · (A-memory), as in cublas_baseline.c: cuBLASLt's "A" is cutune's B
 * (NN: N×K column-major with ld N, no transpose; NT: K×N with ld K, transposed) and its "B" is cutune's A (K×M with
 * ld K; TN and TT: A's memory is M×K with ld M, transposed). D is cutune's C, fp32 in every case; cuBLASLt's C is
 * cutune's Cin (C's old contents, kept apart) when beta != 0, else D itself (beta 0, never read). alpha and beta are
 * host floats (scale type CUDA_R_32F). A strided batch sets BATCH_COUNT and STRIDED_BATCH_OFFSET (packed strides) on
 * every layout.
 *
 * Candidates: the heuristic's top N (cublasLtMatmulAlgoGetHeuristic, workspace <= 64 MiB), then an enumeration in
 * the manner of the CUTLASS profiler: every algorithm id (cublasLtMatmulAlgoGetIds), for each its capabilities
 * (tile ids, stages ids, split-K support, reduction schemes, CTA swizzling, custom options), configurations in the
 * order tile x stages (split-K 1, no swizzle, custom 0), then the same with swizzling, then split-K 2/4/8 when the
 * output has few tiles, then custom options; each accepted by cublasLtMatmulAlgoCheck with a workspace <= 64 MiB,
 * deduplicated by its configuration string. */
#include "measure/cublaslt_baseline.h"

#include "cutune/util.h"
#include "gpu/cuda_drv.h"

/* cublasLt.h declares cublasLtLoggerForceDisable() without a prototype. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cublasLt.h>
#pragma GCC diagnostic pop
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUT_STR_(x) #x
#define CUT_STR(x) CUT_STR_(x)

#define LT_WORKSPACE ((size_t)64 << 20)
#define LT_MAX_IDS 1024
#define LT_MAX_CAP_IDS 1024 /* tile or stages ids read per algorithm */

#define CUT_LT_FUNCS(X)                                                                                              \
    X(cublasLtCreate)                                                                                                \
    X(cublasLtDestroy)                                                                                               \
    X(cublasLtGetStatusString)                                                                                       \
    X(cublasLtMatmulDescCreate)                                                                                      \
    X(cublasLtMatmulDescDestroy)                                                                                     \
    X(cublasLtMatmulDescSetAttribute)                                                                                \
    X(cublasLtMatrixLayoutCreate)                                                                                    \
    X(cublasLtMatrixLayoutDestroy)                                                                                   \
    X(cublasLtMatrixLayoutSetAttribute)                                                                              \
    X(cublasLtMatmulPreferenceCreate)                                                                                \
    X(cublasLtMatmulPreferenceDestroy)                                                                               \
    X(cublasLtMatmulPreferenceSetAttribute)                                                                          \
    X(cublasLtMatmulAlgoGetHeuristic)                                                                                \
    X(cublasLtMatmulAlgoGetIds)                                                                                      \
    X(cublasLtMatmulAlgoInit)                                                                                        \
    X(cublasLtMatmulAlgoCheck)                                                                                       \
    X(cublasLtMatmulAlgoCapGetAttribute)                                                                             \
    X(cublasLtMatmulAlgoConfigSetAttribute)                                                                          \
    X(cublasLtMatmulAlgoConfigGetAttribute)                                                                          \
    X(cublasLtMatmul)

#define CUT_LT_FIELD(fn) __typeof__(fn) *fn;
typedef struct lt_state {
    void *lib;
    cublasLtHandle_t h;
    CUdeviceptr ws; /* LT_WORKSPACE bytes */
    CUT_LT_FUNCS(CUT_LT_FIELD)
} lt_state;
#undef CUT_LT_FIELD

void cut_cublaslt_state_free(void *state, int context_dead)
{
    lt_state *s = state;
    if (!s)
        return;
    if (!context_dead) {
        if (s->h)
            s->cublasLtDestroy(s->h);
        if (s->ws && cut_cu())
            cut_cu()->cuMemFree(s->ws);
    }
    free(s); /* the library stays loaded (process-wide state; the worker exits soon after) */
}

static int lt_resolve(lt_state *s, void *h, const char *lib, cut_err *e)
{
#define CUT_LT_RESOLVE(fn)                                                                                           \
    *(void **)(&s->fn) = dlsym(h, CUT_STR(fn));                                                                      \
    if (!s->fn)                                                                                                      \
        return cut_err_set(e, "cuBLASLt unavailable: %s lacks %s (not cuBLASLt 13?)", lib, CUT_STR(fn));
    CUT_LT_FUNCS(CUT_LT_RESOLVE)
#undef CUT_LT_RESOLVE
    return 0;
}

/* Loads cuBLASLt, creates a handle and the 64 MiB workspace. Caller frees with cut_cublaslt_state_free. */
static lt_state *lt_load(cut_err *e)
{
    const char *lib = NULL;
    void *h = cut_dlopen("CUTUNE_CUBLASLT_LIB", "libcublasLt.so.13", "cuBLASLt",
                         "; install cuBLAS 13 for the cuBLASLt GEMM baseline", &lib, e);
    if (!h)
        return NULL;
    lt_state *s = cut_xcalloc(1, sizeof *s);
    s->lib = h;
    if (lt_resolve(s, h, lib, e) != 0) {
        free(s);
        return NULL;
    }
    cublasStatus_t st = s->cublasLtCreate(&s->h);
    if (st != CUBLAS_STATUS_SUCCESS) {
        cut_err_set(e, "cublasLtCreate failed: %s", s->cublasLtGetStatusString(st));
        s->h = NULL;
        cut_cublaslt_state_free(s, 0);
        return NULL;
    }
    CUresult rc = cut_cu()->cuMemAlloc(&s->ws, LT_WORKSPACE);
    if (rc != CUDA_SUCCESS) {
        char d[160];
        cut_cu_describe(rc, d, sizeof d);
        cut_err_set(e, "cuBLASLt: cannot allocate the %zu MiB workspace: %s", LT_WORKSPACE >> 20, d);
        s->ws = 0;
        cut_cublaslt_state_free(s, 0);
        return NULL;
    }
    return s;
}

/* ---- the problem: descriptors of the prepared GEMM ---- */

typedef struct lt_problem {
    cublasComputeType_t compute;
    cudaDataType_t ab, cd; /* input type; output type (CUDA_R_32F) */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc; /* cuBLASLt's A (cutune's B), B (cutune's A), C and D (the same shape) */
    CUdeviceptr a_mem, b_mem, c_mem, d_mem;
    float alpha, beta;
    int small; /* few output tiles: split-K configurations are worth enumerating */
} lt_problem;

static void lt_problem_free(lt_state *s, lt_problem *p)
{
    if (p->op)
        s->cublasLtMatmulDescDestroy(p->op);
    cublasLtMatrixLayout_t *l[] = {&p->la, &p->lb, &p->lc};
    for (size_t i = 0; i < CUT_ARRAY_LEN(l); i++)
        if (*l[i])
            s->cublasLtMatrixLayoutDestroy(*l[i]);
    memset(p, 0, sizeof *p);
}

static int lt_types(cut_dtype d, lt_problem *p, cut_err *e)
{
    p->compute = CUBLAS_COMPUTE_32F;
    p->ab = CUDA_R_32F;
    p->cd = CUDA_R_32F;
    switch (d) {
    case CUT_DT_FP32:
        return 0;
    case CUT_DT_TF32:
        p->compute = CUBLAS_COMPUTE_32F_FAST_TF32;
        return 0;
    case CUT_DT_FP16:
        p->ab = CUDA_R_16F;
        return 0;
    case CUT_DT_BF16:
        p->ab = CUDA_R_16BF;
        return 0;
    default:
        return cut_err_set(e, "cuBLASLt: unknown dtype %d", (int)d);
    }
}

#define LT_TRY(expr, what)                                                                                           \
    do {                                                                                                             \
        cublasStatus_t lt_st_ = (expr);                                                                              \
        if (lt_st_ != CUBLAS_STATUS_SUCCESS)                                                                         \
            return cut_err_set(e, "cuBLASLt: %s failed: %s", what, s->cublasLtGetStatusString(lt_st_));              \
    } while (0)

/* A column-major rows×cols layout with leading dimension ld, batched as g is. */
static int lt_layout(lt_state *s, const cut_gemm *g, cudaDataType_t type, uint64_t rows, uint64_t cols, int64_t ld,
                     char which, cublasLtMatrixLayout_t *l, cut_err *e)
{
    LT_TRY(s->cublasLtMatrixLayoutCreate(l, type, rows, cols, ld), "cublasLtMatrixLayoutCreate");
    const int32_t batch = cut_gemm_batch(g);
    const int64_t stride = (int64_t)cut_gemm_stride(g, which);
    if (batch == 1)
        return 0;
    LT_TRY(s->cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch),
           "setting BATCH_COUNT");
    LT_TRY(s->cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                               sizeof stride),
           "setting STRIDED_BATCH_OFFSET");
    return 0;
}

/* Fills p for the prepared GEMM; the caller frees it with lt_problem_free also after an error. */
static int lt_problem_init(lt_state *s, const cut_wk_tensors *t, lt_problem *p, cut_err *e)
{
    const cut_gemm *g = t->gemm;
    memset(p, 0, sizeof *p);
    if (lt_types(g->dtype, p, e) != 0)
        return -1;
    const int nt = cut_gemm_b_trans(g), at = cut_gemm_a_trans(g);
    const cublasOperation_t ta = nt ? CUBLAS_OP_T : CUBLAS_OP_N, tb = at ? CUBLAS_OP_T : CUBLAS_OP_N;
    LT_TRY(s->cublasLtMatmulDescCreate(&p->op, p->compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    LT_TRY(s->cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "setting TRANSA");
    LT_TRY(s->cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "setting TRANSB");
    const uint64_t m = (uint64_t)g->m, n = (uint64_t)g->n, k = (uint64_t)g->k;
    if (lt_layout(s, g, p->ab, nt ? k : n, nt ? n : k, (int64_t)(nt ? k : n), 'B', &p->la, e) != 0 ||
        lt_layout(s, g, p->ab, at ? m : k, at ? k : m, (int64_t)(at ? m : k), 'A', &p->lb, e) != 0 ||
        lt_layout(s, g, p->cd, n, m, (int64_t)n, 'C', &p->lc, e) != 0)
        return cut_err_wrap(e, "cuBLASLt layouts of the %s GEMM", cut_gemm_layout_name(g->layout));
    p->a_mem = t->w;
    p->b_mem = t->in;
    p->d_mem = t->out;
    p->c_mem = t->cin ? t->cin : t->out;
    p->alpha = (float)cut_gemm_alpha(g);
    p->beta = (float)cut_gemm_beta(g);
    p->small = (double)CUT_CEIL_DIV(g->m, 128) * (double)CUT_CEIL_DIV(g->n, 128) * cut_gemm_batch(g) <
               264.0; /* < 2 waves of 132 SMs */
    return 0;
}

/* ---- candidates ---- */

typedef struct lt_cand {
    cublasLtMatmulAlgo_t algo;
    size_t ws;
    char config[CUT_VENDOR_CONFIG_LEN];
} lt_cand;

typedef struct lt_list {
    lt_cand *v;
    int n, cap;
} lt_list;

/* "cublasLt algo=23 tile=128x256 stages=64x4 splitk=1 swizzle=1 custom=0" (+ reduction, inner and cluster shape
 * ids when set): the configuration as cuBLASLt reads it back, also the key that deduplicates candidates. */
static void lt_describe(lt_state *s, const cublasLtMatmulAlgo_t *a, char *buf, size_t n)
{
    int32_t id = -1, splitk = 1;
    uint32_t tile = 0, stages = 0, red = 0, swz = 0, custom = 0;
    uint16_t inner = 0, cluster = 0;
    size_t wr = 0;
    s->cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &wr);
    s->cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &wr);
    s->cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &wr);
    s->cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &wr);
    s->cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &wr);
    s->cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz, &wr);
    s->cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom, sizeof custom, &wr);
    s->cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &inner, sizeof inner, &wr);
    s->cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &wr);
    char tb[16], sb[16];
    int k = snprintf(buf, n, "cublasLt algo=%d tile=%s stages=%s splitk=%d swizzle=%u custom=%u", (int)id,
                     cut_lt_tile_name(tile, tb, sizeof tb), cut_lt_stages_name(stages, sb, sizeof sb), (int)splitk,
                     swz, custom);
    if (red && k > 0 && (size_t)k < n)
        k += snprintf(buf + k, n - (size_t)k, " reduction=%u", red);
    if (inner && k > 0 && (size_t)k < n)
        k += snprintf(buf + k, n - (size_t)k, " inner=%u", (unsigned)inner);
    if (cluster && k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, " cluster=%u", (unsigned)cluster);
}

/* Adds algo unless a candidate with the same configuration is there. 1 if added. */
static int lt_list_add(lt_state *s, lt_list *l, const cublasLtMatmulAlgo_t *algo, size_t ws)
{
    lt_cand c = {.algo = *algo, .ws = ws};
    lt_describe(s, algo, c.config, sizeof c.config);
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->v[i].config, c.config) == 0)
            return 0;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = cut_xrealloc(l->v, (size_t)l->cap * sizeof *l->v);
    }
    l->v[l->n++] = c;
    return 1;
}

/* The heuristic's top n with a workspace that fits. Returns how many were added, or -1 (e set). */
static int lt_heuristic(lt_state *s, const lt_problem *p, int n, lt_list *l, cut_err *e)
{
    if (n <= 0)
        return 0;
    cublasLtMatmulPreference_t pref = NULL;
    LT_TRY(s->cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    const uint64_t ws = LT_WORKSPACE;
    cublasStatus_t st = s->cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                                sizeof ws);
    cublasLtMatmulHeuristicResult_t *hr = cut_xcalloc((size_t)n, sizeof *hr);
    int got = 0, added = 0;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = s->cublasLtMatmulAlgoGetHeuristic(s->h, p->op, p->la, p->lb, p->lc, p->lc, pref, n, hr, &got);
    for (int i = 0; st == CUBLAS_STATUS_SUCCESS && i < got; i++)
        if (hr[i].state == CUBLAS_STATUS_SUCCESS && hr[i].workspaceSize <= LT_WORKSPACE)
            added += lt_list_add(s, l, &hr[i].algo, hr[i].workspaceSize);
    free(hr);
    s->cublasLtMatmulPreferenceDestroy(pref);
    /* NOT_SUPPORTED: no algorithm for this problem, which is an answer, not an error. */
    if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED)
        return cut_err_set(e, "cuBLASLt: cublasLtMatmulAlgoGetHeuristic failed: %s", s->cublasLtGetStatusString(st));
    return added;
}

/* An array capability (tile or stages ids) into ids (at most LT_MAX_CAP_IDS); none: one 0 (UNDEFINED). */
static int lt_cap_ids(lt_state *s, const cublasLtMatmulAlgo_t *a, cublasLtMatmulAlgoCapAttributes_t attr,
                      uint32_t *ids)
{
    size_t need = 0, wr = 0;
    int n = 0;
    if (s->cublasLtMatmulAlgoCapGetAttribute(a, attr, NULL, 0, &need) == CUBLAS_STATUS_SUCCESS && need > 0) {
        need = CUT_MIN(need, LT_MAX_CAP_IDS * sizeof(uint32_t));
        if (s->cublasLtMatmulAlgoCapGetAttribute(a, attr, ids, need, &wr) == CUBLAS_STATUS_SUCCESS)
            n = (int)(wr / sizeof(uint32_t));
    }
    if (n == 0)
        ids[n++] = 0;
    return n;
}

/* The capabilities of one algorithm id that the enumeration varies. */
typedef struct lt_caps {
    uint32_t tiles[LT_MAX_CAP_IDS], stages[LT_MAX_CAP_IDS];
    int ntiles, nstages;
    int32_t splitk, custom_max;
    uint32_t swizzle, red_mask;
} lt_caps;

static void lt_get_caps(lt_state *s, const cublasLtMatmulAlgo_t *a, lt_caps *c)
{
    size_t wr = 0;
    c->ntiles = lt_cap_ids(s, a, CUBLASLT_ALGO_CAP_TILE_IDS, c->tiles);
    c->nstages = lt_cap_ids(s, a, CUBLASLT_ALGO_CAP_STAGES_IDS, c->stages);
    c->splitk = c->custom_max = 0;
    c->swizzle = c->red_mask = 0;
    s->cublasLtMatmulAlgoCapGetAttribute(a, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &c->splitk, sizeof c->splitk, &wr);
    s->cublasLtMatmulAlgoCapGetAttribute(a, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, &c->custom_max,
                                         sizeof c->custom_max, &wr);
    s->cublasLtMatmulAlgoCapGetAttribute(a, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, &c->swizzle, sizeof c->swizzle,
                                         &wr);
    s->cublasLtMatmulAlgoCapGetAttribute(a, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &c->red_mask,
                                         sizeof c->red_mask, &wr);
    c->custom_max = CUT_MAX(0, CUT_MIN(c->custom_max, 16));
}

/* One configuration to try on an algorithm id. */
typedef struct lt_config {
    uint32_t tile, stages, swizzle, custom, red;
    int32_t splitk;
} lt_config;

/* The enumeration's budget for one algorithm id. */
typedef struct lt_enum {
    lt_state *s;
    const lt_problem *p;
    lt_list *l;
    int added, limit;   /* added for this id, at most limit */
    int checks, max_checks;
} lt_enum;

/* Configures a copy of base as c, checks it (cublasLtMatmulAlgoCheck) and adds it when it runs with a workspace
 * that fits. 1 when the id's budget is used up. */
static int lt_try(lt_enum *en, const cublasLtMatmulAlgo_t *base, const lt_config *c)
{
    lt_state *s = en->s;
    if (en->added >= en->limit || en->checks >= en->max_checks)
        return 1;
    en->checks++;
    cublasLtMatmulAlgo_t a = *base;
    if (s->cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &c->tile, sizeof c->tile) ||
        s->cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &c->stages, sizeof c->stages) ||
        s->cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &c->splitk, sizeof c->splitk) ||
        s->cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &c->red, sizeof c->red) ||
        s->cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &c->swizzle,
                                                sizeof c->swizzle) ||
        s->cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &c->custom, sizeof c->custom))
        return 0;
    cublasLtMatmulHeuristicResult_t r;
    memset(&r, 0, sizeof r);
    const lt_problem *p = en->p;
    if (s->cublasLtMatmulAlgoCheck(s->h, p->op, p->la, p->lb, p->lc, p->lc, &a, &r) != CUBLAS_STATUS_SUCCESS ||
        r.workspaceSize > LT_WORKSPACE)
        return 0;
    en->added += lt_list_add(s, en->l, &a, r.workspaceSize);
    return en->added >= en->limit;
}

/* The reduction scheme for split-K > 1: the first the algorithm supports of compute-type (workspace), in place and
 * output-type; 0 (none) when it supports none. */
static uint32_t lt_splitk_reduction(uint32_t mask)
{
    const uint32_t pref[] = {CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, CUBLASLT_REDUCTION_SCHEME_INPLACE,
                             CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE};
    for (size_t i = 0; i < CUT_ARRAY_LEN(pref); i++)
        if (mask & pref[i])
            return pref[i];
    return CUBLASLT_REDUCTION_SCHEME_NONE;
}

/* The configurations of one algorithm id, in the order of the top of this file, until its budget is used up. */
static void lt_enum_algo(lt_enum *en, const cublasLtMatmulAlgo_t *base, const lt_caps *c)
{
    lt_config cf = {.splitk = 1};
    for (int pass = 0; pass < 4; pass++) {
        if ((pass == 1 && !c->swizzle) || (pass == 2 && (!c->splitk || !en->p->small)) ||
            (pass == 3 && !c->custom_max))
            continue;
        for (int t = 0; t < c->ntiles; t++) {
            for (int st = 0; st < c->nstages; st++) {
                cf = (lt_config){.tile = c->tiles[t], .stages = c->stages[st], .splitk = 1, .swizzle = pass == 1};
                if (pass == 0 || pass == 1) {
                    if (lt_try(en, base, &cf))
                        return;
                } else if (pass == 2) {
                    cf.red = lt_splitk_reduction(c->red_mask);
                    for (int32_t sk = 2; sk <= 8; sk *= 2) {
                        cf.splitk = sk;
                        if (lt_try(en, base, &cf))
                            return;
                    }
                } else {
                    for (int32_t o = 1; o <= c->custom_max; o++) {
                        cf.custom = (uint32_t)o;
                        if (lt_try(en, base, &cf))
                            return;
                    }
                }
            }
        }
    }
}

/* Enumerates up to max_configs configurations over every algorithm id. Returns how many were added, or -1. */
static int lt_enumerate(lt_state *s, const lt_problem *p, int max_configs, lt_list *l, cut_err *e)
{
    if (max_configs <= 0)
        return 0;
    int *ids = cut_xmalloc(LT_MAX_IDS * sizeof *ids), nid = 0;
    cublasStatus_t st = s->cublasLtMatmulAlgoGetIds(s->h, p->compute, CUDA_R_32F, p->ab, p->ab, p->cd, p->cd,
                                                    LT_MAX_IDS, ids, &nid);
    if (st != CUBLAS_STATUS_SUCCESS) {
        free(ids);
        return cut_err_set(e, "cuBLASLt: cublasLtMatmulAlgoGetIds failed: %s", s->cublasLtGetStatusString(st));
    }
    lt_caps *caps = cut_xmalloc(sizeof *caps);
    int added = 0;
    for (int i = 0; i < nid && added < max_configs; i++) {
        cublasLtMatmulAlgo_t base;
        if (s->cublasLtMatmulAlgoInit(s->h, p->compute, CUDA_R_32F, p->ab, p->ab, p->cd, p->cd, ids[i], &base) !=
            CUBLAS_STATUS_SUCCESS)
            continue;
        lt_get_caps(s, &base, caps);
        /* an even share of what is left per remaining id, at least 4 */
        const int share = CUT_MAX(4, (max_configs - added) / (nid - i));
        lt_enum en = {.s = s, .p = p, .l = l, .limit = CUT_MIN(share, max_configs - added), .max_checks = 64 * share};
        lt_enum_algo(&en, &base, caps);
        added += en.added;
    }
    free(caps);
    free(ids);
    return added;
}

/* ---- timing ---- */

typedef struct lt_run {
    lt_state *s;
    const lt_problem *p;
    const lt_cand *c;
} lt_run;

static int lt_launch(void *arg, CUstream stream, char *msg, size_t n, int *sticky)
{
    const lt_run *r = arg;
    const lt_problem *p = r->p;
    cublasStatus_t st = r->s->cublasLtMatmul(
        r->s->h, p->op, &p->alpha, (const void *)(uintptr_t)p->a_mem, p->la, (const void *)(uintptr_t)p->b_mem, p->lb,
        &p->beta, (const void *)(uintptr_t)p->c_mem, p->lc, (void *)(uintptr_t)p->d_mem, p->lc, &r->c->algo,
        r->c->ws ? (void *)(uintptr_t)r->s->ws : NULL, r->c->ws, (cudaStream_t)stream);
    if (st == CUBLAS_STATUS_SUCCESS)
        return 0;
    snprintf(msg, n, "cublasLtMatmul: %s", r->s->cublasLtGetStatusString(st));
    *sticky = cut_cu()->cuCtxSynchronize() != CUDA_SUCCESS;
    return -1;
}

/* Checks and times the candidates in order until the budget runs out or the context dies. */
static void lt_time_all(cut_wk *w, lt_state *s, const lt_problem *p, const lt_list *l, cut_vendor_acc *a,
                        int *fatal)
{
    for (int i = 0; i < l->n && !*fatal && !cut_vendor_over_budget(a); i++) {
        lt_run r = {s, p, &l->v[i]};
        cut_wk_launcher lw = {lt_launch, &r};
        cut_result res;
        cut_wk_check_and_time(w, &lw, &res, fatal);
        cut_vendor_add(a, &res, l->v[i].config);
    }
}

int cut_cublaslt_vendor(cut_wk *w, const cut_vendor_opts *o, cut_vendor_acc *a, int *fatal, cut_err *e)
{
    *fatal = 0;
    cut_wk_tensors t;
    cut_wk_get_tensors(w, &t);
    if (!t.gemm)
        return cut_err_set(e, "cuBLASLt baseline: no GEMM workload prepared");
    void **slot = cut_wk_cublaslt_slot(w);
    if (!*slot && !(*slot = lt_load(e)))
        return -1;
    lt_state *s = *slot;
    lt_problem p;
    lt_list l = {0};
    int rc = lt_problem_init(s, &t, &p, e), nh = 0, ne = 0;
    if (rc == 0 && (nh = lt_heuristic(s, &p, o->heuristic_n, &l, e)) < 0)
        rc = -1;
    if (rc == 0 && o->enumerate && (ne = lt_enumerate(s, &p, o->max_configs, &l, e)) < 0)
        rc = -1;
    if (rc == 0) {
        a->out->heuristic += nh;
        a->out->enumerated += ne;
        lt_time_all(w, s, &p, &l, a, fatal);
    }
    free(l.v);
    lt_problem_free(s, &p);
    return rc;
}
