/* Representative sampling (seed 000/001) and the performance report, checked against the rule re-derived here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/record.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cut_sched a_sched(const cut_conv *c)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng rng;
    cut_rng_seed(&rng, 99);
    cut_sched s;
    assert_int_equal(cut_sched_sample_valid(c, &d, 0, &rng, &s, 1000), 0);
    return s;
}

/* n synthetic records: times drawn from a few coarse levels (so ties happen), every 7th trial failed, every 11th
 * "ok" but unmeasured (median -1), trial numbers a permutation of 0..n-1 so ties are broken by trial. */
static cut_record *synth(int n, uint64_t seed)
{
    cut_record *r = calloc((size_t)(n ? n : 1), sizeof *r);
    cut_rng rng;
    cut_rng_seed(&rng, seed);
    const cut_conv c = {1, 28, 28, 128, 128, 3, 3, 1, 1};
    cut_sched s = a_sched(&c);
    for (int i = 0; i < n; i++) {
        r[i].case_idx = 6;
        r[i].conv = c;
        snprintf(r[i].dtype, sizeof r[i].dtype, "fp32");
        r[i].sched = s;
        r[i].trial = (int)(((int64_t)i * 37 + 11) % (n > 0 ? n : 1));
        if (n % 37 == 0) /* keep the permutation a permutation */
            r[i].trial = n - 1 - i;
        r[i].regs = r[i].spills = -1;
        r[i].compile_ms = 1;
        snprintf(r[i].env.backend, sizeof r[i].env.backend, "replay");
        snprintf(r[i].ts, sizeof r[i].ts, "2026-01-01T00:00:00Z");
        if (i % 7 == 3) {
            r[i].status = CUT_ST_WRONG_RESULT;
            r[i].median_ms = 0.001; /* would be the fastest: must never be chosen */
            snprintf(r[i].error, sizeof r[i].error, "mismatch at 0");
        } else if (i % 11 == 5) {
            r[i].status = CUT_ST_OK;
            r[i].median_ms = -1;
        } else {
            r[i].status = CUT_ST_OK;
            r[i].median_ms = 0.5 + 0.01 * (double)cut_rng_below(&rng, 60);
            r[i].repeats = 10;
        }
        r[i].min_ms = r[i].max_ms = r[i].median_ms;
    }
    return r;
}

static int valid(const cut_record *r) { return r->status == CUT_ST_OK && r->median_ms > 0; }

/* The rule, written independently: insertion sort of the valid records by (median, trial, index); top 5, then
 * for p in 10, 25, 50, 75 %: 5 ranks from floor(p * m), moved past the previous window if they overlap. */
static int reference(const cut_record *r, int n, int keep, int *out)
{
    int *v = malloc(sizeof(int) * (size_t)(n ? n : 1)), m = 0;
    for (int i = 0; i < n; i++) {
        if (!valid(&r[i]))
            continue;
        int j = m++;
        while (j > 0) {
            const cut_record *a = &r[v[j - 1]], *b = &r[i];
            int after = a->median_ms > b->median_ms || (a->median_ms == b->median_ms && a->trial > b->trial);
            if (!after)
                break;
            v[j] = v[j - 1];
            j--;
        }
        v[j] = i;
    }
    int k = 0;
    if (m <= keep) {
        for (int j = 0; j < m; j++)
            out[k++] = v[j];
    } else if (keep == 2) {
        out[k++] = v[0];
        out[k++] = v[1];
    } else {
        assert_int_equal(keep, 25);
        const double p[5] = {0.0, 0.10, 0.25, 0.50, 0.75};
        int end = 0;
        for (int g = 0; g < 5; g++) {
            int s = (int)floor(p[g] * m);
            if (s < end)
                s = end;
            for (int j = s; j < s + 5 && j < m; j++)
                out[k++] = v[j];
            end = s + 5;
        }
    }
    free(v);
    return k;
}

