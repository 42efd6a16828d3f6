/* cutune — the rule generator's moves for Triton states (issue 18): rewrites of the Python module's @triton.jit
 * functions, proposed beside the tunable moves (num_warps, num_stages, the BLOCK sizes) by rules.c.
 *
 * What each rewrite recognises (only inside @triton.jit functions; comments, strings and the tunables header are never
 * touched; a rewrite that finds nothing returns NULL, and none applies twice):
 *   cache_policy_cg        tl.load(...) without an eviction_policy= or cache_modifier= keyword gets
 *                          cache_modifier=".cg" (cut_rule_triton_cache_cg); a second proposal gives it
 *                          eviction_policy="evict_first" instead (streamed data; cut_rule_triton_evict_first)
 *   vectorize_global_loads `NAME = tl.arange(0, B)` and `NAME = S * B + tl.arange(0, B)` (S a product, no + or - in
 *                          it) get a line `NAME = tl.max_contiguous(tl.multiple_of(NAME, B), B)` after them: NAME is
 *                          then one run of B contiguous integers starting at a multiple of B, so both hints are true
 *                          (cut_rule_triton_hints)
 *   switch_to_mma_or_wgmma tl.dot(a, b), tl.dot(.., input_precision="ieee") and tl.dot(.., allow_tf32=False) at
 *                          input_precision "tf32x3" or "tf32" (cut_rule_triton_dot_precision; a bare tl.dot is
 *                          Triton's default, tf32 unless TRITON_F32_DEFAULT says otherwise: the tf32 proposal spells it)
 *   softmax_math_fusion    tl.exp(x) -> tl.exp2(x * log2(e)); 1.0 / tl.sqrt(x) -> tl.rsqrt(x) (cut_rule_triton_fast_math).
 *                          Triton's NVIDIA backend lowers an fp32 tl.exp this way already (then the PTX key finds a
 *                          transposition); fp32 `/` is left: it is already the approximate div.full.f32, and
 *                          tl.fdiv(approx=True) is not in Triton 3.6
 *   avoid_atomics_reduce   a statement tl.atomic_add(P, V[, mask]) where V is a block and P one address (scalar terms,
 *                          plus zero broadcasts such as `tl.zeros_like(offs)` or `offs * 0`): one atomic of the
 *                          block's sum, tl.atomic_add(P', tl.sum(tl.where(mask, V, 0), axis=None))
 *                          (cut_rule_triton_avoid_atomics)
 *   grouped_gemm_colmajor  a function reading tl.program_id(0) and tl.program_id(1): both replaced by a grouped
 *                          raster over the same 2-D grid, groups of 8 rows of programs (cut_rule_triton_grouped)
 * Which values are blocks is a guess from the text (a name assigned from tl.arange/zeros/full/make_block_ptr or from
 * another block; a top-level reduction is a scalar): exact for the suite's 1-D reductions, checked by measurement
 * elsewhere like every candidate. Exact rewrites (same results): cache_cg, evict_first, hints, grouped, and the
 * atomics up to summation order; tf32 and exp2/rsqrt change rounding, so the spec's tolerance decides. */
#include "cutune/kstate.h"
#include "cutune/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtext.h"

#define MAX_FNS 32
#define MAX_ARGS 16
#define MAX_NAMES 128
#define GROUP_ROWS 8
#define LOG2E "1.4426950408889634"

/* ---- the module's structure ---- */

typedef struct jit_fn {
    int def, body, end; /* token indices: `def`, the body's first token, one past its last */
} jit_fn;

/* The column of token i on its line (bytes). */
static int col(const cut_toks *ts, int i)
{
    int s = ts->t[i].start;
    while (s > 0 && ts->src[s - 1] != '\n')
        s--;
    return ts->t[i].start - s;
}

/* Whether the decorator at token i (an `@`) is triton.jit or jit, called or not. */
static int jit_decorator(const cut_toks *ts, int i)
{
    int j = i + 1;
    if (cut_tk_is(ts, j, "triton") && cut_tk_is(ts, j + 1, "."))
        j += 2;
    return cut_tk_is(ts, j, "jit") && (j + 1 >= ts->n || ts->t[j + 1].bol || cut_tk_is(ts, j + 1, "("));
}

