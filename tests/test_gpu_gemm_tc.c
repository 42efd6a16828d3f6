/* GPU test of the tensor-core GEMM templates (issue 6): skips with 77 where there is no GPU.
 *
 * A 520x392x264 GEMM (a tail along every axis for every tile), for each template (mma, and wgmma on sm_90), dtype
 * (fp16, bf16, tf32) and layout (NN, NT) the template computes: random valid schedules compiled with NVRTC (sm_90a
 * where the kernel asks for it) all measure OK in the worker (fresh poison, relative Frobenius error within the
 * dtype's tolerance against the double reference of the rounded inputs); a planted wrong wgmma kernel (A scaled by
 * -1 through wgmma's immediate scale) is CUT_ST_WRONG_RESULT and the next correct one is OK again. tf32 NN on wgmma
 * (C^T = B^T A^T, A's fragments from registers, issue 21) is among them, and so are tf32 TT (A's fragments from
 * registers) and TN (B copied K-major by the consumers too); hand-picked tf32 NN, TN and TT schedules cover their
 * variants (waitd 0/1, mi 1/2, nc 1/2, cl 1/2, odd and even numbers of k tiles, one k tile). Every layout
 * (NN, NT, TN, TT) is measured; issue 21's TN/TT, strided batch and alpha/beta on wgmma have hand-picked schedules
 * of their own; split-K on wgmma has hand-picked schedules on the decode shapes M = 16, 64 x 4096 x 4096 and tails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/compile.h"
#include "cutune/gemm.h"
#include "cutune/gemm_space.h"
#include "cutune/gpu.h"
#include "gpu_testutil.h"
#include "cutune/measure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NCAND = 4 };

static cut_gpu_info g_info;

/* Compiles ks[i] into bins[i] for the device, with the 'a' target where the kernel needs it. */
static void compile_all(cut_kernel_src *ks, cut_compiled *bins, int n)
{
    cut_err e = {{0}};
    for (int i = 0; i < n; i++) {
        cut_compile_opts o;
        cut_compile_opts_default(&o);
        o.sm_major = g_info.sm_major;
        o.sm_minor = g_info.sm_minor;
        o.arch_suffix_a = ks[i].arch_a;
        if (cut_compile_one(ks[i].src, "gemm_tc.cu", &o, &bins[i], &e) != 0)
            fail_msg("compile: %s", e.msg);
        if (!bins[i].ok)
            fail_msg("candidate %d does not compile: %.400s", i, bins[i].log);
    }
}

/* Measures NCAND random schedules of template tpl on g (plus a planted wrong one for wgmma). Returns how many
 * were measured (0 when the template does not apply). */
