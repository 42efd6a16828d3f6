/* cutune — Conv2D workload shapes: FLOPs, sizes, validation, parsing and the seed-001 file names. */
#include "cutune/workload.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Field names in the seeds' order [N, H, W, CO, CI, KH, KW, stride, pad]. */
static const char *const field_names[9] = {"N", "H", "W", "CO", "CI", "KH", "KW", "stride", "pad"};

/* Tensors must have fewer than 2^31 elements so that every element index fits a signed 32-bit int. */
#define CUT_MAX_ELEMS ((int64_t)INT32_MAX)

static void conv_to_array(const cut_conv *c, int v[9])
{
    v[0] = c->n, v[1] = c->h, v[2] = c->w, v[3] = c->co, v[4] = c->ci;
    v[5] = c->kh, v[6] = c->kw, v[7] = c->stride, v[8] = c->pad;
}

static void conv_from_array(const int v[9], cut_conv *c)
{
    c->n = v[0], c->h = v[1], c->w = v[2], c->co = v[3], c->ci = v[4];
    c->kh = v[5], c->kw = v[6], c->stride = v[7], c->pad = v[8];
}

/* Output extent in 64-bit arithmetic (validate must not overflow on hostile input). stride > 0. */
static int64_t out_extent(int64_t in, int64_t pad, int64_t k, int64_t stride)
{
    int64_t span = in + 2 * pad - k;
    if (span < 0)
        return 0;
    return span / stride + 1;
}

double cut_conv_flops(const cut_conv *c)
{
    return 2.0 * c->n * cut_conv_oh(c) * cut_conv_ow(c) * c->co * (double)c->ci * c->kh * c->kw;
}

static const char *const layout_names[CUT_LAYOUT_COUNT] = {"NCHW", "NHWC"};

const char *cut_conv_layout_name(cut_conv_layout l) { return (unsigned)l < CUT_LAYOUT_COUNT ? layout_names[l] : "?"; }

int cut_conv_layout_parse(const char *s, cut_conv_layout *l, cut_err *e)
{
    for (int i = 0; i < CUT_LAYOUT_COUNT; i++)
        if (strcasecmp(s, layout_names[i]) == 0) {
            *l = (cut_conv_layout)i;
            return 0;
        }
    return cut_err_set(e, "unknown conv layout '%s': use nchw or nhwc", s);
}

static const char *const epilogue_names[CUT_EPI_COUNT] = {"none", "bias", "bias_relu"};

const char *cut_conv_epilogue_name(cut_conv_epilogue x)
{
    return (unsigned)x < CUT_EPI_COUNT ? epilogue_names[x] : "?";
}

int cut_conv_epilogue_parse(const char *s, cut_conv_epilogue *x, cut_err *e)
{
    for (int i = 0; i < CUT_EPI_COUNT; i++)
        if (strcasecmp(s, epilogue_names[i]) == 0) {
            *x = (cut_conv_epilogue)i;
            return 0;
        }
    return cut_err_set(e, "unknown conv epilogue '%s': use none, bias or bias_relu", s);
}

cut_elem cut_conv_in_elem(const cut_conv *c)
{
    return c->dtype == CUT_DT_FP16 ? CUT_EL_F16 : c->dtype == CUT_DT_BF16 ? CUT_EL_BF16 : CUT_EL_F32;
}

/* fp16/bf16 results are rounded to the input type (what a network's next layer reads); tf32 and fp32 stay fp32. */
cut_elem cut_conv_out_elem(const cut_conv *c) { return cut_conv_in_elem(c); }

int cut_conv_is_default(const cut_conv *c)
{
    return c->dtype == CUT_DT_FP32 && c->layout == CUT_NCHW && c->epilogue == CUT_EPI_NONE;
}

double cut_conv_bytes(const cut_conv *c)
{
    const double in = (double)cut_elem_size(cut_conv_in_elem(c)), out = (double)cut_elem_size(cut_conv_out_elem(c));
    return in * ((double)cut_conv_in_elems(c) + (double)cut_conv_w_elems(c)) + out * (double)cut_conv_out_elems(c);
}

double cut_conv_gflops(const cut_conv *c, double ms)
{
    if (!(ms > 0.0))
        return 0.0;
    return cut_conv_flops(c) / (ms * 1e6);
}

