/* Winograd template: the transform matrices (exact 1-D and 2-D identities), where it applies, sampling and the
 * validity check, geometry and launch configuration, features, hand-picked schedules of both F(2x2) and F(4x4)
 * under emulation on shapes with tails, the numeric error against the double reference, and NVRTC registers and
 * spills of the large-tile schedules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/codegen.h"
#include "cutune/compile.h"
#include "cutune/emu.h"
#include "cutune/measure.h"
#include "cutune/space.h"
#include "cutune/op.h"
#include "strategy/features.h"
#include "ops/conv2d/templates.h"
#include "emu_check.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* seed 001 cases */
static const cut_conv seed001[] = {
    {1, 272, 272, 64, 32, 3, 3, 1, 1}, {1, 68, 68, 256, 128, 3, 3, 1, 1}, {1, 34, 34, 512, 256, 3, 3, 1, 1},
    {1, 17, 17, 1024, 512, 3, 3, 1, 1}, {1, 56, 56, 64, 64, 3, 3, 1, 1},  {1, 28, 28, 128, 128, 3, 3, 1, 1},
    {1, 14, 14, 256, 256, 3, 3, 1, 1},
};

static int tpl_wino(void)
{
    int t = cut_template_find("winograd");
    assert_true(t >= 0);
    return t;
}

/* m bco bt bc rco rt rxi pad unroll pf minb */
static cut_sched mk(int m, int bco, int bt, int bc, int rco, int rt, int rxi, int pad, int unroll, int pf, int minb)
{
    cut_sched s;
    memset(&s, 0, sizeof s);
    s.tpl = tpl_wino();
    int v[CUT_W_NKNOBS] = {m, bco, bt, bc, rco, rt, rxi, pad, unroll, pf, minb};
    memcpy(s.k, v, sizeof v);
    return s;
}

static double urand(cut_rng *r) { return cut_rng_double(r) * 2.0 - 1.0; }

/* y = A^T [(G g) .* (B^T d)] against the correlation y[i] = sum_k d[i+k] g[k], in double, on random data; and
 * the 2-D form A^T [(G g G^T) .* (B^T d B)] A against the 2-D correlation. */
