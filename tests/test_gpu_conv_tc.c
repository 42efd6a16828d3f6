/* GPU test of the Hopper Conv2D template wgmma_conv (issue 20, item 2): skips with 77 where there is no GPU, and
 * says so where the GPU is not sm_90.
 *
 * On conv shapes with tails (odd H/W, stride 2, 1x1, 3x3 padded, 5x5, CO and M not multiples of the tiles) and
 * ResNet-50 layers at batch 1 and 8, fp16 and bf16 NHWC, with and without the bias+ReLU epilogue: random valid
 * wgmma_conv schedules and hand-picked ones (every LAG, two consumers, the largest tiles, split-K 4 and 16),
 * compiled with NVRTC for sm_90a, all measure OK in the worker (fresh poison, the weights' TMA map encoded by the
 * worker, the dtype's tolerance against the double reference); a planted wrong kernel (wgmma's A scaled by -1) is
 * CUT_ST_WRONG_RESULT. Each shape's line also times an igemm_tc schedule beside them, for the eye only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/compile.h"
#include "cutune/gpu.h"
#include "cutune/measure.h"
#include "cutune/space.h"
#include "gpu_testutil.h"
#include "ops/conv2d/templates.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NRAND = 4, NMAX = 14 };

static cut_gpu_info g_info;

static cut_conv mkc(int n, int h, int w, int co, int ci, int k, int s, int p, cut_dtype dt, cut_conv_epilogue ep)
{
    cut_conv c = {n, h, w, co, ci, k, k, s, p, dt, CUT_NHWC, ep};
    return c;
}

/* Measures the schedules ss[0..n) of c (template tpl each) and a planted wrong copy of the first wgmma_conv one;
 * every other must be OK. */
static void measure(cut_runner *r, const cut_conv *c, const cut_sched *ss, int n, uint64_t seed)
{
    cut_err e = {{0}};
    if (cut_runner_prepare_conv(r, c, seed, &e) != 0)
        fail_msg("prepare_conv: %s", e.msg);
    cut_kernel_src ks[NMAX + 1];
    cut_compiled bins[NMAX + 1];
    cut_candidate cand[NMAX + 1];
    cut_result res[NMAX + 1];
    int plant = -1;
    for (int i = 0; i < n; i++) {
        if (cut_codegen_conv(c, &ss[i], &ks[i], &e) != 0)
            fail_msg("codegen: %s", e.msg);
        if (plant < 0 && ks[i].arch_a)
            plant = i;
    }
    assert_true(plant >= 0);
    ks[n] = ks[plant];
    ks[n].src = strdup(ks[plant].src);
    char *p = strstr(ks[n].src, "p, 1, 1");
    assert_non_null(p);
    memcpy(p, "p,-1, 1", 7); /* imm-scale-a = -1: the sums negated */
    for (int i = 0; i <= n; i++) {
        cut_compile_opts o;
        cut_compile_opts_default(&o);
        o.sm_major = g_info.sm_major;
        o.sm_minor = g_info.sm_minor;
        o.arch_suffix_a = ks[i].arch_a;
        if (cut_compile_one(ks[i].src, "conv_tc.cu", &o, &bins[i], &e) != 0 || !bins[i].ok)
            fail_msg("candidate %d does not compile: %s %.400s", i, e.msg, bins[i].log);
        cand[i] = (cut_candidate){.ks = &ks[i], .bin = &bins[i]};
    }
    if (cut_runner_measure(r, cand, n + 1, res, &e) != 0)
        fail_msg("measure: %s", e.msg);
    char name[256];
    cut_conv_name(c, name, sizeof name);
    for (int i = 0; i <= n; i++) {
        char desc[256];
        cut_sched_describe(i < n ? &ss[i] : &ss[plant], desc, sizeof desc);
        printf("  %s %-13s %8.4f ms err %.3g  %s%s\n", name, cut_status_name(res[i].status), res[i].median_ms,
               res[i].max_abs_err, desc, i == n ? "  (planted wrong kernel)" : "");
        if (i == n)
            assert_int_equal(res[i].status, CUT_ST_WRONG_RESULT);
        else if (res[i].status != CUT_ST_OK)
            fail_msg("%s: %s %s", desc, cut_status_name(res[i].status), res[i].error);
    }
    for (int i = 0; i <= n; i++) {
        cut_compiled_free(&bins[i]);
        cut_kernel_src_free(&ks[i]);
    }
}

