/* cutune Nsight Compute priors (cutune/ncu.h): ncu's raw CSV page recorded on an H100 for five kernels, each limited
 * by one region (tests/fixtures/ncu/, make_fixtures.sh) -> profile values -> the region each points at -> the move
 * its weights favour; and the parser's refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/ncu.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *fixture(const char *name, size_t *len)
{
    const char *dir = getenv("CUTUNE_FIXTURES");
    assert_non_null(dir);
    char path[2048];
    snprintf(path, sizeof path, "%s/ncu/%s.csv", dir, name);
    char *text = NULL;
    cut_err e = {{0}};
    assert_int_equal(cut_read_file(path, &text, len, &e), 0);
    return text;
}

static void load(const char *name, cut_ncu_profile *p)
{
    size_t len;
    char *text = fixture(name, &len);
    cut_err e = {{0}};
    char kernel[32];
    snprintf(kernel, sizeof kernel, "k_%s", name);
    if (cut_ncu_parse(text, len, name, kernel, p, &e) != 0)
        fail_msg("%s: %s", name, e.msg);
    free(text);
}

/* Values read as ncu printed them (thousands separators included), every metric present. */
static void test_parse_values(void **state)
{
    (void)state;
    cut_ncu_profile p;
    load("gmem", &p);
    assert_string_equal(p.kernel, "k_gmem(const float4 *, float4 *, int)");
    assert_int_equal(p.have, (1u << CUT_NCU_NMETRICS) - 1);
    assert_true(p.v[CUT_NCU_TIME_NS] == 180960);
    assert_true(p.v[CUT_NCU_DRAM_PCT] == 85.49);
    assert_true(p.v[CUT_NCU_INST] == 3788288);
    load("smem", &p);
    assert_true(p.v[CUT_NCU_BANK_CONFLICTS] == 1072693992);
    assert_true(p.v[CUT_NCU_SMEM_WAVEFRONTS] == 1107341292);
    char arg[2048];
    assert_true(cut_ncu_metrics_arg(arg, sizeof arg) > 0);
    for (int m = 0; m < CUT_NCU_NMETRICS; m++)
        assert_non_null(strstr(arg, cut_ncu_metric_name((cut_ncu_metric)m)));
    assert_int_equal(cut_ncu_metrics_arg(arg, 20), -1);
}

/* Each fixture kernel's region is the one it was written to be limited by, and its weights favour that region's
 * move over every other. */
static void test_regions_and_moves(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        cut_region region;
        cut_move move;
    } want[] = {
        {"gmem", CUT_RG_GMEM, CUT_MV_VECTORIZE},         {"compute", CUT_RG_COMPUTE, CUT_MV_MMA},
        {"sfu", CUT_RG_SFU, CUT_MV_MATH_FUSION},         {"atomics", CUT_RG_ATOMICS, CUT_MV_AVOID_ATOMICS},
        {"smem", CUT_RG_SMEM, CUT_MV_PAD_TAIL},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cut_ncu_profile p;
        load(want[i].name, &p);
        double s[CUT_RG_COUNT], w[CUT_MV_COUNT];
        cut_ncu_regions(&p, s);
        for (int r = 0; r < CUT_RG_COUNT; r++)
            assert_true(s[r] >= 0 && s[r] <= 1);
        if (cut_ncu_dominant(s) != want[i].region)
            fail_msg("%s: dominant region %s, want %s", want[i].name, cut_region_name(cut_ncu_dominant(s)),
                     cut_region_name(want[i].region));
        assert_true(s[want[i].region] >= 0.5); /* clearly, not by a hair: every other region at most 0.6 of it */
        for (int r = 0; r < CUT_RG_COUNT; r++)
            if (r != (int)want[i].region && !(s[r] <= 0.6 * s[want[i].region]))
                fail_msg("%s: %s scores %.3f beside %s %.3f", want[i].name, cut_region_name((cut_region)r), s[r],
                         cut_region_name(want[i].region), s[want[i].region]);
        cut_ncu_move_weights(s, w);
        for (int m = 0; m < CUT_MV_COUNT; m++) {
            assert_true(w[m] >= 0.5 && w[m] <= 2.0);
            if (m != (int)want[i].move && !(w[want[i].move] >= w[m] + 0.25))
                fail_msg("%s: %s weighs %.3f, %s %.3f", want[i].name, cut_move_name(want[i].move), w[want[i].move],
                         cut_move_name((cut_move)m), w[m]);
        }
        cut_buf b;
        cut_buf_init(&b);
        cut_ncu_summary(&p, s, &b);
        char lead[64];
        snprintf(lead, sizeof lead, "Regions by score: %s ", cut_region_name(want[i].region));
        assert_non_null(strstr(b.data, lead));
        cut_buf_free(&b);
    }
    /* no profile: every region 0, every move 0.5 (neutral once normalised) */
    cut_ncu_profile none;
    memset(&none, 0, sizeof none);
    double s[CUT_RG_COUNT], w[CUT_MV_COUNT];
    cut_ncu_regions(&none, s);
    cut_ncu_move_weights(s, w);
    for (int m = 0; m < CUT_MV_COUNT; m++)
        assert_true(w[m] == 0.5);
}

