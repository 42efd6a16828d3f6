/* The Hopper wgmma GEMM template under the host emulator (issue 21): the generated kernel's PTX (mbarriers, TMA tile
 * loads with the 128-byte swizzle, wgmma with shared-memory matrix descriptors) replaced by its PTX ISA semantics
 * under CUT_EMU, run by the emulation runner with emulated tensor maps. Random valid cl=1 schedules of fp16/bf16 NN,
 * NT, TN and TT (A MN-major) and tf32 NT, NN (C^T = B^T A^T, wgmma's A from registers), TT (A from registers) and TN
 * (B copied K-major too) on tail shapes (M, N, K not multiples of any tile, K not a multiple of 64) match the double
 * reference within the dtype's tolerance, and so do hand-picked tf32 NN, TN and TT variants; a planted bug in the
 * emulated TMA swizzle, in a descriptor, in the stage release, in the epilogue, in tf32 NN's fragment loads or
 * transposed stores, in tf32 TN's number of B copies or TT's row stores fails the comparison; a cluster of 2 is
 * refused with its reason; the emulated mbarrier's rules fail the launch with theirs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/codegen.h"
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

static int setup(void **state)
{
    (void)state;
    return gemu_open("gemm_wgmma_emu");
}

static void describe(const cut_gemm *g, const cut_sched *s, char *buf, size_t n)
{
    char name[128], desc[160];
    cut_gemm_name(g, name, sizeof name);
    cut_gemm_sched_describe(s, desc, sizeof desc);
    snprintf(buf, n, "%s %s", name, desc);
}

/* Random valid cl=1 schedules over tail shapes for each dtype x layout wgmma computes: all OK within tolerance. */
static void test_random_schedules(void **state)
{
    (void)state;
    const cut_gemm shapes[] = {
        mkg(67, 136, 200, CUT_GEMM_NN, CUT_DT_FP16), mkg(67, 136, 200, CUT_GEMM_NT, CUT_DT_FP16),
        mkg(130, 72, 88, CUT_GEMM_NN, CUT_DT_BF16),  mkg(33, 200, 136, CUT_GEMM_NT, CUT_DT_BF16),
        mkg(67, 136, 200, CUT_GEMM_NT, CUT_DT_TF32), mkg(100, 60, 52, CUT_GEMM_NT, CUT_DT_TF32),
        mkg(1, 8, 8, CUT_GEMM_NN, CUT_DT_FP16),      mkg(5, 24, 40, CUT_GEMM_NT, CUT_DT_TF32),
        /* tf32 NN: C^T = B^T A^T, A's fragments from registers */
        mkg(67, 136, 200, CUT_GEMM_NN, CUT_DT_TF32), mkg(130, 72, 88, CUT_GEMM_NN, CUT_DT_TF32),
        mkg(3, 20, 12, CUT_GEMM_NN, CUT_DT_TF32),
        /* TN, TT (A stored KxM): A MN-major in shared memory, read with wgmma's A-transpose flag */
        mkg(72, 136, 200, CUT_GEMM_TN, CUT_DT_FP16), mkg(136, 72, 88, CUT_GEMM_TT, CUT_DT_BF16),
        mkg(200, 40, 136, CUT_GEMM_TN, CUT_DT_BF16), mkg(8, 24, 40, CUT_GEMM_TT, CUT_DT_FP16),
        /* tf32 TT (A's fragments from registers, loaded from its MN-major boxes) and TN (B copied K-major too) */
        mkg(68, 136, 200, CUT_GEMM_TT, CUT_DT_TF32), mkg(132, 72, 88, CUT_GEMM_TT, CUT_DT_TF32),
        mkg(68, 136, 200, CUT_GEMM_TN, CUT_DT_TF32), mkg(132, 76, 88, CUT_GEMM_TN, CUT_DT_TF32),
        mkg(4, 20, 12, CUT_GEMM_TN, CUT_DT_TF32),
    };
    const int per = tu_quick() ? 1 : 3;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 2121);
    int n = 0, failed = 0;
    double worst[CUT_DT_COUNT] = {0};
    for (size_t i = 0; i < CUT_ARRAY_LEN(shapes); i++) {
        const cut_gemm *g = &shapes[i];
        prepare(g, 40 + i);
        for (int j = 0; j < per; j++) {
            cut_sched s;
            cut_err e = {{0}};
            for (int tries = 0;; tries++) { /* cl=2 cannot be emulated */
                if (cut_gemm_sched_sample_valid(g, &d, CUT_GEMM_TPL_WGMMA, &r, &s, 1000, &e) != 0)
                    fail_msg("%s", e.msg);
                if (s.k[6] == 1)
                    break;
                assert_true(tries < 100);
            }
            char what[320];
            describe(g, &s, what, sizeof what);
            const cut_result res = run(g, &s, NULL, NULL);
            printf("  %-70s %s rel.err %.3g\n", what, cut_status_name(res.status), res.max_abs_err);
            if (res.status != CUT_ST_OK || !(res.max_abs_err <= cut_gemm_tolerance(g->dtype))) {
                fprintf(stderr, "%s: %s %s\n", what, cut_status_name(res.status), res.error);
                failed++;
            }
            worst[g->dtype] = res.max_abs_err > worst[g->dtype] ? res.max_abs_err : worst[g->dtype];
            n++;
        }
    }
    printf("  %d wgmma schedules emulated, %d failed; worst rel.err fp16 %.3g bf16 %.3g tf32 %.3g\n", n, failed,
           worst[CUT_DT_FP16], worst[CUT_DT_BF16], worst[CUT_DT_TF32]);
    assert_int_equal(failed, 0);
}

