/* SIMT GEMM template (issue 6, NN and NT; fp32 math on fp32, tf32, fp16 and bf16 inputs): reference and error measure, knob checks, launch configuration,
 * random schedules compiled with NVRTC for sm_90, random schedules run under host emulation on small shapes with
 * tails against the double reference, and planted wrong kernels that the comparison must catch. */
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
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cut_gemm mkg(int m, int n, int k, cut_gemm_layout l)
{
    cut_gemm g = {.m = m, .n = n, .k = k, .layout = l, .dtype = CUT_DT_FP32};
    return g;
}

/* bm bn bk tm tn vec dbuf pad unroll */
static cut_gemm_sched mks(int bm, int bn, int bk, int tm, int tn, int vec, int dbuf, int pad, int unroll)
{
    cut_gemm_sched s = {.tpl = CUT_GEMM_TPL_SIMT, .k = {bm, bn, bk, tm, tn, vec, dbuf, pad, unroll}};
    return s;
}

static size_t b_elems(const cut_gemm *g) { return (size_t)g->k * (size_t)g->n; }

/* n floats, 64-byte aligned (as device buffers are at least 256-byte aligned); C11 wants the size a multiple of
 * the alignment. Caller frees. */
static float *alloc_floats(size_t n)
{
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes);
    assert_non_null(p);
    return p;
}

static void fill_uniform(float *x, size_t n, cut_rng *r)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(2.0 * cut_rng_double(r) - 1.0);
}

/* ---- reference and error measure ---------------------------------------------------------------------- */

static void test_reference_known_values(void **state)
{
    (void)state;
    /* [[1 2] [3 4]] x [[5 6] [7 8]] = [[19 22] [43 50]]; NT gets the same B transposed. */
    const float a[] = {1, 2, 3, 4}, b_nn[] = {5, 6, 7, 8}, b_nt[] = {5, 7, 6, 8};
    const double want[] = {19, 22, 43, 50};
    double c[4];
    cut_gemm g = mkg(2, 2, 2, CUT_GEMM_NN);
    cut_gemm_reference(&g, a, b_nn, c);
    for (int i = 0; i < 4; i++)
        assert_true(c[i] == want[i]);
    g.layout = CUT_GEMM_NT;
    cut_gemm_reference(&g, a, b_nt, c);
    for (int i = 0; i < 4; i++)
        assert_true(c[i] == want[i]);
    /* 1x3 . 3x1 */
    const float r[] = {1, 2, 3}, col[] = {4, 5, 6};
    g = mkg(1, 1, 3, CUT_GEMM_NN);
    cut_gemm_reference(&g, r, col, c);
    assert_true(c[0] == 32.0);
}

/* A threaded size (>= 1e6 multiply-adds): NN with B and NT with Bᵀ give the same C, and one entry matches a
 * direct dot product. */
static void test_reference_threaded_nn_nt_agree(void **state)
{
    (void)state;
    const int m = 130, n = 97, k = 111;
    cut_rng r;
    cut_rng_seed(&r, 5);
    float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n), *bt = malloc(sizeof(float) * n * k);
    double *c1 = malloc(sizeof(double) * m * n), *c2 = malloc(sizeof(double) * m * n);
    fill_uniform(a, (size_t)m * k, &r);
    fill_uniform(b, (size_t)k * n, &r);
    for (int p = 0; p < k; p++)
        for (int x = 0; x < n; x++)
            bt[(size_t)x * k + p] = b[(size_t)p * n + x];
    cut_gemm g = mkg(m, n, k, CUT_GEMM_NN);
    cut_gemm_reference(&g, a, b, c1);
    g.layout = CUT_GEMM_NT;
    cut_gemm_reference(&g, a, bt, c2);
    for (int i = 0; i < m * n; i++)
        assert_true(fabs(c1[i] - c2[i]) <= 1e-12 * (1.0 + fabs(c1[i])));
    double dot = 0.0;
    for (int p = 0; p < k; p++)
        dot += (double)a[(size_t)77 * k + p] * b[(size_t)p * n + 50];
    assert_true(fabs(c1[77 * n + 50] - dot) <= 1e-12);
    free(a), free(b), free(bt), free(c1), free(c2);
}

