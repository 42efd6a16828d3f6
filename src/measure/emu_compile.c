/* cutune — host emulation of CUDA, compiling: generated CUDA C built with the host C++ compiler into a shared
 * object and loaded (emu.c runs it on the CPU).
 *
 * Compile: prelude (emu_prelude.h, embedded) + "#line 1 kernel.cu" + source (dynamic shared memory declarations
 * rewritten, see rewrite_dynamic_smem; cut_emu_compile_call appends a trampoline) -> <work_dir>/emu_<hash>.cpp ->
 * $CUTUNE_HOST_CXX (default c++; $CUTUNE_HOST_CXXFLAGS appended to the flags) -> <work_dir>/emu_<hash>.so
 * (renamed into place, so a cached .so is always complete) -> dlopen. The hash covers compiler, flags, prelude
 * and source, so the .so files are a cache; a damaged one is rebuilt. */
#define _GNU_SOURCE /* dlinfo, dl_iterate_phdr */
#include "cutune/emu.h"
#include "cutune/util.h"
#include "measure/emu_int.h"

#include <link.h>

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const char cut_emu_prelude_text[];

#define EMU_CXX_FLAGS "-O1 -shared -fPIC -std=c++17 -w -fno-strict-aliasing -fno-math-errno -fsanitize=bounds -fsanitize-undefined-trap-on-error"

/* ---- compile ------------------------------------------------------------------------------------------ */

/* Splits a command line on blanks into argv (no quoting). Returns the count; words point into buf. */
static int split_words(char *buf, char **argv, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *p = strtok_r(buf, " \t", &save); p && n < max; p = strtok_r(NULL, " \t", &save))
        argv[n++] = p;
    return n;
}

static int source_has_sync(const char *src)
{
    static const char *const words[] = {"__syncthreads", "__syncwarp", "__shfl", "__ballot", "__any_sync",
                                        "__all_sync", "_sync(", "cut_emu_yield"};
    for (size_t i = 0; i < CUT_ARRAY_LEN(words); i++)
        if (strstr(src, words[i]))
            return 1;
    return 0;
}

/* The writable segments of the loaded object at load address base, as one range [lo, hi), less its RELRO part
 * (relocated data the loader makes read-only): what a kernel's launch may write, and what the protocol resets
 * between launches. */
typedef struct data_range {
    ElfW(Addr) base;
    uintptr_t lo, hi;
} data_range;

static int find_data(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    data_range *d = arg;
    if (info->dlpi_addr != d->base)
        return 0;
    uintptr_t relro_hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_RELRO)
            relro_hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        const uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        d->lo = d->lo && d->lo < lo ? d->lo : lo;
        d->hi = d->hi > hi ? d->hi : hi;
    }
    if (relro_hi > d->lo)
        d->lo = relro_hi < d->hi ? relro_hi : d->hi;
    return 1;
}

/* dlopens the .so and binds the runtime hooks. */
static int load_so(const char *so, cut_emu_kernel *k, cut_err *e)
{
    k->dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!k->dl)
        return cut_err_set(e, "dlopen %s: %s", so, dlerror());
    void *b = dlsym(k->dl, "cut_emu_bind"), *d = dlsym(k->dl, "cut_emu_set_dims");
    void *t = dlsym(k->dl, "cut_emu_set_thread"), *bl = dlsym(k->dl, "cut_emu_set_block");
    if (!b || !d || !t || !bl) {
        dlclose(k->dl);
        k->dl = NULL;
        return cut_err_set(e, "%s lacks the emulation prelude's entry points", so);
    }
    /* POSIX guarantees that a data pointer from dlsym converts to a function pointer. */
    emu_bind_fn bind;
    memcpy(&bind, &b, sizeof b);
    memcpy(&k->set_dims, &d, sizeof d);
    memcpy(&k->set_thread, &t, sizeof t);
    memcpy(&k->set_block, &bl, sizeof bl);
    bind(&cut_emu_hooks_table);
    struct link_map *lm = NULL;
    if (dlinfo(k->dl, RTLD_DI_LINKMAP, &lm) == 0 && lm) {
        data_range dr = {.base = lm->l_addr};
        dl_iterate_phdr(find_data, &dr);
        k->data_lo = (const unsigned char *)dr.lo;
        k->data_hi = (const unsigned char *)dr.hi;
    }
    return 0;
}

