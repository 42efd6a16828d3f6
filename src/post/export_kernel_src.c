/* cutune — export of optimized kernels: a state's materialised source as a header that composes with the others in
 * one translation unit (include guard, entry renamed, helpers in a namespace of their own, no macro left behind).
 *
 * The entry is renamed as cut_codegen_rename_entry renames a generated one: whole words only, and a count check that
 * turns anything unexpected into a refusal instead of a half-renamed kernel. A user's source is not generated, so the
 * scan here skips comments and string literals, renames every use in code (a forward declaration, a launch bounds
 * table) and requires exactly one definition. */
#include "cutune/export.h"
#include "cutune/kstate.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

static int is_identifier(const char *s)
{
    if (!s || !ident_start(*s))
        return 0;
    while (ident_char(*s))
        s++;
    return *s == 0;
}

/* Past the comment or literal that starts at p (p itself when none does). */
static const char *skip_non_code(const char *p)
{
    if (p[0] == '/' && p[1] == '/') {
        while (*p && *p != '\n')
            p++;
        return p;
    }
    if (p[0] == '/' && p[1] == '*') {
        const char *end = strstr(p + 2, "*/");
        return end ? end + 2 : p + strlen(p);
    }
    if (*p == '"' || *p == '\'') {
        const char q = *p++;
        while (*p && *p != q && *p != '\n')
            p += p[0] == '\\' && p[1] ? 2 : 1;
        return *p == q ? p + 1 : p;
    }
    return p;
}

static const char *skip_blank(const char *p)
{
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        const char *q = (p[0] == '/' && (p[1] == '/' || p[1] == '*')) ? skip_non_code(p) : p;
        if (q == p)
            return p;
        p = q;
    }
}

/* 1 when the use of the entry ending at p is a definition: a parameter list, then a body. */
static int is_definition(const char *p)
{
    p = skip_blank(p);
    if (*p != '(')
        return 0;
    int depth = 0;
    while (*p) {
        const char *q = skip_non_code(p);
        if (q != p) {
            p = q;
            continue;
        }
        depth += *p == '(';
        depth -= *p == ')';
        p++;
        if (depth == 0)
            break;
    }
    return depth == 0 && *skip_blank(p) == '{';
}

/* Offsets of the whole-word uses of word in code (not in comments or literals), at most max; returns their count. */
static int find_uses(const char *src, const char *word, size_t *at, int max)
{
    const size_t wl = strlen(word);
    int n = 0;
    for (const char *p = src; *p;) {
        const char *q = skip_non_code(p);
        if (q != p) {
            p = q;
            continue;
        }
        if (isdigit((unsigned char)*p)) { /* a number, digit separators (1'000) included */
            while (ident_char(*p) || *p == '.' || (*p == '\'' && ident_char(p[1])))
                p++;
            continue;
        }
        if (!ident_start(*p)) {
            p++;
            continue;
        }
        const char *s = p;
        while (ident_char(*p))
            p++;
        if ((size_t)(p - s) == wl && memcmp(s, word, wl) == 0) {
            if (n < max)
                at[n] = (size_t)(s - src);
            n++;
        }
    }
    return n;
}

int cut_export_rename_user_entry(const char *src, const char *entry, const char *new_entry, char **out, cut_err *e)
{
    *out = NULL;
    enum { MAX_USES = 64 };
    size_t at[MAX_USES];
    if (!is_identifier(new_entry) || strlen(new_entry) >= 128)
        return cut_err_set(e, "'%s' is not an identifier to rename the entry to", new_entry);
    if (find_uses(src, new_entry, at, MAX_USES) > 0)
        return cut_err_set(e, "cannot rename the entry '%s' to '%s': the source already uses that name", entry,
                           new_entry);
    const int n = find_uses(src, entry, at, MAX_USES);
    if (n > MAX_USES)
        return cut_err_set(e, "the entry '%s' is used %d times in the source (at most %d are renamed)", entry, n,
                           MAX_USES);
    const size_t el = strlen(entry), nl = strlen(new_entry);
    int defs = 0;
    for (int i = 0; i < n; i++)
        defs += is_definition(src + at[i] + el);
    if (defs != 1)
        return cut_err_set(e, "expected exactly one definition of the entry '%s(...) {' in the source, found %d", entry,
                           defs);
    cut_buf b;
    cut_buf_init(&b);
    size_t from = 0;
    for (int i = 0; i < n; i++) {
        cut_buf_append(&b, src + from, at[i] - from);
        cut_buf_append(&b, new_entry, nl);
        from = at[i] + el;
    }
    cut_buf_append(&b, src + from, strlen(src + from) + 1);
    *out = b.data;
    return 0;
}

