/* libFuzzer target: the ptxas -v report parser cut_parse_ptxas_info (include/cutune/compile.h) on arbitrary text.
 *
 * Invariants: every field is -1 (absent) or a non-negative value; a field whose marker text does not occur in the
 * log at all stays -1 ("Used " for registers and smem, "bytes stack frame" for the stack frame and spills); a
 * register count comes with a static smem size (0 when the line has none); the parse does not depend on what the
 * struct held before; a NULL log leaves every field -1; the other fields of the struct are not touched. */
#include "cutune/compile.h"
#include "fuzz_common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static void check_field(const char *log, const char *marker, int v, const char *what)
{
    if (v < -1 || (v != -1 && !strstr(log, marker))) {
        fprintf(stderr, "invariant failed: %s = %d for a log %s '%s'\n", what, v,
                v < -1 ? "(negative) with or without" : "without", marker);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *log = malloc(size + 1);
    CHECK(log != NULL);
    memcpy(log, data, size);
    log[size] = 0;

    cut_compiled a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0x3c, sizeof b);
    a.cubin = (char *)(uintptr_t)0x1234;
    a.cubin_size = 77;
    a.ok = 1;
    cut_parse_ptxas_info(log, &a);
    cut_parse_ptxas_info(log, &b);

    check_field(log, "Used ", a.regs, "regs");
    check_field(log, "Used ", a.smem_static, "smem_static");
    check_field(log, "bytes stack frame", a.stack_frame, "stack_frame");
    check_field(log, "bytes stack frame", a.spill_stores, "spill_stores");
    check_field(log, "bytes stack frame", a.spill_loads, "spill_loads");
    CHECK(a.regs < 0 || a.smem_static >= 0);
    CHECK(a.regs == b.regs && a.smem_static == b.smem_static && a.stack_frame == b.stack_frame &&
          a.spill_stores == b.spill_stores && a.spill_loads == b.spill_loads);
    CHECK(a.cubin == (char *)(uintptr_t)0x1234 && a.cubin_size == 77 && a.ok == 1);

    cut_parse_ptxas_info(NULL, &b);
    CHECK(b.regs == -1 && b.smem_static == -1 && b.stack_frame == -1 && b.spill_stores == -1 && b.spill_loads == -1);
    free(log);
    return 0;
}
