/* Prior logs: cut_prior_select over a list of folders (GPU filter, own workload, duplicates across folders, missing
 * folders, the nearest across folders, unreadable logs) and the shipped priors in workloads/priors/ (every file
 * loads whole, is named by its workload, and belongs to its GPU's folder). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/record.h"
#include "cutune/tune.h"
#include "cutune/util.h"
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHIPPED CUTUNE_WORKLOADS_DIR "/priors"

static const cut_conv conv_a = {1, 56, 56, 64, 64, 3, 3, 1, 1};
static const cut_conv conv_b = {1, 28, 28, 128, 128, 3, 3, 1, 1};
static const cut_conv conv_c = {1, 14, 14, 256, 256, 3, 3, 1, 1};
static const cut_conv conv_d = {1, 7, 7, 512, 512, 3, 3, 1, 1};
static const cut_conv conv_far = {4, 416, 416, 16, 3, 1, 1, 1, 0};

/* Writes dir/file with n records of conv c measured on gpu (a plain record: the prior needs only its fields). */
static void write_log(const char *dir, const char *file, const cut_conv *c, const char *gpu, int n)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    cut_err e;
    assert_int_equal(cut_mkdirs(dir, &e), 0);
    cut_buf b;
    cut_buf_init(&b);
    for (int i = 0; i < n; i++) {
        cut_record r;
        memset(&r, 0, sizeof r);
        r.case_idx = 1;
        r.conv = *c;
        snprintf(r.dtype, sizeof r.dtype, "fp32");
        r.status = CUT_ST_OK;
        r.median_ms = r.min_ms = r.max_ms = 1.0 + i;
        r.gflops = cut_conv_gflops(c, r.median_ms);
        r.repeats = 5;
        r.regs = r.spills = -1;
        snprintf(r.env.backend, sizeof r.env.backend, "cuda");
        snprintf(r.env.gpu_name, sizeof r.env.gpu_name, "%s", gpu);
        snprintf(r.ts, sizeof r.ts, "2026-01-01T00:00:00Z");
        r.trial = i;
        cut_record_to_json(&r, &b);
    }
    assert_int_equal(cut_write_file_atomic(path, b.data, b.len, &e), 0);
    cut_buf_free(&b);
}

static int conv_eq(const cut_conv *a, const cut_conv *b) { return memcmp(a, b, sizeof *a) == 0; }

static const char *file_of(const cut_prior_log *l) { return strrchr(l->path, '/') + 1; }

static void test_slug(void **state)
{
    (void)state;
    char s[64];
    cut_prior_gpu_slug("NVIDIA H200", s, sizeof s);
    assert_string_equal(s, "NVIDIA_H200");
    cut_prior_gpu_slug("NVIDIA GeForce RTX 4090 (1/2)", s, sizeof s);
    assert_string_equal(s, "NVIDIA_GeForce_RTX_4090__1_2_");
    cut_prior_gpu_slug("NVIDIA H200", s, 4);
    assert_string_equal(s, "NVI");
}

/* A shipped or extra folder's log of another GPU is ignored; the records folder takes any GPU. */
static void test_gpu_filter(void **state)
{
    (void)state;
    char *t = tu_tmpdir("prior_gpu"), rec[2048], ship[2048];
    snprintf(rec, sizeof rec, "%s/rec", t);
    snprintf(ship, sizeof ship, "%s/ship", t);
    write_log(rec, "b.json", &conv_b, "host-emulation", 3);
    write_log(ship, "c.json", &conv_c, "NVIDIA A100", 4);
    write_log(ship, "d.json", &conv_d, "NVIDIA H200", 5);
    cut_prior_dir dirs[] = {{rec, NULL}, {ship, "NVIDIA H200"}};
    cut_prior_log *logs = NULL;
    int n = cut_prior_select(dirs, 2, &conv_a, 3, &logs);
    assert_int_equal(n, 2);
    for (int i = 0; i < n; i++) {
        assert_false(conv_eq(&logs[i].recs[0].conv, &conv_c));
        if (conv_eq(&logs[i].recs[0].conv, &conv_b))
            assert_string_equal(logs[i].recs[0].env.gpu_name, "host-emulation");
        else
            assert_int_equal(logs[i].n, 5);
    }
    cut_prior_logs_free(logs, n);
    free(t);
}

