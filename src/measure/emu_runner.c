/* cutune — the emulation runner: a cut_runner that compiles each candidate's CUDA C with the host compiler
 * (emu_compile.c), checks it against the double-precision CPU reference and times it with the wall clock.
 *
 * A batch is host-compiled in parallel (one compiler per CPU, 32 candidates at a time), then run one by one.
 * Per candidate: inline PTX, or dynamic shared memory over the emulated 227 KiB -> CUT_ST_INVALID with the
 * reason (they cannot run here); host compile failure -> CUT_ST_COMPILE_ERROR with the compiler's first lines;
 * launch refused (block over 1024 threads, ...) -> CUT_ST_LAUNCH_ERROR; output poisoned with NaN, one launch,
 * compare (cut_conv_tolerance times the kernel's tol_scale) -> CUT_ST_WRONG_RESULT with the first mismatches; then
 * timed launches (the checked launch counts as the warm-up) and a second comparison. Emulated times say how fast
 * the host runs the code, not the GPU: they exist so the pipeline can be exercised end to end. A kernel that never
 * terminates cannot be stopped in-process, so timing.timeout_s is not enforced here.
 * User kernels (prepare_kernel/run_kernel, work.h) run on host copies of the work's buffers, called through
 * cut_emu_compile_call so that scalars of any type arrive as the kernel expects them: inline asm -> CUT_ST_INVALID;
 * arguments that do not match the kernel's parameters -> CUT_ST_LAUNCH_ERROR; then check (or capture) on set 0,
 * time on set 0 as above, check (or capture) on set 1; energy_kernel then also runs the call under the energy meter
 * (the host's wall time standing in for device time) and checks set 1 once more. */
#include "cutune/emu.h"
#include "cutune/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct emu_runner {
    char work_dir[1024];
    int own_dir; /* created by us: emptied and removed on destroy */
    void (*launch_hook)(void *ctx, int on); /* cut_runner_emu_set_launch_hook */
    void *launch_ctx;
    int prepared;
    int is_gemm; /* 1: a GEMM is prepared (in, w, out = A, B, C; checked by relative Frobenius error) */
    cut_conv conv;
    cut_gemm gemm;
    float *set_in[2], *set_w[2]; /* two input sets, as the GPU runner's: set 1 checks again after timing */
    double *set_ref[2];
    float *in, *w, *out; /* in, w (and ref) are the set in use (use_set) */
    double *ref;
    size_t n_out;
    double atol, rtol;
    int is_kernel;                       /* 1: a user kernel's work is prepared (work.h); the fields below */
    cut_work kw;                        /* its data[] point at kw_copy */
    void *kw_copy[CUT_WORK_MAX_BUFS][2];   /* inputs' two sets (256-byte aligned), outputs' references */
    void *kw_out[CUT_WORK_MAX_BUFS];       /* what the kernel writes, outputs only (256-byte aligned) */
    cut_measure_env env;
} emu_runner;