/* Issue 21's extras on wgmma: a strided batch (3-D TMA maps, a plane a matrix; blockIdx.y the batch), alpha and
 * beta (the epilogue's alpha acc + beta Cin, Cin a separate input) over every layout and dtype wgmma computes, on
 * tail shapes, random valid cl=1 schedules against the double reference. */
static void test_extras(void **state)
{
    (void)state;
    cut_gemm shapes[] = {
        mkg(72, 136, 200, CUT_GEMM_TN, CUT_DT_FP16), mkg(67, 136, 200, CUT_GEMM_NN, CUT_DT_BF16),
        mkg(136, 72, 88, CUT_GEMM_TT, CUT_DT_BF16),  mkg(33, 200, 136, CUT_GEMM_NT, CUT_DT_FP16),
        mkg(67, 136, 200, CUT_GEMM_NN, CUT_DT_TF32), mkg(100, 60, 52, CUT_GEMM_NT, CUT_DT_TF32),
        mkg(8, 24, 40, CUT_GEMM_TN, CUT_DT_BF16),   mkg(68, 136, 200, CUT_GEMM_TN, CUT_DT_TF32),
        mkg(132, 72, 88, CUT_GEMM_TT, CUT_DT_TF32), mkg(36, 200, 40, CUT_GEMM_TN, CUT_DT_TF32),
    };
    const int per = tu_quick() ? 1 : 2;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 2122);
    int n = 0, failed = 0;
    for (size_t i = 0; i < CUT_ARRAY_LEN(shapes); i++) {
        /* batch 3 with alpha 0.5 beta 0.25; every third shape one of them alone */
        cut_gemm *g = &shapes[i];
        cut_gemm_set_extras(g, i % 3 == 1 ? 1 : 3, 0.5, i % 3 == 2 ? 0.0 : 0.25);
        prepare(g, 80 + i);
        for (int j = 0; j < per; j++) {
            cut_sched s;
            cut_err e = {{0}};
            for (int tries = 0;; tries++) { /* cl=2 cannot be emulated */
                if (cut_gemm_sched_sample_valid(g, &d, CUT_GEMM_TPL_WGMMA, &r, &s, 1000, &e) != 0)
                    fail_msg("%s", e.msg);
                if (s.k[6] == 1)
                    break;
                assert_true(tries < 100);
            }
            char what[320];
            describe(g, &s, what, sizeof what);
            const cut_result res = run(g, &s, NULL, NULL);
            printf("  %-90s %s rel.err %.3g\n", what, cut_status_name(res.status), res.max_abs_err);
            if (res.status != CUT_ST_OK || !(res.max_abs_err <= cut_gemm_tolerance(g->dtype))) {
                fprintf(stderr, "%s: %s %s\n", what, cut_status_name(res.status), res.error);
                failed++;
            }
            n++;
        }
    }
    printf("  %d wgmma schedules with extras emulated, %d failed\n", n, failed);
    assert_int_equal(failed, 0);
}

