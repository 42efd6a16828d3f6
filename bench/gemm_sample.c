/* cutune bench driver: best of N random GEMM schedules of one template vs cuBLAS, measured in one GPU worker.
 *
 *   gemm_sample [--tpl simt|mma] [--dtype fp32|tf32|fp16|bf16] M N K nn|nt SAMPLES SEED BUDGET_S
 *
 * Draws SAMPLES random valid schedules of the template (default simt, dtype fp32; src/gemm; random sampling, not
 * search) through the GEMM template registry, generates and compiles them with NVRTC for GPU 0's sm_XX, prepares
 * the GEMM (the dtype is passed through) in the GPU runner's worker (inputs uniform in [-1, 1), double-precision
 * CPU reference), measures every candidate (relative Frobenius check, then timing), then times cuBLAS (pedantic
 * SGEMM) in the same worker with the same routine. Candidates are measured until BUDGET_S seconds of measuring
 * have passed (0: no limit); the row says how many were. Prints one JSON object on stdout, progress on stderr; the
 * best_simt_* fields (kept for the existing scripts) hold the chosen template's best, as do best_ms/best_tflops.
 * Setup errors: a sentence on stderr, exit 1. The worker is $CUTUNE_BIN (the cutune binary). */
#include "cutune/compile.h"
#include "cutune/gemm.h"
#include "cutune/gemm_space.h"
#include "cutune/gpu.h"
#include "cutune/measure.h"
#include "cutune/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bench_args {
    cut_gemm g;
    int tpl;
    int samples;
    uint64_t seed;
    double budget_s;
} bench_args;

typedef struct bench_row {
    int valid, measured, ok, best;     /* best: index of the fastest OK candidate, -1 if none */
    int status_count[CUT_ST_COUNT];
    double best_ms, best_rel, compile_s, measure_s;
    char best_desc[160];
    cut_result cublas;
    char cublas_algo[64];
} bench_row;

static int parse_args(int argc, char **argv, bench_args *a, cut_err *e)
{
    static const char usage[] =
        "usage: gemm_sample [--tpl simt|mma] [--dtype fp32|tf32|fp16|bf16] M N K nn|nt SAMPLES SEED BUDGET_S";
    a->tpl = CUT_GEMM_TPL_SIMT;
    a->g.dtype = CUT_DT_FP32;
    int i = 1;
    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (strcmp(argv[i], "--tpl") == 0) {
            if ((a->tpl = cut_gemm_template_find(argv[i + 1])) < 0)
                return cut_err_set(e, "no GEMM template named '%s' (%s)", argv[i + 1], usage);
        } else if (strcmp(argv[i], "--dtype") == 0) {
            if (cut_dtype_parse(argv[i + 1], &a->g.dtype, e) != 0)
                return -1;
        } else
            return cut_err_set(e, "unknown option '%s' (%s)", argv[i], usage);
    }
    if (argc - i != 7)
        return cut_err_set(e, "%s", usage);
    argv += i - 1;
    a->g.m = atoi(argv[1]), a->g.n = atoi(argv[2]), a->g.k = atoi(argv[3]);
    a->g.layout = CUT_GEMM_NN;
    if (cut_gemm_layout_parse(argv[4], &a->g.layout, e) != 0 || cut_gemm_validate(&a->g, e) != 0)
        return -1;
    a->samples = atoi(argv[5]);
    a->seed = strtoull(argv[6], NULL, 10);
    a->budget_s = atof(argv[7]);
    if (a->samples < 1 || a->samples > 100000)
        return cut_err_set(e, "SAMPLES must be 1..100000, not %s", argv[5]);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    if (!cut_gemm_template_get(a->tpl)->applies(&a->g, &d, e))
        return -1;
    return 0;
}

/* Draws and generates a->samples valid schedules into ks/desc; returns how many (fewer only if sampling fails). */
static int generate(const bench_args *a, const cut_gpu_info *info, cut_kernel_src *ks, char (*desc)[160])
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    d.sm_major = info->sm_major;
    d.sm_minor = info->sm_minor;
    if (info->sm_count > 0)
        d.sm_count = info->sm_count;
    cut_rng r;
    cut_rng_seed(&r, a->seed);
    int n = 0;
    for (int i = 0; i < a->samples; i++) {
        cut_gemm_sched s;
        cut_err e = {{0}};
        if (cut_gemm_sched_sample_valid(&a->g, &d, a->tpl, &r, &s, 1000, &e) != 0 ||
            cut_codegen_gemm(&a->g, &s, &ks[n], &e) != 0) {
            cut_kernel_src_free(&ks[n]);
            fprintf(stderr, "gemm_sample: schedule %d: %s\n", i, e.msg);
            continue;
        }
        cut_gemm_sched_describe(&s, desc[n], sizeof desc[n]);
        n++;
    }
    return n;
}

/* Measures the candidates in chunks until done or the budget is spent; fills row. */
static int measure_all(cut_runner *r, const bench_args *a, const cut_kernel_src *ks, const cut_compiled *bins,
                       char (*desc)[160], int n, bench_row *row, cut_err *e)
{
    const double t0 = cut_now_s();
    row->best = -1;
    for (int i = 0; i < n; i++) {
        if (a->budget_s > 0 && cut_now_s() - t0 > a->budget_s)
            break;
        cut_candidate c = {.ks = &ks[i], .bin = &bins[i]};
        cut_result res;
        if (cut_runner_measure(r, &c, 1, &res, e) != 0)
            return -1;
        row->measured++;
        row->status_count[res.status]++;
        if (res.status != CUT_ST_OK)
            continue;
        row->ok++;
        if (row->best < 0 || res.median_ms < row->best_ms) {
            row->best = i;
            row->best_ms = res.median_ms;
            row->best_rel = res.max_abs_err;
            snprintf(row->best_desc, sizeof row->best_desc, "%s", desc[i]);
        }
    }
    row->measure_s = cut_now_s() - t0;
    return 0;
}

