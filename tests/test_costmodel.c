/* Cost model: features (finite, deterministic, occupancy arithmetic), Spearman, the XGBoost model learning a
 * synthetic function of the direct template's knobs, ranking held-out trials of real H200 logs, and a replay
 * experiment: model-guided selection over a case's recorded schedules finds the recorded optimum in fewer trials
 * than random selection — the loop search.c runs, restricted to schedules whose time is on record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/costmodel.h"
#include "cutune/record.h"
#include "strategy/features.h"
#include "ops/conv2d/templates.h"
#include "replay_fixture.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------------------------
 * helpers */

static void shuffle(int *a, int n, cut_rng *r)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)cut_rng_below(r, (uint32_t)i + 1);
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

static cut_costmodel *model_new(void)
{
    cut_err e;
    cut_costmodel *m = cut_costmodel_new(&e);
    if (!m)
        fail_msg("%s", e.msg);
    return m;
}

static void train_ok(cut_costmodel *m)
{
    cut_err e;
    if (cut_costmodel_train(m, &e) != 0)
        fail_msg("%s", e.msg);
    assert_true(cut_costmodel_trained(m));
}

/* Distinct valid schedules of template tpl for c. */
static int sample_distinct_tpl(const cut_conv *c, const cut_devlimits *d, int tpl, uint64_t seed, cut_sched *out,
                               int want)
{
    cut_rng r;
    cut_rng_seed(&r, seed);
    int n = 0;
    for (int tries = 0; n < want && tries < 50 * want; tries++) {
        cut_sched s;
        if (cut_sched_sample_valid(c, d, tpl, &r, &s, 1000) != 0)
            continue;
        int dup = 0;
        for (int i = 0; i < n && !dup; i++)
            dup = cut_sched_equal(&out[i], &s);
        if (!dup)
            out[n++] = s;
    }
    return n;
}

static int sample_distinct(const cut_conv *c, const cut_devlimits *d, uint64_t seed, cut_sched *out, int want)
{
    return sample_distinct_tpl(c, d, 0, seed, out, want);
}

/* ---------------------------------------------------------------------------------------------------------------
 * Spearman */

static void test_spearman(void **state)
{
    (void)state;
    const float a[] = {1, 2, 3, 4, 5};
    const float up[] = {10, 20, 30, 40, 1000};
    const float down[] = {5, 4, 3, 2, 1};
    assert_float_equal(cut_costmodel_spearman(a, up, 5), 1.0, 1e-12);
    assert_float_equal(cut_costmodel_spearman(a, down, 5), -1.0, 1e-12);
    /* ties get average ranks: b ranks (1.5, 1.5, 3, 4) against (1, 2, 3, 4): rho = 0.9486833 */
    const float x[] = {1, 2, 3, 4}, y[] = {7, 7, 8, 9};
    assert_float_equal(cut_costmodel_spearman(x, y, 4), 0.9486832980505138, 1e-9);
    /* one swapped pair of 5: 1 - 6*2/(5*24) = 0.9 */
    const float s[] = {1, 3, 2, 4, 5};
    assert_float_equal(cut_costmodel_spearman(a, s, 5), 0.9, 1e-12);
    const float flat[] = {2, 2, 2, 2, 2};
    assert_float_equal(cut_costmodel_spearman(a, flat, 5), 0.0, 1e-12);
    assert_float_equal(cut_costmodel_spearman(a, a, 1), 0.0, 1e-12);
}

/* ---------------------------------------------------------------------------------------------------------------
 * features */

static int feat_index(const char *name)
{
    for (int i = 0; i < CUT_FEAT_LEN; i++)
        if (strcmp(cut_features_name(i), name) == 0)
            return i;
    fail_msg("no feature named %s", name);
    return -1;
}

