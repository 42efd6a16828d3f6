/* GPU test of the measurement worker through cut_runner_gpu_new (skips with 77 where there is no GPU).
 *
 * Kernels compiled with NVRTC for the device's sm_XX, each taking (const float* in, const float* w, float* out) on
 * a tiny conv: a correct naive direct conv (OK), one writing 4 TiB out of bounds (FAULT, worker restarts), an
 * infinite loop (TIMEOUT, worker killed and restarted), one writing half the outputs (WRONG_RESULT, caught by the
 * NaN poison), the correct conv with 64 KiB of dynamic shared memory (needs the opt-in attribute; OK), a launch with
 * 2048 threads per block (LAUNCH_ERROR), and a candidate without a cubin (COMPILE_ERROR). A correct candidate after
 * every failure must still measure OK. Then the cuDNN baseline on the same workload, and cuDNN's baseline of fused
 * epilogues (bias, bias_relu) in several dtypes and layouts: each checked against the reference with its epilogue,
 * named with how it ran (fused or the unfused sequence). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/gpu.h"
#include "gpu_testutil.h"
#include "cutune/measure.h"
#include "measure/worker_proto.h"

#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cut_conv CONV = {1, 8, 8, 4, 3, 3, 3, 1, 1};

static const char *SRC =
    "#define N 1\n#define H 8\n#define W 8\n#define CO 4\n#define CI 3\n#define KH 3\n#define KW 3\n"
    "#define S 1\n#define P 1\n#define OH 8\n#define OW 8\n"
    "__device__ float conv_at(const float* in, const float* w, int idx) {\n"
    "  int ow = idx % OW, oh = (idx / OW) % OH, co = (idx / (OW * OH)) % CO, n = idx / (OW * OH * CO);\n"
    "  float acc = 0.f;\n"
    "  for (int ci = 0; ci < CI; ci++)\n"
    "    for (int kh = 0; kh < KH; kh++)\n"
    "      for (int kw = 0; kw < KW; kw++) {\n"
    "        int ih = oh * S + kh - P, iw = ow * S + kw - P;\n"
    "        if (ih >= 0 && ih < H && iw >= 0 && iw < W)\n"
    "          acc += in[((n * CI + ci) * H + ih) * W + iw] * w[((co * CI + ci) * KH + kh) * KW + kw];\n"
    "      }\n"
    "  return acc;\n"
    "}\n"
    "extern \"C\" __global__ void good(const float* in, const float* w, float* out) {\n"
    "  int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (idx < N * CO * OH * OW) out[idx] = conv_at(in, w, idx);\n"
    "}\n"
    "extern \"C\" __global__ void oob(const float* in, const float* w, float* out) {\n"
    "  int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  volatile float* far = out + ((size_t)1 << 40);\n"
    "  far[idx] = conv_at(in, w, idx % (N * CO * OH * OW));\n"
    "}\n"
    "extern \"C\" __global__ void hang(const float* in, const float* w, float* out) {\n"
    "  int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  while (((volatile const float*)in)[0] < 1e30f) { }\n" /* inputs are in [-1, 1): forever */
    "  if (idx < N * CO * OH * OW) out[idx] = conv_at(in, w, idx);\n"
    "}\n"
    "extern \"C\" __global__ void half(const float* in, const float* w, float* out) {\n"
    "  int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (idx < N * CO * OH * OW && idx % 2 == 0) out[idx] = conv_at(in, w, idx);\n"
    "}\n"
    "extern \"C\" __global__ void bigsmem(const float* in, const float* w, float* out) {\n"
    "  extern __shared__ float stage[];\n" /* 64 KiB: only with the opt-in attribute */
    "  int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  stage[threadIdx.x + 16000] = (idx < N * CO * OH * OW) ? conv_at(in, w, idx) : 0.f;\n"
    "  __syncthreads();\n"
    "  if (idx < N * CO * OH * OW) out[idx] = stage[threadIdx.x + 16000];\n"
    "}\n";

static cut_gpu_info g_info;
static char *g_cubin;
static size_t g_cubin_size;

static int compile_all(int major, int minor)
{
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, SRC, "test_gpu_worker.cu", 0, NULL, NULL) != NVRTC_SUCCESS)
        return -1;
    char arch[64];
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
    const char *opts[] = {arch, "--std=c++17"};
    nvrtcResult rc = nvrtcCompileProgram(prog, 2, opts);
    size_t log_size = 0;
    nvrtcGetProgramLogSize(prog, &log_size);
    if (rc != NVRTC_SUCCESS) {
        char *log = malloc(log_size + 1);
        nvrtcGetProgramLog(prog, log);
        log[log_size] = '\0';
        fprintf(stderr, "NVRTC failed for %s: %s\n%s\n", arch, nvrtcGetErrorString(rc), log);
        free(log);
        nvrtcDestroyProgram(&prog);
        return -1;
    }
    nvrtcGetCUBINSize(prog, &g_cubin_size);
    g_cubin = malloc(g_cubin_size);
    nvrtcGetCUBIN(prog, g_cubin);
    nvrtcDestroyProgram(&prog);
    return 0;
}

