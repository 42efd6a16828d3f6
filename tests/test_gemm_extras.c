/* Issue 21's GEMM workload extras end to end on the CPU: the seed-004 words batch=, alpha=, beta=, layout=, dtype=;
 * names and records that carry them only when not the defaults (old lines read back unchanged, an mma record
 * without splitk reads as 1); the work (Cin, an fp32 input, only with beta != 0; references with beta·Cin; the op
 * descriptor round trip); then the SIMT and mma kernels emulated against that work's double reference on tail
 * shapes (M = 1, 16, odd sizes, batch 3, alpha 0.5 beta 0.25, TN/TT, serial split-K) for fp32/fp16/bf16/tf32, a
 * planted "beta ignored" and "split-K slice dropped" caught, and NVRTC compiles of mma extras for sm_90 without
 * spills. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/compile.h"
#include "cutune/emu.h"
#include "cutune/gemm.h"
#include "cutune/gemm_record.h"
#include "cutune/gemm_space.h"
#include "cutune/util.h"
#include "ops/gemm/mma.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cut_gemm mkx(int m, int n, int k, cut_gemm_layout l, cut_dtype dt, int batch, double alpha, double beta)
{
    cut_gemm g = {.m = m, .n = n, .k = k, .layout = l, .dtype = dt};
    cut_gemm_set_extras(&g, batch, alpha, beta);
    return g;
}

static int parse_words(const char *text, cut_gemm *g, cut_err *e)
{
    char buf[256], *argv[16];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", text);
    for (char *t = strtok(buf, " "); t && argc < 16; t = strtok(NULL, " "))
        argv[argc++] = t;
    return cut_gemm_parse_args(argc, (const char *const *)argv, g, NULL, NULL, e);
}

/* ---- workload, names, records ---------------------------------------------------------------------------- */

