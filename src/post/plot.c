/* cutune — report: the plots' data files and gnuplot scripts (text only; gnuplot.c runs them).
 *
 * Every script draws once to the PNG terminal and replots to SVG, reading base.dat and writing base.png and
 * base.svg in the folder it runs in. The key goes below the plot, so the plot keeps the whole width (outside right,
 * long titles squeezed it to ~60%), and the line types are a palette every series of which reads on white: the
 * Okabe-Ito colours (safe for colour-blind readers) without their yellow and light ones, then Paul Tol's dark wine,
 * indigo and green, each at least 3:1 against white (gnuplot's default type 5 is yellow, 1.3:1). */
#include "post/report_int.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TIMES_BINS 20

/* Line types 1..8 (a ninth cycles back to 1): blue, vermillion, bluish green, reddish purple, black, wine, indigo,
 * green. */
static const char *const k_palette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                        "#000000", "#882255", "#332288", "#117733"};

static void gp_begin(cut_buf *b, const cut_report_case *c, const char *base, const char *png_term, const char *what)
{
    cut_buf_printf(b,
                   "# cutune report: %s of case %d. Render in this folder with `gnuplot %s.gp` (writes %s.png, "
                   "%s.svg).\n"
                   "set terminal %s size 1000,650\nset termoption noenhanced\nset output '%s.png'\n"
                   "set title \"case %d: %s\\n%s\"\nset grid\nset key below horizontal\nset datafile missing '?'\n"
                   "set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05\n",
                   what, c->case_idx, base, base, base, png_term, base, c->case_idx, what, c->name);
    for (size_t i = 0; i < sizeof k_palette / sizeof *k_palette; i++)
        cut_buf_printf(b, "set linetype %zu lc rgb '%s' lw 1 pt 7\n", i + 1, k_palette[i]);
    cut_buf_printf(b, "set linetype cycle %zu\n", sizeof k_palette / sizeof *k_palette);
}

static void gp_end(cut_buf *b, const char *base)
{
    cut_buf_printf(b, "set terminal svg size 1000,650 dynamic\nset termoption noenhanced\nset output '%s.svg'\n"
                      "replot\nunset output\n",
                   base);
}

/* src with every character other than letters, digits, '_', '-' and '.' replaced by '_' (safe in quotes). */
static const char *plain_text(const char *src, char *buf, size_t n)
{
    size_t i = 0;
    for (; src[i] && i + 1 < n; i++)
        buf[i] = isalnum((unsigned char)src[i]) || strchr("_-.", src[i]) ? src[i] : '_';
    buf[i] = 0;
    return buf;
}

void cut_report_curve_dat(cut_buf *b, const cut_report_case *c)
{
    double *best = cut_xcalloc((size_t)(c->n > 0 ? c->n : 1), sizeof *best);
    cut_report_curve(c->recs, c->n, best);
    cut_buf_printf(b, "# trial best_gflops trial_gflops ('?': not measured)\n");
    for (int i = 0; i < c->n; i++) {
        const cut_record *r = &c->recs[i];
        cut_buf_printf(b, "%d %.3f ", i + 1, best[i]);
        if (r->status == CUT_ST_OK && isfinite(r->median_ms) && r->median_ms > 0)
            cut_buf_printf(b, "%.3f\n", cut_conv_gflops(&r->conv, r->median_ms));
        else
            cut_buf_printf(b, "?\n");
    }
    free(best);
}

void cut_report_curve_gp(cut_buf *b, const cut_report_case *c, const char *base, const char *png_term)
{
    gp_begin(b, c, base, png_term, "tuning curve");
    cut_buf_printf(b, "set xlabel 'trial (log order)'\nset ylabel 'GFLOP/s'\nset yrange [0:*]\nset xrange [0:%d]\n"
                      "plot '%s.dat' using 1:2 with steps lw 2 title 'best so far', \\\n"
                      "     '' using 1:3 with points pt 7 ps 0.5 title 'trial'",
                   c->n > 1 ? c->n - 1 : 1, base);
    if (c->cudnn_ms > 0) {
        char algo[sizeof c->cudnn_algo];
        cut_buf_printf(b, ", \\\n     %.3f with lines dt 2 lw 2 title 'cuDNN %s'",
                       cut_conv_gflops(&c->conv, c->cudnn_ms), plain_text(c->cudnn_algo, algo, sizeof algo));
    }
    cut_buf_printf(b, "\n");
    gp_end(b, base);
}

/* Histogram bounds in log10(ms) over the valid trials. */
static void times_range(const cut_report_case *c, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int i = 0; i < c->n; i++) {
        const cut_record *r = &c->recs[i];
        if (r->status != CUT_ST_OK || !isfinite(r->median_ms) || !(r->median_ms > 0))
            continue;
        *lo = fmin(*lo, log10(r->median_ms));
        *hi = fmax(*hi, log10(r->median_ms));
    }
    if (!(*hi - *lo > 1e-9)) {
        *lo -= 0.01;
        *hi += 0.01;
    }
}

