/* Persistent kernels in the Hopper wgmma GEMM template (knob pp, src/ops/gemm/wgmma_persist.c): a block walks the
 * launch's tiles (every plane of a batch), its producer through one ring of stages across tiles; pp 1 cooperative,
 * pp 2 ping-pong (each consumer a tile of its own, the main loops taking turns). Under the host emulator, pp
 * schedules of fp16/bf16 (NN, NT, TN, TT) and tf32 NT on tail shapes match the double reference on grids of 1, 2
 * and 3 blocks (so that a block takes many tiles and the ring wraps across them) and on the kernel's own grid, with
 * a batch and alpha/beta too; planted bugs (the ring restarted at every tile, the last stage never released, the
 * plane of a tile lost, a consumer skipping tiles, ping-pong's turn left out) are caught, as wrong results or as a
 * deadlock the emulator reports. The space: pp where the tiles fill the SMs more than once and the kernel reads A from shared memory,
 * never with a cluster or split-K; each refusal says why; a record from before the knobs reads as pp 0, splitk 1.
 * Random pp schedules compile for sm_90a without spills. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/codegen.h"
#include "cutune/compile.h"
#include "cutune/emu.h"
#include "cutune/gemm.h"
#include "cutune/gemm_record.h"
#include "cutune/gemm_space.h"
#include "cutune/measure.h"
#include "cutune/util.h"
#include "gemm_emu_testutil.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_NC = 2, K_WAITD = 4, K_CL = 6, K_SK = 7, K_PP = 8 }; /* bn mi nc st waitd gm cl splitk pp */

static int setup(void **state)
{
    (void)state;
    return gemu_open("gemm_wgmma_persist");
}

/* A random valid schedule with pp = want (1 or 2) of a large GEMM of g's dtype and layout: one that the space
 * offers a real shape, emulated on g's small one (codegen's rules do not depend on the device). */
static cut_sched pp_sched(const cut_gemm *g, cut_rng *r, int want)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    const cut_gemm big = mkg(4096, 4096, 4096, g->layout, g->dtype);
    for (int tries = 0; tries < 4000; tries++) {
        cut_sched s;
        cut_err e = {{0}};
        if (cut_gemm_sched_sample_valid(&big, &d, CUT_GEMM_TPL_WGMMA, r, &s, 1000, &e) != 0)
            fail_msg("%s", e.msg);
        if (s.k[K_PP] == want)
            return s;
    }
    fail_msg("no pp=%d schedule sampled", want);
    return (cut_sched){0};
}

/* Schedule j of a shape: pp 1 and 2 in turn, on grids of 1, 2, 3 and the kernel's own blocks in turn. */
static cut_sched pick_pp(const cut_gemm *g, cut_rng *r, int j, unsigned *grid_x)
{
    static const unsigned grids[] = {1, 2, 3, 0};
    *grid_x = grids[j % CUT_ARRAY_LEN(grids)];
    return pp_sched(g, r, 1 + j % 2);
}

/* Tail shapes (M, N, K off every tile) of every layout in fp16/bf16 and of tf32 NT (the plain kernel's tf32). */
static void test_pp_emulated(void **state)
{
    (void)state;
    const cut_gemm shapes[] = {
        mkg(200, 136, 264, CUT_GEMM_NN, CUT_DT_FP16), mkg(136, 200, 200, CUT_GEMM_NT, CUT_DT_BF16),
        mkg(200, 72, 136, CUT_GEMM_TN, CUT_DT_FP16),  mkg(72, 264, 200, CUT_GEMM_TT, CUT_DT_BF16),
        mkg(200, 136, 100, CUT_GEMM_NT, CUT_DT_TF32),
    };
    assert_int_equal(gemu_emulate(shapes, (int)CUT_ARRAY_LEN(shapes), tu_quick() ? 2 : 4, 5100, pick_pp), 0);
}