/* The @triton.jit functions with an indented body, in order (at most max). */
static int jit_fns(const cut_toks *ts, jit_fn *out, int max)
{
    int n = 0;
    for (int i = 0; i < ts->n && n < max; i++) {
        if (!ts->t[i].bol || !cut_tk_is(ts, i, "@"))
            continue;
        int jit = 0, d = i;
        while (d < ts->n && ts->t[d].bol && cut_tk_is(ts, d, "@")) { /* the decorators above one def */
            jit |= jit_decorator(ts, d);
            d++;
            while (d < ts->n && !ts->t[d].bol)
                d++;
        }
        i = d - 1;
        if (!jit || !cut_tk_is(ts, d, "def") || !cut_tk_is(ts, d + 2, "("))
            continue;
        int colon = cut_tk_match(ts, d + 2);
        while (colon > 0 && colon < ts->n && !ts->t[colon].bol && !cut_tk_is(ts, colon, ":"))
            colon++; /* past a return annotation */
        if (colon <= 0 || !cut_tk_is(ts, colon, ":") || colon + 1 >= ts->n || !ts->t[colon + 1].bol ||
            col(ts, colon + 1) <= col(ts, d))
            continue; /* a one-line body: not rewritten */
        int end = colon + 1;
        while (end < ts->n && !(ts->t[end].bol && col(ts, end) <= col(ts, d)))
            end++;
        out[n++] = (jit_fn){d, colon + 1, end};
        i = end - 1;
    }
    return n;
}

/* What a rule does to one jit function: edits into es (ctx: the rule's own). */
typedef void (*fn_rule)(const cut_toks *ts, const jit_fn *fn, cut_edits *es, const void *ctx);

/* Applies rule to every @triton.jit function of src: the new source (malloc'd), or NULL when nothing changed. */
static char *rewrite_fns(const char *src, fn_rule rule, const void *ctx)
{
    cut_toks ts;
    cut_tk_py(src, &ts);
    jit_fn fn[MAX_FNS];
    const int nf = jit_fns(&ts, fn, MAX_FNS);
    cut_edits es = {0};
    for (int f = 0; f < nf; f++)
        rule(&ts, &fn[f], &es, ctx);
    free(ts.t);
    return cut_ed_apply(src, &es);
}

/* The last token of the statement starting at token i (before the next statement or end). */
static int stmt_end(const cut_toks *ts, int i, int end)
{
    int j = i + 1;
    while (j < end && !ts->t[j].bol)
        j++;
    return j - 1;
}

/* Whether tokens i.. are `tl.NAME(` (or `tl.math.NAME(` when math is 1); the "(" index, else -1. */
static int tl_call(const cut_toks *ts, int i, const char *name, int math)
{
    if (!cut_tk_is(ts, i, "tl") || !cut_tk_is(ts, i + 1, ".") || cut_tk_is(ts, i - 1, "."))
        return -1;
    int j = i + 2;
    if (math && cut_tk_is(ts, j, "math") && cut_tk_is(ts, j + 1, "."))
        j += 2;
    return cut_tk_is(ts, j, name) && cut_tk_is(ts, j + 1, "(") ? j + 1 : -1;
}

static int is_open(const cut_toks *ts, int i)
{
    return cut_tk_is(ts, i, "(") || cut_tk_is(ts, i, "[") || cut_tk_is(ts, i, "{");
}

/* The arguments of the call whose "(" is open and ")" close: token ranges [a[k], b[k]] split at top-level commas (a
 * trailing comma ends none). Their count, or -1 when there are over MAX_ARGS. */
static int call_args(const cut_toks *ts, int open, int close, int *a, int *b)
{
    int n = 0, from = open + 1;
    for (int j = open + 1; j <= close; j++) {
        if (is_open(ts, j)) {
            j = cut_tk_match(ts, j);
            if (j < 0 || j > close)
                return -1;
            continue;
        }
        if (j == close || cut_tk_is(ts, j, ",")) {
            if (j > from) {
                if (n == MAX_ARGS)
                    return -1;
                a[n] = from, b[n] = j - 1, n++;
            }
            from = j + 1;
        }
    }
    return n;
}

/* The keyword of argument [a, b] (`NAME = value`): its name's token, else -1. */
static int arg_kw(const cut_toks *ts, int a, int b)
{
    return b > a + 1 && ts->t[a].kind == CUT_TK_IDENT && cut_tk_is(ts, a + 1, "=") ? a : -1;
}

