/* cutune — the reports of user kernels (cutune/report.h): what `tune --kernel` left in a folder (its logs and its
 * final.jsonl lines) and what `optimize` left in its output folder (summary.json), as markdown and JSON under
 * report/, as the conv and GEMM reports are. */
#include "cutune/record.h"
#include "cutune/report.h"
#include "cutune/util.h"
#include "record/json.h"

#include <cjson/cJSON.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : -1;
}

static const char *str(const cJSON *o, const char *key)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
    return s ? s : "";
}

/* "1.2345" or "n/a" for a missing (negative) number. */
static const char *fmt(char *buf, size_t n, const char *f, double v)
{
    if (v < 0)
        snprintf(buf, n, "n/a");
    else
        snprintf(buf, n, f, v);
    return buf;
}

/* report/<stem>.md and report/<stem>.json under dir. */
static int write_pair(const char *dir, const char *stem, const cut_buf *md, cJSON *json, cut_err *e)
{
    char out[4096], p[4200];
    if (cut_path_join(out, sizeof out, dir, "report", e) != 0 || cut_mkdirs(out, e) != 0)
        return -1;
    snprintf(p, sizeof p, "%s/%s.md", out, stem);
    if (cut_write_file_atomic(p, md->data, md->len, e) != 0)
        return -1;
    char *text = cJSON_Print(json);
    if (!text)
        return cut_err_set(e, "out of memory printing %s.json", stem);
    snprintf(p, sizeof p, "%s/%s.json", out, stem);
    int rc = cut_write_file_atomic(p, text, strlen(text), e);
    cJSON_free(text);
    return rc;
}

/* ---- optimize ---- */

int cut_opt_report(const char *opt_dir, const char *command, cut_buf *md, cut_err *e)
{
    char path[4096], *text = NULL;
    size_t len = 0;
    if (cut_path_join(path, sizeof path, opt_dir, "summary.json", e) != 0)
        return -1;
    if (cut_read_file(path, &text, &len, e) != 0)
        return cut_err_wrap(e, "%s has no optimizer summary (run `cutune optimize --outdir %s` first)", opt_dir, opt_dir);
    cJSON *s = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *ks = cJSON_GetObjectItemCaseSensitive(s, "kernels");
    if (!cJSON_IsArray(ks)) {
        cJSON_Delete(s);
        return cut_err_set(e, "%s: not an optimizer summary (no \"kernels\" array)", path);
    }
    cut_buf_printf(md, "# Optimized kernels (%s)\n\nGPU: %s, backend %s. Search: `%s`.\n\n", opt_dir, str(s, "gpu"),
                   str(s, "backend"), str(s, "command"));
    cut_buf_printf(md, "| kernel | baseline ms | best ms | speedup | builds | failed | best variant | moves |\n");
    cut_buf_printf(md, "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |\n");
    double logsum = 0;
    int nsp = 0;
    const cJSON *k;
    cJSON_ArrayForEach(k, ks)
    {
        char b1[32], b2[32], b3[32], moves[512] = "";
        const cJSON *mv, *m = cJSON_GetObjectItemCaseSensitive(k, "best_moves");
        size_t used = 0;
        cJSON_ArrayForEach(mv, m)
        {
            const char *name = cJSON_GetStringValue(mv);
            if (name && used + strlen(name) + 3 < sizeof moves)
                used += (size_t)snprintf(moves + used, sizeof moves - used, "%s%s", used ? " → " : "", name);
        }
        const double sp = num(k, "speedup");
        if (sp > 0) {
            logsum += log(sp);
            nsp++;
        }
        cut_buf_printf(md, "| %s | %s | %s | %s | %.0f | %.0f | %s | %s |\n", str(k, "name"),
                       fmt(b1, sizeof b1, "%.4f", num(k, "baseline_ms")), fmt(b2, sizeof b2, "%.4f", num(k, "best_ms")),
                       fmt(b3, sizeof b3, "%.2fx", sp), fmax(num(k, "builds"), 0), fmax(num(k, "failed"), 0),
                       str(k, "best_variant"), used ? moves : "(baseline)");
    }
    if (nsp)
        cut_buf_printf(md, "\nGeomean speedup over %d kernel%s: %.3fx\n", nsp, nsp == 1 ? "" : "s", exp(logsum / nsp));
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "command", command ? command : "");
    cJSON_AddStringToObject(out, "source", path);
    if (nsp)
        cJSON_AddNumberToObject(out, "geomean_speedup", exp(logsum / nsp));
    cJSON_AddItemToObject(out, "summary", s); /* owned by out now */
    int rc = write_pair(opt_dir, "optimize", md, out, e);
    cJSON_Delete(out);
    return rc;
}

/* ---- tune --kernel ---- */