static void test_wgmma_conv(void **state)
{
    (void)state;
    if (g_info.sm_major != 9 || g_info.sm_minor != 0) {
        printf("  skipped: wgmma_conv needs sm_90a; GPU 0 is sm_%d%d\n", g_info.sm_major, g_info.sm_minor);
        skip();
    }
    const cut_conv shapes[] = {
        mkc(1, 9, 7, 40, 16, 3, 1, 1, CUT_DT_FP16, CUT_EPI_NONE),
        mkc(2, 17, 15, 72, 24, 3, 2, 1, CUT_DT_BF16, CUT_EPI_BIAS),
        mkc(3, 13, 11, 96, 32, 1, 1, 0, CUT_DT_FP16, CUT_EPI_BIAS_RELU),
        mkc(1, 19, 21, 48, 8, 5, 1, 2, CUT_DT_BF16, CUT_EPI_NONE),
        mkc(1, 56, 56, 64, 64, 3, 1, 1, CUT_DT_FP16, CUT_EPI_BIAS_RELU),
        mkc(8, 28, 28, 128, 128, 3, 1, 1, CUT_DT_BF16, CUT_EPI_NONE),
        mkc(8, 56, 56, 256, 64, 1, 1, 0, CUT_DT_FP16, CUT_EPI_NONE),
        mkc(1, 14, 14, 512, 256, 3, 2, 1, CUT_DT_FP16, CUT_EPI_BIAS),
        mkc(1, 7, 7, 512, 512, 3, 1, 1, CUT_DT_BF16, CUT_EPI_BIAS_RELU), /* 72 k tiles, 4 blocks: split-K's case */
    };
    /* bn mi nc st waitd splitk: LAG 0 (st 2 waitd 1) to 5, two consumers, the largest tiles, split-K where the
     * shape has the k tiles for it (the check drops the others) */
    static const int hand[][CUT_WC_NKNOBS] = {{64, 1, 1, 2, 1, 1},  {128, 1, 2, 4, 1, 1}, {128, 2, 2, 4, 0, 1},
                                              {256, 1, 2, 3, 1, 1}, {64, 2, 1, 6, 0, 1},  {64, 1, 1, 4, 1, 4},
                                              {128, 1, 1, 4, 1, 16}};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    const int wc = cut_template_find("wgmma_conv"), tc = cut_template_find("igemm_tc");
    cut_err e = {{0}};
    cut_timing t;
    cut_timing_default(&t);
    t.min_total_ms = 2.0;
    cut_runner *r = cut_runner_gpu_new(0, getenv("CUTUNE_BIN"), &t, &e);
    if (!r)
        fail_msg("cut_runner_gpu_new: %s", e.msg);
    cut_rng rng;
    cut_rng_seed(&rng, 2020);
    for (size_t si = 0; si < CUT_ARRAY_LEN(shapes); si++) {
        const cut_conv *c = &shapes[si];
        cut_sched ss[NMAX];
        int n = 0;
        for (size_t h = 0; h < CUT_ARRAY_LEN(hand); h++) {
            cut_sched s = {.tpl = wc};
            memcpy(s.k, hand[h], sizeof hand[h]);
            if (cut_sched_check(c, &s, &d, NULL) == 0)
                ss[n++] = s;
        }
        for (int i = 0; i < NRAND; i++)
            if (cut_sched_sample_valid(c, &d, wc, &rng, &ss[n], 1000) == 0)
                n++;
        if (cut_sched_sample_valid(c, &d, tc, &rng, &ss[n], 1000) == 0)
            n++;
        measure(r, c, ss, n, 900 + si);
    }
    cut_runner_free(r);
}

int main(void)
{
    int code = tu_gpu_start(&g_info);
    if (code >= 0)
        return code;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wgmma_conv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
