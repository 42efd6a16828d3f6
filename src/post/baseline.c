/* cutune — report: the vendor baseline from final.jsonl (`cutune tune --final K`) or `cutune baseline --json F`.
 * Both are cut_final_json lines; the report reads "case", "shape", "cudnn_ms" and "cudnn_algo", and "dtype",
 * "layout" and "epilogue" where a line has them (fp32, NCHW and none where not). */
#include "post/report_int.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The case case_idx of the workload types of ty (dtype, layout, epilogue); NULL when r has none. */
static cut_report_case *find_case(cut_report *r, int case_idx, const cut_conv *ty)
{
    for (int i = 0; i < r->n; i++) {
        const cut_conv *c = &r->c[i].conv;
        if (r->c[i].case_idx == case_idx && c->dtype == ty->dtype && c->layout == ty->layout &&
            c->epilogue == ty->epilogue)
            return &r->c[i];
    }
    return NULL;
}

/* The line's workload types into ty: its "dtype", "layout" and "epilogue" strings, the defaults where absent (every
 * line before issue 20, and fp32 NCHW lines since). */
static int line_types(const cJSON *o, cut_conv *ty, const char *name, int lineno, cut_err *e)
{
    static const char *const keys[3] = {"dtype", "layout", "epilogue"};
    memset(ty, 0, sizeof *ty);
    ty->dtype = CUT_DT_FP32;
    ty->layout = CUT_NCHW;
    ty->epilogue = CUT_EPI_NONE;
    for (int i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
        if (!v)
            continue;
        cut_err why = {{0}};
        const int rc = !cJSON_IsString(v) ? cut_err_set(&why, "not a string")
                       : i == 0            ? cut_dtype_parse(v->valuestring, &ty->dtype, &why)
                       : i == 1            ? cut_conv_layout_parse(v->valuestring, &ty->layout, &why)
                                           : cut_conv_epilogue_parse(v->valuestring, &ty->epilogue, &why);
        if (rc != 0)
            return cut_err_set(e, "%s:%d: \"%s\": %s", name, lineno, keys[i], why.msg);
    }
    return 0;
}

/* 1 if the JSON array holds exactly the nine shape numbers of c. */
static int shape_equal(const cJSON *shape, const cut_conv *c)
{
    const int want[9] = {c->n, c->h, c->w, c->co, c->ci, c->kh, c->kw, c->stride, c->pad};
    if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) != 9)
        return 0;
    for (int i = 0; i < 9; i++) {
        const cJSON *v = cJSON_GetArrayItem(shape, i);
        if (!cJSON_IsNumber(v) || v->valuedouble != want[i])
            return 0;
    }
    return 1;
}

/* Applies one parsed line. */
static int apply_obj(cut_report *r, const cJSON *o, const char *name, int lineno, cut_err *e)
{
    const cJSON *cs = cJSON_GetObjectItemCaseSensitive(o, "case");
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(o, "cudnn_ms");
    const cJSON *algo = cJSON_GetObjectItemCaseSensitive(o, "cudnn_algo");
    if (!cJSON_IsNumber(cs) || cs->valuedouble < 1 || cs->valuedouble > 1e6 ||
        cs->valuedouble != floor(cs->valuedouble))
        return cut_err_set(e, "%s:%d: \"case\" must be a whole number >= 1", name, lineno);
    if (!cJSON_IsNumber(ms) || !isfinite(ms->valuedouble))
        return cut_err_set(e, "%s:%d: \"cudnn_ms\" must be a number", name, lineno);
    cut_conv ty;
    if (line_types(o, &ty, name, lineno, e) != 0)
        return -1;
    cut_report_case *c = find_case(r, (int)cs->valuedouble, &ty);
    if (!c) /* another case, or case N of other types (a folder tuned in several dtypes) */
        return 0;
    if (!shape_equal(cJSON_GetObjectItemCaseSensitive(o, "shape"), &c->conv))
        return cut_err_set(e, "%s:%d: \"shape\" of case %d differs from the tuning log %s.json", name, lineno,
                           c->case_idx, c->name);
    c->cudnn_ms = ms->valuedouble > 0 ? ms->valuedouble : -1;
    c->cudnn_algo[0] = 0;
    if (cJSON_IsString(algo) && c->cudnn_ms > 0)
        snprintf(c->cudnn_algo, sizeof c->cudnn_algo, "%s", algo->valuestring);
    return 0;
}

int cut_report_baseline_apply(cut_report *r, const char *text, size_t len, const char *name, cut_err *e)
{
    size_t pos = 0;
    for (int lineno = 1; pos < len; lineno++) {
        const char *s = text + pos, *nl = memchr(s, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        pos += n + (nl ? 1 : 0);
        size_t k = 0;
        while (k < n && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r'))
            k++;
        if (k == n)
            continue;
        cJSON *o = cJSON_ParseWithLength(s, n);
        int rc = cJSON_IsObject(o) ? apply_obj(r, o, name, lineno, e)
                                   : cut_err_set(e, "%s:%d: not a JSON object", name, lineno);
        cJSON_Delete(o);
        if (rc != 0)
            return -1;
    }
    return 0;
}