static int resolve_entry(cut_emu_kernel *k, const char *entry, cut_err *e)
{
    void *f = dlsym(k->dl, entry);
    if (!f)
        return cut_err_set(e, "kernel entry '%s' not found in %s (is it extern \"C\"?)", entry, k->so_path);
    memcpy(&k->entry, &f, sizeof f);
    return 0;
}

/* Formats a failed build's log into e: the first "error" line first (the useful one), then the log's start. */
static void compile_error(cut_err *e, int rc, const char *log)
{
    const char *err = strstr(log, "error");
    const char *line = log;
    if (err) {
        line = err;
        while (line > log && line[-1] != '\n')
            line--;
    }
    int n = (int)strcspn(line, "\n");
    char head[CUT_ERR_LEN];
    snprintf(head, sizeof head, "%s", log);
    int lines = 0; /* keep the first 12 lines */
    for (char *p = head; *p; p++)
        if (*p == '\n' && ++lines == 12) {
            *p = '\0';
            break;
        }
    cut_err_set(e, "host compiler failed (exit %d): %.*s\n%s", rc, n, line, head);
}

/* "<FNV-1a 64 of the file's bytes in hex> <size>" of file path into out. 0, or -1 when it cannot be read. */
static int so_hash(const char *path, char *out, size_t n)
{
    char *bytes = NULL;
    size_t len = 0;
    if (cut_read_file(path, &bytes, &len, NULL) != 0)
        return -1;
    snprintf(out, n, "%016llx %zu", (unsigned long long)cut_fnv1a(CUT_FNV_INIT, bytes, len), len);
    free(bytes);
    return 0;
}

/* Writes prelude + source to <stem>.cpp and builds <stem>.so (through a temporary, renamed into place).
 * Returns 0, or -1 with the compiler's message in e; the full log is kept as <stem>.log. */
static int build_so(const char *src, const char *stem, const char *cxx, const char *flags, cut_err *e)
{
    /* Unique temporaries: several threads or processes may compile the same source at once. */
    static atomic_uint counter;
    unsigned c = atomic_fetch_add(&counter, 1);
    char so[1100], cpp[1100], log[1100], so_tmp[1200], cpp_tmp[1200], log_tmp[1200];
    snprintf(so, sizeof so, "%s.so", stem);
    snprintf(cpp, sizeof cpp, "%s.cpp", stem);
    snprintf(log, sizeof log, "%s.log", stem);
    snprintf(so_tmp, sizeof so_tmp, "%s.%ld.%u.tmp", so, (long)getpid(), c);
    snprintf(cpp_tmp, sizeof cpp_tmp, "%s.%ld.%u.cpp", stem, (long)getpid(), c);
    snprintf(log_tmp, sizeof log_tmp, "%s.%ld.%u", log, (long)getpid(), c);

    FILE *f = fopen(cpp_tmp, "w");
    if (!f)
        return cut_err_set(e, "cannot write %s: %s", cpp_tmp, strerror(errno));
    fputs(cut_emu_prelude_text, f);
    fputs("\n#line 1 \"kernel.cu\"\n", f);
    fputs(src, f);
    fputc('\n', f);
    if (fclose(f) != 0) {
        unlink(cpp_tmp);
        return cut_err_set(e, "cannot write %s: %s", cpp_tmp, strerror(errno));
    }
    rename(cpp_tmp, cpp); /* kept for inspection; a lost race leaves an identical file */

    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s", cxx, flags);
    char *argv[64];
    int na = split_words(cmd, argv, 58);
    argv[na++] = "-o";
    argv[na++] = so_tmp;
    argv[na++] = cpp;
    argv[na++] = "-lm";
    argv[na] = NULL;
    int rc = cut_run_tool(argv, log_tmp, log_tmp, e);
    if (rc < 0)
        cut_err_wrap(e, "host compiler (set CUTUNE_HOST_CXX)");
    if (rc != 0) {
        char *text = NULL;
        size_t len = 0;
        if (rc > 0) {
            if (cut_read_file(log_tmp, &text, &len, NULL) == 0)
                compile_error(e, rc, text);
            else
                cut_err_set(e, "host compiler failed (exit %d)", rc);
        }
        free(text);
        rename(log_tmp, log);
        unlink(so_tmp);
        return -1;
    }
    unlink(log_tmp);
    char hash[64], hash_path[1200];
    snprintf(hash_path, sizeof hash_path, "%s.fnv", so);
    if (so_hash(so_tmp, hash, sizeof hash) != 0 || cut_write_file_atomic(hash_path, hash, strlen(hash), e) != 0) {
        unlink(so_tmp);
        return cut_err_set(e, "cannot record the content hash of %s", so);
    }
    if (rename(so_tmp, so) != 0) {
        cut_err_set(e, "rename %s -> %s: %s", so_tmp, so, strerror(errno));
        unlink(so_tmp);
        return -1;
    }
    return 0;
}

