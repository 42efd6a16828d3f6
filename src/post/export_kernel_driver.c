/* cutune — export of optimized kernels: driver.cu of one kernel's project. It is self-contained (nvcc alone): it
 * reads the exported inputs, takes its references from the reference kernel or the baseline, and checks and times
 * like cutune's runner (cut_work_compare's rule, NaN-poisoned outputs, L2 flush, CUDA events, median). The fixed C++
 * is below as text; only the tables and launch_variant() are generated per kernel. */
#include "cutune/export.h"
#include "post/export_kernel_int.h"

#include <stdio.h>
#include <string.h>

/* ---- the driver's fixed parts (before and after the kernel's tables) ------------------------------------------ */

static const char *const driver_head[] = {
    "#include <cuda_runtime.h>\n"
    "\n"
    "#include <algorithm>\n"
    "#include <cmath>\n"
    "#include <cstdint>\n"
    "#include <cstdio>\n"
    "#include <cstdlib>\n"
    "#include <cstring>\n"
    "#include <string>\n"
    "#include <vector>\n"
    "\n"
    "#include \"launch.h\"\n"
    "\n"
    "// The folder of the input files (--inputs overrides it); CMakeLists.txt sets it to this project's inputs/.\n"
    "#ifndef CUTUNE_INPUTS_DIR\n"
    "#define CUTUNE_INPUTS_DIR \"inputs\"\n"
    "#endif\n"
    "\n"
    "enum dtype { DT_F32, DT_F64, DT_F16, DT_BF16, DT_I32, DT_I64, DT_U8 };\n"
    "// One buffer of the spec: inputs, then outputs (cut_kspec_work's order); accumulate: the kernel adds into it.\n"
    "struct buffer_desc {\n"
    "    const char *name;\n"
    "    dtype dt;\n"
    "    size_t elems;\n"
    "    bool is_output, accumulate;\n"
    "};\n"
    "enum variant { V_REFERENCE, V_BASELINE, V_BEST };\n"
    "\n"
    "// A scalar argument from its bytes as cutune passed them (little-endian, the scalar's dtype).\n"
    "template <class T> static T bits(uint64_t b)\n"
    "{\n"
    "    T v;\n"
    "    std::memcpy(&v, &b, sizeof v);\n"
    "    return v;\n"
    "}\n",
};

