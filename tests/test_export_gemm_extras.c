/* cutune export of tuned GEMMs with issue 21's extras. Tuning results of batch-3 GEMMs with alpha 0.5 and beta 0.25
 * in TN and TT, of the simt template in fp32/fp16/bf16/tf32, mma in fp16/bf16/tf32 (one with serial split-K) and gemv
 * in fp32/fp16/bf16/tf32 (one with split-K), beside a plain NN fp32 GEMM and a batched one with beta 0, are
 * exported, and:
 *   - the launchers and cutune_kernels.h take Cin after C exactly when beta != 0, say the layout, batch strides,
 *     alpha and beta, and mark the split-K kernels (module state) "one launch at a time", as their headers do;
 *   - the driver tables each GEMM's layout, dtype, batch, alpha and beta and calls the launcher with or without Cin;
 *     gemm_metadata.csv ends its rows with batch, alpha and beta;
 *   - the driver's host part (inputs, rounding, reference, tolerance, check), compiled with the host compiler, makes
 *     A, B and Cin bit-identical to cutune's work and a reference equal to cutune's;
 *   - each exported kernel header, run on the host emulator with the grid and block its exported launcher states,
 *     passes the driver's own check; and the check fails it when Cin is left out (zeroed), when a batch stride is
 *     planted wrong in the header, and when the launcher's grid leaves out the batch (z = 1);
 *   - a wgmma schedule of a batched GEMM is refused with a sentence;
 *   - the headers compile together with NVRTC, and the project builds with cmake + nvcc where nvcc is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/compile.h"
#include "cutune/emu.h"
#include "cutune/export.h"
#include "cutune/gemm_record.h"
#include "cutune/gemm_space.h"
#include "cutune/record.h"
#include "testutil.h"
#include "export_testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define XG(M_, N_, K_, L_, DT_, B_, AL_, BE_)                                                                     \
    {                                                                                                             \
        .m = (M_), .n = (N_), .k = (K_), .layout = (L_), .dtype = (DT_), .batch = (B_), .scaled = 1,              \
        .alpha = (AL_), .beta = (BE_)                                                                             \
    }
#define X3(M_, N_, K_, L_, DT_) XG(M_, N_, K_, L_, DT_, 3, 0.5, 0.25)

/* The exported GEMMs: template, and whether the schedule must split K (module state). */
static const struct {
    cut_gemm g;
    int tpl, splitk;
} k_cases[] = {
    {X3(16, 20, 33, CUT_GEMM_TN, CUT_DT_FP32), CUT_GEMM_TPL_SIMT, 0},
    {X3(12, 24, 20, CUT_GEMM_TT, CUT_DT_FP16), CUT_GEMM_TPL_SIMT, 0},
    {X3(16, 24, 16, CUT_GEMM_TN, CUT_DT_BF16), CUT_GEMM_TPL_SIMT, 0},
    {X3(9, 20, 24, CUT_GEMM_TT, CUT_DT_TF32), CUT_GEMM_TPL_SIMT, 0},
    {X3(24, 40, 48, CUT_GEMM_TN, CUT_DT_FP16), CUT_GEMM_TPL_MMA, 0},
    {X3(16, 24, 40, CUT_GEMM_TT, CUT_DT_BF16), CUT_GEMM_TPL_MMA, 0},
    {X3(20, 16, 24, CUT_GEMM_TN, CUT_DT_TF32), CUT_GEMM_TPL_MMA, 0},
    {X3(16, 40, 200, CUT_GEMM_TT, CUT_DT_FP16), CUT_GEMM_TPL_MMA, 1},
    {X3(3, 200, 96, CUT_GEMM_TT, CUT_DT_FP32), CUT_GEMM_TPL_GEMV, 0},
    {X3(1, 128, 512, CUT_GEMM_TN, CUT_DT_FP16), CUT_GEMM_TPL_GEMV, 1},
    {X3(4, 64, 64, CUT_GEMM_TT, CUT_DT_BF16), CUT_GEMM_TPL_GEMV, 0},
    {X3(5, 48, 40, CUT_GEMM_TN, CUT_DT_TF32), CUT_GEMM_TPL_GEMV, 0},
    {{64, 48, 40, CUT_GEMM_NN, CUT_DT_FP32}, CUT_GEMM_TPL_SIMT, 0},                  /* plain: as ever */
    {XG(24, 40, 32, CUT_GEMM_NT, CUT_DT_FP16, 3, 0.5, 0.0), CUT_GEMM_TPL_MMA, 0},    /* batched, no Cin */
};
#define NCASES ((int)CUT_ARRAY_LEN(k_cases))

