/* cutune — the worker side of a work (work.h), whatever op built it: PREPARE_WORK and HOLD_WORK upload both input
 * sets of every input, allocate every output and, for a GEMM that leaves them to the runner, compute the references
 * with cuBLAS DGEMM (worker_hold.c keeps up to CUT_WP_HOLD_MAX such works; SELECT_WORK makes a held one current
 * again, its inputs checked against their host bytes first); RUN checks a call on set 0, times it on set 0 and
 * checks it on set 1 through the worker's one check-and-time routine (capturing the outputs when the work has no
 * references), optionally measures its energy through the worker's one energy routine, or runs the op's vendor
 * baseline on set 0. */
#include "measure/worker_work.h"

#include "cutune/compile.h"
#include "measure/worker_int.h"

#include "measure/cublas_baseline.h"
#include "measure/cudnn_baseline.h"
#include "measure/devcheck.h"
#include "measure/gemm_ref_gpu.h"
#include "measure/vendor_baseline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct wk_work {
    cut_work work;                         /* owned host copies: inputs, references */
    cut_conv conv;                         /* op CONV: its shape (the cuDNN baseline) */
    cut_gemm gemm;                         /* op GEMM: its shape (cuBLAS, the references) */
    CUdeviceptr d[CUT_WORK_MAX_BUFS][2];   /* inputs: one per set; outputs: d[i][0] */
    void *host[CUT_WORK_MAX_BUFS];         /* outputs: room for the copy back */
    /* The device checks (devcheck.h), when dev_checks: per set, a pristine copy of each input and each reference on
     * the device, and the hash of each as made (a kernel that writes outside its buffers changes it). */
    int dev_checks;
    CUdeviceptr keep[CUT_WORK_MAX_BUFS][2];
    uint64_t hash[CUT_WORK_MAX_BUFS][2];
} wk_work;

static size_t buf_bytes(const cut_work_buf *b) { return b->elems * cut_elem_size(b->dtype); }

void cut_wk_work_free(void *state, const cut_cu_api *cu, int context_dead)
{
    wk_work *k = state;
    if (!k)
        return;
    for (int i = 0; i < CUT_WORK_MAX_BUFS; i++) {
        for (int s = 0; s < 2 && !context_dead; s++) {
            if (k->d[i][s])
                cu->cuMemFree(k->d[i][s]);
            if (k->keep[i][s])
                cu->cuMemFree(k->keep[i][s]);
        }
        free(k->host[i]);
    }
    cut_work_free(&k->work);
    free(k);
}

/* The selected work, or NULL. */
static wk_work *cur_work(cut_wk *w)
{
    return cut_wk_hold_cur(cut_wk_holds(w));
}

const cut_work *cut_wk_work(cut_wk *w)
{
    const wk_work *k = cur_work(w);
    return k ? &k->work : NULL;
}

void cut_wk_get_tensors(cut_wk *w, cut_wk_tensors *t)
{
    const wk_work *k = cur_work(w);
    memset(t, 0, sizeof *t);
    if (!k)
        return;
    t->conv = k->work.op.kind == CUT_WORK_CONV ? &k->conv : NULL;
    t->gemm = k->work.op.kind == CUT_WORK_GEMM ? &k->gemm : NULL;
    if (k->work.nbufs >= 3) { /* the vendor baselines read the op's first two buffers of set 0, write the third */
        t->in = k->d[0][0];
        t->w = k->d[1][0];
        t->out = k->d[2][0];
    }
    const int ci = t->gemm ? cut_gemm_cin_buf(t->gemm) : -1;
    if (ci >= 0 && ci < k->work.nbufs)
        t->cin = k->d[ci][0];
    /* a conv epilogue's bias is the work's fourth buffer (cut_conv_work) */
    if (t->conv && t->conv->epilogue != CUT_EPI_NONE && k->work.nbufs >= 4 && !strcmp(k->work.bufs[3].name, "bias"))
        t->bias = k->d[3][0];
}

