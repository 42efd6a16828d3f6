/* cutune — the worker side of a user kernel's workload (kwork.h): PREPARE_KERNEL uploads both input sets of every
 * input and allocates every output; RUN_KERNEL checks the call on set 0, times it on set 0 and checks it on set 1
 * through the worker's one check-and-time routine, capturing the outputs when the work has no references;
 * ENERGY_KERNEL does what RUN_KERNEL does on a work with references, then measures the call's energy through the
 * worker's one energy routine (worker_energy.c) and checks set 1 once more. */
#include "measure/worker_kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct wk_kernel {
    cut_wp_prepare_kernel p;            /* the work (inputs, references: host copies) */
    CUdeviceptr d[CUT_WORK_MAX_BUFS][2]; /* inputs: one per set; outputs: d[i][0] */
    void *host[CUT_WORK_MAX_BUFS];        /* outputs: room for the copy back */
} wk_kernel;

static size_t buf_bytes(const cut_work_buf *b) { return b->elems * cut_elem_size(b->dtype); }

void cut_wk_kernel_free(void *state, const cut_cu_api *cu, int context_dead)
{
    wk_kernel *k = state;
    if (!k)
        return;
    for (int i = 0; i < CUT_WORK_MAX_BUFS; i++) {
        for (int s = 0; s < 2 && !context_dead; s++)
            if (k->d[i][s])
                cu->cuMemFree(k->d[i][s]);
        free(k->host[i]);
    }
    cut_wp_prepare_kernel_free(&k->p);
    free(k);
}

/* Allocates the device buffers of k's work and uploads its inputs. */
static int upload(const cut_cu_api *cu, wk_kernel *k, cut_err *e)
{
    for (int i = 0; i < k->p.work.nbufs; i++) {
        const cut_work_buf *b = &k->p.work.bufs[i];
        const size_t n = buf_bytes(b);
        for (int s = 0; s < (b->is_output ? 1 : 2); s++) {
            CUresult rc = cu->cuMemAlloc(&k->d[i][s], n);
            if (rc == CUDA_SUCCESS && !b->is_output)
                rc = cu->cuMemcpyHtoD(k->d[i][s], b->data[s], n);
            if (rc != CUDA_SUCCESS) {
                char d[160];
                cut_cu_describe(rc, d, sizeof d);
                return cut_err_set(e, "worker PREPARE_KERNEL: buffer '%s' (%zu bytes) set %d: %s", b->name, n, s, d);
            }
        }
        if (b->is_output)
            k->host[i] = cut_xmalloc(n);
    }
    return 0;
}

int cut_wk_prepare_kernel(cut_wk *w, const cut_wp_frame *f, cut_err *e)
{
    wk_kernel *k = cut_xcalloc(1, sizeof *k);
    if (cut_wp_prepare_kernel_decode(f, &k->p, e) != 0) {
        free(k);
        return -1;
    }
    cut_wk_release(w);
    const cut_cu_api *cu = cut_wk_cu(w);
    if (upload(cu, k, e) != 0) { /* the L2 flush buffer comes with the first run request's timing policy */
        cut_wk_kernel_free(k, cu, 0);
        return -1;
    }
    *cut_wk_kernel_slot(w) = k;
    return 0;
}

/* One RUN_KERNEL: the launch on the input set in use, and the checks of cut_wk_check. */
typedef struct kernel_run {
    const cut_cu_api *cu;
    wk_kernel *k;
    CUfunction f;
    const cut_call *c;
    int set;                           /* the input set the launches read */
    void *args[2][CUT_CALL_MAX_ARGS];    /* per set: the kernel's argument pointers */
    cut_work_outputs *capture;           /* the work has no references: outputs go here */
} kernel_run;

static int run_launch(void *arg, char *msg, size_t n, int *sticky)
{
    kernel_run *r = arg;
    const cut_call *c = r->c;
    return cut_wk_launch_status(r->cu->cuLaunchKernel(r->f, c->grid[0], c->grid[1], c->grid[2], c->block[0],
                                                      c->block[1], c->block[2], c->smem, NULL, r->args[r->set], NULL),
                                msg, n, sticky);
}

