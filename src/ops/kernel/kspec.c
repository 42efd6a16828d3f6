/* cutune — kernel specs (include/cutune/kspec.h): JSON -> cut_kspec with every field checked, and the launch
 * resolved for a choice of tunables. */
#include "cutune/kspec.h"
#include "cutune/util.h"
#include "ops/kernel/kentry.h"
#include "ops/kernel/ksizes.h"

#include <cjson/cJSON.h>
#include <zlib.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

static const char *const init_names[CUT_KS_INIT_COUNT] = {"randn", "uniform", "zeros", "ones", "full", "arange"};


/* Error sentences quote the spec's own text: keep them on one line. */
static int one_line(cut_err *e)
{
    for (char *c = e ? e->msg : NULL; c && *c; c++)
        if ((unsigned char)*c < 32 || *c == 127)
            *c = '?';
    return -1;
}

static int is_ident(const char *s)
{
    if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
        return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

/* A string member copied into buf, or -1 naming field (missing, not a string, too long). */
static int get_str(const cJSON *o, const char *key, const char *field, char *buf, size_t n, cut_err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v)
        return cut_err_set(e, "%s: missing", field);
    if (!cJSON_IsString(v) || !v->valuestring)
        return cut_err_set(e, "%s: must be a string", field);
    if (strlen(v->valuestring) >= n)
        return cut_err_set(e, "%s: longer than %zu characters", field, n - 1);
    snprintf(buf, n, "%s", v->valuestring);
    return 0;
}

static int get_ident(const cJSON *o, const char *key, const char *field, char *buf, size_t n, cut_err *e)
{
    if (get_str(o, key, field, buf, n, e) != 0)
        return -1;
    if (!is_ident(buf))
        return cut_err_set(e, "%s: '%s' is not an identifier", field, buf);
    return 0;
}

/* An expression: a string, or an integral JSON number. */
static int get_expr(const cJSON *v, const char *field, char *buf, size_t n, cut_err *e)
{
    if (cJSON_IsNumber(v)) {
        if (v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > 9e15)
            return cut_err_set(e, "%s: %g is not an integer", field, v->valuedouble);
        snprintf(buf, n, "%.0f", v->valuedouble);
        return 0;
    }
    if (!cJSON_IsString(v) || !v->valuestring || !*v->valuestring)
        return cut_err_set(e, "%s: must be an integer or an expression string", field);
    if (strlen(v->valuestring) >= n)
        return cut_err_set(e, "%s: expression longer than %zu characters", field, n - 1);
    snprintf(buf, n, "%s", v->valuestring);
    return 0;
}

static int get_dtype(const cJSON *o, const char *field, cut_elem *d, cut_err *e)
{
    char s[16], f[96];
    snprintf(f, sizeof f, "%s.dtype", field);
    if (get_str(o, "dtype", f, s, sizeof s, e) != 0)
        return -1;
    for (int i = 0; i < CUT_EL_COUNT; i++)
        if (!strcmp(s, cut_elem_name((cut_elem)i))) {
            *d = (cut_elem)i;
            return 0;
        }
    return cut_err_set(e, "%s: unknown dtype '%s' (f32, f64, f16, bf16, i32, i64, u8)", f, s);
}

/* Standard base64 (RFC 4648, '=' padding, no line breaks) into *out (malloc'd). 0, or -1 naming the first bad byte. */
static int base64_decode(const char *in, unsigned char **out, size_t *n, const char *f, cut_err *e)
{
    const size_t len = strlen(in);
    if (len % 4)
        return cut_err_set(e, "%s: base64 length %zu is not a multiple of 4", f, len);
    unsigned char *buf = cut_xmalloc(len / 4 * 3 + 1);
    size_t k = 0;
    for (size_t i = 0; i < len; i += 4) {
        unsigned v = 0;
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            const char c = in[i + j];
            const char *alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            const char *at = c ? strchr(alpha, c) : NULL;
            if (c == '=' && i + 4 == len && j >= 2 && (j == 3 || in[i + 3] == '=')) {
                pad++;
                v <<= 6;
                continue;
            }
            if (!at || pad) {
                free(buf);
                return cut_err_set(e, "%s: not base64 at byte %zu", f, i + (size_t)j);
            }
            v = v << 6 | (unsigned)(at - alpha);
        }
        buf[k++] = (unsigned char)(v >> 16);
        if (pad < 2)
            buf[k++] = (unsigned char)(v >> 8);
        if (pad < 1)
            buf[k++] = (unsigned char)v;
    }
    *out = buf;
    *n = k;
    return 0;
}

#define PAYLOAD_MAX ((size_t)1 << 30) /* inflated bytes of one payload: a zlib bomb stops here */

