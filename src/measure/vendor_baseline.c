/* cutune — the vendor GEMM baseline inside the measurement worker: cuBLAS's plain calls, then cuBLASLt's heuristic
 * and enumerated algorithms, every one checked and timed with cut_wk_check_and_time and tallied here (see
 * cut_runner_gpu_vendor in cutune/measure.h). */
#include "measure/vendor_baseline.h"

#include "measure/cublas_baseline.h"
#include "measure/cublaslt_baseline.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void cut_vendor_opts_default(cut_vendor_opts *o)
{
    o->heuristic_n = 32;
    o->enumerate = 1;
    o->max_configs = 300;
    o->budget_s = 120.0;
}

void cut_vendor_add(cut_vendor_acc *a, const cut_result *res, const char *config)
{
    cut_vendor_result *v = a->out;
    cut_vendor_entry en = {.res = *res};
    snprintf(en.config, sizeof en.config, "%s", config);
    v->tried++;
    if (res->status != CUT_ST_OK) {
        if (v->valid == 0 && !a->have_fail) {
            v->best = en;
            a->have_fail = 1;
        }
        return;
    }
    v->valid++;
    int pos = v->ntop;
    while (pos > 0 && v->top[pos - 1].res.median_ms > res->median_ms)
        pos--;
    if (pos >= CUT_VENDOR_TOP)
        return;
    const int keep = CUT_MIN(v->ntop, CUT_VENDOR_TOP - 1); /* entries that stay; the last may drop off */
    memmove(&v->top[pos + 1], &v->top[pos], (size_t)(keep - pos) * sizeof v->top[0]);
    v->top[pos] = en;
    v->ntop = keep + 1;
    v->best = v->top[0];
}

int cut_vendor_over_budget(cut_vendor_acc *a)
{
    if (cut_now_s() < a->deadline)
        return 0;
    a->out->budget_hit = 1;
    return 1;
}

void cut_vendor_note(cut_vendor_acc *a, const char *fmt, ...)
{
    char *note = a->out->note;
    const size_t cap = sizeof a->out->note, len = strlen(note);
    if (len + 3 >= cap)
        return;
    size_t off = len;
    if (len) {
        memcpy(note + len, "; ", 3);
        off += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note + off, cap - off, fmt, ap);
    va_end(ap);
}

int cut_vendor_baseline(cut_wk *w, const cut_vendor_opts *o, cut_vendor_result *out, int *fatal, cut_err *e)
{
    memset(out, 0, sizeof *out);
    cut_result_reset(&out->best.res);
    out->best.res.status = CUT_ST_LAUNCH_ERROR; /* until a candidate is timed */
    snprintf(out->best.res.error, sizeof out->best.res.error, "no vendor candidate was timed");
    cut_vendor_acc a = {.out = out, .deadline = cut_now_s() + o->budget_s};
    *fatal = 0;
    if (cut_cublas_vendor(w, &a, fatal, e) != 0)
        return -1;
    if (*fatal || (o->heuristic_n <= 0 && !o->enumerate))
        return 0;
    cut_err le = {{0}};
    if (cut_cublaslt_vendor(w, o, &a, fatal, &le) != 0)
        cut_vendor_note(&a, "%s", le.msg);
    return 0;
}