static void test_rel_error_and_tolerance(void **state)
{
    (void)state;
    const double ref[] = {3.0, 4.0};
    const float same[] = {3.0f, 4.0f}, off[] = {3.0f, 4.5f}, nan_out[] = {3.0f, NAN}, inf_out[] = {INFINITY, 4.0f};
    assert_true(cut_gemm_rel_error(same, ref, 2) == 0.0);
    assert_true(fabs(cut_gemm_rel_error(off, ref, 2) - 0.1) < 1e-12); /* 0.5 / 5 */
    assert_true(isinf(cut_gemm_rel_error(nan_out, ref, 2)));
    assert_true(isinf(cut_gemm_rel_error(inf_out, ref, 2)));
    const double zero[] = {0.0, 0.0};
    assert_true(fabs(cut_gemm_rel_error(same, zero, 2) - 5.0) < 1e-12); /* ||out|| */
    assert_true(cut_gemm_tolerance(CUT_DT_FP32) == 1e-5);
    assert_true(cut_gemm_tolerance(CUT_DT_TF32) == 2e-3);
    assert_true(cut_gemm_tolerance(CUT_DT_FP16) == 1e-2);
    assert_true(cut_gemm_tolerance(CUT_DT_BF16) == 1e-2);
}

/* ---- space --------------------------------------------------------------------------------------------- */

static void expect_refusal(const cut_gemm *g, cut_gemm_sched s, const char *words)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_err e = {{0}};
    if (cut_gemm_simt_check(g, &s, &d, &e) == 0) {
        char desc[256];
        cut_gemm_simt_describe(&s, desc, sizeof desc);
        fail_msg("accepted: %s (expected a refusal about '%s')", desc, words);
    }
    printf("  refused: %s\n", e.msg);
    if (!strstr(e.msg, words))
        fail_msg("refusal '%s' does not mention '%s'", e.msg, words);
}

static void test_check_refuses(void **state)
{
    (void)state;
    cut_gemm big = mkg(1024, 1024, 1024, CUT_GEMM_NN);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_err e;
    cut_gemm_sched ok = mks(128, 128, 8, 8, 8, 4, 1, 4, 8);
    assert_int_equal(cut_gemm_simt_check(&big, &ok, &d, &e), 0);
    expect_refusal(&big, mks(128, 128, 8, 1, 2, 4, 0, 0, 8), "8192 threads");  /* BM/TM x BN/TN = 128 x 64 */
    expect_refusal(&big, mks(64, 64, 8, 1, 1, 4, 0, 0, 8), "4096 threads");
    expect_refusal(&big, mks(16, 16, 8, 4, 4, 4, 0, 0, 8), "16 threads");
    /* 2 x 32 x (128 + 128 + 8) floats = 67584 bytes */
    expect_refusal(&big, mks(128, 128, 32, 8, 8, 4, 1, 4, 4), "67584 bytes of shared memory");
    /* 32 threads for 64x32 of A and 32x16 of B: 64 + 16 floats each */
    expect_refusal(&big, mks(64, 16, 32, 8, 4, 1, 0, 0, 8), "80 staged floats per thread");
    cut_gemm bad_dt = big;
    bad_dt.dtype = CUT_DT_COUNT;
    expect_refusal(&bad_dt, ok, "unknown GEMM dtype");
    cut_gemm odd = mkg(1024, 1024, 1022, CUT_GEMM_NN); /* K % 4 != 0 */
    expect_refusal(&odd, ok, "vec=4");
    cut_gemm odd_n = mkg(1024, 1022, 1024, CUT_GEMM_NN); /* NN: B's rows are N long */
    expect_refusal(&odd_n, ok, "vec=4");
    odd_n.layout = CUT_GEMM_NT; /* NT: they are K long, so vec=4 is fine */
    assert_int_equal(cut_gemm_simt_check(&odd_n, &ok, &d, &e), 0);
    expect_refusal(&big, mks(64, 64, 8, 4, 4, 4, 0, 0, 16), "unroll=16 exceeds bk=8");
    expect_refusal(&big, mks(64, 64, 8, 16, 4, 4, 0, 0, 8), "not one of its allowed values");
    cut_gemm tiny = mkg(1, 17, 33, CUT_GEMM_NN);
    expect_refusal(&tiny, mks(64, 32, 8, 2, 1, 1, 0, 0, 8), "far exceeds");
    cut_gemm bad = mkg(0, 17, 33, CUT_GEMM_NN);
    expect_refusal(&bad, ok, "positive");
}