/* Allocates the device buffers of k's work and uploads its inputs. */
static int upload(const cut_cu_api *cu, wk_work *k, cut_err *e)
{
    for (int i = 0; i < k->work.nbufs; i++) {
        const cut_work_buf *b = &k->work.bufs[i];
        const size_t n = buf_bytes(b);
        for (int s = 0; s < (b->is_output ? 1 : 2); s++) {
            CUresult rc = cu->cuMemAlloc(&k->d[i][s], n);
            if (rc == CUDA_SUCCESS && !b->is_output)
                rc = cu->cuMemcpyHtoD(k->d[i][s], b->data[s], n);
            if (rc != CUDA_SUCCESS) {
                char d[160];
                cut_cu_describe(rc, d, sizeof d);
                return cut_err_set(e, "worker PREPARE_WORK: buffer '%s' (%zu bytes) set %d: %s", b->name, n, s, d);
            }
        }
        if (b->is_output)
            k->host[i] = cut_xmalloc(n);
    }
    return 0;
}

/* A GEMM work without references: each set's C from cuBLAS DGEMM of the stored A and B (as floats), plus beta·Cin,
 * rounded to float, becomes the work's reference. */
static int runner_refs(const cut_cu_api *cu, wk_work *k, cut_err *e)
{
    cut_work *w = &k->work;
    const cut_gemm *g = &k->gemm;
    const size_t na = w->bufs[0].elems, nb = w->bufs[1].elems, nc = w->bufs[2].elems;
    float *a = cut_xmalloc(na * sizeof(float)), *b = cut_xmalloc(nb * sizeof(float));
    double *c = cut_xmalloc(nc * sizeof(double));
    int rc = 0;
    for (int s = 0; s < 2 && rc == 0; s++) {
        cut_elem_to_floats(w->bufs[0].dtype, w->bufs[0].data[s], na, a);
        cut_elem_to_floats(w->bufs[1].dtype, w->bufs[1].data[s], nb, b);
        if (cut_gemm_reference_gpu(cu, g, a, b, c, e) != 0) {
            cut_err_wrap(e, "PREPARE_WORK without a reference of set %d", s);
            rc = -1;
            break;
        }
        cut_gemm_reference_beta(g, cut_gemm_work_cin(g, w, s), c); /* beta's part on the host: cheap */
        float *r = cut_xmalloc(nc * sizeof(float));
        for (size_t i = 0; i < nc; i++)
            r[i] = (float)c[i];
        w->bufs[2].data[s] = r;
    }
    free(a);
    free(b);
    free(c);
    if (rc == 0)
        w->runner_refs = 0;
    return rc;
}

/* Turns k's device checks on: the kernels loaded (once per worker), then a pristine copy of every input set and
 * every reference on the device, each hashed. Any failure leaves them off and the host compares, as it always can;
 * but with others works held beside k, no room for the copies is -1 with e (the worker drops those and tries
 * again). */
static int keep_prepare(cut_wk *w, wk_work *k, int others, cut_err *err)
{
    const cut_cu_api *cu = cut_wk_cu(w);
    cut_err e = {{0}};
    if (!w->dc && !w->dc_failed) {
        char dir[1024];
        const char *cache = cut_default_cache_dir(dir, sizeof dir, &e) == 0 ? dir : NULL;
        if (!(w->dc = cut_dc_load(cu, w->dev, cache, &e))) {
            w->dc_failed = 1;
            fprintf(stderr, "cutune worker: %s; outputs and inputs are compared on the host instead (slower)\n",
                    e.msg);
        }
    }
    if (!w->dc)
        return 0;
    CUresult rc = CUDA_SUCCESS;
    for (int i = 0; i < k->work.nbufs && rc == CUDA_SUCCESS; i++) {
        const cut_work_buf *b = &k->work.bufs[i];
        const size_t n = buf_bytes(b);
        for (int s = 0; s < 2 && rc == CUDA_SUCCESS && n; s++) {
            uint64_t nd = 0;
            if ((rc = cu->cuMemAlloc(&k->keep[i][s], n)) != CUDA_SUCCESS)
                break;
            rc = b->is_output ? cu->cuMemcpyHtoD(k->keep[i][s], b->data[s], n)
                              : cu->cuMemcpyDtoD(k->keep[i][s], k->d[i][s], n);
            if (rc == CUDA_SUCCESS)
                cut_dc_diff(w->dc, k->keep[i][s], k->keep[i][s], n, &nd, &k->hash[i][s], &rc);
        }
    }
    if (rc == CUDA_SUCCESS) {
        k->dev_checks = 1;
        return 0;
    }
    char d[160];
    cut_cu_describe(rc, d, sizeof d);
    for (int i = 0; i < CUT_WORK_MAX_BUFS; i++)
        for (int s = 0; s < 2; s++)
            if (k->keep[i][s]) {
                cu->cuMemFree(k->keep[i][s]);
                k->keep[i][s] = 0;
            }
    if (others > 0)
        return cut_err_set(err, "worker: no room for the device checks' copies beside %d held work%s (%s)", others,
                           others == 1 ? "" : "s", d);
    fprintf(stderr, "cutune worker: no room for the device checks' copies (%s); this work is compared on the host\n",
            d);
    return 0;
}

