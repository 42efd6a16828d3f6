/* cutune — what every op's cost-model features share: per-SM limits and resident blocks by compute capability.
 * The features themselves are the ops' (src/ops/conv2d/features.c, src/ops/gemm/features.c): a strategy only
 * learns from the vectors. */
#include "strategy/features.h"

/* Per-SM limits by compute capability (CUDA occupancy tables). */
sm_caps cut_features_sm_caps(const cut_devlimits *d)
{
    int cc = d->sm_major * 10 + d->sm_minor;
    sm_caps s = {2048, 32, 65536, 233472, 1024}; /* sm_90, sm_100 */
    if (cc < 80) {
        s = (sm_caps){cc == 75 ? 1024 : 2048, cc == 75 ? 16 : 32, 65536, cc == 75 ? 65536 : 98304, 0};
    } else if (cc == 80) {
        s.smem = 167936;
    } else if (cc < 90 || cc >= 120) {
        s.threads = 1536;
        s.blocks = cc == 89 || cc >= 120 ? 24 : 16;
        s.smem = 102400;
    }
    return s;
}

int cut_features_blocks_per_sm_lim(const cut_devlimits *d, int threads, int regs, int smem_bytes, int *limiter)
{
    sm_caps s = cut_features_sm_caps(d);
    int ws = d->warp_size > 0 ? d->warp_size : 32;
    int warps = CUT_CEIL_DIV(threads, ws);
    int by_threads = s.threads / (warps * ws);
    /* registers are allocated per warp in units of 256 */
    int per_warp = CUT_CEIL_DIV(regs * ws, 256) * 256;
    int by_regs = per_warp > 0 ? (s.regs / per_warp) / warps : s.blocks;
    int by_smem = smem_bytes > 0 ? s.smem / (smem_bytes + s.smem_reserved) : s.blocks;
    int b = s.blocks, lim = 0;
    if (by_threads < b)
        b = by_threads, lim = 1;
    if (by_regs < b)
        b = by_regs, lim = 2;
    if (by_smem < b)
        b = by_smem, lim = 3;
    if (limiter)
        *limiter = lim;
    return b;
}

int cut_features_blocks_per_sm(const cut_devlimits *d, int threads, int regs, int smem_bytes)
{
    return cut_features_blocks_per_sm_lim(d, threads, regs, smem_bytes, NULL);
}
