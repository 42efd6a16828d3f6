/* cutune — knob-space helpers (see codegen/knobs.h). */
#include "codegen/knobs.h"

int cut_pick(cut_rng *r, const int *vals, int n) { return vals[cut_rng_below(r, (uint32_t)n)]; }

int cut_step_in(cut_rng *r, const int *vals, int n, int cur)
{
    int at = 0;
    for (int i = 0; i < n; i++)
        if (vals[i] == cur)
            at = i;
    int dir = (cut_rng_next(r) & 1) ? 1 : -1;
    int next = at + dir;
    if (next < 0 || next >= n)
        next = at - dir;
    if (next < 0 || next >= n)
        next = at;
    return vals[next];
}
