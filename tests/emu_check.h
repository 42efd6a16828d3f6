/* cutune tests — hand-picked schedules run under host emulation against the double reference (header-only; needs
 * cmocka's asserts). */
#ifndef CUTUNE_TEST_EMU_CHECK_H
#define CUTUNE_TEST_EMU_CHECK_H

#include "cutune/codegen.h"
#include "cutune/compile.h"
#include "cutune/emu.h"
#include "cutune/space.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct hand {
    cut_conv c;
    cut_sched s;
} hand;

/* Checks, generates, compiles with NVRTC (sm_90) and runs each schedule under emulation with `repeats` timed
 * launches (2 or more also proves per-launch state such as split-K counters is reset). res[i] gets each result when
 * res is not NULL. Prints each failure; returns how many there were. */
static int run_emulated(const hand *hs, int n, int repeats, cut_result *res)
{
    cut_err e;
    char *dir = tu_tmpdir("emu_check");
    assert_non_null(dir);
    cut_timing t;
    cut_timing_default(&t);
    t.warmup = 0;
    t.min_repeats = t.max_repeats = repeats;
    t.min_total_ms = 0;
    cut_runner *r = cut_runner_emu_new(dir, &t, &e);
    assert_non_null(r);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_compile_opts co;
    cut_compile_opts_default(&co);
    int failures = 0;
    for (int i = 0; i < n; i++) {
        char desc[256];
        cut_sched_describe(&hs[i].s, desc, sizeof desc);
        if (cut_sched_check(&hs[i].c, &hs[i].s, &d, &e) != 0) {
            fprintf(stderr, "schedule %d (%s) invalid: %s\n", i, desc, e.msg);
            failures++;
            continue;
        }
        cut_kernel_src ks;
        assert_int_equal(cut_codegen_conv(&hs[i].c, &hs[i].s, &ks, &e), 0);
        co.arch_suffix_a = ks.arch_a; /* wgmma_conv: sm_90a */
        cut_compiled bin;
        assert_int_equal(cut_compile_one(ks.src, "emu_check.cu", &co, &bin, &e), 0);
        if (!bin.ok) {
            fprintf(stderr, "NVRTC failed for %s:\n%s\n", desc, bin.log);
            failures++;
        }
        cut_candidate cand = {.ks = &ks, .bin = NULL};
        cut_result one;
        assert_int_equal(cut_runner_prepare_conv(r, &hs[i].c, 7 + (uint64_t)i, &e), 0);
        assert_int_equal(cut_runner_measure(r, &cand, 1, &one, &e), 0);
        if (one.status != CUT_ST_OK) {
            fprintf(stderr, "emulation: %s: %s: %s\n", desc, cut_status_name(one.status), one.error);
            failures++;
        }
        if (res)
            res[i] = one;
        cut_compiled_free(&bin);
        cut_kernel_src_free(&ks);
    }
    cut_runner_free(r);
    free(dir);
    return failures;
}

/* Checks and generates n schedules and compiles them with NVRTC for sm_90 in one batch into ks[i], bins[i] (the
 * caller frees both). */
static void compile_hands(const hand *hs, int n, cut_kernel_src *ks, cut_compiled *bins)
{
    cut_err e;
    const char **srcs = calloc((size_t)n, sizeof *srcs);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    for (int i = 0; i < n; i++) {
        if (cut_sched_check(&hs[i].c, &hs[i].s, &d, &e) != 0)
            fail_msg("schedule %d: %s", i, e.msg);
        assert_int_equal(cut_codegen_conv(&hs[i].c, &hs[i].s, &ks[i], &e), 0);
        srcs[i] = ks[i].src;
    }
    cut_compile_opts co;
    cut_compile_opts_default(&co);
    co.arch_suffix_a = n > 0 && ks[0].arch_a; /* one target per batch: wgmma_conv's sm_90a */
    assert_int_equal(cut_compile_batch(srcs, n, &co, bins, &e), 0);
    free(srcs);
}

/* A compiled large-tile kernel: no spills, and its registers fit the block (threads, and the geometry's estimate and
 * shared memory for the printout; smem_expect < 0 skips the shared-memory comparison). */
static void assert_fits(const hand *h, const cut_compiled *bin, int threads, int regs_est, int smem_expect)
{
    char desc[256];
    cut_sched_describe(&h->s, desc, sizeof desc);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    printf("  %-76s threads %4d regs %3d (est %3d) spills %d/%d smem %d  %.0f ms\n", desc, threads, bin->regs,
           regs_est, bin->spill_stores, bin->spill_loads, bin->smem_static, bin->compile_ms);
    assert_true(bin->ok);
    assert_int_equal(bin->spill_stores, 0);
    assert_int_equal(bin->spill_loads, 0);
    if (smem_expect >= 0)
        assert_int_equal(bin->smem_static, smem_expect);
    assert_true(bin->regs > 0 && bin->regs * threads <= d.max_regs_per_block);
}

#endif
