/* Kernel specs for the MCGS optimizer (issue 7): the launch-expression evaluator (precedence, functions, names, and
 * its errors), the suite's row-softmax spec loaded and resolved, and malformed specs refused with a sentence naming
 * the field (bad JSON, unknown dtype, shape or launch naming an unknown size, missing entry point, args mismatch). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/kspec.h"
#include "cutune/optimize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cut_ks_var vars[] = {{"ROWS", 4096}, {"COLS", 1000}, {"BLOCK", 256}};

static long long ev(const char *s)
{
    long long x = -999;
    cut_err e = {{0}};
    if (cut_ks_eval(s, vars, 3, &x, &e) != 0)
        fail_msg("'%s': %s", s, e.msg);
    return x;
}

static void ev_fails(const char *s, const char *words)
{
    long long x = 12345;
    cut_err e = {{0}};
    assert_int_equal(cut_ks_eval(s, vars, 3, &x, &e), -1);
    assert_int_equal(x, 12345); /* nothing written */
    if (!strstr(e.msg, words))
        fail_msg("'%s': '%s' does not say '%s'", s, e.msg, words);
}

static void test_eval(void **state)
{
    (void)state;
    assert_int_equal(ev("2 + 3 * 4"), 14);
    assert_int_equal(ev("(2 + 3) * 4"), 20);
    assert_int_equal(ev("-3 + 10"), 7);
    assert_int_equal(ev("--3"), 3);
    assert_int_equal(ev("7 / 2"), 3);
    assert_int_equal(ev("-7 / 2"), -3); /* C semantics */
    assert_int_equal(ev("7 % 3"), 1);
    assert_int_equal(ev("10 - 2 - 3"), 5); /* left to right */
    assert_int_equal(ev("cdiv(COLS, BLOCK)"), 4);
    assert_int_equal(ev("min(BLOCK, 64) * 2 + max(1, ROWS / 1024)"), 132);
    assert_int_equal(ev("BLOCK*4"), 1024);
    assert_int_equal(ev(" 42 "), 42);
    ev_fails("1 / 0", "division by zero");
    ev_fails("5 % (BLOCK - 256)", "division by zero");
    ev_fails("cdiv(4, 0)", "cdiv");
    ev_fails("FOO + 1", "unknown name");
    ev_fails("sqrt(4, 2)", "unknown function");
    ev_fails("2 +", "at its end");
    ev_fails("3 4", "unexpected text");
    ev_fails("(1 + 2", "expected ')'");
    ev_fails("min(1)", "expected ','");
    ev_fails("9223372036854775807 + 1", "overflow");
    ev_fails("99999999999999999999", "too large");
    ev_fails("4096 * 4096 * 4096 * 4096 * 4096 * 4096", "overflow");
    ev_fails("", "expected a number");
    char deep[400] = "";
    for (int i = 0; i < 100; i++)
        strcat(deep, "(");
    strcat(deep, "1");
    for (int i = 0; i < 100; i++)
        strcat(deep, ")");
    ev_fails(deep, "nesting too deep");
}

static char *suite_path(const char *file)
{
    const char *fx = getenv("CUTUNE_FIXTURES");
    assert_non_null(fx);
    char *p = malloc(strlen(fx) + strlen(file) + 32);
    sprintf(p, "%s/../../kernels/%s", fx, file);
    return p;
}

static void test_suite_softmax(void **state)
{
    (void)state;
    char *path = suite_path("softmax_row.json");
    cut_kspec k;
    cut_err e = {{0}};
    if (cut_kspec_load(path, &k, &e) != 0)
        fail_msg("%s", e.msg);
    assert_string_equal(k.name, "softmax_row");
    assert_string_equal(k.entry, "softmax_row");
    assert_non_null(strstr(k.source, "__global__ void softmax_row("));
    assert_int_equal(k.ntunables, 2); /* BLOCK and VEC */
    assert_int_equal(k.tunables[0].nvalues, 5);
    assert_int_equal(k.ninputs, 1);
    assert_int_equal(k.noutputs, 1);
    assert_int_equal(k.inputs[0].init, CUT_KS_RANDN);
    assert_int_equal(k.inputs[0].seed, 1);
    assert_true(k.atol == 1e-6 && k.rtol == 1e-4);
    cut_ks_launch l;
    assert_int_equal(cut_kspec_resolve(&k, NULL, &l, &e), 0); /* the baseline: BLOCK = 128 */
    assert_int_equal(l.grid[0], 8192);
    assert_int_equal(l.block[0], 128);
    assert_int_equal(l.grid[1] * l.grid[2] * l.block[1] * l.block[2], 1);
    assert_int_equal(l.smem, 512);
    assert_int_equal(l.in_elems[0], 8192u * 2048u);
    const long long big[2] = {1024, 4}, too_big[2] = {2048, 1};
    assert_int_equal(cut_kspec_resolve(&k, big, &l, &e), 0);
    assert_int_equal(l.block[0], 1024);
    assert_int_equal(cut_kspec_resolve(&k, too_big, &l, &e), -1);
    assert_non_null(strstr(e.msg, "launch.block[0]"));
    cut_kspec_free(&k);
    free(path);
}

