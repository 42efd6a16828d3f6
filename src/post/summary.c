/* cutune — report: the tuning curve and the markdown tables (summary.md). */
#include "post/report_int.h"

#include <math.h>
#include <stdio.h>

const char *cut_report_ms_text(double v, char *buf, size_t n)
{
    if (v > 0)
        snprintf(buf, n, "%.4f", v);
    else
        snprintf(buf, n, "-");
    return buf;
}

void cut_report_curve(const cut_record *recs, int n, double *out)
{
    double best = 0;
    for (int i = 0; i < n; i++) {
        const cut_record *r = &recs[i];
        if (r->status == CUT_ST_OK && isfinite(r->median_ms) && r->median_ms > 0) {
            double g = cut_conv_gflops(&r->conv, r->median_ms);
            if (g > best)
                best = g;
        }
        out[i] = best;
    }
}

static const char *tpl_name(const cut_sched *s)
{
    const cut_template *t = cut_template_get(s->tpl);
    return t ? t->name : "?";
}

/* One row of the per-case table. */
static void case_row(cut_buf *b, const cut_report_case *c)
{
    char best[32], cudnn[32], speedup[32] = "-";
    const cut_record *r = c->best >= 0 ? &c->recs[c->best] : NULL;
    double best_ms = r ? r->median_ms : -1;
    if (best_ms > 0 && c->cudnn_ms > 0)
        snprintf(speedup, sizeof speedup, "%.2fx", c->cudnn_ms / best_ms);
    cut_buf_printf(b, "| %d | `%s` | %d | %d | %s | ", c->case_idx, c->name, c->n, c->valid,
                   cut_report_ms_text(best_ms, best, sizeof best));
    if (r)
        cut_buf_printf(b, "%.1f | %s | ", cut_conv_gflops(&c->conv, best_ms), tpl_name(&r->sched));
    else
        cut_buf_printf(b, "- | - | ");
    cut_buf_printf(b, "%s | %s | %s |\n", cut_report_ms_text(c->cudnn_ms, cudnn, sizeof cudnn),
                   c->cudnn_algo[0] ? c->cudnn_algo : "-", speedup);
}

static void cases_table(cut_buf *b, const cut_report *r)
{
    cut_buf_printf(b, "## Tuning against cuDNN\n\n"
                      "| case | workload | trials | valid | best ms | best GFLOP/s | best template | cuDNN ms | "
                      "cuDNN algorithm | speedup |\n"
                      "|---:|---|---:|---:|---:|---:|---|---:|---|---:|\n");
    for (int i = 0; i < r->n; i++)
        case_row(b, &r->c[i]);
    cut_buf_printf(b, "\nspeedup = cuDNN ms / best ms (best: fastest valid trial of the log).\n");
}

static void cap_table(cut_buf *b, const cut_report_case *c, const cut_cap_results *cr)
{
    int front = 0;
    for (int k = 0; k < cr->n; k++)
        front += cr->k[k].pareto;
    cut_buf_printf(b, "\n### case %d, power cap %d (%.1f W): %d kernel(s), %d on the Pareto front\n\n", c->case_idx,
                   cr->cap.cap, cr->cap.limit_w, cr->n, front);
    cut_buf_printf(b, "| kernel | GFLOP/s | time ms | energy mJ | EDP ms*mJ | Pareto |\n"
                      "|---:|---:|---:|---:|---:|:---:|\n");
    for (int k = 0; k < cr->n; k++) {
        const cut_kresult *x = &cr->k[k];
        cut_buf_printf(b, "| %d | %.1f | %.5f | %.5f | %.6g | %s |\n", x->id, x->gflops, x->time_ms, x->energy_mj,
                       x->edp, x->pareto ? "yes" : "");
    }
}

void cut_report_summary_md(cut_buf *b, const cut_report *r)
{
    cut_buf_printf(b, "# cutune report\n\n");
    cases_table(b, r);
    int any = 0;
    for (int i = 0; i < r->n; i++)
        any |= r->c[i].ncaps > 0;
    if (!any)
        return;
    cut_buf_printf(b, "\n## Energy per power cap (kernel_outputs/)\n\n"
                      "time = EDP / energy per iteration; Pareto: not beaten in both time and energy at that cap.\n");
    for (int i = 0; i < r->n; i++)
        for (int p = 0; p < r->c[i].ncaps; p++)
            cap_table(b, &r->c[i], &r->c[i].caps[p]);
}
