/* cutune — helpers of the templates' knob spaces, shared by every op's templates (internal). */
#ifndef CUTUNE_CODEGEN_KNOBS_H
#define CUTUNE_CODEGEN_KNOBS_H

#include "cutune/common.h"
#include "cutune/util.h"

/* Small integer helpers of the knob spaces. */
static inline int cut_imax(int a, int b) { return a > b ? a : b; }
static inline int cut_clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
static inline int cut_ceil_div(int a, int b) { return (a + b - 1) / b; }
/* The smallest power of two >= x (at most 2^30). */
static inline int cut_next_pow2(int x)
{
    int p = 1;
    while (p < x && p < (1 << 30))
        p *= 2;
    return p;
}
/* 1 if v is one of vals[0..n). */
static inline int cut_in_set(const int *vals, int n, int v)
{
    for (int i = 0; i < n; i++)
        if (vals[i] == v)
            return 1;
    return 0;
}
#define CUT_IN(vals, v) cut_in_set(vals, (int)CUT_ARRAY_LEN(vals), v)

/* A random element of vals[0..n). */
int cut_pick(cut_rng *r, const int *vals, int n);
/* The neighbour of cur in vals (one step up or down). */
int cut_step_in(cut_rng *r, const int *vals, int n, int cur);

#endif
