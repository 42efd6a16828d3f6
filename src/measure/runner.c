/* cutune — runner helpers shared by every runner (see cutune/measure.h). */
#include "cutune/measure.h"

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
