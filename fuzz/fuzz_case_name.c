/* libFuzzer target: cut_conv_parse_case_name (include/cutune/workload.h) on arbitrary file names.
 *
 * Invariants:
 *   - failure returns -1 with a sentence and leaves the index and shape untouched;
 *   - success: the index is >= 1, cut_conv_validate accepts the shape, and the name that cut_conv_case_name
 *     builds from them parses back to the same index and shape (the input may differ in spelling: leading zeros,
 *     a directory, a .json/.csv suffix). */
#include "cutune/workload.h"
#include "fuzz_common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>



int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    CHECK(s != NULL);
    memcpy(s, data, size);
    s[size] = 0;

    const cut_conv sentinel = {-7, -7, -7, -7, -7, -7, -7, -7, -7};
    cut_conv c = sentinel;
    int idx = -7;
    cut_err e = {{0}};
    int rc = cut_conv_parse_case_name(s, &idx, &c, &e);
    if (rc != 0) {
        CHECK(rc == -1);
        CHECK(e.msg[0] != 0);
        CHECK(idx == -7);
        CHECK(conv_eq(&c, &sentinel));
        free(s);
        return 0;
    }
    CHECK(idx >= 1);
    CHECK(cut_conv_validate(&c, &e) == 0);

    char cn[600];
    cut_conv_case_name(&c, idx, cn, sizeof cn);
    CHECK(strlen(cn) + 1 < sizeof cn);
    int idx2 = -1;
    cut_conv c2;
    if (cut_conv_parse_case_name(cn, &idx2, &c2, &e) != 0) {
        fprintf(stderr, "invariant failed: '%s' (built from '%s') does not parse back: %s\n", cn, s, e.msg);
        abort();
    }
    CHECK(idx2 == idx);
    CHECK(conv_eq(&c2, &c));
    free(s);
    return 0;
}
