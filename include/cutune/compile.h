/* cutune — NVRTC compilation to cubin for one sm_XX, in a thread pool, with an on-disk content-hash cache.
 *
 * Compile failures are values (status + log), never fatal. Registers and spills are parsed from the ptxas
 * report (--ptxas-options=-v) that NVRTC puts in its log. */
#ifndef CUTUNE_COMPILE_H
#define CUTUNE_COMPILE_H

#include "cutune/common.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cut_compile_opts {
    int sm_major, sm_minor; /* target sm_XX (real architecture, so NVRTC produces a cubin) */
    int arch_suffix_a;      /* 1: sm_90a (needed by wgmma/setmaxnreg) */
    const char *cache_dir;  /* NULL: no disk cache. Else <cache_dir>/<hash>.cubin + .json */
    int nthreads;           /* pool size; <= 0: number of online CPUs */
    const char *extra_opts; /* space-separated extra NVRTC options, or NULL */
    int want_ptx;           /* 1: also keep the PTX (cut_compiled.ptx); a cache entry without it is a miss */
} cut_compile_opts;

typedef struct cut_compiled {
    int ok;            /* 1: cubin present */
    char *cubin;       /* owned */
    size_t cubin_size;
    char *log;         /* owned, NUL-terminated NVRTC log (may be empty, never NULL after compile) */
    char *ptx;         /* owned PTX text when the options asked for it (want_ptx) and it compiled, else NULL */
    int regs;          /* registers per thread, -1 if unknown */
    int spill_stores;  /* bytes, -1 if unknown */
    int spill_loads;   /* bytes, -1 if unknown */
    int smem_static;   /* bytes, -1 if unknown */
    int stack_frame;   /* bytes, -1 if unknown */
    double compile_ms; /* wall time of this compile (0 on a cache hit) */
    int cache_hit;
    uint64_t key;      /* hash of source + options + arch */
} cut_compiled;

/* What a compile said, without what it made: the numbers of a cut_compiled. A runner that compiles a call's source
 * itself (cut_runner_compile_new, a serving rank of an MPI job) reports them in its result (cut_result.comp), so that
 * a record says what a record of a compile in the tuning loop says. */
typedef struct cut_compile_info {
    int compiled;      /* 1: the runner compiled the call (the fields below are its compile's); 0: it did not */
    int ok;            /* 1: a cubin came out */
    int regs, spill_stores, spill_loads, smem_static, stack_frame; /* as cut_compiled's, -1 unknown */
    double compile_ms; /* 0 on a cache hit */
    int cache_hit;
    uint64_t key;
} cut_compile_info;
/* The numbers of c (compiled = 1). */
void cut_compile_info_of(const cut_compiled *c, cut_compile_info *out);

/* Fills o with the defaults: sm_90 (no 'a' suffix), no disk cache, nthreads 0 (online CPUs), no extra options. */
void cut_compile_opts_default(cut_compile_opts *o);

/* The options for one kernel: *base with arch_suffix_a set when the kernel needs the architecture-specific target
 * (cut_kernel_src.arch_a: wgmma, setmaxnreg; sm_90 -> sm_90a), left as base has it otherwise. The cache key covers
 * the target, so the two never share a cubin. */
void cut_compile_opts_for_kernel(const cut_compile_opts *base, int arch_a, cut_compile_opts *out);

/* Compiles one source. Returns 0 whether or not compilation succeeded (see out->ok); -1 only for setup
 * errors (NVRTC missing, out of memory, cache dir unusable). Caller frees out with cut_compiled_free. */
int cut_compile_one(const char *src, const char *name, const cut_compile_opts *o, cut_compiled *out, cut_err *e);
/* src's compile under o from o's disk cache, without compiling: 1 with out filled (cache_hit 1), 0 when the cache
 * (or o) has none (out empty), -1 with e when NVRTC is unusable or the cache folder is. Caller frees out with
 * cut_compiled_free. The compile runner looks here before it starts a process for a compile. */
int cut_compile_lookup(const char *src, const cut_compile_opts *o, cut_compiled *out, cut_err *e);
/* Compiles n sources in parallel on o->nthreads threads. out[i] for srcs[i]. */
int cut_compile_batch(const char *const *srcs, int n, const cut_compile_opts *o, cut_compiled *out, cut_err *e);
void cut_compiled_free(cut_compiled *c);
/* Every number unknown (-1), no cubin, an empty log (never NULL): what a compile starts from. Caller frees with
 * cut_compiled_free. */
void cut_compiled_init(cut_compiled *c);

/* NVRTC version (major*1000+minor*10), or -1 with e set if NVRTC cannot be used. */
int cut_nvrtc_version(cut_err *e);

/* Parses a ptxas -v report into the register/spill/smem fields of out (fields left -1 if absent). */
void cut_parse_ptxas_info(const char *log, cut_compiled *out);

/* The registers per thread a cubin's .nv.info section records (the largest over its kernels), or -1 for an image
 * that is not a little-endian ELF64 cubin or records none. Never reads outside [image, image + n). cut_compile_one
 * takes a compiled kernel's registers from here (the ptxas report's count only when the cubin has none). */
int cut_cubin_regs(const void *image, size_t n);
/* The writable module variables of a cubin (__device__ objects in .nv.global or .nv.global.init): fn(ctx, name,
 * bytes) for each, name as the symbol table spells it (mangled: what cuModuleGetGlobal takes). Returns their count,
 * or -1 for an image that is not a little-endian ELF64 or whose symbol table runs past it. Never reads outside
 * [image, image + n); a name that does not end inside its string table is skipped. */
typedef void (*cut_cubin_global_fn)(void *ctx, const char *name, unsigned long long bytes);
int cut_cubin_globals(const void *image, size_t n, cut_cubin_global_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif

#endif