static void check_invariants(const cut_record *r, int n, int keep, const int *idx, int k)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        m += valid(&r[i]);
    assert_int_equal(k, m < keep ? m : keep);
    for (int a = 0; a < k; a++) {
        assert_true(idx[a] >= 0 && idx[a] < n);
        assert_true(valid(&r[idx[a]])); /* failed or unmeasured never chosen */
        for (int b = 0; b < a; b++)
            assert_int_not_equal(idx[a], idx[b]); /* no duplicates */
        if (a > 0) /* rank order */
            assert_true(r[idx[a - 1]].median_ms <= r[idx[a]].median_ms);
    }
}

static void test_select_against_rule(void **state)
{
    (void)state;
    const int sizes[] = {0, 1, 2, 7, 25, 26, 100, 1000};
    for (size_t si = 0; si < CUT_ARRAY_LEN(sizes); si++) {
        int n = sizes[si];
        cut_record *r = synth(n, 1234 + (uint64_t)n);
        const int keeps[] = {25, 2};
        for (int ki = 0; ki < 2; ki++) {
            int keep = keeps[ki];
            int idx[25], want[25];
            memset(idx, 0xff, sizeof idx);
            int k = cut_sample_select(r, n, keep, idx);
            check_invariants(r, n, keep, idx, k);
            int kw = reference(r, n, keep, want);
            assert_int_equal(k, kw);
            for (int j = 0; j < k; j++)
                if (idx[j] != want[j])
                    fail_msg("n=%d keep=%d: pick %d is record %d, the rule gives %d", n, keep, j, idx[j], want[j]);
            for (int j = k; j < keep; j++) /* nothing written past the count */
                assert_int_equal(idx[j], -1);
        }
        free(r);
    }
}

static void test_select_n100_exact(void **state)
{
    (void)state;
    /* 100 records, all valid, times strictly decreasing with the index: rank j is record 99 - j. The seed's
     * windows are ranks 0-4, 10-14, 25-29, 50-54, 75-79. */
    cut_record *r = synth(100, 5);
    for (int i = 0; i < 100; i++) {
        r[i].status = CUT_ST_OK;
        r[i].median_ms = 10.0 - 0.01 * i;
    }
    int idx[25], k = cut_sample_select(r, 100, 25, idx);
    assert_int_equal(k, 25);
    const int starts[5] = {0, 10, 25, 50, 75};
    for (int g = 0; g < 5; g++)
        for (int j = 0; j < 5; j++)
            assert_int_equal(idx[g * 5 + j], 99 - (starts[g] + j));

    /* With failures: the same rule over the sorted valid list only. */
    cut_record *f = synth(100, 6);
    int want[25];
    k = cut_sample_select(f, 100, 25, idx);
    int kw = reference(f, 100, 25, want);
    assert_int_equal(k, 25);
    assert_int_equal(kw, 25);
    assert_memory_equal(idx, want, sizeof want);
    free(f);
    free(r);
}

static void test_select_overlap_and_ties(void **state)
{
    (void)state;
    /* 26 valid records: floor(0.10 * 26) = 2 overlaps the top 5, so windows shift to 5, 10, 15, 20. */
    cut_record *r = synth(26, 7);
    for (int i = 0; i < 26; i++) {
        r[i].status = CUT_ST_OK;
        r[i].median_ms = 1.0 + i;
    }
    int idx[25];
    assert_int_equal(cut_sample_select(r, 26, 25, idx), 25);
    for (int j = 0; j < 25; j++)
        assert_int_equal(idx[j], j); /* ranks 0..24; rank 25 (the slowest) left out */

    /* Equal times: ordered by trial number, not by position in the log. */
    for (int i = 0; i < 26; i++) {
        r[i].median_ms = 2.0;
        r[i].trial = 25 - i;
    }
    assert_int_equal(cut_sample_select(r, 26, 2, idx), 2);
    assert_int_equal(idx[0], 25);
    assert_int_equal(idx[1], 24);
    free(r);

    /* Test mode: the two fastest, skipping failures even when they look faster. */
    cut_record *s = synth(40, 8);
    int best = -1, second = -1;
    for (int i = 0; i < 40; i++) {
        if (!valid(&s[i]))
            continue;
        if (best < 0 || s[i].median_ms < s[best].median_ms ||
            (s[i].median_ms == s[best].median_ms && s[i].trial < s[best].trial)) {
            second = best;
            best = i;
        } else if (second < 0 || s[i].median_ms < s[second].median_ms ||
                   (s[i].median_ms == s[second].median_ms && s[i].trial < s[second].trial)) {
            second = i;
        }
    }
    assert_int_equal(cut_sample_select(s, 40, 2, idx), 2);
    assert_int_equal(idx[0], best);
    assert_int_equal(idx[1], second);
    free(s);
}

