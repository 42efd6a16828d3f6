/* "gemv" GEMM template (issue 21: skinny GEMMs, M <= 16, CUDA cores at memory bandwidth): the registry entry and
 * where it applies, refusals with their sentences, sampling and mutation, geometry and launch configuration, the
 * cost-model features and the GEMM search; random schedules of every dtype x layout compiled with NVRTC for sm_90
 * without spills; random schedules emulated against the double reference on tail shapes (M = 1, 3, 16; N and K odd
 * and not multiples of 8; batch 3 with alpha 0.5 and beta 0.25; split-K) for fp32, tf32, fp16 and bf16, launched
 * twice (the split-K counters reset); one split-K kernel through the emulation runner's whole check protocol; and
 * planted bugs caught. */
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
#include "cutune/search.h"
#include "cutune/util.h"
#include "ops/gemm/gemv.h"
#include "strategy/features.h"
#include "nvrtc_testutil.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cut_dtype all_dts[] = {CUT_DT_FP32, CUT_DT_TF32, CUT_DT_FP16, CUT_DT_BF16};

static cut_gemm mkx(int m, int n, int k, cut_gemm_layout l, cut_dtype dt, int batch, double alpha, double beta)
{
    cut_gemm g = {.m = m, .n = n, .k = k, .layout = l, .dtype = dt};
    cut_gemm_set_extras(&g, batch, alpha, beta);
    return g;
}

/* vec lanes cols warps kwarps unroll splitk pipe stream */
static cut_sched mks(int vec, int lanes, int cols, int warps, int kwarps, int unroll, int splitk, int pipe, int stream)
{
    cut_sched s = {.tpl = CUT_GEMM_TPL_GEMV, .k = {vec, lanes, cols, warps, kwarps, unroll, splitk, pipe, stream}};
    return s;
}

static cut_devlimits sm90(void)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    return d;
}

/* ---- registry, applicability, refusals -------------------------------------------------------------------- */

static void test_registry_and_applies(void **state)
{
    (void)state;
    const cut_gemm_template *t = cut_gemm_template_get(CUT_GEMM_TPL_GEMV);
    assert_non_null(t);
    assert_string_equal(t->name, "gemv");
    assert_int_equal(cut_gemm_template_find("gemv"), CUT_GEMM_TPL_GEMV);
    assert_int_equal(t->nknobs, CUT_GV_NKNOBS);
    assert_false(t->gpu_only);
    assert_true(cut_gemm_template_get(CUT_GEMM_TPL_WGMMA)->gpu_only);
    assert_string_equal(t->knob_name(CUT_GV_SPLITK), "splitk");
    assert_string_equal(t->knob_name(CUT_GV_NKNOBS), "?");
    const cut_devlimits d = sm90();
    for (size_t i = 0; i < CUT_ARRAY_LEN(all_dts); i++)
        for (int l = 0; l < 4; l++)
            for (int m = 1; m <= CUT_GEMV_MAX_M; m += 5) {
                const cut_gemm g = mkx(m, 4096, 4096, (cut_gemm_layout)l, all_dts[i], 1, 1.0, 0.0);
                assert_true(t->applies(&g, &d, NULL));
            }
    cut_err why = {{0}};
    const cut_gemm big = mkx(CUT_GEMV_MAX_M + 1, 4096, 4096, CUT_GEMM_NT, CUT_DT_FP16, 1, 1.0, 0.0);
    assert_false(t->applies(&big, &d, &why));
    assert_non_null(strstr(why.msg, "M <= 16"));
    assert_non_null(strstr(why.msg, "M=17"));
    /* the registry's check refuses it with the same sentence, and sampling names it */
    cut_err e = {{0}};
    assert_int_equal(cut_gemm_sched_check(&big, &(cut_sched){.tpl = CUT_GEMM_TPL_GEMV, .k = {8, 32, 1, 4, 1, 2, 1,
                                                                                             0, 0}},
                                          &d, &e),
                     -1);
    assert_non_null(strstr(e.msg, "M <= 16"));
    cut_rng r;
    cut_rng_seed(&r, 1);
    cut_sched s;
    assert_int_equal(cut_gemm_sched_sample_valid(&big, &d, CUT_GEMM_TPL_GEMV, &r, &s, 10, &e), -1);
    assert_non_null(strstr(e.msg, "M <= 16"));
}

