/* "mma" GEMM template (cp.async pipeline -> ldmatrix -> mma.sync; fp16, bf16, tf32; NN and NT): applicability,
 * refusals with their sentences, sampling and mutation, the launch configuration, the shared-memory swizzle
 * (bijection, conflict-free ldmatrix phases and cp.async stores), and random schedules of every dtype x layout
 * compiled with NVRTC for sm_90 without spills. The kernels use inline PTX, so they cannot run under the host
 * emulation: their numerics are checked on the GPU (test_gpu_gemm and bench/gemm_sample). */
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
#include "cutune/util.h"
#include "ops/gemm/mma.h"
#include "nvrtc_testutil.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cut_gemm mkg(int m, int n, int k, cut_gemm_layout l, cut_dtype dt)
{
    cut_gemm g = {.m = m, .n = n, .k = k, .layout = l, .dtype = dt};
    return g;
}

/* bm bn bk wm wn stages swizzle group_m cpw */
static cut_sched mks(int bm, int bn, int bk, int wm, int wn, int stages, int swz, int group_m, int cpw)
{
    cut_sched s = {.tpl = CUT_GEMM_TPL_MMA, .k = {bm, bn, bk, wm, wn, stages, swz, group_m, cpw}};
    return s;
}

static const cut_gemm_template *tpl(void)
{
    const cut_gemm_template *t = cut_gemm_template_get(CUT_GEMM_TPL_MMA);
    assert_non_null(t);
    assert_string_equal(t->name, "mma");
    return t;
}

/* ---- space --------------------------------------------------------------------------------------------- */

static void expect_refusal(const cut_gemm *g, cut_sched s, const char *words)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_err e = {{0}};
    if (cut_gemm_sched_check(g, &s, &d, &e) == 0) {
        char desc[256];
        cut_gemm_sched_describe(&s, desc, sizeof desc);
        fail_msg("accepted: %s (expected a refusal about '%s')", desc, words);
    }
    printf("  refused: %s\n", e.msg);
    if (!strstr(e.msg, words))
        fail_msg("refusal '%s' does not mention '%s'", e.msg, words);
}

static void test_applies(void **state)
{
    (void)state;
    const cut_gemm_template *t = tpl();
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_err why = {{0}};
    assert_int_equal(t->nknobs, CUT_GM_NKNOBS);
    assert_string_equal(t->knob_name(CUT_GM_STAGES), "stages");
    assert_string_equal(t->knob_name(CUT_GM_NKNOBS), "?");
    for (int dt = 0; dt < CUT_DT_COUNT; dt++) {
        cut_gemm g = mkg(1024, 1024, 1024, CUT_GEMM_NN, (cut_dtype)dt);
        assert_int_equal(t->applies(&g, &d, &why), dt != CUT_DT_FP32);
    }
    cut_gemm g = mkg(1024, 1024, 1024, CUT_GEMM_NT, CUT_DT_FP32);
    assert_int_equal(t->applies(&g, &d, &why), 0);
    printf("  fp32: %s\n", why.msg);
    assert_non_null(strstr(why.msg, "fp32"));
    cut_sched s;
    cut_rng r;
    cut_rng_seed(&r, 1);
    cut_err e = {{0}};
    assert_int_equal(cut_gemm_sched_sample_valid(&g, &d, CUT_GEMM_TPL_MMA, &r, &s, 10, &e), -1);
    assert_non_null(strstr(e.msg, "fp32"));
    g.dtype = CUT_DT_FP16;
    d.sm_major = 7, d.sm_minor = 5;
    assert_int_equal(t->applies(&g, &d, &why), 0);
    assert_non_null(strstr(why.msg, "sm_80"));
    /* the codegen refuses fp32 as well */
    cut_kernel_src ks;
    g.dtype = CUT_DT_FP32;
    assert_int_equal(cut_codegen_gemm(&g, &(cut_sched){.tpl = CUT_GEMM_TPL_MMA, .k = {128, 128, 32, 64, 64, 3, 1, 8,
                                                                                         16}},
                                      &ks, &e),
                     -1);
    assert_non_null(strstr(e.msg, "fp32"));
    cut_kernel_src_free(&ks);
}