/* The kernel logs (kernel_*.json) of dir, sorted. */
static int kernel_logs(const char *dir, char ***names, int *n, cut_err *e)
{
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return cut_err_set(e, "cannot open %s (run `cutune tune --kernel SPEC --outdir ...` first)", dir);
    int cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (strncmp(de->d_name, "kernel_", 7) != 0 || l < 12 || strcmp(de->d_name + l - 5, ".json") != 0)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            *names = cut_xrealloc(*names, sizeof **names * (size_t)cap);
        }
        (*names)[(*n)++] = cut_xstrdup(de->d_name);
    }
    closedir(d);
    for (int i = 1; i < *n; i++) /* insertion sort: a handful of names */
        for (int j = i; j > 0 && strcmp((*names)[j - 1], (*names)[j]) > 0; j--) {
            char *t = (*names)[j];
            (*names)[j] = (*names)[j - 1];
            (*names)[j - 1] = t;
        }
    return 0;
}

/* The last final.jsonl line of workload name (op "kernel"), or NULL. Caller deletes it. */
static cJSON *final_line(const char *outdir, const char *name)
{
    char path[4096], *text = NULL;
    size_t len = 0;
    cut_err e;
    if (cut_path_join(path, sizeof path, outdir, "final.jsonl", &e) != 0 || cut_read_file(path, &text, &len, &e) != 0)
        return NULL;
    cJSON *last = NULL;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        if (j && !strcmp(str(j, "op"), "kernel") && !strcmp(str(j, "workload"), name)) {
            cJSON_Delete(last);
            last = j;
        } else {
            cJSON_Delete(j);
        }
    }
    free(text);
    return last;
}

int cut_kernel_report(const char *outdir, const char *command, cut_buf *md, cut_err *e)
{
    char dir[4096];
    char **names = NULL;
    int n = 0;
    if (cut_path_join(dir, sizeof dir, outdir, "tuningrecords", e) != 0 || kernel_logs(dir, &names, &n, e) != 0)
        return -1;
    if (n == 0) {
        free(names);
        return cut_err_set(e, "%s has no kernel logs (kernel_*.json from `cutune tune --kernel`)", dir);
    }
    cut_buf_printf(md, "# Tuned kernels (%s)\n\n", outdir);
    cut_buf_printf(md, "| kernel | trials | failed | best ms (search) | final ms | baseline ms | speedup | best tunables |\n");
    cut_buf_printf(md, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
    cJSON *rows = cJSON_CreateArray();
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char path[4200], *text = NULL;
        size_t len = 0;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (cut_read_file(path, &text, &len, e) != 0) {
            rc = -1;
            break;
        }
        int trials = 0, failed = 0;
        double best = -1;
        cJSON *best_sched = NULL;
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            cJSON *j = cJSON_Parse(line);
            trials++; /* an unreadable line still counts as a trial run, as the tuner counts it */
            if (!j)
                continue;
            const double ms = num(j, "median_ms");
            if (strcmp(str(j, "status"), "ok") != 0)
                failed++;
            else if (ms > 0 && (best < 0 || ms < best)) {
                best = ms;
                cJSON_Delete(best_sched);
                best_sched = cJSON_DetachItemFromObjectCaseSensitive(j, "sched");
            }
            cJSON_Delete(j);
        }
        free(text);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(strlen(names[i]) - 5), names[i]); /* without .json */
        cJSON *fin = final_line(outdir, name);
        char *sched = best_sched ? cJSON_PrintUnformatted(best_sched) : NULL;
        char b1[32], b2[32], b3[32], b4[32];
        cut_buf_printf(md, "| %s | %d | %d | %s | %s | %s | %s | `%s` |\n", name + 7, trials, failed,
                       fmt(b1, sizeof b1, "%.4f", best), fmt(b2, sizeof b2, "%.4f", fin ? num(fin, "cutune_ms") : -1),
                       fmt(b3, sizeof b3, "%.4f", fin ? num(fin, "baseline_ms") : -1),
                       fmt(b4, sizeof b4, "%.2fx", fin && num(fin, "speedup") > 0 ? num(fin, "speedup") : -1),
                       sched ? sched : "none valid");
        cJSON_free(sched);
        cJSON *row = cJSON_CreateObject();
        cJSON_AddStringToObject(row, "workload", name);
        cJSON_AddNumberToObject(row, "trials", trials);
        cJSON_AddNumberToObject(row, "failed", failed);
        if (best > 0)
            cut_rec_add_num(row, "best_search_ms", best); /* exactly the record's number (cJSON may drop digits) */
        else
            cJSON_AddNullToObject(row, "best_search_ms");
        cJSON_AddItemToObject(row, "best_sched", best_sched ? best_sched : cJSON_CreateNull());
        cJSON_AddItemToObject(row, "final", fin ? fin : cJSON_CreateNull());
        cJSON_AddItemToArray(rows, row);
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (rc == 0) {
        cJSON *out = cJSON_CreateObject();
        cJSON_AddStringToObject(out, "command", command ? command : "");
        cJSON_AddItemToObject(out, "kernels", rows);
        rc = write_pair(outdir, "kernel", md, out, e);
        cJSON_Delete(out);
    } else {
        cJSON_Delete(rows);
    }
    return rc;
}