static void test_sampled_valid_and_mutations(void **state)
{
    (void)state;
    const cut_gemm shapes[] = {mkg(1024, 1024, 1024, CUT_GEMM_NN), mkg(37, 45, 29, CUT_GEMM_NT),
                               mkg(1, 17, 33, CUT_GEMM_NN), mkg(1000, 777, 515, CUT_GEMM_NT)};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 11);
    cut_err e;
    int vec_seen[5] = {0}, mutated_valid = 0;
    for (size_t si = 0; si < CUT_ARRAY_LEN(shapes); si++) {
        const cut_gemm *g = &shapes[si];
        for (int i = 0; i < 200; i++) {
            cut_gemm_sched s;
            if (cut_gemm_simt_sample_valid(g, &d, &r, &s, 1000, &e) != 0)
                fail_msg("%s", e.msg);
            cut_gemm_simt_geom gm;
            cut_gemm_simt_geometry(g, &s, &gm);
            assert_true(gm.threads >= 32 && gm.threads <= 1024 && gm.smem_bytes <= 49152);
            assert_true((long)gm.grid[0] * s.k[CUT_GS_BN] >= g->n && (long)gm.grid[1] * s.k[CUT_GS_BM] >= g->m);
            assert_true(g->k % s.k[CUT_GS_VEC] == 0);
            vec_seen[s.k[CUT_GS_VEC]]++;
            cut_gemm_simt_mutate(g, &d, &r, &s);
            assert_true(s.k[CUT_GS_UNROLL] <= s.k[CUT_GS_BK] && g->k % s.k[CUT_GS_VEC] == 0);
            mutated_valid += cut_gemm_simt_check(g, &s, &d, &e) == 0;
        }
    }
    printf("  vec 1/2/4 drawn %d/%d/%d times; %d of 800 mutations valid\n", vec_seen[1], vec_seen[2], vec_seen[4],
           mutated_valid);
    assert_true(vec_seen[1] > 0 && vec_seen[2] > 0 && vec_seen[4] > 0);
    assert_true(mutated_valid > 0);
}

static void test_codegen_launch_and_banner(void **state)
{
    (void)state;
    cut_gemm g = mkg(37, 45, 29, CUT_GEMM_NT);
    cut_gemm_sched s = mks(32, 64, 8, 2, 4, 1, 1, 4, 4);
    cut_kernel_src ks;
    cut_err e;
    assert_int_equal(cut_codegen_gemm_simt(&g, &s, &ks, &e), 0);
    assert_string_equal(ks.entry, "cut_gemm");
    assert_int_equal(ks.grid[0], 1); /* ceil(45 / 64) */
    assert_int_equal(ks.grid[1], 2); /* ceil(37 / 32) */
    assert_int_equal(ks.grid[2], 1);
    assert_int_equal(ks.block[0], 16 * 16);
    assert_int_equal(ks.uses_inline_ptx, 0);
    assert_non_null(strstr(ks.src, "gemm_nt_fp32_M_37_N_45_K_29"));
    assert_non_null(strstr(ks.src, "bm=32 bn=64 bk=8 tm=2 tn=4 vec=1 dbuf=1 pad=4 unroll=4"));
    assert_non_null(strstr(ks.src, "cut_gemm(const elem_t *__restrict__ A, const elem_t *__restrict__ B, float "));
    assert_non_null(strstr(ks.src, "typedef float elem_t;"));
    assert_null(strstr(ks.src, "asm"));
    cut_kernel_src_free(&ks);
    /* 16-bit inputs: the same kernel reading 16-bit storage, widened on load; still no inline PTX on the host */
    g.dtype = CUT_DT_BF16;
    assert_int_equal(cut_codegen_gemm_simt(&g, &s, &ks, &e), 0);
    assert_non_null(strstr(ks.src, "cut_gemm(const elem_t *__restrict__ A"));
    assert_non_null(strstr(ks.src, "typedef unsigned short elem_t;"));
    assert_non_null(strstr(ks.src, "#define ELEM_BF16 1"));
    assert_int_equal(ks.uses_inline_ptx, 0);
    cut_kernel_src_free(&ks);
}