void cut_report_times_dat(cut_buf *b, const cut_report_case *c)
{
    int count[TIMES_BINS] = {0}, top = 0;
    double lo, hi;
    times_range(c, &lo, &hi);
    double w = (hi - lo) / TIMES_BINS;
    for (int i = 0; i < c->n; i++) {
        const cut_record *r = &c->recs[i];
        if (r->status != CUT_ST_OK || !isfinite(r->median_ms) || !(r->median_ms > 0))
            continue;
        int k = (int)floor((log10(r->median_ms) - lo) / w);
        count[CUT_MAX(0, CUT_MIN(TIMES_BINS - 1, k))]++;
    }
    cut_buf_printf(b, "# index 0: bins of the valid trials' median time: lo_ms hi_ms mid_ms trials\n");
    for (int k = 0; k < TIMES_BINS; k++) {
        double a = lo + k * w;
        cut_buf_printf(b, "%.6g %.6g %.6g %d\n", pow(10, a), pow(10, a + w), pow(10, a + w / 2), count[k]);
        top = CUT_MAX(top, count[k]);
    }
    cut_buf_printf(b, "\n\n# index 1: representatives (tuningresults): ms height\n");
    for (int i = 0; i < c->nrep; i++)
        cut_buf_printf(b, "%.6g %d\n", c->rep_ms[i], top);
}

void cut_report_times_gp(cut_buf *b, const cut_report_case *c, const char *base, const char *png_term)
{
    gp_begin(b, c, base, png_term, "measured times");
    cut_buf_printf(b, "set logscale x\nset xlabel 'median time per trial (ms, log scale)'\nset ylabel 'trials'\n"
                      "set yrange [0:*]\nset style fill solid 0.5\n"
                      "plot '%s.dat' index 0 using 3:4:1:2:(0):4 with boxxyerror title 'valid trials'",
                   base);
    if (c->nrep > 0)
        cut_buf_printf(b, ", \\\n     '' index 1 using 1:2 with impulses lw 2 title 'representatives (tuningresults)'"
                          ", \\\n     '' index 1 using 1:2 with points pt 7 notitle");
    cut_buf_printf(b, "\n");
    gp_end(b, base);
}

static int by_time(const void *a, const void *b)
{
    const cut_kresult *x = *(const cut_kresult *const *)a, *y = *(const cut_kresult *const *)b;
    return (x->time_ms > y->time_ms) - (x->time_ms < y->time_ms);
}

/* Block 2p: every kernel of cap p; block 2p + 1: its Pareto front ordered by time. */
static void cap_blocks(cut_buf *b, const cut_cap_results *cr)
{
    const cut_kresult **front = cut_xcalloc((size_t)(cr->n > 0 ? cr->n : 1), sizeof *front);
    int nf = 0;
    cut_buf_printf(b, "# power cap %d (%.1f W): time_ms energy_mJ kernel_id\n", cr->cap.cap, cr->cap.limit_w);
    for (int k = 0; k < cr->n; k++) {
        cut_buf_printf(b, "%.6g %.6g %d\n", cr->k[k].time_ms, cr->k[k].energy_mj, cr->k[k].id);
        if (cr->k[k].pareto)
            front[nf++] = &cr->k[k];
    }
    qsort(front, (size_t)nf, sizeof *front, by_time);
    cut_buf_printf(b, "\n\n# power cap %d: Pareto front by time\n", cr->cap.cap);
    for (int k = 0; k < nf; k++)
        cut_buf_printf(b, "%.6g %.6g %d\n", front[k]->time_ms, front[k]->energy_mj, front[k]->id);
    cut_buf_printf(b, "\n\n");
    free(front);
}

/* Caps without kernels get no blocks and no plot. */
int cut_report_energy_plottable(const cut_report_case *c)
{
    for (int p = 0; p < c->ncaps; p++)
        if (c->caps[p].n > 0)
            return 1;
    return 0;
}

void cut_report_energy_dat(cut_buf *b, const cut_report_case *c)
{
    for (int p = 0; p < c->ncaps; p++)
        if (c->caps[p].n > 0)
            cap_blocks(b, &c->caps[p]);
}

void cut_report_energy_gp(cut_buf *b, const cut_report_case *c, const char *base, const char *png_term)
{
    if (!cut_report_energy_plottable(c))
        return;
    gp_begin(b, c, base, png_term, "energy vs time per power cap");
    cut_buf_printf(b, "set xlabel 'time per iteration (ms)'\nset ylabel 'energy per iteration (mJ)'\nplot ");
    for (int p = 0, q = 0; p < c->ncaps; p++) {
        const cut_cap_results *cr = &c->caps[p];
        int lc = p + 1;
        if (cr->n == 0)
            continue;
        cut_buf_printf(b,
                       "%s'%s.dat' index %d using 1:2 with points pt 7 lc %d title 'cap %d (%.0f W)', \\\n"
                       "     '' index %d using 1:2 with steps lw 2 lc %d title 'Pareto front, cap %d', \\\n"
                       "     '' index %d using 1:2 with points pt 6 ps 2 lc %d notitle, \\\n"
                       "     '' index %d using 1:2:(sprintf('%%d', int($3))) with labels offset 1,1 notitle",
                       q ? ", \\\n     " : "", base, 2 * q, lc, cr->cap.cap, cr->cap.limit_w, 2 * q + 1, lc,
                       cr->cap.cap, 2 * q + 1, lc, 2 * q + 1);
        q++;
    }
    cut_buf_printf(b, "\n");
    gp_end(b, base);
}