static void test_words_names_records(void **state)
{
    (void)state;
    cut_gemm g = {0};
    cut_err e = {{0}};
    assert_int_equal(parse_words("M=16 N=4096 K=4096 batch=8 alpha=0.5 beta=0.25 layout=TN dtype=fp16", &g, &e), 0);
    assert_int_equal(cut_gemm_batch(&g), 8);
    assert_true(cut_gemm_alpha(&g) == 0.5 && cut_gemm_beta(&g) == 0.25);
    assert_int_equal(g.layout, CUT_GEMM_TN);
    assert_int_equal(g.dtype, CUT_DT_FP16);
    char name[128];
    cut_gemm_name(&g, name, sizeof name);
    assert_string_equal(name, "gemm_tn_fp16_M_16_N_4096_K_4096_batch_8_alpha_0.5_beta_0.25");
    /* defaults spelled out stay defaults: the seed-004 name as ever */
    cut_gemm d = {0};
    assert_int_equal(parse_words("MNK=64 batch=1 alpha=1 beta=0", &d, &e), 0);
    assert_false(cut_gemm_has_extras(&d));
    cut_gemm_name(&d, name, sizeof name);
    assert_string_equal(name, "gemm_nn_fp32_M_64_N_64_K_64");
    const char *bad[][2] = {{"MNK=8 batch=0", "batch=0"},   {"MNK=8 alpha=x", "alpha=x"},
                            {"MNK=8 beta=inf", "beta=inf"}, {"MNK=8 layout=tx", "'tx'"},
                            {"MNK=8 beta=1 beta=2", "second time"},
                            /* batch·M·K past 2^63: CI's fuzz run found the int64 product overflowing */
                            {"M=2000000000 N=1 K=2000000000 batch=84495672", "elements"},
                            {"MNK=46341", "elements"}};
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad); i++) {
        cut_gemm x = {0};
        assert_int_equal(parse_words(bad[i][0], &x, &e), -1);
        if (!strstr(e.msg, bad[i][1]))
            fail_msg("'%s': %s", bad[i][0], e.msg);
    }
    /* records: the extras round-trip; a plain record carries none of them */
    cut_gemm_record r;
    memset(&r, 0, sizeof r);
    r.gemm = g;
    r.sched = (cut_sched){.tpl = CUT_GEMM_TPL_MMA, .k = {64, 64, 32, 32, 32, 3, 1, 1, 16, 4}};
    r.status = CUT_ST_OK;
    r.median_ms = r.min_ms = r.max_ms = 1.0;
    r.rel_err = 1e-3;
    r.regs = r.spills = -1;
    snprintf(r.env.backend, sizeof r.env.backend, "emu");
    cut_buf b;
    cut_buf_init(&b);
    cut_gemm_record_to_json(&r, &b);
    assert_non_null(strstr(b.data, "\"batch\":8"));
    cut_gemm_record back;
    if (cut_gemm_record_parse(b.data, b.len, &back, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(cut_gemm_batch(&back.gemm), 8);
    assert_true(cut_gemm_beta(&back.gemm) == 0.25 && back.sched.k[CUT_GM_SPLITK] == 4);
    cut_buf_free(&b);
    cut_buf_init(&b);
    r.gemm = d;
    cut_gemm_record_to_json(&r, &b);
    assert_null(strstr(b.data, "batch"));
    assert_null(strstr(b.data, "alpha"));
    /* an mma record written before splitk existed reads as splitk 1 */
    char *at = strstr(b.data, ",\"splitk\":4");
    assert_non_null(at);
    memmove(at, at + strlen(",\"splitk\":4"), strlen(at + strlen(",\"splitk\":4")) + 1);
    if (cut_gemm_record_parse(b.data, strlen(b.data), &back, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(back.sched.k[CUT_GM_SPLITK], 1);
    cut_buf_free(&b);
}

static void test_work_cin_and_op(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_work w;
    const cut_gemm plain = mkx(7, 5, 3, CUT_GEMM_NT, CUT_DT_FP32, 1, 1.0, 0.0);
    assert_int_equal(cut_gemm_work(&plain, 3, 0, &w, &e), 0);
    assert_int_equal(w.nbufs, 3);
    assert_int_equal(w.op.ndims, 5);
    cut_work_free(&w);
    const cut_gemm g = mkx(7, 5, 3, CUT_GEMM_TT, CUT_DT_FP16, 3, 0.5, 0.25);
    assert_int_equal(cut_gemm_work(&g, 3, 0, &w, &e), 0);
    assert_int_equal(w.nbufs, 4);
    assert_string_equal(w.bufs[3].name, "Cin");
    assert_false(w.bufs[3].is_output);
    assert_int_equal(w.bufs[3].elems, 3 * 7 * 5);
    assert_int_equal(w.bufs[0].elems, 3 * 7 * 3);
    assert_true(w.flops == 2.0 * 7 * 5 * 3 * 3);
    cut_gemm back;
    if (cut_gemm_of_work_op(&w.op, &back, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(back.layout, CUT_GEMM_TT);
    assert_true(cut_gemm_batch(&back) == 3 && cut_gemm_alpha(&back) == 0.5 && cut_gemm_beta(&back) == 0.25);
    /* the reference of set 1 is alpha·op(A)op(B) + beta·Cin of set 1, by hand for one element of batch 2 */
    float a[3 * 7 * 3], b[3 * 5 * 3];
    cut_elem_to_floats(w.bufs[0].dtype, w.bufs[0].data[1], CUT_ARRAY_LEN(a), a);
    cut_elem_to_floats(w.bufs[1].dtype, w.bufs[1].data[1], CUT_ARRAY_LEN(b), b);
    const float *cin = w.bufs[3].data[1], *ref = w.bufs[2].data[1];
    const int z = 2, i = 4, j = 3;
    double s = 0.0;
    for (int p = 0; p < 3; p++) /* TT: A is K x M, B is N x K */
        s += (double)a[z * 21 + p * 7 + i] * b[z * 15 + j * 3 + p];
    const double want = 0.5 * s + 0.25 * cin[z * 35 + i * 5 + j];
    assert_true(fabs(ref[z * 35 + i * 5 + j] - want) < 1e-6);
    cut_work_free(&w);
}

/* ---- kernels under the emulator ---------------------------------------------------------------------------- */

/* g's kernel for s (with the planted edit from -> to when from is not NULL) emulated on set 0 of g's work; the
 * relative error against the work's reference. */
static double emulate(const cut_gemm *g, const cut_sched *s, const char *from, const char *to, const char *dir)
{
    cut_err e = {{0}};
    cut_kernel_src ks;
    if (cut_codegen_gemm(g, s, &ks, &e) != 0)
        fail_msg("%s", e.msg);
    if (from) /* a planted bug: the first occurrence of from becomes to */
        assert_int_equal(tu_plant(&ks.src, from, to), 0);
    cut_emu_kernel *k = NULL;
    if (cut_emu_compile(ks.src, ks.entry, dir, &k, &e) != 0)
        fail_msg("host compile: %s", e.msg);
    cut_work w;
    if (cut_gemm_work(g, 11, 0, &w, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(w.nbufs, 3 + ks.extra_bufs);
    const size_t nc = w.bufs[2].elems;
    float *c = malloc(nc * sizeof *c);
    for (size_t i = 0; i < nc; i++)
        c[i] = NAN;
    void *args[4] = {(void *)w.bufs[0].data[0], (void *)w.bufs[1].data[0], c,
                     w.nbufs > 3 ? (void *)w.bufs[3].data[0] : NULL};
    if (cut_emu_launch(k, ks.grid, ks.block, args, w.nbufs, &e) != 0)
        fail_msg("emulated launch: %s", e.msg);
    double *ref = malloc(nc * sizeof *ref);
    for (size_t i = 0; i < nc; i++)
        ref[i] = ((const float *)w.bufs[2].data[0])[i];
    const double err = cut_gemm_rel_error(c, ref, nc);
    free(c), free(ref);
    cut_work_free(&w);
    cut_emu_kernel_free(k);
    cut_kernel_src_free(&ks);
    return err;
}

/* Random valid schedules of template tpl for each workload; every one within the dtype's tolerance. With want_splitk,
 * mma schedules are drawn until one splits K (skinny shapes make it likely). */
static void emulate_each(const cut_gemm *gs, size_t n, int tpl, int want_splitk, const char *dir, uint64_t seed)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        cut_sched s;
        cut_err e = {{0}};
        for (int tries = 0;; tries++) {
            if (cut_gemm_sched_sample_valid(&gs[i], &d, tpl, &r, &s, 2000, &e) != 0)
                fail_msg("%s", e.msg);
            if (!want_splitk || s.k[CUT_GM_SPLITK] > 1 || tries > 200)
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

static void test_simt_extras_emulated(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("gemm_extras_simt");
    assert_non_null(dir);
    const cut_gemm gs[] = {
        mkx(1, 37, 29, CUT_GEMM_TN, CUT_DT_FP32, 3, 0.5, 0.25),
        mkx(16, 20, 33, CUT_GEMM_TT, CUT_DT_FP32, 1, 0.5, 0.25),
        mkx(13, 9, 17, CUT_GEMM_NT, CUT_DT_FP32, 3, 1.0, 0.0),
        mkx(12, 24, 20, CUT_GEMM_TN, CUT_DT_FP32, 2, -1.0, 1.0), /* even rows: vector loads of A stored KxM */
        mkx(16, 24, 16, CUT_GEMM_TT, CUT_DT_BF16, 3, 0.5, 0.25),
    };
    emulate_each(gs, CUT_ARRAY_LEN(gs), CUT_GEMM_TPL_SIMT, 0, dir, 5);
    free(dir);
}

static void test_mma_extras_emulated(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("gemm_extras_mma");
    assert_non_null(dir);
    const cut_gemm gs[] = {
        mkx(24, 40, 48, CUT_GEMM_TN, CUT_DT_FP16, 1, 0.5, 0.25),
        mkx(16, 24, 40, CUT_GEMM_TT, CUT_DT_BF16, 3, 1.0, 0.0),
        mkx(20, 16, 24, CUT_GEMM_TN, CUT_DT_TF32, 1, 0.5, 0.25),
        mkx(1, 72, 64, CUT_GEMM_NT, CUT_DT_FP16, 2, 0.5, 0.25),
    };
    emulate_each(gs, CUT_ARRAY_LEN(gs), CUT_GEMM_TPL_MMA, 0, dir, 6);
    /* skinny shapes through serial split-K */
    const cut_gemm sk[] = {
        mkx(16, 40, 200, CUT_GEMM_NN, CUT_DT_FP16, 1, 0.5, 0.25),
        mkx(1, 24, 136, CUT_GEMM_NT, CUT_DT_BF16, 2, 1.0, 0.0), /* M = 1: A stored KxM would have 2-byte rows */
    };
    emulate_each(sk, CUT_ARRAY_LEN(sk), CUT_GEMM_TPL_MMA, 1, dir, 7);
    free(dir);
}

/* The comparison catches a kernel that ignores beta, one whose later split-K slices overwrite C instead of adding,
 * and a TN fragment read without the transposition; the same schedules unedited pass. */
static void test_planted_extras_caught(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("gemm_extras_plant");
    assert_non_null(dir);
    const cut_gemm simt_g = mkx(16, 20, 33, CUT_GEMM_TN, CUT_DT_FP32, 2, 0.5, 0.25);
    const cut_sched simt_s = {.tpl = CUT_GEMM_TPL_SIMT, .k = {16, 16, 8, 2, 2, 1, 1, 0, 8}};
    const cut_gemm mma_g = mkx(16, 40, 200, CUT_GEMM_TN, CUT_DT_FP16, 1, 0.5, 0.25);
    const cut_sched mma_s = {.tpl = CUT_GEMM_TPL_MMA, .k = {64, 64, 32, 32, 32, 2, 1, 1, 8, 4}};
    const struct {
        const cut_gemm *g;
        const cut_sched *s;
        const char *from, *to;
    } plants[] = {
        {&simt_g, &simt_s, NULL, NULL},
        {&simt_g, &simt_s, "(ALPHA * (v) + BETA * __ldg(Cin + (i)))", "(ALPHA * (v))"},
        {&mma_g, &mma_s, NULL, NULL},
        {&mma_g, &mma_s, "slice > 0 ? ALPHA * (v) + __ldcg(C + (i))", "slice > 0 ? ALPHA * (v)"},
        {&mma_g, &mma_s, "ldsm_x4_trans(af[mi]", "ldsm_x4(af[mi]"},
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

/* Random mma schedules of the extras compile with NVRTC for sm_90 without spills. */
static void test_nvrtc_mma_extras(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 9);
    const cut_gemm gs[] = {
        mkx(1, 4096, 4096, CUT_GEMM_NT, CUT_DT_FP16, 1, 1.0, 0.0),
        mkx(64, 4096, 4096, CUT_GEMM_NN, CUT_DT_BF16, 1, 0.5, 0.25),
        mkx(512, 512, 512, CUT_GEMM_NN, CUT_DT_FP16, 32, 1.0, 0.0),
        mkx(4096, 4096, 4096, CUT_GEMM_TN, CUT_DT_FP16, 1, 1.0, 0.0),
        mkx(1000, 520, 264, CUT_GEMM_TT, CUT_DT_TF32, 2, 0.5, 0.25),
    };
    enum { PER = 2, COUNT = 5 * PER };
    cut_kernel_src ks[COUNT];
    const char *srcs[COUNT];
    for (int i = 0; i < COUNT; i++) {
        const cut_gemm *g = &gs[i / PER];
        cut_sched s;
        cut_err e = {{0}};
        if (cut_gemm_sched_sample_valid(g, &d, CUT_GEMM_TPL_MMA, &r, &s, 2000, &e) != 0 ||
            cut_codegen_gemm(g, &s, &ks[i], &e) != 0)
            fail_msg("%s", e.msg);
        srcs[i] = ks[i].src;
    }
    cut_compiled bins[COUNT];
    cut_compile_opts co;
    cut_compile_opts_default(&co);
    cut_err e = {{0}};
    assert_int_equal(cut_compile_batch(srcs, COUNT, &co, bins, &e), 0);
    for (int i = 0; i < COUNT; i++) {
        const char *sched = strstr(ks[i].src, "// schedule: ");
        const int slen = (int)(strchr(sched, '\n') - sched);
        if (!bins[i].ok)
            fail_msg("NVRTC failed: %.*s\n%s", slen, sched, bins[i].log);
        printf("  %.*s: %d registers, spills %d/%d\n", slen, sched, bins[i].regs, bins[i].spill_stores,
               bins[i].spill_loads);
        assert_true(bins[i].spill_stores == 0 && bins[i].spill_loads == 0);
        cut_compiled_free(&bins[i]);
        cut_kernel_src_free(&ks[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_words_names_records),
        cmocka_unit_test(test_work_cin_and_op),
        cmocka_unit_test(test_simt_extras_emulated),
        cmocka_unit_test(test_mma_extras_emulated),
        cmocka_unit_test(test_planted_extras_caught),
        cmocka_unit_test(test_nvrtc_mma_extras),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
