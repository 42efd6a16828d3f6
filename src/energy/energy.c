/* cutune — energy arithmetic from NVML's total-energy counter (see cutune/powercap.h).
 *
 * The counter (mJ) is monotone but moves in steps (~100 ms on the H200), so a measurement is only as good as the
 * number of steps it spans: one step of error at each end of the window. Hence the step counting, the period
 * estimate and the iteration count that makes a run span enough steps. */
#include "cutune/powercap.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

int cut_energy_compute(const cut_energy_sample *s, size_t n, double elapsed_s, long long iters,
                       double flops_per_iter, cut_energy_stats *out, cut_err *e)
{
    memset(out, 0, sizeof *out);
    if (!s || n < 2)
        return cut_err_set(e, "energy: need at least 2 counter samples, got %zu", s ? n : 0);
    if (iters <= 0)
        return cut_err_set(e, "energy: iteration count must be > 0, got %lld", iters);
    int steps = 0;
    for (size_t i = 1; i < n; i++) {
        if (s[i].mj < s[i - 1].mj)
            return cut_err_set(e,
                               "energy: the counter went backwards (%llu mJ then %llu mJ at sample %zu); was the "
                               "driver reloaded?",
                               s[i - 1].mj, s[i].mj, i);
        if (!(s[i].t_s >= s[i - 1].t_s))
            return cut_err_set(e, "energy: sample times must not decrease (sample %zu)", i);
        steps += s[i].mj != s[i - 1].mj;
    }
    double window = s[n - 1].t_s - s[0].t_s;
    double t = elapsed_s > 0 ? elapsed_s : window;
    if (!(t > 0))
        return cut_err_set(e, "energy: the run took no measurable time");
    out->iters = iters;
    out->energy_mj = (double)(s[n - 1].mj - s[0].mj);
    out->window_s = window;
    out->energy_per_iter_mj = out->energy_mj / (double)iters;
    out->time_per_iter_ms = t * 1e3 / (double)iters;
    out->gflops = flops_per_iter * (double)iters / t / 1e9;
    /* Power over the counter's own window (mJ / ms = W); the kernel time is only a fallback. */
    out->avg_power_w = out->energy_mj / ((window > 0 ? window : t) * 1e3);
    out->edp_ms_mj = out->time_per_iter_ms * out->energy_per_iter_mj;
    out->counter_steps = steps;
    return 0;
}

double cut_energy_step_period_s(const cut_energy_sample *s, size_t n)
{
    double first = 0, last = 0;
    int changes = 0;
    for (size_t i = 1; i < n; i++) {
        if (s[i].mj == s[i - 1].mj)
            continue;
        if (changes++ == 0)
            first = s[i].t_s;
        last = s[i].t_s;
    }
    return changes >= 2 ? (last - first) / (changes - 1) : 0.0;
}

long long cut_energy_iters_for_steps(double calib_s, long long calib_iters, double step_period_s, int min_steps)
{
    if (!(calib_s > 0) || calib_iters <= 0 || min_steps < 0)
        return -1;
    double period = step_period_s > 0 ? step_period_s : CUT_ENERGY_DEFAULT_STEP_S;
    double per_iter = calib_s / (double)calib_iters;
    double need = ceil((min_steps + 1) * period / per_iter);
    if (need < 1)
        return 1;
    return need > (double)(LLONG_MAX / 2) ? LLONG_MAX / 2 : (long long)need;
}

double cut_energy_cv(const double *x, size_t n)
{
    if (!x || n < 2)
        return 0.0;
    double mean = 0;
    for (size_t i = 0; i < n; i++)
        mean += x[i];
    mean /= (double)n;
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - mean) * (x[i] - mean);
    double sd = sqrt(ss / (double)(n - 1));
    if (mean == 0)
        return sd == 0 ? 0.0 : NAN;
    return sd / fabs(mean);
}

void cut_energy_format(const cut_energy_stats *st, char *buf, size_t n)
{
    snprintf(buf, n,
             "GFLOP/s: %.2f\n"
             "Mean energy per iteration: %.4f mJ\n"
             "Mean time per iteration: %.6f ms\n"
             "Average power: %.2f W\n"
             "EDP: %.8f ms*mJ\n"
             "Energy counter steps: %d\n",
             st->gflops, st->energy_per_iter_mj, st->time_per_iter_ms, st->avg_power_w, st->edp_ms_mj,
             st->counter_steps);
}
