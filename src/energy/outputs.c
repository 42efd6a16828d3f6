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

/* The sorted union of the tables' ids into *ids (caller frees); returns how many. */
static int union_ids(const cut_energy_table *caps, int ncaps, int **ids)
{
    int n = 0, cap = 0;
    *ids = NULL;
    for (int c = 0; c < ncaps; c++)
        for (int r = 0; r < caps[c].n; r++) {
            int id = caps[c].id[r], j = 0;
            while (j < n && (*ids)[j] < id)
                j++;
            if (j < n && (*ids)[j] == id)
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 16;
                *ids = cut_xrealloc(*ids, (size_t)cap * sizeof **ids);
            }
            memmove(*ids + j + 1, *ids + j, (size_t)(n - j) * sizeof **ids);
            (*ids)[j] = id;
            n++;
        }
    return n;
}

void cut_energy_all_csv(cut_buf *b, const cut_energy_table *caps, int ncaps)
{
    cut_buf_printf(b, "id");
    for (int c = 0; c < ncaps; c++)
        cut_buf_printf(b, ",perf(GFLOP/s),energy(mJ),EDP(ms*mJ)");
    cut_buf_printf(b, "\n");
    int *ids = NULL, n = union_ids(caps, ncaps, &ids);
    for (int r = 0; r < n; r++) {
        cut_buf_printf(b, "%d", ids[r]);
        for (int c = 0; c < ncaps; c++) {
            int j = 0;
            while (j < caps[c].n && caps[c].id[j] != ids[r])
                j++;
            if (j == caps[c].n)
                cut_buf_printf(b, ",,,");
            else
                cut_buf_printf(b, ",%.2f,%.6f,%.8f", caps[c].v[j][0], caps[c].v[j][1], caps[c].v[j][2]);
        }
        cut_buf_printf(b, "\n");
    }
    free(ids);
}

/* ---- results.csv merged by kernel id (one kernel measured at a time must not lose the others' rows) ---- */

void cut_energy_table_set(cut_energy_table *t, int id, double perf, double energy_mj, double edp)
{
    int j = 0;
    while (j < t->n && t->id[j] < id)
        j++;
    if (j == t->n || t->id[j] != id) {
        cut_energy_table_add(t, id, 0, 0, 0); /* grows by one; then shift the tail up to make room at j */
        memmove(t->id + j + 1, t->id + j, (size_t)(t->n - 1 - j) * sizeof *t->id);
        memmove(t->v + j + 1, t->v + j, (size_t)(t->n - 1 - j) * sizeof *t->v);
        t->id[j] = id;
    }
    t->v[j][0] = perf;
    t->v[j][1] = energy_mj;
    t->v[j][2] = edp;
}

void cut_energy_table_remove(cut_energy_table *t, int id)
{
    for (int j = 0; j < t->n; j++)
        if (t->id[j] == id) {
            memmove(t->id + j, t->id + j + 1, (size_t)(t->n - 1 - j) * sizeof *t->id);
            memmove(t->v + j, t->v + j + 1, (size_t)(t->n - 1 - j) * sizeof *t->v);
            t->n--;
            return;
        }
}

void cut_energy_results_csv(cut_buf *b, const cut_energy_table *t)
{
    cut_buf_printf(b, "%s\n", CUT_ENERGY_RESULTS_HEADER);
    for (int i = 0; i < t->n; i++)
        cut_buf_printf(b, "%d,%.2f,%.6f,%.8f\n", t->id[i], t->v[i][0], t->v[i][1], t->v[i][2]);
}

int cut_energy_results_parse(const char *text, const char *name, cut_energy_table *t, cut_err *e)
{
    memset(t, 0, sizeof *t);
    const char *line = text;
    int lineno = 1;
    size_t hl = strlen(CUT_ENERGY_RESULTS_HEADER);
    if (strncmp(line, CUT_ENERGY_RESULTS_HEADER, hl) != 0 || (line[hl] != '\n' && line[hl] != '\r' && line[hl]))
        return cut_err_set(e, "%s: the first line is not '%s'", name, CUT_ENERGY_RESULTS_HEADER);
    while ((line = strchr(line, '\n')) && *++line) {
        lineno++;
        int id = 0, used = 0;
        double v[3];
        if (sscanf(line, "%d,%lf,%lf,%lf%n", &id, &v[0], &v[1], &v[2], &used) != 4 || id < 1 ||
            (line[used] != '\n' && line[used] != '\r' && line[used])) {
            cut_energy_table_free(t);
            return cut_err_set(e, "%s:%d: not a row 'id,perf,energy,EDP'", name, lineno);
        }
        cut_energy_table_set(t, id, v[0], v[1], v[2]);
    }
    return 0;
}

/* Reads dir/name into *text ("" when the file is absent). 0, or -1 with e. Caller frees *text. */
static int read_optional(const char *dir, const char *name, char *path, size_t n, char **text, cut_err *e)
{
    size_t len = 0;
    *text = NULL;
    if (snprintf(path, n, "%s/%s", dir, name) >= (int)n)
        return cut_err_set(e, "path too long: '%s/%s'", dir, name);
    if (!cut_path_exists(path)) {
        *text = cut_xstrdup("");
        return 0;
    }
    return cut_read_regular_file(path, (size_t)64 << 20, text, &len, e);
}

/* The id and power limit at the start of an energy.jsonl line; 0 when the line is not one of ours. */
static int json_line_key(const char *line, int *id, double *limit_w)
{
    int c = 0;
    return sscanf(line, "{\"case\":%d,\"id\":%d,\"power_limit_w\":%lf", &c, id, limit_w) == 3;
}

