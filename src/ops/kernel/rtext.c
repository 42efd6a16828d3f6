/* cutune — tokens and edits for the rules' text rewrites (rtext.h). */
#include "rtext.h"

#include "cutune/kstate.h"
#include "cutune/util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tokens ---- */

static void tk_push(cut_toks *ts, cut_tk_kind k, int s, int e, int bol)
{
    if (ts->n == ts->cap) {
        ts->cap = ts->cap ? 2 * ts->cap : 256;
        ts->t = cut_xrealloc(ts->t, sizeof *ts->t * (size_t)ts->cap);
    }
    ts->t[ts->n++] = (cut_tok){k, s, e, bol};
}

/* The end of a number starting at i (digits, '.', letters of exponents, hex and suffixes, a sign after e/E). */
static int num_end(const char *src, int n, int i)
{
    int j = i;
    while (j < n && (isalnum((unsigned char)src[j]) || src[j] == '.' || src[j] == '_' ||
                     ((src[j] == '+' || src[j] == '-') && (src[j - 1] == 'e' || src[j - 1] == 'E'))))
        j++;
    return j;
}

void cut_tk_c(const char *src, cut_toks *ts)
{
    memset(ts, 0, sizeof *ts);
    ts->src = src;
    const int n = (int)strlen(src);
    int line_start = 1;
    for (int i = 0; i < n;) {
        const char c = src[i];
        if (c == '\n') {
            line_start = 1, i++;
            continue;
        }
        if (isspace((unsigned char)c)) {
            i++;
            continue;
        }
        if (line_start && c == '#') { /* preprocessor line, with continuations */
            while (i < n && !(src[i] == '\n' && src[i - 1] != '\\'))
                i++;
            continue;
        }
        line_start = 0;
        if (c == '/' && i + 1 < n && src[i + 1] == '/') {
            while (i < n && src[i] != '\n')
                i++;
        } else if (c == '/' && i + 1 < n && src[i + 1] == '*') {
            const char *end = strstr(src + i + 2, "*/");
            i = end ? (int)(end - src) + 2 : n;
        } else if (c == '"' || c == '\'') {
            int j = i + 1;
            while (j < n && src[j] != c && src[j] != '\n')
                j += src[j] == '\\' ? 2 : 1;
            i = j + 1;
        } else if (isalpha((unsigned char)c) || c == '_') {
            int j = i;
            while (j < n && (isalnum((unsigned char)src[j]) || src[j] == '_'))
                j++;
            tk_push(ts, CUT_TK_IDENT, i, j, 0);
            i = j;
        } else if (isdigit((unsigned char)c) || (c == '.' && i + 1 < n && isdigit((unsigned char)src[i + 1]))) {
            int j = i;
            while (j < n && (isalnum((unsigned char)src[j]) || src[j] == '.' ||
                             ((src[j] == '+' || src[j] == '-') && (src[j - 1] == 'e' || src[j - 1] == 'E'))))
                j++;
            tk_push(ts, CUT_TK_NUM, i, j, 0);
            i = j;
        } else {
            static const char *const two[] = {"->", "==", "!=", "<=", ">=", "&&", "||", "<<", ">>", "+=", "-=",
                                              "*=", "/=", "++", "--", "::"};
            int len = 1;
            for (size_t k = 0; k < CUT_ARRAY_LEN(two); k++)
                if (i + 1 < n && c == two[k][0] && src[i + 1] == two[k][1])
                    len = 2;
            tk_push(ts, CUT_TK_PUNCT, i, i + len, 0);
            i += len;
        }
    }
}

/* The length of a Python string's prefix at i (r, b, f, u, rb, br, ...) when a quote follows it, else -1; 0 at a
 * quote. */
static int py_str_prefix(const char *src, int n, int i)
{
    int j = i;
    while (j < n && j - i < 2 && src[j] && strchr("rRbBuUfF", src[j]))
        j++;
    return j < n && (src[j] == '\'' || src[j] == '"') ? j - i : -1;
}

/* The end of the string whose opening quote is at q (single or triple quoted; a backslash always skips the next
 * character, which holds for raw strings too as far as finding the end goes). */
static int py_str_end(const char *src, int n, int q)
{
    const char c = src[q];
    if (q + 2 < n && src[q + 1] == c && src[q + 2] == c) {
        for (int j = q + 3; j < n; j += src[j] == '\\' ? 2 : 1)
            if (j + 2 < n && src[j] == c && src[j + 1] == c && src[j + 2] == c)
                return j + 3;
        return n;
    }
    int j = q + 1;
    while (j < n && src[j] != c && src[j] != '\n')
        j += src[j] == '\\' ? 2 : 1;
    return j < n ? j + 1 : n;
}

/* Where the comment at i ends: its line's end, or past the CUT_KST_PY_END line when it opens the tunables header. */
static int py_comment_end(const char *src, int n, int i)
{
    const size_t blen = strlen(CUT_KST_PY_BEGIN);
    if (!strncmp(src + i, CUT_KST_PY_BEGIN, blen)) {
        const char *end = strstr(src + i + blen, "\n" CUT_KST_PY_END);
        if (end)
            i = (int)(end - src) + 1;
    }
    while (i < n && src[i] != '\n')
        i++;
    return i;
}