static void test_matrices_identity(void **state)
{
    (void)state;
    cut_rng r;
    cut_rng_seed(&r, 17);
    assert_null(cut_winograd_mats(3));
    for (int m = 2; m <= 4; m += 2) {
        const cut_wino_mats *mt = cut_winograd_mats(m);
        assert_non_null(mt);
        const int al = m + 2;
        assert_int_equal(mt->m, m);
        assert_int_equal(mt->alpha, al);
        assert_true(mt->bt.rows == al && mt->bt.cols == al && mt->g.rows == al && mt->g.cols == 3 &&
                    mt->at.rows == m && mt->at.cols == al);
        double worst = 0;
        for (int it = 0; it < 200; it++) {
            double d[6][6], g[3][3], v[6][6], u[6][6], mm[6][6];
            for (int a = 0; a < al; a++)
                for (int b = 0; b < al; b++)
                    d[a][b] = urand(&r);
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++)
                    g[a][b] = urand(&r);
            /* 1-D on row 0 of d and g */
            for (int i = 0; i < m; i++) {
                double y = 0, want = 0;
                for (int x = 0; x < al; x++) {
                    double gx = 0, dx = 0;
                    for (int k = 0; k < 3; k++)
                        gx += cut_wino_entry(&mt->g, x, k) * g[0][k];
                    for (int k = 0; k < al; k++)
                        dx += cut_wino_entry(&mt->bt, x, k) * d[0][k];
                    y += cut_wino_entry(&mt->at, i, x) * gx * dx;
                }
                for (int k = 0; k < 3; k++)
                    want += d[0][i + k] * g[0][k];
                worst = fmax(worst, fabs(y - want));
            }
            /* 2-D: V = B^T d B, U = G g G^T, Y = A^T (U .* V) A */
            for (int a = 0; a < al; a++)
                for (int b = 0; b < al; b++) {
                    double sv = 0, su = 0;
                    for (int i = 0; i < al; i++)
                        for (int j = 0; j < al; j++)
                            sv += cut_wino_entry(&mt->bt, a, i) * d[i][j] * cut_wino_entry(&mt->bt, b, j);
                    for (int i = 0; i < 3; i++)
                        for (int j = 0; j < 3; j++)
                            su += cut_wino_entry(&mt->g, a, i) * g[i][j] * cut_wino_entry(&mt->g, b, j);
                    v[a][b] = sv;
                    u[a][b] = su;
                    mm[a][b] = su * sv;
                }
            for (int p = 0; p < m; p++)
                for (int q = 0; q < m; q++) {
                    double y = 0, want = 0;
                    for (int a = 0; a < al; a++)
                        for (int b = 0; b < al; b++)
                            y += cut_wino_entry(&mt->at, p, a) * mm[a][b] * cut_wino_entry(&mt->at, q, b);
                    for (int i = 0; i < 3; i++)
                        for (int j = 0; j < 3; j++)
                            want += d[p + i][q + j] * g[i][j];
                    worst = fmax(worst, fabs(y - want));
                }
            (void)u;
            (void)v;
        }
        printf("  F(%dx%d, 3x3): worst identity error %.2g over 200 random patches\n", m, m, worst);
        assert_true(worst < 1e-12);
    }
    /* B^T and A^T are dyadic (exact in fp32): only G rounds */
    for (int m = 2; m <= 4; m += 2) {
        const cut_wino_mats *mt = cut_winograd_mats(m);
        for (int i = 0; i < mt->bt.rows; i++)
            assert_int_equal(mt->bt.den[i] & (mt->bt.den[i] - 1), 0);
        for (int i = 0; i < mt->at.rows; i++)
            assert_int_equal(mt->at.den[i] & (mt->at.den[i] - 1), 0);
    }
}

static void test_applies(void **state)
{
    (void)state;
    const cut_template *t = cut_template_get(tpl_wino());
    assert_string_equal(t->name, "winograd");
    assert_int_equal(cut_template_find("winograd"), cut_template_find("igemm") + 1); /* registered after igemm */
    const cut_conv yes[] = {{1, 8, 8, 4, 4, 3, 3, 1, 0}, {2, 9, 7, 4, 4, 3, 3, 1, 1}, {1, 5, 5, 4, 4, 3, 3, 1, 2}};
    const cut_conv no[] = {{1, 8, 8, 4, 4, 3, 3, 2, 1}, {1, 8, 8, 4, 4, 1, 1, 1, 0}, {1, 8, 8, 4, 4, 5, 5, 1, 2},
                           {1, 8, 8, 4, 4, 3, 1, 1, 0}, {1, 8, 8, 4, 4, 1, 3, 1, 0}, {1, 8, 8, 4, 4, 7, 7, 1, 3}};
    for (size_t i = 0; i < CUT_ARRAY_LEN(yes); i++)
        assert_true(t->applies(&yes[i]));
    for (size_t i = 0; i < CUT_ARRAY_LEN(no); i++) {
        assert_false(t->applies(&no[i]));
        cut_devlimits d;
        cut_devlimits_sm90(&d);
        cut_rng r;
        cut_rng_seed(&r, 1);
        cut_sched s;
        assert_int_equal(cut_sched_sample_valid(&no[i], &d, tpl_wino(), &r, &s, 10), -1);
        s = mk(2, 16, 16, 4, 4, 4, 1, 0, 4, 0, 0);
        cut_err e;
        assert_int_equal(cut_sched_check(&no[i], &s, &d, &e), -1);
        assert_non_null(strstr(e.msg, "does not apply"));
    }
}

