/* cutune — host emulation of CUDA, running: a kernel that emu_compile.c built, launched on the CPU (fiber
 * contexts, the pool of worker threads, the runtime hooks that the prelude calls).
 *
 * Launch: see "launch" below. Each block runs wholly on one worker pthread, its CUDA threads as fibers that
 * meet at __syncthreads(); __shared__ is `static thread_local` in the .so (see the prelude), i.e. per worker and
 * so per block, and blocks run in parallel on min(CPUs, blocks) workers. */
#include "cutune/emu.h"
#include "cutune/util.h"
#include "measure/emu_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define EMU_MAX_ARGS 12
#define EMU_MAX_THREADS 1024
#define EMU_STACK_BYTES (256u * 1024u)

static void hooks_syncthreads(void);
static void hooks_syncwarp(void);
static void hooks_warp_exchange(unsigned long long v, unsigned long long *all);
static void hooks_global_access(const void *p, unsigned long bytes, const char *what);
static int hooks_yield(unsigned long long spins);
static void hooks_fail(const char *what);
const emu_hooks cut_emu_hooks_table = {3, hooks_syncthreads, hooks_syncwarp, hooks_warp_exchange,
                                       hooks_global_access, hooks_yield, hooks_fail};

/* ---- fiber contexts ----------------------------------------------------------------------------------- */

/* On x86-64 a fiber switch is a dozen instructions (callee-saved registers, MXCSR and the x87 control word);
 * glibc's swapcontext would add a sigprocmask system call to every switch. Elsewhere, and under
 * AddressSanitizer (which intercepts swapcontext but cannot see a hand-written switch), ucontext is used. */
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(CUT_EMU_USE_UCONTEXT)
#define EMU_ASM_SWITCH 1
typedef struct emu_ctx {
    void *sp;
} emu_ctx;

/* cut_emu_switch(save, to): saves the current stack pointer in *save and resumes the context whose saved
 * stack pointer is to. */
void cut_emu_switch(void **save, void *to);
__asm__(".pushsection .text\n"
        ".p2align 4\n"
        ".globl cut_emu_switch\n"
        ".hidden cut_emu_switch\n"
        ".type cut_emu_switch,@function\n"
        "cut_emu_switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  subq $8, %rsp\n"
        "  stmxcsr (%rsp)\n"
        "  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n"
        "  fldcw 4(%rsp)\n"
        "  addq $8, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size cut_emu_switch, .-cut_emu_switch\n"
        ".popsection\n");

static void ctx_switch(emu_ctx *from, emu_ctx *to) { cut_emu_switch(&from->sp, to->sp); }

/* Prepares c to start fn (which must never return) on [stack, stack + size). */
static void ctx_make(emu_ctx *c, char *stack, size_t size, void (*fn)(void))
{
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)top;
    uint32_t mxcsr;
    uint16_t fpucw;
    __asm__ __volatile__("stmxcsr %0\n\tfnstcw %1" : "=m"(mxcsr), "=m"(fpucw));
    *--sp = 0;                      /* fn's return address: it never returns */
    *--sp = (uint64_t)(uintptr_t)fn; /* popped by ret */
    for (int i = 0; i < 6; i++)
        *--sp = 0;                  /* rbp rbx r12 r13 r14 r15 */
    *--sp = (uint64_t)mxcsr | ((uint64_t)fpucw << 32);
    c->sp = sp;
}
#else
typedef struct emu_ctx {
    ucontext_t uc;
} emu_ctx;

static void ctx_switch(emu_ctx *from, emu_ctx *to) { swapcontext(&from->uc, &to->uc); }

static void ctx_make(emu_ctx *c, char *stack, size_t size, void (*fn)(void))
{
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = NULL;
    makecontext(&c->uc, fn, 0);
}
#endif

/* Fiber stacks are kept for the life of the process and reused by every launch (launches are serialised):
 * mapping, guarding and first-touching 256 stacks on every launch would cost more than many small kernels.
 * Only touched pages are committed (a few KiB per fiber). Protected by emu_launch_mu. */
