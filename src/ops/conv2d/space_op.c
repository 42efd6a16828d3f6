/* cutune — the conv op's schedule space as strategies see it (cutune/strategy.h): the conv template registry, its
 * validity checks and the conv cost-model features. */
#include "cutune/search.h"
#include "cutune/space.h"
#include "cutune/util.h"

#include <stdlib.h>
#include <string.h>

static const cut_conv *conv_of(const cut_space *sp) { return sp->wl; }

static int conv_nknobs(const cut_space *sp, int tpl)
{
    (void)sp;
    const cut_template *t = cut_template_get(tpl);
    return t ? t->nknobs : 0;
}

static int conv_applies(const cut_space *sp, int tpl)
{
    const cut_template *t = cut_template_get(tpl);
    return t && t->applies(conv_of(sp));
}

static int conv_sample_valid(const cut_space *sp, int tpl, cut_rng *r, cut_sched *out, int tries)
{
    return cut_sched_sample_valid(conv_of(sp), &sp->dev, tpl, r, out, tries);
}

static void conv_mutate(const cut_space *sp, cut_rng *r, cut_sched *s)
{
    const cut_template *t = cut_template_get(s->tpl);
    if (t)
        t->mutate(conv_of(sp), &sp->dev, r, s);
}

static int conv_check(const cut_space *sp, const cut_sched *s, cut_err *e)
{
    return cut_sched_check(conv_of(sp), s, &sp->dev, e);
}

static int conv_features(const cut_space *sp, const cut_sched *s, int regs, float *out, int cap)
{
    return cut_features_conv(conv_of(sp), s, &sp->dev, regs, out, cap);
}

static double conv_score(const cut_space *sp, double ms) { return cut_conv_gflops(conv_of(sp), ms); }

static void conv_destroy(cut_space *sp) { free(sp->wl); }

cut_space *cut_conv_space_new(const cut_conv *c, const cut_devlimits *d)
{
    cut_space *sp = cut_xcalloc(1, sizeof *sp);
    cut_conv *wl = cut_xmalloc(sizeof *wl);
    *wl = *c;
    *sp = (cut_space){.op = "conv2d",
                      .wl = wl,
                      .dev = *d,
                      .ntpl = cut_template_count(),
                      .nknobs = conv_nknobs,
                      .applies = conv_applies,
                      .sample_valid = conv_sample_valid,
                      .mutate = conv_mutate,
                      .check = conv_check,
                      .features = conv_features,
                      .score = conv_score,
                      .destroy = conv_destroy};
    return sp;
}

cut_search *cut_search_new(const cut_conv *c, const cut_devlimits *d, const cut_search_opts *o)
{
    return cut_search_new_space(cut_conv_space_new(c, d), o);
}

int cut_search_add_prior(cut_search *s, const cut_conv *c, const cut_sched *sc, double time_ms, int regs, int group)
{
    const cut_space *sp = cut_search_space(s);
    float f[CUT_FEAT_LEN];
    if (strcmp(sp->op, "conv2d") != 0 || group == 0 || cut_features_conv(c, sc, &sp->dev, regs, f, CUT_FEAT_LEN) < 0)
        return -1;
    return cut_search_add_prior_features(s, f, time_ms > 0 ? cut_conv_gflops(c, time_ms) : 0.0, group);
}