/* 1 when the cached library so still has the content hash recorded when it was built (<so>.fnv); a library swapped
 * or damaged since is not loaded. */
static int so_verified(const char *so)
{
    char want[64], hash_path[1200], *text = NULL;
    size_t len = 0;
    snprintf(hash_path, sizeof hash_path, "%s.fnv", so);
    int ok = so_hash(so, want, sizeof want) == 0 && cut_read_file(hash_path, &text, &len, NULL) == 0 &&
             len == strlen(want) && memcmp(text, want, len) == 0;
    free(text);
    return ok;
}

/* ---- source rewrites --------------------------------------------------------------------------------- */

static int is_ident(char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* The end of the comment, string or character literal that starts at p, or p when none starts there: braces and
 * keywords inside them are not code. */
static const char *skip_literal(const char *p)
{
    if (p[0] == '/' && p[1] == '/') {
        const char *q = strchr(p, '\n');
        return q ? q : p + strlen(p);
    }
    if (p[0] == '/' && p[1] == '*') {
        const char *q = strstr(p + 2, "*/");
        return q ? q + 2 : p + strlen(p);
    }
    if (*p == '"' || *p == '\'') {
        const char *q = p + 1;
        while (*q && *q != *p && *q != '\n')
            q += q[0] == '\\' && q[1] ? 2 : 1;
        return *q == *p ? q + 1 : q;
    }
    return p;
}

/* After an attribute word at p: skips blanks and one balanced (...) group. */
static const char *skip_parens(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    if (p >= end || *p != '(')
        return p;
    int depth = 0;
    for (; p < end; p++) {
        depth += (*p == '(') - (*p == ')');
        if (depth == 0)
            return p + 1;
    }
    return end;
}

/* Parses `extern __shared__ [__align__(n)] T name[];` at p (which starts with the word extern): the element type T
 * goes to type, the name to name. Returns the position after the ';', or NULL when p starts another declaration. */
static const char *parse_dsmem_decl(const char *p, cut_buf *type, char *name, size_t name_len)
{
    const char *end = strchr(p, ';');
    if (!end)
        return NULL;
    int shared = 0;
    size_t last_word = (size_t)-1;
    for (const char *q = p + 6; q < end;) {
        if (is_ident(*q)) {
            const char *w = q;
            while (q < end && is_ident(*q))
                q++;
            size_t n = (size_t)(q - w);
            if (n == 10 && !memcmp(w, "__shared__", 10)) {
                shared = 1;
            } else if ((n == 9 && !memcmp(w, "__align__", 9)) || (n == 7 && !memcmp(w, "alignas", 7)) ||
                       (n == 13 && !memcmp(w, "__attribute__", 13))) {
                q = skip_parens(q, end); /* the prelude's buffer is aligned for any of them */
            } else {
                last_word = type->len;
                cut_buf_append(type, w, n);
            }
        } else if (*q == '[') {
            do
                q++;
            while (q < end && (*q == ' ' || *q == '\t'));
            if (*q != ']' || !shared || last_word == (size_t)-1 || type->len - last_word >= name_len)
                return NULL;
            for (q++; q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r');)
                q++;
            if (q != end)
                return NULL; /* `extern __shared__ float a[], b[];` and the like */
            snprintf(name, name_len, "%s", type->data + last_word);
            type->len = last_word;
            while (type->len > 0 && type->data[type->len - 1] == ' ')
                type->len--;
            type->data[type->len] = '\0';
            return end + 1;
        } else if (*q == '{' || *q == '(' || *q == '=') {
            return NULL;
        } else if (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') {
            if (type->len > 0 && type->data[type->len - 1] != ' ')
                cut_buf_append(type, " ", 1);
            q++;
        } else {
            cut_buf_append(type, q++, 1);
        }
    }
    return NULL;
}

static int count_lines(const char *from, const char *to)
{
    int n = 0;
    for (; from < to; from++)
        n += *from == '\n';
    return n;
}

/* Rewrites each `extern __shared__ T name[];` so that name points at the prelude's per-worker (so per-block)
 * buffer cut_emu_dsmem: inside a function as a local `T *const name`, elsewhere (file scope, extern "C" { },
 * namespaces) as a macro, since a namespace-scope pointer would be initialized once, with the loading thread's
 * buffer. A function body is the outermost brace that follows a ')'. Line numbers stay those of src. Returns the
 * new text (caller frees). */
static char *rewrite_dynamic_smem(const char *src)
{
    cut_buf out, type;
    cut_buf_init(&out);
    cut_buf_init(&type);
    int depth = 0, fn_depth = -1; /* fn_depth: the depth outside the current function body, -1 outside any */
    char last = 0;                /* the last character of code that is not blank */
    const char *copied = src;
    for (const char *p = src; *p;) {
        const char *q = skip_literal(p);
        if (q != p) {
            p = q;
            continue;
        }
        if (*p == '{' && fn_depth < 0 && last == ')')
            fn_depth = depth;
        depth += (*p == '{') - (*p == '}');
        if (*p == '}' && depth == fn_depth)
            fn_depth = -1;
        if (!isspace((unsigned char)*p))
            last = *p;
        char name[128];
        type.len = 0;
        const char *after = NULL;
        if (!strncmp(p, "extern", 6) && !is_ident(p[6]) && (p == src || !is_ident(p[-1])))
            after = parse_dsmem_decl(p, &type, name, sizeof name);
        if (!after) {
            p++;
            continue;
        }
        cut_buf_append(&out, copied, (size_t)(p - copied));
        int lines = count_lines(p, after);
        if (fn_depth >= 0) {
            cut_buf_printf(&out, "%s *const %s = (%s *)cut_emu_dsmem;", type.data, name, type.data);
            for (int i = 0; i < lines; i++)
                cut_buf_append(&out, "\n", 1);
        } else {
            cut_buf_printf(&out, "\n#undef %s\n#define %s ((%s *)cut_emu_dsmem)\n#line %d \"kernel.cu\"\n", name,
                           name, type.data, 1 + count_lines(src, after));
        }
        p = copied = after;
    }
    cut_buf_append(&out, copied, strlen(copied));
    cut_buf_free(&type);
    return out.data;
}

/* ---- compile (continued) ------------------------------------------------------------------------------ */

/* Compiles text (the kernel source after the rewrites) and loads the symbol sym. *out is freed by the caller. */
static int compile_text(const char *text, const char *sym, int has_sync, const char *work_dir, cut_emu_kernel **out,
                        cut_err *e)
{
    *out = NULL;
    char tmpdir[512];
    if (!work_dir) {
        const char *t = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/cutune-emu-%ld", t && *t ? t : "/tmp", (long)getuid());
        work_dir = tmpdir;
    }
    if (cut_private_dir(work_dir, e) < 0)
        return -1;
    const char *cxx = getenv("CUTUNE_HOST_CXX"), *extra = getenv("CUTUNE_HOST_CXXFLAGS");
    if (!cxx || !*cxx)
        cxx = "c++";
    char flags[1024];
    snprintf(flags, sizeof flags, "%s %s", EMU_CXX_FLAGS, extra ? extra : "");

    uint64_t h = CUT_FNV_INIT;
    h = cut_fnv1a(h, cxx, strlen(cxx) + 1);
    h = cut_fnv1a(h, flags, strlen(flags) + 1);
    h = cut_fnv1a(h, cut_emu_prelude_text, strlen(cut_emu_prelude_text) + 1);
    h = cut_fnv1a(h, text, strlen(text));
    char stem[1024], so[1100];
    if (snprintf(stem, sizeof stem, "%s/emu_%016llx", work_dir, (unsigned long long)h) >= (int)sizeof stem)
        return cut_err_set(e, "emulation work directory path too long: %s", work_dir);
    snprintf(so, sizeof so, "%s.so", stem);

    cut_emu_kernel *k = cut_xcalloc(1, sizeof *k);
    snprintf(k->so_path, sizeof k->so_path, "%s", so);
    k->has_sync = has_sync;
    int cached = cut_path_exists(so);
    if (cached && !so_verified(so)) { /* swapped or damaged since it was built: never loaded */
        unlink(so);
        cached = 0;
    }
    if (!cached && build_so(text, stem, cxx, flags, e) != 0)
        goto fail;
    if (load_so(so, k, e) != 0) {
        if (!cached)
            goto fail;
        unlink(so); /* a damaged cache entry: build it again */
        if (build_so(text, stem, cxx, flags, e) != 0 || load_so(so, k, e) != 0)
            goto fail;
    }
    if (resolve_entry(k, sym, e) != 0)
        goto fail;
    *out = k;
    return 0;
fail:
    cut_emu_kernel_free(k);
    return -1;
}

/* Allocates *out (caller frees with cut_emu_kernel_free). */
int cut_emu_compile(const char *src, const char *entry, const char *work_dir, cut_emu_kernel **out, cut_err *e)
{
    char *text = rewrite_dynamic_smem(src);
    int rc = compile_text(text, entry, source_has_sync(src), work_dir, out, e);
    free(text);
    return rc;
}

/* Reads the typed kernel's parameter description from `cut_emu_params_<entry>` (appended by cut_emu_compile_call). */
static int load_params(cut_emu_kernel *k, const char *entry, cut_err *e)
{
    char sym[128];
    snprintf(sym, sizeof sym, "cut_emu_params_%s", entry);
    void *f = dlsym(k->dl, sym);
    if (!f)
        return cut_err_set(e, "%s lacks the parameter description %s", k->so_path, sym);
    unsigned (*describe)(unsigned *, unsigned);
    memcpy(&describe, &f, sizeof f);
    k->nparams = (int)describe(k->params, EMU_MAX_PARAMS);
    return 0;
}

/* Appends the trampoline `cut_emu_call_<entry>(void **argv)`, which calls entry with *(P_i *)argv[i] for entry's
 * own parameter types P_i (cut_emu_invoke in the prelude deduces them), and `cut_emu_params_<entry>`, which
 * describes the P_i so that callers can check their arguments first. */
int cut_emu_compile_call(const char *src, const char *entry, const char *work_dir, cut_emu_kernel **out, cut_err *e)
{
    *out = NULL;
    size_t n = strlen(entry);
    if (n == 0 || n > 100 || (entry[0] >= '0' && entry[0] <= '9'))
        return cut_err_set(e, "kernel entry '%.100s' is not a C identifier", entry);
    for (size_t i = 0; i < n; i++)
        if (!is_ident(entry[i]))
            return cut_err_set(e, "kernel entry '%.100s' is not a C identifier", entry);
    char *text = rewrite_dynamic_smem(src);
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_printf(&b, "%s\nextern \"C\" __attribute__((visibility(\"default\"))) void cut_emu_call_%s(void **argv)\n"
                       "{\n    cut_emu_invoke(%s, argv);\n}\n"
                       "extern \"C\" __attribute__((visibility(\"default\"))) unsigned cut_emu_params_%s(unsigned *s, "
                       "unsigned max)\n{\n    return cut_emu_params(%s, s, max);\n}\n",
                   text, entry, entry, entry, entry);
    free(text);
    char sym[128];
    snprintf(sym, sizeof sym, "cut_emu_call_%s", entry);
    int rc = compile_text(b.data, sym, source_has_sync(src), work_dir, out, e);
    cut_buf_free(&b);
    if (rc != 0)
        return -1;
    if (load_params(*out, entry, e) != 0) {
        cut_emu_kernel_free(*out);
        *out = NULL;
        return -1;
    }
    (*out)->typed = 1;
    return 0;
}

int cut_emu_kernel_params(const cut_emu_kernel *k, unsigned *sizes, int *is_ptr, int max)
{
    for (int i = 0; i < k->nparams && i < max && i < EMU_MAX_PARAMS; i++) {
        sizes[i] = k->params[i] & 0x7fffffffu;
        is_ptr[i] = (k->params[i] >> 31) != 0;
    }
    return k->nparams;
}

void cut_emu_kernel_free(cut_emu_kernel *k)
{
    if (!k)
        return;
    if (k->dl)
        dlclose(k->dl);
    free(k);
}
