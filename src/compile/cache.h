/* cutune — on-disk compile cache (internal header).
 *
 * An entry is two files in the cache folder, named by the 16-hex-digit key (cut_compiled.key, an FNV-1a 64 over
 * source + full option string + arch + NVRTC version):
 *   <key>.cubin  the cubin bytes
 *   <key>.json   the sidecar: format, key, options, cubin size and FNV-1a of its bytes, regs/spills/smem/stack
 *                and the NVRTC log.
 * Both are written with cut_write_file_atomic, cubin first, sidecar last, so a reader never sees half a file and
 * an entry whose sidecar is missing is simply a miss. A load checks the sidecar's key, the cubin's size, hash and
 * ELF magic: anything absent, partial or corrupt is a miss, and the next store rewrites it.
 * Only successful compiles are stored. */
#ifndef CUTUNE_COMPILE_CACHE_H
#define CUTUNE_COMPILE_CACHE_H

#include "cutune/common.h"
#include "cutune/compile.h"

#include <stddef.h>

#define CUT_CACHE_FORMAT 1

/* "<dir>/<16-hex key><ext>" into buf (ext: ".cubin" or ".json"). Returns -1 with e set if buf is too small. */
int cut_cache_path(const char *dir, uint64_t key, const char *ext, char *buf, size_t n, cut_err *e);

/* Looks key up in dir. On a valid entry returns 1 and fills out: ok=1, cubin (owned by out), cubin_size, log
 * (owned by out), regs/spills/smem/stack, cache_hit=1, compile_ms=0, key; out's previous cubin/log pointers are
 * freed. Otherwise returns 0 and leaves out untouched. Never fails harder than a miss. */
int cut_cache_load(const char *dir, uint64_t key, cut_compiled *out);

/* Stores the successful compile c under key in dir (which must exist); opts is the option string recorded in
 * the sidecar for people reading the cache. Serialised within the process (threads of one process would otherwise
 * share cut_write_file_atomic's temporary name). Returns 0, or -1 with e set. */
int cut_cache_store(const char *dir, uint64_t key, const char *opts, const cut_compiled *c, cut_err *e);

#endif