/* ---- the header -------------------------------------------------------------------------------------------- */

/* The directive of a preprocessor line ("include", "define", ...) into word; 0 when the line is none. */
static int directive(const char *line, const char *end, char *word, size_t wn, const char **rest)
{
    const char *p = line;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p == end || *p != '#')
        return 0;
    p++;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    size_t n = 0;
    while (p < end && ident_char(*p) && n + 1 < wn)
        word[n++] = *p++;
    word[n] = 0;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    *rest = p;
    return n > 0;
}

/* Appends name to the list of macros to #undef (space separated) unless it is there. */
static void add_macro(cut_buf *list, const char *name, size_t n)
{
    char word[160];
    snprintf(word, sizeof word, " %.*s ", (int)(n < 150 ? n : 150), name);
    if (list->data && strstr(list->data, word))
        return;
    if (!list->len)
        cut_buf_append(list, " ", 1);
    cut_buf_append(list, word + 1, strlen(word + 1));
}

/* Splits text into what stays in place and the #include lines outside any #if (hoisted), and lists every macro a
 * #define line defines. Lines inside block comments are not directives. */
static void scan_lines(const char *text, cut_buf *kept, cut_buf *hoisted, cut_buf *macros)
{
    int depth = 0, in_comment = 0, continued = 0;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        const char *end = nl ? nl : line + strlen(line);
        const size_t len = (size_t)(end - line) + (nl ? 1 : 0);
        char word[16];
        const char *rest = NULL;
        const int is_dir = !in_comment && !continued && directive(line, end, word, sizeof word, &rest);
        if (is_dir && (!strcmp(word, "if") || !strcmp(word, "ifdef") || !strcmp(word, "ifndef")))
            depth++;
        else if (is_dir && !strcmp(word, "endif") && depth > 0)
            depth--;
        if (is_dir && !strcmp(word, "define") && ident_start(*rest)) {
            const char *s = rest;
            while (s < end && ident_char(*s))
                s++;
            add_macro(macros, rest, (size_t)(s - rest));
        }
        if (is_dir && !strcmp(word, "include") && depth == 0)
            cut_buf_append(hoisted, line, len);
        else
            cut_buf_append(kept, line, len);
        if (hoisted->len && hoisted->data[hoisted->len - 1] != '\n')
            cut_buf_append(hoisted, "\n", 1);
        continued = end > line && end[-1] == '\\';
        /* block comments opened and closed on this line (literals are rare enough in directives to ignore) */
        for (const char *p = line; p < end; p++) {
            if (!in_comment && p[0] == '/' && p[1] == '/')
                break;
            if (!in_comment && p[0] == '/' && p[1] == '*')
                in_comment = 1, p++;
            else if (in_comment && p[0] == '*' && p[1] == '/')
                in_comment = 0, p++;
        }
        line += len;
    }
}

/* The save half of the macro hygiene: a caller's macros of the names the header defines are pushed and undefined,
 * so the header's own definitions neither clash with them nor destroy them (macros_restore pops them back). */
static void macros_save(cut_buf *b, const cut_buf *macros)
{
    if (!macros->len)
        return;
    cut_buf_printf(b, "// A caller's macros of the names this header defines are saved here and restored at its end.\n");
    for (const char *m = macros->data; *m;) {
        while (*m == ' ')
            m++;
        const size_t n = strcspn(m, " ");
        if (n)
            cut_buf_printf(b, "#pragma push_macro(\"%.*s\")\n#undef %.*s\n", (int)n, m, (int)n, m);
        m += n;
    }
    cut_buf_printf(b, "\n");
}

/* Every macro of the list #undef'd, then the caller's definitions popped back. */
static void macros_restore(cut_buf *b, const cut_buf *macros)
{
    for (int pass = 0; pass < 2 && macros->len; pass++)
        for (const char *m = macros->data; *m;) {
            while (*m == ' ')
                m++;
            const size_t n = strcspn(m, " ");
            if (n)
                cut_buf_printf(b, pass ? "#pragma pop_macro(\"%.*s\")\n" : "#undef %.*s\n", (int)n, m);
            m += n;
        }
}

