/* cutune baseline — cuDNN's fastest forward algorithm (in the workload's dtype and layout, with its fused epilogue
 * where it has one) and cutune's best tuned kernels, timed in the same worker with the same harness, interleaved
 * (round 1: ours then cuDNN, round 2 again), per case; with --gemm the best vendor GEMM (baseline_gemm.c). */
#include "cli/args.h"
#include "cli/baseline_gemm.h"
#include "cli/cli.h"
#include "cutune/gpu.h"
#include "cutune/record.h"
#include "cutune/tune.h"
#include "cutune/util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 2
#define TOPK 3

static const char usage_text[] =
    "usage: cutune baseline [options]\n"
    "  --workloads NAME | --conv N,H,W,CO,CI,KH,KW,S,P | --case I   as for tune\n"
    "  --gpu I        GPU index (default 0)\n"
    "  --outdir DIR   where tuningrecords/ is (default .)\n"
    "  --json FILE    append one JSON object per case to FILE\n"
    "  --dtype D      fp32 (default: cuDNN's FMA and TF32 math both), tf32, fp16 or bf16;  --layout nchw|nhwc\n"
    "  --epilogue E   none (default), bias or bias_relu: cuDNN's fused call (cudnnConvolutionBiasActivationForward)\n"
    "                 where it takes the algorithm and the fused graph for the engines, else the convolution,\n"
    "                 cudnnAddTensor and cudnnActivationForward timed together; the algorithm's name ends in\n"
    "                 [fused ...] or [unfused: ...] and the JSON line has \"cudnn_fused\": true or false\n"
    "GEMM (the best vendor GEMM: cuBLAS GemmEx and cuBLASLt heuristic + enumerated algorithms, same harness):\n"
    "  --gemm WORDS   seed 004's words, e.g. --gemm M=4096 N=4096 K=4096 (also --m/--n/--k N)\n"
    "  --layout L     nn (default) or nt;  --dtype D   fp32 (default), tf32, fp16 or bf16\n"
    "  --heuristic N  cuBLASLt heuristic candidates (default 32; 0: none)\n"
    "  --no-enumerate only the heuristic's algorithms (default: also enumerate algorithm ids x capabilities)\n"
    "  --max-configs N  enumerated configurations at most (default 300)\n"
    "  --budget S     seconds of timing before no new candidate starts (default 120)\n"
    "  writes DIR/tuningresults/vendor_<gemm name>.json (one JSON line; --json FILE also gets it)\n";

/* cuDNN's fastest valid algorithm or engine for fp32 data with TF32 tensor-core math (checked with the tf32
 * tolerance), timed once after the FMA rounds: fin's second column. */
static int tf32_column(cut_runner *r, cut_final *fin, cut_err *e)
{
    cut_result res;
    if (cut_runner_gpu_cudnn_math(r, 1, &res, fin->vendor_tf32_algo, sizeof fin->vendor_tf32_algo, e) != 0)
        return -1;
    fin->vendor_tf32_ms = res.status == CUT_ST_OK ? res.median_ms : -1;
    return 0;
}