static const char *const driver_body[] = {
    cut_export_timing_text,
    "static const size_t k_nbufs = sizeof k_bufs / sizeof k_bufs[0];\n"
    "\n"
    "// ---- elements and the check ----\n"
    "static size_t dtype_size(dtype d)\n"
    "{\n"
    "    switch (d) {\n"
    "    case DT_F64:\n"
    "    case DT_I64:\n"
    "        return 8;\n"
    "    case DT_F16:\n"
    "    case DT_BF16:\n"
    "        return 2;\n"
    "    case DT_U8:\n"
    "        return 1;\n"
    "    default:\n"
    "        return 4;\n"
    "    }\n"
    "}\n"
    "\n"
    "static size_t bytes_of(const buffer_desc &b) { return b.elems * dtype_size(b.dt); }\n"
    "static bool is_integer(dtype d) { return d == DT_I32 || d == DT_I64 || d == DT_U8; }\n"
    "\n"
    "static double half_to_double(uint16_t h)\n"
    "{\n"
    "    const int ex = (h >> 10) & 0x1f, man = h & 0x3ff;\n"
    "    double v;\n"
    "    if (ex == 0)\n"
    "        v = std::ldexp((double)man, -24);\n"
    "    else if (ex == 31)\n"
    "        v = man ? NAN : INFINITY;\n"
    "    else\n"
    "        v = std::ldexp((double)(man | 0x400), ex - 25);\n"
    "    return (h >> 15) ? -v : v;\n"
    "}\n"
    "\n"
    "// Element i of a buffer of dtype d as a double.\n"
    "static double elem(dtype d, const unsigned char *p, size_t i)\n"
    "{\n"
    "    switch (d) {\n"
    "    case DT_F32: {\n"
    "        float v;\n"
    "        std::memcpy(&v, p + 4 * i, 4);\n"
    "        return v;\n"
    "    }\n"
    "    case DT_F64: {\n"
    "        double v;\n"
    "        std::memcpy(&v, p + 8 * i, 8);\n"
    "        return v;\n"
    "    }\n"
    "    case DT_F16:\n"
    "    case DT_BF16: {\n"
    "        uint16_t h;\n"
    "        std::memcpy(&h, p + 2 * i, 2);\n"
    "        if (d == DT_F16)\n"
    "            return half_to_double(h);\n"
    "        const uint32_t u = (uint32_t)h << 16;\n"
    "        float v;\n"
    "        std::memcpy(&v, &u, 4);\n"
    "        return v;\n"
    "    }\n"
    "    case DT_I32: {\n"
    "        int32_t v;\n"
    "        std::memcpy(&v, p + 4 * i, 4);\n"
    "        return v;\n"
    "    }\n"
    "    case DT_I64: {\n"
    "        int64_t v;\n"
    "        std::memcpy(&v, p + 8 * i, 8);\n"
    "        return (double)v;\n"
    "    }\n"
    "    case DT_U8:\n"
    "        return p[i];\n"
    "    }\n"
    "    return NAN;\n"
    "}\n"
    "\n"
    "// cutune's check (cut_work_compare): a float passes when |got - ref| <= atol + rtol * |ref|; a NaN or\n"
    "// an Inf passes only where the reference holds the same value, so a poisoned output that the kernel\n"
    "// never wrote fails; integers must match exactly. Returns the number of mismatches and prints the\n"
    "// first three; *max_err grows to the largest |got - ref| over finite pairs.\n"
    "static size_t compare(const char *who, const buffer_desc &b, const unsigned char *got, const unsigned char *ref,\n"
    "                      double *max_err)\n"
    "{\n"
    "    size_t bad = 0;\n"
    "    const size_t es = dtype_size(b.dt);\n"
    "    for (size_t i = 0; i < b.elems; i++) {\n"
    "        const double g = elem(b.dt, got, i), r = elem(b.dt, ref, i);\n"
    "        bool ok;\n"
    "        if (is_integer(b.dt)) {\n"
    "            ok = std::memcmp(got + i * es, ref + i * es, es) == 0;\n"
    "            *max_err = std::max(*max_err, std::fabs(g - r));\n"
    "        } else if (std::isfinite(g) && std::isfinite(r)) {\n"
    "            const double err = std::fabs(g - r);\n"
    "            *max_err = std::max(*max_err, err);\n"
    "            ok = err <= k_atol + k_rtol * std::fabs(r);\n"
    "        } else {\n"
    "            ok = !std::isfinite(r) && (std::isnan(r) ? std::isnan(g) : g == r);\n"
    "        }\n"
    "        if (!ok && bad++ < 3)\n"
    "            fprintf(stderr, \"%s %s: %s[%zu] = %.9g, want %.9g\\n\", k_name, who, b.name, i, g, r);\n"
    "    }\n"
    "    return bad;\n"
    "}\n"
    "\n",

    cut_export_cuda_check_text,
    "struct options {\n"
    "    int iters = 20, device = 0;\n"
    "    double min_ms = 200.0;\n"
    "    std::string inputs = CUTUNE_INPUTS_DIR;\n"
    "};\n"
    "\n"
    "struct workspace {\n"
    "    std::vector<void *> dev;                      // one device buffer per k_bufs entry\n"
    "    std::vector<std::vector<unsigned char>> host; // inputs: their bytes; outputs: the reference outputs\n"
    "    void *flush = nullptr;                        // written before every timed launch: twice the L2 size\n"
    "    size_t flush_bytes = 0;\n"
    "    cudaStream_t s = nullptr;\n"
    "};\n"
    "\n"
    "// Reads inputs/<name>.bin for every input: exactly the bytes the spec's shape needs.\n"
    "static bool read_inputs(const options &o, workspace &w)\n"
    "{\n"
    "    w.host.assign(k_nbufs, std::vector<unsigned char>());\n"
    "    for (size_t i = 0; i < k_nbufs; i++) {\n"
    "        const buffer_desc &b = k_bufs[i];\n"
    "        if (b.is_output)\n"
    "            continue;\n"
    "        const std::string path = o.inputs + \"/\" + b.name + \".bin\";\n"
    "        FILE *f = fopen(path.c_str(), \"rb\");\n"
    "        if (!f) {\n"
    "            fprintf(stderr, \"%s: cannot open the input file %s (see --inputs)\\n\", k_name, path.c_str());\n"
    "            return false;\n"
    "        }\n"
    "        w.host[i].resize(bytes_of(b));\n"
    "        const size_t got = fread(w.host[i].data(), 1, w.host[i].size(), f);\n"
    "        const bool longer = fgetc(f) != EOF;\n"
    "        fclose(f);\n"
    "        if (got != w.host[i].size() || longer) {\n"
    "            fprintf(stderr, \"%s: %s is not %zu bytes (%zu elements of input %s)\\n\", k_name, path.c_str(),\n"
    "                    bytes_of(b), b.elems, b.name);\n"
    "            return false;\n"
    "        }\n"
    "    }\n"
    "    return true;\n"
    "}\n"
    "\n"
    "static cudaError_t allocate(workspace &w, int device)\n"
    "{\n"
    "    w.dev.assign(k_nbufs, nullptr);\n"
    "    for (size_t i = 0; i < k_nbufs; i++)\n"
    "        CUDA_CHECK(cudaMalloc(&w.dev[i], bytes_of(k_bufs[i])));\n"
    "    int l2 = 0;\n"
    "    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));\n"
    "    w.flush_bytes = std::max((size_t)2 * (size_t)l2, (size_t)8 << 20);\n"
    "    CUDA_CHECK(cudaMalloc(&w.flush, w.flush_bytes));\n"
    "    return cudaSuccess;\n"
    "}\n"
    "\n"
    "static void release(workspace &w)\n"
    "{\n"
    "    for (void *p : w.dev)\n"
    "        cudaFree(p);\n"
    "    cudaFree(w.flush);\n"
    "    if (w.s)\n"
    "        cudaStreamDestroy(w.s);\n"
    "}\n"
    "\n",

    "// Restores the inputs (a kernel that writes into an input cannot pass on its own earlier output), then poisons\n"
    "// every output with 0xFF bytes (NaN for floats), or clears it to zero when the kernel accumulates into it.\n"
    "static cudaError_t prepare(const workspace &w)\n"
    "{\n"
    "    for (size_t i = 0; i < k_nbufs; i++) {\n"
    "        const buffer_desc &b = k_bufs[i];\n"
    "        if (b.is_output)\n"
    "            CUDA_CHECK(cudaMemsetAsync(w.dev[i], b.accumulate ? 0 : 0xff, bytes_of(b), w.s));\n"
    "        else\n"
    "            CUDA_CHECK(cudaMemcpyAsync(w.dev[i], w.host[i].data(), bytes_of(b), cudaMemcpyHostToDevice, w.s));\n"
    "    }\n"
    "    return cudaSuccess;\n"
    "}\n"
    "\n"
    "// Runs v once on restored inputs and poisoned outputs; outs gets every output's bytes (inputs stay empty).\n"
    "static cudaError_t run_once(variant v, const workspace &w, std::vector<std::vector<unsigned char>> &outs)\n"
    "{\n"
    "    CUDA_CHECK(prepare(w));\n"
    "    CUDA_CHECK((cudaError_t)launch_variant(v, w.dev.data(), w.s));\n"
    "    CUDA_CHECK(cudaStreamSynchronize(w.s));\n"
    "    outs.assign(k_nbufs, std::vector<unsigned char>());\n"
    "    for (size_t i = 0; i < k_nbufs; i++)\n"
    "        if (k_bufs[i].is_output) {\n"
    "            outs[i].resize(bytes_of(k_bufs[i]));\n"
    "            CUDA_CHECK(cudaMemcpy(outs[i].data(), w.dev[i], outs[i].size(), cudaMemcpyDeviceToHost));\n"
    "        }\n"
    "    return cudaSuccess;\n"
    "}\n"
    "\n"
    "// Mismatches of every output against the references.\n"
    "static size_t check(const char *who, const workspace &w, const std::vector<std::vector<unsigned char>> &outs,\n"
    "                    double *max_err)\n"
    "{\n"
    "    size_t bad = 0;\n"
    "    for (size_t i = 0; i < k_nbufs; i++)\n"
    "        if (k_bufs[i].is_output)\n"
    "            bad += compare(who, k_bufs[i], outs[i].data(), w.host[i].data(), max_err);\n"
    "    return bad;\n"
    "}\n"
    "\n"
    "// cutune's timing (time_median) of one variant, after its outputs are prepared.\n"
    "static cudaError_t time_variant(variant v, const workspace &w, const options &o, double *median_ms)\n"
    "{\n"
    "    CUDA_CHECK(prepare(w));\n"
    "    return time_median([&] { return (cudaError_t)launch_variant(v, w.dev.data(), w.s); }, w.flush, w.flush_bytes,\n"
    "                       w.s, o.iters, o.min_ms, median_ms, nullptr);\n"
    "}\n"
    "\n",

    "// Checks v, times it and checks it again; prints its line. Returns 0 ok, 1 a wrong result, 2 a CUDA error.\n"
    "static int measure(variant v, const char *who, const workspace &w, const options &o, double baseline_ms,\n"
    "                   double *ms)\n"
    "{\n"
    "    double err = 0.0, med = NAN;\n"
    "    std::vector<std::vector<unsigned char>> outs;\n"
    "    const char *why = nullptr;\n"
    "    size_t bad = 0;\n"
    "    cudaError_t rc = cudaSuccess;\n"
    "    if ((rc = run_once(v, w, outs)) != cudaSuccess)\n"
    "        why = \"launch failed\";\n"
    "    else if ((bad = check(who, w, outs, &err)) != 0)\n"
    "        why = \"wrong result\";\n"
    "    else if ((rc = time_variant(v, w, o, &med)) != cudaSuccess)\n"
    "        why = \"timing failed\";\n"
    "    else if ((rc = run_once(v, w, outs)) != cudaSuccess)\n"
    "        why = \"launch after timing failed\";\n"
    "    else if ((bad = check(who, w, outs, &err)) != 0)\n"
    "        why = \"wrong result after timing\";\n"
    "    *ms = why ? NAN : med;\n"
    "    printf(\"%s %s: %.6f ms\", k_name, who, *ms);\n"
    "    if (v == V_BEST)\n"
    "        printf(\", speedup %.3f\", baseline_ms / *ms);\n"
    "    printf(\", max_abs_err %.3g, %s\", err, why ? \"FAIL\" : \"ok\");\n"
    "    if (why && rc != cudaSuccess)\n"
    "        printf(\" (%s: %s)\", why, cudaGetErrorString(rc));\n"
    "    else if (why)\n"
    "        printf(\" (%s: %zu outputs outside atol %.3g + rtol %.3g * |ref|)\", why, bad, k_atol, k_rtol);\n"
    "    printf(\"\\n\");\n"
    "    fflush(stdout);\n"
    "    if (rc != cudaSuccess)\n"
    "        cudaGetLastError(); // clear a launch error that is not sticky\n"
    "    return !why ? 0 : rc != cudaSuccess ? 2 : 1;\n"
    "}\n"
    "\n"
    "// ---- arguments ----\n"
    "// Returns 0, 1 after --help, or -1 for a bad option.\n"
    "static int parse_args(int argc, char **argv, options &o)\n"
    "{\n"
    "    for (int i = 1; i < argc; i++) {\n"
    "        const char *a = argv[i];\n"
    "        if (!strcmp(a, \"--help\") || !strcmp(a, \"-h\")) {\n"
    "            printf(\"usage: %s [--iters I] [--min-ms T] [--device D] [--inputs DIR]\\n\"\n"
    "                   \"  --iters I     at least I timed launches per kernel (default 20)\\n\"\n"
    "                   \"  --min-ms T    and at least T ms of kernel time (default 200)\\n\"\n"
    "                   \"  --device D    CUDA device (default 0)\\n\"\n"
    "                   \"  --inputs DIR  the folder of the input files (default %s)\\n\",\n"
    "                   argv[0], CUTUNE_INPUTS_DIR);\n"
    "            return 1;\n"
    "        }\n"
    "        if (i + 1 >= argc) {\n"
    "            fprintf(stderr, \"%s: option %s needs a value (see --help)\\n\", argv[0], a);\n"
    "            return -1;\n"
    "        }\n"
    "        const char *val = argv[++i];\n"
    "        char *end = nullptr;\n"
    "        const double x = strtod(val, &end);\n"
    "        const bool number = *val && !*end && std::isfinite(x);\n"
    "        if (!strcmp(a, \"--iters\") && number && x >= 1 && x <= 1e7 && x == std::floor(x))\n"
    "            o.iters = (int)x;\n"
    "        else if (!strcmp(a, \"--min-ms\") && number && x >= 0 && x <= 1e7)\n"
    "            o.min_ms = x;\n"
    "        else if (!strcmp(a, \"--device\") && number && x >= 0 && x <= 1024 && x == std::floor(x))\n"
    "            o.device = (int)x;\n"
    "        else if (!strcmp(a, \"--inputs\"))\n"
    "            o.inputs = val;\n"
    "        else {\n"
    "            fprintf(stderr, \"%s: bad option or value '%s %s' (see --help)\\n\", argv[0], a, val);\n"
    "            return -1;\n"
    "        }\n"
    "    }\n"
    "    return 0;\n"
    "}\n"
    "\n",

    "int main(int argc, char **argv)\n"
    "{\n"
    "    options o;\n"
    "    const int pa = parse_args(argc, argv, o);\n"
    "    if (pa != 0)\n"
    "        return pa > 0 ? 0 : 2;\n"
    "    workspace w;\n"
    "    if (!read_inputs(o, w))\n"
    "        return 2;\n"
    "    cudaError_t rc = cudaSetDevice(o.device);\n"
    "    if (rc == cudaSuccess)\n"
    "        rc = cudaStreamCreate(&w.s);\n"
    "    if (rc == cudaSuccess)\n"
    "        rc = allocate(w, o.device);\n"
    "    std::vector<std::vector<unsigned char>> refs;\n"
    "    if (rc != cudaSuccess) {\n"
    "        fprintf(stderr, \"%s: cannot use CUDA device %d: %s\\n\", k_name, o.device, cudaGetErrorString(rc));\n"
    "        release(w);\n"
    "        return 2;\n"
    "    }\n"
    "    cudaDeviceProp prop;\n"
    "    if (cudaGetDeviceProperties(&prop, o.device) == cudaSuccess)\n"
    "        fprintf(stderr, \"%s on %s (device %d); references: %s\\n\", k_name, prop.name, o.device,\n"
    "                k_reference_desc);\n"
    "    if ((rc = run_once(V_REFERENCE, w, refs)) != cudaSuccess) {\n"
    "        fprintf(stderr, \"%s: the reference run failed: %s\\n\", k_name, cudaGetErrorString(rc));\n"
    "        release(w);\n"
    "        return 2;\n"
    "    }\n"
    "    for (size_t i = 0; i < k_nbufs; i++)\n"
    "        if (k_bufs[i].is_output)\n"
    "            w.host[i] = refs[i];\n"
    "    double base_ms = NAN, best_ms = NAN;\n"
    "    const int rb = measure(V_BASELINE, \"baseline\", w, o, NAN, &base_ms);\n"
    "    const int rt = measure(V_BEST, \"best\", w, o, base_ms, &best_ms);\n"
    "    release(w);\n"
    "    return std::max(rb, rt);\n"
    "}\n",
};

