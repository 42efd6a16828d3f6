/* cutune tests — NVRTC compiles of generated kernels (header-only; include after <cmocka.h>). */
#ifndef CUTUNE_NVRTC_TESTUTIL_H
#define CUTUNE_NVRTC_TESTUTIL_H

#include "cutune/codegen.h"
#include "cutune/compile.h"
#include "cutune/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Compiles ks[0..count) for sm_90 in one batch and asserts that every one compiles, takes 1..255 registers and
 * spills nothing; prints one line (label, seconds, registers against est[i], the estimate of each). A failure names
 * the kernel's "// schedule: " line. */
static inline void tu_compile_all(const char *label, const cut_kernel_src *ks, const int *est, int count)
{
    const char **srcs = calloc((size_t)count, sizeof *srcs);
    cut_compiled *bins = calloc((size_t)count, sizeof *bins);
    assert_true(srcs && bins);
    for (int i = 0; i < count; i++)
        srcs[i] = ks[i].src;
    cut_compile_opts co;
    cut_compile_opts_default(&co);
    cut_err e = {{0}};
    const double t0 = cut_now_s();
    assert_int_equal(cut_compile_batch(srcs, count, &co, bins, &e), 0);
    const double secs = cut_now_s() - t0;
    int failed = 0, spilling = 0, rmin = 1 << 30, rmax = 0;
    double qmin = 1e9, qmax = 0.0;
    for (int i = 0; i < count; i++) {
        const char *sched = strstr(ks[i].src, "// schedule: ");
        const int slen = sched ? (int)(strcspn(sched, "\n")) - 13 : 0;
        const char *what = sched ? sched + 13 : "?";
        if (!bins[i].ok) {
            fprintf(stderr, "NVRTC failed: %.*s\n%s\n", slen, what, bins[i].log);
            failed++;
            continue;
        }
        assert_true(bins[i].regs > 0 && bins[i].regs <= 255);
        const double ratio = (double)bins[i].regs / est[i];
        qmin = ratio < qmin ? ratio : qmin;
        qmax = ratio > qmax ? ratio : qmax;
        rmin = bins[i].regs < rmin ? bins[i].regs : rmin;
        rmax = bins[i].regs > rmax ? bins[i].regs : rmax;
        if (bins[i].spill_stores != 0 || bins[i].spill_loads != 0) {
            printf("  spills %d/%d bytes at %d registers (estimate %d): %.*s\n", bins[i].spill_stores,
                   bins[i].spill_loads, bins[i].regs, est[i], slen, what);
            spilling++;
        }
    }
    printf("  %s: %d random schedules compiled for sm_90 in %.1f s, %d failed; registers %d..%d (%.2f..%.2f of the "
           "estimate); %d spill\n", label, count, secs, failed, rmin, rmax, qmin, qmax, spilling);
    assert_int_equal(failed, 0);
    assert_int_equal(spilling, 0);
    for (int i = 0; i < count; i++)
        cut_compiled_free(&bins[i]);
    free(srcs);
    free(bins);
}

#endif