/* The log of the workload being tuned is never a prior, in any folder. */
static void test_own_workload(void **state)
{
    (void)state;
    char *t = tu_tmpdir("prior_own"), rec[2048], ship[2048];
    snprintf(rec, sizeof rec, "%s/rec", t);
    snprintf(ship, sizeof ship, "%s/ship", t);
    write_log(rec, "case1_a.json", &conv_a, "G", 3);
    write_log(rec, "case2_b.json", &conv_b, "G", 3);
    write_log(ship, "a.json", &conv_a, "G", 3);
    cut_prior_dir dirs[] = {{rec, NULL}, {ship, "G"}};
    cut_prior_log *logs = NULL;
    int n = cut_prior_select(dirs, 2, &conv_a, 3, &logs);
    assert_int_equal(n, 1);
    assert_true(conv_eq(&logs[0].recs[0].conv, &conv_b));
    cut_prior_logs_free(logs, n);
    free(t);
}

/* A workload in several folders is taken from the first: the records folder's own log wins. */
static void test_duplicate_records_dir_wins(void **state)
{
    (void)state;
    char *t = tu_tmpdir("prior_dup"), rec[2048], extra[2048], ship[2048];
    snprintf(rec, sizeof rec, "%s/rec", t);
    snprintf(extra, sizeof extra, "%s/extra", t);
    snprintf(ship, sizeof ship, "%s/ship", t);
    write_log(ship, "b.json", &conv_b, "G", 7);
    write_log(extra, "b.json", &conv_b, "G", 6);
    write_log(rec, "case4_b.json", &conv_b, "G", 5);
    cut_prior_dir dirs[] = {{rec, NULL}, {extra, "G"}, {ship, "G"}};
    cut_prior_log *logs = NULL;
    int n = cut_prior_select(dirs, 3, &conv_a, 3, &logs);
    assert_int_equal(n, 1);
    assert_int_equal(logs[0].n, 5);
    assert_string_equal(file_of(&logs[0]), "case4_b.json");
    cut_prior_logs_free(logs, n);
    /* without the records folder the extra folder comes first */
    n = cut_prior_select(dirs + 1, 2, &conv_a, 3, &logs);
    assert_int_equal(n, 1);
    assert_int_equal(logs[0].n, 6);
    cut_prior_logs_free(logs, n);
    free(t);
}

/* Missing folders (and a NULL path) are skipped quietly; an unreadable log is skipped, the rest still used. */
static void test_missing_and_bad(void **state)
{
    (void)state;
    char *t = tu_tmpdir("prior_missing"), gone[2048], ship[2048], bad[2048];
    snprintf(gone, sizeof gone, "%s/does-not-exist", t);
    snprintf(ship, sizeof ship, "%s/ship", t);
    write_log(ship, "b.json", &conv_b, "G", 2);
    snprintf(bad, sizeof bad, "%s/bad.json", ship);
    cut_err e;
    assert_int_equal(cut_write_file_atomic(bad, "{not json}\n", 11, &e), 0);
    cut_prior_dir dirs[] = {{gone, NULL}, {NULL, "G"}, {ship, "G"}};
    cut_prior_log *logs = NULL;
    assert_int_equal(cut_prior_select(dirs, 2, &conv_a, 3, &logs), 0);
    assert_null(logs);
    int n = cut_prior_select(dirs, 3, &conv_a, 3, &logs);
    assert_int_equal(n, 1);
    assert_string_equal(file_of(&logs[0]), "b.json");
    cut_prior_logs_free(logs, n);
    assert_int_equal(cut_prior_select(dirs, 0, &conv_a, 3, &logs), 0);
    free(t);
}

