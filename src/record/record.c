/* cutune — tuning records: JSON lines, strict parsing, crash-safe append-only logs, per-case CSV metadata.
 *
 * A line is built with cJSON and printed unformatted (numbers with up to 17 significant digits, so times
 * round-trip exactly and orderings never change), then appended with one write(2). A run killed mid-write leaves
 * at most one incomplete last line: readers ignore it, and opening the log for appending cuts it off. */
#include "cutune/log.h"
#include "cutune/record.h"
#include "cutune/op.h"
#include "record/json.h"

#include <cjson/cJSON.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>


/* ---------------------------------------------------------------------------------------------------------------
 * Serialising */

/* Length of the valid UTF-8 sequence starting at s (1..4), or 0 if the bytes there are not valid UTF-8. */
static size_t utf8_seq_len(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned min;
    unsigned cp;
    if ((c & 0xE0) == 0xC0)
        n = 2, min = 0x80, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
        n = 3, min = 0x800, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
        n = 4, min = 0x10000, cp = c & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* Copy of s with every byte that is not part of valid UTF-8 replaced by '?', so that the JSON line is valid for
 * every reader (compiler logs and driver strings are not guaranteed to be UTF-8). Caller frees. */
static char *utf8_clean(const char *s)
{
    size_t n = strlen(s);
    char *out = cut_xmalloc(n + 1);
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    while (*p) {
        size_t l = utf8_seq_len(p);
        if (l == 0) {
            out[o++] = '?';
            p++;
        } else {
            memcpy(out + o, p, l);
            o += l;
            p += l;
        }
    }
    out[o] = 0;
    return out;
}

void cut_rec_add_str(cJSON *o, const char *key, const char *v)
{
    char *c = utf8_clean(v ? v : "");
    cut_redact(c);
    cJSON_AddStringToObject(o, key, c);
    free(c);
}

/* Doubles are printed with the fewest significant digits (15, 16 or 17) that read back as exactly the same
 * value: cJSON's own printing stops at 15 digits when the value is merely within an epsilon, which would make
 * neighbouring times equal and change rankings. Non-finite numbers are written as null; readers map null to
 * "not measured". */
void cut_rec_add_num(cJSON *o, const char *key, double v)
{
    if (!isfinite(v)) {
        cJSON_AddNullToObject(o, key);
        return;
    }
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    cJSON_AddRawToObject(o, key, buf);
}

/* The workload's dtype (its "dtype" string, read into r->dtype), optional "epilogue" (none when absent) and
 * optional "layout" (NCHW when absent) into r->conv. */
static int rec_conv_dtype_layout(const cJSON *wl, cut_record *r, cut_err *e)
{
    if (cut_dtype_parse(r->dtype, &r->conv.dtype, e) != 0)
        return cut_err_wrap(e, "record field 'workload.dtype'");
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(wl, "epilogue");
    if (x && (!cJSON_IsString(x) || cut_conv_epilogue_parse(x->valuestring, &r->conv.epilogue, e) != 0))
        return cut_err_set(e, "record field 'workload.epilogue' must be \"bias\" or \"bias_relu\"");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(wl, "layout");
    if (!l)
        return 0;
    if (!cJSON_IsString(l) || cut_conv_layout_parse(l->valuestring, &r->conv.layout, e) != 0)
        return cut_err_set(e, "record field 'workload.layout' must be \"NCHW\" or \"NHWC\"");
    return 0;
}

void cut_record_to_json(const cut_record *r, cut_buf *b)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) {
        cut_log(CUT_LOG_ERROR, "cutune: out of memory (building a record)\n");
        abort();
    }
    cJSON_AddNumberToObject(root, "v", CUT_TRIAL_VERSION);
    cJSON_AddStringToObject(root, "op", "conv2d");
    cJSON_AddNumberToObject(root, "trial", r->trial);
    cJSON_AddNumberToObject(root, "case", r->case_idx);

    cJSON *wl = cJSON_AddObjectToObject(root, "workload");
    cJSON_AddStringToObject(wl, "op", "conv2d");
    const cut_conv *c = &r->conv;
    int shape[9] = {c->n, c->h, c->w, c->co, c->ci, c->kh, c->kw, c->stride, c->pad};
    cJSON_AddItemToObject(wl, "shape", cJSON_CreateIntArray(shape, 9));
    cut_rec_add_str(wl, "dtype", c->dtype != CUT_DT_FP32 ? cut_dtype_name(c->dtype) : r->dtype[0] ? r->dtype : "fp32");
    if (c->layout != CUT_NCHW) /* absent for NCHW: the lines of earlier versions */
        cut_rec_add_str(wl, "layout", cut_conv_layout_name(c->layout));
    if (c->epilogue != CUT_EPI_NONE) /* absent without one, likewise */
        cut_rec_add_str(wl, "epilogue", cut_conv_epilogue_name(c->epilogue));

    char sj[4096];
    cJSON *so = NULL;
    if (cut_tpl_sched_json(CUT_OP_CONV2D, &r->sched, sj, sizeof sj) >= 0)
        so = cJSON_Parse(sj);
    if (so)
        cJSON_AddItemToObject(root, "sched", so);
    else
        cJSON_AddNullToObject(root, "sched"); /* unknown template: the reader rejects the line */

    /* GFLOP/s follows from the shape and the median: flops / (median_ms * 1e6). */
    double gflops = r->gflops;
    if (r->status == CUT_ST_OK && r->median_ms > 0 && cut_conv_validate(c, NULL) == 0)
        gflops = cut_conv_gflops(c, r->median_ms);
    cut_trial tr = {.trial = r->trial, .sched = r->sched, .status = r->status, .median_ms = r->median_ms,
                    .min_ms = r->min_ms, .max_ms = r->max_ms, .repeats = r->repeats, .err = r->err,
                    .compile_ms = r->compile_ms, .regs = r->regs, .spills = r->spills, .env = r->env,
                    .energy_mj = r->energy_mj, .edp = r->edp, .power_w = r->power_w};
    snprintf(tr.error, sizeof tr.error, "%s", r->error);
    snprintf(tr.ts, sizeof tr.ts, "%s", r->ts);
    cut_rec_add_trial(root, &tr, gflops);
    cut_rec_print(root, b);
}