/* zlib-inflates in into *out (malloc'd), refusing more than max bytes. */
static int inflate_all(const unsigned char *in, size_t n, size_t max, unsigned char **out, size_t *outn, const char *f,
                       cut_err *e)
{
    size_t cap = n * 4 + 64;
    unsigned char *buf = cut_xmalloc(cap);
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit(&z) != Z_OK) {
        free(buf);
        return cut_err_set(e, "%s: zlib cannot start", f);
    }
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)n;
    int rc = Z_OK;
    while (rc == Z_OK) {
        if (z.total_out == cap) {
            if (cap >= max)
                break;
            cap = cap * 2 > max ? max : cap * 2;
            buf = cut_xrealloc(buf, cap);
        }
        z.next_out = buf + z.total_out;
        z.avail_out = (uInt)(cap - z.total_out);
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc == Z_BUF_ERROR && z.avail_in == 0)
            break;
        if (rc == Z_BUF_ERROR)
            rc = Z_OK;
    }
    const size_t got = z.total_out;
    inflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(buf);
        return cut_err_set(e, "%s: not a complete zlib stream%s", f, rc == Z_OK ? " (or over 1 GiB inflated)" : "");
    }
    *out = buf;
    *outn = got;
    return 0;
}

/* "data" (a payload: the tensor's bytes in its dtype, little-endian, row-major) with "encoding" "base64" or
 * "zlib+base64" (the default). Its size is checked against the shape when the spec resolves. */
static int get_payload(const cJSON *o, const char *field, cut_ks_tensor *t, cut_err *e)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "data");
    if (!d)
        return 0;
    char f[96], enc[16] = "zlib+base64";
    snprintf(f, sizeof f, "%s.data", field);
    if (!cJSON_IsString(d) || !d->valuestring[0])
        return cut_err_set(e, "%s: must be a base64 string", f);
    if (cJSON_GetObjectItemCaseSensitive(o, "init"))
        return cut_err_set(e, "%s: give \"data\" or \"init\", not both", field);
    char fe[96];
    snprintf(fe, sizeof fe, "%s.encoding", field);
    if (cJSON_GetObjectItemCaseSensitive(o, "encoding") && get_str(o, "encoding", fe, enc, sizeof enc, e) != 0)
        return -1;
    const int zipped = !strcmp(enc, "zlib+base64");
    if (!zipped && strcmp(enc, "base64"))
        return cut_err_set(e, "%s: '%s' is not base64 or zlib+base64", fe, enc);
    unsigned char *raw = NULL;
    size_t n = 0;
    if (base64_decode(d->valuestring, &raw, &n, f, e) != 0)
        return -1;
    if (zipped) {
        unsigned char *plain = NULL;
        size_t pn = 0;
        const int rc = inflate_all(raw, n, PAYLOAD_MAX, &plain, &pn, f, e);
        free(raw);
        if (rc != 0)
            return -1;
        raw = plain, n = pn;
    }
    t->payload = raw;
    t->payload_bytes = n;
    return 0;
}

static int get_init(const cJSON *o, const char *field, cut_ks_tensor *t, cut_err *e)
{
    char s[16], f[96];
    snprintf(f, sizeof f, "%s.init", field);
    t->init = CUT_KS_RANDN;
    t->lo = -1.0, t->hi = 1.0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "init");
    if (v) {
        if (get_str(o, "init", f, s, sizeof s, e) != 0)
            return -1;
        int found = -1;
        for (int i = 0; i < CUT_KS_INIT_COUNT; i++)
            if (!strcmp(s, init_names[i]))
                found = i;
        if (found < 0)
            return cut_err_set(e, "%s: unknown init '%s' (randn, uniform, zeros, ones, full, arange)", f, s);
        t->init = (cut_ks_init)found;
    }
    const char *nums[] = {"lo", "hi", "value", "seed"};
    double *dst[] = {&t->lo, &t->hi, &t->fill, NULL};
    for (int i = 0; i < 4; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, nums[i]);
        if (!x)
            continue;
        if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
            return cut_err_set(e, "%s.%s: must be a finite number", field, nums[i]);
        if (dst[i])
            *dst[i] = x->valuedouble;
        else if (x->valuedouble < 0 || x->valuedouble != floor(x->valuedouble) || x->valuedouble > 9e15)
            return cut_err_set(e, "%s.seed: must be an integer from 0 to 9e15", field);
        else
            t->seed = (unsigned long long)x->valuedouble;
    }
    if (t->init == CUT_KS_UNIFORM && !(t->lo < t->hi))
        return cut_err_set(e, "%s: uniform needs lo < hi (%g, %g)", field, t->lo, t->hi);
    if (t->init == CUT_KS_FULL && !cJSON_GetObjectItemCaseSensitive(o, "value"))
        return cut_err_set(e, "%s: init 'full' needs a \"value\"", field);
    return 0;
}