/* Finite, deterministic, one-hot right, and the register count only moves what follows from registers. */
static void check_features(const cut_conv *c, const cut_devlimits *d, const cut_sched *s)
{
    float f1[CUT_FEAT_LEN + 4], f2[CUT_FEAT_LEN + 4], f3[CUT_FEAT_LEN];
    memset(f1, 0x7f, sizeof f1);
    memset(f2, 0x3f, sizeof f2);
    assert_int_equal(cut_features_conv(c, s, d, -1, f1, CUT_FEAT_LEN + 4), CUT_FEAT_LEN);
    assert_int_equal(cut_features_conv(c, s, d, -1, f2, CUT_FEAT_LEN), CUT_FEAT_LEN);
    assert_memory_equal(f1, f2, sizeof(float) * CUT_FEAT_LEN);
    int nonzero = 0;
    for (int j = 0; j < CUT_FEAT_LEN; j++) {
        if (!isfinite(f1[j]))
            fail_msg("template %d: feature %d (%s) = %g", s->tpl, j, cut_features_name(j), f1[j]);
        nonzero += f1[j] != 0.0f;
    }
    for (int t = 0; t < CUT_FEAT_NTPL; t++)
        assert_true(f1[t] == (t == s->tpl ? 1.0f : 0.0f));
    assert_true(nonzero > 25); /* derived features, not only the knobs */
    assert_int_equal(cut_features_conv(c, s, d, 40, f3, CUT_FEAT_LEN), CUT_FEAT_LEN);
    assert_float_equal(f3[feat_index("regs")], 40.0, 0.0);
    for (int j = 0; j < CUT_FEAT_LEN; j++)
        if (f3[j] != f1[j]) {
            const char *nm = cut_features_name(j);
            if (strcmp(nm, "regs") && strcmp(nm, "regs_at_launch_bound") && strcmp(nm, "blocks_per_sm") &&
                strcmp(nm, "occupancy") && strcmp(nm, "occupancy_limiter") && strcmp(nm, "waves") &&
                strcmp(nm, "log2_waves") && strcmp(nm, "tail_waste") && strcmp(nm, "log2_active_warps_per_sm"))
                fail_msg("feature %s changed with the register count", nm);
        }
}

static void test_features_finite_deterministic(void **state)
{
    (void)state;
    static const cut_conv shapes[] = {
        {1, 56, 56, 64, 64, 3, 3, 1, 1}, {1, 224, 224, 64, 3, 7, 7, 2, 3}, {1, 14, 14, 256, 256, 3, 3, 1, 1},
        {1, 17, 17, 1024, 512, 3, 3, 1, 1}, {1, 28, 28, 128, 64, 1, 1, 2, 0}, {8, 7, 7, 512, 512, 3, 3, 1, 1},
    };
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    int n = tu_quick() ? 50 : 300;
    cut_sched *ss = malloc(sizeof(cut_sched) * (size_t)n);
    /* every template: the one-hot names it, and it gets more than the generic features */
    for (int tpl = 0; tpl < cut_template_count(); tpl++) {
        for (size_t c = 0; c < CUT_ARRAY_LEN(shapes); c++) {
            if (!cut_template_get(tpl)->applies(&shapes[c]))
                continue; /* e.g. winograd: 3x3 stride 1 only */
            int got = sample_distinct_tpl(&shapes[c], &d, tpl, 11 + c, ss, n);
            assert_true(got > n / 2);
            for (int i = 0; i < got; i++)
                check_features(&shapes[c], &d, &ss[i]);
        }
        printf("  template %s: features of %d schedules x %zu shapes finite and deterministic\n",
               cut_template_get(tpl)->name, n, CUT_ARRAY_LEN(shapes));
    }
    free(ss);
}

