/* cutune export of tuned GEMMs: loading tuningresults/gemm_*.json (mma.sync, wgmma and gemv schedules, fp16, NN and
 * NT; a gemv kernel with split-K, whose workspace is the module's),
 * refusing bad files, the written project (renamed entries, TMA maps encoded by the launcher, sm_90a), and, where
 * nvcc is installed, that the exported project builds with cmake + nvcc alone. Then every op at once: conv kernels
 * (a split-K one among them) and GEMMs, whose headers compose in one translation unit with each other, with Thrust
 * and with a caller's macros of the same names, and whose one header declares every launcher for C. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/export.h"
#include "cutune/gemm_record.h"
#include "cutune/gemm_space.h"
#include "cutune/record.h"
#include "conv_records.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static cut_sched valid_sched(const cut_gemm *g, int tpl, uint64_t seed)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng rng;
    cut_rng_seed(&rng, seed);
    cut_sched s;
    cut_err e = {{0}};
    assert_int_equal(cut_gemm_sched_sample_valid(g, &d, tpl, &rng, &s, 5000, &e), 0);
    return s;
}

/* Appends one record of g and s (status st, median ms) to path. */
static void add_record(const char *path, const cut_gemm *g, const cut_sched *s, cut_status st, double ms, int trial)
{
    cut_gemm_record r;
    memset(&r, 0, sizeof r);
    r.trial = trial;
    r.gemm = *g;
    r.sched = *s;
    r.status = st;
    r.median_ms = r.min_ms = r.max_ms = st == CUT_ST_OK ? ms : -1;
    r.gflops = st == CUT_ST_OK ? cut_gemm_gflops(g, ms) : 0;
    r.rel_err = -1;
    r.repeats = 5;
    r.regs = r.spills = -1;
    snprintf(r.env.backend, sizeof r.env.backend, "cuda");
    snprintf(r.ts, sizeof r.ts, "2026-12-06T00:00:00Z");
    cut_buf b;
    cut_buf_init(&b);
    cut_gemm_record_to_json(&r, &b);
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fwrite(b.data, 1, b.len, f);
    fclose(f);
    cut_buf_free(&b);
}

static void results_path(char *buf, size_t n, const char *dir, const cut_gemm *g)
{
    char name[128];
    cut_gemm_name(g, name, sizeof name);
    snprintf(buf, n, "%s/%s.json", dir, name);
}

static char *read_all(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    cut_err e = {{0}};
    assert_int_equal(cut_read_file(path, &text, &len, &e), 0);
    return text;
}

