/* cutune — a kernel spec's second size set (include/cutune/kspec.h): "check_sizes" read and checked, and a size set
 * as text for the messages that name it. */
#include "ops/kernel/ksizes.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* "ROWS, COLS" into buf: the spec's size names. */
static void size_names(const cut_kspec *k, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < k->nsizes && at < n; i++) {
        const int w = snprintf(buf + at, n - at, "%s%s", i ? ", " : "", k->sizes[i].name);
        at += w > 0 ? (size_t)w : 0;
    }
}

int cut_ks_get_check_sizes(const void *root_, cut_kspec *k, cut_err *e)
{
    const cJSON *cs = cJSON_GetObjectItemCaseSensitive((const cJSON *)root_, "check_sizes"), *v;
    k->has_check_sizes = 0;
    if (!cs)
        return 0;
    char names[512];
    size_names(k, names, sizeof names);
    if (!cJSON_IsObject(cs))
        return cut_err_set(e, "check_sizes: must be an object of size name -> integer (%s)",
                           k->nsizes ? names : "the spec has no sizes");
    if (k->nsizes == 0)
        return cut_err_set(e, "check_sizes: the spec has no sizes to give other values");
    int seen[CUT_KS_MAX_VARS] = {0};
    cJSON_ArrayForEach(v, cs) {
        int at = -1;
        for (int i = 0; i < k->nsizes; i++)
            if (v->string && !strcmp(v->string, k->sizes[i].name))
                at = i;
        if (at < 0)
            return cut_err_set(e, "check_sizes: '%.64s' is not a size of the spec (its sizes: %s)",
                               v->string ? v->string : "", names);
        if (seen[at]++)
            return cut_err_set(e, "check_sizes.%s: given twice", k->sizes[at].name);
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 1 ||
            v->valuedouble > 1e12)
            return cut_err_set(e, "check_sizes.%s: must be an integer from 1 to 1e12", k->sizes[at].name);
        k->check_sizes[at] = (long long)v->valuedouble;
    }
    for (int i = 0; i < k->nsizes; i++)
        if (!seen[i])
            return cut_err_set(e, "check_sizes: lacks %s (give every size of \"sizes\": %s)", k->sizes[i].name,
                               names);
    k->has_check_sizes = 1;
    return 0;
}

void cut_kspec_sizes_text(const cut_kspec *k, cut_ks_sizeset set, char *buf, size_t n)
{
    if (!n)
        return;
    const int check = set == CUT_KS_CHECK_SIZES;
    if (check && !k->has_check_sizes) {
        snprintf(buf, n, "check_sizes (none)");
        return;
    }
    size_t at = 0;
    int w = snprintf(buf, n, "%s (", check ? "check_sizes" : "sizes");
    at = w > 0 ? (size_t)w : 0;
    for (int i = 0; i < k->nsizes && at < n; i++) {
        w = snprintf(buf + at, n - at, "%s%s=%lld", i ? ", " : "", k->sizes[i].name,
                     check ? k->check_sizes[i] : k->sizes[i].value);
        at += w > 0 ? (size_t)w : 0;
    }
    if (at < n)
        snprintf(buf + at, n - at, ")");
}
