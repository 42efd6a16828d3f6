/* cutune — NVRTC compilation to a cubin for one real sm_XX, with the ptxas resource report, a thread pool for
 * batches and the on-disk cache (cache.c). */
#include "cutune/compile.h"

#include <ctype.h>
#include <limits.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/cache.h"
#include "compile/pool.h"
#include "cutune/util.h"

#define CUT_DEFAULT_PROGRAM_NAME "cutune_kernel.cu"

/* NVRTC_CHECK: for setup paths; on failure sets e with the expression, file:line and NVRTC's error string, and
 * jumps to the function's `fail` label. */
#define NVRTC_CHECK(expr, e)                                                                                         \
    do {                                                                                                             \
        nvrtcResult cut_nr_ = (expr);                                                                                \
        if (cut_nr_ != NVRTC_SUCCESS) {                                                                              \
            cut_err_set((e), "%s failed at %s:%d: %s", #expr, __FILE__, __LINE__, nvrtcGetErrorString(cut_nr_));     \
            goto fail;                                                                                               \
        }                                                                                                            \
    } while (0)

void cut_compile_opts_default(cut_compile_opts *o)
{
    memset(o, 0, sizeof *o);
    o->sm_major = 9;
    o->sm_minor = 0;
}

void cut_compile_opts_for_kernel(const cut_compile_opts *base, int arch_a, cut_compile_opts *out)
{
    *out = *base;
    if (arch_a)
        out->arch_suffix_a = 1;
}

/* ---- NVRTC version (queried once) ---------------------------------------------------------------------------- */

static pthread_once_t version_once = PTHREAD_ONCE_INIT;
static nvrtcResult version_rc;
static int version_major, version_minor;

static void version_query(void) { version_rc = nvrtcVersion(&version_major, &version_minor); }

int cut_nvrtc_version(cut_err *e)
{
    pthread_once(&version_once, version_query);
    if (version_rc != NVRTC_SUCCESS)
        return cut_err_set(e, "NVRTC cannot be used: nvrtcVersion failed: %s", nvrtcGetErrorString(version_rc));
    return version_major * 1000 + version_minor * 10;
}

/* ---- ptxas -v report ------------------------------------------------------------------------------------------ */

/* The non-negative integer written just before tok in line (as in "6168 bytes stack frame"), or -1. */
static long num_before(const char *line, const char *tok)
{
    const char *t = strstr(line, tok);
    if (!t)
        return -1;
    const char *p = t;
    while (p > line && p[-1] == ' ')
        p--;
    const char *digits_end = p;
    while (p > line && isdigit((unsigned char)p[-1]))
        p--;
    if (p == digits_end)
        return -1;
    long v = strtol(p, NULL, 10);
    return v > INT_MAX ? INT_MAX : v;
}

static void keep_max(int *field, long v)
{
    if (v > INT_MAX)
        v = INT_MAX;
    if (v >= 0 && v > *field)
        *field = (int)v;
}

/* NVRTC 13 prints, per function (entry or not):
 *   ptxas info    : Function properties for k
 *   ptxas         .     6168 bytes stack frame, 6180 bytes spill stores, 12648 bytes spill loads
 *   ptxas info    : Used 24 registers, used 0 barriers, 1024 bytes smem, 6168 bytes cumulative stack size
 * Older toolkits print "Used 32 registers, 4096 bytes smem, 368 bytes cmem[0]" and an unprefixed frame line.
 * With several functions in one program the largest value of each field is kept (a tuning candidate has one
 * entry; its non-inlined callees' frames and spills are part of its cost). */
void cut_parse_ptxas_info(const char *log, cut_compiled *out)
{
    out->regs = out->spill_stores = out->spill_loads = out->smem_static = out->stack_frame = -1;
    if (!log)
        return;
    const char *p = log;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[1024];
        size_t n = len < sizeof line - 1 ? len : sizeof line - 1;
        memcpy(line, p, n);
        line[n] = 0;
        p += len + (nl ? 1 : 0);

        if (strstr(line, "bytes stack frame")) {
            keep_max(&out->stack_frame, num_before(line, "bytes stack frame"));
            keep_max(&out->spill_stores, num_before(line, "bytes spill stores"));
            keep_max(&out->spill_loads, num_before(line, "bytes spill loads"));
        }
        const char *used = strstr(line, "Used ");
        if (used) {
            char *end = NULL;
            long regs = strtol(used + 5, &end, 10);
            if (end != used + 5 && strncmp(end, " register", 9) == 0) {
                keep_max(&out->regs, regs);
                /* NVRTC 13 omits "N bytes smem" when a function has no static shared memory. */
                long smem = num_before(line, "bytes smem");
                keep_max(&out->smem_static, smem >= 0 ? smem : 0);
            }
        }
    }
}