static void test_select_other_keeps(void **state)
{
    (void)state;
    cut_record *r = synth(200, 9);
    for (int i = 0; i < 200; i++) {
        r[i].status = CUT_ST_OK;
        r[i].median_ms = 1.0 + i; /* rank == index */
    }
    int idx[64];
    /* keep 10: top 5 + 5 from the median rank (g/G = 1/2). */
    assert_int_equal(cut_sample_select(r, 200, 10, idx), 10);
    for (int j = 0; j < 5; j++) {
        assert_int_equal(idx[j], j);
        assert_int_equal(idx[5 + j], 100 + j);
    }
    /* keep 7: one group, the 7 fastest. keep 1: the fastest. keep 0: nothing. */
    assert_int_equal(cut_sample_select(r, 200, 7, idx), 7);
    for (int j = 0; j < 7; j++)
        assert_int_equal(idx[j], j);
    assert_int_equal(cut_sample_select(r, 200, 1, idx), 1);
    assert_int_equal(idx[0], 0);
    assert_int_equal(cut_sample_select(r, 200, 0, idx), 0);
    /* keep 20: top 5 + p25/p50/p75. */
    assert_int_equal(cut_sample_select(r, 200, 20, idx), 20);
    for (int j = 0; j < 5; j++) {
        assert_int_equal(idx[5 + j], 50 + j);
        assert_int_equal(idx[10 + j], 100 + j);
        assert_int_equal(idx[15 + j], 150 + j);
    }
    free(r);
}

/* ------------------------------------------------------------------------------------------------------------ */

static void write_records(const char *path, const cut_record *r, int n, const char *tail)
{
    cut_buf b;
    cut_buf_init(&b);
    for (int i = 0; i < n; i++)
        cut_record_to_json(&r[i], &b);
    if (tail)
        cut_buf_printf(&b, "%s", tail);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (b.len > 0)
        assert_int_equal(fwrite(b.data, 1, b.len, f), b.len);
    fclose(f);
    cut_buf_free(&b);
}

static char *slurp(const char *path, size_t *len)
{
    char *t;
    cut_err e;
    if (cut_read_file(path, &t, len, &e) != 0)
        fail_msg("%s", e.msg);
    return t;
}

