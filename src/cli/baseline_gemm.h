/* cutune baseline --gemm (baseline_gemm.c): the vendor GEMM baseline of one GEMM. */
#ifndef CUTUNE_CLI_BASELINE_GEMM_H
#define CUTUNE_CLI_BASELINE_GEMM_H

#include "cli/args.h"
#include "cutune/measure.h"

/* Checks g (cut_gemm_cli_finish) and outdir, then on GPU gpu: cut_runner_gpu_vendor with o, the table on stdout and
 * one JSON line in outdir/tuningresults/vendor_<cut_gemm_name>.json (also appended to json_path when not NULL).
 * Returns the exit code: 2 for bad input or no usable GPU, 1 when the search fails or finds no valid GEMM. */
int cut_baseline_gemm(const cut_gemm *g, const cut_vendor_opts *o, int gpu, const char *outdir,
                      const char *json_path);

#endif
