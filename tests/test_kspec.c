/* Kernel specs for the MCGS optimizer (issue 7): the launch-expression evaluator (precedence, functions, names,
 * comparisons and logic with short-circuits, and its errors), the suite's row-softmax spec loaded and resolved,
 * malformed specs refused with a sentence naming the field (bad JSON, unknown dtype, shape or launch naming an
 * unknown size, missing entry point, args mismatch), and restrictions: each malformed one refused naming it, a
 * baseline that breaks one refused, and cut_kspec_allows on allowed and forbidden tunables; check_sizes (a second
 * size set): resolved, built and snapshotted, each malformed one (not an object, an unknown or missing size, a value
 * out of range, an overflow where the spec resolves there, given data that no longer fits) refused naming it, and
 * restrictions there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/kspec.h"
#include "cutune/kstate.h"
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
    /* comparisons and logic: 0 or 1, C's precedence (* over + over < over == over && over ||) */
    assert_int_equal(ev("1 + 2 == 3"), 1);
    assert_int_equal(ev("BLOCK == 16 * 16"), 1);
    assert_int_equal(ev("2 < 3 == 1"), 1);  /* (2 < 3) == 1 */
    assert_int_equal(ev("3 > 2 > 1"), 0);   /* (3 > 2) > 1, as in C */
    assert_int_equal(ev("1 || 0 && 0"), 1); /* && binds tighter */
    assert_int_equal(ev("(1 || 0) && 0"), 0);
    assert_int_equal(ev("0 && 1 || 1"), 1);
    assert_int_equal(ev("!0 + 1"), 2); /* unary ! binds tighter than + */
    assert_int_equal(ev("!BLOCK > 16"), 0); /* (!BLOCK) > 16 */
    assert_int_equal(ev("!(BLOCK > 16)"), 0);
    assert_int_equal(ev("!!ROWS"), 1);
    assert_int_equal(ev("-!0"), -1);
    assert_int_equal(ev("3 <= 3 && 4 >= 5"), 0);
    assert_int_equal(ev("COLS != 1000 || ROWS % BLOCK == 0"), 1);
    assert_int_equal(ev("5 && 7"), 1);
    assert_int_equal(ev("min(BLOCK < 300, 2)"), 1);
    /* short-circuits: the operand not evaluated cannot fail, but its names are checked */
    assert_int_equal(ev("0 && 1 / 0"), 0);
    assert_int_equal(ev("BLOCK > 0 || cdiv(1, 0) + 9223372036854775807 * 2"), 1);
    assert_int_equal(ev("BLOCK - 256 != 0 && COLS / (BLOCK - 256) > 2"), 0);
    ev_fails("1 && 1 / 0", "division by zero");
    ev_fails("1 || FOO", "unknown name");
    ev_fails("0 && (1 +", "at its end");
    ev_fails("BLOCK = 256", "unexpected '=' (compare with '==')");
    ev_fails("!= 3", "expected a number");
    ev_fails("1 <> 2", "expected a number");
    ev_fails("1 & 2", "unexpected text");
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
    refused("\"language\": \"cuda\"", "\"language\": \"fortran\"", "language: 'fortran' is not supported (cuda or triton)");
    /* a CUDA spec called Triton: its launch.block is the first thing a Triton spec cannot have */
    refused("\"language\": \"cuda\"", "\"language\": \"triton\"", "launch.block: a Triton kernel's block");
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
        cut_work w;
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

/* Refused instead of silently changing data (issue 15): an integer scalar that overflows its dtype, a buffer or scalar
 * whose dtype is not the kernel's parameter type. */
static void test_types_refused(void **state)
{
    (void)state;
    refused("{\"name\": \"n\", \"dtype\": \"i32\", \"value\": \"N\"}",
            "{\"name\": \"n\", \"dtype\": \"i32\", \"value\": \"N * 3000000\"}", "which does not fit i32");
    refused("{\"name\": \"n\", \"dtype\": \"i32\", \"value\": \"N\"}",
            "{\"name\": \"n\", \"dtype\": \"i64\", \"value\": \"N\"}", "'n' is a scalar i64, but parameter 3 of k is a i32");
    refused("float *y", "double *y", "'y' is a buffer of f32, but parameter 2 of k is a pointer to f64");
    refused("const float *x", "const __half *x", "'x' is a buffer of f32, but parameter 1 of k is a pointer to f16");
}

