/* The rule generator's Triton rewrites (src/ops/kernel/rules_triton.c): each one's exact output on small modules,
 * NULL when nothing matches, never inside comments, strings, the tunables header or a function that is not
 * @triton.jit, never twice; and the generator's proposals for a Triton suite spec (tunables and rewrites) all apply
 * with patch. tests/test_triton_rules_run.c runs the rewritten suite under Triton's interpreter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/kstate.h"
#include "cutune/util.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEAD "import triton\nimport triton.language as tl\n\n"
/* a header with lines that would match if it were read as code */
#define TUNABLES CUT_KST_PY_BEGIN "\nBLOCK = 128\nX = tl.load(p)\n" CUT_KST_PY_END "\n"
#define JIT "@triton.jit\n"

/* rule(src) is want (NULL: nothing to rewrite), and the rule finds nothing in its own output. */
static void expect(char *(*rule)(const char *), const char *src, const char *want)
{
    char *got = rule(src);
    if (!want) {
        if (got)
            fail_msg("rewrote what it should not:\n%s", got);
        return;
    }
    if (!got)
        fail_msg("found nothing in:\n%s", src);
    if (strcmp(got, want) != 0)
        fail_msg("got:\n%s\nwant:\n%s", got, want);
    char *again = rule(got);
    if (again)
        fail_msg("applies twice:\n%s", again);
    free(got);
}

#define LOADS                                                                                                         \
    "# tl.load(c) in a comment\n"                                                                                     \
    "def host(p):\n    return tl.load(p)\n\n" JIT "def k(p, q, r, BLOCK: tl.constexpr):\n"                              \
    "    s = \"tl.load(q)\"\n    '''tl.load(r)'''\n"

static void test_cache(void **state)
{
    (void)state;
    const char *src = HEAD TUNABLES LOADS "    a = tl.load(p + 1)\n    b = tl.load(q, mask=a > 0, other=0.0,)\n"
                                          "    c = tl.load(r, cache_modifier=\".ca\") + tl.load(r, eviction_policy=\"evict_last\")\n"
                                          "    d = tl.load(p + tl.load(q))\n";
    expect(cut_rule_triton_cache_cg, src,
           HEAD TUNABLES LOADS "    a = tl.load(p + 1, cache_modifier=\".cg\")\n"
                               "    b = tl.load(q, mask=a > 0, other=0.0, cache_modifier=\".cg\")\n"
                               "    c = tl.load(r, cache_modifier=\".ca\") + tl.load(r, eviction_policy=\"evict_last\")\n"
                               "    d = tl.load(p + tl.load(q, cache_modifier=\".cg\"), cache_modifier=\".cg\")\n");
    expect(cut_rule_triton_evict_first, HEAD JIT "def k(p):\n    a = tl.load(p)\n",
           HEAD JIT "def k(p):\n    a = tl.load(p, eviction_policy=\"evict_first\")\n");
    expect(cut_rule_triton_cache_cg, HEAD TUNABLES LOADS "    pass\n", NULL);
    expect(cut_rule_triton_evict_first, HEAD "def k(p):\n    a = tl.load(p)\n", NULL);
}

static void test_hints(void **state)
{
    (void)state;
    expect(cut_rule_triton_hints,
           HEAD TUNABLES JIT "def k(p, n, B: tl.constexpr):\n"
                             "    offs = tl.program_id(0) * B + tl.arange(0, B)  # columns\n"
                             "    o2 = (tl.program_id(1) + 1) * B + tl.arange(0, B)\n"
                             "    o3 = tl.arange(0, 64)\n"
                             "    o4 = tl.program_id(0) + tl.arange(0, B)\n"
                             "    o5 = n + tl.program_id(0) * B + tl.arange(0, B)\n"
                             "    o6 = tl.program_id(0) * B + tl.arange(0, 2 * B)\n"
                             "    o7 = tl.program_id(0) * B + tl.arange(1, B + 1)\n"
                             "    tl.store(p + offs, 0.0, mask=offs < n)",
           HEAD TUNABLES JIT "def k(p, n, B: tl.constexpr):\n"
                             "    offs = tl.program_id(0) * B + tl.arange(0, B)  # columns\n"
                             "    offs = tl.max_contiguous(tl.multiple_of(offs, B), B)\n"
                             "    o2 = (tl.program_id(1) + 1) * B + tl.arange(0, B)\n"
                             "    o2 = tl.max_contiguous(tl.multiple_of(o2, B), B)\n"
                             "    o3 = tl.arange(0, 64)\n"
                             "    o3 = tl.max_contiguous(tl.multiple_of(o3, 64), 64)\n"
                             "    o4 = tl.program_id(0) + tl.arange(0, B)\n"
                             "    o5 = n + tl.program_id(0) * B + tl.arange(0, B)\n"
                             "    o6 = tl.program_id(0) * B + tl.arange(0, 2 * B)\n"
                             "    o7 = tl.program_id(0) * B + tl.arange(1, B + 1)\n"
                             "    tl.store(p + offs, 0.0, mask=offs < n)");
    /* the last line of a module without a newline; not in a plain function */
    expect(cut_rule_triton_hints, HEAD JIT "def k(B: tl.constexpr):\n    o = tl.arange(0, B)",
           HEAD JIT "def k(B: tl.constexpr):\n    o = tl.arange(0, B)\n    o = tl.max_contiguous(tl.multiple_of(o, B), B)");
    expect(cut_rule_triton_hints, HEAD "def k(B):\n    o = tl.arange(0, B)\n", NULL);
}

