/* cutune — integer expressions of kernel specs (include/cutune/kspec.h): a recursive-descent evaluator with C's
 * precedence (lowest first).
 *
 *   expr   := land ('||' land)*
 *   land   := eq ('&&' eq)*
 *   eq     := rel (('==' | '!=') rel)*
 *   rel    := add (('<' | '<=' | '>' | '>=') add)*
 *   add    := term (('+' | '-') term)*
 *   term   := unary (('*' | '/' | '%') unary)*
 *   unary  := '-' unary | '!' unary | atom
 *   atom   := integer | name | name '(' expr ',' expr ')' | '(' expr ')'
 *
 * 64-bit signed arithmetic; comparisons and logical operators give 0 or 1. && and || short-circuit as in C: the
 * operand not evaluated is still parsed and its names checked, but its arithmetic cannot fail ("N > 0 && M / N > 2").
 * Overflow, division by zero and a nesting deeper than 64 are errors. */
#include "cutune/kspec.h"

#include <ctype.h>
#include <limits.h>
#include <string.h>

#define MAX_DEPTH 64

typedef struct ev {
    const char *s, *p;
    const cut_ks_var *vars;
    int nvars, depth;
    int dead; /* > 0: inside an operand that && or || does not evaluate (parsed, names checked, no arithmetic error) */
    cut_err *e;
} ev;

/* Up to n bytes of s into buf with anything but printable ASCII shown as '?' (messages stay one line). */
static void excerpt(const char *s, size_t n, char *buf)
{
    size_t i = 0;
    for (; i < n && s[i]; i++)
        buf[i] = (s[i] >= 32 && s[i] < 127) ? s[i] : '?';
    buf[i] = 0;
}

static int fail(ev *v, const char *what)
{
    char whole[84], here[16];
    excerpt(v->s, 80, whole);
    if (!*v->p)
        return cut_err_set(v->e, "expression '%s%s': %s at its end", whole, strlen(v->s) > 80 ? "..." : "", what);
    excerpt(v->p, 12, here);
    return cut_err_set(v->e, "expression '%s%s': %s at '%s' (byte %ld)", whole, strlen(v->s) > 80 ? "..." : "", what,
                       here, (long)(v->p - v->s) + 1);
}

static void skip(ev *v)
{
    while (*v->p == ' ' || *v->p == '\t')
        v->p++;
}

static int expr(ev *v, long long *out);

static int binop(ev *v, char op, long long a, long long b, long long *out)
{
    if (v->dead) {
        *out = 0;
        return 0;
    }
    switch (op) {
    case '+': if (__builtin_add_overflow(a, b, out)) return fail(v, "overflow"); return 0;
    case '-': if (__builtin_sub_overflow(a, b, out)) return fail(v, "overflow"); return 0;
    case '*': if (__builtin_mul_overflow(a, b, out)) return fail(v, "overflow"); return 0;
    default:
        if (b == 0)
            return fail(v, "division by zero");
        if (a == LLONG_MIN && b == -1)
            return fail(v, "overflow");
        *out = op == '/' ? a / b : a % b;
        return 0;
    }
}

static int call(ev *v, const char *name, size_t len, long long *out)
{
    const int is_min = len == 3 && !strncmp(name, "min", 3), is_max = len == 3 && !strncmp(name, "max", 3);
    const int is_cdiv = len == 4 && !strncmp(name, "cdiv", 4);
    if (!is_min && !is_max && !is_cdiv)
        return fail(v, "unknown function (min, max, cdiv)");
    v->p++; /* '(' */
    long long a, b;
    if (expr(v, &a) != 0)
        return -1;
    skip(v);
    if (*v->p != ',')
        return fail(v, "expected ','");
    v->p++;
    if (expr(v, &b) != 0)
        return -1;
    skip(v);
    if (*v->p != ')')
        return fail(v, "expected ')'");
    v->p++;
    if (v->dead)
        *out = 0;
    else if (is_min)
        *out = a < b ? a : b;
    else if (is_max)
        *out = a > b ? a : b;
    else {
        if (b <= 0)
            return fail(v, "cdiv by a divisor <= 0");
        long long s;
        if (__builtin_add_overflow(a, b - 1, &s))
            return fail(v, "overflow");
        *out = s / b;
    }
    return 0;
}

static int atom(ev *v, long long *out)
{
    skip(v);
    if (isdigit((unsigned char)*v->p)) {
        long long x = 0;
        while (isdigit((unsigned char)*v->p)) {
            if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, *v->p - '0', &x))
                return fail(v, "integer too large");
            v->p++;
        }
        *out = x;
        return 0;
    }
    if (isalpha((unsigned char)*v->p) || *v->p == '_') {
        const char *name = v->p;
        while (isalnum((unsigned char)*v->p) || *v->p == '_')
            v->p++;
        const size_t len = (size_t)(v->p - name);
        skip(v);
        if (*v->p == '(')
            return call(v, name, len, out);
        for (int i = 0; i < v->nvars; i++)
            if (strlen(v->vars[i].name) == len && !strncmp(v->vars[i].name, name, len)) {
                *out = v->vars[i].value;
                return 0;
            }
        v->p = name;
        return fail(v, "unknown name (not a size or tunable)");
    }
    if (*v->p == '(') {
        v->p++;
        if (expr(v, out) != 0)
            return -1;
        skip(v);
        if (*v->p != ')')
            return fail(v, "expected ')'");
        v->p++;
        return 0;
    }
    return fail(v, "expected a number, a name or '('");
}