/* Valid draws on the seed-001 layers and on tiny shapes: geometry in range, both m drawn, mutation stays. */
static void test_sampled_are_valid_and_sized(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 5);
    int tpl = tpl_wino();
    const cut_conv tiny[] = {{1, 8, 8, 8, 4, 3, 3, 1, 1}, {1, 6, 10, 5, 7, 3, 3, 1, 0}, {1, 3, 3, 1, 1, 3, 3, 1, 1}};
    for (size_t s = 0; s < CUT_ARRAY_LEN(seed001) + CUT_ARRAY_LEN(tiny); s++) {
        const cut_conv *c = s < CUT_ARRAY_LEN(seed001) ? &seed001[s] : &tiny[s - CUT_ARRAY_LEN(seed001)];
        int m4 = 0, valid_draws = 0, pf = 0, mutants_valid = 0;
        for (int i = 0; i < 300; i++) {
            cut_sched sc;
            assert_int_equal(cut_sched_sample_valid(c, &d, tpl, &r, &sc, 2000), 0);
            cut_err e;
            assert_int_equal(cut_sched_check(c, &sc, &d, &e), 0);
            cut_wino_geom g;
            cut_winograd_geometry(c, &sc, &g);
            assert_true(g.threads >= 32 && g.threads <= 1024 && g.threads % 32 == 0);
            assert_true(g.smem_bytes <= d.max_smem_per_block);
            assert_true(g.epi_floats * 4 <= g.smem_bytes && g.stage_floats * 4 <= g.smem_bytes);
            assert_true((long)g.grid[0] * sc.k[CUT_W_BT] >= g.tiles);
            assert_true((long)g.grid[1] * sc.k[CUT_W_BCO] >= c->co);
            assert_true(g.tiles_h * g.m >= g.oh && g.tiles_w * g.m >= g.ow);
            assert_true(sc.k[CUT_W_UNROLL] <= sc.k[CUT_W_BC]);
            assert_true(g.passes >= 1 && g.epj % g.vt == 0 && sc.k[CUT_W_RT] % g.epj == 0);
            assert_int_equal(g.a2 % sc.k[CUT_W_RXI], 0);
            m4 += sc.k[CUT_W_M] == 4;
            pf += sc.k[CUT_W_PF];
            cut_sched m = sc;
            cut_template_get(tpl)->mutate(c, &d, &r, &m);
            assert_int_equal(m.tpl, tpl);
            mutants_valid += cut_sched_check(c, &m, &d, NULL) == 0;
            /* a raw draw is valid most of the time (sample_valid does not need many tries) */
            cut_template_get(tpl)->sample(c, &d, &r, &m);
            m.tpl = tpl;
            valid_draws += cut_sched_check(c, &m, &d, NULL) == 0;
        }
        printf("  %d x %d x %d, CO %d, CI %d: %d of 300 with m=4, %d with pf, raw draws valid %d%%, mutants %d%%\n",
               c->n, c->h, c->w, c->co, c->ci, m4, pf, valid_draws / 3, mutants_valid / 3);
        assert_true(m4 > 60 && m4 < 240);
        assert_true(valid_draws > 60);
        assert_true(mutants_valid > 60);
    }
}