static char *emu_stacks;
static unsigned emu_stacks_n;
static size_t emu_stack_stride;

static int stacks_reserve(unsigned n, cut_err *e)
{
    if (n <= emu_stacks_n)
        return 0;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t stride = page + EMU_STACK_BYTES; /* a guard page below each stack */
    void *m = mmap(NULL, stride * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return cut_err_set(e, "emulation: cannot map %zu bytes of fiber stacks: %s", stride * n, strerror(errno));
    for (unsigned t = 0; t < n; t++)
        mprotect((char *)m + (size_t)t * stride, page, PROT_NONE);
    if (emu_stacks)
        munmap(emu_stacks, emu_stack_stride * emu_stacks_n);
    emu_stacks = m;
    emu_stacks_n = n;
    emu_stack_stride = stride;
    return 0;
}

static char *stack_of(unsigned t)
{
    return emu_stacks + (size_t)t * emu_stack_stride + (emu_stack_stride - EMU_STACK_BYTES);
}

/* ---- launch ------------------------------------------------------------------------------------------- */

/* A launch runs W = min(CPUs or $CUTUNE_EMU_THREADS, blocks) workers (the caller and pooled pthreads) that take
 * whole blocks from a shared counter. A worker runs all CUDA threads of its current block as fibers (own 256 KiB
 * stack each, see ctx_switch) on its one OS thread, so the block's threads share that OS thread's thread_local storage: the prelude makes __shared__
 * `static thread_local`, which is per block, and blocks on different workers run in parallel.
 * __syncthreads() parks the calling fiber and switches to the worker's scheduler, which runs the other fibers
 * in thread order; when every live fiber is parked at the barrier it releases them all. A fiber that returns
 * from the kernel no longer counts, as an exited GPU thread. Warp barriers work the same way per warp.
 * threadIdx is a thread_local of the .so, so the scheduler sets it before resuming each fiber.
 * A thread that waits on a condition other threads make true (an emulated mbarrier: cut_emu_yield in the prelude)
 * parks until the scheduler's next pass over the block, then checks again. A pass in which no thread did anything
 * but check its wait again (the yield says so: its count of failed checks is not 0) cannot be followed by one that
 * does: the block is deadlocked, as it would be on a GPU, and the launch fails with that sentence; the waits are
 * then given up (the yield returns 1) so that every thread runs to its end instead of hanging.
 * Kernels without any barrier skip fibers ("serial mode"): the worker calls the kernel once per CUDA thread,
 * one after another, which is valid because without a barrier no thread can wait for another. */

enum { F_RUN, F_BLOCK, F_WARP, F_YIELD, F_DONE };

typedef struct emu_worker emu_worker;

typedef struct emu_fiber {
    emu_ctx ctx;
    unsigned tid;   /* linear CUDA thread id */
    unsigned t3[3]; /* threadIdx */
    int state;
    emu_worker *w;
} emu_fiber;

typedef struct emu_warp {
    unsigned live, arrived;
} emu_warp;

typedef struct emu_launch {
    cut_emu_kernel *k;
    unsigned grid[3], block[3];
    void *args[EMU_MAX_ARGS];
    int nargs;
    unsigned nthreads, nwarps, nworkers;
    unsigned long long nblocks;
    _Atomic unsigned long long next_block;
    int serial;        /* no barrier in the source: no fibers */
    atomic_int misuse; /* 1: barrier in serial mode; 2: a warp barrier that could never complete; 3: a global
                        * load or store (misuse_what) of an address outside the global buffers; 4: the kernel's
                        * emulated PTX failed the launch (misuse_what: its sentence); 5: threads waited forever */
    char misuse_what[160];
    struct emu_worker *ws; /* [nworkers]; ws[0] is the launching thread */
    unsigned joined, active; /* pool threads that took a worker slot / are still inside (under pool.mu) */
} emu_launch;

struct emu_worker {
    emu_launch *L;
    unsigned idx;
    emu_fiber *fibers;               /* [nthreads] (barrier mode) */
    emu_warp *warps;                 /* [nwarps] */
    unsigned long long (*slots)[32]; /* [nwarps][32] warp exchange */
    emu_ctx sched;
    emu_fiber *cur;
    unsigned live, at_block;
    int progress; /* this pass over the block: a thread did more than check its wait again */
};

static _Thread_local emu_worker *emu_cur;

static void park(emu_fiber *f, int state)
{
    f->state = state;
    ctx_switch(&f->ctx, &f->w->sched);
}

static void warp_release(emu_worker *w, unsigned warp)
{
    w->warps[warp].arrived = 0;
    unsigned end = CUT_MIN(w->L->nthreads, 32u * (warp + 1));
    for (unsigned t = 32u * warp; t < end; t++)
        if (w->fibers[t].state == F_WARP)
            w->fibers[t].state = F_RUN;
}

/* Records the launch's first failure (code, and its words when what is not NULL); later ones are dropped. */
static void set_misuse(emu_launch *L, int code, const char *what)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&L->misuse, &expected, code) && what)
        snprintf(L->misuse_what, sizeof L->misuse_what, "%s", what);
}

