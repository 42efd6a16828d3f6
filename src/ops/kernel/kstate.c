/* cutune — a user kernel's states: materialised sources, state and PTX keys, diffs through GNU diff/patch. */
#include "cutune/kstate.h"
#include "cutune/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- materialised sources ---- */

char *cut_kstate_materialise(const cut_kspec *k, const long long *vals)
{
    return cut_kstate_materialise_src(k, vals, k->source);
}

const char *cut_kstate_begin(const cut_kspec *k) { return k->lang == CUT_KS_TRITON ? CUT_KST_PY_BEGIN : CUT_KST_BEGIN; }
const char *cut_kstate_end(const cut_kspec *k) { return k->lang == CUT_KS_TRITON ? CUT_KST_PY_END : CUT_KST_END; }

void cut_kstate_line(const cut_kspec *k, const char *name, long long v, char *buf, size_t n)
{
    snprintf(buf, n, k->lang == CUT_KS_TRITON ? "%s = %lld\n" : "#define %s %lld\n", name, v);
}

char *cut_kstate_materialise_src(const cut_kspec *k, const long long *vals, const char *source)
{
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_printf(&b, "%s\n", cut_kstate_begin(k));
    for (int i = 0; i < k->ntunables; i++) {
        char line[CUT_KS_NAME + 48];
        cut_kstate_line(k, k->tunables[i].name, vals ? vals[i] : k->tunables[i].values[0], line, sizeof line);
        cut_buf_printf(&b, "%s", line);
    }
    cut_buf_printf(&b, "%s\n%s", cut_kstate_end(k), source);
    if (b.len == 0 || b.data[b.len - 1] != '\n')
        cut_buf_append(&b, "\n", 1);
    cut_buf_append(&b, "", 1);
    return b.data;
}

/* Parses "#define NAME VALUE" (CUDA) or "NAME = VALUE" (Triton) at line (blanks allowed around). 1 when it is one,
 * with name and value filled. */
static int parse_define(const char *line, const char *end, int python, char *name, size_t nlen, long long *value)
{
    const char *p = line;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (!python && (end - p < 7 || strncmp(p, "#define", 7) != 0))
        return 0;
    p += python ? 0 : 7;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    size_t n = 0;
    while (p < end && (isalnum((unsigned char)*p) || *p == '_') && n + 1 < nlen)
        name[n++] = *p++;
    name[n] = 0;
    if (!n)
        return 0;
    char num[32];
    size_t m = 0;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (python && (p == end || *p++ != '='))
        return 0;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    while (p < end && m + 1 < sizeof num && !isspace((unsigned char)*p))
        num[m++] = *p++;
    num[m] = 0;
    char *stop = NULL;
    errno = 0;
    *value = strtoll(num, &stop, 0);
    return m > 0 && *stop == 0 && errno == 0;
}

int cut_kstate_tunables(const cut_kspec *k, const char *src, long long *vals, cut_err *e)
{
    const char *begin = strstr(src, cut_kstate_begin(k)), *end = begin ? strstr(begin, cut_kstate_end(k)) : NULL;
    if (!begin || !end)
        return cut_err_set(e, "the source lost its tunables header ('%s' ... '%s')", cut_kstate_begin(k),
                           cut_kstate_end(k));
    int seen[CUT_KS_MAX_VARS] = {0};
    for (const char *line = begin; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *le = nl ? nl : end;
        char name[CUT_KS_NAME];
        long long v;
        if (parse_define(line, le, k->lang == CUT_KS_TRITON, name, sizeof name, &v)) {
            int t = -1;
            for (int i = 0; i < k->ntunables; i++)
                if (strcmp(k->tunables[i].name, name) == 0)
                    t = i;
            if (t < 0)
                return cut_err_set(e, "tunables header: '%s' is not a tunable of '%s'", name, k->name);
            if (seen[t]++)
                return cut_err_set(e, "tunable %s: defined twice", name);
            int ok = 0;
            for (int j = 0; j < k->tunables[t].nvalues; j++)
                ok |= k->tunables[t].values[j] == v;
            if (!ok)
                return cut_err_set(e, "tunable %s: %lld is not one of its allowed values", name, v);
            vals[t] = v;
        }
        line = le + 1;
    }
    for (int i = 0; i < k->ntunables; i++)
        if (!seen[i])
            return cut_err_set(e, "tunable %s: not defined in the tunables header", k->tunables[i].name);
    return 0;
}

int cut_kstate_allowed(const cut_kspec *k, const char *src, char *why, size_t why_n)
{
    long long vals[CUT_KS_MAX_VARS];
    cut_err e = {{0}};
    if (cut_kstate_tunables(k, src, vals, &e) != 0) {
        if (why && why_n)
            snprintf(why, why_n, "%s", e.msg);
        return -1;
    }
    return cut_kspec_allows(k, vals, why, why_n);
}

static uint64_t launch_hash(uint64_t h, const cut_ks_launch *l)
{
    const unsigned v[7] = {l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2], l->smem};
    return cut_fnv1a(h, v, sizeof v);
}