/* ---- NVRTC ----------------------------------------------------------------------------------------------- */

/* Random valid schedules over a few shapes (tails included) and every dtype of one layout, compiled in one batch
 * for sm_90: every one must compile. Prints the register range and how many spill. */
static void compile_random(cut_gemm_layout l, int count, uint64_t seed)
{
    const cut_gemm shapes[] = {mkg(1024, 1024, 1024, l), mkg(1000, 777, 515, l), mkg(512, 384, 256, l),
                               mkg(333, 250, 130, l)};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, seed);
    cut_err e;
    cut_kernel_src *ks = calloc((size_t)count, sizeof *ks);
    cut_compiled *bins = calloc((size_t)count, sizeof *bins);
    const char **srcs = calloc((size_t)count, sizeof *srcs);
    for (int i = 0; i < count; i++) {
        cut_gemm gd = shapes[i % CUT_ARRAY_LEN(shapes)];
        gd.dtype = (cut_dtype)((i / (int)CUT_ARRAY_LEN(shapes)) % CUT_DT_COUNT); /* every dtype's storage */
        const cut_gemm *g = &gd;
        cut_gemm_sched s;
        if (cut_gemm_simt_sample_valid(g, &d, &r, &s, 1000, &e) != 0)
            fail_msg("%s", e.msg);
        assert_int_equal(cut_codegen_gemm_simt(g, &s, &ks[i], &e), 0);
        srcs[i] = ks[i].src;
    }
    cut_compile_opts co;
    cut_compile_opts_default(&co);
    assert_int_equal(cut_compile_batch(srcs, count, &co, bins, &e), 0);
    int failed = 0, spilling = 0, rmin = 1 << 30, rmax = 0;
    for (int i = 0; i < count; i++) {
        if (!bins[i].ok) {
            fprintf(stderr, "NVRTC failed:\n%.300s\n%s\n", ks[i].src, bins[i].log);
            failed++;
            continue;
        }
        assert_true(bins[i].regs > 0);
        rmin = bins[i].regs < rmin ? bins[i].regs : rmin;
        rmax = bins[i].regs > rmax ? bins[i].regs : rmax;
        if (bins[i].spill_stores > 0 || bins[i].spill_loads > 0) {
            const char *sched = strstr(ks[i].src, "// schedule: ");
            printf("  spills %d/%d bytes at %d registers: %.*s\n", bins[i].spill_stores, bins[i].spill_loads,
                   bins[i].regs, (int)(strchr(sched, '\n') - sched) - 13, sched + 13);
            spilling++;
        }
    }
    printf("  %s: %d random schedules compiled for sm_90, %d failed; registers %d..%d; %d spill\n",
           l == CUT_GEMM_NT ? "nt" : "nn", count, failed, rmin, rmax, spilling);
    assert_int_equal(failed, 0);
    for (int i = 0; i < count; i++) {
        cut_compiled_free(&bins[i]);
        cut_kernel_src_free(&ks[i]);
    }
    free(srcs), free(bins), free(ks);
}

static void test_nvrtc_random_nn(void **state)
{
    (void)state;
    compile_random(CUT_GEMM_NN, tu_quick() ? 16 : 100, 21);
}

static void test_nvrtc_random_nt(void **state)
{
    (void)state;
    compile_random(CUT_GEMM_NT, tu_quick() ? 16 : 100, 22);
}

/* ---- emulation ------------------------------------------------------------------------------------------- */

