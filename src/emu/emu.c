/* cutune — host emulation of CUDA: compile generated CUDA C with the host C++ compiler and run it on pthreads.
 *
 * Compile: prelude (emu_prelude.h, embedded) + "#line 1 kernel.cu" + source -> <work_dir>/emu_<hash>.cpp ->
 * $CUTUNE_HOST_CXX (default c++) -> <work_dir>/emu_<hash>.so (renamed into place, so a cached .so is always
 * complete) -> dlopen. The hash covers compiler, flags, prelude and source, so the .so files are a cache.
 *
 * Launch: blockDim.x*y*z OS threads are created once per launch and walk the blocks in order (x fastest);
 * a block ends when all its threads have returned, and only then does the next block start, which is what lets
 * __shared__ be static storage in the .so (see the prelude). __syncthreads() is a futex barrier whose
 * participant count drops when a thread returns from the kernel, so early-return kernels behave as on a GPU.
 * Kernels that contain no barrier or warp function run in "serial mode": min(CPUs, threads) OS threads each
 * run a share of the block's threads one after another, which is valid because without a barrier no thread can
 * wait for another, and avoids hundreds of context switches per block. */
#include "cutune/emu.h"
#include "cutune/util.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern const char cut_emu_prelude_text[];
extern char **environ;

#define EMU_MAX_ARGS 12
#define EMU_MAX_THREADS 1024
#define EMU_STACK_BYTES (256u * 1024u)
#define EMU_CXX_FLAGS "-O1 -shared -fPIC -std=c++17 -w -fno-strict-aliasing -fno-math-errno"

/* Layout shared with struct cut_emu_hooks in emu_prelude.h. */
typedef struct emu_hooks {
    unsigned int version;
    void (*syncthreads)(void);
    void (*syncwarp)(void);
    void (*warp_exchange)(unsigned long long v, unsigned long long *all);
} emu_hooks;

typedef void (*emu_bind_fn)(const emu_hooks *);
typedef void (*emu_set3_fn)(const unsigned int *);
typedef void (*emu_set_dims_fn)(const unsigned int *, const unsigned int *);

struct cut_emu_kernel {
    void *dl;
    void (*entry)(void);
    emu_set_dims_fn set_dims;
    emu_set3_fn set_thread, set_block;
    int has_sync; /* source mentions a barrier or warp function: one OS thread per CUDA thread */
    char so_path[1024];
};

/* ---- compile ------------------------------------------------------------------------------------------ */

/* Splits a command line on blanks into argv (no quoting). Returns the count; words point into buf. */
static int split_words(char *buf, char **argv, int max)
{
    int n = 0;
    for (char *p = strtok(buf, " \t"); p && n < max; p = strtok(NULL, " \t"))
        argv[n++] = p;
    return n;
}

/* Runs argv with stdout and stderr to log_path. Returns the exit status (or -1 with e set if it could not
 * be started / was killed by a signal, which is also a compile failure). */
static int run_logged(char **argv, const char *log_path, cut_err *e)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return cut_err_set(e, "cannot run host compiler '%s': %s (set CUTUNE_HOST_CXX)", argv[0], strerror(rc));
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            return cut_err_set(e, "waitpid on host compiler: %s", strerror(errno));
    }
    if (WIFSIGNALED(st))
        return cut_err_set(e, "host compiler '%s' killed by signal %d", argv[0], WTERMSIG(st));
    return WEXITSTATUS(st);
}

static int source_has_sync(const char *src)
{
    static const char *const words[] = {"__syncthreads", "__syncwarp", "__shfl", "__ballot", "__any_sync",
                                        "__all_sync", "_sync("};
    for (size_t i = 0; i < CUT_ARRAY_LEN(words); i++)
        if (strstr(src, words[i]))
            return 1;
    return 0;
}

static void hooks_syncthreads(void);
static void hooks_syncwarp(void);
static void hooks_warp_exchange(unsigned long long v, unsigned long long *all);
static const emu_hooks emu_hooks_table = {1, hooks_syncthreads, hooks_syncwarp, hooks_warp_exchange};

