/* cutune — host emulation of CUDA for generated SIMT kernels.
 *
 * The generated CUDA C text is compiled by the host C++ compiler with a prelude (src/measure/ (emu*)emu_prelude.h) that maps
 * threadIdx/blockIdx/blockDim/gridDim to thread-locals, __shared__ to `static thread_local` storage,
 * __syncthreads() to a barrier, and vector types/intrinsics to host equivalents. The shared object is dlopen'd.
 * Blocks run in parallel on a pool of OS threads; a block never leaves its OS thread, so thread_local __shared__
 * storage is per block. A block's CUDA threads run as fibers (user-level contexts) on that one OS thread and switch
 * at each __syncthreads, which is ~100x faster than one pthread per CUDA thread. Kernels without barriers skip
 * the fibers. Dynamic shared memory (extern __shared__ T name[];) is a per-block buffer of CUT_EMU_DSMEM_BYTES.
 * A thread that waits for others (an emulated mbarrier) yields to them (cut_emu_yield in the prelude); a block whose
 * live threads all wait forever fails the launch as deadlocked. Not emulated: inline PTX (a template emulates its
 * own under #ifdef CUT_EMU: mma, igemm_tc, wgmma), textures, thread block clusters (a launch's blocks run one at a
 * time per worker). */
#ifndef CUTUNE_EMU_H
#define CUTUNE_EMU_H

#include "cutune/common.h"
#include "cutune/measure.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cut_emu_kernel cut_emu_kernel;

/* Bytes of dynamic shared memory a block may use: 227 KiB, an H100's or H200's per-block maximum. */
#define CUT_EMU_DSMEM_BYTES (227u * 1024u)

/* Compiles src with the host compiler ($CUTUNE_HOST_CXX, else c++) into a shared object under work_dir and loads
 * entry. Compile errors: returns -1 with the compiler's message in e. Caller frees with cut_emu_kernel_free. */
int cut_emu_compile(const char *src, const char *entry, const char *work_dir, cut_emu_kernel **out, cut_err *e);
/* Like cut_emu_compile, for arguments of any type: entry (a C identifier, extern "C" or not, neither overloaded
 * nor a template) is called through a trampoline, launched with cut_emu_launch_argv. */
int cut_emu_compile_call(const char *src, const char *entry, const char *work_dir, cut_emu_kernel **out,
                         cut_err *e);
/* The parameters of a kernel from cut_emu_compile_call (0 for others): returns their count; for i < max (and
 * i < 32), sizes[i] gets parameter i's size in bytes and is_ptr[i] whether it is a pointer. */
int cut_emu_kernel_params(const cut_emu_kernel *k, unsigned *sizes, int *is_ptr, int max);
/* Runs a kernel from cut_emu_compile with the given launch configuration and the (host) pointer arguments, in
 * order: up to 12 pointers (not for scalars: a float travels in another register than a pointer). */
int cut_emu_launch(cut_emu_kernel *k, const unsigned grid[3], const unsigned block[3], void **args, int nargs,
                   cut_err *e);
/* Runs a kernel from cut_emu_compile_call: argv[i] is the address of argument i, of the parameter's exact type
 * (a buffer argument: the address of the pointer). */
int cut_emu_launch_argv(cut_emu_kernel *k, const unsigned grid[3], const unsigned block[3], void **argv, cut_err *e);
/* The global buffers of k's next launches: a cache-hinted load or store (__ldcg, __stcs, ...) outside all of them
 * fails the launch, as it faults on a GPU (a local or shared address). n = 0 turns the check off (the default). */
void cut_emu_set_globals(cut_emu_kernel *k, void *const *base, const size_t *bytes, int n);
void cut_emu_kernel_free(cut_emu_kernel *k);

/* The emulated TMA map. A kernel parameter that is a CUtensorMap on a GPU (128 bytes, 64-byte aligned, passed by
 * value: cut_kernel_src.tma, encoded by the GPU worker in src/measure/tma.c) carries these 128 bytes under
 * emulation, the same geometry in words the emulated cp.async.bulk.tensor of the kernel text reads
 * (src/ops/gemm/wgmma_text.c, which copies this layout). */