/* Held works (worker_hold.h), ctx the worker: a decoded work (taken over) uploaded, its references computed when
 * the runner owes them, its device checks' copies made. With others held, a failure on the device is -2 (no room,
 * most likely: the worker drops them and tries once more). Ownership: *state is a wk_work (cut_wk_work_free). */
static int work_load(void *ctx, cut_work *dw, int others, void **state, cut_err *e)
{
    cut_wk *w = ctx;
    const cut_cu_api *cu = cut_wk_cu(w);
    wk_work *k = cut_xcalloc(1, sizeof *k);
    k->work = *dw;
    memset(dw, 0, sizeof *dw);
    /* the L2 flush buffer comes with the first run request's timing policy */
    int rc = cut_wp_work_op(&k->work, &k->conv, &k->gemm, e);
    if (rc == 0 && (upload(cu, k, e) != 0 || (k->work.runner_refs && runner_refs(cu, k, e) != 0)))
        rc = others > 0 ? -2 : -1;
    if (rc == 0 && cut_work_has_refs(&k->work) && keep_prepare(w, k, others, e) != 0)
        rc = -2;
    if (rc != 0) {
        cut_wk_work_free(k, cu, 0);
        return rc;
    }
    *state = k;
    return 0;
}

/* Input i's set s on the device as its host bytes again: compared with its pristine copy on the device when the
 * device checks are on (the copy repaired from the host if its hash changed), uploaded again when they differ or
 * when there is no copy. 0, or -1 with e. */
static int refresh_input(cut_wk *w, wk_work *k, int i, int s, cut_err *e)
{
    const cut_cu_api *cu = cut_wk_cu(w);
    const cut_work_buf *b = &k->work.bufs[i];
    const size_t n = buf_bytes(b);
    CUresult rc = CUDA_SUCCESS;
    uint64_t nd = 1, hash = 0;
    if (k->dev_checks && k->keep[i][s] && cut_dc_diff(w->dc, k->d[i][s], k->keep[i][s], n, &nd, &hash, &rc) != 0)
        goto fail;
    if (k->dev_checks && k->keep[i][s] && hash != k->hash[i][s]) {
        nd = 1;
        if ((rc = cu->cuMemcpyHtoD(k->keep[i][s], b->data[s], n)) != CUDA_SUCCESS)
            goto fail;
    }
    if (nd && (rc = cu->cuMemcpyHtoD(k->d[i][s], b->data[s], n)) != CUDA_SUCCESS)
        goto fail;
    return 0;
fail:;
    char d[160];
    cut_cu_describe(rc, d, sizeof d);
    return cut_err_set(e, "input '%s' set %d could not be checked or restored on the device: %s", b->name, s, d);
}

/* SELECT_WORK (worker_hold.h): the held work's inputs made whole again, since a kernel run on another work may have
 * written past its own buffers into them (outputs are poisoned before every launch anyway). */
static int work_select(void *ctx, void *state, cut_err *e)
{
    wk_work *k = state;
    for (int i = 0; i < k->work.nbufs; i++)
        for (int s = 0; s < 2 && !k->work.bufs[i].is_output; s++)
            if (refresh_input(ctx, k, i, s, e) != 0)
                return -1;
    return 0;
}

static void work_free(void *ctx, void *state, int context_dead)
{
    cut_wk_work_free(state, cut_wk_cu(ctx), context_dead);
}

void cut_wk_hold_ops_of(cut_wk *w, cut_wk_hold_ops *ops)
{
    *ops = (cut_wk_hold_ops){.load = work_load, .select = work_select, .free = work_free, .ctx = w};
}

/* A kernel's writable module variables (cut_cubin_globals), found with cuModuleGetGlobal, and their bytes as loaded
 * in one device buffer (init), which resets them. */
