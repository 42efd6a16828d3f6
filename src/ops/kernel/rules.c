/* cutune — the rule-based candidate generator: seed 002's nine moves as rewrites of a materialised source.
 *
 * What each rule recognises (a rule that finds nothing proposes nothing):
 *   change_block_sizes     a tunable that is not one of the named kinds below: every other allowed value
 *   vectorize_global_loads a tunable VEC*: every other allowed value
 *   switch_to_mma_or_wgmma a tunable MMA* / USE_MMA* / WGMMA*: every other allowed value (scalar FMA loops are not
 *                          rewritten into MMA by rule; that is left to the LLM generator)
 *   pad_tail_and_mask      a tunable PAD*; and 2-D __shared__ arrays T a[R][C] padded to [R][C + 1] (bank conflicts)
 *   enable_async_pipeline  a tunable STAGES* / PIPE*; and a copy `s[..] = g[..];` marked by a line comment
 *                          `// cutune: stage` above it, turned into cp.async with a wait before the next
 *                          __syncthreads()
 *   grouped_gemm_colmajor  a tunable GROUP*; and a __global__ function using blockIdx.x and blockIdx.y: blocks
 *                          remapped to a grouped column-major raster (groups of 8 block rows)
 *   cache_policy_cg        reads p[i] of global const pointers (a __global__ function's `const T *p` parameters and
 *                          locals computed from them), and *reinterpret_cast<const T *>(e) of such addresses, through
 *                          __ldcg
 *   avoid_atomics_reduce   statements `atomicAdd(p, v);`: the warp's values summed with shuffles first (one atomic
 *                          per warp), or per block through shared memory (one per block)
 *   softmax_math_fusion    expf/logf/sinf/cosf/powf -> __expf/__logf/__sinf/__cosf/__powf, 1.0f / sqrtf(x) ->
 *                          rsqrtf(x)
 * The text rewrites work on tokens (comments, strings and preprocessor lines are never touched) and are validated by
 * the measurement like any candidate: a rewrite that is wrong for a kernel fails its check and is recorded.
 * The spec's restrictions hold for every proposal (propose_text checks each): a tunable change that breaks one is
 * proposed together with the nearest change of one other tunable that mends it ("BX 16 -> 32, BY 16 -> 32"; a
 * configuration proposed once per state), or not at all. */
#include "cutune/kstate.h"
#include "cutune/util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tokens ---- */

typedef enum { TK_IDENT, TK_NUM, TK_PUNCT } tk_kind;
typedef struct tok {
    tk_kind kind;
    int start, end; /* byte offsets into the source */
} tok;
typedef struct toks {
    int n, cap;
    tok *t;
    const char *src;
} toks;

static void tk_push(toks *ts, tk_kind k, int s, int e)
{
    if (ts->n == ts->cap) {
        ts->cap = ts->cap ? 2 * ts->cap : 256;
        ts->t = cut_xrealloc(ts->t, sizeof *ts->t * (size_t)ts->cap);
    }
    ts->t[ts->n++] = (tok){k, s, e};
}

/* Splits src into identifiers, numbers and punctuation, skipping blanks, comments, string and character literals and
 * preprocessor lines. Two-character operators the rules look at ("->", "==", "<<", ">>", "+=", ...) are one token. */
static void tokenize(const char *src, toks *ts)
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
            tk_push(ts, TK_IDENT, i, j);
            i = j;
        } else if (isdigit((unsigned char)c) || (c == '.' && i + 1 < n && isdigit((unsigned char)src[i + 1]))) {
            int j = i;
            while (j < n && (isalnum((unsigned char)src[j]) || src[j] == '.' ||
                             ((src[j] == '+' || src[j] == '-') && (src[j - 1] == 'e' || src[j - 1] == 'E'))))
                j++;
            tk_push(ts, TK_NUM, i, j);
            i = j;
        } else {
            static const char *const two[] = {"->", "==", "!=", "<=", ">=", "&&", "||", "<<", ">>", "+=", "-=",
                                              "*=", "/=", "++", "--", "::"};
            int len = 1;
            for (size_t k = 0; k < CUT_ARRAY_LEN(two); k++)
                if (i + 1 < n && c == two[k][0] && src[i + 1] == two[k][1])
                    len = 2;
            tk_push(ts, TK_PUNCT, i, i + len);
            i += len;
        }
    }
}