/* ---------------------------------------------------------------------------------------------------------------
 * Parsing (strict: every required field present with the right type) */

const cJSON *cut_rec_field(const cJSON *o, const char *prefix, const char *key, cut_err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v)
        cut_err_set(e, "record lacks the required field '%s%s'", prefix, key);
    return v;
}

int cut_rec_get_int(const cJSON *o, const char *prefix, const char *key, int *out, cut_err *e)
{
    const cJSON *v = cut_rec_field(o, prefix, key, e);
    if (!v)
        return -1;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < INT_MIN ||
        v->valuedouble > INT_MAX)
        return cut_err_set(e, "record field '%s%s' must be an integer", prefix, key);
    *out = (int)v->valuedouble;
    return 0;
}

/* A number, or null for "not measured" (stored as dflt). */
int cut_rec_get_num(const cJSON *o, const char *prefix, const char *key, double dflt, double *out, cut_err *e)
{
    const cJSON *v = cut_rec_field(o, prefix, key, e);
    if (!v)
        return -1;
    if (cJSON_IsNull(v)) {
        *out = dflt;
        return 0;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return cut_err_set(e, "record field '%s%s' must be a finite number", prefix, key);
    *out = v->valuedouble;
    return 0;
}

/* An optional number: absent or null -> 0 ("not measured"); else finite and >= 0. */
int cut_rec_get_opt_num(const cJSON *o, const char *key, double *out, cut_err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = 0;
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0)
        return cut_err_set(e, "record field '%s' must be a finite number >= 0", key);
    *out = v->valuedouble;
    return 0;
}

int cut_rec_get_str(const cJSON *o, const char *prefix, const char *key, char *buf, size_t n, cut_err *e)
{
    const cJSON *v = cut_rec_field(o, prefix, key, e);
    if (!v)
        return -1;
    if (!cJSON_IsString(v) || !v->valuestring)
        return cut_err_set(e, "record field '%s%s' must be a string", prefix, key);
    size_t len = strlen(v->valuestring);
    if (len >= n)
        return cut_err_set(e, "record field '%s%s' is longer than %zu bytes", prefix, key, n - 1);
    memcpy(buf, v->valuestring, len + 1);
    return 0;
}