/* 1 if id is in ids[0..n). */
static int has_id(const int *ids, int n, int id)
{
    for (int i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

int cut_energy_folder_record(const char *dir, int id, const cut_energy_result *r, const char *json_line,
                             double limit_w, int *dropped, cut_err *e)
{
    char rpath[4300], jpath[4300];
    char *rtext = NULL, *jtext = NULL;
    cut_energy_table t;
    memset(&t, 0, sizeof t);
    *dropped = 0;
    if (read_optional(dir, "results.csv", rpath, sizeof rpath, &rtext, e) != 0 ||
        read_optional(dir, "energy.jsonl", jpath, sizeof jpath, &jtext, e) != 0 ||
        (rtext[0] && cut_energy_results_parse(rtext, rpath, &t, e) != 0)) {
        free(rtext);
        free(jtext);
        return -1;
    }
    /* energy.jsonl without this kernel's line and without lines measured at another limit (stale ids) */
    cut_buf jl, rc_buf;
    cut_buf_init(&jl);
    cut_buf_init(&rc_buf);
    int *stale = NULL, nstale = 0;
    for (char *line = jtext, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        size_t len = next ? (size_t)(next - line) : strlen(line);
        next = next ? next + 1 : NULL;
        int lid = 0;
        double lw = 0;
        if (json_line_key(line, &lid, &lw)) {
            if (lid == id)
                continue;
            if (fabs(lw - limit_w) > 0.5) {
                stale = cut_xrealloc(stale, (size_t)(nstale + 1) * sizeof *stale);
                stale[nstale++] = lid;
                continue;
            }
        }
        cut_buf_append(&jl, line, len);
        cut_buf_append(&jl, "\n", 1);
    }
    for (int i = 0; i < nstale; i++) {
        char out[4400];
        if (has_id(stale, i, stale[i]))
            continue;
        cut_energy_table_remove(&t, stale[i]);
        snprintf(out, sizeof out, "%s/output_kernel%d.txt", dir, stale[i]);
        remove(out); /* its output file says the other limit: gone with its row */
        (*dropped)++;
    }
    if (r) {
        cut_energy_table_set(&t, id, r->gflops, r->energy_mj, r->edp);
        if (json_line)
            cut_buf_append(&jl, json_line, strlen(json_line));
    } else {
        cut_energy_table_remove(&t, id); /* it failed at this cap: no row, as in a run of every kernel */
    }
    cut_energy_results_csv(&rc_buf, &t);
    int rc = cut_write_file_atomic(rpath, rc_buf.data, rc_buf.len, e);
    if (rc == 0 && (jl.len > 0 || jtext[0]))
        rc = cut_write_file_atomic(jpath, jl.data ? jl.data : "", jl.len, e);
    cut_buf_free(&jl);
    cut_buf_free(&rc_buf);
    cut_energy_table_free(&t);
    free(stale);
    free(rtext);
    free(jtext);
    return rc;
}

int cut_energy_all_rebuild(const char *case_dir, cut_err *e)
{
    cut_energy_table caps[CUT_POWERCAP_MAX_LIST];
    memset(caps, 0, sizeof caps);
    int ncaps = 0, rc = 0;
    for (int p = 1; rc == 0 && p <= CUT_POWERCAP_MAX_LIST; p++) {
        char dir[4200], path[4300], *text = NULL;
        snprintf(dir, sizeof dir, "%s/powercap%d", case_dir, p);
        if (read_optional(dir, "results.csv", path, sizeof path, &text, e) != 0) {
            rc = -1;
        } else if (text[0]) {
            rc = cut_energy_results_parse(text, path, &caps[p - 1], e);
            ncaps = p;
        }
        free(text);
    }
    if (rc == 0 && ncaps > 0) {
        cut_buf b;
        cut_buf_init(&b);
        cut_energy_all_csv(&b, caps, ncaps);
        char path[4300];
        snprintf(path, sizeof path, "%s/all.csv", case_dir);
        rc = cut_write_file_atomic(path, b.data, b.len, e);
        cut_buf_free(&b);
    }
    for (int p = 0; p < CUT_POWERCAP_MAX_LIST; p++)
        cut_energy_table_free(&caps[p]);
    return rc;
}

int cut_energy_caps_record(const char *path, const int *index, const unsigned int *mw, int n, cut_err *e)
{
    double limit[CUT_POWERCAP_MAX_LIST + 1];
    for (int p = 0; p <= CUT_POWERCAP_MAX_LIST; p++)
        limit[p] = -1;
    if (cut_path_exists(path)) {
        char *text = NULL;
        size_t len = 0;
        if (cut_read_regular_file(path, (size_t)1 << 20, &text, &len, e) != 0)
            return -1;
        for (char *line = strchr(text, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
            int p = 0;
            double w = 0;
            if (sscanf(line + 1, "%d,%lf", &p, &w) == 2 && p >= 1 && p <= CUT_POWERCAP_MAX_LIST && w > 0)
                limit[p] = w; /* a line that is not a cap's is dropped: the file is cutune's */
        }
        free(text);
    }
    for (int i = 0; i < n; i++)
        if (index[i] >= 1 && index[i] <= CUT_POWERCAP_MAX_LIST)
            limit[index[i]] = mw[i] / 1e3;
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_printf(&b, "%s\n", CUT_ENERGY_CAPS_HEADER);
    for (int p = 1; p <= CUT_POWERCAP_MAX_LIST; p++)
        if (limit[p] > 0)
            cut_buf_printf(&b, "%d,%.3f\n", p, limit[p]);
    int rc = cut_write_file_atomic(path, b.data, b.len, e);
    cut_buf_free(&b);
    return rc;
}
