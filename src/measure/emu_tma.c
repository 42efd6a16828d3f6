/* cutune — host emulation of CUDA: the emulated TMA map (include/cutune/emu.h), what a kernel run on the host gets
 * where a GPU kernel gets a CUtensorMap, checked as the GPU worker checks a descriptor before encoding it. */
#include "cutune/emu.h"
#include "measure/worker_proto.h"

#include <stdint.h>
#include <string.h>

_Static_assert(sizeof(cut_emu_tmap) == 128, "an emulated map fills a CUtensorMap's 128 bytes");

int cut_emu_tma_encode(const cut_tma_desc *t, const void *base, size_t bytes, size_t elem_bytes, cut_emu_tmap *out,
                       cut_err *e)
{
    memset(out, 0, sizeof *out);
    char d[160];
    cut_wp_tma_describe(t, d, sizeof d);
    if (cut_wp_tma_check(t, e) != 0)
        return -1;
    if ((size_t)t->elem_bytes != elem_bytes)
        return cut_err_set(e, "TMA map (%s): %d-byte elements over a buffer of %zu-byte ones", d, t->elem_bytes,
                           elem_bytes);
    if (cut_wp_tma_span(t) > bytes)
        return cut_err_set(e, "TMA map (%s) reaches past the end of its buffer (%zu bytes)", d, bytes);
    if ((uintptr_t)base % 16 != 0)
        return cut_err_set(e, "TMA map (%s): the buffer's address is not 16-byte aligned", d);
    *out = (cut_emu_tmap){.magic = CUT_EMU_TMAP_MAGIC, .base = (uintptr_t)base, .dims = {t->dims[0], t->dims[1]},
                          .row_bytes = t->row_bytes, .box = {t->box[0], t->box[1]},
                          .elem_bytes = (unsigned)t->elem_bytes, .swizzle = (unsigned)t->swizzle,
                          .planes = t->planes ? t->planes : 1, .plane_bytes = t->plane_bytes};
    return 0;
}