void cut_tk_py(const char *src, cut_toks *ts)
{
    static const char *const ops[] = {"**=", "//=", ">>=", "<<=", "...", "**", "//", "==", "!=", "<=", ">=", "<<",
                                      ">>", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", "->", ":="};
    memset(ts, 0, sizeof *ts);
    ts->src = src;
    const int n = (int)strlen(src);
    int depth = 0, bol = 1;
    for (int i = 0; i < n;) {
        const char c = src[i];
        const int pre = isalpha((unsigned char)c) || c == '"' || c == '\'' ? py_str_prefix(src, n, i) : -1;
        if (c == '\n') {
            bol |= depth == 0, i++;
        } else if (c == '\\' && i + 1 < n && src[i + 1] == '\n') {
            i += 2; /* a continuation line */
        } else if (isspace((unsigned char)c)) {
            i++;
        } else if (c == '#') {
            i = py_comment_end(src, n, i);
        } else if (pre >= 0) {
            const int j = py_str_end(src, n, i + pre);
            tk_push(ts, CUT_TK_STR, i, j, bol);
            bol = 0, i = j;
        } else if (isalpha((unsigned char)c) || c == '_') {
            int j = i;
            while (j < n && (isalnum((unsigned char)src[j]) || src[j] == '_'))
                j++;
            tk_push(ts, CUT_TK_IDENT, i, j, bol);
            bol = 0, i = j;
        } else if (isdigit((unsigned char)c) || (c == '.' && i + 1 < n && isdigit((unsigned char)src[i + 1]))) {
            const int j = num_end(src, n, i);
            tk_push(ts, CUT_TK_NUM, i, j, bol);
            bol = 0, i = j;
        } else {
            int len = 1;
            for (size_t k = 0; k < CUT_ARRAY_LEN(ops) && len == 1; k++)
                if (!strncmp(src + i, ops[k], strlen(ops[k])))
                    len = (int)strlen(ops[k]);
            if (len == 1 && strchr("([{", c))
                depth++;
            else if (len == 1 && strchr(")]}", c) && depth > 0)
                depth--;
            tk_push(ts, CUT_TK_PUNCT, i, i + len, bol);
            bol = 0, i += len;
        }
    }
}

int cut_tk_is(const cut_toks *ts, int i, const char *s)
{
    if (i < 0 || i >= ts->n)
        return 0;
    const cut_tok *t = &ts->t[i];
    const size_t len = (size_t)(t->end - t->start);
    return strlen(s) == len && memcmp(ts->src + t->start, s, len) == 0;
}

int cut_tk_match(const cut_toks *ts, int i)
{
    const char open = ts->src[ts->t[i].start];
    const char close = open == '(' ? ')' : open == '[' ? ']' : '}';
    int depth = 0;
    for (int j = i; j < ts->n; j++) {
        if (ts->t[j].kind != CUT_TK_PUNCT || ts->t[j].end - ts->t[j].start != 1)
            continue;
        const char c = ts->src[ts->t[j].start];
        depth += c == open ? 1 : c == close ? -1 : 0;
        if (depth == 0)
            return j;
    }
    return -1;
}

int cut_tk_same(const cut_toks *ts, int a, int b)
{
    const cut_tok *x = &ts->t[a], *y = &ts->t[b];
    return x->end - x->start == y->end - y->start &&
           memcmp(ts->src + x->start, ts->src + y->start, (size_t)(x->end - x->start)) == 0;
}

/* ---- edits: replacements of byte ranges, applied back to front ---- */

void cut_ed_add(cut_edits *es, int start, int end, const char *fmt, ...)
{
    if (es->n == es->cap) {
        es->cap = es->cap ? 2 * es->cap : 16;
        es->e = cut_xrealloc(es->e, sizeof *es->e * (size_t)es->cap);
    }
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    const int len = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    char *text = cut_xmalloc((size_t)len + 1);
    vsnprintf(text, (size_t)len + 1, fmt, ap);
    va_end(ap);
    es->e[es->n] = (cut_edit){start, end, es->n, text};
    es->n++;
}

/* By start, then in the order added (qsort is not stable; two insertions at one place keep their order). */
static int ed_cmp(const void *a, const void *b)
{
    const cut_edit *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

char *cut_ed_apply(const char *src, cut_edits *es)
{
    if (es->n == 0) {
        free(es->e);
        return NULL;
    }
    qsort(es->e, (size_t)es->n, sizeof *es->e, ed_cmp);
    cut_buf b;
    cut_buf_init(&b);
    int at = 0;
    for (int i = 0; i < es->n; i++) {
        if (es->e[i].start < at) /* overlapping: keep the first */
            continue;
        cut_buf_append(&b, src + at, (size_t)(es->e[i].start - at));
        cut_buf_append(&b, es->e[i].text, strlen(es->e[i].text));
        at = es->e[i].end;
    }
    cut_buf_append(&b, src + at, strlen(src + at) + 1);
    for (int i = 0; i < es->n; i++)
        free(es->e[i].text);
    free(es->e);
    return b.data;
}
