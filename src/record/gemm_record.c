/* cutune — GEMM tuning records (cutune/gemm_record.h has the format): JSON lines with the GEMM registry's names,
 * tolerant loading, and the tuningresults/ file of the fastest records. */
#include "cutune/log.h"
#include "cutune/gemm_record.h"
#include "cutune/gemm_space.h"
#include "cutune/record.h"
#include "cutune/op.h"
#include "record/json.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---- schedules ---- */

/* The index of knob `name` of t, or -1. */
static int knob_index(const cut_gemm_template *t, const char *name)
{
    for (int i = 0; i < t->nknobs && i < CUT_MAX_KNOBS; i++)
        if (!strcmp(t->knob_name(i), name))
            return i;
    return -1;
}

int cut_gemm_sched_from_cjson(const void *obj, cut_sched *s, cut_err *e)
{
    const cJSON *o = obj;
    if (!cJSON_IsObject(o))
        return cut_err_set(e, "a GEMM schedule must be a JSON object");
    const cJSON *tp = cJSON_GetObjectItemCaseSensitive(o, "tpl");
    if (!cJSON_IsString(tp) || !tp->valuestring)
        return cut_err_set(e, "a GEMM schedule needs \"tpl\" as a string");
    int tpl = cut_gemm_template_find(tp->valuestring);
    if (tpl < 0)
        return cut_err_set(e, "'%.40s' is not a GEMM template", tp->valuestring);
    const cut_gemm_template *t = cut_gemm_template_get(tpl);
    cut_sched tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.tpl = tpl;
    int seen = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, o)
    {
        if (!it->string || !strcmp(it->string, "tpl"))
            continue;
        int i = knob_index(t, it->string);
        if (i < 0)
            return cut_err_set(e, "'%.40s' is not a knob of the %s template", it->string, t->name);
        if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) || fabs(it->valuedouble) > 1e9)
            return cut_err_set(e, "knob '%s' must be an integer", it->string);
        if (seen & (1 << i))
            return cut_err_set(e, "knob '%s' is given twice", it->string);
        seen |= 1 << i;
        tmp.k[i] = (int)it->valuedouble;
    }
    for (int i = 0; i < t->nknobs && i < CUT_MAX_KNOBS; i++) {
        const int dflt = t->knob_default ? t->knob_default(i) : -1;
        if (!(seen & (1 << i)) && dflt < 0)
            return cut_err_set(e, "the %s schedule lacks knob '%s'", t->name, t->knob_name(i));
        if (!(seen & (1 << i)))
            tmp.k[i] = dflt; /* a record written before the knob existed */
    }
    *s = tmp;
    return 0;
}

/* ---- records ---- */

static void add_workload(cJSON *root, const cut_gemm *g)
{
    cJSON *wl = cJSON_AddObjectToObject(root, "workload");
    cJSON_AddStringToObject(wl, "kind", "gemm");
    cJSON_AddNumberToObject(wl, "m", g->m);
    cJSON_AddNumberToObject(wl, "n", g->n);
    cJSON_AddNumberToObject(wl, "k", g->k);
    cJSON_AddStringToObject(wl, "layout", cut_gemm_layout_name(g->layout));
    cJSON_AddStringToObject(wl, "dtype", cut_dtype_name(g->dtype));
    /* issue 21's fields only when not the defaults, so a plain GEMM's line reads as it always did */
    if (cut_gemm_batch(g) > 1)
        cJSON_AddNumberToObject(wl, "batch", cut_gemm_batch(g));
    if (cut_gemm_alpha(g) != 1.0 || cut_gemm_beta(g) != 0.0) {
        cut_rec_add_num(wl, "alpha", cut_gemm_alpha(g));
        cut_rec_add_num(wl, "beta", cut_gemm_beta(g));
    }
}

/* The optional workload fields batch, alpha and beta (absent: 1, 1, 0). */
static int parse_extras(const cJSON *wl, cut_gemm *g, cut_err *e)
{
    int batch = 1;
    double alpha = 1.0, beta = 0.0;
    if (cJSON_GetObjectItemCaseSensitive(wl, "batch") && cut_rec_get_int(wl, "workload.", "batch", &batch, e) != 0)
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(wl, "alpha") &&
        (cut_rec_get_num(wl, "workload.", "alpha", NAN, &alpha, e) != 0 ||
         cut_rec_get_num(wl, "workload.", "beta", NAN, &beta, e) != 0))
        return -1;
    if (batch < 1)
        return cut_err_set(e, "record field 'workload.batch' is %d: it must be at least 1", batch);
    cut_gemm_set_extras(g, batch, alpha, beta);
    return 0;
}

