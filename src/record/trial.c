/* cutune — the one record line (version 2, cutune/record.h): the fields every op's trial has, written and read in
 * one place; the ops add their workload and schedule objects. */
#include "cutune/log.h"
#include "cutune/record.h"
#include "record/json.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cut_rec_add_trial(void *root_, const cut_trial *tr, double gflops)
{
    cJSON *root = root_;
    cJSON_AddStringToObject(root, "status", cut_status_name(tr->status));
    if (tr->status != CUT_ST_OK)
        cut_rec_add_str(root, "error", tr->error);
    /* -1, "not measured", is written as null (and read back as -1); any other number as it is, so that every line
     * that loads writes back the same. */
    const int ok = tr->status == CUT_ST_OK && tr->median_ms > 0;
    cut_rec_add_num(root, "median_ms", tr->median_ms == -1 ? NAN : tr->median_ms);
    cut_rec_add_num(root, "min_ms", tr->min_ms == -1 ? NAN : tr->min_ms);
    cut_rec_add_num(root, "max_ms", tr->max_ms == -1 ? NAN : tr->max_ms);
    cJSON_AddNumberToObject(root, "repeats", tr->repeats);
    cut_rec_add_num(root, "gflops", ok ? gflops : 0);
    cut_rec_add_num(root, "err", tr->err == -1 ? NAN : tr->err);
    cut_rec_add_num(root, "compile_ms", tr->compile_ms);
    cJSON_AddNumberToObject(root, "regs", tr->regs);
    cJSON_AddNumberToObject(root, "spills", tr->spills);
    cut_rec_add_env(root, &tr->env);
    cut_rec_add_str(root, "ts", tr->ts);
    if (tr->energy_mj > 0)
        cut_rec_add_num(root, "energy_mj", tr->energy_mj);
    if (tr->edp > 0)
        cut_rec_add_num(root, "edp", tr->edp);
    if (tr->power_w > 0)
        cut_rec_add_num(root, "power_w", tr->power_w);
}

void cut_rec_print(void *root, cut_buf *b)
{
    char *txt = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!txt) {
        cut_log(CUT_LOG_ERROR, "cutune: out of memory (printing a record)\n");
        abort();
    }
    cut_buf_append(b, txt, strlen(txt));
    cut_buf_append(b, "\n", 1);
    cJSON_free(txt);
}

int cut_rec_get_version(const cJSON *root, const char *op, int min_version, int *version, cut_err *e)
{
    if (!cJSON_IsObject(root))
        return cut_err_set(e, "record is not a JSON object");
    int v = 0;
    if (cut_rec_get_int(root, "", "v", &v, e) != 0)
        return -1;
    if (v < min_version || v > CUT_TRIAL_VERSION)
        return cut_err_set(e, "record version %d is not supported (a %s log holds versions %d to %d)", v, op,
                           min_version, CUT_TRIAL_VERSION);
    if (v >= 2) { /* the one record line: its op first */
        char got[16];
        if (cut_rec_get_str(root, "", "op", got, sizeof got, e) != 0)
            return -1;
        if (strcmp(got, op) != 0)
            return cut_err_set(e, "record field 'op' is '%s': this log holds '%s' records", got, op);
    }
    *version = v;
    return 0;
}

cJSON *cut_rec_read_json_file(const char *path, cut_err *e)
{
    char *text = NULL;
    size_t len = 0;
    if (cut_read_file(path, &text, &len, e) != 0)
        return NULL;
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    if (!j)
        cut_err_set(e, "%s: not valid JSON", path);
    return j;
}

