/* The Hopper Conv2D template "wgmma_conv" (NHWC fp16/bf16: weights by TMA, input by a cp.async producer warp
 * group, wgmma consumers): applicability and refusals with their sentences, sampling and mutation, the launch
 * configuration and the weights' TMA map (and where the runner passes it), tail shapes under the host emulation with
 * the PTX semantics of wgmma, mbarriers and TMA (odd H/W, stride 2, 1x1, 3x3 with padding, 5x5, bias and ReLU,
 * split-K) against the double reference, planted bugs caught, and random schedules compiled with NVRTC for sm_90a without
 * spills or serialized wgmmas. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/codegen.h"
#include "cutune/compile.h"
#include "cutune/emu.h"
#include "cutune/measure.h"
#include "cutune/space.h"
#include "ops/conv2d/templates.h"
#include "emu_check.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tpl_wc(void)
{
    const int t = cut_template_find("wgmma_conv");
    assert_true(t >= 0);
    return t;
}

static cut_conv mkc(int n, int h, int w, int co, int ci, int k, int s, int p, cut_dtype dt)
{
    cut_conv c = {n, h, w, co, ci, k, k, s, p, dt, CUT_NHWC, CUT_EPI_NONE};
    return c;
}

/* bn mi nc st waitd splitk */
static cut_sched mksk(int bn, int mi, int nc, int st, int waitd, int splitk)
{
    cut_sched s;
    memset(&s, 0, sizeof s);
    s.tpl = tpl_wc();
    const int v[CUT_WC_NKNOBS] = {bn, mi, nc, st, waitd, splitk};
    memcpy(s.k, v, sizeof v);
    return s;
}

static cut_sched mks(int bn, int mi, int nc, int st, int waitd) { return mksk(bn, mi, nc, st, waitd, 1); }

static void expect_refusal(const cut_conv *c, cut_sched s, const char *words)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_err e = {{0}};
    if (cut_tpl_wgmma_conv.check(c, &s, &d, &e) == 0)
        fail_msg("accepted (expected a refusal about '%s')", words);
    printf("  refused: %s\n", e.msg);
    if (!strstr(e.msg, words))
        fail_msg("the refusal '%s' does not say '%s'", e.msg, words);
}

/* It takes NHWC fp16/bf16 with CI a multiple of 8; everything else is refused with a sentence naming igemm_tc. */
static void test_applies_and_refusals(void **state)
{
    (void)state;
    const cut_conv ok = mkc(1, 9, 9, 32, 16, 3, 1, 1, CUT_DT_FP16);
    assert_true(cut_tpl_wgmma_conv.applies(&ok));
    cut_conv bf = ok;
    bf.dtype = CUT_DT_BF16;
    assert_true(cut_tpl_wgmma_conv.applies(&bf));
    cut_conv x = ok;
    x.dtype = CUT_DT_TF32;
    assert_false(cut_tpl_wgmma_conv.applies(&x));
    expect_refusal(&x, mks(64, 1, 1, 2, 0), "fp16 and bf16 only");
    x = ok, x.layout = CUT_NCHW;
    assert_false(cut_tpl_wgmma_conv.applies(&x));
    expect_refusal(&x, mks(64, 1, 1, 2, 0), "NHWC only");
    x = ok, x.ci = 12;
    assert_false(cut_tpl_wgmma_conv.applies(&x));
    expect_refusal(&x, mks(64, 1, 1, 2, 0), "multiple of 8");
    cut_devlimits a100;
    cut_devlimits_sm90(&a100);
    a100.sm_major = 8;
    cut_err e = {{0}};
    assert_int_equal(cut_tpl_wgmma_conv.check(&ok, &(cut_sched){0}, &a100, &e), -1);
    assert_non_null(strstr(e.msg, "sm_90a"));
    expect_refusal(&ok, mks(96, 1, 1, 2, 0), "off its list");
    expect_refusal(&ok, mks(256, 2, 1, 2, 0), "accumulators");
    expect_refusal(&ok, mks(128, 2, 2, 6, 0), "shared memory");
    expect_refusal(&ok, mks(256, 1, 1, 2, 0), "leaves most of it empty"); /* CO 32 */
    expect_refusal(&ok, mksk(64, 1, 1, 2, 0, 4), "at least two a slice"); /* K = 144: 3 k tiles */
    const cut_conv longk = mkc(1, 5, 5, 16, 128, 3, 1, 1, CUT_DT_FP16); /* 18 k tiles */
    expect_refusal(&longk, mksk(64, 1, 1, 2, 0, 8), "empty");              /* 8 slices of 3 */
    cut_err e0 = {{0}};
    cut_devlimits d0;
    cut_devlimits_sm90(&d0);
    assert_int_equal(cut_tpl_wgmma_conv.check(&longk, &(cut_sched){.k = {64, 1, 1, 2, 0, 4}}, &d0, &e0), 0);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    assert_int_equal(cut_sched_check(&ok, &(cut_sched){.tpl = tpl_wc(), .k = {64, 1, 1, 4, 1, 1}}, &d, &e), 0);
}

