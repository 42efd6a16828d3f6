/* cutune — the protocol's comparisons on the device (devcheck.h). */
#include "measure/devcheck.h"

#include "cutune/compile.h"
#include "cutune/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every kernel: a grid-stride loop, each warp's sums reduced with shuffles, one atomic per warp into out[]. The
 * element loaders convert exactly (fp16 and bf16 by their bits), the tests below the arithmetic (finite, NaN) are on
 * bits, and NVRTC compiles without contraction (--fmad=false) so that each element's verdict is the host's. */
const char cut_dc_source[] =
    "typedef unsigned long long cut_u64;\n"
    "typedef unsigned int cut_u32;\n"
    "static __device__ __forceinline__ cut_u64 cut_dc_mix(cut_u64 j, cut_u32 w)\n"
    "{\n"
    "    cut_u64 z = (cut_u64)w ^ (j * 0x9E3779B97F4A7C15ull);\n"
    "    z ^= z >> 30; z *= 0xBF58476D1CE4E5B9ull; z ^= z >> 27; z *= 0x94D049BB133111EBull; z ^= z >> 31;\n"
    "    return z;\n"
    "}\n"
    "static __device__ __forceinline__ cut_u32 cut_dc_word(const unsigned char *p, cut_u64 bytes, cut_u64 j)\n"
    "{\n"
    "    if (j * 4 + 4 <= bytes)\n"
    "        return ((const cut_u32 *)p)[j];\n"
    "    cut_u32 w = 0;\n"
    "    for (cut_u64 k = 0; k < 4 && j * 4 + k < bytes; k++)\n"
    "        w |= (cut_u32)p[j * 4 + k] << (8 * k);\n"
    "    return w;\n"
    "}\n"
    "static __device__ __forceinline__ void cut_dc_add(cut_u64 *dst, cut_u64 v)\n"
    "{\n"
    "    for (int o = 16; o > 0; o >>= 1)\n"
    "        v += __shfl_down_sync(0xffffffffu, v, o);\n"
    "    if ((threadIdx.x & 31) == 0 && v)\n"
    "        atomicAdd(dst, v);\n"
    "}\n"
    "static __device__ __forceinline__ void cut_dc_addf(double *dst, double v)\n"
    "{\n"
    "    for (int o = 16; o > 0; o >>= 1)\n"
    "        v += __shfl_down_sync(0xffffffffu, v, o);\n"
    "    if ((threadIdx.x & 31) == 0 && v != 0.0)\n"
    "        atomicAdd(dst, v);\n"
    "}\n"
    "static __device__ __forceinline__ void cut_dc_max(cut_u64 *dst, cut_u64 v)\n"
    "{\n"
    "    for (int o = 16; o > 0; o >>= 1) {\n"
    "        const cut_u64 u = __shfl_down_sync(0xffffffffu, v, o);\n"
    "        v = u > v ? u : v;\n"
    "    }\n"
    "    if ((threadIdx.x & 31) == 0 && v)\n"
    "        atomicMax(dst, v);\n"
    "}\n"
    "static __device__ __forceinline__ cut_u64 cut_dc_bits(double x) { return (cut_u64)__double_as_longlong(x); }\n"
    "static __device__ __forceinline__ int cut_dc_finite(double x)\n"
    "{\n"
    "    return ((cut_dc_bits(x) >> 52) & 0x7ff) != 0x7ff;\n"
    "}\n"
    "static __device__ __forceinline__ int cut_dc_nan(double x)\n"
    "{\n"
    "    return !cut_dc_finite(x) && (cut_dc_bits(x) & 0xfffffffffffffull) != 0;\n"
    "}\n"
    "static __device__ __forceinline__ double cut_dc_abs(double x) { return x < 0 ? -x : x; }\n"
    "static __device__ __forceinline__ float cut_dc_half(unsigned short h)\n"
    "{\n"
    "    const cut_u32 s = (cut_u32)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
    "    if (e == 0) {\n"
    "        const float f = (float)m * 5.9604644775390625e-8f;\n"
    "        return s ? -f : f;\n"
    "    }\n"
    "    if (e == 31)\n"
    "        return __uint_as_float(s | 0x7f800000u | (m << 13));\n"
    "    return __uint_as_float(s | ((e + 112u) << 23) | (m << 13));\n"
    "}\n"
    "template <int K> static __device__ __forceinline__ double cut_dc_get(const void *p, cut_u64 i)\n"
    "{\n"
    "    if (K == 0) return ((const float *)p)[i];\n"
    "    if (K == 1) return ((const double *)p)[i];\n"
    "    if (K == 2) return cut_dc_half(((const unsigned short *)p)[i]);\n"
    "    return __uint_as_float((cut_u32)((const unsigned short *)p)[i] << 16);\n"
    "}\n"
    "extern \"C\" __global__ void cut_dc_diff(const unsigned char *a, const unsigned char *b, cut_u64 bytes,\n"
    "                                       cut_u64 *out)\n"
    "{\n"
    "    const cut_u64 words = (bytes + 3) / 4, stride = (cut_u64)gridDim.x * blockDim.x;\n"
    "    cut_u64 nd = 0, h = 0;\n"
    "    for (cut_u64 j = (cut_u64)blockIdx.x * blockDim.x + threadIdx.x; j < words; j += stride) {\n"
    "        const cut_u32 x = cut_dc_word(a, bytes, j), y = cut_dc_word(b, bytes, j);\n"
    "        nd += x != y;\n"
    "        h += cut_dc_mix(j, y);\n"
    "    }\n"
    "    cut_dc_add(&out[0], nd);\n"
    "    cut_dc_add(&out[2], h);\n"
    "}\n"
    "template <int K> static __device__ __forceinline__ void cut_dc_cmp(const void *got, const void *ref, cut_u64 n,\n"
    "                                                                   double atol, double rtol, int frob,\n"
    "                                                                   cut_u64 *out)\n"
    "{\n"
    "    const cut_u64 stride = (cut_u64)gridDim.x * blockDim.x, first = (cut_u64)blockIdx.x * blockDim.x +\n"
    "                                                                     threadIdx.x;\n"
    "    const cut_u64 bytes = n * (K == 0 ? 4 : K == 1 ? 8 : 2), words = (bytes + 3) / 4;\n"
    "    cut_u64 bad = 0, maxe = 0, h = 0;\n"
    "    double num = 0, den = 0;\n"
    "    for (cut_u64 i = first; i < n; i += stride) {\n"
    "        const double g = cut_dc_get<K>(got, i), r = cut_dc_get<K>(ref, i);\n"
    "        if (frob) {\n"
    "            const double d = cut_dc_finite(g) ? g - r : __longlong_as_double(0x7ff0000000000000ll);\n"
    "            num += d * d;\n"
    "            den += r * r;\n"
    "        } else if (cut_dc_finite(g) && cut_dc_finite(r)) {\n"
    "            const double d = cut_dc_abs(g - r);\n"
    "            maxe = cut_dc_bits(d) > maxe ? cut_dc_bits(d) : maxe;\n"
    "            bad += !(d <= atol + rtol * cut_dc_abs(r));\n"
    "        } else {\n"
    "            bad += !(!cut_dc_finite(r) && (cut_dc_nan(r) ? cut_dc_nan(g) : g == r));\n"
    "        }\n"
    "    }\n"
    "    for (cut_u64 j = first; j < words; j += stride)\n"
    "        h += cut_dc_mix(j, cut_dc_word((const unsigned char *)ref, bytes, j));\n"
    "    cut_dc_add(&out[0], bad);\n"
    "    cut_dc_max(&out[1], maxe);\n"
    "    cut_dc_add(&out[2], h);\n"
    "    cut_dc_addf((double *)&out[3], num);\n"
    "    cut_dc_addf((double *)&out[4], den);\n"
    "}\n"
    "#define CUT_DC_CMP(name, k)                                                                              \\\n"
    "    extern \"C\" __global__ void name(const void *got, const void *ref, cut_u64 n, double atol, double rtol, \\\n"
    "                                    int frob, cut_u64 *out)                                               \\\n"
    "    {                                                                                                    \\\n"
    "        cut_dc_cmp<k>(got, ref, n, atol, rtol, frob, out);                                               \\\n"
    "    }\n"
    "CUT_DC_CMP(cut_dc_cmp_f32, 0)\n"
    "CUT_DC_CMP(cut_dc_cmp_f64, 1)\n"
    "CUT_DC_CMP(cut_dc_cmp_f16, 2)\n"
    "CUT_DC_CMP(cut_dc_cmp_bf16, 3)\n";