/* A batch (tile_of's planes: C and Cin moved per tile) and alpha/beta. */
static void test_pp_extras(void **state)
{
    (void)state;
    cut_gemm shapes[] = {mkg(136, 72, 200, CUT_GEMM_NN, CUT_DT_FP16), mkg(72, 136, 136, CUT_GEMM_TN, CUT_DT_BF16),
                         mkg(72, 72, 100, CUT_GEMM_NT, CUT_DT_TF32)};
    for (size_t i = 0; i < CUT_ARRAY_LEN(shapes); i++)
        cut_gemm_set_extras(&shapes[i], i == 1 ? 1 : 3, 0.5, i == 2 ? 0.0 : 0.25);
    assert_int_equal(gemu_emulate(shapes, (int)CUT_ARRAY_LEN(shapes), tu_quick() ? 2 : 4, 5200, pick_pp), 0);
}

/* Planted bugs, each in a ping-pong and a cooperative kernel on 2 blocks (3 tiles or more each): every tile
 * restarting the ring at step 0 (the parity waits then pass on stale stages, or wait forever), WAITD 1's last
 * stage never released (the producer waits forever: the emulator reports the deadlock), every tile in plane 0,
 * a consumer skipping every other tile of its own (its stages never read: deadlock), and ping-pong's turn left out
 * (with ST 2 and 5 k tiles, consumer 1's first step is two phases of its stage on, so its parity wait passes on the
 * stage's first phase). None may pass. */
static void test_pp_planted(void **state)
{
    (void)state;
    cut_gemm g = mkg(200, 136, 264, CUT_GEMM_NN, CUT_DT_FP16);
    cut_gemm_set_extras(&g, 2, 0.5, 0.25);
    const cut_sched ss[] = {{.tpl = CUT_GEMM_TPL_WGMMA, .k = {64, 1, 2, 2, 1, 1, 1, 1, 2}},
                            {.tpl = CUT_GEMM_TPL_WGMMA, .k = {64, 1, 1, 2, 1, 8, 1, 1, 1}}};
    static const struct {
        const char *from, *to;
        int pp; /* the kernel it applies to (0: both) */
    } plants[] = {
        {NULL, NULL, 0},
        {"#define QS(kt) (j * KT + (kt))", "#define QS(kt) (kt)", 0},
        {"RELEASE(QS(KT - 1) % ST);", "(void)0;", 0},
        {"    z = t / TILES_X;", "    z = 0 * t;", 0},
        {"j += J_STEP, mine++", "j += 2 * J_STEP, mine++", 0},
        {"mbar_wait(TURN(wg - 1), (mine - (wg == 1)) & 1);", "(void)0;", 2},
    };
    prepare(&g, 21);
    for (size_t k = 0; k < CUT_ARRAY_LEN(ss); k++)
        for (size_t i = 0; i < CUT_ARRAY_LEN(plants); i++) {
            if (plants[i].pp && plants[i].pp != ss[k].k[K_PP])
                continue;
            const char *from = plants[i].from;
            const cut_result res = run_grid(&g, &ss[k], from, plants[i].to, 2);
            printf("  pp=%d %-36s %s rel.err %.3g %.100s\n", ss[k].k[K_PP], from ? from : "(unedited)",
                   cut_status_name(res.status), res.max_abs_err, res.error);
            if (!from)
                assert_int_equal(res.status, CUT_ST_OK);
            else
                assert_int_not_equal(res.status, CUT_ST_OK);
        }
}

static void expect_refusal(const cut_gemm *g, cut_sched s, const cut_devlimits *d, const char *words)
{
    cut_err e = {{0}};
    if (cut_gemm_sched_check(g, &s, d, &e) == 0)
        fail_msg("accepted (expected a refusal about '%s')", words);
    printf("  refused: %s\n", e.msg);
    if (!strstr(e.msg, words))
        fail_msg("'%s' does not say '%s'", e.msg, words);
}

/* The space: pp sampled for a large GEMM (ping-pong with 2 consumers, never a cluster or split-K), never for a
 * skinny one or tf32 NN; the refusals; the grid; a record from before the knobs. */
