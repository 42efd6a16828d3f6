/* cutune export — tuningresults/ -> kernels/ (seed 001 phase 2): generated kernels, launchers, one measurement
 * driver, CMakeLists.txt and kernel_metadata.csv. Reads the results only; tuningrecords/ is never opened. */
#include "cli/args.h"
#include "cli/cli.h"
#include "cutune/export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char export_usage[] =
    "usage: cutune export [--outdir DIR] [--results DIR] [--arch SM]\n"
    "       cutune export --optimized OPT_DIR [--kernel NAME] [--outdir DIR] [--arch SM]\n"
    "  --outdir DIR   write DIR/kernels/ (default .): caseN/kernelK.{cuh,cu}, driver.cu, CMakeLists.txt,\n"
    "                 kernel_metadata.csv, and gemm/ for tuned GEMMs; an earlier export there is replaced\n"
    "  --results DIR  the sampled representatives (default DIR/tuningresults, as written by tune/sample)\n"
    "  --arch SM      default CUDA architecture of kernels/CMakeLists.txt (default 90; also sm_90)\n"
    "  --optimized OPT_DIR  the --outdir of cutune optimize: each optimized kernel's baseline and best variant as\n"
    "                 a stand-alone project DIR/kernels/opt/NAME/ (driver checks and times both; --kernel: one)\n"
    "Kernel K of case N is line K of tuningresults/caseN_*.json; kernel K of GEMM G is line K of the G-th\n"
    "tuningresults/gemm_*.json. Build and run the drivers with\n"
    "  cmake -S DIR/kernels -B DIR/build && cmake --build DIR/build -j && DIR/build/driver\n";

/* 1 if path a lies inside folder b (both resolved), so that replacing b would delete a. */
static int path_inside(const char *a, const char *b)
{
    char *ra = realpath(a, NULL), *rb = realpath(b, NULL);
    size_t lb = rb ? strlen(rb) : 0;
    int inside = ra && rb && strncmp(ra, rb, lb) == 0 && (ra[lb] == '/' || ra[lb] == '\0');
    free(ra);
    free(rb);
    return inside;
}

int cut_cmd_export(int argc, char **argv)
{
    const char *outdir = ".", *results = NULL, *arch = "90", *optimized = NULL, *kernel = NULL;
    cut_err e = {{0}};
    for (int i = 1; i < argc; i++) {
        int rc = 0;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(export_usage, stdout);
            return CUT_EXIT_OK;
        } else if (!strcmp(argv[i], "--outdir")) {
            rc = cut_arg_str(argc, argv, &i, &outdir, &e);
        } else if (!strcmp(argv[i], "--results")) {
            rc = cut_arg_str(argc, argv, &i, &results, &e);
        } else if (!strcmp(argv[i], "--arch")) {
            rc = cut_arg_str(argc, argv, &i, &arch, &e);
        } else if (!strcmp(argv[i], "--optimized")) {
            rc = cut_arg_str(argc, argv, &i, &optimized, &e);
        } else if (!strcmp(argv[i], "--kernel")) {
            rc = cut_arg_str(argc, argv, &i, &kernel, &e);
        } else {
            rc = cut_err_set(&e, "unknown option '%s' (see cutune help export)", argv[i]);
        }
        if (rc != 0) {
            fprintf(stderr, "cutune export: %s\n", e.msg);
            return CUT_EXIT_USAGE;
        }
    }
    if (kernel && !optimized) {
        fprintf(stderr, "cutune export: --kernel NAME selects a kernel of --optimized OPT_DIR\n");
        return CUT_EXIT_USAGE;
    }
    if (optimized) /* an optimized user kernel's baseline and best variant (cutune optimize's output) */
        return results ? (fprintf(stderr, "cutune export: --optimized and --results cannot be combined\n"),
                          CUT_EXIT_USAGE)
                       : cut_cmd_export_optimized(optimized, kernel, outdir, arch);
    if (!strncmp(arch, "sm_", 3))
        arch += 3;
    char results_buf[4096], kdir[4096];
    if (!results) {
        if (cut_path_join(results_buf, sizeof results_buf, outdir, "tuningresults", &e) != 0) {
            fprintf(stderr, "cutune export: %s\n", e.msg);
            return CUT_EXIT_USAGE;
        }
        results = results_buf;
    }
    snprintf(kdir, sizeof kdir, "%s/kernels", outdir);
    if (path_inside(results, kdir)) {
        fprintf(stderr, "cutune export: the results folder '%s' is inside '%s', which export replaces\n", results,
                kdir);
        return CUT_EXIT_USAGE;
    }
    cut_export_set set;
    cut_export_gemm_set gemm;
    memset(&gemm, 0, sizeof gemm);
    int rc = cut_export_load_conv(results, 1, &set, &e);
    if (rc == 0)
        rc = cut_export_gemm_load(results, &gemm, &e);
    if (rc == 0 && set.n == 0 && gemm.n == 0)
        rc = cut_err_set(&e, "the tuning results folder '%s' has no measured kernels (conv caseN_*.json or "
                             "gemm_*.json); run cutune tune or cutune sample first", results);
    if (rc == 0)
        rc = cut_export_write_all(&set, &gemm, outdir, arch, &e);
    if (rc != 0) {
        fprintf(stderr, "cutune export: %s\n", e.msg);
        cut_export_set_free(&set);
        cut_export_gemm_set_free(&gemm);
        return CUT_EXIT_USAGE;
    }
    if (set.n > 0) {
        int ncases = 0;
        for (int i = 0; i < set.n; i++)
            ncases += i == 0 || set.k[i].case_idx != set.k[i - 1].case_idx;
        printf("exported %d kernel(s) of %d case(s) to %s", set.n, ncases, kdir);
        if (set.skipped)
            printf(" (%d failed or unmeasured line(s) left out)", set.skipped);
        printf("\nbuild: cmake -S %s -B %s/build && cmake --build %s/build -j && %s/build/driver\n", kdir, outdir,
               outdir, outdir);
    }
    if (gemm.n > 0) {
        int ngemms = 0;
        for (int i = 0; i < gemm.n; i++)
            ngemms += i == 0 || gemm.k[i].gemm_id != gemm.k[i - 1].gemm_id;
        printf("exported %d GEMM kernel(s) of %d GEMM(s) to %s/gemm", gemm.n, ngemms, kdir);
        if (gemm.skipped)
            printf(" (%d failed or unmeasured line(s) left out)", gemm.skipped);
        printf("\nbuild: cmake -S %s -B %s/build && cmake --build %s/build -j && %s/build/gemm/gemm_driver\n", kdir,
               outdir, outdir, outdir);
    }
    cut_export_set_free(&set);
    cut_export_gemm_set_free(&gemm);
    return CUT_EXIT_OK;
}
