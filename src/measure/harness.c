/* cutune — the worker's check-and-time harness, one for every kind of work: poisoned outputs, compare with the
 * reference (conv elementwise, GEMM relative Frobenius), warm-up, L2 flush, event-timed batches, median, and the
 * check again after timing; also how launch and harness failures become a candidate's status. */
#include "measure/worker_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Errors after which the context is unusable: the worker must report and exit. */
int cut_wk_launch_status(CUresult rc, char *msg, size_t n, int *sticky)
{
    if (rc == CUDA_SUCCESS)
        return 0;
    char d[160];
    cut_cu_describe(rc, d, sizeof d);
    snprintf(msg, n, "cuLaunchKernel: %s", d);
    *sticky = cut_wk_sticky(rc);
    return -1;
}

int cut_wk_sticky(CUresult rc)
{
    switch (rc) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_UNKNOWN:
        return 1;
    default:
        return 0;
    }
}

void cut_wk_set_status(cut_result *res, cut_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    res->status = st;
    vsnprintf(res->error, sizeof res->error, fmt, ap);
    va_end(ap);
}

/* A CUDA call of the harness itself (memset, event, synchronise, copy) failed: after a kernel ran, that is the
 * kernel's asynchronous fault, and the context is gone. */
void cut_wk_harness_fault(cut_result *res, int *fatal, const char *what, CUresult rc)
{
    char d[160];
    cut_cu_describe(rc, d, sizeof d);
    cut_wk_set_status(res, CUT_ST_FAULT, "%s: %s", what, d);
    *fatal = 1;
}

int cut_wk_launch(const cut_wk_launcher *l, cut_result *res, int *fatal)
{
    char msg[200] = "";
    int sticky = 0;
    if (l->launch(l->arg, msg, sizeof msg, &sticky) == 0)
        return 0;
    cut_wk_set_status(res, sticky ? CUT_ST_FAULT : CUT_ST_LAUNCH_ERROR, "%s", msg);
    if (sticky)
        *fatal = 1;
    return -1;
}

/* Conv: elementwise, atol + rtol*|ref|. 0 if the output matches. */
static int compare_conv(cut_wk *w, cut_result *res, const char *when)
{
    char msg[200];
    double maxe = 0;
    size_t bad = cut_compare(w->host_out, w->ref, w->n_out, w->atol, w->rtol, &maxe, msg, sizeof msg);
    res->max_abs_err = maxe;
    if (bad) {
        cut_wk_set_status(res, CUT_ST_WRONG_RESULT, "%s%zu of %zu outputs wrong: %s", when, bad, w->n_out, msg);
        return -1;
    }
    return 0;
}

/* GEMM: relative Frobenius error against w->gemm_tol (NaN/Inf, e.g. the poison left unwritten, give +Inf), kept in
 * max_abs_err. On failure the message names the first non-finite or largest-error element. 0 if it passes. */
static int compare_gemm(cut_wk *w, cut_result *res, const char *when)
{
    const double rel = cut_gemm_rel_error(w->host_out, w->ref, w->n_out);
    res->max_abs_err = rel;
    if (rel <= w->gemm_tol)
        return 0;
    size_t worst = 0;
    double worst_d = -1.0;
    for (size_t i = 0; i < w->n_out; i++) {
        const double d = isfinite(w->host_out[i]) ? fabs(w->host_out[i] - w->ref[i]) : INFINITY;
        if (d > worst_d) {
            worst_d = d;
            worst = i;
        }
        if (isinf(d))
            break;
    }
    const int n = w->gemm.n > 0 ? w->gemm.n : 1;
    cut_wk_set_status(res, CUT_ST_WRONG_RESULT,
                      "%srelative Frobenius error %.3g > tolerance %.3g (C[%zu][%zu] = %.6g, want %.6g)", when, rel, w->gemm_tol, worst / (size_t)n, worst % (size_t)n, (double)w->host_out[worst], w->ref[worst]);
    return -1;
}