/* Sampled schedules are valid (some of them) and mutations stay on the knobs' lists. */
static void test_sampled_valid_and_mutations(void **state)
{
    (void)state;
    const cut_conv c = mkc(1, 56, 56, 256, 64, 3, 1, 1, CUT_DT_FP16);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 5);
    cut_err e = {{0}};
    for (int i = 0; i < 50; i++) {
        cut_sched s;
        assert_int_equal(cut_sched_sample_valid(&c, &d, tpl_wc(), &r, &s, 500), 0);
        assert_int_equal(cut_sched_check(&c, &s, &d, &e), 0);
        const cut_template *t = cut_template_get(tpl_wc());
        for (int m = 0; m < 5; m++) {
            t->mutate(&c, &d, &r, &s);
            const int bn = s.k[CUT_WC_BN], st = s.k[CUT_WC_ST];
            assert_true(bn == 64 || bn == 128 || bn == 192 || bn == 256);
            assert_true(st >= 2 && st <= 6);
            assert_true(s.k[CUT_WC_WAITD] == 0 || s.k[CUT_WC_WAITD] == 1);
            const int sk = s.k[CUT_WC_SPLITK];
            assert_true(sk == 1 || sk == 2 || sk == 4 || sk == 8 || sk == 16);
        }
    }
}

/* The launch: (NC + 1) warp groups, one block per M x CO tile, the ring in dynamic shared memory, sm_90a; the
 * weights' map (buffer 1: CO rows of K, boxes of BN x 64) is the call's second argument. */