static int run_one(cut_runner *r, int tpl, const cut_gemm *g, uint64_t seed)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    d.sm_major = g_info.sm_major;
    d.sm_minor = g_info.sm_minor;
    const cut_gemm_template *t = cut_gemm_template_get(tpl);
    cut_err e = {{0}};
    if (!t->applies(g, &d, &e)) {
        printf("  %-5s %s %s: skipped (%s)\n", t->name, cut_dtype_name(g->dtype), cut_gemm_layout_name(g->layout),
               e.msg);
        return 0;
    }
    if (cut_runner_prepare_gemm(r, g, seed, &e) != 0)
        fail_msg("prepare_gemm: %s", e.msg);
    const int plant = tpl == CUT_GEMM_TPL_WGMMA;
    const int n = NCAND + 2 * plant;
    cut_kernel_src ks[NCAND + 2];
    cut_compiled bins[NCAND + 2];
    cut_rng rng;
    cut_rng_seed(&rng, seed);
    for (int i = 0; i < NCAND; i++) {
        cut_sched s;
        if (cut_gemm_sched_sample_valid(g, &d, tpl, &rng, &s, 1000, &e) != 0)
            fail_msg("sampling: %s", e.msg);
        if (cut_codegen_gemm(g, &s, &ks[i], &e) != 0)
            fail_msg("codegen: %s", e.msg);
    }
    if (plant) {
        ks[NCAND] = ks[0];
        ks[NCAND].src = strdup(ks[0].src);
        char *p = strstr(ks[NCAND].src, "p, 1, 1");
        assert_non_null(p);
        memcpy(p, "p,-1, 1", 7); /* imm-scale-a = -1: C = -A.B */
        ks[NCAND + 1] = ks[1];
        ks[NCAND + 1].src = strdup(ks[1].src);
    }
    compile_all(ks, bins, n);
    cut_candidate c[NCAND + 2];
    for (int i = 0; i < n; i++)
        c[i] = (cut_candidate){.ks = &ks[i], .bin = &bins[i]};
    cut_result res[NCAND + 2];
    if (cut_runner_measure(r, c, n, res, &e) != 0)
        fail_msg("measure: %s", e.msg);
    const double tol = cut_gemm_tolerance(g->dtype);
    for (int i = 0; i < n; i++) {
        const char *sched = strstr(ks[i].src, "// schedule: ");
        printf("  %-5s %s %s #%d %-13s %8.4f ms rel.err %.3g  %.*s%s\n", t->name, cut_dtype_name(g->dtype),
               cut_gemm_layout_name(g->layout), i, cut_status_name(res[i].status), res[i].median_ms,
               res[i].max_abs_err, sched ? (int)(strchr(sched, '\n') - sched) - 13 : 0, sched ? sched + 13 : "",
               plant && i == NCAND ? "  (planted wrong kernel)" : "");
        if (plant && i == NCAND) {
            assert_int_equal(res[i].status, CUT_ST_WRONG_RESULT);
            continue;
        }
        if (res[i].status != CUT_ST_OK)
            fail_msg("candidate %d: %s %s", i, cut_status_name(res[i].status), res[i].error);
        assert_true(res[i].max_abs_err <= tol);
        assert_true(res[i].median_ms > 0);
    }
    for (int i = 0; i < n; i++) {
        cut_compiled_free(&bins[i]);
        cut_kernel_src_free(&ks[i]);
    }
    return n;
}

/* d: sm_90's limits with this GPU's architecture and SM count. 1 when the wgmma template runs here, else 0 with
 * "what: skipped (why)" printed. */
static int wgmma_here(cut_devlimits *d, const char *what)
{
    cut_devlimits_sm90(d);
    d->sm_major = g_info.sm_major;
    d->sm_minor = g_info.sm_minor;
    d->sm_count = g_info.sm_count;
    const cut_gemm g = {512, 512, 512, CUT_GEMM_NT, CUT_DT_FP16};
    cut_err e = {{0}};
    if (cut_gemm_tpl_wgmma.applies(&g, d, &e))
        return 1;
    printf("  %s: skipped (%s)\n", what, e.msg);
    return 0;
}

/* Hand-picked tf32 NN, TN and TT wgmma schedules (bn mi nc st waitd gm cl) on tail shapes: every valid one (TN's
 * copies of B leave fewer within shared memory) OK within tolerance. */