/* The extras can fail: the batch's plane ignored (every block loads plane 0), C not moved to the batch, beta's
 * term dropped, alpha dropped: WRONG_RESULT; unedited OK. */
static void test_extras_planted(void **state)
{
    (void)state;
    cut_gemm g = mkg(72, 136, 200, CUT_GEMM_TN, CUT_DT_FP16);
    cut_gemm_set_extras(&g, 3, 0.5, 0.25);
    const cut_sched s = {.tpl = CUT_GEMM_TPL_WGMMA, .k = {128, 2, 1, 2, 1, 1, 1}};
    static const char *const plants[][2] = {
        {NULL, NULL},
        {"64 * j, kt * BK, z, FULL(s));", "64 * j, kt * BK, 0, FULL(s));"},
        {"    C += (size_t)z * STRIDE_C;\n", "\n"},
        {"+ BETA * __ldg(Cin + (i)))", ")"},
        {"(ALPHA * (v) +", "((v) +"},
    };
    prepare(&g, 7);
    for (size_t i = 0; i < CUT_ARRAY_LEN(plants); i++) {
        const cut_result res = run(&g, &s, plants[i][0], plants[i][1]);
        printf("  %-50s %s rel.err %.3g %s\n", plants[i][0] ? plants[i][0] : "(unedited)", cut_status_name(res.status),
               res.max_abs_err, res.error);
        assert_int_equal(res.status, plants[i][0] ? CUT_ST_WRONG_RESULT : CUT_ST_OK);
    }
}

/* tf32 NN's variants, hand-picked (bn mi nc st waitd gm): two sets of fragment registers (waitd 1) or one, one
 * or two m64 blocks and consumers, over an odd (7), an even (8) and a single k tile. */
static void test_tf32_nn_variants(void **state)
{
    (void)state;
    const cut_gemm shapes[] = {mkg(167, 136, 200, CUT_GEMM_NN, CUT_DT_TF32),
                               mkg(130, 264, 256, CUT_GEMM_NN, CUT_DT_TF32),
                               mkg(200, 136, 24, CUT_GEMM_NN, CUT_DT_TF32)};
    static const int k[][6] = {{128, 1, 2, 4, 1, 8}, {256, 1, 1, 3, 1, 8}, {128, 2, 1, 4, 0, 16}, {64, 2, 2, 5, 0, 8}};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    for (size_t i = 0; i < CUT_ARRAY_LEN(shapes); i++) {
        prepare(&shapes[i], 60 + i);
        for (size_t j = tu_quick() ? i : 0; j < CUT_ARRAY_LEN(k); j += tu_quick() ? CUT_ARRAY_LEN(k) : 1) {
            cut_sched s = {.tpl = CUT_GEMM_TPL_WGMMA, .k = {k[j][0], k[j][1], k[j][2], k[j][3], k[j][4], k[j][5], 1}};
            cut_err e = {{0}};
            if (cut_gemm_sched_check(&shapes[i], &s, &d, &e) != 0)
                fail_msg("%s", e.msg);
            char what[320];
            describe(&shapes[i], &s, what, sizeof what);
            const cut_result res = run(&shapes[i], &s, NULL, NULL);
            printf("  %-70s %s rel.err %.3g %s\n", what, cut_status_name(res.status), res.max_abs_err, res.error);
            assert_int_equal(res.status, CUT_ST_OK);
            assert_true(res.max_abs_err <= cut_gemm_tolerance(CUT_DT_TF32));
        }
    }
}

/* tf32 TT and TN, hand-picked (bn mi nc st waitd gm) as tf32 NN's variants: WAITD + 2 copies of B for TN, one or
 * two consumers each copying it. The emulation catches TN's copies cycled through one buffer too few (a copy
 * overwritten while a warp's wgmma of an earlier stage still reads it) and TT's rows stored without the fragments'
 * permutation. */
