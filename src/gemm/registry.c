/* cutune — the GEMM template registry: the SIMT, mma.sync and wgmma templates behind one interface
 * (cutune/gemm_space.h), so that search, records and the cost model treat them alike. */
#include "cutune/gemm_space.h"

#include <stdio.h>
#include <string.h>

static const cut_gemm_template *const registry[] = {
    [CUT_GEMM_TPL_SIMT] = &cut_gemm_tpl_simt,
    [CUT_GEMM_TPL_MMA] = &cut_gemm_tpl_mma,
    [CUT_GEMM_TPL_WGMMA] = &cut_gemm_tpl_wgmma,
};

int cut_gemm_template_count(void) { return (int)CUT_ARRAY_LEN(registry); }

const cut_gemm_template *cut_gemm_template_get(int tpl)
{
    return tpl >= 0 && tpl < cut_gemm_template_count() ? registry[tpl] : NULL;
}

int cut_gemm_template_find(const char *name)
{
    for (int i = 0; name && i < cut_gemm_template_count(); i++)
        if (strcmp(registry[i]->name, name) == 0)
            return i;
    return -1;
}

void cut_gemm_sched_describe(const cut_sched *s, char *buf, size_t n)
{
    const cut_gemm_template *t = cut_gemm_template_get(s->tpl);
    size_t off = (size_t)snprintf(buf, n, "%s", t ? t->name : "?");
    for (int i = 0; t && i < t->nknobs && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, " %s=%d", t->knob_name(i), s->k[i]);
}

int cut_gemm_sched_check(const cut_gemm *g, const cut_sched *s, const cut_devlimits *d, cut_err *e)
{
    const cut_gemm_template *t = cut_gemm_template_get(s->tpl);
    if (!t)
        return cut_err_set(e, "GEMM schedule names template %d; there are %d", s->tpl, cut_gemm_template_count());
    cut_err why;
    if (!t->applies(g, d, &why))
        return cut_err_set(e, "%s", why.msg);
    return t->check(g, s, d, e);
}

int cut_gemm_sched_sample_valid(const cut_gemm *g, const cut_devlimits *d, int tpl, cut_rng *r, cut_sched *s,
                                int max_tries, cut_err *e)
{
    const cut_gemm_template *t = cut_gemm_template_get(tpl);
    if (!t)
        return cut_err_set(e, "no GEMM template %d (there are %d)", tpl, cut_gemm_template_count());
    if (!t->applies(g, d, e))
        return -1;
    for (int i = 0; i < max_tries; i++) {
        memset(s, 0, sizeof *s);
        t->sample(g, d, r, s);
        s->tpl = tpl;
        if (t->check(g, s, d, e) == 0)
            return 0;
    }
    return cut_err_wrap(e, "no valid %s schedule in %d samples", t->name, max_tries);
}

int cut_codegen_gemm(const cut_gemm *g, const cut_sched *s, cut_kernel_src *out, cut_err *e)
{
    const cut_gemm_template *t = cut_gemm_template_get(s->tpl);
    if (!t) {
        memset(out, 0, sizeof *out);
        return cut_err_set(e, "GEMM schedule names template %d; there are %d", s->tpl, cut_gemm_template_count());
    }
    return t->codegen(g, s, out, e);
}
