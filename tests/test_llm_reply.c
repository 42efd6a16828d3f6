/* cutune LLM replies (cutune/llm.h): API bodies of Chat Completions and the Responses API -> text -> the move and
 * the diff (or a whole source); every reply that cannot become a candidate is a reason, never a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/llm.h"
#include "cutune/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char k_diff[] = "--- a/kernel.cu\n+++ b/kernel.cu\n@@ -1,3 +1,3 @@\n // cutune: tunables\n-#define BLOCK 128\n"
                             "+#define BLOCK 256\n // cutune: end of tunables\n";

static void test_bodies(void **state)
{
    (void)state;
    char *text = NULL;
    long pt, ct;
    cut_err e = {{0}};
    const char *chat = "{\"id\":\"x\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"MOVE: "
                       "change_block_sizes\"}}],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":30}}";
    assert_int_equal(cut_llm_body_text(chat, strlen(chat), &text, &pt, &ct, &e), 0);
    assert_string_equal(text, "MOVE: change_block_sizes");
    assert_int_equal(pt, 120);
    assert_int_equal(ct, 30);
    free(text);
    const char *resp = "{\"output\":[{\"type\":\"reasoning\"},{\"type\":\"message\",\"content\":[{\"type\":\"output_text\","
                       "\"text\":\"part one\"},{\"type\":\"refusal\",\"text\":\"no\"},{\"type\":\"output_text\",\"text\":"
                       "\"part two\"}]}],\"usage\":{\"input_tokens\":7,\"output_tokens\":9}}";
    assert_int_equal(cut_llm_body_text(resp, strlen(resp), &text, &pt, &ct, &e), 0);
    assert_string_equal(text, "part one\npart two");
    assert_int_equal(pt, 7);
    assert_int_equal(ct, 9);
    free(text);
    const char *ot = "{\"output_text\":\"short form\"}";
    assert_int_equal(cut_llm_body_text(ot, strlen(ot), &text, &pt, &ct, &e), 0);
    assert_string_equal(text, "short form");
    assert_int_equal(pt, -1);
    free(text);
    /* token counts no server gives (huge, negative) read as absent, the text still comes back (a fuzz find) */
    const char *huge = "{\"output_text\":\"t\",\"usage\":{\"input_tokens\":8.9e120,\"output_tokens\":-3}}";
    assert_int_equal(cut_llm_body_text(huge, strlen(huge), &text, &pt, &ct, &e), 0);
    assert_string_equal(text, "t");
    assert_int_equal(pt, -1);
    assert_int_equal(ct, -1);
    free(text);
    /* refusals */
    const char *bad[] = {"", "not json", "{\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\"}}",
                         "{\"choices\":[]}", "{\"choices\":[{\"message\":{\"content\":null}}]}", "[1,2]"};
    const char *why[] = {"not JSON", "not JSON", "the API answered with an error: Rate limit reached", "no text",
                         "no text", "no text"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(cut_llm_body_text(bad[i], strlen(bad[i]), &text, &pt, &ct, &e), -1);
        assert_null(text);
        if (!strstr(e.msg, why[i]))
            fail_msg("'%s': '%s' does not say '%s'", bad[i], e.msg, why[i]);
    }
    assert_int_equal(cut_llm_body_text("{}", CUT_LLM_MAX_REPLY + 1, &text, &pt, &ct, &e), -1);
    assert_non_null(strstr(e.msg, "over the"));
}

static void expect_pick(const char *text, cut_move move, const char *diff, const char *source_has)
{
    cut_llm_pick p;
    cut_err e = {{0}};
    if (cut_llm_reply_parse(text, &p, &e) != 0)
        fail_msg("refused: %s\n--- reply:\n%s", e.msg, text);
    assert_int_equal(p.move, move);
    if (diff) {
        assert_non_null(p.diff);
        assert_string_equal(p.diff, diff);
        assert_null(p.source);
    } else {
        assert_null(p.diff);
        assert_non_null(p.source);
        assert_non_null(strstr(p.source, source_has));
        assert_null(strstr(p.source, "```"));
    }
    cut_llm_pick_free(&p);
}