static void test_check_refuses(void **state)
{
    (void)state;
    cut_gemm big = mkg(4096, 4096, 4096, CUT_GEMM_NN, CUT_DT_FP16);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_err e = {{0}};
    cut_sched ok = mks(128, 128, 32, 64, 64, 3, 1, 8, 16);
    if (cut_gemm_sched_check(&big, &ok, &d, &e) != 0)
        fail_msg("%s", e.msg);
    /* 4 x (256 + 256) x 64 x 2 bytes = 262144 > 227 KiB */
    expect_refusal(&big, mks(256, 256, 64, 64, 64, 4, 1, 8, 16), "262144 bytes of shared memory");
    /* 16 warps of 64x64 warp tiles: 128 accumulators each, 512 threads */
    expect_refusal(&big, mks(256, 256, 32, 64, 64, 2, 1, 8, 16), "registers");
    /* 256x256 of 32x32 warp tiles: 64 warps */
    expect_refusal(&big, mks(256, 256, 32, 32, 32, 2, 1, 8, 16), "64 warps");
    expect_refusal(&big, mks(64, 64, 32, 64, 64, 2, 1, 8, 16), "1 warps");
    expect_refusal(&big, mks(96, 128, 32, 32, 32, 2, 1, 8, 16), "not one of its allowed values");
    expect_refusal(&big, mks(128, 128, 32, 32, 32, 5, 1, 8, 16), "not one of its allowed values");
    expect_refusal(&big, mks(128, 128, 32, 32, 32, 3, 1, 2, 16), "not one of its allowed values");
    cut_gemm tf = big;
    tf.dtype = CUT_DT_TF32; /* tf32's BK is 16 or 32 (rows of 64 or 128 bytes) */
    expect_refusal(&tf, mks(128, 128, 64, 32, 32, 2, 1, 8, 16), "16 or 32 for tf32");
    cut_gemm odd = mkg(1024, 1024, 1001, CUT_GEMM_NT, CUT_DT_BF16); /* 2002-byte rows: not even 4-byte aligned */
    expect_refusal(&odd, ok, "multiple of 4 bytes");
    cut_gemm k1004 = mkg(1024, 1024, 1004, CUT_GEMM_NT, CUT_DT_FP16); /* 2008-byte rows: 8-byte aligned */
    expect_refusal(&k1004, ok, "cp.async width 16 bytes");
    cut_sched w8 = mks(128, 128, 32, 64, 32, 3, 1, 8, 8);
    assert_int_equal(cut_gemm_sched_check(&k1004, &w8, &d, &e), 0);
    cut_gemm n_odd = mkg(1024, 1001, 1024, CUT_GEMM_NN, CUT_DT_FP16); /* NN: B's rows are N long */
    expect_refusal(&n_odd, ok, "multiple of 4 bytes");
    n_odd.layout = CUT_GEMM_NT; /* NT: B's rows are K long, N is free */
    assert_int_equal(cut_gemm_sched_check(&n_odd, &ok, &d, &e), 0);
    cut_gemm tiny = mkg(16, 16, 16, CUT_GEMM_NN, CUT_DT_FP16);
    expect_refusal(&tiny, ok, "far exceeds");
    cut_gemm bad = mkg(0, 16, 16, CUT_GEMM_NN, CUT_DT_FP16);
    expect_refusal(&bad, ok, "positive");
    /* the limit follows the device: 4 x (256 + 128) x 64 x 2 = 196608 bytes fit sm_90's 227 KiB, not sm_80's 163 */
    cut_sched deep = mks(256, 128, 64, 64, 64, 4, 1, 8, 16);
    assert_int_equal(cut_gemm_sched_check(&big, &deep, &d, &e), 0);
    d.sm_major = 8, d.sm_minor = 0;
    assert_int_equal(cut_gemm_sched_check(&big, &deep, &d, &e), -1);
    assert_non_null(strstr(e.msg, "196608 bytes"));
}