static int load_so(const char *so, const char *entry, cut_emu_kernel *k, cut_err *e)
{
    k->dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!k->dl)
        return cut_err_set(e, "dlopen %s: %s", so, dlerror());
    void *f = dlsym(k->dl, entry);
    if (!f)
        return cut_err_set(e, "kernel entry '%s' not found in %s (is it extern \"C\"?)", entry, so);
    /* POSIX guarantees that a data pointer from dlsym converts to a function pointer. */
    memcpy(&k->entry, &f, sizeof f);
    void *b = dlsym(k->dl, "cut_emu_bind"), *d = dlsym(k->dl, "cut_emu_set_dims");
    void *t = dlsym(k->dl, "cut_emu_set_thread"), *bl = dlsym(k->dl, "cut_emu_set_block");
    if (!b || !d || !t || !bl)
        return cut_err_set(e, "%s lacks the emulation prelude's entry points", so);
    emu_bind_fn bind;
    memcpy(&bind, &b, sizeof b);
    memcpy(&k->set_dims, &d, sizeof d);
    memcpy(&k->set_thread, &t, sizeof t);
    memcpy(&k->set_block, &bl, sizeof bl);
    bind(&emu_hooks_table);
    return 0;
}

/* Keeps the first max_lines lines of s (in place). */
static void keep_lines(char *s, int max_lines)
{
    int n = 0;
    for (char *p = s; *p; p++)
        if (*p == '\n' && ++n == max_lines) {
            p[1] = '\0';
            return;
        }
}

/* Allocates *out (caller frees with cut_emu_kernel_free). */
int cut_emu_compile(const char *src, const char *entry, const char *work_dir, cut_emu_kernel **out, cut_err *e)
{
    *out = NULL;
    char tmpdir[512];
    if (!work_dir) {
        const char *t = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/cutune-emu-%ld", t && *t ? t : "/tmp", (long)getuid());
        work_dir = tmpdir;
    }
    if (cut_mkdirs(work_dir, e) < 0)
        return -1;
    const char *cxx = getenv("CUTUNE_HOST_CXX");
    if (!cxx || !*cxx)
        cxx = "c++";
    const char *flags = EMU_CXX_FLAGS;

    uint64_t h = CUT_FNV_INIT;
    h = cut_fnv1a(h, cxx, strlen(cxx) + 1);
    h = cut_fnv1a(h, flags, strlen(flags) + 1);
    h = cut_fnv1a(h, cut_emu_prelude_text, strlen(cut_emu_prelude_text) + 1);
    h = cut_fnv1a(h, src, strlen(src));
    char so[1024], cpp[1024], log[1024], tmp[1100];
    snprintf(so, sizeof so, "%s/emu_%016llx.so", work_dir, (unsigned long long)h);
    snprintf(cpp, sizeof cpp, "%s/emu_%016llx.cpp", work_dir, (unsigned long long)h);
    snprintf(log, sizeof log, "%s/emu_%016llx.log", work_dir, (unsigned long long)h);

    cut_emu_kernel *k = cut_xcalloc(1, sizeof *k);
    snprintf(k->so_path, sizeof k->so_path, "%s", so);
    k->has_sync = source_has_sync(src);

    if (!cut_path_exists(so)) {
        /* Unique temporaries: several threads or processes may compile the same source at once. */
        static atomic_uint counter;
        unsigned c = atomic_fetch_add(&counter, 1);
        char cpp_tmp[1100];
        snprintf(cpp_tmp, sizeof cpp_tmp, "%s.%ld.%u.cpp", cpp, (long)getpid(), c);
        snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", so, (long)getpid(), c);
        FILE *f = fopen(cpp_tmp, "w");
        if (!f) {
            cut_err_set(e, "cannot write %s: %s", cpp_tmp, strerror(errno));
            goto fail;
        }
        fputs(cut_emu_prelude_text, f);
        fputs("\n#line 1 \"kernel.cu\"\n", f);
        fputs(src, f);
        fputc('\n', f);
        if (fclose(f) != 0) {
            cut_err_set(e, "cannot write %s: %s", cpp_tmp, strerror(errno));
            unlink(cpp_tmp);
            goto fail;
        }
        rename(cpp_tmp, cpp); /* kept for inspection; a lost race leaves an identical file */

        char cmd[2048];
        snprintf(cmd, sizeof cmd, "%s %s", cxx, flags);
        char *argv[64];
        int na = split_words(cmd, argv, 56);
        argv[na++] = "-o";
        argv[na++] = tmp;
        argv[na++] = cpp;
        argv[na++] = "-lm";
        argv[na] = NULL;
        char log_tmp[1100];
        snprintf(log_tmp, sizeof log_tmp, "%s.%ld.%u", log, (long)getpid(), c);
        int rc = run_logged(argv, log_tmp, e);
        if (rc != 0) {
            char *text = NULL;
            size_t len = 0;
            if (rc > 0) {
                if (cut_read_file(log_tmp, &text, &len, NULL) == 0) {
                    keep_lines(text, 12);
                    cut_err_set(e, "host compiler failed (exit %d): %s", rc, text);
                } else {
                    cut_err_set(e, "host compiler failed (exit %d)", rc);
                }
            }
            free(text);
            rename(log_tmp, log);
            unlink(tmp);
            goto fail;
        }
        unlink(log_tmp);
        if (rename(tmp, so) != 0) {
            cut_err_set(e, "rename %s -> %s: %s", tmp, so, strerror(errno));
            unlink(tmp);
            goto fail;
        }
    }
    if (load_so(so, entry, k, e) < 0)
        goto fail;
    *out = k;
    return 0;
fail:
    cut_emu_kernel_free(k);
    return -1;
}

