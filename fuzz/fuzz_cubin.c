/* libFuzzer target: the cubin register-count reader cut_cubin_regs (include/cutune/compile.h) on arbitrary bytes.
 *
 * Invariants: the image is read only inside [data, data + size) (an exactly sized copy, so ASan sees any read past
 * it); the result is -1 or a count in [0, 65535]; the same bytes give the same count; an image that does not start
 * with the ELF64 little-endian identification gives -1. The same for cut_cubin_globals: its count matches the
 * callbacks, each with a non-zero size and a name that ends inside the image. */
#include "cutune/compile.h"
#include "fuzz_common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void count_global(void *ctx, const char *name, unsigned long long bytes)
{
    unsigned long long *seen = ctx;
    CHECK(bytes > 0);
    CHECK(strlen(name) < (size_t)1 << 30); /* the name ends (ASan sees a read past the image) */
    seen[0]++;
    seen[1] += bytes;
}

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
    /* the module-variable reader: every name it reports is a string inside the image, every size non-zero */
    unsigned long long seen[2] = {0, 0};
    const int g = cut_cubin_globals(img, size, count_global, seen);
    CHECK(g == -1 || (g >= 0 && (unsigned long long)g == seen[0]));
    CHECK(cut_cubin_globals(img, size, NULL, NULL) == g);
    if (size < 6 || memcmp(img, "\x7f" "ELF\x02\x01", 6) != 0)
        CHECK(g == -1);
    free(img);
    return 0;
}
