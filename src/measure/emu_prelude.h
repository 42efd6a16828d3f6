/* cutune host-emulation prelude (C++17, compiled by the host compiler in front of generated CUDA C).
 *
 * Embedded into libcutune as the string cut_emu_prelude_text (cmake/embed.cmake) and written, followed by the
 * kernel source, into one translation unit by cut_emu_compile (src/measure/emu.c). It includes no system header
 * (compile time: every kernel pays for the prelude) and the shared object it becomes never links back into
 * cutune: the runtime passes a small table of callbacks through cut_emu_bind().
 *
 * Execution model (src/measure/emu.c): a launch runs min(CPUs, blocks) worker pthreads that take whole blocks.
 * A worker runs every CUDA thread of its block as a fiber on its one OS thread, so the block's threads share
 * that OS thread's thread_local storage: __shared__ is `static thread_local`, one copy per worker, which at any
 * moment belongs to exactly one block, and blocks on different workers run in parallel without seeing each
 * other's shared memory. (Plain static storage would force blocks to run one after another.) threadIdx,
 * blockIdx, blockDim and gridDim are thread_locals that the runtime sets before resuming each fiber.
 * __syncthreads() parks the fiber until every live thread of the block has arrived; a thread that returns from
 * the kernel no longer counts (like an exited GPU thread), so early-return kernels do not deadlock.
 *
 * Dynamic shared memory: cut_emu_compile rewrites `extern __shared__ T name[];` into a pointer to (or, outside a
 * function, a macro for) cut_emu_dsmem, a thread_local buffer and so per block like __shared__.
 * A thread that waits for others (emulated PTX: an mbarrier phase) yields to them with cut_emu_yield; emulated PTX
 * reports a broken rule with cut_emu_fail. Not emulated here: inline PTX (asm; a template emulates its own under
 * #ifdef CUT_EMU), textures, cooperative groups, thread block clusters, half precision. Warp functions (__shfl*_sync,
 * __ballot_sync, __any_sync, __all_sync, __syncwarp) are implemented with a per-warp barrier and assume that all
 * (non-exited) lanes of the warp take part; the mask argument is ignored. */
#ifndef CUT_EMU_PRELUDE_H
#define CUT_EMU_PRELUDE_H

#define CUT_EMU 1

/* ---- basic types (no system headers) ---- */
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __UINTPTR_TYPE__ uintptr_t;
typedef unsigned int uint;

extern "C" int printf(const char *, ...);

/* ---- qualifiers ---- */
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __grid_constant__ /* a kernel parameter passed by value (a TMA map): the host passes its copy */
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static thread_local /* per worker thread = per block: see the execution model above */
/* __restrict__ is a GNU C++ keyword already. #pragma unroll is ignored by the host compiler. */

/* Dynamic shared memory, CUT_EMU_DSMEM_BYTES in include/cutune/emu.h (the runtime refuses larger launches). */
static thread_local unsigned char cut_emu_dsmem[227 * 1024] __attribute__((aligned(128)));

/* cut_emu_invoke(f, argv) calls f(*(P0 *)argv[0], *(P1 *)argv[1], ...) with f's own parameter types: the
 * trampoline of cut_emu_compile_call, so scalars of any type reach the kernel in the registers it expects. */
template <unsigned long... I> struct cut_emu_seq {
};
template <unsigned long N, unsigned long... I> struct cut_emu_make_seq : cut_emu_make_seq<N - 1, N - 1, I...> {
};
template <unsigned long... I> struct cut_emu_make_seq<0, I...> {
    typedef cut_emu_seq<I...> type;
};
template <class... P, unsigned long... I>
static inline void cut_emu_invoke_seq(void (*f)(P...), void **argv, cut_emu_seq<I...>)
{
    f(*(P *)argv[I]...);
}
template <class... P> static inline void cut_emu_invoke(void (*f)(P...), void **argv)
{
    cut_emu_invoke_seq(f, argv, typename cut_emu_make_seq<sizeof...(P)>::type());
}
/* Describes f's parameters for the runtime's check of a call's arguments: sizes[i] gets parameter i's size, with
 * bit 31 set for a pointer. Returns the parameter count. */
