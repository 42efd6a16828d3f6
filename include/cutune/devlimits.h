/* cutune — what a schedule space needs to know of the device (filled from the GPU, cutune/gpu.h, or with the
 * sm_90 defaults when no GPU is present). */
#ifndef CUTUNE_DEVLIMITS_H
#define CUTUNE_DEVLIMITS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cut_devlimits {
    int sm_major, sm_minor;        /* 9, 0 */
    int sm_count;                  /* 132 */
    int max_threads_per_block;     /* 1024 */
    int max_smem_per_block;        /* static shared memory, bytes: 49152 */
    int max_regs_per_block;        /* 65536 */
    int max_regs_per_thread;       /* 255 */
    int warp_size;                 /* 32 */
} cut_devlimits;

/* Limits of an H100/H200 (sm_90): the defaults when no GPU is present. */
void cut_devlimits_sm90(cut_devlimits *d);

#ifdef __cplusplus
}
#endif

#endif