#define CUT_EMU_TMAP_MAGIC 0x63757475656d7461ull /* "cutuemta": what the kernel checks before it reads a map */
typedef struct cut_emu_tmap {
    unsigned long long magic;     /* CUT_EMU_TMAP_MAGIC */
    unsigned long long base;      /* the buffer's host address */
    unsigned long long dims[2];   /* elements, innermost first */
    unsigned long long row_bytes; /* byte stride of dimension 1 */
    unsigned long long box[2];    /* box in elements, innermost first */
    unsigned long long elem_bytes;
    unsigned long long swizzle; /* bytes: 0, 32, 64 or 128 */
    unsigned long long planes;      /* dimension 2's extent (1 for a 2-D map) */
    unsigned long long plane_bytes; /* byte stride of dimension 2 */
    unsigned long long unused[5];
} cut_emu_tmap;
/* The emulated map of descriptor t (pass it 64-byte aligned, as a CUtensorMap) over the buffer at base of bytes
 * bytes whose elements are elem_bytes wide, after the checks the GPU worker makes before cuTensorMapEncodeTiled
 * (cut_wp_tma_check, the element size, the map inside the buffer). 0, or -1 with the reason in e. */
int cut_emu_tma_encode(const cut_tma_desc *t, const void *base, size_t bytes, size_t elem_bytes, cut_emu_tmap *out,
                       cut_err *e);

/* What a trial of generated code costs on the host emulator, estimated from the work's FLOPs per launch: a trial is
 * CUT_EMU_LAUNCHES_PER_TRIAL launches (one checked on input set 0, at least 3 timed, one checked on set 1) at
 * CUT_EMU_GFLOPS. The rate was calibrated once (issue 16) on the 2-core CI host, a 1x32x32x32x32 3x3 conv, 16
 * candidates: the fastest ran at 2.5 GFLOP/s, the median at 0.45, the slowest at 0.19 (direct-conv FLOPs, whatever the
 * algorithm). 2 GFLOP/s is near the fastest, so the estimate is a lower bound: most candidates take 2-10x longer
 * (plus ~0.2 s of host compile each). A shape whose estimate is over CUT_EMU_MAX_TRIAL_S (e.g. seed 001's case 1,
 * 1x272x272x64x32 3x3: 2.7 GFLOP, >= 6.8 s a trial) is refused by `cutune tune` unless forced. */
#define CUT_EMU_GFLOPS 2.0
#define CUT_EMU_LAUNCHES_PER_TRIAL 5
#define CUT_EMU_MAX_TRIAL_S 1.0
/* The estimated seconds of one emulated trial of a work of flops FLOP per launch (a lower bound, see above). */
double cut_emu_trial_seconds(double flops);

/* The emulation runner: validates against the CPU reference and times wall-clock on the CPU.
 * work_dir holds the host build products (NULL: a fresh directory under $TMPDIR). */
cut_runner *cut_runner_emu_new(const char *work_dir, const cut_timing *t, cut_err *e);
/* run calls hook(ctx, 1) once a call's kernel is compiled, before its first launch, and hook(ctx, 0) after its last
 * (the emulation worker's watchdog for hangs). */
void cut_runner_emu_set_launch_hook(cut_runner *r, void (*hook)(void *ctx, int on), void *ctx);

/* The emulation worker process (`cutune __worker emu:<dir> in out`, emu_worker.c): user kernels only, .so files in
 * work_dir. Returns its exit code. */
int cut_emu_worker_main(const char *work_dir, int in_fd, int out_fd);
/* The runner of user kernels on the host emulator in a worker process (started with worker_exe, NULL:
 * cut_worker_path), so a crashing or hanging variant is a recorded fault or timeout: the GPU runner's process management
 * with an emulation worker. The host-compiled kernels go to so_dir, kept across runs (the file names hash the source,
 * the prelude and the compiler flags; NULL: a temporary folder removed with the runner). Caller frees with
 * cut_runner_free. */
cut_runner *cut_runner_emu_worker_new(const char *worker_exe, const char *so_dir, const cut_timing *t, cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