static int get_tensors(const cJSON *root, const char *key, int is_input, cut_ks_tensor *ts, int *n, cut_err *e)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, key);
    *n = 0;
    if (!arr)
        return is_input ? 0 : cut_err_set(e, "%s: missing (a kernel needs at least one output)", key);
    if (!cJSON_IsArray(arr))
        return cut_err_set(e, "%s: must be an array", key);
    if (cJSON_GetArraySize(arr) > CUT_KS_MAX_TENSORS)
        return cut_err_set(e, "%s: more than %d tensors", key, CUT_KS_MAX_TENSORS);
    if (!is_input && cJSON_GetArraySize(arr) == 0)
        return cut_err_set(e, "%s: empty (a kernel needs at least one output)", key);
    const cJSON *o;
    cJSON_ArrayForEach(o, arr) {
        cut_ks_tensor *t = &ts[*n];
        char f[64], fs[96];
        snprintf(f, sizeof f, "%s[%d]", key, *n);
        memset(t, 0, sizeof *t);
        if (!cJSON_IsObject(o))
            return cut_err_set(e, "%s: must be an object", f);
        snprintf(fs, sizeof fs, "%s.name", f);
        if (get_ident(o, "name", fs, t->name, sizeof t->name, e) != 0 || get_dtype(o, f, &t->dtype, e) != 0)
            return -1;
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(o, "shape");
        if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) < 1 || cJSON_GetArraySize(shape) > CUT_KS_MAX_DIMS)
            return cut_err_set(e, "%s.shape: must be an array of 1 to %d dimensions", f, CUT_KS_MAX_DIMS);
        const cJSON *d;
        cJSON_ArrayForEach(d, shape) {
            snprintf(fs, sizeof fs, "%s.shape[%d]", f, t->ndims);
            if (get_expr(d, fs, t->shape[t->ndims], CUT_KS_EXPR, e) != 0)
                return -1;
            t->ndims++;
        }
        if (is_input && (get_payload(o, f, t, e) != 0 || get_init(o, f, t, e) != 0))
            return -1;
        const cJSON *acc = cJSON_GetObjectItemCaseSensitive(o, "accumulate");
        if (acc && (is_input || !cJSON_IsBool(acc)))
            return cut_err_set(e, "%s.accumulate: %s", f, is_input ? "only outputs accumulate" : "must be true or false");
        t->accumulate = cJSON_IsTrue(acc);
        (*n)++;
    }
    return 0;
}

static int get_vars(const cJSON *root, cut_kspec *k, cut_err *e)
{
    const cJSON *sizes = cJSON_GetObjectItemCaseSensitive(root, "sizes"), *v;
    if (sizes && !cJSON_IsObject(sizes))
        return cut_err_set(e, "sizes: must be an object of name -> integer");
    cJSON_ArrayForEach(v, sizes) {
        if (k->nsizes >= CUT_KS_MAX_VARS)
            return cut_err_set(e, "sizes: more than %d", CUT_KS_MAX_VARS);
        if (!is_ident(v->string) || strlen(v->string) >= CUT_KS_NAME)
            return cut_err_set(e, "sizes: '%s' is not an identifier", v->string);
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 1 ||
            v->valuedouble > 1e12)
            return cut_err_set(e, "sizes.%s: must be an integer from 1 to 1e12", v->string);
        snprintf(k->sizes[k->nsizes].name, CUT_KS_NAME, "%s", v->string);
        k->sizes[k->nsizes++].value = (long long)v->valuedouble;
    }
    const cJSON *tun = cJSON_GetObjectItemCaseSensitive(root, "tunables");
    if (tun && !cJSON_IsObject(tun))
        return cut_err_set(e, "tunables: must be an object of name -> list of integers");
    cJSON_ArrayForEach(v, tun) {
        if (k->ntunables >= CUT_KS_MAX_VARS || k->nsizes + k->ntunables >= CUT_KS_MAX_VARS)
            return cut_err_set(e, "tunables: more than %d sizes and tunables", CUT_KS_MAX_VARS);
        cut_ks_tunable *t = &k->tunables[k->ntunables];
        if (!is_ident(v->string) || strlen(v->string) >= CUT_KS_NAME)
            return cut_err_set(e, "tunables: '%s' is not an identifier", v->string);
        snprintf(t->name, CUT_KS_NAME, "%s", v->string);
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 || cJSON_GetArraySize(v) > CUT_KS_MAX_VALUES)
            return cut_err_set(e, "tunables.%s: must be a list of 1 to %d integers", t->name, CUT_KS_MAX_VALUES);
        const cJSON *x;
        cJSON_ArrayForEach(x, v) {
            if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) || fabs(x->valuedouble) > 1e12)
                return cut_err_set(e, "tunables.%s[%d]: must be an integer", t->name, t->nvalues);
            t->values[t->nvalues++] = (long long)x->valuedouble;
        }
        k->ntunables++;
    }
    /* one namespace */
    for (int i = 0; i < k->nsizes + k->ntunables; i++)
        for (int j = i + 1; j < k->nsizes + k->ntunables; j++) {
            const char *a = i < k->nsizes ? k->sizes[i].name : k->tunables[i - k->nsizes].name;
            const char *b = j < k->nsizes ? k->sizes[j].name : k->tunables[j - k->nsizes].name;
            if (!strcmp(a, b))
                return cut_err_set(e, "%s: '%s' is both a size and a tunable", j < k->nsizes ? "sizes" : "tunables", a);
        }
    return 0;
}

const char *cut_ks_lang_name(cut_ks_lang l) { return l == CUT_KS_TRITON ? "triton" : "cuda"; }

