/* cutune — code generation: schedule -> CUDA C source + launch configuration.
 *
 * The generated source is plain SIMT CUDA C (no inline PTX for the conv templates) so that the host emulation
 * backend (emu.h) can compile and run the very same text on the CPU. It starts with a banner naming the workload
 * and the knobs. The kernel's entry is extern "C" __global__ void <entry>(const float* in, const float* w,
 * float* out). */
#ifndef CUTUNE_CODEGEN_H
#define CUTUNE_CODEGEN_H

#include "cutune/common.h"
#include "cutune/work.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CUT_ENTRY_LEN 64
#define CUT_MAX_KNOBS 16

/* A candidate of a template: which template of its op's registry, and its integer knobs. */
typedef struct cut_sched {
    int tpl;                 /* index into the op's template registry */
    int k[CUT_MAX_KNOBS];    /* knob values, meaning per template */
} cut_sched;



typedef struct cut_kernel_src {
    char *src;                 /* owned, NUL-terminated CUDA C */
    char entry[CUT_ENTRY_LEN]; /* "cut_conv2d" */
    unsigned grid[3], block[3];
    unsigned smem_dynamic;     /* bytes of dynamic shared memory (0 for static-only kernels) */
    int uses_inline_ptx;       /* 1: cannot run under emulation */
    double tol_scale;          /* tolerance factor of the kernel's algorithm (cut_conv_tolerance_scaled; 0: 1) */
    int arch_a;                /* 1: needs the architecture-specific target (sm_90a: wgmma, setmaxnreg) */
    /* Kernel arguments: ntma == 0: (in, w, out) as three device pointers (a GEMM: A, B, C). ntma 1 or 2: the
     * buffer tma[j].operand (0 or 1) is passed as its tensor map instead, by value as a 128-byte, 64-byte-aligned
     * CUtensorMap (const __grid_constant__): a GEMM's A and B maps then C as a float pointer; a conv's input
     * pointer, its weights' map, its output pointer. */
    int ntma;
    cut_tma_desc tma[2];
    int extra_bufs;            /* device pointers to the work's buffers 3, 4, ... after those three (a GEMM with
                                  beta != 0: Cin, C's old contents; a conv with an epilogue: its bias) */
    char *keep_dir;            /* owned, NULL: none. A folder where the runner may leave its own build of the kernel
                                  (the Triton worker: kernel.ptx, kernel.ttgir, kernel.sass, triton_meta.json) */
} cut_kernel_src;

/* Renames the entry of generated source in place: the one whole-word "cut_conv2d" followed by '(' (its
 * definition). An error if the name occurs other than exactly once that way, or entry is not an identifier. */
int cut_codegen_rename_entry(cut_kernel_src *k, const char *entry, cut_err *e);
void cut_kernel_src_free(cut_kernel_src *k);

#ifdef __cplusplus
}
#endif

#endif
