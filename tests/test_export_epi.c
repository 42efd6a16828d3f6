/* cutune export of tensor-core and fused-epilogue conv kernels (issue 20). Tuning results of igemm_tc kernels in
 * fp16 NHWC with bias and ReLU, tf32 NCHW with bias (split-K), bf16 NCHW with bias and ReLU and bf16 NHWC without an
 * epilogue, beside an fp32 NCHW kernel, are exported, and:
 *   - the launchers and the one header take each kernel's types and the bias after out, the fp32 kernel's as before;
 *   - the driver tables each case's dtype, layout and epilogue and calls the other kernels through adapters;
 *   - the driver's host part (its input generator, bias, rounding, reference, tolerance and check), compiled with
 *     the host compiler, makes inputs and a bias bit-identical to cutune's work and a reference equal to cutune's;
 *   - each exported kernel header, run on the host emulator on those inputs, passes the driver's own check, and
 *     fails it with the bias left out (the check includes the epilogue);
 *   - the headers compile together with NVRTC for sm_90, and the project builds with cmake + nvcc where nvcc is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/compile.h"
#include "cutune/emu.h"
#include "cutune/export.h"
#include "conv_records.h"
#include "testutil.h"
#include "export_testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Case i + 1 of the export, with its template and a knob that must be above 1 (NULL: any schedule). */
static const struct {
    cut_conv c;
    const char *tpl, *knob;
} k_cases[] = {
    {{1, 8, 8, 16, 8, 3, 3, 1, 1, CUT_DT_FP16, CUT_NHWC, CUT_EPI_BIAS_RELU}, "igemm_tc", NULL},
    {{1, 9, 7, 24, 16, 3, 3, 2, 1, CUT_DT_TF32, CUT_NCHW, CUT_EPI_BIAS}, "igemm_tc", "splitk"},
    {{2, 6, 6, 16, 8, 1, 1, 1, 0, CUT_DT_BF16, CUT_NCHW, CUT_EPI_BIAS_RELU}, "igemm_tc", NULL},
    {{1, 8, 8, 16, 8, 3, 3, 1, 1, CUT_DT_BF16, CUT_NHWC, CUT_EPI_NONE}, "igemm_tc", NULL},
    {{1, 8, 8, 8, 4, 3, 3, 1, 1}, "direct", NULL},
};
#define NCASES ((int)CUT_ARRAY_LEN(k_cases))

static char g_dir[4096], g_out[4200], g_prog[4300]; /* the test's folder, the export, the driver's host program */
static cut_export_set g_set;

static char *slurp(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    cut_err e = {{0}};
    if (cut_read_file(path, &text, &len, &e) != 0)
        fail_msg("%s", e.msg);
    return text;
}

static char *slurp_rel(const char *rel)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", g_out, rel);
    return slurp(p);
}

/* The driver's host part as a program: `prog gen DIR <case fields> SEED` writes DIR/in.bin, w.bin, bias.bin (the
 * storage type's bytes) and ref.bin (doubles); `prog check DIR <case fields> SEED` checks DIR/out.bin (the output
 * type's bytes) with the driver's tolerance and compare, printing the outputs outside it, exit 1 if any. */
static const char prog_main[] =
    "static void put(const char *dir, const char *name, const void *p, size_t n)\n{\n"
    "    char path[4096];\n    snprintf(path, sizeof path, \"%s/%s\", dir, name);\n"
    "    FILE *f = fopen(path, \"wb\");\n    if (!f || fwrite(p, 1, n, f) != n) exit(3);\n    fclose(f);\n}\n"
    "int main(int argc, char **argv)\n{\n"
    "    if (argc != 17) return 2;\n"
    "    int v[13];\n    for (int i = 0; i < 13; i++) v[i] = atoi(argv[3 + i]);\n"
    "    const conv_case c = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12]};\n"
    "    const uint64_t seed = strtoull(argv[16], nullptr, 10);\n"
    "    std::vector<float> in, w, bias;\n    std::vector<double> ref;\n"
    "    make_inputs(c, seed, in, w, bias);\n    reference(c, in, w, bias, ref);\n"
    "    if (!strcmp(argv[1], \"gen\")) {\n"
    "        std::vector<unsigned char> b;\n"
    "        pack(c.dtype, in, b); put(argv[2], \"in.bin\", b.data(), b.size());\n"
    "        pack(c.dtype, w, b); put(argv[2], \"w.bin\", b.data(), b.size());\n"
    "        pack(c.dtype, bias, b); put(argv[2], \"bias.bin\", b.data(), b.size());\n"
    "        put(argv[2], \"ref.bin\", ref.data(), ref.size() * sizeof(double));\n"
    "        return 0;\n    }\n"
    "    const int out_dt = elem_bytes(c.dtype) == 2 ? c.dtype : DT_FP32;\n"
    "    std::vector<unsigned char> bytes(ref.size() * elem_bytes(out_dt));\n"
    "    char path[4096];\n    snprintf(path, sizeof path, \"%s/out.bin\", argv[2]);\n"
    "    FILE *f = fopen(path, \"rb\");\n"
    "    if (!f || fread(bytes.data(), 1, bytes.size(), f) != bytes.size()) return 3;\n    fclose(f);\n"
    "    std::vector<double> out;\n    unpack(out_dt, bytes.data(), ref.size(), out);\n"
    "    double atol, rtol, maxe = 0;\n    tolerance(c, 1.0, &atol, &rtol);\n"
    "    const size_t bad = compare(c.id, 1, out, ref, atol, rtol, &maxe);\n"
    "    printf(\"bad %zu of %zu, max_abs_err %.3g\\n\", bad, out.size(), maxe);\n"
    "    return bad ? 1 : 0;\n}\n";

