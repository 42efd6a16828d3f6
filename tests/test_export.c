/* cutune export / clean: entry renaming, CSV rows, loading and refusing results, the written layout, and clean's
 * rule (only marked folders, the exported project's build folder, export's CSV; never the tuning data). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/export.h"
#include "cutune/record.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const cut_conv k_conv = {1, 8, 8, 8, 4, 3, 3, 1, 1};

static cut_sched valid_sched(const cut_conv *c, int tpl, uint64_t seed)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng rng;
    cut_rng_seed(&rng, seed);
    cut_sched s;
    assert_int_equal(cut_sched_sample_valid(c, &d, tpl, &rng, &s, 2000), 0);
    return s;
}

static int ident(char ch) { return ch == '_' || (ch >= '0' && ch <= '9') || ((ch | 32) >= 'a' && (ch | 32) <= 'z'); }

/* Number of whole-word occurrences of word in s. */
static int count_word(const char *s, const char *word)
{
    int n = 0;
    size_t l = strlen(word);
    for (const char *p = strstr(s, word); p; p = strstr(p + l, word)) {
        n += !(p > s && ident(p[-1])) && !ident(p[l]);
    }
    return n;
}

/* Every template's source gets the new name at its definition and nowhere else changes. */
static void test_rename_entry(void **state)
{
    (void)state;
    for (int tpl = 0; tpl < cut_template_count(); tpl++) {
        if (!cut_template_get(tpl)->applies(&k_conv))
            continue;
        cut_sched s = valid_sched(&k_conv, tpl, 5 + (uint64_t)tpl);
        cut_kernel_src plain, named;
        cut_err e = {{0}};
        assert_int_equal(cut_codegen_conv(&k_conv, &s, &plain, &e), 0);
        assert_string_equal(plain.entry, "cut_conv2d"); /* the default is unchanged */
        assert_int_equal(cut_codegen_conv_named(&k_conv, &s, "cut_conv2d_case3_k17", &named, &e), 0);
        assert_string_equal(named.entry, "cut_conv2d_case3_k17");
        assert_int_equal(count_word(named.src, "cut_conv2d"), 0);
        assert_int_equal(count_word(named.src, "cut_conv2d_case3_k17"), 1);
        assert_non_null(strstr(named.src, "cut_conv2d_case3_k17("));
        /* Same text once the name is mapped back. */
        char *p = strstr(named.src, "cut_conv2d_case3_k17");
        size_t head = (size_t)(p - named.src);
        assert_int_equal(strncmp(plain.src, named.src, head), 0);
        assert_string_equal(plain.src + head + strlen("cut_conv2d"), p + strlen("cut_conv2d_case3_k17"));
        assert_memory_equal(plain.grid, named.grid, sizeof plain.grid);
        assert_memory_equal(plain.block, named.block, sizeof plain.block);
        cut_kernel_src_free(&plain);
        cut_kernel_src_free(&named);
    }
}

static void test_rename_refuses(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_kernel_src k = {0};
    const char *bad_names[] = {"", "1abc", "a-b", "a b",
                               "a_name_that_is_far_too_long_for_the_entry_field_of_the_kernel_struct_x"};
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad_names); i++) {
        k.src = cut_xstrdup("__global__ void cut_conv2d(float *x) {}\n");
        assert_int_equal(cut_codegen_rename_entry(&k, bad_names[i], &e), -1);
        assert_string_equal(k.src, "__global__ void cut_conv2d(float *x) {}\n"); /* untouched */
        cut_kernel_src_free(&k);
    }
    /* Used twice, or not as a definition, or only as part of a longer name: an error, never half a rename. */
    const char *bad_src[] = {"void cut_conv2d(int); void cut_conv2d(int a) {}", "int cut_conv2d;",
                             "void cut_conv2d_x(int);", "void my_cut_conv2d(int);"};
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad_src); i++) {
        k.src = cut_xstrdup(bad_src[i]);
        assert_int_equal(cut_codegen_rename_entry(&k, "ok_name", &e), -1);
        assert_string_equal(k.src, bad_src[i]);
        cut_kernel_src_free(&k);
    }
    k.src = cut_xstrdup("extern \"C\" __global__ void\ncut_conv2d (const float *in)\n{ /* cut_conv2d_x */ }");
    assert_int_equal(cut_codegen_rename_entry(&k, "e2", &e), 0);
    assert_string_equal(k.src, "extern \"C\" __global__ void\ne2 (const float *in)\n{ /* cut_conv2d_x */ }");
    cut_kernel_src_free(&k);
}

