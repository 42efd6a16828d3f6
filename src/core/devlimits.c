/* cutune — device limits (see cutune/devlimits.h). */
#include "cutune/devlimits.h"

void cut_devlimits_sm90(cut_devlimits *d)
{
    d->sm_major = 9;
    d->sm_minor = 0;
    d->sm_count = 132;
    d->max_threads_per_block = 1024;
    d->max_smem_per_block = 48 * 1024;
    d->max_regs_per_block = 65536;
    d->max_regs_per_thread = 255;
    d->warp_size = 32;
}