template <class T> struct cut_emu_is_ptr {
    enum { v = 0 };
};
template <class T> struct cut_emu_is_ptr<T *> {
    enum { v = 1 };
};
template <class... P> static inline unsigned cut_emu_params(void (*f)(P...), unsigned *sizes, unsigned max)
{
    (void)f;
    const unsigned all[] = {0u, (unsigned)sizeof(P) | (cut_emu_is_ptr<P>::v ? 0x80000000u : 0u)...};
    for (unsigned i = 0; i < sizeof...(P) && i < max; i++)
        sizes[i] = all[i + 1];
    return sizeof...(P);
}

/* ---- vector types ---- */
#define CUT_EMU_VEC(T, N2, N3, N4, A2, A4)                                                                   \
    struct N2 {                                                                                              \
        T x, y;                                                                                              \
    } __attribute__((aligned(A2)));                                                                          \
    struct N3 {                                                                                              \
        T x, y, z;                                                                                           \
    };                                                                                                       \
    struct N4 {                                                                                              \
        T x, y, z, w;                                                                                        \
    } __attribute__((aligned(A4)));                                                                          \
    static inline N2 make_##N2(T x, T y) { N2 r = {x, y}; return r; }                                        \
    static inline N3 make_##N3(T x, T y, T z) { N3 r = {x, y, z}; return r; }                                \
    static inline N4 make_##N4(T x, T y, T z, T w) { N4 r = {x, y, z, w}; return r; }

CUT_EMU_VEC(float, float2, float3, float4, 8, 16)
CUT_EMU_VEC(int, int2, int3, int4, 8, 16)
CUT_EMU_VEC(unsigned int, uint2, uint3, uint4, 8, 16)
CUT_EMU_VEC(double, double2, double3, double4, 16, 16)
CUT_EMU_VEC(long long, longlong2, longlong3, longlong4, 16, 16)
CUT_EMU_VEC(short, short2, short3, short4, 4, 8)
CUT_EMU_VEC(unsigned short, ushort2, ushort3, ushort4, 4, 8)
CUT_EMU_VEC(signed char, char2, char3, char4, 2, 4)
CUT_EMU_VEC(unsigned char, uchar2, uchar3, uchar4, 2, 4)
#undef CUT_EMU_VEC
struct float1 { float x; };
struct int1 { int x; };
struct uint1 { unsigned int x; };
static inline float1 make_float1(float x) { float1 r = {x}; return r; }
static inline int1 make_int1(int x) { int1 r = {x}; return r; }
static inline uint1 make_uint1(unsigned int x) { uint1 r = {x}; return r; }

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

/* ---- built-in variables: per OS thread, set by the runtime before each block ---- */
static thread_local uint3 threadIdx;
static thread_local uint3 blockIdx;
static thread_local dim3 blockDim;
static thread_local dim3 gridDim;
static const int warpSize = 32;

/* ---- runtime hooks (filled by cutune; layout shared with src/measure/emu_runner.c) ---- */
struct cut_emu_hooks {
    unsigned int version; /* 3 */
    void (*syncthreads)(void);
    void (*syncwarp)(void);
    /* Warp exchange: every lane of the calling thread's warp passes v; all[0..31] receives the lanes' values
     * (0 for lanes that do not exist). */
    void (*warp_exchange)(unsigned long long v, unsigned long long *all);
    /* version 2: a cache-hinted load or store (what) of bytes at p, which must be global memory; the runtime
     * records a fault when the launch's global buffers are known and p is not inside one */
    void (*global_access)(const void *p, unsigned long bytes, const char *what);
    /* version 3: a thread that waits (an emulated mbarrier) lets the block's other threads run (cut_emu_yield);
     * the kernel's emulated PTX reports a broken rule as a failed launch (cut_emu_fail) */
    int (*yield)(unsigned long long spins);
    void (*fail)(const char *what);
};
static const cut_emu_hooks *cut_emu_h;