static void test_features_values(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    /* occupancy arithmetic on sm_90: 2048 threads, 32 blocks, 64K registers, 228 KiB shared memory per SM */
    assert_int_equal(cut_features_blocks_per_sm(&d, 1024, 32, 0), 2);
    assert_int_equal(cut_features_blocks_per_sm(&d, 64, 32, 0), 32);
    assert_int_equal(cut_features_blocks_per_sm(&d, 256, 255, 0), 1);   /* 8 KiB registers per warp: 8 warps */
    assert_int_equal(cut_features_blocks_per_sm(&d, 256, 128, 0), 2);
    assert_int_equal(cut_features_blocks_per_sm(&d, 128, 32, 48 * 1024), 4); /* (48K + 1K reserved) per block */

    /* A hand-checked schedule on seed-001 case 5: tco=4 toh=4 tow=8, rco=2 roh=2 row=2, rc=8 rkh=3, smem, vec 1 */
    const cut_conv c = {1, 56, 56, 64, 64, 3, 3, 1, 1};
    cut_sched s = {0, {4, 4, 8, 2, 2, 2, 8, 3, 1, 0, 1}};
    cut_err e;
    assert_int_equal(cut_sched_check(&c, &s, &d, &e), 0);
    float f[CUT_FEAT_LEN];
    assert_int_equal(cut_features_conv(&c, &s, &d, 64, f, CUT_FEAT_LEN), CUT_FEAT_LEN);
    assert_float_equal(f[feat_index("log2_threads")], 7.0, 1e-6);            /* 128 threads */
    assert_float_equal(f[feat_index("log2_outputs_per_thread")], 3.0, 1e-6); /* 8 */
    assert_float_equal(f[feat_index("log2_outputs_per_block")], 10.0, 1e-6); /* 8 x 8 x 16 */
    /* grid: ceil(56/16) * ceil(56/8) = 28 tiles x 8 co-blocks = 224 blocks */
    assert_float_equal(f[feat_index("log2_blocks")], log2(224.0), 1e-5);
    /* staged: 8 x 10 x 18 inputs + 8 x 8 x 3 x 3 weights = 2016 floats = 8064 bytes */
    assert_float_equal(f[feat_index("smem_kib")], 8064.0 / 1024.0, 1e-6);
    /* 64 regs x 128 threads -> 8 blocks by registers; by shared memory 233472 / 9088 = 25 -> 8 blocks per SM */
    assert_float_equal(f[feat_index("blocks_per_sm")], 8.0, 1e-6);
    assert_float_equal(f[feat_index("occupancy")], 0.5, 1e-6);
    assert_float_equal(f[feat_index("waves")], 224.0 / (132.0 * 8.0), 1e-5);
    /* intensity: 2 * 1024 outputs * 8 * 3 * 3 FMAs / (4 * 2016 bytes) */
    assert_float_equal(f[feat_index("log2_block_intensity")], log2(2.0 * 1024 * 72 / (4.0 * 2016)), 1e-5);
    /* per thread and step: 2 weights + 4 inputs for 8 FMAs */
    assert_float_equal(f[feat_index("loads_per_fma")], 6.0 / 8.0, 1e-6);
    /* 56 = 3 x 16 + 8 along ow, 56 = 7 x 8 along oh: 56*56 / (64*56) computed outputs */
    assert_float_equal(f[feat_index("tile_efficiency")], 56.0 / 64.0, 1e-6);
    assert_float_equal(f[feat_index("knob6")], 3.0, 1e-6); /* rc = 8 */
    /* shared-memory reads of the first warp: tx 0..7 consecutive, ty 0..3 rows of IWT = 18 floats: banks 0-7,
     * 18-25, 36-43 = 4-11, 54-61 = 22-29: rows 0 and 2 share banks 4-7, a 2-way conflict */
    assert_float_equal(f[feat_index("smem_in_bank_conflict")], 2.0, 1e-6);
    assert_float_equal(f[feat_index("smem_w_bank_conflict")], 1.0, 1e-6); /* one weight address per tz: broadcast */
    /* without staging the first warp reads 4 rows of 8 consecutive floats: 4 (or 5 unaligned) sectors */
    s.k[CUT_D_SMEM] = 0;
    assert_int_equal(cut_features_conv(&c, &s, &d, 64, f, CUT_FEAT_LEN), CUT_FEAT_LEN);
    assert_float_equal(f[feat_index("in_sectors_per_warp")], 4.0, 1e-6);
    assert_float_equal(f[feat_index("smem_kib")], 0.0, 1e-6);
    assert_float_equal(f[feat_index("smem_in_bank_conflict")], 0.0, 1e-6);

    /* unknown template, bad knob, small buffer: -1 */
    cut_sched bad = s;
    bad.tpl = 7;
    assert_int_equal(cut_features_conv(&c, &bad, &d, -1, f, CUT_FEAT_LEN), -1);
    bad = s;
    bad.k[CUT_D_TOW] = 0;
    assert_int_equal(cut_features_conv(&c, &bad, &d, -1, f, CUT_FEAT_LEN), -1);
    assert_int_equal(cut_features_conv(&c, &s, &d, -1, f, CUT_FEAT_LEN - 1), -1);
    assert_string_equal(cut_features_name(0), "onehot_direct");
    assert_string_equal(cut_features_name(CUT_FEAT_LEN), "");
}

