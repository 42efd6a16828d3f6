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
 * The text rewrites work on tokens (rtext.c; comments, strings and preprocessor lines are never touched) and are
 * validated by the measurement like any candidate: a rewrite that is wrong for a kernel fails its check and is
 * recorded. A Triton state gets the tunable moves, then the Python rewrites of rules_triton.c (listed there).
 * The spec's restrictions hold for every proposal (propose_text checks each): a tunable change that breaks one is
 * proposed together with the nearest change of one other tunable that mends it ("BX 16 -> 32, BY 16 -> 32"; a
 * configuration proposed once per state), or not at all. */
#include "cutune/kstate.h"
#include "cutune/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtext.h"

/* The parameter list of the __global__ function whose keyword is token i: the index of its "(" (its ")" is
 * cut_tk_match of that), or -1 (a declaration without one). */
static int global_params(const cut_toks *ts, int i)
{
    int j = i + 1;
    while (j < ts->n && !cut_tk_is(ts, j, "(") && !cut_tk_is(ts, j, ";") && !cut_tk_is(ts, j, "{"))
        j++;
    return cut_tk_is(ts, j, "(") ? j : -1;
}

/* ---- cache_policy_cg ---- */

/* __ldcg is a global-memory load: on a local or shared address the GPU faults (CUDA_ERROR_INVALID_ADDRESS_SPACE).
 * So only pointers known to point into global memory are rewritten: `const T *p` parameters of __global__
 * functions, and locals `const T *q = p + ...` initialised from one of those by arithmetic (no `&`). A name that is
 * also declared any other way (a __device__ function's parameter, `const T *v = reinterpret_cast<..>(&t)`, a local
 * without an initialiser) is left alone. */

typedef struct ptr_names {
    int n;
    int tok[64];    /* the declared name's token */
    int global[64]; /* 1: points into global memory */
} ptr_names;

/* 1 when tok i is the name of a declaration classified global, 0 otherwise; -1 when the name is declared another
 * way too. */
static int name_global(const cut_toks *ts, const ptr_names *pn, int i)
{
    int seen = 0;
    for (int k = 0; k < pn->n; k++)
        if (cut_tk_same(ts, i, pn->tok[k])) {
            if (!pn->global[k])
                return -1;
            seen = 1;
        }
    return seen;
}

/* Whether tokens [a, b) are an initialiser or address computed from a global pointer: no `&`, and the first
 * identifier (casts and parentheses skipped) names one. */
static int derived_from_global(const cut_toks *ts, const ptr_names *pn, int a, int b)
{
    int first = -1;
    for (int i = a; i < b; i++) {
        if (cut_tk_is(ts, i, "&"))
            return 0;
        if (first < 0 && ts->t[i].kind == CUT_TK_IDENT)
            first = i;
    }
    return first >= 0 && name_global(ts, pn, first) == 1;
}

/* End of a declaration's initialiser starting at i: the `,` or `;` at depth 0. */
static int init_end(const cut_toks *ts, int i)
{
    int depth = 0;
    for (; i < ts->n; i++) {
        if (cut_tk_is(ts, i, "(") || cut_tk_is(ts, i, "[") || cut_tk_is(ts, i, "{"))
            depth++;
        else if (cut_tk_is(ts, i, ")") || cut_tk_is(ts, i, "]") || cut_tk_is(ts, i, "}"))
            depth--;
        else if (depth == 0 && (cut_tk_is(ts, i, ",") || cut_tk_is(ts, i, ";")))
            return i;
        if (depth < 0)
            return i;
    }
    return ts->n;
}