/* Copies s into buf (size n), cutting at a UTF-8 character boundary if it is too long. */
void cut_rec_copy_utf8_trunc(char *buf, size_t n, const char *s)
{
    size_t len = strlen(s);
    if (len >= n) {
        len = n - 1;
        while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
            len--;
    }
    memcpy(buf, s, len);
    buf[len] = 0;
}

static int parse_obj(const cJSON *root, cut_record *r, cut_err *e)
{
    int v = 0;
    if (cut_rec_get_version(root, "conv2d", 1, &v, e) != 0)
        return -1;
    if (cut_rec_get_int(root, "", "trial", &r->trial, e) != 0 || cut_rec_get_int(root, "", "case", &r->case_idx, e) != 0)
        return -1;
    if (r->trial < 0)
        return cut_err_set(e, "record field 'trial' is %d: it must not be negative", r->trial);
    if (r->case_idx < 1)
        return cut_err_set(e, "record field 'case' is %d: it must be at least 1", r->case_idx);

    const cJSON *wl = cut_rec_field(root, "", "workload", e);
    if (!wl)
        return -1;
    if (!cJSON_IsObject(wl))
        return cut_err_set(e, "record field 'workload' must be an object");
    char op[16];
    if (cut_rec_get_str(wl, "workload.", "op", op, sizeof op, e) != 0)
        return -1;
    if (strcmp(op, "conv2d") != 0)
        return cut_err_set(e, "record field 'workload.op' is '%s': only 'conv2d' is supported", op);
    const cJSON *shape = cut_rec_field(wl, "workload.", "shape", e);
    if (!shape)
        return -1;
    if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) != 9)
        return cut_err_set(e, "record field 'workload.shape' must be an array of 9 integers");
    int s[9], i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, shape)
    {
        if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) || it->valuedouble < INT_MIN ||
            it->valuedouble > INT_MAX)
            return cut_err_set(e, "record field 'workload.shape' must be an array of 9 integers");
        s[i++] = (int)it->valuedouble;
    }
    r->conv = (cut_conv){s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8]};
    if (cut_conv_validate(&r->conv, e) != 0)
        return cut_err_wrap(e, "record field 'workload.shape'");
    if (cut_rec_get_str(wl, "workload.", "dtype", r->dtype, sizeof r->dtype, e) != 0 ||
        rec_conv_dtype_layout(wl, r, e) != 0)
        return -1;

    const cJSON *sched = cut_rec_field(root, "", "sched", e);
    if (!sched)
        return -1;
    if (cut_sched_from_cjson(sched, &r->sched, e) != 0)
        return cut_err_wrap(e, "record field 'sched'");

    if (cut_rec_get_status(root, &r->status, r->error, sizeof r->error, e) != 0)
        return -1;

    if (cut_rec_get_num(root, "", "median_ms", -1, &r->median_ms, e) != 0 || cut_rec_get_num(root, "", "min_ms", -1, &r->min_ms, e) != 0 ||
        cut_rec_get_num(root, "", "max_ms", -1, &r->max_ms, e) != 0 || cut_rec_get_int(root, "", "repeats", &r->repeats, e) != 0 ||
        cut_rec_get_num(root, "", "gflops", 0, &r->gflops, e) != 0 ||
        cut_rec_get_num(root, "", "compile_ms", -1, &r->compile_ms, e) != 0 || cut_rec_get_int(root, "", "regs", &r->regs, e) != 0 ||
        cut_rec_get_int(root, "", "spills", &r->spills, e) != 0)
        return -1;
    if (cut_rec_get_env(root, &r->env, e) != 0)
        return -1;
    if (cut_rec_get_str(root, "", "ts", r->ts, sizeof r->ts, e) != 0)
        return -1;
    if (cut_rec_get_opt_num(root, "energy_mj", &r->energy_mj, e) != 0 || cut_rec_get_opt_num(root, "edp", &r->edp, e) != 0 ||
        cut_rec_get_opt_num(root, "power_w", &r->power_w, e) != 0)
        return -1;
    r->err = -1; /* version 1 lines do not have it */
    if (v >= 2 && cut_rec_get_num(root, "", "err", -1, &r->err, e) != 0)
        return -1;
    return 0;
}

