/* cutune — the GEMM report: per GEMM log, the best generic (simt) kernel, the best template kernel (any other
 * template) and the vendor baseline file, as report/gemm.md and report/gemm.json (cutune/report.h). */
#include "cutune/gemm_space.h"
#include "cutune/log.h"
#include "cutune/report.h"
#include "cutune/record.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_generic(int tpl) { return tpl == CUT_GEMM_TPL_SIMT; }
static int is_template(int tpl) { return tpl != CUT_GEMM_TPL_SIMT; }

static void row_init(cut_gemm_report_row *r, const cut_gemm *g)
{
    memset(r, 0, sizeof *r);
    r->gemm = *g;
    r->generic_tflops = r->template_tflops = r->vendor_tflops = -1;
    r->generic_ms = r->template_ms = r->vendor_ms = -1;
}

/* The best record of recs passing want into (ms, tflops, knobs); the GPU name of the first found into gpu. */
static void take_best(const cut_gemm_record *recs, int n, int (*want)(int), double *ms, double *tflops, char *knobs,
                      size_t kn, char *gpu, size_t gn)
{
    int b = cut_gemm_records_best(recs, n, want);
    if (b < 0)
        return;
    *ms = recs[b].median_ms;
    *tflops = cut_gemm_gflops(&recs[b].gemm, recs[b].median_ms) / 1000.0;
    cut_gemm_sched_describe(&recs[b].sched, knobs, kn);
    if (!gpu[0])
        snprintf(gpu, gn, "%s", recs[b].env.gpu_name);
}

/* A finite number >= 0 of member key, or -1 when absent, null or wrong. */
static double num_or_missing(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0 ? v->valuedouble : -1;
}

/* res_dir/vendor_<name>.json: {"tflops", "ms", "algo"}. Missing file: nothing; malformed: a warning through the
 * log. When only one of tflops and ms is given, the other follows from the shape. */
static void read_vendor(const char *res_dir, const char *name, cut_gemm_report_row *r)
{
    char path[1024], *text = NULL;
    size_t len = 0;
    cut_err e = {{0}};
    if (snprintf(path, sizeof path, "%s/vendor_%s.json", res_dir, name) >= (int)sizeof path ||
        !cut_path_exists(path) || cut_read_file(path, &text, &len, &e) != 0)
        return;
    cJSON *o = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsObject(o)) {
        cut_log(CUT_LOG_WARN, "cutune report: %s is not a JSON object; vendor value left empty\n", path);
        cJSON_Delete(o);
        return;
    }
    double tf = num_or_missing(o, "tflops"), ms = num_or_missing(o, "ms"), fl = cut_gemm_flops(&r->gemm);
    if (tf < 0 && ms > 0)
        tf = fl / (ms * 1e9);
    if (ms < 0 && tf > 0)
        ms = fl / (tf * 1e9);
    r->vendor_tflops = tf;
    r->vendor_ms = ms;
    const cJSON *algo = cJSON_GetObjectItemCaseSensitive(o, "algo");
    if (cJSON_IsString(algo) && algo->valuestring)
        snprintf(r->vendor_algo, sizeof r->vendor_algo, "%s", algo->valuestring);
    if (tf < 0)
        cut_log(CUT_LOG_WARN, "cutune report: %s has neither \"tflops\" nor \"ms\"; vendor value left empty\n", path);
    cJSON_Delete(o);
}

