/* cutune tests — GEMM kernels on the emulation runner (test_gemm_wgmma_emu, test_gemm_wgmma_split): the runner,
 * a GEMM's work prepared on it, and one schedule's kernel run there (with a planted edit when asked). Static, as
 * testutil.h: each test program includes it once. */
#ifndef CUTUNE_TESTS_GEMM_EMU_TESTUTIL_H
#define CUTUNE_TESTS_GEMM_EMU_TESTUTIL_H

#include "cutune/gemm.h"
#include "cutune/measure.h"
#include "testutil.h"

#include <stdlib.h>

static char *g_dir;
static cut_runner *g_runner;

/* An emulation runner in a fresh temporary folder named by tag, timing each call once. 0, or -1. */
static int gemu_open(const char *tag)
{
    g_dir = tu_tmpdir(tag);
    cut_timing t;
    cut_timing_default(&t);
    t.warmup = 0;
    t.min_repeats = t.max_repeats = 1;
    t.min_total_ms = 0;
    cut_err e = {{0}};
    g_runner = cut_runner_emu_new(g_dir, &t, &e);
    return g_dir && g_runner ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    cut_runner_free(g_runner);
    free(g_dir);
    return 0;
}

static cut_gemm mkg(int m, int n, int k, cut_gemm_layout l, cut_dtype dt)
{
    return (cut_gemm){.m = m, .n = n, .k = k, .layout = l, .dtype = dt};
}

/* g's work (seed) prepared on the emulation runner as a plain work: the runner computes fp32 GEMMs only when it
 * prepares a GEMM op itself; the calls and references are the same. */
static void prepare(const cut_gemm *g, uint64_t seed)
{
    cut_work w;
    cut_err e = {{0}};
    if (cut_gemm_work(g, seed, 0, &w, &e) != 0)
        fail_msg("%s", e.msg);
    w.op = (cut_work_op){.kind = CUT_WORK_PLAIN};
    if (cut_runner_prepare_work(g_runner, &w, &e) != 0)
        fail_msg("prepare: %s", e.msg);
    cut_work_free(&w);
}

/* s's kernel on the prepared work of g (with the planted edit from -> to when from is not NULL) on a grid of
 * grid_x blocks along x (0: the kernel's own; a persistent kernel is right with any): the result. */
static cut_result run_grid(const cut_gemm *g, const cut_sched *s, const char *from, const char *to, unsigned grid_x)
{
    cut_err e = {{0}};
    cut_kernel_src ks;
    if (cut_codegen_gemm(g, s, &ks, &e) != 0)
        fail_msg("codegen: %s", e.msg);
    if (from)
        assert_int_equal(tu_plant(&ks.src, from, to), 0);
    if (grid_x)
        ks.grid[0] = grid_x;
    cut_call c;
    cut_result res;
    cut_result_reset(&res);
    if (cut_call_of_kernel(&ks, NULL, &c, &res) != 0)
        fail_msg("call: %s", res.error);
    if (cut_runner_run_call(g_runner, &c, &res, NULL, &e) != 0)
        fail_msg("run: %s", e.msg);
    cut_kernel_src_free(&ks);
    return res;
}

/* s's kernel on the prepared work of g (with the planted edit from -> to when from is not NULL): the result. */
static inline cut_result run(const cut_gemm *g, const cut_sched *s, const char *from, const char *to)
{
    return run_grid(g, s, from, to, 0);
}

#endif
