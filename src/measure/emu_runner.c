/* cutune — the emulation runner: a cut_runner that compiles each call's CUDA C with the host compiler
 * (emu_compile.c, a trampoline per kernel so that arguments of any type arrive as the kernel expects them) and runs
 * it on host copies of the work's buffers, timed with the wall clock.
 *
 * A batch of calls is host-compiled in parallel (one compiler per CPU, 32 calls at a time), then run one by one. Per
 * call: inline PTX (asm) the host compile would see, or a thread block cluster -> CUT_ST_INVALID with the reason (they
 * cannot run here); a TMA map argument gets the emulated map (cut_emu_tma_encode) of its buffer; dynamic shared memory
 * over the emulated 227 KiB, a launch the emulator refuses (block over 1024 threads, ...), arguments that do not fit
 * the work or the kernel's parameters -> CUT_ST_LAUNCH_ERROR; host compile failure -> CUT_ST_COMPILE_ERROR with the
 * compiler's first lines; then as work.h describes: outputs poisoned, one launch on set 0 checked by the work's rule
 * (or captured), timed launches (the checked launch counts as the warm-up), one launch on set 1 checked (or
 * captured); an energy-observed call then runs under the energy meter (the host's wall time standing in for device
 * time) and is checked on set 1 once more. Emulated times say how fast the host runs the code, not the GPU: they
 * exist so the pipeline can be exercised end to end. A kernel that never terminates cannot be stopped in-process, so
 * timing.timeout_s is not enforced here (the emulation worker, emu_worker.c, enforces it). */
#include "cutune/emu.h"
#include "cutune/util.h"
#include "measure/emu_int.h"
#include "measure/verify.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct emu_runner {
    char work_dir[1024];
    int own_dir; /* created by us: emptied and removed on destroy */
    void (*launch_hook)(void *ctx, int on); /* cut_runner_emu_set_launch_hook */
    void *launch_ctx;
    int prepared;
    cut_work kw;                          /* the prepared work; its data[] point at kw_copy */
    void *kw_copy[CUT_WORK_MAX_BUFS][2];  /* inputs' two sets as given, outputs' references (256-byte aligned) */
    void *kw_in[CUT_WORK_MAX_BUFS][2];    /* inputs' two sets as the kernels get them (guarded) */
    void *kw_out[CUT_WORK_MAX_BUFS];      /* what the kernel writes, outputs only (guarded) */
    cut_measure_env env;
} emu_runner;

/* A buffer a kernel gets: 256-byte aligned like cudaMalloc, its end (rounded up to 256 bytes) against a page that
 * is neither readable nor writable, and one such page before it, so that an access past either end faults as it
 * would on a GPU instead of corrupting the heap (the emulation worker records the fault). Free with guarded_free. */
static void *guarded_alloc(size_t bytes)
{
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE), used = (bytes + 255) / 256 * 256,
                 span = (used + pg - 1) / pg * pg;
    unsigned char *base = mmap(NULL, span + 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        fprintf(stderr, "cutune: out of memory (%zu bytes)\n", bytes);
        abort();
    }
    mprotect(base, pg, PROT_NONE);
    mprotect(base + pg + span, pg, PROT_NONE);
    return base + pg + (span - used);
}

static void guarded_free(void *p, size_t bytes)
{
    if (!p)
        return;
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE), used = (bytes + 255) / 256 * 256,
                 span = (used + pg - 1) / pg * pg;
    munmap((unsigned char *)p - (span - used) - pg, span + 2 * pg);
}

static size_t kw_bytes(const cut_work_buf *b) { return b->elems * cut_elem_size(b->dtype); }

static void release_tensors(emu_runner *er)
{
    for (int i = 0; i < CUT_WORK_MAX_BUFS; i++) {
        const size_t n = er->prepared ? kw_bytes(&er->kw.bufs[i]) : 0;
        for (int s = 0; s < 2; s++) {
            free(er->kw_copy[i][s]);
            guarded_free(er->kw_in[i][s], n);
            er->kw_copy[i][s] = er->kw_in[i][s] = NULL;
        }
        guarded_free(er->kw_out[i], n);
        er->kw_out[i] = NULL;
    }
    er->prepared = 0;
}

/* 256-byte aligned like cudaMalloc, so float4 loads through reinterpret_cast are aligned. Caller frees. */
static void *alloc_aligned(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0)
        p = cut_xmalloc(bytes ? bytes : 1); /* aborts with a message: out of memory */
    return p;
}