void cut_rec_add_env(cJSON *root, const cut_measure_env *env)
{
    cut_rec_add_str(root, "backend", env->backend);
    cJSON *gpu = cJSON_AddObjectToObject(root, "gpu");
    cut_rec_add_str(gpu, "name", env->gpu_name);
    cut_rec_add_str(gpu, "uuid", env->gpu_uuid);
    cut_rec_add_str(gpu, "driver", env->driver_string);
    cJSON_AddNumberToObject(gpu, "driver_version", env->driver_version);
    cJSON_AddNumberToObject(gpu, "sm_clock_mhz", env->sm_clock_mhz);
    cut_rec_add_num(gpu, "power_limit_w", env->power_limit_w);
    if (env->other_procs >= 0) /* known on a GPU only (issue 15) */
        cJSON_AddNumberToObject(gpu, "other_procs", env->other_procs);
    if (env->clock_events >= 0)
        cJSON_AddNumberToObject(gpu, "clock_events", (double)env->clock_events);
}

int cut_rec_get_env(const cJSON *root, cut_measure_env *env, cut_err *e)
{
    if (cut_rec_get_str(root, "", "backend", env->backend, sizeof env->backend, e) != 0)
        return -1;
    const cJSON *gpu = cut_rec_field(root, "", "gpu", e);
    if (!gpu)
        return -1;
    if (!cJSON_IsObject(gpu))
        return cut_err_set(e, "record field 'gpu' must be an object");
    if (cut_rec_get_str(gpu, "gpu.", "name", env->gpu_name, sizeof env->gpu_name, e) != 0 ||
        cut_rec_get_str(gpu, "gpu.", "uuid", env->gpu_uuid, sizeof env->gpu_uuid, e) != 0 ||
        cut_rec_get_str(gpu, "gpu.", "driver", env->driver_string, sizeof env->driver_string, e) != 0 ||
        cut_rec_get_int(gpu, "gpu.", "driver_version", &env->driver_version, e) != 0 ||
        cut_rec_get_int(gpu, "gpu.", "sm_clock_mhz", &env->sm_clock_mhz, e) != 0 ||
        cut_rec_get_num(gpu, "gpu.", "power_limit_w", 0, &env->power_limit_w, e) != 0)
        return -1;
    /* optional (lines before issue 15 lack them): -1, unknown */
    env->other_procs = -1;
    env->clock_events = -1;
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(gpu, "other_procs");
    const cJSON *ce = cJSON_GetObjectItemCaseSensitive(gpu, "clock_events");
    if (op && (!cJSON_IsNumber(op) || op->valuedouble < 0 || op->valuedouble > 1e6 ||
               op->valuedouble != (double)(int)op->valuedouble))
        return cut_err_set(e, "record field 'gpu.other_procs' must be a count");
    if (ce && (!cJSON_IsNumber(ce) || ce->valuedouble < 0 || ce->valuedouble > 9007199254740992.0 ||
               ce->valuedouble != floor(ce->valuedouble)))
        return cut_err_set(e, "record field 'gpu.clock_events' must be NVML's reasons mask (an integer >= 0)");
    if (op)
        env->other_procs = (int)op->valuedouble;
    if (ce)
        env->clock_events = (long long)ce->valuedouble;
    return 0;
}

int cut_rec_get_status(const cJSON *root, cut_status *status, char *err_buf, size_t err_len, cut_err *e)
{
    char st[32];
    if (cut_rec_get_str(root, "", "status", st, sizeof st, e) != 0)
        return -1;
    int sv = cut_status_from_name(st);
    if (sv < 0)
        return cut_err_set(e, "record field 'status' has the unknown value '%s'", st);
    *status = (cut_status)sv;
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
    if (err) {
        if (!cJSON_IsString(err) || !err->valuestring)
            return cut_err_set(e, "record field 'error' must be a string");
        cut_rec_copy_utf8_trunc(err_buf, err_len, err->valuestring);
    }
    return 0;
}