/* Rewrites the first occurrence of `from` in ks->src to `to` (a planted bug). */
static void plant(cut_kernel_src *ks, const char *from, const char *to)
{
    char *at = strstr(ks->src, from);
    assert_non_null(at);
    size_t pre = (size_t)(at - ks->src), fl = strlen(from), tl = strlen(to), rest = strlen(at + fl);
    char *s = malloc(pre + tl + rest + 1);
    memcpy(s, ks->src, pre);
    memcpy(s + pre, to, tl);
    memcpy(s + pre + tl, at + fl, rest + 1);
    free(ks->src);
    ks->src = s;
}

typedef struct plant_edit {
    const char *from, *to;
} plant_edit;

/* Generates s for g (with the edit planted when edit is not NULL), runs it under emulation on random inputs with C
 * poisoned by NaN, and returns cut_gemm_rel_error against the reference. */
static double emulate(const cut_gemm *g, const cut_gemm_sched *s, const plant_edit *edit, const char *dir,
                      uint64_t seed)
{
    cut_err e;
    cut_kernel_src ks;
    assert_int_equal(cut_codegen_gemm_simt(g, s, &ks, &e), 0);
    if (edit)
        plant(&ks, edit->from, edit->to);
    cut_emu_kernel *k = NULL;
    if (cut_emu_compile(ks.src, ks.entry, dir, &k, &e) != 0)
        fail_msg("host compile: %s", e.msg);
    size_t na = (size_t)g->m * g->k, nb = b_elems(g), nc = (size_t)g->m * g->n;
    float *a = alloc_floats(na), *b = alloc_floats(nb), *c = alloc_floats(nc);
    double *ref = malloc(nc * sizeof(double));
    cut_rng r;
    cut_rng_seed(&r, seed);
    fill_uniform(a, na, &r);
    fill_uniform(b, nb, &r);
    for (size_t i = 0; i < nc; i++)
        c[i] = NAN;
    void *args[3] = {a, b, c};
    if (cut_emu_launch(k, ks.grid, ks.block, args, 3, &e) != 0)
        fail_msg("launch: %s", e.msg);
    cut_gemm_reference(g, a, b, ref);
    double err = cut_gemm_rel_error(c, ref, nc);
    free(a), free(b), free(c), free(ref);
    cut_emu_kernel_free(k);
    cut_kernel_src_free(&ks);
    return err;
}

static void emulate_random(cut_gemm_layout l, int count, uint64_t seed)
{
    const cut_gemm shapes[] = {mkg(37, 45, 29, l), mkg(64, 64, 64, l), mkg(1, 17, 33, l), mkg(40, 36, 44, l),
                               mkg(130, 18, 12, l),  mkg(17, 130, 6, l)};
    char *dir = tu_tmpdir(l == CUT_GEMM_NT ? "gemm_simt_emu_nt" : "gemm_simt_emu_nn");
    assert_non_null(dir);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, seed);
    cut_err e;
    const double tol = cut_gemm_tolerance(CUT_DT_FP32);
    double worst = 0.0;
    int failed = 0, vec_wide = 0, dbuf = 0;
    for (int i = 0; i < count; i++) {
        const cut_gemm *g = &shapes[i % CUT_ARRAY_LEN(shapes)];
        cut_gemm_sched s;
        if (cut_gemm_simt_sample_valid(g, &d, &r, &s, 1000, &e) != 0)
            fail_msg("%s", e.msg);
        double err = emulate(g, &s, NULL, dir, seed + (uint64_t)i);
        worst = err > worst ? err : worst;
        vec_wide += s.k[CUT_GS_VEC] > 1;
        dbuf += s.k[CUT_GS_DBUF];
        if (!(err <= tol)) {
            char desc[256];
            cut_gemm_simt_describe(&s, desc, sizeof desc);
            fprintf(stderr, "  %dx%dx%d %s: rel error %g > %g\n", g->m, g->n, g->k, desc, err, tol);
            failed++;
        }
    }
    printf("  %s: %d random schedules emulated (%d with vec > 1, %d double-buffered), %d failed; max rel error "
           "%.3g (tolerance %g)\n",
           l == CUT_GEMM_NT ? "nt" : "nn", count, vec_wide, dbuf, failed, worst, tol);
    assert_int_equal(failed, 0);
    free(dir);
}