size_t cut_conv_in_elems(const cut_conv *c) { return (size_t)c->n * c->ci * c->h * c->w; }

size_t cut_conv_w_elems(const cut_conv *c) { return (size_t)c->co * c->ci * c->kh * c->kw; }

size_t cut_conv_out_elems(const cut_conv *c)
{
    return (size_t)c->n * c->co * (size_t)cut_conv_oh(c) * (size_t)cut_conv_ow(c);
}

/* Product of four positive extents below 2^31 each, saturated just above the limit: every partial product stays
 * below 2^62, so nothing overflows. */
static int64_t elems4(int64_t a, int64_t b, int64_t cc, int64_t d)
{
    int64_t f[4] = {a, b, cc, d}, p = 1;
    for (int i = 0; i < 4; i++) {
        p *= f[i];
        if (p > CUT_MAX_ELEMS)
            return CUT_MAX_ELEMS + 1;
    }
    return p;
}

int cut_conv_equal(const cut_conv *a, const cut_conv *b)
{
    return a->n == b->n && a->h == b->h && a->w == b->w && a->co == b->co && a->ci == b->ci && a->kh == b->kh &&
           a->kw == b->kw && a->stride == b->stride && a->pad == b->pad && a->dtype == b->dtype &&
           a->layout == b->layout && a->epilogue == b->epilogue;
}

int cut_conv_validate(const cut_conv *c, cut_err *e)
{
    int v[9];
    conv_to_array(c, v);
    for (int i = 0; i < 7; i++)
        if (v[i] <= 0)
            return cut_err_set(e, "conv2d field %s is %d: every size must be at least 1", field_names[i], v[i]);
    if (c->stride <= 0)
        return cut_err_set(e, "conv2d field stride is %d: the stride must be at least 1", c->stride);
    if (c->pad < 0)
        return cut_err_set(e, "conv2d field pad is %d: the padding must not be negative", c->pad);
    if ((unsigned)c->dtype >= CUT_DT_COUNT)
        return cut_err_set(e, "conv2d dtype %d is unknown (fp32, tf32, fp16, bf16)", (int)c->dtype);
    if ((unsigned)c->layout >= CUT_LAYOUT_COUNT)
        return cut_err_set(e, "conv2d layout %d is unknown (NCHW, NHWC)", (int)c->layout);
    if ((unsigned)c->epilogue >= CUT_EPI_COUNT)
        return cut_err_set(e, "conv2d epilogue %d is unknown (none, bias, bias_relu)", (int)c->epilogue);
    /* Output sizes are computed in int (cut_conv_oh/ow): the padded extents must fit. */
    if ((int64_t)c->h + 2 * (int64_t)c->pad > INT_MAX || (int64_t)c->w + 2 * (int64_t)c->pad > INT_MAX)
        return cut_err_set(e, "conv2d field pad is %d: the padded input (H or W + 2*pad) exceeds 2^31 - 1", c->pad);
    if ((int64_t)c->kh > (int64_t)c->h + 2 * (int64_t)c->pad)
        return cut_err_set(e, "conv2d field KH is %d: the kernel is taller than the padded input (H + 2*pad = %lld), "
                           "so the output height would be <= 0",
                           c->kh, (long long)c->h + 2 * (long long)c->pad);
    if ((int64_t)c->kw > (int64_t)c->w + 2 * (int64_t)c->pad)
        return cut_err_set(e, "conv2d field KW is %d: the kernel is wider than the padded input (W + 2*pad = %lld), "
                           "so the output width would be <= 0",
                           c->kw, (long long)c->w + 2 * (long long)c->pad);
    int64_t oh = out_extent(c->h, c->pad, c->kh, c->stride), ow = out_extent(c->w, c->pad, c->kw, c->stride);
    if (oh <= 0)
        return cut_err_set(e, "conv2d output height is %lld (from H %d, KH %d, stride %d, pad %d): it must be >= 1",
                           (long long)oh, c->h, c->kh, c->stride, c->pad);
    if (ow <= 0)
        return cut_err_set(e, "conv2d output width is %lld (from W %d, KW %d, stride %d, pad %d): it must be >= 1",
                           (long long)ow, c->w, c->kw, c->stride, c->pad);
    if (oh > INT_MAX || ow > INT_MAX)
        return cut_err_set(e, "conv2d output size %lldx%lld does not fit a 32-bit int", (long long)oh, (long long)ow);
    struct {
        const char *what, *formula;
        int64_t n;
    } t[3] = {
        {"input", "N*CI*H*W", elems4(c->n, c->ci, c->h, c->w)},
        {"weight", "CO*CI*KH*KW", elems4(c->co, c->ci, c->kh, c->kw)},
        {"output", "N*CO*OH*OW", elems4(c->n, c->co, oh, ow)},
    };
    for (int i = 0; i < 3; i++)
        if (t[i].n > CUT_MAX_ELEMS)
            return cut_err_set(e, "conv2d %s tensor (%s) has 2^31 or more elements: cutune indexes tensors with "
                                  "32-bit ints",
                               t[i].what, t[i].formula);
    return 0;
}

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
        p++;
    return p;
}

