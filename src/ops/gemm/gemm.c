/* cutune — GEMM workloads (seed 004): dtype and layout names, validation, FLOPs, sizes, names and seed 004's
 * KEY=VALUE argument form. The CPU reference lives in gemm_ref.c. */
#include "cutune/gemm.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Matrices must have fewer than 2^31 elements so that every element index fits a signed 32-bit int. */
#define CUT_GEMM_MAX_ELEMS ((int64_t)INT32_MAX)

static const char *const layout_names[4] = {"nn", "nt", "tn", "tt"};

/* Case-insensitive equality of two ASCII strings ("NT" is accepted for "nt"). */
static int name_eq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
        if (x != *b)
            return 0;
    }
    return *a == *b;
}

const char *cut_gemm_layout_name(cut_gemm_layout l)
{
    return (unsigned)l < CUT_ARRAY_LEN(layout_names) ? layout_names[l] : "unknown";
}

int cut_gemm_layout_parse(const char *s, cut_gemm_layout *l, cut_err *e)
{
    for (int i = 0; i < (int)CUT_ARRAY_LEN(layout_names); i++)
        if (name_eq(s, layout_names[i])) {
            *l = (cut_gemm_layout)i;
            return 0;
        }
    return cut_err_set(e, "unknown GEMM layout '%s': use nn (B is KxN), nt (B is NxK), tn or tt (A stored KxM)", s);
}

int cut_gemm_a_trans(const cut_gemm *g) { return g->layout == CUT_GEMM_TN || g->layout == CUT_GEMM_TT; }

int cut_gemm_b_trans(const cut_gemm *g) { return g->layout == CUT_GEMM_NT || g->layout == CUT_GEMM_TT; }

int cut_gemm_batch(const cut_gemm *g) { return g->batch > 1 ? g->batch : 1; }

double cut_gemm_alpha(const cut_gemm *g) { return g->scaled ? g->alpha : 1.0; }

double cut_gemm_beta(const cut_gemm *g) { return g->scaled ? g->beta : 0.0; }

int cut_gemm_has_extras(const cut_gemm *g)
{
    return cut_gemm_batch(g) > 1 || cut_gemm_alpha(g) != 1.0 || cut_gemm_beta(g) != 0.0;
}

void cut_gemm_set_extras(cut_gemm *g, int batch, double alpha, double beta)
{
    g->batch = batch > 1 ? batch : 0;
    g->scaled = alpha != 1.0 || beta != 0.0;
    g->alpha = g->scaled ? alpha : 0.0;
    g->beta = g->scaled ? beta : 0.0;
}

size_t cut_gemm_stride(const cut_gemm *g, char which)
{
    const size_t m = (size_t)g->m, n = (size_t)g->n, k = (size_t)g->k;
    return which == 'A' ? m * k : which == 'B' ? k * n : m * n;
}

int cut_gemm_validate(const cut_gemm *g, cut_err *e)
{
    const char *names[3] = {"M", "N", "K"};
    const int v[3] = {g->m, g->n, g->k};
    for (int i = 0; i < 3; i++)
        if (v[i] <= 0)
            return cut_err_set(e, "gemm field %s is %d: every size must be at least 1", names[i], v[i]);
    if ((unsigned)g->layout >= CUT_ARRAY_LEN(layout_names))
        return cut_err_set(e, "gemm layout %d is unknown: use nn, nt, tn or tt", (int)g->layout);
    if (g->batch < 0)
        return cut_err_set(e, "gemm batch is %d: it must be at least 1", g->batch);
    if (!isfinite(cut_gemm_alpha(g)) || !isfinite(cut_gemm_beta(g)))
        return cut_err_set(e, "gemm alpha %g or beta %g is not a finite number", cut_gemm_alpha(g), cut_gemm_beta(g));
    if ((unsigned)g->dtype >= CUT_DT_COUNT)
        return cut_err_set(e, "gemm dtype %d is unknown: use fp32, tf32, fp16 or bf16", (int)g->dtype);
    /* Three factors below 2^31 can pass 2^63, so the product is formed in double (exact to 2^53, and far above
     * the limit before it rounds). */
    const struct {
        const char *what;
        double n;
    } t[3] = {
        {cut_gemm_batch(g) > 1 ? "A (batch*M*K)" : "A (M*K)", (double)cut_gemm_batch(g) * g->m * g->k},
        {cut_gemm_batch(g) > 1 ? "B (batch*K*N)" : "B (K*N)", (double)cut_gemm_batch(g) * g->k * g->n},
        {cut_gemm_batch(g) > 1 ? "C (batch*M*N)" : "C (M*N)", (double)cut_gemm_batch(g) * g->m * g->n},
    };
    for (int i = 0; i < 3; i++)
        if (t[i].n > (double)CUT_GEMM_MAX_ELEMS)
            return cut_err_set(e, "gemm matrix %s has %.0f elements (M %d, N %d, K %d, batch %d): cutune indexes "
                                  "matrices with 32-bit ints, so each operand must have fewer than 2^31",
                               t[i].what, t[i].n, g->m, g->n, g->k, cut_gemm_batch(g));
    return 0;
}

