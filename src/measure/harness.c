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
    if (l->launch(l->arg, NULL, msg, sizeof msg, &sticky) == 0)
        return 0;
    cut_wk_set_status(res, sticky ? CUT_ST_FAULT : CUT_ST_LAUNCH_ERROR, "%s", msg);
    if (sticky)
        *fatal = 1;
    return -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* n launches through l captured on the worker's stream and instantiated into *exec. 0; 1 when they cannot be
 * captured (a call that synchronises or fails while captured): the caller launches directly, and a direct launch
 * says what is wrong. */
static int capture(cut_wk *w, const cut_wk_launcher *l, int n, CUgraphExec *exec)
{
    const cut_cu_api *cu = w->cu;
    CUgraph g = NULL;
    *exec = NULL;
    if (!w->stream || cu->cuStreamBeginCapture(w->stream, CU_STREAM_CAPTURE_MODE_RELAXED) != CUDA_SUCCESS)
        return 1;
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        char msg[200];
        int sticky = 0; /* a launcher's own verdict means nothing while capturing */
        ok = l->launch(l->arg, w->stream, msg, sizeof msg, &sticky) == 0;
    }
    const CUresult rc = cu->cuStreamEndCapture(w->stream, &g);
    ok = ok && rc == CUDA_SUCCESS && g && cu->cuGraphInstantiateWithFlags(exec, g, 0) == CUDA_SUCCESS;
    if (g)
        cu->cuGraphDestroy(g);
    if (!ok)
        *exec = NULL;
    return ok ? 0 : 1;
}

/* One launch: the graph g on the worker's stream, or (g NULL) through l on the legacy stream. */
static int launch_one(cut_wk *w, const cut_wk_launcher *l, CUgraphExec g, cut_result *res, int *fatal)
{
    if (!g)
        return cut_wk_launch(l, res, fatal);
    char msg[200];
    int sticky = 0;
    if (cut_wk_launch_status(w->cu->cuGraphLaunch(g, w->stream), msg, sizeof msg, &sticky) == 0)
        return 0;
    cut_wk_set_status(res, sticky ? CUT_ST_FAULT : CUT_ST_LAUNCH_ERROR, "%s (a CUDA graph)", msg);
    if (sticky)
        *fatal = 1;
    return -1;
}

static void graph_free(cut_wk *w, CUgraphExec g, const int *fatal)
{
    if (g && !*fatal)
        w->cu->cuGraphExecDestroy(g);
}

/* Warm-up, then timed repeats in batches of event pairs until >= min_repeats and >= min_total_ms (or
 * max_repeats), each launch armed first (arm: outputs poisoned, module state reset) outside the timed region; with
 * the policy's graph, each launch a one-launch CUDA graph on the worker's stream (the events on that stream too),
 * so that only the GPU's work lies between the two events. Fills median/min/max/repeats. */
int cut_wk_time(cut_wk *w, const cut_wk_launcher *l, const cut_wk_arm *arm, cut_result *res, int *fatal)
{
    const cut_cu_api *cu = w->cu;
    const cut_timing *t = &w->timing;
    CUresult rc;
    CUgraphExec g = NULL;
    if (t->graph)
        capture(w, l, 1, &g);
    CUstream s = g ? w->stream : NULL;
    for (int i = 0; i < t->warmup; i++)
        if (launch_one(w, l, g, res, fatal) != 0) {
            graph_free(w, g, fatal);
            return -1;
        }
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
            /* The arming and the flush run before the start event, so they are outside the timed region. */
            if (arm && arm->fn(arm->arg, res, fatal) != 0)
                goto fail;
            if (t->flush_l2 && w->d_flush &&
                (rc = cu->cuMemsetD8(w->d_flush, (unsigned char)(n + i), w->flush_bytes)) != CUDA_SUCCESS)
                goto harness;
            if ((rc = cu->cuEventRecord(w->ev_start[i], s)) != CUDA_SUCCESS)
                goto harness;
            if (launch_one(w, l, g, res, fatal) != 0)
                goto fail;
            if ((rc = cu->cuEventRecord(w->ev_stop[i], s)) != CUDA_SUCCESS)
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
    graph_free(w, g, fatal);
    return 0;
harness:
    cut_wk_harness_fault(res, fatal, "timing (event record/synchronise or L2 flush)", rc);
fail:
    free(times);
    graph_free(w, g, fatal);
    return -1;
}

/* The warm time: a CUDA graph of about WK_WARM_MS of launches back to back (at least WK_WARM_MIN, at most
 * WK_WARM_MAX; without a graph, the same launches enqueued directly), replayed WK_WARM_REPLAYS times after one
 * untimed replay, nothing between the launches (no flush, no poison, no reset: the L2 keeps what the last launch
 * left, as in a network's steady state); the median replay over its launches. */