/* The conv/GEMM output's checks: NaN poison before, copy back and compare after (when names the pass). */
CUresult cut_wk_out_poison(void *arg, cut_wk_pass pass, const char **what)
{
    cut_wk *w = arg;
    (void)pass;
    *what = "cuMemsetD32 (poisoning the output)";
    return w->cu->cuMemsetD32(w->d_out, 0x7FC00000u, w->n_out); /* quiet NaN: unwritten outputs never pass */
}

int cut_wk_out_compare(void *arg, cut_wk_pass pass, cut_result *res, int *fatal)
{
    cut_wk *w = arg;
    static const char *const when[] = {"", "after timing: ", "after the energy run: "};
    const char *pfx = pass == CUT_WK_AFTER_TIMING && w->set == 1 ? "after timing, fresh inputs: " : when[pass];
    CUresult rc = w->cu->cuMemcpyDtoH(w->host_out, w->d_out, w->n_out * sizeof(float));
    if (rc != CUDA_SUCCESS)
        return cut_wk_harness_fault(res, fatal, "cuMemcpyDtoH", rc), -1;
    return w->is_gemm ? compare_gemm(w, res, pfx) : compare_conv(w, res, pfx);
}

void cut_wk_use_set(cut_wk *w, int s)
{
    w->set = s;
    w->d_in = w->d_set_in[s];
    w->d_w = w->d_set_w[s];
    w->ref = w->ref_set[s];
}

/* The set a candidate's pass runs on: the fresh set 1 after timing, set 0 otherwise (the timed launches read the
 * set the first check picked). */
static int pass_set(cut_wk_pass pass) { return pass == CUT_WK_AFTER_TIMING ? 1 : 0; }

CUresult cut_wk_cand_before(void *arg, cut_wk_pass pass, const char **what)
{
    cut_wk_cand_check *c = arg;
    const int s = pass_set(pass);
    cut_wk_use_set(c->w, s);
    if (c->k->ntma)
        memcpy(c->k->maps, c->maps[s], sizeof c->k->maps);
    return cut_wk_out_poison(c->w, pass, what);
}

static int cand_after(void *arg, cut_wk_pass pass, cut_result *res, int *fatal)
{
    cut_wk_cand_check *c = arg;
    return cut_wk_out_compare(c->w, pass, res, fatal);
}