/* ---------------------------------------------------------------------------------------------------------------
 * model API */

static void test_model_api(void **state)
{
    (void)state;
    cut_err e;
    cut_costmodel *m = model_new();
    float f[CUT_FEAT_LEN] = {0}, score = 0;
    /* untrained: predict fails, rank keeps the caller's order */
    assert_int_equal(cut_costmodel_predict(m, f, 1, &score), -1);
    assert_non_null(strstr(cut_costmodel_error(m), "not trained"));
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    const cut_conv c = {1, 56, 56, 64, 64, 3, 3, 1, 1};
    cut_sched ss[8];
    assert_int_equal(sample_distinct(&c, &d, 5, ss, 8), 8);
    int order[8];
    assert_int_equal(cut_costmodel_rank(m, &c, &d, ss, 8, order), 1);
    for (int i = 0; i < 8; i++)
        assert_int_equal(order[i], i);
    /* fewer than 2 valid points: training is a no-op */
    assert_int_equal(cut_costmodel_add_sched(m, &c, &d, &ss[0], -1, 100.0, &e), 0);
    assert_int_equal(cut_costmodel_add_sched(m, &c, &d, &ss[1], -1, 0.0, &e), 0);
    assert_int_equal(cut_costmodel_add_sched(m, &c, &d, &ss[2], -1, NAN, &e), 0);
    assert_int_equal(cut_costmodel_count(m), 3);
    assert_int_equal(cut_costmodel_count_valid(m), 1);
    assert_int_equal(cut_costmodel_train(m, &e), 0);
    assert_false(cut_costmodel_trained(m));
    cut_sched bad = ss[3];
    bad.tpl = 9;
    assert_int_equal(cut_costmodel_add_sched(m, &c, &d, &bad, -1, 1.0, &e), -1);
    /* bad parameters: ours at once, XGBoost's at training, with XGBoost's own words */
    assert_int_equal(cut_costmodel_set_param(m, "rounds", "0", &e), -1);
    assert_int_equal(cut_costmodel_set_param(m, "max_depth", "-2", &e), 0);
    assert_int_equal(cut_costmodel_add_sched(m, &c, &d, &ss[3], -1, 200.0, &e), 0);
    e.msg[0] = '\0';
    assert_int_equal(cut_costmodel_train(m, &e), -1);
    assert_non_null(strstr(e.msg, "XGBoost"));
    assert_true(strlen(e.msg) > strlen("XGBoost training: "));
    printf("  XGBoost error surfaced as: %.160s\n", e.msg);
    assert_false(cut_costmodel_trained(m));
    /* fixed, it trains and ranks: order is a permutation */
    assert_int_equal(cut_costmodel_set_param(m, "max_depth", "6", &e), 0);
    train_ok(m);
    assert_int_equal(cut_costmodel_rank(m, &c, &d, ss, 8, order), 0);
    int seen[8] = {0};
    for (int i = 0; i < 8; i++) {
        assert_true(order[i] >= 0 && order[i] < 8);
        seen[order[i]]++;
    }
    for (int i = 0; i < 8; i++)
        assert_int_equal(seen[i], 1);
    cut_costmodel_free(m);
    cut_costmodel_free(NULL);
}

/* ---------------------------------------------------------------------------------------------------------------
 * (a) a synthetic function of the knobs */