double cut_gemm_flops(const cut_gemm *g)
{
    return 2.0 * g->m * (double)g->n * g->k * cut_gemm_batch(g);
}

/* C is read too when beta != 0. */
double cut_gemm_bytes(const cut_gemm *g)
{
    return (double)cut_dtype_size(g->dtype) * ((double)cut_gemm_a_elems(g) + (double)cut_gemm_b_elems(g)) +
           (cut_gemm_beta(g) != 0.0 ? 8.0 : 4.0) * (double)cut_gemm_c_elems(g);
}

double cut_gemm_gflops(const cut_gemm *g, double ms)
{
    if (!(ms > 0.0))
        return 0.0;
    return cut_gemm_flops(g) / (ms * 1e6);
}

size_t cut_gemm_a_elems(const cut_gemm *g) { return cut_gemm_stride(g, 'A') * (size_t)cut_gemm_batch(g); }

/* K×N (NN) or N×K (NT): the same count either way. */
size_t cut_gemm_b_elems(const cut_gemm *g) { return cut_gemm_stride(g, 'B') * (size_t)cut_gemm_batch(g); }

size_t cut_gemm_c_elems(const cut_gemm *g) { return cut_gemm_stride(g, 'C') * (size_t)cut_gemm_batch(g); }

void cut_gemm_name(const cut_gemm *g, char *buf, size_t n)
{
    char batch[32] = "", ab[80] = "";
    if (cut_gemm_batch(g) > 1)
        snprintf(batch, sizeof batch, "_batch_%d", cut_gemm_batch(g));
    if (cut_gemm_alpha(g) != 1.0 || cut_gemm_beta(g) != 0.0)
        snprintf(ab, sizeof ab, "_alpha_%g_beta_%g", cut_gemm_alpha(g), cut_gemm_beta(g));
    snprintf(buf, n, "gemm_%s_%s_M_%d_N_%d_K_%d%s%s", cut_gemm_layout_name(g->layout), cut_dtype_name(g->dtype), g->m,
             g->n, g->k, batch, ab);
}

/* ---- seed 004's KEY=VALUE words ---- */

/* The key letters, in the order of the values array of parse_args. */
static const char key_letters[] = "MNKtO";
enum { KEY_M, KEY_N, KEY_K, KEY_T, KEY_O, KEY_COUNT };

/* A whole unsigned decimal of at most INT32_MAX; lo is 1 for M, N, K and t, 0 for O. */
static int parse_value(const char *word, const char *s, int lo, int *out, cut_err *e)
{
    if (*s == 0)
        return cut_err_set(e, "seed-004 word '%s' has an empty value: write e.g. M=1024", word);
    if (*s == '-' || *s == '+')
        return cut_err_set(e, "seed-004 word '%s' has a signed value: values are unsigned decimal integers", word);
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return cut_err_set(e, "seed-004 word '%s' has a value that is not a decimal integer", word);
        v = v * 10 + (*p - '0');
        if (v > INT32_MAX)
            return cut_err_set(e, "seed-004 word '%s' has a value above 2147483647", word);
    }
    if (v < lo)
        return cut_err_set(e, "seed-004 word '%s' has the value %lld: it must be in %d..2147483647", word,
                           (long long)v, lo);
    *out = (int)v;
    return 0;
}

/* The named words cutune adds to seed 004's letters (issue 21), and what they parsed to. */
enum { NAMED_BATCH, NAMED_ALPHA, NAMED_BETA, NAMED_LAYOUT, NAMED_DTYPE, NAMED_COUNT };
static const char *const named_keys[NAMED_COUNT] = {"batch", "alpha", "beta", "layout", "dtype"};
typedef struct named_words {
    int seen[NAMED_COUNT];
    int batch;
    double alpha, beta;
    cut_gemm_layout layout;
    cut_dtype dtype;
} named_words;

/* A finite decimal number (alpha, beta). */
static int parse_real(const char *word, const char *s, double *out, cut_err *e)
{
    char *end = NULL;
    double v = *s ? strtod(s, &end) : NAN;
    if (!end || *end || !isfinite(v))
        return cut_err_set(e, "seed-004 word '%s' needs a finite number (e.g. alpha=0.5)", word);
    *out = v;
    return 0;
}

/* A named word (batch=32, alpha=0.5, beta=1, layout=TN, dtype=fp16): 1 when parsed, 0 when the key is not one of
 * them (a seed-004 letter word), -1 with e. */