void cut_gemm_record_to_json(const cut_gemm_record *r, cut_buf *b)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) {
        cut_log(CUT_LOG_ERROR, "cutune: out of memory (building a GEMM record)\n");
        abort();
    }
    cJSON_AddNumberToObject(root, "v", CUT_TRIAL_VERSION);
    cJSON_AddStringToObject(root, "op", "gemm");
    cJSON_AddNumberToObject(root, "trial", r->trial);
    add_workload(root, &r->gemm);
    char sj[1024];
    cJSON *so = cut_tpl_sched_json(CUT_OP_GEMM, &r->sched, sj, sizeof sj) >= 0 ? cJSON_Parse(sj) : NULL;
    if (so)
        cJSON_AddItemToObject(root, "sched", so);
    else
        cJSON_AddNullToObject(root, "sched"); /* unknown template: the reader skips the line */
    int ok = r->status == CUT_ST_OK && r->median_ms > 0;
    double gflops = ok ? cut_gemm_gflops(&r->gemm, r->median_ms) : 0;
    cut_trial tr = {.trial = r->trial, .sched = r->sched, .status = r->status, .median_ms = r->median_ms,
                    .min_ms = r->min_ms, .max_ms = r->max_ms, .repeats = r->repeats, .err = r->rel_err,
                    .compile_ms = r->compile_ms, .regs = r->regs, .spills = r->spills, .env = r->env};
    snprintf(tr.error, sizeof tr.error, "%s", r->error);
    snprintf(tr.ts, sizeof tr.ts, "%s", r->ts);
    cut_rec_add_trial(root, &tr, gflops);
    /* seed 004's units, and the name version 1 gave the check's error (kept for the readers of either version) */
    cut_rec_add_num(root, "tflops", gflops / 1000.0);
    cut_rec_add_num(root, "rel_err", r->rel_err == -1 ? NAN : r->rel_err); /* as "err": -1 (not checked) is null */
    cut_rec_print(root, b);
}

static int parse_workload(const cJSON *root, cut_gemm *g, cut_err *e)
{
    const cJSON *wl = cut_rec_field(root, "", "workload", e);
    if (!wl)
        return -1;
    if (!cJSON_IsObject(wl))
        return cut_err_set(e, "record field 'workload' must be an object");
    char kind[16], layout[8], dtype[8];
    if (cut_rec_get_str(wl, "workload.", "kind", kind, sizeof kind, e) != 0)
        return -1;
    if (strcmp(kind, "gemm") != 0)
        return cut_err_set(e, "record field 'workload.kind' is '%s': a GEMM log holds 'gemm' records", kind);
    if (cut_rec_get_int(wl, "workload.", "m", &g->m, e) != 0 || cut_rec_get_int(wl, "workload.", "n", &g->n, e) != 0 ||
        cut_rec_get_int(wl, "workload.", "k", &g->k, e) != 0 ||
        cut_rec_get_str(wl, "workload.", "layout", layout, sizeof layout, e) != 0 ||
        cut_rec_get_str(wl, "workload.", "dtype", dtype, sizeof dtype, e) != 0 || parse_extras(wl, g, e) != 0)
        return -1;
    if (cut_gemm_layout_parse(layout, &g->layout, e) != 0 || cut_dtype_parse(dtype, &g->dtype, e) != 0 ||
        cut_gemm_validate(g, e) != 0)
        return cut_err_wrap(e, "record field 'workload'");
    return 0;
}

static int parse_numbers(const cJSON *root, cut_gemm_record *r, cut_err *e)
{
    if (cut_rec_get_num(root, "", "median_ms", -1, &r->median_ms, e) != 0 ||
        cut_rec_get_num(root, "", "min_ms", -1, &r->min_ms, e) != 0 ||
        cut_rec_get_num(root, "", "max_ms", -1, &r->max_ms, e) != 0 ||
        cut_rec_get_int(root, "", "repeats", &r->repeats, e) != 0 ||
        cut_rec_get_num(root, "", "gflops", 0, &r->gflops, e) != 0 ||
        cut_rec_get_num(root, "", "rel_err", -1, &r->rel_err, e) != 0 ||
        cut_rec_get_num(root, "", "compile_ms", -1, &r->compile_ms, e) != 0 ||
        cut_rec_get_int(root, "", "regs", &r->regs, e) != 0 || cut_rec_get_int(root, "", "spills", &r->spills, e) != 0)
        return -1;
    if (r->status == CUT_ST_OK && !(r->median_ms > 0))
        return cut_err_set(e, "record has status ok without a positive 'median_ms'");
    return 0;
}