static void expect_refusal(const cut_gemm *g, cut_sched s, const char *words)
{
    const cut_devlimits d = sm90();
    cut_err e = {{0}};
    char desc[256];
    cut_gemm_sched_describe(&s, desc, sizeof desc);
    if (cut_gemm_sched_check(g, &s, &d, &e) == 0)
        fail_msg("accepted: %s (expected a refusal about '%s')", desc, words);
    if (!strstr(e.msg, words))
        fail_msg("%s: refused with '%s', expected '%s'", desc, e.msg, words);
    printf("  refused: %s\n", e.msg);
}

static void test_refusals(void **state)
{
    (void)state;
    const cut_gemm nt = mkx(1, 4096, 4096, CUT_GEMM_NT, CUT_DT_FP16, 1, 1.0, 0.0);
    const cut_gemm nn16 = mkx(16, 4096, 4096, CUT_GEMM_NN, CUT_DT_FP16, 1, 1.0, 0.0);
    const cut_devlimits d = sm90();
    cut_err e = {{0}};
    /* a valid one first, so that each refusal below is the one knob's doing */
    const cut_sched ok = mks(8, 32, 2, 4, 1, 2, 4, 1, 0);
    if (cut_gemm_sched_check(&nt, &ok, &d, &e) != 0)
        fail_msg("%s", e.msg);
    expect_refusal(&nt, mks(8, 32, 3, 4, 1, 2, 4, 1, 0), "allowed values");
    expect_refusal(&nt, mks(8, 32, 2, 4, 8, 2, 4, 1, 0), "kwarps=8 exceeds the block's warps=4");
    const cut_gemm odd_k = mkx(1, 4096, 4095, CUT_GEMM_NT, CUT_DT_FP16, 1, 1.0, 0.0);
    expect_refusal(&odd_k, mks(2, 32, 2, 4, 1, 2, 4, 1, 0), "K=4095 divisible by 2");
    const cut_gemm odd_n = mkx(1, 4094, 4096, CUT_GEMM_TN, CUT_DT_BF16, 1, 1.0, 0.0);
    expect_refusal(&odd_n, mks(4, 32, 1, 4, 1, 2, 4, 1, 0), "N=4094 divisible by 4 (the most here is 2)");
    const cut_gemm f32 = mkx(1, 4096, 4096, CUT_GEMM_NT, CUT_DT_FP32, 1, 1.0, 0.0);
    expect_refusal(&f32, mks(8, 32, 2, 4, 1, 2, 4, 1, 0), "vec=8 loads 32 bytes");
    const cut_gemm short_k = mkx(1, 4096, 20, CUT_GEMM_NT, CUT_DT_FP16, 1, 1.0, 0.0);
    expect_refusal(&short_k, mks(4, 4, 1, 1, 1, 1, 4, 0, 0), "splitk=4 leaves its last slice of K=20 empty");
    const cut_gemm long_k = mkx(16, 256, 1 << 16, CUT_GEMM_NT, CUT_DT_FP16, 1, 1.0, 0.0);
    expect_refusal(&long_k, mks(8, 32, 1, 4, 1, 2, 1, 0, 0), "split K further");
    expect_refusal(&nn16, mks(8, 8, 4, 4, 1, 1, 8, 0, 0), "registers per thread");
    const cut_gemm wide = mkx(16, 1 << 16, 1024, CUT_GEMM_NT, CUT_DT_FP16, 1, 1.0, 0.0);
    expect_refusal(&wide, mks(8, 8, 4, 4, 1, 1, 64, 0, 0), "workspace");
    const cut_gemm nt16 = mkx(16, 4096, 4096, CUT_GEMM_NT, CUT_DT_FP16, 1, 1.0, 0.0);
    expect_refusal(&nt16, mks(8, 32, 2, 4, 1, 8, 4, 0, 0), "unrolled iteration of 2048 FMAs");
    const cut_gemm narrow = mkx(1, 16, 4096, CUT_GEMM_NN, CUT_DT_FP16, 1, 1.0, 0.0);
    expect_refusal(&narrow, mks(8, 32, 1, 4, 1, 1, 4, 0, 0), "columns far exceed N=16");
    expect_refusal(&short_k, mks(4, 32, 1, 4, 4, 4, 1, 0, 0), "far more than its slice of 24");
    const cut_gemm many = mkx(1, 8, 64, CUT_GEMM_NT, CUT_DT_FP32, 40000, 1.0, 0.0);
    expect_refusal(&many, mks(4, 4, 1, 1, 1, 1, 2, 0, 0), "exceed the grid's 65535");
    /* the generator refuses what the structural rules refuse */
    cut_kernel_src ks;
    const cut_sched bad = mks(2, 32, 2, 4, 1, 2, 4, 1, 0);
    assert_int_equal(cut_codegen_gemm(&odd_k, &bad, &ks, &e), -1);
    assert_non_null(strstr(e.msg, "codegen gemm gemv"));
    cut_kernel_src_free(&ks);
}