static void test_sampled_valid_and_mutations(void **state)
{
    (void)state;
    const cut_dtype dts[] = {CUT_DT_FP16, CUT_DT_BF16, CUT_DT_TF32};
    const int dims[][3] = {{4096, 4096, 4096}, {1000, 1000, 1000}, {333, 250, 130}, {512, 512, 512}};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 11);
    cut_err e = {{0}};
    int cpw_seen[17] = {0}, mutated = 0, mutated_valid = 0;
    const cut_gemm_template *t = tpl();
    for (size_t di = 0; di < CUT_ARRAY_LEN(dts); di++)
        for (int l = 0; l < 2; l++)
            for (size_t si = 0; si < CUT_ARRAY_LEN(dims); si++) {
                cut_gemm g = mkg(dims[si][0], dims[si][1], dims[si][2], (cut_gemm_layout)l, dts[di]);
                for (int i = 0; i < 100; i++) {
                    cut_sched s;
                    if (cut_gemm_sched_sample_valid(&g, &d, CUT_GEMM_TPL_MMA, &r, &s, 1000, &e) != 0)
                        fail_msg("%s", e.msg);
                    assert_int_equal(s.tpl, CUT_GEMM_TPL_MMA);
                    cut_gemm_geom gm;
                    t->geometry(&g, &s, &gm);
                    assert_true(gm.threads >= 64 && gm.threads <= 512 && gm.smem_bytes <= 227 * 1024);
                    assert_true(gm.regs_est <= 255 && gm.tensor_cores == 1);
                    assert_int_equal(gm.elem_bytes, dts[di] == CUT_DT_TF32 ? 4 : 2);
                    assert_true((long)gm.grid[0] * s.k[CUT_GM_BN] >= g.n && (long)gm.grid[1] * s.k[CUT_GM_BM] >= g.m);
                    cpw_seen[s.k[CUT_GM_CPW]]++;
                    for (int j = 0; j < 3; j++) {
                        t->mutate(&g, &d, &r, &s);
                        mutated++;
                        if (cut_gemm_sched_check(&g, &s, &d, &e) != 0)
                            break;
                        mutated_valid++;
                    }
                }
            }
    printf("  cp.async widths 4/8/16 drawn %d/%d/%d times; %d of %d mutations valid\n", cpw_seen[4], cpw_seen[8],
           cpw_seen[16], mutated_valid, mutated);
    assert_true(cpw_seen[4] > 0 && cpw_seen[8] > 0 && cpw_seen[16] > cpw_seen[8]);
    assert_true(mutated_valid * 2 > mutated); /* mostly valid */
}

static void test_codegen_launch_and_banner(void **state)
{
    (void)state;
    cut_gemm g = mkg(1000, 999, 1000, CUT_GEMM_NT, CUT_DT_BF16);
    cut_sched s = mks(128, 256, 64, 64, 64, 3, 1, 8, 16);
    cut_kernel_src ks;
    cut_err e = {{0}};
    if (cut_codegen_gemm(&g, &s, &ks, &e) != 0)
        fail_msg("%s", e.msg);
    assert_string_equal(ks.entry, "cut_gemm");
    assert_int_equal(ks.grid[0], 4); /* ceil(999 / 256) */
    assert_int_equal(ks.grid[1], 8); /* ceil(1000 / 128) */
    assert_int_equal(ks.grid[2], 1);
    assert_int_equal(ks.block[0], 8 * 32);
    assert_int_equal(ks.smem_dynamic, 3 * (128 + 256) * 64 * 2);
    assert_int_equal(ks.uses_inline_ptx, 0); /* its PTX has an emulation under CUT_EMU (as igemm_tc's) */
    assert_int_equal(ks.arch_a, 0);
    assert_int_equal(ks.ntma, 0);
    assert_non_null(strstr(ks.src, "gemm_nt_bf16_M_1000_N_999_K_1000"));
    assert_non_null(strstr(ks.src, "mma bm=128 bn=256 bk=64 wm=64 wn=64 stages=3 swizzle=1 group_m=8 cpw=16"));
    assert_non_null(strstr(ks.src, "cut_gemm(const T *__restrict__ A, const T *__restrict__ B, float *"));
    assert_non_null(strstr(ks.src, "#define DT 1"));
    cut_kernel_src_free(&ks);
}

/* ---- swizzle ------------------------------------------------------------------------------------------- */

/* 16-byte bank group (0..7) of chunk `phys` of row `row` in a tile of cpr chunks per row. */
static int bank_group(int row, int phys, int cpr) { return (row * cpr + phys) % 8; }

/* Distinct bank groups among the 8 chunks; 8 = conflict-free. */
static int distinct8(const int *grp)
{
    int seen = 0;
    for (int i = 0; i < 8; i++)
        seen |= 1 << grp[i];
    return __builtin_popcount((unsigned)seen);
}