/* ---- driver.cu ----------------------------------------------------------------------------------------------- */

/* One call of a launcher in launch_variant: buffers from d[], scalars from their bytes. */
static void driver_call(cut_buf *b, const cut_export_opt *x, const cut_xo_state *s)
{
    const cut_kspec *k = &x->spec;
    cut_buf_printf(b, "        return launch_%s(", s->entry);
    for (int a = 0; a < k->nargs; a++) {
        int i = 0;
        const int kind = cut_xo_arg_kind(k, a, &i);
        const char *sep = a ? ", " : "";
        if (kind == 0)
            cut_buf_printf(b, "%s(const %s *)d[%d]", sep, cut_xo_ctype(k->inputs[i].dtype), i);
        else if (kind == 1)
            cut_buf_printf(b, "%s(%s *)d[%d]", sep, cut_xo_ctype(k->outputs[i].dtype), k->ninputs + i);
        else if (kind == 2) {
            unsigned long long v = 0;
            for (unsigned j = 0; j < s->call.args[a].size && j < 8; j++)
                v |= (unsigned long long)s->call.args[a].bytes[j] << (8 * j);
            cut_buf_printf(b, "%sbits<%s>(0x%llxull)", sep, cut_xo_ctype(k->scalars[i].dtype), v);
        }
    }
    cut_buf_printf(b, ", s);\n");
}