/* The index of the argument with keyword kw among n, or -1. */
static int find_kw(const cut_toks *ts, const int *a, const int *b, int n, const char *kw)
{
    for (int k = 0; k < n; k++)
        if (arg_kw(ts, a[k], b[k]) >= 0 && cut_tk_is(ts, a[k], kw))
            return k;
    return -1;
}

/* Whether string token i holds exactly s (any quotes, no prefix). */
static int str_is(const cut_toks *ts, int i, const char *s)
{
    const cut_tok *t = &ts->t[i];
    const size_t len = strlen(s);
    return t->kind == CUT_TK_STR && (size_t)(t->end - t->start) == len + 2 &&
           (ts->src[t->start] == '"' || ts->src[t->start] == '\'') && !memcmp(ts->src + t->start + 1, s, len);
}

/* Where a new line goes after the statement ending at token e: the end of its physical line. */
static int line_end(const cut_toks *ts, int e)
{
    const char *nl = strchr(ts->src + ts->t[e].end, '\n');
    return nl ? (int)(nl - ts->src) : (int)strlen(ts->src);
}

/* Adds ", kw=value" (" kw=value" after a trailing comma) at the end of the call closed by token close. */
static void add_kwarg(const cut_toks *ts, cut_edits *es, int close, const char *kw_value)
{
    cut_ed_add(es, ts->t[close].start, ts->t[close].start, "%s%s", cut_tk_is(ts, close - 1, ",") ? " " : ", ",
               kw_value);
}

/* ---- cache_policy_cg ---- */

/* Every tl.load without a cache keyword gets the keyword ctx (a "name=value" string). */
static void load_kwarg(const cut_toks *ts, const jit_fn *fn, cut_edits *es, const void *ctx)
{
    for (int i = fn->body; i < fn->end; i++) {
        const int open = tl_call(ts, i, "load", 0), close = open > 0 ? cut_tk_match(ts, open) : -1;
        int a[MAX_ARGS], b[MAX_ARGS];
        const int n = close > 0 ? call_args(ts, open, close, a, b) : -1;
        if (n >= 1 && find_kw(ts, a, b, n, "eviction_policy") < 0 && find_kw(ts, a, b, n, "cache_modifier") < 0)
            add_kwarg(ts, es, close, ctx);
    }
}

char *cut_rule_triton_cache_cg(const char *src)
{
    return rewrite_fns(src, load_kwarg, "cache_modifier=\".cg\"");
}

char *cut_rule_triton_evict_first(const char *src)
{
    return rewrite_fns(src, load_kwarg, "eviction_policy=\"evict_first\"");
}

/* ---- vectorize_global_loads: alignment and contiguity hints ---- */

/* Whether tokens [a, b] are a product (names, numbers, attributes, calls, brackets joined by * // %). */
static int is_product(const cut_toks *ts, int a, int b)
{
    if (a > b)
        return 0;
    for (int j = a; j <= b; j++) {
        if (is_open(ts, j)) {
            j = cut_tk_match(ts, j);
            if (j < 0 || j > b)
                return 0;
        } else if (ts->t[j].kind == CUT_TK_PUNCT && !cut_tk_is(ts, j, ".") && !cut_tk_is(ts, j, "*") &&
                   !cut_tk_is(ts, j, "//") && !cut_tk_is(ts, j, "%")) {
            return 0;
        }
    }
    return 1;
}

/* The token of B when tokens [a, e] are `tl.arange(0, B)` or `S * B + tl.arange(0, B)`, else -1. */
static int offsets_block(const cut_toks *ts, int a, int e)
{
    const int at = e - 7; /* tl . arange ( 0 , B ) */
    if (at < a || tl_call(ts, at, "arange", 0) != at + 3 || !cut_tk_is(ts, at + 4, "0") ||
        !cut_tk_is(ts, at + 5, ",") || !cut_tk_is(ts, e, ")") ||
        (ts->t[e - 1].kind != CUT_TK_IDENT && ts->t[e - 1].kind != CUT_TK_NUM))
        return -1;
    if (at == a)
        return e - 1;
    if (at - 3 > a && cut_tk_is(ts, at - 1, "+") && cut_tk_same(ts, at - 2, e - 1) && cut_tk_is(ts, at - 3, "*") &&
        is_product(ts, a, at - 4))
        return e - 1;
    return -1;
}