/* ---- options -------------------------------------------------------------------------------------------------- */

typedef struct opt_list {
    char arch[32];     /* "sm_90a" */
    char *extra_copy;  /* owned: extra_opts with NULs between the tokens */
    const char **argv; /* owned array; the strings point into arch_opt, fixed literals or extra_copy */
    int argc;
    char arch_opt[64]; /* "--gpu-architecture=sm_90a" */
    cut_buf joined;    /* all options separated by single spaces (the cache key's option string) */
} opt_list;

static void opt_list_free(opt_list *l)
{
    free(l->extra_copy);
    free(l->argv);
    cut_buf_free(&l->joined);
    memset(l, 0, sizeof *l);
}

/* Builds the NVRTC option list. Caller frees with opt_list_free (also after a failure). */
static int opt_list_build(const cut_compile_opts *o, opt_list *l, cut_err *e)
{
    memset(l, 0, sizeof *l);
    cut_buf_init(&l->joined);
    if (o->sm_major < 1 || o->sm_major > 99 || o->sm_minor < 0 || o->sm_minor > 9)
        return cut_err_set(e, "invalid target architecture sm_major=%d sm_minor=%d", o->sm_major, o->sm_minor);
    snprintf(l->arch, sizeof l->arch, "sm_%d%d%s", o->sm_major, o->sm_minor, o->arch_suffix_a ? "a" : "");
    snprintf(l->arch_opt, sizeof l->arch_opt, "--gpu-architecture=%s", l->arch);

    static const char *const fixed[] = {"--std=c++17", "--ptxas-options=-v", "-DNDEBUG"};
    size_t extra_len = o->extra_opts ? strlen(o->extra_opts) : 0;
    l->argv = cut_xcalloc(1 + CUT_ARRAY_LEN(fixed) + extra_len / 2 + 1, sizeof *l->argv);
    l->argv[l->argc++] = l->arch_opt;
    for (size_t i = 0; i < CUT_ARRAY_LEN(fixed); i++)
        l->argv[l->argc++] = fixed[i];
    if (o->extra_opts) {
        l->extra_copy = cut_xstrdup(o->extra_opts);
        for (char *tok = strtok(l->extra_copy, " \t\r\n"); tok; tok = strtok(NULL, " \t\r\n"))
            l->argv[l->argc++] = tok;
    }
    for (int i = 0; i < l->argc; i++)
        cut_buf_printf(&l->joined, "%s%s", i ? " " : "", l->argv[i]);
    return 0;
}

static uint64_t compile_key(const char *src, const opt_list *l, int version)
{
    uint64_t h = cut_fnv1a(CUT_FNV_INIT, src, strlen(src) + 1);
    h = cut_fnv1a(h, l->joined.data, l->joined.len + 1);
    h = cut_fnv1a(h, l->arch, strlen(l->arch) + 1);
    int32_t v = version;
    return cut_fnv1a(h, &v, sizeof v);
}

/* ---- compile -------------------------------------------------------------------------------------------------- */

/* Caller frees with cut_compiled_free. */
void cut_compiled_init(cut_compiled *out)
{
    memset(out, 0, sizeof *out);
    out->regs = out->spill_stores = out->spill_loads = out->smem_static = out->stack_frame = -1;
    out->log = cut_xstrdup("");
}

/* Runs NVRTC. Fills out->ok, cubin, log, compile_ms. Returns -1 only when NVRTC itself fails (not for a program
 * that does not compile). */