static int count_char(const char *s, char ch)
{
    int n = 0;
    for (; *s; s++)
        n += *s == ch;
    return n;
}

static void test_csv_row(void **state)
{
    (void)state;
    cut_export_kernel k = {.case_idx = 2, .kernel_id = 7, .conv = k_conv, .tuned_ms = 0.0125, .tuned_gflops = 1234.5};
    k.sched = valid_sched(&k_conv, 0, 3);
    k.ks.grid[0] = 4, k.ks.grid[1] = 2, k.ks.grid[2] = 1;
    k.ks.block[0] = 128, k.ks.block[1] = k.ks.block[2] = 1;
    char knobs[512], want[1024];
    assert_true(cut_export_knobs(&k.sched, knobs, sizeof knobs) > 0);
    assert_null(strchr(knobs, ','));
    assert_int_equal(cut_export_knobs(&k.sched, knobs, 5), -1); /* too small: an error, not a cut string */
    cut_export_knobs(&k.sched, knobs, sizeof knobs);
    const cut_template *t = cut_template_get(0);
    assert_int_equal(count_char(knobs, ';'), t->nknobs - 1);
    char first[64];
    snprintf(first, sizeof first, "%s=%d", t->knob_names[0], k.sched.k[0]);
    assert_int_equal(strncmp(knobs, first, strlen(first)), 0);
    snprintf(want, sizeof want, "2,7,1,8,8,8,4,3,3,1,1,%s,%s,4,2,1,128,1,1,0,0.0125,1234.5\n", t->name, knobs);
    cut_buf b;
    cut_buf_init(&b);
    cut_export_csv_row(&b, &k);
    assert_string_equal(b.data, want);
    assert_int_equal(count_char(b.data, ','), count_char(CUT_EXPORT_CSV_HEADER, ','));
    cut_buf_free(&b);
}

/* ---- results folders --------------------------------------------------------------------------------------- */