void cut_emu_kernel_free(cut_emu_kernel *k)
{
    if (!k)
        return;
    if (k->dl)
        dlclose(k->dl);
    free(k);
}

/* ---- barrier ------------------------------------------------------------------------------------------ */

/* A counting barrier whose participant count can shrink ("drop", when a thread leaves the kernel).
 * state = expected << 32 | arrived, updated by CAS so that exactly one thread completes each phase; waiters
 * sleep on gen with futex after a short spin (the spin is skipped when there are more threads than CPUs,
 * where spinning only steals the core from the thread everyone waits for). */
typedef struct emu_bar {
    _Atomic uint64_t state;
    _Atomic uint32_t gen;
    _Atomic uint32_t sleepers;
} emu_bar;

/* Sets the participant count; only while no thread is inside the barrier. */
static void bar_init(emu_bar *b, uint32_t n) { atomic_store(&b->state, (uint64_t)n << 32); }

#if defined(__x86_64__) || defined(__i386__)
#define EMU_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define EMU_PAUSE() __asm__ __volatile__("yield")
#else
#define EMU_PAUSE() ((void)0)
#endif

static void bar_release(emu_bar *b)
{
    atomic_fetch_add(&b->gen, 1);
    if (atomic_load(&b->sleepers) > 0)
        syscall(SYS_futex, &b->gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void bar_sleep(emu_bar *b, uint32_t g, int spin)
{
    for (int i = 0; i < spin; i++) {
        if (atomic_load_explicit(&b->gen, memory_order_acquire) != g)
            return;
        EMU_PAUSE();
    }
    atomic_fetch_add(&b->sleepers, 1);
    while (atomic_load(&b->gen) == g)
        syscall(SYS_futex, &b->gen, FUTEX_WAIT_PRIVATE, g, NULL, NULL, 0);
    atomic_fetch_sub(&b->sleepers, 1);
}

/* Arrives and waits for the phase to complete. The completing thread runs on_complete(arg) first. */
static void bar_wait(emu_bar *b, int spin, void (*on_complete)(void *), void *arg)
{
    uint32_t g = atomic_load(&b->gen);
    uint64_t s = atomic_load(&b->state), ns;
    int last;
    do {
        uint64_t exp = s >> 32, arr = (s & 0xffffffffu) + 1;
        last = arr >= exp;
        ns = last ? exp << 32 : (exp << 32 | arr);
    } while (!atomic_compare_exchange_weak(&b->state, &s, ns));
    if (last) {
        if (on_complete)
            on_complete(arg);
        bar_release(b);
        return;
    }
    bar_sleep(b, g, spin);
}

/* Leaves the barrier for the rest of this block; completes the phase if everyone else already waits. */
static void bar_drop(emu_bar *b)
{
    uint64_t s = atomic_load(&b->state), ns;
    int release;
    do {
        uint64_t exp = (s >> 32) - 1, arr = s & 0xffffffffu;
        release = arr > 0 && arr >= exp;
        ns = release ? exp << 32 : (exp << 32 | arr);
    } while (!atomic_compare_exchange_weak(&b->state, &s, ns));
    if (release)
        bar_release(b);
}

/* ---- launch ------------------------------------------------------------------------------------------- */

typedef struct emu_launch {
    cut_emu_kernel *k;
    unsigned grid[3], block[3];
    void *args[EMU_MAX_ARGS];
    int nargs;
    unsigned nthreads, nworkers, nwarps;
    int serial; /* workers run several CUDA threads each, one after another */
    int spin;
    emu_bar block_bar, end_bar;
    emu_bar *warp_bar;             /* [nwarps] */
    unsigned long long (*slots)[32]; /* [nwarps][32] warp exchange */
    atomic_int misuse;             /* a barrier was called in serial mode */
    /* start gate */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go, abort;
} emu_launch;

typedef struct emu_thread {
    emu_launch *L;
    unsigned idx; /* worker index */
    unsigned tid; /* linear CUDA thread id (barrier mode) */
} emu_thread;

static _Thread_local emu_thread *emu_cur;

static void hooks_syncthreads(void)
{
    emu_thread *t = emu_cur;
    if (t->L->serial) {
        atomic_store(&t->L->misuse, 1);
        return;
    }
    bar_wait(&t->L->block_bar, t->L->spin, NULL, NULL);
}

static void hooks_syncwarp(void)
{
    emu_thread *t = emu_cur;
    if (t->L->serial) {
        atomic_store(&t->L->misuse, 1);
        return;
    }
    bar_wait(&t->L->warp_bar[t->tid / 32], t->L->spin, NULL, NULL);
}

static void hooks_warp_exchange(unsigned long long v, unsigned long long *all)
{
    emu_thread *t = emu_cur;
    if (t->L->serial) {
        atomic_store(&t->L->misuse, 1);
        for (int i = 0; i < 32; i++)
            all[i] = v;
        return;
    }
    unsigned w = t->tid / 32;
    t->L->slots[w][t->tid % 32] = v;
    bar_wait(&t->L->warp_bar[w], t->L->spin, NULL, NULL);
    memcpy(all, t->L->slots[w], sizeof t->L->slots[w]);
    bar_wait(&t->L->warp_bar[w], t->L->spin, NULL, NULL);
}

static void call_entry(const emu_launch *L)
{
    void *const *a = L->args;
    typedef void *P;
    switch (L->nargs) {
#define EMU_CALL(...) ((void (*)(__VA_ARGS__))L->k->entry)
    case 0: ((void (*)(void))L->k->entry)(); break;
    case 1: EMU_CALL(P)(a[0]); break;
    case 2: EMU_CALL(P, P)(a[0], a[1]); break;
    case 3: EMU_CALL(P, P, P)(a[0], a[1], a[2]); break;
    case 4: EMU_CALL(P, P, P, P)(a[0], a[1], a[2], a[3]); break;
    case 5: EMU_CALL(P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4]); break;
    case 6: EMU_CALL(P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5]); break;
    case 7: EMU_CALL(P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6]); break;
    case 8: EMU_CALL(P, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]); break;
    case 9: EMU_CALL(P, P, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]); break;
    case 10:
        EMU_CALL(P, P, P, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]);
        break;
    case 11:
        EMU_CALL(P, P, P, P, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9],
                                                   a[10]);
        break;
    default:
        EMU_CALL(P, P, P, P, P, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9],
                                                      a[10], a[11]);
        break;