uint64_t cut_kstate_key(const char *src, const cut_ks_launch *l)
{
    return launch_hash(cut_fnv1a(CUT_FNV_INIT, src, strlen(src)), l);
}

uint64_t cut_kstate_ptx_key(const char *ptx, const cut_ks_launch *l) { return launch_hash(cut_ptx_norm_hash(ptx), l); }

uint64_t cut_ptx_norm_hash(const char *ptx)
{
    uint64_t h = CUT_FNV_INIT;
    for (const char *line = ptx; *line;) {
        const char *nl = strchr(line, '\n');
        const char *le = nl ? nl : line + strlen(line);
        const char *a = line, *b = le;
        while (a < b && isspace((unsigned char)*a))
            a++;
        const char *cm = a;
        while (cm + 1 < b && !(cm[0] == '/' && cm[1] == '/'))
            cm++;
        if (cm + 1 < b)
            b = cm;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        if (b > a) {
            h = cut_fnv1a(h, a, (size_t)(b - a));
            h = cut_fnv1a(h, "\n", 1);
        }
        line = nl ? nl + 1 : le;
    }
    return h;
}

/* ---- diff and patch ---- */

/* A unique scratch path <work_dir>/<tag>.<pid>.<counter>. */
static void scratch(char *buf, size_t n, const char *work_dir, const char *tag)
{
    static _Atomic unsigned long counter;
    snprintf(buf, n, "%s/%s.%ld.%lu", work_dir, tag, (long)getpid(), (unsigned long)counter++);
}

/* The first line of a tool's stderr file, for an error sentence. */
static void first_line(const char *path, char *buf, size_t n)
{
    char *text = NULL;
    size_t len = 0;
    cut_err ignore;
    buf[0] = 0;
    if (cut_read_file(path, &text, &len, &ignore) == 0) {
        size_t m = strcspn(text, "\n");
        snprintf(buf, n, "%.*s", (int)(m < 200 ? m : 200), text);
        free(text);
    }
}

/* Writes texts a and b to scratch files and runs diff (-u, a to b) or patch (the diff b onto a) over them; *out gets
 * the diff or the patched text. */
static int run_on_texts(int is_patch, const char *a, const char *b, const char *work_dir, char **out, cut_err *e)
{
    char pa[1024], pb[1024], po[1024], pe[1024];
    scratch(pa, sizeof pa, work_dir, "tool_a");
    scratch(pb, sizeof pb, work_dir, "tool_b");
    scratch(po, sizeof po, work_dir, "tool_out");
    scratch(pe, sizeof pe, work_dir, "tool_err");
    *out = NULL;
    int rc = -1;
    if (cut_write_file_atomic(pa, a, strlen(a), e) != 0 || cut_write_file_atomic(pb, b, strlen(b), e) != 0)
        goto out;
    char *dargv[] = {"diff", "-u", "--label", "a/kernel.cu", "--label", "b/kernel.cu", pa, pb, NULL};
    char *pargv[] = {"patch", "--batch", "--silent", "--no-backup-if-mismatch", "-r", "/dev/null", "-o", po, pa,
                     "-i", pb, NULL};
    /* diff exits 1 when the texts differ; patch's messages go to stdout */
    const int st = is_patch ? cut_run_tool(pargv, pe, pe, e) : cut_run_tool(dargv, po, pe, e);
    if (st < 0)
        goto out;
    if (st > (is_patch ? 0 : 1)) {
        char why[256];
        first_line(pe, why, sizeof why);
        if (is_patch)
            cut_err_set(e, "the diff does not apply (patch exit %d): %s", st, why[0] ? why : "no message");
        else
            cut_err_set(e, "diff failed (exit %d): %s", st, why);
        goto out;
    }
    size_t len = 0;
    rc = cut_read_file(po, out, &len, e);
out:
    unlink(pa), unlink(pb), unlink(po), unlink(pe);
    return rc;
}

int cut_diff_unified(const char *a, const char *b, const char *work_dir, char **out, cut_err *e)
{
    return run_on_texts(0, a, b, work_dir, out, e);
}

int cut_patch_apply(const char *src, const char *diff, const char *work_dir, char **out, cut_err *e)
{
    return run_on_texts(1, src, diff, work_dir, out, e);
}

/* ---- generators ---- */

int cut_cand_gen_propose(const cut_cand_gen *g, const cut_kspec *k, const char *src, const char *context,
                         const char *work_dir, cut_proposal *out, int max, cut_err *e)
{
    const int n = g->propose(g->ctx, k, src, context, work_dir, out, max, e);
    if (n <= 0 || k->nrestrictions == 0)
        return n;
    int kept = 0;
    for (int i = 0; i < n; i++) {
        char *patched = NULL;
        cut_err ignore;
        const int broken = out[i].diff && cut_patch_apply(src, out[i].diff, work_dir, &patched, &ignore) == 0 &&
                           cut_kstate_allowed(k, patched, NULL, 0) == 0;
        free(patched);
        if (broken) {
            cut_proposal_free(&out[i]);
            continue;
        }
        if (kept != i) {
            out[kept] = out[i];
            memset(&out[i], 0, sizeof out[i]);
        }
        kept++;
    }
    return kept;
}