/* A cache-hinted load or store (the prelude's __ldcg & co.): outside every global buffer of the launch and the
 * module's own __device__ data it is the GPU's fault on a local or shared address; the first one is recorded and
 * fails the launch. */
static void hooks_global_access(const void *p, unsigned long bytes, const char *what)
{
    emu_worker *w = emu_cur;
    const cut_emu_kernel *k = w ? w->L->k : NULL;
    if (!k || k->nglobal == 0)
        return;
    const unsigned char *a = p;
    if (a >= k->data_lo && a < k->data_hi && bytes <= (size_t)(k->data_hi - a))
        return; /* the module's own __device__ data */
    for (int i = 0; i < k->nglobal; i++)
        if (a >= k->global_base[i] && bytes <= k->global_bytes[i] &&
            (size_t)(a - k->global_base[i]) <= k->global_bytes[i] - bytes)
            return;
    set_misuse(w->L, 3, what);
}

/* A waiting thread parks until the next pass (see "launch"); 1: give the wait up, the launch has failed. */
static int hooks_yield(unsigned long long spins)
{
    emu_worker *w = emu_cur;
    if (w->L->serial) { /* no fibers: nobody else can run before this thread returns */
        set_misuse(w->L, 1, NULL);
        return 1;
    }
    if (atomic_load(&w->L->misuse) != 0)
        return 1;
    if (spins == 0)
        w->progress = 1;
    park(w->cur, F_YIELD);
    return atomic_load(&w->L->misuse) != 0;
}

static void hooks_fail(const char *what)
{
    set_misuse(emu_cur->L, 4, what);
}

static void hooks_syncthreads(void)
{
    emu_worker *w = emu_cur;
    if (w->L->serial) {
        atomic_store(&w->L->misuse, 1);
        return;
    }
    w->at_block++;
    w->progress = 1;
    park(w->cur, F_BLOCK);
}

static void hooks_syncwarp(void)
{
    emu_worker *w = emu_cur;
    if (w->L->serial) {
        atomic_store(&w->L->misuse, 1);
        return;
    }
    emu_fiber *f = w->cur;
    emu_warp *wp = &w->warps[f->tid / 32];
    w->progress = 1;
    if (++wp->arrived >= wp->live)
        warp_release(w, f->tid / 32); /* the last lane goes on without a switch */
    else
        park(f, F_WARP);
}

