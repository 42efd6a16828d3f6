/* cutune — the measurement worker process: its main loop, which owns the CUDA context, and the request handlers
 * that prepare workloads and check and time candidates.
 *
 * Protocol overview in worker_proto.h, its codecs in worker_wire.c, worker_proto.c and worker_proto_kernel.c; the
 * check-and-time harness in harness.c, TMA maps in tma.c, the energy run in worker_energy.c; the parent side is
 * gpu_runner.c; cuDNN in cudnn_baseline.c, cuBLAS in cublas_baseline.c. A workload is a conv (PREPARE:
 * elementwise check) or a GEMM (PREPARE_GEMM: relative Frobenius check); kernels of both take (two const float*
 * inputs, one float* output). */
#include "measure/worker_int.h"

#include "measure/cublas_baseline.h"
#include "measure/gemm_ref_gpu.h"
#include "measure/cublaslt_baseline.h"
#include "measure/cudnn_baseline.h"
#include "cutune/half.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cut_wk_get_tensors(cut_wk *w, cut_wk_tensors *t)
{
    t->conv = (w->prepared && !w->is_gemm) ? &w->conv : NULL;
    t->gemm = (w->prepared && w->is_gemm) ? &w->gemm : NULL;
    t->in = w->d_in;
    t->w = w->d_w;
    t->out = w->d_out;
}

void **cut_wk_cudnn_slot(cut_wk *w) { return &w->cudnn; }
void **cut_wk_cublas_slot(cut_wk *w) { return &w->cublas; }
void **cut_wk_cublaslt_slot(cut_wk *w) { return &w->cublaslt; }
void **cut_wk_kernel_slot(cut_wk *w) { return &w->kernel; }
const cut_cu_api *cut_wk_cu(cut_wk *w) { return w->cu; }

/* ---- a generated kernel ---- */

static int kern_launch_fn(void *arg, char *msg, size_t n, int *sticky)
{
    cut_wk_kern_launch *k = arg;
    return cut_wk_launch_status(k->cu->cuLaunchKernel(k->f, k->grid[0], k->grid[1], k->grid[2], k->block[0],
                                                      k->block[1], k->block[2], k->smem, NULL, k->args, NULL),
                                msg, n, sticky);
}

int cut_wk_load(cut_wk *w, const uint8_t *img, size_t n, const char *entry, unsigned smem, CUmodule *mod,
                CUfunction *f, cut_result *res, int *fatal)
{
    const cut_cu_api *cu = w->cu;
    char d[160];
    /* Copy the image into its own NUL-terminated allocation (alignment for the ELF parser; NUL if it is PTX). */
    char *copy = cut_xmalloc(n + 1);
    memcpy(copy, img, n);
    copy[n] = '\0';
    *mod = NULL;
    CUresult rc = cu->cuModuleLoadData(mod, copy);
    free(copy);
    if (rc != CUDA_SUCCESS) {
        cut_cu_describe(rc, d, sizeof d);
        cut_wk_set_status(res, cut_wk_sticky(rc) ? CUT_ST_FAULT : CUT_ST_LAUNCH_ERROR, "cuModuleLoadData: %s", d);
        *fatal = cut_wk_sticky(rc);
        *mod = NULL;
        return -1;
    }
    if ((rc = cu->cuModuleGetFunction(f, *mod, entry)) != CUDA_SUCCESS) {
        cut_cu_describe(rc, d, sizeof d);
        cut_wk_set_status(res, CUT_ST_LAUNCH_ERROR, "cuModuleGetFunction(\"%s\"): %s", entry, d);
        goto fail;
    }
    /* More than 48 KiB of shared memory per block (static + dynamic) needs an explicit opt-in. */
    int smem_static = 0;
    cu->cuFuncGetAttribute(&smem_static, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, *f);
    if (smem > 0 && (size_t)smem + (size_t)CUT_MAX(smem_static, 0) > 48u * 1024u &&
        (rc = cu->cuFuncSetAttribute(*f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem)) !=
            CUDA_SUCCESS) {
        cut_cu_describe(rc, d, sizeof d);
        cut_wk_set_status(res, CUT_ST_LAUNCH_ERROR, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES=%u): %s",
                          smem, d);
        goto fail;
    }
    return 0;