static void test_sample_dir(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("sample_dir");
    assert_non_null(dir);
    char in[4200], out[4200], p1[4300], p2[4300], p3[4300], q[4300];
    snprintf(in, sizeof in, "%s/tuningrecords", dir);
    snprintf(out, sizeof out, "%s/tuningresults", dir);
    cut_err e = {{0}};
    assert_int_equal(cut_mkdirs(in, &e), 0);
    const char *n1 = "case1_conv2d_N_1_H_28_W_28_CO_128_CI_128_KH_3_KW_3_strides_1_padding_1.json";
    const char *n2 = "case2_conv2d_N_1_H_28_W_28_CO_128_CI_128_KH_3_KW_3_strides_1_padding_1.json";
    snprintf(p1, sizeof p1, "%s/%s", in, n1);
    snprintf(p2, sizeof p2, "%s/%s", in, n2);
    snprintf(p3, sizeof p3, "%s/case1_x.csv", in);
    cut_record *r1 = synth(60, 21), *r2 = synth(3, 22);
    write_records(p1, r1, 60, "{\"v\":1,\"trial\":60,\"ca"); /* a run still writing */
    write_records(p2, r2, 3, NULL);
    FILE *f = fopen(p3, "w");
    fputs("start_time\n2026\n", f);
    fclose(f);
    size_t l1, l2;
    char *raw1 = slurp(p1, &l1), *raw2 = slurp(p2, &l2);

    assert_int_equal(cut_sample_dir(in, out, 25, CUT_OBJ_TIME, &e), 2);

    /* The raw logs are byte-identical. */
    size_t l;
    char *now = slurp(p1, &l);
    assert_int_equal(l, l1);
    assert_memory_equal(now, raw1, l1);
    free(now);
    now = slurp(p2, &l);
    assert_int_equal(l, l2);
    assert_memory_equal(now, raw2, l2);
    free(now);

    /* Results: the chosen records' original lines in rank order. */
    int idx[25], k = cut_sample_select(r1, 60, 25, idx);
    assert_int_equal(k, 25);
    cut_records_file rf;
    assert_int_equal(cut_records_read(p1, &rf, &e), 0);
    cut_buf want;
    cut_buf_init(&want);
    for (int j = 0; j < k; j++) {
        cut_buf_append(&want, rf.text + rf.line_off[idx[j]], rf.line_len[idx[j]]);
        cut_buf_append(&want, "\n", 1);
    }
    cut_records_file_free(&rf);
    snprintf(q, sizeof q, "%s/%s", out, n1);
    now = slurp(q, &l);
    assert_int_equal(l, want.len);
    assert_memory_equal(now, want.data, want.len);
    free(now);
    cut_buf_free(&want);
    cut_record *got;
    int n, partial;
    snprintf(q, sizeof q, "%s/%s", out, n2);
    assert_int_equal(cut_records_load(q, &got, &n, &partial, &e), 0);
    int m2 = 0;
    for (int i = 0; i < 3; i++)
        m2 += valid(&r2[i]);
    assert_int_equal(n, m2); /* fewer than keep: all valid ones */
    free(got);
    snprintf(q, sizeof q, "%s/case1_x.csv", out);
    assert_false(cut_path_exists(q)); /* only JSON logs are sampled */

    /* Test mode over the same logs. */
    char out2[4300];
    snprintf(out2, sizeof out2, "%s/test_results", dir);
    assert_int_equal(cut_sample_dir(in, out2, 2, CUT_OBJ_TIME, &e), 2);
    snprintf(q, sizeof q, "%s/%s", out2, n1);
    assert_int_equal(cut_records_load(q, &got, &n, &partial, &e), 0);
    assert_int_equal(n, 2);
    assert_int_equal(got[0].trial, r1[idx[0]].trial);
    assert_int_equal(got[1].trial, r1[idx[1]].trial);
    free(got);

    /* Refusals: the same folder (would overwrite the logs), a missing folder, keep 0. */
    assert_int_equal(cut_sample_dir(in, in, 25, CUT_OBJ_TIME, &e), -1);
    assert_non_null(strstr(e.msg, "overwrite"));
    now = slurp(p1, &l);
    assert_memory_equal(now, raw1, l1);
    free(now);
    snprintf(q, sizeof q, "%s/nope", dir);
    assert_int_equal(cut_sample_dir(q, out, 25, CUT_OBJ_TIME, &e), -1);
    assert_non_null(strstr(e.msg, "nope"));
    assert_int_equal(cut_sample_dir(in, out, 0, CUT_OBJ_TIME, &e), -1);

    /* A malformed complete line stops the run with file:line. */
    f = fopen(p2, "ab");
    fputs("{\"v\":1}\n", f);
    fclose(f);
    assert_int_equal(cut_sample_dir(in, out, 25, CUT_OBJ_TIME, &e), -1);
    snprintf(q, sizeof q, "%s:4:", p2);
    assert_non_null(strstr(e.msg, q));

    free(raw1);
    free(raw2);
    free(r1);
    free(r2);
    free(dir);
}

