/* cutune export of tuned GEMMs with issue 21's extras. Tuning results of batch-3 GEMMs with alpha 0.5 and beta 0.25
 * in TN and TT, of the simt template in fp32/fp16/bf16/tf32, mma in fp16/bf16/tf32 (one with serial split-K) and gemv
 * in fp32/fp16/bf16/tf32 (one with split-K), a batch-4 fp16 TN GEMM with alpha 0.5 and beta 0.25 on wgmma (3-D TMA
 * maps), beside a plain NN fp32 GEMM and a batched one with beta 0, are exported, and:
 *   - the launchers and cutune_kernels.h take Cin after C exactly when beta != 0, say the layout, batch strides,
 *     alpha and beta, and mark the split-K kernels (module state) "one launch at a time", as their headers do;
 *   - the driver tables each GEMM's layout, dtype, batch, alpha and beta and calls the launcher with or without Cin;
 *     gemm_metadata.csv ends its rows with batch, alpha and beta;
 *   - the driver's host part (inputs, rounding, reference, tolerance, check), compiled with the host compiler, makes
 *     A, B and Cin bit-identical to cutune's work and a reference equal to cutune's;
 *   - each exported kernel header, run on the host emulator with the grid and block its exported launcher states
 *     (wgmma: with emulated TMA maps of the dims, strides and boxes its launcher encodes, 3-D), passes the driver's
 *     own check; and the check fails it when Cin is left out (zeroed), when a batch stride is planted wrong in the
 *     header (wgmma: B's map given one plane), and when the launcher's grid leaves out the batch (z or y = 1);
 *   - a persistent wgmma kernel (pp) of a batch exports with its one row of blocks and passes the same checks;
 *   - a record whose batch does not fit the grid is refused with a sentence;
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

/* The exported GEMMs: template, whether the schedule must split K (module state), whether it must be a persistent
 * wgmma kernel (pp: one block an SM walking every tile of every plane). */
