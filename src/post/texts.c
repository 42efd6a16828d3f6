/* cutune — export: the generated CUDA C++ texts around the kernels (launcher per kernel, the one header, the
 * per-stream workspaces, CMakeLists.txt) and the parts every exported driver shares (input generator, CUDA_CHECK,
 * timing). The conv driver itself is export_driver.c. */
#include "cutune/export.h"

#include <stdio.h>
#include <string.h>

/* "[1,8,8,8,4,3,3,1,1]", and " fp16 NHWC, epilogue bias_relu" after it for other than the default types. */
static void shape_str(const cut_conv *c, char *buf, size_t n)
{
    int len = snprintf(buf, n, "[%d,%d,%d,%d,%d,%d,%d,%d,%d]", c->n, c->h, c->w, c->co, c->ci, c->kh, c->kw,
                       c->stride, c->pad);
    if (!cut_conv_is_default(c) && len >= 0 && (size_t)len < n)
        snprintf(buf + len, n - (size_t)len, " %s %s%s%s", cut_dtype_name(c->dtype), cut_conv_layout_name(c->layout),
                 c->epilogue != CUT_EPI_NONE ? ", epilogue " : "",
                 c->epilogue != CUT_EPI_NONE ? cut_conv_epilogue_name(c->epilogue) : "");
}

/* fp32 and tf32 data are stored as floats; fp16 and bf16 as 16-bit patterns, which the launchers take as void. */
static int float_storage(const cut_conv *c) { return c->dtype != CUT_DT_FP16 && c->dtype != CUT_DT_BF16; }

int cut_export_conv_plain(const cut_conv *c) { return float_storage(c) && c->epilogue == CUT_EPI_NONE; }

void cut_export_conv_params(const cut_conv *c, char *buf, size_t n)
{
    const char *t = float_storage(c) ? "float" : "void";
    snprintf(buf, n, "const %s *in, const %s *w, %s *out%s%s%s", t, t, t, c->epilogue != CUT_EPI_NONE ? ", const " : "",
             c->epilogue != CUT_EPI_NONE ? t : "", c->epilogue != CUT_EPI_NONE ? " *bias" : "");
}

void cut_export_conv_args(const cut_conv *c, int from_void, char *buf, size_t n)
{
    const int epi = c->epilogue != CUT_EPI_NONE;
    if (from_void && float_storage(c))
        snprintf(buf, n, "static_cast<const float *>(in), static_cast<const float *>(w), static_cast<float *>(out)%s",
                 epi ? ", static_cast<const float *>(bias)" : "");
    else
        snprintf(buf, n, "in, w, out%s", epi ? ", bias" : "");
}

void cut_export_smem_optin_text(cut_buf *b, const cut_kernel_src *ks, const char *qualified)
{
    if (ks->smem_dynamic > 0)
        cut_buf_printf(b,
                       "    // Dynamic shared memory beyond the default 48 KiB must be opted into, once per kernel.\n"
                       "    static int smem_set = 0;\n"
                       "    if (!smem_set) {\n"
                       "        cudaError_t err =\n"
                       "            cudaFuncSetAttribute(%s, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);\n"
                       "        if (err != cudaSuccess)\n"
                       "            return (int)err;\n"
                       "        smem_set = 1;\n"
                       "    }\n",
                       qualified);
}

/* The value of k's knob `name`, or dflt when its template has none. */
static int knob(const cut_export_kernel *k, const char *name, int dflt)
{
    const cut_template *t = cut_template_get(k->sched.tpl);
    for (int i = 0; t && i < t->nknobs; i++)
        if (!strcmp(t->knob_names[i], name))
            return k->sched.k[i];
    return dflt;
}