#define WK_WARM_MS 2.0
#define WK_WARM_MIN 4
#define WK_WARM_MAX 1000
#define WK_WARM_REPLAYS 7
int cut_wk_time_warm(cut_wk *w, const cut_wk_launcher *l, double cold_ms, cut_result *res, int *fatal)
{
    const cut_cu_api *cu = w->cu;
    const int n = (int)CUT_MAX((double)WK_WARM_MIN, CUT_MIN((double)WK_WARM_MAX, ceil(WK_WARM_MS / CUT_MAX(cold_ms,
                                                                                                       1e-4))));
    CUgraphExec g = NULL;
    capture(w, l, n, &g);
    CUstream s = g ? w->stream : NULL;
    double times[WK_WARM_REPLAYS];
    CUresult rc;
    for (int r = -1; r < WK_WARM_REPLAYS; r++) {
        if ((rc = cu->cuEventRecord(w->ev_start[0], s)) != CUDA_SUCCESS)
            goto harness;
        for (int i = 0; i < (g ? 1 : n); i++)
            if (launch_one(w, l, g, res, fatal) != 0)
                goto fail;
        float ms = 0;
        if ((rc = cu->cuEventRecord(w->ev_stop[0], s)) != CUDA_SUCCESS ||
            (rc = cu->cuEventSynchronize(w->ev_stop[0])) != CUDA_SUCCESS ||
            (rc = cu->cuEventElapsedTime(&ms, w->ev_start[0], w->ev_stop[0])) != CUDA_SUCCESS)
            goto harness;
        if (r >= 0)
            times[r] = ms;
    }
    qsort(times, WK_WARM_REPLAYS, sizeof *times, cmp_double);
    res->warm_ms = times[WK_WARM_REPLAYS / 2] / n;
    graph_free(w, g, fatal);
    return 0;
harness:
    cut_wk_harness_fault(res, fatal, "warm timing (event record/synchronise)", rc);
fail:
    graph_free(w, g, fatal);
    return -1;
}

/* The host's view of one launch: synchronise, launch, synchronise, CUT_WK_WALL_RUNS times; the fastest, less the
 * fastest empty synchronisation. */
#define CUT_WK_WALL_RUNS 5
int cut_wk_wall(cut_wk *w, const cut_wk_launcher *l, double *ms, cut_result *res, int *fatal)
{
    const cut_cu_api *cu = w->cu;
    double best = 1e30, empty = 1e30;
    CUresult rc;
    for (int i = 0; i < CUT_WK_WALL_RUNS; i++) {
        if ((rc = cu->cuCtxSynchronize()) != CUDA_SUCCESS)
            return cut_wk_harness_fault(res, fatal, "cuCtxSynchronize (wall-clock check)", rc), -1;
        double t0 = cut_now_s();
        if ((rc = cu->cuCtxSynchronize()) != CUDA_SUCCESS)
            return cut_wk_harness_fault(res, fatal, "cuCtxSynchronize (wall-clock check)", rc), -1;
        double t1 = cut_now_s();
        if (cut_wk_launch(l, res, fatal) != 0)
            return -1;
        if ((rc = cu->cuCtxSynchronize()) != CUDA_SUCCESS)
            return cut_wk_harness_fault(res, fatal, "cuCtxSynchronize (wall-clock check)", rc), -1;
        double t2 = cut_now_s();
        empty = CUT_MIN(empty, t1 - t0);
        best = CUT_MIN(best, t2 - t1);
    }
    *ms = CUT_MAX(0.0, best - empty) * 1e3;
    return 0;
}

/* FLOP/s per SM per clock of the fastest unit a kernel of any dtype may use (dense fp16/bf16 tensor cores). */
static double flops_per_sm_clock(int major)
{
    return major >= 10 ? 8192.0 : major >= 9 ? 4096.0 : major >= 8 ? 2048.0 : major >= 7 ? 1024.0 : 256.0;
}

/* DRAM bandwidth, measured once: a device-to-device copy of 256 MiB, best of three, counting the read and the
 * write. */
static double measure_bandwidth(cut_wk *w)
{
    const cut_cu_api *cu = w->cu;
    const size_t n = (size_t)256 << 20;
    CUdeviceptr a = 0, b = 0;
    double best = 0;
    if (cu->cuMemAlloc(&a, n) != CUDA_SUCCESS)
        return 0;
    if (cu->cuMemAlloc(&b, n) == CUDA_SUCCESS) {
        for (int i = 0; i < 3; i++) {
            float ms = 0;
            if (cu->cuEventRecord(w->ev_start[0], NULL) != CUDA_SUCCESS ||
                cu->cuMemcpyDtoDAsync(b, a, n, NULL) != CUDA_SUCCESS ||
                cu->cuEventRecord(w->ev_stop[0], NULL) != CUDA_SUCCESS ||
                cu->cuEventSynchronize(w->ev_stop[0]) != CUDA_SUCCESS ||
                cu->cuEventElapsedTime(&ms, w->ev_start[0], w->ev_stop[0]) != CUDA_SUCCESS || ms <= 0)
                break;
            best = CUT_MAX(best, 2.0 * (double)n / (ms * 1e-3));
        }
        cu->cuMemFree(b);
    }
    cu->cuMemFree(a);
    return best;
}

void cut_wk_peaks(cut_wk *w, double *flops, double *bytes_s)
{
    if (!w->peaks_known) {
        const cut_cu_api *cu = w->cu;
        int sms = 0, khz = 0, major = 0;
        if (cu->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, w->dev) == CUDA_SUCCESS &&
            cu->cuDeviceGetAttribute(&khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, w->dev) == CUDA_SUCCESS &&
            cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, w->dev) == CUDA_SUCCESS)
            w->peak_flops = (double)sms * (double)khz * 1e3 * flops_per_sm_clock(major);
        w->peak_bytes_s = measure_bandwidth(w);
        w->peaks_known = 1;
    }
    *flops = w->peak_flops;
    *bytes_s = w->peak_bytes_s;
}