#define WK_MAX_VARS 64
typedef struct wk_state {
    int n;
    CUdeviceptr ptr[WK_MAX_VARS];
    size_t bytes[WK_MAX_VARS];
    size_t total;
    CUdeviceptr init; /* total bytes: every variable's bytes as loaded, in order */
} wk_state;

/* One run on the work: the device (verify.h) of the GPU worker. */
typedef struct work_run {
    const cut_cu_api *cu;
    cut_wk *w;
    wk_work *k;
    const cut_wk_launcher *l;
    const cut_call *c;
    int set;                            /* the input set the launches read */
    int fixed;                          /* 1: every pass on set 0 (the vendor baselines, bound to set 0) */
    void *args[2][CUT_CALL_MAX_ARGS];   /* per set: the kernel's argument pointers */
    CUtensorMap maps[2][CUT_CALL_MAX_ARGS]; /* per set: the TMA maps of the call's TMA arguments */
    wk_state st;
    CUfunction f;
} work_run;

static int run_launch(void *arg, CUstream s, char *msg, size_t n, int *sticky)
{
    work_run *r = arg;
    const cut_call *c = r->c;
    return cut_wk_launch_status(r->cu->cuLaunchKernel(r->f, c->grid[0], c->grid[1], c->grid[2], c->block[0],
                                                      c->block[1], c->block[2], c->smem, s, r->args[r->set], NULL),
                                msg, n, sticky);
}

static int dev_arm(void *ctx, int s, unsigned char poison, int reset, cut_result *res, int *fatal)
{
    work_run *r = ctx;
    const cut_work *w = &r->k->work;
    r->set = r->fixed ? 0 : s;
    for (int i = 0; i < w->nbufs; i++) {
        if (!w->bufs[i].is_output)
            continue;
        /* an accumulated output starts at zero instead of poison */
        CUresult rc = r->cu->cuMemsetD8(r->k->d[i][0], w->bufs[i].zero_init ? 0 : poison, buf_bytes(&w->bufs[i]));
        if (rc != CUDA_SUCCESS)
            return cut_wk_harness_fault(res, fatal, "cuMemsetD8 (poisoning an output)", rc), -1;
    }
    size_t off = 0;
    for (int i = 0; reset && i < r->st.n; off += r->st.bytes[i++]) {
        CUresult rc = r->cu->cuMemcpyDtoDAsync(r->st.ptr[i], r->st.init + off, r->st.bytes[i], NULL);
        if (rc != CUDA_SUCCESS)
            return cut_wk_harness_fault(res, fatal, "cuMemcpyDtoDAsync (resetting a module variable)", rc), -1;
    }
    return 0;
}

static int dev_launch(void *ctx, cut_result *res, int *fatal)
{
    work_run *r = ctx;
    if (cut_wk_launch(r->l, res, fatal) != 0)
        return -1;
    CUresult rc = r->cu->cuCtxSynchronize();
    if (rc != CUDA_SUCCESS)
        return cut_wk_harness_fault(res, fatal, "cuCtxSynchronize", rc), -1;
    return 0;
}

static int dev_read(void *ctx, int i, int s, void *host, cut_result *res, int *fatal)
{
    work_run *r = ctx;
    const cut_work_buf *b = &r->k->work.bufs[i];
    CUresult rc = r->cu->cuMemcpyDtoH(host, r->k->d[i][b->is_output ? 0 : s], buf_bytes(b));
    if (rc != CUDA_SUCCESS)
        return cut_wk_harness_fault(res, fatal, b->is_output ? "cuMemcpyDtoH (an output)" : "cuMemcpyDtoH (an input)",
                                    rc), -1;
    return 0;
}

static int dev_restore(void *ctx, int i, int s, cut_result *res, int *fatal)
{
    work_run *r = ctx;
    const cut_work_buf *b = &r->k->work.bufs[i];
    CUresult rc = r->cu->cuMemcpyHtoD(r->k->d[i][s], b->data[s], buf_bytes(b));
    if (rc != CUDA_SUCCESS)
        return cut_wk_harness_fault(res, fatal, "cuMemcpyHtoD (restoring an input)", rc), -1;
    return 0;
}

/* A device copy whose hash changed was written by someone else (a kernel, outside its buffers): made again from the
 * host's bytes, and the host compares this time. */