static void test_check_rejects(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    const cut_conv *c = &seed001[2]; /* 34x34, CO 512, CI 256 */
    cut_err e;
    cut_sched s = mk(4, 32, 16, 4, 8, 8, 1, 4, 4, 0, 1);
    assert_int_equal(cut_sched_check(c, &s, &d, &e), 0);
    cut_sched t = s;
    t.k[CUT_W_M] = 3;
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "m=3"));
    t = s;
    t.k[CUT_W_BCO] = 24;
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "bco=24"));
    t = s;
    t.k[CUT_W_RCO] = 4; /* 36 x 8 x 8 = 2304 threads */
    t.k[CUT_W_RT] = 2;
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "threads"));
    t = s;
    t.k[CUT_W_RXI] = 4; /* 9 x 4 x 2 = 72 threads: two and a quarter warps */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "whole warps"));
    t = s;
    t.k[CUT_W_RCO] = 4; /* 36 x 8 x 2 = 576 threads, 32 accumulators: about 104 registers, 96 available */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "registers"));
    t = s;
    t.k[CUT_W_RT] = 32; /* not a knob value */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    t = s;
    t.k[CUT_W_BT] = 4; /* register tile 8 x 8 in a block tile of 4 tiles */
    t.k[CUT_W_RT] = 8;
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "register tile"));
    t = s;
    t.k[CUT_W_UNROLL] = 8; /* > bc */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "unroll"));
    t = s;
    t.k[CUT_W_BC] = 8; /* 36 x 8 x (36 + 20) floats = 64.5 KiB */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "shared memory"));
    t = s;
    t.k[CUT_W_MINB] = 2; /* 2 x 288 threads: 96 registers each, far below the ~144 of an 8x8 tile */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "registers"));
    t = s;
    t.k[CUT_W_M] = 2;
    t.k[CUT_W_RXI] = 3; /* 3 does not divide 16 */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "rxi=3"));
    t = s;
    t.k[CUT_W_RXI] = 3; /* 12 x 8 x 4 = 384 threads of 3 x 4 x 4 accumulators: fine for m = 4 */
    t.k[CUT_W_RCO] = t.k[CUT_W_RT] = 4;
    assert_int_equal(cut_sched_check(c, &t, &d, &e), 0);
    t = s;
    t.k[CUT_W_PF] = 2;
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    /* the block tile may overhang by at most the next power of two */
    const cut_conv small_co = {1, 34, 34, 8, 256, 3, 3, 1, 1};
    assert_int_equal(cut_sched_check(&small_co, &s, &d, &e), -1);
    assert_non_null(strstr(e.msg, "far exceeds"));
    /* BC = 16 with few threads: more than 4 transform items per thread and chunk */
    t = mk(2, 8, 8, 16, 8, 8, 4, 0, 1, 0, 0); /* 4 x 1 x 1 threads */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    t = mk(2, 32, 16, 16, 8, 4, 2, 0, 1, 0, 0); /* 8 x 4 x 4 = 128 threads, (256 + 512) items: 6 per thread */
    assert_int_equal(cut_sched_check(c, &t, &d, &e), -1);
    assert_non_null(strstr(e.msg, "transform items"));
}

static void test_geometry(void **state)
{
    (void)state;
    /* 34x34 -> 9x9 tiles of 4 = 81; 288 threads (36 x 4 x 2), 64 accumulators; staging 36 x 4 x (36 + 20) floats */
    cut_sched s = mk(4, 32, 16, 4, 8, 8, 1, 4, 4, 0, 1);
    cut_wino_geom g;
    cut_winograd_geometry(&seed001[2], &s, &g);
    assert_int_equal(g.m, 4);
    assert_int_equal(g.alpha, 6);
    assert_int_equal(g.a2, 36);
    assert_int_equal(g.tiles_h, 9);
    assert_int_equal(g.tiles_w, 9);
    assert_int_equal(g.tiles, 81);
    assert_int_equal(g.tco, 4);
    assert_int_equal(g.tt, 2);
    assert_int_equal(g.xg, 36);
    assert_int_equal(g.threads, 288);
    assert_int_equal(g.acc, 64);
    assert_int_equal(g.vco, 4);
    assert_int_equal(g.vt, 4);
    assert_int_equal(g.nin, 64);
    assert_int_equal(g.nfi, 128);
    assert_int_equal(g.ipt, 1);
    assert_int_equal(g.chunks, 64);
    assert_int_equal(g.stage_floats, 36 * 4 * 36 + 36 * 4 * 20);
    /* the epilogue: 36 x (4 x EPI) x (2 x EPJ) floats <= 8064: EPI x EPJ <= 28 -> 2 x 8 (4 x 4 ties, with shorter
     * runs of tiles) */
    assert_int_equal(g.epi, 2);
    assert_int_equal(g.epj, 8);
    assert_int_equal(g.passes, 4);
    assert_int_equal(g.smem_bytes, 4 * g.stage_floats);
    assert_int_equal(g.grid[0], 6);  /* ceil(81 / 16) */
    assert_int_equal(g.grid[1], 16); /* 512 / 32 */
    assert_int_equal(g.grid[2], 1);
    assert_int_equal(g.unrolled_fmas, 4 * 64);
    /* F(2x2) on 272x272: 136 x 136 tiles; 16 x 8 x 4 = 512 threads */
    s = mk(2, 64, 32, 8, 8, 8, 1, 0, 8, 0, 0);
    cut_winograd_geometry(&seed001[0], &s, &g);
    assert_int_equal(g.tiles, 136 * 136);
    assert_int_equal(g.threads, 512);
    assert_int_equal(g.smem_bytes, 16 * 8 * 96 * 4); /* exactly 48 KiB */
    assert_int_equal(g.ipt, 2);                       /* 256 + 512 items over 512 threads */
    assert_int_equal(g.grid[0], 136 * 136 / 32);
    assert_int_equal(g.grid[1], 1);
    /* tails: 17x17 with m = 4 -> 5 x 5 tiles, the last row and column of tiles hold 1 output each */
    s = mk(4, 32, 16, 4, 8, 8, 1, 4, 4, 0, 1);
    cut_winograd_geometry(&seed001[3], &s, &g);
    assert_int_equal(g.tiles, 25);
    assert_int_equal(g.grid[0], 2);
}

