/* cutune tests — GEMM kernels on the emulation runner (test_gemm_wgmma_emu, _split, _persist): the runner, a
 * GEMM's work prepared on it, one schedule's kernel run there (with a planted edit when asked), schedules of many
 * shapes emulated against the reference, and kernels compiled with NVRTC for sm_90a without spills. Static, as
 * testutil.h: each test program includes it once. */
#ifndef CUTUNE_TESTS_GEMM_EMU_TESTUTIL_H
#define CUTUNE_TESTS_GEMM_EMU_TESTUTIL_H

#include "cutune/compile.h"
#include "cutune/gemm.h"
#include "cutune/gemm_space.h"
#include "cutune/measure.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The j-th schedule to emulate on g, and the grid's x to run it on (*grid_x = 0: the kernel's own). */
typedef cut_sched (*gemu_pick_fn)(const cut_gemm *g, cut_rng *r, int j, unsigned *grid_x);

/* Emulates count schedules from pick on each of the shapes (work seed + shape index; pick's rng from seed): each
 * must be OK within the dtype's tolerance. Returns the failures (each printed). */
static inline int gemu_emulate(const cut_gemm *shapes, int nshapes, int count, uint64_t seed, gemu_pick_fn pick)
{
    cut_rng r;
    cut_rng_seed(&r, seed);
    int failed = 0;
    for (int i = 0; i < nshapes; i++) {
        const cut_gemm *g = &shapes[i];
        prepare(g, seed + (uint64_t)i);
        for (int j = 0; j < count; j++) {
            unsigned gx = 0;
            const cut_sched s = pick(g, &r, i + j, &gx);
            char name[128], desc[160], grid[32] = "";
            cut_gemm_name(g, name, sizeof name);
            cut_gemm_sched_describe(&s, desc, sizeof desc);
            if (gx)
                snprintf(grid, sizeof grid, " grid %u:", gx);
            const cut_result res = run_grid(g, &s, NULL, NULL, gx);
            printf("  %-40s %-62s%s %s rel.err %.3g\n", name, desc, grid, cut_status_name(res.status),
                   res.max_abs_err);
            if (res.status != CUT_ST_OK || !(res.max_abs_err <= cut_gemm_tolerance(g->dtype))) {
                fprintf(stderr, "%s %s%s %s %s\n", name, desc, grid, cut_status_name(res.status), res.error);
                failed++;
            }
        }
    }
    return failed;
}

/* Compiles the n kernels ks for sm_90a and frees them: returns how many failed to compile, spilled or had a wgmma
 * serialized by ptxas (each printed with its schedule line); *rmax the most registers a kernel took. */
static inline int gemu_compile_sm90a(cut_kernel_src *ks, int n, int *rmax)
{
    cut_compiled *bins = calloc((size_t)n, sizeof *bins);
    const char **srcs = calloc((size_t)n, sizeof *srcs);
    assert_true(bins && srcs);
    for (int i = 0; i < n; i++)
        srcs[i] = ks[i].src;
    cut_compile_opts co;
    cut_compile_opts_default(&co);
    co.arch_suffix_a = 1;
    cut_err e = {{0}};
    assert_int_equal(cut_compile_batch(srcs, n, &co, bins, &e), 0);
    int failed = 0;
    *rmax = 0;
    for (int i = 0; i < n; i++) {
        const char *sched = strstr(ks[i].src, "// schedule: ");
        const int slen = sched ? (int)(strchr(sched, '\n') - sched) : 0;
        if (!bins[i].ok) {
            fprintf(stderr, "NVRTC failed: %.*s\n%s\n", slen, sched ? sched : "", bins[i].log);
            failed++;
        } else if (bins[i].spill_stores || bins[i].spill_loads || strstr(bins[i].log, "serialized")) {
            fprintf(stderr, "%.*s: %d bytes of spill stores, %d of loads, %d registers%s\n", slen, sched ? sched : "",
                    bins[i].spill_stores, bins[i].spill_loads, bins[i].regs,
                    strstr(bins[i].log, "serialized") ? ", wgmma serialized" : "");
            failed++;
        }
        *rmax = bins[i].regs > *rmax ? bins[i].regs : *rmax;
        cut_compiled_free(&bins[i]);
        cut_kernel_src_free(&ks[i]);
    }
    free(srcs), free(bins);
    return failed;
}

#endif