static int get_launch(const cJSON *root, cut_kspec *k, cut_err *e)
{
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(root, "launch");
    if (!cJSON_IsObject(l))
        return cut_err_set(e, "launch: missing or not an object {\"grid\": [...], \"block\": [...]}");
    const char *keys[2] = {"grid", "block"};
    const int triton = k->lang == CUT_KS_TRITON;
    if (triton && cJSON_GetObjectItemCaseSensitive(l, "block"))
        return cut_err_set(e, "launch.block: a Triton kernel's block is 32 * num_warps (make num_warps a tunable)");
    if (triton && cJSON_GetObjectItemCaseSensitive(l, "smem"))
        return cut_err_set(e, "launch.smem: Triton sizes a kernel's shared memory itself");
    if (triton) {
        int warps = 0;
        for (int i = 0; i < k->ntunables; i++)
            warps |= strcmp(k->tunables[i].name, "num_warps") == 0;
        snprintf(k->block[0], CUT_KS_EXPR, "%s", warps ? "32 * num_warps" : "128");
        k->nblock = 1;
    }
    for (int w = 0; w < 2 - triton; w++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(l, keys[w]);
        char(*dst)[CUT_KS_EXPR] = w ? k->block : k->grid;
        int *n = w ? &k->nblock : &k->ngrid;
        if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) < 1 || cJSON_GetArraySize(a) > 3)
            return cut_err_set(e, "launch.%s: must be an array of 1 to 3 expressions", keys[w]);
        const cJSON *x;
        cJSON_ArrayForEach(x, a) {
            char f[48];
            snprintf(f, sizeof f, "launch.%s[%d]", keys[w], *n);
            if (get_expr(x, f, dst[*n], CUT_KS_EXPR, e) != 0)
                return -1;
            (*n)++;
        }
    }
    const cJSON *sm = cJSON_GetObjectItemCaseSensitive(l, "smem");
    if (!sm)
        snprintf(k->smem, sizeof k->smem, "0");
    else if (get_expr(sm, "launch.smem", k->smem, sizeof k->smem, e) != 0)
        return -1;
    return 0;
}

static int get_scalars_args_tol(const cJSON *root, cut_kspec *k, cut_err *e)
{
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(root, "scalars"), *o;
    if (sc && (!cJSON_IsArray(sc) || cJSON_GetArraySize(sc) > CUT_KS_MAX_TENSORS))
        return cut_err_set(e, "scalars: must be an array of at most %d", CUT_KS_MAX_TENSORS);
    cJSON_ArrayForEach(o, sc) {
        cut_ks_scalar *s = &k->scalars[k->nscalars];
        char f[48], fs[64];
        snprintf(f, sizeof f, "scalars[%d]", k->nscalars);
        snprintf(fs, sizeof fs, "%s.name", f);
        if (!cJSON_IsObject(o))
            return cut_err_set(e, "%s: must be an object", f);
        if (get_ident(o, "name", fs, s->name, sizeof s->name, e) != 0 || get_dtype(o, f, &s->dtype, e) != 0)
            return -1;
        snprintf(fs, sizeof fs, "%s.value", f);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "value");
        if (!v)
            return cut_err_set(e, "%s: missing", fs);
        const int fp = s->dtype == CUT_EL_F32 || s->dtype == CUT_EL_F64 || s->dtype == CUT_EL_F16 ||
                       s->dtype == CUT_EL_BF16;
        if (fp && cJSON_IsNumber(v) && v->valuedouble != floor(v->valuedouble)) {
            /* a floating-point scalar may be any finite number; integers stay expressions (sizes) */
            if (!isfinite(v->valuedouble))
                return cut_err_set(e, "%s: must be finite", fs);
            s->is_number = 1;
            s->number = v->valuedouble;
            snprintf(s->value, sizeof s->value, "0");
        } else if (get_expr(v, fs, s->value, sizeof s->value, e) != 0) {
            return -1;
        }
        k->nscalars++;
    }
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(root, "args");
    if (!cJSON_IsArray(args) || cJSON_GetArraySize(args) > CUT_KS_MAX_ARGS)
        return cut_err_set(e, "args: missing or not an array of the kernel's parameter names (at most %d)",
                           CUT_KS_MAX_ARGS);
    cJSON_ArrayForEach(o, args) {
        char f[32];
        snprintf(f, sizeof f, "args[%d]", k->nargs);
        if (!cJSON_IsString(o) || !is_ident(o->valuestring) || strlen(o->valuestring) >= CUT_KS_NAME)
            return cut_err_set(e, "%s: must be the name of an input, output or scalar", f);
        snprintf(k->args[k->nargs++], CUT_KS_NAME, "%s", o->valuestring);
    }
    k->atol = 1e-5, k->rtol = 1e-5;
    const cJSON *tol = cJSON_GetObjectItemCaseSensitive(root, "tolerance");
    if (tol) {
        if (!cJSON_IsObject(tol))
            return cut_err_set(e, "tolerance: must be an object {\"atol\": a, \"rtol\": r}");
        const char *keys[2] = {"atol", "rtol"};
        double *dst[2] = {&k->atol, &k->rtol};
        for (int i = 0; i < 2; i++) {
            const cJSON *x = cJSON_GetObjectItemCaseSensitive(tol, keys[i]);
            if (!x)
                continue;
            if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || x->valuedouble < 0)
                return cut_err_set(e, "tolerance.%s: must be a finite number >= 0", keys[i]);
            *dst[i] = x->valuedouble;
        }
    }
    return 0;
}