static void test_codegen_launch_and_json(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    const cut_conv *c = &seed001[3]; /* 17x17, CO 1024, CI 512 */
    cut_sched s = mk(4, 32, 16, 4, 8, 8, 1, 4, 4, 1, 1);
    cut_err e;
    if (cut_sched_check(c, &s, &d, &e) != 0)
        fail_msg("%s", e.msg);
    cut_kernel_src k;
    assert_int_equal(cut_codegen_conv(c, &s, &k, &e), 0);
    assert_non_null(strstr(k.src, "// schedule: winograd m=4 bco=32 bt=16 bc=4 rco=8 rt=8 rxi=1 pad=4 unroll=4 pf=1"));
    assert_non_null(strstr(k.src, "cut_conv2d("));
    assert_non_null(strstr(k.src, "wino_in(const float *d, float *v)"));
    assert_non_null(strstr(k.src, "__launch_bounds__(NT, 1)"));
    assert_null(strstr(k.src, "asm"));
    assert_null(strstr(k.src, "extern __shared__"));
    assert_string_equal(k.entry, "cut_conv2d");
    assert_int_equal(k.block[0], 288);
    assert_int_equal(k.block[1], 1);
    assert_int_equal(k.grid[0], 2);  /* ceil(25 / 16) */
    assert_int_equal(k.grid[1], 32); /* 1024 / 32 */
    assert_int_equal(k.grid[2], 1);
    assert_int_equal(k.smem_dynamic, 0);
    assert_int_equal(k.uses_inline_ptx, 0);
    assert_true(k.tol_scale == cut_tolerance_scale_winograd(4) && k.tol_scale > 1.0);
    cut_kernel_src_free(&k);
    /* F(2x2) keeps the plain tolerance; so do the other templates */
    s = mk(2, 32, 16, 4, 8, 8, 1, 4, 4, 1, 1);
    assert_int_equal(cut_codegen_conv(c, &s, &k, &e), 0);
    assert_true(k.tol_scale <= 1.0);
    cut_kernel_src_free(&k);
    cut_sched dir = {0, {4, 4, 8, 2, 2, 2, 8, 3, 1, 0, 1}};
    assert_int_equal(cut_codegen_conv(c, &dir, &k, &e), 0);
    assert_true(k.tol_scale <= 1.0);
    cut_kernel_src_free(&k);
    double a1, r1, a4, r4;
    cut_conv_tolerance_scaled(c, 1.0, &a1, &r1);
    cut_conv_tolerance_scaled(c, 4.0, &a4, &r4);
    assert_true(a4 == 4.0 * a1 && r4 == 4.0 * r1);
    cut_conv_tolerance_scaled(c, 0.0, &a4, &r4);
    assert_true(a4 == a1 && r4 == r1);
    cut_conv_tolerance_scaled(c, NAN, &a4, &r4);
    assert_true(a4 == a1 && r4 == r1);

    char buf[512];
    assert_true(cut_tpl_sched_json(CUT_OP_CONV2D, &s, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "\"tpl\":\"winograd\""));
    cJSON *o = cJSON_Parse(buf);
    cut_sched back;
    assert_int_equal(cut_sched_from_cjson(o, &back, &e), 0);
    cJSON_Delete(o);
    assert_true(cut_sched_equal(&s, &back));
}

