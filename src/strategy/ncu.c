/* cutune — Nsight Compute priors: raw CSV page -> profile -> regions -> move weights (cutune/ncu.h). */
#include "cutune/ncu.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_metric[CUT_NCU_NMETRICS] = {
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__inst_executed.sum",
};

const char *cut_ncu_metric_name(cut_ncu_metric m)
{
    return (unsigned)m < CUT_NCU_NMETRICS ? k_metric[m] : NULL;
}

int cut_ncu_metrics_arg(char *buf, size_t n)
{
    size_t used = 0;
    if (n)
        buf[0] = '\0';
    for (int i = 0; i < CUT_NCU_NMETRICS; i++) {
        int k = snprintf(buf + used, n > used ? n - used : 0, "%s%s", i ? "," : "", k_metric[i]);
        if (k < 0 || used + (size_t)k >= n)
            return -1;
        used += (size_t)k;
    }
    return (int)used;
}

/* ---- CSV ---------------------------------------------------------------------------------------------------- */

typedef struct row {
    int n, cap;
    char **f; /* fields, malloc'd */
} row;

static void row_free(row *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->f[i]);
    free(r->f);
    memset(r, 0, sizeof *r);
}

static void row_push(row *r, const char *s, size_t len)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->f = cut_xrealloc(r->f, (size_t)r->cap * sizeof *r->f);
    }
    char *c = cut_xmalloc(len + 1);
    memcpy(c, s, len);
    c[len] = '\0';
    r->f[r->n++] = c;
}

/* Parses the CSV line [p, end) (quoted fields, "" inside quotes) into r. -1 for an unterminated quote or text after
 * a closing quote. */
static int parse_line(const char *p, const char *end, row *r)
{
    cut_buf field;
    cut_buf_init(&field);
    int rc = 0;
    for (;;) {
        field.len = 0;
        if (p < end && *p == '"') {
            p++;
            for (;;) {
                if (p >= end) {
                    rc = -1;
                    goto done;
                }
                if (*p == '"' && p + 1 < end && p[1] == '"') {
                    cut_buf_append(&field, "\"", 1);
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    cut_buf_append(&field, p++, 1);
                }
            }
            if (p < end && *p != ',') {
                rc = -1;
                goto done;
            }
        } else {
            const char *s = p;
            while (p < end && *p != ',')
                p++;
            cut_buf_append(&field, s, (size_t)(p - s));
        }
        row_push(r, field.data ? field.data : "", field.len);
        if (p >= end)
            break;
        p++; /* the comma */
    }
done:
    cut_buf_free(&field);
    return rc;
}

/* A number as ncu writes it: optional sign, digits with ',' thousands separators, a fraction, an exponent. Empty: 1
 * (no value). Else 0 with *v, or -1 when it is not a number. */
static int parse_number(const char *s, double *v)
{
    char clean[128];
    size_t n = 0;
    while (isspace((unsigned char)*s))
        s++;
    if (!*s)
        return 1;
    for (; *s && n + 1 < sizeof clean; s++)
        if (*s != ',')
            clean[n++] = *s;
    if (*s)
        return -1; /* longer than any number */
    while (n && isspace((unsigned char)clean[n - 1]))
        n--;
    clean[n] = '\0';
    char *endp = NULL;
    const double x = strtod(clean, &endp);
    if (endp == clean || *endp || !isfinite(x))
        return -1;
    *v = x;
    return 0;
}

