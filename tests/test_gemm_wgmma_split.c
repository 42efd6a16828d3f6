/* Split-K in the Hopper wgmma GEMM template (knob splitk): slice blockIdx.z walks its k tiles, the tile's last block
 * to arrive adds the slices' fp32 partials (a static workspace and a counter per tile, reset for the next launch)
 * and runs the epilogue once. Under the host emulator, split schedules of fp16/bf16 (NN, NT, TN, TT) and tf32 (NN:
 * C^T = B^T A^T, NT, TN, TT) on tail shapes match the double reference, with a batch and alpha/beta too; the
 * verifier's second launch on fresh inputs (the workspace changed the module state) passes, so the counters were
 * reset; a planted bug (slice 1 left out of the sum, the counter not reset, every slice walking slice 0's k tiles)
 * is caught. The space: split-K where the tiles cannot fill the SMs, none where they fill them twice, a slice left
 * empty refused with a sentence. Random split schedules compile for sm_90a without spills. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/codegen.h"
#include "cutune/compile.h"
#include "cutune/emu.h"
#include "cutune/gemm.h"
#include "cutune/gemm_space.h"
#include "cutune/measure.h"
#include "cutune/util.h"
#include "gemm_emu_testutil.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_CL = 6, K_SK = 7 }; /* the wgmma knobs' indices: bn mi nc st waitd gm cl splitk */

static int setup(void **state)
{
    (void)state;
    return gemu_open("gemm_wgmma_split");
}

/* A random valid schedule of g with cl=1 (the emulator's) and splitk = want (0: any split above 1). */
static cut_sched split_sched(const cut_gemm *g, cut_rng *r, int want)
{
    static const int v_sk[] = {2, 3, 4, 6, 8, 16};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    for (int tries = 0; tries < 2000; tries++) {
        cut_sched s;
        cut_err e = {{0}};
        if (cut_gemm_sched_sample_valid(g, &d, CUT_GEMM_TPL_WGMMA, r, &s, 1000, &e) != 0)
            fail_msg("%s", e.msg);
        s.k[K_CL] = 1;
        s.k[K_SK] = want ? want : v_sk[cut_rng_below(r, (uint32_t)CUT_ARRAY_LEN(v_sk))];
        if (cut_gemm_sched_check(g, &s, &d, &e) == 0)
            return s;
    }
    fail_msg("no valid split schedule");
    return (cut_sched){0};
}

/* A random split schedule (cl 1, splitk above 1) of a shape, on the kernel's own grid. */
static cut_sched pick_split(const cut_gemm *g, cut_rng *r, int j, unsigned *grid_x)
{
    (void)j;
    *grid_x = 0;
    return split_sched(g, r, 0);
}

/* Split schedules over tail shapes (M, N, K off every tile; one row; a K of 520 and 1000) of every dtype x layout. */
static void test_split_emulated(void **state)
{
    (void)state;
    const cut_gemm shapes[] = {
        mkg(16, 200, 520, CUT_GEMM_NN, CUT_DT_FP16), mkg(1, 72, 264, CUT_GEMM_NT, CUT_DT_BF16),
        mkg(64, 136, 1000, CUT_GEMM_NN, CUT_DT_BF16), mkg(16, 200, 520, CUT_GEMM_TN, CUT_DT_FP16),
        mkg(8, 72, 264, CUT_GEMM_TT, CUT_DT_BF16),   mkg(16, 200, 520, CUT_GEMM_NN, CUT_DT_TF32),
        mkg(1, 72, 264, CUT_GEMM_NT, CUT_DT_TF32),   mkg(64, 136, 300, CUT_GEMM_TN, CUT_DT_TF32),
        mkg(12, 72, 264, CUT_GEMM_TT, CUT_DT_TF32),
    };
    assert_int_equal(gemu_emulate(shapes, (int)CUT_ARRAY_LEN(shapes), tu_quick() ? 1 : 2, 3100, pick_split), 0);
}