static void driver_tables(cut_buf *b, const cut_export_opt *x)
{
    const cut_kspec *k = &x->spec;
    cut_buf_printf(b, "// ---- %s (generated) ----\nstatic const char k_name[] = \"%s\";\n", x->name, x->name);
    if (x->st[CUT_XO_REFERENCE].present)
        cut_buf_printf(b, "static const char k_reference_desc[] = \"the reference kernel %s\";\n", k->ref_entry);
    else
        cut_buf_printf(b, "static const char k_reference_desc[] = \"the baseline's own outputs\";\n");
    cut_buf_printf(b, "// the spec's tolerance\nstatic const double k_atol = %.17g, k_rtol = %.17g;\n", k->atol,
                   k->rtol);
    cut_buf_printf(b, "// name, dtype, elements, output, accumulate\nstatic const buffer_desc k_bufs[] = {\n");
    for (int i = 0; i < x->work.nbufs; i++) {
        const cut_work_buf *w = &x->work.bufs[i];
        cut_buf_printf(b, "    {\"%s\", %s, %zu, %s, %s},\n", w->name, cut_xo_dt_enum(w->dtype), w->elems,
                       w->is_output ? "true" : "false", w->zero_init ? "true" : "false");
    }
    cut_buf_printf(b, "};\n\n// Launches variant v with the device buffers d (k_bufs' order) and the spec's scalars "
                      "(as cutune\n// passed them");
    for (int a = 0; a < k->nargs; a++) {
        int i = 0;
        if (cut_xo_arg_kind(k, a, &i) == 2 && k->scalars[i].is_number)
            cut_buf_printf(b, "; %s = %.17g", k->scalars[i].name, k->scalars[i].number);
        else if (cut_xo_arg_kind(k, a, &i) == 2)
            cut_buf_printf(b, "; %s = %s", k->scalars[i].name, k->scalars[i].value);
    }
    cut_buf_printf(b, "). Returns 0 or a cudaError_t.\nstatic int launch_variant(variant v, void *const *d, "
                      "cudaStream_t s)\n{\n    switch (v) {\n    case V_REFERENCE:\n");
    if (x->st[CUT_XO_REFERENCE].present)
        driver_call(b, x, &x->st[CUT_XO_REFERENCE]);
    else
        cut_buf_printf(b, "        // no reference kernel: the baseline's outputs are the references\n");
    cut_buf_printf(b, "    case V_BASELINE:\n");
    driver_call(b, x, &x->st[CUT_XO_BASELINE]);
    cut_buf_printf(b, "    case V_BEST:\n");
    driver_call(b, x, &x->st[CUT_XO_BEST]);
    cut_buf_printf(b, "    }\n    return (int)cudaErrorInvalidValue;\n}\n\n");
}