typedef struct cand_spec {
    const char *entry;
    unsigned block, smem;
    int has_cubin;
    cut_status want;
} cand_spec;

static void test_worker_statuses(void **state)
{
    (void)state;
    const char *bin = getenv("CUTUNE_BIN");
    cut_err e = {{0}};
    cut_timing t;
    cut_timing_default(&t);
    t.timeout_s = 5.0;
    cut_runner *r = cut_runner_gpu_new(0, bin, &t, &e);
    if (!r)
        fail_msg("cut_runner_gpu_new: %s", e.msg);
    const cut_measure_env *env = r->env(r);
    assert_string_equal(env->backend, "cuda");
    assert_string_equal(env->gpu_uuid, g_info.uuid);
    assert_string_equal(env->gpu_name, g_info.name);
    assert_true(env->driver_version > 0);
    if (cut_runner_prepare_conv(r, &CONV, 1234, &e) != 0)
        fail_msg("prepare: %s", e.msg);

    const cand_spec specs[] = {
        {"good", 128, 0, 1, CUT_ST_OK},
        {"oob", 128, 0, 1, CUT_ST_FAULT},
        {"good", 128, 0, 1, CUT_ST_OK},
        {"hang", 128, 0, 1, CUT_ST_TIMEOUT},
        {"good", 64, 0, 1, CUT_ST_OK},
        {"half", 128, 0, 1, CUT_ST_WRONG_RESULT},
        {"bigsmem", 128, 64 * 1024, 1, CUT_ST_OK},
        {"good", 2048, 0, 1, CUT_ST_LAUNCH_ERROR},
        {"good", 256, 0, 0, CUT_ST_COMPILE_ERROR},
        {"good", 32, 0, 1, CUT_ST_OK},
    };
    enum { NC = CUT_ARRAY_LEN(specs) };
    cut_kernel_src ks[NC];
    cut_compiled bins[NC];
    cut_candidate cands[NC];
    const unsigned total = (unsigned)cut_conv_out_elems(&CONV);
    for (int i = 0; i < NC; i++) {
        memset(&ks[i], 0, sizeof ks[i]);
        memset(&bins[i], 0, sizeof bins[i]);
        snprintf(ks[i].entry, sizeof ks[i].entry, "%s", specs[i].entry);
        ks[i].block[0] = specs[i].block;
        ks[i].block[1] = ks[i].block[2] = 1;
        ks[i].grid[0] = CUT_CEIL_DIV(total, specs[i].block);
        ks[i].grid[1] = ks[i].grid[2] = 1;
        ks[i].smem_dynamic = specs[i].smem;
        bins[i].ok = specs[i].has_cubin;
        bins[i].cubin = specs[i].has_cubin ? g_cubin : NULL;
        bins[i].cubin_size = specs[i].has_cubin ? g_cubin_size : 0;
        bins[i].log = "error: planted";
        cands[i].ks = &ks[i];
        cands[i].bin = &bins[i];
    }
    cut_result res[NC];
    if (cut_runner_measure(r, cands, NC, res, &e) != 0)
        fail_msg("measure: %s", e.msg);
    int bad = 0;
    for (int i = 0; i < NC; i++) {
        printf("  %-8s block %4u smem %6u -> %-13s %8.4f ms x%-3d maxerr %.2g %s\n", specs[i].entry, specs[i].block,
               specs[i].smem, cut_status_name(res[i].status), res[i].median_ms, res[i].repeats, res[i].max_abs_err,
               res[i].error);
        if (res[i].status != specs[i].want) {
            printf("  ^ expected %s\n", cut_status_name(specs[i].want));
            bad++;
        }
        if (res[i].status == CUT_ST_OK) {
            assert_true(res[i].median_ms > 0 && res[i].min_ms <= res[i].median_ms &&
                        res[i].median_ms <= res[i].max_ms);
            assert_true(res[i].repeats >= t.min_repeats && res[i].repeats <= t.max_repeats);
        }
    }
    assert_int_equal(bad, 0);
    assert_non_null(strstr(res[1].error, "CUDA_ERROR_"));
    assert_string_equal(res[3].error, "timeout after 5 s");
    assert_non_null(strstr(res[5].error, "outputs wrong"));
    /* One worker at the start, one after the fault, one after the hang. */
    assert_int_equal(cut_runner_gpu_worker_starts(r), 3);

    /* cuDNN baseline on the same workload and harness. */
    cut_result cr;
    char algo[64];
    if (cut_runner_gpu_cudnn(r, &cr, algo, sizeof algo, &e) != 0) {
        if (strstr(e.msg, "cuDNN unavailable"))
            printf("  cuDNN baseline skipped: %s\n", e.msg);
        else
            fail_msg("cuDNN baseline: %s", e.msg);
    } else {
        printf("  cuDNN %-22s -> %-13s %8.4f ms x%-3d maxerr %.2g %s\n", algo, cut_status_name(cr.status), cr.median_ms,
               cr.repeats, cr.max_abs_err, cr.error);
        assert_int_equal(cr.status, CUT_ST_OK);
        assert_true(strlen(algo) > 0 && strcmp(algo, "UNKNOWN") != 0);
        assert_true(cr.median_ms > 0);
        assert_true(cr.warm_ms < 0); /* not asked for */
    }

    /* With the policy's warm, the time back to back (a CUDA graph of launches) comes besides the cold one, for a
     * kernel and for cuDNN (its legacy algorithms and its v9 engines). */
    r->timing.warm = 1;
    cut_result wr;
    if (cut_runner_measure(r, &cands[2], 1, &wr, &e) != 0)
        fail_msg("measure (warm): %s", e.msg);
    printf("  good: cold %.4f ms, warm %.4f ms\n", wr.median_ms, wr.warm_ms);
    assert_int_equal(wr.status, CUT_ST_OK);
    assert_true(wr.median_ms > 0 && wr.warm_ms > 0);
    if (cut_runner_gpu_cudnn(r, &cr, algo, sizeof algo, &e) == 0) {
        printf("  cuDNN %s: cold %.4f ms, warm %.4f ms\n", algo, cr.median_ms, cr.warm_ms);
        assert_int_equal(cr.status, CUT_ST_OK);
        assert_true(cr.median_ms > 0 && cr.warm_ms > 0);
    }
    cut_runner_free(r);
}