int cut_export_workspace(const cut_export_kernel *k, size_t *partial_floats, size_t *counters)
{
    const cut_template *t = cut_template_get(k->sched.tpl);
    const int split = knob(k, "splitk", 1);
    *partial_floats = *counters = 0;
    if (split <= 1 || !t)
        return 0;
    const cut_conv *c = &k->conv;
    /* one counter per output tile (the grid: N tiles x M tiles x slices); the partials: the igemm's SPLITK * CO *
     * NG, igemm_tc's SPLITK whole (overhanging) BM x BN tiles */
    *counters = (size_t)k->ks.grid[0] * k->ks.grid[1];
    if (!strcmp(t->name, "igemm_tc"))
        *partial_floats = (size_t)split * *counters * (size_t)knob(k, "bm", 0) * (size_t)knob(k, "bn", 0);
    else
        *partial_floats =
            (size_t)split * (size_t)c->co * (size_t)c->n * (size_t)cut_conv_oh(c) * (size_t)cut_conv_ow(c);
    return 1;
}

size_t cut_export_workspace_bytes(const cut_export_kernel *k)
{
    size_t floats, counters;
    if (!cut_export_workspace(k, &floats, &counters))
        return 0;
    return floats * sizeof(float) + counters * sizeof(unsigned);
}

void cut_export_kernel_names(const cut_export_kernel *k, char *ns, size_t nsn, char *guard, size_t gn)
{
    snprintf(ns, nsn, "cut_case%d_k%d", k->case_idx, k->kernel_id);
    snprintf(guard, gn, "CUTUNE_CASE%d_K%d_CUH", k->case_idx, k->kernel_id);
}

/* The launcher's helpers of a kernel of 16-bit data: its element types deduced from its signature, so that the
 * launcher takes void pointers and never names them. */
static const char typed_helpers[] =
    "// The kernel's element types (the 16-bit pattern type of the tensor-core template, fp32 for tf32's output),\n"
    "// deduced from its signature: the launcher takes void pointers and never names them.\n"
    "template <typename T, typename O, typename... R>\n"
    "static const T *cut_in(void (*)(const T *, const T *, O *, R...), const void *p)\n"
    "{\n"
    "    return static_cast<const T *>(p);\n"
    "}\n"
    "template <typename T, typename O, typename... R>\n"
    "static O *cut_out(void (*)(const T *, const T *, O *, R...), void *p)\n"
    "{\n"
    "    return static_cast<O *>(p);\n"
    "}\n\n";

/* The head of kernelK.cu: banner, includes, the typed helpers where needed, the workspace's size. */
static void wrapper_head(cut_buf *b, const cut_export_kernel *k, int split, size_t floats, size_t counters)
{
    char shape[160], desc[512];
    shape_str(&k->conv, shape, sizeof shape);
    cut_sched_describe(&k->sched, desc, sizeof desc);
    const int c = k->case_idx, id = k->kernel_id;
    cut_buf_printf(b,
                   "// Generated by cutune %s — do not edit.\n"
                   "// Host launchers of kernel%d.cuh: case %d %s (N,H,W,CO,CI,KH,KW,stride,pad), kernel %d.\n"
                   "// schedule: %s\n"
                   "// The launch configuration is the schedule's own, as cutune measured it. Declared, for C and C++,\n"
                   "// in ../cutune_kernels.h.\n"
                   "#include <cuda_runtime.h>\n\n"
                   "#include \"../cutune_kernels.h\"\n"
                   "#include \"kernel%d.cuh\"\n\n",
                   CUTUNE_VERSION, id, c, shape, id, desc, id);
    if (!float_storage(&k->conv))
        cut_buf_append(b, typed_helpers, sizeof typed_helpers - 1);
    if (split)
        cut_buf_printf(b,
                       "// Split-K: %zu floats of partial sums, then %zu counters that must be zero before the first\n"
                       "// launch (each launch leaves them zero).\n"
                       "static const size_t k_partials = %zuu, k_counters = %zuu;\n"
                       "static const char k_ws_key = 0; // this kernel's key in the per-stream table\n\n"
                       "size_t launch_case%d_k%d_workspace_bytes(void) { return k_partials * sizeof(float) + "
                       "k_counters * sizeof(unsigned); }\n\n",
                       floats, counters, floats, counters, c, id);
    else
        cut_buf_printf(b, "size_t launch_case%d_k%d_workspace_bytes(void) { return 0; }\n\n", c, id);
}

