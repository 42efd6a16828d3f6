/* cutune — seed 001's energy files: output_kernelK.txt, results.csv, all.csv, and cutune's energy.jsonl. */
#include "cutune/energy.h"
#include "cutune/util.h"
#include "gpu/nvml.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cut_energy_output_text(cut_buf *b, const cut_energy_result *r, double power_limit_w, double idle_w)
{
    /* seed 001's generate_perfenergy.py reads the first three lines; the rest is for people */
    cut_energy_stats mean = {.gflops = r->gflops, .energy_per_iter_mj = r->energy_mj, .time_per_iter_ms = r->time_ms,
                             .avg_power_w = r->power_w, .edp_ms_mj = r->edp};
    for (int i = 0; i < r->lrounds; i++)
        mean.counter_steps += r->round[i].counter_steps;
    char text[512];
    cut_energy_format(&mean, text, sizeof text);
    cut_buf_printf(b, "%s", text);
    cut_buf_printf(b, "Power limit: %.1f W\n", power_limit_w);
    if (idle_w >= 0)
        cut_buf_printf(b, "Idle power: %.1f W\n", idle_w);
    cut_buf_printf(b, "Lrounds: %d (energy CV %.2f%%, time CV %.2f%%)\n", r->lrounds, 100 * r->cv_energy,
                   100 * r->cv_time);
    for (int i = 0; i < r->lrounds; i++) {
        const cut_energy_stats *s = &r->round[i];
        cut_buf_printf(b,
                       "lround %d: iterations %lld, time %.6f ms, energy %.4f mJ, power %.1f W, counter steps %d, "
                       "window %.3f s\n",
                       i + 1, s->iters, s->time_per_iter_ms, s->energy_per_iter_mj, s->avg_power_w, s->counter_steps,
                       s->window_s);
    }
    char why[256];
    cut_nvml_throttle_describe(r->throttle, why, sizeof why);
    cut_buf_printf(b,
                   "Energy counter period: %.4f s\n"
                   "SM clock: %u-%u MHz, memory clock: %u MHz, max temperature: %u C\n"
                   "Clock event reasons: %s\n"
                   "Measurement wall time: %.2f s\n",
                   r->step_period_s, r->sm_mhz_min, r->sm_mhz_max, r->mem_mhz, r->temp_c_max, why, r->seconds);
}

void cut_energy_results_row(cut_buf *b, int id, const cut_energy_result *r)
{
    cut_buf_printf(b, "%d,%.2f,%.6f,%.8f\n", id, r->gflops, r->energy_mj, r->edp);
}

static void json_array(cut_buf *b, const char *key, const cut_energy_result *r, int which)
{
    cut_buf_printf(b, ",\"%s\":[", key);
    for (int i = 0; i < r->lrounds; i++) {
        const cut_energy_stats *s = &r->round[i];
        double v = which == 0 ? s->time_per_iter_ms : which == 1 ? s->energy_per_iter_mj : (double)s->iters;
        cut_buf_printf(b, i ? ",%.9g" : "%.9g", v);
    }
    cut_buf_printf(b, "]");
}

void cut_energy_json_line(cut_buf *b, int case_idx, int id, double power_limit_w, double idle_w,
                          const cut_energy_result *r)
{
    cut_buf_printf(b, "{\"case\":%d,\"id\":%d,\"power_limit_w\":%.3f", case_idx, id, power_limit_w);
    json_array(b, "time_ms", r, 0);
    json_array(b, "energy_mj", r, 1);
    json_array(b, "iters", r, 2);
    cut_buf_printf(b,
                   ",\"mean_time_ms\":%.9g,\"mean_energy_mj\":%.9g,\"gflops\":%.6g,\"power_w\":%.6g,\"edp\":%.9g,"
                   "\"cv_energy\":%.6g,\"cv_time\":%.6g,\"seconds\":%.4f,\"step_period_s\":%.5f",
                   r->time_ms, r->energy_mj, r->gflops, r->power_w, r->edp, r->cv_energy, r->cv_time, r->seconds,
                   r->step_period_s);
    if (idle_w >= 0)
        cut_buf_printf(b, ",\"idle_w\":%.3f", idle_w);
    cut_buf_printf(b, ",\"sm_mhz\":[%u,%u],\"mem_mhz\":%u,\"temp_c_max\":%u,\"throttle\":%llu}\n", r->sm_mhz_min,
                   r->sm_mhz_max, r->mem_mhz, r->temp_c_max, r->throttle);
}

/* ---- all.csv ---- */

void cut_energy_table_free(cut_energy_table *t)
{
    if (!t)
        return;
    free(t->id);
    free(t->v);
    memset(t, 0, sizeof *t);
}

void cut_energy_table_add(cut_energy_table *t, int id, double perf, double energy_mj, double edp)
{
    t->id = cut_xrealloc(t->id, sizeof *t->id * (size_t)(t->n + 1));
    t->v = cut_xrealloc(t->v, sizeof *t->v * (size_t)(t->n + 1));
    t->id[t->n] = id;
    t->v[t->n][0] = perf;
    t->v[t->n][1] = energy_mj;
    t->v[t->n][2] = edp;
    t->n++;
}

void cut_energy_all_csv(cut_buf *b, const cut_energy_table *caps, int ncaps)
{
    cut_buf_printf(b, "id");
    for (int c = 0; c < ncaps; c++)
        cut_buf_printf(b, ",perf(GFLOP/s),energy(mJ),EDP(ms*mJ)");
    cut_buf_printf(b, "\n");
    if (ncaps < 1)
        return;
    for (int r = 0; r < caps[0].n; r++) {
        int id = caps[0].id[r];
        cut_buf_printf(b, "%d", id);
        for (int c = 0; c < ncaps; c++) {
            int j = 0;
            while (j < caps[c].n && caps[c].id[j] != id)
                j++;
            if (j == caps[c].n)
                cut_buf_printf(b, ",,,");
            else
                cut_buf_printf(b, ",%.2f,%.6f,%.8f", caps[c].v[j][0], caps[c].v[j][1], caps[c].v[j][2]);
        }
        cut_buf_printf(b, "\n");
    }
}