/* Set 0 before timing (and for the timed launches), set 1 after; each pass poisons with its own byte. */
static CUresult run_poison(void *arg, cut_wk_pass pass, const char **what)
{
    kernel_run *r = arg;
    const cut_work *w = &r->k->p.work;
    r->set = pass == CUT_WK_FIRST ? 0 : 1;
    *what = "cuMemsetD8 (poisoning an output)";
    for (int i = 0; i < w->nbufs; i++) {
        if (!w->bufs[i].is_output)
            continue;
        /* an accumulated output starts at zero instead of poison */
        const unsigned char fill = w->bufs[i].zero_init ? 0 : r->set ? CUT_WORK_POISON1 : CUT_WORK_POISON0;
        CUresult rc = r->cu->cuMemsetD8(r->k->d[i][0], fill, buf_bytes(&w->bufs[i]));
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    return CUDA_SUCCESS;
}

/* Copies every output back, then compares it with the set's reference, or keeps it when there is none. */
static int run_check(void *arg, cut_wk_pass pass, cut_result *res, int *fatal)
{
    kernel_run *r = arg;
    const cut_work *w = &r->k->p.work;
    const char *when = pass == CUT_WK_FIRST         ? ""
                       : pass == CUT_WK_AFTER_TIMING ? "after timing, fresh inputs: "
                                                     : "after the energy run, fresh inputs: ";
    double worst = 0;
    for (int i = 0; i < w->nbufs; i++) {
        const cut_work_buf *b = &w->bufs[i];
        if (!b->is_output)
            continue;
        const size_t n = buf_bytes(b);
        CUresult rc = r->cu->cuMemcpyDtoH(r->k->host[i], r->k->d[i][0], n);
        if (rc != CUDA_SUCCESS)
            return cut_wk_harness_fault(res, fatal, "cuMemcpyDtoH (an output)", rc), -1;
        if (r->capture) {
            r->capture->data[i][r->set] = cut_xmalloc(n);
            memcpy(r->capture->data[i][r->set], r->k->host[i], n);
            continue;
        }
        char msg[200];
        double maxe = 0;
        const size_t bad = cut_work_compare(b, r->k->host[i], b->data[r->set], w->check, w->atol, w->rtol, &maxe,
                                            msg, sizeof msg);
        worst = CUT_MAX(worst, maxe);
        res->max_abs_err = worst;
        if (bad) {
            res->status = CUT_ST_WRONG_RESULT;
            (void)bad;
            snprintf(res->error, sizeof res->error, "%s%s", when, msg);
            return -1;
        }
    }
    return 0;
}

/* Points each argument of set s at its buffer's device pointer (outputs: the one buffer) or at its scalar bytes. */
static void bind_args(kernel_run *r, int s)
{
    for (int i = 0; i < r->c->nargs; i++) {
        const cut_call_arg *a = &r->c->args[i];
        const int set = a->buf >= 0 && !r->k->p.work.bufs[a->buf].is_output ? s : 0;
        r->args[s][i] = a->buf >= 0 ? (void *)&r->k->d[a->buf][set] : (void *)a->bytes;
    }
}

/* The call c (its module image cubin): loaded, both input sets bound, checked and timed (outputs captured into
 * r->capture when set); with plan, then its energy measured into *er (*energy_ok: the meter succeeded, why: its
 * sentence when not) and checked again. The outcome is res (*fatal = 1 when the context died). */
static void kernel_measure(cut_wk *w, kernel_run *r, const uint8_t *cubin, size_t cubin_size,
                           const cut_energy_plan *plan, cut_result *res, cut_energy_result *er, int *energy_ok,
                           cut_err *why, int *fatal)
{
    const cut_call *c = r->c;
    CUmodule mod;
    if (cut_wk_load(w, cubin, cubin_size, c->entry, c->smem, &mod, &r->f, res, fatal) != 0)
        return;
    bind_args(r, 0);
    bind_args(r, 1);
    const cut_wk_launcher l = {run_launch, r};
    const cut_wk_check chk = {run_poison, run_check, r};
    cut_wk_check_and_time_with(w, &l, &chk, res, fatal);
    if (plan && res->status == CUT_ST_OK && !*fatal) /* a spec counts no FLOPs: GFLOP/s stays 0 */
        *energy_ok = cut_wk_energy_with(w, &l, &chk, 0.0, plan, res, er, fatal, why) == 0 && res->status == CUT_ST_OK;
    if (!*fatal)
        r->cu->cuModuleUnload(mod);
}

int cut_wk_run_kernel(cut_wk *w, const cut_wp_frame *f, cut_buf *b, int *fatal, cut_err *e)
{
    *fatal = 0;
    wk_kernel *k = *cut_wk_kernel_slot(w);
    if (!k)
        return cut_err_set(e, "worker: RUN_KERNEL before PREPARE_KERNEL");
    cut_call c;
    const uint8_t *cubin;
    size_t cubin_size;
    if (cut_wp_run_kernel_decode(f, &k->p.work, &c, &cubin, &cubin_size, e) != 0)
        return -1;
    cut_result res;
    cut_result_reset(&res);
    cut_work_outputs outs;
    memset(&outs, 0, sizeof outs);
    kernel_run r = {.cu = cut_wk_cu(w), .k = k, .c = &c, .capture = cut_work_has_refs(&k->p.work) ? NULL : &outs};
    kernel_measure(w, &r, cubin, cubin_size, NULL, &res, NULL, NULL, NULL, fatal);
    cut_wp_kernel_result_encode(&res, &k->p.work, res.status == CUT_ST_OK ? &outs : NULL, b);
    cut_work_outputs_free(&outs);
    return 0;
}

int cut_wk_energy_kernel(cut_wk *w, const cut_wp_frame *f, cut_buf *b, int *fatal, cut_err *e)
{
    *fatal = 0;
    wk_kernel *k = *cut_wk_kernel_slot(w);
    if (!k)
        return cut_err_set(e, "worker: ENERGY_KERNEL before PREPARE_KERNEL");
    cut_call c;
    const uint8_t *cubin;
    size_t cubin_size;
    cut_energy_plan plan;
    if (cut_wp_energy_kernel_decode(f, &k->p.work, &c, &cubin, &cubin_size, &plan, e) != 0)
        return -1;
    cut_result res;
    cut_result_reset(&res);
    cut_energy_result er;
    memset(&er, 0, sizeof er);
    int ok = 0;
    cut_err why = {{0}};
    kernel_run r = {.cu = cut_wk_cu(w), .k = k, .c = &c}; /* the work has references: nothing is captured */
    kernel_measure(w, &r, cubin, cubin_size, &plan, &res, &er, &ok, &why, fatal);
    cut_wp_energy_result_encode(&res, ok, why.msg, &er, b);
    return 0;
}