static void test_export_mma_and_wgmma(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("export_gemm");
    char res[1024], out[1024], path[2048];
    snprintf(res, sizeof res, "%s/tuningresults", dir);
    snprintf(out, sizeof out, "%s/exp", dir);
    cut_err e = {{0}};
    assert_int_equal(cut_mkdirs(res, &e), 0);
    const cut_gemm nn = {256, 192, 128, CUT_GEMM_NN, CUT_DT_FP16}, nt = {200, 136, 72, CUT_GEMM_NT, CUT_DT_BF16};
    const cut_sched w = valid_sched(&nn, CUT_GEMM_TPL_WGMMA, 1), m = valid_sched(&nn, CUT_GEMM_TPL_MMA, 2);
    const cut_sched m2 = valid_sched(&nt, CUT_GEMM_TPL_MMA, 3);
    results_path(path, sizeof path, res, &nn);
    add_record(path, &nn, &w, CUT_ST_OK, 0.010, 0);
    add_record(path, &nn, &m, CUT_ST_OK, 0.020, 1);
    add_record(path, &nn, &m, CUT_ST_WRONG_RESULT, 0, 2); /* skipped */
    results_path(path, sizeof path, res, &nt);
    add_record(path, &nt, &m2, CUT_ST_OK, 0.015, 0);
    /* a skinny GEMM's gemv kernels, one with split-K (its workspace a static __device__ array, as in tuning) */
    const cut_gemm skinny = {1, 512, 512, CUT_GEMM_NT, CUT_DT_FP16};
    const cut_sched gv_split = {.tpl = CUT_GEMM_TPL_GEMV, .k = {8, 8, 2, 4, 1, 2, 4, 1, 1}};
    const cut_sched gv_plain = {.tpl = CUT_GEMM_TPL_GEMV, .k = {8, 16, 1, 4, 2, 1, 1, 0, 0}};
    results_path(path, sizeof path, res, &skinny);
    add_record(path, &skinny, &gv_split, CUT_ST_OK, 0.004, 0);
    add_record(path, &skinny, &gv_plain, CUT_ST_OK, 0.005, 1);
    /* a vendor file beside them is not a kernel */
    snprintf(path, sizeof path, "%s/vendor_gemm_nn_fp16_M_256_N_192_K_128.json", res);
    const char *vendor = "{\"tflops\":1,\"ms\":1,\"algo\":\"x\"}\n";
    assert_int_equal(cut_write_file_atomic(path, vendor, strlen(vendor), &e), 0);

    cut_export_gemm_set set;
    assert_int_equal(cut_export_gemm_load(res, &set, &e), 0);
    assert_int_equal(set.n, 5);
    assert_int_equal(set.skipped, 1);
    assert_string_equal(set.k[3].ks.entry, "cut_gemm3_k1"); /* gemm_nt_fp16_M_1_...: GEMM 3 */
    assert_non_null(strstr(set.k[3].ks.src, "cut_splitk_last"));
    /* sorted by file name: gemm_nn_... is GEMM 1, gemm_nt_... GEMM 2 */
    assert_int_equal(set.k[0].gemm_id, 1);
    assert_int_equal(set.k[0].kernel_id, 1);
    assert_string_equal(set.k[0].ks.entry, "cut_gemm1_k1");
    assert_string_equal(set.k[2].ks.entry, "cut_gemm2_k1");
    assert_int_equal(set.k[0].ks.ntma, 2);
    assert_int_equal(set.k[0].ks.arch_a, 1);
    assert_non_null(strstr(set.k[0].ks.src, "cut_gemm1_k1("));
    assert_null(strstr(set.k[0].ks.src, "void cut_gemm("));

    cut_export_set conv;
    assert_int_equal(cut_export_load_conv(res, 1, &conv, &e), 0);
    assert_int_equal(conv.n, 0);
    assert_int_equal(cut_export_write_all(&conv, &set, out, "90", &e), 0);
    snprintf(path, sizeof path, "%s/kernels/gemm/gemm_nn_fp16_M_256_N_192_K_128/kernel1.cu", out);
    char *launcher = read_all(path);
    assert_non_null(strstr(launcher, "cuTensorMapEncodeTiled"));
    assert_non_null(strstr(launcher, "CU_TENSOR_MAP_DATA_TYPE_FLOAT16"));
    assert_non_null(strstr(launcher, "int launch_gemm1_k1(const void *A, const void *B, float *C, cudaStream_t s)"));
    free(launcher);
    snprintf(path, sizeof path, "%s/kernels/gemm/gemm_nt_bf16_M_200_N_136_K_72/kernel1.cu", out);
    launcher = read_all(path);
    assert_null(strstr(launcher, "cuTensorMapEncodeTiled"));
    assert_non_null(strstr(launcher, "launch_typed(cut_gemm2_k1::cut_gemm2_k1, grid, block, smem, s, A, B, C);"));
    free(launcher);
    snprintf(path, sizeof path, "%s/kernels/gemm/CMakeLists.txt", out);
    char *cmk = read_all(path);
    assert_non_null(strstr(cmk, "set(CUTUNE_GEMM_ARCH 90a "));
    assert_non_null(strstr(cmk, "CUDA_ARCHITECTURES ${CUTUNE_GEMM_ARCH}"));
    assert_non_null(strstr(cmk, "gemm_nt_bf16_M_200_N_136_K_72/kernel1.cu"));
    free(cmk);
    snprintf(path, sizeof path, "%s/kernels/CMakeLists.txt", out);
    cmk = read_all(path);
    assert_non_null(strstr(cmk, "add_subdirectory(gemm)"));
    free(cmk);
    snprintf(path, sizeof path, "%s/kernels/gemm/gemm_metadata.csv", out);
    char *csv = read_all(path);
    assert_true(strncmp(csv, CUT_EXPORT_GEMM_CSV_HEADER "\n", strlen(CUT_EXPORT_GEMM_CSV_HEADER) + 1) == 0);
    assert_non_null(strstr(csv, "\n1,1,256,192,128,nn,fp16,wgmma,\""));
    assert_non_null(strstr(csv, "\n3,1,1,512,512,nt,fp16,gemv,\"vec=8;lanes=8;cols=2;warps=4;kwarps=1;unroll=2;splitk=4;"));
    free(csv);
    snprintf(path, sizeof path, "%s/kernels/" CUT_EXPORT_MARKER, out);
    assert_int_equal(access(path, F_OK), 0);

    /* The project builds with cmake + nvcc alone (no cutune header or library), where nvcc is installed. */
    const char *nvcc = getenv("CUTUNE_NVCC") ? getenv("CUTUNE_NVCC") : "/usr/local/cuda/bin/nvcc";
    if (access(nvcc, X_OK) == 0 && system("cmake --version >/dev/null 2>&1") == 0) {
        char cmd[8192];
        snprintf(cmd, sizeof cmd,
                 "cmake -S '%s/kernels' -B '%s/build' -DCMAKE_CUDA_COMPILER='%s' >'%s/cmake.log' 2>&1 && "
                 "cmake --build '%s/build' -j2 >>'%s/cmake.log' 2>&1",
                 out, out, nvcc, dir, out, dir);
        int rc = system(cmd);
        if (rc != 0) {
            snprintf(cmd, sizeof cmd, "tail -40 '%s/cmake.log'", dir);
            assert_int_equal(system(cmd), 0);
        }
        assert_int_equal(rc, 0);
        snprintf(path, sizeof path, "%s/build/gemm/gemm_driver", out);
        assert_int_equal(access(path, X_OK), 0);
    } else {
        print_message("nvcc not found at %s: the exported project was not built\n", nvcc);
    }
    cut_export_set_free(&conv);
    cut_export_gemm_set_free(&set);
    free(dir);
}