/* Each offsets statement `o = ... tl.arange(0, B)` gets `o = tl.max_contiguous(tl.multiple_of(o, B), B)` after it. */
static void hints_fn(const cut_toks *ts, const jit_fn *fn, cut_edits *es, const void *ctx)
{
    (void)ctx;
    for (int i = fn->body; i < fn->end; i++) {
        if (!ts->t[i].bol || ts->t[i].kind != CUT_TK_IDENT || !cut_tk_is(ts, i + 1, "="))
            continue;
        const int e = stmt_end(ts, i, fn->end), B = offsets_block(ts, i + 2, e), next = e + 1;
        if (B < 0 || (next < fn->end && cut_tk_same(ts, next, i) && cut_tk_is(ts, next + 1, "=") &&
                      tl_call(ts, next + 2, "max_contiguous", 0) > 0))
            continue; /* not offsets, or hinted already */
        const int c = col(ts, i);
        cut_ed_add(es, line_end(ts, e), line_end(ts, e), "\n%.*s%.*s = tl.max_contiguous(tl.multiple_of(%.*s, %.*s), %.*s)",
                   c, ts->src + ts->t[i].start - c, CUT_TK_SPAN(ts, i, i), CUT_TK_SPAN(ts, i, i),
                   CUT_TK_SPAN(ts, B, B), CUT_TK_SPAN(ts, B, B));
    }
}

char *cut_rule_triton_hints(const char *src)
{
    return rewrite_fns(src, hints_fn, NULL);
}

/* ---- switch_to_mma_or_wgmma: tl.dot's input precision ---- */

/* Every tl.dot at ieee precision (explicit, allow_tf32=False or the default) gets input_precision ctx. */
static void dot_precision_fn(const cut_toks *ts, const jit_fn *fn, cut_edits *es, const void *ctx)
{
    const char *precision = ctx;
    char kv[64];
    snprintf(kv, sizeof kv, "input_precision=\"%s\"", precision);
    for (int i = fn->body; i < fn->end; i++) {
        const int open = tl_call(ts, i, "dot", 0), close = open > 0 ? cut_tk_match(ts, open) : -1;
        int a[MAX_ARGS], b[MAX_ARGS];
        const int n = close > 0 ? call_args(ts, open, close, a, b) : -1;
        if (n < 2)
            continue;
        const int ip = find_kw(ts, a, b, n, "input_precision"), tf = find_kw(ts, a, b, n, "allow_tf32");
        int positional = 0;
        while (positional < n && arg_kw(ts, a[positional], b[positional]) < 0)
            positional++;
        if (ip >= 0 && b[ip] == a[ip] + 2 && str_is(ts, b[ip], "ieee"))
            cut_ed_add(es, ts->t[b[ip]].start, ts->t[b[ip]].end, "\"%s\"", precision);
        else if (ip < 0 && tf >= 0 && b[tf] == a[tf] + 2 && cut_tk_is(ts, b[tf], "False"))
            cut_ed_add(es, ts->t[a[tf]].start, ts->t[b[tf]].end, "input_precision=\"%s\"", precision);
        else if (ip < 0 && tf < 0 && positional >= 2 && positional <= 3) /* a 4th is the precision */
            add_kwarg(ts, es, close, kv);
    }
}

char *cut_rule_triton_dot_precision(const char *src, const char *precision)
{
    return rewrite_fns(src, dot_precision_fn, precision);
}

/* ---- softmax_math_fusion: exp2, rsqrt ---- */

/* Whether argument tokens [a, b] need parentheses before "* c" is appended: an operator binding looser than `*` at
 * the top level. */
static int needs_parens(const cut_toks *ts, int a, int b)
{
    static const char *const words[] = {"and", "or", "not", "if", "else", "lambda", "in", "is"};
    for (int j = a; j <= b; j++) {
        if (is_open(ts, j)) {
            j = cut_tk_match(ts, j);
            if (j < 0 || j > b)
                return 1;
            continue;
        }
        if (ts->t[j].kind == CUT_TK_PUNCT && !cut_tk_is(ts, j, ".") && !cut_tk_is(ts, j, "*") &&
            !cut_tk_is(ts, j, "/") && !cut_tk_is(ts, j, "//") && !cut_tk_is(ts, j, "%") && !cut_tk_is(ts, j, "**"))
            return 1;
        for (size_t k = 0; k < CUT_ARRAY_LEN(words); k++)
            if (cut_tk_is(ts, j, words[k]))
                return 1;
    }
    return 0;
}

