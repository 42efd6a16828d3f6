/* cutune — report: writing outdir/report/ (summary.md, plot data and scripts) and rendering the plots. */
#include "cutune/export.h"
#include "post/report_int.h"

#include <stdio.h>
#include <stdlib.h>

typedef void (*plot_text_fn)(cut_buf *b, const cut_report_case *c);
typedef void (*plot_gp_fn)(cut_buf *b, const cut_report_case *c, const char *base, const char *png_term);

/* Writes dir/name from b atomically. */
static int write_buf(const char *dir, const char *name, const cut_buf *b, cut_err *e)
{
    char path[4096];
    if (cut_path_join(path, sizeof path, dir, name, e) != 0)
        return -1;
    return cut_write_file_atomic(path, b->data ? b->data : "", b->len, e);
}

/* Writes caseN_<kind>.dat and .gp; the script's name goes to scripts[*n]. */
static int write_plot(const char *dir, const cut_report_case *c, const char *kind, plot_text_fn dat, plot_gp_fn gp,
                      const char *png_term, char (*scripts)[64], int *n, cut_err *e)
{
    char base[48], name[64];
    cut_buf b;
    snprintf(base, sizeof base, "case%d_%s", c->case_idx, kind);
    cut_buf_init(&b);
    dat(&b, c);
    snprintf(name, sizeof name, "%s.dat", base);
    int rc = write_buf(dir, name, &b, e);
    cut_buf_free(&b);
    cut_buf_init(&b);
    gp(&b, c, base, png_term);
    snprintf(name, sizeof name, "%s.gp", base);
    if (rc == 0)
        rc = write_buf(dir, name, &b, e);
    cut_buf_free(&b);
    if (rc == 0)
        snprintf(scripts[(*n)++], 64, "%s", name);
    return rc;
}

/* Every plot of every case with something to draw. scripts has room for 3 per case. */
static int write_plots(const cut_report *r, const char *dir, const char *png_term, char (*scripts)[64], int *n,
                       cut_err *e)
{
    for (int i = 0; i < r->n; i++) {
        const cut_report_case *c = &r->c[i];
        if (c->valid > 0 &&
            (write_plot(dir, c, "curve", cut_report_curve_dat, cut_report_curve_gp, png_term, scripts, n, e) != 0 ||
             write_plot(dir, c, "times", cut_report_times_dat, cut_report_times_gp, png_term, scripts, n, e) != 0))
            return -1;
        if (cut_report_energy_plottable(c) &&
            write_plot(dir, c, "energy", cut_report_energy_dat, cut_report_energy_gp, png_term, scripts, n, e) != 0)
            return -1;
    }
    return 0;
}

static int render(const char *gnuplot, const char *dir, char (*scripts)[64], int n, cut_report_out *out, cut_err *e)
{
    for (int i = 0; i < n; i++) {
        if (cut_gnuplot_run(gnuplot, dir, scripts[i], e) != 0)
            return -1;
        out->rendered++;
    }
    return 0;
}

int cut_report_write(const cut_report *r, const char *outdir, int plots, cut_report_out *out, cut_err *e)
{
    char dir[4096], gnuplot[4096];
    cut_buf b;
    *out = (cut_report_out){0};
    if (cut_path_join(dir, sizeof dir, outdir, "report", e) != 0 || cut_export_reset_dir(dir, e) != 0)
        return -1;
    cut_buf_init(&b);
    cut_report_summary_md(&b, r);
    int rc = write_buf(dir, "summary.md", &b, e);
    cut_buf_free(&b);
    if (rc != 0 || !plots)
        return rc == 0 ? cut_export_seal_dir(dir, e) : rc;
    out->gnuplot = cut_gnuplot_find(gnuplot, sizeof gnuplot);
    const char *png_term = out->gnuplot ? cut_gnuplot_png_term(gnuplot) : "pngcairo";
    char(*scripts)[64] = cut_xcalloc((size_t)(3 * r->n + 1), sizeof *scripts);
    rc = write_plots(r, dir, png_term, scripts, &out->scripts, e);
    if (rc == 0 && out->gnuplot)
        rc = render(gnuplot, dir, scripts, out->scripts, out, e);
    free(scripts);
    return rc == 0 ? cut_export_seal_dir(dir, e) : rc;
}