static void test_wgmma_tf32(void **state)
{
    (void)state;
    cut_devlimits d;
    if (!wgmma_here(&d, "wgmma tf32 NN"))
        return;
    cut_err e = {{0}};
    const cut_gemm shapes[] = {{520, 392, 264, CUT_GEMM_NN, CUT_DT_TF32}, /* 9 k tiles */
                               {1000, 1000, 1024, CUT_GEMM_NN, CUT_DT_TF32}, /* 32 */
                               {200, 136, 24, CUT_GEMM_NN, CUT_DT_TF32}, /* 1 */
                               {520, 392, 264, CUT_GEMM_TT, CUT_DT_TF32},  {1000, 1000, 1024, CUT_GEMM_TT, CUT_DT_TF32},
                               {200, 136, 24, CUT_GEMM_TT, CUT_DT_TF32},   {520, 392, 264, CUT_GEMM_TN, CUT_DT_TF32},
                               {1000, 1000, 1024, CUT_GEMM_TN, CUT_DT_TF32}, {200, 136, 24, CUT_GEMM_TN, CUT_DT_TF32}};
    static const int k[][7] = {{128, 1, 2, 4, 1, 8, 1}, {256, 1, 1, 3, 1, 8, 1}, {128, 2, 1, 4, 0, 16, 1},
                               {64, 1, 2, 6, 1, 1, 2},  {192, 1, 2, 3, 0, 8, 2}, {64, 2, 2, 5, 0, 8, 1}};
    enum { NS = sizeof k / sizeof k[0] };
    cut_timing t;
    cut_timing_default(&t);
    t.min_total_ms = 2.0;
    cut_runner *r = cut_runner_gpu_new(0, getenv("CUTUNE_BIN"), &t, &e);
    if (!r)
        fail_msg("cut_runner_gpu_new: %s", e.msg);
    for (size_t si = 0; si < CUT_ARRAY_LEN(shapes); si++) {
        const cut_gemm *g = &shapes[si];
        if (cut_runner_prepare_gemm(r, g, 700 + si, &e) != 0)
            fail_msg("prepare_gemm: %s", e.msg);
        cut_kernel_src ks[NS];
        cut_compiled bins[NS];
        cut_candidate c[NS];
        cut_result res[NS];
        int n = 0;
        for (int i = 0; i < NS; i++) {
            cut_sched s = {.tpl = CUT_GEMM_TPL_WGMMA};
            memcpy(s.k, k[i], sizeof k[i]);
            if (g->layout == CUT_GEMM_TN && cut_gemm_sched_check(g, &s, &d, &e) != 0) { /* shared memory */
                printf("  tf32 TN schedule %d refused: %s\n", i, e.msg);
                continue;
            }
            if (cut_gemm_sched_check(g, &s, &d, &e) != 0 || cut_codegen_gemm(g, &s, &ks[n++], &e) != 0)
                fail_msg("schedule %d: %s", i, e.msg);
        }
        assert_true(n >= NS - 1);
        compile_all(ks, bins, n);
        for (int i = 0; i < n; i++)
            c[i] = (cut_candidate){.ks = &ks[i], .bin = &bins[i]};
        if (cut_runner_measure(r, c, n, res, &e) != 0)
            fail_msg("measure: %s", e.msg);
        for (int i = 0; i < n; i++) {
            const char *sched = strstr(ks[i].src, "// schedule: ");
            printf("  tf32 %s %dx%dx%d %-13s %8.4f ms rel.err %.3g  %.*s\n", cut_gemm_layout_name(g->layout), g->m,
                   g->n, g->k,
                   cut_status_name(res[i].status), res[i].median_ms, res[i].max_abs_err,
                   (int)(strchr(sched, '\n') - sched) - 13, sched + 13);
            if (res[i].status != CUT_ST_OK)
                fail_msg("schedule %d: %s %s", i, cut_status_name(res[i].status), res[i].error);
            assert_true(res[i].max_abs_err <= cut_gemm_tolerance(CUT_DT_TF32));
            cut_compiled_free(&bins[i]);
            cut_kernel_src_free(&ks[i]);
        }
    }
    cut_runner_free(r);
}

static cut_runner *new_runner(void)
{
    cut_timing t;
    cut_timing_default(&t);
    t.min_total_ms = 2.0;
    cut_err e = {{0}};
    cut_runner *r = cut_runner_gpu_new(0, getenv("CUTUNE_BIN"), &t, &e);
    if (!r)
        fail_msg("cut_runner_gpu_new: %s", e.msg);
    return r;
}

/* Measures the valid ones of ns hand-picked wgmma schedules k (bn mi nc st waitd gm cl splitk pp) on g: each must
 * be OK within tolerance. ms[i] (when not NULL): schedule i's median time, 0 when refused. Returns how many ran. */