/* A floating-point scalar may be any finite number; an integer scalar may not. */
static void test_float_scalar(void **state)
{
    (void)state;
    char text[4096], tmp[4096];
    spliced("{\"name\": \"n\", \"dtype\": \"i32\", \"value\": \"N\"}",
            "{\"name\": \"n\", \"dtype\": \"f32\", \"value\": 0.25}", tmp, sizeof tmp);
    /* the kernel's parameter follows (issue 15: a scalar whose dtype is not the parameter's type is refused) */
    const char *at = strstr(tmp, "int n)");
    assert_non_null(at);
    snprintf(text, sizeof text, "%.*sfloat n)%s", (int)(at - tmp), tmp, at + strlen("int n)"));
    cut_kspec k;
    cut_call c;
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

/* ---- restrictions ---- */

/* A spec with tunables BX [16, 8, 32], BY [16, 8, 32, 1], TY [1, 2, 4], size N = n, and `restrictions` spliced in
 * verbatim (e.g. ", \"restrictions\": [...]"). */
static void rspec(long long n, const char *restrictions, char *text, size_t len)
{
    snprintf(text, len,
             "{\"name\": \"k\", \"language\": \"cuda\", \"entry\": \"k\","
             " \"source\": \"extern \\\"C\\\" __global__ void k(float *y) { }\","
             " \"sizes\": {\"N\": %lld},"
             " \"tunables\": {\"BX\": [16, 8, 32], \"BY\": [16, 8, 32, 1], \"TY\": [1, 2, 4]},"
             " \"launch\": {\"grid\": [\"cdiv(N, BX)\"], \"block\": [\"BX\", \"BY\"]},"
             " \"outputs\": [{\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [\"N\"]}], \"args\": [\"y\"]%s}",
             n, restrictions);
}

static void rparse(long long n, const char *restrictions, cut_kspec *k)
{
    char text[12000];
    rspec(n, restrictions, text, sizeof text);
    cut_err e = {{0}};
    if (cut_kspec_parse(text, strlen(text), NULL, k, &e) != 0)
        fail_msg("%s: %s", restrictions, e.msg);
}

/* Refused with exactly the message want. */
static void rrefused(const char *restrictions, const char *want)
{
    char text[12000];
    rspec(1024, restrictions, text, sizeof text);
    cut_kspec k;
    cut_err e = {{0}};
    const int rc = cut_kspec_parse(text, strlen(text), NULL, &k, &e);
    cut_kspec_free(&k);
    if (rc == 0)
        fail_msg("accepted: %s", restrictions);
    if (strcmp(e.msg, want) != 0)
        fail_msg("%s:\n  got  '%s'\n  want '%s'", restrictions, e.msg, want);
    printf("  refused: %s\n", e.msg);
}

static void allows(const cut_kspec *k, long long bx, long long by, long long ty, int want, const char *why_want)
{
    const long long vals[3] = {bx, by, ty};
    char why[256] = "stale";
    const int got = cut_kspec_allows(k, vals, why, sizeof why);
    if (got != want)
        fail_msg("BX=%lld BY=%lld TY=%lld: allows %d, want %d (%s)", bx, by, ty, got, want, why);
    if (want)
        assert_string_equal(why, "");
    else if (strcmp(why, why_want) != 0)
        fail_msg("BX=%lld BY=%lld TY=%lld:\n  got  '%s'\n  want '%s'", bx, by, ty, why, why_want);
    assert_int_equal(cut_kspec_allows(k, vals, NULL, 0), want); /* no buffer: the same answer */
}

static void test_restrictions(void **state)
{
    (void)state;
    cut_kspec k;
    /* Kernel Tuner's matmul restriction */
    rparse(1024, ", \"restrictions\": [\"BX == BY * TY\"]", &k);
    assert_int_equal(k.nrestrictions, 1);
    assert_string_equal(k.restrictions[0], "BX == BY * TY");
    assert_int_equal(cut_kspec_allows(&k, NULL, NULL, 0), 1); /* the baseline */
    allows(&k, 16, 16, 1, 1, NULL);
    allows(&k, 32, 16, 2, 1, NULL);
    allows(&k, 8, 8, 1, 1, NULL);
    allows(&k, 32, 16, 1, 0, "restrictions[0] 'BX == BY * TY' is false for BX=32, BY=16, TY=1");
    allows(&k, 16, 8, 1, 0, "restrictions[0] 'BX == BY * TY' is false for BX=16, BY=8, TY=1");
    cut_kspec_free(&k);
    /* no restrictions: everything is allowed */
    rparse(1024, "", &k);
    assert_int_equal(k.nrestrictions, 0);
    allows(&k, 32, 1, 4, 1, NULL);
    cut_kspec_free(&k);

    /* precedence: && over || (left to right the baseline would break the first), % over ==, ! over >; the first
     * broken restriction is named, with the sizes it reads */
    rparse(1000,
           ", \"restrictions\": [\"BX == BY * TY || BY == 1 && TY == 4\", \"!(BX > 16) || N % (BX * BY) != 0\","
           " \"BX * BY <= 512\"]",
           &k);
    allows(&k, 16, 16, 1, 1, NULL);
    allows(&k, 8, 1, 4, 1, NULL);  /* the && clause */
    allows(&k, 32, 16, 2, 1, NULL); /* 1000 % 512 != 0 */
    allows(&k, 32, 1, 1, 0,
           "restrictions[0] 'BX == BY * TY || BY == 1 && TY == 4' is false for BX=32, BY=1, TY=1");
    allows(&k, 8, 1, 2, 0, "restrictions[0] 'BX == BY * TY || BY == 1 && TY == 4' is false for BX=8, BY=1, TY=2");
    allows(&k, 8, 8, 1, 1, NULL);
    allows(&k, 32, 32, 1, 0, "restrictions[2] 'BX * BY <= 512' is false for BX=32, BY=32");
    cut_kspec_free(&k);
    rparse(1024, ", \"restrictions\": [\"!(BX > 16) || N % (BX * BY) != 0\"]", &k);
    allows(&k, 32, 8, 4, 0, "restrictions[0] '!(BX > 16) || N % (BX * BY) != 0' is false for N=1024, BX=32, BY=8");
    cut_kspec_free(&k);
    /* a restriction that cannot be evaluated for some tunables forbids them, saying why; its short-circuit keeps
     * the baseline's evaluation safe */
    rparse(1000, ", \"restrictions\": [\"BX == 16 || N % (BX - 32) >= 0\"]", &k);
    allows(&k, 8, 16, 1, 1, NULL);
    allows(&k, 32, 16, 1, 0,
           "restrictions[0] cannot be evaluated for N=1000, BX=32: expression 'BX == 16 || N % (BX - 32) >= 0': "
           "division by zero at ' >= 0' (byte 26)");
    cut_kspec_free(&k);

    /* malformed: each names the restriction and the problem */
    rrefused(", \"restrictions\": \"BX == 16\"",
             "restrictions: must be an array of expression strings (\"BX == BY * TY\")");
    rrefused(", \"restrictions\": [16]", "restrictions[0]: must be a string (a boolean expression)");
    rrefused(", \"restrictions\": [\"BX == BY * TY\", \"  \"]", "restrictions[1]: empty");
    rrefused(", \"restrictions\": [\"BX == BY *\"]",
             "restrictions[0]: expression 'BX == BY *': expected a number, a name or '(' at its end");
    rrefused(", \"restrictions\": [\"BX == BZ * TY\"]",
             "restrictions[0]: expression 'BX == BZ * TY': unknown name (not a size or tunable) at 'BZ * TY' (byte 7)");
    rrefused(", \"restrictions\": [\"BX == 16 || Q > 1\"]", /* a name in an operand never evaluated: still checked */
             "restrictions[0]: expression 'BX == 16 || Q > 1': unknown name (not a size or tunable) at 'Q > 1' "
             "(byte 13)");
    rrefused(", \"restrictions\": [\"BX = BY * TY\"]",
             "restrictions[0]: expression 'BX = BY * TY': unexpected '=' (compare with '==') at '= BY * TY' (byte 4)");
    rrefused(", \"restrictions\": [\"(BX == BY * TY\"]",
             "restrictions[0]: expression '(BX == BY * TY': expected ')' at its end");
    rrefused(", \"restrictions\": [\"BX == 16\", \"sqrt(BX) == 4\"]",
             "restrictions[1]: expression 'sqrt(BX) == 4': unknown function (min, max, cdiv) at '(BX) == 4' (byte 5)");
    rrefused(", \"restrictions\": [\"N % (BX - 16) == 0\"]",
             "restrictions[0]: expression 'N % (BX - 16) == 0': division by zero at ' == 0' (byte 14)");
    /* the baseline (each tunable's first value) breaks one */
    rrefused(", \"restrictions\": [\"BX == BY * TY\", \"BX * BY <= 128\"]",
             "restrictions[1]: 'BX * BY <= 128' is false for the baseline (BX=16, BY=16; each tunable's first value)");
    rrefused(", \"restrictions\": [\"2 > 3\"]",
             "restrictions[0]: '2 > 3' is false for the baseline (no variables; each tunable's first value)");
    /* limits: length and count */
    char many[8000] = ", \"restrictions\": [", one[600];
    memset(one, 0, sizeof one);
    strcpy(one, "\"BX");
    for (int i = 0; i < 130; i++)
        strcat(one, " + 0");
    strcat(one, " == 16\"");
    snprintf(many + strlen(many), sizeof many - strlen(many), "%s]", one);
    rrefused(many, "restrictions[0]: expression longer than 255 characters");
    for (int count = CUT_KS_MAX_RESTRICTIONS; count <= CUT_KS_MAX_RESTRICTIONS + 1; count++) {
        snprintf(many, sizeof many, ", \"restrictions\": [");
        for (int i = 0; i < count; i++)
            strcat(many, i ? ", \"BX > 0\"" : "\"BX > 0\"");
        strcat(many, "]");
        if (count > CUT_KS_MAX_RESTRICTIONS) {
            rrefused(many, "restrictions: more than 32");
        } else { /* 32 of them: fine */
            rparse(1024, many, &k);
            assert_int_equal(k.nrestrictions, CUT_KS_MAX_RESTRICTIONS);
            cut_kspec_free(&k);
        }
    }

    /* a size override the baseline's tunables no longer satisfy is refused, the size kept */
    rparse(1024, ", \"restrictions\": [\"N % (BX * BY) == 0\"]", &k);
    cut_err e = {{0}};
    assert_int_equal(cut_kspec_set_size(&k, "N", 1000, &e), -1);
    assert_string_equal(e.msg, "size N=1000: restrictions[0]: 'N % (BX * BY) == 0' is false for the baseline "
                               "(N=1000, BX=16, BY=16; each tunable's first value)");
    assert_int_equal(k.sizes[0].value, 1024);
    assert_int_equal(cut_kspec_set_size(&k, "N", 4096, &e), 0);
    assert_int_equal(k.sizes[0].value, 4096);
    cut_kspec_free(&k);
}

/* ---- check_sizes: a second size set ---- */

/* The base spec with `check` spliced in after its sizes (", \"check_sizes\": {...}"). */
static void with_check(const char *check, char *text, size_t n)
{
    char to[512];
    snprintf(to, sizeof to, "\"sizes\": {\"N\": 1000}%s", check);
    spliced("\"sizes\": {\"N\": 1000}", to, text, n);
}

/* Refused with a message that contains words. */
static void check_refused(const char *check, const char *words)
{
    char text[4096];
    with_check(check, text, sizeof text);
    cut_kspec k;
    cut_err e = {{0}};
    const int rc = cut_kspec_parse(text, strlen(text), NULL, &k, &e);
    cut_kspec_free(&k);
    if (rc == 0)
        fail_msg("accepted: %s", check);
    if (!strstr(e.msg, words))
        fail_msg("%s:\n  got  '%s'\n  want '%s'", check, e.msg, words);
    printf("  refused: %s\n", e.msg);
}

static void test_check_sizes(void **state)
{
    (void)state;
    char text[4096];
    cut_kspec k, b;
    cut_err e = {{0}};
    /* none: nothing at check_sizes */
    assert_int_equal(cut_kspec_parse(base, strlen(base), NULL, &k, &e), 0);
    assert_int_equal(k.has_check_sizes, 0);
    cut_ks_launch l;
    assert_int_equal(cut_kspec_resolve_at(&k, CUT_KS_CHECK_SIZES, NULL, &l, &e), -1);
    assert_non_null(strstr(e.msg, "no check_sizes"));
    assert_int_equal(cut_kspec_allows_at(&k, CUT_KS_CHECK_SIZES, NULL, NULL, 0), 0);
    cut_kspec_free(&k);

    /* given: its own shapes, launch and scalars; the timed sizes' unchanged */
    with_check(", \"check_sizes\": {\"N\": 77}", text, sizeof text);
    if (cut_kspec_parse(text, strlen(text), NULL, &k, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(k.has_check_sizes, 1);
    assert_true(k.check_sizes[0] == 77 && k.sizes[0].value == 1000);
    const long long big[1] = {256};
    assert_int_equal(cut_kspec_resolve_at(&k, CUT_KS_CHECK_SIZES, big, &l, &e), 0);
    assert_true(l.grid[0] == 1 && l.block[0] == 256 && l.in_elems[0] == 77 && l.out_elems[0] == 77 &&
                l.scalars[0] == 77);
    assert_int_equal(cut_kspec_resolve(&k, big, &l, &e), 0);
    assert_true(l.grid[0] == 4 && l.in_elems[0] == 1000 && l.scalars[0] == 1000);
    char at[128];
    cut_kspec_sizes_text(&k, CUT_KS_CHECK_SIZES, at, sizeof at);
    assert_string_equal(at, "check_sizes (N=77)");
    cut_kspec_sizes_text(&k, CUT_KS_SIZES, at, sizeof at);
    assert_string_equal(at, "sizes (N=1000)");
    cut_work w;
    cut_call c;
    if (cut_kspec_work_at(&k, CUT_KS_CHECK_SIZES, &w, &e) != 0 || cut_kspec_call_at(&k, CUT_KS_CHECK_SIZES, NULL, &c,
                                                                                      &e) != 0)
        fail_msg("%s", e.msg);
    assert_true(w.nbufs == 2 && w.bufs[0].elems == 77 && w.bufs[1].elems == 77);
    assert_true(w.flops == 0 && w.bytes == 0); /* never timed: no physical floor */
    int32_t n = 0;
    memcpy(&n, c.args[2].bytes, 4);
    assert_true(c.grid[0] == 1 && c.block[0] == 128 && n == 77);
    cut_kspec_work_free(&w);
    /* the snapshot keeps it, and --sizes overrides only the timed sizes */
    assert_int_equal(cut_kspec_set_size(&k, "N", 4096, &e), 0);
    char *json = NULL;
    assert_int_equal(cut_kspec_to_json(&k, NULL, &json, &e), 0);
    if (cut_kspec_parse(json, strlen(json), NULL, &b, &e) != 0)
        fail_msg("%s\n%s", e.msg, json);
    assert_true(b.has_check_sizes && b.check_sizes[0] == 77 && b.sizes[0].value == 4096);
    free(json);
    cut_kspec_free(&b);
    cut_kspec_free(&k);

    /* malformed: each names the field */
    check_refused(", \"check_sizes\": [77]", "check_sizes: must be an object of size name -> integer (N)");
    check_refused(", \"check_sizes\": {\"M\": 77}", "check_sizes: 'M' is not a size of the spec (its sizes: N)");
    check_refused(", \"check_sizes\": {\"N\": 77, \"BLOCK\": 64}",
                  "check_sizes: 'BLOCK' is not a size of the spec (its sizes: N)");
    check_refused(", \"check_sizes\": {}", "check_sizes: lacks N (give every size of \"sizes\": N)");
    check_refused(", \"check_sizes\": {\"N\": 77, \"N\": 78}", "check_sizes.N: given twice");
    check_refused(", \"check_sizes\": {\"N\": 0}", "check_sizes.N: must be an integer from 1 to 1e12");
    check_refused(", \"check_sizes\": {\"N\": -3}", "check_sizes.N: must be an integer from 1 to 1e12");
    check_refused(", \"check_sizes\": {\"N\": 7.5}", "check_sizes.N: must be an integer from 1 to 1e12");
    check_refused(", \"check_sizes\": {\"N\": \"77\"}", "check_sizes.N: must be an integer from 1 to 1e12");
    check_refused(", \"check_sizes\": {\"N\": 1e13}", "check_sizes.N: must be an integer from 1 to 1e12");
    /* overflow where the spec resolves at check_sizes: a scalar that no longer fits its dtype, a tensor too large */
    check_refused(", \"check_sizes\": {\"N\": 3000000000}",
                  "check_sizes: scalars[0] 'n': 'N' is 3000000000, which does not fit i32");
    { /* an output of N x N elements: 10^6 at the timed sizes, 4 * 10^10 at check_sizes */
        cut_kspec t;
        with_check(", \"check_sizes\": {\"N\": 200000}", text, sizeof text);
        char *y = strstr(text, "\"shape\": [\"N\"]}]");
        assert_non_null(y);
        char rest[4096];
        snprintf(rest, sizeof rest, "%s", y + strlen("\"shape\": [\"N\"]}]"));
        snprintf(y, sizeof text - (size_t)(y - text), "\"shape\": [\"N\", \"N\"]}]%s", rest);
        assert_int_equal(cut_kspec_parse(text, strlen(text), NULL, &t, &e), -1);
        cut_kspec_free(&t);
        if (!strstr(e.msg, "check_sizes: outputs[0].shape[1]") || !strstr(e.msg, "1 to 2^34 elements"))
            fail_msg("%s", e.msg);
        printf("  refused: %s\n", e.msg);
    }
    /* given data holds the timed sizes' bytes: a shape that changes at check_sizes is refused */
    {
        char d[4096];
        spliced("\"init\": \"uniform\"", "\"data\": \"AACAPwAAAEAAAEBAAACAQA==\", \"encoding\": \"base64\"", d,
                sizeof d);
        char *sz = strstr(d, "\"N\": 1000}");
        assert_non_null(sz);
        char rest[4096];
        snprintf(rest, sizeof rest, "%s", sz + strlen("\"N\": 1000}"));
        snprintf(sz, sizeof d - (size_t)(sz - d), "\"N\": 4}, \"check_sizes\": {\"N\": 5}%s", rest);
        cut_kspec t;
        assert_int_equal(cut_kspec_parse(d, strlen(d), NULL, &t, &e), -1);
        cut_kspec_free(&t);
        assert_string_equal(e.msg, "check_sizes: inputs[0].data: 16 bytes, the shape needs 20 (5 f32 elements)");
    }
    /* a spec without sizes has nothing to give check_sizes */
    rparse(1024, "", &k);
    cut_kspec_free(&k);
    {
        char r[4096];
        rspec(1024, ", \"check_sizes\": {\"N\": 8}", r, sizeof r);
        assert_int_equal(cut_kspec_parse(r, strlen(r), NULL, &k, &e), 0); /* N is a size there: fine */
        assert_true(k.check_sizes[0] == 8);
        cut_kspec_free(&k);
    }

    /* restrictions at check_sizes: the baseline must be allowed there; other tunables may not be (allows_at says
     * why, naming the check sizes' values) */
    char r[4096];
    rspec(1024, ", \"check_sizes\": {\"N\": 48}, \"restrictions\": [\"N % BX == 0\"]", r, sizeof r);
    if (cut_kspec_parse(r, strlen(r), NULL, &k, &e) != 0)
        fail_msg("%s", e.msg);
    const long long bx32[3] = {32, 16, 1}, bx8[3] = {8, 16, 1};
    char why[256];
    assert_int_equal(cut_kspec_allows(&k, bx32, why, sizeof why), 1);
    assert_int_equal(cut_kspec_allows_at(&k, CUT_KS_CHECK_SIZES, bx32, why, sizeof why), 0);
    assert_string_equal(why, "restrictions[0] 'N % BX == 0' is false for N=48, BX=32");
    assert_int_equal(cut_kspec_allows_at(&k, CUT_KS_CHECK_SIZES, bx8, why, sizeof why), 1);
    cut_kspec_free(&k);
    rspec(1024, ", \"check_sizes\": {\"N\": 1000}, \"restrictions\": [\"N % BX == 0\"]", r, sizeof r);
    assert_int_equal(cut_kspec_parse(r, strlen(r), NULL, &k, &e), -1);
    cut_kspec_free(&k);
    assert_string_equal(e.msg, "check_sizes: restrictions[0]: 'N % BX == 0' is false for the baseline (N=1000, BX=16; "
                               "each tunable's first value)");
    /* the launch must resolve for the baseline at check_sizes too */
    rspec(1024, ", \"check_sizes\": {\"N\": 8}", r, sizeof r);
    char *g = strstr(r, "cdiv(N, BX)");
    assert_non_null(g);
    memcpy(g, "N / BX     ", 11);
    assert_int_equal(cut_kspec_parse(r, strlen(r), NULL, &k, &e), -1);
    cut_kspec_free(&k);
    assert_non_null(strstr(e.msg, "check_sizes: launch.grid[0]: 'N / BX     ' is 0 (allowed 1 to 2147483647)"));
}

/* A Triton spec (issue 18): parsed, its block 32 * num_warps, its state a Python header of assignments read back,
 * the rules' tunable moves on it as diffs of those lines (num_stages as the async pipeline's move) beside its Python
 * rewrites (rules_triton.c; no CUDA text rewrite), written and parsed again; a launch.block, an entry without @triton.jit refused; the optimizer refuses to
 * run it until its Triton worker is wired in. */
static const char triton_spec[] =
    "{\"name\": \"tsoftmax\", \"language\": \"triton\", \"entry\": \"softmax_kernel\",\n"
    " \"source\": \"import triton\\nimport triton.language as tl\\n\\n@triton.jit\\n"
    "def softmax_kernel(x, y, cols, BLOCK: tl.constexpr):\\n"
    "    row = tl.program_id(0)\\n    offs = tl.arange(0, BLOCK)\\n    m = offs < cols\\n"
    "    v = tl.load(x + row * cols + offs, mask=m, other=-float('inf'))\\n"
    "    v = tl.exp(v - tl.max(v, axis=0))\\n"
    "    tl.store(y + row * cols + offs, v / tl.sum(v, axis=0), mask=m)\\n\",\n"
    " \"sizes\": {\"ROWS\": 64, \"COLS\": 100},\n"
    " \"tunables\": {\"BLOCK\": [128, 256], \"num_warps\": [4, 8], \"num_stages\": [2, 3]},\n"
    " \"restrictions\": [\"BLOCK >= COLS\"],\n"
    " \"launch\": {\"grid\": [\"ROWS\"]},\n"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"ROWS\", \"COLS\"], \"init\": \"randn\", \"seed\": 1}],\n"
    " \"outputs\": [{\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [\"ROWS\", \"COLS\"]}],\n"
    " \"scalars\": [{\"name\": \"cols\", \"dtype\": \"i32\", \"value\": \"COLS\"}],\n"
    " \"args\": [\"x\", \"y\", \"cols\"], \"tolerance\": {\"atol\": 1e-6, \"rtol\": 1e-5}}";

static void triton_refused(const char *from, const char *to, const char *words)
{
    char text[sizeof triton_spec + 256];
    const char *at = strstr(triton_spec, from);
    assert_non_null(at);
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - triton_spec), triton_spec, to, at + strlen(from));
    cut_kspec k;
    cut_err e = {{0}};
    assert_int_equal(cut_kspec_parse(text, strlen(text), NULL, &k, &e), -1);
    if (!strstr(e.msg, words))
        fail_msg("'%s' does not say '%s'", e.msg, words);
    cut_kspec_free(&k);
}

static void test_triton_spec(void **state)
{
    (void)state;
    cut_kspec k;
    cut_err e = {{0}};
    if (cut_kspec_parse(triton_spec, strlen(triton_spec), NULL, &k, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(k.lang, CUT_KS_TRITON);
    assert_string_equal(cut_ks_lang_name(k.lang), "triton");
    cut_ks_launch l;
    const long long wide[3] = {256, 8, 3};
    assert_int_equal(cut_kspec_resolve(&k, NULL, &l, &e), 0);
    assert_int_equal(l.grid[0], 64);
    assert_int_equal(l.block[0], 128); /* 32 * num_warps 4 */
    assert_int_equal(l.smem, 0);
    assert_int_equal(cut_kspec_resolve(&k, wide, &l, &e), 0);
    assert_int_equal(l.block[0], 256);
    /* the state: Python assignments between the markers, read back */
    char *src = cut_kstate_materialise(&k, NULL);
    assert_non_null(strstr(src, CUT_KST_PY_BEGIN "\nBLOCK = 128\nnum_warps = 4\nnum_stages = 2\n" CUT_KST_PY_END
                                "\nimport triton\n"));
    long long vals[CUT_KS_MAX_VARS];
    assert_int_equal(cut_kstate_tunables(&k, src, vals, &e), 0);
    assert_int_equal(vals[0], 128);
    assert_int_equal(vals[1], 4);
    assert_int_equal(vals[2], 2);
    char *bad = cut_kstate_materialise(&k, (const long long[]){100, 4, 2});
    assert_int_equal(cut_kstate_tunables(&k, bad, vals, &e), -1);
    assert_non_null(strstr(e.msg, "tunable BLOCK: 100 is not one of its allowed values"));
    free(bad);
    /* the rules: tunable moves, each a diff of the header's assignments; then the Python rewrites, which leave the
     * header alone: cache_modifier and eviction_policy on the load, the offsets' hints, exp2 */
    cut_cand_gen *g = cut_rules_gen_new();
    cut_proposal p[32];
    const int n = cut_cand_gen_propose(g, &k, src, NULL, "/tmp", p, 32, &e);
    assert_true(n >= 3);
    int block = 0, stages = 0, rewrites = 0;
    for (int i = 0; i < n; i++) {
        if (p[i].move != CUT_MV_BLOCK_SIZES && p[i].move != CUT_MV_ASYNC_PIPELINE) {
            assert_true(p[i].move == CUT_MV_CACHE_CG || p[i].move == CUT_MV_VECTORIZE ||
                        p[i].move == CUT_MV_MATH_FUSION);
            assert_null(strstr(p[i].diff, "\n-BLOCK = "));
            assert_null(strstr(p[i].diff, "\n-num_"));
            rewrites++;
        }
        if (!strcmp(p[i].label, "BLOCK 128 -> 256"))
            block = strstr(p[i].diff, "-BLOCK = 128\n+BLOCK = 256\n") != NULL;
        if (!strcmp(p[i].label, "num_stages 2 -> 3"))
            stages = p[i].move == CUT_MV_ASYNC_PIPELINE && strstr(p[i].diff, "+num_stages = 3\n") != NULL;
        cut_proposal_free(&p[i]);
    }
    assert_true(block);
    assert_true(stages);
    assert_int_equal(rewrites, 4);
    cut_cand_gen_free(g);
    free(src);
    /* written and read again: still Triton, no block or smem */
    char *json = NULL;
    assert_int_equal(cut_kspec_to_json(&k, NULL, &json, &e), 0);
    assert_non_null(strstr(json, "\"language\":\t\"triton\""));
    assert_null(strstr(json, "\"block\""));
    cut_kspec k2;
    if (cut_kspec_parse(json, strlen(json), NULL, &k2, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(k2.lang, CUT_KS_TRITON);
    cut_kspec_free(&k2);
    free(json);
    /* the optimizer takes it (it_optimize_triton runs it end to end); without a runner it says so before anything
     * runs */
    cut_opt_opts o;
    cut_opt_opts_default(&o);
    cut_opt_summary sum;
    assert_int_equal(cut_optimize_kernel(&o, &k, NULL, 0, NULL, &sum, &e), -1);
    assert_non_null(strstr(e.msg, "no runner to measure tsoftmax"));
    cut_kspec_free(&k);
    triton_refused("\"grid\": [\"ROWS\"]", "\"grid\": [\"ROWS\"], \"block\": [\"128\"]",
                   "launch.block: a Triton kernel's block is 32 * num_warps");
    triton_refused("\"grid\": [\"ROWS\"]", "\"grid\": [\"ROWS\"], \"smem\": \"0\"", "launch.smem");
    triton_refused("@triton.jit\\n", "", "entry: no @triton.jit function 'softmax_kernel'");
}

/* The Triton suite's specs (kernels/triton/, issue 18) parse as Triton, resolve at both size sets, and their
 * materialised baselines read back their tunables. tests/test_triton_suite.py checks their kernels against numpy. */
static void test_triton_suite_specs(void **state)
{
    (void)state;
    static const char *const names[] = {"softmax_row", "layernorm", "matmul", "lora_expand", "gelu"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char file[64];
        snprintf(file, sizeof file, "triton/%s.json", names[i]);
        char *path = suite_path(file);
        cut_kspec k;
        cut_err e = {{0}};
        if (cut_kspec_load(path, &k, &e) != 0)
            fail_msg("%s", e.msg);
        assert_int_equal(k.lang, CUT_KS_TRITON);
        assert_true(k.has_check_sizes);
        cut_ks_launch l;
        assert_int_equal(cut_kspec_resolve(&k, NULL, &l, &e), 0);
        assert_int_equal(cut_kspec_resolve_at(&k, CUT_KS_CHECK_SIZES, NULL, &l, &e), 0);
        char *src = cut_kstate_materialise(&k, NULL);
        long long vals[CUT_KS_MAX_VARS];
        assert_int_equal(cut_kstate_tunables(&k, src, vals, &e), 0);
        for (int t = 0; t < k.ntunables; t++)
            assert_int_equal(vals[t], k.tunables[t].values[0]);
        free(src);
        cut_kspec_free(&k);
        free(path);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_payloads),
        cmocka_unit_test(test_float_scalar),
        cmocka_unit_test(test_types_refused),
        cmocka_unit_test(test_eval),
        cmocka_unit_test(test_suite_softmax),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_restrictions),
        cmocka_unit_test(test_check_sizes),
        cmocka_unit_test(test_triton_spec),
        cmocka_unit_test(test_triton_suite_specs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