static int unary(ev *v, long long *out)
{
    skip(v);
    const char op = *v->p;
    if (op != '-' && !(op == '!' && v->p[1] != '='))
        return atom(v, out);
    if (++v->depth > MAX_DEPTH)
        return fail(v, "nesting too deep");
    v->p++;
    long long x;
    if (unary(v, &x) != 0)
        return -1;
    v->depth--;
    if (op == '!') {
        *out = !x;
        return 0;
    }
    if (x == LLONG_MIN && !v->dead)
        return fail(v, "overflow");
    *out = x == LLONG_MIN ? 0 : -x;
    return 0;
}

static int term(ev *v, long long *out)
{
    if (unary(v, out) != 0)
        return -1;
    for (;;) {
        skip(v);
        const char op = *v->p;
        if (op != '*' && op != '/' && op != '%')
            return 0;
        v->p++;
        long long b;
        if (unary(v, &b) != 0 || binop(v, op, *out, b, out) != 0)
            return -1;
    }
}

static int add(ev *v, long long *out)
{
    if (term(v, out) != 0)
        return -1;
    for (;;) {
        skip(v);
        const char op = *v->p;
        if (op != '+' && op != '-')
            return 0;
        v->p++;
        long long b;
        if (term(v, &b) != 0 || binop(v, op, *out, b, out) != 0)
            return -1;
    }
}

/* The comparison operator at v->p ("<=", "<", ...; "==" and "!=" when eq), its length into *len; NULL when none. */
static const char *cmp_op(const ev *v, int eq, int *len)
{
    static const char *const rel[] = {"<=", ">=", "<", ">"}, *const eqs[] = {"==", "!="};
    const char *const *ops = eq ? eqs : rel;
    for (int i = 0; i < (eq ? 2 : 4); i++)
        if (strncmp(v->p, ops[i], strlen(ops[i])) == 0) {
            *len = (int)strlen(ops[i]);
            return ops[i];
        }
    return NULL;
}

/* One level of comparisons: eq 0 for < <= > >=, 1 for == !=. Left to right, each giving 0 or 1 (as in C). */
static int compare(ev *v, int eq, long long *out)
{
    if ((eq ? compare(v, 0, out) : add(v, out)) != 0)
        return -1;
    for (;;) {
        skip(v);
        int len = 0;
        const char *op = cmp_op(v, eq, &len);
        if (!op)
            return 0;
        v->p += len;
        long long b;
        if ((eq ? compare(v, 0, &b) : add(v, &b)) != 0)
            return -1;
        const long long a = *out;
        *out = op[0] == '=' ? a == b : op[0] == '!' ? a != b : op[0] == '<' ? (len == 2 ? a <= b : a < b)
                                                                           : (len == 2 ? a >= b : a > b);
    }
}

/* One level of logic: is_or 0 for &&, 1 for ||. The right operand is evaluated dead once the left decides. */
static int logic(ev *v, int is_or, long long *out)
{
    if ((is_or ? logic(v, 0, out) : compare(v, 1, out)) != 0)
        return -1;
    const char *op = is_or ? "||" : "&&";
    for (;;) {
        skip(v);
        if (strncmp(v->p, op, 2) != 0)
            return 0;
        v->p += 2;
        const int decided = is_or ? *out != 0 : *out == 0;
        long long b;
        v->dead += decided;
        const int rc = is_or ? logic(v, 0, &b) : compare(v, 1, &b);
        v->dead -= decided;
        if (rc != 0)
            return -1;
        *out = decided ? is_or : b != 0;
    }
}

static int expr(ev *v, long long *out)
{
    if (++v->depth > MAX_DEPTH)
        return fail(v, "nesting too deep");
    if (logic(v, 1, out) != 0)
        return -1;
    v->depth--;
    return 0;
}

int cut_ks_eval(const char *s, const cut_ks_var *vars, int nvars, long long *out, cut_err *e)
{
    ev v = {.s = s, .p = s, .vars = vars, .nvars = nvars, .e = e};
    long long x;
    if (!s)
        return cut_err_set(e, "expression missing");
    if (expr(&v, &x) != 0)
        return -1;
    skip(&v);
    if (*v.p == '=')
        return fail(&v, "unexpected '=' (compare with '==')");
    if (*v.p)
        return fail(&v, "unexpected text");
    *out = x;
    return 0;
}