static int keep_broken(work_run *r, int i, int s, uint64_t hash, cut_result *res, int *fatal)
{
    wk_work *k = r->k;
    if (hash == k->hash[i][s])
        return 0;
    const cut_work_buf *b = &k->work.bufs[i];
    CUresult rc = r->cu->cuMemcpyHtoD(k->keep[i][s], b->data[s], buf_bytes(b));
    if (rc != CUDA_SUCCESS)
        return cut_wk_harness_fault(res, fatal, "cuMemcpyHtoD (repairing a device check's copy)", rc), -1;
    return 1;
}

static int dev_out_check(void *ctx, int i, int s, double atol, double rtol, size_t *bad, double *max_err,
                         cut_result *res, int *fatal)
{
    work_run *r = ctx;
    wk_work *k = r->k;
    const cut_work_buf *b = &k->work.bufs[i];
    if (!k->dev_checks || !k->keep[i][s])
        return 1;
    cut_dc_cmp c = {0};
    CUresult rc = CUDA_SUCCESS;
    int st = cut_dc_compare(r->w->dc, b->dtype, k->work.check, k->d[i][0], k->keep[i][s], b->elems, atol, rtol, &c,
                            &rc);
    if (st == 1) { /* integers, or EXACT: the bytes */
        uint64_t nd = 0;
        st = cut_dc_diff(r->w->dc, k->d[i][0], k->keep[i][s], buf_bytes(b), &nd, &c.hash, &rc);
        c.bad = nd;
        c.max_err = 0;
    }
    if (st < 0)
        return cut_wk_harness_fault(res, fatal, "a device check (comparing an output)", rc), -1;
    if ((st = keep_broken(r, i, s, c.hash, res, fatal)) != 0)
        return st;
    *bad = (size_t)c.bad;
    *max_err = c.max_err;
    return 0;
}

static int dev_in_same(void *ctx, int i, int s, int *same, cut_result *res, int *fatal)
{
    work_run *r = ctx;
    wk_work *k = r->k;
    if (!k->dev_checks || !k->keep[i][s])
        return 1;
    uint64_t nd = 0, hash = 0;
    CUresult rc = CUDA_SUCCESS;
    if (cut_dc_diff(r->w->dc, k->d[i][s], k->keep[i][s], buf_bytes(&k->work.bufs[i]), &nd, &hash, &rc) != 0)
        return cut_wk_harness_fault(res, fatal, "a device check (comparing an input)", rc), -1;
    const int broken = keep_broken(r, i, s, hash, res, fatal);
    if (broken != 0)
        return broken;
    *same = nd == 0;
    return 0;
}

static int dev_state(void *ctx, void *host, cut_result *res, int *fatal)
{
    work_run *r = ctx;
    size_t off = 0;
    for (int i = 0; i < r->st.n; off += r->st.bytes[i++]) {
        CUresult rc = r->cu->cuMemcpyDtoH((unsigned char *)host + off, r->st.ptr[i], r->st.bytes[i]);
        if (rc != CUDA_SUCCESS)
            return cut_wk_harness_fault(res, fatal, "cuMemcpyDtoH (a module variable)", rc), -1;
    }
    return 0;
}

static int arm_timed(void *arg, cut_result *res, int *fatal)
{
    return dev_arm(arg, 0, CUT_WORK_POISON0, 1, res, fatal);
}

static int dev_time(void *ctx, cut_result *res, int *fatal)
{
    work_run *r = ctx;
    const cut_wk_arm arm = {arm_timed, r};
    if (dev_arm(r, 0, CUT_WORK_POISON0, 1, res, fatal) != 0)
        return -1;
    return cut_wk_time(r->w, r->l, &arm, res, fatal);
}

static int dev_warm(void *ctx, cut_result *res, int *fatal)
{
    work_run *r = ctx;
    return r->w->timing.warm ? cut_wk_time_warm(r->w, r->l, res->median_ms, res, fatal) : 0;
}

static int dev_wall(void *ctx, double *ms, cut_result *res, int *fatal)
{
    work_run *r = ctx;
    return cut_wk_wall(r->w, r->l, ms, res, fatal);
}

/* The device of run r: every hook; the floor's peaks (the bandwidth only when the L2 is flushed, so that every
 * timed launch reads its inputs from DRAM). */