static int tk_is(const toks *ts, int i, const char *s)
{
    if (i < 0 || i >= ts->n)
        return 0;
    const tok *t = &ts->t[i];
    const size_t len = (size_t)(t->end - t->start);
    return strlen(s) == len && memcmp(ts->src + t->start, s, len) == 0;
}

/* Index of the token closing the bracket at i ("(", "[", "{"), or -1. */
static int tk_match(const toks *ts, int i)
{
    const char open = ts->src[ts->t[i].start];
    const char close = open == '(' ? ')' : open == '[' ? ']' : '}';
    int depth = 0;
    for (int j = i; j < ts->n; j++) {
        if (ts->t[j].kind != TK_PUNCT || ts->t[j].end - ts->t[j].start != 1)
            continue;
        const char c = ts->src[ts->t[j].start];
        depth += c == open ? 1 : c == close ? -1 : 0;
        if (depth == 0)
            return j;
    }
    return -1;
}

/* The parameter list of the __global__ function whose keyword is token i: the index of its "(" (its ")" is
 * tk_match of that), or -1 (a declaration without one). */
static int global_params(const toks *ts, int i)
{
    int j = i + 1;
    while (j < ts->n && !tk_is(ts, j, "(") && !tk_is(ts, j, ";") && !tk_is(ts, j, "{"))
        j++;
    return tk_is(ts, j, "(") ? j : -1;
}

/* ---- edits: replacements of byte ranges, applied back to front ---- */

typedef struct edit {
    int start, end;
    char *text; /* owned */
} edit;
typedef struct edits {
    int n, cap;
    edit *e;
} edits;

static void ed_add(edits *es, int start, int end, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void ed_add(edits *es, int start, int end, const char *fmt, ...)
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
    es->e[es->n++] = (edit){start, end, text};
}

