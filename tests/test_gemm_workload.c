/* GEMM workloads (seed 004): names, dtypes, validation, FLOPs, element counts, the KEY=VALUE words and the long
 * flags of cutune tune. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/gemm.h"
/* The CLI helpers are not part of cutune_lib: compile them into this test. */
#include "cli/args.c"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Splits s at spaces into at most 16 words (s is modified). Returns the count. */
static int split(char *s, const char *words[16])
{
    int n = 0;
    for (char *w = strtok(s, " "); w && n < 16; w = strtok(NULL, " "))
        words[n++] = w;
    return n;
}

/* Parses the words of text; returns cut_gemm_parse_args' status. */
static int parse_text(const char *text, cut_gemm *g, int *trials, int *option, cut_err *e)
{
    char buf[256];
    const char *words[16];
    snprintf(buf, sizeof buf, "%s", text);
    int n = split(buf, words);
    return cut_gemm_parse_args(n, words, g, trials, option, e);
}

static void test_seed004_examples(void **state)
{
    (void)state;
    const struct {
        const char *text;
        int m, n, k, t, o;
    } cases[] = {
        {"M=1024 N=2048 K=3072 t=2000", 1024, 2048, 3072, 2000, -1},
        {"MN=1024 K=2048 t=5000", 1024, 1024, 2048, 5000, -1},
        {"MNK=7384 t=2398 O=65536", 7384, 7384, 7384, 2398, 65536},
        {"K=5 NM=3", 3, 3, 5, 0, -1},
        {"M=2 NK=9 O=0", 2, 9, 9, 0, 0},
        {"tO=7 KNM=11", 11, 11, 11, 7, 7},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(cases); i++) {
        cut_gemm g = {0, 0, 0, CUT_GEMM_NT, CUT_DT_BF16};
        int t = -5, o = -5;
        cut_err e = {{0}};
        if (parse_text(cases[i].text, &g, &t, &o, &e) != 0)
            fail_msg("'%s' rejected: %s", cases[i].text, e.msg);
        assert_int_equal(g.m, cases[i].m);
        assert_int_equal(g.n, cases[i].n);
        assert_int_equal(g.k, cases[i].k);
        assert_int_equal(t, cases[i].t);
        assert_int_equal(o, cases[i].o);
        /* layout and dtype are the caller's */
        assert_int_equal(g.layout, CUT_GEMM_NT);
        assert_int_equal(g.dtype, CUT_DT_BF16);
    }
    /* trials and option may be NULL */
    cut_gemm g;
    cut_err e;
    assert_int_equal(parse_text("M=1 N=2 K=3 t=4 O=5", &g, NULL, NULL, &e), 0);
    assert_int_equal(g.k, 3);
}

static void test_bad_words(void **state)
{
    (void)state;
    const struct {
        const char *text, *word;
    } bad[] = {
        {"M= N=1 K=1", "'M='"},        {"M=-1 N=1 K=1", "'M=-1'"},     {"M=+1 N=1 K=1", "'M=+1'"},
        {"Q=3 M=1 N=1 K=1", "'Q=3'"},   {"M=1 M=2 N=1 K=1", "'M=2'"},   {"MN=1 N=2 K=1", "'N=2'"},
        {"MM=1 N=1 K=1", "'MM=1'"},     {"M=1x N=1 K=1", "'M=1x'"},     {"M=1 N=1", "K"},
        {"N=1 K=1", "M"},               {"1024 N=1 K=1", "'1024'"},     {"=5 M=1 N=1 K=1", "'=5'"},
        {"M=0 N=1 K=1", "'M=0'"},       {"M=1 N=1 K=1 t=0", "'t=0'"},   {"M=2147483648 N=1 K=1", "'M=2147483648'"},
        {"M=1 N=1 K=1 O=-1", "'O=-1'"}, {"m=1 N=1 K=1", "'m=1'"},       {"M=0x10 N=1 K=1", "'M=0x10'"},
        {"M=1 N=1 K=1 tO=0", "'tO=0'"}, {"M= 1 N=1 K=1", "'M='"},       {"M=65536 N=65536 K=1", "C (M*N)"},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad); i++) {
        cut_gemm g = {-7, -7, -7, CUT_GEMM_NN, CUT_DT_FP32};
        int t = -7, o = -7;
        cut_err e = {{0}};
        if (parse_text(bad[i].text, &g, &t, &o, &e) != -1)
            fail_msg("'%s' accepted", bad[i].text);
        if (!strstr(e.msg, bad[i].word))
            fail_msg("'%s': the error lacks %s: %s", bad[i].text, bad[i].word, e.msg);
        assert_null(strchr(e.msg, '\n'));
        /* nothing written on failure */
        assert_int_equal(g.m, -7);
        assert_int_equal(g.n, -7);
        assert_int_equal(g.k, -7);
        assert_int_equal(t, -7);
        assert_int_equal(o, -7);
    }
    cut_gemm g;
    cut_err e;
    assert_int_equal(cut_gemm_parse_args(0, NULL, &g, NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "no M"));
}

