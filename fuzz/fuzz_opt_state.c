/* libFuzzer target: the optimizer's search_state.json (what --resume reads back; a crash or a hand edit can leave it
 * damaged). Invariant: cut_opt_state_check either accepts a consistent graph or fails with a one-line sentence,
 * never crashes, loops or leaks (ASan). */
#include "cutune/optimize.h"
#include "fuzz_common.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    cut_err e = {{0}};
    if (cut_opt_state_check((const char *)data, size, &e) != 0)
        CHECK(e.msg[0] != 0 && strchr(e.msg, '\n') == NULL);
    return 0;
}
