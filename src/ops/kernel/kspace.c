/* cutune — a kernel spec's tunables as a schedule space (cutune/strategy.h), so that any strategy can tune a user
 * kernel the way Kernel Tuner's tune_kernel does: one template ("tunables"), knob i the index of tunable i's value
 * in the spec's list, a schedule valid when it resolves (grid, block, buffer sizes) and satisfies every restriction.
 * The cost model sees each tunable's log2 value and the launch it resolves to. */
#include "cutune/kspec.h"
#include "cutune/kstate.h"
#include "cutune/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kspace {
    const cut_kspec *k; /* borrowed: the caller keeps the spec alive while the space lives */
} kspace;

static const cut_kspec *spec_of(const cut_space *sp) { return ((const kspace *)sp->wl)->k; }

int cut_kspec_sched_values(const cut_kspec *k, const cut_sched *s, long long *vals, cut_err *e)
{
    if (s->tpl != 0)
        return cut_err_set(e, "a kernel spec's schedule has template 0 (its tunables), not %d", s->tpl);
    for (int i = 0; i < k->ntunables; i++) {
        if (s->k[i] < 0 || s->k[i] >= k->tunables[i].nvalues)
            return cut_err_set(e, "tunable %s: value index %d outside its %d values", k->tunables[i].name, s->k[i],
                               k->tunables[i].nvalues);
        vals[i] = k->tunables[i].values[s->k[i]];
    }
    return 0;
}

int cut_kspec_sched_from_values(const cut_kspec *k, const long long *vals, cut_sched *s, cut_err *e)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < k->ntunables; i++) {
        int at = -1;
        for (int j = 0; j < k->tunables[i].nvalues && at < 0; j++)
            if (k->tunables[i].values[j] == vals[i])
                at = j;
        if (at < 0)
            return cut_err_set(e, "tunable %s: %lld is not one of its values", k->tunables[i].name, vals[i]);
        s->k[i] = at;
    }
    return 0;
}

static int ks_nknobs(const cut_space *sp, int tpl) { return tpl == 0 ? spec_of(sp)->ntunables : 0; }

static int ks_applies(const cut_space *sp, int tpl)
{
    (void)sp;
    return tpl == 0;
}

static int ks_check(const cut_space *sp, const cut_sched *s, cut_err *e)
{
    const cut_kspec *k = spec_of(sp);
    long long vals[CUT_KS_MAX_VARS];
    cut_ks_launch l;
    char why[256];
    if (cut_kspec_sched_values(k, s, vals, e) != 0 || cut_kspec_resolve(k, vals, &l, e) != 0)
        return -1;
    if (!cut_kspec_allows(k, vals, why, sizeof why))
        return cut_err_set(e, "%s", why);
    if ((long long)l.block[0] * l.block[1] * l.block[2] > sp->dev.max_threads_per_block)
        return cut_err_set(e, "%u x %u x %u threads per block, more than the device's %d", l.block[0], l.block[1],
                           l.block[2], sp->dev.max_threads_per_block);
    return 0;
}

static int ks_sample_valid(const cut_space *sp, int tpl, cut_rng *r, cut_sched *out, int tries)
{
    const cut_kspec *k = spec_of(sp);
    for (int t = 0; t < tries; t++) {
        memset(out, 0, sizeof *out);
        out->tpl = tpl;
        for (int i = 0; i < k->ntunables; i++)
            out->k[i] = (int)cut_rng_below(r, (uint32_t)k->tunables[i].nvalues);
        if (ks_check(sp, out, NULL) == 0)
            return 0;
    }
    return -1;
}

/* One tunable one step up or down its list (the lists are the user's order: neighbours are the nearest choices). */
static void ks_mutate(const cut_space *sp, cut_rng *r, cut_sched *s)
{
    const cut_kspec *k = spec_of(sp);
    if (k->ntunables == 0)
        return;
    int i = (int)cut_rng_below(r, (uint32_t)k->ntunables), n = k->tunables[i].nvalues;
    if (n < 2)
        return;
    int step = cut_rng_next(r) & 1 ? 1 : -1, v = s->k[i] + step;
    s->k[i] = v < 0 || v >= n ? s->k[i] - step : v;
}

static float lg(double x) { return x > 0 ? (float)log2(x) : 0.0f; }

/* [0] the template's one-hot, [1 + i] log2 of tunable i's value, then log2 of threads per block, blocks, dynamic
 * shared memory (KiB + 1) and the resolved sizes' total elements. */
static int ks_features(const cut_space *sp, const cut_sched *s, int regs, float *out, int cap)
{
    (void)regs;
    const cut_kspec *k = spec_of(sp);
    long long vals[CUT_KS_MAX_VARS];
    cut_ks_launch l;
    if (cap < CUT_FEAT_LEN || k->ntunables + 5 > CUT_FEAT_LEN || cut_kspec_sched_values(k, s, vals, NULL) != 0 ||
        cut_kspec_resolve(k, vals, &l, NULL) != 0)
        return -1;
    memset(out, 0, sizeof(float) * CUT_FEAT_LEN);
    out[0] = 1.0f;
    for (int i = 0; i < k->ntunables; i++)
        out[1 + i] = lg(fabs((double)vals[i]) + 1.0);
    int f = 1 + k->ntunables;
    out[f++] = lg((double)l.block[0] * l.block[1] * l.block[2]);
    out[f++] = lg((double)l.grid[0] * l.grid[1] * l.grid[2]);
    out[f++] = lg(l.smem / 1024.0 + 1.0);
    return CUT_FEAT_LEN;
}

/* No FLOP count is known for a user kernel: the model learns launches per second (higher is better). */
static double ks_score(const cut_space *sp, double ms)
{
    (void)sp;
    return ms > 0 ? 1000.0 / ms : 0;
}

static long long ks_count(const cut_space *sp)
{
    const cut_kspec *k = spec_of(sp);
    long long n = 1;
    for (int i = 0; i < k->ntunables; i++) {
        if (n > (1LL << 50) / CUT_MAX(k->tunables[i].nvalues, 1))
            return -1; /* past any exhaustive search */
        n *= k->tunables[i].nvalues;
    }
    return n;
}

/* Mixed radix: tunable 0 varies fastest. */
static void ks_nth(const cut_space *sp, long long i, cut_sched *out)
{
    const cut_kspec *k = spec_of(sp);
    memset(out, 0, sizeof *out);
    for (int t = 0; t < k->ntunables; t++) {
        out->k[t] = (int)(i % k->tunables[t].nvalues);
        i /= k->tunables[t].nvalues;
    }
}

static void ks_destroy(cut_space *sp) { free(sp->wl); }

cut_space *cut_kspec_space_new(const cut_kspec *k, const cut_devlimits *d, cut_err *e)
{
    if (k->ntunables > CUT_MAX_KNOBS) {
        cut_err_set(e, "%s has %d tunables; a strategy searches at most %d", k->name, k->ntunables, CUT_MAX_KNOBS);
        return NULL;
    }
    cut_space *sp = cut_xcalloc(1, sizeof *sp);
    kspace *w = cut_xcalloc(1, sizeof *w);
    w->k = k;
    *sp = (cut_space){.op = "kernel",
                      .wl = w,
                      .dev = *d,
                      .ntpl = 1,
                      .nknobs = ks_nknobs,
                      .applies = ks_applies,
                      .sample_valid = ks_sample_valid,
                      .mutate = ks_mutate,
                      .check = ks_check,
                      .features = ks_features,
                      .score = ks_score,
                      .count = ks_count,
                      .nth = ks_nth,
                      .destroy = ks_destroy};
    return sp;
}