static const struct {
    cut_gemm g;
    int tpl, splitk, pp;
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
    {XG(72, 136, 200, CUT_GEMM_TN, CUT_DT_FP16, 4, 0.5, 0.25), CUT_GEMM_TPL_WGMMA, 0}, /* 3-D TMA maps, Cin */
    {XG(520, 392, 64, CUT_GEMM_NN, CUT_DT_FP16, 3, 0.5, 0.25), CUT_GEMM_TPL_WGMMA, 0, 1}, /* persistent, 3-D maps */
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
        /* wgmma: a cluster of 1, which the emulator runs */
        if ((knob_of(&s, "splitk") > 1) == (k_cases[i].splitk != 0) && knob_of(&s, "cl") <= 1 &&
            (knob_of(&s, "pp") > 0) == (k_cases[i].pp != 0))
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
static int is_tma(int i) { return k_cases[i].tpl == CUT_GEMM_TPL_WGMMA; }
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
        if (is_tma(i))
            snprintf(want, sizeof want,
                     "cut_gemm%d_k1::cut_gemm%d_k1<<<grid, block, smem, s>>>(maps[0], maps[1], C%s);", G, G,
                     has_cin(i) ? ", Cin" : "");
        else
            snprintf(want, sizeof want, "launch_typed(cut_gemm%d_k1::cut_gemm%d_k1, grid, block, smem, s, A, B, C%s);",
                     G, G, has_cin(i) ? ", Cin" : "");
        if (!strstr(cu, want))
            fail_msg("case %d: the launcher lacks '%s'", i, want);
        const cut_gemm *g = &k->gemm;
        snprintf(want, sizeof want, "// layout %s: A is %s, B is %s, C is M x N fp32", cut_gemm_layout_name(g->layout),
                 cut_gemm_a_trans(g) ? "K x M (op(A) = A^T)" : "M x K", cut_gemm_b_trans(g) ? "N x K (op(B) = B^T)"
                                                                                             : "K x N");
        if (!strstr(cu, want))
            fail_msg("case %d: the launcher lacks '%s'", i, want);
        snprintf(want, sizeof want, "// batch %d: each operand's matrices packed one after the other (strides %zu, %zu "
                 "and %zu elements", cut_gemm_batch(g), cut_gemm_stride(g, 'A'), cut_gemm_stride(g, 'B'),
                 cut_gemm_stride(g, 'C'));
        assert_int_equal(strstr(cu, want) != NULL, cut_gemm_batch(g) > 1);
        /* a TMA kernel's maps: 3-D for a batch (the planes one matrix apart), encoded over A and B */
        for (int m = 0; is_tma(i) && m < 2; m++) {
            const cut_tma_desc *t = &k->ks.tma[m];
            assert_true(t->planes == (unsigned long long)cut_gemm_batch(g) &&
                        t->plane_bytes == cut_gemm_stride(g, m ? 'B' : 'A') * cut_dtype_size(g->dtype));
            snprintf(want, sizeof want, "const cuuint64_t dims[3] = {%lluull, %lluull, %lluull}, strides[2] = "
                     "{%lluull, %lluull};\n        const cuuint32_t box[3] = {%uu, %uu, 1u}, estr[3] = {1, 1, 1};\n"
                     "        if (cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, "
                     "const_cast<void *>(%s)",
                     t->dims[0], t->dims[1], t->planes, t->row_bytes, t->plane_bytes, t->box[0], t->box[1],
                     m ? "B" : "A");
            if (!strstr(cu, want))
                fail_msg("case %d: the launcher lacks '%s'", i, want);
        }
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
        if (k_cases[i].pp) { /* one row of blocks, at most one an SM, walking the tiles of every plane */
            assert_true(gr[0] >= 1 && gr[0] <= 132 && gr[1] == 1 && gr[2] == 1);
            assert_non_null(strstr(cu, "blocks walk the tiles of every plane (a persistent kernel; A and B: planes of "
                                       "3-D TMA maps)"));
        } else {
            assert_int_equal(gr[is_tma(i) ? 1 : 2] % (unsigned)cut_gemm_batch(g), 0); /* wgmma: the batch along y */
            if (is_tma(i))
                assert_non_null(strstr(cu, "the grid's y runs over the batch (A and B: planes of 3-D TMA maps)"));
        }
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
    /* the wgmma row, spelled out: batch 4, alpha 0.5, beta 0.25 after the tuned time and TFLOP/s */
    const char *wrow = strstr(csv, ",tn,fp16,wgmma,\"");
    assert_non_null(wrow);
    const char *wend = strchr(wrow, '\n');
    assert_non_null(wend);
    assert_true(wend - wrow > 11 && !strncmp(wend - 11, ",4,0.5,0.25", 11));
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

/* The TMA map m (0: A, 1: B) that case i's exported launcher text cu encodes (dims, strides, box; 3-D or 2-D). */
static cut_tma_desc launcher_map(int i, const char *cu, int m)
{
    cut_tma_desc t = {.operand = m, .elem_bytes = (int)cut_dtype_size(k_cases[i].g.dtype), .swizzle = 128};
    const char *at = cu;
    for (int j = 0; j <= m; j++) {
        at = strstr(at + (j > 0), "const cuuint64_t dims[");
        assert_non_null(at);
    }
    if (!strncmp(at, "const cuuint64_t dims[3]", 24))
        assert_int_equal(sscanf(at, "const cuuint64_t dims[3] = {%lluull, %lluull, %lluull}, strides[2] = {%lluull, "
                                    "%lluull};\n        const cuuint32_t box[3] = {%uu, %uu, 1u}",
                                &t.dims[0], &t.dims[1], &t.planes, &t.row_bytes, &t.plane_bytes, &t.box[0], &t.box[1]),
                         7);
    else
        assert_int_equal(sscanf(at, "const cuuint64_t dims[2] = {%lluull, %lluull}, strides[1] = {%lluull};\n"
                                    "        const cuuint32_t box[2] = {%uu, %uu}",
                                &t.dims[0], &t.dims[1], &t.row_bytes, &t.box[0], &t.box[1]), 5);
    assert_non_null(strstr(at, "CU_TENSOR_MAP_SWIZZLE_128B"));
    return t;
}

/* Case i's exported wgmma header on the emulator: A and B through emulated maps of what its launcher encodes (B's
 * given one plane when plant), through a typed entry that calls the namespaced kernel as the launcher does. */
static void emulate_tma(int i, char *hdr, const char *cu, const unsigned grid[3], const unsigned block[3], void *a,
                        size_t na, void *b, size_t nb, float *c, float *cin, const char *dir, int plant)
{
    const cut_export_gemm_kernel *k = &g_set.k[g_idx[i]];
    cut_buf src;
    cut_buf_init(&src);
    cut_buf_printf(&src, "%s\nextern \"C\" __global__ void emu_entry(const __grid_constant__ %s::cut_tmap tmA,\n"
                         "    const __grid_constant__ %s::cut_tmap tmB, float *C, const float *Cin)\n"
                         "{ %s::%s(tmA, tmB, C%s); }\n",
                   hdr, k->ks.entry, k->ks.entry, k->ks.entry, k->ks.entry, has_cin(i) ? ", Cin" : "");
    _Alignas(64) cut_emu_tmap maps[2];
    cut_err e = {{0}};
    for (int m = 0; m < 2; m++) {
        cut_tma_desc t = launcher_map(i, cu, m);
        if (plant && m == 1)
            t.planes = 1;
        if (cut_emu_tma_encode(&t, m ? b : a, m ? nb : na, (size_t)t.elem_bytes, &maps[m], &e) != 0)
            fail_msg("case %d: the launcher's map %d: %s", i + 1, m, e.msg);
    }
    cut_emu_kernel *ek = NULL;
    if (cut_emu_compile_call(src.data, "emu_entry", dir, &ek, &e) != 0)
        fail_msg("case %d: the exported header does not build for the emulator: %s", i + 1, e.msg);
    cut_buf_free(&src);
    void *argv[4] = {&maps[0], &maps[1], &c, &cin};
    if (cut_emu_launch_argv(ek, grid, block, argv, &e) != 0)
        fail_msg("case %d: emulated launch: %s", i + 1, e.msg);
    cut_emu_kernel_free(ek);
}

/* Runs case i's exported kernel header on the emulator on the driver's inputs in dir, launched with the grid and
 * block its exported launcher states, and writes C to dir/C.bin. plant: Cin zeroed, STRIDE_B planted 0 in the
 * header (wgmma: B's map of one plane), or the grid's batch dimension (z; wgmma: y) cut to 1. */
static void emulate(int i, const char *dir, int plant)
{
    const cut_export_gemm_kernel *k = &g_set.k[g_idx[i]];
    char *hdr = slurp_kernel(i, "cuh"), *cu = slurp_kernel(i, "cu");
    if (plant == PLANT_STRIDE && !is_tma(i)) {
        char from[64];
        snprintf(from, sizeof from, "#define STRIDE_B %zuull", cut_gemm_stride(&k->gemm, 'B'));
        assert_int_equal(tu_plant(&hdr, from, "#define STRIDE_B 0ull"), 0);
    }
    unsigned grid[3], block[3];
    assert_int_equal(sscanf(strstr(cu, "const dim3 grid("), "const dim3 grid(%uu, %uu, %uu), block(%uu, %uu, %uu);",
                            &grid[0], &grid[1], &grid[2], &block[0], &block[1], &block[2]), 6);
    if (plant == PLANT_GRID)
        grid[is_tma(i) ? 1 : 2] = 1;
    size_t na = 0, nb = 0, ncin = 0;
    void *a = read_bin(dir, "A.bin", &na), *b = read_bin(dir, "B.bin", &nb), *cin = read_bin(dir, "Cin.bin", &ncin);
    if (plant == PLANT_NO_CIN)
        memset(cin, 0, ncin);
    const size_t nc = cut_gemm_c_elems(&k->gemm);
    float *c = malloc(nc * sizeof *c);
    for (size_t j = 0; j < nc; j++)
        c[j] = NAN; /* poisoned, as the driver does */
    cut_err e = {{0}};
    if (is_tma(i)) {
        emulate_tma(i, hdr, cu, grid, block, a, na, b, nb, c, cin, dir, plant == PLANT_STRIDE);
    } else {
        cut_emu_kernel *ek = NULL;
        if (cut_emu_compile(hdr, k->ks.entry, dir, &ek, &e) != 0)
            fail_msg("case %d: the exported header does not build for the emulator: %s", i + 1, e.msg);
        void *args[4] = {a, b, c, cin};
        if (cut_emu_launch(ek, grid, block, args, 3 + k->ks.extra_bufs, &e) != 0)
            fail_msg("case %d: emulated launch: %s", i + 1, e.msg);
        cut_emu_kernel_free(ek);
    }
    free(hdr);
    free(cu);
    char p[4400];
    snprintf(p, sizeof p, "%s/C.bin", dir);
    assert_int_equal(cut_write_file_atomic(p, c, nc * sizeof *c, &e), 0);
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
            want_check(i, dir, 1, is_tma(i) ? "B's map of one plane" : "STRIDE_B planted 0");
        }
        /* z = 1 would leave a split-K kernel's module state mid-launch: only the others */
        if (cut_gemm_batch(&k_cases[i].g) > 1 && !k_cases[i].splitk && !k_cases[i].pp) {
            emulate(i, dir, PLANT_GRID);
            want_check(i, dir, 1, is_tma(i) ? "grid y = 1" : "grid z = 1");
        }
    }
    for (int t = 0; t <= CUT_GEMM_TPL_GEMV; t++)
        assert_true(strided[t] > 0);
}

