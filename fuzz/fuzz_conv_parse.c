/* libFuzzer target: cut_conv_parse (include/cutune/workload.h) on arbitrary text.
 *
 * Invariants:
 *   - failure returns -1 with a sentence in the error buffer and leaves the output shape untouched;
 *   - success: cut_conv_validate accepts the shape; the derived sizes (output extent, element counts, FLOPs) are
 *     positive, finite and below 2^31 elements; the seed-001 case name ("case<i>_" + cut_conv_name) is the name
 *     followed verbatim (no truncation) and cut_conv_parse_case_name reads it back (also with a directory and a
 *     .json suffix) to the same index and shape; the canonical text "N,H,...,pad" and its bracketed form with
 *     spaces parse back to the same shape. */
#include "cutune/workload.h"
#include "fuzz_common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>



static void check_reparse(const char *text, const cut_conv *want)
{
    cut_conv c2;
    cut_err e = {{0}};
    if (cut_conv_parse(text, &c2, &e) != 0) {
        fprintf(stderr, "invariant failed: canonical text '%s' does not parse: %s\n", text, e.msg);
        abort();
    }
    CHECK(conv_eq(&c2, want));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    CHECK(s != NULL);
    memcpy(s, data, size);
    s[size] = 0;

    const cut_conv sentinel = {-7, -7, -7, -7, -7, -7, -7, -7, -7};
    cut_conv c = sentinel;
    cut_err e = {{0}};
    int rc = cut_conv_parse(s, &c, &e);
    if (rc != 0) {
        CHECK(rc == -1);
        CHECK(e.msg[0] != 0);
        CHECK(conv_eq(&c, &sentinel));
        free(s);
        return 0;
    }

    CHECK(cut_conv_validate(&c, &e) == 0);
    CHECK(cut_conv_oh(&c) >= 1 && cut_conv_ow(&c) >= 1);
    const size_t lim = (size_t)1 << 31;
    size_t ni = cut_conv_in_elems(&c), nw = cut_conv_w_elems(&c), no = cut_conv_out_elems(&c);
    CHECK(ni >= 1 && ni < lim && nw >= 1 && nw < lim && no >= 1 && no < lim);
    double fl = cut_conv_flops(&c);
    CHECK(isfinite(fl) && fl >= 2.0);

    /* The case file name round-trip (seed 001 naming). */
    char name[512], cn[600], path[700];
    cut_conv_name(&c, name, sizeof name);
    CHECK(strlen(name) + 1 < sizeof name);
    int idx = 1 + (int)(size % 100000);
    cut_conv_case_name(&c, idx, cn, sizeof cn);
    char prefix[32];
    int pl = snprintf(prefix, sizeof prefix, "case%d_", idx);
    if (strncmp(cn, prefix, (size_t)pl) != 0 || strcmp(cn + pl, name) != 0) {
        fprintf(stderr, "invariant failed: cut_conv_case_name gave '%s', expected '%s%s'\n", cn, prefix, name);
        abort();
    }
    int idx2 = -1;
    cut_conv c2;
    if (cut_conv_parse_case_name(cn, &idx2, &c2, &e) != 0) {
        fprintf(stderr, "invariant failed: case name '%s' does not parse back: %s\n", cn, e.msg);
        abort();
    }
    CHECK(idx2 == idx);
    CHECK(conv_eq(&c2, &c));
    snprintf(path, sizeof path, "tuningrecords/%s.json", cn);
    idx2 = -1;
    CHECK(cut_conv_parse_case_name(path, &idx2, &c2, &e) == 0);
    CHECK(idx2 == idx);
    CHECK(conv_eq(&c2, &c));

    /* The canonical text forms. */
    char txt[256];
    snprintf(txt, sizeof txt, "%d,%d,%d,%d,%d,%d,%d,%d,%d", c.n, c.h, c.w, c.co, c.ci, c.kh, c.kw, c.stride, c.pad);
    check_reparse(txt, &c);
    snprintf(txt, sizeof txt, " [%d, %d, %d, %d, %d, %d, %d, %d, %d] ", c.n, c.h, c.w, c.co, c.ci, c.kh, c.kw,
             c.stride, c.pad);
    check_reparse(txt, &c);
    free(s);
    return 0;
}