cJSON *cut_rec_parse_line(const char *line, size_t len, cut_err *e)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(line, len, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long off = (at && at >= line && at <= line + len) ? (long)(at - line) : -1;
        if (off >= 0)
            cut_err_set(e, "record is not valid JSON (error near byte %ld)", off + 1);
        else
            cut_err_set(e, "record is not valid JSON");
        return NULL;
    }
    for (const char *p = end; p && p < line + len; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n' && *p != 0) {
            cJSON_Delete(root);
            cut_err_set(e, "record has trailing text after the JSON object (byte %ld)", (long)(p - line) + 1);
            return NULL;
        }
    return root;
}

int cut_record_parse(const char *line, size_t len, cut_record *r, cut_err *e)
{
    cJSON *root = cut_rec_parse_line(line, len, e);
    if (!root)
        return -1;
    cut_record tmp;
    memset(&tmp, 0, sizeof tmp);
    int rc = parse_obj(root, &tmp, e);
    cJSON_Delete(root);
    if (rc == 0)
        *r = tmp;
    return rc;
}

/* ---------------------------------------------------------------------------------------------------------------
 * Objectives */

static const char *const obj_names[] = {"time", "energy", "edp"};

const char *cut_objective_name(cut_objective o)
{
    return (unsigned)o < CUT_ARRAY_LEN(obj_names) ? obj_names[o] : "?";
}

int cut_objective_parse(const char *s, cut_objective *o, cut_err *e)
{
    for (size_t i = 0; i < CUT_ARRAY_LEN(obj_names); i++)
        if (!strcmp(s, obj_names[i])) {
            *o = (cut_objective)i;
            return 0;
        }
    return cut_err_set(e, "--objective must be time, energy or edp, got '%s'", s);
}

double cut_record_objective(const cut_record *r, cut_objective o)
{
    if (r->status != CUT_ST_OK || !isfinite(r->median_ms) || !(r->median_ms > 0))
        return -1;
    double v = o == CUT_OBJ_TIME ? r->median_ms : o == CUT_OBJ_ENERGY ? r->energy_mj : r->edp;
    return isfinite(v) && v > 0 ? v : -1;
}

/* ---------------------------------------------------------------------------------------------------------------
 * Loading */

static int is_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return 0;
    return 1;
}

void cut_records_file_free(cut_records_file *f)
{
    if (!f)
        return;
    free(f->text);
    free(f->recs);
    free(f->line_off);
    free(f->line_len);
    memset(f, 0, sizeof *f);
}

/* Fills f (all arrays allocated here; caller frees with cut_records_file_free, also after an error). */
int cut_records_read(const char *path, cut_records_file *f, cut_err *e)
{
    memset(f, 0, sizeof *f);
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        return cut_err_set(e, "cannot read '%s': %s", path, strerror(errno));
    }
    if (cut_read_file(path, &f->text, &f->len, e) != 0)
        return -1;
    int cap = 0, lineno = 0;
    size_t pos = 0;
    while (pos < f->len) {
        const char *line = f->text + pos;
        const char *nl = memchr(line, '\n', f->len - pos);
        if (!nl) { /* an incomplete last line: a write that did not finish */
            f->partial = 1;
            break;
        }
        lineno++;
        size_t ll = (size_t)(nl - line);
        size_t start = pos;
        pos += ll + 1;
        if (is_blank(line, ll))
            continue;
        if (f->n == cap) {
            cap = cap ? cap * 2 : 64;
            f->recs = cut_xrealloc(f->recs, (size_t)cap * sizeof *f->recs);
            f->line_off = cut_xrealloc(f->line_off, (size_t)cap * sizeof *f->line_off);
            f->line_len = cut_xrealloc(f->line_len, (size_t)cap * sizeof *f->line_len);
        }
        if (cut_record_parse(line, ll, &f->recs[f->n], e) != 0)
            return cut_err_wrap(e, "%s:%d", path, lineno);
        f->line_off[f->n] = start;
        f->line_len[f->n] = ll;
        f->n++;
    }
    return 0;
}