static void test_limits(void **state)
{
    (void)state;
    cut_gemm g;
    cut_err e;
    /* the largest value and the largest matrices that fit */
    assert_int_equal(parse_text("M=2147483647 NK=1", &g, NULL, NULL, &e), 0);
    assert_int_equal(g.m, 2147483647);
    assert_int_equal(parse_text("M=1 N=1 K=1 O=2147483647", &g, NULL, NULL, &e), 0);
    cut_gemm ok = {46340, 46340, 46340, CUT_GEMM_NN, CUT_DT_FP32}; /* 46340^2 < 2^31 */
    assert_int_equal(cut_gemm_validate(&ok, &e), 0);
    const struct {
        cut_gemm g;
        const char *what;
    } bad[] = {
        {{0, 1, 1, CUT_GEMM_NN, CUT_DT_FP32}, "M is 0"},
        {{1, -3, 1, CUT_GEMM_NN, CUT_DT_FP32}, "N is -3"},
        {{1, 1, 0, CUT_GEMM_NN, CUT_DT_FP32}, "K is 0"},
        {{46341, 1, 46341, CUT_GEMM_NN, CUT_DT_FP32}, "A (M*K)"},
        {{1, 46341, 46341, CUT_GEMM_NT, CUT_DT_FP32}, "B (K*N)"},
        {{46341, 46341, 1, CUT_GEMM_NN, CUT_DT_FP16}, "C (M*N)"},
        {{2147483647, 2147483647, 2147483647, CUT_GEMM_NN, CUT_DT_FP32}, "A (M*K)"},
        {{1, 1, 1, (cut_gemm_layout)4, CUT_DT_FP32}, "layout 4"}, /* 2 and 3 are TN and TT since issue 21 */
        {{1, 1, 1, CUT_GEMM_NN, CUT_DT_COUNT}, "dtype 4"},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad); i++) {
        cut_err e2 = {{0}};
        assert_int_equal(cut_gemm_validate(&bad[i].g, &e2), -1);
        if (!strstr(e2.msg, bad[i].what))
            fail_msg("case %zu: the error lacks '%s': %s", i, bad[i].what, e2.msg);
    }
}

static void test_names_and_dtypes(void **state)
{
    (void)state;
    char buf[128];
    cut_gemm g = {1024, 2048, 3072, CUT_GEMM_NN, CUT_DT_FP32};
    cut_gemm_name(&g, buf, sizeof buf);
    assert_string_equal(buf, "gemm_nn_fp32_M_1024_N_2048_K_3072");
    g = (cut_gemm){7, 8, 9, CUT_GEMM_NT, CUT_DT_BF16};
    cut_gemm_name(&g, buf, sizeof buf);
    assert_string_equal(buf, "gemm_nt_bf16_M_7_N_8_K_9");
    cut_gemm_name(&g, buf, 8); /* truncated, terminated */
    assert_string_equal(buf, "gemm_nt");

    const char *names[] = {"fp32", "tf32", "fp16", "bf16"};
    const size_t sizes[] = {4, 4, 2, 2};
    for (int d = 0; d < CUT_DT_COUNT; d++) {
        cut_dtype back = CUT_DT_COUNT;
        cut_err e;
        assert_string_equal(cut_dtype_name((cut_dtype)d), names[d]);
        assert_int_equal(cut_dtype_size((cut_dtype)d), sizes[d]);
        assert_int_equal(cut_dtype_parse(names[d], &back, &e), 0);
        assert_int_equal(back, d);
    }
    cut_dtype d = CUT_DT_FP16;
    cut_gemm_layout l = CUT_GEMM_NN;
    cut_err e = {{0}};
    assert_int_equal(cut_dtype_parse("FP16", &d, &e), 0);
    assert_int_equal(cut_dtype_parse("fp64", &d, &e), -1);
    assert_non_null(strstr(e.msg, "'fp64'"));
    assert_int_equal(cut_dtype_parse("", &d, &e), -1);
    assert_int_equal(cut_dtype_parse("fp1", &d, &e), -1);
    assert_int_equal(d, CUT_DT_FP16);
    assert_string_equal(cut_gemm_layout_name(CUT_GEMM_NN), "nn");
    assert_string_equal(cut_gemm_layout_name(CUT_GEMM_NT), "nt");
    assert_int_equal(cut_gemm_layout_parse("nt", &l, &e), 0);
    assert_int_equal(l, CUT_GEMM_NT);
    assert_int_equal(cut_gemm_layout_parse("NN", &l, &e), 0);
    assert_int_equal(l, CUT_GEMM_NN);
    assert_int_equal(cut_gemm_layout_parse("nx", &l, &e), -1); /* tn and tt are layouts since issue 21 */
    assert_non_null(strstr(e.msg, "'nx'"));
    assert_int_equal(cut_gemm_layout_parse("nnn", &l, &e), -1);
}

