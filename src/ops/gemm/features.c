/* cutune — the GEMM templates' feature vectors for the cost model (a separate model instance from conv's: the
 * slots below mean GEMM quantities). */
#include "strategy/features.h"
#include "cutune/gemm_space.h"

#include <math.h>
#include <string.h>

static float lg(double x) { return x > 0 ? (float)log2(x) : 0.0f; }

/* ---- GEMM (a separate model instance: the slots below mean GEMM quantities) ----------------------------------- */

enum {
    G_ONEHOT = 0, /* CUT_FEAT_NTPL slots: the GEMM template's registry index */
    G_LOG_M = CUT_FEAT_NTPL, G_LOG_N, G_LOG_K, G_DTYPE, G_LAYOUT,
    G_LOG_BM, G_LOG_BN, G_LOG_BK, G_LOG_THREADS, G_STAGES, G_SMEM_KB, G_REGS,
    G_BLOCKS_PER_SM, G_OCCUPANCY, G_LOG_BLOCKS, G_WAVES, G_LOG_WAVES, G_TAIL_EFF,
    G_LOG_INTENSITY, G_PAD_WASTE, G_TENSOR_CORES, G_LOG_ACC_PER_THREAD,
    G_KNOB0,
    G_END = G_KNOB0 + CUT_MAX_KNOBS
};

_Static_assert(G_END <= CUT_FEAT_LEN, "GEMM feature layout exceeds CUT_FEAT_LEN");

/* M, N rounded up to whole tiles over M, N themselves (>= 1: the work of padded tiles). */
static double gemm_pad_waste(const cut_gemm *g, int bm, int bn)
{
    double mp = ceil((double)g->m / bm) * bm, np = ceil((double)g->n / bn) * bn;
    return mp * np / ((double)g->m * g->n);
}

static void gemm_geom_features(const cut_gemm *g, const cut_gemm_geom *ge, const cut_devlimits *d, int regs,
                               float *f)
{
    int bm = CUT_MAX(ge->bm, 1), bn = CUT_MAX(ge->bn, 1), bk = CUT_MAX(ge->bk, 1), thr = CUT_MAX(ge->threads, 1);
    int r = regs > 0 ? regs : CUT_MAX(ge->regs_est, 1);
    int elem = ge->elem_bytes > 0 ? ge->elem_bytes : (int)cut_dtype_size(g->dtype);
    f[G_LOG_BM] = lg(bm);
    f[G_LOG_BN] = lg(bn);
    f[G_LOG_BK] = lg(bk);
    f[G_LOG_THREADS] = lg(thr);
    f[G_STAGES] = (float)ge->stages;
    f[G_SMEM_KB] = (float)ge->smem_bytes / 1024.0f;
    f[G_REGS] = (float)r;
    int bps = CUT_MAX(cut_features_blocks_per_sm(d, thr, CUT_MIN(r, 255), ge->smem_bytes), 1);
    f[G_BLOCKS_PER_SM] = (float)bps;
    f[G_OCCUPANCY] = (float)(bps * thr) / (float)cut_features_sm_caps(d).threads;
    double blocks = CUT_MAX((double)ge->grid[0] * CUT_MAX(ge->grid[1], 1u) * CUT_MAX(ge->grid[2], 1u), 1.0);
    double waves = blocks / ((double)CUT_MAX(d->sm_count, 1) * bps);
    if (ge->walked_tiles > 0) { /* persistent: one block an SM walks the tiles one after another */
        blocks = (double)ge->walked_tiles;
        waves = blocks / (double)CUT_MAX(d->sm_count, 1);
    }
    f[G_LOG_BLOCKS] = lg(blocks);
    f[G_WAVES] = (float)waves;
    f[G_LOG_WAVES] = (float)log2(waves);
    f[G_TAIL_EFF] = (float)(waves / ceil(waves));
    f[G_LOG_INTENSITY] = lg(2.0 * bm * bn * bk / ((double)(bm + bn) * bk * elem));
    f[G_PAD_WASTE] = (float)gemm_pad_waste(g, bm, bn);
    f[G_TENSOR_CORES] = (float)ge->tensor_cores;
    f[G_LOG_ACC_PER_THREAD] = lg((double)bm * bn / thr);
}

int cut_features_gemm(const cut_gemm *g, const cut_sched *s, const cut_devlimits *d, int regs, float *out, int cap)
{
    const cut_gemm_template *t = cut_gemm_template_get(s->tpl);
    if (cap < CUT_FEAT_LEN || !t || s->tpl >= CUT_FEAT_NTPL || g->m <= 0 || g->n <= 0 || g->k <= 0)
        return -1;
    memset(out, 0, sizeof(float) * CUT_FEAT_LEN);
    out[G_ONEHOT + s->tpl] = 1.0f;
    out[G_LOG_M] = lg(g->m);
    out[G_LOG_N] = lg(g->n);
    out[G_LOG_K] = lg(g->k);
    out[G_DTYPE] = (float)g->dtype;
    out[G_LAYOUT] = (float)g->layout;
    cut_gemm_geom ge;
    memset(&ge, 0, sizeof ge);
    t->geometry(g, s, &ge);
    gemm_geom_features(g, &ge, d, regs, out);
    for (int i = 0; i < t->nknobs && i < CUT_MAX_KNOBS; i++)
        out[G_KNOB0 + i] = s->k[i] >= 0 ? lg(1.0 + s->k[i]) : 0.0f;
    for (int i = 0; i < CUT_FEAT_LEN; i++)
        if (!isfinite(out[i]))
            out[i] = 0.0f;
    return CUT_FEAT_LEN;
}