extern "C" __attribute__((visibility("default"))) void cut_emu_bind(const cut_emu_hooks *h) { cut_emu_h = h; }
extern "C" __attribute__((visibility("default"))) void cut_emu_set_dims(const unsigned int *grid,
                                                                         const unsigned int *block)
{
    gridDim = dim3(grid[0], grid[1], grid[2]);
    blockDim = dim3(block[0], block[1], block[2]);
}
extern "C" __attribute__((visibility("default"))) void cut_emu_set_thread(const unsigned int *tid)
{
    threadIdx = uint3{tid[0], tid[1], tid[2]};
}
/* Changes with every block this OS thread runs (the runtime sets blockIdx once per block): per-thread state that the
 * emulated PTX keeps in static storage (a thread's wgmma queue) tells a new block's threads from the last one's. */
static thread_local unsigned long long cut_emu_block_serial;
extern "C" __attribute__((visibility("default"))) void cut_emu_set_block(const unsigned int *bid)
{
    blockIdx = uint3{bid[0], bid[1], bid[2]};
    cut_emu_block_serial++;
}

static inline void __syncthreads() { cut_emu_h->syncthreads(); }
static inline void __syncwarp(unsigned int mask = 0xffffffffu) { (void)mask; cut_emu_h->syncwarp(); }
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __trap() { __builtin_trap(); }

/* A waiting thread's turn: the emulated PTX calls it each time the condition a thread waits for (an mbarrier's
 * phase) does not hold yet, with spins = how many checks of that one wait failed before (0 on the first: the
 * thread may have changed what others wait for since it last ran, which is how the runtime tells a block that
 * still moves from a deadlock). The thread parks while the block's other threads run, then checks again. Returns
 * nonzero when the wait must be given up because the launch has failed (a deadlock: every live thread of the block
 * waits and none moves; or a wait in a kernel run without fibers), so that the kernel ends instead of hanging. The
 * word cut_emu_yield in the source makes the runtime run the block's threads as fibers. */
static inline int cut_emu_yield(unsigned long long spins)
{
    return cut_emu_h->version >= 3 ? cut_emu_h->yield(spins) : 1;
}
/* Fails the launch with the sentence what (static storage): emulated PTX used against its rules (an mbarrier
 * arrival past its count, a tensor map that is not an emulated one, ...). The kernel goes on; the launch reports
 * the first such sentence. */
static inline void cut_emu_fail(const char *what)
{
    if (cut_emu_h->version >= 3)
        cut_emu_h->fail(what);
    else
        __builtin_trap();
}