int cut_conv_parse(const char *s, cut_conv *c, cut_err *e)
{
    int v[9];
    const char *p = skip_ws(s);
    int bracket = 0;
    if (*p == '[') {
        bracket = 1;
        p = skip_ws(p + 1);
    }
    int count = 0;
    for (;;) {
        if (!(*p == '-' || *p == '+' || isdigit((unsigned char)*p))) {
            if (*p == 0 || *p == ']')
                return cut_err_set(e, "invalid conv2d shape '%s': expected 9 integers N,H,W,CO,CI,KH,KW,stride,pad "
                                      "but found %d",
                                   s, count);
            return cut_err_set(e, "invalid conv2d shape '%s': field %d (%s) is not an integer", s, count + 1,
                               count < 9 ? field_names[count] : "extra");
        }
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || (*end != 0 && *end != ',' && *end != ']' && *end != ' ' && *end != '\t' && *end != '\r' &&
                         *end != '\n'))
            return cut_err_set(e, "invalid conv2d shape '%s': field %d (%s) is not an integer", s, count + 1,
                               count < 9 ? field_names[count] : "extra");
        if (errno == ERANGE || x < INT_MIN || x > INT_MAX)
            return cut_err_set(e, "invalid conv2d shape '%s': field %d (%s) is out of range", s, count + 1,
                               count < 9 ? field_names[count] : "extra");
        if (count < 9)
            v[count] = (int)x;
        count++;
        p = skip_ws(end);
        if (*p != ',')
            break;
        p = skip_ws(p + 1);
    }
    if (count != 9)
        return cut_err_set(e, "invalid conv2d shape '%s': expected 9 integers N,H,W,CO,CI,KH,KW,stride,pad but found %d",
                           s, count);
    if (bracket) {
        if (*p != ']')
            return cut_err_set(e, "invalid conv2d shape '%s': missing closing ']'", s);
        p = skip_ws(p + 1);
    } else if (*p == ']') {
        return cut_err_set(e, "invalid conv2d shape '%s': unexpected ']' without an opening '['", s);
    }
    if (*p != 0)
        return cut_err_set(e, "invalid conv2d shape '%s': unexpected trailing text '%s'", s, p);
    cut_conv tmp = {0}; /* fp32, NCHW: a list line or --conv gives the sizes; the dtype and layout come apart */
    conv_from_array(v, &tmp);
    if (cut_conv_validate(&tmp, e) != 0)
        return cut_err_wrap(e, "invalid conv2d shape '%s'", s);
    *c = tmp;
    return 0;
}

void cut_conv_name(const cut_conv *c, char *buf, size_t n)
{
    int len = snprintf(buf, n, "conv2d_N_%d_H_%d_W_%d_CO_%d_CI_%d_KH_%d_KW_%d_strides_%d_padding_%d", c->n, c->h,
                       c->w, c->co, c->ci, c->kh, c->kw, c->stride, c->pad);
    if (c->dtype != CUT_DT_FP32 && len >= 0 && (size_t)len < n)
        len += snprintf(buf + len, n - (size_t)len, "_dtype_%s", cut_dtype_name(c->dtype));
    if (c->layout != CUT_NCHW && len >= 0 && (size_t)len < n)
        len += snprintf(buf + len, n - (size_t)len, "_layout_%s", cut_conv_layout_name(c->layout));
    if (c->epilogue != CUT_EPI_NONE && len >= 0 && (size_t)len < n)
        snprintf(buf + len, n - (size_t)len, "_epi_%s", cut_conv_epilogue_name(c->epilogue));
}