/* cuDNN's conv + bias (+ ReLU) in several dtypes and layouts: the fastest candidate passes the check against the
 * reference with the epilogue, and its name says whether it ran fused; a cudnn_tf32 column of fp32 data likewise. */
static void test_cudnn_epilogue(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_timing t;
    cut_timing_default(&t);
    cut_runner *r = cut_runner_gpu_new(0, getenv("CUTUNE_BIN"), &t, &e);
    if (!r)
        fail_msg("cut_runner_gpu_new: %s", e.msg);
    const cut_conv cases[] = {
        {2, 14, 14, 64, 32, 3, 3, 1, 1, CUT_DT_FP16, CUT_NHWC, CUT_EPI_BIAS_RELU},
        {2, 14, 14, 64, 32, 3, 3, 1, 1, CUT_DT_FP16, CUT_NHWC, CUT_EPI_BIAS},
        {1, 17, 17, 48, 24, 3, 3, 2, 1, CUT_DT_BF16, CUT_NCHW, CUT_EPI_BIAS_RELU},
        {1, 16, 16, 32, 16, 1, 1, 1, 0, CUT_DT_TF32, CUT_NHWC, CUT_EPI_BIAS},
        {1, 16, 16, 32, 16, 3, 3, 1, 1, CUT_DT_FP32, CUT_NCHW, CUT_EPI_BIAS_RELU},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(cases); i++) {
        char name[256];
        cut_conv_name(&cases[i], name, sizeof name);
        if (cut_runner_prepare_conv(r, &cases[i], 99, &e) != 0)
            fail_msg("prepare %s: %s", name, e.msg);
        for (int tf32 = 0; tf32 < 1 + (cases[i].dtype == CUT_DT_FP32); tf32++) {
            cut_result cr;
            char algo[64];
            if (cut_runner_gpu_cudnn_math(r, tf32, &cr, algo, sizeof algo, &e) != 0) {
                if (strstr(e.msg, "cuDNN unavailable")) {
                    printf("  cuDNN epilogue baselines skipped: %s\n", e.msg);
                    cut_runner_free(r);
                    return;
                }
                fail_msg("cuDNN baseline of %s: %s", name, e.msg);
            }
            printf("  %s%s: cuDNN %-44s -> %-13s %8.4f ms maxerr %.2g %s\n", name, tf32 ? " (TF32)" : "", algo,
                   cut_status_name(cr.status), cr.median_ms, cr.max_abs_err, cr.error);
            assert_int_equal(cr.status, CUT_ST_OK);
            assert_true(cr.median_ms > 0);
            assert_int_not_equal(cut_cudnn_algo_fused(algo), -1); /* fused or unfused, said */
        }
    }
    cut_runner_free(r);
}

int main(void)
{
    int code = tu_gpu_start(&g_info);
    if (code >= 0)
        return code;
    if (compile_all(g_info.sm_major, g_info.sm_minor) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worker_statuses),
        cmocka_unit_test(test_cudnn_epilogue),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(g_cubin);
    return rc;
}
