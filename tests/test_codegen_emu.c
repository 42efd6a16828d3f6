/* Every template's generated kernels: >= 200 random valid schedules per template are compiled with NVRTC for
 * sm_90 (sm_90a where the kernel asks: wgmma_conv) and run under host emulation on small shapes, each compared with
 * the double-precision CPU reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/codegen.h"
#include "cutune/compile.h"
#include "cutune/emu.h"
#include "cutune/space.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Small shapes that still exercise tails, strides, padding, 1x1/5x5/7x7 filters and odd channel counts. */
static const cut_conv shapes[] = {
    {1, 8, 8, 8, 4, 3, 3, 1, 1},   {1, 9, 9, 6, 5, 3, 3, 2, 1},  {2, 6, 6, 4, 8, 1, 1, 1, 0},
    {1, 12, 12, 16, 3, 7, 7, 2, 3}, {1, 7, 7, 12, 6, 5, 5, 1, 2}, {1, 10, 10, 8, 8, 1, 1, 2, 0},
    {1, 6, 10, 5, 7, 3, 3, 1, 0},  {1, 11, 11, 16, 16, 3, 3, 1, 1},
};

/* The dtypes and layouts each template is tried in. */
static const struct {
    cut_dtype dtype;
    cut_conv_layout layout;
} variants[] = {
    {CUT_DT_FP32, CUT_NCHW}, {CUT_DT_FP16, CUT_NHWC}, {CUT_DT_BF16, CUT_NCHW}, {CUT_DT_TF32, CUT_NHWC},
};

#define PER_TEMPLATE 200

static void run_template(int tpl)
{
    int total = tu_quick() ? 24 : PER_TEMPLATE;
    char *dir = tu_tmpdir("codegen_emu");
    assert_non_null(dir);
    cut_err e;
    cut_timing t;
    cut_timing_default(&t);
    t.warmup = 0;
    t.min_repeats = 1;
    t.max_repeats = 1;
    t.min_total_ms = 0;
    cut_runner *r = cut_runner_emu_new(dir, &t, &e);
    assert_non_null(r);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_compile_opts co = {.sm_major = 9, .sm_minor = 0, .cache_dir = NULL, .nthreads = 0};
    cut_rng rng;
    cut_rng_seed(&rng, 1234 + (uint64_t)tpl);

    /* the shapes in every dtype and layout the template takes (only fp32 NCHW for the CUDA-core templates) */
    cut_conv typed[CUT_ARRAY_LEN(shapes) * CUT_ARRAY_LEN(variants)];
    int nshapes = 0, done = 0, failures = 0;
    for (size_t v = 0; v < CUT_ARRAY_LEN(variants); v++)
        for (size_t s = 0; s < CUT_ARRAY_LEN(shapes); s++) {
            cut_conv c = shapes[s];
            c.dtype = variants[v].dtype;
            c.layout = variants[v].layout;
            if (cut_template_get(tpl)->applies(&c))
                typed[nshapes++] = c;
        }
    for (int s = 0; s < nshapes && done < total; s++) {
        const cut_conv *c = &typed[s];
        int want = (total - done + (nshapes - s) - 1) / (nshapes - s);
        cut_sched *sc = calloc((size_t)want, sizeof *sc);
        cut_kernel_src *ks = calloc((size_t)want, sizeof *ks);
        cut_compiled *bins = calloc((size_t)want, sizeof *bins);
        const char **srcs = calloc((size_t)want, sizeof *srcs);
        cut_candidate *cands = calloc((size_t)want, sizeof *cands);
        cut_result *res = calloc((size_t)want, sizeof *res);
        for (int i = 0; i < want; i++) {
            assert_int_equal(cut_sched_sample_valid(c, &d, tpl, &rng, &sc[i], 2000), 0);
            assert_int_equal(cut_codegen_conv(c, &sc[i], &ks[i], &e), 0);
            srcs[i] = ks[i].src;
            cands[i].ks = &ks[i];
        }
        co.arch_suffix_a = ks[0].arch_a; /* one template a batch: wgmma_conv's sm_90a */
        assert_int_equal(cut_compile_batch(srcs, want, &co, bins, &e), 0);
        assert_int_equal(cut_runner_prepare_conv(r, c, 99 + (uint64_t)s, &e), 0);
        assert_int_equal(cut_runner_measure(r, cands, want, res, &e), 0);
        for (int i = 0; i < want; i++) {
            char desc[256];
            cut_sched_describe(&sc[i], desc, sizeof desc);
            if (!bins[i].ok) {
                fprintf(stderr, "NVRTC failed for %s:\n%s\n", desc, bins[i].log);
                failures++;
            }
            if (res[i].status != CUT_ST_OK) {
                fprintf(stderr, "emulation: %s on shape %d: %s: %s\n", desc, s, cut_status_name(res[i].status),
                        res[i].error);
                failures++;
            }
            cut_kernel_src_free(&ks[i]);
            cut_compiled_free(&bins[i]);
        }
        done += want;
        free(sc), free(ks), free(bins), free(srcs), free(cands), free(res);
    }
    printf("template %s: %d schedules over %d typed shapes compiled with NVRTC (sm_90) and checked under emulation, "
           "%d failures\n", cut_template_get(tpl)->name, done, nshapes, failures);
    assert_int_equal(failures, 0);
    assert_true(done >= total);
    cut_runner_free(r);
    free(dir);
}

static void test_all_templates(void **state)
{
    (void)state;
    for (int t = 0; t < cut_template_count(); t++)
        run_template(t);
}

int main(void)
{
    cut_err e;
    if (cut_nvrtc_version(&e) < 0) {
        printf("SKIP: NVRTC unavailable: %s\n", e.msg);
        return 77;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_all_templates)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