static int run_case(cut_runner *r, const cut_gpu_info *info, const char *rec_dir, const cut_conv *c, int case_idx,
                    FILE *json, cut_err *e)
{
    char name[512], path[1024];
    cut_conv_case_name(c, case_idx, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s.json", rec_dir, name);
    cut_record *recs = NULL;
    int n = 0, partial = 0;
    if (cut_records_load(path, &recs, &n, &partial, e) != 0)
        return -1;
    cut_compile_opts co = {.sm_major = info->sm_major, .sm_minor = info->sm_minor, .cache_dir = NULL};
    cut_final fin;
    int rc = cut_runner_prepare_conv(r, c, 7, e);
    if (rc == 0)
        rc = cut_final_case(r, &co, c, recs, n, TOPK, ROUNDS, 1, &fin, e);
    if (rc == 0 && c->dtype == CUT_DT_FP32) /* the second column of fp32 data: cuDNN with TF32 tensor cores */
        rc = tf32_column(r, &fin, e);
    if (rc == 0) {
        cut_final_print(stdout, c, case_idx, &fin);
        if (json)
            cut_final_json(json, c, case_idx, n, -1, &fin);
    }
    free(recs);
    return rc;
}

/* The vendor GEMM options. 1 when argv[*i] was one (*rc: 0, or -1 with e set), 0 when not. */
static int vendor_option(int argc, char **argv, int *i, cut_vendor_opts *o, int *rc, cut_err *e)
{
    const char *a = argv[*i];
    *rc = 0;
    if (!strcmp(a, "--no-enumerate"))
        o->enumerate = 0;
    else if (!strcmp(a, "--heuristic"))
        *rc = cut_arg_int(argc, argv, i, 0, 256, &o->heuristic_n, e);
    else if (!strcmp(a, "--max-configs"))
        *rc = cut_arg_int(argc, argv, i, 0, 4096, &o->max_configs, e);
    else if (!strcmp(a, "--budget")) {
        int s = 0;
        *rc = cut_arg_int(argc, argv, i, 1, 86400, &s, e);
        o->budget_s = s;
    } else
        return 0;
    return 1;
}

int cut_cmd_baseline(int argc, char **argv)
{
    const char *list_name = "seed001", *conv_str = NULL, *outdir = ".", *json_path = NULL;
    const char *dtype = NULL, *layout = NULL; /* a GEMM's or a conv's: applied once the op is known */
    const char *epilogue = NULL;              /* a conv's fused epilogue: none, bias, bias_relu */
    int case_sel = 0, gpu = 0, gemm_given = 0, gemm_trials = 0, vendor_given = 0;
    cut_err e = {{0}};
    cut_gemm gemm;
    cut_gemm_cli_init(&gemm);
    cut_vendor_opts vo;
    cut_vendor_opts_default(&vo);
    for (int i = 1; i < argc; i++) {
        int rc = 0;
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return CUT_EXIT_OK;
        } else if (!strcmp(a, "--workloads")) {
            rc = cut_arg_str(argc, argv, &i, &list_name, &e);
        } else if (!strcmp(a, "--conv")) {
            rc = cut_arg_str(argc, argv, &i, &conv_str, &e);
        } else if (!strcmp(a, "--dtype")) {
            rc = cut_arg_str(argc, argv, &i, &dtype, &e);
        } else if (!strcmp(a, "--layout")) {
            rc = cut_arg_str(argc, argv, &i, &layout, &e);
        } else if (!strcmp(a, "--epilogue")) {
            rc = cut_arg_str(argc, argv, &i, &epilogue, &e);
        } else if (!strcmp(a, "--outdir")) {
            rc = cut_arg_str(argc, argv, &i, &outdir, &e);
        } else if (!strcmp(a, "--json")) {
            rc = cut_arg_str(argc, argv, &i, &json_path, &e);
        } else if (!strcmp(a, "--case")) {
            rc = cut_arg_int(argc, argv, &i, 1, 1 << 20, &case_sel, &e);
        } else if (!strcmp(a, "--gpu")) {
            rc = cut_arg_int(argc, argv, &i, 0, 1024, &gpu, &e);
        } else if (vendor_option(argc, argv, &i, &vo, &rc, &e)) {
            vendor_given = 1;
        } else if ((rc = cut_gemm_parse_cli(argc, argv, &i, &gemm, &gemm_trials, &e)) == 1) {
            gemm_given = 1;
            rc = 0;
        } else if (rc == 0) {
            rc = cut_err_set(&e, "unknown option '%s' (see cutune help baseline)", a);
        }
        if (rc != 0) {
            fprintf(stderr, "cutune baseline: %s\n", e.msg);
            return CUT_EXIT_USAGE;
        }
    }
    if (gemm_given || vendor_given) {
        if (!gemm_given || conv_str || case_sel || gemm_trials > 0) {
            fprintf(stderr, "cutune baseline: %s\n",
                    !gemm_given ? "--heuristic, --no-enumerate, --max-configs and --budget need a GEMM (--gemm)"
                    : gemm_trials > 0 ? "--gemm: t= (trials) has no meaning for the baseline"
                                      : "--gemm cannot be combined with --conv or --case");
            return CUT_EXIT_USAGE;
        }
        if (cut_cli_gemm_types(dtype, layout, &gemm, &e) != 0) {
            fprintf(stderr, "cutune baseline: %s\n", e.msg);
            return CUT_EXIT_USAGE;
        }
        return cut_baseline_gemm(&gemm, &vo, gpu, outdir, json_path);
    }
    cut_conv_list list;
    if (cut_cli_workloads(conv_str, list_name, &list, &e) != 0 || cut_cli_conv_types(dtype, layout, epilogue, &list, &e) != 0) {
        cut_conv_list_free(&list);
        fprintf(stderr, "cutune baseline: %s\n", e.msg);
        return CUT_EXIT_USAGE;
    }
    int code = CUT_EXIT_OK;
    cut_runner *r = NULL;
    FILE *json = NULL;
    cut_gpu_info info;
    int ngpu = cut_gpu_init(&e);
    if (ngpu <= gpu) {
        if (ngpu >= 0)
            cut_err_set(&e, "GPU %d does not exist (%d found)", gpu, ngpu);
        fprintf(stderr, "cutune baseline: no usable GPU: %s\n", e.msg);
        code = CUT_EXIT_USAGE;
        goto done;
    }
    cut_timing tm;
    cut_timing_default(&tm);
    char self[PATH_MAX];
    if (cut_gpu_query(gpu, &info, &e) != 0 ||
        !(r = cut_runner_gpu_new(gpu, cut_cli_worker_exe(self, sizeof self), &tm, &e))) {
        fprintf(stderr, "cutune baseline: %s\n", e.msg);
        code = CUT_EXIT_FAIL;
        goto done;
    }
    if (json_path && !(json = fopen(json_path, "a"))) {
        fprintf(stderr, "cutune baseline: cannot open '%s' for appending\n", json_path);
        code = CUT_EXIT_USAGE;
        goto done;
    }
    char rec_dir[1024], res_dir[1024];
    snprintf(rec_dir, sizeof rec_dir, "%s/tuningrecords", outdir);
    snprintf(res_dir, sizeof res_dir, "%s/tuningresults", outdir);
    const char *dirs[2] = {rec_dir, res_dir};
    for (int i = 0; i < list.count; i++) {
        if (case_sel && i + 1 != case_sel)
            continue;
        /* a custom shape has the case number tune gave it in this folder */
        const int idx = conv_str ? cut_conv_custom_case(dirs, 2, &list.cases[i]) : i + 1;
        if (run_case(r, &info, rec_dir, &list.cases[i], idx, json, &e) != 0) {
            fprintf(stderr, "cutune baseline: case %d: %s\n", idx, e.msg);
            code = CUT_EXIT_FAIL;
        }
    }
done:
    if (json)
        fclose(json);
    cut_runner_free(r);
    cut_conv_list_free(&list);
    return code;
}
