/* Implicit-GEMM template: knob checks, geometry and launch configuration, hand-picked schedules under emulation
 * (tails, strides, padding, batch > 1, split-K, both pipelines), and NVRTC registers/spills of large tiles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/codegen.h"
#include "cutune/compile.h"
#include "cutune/emu.h"
#include "cutune/space.h"
#include "cutune/op.h"
#include "ops/conv2d/templates.h"
#include "emu_check.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* seed 001 cases */
static const cut_conv seed001[] = {
    {1, 272, 272, 64, 32, 3, 3, 1, 1}, {1, 68, 68, 256, 128, 3, 3, 1, 1}, {1, 34, 34, 512, 256, 3, 3, 1, 1},
    {1, 17, 17, 1024, 512, 3, 3, 1, 1}, {1, 56, 56, 64, 64, 3, 3, 1, 1},  {1, 28, 28, 128, 128, 3, 3, 1, 1},
    {1, 14, 14, 256, 256, 3, 3, 1, 1},
};

static int tpl_igemm(void)
{
    int t = cut_template_find("igemm");
    assert_true(t >= 0);
    return t;
}

/* bm bn bk tm tn wlm stages va pad unroll splitk minb ktab */
static cut_sched mk(int bm, int bn, int bk, int tm, int tn, int wlm, int stages, int va, int pad, int unroll,
                    int splitk, int minb, int ktab)
{
    cut_sched s;
    memset(&s, 0, sizeof s);
    s.tpl = tpl_igemm();
    int v[CUT_G_NKNOBS] = {bm, bn, bk, tm, tn, wlm, stages, va, pad, unroll, splitk, minb, ktab};
    memcpy(s.k, v, sizeof v);
    return s;
}

static void test_sampled_are_valid_and_sized(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 5);
    int tpl = tpl_igemm();
    for (size_t s = 0; s < CUT_ARRAY_LEN(seed001); s++) {
        const cut_conv *c = &seed001[s];
        int split = 0;
        for (int i = 0; i < 300; i++) {
            cut_sched sc;
            assert_int_equal(cut_sched_sample_valid(c, &d, tpl, &r, &sc, 2000), 0);
            cut_err e;
            assert_int_equal(cut_sched_check(c, &sc, &d, &e), 0);
            cut_igemm_geom g;
            cut_igemm_geometry(c, &sc, &g);
            assert_true(g.threads >= 32 && g.threads <= 1024 && g.threads % 32 == 0);
            assert_true(g.smem_bytes <= d.max_smem_per_block);
            assert_true((long)g.grid[0] * sc.k[CUT_G_BN] >= g.gn);
            assert_true((long)g.grid[1] * sc.k[CUT_G_BM] >= g.gm);
            assert_true(sc.k[CUT_G_UNROLL] <= sc.k[CUT_G_BK]);
            /* every split-K slice has work */
            assert_true((long)(sc.k[CUT_G_SPLITK] - 1) * g.kps < g.ktiles);
            split += sc.k[CUT_G_SPLITK] > 1;
            /* mutation keeps the template and mostly yields valid schedules */
            cut_sched m = sc;
            cut_template_get(tpl)->mutate(c, &d, &r, &m);
            assert_int_equal(m.tpl, tpl);
        }
        /* split-K is drawn on the small-grid layers (17x17: M x N = 1024 x 289) */
        if (s == 3)
            assert_true(split > 10);
    }
}

