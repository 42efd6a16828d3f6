/* cutune — report: the energy phase's kernel_outputs/ (per case and power cap) and the time-energy Pareto front. */
#include "post/report_int.h"

#include <stdio.h>
#include <stdlib.h>

int cut_pareto_front(const double *time_ms, const double *energy, int n, int *on_front)
{
    int count = 0;
    for (int i = 0; i < n; i++) {
        int dominated = 0;
        for (int j = 0; j < n && !dominated; j++)
            dominated = time_ms[j] <= time_ms[i] && energy[j] <= energy[i] &&
                        (time_ms[j] < time_ms[i] || energy[j] < energy[i]);
        on_front[i] = !dominated;
        count += on_front[i];
    }
    return count;
}

/* Fills the pareto flags of one cap's kernels. */
static void mark_front(cut_cap_results *cr)
{
    double *t = cut_xcalloc((size_t)cr->n, sizeof *t), *en = cut_xcalloc((size_t)cr->n, sizeof *en);
    int *f = cut_xcalloc((size_t)cr->n, sizeof *f);
    for (int i = 0; i < cr->n; i++) {
        t[i] = cr->k[i].time_ms;
        en[i] = cr->k[i].energy_mj;
    }
    cut_pareto_front(t, en, cr->n, f);
    for (int i = 0; i < cr->n; i++)
        cr->k[i].pareto = f[i];
    free(t);
    free(en);
    free(f);
}

/* Reads kernel_outputs/powercaps.csv. */
static int load_caps(const char *kdir, cut_powercap **caps, int *n, cut_err *e)
{
    char path[4096];
    char *text;
    size_t len;
    if (cut_path_join(path, sizeof path, kdir, "powercaps.csv", e) != 0 || cut_read_file(path, &text, &len, e) != 0)
        return -1;
    int rc = cut_powercaps_csv_parse(text, len, path, caps, n, e);
    free(text);
    return rc;
}

/* Reads kernel_outputs/caseN/powercapP/results.csv into cr; a missing file leaves cr->n = -1 (cap not run). */
static int load_cap_results(const char *kdir, int case_idx, cut_cap_results *cr, cut_err *e)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/case%d/powercap%d/results.csv", kdir, case_idx, cr->cap.cap) >=
        (int)sizeof path)
        return cut_err_set(e, "path too long under '%s'", kdir);
    cr->n = -1;
    if (!cut_path_exists(path))
        return 0;
    char *text;
    size_t len;
    if (cut_read_file(path, &text, &len, e) != 0)
        return -1;
    int rc = cut_results_csv_parse(text, len, path, &cr->k, &cr->n, e);
    free(text);
    if (rc == 0)
        mark_front(cr);
    return rc;
}

int cut_report_load_energy(cut_report *r, const char *kdir, cut_err *e)
{
    cut_powercap *caps;
    int ncaps;
    if (load_caps(kdir, &caps, &ncaps, e) != 0)
        return -1;
    int rc = 0;
    for (int i = 0; i < r->n && rc == 0; i++) {
        cut_report_case *c = &r->c[i];
        c->caps = cut_xcalloc((size_t)ncaps, sizeof *c->caps);
        for (int p = 0; p < ncaps && rc == 0; p++) {
            cut_cap_results *cr = &c->caps[c->ncaps];
            cr->cap = caps[p];
            rc = load_cap_results(kdir, c->case_idx, cr, e);
            if (rc == 0 && cr->n >= 0)
                c->ncaps++;
        }
    }
    free(caps);
    return rc;
}