static void test_flops_and_elems(void **state)
{
    (void)state;
    cut_gemm nn = {1024, 2048, 3072, CUT_GEMM_NN, CUT_DT_FP32};
    cut_gemm nt = nn;
    nt.layout = CUT_GEMM_NT;
    assert_true(cut_gemm_flops(&nn) == 2.0 * 1024 * 2048 * 3072);
    assert_true(fabs(cut_gemm_gflops(&nn, 1.0) - 2.0 * 1024 * 2048 * 3072 / 1e6) < 1e-6);
    assert_true(cut_gemm_gflops(&nn, 0.0) == 0.0);
    assert_true(cut_gemm_gflops(&nn, -1.0) == 0.0);
    assert_true(cut_gemm_gflops(&nn, NAN) == 0.0);
    /* FLOPs do not overflow an int */
    cut_gemm big = {7384, 7384, 7384, CUT_GEMM_NN, CUT_DT_FP32};
    assert_true(cut_gemm_flops(&big) == 2.0 * 7384.0 * 7384.0 * 7384.0);
    /* A is M×K, C is M×N; B is K×N (NN) or N×K (NT): the same count. */
    const cut_gemm *gs[2] = {&nn, &nt};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(cut_gemm_a_elems(gs[i]), (size_t)1024 * 3072);
        assert_int_equal(cut_gemm_b_elems(gs[i]), (size_t)3072 * 2048);
        assert_int_equal(cut_gemm_c_elems(gs[i]), (size_t)1024 * 2048);
    }
    cut_gemm skew = {3, 5, 7, CUT_GEMM_NT, CUT_DT_FP16};
    assert_int_equal(cut_gemm_a_elems(&skew), 21);
    assert_int_equal(cut_gemm_b_elems(&skew), 35);
    assert_int_equal(cut_gemm_c_elems(&skew), 15);
}

/* ---- the CLI helper ---- */

/* Runs every option of text through cut_gemm_parse_cli like cmd_tune does, then cut_gemm_cli_finish. Words that are
 * no GEMM option are skipped and counted in *other. */
static int cli_text(const char *text, cut_gemm *g, int *trials, int *other, cut_err *e)
{
    char buf[256];
    const char *words[16];
    snprintf(buf, sizeof buf, "%s", text);
    int n = split(buf, words);
    char **argv = (char **)words;
    cut_gemm_cli_init(g);
    *other = 0;
    for (int i = 0; i < n; i++) {
        int rc = cut_gemm_parse_cli(n, argv, &i, g, trials, e);
        if (rc < 0)
            return -1;
        *other += rc == 0;
    }
    return cut_gemm_cli_finish(g, e);
}

