/* cutune — the "wgmma" GEMM template: not built yet (this placeholder applies to no workload). */
#include "cutune/gemm_space.h"

#include <string.h>

static const char *knob_name(int knob) { (void)knob; return "?"; }

static int applies(const cut_gemm *g, const cut_devlimits *d, cut_err *why)
{
    (void)g;
    (void)d;
    return cut_err_set(why, "the wgmma template is not built yet"), 0;
}

static void sample(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_sched *s)
{
    (void)g, (void)d, (void)r;
    memset(s, 0, sizeof *s);
}

static void mutate(const cut_gemm *g, const cut_devlimits *d, cut_rng *r, cut_sched *s) { (void)g, (void)d, (void)r, (void)s; }

static int check(const cut_gemm *g, const cut_sched *s, const cut_devlimits *d, cut_err *e)
{
    (void)s;
    return applies(g, d, e) ? 0 : -1;
}

static void geometry(const cut_gemm *g, const cut_sched *s, cut_gemm_geom *out)
{
    (void)g, (void)s;
    memset(out, 0, sizeof *out);
}

static int codegen(const cut_gemm *g, const cut_sched *s, cut_kernel_src *out, cut_err *e)
{
    (void)s;
    memset(out, 0, sizeof *out);
    return applies(g, NULL, e) ? 0 : -1;
}

const cut_gemm_template cut_gemm_tpl_wgmma = {"wgmma", 0, knob_name, applies, sample, mutate, check, geometry, codegen};