/* "source" (inline) or "source_path" (read relative to base_dir) of object o into *out (and path); field names the
 * object in messages ("" for the top level, "reference." for the reference kernel). */
static int read_source(const cJSON *o, const char *base_dir, const char *field, char **out, char *path, size_t plen,
                       cut_err *e)
{
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(o, "source");
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(o, "source_path");
    char f[64];
    if (!!src == !!sp)
        return cut_err_set(e, "%ssource: give exactly one of \"source\" (inline CUDA C) and \"source_path\"", field);
    if (src) {
        if (!cJSON_IsString(src) || !src->valuestring || !*src->valuestring)
            return cut_err_set(e, "%ssource: must be a non-empty string", field);
        *out = cut_xstrdup(src->valuestring);
        return 0;
    }
    snprintf(f, sizeof f, "%ssource_path", field);
    if (get_str(o, "source_path", f, path, plen, e) != 0)
        return -1;
    char full[2048];
    if (path[0] == '/' || !base_dir)
        snprintf(full, sizeof full, "%s", path);
    else if (cut_path_join(full, sizeof full, base_dir, path, e) != 0)
        return -1;
    size_t len = 0;
    if (cut_read_regular_file(full, CUT_KS_MAX_SOURCE, out, &len, e) != 0)
        return cut_err_wrap(e, "%s", f);
    if (strlen(*out) != len)
        return cut_err_set(e, "%s: '%s' contains a NUL byte", f, full);
    return 0;
}

static int get_source(const cJSON *root, const char *base_dir, cut_kspec *k, cut_err *e)
{
    return read_source(root, base_dir, "", &k->source, k->source_path, sizeof k->source_path, e);
}

/* "reference": {"source" | "source_path", "entry"}: optional; a kernel with the baseline's parameters whose outputs
 * are the references instead of the baseline's own. */
static int get_reference(const cJSON *root, const char *base_dir, cut_kspec *k, cut_err *e)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(root, "reference");
    if (!r)
        return 0;
    if (!cJSON_IsObject(r))
        return cut_err_set(e, "reference: must be an object {\"source\" or \"source_path\", \"entry\"}");
    char path[1024];
    if (get_ident(r, "entry", "reference.entry", k->ref_entry, sizeof k->ref_entry, e) != 0)
        return -1;
    return read_source(r, base_dir, "reference.", &k->ref_source, path, sizeof path, e);
}

/* Every arg names one tensor or scalar, and each of them is passed exactly once. */
static int check_args(const cut_kspec *k, cut_err *e)
{
    const cut_ks_tensor *groups[2] = {k->inputs, k->outputs};
    const int counts[2] = {k->ninputs, k->noutputs};
    int total = k->nscalars;
    for (int g = 0; g < 2; g++) {
        total += counts[g];
        for (int i = 0; i < counts[g]; i++) {
            int uses = 0;
            for (int a = 0; a < k->nargs; a++)
                uses += !strcmp(k->args[a], groups[g][i].name);
            if (uses != 1)
                return cut_err_set(e, "args: %s '%s' is passed %d times (once expected)", g ? "output" : "input",
                                   groups[g][i].name, uses);
        }
    }
    for (int i = 0; i < k->nscalars; i++) {
        int uses = 0;
        for (int a = 0; a < k->nargs; a++)
            uses += !strcmp(k->args[a], k->scalars[i].name);
        if (uses != 1)
            return cut_err_set(e, "args: scalar '%s' is passed %d times (once expected)", k->scalars[i].name, uses);
    }
    if (k->nargs != total)
        return cut_err_set(e, "args: %d names for %d inputs, outputs and scalars (an unknown name?)", k->nargs, total);
    return 0;
}

/* The expression variables for tunable values vals (NULL: the baseline's): the sizes of set, then the tunables.
 * Returns their count. */
static int spec_vars(const cut_kspec *k, cut_ks_sizeset set, const long long *vals, cut_ks_var *vars)
{
    int nv = 0;
    for (int i = 0; i < k->nsizes; i++) {
        vars[nv] = k->sizes[i];
        if (set == CUT_KS_CHECK_SIZES)
            vars[nv].value = k->check_sizes[i];
        nv++;
    }
    for (int i = 0; i < k->ntunables; i++) {
        snprintf(vars[nv].name, CUT_KS_NAME, "%s", k->tunables[i].name);
        vars[nv++].value = vals ? vals[i] : k->tunables[i].values[0];
    }
    return nv;
}

/* ---- the op's size ---- */

