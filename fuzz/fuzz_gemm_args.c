/* libFuzzer target: cut_gemm_parse_args (include/cutune/gemm.h) on arbitrary text split at spaces into words.
 *
 * Invariants:
 *   - failure returns -1 with a one-line sentence in the error buffer and writes nothing (shape, trials, option);
 *   - success: M, N and K are >= 1, cut_gemm_validate accepts the shape (every matrix below 2^31 elements), the
 *     FLOPs are finite and positive, trials is 0 or positive, option is -1 or non-negative, layout and dtype are
 *     left as the caller set them unless a `layout=` or `dtype=` word (issue 21) gives them, and then they are
 *     within their enums; the name starts with the layout's and the dtype's names; the canonical words
 *     "M=.. N=.. K=.." and the name's sizes parse back to the same shape. */
#include "cutune/gemm.h"
#include "fuzz_common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 64

static int gemm_eq(const cut_gemm *a, const cut_gemm *b)
{
    return a->m == b->m && a->n == b->n && a->k == b->k && a->layout == b->layout && a->dtype == b->dtype;
}

/* Splits s at spaces in place (empty words dropped). Returns the count (at most MAX_WORDS). */
static int split_words(char *s, const char *words[MAX_WORDS])
{
    int n = 0;
    char *p = s;
    while (*p && n < MAX_WORDS) {
        while (*p == ' ')
            *p++ = 0;
        if (!*p)
            break;
        words[n++] = p;
        while (*p && *p != ' ')
            p++;
    }
    return n;
}

/* 1 when one of the words starts with key (e.g. "layout="): the parser's named keys are exact. */
static int has_key(const char *const *words, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (!strncmp(words[i], key, strlen(key)))
            return 1;
    return 0;
}

static void check_reparse(const cut_gemm *g)
{
    char buf[128];
    const char *words[MAX_WORDS];
    snprintf(buf, sizeof buf, "M=%d N=%d K=%d", g->m, g->n, g->k);
    int n = split_words(buf, words);
    cut_gemm g2 = *g;
    g2.m = g2.n = g2.k = -1;
    cut_err e = {{0}};
    if (cut_gemm_parse_args(n, words, &g2, NULL, NULL, &e) != 0) {
        fprintf(stderr, "invariant failed: canonical words M=%d N=%d K=%d do not parse: %s\n", g->m, g->n, g->k,
                e.msg);
        abort();
    }
    CHECK(gemm_eq(&g2, g));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    CHECK(s != NULL);
    memcpy(s, data, size);
    s[size] = 0;
    const char *words[MAX_WORDS];
    int n = split_words(s, words);

    const cut_gemm sentinel = {-7, -7, -7, CUT_GEMM_NT, CUT_DT_BF16};
    cut_gemm g = sentinel;
    int trials = -7, option = -7;
    cut_err e = {{0}};
    int rc = cut_gemm_parse_args(n, words, &g, &trials, &option, &e);
    if (rc != 0) {
        CHECK(rc == -1);
        CHECK(e.msg[0] != 0);
        CHECK(strchr(e.msg, '\n') == NULL || memchr(data, '\n', size) != NULL);
        CHECK(gemm_eq(&g, &sentinel));
        CHECK(trials == -7 && option == -7);
        free(s);
        return 0;
    }
    CHECK(g.m > 0 && g.n > 0 && g.k > 0);
    CHECK(has_key(words, n, "layout=") ? g.layout >= CUT_GEMM_NN && g.layout <= CUT_GEMM_TT
                                       : g.layout == CUT_GEMM_NT);
    CHECK(has_key(words, n, "dtype=") ? g.dtype >= 0 && g.dtype < CUT_DT_COUNT : g.dtype == CUT_DT_BF16);
    CHECK(cut_gemm_validate(&g, &e) == 0);
    CHECK(trials >= 0 && option >= -1);
    const size_t lim = (size_t)1 << 31;
    CHECK(cut_gemm_a_elems(&g) < lim && cut_gemm_b_elems(&g) < lim && cut_gemm_c_elems(&g) < lim);
    double fl = cut_gemm_flops(&g);
    CHECK(isfinite(fl) && fl >= 2.0);
    char name[128];
    cut_gemm_name(&g, name, sizeof name);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "gemm_%s_%s_M_", cut_gemm_layout_name(g.layout), cut_dtype_name(g.dtype));
    CHECK(strlen(name) + 1 < sizeof name && strncmp(name, prefix, strlen(prefix)) == 0);
    check_reparse(&g);
    free(s);
    return 0;
}