static char g_dir[4096], g_out[4200], g_prog[4300]; /* the test's folder, the export, the driver's host program */
static cut_export_gemm_set g_set;
static int g_idx[NCASES]; /* case -> its kernel in g_set */

static char *slurp(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    cut_err e = {{0}};
    if (cut_read_file(path, &text, &len, &e) != 0)
        fail_msg("%s", e.msg);
    return text;
}

/* The exported file "kernelK.<ext>" of case i. */
static char *slurp_kernel(int i, const char *ext)
{
    char name[128], p[4600];
    cut_gemm_name(&k_cases[i].g, name, sizeof name);
    snprintf(p, sizeof p, "%s/kernels/gemm/%s/kernel1.%s", g_out, name, ext);
    return slurp(p);
}

static int knob_of(const cut_sched *s, const char *name)
{
    const cut_gemm_template *t = cut_gemm_template_get(s->tpl);
    for (int i = 0; i < t->nknobs; i++)
        if (!strcmp(t->knob_name(i), name))
            return s->k[i];
    return -1;
}

/* A valid schedule of case i (one that splits K when the case asks for it). */
static cut_sched case_sched(int i)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 100 + (uint64_t)i);
    cut_sched s;
    cut_err e = {{0}};
    for (int tries = 0; tries < 400; tries++) {
        if (cut_gemm_sched_sample_valid(&k_cases[i].g, &d, k_cases[i].tpl, &r, &s, 5000, &e) != 0)
            fail_msg("case %d: %s", i, e.msg);
        if ((knob_of(&s, "splitk") > 1) == (k_cases[i].splitk != 0))
            return s;
    }
    fail_msg("case %d: no schedule %s split-K", i, k_cases[i].splitk ? "with" : "without");
    return s;
}

