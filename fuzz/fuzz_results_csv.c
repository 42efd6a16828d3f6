/* libFuzzer target: the energy phase's CSV parsers cut_results_csv_parse and cut_powercaps_csv_parse
 * (include/cutune/report.h), fed the raw input, plus the Pareto front of the parsed kernels.
 *
 * Invariants:
 *   - an error has a sentence naming "fuzz.csv:<line>:", leaves *rows NULL and *n 0;
 *   - success: *rows is NULL exactly when there are no rows; ids are distinct and >= 1; numbers are finite,
 *     energy > 0, GFLOP/s and EDP >= 0, time = EDP / energy; the input starts with the header line;
 *   - powercaps: distinct caps >= 1 with positive limits;
 *   - the Pareto front is non-empty for a non-empty set, and no point on it is dominated by any other point. */
#include "cutune/report.h"
#include "fuzz_common.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int dominates(const cut_kresult *a, const cut_kresult *b)
{
    return a->time_ms <= b->time_ms && a->energy_mj <= b->energy_mj &&
           (a->time_ms < b->time_ms || a->energy_mj < b->energy_mj);
}

static void check_error(const cut_err *e)
{
    CHECK(e->msg[0] != 0);
    CHECK(strncmp(e->msg, "fuzz.csv:", 9) == 0);
}

static void check_results(const char *text, size_t size)
{
    cut_kresult *k = (cut_kresult *)(uintptr_t)1;
    int n = -1;
    cut_err e = {{0}};
    if (cut_results_csv_parse(text, size, "fuzz.csv", &k, &n, &e) != 0) {
        check_error(&e);
        CHECK(k == NULL && n == 0);
        return;
    }
    CHECK(n >= 0 && (k == NULL) == (n == 0));
    CHECK(size >= strlen(CUT_RESULTS_CSV_HEADER) && memcmp(text, CUT_RESULTS_CSV_HEADER, 10) == 0);
    double *t = malloc((size_t)(n + 1) * sizeof *t), *en = malloc((size_t)(n + 1) * sizeof *en);
    int *f = malloc((size_t)(n + 1) * sizeof *f);
    CHECK(t && en && f);
    for (int i = 0; i < n; i++) {
        CHECK(k[i].id >= 1);
        CHECK(isfinite(k[i].gflops) && k[i].gflops >= 0 && isfinite(k[i].edp) && k[i].edp >= 0);
        CHECK(isfinite(k[i].energy_mj) && k[i].energy_mj > 0 && k[i].time_ms == k[i].edp / k[i].energy_mj);
        for (int j = 0; j < i; j++)
            CHECK(k[j].id != k[i].id);
        t[i] = k[i].time_ms;
        en[i] = k[i].energy_mj;
    }
    int nf = cut_pareto_front(t, en, n, f);
    CHECK(n == 0 || nf >= 1);
    for (int i = 0; i < n; i++)
        for (int j = 0; f[i] && j < n; j++)
            CHECK(!dominates(&k[j], &k[i]));
    free(t);
    free(en);
    free(f);
    free(k);
}

static void check_caps(const char *text, size_t size)
{
    cut_powercap *p = (cut_powercap *)(uintptr_t)1;
    int n = -1;
    cut_err e = {{0}};
    if (cut_powercaps_csv_parse(text, size, "fuzz.csv", &p, &n, &e) != 0) {
        check_error(&e);
        CHECK(p == NULL && n == 0);
        return;
    }
    CHECK(n >= 0 && (p == NULL) == (n == 0));
    for (int i = 0; i < n; i++) {
        CHECK(p[i].cap >= 1 && p[i].limit_w > 0 && isfinite(p[i].limit_w));
        for (int j = 0; j < i; j++)
            CHECK(p[j].cap != p[i].cap);
    }
    free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy, so that reading past the end is caught. */
    char *text = malloc(size ? size : 1);
    CHECK(text != NULL);
    if (size)
        memcpy(text, data, size);
    check_results(text, size);
    check_caps(text, size);
    free(text);
    return 0;
}