void cut_export_wrapper_text(cut_buf *b, const cut_export_kernel *k)
{
    char ns[64], guard[64], qualified[160], params[160], kargs[512], pass[64];
    cut_export_kernel_names(k, ns, sizeof ns, guard, sizeof guard);
    snprintf(qualified, sizeof qualified, "%s::%s", ns, k->ks.entry);
    size_t floats, counters;
    const int split = cut_export_workspace(k, &floats, &counters);
    const int c = k->case_idx, id = k->kernel_id, epi = k->conv.epilogue != CUT_EPI_NONE;
    const unsigned *g = k->ks.grid, *t = k->ks.block;
    /* the launcher's parameters; the kernel's arguments (the bias after out, before the workspace) */
    cut_export_conv_params(&k->conv, params, sizeof params);
    cut_export_conv_args(&k->conv, 0, pass, sizeof pass);
    if (float_storage(&k->conv))
        snprintf(kargs, sizeof kargs, "%s", pass);
    else /* f: the kernel, whose signature gives the element types (typed_helpers) */
        snprintf(kargs, sizeof kargs, "cut_in(f, in), cut_in(f, w), cut_out(f, out)%s", epi ? ", cut_in(f, bias)" : "");
    wrapper_head(b, k, split, floats, counters);
    cut_buf_printf(b,
                   "int launch_case%d_k%d_ws(%s, void *workspace, cudaStream_t s)\n"
                   "{\n"
                   "    const dim3 grid(%uu, %uu, %uu), block(%uu, %uu, %uu);\n"
                   "    const size_t smem = %uu;\n",
                   c, id, params, g[0], g[1], g[2], t[0], t[1], t[2], k->ks.smem_dynamic);
    cut_export_smem_optin_text(b, &k->ks, qualified);
    if (!float_storage(&k->conv))
        cut_buf_printf(b, "    const auto f = %s; // its element types\n", qualified);
    if (split)
        cut_buf_printf(b,
                       "    if (!workspace)\n"
                       "        return (int)cudaErrorInvalidValue;\n"
                       "    float *ws = static_cast<float *>(workspace);\n"
                       "    %s<<<grid, block, smem, s>>>(%s, ws, reinterpret_cast<unsigned *>(ws + k_partials));\n"
                       "    return (int)cudaGetLastError();\n"
                       "}\n\n"
                       "int launch_case%d_k%d(%s, cudaStream_t s)\n"
                       "{\n"
                       "    void *ws = nullptr;\n"
                       "    const int err = cutune_stream_workspace(&k_ws_key, s, launch_case%d_k%d_workspace_bytes(), "
                       "&ws);\n"
                       "    return err ? err : launch_case%d_k%d_ws(%s, ws, s);\n"
                       "}\n",
                       qualified, kargs, c, id, params, c, id, c, id, pass);
    else
        cut_buf_printf(b,
                       "    (void)workspace; // none needed\n"
                       "    %s<<<grid, block, smem, s>>>(%s);\n"
                       "    return (int)cudaGetLastError();\n"
                       "}\n\n"
                       "int launch_case%d_k%d(%s, cudaStream_t s)\n"
                       "{\n"
                       "    return launch_case%d_k%d_ws(%s, nullptr, s);\n"
                       "}\n",
                       qualified, kargs, c, id, params, c, id, pass);
}

/* ---- the one header, and the per-stream workspaces ------------------------------------------------------------ */