struct cut_dc {
    const cut_cu_api *cu;
    CUmodule mod;
    CUfunction diff, cmp[4]; /* f32, f64, f16, bf16 */
    CUdeviceptr out;         /* CUT_DC_OUT_WORDS words */
    int sms;
};

cut_dc *cut_dc_load(const cut_cu_api *cu, CUdevice dev, const char *cache_dir, cut_err *e)
{
    int major = 0, minor = 0, sms = 0;
    if (cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) != CUDA_SUCCESS ||
        cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) != CUDA_SUCCESS ||
        cu->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) != CUDA_SUCCESS) {
        cut_err_set(e, "device checks: cannot read the device's compute capability");
        return NULL;
    }
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    o.sm_major = major;
    o.sm_minor = minor;
    o.cache_dir = cache_dir;
    o.nthreads = 1;
    o.extra_opts = "--fmad=false";
    cut_compiled bin;
    if (cut_compile_one(cut_dc_source, "devcheck.cu", &o, &bin, e) != 0)
        return NULL;
    if (!bin.ok) {
        cut_err_set(e, "device checks: NVRTC could not compile them for sm_%d%d: %.200s", major, minor, bin.log);
        cut_compiled_free(&bin);
        return NULL;
    }
    cut_dc *dc = cut_xcalloc(1, sizeof *dc);
    dc->cu = cu;
    dc->sms = sms > 0 ? sms : 1;
    static const char *const cmp[4] = {CUT_DC_CMP_F32, CUT_DC_CMP_F64, CUT_DC_CMP_F16, CUT_DC_CMP_BF16};
    CUresult rc = cu->cuModuleLoadData(&dc->mod, bin.cubin);
    cut_compiled_free(&bin);
    if (rc == CUDA_SUCCESS)
        rc = cu->cuModuleGetFunction(&dc->diff, dc->mod, CUT_DC_DIFF);
    for (int i = 0; i < 4 && rc == CUDA_SUCCESS; i++)
        rc = cu->cuModuleGetFunction(&dc->cmp[i], dc->mod, cmp[i]);
    if (rc == CUDA_SUCCESS)
        rc = cu->cuMemAlloc(&dc->out, CUT_DC_OUT_WORDS * sizeof(uint64_t));
    if (rc != CUDA_SUCCESS) {
        char d[160];
        cut_cu_describe(rc, d, sizeof d);
        cut_err_set(e, "device checks: loading them: %s", d);
        if (dc->mod)
            cu->cuModuleUnload(dc->mod);
        free(dc);
        return NULL;
    }
    return dc;
}

