/* cutune — the worker's check-and-time harness, one for every kind of work: poisoned outputs, compare with the
 * reference (the work's rule, worker_work.c), warm-up, L2 flush, event-timed batches, median, and the
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