void cut_export_api_header_text(cut_buf *b, const cut_export_set *set, const cut_export_gemm_set *gemm)
{
    cut_buf_printf(b,
                   "// Generated by cutune %s — do not edit.\n"
                   "// Every launcher of the exported kernels, callable from C and C++ (link the cutune_kernels library\n"
                   "// of kernels/CMakeLists.txt, or compile the .cu files and cutune_runtime.cu into your program).\n"
                   "// Each returns 0 or the cudaError_t of its launch; it only enqueues work on the stream.\n"
                   "//\n"
                   "// Conv2D, fp32 NCHW: in [N][CI][H][W], w [CO][CI][KH][KW], out [N][CO][OH][OW], device pointers.\n"
                   "//   launch_caseN_kK(in, w, out, stream)\n"
                   "//       A kernel that needs a workspace (split-K) takes the stream's own, allocated and zeroed on\n"
                   "//       the first launch on that stream and kept until cutune_release_workspaces(): launches on\n"
                   "//       different streams run concurrently without sharing any memory but their arguments.\n"
                   "//   launch_caseN_kK_ws(in, w, out, workspace, stream)\n"
                   "//       The same with the caller's workspace of launch_caseN_kK_workspace_bytes() bytes (0: none,\n"
                   "//       pass NULL), zeroed once before its first use; it must not be used by two launches at once.\n"
                   "// Other dtypes, layouts and epilogues (the case's line below says which): tf32 data is fp32 as\n"
                   "// above; fp16 and bf16 data (and their outputs) are the 16-bit patterns of __half and\n"
                   "// __nv_bfloat16, passed as void pointers; NHWC is in [N][H][W][CI], w [CO][KH][KW][CI] (KRSC),\n"
                   "// out [N][OH][OW][CO]. A fused epilogue (bias, bias_relu: out = conv + bias[co], then max(out, 0),\n"
                   "// before the one rounding) takes its CO bias values, in the inputs' type, after out:\n"
                   "//   launch_caseN_kK(in, w, out, bias, stream), launch_caseN_kK_ws(in, w, out, bias, workspace, stream)\n"
                   "#ifndef CUTUNE_KERNELS_H\n#define CUTUNE_KERNELS_H\n\n"
                   "#include <stddef.h>\n\n#include <cuda_runtime_api.h>\n\n"
                   "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
                   CUTUNE_VERSION);
    for (int i = 0; i < set->n; i++) {
        const cut_export_kernel *k = &set->k[i];
        char shape[160], desc[512], params[160];
        shape_str(&k->conv, shape, sizeof shape);
        cut_sched_describe(&k->sched, desc, sizeof desc);
        cut_export_conv_params(&k->conv, params, sizeof params);
        const int c = k->case_idx, id = k->kernel_id;
        cut_buf_printf(b,
                       "// case %d %s kernel %d: %s; %.6g ms as tuned\n"
                       "int launch_case%d_k%d(%s, cudaStream_t s);\n"
                       "int launch_case%d_k%d_ws(%s, void *workspace, cudaStream_t s);\n"
                       "size_t launch_case%d_k%d_workspace_bytes(void);\n",
                       c, shape, id, desc, k->tuned_ms, c, id, params, c, id, params, c, id);
    }
    if (gemm->n > 0)
        cut_buf_printf(b, "\n// GEMM, row-major C[M][N] (fp32) = A[M][K] * B (K x N, or N x K for NT), A and B in the "
                          "dtype's\n// storage type (kernels/gemm/gemm_metadata.csv says which). The name says the rest: tn and "
                          "tt store A as\n// K x M, nt and tt B as N x K; batch_Z packs Z matrices of each operand "
                          "one after the other (one\n// launch computes them all); alpha_a and beta_b make C = a * "
                          "op(A) op(B) + b * Cin, where Cin (fp32,\n// apart from C) holds C's old contents and "
                          "comes after C:\n"
                          "//   launch_gemmG_kK(A, B, C, Cin, stream)\n"
                          "// A kernel marked \"one launch at a time\" keeps split-K state in module variables: never "
                          "two launches\n// of it in flight at once.\n");
    for (int i = 0; i < gemm->n; i++) {
        const cut_export_gemm_kernel *k = &gemm->k[i];
        char name[128], params[128];
        cut_gemm_name(&k->gemm, name, sizeof name);
        cut_export_gemm_params(&k->gemm, params, sizeof params);
        cut_buf_printf(b,
                       "// gemm %d (%s) kernel %d; %.6g ms as tuned%s\n"
                       "int launch_gemm%d_k%d(%s, cudaStream_t s);\n",
                       k->gemm_id, name, k->kernel_id, k->tuned_ms,
                       cut_export_gemm_module_state(k, NULL, 0) ? "; one launch at a time" : "", k->gemm_id,
                       k->kernel_id, params);
    }
    cut_buf_printf(b,
                   "\n// The per-stream workspaces (cutune_runtime.cu): the workspace of (key, stream), allocated and\n"
                   "// zeroed on the stream at its first use. The per-thread default stream has one per host thread.\n"
                   "int cutune_stream_workspace(const void *key, cudaStream_t s, size_t bytes, void **workspace);\n"
                   "// Frees every per-stream workspace (after a device synchronisation); the next launch allocates\n"
                   "// again. Call it before destroying a stream whose handle a later stream may reuse.\n"
                   "int cutune_release_workspaces(void);\n\n"
                   "#ifdef __cplusplus\n}\n#endif\n\n#endif // CUTUNE_KERNELS_H\n");
}