static void test_swizzle_bijective_and_conflict_free(void **state)
{
    (void)state;
    const int cprs[] = {4, 8, 16, 32}; /* rows of 64, 128, 256, 512 bytes (all the template makes) */
    for (size_t ci = 0; ci < CUT_ARRAY_LEN(cprs); ci++) {
        const int cpr = cprs[ci], rows = 64;
        int worst_plain = 8;
        /* a bijection within a stage: every (row, chunk) lands on a distinct slot of the same row */
        for (int r = 0; r < rows; r++) {
            int seen[32] = {0};
            for (int c = 0; c < cpr; c++) {
                const int p = cut_gemm_mma_swz(r, c, cpr, 1);
                assert_true(p >= 0 && p < cpr);
                assert_int_equal(seen[p]++, 0);
            }
        }
        /* ldmatrix phases: eight rows r0..r0+7 (r0 a multiple of 8: every ldmatrix address group starts there)
         * at one logical chunk. Also the transposed NN B reads (rows = k) have this shape. */
        for (int r0 = 0; r0 < rows; r0 += 8)
            for (int c = 0; c < cpr; c++) {
                int g1[8], g0[8];
                for (int i = 0; i < 8; i++) {
                    g1[i] = bank_group(r0 + i, cut_gemm_mma_swz(r0 + i, c, cpr, 1), cpr);
                    g0[i] = bank_group(r0 + i, cut_gemm_mma_swz(r0 + i, c, cpr, 0), cpr);
                }
                assert_int_equal(distinct8(g1), 8);
                worst_plain = distinct8(g0) < worst_plain ? distinct8(g0) : worst_plain;
            }
        /* cp.async stores: eight consecutive 16-byte units of the row-major walk (unit u: row u / cpr, chunk
         * u % cpr), starting at a multiple of 8 (a quarter warp) */
        for (int u0 = 0; u0 < rows * cpr; u0 += 8) {
            int g[8];
            for (int i = 0; i < 8; i++) {
                const int u = u0 + i, r = u / cpr;
                g[i] = bank_group(r, cut_gemm_mma_swz(r, u % cpr, cpr, 1), cpr);
            }
            assert_int_equal(distinct8(g), 8);
        }
        printf("  %d chunks per row: swizzled phases conflict-free; plain rows reach %d bank groups of 8\n", cpr,
               worst_plain);
        assert_true(worst_plain < 8); /* the check can tell */
    }
}


/* ---- host emulation ---------------------------------------------------------------------------------------- */

/* Bits of v in the dtype's storage (v is exactly representable: a multiple of 1/64 in [-1, 1]). */
static uint16_t to_half_bits(float v)
{
    uint32_t x;
    memcpy(&x, &v, 4);
    if ((x & 0x7fffffffu) == 0)
        return (uint16_t)(x >> 16);
    const uint32_t sign = x >> 31, exp = (x >> 23) & 0xff, mant = x & 0x7fffff;
    return (uint16_t)(sign << 15 | (exp - 127 + 15) << 10 | mant >> 13);
}

static uint16_t to_bf16_bits(float v)
{
    uint32_t x;
    memcpy(&x, &v, 4);
    return (uint16_t)(x >> 16);
}

/* Runs the generated kernel of s under the host emulation (the PTX replaced by its documented semantics) on inputs
 * k/64 (exact in every dtype, and every partial sum exact in fp32): returns the relative error against the
 * double reference, which should be 0. */
static double emulate(const cut_gemm *g, const cut_sched *s, const char *from, const char *to, const char *dir,
                      uint64_t seed)
{
    cut_kernel_src ks;
    cut_err e = {{0}};
    if (cut_codegen_gemm(g, s, &ks, &e) != 0)
        fail_msg("%s", e.msg);
    if (from) /* a planted bug: the first occurrence of from becomes to */
        assert_int_equal(tu_plant(&ks.src, from, to), 0);
    cut_emu_kernel *k = NULL;
    if (cut_emu_compile(ks.src, ks.entry, dir, &k, &e) != 0)
        fail_msg("host compile: %s", e.msg);
    const size_t na = cut_gemm_a_elems(g), nb = cut_gemm_b_elems(g), nc = cut_gemm_c_elems(g);
    float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4);
    double *ref = malloc(nc * sizeof *ref);
    void *da = malloc(na * 4 + 64), *db = malloc(nb * 4 + 64);
    cut_rng r;
    cut_rng_seed(&r, seed);
    for (size_t i = 0; i < na; i++)
        a[i] = (float)((int)cut_rng_below(&r, 129) - 64) / 64.0f;
    for (size_t i = 0; i < nb; i++)
        b[i] = (float)((int)cut_rng_below(&r, 129) - 64) / 64.0f;
    for (size_t i = 0; i < nc; i++)
        c[i] = NAN;
    for (size_t i = 0; i < na; i++)
        g->dtype == CUT_DT_TF32 ? (void)(((float *)da)[i] = a[i])
                                : (void)(((uint16_t *)da)[i] = g->dtype == CUT_DT_FP16 ? to_half_bits(a[i])
                                                                                     : to_bf16_bits(a[i]));
    for (size_t i = 0; i < nb; i++)
        g->dtype == CUT_DT_TF32 ? (void)(((float *)db)[i] = b[i])
                                : (void)(((uint16_t *)db)[i] = g->dtype == CUT_DT_FP16 ? to_half_bits(b[i])
                                                                                     : to_bf16_bits(b[i]));
    cut_gemm_reference(g, a, b, ref);
    void *args[3] = {da, db, c};
    if (cut_emu_launch(k, ks.grid, ks.block, args, 3, &e) != 0)
        fail_msg("emulated launch: %s", e.msg);
    const double err = cut_gemm_rel_error(c, ref, nc);
    cut_emu_kernel_free(k);
    cut_kernel_src_free(&ks);
    free(a), free(b), free(c), free(ref), free(da), free(db);
    return err;
}

