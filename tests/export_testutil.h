/* Helpers of the export tests (test_export_epi, test_export_gemm_extras): a shell command that must succeed, the
 * exported headers through one NVRTC compile, and the exported project built with cmake + nvcc alone. Include after
 * cmocka.h. */
#ifndef CUTUNE_TESTS_EXPORT_TESTUTIL_H
#define CUTUNE_TESTS_EXPORT_TESTUTIL_H

#include "cutune/common.h"
#include "cutune/compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void tu_sh(const char *cmd)
{
    if (system(cmd) != 0)
        fail_msg("command failed: %s", cmd);
}

/* Skips the test when NVRTC cannot be loaded. */
static inline void tu_need_nvrtc(void)
{
    cut_err e = {{0}};
    if (cut_nvrtc_version(&e) < 0) {
        print_message("NVRTC unavailable (%s): skipping\n", e.msg);
        skip();
    }
}

/* src (the headers, concatenated) compiles with NVRTC for the default target (sm_90; with arch_a its
 * architecture-specific sm_90a, which wgmma kernels need) as file `name`; fails the test with NVRTC's log otherwise. */
static inline void tu_nvrtc_compiles_for(const char *src, const char *name, int arch_a)
{
    cut_err e = {{0}};
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    o.nthreads = 1;
    o.arch_suffix_a = arch_a;
    cut_compiled bin;
    assert_int_equal(cut_compile_one(src, name, &o, &bin, &e), 0);
    if (!bin.ok)
        fail_msg("NVRTC refused the exported headers:\n%s", bin.log);
    cut_compiled_free(&bin);
}
static inline void tu_nvrtc_compiles(const char *src, const char *name) { tu_nvrtc_compiles_for(src, name, 0); }

/* Builds the cmake project out/kernels in out/build with nvcc ($CUTUNE_NVCC, else the toolkit's), its log in
 * logdir/build.log, and checks that out/build/exe is an executable; skips the test without nvcc or cmake. */
static inline void tu_cmake_nvcc_build(const char *out, const char *logdir, const char *exe)
{
    const char *nvcc = getenv("CUTUNE_NVCC") ? getenv("CUTUNE_NVCC") : "/usr/local/cuda/bin/nvcc";
    if (access(nvcc, X_OK) != 0 || system("cmake --version >/dev/null 2>&1") != 0) {
        print_message("nvcc not found at %s: the exported project was not built\n", nvcc);
        skip();
    }
    char cmd[9000];
    snprintf(cmd, sizeof cmd,
             "cmake -S '%s/kernels' -B '%s/build' -DCMAKE_CUDA_COMPILER='%s' >'%s/build.log' 2>&1 && "
             "cmake --build '%s/build' -j2 >>'%s/build.log' 2>&1 || { tail -40 '%s/build.log'; exit 1; }",
             out, out, nvcc, logdir, out, logdir, logdir);
    tu_sh(cmd);
    char p[4400];
    snprintf(p, sizeof p, "%s/build/%s", out, exe);
    assert_int_equal(access(p, X_OK), 0);
}

#endif