static int setup(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("export_epi");
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    free(dir);
    char res[4300];
    snprintf(res, sizeof res, "%s/tuningresults", g_dir);
    snprintf(g_out, sizeof g_out, "%s/exp", g_dir);
    cut_err e = {{0}};
    assert_int_equal(cut_mkdirs(res, &e), 0);
    for (int i = 0; i < NCASES; i++) {
        const cut_sched s = tr_conv_sched(&k_cases[i].c, k_cases[i].tpl, k_cases[i].knob, 11);
        tr_add_conv(res, i + 1, &k_cases[i].c, &s, 0.01 * (i + 1), CUT_ST_OK, "cuda", "", "");
    }
    if (cut_export_load(res, &g_set, &e) != 0 || cut_export_write(&g_set, g_out, "90", &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(g_set.n, NCASES);
    /* the driver's host part as a program of the host compiler */
    char src[4400], cmd[9000];
    snprintf(src, sizeof src, "%s/host.cpp", g_dir);
    snprintf(g_prog, sizeof g_prog, "%s/host", g_dir);
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_printf(&b, "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n#include <cstdio>\n"
                       "#include <cstdlib>\n#include <cstring>\n#include <vector>\n\n%s%s%s",
                   cut_export_rng_text, cut_export_conv_host_text, prog_main);
    assert_int_equal(cut_write_file_atomic(src, b.data, b.len, &e), 0);
    cut_buf_free(&b);
    const char *cxx = getenv("CUTUNE_HOST_CXX") ? getenv("CUTUNE_HOST_CXX") : "c++";
    snprintf(cmd, sizeof cmd, "'%s' -std=c++17 -O1 -Wall -Wextra -Werror -Wno-unused-function -o '%s' '%s'", cxx,
             g_prog, src);
    tu_sh(cmd);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cut_export_set_free(&g_set);
    return 0;
}

/* ---- the written texts ---- */

static void test_launchers_and_header(void **state)
{
    (void)state;
    char *h = slurp_rel("kernels/cutune_kernels.h");
    static const char *const want[] = {
        "int launch_case1_k1(const void *in, const void *w, void *out, const void *bias, cudaStream_t s);",
        "int launch_case1_k1_ws(const void *in, const void *w, void *out, const void *bias, void *workspace, "
        "cudaStream_t s);",
        "int launch_case2_k1(const float *in, const float *w, float *out, const float *bias, cudaStream_t s);",
        "int launch_case3_k1(const void *in, const void *w, void *out, const void *bias, cudaStream_t s);",
        "int launch_case4_k1(const void *in, const void *w, void *out, cudaStream_t s);",
        "int launch_case5_k1(const float *in, const float *w, float *out, cudaStream_t s);", /* as before */
        "int launch_case5_k1_ws(const float *in, const float *w, float *out, void *workspace, cudaStream_t s);",
        "// case 1 [1,8,8,16,8,3,3,1,1] fp16 NHWC, epilogue bias_relu kernel 1: igemm_tc",
        "// case 2 [1,9,7,24,16,3,3,2,1] tf32 NCHW, epilogue bias kernel 1: igemm_tc",
        "// case 4 [1,8,8,16,8,3,3,1,1] bf16 NHWC kernel 1: igemm_tc",
        "// case 5 [1,8,8,8,4,3,3,1,1] kernel 1: direct",
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(want); i++)
        if (!strstr(h, want[i]))
            fail_msg("cutune_kernels.h lacks '%s'", want[i]);
    free(h);
    /* the launches: the bias after out, before split-K's workspace; 16-bit types deduced from the kernel */
    char *k1 = slurp_rel("kernels/case1/kernel1.cu");
    assert_non_null(strstr(k1, "const auto f = cut_case1_k1::cut_conv2d_case1_k1; // its element types"));
    assert_non_null(strstr(k1, "cut_case1_k1::cut_conv2d_case1_k1<<<grid, block, smem, s>>>(cut_in(f, in), "
                               "cut_in(f, w), cut_out(f, out), cut_in(f, bias));"));
    assert_non_null(strstr(k1, "return launch_case1_k1_ws(in, w, out, bias, nullptr, s);"));
    free(k1);
    char *k2 = slurp_rel("kernels/case2/kernel1.cu");
    assert_non_null(strstr(k2, "cut_case2_k1::cut_conv2d_case2_k1<<<grid, block, smem, s>>>(in, w, out, bias, ws, "
                               "reinterpret_cast<unsigned *>(ws + k_partials));"));
    assert_non_null(strstr(k2, "return err ? err : launch_case2_k1_ws(in, w, out, bias, ws, s);"));
    assert_null(strstr(k2, "cut_in(")); /* fp32 storage: no casts */
    free(k2);
    char *k4 = slurp_rel("kernels/case4/kernel1.cu");
    assert_non_null(strstr(k4, "(cut_in(f, in), cut_in(f, w), cut_out(f, out));"));
    assert_null(strstr(k4, "bias"));
    free(k4);
    char *k5 = slurp_rel("kernels/case5/kernel1.cu");
    assert_non_null(strstr(k5, "cut_case5_k1::cut_conv2d_case5_k1<<<grid, block, smem, s>>>(in, w, out);"));
    free(k5);
    /* the generated kernel takes the bias as its fourth argument (what the launcher passes) */
    char *cuh = slurp_rel("kernels/case1/kernel1.cuh");
    assert_non_null(strstr(cuh, "#define EPI 2"));
    assert_non_null(strstr(cuh, "EPI_ARGS , const T *__restrict__ bias"));
    free(cuh);
}

static void test_driver_tables(void **state)
{
    (void)state;
    char *d = slurp_rel("kernels/driver.cu");
    static const char *const want[] = {
        "{1, 1, 8, 8, 16, 8, 3, 3, 1, 1, DT_FP16, NHWC, EPI_BIAS_RELU},",
        "{2, 1, 9, 7, 24, 16, 3, 3, 2, 1, DT_TF32, NCHW, EPI_BIAS},",
        "{3, 2, 6, 6, 16, 8, 1, 1, 1, 0, DT_BF16, NCHW, EPI_BIAS_RELU},",
        "{4, 1, 8, 8, 16, 8, 3, 3, 1, 1, DT_BF16, NHWC, EPI_NONE},",
        "{5, 1, 8, 8, 8, 4, 3, 3, 1, 1},", /* the default types: the row as before */
        "{1, 1, 1, nullptr, nullptr, launch_case1_k1_workspace_bytes, any_case1_k1, any_case1_k1_ws},",
        "{5, 1, 1, launch_case5_k1, launch_case5_k1_ws, launch_case5_k1_workspace_bytes},",
        "    return launch_case1_k1(in, w, out, bias, s);",
        "    return launch_case2_k1_ws(static_cast<const float *>(in), static_cast<const float *>(w), "
        "static_cast<float *>(out), static_cast<const float *>(bias), ws, s);",
        "    (void)bias; // no epilogue\n    return launch_case4_k1(in, w, out, s);",
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(want); i++)
        if (!strstr(d, want[i]))
            fail_msg("driver.cu lacks '%s'", want[i]);
    assert_null(strstr(d, "any_case5_k1")); /* the fp32 kernel needs no adapter */
    /* the host part the other tests compile is the driver's, verbatim */
    assert_non_null(strstr(d, cut_export_rng_text));
    assert_non_null(strstr(d, cut_export_conv_host_text));
    free(d);
}

/* ---- the driver's host part against cutune's work ---- */

/* Runs the host program (mode gen or check) for case i in dir; returns its exit status. */
static int run_prog(const char *mode, int i, const char *dir)
{
    const cut_conv *c = &k_cases[i].c;
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "'%s' %s '%s' %d %d %d %d %d %d %d %d %d %d %d %d %d 1 >'%s/%s.log' 2>&1", g_prog,
             mode, dir, i + 1, c->n, c->h, c->w, c->co, c->ci, c->kh, c->kw, c->stride, c->pad, (int)c->dtype,
             (int)c->layout, (int)c->epilogue, dir, mode);
    const int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void *read_bin(const char *dir, const char *name, size_t *n)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    char *text = NULL;
    cut_err e = {{0}};
    if (cut_read_file(p, &text, n, &e) != 0)
        fail_msg("%s", e.msg);
    return text;
}

static void case_dir(int i, char *dir, size_t n)
{
    snprintf(dir, n, "%s/case%d", g_dir, i + 1);
    cut_err e = {{0}};
    assert_int_equal(cut_mkdirs(dir, &e), 0);
}

/* The driver's enums are cutune's (the program gets cutune's numbers). */
static void test_enums_agree(void **state)
{
    (void)state;
    assert_int_equal(CUT_DT_FP32, 0);
    assert_int_equal(CUT_DT_TF32, 1);
    assert_int_equal(CUT_DT_FP16, 2);
    assert_int_equal(CUT_DT_BF16, 3);
    assert_int_equal(CUT_NCHW, 0);
    assert_int_equal(CUT_NHWC, 1);
    assert_int_equal(CUT_EPI_BIAS, 1);
    assert_int_equal(CUT_EPI_BIAS_RELU, 2);
    assert_non_null(strstr(cut_export_conv_host_text, "enum { DT_FP32, DT_TF32, DT_FP16, DT_BF16 };"));
    assert_non_null(strstr(cut_export_conv_host_text, "enum { NCHW, NHWC };"));
    assert_non_null(strstr(cut_export_conv_host_text, "enum { EPI_NONE, EPI_BIAS, EPI_BIAS_RELU };"));
}

/* Inputs and bias bit-identical to input set 0 of cutune's work of seed 1 (tune's default), and the reference
 * cutune's within one rounding of the output type (both sum in double, in another order). */
static void test_inputs_match_work(void **state)
{
    (void)state;
    for (int i = 0; i < NCASES; i++) {
        const cut_conv *c = &k_cases[i].c;
        char dir[4400];
        case_dir(i, dir, sizeof dir);
        assert_int_equal(run_prog("gen", i, dir), 0);
        cut_work w;
        cut_err e = {{0}};
        assert_int_equal(cut_conv_work(c, 1, &w, &e), 0);
        assert_int_equal(w.nbufs, c->epilogue != CUT_EPI_NONE ? 4 : 3);
        static const char *const files[4] = {"in.bin", "w.bin", NULL, "bias.bin"};
        for (int b = 0; b < w.nbufs; b++) {
            if (!files[b])
                continue;
            size_t n = 0;
            void *got = read_bin(dir, files[b], &n);
            const size_t want = w.bufs[b].elems * cut_elem_size(w.bufs[b].dtype);
            if (n != want || memcmp(got, w.bufs[b].data[0], n) != 0)
                fail_msg("case %d: %s differs from cutune's buffer '%s' (%zu bytes, want %zu)", i + 1, files[b],
                         w.bufs[b].name, n, want);
            free(got);
        }
        size_t n = 0;
        double *ref = read_bin(dir, "ref.bin", &n);
        const size_t out = w.bufs[2].elems;
        assert_int_equal(n, out * sizeof(double));
        float *mine = malloc(out * sizeof(float));
        cut_elem_to_floats(w.bufs[2].dtype, w.bufs[2].data[0], out, mine);
        const double ulp = c->dtype == CUT_DT_FP16 ? 0x1.0p-10 : c->dtype == CUT_DT_BF16 ? 0x1.0p-7 : 0x1.0p-23;
        size_t zeros = 0;
        for (size_t k = 0; k < out; k++) {
            if (fabs(ref[k] - mine[k]) > ulp * fabs(mine[k]) + 1e-30)
                fail_msg("case %d: reference %zu is %.9g, cutune's %.9g", i + 1, k, ref[k], (double)mine[k]);
            zeros += ref[k] == 0.0;
        }
        if (c->epilogue == CUT_EPI_BIAS_RELU) /* the ReLU is in it: about half the outputs are clamped */
            assert_true(zeros > out / 8);
        free(mine);
        free(ref);
        cut_work_free(&w);
    }
}

/* ---- the exported kernels on the emulator, checked by the driver's own check ---- */

/* Runs case i's exported kernel header on the emulator on the driver's inputs (the bias zeroed when drop_bias)
 * and writes its output to dir/out.bin. */
static void emulate(int i, const char *dir, int drop_bias)
{
    const cut_export_kernel *k = &g_set.k[i];
    char rel[128];
    snprintf(rel, sizeof rel, "kernels/case%d/kernel1.cuh", i + 1);
    char *hdr = slurp_rel(rel);
    cut_emu_kernel *ek = NULL;
    cut_err e = {{0}};
    if (cut_emu_compile(hdr, k->ks.entry, dir, &ek, &e) != 0)
        fail_msg("case %d: the exported header does not build for the emulator: %s", i + 1, e.msg);
    free(hdr);
    size_t nin = 0, nw = 0, nb = 0;
    void *in = read_bin(dir, "in.bin", &nin), *w = read_bin(dir, "w.bin", &nw), *bias = read_bin(dir, "bias.bin", &nb);
    if (drop_bias)
        memset(bias, 0, nb);
    const cut_conv *c = &k->conv;
    const size_t out_bytes = cut_conv_out_elems(c) * cut_elem_size(cut_conv_out_elem(c));
    void *out = malloc(out_bytes);
    memset(out, 0xff, out_bytes); /* poisoned, as the driver does */
    const size_t ws_bytes = cut_export_workspace_bytes(k);
    size_t floats = 0, counters = 0;
    cut_export_workspace(k, &floats, &counters);
    float *ws = ws_bytes ? calloc(1, ws_bytes) : NULL;
    void *args[6] = {in, w, out};
    int nargs = 3;
    if (c->epilogue != CUT_EPI_NONE)
        args[nargs++] = bias;
    if (ws) {
        args[nargs++] = ws;
        args[nargs++] = ws + floats;
    }
    if (cut_emu_launch(ek, k->ks.grid, k->ks.block, args, nargs, &e) != 0)
        fail_msg("case %d: emulated launch: %s", i + 1, e.msg);
    char p[4400];
    snprintf(p, sizeof p, "%s/out.bin", dir);
    assert_int_equal(cut_write_file_atomic(p, out, out_bytes, &e), 0);
    cut_emu_kernel_free(ek);
    free(in), free(w), free(bias), free(out), free(ws);
}

static void test_emulated_self_check(void **state)
{
    (void)state;
    for (int i = 0; i < NCASES; i++) {
        if (strcmp(k_cases[i].tpl, "igemm_tc") != 0)
            continue; /* the tensor-core kernels; the fp32 driver path is it_export's */
        char dir[4400];
        case_dir(i, dir, sizeof dir);
        assert_int_equal(run_prog("gen", i, dir), 0);
        emulate(i, dir, 0);
        const int ok = run_prog("check", i, dir);
        if (ok != 0) {
            char log[4500];
            snprintf(log, sizeof log, "%s/check.log", dir);
            char *t = slurp(log);
            fail_msg("case %d: the driver's check failed the exported kernel: %s", i + 1, t);
        }
        if (k_cases[i].c.epilogue == CUT_EPI_NONE)
            continue;
        emulate(i, dir, 1); /* the same kernel without its bias: the driver's check must see it */
        assert_int_equal(run_prog("check", i, dir), 1);
    }
}

/* ---- compilers ---- */

/* Every kernel header of the export, each twice, in one NVRTC compile for sm_90: they compose, epilogue or not. */
static void test_headers_nvrtc(void **state)
{
    (void)state;
    tu_need_nvrtc();
    cut_buf src;
    cut_buf_init(&src);
    for (int twice = 0; twice < 2; twice++)
        for (int i = 0; i < NCASES; i++) {
            char rel[128];
            snprintf(rel, sizeof rel, "kernels/case%d/kernel1.cuh", i + 1);
            char *h = slurp_rel(rel);
            cut_buf_printf(&src, "%s\n", h);
            free(h);
        }
    cut_buf_printf(&src, "#if defined(EPI) || defined(DT) || defined(NHWC)\n#error a kernel macro leaked\n#endif\n");
    tu_nvrtc_compiles(src.data, "epi_headers.cu");
    cut_buf_free(&src);
}

/* The whole project (launchers, the typed adapters, the driver) builds with cmake + nvcc alone. */
static void test_project_nvcc(void **state)
{
    (void)state;
    tu_cmake_nvcc_build(g_out, g_dir, "driver");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launchers_and_header), cmocka_unit_test(test_driver_tables),
        cmocka_unit_test(test_enums_agree),          cmocka_unit_test(test_inputs_match_work),
        cmocka_unit_test(test_emulated_self_check),  cmocka_unit_test(test_headers_nvrtc),
        cmocka_unit_test(test_project_nvcc),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