/* Whether number token i is 1 (1, 1.0, 1., 1e0). */
static int is_one(const cut_toks *ts, int i)
{
    const cut_tok *t = &ts->t[i];
    char buf[32], *end;
    if (t->kind != CUT_TK_NUM || t->end - t->start >= (int)sizeof buf)
        return 0;
    snprintf(buf, sizeof buf, "%.*s", t->end - t->start, ts->src + t->start);
    return strtod(buf, &end) == 1.0 && *end == '\0';
}

/* The single positional argument of the call open..close: its first token (last in *b), or -1. */
static int single_arg(const cut_toks *ts, int open, int close, int *b)
{
    int a[MAX_ARGS], bb[MAX_ARGS];
    if (close < 0 || call_args(ts, open, close, a, bb) != 1 || arg_kw(ts, a[0], bb[0]) >= 0)
        return -1;
    *b = bb[0];
    return a[0];
}

/* 1.0 / tl.sqrt(x) at token i -> tl.rsqrt(x); the last token rewritten, or -1. A left operand that would bind the 1.0
 * (x / 1.0 / tl.sqrt(y), x ** 1.0 / ...) is left alone. */
static int rsqrt_at(const cut_toks *ts, cut_edits *es, int i)
{
    static const char *const tight[] = {"/", "//", "%", "**", "@", "."};
    if (!is_one(ts, i) || !cut_tk_is(ts, i + 1, "/"))
        return -1;
    for (size_t k = 0; k < CUT_ARRAY_LEN(tight); k++)
        if (cut_tk_is(ts, i - 1, tight[k]))
            return -1;
    const int open = tl_call(ts, i + 2, "sqrt", 1), close = open > 0 ? cut_tk_match(ts, open) : -1;
    int b;
    const int a = open > 0 ? single_arg(ts, open, close, &b) : -1;
    if (a < 0)
        return -1;
    cut_ed_add(es, ts->t[i].start, ts->t[close].end, "%s(%.*s)", open - (i + 2) == 5 ? "tl.math.rsqrt" : "tl.rsqrt",
               CUT_TK_SPAN(ts, a, b));
    return close;
}

/* 1.0 / tl.sqrt(x) -> tl.rsqrt(x); tl.exp(x) -> tl.exp2(x * log2(e)). */
static void fast_math_fn(const cut_toks *ts, const jit_fn *fn, cut_edits *es, const void *ctx)
{
    (void)ctx;
    for (int i = fn->body; i < fn->end; i++) {
        const int r = rsqrt_at(ts, es, i);
        if (r > 0) {
            i = r;
            continue;
        }
        const int open = tl_call(ts, i, "exp", 1), close = open > 0 ? cut_tk_match(ts, open) : -1;
        int b;
        const int a = open > 0 ? single_arg(ts, open, close, &b) : -1;
        if (a < 0)
            continue;
        const int p = needs_parens(ts, a, b);
        cut_ed_add(es, ts->t[open - 1].start, ts->t[open - 1].end, "exp2");
        cut_ed_add(es, ts->t[a].start, ts->t[b].end, "%s%.*s%s * " LOG2E, p ? "(" : "", CUT_TK_SPAN(ts, a, b),
                   p ? ")" : "");
        i = close;
    }
}

char *cut_rule_triton_fast_math(const char *src)
{
    return rewrite_fns(src, fast_math_fn, NULL);
}

/* ---- avoid_atomics_reduce ---- */

typedef struct names {
    int n;
    int tok[MAX_NAMES]; /* tokens of assignment targets that hold blocks */
} names;

static int name_in(const cut_toks *ts, const names *bn, int i)
{
    for (int k = 0; k < bn->n; k++)
        if (cut_tk_same(ts, bn->tok[k], i))
            return 1;
    return 0;
}

/* The "(" of a call at i that makes a block (tl.arange, tl.zeros, ...), or -1. */
static int block_maker(const cut_toks *ts, int i)
{
    static const char *const makers[] = {"arange", "zeros", "full", "zeros_like", "full_like", "make_block_ptr",
                                         "rand", "randn", "randint", "cat", "join"};
    for (size_t k = 0; k < CUT_ARRAY_LEN(makers); k++) {
        const int open = tl_call(ts, i, makers[k], 0);
        if (open > 0)
            return open;
    }
    return -1;
}