#undef EMU_CALL
    }
}

static void set_tid(const emu_launch *L, unsigned lin)
{
    unsigned t[3] = {lin % L->block[0], (lin / L->block[0]) % L->block[1], lin / (L->block[0] * L->block[1])};
    L->k->set_thread(t);
}

/* Runs by the last thread to finish a block: re-arms the block's barriers for the next one. */
static void end_of_block(void *arg)
{
    emu_launch *L = arg;
    bar_init(&L->block_bar, L->nthreads);
    for (unsigned w = 0; w < L->nwarps; w++) {
        unsigned n = CUT_MIN(32u, L->nthreads - 32u * w);
        bar_init(&L->warp_bar[w], n);
    }
}

static void *emu_worker(void *arg)
{
    emu_thread *t = arg;
    emu_launch *L = t->L;
    pthread_mutex_lock(&L->mu);
    while (!L->go && !L->abort)
        pthread_cond_wait(&L->cv, &L->mu);
    int ab = L->abort;
    pthread_mutex_unlock(&L->mu);
    if (ab)
        return NULL;
    emu_cur = t;
    L->k->set_dims(L->grid, L->block);
    if (!L->serial)
        set_tid(L, t->tid);
    for (unsigned bz = 0; bz < L->grid[2]; bz++)
        for (unsigned by = 0; by < L->grid[1]; by++)
            for (unsigned bx = 0; bx < L->grid[0]; bx++) {
                unsigned b[3] = {bx, by, bz};
                L->k->set_block(b);
                if (L->serial) {
                    for (unsigned lin = t->idx; lin < L->nthreads; lin += L->nworkers) {
                        set_tid(L, lin);
                        call_entry(L);
                    }
                } else {
                    call_entry(L);
                    bar_drop(&L->warp_bar[t->tid / 32]);
                    bar_drop(&L->block_bar);
                }
                if (L->nworkers > 1)
                    bar_wait(&L->end_bar, L->spin, end_of_block, L);
                else
                    end_of_block(L);
            }
    emu_cur = NULL;
    return NULL;
}