/* Only the macros text defines, into macros. */
static void scan_macros(const char *text, cut_buf *macros)
{
    cut_buf kept, hoisted;
    cut_buf_init(&kept);
    cut_buf_init(&hoisted);
    scan_lines(text, &kept, &hoisted, macros);
    cut_buf_free(&kept);
    cut_buf_free(&hoisted);
}

/* The header around a scanned source: banner, guard, the hoisted #include lines, the macros saved, pre (the
 * tunables or a prelude: before the namespace, may be NULL), the code in namespace ns, the macros restored. */
static char *emit_header(const char *banner, const char *guard, const cut_buf *hoisted, const cut_buf *macros,
                         const char *pre, const char *ns, const cut_buf *kept, const char *what)
{
    cut_buf b;
    cut_buf_init(&b);
    if (banner)
        for (const char *p = banner; *p;) {
            const size_t n = strcspn(p, "\n");
            cut_buf_printf(&b, "// %.*s\n", (int)n, p);
            p += n + (p[n] == '\n');
        }
    cut_buf_printf(&b, "#ifndef %s\n#define %s\n\n", guard, guard);
    if (hoisted->len) { /* unconditional, so before any macro of the source is defined */
        cut_buf_printf(&b, "// the %s's #include lines, outside the namespace\n", what);
        cut_buf_append(&b, hoisted->data, hoisted->len);
        cut_buf_printf(&b, "\n");
    }
    macros_save(&b, macros);
    if (pre)
        cut_buf_printf(&b, "%s%s", pre, pre[0] && pre[strlen(pre) - 1] == '\n' ? "" : "\n");
    cut_buf_printf(&b, "\nnamespace %s {\n\n", ns);
    if (kept->len)
        cut_buf_append(&b, kept->data, kept->len);
    if (!b.len || b.data[b.len - 1] != '\n')
        cut_buf_append(&b, "\n", 1);
    cut_buf_printf(&b, "\n} // namespace %s\n\n", ns);
    cut_buf_printf(&b, "// The %s's macros end here: none of them leaks out of this header.\n", what);
    macros_restore(&b, macros);
    cut_buf_printf(&b, "\n#endif // %s\n", guard);
    cut_buf_append(&b, "", 1);
    return b.data;
}

int cut_export_wrap_header(const char *src, const char *ns, const char *guard, const char *banner,
                           const char *prelude, char **out)
{
    cut_buf kept, hoisted, macros;
    cut_buf_init(&kept);
    cut_buf_init(&hoisted);
    cut_buf_init(&macros);
    if (prelude)
        scan_macros(prelude, &macros);
    scan_lines(src, &kept, &hoisted, &macros);
    *out = emit_header(banner, guard, &hoisted, &macros, prelude, ns, &kept, "kernel");
    cut_buf_free(&kept);
    cut_buf_free(&hoisted);
    cut_buf_free(&macros);
    return 0;
}

int cut_export_opt_header(const char *src, const char *entry, const char *new_entry, const char *ns,
                          const char *guard, const char *banner, char **out, cut_err *e)
{
    *out = NULL;
    const char *begin = strstr(src, CUT_KST_BEGIN), *end = begin ? strstr(begin, CUT_KST_END) : NULL;
    if (!begin || !end)
        return cut_err_set(e, "the source lost its tunables header ('%s' ... '%s')", CUT_KST_BEGIN, CUT_KST_END);
    char *renamed = NULL;
    if (cut_export_rename_user_entry(src, entry, new_entry, &renamed, e) != 0)
        return -1;
    /* the renamed text has the same tunables header: split after its end line */
    const char *rend = strstr(strstr(renamed, CUT_KST_BEGIN), CUT_KST_END);
    const char *body = strchr(rend, '\n');
    body = body ? body + 1 : rend + strlen(rend);
    cut_buf head, kept, hoisted, macros;
    cut_buf_init(&head);
    cut_buf_init(&kept);
    cut_buf_init(&hoisted);
    cut_buf_init(&macros);
    cut_buf_append(&head, renamed, (size_t)(body - renamed));
    cut_buf_append(&head, "", 1);
    scan_macros(head.data, &macros); /* the tunables: their macros first */
    scan_lines(body, &kept, &hoisted, &macros);
    *out = emit_header(banner, guard, &hoisted, &macros, head.data, ns, &kept, "source");
    cut_buf_free(&head);
    cut_buf_free(&kept);
    cut_buf_free(&hoisted);
    cut_buf_free(&macros);
    free(renamed);
    return 0;
}