static void test_pp_space(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 44);
    const cut_gemm big = mkg(4096, 4096, 4096, CUT_GEMM_NN, CUT_DT_FP16);
    const cut_gemm skinny = mkg(16, 4096, 4096, CUT_GEMM_NN, CUT_DT_FP16);
    const cut_gemm tnn = mkg(4096, 4096, 4096, CUT_GEMM_NN, CUT_DT_TF32);
    int pp[3] = {0}, pp_skinny = 0, pp_tf32nn = 0;
    cut_err e = {{0}};
    for (int i = 0; i < 300; i++) {
        cut_sched s;
        assert_int_equal(cut_gemm_sched_sample_valid(&big, &d, CUT_GEMM_TPL_WGMMA, &r, &s, 1000, &e), 0);
        assert_true(s.k[K_PP] >= 0 && s.k[K_PP] <= 2);
        pp[s.k[K_PP]]++;
        if (s.k[K_PP]) {
            assert_true(s.k[K_CL] == 1 && s.k[K_SK] == 1);
            assert_true(s.k[K_PP] == 1 || s.k[K_NC] == 2);
        }
        assert_int_equal(cut_gemm_sched_sample_valid(&skinny, &d, CUT_GEMM_TPL_WGMMA, &r, &s, 1000, &e), 0);
        pp_skinny += s.k[K_PP] != 0;
        assert_int_equal(cut_gemm_sched_sample_valid(&tnn, &d, CUT_GEMM_TPL_WGMMA, &r, &s, 1000, &e), 0);
        pp_tf32nn += s.k[K_PP] != 0;
    }
    printf("  4096^3 fp16: pp 0/1/2 %d/%d/%d of 300; 16x4096x4096: pp in %d; tf32 NN: pp in %d\n", pp[0], pp[1],
           pp[2], pp_skinny, pp_tf32nn);
    assert_true(pp[1] >= 30 && pp[2] >= 30 && pp[0] >= 30);
    assert_int_equal(pp_skinny, 0);
    assert_int_equal(pp_tf32nn, 0);

    const cut_sched ok = {.tpl = CUT_GEMM_TPL_WGMMA, .k = {128, 2, 2, 4, 1, 8, 1, 1, 2}};
    assert_int_equal(cut_gemm_sched_check(&big, &ok, &d, &e), 0);
    cut_sched s = ok;
    s.k[K_NC] = 1;
    expect_refusal(&big, s, &d, "ping-pong");
    s = ok, s.k[K_CL] = 2;
    expect_refusal(&big, s, &d, "cluster");
    s = ok, s.k[K_SK] = 2;
    expect_refusal(&big, s, &d, "split-K");
    s = ok, s.k[K_PP] = 3;
    expect_refusal(&big, s, &d, "off its list");
    expect_refusal(&tnn, (cut_sched){.tpl = CUT_GEMM_TPL_WGMMA, .k = {128, 1, 2, 4, 1, 8, 1, 1, 1}}, &d, "registers");
    const cut_gemm one_wave = mkg(1024, 1024, 4096, CUT_GEMM_NN, CUT_DT_FP16); /* 8 x 8 tiles of 128 x 128 */
    expect_refusal(&one_wave, ok, &d, "one wave");
    cut_devlimits pcie = d;
    pcie.sm_count = 114;
    expect_refusal(&big, ok, &pcie, "114 SMs");

    /* the grid: one block an SM, which walks the tiles (the cost model's waves count them); ping-pong's tile is one
     * consumer's (MI m64 blocks) tall */
    cut_gemm_geom ge;
    cut_gemm_tpl_wgmma.geometry(&big, &ok, &ge);
    assert_true(ge.grid[0] == 132 && ge.walked_tiles == 32 * 32 && ge.bm == 128 && ge.bn == 128);
    const cut_sched plain = {.tpl = CUT_GEMM_TPL_WGMMA, .k = {128, 2, 1, 4, 1, 8, 1, 1, 0}};
    cut_gemm_tpl_wgmma.geometry(&big, &plain, &ge);
    assert_true(ge.grid[0] == 32 * 32 && ge.walked_tiles == 0 && ge.bm == 128 && ge.bn == 128);
    cut_kernel_src ks;
    assert_int_equal(cut_codegen_gemm(&big, &ok, &ks, &e), 0);
    assert_true(ks.grid[0] == 132 && ks.grid[1] == 1 && ks.grid[2] == 1);
    assert_non_null(strstr(ks.src, "#define BM 128\n"));
    assert_non_null(strstr(ks.src, "#define PERSIST 2"));
    cut_kernel_src_free(&ks);
    cut_gemm batched = mkg(512, 512, 512, CUT_GEMM_NN, CUT_DT_FP16);
    cut_gemm_set_extras(&batched, 32, 1.0, 0.0); /* 32 planes of 4 x 4 tiles */
    const cut_sched coop = {.tpl = CUT_GEMM_TPL_WGMMA, .k = {128, 1, 2, 4, 1, 8, 1, 1, 1}};
    assert_int_equal(cut_gemm_sched_check(&batched, &coop, &d, &e), 0);
    assert_int_equal(cut_codegen_gemm(&batched, &coop, &ks, &e), 0);
    assert_true(ks.grid[0] == 132 && ks.grid[1] == 1);
    cut_kernel_src_free(&ks);

    /* a record written before splitk and pp existed: splitk 1, pp 0 */
    cJSON *o = cJSON_Parse("{\"tpl\":\"wgmma\",\"bn\":256,\"mi\":1,\"nc\":2,\"st\":3,\"waitd\":0,\"gm\":16,\"cl\":1}");
    assert_non_null(o);
    assert_int_equal(cut_gemm_sched_from_cjson(o, &s, &e), 0);
    assert_true(s.k[K_SK] == 1 && s.k[K_PP] == 0);
    cJSON_Delete(o);
    o = cJSON_Parse("{\"tpl\":\"wgmma\",\"bn\":256,\"mi\":1,\"nc\":2,\"st\":3,\"waitd\":0,\"gm\":16}");
    assert_int_equal(cut_gemm_sched_from_cjson(o, &s, &e), -1);
    assert_non_null(strstr(e.msg, "'cl'"));
    cJSON_Delete(o);
}