/* The "(" of a reduction at i (its result counted a scalar: exact for 1-D blocks and axis=None), or -1. */
static int reduction(const cut_toks *ts, int i)
{
    static const char *const reds[] = {"sum", "max", "min", "reduce", "argmax", "argmin", "xor_sum"};
    for (size_t k = 0; k < CUT_ARRAY_LEN(reds); k++) {
        const int open = tl_call(ts, i, reds[k], 0);
        if (open > 0)
            return open;
    }
    return -1;
}

/* Whether tokens [a, b] hold a block: a block-making call or a block name outside reductions. */
static int has_block(const cut_toks *ts, const names *bn, int a, int b)
{
    for (int j = a; j <= b; j++) {
        const int r = reduction(ts, j);
        if (r > 0) {
            j = cut_tk_match(ts, r);
            if (j < 0)
                return 0;
            continue;
        }
        if (block_maker(ts, j) > 0)
            return 1;
        if (ts->t[j].kind == CUT_TK_IDENT && !cut_tk_is(ts, j - 1, ".") && !cut_tk_is(ts, j + 1, "=") &&
            name_in(ts, bn, j))
            return 1;
    }
    return 0;
}

/* The names of fn's assignments that hold blocks (to a fixed point: a later block assignment makes a name a block). */
static void block_names(const cut_toks *ts, const jit_fn *fn, names *bn)
{
    static const char *const assign[] = {"=", "+=", "-=", "*=", "/="};
    bn->n = 0;
    for (int changed = 1, pass = 0; changed && pass < 8; pass++) {
        changed = 0;
        for (int i = fn->body; i < fn->end && bn->n < MAX_NAMES; i++) {
            int is_assign = 0;
            for (size_t k = 0; k < CUT_ARRAY_LEN(assign); k++)
                is_assign |= cut_tk_is(ts, i + 1, assign[k]);
            if (!ts->t[i].bol || ts->t[i].kind != CUT_TK_IDENT || !is_assign || name_in(ts, bn, i))
                continue;
            if (has_block(ts, bn, i + 2, stmt_end(ts, i, fn->end)))
                bn->tok[bn->n++] = i, changed = 1;
        }
    }
}

/* Whether term [s, e] of a pointer sum is zero broadcast to a block: tl.zeros_like(..), tl.zeros(..), 0 * X, X * 0. */
static int zero_term(const cut_toks *ts, int s, int e)
{
    const int open = tl_call(ts, s, "zeros_like", 0) > 0 ? tl_call(ts, s, "zeros_like", 0) : tl_call(ts, s, "zeros", 0);
    if (open > 0)
        return cut_tk_match(ts, open) == e;
    return is_product(ts, s, e) && e > s + 1 &&
           ((cut_tk_is(ts, s, "0") && cut_tk_is(ts, s + 1, "*")) || (cut_tk_is(ts, e, "0") && cut_tk_is(ts, e - 1, "*")));
}

/* The address P of pointer tokens [a, b] when they are one address: its scalar terms joined by " + " into buf (the
 * zero broadcasts dropped). *broadcast: whether there was one. 0 on success, -1 when a term holds a block. */
static int one_address(const cut_toks *ts, const names *bn, int a, int b, char *buf, size_t n, int *broadcast)
{
    size_t len = 0;
    int from = a;
    buf[0] = '\0';
    *broadcast = 0;
    for (int j = a; j <= b + 1; j++) {
        if (j <= b && is_open(ts, j)) {
            if ((j = cut_tk_match(ts, j)) < 0 || j > b)
                return -1;
            continue;
        }
        if (j <= b && cut_tk_is(ts, j, "-"))
            return -1;
        if (j <= b && !cut_tk_is(ts, j, "+"))
            continue;
        if (j == from)
            return -1;
        if (zero_term(ts, from, j - 1)) {
            *broadcast = 1;
        } else if (has_block(ts, bn, from, j - 1)) {
            return -1;
        } else {
            const int w = snprintf(buf + len, n - len, "%s%.*s", len ? " + " : "", CUT_TK_SPAN(ts, from, j - 1));
            if (w < 0 || (size_t)w >= n - len)
                return -1;
            len += (size_t)w;
        }
        from = j + 1;
    }
    return len ? 0 : -1;
}