/* *recs is allocated here (NULL when there are none); caller frees it with free(). */
int cut_records_load(const char *path, cut_record **recs, int *n, int *partial, cut_err *e)
{
    cut_records_file f;
    *recs = NULL;
    *n = 0;
    if (partial)
        *partial = 0;
    if (cut_records_read(path, &f, e) != 0) {
        cut_records_file_free(&f);
        return -1;
    }
    *recs = f.recs;
    *n = f.n;
    if (partial)
        *partial = f.partial;
    f.recs = NULL;
    cut_records_file_free(&f);
    return 0;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void cut_records_names_free(char **names, int n)
{
    if (!names)
        return;
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Allocates *names (each entry and the array); caller frees with cut_records_names_free. */
/* 1 for a file name of a GEMM log, a kernel spec's log or a vendor baseline file (gemm_*, kernel_*, vendor_*),
 * which conv tools skip. */
static int is_gemm_file(const char *nm)
{
    return !strncmp(nm, "gemm_", 5) || !strncmp(nm, "vendor_", 7) || !strncmp(nm, "kernel_", 7);
}

/* want_gemm 0: conv logs (every name but gemm_* and vendor_*); 1: gemm_* only. */
static int dir_list(const char *dir, const char *suffix, int want_gemm, char ***names, int *n, cut_err *e)
{
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return cut_err_set(e, "cannot open folder '%s': %s", dir, strerror(errno));
    size_t sl = strlen(suffix);
    int cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *nm = de->d_name;
        size_t l = strlen(nm);
        if (nm[0] == '.' || l <= sl || strcmp(nm + l - sl, suffix) != 0)
            continue;
        if (want_gemm ? strncmp(nm, "gemm_", 5) != 0 : is_gemm_file(nm))
            continue;
        char full[4096];
        struct stat st;
        if (snprintf(full, sizeof full, "%s/%s", dir, nm) >= (int)sizeof full || stat(full, &st) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            *names = cut_xrealloc(*names, (size_t)cap * sizeof **names);
        }
        (*names)[(*n)++] = cut_xstrdup(nm);
    }
    closedir(d);
    if (*n > 1)
        qsort(*names, (size_t)*n, sizeof **names, cmp_names);
    return 0;
}

int cut_records_dir_list(const char *dir, const char *suffix, char ***names, int *n, cut_err *e)
{
    return dir_list(dir, suffix, 0, names, n, e);
}

int cut_gemm_records_dir_list(const char *dir, char ***names, int *n, cut_err *e)
{
    return dir_list(dir, ".json", 1, names, n, e);
}

int cut_env_same_place(const cut_measure_env *a, const cut_measure_env *b)
{
    if (strcmp(a->backend, b->backend) != 0)
        return 0;
    if (a->gpu_uuid[0] && b->gpu_uuid[0])
        return strcmp(a->gpu_uuid, b->gpu_uuid) == 0;
    return strcmp(a->gpu_name, b->gpu_name) == 0;
}

void cut_env_describe(const cut_measure_env *env, char *buf, size_t n)
{
    if (!strcmp(env->backend, "emu"))
        snprintf(buf, n, "the host emulator (backend emu, '%s')", env->gpu_name);
    else
        snprintf(buf, n, "backend %s, GPU '%s'%s%s%s", env->backend[0] ? env->backend : "?", env->gpu_name,
                 env->gpu_uuid[0] ? " (" : "", env->gpu_uuid, env->gpu_uuid[0] ? ")" : "");
}

int cut_conv_custom_case(const char *const *dirs, int ndirs, const cut_conv *c)
{
    int same = 0, max = 0;
    for (int d = 0; d < ndirs; d++) {
        char **names = NULL;
        int n = 0;
        cut_err ignore = {{0}};
        if (cut_records_dir_list(dirs[d], ".json", &names, &n, &ignore) != 0)
            continue; /* a folder not made yet holds no case */
        for (int i = 0; i < n; i++) {
            int idx;
            cut_conv fc;
            if (cut_conv_parse_case_name(names[i], &idx, &fc, &ignore) != 0)
                continue;
            max = CUT_MAX(max, idx);
            if (!memcmp(&fc, c, sizeof fc) && (same == 0 || idx < same))
                same = idx;
        }
        cut_records_names_free(names, n);
    }
    return same ? same : max + 1;
}

/* ---------------------------------------------------------------------------------------------------------------
 * The append-only log */

/* Creates the directory holding path, if path has one. */
static int mkdir_parent(const char *path, cut_err *e)
{
    char dir[4096];
    size_t len = strlen(path);
    if (len >= sizeof dir)
        return cut_err_set(e, "path too long: '%s'", path);
    memcpy(dir, path, len + 1);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = 0;
    return cut_mkdirs(dir, e);
}

static void fsync_parent(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == dir)
        dir[1] = 0;
    else
        *slash = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* Offset just after the last '\n' of the file (0 if it has none). */
static int end_of_last_line(const char *path, off_t size, off_t *keep, cut_err *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return cut_err_set(e, "cannot read record log '%s': %s", path, strerror(errno));
    char chunk[65536];
    off_t end = size;
    *keep = 0;
    while (end > 0) {
        off_t start = end > (off_t)sizeof chunk ? end - (off_t)sizeof chunk : 0;
        size_t want = (size_t)(end - start);
        ssize_t got = pread(fd, chunk, want, start);
        if (got < 0 && errno == EINTR)
            continue;
        if (got != (ssize_t)want) {
            int err = got < 0 ? errno : EIO;
            close(fd);
            return cut_err_set(e, "cannot read record log '%s': %s", path, strerror(err));
        }
        for (size_t i = want; i > 0; i--)
            if (chunk[i - 1] == '\n') {
                *keep = start + (off_t)i;
                close(fd);
                return 0;
            }
        end = start;
    }
    close(fd);
    return 0;
}

/* 1 when the bytes [from, to) of fd (the text after the last newline) are one whole JSON object: a record written
 * in full whose newline never reached the disk. */
static int tail_is_record(int fd, off_t from, off_t to)
{
    if (to - from > (off_t)(1 << 20) || to - from < 2)
        return 0;
    size_t n = (size_t)(to - from);
    char *buf = cut_xmalloc(n + 1);
    int ok = pread(fd, buf, n, from) == (ssize_t)n;
    if (ok) {
        buf[n] = '\0';
        const char *end = NULL;
        cJSON *j = cJSON_ParseWithOpts(buf, &end, 1);
        ok = j && cJSON_IsObject(j);
        cJSON_Delete(j);
    }
    free(buf);
    return ok;
}

int cut_reclog_open_ex(const char *path, cut_reclog *log, size_t *dropped, cut_err *e)
{
    memset(log, 0, sizeof *log);
    log->fd = -1;
    if (dropped)
        *dropped = 0;
    if (strlen(path) >= sizeof log->path)
        return cut_err_set(e, "record log path too long: '%s'", path);
    strcpy(log->path, path);
    if (mkdir_parent(path, e) != 0)
        return cut_err_wrap(e, "record log '%s'", path);
    int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return cut_err_set(e, "cannot open record log '%s': %s", path, strerror(errno));
    /* One writer per log: a second process appending (or repairing) would tear lines. */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
        close(fd);
        return cut_err_set(e, "record log '%s' is being written by another cutune process", path);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return cut_err_set(e, "cannot stat record log '%s': %s", path, strerror(err));
    }
    if (st.st_size > 0) {
        off_t keep;
        if (end_of_last_line(path, st.st_size, &keep, e) != 0) {
            close(fd);
            return -1;
        }
        if (keep < st.st_size && tail_is_record(fd, keep, st.st_size)) {
            /* a whole record whose newline the kill took: kept, its newline added */
            if (write(fd, "\n", 1) != 1 || fsync(fd) != 0) {
                int err = errno;
                close(fd);
                return cut_err_set(e, "cannot end the last line of record log '%s': %s", path, strerror(err));
            }
        } else if (keep < st.st_size) {
            if (ftruncate(fd, keep) != 0 || fsync(fd) != 0) {
                int err = errno;
                close(fd);
                return cut_err_set(e, "cannot cut the incomplete last line of record log '%s': %s", path,
                                   strerror(err));
            }
            if (dropped)
                *dropped = (size_t)(st.st_size - keep);
        }
    }
    fsync_parent(path);
    log->fd = fd;
    return 0;
}