/* Smooth, non-linear in the knobs, with interactions: best near 128 threads and 8-16 outputs per thread, staging
 * pays with wide reduction steps, vector stores help a little, no unrolling hurts a little. */
static double synth_log_gflops(const cut_conv *c, const cut_sched *s, cut_rng *noise)
{
    cut_direct_geom g;
    cut_direct_geometry(c, s, &g);
    double t = log2(g.threads), a = log2(g.acc), rc = log2(s->k[CUT_D_RC]);
    double y = 6.0 - 0.25 * (t - 7) * (t - 7) + 0.8 * a - 0.12 * a * a;
    y += 0.4 * s->k[CUT_D_SMEM] * tanh(rc - 2) + 0.15 * log2(s->k[CUT_D_VEC]) - 0.1 * (s->k[CUT_D_UNROLL] == 0);
    return y + 0.1 * cut_rng_normal(noise);
}

static void test_learns_synthetic(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    const cut_conv c = {1, 56, 56, 64, 64, 3, 3, 1, 1};
    int want = 1500, ntrain = 1000;
    cut_sched *ss = malloc(sizeof(cut_sched) * (size_t)want);
    int n = sample_distinct(&c, &d, 2024, ss, want);
    assert_true(n >= 1200);
    cut_rng noise;
    cut_rng_seed(&noise, 99);
    cut_costmodel *m = model_new();
    cut_err e;
    int nt = n - ntrain;
    float *x = malloc(sizeof(float) * CUT_FEAT_LEN * (size_t)nt), *y = malloc(sizeof(float) * (size_t)nt),
          *p = malloc(sizeof(float) * (size_t)nt);
    double *v_all = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++) {
        double v = v_all[i] = synth_log_gflops(&c, &ss[i], &noise);
        if (i < ntrain) {
            assert_int_equal(cut_costmodel_add_sched(m, &c, &d, &ss[i], -1, exp(v), &e), 0);
        } else {
            assert_int_equal(cut_features_conv(&c, &ss[i], &d, -1, x + (size_t)(i - ntrain) * CUT_FEAT_LEN,
                                               CUT_FEAT_LEN), CUT_FEAT_LEN);
            y[i - ntrain] = (float)v;
        }
    }
    double t0 = cut_now_s();
    train_ok(m);
    double dt = cut_now_s() - t0;
    assert_int_equal(cut_costmodel_predict(m, x, nt, p), 0);
    double rho = cut_costmodel_spearman(p, y, nt);
    printf("  synthetic: %d train, %d held out: Spearman %.3f (train %.3f s)\n", ntrain, nt, rho, dt);
    assert_true(rho >= 0.8);
    /* the same data and settings train the same model */
    cut_costmodel *m2 = model_new();
    for (int i = 0; i < ntrain; i++)
        assert_int_equal(cut_costmodel_add_sched(m2, &c, &d, &ss[i], -1, exp(v_all[i]), &e), 0);
    train_ok(m2);
    float *p2 = malloc(sizeof(float) * (size_t)nt);
    assert_int_equal(cut_costmodel_predict(m2, x, nt, p2), 0);
    assert_memory_equal(p, p2, sizeof(float) * (size_t)nt);
    /* failed trials are learned as slow: a region of the space that always fails ranks below the rest */
    cut_costmodel *m3 = model_new();
    int nf = 0, ns = 0;
    double fail_score = 0, ok_score = 0;
    for (int i = 0; i < ntrain; i++) {
        int fails = ss[i].k[CUT_D_VEC] == 4;
        assert_int_equal(cut_costmodel_add_sched(m3, &c, &d, &ss[i], -1, fails ? 0.0 : exp(v_all[i]), &e), 0);
    }
    train_ok(m3);
    assert_int_equal(cut_costmodel_predict(m3, x, nt, p), 0);
    for (int i = 0; i < nt; i++) {
        if (ss[ntrain + i].k[CUT_D_VEC] == 4)
            fail_score += p[i], nf++;
        else
            ok_score += p[i], ns++;
    }
    assert_true(nf > 10 && ns > 10);
    printf("  failures: mean score %.3f vs %.3f for the rest\n", fail_score / nf, ok_score / ns);
    assert_true(fail_score / nf < ok_score / ns - 0.5);
    cut_costmodel_free(m3);
    cut_costmodel_free(m2);
    cut_costmodel_free(m);
    free(v_all);
    free(p2);
    free(p);
    free(y);
    free(x);
    free(ss);
}