static int measure_picked(cut_runner *r, const cut_gemm *g, uint64_t seed, const int (*k)[9], int ns,
                          const cut_devlimits *d, double *ms)
{
    cut_err e = {{0}};
    if (cut_runner_prepare_gemm(r, g, seed, &e) != 0)
        fail_msg("prepare_gemm: %s", e.msg);
    cut_kernel_src *ks = calloc((size_t)ns, sizeof *ks);
    cut_compiled *bins = calloc((size_t)ns, sizeof *bins);
    cut_candidate *c = calloc((size_t)ns, sizeof *c);
    cut_result *res = calloc((size_t)ns, sizeof *res);
    int *which = calloc((size_t)ns, sizeof *which), n = 0;
    for (int i = 0; i < ns; i++) {
        if (ms)
            ms[i] = 0;
        cut_sched s = {.tpl = CUT_GEMM_TPL_WGMMA};
        memcpy(s.k, k[i], sizeof k[i]);
        if (cut_gemm_sched_check(g, &s, d, &e) != 0) { /* e.g. a tile far larger than the problem */
            printf("  schedule %d refused: %s\n", i, e.msg);
            continue;
        }
        if (cut_codegen_gemm(g, &s, &ks[n], &e) != 0)
            fail_msg("schedule %d: %s", i, e.msg);
        which[n++] = i;
    }
    compile_all(ks, bins, n);
    for (int i = 0; i < n; i++)
        c[i] = (cut_candidate){.ks = &ks[i], .bin = &bins[i]};
    if (n > 0 && cut_runner_measure(r, c, n, res, &e) != 0)
        fail_msg("measure: %s", e.msg);
    char name[128];
    cut_gemm_name(g, name, sizeof name);
    for (int i = 0; i < n; i++) {
        const char *sched = strstr(ks[i].src, "// schedule: ");
        printf("  %s %-13s %8.4f ms rel.err %.3g  %.*s\n", name, cut_status_name(res[i].status), res[i].median_ms,
               res[i].max_abs_err, (int)(strchr(sched, '\n') - sched) - 13, sched + 13);
        if (res[i].status != CUT_ST_OK)
            fail_msg("%s: %s %s", name, cut_status_name(res[i].status), res[i].error);
        assert_true(res[i].max_abs_err <= cut_gemm_tolerance(g->dtype));
        if (ms)
            ms[which[i]] = res[i].median_ms;
        cut_compiled_free(&bins[i]);
        cut_kernel_src_free(&ks[i]);
    }
    free(ks), free(bins), free(c), free(res), free(which);
    return n;
}

/* Issue 21 on wgmma, hand-picked schedules (bn mi nc st waitd gm cl) on tail shapes: A stored KxM (TN, TT; A
 * MN-major, wgmma's A-transpose flag), a strided batch (3-D TMA maps, blockIdx.y; with cl 2 the 3-D multicast),
 * alpha and beta (Cin), and the batched 32 x 512^3 shape, tf32 TN and TT among them: every valid one OK
 * within tolerance. */
static void test_wgmma_extras(void **state)
{
    (void)state;
    cut_devlimits d;
    if (!wgmma_here(&d, "wgmma TN and extras"))
        return;
    cut_gemm shapes[] = {{520, 392, 264, CUT_GEMM_TN, CUT_DT_FP16}, {520, 392, 264, CUT_GEMM_TT, CUT_DT_BF16},
                         {520, 392, 264, CUT_GEMM_TN, CUT_DT_FP16}, {512, 512, 512, CUT_GEMM_NN, CUT_DT_FP16},
                         {520, 392, 264, CUT_GEMM_NT, CUT_DT_BF16}, {520, 392, 264, CUT_GEMM_NN, CUT_DT_TF32},
                         {200, 136, 72, CUT_GEMM_TT, CUT_DT_FP16}, {520, 392, 264, CUT_GEMM_TN, CUT_DT_TF32},
                         {200, 136, 72, CUT_GEMM_TT, CUT_DT_TF32}};
    cut_gemm_set_extras(&shapes[2], 3, 0.5, 0.25);
    cut_gemm_set_extras(&shapes[3], 32, 1.0, 0.0);
    cut_gemm_set_extras(&shapes[4], 1, 0.5, 0.25);
    cut_gemm_set_extras(&shapes[5], 3, 0.5, 0.25);
    cut_gemm_set_extras(&shapes[6], 2, -1.0, 1.0);
    cut_gemm_set_extras(&shapes[7], 3, 0.5, 0.25); /* tf32 TN and TT with the extras */
    cut_gemm_set_extras(&shapes[8], 2, 2.0, 0.0);
    static const int k[][9] = {{128, 1, 2, 4, 1, 8, 1}, {256, 1, 2, 3, 1, 8, 2}, {64, 2, 1, 4, 0, 16, 1},
                               {192, 1, 2, 3, 0, 8, 2}, {128, 2, 1, 4, 1, 1, 1}};
    cut_runner *r = new_runner();
    for (size_t si = 0; si < CUT_ARRAY_LEN(shapes); si++)
        assert_true(measure_picked(r, &shapes[si], 800 + si, k, (int)CUT_ARRAY_LEN(k), &d, NULL) >= 2);
    cut_runner_free(r);
}

