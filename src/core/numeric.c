/* cutune — random inputs and comparison with a double-precision reference (see cutune/util.h). */
#include "cutune/util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

uint64_t cut_input_set_seed(uint64_t seed, int s)
{
    if (s == 0)
        return seed;
    uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(s + 1); /* splitmix64's finaliser */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void cut_fill_uniform(float *x, size_t n, uint64_t seed)
{
    cut_rng r;
    cut_rng_seed(&r, seed);
    /* 24 random bits -> exactly representable floats in [-1, 1) (multiples of 2^-23). */
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((double)(cut_rng_next(&r) >> 40) * 0x1.0p-23 - 1.0);
}

size_t cut_compare(const float *out, const double *ref, size_t n, double atol, double rtol, double *max_abs_err,
                   char *msg, size_t msg_len)
{
    size_t bad = 0, used = 0;
    double maxe = 0.0;
    if (msg && msg_len)
        msg[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const double got = out[i], want = ref[i];
        double err;
        int ok;
        if (!isfinite(got) || !isfinite(want)) {
            err = INFINITY;
            ok = 0;
        } else {
            err = fabs(got - want);
            ok = err <= atol + rtol * fabs(want);
        }
        if (err > maxe)
            maxe = err;
        if (!ok) {
            if (bad < 3 && msg && used < msg_len) {
                int k = snprintf(msg + used, msg_len - used, "%sidx %zu: got %.9g want %.9g", bad ? "; " : "", i,
                                 got, want);
                if (k > 0)
                    used = CUT_MIN(msg_len, used + (size_t)k);
            }
            bad++;
        }
    }
    if (max_abs_err)
        *max_abs_err = maxe;
    return bad;
}

/* Tolerance for an fp32 convolution whose inputs and weights are uniform in [-1, 1) (cut_fill_uniform), with
 * reduction length K = CI*KH*KW.
 *
 * Each product x*w has mean 0 and standard deviation 1/3, so the exact result and every partial sum of j terms
 * are of size ~sqrt(j)/3. A correct fp32 kernel accumulates in some order; each addition rounds by at most
 * u*|partial sum| (u = 2^-24) with effectively random signs, so for the worst common order (one sequential
 * chain over all K terms, with or without FMA) the error is a random walk of K steps of size ~u*sqrt(j)/3:
 * standard deviation sigma ~ u*K/4 (measured by test_check: worst of 2000 outputs at K = 4608 is 2.4e-4,
 * i.e. 3.5 sigma). Tree, split-K and tiled orders are smaller. Over up to ~10^8 outputs the maximum is ~6 sigma,
 * so atol = 4*u*K (~16 sigma) leaves a wide margin for any summation order; test_check requires the worst
 * element of sequential, FMA, reversed, pairwise and split-K sums to stay below atol/2.
 * The rtol term (32*u*sqrt(K), i.e. ~100 u relative to |ref| ~ sqrt(K)/3) covers unusually large outputs.
 * Meanwhile a wrong index changes an output by at least one product term, |x*w| ~ 0.25 on average, and usually
 * by O(sqrt(K)/3): with K = 4608 (512x3x3) atol is 1.1e-3, ~200x below a typical single term.
 * A floor of 1e-5 covers tiny K (1x1 kernels over one channel) where rounding of the single product dominates. */