/* ---- math (host libm through compiler builtins; float overloads like CUDA's device math) ---- */
#define CUT_EMU_M1(n)                                                                                        \
    extern "C" float n##f(float);                                                                            \
    extern "C" double n(double);                                                                             \
    static inline float n(float x) { return n##f(x); }
#define CUT_EMU_M2(n)                                                                                        \
    extern "C" float n##f(float, float);                                                                     \
    extern "C" double n(double, double);                                                                     \
    static inline float n(float x, float y) { return n##f(x, y); }
CUT_EMU_M1(sqrt) CUT_EMU_M1(cbrt) CUT_EMU_M1(exp) CUT_EMU_M1(exp2) CUT_EMU_M1(expm1) CUT_EMU_M1(log)
CUT_EMU_M1(log2) CUT_EMU_M1(log10) CUT_EMU_M1(log1p) CUT_EMU_M1(sin) CUT_EMU_M1(cos) CUT_EMU_M1(tan)
CUT_EMU_M1(asin) CUT_EMU_M1(acos) CUT_EMU_M1(atan) CUT_EMU_M1(sinh) CUT_EMU_M1(cosh) CUT_EMU_M1(tanh)
CUT_EMU_M1(erf) CUT_EMU_M1(erfc) CUT_EMU_M1(fabs) CUT_EMU_M1(floor) CUT_EMU_M1(ceil) CUT_EMU_M1(round)
CUT_EMU_M1(trunc) CUT_EMU_M1(rint)
CUT_EMU_M2(pow) CUT_EMU_M2(atan2) CUT_EMU_M2(fmod) CUT_EMU_M2(fmin) CUT_EMU_M2(fmax) CUT_EMU_M2(hypot)
CUT_EMU_M2(copysign)
#undef CUT_EMU_M1
#undef CUT_EMU_M2
extern "C" float fmaf(float, float, float);
extern "C" double fma(double, double, double);
static inline float fma(float a, float b, float c) { return fmaf(a, b, c); }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __frcp_rn(float a) { return 1.0f / a; }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }
static inline float __frsqrt_rn(float a) { return 1.0f / sqrtf(a); }
static inline float __expf(float a) { return expf(a); }
static inline float __exp10f(float a) { return exp2f(a * 3.321928094887362f); }
static inline float __logf(float a) { return logf(a); }
static inline float __log2f(float a) { return log2f(a); }
static inline float __sinf(float a) { return sinf(a); }
static inline float __cosf(float a) { return cosf(a); }
static inline float __tanf(float a) { return tanf(a); }
static inline float __powf(float a, float b) { return powf(a, b); }
static inline float __saturatef(float a) { return a < 0.0f ? 0.0f : (a > 1.0f ? 1.0f : a); }
static inline int abs(int a) { return a < 0 ? -a : a; }
static inline long long llabs(long long a) { return a < 0 ? -a : a; }
static inline int __float2int_rz(float a) { return (int)a; }
static inline int __float2int_rn(float a) { return (int)rintf(a); }
static inline float __int2float_rn(int a) { return (float)a; }
static inline int __float_as_int(float a) { int r; __builtin_memcpy(&r, &a, 4); return r; }
static inline unsigned int __float_as_uint(float a) { unsigned int r; __builtin_memcpy(&r, &a, 4); return r; }
static inline float __int_as_float(int a) { float r; __builtin_memcpy(&r, &a, 4); return r; }
static inline float __uint_as_float(unsigned int a) { float r; __builtin_memcpy(&r, &a, 4); return r; }
static inline long long __double_as_longlong(double a) { long long r; __builtin_memcpy(&r, &a, 8); return r; }
static inline double __longlong_as_double(long long a) { double r; __builtin_memcpy(&r, &a, 8); return r; }
static inline int __popc(unsigned int a) { return __builtin_popcount(a); }
static inline int __popcll(unsigned long long a) { return __builtin_popcountll(a); }
static inline int __clz(int a) { return a ? __builtin_clz((unsigned int)a) : 32; }
static inline int __ffs(int a) { return __builtin_ffs(a); }
static inline int __mul24(int a, int b) { return a * b; }
static inline unsigned int __umul24(unsigned int a, unsigned int b) { return a * b; }
static inline unsigned int __brev(unsigned int a)
{
    unsigned int r = 0;
    for (int i = 0; i < 32; i++)
        r |= ((a >> i) & 1u) << (31 - i);
    return r;
}

/* CUDA's min/max: overloads for every arithmetic pair; float ones are fminf/fmaxf. */
template <class A, class B> static inline auto min(A a, B b) -> decltype(a + b)
{
    typedef decltype(a + b) T;
    return (T)a < (T)b ? (T)a : (T)b;
}
template <class A, class B> static inline auto max(A a, B b) -> decltype(a + b)
{
    typedef decltype(a + b) T;
    return (T)a < (T)b ? (T)b : (T)a;
}
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }

