/* cutune baseline --gemm — the best vendor GEMM (cuBLAS GemmEx, cuBLASLt heuristic and enumerated algorithms; the
 * CUTLASS-profiler analogue) for one GEMM, timed in the measurement worker with the same harness as cutune's
 * kernels. Prints the table and writes one JSON line to DIR/tuningresults/vendor_<gemm name>.json (replaced). */
#include "cli/baseline_gemm.h"
#include "cli/cli.h"

#include "cutune/gpu.h"
#include "cutune/util.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double tflops(const cut_gemm *g, double ms) { return cut_gemm_gflops(g, ms) / 1000.0; }

static void print_table(FILE *f, const cut_gemm *g, const cut_gpu_info *info, const cut_vendor_result *v)
{
    char name[128];
    cut_gemm_name(g, name, sizeof name);
    fprintf(f, "%s on %s: %.4g GFLOP\n", name, info->name, cut_gemm_flops(g) / 1e9);
    fprintf(f, "vendor candidates: %d tried, %d valid (cuBLASLt: %d from the heuristic, %d enumerated)%s\n", v->tried,
            v->valid, v->heuristic, v->enumerated, v->budget_hit ? "; the time budget ran out" : "");
    fprintf(f, "%4s %11s %9s %9s  %s\n", "rank", "median ms", "TFLOP/s", "rel.err", "configuration");
    for (int i = 0; i < v->ntop; i++) {
        const cut_result *r = &v->top[i].res;
        fprintf(f, "%4d %11.4f %9.2f %9.2e  %s\n", i + 1, r->median_ms, tflops(g, r->median_ms), r->max_abs_err,
                v->top[i].config);
    }
    if (v->best.res.status == CUT_ST_OK)
        fprintf(f, "best: %s: %.4f ms, %.2f TFLOP/s\n", v->best.config, v->best.res.median_ms,
                tflops(g, v->best.res.median_ms));
    else
        fprintf(f, "no valid vendor GEMM: %s %s: %s\n", v->best.config, cut_status_name(v->best.res.status),
                v->best.res.error);
    if (v->note[0])
        fprintf(f, "note: %s\n", v->note);
}

static cJSON *entry_json(const cut_gemm *g, const cut_vendor_entry *en)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "config", en->config);
    cJSON_AddStringToObject(o, "status", cut_status_name(en->res.status));
    if (en->res.error[0])
        cJSON_AddStringToObject(o, "error", en->res.error);
    cJSON_AddNumberToObject(o, "median_ms", en->res.median_ms);
    cJSON_AddNumberToObject(o, "min_ms", en->res.min_ms);
    cJSON_AddNumberToObject(o, "max_ms", en->res.max_ms);
    cJSON_AddNumberToObject(o, "repeats", en->res.repeats);
    cJSON_AddNumberToObject(o, "tflops", en->res.status == CUT_ST_OK ? tflops(g, en->res.median_ms) : 0.0);
    cJSON_AddNumberToObject(o, "rel_err", isfinite(en->res.max_abs_err) ? en->res.max_abs_err : -1.0);
    return o;
}

/* One JSON object (no newline). Caller frees. */
static char *result_json(const cut_gemm *g, const cut_gpu_info *info, const cut_vendor_opts *o,
                         const cut_vendor_result *v)
{
    char name[128], ts[32];
    cut_gemm_name(g, name, sizeof name);
    cut_utc_timestamp(ts, sizeof ts);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "workload", name);
    cJSON_AddNumberToObject(j, "m", g->m);
    cJSON_AddNumberToObject(j, "n", g->n);
    cJSON_AddNumberToObject(j, "k", g->k);
    cJSON_AddStringToObject(j, "layout", cut_gemm_layout_name(g->layout));
    cJSON_AddStringToObject(j, "dtype", cut_dtype_name(g->dtype));
    cJSON_AddNumberToObject(j, "tolerance", cut_gemm_tolerance(g->dtype));
    cJSON_AddStringToObject(j, "gpu", info->name);
    cJSON_AddStringToObject(j, "gpu_uuid", info->uuid);
    cJSON_AddNumberToObject(j, "driver_version", info->driver_version);
    cJSON_AddStringToObject(j, "time", ts);
    cJSON_AddNumberToObject(j, "heuristic_n", o->heuristic_n);
    cJSON_AddBoolToObject(j, "enumerate", o->enumerate);
    cJSON_AddNumberToObject(j, "max_configs", o->max_configs);
    cJSON_AddNumberToObject(j, "budget_s", o->budget_s);
    cJSON_AddNumberToObject(j, "tried", v->tried);
    cJSON_AddNumberToObject(j, "valid", v->valid);
    cJSON_AddNumberToObject(j, "heuristic", v->heuristic);
    cJSON_AddNumberToObject(j, "enumerated", v->enumerated);
    cJSON_AddBoolToObject(j, "budget_hit", v->budget_hit);
    cJSON_AddStringToObject(j, "note", v->note);
    /* what cutune report --gemm reads: the best valid vendor kernel (null when none was valid) */
    const int ok = v->valid > 0 && v->best.res.status == CUT_ST_OK;
    if (ok) {
        cJSON_AddNumberToObject(j, "ms", v->best.res.median_ms);
        cJSON_AddNumberToObject(j, "tflops", tflops(g, v->best.res.median_ms));
        cJSON_AddStringToObject(j, "algo", v->best.config);
    } else {
        cJSON_AddNullToObject(j, "ms");
        cJSON_AddNullToObject(j, "tflops");
        cJSON_AddNullToObject(j, "algo");
    }
    cJSON_AddItemToObject(j, "best", entry_json(g, &v->best));
    cJSON *top = cJSON_AddArrayToObject(j, "top");
    for (int i = 0; i < v->ntop; i++)
        cJSON_AddItemToArray(top, entry_json(g, &v->top[i]));
    char *txt = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return txt;
}

