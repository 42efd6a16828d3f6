/* cutune — a kernel spec's entry point in its source (include/cutune/kspec.h): a CUDA entry is a __global__ function
 * whose parameter types must agree with the spec's dtypes where they can be read; a Triton entry is a @triton.jit
 * function. The parser's part (internal: kentry.h). */
#include "cutune/kspec.h"
#include "ops/kernel/kentry.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* The entry must be defined in the source: "__global__" before "entry(" with only a return type and qualifiers in
 * between. */
/* Where entry's parameter list starts in source ("(" of a __global__ definition), NULL when not found. */
static const char *params_of(const char *source, const char *entry)
{
    const size_t n = strlen(entry);
    for (const char *p = strstr(source, entry); p; p = strstr(p + 1, entry)) {
        if (p > source && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
            continue;
        const char *q = p + n;
        while (isspace((unsigned char)*q))
            q++;
        if (*q != '(')
            continue;
        const char *g = p;
        int lines = 0;
        while (g > source && lines < 3 && (size_t)(p - g) < 200) {
            g--;
            lines += *g == '\n' || *g == ';' || *g == '}';
        }
        char head[256];
        snprintf(head, sizeof head, "%.*s", (int)(p - g), g);
        if (strstr(head, "__global__"))
            return q;
    }
    return NULL;
}

static int check_entry_in(const char *source, const char *entry, const char *field, cut_err *e)
{
    if (params_of(source, entry))
        return 0;
    return cut_err_set(e, "%sentry: no __global__ function '%s' defined in the source", field, entry);
}

/* A Triton entry: "def ENTRY(" at the start of a line, the decorator "@triton.jit" (or "@triton.jit(...)") on one of
 * the lines just above it. */
static int triton_entry_in(const char *source, const char *entry, const char *field, cut_err *e)
{
    char def[CUT_KS_NAME + 8];
    snprintf(def, sizeof def, "def %s(", entry);
    for (const char *p = strstr(source, def); p; p = strstr(p + 1, def)) {
        if (p != source && p[-1] != '\n')
            continue;
        const char *from = p - source > 300 ? p - 300 : source;
        for (const char *d = strstr(from, "@triton.jit"); d && d < p; d = strstr(d + 1, "@triton.jit"))
            if (d == source || d[-1] == '\n')
                return 0;
    }
    return cut_err_set(e, "%sentry: no @triton.jit function '%s' defined in the source", field, entry);
}

int cut_ks_check_entry(const cut_kspec *k, cut_err *e)
{
    if (k->lang == CUT_KS_TRITON)
        return triton_entry_in(k->source, k->entry, "", e) != 0 ||
               (k->ref_source && triton_entry_in(k->ref_source, k->ref_entry, "reference.", e) != 0) ? -1 : 0;
    if (check_entry_in(k->source, k->entry, "", e) != 0)
        return -1;
    return k->ref_source ? check_entry_in(k->ref_source, k->ref_entry, "reference.", e) : 0;
}

/* ---- the kernel's parameter types against the spec's dtypes ---- */

/* The element type a C type names ("float", "const double", "__half", "int64_t", ...), spaces and qualifiers
 * removed; -1 for a type it does not know (a template parameter, a vector type, a typedef). */
static int elem_of_type(const char *t)
{
    static const struct {
        const char *name;
        cut_elem d;
    } known[] = {{"float", CUT_EL_F32}, {"double", CUT_EL_F64}, {"__half", CUT_EL_F16}, {"half", CUT_EL_F16},
                 {"__nv_bfloat16", CUT_EL_BF16}, {"nv_bfloat16", CUT_EL_BF16}, {"int", CUT_EL_I32},
                 {"int32_t", CUT_EL_I32}, {"signedint", CUT_EL_I32}, {"longlong", CUT_EL_I64},
                 {"longlongint", CUT_EL_I64}, {"int64_t", CUT_EL_I64}, {"unsignedchar", CUT_EL_U8},
                 {"uint8_t", CUT_EL_U8}};
    for (size_t i = 0; i < CUT_ARRAY_LEN(known); i++)
        if (!strcmp(t, known[i].name))
            return (int)known[i].d;
    return -1;
}

/* Parameter text p (n bytes) -> its base type with qualifiers and spaces removed into base, 1 if it is a pointer. */
static int param_base(const char *p, size_t n, char *base, size_t bn)
{
    char words[8][64];
    int nw = 0, ptr = 0;
    size_t i = 0;
    while (i < n && nw < 8) {
        while (i < n && (isspace((unsigned char)p[i]) || p[i] == '*' || p[i] == '&')) {
            ptr |= p[i] == '*';
            i++;
        }
        size_t j = i;
        while (j < n && (isalnum((unsigned char)p[j]) || p[j] == '_'))
            j++;
        if (j == i) {
            if (i < n && !isspace((unsigned char)p[i]) && p[i] != '*' && p[i] != '&')
                return -1; /* brackets, templates, default values: not a plain declaration */
            continue;
        }
        snprintf(words[nw++], sizeof words[0], "%.*s", (int)(j - i), p + i);
        i = j;
    }
    base[0] = '\0';
    for (int w = 0; w + 1 < nw; w++) { /* the last word is the parameter's name */
        if (!strcmp(words[w], "const") || !strcmp(words[w], "volatile") || !strcmp(words[w], "__restrict__") ||
            !strcmp(words[w], "restrict") || !strcmp(words[w], "__restrict"))
            continue;
        if (strlen(base) + strlen(words[w]) < bn)
            strcat(base, words[w]);
    }
    return ptr;
}

/* Each argument against the kernel's parameter where both types are known: a buffer must be a pointer to its dtype
 * (a double* output for f32 data would read or write the wrong bytes), a scalar its dtype by value. */
int cut_ks_check_param_types(const cut_kspec *k, cut_err *e)
{
    const char *q = params_of(k->source, k->entry);
    if (!q)
        return 0;
    const char *end = strchr(q, ')');
    if (!end)
        return 0;
    int a = 0;
    for (const char *p = q + 1; p <= end && a < k->nargs; a++) {
        const char *c = p;
        while (c < end && *c != ',')
            c++;
        char base[128];
        const int ptr = param_base(p, (size_t)(c - p), base, sizeof base);
        const int have = ptr < 0 ? -1 : elem_of_type(base);
        p = c + 1;
        if (have < 0)
            continue;
        int want = -1, is_buf = 0;
        for (int i = 0; i < k->ninputs; i++)
            if (!strcmp(k->inputs[i].name, k->args[a]))
                want = (int)k->inputs[i].dtype, is_buf = 1;
        for (int i = 0; i < k->noutputs; i++)
            if (!strcmp(k->outputs[i].name, k->args[a]))
                want = (int)k->outputs[i].dtype, is_buf = 1;
        for (int i = 0; i < k->nscalars; i++)
            if (!strcmp(k->scalars[i].name, k->args[a]))
                want = (int)k->scalars[i].dtype;
        if (want < 0)
            continue;
        if (is_buf != ptr || want != have)
            return cut_err_set(e, "args[%d]: '%s' is %s %s, but parameter %d of %s is %s%s", a, k->args[a],
                               is_buf ? "a buffer of" : "a scalar", cut_elem_name((cut_elem)want), a + 1, k->entry,
                               ptr ? "a pointer to " : "a ", cut_elem_name((cut_elem)have));
    }
    return 0;
}
