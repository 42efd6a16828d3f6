/* cutune — the GEMM op's schedule space as strategies see it (cutune/strategy.h): the GEMM template registry (SIMT,
 * mma.sync, wgmma), its validity checks and the GEMM cost-model features. */
#include "cutune/gemm_space.h"
#include "cutune/search.h"
#include "cutune/util.h"

#include <stdlib.h>

static const cut_gemm *gemm_of(const cut_space *sp) { return sp->wl; }

static int gemm_nknobs(const cut_space *sp, int tpl)
{
    (void)sp;
    const cut_gemm_template *t = cut_gemm_template_get(tpl);
    return t ? t->nknobs : 0;
}

static int gemm_applies(const cut_space *sp, int tpl)
{
    const cut_gemm_template *t = cut_gemm_template_get(tpl);
    return t && t->applies(gemm_of(sp), &sp->dev, NULL);
}

static int gemm_sample_valid(const cut_space *sp, int tpl, cut_rng *r, cut_sched *out, int tries)
{
    return cut_gemm_sched_sample_valid(gemm_of(sp), &sp->dev, tpl, r, out, tries, NULL);
}

static void gemm_mutate(const cut_space *sp, cut_rng *r, cut_sched *s)
{
    const cut_gemm_template *t = cut_gemm_template_get(s->tpl);
    if (t)
        t->mutate(gemm_of(sp), &sp->dev, r, s);
}

static int gemm_check(const cut_space *sp, const cut_sched *s, cut_err *e)
{
    return cut_gemm_sched_check(gemm_of(sp), s, &sp->dev, e);
}

static int gemm_features(const cut_space *sp, const cut_sched *s, int regs, float *out, int cap)
{
    return cut_features_gemm(gemm_of(sp), s, &sp->dev, regs, out, cap);
}

static double gemm_score(const cut_space *sp, double ms) { return cut_gemm_gflops(gemm_of(sp), ms); }

static void gemm_destroy(cut_space *sp) { free(sp->wl); }

cut_space *cut_gemm_space_new(const cut_gemm *g, const cut_devlimits *d)
{
    cut_space *sp = cut_xcalloc(1, sizeof *sp);
    cut_gemm *wl = cut_xmalloc(sizeof *wl);
    *wl = *g;
    *sp = (cut_space){.op = "gemm",
                      .wl = wl,
                      .dev = *d,
                      .ntpl = cut_gemm_template_count(),
                      .nknobs = gemm_nknobs,
                      .applies = gemm_applies,
                      .sample_valid = gemm_sample_valid,
                      .mutate = gemm_mutate,
                      .check = gemm_check,
                      .features = gemm_features,
                      .score = gemm_score,
                      .destroy = gemm_destroy};
    return sp;
}

cut_search *cut_search_new_gemm(const cut_gemm *g, const cut_devlimits *d, const cut_search_opts *o)
{
    return cut_search_new_space(cut_gemm_space_new(g, d), o);
}