/* Random schedules of every dtype x layout on small shapes with tails in M, N and K (and narrow cp.async widths
 * where the rows are not 16-byte aligned), plus the planted check that a wrong kernel is caught. */
static void test_emulated_random(void **state)
{
    (void)state;
    const cut_dtype dts[] = {CUT_DT_FP16, CUT_DT_BF16, CUT_DT_TF32};
    const int dims[][3] = {{100, 130, 70}, {130, 72, 96}, {64, 64, 64}, {200, 190, 136}};
    const char *env = getenv("CUTUNE_MMA_EMULATED"); /* per dtype x layout; more for a thorough local run */
    const int per = env && atoi(env) > 0 ? atoi(env) : tu_quick() ? 1 : 3;
    char *dir = tu_tmpdir("gemm_mma_emu");
    assert_non_null(dir);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 41);
    int n = 0, failed = 0;
    double worst = 0.0;
    for (size_t di = 0; di < CUT_ARRAY_LEN(dts); di++)
        for (int l = 0; l < 2; l++)
            for (int i = 0; i < per; i++) {
                const int *dm = dims[(size_t)(2 * l + i + (int)di) % CUT_ARRAY_LEN(dims)];
                cut_gemm g = mkg(dm[0], dm[1], dm[2], (cut_gemm_layout)l, dts[di]);
                cut_sched s;
                cut_err e = {{0}};
                if (cut_gemm_sched_sample_valid(&g, &d, CUT_GEMM_TPL_MMA, &r, &s, 1000, &e) != 0)
                    fail_msg("%s", e.msg);
                const double err = emulate(&g, &s, NULL, NULL, dir, 7 + (uint64_t)n);
                char desc[256], name[128];
                cut_gemm_sched_describe(&s, desc, sizeof desc);
                cut_gemm_name(&g, name, sizeof name);
                printf("  %s %s: rel error %.3g\n", name, desc, err);
                worst = err > worst ? err : worst;
                failed += !(err <= 1e-6);
                n++;
            }
    printf("  %d random schedules emulated, %d failed, worst rel error %.3g\n", n, failed, worst);
    assert_int_equal(failed, 0);
    free(dir);
}

/* The emulated comparison catches planted index bugs: A fragments from the wrong k chunk, a swizzle applied on
 * the store side only, B of NN read without the transposition, the M tail's rows left unwritten. */
static void test_emulated_planted_bugs_caught(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("gemm_mma_plant");
    assert_non_null(dir);
    const cut_gemm nn = mkg(100, 130, 70, CUT_GEMM_NN, CUT_DT_FP16), nt = mkg(130, 72, 96, CUT_GEMM_NT, CUT_DT_TF32);
    const cut_sched s = mks(64, 64, 32, 32, 32, 3, 1, 1, 4);
    const struct {
        const cut_gemm *g;
        const char *from, *to;
    } plants[] = {
        {&nn, NULL, NULL},
        {&nn, "c = kk * 2 + (lane >> 4);", "c = kk * 2;"},
        {&nn, "ldsm_x4(af[mi], sa + r * A_ROWB + swz(r, c, A_CPR) * 16);", "ldsm_x4(af[mi], sa + r * A_ROWB + c * 16);"},
        {&nn, "ldsm_x4_trans(t, sb", "ldsm_x4(t, sb"},
        {&nn, "if (M % BM != 0 && m >= M)", "if (m >= M - 3)"},
        {&nt, NULL, NULL},
        {&nt, "c = kk * 2 + ((lane >> 3) & 1);", "c = kk * 2;"},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(plants); i++) {
        const double err = emulate(plants[i].g, &s, plants[i].from, plants[i].to, dir, 5);
        printf("  %s: rel error %.3g\n", plants[i].from ? plants[i].from : "(unedited)", err);
        if (plants[i].from)
            assert_true(!(err <= 1e-2));
        else
            assert_true(err <= 1e-6);
    }
    free(dir);
}