static void hooks_warp_exchange(unsigned long long v, unsigned long long *all)
{
    emu_worker *w = emu_cur;
    if (w->L->serial) {
        atomic_store(&w->L->misuse, 1);
        for (int i = 0; i < 32; i++)
            all[i] = v;
        return;
    }
    unsigned tid = w->cur->tid;
    w->slots[tid / 32][tid % 32] = v;
    hooks_syncwarp();
    memcpy(all, w->slots[tid / 32], sizeof w->slots[0]);
    hooks_syncwarp();
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

static void thread3(const emu_launch *L, unsigned lin, unsigned t[3])
{
    t[0] = lin % L->block[0];
    t[1] = (lin / L->block[0]) % L->block[1];
    t[2] = lin / (L->block[0] * L->block[1]);
}

/* Body of every fiber: run the kernel for this CUDA thread, leave the warp, return to the scheduler. */
static void fiber_main(void)
{
    emu_worker *w = emu_cur;
    emu_fiber *f = w->cur;
    call_entry(w->L);
    w->live--;
    w->progress = 1;
    emu_warp *wp = &w->warps[f->tid / 32];
    wp->live--;
    if (wp->arrived > 0 && wp->arrived >= wp->live)
        warp_release(w, f->tid / 32);
    park(f, F_DONE); /* never resumed: the next block makes a fresh context */
}

/* Runs one block on this worker's fibers (barrier mode). */
static void run_block_fibers(emu_worker *w)
{
    emu_launch *L = w->L;
    const unsigned n = L->nthreads;
    for (unsigned t = 0; t < n; t++) {
        emu_fiber *f = &w->fibers[t];
        f->state = F_RUN;
        ctx_make(&f->ctx, stack_of(w->idx * n + t), EMU_STACK_BYTES, fiber_main);
    }
    for (unsigned wi = 0; wi < L->nwarps; wi++) {
        w->warps[wi].live = CUT_MIN(32u, n - 32u * wi);
        w->warps[wi].arrived = 0;
    }
    w->live = n;
    w->at_block = 0;
    for (;;) {
        w->progress = 0;
        for (unsigned t = 0; t < n; t++) {
            emu_fiber *f = &w->fibers[t];
            if (f->state == F_YIELD)
                f->state = F_RUN; /* a waiting thread checks again once per pass */
            else if (f->state != F_RUN)
                continue;
            w->cur = f;
            L->k->set_thread(f->t3);
            ctx_switch(&w->sched, &f->ctx);
        }
        if (w->live == 0)
            break;
        int runnable = 0, waiting = 0;
        for (unsigned t = 0; t < n; t++) {
            runnable |= w->fibers[t].state == F_RUN;
            waiting |= w->fibers[t].state == F_YIELD;
        }
        if (runnable)
            continue; /* a warp barrier released lanes earlier in the order */
        if (waiting) {
            /* Waiting threads check again in the next pass, unless this one changed nothing: then nothing ever
             * will (the others are parked at barriers the waiting ones never reach, or wait themselves). */
            if (!w->progress)
                set_misuse(L, 5, NULL);
            continue;
        }
        if (w->at_block == w->live) {
            for (unsigned t = 0; t < n; t++) /* every live thread is at __syncthreads */
                if (w->fibers[t].state == F_BLOCK)
                    w->fibers[t].state = F_RUN;
            w->at_block = 0;
            continue;
        }
        /* Lanes wait at a warp barrier that cannot complete (their partners wait at __syncthreads): a deadlock
         * on a GPU too. Record it and let them go rather than hang. */
        atomic_store(&L->misuse, 2);
        for (unsigned wi = 0; wi < L->nwarps; wi++)
            warp_release(w, wi);
    }
}

static void worker_run(emu_worker *w)
{
    emu_launch *L = w->L;
    emu_cur = w;
    L->k->set_dims(L->grid, L->block);
    const unsigned long long gxy = (unsigned long long)L->grid[0] * L->grid[1];
    for (;;) {
        unsigned long long b = atomic_fetch_add(&L->next_block, 1);
        if (b >= L->nblocks)
            break;
        unsigned b3[3] = {(unsigned)(b % L->grid[0]), (unsigned)(b / L->grid[0] % L->grid[1]), (unsigned)(b / gxy)};
        L->k->set_block(b3);
        if (L->serial) {
            for (unsigned lin = 0; lin < L->nthreads; lin++) {
                unsigned t3[3];
                thread3(L, lin, t3);
                L->k->set_thread(t3);
                call_entry(L);
            }
        } else {
            run_block_fibers(w);
        }
    }
    emu_cur = NULL;
}

/* Worker threads live for the whole process and sleep between launches (starting threads per launch, and
 * waiting for a just-started thread to be scheduled on a busy machine, cost more than small kernels). The
 * launching thread is worker 0 and takes blocks too; a pool thread that wakes after the launch has closed
 * simply goes back to sleep, so a slow wake-up never delays a launch. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    unsigned nthreads;
    emu_launch *job; /* the open launch, or NULL */
    unsigned long long job_id;
} emu_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL, 0};