static void test_perf_report(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("perf_report");
    assert_non_null(dir);
    char res[4200], perf[4200], p[4300];
    snprintf(res, sizeof res, "%s/tuningresults", dir);
    snprintf(perf, sizeof perf, "%s/performance", dir);
    cut_err e = {{0}};
    assert_int_equal(cut_mkdirs(res, &e), 0);
    const char *name = "case5_conv2d_N_1_H_56_W_56_CO_64_CI_64_KH_3_KW_3_strides_1_padding_1.json";
    snprintf(p, sizeof p, "%s/%s", res, name);
    cut_record *r = synth(6, 30);
    const cut_conv c = {1, 56, 56, 64, 64, 3, 3, 1, 1};
    const double flops = 2.0 * 1 * 56 * 56 * 64 * 64 * 3 * 3; /* 231,211,008 */
    /* times chosen so that rounding matters: GFLOP/s of x.4 and x.6 */
    const double gf[6] = {1000.4, 999.6, 2500.5001, 0, 12.49, 777.0};
    for (int i = 0; i < 6; i++) {
        r[i].conv = c;
        r[i].status = CUT_ST_OK;
        r[i].error[0] = 0;
        r[i].median_ms = gf[i] > 0 ? flops / (gf[i] * 1e6) : -1;
    }
    r[3].status = CUT_ST_TIMEOUT; /* no performance: skipped */
    write_records(p, r, 6, NULL);
    snprintf(p, sizeof p, "%s/case7_conv2d_N_1_H_14_W_14_CO_256_CI_256_KH_3_KW_3_strides_1_padding_1.json", res);
    write_records(p, r, 0, NULL); /* empty results file: empty report */

    assert_int_equal(cut_report_perf_dir(res, perf, &e), 2);
    snprintf(p, sizeof p, "%s/%s", perf, name);
    size_t l;
    char *t = slurp(p, &l);
    cut_buf want;
    cut_buf_init(&want);
    for (int i = 0; i < 6; i++)
        if (i != 3)
            cut_buf_printf(&want, "%lld\n", (long long)floor(flops / (r[i].median_ms * 1e6) + 0.5));
    assert_string_equal(t, want.data);
    assert_string_equal(t, "1000\n1000\n2501\n12\n777\n");
    free(t);
    cut_buf_free(&want);
    snprintf(p, sizeof p, "%s/case7_conv2d_N_1_H_14_W_14_CO_256_CI_256_KH_3_KW_3_strides_1_padding_1.json", perf);
    t = slurp(p, &l);
    assert_int_equal(l, 0);
    free(t);
    free(r);

    snprintf(p, sizeof p, "%s/none", dir);
    assert_int_equal(cut_report_perf_dir(p, perf, &e), -1);
    free(dir);
}

/* --objective energy|edp: the trials with the objective measured first, by it (time order reversed here), then
 * the rest by time; failed trials never, even with energy fields; the time objective ignores energy. */