static void test_picks(void **state)
{
    (void)state;
    char text[4096];
    /* the seed's form: a MOVE line and a fenced diff, prose around */
    snprintf(text, sizeof text, "Looking at the profile, occupancy is low.\n\n**MOVE:** `change_block_sizes`\n\n"
                                "```diff\n%s```\n\nThis doubles the block.\n", k_diff);
    expect_pick(text, CUT_MV_BLOCK_SIZES, k_diff, NULL);
    /* a bare diff, the move only mentioned */
    snprintf(text, sizeof text, "I suggest vectorize_global_loads here.\n%sThat is all.", k_diff);
    expect_pick(text, CUT_MV_VECTORIZE, k_diff, NULL);
    /* two diffs: the first; a source block before it does not win over a diff */
    char second[1024];
    snprintf(second, sizeof second, "%s", k_diff);
    second[strlen(second) - 1] = '\0';
    snprintf(text, sizeof text, "move: cache_policy_cg\n```cuda\n__global__ void k() {}\n```\n```diff\n%s```\n"
                                "```diff\n--- a/kernel.cu\n+++ b/kernel.cu\n@@ -9 +9 @@\n-x\n+y\n```\n", k_diff);
    expect_pick(text, CUT_MV_CACHE_CG, k_diff, NULL);
    /* no diff: a whole source, as the seed's fallback */
    expect_pick("MOVE: softmax_math_fusion\nHere is the new kernel:\n```cuda\n#define BLOCK 256\n"
                "extern \"C\" __global__ void k(float *y) { y[0] = __expf(1.f); }\n```\n",
                CUT_MV_MATH_FUSION, NULL, "__expf");
    /* Windows line ends and a MOVE line in a heading */
    expect_pick("### Move: avoid_atomics_reduce\r\n```diff\n--- a/kernel.cu\n+++ b/kernel.cu\n@@ -1 +1 @@\n-a\n+b\n```\n",
                CUT_MV_AVOID_ATOMICS, "--- a/kernel.cu\n+++ b/kernel.cu\n@@ -1 +1 @@\n-a\n+b\n", NULL);
}

/* The gain a reply with this head (a MOVE line, maybe a GAIN) states, the diff after it. */
static double gain_of(const char *head)
{
    char text[2048];
    snprintf(text, sizeof text, "%s\n```diff\n%s```\n", head, k_diff);
    cut_llm_pick p;
    cut_err e = {{0}};
    if (cut_llm_reply_parse(text, &p, &e) != 0)
        fail_msg("refused: %s\n--- reply:\n%s", e.msg, text);
    assert_int_equal(p.move, CUT_MV_BLOCK_SIZES);
    const double g = p.gain;
    cut_llm_pick_free(&p);
    return g;
}

static void test_gains(void **state)
{
    (void)state;
    const double d = CUT_LLM_DEFAULT_GAIN;
    struct {
        const char *head;
        double gain;
    } cases[] = {
        {"MOVE: change_block_sizes", d},                     /* none stated */
        {"MOVE: change_block_sizes GAIN: 0.15", 0.15},       /* the prompt's form */
        {"**MOVE:** `change_block_sizes` **GAIN:** 0.3", 0.3}, /* Markdown */
        {"MOVE: change_block_sizes (gain: 15%)", 0.15},      /* a percentage */
        {"MOVE: change_block_sizes\nGAIN: 0.2", 0.2},        /* on a line of its own */
        {"GAIN: 0.25\nMOVE: change_block_sizes", 0.25},      /* before the move */
        {"MOVE: change_block_sizes GAIN: 0.4\nGAIN: 0.2", 0.4}, /* the MOVE line's first */
        {"MOVE: change_block_sizes GAIN: 7", 1.0},           /* clamped */
        {"MOVE: change_block_sizes GAIN: 0", 0.01},
        {"MOVE: change_block_sizes GAIN: 0.001", 0.01},
        {"MOVE: change_block_sizes GAIN: -0.3", d},          /* not a gain */
        {"MOVE: change_block_sizes GAIN: nan", d},
        {"MOVE: change_block_sizes GAIN: inf", d},
        {"MOVE: change_block_sizes GAIN: 1e999", d},
        {"MOVE: change_block_sizes GAIN: a lot", d},
        {"MOVE: change_block_sizes GAIN:\n0.5", d},          /* no number on its line */
        {"MOVE: change_block_sizes\nThe gain: 0.5 at best.", d}, /* prose, not a GAIN line */
        {"MOVE: change_block_sizes again: 0.5", d},          /* not the word gain */
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(cases); i++) {
        const double g = gain_of(cases[i].head);
        if (g != cases[i].gain)
            fail_msg("'%s': gain %g, expected %g", cases[i].head, g, cases[i].gain);
    }
    /* a diff that adds a line "gain: 0.9" (a label in the code) states nothing */
    cut_llm_pick p;
    cut_err e = {{0}};
    assert_int_equal(cut_llm_reply_parse("MOVE: change_block_sizes\n```diff\n--- a/kernel.cu\n+++ b/kernel.cu\n"
                                         "@@ -1 +1,2 @@\n a\n+gain: 0.9\n```\n",
                                         &p, &e),
                     0);
    assert_true(p.gain == d);
    cut_llm_pick_free(&p);
}

