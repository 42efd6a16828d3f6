/* Schedule space: sampling, validity, mutation, crossover, hashing, JSON round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/codegen.h"
#include "cutune/space.h"
#include "cutune/op.h"
#include "ops/conv2d/templates.h"

#include <cjson/cJSON.h>
#include <string.h>

static const cut_conv shapes[] = {
    {1, 56, 56, 64, 64, 3, 3, 1, 1},
    {1, 224, 224, 64, 3, 7, 7, 2, 3},
    {1, 14, 14, 256, 256, 3, 3, 1, 1},
    {1, 17, 17, 1024, 512, 3, 3, 1, 1},
    {1, 28, 28, 128, 64, 1, 1, 2, 0},
};

static void test_sampled_are_valid_and_sized(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 7);
    for (size_t s = 0; s < CUT_ARRAY_LEN(shapes); s++) {
        for (int i = 0; i < 200; i++) {
            cut_sched sc;
            assert_int_equal(cut_sched_sample_valid(&shapes[s], &d, 0, &r, &sc, 1000), 0);
            cut_err e;
            assert_int_equal(cut_sched_check(&shapes[s], &sc, &d, &e), 0);
            cut_direct_geom g;
            cut_direct_geometry(&shapes[s], &sc, &g);
            assert_true(g.threads >= 32 && g.threads <= 1024);
            assert_true(g.smem_bytes <= d.max_smem_per_block);
            assert_int_equal(shapes[s].kh % sc.k[CUT_D_RKH], 0);
            /* the grid covers the output */
            assert_true((long)g.grid[1] * g.bco >= shapes[s].co);
            assert_true((long)g.grid[0] * g.boh * g.bow >= (long)g.oh * g.ow);
        }
    }
}

static void test_check_rejects(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    const cut_conv *c = &shapes[0];
    cut_sched s = {0, {4, 4, 8, 2, 2, 2, 8, 3, 1, 0, 1}};
    cut_err e;
    assert_int_equal(cut_sched_check(c, &s, &d, &e), 0);
    cut_sched t = s;
    t.k[CUT_D_TCO] = 64; /* 64*4*8 = 2048 threads */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "threads"));
    t = s;
    t.k[CUT_D_RKH] = 2; /* does not divide 3 */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "rkh"));
    t = s;
    t.k[CUT_D_RC] = 32;
    t.k[CUT_D_TOW] = 32;
    t.k[CUT_D_ROW] = 2; /* input tile 32 x (7) x (65): too much shared memory */
    t.k[CUT_D_TCO] = 1;
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "shared memory"));
    t = s;
    t.k[CUT_D_VEC] = 4; /* row=2 not divisible by 4 */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "vec"));
}

static void test_mutate_crossover_hash_json(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 11);
    const cut_conv *c = &shapes[0];
    cut_sched a, b;
    assert_int_equal(cut_sched_sample_valid(c, &d, 0, &r, &a, 1000), 0);
    assert_int_equal(cut_sched_sample_valid(c, &d, 0, &r, &b, 1000), 0);
    int changed = 0;
    for (int i = 0; i < 100; i++) {
        cut_sched m = a;
        cut_template_get(0)->mutate(c, &d, &r, &m);
        assert_int_equal(m.tpl, a.tpl);
        changed += !cut_sched_equal(&m, &a);
    }
    assert_true(changed > 50);
    cut_sched x;
    cut_sched_crossover(&a, &b, &r, &x);
    for (int i = 0; i < CUT_D_NKNOBS; i++)
        assert_true(x.k[i] == a.k[i] || x.k[i] == b.k[i]);

    char buf[512];
    assert_true(cut_tpl_sched_json(CUT_OP_CONV2D, &a, buf, sizeof buf) > 0);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    cut_sched back;
    cut_err e;
    assert_int_equal(cut_sched_from_cjson(o, &back, &e), 0);
    cJSON_Delete(o);
    assert_true(cut_sched_equal(&a, &back));
    assert_true(cut_sched_hash(&a) == cut_sched_hash(&back));
    assert_int_equal(cut_tpl_sched_json(CUT_OP_CONV2D, &a, buf, 10), -1);

    o = cJSON_Parse("{\"tpl\":\"direct\",\"tco\":4}");
    assert_int_equal(cut_sched_from_cjson(o, &back, &e), -1);
    assert_non_null(strstr(e.msg, "toh"));
    cJSON_Delete(o);
    o = cJSON_Parse("{\"tpl\":\"nope\"}");
    assert_int_equal(cut_sched_from_cjson(o, &back, &e), -1);
    assert_non_null(strstr(e.msg, "nope"));
    cJSON_Delete(o);
}

static void test_codegen_banner_and_launch(void **state)
{
    (void)state;
    const cut_conv *c = &shapes[2];
    cut_sched s = {0, {4, 2, 8, 2, 2, 2, 4, 1, 1, 64, 2}};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_err e;
    assert_int_equal(cut_sched_check(c, &s, &d, &e), 0);
    cut_kernel_src k;
    assert_int_equal(cut_codegen_conv(c, &s, &k, &e), 0);
    assert_non_null(strstr(k.src, "// schedule: direct tco=4 toh=2 tow=8"));
    assert_non_null(strstr(k.src, "CO_256_CI_256"));
    assert_string_equal(k.entry, "cut_conv2d");
    assert_int_equal(k.block[0], 64);
    /* 14x14 output, block tile 4x16 -> 4 x 1 tiles; 256 / 8 co tiles */
    assert_int_equal(k.grid[0], 4);
    assert_int_equal(k.grid[1], 32);
    assert_int_equal(k.grid[2], 1);
    cut_kernel_src_free(&k);
    cut_kernel_src_free(&k); /* second free is a no-op */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sampled_are_valid_and_sized),
        cmocka_unit_test(test_check_rejects),
        cmocka_unit_test(test_mutate_crossover_hash_json),
        cmocka_unit_test(test_codegen_banner_and_launch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