fail:
    cu->cuModuleUnload(*mod);
    *mod = NULL;
    return -1;
}

/* Loads the module, checks and times the kernel; with plan (ENERGY) also measures its energy into *er. */
static void measure_kernel(cut_wk *w, const cut_wp_measure *m, const cut_energy_plan *plan, cut_result *res,
                           cut_energy_result *er, int *energy_ok, cut_err *why, int *fatal)
{
    cut_result_reset(res);
    *fatal = 0;
    cut_wk_kern_launch k = {.cu = w->cu, .smem = m->smem_dynamic};
    memcpy(k.grid, m->grid, sizeof k.grid);
    memcpy(k.block, m->block, sizeof k.block);
    if (!k.grid[0] || !k.grid[1] || !k.grid[2] || !k.block[0] || !k.block[1] || !k.block[2]) {
        cut_wk_set_status(res, CUT_ST_LAUNCH_ERROR, "empty launch configuration grid (%u,%u,%u) block (%u,%u,%u)",
                          k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2]);
        return;
    }
    CUmodule mod;
    if (cut_wk_load(w, m->cubin, m->cubin_size, m->entry, m->smem_dynamic, &mod, &k.f, res, fatal) != 0)
        return;
    k.args[0] = &w->d_in;
    k.args[1] = &w->d_w;
    k.args[2] = &w->d_out;
    cut_wk_cand_check cc = {.w = w, .k = &k};
    if (m->ntma == 2) { /* the maps of each input set, swapped in by the checks (cut_wk_cand_before) */
        k.ntma = 2;
        int bad = 0;
        for (int s = 1; s >= 0 && !bad; s--) {
            cut_wk_use_set(w, s);
            bad = cut_wk_tma_encode(w, m, &k, res) != 0;
            memcpy(cc.maps[s], k.maps, sizeof k.maps);
        }
        if (bad)
            goto out;
    }
    cut_wk_launcher l = {kern_launch_fn, &k};
    const cut_wk_check chk = cut_wk_cand_hooks(&cc);
    /* the kernel's algorithm may carry a wider tolerance (cut_conv_tolerance_scaled): for this candidate only */
    const double atol = w->atol, rtol = w->rtol, gemm_tol = w->gemm_tol;
    if (m->tol_scale > 1.0) {
        w->atol *= m->tol_scale;
        w->rtol *= m->tol_scale;
        w->gemm_tol *= m->tol_scale;
    }
    cut_wk_check_and_time_with(w, &l, &chk, res, fatal);
    if (plan && res->status == CUT_ST_OK && !*fatal)
        *energy_ok = cut_wk_energy_with(w, &l, &chk, cut_wk_flops(w), plan, res, er, fatal, why) == 0 &&
                     res->status == CUT_ST_OK;
    w->atol = atol;
    w->rtol = rtol;
    w->gemm_tol = gemm_tol;
out:
    cut_wk_use_set(w, 0); /* the vendor baselines read set 0 */
    if (!*fatal)
        w->cu->cuModuleUnload(mod);
}

/* ---- setup ---- */

void cut_wk_release(cut_wk *w)
{
    const cut_cu_api *cu = w->cu;
    cut_wk_kernel_free(w->kernel, cu, 0);
    w->kernel = NULL;
    CUdeviceptr *ptrs[] = {&w->d_set_in[0], &w->d_set_in[1], &w->d_set_w[0], &w->d_set_w[1], &w->d_out};
    for (size_t i = 0; i < CUT_ARRAY_LEN(ptrs); i++) {
        if (*ptrs[i])
            cu->cuMemFree(*ptrs[i]);
        *ptrs[i] = 0;
    }
    for (int s = 0; s < 2; s++) {
        free(w->ref_set[s]);
        w->ref_set[s] = NULL;
    }
    free(w->host_out);
    w->d_in = w->d_w = 0;
    w->ref = NULL;
    w->host_out = NULL;
    w->set = 0;
    w->prepared = 0;
}