static const char runtime_text[] =
    "// The per-stream workspaces of the exported kernels that need one (split-K): see cutune_kernels.h.\n"
    "#include <cuda_runtime.h>\n\n"
    "#include <mutex>\n#include <thread>\n#include <vector>\n\n"
    "#include \"cutune_kernels.h\"\n\n"
    "namespace {\n"
    "struct workspace {\n"
    "    const void *key;\n"
    "    cudaStream_t stream;\n"
    "    std::thread::id thread; // only for the per-thread default stream\n"
    "    void *ptr;\n"
    "};\n"
    "std::mutex g_mu;\n"
    "std::vector<workspace> g_table;\n"
    "} // namespace\n\n"
    "int cutune_stream_workspace(const void *key, cudaStream_t s, size_t bytes, void **out)\n"
    "{\n"
    "    const std::thread::id who = s == cudaStreamPerThread ? std::this_thread::get_id() : std::thread::id();\n"
    "    std::lock_guard<std::mutex> lock(g_mu);\n"
    "    for (const workspace &w : g_table)\n"
    "        if (w.key == key && w.stream == s && w.thread == who) {\n"
    "            *out = w.ptr;\n"
    "            return 0;\n"
    "        }\n"
    "    void *p = nullptr;\n"
    "    cudaError_t err = cudaMalloc(&p, bytes);\n"
    "    if (err == cudaSuccess)\n"
    "        err = cudaMemsetAsync(p, 0, bytes, s); // ordered before the first launch on s\n"
    "    if (err != cudaSuccess) {\n"
    "        cudaFree(p);\n"
    "        return (int)err;\n"
    "    }\n"
    "    g_table.push_back(workspace{key, s, who, p});\n"
    "    *out = p;\n"
    "    return 0;\n"
    "}\n\n"
    "int cutune_release_workspaces(void)\n"
    "{\n"
    "    std::lock_guard<std::mutex> lock(g_mu);\n"
    "    cudaError_t err = cudaDeviceSynchronize();\n"
    "    for (const workspace &w : g_table) {\n"
    "        const cudaError_t e = cudaFree(w.ptr);\n"
    "        if (err == cudaSuccess)\n"
    "            err = e;\n"
    "    }\n"
    "    g_table.clear();\n"
    "    return (int)err;\n"
    "}\n";