/* Appends one measured record of g and s to dir/<g's name>.json. */
static void add_record(const char *dir, const cut_gemm *g, const cut_sched *s, double ms)
{
    cut_gemm_record r;
    memset(&r, 0, sizeof r);
    r.gemm = *g;
    r.sched = *s;
    r.status = CUT_ST_OK;
    r.median_ms = r.min_ms = r.max_ms = ms;
    r.gflops = cut_gemm_gflops(g, ms);
    r.rel_err = -1;
    r.repeats = 5;
    r.regs = r.spills = -1;
    snprintf(r.env.backend, sizeof r.env.backend, "cuda");
    snprintf(r.ts, sizeof r.ts, "2026-12-06T00:00:00Z");
    char name[128], path[4400];
    cut_gemm_name(g, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    cut_buf b;
    cut_buf_init(&b);
    cut_gemm_record_to_json(&r, &b);
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    assert_int_equal(fwrite(b.data, 1, b.len, f), b.len);
    fclose(f);
    cut_buf_free(&b);
}

/* The driver's host part as a program: `prog gen DIR M N K LAYOUT DTYPE BATCH ALPHA BETA SEED` writes DIR/A.bin and
 * B.bin (the storage type's bytes), Cin.bin (floats; empty with beta 0) and ref.bin (doubles); `prog check ...`
 * checks DIR/C.bin (floats) with the driver's rel_error and tolerance, exit 1 when outside it. */
static const char prog_main[] =
    "static void put(const char *dir, const char *name, const void *p, size_t n)\n{\n"
    "    char path[4096];\n    snprintf(path, sizeof path, \"%s/%s\", dir, name);\n"
    "    FILE *f = fopen(path, \"wb\");\n    if (!f || (n && fwrite(p, 1, n, f) != n)) exit(3);\n    fclose(f);\n}\n"
    "int main(int argc, char **argv)\n{\n"
    "    if (argc != 12) return 2;\n"
    "    const gemm_case g = {1, atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]), atoi(argv[7]),\n"
    "                         atoi(argv[8]), strtod(argv[9], nullptr), strtod(argv[10], nullptr), \"test\"};\n"
    "    const uint64_t seed = strtoull(argv[11], nullptr, 10);\n"
    "    std::vector<float> a, b, cin;\n    make_inputs(g, seed, a, b, cin);\n"
    "    std::vector<double> ref(c_elems(g));\n"
    "    for (size_t i = 0; i < ref.size(); i++)\n"
    "        ref[i] = reference_at(g, a.data(), b.data(), cin.data(), i);\n"
    "    if (!strcmp(argv[1], \"gen\")) {\n"
    "        std::vector<unsigned char> bytes;\n"
    "        pack(g.dtype, a, bytes); put(argv[2], \"A.bin\", bytes.data(), bytes.size());\n"
    "        pack(g.dtype, b, bytes); put(argv[2], \"B.bin\", bytes.data(), bytes.size());\n"
    "        put(argv[2], \"Cin.bin\", cin.data(), cin.size() * sizeof(float));\n"
    "        put(argv[2], \"ref.bin\", ref.data(), ref.size() * sizeof(double));\n"
    "        return 0;\n    }\n"
    "    std::vector<float> c(ref.size());\n"
    "    char path[4096];\n    snprintf(path, sizeof path, \"%s/C.bin\", argv[2]);\n"
    "    FILE *f = fopen(path, \"rb\");\n"
    "    if (!f || fread(c.data(), sizeof(float), c.size(), f) != c.size()) return 3;\n    fclose(f);\n"
    "    const double err = rel_error(c, ref), tol = tolerance(g.dtype);\n"
    "    printf(\"rel_err %.3g, tolerance %.3g\\n\", err, tol);\n"
    "    return err <= tol ? 0 : 1;\n}\n";

static void build_prog(void)
{
    char src[4400], cmd[9000];
    snprintf(src, sizeof src, "%s/host.cpp", g_dir);
    snprintf(g_prog, sizeof g_prog, "%s/host", g_dir);
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_printf(&b, "#include <cmath>\n#include <cstdint>\n#include <cstdio>\n#include <cstdlib>\n"
                       "#include <cstring>\n#include <vector>\n\n%s%s%s",
                   cut_export_rng_text, cut_export_gemm_host_text, prog_main);
    cut_err e = {{0}};
    assert_int_equal(cut_write_file_atomic(src, b.data, b.len, &e), 0);
    cut_buf_free(&b);
    const char *cxx = getenv("CUTUNE_HOST_CXX") ? getenv("CUTUNE_HOST_CXX") : "c++";
    snprintf(cmd, sizeof cmd, "'%s' -std=c++17 -O1 -Wall -Wextra -Werror -Wno-unused-function -o '%s' '%s'", cxx,
             g_prog, src);
    tu_sh(cmd);
}

static int setup(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("export_gemm_extras");
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    free(dir);
    char res[4300];
    snprintf(res, sizeof res, "%s/tuningresults", g_dir);
    snprintf(g_out, sizeof g_out, "%s/exp", g_dir);
    cut_err e = {{0}};
    assert_int_equal(cut_mkdirs(res, &e), 0);
    for (int i = 0; i < NCASES; i++) {
        const cut_sched s = case_sched(i);
        add_record(res, &k_cases[i].g, &s, 0.01 * (i + 1));
    }
    cut_export_set conv;
    if (cut_export_load_conv(res, 1, &conv, &e) != 0 || cut_export_gemm_load(res, &g_set, &e) != 0 ||
        cut_export_write_all(&conv, &g_set, g_out, "90", &e) != 0)
        fail_msg("%s", e.msg);
    cut_export_set_free(&conv);
    assert_int_equal(g_set.n, NCASES);
    for (int i = 0; i < NCASES; i++) {
        char want[128], got[128];
        cut_gemm_name(&k_cases[i].g, want, sizeof want);
        g_idx[i] = -1;
        for (int j = 0; j < g_set.n; j++) {
            cut_gemm_name(&g_set.k[j].gemm, got, sizeof got);
            if (!strcmp(want, got))
                g_idx[i] = j;
        }
        assert_true(g_idx[i] >= 0);
    }
    build_prog();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cut_export_gemm_set_free(&g_set);
    return 0;
}

/* ---- the written texts ---- */

static int has_cin(int i) { return cut_gemm_beta(&k_cases[i].g) != 0.0; }
/* alpha without beta: the launcher's comment says C's old contents are never read */
static int alpha_only(int i) { return !has_cin(i) && cut_gemm_alpha(&k_cases[i].g) != 1.0; }

static void test_launchers_and_header(void **state)
{
    (void)state;
    char p[4400];
    snprintf(p, sizeof p, "%s/kernels/cutune_kernels.h", g_out);
    char *h = slurp(p);
    for (int i = 0; i < NCASES; i++) {
        const cut_export_gemm_kernel *k = &g_set.k[g_idx[i]];
        const int G = k->gemm_id, split = k_cases[i].splitk;
        char want[512], name[128];
        cut_gemm_name(&k->gemm, name, sizeof name);
        /* the one header: Cin after C exactly when beta != 0; split-K kernels marked */
        snprintf(want, sizeof want, "// gemm %d (%s) kernel 1; %.6g ms as tuned%s\nint launch_gemm%d_k1(const void *A, "
                 "const void *B, float *C%s, cudaStream_t s);", G, name, k->tuned_ms,
                 split ? "; one launch at a time" : "", G, has_cin(i) ? ", const float *Cin" : "");
        if (!strstr(h, want))
            fail_msg("cutune_kernels.h lacks '%s'", want);
        /* the launcher: its signature, the launch with Cin, the comments on layout, batch, alpha and beta */
        char *cu = slurp_kernel(i, "cu");
        snprintf(want, sizeof want, "launch_typed(cut_gemm%d_k1::cut_gemm%d_k1, grid, block, smem, s, A, B, C%s);", G,
                 G, has_cin(i) ? ", Cin" : "");
        if (!strstr(cu, want))
            fail_msg("case %d: the launcher lacks '%s'", i, want);
        const cut_gemm *g = &k->gemm;
        snprintf(want, sizeof want, "// layout %s: A is %s, B is %s, C is M x N fp32", cut_gemm_layout_name(g->layout),
                 cut_gemm_a_trans(g) ? "K x M (op(A) = A^T)" : "M x K", cut_gemm_b_trans(g) ? "N x K (op(B) = B^T)"
                                                                                             : "K x N");
        if (!strstr(cu, want))
            fail_msg("case %d: the launcher lacks '%s'", i, want);
        snprintf(want, sizeof want, "// batch 3: each operand's matrices packed one after the other (strides %zu, %zu "
                 "and %zu elements", cut_gemm_stride(g, 'A'), cut_gemm_stride(g, 'B'), cut_gemm_stride(g, 'C'));
        assert_int_equal(strstr(cu, want) != NULL, cut_gemm_batch(g) == 3);
        assert_int_equal(strstr(cu, "// C = 0.5 * op(A) op(B) + 0.25 * Cin: Cin (fp32, as C)") != NULL, has_cin(i));
        assert_int_equal(strstr(cu, "// C = 0.5 * op(A) op(B) (beta 0") != NULL, alpha_only(i));
        assert_int_equal(strstr(cu, "// One launch at a time: this split-K kernel keeps ") != NULL, split);
        /* the grid the launcher states is the kernel's: the batch (and the slices) along z */
        unsigned gr[3], bl[3];
        const char *at = strstr(cu, "const dim3 grid(");
        assert_non_null(at);
        assert_int_equal(sscanf(at, "const dim3 grid(%uu, %uu, %uu), block(%uu, %uu, %uu);", &gr[0], &gr[1], &gr[2],
                                &bl[0], &bl[1], &bl[2]), 6);
        assert_true(memcmp(gr, k->ks.grid, sizeof gr) == 0 && memcmp(bl, k->ks.block, sizeof bl) == 0);
        assert_int_equal(gr[2] % (unsigned)cut_gemm_batch(g), 0);
        free(cu);
        /* the kernel header says so too, and takes Cin as its fourth argument */
        char *cuh = slurp_kernel(i, "cuh");
        assert_int_equal(strstr(cuh, "One launch at a time: this split-K kernel keeps ") != NULL, split);
        assert_non_null(strstr(cuh, has_cin(i) ? "#define HAS_BETA 1" : "#define HAS_BETA 0"));
        snprintf(want, sizeof want, "#define BATCH %d\n", cut_gemm_batch(g));
        assert_non_null(strstr(cuh, want));
        free(cuh);
    }
    free(h);
}

static void test_driver_and_csv(void **state)
{
    (void)state;
    char p[4400];
    snprintf(p, sizeof p, "%s/kernels/gemm/driver.cu", g_out);
    char *d = slurp(p);
    snprintf(p, sizeof p, "%s/kernels/gemm/gemm_metadata.csv", g_out);
    char *csv = slurp(p);
    assert_true(strncmp(csv, CUT_EXPORT_GEMM_CSV_HEADER "\n", strlen(CUT_EXPORT_GEMM_CSV_HEADER) + 1) == 0);
    assert_non_null(strstr(CUT_EXPORT_GEMM_CSV_HEADER, ",tuned_ms,tuned_tflops,batch,alpha,beta"));
    static const char *const lay[] = {"NN", "NT", "TN", "TT"}, *const dts[] = {"DT_FP32", "DT_TF32", "DT_FP16",
                                                                               "DT_BF16"};
    for (int i = 0; i < NCASES; i++) {
        const cut_export_gemm_kernel *k = &g_set.k[g_idx[i]];
        const cut_gemm *g = &k->gemm;
        char want[512], name[128];
        cut_gemm_name(g, name, sizeof name);
        snprintf(want, sizeof want, "    {%d, %d, %d, %d, %s, %s, %d, %.17g, %.17g, \"%s\"},\n", k->gemm_id, g->m, g->n,
                 g->k, lay[g->layout], dts[g->dtype], cut_gemm_batch(g), cut_gemm_alpha(g), cut_gemm_beta(g), name);
        if (!strstr(d, want))
            fail_msg("driver.cu lacks '%s'", want);
        if (has_cin(i))
            snprintf(want, sizeof want, "    {%d, 1, nullptr, launch_gemm%d_k1},\n", k->gemm_id, k->gemm_id);
        else
            snprintf(want, sizeof want, "    {%d, 1, launch_gemm%d_k1, nullptr},\n", k->gemm_id, k->gemm_id);
        if (!strstr(d, want))
            fail_msg("driver.cu lacks '%s'", want);
        /* the CSV row: the GEMM's columns first, batch, alpha and beta last */
        snprintf(want, sizeof want, "\n%d,1,%d,%d,%d,%s,%s,%s,\"", k->gemm_id, g->m, g->n, g->k,
                 cut_gemm_layout_name(g->layout), cut_dtype_name(g->dtype),
                 cut_gemm_template_get(k->sched.tpl)->name);
        const char *row = strstr(csv, want);
        if (!row)
            fail_msg("gemm_metadata.csv lacks a row starting '%s'", want + 1);
        const char *end = strchr(row + 1, '\n');
        snprintf(want, sizeof want, ",%d,%.17g,%.17g", cut_gemm_batch(g), cut_gemm_alpha(g), cut_gemm_beta(g));
        assert_non_null(end);
        assert_true((size_t)(end - row) > strlen(want) && !strncmp(end - strlen(want), want, strlen(want)));
    }
    /* the host part the other tests compile is the driver's, verbatim */
    assert_non_null(strstr(d, cut_export_rng_text));
    assert_non_null(strstr(d, cut_export_gemm_host_text));
    assert_non_null(strstr(d, "R[idx] = reference_at(g, A, B, Cin, idx);"));
    free(d);
    free(csv);
}

/* The driver's enums are cutune's (the program gets cutune's numbers). */
static void test_enums_agree(void **state)
{
    (void)state;
    assert_int_equal(CUT_DT_FP32, 0);
    assert_int_equal(CUT_DT_TF32, 1);
    assert_int_equal(CUT_DT_FP16, 2);
    assert_int_equal(CUT_DT_BF16, 3);
    assert_int_equal(CUT_GEMM_NN, 0);
    assert_int_equal(CUT_GEMM_NT, 1);
    assert_int_equal(CUT_GEMM_TN, 2);
    assert_int_equal(CUT_GEMM_TT, 3);
    assert_non_null(strstr(cut_export_gemm_host_text, "enum { DT_FP32, DT_TF32, DT_FP16, DT_BF16 };"));
    assert_non_null(strstr(cut_export_gemm_host_text, "enum { NN, NT, TN, TT };"));
}

/* ---- the driver's host part against cutune's work ---- */

/* Runs the host program (mode gen or check) for case i in dir; returns its exit status. */
static int run_prog(const char *mode, int i, const char *dir)
{
    const cut_gemm *g = &k_cases[i].g;
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "'%s' %s '%s' %d %d %d %d %d %d %.17g %.17g 1 >'%s/%s.log' 2>&1", g_prog, mode, dir,
             g->m, g->n, g->k, (int)g->layout, (int)g->dtype, cut_gemm_batch(g), cut_gemm_alpha(g), cut_gemm_beta(g),
             dir, mode);
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

/* A, B and Cin bit-identical to input set 0 of cutune's work of seed 1 (tune's default), and the reference equal to
 * cutune's within one float rounding (both sum in double in the same order). */
static void test_inputs_match_work(void **state)
{
    (void)state;
    for (int i = 0; i < NCASES; i++) {
        const cut_gemm *g = &k_cases[i].g;
        char dir[4400];
        case_dir(i, dir, sizeof dir);
        assert_int_equal(run_prog("gen", i, dir), 0);
        cut_work w;
        cut_err e = {{0}};
        assert_int_equal(cut_gemm_work(g, 1, 0, &w, &e), 0);
        assert_int_equal(w.nbufs, has_cin(i) ? 4 : 3);
        static const char *const files[4] = {"A.bin", "B.bin", NULL, "Cin.bin"};
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
        void *cin = read_bin(dir, "Cin.bin", &n);
        assert_int_equal(n, has_cin(i) ? cut_gemm_c_elems(g) * sizeof(float) : 0);
        free(cin);
        double *ref = read_bin(dir, "ref.bin", &n);
        const size_t out = w.bufs[2].elems;
        assert_int_equal(n, out * sizeof(double));
        const float *mine = w.bufs[2].data[0];
        for (size_t k = 0; k < out; k++)
            if (fabs(ref[k] - mine[k]) > 0x1.0p-23 * fabs(mine[k]) + 1e-30)
                fail_msg("case %d: reference %zu is %.9g, cutune's %.9g", i + 1, k, ref[k], (double)mine[k]);
        free(ref);
        cut_work_free(&w);
    }
}

/* ---- the exported kernels on the emulator, checked by the driver's own check ---- */

enum { PLANT_NONE, PLANT_NO_CIN, PLANT_STRIDE, PLANT_GRID };

/* Runs case i's exported kernel header on the emulator on the driver's inputs in dir, launched with the grid and
 * block its exported launcher states, and writes C to dir/C.bin. plant: Cin zeroed, STRIDE_B planted 0 in the
 * header, or the grid's z cut to 1. */
static void emulate(int i, const char *dir, int plant)
{
    const cut_export_gemm_kernel *k = &g_set.k[g_idx[i]];
    char *hdr = slurp_kernel(i, "cuh"), *cu = slurp_kernel(i, "cu");
    if (plant == PLANT_STRIDE) {
        char from[64];
        snprintf(from, sizeof from, "#define STRIDE_B %zuull", cut_gemm_stride(&k->gemm, 'B'));
        assert_int_equal(tu_plant(&hdr, from, "#define STRIDE_B 0ull"), 0);
    }
    unsigned grid[3], block[3];
    assert_int_equal(sscanf(strstr(cu, "const dim3 grid("), "const dim3 grid(%uu, %uu, %uu), block(%uu, %uu, %uu);",
                            &grid[0], &grid[1], &grid[2], &block[0], &block[1], &block[2]), 6);
    if (plant == PLANT_GRID)
        grid[2] = 1;
    free(cu);
    cut_emu_kernel *ek = NULL;
    cut_err e = {{0}};
    if (cut_emu_compile(hdr, k->ks.entry, dir, &ek, &e) != 0)
        fail_msg("case %d: the exported header does not build for the emulator: %s", i + 1, e.msg);
    free(hdr);
    size_t na = 0, nb = 0, ncin = 0;
    void *a = read_bin(dir, "A.bin", &na), *b = read_bin(dir, "B.bin", &nb), *cin = read_bin(dir, "Cin.bin", &ncin);
    if (plant == PLANT_NO_CIN)
        memset(cin, 0, ncin);
    const size_t nc = cut_gemm_c_elems(&k->gemm);
    float *c = malloc(nc * sizeof *c);
    for (size_t j = 0; j < nc; j++)
        c[j] = NAN; /* poisoned, as the driver does */
    void *args[4] = {a, b, c, cin};
    if (cut_emu_launch(ek, grid, block, args, 3 + k->ks.extra_bufs, &e) != 0)
        fail_msg("case %d: emulated launch: %s", i + 1, e.msg);
    char p[4400];
    snprintf(p, sizeof p, "%s/C.bin", dir);
    assert_int_equal(cut_write_file_atomic(p, c, nc * sizeof *c, &e), 0);
    cut_emu_kernel_free(ek);
    free(a), free(b), free(cin), free(c);
}

static void want_check(int i, const char *dir, int want, const char *what)
{
    const int rc = run_prog("check", i, dir);
    char log[4500];
    snprintf(log, sizeof log, "%s/check.log", dir);
    char *t = slurp(log);
    print_message("  case %d %s: %s", i + 1, what, t);
    if (rc != want)
        fail_msg("case %d %s: the driver's check exited %d, want %d: %s", i + 1, what, rc, want, t);
    free(t);
}

static void test_emulated_self_check(void **state)
{
    (void)state;
    int strided[CUT_GEMM_TPL_GEMV + 1] = {0}; /* a planted stride per template */
    for (int i = 0; i < NCASES; i++) {
        char dir[4400];
        case_dir(i, dir, sizeof dir);
        assert_int_equal(run_prog("gen", i, dir), 0);
        emulate(i, dir, PLANT_NONE);
        want_check(i, dir, 0, "as exported");
        if (has_cin(i)) { /* a kernel that ignores Cin: the check must see it */
            emulate(i, dir, PLANT_NO_CIN);
            want_check(i, dir, 1, "Cin left out");
        }
        const int tpl = k_cases[i].tpl;
        if (cut_gemm_batch(&k_cases[i].g) > 1 && !strided[tpl]++) {
            emulate(i, dir, PLANT_STRIDE);
            want_check(i, dir, 1, "STRIDE_B planted 0");
        }
        /* z = 1 would leave a split-K kernel's module state mid-launch: only the others */
        if (cut_gemm_batch(&k_cases[i].g) > 1 && !k_cases[i].splitk) {
            emulate(i, dir, PLANT_GRID);
            want_check(i, dir, 1, "grid z = 1");
        }
    }
    for (int t = 0; t <= CUT_GEMM_TPL_GEMV; t++)
        assert_true(t == CUT_GEMM_TPL_WGMMA || strided[t] > 0);
}

/* ---- refusals ---- */

/* A wgmma schedule (TMA maps, a plain epilogue) recorded for a batched GEMM with beta, and an mma kernel whose grid
 * would exceed CUDA's limits: each refused with a sentence, nothing exported. */
static void test_refusals(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("export_gemm_extras_bad");
    cut_err e = {{0}};
    assert_int_equal(cut_mkdirs(dir, &e), 0);
    const cut_gemm plain = {256, 192, 128, CUT_GEMM_NT, CUT_DT_FP16};
    const cut_gemm batched = XG(256, 192, 128, CUT_GEMM_NT, CUT_DT_FP16, 2, 1.0, 0.5);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 3);
    cut_sched s;
    assert_int_equal(cut_gemm_sched_sample_valid(&plain, &d, CUT_GEMM_TPL_WGMMA, &r, &s, 5000, &e), 0);
    add_record(dir, &batched, &s, 0.01);
    cut_export_gemm_set set;
    assert_int_equal(cut_export_gemm_load(dir, &set, &e), -1);
    /* the wgmma template computes the extras now (3-D TMA maps, Cin in its epilogue), but the exported launcher
     * encodes 2-D maps and passes no Cin to a TMA kernel: the export refuses it with a sentence */
    if (!strstr(e.msg, "line 1: gemm_nt_fp16_M_256_N_192_K_128_batch_2_alpha_1_beta_0.5 cannot be exported: the "
                       "kernel reads A and B through TMA maps") ||
        !strstr(e.msg, "it cannot export a batch, alpha or beta"))
        fail_msg("%s", e.msg);
    assert_int_equal(set.n, 0);
    cut_export_gemm_set_free(&set);
    /* a batch past the grid's 65535 blocks along z: the mma template's check refuses it, and so does the export of
     * a record that holds one anyway (a log written before that check, or by hand) */
    char dir2[4200];
    snprintf(dir2, sizeof dir2, "%s/z", dir);
    assert_int_equal(cut_mkdirs(dir2, &e), 0);
    const cut_gemm many = XG(16, 16, 16, CUT_GEMM_NN, CUT_DT_FP16, 70000, 1.0, 0.0);
    assert_int_equal(cut_gemm_sched_sample_valid(&many, &d, CUT_GEMM_TPL_MMA, &r, &s, 200, &e), -1);
    if (!strstr(e.msg, "exceed its 65535"))
        fail_msg("%s", e.msg);
    const cut_gemm few = XG(16, 16, 16, CUT_GEMM_NN, CUT_DT_FP16, 7, 1.0, 0.0);
    assert_int_equal(cut_gemm_sched_sample_valid(&few, &d, CUT_GEMM_TPL_MMA, &r, &s, 5000, &e), 0);
    add_record(dir2, &many, &s, 0.01);
    assert_int_equal(cut_export_gemm_load(dir2, &set, &e), -1);
    if (!strstr(e.msg, "line 1: the schedule is not valid for gemm_nn_fp16_M_16_N_16_K_16_batch_70000") ||
        !strstr(e.msg, "exceed its 65535"))
        fail_msg("%s", e.msg);
    cut_export_gemm_set_free(&set);
    free(dir);
}

