/* cutune — export of tuned GEMMs: the measurement driver (kernels/gemm/driver.cu). Self-contained: cutune's input
 * generator and rounding to the dtype, every layout, the strided batch, alpha and beta with C's old contents as an
 * input of its own (Cin), a double-precision reference computed on the GPU, cutune's relative Frobenius check and
 * tolerance per dtype, and its timing rules. The host part (cut_export_gemm_host_text) is plain C++ that
 * tests/test_export_gemm_extras.c compiles with the host compiler to check it against cutune's own work; the
 * reference's one element (reference_at) is the same function on the host and, under nvcc, on the GPU. */
#include "cutune/export.h"
#include "post/export_text_int.h"

#include <stdio.h>
#include <string.h>

static const char gemm_driver_head[] =
    "// Measurement driver of the GEMMs exported by `cutune export` (one binary for all of them).\n"
    "//   usage: gemm_driver [--gemm G] [--kernel K] [--iters I] [--min-ms T] [--seed S] [--device D]\n"
    "// For every selected kernel: poison C with NaN, launch once and compare with a double-precision GEMM computed\n"
    "// on the GPU from the same (dtype-rounded) inputs, in the GEMM's layout, over every batch, with its alpha and\n"
    "// beta (beta != 0: + beta * Cin, C's old contents, an input of its own): relative Frobenius error <= the\n"
    "// dtype's tolerance (fp32 1e-5, tf32 2e-3, fp16 and bf16 1e-2; NaN never passes: cutune's rule); then time it\n"
    "// (warm-up, L2 flush before every launch, CUDA events, median over >= I launches and >= T ms of kernel time)\n"
    "// and check again. Kernels run one at a time on one stream, so those that keep split-K state in module\n"
    "// variables (their launchers say so) are measured as cutune measured them.\n"
    "// Prints one line per kernel:\n"
    "//   gemm G kernel K (<name>): <ms> ms, <TFLOP/s> TFLOP/s, rel_err <e>, ok|FAIL\n"
    "// Exit code: 0 all ok, 1 a kernel failed, 2 bad arguments, a CUDA error or no kernel selected.\n"
    "#include <cuda_runtime.h>\n\n"
    "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n#include <cstdio>\n#include <cstdlib>\n"
    "#include <cstring>\n#include <vector>\n\n";