static int nvrtc_compile(const char *src, const char *name, const opt_list *l, int want_ptx, cut_compiled *out,
                         cut_err *e)
{
    nvrtcProgram prog = NULL;
    int rc = -1;
    double t0 = cut_now_s();
    NVRTC_CHECK(nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL), e);
    nvrtcResult cr = nvrtcCompileProgram(prog, l->argc, l->argv);
    size_t log_size = 0;
    NVRTC_CHECK(nvrtcGetProgramLogSize(prog, &log_size), e);
    char *log = cut_xmalloc(log_size + 1);
    log[0] = 0;
    nvrtcResult lr = nvrtcGetProgramLog(prog, log);
    log[log_size] = 0;
    free(out->log);
    out->log = log;
    NVRTC_CHECK(lr, e);

    if (cr == NVRTC_SUCCESS) {
        size_t n = 0;
        NVRTC_CHECK(nvrtcGetCUBINSize(prog, &n), e);
        if (n == 0) {
            cut_err_set(e, "NVRTC produced no cubin for %s (is the architecture a real sm_XX?)", l->arch);
            goto fail;
        }
        out->cubin = cut_xmalloc(n);
        NVRTC_CHECK(nvrtcGetCUBIN(prog, out->cubin), e);
        out->cubin_size = n;
        out->ok = 1;
        if (want_ptx) {
            size_t pn = 0;
            NVRTC_CHECK(nvrtcGetPTXSize(prog, &pn), e);
            out->ptx = cut_xmalloc(pn + 1);
            NVRTC_CHECK(nvrtcGetPTX(prog, out->ptx), e);
            out->ptx[pn] = 0;
        }
    } else if (cr == NVRTC_ERROR_COMPILATION) {
        out->ok = 0; /* a candidate's failure: the log says why */
    } else {
        /* Bad options, unsupported architecture, NVRTC internal failure: every source would fail the same way. */
        size_t ll = strlen(log);
        while (ll > 0 && isspace((unsigned char)log[ll - 1]))
            ll--;
        cut_err_set(e, "NVRTC cannot compile with options '%s': %s%s%.*s", l->joined.data, nvrtcGetErrorString(cr),
                    ll ? ": " : "", (int)ll, log);
        goto fail;
    }
    rc = 0;
fail:
    if (prog)
        nvrtcDestroyProgram(&prog);
    out->compile_ms = (cut_now_s() - t0) * 1e3;
    if (rc != 0) {
        free(out->cubin);
        free(out->ptx);
        out->cubin = NULL;
        out->ptx = NULL;
        out->cubin_size = 0;
        out->ok = 0;
    }
    return rc;
}

/* The cubin's own register count wins over the ptxas report's, which sometimes lacks it under concurrent compiles
 * (cubin.c). */
static void regs_from_cubin(cut_compiled *out)
{
    const int regs = out->ok ? cut_cubin_regs(out->cubin, out->cubin_size) : -1;
    if (regs >= 0)
        out->regs = regs;
}

void cut_compile_info_of(const cut_compiled *c, cut_compile_info *out)
{
    *out = (cut_compile_info){.compiled = 1, .ok = c->ok, .regs = c->regs, .spill_stores = c->spill_stores,
                              .spill_loads = c->spill_loads, .smem_static = c->smem_static,
                              .stack_frame = c->stack_frame, .compile_ms = c->compile_ms, .cache_hit = c->cache_hit,
                              .key = c->key};
}

/* src's compile under the options l in o's disk cache: 1 with out filled (cache_hit 1), 0 when there is none or no
 * cache (out as cut_compiled_init leaves it, its key set), -1 with e when the cache folder is unusable. */
static int cache_lookup(const char *src, const cut_compile_opts *o, const opt_list *l, int version, cut_compiled *out,
                        cut_err *e)
{
    out->key = compile_key(src, l, version);
    if (!o->cache_dir || !o->cache_dir[0])
        return 0;
    if (cut_private_dir(o->cache_dir, e) != 0)
        return cut_err_wrap(e, "compile cache folder unusable");
    if (!cut_cache_load(o->cache_dir, out->key, out))
        return 0;
    if (!o->want_ptx || out->ptx) {
        regs_from_cubin(out); /* an entry cached before the cubin was read may hold -1 */
        return 1;
    }
    const uint64_t key = out->key;
    cut_compiled_free(out); /* cached without its PTX: compile again */
    cut_compiled_init(out);
    out->key = key;
    return 0;
}