/* The softmax spec as text with one replacement; must be refused naming `words`. */
static const char base[] =
    "{\"name\": \"k\", \"language\": \"cuda\", \"entry\": \"k\","
    " \"source\": \"extern \\\"C\\\" __global__ void k(const float *x, float *y, int n) { }\","
    " \"sizes\": {\"N\": 1000}, \"tunables\": {\"BLOCK\": [128, 256]},"
    " \"launch\": {\"grid\": [\"cdiv(N, BLOCK)\"], \"block\": [\"BLOCK\"]},"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"N\"], \"init\": \"uniform\"}],"
    " \"outputs\": [{\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [\"N\"]}],"
    " \"scalars\": [{\"name\": \"n\", \"dtype\": \"i32\", \"value\": \"N\"}],"
    " \"args\": [\"x\", \"y\", \"n\"], \"tolerance\": {\"atol\": 1e-6, \"rtol\": 1e-5}}";

/* The base spec with its first `from` replaced by `to`, into text. */
static void spliced(const char *from, const char *to, char *text, size_t n)
{
    const char *at = strstr(base, from);
    if (!at)
        fail_msg("'%s' is not in the base spec", from);
    snprintf(text, n, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
}

static void refused(const char *from, const char *to, const char *words)
{
    char text[4096];
    spliced(from, to, text, sizeof text);
    cut_kspec k;
    cut_err e = {{0}};
    int rc = cut_kspec_parse(text, strlen(text), NULL, &k, &e);
    cut_kspec_free(&k);
    if (rc == 0)
        fail_msg("accepted with '%s' -> '%s'", from, to);
    if (!strstr(e.msg, words))
        fail_msg("'%s' -> '%s': '%s' does not name '%s'", from, to, e.msg, words);
    printf("  refused: %s\n", e.msg);
}

static void test_malformed(void **state)
{
    (void)state;
    cut_kspec k;
    cut_err e = {{0}};
    assert_int_equal(cut_kspec_parse(base, strlen(base), NULL, &k, &e), 0);
    assert_int_equal(k.inputs[0].init, CUT_KS_UNIFORM);
    cut_kspec_free(&k);
    refused("{\"name\"", "{{\"name\"", "not valid JSON");
    refused("\"dtype\": \"f32\", \"shape\": [\"N\"], \"init\"", "\"dtype\": \"f8\", \"shape\": [\"N\"], \"init\"",
            "inputs[0].dtype: unknown dtype 'f8'");
    refused("\"shape\": [\"N\"]}]", "\"shape\": [\"M\"]}]", "outputs[0].shape[0]");
    refused("\"grid\": [\"cdiv(N, BLOCK)\"]", "\"grid\": [\"cdiv(N, THREADS)\"]", "launch.grid[0]");
    refused("\"block\": [\"BLOCK\"]", "\"block\": [\"BLOCK * 16\"]", "launch.block[0]");
    refused("\"entry\": \"k\"", "\"entry\": \"kernel\"", "entry: no __global__ function 'kernel'");
    refused("\"entry\": \"k\"", "\"entry\": \"1k\"", "entry: '1k' is not an identifier");
    refused("\"args\": [\"x\", \"y\", \"n\"]", "\"args\": [\"x\", \"y\"]", "args: scalar 'n' is passed 0 times");
    refused("\"args\": [\"x\", \"y\", \"n\"]", "\"args\": [\"x\", \"y\", \"n\", \"z\"]", "args: 4 names");
    refused("\"language\": \"cuda\"", "\"language\": \"triton\"", "language: 'triton'");
    refused("\"init\": \"uniform\"", "\"init\": \"gauss\"", "inputs[0].init: unknown init 'gauss'");
    refused("\"init\": \"uniform\"", "\"init\": \"full\"", "needs a \"value\"");
    refused("\"tunables\": {\"BLOCK\": [128, 256]}", "\"tunables\": {\"BLOCK\": []}", "tunables.BLOCK");
    refused("\"tunables\": {\"BLOCK\": [128, 256]}", "\"tunables\": {\"N\": [1], \"BLOCK\": [128]}",
            "both a size and a tunable");
    refused("\"sizes\": {\"N\": 1000}", "\"sizes\": {\"N\": -5}", "sizes.N");
    refused("\"atol\": 1e-6", "\"atol\": -1", "tolerance.atol");
    refused("\"outputs\": [{\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [\"N\"]}],", "", "outputs: missing");
    refused("\"source\": \"extern", "\"source_path\": \"/nonexistent/k.cu\", \"x\": \"extern", "source_path");
}

/* Input payloads: base64 and zlib+base64 bytes of the tensor reach both input sets; malformed ones are refused. */
static void test_payloads(void **state)
{
    (void)state;
    static const char *const ok[][2] = {{"base64", "AACAPwAAAEAAAEBAAACAQA=="},          /* 1 2 3 4 */
                                        {"zlib+base64", "eJxjYGiwZ2BgcAAiIG5wAAAQgwJA"}}; /* the same, deflated */
    for (int i = 0; i < 2; i++) {
        char to[256];
        snprintf(to, sizeof to, "\"encoding\": \"%s\", \"data\": \"%s\"", ok[i][0], ok[i][1]);
        char text[4096];
        spliced("\"init\": \"uniform\"", to, text, sizeof text);
        char *sz = strstr(text, "\"N\": 1000");
        memcpy(sz, "\"N\":    4", 9);
        cut_kspec k;
        cut_kwork w;
        cut_err e = {{0}};
        if (cut_kspec_parse(text, strlen(text), NULL, &k, &e) != 0 || cut_kspec_work(&k, &w, &e) != 0)
            fail_msg("%s: %s", ok[i][0], e.msg);
        const float want[4] = {1, 2, 3, 4};
        assert_memory_equal(w.bufs[0].data[0], want, sizeof want);
        assert_memory_equal(w.bufs[0].data[1], want, sizeof want);
        /* a size override that no longer fits the payload is refused, naming it */
        assert_int_equal(cut_kspec_set_size(&k, "N", 5, &e), -1);
        assert_non_null(strstr(e.msg, "inputs[0].data: 16 bytes, the shape needs 20"));
        cut_kspec_work_free(&w);
        cut_kspec_free(&k);
    }
    refused("\"init\": \"uniform\"", "\"data\": \"AACAPwAAAEAAAEBAAACAQA==\", \"encoding\": \"base64\"",
            "inputs[0].data: 16 bytes, the shape needs 4000");
    refused("\"init\": \"uniform\"", "\"init\": \"uniform\", \"data\": \"AAAA\"", "not both");
    refused("\"init\": \"uniform\"", "\"data\": \"AA*A\", \"encoding\": \"base64\"", "not base64 at byte 2");
    refused("\"init\": \"uniform\"", "\"data\": \"AAA\"", "not a multiple of 4");
    refused("\"init\": \"uniform\"", "\"data\": \"AACAPwAAAEAAAEBAAACAQA==\"", "not a complete zlib stream");
    refused("\"init\": \"uniform\"", "\"data\": \"AAAA\", \"encoding\": \"gzip\"", "'gzip' is not base64");
}

/* A floating-point scalar may be any finite number; an integer scalar may not. */
static void test_float_scalar(void **state)
{
    (void)state;
    char text[4096];
    spliced("{\"name\": \"n\", \"dtype\": \"i32\", \"value\": \"N\"}",
            "{\"name\": \"n\", \"dtype\": \"f32\", \"value\": 0.25}", text, sizeof text);
    cut_kspec k;
    cut_kcall c;
    cut_err e = {{0}};
    if (cut_kspec_parse(text, strlen(text), NULL, &k, &e) != 0 || cut_kspec_call(&k, NULL, &c, &e) != 0)
        fail_msg("%s", e.msg);
    float f = 0;
    assert_int_equal(c.args[2].buf, -1);
    assert_int_equal(c.args[2].size, 4);
    memcpy(&f, c.args[2].bytes, 4);
    assert_true(f == 0.25f);
    cut_kspec_free(&k);
    refused("\"value\": \"N\"", "\"value\": 0.25", "scalars[0].value: 0.25 is not an integer");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_payloads),
        cmocka_unit_test(test_float_scalar),
        cmocka_unit_test(test_eval),
        cmocka_unit_test(test_suite_softmax),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