const char cut_export_gemm_host_text[] =
    "// ---- the workload: types, inputs, reference and tolerance (as cutune computes them) ----\n"
    "// layout: A stored M x K (NN, NT) or K x M (TN, TT: op(A) = A^T); B stored K x N (NN, TN) or N x K (NT, TT:\n"
    "// op(B) = B^T); all row-major, each operand's batch matrices packed one after the other (strides M*K, K*N,\n"
    "// M*N elements). C (fp32) = alpha * op(A) op(B) + beta * Cin per batch, where Cin (fp32, C's old contents)\n"
    "// is an input of its own, read only when beta != 0. dtype: the type of A and B (fp32 and tf32 stored as\n"
    "// float, tf32 rounded inside the tensor cores; fp16 and bf16 as the 16-bit patterns of __half and\n"
    "// __nv_bfloat16).\n"
    "#ifdef __CUDACC__\n"
    "#define GEMM_HD __host__ __device__\n"
    "#else\n"
    "#define GEMM_HD\n"
    "#endif\n"
    "enum { DT_FP32, DT_TF32, DT_FP16, DT_BF16 };\n"
    "enum { NN, NT, TN, TT };\n"
    "struct gemm_case { int id, m, n, k, layout, dtype, batch; double alpha, beta; const char *name; };\n"
    "\n"
    "static size_t elem_bytes(int dt) { return dt == DT_FP16 || dt == DT_BF16 ? 2 : 4; }\n"
    "static size_t a_elems(const gemm_case &g) { return (size_t)g.batch * g.m * g.k; }\n"
    "static size_t b_elems(const gemm_case &g) { return (size_t)g.batch * g.k * g.n; }\n"
    "GEMM_HD static size_t c_elems(const gemm_case &g) { return (size_t)g.batch * g.m * g.n; }\n"
    "static double gemm_flops(const gemm_case &g) { return 2.0 * g.m * (double)g.n * g.k * g.batch; }\n"
    "// cutune's tolerance on the relative Frobenius error (cut_gemm_tolerance).\n"
    "static double tolerance(int dt) { return dt == DT_FP32 ? 1e-5 : dt == DT_TF32 ? 2e-3 : 1e-2; }\n"
    "\n"
    CUT_EXPORT_DTYPE_TEXT
    "\n"
    "// Input set 0 of cutune's seed: A (seed) and B (seed ^ 0x9e3779b97f4a7c15) uniform in [-1, 1) over every batch\n"
    "// in storage order, rounded to the dtype so that the reference is exact for the values the kernel reads; with\n"
    "// beta != 0 Cin from a stream of its own (seed ^ 0xc2b2ae3d27d4eb4f), fp32, else empty.\n"
    "static void make_inputs(const gemm_case &g, uint64_t seed, std::vector<float> &a, std::vector<float> &b,\n"
    "                        std::vector<float> &cin)\n"
    "{\n"
    "    a.resize(a_elems(g));\n"
    "    b.resize(b_elems(g));\n"
    "    cin.assign(g.beta != 0.0 ? c_elems(g) : 0, 0.0f);\n"
    "    fill_uniform(a, seed);\n"
    "    fill_uniform(b, seed ^ 0x9e3779b97f4a7c15ULL);\n"
    "    if (g.beta != 0.0)\n"
    "        fill_uniform(cin, seed ^ 0xc2b2ae3d27d4eb4fULL);\n"
    "    round_to(g.dtype, a);\n"
    "    round_to(g.dtype, b);\n"
    "}\n"
    "\n"
    "// Output idx of C (batch z, row i, column j) in double, summed as cutune sums its reference: the products\n"
    "// (alpha * op(A)[i][p]) * op(B)[p][j] added in p order, then beta * Cin[idx] (cin is not read when beta is 0);\n"
    "// the result rounded to float, as cutune stores it. Plain loops, no tricks to trust.\n"
    "GEMM_HD static double reference_at(const gemm_case &g, const float *a, const float *b, const float *cin,\n"
    "                                   size_t idx)\n"
    "{\n"
    "    const size_t mn = (size_t)g.m * g.n, z = idx / mn;\n"
    "    const int i = (int)(idx % mn / g.n), j = (int)(idx % g.n);\n"
    "    const bool ta = g.layout == TN || g.layout == TT, tb = g.layout == NT || g.layout == TT;\n"
    "    const float *az = a + z * g.m * g.k, *bz = b + z * g.k * g.n;\n"
    "    double s = 0.0;\n"
    "    for (int p = 0; p < g.k; p++) {\n"
    "        const double av = g.alpha * (double)az[ta ? (size_t)p * g.m + i : (size_t)i * g.k + p];\n"
    "        s += av * (double)bz[tb ? (size_t)j * g.k + p : (size_t)p * g.n + j];\n"
    "    }\n"
    "    if (g.beta != 0.0)\n"
    "        s += g.beta * (double)cin[idx];\n"
    "    return (double)(float)s;\n"
    "}\n"
    "\n"
    "// cutune's relative Frobenius error: ||C - R|| / ||R|| (||C|| when R is all zero); infinite when C has a NaN\n"
    "// or an Inf.\n"
    "static double rel_error(const std::vector<float> &c, const std::vector<double> &r)\n"
    "{\n"
    "    double d2 = 0, r2 = 0, c2 = 0;\n"
    "    for (size_t i = 0; i < c.size(); i++) {\n"
    "        if (!std::isfinite(c[i]) || !std::isfinite(r[i]))\n"
    "            return INFINITY;\n"
    "        const double d = (double)c[i] - r[i];\n"
    "        d2 += d * d;\n"
    "        r2 += r[i] * r[i];\n"
    "        c2 += (double)c[i] * c[i];\n"
    "    }\n"
    "    return r2 == 0 ? std::sqrt(c2) : std::sqrt(d2 / r2);\n"
    "}\n"
    "\n";

static const char gemm_driver_types[] =
    "// The launchers: (A, B, C, stream), or (A, B, C, Cin, stream) for a GEMM with beta != 0.\n"
    "typedef int (*launch_fn)(const void *A, const void *B, float *C, cudaStream_t s);\n"
    "typedef int (*launch_cin_fn)(const void *A, const void *B, float *C, const float *Cin, cudaStream_t s);\n"
    "struct kernel_entry { int gemm_id, kernel_id; launch_fn launch; launch_cin_fn launch_cin; };\n\n";

