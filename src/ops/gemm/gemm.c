/* cutune — GEMM workloads (seed 004): dtype and layout names, validation, FLOPs, sizes, names and seed 004's
 * KEY=VALUE argument form. The CPU reference lives in gemm_ref.c. */
#include "cutune/gemm.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Matrices must have fewer than 2^31 elements so that every element index fits a signed 32-bit int. */
#define CUT_GEMM_MAX_ELEMS ((int64_t)INT32_MAX)

static const char *const layout_names[2] = {"nn", "nt"};

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
    return cut_err_set(e, "unknown GEMM layout '%s': use nn (B is KxN) or nt (B is NxK)", s);
}

int cut_gemm_validate(const cut_gemm *g, cut_err *e)
{
    const char *names[3] = {"M", "N", "K"};
    const int v[3] = {g->m, g->n, g->k};
    for (int i = 0; i < 3; i++)
        if (v[i] <= 0)
            return cut_err_set(e, "gemm field %s is %d: every size must be at least 1", names[i], v[i]);
    if ((unsigned)g->layout >= CUT_ARRAY_LEN(layout_names))
        return cut_err_set(e, "gemm layout %d is unknown: use nn or nt", (int)g->layout);
    if ((unsigned)g->dtype >= CUT_DT_COUNT)
        return cut_err_set(e, "gemm dtype %d is unknown: use fp32, tf32, fp16 or bf16", (int)g->dtype);
    const struct {
        const char *what;
        int64_t n;
    } t[3] = {
        {"A (M*K)", (int64_t)g->m * g->k},
        {"B (K*N)", (int64_t)g->k * g->n},
        {"C (M*N)", (int64_t)g->m * g->n},
    };
    for (int i = 0; i < 3; i++)
        if (t[i].n > CUT_GEMM_MAX_ELEMS)
            return cut_err_set(e, "gemm matrix %s has %lld elements (M %d, N %d, K %d): cutune indexes matrices "
                                  "with 32-bit ints, so each must have fewer than 2^31",
                               t[i].what, (long long)t[i].n, g->m, g->n, g->k);
    return 0;
}

double cut_gemm_flops(const cut_gemm *g)
{
    return 2.0 * g->m * (double)g->n * g->k;
}

double cut_gemm_bytes(const cut_gemm *g)
{
    return (double)cut_dtype_size(g->dtype) * ((double)cut_gemm_a_elems(g) + (double)cut_gemm_b_elems(g)) +
           4.0 * (double)cut_gemm_c_elems(g);
}

double cut_gemm_gflops(const cut_gemm *g, double ms)
{
    if (!(ms > 0.0))
        return 0.0;
    return cut_gemm_flops(g) / (ms * 1e6);
}

size_t cut_gemm_a_elems(const cut_gemm *g) { return (size_t)g->m * (size_t)g->k; }

/* K×N (NN) or N×K (NT): the same count either way. */
size_t cut_gemm_b_elems(const cut_gemm *g) { return (size_t)g->k * (size_t)g->n; }

size_t cut_gemm_c_elems(const cut_gemm *g) { return (size_t)g->m * (size_t)g->n; }

void cut_gemm_name(const cut_gemm *g, char *buf, size_t n)
{
    snprintf(buf, n, "gemm_%s_%s_M_%d_N_%d_K_%d", cut_gemm_layout_name(g->layout), cut_dtype_name(g->dtype), g->m,
             g->n, g->k);
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

/* One word KEYS=VALUE: sets values[] and seen[] for each key letter. */
static int parse_word(const char *word, int values[KEY_COUNT], int seen[KEY_COUNT], cut_err *e)
{
    const char *eq = strchr(word, '=');
    if (!eq || eq == word)
        return cut_err_set(e, "seed-004 word '%s' is not KEY=VALUE (e.g. M=1024, MN=1024, t=2000)", word);
    int v, here[KEY_COUNT] = {0}; /* the letters of this word so far ("MM=1" gives M twice) */
    for (const char *p = word; p < eq; p++) {
        const char *k = strchr(key_letters, *p);
        if (!k)
            return cut_err_set(e, "seed-004 word '%s' has the unknown key letter '%c': keys combine M, N, K, t and O",
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
    for (int i = 0; i < argc; i++)
        if (parse_word(argv[i], values, seen, e) != 0)
            return -1;
    for (int i = KEY_M; i <= KEY_K; i++)
        if (!seen[i])
            return cut_err_set(e, "seed-004 GEMM words give no %c: M, N and K are required (e.g. M=1024 N=2048 "
                                  "K=3072 or MNK=1024)",
                               key_letters[i]);
    cut_gemm tmp = {values[KEY_M], values[KEY_N], values[KEY_K], CUT_GEMM_NN, CUT_DT_FP32};
    if (cut_gemm_validate(&tmp, e) != 0)
        return -1;
    g->m = tmp.m, g->n = tmp.n, g->k = tmp.k;
    if (trials)
        *trials = seen[KEY_T] ? values[KEY_T] : 0;
    if (option)
        *option = seen[KEY_O] ? values[KEY_O] : -1;
    return 0;
}
