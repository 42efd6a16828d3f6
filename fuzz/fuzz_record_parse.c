/* libFuzzer target: cut_record_parse (include/cutune/record.h) on one line of arbitrary bytes.
 *
 * Invariants:
 *   - failure returns -1 with a sentence and leaves the output record untouched;
 *   - success: cut_record_to_json writes exactly one line ending in '\n'; that line parses again, and the record
 *     read back serialises to the very same text (records are compared through their serialised text, because
 *     memcmp would compare struct padding); the integer fields, shape, schedule, status and every finite number
 *     survive the round trip exactly. */
#include "cutune/record.h"
#include "fuzz_common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>



/* A finite number must come back exactly; a non-finite one is not checked here (the text comparison is). */
static int num_kept(double a, double b) { return !isfinite(a) || a == b; }

static void fail_text(const char *what, const cut_buf *t1, const cut_buf *t2)
{
    fprintf(stderr, "invariant failed: %s\nfirst:  %.*s\nsecond: %.*s\n", what, (int)t1->len, t1->data,
            t2 ? (int)t2->len : 0, t2 ? t2->data : "");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cut_record *r1 = malloc(sizeof *r1), *r2 = malloc(sizeof *r2);
    CHECK(r1 && r2);
    memset(r1, 0xa5, sizeof *r1);
    cut_err e = {{0}};
    int rc = cut_record_parse((const char *)data, size, r1, &e);
    if (rc != 0) {
        CHECK(rc == -1);
        CHECK(e.msg[0] != 0);
        const unsigned char *p = (const unsigned char *)r1;
        for (size_t i = 0; i < sizeof *r1; i++)
            CHECK(p[i] == 0xa5);
        free(r1);
        free(r2);
        return 0;
    }

    cut_buf t1, t2;
    cut_buf_init(&t1);
    cut_buf_init(&t2);
    cut_record_to_json(r1, &t1);
    CHECK(t1.len > 0 && t1.data[t1.len - 1] == '\n');
    CHECK(memchr(t1.data, '\n', t1.len - 1) == NULL);
    CHECK(memchr(t1.data, '\0', t1.len) == NULL);
    if (cut_record_parse(t1.data, t1.len, r2, &e) != 0) {
        fprintf(stderr, "invariant failed: serialised record does not parse: %s\n", e.msg);
        fail_text("serialised record rejected", &t1, NULL);
    }
    cut_record_to_json(r2, &t2);
    if (t1.len != t2.len || memcmp(t1.data, t2.data, t1.len) != 0)
        fail_text("record does not round-trip: serialise(parse(serialise(r))) != serialise(r)", &t1, &t2);

    CHECK(r1->case_idx == r2->case_idx && r1->trial == r2->trial);
    CHECK(conv_eq(&r1->conv, &r2->conv));
    CHECK(cut_sched_equal(&r1->sched, &r2->sched));
    CHECK(r1->status == r2->status);
    CHECK(r1->repeats == r2->repeats && r1->regs == r2->regs && r1->spills == r2->spills);
    CHECK(r1->env.driver_version == r2->env.driver_version && r1->env.sm_clock_mhz == r2->env.sm_clock_mhz);
    CHECK(num_kept(r1->median_ms, r2->median_ms) && num_kept(r1->min_ms, r2->min_ms) &&
          num_kept(r1->max_ms, r2->max_ms) && num_kept(r1->compile_ms, r2->compile_ms) &&
          num_kept(r1->env.power_limit_w, r2->env.power_limit_w));

    cut_buf_free(&t1);
    cut_buf_free(&t2);
    free(r1);
    free(r2);
    return 0;
}