int cut_ncu_parse(const char *text, size_t len, const char *name, const char *kernel, cut_ncu_profile *p, cut_err *e)
{
    memset(p, 0, sizeof *p);
    row header = {0}, units = {0}, pick = {0};
    int have_header = 0, have_units = 0, have_pick = 0, pick_line = 0, lineno = 0, rc = 0;
    const char *end = text + len;
    for (const char *line = text; line < end && rc == 0;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *le = nl ? nl : end;
        const char *next = nl ? nl + 1 : end;
        lineno++;
        if (le > line && le[-1] == '\r')
            le--;
        if (le == line || *line != '"') { /* ncu's notes (==PROF==), the program's own output, blank lines */
            line = next;
            continue;
        }
        row r = {0};
        if (parse_line(line, le, &r) != 0) {
            row_free(&r);
            rc = cut_err_set(e, "%s:%d: a quoted field is not closed, or text follows its closing quote", name, lineno);
            break;
        }
        if (!have_header) {
            if (r.n < 5 || strcmp(r.f[0], "ID") != 0) { /* a row before the header: not ours */
                row_free(&r);
                line = next;
                continue;
            }
            header = r;
            have_header = 1;
        } else if (r.n != header.n) {
            rc = cut_err_set(e, "%s:%d: %d fields, the header has %d", name, lineno, r.n, header.n);
            row_free(&r);
        } else if (!have_units) {
            units = r;
            have_units = 1;
        } else if (!kernel || !strncmp(r.f[4], kernel, strlen(kernel))) {
            row_free(&pick);
            pick = r;
            have_pick = 1;
            pick_line = lineno;
        } else {
            row_free(&r);
        }
        line = next;
    }
    if (rc == 0 && !have_header)
        rc = cut_err_set(e, "%s: no ncu CSV header (a row starting with \"ID\"): run ncu with --csv --page raw", name);
    else if (rc == 0 && !have_units)
        rc = cut_err_set(e, "%s: the header is not followed by ncu's units row", name);
    else if (rc == 0 && !have_pick)
        rc = cut_err_set(e, "%s: no profiled kernel%s%s%s", name, kernel ? " named '" : "", kernel ? kernel : "",
                         kernel ? "...'" : "");
    if (rc == 0) {
        snprintf(p->kernel, sizeof p->kernel, "%s", pick.f[4]);
        for (int m = 0; m < CUT_NCU_NMETRICS && rc == 0; m++)
            for (int c = 0; c < header.n; c++) {
                if (strcmp(header.f[c], k_metric[m]) != 0)
                    continue;
                double v = 0;
                const int st = parse_number(pick.f[c], &v);
                if (st < 0)
                    rc = cut_err_set(e, "%s:%d: %s is '%.40s', not a number", name, pick_line, k_metric[m],
                                     pick.f[c]);
                else if (st == 0) {
                    p->v[m] = v;
                    p->have |= 1u << m;
                }
                break;
            }
    }
    if (rc != 0)
        memset(p, 0, sizeof *p);
    row_free(&header);
    row_free(&units);
    row_free(&pick);
    return rc;
}

/* ---- regions and moves -------------------------------------------------------------------------------------- */

const char *cut_region_name(cut_region r)
{
    static const char *const names[CUT_RG_COUNT] = {"compute", "gmem", "sfu", "atomics", "smem", "overlap"};
    return (unsigned)r < CUT_RG_COUNT ? names[r] : "?";
}

static double clamp01(double x) { return x < 0 || !isfinite(x) ? 0 : x > 1 ? 1 : x; }

static double get(const cut_ncu_profile *p, cut_ncu_metric m) { return p->have & (1u << m) ? p->v[m] : 0.0; }

void cut_ncu_regions(const cut_ncu_profile *p, double s[CUT_RG_COUNT])
{
    const double fma = get(p, CUT_NCU_FMA_PCT), tensor = get(p, CUT_NCU_TENSOR_PCT);
    s[CUT_RG_COMPUTE] = clamp01((fma > tensor ? fma : tensor) / 100.0);
    s[CUT_RG_GMEM] = clamp01(get(p, CUT_NCU_DRAM_PCT) / 100.0);
    s[CUT_RG_SFU] = clamp01(get(p, CUT_NCU_XU_PCT) / 100.0);
    /* one global atomic or reduction per ten instructions saturates the score: they serialise in L2 */
    const double inst = get(p, CUT_NCU_INST), atomics = get(p, CUT_NCU_ATOM_REQ) + get(p, CUT_NCU_RED_REQ);
    s[CUT_RG_ATOMICS] = inst > 0 ? clamp01(10.0 * atomics / inst) : 0;
    /* the share of shared-memory wavefronts that are bank-conflict replays, as far as the L1 is busy */
    const double wf = get(p, CUT_NCU_SMEM_WAVEFRONTS);
    const double conflicts = wf > 0 ? clamp01(get(p, CUT_NCU_BANK_CONFLICTS) / wf) : 0;
    s[CUT_RG_SMEM] = conflicts * clamp01(get(p, CUT_NCU_L1_PCT) / 50.0);
    /* latency not hidden: warps wait on global loads while neither the SMs nor DRAM are near their peak, and not
     * because atomics serialise (their waits are long-scoreboard stalls too, and no pipelining shortens them) */
    const double sm = get(p, CUT_NCU_SM_PCT), dram = get(p, CUT_NCU_DRAM_PCT);
    const double busy = clamp01((sm > dram ? sm : dram) / 100.0);
    s[CUT_RG_OVERLAP] =
        clamp01(get(p, CUT_NCU_STALL_LONG_SB) / 2.0) * (1.0 - busy) * (1.0 - s[CUT_RG_ATOMICS]);
}