static int wk_init(cut_wk *w, int dev, cut_wp_hello *h, cut_err *e)
{
    const cut_cu_api *cu = cut_cu_load(e);
    if (!cu)
        return -1;
    w->cu = cu;
    CU_CHECK(cu->cuInit(0), e);
    int count = 0;
    CU_CHECK(cu->cuDeviceGetCount(&count), e);
    if (dev < 0 || dev >= count)
        return cut_err_set(e, "GPU %d does not exist (the driver reports %d device%s)", dev, count,
                           count == 1 ? "" : "s");
    CU_CHECK(cu->cuDeviceGet(&w->dev, dev), e);
    /* The primary context, so that cuDNN (runtime API) shares it. */
    CU_CHECK(cu->cuDevicePrimaryCtxRetain(&w->ctx, w->dev), e);
    CU_CHECK(cu->cuCtxSetCurrent(w->ctx), e);
    memset(h, 0, sizeof *h);
    CU_CHECK(cu->cuDeviceGetName(h->name, (int)sizeof h->name - 1, w->dev), e);
    CUuuid u;
    CU_CHECK(cu->cuDeviceGetUuid(&u, w->dev), e);
    cut_gpu_format_uuid((const unsigned char *)u.bytes, h->uuid, sizeof h->uuid);
    CU_CHECK(cu->cuDeviceGetAttribute(&h->sm_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, w->dev), e);
    CU_CHECK(cu->cuDeviceGetAttribute(&h->sm_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, w->dev), e);
    CU_CHECK(cu->cuDeviceGetAttribute(&h->l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, w->dev), e);
    CU_CHECK(cu->cuDriverGetVersion(&h->driver_version), e);
    w->l2_bytes = h->l2_bytes;
    for (; w->n_events < WK_EVENT_PAIRS; w->n_events++) {
        CU_CHECK(cu->cuEventCreate(&w->ev_start[w->n_events], CU_EVENT_DEFAULT), e);
        if (cu->cuEventCreate(&w->ev_stop[w->n_events], CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
            cu->cuEventDestroy(w->ev_start[w->n_events]);
            return cut_err_set(e, "cuEventCreate failed");
        }
    }
    return 0;
}

/* Releases everything; skipped CUDA calls when the context is dead (the process exits right after). */
static void wk_free(cut_wk *w, int context_dead)
{
    if (!w->cu)
        return;
    if (!context_dead) {
        cut_cudnn_state_free(w->cudnn);
        cut_cublas_state_free(w->cublas);
        cut_cublaslt_state_free(w->cublaslt, 0);
        cut_wk_release(w);
        if (w->d_flush)
            w->cu->cuMemFree(w->d_flush);
        for (int i = 0; i < w->n_events; i++) {
            w->cu->cuEventDestroy(w->ev_start[i]);
            w->cu->cuEventDestroy(w->ev_stop[i]);
        }
        if (w->ctx)
            w->cu->cuDevicePrimaryCtxRelease(w->dev);
    } else {
        cut_cublaslt_state_free(w->cublaslt, 1);
        cut_wk_kernel_free(w->kernel, w->cu, 1);
        w->kernel = NULL;
        free(w->ref_set[0]);
        free(w->ref_set[1]);
        w->ref_set[0] = w->ref_set[1] = NULL;
        free(w->host_out);
    }
    w->cudnn = NULL;
    w->cublas = NULL;
    w->cublaslt = NULL;
    w->ref = NULL;
    w->host_out = NULL;
}

int cut_wk_use_timing(cut_wk *w, const cut_timing *t, cut_err *e)
{
    w->timing = *t;
    if (!t->flush_l2 || w->d_flush)
        return 0;
    /* Twice the L2 size: writing it evicts everything the previous run left in L2. */
    w->flush_bytes = 2 * (size_t)(w->l2_bytes > 0 ? w->l2_bytes : 64 << 20);
    CUresult rc = w->cu->cuMemAlloc(&w->d_flush, w->flush_bytes);
    if (rc == CUDA_SUCCESS)
        return 0;
    w->d_flush = 0;
    char d[160];
    cut_cu_describe(rc, d, sizeof d);
    return cut_err_set(e, "worker: allocating the L2 flush buffer (%zu bytes): %s", w->flush_bytes, d);
}

/* Allocates and uploads both sets of the two inputs (in_bytes and w_bytes each, in their storage type) and the output
 * (n_out floats) of the workload, and the references of both sets (from the parent's floats; NULL: the caller fills
 * them). Set 0 is then the one in use. Frees everything again on failure. */
static int wk_upload(cut_wk *w, const void *const in[2], size_t in_bytes, const void *const wt[2], size_t w_bytes,
                     float *const ref[2], const char *what, cut_err *e)
{
    const cut_cu_api *cu = w->cu;
    int rc = -1;
    CUresult cr;
    char d[160], step[96];
#define WK_TRY(expr, ...)                                                                                            \
    if ((cr = (expr)) != CUDA_SUCCESS) {                                                                             \
        snprintf(step, sizeof step, __VA_ARGS__);                                                                    \
        cut_cu_describe(cr, d, sizeof d);                                                                            \
        cut_err_set(e, "worker %s: %s: %s", what, step, d);                                                          \
        goto out;                                                                                                    \
    }
    for (int s = 0; s < 2; s++) {
        WK_TRY(cu->cuMemAlloc(&w->d_set_in[s], in_bytes), "allocating the first input tensor of set %d", s);
        WK_TRY(cu->cuMemAlloc(&w->d_set_w[s], w_bytes), "allocating the second input tensor of set %d", s);
        WK_TRY(cu->cuMemcpyHtoD(w->d_set_in[s], in[s], in_bytes), "uploading the first input tensor of set %d", s);
        WK_TRY(cu->cuMemcpyHtoD(w->d_set_w[s], wt[s], w_bytes), "uploading the second input tensor of set %d", s);
    }
    WK_TRY(cu->cuMemAlloc(&w->d_out, w->n_out * sizeof(float)), "allocating the output tensor");
    w->in_bytes = in_bytes;
    w->w_bytes = w_bytes;
#undef WK_TRY
    if (cut_wk_use_timing(w, &w->timing, e) != 0)
        goto out;
    for (int s = 0; s < 2; s++) {
        w->ref_set[s] = cut_xmalloc(sizeof(double) * w->n_out);
        for (size_t i = 0; ref[s] && i < w->n_out; i++)
            w->ref_set[s][i] = ref[s][i];
    }
    w->host_out = cut_xmalloc(sizeof(float) * w->n_out);
    cut_wk_use_set(w, 0);
    w->prepared = 1;
    rc = 0;
out:
    if (rc != 0)
        cut_wk_release(w);
    return rc;
}

static int wk_prepare(cut_wk *w, const cut_wp_frame *f, cut_err *e)
{
    cut_wp_prepare p;
    if (cut_wp_prepare_decode(f, &p, e) != 0)
        return -1;
    cut_wk_release(w);
    w->is_gemm = 0;
    w->conv = p.conv;
    w->n_in = cut_conv_in_elems(&p.conv);
    w->n_w = cut_conv_w_elems(&p.conv);
    w->n_out = cut_conv_out_elems(&p.conv);
    cut_conv_tolerance(&w->conv, &w->atol, &w->rtol);
    const void *in[2] = {p.in[0], p.in[1]}, *wt[2] = {p.w[0], p.w[1]};
    int rc = wk_upload(w, in, w->n_in * sizeof(float), wt, w->n_w * sizeof(float), p.ref, "PREPARE", e);
    cut_wp_prepare_free(&p);
    return rc;
}

static int wk_prepare_gemm(cut_wk *w, const cut_wp_frame *f, cut_err *e)
{
    cut_wp_prepare_gemm p;
    if (cut_wp_prepare_gemm_decode(f, &p, e) != 0)
        return -1;
    cut_wk_release(w);
    w->is_gemm = 1;
    w->gemm = p.gemm;
    w->n_in = cut_gemm_a_elems(&p.gemm);
    w->n_w = cut_gemm_b_elems(&p.gemm);
    w->n_out = cut_gemm_c_elems(&p.gemm);
    w->gemm_tol = cut_gemm_tolerance(p.gemm.dtype);
    /* A and B in their storage type: halves / bf16 bits for fp16 / bf16, floats for fp32 and tf32. */
    const size_t es = cut_dtype_size(p.gemm.dtype), a_bytes = w->n_in * es, b_bytes = w->n_w * es;
    void *a[2], *b[2];
    for (int s = 0; s < 2; s++) {
        a[s] = cut_xmalloc(a_bytes ? a_bytes : 1);
        b[s] = cut_xmalloc(b_bytes ? b_bytes : 1);
        cut_dtype_pack(p.gemm.dtype, p.a[s], w->n_in, a[s]);
        cut_dtype_pack(p.gemm.dtype, p.b[s], w->n_w, b[s]);
    }
    int rc = wk_upload(w, (const void *const *)a, a_bytes, (const void *const *)b, b_bytes, p.ref, "PREPARE_GEMM", e);
    for (int s = 0; s < 2; s++) {
        free(a[s]);
        free(b[s]);
        if (rc == 0 && !p.ref[s] && cut_gemm_reference_gpu(w->cu, &w->gemm, p.a[s], p.b[s], w->ref_set[s], e) != 0) {
            cut_err_wrap(e, "PREPARE_GEMM without a reference of set %d", s);
            cut_wk_release(w);
            rc = -1;
        }
    }
    cut_wp_prepare_gemm_free(&p);
    return rc;
}

int cut_wp_reply(int fd, uint32_t type, const cut_buf *b)
{
    cut_err e;
    if (cut_wp_send(fd, type, b ? b->data : NULL, b ? b->len : 0, &e) != 0) {
        fprintf(stderr, "cutune worker: %s\n", e.msg);
        return -1;
    }
    return 0;
}

int cut_wp_reply_error(int fd, const char *msg)
{
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_error_encode(msg, &b);
    int rc = cut_wp_reply(fd, CUT_WP_ERROR, &b);
    cut_buf_free(&b);
    return rc;
}

int cut_worker_main(int dev, int in_fd, int out_fd)
{
    /* A vanished parent shows up as EPIPE / end of file, not as a signal. */
    signal(SIGPIPE, SIG_IGN);
    cut_wk w;
    memset(&w, 0, sizeof w);
    cut_err e = {{0}};
    cut_wp_hello h;
    if (wk_init(&w, dev, &h, &e) != 0) {
        cut_wp_reply_error(out_fd, e.msg);
        wk_free(&w, 0);
        return 1;
    }
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_hello_encode(&h, &b);
    int code = cut_wp_reply(out_fd, CUT_WP_HELLO, &b) == 0 ? -1 : 1;
    int dead = 0;
    while (code < 0) {
        cut_wp_frame f;
        int rc = cut_wp_recv(in_fd, -1.0, CUT_WP_MAX_REQUEST, &f, &e);
        if (rc == 0) {
            code = 0; /* the parent closed the pipe */
            break;
        }
        if (rc < 0) {
            fprintf(stderr, "cutune worker: %s\n", e.msg);
            code = 1;
            break;
        }
        b.len = 0;
        /* A run request brings its timing policy; the handlers below read the rest (q). */
        cut_wp_frame q = f;
        cut_timing t;
        if (cut_wp_is_run(f.type) &&
            (cut_wp_run_split(&f, &t, &q, &e) != 0 || cut_wk_use_timing(&w, &t, &e) != 0)) {
            code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            cut_wp_frame_free(&f);
            continue;
        }
        switch (f.type) {
        case CUT_WP_PREPARE:
            if (wk_prepare(&w, &f, &e) != 0)
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            else
                code = cut_wp_reply(out_fd, CUT_WP_ACK, NULL) == 0 ? -1 : 1;
            break;
        case CUT_WP_PREPARE_GEMM:
            if (wk_prepare_gemm(&w, &f, &e) != 0)
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            else
                code = cut_wp_reply(out_fd, CUT_WP_ACK, NULL) == 0 ? -1 : 1;
            break;
        case CUT_WP_PREPARE_KERNEL:
            if (cut_wk_prepare_kernel(&w, &f, &e) != 0)
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            else
                code = cut_wp_reply(out_fd, CUT_WP_ACK, NULL) == 0 ? -1 : 1;
            break;
        case CUT_WP_RUN_KERNEL:
            if (cut_wk_run_kernel(&w, &q, &b, &dead, &e) != 0)
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            else
                code = cut_wp_reply(out_fd, CUT_WP_KERNEL_RESULT, &b) == 0 ? -1 : 1;
            if (dead)
                code = 3;
            break;
        case CUT_WP_ENERGY_KERNEL:
            if (cut_wk_energy_kernel(&w, &q, &b, &dead, &e) != 0)
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            else
                code = cut_wp_reply(out_fd, CUT_WP_ENERGY_RESULT, &b) == 0 ? -1 : 1;
            if (dead)
                code = 3;
            break;
        case CUT_WP_CUBLAS: {
            if (!w.prepared || !w.is_gemm) {
                code = cut_wp_reply_error(out_fd, "worker: CUBLAS before PREPARE_GEMM") == 0 ? -1 : 1;
                break;
            }
            cut_result res;
            char algo[64] = "";
            if (cut_cublas_baseline(&w, &res, algo, sizeof algo, &dead, &e) != 0) {
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            } else {
                cut_wp_result_encode(&res, algo, &b);
                code = cut_wp_reply(out_fd, CUT_WP_CUBLAS_RESULT, &b) == 0 ? -1 : 1;
            }
            if (dead)
                code = 3;
            break;
        }
        case CUT_WP_VENDOR: {
            cut_vendor_opts o;
            if (!w.prepared || !w.is_gemm || cut_wp_vendor_decode(&q, &o, &e) != 0) {
                const char *why = (w.prepared && w.is_gemm) ? e.msg : "worker: VENDOR before PREPARE_GEMM";
                code = cut_wp_reply_error(out_fd, why) == 0 ? -1 : 1;
                break;
            }
            cut_vendor_result *v = cut_xmalloc(sizeof *v);
            if (cut_vendor_baseline(&w, &o, v, &dead, &e) != 0) {
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            } else {
                cut_wp_vendor_result_encode(v, &b);
                code = cut_wp_reply(out_fd, CUT_WP_VENDOR_RESULT, &b) == 0 ? -1 : 1;
            }
            free(v);
            if (dead)
                code = 3;
            break;
        }
        case CUT_WP_MEASURE: {
            cut_wp_measure m;
            if (!w.prepared || cut_wp_measure_decode(&q, &m, &e) != 0) {
                code = cut_wp_reply_error(out_fd, w.prepared ? e.msg : "worker: MEASURE before PREPARE") == 0 ? -1 : 1;
                break;
            }
            cut_result res;
            measure_kernel(&w, &m, NULL, &res, NULL, NULL, NULL, &dead);
            cut_wp_result_encode(&res, "", &b);
            code = cut_wp_reply(out_fd, CUT_WP_RESULT, &b) == 0 ? -1 : 1;
            if (dead)
                code = 3;
            break;
        }
        case CUT_WP_ENERGY: {
            cut_wp_measure m;
            cut_energy_plan plan;
            if (!w.prepared || cut_wp_energy_decode(&q, &m, &plan, &e) != 0) {
                code = cut_wp_reply_error(out_fd, w.prepared ? e.msg : "worker: ENERGY before PREPARE") == 0 ? -1 : 1;
                break;
            }
            cut_result res;
            cut_energy_result er;
            memset(&er, 0, sizeof er);
            int ok = 0;
            cut_err why = {{0}};
            measure_kernel(&w, &m, &plan, &res, &er, &ok, &why, &dead);
            cut_wp_energy_result_encode(&res, ok, why.msg, &er, &b);
            code = cut_wp_reply(out_fd, CUT_WP_ENERGY_RESULT, &b) == 0 ? -1 : 1;
            if (dead)
                code = 3;
            break;
        }
        case CUT_WP_CUDNN: {
            if (!w.prepared) {
                code = cut_wp_reply_error(out_fd, "worker: CUDNN before PREPARE") == 0 ? -1 : 1;
                break;
            }
            cut_result res;
            char algo[64] = "";
            if (cut_cudnn_baseline(&w, &res, algo, sizeof algo, &dead, &e) != 0) {
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            } else {
                cut_wp_result_encode(&res, algo, &b);
                code = cut_wp_reply(out_fd, CUT_WP_CUDNN_RESULT, &b) == 0 ? -1 : 1;
            }
            if (dead)
                code = 3;
            break;
        }
        case CUT_WP_QUIT:
            code = 0;
            break;
        default: {
            char msg[96];
            snprintf(msg, sizeof msg, "worker: unexpected %s message", cut_wp_type_name(f.type));
            code = cut_wp_reply_error(out_fd, msg) == 0 ? -1 : 1;
            break;
        }
        }
        cut_wp_frame_free(&f);
    }
    cut_buf_free(&b);
    wk_free(&w, dead);
    return code;
}