/* ---- sampling, geometry, launch ----------------------------------------------------------------------------- */

static void test_sampling_geometry(void **state)
{
    (void)state;
    const cut_devlimits d = sm90();
    const int dims[][3] = {{1, 4096, 4096}, {16, 4096, 4096}, {3, 37, 93}, {16, 20, 33}, {8, 512, 512}};
    cut_rng r;
    cut_rng_seed(&r, 3);
    int n = 0, split = 0, vec_max = 0;
    for (size_t di = 0; di < CUT_ARRAY_LEN(all_dts); di++)
        for (int l = 0; l < 4; l++)
            for (size_t i = 0; i < CUT_ARRAY_LEN(dims); i++) {
                const cut_gemm g = mkx(dims[i][0], dims[i][1], dims[i][2], (cut_gemm_layout)l, all_dts[di],
                                       i % 2 ? 3 : 1, 0.5, 0.25);
                for (int j = 0; j < 8; j++, n++) {
                    cut_sched s;
                    cut_err e = {{0}};
                    if (cut_gemm_sched_sample_valid(&g, &d, CUT_GEMM_TPL_GEMV, &r, &s, 200, &e) != 0)
                        fail_msg("%s", e.msg);
                    assert_int_equal(s.tpl, CUT_GEMM_TPL_GEMV);
                    cut_gemm_gemv_geom gm;
                    cut_gemm_gemv_geometry(&g, &s, &gm);
                    /* the grid covers every column and every batch x slice, the slices cover K exactly */
                    assert_true((long)gm.grid[0] * gm.bn >= g.n && (long)(gm.grid[0] - 1) * gm.bn < g.n);
                    assert_int_equal(gm.grid[2], (unsigned)(cut_gemm_batch(&g) * s.k[CUT_GV_SPLITK]));
                    assert_true((long)gm.ksl * s.k[CUT_GV_SPLITK] >= g.k && gm.ksl % 8 == 0);
                    assert_true(gm.threads == 32 * s.k[CUT_GV_WARPS] && gm.smem_bytes > 0);
                    split += s.k[CUT_GV_SPLITK] > 1;
                    vec_max += s.k[CUT_GV_VEC] == cut_gemm_gemv_max_vec(&g);
                    /* mutations stay on the lists and within the alignment and the block */
                    for (int k = 0; k < 20; k++) {
                        cut_gemm_template_get(CUT_GEMM_TPL_GEMV)->mutate(&g, &d, &r, &s);
                        assert_true(s.k[CUT_GV_VEC] <= cut_gemm_gemv_max_vec(&g));
                        assert_true(s.k[CUT_GV_KWARPS] <= s.k[CUT_GV_WARPS]);
                    }
                }
            }
    printf("  %d sampled schedules valid (%d with split-K, %d at the widest vector)\n", n, split, vec_max);
    assert_true(split > n / 4 && vec_max > n / 2);
    /* the launch configuration and the source's banner and knobs */
    const cut_gemm g = mkx(1, 4096, 4096, CUT_GEMM_NT, CUT_DT_BF16, 2, 0.5, 0.25);
    const cut_sched s = mks(8, 16, 2, 8, 2, 2, 4, 1, 1);
    cut_kernel_src ks;
    cut_err e = {{0}};
    if (cut_codegen_gemm(&g, &s, &ks, &e) != 0)
        fail_msg("%s", e.msg);
    assert_string_equal(ks.entry, "cut_gemm");
    assert_int_equal(ks.grid[0], 4096 / (4 * 2 * 2)); /* 4 warps along N x 2 groups x 2 columns */
    assert_int_equal(ks.grid[1], 1);
    assert_int_equal(ks.grid[2], 2 * 4);
    assert_int_equal(ks.block[0], 256);
    assert_int_equal(ks.smem_dynamic, 1024 * 4); /* A's slice of 1024 k, fp32 */
    assert_int_equal(ks.extra_bufs, 1);
    assert_int_equal(ks.uses_inline_ptx, 0);
    assert_non_null(strstr(ks.src, "gemv vec=8 lanes=16 cols=2 warps=8 kwarps=2 unroll=2 splitk=4 pipe=1 stream=1"));
    assert_non_null(strstr(ks.src, "B N x K (C = A B^T)"));
    assert_non_null(strstr(ks.src, "cut_splitk_last"));
    cut_kernel_src_free(&ks);
}