static void test_codegen_launch_and_map(void **state)
{
    (void)state;
    cut_conv c = mkc(2, 9, 7, 40, 24, 3, 2, 1, CUT_DT_BF16); /* OH 5, OW 4: M 40, K 216 */
    c.epilogue = CUT_EPI_BIAS;
    const cut_sched s = mks(64, 1, 1, 3, 1);
    cut_kernel_src ks;
    cut_err e = {{0}};
    assert_int_equal(cut_codegen_conv(&c, &s, &ks, &e), 0);
    assert_int_equal(ks.block[0], 256);
    assert_int_equal(ks.grid[0], 1); /* one 64-row tile of M, one 64-column tile of CO */
    assert_int_equal(ks.grid[2], 1);
    assert_int_equal(ks.arch_a, 1);
    assert_int_equal(ks.extra_bufs, 1);
    assert_int_equal(ks.smem_dynamic, 1024 + 3 * (64 + 64) * 128 + 7 * 8); /* full, empty and the reduction's */
    assert_int_equal(ks.ntma, 1);
    assert_int_equal(ks.tma[0].operand, 1);
    assert_true(ks.tma[0].dims[0] == 216 && ks.tma[0].dims[1] == 40 && ks.tma[0].row_bytes == 432);
    assert_true(ks.tma[0].box[0] == 64 && ks.tma[0].box[1] == 64 && ks.tma[0].swizzle == 128);
    assert_non_null(strstr(ks.src, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"));
    assert_non_null(strstr(ks.src, "fence.proxy.async.shared::cta"));
    assert_non_null(strstr(ks.src, "#define LAG 1"));
    cut_call call;
    cut_result res;
    cut_result_reset(&res);
    assert_int_equal(cut_call_of_kernel(&ks, NULL, &call, &res), 0);
    assert_int_equal(call.nargs, 4);
    assert_true(!call.args[0].tma && call.args[0].buf == 0);
    assert_true(call.args[1].tma && call.args[1].buf == 1 && call.args[1].desc.dims[0] == 216);
    assert_true(!call.args[2].tma && call.args[2].buf == 2 && !call.args[3].tma && call.args[3].buf == 3);
    cut_kernel_src_free(&ks);
    /* split-K: the slices on blockIdx.z */
    const cut_conv longk = mkc(2, 5, 5, 16, 128, 3, 1, 1, CUT_DT_FP16); /* M 50, 18 k tiles */
    assert_int_equal(cut_codegen_conv(&longk, &(cut_sched){.tpl = tpl_wc(), .k = {64, 1, 1, 2, 0, 4}}, &ks, &e), 0);
    assert_true(ks.grid[0] == 1 && ks.grid[1] == 1 && ks.grid[2] == 4);
    assert_non_null(strstr(ks.src, "#define SPLITK 4"));
    cut_kernel_src_free(&ks);
}

/* Tail shapes the layout allows, emulated (wgmma, mbarriers and the TMA as PTX documents them) against the double
 * reference: odd H/W, stride 2, 1x1, 3x3 padded, 5x5, CO not a multiple of the tile, K not a multiple of 64,
 * the two consumers, WAITD 0/1 and every LAG from 0 (ST 2, WAITD 1) to 4, fp16 and bf16, bias and ReLU. */
static void test_emulated_tails(void **state)
{
    (void)state;
    hand hs[] = {
        {mkc(1, 9, 7, 32, 16, 3, 1, 1, CUT_DT_FP16), mks(64, 1, 1, 2, 0)},
        {mkc(1, 9, 9, 24, 8, 3, 2, 1, CUT_DT_BF16), mks(64, 1, 1, 2, 1)},  /* stride 2, LAG 0 */
        {mkc(2, 5, 7, 40, 32, 1, 1, 0, CUT_DT_FP16), mks(64, 1, 2, 3, 1)}, /* 1x1, two consumers */
        {mkc(1, 9, 9, 16, 8, 5, 1, 2, CUT_DT_BF16), mks(64, 2, 1, 4, 0)},  /* 5x5, K 200 */
        {mkc(1, 7, 9, 32, 24, 3, 1, 1, CUT_DT_FP16), mks(64, 1, 1, 6, 1)}, /* LAG 4 */
        {mkc(1, 8, 8, 80, 16, 3, 2, 0, CUT_DT_FP16), mks(128, 1, 1, 3, 0)}, /* CO 80 of 128 */
        {mkc(1, 6, 5, 8, 64, 1, 2, 0, CUT_DT_BF16), mks(64, 1, 1, 2, 0)},   /* 1x1 stride 2, CO 8 */
    };
    hs[1].c.epilogue = CUT_EPI_BIAS;
    hs[4].c.epilogue = CUT_EPI_BIAS_RELU;
    hs[5].c.epilogue = CUT_EPI_BIAS_RELU;
    assert_int_equal(run_emulated(hs, (int)CUT_ARRAY_LEN(hs), 2, NULL), 0);
}

/* Random valid schedules on small shapes, emulated. */
static void test_emulated_random(void **state)
{
    (void)state;
    const cut_conv shapes[] = {mkc(1, 7, 7, 32, 16, 3, 1, 1, CUT_DT_FP16), mkc(1, 9, 5, 48, 8, 3, 2, 1, CUT_DT_BF16),
                               mkc(1, 6, 6, 16, 32, 1, 1, 0, CUT_DT_FP16)};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 77);
    enum { NR = 4 };
    hand hs[NR];
    for (int i = 0; i < NR; i++) {
        hs[i].c = shapes[i % (int)CUT_ARRAY_LEN(shapes)];
        assert_int_equal(cut_sched_sample_valid(&hs[i].c, &d, tpl_wc(), &r, &hs[i].s, 500), 0);
    }
    assert_int_equal(run_emulated(hs, NR, 1, NULL), 0);
}

/* Split-K (18 k tiles in 4 and 2 slices, 3 in 2, 14 in 4; the last slice short; the two consumers; LAG 0, 2, 3),
 * run twice so that the tiles' counters are proven reset between launches. */
static void test_emulated_split_k(void **state)
{
    (void)state;
    hand hs[] = {
        {mkc(1, 5, 5, 16, 128, 3, 1, 1, CUT_DT_FP16), mksk(64, 1, 1, 4, 0, 4)},
        {mkc(2, 5, 7, 24, 128, 3, 1, 1, CUT_DT_BF16), mksk(64, 1, 2, 2, 1, 2)},
        {mkc(1, 7, 7, 40, 192, 1, 2, 0, CUT_DT_FP16), mksk(64, 1, 1, 5, 1, 2)}, /* 1x1 stride 2, 3 k tiles: 2, 1 */
        {mkc(1, 6, 5, 16, 96, 3, 1, 1, CUT_DT_BF16), mksk(64, 1, 1, 3, 0, 4)},  /* 14 tiles: 4, 4, 4, 2 */
    };
    hs[0].c.epilogue = CUT_EPI_BIAS_RELU;
    hs[1].c.epilogue = CUT_EPI_BIAS;
    assert_int_equal(run_emulated(hs, (int)CUT_ARRAY_LEN(hs), 2, NULL), 0);
}

/* c with s's kernel, its text `from` replaced by `to`, under emulation: the check must report a wrong result. */
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

/* The emulation catches an im2col decode with kh and kw swapped, an unswizzled copy (wgmma's descriptors read the
 * 128-byte swizzle), the padding not zero-filled (the row's chunk read from the image's origin), a dropped ReLU and
 * a split-K sum without the first slice. */
static void test_planted_bug_caught(void **state)
{
    (void)state;
    cut_conv c = mkc(1, 7, 9, 16, 16, 3, 1, 1, CUT_DT_FP16);
    const cut_sched s = mks(64, 1, 1, 3, 1);
    char *dir = tu_tmpdir("wgmma_conv_plant");
    expect_plant_caught(&c, &s, "kh = tap / KW, kw = tap - kh * KW", "kw = tap / KW, kh = tap - kw * KW", dir);
    expect_plant_caught(&c, &s, "((c8 ^ (r % 8)) << 4)", "(c8 << 4)", dir);
    expect_plant_caught(&c, &s, "src, ok ? 16 : 0);", "A + ci, 16);", dir);
    c.epilogue = CUT_EPI_BIAS_RELU;
    expect_plant_caught(&c, &s, "v = fmaxf(v, 0.0f);", "", dir);
    const cut_conv longk = mkc(1, 5, 5, 16, 128, 3, 1, 1, CUT_DT_BF16); /* 18 k tiles in 4 slices */
    expect_plant_caught(&longk, &(cut_sched){.tpl = tpl_wc(), .k = {64, 1, 1, 3, 1, 4}},
                        "for (int q = 0; q < SPLITK; q++)", "for (int q = 1; q < SPLITK; q++)", dir);
    free(dir);
}

/* count random valid schedules over ResNet-50 layers (fp16 and bf16, with and without the epilogue), compiled for
 * sm_90a in one batch: each compiles, spills nothing, has no wgmma serialized by ptxas. */
static void compile_random(int count, uint64_t seed)
{
    const cut_conv shapes[] = {mkc(1, 56, 56, 64, 64, 3, 1, 1, 0), mkc(1, 56, 56, 256, 64, 1, 1, 0, 0),
                               mkc(32, 28, 28, 128, 128, 3, 1, 1, 0), mkc(1, 7, 7, 2048, 512, 1, 1, 0, 0),
                               mkc(1, 14, 14, 512, 256, 3, 2, 1, 0), mkc(8, 27, 27, 192, 64, 5, 1, 2, 0)};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, seed);
    cut_err e = {{0}};
    cut_kernel_src *ks = calloc((size_t)count, sizeof *ks);
    const char **srcs = calloc((size_t)count, sizeof *srcs);
    cut_compiled *bins = calloc((size_t)count, sizeof *bins);
    for (int i = 0; i < count; i++) {
        cut_conv c = shapes[i % (int)CUT_ARRAY_LEN(shapes)];
        c.dtype = i % 2 ? CUT_DT_BF16 : CUT_DT_FP16;
        c.epilogue = (cut_conv_epilogue)(i % 3);
        cut_sched s;
        assert_int_equal(cut_sched_sample_valid(&c, &d, tpl_wc(), &r, &s, 500), 0);
        if (cut_codegen_conv(&c, &s, &ks[i], &e) != 0)
            fail_msg("%s", e.msg);
        srcs[i] = ks[i].src;
    }
    cut_compile_opts co;
    cut_compile_opts_default(&co);
    co.arch_suffix_a = 1;
    assert_int_equal(cut_compile_batch(srcs, count, &co, bins, &e), 0);
    int failed = 0, rmin = 1 << 30, rmax = 0;
    for (int i = 0; i < count; i++) {
        const char *sched = strstr(ks[i].src, "// schedule: ");
        const int slen = sched ? (int)strcspn(sched, "\n") : 0;
        if (!bins[i].ok) {
            fprintf(stderr, "NVRTC failed: %.*s\n%s\n", slen, sched ? sched : "?", bins[i].log);
            failed++;
            continue;
        }
        if (bins[i].spill_stores || bins[i].spill_loads || strstr(bins[i].log, "serialized"))
            fail_msg("spills %d/%d or serialized wgmma: %.*s\n%s", bins[i].spill_stores, bins[i].spill_loads, slen,
                     sched ? sched : "?", bins[i].log);
        rmin = bins[i].regs < rmin ? bins[i].regs : rmin;
        rmax = bins[i].regs > rmax ? bins[i].regs : rmax;
    }
    printf("  %d random wgmma_conv schedules compiled for sm_90a, %d failed; registers %d..%d, no spills, none "
           "serialized\n", count, failed, rmin, rmax);
    assert_int_equal(failed, 0);
    /* plain sm_90 has no wgmma or setmaxnreg: the template must ask for sm_90a */
    cut_compiled plain;
    co.arch_suffix_a = 0;
    assert_int_equal(cut_compile_one(srcs[0], "wgmma_conv.cu", &co, &plain, &e), 0);
    assert_int_equal(plain.ok, 0);
    cut_compiled_free(&plain);
    for (int i = 0; i < count; i++) {
        cut_compiled_free(&bins[i]);
        cut_kernel_src_free(&ks[i]);
    }
    free(ks), free(srcs), free(bins);
}