static char *tf32x3(const char *src) { return cut_rule_triton_dot_precision(src, "tf32x3"); }
static char *tf32(const char *src) { return cut_rule_triton_dot_precision(src, "tf32"); }

static void test_dot(void **state)
{
    (void)state;
    const char *src = HEAD JIT "def k(a, b, acc):\n"
                               "    acc += tl.dot(a, b)\n"
                               "    acc = tl.dot(a, b, acc, input_precision='ieee')\n"
                               "    acc += tl.dot(a, b, allow_tf32=False, out_dtype=tl.float32)\n"
                               "    acc += tl.dot(a, b, input_precision=\"tf32\") + tl.dot(a, b, allow_tf32=True)\n";
    expect(tf32x3, src,
           HEAD JIT "def k(a, b, acc):\n"
                    "    acc += tl.dot(a, b, input_precision=\"tf32x3\")\n"
                    "    acc = tl.dot(a, b, acc, input_precision=\"tf32x3\")\n"
                    "    acc += tl.dot(a, b, input_precision=\"tf32x3\", out_dtype=tl.float32)\n"
                    "    acc += tl.dot(a, b, input_precision=\"tf32\") + tl.dot(a, b, allow_tf32=True)\n");
    expect(tf32, HEAD JIT "def k(a, b):\n    return tl.dot(a, b, input_precision=\"ieee\")\n",
           HEAD JIT "def k(a, b):\n    return tl.dot(a, b, input_precision=\"tf32\")\n");
    expect(tf32, HEAD JIT "def k(a, b):\n    return tl.dot(a, b, input_precision=\"tf32x3\") # tl.dot(a, b)\n", NULL);
}

static void test_fast_math(void **state)
{
    (void)state;
    expect(cut_rule_triton_fast_math,
           HEAD JIT "def k(x, v, y, e):\n"
                    "    a = tl.exp(x) + tl.exp(x - 1.0) + tl.math.exp(2.0 * x)\n"
                    "    b = 1.0 / tl.sqrt(v) + 1 / tl.sqrt(v + e) + y * 1. / tl.sqrt(v)\n"
                    "    c = y / 1.0 / tl.sqrt(v) + tl.sqrt(v) + 2.0 / tl.sqrt(v) + tl.exp(x, 1)\n",
           HEAD JIT "def k(x, v, y, e):\n"
                    "    a = tl.exp2(x * 1.4426950408889634) + tl.exp2((x - 1.0) * 1.4426950408889634) + "
                    "tl.math.exp2(2.0 * x * 1.4426950408889634)\n"
                    "    b = tl.rsqrt(v) + tl.rsqrt(v + e) + y * tl.rsqrt(v)\n"
                    "    c = y / 1.0 / tl.sqrt(v) + tl.sqrt(v) + 2.0 / tl.sqrt(v) + tl.exp(x, 1)\n");
    expect(cut_rule_triton_fast_math, HEAD JIT "def k(x):\n    return x / 2.0  # tl.exp(x)\n", NULL);
}

#define ROW                                                                                                           \
    HEAD JIT "def k(x_ptr, s_ptr, n, BLOCK: tl.constexpr):\n"                                                        \
             "    row = tl.program_id(0)\n"                                                                           \
             "    offs = tl.arange(0, BLOCK)\n"                                                                       \
             "    m = offs < n\n"                                                                                     \
             "    x = tl.load(x_ptr + row * n + offs, mask=m)\n"                                                      \
             "    t = tl.sum(x, axis=0) / n\n"

static void test_atomics(void **state)
{
    (void)state;
    expect(cut_rule_triton_avoid_atomics,
           ROW "    tl.atomic_add(s_ptr + row + tl.zeros_like(offs), x, mask=m)\n"
               "    tl.atomic_add(s_ptr + offs * 0 + 1, x * 2, m, sem=\"relaxed\")\n"
               "    tl.atomic_add(s_ptr + 0 * offs, x)\n"
               "    tl.atomic_add(s_ptr + row, x - t)\n",
           ROW "    tl.atomic_add(s_ptr + row, tl.sum(tl.where(m, x, 0), axis=None))\n"
               "    tl.atomic_add(s_ptr + 1, tl.sum(tl.where(m, x * 2, 0), axis=None), sem=\"relaxed\")\n"
               "    tl.atomic_add(s_ptr, tl.sum(x, axis=None))\n"
               "    tl.atomic_add(s_ptr + row, tl.sum(x - t, axis=None))\n");
    /* a scalar value (t is a reduction), a block of addresses, a result that is used: left alone */
    expect(cut_rule_triton_avoid_atomics,
           ROW "    tl.atomic_add(s_ptr + row, t)\n    tl.atomic_add(s_ptr + offs, x)\n"
               "    old = tl.atomic_add(s_ptr + row + tl.zeros_like(offs), x)\n"
               "    tl.atomic_add(s_ptr + row - tl.zeros_like(offs), x)\n",
           NULL);
}