static cut_vf_dev run_dev(work_run *r)
{
    cut_vf_dev d = {.ctx = r, .arm = dev_arm, .launch = dev_launch, .read = dev_read, .restore = dev_restore,
                    .state_bytes = r->st.total, .state = dev_state, .time = dev_time, .wall = dev_wall,
                    .out_check = r->k->dev_checks ? dev_out_check : NULL,
                    .in_same = r->k->dev_checks ? dev_in_same : NULL, .warm = dev_warm};
    cut_wk_peaks(r->w, &d.peak_flops, &d.peak_bytes_s);
    if (!r->w->timing.flush_l2)
        d.peak_bytes_s = 0;
    return d;
}

typedef struct var_scan {
    const cut_cu_api *cu;
    CUmodule mod;
    wk_state *st;
} var_scan;

static void add_var(void *ctx, const char *name, unsigned long long bytes)
{
    (void)bytes;
    var_scan *v = ctx;
    CUdeviceptr p;
    size_t n = 0;
    if (v->st->n < WK_MAX_VARS && v->cu->cuModuleGetGlobal(&p, &n, v->mod, name) == CUDA_SUCCESS && n > 0) {
        v->st->ptr[v->st->n] = p;
        v->st->bytes[v->st->n++] = n;
        v->st->total += n;
    }
}

/* Finds the module's writable variables and copies their bytes as loaded into st->init. 0, or -1 with res. */
static int find_state(work_run *r, CUmodule mod, const uint8_t *img, size_t img_size, cut_result *res, int *fatal)
{
    var_scan v = {r->cu, mod, &r->st};
    if (cut_cubin_globals(img, img_size, add_var, &v) <= 0 || !r->st.total)
        return 0;
    CUresult rc = r->cu->cuMemAlloc(&r->st.init, r->st.total);
    size_t off = 0;
    for (int i = 0; rc == CUDA_SUCCESS && i < r->st.n; off += r->st.bytes[i++])
        rc = r->cu->cuMemcpyDtoD(r->st.init + off, r->st.ptr[i], r->st.bytes[i]);
    if (rc != CUDA_SUCCESS)
        return cut_wk_harness_fault(res, fatal, "a copy of the module's variables", rc), -1;
    return 0;
}

/* Points each argument of set s at its buffer's device pointer (outputs: the one buffer), its TMA map over that
 * buffer (encoded here), or its scalar bytes. 0, or -1 with res LAUNCH_ERROR for a map that cannot be encoded. */
static int bind_args(work_run *r, int s, cut_result *res)
{
    const cut_work *w = &r->k->work;
    for (int i = 0; i < r->c->nargs; i++) {
        const cut_call_arg *a = &r->c->args[i];
        if (a->buf < 0) {
            r->args[s][i] = (void *)a->bytes;
            continue;
        }
        const cut_work_buf *b = &w->bufs[a->buf];
        const int set = b->is_output ? 0 : s;
        if (!a->tma) {
            r->args[s][i] = (void *)&r->k->d[a->buf][set];
            continue;
        }
        if (cut_wk_tma_encode(r->cu, &a->desc, i, b, r->k->d[a->buf][set], &r->maps[s][i], res) != 0)
            return -1;
        r->args[s][i] = &r->maps[s][i];
    }
    return 0;
}

/* The call (module image img): loaded, its module variables found, both input sets bound, checked and timed through
 * the protocol (v: outputs captured when v->capture is set); with plan, then its energy measured into *er
 * (*energy_ok: the meter succeeded, why: its sentence when not) and checked again. The outcome is res (*fatal = 1
 * when the context died). */
static void call_measure(cut_wk *w, work_run *r, const cut_vf *v, const uint8_t *img, size_t img_size,
                         const cut_energy_plan *plan, cut_result *res, cut_energy_result *er, int *energy_ok,
                         cut_err *why, int *fatal)
{
    const cut_call *c = r->c;
    CUmodule mod;
    cut_result_reset(res);
    *fatal = 0;
    if (cut_wk_load(w, img, img_size, c->entry, c->smem, &mod, &r->f, res, fatal) != 0)
        return;
    const cut_wk_launcher l = {run_launch, r};
    r->l = &l;
    if (find_state(r, mod, img, img_size, res, fatal) == 0 && bind_args(r, 0, res) == 0 && bind_args(r, 1, res) == 0) {
        const cut_vf_dev d = run_dev(r);
        cut_vf_check_and_time(v, &d, res, fatal);
        if (plan && res->status == CUT_ST_OK && !*fatal)
            *energy_ok = cut_wk_energy_with(w, &l, v, &d, r->k->work.flops, plan, res, er, fatal, why) == 0 &&
                         res->status == CUT_ST_OK;
    }
    if (!*fatal) {
        if (r->st.init)
            r->cu->cuMemFree(r->st.init);
        r->cu->cuModuleUnload(mod);
    }
}