/* The cost model sees gemv schedules (one-hot slot 3, finite), and the GEMM search of a skinny GEMM proposes them;
 * past M = 16 it does not. */
static void test_features_and_search(void **state)
{
    (void)state;
    const cut_devlimits d = sm90();
    const cut_gemm g = mkx(1, 4096, 4096, CUT_GEMM_NN, CUT_DT_FP16, 1, 1.0, 0.0);
    cut_rng r;
    cut_rng_seed(&r, 5);
    cut_sched s;
    cut_err e = {{0}};
    assert_int_equal(cut_gemm_sched_sample_valid(&g, &d, CUT_GEMM_TPL_GEMV, &r, &s, 200, &e), 0);
    float f[CUT_FEAT_LEN];
    assert_int_equal(cut_features_gemm(&g, &s, &d, -1, f, CUT_FEAT_LEN), CUT_FEAT_LEN);
    for (int t = 0; t < CUT_FEAT_NTPL; t++)
        assert_true(f[t] == (t == CUT_GEMM_TPL_GEMV ? 1.0f : 0.0f));
    int nonzero = 0;
    for (int i = 0; i < CUT_FEAT_LEN; i++) {
        assert_true(isfinite(f[i]));
        nonzero += f[i] != 0.0f;
    }
    assert_true(nonzero > 20);
    for (int pass = 0; pass < 2; pass++) {
        const cut_gemm gp = mkx(pass ? 17 : 1, 512, 512, CUT_GEMM_NT, CUT_DT_FP16, 1, 1.0, 0.0);
        cut_search_opts o;
        cut_search_opts_default(&o);
        cut_search *sr = cut_search_new_gemm(&gp, &d, &o);
        cut_sched out[64];
        const int n = cut_search_propose(sr, 64, out);
        int gemv = 0;
        for (int i = 0; i < n; i++)
            if (out[i].tpl == CUT_GEMM_TPL_GEMV) {
                gemv++;
                assert_int_equal(cut_gemm_sched_check(&gp, &out[i], &d, &e), 0);
            }
        printf("  M=%d: %d of %d proposals are gemv schedules\n", gp.m, gemv, n);
        assert_true(n > 0 && (pass ? gemv == 0 : gemv > 0));
        cut_search_free(sr);
    }
}

/* ---- NVRTC ------------------------------------------------------------------------------------------------- */

/* per random schedules of dt in every layout, on the skinny shapes and tails, compiled in one batch for
 * sm_90: every one compiles with no spills and <= 255 registers. */