static void expect_refusal(const char *text, const char *kernel, const char *needle)
{
    cut_ncu_profile p;
    cut_err e = {{0}};
    p.have = 7;
    assert_int_equal(cut_ncu_parse(text, strlen(text), "x.csv", kernel, &p, &e), -1);
    if (!strstr(e.msg, needle))
        fail_msg("'%s' does not say '%s'", e.msg, needle);
    assert_int_equal(p.have, 0);
}

static void test_refusals(void **state)
{
    (void)state;
    expect_refusal("", NULL, "no ncu CSV header");
    expect_refusal("==PROF== Disconnected\nhello\n", NULL, "no ncu CSV header");
    expect_refusal("\"ID\",\"a\",\"b\",\"c\",\"Kernel Name\"\n", NULL, "units row");
    expect_refusal("\"ID\",\"a\",\"b\",\"c\",\"Kernel Name\"\n\"\",\"\",\"\",\"\",\"\"\n", NULL, "no profiled kernel");
    expect_refusal("\"ID\",\"a\",\"b\",\"c\",\"Kernel Name\"\n\"\",\"\",\"\",\"\",\"\"\n\"0\",\"1\"\n", NULL,
                   "x.csv:3: 2 fields, the header has 5");
    expect_refusal("\"ID\",\"a\",\"b\",\"c\",\"Kernel Name\"\n\"\",\"\",\"\",\"\",\"\"\n\"0\",\"1\",\"2\",\"3\",\"k\n",
                   NULL, "x.csv:3: a quoted field is not closed");
    expect_refusal("\"ID\",\"a\",\"b\",\"c\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"\",\"\",\"\",\"ns\"\n"
                   "\"0\",\"1\",\"2\",\"3\",\"k_x(int)\",\"12 ms\"\n",
                   NULL, "gpu__time_duration.sum is '12 ms', not a number");
    size_t len;
    char *text = fixture("sfu", &len);
    cut_ncu_profile p;
    cut_err e = {{0}};
    assert_int_equal(cut_ncu_parse(text, len, "sfu.csv", "k_other", &p, &e), -1);
    assert_non_null(strstr(e.msg, "no profiled kernel named 'k_other...'"));
    /* a missing column and an empty value leave the metric out; the rest is read */
    const char *partial = "\"ID\",\"a\",\"b\",\"c\",\"Kernel Name\",\"gpu__time_duration.sum\",\"smsp__inst_executed.sum\"\n"
                          "\"\",\"\",\"\",\"\",\"\",\"ns\",\"inst\"\n\"0\",\"1\",\"2\",\"3\",\"k(int)\",\"1,024\",\"\"\n";
    assert_int_equal(cut_ncu_parse(partial, strlen(partial), "p.csv", NULL, &p, &e), 0);
    assert_int_equal(p.have, 1u << CUT_NCU_TIME_NS);
    assert_true(p.v[CUT_NCU_TIME_NS] == 1024);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_values),
        cmocka_unit_test(test_regions_and_moves),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