static void test_check_rejects(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    const cut_conv *c = &seed001[2]; /* 34x34, CO 512, CI 256: GEMM 512 x 1156 x 2304 */
    cut_err e;
    cut_sched s = mk(128, 128, 8, 8, 8, 4, 2, 4, 4, 8, 1, 1, 0);
    assert_int_equal(cut_sched_check(c, &s, &d, &e), 0);
    cut_sched t = s;
    t.k[CUT_G_TM] = t.k[CUT_G_TN] = 2; /* 64 x 64 = 4096 threads */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "threads"));
    t = s;
    t.k[CUT_G_BM] = 16; /* 2 x 16 threads */
    t.k[CUT_G_BN] = 32;
    t.k[CUT_G_TN] = 2;
    t.k[CUT_G_WLM] = 4; /* 4 x 8 lanes do not fit a 2 x 16 grid */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "wlm"));
    t = s;
    t.k[CUT_G_BK] = 32; /* 2 x 32 x 264 x 4 bytes */
    t.k[CUT_G_UNROLL] = 1;
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "shared memory"));
    t = s;
    t.k[CUT_G_UNROLL] = 16; /* > bk */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "unroll"));
    t = s;
    t.k[CUT_G_MINB] = 3;
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    t = s;
    t.k[CUT_G_TM] = t.k[CUT_G_TN] = 8; /* 8x8 accumulators at 1024 threads: beyond the register file */
    t.k[CUT_G_BM] = t.k[CUT_G_BN] = 256;
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    t = s;
    t.k[CUT_G_VA] = 3;
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    t = s;
    t.k[CUT_G_SPLITK] = 4; /* 10 x 4 blocks x 4 slices is fine */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), 0);
    t.k[CUT_G_SPLITK] = 16; /* 40 x 16 blocks: more than two waves */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "splitk"));
    t = s;
    t.k[CUT_G_BM] = 64; /* 8 x 8 threads = 64: fine; a larger BM than M is not */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), 0);
    const cut_conv small_co = {1, 34, 34, 8, 256, 3, 3, 1, 1};
    assert_int_equal(cut_sched_check(&small_co, &s, &d, &e), -1);
    assert_non_null(strstr(e.msg, "exceeds the GEMM"));
    /* va=4 needs K % 4 == 0: CI=3, 3x3 -> K = 27 */
    const cut_conv odd_k = {1, 34, 34, 128, 3, 3, 3, 1, 1};
    t = mk(64, 64, 8, 4, 4, 4, 2, 4, 0, 8, 1, 0, 1);
    assert_int_equal(cut_sched_check(&odd_k, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "va=4"));
    t.k[CUT_G_VA] = 1;
    assert_int_equal(cut_sched_check(&odd_k, &t, &d, &e), 0);
    /* the k table lives in 64 KiB of constant memory: K = 1024*9 entries of 8 bytes do not fit */
    const cut_conv deep = {1, 8, 8, 64, 1024, 3, 3, 1, 1};
    t.k[CUT_G_KTAB] = 1;
    assert_int_equal(cut_sched_check(&deep, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "ktab"));
    t.k[CUT_G_KTAB] = 0;
    assert_int_equal(cut_sched_check(&deep, &t, &d, &e), 0);
    /* splitk slices without work: K = 27 -> 4 tiles of 8, 4 slices of 1 is fine, 8 slices are not */
    t.k[CUT_G_SPLITK] = 4;
    const cut_conv tiny = {1, 8, 8, 16, 3, 3, 3, 1, 1};
    t.k[CUT_G_BM] = 16;
    t.k[CUT_G_BN] = 64;
    t.k[CUT_G_TM] = 2;
    t.k[CUT_G_WLM] = 2;
    assert_int_equal(cut_sched_check(&tiny, &t, &d, &e), 0);
    t.k[CUT_G_SPLITK] = 8;
    assert_int_equal(cut_sched_check(&tiny, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "slice"));
}

static void test_codegen_launch_and_json(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    const cut_conv *c = &seed001[3]; /* 17x17, CO 1024, CI 512: GEMM 1024 x 289 x 4608 */
    cut_sched s = mk(64, 32, 16, 4, 4, 8, 2, 4, 4, 16, 2, 1, 1);
    cut_err e;
    assert_int_equal(cut_sched_check(c, &s, &d, &e), 0);
    cut_kernel_src k;
    assert_int_equal(cut_codegen_conv(c, &s, &k, &e), 0);
    assert_non_null(strstr(k.src, "// schedule: igemm bm=64 bn=32 bk=16 tm=4 tn=4 wlm=8 stages=2 va=4 pad=4"));
    assert_non_null(strstr(k.src, "static __constant__ int2 cut_ktab[4612]")); /* 288 tiles of 16 + TBK 4 */
    assert_non_null(strstr(k.src, "cut_conv2d("));
    assert_non_null(strstr(k.src, "__launch_bounds__(NT, 1)")); /* minb=1 */
    assert_null(strstr(k.src, "asm"));
    assert_string_equal(k.entry, "cut_conv2d");
    assert_int_equal(k.block[0], 128);
    assert_int_equal(k.block[1], 1);
    assert_int_equal(k.grid[0], 10); /* ceil(289 / 32) */
    assert_int_equal(k.grid[1], 16); /* 1024 / 64 */
    assert_int_equal(k.grid[2], 2);
    assert_int_equal(k.smem_dynamic, 0);
    assert_int_equal(k.uses_inline_ptx, 0);
    cut_kernel_src_free(&k);

    char buf[512];
    assert_true(cut_tpl_sched_json(CUT_OP_CONV2D, &s, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "\"tpl\":\"igemm\""));
    cJSON *o = cJSON_Parse(buf);
    cut_sched back;
    assert_int_equal(cut_sched_from_cjson(o, &back, &e), 0);
    cJSON_Delete(o);
    assert_true(cut_sched_equal(&s, &back));
}