/* Random pp schedules of every layout in fp16/bf16 and tf32 NT, some with a batch and alpha/beta, compile for
 * sm_90a: no spills, no wgmma serialized by ptxas. */
static void test_pp_nvrtc(void **state)
{
    (void)state;
    const cut_gemm shapes[] = {
        mkg(4096, 4096, 4096, CUT_GEMM_NN, CUT_DT_FP16), mkg(8192, 8192, 8192, CUT_GEMM_NT, CUT_DT_BF16),
        mkg(4096, 4096, 4096, CUT_GEMM_TN, CUT_DT_FP16), mkg(4096, 2048, 1024, CUT_GEMM_TT, CUT_DT_BF16),
        mkg(4096, 4096, 4096, CUT_GEMM_NT, CUT_DT_TF32), mkg(7384, 7384, 7384, CUT_GEMM_NN, CUT_DT_BF16),
    };
    const int count = tu_quick() ? 18 : 42;
    cut_rng r;
    cut_rng_seed(&r, 5300);
    cut_kernel_src *ks = calloc((size_t)count, sizeof *ks);
    assert_non_null(ks);
    cut_err e = {{0}};
    for (int i = 0; i < count; i++) {
        cut_gemm g = shapes[i % (int)CUT_ARRAY_LEN(shapes)];
        if (i % 4 == 3)
            cut_gemm_set_extras(&g, 2, 0.5, 0.25);
        const cut_sched s = pp_sched(&g, &r, 1 + (i / 2) % 2);
        assert_int_equal(cut_codegen_gemm(&g, &s, &ks[i], &e), 0);
    }
    int rmax = 0;
    const int failed = gemu_compile_sm90a(ks, count, &rmax);
    printf("  %d persistent wgmma schedules compiled for sm_90a, %d failed, at most %d registers\n", count, failed,
           rmax);
    assert_int_equal(failed, 0);
    free(ks);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pp_space),    cmocka_unit_test(test_pp_planted), cmocka_unit_test(test_pp_emulated),
        cmocka_unit_test(test_pp_extras),   cmocka_unit_test(test_pp_nvrtc),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