/* ---------------------------------------------------------------------------------------------------------------
 * (b) ranking held-out trials of real H200 logs */

/* Measured with this model (XGBoost 1.7.4, 3 splits per case): Spearman 0.918-0.932 on both fixture cases; the
 * seed-001 cases 2-6 give 0.89-0.94 (cases 2 and 4, 68x68x256 and 17x17x1024, the lowest). */
#define REPLAY_MIN_RHO 0.85

static void test_replay_spearman(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    for (size_t f = 0; f < CUT_ARRAY_LEN(fixture_cases); f++) {
        cut_record *r;
        int n;
        load_fixture(fixture_cases[f], &r, &n);
        for (int split = 0; split < 3; split++) {
            cut_rng rng;
            cut_rng_seed(&rng, 300 + (uint64_t)split);
            int *perm = malloc(sizeof(int) * (size_t)n);
            for (int i = 0; i < n; i++)
                perm[i] = i;
            shuffle(perm, n, &rng);
            int ntr = n * 3 / 10, nt = n - ntr;
            cut_costmodel *m = model_new();
            cut_err e;
            for (int i = 0; i < ntr; i++) {
                const cut_record *q = &r[perm[i]];
                assert_int_equal(cut_costmodel_add_sched(m, &q->conv, &d, &q->sched, q->regs, q->gflops, &e), 0);
            }
            double t0 = cut_now_s();
            train_ok(m);
            double dt = cut_now_s() - t0;
            /* held-out points are scored as the search scores candidates: before compiling, registers unknown */
            float *x = malloc(sizeof(float) * CUT_FEAT_LEN * (size_t)nt), *y = malloc(sizeof(float) * (size_t)nt),
                  *p = malloc(sizeof(float) * (size_t)nt);
            for (int i = 0; i < nt; i++) {
                const cut_record *q = &r[perm[ntr + i]];
                assert_int_equal(cut_features_conv(&q->conv, &q->sched, &d, -1, x + (size_t)i * CUT_FEAT_LEN,
                                                   CUT_FEAT_LEN), CUT_FEAT_LEN);
                y[i] = (float)q->gflops;
            }
            assert_int_equal(cut_costmodel_predict(m, x, nt, p), 0);
            double rho = cut_costmodel_spearman(p, y, nt);
            printf("  %.5s split %d: train %d, held out %d: Spearman %.3f (train %.3f s)\n", fixture_cases[f], split,
                   ntr, nt, rho, dt);
            assert_true(rho >= REPLAY_MIN_RHO);
            cut_costmodel_free(m);
            free(p);
            free(y);
            free(x);
            free(perm);
        }
        free(r);
    }
}

/* A prior from another workload (group 1): with 40 own trials of case 1, held-out Spearman on the rest of case 1,
 * without and with case 7's whole log as a prior (and the other way round). These two cases are the most different
 * of seed 001, so the prior brings little; measured: 0.919 alone vs 0.894 with it for case 1, 0.767 vs 0.742 for
 * case 7 (0.851 and 0.662 before the own group was weighted up). The test asserts the weighting's promise: a
 * dissimilar prior costs at most 0.05 of Spearman. */