static pthread_mutex_t emu_launch_mu = PTHREAD_MUTEX_INITIALIZER;

static long online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n;
}

int cut_emu_launch(cut_emu_kernel *k, const unsigned grid[3], const unsigned block[3], void **args, int nargs,
                   cut_err *e)
{
    for (int i = 0; i < 3; i++)
        if (grid[i] == 0 || block[i] == 0)
            return cut_err_set(e, "launch with an empty grid or block (%ux%ux%u, %ux%ux%u)", grid[0], grid[1],
                               grid[2], block[0], block[1], block[2]);
    unsigned long long nthreads = (unsigned long long)block[0] * block[1] * block[2];
    if (nthreads > EMU_MAX_THREADS)
        return cut_err_set(e, "block of %llu threads exceeds %d", nthreads, EMU_MAX_THREADS);
    if (grid[1] > 65535 || grid[2] > 65535)
        return cut_err_set(e, "grid %ux%ux%u exceeds CUDA's limits", grid[0], grid[1], grid[2]);
    if (nargs < 0 || nargs > EMU_MAX_ARGS)
        return cut_err_set(e, "%d kernel arguments (emulation supports 0..%d pointers)", nargs, EMU_MAX_ARGS);

    emu_launch *L = cut_xcalloc(1, sizeof *L);
    L->k = k;
    memcpy(L->grid, grid, sizeof L->grid);
    memcpy(L->block, block, sizeof L->block);
    for (int i = 0; i < nargs; i++)
        L->args[i] = args[i];
    L->nargs = nargs;
    L->nthreads = (unsigned)nthreads;
    L->nwarps = CUT_CEIL_DIV(L->nthreads, 32u);
    long ncpu = online_cpus();
    L->serial = !k->has_sync;
    L->nworkers = L->serial ? (unsigned)CUT_MIN((long)L->nthreads, ncpu) : L->nthreads;
    L->spin = (long)L->nworkers <= ncpu ? 4000 : 0;
    L->warp_bar = cut_xcalloc(L->nwarps, sizeof *L->warp_bar);
    L->slots = cut_xcalloc(L->nwarps, sizeof *L->slots);
    end_of_block(L);
    bar_init(&L->end_bar, L->nworkers);
    pthread_mutex_init(&L->mu, NULL);
    pthread_cond_init(&L->cv, NULL);
    emu_thread *ts = cut_xcalloc(L->nworkers, sizeof *ts);
    pthread_t *tids = cut_xcalloc(L->nworkers, sizeof *tids);
    for (unsigned i = 0; i < L->nworkers; i++)
        ts[i] = (emu_thread){.L = L, .idx = i, .tid = i};

    int rc = 0;
    pthread_mutex_lock(&emu_launch_mu);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, EMU_STACK_BYTES);
    unsigned started = 0;
    for (unsigned i = 1; i < L->nworkers; i++) {
        int err = pthread_create(&tids[i], &attr, emu_worker, &ts[i]);
        if (err != 0) {
            rc = cut_err_set(e, "emulation: cannot start thread %u of %u: %s", i, L->nworkers, strerror(err));
            break;
        }
        started++;
    }
    pthread_attr_destroy(&attr);
    pthread_mutex_lock(&L->mu);
    if (rc == 0)
        L->go = 1;
    else
        L->abort = 1;
    pthread_cond_broadcast(&L->cv);
    pthread_mutex_unlock(&L->mu);
    if (rc == 0)
        emu_worker(&ts[0]); /* the calling thread is worker 0 */
    for (unsigned i = 1; i <= started; i++)
        pthread_join(tids[i], NULL);
    pthread_mutex_unlock(&emu_launch_mu);
    if (rc == 0 && atomic_load(&L->misuse))
        rc = cut_err_set(e, "kernel called a barrier or warp function the source scan did not see");

    pthread_cond_destroy(&L->cv);
    pthread_mutex_destroy(&L->mu);
    free(tids);
    free(ts);
    free(L->slots);
    free(L->warp_bar);
    free(L);
    return rc;
}
