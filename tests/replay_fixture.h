/* cutune tests — the recorded H200 logs in tests/fixtures/replay (header-only; needs cmocka's asserts). */
#ifndef CUTUNE_TEST_REPLAY_FIXTURE_H
#define CUTUNE_TEST_REPLAY_FIXTURE_H

#include "cutune/record.h"

#include <stdio.h>
#include <stdlib.h>

static const char *const fixture_cases[] = {
    "case1_conv2d_N_1_H_272_W_272_CO_64_CI_32_KH_3_KW_3_strides_1_padding_1.json.gz",
    "case7_conv2d_N_1_H_14_W_14_CO_256_CI_256_KH_3_KW_3_strides_1_padding_1.json.gz",
};

/* Loads a gzip'd fixture log from $CUTUNE_FIXTURES/replay. Caller frees *recs. */
static void load_fixture(const char *name, cut_record **recs, int *n)
{
    const char *dir = getenv("CUTUNE_FIXTURES");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "gzip -dc '%s/replay/%s'", dir ? dir : "tests/fixtures", name);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int cap = 1024;
    *recs = malloc(sizeof(cut_record) * (size_t)cap);
    *n = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    while ((len = getline(&line, &lcap, p)) > 0) {
        if (*n == cap) {
            cap *= 2;
            *recs = realloc(*recs, sizeof(cut_record) * (size_t)cap);
        }
        cut_err e;
        if (cut_record_parse(line, (size_t)len, &(*recs)[*n], &e) != 0)
            fail_msg("%s line %d: %s", name, *n + 1, e.msg);
        (*n)++;
    }
    free(line);
    assert_int_equal(pclose(p), 0);
    assert_true(*n >= 500);
}

#endif