static void test_grouped(void **state)
{
    (void)state;
    const char *prologue = "    # cutune: grouped raster over the same grid, groups of 8 rows of programs (L2 reuse)\n"
                           "    _cut_npm = tl.num_programs(0)\n"
                           "    _cut_npn = tl.num_programs(1)\n"
                           "    _cut_pid = tl.program_id(1) * _cut_npm + tl.program_id(0)\n"
                           "    _cut_group = 8 * _cut_npn\n"
                           "    _cut_first = (_cut_pid // _cut_group) * 8\n"
                           "    _cut_rows = tl.minimum(_cut_npm - _cut_first, 8)\n"
                           "    _cut_pid_m = _cut_first + (_cut_pid % _cut_group) % _cut_rows\n"
                           "    _cut_pid_n = (_cut_pid % _cut_group) // _cut_rows\n";
    char want[2048];
    snprintf(want, sizeof want,
             HEAD TUNABLES "@triton.autotune(configs=[], key=[])\n" JIT "def k(c_ptr, BM: tl.constexpr):\n"
                           "    # the tiles\n%s"
                           "    pid_m = _cut_pid_m\n"
                           "    rn = _cut_pid_n * BM + tl.arange(0, BM)  # tl.program_id(1)\n",
             prologue);
    expect(cut_rule_triton_grouped,
           HEAD TUNABLES "@triton.autotune(configs=[], key=[])\n" JIT "def k(c_ptr, BM: tl.constexpr):\n"
                         "    # the tiles\n"
                         "    pid_m = tl.program_id(0)\n"
                         "    rn = tl.program_id(axis=1) * BM + tl.arange(0, BM)  # tl.program_id(1)\n",
           want);
    expect(cut_rule_triton_grouped, HEAD JIT "def k(c_ptr):\n    row = tl.program_id(0)\n    col = row + 1\n", NULL);
    expect(cut_rule_triton_grouped, HEAD "def k(c_ptr):\n    a = tl.program_id(0) + tl.program_id(1)\n", NULL);
}

/* The generator on the matmul suite spec: the tunable moves and the rewrites, every diff applying with patch. */
static void test_generator(void **state)
{
    (void)state;
    const char *fx = getenv("CUTUNE_FIXTURES");
    assert_non_null(fx);
    char path[1024];
    snprintf(path, sizeof path, "%s/../../kernels/triton/matmul.json", fx);
    cut_kspec k;
    cut_err e = {{0}};
    if (cut_kspec_load(path, &k, &e) != 0)
        fail_msg("%s", e.msg);
    char *src = cut_kstate_materialise(&k, NULL);
    char *dir = tu_tmpdir("rules_triton");
    cut_cand_gen *g = cut_rules_gen_new();
    cut_proposal p[64];
    const int n = cut_cand_gen_propose(g, &k, src, NULL, dir, p, 64, &e);
    if (n < 1)
        fail_msg("%d proposals: %s", n, e.msg);
    int moves[CUT_MV_COUNT] = {0};
    for (int i = 0; i < n; i++) {
        char *out = NULL;
        if (cut_patch_apply(src, p[i].diff, dir, &out, &e) != 0)
            fail_msg("%s: %s", p[i].label, e.msg);
        long long vals[CUT_KS_MAX_VARS];
        if (cut_kstate_tunables(&k, out, vals, &e) != 0)
            fail_msg("%s: %s", p[i].label, e.msg);
        moves[p[i].move]++;
        printf("  %-26s %.2f  %s\n", cut_move_name(p[i].move), p[i].pred_gain, p[i].label);
        free(out);
        cut_proposal_free(&p[i]);
    }
    assert_int_equal(moves[CUT_MV_MMA], 2);          /* tf32x3, tf32 */
    assert_int_equal(moves[CUT_MV_CACHE_CG], 2);     /* .cg, evict_first */
    assert_int_equal(moves[CUT_MV_VECTORIZE], 1);    /* rm, rn, rk hinted */
    assert_int_equal(moves[CUT_MV_GROUPED], 1);      /* program_id(0) and (1) */
    assert_int_equal(moves[CUT_MV_AVOID_ATOMICS], 0);
    assert_int_equal(moves[CUT_MV_MATH_FUSION], 0);
    assert_true(moves[CUT_MV_BLOCK_SIZES] >= 3 && moves[CUT_MV_ASYNC_PIPELINE] == 3); /* tunables: num_stages 1 -> 2, 3, 4 */
    cut_cand_gen_free(g);
    free(dir);
    free(src);
    cut_kspec_free(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache),   cmocka_unit_test(test_hints),   cmocka_unit_test(test_dot),
        cmocka_unit_test(test_fast_math), cmocka_unit_test(test_atomics), cmocka_unit_test(test_grouped),
        cmocka_unit_test(test_generator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
