/* cutune — runner helpers shared by every runner (see cutune/measure.h). */
#include "cutune/measure.h"

#include <stdio.h>
#include <string.h>

void cut_result_reset(cut_result *r)
{
    memset(r, 0, sizeof *r);
    r->status = CUT_ST_OK;
    r->median_ms = r->min_ms = r->max_ms = -1.0;
}

void cut_timing_default(cut_timing *t)
{
    t->warmup = 2;
    t->min_repeats = 5;
    t->max_repeats = 200;
    t->min_total_ms = 20.0;
    t->flush_l2 = 1;
    t->timeout_s = 10.0;
}

void cut_runner_free(cut_runner *r)
{
    if (r && r->destroy)
        r->destroy(r);
}

int cut_call_of_kernel(const cut_kernel_src *ks, const cut_compiled *bin, cut_call *c, cut_result *res)
{
    memset(c, 0, sizeof *c);
    if (ks->ntma != 0 && ks->ntma != 2) {
        res->status = CUT_ST_LAUNCH_ERROR;
        snprintf(res->error, sizeof res->error, "the kernel has %d TMA maps (0 or 2)", ks->ntma);
        return -1;
    }
    c->src = ks->src;
    c->bin = bin;
    snprintf(c->entry, sizeof c->entry, "%s", ks->entry);
    memcpy(c->grid, ks->grid, sizeof c->grid);
    memcpy(c->block, ks->block, sizeof c->block);
    c->smem = ks->smem_dynamic;
    c->tol_scale = ks->tol_scale;
    c->nargs = 3;
    for (int i = 0; i < 3; i++) {
        c->args[i].buf = i;
        if (i < ks->ntma) { /* the maps of the work's first two buffers (A and B), by value */
            c->args[i].tma = 1;
            c->args[i].desc = ks->tma[i];
            c->args[i].buf = ks->tma[i].operand == 1 ? 1 : 0;
        }
    }
    return 0;
}