static void test_cli_forms(void **state)
{
    (void)state;
    const struct {
        const char *text;
        int m, n, k, t, other;
        cut_gemm_layout l;
        cut_dtype d;
    } good[] = {
        {"--gemm M=1024 N=2048 K=3072 t=2000", 1024, 2048, 3072, 2000, 0, CUT_GEMM_NN, CUT_DT_FP32},
        {"--gemm M=1024 N=2048 K=3072 t=2000 --layout nt --dtype fp16", 1024, 2048, 3072, 2000, 0, CUT_GEMM_NT,
         CUT_DT_FP16},
        {"--dtype tf32 --gemm MNK=7384 t=2398 O=65536 --quiet", 7384, 7384, 7384, 2398, 1, CUT_GEMM_NN, CUT_DT_TF32},
        {"--m 64 --backend emu --n 32 --k 16 --layout nt --dtype bf16", 64, 32, 16, -1, 2, CUT_GEMM_NT, CUT_DT_BF16},
        {"--gemm MN=1024 K=2048 -h", 1024, 1024, 2048, -1, 1, CUT_GEMM_NN, CUT_DT_FP32},
        {"--layout nt --layout nn --gemm MNK=8", 8, 8, 8, -1, 0, CUT_GEMM_NN, CUT_DT_FP32},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(good); i++) {
        cut_gemm g;
        int t = -1, other = -1;
        cut_err e = {{0}};
        if (cli_text(good[i].text, &g, &t, &other, &e) != 0)
            fail_msg("'%s' rejected: %s", good[i].text, e.msg);
        assert_int_equal(g.m, good[i].m);
        assert_int_equal(g.n, good[i].n);
        assert_int_equal(g.k, good[i].k);
        assert_int_equal(t, good[i].t);
        assert_int_equal(other, good[i].other);
        assert_int_equal(g.layout, good[i].l);
        assert_int_equal(g.dtype, good[i].d);
    }
}

static void test_cli_errors(void **state)
{
    (void)state;
    const struct {
        const char *text, *want;
    } bad[] = {
        {"--gemm M= N=1 K=1", "'M='"},
        {"--gemm M=-1 N=1 K=1", "'M=-1'"},
        {"--gemm Q=3 N=1 K=1", "'Q=3'"},
        {"--gemm 1024 N=1 K=1", "'1024'"},
        {"--gemm M=1 N=1", "no K"},
        {"--gemm", "--gemm needs"},
        {"--gemm --m 4", "--gemm needs"},
        {"--m 4 --gemm M=1 N=1 K=1", "already given"},
        {"--gemm MNK=2 --k 4", "option --k"},
        {"--gemm MNK=2 --gemm MNK=3", "already given"},
        {"--m 4 --m 5 --n 1 --k 1", "option --m"},
        {"--m 0 --n 1 --k 1", "--m"},
        {"--m x --n 1 --k 1", "--m"},
        {"--m 4 --n 1", "--k"},
        {"--layout", "--layout needs a value"},
        {"--layout tx --gemm MNK=2", "'tx'"}, /* tt is a layout since issue 21 */
        {"--gemm MNK=2 --dtype fp8", "'fp8'"},
        {"--m 65536 --n 65536 --k 1", "C (M*N)"},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad); i++) {
        cut_gemm g;
        int t = -1, other;
        cut_err e = {{0}};
        if (cli_text(bad[i].text, &g, &t, &other, &e) != -1)
            fail_msg("'%s' accepted", bad[i].text);
        if (!strstr(e.msg, bad[i].want))
            fail_msg("'%s': the error lacks \"%s\": %s", bad[i].text, bad[i].want, e.msg);
    }
}

/* The option index after --gemm points at its last word, so the caller's loop continues after it. */
static void test_cli_index(void **state)
{
    (void)state;
    char *argv[] = {"tune", "--gemm", "M=1", "NK=2", "--quiet", "t=3"};
    int i = 1, t = -1;
    cut_gemm g;
    cut_err e;
    cut_gemm_cli_init(&g);
    assert_int_equal(cut_gemm_parse_cli(6, argv, &i, &g, &t, &e), 1);
    assert_int_equal(i, 3);
    i = 4;
    assert_int_equal(cut_gemm_parse_cli(6, argv, &i, &g, &t, &e), 0);
    assert_int_equal(i, 4);
    assert_int_equal(t, -1); /* no t= among the --gemm words */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed004_examples), cmocka_unit_test(test_bad_words),
        cmocka_unit_test(test_limits),           cmocka_unit_test(test_names_and_dtypes),
        cmocka_unit_test(test_flops_and_elems),  cmocka_unit_test(test_cli_forms),
        cmocka_unit_test(test_cli_errors),       cmocka_unit_test(test_cli_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
