/* libFuzzer target: cut_sched_from_cjson (include/cutune/space.h) on whatever cJSON_ParseWithLength makes of
 * arbitrary bytes.
 *
 * Invariants:
 *   - failure returns -1 with a sentence;
 *   - success: the template index is valid; cut_sched_to_json fits a 4 KiB buffer, returns the text's length, and
 *     the text parses (cJSON) and reads back (cut_sched_from_cjson) to an equal schedule (cut_sched_equal, same
 *     hash) whose JSON text is identical; cut_sched_describe stays within its buffer; a buffer one byte shorter
 *     than the text makes cut_sched_to_json return -1. */
#include "cutune/space.h"
#include "cutune/op.h"
#include "fuzz_common.h"

#include <cjson/cJSON.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *o = cJSON_ParseWithLength((const char *)data, size);
    if (!o)
        return 0;
    cut_sched s1;
    cut_err e = {{0}};
    int rc = cut_sched_from_cjson(o, &s1, &e);
    cJSON_Delete(o);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        return 0;
    }
    CHECK(cut_template_get(s1.tpl) != NULL);

    char j1[4096], j2[4096];
    int n1 = cut_tpl_sched_json(CUT_OP_CONV2D, &s1, j1, sizeof j1);
    CHECK(n1 > 0 && (size_t)n1 == strlen(j1));
    cJSON *o2 = cJSON_Parse(j1);
    if (!o2) {
        fprintf(stderr, "invariant failed: cut_sched_to_json wrote invalid JSON: %s\n", j1);
        abort();
    }
    cut_sched s2;
    if (cut_sched_from_cjson(o2, &s2, &e) != 0) {
        fprintf(stderr, "invariant failed: '%s' does not read back: %s\n", j1, e.msg);
        abort();
    }
    cJSON_Delete(o2);
    CHECK(cut_sched_equal(&s1, &s2));
    CHECK(cut_sched_hash(&s1) == cut_sched_hash(&s2));
    int n2 = cut_tpl_sched_json(CUT_OP_CONV2D, &s2, j2, sizeof j2);
    CHECK(n2 == n1 && strcmp(j1, j2) == 0);

    char *tight = malloc((size_t)n1);
    CHECK(tight != NULL);
    CHECK(cut_tpl_sched_json(CUT_OP_CONV2D, &s1, tight, (size_t)n1) == -1);
    free(tight);

    char d[64];
    memset(d, 0x7f, sizeof d);
    cut_sched_describe(&s1, d, sizeof d);
    CHECK(memchr(d, 0, sizeof d) != NULL);
    return 0;
}