static void test_select_by_objective(void **state)
{
    (void)state;
    enum { N = 12 };
    cut_record *r = synth(N, 5);
    for (int i = 0; i < N; i++) {
        r[i].status = CUT_ST_OK;
        r[i].trial = i;
        r[i].median_ms = 1.0 + 0.1 * i;       /* time order: 0, 1, 2, ... */
        r[i].energy_mj = r[i].edp = r[i].power_w = 0;
    }
    const int measured[4] = {1, 3, 6, 9};
    const double energy[4] = {10, 6, 5.5, 4}; /* energy order: 9, 6, 3, 1 */
    for (int j = 0; j < 4; j++) {
        cut_record *m = &r[measured[j]];
        m->energy_mj = energy[j];
        m->edp = m->energy_mj * m->median_ms; /* edp: 1 -> 11, 3 -> 7.8, 6 -> 8.8, 9 -> 7.6; order 9, 3, 6, 1 */
        m->power_w = 300;
    }
    r[11].status = CUT_ST_WRONG_RESULT; /* failed, with a tiny energy: never chosen */
    r[11].energy_mj = r[11].edp = 0.001;
    int idx[N], k;
    k = cut_sample_select_obj(r, N, 7, CUT_OBJ_ENERGY, idx);
    assert_int_equal(k, 7);
    const int want_e[7] = {9, 6, 3, 1, 0, 2, 4};
    assert_memory_equal(idx, want_e, sizeof want_e);
    k = cut_sample_select_obj(r, N, 2, CUT_OBJ_EDP, idx);
    const int want_d[2] = {9, 3};
    assert_int_equal(k, 2);
    assert_memory_equal(idx, want_d, sizeof want_d);
    k = cut_sample_select_obj(r, N, 25, CUT_OBJ_EDP, idx); /* m <= keep: all valid, in the two-tier order */
    const int want_all[11] = {9, 3, 6, 1, 0, 2, 4, 5, 7, 8, 10};
    assert_int_equal(k, 11);
    assert_memory_equal(idx, want_all, sizeof want_all);
    k = cut_sample_select_obj(r, N, 3, CUT_OBJ_TIME, idx);
    const int want_t[3] = {0, 1, 2};
    assert_int_equal(k, 3);
    assert_memory_equal(idx, want_t, sizeof want_t);
    assert_int_equal(cut_sample_select(r, N, 3, idx), 3);
    assert_memory_equal(idx, want_t, sizeof want_t);
    /* No trial with energy: the energy ranking is the time ranking. */
    for (int i = 0; i < N; i++)
        r[i].energy_mj = r[i].edp = 0;
    k = cut_sample_select_obj(r, N, 5, CUT_OBJ_ENERGY, idx);
    const int want_n[5] = {0, 1, 2, 3, 4};
    assert_int_equal(k, 5);
    assert_memory_equal(idx, want_n, sizeof want_n);
    free(r);
}

/* cut_sample_dir ranks files by the objective: line 1 of the energy results is the lowest-energy trial. */
static void test_sample_dir_objective(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("sample_obj");
    assert_non_null(dir);
    char in[4200], out[4200], path[4300];
    snprintf(in, sizeof in, "%s/in", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    cut_err e = {{0}};
    assert_int_equal(cut_mkdirs(in, &e), 0);
    cut_record *r = synth(6, 9);
    for (int i = 0; i < 6; i++) {
        r[i].status = CUT_ST_OK;
        r[i].trial = i;
        r[i].median_ms = 1.0 + i;
        r[i].energy_mj = r[i].edp = r[i].power_w = 0;
    }
    r[4].energy_mj = 5, r[4].edp = 25, r[4].power_w = 1;
    r[2].energy_mj = 9, r[2].edp = 27, r[2].power_w = 3;
    snprintf(path, sizeof path, "%s/case1_x.json", in);
    write_records(path, r, 6, NULL);
    assert_int_equal(cut_sample_dir(in, out, 2, CUT_OBJ_ENERGY, &e), 1);
    snprintf(path, sizeof path, "%s/case1_x.json", out);
    cut_records_file f;
    assert_int_equal(cut_records_read(path, &f, &e), 0);
    assert_int_equal(f.n, 2);
    assert_int_equal(f.recs[0].trial, 4);
    assert_int_equal(f.recs[1].trial, 2);
    assert_true(f.recs[0].edp == 25);
    cut_records_file_free(&f);
    assert_int_equal(cut_sample_dir(in, out, 2, CUT_OBJ_TIME, &e), 1);
    assert_int_equal(cut_records_read(path, &f, &e), 0);
    assert_int_equal(f.recs[0].trial, 0);
    assert_int_equal(f.recs[1].trial, 1);
    cut_records_file_free(&f);
    free(r);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select_against_rule), cmocka_unit_test(test_select_n100_exact),
        cmocka_unit_test(test_select_overlap_and_ties), cmocka_unit_test(test_select_other_keeps),
        cmocka_unit_test(test_sample_dir),          cmocka_unit_test(test_perf_report),
        cmocka_unit_test(test_select_by_objective), cmocka_unit_test(test_sample_dir_objective),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