static void test_tf32_tn_tt_variants(void **state)
{
    (void)state;
    const cut_gemm shapes[] = {
        mkg(168, 136, 200, CUT_GEMM_TT, CUT_DT_TF32), mkg(132, 260, 256, CUT_GEMM_TN, CUT_DT_TF32),
        mkg(200, 136, 24, CUT_GEMM_TN, CUT_DT_TF32),  mkg(136, 132, 100, CUT_GEMM_TT, CUT_DT_TF32),
    };
    static const int k[][6] = {{128, 1, 2, 4, 1, 8}, {256, 1, 1, 2, 1, 8}, {128, 2, 1, 3, 0, 16}, {64, 2, 2, 3, 0, 8}};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    for (size_t i = 0; i < CUT_ARRAY_LEN(shapes); i++) {
        prepare(&shapes[i], 70 + i);
        for (size_t j = tu_quick() ? i : 0; j < CUT_ARRAY_LEN(k); j += tu_quick() ? CUT_ARRAY_LEN(k) : 1) {
            cut_sched s = {.tpl = CUT_GEMM_TPL_WGMMA, .k = {k[j][0], k[j][1], k[j][2], k[j][3], k[j][4], k[j][5], 1}};
            cut_err e = {{0}};
            if (cut_gemm_sched_check(&shapes[i], &s, &d, &e) != 0)
                fail_msg("%s", e.msg);
            char what[320];
            describe(&shapes[i], &s, what, sizeof what);
            const cut_result res = run(&shapes[i], &s, NULL, NULL);
            printf("  %-70s %s rel.err %.3g %s\n", what, cut_status_name(res.status), res.max_abs_err, res.error);
            assert_int_equal(res.status, CUT_ST_OK);
            assert_true(res.max_abs_err <= cut_gemm_tolerance(CUT_DT_TF32));
        }
    }
    const cut_gemm tn = mkg(68, 136, 200, CUT_GEMM_TN, CUT_DT_TF32), tt = mkg(68, 136, 200, CUT_GEMM_TT, CUT_DT_TF32);
    const struct {
        const cut_gemm *g;
        int waitd, nc;
        const char *from, *to;
    } plants[] = {
        {&tn, 1, 2, "#define NCOPY (WAITD + 2)", "#define NCOPY (WAITD + 1)"},
        {&tn, 0, 1, "#define NCOPY (WAITD + 2)", "#define NCOPY (WAITD + 1)"},
        {&tt, 1, 1, "#define EROW(w, g, h) NROW(w, g, h)", "#define EROW(w, g, h) w * 16 + g + 8 * h"},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(plants); i++) {
        prepare(plants[i].g, 11);
        const cut_sched s = {.tpl = CUT_GEMM_TPL_WGMMA, .k = {64, 1, plants[i].nc, 3, plants[i].waitd, 1, 1}};
        const cut_result ok = run(plants[i].g, &s, NULL, NULL);
        const cut_result bad = run(plants[i].g, &s, plants[i].from, plants[i].to);
        printf("  %s %-60.60s %s, planted %s rel.err %.3g\n", cut_gemm_layout_name(plants[i].g->layout), plants[i].to,
               cut_status_name(ok.status), cut_status_name(bad.status), bad.max_abs_err);
        assert_int_equal(ok.status, CUT_ST_OK);
        assert_int_equal(bad.status, CUT_ST_WRONG_RESULT);
    }
}

/* The emulation can fail: the same schedule with a bug planted in the emulated TMA swizzle (the 64-byte pattern where
 * the map says 128: the descriptors read what the TMA unit would have written), in the GPU text's A descriptor (the
 * stride between 8-row groups), in the stage release (a stage freed before the wgmma that reads it completes: the
 * deferred wgmma then reads the next k tile), in the epilogue's column, is WRONG_RESULT; unedited it passes. tf32
 * NN too: its fragments loaded without the swizzle, its epilogue without the row permutation of the loads; TN's A
 * read without wgmma's A-transpose flag. */