/* Copies the first lines of a (compiler) message into dst, joined with " | ". */
static void first_lines(char *dst, size_t n, const char *src)
{
    size_t j = 0;
    for (const char *p = src; *p && j + 1 < n; p++) {
        if (*p == '\n') {
            if (!p[1])
                break;
            if (j + 4 >= n)
                break;
            memcpy(dst + j, " | ", 3);
            j += 3;
        } else {
            dst[j++] = *p;
        }
    }
    dst[j] = '\0';
}

/* One launch of whatever is measured: 0, or -1 with the reason in e. */
typedef int (*launch_fn)(void *arg, cut_err *e);

/* Launches once and times it. Returns 0, or -1 with the reason in res->error. */
static int launch_timed(launch_fn fn, void *arg, double *ms, cut_result *res)
{
    cut_err err = {{0}};
    double t0 = cut_now_s();
    if (fn(arg, &err) != 0) {
        res->status = CUT_ST_LAUNCH_ERROR;
        snprintf(res->error, sizeof res->error, "%s", err.msg);
        return -1;
    }
    *ms = (cut_now_s() - t0) * 1e3;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The checked launch was the warm-up: at least min(min_repeats, 3) timed launches on set 0, each armed first (outputs
 * poisoned, the module's state reset; outside the timed region), and min_total_ms, at most max_repeats. Fills res's
 * times and repeats; a failed launch leaves its status in res instead. */
static int dev_arm(void *ctx, int s, unsigned char poison, int reset, cut_result *res, int *fatal);
static int launch_kcall(void *arg, cut_err *e);
static void time_launches(const cut_timing *t, void *run, cut_result *res, int *fatal)
{
    int want = CUT_MAX(1, CUT_MIN(t->min_repeats, 3));
    int cap = CUT_MAX(want, t->max_repeats);
    double *times = cut_xmalloc((size_t)cap * sizeof *times);
    double total = 0;
    int n = 0;
    while (n < cap && (n < want || total < t->min_total_ms)) {
        if (dev_arm(run, 0, CUT_WORK_POISON0, 1, res, fatal) != 0 || launch_timed(launch_kcall, run, &times[n], res) != 0)
            break;
        total += times[n++];
    }
    if (res->status == CUT_ST_OK) {
        qsort(times, (size_t)n, sizeof *times, cmp_double);
        res->repeats = n;
        res->min_ms = times[0];
        res->max_ms = times[n - 1];
        res->median_ms = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
    }
    free(times);
}

/* Energy under emulation: the meter reads whatever NVML is loaded (in tests, the fake library) while the host
 * runs the kernel; it exercises the energy pipeline, not a GPU. */
typedef struct emu_energy_run {
    launch_fn fn; /* one launch of the call */
    void *arg;
    cut_result *res;
} emu_energy_run;

/* No queue here: the iterations run at once and are reported by the same call. */
static int emu_energy_chunk(void *arg, long long iters, long long *done_iters, double *device_s, cut_err *e)
{
    emu_energy_run *run = arg;
    double total = 0;
    for (long long i = 0; i < iters; i++) {
        double ms = 0;
        if (launch_timed(run->fn, run->arg, &ms, run->res) != 0)
            return cut_err_set(e, "%s", run->res->error);
        total += ms;
    }
    *done_iters = iters;
    *device_s = total * 1e-3;
    return 0;
}

/* ---- user kernels (work.h) ----------------------------------------------------------------------------- */

static void *copy_aligned(const void *src, size_t bytes)
{
    void *p = alloc_aligned(bytes);
    memcpy(p, src, bytes);
    return p;
}

/* A GEMM work whose references are left to the runner: computed here, on the host, from the stored inputs. */
static void host_refs(emu_runner *er, const cut_gemm *g)
{
    cut_work *w = &er->kw;
    const size_t na = w->bufs[0].elems, nb = w->bufs[1].elems, nc = w->bufs[2].elems;
    float *a = cut_xmalloc(na * sizeof *a), *b = cut_xmalloc(nb * sizeof *b);
    double *c = cut_xmalloc(nc * sizeof *c);
    for (int s = 0; s < 2; s++) {
        cut_elem_to_floats(w->bufs[0].dtype, w->bufs[0].data[s], na, a);
        cut_elem_to_floats(w->bufs[1].dtype, w->bufs[1].data[s], nb, b);
        cut_gemm_reference(g, a, b, c);
        cut_gemm_reference_beta(g, cut_gemm_work_cin(g, w, s), c);
        float *ref = alloc_aligned(nc * sizeof *ref);
        for (size_t i = 0; i < nc; i++)
            ref[i] = (float)c[i];
        er->kw_copy[2][s] = ref;
        w->bufs[2].data[s] = ref;
    }
    w->runner_refs = 0;
    free(a);
    free(b);
    free(c);
}

/* Copies the work into aligned host buffers (the caller's need not outlive the call; with take they are freed). A
 * GEMM of any dtype: its 16-bit inputs stay bits, which the SIMT, gemv and mma kernels widen or feed to their
 * emulated mma; a kernel with PTX the emulator cannot run is refused per call (kcall_refused). */
static int emu_prepare(cut_runner *r, cut_work *w, int take, cut_err *e)
{
    emu_runner *er = r->impl;
    int rc = cut_work_check(w, e);
    cut_gemm g;
    if (rc == 0 && w->op.kind == CUT_WORK_GEMM)
        rc = cut_gemm_of_work_op(&w->op, &g, e);
    if (rc == 0) {
        release_tensors(er);
        er->prepared = 1; /* the buffers below are sized by er->kw */
        er->kw = *w;
        er->kw.owns_data = 0;
        for (int i = 0; i < w->nbufs; i++) {
            cut_work_buf *b = &er->kw.bufs[i];
            for (int s = 0; s < 2; s++) {
                er->kw_copy[i][s] = b->data[s] ? copy_aligned(b->data[s], kw_bytes(b)) : NULL;
                b->data[s] = er->kw_copy[i][s];
                if (!b->is_output) {
                    er->kw_in[i][s] = guarded_alloc(kw_bytes(b));
                    memcpy(er->kw_in[i][s], b->data[s], kw_bytes(b));
                }
            }
            if (b->is_output)
                er->kw_out[i] = guarded_alloc(kw_bytes(b));
        }
        if (er->kw.runner_refs)
            host_refs(er, &g);
        er->prepared = 1;
        r->work = &er->kw;
    }
    if (take)
        cut_work_free(w);
    return rc;
}

/* Inline assembly is PTX in a CUDA kernel, which the host cannot run: the word asm (or __asm, __asm__) followed by
 * "(" or a volatile qualifier. */
static int uses_inline_asm(const char *src)
{
    static const char *const words[] = {"__asm__", "__asm", "asm"};
    for (size_t i = 0; i < CUT_ARRAY_LEN(words); i++) {
        size_t n = strlen(words[i]);
        for (const char *p = strstr(src, words[i]); p; p = strstr(p + 1, words[i])) {
            if ((p > src && (isalnum((unsigned char)p[-1]) || p[-1] == '_')) || isalnum((unsigned char)p[n]) ||
                p[n] == '_')
                continue;
            const char *q = p + n;
            while (isspace((unsigned char)*q))
                q++;
            if (*q == '(' || !strncmp(q, "volatile", 8) || !strncmp(q, "__volatile__", 12))
                return 1;
        }
    }
    return 0;
}

/* ---- which lines the host compile sees (the emulation defines CUT_EMU) ---- */

/* A conditional directive's condition as the host compile sees it: 1 true (CUT_EMU defined), 0 false, -1 unknown
 * (any other condition). p points past "#if"/"#elif" or at the rest of "#ifdef"/"#ifndef". */
static int emu_cond(const char *kw, const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    const size_t n = strlen("CUT_EMU");
    const int word = strncmp(p, "CUT_EMU", n) == 0 && !isalnum((unsigned char)p[n]) && p[n] != '_';
    if (!strcmp(kw, "ifdef"))
        return word ? 1 : -1;
    if (!strcmp(kw, "ifndef"))
        return word ? 0 : -1;
    if (!strncmp(p, "defined(CUT_EMU)", 16))
        return 1;
    if (!strncmp(p, "!defined(CUT_EMU)", 17))
        return 0;
    return -1;
}

typedef struct emu_frame {
    int taken;    /* a branch known to be compiled came already: the later ones are not */
    int excluded; /* the current branch is known not to be compiled under CUT_EMU */
} emu_frame;

/* Applies directive line p (after the '#' and blanks) to the stack of open conditionals; -1 when the source
 * defines or undefines CUT_EMU itself (or nests deeper than the stack), so that no line can be known excluded. */
static int emu_directive(const char *p, emu_frame *st, int *depth, int cap)
{
    char kw[8] = "";
    int n = 0;
    while (n < 7 && isalpha((unsigned char)p[n]))
        kw[n] = p[n], n++;
    kw[n] = 0;
    if (!strcmp(kw, "define") || !strcmp(kw, "undef")) {
        const char *nl = strchr(p, '\n'), *at = strstr(p, "CUT_EMU");
        return at && (!nl || at < nl) ? -1 : 0;
    }
    if (!strcmp(kw, "if") || !strcmp(kw, "ifdef") || !strcmp(kw, "ifndef")) {
        if (*depth == cap)
            return -1;
        const int c = emu_cond(kw, p + n);
        st[(*depth)++] = (emu_frame){.taken = c == 1, .excluded = c == 0};
    } else if (*depth > 0 && !strcmp(kw, "elif")) {
        emu_frame *f = &st[*depth - 1];
        const int c = emu_cond(kw, p + n);
        f->excluded = f->taken || c == 0;
        f->taken |= c == 1;
    } else if (*depth > 0 && !strcmp(kw, "else")) {
        emu_frame *f = &st[*depth - 1];
        /* known true when every earlier branch was known false; unknown otherwise (kept) */
        f->excluded = f->taken;
        f->taken = 1;
    } else if (*depth > 0 && !strcmp(kw, "endif")) {
        (*depth)--;
    }
    return 0;
}

/* A copy of src (malloc'd; NULL when it cannot tell) with every line inside a conditional branch that the host
 * compile skips because CUT_EMU is defined (#ifndef CUT_EMU, the #else of #ifdef CUT_EMU, ...) blanked out. */
static char *emu_visible(const char *src)
{
    emu_frame st[64];
    int depth = 0;
    char *out = cut_xstrdup(src);
    for (char *line = out; line && *line;) {
        char *nl = strchr(line, '\n');
        const char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        int excluded = 0;
        for (int i = 0; i < depth; i++)
            excluded |= st[i].excluded;
        if (*p == '#') {
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            if (emu_directive(p, st, &depth, (int)CUT_ARRAY_LEN(st)) != 0) {
                free(out);
                return NULL;
            }
        } else if (excluded) {
            memset(line, ' ', nl ? (size_t)(nl - line) : strlen(line));
        }
        line = nl ? nl + 1 : NULL;
    }
    return out;
}

/* Inline PTX the host compile would see: asm outside the branches CUT_EMU excludes (a template that emulates its
 * PTX under CUT_EMU, like igemm_tc, runs here). */
static int emu_sees_inline_asm(const char *src)
{
    char *visible = emu_visible(src);
    const int found = uses_inline_asm(visible ? visible : src);
    free(visible);
    return found;
}

/* A thread block cluster the host compile would see (the word __cluster_dims__ outside the branches CUT_EMU
 * excludes): its blocks share shared memory and barriers, and the emulator runs a launch's blocks one at a time per
 * worker. */
static int emu_sees_cluster(const char *src)
{
    static const char word[] = "__cluster_dims__";
    char *visible = emu_visible(src);
    const char *text = visible ? visible : src;
    int found = 0;
    for (const char *p = strstr(text, word); p && !found; p = strstr(p + 1, word))
        found = (p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
                !(isalnum((unsigned char)p[sizeof word - 1]) || p[sizeof word - 1] == '_');
    free(visible);
    return found;
}

/* One compiled call on the work: the verify.h device of the emulator. argv[i] is the address of argument i
 * (cut_emu_launch_argv) for the armed input set. */
typedef struct kcall_run {
    emu_runner *er;
    cut_emu_kernel *k;
    const cut_call *c;
    const cut_timing *timing;
    int set;                                       /* the armed input set */
    void *ptrs[CUT_CALL_MAX_ARGS];                 /* buffer arguments: host addresses */
    unsigned long long scalars[CUT_CALL_MAX_ARGS]; /* scalar arguments: their bytes, zero-extended and aligned */
    void *argv[CUT_CALL_MAX_ARGS];
    _Alignas(64) cut_emu_tmap maps[CUT_CALL_MAX_ARGS]; /* TMA map arguments: the emulated maps of the armed set,
                                                        * aligned as the kernel's CUtensorMap parameter */
    unsigned char *state0;                         /* the module's writable data as loaded (state_bytes) */
    size_t state_bytes;
} kcall_run;

static void kcall_bind(kcall_run *run, int set)
{
    const cut_call *c = run->c;
    run->set = set;
    for (int i = 0; i < c->nargs; i++) {
        const cut_call_arg *a = &c->args[i];
        if (a->buf >= 0) {
            const cut_work_buf *b = &run->er->kw.bufs[a->buf];
            run->ptrs[i] = b->is_output ? run->er->kw_out[a->buf] : run->er->kw_in[a->buf][set];
            run->argv[i] = &run->ptrs[i];
            cut_err e;
            if (a->tma && cut_emu_tma_encode(&a->desc, run->ptrs[i], kw_bytes(b), cut_elem_size(b->dtype),
                                              &run->maps[i], &e) == 0) /* checked before (call_refused) */
                run->argv[i] = &run->maps[i];
        } else {
            run->scalars[i] = 0;
            memcpy(&run->scalars[i], a->bytes, a->size);
            run->argv[i] = &run->scalars[i];
        }
    }
}

static int launch_kcall(void *arg, cut_err *e)
{
    kcall_run *run = arg;
    void *base[CUT_CALL_MAX_ARGS];
    size_t bytes[CUT_CALL_MAX_ARGS];
    int n = 0;
    for (int i = 0; i < run->c->nargs; i++)
        if (run->c->args[i].buf >= 0) {
            base[n] = run->ptrs[i];
            bytes[n++] = kw_bytes(&run->er->kw.bufs[run->c->args[i].buf]);
        }
    cut_emu_set_globals(run->k, base, bytes, n);
    return cut_emu_launch_argv(run->k, run->c->grid, run->c->block, run->argv, e);
}

/* ---- the device hooks (verify.h) ---- */

static int dev_arm(void *ctx, int s, unsigned char poison, int reset, cut_result *res, int *fatal)
{
    (void)res;
    (void)fatal;
    kcall_run *run = ctx;
    emu_runner *er = run->er;
    for (int i = 0; i < er->kw.nbufs; i++)
        if (er->kw.bufs[i].is_output) /* an accumulated output starts at zero instead */
            memset(er->kw_out[i], er->kw.bufs[i].zero_init ? 0 : poison, kw_bytes(&er->kw.bufs[i]));
    if (reset && run->state_bytes)
        memcpy((void *)run->k->data_lo, run->state0, run->state_bytes);
    kcall_bind(run, s);
    return 0;
}

static int dev_launch(void *ctx, cut_result *res, int *fatal)
{
    (void)fatal;
    double ms;
    return launch_timed(launch_kcall, ctx, &ms, res);
}

static int dev_read(void *ctx, int i, int s, void *host, cut_result *res, int *fatal)
{
    (void)res;
    (void)fatal;
    kcall_run *run = ctx;
    const cut_work_buf *b = &run->er->kw.bufs[i];
    memcpy(host, b->is_output ? run->er->kw_out[i] : run->er->kw_in[i][s], kw_bytes(b));
    return 0;
}

static int dev_restore(void *ctx, int i, int s, cut_result *res, int *fatal)
{
    (void)res;
    (void)fatal;
    kcall_run *run = ctx;
    memcpy(run->er->kw_in[i][s], run->er->kw_copy[i][s], kw_bytes(&run->er->kw.bufs[i]));
    return 0;
}

static int dev_state(void *ctx, void *host, cut_result *res, int *fatal)
{
    (void)res;
    (void)fatal;
    kcall_run *run = ctx;
    memcpy(host, run->k->data_lo, run->state_bytes);
    return 0;
}

static int dev_time(void *ctx, cut_result *res, int *fatal)
{
    kcall_run *run = ctx;
    time_launches(run->timing, run, res, fatal);
    return res->status == CUT_ST_OK ? 0 : -1;
}

/* Why the call cannot run here (CUT_ST_INVALID or a refused launch), as the status in res; 0 when it can. */
static int kcall_refused(const cut_call *c, cut_result *res)
{
    if (emu_sees_cluster(c->src)) {
        res->status = CUT_ST_INVALID;
        snprintf(res->error, sizeof res->error, "thread block clusters (__cluster_dims__) cannot run under emulation: "
                 "the emulator runs a launch's blocks one at a time per worker, so the blocks of a cluster cannot "
                 "share shared memory or barriers; this kernel needs a GPU");
        return -1;
    }
    if (c->gpu_only || emu_sees_inline_asm(c->src)) {
        res->status = CUT_ST_INVALID;
        snprintf(res->error, sizeof res->error, "inline PTX (asm) cannot run under emulation: this kernel needs a GPU");
        return -1;
    }
    if (c->smem > CUT_EMU_DSMEM_BYTES) {
        res->status = CUT_ST_LAUNCH_ERROR;
        snprintf(res->error, sizeof res->error, "%u bytes of dynamic shared memory are over the %u per block that "
                 "emulation provides", c->smem, CUT_EMU_DSMEM_BYTES);
        return -1;
    }
    return 0;
}

/* Arguments that do not match the kernel's parameters would make the trampoline read the wrong bytes, or past
 * argv: a refused launch, as the status in res. 0 when they match. */
static int kcall_mismatch(const cut_work *w, const cut_call *c, const cut_emu_kernel *k, cut_result *res)
{
    unsigned sizes[CUT_CALL_MAX_ARGS];
    int is_ptr[CUT_CALL_MAX_ARGS];
    int n = cut_emu_kernel_params(k, sizes, is_ptr, CUT_CALL_MAX_ARGS);
    if (n != c->nargs) {
        res->status = CUT_ST_LAUNCH_ERROR;
        snprintf(res->error, sizeof res->error, "kernel %s takes %d parameters but the call passes %d arguments",
                 c->entry, n, c->nargs);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const cut_call_arg *a = &c->args[i];
        if (a->tma && (is_ptr[i] || sizes[i] != sizeof(cut_emu_tmap))) {
            res->status = CUT_ST_LAUNCH_ERROR;
            snprintf(res->error, sizeof res->error, "argument %d is a TMA map of buffer '%s' but parameter %d of %s "
                     "is not a %zu-byte value", i, w->bufs[a->buf].name, i, c->entry, sizeof(cut_emu_tmap));
            return -1;
        }
        if (a->buf >= 0 && !a->tma && !is_ptr[i]) {
            res->status = CUT_ST_LAUNCH_ERROR;
            snprintf(res->error, sizeof res->error, "argument %d is buffer '%s' but parameter %d of %s is not a "
                     "pointer", i, w->bufs[a->buf].name, i, c->entry);
            return -1;
        }
        if (a->buf < 0 && (is_ptr[i] || sizes[i] != a->size)) {
            res->status = CUT_ST_LAUNCH_ERROR;
            snprintf(res->error, sizeof res->error, "argument %d is a %u-byte scalar but parameter %d of %s is a "
                     "%u-byte %s", i, a->size, i, c->entry, sizes[i], is_ptr[i] ? "pointer" : "value");
            return -1;
        }
    }
    return 0;
}

/* With the launch hook armed, checks and times (or captures into cap) the compiled call run->k through the one
 * protocol (verify.h), and with plan measures the energy and checks set 1 once more (rc: the meter's result). */
static int kcall_measure(cut_runner *r, kcall_run *run, cut_work_outputs *cap, const cut_energy_plan *plan,
                         cut_result *res, cut_energy_result *eout, cut_err *e)
{
    emu_runner *er = r->impl;
    const cut_call *c = run->c;
    int rc = 0, fatal = 0;
    if (er->launch_hook)
        er->launch_hook(er->launch_ctx, 1);
    run->timing = &r->timing;
    if (run->k->data_hi > run->k->data_lo) {
        run->state_bytes = (size_t)(run->k->data_hi - run->k->data_lo);
        run->state0 = cut_xmalloc(run->state_bytes);
        memcpy(run->state0, run->k->data_lo, run->state_bytes);
    }
    cut_vf v = {.work = &er->kw, .capture = cap};
    cut_call_tolerance(&er->kw, c, &v.atol, &v.rtol);
    const cut_vf_dev d = {.ctx = run, .arm = dev_arm, .launch = dev_launch, .read = dev_read, .restore = dev_restore,
                          .state_bytes = run->state_bytes, .state = dev_state, .time = dev_time};
    if (kcall_mismatch(&er->kw, c, run->k, res) == 0)
        cut_vf_check_and_time(&v, &d, res, &fatal);
    if (plan && res->status == CUT_ST_OK) { /* the energy run launches on set 1, armed by the last check */
        emu_energy_run en = {launch_kcall, run, res};
        rc = cut_energy_measure(plan, emu_energy_chunk, &en, er->kw.flops, eout, e);
        if (rc == 0 && res->status == CUT_ST_OK)
            cut_vf_checked(&v, &d, 1, CUT_WORK_POISON1, CUT_ST_WRONG_LATER, "after the energy run, fresh inputs: ",
                           res, &fatal);
    }
    if (er->launch_hook)
        er->launch_hook(er->launch_ctx, 0);
    free(run->state0);
    return rc;
}

/* Host compilation of a batch of calls, in parallel (cut_parallel_for): compiling is most of the emulation runner's
 * time. */
typedef struct compile_job {
    const char *work_dir;
    const cut_call *calls;
    const int *skip;          /* [n]: 1 where the call cannot run here at all */
    cut_emu_kernel **kernels; /* [n]: NULL where skipped or failed */
    cut_err *errs;            /* [n] */
    double stop_at;           /* the runner's: no compile starts after it (its call will not run) */
} compile_job;

static void compile_one(void *arg, long i)
{
    compile_job *j = arg;
    if (j->stop_at > 0 && cut_now_s() >= j->stop_at)
        return; /* kernels[i] stays NULL; the call is marked not run before it would be */
    if (!j->skip[i] &&
        cut_emu_compile_call(j->calls[i].src, j->calls[i].entry, j->work_dir, &j->kernels[i], &j->errs[i]) != 0)
        j->kernels[i] = NULL;
}

/* Why call c cannot run on the work at all, as the status in res (INVALID: not under emulation; LAUNCH_ERROR: it does
 * not fit the work, or a GPU would refuse it too); 0 when it can. */
static int call_refused(const emu_runner *er, const cut_call *c, cut_result *res)
{
    cut_err ce = {{0}};
    if (!c->src) {
        res->status = CUT_ST_INVALID;
        snprintf(res->error, sizeof res->error, "no kernel source to emulate");
        return -1;
    }
    if (cut_call_check(&er->kw, c, &ce) != 0) {
        res->status = CUT_ST_LAUNCH_ERROR;
        snprintf(res->error, sizeof res->error, "%.250s", ce.msg);
        return -1;
    }
    for (int i = 0; i < c->nargs; i++) { /* each TMA map as the GPU worker checks it before encoding */
        const cut_call_arg *a = &c->args[i];
        cut_emu_tmap map;
        if (a->tma && cut_emu_tma_encode(&a->desc, er->kw_in[a->buf][0], kw_bytes(&er->kw.bufs[a->buf]),
                                         cut_elem_size(er->kw.bufs[a->buf].dtype), &map, &ce) != 0) {
            res->status = CUT_ST_LAUNCH_ERROR;
            snprintf(res->error, sizeof res->error, "argument %d: %.250s", i, ce.msg);
            return -1;
        }
    }
    return kcall_refused(c, res);
}

/* One compiled call (k, or the compiler's complaint cerr): as kcall_measure, and the kernel freed. */
static int run_compiled(cut_runner *r, const cut_call *c, cut_emu_kernel *k, const cut_err *cerr,
                        const cut_run_opts *o, cut_result *res, cut_err *e)
{
    emu_runner *er = r->impl;
    if (!k) {
        res->status = CUT_ST_COMPILE_ERROR;
        first_lines(res->error, sizeof res->error, cerr->msg);
        return 0;
    }
    kcall_run run = {.er = er, .c = c, .k = k};
    const cut_energy_plan *plan = o ? o->energy : NULL;
    int rc = kcall_measure(r, &run, o ? o->outs : NULL, plan, res, plan ? o->er : NULL, e);
    cut_emu_kernel_free(k);
    if (plan && res->status != CUT_ST_OK) {
        memset(o->er, 0, sizeof *o->er); /* no energy for a call that failed */
        rc = 0;
    }
    if (o && o->outs && res->status != CUT_ST_OK)
        cut_work_outputs_free(o->outs); /* nothing half-captured becomes a reference */
    return rc;
}

#define EMU_BATCH 32 /* calls compiled (and loaded) at a time */

static int emu_run(cut_runner *r, const cut_call *calls, int n, const cut_run_opts *o, cut_result *res, cut_err *e)
{
    emu_runner *er = r->impl;
    if (!er->prepared)
        return cut_err_set(e, "emulation runner: run() without a prepared work");
    if (cut_run_opts_check("emulation runner", n, o, &er->kw, e) != 0)
        return -1;
    if (o && o->outs)
        memset(o->outs, 0, sizeof *o->outs);
    cut_emu_kernel *kernels[EMU_BATCH];
    int skip[EMU_BATCH];
    cut_err *errs = cut_xcalloc(EMU_BATCH, sizeof *errs);
    int rc = 0;
    for (int b = 0; b < n && rc == 0; b += EMU_BATCH) {
        const int m = CUT_MIN(EMU_BATCH, n - b);
        memset(kernels, 0, sizeof kernels);
        const int late = r->stop_at > 0 && cut_now_s() >= r->stop_at; /* nothing of this part is compiled */
        for (int i = 0; i < m; i++) {
            cut_result_reset(&res[b + i]);
            res[b + i].not_run = late;
            skip[i] = late || call_refused(er, &calls[b + i], &res[b + i]) != 0;
        }
        compile_job j = {.work_dir = er->work_dir, .calls = calls + b, .skip = skip, .kernels = kernels,
                         .errs = errs, .stop_at = r->stop_at};
        cut_parallel_for(m, 1e9, compile_one, &j); /* a host compile is ~1e9 operations: always worth a thread */
        for (int i = 0; i < m; i++) {
            if (!skip[i] && rc == 0 && r->stop_at > 0 && cut_now_s() >= r->stop_at) {
                res[b + i].not_run = 1; /* the time budget is spent: this call is not started */
                skip[i] = 1;
            }
            if (skip[i] || rc != 0) {
                cut_emu_kernel_free(kernels[i]);
            } else {
                rc = run_compiled(r, &calls[b + i], kernels[i], &errs[i], o, &res[b + i], e);
            }
            if (rc == 0 && r->on_result)
                r->on_result(r->on_result_ctx, &res[b + i]);
        }
    }
    free(errs);
    return rc;
}

static const cut_measure_env *emu_env(cut_runner *r)
{
    emu_runner *er = r->impl;
    return &er->env;
}

static void remove_dir_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    char p[2048];
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static void emu_destroy(cut_runner *r)
{
    emu_runner *er = r->impl;
    if (er) {
        release_tensors(er);
        if (er->own_dir)
            remove_dir_files(er->work_dir);
        free(er);
    }
    free(r);
}

void cut_runner_emu_set_launch_hook(cut_runner *r, void (*hook)(void *ctx, int on), void *ctx)
{
    emu_runner *er = r->impl;
    er->launch_hook = hook;
    er->launch_ctx = ctx;
}

double cut_emu_trial_seconds(double flops)
{
    return flops > 0 ? CUT_EMU_LAUNCHES_PER_TRIAL * flops / (CUT_EMU_GFLOPS * 1e9) : 0;
}

/* Allocates the runner; caller frees with cut_runner_free. */
cut_runner *cut_runner_emu_new(const char *work_dir, const cut_timing *t, cut_err *e)
{
    emu_runner *er = cut_xcalloc(1, sizeof *er);
    if (work_dir) {
        if (snprintf(er->work_dir, sizeof er->work_dir, "%s", work_dir) >= (int)sizeof er->work_dir) {
            free(er);
            cut_err_set(e, "emulation work directory path too long");
            return NULL;
        }
        if (cut_mkdirs(er->work_dir, e) != 0) {
            free(er);
            return NULL;
        }
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(er->work_dir, sizeof er->work_dir, "%s/cutune-emu-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(er->work_dir)) {
            cut_err_set(e, "cannot create emulation work directory %s: %s", er->work_dir, strerror(errno));
            free(er);
            return NULL;
        }
        er->own_dir = 1;
    }
    snprintf(er->env.backend, sizeof er->env.backend, "emu");
    snprintf(er->env.gpu_name, sizeof er->env.gpu_name, "host-emulation");
    er->env.gpu_uuid[0] = '\0';
    er->env.driver_version = 0;
    er->env.driver_string[0] = '\0';
    er->env.sm_clock_mhz = -1;
    er->env.power_limit_w = -1;
    er->env.other_procs = -1;
    er->env.clock_events = -1;

    cut_runner *r = cut_xcalloc(1, sizeof *r);
    r->impl = er;
    r->prepare = emu_prepare;
    r->run = emu_run;
    r->env = emu_env;
    r->destroy = emu_destroy;
    if (t)
        r->timing = *t;
    else
        cut_timing_default(&r->timing);
    return r;
}