/* The vendor baselines' check: the same protocol, every pass on set 0 (their launches are bound to set 0's
 * tensors), no module variables. */
void cut_wk_check_and_time(cut_wk *w, const cut_wk_launcher *l, cut_result *res, int *fatal)
{
    wk_work *k = cur_work(w);
    if (!k) {
        cut_result_reset(res);
        *fatal = 0;
        cut_wk_set_status(res, CUT_ST_FAULT, "worker not prepared");
        return;
    }
    work_run r = {.cu = cut_wk_cu(w), .w = w, .k = k, .l = l, .fixed = 1};
    const double scale = l->tol_scale > 1.0 ? l->tol_scale : 1.0;
    const cut_vf v = {.work = &k->work, .atol = k->work.atol * scale, .rtol = k->work.rtol * scale, .fixed = 1};
    const cut_vf_dev d = run_dev(&r);
    cut_vf_check_and_time(&v, &d, res, fatal);
}

int cut_wk_run(cut_wk *w, const cut_wp_frame *body, cut_buf *b, uint32_t *reply, int *fatal, cut_err *e)
{
    *fatal = 0;
    wk_work *k = cur_work(w);
    cut_wp_run q;
    if (cut_wp_run_body_decode(body, k ? &k->work : NULL, &q, e) != 0)
        return -1;
    cut_wp_run_result rr;
    memset(&rr, 0, sizeof rr);
    cut_result_reset(&rr.res);
    *reply = CUT_WP_RUN_RESULT;
    /* a vendor baseline's workspaces get the memory of the works held beside this one (sent again when selected) */
    if (q.what != CUT_WP_RUN_CALL)
        cut_wk_hold_drop_idle(cut_wk_holds(w));
    switch (q.what) {
    case CUT_WP_RUN_CALL: {
        cut_work_outputs outs;
        memset(&outs, 0, sizeof outs);
        work_run r = {.cu = cut_wk_cu(w), .w = w, .k = k, .c = &q.call};
        cut_vf v = {.work = &k->work, .capture = cut_work_has_refs(&k->work) ? NULL : &outs};
        cut_call_tolerance(&k->work, &q.call, &v.atol, &v.rtol);
        cut_err why = {{0}};
        rr.energy = q.energy;
        call_measure(w, &r, &v, q.image, q.image_size, q.energy ? &q.plan : NULL, &rr.res, &rr.er, &rr.energy_ok,
                     &why, fatal);
        snprintf(rr.why, sizeof rr.why, "%s", why.msg);
        cut_wp_run_result_encode(&rr, &k->work, rr.res.status == CUT_ST_OK ? &outs : NULL, b);
        cut_work_outputs_free(&outs);
        return 0;
    }
    case CUT_WP_RUN_CUDNN:
    case CUT_WP_RUN_CUDNN_TF32:
        if (cut_cudnn_baseline(w, q.what == CUT_WP_RUN_CUDNN_TF32, &rr.res, rr.algo, sizeof rr.algo, fatal, e) != 0)
            return -1;
        break;
    case CUT_WP_RUN_CUBLAS:
        if (cut_cublas_baseline(w, &rr.res, rr.algo, sizeof rr.algo, fatal, e) != 0)
            return -1;
        break;
    case CUT_WP_RUN_VENDOR: {
        cut_vendor_result *v = cut_xmalloc(sizeof *v);
        const int rc = cut_vendor_baseline(w, &q.vendor, v, fatal, e);
        if (rc == 0)
            cut_wp_vendor_result_encode(v, b);
        free(v);
        *reply = CUT_WP_VENDOR_RESULT;
        return rc;
    }
    default:
        return cut_err_set(e, "worker: an unknown kind of run");
    }
    cut_wp_run_result_encode(&rr, &k->work, NULL, b);
    return 0;
}