/* "flops" and "bytes": optional expressions over sizes (integers or strings). */
static int get_work_size(const cJSON *root, cut_kspec *k, cut_err *e)
{
    const char *keys[2] = {"flops", "bytes"};
    char *dst[2] = {k->flops, k->bytes};
    for (int i = 0; i < 2; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(root, keys[i]);
        dst[i][0] = '\0';
        if (x && get_expr(x, keys[i], dst[i], CUT_KS_EXPR, e) != 0)
            return -1;
    }
    return 0;
}

int cut_kspec_work_size(const cut_kspec *k, double *flops, double *bytes, cut_err *e)
{
    cut_ks_var vars[CUT_KS_MAX_VARS];
    const int nv = spec_vars(k, CUT_KS_SIZES, NULL, vars);
    const char *keys[2] = {"flops", "bytes"}, *src[2] = {k->flops, k->bytes};
    double *dst[2] = {flops, bytes};
    for (int i = 0; i < 2; i++) {
        long long x = 0;
        *dst[i] = 0;
        if (!src[i][0])
            continue;
        if (cut_ks_eval(src[i], vars, nv, &x, e) != 0)
            return cut_err_wrap(e, "%s", keys[i]);
        if (x < 0)
            return cut_err_set(e, "%s: '%s' is %lld (must be >= 0)", keys[i], src[i], x);
        *dst[i] = (double)x;
    }
    return 0;
}

/* ---- restrictions ---- */

/* "restrictions": an optional array of non-empty expression strings (checked against the baseline later). */
static int get_restrictions(const cJSON *root, cut_kspec *k, cut_err *e)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(root, "restrictions"), *x;
    if (!r)
        return 0;
    if (!cJSON_IsArray(r))
        return cut_err_set(e, "restrictions: must be an array of expression strings (\"BX == BY * TY\")");
    if (cJSON_GetArraySize(r) > CUT_KS_MAX_RESTRICTIONS)
        return cut_err_set(e, "restrictions: more than %d", CUT_KS_MAX_RESTRICTIONS);
    cJSON_ArrayForEach(x, r) {
        const int i = k->nrestrictions;
        if (!cJSON_IsString(x) || !x->valuestring)
            return cut_err_set(e, "restrictions[%d]: must be a string (a boolean expression)", i);
        const char *t = x->valuestring;
        while (*t == ' ' || *t == '\t')
            t++;
        if (!*t)
            return cut_err_set(e, "restrictions[%d]: empty", i);
        if (strlen(x->valuestring) >= CUT_KS_EXPR)
            return cut_err_set(e, "restrictions[%d]: expression longer than %d characters", i, CUT_KS_EXPR - 1);
        snprintf(k->restrictions[k->nrestrictions++], CUT_KS_EXPR, "%s", x->valuestring);
    }
    return 0;
}

/* "NAME=value, ..." into buf for each variable the expression names (in the variables' order). */
static void named_values(const char *expr, const cut_ks_var *vars, int nv, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < nv; i++) {
        const size_t len = strlen(vars[i].name);
        int named = 0;
        for (const char *p = expr; *p && !named;) {
            if (!(isalpha((unsigned char)*p) || *p == '_')) {
                p++;
                continue;
            }
            const char *q = p;
            while (isalnum((unsigned char)*q) || *q == '_')
                q++;
            named = (size_t)(q - p) == len && strncmp(p, vars[i].name, len) == 0;
            p = q;
        }
        if (named && at < n) {
            const int w = snprintf(buf + at, n - at, "%s%s=%lld", at ? ", " : "", vars[i].name, vars[i].value);
            at += w > 0 ? (size_t)w : 0;
        }
    }
}

/* Restriction i for the variables: 1 true, 0 false, -1 when it cannot be evaluated (e: the evaluator's sentence). */
static int restriction_holds(const cut_kspec *k, int i, const cut_ks_var *vars, int nv, cut_err *e)
{
    long long x = 0;
    if (cut_ks_eval(k->restrictions[i], vars, nv, &x, e) != 0)
        return -1;
    return x != 0;
}

/* Every restriction well-formed (its names known, its syntax right) and true for the baseline at size set set. */
static int check_restrictions(const cut_kspec *k, cut_ks_sizeset set, cut_err *e)
{
    cut_ks_var vars[CUT_KS_MAX_VARS];
    const int nv = spec_vars(k, set, NULL, vars);
    for (int i = 0; i < k->nrestrictions; i++) {
        const int h = restriction_holds(k, i, vars, nv, e);
        if (h < 0)
            return cut_err_wrap(e, "restrictions[%d]", i);
        if (h == 0) {
            char vals[512];
            named_values(k->restrictions[i], vars, nv, vals, sizeof vals);
            return cut_err_set(e, "restrictions[%d]: '%s' is false for the baseline (%s; each tunable's first value)",
                               i, k->restrictions[i], vals[0] ? vals : "no variables");
        }
    }
    return 0;
}

int cut_kspec_allows(const cut_kspec *k, const long long *vals, char *why, size_t why_n)
{
    return cut_kspec_allows_at(k, CUT_KS_SIZES, vals, why, why_n);
}