static void release_tensors(emu_runner *er)
{
    for (int s = 0; s < 2; s++) {
        free(er->set_in[s]);
        free(er->set_w[s]);
        free(er->set_ref[s]);
        er->set_in[s] = er->set_w[s] = NULL;
        er->set_ref[s] = NULL;
    }
    free(er->out);
    er->in = er->w = er->out = NULL;
    er->ref = NULL;
    for (int i = 0; i < CUT_WORK_MAX_BUFS; i++) {
        free(er->kw_copy[i][0]);
        free(er->kw_copy[i][1]);
        free(er->kw_out[i]);
        er->kw_copy[i][0] = er->kw_copy[i][1] = er->kw_out[i] = NULL;
    }
    er->is_kernel = 0;
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

static void use_set(emu_runner *er, int s)
{
    er->in = er->set_in[s];
    er->w = er->set_w[s];
    er->ref = er->set_ref[s];
}

/* Both input sets of na and nb floats (set s from cut_input_set_seed, as the GPU runner draws them), the output of
 * n_out floats and room for both references; set 0 in use. */
static void alloc_sets(emu_runner *er, size_t na, size_t nb, uint64_t seed)
{
    for (int s = 0; s < 2; s++) {
        const uint64_t sd = cut_input_set_seed(seed, s);
        er->set_in[s] = alloc_aligned(na * sizeof(float));
        er->set_w[s] = alloc_aligned(nb * sizeof(float));
        er->set_ref[s] = cut_xmalloc(er->n_out * sizeof(double));
        /* Independent streams for the two inputs from one seed. */
        cut_fill_uniform(er->set_in[s], na, sd);
        cut_fill_uniform(er->set_w[s], nb, sd ^ 0x9e3779b97f4a7c15ULL);
    }
    er->out = alloc_aligned(er->n_out * sizeof(float));
    use_set(er, 0);
}

static int emu_prepare(cut_runner *r, const cut_conv *c, uint64_t seed, cut_err *e)
{
    emu_runner *er = r->impl;
    if (cut_conv_validate(c, e) != 0)
        return -1;
    release_tensors(er);
    er->conv = *c;
    size_t n_in = cut_conv_in_elems(c), n_w = cut_conv_w_elems(c);
    er->n_out = cut_conv_out_elems(c);
    alloc_sets(er, n_in, n_w, seed);
    for (int s = 0; s < 2; s++)
        cut_conv_reference(c, er->set_in[s], er->set_w[s], er->set_ref[s]);
    cut_conv_tolerance(c, &er->atol, &er->rtol);
    er->is_gemm = 0;
    er->prepared = 1;
    return 0;
}

/* GEMMs in fp32 only: the other dtypes' kernels store halves or run tensor-core PTX, which need a GPU. */
static int emu_prepare_gemm(cut_runner *r, const cut_gemm *g, uint64_t seed, cut_err *e)
{
    emu_runner *er = r->impl;
    if (cut_gemm_validate(g, e) != 0)
        return -1;
    if (g->dtype != CUT_DT_FP32)
        return cut_err_set(e, "the emulation backend runs fp32 GEMMs only (%s kernels need tensor cores: use a GPU)",
                           cut_dtype_name(g->dtype));
    release_tensors(er);
    er->gemm = *g;
    size_t na = cut_gemm_a_elems(g), nb = cut_gemm_b_elems(g);
    er->n_out = cut_gemm_c_elems(g);
    alloc_sets(er, na, nb, seed);
    for (int s = 0; s < 2; s++)
        cut_gemm_reference(g, er->set_in[s], er->set_w[s], er->set_ref[s]);
    er->is_gemm = 1;
    er->prepared = 1;
    return 0;
}

static void poison(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = NAN;
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

/* A conv or GEMM candidate, launched with (in, w, out). */
typedef struct conv_launch {
    emu_runner *er;
    cut_emu_kernel *k;
    const cut_kernel_src *ks;
} conv_launch;

static int launch_conv(void *arg, cut_err *e)
{
    const conv_launch *cl = arg;
    void *args[3] = {cl->er->in, cl->er->w, cl->er->out};
    return cut_emu_launch(cl->k, cl->ks->grid, cl->ks->block, args, 3, e);
}

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

/* Compares with the reference under the workload's tolerance times the kernel's factor (cut_conv_tolerance_scaled). */
/* A GEMM: relative Frobenius error within the dtype's tolerance (NaN poison left anywhere fails). */
static int check_gemm_output(emu_runner *er, cut_result *res, const char *when)
{
    double rel = cut_gemm_rel_error(er->out, er->ref, er->n_out), tol = cut_gemm_tolerance(er->gemm.dtype);
    if (!(rel <= tol)) {
        res->status = CUT_ST_WRONG_RESULT;
        snprintf(res->error, sizeof res->error, "%srelative error %.3g is over the %s tolerance %.3g", when, rel,
                 cut_dtype_name(er->gemm.dtype), tol);
        res->max_abs_err = rel;
        return -1;
    }
    if (rel > res->max_abs_err)
        res->max_abs_err = rel;
    return 0;
}

static int check_output(emu_runner *er, const cut_kernel_src *ks, cut_result *res, const char *when)
{
    if (er->is_gemm)
        return check_gemm_output(er, res, when);
    char msg[200];
    double maxe = 0, atol = er->atol, rtol = er->rtol;
    if (isfinite(ks->tol_scale) && ks->tol_scale > 1.0) {
        atol *= ks->tol_scale;
        rtol *= ks->tol_scale;
    }
    size_t bad = cut_compare(er->out, er->ref, er->n_out, atol, rtol, &maxe, msg, sizeof msg);
    if (maxe > res->max_abs_err)
        res->max_abs_err = maxe;
    if (bad) {
        res->status = CUT_ST_WRONG_RESULT;
        snprintf(res->error, sizeof res->error, "%s%zu of %zu wrong (atol %.3g rtol %.3g): %s", when, bad,
                 er->n_out, atol, rtol, msg);
        return -1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The checked launch was the warm-up: at least min(min_repeats, 3) timed launches and min_total_ms, at most
 * max_repeats. Fills res's times and repeats; a failed launch leaves its status in res instead. */
static void time_launches(const cut_timing *t, launch_fn fn, void *arg, cut_result *res)
{
    int want = CUT_MAX(1, CUT_MIN(t->min_repeats, 3));
    int cap = CUT_MAX(want, t->max_repeats);
    double *times = cut_xmalloc((size_t)cap * sizeof *times);
    double total = 0;
    int n = 0;
    while (n < cap && (n < want || total < t->min_total_ms)) {
        if (launch_timed(fn, arg, &times[n], res) != 0)
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

/* Host compilation of a batch, in parallel: compiling is most of the emulation runner's time. */
typedef struct compile_job {
    const char *work_dir;
    const cut_candidate *cands;
    cut_emu_kernel **kernels; /* [n]: NULL where skipped or failed */
    cut_err *errs;            /* [n] */
    int n;
    int next;
    pthread_mutex_t mu;
} compile_job;

/* Why a candidate cannot run here at all, or NULL. */
static const char *skip_reason(const cut_kernel_src *ks)
{
    if (!ks || !ks->src)
        return "no kernel source to emulate";
    if (ks->uses_inline_ptx)
        return "inline PTX cannot run under emulation: this kernel needs a GPU";
    if (ks->ntma > 0)
        return "TMA tensor maps cannot run under emulation: this kernel needs a GPU";
    if (ks->smem_dynamic > CUT_EMU_DSMEM_BYTES)
        return "dynamic shared memory over the 227 KiB per block that emulation provides";
    return NULL;
}

static void *compile_worker(void *arg)
{
    compile_job *j = arg;
    for (;;) {
        pthread_mutex_lock(&j->mu);
        int i = j->next < j->n ? j->next++ : -1;
        pthread_mutex_unlock(&j->mu);
        if (i < 0)
            return NULL;
        const cut_kernel_src *ks = j->cands[i].ks;
        if (skip_reason(ks))
            continue;
        if (cut_emu_compile(ks->src, ks->entry, j->work_dir, &j->kernels[i], &j->errs[i]) != 0)
            j->kernels[i] = NULL;
    }
}

static void compile_all(const char *work_dir, const cut_candidate *cands, int n, cut_emu_kernel **kernels,
                        cut_err *errs)
{
    compile_job j = {.work_dir = work_dir, .cands = cands, .kernels = kernels, .errs = errs, .n = n};
    pthread_mutex_init(&j.mu, NULL);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = (int)CUT_MIN(CUT_MAX(ncpu, 1L), (long)n);
    pthread_t tids[64];
    int started = 0;
    for (int i = 1; i < CUT_MIN(nt, 64); i++) {
        if (pthread_create(&tids[started], NULL, compile_worker, &j) != 0)
            break;
        started++;
    }
    compile_worker(&j);
    for (int i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    pthread_mutex_destroy(&j.mu);
}

static void measure_one(cut_runner *r, const cut_candidate *cand, cut_emu_kernel *k, const cut_err *cerr,
                        cut_result *res)
{
    emu_runner *er = r->impl;
    const cut_kernel_src *ks = cand->ks;
    cut_result_reset(res);
    const char *why = skip_reason(ks);
    if (why) {
        res->status = CUT_ST_INVALID;
        snprintf(res->error, sizeof res->error, "%s", why);
        return;
    }
    if (!k) {
        res->status = CUT_ST_COMPILE_ERROR;
        first_lines(res->error, sizeof res->error, cerr->msg);
        return;
    }
    double ms = 0;
    conv_launch cl = {er, k, ks};
    poison(er->out, er->n_out);
    if (launch_timed(launch_conv, &cl, &ms, res) != 0)
        return;
    if (check_output(er, ks, res, "") != 0)
        return;
    time_launches(&r->timing, launch_conv, &cl, res);
    if (res->status != CUT_ST_OK)
        return;
    /* Once more on the fresh inputs of set 1: a kernel that remembers its inputs or hard-codes outputs fails. */
    cut_result again = *res;
    use_set(er, 1);
    poison(er->out, er->n_out);
    if (launch_timed(launch_conv, &cl, &ms, &again) != 0 ||
        check_output(er, ks, &again, "after timing, fresh inputs: ") != 0) {
        *res = again;
        res->median_ms = res->min_ms = res->max_ms = -1;
    } else {
        res->max_abs_err = again.max_abs_err;
    }
    use_set(er, 0);
}

#define EMU_BATCH 32 /* candidates compiled (and loaded) at a time */

static int emu_measure(cut_runner *r, const cut_candidate *cands, int n, cut_result *res, cut_err *e)
{
    emu_runner *er = r->impl;
    if (!er->prepared || er->is_kernel)
        return cut_err_set(e, "emulation runner: measure() without a prepared conv or GEMM workload");
    cut_emu_kernel *kernels[EMU_BATCH];
    cut_err *errs = cut_xcalloc(EMU_BATCH, sizeof *errs);
    for (int b = 0; b < n; b += EMU_BATCH) {
        int m = CUT_MIN(EMU_BATCH, n - b);
        memset(kernels, 0, sizeof kernels);
        compile_all(er->work_dir, cands + b, m, kernels, errs);
        for (int i = 0; i < m; i++) {
            measure_one(r, &cands[b + i], kernels[i], &errs[i], &res[b + i]);
            cut_emu_kernel_free(kernels[i]);
        }
    }
    free(errs);
    return 0;
}

/* Energy under emulation: the meter reads whatever NVML is loaded (in tests, the fake library) while the host
 * runs the kernel; it exercises the energy pipeline, not a GPU. */
typedef struct emu_energy_run {
    launch_fn fn; /* one launch of what is measured: a conv/GEMM candidate or a user kernel's call */
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

static int emu_energy(cut_runner *r, const cut_candidate *c, const cut_energy_plan *p, cut_result *res,
                      cut_energy_result *er_out, cut_err *e)
{
    emu_runner *er = r->impl;
    if (!er->prepared || er->is_kernel)
        return cut_err_set(e, "emulation runner: energy() without a prepared conv or GEMM workload");
    cut_emu_kernel *k = NULL;
    cut_err cerr = {{0}};
    compile_all(er->work_dir, c, 1, &k, &cerr);
    measure_one(r, c, k, &cerr, res);
    int rc = 0;
    if (res->status == CUT_ST_OK) {
        conv_launch cl = {er, k, c->ks};
        emu_energy_run run = {launch_conv, &cl, res};
        rc = cut_energy_measure(p, emu_energy_chunk, &run, er->is_gemm ? cut_gemm_flops(&er->gemm) : cut_conv_flops(&er->conv), er_out, e);
        if (rc == 0 && res->status == CUT_ST_OK)
            check_output(er, c->ks, res, "after the energy run: ");
    }
    cut_emu_kernel_free(k);
    return rc;
}

/* ---- user kernels (work.h) ----------------------------------------------------------------------------- */

static void *copy_aligned(const void *src, size_t bytes)
{
    void *p = alloc_aligned(bytes);
    memcpy(p, src, bytes);
    return p;
}

static size_t kw_bytes(const cut_work_buf *b) { return b->elems * cut_elem_size(b->dtype); }

/* Copies the work: the caller's buffers need not outlive the call. */
static int emu_prepare_kernel(cut_runner *r, const cut_work *w, cut_err *e)
{
    emu_runner *er = r->impl;
    if (cut_work_check(w, e) != 0)
        return -1;
    release_tensors(er);
    er->kw = *w;
    for (int i = 0; i < w->nbufs; i++) {
        cut_work_buf *b = &er->kw.bufs[i];
        for (int s = 0; s < 2; s++) {
            er->kw_copy[i][s] = b->data[s] ? copy_aligned(b->data[s], kw_bytes(b)) : NULL;
            b->data[s] = er->kw_copy[i][s];
        }
        if (b->is_output)
            er->kw_out[i] = alloc_aligned(kw_bytes(b));
    }
    er->is_kernel = 1;
    er->prepared = 1;
    return 0;
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

/* One compiled call and its arguments for an input set: argv[i] is the address of argument i (cut_emu_launch_argv). */
typedef struct kcall_run {
    emu_runner *er;
    cut_emu_kernel *k;
    const cut_call *c;
    void *ptrs[CUT_CALL_MAX_ARGS];                 /* buffer arguments: host addresses */
    unsigned long long scalars[CUT_CALL_MAX_ARGS]; /* scalar arguments: their bytes, zero-extended and aligned */
    void *argv[CUT_CALL_MAX_ARGS];
} kcall_run;

static void kcall_bind(kcall_run *run, int set)
{
    const cut_call *c = run->c;
    for (int i = 0; i < c->nargs; i++) {
        const cut_call_arg *a = &c->args[i];
        if (a->buf >= 0) {
            run->ptrs[i] = run->er->kw.bufs[a->buf].is_output ? run->er->kw_out[a->buf] : run->er->kw_copy[a->buf][set];
            run->argv[i] = &run->ptrs[i];
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

/* Checks (or, when outs is not NULL, captures into outs) every output after a launch on input set s. Returns 0, or
 * -1 with CUT_ST_WRONG_RESULT and the first mismatch in res. */
static int kcall_outputs(const emu_runner *er, const cut_call *c, int s, cut_work_outputs *outs, cut_result *res,
                         const char *when)
{
    double atol, rtol; /* the call's tolerances: the work's, widened by its factor */
    cut_call_tolerance(&er->kw, c, &atol, &rtol);
    for (int i = 0; i < er->kw.nbufs; i++) {
        const cut_work_buf *b = &er->kw.bufs[i];
        if (!b->is_output)
            continue;
        if (outs) {
            outs->data[i][s] = cut_xmalloc(kw_bytes(b));
            memcpy(outs->data[i][s], er->kw_out[i], kw_bytes(b));
            continue;
        }
        char msg[200];
        double maxe = 0;
        size_t bad = cut_work_compare(b, er->kw_out[i], b->data[s], er->kw.check, atol, rtol, &maxe, msg,
                                      sizeof msg);
        if (maxe > res->max_abs_err)
            res->max_abs_err = maxe;
        if (bad) {
            res->status = CUT_ST_WRONG_RESULT;
            snprintf(res->error, sizeof res->error, "%s%s (atol %.3g rtol %.3g)", when, msg, atol, rtol);
            return -1;
        }
    }
    return 0;
}

/* Poisons the outputs with set s's byte, launches on set s and checks or captures. 0, or -1 with res set. */
static int kcall_checked(kcall_run *run, int s, cut_work_outputs *outs, cut_result *res, const char *when)
{
    emu_runner *er = run->er;
    for (int i = 0; i < er->kw.nbufs; i++)
        if (er->kw.bufs[i].is_output) /* an accumulated output starts at zero instead */
            memset(er->kw_out[i], er->kw.bufs[i].zero_init ? 0 : s ? CUT_WORK_POISON1 : CUT_WORK_POISON0,
                   kw_bytes(&er->kw.bufs[i]));
    kcall_bind(run, s);
    double ms;
    if (launch_timed(launch_kcall, run, &ms, res) != 0)
        return -1;
    return kcall_outputs(er, run->c, s, outs, res, when);
}

/* Why the call cannot run here (CUT_ST_INVALID or a refused launch), as the status in res; 0 when it can. */
static int kcall_refused(const cut_call *c, cut_result *res)
{
    for (int i = 0; i < c->nargs; i++)
        if (c->args[i].tma) {
            res->status = CUT_ST_INVALID;
            snprintf(res->error, sizeof res->error, "TMA tensor maps cannot run under emulation: this kernel needs a "
                     "GPU");
            return -1;
        }
    if (uses_inline_asm(c->src)) {
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
        if (a->buf >= 0 && !is_ptr[i]) {
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

/* The checks both kernel calls share before anything runs: a prepared kernel work, the call against it, a source. */
static int kcall_usable(emu_runner *er, const cut_call *c, const char *what, cut_err *e)
{
    if (!er->prepared || !er->is_kernel)
        return cut_err_set(e, "emulation runner: %s() without a prepared kernel work", what);
    if (cut_call_check(&er->kw, c, e) != 0)
        return -1;
    if (!c->src)
        return cut_err_set(e, "kernel call: no CUDA C source to emulate");
    return 0;
}

/* Compiles c into run->k (res: INVALID, COMPILE_ERROR when it cannot run here; run->k stays NULL), then, with the
 * launch hook armed, checks (or captures into cap) on set 0, times, checks (or captures) on set 1, as work.h
 * describes, and with plan measures the energy and checks set 1 once more (rc: the meter's result). The caller frees
 * run->k. */
static int kcall_measure(cut_runner *r, kcall_run *run, cut_work_outputs *cap, const cut_energy_plan *plan,
                         cut_result *res, cut_energy_result *eout, cut_err *e)
{
    emu_runner *er = r->impl;
    const cut_call *c = run->c;
    if (kcall_refused(c, res) != 0)
        return 0;
    cut_err cerr = {{0}};
    if (cut_emu_compile_call(c->src, c->entry, er->work_dir, &run->k, &cerr) != 0) {
        res->status = CUT_ST_COMPILE_ERROR;
        first_lines(res->error, sizeof res->error, cerr.msg);
        return 0;
    }
    int rc = 0;
    if (er->launch_hook)
        er->launch_hook(er->launch_ctx, 1);
    if (kcall_mismatch(&er->kw, c, run->k, res) == 0 && kcall_checked(run, 0, cap, res, "") == 0) {
        time_launches(&r->timing, launch_kcall, run, res);
        if (res->status == CUT_ST_OK && kcall_checked(run, 1, cap, res, "fresh inputs: ") != 0)
            res->median_ms = res->min_ms = res->max_ms = -1;
    }
    if (plan && res->status == CUT_ST_OK) { /* the energy run launches on set 1, bound by the last check */
        emu_energy_run en = {launch_kcall, run, res};
        rc = cut_energy_measure(plan, emu_energy_chunk, &en, 0.0, eout, e);
        if (rc == 0 && res->status == CUT_ST_OK)
            kcall_checked(run, 1, NULL, res, "after the energy run, fresh inputs: ");
    }
    if (er->launch_hook)
        er->launch_hook(er->launch_ctx, 0);
    return rc;
}

/* Set 0: check (or capture), time; set 1: check (or capture), as work.h describes. */
static int emu_run_kernel(cut_runner *r, const cut_call *c, cut_result *res, cut_work_outputs *outs, cut_err *e)
{
    emu_runner *er = r->impl;
    if (kcall_usable(er, c, "run_kernel", e) != 0)
        return -1;
    const int capture = !cut_work_has_refs(&er->kw);
    if (capture && !outs)
        return cut_err_set(e, "kernel call: the work has no references, so the outputs need somewhere to go");
    if (capture)
        memset(outs, 0, sizeof *outs);
    cut_result_reset(res);
    kcall_run run = {.er = er, .c = c};
    kcall_measure(r, &run, capture ? outs : NULL, NULL, res, NULL, e);
    if (res->status != CUT_ST_OK && capture)
        cut_work_outputs_free(outs); /* nothing half-captured becomes a reference */
    cut_emu_kernel_free(run.k);
    return 0;
}

/* run_kernel's checks around the meter (measure.h); the emulator's wall time stands in for device time. A call
 * that fails during the energy run is res's status (the meter's -1 is then not an error). */
static int emu_energy_kernel(cut_runner *r, const cut_call *c, const cut_energy_plan *p, cut_result *res,
                             cut_energy_result *eout, cut_err *e)
{
    emu_runner *er = r->impl;
    memset(eout, 0, sizeof *eout);
    cut_result_reset(res);
    if (kcall_usable(er, c, "energy_kernel", e) != 0 || cut_energy_plan_check(p, e) != 0)
        return -1;
    if (!cut_work_has_refs(&er->kw))
        return cut_err_set(e, "emulation runner: energy_kernel needs a work with references (capture them with "
                              "run_kernel, then prepare_kernel again with them)");
    kcall_run run = {.er = er, .c = c};
    int rc = kcall_measure(r, &run, NULL, p, res, eout, e);
    cut_emu_kernel_free(run.k);
    if (res->status != CUT_ST_OK) {
        memset(eout, 0, sizeof *eout); /* no energy for a call that failed */
        return 0;
    }
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

    cut_runner *r = cut_xcalloc(1, sizeof *r);
    r->impl = er;
    r->prepare = emu_prepare;
    r->prepare_gemm = emu_prepare_gemm;
    r->measure = emu_measure;
    r->energy = emu_energy;
    r->prepare_kernel = emu_prepare_kernel;
    r->run_kernel = emu_run_kernel;
    r->energy_kernel = emu_energy_kernel;
    r->env = emu_env;
    r->destroy = emu_destroy;
    if (t)
        r->timing = *t;
    else
        cut_timing_default(&r->timing);
    return r;
}