void cut_export_runtime_text(cut_buf *b)
{
    cut_buf_printf(b, "// Generated by cutune %s — do not edit.\n", CUTUNE_VERSION);
    cut_buf_append(b, runtime_text, sizeof runtime_text - 1);
}

/* ---- the texts every exported driver shares -------------------------------------------------------------- */

/* The input generator of every exported driver: cutune's cut_rng_seed + cut_fill_uniform in C++. */
const char cut_export_rng_text[] =
    "// ---- inputs: cutune's generator (cut_rng_seed + cut_fill_uniform) ----\n"
    "// splitmix64 seeds xoshiro256**; the top 24 bits of each draw become a float in [-1, 1) that is a multiple of\n"
    "// 2^-23, so the inputs are bit-identical to those cutune validated with (seed S for the input, S ^\n"
    "// 0x9e3779b97f4a7c15 for the weights; cutune tune's default S is 1).\n"
    "static uint64_t splitmix64(uint64_t *x)\n{\n"
    "    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);\n"
    "    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;\n"
    "    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;\n"
    "    return z ^ (z >> 31);\n}\n\n"
    "static inline uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }\n\n"
    "static void fill_uniform(std::vector<float> &x, uint64_t seed)\n{\n"
    "    uint64_t s[4];\n"
    "    for (int i = 0; i < 4; i++)\n"
    "        s[i] = splitmix64(&seed);\n"
    "    for (size_t i = 0; i < x.size(); i++) {\n"
    "        const uint64_t r = rotl64(s[1] * 5, 7) * 9, t = s[1] << 17;\n"
    "        s[2] ^= s[0];\n        s[3] ^= s[1];\n        s[1] ^= s[2];\n        s[0] ^= s[3];\n"
    "        s[2] ^= t;\n        s[3] = rotl64(s[3], 45);\n"
    "        x[i] = (float)((double)(r >> 40) * 0x1.0p-23 - 1.0);\n"
    "    }\n}\n\n";

const char cut_export_cuda_check_text[] =
    "// ---- CUDA plumbing ----\n"
    "// Reports a failed runtime call with its expression and location and returns its error.\n"
    "#define CUDA_CHECK(x)                                                                                  \\\n"
    "    do {                                                                                               \\\n"
    "        cudaError_t err_ = (x);                                                                        \\\n"
    "        if (err_ != cudaSuccess) {                                                                     \\\n"
    "            fprintf(stderr, \"%s:%d: %s: %s\\n\", __FILE__, __LINE__, #x, cudaGetErrorString(err_));     \\\n"
    "            return err_;                                                                               \\\n"
    "        }                                                                                              \\\n"
    "    } while (0)\n\n";