/* tl.atomic_add(P, V, ...) as a statement at token i rewritten to one atomic of V's sum; 0, or -1 when it does not
 * apply. */
static int atomic_at(const cut_toks *ts, const names *bn, cut_edits *es, int i, int fn_end)
{
    const int open = tl_call(ts, i, "atomic_add", 0), close = open > 0 ? cut_tk_match(ts, open) : -1;
    int a[MAX_ARGS], b[MAX_ARGS];
    const int n = close > 0 && ts->t[i].bol && stmt_end(ts, i, fn_end) == close ? call_args(ts, open, close, a, b)
                                                                                  : -1;
    int pos = 0, mask = -1, broadcast;
    while (pos < n && arg_kw(ts, a[pos], b[pos]) < 0)
        pos++;
    for (int k = pos; k < n; k++)
        if (!cut_tk_is(ts, a[k], "mask") && !cut_tk_is(ts, a[k], "sem") && !cut_tk_is(ts, a[k], "scope"))
            return -1; /* val=, pointer=: not read */
    char addr[1024];
    if (pos < 2 || pos > 3 || !has_block(ts, bn, a[1], b[1]) ||
        one_address(ts, bn, a[0], b[0], addr, sizeof addr, &broadcast) != 0)
        return -1;
    if (pos == 3)
        mask = a[2];
    else if (find_kw(ts, a, b, n, "mask") >= 0)
        mask = a[find_kw(ts, a, b, n, "mask")] + 2;
    const int mask_end = pos == 3 ? b[2] : mask >= 0 ? b[find_kw(ts, a, b, n, "mask")] : -1;
    cut_buf t;
    cut_buf_init(&t);
    cut_buf_printf(&t, "%s, tl.sum(", addr);
    if (mask >= 0)
        cut_buf_printf(&t, "tl.where(%.*s, %.*s, 0)", CUT_TK_SPAN(ts, mask, mask_end), CUT_TK_SPAN(ts, a[1], b[1]));
    else
        cut_buf_printf(&t, "%.*s", CUT_TK_SPAN(ts, a[1], b[1]));
    cut_buf_printf(&t, ", axis=None)");
    for (int k = pos; k < n; k++)
        if (!cut_tk_is(ts, a[k], "mask"))
            cut_buf_printf(&t, ", %.*s", CUT_TK_SPAN(ts, a[k], b[k]));
    cut_ed_add(es, ts->t[a[0]].start, ts->t[b[n - 1]].end, "%s", t.data);
    cut_buf_free(&t);
    return 0;
}

static void avoid_atomics_fn(const cut_toks *ts, const jit_fn *fn, cut_edits *es, const void *ctx)
{
    (void)ctx;
    names *bn = cut_xmalloc(sizeof *bn);
    block_names(ts, fn, bn);
    for (int i = fn->body; i < fn->end; i++)
        atomic_at(ts, bn, es, i, fn->end);
    free(bn);
}

char *cut_rule_triton_avoid_atomics(const char *src)
{
    return rewrite_fns(src, avoid_atomics_fn, NULL);
}

/* ---- grouped_gemm_colmajor ---- */

/* The axis of the tl.program_id call whose "(" is open (0, 1, 2), or -1. */
static int program_axis(const cut_toks *ts, int open)
{
    const int close = cut_tk_match(ts, open);
    int b;
    const int a = close > 0 ? single_arg(ts, open, close, &b) : -1;
    int at = a;
    if (a < 0) { /* program_id(axis=N) */
        if (close != open + 4 || !cut_tk_is(ts, open + 1, "axis") || !cut_tk_is(ts, open + 2, "="))
            return -1;
        at = b = open + 3;
    }
    if (at != b)
        return -1;
    return cut_tk_is(ts, at, "0") ? 0 : cut_tk_is(ts, at, "1") ? 1 : cut_tk_is(ts, at, "2") ? 2 : -1;
}

/* The grouped raster's prologue (Triton's grouped ordering): program ids in launch order (axis 0 fastest), then
 * groups of GROUP_ROWS rows of programs, each group walked column by column. A bijection of the same 2-D grid. */