/* ---- compilers ---- */

/* Every kernel header of the export, each twice, in one NVRTC compile for sm_90: they compose, and no macro of the
 * extras leaks out. */
static void test_headers_nvrtc(void **state)
{
    (void)state;
    tu_need_nvrtc();
    cut_buf src;
    cut_buf_init(&src);
    for (int twice = 0; twice < 2; twice++)
        for (int i = 0; i < NCASES; i++) {
            char *h = slurp_kernel(i, "cuh");
            cut_buf_printf(&src, "%s\n", h);
            free(h);
        }
    cut_buf_printf(&src, "#if defined(BATCH) || defined(STRIDE_A) || defined(HAS_BETA) || defined(ALPHA) || "
                         "defined(SPLITK) || defined(LAYOUT_TA)\n#error a kernel macro leaked\n#endif\n");
    tu_nvrtc_compiles(src.data, "gemm_extras_headers.cu");
    cut_buf_free(&src);
}

/* The whole project (the launchers with and without Cin, the driver) builds with cmake + nvcc alone. */
static void test_project_nvcc(void **state)
{
    (void)state;
    tu_cmake_nvcc_build(g_out, g_dir, "gemm/gemm_driver");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launchers_and_header), cmocka_unit_test(test_driver_and_csv),
        cmocka_unit_test(test_enums_agree),          cmocka_unit_test(test_inputs_match_work),
        cmocka_unit_test(test_emulated_self_check),  cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_headers_nvrtc),        cmocka_unit_test(test_project_nvcc),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