/* One row from one log; 0, or -1 when the log has no record (nothing to say). */
static int collect_one(const char *rec_dir, const char *res_dir, const char *file, cut_gemm_report_row *row,
                       cut_err *e)
{
    char path[1024], note[512];
    if (snprintf(path, sizeof path, "%s/%s", rec_dir, file) >= (int)sizeof path)
        return cut_err_set(e, "path too long: %s/%s", rec_dir, file);
    cut_gemm_record *recs = NULL;
    int n = 0, partial = 0, bad = 0;
    if (cut_gemm_records_load(path, &recs, &n, &partial, &bad, note, sizeof note, e) != 0)
        return -1;
    if (bad)
        cut_log(CUT_LOG_WARN, "cutune report: %d malformed line(s) skipped (first: %s)\n", bad, note);
    if (n == 0) {
        free(recs);
        return 1;
    }
    row_init(row, &recs[0].gemm);
    take_best(recs, n, is_generic, &row->generic_ms, &row->generic_tflops, row->generic_knobs,
              sizeof row->generic_knobs, row->gpu, sizeof row->gpu);
    take_best(recs, n, is_template, &row->template_ms, &row->template_tflops, row->template_knobs,
              sizeof row->template_knobs, row->gpu, sizeof row->gpu);
    free(recs);
    char name[256];
    cut_gemm_name(&row->gemm, name, sizeof name);
    read_vendor(res_dir, name, row);
    return 0;
}

int cut_gemm_report_collect(const char *rec_dir, const char *res_dir, cut_gemm_report_row **rows, cut_err *e)
{
    char **names = NULL;
    int nn = 0, m = 0;
    *rows = NULL;
    if (cut_gemm_records_dir_list(rec_dir, &names, &nn, e) != 0)
        return -1;
    *rows = cut_xcalloc((size_t)(nn > 0 ? nn : 1), sizeof **rows);
    for (int i = 0; i < nn; i++) {
        int rc = collect_one(rec_dir, res_dir, names[i], &(*rows)[m], e);
        if (rc < 0) {
            cut_records_names_free(names, nn);
            free(*rows);
            *rows = NULL;
            return -1;
        }
        m += rc == 0;
    }
    cut_records_names_free(names, nn);
    return m;
}

/* ---- writing ---- */

static void md_num(cut_buf *b, double v, const char *fmt)
{
    if (v < 0)
        cut_buf_printf(b, " n/a |");
    else
        cut_buf_printf(b, fmt, v);
}

static double ratio(double a, double b) { return a > 0 && b > 0 ? a / b : -1; }

static void md_table(cut_buf *b, const cut_gemm_report_row *rows, int n, cut_dtype dt)
{
    int any = 0;
    for (int i = 0; i < n; i++) {
        const cut_gemm_report_row *r = &rows[i];
        if (r->gemm.dtype != dt)
            continue;
        if (!any++)
            cut_buf_printf(b, "\n## %s\n\n| M | N | K | layout | generic TFLOP/s | template TFLOP/s | vendor TFLOP/s "
                              "| template/vendor | generic/vendor | vendor algo | best generic knobs | best template "
                              "knobs |\n|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---|---|\n",
                           cut_dtype_name(dt));
        cut_buf_printf(b, "| %d | %d | %d | %s", r->gemm.m, r->gemm.n, r->gemm.k, cut_gemm_layout_name(r->gemm.layout));
        if (cut_gemm_has_extras(&r->gemm)) /* batch, alpha, beta beside the layout: the columns stay seed 004's */
            cut_buf_printf(b, ", batch %d, alpha %g, beta %g", cut_gemm_batch(&r->gemm), cut_gemm_alpha(&r->gemm),
                           cut_gemm_beta(&r->gemm));
        cut_buf_printf(b, " |");
        md_num(b, r->generic_tflops, " %.4g |");
        md_num(b, r->template_tflops, " %.4g |");
        md_num(b, r->vendor_tflops, " %.4g |");
        md_num(b, ratio(r->template_tflops, r->vendor_tflops), " %.2fx |");
        md_num(b, ratio(r->generic_tflops, r->vendor_tflops), " %.2fx |");
        cut_buf_printf(b, " %s | %s | %s |\n", r->vendor_algo[0] ? r->vendor_algo : "n/a",
                       r->generic_knobs[0] ? r->generic_knobs : "n/a", r->template_knobs[0] ? r->template_knobs : "n/a");
    }
}