static void grouped_prologue(cut_edits *es, int at, const char *indent, int c)
{
    static const char *const lines[] = {
        "# cutune: grouped raster over the same grid, groups of %d rows of programs (L2 reuse)",
        "_cut_npm = tl.num_programs(0)",
        "_cut_npn = tl.num_programs(1)",
        "_cut_pid = tl.program_id(1) * _cut_npm + tl.program_id(0)",
        "_cut_group = %d * _cut_npn",
        "_cut_first = (_cut_pid // _cut_group) * %d",
        "_cut_rows = tl.minimum(_cut_npm - _cut_first, %d)",
        "_cut_pid_m = _cut_first + (_cut_pid %% _cut_group) %% _cut_rows",
        "_cut_pid_n = (_cut_pid %% _cut_group) // _cut_rows",
    };
    cut_buf b;
    cut_buf_init(&b);
    for (size_t k = 0; k < CUT_ARRAY_LEN(lines); k++) {
        cut_buf_printf(&b, "%.*s", c, indent);
        cut_buf_printf(&b, lines[k], GROUP_ROWS);
        cut_buf_printf(&b, "\n");
    }
    cut_ed_add(es, at, at, "%s", b.data);
    cut_buf_free(&b);
}

static void grouped_fn(const cut_toks *ts, const jit_fn *fn, cut_edits *es, const void *ctx)
{
    (void)ctx;
    int seen[3] = {0, 0, 0}, done = 0;
    for (int i = fn->body; i < fn->end; i++) {
        const int open = tl_call(ts, i, "program_id", 0), axis = open > 0 ? program_axis(ts, open) : -1;
        done |= cut_tk_is(ts, i, "_cut_pid_m");
        if (axis >= 0)
            seen[axis] = 1;
    }
    if (!seen[0] || !seen[1] || done)
        return;
    const int c = col(ts, fn->body), at = ts->t[fn->body].start - c;
    grouped_prologue(es, at, ts->src + at, c);
    for (int i = fn->body; i < fn->end; i++) {
        const int open = tl_call(ts, i, "program_id", 0), axis = open > 0 ? program_axis(ts, open) : -1;
        if (axis == 0 || axis == 1)
            cut_ed_add(es, ts->t[i].start, ts->t[cut_tk_match(ts, open)].end, "%s",
                       axis == 0 ? "_cut_pid_m" : "_cut_pid_n");
    }
}

char *cut_rule_triton_grouped(const char *src)
{
    return rewrite_fns(src, grouped_fn, NULL);
}

/* ---- the proposals ---- */

static char *dot_tf32x3(const char *src) { return cut_rule_triton_dot_precision(src, "tf32x3"); }
static char *dot_tf32(const char *src) { return cut_rule_triton_dot_precision(src, "tf32"); }

int cut_rules_triton_propose(const char *src, cut_rule_emit emit, void *ctx)
{
    static const struct {
        cut_move move;
        const char *label;
        double bonus; /* added to the rules' gain for the move */
        char *(*rewrite)(const char *src);
    } rules[] = {
        {CUT_MV_AVOID_ATOMICS, "one tl.atomic_add of the block's sum", 0, cut_rule_triton_avoid_atomics},
        {CUT_MV_MMA, "tl.dot at input_precision tf32x3", -0.2, dot_tf32x3},
        {CUT_MV_MMA, "tl.dot at input_precision tf32", 0, dot_tf32},
        {CUT_MV_VECTORIZE, "tl.multiple_of / tl.max_contiguous hints on block offsets", 0, cut_rule_triton_hints},
        {CUT_MV_MATH_FUSION, "tl.exp2 and tl.rsqrt fast math", 0, cut_rule_triton_fast_math},
        {CUT_MV_CACHE_CG, "tl.load with cache_modifier=\".cg\"", 0, cut_rule_triton_cache_cg},
        {CUT_MV_CACHE_CG, "tl.load with eviction_policy=\"evict_first\"", 0, cut_rule_triton_evict_first},
        {CUT_MV_GROUPED, "grouped program-id raster (groups of 8 rows)", 0, cut_rule_triton_grouped},
    };
    for (size_t r = 0; r < CUT_ARRAY_LEN(rules); r++)
        if (emit(ctx, rules[r].move, rules[r].label, rules[r].bonus, rules[r].rewrite(src)) != 0)
            return -1;
    return 0;
}