static cut_record a_record(int case_idx, const cut_conv *c, const cut_sched *s, double ms)
{
    cut_record r;
    memset(&r, 0, sizeof r);
    r.case_idx = case_idx;
    r.conv = *c;
    snprintf(r.dtype, sizeof r.dtype, "fp32");
    r.sched = *s;
    r.status = CUT_ST_OK;
    r.median_ms = r.min_ms = r.max_ms = ms;
    r.gflops = cut_conv_gflops(c, ms);
    r.repeats = 10;
    r.regs = r.spills = -1;
    snprintf(r.env.backend, sizeof r.env.backend, "emu");
    snprintf(r.ts, sizeof r.ts, "2026-01-01T00:00:00Z");
    return r;
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* results/<case name>.json with nrec records of case case_idx: a failed trial at line 2 when with_failed. */
static void write_results(const char *dir, int case_idx, const cut_conv *c, int nrec, int with_failed)
{
    char name[512];
    cut_conv_case_name(c, case_idx, name, sizeof name);
    strcat(name, ".json");
    cut_buf b;
    cut_buf_init(&b);
    for (int i = 0; i < nrec; i++) {
        int tpl = i % cut_template_count();
        if (!cut_template_get(tpl)->applies(c))
            tpl = 0;
        cut_sched s = valid_sched(c, tpl, 100 + (uint64_t)i);
        cut_record r = a_record(case_idx, c, &s, 0.01 * (i + 1));
        r.trial = i;
        if (with_failed && i == 1) {
            r.status = CUT_ST_WRONG_RESULT;
            r.median_ms = -1;
        }
        cut_record_to_json(&r, &b);
    }
    cut_mkdirs(dir, NULL);
    write_file(dir, name, b.data ? b.data : "");
    cut_buf_free(&b);
}

static char *path_in(const char *dir, const char *rel)
{
    char *p = malloc(4096);
    snprintf(p, 4096, "%s/%s", dir, rel);
    return p;
}

static void test_load_and_write(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir("export_load");
    char *res = path_in(tmp, "tuningresults");
    const cut_conv c2 = {2, 6, 6, 4, 8, 1, 1, 1, 0};
    write_results(res, 10, &k_conv, 4, 1); /* case 10 sorts after case 2 by number, before it by name */
    write_results(res, 2, &c2, 3, 0);
    cut_export_set set;
    cut_err e = {{0}};
    assert_int_equal(cut_export_load(res, &set, &e), 0);
    assert_int_equal(set.n, 6);
    assert_int_equal(set.skipped, 1);
    const int want_case[] = {2, 2, 2, 10, 10, 10}, want_id[] = {1, 2, 3, 1, 3, 4}; /* line 2 of case 10 failed */
    for (int i = 0; i < set.n; i++) {
        assert_int_equal(set.k[i].case_idx, want_case[i]);
        assert_int_equal(set.k[i].kernel_id, want_id[i]);
        char entry[64];
        snprintf(entry, sizeof entry, "cut_conv2d_case%d_k%d", want_case[i], want_id[i]);
        assert_string_equal(set.k[i].ks.entry, entry);
    }
    assert_int_equal(cut_export_write(&set, tmp, "90", &e), 0);
    const char *files[] = {"kernels/.cutune-generated", "kernels/driver.cu", "kernels/CMakeLists.txt",
                           "kernels/kernel_metadata.csv", "kernels/case2/kernel3.cu", "kernels/case10/kernel4.cuh"};
    for (size_t i = 0; i < CUT_ARRAY_LEN(files); i++) {
        char *p = path_in(tmp, files[i]);
        assert_true(cut_path_exists(p));
        free(p);
    }
    char *absent = path_in(tmp, "kernels/case10/kernel2.cu");
    assert_false(cut_path_exists(absent));
    free(absent);
    /* The one header declares every launcher (C linkage); the driver includes it and tables every launcher; the
     * CSV has the header and one row per kernel. */
    char *text;
    size_t len;
    char *hdr = path_in(tmp, "kernels/cutune_kernels.h");
    assert_int_equal(cut_read_file(hdr, &text, &len, &e), 0);
    assert_non_null(strstr(text, "#ifndef CUTUNE_KERNELS_H\n#define CUTUNE_KERNELS_H\n"));
    assert_non_null(strstr(text, "extern \"C\" {"));
    for (int i = 0; i < set.n; i++) {
        char want[256];
        snprintf(want, sizeof want, "int launch_case%d_k%d(const float *in, const float *w, float *out, cudaStream_t s);",
                 want_case[i], want_id[i]);
        assert_non_null(strstr(text, want));
        snprintf(want, sizeof want, "size_t launch_case%d_k%d_workspace_bytes(void);", want_case[i], want_id[i]);
        assert_non_null(strstr(text, want));
    }
    free(text);
    free(hdr);
    char *drv = path_in(tmp, "kernels/driver.cu");
    assert_int_equal(cut_read_file(drv, &text, &len, &e), 0);
    assert_non_null(strstr(text, "#include \"cutune_kernels.h\""));
    assert_non_null(strstr(text, "{10, 4, 1, launch_case10_k4, launch_case10_k4_ws, launch_case10_k4_workspace_bytes},"));
    assert_non_null(strstr(text, "{2, 2, 6, 6, 4, 8, 1, 1, 1, 0},"));
    free(text);
    free(drv);
    /* Each kernel header: guarded, in its namespace, the macros saved before and restored after. */
    char *cuh = path_in(tmp, "kernels/case10/kernel4.cuh");
    assert_int_equal(cut_read_file(cuh, &text, &len, &e), 0);
    assert_non_null(strstr(text, "#ifndef CUTUNE_CASE10_K4_CUH\n#define CUTUNE_CASE10_K4_CUH\n"));
    assert_non_null(strstr(text, "namespace cut_case10_k4 {"));
    const char *push = strstr(text, "#pragma push_macro(\"H\")\n#undef H\n"), *def = strstr(text, "#define H ");
    const char *undef = strstr(def ? def : text, "#undef H\n"), *pop = strstr(text, "#pragma pop_macro(\"H\")\n");
    assert_true(push && def && undef && pop && push < def && def < undef && undef < pop);
    assert_true(pop > strstr(text, "} // namespace cut_case10_k4"));
    free(text);
    free(cuh);
    char *csv = path_in(tmp, "kernels/kernel_metadata.csv");
    assert_int_equal(cut_read_file(csv, &text, &len, &e), 0);
    assert_int_equal(strncmp(text, CUT_EXPORT_CSV_HEADER "\n", strlen(CUT_EXPORT_CSV_HEADER) + 1), 0);
    assert_int_equal(count_char(text, '\n'), 7);
    free(text);
    free(csv);
    /* An unknown architecture is refused. */
    assert_int_equal(cut_export_write(&set, tmp, "90; rm", &e), -1);
    cut_export_set_free(&set);
    free(res);
    free(tmp);
}

/* Each refusal leaves a sentence and an empty set. */
static void expect_refusal(const char *res, const char *needle)
{
    cut_export_set set;
    cut_err e = {{0}};
    assert_int_equal(cut_export_load(res, &set, &e), -1);
    if (!strstr(e.msg, needle))
        fail_msg("message '%s' lacks '%s'", e.msg, needle);
    cut_export_set_free(&set);
}

static void test_load_refuses(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir("export_refuse");
    char *res = path_in(tmp, "tuningresults");
    expect_refusal(res, "no tuning results folder");
    cut_mkdirs(res, NULL);
    expect_refusal(res, "no measured kernels");
    write_results(res, 1, &k_conv, 3, 0);
    char name[512];
    cut_conv_case_name(&k_conv, 1, name, sizeof name);
    strcat(name, ".json");
    char *p = path_in(res, name);
    char *text;
    size_t len;
    assert_int_equal(cut_read_file(p, &text, &len, NULL), 0);
    /* a malformed second line */
    char *nl = strchr(text, '\n');
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_append(&b, text, (size_t)(nl - text) + 1);
    cut_buf_printf(&b, "{\"v\":1,\"trial\":\n");
    write_file(res, name, b.data);
    expect_refusal(res, ":2");
    /* an incomplete last line */
    b.len = 0;
    cut_buf_append(&b, text, len - 1);
    write_file(res, name, b.data);
    expect_refusal(res, "incomplete");
    /* an invalid schedule: a direct tile of 64 x 64 x 64 threads */
    cut_sched s = valid_sched(&k_conv, 0, 1);
    s.k[0] = s.k[1] = s.k[2] = 64;
    cut_record r = a_record(1, &k_conv, &s, 0.5);
    b.len = 0;
    cut_record_to_json(&r, &b);
    write_file(res, name, b.data);
    expect_refusal(res, "is invalid for");
    /* a workload different from the file name's */
    const cut_conv other = {1, 9, 9, 6, 5, 3, 3, 2, 1};
    r = a_record(1, &other, &s, 0.5);
    r.sched = valid_sched(&other, 0, 2);
    b.len = 0;
    cut_record_to_json(&r, &b);
    write_file(res, name, b.data);
    expect_refusal(res, "file name");
    /* two files of one case */
    write_file(res, name, text);
    write_results(res, 1, &other, 2, 0);
    expect_refusal(res, "two results files are case 1");
    /* a wgmma_conv kernel (a TMA map of the weights, sm_90a): refused with the reason */
    char *res2 = path_in(tmp, "tuningresults_wgmma");
    const cut_conv half = {1, 8, 8, 16, 8, 3, 3, 1, 1, CUT_DT_FP16, CUT_NHWC, CUT_EPI_NONE};
    r = a_record(1, &half, &s, 0.5);
    r.sched = valid_sched(&half, cut_template_find("wgmma_conv"), 3);
    b.len = 0;
    cut_record_to_json(&r, &b);
    cut_mkdirs(res2, NULL);
    cut_conv_case_name(&half, 1, name, sizeof name);
    strcat(name, ".json");
    write_file(res2, name, b.data);
    expect_refusal(res2, "holds only wgmma_conv kernels (1)");
    /* beside an igemm_tc kernel of the case: that one exports, the wgmma_conv one is counted as left out */
    r.sched = valid_sched(&half, cut_template_find("igemm_tc"), 4);
    cut_record_to_json(&r, &b);
    write_file(res2, name, b.data);
    cut_export_set set;
    cut_err e = {{0}};
    assert_int_equal(cut_export_load(res2, &set, &e), 0);
    assert_int_equal(set.n, 1);
    assert_int_equal(set.unexportable, 1);
    assert_int_equal(set.k[0].sched.tpl, cut_template_find("igemm_tc"));
    assert_int_equal(set.k[0].kernel_id, 2);
    cut_export_set_free(&set);
    free(res2);
    cut_buf_free(&b);
    free(text);
    free(p);
    free(res);
    free(tmp);
}

/* ---- clean ------------------------------------------------------------------------------------------------- */

static int touch(const char *dir, const char *rel)
{
    char *p = path_in(dir, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    cut_mkdirs(p, NULL);
    *slash = '/';
    FILE *f = fopen(p, "w");
    int ok = f != NULL;
    if (f)
        fclose(f);
    free(p);
    return ok;
}

static int exists(const char *dir, const char *rel)
{
    char *p = path_in(dir, rel);
    struct stat st;
    int ok = lstat(p, &st) == 0;
    free(p);
    return ok;
}

static void test_clean_rule(void **state)
{
    (void)state;
    char *tmp = tu_tmpdir("export_clean");
    char *res = path_in(tmp, "tuningresults");
    write_results(res, 1, &k_conv, 2, 0);
    assert_true(touch(tmp, "tuningrecords/case1_x.json"));
    cut_export_set set;
    cut_err e = {{0}};
    assert_int_equal(cut_export_load(res, &set, &e), 0);
    assert_int_equal(cut_export_write(&set, tmp, "90", &e), 0);
    /* An unmarked scripts/ (like this repository's) and a build/ configured from elsewhere stay. */
    assert_true(touch(tmp, "scripts/test.sh"));
    assert_true(touch(tmp, "build/CMakeCache.txt"));
    write_file(tmp, "build/CMakeCache.txt", "CMAKE_HOME_DIRECTORY:INTERNAL=/somewhere/else\n");
    /* A marked kernel_outputs/ goes, with a symbolic link inside that must not be followed. */
    char *ko = path_in(tmp, "kernel_outputs");
    assert_int_equal(cut_export_mark_dir(ko, &e), 0);
    char *link = path_in(tmp, "kernel_outputs/records_link");
    char *target = path_in(tmp, "tuningrecords");
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(cut_clean(tmp, NULL, NULL, &e), 2);
    assert_false(exists(tmp, "kernels"));
    assert_false(exists(tmp, "kernel_outputs"));
    assert_true(exists(tmp, "scripts/test.sh"));
    assert_true(exists(tmp, "build/CMakeCache.txt"));
    assert_true(exists(tmp, "tuningrecords/case1_x.json"));
    assert_true(exists(tmp, "tuningresults"));

    /* The build folder of the exported project goes (decided through its CMakeCache.txt), and a top-level CSV
     * with export's header; one with another header stays. */
    assert_int_equal(cut_export_write(&set, tmp, "90", &e), 0);
    char *kdir = path_in(tmp, "kernels"), *real = realpath(kdir, NULL), cache[4200];
    snprintf(cache, sizeof cache, "# cache\nCMAKE_HOME_DIRECTORY:INTERNAL=%s\n", real);
    write_file(tmp, "build/CMakeCache.txt", cache);
    write_file(tmp, "kernel_metadata.csv", CUT_EXPORT_CSV_HEADER "\n1,1\n");
    assert_int_equal(cut_clean(tmp, NULL, NULL, &e), 3);
    assert_false(exists(tmp, "build"));
    assert_false(exists(tmp, "kernel_metadata.csv"));
    write_file(tmp, "kernel_metadata.csv", "id,other\n");
    assert_int_equal(cut_clean(tmp, NULL, NULL, &e), 0);
    assert_true(exists(tmp, "kernel_metadata.csv"));

    /* A kernels/ that is not cutune's is neither replaced by export nor removed by clean; nor is a link. */
    assert_true(touch(tmp, "kernels/spec.json"));
    assert_int_equal(cut_export_write(&set, tmp, "90", &e), -1);
    assert_non_null(strstr(e.msg, "not written by cutune export"));
    assert_int_equal(cut_clean(tmp, NULL, NULL, &e), 0);
    assert_true(exists(tmp, "kernels/spec.json"));
    assert_int_equal(cut_clean("/nonexistent/cutune", NULL, NULL, &e), -1);

    cut_export_set_free(&set);
    free(real);
    free(kdir);
    free(link);
    free(target);
    free(ko);
    free(res);
    free(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rename_entry),   cmocka_unit_test(test_rename_refuses), cmocka_unit_test(test_csv_row),
        cmocka_unit_test(test_load_and_write), cmocka_unit_test(test_load_refuses),   cmocka_unit_test(test_clean_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