int cut_compile_lookup(const char *src, const cut_compile_opts *o, cut_compiled *out, cut_err *e)
{
    cut_compiled_init(out);
    if (!src || !o)
        return cut_err_set(e, "cut_compile_lookup: NULL %s", src ? "options" : "source");
    const int version = cut_nvrtc_version(e);
    if (version < 0)
        return -1;
    opt_list l;
    const int rc = opt_list_build(o, &l, e) != 0 ? -1 : cache_lookup(src, o, &l, version, out, e);
    opt_list_free(&l);
    return rc;
}

/* Caller frees out with cut_compiled_free (also after -1: out is always left freeable, log never NULL). */
int cut_compile_one(const char *src, const char *name, const cut_compile_opts *o, cut_compiled *out, cut_err *e)
{
    cut_compiled_init(out);
    if (!src || !o)
        return cut_err_set(e, "cut_compile_one: NULL %s", src ? "options" : "source");
    int version = cut_nvrtc_version(e);
    if (version < 0)
        return -1;
    opt_list l;
    int rc = -1;
    if (opt_list_build(o, &l, e) != 0)
        goto done;
    const int hit = cache_lookup(src, o, &l, version, out, e);
    if (hit != 0) {
        rc = hit > 0 ? 0 : -1;
        goto done;
    }

    if (nvrtc_compile(src, name ? name : CUT_DEFAULT_PROGRAM_NAME, &l, o->want_ptx, out, e) != 0)
        goto done;
    cut_parse_ptxas_info(out->log, out);
    regs_from_cubin(out);
    if (out->ok && o->cache_dir && o->cache_dir[0] && cut_cache_store(o->cache_dir, out->key, l.joined.data, out, e))
        goto done;
    rc = 0;
done:
    opt_list_free(&l);
    return rc;
}

/* ---- batch ---------------------------------------------------------------------------------------------------- */

typedef struct batch_ctx {
    const char *const *srcs;
    const cut_compile_opts *o;
    cut_compiled *out;
    cut_err *errs;
    int *rcs;
} batch_ctx;

static void batch_job(void *arg, int i)
{
    batch_ctx *b = arg;
    cut_compiled_free(&b->out[i]); /* the placeholder from cut_compile_batch; cut_compile_one starts afresh */
    b->rcs[i] = cut_compile_one(b->srcs[i], NULL, b->o, &b->out[i], &b->errs[i]);
}

/* Caller frees every out[i] with cut_compiled_free (all n are initialised, even after -1). */
int cut_compile_batch(const char *const *srcs, int n, const cut_compile_opts *o, cut_compiled *out, cut_err *e)
{
    if (n <= 0)
        return 0;
    for (int i = 0; i < n; i++)
        cut_compiled_init(&out[i]);
    if (!srcs || !o)
        return cut_err_set(e, "cut_compile_batch: NULL %s", srcs ? "options" : "sources");
    if (cut_nvrtc_version(e) < 0)
        return -1;
    batch_ctx b = {srcs, o, out, cut_xcalloc((size_t)n, sizeof(cut_err)), cut_xcalloc((size_t)n, sizeof(int))};
    int rc = cut_pool_run(o->nthreads, n, batch_job, &b, e);
    for (int i = 0; rc == 0 && i < n; i++) {
        if (b.rcs[i] != 0) {
            cut_err_set(e, "source %d of %d: %s", i, n, b.errs[i].msg);
            rc = -1;
        }
    }
    free(b.errs);
    free(b.rcs);
    return rc;
}

void cut_compiled_free(cut_compiled *c)
{
    if (!c)
        return;
    free(c->cubin);
    free(c->log);
    free(c->ptx);
    c->cubin = NULL;
    c->log = NULL;
    c->ptx = NULL;
    c->cubin_size = 0;
    c->ok = 0;
}