int cut_kspec_allows_at(const cut_kspec *k, cut_ks_sizeset set, const long long *vals, char *why, size_t why_n)
{
    if (set == CUT_KS_CHECK_SIZES && !k->has_check_sizes) {
        if (why && why_n)
            snprintf(why, why_n, "the spec has no check_sizes");
        return 0;
    }
    cut_ks_var vars[CUT_KS_MAX_VARS];
    const int nv = spec_vars(k, set, vals, vars);
    for (int i = 0; i < k->nrestrictions; i++) {
        cut_err e = {{0}};
        const int h = restriction_holds(k, i, vars, nv, &e);
        if (h == 1)
            continue;
        if (why && why_n) {
            char named[512];
            named_values(k->restrictions[i], vars, nv, named, sizeof named);
            if (h == 0)
                snprintf(why, why_n, "restrictions[%d] '%s' is false for %s", i, k->restrictions[i],
                         named[0] ? named : "these values");
            else
                snprintf(why, why_n, "restrictions[%d] cannot be evaluated for %s: %s", i,
                         named[0] ? named : "these values", e.msg);
            for (char *c = why; *c; c++) /* one line, as every sentence of a spec */
                if ((unsigned char)*c < 32 || *c == 127)
                    *c = '?';
        }
        return 0;
    }
    if (why && why_n)
        why[0] = 0;
    return 1;
}

static int resolve(const cut_kspec *k, cut_ks_sizeset set, const long long *vals, cut_ks_launch *out, cut_err *e);

int cut_kspec_resolve(const cut_kspec *k, const long long *vals, cut_ks_launch *out, cut_err *e)
{
    return cut_kspec_resolve_at(k, CUT_KS_SIZES, vals, out, e);
}

int cut_kspec_resolve_at(const cut_kspec *k, cut_ks_sizeset set, const long long *vals, cut_ks_launch *out,
                         cut_err *e)
{
    if (set == CUT_KS_CHECK_SIZES && !k->has_check_sizes)
        return cut_err_set(e, "the spec '%s' has no check_sizes", k->name);
    return resolve(k, set, vals, out, e) == 0 ? 0 : one_line(e);
}

static int resolve(const cut_kspec *k, cut_ks_sizeset set, const long long *vals, cut_ks_launch *out, cut_err *e)
{
    cut_ks_var vars[CUT_KS_MAX_VARS];
    const int nv = spec_vars(k, set, vals, vars);
    memset(out, 0, sizeof *out);
    long long x, threads = 1;
    for (int d = 0; d < 3; d++) {
        char f[32];
        for (int w = 0; w < 2; w++) {
            const int n = w ? k->nblock : k->ngrid;
            snprintf(f, sizeof f, "launch.%s[%d]", w ? "block" : "grid", d);
            if (d >= n) {
                (w ? out->block : out->grid)[d] = 1;
                continue;
            }
            if (cut_ks_eval(w ? k->block[d] : k->grid[d], vars, nv, &x, e) != 0)
                return cut_err_wrap(e, "%s", f);
            if (x < 1 || x > (w ? 1024 : 2147483647LL))
                return cut_err_set(e, "%s: '%s' is %lld (allowed 1 to %d)", f, w ? k->block[d] : k->grid[d], x,
                                   w ? 1024 : 2147483647);
            (w ? out->block : out->grid)[d] = (unsigned)x;
        }
        threads *= out->block[d];
    }
    if (threads > 1024)
        return cut_err_set(e, "launch.block: %lld threads per block (at most 1024)", threads);
    if (cut_ks_eval(k->smem, vars, nv, &x, e) != 0)
        return cut_err_wrap(e, "launch.smem");
    if (x < 0 || x > 232448)
        return cut_err_set(e, "launch.smem: '%s' is %lld bytes (allowed 0 to 232448)", k->smem, x);
    out->smem = (unsigned)x;
    const cut_ks_tensor *groups[2] = {k->inputs, k->outputs};
    const int counts[2] = {k->ninputs, k->noutputs};
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < counts[g]; i++) {
            size_t elems = 1;
            for (int d = 0; d < groups[g][i].ndims; d++) {
                char f[64];
                snprintf(f, sizeof f, "%s[%d].shape[%d]", g ? "outputs" : "inputs", i, d);
                if (cut_ks_eval(groups[g][i].shape[d], vars, nv, &x, e) != 0)
                    return cut_err_wrap(e, "%s", f);
                if (x < 1 || (size_t)x > ((size_t)1 << 34) / elems)
                    return cut_err_set(e, "%s: '%s' is %lld (a tensor needs 1 to 2^34 elements)", f,
                                       groups[g][i].shape[d], x);
                elems *= (size_t)x;
            }
            (g ? out->out_elems : out->in_elems)[i] = elems;
            const cut_ks_tensor *t = &groups[g][i];
            if (t->payload && t->payload_bytes != elems * cut_elem_size(t->dtype))
                return cut_err_set(e, "inputs[%d].data: %zu bytes, the shape needs %zu (%zu %s elements)", i,
                                   t->payload_bytes, elems * cut_elem_size(t->dtype), elems,
                                   cut_elem_name(t->dtype));
        }
    for (int i = 0; i < k->nscalars; i++) {
        if (cut_ks_eval(k->scalars[i].value, vars, nv, &x, e) != 0)
            return cut_err_wrap(e, "scalars[%d].value", i);
        const cut_elem d = k->scalars[i].dtype;
        if ((d == CUT_EL_I32 && (x < INT32_MIN || x > INT32_MAX)) || (d == CUT_EL_U8 && (x < 0 || x > 255)))
            return cut_err_set(e, "scalars[%d] '%s': '%s' is %lld, which does not fit %s", i, k->scalars[i].name,
                               k->scalars[i].value, x, cut_elem_name(d));
        out->scalars[i] = x;
    }
    return 0;
}