static const char *const gemm_driver_body[] = {
    cut_export_timing_text,
    "#define CHECK(x)                                                                                    \\\n"
    "    do {                                                                                            \\\n"
    "        cudaError_t err_ = (x);                                                                     \\\n"
    "        if (err_ != cudaSuccess) {                                                                  \\\n"
    "            std::fprintf(stderr, \"%s:%d: %s: %s\\n\", __FILE__, __LINE__, #x, cudaGetErrorString(err_)); \\\n"
    "            std::exit(2);                                                                           \\\n"
    "        }                                                                                           \\\n"
    "    } while (0)\n\n"
    "// The reference on the GPU, one thread per output (the host's plain loops would take hours at 8192^3).\n"
    "__global__ void reference_gemm(gemm_case g, const float *A, const float *B, const float *Cin, double *R)\n{\n"
    "    const size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (idx < c_elems(g))\n"
    "        R[idx] = reference_at(g, A, B, Cin, idx);\n}\n\n"
    "// The device buffers of one GEMM (Cin null when beta is 0) and its reference.\n"
    "struct gemm_data { const gemm_case *g; void *A, *B; float *C, *Cin; std::vector<double> ref; };\n\n"
    "static float *upload_floats(const std::vector<float> &x)\n{\n"
    "    float *p = nullptr;\n"
    "    if (x.empty())\n"
    "        return p;\n"
    "    CHECK(cudaMalloc(&p, x.size() * sizeof(float)));\n"
    "    CHECK(cudaMemcpy(p, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));\n"
    "    return p;\n}\n\n"
    "static void prepare(const gemm_case &g, uint64_t seed, gemm_data &d)\n{\n"
    "    std::vector<float> a, b, cin;\n"
    "    make_inputs(g, seed, a, b, cin);\n"
    "    std::vector<unsigned char> pa, pb;\n"
    "    pack(g.dtype, a, pa);\n"
    "    pack(g.dtype, b, pb);\n"
    "    CHECK(cudaMalloc(&d.A, pa.size()));\n    CHECK(cudaMalloc(&d.B, pb.size()));\n"
    "    CHECK(cudaMalloc(&d.C, c_elems(g) * sizeof(float)));\n"
    "    CHECK(cudaMemcpy(d.A, pa.data(), pa.size(), cudaMemcpyHostToDevice));\n"
    "    CHECK(cudaMemcpy(d.B, pb.data(), pb.size(), cudaMemcpyHostToDevice));\n"
    "    d.Cin = upload_floats(cin);\n"
    "    float *fa = upload_floats(a), *fb = upload_floats(b);\n"
    "    double *fr;\n"
    "    CHECK(cudaMalloc(&fr, c_elems(g) * sizeof(double)));\n"
    "    reference_gemm<<<(unsigned)((c_elems(g) + 127) / 128), 128>>>(g, fa, fb, d.Cin, fr);\n"
    "    CHECK(cudaGetLastError());\n"
    "    d.ref.resize(c_elems(g));\n"
    "    CHECK(cudaMemcpy(d.ref.data(), fr, d.ref.size() * sizeof(double), cudaMemcpyDeviceToHost));\n"
    "    CHECK(cudaFree(fa));\n    CHECK(cudaFree(fb));\n    CHECK(cudaFree(fr));\n"
    "    d.g = &g;\n}\n\n"
    "static int launch(const kernel_entry &k, const gemm_data &d, cudaStream_t s)\n{\n"
    "    return k.launch_cin ? k.launch_cin(d.A, d.B, d.C, d.Cin, s) : k.launch(d.A, d.B, d.C, s);\n}\n\n"
    "// Poisons C, launches once and returns the relative error (a launch error ends the driver).\n"
    "static double check_once(const kernel_entry &k, gemm_data &d)\n{\n"
    "    const gemm_case &g = *d.g;\n"
    "    CHECK(cudaMemset(d.C, 0xFF, c_elems(g) * sizeof(float)));\n"
    "    const int rc = launch(k, d, 0);\n"
    "    const cudaError_t sync = cudaDeviceSynchronize();\n"
    "    if (rc != 0 || sync != cudaSuccess) {\n"
    "        std::fprintf(stderr, \"gemm %d kernel %d: launch failed: %s\\n\", k.gemm_id, k.kernel_id,\n"
    "                     cudaGetErrorString(rc != 0 ? (cudaError_t)rc : sync));\n"
    "        std::exit(2);\n"
    "    }\n"
    "    std::vector<float> c(c_elems(g));\n"
    "    CHECK(cudaMemcpy(c.data(), d.C, c.size() * sizeof(float), cudaMemcpyDeviceToHost));\n"
    "    return rel_error(c, d.ref);\n}\n\n"
    "// cutune's timing (time_median) of one GEMM kernel on the default stream; a CUDA error ends the driver.\n"
    "static double time_kernel(const kernel_entry &k, gemm_data &d, int iters, double min_ms, void *flush, size_t fl)\n"
    "{\n"
    "    double med = -1;\n"
    "    CHECK(time_median([&] { launch(k, d, 0); return cudaGetLastError(); }, flush, fl, 0, iters, min_ms, &med,\n"
    "                      nullptr));\n"
    "    return med;\n}\n\n",
    "static int arg_int(int argc, char **argv, int *i, const char *name, long lo, long hi)\n{\n"
    "    char *end;\n"
    "    long v = *i + 1 < argc ? std::strtol(argv[*i + 1], &end, 10) : 0;\n"
    "    if (*i + 1 >= argc || *end || end == argv[*i + 1] || v < lo || v > hi) {\n"
    "        std::fprintf(stderr, \"gemm_driver: %s needs an integer in [%ld, %ld]\\n\", name, lo, hi);\n"
    "        std::exit(2);\n"
    "    }\n"
    "    ++*i;\n"
    "    return (int)v;\n}\n\n"
    "int main(int argc, char **argv)\n{\n"
    "    int only_gemm = 0, only_kernel = 0, iters = 20, dev = 0;\n"
    "    double min_ms = 200;\n"
    "    uint64_t seed = 1;\n"
    "    for (int i = 1; i < argc; i++) {\n"
    "        if (!std::strcmp(argv[i], \"--gemm\")) only_gemm = arg_int(argc, argv, &i, \"--gemm\", 1, 1 << 20);\n"
    "        else if (!std::strcmp(argv[i], \"--kernel\")) only_kernel = arg_int(argc, argv, &i, \"--kernel\", 1, 1 << 20);\n"
    "        else if (!std::strcmp(argv[i], \"--iters\")) iters = arg_int(argc, argv, &i, \"--iters\", 1, 100000);\n"
    "        else if (!std::strcmp(argv[i], \"--min-ms\")) min_ms = arg_int(argc, argv, &i, \"--min-ms\", 0, 600000);\n"
    "        else if (!std::strcmp(argv[i], \"--seed\")) seed = (uint64_t)arg_int(argc, argv, &i, \"--seed\", 0, 2147483647);\n"
    "        else if (!std::strcmp(argv[i], \"--device\")) dev = arg_int(argc, argv, &i, \"--device\", 0, 1024);\n"
    "        else {\n"
    "            std::fprintf(stderr, \"usage: gemm_driver [--gemm G] [--kernel K] [--iters I] [--min-ms T] [--seed S] \"\n"
    "                         \"[--device D]\\n\");\n"
    "            return std::strcmp(argv[i], \"--help\") ? 2 : 0;\n"
    "        }\n"
    "    }\n"
    "    CHECK(cudaSetDevice(dev));\n"
    "    int l2 = 0;\n"
    "    CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));\n"
    "    const size_t fl = 2 * (size_t)std::max(l2, 1 << 20);\n"
    "    void *flush;\n"
    "    CHECK(cudaMalloc(&flush, fl));\n"
    "    int ran = 0, failed = 0;\n"
    "    for (const gemm_case &g : gemms) {\n"
    "        if (only_gemm && g.id != only_gemm)\n"
    "            continue;\n"
    "        gemm_data d;\n"
    "        int prepared = 0;\n"
    "        for (const kernel_entry &k : kernels) {\n"
    "            if (k.gemm_id != g.id || (only_kernel && k.kernel_id != only_kernel))\n"
    "                continue;\n"
    "            if (!prepared) {\n"
    "                prepare(g, seed, d);\n"
    "                prepared = 1;\n"
    "            }\n"
    "            const double tol = tolerance(g.dtype);\n"
    "            double err = check_once(k, d);\n"
    "            double ms = err <= tol ? time_kernel(k, d, iters, min_ms, flush, fl) : -1;\n"
    "            if (err <= tol)\n"
    "                err = std::max(err, check_once(k, d)); // correct first, corrupt later is a failure too\n"
    "            const int ok = err <= tol;\n"
    "            const double tflops = ms > 0 ? gemm_flops(g) / (ms * 1e9) : 0;\n"
    "            std::printf(\"gemm %d kernel %d (%s): %.4f ms, %.1f TFLOP/s, rel_err %.3g, %s\\n\", g.id, k.kernel_id,\n"
    "                        g.name, ms, tflops, err, ok ? \"ok\" : \"FAIL\");\n"
    "            ran++;\n"
    "            failed += !ok;\n"
    "        }\n"
    "        if (prepared) {\n"
    "            CHECK(cudaFree(d.A));\n            CHECK(cudaFree(d.B));\n            CHECK(cudaFree(d.C));\n"
    "            CHECK(cudaFree(d.Cin));\n"
    "        }\n"
    "    }\n"
    "    CHECK(cudaFree(flush));\n"
    "    if (!ran) {\n"
    "        std::fprintf(stderr, \"gemm_driver: no kernel selected\\n\");\n"
    "        return 2;\n"
    "    }\n"
    "    return failed ? 1 : 0;\n}\n",
};

