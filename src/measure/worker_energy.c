/* cutune — the worker's energy measurement: the kernel run back to back under cut_energy_measure's meter (NVML),
 * then its output checked once more. One chunked launch loop for every kind of work: it launches through a
 * cut_wk_launcher (a call on the prepared work) and checks through the one protocol (verify.h). */
#include "measure/worker_int.h"

/* ---- energy: the kernel runs back to back (no L2 flush) in chunks queued one ahead, each between an event pair
 * (two pairs, alternating) ---- */

typedef struct wk_energy_run {
    cut_wk *w;
    const cut_wk_launcher *l;
    cut_result *res;
    int *fatal;
    int slot;              /* event pair of the chunk queued last */
    long long queued;      /* its iterations; 0: none queued */
} wk_energy_run;

static int wk_energy_chunk(void *arg, long long iters, long long *done_iters, double *done_s, cut_err *e)
{
    wk_energy_run *er = arg;
    const cut_cu_api *cu = er->w->cu;
    CUevent *start = er->w->ev_start, *stop = er->w->ev_stop;
    const int prev = er->slot, next = 1 - er->slot;
    CUresult rc;
    float ms = 0;
    *done_iters = 0;
    *done_s = 0;
    if (iters > 0) {
        if ((rc = cu->cuEventRecord(start[next], NULL)) != CUDA_SUCCESS)
            goto harness;
        for (long long i = 0; i < iters; i++)
            if (cut_wk_launch(er->l, er->res, er->fatal) != 0)
                return cut_err_set(e, "%s", er->res->error);
        if ((rc = cu->cuEventRecord(stop[next], NULL)) != CUDA_SUCCESS)
            goto harness;
    }
    if (er->queued > 0) {
        if ((rc = cu->cuEventSynchronize(stop[prev])) != CUDA_SUCCESS ||
            (rc = cu->cuEventElapsedTime(&ms, start[prev], stop[prev])) != CUDA_SUCCESS)
            goto harness;
        *done_iters = er->queued;
        *done_s = ms * 1e-3;
    }
    er->queued = iters;
    er->slot = next;
    return 0;
harness:
    cut_wk_harness_fault(er->res, er->fatal, "energy run (event record/synchronise)", rc);
    return cut_err_set(e, "%s", er->res->error);
}

int cut_wk_energy_with(cut_wk *w, const cut_wk_launcher *l, const cut_vf *v, const cut_vf_dev *d, double flops,
                       const cut_energy_plan *plan, cut_result *res, cut_energy_result *er, int *fatal, cut_err *why)
{
    wk_energy_run run = {.w = w, .l = l, .res = res, .fatal = fatal};
    if (cut_energy_measure(plan, wk_energy_chunk, &run, flops, er, why) != 0)
        return -1;
    const int s = v->fixed ? 0 : 1;
    return cut_vf_checked(v, d, s, s ? CUT_WORK_POISON1 : CUT_WORK_POISON0, CUT_ST_WRONG_LATER,
                          "after the energy run: ", res, fatal) == 0 ? 0 : -1;
}