/* Poison, run once, synchronise, copy back, compare (chk's hooks). 0 if the output matches. */
int cut_wk_run_checked(cut_wk *w, const cut_wk_launcher *l, const cut_wk_check *chk, cut_wk_pass pass,
                       cut_result *res, int *fatal)
{
    const char *what = "";
    CUresult rc = chk->before(chk->arg, pass, &what);
    if (rc != CUDA_SUCCESS)
        return cut_wk_harness_fault(res, fatal, what, rc), -1;
    if (cut_wk_launch(l, res, fatal) != 0)
        return -1;
    if ((rc = w->cu->cuCtxSynchronize()) != CUDA_SUCCESS)
        return cut_wk_harness_fault(res, fatal, "cuCtxSynchronize", rc), -1;
    return chk->after(chk->arg, pass, res, fatal);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Warm-up, then timed repeats in batches of event pairs until >= min_repeats and >= min_total_ms (or
 * max_repeats). Fills median/min/max/repeats. */
static int time_runs(cut_wk *w, const cut_wk_launcher *l, cut_result *res, int *fatal)
{
    const cut_cu_api *cu = w->cu;
    const cut_timing *t = &w->timing;
    CUresult rc;
    for (int i = 0; i < t->warmup; i++)
        if (cut_wk_launch(l, res, fatal) != 0)
            return -1;
    if ((rc = cu->cuCtxSynchronize()) != CUDA_SUCCESS)
        return cut_wk_harness_fault(res, fatal, "cuCtxSynchronize (warm-up)", rc), -1;

    double *times = cut_xmalloc(sizeof(double) * (size_t)t->max_repeats);
    int n = 0, want = t->min_repeats;
    double total = 0;
    while (n < t->max_repeats) {
        int batch = CUT_MIN(CUT_MIN(want - n, WK_EVENT_PAIRS), t->max_repeats - n);
        if (batch < 1)
            batch = 1;
        for (int i = 0; i < batch; i++) {
            /* The flush runs before the start event, so it is outside the timed region. */
            if (t->flush_l2 && w->d_flush &&
                (rc = cu->cuMemsetD8(w->d_flush, (unsigned char)(n + i), w->flush_bytes)) != CUDA_SUCCESS)
                goto harness;
            if ((rc = cu->cuEventRecord(w->ev_start[i], NULL)) != CUDA_SUCCESS)
                goto harness;
            if (cut_wk_launch(l, res, fatal) != 0)
                goto fail;
            if ((rc = cu->cuEventRecord(w->ev_stop[i], NULL)) != CUDA_SUCCESS)
                goto harness;
        }
        if ((rc = cu->cuEventSynchronize(w->ev_stop[batch - 1])) != CUDA_SUCCESS)
            goto harness;
        for (int i = 0; i < batch; i++) {
            float ms = 0;
            if ((rc = cu->cuEventElapsedTime(&ms, w->ev_start[i], w->ev_stop[i])) != CUDA_SUCCESS)
                goto harness;
            times[n++] = ms;
            total += ms;
        }
        if (n >= t->min_repeats && total >= t->min_total_ms)
            break;
        double mean = total / n;
        double need = mean > 0 ? ceil((t->min_total_ms - total) / mean) : (double)WK_EVENT_PAIRS;
        want = n + (int)CUT_MAX(1.0, CUT_MIN(need, (double)(t->max_repeats - n)));
        want = CUT_MAX(want, t->min_repeats);
    }
    qsort(times, (size_t)n, sizeof *times, cmp_double);
    res->repeats = n;
    res->min_ms = times[0];
    res->max_ms = times[n - 1];
    res->median_ms = (n % 2) ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
    free(times);
    return 0;
harness:
    cut_wk_harness_fault(res, fatal, "timing (event record/synchronise or L2 flush)", rc);
fail:
    free(times);
    return -1;
}

void cut_wk_check_and_time_with(cut_wk *w, const cut_wk_launcher *l, const cut_wk_check *chk, cut_result *res,
                                int *fatal)
{
    cut_result_reset(res);
    *fatal = 0;
    if (cut_wk_run_checked(w, l, chk, CUT_WK_FIRST, res, fatal) != 0)
        return;
    const double first_err = res->max_abs_err;
    if (time_runs(w, l, res, fatal) != 0) {
        res->median_ms = res->min_ms = res->max_ms = -1.0;
        res->repeats = 0;
        return;
    }
    /* Check again after timing: catches races and faults that depend on time or on earlier runs. */
    if (cut_wk_run_checked(w, l, chk, CUT_WK_AFTER_TIMING, res, fatal) != 0) {
        res->median_ms = res->min_ms = res->max_ms = -1.0;
        res->repeats = 0;
        return;
    }
    res->max_abs_err = CUT_MAX(first_err, res->max_abs_err);
}

void cut_wk_check_and_time(cut_wk *w, const cut_wk_launcher *l, cut_result *res, int *fatal)
{
    if (!w->prepared) {
        cut_result_reset(res);
        *fatal = 0;
        cut_wk_set_status(res, CUT_ST_FAULT, "worker not prepared");
        return;
    }
    const cut_wk_check chk = {cut_wk_out_poison, cut_wk_out_compare, w};
    cut_wk_check_and_time_with(w, l, &chk, res, fatal);
}

cut_wk_check cut_wk_cand_hooks(cut_wk_cand_check *c)
{
    return (cut_wk_check){cut_wk_cand_before, cand_after, c};
}