static void compile_random(cut_dtype dt, int per, uint64_t seed)
{
    const int dims[][4] = {{1, 4096, 4096, 1}, {16, 4096, 4096, 1}, {8, 4096, 11008, 1}, {3, 1000, 999, 2},
                           {16, 37, 93, 3},    {1, 512, 512, 32}};
    const cut_devlimits d = sm90();
    cut_rng r;
    cut_rng_seed(&r, seed);
    const int count = 4 * per;
    cut_kernel_src *ks = calloc((size_t)count, sizeof *ks);
    int *est = calloc((size_t)count, sizeof *est);
    for (int i = 0; i < count; i++) {
        const int *dm = dims[(size_t)(i / 4 + seed) % CUT_ARRAY_LEN(dims)];
        const cut_gemm g = mkx(dm[0], dm[1], dm[2], (cut_gemm_layout)(i % 4), dt, dm[3], i % 3 ? 1.0 : 0.5,
                               i % 3 ? 0.0 : 0.25);
        cut_sched s;
        cut_err e = {{0}};
        if (cut_gemm_sched_sample_valid(&g, &d, CUT_GEMM_TPL_GEMV, &r, &s, 200, &e) != 0 ||
            cut_codegen_gemm(&g, &s, &ks[i], &e) != 0)
            fail_msg("%s", e.msg);
        cut_gemm_geom gm;
        cut_gemm_template_get(CUT_GEMM_TPL_GEMV)->geometry(&g, &s, &gm);
        est[i] = gm.regs_est;
    }
    char label[64];
    snprintf(label, sizeof label, "gemv %s (nn, nt, tn, tt)", cut_dtype_name(dt));
    tu_compile_all(label, ks, est, count);
    for (int i = 0; i < count; i++)
        cut_kernel_src_free(&ks[i]);
    free(ks), free(est);
}

static int compile_per(void)
{
    const char *n = getenv("CUTUNE_GEMV_COMPILES"); /* per dtype and layout; more for a thorough local run */
    return n && atoi(n) > 0 ? atoi(n) : tu_quick() ? 1 : 4;
}

static void test_nvrtc_random(void **state)
{
    (void)state;
    for (size_t i = 0; i < CUT_ARRAY_LEN(all_dts); i++)
        compile_random(all_dts[i], compile_per(), 11 + i);
}

/* ---- emulation ------------------------------------------------------------------------------------------- */

/* g's kernel for s (with the planted edit from -> to when from is not NULL) emulated on set 0 of g's work, launched
 * twice on a NaN-poisoned C (the second finds what the first left in module state); the larger relative error
 * against the work's reference. */
