/* Tensor-core implicit GEMM "igemm_tc" (fp16, bf16, tf32; NHWC and NCHW): applicability, refusals with their
 * sentences, sampling and mutation, the launch configuration, hand-picked tail shapes under the host emulation
 * (odd H/W, channels not a multiple of 8, stride 2, 1x1 and 5x5, the gather and every cp.async width) against the
 * double reference with the dtype's tolerance through the emulation runner, a planted bug caught, and random
 * schedules compiled with NVRTC for sm_90 without spills. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/codegen.h"
#include "cutune/compile.h"
#include "cutune/emu.h"
#include "cutune/space.h"
#include "ops/conv2d/templates.h"
#include "emu_check.h"
#include "nvrtc_testutil.h"
#include "testutil.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tpl_tc(void)
{
    const int t = cut_template_find("igemm_tc");
    assert_true(t >= 0);
    return t;
}

static cut_conv mkc(int n, int h, int w, int co, int ci, int k, int s, int p, cut_dtype dt, cut_conv_layout l)
{
    cut_conv c = {n, h, w, co, ci, k, k, s, p, dt, l};
    return c;
}

/* bm bn bk wm wn stages swizzle cpa cpb, no split-K */
static cut_sched mks(int bm, int bn, int bk, int wm, int wn, int stages, int swz, int cpa, int cpb)
{
    cut_sched s;
    memset(&s, 0, sizeof s);
    s.tpl = tpl_tc();
    const int v[CUT_T_NKNOBS] = {bm, bn, bk, wm, wn, stages, swz, cpa, cpb, 1};
    memcpy(s.k, v, sizeof v);
    return s;
}

static void expect_refusal(const cut_conv *c, cut_sched s, const char *words)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_err e = {{0}};
    char desc[256];
    cut_sched_describe(&s, desc, sizeof desc);
    if (cut_sched_check(c, &s, &d, &e) == 0)
        fail_msg("accepted: %s (expected a refusal about '%s')", desc, words);
    printf("  refused %s: %s\n", desc, e.msg);
    if (!strstr(e.msg, words))
        fail_msg("refusal '%s' does not mention '%s'", e.msg, words);
}