static void json_num(cJSON *o, const char *key, double v)
{
    if (v < 0 || !isfinite(v))
        cJSON_AddNullToObject(o, key);
    else
        cJSON_AddNumberToObject(o, key, v);
}

static void json_str(cJSON *o, const char *key, const char *v)
{
    if (v[0])
        cJSON_AddStringToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

static cJSON *json_row(const cut_gemm_report_row *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "m", r->gemm.m);
    cJSON_AddNumberToObject(o, "n", r->gemm.n);
    cJSON_AddNumberToObject(o, "k", r->gemm.k);
    cJSON_AddStringToObject(o, "layout", cut_gemm_layout_name(r->gemm.layout));
    cJSON_AddStringToObject(o, "dtype", cut_dtype_name(r->gemm.dtype));
    cJSON_AddNumberToObject(o, "batch", cut_gemm_batch(&r->gemm));
    cJSON_AddNumberToObject(o, "alpha", cut_gemm_alpha(&r->gemm));
    cJSON_AddNumberToObject(o, "beta", cut_gemm_beta(&r->gemm));
    json_num(o, "generic_tflops", r->generic_tflops);
    json_num(o, "template_tflops", r->template_tflops);
    json_num(o, "vendor_tflops", r->vendor_tflops);
    json_str(o, "vendor_algo", r->vendor_algo);
    json_num(o, "generic_ms", r->generic_ms);
    json_num(o, "template_ms", r->template_ms);
    json_num(o, "vendor_ms", r->vendor_ms);
    json_str(o, "generic_knobs", r->generic_knobs);
    json_str(o, "template_knobs", r->template_knobs);
    return o;
}

static char *json_text(const char *command, const cut_gemm_report_row *rows, int n)
{
    cJSON *root = cJSON_CreateObject();
    const char *gpu = "";
    for (int i = 0; i < n && !gpu[0]; i++)
        gpu = rows[i].gpu;
    json_str(root, "gpu", gpu);
    json_str(root, "command", command ? command : "");
    cJSON *arr = cJSON_AddArrayToObject(root, "rows");
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, json_row(&rows[i]));
    char *txt = cJSON_Print(root);
    cJSON_Delete(root);
    if (!txt) {
        cut_log(CUT_LOG_ERROR, "cutune: out of memory (printing the GEMM report)\n");
        abort();
    }
    return txt;
}

int cut_gemm_report_write(const char *out_dir, const char *command, const cut_gemm_report_row *rows, int n,
                          cut_err *e)
{
    char md[1024], js[1024];
    if (cut_path_join(md, sizeof md, out_dir, "gemm.md", e) != 0 ||
        cut_path_join(js, sizeof js, out_dir, "gemm.json", e) != 0 || cut_mkdirs(out_dir, e) != 0)
        return -1;
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_printf(&b, "# GEMM: cutune vs vendor (TFLOP/s)\n\ngeneric = best valid simt kernel; template = best "
                       "valid kernel of any other template; vendor = tuningresults/vendor_<gemm>.json\n");
    if (n > 0 && rows[0].gpu[0])
        cut_buf_printf(&b, "\nGPU: %s\n", rows[0].gpu);
    for (int dt = 0; dt < CUT_DT_COUNT; dt++)
        md_table(&b, rows, n, (cut_dtype)dt);
    if (n == 0)
        cut_buf_printf(&b, "\nno GEMM logs found\n");
    int rc = cut_write_file_atomic(md, b.data, b.len, e);
    cut_buf_free(&b);
    char *txt = json_text(command, rows, n);
    if (rc == 0) {
        size_t l = strlen(txt);
        txt[l] = '\n'; /* cJSON_Print's terminator becomes the file's last newline */
        rc = cut_write_file_atomic(js, txt, l + 1, e);
    }
    cJSON_free(txt);
    return rc;
}