/* ---- refusals ---- */

/* An mma kernel whose grid would exceed CUDA's limits: refused with a sentence, nothing exported. (A wgmma schedule
 * of a batched GEMM with beta exports: the main cases above.) */
static void test_refusals(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("export_gemm_extras_bad");
    cut_err e = {{0}};
    assert_int_equal(cut_mkdirs(dir, &e), 0);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng r;
    cut_rng_seed(&r, 3);
    cut_sched s;
    cut_export_gemm_set set;
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

/* Every kernel header of the export, each twice, in one NVRTC compile for sm_90a (the wgmma kernel's target): they
 * compose, and no macro of the extras leaks out. */
static void test_headers_nvrtc(void **state)
{
    (void)state;
    tu_need_nvrtc();
    cut_buf src;
    cut_buf_init(&src);
    int arch_a = 0;
    for (int twice = 0; twice < 2; twice++)
        for (int i = 0; i < NCASES; i++) {
            char *h = slurp_kernel(i, "cuh");
            cut_buf_printf(&src, "%s\n", h);
            free(h);
            arch_a |= g_set.k[g_idx[i]].ks.arch_a;
        }
    cut_buf_printf(&src, "#if defined(BATCH) || defined(STRIDE_A) || defined(HAS_BETA) || defined(ALPHA) || "
                         "defined(SPLITK) || defined(LAYOUT_TA) || defined(COPY_BYTES) || defined(WAITD)\n"
                         "#error a kernel macro leaked\n#endif\n");
    assert_int_equal(arch_a, 1); /* the wgmma kernel: sm_90a */
    tu_nvrtc_compiles_for(src.data, "gemm_extras_headers.cu", arch_a);
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