static int feat_index(const char *name)
{
    for (int i = 0; i < CUT_FEAT_LEN; i++)
        if (strcmp(cut_features_name(i), name) == 0)
            return i;
    fail_msg("no feature named %s", name);
    return -1;
}

static void test_features(void **state)
{
    (void)state;
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    const cut_conv *c = &seed001[2];
    float f2[CUT_FEAT_LEN], f4[CUT_FEAT_LEN];
    cut_sched s2 = mk(2, 32, 32, 8, 8, 8, 1, 4, 8, 0, 1), s4 = mk(4, 32, 16, 4, 8, 8, 1, 4, 4, 0, 1);
    assert_int_equal(cut_features_conv(c, &s2, &d, -1, f2, CUT_FEAT_LEN), CUT_FEAT_LEN);
    assert_int_equal(cut_features_conv(c, &s4, &d, 150, f4, CUT_FEAT_LEN), CUT_FEAT_LEN);
    assert_float_equal(f2[tpl_wino()], 1.0, 0.0);
    assert_float_equal(f2[feat_index("mul_saving")], 2.25, 1e-6);
    assert_float_equal(f4[feat_index("mul_saving")], 4.0, 1e-6);
    /* 288 threads, 64 accumulators, 32 x 16 tiles of 16 outputs per block */
    assert_float_equal(f4[feat_index("log2_threads")], log2(288.0), 1e-5);
    assert_float_equal(f4[feat_index("log2_outputs_per_thread")], 6.0, 1e-6);
    assert_float_equal(f4[feat_index("log2_outputs_per_block")], log2(32.0 * 16 * 16), 1e-5);
    /* the real work: 36 GEMMs of 32 x 16 over 256 channels per block */
    assert_float_equal(f4[feat_index("log2_fma_per_block")], log2(36.0 * 32 * 16 * 256), 1e-5);
    assert_float_equal(f4[feat_index("log2_blocks")], log2(6.0 * 16), 1e-5);
    assert_float_equal(f4[feat_index("loads_per_fma")], 16.0 / 64.0, 1e-6);
    /* 34x34 in 9x9 tiles of 4: 34*34 / (36*36) of the computed outputs are real */
    assert_float_equal(f4[feat_index("tile_efficiency")], 34.0 * 34.0 / (36.0 * 36.0 * 96.0 / 81.0), 1e-5);
    assert_float_equal(f4[feat_index("regs")], 150.0, 0.0);
    assert_true(f4[feat_index("transform_ops_per_fma")] > f2[feat_index("transform_ops_per_fma")] * 0.5);
    assert_true(f4[feat_index("transform_ops_per_fma")] > 0.1 && f4[feat_index("transform_ops_per_fma")] < 2.0);
    for (int i = 0; i < CUT_FEAT_LEN; i++)
        assert_true(isfinite(f2[i]) && isfinite(f4[i]));
    /* the other templates: no Winograd saving */
    cut_sched dir = {0, {4, 4, 8, 2, 2, 2, 8, 3, 1, 0, 1}};
    assert_int_equal(cut_features_conv(c, &dir, &d, -1, f2, CUT_FEAT_LEN), CUT_FEAT_LEN);
    assert_float_equal(f2[feat_index("mul_saving")], 1.0, 0.0);
    assert_float_equal(f2[feat_index("transform_ops_per_fma")], 0.0, 0.0);
    /* features of unchecked schedules stay finite; knobs the geometry divides by at 0 are refused */
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 3);
    for (int i = 0; i < 500; i++) {
        cut_sched s;
        cut_template_get(tpl_wino())->sample(&seed001[i % 7], &d, &r, &s);
        s.tpl = tpl_wino();
        cut_template_get(tpl_wino())->mutate(&seed001[i % 7], &d, &r, &s);
        assert_int_equal(cut_features_conv(&seed001[i % 7], &s, &d, -1, f2, CUT_FEAT_LEN), CUT_FEAT_LEN);
        for (int j = 0; j < CUT_FEAT_LEN; j++)
            assert_true(isfinite(f2[j]));
    }
    cut_sched z = s4;
    z.k[CUT_W_BT] = 0;
    assert_int_equal(cut_features_conv(c, &z, &d, -1, f2, CUT_FEAT_LEN), -1);
}