void cut_dc_free(cut_dc *dc, int context_dead)
{
    if (!dc)
        return;
    if (!context_dead) {
        if (dc->out)
            dc->cu->cuMemFree(dc->out);
        dc->cu->cuModuleUnload(dc->mod);
    }
    free(dc);
}

/* One launch of f over units (words or elements) with args, its out[] back into host. */
static CUresult run(cut_dc *dc, CUfunction f, uint64_t units, void **args, uint64_t host[CUT_DC_OUT_WORDS])
{
    const cut_cu_api *cu = dc->cu;
    const uint64_t want = (units + CUT_DC_THREADS - 1) / CUT_DC_THREADS;
    const unsigned blocks = (unsigned)CUT_MAX((uint64_t)1, CUT_MIN(want, (uint64_t)dc->sms * CUT_DC_BLOCKS_PER_SM));
    CUresult rc = cu->cuMemsetD8(dc->out, 0, CUT_DC_OUT_WORDS * sizeof(uint64_t));
    if (rc == CUDA_SUCCESS)
        rc = cu->cuLaunchKernel(f, blocks, 1, 1, CUT_DC_THREADS, 1, 1, 0, NULL, args, NULL);
    if (rc == CUDA_SUCCESS)
        rc = cu->cuMemcpyDtoH(host, dc->out, CUT_DC_OUT_WORDS * sizeof(uint64_t));
    return rc;
}