static double tflops(const cut_gemm *g, double ms) { return ms > 0 ? cut_gemm_gflops(g, ms) / 1000.0 : 0.0; }

static void print_row(const bench_args *a, const bench_row *row)
{
    const cut_gemm *g = &a->g;
    const double best = row->best >= 0 ? tflops(g, row->best_ms) : 0.0;
    const double blas = row->cublas.status == CUT_ST_OK ? tflops(g, row->cublas.median_ms) : 0.0;
    printf("{\"m\": %d, \"n\": %d, \"k\": %d, \"layout\": \"%s\", \"dtype\": \"%s\", \"tpl\": \"%s\", "
           "\"samples\": %d, \"seed\": %llu, \"valid\": %d, \"measured\": %d, \"ok\": %d, \"statuses\": {",
           g->m, g->n, g->k, cut_gemm_layout_name(g->layout), cut_dtype_name(g->dtype),
           cut_gemm_template_get(a->tpl)->name, a->samples, (unsigned long long)a->seed, row->valid, row->measured,
           row->ok);
    for (int s = 0, first = 1; s < CUT_ST_COUNT; s++)
        if (row->status_count[s]) {
            printf("%s\"%s\": %d", first ? "" : ", ", cut_status_name((cut_status)s), row->status_count[s]);
            first = 0;
        }
    printf("}, \"best_simt_ms\": %.6f, \"best_simt_tflops\": %.3f, \"best_simt_rel_err\": %.3g, "
           "\"best_schedule\": \"%s\", \"cublas_algo\": \"%s\", \"cublas_status\": \"%s\", \"cublas_ms\": %.6f, "
           "\"cublas_tflops\": %.3f, \"cublas_rel_err\": %.3g, \"ratio_simt_over_cublas\": %.3f, "
           "\"best_ms\": %.6f, \"best_tflops\": %.3f, \"compile_s\": %.1f, \"measure_s\": %.1f}\n",
           row->best >= 0 ? row->best_ms : -1.0, best, row->best >= 0 ? row->best_rel : -1.0, row->best_desc,
           row->cublas_algo, cut_status_name(row->cublas.status), row->cublas.median_ms, blas,
           row->cublas.max_abs_err, blas > 0 ? best / blas : 0.0, row->best >= 0 ? row->best_ms : -1.0, best,
           row->compile_s, row->measure_s);
    fflush(stdout);
}

static int run(const bench_args *a, cut_err *e)
{
    if (cut_gpu_init(e) <= 0) {
        char why[CUT_ERR_LEN - 64];
        snprintf(why, sizeof why, "%s", e->msg[0] ? e->msg : "the driver reports none");
        return cut_err_set(e, "gemm_sample needs a GPU (%s)", why);
    }
    cut_gpu_info info;
    if (cut_gpu_query(0, &info, e) != 0)
        return -1;
    cut_kernel_src *ks = cut_xcalloc((size_t)a->samples, sizeof *ks);
    cut_compiled *bins = cut_xcalloc((size_t)a->samples, sizeof *bins);
    char(*desc)[160] = cut_xcalloc((size_t)a->samples, sizeof *desc);
    const char **srcs = cut_xcalloc((size_t)a->samples, sizeof *srcs);
    bench_row row = {0};
    int rc = -1;
    cut_runner *r = NULL;
    row.valid = generate(a, &info, ks, desc);
    for (int i = 0; i < row.valid; i++)
        srcs[i] = ks[i].src;
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    o.sm_major = info.sm_major;
    o.sm_minor = info.sm_minor;
    double t0 = cut_now_s();
    if (cut_compile_batch(srcs, row.valid, &o, bins, e) != 0)
        goto out;
    row.compile_s = cut_now_s() - t0;
    fprintf(stderr, "gemm_sample: %d candidates compiled in %.1f s\n", row.valid, row.compile_s);
    if (!(r = cut_runner_gpu_new(0, getenv("CUTUNE_BIN"), NULL, e)))
        goto out;
    if (cut_runner_prepare_gemm(r, &a->g, a->seed, e) != 0 ||
        measure_all(r, a, ks, bins, desc, row.valid, &row, e) != 0 ||
        cut_runner_gpu_cublas(r, &row.cublas, row.cublas_algo, sizeof row.cublas_algo, e) != 0)
        goto out;
    print_row(a, &row);
    rc = 0;
out:
    cut_runner_free(r);
    for (int i = 0; i < a->samples; i++) {
        cut_kernel_src_free(&ks[i]);
        cut_compiled_free(&bins[i]);
    }
    free(ks);
    free(bins);
    free(desc);
    free(srcs);
    return rc;
}

int main(int argc, char **argv)
{
    bench_args a;
    cut_err e = {{0}};
    if (parse_args(argc, argv, &a, &e) != 0 || run(&a, &e) != 0) {
        fprintf(stderr, "gemm_sample: %s\n", e.msg);
        return 1;
    }
    return 0;
}