/* Hand-picked schedules of both algorithms on shapes with tails everywhere: OH, OW not multiples of m, CO and CI
 * not multiples of the block tile and chunk, batch 2 and 3, padding 0, 1 and 2, both staging paths, several
 * epilogue passes, RXI 1..4, vector and scalar output rows. */
static void test_hand_picked_emulated(void **state)
{
    (void)state;
    cut_err e;
    if (cut_nvrtc_version(&e) < 0)
        skip();
    const cut_conv a = {2, 11, 9, 20, 7, 3, 3, 1, 1};  /* OH 11, OW 9 */
    const cut_conv b = {2, 10, 13, 24, 5, 3, 3, 1, 0}; /* OH 8, OW 11, no padding */
    const cut_conv c = {1, 7, 7, 12, 33, 3, 3, 1, 1};  /* CI 33: a one-channel tail chunk */
    const cut_conv v = {3, 6, 6, 8, 16, 3, 3, 1, 2};   /* OH = OW = 8: whole tiles, vector rows; padding 2 */
    const hand hs[] = {
        {a, mk(2, 16, 16, 4, 4, 4, 1, 0, 4, 0, 0)},
        {a, mk(2, 8, 32, 4, 2, 8, 2, 4, 2, 1, 1)},
        {a, mk(4, 16, 8, 4, 4, 4, 1, 0, 2, 1, 0)},
        {a, mk(4, 32, 8, 2, 4, 4, 3, 4, 1, 0, 2)},
        {b, mk(4, 16, 16, 2, 4, 8, 1, 4, 2, 0, 1)},
        {b, mk(2, 32, 16, 8, 4, 4, 4, 0, 8, 1, 0)},
        {b, mk(2, 32, 32, 1, 8, 8, 1, 0, 1, 0, 0)}, /* 16 epilogue passes */
        {c, mk(2, 16, 8, 8, 8, 1, 1, 4, 4, 1, 1)},
        {c, mk(4, 8, 4, 16, 1, 4, 1, 0, 16, 0, 0)},
        {c, mk(4, 16, 4, 4, 2, 1, 4, 0, 1, 1, 0)},
        {v, mk(4, 8, 16, 8, 1, 4, 2, 0, 4, 0, 0)},
        {v, mk(2, 8, 64, 4, 2, 8, 1, 4, 4, 1, 0)},
    };
    int n = (int)CUT_ARRAY_LEN(hs);
    cut_result res[CUT_ARRAY_LEN(hs)];
    int epi_multi = 0;
    for (int i = 0; i < n; i++) {
        cut_wino_geom g;
        cut_winograd_geometry(&hs[i].c, &hs[i].s, &g);
        epi_multi += g.passes > 1;
    }
    assert_true(epi_multi >= 3);
    assert_int_equal(run_emulated(hs, n, 1, res), 0);
}

/* The numeric error of both algorithms against the double reference, on a deep (CI 512) and a shallow (CI 32)
 * layer, as the largest |err| over cut_conv_tolerance's plain atol. F(2x2) must fit the plain tolerance; F(4x4)
 * fits only with its factor (measure/check.c documents the numbers). */