/* ---- NVRTC ----------------------------------------------------------------------------------------------- */

/* count random valid schedules of dtype dt, alternating layouts and shapes (tails included), compiled in one
 * batch for sm_90: every one must compile with no spills and <= 255 registers, and the source must carry the
 * tensor-core, cp.async and (16-bit) ldmatrix instructions. */
static void compile_random(cut_dtype dt, int count, uint64_t seed)
{
    const int dims[][3] = {{4096, 4096, 4096}, {1000, 1000, 1000}, {1024, 2048, 3072}, {333, 250, 130},
                           {1000, 999, 1000}, {512, 512, 512}};
    const int ndims = (int)CUT_ARRAY_LEN(dims);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, seed);
    cut_err e = {{0}};
    cut_kernel_src *ks = calloc((size_t)count, sizeof *ks);
    int *est = calloc((size_t)count, sizeof *est);
    for (int i = 0; i < count; i++) {
        const cut_gemm_layout l = (cut_gemm_layout)(i % 2);
        const int *dm = dims[(i / 2) % ndims];
        if (l == CUT_GEMM_NN && dt != CUT_DT_TF32 && dm[1] % 2) /* NN 16-bit needs even N: use its NT twin */
            dm = dims[1];
        cut_gemm g = mkg(dm[0], dm[1], dm[2], l, dt);
        cut_sched s;
        if (cut_gemm_sched_sample_valid(&g, &d, CUT_GEMM_TPL_MMA, &r, &s, 1000, &e) != 0)
            fail_msg("%s", e.msg);
        if (cut_codegen_gemm(&g, &s, &ks[i], &e) != 0)
            fail_msg("%s", e.msg);
        cut_gemm_geom gm;
        cut_gemm_template_get(CUT_GEMM_TPL_MMA)->geometry(&g, &s, &gm);
        est[i] = gm.regs_est;
        assert_non_null(strstr(ks[i].src, dt == CUT_DT_TF32 ? "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
                                                            : "mma.sync.aligned.m16n8k16.row.col.f32"));
        assert_non_null(strstr(ks[i].src, "cp.async"));
        assert_non_null(strstr(ks[i].src, "ldmatrix.sync.aligned.m8n8.x4"));
    }
    char label[64];
    snprintf(label, sizeof label, "%s (nn and nt)", cut_dtype_name(dt));
    tu_compile_all(label, ks, est, count);
    for (int i = 0; i < count; i++)
        cut_kernel_src_free(&ks[i]);
    free(ks), free(est);
}

static int compile_count(void)
{
    const char *n = getenv("CUTUNE_MMA_COMPILES"); /* per dtype; more for a thorough local run */
    return n && atoi(n) > 0 ? atoi(n) : tu_quick() ? 8 : 48;
}

static void test_nvrtc_random_fp16(void **state)
{
    (void)state;
    compile_random(CUT_DT_FP16, compile_count(), 31);
}

static void test_nvrtc_random_bf16(void **state)
{
    (void)state;
    compile_random(CUT_DT_BF16, compile_count(), 32);
}

static void test_nvrtc_random_tf32(void **state)
{
    (void)state;
    compile_random(CUT_DT_TF32, compile_count(), 33);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_applies),
        cmocka_unit_test(test_check_refuses),
        cmocka_unit_test(test_sampled_valid_and_mutations),
        cmocka_unit_test(test_codegen_launch_and_banner),
        cmocka_unit_test(test_swizzle_bijective_and_conflict_free),
        cmocka_unit_test(test_emulated_random),
        cmocka_unit_test(test_emulated_planted_bugs_caught),
        cmocka_unit_test(test_nvrtc_random_fp16),
        cmocka_unit_test(test_nvrtc_random_bf16),
        cmocka_unit_test(test_nvrtc_random_tf32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