/* Split-K on wgmma (splitk, the 8th knob), hand-picked schedules (bn mi nc st waitd gm cl splitk) on the LLM-decode
 * shapes M = 16 and 64, N = K = 4096, fp16 and bf16 NN (where bn=64 without split-K fills 64 of the SMs), and on
 * tail shapes with a batch and alpha/beta, tf32 among them: every valid one OK within tolerance (the worker's
 * repeated launches check that the counters are reset). Prints each split schedule's time against splitk=1's. */
static void test_wgmma_splitk(void **state)
{
    (void)state;
    cut_devlimits d;
    if (!wgmma_here(&d, "wgmma split-K"))
        return;
    cut_gemm shapes[] = {{16, 4096, 4096, CUT_GEMM_NN, CUT_DT_FP16}, {64, 4096, 4096, CUT_GEMM_NN, CUT_DT_BF16},
                         {16, 4096, 4096, CUT_GEMM_NN, CUT_DT_BF16}, {64, 4096, 4096, CUT_GEMM_NN, CUT_DT_FP16},
                         {16, 200, 520, CUT_GEMM_NN, CUT_DT_FP16},   {64, 136, 1000, CUT_GEMM_TN, CUT_DT_BF16},
                         {1, 72, 264, CUT_GEMM_NT, CUT_DT_TF32},     {16, 200, 520, CUT_GEMM_NN, CUT_DT_TF32}};
    cut_gemm_set_extras(&shapes[4], 3, 0.5, 0.25);
    cut_gemm_set_extras(&shapes[5], 2, 2.0, 0.0);
    cut_gemm_set_extras(&shapes[7], 1, 0.5, 0.25);
    static const int k[][9] = {{64, 1, 1, 4, 1, 1, 1, 1},  {64, 1, 1, 4, 1, 1, 1, 2},  {64, 1, 1, 4, 1, 1, 1, 3},
                               {64, 1, 1, 6, 1, 1, 1, 4},  {64, 1, 1, 4, 1, 1, 2, 4},  {128, 1, 1, 4, 1, 1, 1, 4},
                               {64, 1, 1, 4, 0, 1, 1, 6},  {64, 1, 1, 5, 1, 1, 1, 8},  {128, 1, 1, 4, 1, 1, 2, 8},
                               {64, 1, 1, 4, 1, 1, 1, 16}};
    cut_runner *r = new_runner();
    for (size_t si = 0; si < CUT_ARRAY_LEN(shapes); si++) {
        double ms[CUT_ARRAY_LEN(k)];
        assert_true(measure_picked(r, &shapes[si], 900 + si, k, (int)CUT_ARRAY_LEN(k), &d, ms) >= 3);
        double best = 0;
        int at = -1;
        for (int i = 1; i < (int)CUT_ARRAY_LEN(k); i++)
            if (ms[i] > 0 && (at < 0 || ms[i] < best))
                best = ms[i], at = i;
        if (ms[0] > 0 && at >= 0)
            printf("  best split schedule %d: %.4f ms against splitk=1's %.4f ms (%.2fx)\n", at, best, ms[0],
                   ms[0] / best);
    }
    cut_runner_free(r);
}

/* Persistent wgmma kernels (pp, the 9th knob: 1 cooperative, 2 ping-pong), hand-picked schedules (bn mi nc st waitd
 * gm cl splitk pp) on 4096^3 fp16 and bf16 NN and NT, the batched 32 x 512^3 and tail shapes with a batch and
 * alpha/beta (tf32 NT among them): every valid one OK within tolerance. On the GPU the consumers' turns are real
 * races (the emulator's fibers run one at a time). Prints each pp schedule's time against the same tile's pp=0. */