/* A batch (blockIdx.y; a counter per tile of each plane) and alpha/beta (applied once, after the reduction). */
static void test_split_extras(void **state)
{
    (void)state;
    cut_gemm shapes[] = {mkg(16, 200, 520, CUT_GEMM_NN, CUT_DT_FP16), mkg(8, 72, 264, CUT_GEMM_TN, CUT_DT_BF16),
                         mkg(16, 136, 264, CUT_GEMM_NN, CUT_DT_TF32), mkg(1, 72, 264, CUT_GEMM_NT, CUT_DT_TF32)};
    for (size_t i = 0; i < CUT_ARRAY_LEN(shapes); i++)
        cut_gemm_set_extras(&shapes[i], i % 2 ? 1 : 3, 0.5, i == 2 ? 0.0 : 0.25);
    assert_int_equal(gemu_emulate(shapes, (int)CUT_ARRAY_LEN(shapes), tu_quick() ? 1 : 2, 3200, pick_split), 0);
}

/* Planted bugs: slice 1's partial left out of the sum, every slice walking slice 0's k tiles (WRONG_RESULT); the
 * counter never reset (the first launch is right, the verifier's second finds no last block: not OK). */
static void test_split_planted(void **state)
{
    (void)state;
    cut_gemm g = mkg(16, 200, 520, CUT_GEMM_NN, CUT_DT_FP16);
    cut_gemm_set_extras(&g, 2, 0.5, 0.25);
    const cut_sched s = {.tpl = CUT_GEMM_TPL_WGMMA, .k = {64, 1, 1, 3, 1, 1, 1, 3}};
    static const char *const plants[][2] = {
        {NULL, NULL},
        {"for (int q = 1; q < KSPLIT; q++)", "for (int q = 2; q < KSPLIT; q++)"},
        {"const int kt0 = (int)blockIdx.z * KPS", "const int kt0 = 0 * KPS"},
        {"cut_cnt[tile] = 0u;", "(void)0;"},
    };
    prepare(&g, 17);
    for (size_t i = 0; i < CUT_ARRAY_LEN(plants); i++) {
        const cut_result res = run(&g, &s, plants[i][0], plants[i][1]);
        printf("  %-45s %s rel.err %.3g %s\n", plants[i][0] ? plants[i][0] : "(unedited)", cut_status_name(res.status),
               res.max_abs_err, res.error);
        if (!plants[i][0])
            assert_int_equal(res.status, CUT_ST_OK);
        else if (i < 3)
            assert_int_equal(res.status, CUT_ST_WRONG_RESULT);
        else
            assert_int_not_equal(res.status, CUT_ST_OK);
    }
}

/* The space: a skinny GEMM samples split-K often, a large one never (refused where its tiles fill the SMs twice);
 * a split that leaves a slice empty, or off the list, is refused with a sentence; splitk 0 (a schedule from before
 * the knob) is splitk 1. */
static void test_split_space(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 33);
    const cut_gemm skinny = mkg(16, 4096, 4096, CUT_GEMM_NN, CUT_DT_FP16), big = mkg(8192, 8192, 2048, CUT_GEMM_NN,
                                                                                       CUT_DT_BF16);
    int split_skinny = 0, split_big = 0;
    for (int i = 0; i < 200; i++) {
        cut_sched s;
        cut_err e = {{0}};
        assert_int_equal(cut_gemm_sched_sample_valid(&skinny, &d, CUT_GEMM_TPL_WGMMA, &r, &s, 1000, &e), 0);
        split_skinny += s.k[K_SK] > 1;
        assert_int_equal(cut_gemm_sched_sample_valid(&big, &d, CUT_GEMM_TPL_WGMMA, &r, &s, 1000, &e), 0);
        split_big += s.k[K_SK] > 1;
    }
    printf("  split-K sampled: 16x4096x4096 %d of 200, 8192x8192x2048 %d of 200\n", split_skinny, split_big);
    assert_true(split_skinny > 100);
    assert_int_equal(split_big, 0);
    cut_err e = {{0}};
    cut_sched s = {.tpl = CUT_GEMM_TPL_WGMMA, .k = {64, 1, 1, 3, 1, 1, 1, 2}};
    const cut_gemm waves = mkg(1024, 1152, 1024, CUT_GEMM_NN, CUT_DT_FP16); /* 288 tiles of 64 x 64 */
    assert_int_equal(cut_gemm_sched_check(&waves, &s, &d, &e), -1);
    assert_non_null(strstr(e.msg, "fill"));
    assert_int_equal(cut_gemm_sched_check(&waves, &s, NULL, &e), 0); /* the device's rule, not the shape's */
    s.k[K_SK] = 16;
    assert_int_equal(cut_gemm_sched_check(&big, &s, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "workspace"));
    const cut_gemm k264 = mkg(16, 200, 264, CUT_GEMM_NN, CUT_DT_FP16); /* 5 k tiles */
    s.k[K_SK] = 4;                                                       /* slices of 2: the fourth empty */
    assert_int_equal(cut_gemm_sched_check(&k264, &s, &d, &e), -1);
    assert_non_null(strstr(e.msg, "empty"));
    s.k[K_SK] = 5;
    assert_int_equal(cut_gemm_sched_check(&k264, &s, &d, &e), -1);
    assert_non_null(strstr(e.msg, "splitk=5"));
    s.k[K_SK] = 3;
    assert_int_equal(cut_gemm_sched_check(&k264, &s, &d, &e), 0);
    s.k[K_SK] = 0;
    assert_int_equal(cut_gemm_sched_check(&k264, &s, &d, &e), 0);
    cut_kernel_src a, b;
    assert_int_equal(cut_codegen_gemm(&k264, &s, &a, &e), 0);
    s.k[K_SK] = 1;
    assert_int_equal(cut_codegen_gemm(&k264, &s, &b, &e), 0);
    assert_null(strstr(a.src, "KSPLIT"));
    assert_int_equal(a.grid[2], 1);
    cut_kernel_src_free(&a), cut_kernel_src_free(&b);
}