int cut_reclog_open(const char *path, cut_reclog *log, cut_err *e) { return cut_reclog_open_ex(path, log, NULL, e); }

int cut_reclog_append_line(cut_reclog *log, const char *line, size_t len, cut_err *e)
{
    if (log->fd < 0)
        return cut_err_set(e, "record log '%s' is not open", log->path);
    struct stat st;
    off_t before = fstat(log->fd, &st) == 0 ? st.st_size : -1;
    const char *p = line;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(log->fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int err = w < 0 ? errno : EIO;
            /* Never leave a torn line behind: cut back to where this record began. */
            if (before >= 0 && left < len)
                (void)ftruncate(log->fd, before);
            return cut_err_set(e, "cannot append to record log '%s': %s", log->path, strerror(err));
        }
        p += w;
        left -= (size_t)w;
    }
    log->pending++;
    return 0;
}

int cut_reclog_append(cut_reclog *log, const cut_record *r, cut_err *e)
{
    if (log->fd < 0)
        return cut_err_set(e, "record log '%s' is not open", log->path);
    cut_buf b;
    cut_buf_init(&b);
    cut_record_to_json(r, &b);
    int rc = cut_reclog_append_line(log, b.data, b.len, e);
    cut_buf_free(&b);
    return rc;
}

int cut_reclog_sync(cut_reclog *log, cut_err *e)
{
    if (log->fd < 0)
        return cut_err_set(e, "record log '%s' is not open", log->path);
    if (fsync(log->fd) != 0)
        return cut_err_set(e, "cannot flush record log '%s': %s", log->path, strerror(errno));
    log->pending = 0;
    return 0;
}

