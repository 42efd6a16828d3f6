/* GPU test (skips with 77 where there is no GPU): a real tune of one case in which a faulting candidate and a
 * hanging candidate are planted. Both must be recorded as errors (fault, timeout), the worker replaced, and the
 * run must complete with every trial recorded and valid kernels found. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/gpu.h"
#include "cutune/record.h"
#include "cutune/tune.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *BAD_SRC =
    "extern \"C\" __global__ void cut_conv2d(const float *in, const float *w, float *out) {\n"
    "#ifdef FAULT\n"
    "    volatile float *far = out + ((size_t)1 << 40);\n"
    "    far[threadIdx.x] = w[0];\n"
    "#else\n"
    "    while (((volatile const float *)in)[0] < 1e30f) { }\n" /* inputs are in [-1, 1): never ends */
    "    out[threadIdx.x] = w[0];\n"
    "#endif\n"
    "}\n";

typedef struct plant {
    cut_runner *inner;
    cut_compiled fault, hang;
    int measured; /* candidates measured so far: the trial number of the next one */
} plant;

static int p_prepare(cut_runner *r, cut_work *w, int take, cut_err *e)
{
    plant *p = r->impl;
    const int rc = p->inner->prepare(p->inner, w, take, e);
    r->work = p->inner->work;
    return rc;
}

/* Trial 9 gets the faulting kernel and trial 11 the hanging one, however the tune loop groups its measure calls. */
static int p_run(cut_runner *r, const cut_call *calls, int n, const cut_run_opts *o, cut_result *res, cut_err *e)
{
    plant *p = r->impl;
    cut_call *c = calloc((size_t)n, sizeof *c);
    memcpy(c, calls, sizeof *c * (size_t)n);
    for (int i = 0; i < n; i++) {
        if (p->measured + i == 9)
            c[i].bin = &p->fault;
        if (p->measured + i == 11)
            c[i].bin = &p->hang;
    }
    p->measured += n;
    int rc = p->inner->run(p->inner, c, n, o, res, e);
    free(c);
    return rc;
}

static const cut_measure_env *p_env(cut_runner *r)
{
    plant *p = r->impl;
    return p->inner->env(p->inner);
}

static void p_destroy(cut_runner *r)
{
    plant *p = r->impl;
    cut_runner_free(p->inner);
    cut_compiled_free(&p->fault);
    cut_compiled_free(&p->hang);
    free(p);
    free(r);
}

static void test_tune_with_planted_failures(void **state)
{
    (void)state;
    cut_err e;
    cut_gpu_info info;
    assert_int_equal(cut_gpu_query(0, &info, &e), 0);
    cut_timing t;
    cut_timing_default(&t);
    t.timeout_s = 3;
    plant *p = calloc(1, sizeof *p);
    p->inner = cut_runner_gpu_new(0, getenv("CUTUNE_BIN"), &t, &e);
    if (!p->inner)
        fail_msg("cut_runner_gpu_new: %s", e.msg);
    cut_compile_opts co = {.sm_major = info.sm_major, .sm_minor = info.sm_minor};
    assert_int_equal(cut_compile_one(BAD_SRC, "hang.cu", &co, &p->hang, &e), 0);
    co.extra_opts = "-DFAULT";
    assert_int_equal(cut_compile_one(BAD_SRC, "fault.cu", &co, &p->fault, &e), 0);
    assert_true(p->hang.ok && p->fault.ok);
    cut_runner *r = calloc(1, sizeof *r);
    r->impl = p;
    r->prepare = p_prepare;
    r->run = p_run;
    r->runner_refs = p->inner->runner_refs;
    r->env = p_env;
    r->destroy = p_destroy;
    r->timing = t;

    char *dir = tu_tmpdir("gpu_tune");
    cut_tune_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.records_dir = dir;
    cfg.trials = 40;
    cfg.batch = 8;
    cfg.seed = 5;
    cfg.use_nvrtc = 1;
    cfg.copts.sm_major = info.sm_major;
    cfg.copts.sm_minor = info.sm_minor;
    cut_gpu_limits(&info, &cfg.limits);
    cfg.case_pos = cfg.case_total = 1;
    const cut_conv conv = {1, 28, 28, 32, 32, 3, 3, 1, 1};
    cut_tune_stats st;
    double t0 = cut_now_s();
    assert_int_equal(cut_tune_case(&cfg, r, &conv, 1, &st, &e), 0);
    printf("tune with planted failures: %d trials, %d failed, best %.4f ms, %.1f s\n", st.trials_total,
           st.failures_new, st.best_ms, cut_now_s() - t0);
    assert_int_equal(st.trials_total, 40);
    assert_true(st.best_ms > 0);

    char name[512], path[1024];
    cut_conv_case_name(&conv, 1, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    cut_record *recs;
    int n, partial;
    assert_int_equal(cut_records_load(path, &recs, &n, &partial, &e), 0);
    assert_int_equal(n, 40);
    assert_int_equal(partial, 0);
    /* the planted ones are trials 9 and 11 (every generated kernel compiles, so trial = measure order) */
    printf("trial 9: %s (%s)\ntrial 11: %s (%s)\n", cut_status_name(recs[9].status), recs[9].error,
           cut_status_name(recs[11].status), recs[11].error);
    assert_int_equal(recs[9].status, CUT_ST_FAULT);
    assert_int_equal(recs[11].status, CUT_ST_TIMEOUT);
    int ok = 0;
    for (int i = 0; i < n; i++) {
        ok += recs[i].status == CUT_ST_OK;
        assert_int_equal(recs[i].trial, i);
    }
    assert_true(ok >= 30); /* the candidates after the planted failures measured normally */
    assert_true(recs[10].status == CUT_ST_OK || recs[12].status == CUT_ST_OK);
    free(recs);
    cut_runner_free(r);
    free(dir);
}

int main(void)
{
    cut_err e;
    int n = cut_gpu_init(&e);
    if (n <= 0) {
        printf("SKIP: no GPU: %s\n", n < 0 ? e.msg : "0 devices");
        return 77;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_tune_with_planted_failures)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