/* DIR/tuningresults/vendor_<name>.json, one line (replaced atomically); also appended to json_path when set. */
static int write_json(const char *outdir, const char *json_path, const cut_gemm *g, const char *txt, char *path,
                      size_t path_len, cut_err *e)
{
    char dir[1024], name[128];
    cut_gemm_name(g, name, sizeof name);
    snprintf(dir, sizeof dir, "%s/tuningresults", outdir);
    if (cut_mkdirs(dir, e) != 0)
        return -1;
    snprintf(path, path_len, "%s/vendor_%s.json", dir, name);
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_printf(&b, "%s\n", txt);
    int rc = cut_write_file_atomic(path, b.data, b.len, e);
    if (rc == 0 && json_path) {
        FILE *f = fopen(json_path, "a");
        if (!f || fputs(b.data, f) < 0)
            rc = cut_err_set(e, "cannot append to '%s'", json_path);
        if (f && fclose(f) != 0)
            rc = cut_err_set(e, "cannot write '%s'", json_path);
    }
    cut_buf_free(&b);
    return rc;
}

/* The GPU part: runner, workload, vendor search, table, JSON. Returns the exit code. */
static int run_gemm(const cut_gemm *g, const cut_vendor_opts *o, int gpu, const cut_gpu_info *info,
                    const char *outdir, const char *json_path)
{
    cut_err e = {{0}};
    cut_timing tm;
    cut_timing_default(&tm);
    char self[PATH_MAX];
    cut_runner *r = cut_runner_gpu_new(gpu, cut_cli_worker_exe(self, sizeof self), &tm, &e);
    cut_vendor_result *v = cut_xcalloc(1, sizeof *v);
    int code = CUT_EXIT_FAIL;
    if (!r || cut_runner_prepare_gemm(r, g, 7, &e) != 0 || cut_runner_gpu_vendor(r, o, v, &e) != 0) {
        fprintf(stderr, "cutune baseline: %s\n", e.msg);
        goto done;
    }
    print_table(stdout, g, info, v);
    char *txt = result_json(g, info, o, v);
    char path[1200];
    if (write_json(outdir, json_path, g, txt, path, sizeof path, &e) != 0) {
        fprintf(stderr, "cutune baseline: %s\n", e.msg);
    } else {
        printf("wrote %s\n", path);
        code = v->best.res.status == CUT_ST_OK ? CUT_EXIT_OK : CUT_EXIT_FAIL;
    }
    free(txt);
done:
    free(v);
    cut_runner_free(r);
    return code;
}

int cut_baseline_gemm(const cut_gemm *g, const cut_vendor_opts *o, int gpu, const char *outdir,
                      const char *json_path)
{
    cut_err e = {{0}};
    if (cut_gemm_cli_finish(g, &e) != 0) {
        fprintf(stderr, "cutune baseline: %s\n", e.msg);
        return CUT_EXIT_USAGE;
    }
    if (cut_check_writable_dir(outdir, &e) != 0) {
        fprintf(stderr, "cutune baseline: --outdir: %s\n", e.msg);
        return CUT_EXIT_USAGE;
    }
    int ngpu = cut_gpu_init(&e);
    if (ngpu <= gpu) {
        if (ngpu >= 0)
            cut_err_set(&e, "GPU %d does not exist (%d found)", gpu, ngpu);
        fprintf(stderr, "cutune baseline: no usable GPU for the vendor GEMM baseline: %s\n", e.msg);
        return CUT_EXIT_USAGE;
    }
    cut_gpu_info info;
    if (cut_gpu_query(gpu, &info, &e) != 0) {
        fprintf(stderr, "cutune baseline: %s\n", e.msg);
        return CUT_EXIT_FAIL;
    }
    return run_gemm(g, o, gpu, &info, outdir, json_path);
}
