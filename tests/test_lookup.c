/* cutune run-time lookup (cutune/lookup.h): the recorded best of a workload on a GPU and backend, never a time of
 * another GPU, backend or a failed trial; a clear refusal for a shape without records on this GPU; the split-K
 * kernel's workspace as arguments; the looked-up source compiled by NVRTC and run under the emulator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/gemm_record.h"
#include "cutune/gemm_space.h"
#include "cutune/lookup.h"
#include "cutune/record.h"
#include "conv_records.h"
#include "emu_check.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H200 "NVIDIA H200"
#define H200_UUID "GPU-11111111-2222-3333-4444-555555555555"
#define H100 "NVIDIA H100 80GB HBM3"

static const cut_conv k_conv = {1, 12, 12, 32, 64, 3, 3, 1, 1};

static void test_conv_best_of_this_gpu(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("lookup_conv");
    cut_err e = {{0}};
    const cut_sched a = tr_conv_sched(&k_conv, "direct", NULL, 1), b = tr_conv_sched(&k_conv, "igemm", NULL, 7),
                    fast = tr_conv_sched(&k_conv, "winograd", NULL, 3);
    tr_add_conv(dir, 1, &k_conv, &a, 0.50, CUT_ST_OK, "cuda", H200, H200_UUID);
    tr_add_conv(dir, 1, &k_conv, &b, 0.30, CUT_ST_OK, "cuda", H200, H200_UUID);          /* the best here */
    tr_add_conv(dir, 1, &k_conv, &fast, 0.01, CUT_ST_WRONG_RESULT, "cuda", H200, H200_UUID); /* failed */
    tr_add_conv(dir, 1, &k_conv, &fast, 0.10, CUT_ST_OK, "cuda", H100, "GPU-9");          /* another GPU */
    tr_add_conv(dir, 1, &k_conv, &fast, 0.05, CUT_ST_OK, "emu", "", "");                 /* the emulator */
    tr_add_conv(dir, 1, &k_conv, &a, 0.40, CUT_ST_OK, "cuda", H200, H200_UUID);

    cut_lookup_query q = {.records_dir = dir, .gpu = H200};
    cut_lookup_kernel k;
    assert_int_equal(cut_lookup_conv(&q, &k_conv, NULL, &k, &e), CUT_LOOKUP_FOUND);
    assert_true(k.median_ms == 0.30);
    assert_int_equal(k.line, 2);
    assert_int_equal(k.candidates, 3);
    char want[256];
    cut_sched_describe(&b, want, sizeof want);
    assert_string_equal(k.sched, want);
    /* the source is what cutune generated and measured for that schedule */
    cut_kernel_src gen;
    assert_int_equal(cut_codegen_conv_named(&k_conv, &b, "cut_conv2d", &gen, &e), 0);
    if (!k.ws_partial_floats)
        assert_string_equal(k.ks.src, gen.src);
    assert_string_equal(k.ks.entry, "cut_conv2d");
    assert_memory_equal(k.ks.grid, gen.grid, sizeof gen.grid);
    assert_memory_equal(k.ks.block, gen.block, sizeof gen.block);
    assert_int_equal(k.ks.smem_dynamic, gen.smem_dynamic);
    cut_kernel_src_free(&gen);
    cut_lookup_kernel_free(&k);

    /* by UUID, and with an entry name of the caller's */
    q.gpu = H200_UUID;
    assert_int_equal(cut_lookup_conv(&q, &k_conv, "my_conv", &k, &e), CUT_LOOKUP_FOUND);
    assert_true(k.median_ms == 0.30);
    assert_string_equal(k.ks.entry, "my_conv");
    assert_non_null(strstr(k.ks.src, "my_conv("));
    cut_lookup_kernel_free(&k);
    /* another GPU has its own best; the emulator's records are the emulator's */
    q.gpu = H100;
    assert_int_equal(cut_lookup_conv(&q, &k_conv, NULL, &k, &e), CUT_LOOKUP_FOUND);
    assert_true(k.median_ms == 0.10);
    assert_int_equal(k.candidates, 1);
    cut_lookup_kernel_free(&k);
    q.backend = "emu";
    q.gpu = "";
    assert_int_equal(cut_lookup_conv(&q, &k_conv, NULL, &k, &e), CUT_LOOKUP_FOUND);
    assert_true(k.median_ms == 0.05);
    cut_lookup_kernel_free(&k);
    q.backend = NULL; /* a GPU must be named for the GPU's records */
    assert_int_equal(cut_lookup_conv(&q, &k_conv, NULL, &k, &e), -1);
    assert_non_null(strstr(e.msg, "no GPU given"));
    cut_lookup_kernel_free(&k);

    /* the chosen kernel computes the convolution (NVRTC + the emulator, against the double reference) */
    const hand h = {k_conv, b};
    assert_int_equal(run_emulated(&h, 1, 2, NULL), 0);
    free(dir);
}