/* ---- cache-hinted loads and stores ---- */
/* These compile to ld.global / st.global: on a local or shared address the GPU faults. The runtime checks. */
static inline void cut_emu_gmem(const void *p, unsigned long n, const char *what)
{
    if (cut_emu_h && cut_emu_h->version >= 2)
        cut_emu_h->global_access(p, n, what);
}
#define CUT_EMU_LD(name) \
    template <class T> static inline T name(const T *p) { cut_emu_gmem(p, sizeof(T), #name); return *p; }
#define CUT_EMU_ST(name) \
    template <class T> static inline void name(T *p, T v) { cut_emu_gmem(p, sizeof(T), #name); *p = v; }
CUT_EMU_LD(__ldg)
CUT_EMU_LD(__ldca)
CUT_EMU_LD(__ldcg)
CUT_EMU_LD(__ldcs)
CUT_EMU_LD(__ldlu)
CUT_EMU_LD(__ldcv)
CUT_EMU_ST(__stwb)
CUT_EMU_ST(__stcg)
CUT_EMU_ST(__stcs)
CUT_EMU_ST(__stwt)

/* ---- atomics (blocks run in parallel on several OS threads) ---- */
static inline int atomicAdd(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned int atomicAdd(unsigned int *p, unsigned int v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
template <class F, class U> static inline F cut_emu_atomic_fadd(F *p, F v)
{
    U *q = (U *)p;
    U old = __atomic_load_n(q, __ATOMIC_SEQ_CST), nw;
    F f;
    do {
        __builtin_memcpy(&f, &old, sizeof f);
        F s = f + v;
        __builtin_memcpy(&nw, &s, sizeof nw);
    } while (!__atomic_compare_exchange_n(q, &old, nw, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return f;
}
static inline float atomicAdd(float *p, float v) { return cut_emu_atomic_fadd<float, unsigned int>(p, v); }
static inline double atomicAdd(double *p, double v) { return cut_emu_atomic_fadd<double, unsigned long long>(p, v); }
template <class T> static inline T atomicSub(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
template <class T> static inline T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
static inline float atomicExch(float *p, float v)
{
    unsigned int r = __atomic_exchange_n((unsigned int *)p, __float_as_uint(v), __ATOMIC_SEQ_CST);
    return __uint_as_float(r);
}
template <class T> static inline T atomicCAS(T *p, T cmp, T v)
{
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp;
}
template <class T> static inline T atomicMax(T *p, T v)
{
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
template <class T> static inline T atomicMin(T *p, T v)
{
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
template <class T> static inline T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }
template <class T> static inline T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
template <class T> static inline T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); }

/* ---- warp functions (see the header comment: all live lanes take part, mask ignored) ---- */
static inline unsigned int cut_emu_lane()
{
    return (threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y) & 31u;
}
template <class T> static inline T cut_emu_shfl_from(T v, int src)
{
    static_assert(sizeof(T) <= 8, "__shfl on types wider than 8 bytes is not emulated");
    unsigned long long in = 0, all[32];
    __builtin_memcpy(&in, &v, sizeof v);
    cut_emu_h->warp_exchange(in, all);
    T r;
    __builtin_memcpy(&r, &all[src & 31], sizeof r);
    return r;
}
template <class T> static inline T __shfl_sync(unsigned int mask, T v, int src, int width = 32)
{
    (void)mask;
    int lane = (int)cut_emu_lane();
    return cut_emu_shfl_from(v, (lane & ~(width - 1)) + (src & (width - 1)));
}
template <class T> static inline T __shfl_up_sync(unsigned int mask, T v, unsigned int delta, int width = 32)
{
    (void)mask;
    int lane = (int)cut_emu_lane();
    int src = (lane & (width - 1)) >= (int)delta ? lane - (int)delta : lane;
    return cut_emu_shfl_from(v, src);
}
template <class T> static inline T __shfl_down_sync(unsigned int mask, T v, unsigned int delta, int width = 32)
{
    (void)mask;
    int lane = (int)cut_emu_lane();
    int src = (lane & (width - 1)) + (int)delta < width ? lane + (int)delta : lane;
    return cut_emu_shfl_from(v, src);
}
template <class T> static inline T __shfl_xor_sync(unsigned int mask, T v, int lane_mask, int width = 32)
{
    (void)mask;
    int lane = (int)cut_emu_lane();
    int src = lane ^ lane_mask;
    if (src >= ((lane / width) + 1) * width)
        src = lane;
    return cut_emu_shfl_from(v, src);
}
static inline unsigned int __ballot_sync(unsigned int mask, int pred)
{
    (void)mask;
    unsigned long long all[32];
    cut_emu_h->warp_exchange(pred ? 1ull : 0ull, all);
    unsigned int r = 0;
    for (int i = 0; i < 32; i++)
        r |= (all[i] & 1ull) << i;
    return r;
}
static inline int __any_sync(unsigned int mask, int pred) { return __ballot_sync(mask, pred) != 0; }
static inline int __all_sync(unsigned int mask, int pred)
{
    (void)mask;
    unsigned long long all[32];
    cut_emu_h->warp_exchange(pred ? 1ull : 2ull, all); /* absent lanes read 0: neither true nor false */
    for (int i = 0; i < 32; i++)
        if (all[i] == 2ull)
            return 0;
    return 1;
}

#endif /* CUT_EMU_PRELUDE_H */