static int parse_named(const char *word, const char *eq, named_words *nw, cut_err *e)
{
    int key = -1;
    for (int i = 0; i < NAMED_COUNT; i++)
        if ((size_t)(eq - word) == strlen(named_keys[i]) && !strncmp(word, named_keys[i], (size_t)(eq - word)))
            key = i;
    if (key < 0)
        return 0;
    if (nw->seen[key]++)
        return cut_err_set(e, "seed-004 word '%s' gives %s a second time", word, named_keys[key]);
    const char *v = eq + 1;
    switch (key) {
    case NAMED_BATCH: return parse_value(word, v, 1, &nw->batch, e) == 0 ? 1 : -1;
    case NAMED_ALPHA: return parse_real(word, v, &nw->alpha, e) == 0 ? 1 : -1;
    case NAMED_BETA: return parse_real(word, v, &nw->beta, e) == 0 ? 1 : -1;
    case NAMED_LAYOUT: return cut_gemm_layout_parse(v, &nw->layout, e) == 0 ? 1 : cut_err_wrap(e, "word '%s'", word);
    default: return cut_dtype_parse(v, &nw->dtype, e) == 0 ? 1 : cut_err_wrap(e, "word '%s'", word);
    }
}

/* One word KEYS=VALUE: sets values[] and seen[] for each key letter, or a named word's value. */
static int parse_word(const char *word, int values[KEY_COUNT], int seen[KEY_COUNT], named_words *nw, cut_err *e)
{
    const char *eq = strchr(word, '=');
    if (eq && eq != word) {
        int named = parse_named(word, eq, nw, e);
        if (named != 0)
            return named < 0 ? -1 : 0;
    }
    if (!eq || eq == word)
        return cut_err_set(e, "seed-004 word '%s' is not KEY=VALUE (e.g. M=1024, MN=1024, t=2000)", word);
    int v, here[KEY_COUNT] = {0}; /* the letters of this word so far ("MM=1" gives M twice) */
    for (const char *p = word; p < eq; p++) {
        const char *k = strchr(key_letters, *p);
        if (!k)
            return cut_err_set(e, "seed-004 word '%s' has the unknown key letter '%c': keys combine M, N, K, t and O "
                                  "(or are one of batch, alpha, beta, layout, dtype)",
                               word, *p);
        if (seen[k - key_letters] || here[k - key_letters]++)
            return cut_err_set(e, "seed-004 word '%s' gives %c a second time: each key letter may appear once", word,
                               *p);
    }
    /* O alone may be 0; a word that also sets M, N, K or t needs a positive value. */
    int lo = (eq - word == 1 && word[0] == 'O') ? 0 : 1;
    if (parse_value(word, eq + 1, lo, &v, e) != 0)
        return -1;
    for (const char *p = word; p < eq; p++) {
        int idx = (int)(strchr(key_letters, *p) - key_letters);
        seen[idx] = 1;
        values[idx] = v;
    }
    return 0;
}

int cut_gemm_parse_args(int argc, const char *const *argv, cut_gemm *g, int *trials, int *option, cut_err *e)
{
    int values[KEY_COUNT] = {0}, seen[KEY_COUNT] = {0};
    named_words nw = {.batch = 1, .alpha = 1.0, .beta = 0.0, .layout = CUT_GEMM_NN, .dtype = CUT_DT_FP32};
    for (int i = 0; i < argc; i++)
        if (parse_word(argv[i], values, seen, &nw, e) != 0)
            return -1;
    for (int i = KEY_M; i <= KEY_K; i++)
        if (!seen[i])
            return cut_err_set(e, "seed-004 GEMM words give no %c: M, N and K are required (e.g. M=1024 N=2048 "
                                  "K=3072 or MNK=1024)",
                               key_letters[i]);
    cut_gemm tmp = {values[KEY_M], values[KEY_N], values[KEY_K], nw.layout, nw.dtype};
    cut_gemm_set_extras(&tmp, nw.batch, nw.alpha, nw.beta);
    if (cut_gemm_validate(&tmp, e) != 0)
        return -1;
    /* m, n, k; the rest only where a word names it (g may hold --layout and --dtype already) */
    g->m = tmp.m, g->n = tmp.n, g->k = tmp.k;
    if (nw.seen[NAMED_LAYOUT])
        g->layout = tmp.layout;
    if (nw.seen[NAMED_DTYPE])
        g->dtype = tmp.dtype;
    if (nw.seen[NAMED_BATCH] || nw.seen[NAMED_ALPHA] || nw.seen[NAMED_BETA])
        cut_gemm_set_extras(g, nw.seen[NAMED_BATCH] ? nw.batch : 1, nw.seen[NAMED_ALPHA] ? nw.alpha : 1.0,
                            nw.seen[NAMED_BETA] ? nw.beta : 0.0);
    if (trials)
        *trials = seen[KEY_T] ? values[KEY_T] : 0;
    if (option)
        *option = seen[KEY_O] ? values[KEY_O] : -1;
    return 0;
}
