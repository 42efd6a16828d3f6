/* cutune — the host emulator's kernel and its runtime hooks, shared by emu_compile.c (builds and loads it) and
 * emu.c (launches it) (internal header). */
#ifndef CUTUNE_MEASURE_EMU_INT_H
#define CUTUNE_MEASURE_EMU_INT_H

#include "cutune/emu.h"

#include <stddef.h>

#define EMU_MAX_PARAMS 32 /* parameters described by cut_emu_kernel_params */
#define EMU_MAX_GLOBALS 32 /* buffers cut_emu_set_globals keeps */

/* Layout shared with struct cut_emu_hooks in emu_prelude.h. */
typedef struct emu_hooks {
    unsigned int version;
    void (*syncthreads)(void);
    void (*syncwarp)(void);
    void (*warp_exchange)(unsigned long long v, unsigned long long *all);
    void (*global_access)(const void *p, unsigned long bytes, const char *what);
    int (*yield)(unsigned long long spins);
    void (*fail)(const char *what);
} emu_hooks;

typedef void (*emu_bind_fn)(const emu_hooks *);
typedef void (*emu_set3_fn)(const unsigned int *);
typedef void (*emu_set_dims_fn)(const unsigned int *, const unsigned int *);

struct cut_emu_kernel {
    void *dl;
    void (*entry)(void);
    emu_set_dims_fn set_dims;
    emu_set3_fn set_thread, set_block;
    int has_sync; /* source mentions a barrier or warp function: run the block's threads as fibers */
    int typed;    /* entry is a cut_emu_compile_call trampoline taking one void **argv */
    int nparams;  /* typed: the kernel's parameters, params[i] as cut_emu_params in the prelude describes them */
    unsigned params[EMU_MAX_PARAMS];
    int nglobal; /* global buffers of the next launches (cut_emu_set_globals): 0, no address check */
    const unsigned char *global_base[EMU_MAX_GLOBALS];
    size_t global_bytes[EMU_MAX_GLOBALS];
    /* The module's own writable data (its __device__ variables: a split-K workspace, a semaphore array): the address
     * check lets cache-hinted accesses there pass, as a GPU does. */
    const unsigned char *data_lo, *data_hi;
    char so_path[1024];
};

/* emu.c: the runtime hooks (barriers, warp exchange, the global-address check) that emu_compile.c binds into
 * every loaded kernel (the prelude's cut_emu_bind). Static, never freed. */
extern const emu_hooks cut_emu_hooks_table;

#endif
