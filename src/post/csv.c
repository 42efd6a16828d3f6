/* cutune — the energy phase's CSV files: kernel_outputs/caseN/powercapP/results.csv and kernel_outputs/powercaps.csv.
 *
 * Both are a fixed header line and rows of comma-separated numbers. One row reader splits and converts a line;
 * each file type then checks its own columns. Errors name the file and the 1-based line. */
#include "cutune/report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CSV_MAX_COLS 8

/* One line of the text: [*start, *start + *len), without '\n' and a trailing '\r'. Returns 0 at the end. */
static int next_line(const char *text, size_t len, size_t *pos, const char **start, size_t *n)
{
    if (*pos >= len)
        return 0;
    const char *s = text + *pos;
    const char *nl = memchr(s, '\n', len - *pos);
    size_t l = nl ? (size_t)(nl - s) : len - *pos;
    *pos += l + (nl ? 1 : 0);
    if (l > 0 && s[l - 1] == '\r')
        l--;
    *start = s;
    *n = l;
    return 1;
}

/* Parses a whole decimal number field (no spaces, finite). */
static int field_num(const char *s, size_t n, double *out)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    if (!(buf[0] == '-' || buf[0] == '+' || buf[0] == '.' || (buf[0] >= '0' && buf[0] <= '9')))
        return -1;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (end != buf + n || errno == ERANGE || !isfinite(v))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (buf[i] == 'x' || buf[i] == 'X')
            return -1; /* hexadecimal floats are not CSV numbers */
    *out = v;
    return 0;
}

/* Splits line into exactly ncols numbers. */
static int row_nums(const char *s, size_t n, int ncols, double *v, const char *name, int lineno, cut_err *e)
{
    size_t a = 0;
    for (int c = 0; c < ncols; c++) {
        const char *comma = a <= n ? memchr(s + a, ',', n - a) : NULL;
        size_t b = comma ? (size_t)(comma - s) : n;
        if (c < ncols - 1 && !comma)
            return cut_err_set(e, "%s:%d: expected %d columns, found %d", name, lineno, ncols, c + 1);
        if (c == ncols - 1 && comma)
            return cut_err_set(e, "%s:%d: expected %d columns, found more", name, lineno, ncols);
        if (field_num(s + a, b - a, &v[c]) != 0)
            return cut_err_set(e, "%s:%d: column %d is not a number: '%.*s'", name, lineno, c + 1,
                               (int)CUT_MIN(b - a, (size_t)40), s + a);
        a = b + 1;
    }
    return 0;
}

static int whole_positive(double v)
{
    return v >= 1 && v <= 1e9 && v == floor(v);
}

/* Reads the rows of a CSV with the given header: calls row(v, lineno, ctx) for each non-blank data line. */
typedef int (*csv_row_fn)(const double *v, int lineno, void *ctx, const char *name, cut_err *e);
static int csv_parse(const char *text, size_t len, const char *name, const char *header, int ncols, csv_row_fn row,
                     void *ctx, cut_err *e)
{
    size_t pos = 0, n;
    const char *s;
    if (!next_line(text, len, &pos, &s, &n) || n != strlen(header) || memcmp(s, header, n) != 0)
        return cut_err_set(e, "%s:1: missing header '%s'", name, header);
    for (int lineno = 2; next_line(text, len, &pos, &s, &n); lineno++) {
        double v[CSV_MAX_COLS];
        if (n == 0 && pos >= len)
            break; /* a blank last line */
        if (n == 0)
            return cut_err_set(e, "%s:%d: empty line", name, lineno);
        if (row_nums(s, n, ncols, v, name, lineno, e) != 0 || row(v, lineno, ctx, name, e) != 0)
            return -1;
    }
    return 0;
}

typedef struct kres_ctx {
    cut_kresult *rows;
    int n, cap;
} kres_ctx;

static int kres_row(const double *v, int lineno, void *ctx, const char *name, cut_err *e)
{
    kres_ctx *k = ctx;
    if (!whole_positive(v[0]))
        return cut_err_set(e, "%s:%d: kernel id must be a whole number >= 1, got %g", name, lineno, v[0]);
    if (v[1] < 0 || v[3] < 0)
        return cut_err_set(e, "%s:%d: GFLOP/s and EDP must not be negative", name, lineno);
    if (!(v[2] > 0))
        return cut_err_set(e, "%s:%d: energy must be positive, got %g", name, lineno, v[2]);
    for (int i = 0; i < k->n; i++)
        if (k->rows[i].id == (int)v[0])
            return cut_err_set(e, "%s:%d: kernel id %d appears twice", name, lineno, (int)v[0]);
    if (k->n == k->cap) {
        k->cap = k->cap ? 2 * k->cap : 16;
        k->rows = cut_xrealloc(k->rows, (size_t)k->cap * sizeof *k->rows);
    }
    k->rows[k->n++] = (cut_kresult){.id = (int)v[0], .gflops = v[1], .energy_mj = v[2], .edp = v[3],
                                    .time_ms = v[3] / v[2]};
    return 0;
}

int cut_results_csv_parse(const char *text, size_t len, const char *name, cut_kresult **rows, int *n, cut_err *e)
{
    kres_ctx k = {0};
    *rows = NULL;
    *n = 0;
    if (csv_parse(text, len, name, CUT_RESULTS_CSV_HEADER, 4, kres_row, &k, e) != 0) {
        free(k.rows);
        return -1;
    }
    *rows = k.rows;
    *n = k.n;
    return 0;
}

typedef struct caps_ctx {
    cut_powercap *rows;
    int n, cap;
} caps_ctx;

static int caps_row(const double *v, int lineno, void *ctx, const char *name, cut_err *e)
{
    caps_ctx *k = ctx;
    if (!whole_positive(v[0]))
        return cut_err_set(e, "%s:%d: power cap index must be a whole number >= 1, got %g", name, lineno, v[0]);
    if (!(v[1] > 0))
        return cut_err_set(e, "%s:%d: power limit must be positive, got %g", name, lineno, v[1]);
    for (int i = 0; i < k->n; i++)
        if (k->rows[i].cap == (int)v[0])
            return cut_err_set(e, "%s:%d: power cap %d appears twice", name, lineno, (int)v[0]);
    if (k->n == k->cap) {
        k->cap = k->cap ? 2 * k->cap : 8;
        k->rows = cut_xrealloc(k->rows, (size_t)k->cap * sizeof *k->rows);
    }
    k->rows[k->n++] = (cut_powercap){.cap = (int)v[0], .limit_w = v[1]};
    return 0;
}

int cut_powercaps_csv_parse(const char *text, size_t len, const char *name, cut_powercap **rows, int *n,
                            cut_err *e)
{
    caps_ctx k = {0};
    *rows = NULL;
    *n = 0;
    if (csv_parse(text, len, name, CUT_POWERCAPS_CSV_HEADER, 2, caps_row, &k, e) != 0) {
        free(k.rows);
        return -1;
    }
    *rows = k.rows;
    *n = k.n;
    return 0;
}