/* Hand-picked schedules on small shapes, run under emulation against the CPU reference. */
static void test_hand_picked_emulated(void **state)
{
    (void)state;
    cut_err e;
    if (cut_nvrtc_version(&e) < 0)
        skip();
    const hand hs[] = {
        /* the big-tile schedule, tails in M (CO 72) and N (15x15 = 225), K = 40*9 = 360 */
        {{1, 15, 15, 72, 40, 3, 3, 1, 1}, mk(128, 128, 8, 8, 8, 4, 2, 4, 4, 8, 1, 0, 0)},
        {{1, 15, 15, 72, 40, 3, 3, 1, 1}, mk(128, 128, 8, 8, 8, 8, 1, 1, 0, 2, 1, 1, 0)},
        /* batch 2, stride 2, padding, K tail (5*9 = 45: va 1) */
        {{2, 13, 11, 24, 5, 3, 3, 2, 1}, mk(32, 64, 16, 4, 4, 2, 2, 1, 4, 4, 1, 0, 1)},
        {{2, 13, 11, 24, 5, 3, 3, 2, 1}, mk(16, 32, 4, 1, 1, 16, 1, 1, 0, 1, 1, 1, 1)},
        /* 1x1 without padding (no range tests), vector stores (OH*OW = 16) */
        {{3, 8, 8, 32, 16, 1, 1, 2, 0}, mk(32, 32, 8, 2, 8, 16, 2, 4, 0, 8, 1, 0, 0)},
        /* 7x7 stride 2 pad 3, CI 3 */
        {{1, 20, 20, 16, 3, 7, 7, 2, 3}, mk(16, 64, 32, 2, 2, 2, 2, 1, 4, 4, 1, 1, 0)},
        /* split-K: 2, 4 and 3 uneven slices; tails */
        {{1, 9, 9, 40, 32, 3, 3, 1, 1}, mk(32, 32, 16, 4, 4, 4, 2, 4, 4, 16, 4, 0, 1)},
        {{1, 9, 9, 40, 32, 3, 3, 1, 1}, mk(64, 32, 8, 4, 2, 8, 1, 4, 0, 4, 2, 1, 1)},
        {{2, 7, 7, 20, 13, 3, 3, 1, 1}, mk(32, 64, 32, 2, 4, 4, 2, 1, 4, 8, 4, 0, 0)},
        /* more threads than B columns (TBK > 1) and than A vectors; BK < TBK */
        {{1, 6, 6, 16, 8, 3, 3, 1, 1}, mk(16, 16, 4, 1, 2, 16, 2, 4, 0, 4, 1, 1, 0)},
        /* k table with a K tail and no padding (rows past K read offset 0, A is zero there); minb=2 */
        {{2, 5, 7, 12, 7, 1, 1, 1, 0}, mk(16, 32, 8, 2, 2, 4, 2, 1, 0, 8, 1, 2, 1)},
        {{1, 9, 9, 24, 5, 3, 3, 1, 1}, mk(32, 32, 32, 2, 2, 8, 2, 1, 4, 32, 2, 2, 1)},
        /* 1024 threads */
        {{1, 12, 12, 64, 8, 3, 3, 1, 1}, mk(64, 64, 8, 2, 2, 8, 2, 4, 4, 8, 1, 0, 1)},
    };
    /* a second launch: split-K counters must have been reset */
    assert_int_equal(run_emulated(hs, (int)CUT_ARRAY_LEN(hs), 2, NULL), 0);
}

/* Typical large-tile schedules on the deep-channel seed-001 layers: no spills, registers within the budget of
 * __launch_bounds__, and the estimate of the space not far below ptxas. */
static void test_large_tiles_no_spills(void **state)
{
    (void)state;
    cut_err e;
    if (cut_nvrtc_version(&e) < 0)
        skip();
    const hand hs[] = {
        {seed001[2], mk(128, 128, 8, 8, 8, 4, 2, 4, 4, 8, 1, 1, 1)},
        {seed001[2], mk(128, 128, 8, 8, 8, 8, 2, 4, 0, 8, 1, 0, 0)},
        {seed001[2], mk(128, 64, 16, 8, 8, 4, 2, 4, 4, 16, 1, 1, 0)},
        {seed001[3], mk(128, 64, 8, 8, 8, 8, 2, 4, 4, 8, 4, 0, 1)},
        {seed001[3], mk(64, 64, 16, 8, 4, 4, 2, 4, 4, 16, 2, 1, 1)},
        {seed001[0], mk(64, 128, 8, 8, 8, 2, 2, 4, 4, 8, 1, 0, 0)},
    };
    int n = (int)CUT_ARRAY_LEN(hs);
    cut_kernel_src ks[8];
    cut_compiled bins[8];
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    compile_hands(hs, n, ks, bins);
    for (int i = 0; i < n; i++) {
        cut_igemm_geom g;
        cut_igemm_geometry(&hs[i].c, &hs[i].s, &g);
        assert_fits(&hs[i], &bins[i], g.threads, g.regs_est, -1);
        cut_compiled_free(&bins[i]);
        cut_kernel_src_free(&ks[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sampled_are_valid_and_sized),
        cmocka_unit_test(test_check_rejects),
        cmocka_unit_test(test_codegen_launch_and_json),
        cmocka_unit_test(test_hand_picked_emulated),
        cmocka_unit_test(test_large_tiles_no_spills),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