static void test_conv_refusals(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("lookup_none");
    cut_err e = {{0}};
    const cut_sched a = tr_conv_sched(&k_conv, "direct", NULL, 1);
    tr_add_conv(dir, 1, &k_conv, &a, 0.2, CUT_ST_OK, "cuda", H100, "GPU-9");
    tr_add_conv(dir, 1, &k_conv, &a, 0.1, CUT_ST_TIMEOUT, "cuda", H200, H200_UUID);
    cut_lookup_query q = {.records_dir = dir, .gpu = H200};
    cut_lookup_kernel k;
    /* recorded only on another GPU (and a failure here): no record for this shape on this GPU */
    assert_int_equal(cut_lookup_conv(&q, &k_conv, NULL, &k, &e), CUT_LOOKUP_NONE);
    assert_non_null(strstr(e.msg, "no record for conv2d_N_1_H_12_W_12_CO_32_CI_64_KH_3_KW_3_strides_1_padding_1 on "
                                  "NVIDIA H200 (cuda)"));
    assert_non_null(strstr(e.msg, "1 record(s) of it on other GPUs: " H100));
    assert_non_null(strstr(e.msg, "1 failed"));
    assert_null(k.ks.src);
    /* an unknown shape */
    const cut_conv other = {1, 12, 12, 32, 64, 3, 3, 2, 1};
    assert_int_equal(cut_lookup_conv(&q, &other, NULL, &k, &e), CUT_LOOKUP_NONE);
    assert_non_null(strstr(e.msg, "no record for conv2d_N_1_H_12_W_12_CO_32_CI_64_KH_3_KW_3_strides_2_padding_1"));
    assert_non_null(strstr(e.msg, "no record of it at all"));
    /* an impossible shape, a missing folder, a malformed log: errors, not "no record" */
    const cut_conv bad = {1, 2, 2, 4, 4, 5, 5, 1, 0};
    assert_int_equal(cut_lookup_conv(&q, &bad, NULL, &k, &e), -1);
    cut_lookup_query gone = {.records_dir = "/nonexistent/cutune", .gpu = H200};
    assert_int_equal(cut_lookup_conv(&gone, &k_conv, NULL, &k, &e), -1);
    char name[512], path[2048];
    cut_conv_case_name(&k_conv, 1, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    FILE *f = fopen(path, "a");
    fputs("{not json}\n", f);
    fclose(f);
    assert_int_equal(cut_lookup_conv(&q, &k_conv, NULL, &k, &e), -1);
    assert_non_null(strstr(e.msg, "lookup"));
    free(dir);
}

static void test_conv_split_k_workspace(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("lookup_split");
    cut_err e = {{0}};
    const cut_sched s = tr_conv_sched(&k_conv, "igemm", "splitk", 1);
    tr_add_conv(dir, 4, &k_conv, &s, 0.02, CUT_ST_OK, "cuda", H200, H200_UUID);
    cut_lookup_query q = {.records_dir = dir, .gpu = H200};
    cut_lookup_kernel k;
    assert_int_equal(cut_lookup_conv(&q, &k_conv, NULL, &k, &e), CUT_LOOKUP_FOUND);
    /* partials of every slice, one counter per output tile */
    assert_true(k.ws_partial_floats >= 2u * 32 * 144 && k.ws_partial_floats % (32 * 144) == 0);
    assert_int_equal(k.ws_counters, (size_t)k.ks.grid[0] * k.ks.grid[1]);
    assert_true(k.ks.grid[2] > 1);
    assert_true(strncmp(k.ks.src, "#define CUT_WS_PARAM 1", 22) == 0);
    /* it compiles, and the workspace really is two more parameters */
    cut_compile_opts co;
    cut_compile_opts_default(&co);
    cut_compiled out;
    assert_int_equal(cut_compile_one(k.ks.src, "lookup.cu", &co, &out, &e), 0);
    if (!out.ok)
        fail_msg("NVRTC: %s", out.log);
    cut_compiled_free(&out);
    assert_non_null(strstr(k.ks.src, "float *cut_ws, unsigned int *cut_cnt"));
    cut_lookup_kernel_free(&k);
    free(dir);
}

static void test_gemm(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("lookup_gemm");
    cut_err e = {{0}};
    const cut_gemm g = {256, 192, 128, CUT_GEMM_NN, CUT_DT_FP16};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_sched s[2];
    for (int i = 0; i < 2; i++) {
        cut_rng rng;
        cut_rng_seed(&rng, 11 + (uint64_t)i);
        assert_int_equal(cut_gemm_sched_sample_valid(&g, &d, i ? CUT_GEMM_TPL_WGMMA : CUT_GEMM_TPL_MMA, &rng, &s[i],
                                                     5000, &e),
                         0);
    }
    char name[128], path[2048];
    cut_gemm_name(&g, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    /* the 4th: the fastest of this GPU, but of a batch-2 GEMM planted in this workload's log: never the answer */
    const double ms[4] = {0.020, 0.011, 0.005, 0.001};
    const char *gpus[4] = {H200, H200, H100, H200};
    for (int i = 0; i < 4; i++) {
        cut_gemm_record r;
        memset(&r, 0, sizeof r);
        r.trial = i;
        r.gemm = g;
        if (i == 3)
            cut_gemm_set_extras(&r.gemm, 2, 1.0, 0.0);
        r.sched = s[i % 2];
        r.status = CUT_ST_OK;
        r.median_ms = r.min_ms = r.max_ms = ms[i];
        r.gflops = cut_gemm_gflops(&g, ms[i]);
        r.rel_err = -1;
        r.repeats = 5;
        r.regs = r.spills = -1;
        snprintf(r.env.backend, sizeof r.env.backend, "cuda");
        snprintf(r.env.gpu_name, sizeof r.env.gpu_name, "%s", gpus[i]);
        snprintf(r.ts, sizeof r.ts, "2026-12-07T00:00:00Z");
        cut_buf b;
        cut_buf_init(&b);
        cut_gemm_record_to_json(&r, &b);
        FILE *f = fopen(path, "a");
        fwrite(b.data, 1, b.len, f);
        fclose(f);
        cut_buf_free(&b);
    }
    cut_lookup_query q = {.records_dir = dir, .gpu = H200};
    cut_lookup_kernel k;
    assert_int_equal(cut_lookup_gemm(&q, &g, "my_gemm", &k, &e), CUT_LOOKUP_FOUND);
    assert_true(k.median_ms == 0.011);
    assert_int_equal(k.line, 2);
    assert_int_equal(k.ks.ntma, 2); /* the wgmma kernel reads A and B through TMA maps */
    assert_string_equal(k.ks.entry, "my_gemm");
    assert_int_equal(k.candidates, 2);
    cut_lookup_kernel_free(&k);
    const cut_gemm nt = {256, 192, 128, CUT_GEMM_NT, CUT_DT_FP16};
    assert_int_equal(cut_lookup_gemm(&q, &nt, NULL, &k, &e), CUT_LOOKUP_NONE);
    assert_non_null(strstr(e.msg, "no record for gemm_nt_fp16_M_256_N_192_K_128 on NVIDIA H200 (cuda)"));
    free(dir);
}

int main(void)
{
    (void)compile_hands; /* emu_check.h's helpers this test does not need */
    (void)assert_fits;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_best_of_this_gpu),
        cmocka_unit_test(test_conv_refusals),
        cmocka_unit_test(test_conv_split_k_workspace),
        cmocka_unit_test(test_gemm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
