/* cutune export of optimized kernels (cut_export_optimized): a real `cutune optimize` run on the emulator (softmax_row,
 * and reduce_sum with its reference kernel and an accumulated output) exported and checked file by file: guards,
 * #undef lines, renamed entries (one definition each), launches, inputs bit-identical to cut_kspec_work, the
 * manifest; the headers compiled together by NVRTC for sm_90; driver.cu and launch.cu compiled by nvcc when it is
 * there; every refusal (no folder, no kernel, no measured best, no spec, a spec that moved or changed, an unmarked
 * kernels/opt); the best-is-the-baseline case; the entry renaming and header rules on their own; and the spec
 * snapshot (cut_kspec_to_json) round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/compile.h"
#include "cutune/export.h"
#include "cutune/util.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[4096];   /* the test's folder */
static char g_out[4200];   /* cutune optimize --outdir */
static char g_specs[4200]; /* the specs it optimized */
static int g_have;         /* the optimizer ran */

/* ---- helpers ---- */

static char *slurp(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    cut_err e = {{0}};
    if (cut_read_file(path, &text, &len, &e) != 0)
        fail_msg("%s", e.msg);
    return text;
}

static void write_str(const char *path, const char *text)
{
    cut_err e = {{0}};
    if (cut_write_file_atomic(path, text, strlen(text), &e) != 0)
        fail_msg("%s", e.msg);
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

static void sh(const char *fmt, ...)
{
    char cmd[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (system(cmd) != 0)
        fail_msg("command failed: %s", cmd);
}

/* A fresh copy of the optimizer's output folder as dir/name (the tests that break it work on copies). */
static void copy_out(const char *name, char *dst, size_t n)
{
    snprintf(dst, n, "%s/%s", g_dir, name);
    sh("rm -rf '%s' && cp -a '%s' '%s'", dst, g_out, dst);
}

static void need_optimizer(void)
{
    if (!g_have) {
        printf("the cutune binary (CUTUNE_BIN) is not there or cutune optimize failed: skipping\n");
        skip();
    }
}

/* ---- the optimizer's run, once ---- */

static int setup(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("export_kernel");
    if (!dir)
        return -1;
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    free(dir);
    snprintf(g_out, sizeof g_out, "%s/out", g_dir);
    snprintf(g_specs, sizeof g_specs, "%s/specs", g_dir);
    const char *bin = getenv("CUTUNE_BIN"), *fx = getenv("CUTUNE_FIXTURES");
    if (!bin || access(bin, X_OK) != 0)
        return 0;
    char cmd[16384];
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s' && cp '%s/../../kernels/'softmax_row.* '%s/../../kernels/'reduce_sum* '%s/' && "
             "COMPILE_CACHE_DIR='%s/cache' '%s' optimize --input '%s' --outdir '%s' --backend emu --no-llm "
             "--budget-builds 4 --sizes N=4096,ROWS=4,COLS=64 --quiet > '%s/optimize.log' 2>&1",
             g_specs, fx ? fx : "tests/fixtures", fx ? fx : "tests/fixtures", g_specs, g_dir, bin, g_specs, g_out,
             g_dir);
    g_have = system(cmd) == 0;
    if (!g_have)
        sh("cat '%s/optimize.log'", g_dir);
    return 0;
}

/* ---- the export ---- */

static void export_ok(const char *opt, const char *name, const char *dst, int want)
{
    cut_err e = {{0}};
    int n = -1;
    if (cut_export_optimized(opt, name, dst, "90", &n, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(n, want);
}

static void export_refused(const char *opt, const char *name, const char *dst, const char *arch, const char *why)
{
    cut_err e = {{0}};
    int n = -1;
    assert_int_equal(cut_export_optimized(opt, name, dst, arch, &n, &e), -1);
    assert_int_equal(n, 0);
    if (!strstr(e.msg, why))
        fail_msg("expected '%s' in: %s", why, e.msg);
}

/* The tunables a search recorded for a variant (control.json) as "#define NAME VALUE" lines. */
static void assert_defines(const char *header, const char *control, const char *const *names, int n)
{
    char *c = slurp(control);
    for (int i = 0; i < n; i++) {
        char key[64], line[96];
        snprintf(key, sizeof key, "\"%s\":\t", names[i]);
        const char *at = strstr(c, key);
        assert_non_null(at);
        snprintf(line, sizeof line, "#define %s %d\n", names[i], atoi(at + strlen(key)));
        assert_int_equal(count(header, line), 1);
        /* undefined twice: after a caller's macro of the name is saved (before the definition), and at the end,
         * after the code, before the caller's is restored */
        char def[96], pop[96];
        snprintf(def, sizeof def, "#define %s ", names[i]);
        snprintf(pop, sizeof pop, "#pragma pop_macro(\"%s\")\n", names[i]);
        snprintf(line, sizeof line, "#undef %s\n", names[i]);
        assert_int_equal(count(header, line), 2);
        const char *first = strstr(header, line), *last = strstr(first + 1, line);
        assert_true(first < strstr(header, def));
        assert_true(last > strstr(header, "} // namespace")); /* at the end, after the code */
        assert_true(strstr(header, pop) > last);
    }
    free(c);
}

/* Guard, namespace, one definition of the renamed entry and none of the original. */
static void assert_header(const char *path, const char *guard, const char *ns, const char *entry, const char *orig)
{
    char *h = slurp(path), want[512];
    snprintf(want, sizeof want, "#ifndef %s\n#define %s\n", guard, guard);
    assert_non_null(strstr(h, want));
    snprintf(want, sizeof want, "#endif // %s\n", guard);
    assert_non_null(strstr(h, want));
    snprintf(want, sizeof want, "namespace %s {\n", ns);
    assert_int_equal(count(h, want), 1);
    snprintf(want, sizeof want, "__global__ void %s(", entry);
    assert_int_equal(count(h, want), 1);
    snprintf(want, sizeof want, "void %s(", orig);
    assert_int_equal(count(h, want), 0);
    free(h);
}

static void test_export_layout(void **state)
{
    (void)state;
    need_optimizer();
    char dst[4300], p[4600];
    snprintf(dst, sizeof dst, "%s/exp", g_dir);
    export_ok(g_out, NULL, dst, 2);
    snprintf(p, sizeof p, "%s/kernels/opt/%s", dst, CUT_EXPORT_MARKER);
    assert_true(cut_path_exists(p));
    const char *files[] = {"baseline.cuh", "best.cuh", "launch.h", "launch.cu", "driver.cu", "CMakeLists.txt",
                           "README.md", "inputs/manifest.txt", "inputs/x.bin"};
    const char *kernels[] = {"softmax_row", "reduce_sum"};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < CUT_ARRAY_LEN(files); i++) {
            snprintf(p, sizeof p, "%s/kernels/opt/%s/%s", dst, kernels[k], files[i]);
            if (!cut_path_exists(p))
                fail_msg("missing %s", p);
        }
    /* the reference kernel only where the spec has one */
    snprintf(p, sizeof p, "%s/kernels/opt/reduce_sum/reference.cuh", dst);
    assert_true(cut_path_exists(p));
    assert_header(p, "CUTUNE_OPT_REDUCE_SUM_REFERENCE_CUH", "cutune_opt_reduce_sum_reference", "reduce_sum_reference",
                  "reduce_sum_ref");
    snprintf(p, sizeof p, "%s/kernels/opt/softmax_row/reference.cuh", dst);
    assert_false(cut_path_exists(p));
    /* headers: guard, namespace, the renamed entry defined once, the tunables the search measured, #undef'd */
    static const char *const tun[] = {"BLOCK", "VEC"};
    char best[256] = "", ctl[4600];
    snprintf(p, sizeof p, "%s/kernels/_softmax_row/best", g_out);
    assert_true(readlink(p, best, sizeof best - 1) > 0);
    snprintf(ctl, sizeof ctl, "%s/kernels/_softmax_row/%s/control.json", g_out, best);
    snprintf(p, sizeof p, "%s/kernels/opt/softmax_row/best.cuh", dst);
    assert_header(p, "CUTUNE_OPT_SOFTMAX_ROW_BEST_CUH", "cutune_opt_softmax_row_best", "softmax_row_best",
                  "softmax_row");
    char *h = slurp(p);
    if (strcmp(best, "baseline") != 0)
        assert_defines(h, ctl, tun, 2);
    free(h);
    snprintf(p, sizeof p, "%s/kernels/opt/softmax_row/baseline.cuh", dst);
    assert_header(p, "CUTUNE_OPT_SOFTMAX_ROW_BASELINE_CUH", "cutune_opt_softmax_row_baseline",
                  "softmax_row_baseline", "softmax_row");
    h = slurp(p);
    assert_non_null(strstr(h, "#define BLOCK 128\n#define VEC 1\n")); /* each tunable's first value */
    assert_non_null(strstr(h, "#undef BLOCK\n#undef VEC\n"));
    free(h);
    /* the launcher has the best's launch as the search recorded it */
    if (strcmp(best, "baseline") != 0) {
        char *c = slurp(ctl), *l;
        snprintf(p, sizeof p, "%s/kernels/opt/softmax_row/launch.cu", dst);
        l = slurp(p);
        const char *g = strstr(c, "\"grid\":\t["), *b = strstr(c, "\"block\":\t["), *s = strstr(c, "\"smem\":\t");
        assert_true(g && b && s);
        char want[256];
        snprintf(want, sizeof want, "dim3(%du, 1u, 1u), dim3(%du, 1u, 1u), %du,", atoi(g + 9), atoi(b + 10),
                 atoi(s + 8));
        if (!strstr(l, want))
            fail_msg("launch.cu lacks '%s'", want);
        assert_int_equal(count(l, "int launch_softmax_row_best(const float *x, float *y, int32_t cols"), 1);
        free(c);
        free(l);
    }
    snprintf(p, sizeof p, "%s/kernels/opt/reduce_sum/driver.cu", dst);
    h = slurp(p);
    assert_non_null(strstr(h, "{\"out\", DT_F32, 1, true, true},")); /* accumulated: zeroed, not poisoned */
    assert_non_null(strstr(h, "return launch_reduce_sum_reference("));
    free(h);
    snprintf(p, sizeof p, "%s/kernels/opt/softmax_row/README.md", dst);
    h = slurp(p);
    assert_non_null(strstr(h, "softmax_row best: Y ms, speedup Z"));
    assert_non_null(strstr(h, "host-emulation times"));
    free(h);
    /* exporting again replaces the earlier export */
    export_ok(g_out, "softmax_row", dst, 1);
}

/* The manifest names every input with the spec's dtype, elements and bytes, and each file holds set 0 exactly. */
static void test_inputs_and_manifest(void **state)
{
    (void)state;
    need_optimizer();
    char dst[4300], p[4600];
    snprintf(dst, sizeof dst, "%s/exp_in", g_dir);
    export_ok(g_out, NULL, dst, 2);
    const char *kernels[] = {"softmax_row", "reduce_sum"};
    for (int k = 0; k < 2; k++) {
        cut_kspec spec;
        cut_work w;
        cut_err e = {{0}};
        snprintf(p, sizeof p, "%s/kernels/_%s/spec.json", g_out, kernels[k]);
        if (cut_kspec_load(p, &spec, &e) != 0 || cut_kspec_work(&spec, &w, &e) != 0)
            fail_msg("%s", e.msg);
        cut_ks_launch l;
        assert_int_equal(cut_kspec_resolve(&spec, NULL, &l, &e), 0);
        snprintf(p, sizeof p, "%s/kernels/opt/%s/inputs/manifest.txt", dst, kernels[k]);
        char *m = slurp(p);
        int lines = 0;
        for (char *save = NULL, *line = strtok_r(m, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            if (line[0] == '#')
                continue;
            char name[64], dt[16];
            size_t elems = 0, bytes = 0;
            assert_int_equal(sscanf(line, "%63s %15s %zu %zu", name, dt, &elems, &bytes), 4);
            assert_string_equal(name, spec.inputs[lines].name);
            assert_string_equal(dt, cut_elem_name(spec.inputs[lines].dtype));
            assert_true(elems == l.in_elems[lines]);
            assert_true(bytes == elems * cut_elem_size(spec.inputs[lines].dtype));
            snprintf(p, sizeof p, "%s/kernels/opt/%s/inputs/%s.bin", dst, kernels[k], name);
            char *data = NULL;
            size_t len = 0;
            assert_int_equal(cut_read_file(p, &data, &len, &e), 0);
            assert_true(len == bytes);
            assert_memory_equal(data, w.bufs[lines].data[0], bytes); /* what cutune validated with */
            free(data);
            lines++;
        }
        assert_int_equal(lines, spec.ninputs);
        assert_int_equal(lines, 1);
        free(m);
        cut_kspec_work_free(&w);
        cut_kspec_free(&spec);
    }
    /* the sizes are the run's (--sizes), not the spec file's */
    snprintf(p, sizeof p, "%s/kernels/opt/softmax_row/inputs/manifest.txt", dst);
    char *m = slurp(p);
    assert_non_null(strstr(m, "\nx f32 256 1024\n"));
    free(m);
}

/* best.cuh and baseline.cuh (and reference.cuh) compose: all of them, each twice, in one NVRTC compile for sm_90,
 * and no tunable is defined after them. */
static void test_headers_compose_nvrtc(void **state)
{
    (void)state;
    need_optimizer();
    cut_err e = {{0}};
    if (cut_nvrtc_version(&e) < 0) {
        printf("NVRTC unavailable (%s): skipping\n", e.msg);
        skip();
    }
    char dst[4300], p[4600];
    snprintf(dst, sizeof dst, "%s/exp_nvrtc", g_dir);
    export_ok(g_out, NULL, dst, 2);
    const char *kernels[] = {"softmax_row", "reduce_sum"};
    const char *files[] = {"best.cuh", "baseline.cuh", "reference.cuh"};
    cut_buf src;
    cut_buf_init(&src);
    for (int twice = 0; twice < 2; twice++)
        for (int k = 0; k < 2; k++)
            for (int f = 0; f < 3; f++) {
                snprintf(p, sizeof p, "%s/kernels/opt/%s/%s", dst, kernels[k], files[f]);
                if (!cut_path_exists(p))
                    continue;
                char *h = slurp(p);
                cut_buf_printf(&src, "%s\n", h);
                free(h);
            }
    cut_buf_printf(&src, "#if defined(BLOCK) || defined(VEC) || defined(ITEMS)\n#error a tunable leaked\n#endif\n"
                         "extern \"C\" __global__ void probe(float *y) { y[0] = 1.0f; }\n");
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    o.nthreads = 1;
    cut_compiled c;
    assert_int_equal(cut_compile_one(src.data, "composed.cu", &o, &c, &e), 0);
    if (!c.ok)
        fail_msg("NVRTC refused the composed headers:\n%s", c.log);
    cut_compiled_free(&c);
    cut_buf_free(&src);
}

static const char *find_nvcc(void)
{
    static char path[4096];
    const char *env = getenv("PATH");
    char buf[8192];
    snprintf(buf, sizeof buf, "%s", env ? env : "");
    for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(path, sizeof path, "%s/nvcc", d);
        if (access(path, X_OK) == 0)
            return path;
    }
    snprintf(path, sizeof path, "/usr/local/cuda/bin/nvcc");
    return access(path, X_OK) == 0 ? path : NULL;
}

/* The host side compiles: driver.cu and launch.cu with nvcc (no GPU needed), when nvcc is there. */
static void test_driver_compiles_nvcc(void **state)
{
    (void)state;
    need_optimizer();
    const char *nvcc = find_nvcc();
    if (!nvcc) {
        printf("nvcc is not on PATH nor in /usr/local/cuda/bin: skipping the host compile of driver.cu\n");
        skip();
    }
    char dst[4300];
    snprintf(dst, sizeof dst, "%s/exp_nvcc", g_dir);
    export_ok(g_out, NULL, dst, 2);
    const char *kernels[] = {"softmax_row", "reduce_sum"};
    for (int k = 0; k < 2; k++)
        for (int f = 0; f < 2; f++)
            sh("cd '%s/kernels/opt/%s' && '%s' -std=c++17 -arch=sm_90 -I. -c %s -o /dev/null", dst, kernels[k], nvcc,
               f ? "launch.cu" : "driver.cu");
}

/* ---- refusals ---- */

static void test_refusals(void **state)
{
    (void)state;
    char dst[4300], bad[4300], p[4600];
    snprintf(dst, sizeof dst, "%s/exp_refused", g_dir);
    snprintf(bad, sizeof bad, "%s/no_such_folder", g_dir);
    export_refused(bad, NULL, dst, "90", "no_such_folder");
    snprintf(bad, sizeof bad, "%s/empty", g_dir);
    sh("mkdir -p '%s/kernels'", bad);
    export_refused(bad, NULL, dst, "90", "holds no optimized kernel");
    need_optimizer();
    export_refused(g_out, "nope", dst, "90", "has no optimized kernel 'nope'");
    export_refused(g_out, NULL, dst, "sm_90", "not a CUDA architecture");
    /* no measured best: the baseline never finished (no state), or the best's result is not ok */
    copy_out("nobest", bad, sizeof bad);
    snprintf(p, sizeof p, "%s/kernels/_softmax_row/search_state.json", bad);
    assert_int_equal(unlink(p), 0);
    export_refused(bad, "softmax_row", dst, "90", "no measured best");
    export_refused(bad, NULL, dst, "90", "no measured best");
    copy_out("failedbest", bad, sizeof bad);
    snprintf(p, sizeof p, "%s/kernels/_softmax_row/search_state.json", bad);
    char *s = slurp(p), *at = strstr(s, "\"best\":\t\"");
    assert_non_null(at);
    char best[32];
    snprintf(best, sizeof best, "%.5s", at + 9);
    free(s);
    if (strcmp(best, "basel") != 0) {
        snprintf(p, sizeof p, "%s/kernels/_softmax_row/variants/%s/result.json", bad, best);
        write_str(p, "{\"status\": \"wrong_result\", \"error\": \"y[0] = nan\"}");
        export_refused(bad, "softmax_row", dst, "90", "no measured best");
    }
    /* the refusals wrote nothing */
    assert_false(cut_path_exists(dst));
    /* kernels/opt that cutune did not write */
    sh("mkdir -p '%s/kernels/opt'", dst);
    export_refused(g_out, NULL, dst, "90", "was not written by cutune export");
}

/* The spec: spec.json first; without it the --input and --sizes of summary.json's command; refusals when neither
 * is there, the path is gone, or the spec no longer reproduces the search. */
static void test_spec_sources(void **state)
{
    (void)state;
    need_optimizer();
    char opt[4300], dst[4300], p[4600];
    snprintf(dst, sizeof dst, "%s/exp_spec", g_dir);
    copy_out("nospec", opt, sizeof opt);
    snprintf(p, sizeof p, "%s/kernels/_softmax_row/spec.json", opt);
    assert_int_equal(unlink(p), 0);
    /* the recorded path still exists: the spec comes from there, with the run's --sizes */
    export_ok(opt, "softmax_row", dst, 1);
    snprintf(p, sizeof p, "%s/kernels/opt/softmax_row/inputs/manifest.txt", dst);
    char *m = slurp(p);
    assert_non_null(strstr(m, "\nx f32 256 1024\n"));
    free(m);
    snprintf(p, sizeof p, "%s/kernels/opt/softmax_row/README.md", dst);
    m = slurp(p);
    assert_non_null(strstr(m, "specs/softmax_row.json"));
    free(m);
    /* without the --sizes the spec resolves another launch: refused as changed */
    snprintf(p, sizeof p, "%s/summary.json", opt);
    char *s = slurp(p), *at = strstr(s, " --sizes ");
    assert_non_null(at);
    memcpy(at, " --nosize", 9);
    write_str(p, s);
    export_refused(opt, "softmax_row", dst, "90", "changed");
    /* the recorded path is gone */
    at = strstr(s, " --input ");
    assert_non_null(at);
    memcpy(at + 9, "/nonexistent/", 13);
    write_str(p, s);
    free(s);
    export_refused(opt, "softmax_row", dst, "90", "no longer exists");
    /* nothing records it */
    assert_int_equal(unlink(p), 0);
    export_refused(opt, "softmax_row", dst, "90", "nothing records the spec");
    /* spec.json of another source: the baseline is not the spec's */
    copy_out("otherspec", opt, sizeof opt);
    snprintf(p, sizeof p, "%s/kernels/_softmax_row/spec.json", opt);
    s = slurp(p);
    at = strstr(s, "float m = -3.402823466e38f;");
    assert_non_null(at);
    memcpy(at, "float m = -3.402823466e37f;", 27);
    write_str(p, s);
    free(s);
    export_refused(opt, "softmax_row", dst, "90", "the spec changed since the search");
}

/* A search whose best is the baseline: best.cuh is the baseline's source under the best's names, and README says so. */
static void test_best_is_baseline(void **state)
{
    (void)state;
    need_optimizer();
    char opt[4300], dst[4300], p[4600];
    snprintf(dst, sizeof dst, "%s/exp_base", g_dir);
    copy_out("basebest", opt, sizeof opt);
    snprintf(p, sizeof p, "%s/kernels/_softmax_row/search_state.json", opt);
    char *s = slurp(p), *at = strstr(s, "\"best\":\t\"");
    assert_non_null(at);
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_append(&b, s, (size_t)(at - s));
    cut_buf_printf(&b, "\"best\":\t\"baseline\"%s", strchr(at + 9, '"') + 1);
    write_str(p, b.data);
    cut_buf_free(&b);
    free(s);
    export_ok(opt, "softmax_row", dst, 1);
    snprintf(p, sizeof p, "%s/kernels/opt/softmax_row/best.cuh", dst);
    assert_header(p, "CUTUNE_OPT_SOFTMAX_ROW_BEST_CUH", "cutune_opt_softmax_row_best", "softmax_row_best",
                  "softmax_row");
    s = slurp(p);
    assert_non_null(strstr(s, "#define BLOCK 128\n#define VEC 1\n"));
    free(s);
    snprintf(p, sizeof p, "%s/kernels/opt/softmax_row/README.md", dst);
    s = slurp(p);
    assert_non_null(strstr(s, "exported twice"));
    free(s);
}

/* ---- the rules on their own ---- */

static void test_rename_user_entry(void **state)
{
    (void)state;
    cut_err e = {{0}};
    char *out = NULL;
    static const char src[] = "// k(int) is the entry; \"k(\" in a string stays\n"
                              "extern \"C\" __global__ void k(float *y);\n"
                              "__device__ int k_helper(int k2) { return k2; }\n"
                              "extern \"C\" __global__ void k(float *y /* k( */)\n"
                              "{ const char *s = \"k\"; y[0] = 1; }\n";
    assert_int_equal(cut_export_rename_user_entry(src, "k", "k_best", &out, &e), 0);
    assert_int_equal(count(out, "void k_best("), 2); /* the declaration and the definition */
    assert_int_equal(count(out, "void k("), 0);
    assert_non_null(strstr(out, "// k(int) is the entry; \"k(\" in a string stays\n")); /* comments untouched */
    assert_non_null(strstr(out, "/* k( */"));
    assert_non_null(strstr(out, "\"k\""));
    assert_non_null(strstr(out, "k_helper(int k2)"));
    free(out);
    /* refusals: no definition, two, a name in use, not an identifier */
    assert_int_equal(cut_export_rename_user_entry("void k(float *y);\n", "k", "k_best", &out, &e), -1);
    assert_non_null(strstr(e.msg, "found 0"));
    assert_int_equal(cut_export_rename_user_entry("void k() {}\nvoid k(int) {}\n", "k", "k_best", &out, &e), -1);
    assert_non_null(strstr(e.msg, "found 2"));
    assert_int_equal(cut_export_rename_user_entry("int k_best;\nvoid k() {}\n", "k", "k_best", &out, &e), -1);
    assert_non_null(strstr(e.msg, "already uses"));
    assert_int_equal(cut_export_rename_user_entry("void k() {}\n", "k", "k best", &out, &e), -1);
    assert_null(out);
}

static void test_header_rules(void **state)
{
    (void)state;
    cut_err e = {{0}};
    char *h = NULL;
    static const char src[] = CUT_KST_BEGIN "\n#define TILE 8\n" CUT_KST_END "\n"
                              "#include <cuda_fp16.h>\n"
                              "#if TILE > 4\n#include <cuda_bf16.h>\n#define WIDE 1\n#endif\n"
                              "/* #include <not_a_directive.h>\n#define NOT_A_MACRO 1 */\n"
                              "#define SQ(x) \\\n  ((x) * (x))\n"
                              "__device__ float helper(float v) { return SQ(v); }\n"
                              "extern \"C\" __global__ void kern(float *y) { y[0] = helper(TILE); }\n";
    assert_int_equal(cut_export_opt_header(src, "kern", "kern_best", "ns_best", "GUARD_H", "banner line", &h, &e), 0);
    assert_true(strncmp(h, "// banner line\n#ifndef GUARD_H\n#define GUARD_H\n", 46) == 0);
    /* the top-level #include before the namespace, the conditional one left in place */
    const char *ns = strstr(h, "namespace ns_best {");
    assert_non_null(ns);
    assert_true(strstr(h, "#include <cuda_fp16.h>") < ns);
    assert_true(strstr(h, "#include <cuda_bf16.h>") > ns);
    assert_true(strstr(h, "#define TILE 8") < ns);
    /* every macro defined in code #undef'd at the end, tunables first; the commented one is not a macro */
    assert_non_null(strstr(h, "#undef TILE\n#undef WIDE\n#undef SQ\n#pragma pop_macro(\"TILE\")\n"
                              "#pragma pop_macro(\"WIDE\")\n#pragma pop_macro(\"SQ\")\n\n#endif // GUARD_H\n"));
    /* a caller's macros of those names are saved before the header defines them */
    const char *push = strstr(h, "#pragma push_macro(\"TILE\")\n#undef TILE\n");
    assert_non_null(push);
    assert_true(push < strstr(h, "#define TILE"));
    assert_null(strstr(h, "#undef NOT_A_MACRO"));
    assert_int_equal(count(h, "void kern_best("), 1);
    free(h);
    /* a source without the tunables header is refused */
    assert_int_equal(cut_export_opt_header("__global__ void kern() {}\n", "kern", "kern_best", "n", "G", NULL, &h, &e),
                     -1);
    assert_non_null(strstr(e.msg, "tunables header"));
}

/* cut_kspec_to_json gives back the same spec: inline sources, overridden sizes, reference, accumulate, payloads,
 * float scalars, uniform ranges. */
static void test_spec_snapshot_roundtrip(void **state)
{
    (void)state;
    static const char spec[] =
        "{\"name\": \"t\", \"language\": \"cuda\", \"entry\": \"k\","
        "\"source\": \"extern \\\"C\\\" __global__ void k(const float *x, const int *d, float *y, float a, int n) "
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) atomicAdd(y, a * x[i] + d[i % 4]); }\","
        "\"sizes\": {\"N\": 512, \"M\": 3}, \"tunables\": {\"BLOCK\": [64, 128, 256]},"
        "\"launch\": {\"grid\": [\"cdiv(N, BLOCK)\"], \"block\": [\"BLOCK\"], \"smem\": \"BLOCK * 4\"},"
        "\"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"N\"], \"init\": \"uniform\", \"lo\": 0.25,"
        " \"hi\": 2.5, \"seed\": 7}, {\"name\": \"d\", \"dtype\": \"i32\", \"shape\": [4], \"data\": "
        "\"AQAAAAIAAAADAAAABAAAAA==\", \"encoding\": \"base64\"}],"
        "\"outputs\": [{\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [1], \"accumulate\": true}],"
        "\"scalars\": [{\"name\": \"a\", \"dtype\": \"f32\", \"value\": 0.75}, {\"name\": \"n\", \"dtype\": \"i32\","
        " \"value\": \"N\"}], \"args\": [\"x\", \"d\", \"y\", \"a\", \"n\"], \"tolerance\": {\"atol\": 1e-7, \"rtol\": "
        "3e-5}, \"reference\": {\"source\": \"extern \\\"C\\\" __global__ void r(const float *x, const int *d, "
        "float *y, float a, int n) { }\", \"entry\": \"r\"}}";
    cut_kspec a, b;
    cut_err e = {{0}};
    if (cut_kspec_parse(spec, strlen(spec), NULL, &a, &e) != 0 || cut_kspec_set_size(&a, "N", 1000, &e) != 0)
        fail_msg("%s", e.msg);
    char *json = NULL;
    assert_int_equal(cut_kspec_to_json(&a, "/somewhere/t.json", &json, &e), 0);
    if (cut_kspec_parse(json, strlen(json), "/nonexistent", &b, &e) != 0)
        fail_msg("%s\n%s", e.msg, json);
    assert_non_null(strstr(json, "\"snapshot_of\":\t\"/somewhere/t.json\""));
    assert_string_equal(a.source, b.source);
    assert_string_equal(a.ref_source, b.ref_source);
    assert_string_equal(b.ref_entry, "r");
    assert_int_equal(b.nsizes, 2);
    assert_true(b.sizes[0].value == 1000 && b.sizes[1].value == 3);
    assert_true(b.tunables[0].nvalues == 3 && b.tunables[0].values[2] == 256);
    assert_string_equal(b.smem, "BLOCK * 4");
    assert_true(b.inputs[0].init == CUT_KS_UNIFORM && b.inputs[0].lo == 0.25 && b.inputs[0].hi == 2.5);
    assert_true(b.inputs[0].seed == 7);
    assert_true(b.inputs[1].payload_bytes == 16 && memcmp(a.inputs[1].payload, b.inputs[1].payload, 16) == 0);
    assert_true(b.outputs[0].accumulate);
    assert_true(b.scalars[0].is_number && b.scalars[0].number == 0.75);
    assert_string_equal(b.scalars[1].value, "N");
    assert_true(b.atol == 1e-7 && b.rtol == 3e-5);
    /* the same work: inputs, bit for bit */
    cut_work wa, wb;
    assert_int_equal(cut_kspec_work(&a, &wa, &e), 0);
    assert_int_equal(cut_kspec_work(&b, &wb, &e), 0);
    for (int i = 0; i < wa.nbufs; i++)
        if (!wa.bufs[i].is_output)
            assert_memory_equal(wa.bufs[i].data[0], wb.bufs[i].data[0],
                                wa.bufs[i].elems * cut_elem_size(wa.bufs[i].dtype));
    cut_kspec_work_free(&wa);
    cut_kspec_work_free(&wb);
    free(json);
    cut_kspec_free(&a);
    cut_kspec_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rename_user_entry),    cmocka_unit_test(test_header_rules),
        cmocka_unit_test(test_spec_snapshot_roundtrip), cmocka_unit_test(test_export_layout),
        cmocka_unit_test(test_inputs_and_manifest),  cmocka_unit_test(test_headers_compose_nvrtc),
        cmocka_unit_test(test_driver_compiles_nvcc), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_spec_sources),         cmocka_unit_test(test_best_is_baseline),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