static void expect_refusal(const char *text, const char *needle)
{
    cut_llm_pick p;
    cut_err e = {{0}};
    assert_int_equal(cut_llm_reply_parse(text, &p, &e), -1);
    if (!strstr(e.msg, needle))
        fail_msg("'%s' does not say '%s'", e.msg, needle);
    assert_null(p.diff);
    assert_null(p.source);
}

/* A Triton state's reply: a whole module in a ```python block is its source (the CUDA parser refuses it: no
 * __global__); a diff against kernel.py is read as any diff; a python block without @triton.jit is no source. */
static void test_triton_picks(void **state)
{
    (void)state;
    const char *module = "MOVE: cache_policy_cg GAIN: 0.2\nThe whole module:\n```python\nimport triton\n"
                         "import triton.language as tl\n\n@triton.jit\ndef k(x_ptr):\n"
                         "    x = tl.load(x_ptr, cache_modifier=\".cg\")\n```\nDone.\n";
    cut_llm_pick p;
    cut_err e = {{0}};
    assert_int_equal(cut_llm_reply_parse_triton(module, &p, &e), 0);
    assert_int_equal(p.move, CUT_MV_CACHE_CG);
    assert_null(p.diff);
    assert_non_null(p.source);
    assert_string_equal(p.source, "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr):\n"
                                  "    x = tl.load(x_ptr, cache_modifier=\".cg\")\n");
    assert_true(p.gain > 0.19 && p.gain < 0.21);
    cut_llm_pick_free(&p);
    assert_int_equal(cut_llm_reply_parse(module, &p, &e), -1);
    assert_non_null(strstr(e.msg, "a fenced CUDA source with a __global__ function"));
    const char *diff = "--- a/kernel.py\n+++ b/kernel.py\n@@ -1 +1 @@\n-BLOCK = 128\n+BLOCK = 256\n";
    char text[512];
    snprintf(text, sizeof text, "MOVE: change_block_sizes\n```diff\n%s```\n", diff);
    assert_int_equal(cut_llm_reply_parse_triton(text, &p, &e), 0);
    assert_string_equal(p.diff, diff);
    cut_llm_pick_free(&p);
    assert_int_equal(cut_llm_reply_parse_triton("MOVE: change_block_sizes\n```python\nprint(1)\n```\n", &p, &e), -1);
    assert_non_null(strstr(e.msg, "neither a unified diff nor a fenced Python module with a @triton.jit function"));
}

static void test_refusals(void **state)
{
    (void)state;
    expect_refusal(NULL, "no reply");
    expect_refusal("", "empty");
    expect_refusal(" \n\t\n", "empty");
    expect_refusal("I would restructure the loop.", "none of the nine canonical moves");
    expect_refusal("MOVE: unroll_everything\n```diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n```\n",
                   "'unroll_everything', which is none of the nine");
    expect_refusal("MOVE: change_block_sizes\nJust make the block bigger.", "neither a unified diff nor");
    expect_refusal("MOVE: change_block_sizes\n```diff\n--- a/kernel.cu\n+++ b/kernel.cu\n@@ -1,3 +1,3 @@\n-#def",
                   "truncated");
    expect_refusal("MOVE: change_block_sizes\n```python\nprint(1)\n```\n", "neither a unified diff nor");
    char *huge = malloc(CUT_LLM_MAX_REPLY + 2);
    memset(huge, 'a', CUT_LLM_MAX_REPLY + 1);
    huge[CUT_LLM_MAX_REPLY + 1] = '\0';
    expect_refusal(huge, "over the");
    free(huge);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bodies),
        cmocka_unit_test(test_picks),
        cmocka_unit_test(test_gains),
        cmocka_unit_test(test_triton_picks),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