static void test_emulated_random_nn(void **state)
{
    (void)state;
    emulate_random(CUT_GEMM_NN, tu_quick() ? 6 : 30, 31);
}

static void test_emulated_random_nt(void **state)
{
    (void)state;
    emulate_random(CUT_GEMM_NT, tu_quick() ? 6 : 30, 32);
}

/* IEEE binary16 / bfloat16 bits of x, rounded to nearest even (finite, normal range: the test's inputs are in
 * [-1, 1)), and the value they stand for. */
static uint16_t to16(float x, cut_dtype dt, float *back)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    uint16_t h;
    if (dt == CUT_DT_BF16) {
        h = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
        const uint32_t w = (uint32_t)h << 16;
        memcpy(back, &w, 4);
        return h;
    }
    /* |x| in [2^(ex-1), 2^ex): 11 significant bits from 2^-14 up, multiples of 2^-24 below (subnormals) */
    int ex;
    frexp(fabs((double)x), &ex);
    const double q = ex >= -13 ? ldexp(nearbyint(ldexp(fabs((double)x), 11 - ex)), ex - 11)
                               : ldexp(nearbyint(ldexp(fabs((double)x), 24)), -24);
    *back = (float)(x < 0 ? -q : q);
    /* bits from the rounded value */
    const float f = (float)q;
    uint32_t v;
    memcpy(&v, &f, 4);
    const uint32_t e32 = (v >> 23) & 0xFF, m32 = v & 0x7FFFFF;
    if (f == 0.0f)
        h = 0;
    else if (e32 < 113) /* subnormal half: value = m * 2^-24 */
        h = (uint16_t)nearbyint(ldexp((double)f, 24));
    else
        h = (uint16_t)(((e32 - 112) << 10) | (m32 >> 13));
    return (uint16_t)(h | (x < 0 ? 0x8000u : 0u));
}

/* 16-bit inputs under emulation: random schedules on tail shapes, inputs rounded to the dtype and passed as bits,
 * against the double reference of the rounded values (so only accumulation error remains: fp32's tolerance). */
static void emulate_16bit(cut_dtype dt, int count, uint64_t seed)
{
    char *dir = tu_tmpdir(dt == CUT_DT_BF16 ? "gemm_simt_emu_bf16" : "gemm_simt_emu_fp16");
    assert_non_null(dir);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, seed);
    cut_err e;
    double worst = 0;
    int vec_wide = 0;
    for (int i = 0; i < count; i++) {
        cut_gemm g = mkg(37 + 3 * i, 44 - 2 * (i % 3), 28 + 4 * (i % 5), (cut_gemm_layout)(i % 2));
        g.dtype = dt;
        cut_gemm_sched s;
        if (cut_gemm_simt_sample_valid(&g, &d, &r, &s, 1000, &e) != 0)
            fail_msg("%s", e.msg);
        vec_wide += s.k[CUT_GS_VEC] > 1;
        cut_kernel_src ks;
        assert_int_equal(cut_codegen_gemm_simt(&g, &s, &ks, &e), 0);
        cut_emu_kernel *k = NULL;
        if (cut_emu_compile(ks.src, ks.entry, dir, &k, &e) != 0)
            fail_msg("host compile: %s", e.msg);
        const size_t na = (size_t)g.m * g.k, nb = b_elems(&g), nc = (size_t)g.m * g.n;
        float *a = alloc_floats(na), *b = alloc_floats(nb), *c = alloc_floats(nc);
        uint16_t *a16 = malloc(na * 2 + 16), *b16 = malloc(nb * 2 + 16);
        fill_uniform(a, na, &r);
        fill_uniform(b, nb, &r);
        for (size_t j = 0; j < na; j++)
            a16[j] = to16(a[j], dt, &a[j]);
        for (size_t j = 0; j < nb; j++)
            b16[j] = to16(b[j], dt, &b[j]);
        for (size_t j = 0; j < nc; j++)
            c[j] = NAN;
        void *args[3] = {a16, b16, c};
        if (cut_emu_launch(k, ks.grid, ks.block, args, 3, &e) != 0)
            fail_msg("launch: %s", e.msg);
        double *ref = malloc(nc * sizeof(double));
        cut_gemm_reference(&g, a, b, ref);
        const double err = cut_gemm_rel_error(c, ref, nc);
        worst = err > worst ? err : worst;
        if (!(err <= cut_gemm_tolerance(CUT_DT_FP32))) {
            char desc[256];
            cut_gemm_simt_describe(&s, desc, sizeof desc);
            fail_msg("%dx%dx%d %s %s: rel error %g", g.m, g.n, g.k, cut_dtype_name(dt), desc, err);
        }
        free(a), free(b), free(c), free(a16), free(b16), free(ref);
        cut_emu_kernel_free(k);
        cut_kernel_src_free(&ks);
    }
    printf("  %s: %d random schedules emulated on 16-bit inputs (%d with vec > 1); max rel error %.3g\n",
           cut_dtype_name(dt), count, vec_wide, worst);
    free(dir);
}