void cut_export_opt_driver(cut_buf *b, const cut_export_opt *x)
{
    cut_buf_printf(b,
                   "// Generated by cutune %s — do not edit.\n"
                   "// Measurement driver of %s as `cutune optimize` left it: the baseline and the best variant.\n"
                   "//   usage: driver [--iters I] [--min-ms T] [--device D] [--inputs DIR]\n"
                   "// The inputs are inputs/*.bin, input set 0 exactly as cutune generated it. The references are\n"
                   "// the outputs of %s on them. Then for the baseline and the best variant: poison the outputs\n"
                   "// (0xFF bytes: NaN for floats; an output the kernel accumulates into is zeroed instead), launch\n"
                   "// once, compare with the references (the spec's atol + rtol * |ref|; see compare()), time (3\n"
                   "// warm-up launches, the L2 flushed before each launch, CUDA events, median over >= I launches\n"
                   "// and >= T ms of kernel time), then check again. Prints\n"
                   "//   %s baseline: X ms, max_abs_err E, ok|FAIL\n"
                   "//   %s best: Y ms, speedup Z, max_abs_err E, ok|FAIL\n"
                   "// Exit code: 0 both ok, 1 a check failed, 2 bad arguments, unreadable inputs or a CUDA error.\n",
                   CUTUNE_VERSION, x->name,
                   x->st[CUT_XO_REFERENCE].present ? "the spec's reference kernel" : "the baseline", x->name,
                   x->name);
    for (size_t i = 0; i < CUT_ARRAY_LEN(driver_head); i++)
        cut_buf_append(b, driver_head[i], strlen(driver_head[i]));
    driver_tables(b, x);
    for (size_t i = 0; i < CUT_ARRAY_LEN(driver_body); i++)
        cut_buf_append(b, driver_body[i], strlen(driver_body[i]));
}