static void test_numeric_error(void **state)
{
    (void)state;
    cut_err e;
    if (cut_nvrtc_version(&e) < 0)
        skip();
    const cut_conv deep = {1, 24, 24, 16, 512, 3, 3, 1, 1}, shallow = {2, 32, 32, 16, 32, 3, 3, 1, 1};
    const cut_conv few = {1, 20, 20, 16, 5, 3, 3, 1, 1};
    const hand hs[] = {
        {deep, mk(2, 16, 32, 8, 4, 8, 1, 4, 8, 1, 1)},  {deep, mk(4, 16, 16, 4, 4, 8, 1, 4, 4, 1, 1)},
        {shallow, mk(2, 16, 32, 8, 4, 8, 1, 4, 8, 1, 1)}, {shallow, mk(4, 16, 16, 4, 4, 8, 1, 4, 4, 1, 1)},
        {few, mk(2, 16, 32, 8, 4, 8, 1, 4, 8, 1, 1)},   {few, mk(4, 16, 16, 4, 4, 8, 1, 4, 4, 1, 1)},
    };
    int n = (int)CUT_ARRAY_LEN(hs);
    cut_result res[CUT_ARRAY_LEN(hs)];
    assert_int_equal(run_emulated(hs, n, 1, res), 0);
    for (int i = 0; i < n; i++) {
        double atol, rtol;
        cut_conv_tolerance(&hs[i].c, &atol, &rtol);
        int m = hs[i].s.k[CUT_W_M];
        double ratio = res[i].max_abs_err / atol;
        printf("  F(%dx%d) CI %3d: max |err| %.3g = %.2f x atol (%.3g) over %zu outputs, factor %.0f\n", m, m,
               hs[i].c.ci, res[i].max_abs_err, ratio, atol, cut_conv_out_elems(&hs[i].c),
               cut_tolerance_scale_winograd(m));
        assert_true(ratio < (m == 2 ? 0.5 : 0.5 * cut_tolerance_scale_winograd(m)));
    }
}

/* Large-tile schedules on the seed-001 layers compile without spills, within the register budget. */
static void test_large_tiles_no_spills(void **state)
{
    (void)state;
    cut_err e;
    if (cut_nvrtc_version(&e) < 0)
        skip();
    const hand hs[] = {
        {seed001[0], mk(2, 64, 32, 8, 8, 8, 1, 0, 8, 0, 0)}, {seed001[0], mk(2, 32, 32, 8, 8, 8, 1, 4, 8, 1, 1)},
        {seed001[2], mk(4, 32, 16, 4, 8, 8, 1, 4, 4, 0, 1)}, {seed001[2], mk(4, 32, 16, 4, 8, 8, 1, 4, 4, 1, 1)},
        {seed001[3], mk(4, 32, 16, 4, 4, 4, 3, 4, 4, 0, 0)}, {seed001[4], mk(2, 32, 32, 8, 8, 8, 1, 0, 8, 0, 2)},
    };
    int n = (int)CUT_ARRAY_LEN(hs);
    cut_kernel_src ks[8];
    cut_compiled bins[8];
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    compile_hands(hs, n, ks, bins);
    for (int i = 0; i < n; i++) {
        cut_wino_geom g;
        cut_winograd_geometry(&hs[i].c, &hs[i].s, &g);
        assert_fits(&hs[i], &bins[i], g.threads, g.regs_est, g.smem_bytes);
        cut_compiled_free(&bins[i]);
        cut_kernel_src_free(&ks[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matrices_identity),
        cmocka_unit_test(test_applies),
        cmocka_unit_test(test_sampled_are_valid_and_sized),
        cmocka_unit_test(test_check_rejects),
        cmocka_unit_test(test_geometry),
        cmocka_unit_test(test_codegen_launch_and_json),
        cmocka_unit_test(test_features),
        cmocka_unit_test(test_hand_picked_emulated),
        cmocka_unit_test(test_numeric_error),
        cmocka_unit_test(test_large_tiles_no_spills),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