static void test_emulated_16bit(void **state)
{
    (void)state;
    /* the widening itself: a few exact values through to16 */
    float back;
    assert_int_equal(to16(1.0f, CUT_DT_FP16, &back), 0x3C00);
    assert_int_equal(to16(-0.5f, CUT_DT_FP16, &back), 0xB800);
    assert_int_equal(to16(1.0f, CUT_DT_BF16, &back), 0x3F80);
    assert_true(to16(0.1f, CUT_DT_FP16, &back) == 0x2E66 && fabsf(back - 0.0999755859375f) < 1e-9f);
    emulate_16bit(CUT_DT_FP16, tu_quick() ? 4 : 12, 41);
    emulate_16bit(CUT_DT_BF16, tu_quick() ? 4 : 12, 42);
}

/* The comparison catches a kernel that skips a k step of every tile and one that leaves outputs unwritten; the
 * same schedules unedited pass, so the failures come from the edits. */
static void test_planted_wrong_kernels_caught(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("gemm_simt_plant");
    assert_non_null(dir);
    const double tol = cut_gemm_tolerance(CUT_DT_FP32);
    const plant_edit skip_k = {"kk < BK;", "kk < BK - 1;"};
    const plant_edit skip_store = {"float *__restrict__ c_row",
                                   "if (tx == 0) continue;\n        float *__restrict__ c_row"};
    const cut_gemm gs[] = {mkg(37, 45, 29, CUT_GEMM_NN), mkg(37, 45, 29, CUT_GEMM_NT)};
    const cut_gemm_sched s = mks(32, 32, 8, 2, 2, 1, 1, 4, 8);
    for (size_t i = 0; i < CUT_ARRAY_LEN(gs); i++) {
        double good = emulate(&gs[i], &s, NULL, dir, 3);
        double wrong_k = emulate(&gs[i], &s, &skip_k, dir, 3);
        double unwritten = emulate(&gs[i], &s, &skip_store, dir, 3);
        printf("  %s: unedited %.3g, skipped k step %.3g, unwritten outputs %g\n",
               gs[i].layout == CUT_GEMM_NT ? "nt" : "nn", good, wrong_k, unwritten);
        assert_true(good <= tol);
        assert_true(wrong_k > tol);
        assert_true(isinf(unwritten));
    }
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_known_values),
        cmocka_unit_test(test_reference_threaded_nn_nt_agree),
        cmocka_unit_test(test_rel_error_and_tolerance),
        cmocka_unit_test(test_check_refuses),
        cmocka_unit_test(test_sampled_valid_and_mutations),
        cmocka_unit_test(test_codegen_launch_and_banner),
        cmocka_unit_test(test_planted_wrong_kernels_caught),
        cmocka_unit_test(test_emulated_16bit),
        cmocka_unit_test(test_emulated_random_nn),
        cmocka_unit_test(test_emulated_random_nt),
        cmocka_unit_test(test_nvrtc_random_nn),
        cmocka_unit_test(test_nvrtc_random_nt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