static double prior_rho(const cut_record *own, int n, const cut_record *other, int nother, int nown, int use_prior)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_costmodel *m = model_new();
    float f[CUT_FEAT_LEN];
    for (int i = 0; use_prior && i < nother; i++) {
        assert_int_equal(cut_features_conv(&other[i].conv, &other[i].sched, &d, other[i].regs, f, CUT_FEAT_LEN),
                         CUT_FEAT_LEN);
        cut_costmodel_add_group(m, f, other[i].gflops, 1);
    }
    cut_err e;
    for (int i = 0; i < nown; i++)
        assert_int_equal(cut_costmodel_add_sched(m, &own[i].conv, &d, &own[i].sched, own[i].regs, own[i].gflops, &e),
                         0);
    train_ok(m);
    int nt = n - nown;
    float *x = malloc(sizeof(float) * CUT_FEAT_LEN * (size_t)nt), *y = malloc(sizeof(float) * (size_t)nt),
          *p = malloc(sizeof(float) * (size_t)nt);
    for (int i = 0; i < nt; i++) {
        const cut_record *r = &own[nown + i];
        assert_int_equal(cut_features_conv(&r->conv, &r->sched, &d, r->regs, x + (size_t)i * CUT_FEAT_LEN,
                                           CUT_FEAT_LEN), CUT_FEAT_LEN);
        y[i] = (float)log(r->gflops);
    }
    assert_int_equal(cut_costmodel_predict(m, x, nt, p), 0);
    double rho = cut_costmodel_spearman(p, y, nt);
    /* top-20 quality: the best true value among the model's 20 best-scored, relative to the true best */
    double tbest = -1e30, pick = -1e30;
    for (int i = 0; i < nt; i++)
        tbest = y[i] > tbest ? y[i] : tbest;
    for (int k = 0; k < 20; k++) {
        int bi = 0;
        for (int i = 1; i < nt; i++)
            if (p[i] > p[bi])
                bi = i;
        pick = y[bi] > pick ? y[bi] : pick;
        p[bi] = -1e30f;
    }
    printf("    top-20 pick: %.3f of the best (prior %d)\n", exp(pick - tbest), use_prior);
    cut_costmodel_free(m);
    free(p);
    free(y);
    free(x);
    return rho;
}

static void test_prior_transfer(void **state)
{
    (void)state;
    cut_record *a, *b;
    int na, nb;
    load_fixture(fixture_cases[0], &a, &na);
    load_fixture(fixture_cases[1], &b, &nb);
    const int nown = 40;
    double alone = prior_rho(a, na, b, nb, nown, 0), with = prior_rho(a, na, b, nb, nown, 1);
    double alone7 = prior_rho(b, nb, a, na, nown, 0), with7 = prior_rho(b, nb, a, na, nown, 1);
    printf("  %d own trials: case 1 Spearman %.3f alone, %.3f with case 7 as prior; case 7 %.3f alone, %.3f with "
           "case 1\n", nown, alone, with, alone7, with7);
    assert_true(with > alone - 0.05 && with7 > alone7 - 0.05);
    assert_true(with > 0.7 && with7 > 0.7);
    free(a);
    free(b);
}

/* ---------------------------------------------------------------------------------------------------------------
 * (d) replay: guided vs random selection over the recorded schedules */

#define ROUND_MODEL 16  /* best by the model per round */
#define ROUND_RANDOM 4  /* random per round (epsilon = 0.2) */
#define NEAR_BEST 0.98  /* "found": within 2% of the recorded optimum's GFLOP/s */

/* Trials until a schedule within 2% of the recorded optimum is measured, choosing each round of 20 from the
 * unmeasured recorded schedules: the first round at random, then the model's top 16 + 4 random, retraining on
 * everything measured after each round. "Measuring" looks the schedule's time up in the log. */
