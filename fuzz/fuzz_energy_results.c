/* libFuzzer target: cut_energy_results_parse (include/cutune/energy.h), the parser cutune energy uses to merge one
 * kernel's row into an existing powercapP/results.csv, fed the raw input as a NUL-terminated text.
 *
 * Invariants:
 *   - an error has a sentence naming the file ("fuzz.csv") and leaves an empty table;
 *   - success: the text starts with the header; ids are >= 1 and strictly increasing (the table is kept sorted, a
 *     repeated id keeps one row); written back (cut_energy_results_csv) and parsed again, the text is a fixed point. */
#include "cutune/energy.h"
#include "fuzz_common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    CHECK(text);
    memcpy(text, data, size);
    text[size] = '\0';
    cut_energy_table t;
    cut_err e = {{0}};
    if (cut_energy_results_parse(text, "fuzz.csv", &t, &e) != 0) {
        CHECK(e.msg[0] != 0 && strncmp(e.msg, "fuzz.csv", 8) == 0);
        CHECK(t.n == 0);
        cut_energy_table_free(&t);
        free(text);
        return 0;
    }
    CHECK(strncmp(text, CUT_ENERGY_RESULTS_HEADER, strlen(CUT_ENERGY_RESULTS_HEADER)) == 0);
    for (int i = 0; i < t.n; i++) {
        CHECK(t.id[i] >= 1);
        CHECK(i == 0 || t.id[i - 1] < t.id[i]);
    }
    cut_buf once, twice;
    cut_buf_init(&once);
    cut_buf_init(&twice);
    cut_energy_results_csv(&once, &t);
    cut_buf_append(&once, "", 1);
    cut_energy_table u;
    CHECK(cut_energy_results_parse(once.data, "fuzz.csv", &u, &e) == 0);
    CHECK(u.n == t.n);
    cut_energy_results_csv(&twice, &u);
    cut_buf_append(&twice, "", 1);
    CHECK(strcmp(once.data, twice.data) == 0);
    cut_buf_free(&once);
    cut_buf_free(&twice);
    cut_energy_table_free(&t);
    cut_energy_table_free(&u);
    free(text);
    return 0;
}