static const char *layout_enum(cut_gemm_layout l)
{
    return l == CUT_GEMM_NT ? "NT" : l == CUT_GEMM_TN ? "TN" : l == CUT_GEMM_TT ? "TT" : "NN";
}

static const char *dtype_enum(cut_dtype d)
{
    return d == CUT_DT_TF32 ? "DT_TF32" : d == CUT_DT_FP16 ? "DT_FP16" : d == CUT_DT_BF16 ? "DT_BF16" : "DT_FP32";
}

/* The GEMM table (one row per GEMM with exported kernels; set is sorted by GEMM) and the kernel table. */
static void driver_tables(cut_buf *b, const cut_export_gemm_set *set)
{
    cut_buf_printf(b, "// id, M, N, K, layout, dtype, batch, alpha, beta, name\nstatic const gemm_case gemms[] = {\n");
    for (int i = 0; i < set->n; i++) {
        if (i > 0 && set->k[i].gemm_id == set->k[i - 1].gemm_id)
            continue;
        const cut_gemm *g = &set->k[i].gemm;
        char name[128];
        cut_gemm_name(g, name, sizeof name);
        cut_buf_printf(b, "    {%d, %d, %d, %d, %s, %s, %d, %.17g, %.17g, \"%s\"},\n", set->k[i].gemm_id, g->m, g->n,
                       g->k, layout_enum(g->layout), dtype_enum(g->dtype), cut_gemm_batch(g), cut_gemm_alpha(g),
                       cut_gemm_beta(g), name);
    }
    cut_buf_printf(b, "};\n// gemm, kernel, launcher (A, B, C), launcher with Cin (A, B, C, Cin)\n"
                      "static const kernel_entry kernels[] = {\n");
    for (int i = 0; i < set->n; i++) {
        const cut_export_gemm_kernel *k = &set->k[i];
        const int cin = cut_gemm_cin_buf(&k->gemm) >= 0;
        cut_buf_printf(b, "    {%d, %d, %s%s%d_k%d%s},\n", k->gemm_id, k->kernel_id, cin ? "nullptr, " : "",
                       "launch_gemm", k->gemm_id, k->kernel_id, cin ? "" : ", nullptr");
    }
    cut_buf_printf(b, "};\n\n");
}

void cut_export_gemm_driver_text(cut_buf *b, const cut_export_gemm_set *set)
{
    cut_buf_printf(b, "// Generated by cutune %s — do not edit.\n", CUTUNE_VERSION);
    cut_buf_append(b, gemm_driver_head, strlen(gemm_driver_head));
    cut_buf_printf(b, "#include \"../cutune_kernels.h\" // every launcher\n\n");
    cut_buf_append(b, cut_export_rng_text, strlen(cut_export_rng_text));
    cut_buf_append(b, cut_export_gemm_host_text, strlen(cut_export_gemm_host_text));
    cut_buf_append(b, gemm_driver_types, strlen(gemm_driver_types));
    driver_tables(b, set);
    for (size_t i = 0; i < CUT_ARRAY_LEN(gemm_driver_body); i++)
        cut_buf_append(b, gemm_driver_body[i], strlen(gemm_driver_body[i]));
}