/* The largest tiles (BM 256 with two consumers, BN 256 with one m64 block each, six stages) fit: no spills, the
 * registers within the block's. */
static void test_large_tiles_fit(void **state)
{
    (void)state;
    const hand hs[] = {
        {mkc(32, 28, 28, 256, 128, 3, 1, 1, CUT_DT_FP16), mks(128, 2, 2, 4, 1)},
        {mkc(32, 28, 28, 256, 128, 3, 1, 1, CUT_DT_BF16), mks(256, 1, 2, 3, 1)},
        {mkc(8, 56, 56, 256, 64, 1, 1, 0, CUT_DT_FP16), mks(192, 1, 1, 6, 0)},
    };
    enum { NH = (int)CUT_ARRAY_LEN(hs) };
    cut_kernel_src ks[NH];
    cut_compiled bins[NH];
    compile_hands(hs, NH, ks, bins);
    for (int i = 0; i < NH; i++) {
        cut_wgmma_conv_geom g;
        cut_wgmma_conv_geometry(&hs[i].c, &hs[i].s, &g);
        assert_int_equal(ks[i].arch_a, 1);
        assert_fits(&hs[i], &bins[i], g.threads, g.regs_est, 0);
        cut_compiled_free(&bins[i]);
        cut_kernel_src_free(&ks[i]);
    }
}

static void test_nvrtc_random(void **state)
{
    (void)state;
    const char *n = getenv("CUTUNE_TC_COMPILES");
    compile_random(n && atoi(n) > 0 ? atoi(n) : tu_quick() ? 6 : 18, 91);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_applies_and_refusals),
        cmocka_unit_test(test_sampled_valid_and_mutations),
        cmocka_unit_test(test_codegen_launch_and_map),
        cmocka_unit_test(test_emulated_tails),
        cmocka_unit_test(test_emulated_random),
        cmocka_unit_test(test_emulated_split_k),
        cmocka_unit_test(test_planted_bug_caught),
        cmocka_unit_test(test_large_tiles_fit),
        cmocka_unit_test(test_nvrtc_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
