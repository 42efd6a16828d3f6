/* cutune — the measurement worker process: its main loop, which owns the CUDA context, and the request handlers.
 *
 * Protocol overview in worker_proto.h, its codecs in worker_wire.c, worker_proto.c, worker_proto_work.c and
 * worker_proto_held.c; the works held in worker_hold.c, each work and its runs in worker_work.c, the check-and-time
 * harness in harness.c, TMA maps in tma.c, the energy run in worker_energy.c; the parent side is gpu_runner.c;
 * cuDNN in cudnn_baseline.c, cuBLAS in cublas_baseline.c. */
#include "measure/worker_int.h"

#include "measure/cublas_baseline.h"
#include "measure/cublaslt_baseline.h"
#include "measure/cudnn_baseline.h"
#include "measure/devcheck.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void **cut_wk_cudnn_slot(cut_wk *w) { return &w->cudnn; }
void **cut_wk_cublas_slot(cut_wk *w) { return &w->cublas; }
void **cut_wk_cublaslt_slot(cut_wk *w) { return &w->cublaslt; }
cut_wk_hold *cut_wk_holds(cut_wk *w) { return &w->hold; }
const cut_cu_api *cut_wk_cu(cut_wk *w) { return w->cu; }

/* ---- modules ---- */

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

/* ---- setup ---- */

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
    CU_CHECK(cu->cuStreamCreate(&w->stream, CU_STREAM_DEFAULT), e);
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
        cut_wk_hold_free(&w->hold, 0);
        cut_dc_free(w->dc, 0);
        if (w->d_flush)
            w->cu->cuMemFree(w->d_flush);
        if (w->stream)
            w->cu->cuStreamDestroy(w->stream);
        for (int i = 0; i < w->n_events; i++) {
            w->cu->cuEventDestroy(w->ev_start[i]);
            w->cu->cuEventDestroy(w->ev_stop[i]);
        }
        if (w->ctx)
            w->cu->cuDevicePrimaryCtxRelease(w->dev);
    } else {
        cut_cublaslt_state_free(w->cublaslt, 1);
        cut_wk_hold_free(&w->hold, 1);
        cut_dc_free(w->dc, 1);
    }
    w->dc = NULL;
    w->cudnn = NULL;
    w->cublas = NULL;
    w->cublaslt = NULL;
}

int cut_wk_use_timing(cut_wk *w, const cut_timing *t, cut_err *e)
{
    w->timing = *t;
    if (!t->flush_l2 || w->d_flush)
        return 0;
    /* Twice the L2 size: writing it evicts everything the previous run left in L2. */
    w->flush_bytes = 2 * (size_t)(w->l2_bytes > 0 ? w->l2_bytes : 64 << 20);
    CUresult rc = w->cu->cuMemAlloc(&w->d_flush, w->flush_bytes);
    /* no room: the works held beside the selected one go first (the runner sends them again when it needs them) */
    if (rc != CUDA_SUCCESS && cut_wk_hold_drop_idle(&w->hold) > 0)
        rc = w->cu->cuMemAlloc(&w->d_flush, w->flush_bytes);
    if (rc == CUDA_SUCCESS)
        return 0;
    w->d_flush = 0;
    char d[160];
    cut_cu_describe(rc, d, sizeof d);
    return cut_err_set(e, "worker: allocating the L2 flush buffer (%zu bytes): %s", w->flush_bytes, d);
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
    cut_wk_hold_ops ops;
    cut_wk_hold_ops_of(&w, &ops);
    cut_wk_hold_init(&w.hold, &ops);
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
        uint32_t hreply = CUT_WP_ACK;
        const int held = cut_wk_hold_request(&w.hold, &f, &hreply, &b, &e);
        if (held <= 0) { /* PREPARE_WORK, HOLD_WORK, SELECT_WORK, DROP_WORK */
            code = (held == 0 ? cut_wp_reply(out_fd, hreply, &b) : cut_wp_reply_error(out_fd, e.msg)) == 0 ? -1 : 1;
            cut_wp_frame_free(&f);
            continue;
        }
        switch (f.type) {
        case CUT_WP_RUN: {
            uint32_t reply = CUT_WP_RUN_RESULT;
            if (cut_wk_run(&w, &q, &b, &reply, &dead, &e) != 0)
                code = cut_wp_reply_error(out_fd, e.msg) == 0 ? -1 : 1;
            else
                code = cut_wp_reply(out_fd, reply, &b) == 0 ? -1 : 1;
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
