/* libFuzzer target: kernel specs (include/cutune/kspec.h) and their launch expressions.
 *
 * The input's first byte picks the mode. Expression mode: the rest is an expression (arithmetic, comparisons, logic)
 * evaluated with three variables; failure writes nothing and leaves a one-line sentence; success is deterministic (a
 * second evaluation agrees), and a comparison or a logical operator at the top gives 0 or 1.
 * Spec mode: the rest is a spec's JSON (inline sources only: no file is read); failure gives a one-line sentence;
 * success means the baseline resolves again with the same launch, every block has 1..1024 threads, every tensor
 * at least one element, the baseline satisfies the restrictions, and each tunable value set resolves or fails with a
 * sentence and is allowed or not (the same answer with or without a buffer for the reason, which is one line and
 * never overruns even a tiny buffer), never a crash; with check_sizes, the baseline resolves and is allowed there
 * too, and each tunable value set resolves there or fails with a sentence. */
#include "cutune/kspec.h"
#include "fuzz_common.h"

#include <stdint.h>
#include <string.h>

static void one_line(const cut_err *e)
{
    CHECK(e->msg[0] != 0);
    CHECK(strchr(e->msg, '\n') == NULL);
}

static void fuzz_expr(const char *s)
{
    const cut_ks_var vars[] = {{"N", 1000}, {"BLOCK", 256}, {"BIG", 4611686018427387904LL}};
    long long x = 77, y = 78;
    cut_err e = {{0}};
    if (cut_ks_eval(s, vars, 3, &x, &e) != 0) {
        CHECK(x == 77);
        one_line(&e);
        return;
    }
    CHECK(cut_ks_eval(s, vars, 3, &y, &e) == 0 && x == y);
    /* "(s) != 0" is a comparison: 0 or 1, and agrees with x */
    char *wrapped = malloc(strlen(s) + 16);
    sprintf(wrapped, "(%s) != 0", s);
    if (cut_ks_eval(wrapped, vars, 3, &y, &e) == 0)
        CHECK(y == (x != 0));
    free(wrapped);
}

/* cut_kspec_allows for vals: 0 or 1, the same answer without a buffer, a one-line reason that fits any buffer. */
static int allows(const cut_kspec *k, const long long *vals)
{
    char why[256], tiny[6];
    const int ok = cut_kspec_allows(k, vals, why, sizeof why);
    CHECK(ok == 0 || ok == 1);
    CHECK(cut_kspec_allows(k, vals, NULL, 0) == ok);
    memset(tiny, 'x', sizeof tiny);
    CHECK(cut_kspec_allows(k, vals, tiny, sizeof tiny) == ok && memchr(tiny, 0, sizeof tiny) != NULL);
    if (ok)
        CHECK(why[0] == 0);
    else
        CHECK(why[0] != 0 && strchr(why, '\n') == NULL && strstr(why, "restrictions[") == why);
    return ok;
}

static void fuzz_spec(const char *s, size_t len)
{
    if (strstr(s, "source_path"))
        return; /* no file system in the fuzzer */
    cut_kspec *k = calloc(1, sizeof *k);
    cut_err e = {{0}};
    if (cut_kspec_parse(s, len, NULL, k, &e) != 0) {
        one_line(&e);
        cut_kspec_free(k);
        free(k);
        return;
    }
    cut_ks_launch a, b;
    CHECK(cut_kspec_resolve(k, NULL, &a, &e) == 0 && cut_kspec_resolve(k, NULL, &b, &e) == 0);
    CHECK(memcmp(&a, &b, sizeof a) == 0);
    CHECK(a.block[0] * a.block[1] * a.block[2] >= 1 && a.block[0] * a.block[1] * a.block[2] <= 1024);
    for (int i = 0; i < k->noutputs; i++)
        CHECK(a.out_elems[i] >= 1);
    CHECK(k->nrestrictions >= 0 && k->nrestrictions <= CUT_KS_MAX_RESTRICTIONS);
    CHECK(allows(k, NULL) == 1); /* a spec whose baseline breaks a restriction is refused */
    /* check_sizes: the baseline resolves and is allowed there too (else the spec is refused) */
    CHECK(cut_kspec_resolve_at(k, CUT_KS_CHECK_SIZES, NULL, &a, &e) == (k->has_check_sizes ? 0 : -1));
    CHECK(cut_kspec_allows_at(k, CUT_KS_CHECK_SIZES, NULL, NULL, 0) == k->has_check_sizes);
    long long vals[CUT_KS_MAX_VARS];
    for (int v = 0; v < CUT_KS_MAX_VALUES; v++) {
        for (int t = 0; t < k->ntunables; t++)
            vals[t] = k->tunables[t].values[v % k->tunables[t].nvalues];
        if (cut_kspec_resolve(k, vals, &a, &e) != 0)
            one_line(&e);
        allows(k, vals);
        if (k->has_check_sizes && cut_kspec_resolve_at(k, CUT_KS_CHECK_SIZES, vals, &a, &e) != 0)
            one_line(&e);
    }
    cut_kspec_free(k);
    free(k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 1 << 16)
        return 0;
    char *s = malloc(size);
    memcpy(s, data + 1, size - 1);
    s[size - 1] = 0;
    if (data[0] & 1)
        fuzz_spec(s, strlen(s));
    else
        fuzz_expr(s);
    free(s);
    return 0;
}
