/* libFuzzer target: cut_ncu_parse (include/cutune/ncu.h), Nsight Compute's raw CSV page, fed the raw input (no NUL
 * needed), with and without a kernel name filter, then the region scores and move weights of what it read.
 *
 * Invariants:
 *   - an error has a sentence naming "fuzz.csv" and leaves the profile empty (have 0);
 *   - success: only metric bits are set, every value read is finite, the kernel name is NUL-terminated and, with a
 *     filter, starts with it; region scores lie in [0, 1] and move weights in [0.5, 2]. */
#include "cutune/ncu.h"
#include "fuzz_common.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static void check(const uint8_t *data, size_t size, const char *kernel)
{
    cut_ncu_profile p;
    cut_err e = {{0}};
    if (cut_ncu_parse((const char *)data, size, "fuzz.csv", kernel, &p, &e) != 0) {
        CHECK(e.msg[0] != 0 && strncmp(e.msg, "fuzz.csv", 8) == 0);
        CHECK(p.have == 0);
        return;
    }
    CHECK((p.have >> CUT_NCU_NMETRICS) == 0);
    CHECK(memchr(p.kernel, '\0', sizeof p.kernel) != NULL);
    if (kernel)
        CHECK(strncmp(p.kernel, kernel, strlen(kernel)) == 0 || strlen(p.kernel) == sizeof p.kernel - 1);
    for (int m = 0; m < CUT_NCU_NMETRICS; m++)
        CHECK(!(p.have & (1u << m)) || isfinite(p.v[m]));
    double s[CUT_RG_COUNT], w[CUT_MV_COUNT];
    cut_ncu_regions(&p, s);
    for (int r = 0; r < CUT_RG_COUNT; r++)
        CHECK(s[r] >= 0 && s[r] <= 1);
    cut_ncu_move_weights(s, w);
    for (int m = 0; m < CUT_MV_COUNT; m++)
        CHECK(w[m] >= 0.5 && w[m] <= 2.0);
    cut_buf b;
    cut_buf_init(&b);
    cut_ncu_summary(&p, s, &b);
    CHECK(b.len > 0);
    cut_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(data, size, NULL);
    check(data, size, "k_");
    return 0;
}
