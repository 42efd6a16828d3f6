/* cutune — generated kernel sources: freeing, indenting emitted text, renaming the entry. */
#include "cutune/codegen.h"
#include "codegen/emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cut_kernel_src_free(cut_kernel_src *k)
{
    if (!k)
        return;
    free(k->src);
    free(k->keep_dir);
    k->src = NULL;
    k->keep_dir = NULL;
}

void cut_emit_indented(cut_buf *b, const char *text, int extra)
{
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        if (*p != '#' && *p != '\n')
            cut_buf_printf(b, "%*s", extra, "");
        cut_buf_append(b, p, len);
        p += len;
    }
}

/* ---- entry renaming (cutune export links many kernels into one program) ------------------------------------ */

static int is_ident_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

static int is_identifier(const char *s)
{
    if (!s || !*s || (*s >= '0' && *s <= '9'))
        return 0;
    for (const char *p = s; *p; p++)
        if (!is_ident_char(*p))
            return 0;
    return 1;
}

/* Text substitution is safe because every emitter writes its entry's name (k->entry: "cut_conv2d", "cut_gemm")
 * exactly once, as the definition "cut_conv2d(" (helpers are static and named otherwise, the banner names the workload); matching whole words only
 * leaves longer names such as cut_conv2d_x alone, and the count check turns any future second use into an error
 * instead of a half-renamed kernel. */
int cut_codegen_rename_entry(cut_kernel_src *k, const char *entry, cut_err *e)
{
    char def[CUT_ENTRY_LEN];
    snprintf(def, sizeof def, "%s", k->entry[0] ? k->entry : "cut_conv2d"); /* no entry set: the conv default */
    const size_t dl = strlen(def);
    if (!is_identifier(entry) || strlen(entry) >= CUT_ENTRY_LEN)
        return cut_err_set(e, "codegen: entry name '%s' is not a C identifier of at most %d characters",
                           entry ? entry : "(null)", CUT_ENTRY_LEN - 1);
    if (!k->src || !dl)
        return cut_err_set(e, "codegen: no source or entry to rename");
    const char *at = NULL;
    int count = 0;
    for (const char *p = strstr(k->src, def); p; p = strstr(p + dl, def)) {
        if ((p > k->src && is_ident_char(p[-1])) || is_ident_char(p[dl]))
            continue;
        count++;
        at = p;
    }
    const char *after = at ? at + dl : NULL;
    while (after && (*after == ' ' || *after == '\t'))
        after++;
    if (count != 1 || *after != '(')
        return cut_err_set(e, "codegen: expected the entry '%s(' exactly once in the generated source, found %d "
                              "uses",
                           def, count);
    size_t head = (size_t)(at - k->src), el = strlen(entry), tail = strlen(at + dl);
    char *renamed = cut_xmalloc(head + el + tail + 1);
    memcpy(renamed, k->src, head);
    memcpy(renamed + head, entry, el);
    memcpy(renamed + head + el, at + dl, tail + 1);
    free(k->src);
    k->src = renamed;
    snprintf(k->entry, sizeof k->entry, "%s", entry);
    return 0;
}