/* Body of a pool thread (detached, lives until the process exits). */
static void *pool_main(void *arg)
{
    (void)arg;
    unsigned long long seen = 0;
    pthread_mutex_lock(&emu_pool.mu);
    for (;;) {
        while (!emu_pool.job || emu_pool.job_id == seen)
            pthread_cond_wait(&emu_pool.wake, &emu_pool.mu);
        emu_launch *L = emu_pool.job;
        seen = emu_pool.job_id;
        if (L->joined + 1 >= L->nworkers)
            continue; /* enough workers already */
        emu_worker *w = &L->ws[++L->joined];
        L->active++;
        pthread_mutex_unlock(&emu_pool.mu);
        worker_run(w);
        pthread_mutex_lock(&emu_pool.mu);
        if (--L->active == 0)
            pthread_cond_broadcast(&emu_pool.done);
    }
    return NULL;
}

/* Grows the pool to n threads (best effort: fewer threads is still correct). Under emu_launch_mu. */
static void pool_grow(unsigned n)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 4 * EMU_STACK_BYTES); /* serial mode runs kernels on this stack */
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    while (emu_pool.nthreads < n) {
        pthread_t t;
        if (pthread_create(&t, &attr, pool_main, NULL) != 0)
            break;
        pthread_mutex_lock(&emu_pool.mu);
        emu_pool.nthreads++;
        pthread_mutex_unlock(&emu_pool.mu);
    }
    pthread_attr_destroy(&attr);
}

/* One launch at a time per process: the fiber stack pool is shared, and each launch uses every CPU anyway. */
static pthread_mutex_t emu_launch_mu = PTHREAD_MUTEX_INITIALIZER;

/* Workers per launch: $CUTUNE_EMU_THREADS, else the online CPUs. Under AddressSanitizer the default is 1: its
 * leak checker crashes scanning the dynamic TLS that pooled threads hold for dlclose'd kernels (GCC 12). */
static long emu_max_workers(void)
{
    const char *env = getenv("CUTUNE_EMU_THREADS");
    if (env && *env) {
        long v = strtol(env, NULL, 10);
        if (v >= 1)
            return CUT_MIN(v, 256L);
    }
#if defined(__SANITIZE_ADDRESS__)
    return 1;
#else
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : CUT_MIN(n, 256L);
#endif
}