static int parse_root(const cJSON *root, const char *base_dir, cut_kspec *k, cut_err *e)
{
    char lang[16];
    if (!cJSON_IsObject(root))
        return cut_err_set(e, "a kernel spec must be a JSON object");
    if (get_ident(root, "name", "name", k->name, sizeof k->name, e) != 0 ||
        get_str(root, "language", "language", lang, sizeof lang, e) != 0)
        return -1;
    if (strcmp(lang, "cuda") != 0 && strcmp(lang, "triton") != 0)
        return cut_err_set(e, "language: '%s' is not supported (cuda or triton)", lang);
    k->lang = strcmp(lang, "triton") == 0 ? CUT_KS_TRITON : CUT_KS_CUDA;
    if (get_ident(root, "entry", "entry", k->entry, sizeof k->entry, e) != 0 || get_source(root, base_dir, k, e) != 0 ||
        get_reference(root, base_dir, k, e) != 0 ||
        get_vars(root, k, e) != 0 || get_launch(root, k, e) != 0 ||
        get_tensors(root, "inputs", 1, k->inputs, &k->ninputs, e) != 0 ||
        get_tensors(root, "outputs", 0, k->outputs, &k->noutputs, e) != 0 || get_scalars_args_tol(root, k, e) != 0 ||
        get_restrictions(root, k, e) != 0 || get_work_size(root, k, e) != 0 ||
        cut_ks_get_check_sizes(root, k, e) != 0)
        return -1;
    cut_ks_launch l;
    double fl, by;
    if (cut_ks_check_entry(k, e) != 0 || check_args(k, e) != 0 || cut_kspec_resolve(k, NULL, &l, e) != 0 ||
        check_restrictions(k, CUT_KS_SIZES, e) != 0 || cut_kspec_work_size(k, &fl, &by, e) != 0 ||
        (k->lang == CUT_KS_CUDA && cut_ks_check_param_types(k, e) != 0))
        return -1;
    /* the second size set: the baseline resolves there (shapes, launch, scalars that fit) and is allowed there */
    if (k->has_check_sizes && (resolve(k, CUT_KS_CHECK_SIZES, NULL, &l, e) != 0 ||
                               check_restrictions(k, CUT_KS_CHECK_SIZES, e) != 0))
        return cut_err_wrap(e, "check_sizes");
    return 0;
}

int cut_kspec_parse(const char *json, size_t len, const char *base_dir, cut_kspec *k, cut_err *e)
{
    memset(k, 0, sizeof *k);
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long off = (at && at >= json && at <= json + len) ? (long)(at - json) : -1;
        return cut_err_set(e, "not valid JSON (error near byte %ld)", off + 1);
    }
    int rc = parse_root(root, base_dir, k, e);
    cJSON_Delete(root);
    return rc == 0 ? 0 : one_line(e);
}

int cut_kspec_load(const char *path, cut_kspec *k, cut_err *e)
{
    memset(k, 0, sizeof *k);
    char *text = NULL;
    size_t len = 0;
    if (cut_read_regular_file(path, CUT_KS_MAX_SPEC, &text, &len, e) != 0)
        return -1;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    int rc = cut_kspec_parse(text, len, slash ? dir : ".", k, e);
    free(text);
    if (rc != 0)
        cut_err_wrap(e, "%s", path);
    return rc;
}

int cut_kspec_set_size(cut_kspec *k, const char *name, long long value, cut_err *e)
{
    for (int i = 0; i < k->nsizes; i++)
        if (strcmp(k->sizes[i].name, name) == 0) {
            const long long old = k->sizes[i].value;
            k->sizes[i].value = value;
            cut_ks_launch l;
            if (cut_kspec_resolve(k, NULL, &l, e) != 0 || check_restrictions(k, CUT_KS_SIZES, e) != 0) {
                one_line(e);
                k->sizes[i].value = old;
                return cut_err_wrap(e, "size %s=%lld", name, value);
            }
            return 0;
        }
    return cut_err_set(e, "size '%s': the spec '%s' has no such size", name, k->name);
}

void cut_kspec_free(cut_kspec *k)
{
    if (!k)
        return;
    free(k->source);
    free(k->ref_source);
    k->source = k->ref_source = NULL;
    for (int i = 0; i < k->ninputs; i++) {
        free(k->inputs[i].payload);
        k->inputs[i].payload = NULL;
    }
}