void cut_conv_case_name(const cut_conv *c, int idx, char *buf, size_t n)
{
    char name[160];
    cut_conv_name(c, name, sizeof name);
    snprintf(buf, n, "case%d_%s", idx, name);
}

/* Matches the literal lit at *p, then a non-negative decimal integer (no sign, no spaces) into *out. */
static int match_lit_int(const char **p, const char *lit, int *out)
{
    size_t l = strlen(lit);
    if (strncmp(*p, lit, l) != 0)
        return -1;
    const char *q = *p + l;
    if (!isdigit((unsigned char)*q))
        return -1;
    long long x = 0;
    while (isdigit((unsigned char)*q)) {
        x = x * 10 + (*q - '0');
        if (x > INT_MAX)
            return -1;
        q++;
    }
    *out = (int)x;
    *p = q;
    return 0;
}

/* The optional "_dtype_<name>", "_layout_<name>" then "_epi_<name>" parts of a case name, each one only when not the default
 * (the name cut_conv_name writes); c keeps the defaults for a missing part. -1 on a part that names nothing known
 * or a default written out. */
static int match_dtype_layout(const char **p, cut_conv *c)
{
    if (strncmp(*p, "_dtype_", 7) == 0) {
        const char *q = *p + 7;
        int i = 1;
        for (; i < CUT_DT_COUNT; i++) {
            const char *dn = cut_dtype_name((cut_dtype)i);
            if (strncmp(q, dn, strlen(dn)) == 0 && (q[strlen(dn)] == 0 || q[strlen(dn)] == '_'))
                break;
        }
        if (i == CUT_DT_COUNT)
            return -1;
        c->dtype = (cut_dtype)i;
        *p = q + strlen(cut_dtype_name(c->dtype));
    }
    if (strncmp(*p, "_layout_", 8) == 0) {
        const size_t l = strlen(layout_names[CUT_NHWC]);
        if (strncmp(*p + 8, layout_names[CUT_NHWC], l) != 0 || ((*p)[8 + l] != 0 && (*p)[8 + l] != '_'))
            return -1;
        c->layout = CUT_NHWC;
        *p += 8 + l;
    }
    if (strncmp(*p, "_epi_", 5) == 0) {
        /* the longest name first: "bias" is a prefix of "bias_relu" */
        for (int i = CUT_EPI_COUNT - 1; i > CUT_EPI_NONE; i--)
            if (strcmp(*p + 5, epilogue_names[i]) == 0) {
                c->epilogue = (cut_conv_epilogue)i;
                *p += 5 + strlen(epilogue_names[i]);
                return 0;
            }
        return -1;
    }
    return 0;
}

int cut_conv_parse_case_name(const char *name, int *idx, cut_conv *c, cut_err *e)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    char buf[256];
    size_t len = strlen(base);
    if (len >= sizeof buf)
        return cut_err_set(e, "'%s' is not a case file name (too long)", name);
    memcpy(buf, base, len + 1);
    if (len > 5 && (strcmp(buf + len - 5, ".json") == 0))
        buf[len - 5] = 0;
    else if (len > 4 && strcmp(buf + len - 4, ".csv") == 0)
        buf[len - 4] = 0;
    static const char *const lits[10] = {"case", "_conv2d_N_", "_H_", "_W_", "_CO_",
                                         "_CI_", "_KH_",       "_KW_", "_strides_", "_padding_"};
    int v[10];
    const char *p = buf;
    for (int i = 0; i < 10; i++)
        if (match_lit_int(&p, lits[i], &v[i]) != 0)
            return cut_err_set(e,
                               "'%s' is not a case file name like "
                               "case1_conv2d_N_1_H_56_W_56_CO_64_CI_64_KH_3_KW_3_strides_1_padding_1.json",
                               name);
    cut_conv tmp = {0};
    if (match_dtype_layout(&p, &tmp) != 0 || *p != 0)
        return cut_err_set(e, "'%s' is not a case file name: unexpected trailing text '%s'", name, p);
    if (v[0] < 1)
        return cut_err_set(e, "'%s': the case number must be at least 1", name);
    conv_from_array(v + 1, &tmp);
    if (cut_conv_validate(&tmp, e) != 0)
        return cut_err_wrap(e, "case file name '%s'", name);
    *idx = v[0];
    *c = tmp;
    return 0;
}