const char cut_export_timing_text[] =
    "// ---- timing: cutune's measurement, the same for every exported driver ----\n"
    "// Median kernel time in ms: 3 warm-up launches, then launches until >= iters and >= min_ms in total (at most a\n"
    "// million), each after overwriting a buffer twice the L2 size so that no launch finds its data in L2 from the\n"
    "// one before, one event pair around each. launch() enqueues one launch on s and returns its cudaError_t.\n"
    "template <class Launch>\n"
    "static cudaError_t time_median(Launch launch, void *flush, size_t flush_bytes, cudaStream_t s, int iters,\n"
    "                               double min_ms, double *median_ms, int *launches)\n{\n"
    "    cudaError_t rc = cudaSuccess;\n"
    "    for (int i = 0; i < 3 && rc == cudaSuccess; i++)\n"
    "        rc = launch();\n"
    "    if (rc != cudaSuccess)\n"
    "        return rc;\n"
    "    cudaEvent_t t0, t1;\n"
    "    if ((rc = cudaEventCreate(&t0)) != cudaSuccess)\n"
    "        return rc;\n"
    "    if ((rc = cudaEventCreate(&t1)) != cudaSuccess) {\n"
    "        cudaEventDestroy(t0);\n"
    "        return rc;\n"
    "    }\n"
    "    std::vector<double> ms;\n"
    "    double total = 0.0;\n"
    "    while (((int)ms.size() < iters || total < min_ms) && ms.size() < 1000000) {\n"
    "        float t = 0.0f;\n"
    "        if ((rc = cudaMemsetAsync(flush, (int)(ms.size() & 0xff), flush_bytes, s)) != cudaSuccess ||\n"
    "            (rc = cudaEventRecord(t0, s)) != cudaSuccess || (rc = launch()) != cudaSuccess ||\n"
    "            (rc = cudaEventRecord(t1, s)) != cudaSuccess || (rc = cudaEventSynchronize(t1)) != cudaSuccess ||\n"
    "            (rc = cudaEventElapsedTime(&t, t0, t1)) != cudaSuccess)\n"
    "            break;\n"
    "        ms.push_back(t);\n"
    "        total += t;\n"
    "    }\n"
    "    cudaEventDestroy(t0);\n"
    "    cudaEventDestroy(t1);\n"
    "    if (rc != cudaSuccess)\n"
    "        return rc;\n"
    "    std::sort(ms.begin(), ms.end());\n"
    "    const size_t m = ms.size();\n"
    "    *median_ms = m % 2 ? ms[m / 2] : 0.5 * (ms[m / 2 - 1] + ms[m / 2]);\n"
    "    if (launches)\n"
    "        *launches = (int)m;\n"
    "    return cudaSuccess;\n}\n\n";

/* ---- CMakeLists.txt ------------------------------------------------------------------------------------------ */

void cut_export_cmake_text(cut_buf *b, const cut_export_set *set, const char *arch)
{
    cut_buf_printf(b,
                   "# Generated by cutune %s — do not edit. Builds the measurement driver of the exported kernels\n"
                   "# with nvcc alone (no cutune headers or libraries):\n"
                   "#   cmake -S kernels -B build && cmake --build build -j && build/driver --help\n"
                   "# A program of yours: add_subdirectory(kernels), link cutune_kernels, #include \"cutune_kernels.h\".\n"
                   "cmake_minimum_required(VERSION 3.18)\n"
                   "# The architecture the kernels were tuned for; override with -DCMAKE_CUDA_ARCHITECTURES=...\n"
                   "set(CMAKE_CUDA_ARCHITECTURES %s CACHE STRING \"CUDA architectures to build for\")\n"
                   "project(cutune_kernels LANGUAGES CUDA CXX)\n"
                   "if(NOT CMAKE_BUILD_TYPE)\n"
                   "  set(CMAKE_BUILD_TYPE Release)\n"
                   "endif()\n"
                   "# As cutune's NVRTC compile: C++17 and NDEBUG (FMA contraction is on by default in both).\n"
                   "set(CMAKE_CUDA_STANDARD 17)\n"
                   "set(CMAKE_CUDA_STANDARD_REQUIRED ON)\n"
                   "# Every kernel's launchers and the per-stream workspaces, as one library.\n"
                   "add_library(cutune_kernels STATIC cutune_runtime.cu\n",
                   CUTUNE_VERSION, arch);
    for (int i = 0; i < set->n; i++)
        cut_buf_printf(b, "  case%d/kernel%d.cu\n", set->k[i].case_idx, set->k[i].kernel_id);
    cut_buf_printf(b, ")\n"
                      "target_include_directories(cutune_kernels PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})\n"
                      "target_compile_definitions(cutune_kernels PRIVATE NDEBUG)\n"
                      "set_target_properties(cutune_kernels PROPERTIES POSITION_INDEPENDENT_CODE ON)\n"
                      "add_executable(driver driver.cu)\n"
                      "target_link_libraries(driver PRIVATE cutune_kernels)\n"
                      "target_compile_definitions(driver PRIVATE NDEBUG)\n");
}