static int ed_cmp(const void *a, const void *b)
{
    const edit *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/* Applies the edits (non-overlapping) to src; NULL when there are none. Frees the edits. */
static char *ed_apply(const char *src, edits *es)
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

/* The source text of tokens [a, b] (inclusive), as "%.*s" arguments. */
#define TK_SPAN(ts, a, b) (ts)->t[b].end - (ts)->t[a].start, (ts)->src + (ts)->t[a].start

/* ---- cache_policy_cg ---- */

/* __ldcg is a global-memory load: on a local or shared address the GPU faults (CUDA_ERROR_INVALID_ADDRESS_SPACE).
 * So only pointers known to point into global memory are rewritten: `const T *p` parameters of __global__
 * functions, and locals `const T *q = p + ...` initialised from one of those by arithmetic (no `&`). A name that is
 * also declared any other way (a __device__ function's parameter, `const T *v = reinterpret_cast<..>(&t)`, a local
 * without an initialiser) is left alone. */

static int same_tok(const toks *ts, int a, int b)
{
    const tok *x = &ts->t[a], *y = &ts->t[b];
    return x->end - x->start == y->end - y->start && memcmp(ts->src + x->start, ts->src + y->start,
                                                            (size_t)(x->end - x->start)) == 0;
}

typedef struct ptr_names {
    int n;
    int tok[64];    /* the declared name's token */
    int global[64]; /* 1: points into global memory */
} ptr_names;

/* 1 when tok i is the name of a declaration classified global, 0 otherwise; -1 when the name is declared another
 * way too. */
static int name_global(const toks *ts, const ptr_names *pn, int i)
{
    int seen = 0;
    for (int k = 0; k < pn->n; k++)
        if (same_tok(ts, i, pn->tok[k])) {
            if (!pn->global[k])
                return -1;
            seen = 1;
        }
    return seen;
}

/* Whether tokens [a, b) are an initialiser or address computed from a global pointer: no `&`, and the first
 * identifier (casts and parentheses skipped) names one. */
static int derived_from_global(const toks *ts, const ptr_names *pn, int a, int b)
{
    int first = -1;
    for (int i = a; i < b; i++) {
        if (tk_is(ts, i, "&"))
            return 0;
        if (first < 0 && ts->t[i].kind == TK_IDENT)
            first = i;
    }
    return first >= 0 && name_global(ts, pn, first) == 1;
}

/* End of a declaration's initialiser starting at i: the `,` or `;` at depth 0. */
static int init_end(const toks *ts, int i)
{
    int depth = 0;
    for (; i < ts->n; i++) {
        if (tk_is(ts, i, "(") || tk_is(ts, i, "[") || tk_is(ts, i, "{"))
            depth++;
        else if (tk_is(ts, i, ")") || tk_is(ts, i, "]") || tk_is(ts, i, "}"))
            depth--;
        else if (depth == 0 && (tk_is(ts, i, ",") || tk_is(ts, i, ";")))
            return i;
        if (depth < 0)
            return i;
    }
    return ts->n;
}

/* Every `const T *name` declaration in order, each classified. */
static void const_pointer_names(const toks *ts, ptr_names *pn)
{
    int kparams[32][2], nk = 0; /* parameter lists of __global__ functions, as token ranges */
    for (int i = 0; i < ts->n && nk < 32; i++)
        if (tk_is(ts, i, "__global__")) {
            const int j = global_params(ts, i), close = j >= 0 ? tk_match(ts, j) : -1;
            if (close > 0) {
                kparams[nk][0] = j;
                kparams[nk++][1] = close;
            }
        }
    pn->n = 0;
    for (int i = 0; i + 2 < ts->n && pn->n < (int)CUT_ARRAY_LEN(pn->tok); i++) {
        if (!tk_is(ts, i, "const"))
            continue;
        int j = i + 1;
        while (j < ts->n && ts->t[j].kind == TK_IDENT && !tk_is(ts, j + 0, "__restrict__"))
            j++;
        if (j == i + 1 || !tk_is(ts, j, "*"))
            continue;
        j++;
        while (tk_is(ts, j, "__restrict__") || tk_is(ts, j, "const"))
            j++;
        if (j >= ts->n || ts->t[j].kind != TK_IDENT || tk_is(ts, j + 1, "("))
            continue;
        int global = 0;
        for (int k = 0; k < nk; k++)
            global |= j > kparams[k][0] && j < kparams[k][1];
        if (!global && tk_is(ts, j + 1, "="))
            global = derived_from_global(ts, pn, j + 2, init_end(ts, j + 2));
        pn->tok[pn->n] = j;
        pn->global[pn->n++] = global;
    }
}

static int is_decl(const ptr_names *pn, int i)
{
    for (int k = 0; k < pn->n; k++)
        if (pn->tok[k] == i)
            return 1;
    return 0;
}

char *cut_rule_cache_cg(const char *src)
{
    toks ts;
    tokenize(src, &ts);
    ptr_names pn;
    const_pointer_names(&ts, &pn);
    edits es = {0};
    for (int i = 1; i + 1 < ts.n; i++) {
        /* p[i] of a global const pointer, not already an operand of & (as in __ldcg(&p[i])) */
        if (ts.t[i].kind == TK_IDENT && tk_is(&ts, i + 1, "[") && !tk_is(&ts, i - 1, "&") &&
            !tk_is(&ts, i - 1, ".") && !tk_is(&ts, i - 1, "->") && !is_decl(&pn, i) && name_global(&ts, &pn, i) == 1) {
            const int close = tk_match(&ts, i + 1);
            if (close > 0 && !tk_is(&ts, close + 1, "[") && !tk_is(&ts, close + 1, "=")) {
                ed_add(&es, ts.t[i].start, ts.t[close].end, "__ldcg(&%.*s)", TK_SPAN(&ts, i, close));
                i = close;
            }
        }
        /* *reinterpret_cast<const T *>(e) as an rvalue, e an address computed from a global const pointer */
        if (tk_is(&ts, i, "*") && tk_is(&ts, i + 1, "reinterpret_cast") && tk_is(&ts, i + 2, "<") &&
            tk_is(&ts, i + 3, "const") && (tk_is(&ts, i - 1, "=") || tk_is(&ts, i - 1, "(") || tk_is(&ts, i - 1, ","))) {
            int j = i + 3;
            while (j < ts.n && !tk_is(&ts, j, ">"))
                j++;
            const int close = tk_is(&ts, j + 1, "(") ? tk_match(&ts, j + 1) : -1;
            if (close > 0 && !tk_is(&ts, close + 1, "=") && derived_from_global(&ts, &pn, j + 2, close)) {
                ed_add(&es, ts.t[i].start, ts.t[close].end, "__ldcg(%.*s)", TK_SPAN(&ts, i + 1, close));
                i = close;
            }
        }
    }
    free(ts.t);
    return ed_apply(src, &es);
}

/* ---- softmax_math_fusion ---- */

char *cut_rule_math_fusion(const char *src)
{
    static const char *const fast[][2] = {{"expf", "__expf"}, {"logf", "__logf"}, {"sinf", "__sinf"},
                                          {"cosf", "__cosf"}, {"powf", "__powf"}};
    toks ts;
    tokenize(src, &ts);
    edits es = {0};
    for (int i = 0; i < ts.n; i++) {
        for (size_t k = 0; k < CUT_ARRAY_LEN(fast); k++)
            if (tk_is(&ts, i, fast[k][0]) && tk_is(&ts, i + 1, "("))
                ed_add(&es, ts.t[i].start, ts.t[i].end, "%s", fast[k][1]);
        /* 1.0f / sqrtf(x) -> rsqrtf(x) */
        if (ts.t[i].kind == TK_NUM && tk_is(&ts, i + 1, "/") && tk_is(&ts, i + 2, "sqrtf") && tk_is(&ts, i + 3, "(") &&
            (tk_is(&ts, i, "1.0f") || tk_is(&ts, i, "1.f") || tk_is(&ts, i, "1.0"))) {
            const int close = tk_match(&ts, i + 3);
            if (close > 0) {
                ed_add(&es, ts.t[i].start, ts.t[close].end, "rsqrtf%.*s", TK_SPAN(&ts, i + 3, close));
                i = close;
            }
        }
    }
    free(ts.t);
    return ed_apply(src, &es);
}

/* ---- avoid_atomics_reduce ---- */

#define LINEAR_TID "((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x)"
#define WARP_SUM "for (int _cut_o = 16; _cut_o > 0; _cut_o >>= 1) _cut_v += __shfl_down_sync(0xffffffffu, _cut_v, _cut_o);"

char *cut_rule_avoid_atomics(const char *src, int block_level)
{
    toks ts;
    tokenize(src, &ts);
    edits es = {0};
    for (int i = 1; i + 1 < ts.n; i++) {
        if (!tk_is(&ts, i, "atomicAdd") || !tk_is(&ts, i + 1, "(") ||
            !(tk_is(&ts, i - 1, ";") || tk_is(&ts, i - 1, "{") || tk_is(&ts, i - 1, "}")))
            continue;
        const int close = tk_match(&ts, i + 1);
        if (close < 0 || !tk_is(&ts, close + 1, ";"))
            continue;
        int comma = -1, depth = 0;
        for (int j = i + 2; j < close; j++) {
            depth += tk_is(&ts, j, "(") || tk_is(&ts, j, "[") ? 1 : tk_is(&ts, j, ")") || tk_is(&ts, j, "]") ? -1 : 0;
            if (depth == 0 && tk_is(&ts, j, ","))
                comma = j;
        }
        if (comma < 0 || comma == i + 2 || comma + 1 == close || tk_is(&ts, comma + 1, "_cut_v"))
            continue; /* malformed, or already aggregated */
        if (!block_level)
            ed_add(&es, ts.t[i].start, ts.t[close + 1].end,
                   "{ /* cutune: warp-aggregated atomic */\n"
                   "        auto _cut_v = (%.*s);\n"
                   "        " WARP_SUM "\n"
                   "        if ((" LINEAR_TID " & 31u) == 0) atomicAdd(%.*s, _cut_v); }",
                   TK_SPAN(&ts, comma + 1, close - 1), TK_SPAN(&ts, i + 2, comma - 1));
        else
            ed_add(&es, ts.t[i].start, ts.t[close + 1].end,
                   "{ /* cutune: block-aggregated atomic */\n"
                   "        auto _cut_v = (%.*s);\n"
                   "        const unsigned _cut_t = " LINEAR_TID ";\n"
                   "        " WARP_SUM "\n"
                   "        __shared__ decltype(_cut_v) _cut_part[32];\n"
                   "        if ((_cut_t & 31u) == 0) _cut_part[_cut_t >> 5] = _cut_v;\n"
                   "        __syncthreads();\n"
                   "        if (_cut_t < 32) {\n"
                   "            const unsigned _cut_nw = (blockDim.x * blockDim.y * blockDim.z + 31) / 32;\n"
                   "            _cut_v = _cut_t < _cut_nw ? _cut_part[_cut_t] : decltype(_cut_v)(0);\n"
                   "            " WARP_SUM "\n"
                   "            if (_cut_t == 0) atomicAdd(%.*s, _cut_v);\n"
                   "        } }",
                   TK_SPAN(&ts, comma + 1, close - 1), TK_SPAN(&ts, i + 2, comma - 1));
        i = close + 1;
    }
    free(ts.t);
    return ed_apply(src, &es);
}

/* ---- pad_tail_and_mask: 2-D shared arrays ---- */

char *cut_rule_pad_smem(const char *src)
{
    toks ts;
    tokenize(src, &ts);
    edits es = {0};
    for (int i = 0; i < ts.n; i++) {
        if (!tk_is(&ts, i, "__shared__"))
            continue;
        int j = i + 1;
        while (j < ts.n && ts.t[j].kind == TK_IDENT && !tk_is(&ts, j + 1, "["))
            j++;
        if (j >= ts.n || !tk_is(&ts, j + 1, "["))
            continue;
        const int c1 = tk_match(&ts, j + 1);
        if (c1 < 0 || !tk_is(&ts, c1 + 1, "["))
            continue;
        const int c2 = tk_match(&ts, c1 + 1);
        if (c2 < 0 || tk_is(&ts, c2 + 1, "[") || (tk_is(&ts, c2 - 2, "+") && tk_is(&ts, c2 - 1, "1")))
            continue; /* 3-D, or padded already */
        ed_add(&es, ts.t[c1 + 1].start, ts.t[c2].end, "[%.*s + 1]", TK_SPAN(&ts, c1 + 2, c2 - 1));
        i = c2;
    }
    free(ts.t);
    return ed_apply(src, &es);
}

/* ---- grouped_gemm_colmajor ---- */

#define GROUP_ROWS 8

char *cut_rule_grouped_raster(const char *src)
{
    toks ts;
    tokenize(src, &ts);
    edits es = {0};
    for (int i = 0; i < ts.n; i++) {
        if (!tk_is(&ts, i, "__global__"))
            continue;
        const int j = global_params(&ts, i), pclose = j >= 0 ? tk_match(&ts, j) : -1;
        if (pclose < 0 || !tk_is(&ts, pclose + 1, "{"))
            continue;
        const int body = pclose + 1, bclose = tk_match(&ts, body);
        if (bclose < 0)
            break;
        int has_x = 0, has_y = 0, done = 0;
        for (int k = body; k < bclose; k++) {
            done |= tk_is(&ts, k, "_cut_bx");
            if (tk_is(&ts, k, "blockIdx") && tk_is(&ts, k + 1, ".")) {
                has_x |= tk_is(&ts, k + 2, "x");
                has_y |= tk_is(&ts, k + 2, "y");
            }
        }
        if (has_x && has_y && !done) {
            ed_add(&es, ts.t[body].end, ts.t[body].end,
                   "\n    /* cutune: grouped column-major raster, groups of %d block rows (L2 reuse) */\n"
                   "    const unsigned _cut_pid = blockIdx.y * gridDim.x + blockIdx.x;\n"
                   "    const unsigned _cut_in_group = %uu * gridDim.x;\n"
                   "    const unsigned _cut_first = (_cut_pid / _cut_in_group) * %uu;\n"
                   "    const unsigned _cut_rows = min(gridDim.y - _cut_first, %uu);\n"
                   "    const unsigned _cut_by = _cut_first + (_cut_pid %% _cut_in_group) %% _cut_rows;\n"
                   "    const unsigned _cut_bx = (_cut_pid %% _cut_in_group) / _cut_rows;",
                   GROUP_ROWS, GROUP_ROWS, GROUP_ROWS, GROUP_ROWS);
            for (int k = body; k < bclose; k++)
                if (tk_is(&ts, k, "blockIdx") && tk_is(&ts, k + 1, ".") && (tk_is(&ts, k + 2, "x") || tk_is(&ts, k + 2, "y")))
                    ed_add(&es, ts.t[k].start, ts.t[k + 2].end, "%s", tk_is(&ts, k + 2, "x") ? "_cut_bx" : "_cut_by");
        }
        i = bclose;
    }
    free(ts.t);
    return ed_apply(src, &es);
}

/* ---- enable_async_pipeline: a marked staging copy ---- */

#define STAGE_MARK "cutune: stage"

char *cut_rule_async_stage(const char *src)
{
    toks ts;
    tokenize(src, &ts);
    edits es = {0};
    for (const char *m = strstr(src, STAGE_MARK); m; m = strstr(m + 1, STAGE_MARK)) {
        const char *nl = strchr(m, '\n');
        if (!nl)
            break;
        const int at = (int)(nl - src);
        int i = 0;
        while (i < ts.n && ts.t[i].start < at)
            i++;
        /* DST[..]..[..] = SRC[..]..[..]; */
        if (i >= ts.n || ts.t[i].kind != TK_IDENT || !tk_is(&ts, i + 1, "["))
            continue;
        int j = i + 1;
        while (tk_is(&ts, j, "["))
            j = tk_match(&ts, j) + 1;
        if (j <= 0 || !tk_is(&ts, j, "=") || ts.t[j + 1].kind != TK_IDENT || !tk_is(&ts, j + 2, "["))
            continue;
        int k = j + 2;
        while (tk_is(&ts, k, "["))
            k = tk_match(&ts, k) + 1;
        if (k <= 0 || !tk_is(&ts, k, ";"))
            continue;
        int sync = k + 1;
        while (sync < ts.n && !tk_is(&ts, sync, "__syncthreads"))
            sync++;
        if (sync >= ts.n)
            continue;
        ed_add(&es, ts.t[i].start, ts.t[k].end,
               "asm volatile(\"cp.async.ca.shared.global [%%0], [%%1], %%2;\\n\" :: "
               "\"r\"((unsigned)__cvta_generic_to_shared(&%.*s)), \"l\"(&%.*s), \"n\"(sizeof(%.*s)));",
               TK_SPAN(&ts, i, j - 1), TK_SPAN(&ts, j + 1, k - 1), TK_SPAN(&ts, j + 1, k - 1));
        ed_add(&es, ts.t[sync].start, ts.t[sync].start, "asm volatile(\"cp.async.wait_all;\\n\" ::: \"memory\");\n    ");
    }
    free(ts.t);
    return ed_apply(src, &es);
}

/* ---- tunables ---- */

static int has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static cut_move tunable_move(const char *name)
{
    if (has_prefix(name, "VEC"))
        return CUT_MV_VECTORIZE;
    if (has_prefix(name, "MMA") || has_prefix(name, "USE_MMA") || has_prefix(name, "WGMMA"))
        return CUT_MV_MMA;
    if (has_prefix(name, "PAD"))
        return CUT_MV_PAD_TAIL;
    if (has_prefix(name, "STAGES") || has_prefix(name, "PIPE") || !strcmp(name, "num_stages"))
        return CUT_MV_ASYNC_PIPELINE;
    if (has_prefix(name, "GROUP"))
        return CUT_MV_GROUPED;
    return CUT_MV_BLOCK_SIZES;
}

/* The rules' own estimates of the relative gain of each move (before history corrects them). */
static double rule_gain(cut_move m, int neighbour)
{
    switch (m) {
    case CUT_MV_AVOID_ATOMICS:
        return 0.5;
    case CUT_MV_MMA:
        return 0.5;
    case CUT_MV_VECTORIZE:
        return neighbour ? 0.2 : 0.15;
    case CUT_MV_MATH_FUSION:
        return 0.1;
    case CUT_MV_BLOCK_SIZES:
        return neighbour ? 0.1 : 0.05;
    default:
        return 0.05;
    }
}

/* ---- the generator ---- */

#define REPAIR_EVALS 20000 /* configurations a generator call may try while repairing changes that break restrictions */

typedef struct gen_state {
    const cut_kspec *k;
    const char *src, *work_dir;
    cut_proposal *out;
    int max, n;
    cut_err *e;
    long long (*configs)[CUT_KS_MAX_VARS]; /* tunables of the tunable changes proposed so far (max of them, owned) */
    int nconfigs;
    int evals_left;                                     /* of REPAIR_EVALS */
    long long sorted[CUT_KS_MAX_VARS][CUT_KS_MAX_VALUES]; /* each tunable's allowed values, ascending */
} gen_state;

/* Adds a proposal rewriting the state to text new_src (owned, freed here). -1 on a diff failure. Every proposal of
 * the rules passes here: one whose tunables break a restriction of the spec is dropped (cutune/kstate.h). */
static int propose_text(gen_state *g, cut_move m, const char *label, double gain, char *new_src)
{
    if (!new_src)
        return 0;
    int rc = 0;
    if (g->n < g->max && strcmp(new_src, g->src) != 0 &&
        (g->k->nrestrictions == 0 || cut_kstate_allowed(g->k, new_src, NULL, 0) != 0)) {
        cut_proposal *p = &g->out[g->n];
        memset(p, 0, sizeof *p);
        if ((rc = cut_diff_unified(g->src, new_src, g->work_dir, &p->diff, g->e)) == 0) {
            p->move = m;
            snprintf(p->label, sizeof p->label, "%s", label);
            p->pred_gain = gain;
            g->n++;
        }
    }
    free(new_src);
    return rc;
}

static int cmp_ll(const void *a, const void *b)
{
    const long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* Whether tunable values vals give a launch and satisfy the restrictions, and were not proposed yet. */
static int config_new_ok(gen_state *g, const long long *vals)
{
    for (int i = 0; i < g->nconfigs; i++)
        if (memcmp(g->configs[i], vals, sizeof(long long) * (size_t)g->k->ntunables) == 0)
            return 0;
    cut_ks_launch l;
    cut_err ignore;
    return cut_kspec_allows(g->k, vals, NULL, 0) && cut_kspec_resolve(g->k, vals, &l, &ignore) == 0;
}

/* vals[t] breaks a restriction: changes one other tunable u to the nearest value (in ascending order of u's allowed
 * values) that makes vals allowed and new; the first u in the spec's order wins a tie. Returns u (vals updated), or
 * -1 (vals unchanged) when none does or the evaluation budget is spent. */
static int repair(gen_state *g, const long long *cur, int t, long long *vals)
{
    const cut_kspec *k = g->k;
    for (int d = 1; d < CUT_KS_MAX_VALUES; d++)
        for (int u = 0; u < k->ntunables; u++) {
            const int nv = k->tunables[u].nvalues;
            int r = 0;
            while (r < nv && g->sorted[u][r] != cur[u])
                r++;
            for (int side = -1; u != t && side <= 1; side += 2) {
                const int at = r + side * d;
                if (at < 0 || at >= nv || g->sorted[u][at] == cur[u])
                    continue;
                if (g->evals_left-- <= 0)
                    return -1;
                vals[u] = g->sorted[u][at];
                if (config_new_ok(g, vals))
                    return u;
                vals[u] = cur[u];
            }
        }
    return -1;
}

/* The state's source with the header's lines (cut_kstate_line) rewritten from values cur to vals, malloc'd; NULL if a line
 * is not found. */
static char *with_values(const cut_kspec *k, const char *src, const long long *cur, const long long *vals)
{
    char *text = cut_xstrdup(src);
    for (int t = 0; t < k->ntunables && text; t++) {
        if (vals[t] == cur[t])
            continue;
        char from[160], to[160];
        cut_kstate_line(k, k->tunables[t].name, cur[t], from, sizeof from);
        cut_kstate_line(k, k->tunables[t].name, vals[t], to, sizeof to);
        const char *hit = strstr(text, from);
        char *next = NULL;
        if (hit) {
            cut_buf b;
            cut_buf_init(&b);
            cut_buf_append(&b, text, (size_t)(hit - text));
            cut_buf_printf(&b, "%s%s", to, hit + strlen(from));
            next = b.data;
        }
        free(text);
        text = next;
    }
    return text;
}

/* Every other allowed value of each tunable; a change that breaks a restriction is repaired by one more change
 * (repair) or left out. */
static int propose_tunables(gen_state *g)
{
    const cut_kspec *k = g->k;
    long long cur[CUT_KS_MAX_VARS];
    if (cut_kstate_tunables(k, g->src, cur, g->e) != 0)
        return -1;
    for (int t = 0; t < k->ntunables; t++) {
        memcpy(g->sorted[t], k->tunables[t].values, sizeof(long long) * (size_t)k->tunables[t].nvalues);
        qsort(g->sorted[t], (size_t)k->tunables[t].nvalues, sizeof(long long), cmp_ll);
    }
    for (int t = 0; t < k->ntunables; t++) {
        const cut_ks_tunable *tu = &k->tunables[t];
        int at = 0;
        for (int v = 0; v < tu->nvalues; v++)
            if (tu->values[v] == cur[t])
                at = v;
        for (int v = 0; v < tu->nvalues && g->nconfigs < g->max; v++) {
            if (v == at)
                continue;
            long long vals[CUT_KS_MAX_VARS];
            memcpy(vals, cur, sizeof vals);
            vals[t] = tu->values[v];
            cut_ks_launch l;
            cut_err ignore;
            if (cut_kspec_resolve(k, vals, &l, &ignore) != 0)
                continue; /* the launch this value gives is impossible */
            int u = -1;
            if (!config_new_ok(g, vals) && (u = repair(g, cur, t, vals)) < 0)
                continue; /* breaks a restriction that no single other change mends */
            char label[160];
            int len = snprintf(label, sizeof label, "%s %lld -> %lld", tu->name, cur[t], tu->values[v]);
            if (u >= 0 && len > 0 && (size_t)len < sizeof label)
                snprintf(label + len, sizeof label - (size_t)len, ", %s %lld -> %lld", k->tunables[u].name, cur[u],
                         vals[u]);
            memcpy(g->configs[g->nconfigs++], vals, sizeof vals);
            const cut_move m = tunable_move(tu->name);
            /* sorted allowed lists are the common case; "neighbour" = adjacent in the spec's list order */
            const int neighbour = v == at - 1 || v == at + 1;
            if (propose_text(g, m, label, rule_gain(m, neighbour), with_values(k, g->src, cur, vals)) != 0)
                return -1;
        }
    }
    return 0;
}

static int rules_propose(void *ctx, const cut_kspec *k, const char *src, const char *context, const char *work_dir,
                         cut_proposal *out, int max, cut_err *e)
{
    (void)ctx, (void)context; /* a state's rules follow from its source alone: edge diffs can be made again */
    /* owned here: the state (8 KiB of sorted value lists) and its configs */
    gen_state *g = cut_xmalloc(sizeof *g);
    *g = (gen_state){.k = k, .src = src, .work_dir = work_dir, .out = out, .max = max, .e = e,
                     .evals_left = REPAIR_EVALS};
    g->configs = cut_xcalloc(max > 0 ? (size_t)max : 1, sizeof *g->configs);
    int rc = 0;
    /* the text rewrites read CUDA C++: a Triton state gets the tunable moves (its block sizes, warps and stages) */
    if (k->lang == CUT_KS_TRITON)
        rc = propose_tunables(g);
    else if (propose_tunables(g) != 0 ||
        propose_text(g, CUT_MV_AVOID_ATOMICS, "warp-aggregated atomicAdd", rule_gain(CUT_MV_AVOID_ATOMICS, 1),
                     cut_rule_avoid_atomics(src, 0)) != 0 ||
        propose_text(g, CUT_MV_AVOID_ATOMICS, "block-aggregated atomicAdd", rule_gain(CUT_MV_AVOID_ATOMICS, 1) + 0.1,
                     cut_rule_avoid_atomics(src, 1)) != 0 ||
        propose_text(g, CUT_MV_MATH_FUSION, "fast math intrinsics", rule_gain(CUT_MV_MATH_FUSION, 1),
                     cut_rule_math_fusion(src)) != 0 ||
        propose_text(g, CUT_MV_CACHE_CG, "const loads through __ldcg", rule_gain(CUT_MV_CACHE_CG, 1),
                     cut_rule_cache_cg(src)) != 0 ||
        propose_text(g, CUT_MV_PAD_TAIL, "pad 2-D shared arrays by one column", rule_gain(CUT_MV_PAD_TAIL, 1),
                     cut_rule_pad_smem(src)) != 0 ||
        propose_text(g, CUT_MV_GROUPED, "grouped column-major block raster", rule_gain(CUT_MV_GROUPED, 1),
                     cut_rule_grouped_raster(src)) != 0 ||
        propose_text(g, CUT_MV_ASYNC_PIPELINE, "cp.async for the marked staging copy",
                     rule_gain(CUT_MV_ASYNC_PIPELINE, 1), cut_rule_async_stage(src)) != 0)
        rc = -1;
    if (rc != 0)
        for (int i = 0; i < g->n; i++)
            cut_proposal_free(&out[i]);
    const int n = g->n;
    free(g->configs);
    free(g);
    return rc == 0 ? n : -1;
}

cut_cand_gen *cut_rules_gen_new(void)
{
    cut_cand_gen *g = cut_xcalloc(1, sizeof *g);
    g->name = "rules";
    g->propose = rules_propose;
    return g;
}

void cut_cand_gen_free(cut_cand_gen *g)
{
    if (!g)
        return;
    if (g->destroy)
        g->destroy(g->ctx);
    free(g);
}