/* Random split schedules of the decode shapes and tails, every dtype and layout, compile for sm_90a: no spills, no
 * wgmma serialized by ptxas. */
static void test_split_nvrtc(void **state)
{
    (void)state;
    const cut_gemm shapes[] = {
        mkg(16, 4096, 4096, CUT_GEMM_NN, CUT_DT_FP16), mkg(64, 4096, 4096, CUT_GEMM_NN, CUT_DT_BF16),
        mkg(16, 4096, 4096, CUT_GEMM_NT, CUT_DT_BF16), mkg(64, 4096, 4096, CUT_GEMM_TN, CUT_DT_FP16),
        mkg(32, 1024, 2048, CUT_GEMM_TT, CUT_DT_BF16), mkg(16, 4096, 4096, CUT_GEMM_NN, CUT_DT_TF32),
        mkg(64, 2048, 2048, CUT_GEMM_NT, CUT_DT_TF32), mkg(64, 1024, 2048, CUT_GEMM_TN, CUT_DT_TF32),
        mkg(16, 1024, 2048, CUT_GEMM_TT, CUT_DT_TF32),
    };
    const int count = tu_quick() ? 18 : 45;
    cut_rng r;
    cut_rng_seed(&r, 3300);
    cut_kernel_src *ks = calloc((size_t)count, sizeof *ks);
    assert_non_null(ks);
    cut_err e = {{0}};
    for (int i = 0; i < count; i++) {
        cut_gemm g = shapes[i % (int)CUT_ARRAY_LEN(shapes)];
        if (i % 4 == 3)
            cut_gemm_set_extras(&g, 2, 0.5, 0.25);
        cut_sched s = split_sched(&g, &r, 0);
        s.k[K_CL] = i % 3 == 0 ? 2 : 1; /* the GPU runs clusters: compile them too */
        if (cut_gemm_sched_check(&g, &s, NULL, &e) != 0)
            s.k[K_CL] = 1;
        assert_int_equal(cut_codegen_gemm(&g, &s, &ks[i], &e), 0);
        assert_true(ks[i].grid[2] == (unsigned)s.k[K_SK]);
    }
    int rmax = 0;
    const int failed = gemu_compile_sm90a(ks, count, &rmax);
    printf("  %d split-K wgmma schedules compiled for sm_90a, %d failed, at most %d registers, no spills\n", count,
           failed, rmax);
    assert_int_equal(failed, 0);
    free(ks);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_space),   cmocka_unit_test(test_split_planted),
        cmocka_unit_test(test_split_emulated), cmocka_unit_test(test_split_extras),
        cmocka_unit_test(test_split_nvrtc),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