static int guided_trials(const cut_record *r, int n, double target, uint64_t seed, double *train_s, int *trainings)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng rng;
    cut_rng_seed(&rng, seed);
    cut_costmodel *m = model_new();
    cut_err e;
    char *measured = calloc((size_t)n, 1);
    int *pool = malloc(sizeof(int) * (size_t)n), *order = malloc(sizeof(int) * (size_t)n);
    cut_sched *cand = malloc(sizeof(cut_sched) * (size_t)n);
    int done = 0, found = 0;
    while (!found && done < n) {
        int np = 0;
        for (int i = 0; i < n; i++)
            if (!measured[i])
                pool[np++] = i;
        int pick[ROUND_MODEL + ROUND_RANDOM], nk = 0;
        shuffle(pool, np, &rng);
        if (!cut_costmodel_trained(m)) {
            for (int i = 0; i < np && nk < ROUND_MODEL + ROUND_RANDOM; i++)
                pick[nk++] = pool[i];
        } else {
            for (int i = 0; i < np; i++)
                cand[i] = r[pool[i]].sched;
            assert_int_equal(cut_costmodel_rank(m, &r[0].conv, &d, cand, np, order), 0);
            for (int i = 0; i < np && nk < ROUND_MODEL; i++)
                pick[nk++] = pool[order[i]];
            /* epsilon share: uniformly among those the model did not pick */
            for (int i = ROUND_MODEL; i < np && nk < ROUND_MODEL + ROUND_RANDOM; i++) {
                int j = i + (int)cut_rng_below(&rng, (uint32_t)(np - i));
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
                pick[nk++] = pool[order[i]];
            }
        }
        for (int i = 0; i < nk; i++) {
            const cut_record *q = &r[pick[i]];
            measured[pick[i]] = 1;
            done++;
            if (!found && q->gflops >= target)
                found = done;
            assert_int_equal(cut_costmodel_add_sched(m, &q->conv, &d, &q->sched, q->regs, q->gflops, &e), 0);
        }
        double t0 = cut_now_s();
        train_ok(m);
        *train_s += cut_now_s() - t0;
        (*trainings)++;
    }
    cut_costmodel_free(m);
    free(cand);
    free(order);
    free(pool);
    free(measured);
    return found;
}

static int random_trials(const cut_record *r, int n, double target, uint64_t seed)
{
    cut_rng rng;
    cut_rng_seed(&rng, seed);
    int *perm = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        perm[i] = i;
    shuffle(perm, n, &rng);
    int t = n;
    for (int i = 0; i < n; i++)
        if (r[perm[i]].gflops >= target) {
            t = i + 1;
            break;
        }
    free(perm);
    return t;
}

static void test_replay_guided_beats_random(void **state)
{
    (void)state;
    const int seeds = 5;
    for (size_t f = 0; f < CUT_ARRAY_LEN(fixture_cases); f++) {
        cut_record *r;
        int n;
        load_fixture(fixture_cases[f], &r, &n);
        double best = 0;
        for (int i = 0; i < n; i++)
            if (r[i].status == CUT_ST_OK && r[i].gflops > best)
                best = r[i].gflops;
        double target = NEAR_BEST * best;
        int hits = 0;
        for (int i = 0; i < n; i++)
            hits += r[i].gflops >= target;
        double sum_g = 0, sum_r = 0, train_s = 0;
        int trainings = 0;
        printf("  %.5s: %d recorded schedules, best %.0f GFLOP/s, %d within 2%%\n", fixture_cases[f], n, best, hits);
        for (int s = 0; s < seeds; s++) {
            int g = guided_trials(r, n, target, 1000 + (uint64_t)s, &train_s, &trainings);
            int rnd = random_trials(r, n, target, 1000 + (uint64_t)s);
            printf("    seed %d: guided %4d trials, random %4d\n", s, g, rnd);
            assert_true(g > 0);
            sum_g += g;
            sum_r += rnd;
        }
        /* random selection's expectation without replacement: (n + 1) / (hits + 1) */
        double expect_r = (n + 1.0) / (hits + 1.0);
        printf("    mean: guided %.1f, random %.1f (expected %.1f); %d trainings, %.3f s each\n", sum_g / seeds,
               sum_r / seeds, expect_r, trainings, train_s / trainings);
        assert_true(sum_g < sum_r);
        assert_true(sum_g / seeds < 0.5 * expect_r);
        free(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spearman),
        cmocka_unit_test(test_features_finite_deterministic),
        cmocka_unit_test(test_features_values),
        cmocka_unit_test(test_model_api),
        cmocka_unit_test(test_learns_synthetic),
        cmocka_unit_test(test_replay_spearman),
        cmocka_unit_test(test_replay_guided_beats_random),
        cmocka_unit_test(test_prior_transfer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