/* Every `const T *name` declaration in order, each classified. */
static void const_pointer_names(const cut_toks *ts, ptr_names *pn)
{
    int kparams[32][2], nk = 0; /* parameter lists of __global__ functions, as token ranges */
    for (int i = 0; i < ts->n && nk < 32; i++)
        if (cut_tk_is(ts, i, "__global__")) {
            const int j = global_params(ts, i), close = j >= 0 ? cut_tk_match(ts, j) : -1;
            if (close > 0) {
                kparams[nk][0] = j;
                kparams[nk++][1] = close;
            }
        }
    pn->n = 0;
    for (int i = 0; i + 2 < ts->n && pn->n < (int)CUT_ARRAY_LEN(pn->tok); i++) {
        if (!cut_tk_is(ts, i, "const"))
            continue;
        int j = i + 1;
        while (j < ts->n && ts->t[j].kind == CUT_TK_IDENT && !cut_tk_is(ts, j + 0, "__restrict__"))
            j++;
        if (j == i + 1 || !cut_tk_is(ts, j, "*"))
            continue;
        j++;
        while (cut_tk_is(ts, j, "__restrict__") || cut_tk_is(ts, j, "const"))
            j++;
        if (j >= ts->n || ts->t[j].kind != CUT_TK_IDENT || cut_tk_is(ts, j + 1, "("))
            continue;
        int global = 0;
        for (int k = 0; k < nk; k++)
            global |= j > kparams[k][0] && j < kparams[k][1];
        if (!global && cut_tk_is(ts, j + 1, "="))
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
    cut_toks ts;
    cut_tk_c(src, &ts);
    ptr_names pn;
    const_pointer_names(&ts, &pn);
    cut_edits es = {0};
    for (int i = 1; i + 1 < ts.n; i++) {
        /* p[i] of a global const pointer, not already an operand of & (as in __ldcg(&p[i])) */
        if (ts.t[i].kind == CUT_TK_IDENT && cut_tk_is(&ts, i + 1, "[") && !cut_tk_is(&ts, i - 1, "&") &&
            !cut_tk_is(&ts, i - 1, ".") && !cut_tk_is(&ts, i - 1, "->") && !is_decl(&pn, i) && name_global(&ts, &pn, i) == 1) {
            const int close = cut_tk_match(&ts, i + 1);
            if (close > 0 && !cut_tk_is(&ts, close + 1, "[") && !cut_tk_is(&ts, close + 1, "=")) {
                cut_ed_add(&es, ts.t[i].start, ts.t[close].end, "__ldcg(&%.*s)", CUT_TK_SPAN(&ts, i, close));
                i = close;
            }
        }
        /* *reinterpret_cast<const T *>(e) as an rvalue, e an address computed from a global const pointer */
        if (cut_tk_is(&ts, i, "*") && cut_tk_is(&ts, i + 1, "reinterpret_cast") && cut_tk_is(&ts, i + 2, "<") &&
            cut_tk_is(&ts, i + 3, "const") && (cut_tk_is(&ts, i - 1, "=") || cut_tk_is(&ts, i - 1, "(") || cut_tk_is(&ts, i - 1, ","))) {
            int j = i + 3;
            while (j < ts.n && !cut_tk_is(&ts, j, ">"))
                j++;
            const int close = cut_tk_is(&ts, j + 1, "(") ? cut_tk_match(&ts, j + 1) : -1;
            if (close > 0 && !cut_tk_is(&ts, close + 1, "=") && derived_from_global(&ts, &pn, j + 2, close)) {
                cut_ed_add(&es, ts.t[i].start, ts.t[close].end, "__ldcg(%.*s)", CUT_TK_SPAN(&ts, i + 1, close));
                i = close;
            }
        }
    }
    free(ts.t);
    return cut_ed_apply(src, &es);
}

/* ---- softmax_math_fusion ---- */

char *cut_rule_math_fusion(const char *src)
{
    static const char *const fast[][2] = {{"expf", "__expf"}, {"logf", "__logf"}, {"sinf", "__sinf"},
                                          {"cosf", "__cosf"}, {"powf", "__powf"}};
    cut_toks ts;
    cut_tk_c(src, &ts);
    cut_edits es = {0};
    for (int i = 0; i < ts.n; i++) {
        for (size_t k = 0; k < CUT_ARRAY_LEN(fast); k++)
            if (cut_tk_is(&ts, i, fast[k][0]) && cut_tk_is(&ts, i + 1, "("))
                cut_ed_add(&es, ts.t[i].start, ts.t[i].end, "%s", fast[k][1]);
        /* 1.0f / sqrtf(x) -> rsqrtf(x) */
        if (ts.t[i].kind == CUT_TK_NUM && cut_tk_is(&ts, i + 1, "/") && cut_tk_is(&ts, i + 2, "sqrtf") && cut_tk_is(&ts, i + 3, "(") &&
            (cut_tk_is(&ts, i, "1.0f") || cut_tk_is(&ts, i, "1.f") || cut_tk_is(&ts, i, "1.0"))) {
            const int close = cut_tk_match(&ts, i + 3);
            if (close > 0) {
                cut_ed_add(&es, ts.t[i].start, ts.t[close].end, "rsqrtf%.*s", CUT_TK_SPAN(&ts, i + 3, close));
                i = close;
            }
        }
    }
    free(ts.t);
    return cut_ed_apply(src, &es);
}

/* ---- avoid_atomics_reduce ---- */

#define LINEAR_TID "((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x)"
#define WARP_SUM "for (int _cut_o = 16; _cut_o > 0; _cut_o >>= 1) _cut_v += __shfl_down_sync(0xffffffffu, _cut_v, _cut_o);"

char *cut_rule_avoid_atomics(const char *src, int block_level)
{
    cut_toks ts;
    cut_tk_c(src, &ts);
    cut_edits es = {0};
    for (int i = 1; i + 1 < ts.n; i++) {
        if (!cut_tk_is(&ts, i, "atomicAdd") || !cut_tk_is(&ts, i + 1, "(") ||
            !(cut_tk_is(&ts, i - 1, ";") || cut_tk_is(&ts, i - 1, "{") || cut_tk_is(&ts, i - 1, "}")))
            continue;
        const int close = cut_tk_match(&ts, i + 1);
        if (close < 0 || !cut_tk_is(&ts, close + 1, ";"))
            continue;
        int comma = -1, depth = 0;
        for (int j = i + 2; j < close; j++) {
            depth += cut_tk_is(&ts, j, "(") || cut_tk_is(&ts, j, "[") ? 1 : cut_tk_is(&ts, j, ")") || cut_tk_is(&ts, j, "]") ? -1 : 0;
            if (depth == 0 && cut_tk_is(&ts, j, ","))
                comma = j;
        }
        if (comma < 0 || comma == i + 2 || comma + 1 == close || cut_tk_is(&ts, comma + 1, "_cut_v"))
            continue; /* malformed, or already aggregated */
        if (!block_level)
            cut_ed_add(&es, ts.t[i].start, ts.t[close + 1].end,
                   "{ /* cutune: warp-aggregated atomic */\n"
                   "        auto _cut_v = (%.*s);\n"
                   "        " WARP_SUM "\n"
                   "        if ((" LINEAR_TID " & 31u) == 0) atomicAdd(%.*s, _cut_v); }",
                   CUT_TK_SPAN(&ts, comma + 1, close - 1), CUT_TK_SPAN(&ts, i + 2, comma - 1));
        else
            cut_ed_add(&es, ts.t[i].start, ts.t[close + 1].end,
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
                   CUT_TK_SPAN(&ts, comma + 1, close - 1), CUT_TK_SPAN(&ts, i + 2, comma - 1));
        i = close + 1;
    }
    free(ts.t);
    return cut_ed_apply(src, &es);
}

/* ---- pad_tail_and_mask: 2-D shared arrays ---- */

char *cut_rule_pad_smem(const char *src)
{
    cut_toks ts;
    cut_tk_c(src, &ts);
    cut_edits es = {0};
    for (int i = 0; i < ts.n; i++) {
        if (!cut_tk_is(&ts, i, "__shared__"))
            continue;
        int j = i + 1;
        while (j < ts.n && ts.t[j].kind == CUT_TK_IDENT && !cut_tk_is(&ts, j + 1, "["))
            j++;
        if (j >= ts.n || !cut_tk_is(&ts, j + 1, "["))
            continue;
        const int c1 = cut_tk_match(&ts, j + 1);
        if (c1 < 0 || !cut_tk_is(&ts, c1 + 1, "["))
            continue;
        const int c2 = cut_tk_match(&ts, c1 + 1);
        if (c2 < 0 || cut_tk_is(&ts, c2 + 1, "[") || (cut_tk_is(&ts, c2 - 2, "+") && cut_tk_is(&ts, c2 - 1, "1")))
            continue; /* 3-D, or padded already */
        cut_ed_add(&es, ts.t[c1 + 1].start, ts.t[c2].end, "[%.*s + 1]", CUT_TK_SPAN(&ts, c1 + 2, c2 - 1));
        i = c2;
    }
    free(ts.t);
    return cut_ed_apply(src, &es);
}

/* ---- grouped_gemm_colmajor ---- */

#define GROUP_ROWS 8

char *cut_rule_grouped_raster(const char *src)
{
    cut_toks ts;
    cut_tk_c(src, &ts);
    cut_edits es = {0};
    for (int i = 0; i < ts.n; i++) {
        if (!cut_tk_is(&ts, i, "__global__"))
            continue;
        const int j = global_params(&ts, i), pclose = j >= 0 ? cut_tk_match(&ts, j) : -1;
        if (pclose < 0 || !cut_tk_is(&ts, pclose + 1, "{"))
            continue;
        const int body = pclose + 1, bclose = cut_tk_match(&ts, body);
        if (bclose < 0)
            break;
        int has_x = 0, has_y = 0, done = 0;
        for (int k = body; k < bclose; k++) {
            done |= cut_tk_is(&ts, k, "_cut_bx");
            if (cut_tk_is(&ts, k, "blockIdx") && cut_tk_is(&ts, k + 1, ".")) {
                has_x |= cut_tk_is(&ts, k + 2, "x");
                has_y |= cut_tk_is(&ts, k + 2, "y");
            }
        }
        if (has_x && has_y && !done) {
            cut_ed_add(&es, ts.t[body].end, ts.t[body].end,
                   "\n    /* cutune: grouped column-major raster, groups of %d block rows (L2 reuse) */\n"
                   "    const unsigned _cut_pid = blockIdx.y * gridDim.x + blockIdx.x;\n"
                   "    const unsigned _cut_in_group = %uu * gridDim.x;\n"
                   "    const unsigned _cut_first = (_cut_pid / _cut_in_group) * %uu;\n"
                   "    const unsigned _cut_rows = min(gridDim.y - _cut_first, %uu);\n"
                   "    const unsigned _cut_by = _cut_first + (_cut_pid %% _cut_in_group) %% _cut_rows;\n"
                   "    const unsigned _cut_bx = (_cut_pid %% _cut_in_group) / _cut_rows;",
                   GROUP_ROWS, GROUP_ROWS, GROUP_ROWS, GROUP_ROWS);
            for (int k = body; k < bclose; k++)
                if (cut_tk_is(&ts, k, "blockIdx") && cut_tk_is(&ts, k + 1, ".") && (cut_tk_is(&ts, k + 2, "x") || cut_tk_is(&ts, k + 2, "y")))
                    cut_ed_add(&es, ts.t[k].start, ts.t[k + 2].end, "%s", cut_tk_is(&ts, k + 2, "x") ? "_cut_bx" : "_cut_by");
        }
        i = bclose;
    }
    free(ts.t);
    return cut_ed_apply(src, &es);
}

/* ---- enable_async_pipeline: a marked staging copy ---- */

#define STAGE_MARK "cutune: stage"

/* The token after the subscripts [..][..] that start at token i, or -1 when one of them is never closed. */
static int past_subscripts(const cut_toks *ts, int i)
{
    while (cut_tk_is(ts, i, "[")) {
        const int close = cut_tk_match(ts, i);
        if (close < 0)
            return -1;
        i = close + 1;
    }
    return i;
}

char *cut_rule_async_stage(const char *src)
{
    cut_toks ts;
    cut_tk_c(src, &ts);
    cut_edits es = {0};
    for (const char *m = strstr(src, STAGE_MARK); m; m = strstr(m + 1, STAGE_MARK)) {
        const char *nl = strchr(m, '\n');
        if (!nl)
            break;
        const int at = (int)(nl - src);
        int i = 0;
        while (i < ts.n && ts.t[i].start < at)
            i++;
        /* DST[..]..[..] = SRC[..]..[..]; */
        if (i >= ts.n || ts.t[i].kind != CUT_TK_IDENT || !cut_tk_is(&ts, i + 1, "["))
            continue;
        const int j = past_subscripts(&ts, i + 1);
        if (j < 0 || !cut_tk_is(&ts, j, "=") || j + 1 >= ts.n || ts.t[j + 1].kind != CUT_TK_IDENT ||
            !cut_tk_is(&ts, j + 2, "["))
            continue;
        const int k = past_subscripts(&ts, j + 2);
        if (k < 0 || !cut_tk_is(&ts, k, ";"))
            continue;
        int sync = k + 1;
        while (sync < ts.n && !cut_tk_is(&ts, sync, "__syncthreads"))
            sync++;
        if (sync >= ts.n)
            continue;
        cut_ed_add(&es, ts.t[i].start, ts.t[k].end,
               "asm volatile(\"cp.async.ca.shared.global [%%0], [%%1], %%2;\\n\" :: "
               "\"r\"((unsigned)__cvta_generic_to_shared(&%.*s)), \"l\"(&%.*s), \"n\"(sizeof(%.*s)));",
               CUT_TK_SPAN(&ts, i, j - 1), CUT_TK_SPAN(&ts, j + 1, k - 1), CUT_TK_SPAN(&ts, j + 1, k - 1));
        cut_ed_add(&es, ts.t[sync].start, ts.t[sync].start, "asm volatile(\"cp.async.wait_all;\\n\" ::: \"memory\");\n    ");
    }
    free(ts.t);
    return cut_ed_apply(src, &es);
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

/* propose_text as the Triton rules' emit (rtext.h): the move's gain plus the rule's bonus. */
static int emit_text(void *ctx, cut_move m, const char *label, double bonus, char *new_src)
{
    return propose_text(ctx, m, label, rule_gain(m, 1) + bonus, new_src);
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
    /* a Triton state: its tunables (block sizes, warps, stages), then the Python rewrites (rules_triton.c) */
    if (k->lang == CUT_KS_TRITON)
        rc = propose_tunables(g) != 0 || cut_rules_triton_propose(src, emit_text, g) != 0 ? -1 : 0;
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