void cut_reclog_close(cut_reclog *log)
{
    if (!log || log->fd < 0)
        return;
    if (log->pending > 0)
        (void)fsync(log->fd);
    close(log->fd);
    log->fd = -1;
    log->pending = 0;
}

/* ---------------------------------------------------------------------------------------------------------------
 * Per-case CSV (seed 001: tuningrecords/caseN_....csv with start_time) */

/* Appends s as one CSV field, quoted when it holds a comma, quote or line break. */
static void csv_field(cut_buf *b, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        cut_buf_append(b, s, strlen(s));
        return;
    }
    cut_buf_append(b, "\"", 1);
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            cut_buf_append(b, "\"", 1);
        cut_buf_append(b, p, 1);
    }
    cut_buf_append(b, "\"", 1);
}

int cut_write_case_csv(const char *path, const char *start_time, const cut_record *proto, int trials, cut_err *e)
{
    if (cut_path_exists(path))
        return 0;
    if (mkdir_parent(path, e) != 0)
        return -1;
    const cut_conv *c = &proto->conv;
    char shape[160];
    snprintf(shape, sizeof shape, "[%d,%d,%d,%d,%d,%d,%d,%d,%d]", c->n, c->h, c->w, c->co, c->ci, c->kh, c->kw,
             c->stride, c->pad);
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_printf(&b, "start_time,case,shape,dtype,backend,gpu,trials\n");
    csv_field(&b, start_time ? start_time : "");
    cut_buf_printf(&b, ",%d,", proto->case_idx);
    csv_field(&b, shape);
    cut_buf_append(&b, ",", 1);
    csv_field(&b, proto->dtype[0] ? proto->dtype : "fp32");
    cut_buf_append(&b, ",", 1);
    csv_field(&b, proto->env.backend);
    cut_buf_append(&b, ",", 1);
    csv_field(&b, proto->env.gpu_name);
    cut_buf_printf(&b, ",%d\n", trials);
    int rc = cut_write_file_atomic(path, b.data, b.len, e);
    cut_buf_free(&b);
    return rc;
}