static double emulate(const cut_gemm *g, const cut_sched *s, const char *from, const char *to, const char *dir)
{
    cut_err e = {{0}};
    cut_kernel_src ks;
    if (cut_codegen_gemm(g, s, &ks, &e) != 0)
        fail_msg("%s", e.msg);
    if (from)
        assert_int_equal(tu_plant(&ks.src, from, to), 0);
    cut_emu_kernel *k = NULL;
    if (cut_emu_compile(ks.src, ks.entry, dir, &k, &e) != 0)
        fail_msg("host compile: %s", e.msg);
    cut_work w;
    if (cut_gemm_work(g, 13, 0, &w, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(w.nbufs, 3 + ks.extra_bufs);
    const size_t nc = w.bufs[2].elems;
    float *c = malloc(nc * sizeof *c);
    double *ref = malloc(nc * sizeof *ref), worst = 0.0;
    for (size_t i = 0; i < nc; i++)
        ref[i] = ((const float *)w.bufs[2].data[0])[i];
    void *args[4] = {(void *)w.bufs[0].data[0], (void *)w.bufs[1].data[0], c,
                     w.nbufs > 3 ? (void *)w.bufs[3].data[0] : NULL};
    for (int launch = 0; launch < 2; launch++) {
        for (size_t i = 0; i < nc; i++)
            c[i] = NAN;
        if (cut_emu_launch(k, ks.grid, ks.block, args, w.nbufs, &e) != 0)
            fail_msg("emulated launch: %s", e.msg);
        const double err = cut_gemm_rel_error(c, ref, nc);
        worst = !(err <= worst) ? err : worst; /* NaN wins */
    }
    free(c), free(ref);
    cut_work_free(&w);
    cut_emu_kernel_free(k);
    cut_kernel_src_free(&ks);
    return worst;
}

/* Random valid schedules of each workload, alternating split-K and not; each within the dtype's tolerance. */
static void emulate_each(const cut_gemm *gs, size_t n, int per, const char *dir, uint64_t seed)
{
    const cut_devlimits d = sm90();
    cut_rng r;
    cut_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < per; j++) {
            cut_sched s;
            cut_err e = {{0}};
            for (int tries = 0;; tries++) {
                if (cut_gemm_sched_sample_valid(&gs[i], &d, CUT_GEMM_TPL_GEMV, &r, &s, 500, &e) != 0)
                    fail_msg("%s", e.msg);
                if ((s.k[CUT_GV_SPLITK] > 1) == (int)((i + (size_t)j) % 2) || tries > 100)
                    break;
            }
            char name[160], desc[256];
            cut_gemm_name(&gs[i], name, sizeof name);
            cut_gemm_sched_describe(&s, desc, sizeof desc);
            const double err = emulate(&gs[i], &s, NULL, NULL, dir);
            printf("  %s %s: rel error %.3g\n", name, desc, err);
            if (!(err <= cut_gemm_tolerance(gs[i].dtype)))
                fail_msg("%s %s: rel error %g", name, desc, err);
        }
}

/* Tail shapes in every layout: M = 1, 3, 16; N and K odd and not multiples of 8 (vec 1 for 16-bit rows), and even
 * ones that are not multiples of 8 (narrower vectors); batch 3 with alpha 0.5 and beta 0.25. */
static void emulate_dtype(cut_dtype dt, uint64_t seed)
{
    char *dir = tu_tmpdir("gemm_gemv_emu");
    assert_non_null(dir);
    const int per = tu_quick() ? 1 : 2;
    for (int l = 0; l < 4; l++) {
        const cut_gemm gs[] = {
            mkx(1, 37, 93, (cut_gemm_layout)l, dt, 3, 0.5, 0.25),
            mkx(3, 45, 29, (cut_gemm_layout)l, dt, 3, 0.5, 0.25),
            mkx(16, 21, 77, (cut_gemm_layout)l, dt, 3, 0.5, 0.25),
            mkx(3, 36, 100, (cut_gemm_layout)l, dt, 1, 1.0, 0.0),
        };
        emulate_each(gs, tu_quick() ? 2 : CUT_ARRAY_LEN(gs), per, dir, seed + (uint64_t)l);
    }
    free(dir);
}

static void test_emulated_fp32(void **state) { (void)state, emulate_dtype(CUT_DT_FP32, 100); }
static void test_emulated_tf32(void **state) { (void)state, emulate_dtype(CUT_DT_TF32, 200); }
static void test_emulated_fp16(void **state) { (void)state, emulate_dtype(CUT_DT_FP16, 300); }
static void test_emulated_bf16(void **state) { (void)state, emulate_dtype(CUT_DT_BF16, 400); }

/* Hand-picked schedules through the emulation runner's whole protocol (poisoned outputs, module state snapshot,
 * a second launch that finds the workspace, fresh inputs, inputs untouched): both loop structures with split-K. */
static void test_runner_protocol(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("gemm_gemv_runner");
    assert_non_null(dir);
    cut_timing t;
    cut_timing_default(&t);
    t.warmup = 0;
    t.min_repeats = t.max_repeats = 2;
    t.min_total_ms = 0;
    cut_err e = {{0}};
    cut_runner *run = cut_runner_emu_new(dir, &t, &e);
    assert_non_null(run);
    const struct {
        cut_gemm g;
        cut_sched s;
    } cases[] = {
        {mkx(3, 45, 93, CUT_GEMM_NT, CUT_DT_FP16, 2, 0.5, 0.25), mks(1, 8, 2, 4, 2, 2, 4, 1, 1)},
        {mkx(16, 36, 100, CUT_GEMM_TN, CUT_DT_BF16, 1, 1.0, 0.0), mks(4, 4, 1, 2, 2, 2, 2, 0, 0)},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(cases); i++) {
        const cut_devlimits d = sm90();
        if (cut_gemm_sched_check(&cases[i].g, &cases[i].s, &d, &e) != 0)
            fail_msg("case %zu: %s", i, e.msg);
        cut_kernel_src ks;
        assert_int_equal(cut_codegen_gemm(&cases[i].g, &cases[i].s, &ks, &e), 0);
        cut_candidate cand = {.ks = &ks, .bin = NULL};
        cut_result res;
        if (cut_runner_prepare_gemm(run, &cases[i].g, 17 + i, &e) != 0)
            fail_msg("case %zu: %s", i, e.msg);
        if (cut_runner_measure(run, &cand, 1, &res, &e) != 0)
            fail_msg("case %zu: %s", i, e.msg);
        printf("  case %zu: %s (%s) rel error %.3g\n", i, cut_status_name(res.status), res.error, res.max_abs_err);
        assert_int_equal(res.status, CUT_ST_OK);
        cut_kernel_src_free(&ks);
    }
    cut_runner_free(run);
    free(dir);
}

/* The comparison catches a kernel that drops the other split-K slices, one that drops the other K warps, one that
 * skips the last step of a slice, one that ignores beta, and dot and axpy lanes summed over too few lanes; the
 * same schedules unedited pass. */
static void test_planted_bugs_caught(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("gemm_gemv_plant");
    assert_non_null(dir);
    const cut_gemm nt = mkx(3, 45, 93, CUT_GEMM_NT, CUT_DT_FP32, 2, 0.5, 0.25);
    const cut_sched snt = mks(1, 8, 2, 4, 2, 2, 4, 1, 0);
    const cut_gemm nn = mkx(16, 36, 100, CUT_GEMM_NN, CUT_DT_BF16, 1, 0.5, 0.25);
    const cut_sched snn = mks(4, 4, 1, 2, 2, 2, 2, 0, 1);
    const struct {
        const cut_gemm *g;
        const cut_sched *s;
        const char *from, *to;
    } plants[] = {
        {&nt, &snt, NULL, NULL},
        {&nt, &snt, "s += __ldcg(&cut_ws[((size_t)q", "s = __ldcg(&cut_ws[((size_t)q"},
        {&nt, &snt, "q < KWARPS; q++)\n            s += red", "q < 1; q++)\n            s += red"},
        {&nt, &snt, "if (k_ < kb1) {", "if (k_ + KSTEP < kb1) {"},
        {&nt, &snt, "(ALPHA * (v) + BETA * __ldg(Cin + (i)))", "(ALPHA * (v))"},
        {&nt, &snt, "o = LANES / 2; o > 0", "o = LANES / 4; o > 0"},
        {&nn, &snn, NULL, NULL},
        {&nn, &snn, "o = LANES; o < 32", "o = 2 * LANES; o < 32"},
        {&nn, &snn, "if (k_ < kb1) {", "if (k_ + KSTEP < kb1) {"},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(plants); i++) {
        const double err = emulate(plants[i].g, plants[i].s, plants[i].from, plants[i].to, dir);
        printf("  %s: rel error %.3g\n", plants[i].from ? plants[i].from : "(unedited)", err);
        if (plants[i].from)
            assert_true(!(err <= 1e-2));
        else
            assert_true(err <= cut_gemm_tolerance(plants[i].g->dtype));
    }
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry_and_applies), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_sampling_geometry),    cmocka_unit_test(test_features_and_search),
        cmocka_unit_test(test_nvrtc_random),         cmocka_unit_test(test_emulated_fp32),
        cmocka_unit_test(test_emulated_tf32),        cmocka_unit_test(test_emulated_fp16),
        cmocka_unit_test(test_emulated_bf16),        cmocka_unit_test(test_runner_protocol),
        cmocka_unit_test(test_planted_bugs_caught),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