cut_region cut_ncu_dominant(const double s[CUT_RG_COUNT])
{
    int best = 0;
    for (int r = 1; r < CUT_RG_COUNT; r++)
        if (s[r] > s[best])
            best = r;
    return (cut_region)best;
}

/* How much each move addresses each region (0: not at all, 1: it is what the region calls for). */
static const double k_affinity[CUT_RG_COUNT][CUT_MV_COUNT] = {
    /*                 async vec   mma   pad   block cg    atom  group math */
    [CUT_RG_COMPUTE] = {0.0, 0.0, 1.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.2},
    [CUT_RG_GMEM] = {0.6, 1.0, 0.0, 0.2, 0.3, 0.6, 0.0, 0.7, 0.0},
    [CUT_RG_SFU] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0},
    [CUT_RG_ATOMICS] = {0.0, 0.0, 0.0, 0.0, 0.2, 0.0, 1.0, 0.0, 0.0},
    [CUT_RG_SMEM] = {0.3, 0.0, 0.0, 1.0, 0.2, 0.0, 0.0, 0.0, 0.0},
    [CUT_RG_OVERLAP] = {1.0, 0.3, 0.0, 0.0, 0.8, 0.0, 0.0, 0.3, 0.0},
};

void cut_ncu_move_weights(const double s[CUT_RG_COUNT], double w[CUT_MV_COUNT])
{
    for (int m = 0; m < CUT_MV_COUNT; m++) {
        double best = 0;
        for (int r = 0; r < CUT_RG_COUNT; r++) {
            const double x = clamp01(s[r]) * k_affinity[r][m];
            best = x > best ? x : best;
        }
        w[m] = 0.5 + 1.5 * best;
    }
}

void cut_ncu_summary(const cut_ncu_profile *p, const double s[CUT_RG_COUNT], cut_buf *b)
{
    int order[CUT_RG_COUNT];
    for (int i = 0; i < CUT_RG_COUNT; i++)
        order[i] = i;
    for (int i = 1; i < CUT_RG_COUNT; i++) /* by score, descending (stable) */
        for (int j = i; j > 0 && s[order[j]] > s[order[j - 1]]; j--) {
            const int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    cut_buf_printf(b, "Nsight Compute profile of %s: %.3f us. Regions by score:", p->kernel,
                   get(p, CUT_NCU_TIME_NS) / 1e3);
    for (int i = 0; i < CUT_RG_COUNT; i++)
        cut_buf_printf(b, "%s %s %.2f", i ? "," : "", cut_region_name((cut_region)order[i]), s[order[i]]);
    cut_buf_printf(b, ". SM %.1f%%, DRAM %.1f%%, L1/shared %.1f%% of peak; FMA pipe %.1f%%, XU pipe %.1f%%, tensor "
                      "pipe %.1f%%; shared bank conflicts %.0f of %.0f wavefronts; global atomics %.0f, reductions "
                      "%.0f of %.0f instructions; achieved occupancy %.1f%%; long-scoreboard stalls %.2f, barrier "
                      "stalls %.2f per issue.",
                   get(p, CUT_NCU_SM_PCT), get(p, CUT_NCU_DRAM_PCT), get(p, CUT_NCU_L1_PCT), get(p, CUT_NCU_FMA_PCT),
                   get(p, CUT_NCU_XU_PCT), get(p, CUT_NCU_TENSOR_PCT), get(p, CUT_NCU_BANK_CONFLICTS),
                   get(p, CUT_NCU_SMEM_WAVEFRONTS), get(p, CUT_NCU_ATOM_REQ), get(p, CUT_NCU_RED_REQ),
                   get(p, CUT_NCU_INST), get(p, CUT_NCU_WARPS_PCT), get(p, CUT_NCU_STALL_LONG_SB),
                   get(p, CUT_NCU_STALL_BARRIER));
}