int cut_dc_diff(cut_dc *dc, CUdeviceptr a, CUdeviceptr b, size_t bytes, uint64_t *ndiff, uint64_t *hash, CUresult *rc)
{
    uint64_t n = bytes, out[CUT_DC_OUT_WORDS];
    void *args[] = {&a, &b, &n, &dc->out};
    if ((*rc = run(dc, dc->diff, (n + 3) / 4, args, out)) != CUDA_SUCCESS)
        return -1;
    *ndiff = out[CUT_DC_BAD];
    *hash = out[CUT_DC_HASH];
    return 0;
}

int cut_dc_compare(cut_dc *dc, cut_elem dt, cut_check_rule rule, CUdeviceptr got, CUdeviceptr ref, size_t elems,
                   double atol, double rtol, cut_dc_cmp *out, CUresult *rc)
{
    const int k = dt == CUT_EL_F32 ? 0 : dt == CUT_EL_F64 ? 1 : dt == CUT_EL_F16 ? 2 : dt == CUT_EL_BF16 ? 3 : -1;
    if (k < 0 || rule == CUT_CHECK_EXACT)
        return 1;
    uint64_t n = elems, o[CUT_DC_OUT_WORDS];
    int frob = rule == CUT_CHECK_FROBENIUS;
    void *args[] = {&got, &ref, &n, &atol, &rtol, &frob, &dc->out};
    if ((*rc = run(dc, dc->cmp[k], n, args, o)) != CUDA_SUCCESS)
        return -1;
    out->hash = o[CUT_DC_HASH];
    if (frob) {
        double num, den;
        memcpy(&num, &o[CUT_DC_NUM], sizeof num);
        memcpy(&den, &o[CUT_DC_DEN], sizeof den);
        /* as cut_work_compare: relative to the reference's norm, absolute when it is zero, +Inf when not finite */
        out->max_err = isfinite(num) ? (den > 0 ? sqrt(num / den) : sqrt(num)) : INFINITY;
        out->bad = !(out->max_err <= rtol);
    } else {
        memcpy(&out->max_err, &o[CUT_DC_MAXE], sizeof out->max_err);
        out->bad = o[CUT_DC_BAD];
    }
    return 0;
}

uint64_t cut_dc_hash_host(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0;
    for (uint64_t j = 0; j < (n + 3) / 4; j++) {
        uint32_t w = 0;
        for (uint64_t k = 0; k < 4 && j * 4 + k < n; k++)
            w |= (uint32_t)b[j * 4 + k] << (8 * k);
        uint64_t z = (uint64_t)w ^ (j * 0x9E3779B97F4A7C15ull);
        z ^= z >> 30;
        z *= 0xBF58476D1CE4E5B9ull;
        z ^= z >> 27;
        z *= 0x94D049BB133111EBull;
        z ^= z >> 31;
        h += z;
    }
    return h;
}
