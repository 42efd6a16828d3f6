/* cutune baseline — cuDNN's fastest fp32 forward algorithm and cutune's best tuned kernels, timed in the same
 * worker with the same harness, interleaved (round 1: ours then cuDNN, round 2 again), per case. */
#include "cli/args.h"
#include "cli/cli.h"
#include "cutune/gpu.h"
#include "cutune/record.h"
#include "cutune/tune.h"
#include "cutune/util.h"

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
    "  --json FILE    append one JSON object per case to FILE\n";

/* Indices of the k fastest valid records. */
static int best_k(const cut_record *recs, int n, int k, int *idx)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (recs[i].status != CUT_ST_OK)
            continue;
        int at = m < k ? m++ : k;
        if (at == k && recs[i].median_ms >= recs[idx[k - 1]].median_ms)
            continue;
        if (at == k)
            at = k - 1;
        while (at > 0 && recs[idx[at - 1]].median_ms > recs[i].median_ms) {
            idx[at] = idx[at - 1];
            at--;
        }
        idx[at] = i;
    }
    return m;
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
    int idx[TOPK], k = best_k(recs, n, TOPK, idx);
    if (r->prepare(r, c, 7, e) != 0) {
        free(recs);
        return -1;
    }
    cut_compile_opts co = {.sm_major = info->sm_major, .sm_minor = info->sm_minor, .cache_dir = NULL};
    cut_kernel_src ks[TOPK];
    cut_compiled bins[TOPK];
    cut_candidate cands[TOPK];
    memset(ks, 0, sizeof ks);
    memset(bins, 0, sizeof bins);
    for (int j = 0; j < k; j++) {
        if (cut_codegen_conv(c, &recs[idx[j]].sched, &ks[j], e) != 0 ||
            cut_compile_one(ks[j].src, "baseline", &co, &bins[j], e) != 0) {
            free(recs);
            return -1;
        }
        cands[j].ks = &ks[j];
        cands[j].bin = &bins[j];
    }
    double ours = -1, theirs = -1;
    int ours_j = -1;
    char algo[128] = "";
    for (int round = 0; round < ROUNDS; round++) {
        cut_result res[TOPK];
        if (k > 0 && r->measure(r, cands, k, res, e) != 0)
            goto fail;
        for (int j = 0; j < k; j++)
            if (res[j].status == CUT_ST_OK && (ours < 0 || res[j].median_ms < ours)) {
                ours = res[j].median_ms;
                ours_j = j;
            }
        cut_result cr;
        if (cut_runner_gpu_cudnn(r, &cr, algo, sizeof algo, e) != 0)
            goto fail;
        if (cr.status == CUT_ST_OK && (theirs < 0 || cr.median_ms < theirs))
            theirs = cr.median_ms;
    }
    double flops = cut_conv_flops(c);
    printf("case %d  %-58s cuDNN %-24s %9.4f ms  cutune %9.4f ms  (%6.0f vs %6.0f GFLOP/s)  speedup %.2fx\n",
           case_idx, name, algo, theirs, ours, ours > 0 ? flops / ours / 1e6 : 0, theirs > 0 ? flops / theirs / 1e6 : 0,
           (ours > 0 && theirs > 0) ? theirs / ours : 0);
    fflush(stdout);
    if (json) {
        char sched[512] = "null";
        if (ours_j >= 0)
            cut_sched_to_json(&recs[idx[ours_j]].sched, sched, sizeof sched);
        fprintf(json,
                "{\"case\":%d,\"shape\":[%d,%d,%d,%d,%d,%d,%d,%d,%d],\"trials\":%d,\"cutune_ms\":%.6f,"
                "\"cudnn_ms\":%.6f,\"cudnn_algo\":\"%s\",\"speedup\":%.4f,\"cutune_gflops\":%.1f,"
                "\"cudnn_gflops\":%.1f,\"best_sched\":%s}\n",
                case_idx, c->n, c->h, c->w, c->co, c->ci, c->kh, c->kw, c->stride, c->pad, n, ours, theirs, algo,
                (ours > 0 && theirs > 0) ? theirs / ours : 0, ours > 0 ? flops / ours / 1e6 : 0,
                theirs > 0 ? flops / theirs / 1e6 : 0, sched);
        fflush(json);
    }
    for (int j = 0; j < k; j++) {
        cut_kernel_src_free(&ks[j]);
        cut_compiled_free(&bins[j]);
    }
    free(recs);
    return 0;
fail:
    for (int j = 0; j < k; j++) {
        cut_kernel_src_free(&ks[j]);
        cut_compiled_free(&bins[j]);
    }
    free(recs);
    return -1;
}

int cut_cmd_baseline(int argc, char **argv)
{
    const char *list_name = "seed001", *conv_str = NULL, *outdir = ".", *json_path = NULL;
    int case_sel = 0, gpu = 0;
    cut_err e = {{0}};
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
        } else if (!strcmp(a, "--outdir")) {
            rc = cut_arg_str(argc, argv, &i, &outdir, &e);
        } else if (!strcmp(a, "--json")) {
            rc = cut_arg_str(argc, argv, &i, &json_path, &e);
        } else if (!strcmp(a, "--case")) {
            rc = cut_arg_int(argc, argv, &i, 1, 1 << 20, &case_sel, &e);
        } else if (!strcmp(a, "--gpu")) {
            rc = cut_arg_int(argc, argv, &i, 0, 1024, &gpu, &e);
        } else {
            rc = cut_err_set(&e, "unknown option '%s' (see cutune baseline --help)", a);
        }
        if (rc != 0) {
            fprintf(stderr, "cutune baseline: %s\n", e.msg);
            return CUT_EXIT_USAGE;
        }
    }
    cut_conv_list list;
    if (cut_cli_workloads(conv_str, list_name, &list, &e) != 0) {
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
    /* Longer timing than during the search: these are the figures that get reported. */
    tm.min_repeats = 20;
    tm.min_total_ms = 200;
    tm.max_repeats = 2000;
    if (cut_gpu_query(gpu, &info, &e) != 0 || !(r = cut_runner_gpu_new(gpu, NULL, &tm, &e))) {
        fprintf(stderr, "cutune baseline: %s\n", e.msg);
        code = CUT_EXIT_FAIL;
        goto done;
    }
    if (json_path && !(json = fopen(json_path, "a"))) {
        fprintf(stderr, "cutune baseline: cannot open '%s' for appending\n", json_path);
        code = CUT_EXIT_USAGE;
        goto done;
    }
    char rec_dir[1024];
    snprintf(rec_dir, sizeof rec_dir, "%s/tuningrecords", outdir);
    for (int i = 0; i < list.count; i++) {
        if (case_sel && i + 1 != case_sel)
            continue;
        if (run_case(r, &info, rec_dir, &list.cases[i], i + 1, json, &e) != 0) {
            fprintf(stderr, "cutune baseline: case %d: %s\n", i + 1, e.msg);
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