static void test_planted_bugs_caught(void **state)
{
    (void)state;
    const cut_gemm nn = mkg(67, 136, 200, CUT_GEMM_NN, CUT_DT_FP16), tn = mkg(67, 136, 200, CUT_GEMM_NN, CUT_DT_TF32);
    const cut_gemm ta = mkg(72, 136, 200, CUT_GEMM_TN, CUT_DT_FP16);
    const cut_sched s = {.tpl = CUT_GEMM_TPL_WGMMA, .k = {128, 1, 1, 2, 0, 1, 1}};
    const struct {
        const cut_gemm *g;
        const char *from, *to;
    } plants[] = {
        {&nn, NULL, NULL},
        {&nn, "emu_swizzle(dst + i1 * row + i0 * eb, span)", "emu_swizzle(dst + i1 * row + i0 * eb, span / 2)"},
        {&nn, "(row0 + i * 64) * 128 + kk * 32, 16, 1024)", "(row0 + i * 64) * 128 + kk * 32, 16, 2048)"},
        {&nn, "            wgmma_wait<0>();\n            if (lane == 0)\n                RELEASE(s);",
         "            if (lane == 0)\n                RELEASE(s);\n            wgmma_wait<0>();"},
        {&nn, "const int c = n0 + 8 * j + 2 * (lane % 4);", "const int c = n0 + 8 * j + 2 * (lane % 4) + 1;"},
        {&tn, NULL, NULL},
        {&tn, "^ ((k) % 8)) << 4)", "^ 0) << 4)"},
        {&tn, "const int c = n0 + row0 + i * 64 + NROW(warp, lane / 4, h);",
         "const int c = n0 + row0 + i * 64 + 16 * warp + lane / 4 + 8 * h;"},
        {&ta, NULL, NULL},
        {&ta, "da, 0, db, 1, 1, 1, 1, 1)", "da, 0, db, 0, 1, 1, 1, 1)"}, /* A read K-major: no transpose flag */
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(plants); i++) {
        if (i == 0 || plants[i].g != plants[i - 1].g)
            prepare(plants[i].g, 5);
        const cut_result res = run(plants[i].g, &s, plants[i].from, plants[i].to);
        printf("  %s %-60.60s %s rel.err %.3g %s\n", cut_dtype_name(plants[i].g->dtype),
               plants[i].from ? plants[i].from : "(unedited)", cut_status_name(res.status), res.max_abs_err,
               res.error);
        assert_int_equal(res.status, plants[i].from ? CUT_ST_WRONG_RESULT : CUT_ST_OK);
    }
}

/* cl=2 (multicast across the blocks of a cluster) is the GPU's: the emulation runner refuses it with its reason. */
static void test_cluster_refused(void **state)
{
    (void)state;
    const cut_gemm g = mkg(200, 136, 64, CUT_GEMM_NT, CUT_DT_BF16);
    prepare(&g, 3);
    const cut_result res = run(&g, &(cut_sched){.tpl = CUT_GEMM_TPL_WGMMA, .k = {128, 1, 1, 2, 1, 1, 2}}, NULL, NULL);
    printf("  cl=2: %s: %s\n", cut_status_name(res.status), res.error);
    assert_int_equal(res.status, CUT_ST_INVALID);
    assert_non_null(strstr(res.error, "cluster"));
}

/* The emulated mbarrier keeps the PTX ISA's rules: an arrival on a phase whose arrivals are all in (it waits for its
 * bytes) fails the launch with that sentence; a consumer that waits for a phase nobody completes (the producer's
 * copies planted away) deadlocks the block, and the launch ends with that sentence instead of hanging. */
static void test_mbarrier_rules(void **state)
{
    (void)state;
    const cut_gemm g = mkg(70, 64, 72, CUT_GEMM_NT, CUT_DT_FP16);
    const cut_sched s = {.tpl = CUT_GEMM_TPL_WGMMA, .k = {64, 1, 1, 2, 1, 1, 1}};
    prepare(&g, 9);
    cut_result res = run(&g, &s, "mbar_expect_tx(FULL(s), STAGE_BYTES);",
                         "mbar_expect_tx(FULL(s), STAGE_BYTES); mbar_arrive(FULL(s));");
    printf("  an arrival too many: %s: %s\n", cut_status_name(res.status), res.error);
    assert_int_equal(res.status, CUT_ST_LAUNCH_ERROR);
    assert_non_null(strstr(res.error, "no pending arrival"));
    res = run(&g, &s, "mbar_expect_tx(FULL(s), STAGE_BYTES);", "mbar_expect_tx(FULL(s), STAGE_BYTES + 16);");
    printf("  bytes never landing: %s: %s\n", cut_status_name(res.status), res.error);
    assert_int_equal(res.status, CUT_ST_LAUNCH_ERROR);
    assert_non_null(strstr(res.error, "deadlocked"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_schedules),
        cmocka_unit_test(test_extras),
        cmocka_unit_test(test_extras_planted),
        cmocka_unit_test(test_tf32_nn_variants),
        cmocka_unit_test(test_tf32_tn_tt_variants),
        cmocka_unit_test(test_planted_bugs_caught),
        cmocka_unit_test(test_cluster_refused),
        cmocka_unit_test(test_mbarrier_rules),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