static int parse_obj(const cJSON *root, const char *op, cut_sched_parser parse, const void *ctx, cut_trial *tr,
                     cut_err *e)
{
    int v = 0;
    if (cut_rec_get_version(root, op, CUT_TRIAL_VERSION, &v, e) != 0)
        return -1;
    if (cut_rec_get_int(root, "", "trial", &tr->trial, e) != 0)
        return -1;
    if (tr->trial < 0)
        return cut_err_set(e, "record field 'trial' is %d: it must not be negative", tr->trial);
    const cJSON *sched = cut_rec_field(root, "", "sched", e);
    if (!sched)
        return -1;
    if (parse(ctx, sched, &tr->sched, e) != 0)
        return cut_err_wrap(e, "record field 'sched'");
    if (cut_rec_get_status(root, &tr->status, tr->error, sizeof tr->error, e) != 0 ||
        cut_rec_get_num(root, "", "median_ms", -1, &tr->median_ms, e) != 0 ||
        cut_rec_get_num(root, "", "min_ms", -1, &tr->min_ms, e) != 0 ||
        cut_rec_get_num(root, "", "max_ms", -1, &tr->max_ms, e) != 0 ||
        cut_rec_get_int(root, "", "repeats", &tr->repeats, e) != 0 ||
        cut_rec_get_num(root, "", "err", -1, &tr->err, e) != 0 ||
        cut_rec_get_num(root, "", "compile_ms", -1, &tr->compile_ms, e) != 0 ||
        cut_rec_get_int(root, "", "regs", &tr->regs, e) != 0 || cut_rec_get_int(root, "", "spills", &tr->spills, e) != 0 ||
        cut_rec_get_env(root, &tr->env, e) != 0 || cut_rec_get_str(root, "", "ts", tr->ts, sizeof tr->ts, e) != 0 ||
        cut_rec_get_opt_num(root, "energy_mj", &tr->energy_mj, e) != 0 ||
        cut_rec_get_opt_num(root, "edp", &tr->edp, e) != 0 || cut_rec_get_opt_num(root, "power_w", &tr->power_w, e) != 0)
        return -1;
    if (tr->status == CUT_ST_OK && !(tr->median_ms > 0))
        return cut_err_set(e, "record has status ok without a positive 'median_ms'");
    return 0;
}

int cut_trial_parse(const char *line, size_t len, const char *op, cut_sched_parser parse, const void *ctx,
                    cut_trial *tr, cut_err *e)
{
    cJSON *root = cut_rec_parse_line(line, len, e);
    if (!root)
        return -1;
    cut_trial tmp;
    memset(&tmp, 0, sizeof tmp);
    int rc = parse_obj(root, op, parse, ctx, &tmp, e);
    cJSON_Delete(root);
    if (rc == 0)
        *tr = tmp;
    return rc;
}

/* *out allocated here (NULL when none); caller frees. */
int cut_trial_log_load(const char *path, const char *op, cut_sched_parser parse, const void *ctx, cut_trial **out,
                       int *n, int *extra, cut_err *e)
{
    *out = NULL;
    *n = *extra = 0;
    if (!cut_path_exists(path))
        return 0;
    char *text = NULL;
    size_t len = 0;
    if (cut_read_file(path, &text, &len, e) != 0)
        return -1;
    int cap = 0, lineno = 0;
    for (size_t off = 0; off < len;) {
        const char *nl = memchr(text + off, '\n', len - off);
        if (!nl)
            break; /* an incomplete last line: the log opens repaired, it is not a trial */
        size_t l = (size_t)(nl - (text + off));
        lineno++;
        int blank = 1;
        for (size_t i = 0; i < l && blank; i++)
            blank = text[off + i] == ' ' || text[off + i] == '\t' || text[off + i] == '\r';
        if (!blank) {
            cut_trial tr;
            cut_err why = {{0}};
            if (cut_trial_parse(text + off, l, op, parse, ctx, &tr, &why) != 0) {
                if (++*extra == 1)
                    cut_log(CUT_LOG_WARN, "cutune: %s line %d skipped: %s\n", path, lineno, why.msg);
            } else {
                if (*n == cap) {
                    cap = cap ? 2 * cap : 64;
                    *out = cut_xrealloc(*out, (size_t)cap * sizeof **out);
                }
                (*out)[(*n)++] = tr;
            }
        }
        off += l + 1;
    }
    if (*extra > 1)
        cut_log(CUT_LOG_WARN, "cutune: %s: %d unreadable line(s) skipped in all\n", path, *extra);
    free(text);
    return 0;
}