/* The 3 nearest in shape are chosen over all folders, nearest first. */
static void test_nearest_across_dirs(void **state)
{
    (void)state;
    char *t = tu_tmpdir("prior_near"), rec[2048], extra[2048], ship[2048];
    snprintf(rec, sizeof rec, "%s/rec", t);
    snprintf(extra, sizeof extra, "%s/extra", t);
    snprintf(ship, sizeof ship, "%s/ship", t);
    write_log(rec, "far.json", &conv_far, "G", 2);
    write_log(rec, "c.json", &conv_c, "G", 2);
    write_log(ship, "b.json", &conv_b, "G", 2);
    write_log(ship, "a.json", &conv_a, "G", 2);
    write_log(extra, "d.json", &conv_d, "G", 2);
    cut_prior_dir dirs[] = {{rec, NULL}, {extra, "G"}, {ship, "G"}};
    cut_prior_log *logs = NULL;
    /* tuning a (its own shipped log never counts): b (distance √6), c (√24), d (√54); far (√71) is left out */
    int n = cut_prior_select(dirs, 3, &conv_a, 3, &logs);
    assert_int_equal(n, 3);
    assert_true(conv_eq(&logs[0].recs[0].conv, &conv_b));
    assert_true(conv_eq(&logs[1].recs[0].conv, &conv_c));
    assert_true(conv_eq(&logs[2].recs[0].conv, &conv_d));
    for (int i = 1; i < n; i++)
        assert_true(logs[i - 1].dist <= logs[i].dist);
    cut_prior_logs_free(logs, n);
    free(t);
}

/* Every shipped prior file loads whole (no malformed or partial line), holds 1..200 records of one workload
 * measured on the GPU its folder is named after, is named by that workload, and no workload is shipped twice. */
static void check_shipped_dir(const char *gpu_dir, const char *slug, int *files)
{
    char **names = NULL;
    int nn = 0;
    cut_err e;
    assert_int_equal(cut_records_dir_list(gpu_dir, ".json", &names, &nn, &e), 0);
    for (int f = 0; f < nn; f++) {
        char path[2048], want[600], s[128];
        snprintf(path, sizeof path, "%s/%s", gpu_dir, names[f]);
        cut_record *recs = NULL;
        int n = 0, partial = 0;
        if (cut_records_load(path, &recs, &n, &partial, &e) != 0)
            fail_msg("%s: %s", path, e.msg);
        if (partial != 0 || n < 1 || n > 200)
            fail_msg("%s: %d records, %d partial line(s)", path, n, partial);
        cut_conv_name(&recs[0].conv, want, sizeof want - 5);
        strcat(want, ".json");
        assert_string_equal(names[f], want);
        for (int i = 0; i < n; i++) {
            assert_true(conv_eq(&recs[i].conv, &recs[0].conv));
            cut_prior_gpu_slug(recs[i].env.gpu_name, s, sizeof s);
            assert_string_equal(s, slug);
        }
        free(recs);
        (*files)++;
    }
    cut_records_names_free(names, nn);
}

static void test_shipped_priors_load(void **state)
{
    (void)state;
    DIR *d = opendir(SHIPPED);
    if (!d)
        skip();
    int files = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char sub[2048];
        snprintf(sub, sizeof sub, "%s/%s", SHIPPED, de->d_name);
        DIR *g = de->d_name[0] == '.' ? NULL : opendir(sub);
        if (!g)
            continue;
        closedir(g);
        check_shipped_dir(sub, de->d_name, &files);
    }
    closedir(d);
    printf("    %d shipped prior logs load whole\n", files);
    assert_true(files > 0);
}

/* The shipped H200 priors as the tuner sees them: resnet18's first layer takes 3 logs, none of its own workload. */
static void test_shipped_h200_select(void **state)
{
    (void)state;
    if (!cut_path_exists(SHIPPED "/NVIDIA_H200"))
        skip();
    cut_prior_dir dirs[] = {{SHIPPED "/NVIDIA_H200", "NVIDIA H200"}};
    const cut_conv first = {1, 224, 224, 64, 3, 7, 7, 2, 3};
    cut_prior_log *logs = NULL;
    int n = cut_prior_select(dirs, 1, &first, 3, &logs);
    assert_int_equal(n, 3);
    for (int i = 0; i < n; i++)
        assert_false(conv_eq(&logs[i].recs[0].conv, &first));
    cut_prior_logs_free(logs, n);
    cut_prior_dir other[] = {{SHIPPED "/NVIDIA_H200", "NVIDIA A100"}};
    assert_int_equal(cut_prior_select(other, 1, &first, 3, &logs), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slug),
        cmocka_unit_test(test_gpu_filter),
        cmocka_unit_test(test_own_workload),
        cmocka_unit_test(test_duplicate_records_dir_wins),
        cmocka_unit_test(test_missing_and_bad),
        cmocka_unit_test(test_nearest_across_dirs),
        cmocka_unit_test(test_shipped_priors_load),
        cmocka_unit_test(test_shipped_h200_select),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