static void test_wgmma_persist(void **state)
{
    (void)state;
    cut_devlimits d;
    if (!wgmma_here(&d, "wgmma persistent"))
        return;
    cut_gemm shapes[] = {{4096, 4096, 4096, CUT_GEMM_NN, CUT_DT_FP16}, {4096, 4096, 4096, CUT_GEMM_NT, CUT_DT_BF16},
                         {512, 512, 512, CUT_GEMM_NN, CUT_DT_FP16},    {2000, 1000, 520, CUT_GEMM_TN, CUT_DT_FP16},
                         {1000, 2000, 264, CUT_GEMM_NT, CUT_DT_TF32},  {2064, 2000, 264, CUT_GEMM_TT, CUT_DT_BF16}};
    cut_gemm_set_extras(&shapes[2], 32, 1.0, 0.0);
    cut_gemm_set_extras(&shapes[3], 2, 0.5, 0.25);
    cut_gemm_set_extras(&shapes[4], 3, 2.0, 0.0);
    cut_gemm_set_extras(&shapes[5], 1, -1.0, 1.0);
    /* pairs: a plain schedule, then pp 1 or 2 on the same tile (ping-pong: each consumer MI x 64 rows) */
    static const int k[][9] = {{256, 1, 2, 4, 0, 16, 1, 1, 0}, {256, 1, 2, 4, 0, 16, 1, 1, 1},
                               {256, 1, 2, 4, 1, 16, 1, 1, 1}, {128, 2, 1, 4, 1, 16, 1, 1, 0},
                               {128, 2, 2, 4, 1, 16, 1, 1, 2}, {128, 2, 2, 5, 0, 8, 1, 1, 2},
                               {256, 1, 2, 4, 1, 16, 1, 1, 2}, {192, 1, 2, 4, 1, 8, 1, 1, 1}};
    cut_runner *r = new_runner();
    for (size_t si = 0; si < CUT_ARRAY_LEN(shapes); si++) {
        double ms[CUT_ARRAY_LEN(k)];
        assert_true(measure_picked(r, &shapes[si], 950 + si, k, (int)CUT_ARRAY_LEN(k), &d, ms) >= 3);
        if (ms[0] > 0 && ms[1] > 0 && ms[2] > 0)
            printf("  128x256 tile: pp=1 %.4f ms (waitd 0), %.4f ms (waitd 1) against pp=0's %.4f ms\n", ms[1],
                   ms[2], ms[0]);
        if (ms[3] > 0 && ms[4] > 0)
            printf("  128x128 tile: pp=2 %.4f ms against pp=0's %.4f ms (%.2fx)\n", ms[4], ms[3], ms[3] / ms[4]);
    }
    cut_runner_free(r);
}

static void test_tensor_core_templates(void **state)
{
    (void)state;
    cut_timing t;
    cut_timing_default(&t);
    t.min_total_ms = 2.0;
    cut_err e = {{0}};
    cut_runner *r = cut_runner_gpu_new(0, getenv("CUTUNE_BIN"), &t, &e);
    if (!r)
        fail_msg("cut_runner_gpu_new: %s", e.msg);
    const int tpls[] = {CUT_GEMM_TPL_MMA, CUT_GEMM_TPL_WGMMA};
    const cut_dtype dts[] = {CUT_DT_FP16, CUT_DT_BF16, CUT_DT_TF32};
    int measured = 0, wgmma_tf32[4] = {0};
    uint64_t seed = 600;
    for (size_t a = 0; a < CUT_ARRAY_LEN(tpls); a++)
        for (size_t b = 0; b < CUT_ARRAY_LEN(dts); b++)
            for (int l = 0; l < 4; l++) { /* NN, NT, TN, TT */
                const cut_gemm g = {520, 392, 264, (cut_gemm_layout)l, dts[b]};
                const int n = run_one(r, tpls[a], &g, seed++);
                measured += n;
                if (tpls[a] == CUT_GEMM_TPL_WGMMA && dts[b] == CUT_DT_TF32)
                    wgmma_tf32[l] = n;
            }
    printf("  %d tensor-core candidates measured\n", measured);
    assert_true(measured >= 5 * NCAND);
    if (g_info.sm_major == 9 && g_info.sm_minor == 0) /* tf32 runs on wgmma in every layout, planted kernels caught */
        for (int l = 0; l < 4; l++)
            assert_int_equal(wgmma_tf32[l], NCAND + 2);
    cut_runner_free(r);
}

int main(void)
{
    int code = tu_gpu_start(&g_info);
    if (code >= 0)
        return code;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_core_templates),
        cmocka_unit_test(test_wgmma_tf32),
        cmocka_unit_test(test_wgmma_extras),
        cmocka_unit_test(test_wgmma_splitk),
        cmocka_unit_test(test_wgmma_persist),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