static int parse_obj(const cJSON *root, cut_gemm_record *r, cut_err *e)
{
    int v = 0;
    if (cut_rec_get_version(root, "gemm", 1, &v, e) != 0)
        return -1;
    if (cut_rec_get_int(root, "", "trial", &r->trial, e) != 0)
        return -1;
    if (r->trial < 0)
        return cut_err_set(e, "record field 'trial' is %d: it must not be negative", r->trial);
    if (parse_workload(root, &r->gemm, e) != 0)
        return -1;
    const cJSON *sched = cut_rec_field(root, "", "sched", e);
    if (!sched)
        return -1;
    if (cut_gemm_sched_from_cjson(sched, &r->sched, e) != 0)
        return cut_err_wrap(e, "record field 'sched'");
    if (cut_rec_get_status(root, &r->status, r->error, sizeof r->error, e) != 0 || parse_numbers(root, r, e) != 0 || cut_rec_get_env(root, &r->env, e) != 0)
        return -1;
    return cut_rec_get_str(root, "", "ts", r->ts, sizeof r->ts, e);
}

int cut_gemm_record_parse(const char *line, size_t len, cut_gemm_record *r, cut_err *e)
{
    cJSON *root = cut_rec_parse_line(line, len, e);
    if (!root)
        return -1;
    cut_gemm_record tmp;
    memset(&tmp, 0, sizeof tmp);
    int rc = parse_obj(root, &tmp, e);
    cJSON_Delete(root);
    if (rc == 0)
        *r = tmp;
    return rc;
}

static int blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return 0;
    return 1;
}

/* *recs allocated here (NULL when none); caller frees. */
int cut_gemm_records_load(const char *path, cut_gemm_record **recs, int *n, int *partial, int *bad, char *note,
                          size_t note_len, cut_err *e)
{
    *recs = NULL;
    *n = 0;
    *partial = *bad = 0;
    if (note && note_len)
        note[0] = 0;
    if (!cut_path_exists(path))
        return 0;
    char *text = NULL;
    size_t len = 0;
    if (cut_read_file(path, &text, &len, e) != 0)
        return -1;
    int cap = 0, lineno = 0;
    for (size_t pos = 0; pos < len;) {
        const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
        if (!nl) { /* a write that did not finish */
            *partial = 1;
            break;
        }
        size_t ll = (size_t)(nl - line);
        pos += ll + 1;
        lineno++;
        if (blank(line, ll))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            *recs = cut_xrealloc(*recs, (size_t)cap * sizeof **recs);
        }
        cut_err pe = {{0}};
        if (cut_gemm_record_parse(line, ll, &(*recs)[*n], &pe) == 0)
            (*n)++;
        else if ((*bad)++ == 0 && note && note_len)
            snprintf(note, note_len, "%s:%d: %s", path, lineno, pe.msg);
    }
    free(text);
    return 0;
}

int cut_gemm_records_best(const cut_gemm_record *recs, int n, int (*want)(int tpl))
{
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (recs[i].status != CUT_ST_OK || !(recs[i].median_ms > 0) || (want && !want(recs[i].sched.tpl)))
            continue;
        if (best < 0 || recs[i].median_ms < recs[best].median_ms)
            best = i;
    }
    return best;
}

static int by_median(const void *pa, const void *pb)
{
    const cut_gemm_record *a = pa, *b = pb;
    return (a->median_ms > b->median_ms) - (a->median_ms < b->median_ms);
}

int cut_gemm_results_write(const char *rec_dir, const char *res_dir, const cut_gemm *g, int keep, cut_err *e)
{
    char name[256], in[1024], out[1024], note[512];
    cut_gemm_name(g, name, sizeof name);
    if (snprintf(in, sizeof in, "%s/%s.json", rec_dir, name) >= (int)sizeof in ||
        snprintf(out, sizeof out, "%s/%s.json", res_dir, name) >= (int)sizeof out)
        return cut_err_set(e, "tuning results path too long");
    cut_gemm_record *recs = NULL;
    int n = 0, partial = 0, bad = 0, m = 0;
    if (cut_gemm_records_load(in, &recs, &n, &partial, &bad, note, sizeof note, e) != 0)
        return -1;
    for (int i = 0; i < n; i++) /* valid ones to the front */
        if (recs[i].status == CUT_ST_OK)
            recs[m++] = recs[i];
    qsort(recs, (size_t)m, sizeof *recs, by_median);
    m = CUT_MIN(m, keep);
    int rc = m;
    if (m > 0) {
        cut_buf b;
        cut_buf_init(&b);
        for (int i = 0; i < m; i++)
            cut_gemm_record_to_json(&recs[i], &b);
        if (cut_mkdirs(res_dir, e) != 0 || cut_write_file_atomic(out, b.data, b.len, e) != 0)
            rc = -1;
        cut_buf_free(&b);
    }
    free(recs);
    return rc;
}