static void test_export_refuses(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("export_gemm_bad");
    char res[1024], path[2048];
    snprintf(res, sizeof res, "%s/tuningresults", dir);
    cut_err e = {{0}};
    assert_int_equal(cut_mkdirs(res, &e), 0);
    cut_export_gemm_set set;
    /* an empty folder: an empty set, not an error (the CLI says there is nothing to export) */
    assert_int_equal(cut_export_gemm_load(res, &set, &e), 0);
    assert_int_equal(set.n, 0);
    cut_export_gemm_set_free(&set);
    /* a record of another GEMM than its file name says */
    const cut_gemm g = {64, 48, 40, CUT_GEMM_NN, CUT_DT_FP32}, other = {64, 48, 41, CUT_GEMM_NN, CUT_DT_FP32};
    const cut_sched s = valid_sched(&other, CUT_GEMM_TPL_SIMT, 4);
    results_path(path, sizeof path, res, &g);
    add_record(path, &other, &s, CUT_ST_OK, 0.01, 0);
    assert_int_equal(cut_export_gemm_load(res, &set, &e), -1);
    assert_non_null(strstr(e.msg, "line 1: the record's GEMM is gemm_nn_fp32_M_64_N_48_K_41, not the file's"));
    cut_export_gemm_set_free(&set);
    /* a malformed line */
    assert_int_equal(cut_write_file_atomic(path, "{\"v\":1}\n", 8, &e), 0);
    assert_int_equal(cut_export_gemm_load(res, &set, &e), -1);
    assert_non_null(strstr(e.msg, "gemm_nn_fp32_M_64_N_48_K_40.json"));
    cut_export_gemm_set_free(&set);
    /* no results folder at all */
    snprintf(path, sizeof path, "%s/none", dir);
    assert_int_equal(cut_export_gemm_load(path, &set, &e), -1);
    assert_non_null(strstr(e.msg, "there is no tuning results folder"));
    cut_export_gemm_set_free(&set);
    free(dir);
}