static int launch(cut_emu_kernel *k, const unsigned grid[3], const unsigned block[3], void **args, int nargs,
                  cut_err *e)
{
    for (int i = 0; i < 3; i++)
        if (grid[i] == 0 || block[i] == 0)
            return cut_err_set(e, "launch with an empty grid or block (%ux%ux%u, %ux%ux%u)", grid[0], grid[1],
                               grid[2], block[0], block[1], block[2]);
    unsigned long long nthreads = (unsigned long long)block[0] * block[1] * block[2];
    if (nthreads > EMU_MAX_THREADS || block[2] > 64)
        return cut_err_set(e, "block %ux%ux%u (%llu threads) exceeds CUDA's limits (1024 threads, z <= 64)",
                           block[0], block[1], block[2], nthreads);
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
    L->nblocks = (unsigned long long)grid[0] * grid[1] * grid[2];
    L->serial = !k->has_sync;
    long maxw = emu_max_workers();
    L->nworkers = (unsigned)CUT_MIN((unsigned long long)maxw, L->nblocks);
    emu_worker *ws = cut_xcalloc(L->nworkers, sizeof *ws);
    L->ws = ws;
    for (unsigned i = 0; i < L->nworkers; i++) {
        ws[i].L = L;
        ws[i].idx = i;
        if (!L->serial) {
            ws[i].fibers = cut_xcalloc(L->nthreads, sizeof *ws[i].fibers);
            ws[i].warps = cut_xcalloc(L->nwarps, sizeof *ws[i].warps);
            ws[i].slots = cut_xcalloc(L->nwarps, sizeof *ws[i].slots);
            for (unsigned t = 0; t < L->nthreads; t++) {
                ws[i].fibers[t].tid = t;
                ws[i].fibers[t].w = &ws[i];
                thread3(L, t, ws[i].fibers[t].t3);
            }
        }
    }

    pthread_mutex_lock(&emu_launch_mu);
    int rc = L->serial ? 0 : stacks_reserve(L->nworkers * L->nthreads, e);
    if (rc == 0) {
        if (L->nworkers > 1) {
            pool_grow((unsigned)maxw - 1);
            pthread_mutex_lock(&emu_pool.mu);
            emu_pool.job = L;
            emu_pool.job_id++;
            pthread_cond_broadcast(&emu_pool.wake);
            pthread_mutex_unlock(&emu_pool.mu);
        }
        worker_run(&ws[0]);
        if (L->nworkers > 1) {
            /* All blocks are taken; close the launch and wait for the workers still running one. */
            pthread_mutex_lock(&emu_pool.mu);
            emu_pool.job = NULL;
            while (L->active > 0)
                pthread_cond_wait(&emu_pool.done, &emu_pool.mu);
            pthread_mutex_unlock(&emu_pool.mu);
        }
    }
    pthread_mutex_unlock(&emu_launch_mu);
    int misuse = atomic_load(&L->misuse);
    if (rc == 0 && misuse == 1)
        rc = cut_err_set(e, "kernel called a barrier or warp function the source scan did not see");
    else if (rc == 0 && misuse == 2)
        rc = cut_err_set(e, "kernel deadlocked: lanes waited at a warp barrier while others waited at "
                            "__syncthreads or exited");
    else if (rc == 0 && misuse == 3)
        rc = cut_err_set(e, "%s of an address outside the launch's buffers: past a buffer's end, or local or "
                            "shared memory (on a GPU that faults with CUDA_ERROR_INVALID_ADDRESS_SPACE)",
                         L->misuse_what);
    else if (rc == 0 && misuse == 4)
        rc = cut_err_set(e, "%s", L->misuse_what);
    else if (rc == 0 && misuse == 5)
        rc = cut_err_set(e, "kernel deadlocked: threads of a block waited (an mbarrier phase, ...) that no thread "
                            "could ever complete, the others having exited or waiting at a barrier the waiting "
                            "ones never reach");

    for (unsigned i = 0; i < L->nworkers; i++) {
        free(ws[i].fibers);
        free(ws[i].warps);
        free(ws[i].slots);
    }
    free(ws);
    free(L);
    return rc;
}

void cut_emu_set_globals(cut_emu_kernel *k, void *const *base, const size_t *bytes, int n)
{
    k->nglobal = 0;
    for (int i = 0; i < n && k->nglobal < EMU_MAX_GLOBALS; i++)
        if (base[i]) {
            k->global_base[k->nglobal] = base[i];
            k->global_bytes[k->nglobal++] = bytes[i];
        }
}

int cut_emu_launch(cut_emu_kernel *k, const unsigned grid[3], const unsigned block[3], void **args, int nargs,
                   cut_err *e)
{
    if (k->typed)
        return cut_err_set(e, "kernel from cut_emu_compile_call launched with pointer arguments: use "
                              "cut_emu_launch_argv");
    return launch(k, grid, block, args, nargs, e);
}

int cut_emu_launch_argv(cut_emu_kernel *k, const unsigned grid[3], const unsigned block[3], void **argv, cut_err *e)
{
    if (!k->typed)
        return cut_err_set(e, "kernel from cut_emu_compile launched with an argument vector: compile it with "
                              "cut_emu_compile_call");
    void *args[1] = {argv};
    return launch(k, grid, block, args, 1, e);
}
