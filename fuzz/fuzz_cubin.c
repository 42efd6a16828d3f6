/* libFuzzer target: the cubin register-count reader cut_cubin_regs (include/cutune/compile.h) on arbitrary bytes.
 *
 * Invariants: the image is read only inside [data, data + size) (an exactly sized copy, so ASan sees any read past
 * it); the result is -1 or a count in [0, 65535]; the same bytes give the same count; an image that does not start
 * with the ELF64 little-endian identification gives -1. */
#include "cutune/compile.h"
#include "fuzz_common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *img = malloc(size ? size : 1);
    CHECK(img != NULL);
    if (size)
        memcpy(img, data, size);
    const int r = cut_cubin_regs(img, size);
    CHECK(r == -1 || (r >= 0 && r <= 65535));
    CHECK(cut_cubin_regs(img, size) == r);
    if (size < 6 || memcmp(img, "\x7f" "ELF\x02\x01", 6) != 0)
        CHECK(r == -1);
    free(img);
    return 0;
}