static int run(const char *cmd, const char *log)
{
    int rc = system(cmd);
    if (rc != 0) {
        char tail[2048];
        snprintf(tail, sizeof tail, "tail -40 '%s'", log);
        (void)system(tail);
    }
    return rc;
}

static void test_export_composes(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("export_compose");
    char res[1024], out[1024], path[2048];
    snprintf(res, sizeof res, "%s/tuningresults", dir);
    snprintf(out, sizeof out, "%s/exp", dir);
    cut_err e = {{0}};
    assert_int_equal(cut_mkdirs(res, &e), 0);
    const cut_conv c = {1, 12, 12, 32, 64, 3, 3, 1, 1}; /* K = 576: room for split-K */
    const cut_sched split = tr_conv_sched(&c, "igemm", "splitk", 1), wino = tr_conv_sched(&c, "winograd", NULL, 1);
    tr_add_conv(res, 1, &c, &split, 0.010, CUT_ST_OK, "cuda", "", "");
    tr_add_conv(res, 1, &c, &wino, 0.012, CUT_ST_OK, "cuda", "", "");
    const cut_gemm nn = {256, 192, 128, CUT_GEMM_NN, CUT_DT_FP16};
    const cut_sched w = valid_sched(&nn, CUT_GEMM_TPL_WGMMA, 1), m = valid_sched(&nn, CUT_GEMM_TPL_MMA, 2);
    results_path(path, sizeof path, res, &nn);
    add_record(path, &nn, &w, CUT_ST_OK, 0.010, 0);
    add_record(path, &nn, &m, CUT_ST_OK, 0.020, 1);

    cut_export_set conv;
    cut_export_gemm_set gemm;
    assert_int_equal(cut_export_load_conv(res, 1, &conv, &e), 0);
    assert_int_equal(conv.n, 2);
    assert_int_equal(cut_export_gemm_load(res, &gemm, &e), 0);
    assert_int_equal(gemm.n, 2);
    /* the split-K kernel needs a workspace: its partial sums and one counter per output tile */
    size_t floats = 0, counters = 0;
    assert_int_equal(cut_export_workspace(&conv.k[0], &floats, &counters), 1);
    assert_true(floats >= 2u * 32 * 144 && counters == (size_t)conv.k[0].ks.grid[0] * conv.k[0].ks.grid[1]);
    assert_int_equal(cut_export_workspace(&conv.k[1], &floats, &counters), 0);
    assert_int_equal(cut_export_write_all(&conv, &gemm, out, "90", &e), 0);

    snprintf(path, sizeof path, "%s/kernels/case1/kernel1.cuh", out);
    char *h = read_all(path);
    assert_non_null(strstr(h, "#define CUT_WS_PARAM 1")); /* the workspace is the launcher's, not the module's */
    free(h);
    snprintf(path, sizeof path, "%s/kernels/case1/kernel1.cu", out);
    h = read_all(path);
    assert_non_null(strstr(h, "cut_case1_k1::cut_conv2d_case1_k1<<<grid, block, smem, s>>>(in, w, out, ws, "));
    assert_non_null(strstr(h, "cutune_stream_workspace(&k_ws_key, s, "));
    free(h);
    snprintf(path, sizeof path, "%s/kernels/cutune_kernels.h", out);
    h = read_all(path);
    assert_non_null(strstr(h, "int launch_case1_k1_ws(const float *in, const float *w, float *out, void *workspace, "
                              "cudaStream_t s);"));
    assert_non_null(strstr(h, "int launch_gemm1_k2(const void *A, const void *B, float *C, cudaStream_t s);"));
    assert_non_null(strstr(h, "int cutune_release_workspaces(void);"));
    free(h);

    const char *nvcc = getenv("CUTUNE_NVCC") ? getenv("CUTUNE_NVCC") : "/usr/local/cuda/bin/nvcc";
    if (access(nvcc, X_OK) != 0 || system("cmake --version >/dev/null 2>&1") != 0) {
        print_message("nvcc not found at %s: the composition was not compiled\n", nvcc);
        cut_export_set_free(&conv);
        cut_export_gemm_set_free(&gemm);
        free(dir);
        return;
    }
    /* One translation unit: a caller's macros named as the kernels' (NB, H, W, CO, BM), two conv kernels (one twice)
     * and two GEMMs, the caller's macros checked intact, then removed, then Thrust, which a kernel macro left
     * behind (H, W, P...) would break. */
    char *gname = NULL;
    {
        char name[128];
        cut_gemm_name(&nn, name, sizeof name);
        gname = strdup(name);
    }
    char tu[8192];
    snprintf(tu, sizeof tu,
             "#define NB 101\n#define H 102\n#define W (103)\n#define CO 104\n#define BM 105\n"
             "#include \"case1/kernel1.cuh\"\n#include \"case1/kernel2.cuh\"\n#include \"case1/kernel1.cuh\"\n"
             "#include \"gemm/%s/kernel1.cuh\"\n#include \"gemm/%s/kernel2.cuh\"\n"
             "static_assert(NB == 101 && H == 102 && W == 103 && CO == 104 && BM == 105, \"caller's macros\");\n"
             "#undef NB\n#undef H\n#undef W\n#undef CO\n#undef BM\n"
             "#include <thrust/device_vector.h>\n#include <thrust/reduce.h>\n"
             "#include \"cutune_kernels.h\"\n"
             "float sum_of(const thrust::device_vector<float> &v) { return thrust::reduce(v.begin(), v.end()); }\n"
             "void *entries[] = {(void *)cut_case1_k1::cut_conv2d_case1_k1, (void *)cut_case1_k2::cut_conv2d_case1_k2,\n"
             "                   (void *)launch_case1_k1, (void *)launch_gemm1_k1};\n",
             gname, gname);
    snprintf(path, sizeof path, "%s/kernels/compose.cu", out);
    assert_int_equal(cut_write_file_atomic(path, tu, strlen(tu), &e), 0);
    /* the one header from C */
    static const char c_src[] = "#include \"cutune_kernels.h\"\n"
                                "int use(const float *i, const float *w, float *o) { return launch_case1_k1(i, w, o, 0) +\n"
                                "    (int)launch_case1_k1_workspace_bytes(); }\n";
    snprintf(path, sizeof path, "%s/kernels/use.c", out);
    assert_int_equal(cut_write_file_atomic(path, c_src, strlen(c_src), &e), 0);
    char cmd[8192], log[1100];
    snprintf(log, sizeof log, "%s/compose.log", dir);
    snprintf(cmd, sizeof cmd,
             "cd '%s/kernels' && '%s' -std=c++17 -gencode arch=compute_90a,code=sm_90a -c compose.cu -o '%s/compose.o' >'%s' 2>&1 && "
             "cc -std=c11 -Wall -Werror -I/usr/local/cuda/include -c use.c -o '%s/use.o' >>'%s' 2>&1",
             out, nvcc, dir, log, dir, log);
    assert_int_equal(run(cmd, log), 0);
    /* and the whole project: the kernels' library, the conv driver and the GEMM driver */
    snprintf(cmd, sizeof cmd,
             "cmake -S '%s/kernels' -B '%s/build' -DCMAKE_CUDA_COMPILER='%s' >'%s' 2>&1 && "
             "cmake --build '%s/build' -j2 >>'%s' 2>&1",
             out, out, nvcc, log, out, log);
    assert_int_equal(run(cmd, log), 0);
    snprintf(path, sizeof path, "%s/build/driver", out);
    assert_int_equal(access(path, X_OK), 0);
    snprintf(path, sizeof path, "%s/build/libcutune_kernels.a", out);
    assert_int_equal(access(path, F_OK), 0);
    free(gname);
    cut_export_set_free(&conv);
    cut_export_gemm_set_free(&gemm);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_export_mma_and_wgmma),
        cmocka_unit_test(test_export_refuses),
        cmocka_unit_test(test_export_composes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