static void test_applies_and_refusals(void **state)
{
    (void)state;
    const cut_template *t = cut_template_get(tpl_tc());
    cut_conv c = mkc(1, 56, 56, 64, 64, 3, 1, 1, CUT_DT_FP32, CUT_NCHW);
    assert_false(t->applies(&c));
    /* and the CUDA-core templates leave the other dtypes and NHWC to it (and fp32 to neither tensor-core one) */
    for (int i = 0; i < cut_template_count(); i++)
        assert_int_equal(cut_template_get(i)->applies(&c), strcmp(cut_template_get(i)->name, "igemm_tc") != 0 &&
                                                               strcmp(cut_template_get(i)->name, "wgmma_conv") != 0);
    c.dtype = CUT_DT_FP16; /* NCHW: igemm_tc's alone (wgmma_conv reads NHWC) */
    for (int i = 0; i < cut_template_count(); i++)
        assert_int_equal(cut_template_get(i)->applies(&c), strcmp(cut_template_get(i)->name, "igemm_tc") == 0);
    c = mkc(32, 56, 56, 256, 64, 3, 1, 1, CUT_DT_FP16, CUT_NHWC); /* GEMM 100352 x 256 x 576 */
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_err e = {{0}};
    const cut_sched ok = mks(128, 64, 32, 64, 32, 3, 1, 16, 16);
    if (cut_sched_check(&c, &ok, &d, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(cut_igemm_tc_max_cpa(&c), 16);
    expect_refusal(&c, mks(256, 256, 64, 64, 64, 4, 1, 16, 16), "shared memory");
    expect_refusal(&c, mks(256, 256, 32, 32, 32, 2, 1, 16, 16), "64 warps");
    expect_refusal(&c, mks(128, 64, 48, 64, 32, 3, 1, 16, 16), "not one of its allowed values");
    expect_refusal(&c, mks(32, 64, 32, 64, 32, 3, 1, 16, 16), "exceeds the block tile");
    cut_conv nchw = c;
    nchw.layout = CUT_NCHW; /* no cp.async of the input in NCHW: consecutive k are not consecutive addresses */
    expect_refusal(&nchw, ok, "needs NHWC");
    expect_refusal(&nchw, mks(128, 64, 32, 64, 64, 2, 1, 0, 16), "registers"); /* 128 acc + the gather */
    const cut_sched gather = mks(128, 64, 32, 64, 32, 3, 1, 0, 16);
    assert_int_equal(cut_sched_check(&nchw, &gather, &d, &e), 0);
    cut_conv stem = mkc(1, 224, 224, 64, 3, 7, 2, 3, CUT_DT_BF16, CUT_NHWC); /* CI 3, K 147: neither aligned */
    assert_int_equal(cut_igemm_tc_max_cpa(&stem), 0);
    assert_int_equal(cut_igemm_tc_max_cpb(&stem), 0);
    expect_refusal(&stem, mks(128, 64, 32, 64, 32, 3, 1, 0, 4), "rows of K=147");
    cut_conv tiny = mkc(1, 4, 4, 8, 8, 1, 1, 0, CUT_DT_FP16, CUT_NHWC);
    expect_refusal(&tiny, ok, "far exceeds");
    cut_conv tf = c;
    tf.dtype = CUT_DT_TF32;
    expect_refusal(&tf, mks(128, 64, 64, 64, 32, 3, 1, 16, 16), "16 or 32 for tf32");
    const cut_conv fp32 = mkc(1, 56, 56, 64, 64, 3, 1, 1, CUT_DT_FP32, CUT_NHWC);
    cut_err why = {{0}};
    assert_int_equal(cut_template_get(tpl_tc())->check(&fp32, &ok, &d, &why), -1);
    assert_non_null(strstr(why.msg, "fp32"));
    d.sm_major = 7, d.sm_minor = 5;
    assert_int_equal(cut_sched_check(&c, &ok, &d, &e), -1);
    assert_non_null(strstr(e.msg, "sm_80"));
}

static void test_sampled_valid_and_mutations(void **state)
{
    (void)state;
    const cut_dtype dts[] = {CUT_DT_FP16, CUT_DT_BF16, CUT_DT_TF32};
    const cut_conv shapes[] = {mkc(1, 224, 224, 64, 3, 7, 2, 3, 0, 0), mkc(1, 56, 56, 64, 64, 3, 1, 1, 0, 0),
                               mkc(1, 7, 7, 2048, 512, 1, 1, 0, 0, 0), mkc(32, 28, 28, 128, 128, 3, 1, 1, 0, 0),
                               mkc(1, 9, 11, 12, 5, 5, 2, 2, 0, 0)};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 3);
    const cut_template *t = cut_template_get(tpl_tc());
    int mutated = 0, mutated_valid = 0, gathers = 0;
    for (size_t di = 0; di < CUT_ARRAY_LEN(dts); di++)
        for (int l = 0; l < 2; l++)
            for (size_t si = 0; si < CUT_ARRAY_LEN(shapes); si++) {
                cut_conv c = shapes[si];
                c.dtype = dts[di], c.layout = (cut_conv_layout)l;
                for (int i = 0; i < 40; i++) {
                    cut_sched s;
                    if (cut_sched_sample_valid(&c, &d, tpl_tc(), &r, &s, 2000) != 0)
                        fail_msg("no valid schedule for shape %zu dtype %s layout %d", si, cut_dtype_name(c.dtype),
                                 l);
                    cut_igemm_tc_geom g;
                    cut_igemm_tc_geometry(&c, &s, &g);
                    assert_true(g.threads >= 32 && g.threads <= 512 && g.smem_bytes <= 227 * 1024);
                    assert_true((long)g.grid[0] * s.k[CUT_T_BN] >= c.co);
                    assert_true((long)g.grid[1] * s.k[CUT_T_BM] >= g.gm);
                    gathers += s.k[CUT_T_CPA] == 0;
                    for (int j = 0; j < 3; j++) {
                        t->mutate(&c, &d, &r, &s);
                        mutated++;
                        cut_err e;
                        if (cut_sched_check(&c, &s, &d, &e) != 0)
                            break;
                        mutated_valid++;
                    }
                }
            }
    printf("  %d of %d mutations valid; %d gathered inputs\n", mutated_valid, mutated, gathers);
    assert_true(mutated_valid * 2 > mutated);
    assert_true(gathers > 0);
}

static void test_codegen_launch_and_banner(void **state)
{
    (void)state;
    const cut_conv c = mkc(2, 57, 57, 96, 64, 3, 2, 1, CUT_DT_FP16, CUT_NHWC); /* M = 2*29*29 = 1682 */
    const cut_sched s = mks(128, 64, 64, 64, 32, 3, 1, 16, 16);
    cut_kernel_src ks;
    cut_err e = {{0}};
    if (cut_codegen_conv(&c, &s, &ks, &e) != 0)
        fail_msg("%s", e.msg);
    assert_string_equal(ks.entry, "cut_conv2d");
    assert_int_equal(ks.grid[0], 2);  /* ceil(96 / 64) */
    assert_int_equal(ks.grid[1], 14); /* ceil(1682 / 128) */
    assert_int_equal(ks.block[0], 4 * 32);
    assert_int_equal(ks.smem_dynamic, 3 * (128 + 64) * 64 * 2);
    assert_int_equal(ks.uses_inline_ptx, 0); /* its PTX has an emulation under CUT_EMU */
    assert_non_null(strstr(ks.src, "_dtype_fp16_layout_NHWC (fp16, NHWC, weights CO x KH x KW x CI)"));
    assert_non_null(strstr(ks.src, "igemm_tc bm=128 bn=64 bk=64 wm=64 wn=32 stages=3 swizzle=1 cpa=16 cpb=16"));
    assert_non_null(strstr(ks.src, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
    assert_non_null(strstr(ks.src, "cvt.rn.f16.f32"));
    cut_kernel_src_free(&ks);
}

/* Tail shapes of every dtype and layout: the gather (CI 3, NCHW), cp.async of 4, 8 and 16 bytes, stride 2, 1x1,
 * 5x5, odd H and W, batch 2, CO not a multiple of the tile, K over several pipeline stages. */
static const hand hands[] = {
    {{1, 9, 11, 12, 3, 3, 3, 1, 1, CUT_DT_FP16, CUT_NHWC}, {0, {32, 32, 32, 32, 32, 2, 1, 0, 0, 1}}},
    {{2, 7, 9, 20, 16, 3, 3, 2, 1, CUT_DT_FP16, CUT_NHWC}, {0, {64, 32, 32, 32, 32, 3, 1, 16, 16, 1}}},
    {{1, 8, 8, 24, 12, 1, 1, 1, 0, CUT_DT_BF16, CUT_NHWC}, {0, {32, 32, 32, 32, 32, 2, 0, 8, 8, 1}}},
    {{1, 11, 11, 16, 6, 5, 5, 2, 2, CUT_DT_TF32, CUT_NHWC}, {0, {32, 32, 16, 32, 32, 3, 1, 8, 8, 1}}},
    {{1, 6, 6, 40, 64, 3, 3, 1, 1, CUT_DT_FP16, CUT_NHWC}, {0, {32, 64, 32, 32, 32, 4, 1, 16, 16, 1}}},
    {{1, 9, 11, 12, 3, 3, 3, 1, 1, CUT_DT_FP16, CUT_NCHW}, {0, {32, 32, 32, 32, 32, 2, 1, 0, 0, 1}}},
    {{2, 7, 9, 20, 16, 5, 5, 2, 2, CUT_DT_BF16, CUT_NCHW}, {0, {64, 32, 64, 32, 32, 2, 1, 0, 16, 1}}},
    {{1, 10, 10, 40, 8, 1, 1, 2, 0, CUT_DT_TF32, CUT_NCHW}, {0, {32, 64, 16, 32, 32, 2, 0, 0, 16, 1}}},
    {{1, 7, 7, 36, 10, 3, 3, 1, 1, CUT_DT_TF32, CUT_NHWC}, {0, {32, 32, 16, 32, 32, 3, 1, 4, 4, 1}}},
};

/* Runs n (<= 16) hand-picked igemm_tc schedules under emulation, each `repeats` times, printing each result; none
 * may fail. */
static void run_tc_hands(const hand *src, int n, int repeats)
{
    hand hs[16];
    cut_result res[16];
    assert_true(n <= 16);
    memcpy(hs, src, (size_t)n * sizeof *hs);
    for (int i = 0; i < n; i++)
        hs[i].s.tpl = tpl_tc();
    const int failures = run_emulated(hs, n, repeats, res);
    for (int i = 0; i < n; i++) {
        char name[256], desc[256];
        cut_conv_name(&hs[i].c, name, sizeof name);
        cut_sched_describe(&hs[i].s, desc, sizeof desc);
        printf("  %s %s: %s, max error %.3g\n", name, desc, cut_status_name(res[i].status), res[i].max_abs_err);
    }
    assert_int_equal(failures, 0);
}

static void test_emulated_tails(void **state)
{
    (void)state;
    run_tc_hands(hands, (int)CUT_ARRAY_LEN(hands), 1);
}

/* Split-K on batch 1 with a long K (7x7, CI 512, 3x3: 72 k tiles in 8 slices) and shorter ones in every dtype
 * and layout, and the 4-byte cp.async gather of tf32 NCHW (with and without split-K, stride 2 and padding); each
 * run twice, so that a launch finding the counters left dirty by the last one would fail. */
static const hand split_hands[] = {
    {{1, 7, 7, 40, 512, 3, 3, 1, 1, CUT_DT_FP16, CUT_NHWC}, {0, {64, 32, 64, 32, 32, 3, 1, 16, 16, 8}}},
    {{1, 7, 7, 24, 64, 3, 3, 1, 1, CUT_DT_BF16, CUT_NCHW}, {0, {64, 32, 32, 32, 32, 2, 1, 0, 16, 4}}},
    {{1, 5, 5, 72, 256, 1, 1, 1, 0, CUT_DT_BF16, CUT_NHWC}, {0, {32, 64, 32, 32, 32, 4, 1, 16, 8, 2}}},
    {{1, 7, 7, 20, 36, 3, 3, 1, 1, CUT_DT_TF32, CUT_NHWC}, {0, {64, 32, 16, 32, 32, 3, 1, 16, 16, 4}}},
    {{1, 6, 6, 16, 20, 3, 3, 2, 1, CUT_DT_TF32, CUT_NCHW}, {0, {32, 32, 16, 32, 32, 2, 0, 4, 4, 4}}},
    {{1, 9, 7, 12, 5, 3, 3, 1, 1, CUT_DT_TF32, CUT_NCHW}, {0, {32, 32, 16, 32, 32, 2, 1, 4, 0, 1}}},
};

static void test_emulated_split_k(void **state)
{
    (void)state;
    run_tc_hands(split_hands, (int)CUT_ARRAY_LEN(split_hands), 2);
    cut_igemm_tc_geom g;
    cut_igemm_tc_geometry(&split_hands[0].c, &split_hands[0].s, &g);
    assert_int_equal(g.ktiles, 72);
    assert_int_equal(g.grid[2], 8);
    assert_int_equal(g.ws_bytes, 4L * 8 * 1 * 2 * 64 * 32); /* 8 slices of 1 x 2 tiles */
}

/* The split-K refusals: slices of fewer than two k tiles, an empty slice; a record without the knob means one
 * slice. */
static void test_split_k_space(void **state)
{
    (void)state;
    const cut_conv c = mkc(1, 7, 7, 512, 512, 3, 1, 1, CUT_DT_FP16, CUT_NHWC); /* K 4608: 72 tiles of 64 */
    cut_sched s = mks(64, 64, 64, 32, 32, 3, 1, 16, 16);
    s.k[CUT_T_SPLITK] = 8;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_err e = {{0}};
    if (cut_sched_check(&c, &s, &d, &e) != 0)
        fail_msg("%s", e.msg);
    cut_conv shortk = c;
    shortk.ci = 64; /* 9 tiles */
    expect_refusal(&shortk, s, "two per slice");
    cut_conv k21 = mkc(1, 7, 7, 20, 36, 3, 1, 1, CUT_DT_TF32, CUT_NHWC); /* 21 tiles of 16: 8 slices of 3 */
    cut_sched t = mks(64, 32, 16, 32, 32, 3, 1, 16, 16);
    t.k[CUT_T_SPLITK] = 8;
    expect_refusal(&k21, t, "without k tiles");
    t.k[CUT_T_SPLITK] = 3;
    expect_refusal(&k21, t, "not one of its allowed values");
    cJSON *o = cJSON_Parse("{\"tpl\":\"igemm_tc\",\"bm\":64,\"bn\":64,\"bk\":64,\"wm\":32,\"wn\":32,"
                           "\"stages\":3,\"swizzle\":1,\"cpa\":16,\"cpb\":16}");
    cut_sched old;
    assert_int_equal(cut_sched_from_cjson(o, &old, &e), 0);
    assert_int_equal(old.k[CUT_T_SPLITK], 1);
    cJSON_Delete(o);
    /* and the sampler proposes split-K on this batch-1 shape */
    cut_rng r;
    cut_rng_seed(&r, 5);
    int split = 0;
    for (int i = 0; i < 40; i++) {
        assert_int_equal(cut_sched_sample_valid(&c, &d, tpl_tc(), &r, &s, 2000), 0);
        split += s.k[CUT_T_SPLITK] > 1;
    }
    assert_true(split > 0 && split < 40);
}

/* The fused epilogue (bias, bias and ReLU) in every dtype and layout, with and without split-K (applied once,
 * after the slices' sum), CO odd (scalar stores, the bias guard). */
static const hand epi_hands[] = {
    {{1, 7, 9, 20, 16, 3, 3, 1, 1, CUT_DT_FP16, CUT_NHWC, CUT_EPI_BIAS_RELU}, {0, {64, 32, 32, 32, 32, 2, 1, 16, 16, 1}}},
    {{1, 5, 5, 24, 64, 3, 3, 1, 1, CUT_DT_BF16, CUT_NCHW, CUT_EPI_BIAS}, {0, {32, 32, 32, 32, 32, 3, 1, 0, 16, 4}}},
    {{1, 6, 6, 12, 20, 3, 3, 2, 1, CUT_DT_TF32, CUT_NCHW, CUT_EPI_BIAS_RELU}, {0, {32, 32, 16, 32, 32, 2, 0, 4, 4, 2}}},
    {{2, 5, 7, 17, 32, 1, 1, 1, 0, CUT_DT_TF32, CUT_NHWC, CUT_EPI_BIAS_RELU}, {0, {32, 32, 16, 32, 32, 2, 1, 16, 16, 1}}},
    {{1, 5, 5, 40, 256, 3, 3, 1, 1, CUT_DT_FP16, CUT_NHWC, CUT_EPI_BIAS}, {0, {32, 64, 64, 32, 32, 3, 1, 16, 16, 8}}},
};

static void test_emulated_epilogue(void **state)
{
    (void)state;
    run_tc_hands(epi_hands, (int)CUT_ARRAY_LEN(epi_hands), 2);
}

/* The epilogue as a workload property: the name's _epi_ part round-trips, the work carries the bias as a fourth
 * buffer whose values the reference adds (and ReLU clamps), the op descriptor keeps it, the tolerance widens by
 * one rounding, the CUDA-core templates leave it to igemm_tc, and the kernel takes the bias after the output. */
static void test_epilogue_workload(void **state)
{
    (void)state;
    cut_conv c = mkc(1, 5, 5, 6, 4, 3, 1, 1, CUT_DT_BF16, CUT_NHWC);
    c.epilogue = CUT_EPI_BIAS_RELU;
    char name[256];
    cut_conv_case_name(&c, 3, name, sizeof name);
    assert_string_equal(name, "case3_conv2d_N_1_H_5_W_5_CO_6_CI_4_KH_3_KW_3_strides_1_padding_1_dtype_bf16_layout_NHWC"
                              "_epi_bias_relu");
    cut_conv back;
    int idx;
    cut_err e = {{0}};
    assert_int_equal(cut_conv_parse_case_name(name, &idx, &back, &e), 0);
    assert_true(cut_conv_equal(&c, &back));
    c.epilogue = CUT_EPI_BIAS;
    cut_conv_case_name(&c, 1, name, sizeof name);
    assert_non_null(strstr(name, "_layout_NHWC_epi_bias"));
    assert_int_equal(cut_conv_parse_case_name(name, &idx, &back, &e), 0);
    assert_int_equal(back.epilogue, CUT_EPI_BIAS);
    assert_int_equal(cut_conv_parse_case_name("case1_conv2d_N_1_H_5_W_5_CO_6_CI_4_KH_3_KW_3_strides_1_padding_1_epi_x",
                                              &idx, &back, &e), -1);
    cut_conv_epilogue x;
    assert_int_equal(cut_conv_epilogue_parse("BIAS_RELU", &x, &e), 0);
    assert_int_equal(x, CUT_EPI_BIAS_RELU);
    assert_int_equal(cut_conv_epilogue_parse("relu", &x, &e), -1);
    assert_non_null(strstr(e.msg, "bias_relu"));

    c.epilogue = CUT_EPI_BIAS_RELU;
    cut_work w;
    assert_int_equal(cut_conv_work(&c, 9, &w, &e), 0);
    assert_int_equal(w.nbufs, 4);
    assert_string_equal(w.bufs[3].name, "bias");
    assert_int_equal(w.bufs[3].elems, 6);
    assert_false(w.bufs[3].is_output);
    assert_true(w.bufs[2].is_output);
    cut_conv op;
    assert_int_equal(cut_conv_of_work_op(&w.op, &op, &e), 0);
    assert_true(cut_conv_equal(&c, &op));
    /* ReLU: no negative reference output, and some exactly zero */
    float *ref = malloc(cut_conv_out_elems(&c) * sizeof(float));
    cut_elem_to_floats(w.bufs[2].dtype, w.bufs[2].data[0], cut_conv_out_elems(&c), ref);
    int zeros = 0;
    for (size_t i = 0; i < cut_conv_out_elems(&c); i++) {
        assert_true(ref[i] >= 0.0f);
        zeros += ref[i] == 0.0f;
    }
    assert_true(zeros > 0);
    free(ref);
    cut_work_free(&w);
    double a0, r0, a1, r1;
    cut_conv plain = c;
    plain.epilogue = CUT_EPI_NONE;
    cut_conv_tolerance(&plain, &a0, &r0);
    cut_conv_tolerance(&c, &a1, &r1);
    assert_true(a1 == a0 && r1 > r0);
    for (int i = 0; i < cut_template_count(); i++)
        assert_int_equal(cut_template_get(i)->applies(&c), strcmp(cut_template_get(i)->name, "igemm_tc") == 0);
    cut_conv fp32 = c;
    fp32.dtype = CUT_DT_FP32, fp32.layout = CUT_NCHW;
    assert_false(cut_conv_is_default(&fp32));
    cut_kernel_src ks;
    const cut_sched s = mks(32, 32, 32, 32, 32, 2, 1, 8, 8);
    if (cut_codegen_conv(&c, &s, &ks, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(ks.extra_bufs, 1); /* (in, w, out, bias) */
    assert_non_null(strstr(ks.src, "#define EPI 2"));
    assert_non_null(strstr(ks.src, "_epi_bias_relu"));
    cut_kernel_src_free(&ks);
}

/* The value of the feature named name in f. */
static float feature(const float *f, const char *name)
{
    for (int i = 0; i < CUT_FEAT_LEN; i++)
        if (!strcmp(cut_features_name(i), name))
            return f[i];
    fail_msg("no feature named %s", name);
    return 0.0f;
}

/* The cost model sees dtype, layout, epilogue, split-K, waves over the SMs, shared memory and copies per thread. */
static void test_features(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_conv c = mkc(1, 7, 7, 512, 512, 3, 1, 1, CUT_DT_FP16, CUT_NHWC);
    cut_sched s = mks(64, 64, 64, 32, 32, 3, 1, 16, 16);
    float f1[CUT_FEAT_LEN], f8[CUT_FEAT_LEN], ft[CUT_FEAT_LEN];
    assert_int_equal(cut_features_conv(&c, &s, &d, -1, f1, CUT_FEAT_LEN), CUT_FEAT_LEN);
    s.k[CUT_T_SPLITK] = 8;
    assert_int_equal(cut_features_conv(&c, &s, &d, -1, f8, CUT_FEAT_LEN), CUT_FEAT_LEN);
    cut_conv t = c;
    t.dtype = CUT_DT_TF32, t.layout = CUT_NCHW, t.epilogue = CUT_EPI_BIAS_RELU;
    cut_sched st = mks(64, 64, 32, 32, 32, 3, 1, 4, 16);
    assert_int_equal(cut_features_conv(&t, &st, &d, -1, ft, CUT_FEAT_LEN), CUT_FEAT_LEN);
    assert_true(feature(f1, "onehot_igemm_tc") == 1.0f);
    assert_true(feature(f1, "input_elem_bytes") == 2.0f && feature(ft, "input_elem_bytes") == 4.0f);
    assert_true(feature(f1, "layout_nhwc") == 1.0f && feature(ft, "layout_nhwc") == 0.0f);
    assert_true(feature(ft, "dtype_tf32") == 1.0f && feature(ft, "epilogue") == 2.0f);
    assert_true(feature(f1, "log2_splitk") == 0.0f && feature(f8, "log2_splitk") == 3.0f);
    /* 1 x 8 tiles fill 8 of 132 SMs; 8 slices 64 */
    assert_true(feature(f8, "waves") > 7.5f * feature(f1, "waves"));
    assert_true(feature(f8, "log2_ktiles_per_block") < feature(f1, "log2_ktiles_per_block"));
    assert_true(feature(f1, "smem_kib") > 48.0f);
    assert_true(feature(f1, "copies_per_thread_per_ktile") > 0.0f);
    assert_true(feature(f1, "gathered_per_thread_per_ktile") == 0.0f);
}

/* Random valid schedules of each dtype x layout on small shapes, emulated. */
static void test_emulated_random(void **state)
{
    (void)state;
    const cut_conv shapes[] = {mkc(1, 9, 9, 24, 8, 3, 1, 1, 0, 0), mkc(2, 6, 7, 40, 12, 1, 2, 0, 0, 0),
                               mkc(1, 8, 8, 20, 16, 5, 1, 2, 0, 0)};
    const cut_dtype dts[] = {CUT_DT_FP16, CUT_DT_BF16, CUT_DT_TF32};
    const int per = tu_quick() ? 1 : 2;
    hand hs[3 * 2 * 2];
    int n = 0;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 17);
    for (size_t di = 0; di < CUT_ARRAY_LEN(dts); di++)
        for (int l = 0; l < 2; l++)
            for (int i = 0; i < per; i++) {
                hs[n].c = shapes[(di + (size_t)l + (size_t)i) % CUT_ARRAY_LEN(shapes)];
                hs[n].c.dtype = dts[di], hs[n].c.layout = (cut_conv_layout)l;
                assert_int_equal(cut_sched_sample_valid(&hs[n].c, &d, tpl_tc(), &r, &hs[n].s, 2000), 0);
                n++;
            }
    assert_int_equal(run_emulated(hs, n, 1, NULL), 0);
}

/* Runs c with s's kernel, whose text `from` (which must occur) is replaced by `to`, under emulation: the check must
 * report a wrong result. */
static void expect_plant_caught(const cut_conv *c, const cut_sched *s, const char *from, const char *to,
                                const char *dir)
{
    cut_kernel_src ks;
    cut_err e = {{0}};
    assert_int_equal(cut_codegen_conv(c, s, &ks, &e), 0);
    assert_int_equal(tu_plant(&ks.src, from, to), 0);
    cut_timing t;
    cut_timing_default(&t);
    t.warmup = 0, t.min_repeats = t.max_repeats = 1, t.min_total_ms = 0;
    cut_runner *r = cut_runner_emu_new(dir, &t, &e);
    assert_non_null(r);
    assert_int_equal(cut_runner_prepare_conv(r, c, 3, &e), 0);
    cut_candidate cand = {.ks = &ks, .bin = NULL};
    cut_result res;
    assert_int_equal(cut_runner_measure(r, &cand, 1, &res, &e), 0);
    printf("  planted '%s': %s (%s)\n", to, cut_status_name(res.status), res.error);
    assert_int_equal(res.status, CUT_ST_WRONG_RESULT);
    cut_runner_free(r);
    cut_kernel_src_free(&ks);
}

/* The emulated check catches a wrong im2col decode (kh and kw swapped in NHWC), a dropped zero fill, a row table
 * whose odd rows repeat the even ones (in range: a plant reading out of bounds would crash the emulation), and a
 * split-K reduction that drops the first slice, and an epilogue without its ReLU or with channel 0's bias
 * everywhere. */
static void test_planted_bug_caught(void **state)
{
    (void)state;
    const cut_conv c = mkc(1, 7, 9, 16, 8, 3, 1, 1, CUT_DT_FP16, CUT_NHWC);
    const cut_sched s = mks(32, 32, 32, 32, 32, 2, 1, 16, 16);
    const char *plants[][2] = {
        {"const int ci = k % CI, t = k / CI, kh = t / KW, kw = t - kh * KW;",
         "const int ci = k % CI, t = k / CI, kw = t / KW, kh = t - kw * KW;"},
        {"x < 0 ? 0 : CPA);", "CPA);"},
        {"const int m = m0 + r, b", "const int m = m0 + (r & ~1), b"},
    };
    char *dir = tu_tmpdir("igemm_tc_plant");
    for (size_t i = 0; i < CUT_ARRAY_LEN(plants); i++)
        expect_plant_caught(&c, &s, plants[i][0], plants[i][1], dir);
    const cut_conv longk = mkc(1, 5, 5, 16, 64, 3, 1, 1, CUT_DT_BF16, CUT_NHWC); /* 18 k tiles in 4 slices */
    cut_sched split = mks(32, 32, 32, 32, 32, 2, 1, 16, 16);
    split.k[CUT_T_SPLITK] = 4;
    expect_plant_caught(&longk, &split, "for (int q = 0; q < SPLITK; q++)", "for (int q = 1; q < SPLITK; q++)", dir);
    cut_conv epi = c;
    epi.epilogue = CUT_EPI_BIAS_RELU;
    expect_plant_caught(&epi, &s, "v = fmaxf(v, 0.0f);", "", dir);
    expect_plant_caught(&epi, &s, "bias_at(bias, n)", "bias_at(bias, 0)", dir);
    free(dir);
}

/* count random valid schedules of dtype dt over ResNet-50 layers (both layouts), compiled in one batch for sm_90:
 * each must compile with no spills, <= 255 registers, and carry the tensor-core and cp.async instructions. */
static void compile_random(cut_dtype dt, int count, uint64_t seed)
{
    const cut_conv shapes[] = {mkc(1, 224, 224, 64, 3, 7, 2, 3, 0, 0), mkc(1, 56, 56, 64, 64, 3, 1, 1, 0, 0),
                               mkc(1, 56, 56, 256, 64, 1, 1, 0, 0, 0), mkc(32, 28, 28, 128, 128, 3, 1, 1, 0, 0),
                               mkc(1, 7, 7, 2048, 512, 1, 1, 0, 0, 0), mkc(1, 14, 14, 512, 256, 3, 2, 1, 0, 0),
                               mkc(1, 7, 7, 512, 512, 3, 1, 1, 0, 0)};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, seed);
    cut_err e = {{0}};
    cut_kernel_src *ks = calloc((size_t)count, sizeof *ks);
    int *est = calloc((size_t)count, sizeof *est);
    int splits = 0;
    for (int i = 0; i < count; i++) {
        cut_conv c = shapes[(i / 2) % (int)CUT_ARRAY_LEN(shapes)];
        c.dtype = dt, c.layout = (cut_conv_layout)(i % 2);
        cut_sched s;
        assert_int_equal(cut_sched_sample_valid(&c, &d, tpl_tc(), &r, &s, 2000), 0);
        if (cut_codegen_conv(&c, &s, &ks[i], &e) != 0)
            fail_msg("%s", e.msg);
        cut_igemm_tc_geom g;
        cut_igemm_tc_geometry(&c, &s, &g);
        est[i] = g.regs_est;
        splits += g.split > 1;
        assert_non_null(strstr(ks[i].src, dt == CUT_DT_TF32 ? "m16n8k8.row.col.f32.tf32" : "m16n8k16.row.col.f32"));
        assert_non_null(strstr(ks[i].src, "cp.async"));
    }
    char label[64];
    snprintf(label, sizeof label, "%s (%d with split-K)", cut_dtype_name(dt), splits);
    tu_compile_all(label, ks, est, count);
    for (int i = 0; i < count; i++)
        cut_kernel_src_free(&ks[i]);
    free(ks), free(est);
}

static int compile_count(void)
{
    const char *n = getenv("CUTUNE_TC_COMPILES"); /* per dtype; more for a thorough local run */
    return n && atoi(n) > 0 ? atoi(n) : tu_quick() ? 4 : 12;
}

static void test_nvrtc_random_fp16(void **state)
{
    (void)state;
    compile_random(CUT_DT_FP16, compile_count(), 51);
}

static void test_nvrtc_random_bf16(void **state)
{
    (void)state;
    compile_random(CUT_DT_BF16, compile_count(), 52);
}

static void test_nvrtc_random_tf32(void **state)
{
    (void)state;
    compile_random(CUT_DT_TF32, compile_count(), 53);
}

/* The largest tiles the space allows compile without spills and within the register file. */
static void test_large_tiles_fit(void **state)
{
    (void)state;
    hand hs[] = {
        {{32, 28, 28, 256, 128, 3, 3, 1, 1, CUT_DT_FP16, CUT_NHWC}, {0, {256, 128, 64, 64, 64, 4, 1, 16, 16, 1}}},
        {{32, 28, 28, 256, 128, 3, 3, 1, 1, CUT_DT_BF16, CUT_NCHW}, {0, {128, 128, 32, 64, 32, 3, 1, 0, 16, 1}}},
        {{32, 28, 28, 256, 128, 3, 3, 1, 1, CUT_DT_TF32, CUT_NHWC}, {0, {128, 128, 32, 64, 32, 3, 1, 16, 16, 1}}},
        {{32, 28, 28, 256, 128, 3, 3, 1, 1, CUT_DT_FP16, CUT_NHWC}, {0, {256, 128, 64, 64, 64, 4, 1, 16, 16, 2}}},
        {{1, 7, 7, 512, 512, 3, 3, 1, 1, CUT_DT_TF32, CUT_NCHW}, {0, {64, 128, 32, 32, 64, 4, 1, 4, 16, 16}}},
    };
    const int n = (int)CUT_ARRAY_LEN(hs);
    for (int i = 0; i < n; i++)
        hs[i].s.tpl = tpl_tc();
    cut_kernel_src ks[CUT_ARRAY_LEN(hs)];
    cut_compiled bins[CUT_ARRAY_LEN(hs)];
    compile_hands(hs, n, ks, bins);
    for (int i = 0; i < n; i++) {
        cut_igemm_tc_geom g;
        cut_igemm_tc_geometry(&hs[i].c, &hs[i].s, &g);
        assert_fits(&hs[i], &bins[i], g.threads, g.regs_est, -1);
        cut_compiled_free(&bins[i]);
        cut_kernel_src_free(&ks[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_applies_and_refusals),
        cmocka_unit_test(test_sampled_valid_and_mutations),
        cmocka_unit_test(test_codegen_launch_and_banner),
        cmocka_unit_test(test_emulated_tails),
        cmocka_unit_test(test_emulated_random),
        cmocka_unit_test(test_emulated_split_k),
        cmocka_unit_test(test_split_k_space),
        cmocka_unit_test(test_emulated_epilogue),
        cmocka_unit_test(test_epilogue_workload),
        cmocka_unit_test(test_features),
        cmocka_unit_test(test_planted_bug_caught),
        cmocka_unit_test(test_large_tiles_fit),
        cmocka_unit_test(test_nvrtc_random_fp16),
        cmocka_unit_test(test_nvrtc_random_bf16),
        cmocka_unit_test(test_nvrtc_random_tf32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
