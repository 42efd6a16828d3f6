/* libFuzzer target: the optimizer's source rewrites (src/ops/kernel/rules.c) and the tunables header of a materialised
 * state (cut_kstate_tunables) on arbitrary text — what a user's kernel or an LLM's patched source can be.
 *
 * Invariants: every rule returns NULL or a new, NUL-terminated text that differs from its input; a rule applied to its
 * own output for the marker-guarded rewrites (atomics, padding, grouped raster) does not apply again to the sites it
 * rewrote; the tunables parser either fills every tunable with an allowed value or fails with a one-line sentence. */
#include "cutune/optimize.h"
#include "fuzz_common.h"

#include <stdint.h>
#include <string.h>

static void check_rule(char *(*rule)(const char *), const char *src)
{
    char *out = rule(src);
    if (!out)
        return;
    CHECK(strcmp(out, src) != 0);
    free(rule(out)); /* applying again must not crash either */
    free(out);
}

static char *atomics_warp(const char *s) { return cut_rule_avoid_atomics(s, 0); }
static char *atomics_block(const char *s) { return cut_rule_avoid_atomics(s, 1); }

static void check_tunables(const char *src)
{
    static const char spec[] =
        "{\"name\": \"k\", \"language\": \"cuda\", \"entry\": \"k\","
        "\"source\": \"extern \\\"C\\\" __global__ void k(float *y) { y[threadIdx.x] = BLOCK; }\","
        "\"sizes\": {\"N\": 64}, \"tunables\": {\"BLOCK\": [32, 64], \"VEC\": [1, 4]},"
        "\"launch\": {\"grid\": [\"cdiv(N, BLOCK)\"], \"block\": [\"BLOCK\"]},"
        "\"outputs\": [{\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [\"N\"]}], \"args\": [\"y\"]}";
    static cut_kspec k;
    static int ready;
    cut_err e = {{0}};
    if (!ready) {
        CHECK(cut_kspec_parse(spec, strlen(spec), NULL, &k, &e) == 0);
        ready = 1;
    }
    long long vals[CUT_KS_MAX_VARS] = {0};
    if (cut_kstate_tunables(&k, src, vals, &e) != 0) {
        CHECK(e.msg[0] && !strchr(e.msg, '\n'));
        return;
    }
    CHECK((vals[0] == 32 || vals[0] == 64) && (vals[1] == 1 || vals[1] == 4));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = 0;
    char *(*rules[])(const char *) = {cut_rule_cache_cg, cut_rule_math_fusion, cut_rule_pad_smem,
                                      cut_rule_grouped_raster, cut_rule_async_stage, atomics_warp, atomics_block};
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        check_rule(rules[i], s);
    check_tunables(s);
    free(s);
    return 0;
}
