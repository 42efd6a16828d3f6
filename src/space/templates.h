/* cutune — the built-in templates (internal). */
#ifndef CUTUNE_SPACE_TEMPLATES_H
#define CUTUNE_SPACE_TEMPLATES_H

#include "cutune/space.h"

extern const cut_template cut_tpl_direct;

/* Direct convolution knobs (indices into cut_sched.k). */
enum {
    CUT_D_TCO, CUT_D_TOH, CUT_D_TOW, /* threads per block along co, oh, ow */
    CUT_D_RCO, CUT_D_ROH, CUT_D_ROW, /* outputs per thread (register tile) along co, oh, ow */
    CUT_D_RC,                        /* input channels per reduction step */
    CUT_D_RKH,                       /* filter rows per reduction step (divides KH) */
    CUT_D_SMEM,                      /* 1: stage input and weight tiles in shared memory */
    CUT_D_UNROLL,                    /* max unrolled reduction steps (TVM's auto_unroll_max_step): 0,16,64,512 */
    CUT_D_VEC,                       /* contiguous ow outputs per thread group (1, 2, 4): vector stores */
    CUT_D_NKNOBS
};

/* A random element of vals[0..n). */
int cut_pick(cut_rng *r, const int *vals, int n);
/* The neighbour of cur in vals (one step up or down). */
int cut_step_in(cut_rng *r, const int *vals, int n, int cur);

#endif

/* Everything that follows from a direct-convolution schedule: block tile, grid, shared-memory tile. */
typedef struct cut_direct_geom {
    int oh, ow;              /* output size */
    int threads;             /* tco * toh * tow */
    int bco, boh, bow;       /* block tile */
    int iht, iwt;            /* staged input tile: rows and columns */
    int smem_in, smem_w;     /* staged floats per reduction step (0 without staging) */
    int smem_bytes;
    int acc;                 /* accumulators per thread */
    int regs_est;            /* rough registers per thread */
    int unrolled_trips;      /* reduction steps in the fully unrolled inner loop nest (1 if none unrolled) */
    unsigned grid[3];
} cut_direct_geom;
void cut_direct_geometry(const cut_conv *c, const cut_sched *s, cut_direct_geom *g);
