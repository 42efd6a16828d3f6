/* The compile runner (cut_runner_compile_new, src/measure/compile_runner.c), compile only (the `compile` backend):
 * a generated conv kernel compiles for sm_90 and comes back as status "compiled" with its registers, spills and
 * compile time and no time at all; a compile error is the candidate's COMPILE_ERROR with the log's first line, and
 * the runner goes on with the next; a call that does not fit the work is its LAUNCH_ERROR; a compile whose process
 * dies is a COMPILE_ERROR that says so (the isolation the serving ranks of an MPI job rely on). Needs NVRTC, no GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cutune/measure.h"
#include "cutune/space.h"
#include "cutune/util.h"
#include "measure/compile_child.h"

static const char SYNTAX_ERROR_SRC[] = "extern \"C\" __global__ void cut_conv2d(float *x) { x[0] = ; }\n";

/* NVRTC present: else the tests skip. */
static int setup(void **state)
{
    (void)state;
    cut_err e = {{0}};
    if (cut_nvrtc_version(&e) < 0) {
        printf("SKIP: %s\n", e.msg);
        exit(77);
    }
    return 0;
}

/* A compile-only runner for sm_90, without a disk cache, prepared with a small conv's work. */
static cut_runner *conv_runner(const cut_conv *c)
{
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    cut_err e = {{0}};
    cut_runner *r = cut_runner_compile_new(NULL, &o, 60, &e);
    assert_non_null(r);
    assert_true(cut_runner_compiles(r));
    assert_int_equal(cut_runner_prepare_conv(r, c, 7, &e), 0);
    const cut_measure_env *env = r->env(r);
    assert_string_equal(env->backend, "compile");
    assert_non_null(strstr(env->gpu_name, "sm_90"));
    return r;
}

/* A valid direct-convolution schedule's kernel for c. */
static void generated(const cut_conv *c, cut_kernel_src *ks)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng rng;
    cut_rng_seed(&rng, 11);
    cut_sched s;
    cut_err e = {{0}};
    assert_int_equal(cut_sched_sample_valid(c, &d, cut_template_find("direct"), &rng, &s, 1000), 0);
    assert_int_equal(cut_codegen_conv(c, &s, ks, &e), 0);
}

static void test_compile_only(void **state)
{
    (void)state;
    const cut_conv c = {1, 8, 8, 8, 4, 3, 3, 1, 1};
    cut_runner *r = conv_runner(&c);
    cut_kernel_src ks[3];
    generated(&c, &ks[0]);
    ks[1] = ks[0];
    ks[1].src = (char *)SYNTAX_ERROR_SRC;
    ks[2] = ks[0];
    ks[2].block[0] = 2048; /* more threads than a block may have */
    cut_candidate cands[3] = {{&ks[0], NULL}, {&ks[1], NULL}, {&ks[2], NULL}};
    cut_result res[3];
    cut_err e = {{0}};
    assert_int_equal(cut_runner_measure(r, cands, 3, res, &e), 0);
    for (int i = 0; i < 3; i++)
        printf("candidate %d: %s %s regs %d spills %d+%d %.1f ms\n", i, cut_status_name(res[i].status), res[i].error,
               res[i].comp.regs, res[i].comp.spill_stores, res[i].comp.spill_loads, res[i].comp.compile_ms);
    /* compiled, not run: its compile's numbers and no time */
    assert_int_equal(res[0].status, CUT_ST_COMPILED);
    assert_true(res[0].comp.compiled && res[0].comp.ok);
    assert_true(res[0].comp.regs > 0 && res[0].comp.regs <= 255);
    assert_int_equal(res[0].comp.spill_stores, 0);
    assert_int_equal(res[0].comp.spill_loads, 0);
    assert_true(res[0].comp.compile_ms > 0 && !res[0].comp.cache_hit);
    assert_true(res[0].median_ms < 0 && res[0].repeats == 0);
    /* the syntax error: its log's first line, and the runner went on */
    assert_int_equal(res[1].status, CUT_ST_COMPILE_ERROR);
    assert_non_null(strstr(res[1].error, "compile error"));
    assert_non_null(strstr(res[1].error, "expected an expression"));
    assert_true(res[1].comp.compiled && !res[1].comp.ok);
    assert_int_equal(res[2].status, CUT_ST_LAUNCH_ERROR);
    cut_runner_free(r);
    cut_kernel_src_free(&ks[0]);
}

/* A compile process that runs past its limit is killed: the compile's failure, never the caller's. */
static void test_limit_kills_compile(void **state)
{
    (void)state;
    /* 20000 dependent statements: NVRTC and ptxas work on them far longer than the 0.3 s allowed */
    cut_buf slow;
    cut_buf_init(&slow);
    cut_buf_printf(&slow, "extern \"C\" __global__ void cut_slow(float *x)\n{\n    float a = x[threadIdx.x];\n");
    for (int i = 0; i < 20000; i++)
        cut_buf_printf(&slow, "    a = a * x[%d] + sinf(a);\n", (i * 7) % 977);
    cut_buf_printf(&slow, "    x[0] = a;\n}\n");
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    cut_compiled out;
    cut_err e = {{0}};
    const double t0 = cut_now_s();
    assert_int_equal(cut_compile_isolated(slow.data, NULL, &o, 0.3, &out, &e), 0);
    printf("killed after %.2f s: %s\n", cut_now_s() - t0, out.log);
    assert_int_equal(out.ok, 0);
    assert_non_null(strstr(out.log, "did not finish within"));
    assert_true(cut_now_s() - t0 < 10);
    cut_compiled_free(&out);
    cut_buf_free(&slow);
    /* and the next compile in this process is not disturbed */
    assert_int_equal(cut_compile_isolated(SYNTAX_ERROR_SRC, NULL, &o, 60, &out, &e), 0);
    assert_int_equal(out.ok, 0);
    assert_non_null(strstr(out.log, "expected an expression"));
    cut_compiled_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_compile_only), cmocka_unit_test(test_limit_kills_compile)};
    return cmocka_run_group_tests(tests, setup, NULL);
}
