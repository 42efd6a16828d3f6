/* Tests of user kernels under host emulation: typed arguments (float, int, double and by-value struct scalars)
 * through cut_emu_compile_call, dynamic shared memory (extern __shared__, in a function and at file scope, with
 * __align__), waits that yield to the block's other threads (a hand-off, deadlocks ended with their sentence, a
 * wait the source scan cannot see), the emulated TMA map's checks, and the emulation runner's
 * prepare_kernel/run_kernel (capture, check on two input sets, poison, inline asm, compile errors, refused
 * launches). Skips (77) when no host C++ compiler is available. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/emu.h"
#include "cutune/work.h"
#include "cutune/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char work_dir[1024];

static cut_emu_kernel *compile_call_ok(const char *src, const char *entry)
{
    cut_emu_kernel *k = NULL;
    cut_err e = {{0}};
    if (cut_emu_compile_call(src, entry, work_dir, &k, &e) != 0)
        fail_msg("compile_call %s: %s", entry, e.msg);
    return k;
}

static void launch_argv_ok(cut_emu_kernel *k, unsigned gx, unsigned bx, void **argv)
{
    const unsigned grid[3] = {gx, 1, 1}, block[3] = {bx, 1, 1};
    cut_err e = {{0}};
    if (cut_emu_launch_argv(k, grid, block, argv, &e) != 0)
        fail_msg("launch: %s", e.msg);
}

/* ---- typed arguments ---- */

static const char *saxpy_src =
    "__global__ void saxpy(const float *__restrict__ x, float *y, float a, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

/* A double, a by-value vector struct and a char between pointers: each travels in its own register class. */
static const char *mixed_src =
    "extern \"C\" __global__ void mixed(float *o, double d, float2 v, const int *p, char c, float f) {\n"
    "  o[threadIdx.x] = (float)d + v.x * 10.f + v.y * 100.f + p[threadIdx.x] + c + f;\n"
    "}\n";

static void test_typed_scalars(void **state)
{
    (void)state;
    enum { N = 1000, CAP = 1024 };
    static float x[CAP], y[CAP];
    for (int i = 0; i < CAP; i++) {
        x[i] = (float)(i % 17);
        y[i] = (float)(i % 5);
    }
    cut_emu_kernel *k = compile_call_ok(saxpy_src, "saxpy");
    const float *xp = x;
    float *yp = y, a = 2.5f;
    int n = N;
    void *argv[4] = {&xp, &yp, &a, &n};
    launch_argv_ok(k, 4, 256, argv);
    for (int i = 0; i < CAP; i++)
        assert_true(y[i] == (i < N ? 2.5f * (float)(i % 17) + (float)(i % 5) : (float)(i % 5)));

    /* the pointer-argument launch refuses a trampoline, and the other way round */
    cut_err e = {{0}};
    const unsigned g[3] = {1, 1, 1};
    assert_int_equal(cut_emu_launch(k, g, g, argv, 4, &e), -1);
    assert_non_null(strstr(e.msg, "cut_emu_launch_argv"));
    unsigned sizes[8];
    int is_ptr[8];
    assert_int_equal(cut_emu_kernel_params(k, sizes, is_ptr, 8), 4);
    assert_true(is_ptr[0] && is_ptr[1] && !is_ptr[2] && !is_ptr[3]);
    assert_int_equal(sizes[2], 4);
    assert_int_equal(sizes[3], 4);
    cut_emu_kernel_free(k);
    assert_int_equal(cut_emu_compile_call(saxpy_src, "bad name", work_dir, &k, &e), -1);
    assert_null(k);

    k = compile_call_ok(mixed_src, "mixed");
    float o[4];
    int p[4] = {1000, 2000, 3000, 4000};
    float *op = o, f = 0.25f;
    const int *pp = p;
    double d = 7.0;
    struct {
        float x, y;
    } v = {1.0f, 2.0f};
    char c = 3;
    void *margv[6] = {&op, &d, &v, &pp, &c, &f};
    launch_argv_ok(k, 1, 4, margv);
    for (int i = 0; i < 4; i++)
        assert_true(o[i] == 7.0f + 10.0f + 200.0f + (float)p[i] + 3.0f + 0.25f);
    cut_emu_kernel_free(k);
}

/* ---- dynamic shared memory ---- */

/* Block sums through dynamic shared memory declared in the kernel and at file scope (inside extern "C" { }, whose
 * brace is not a function's); a third kernel in the same source has a static __shared__ array of the same name,
 * which the rewrite must leave alone. */
static const char *reduce_src =
    "extern \"C\" __global__ void block_sum(const float *x, float *out) {\n"
    "  extern __shared__ float red[];\n"
    "  unsigned t = threadIdx.x;\n"
    "  red[t] = x[blockIdx.x * blockDim.x + t];\n"
    "  __syncthreads();\n"
    "  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {\n"
    "    if (t < s) red[t] += red[t + s];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (t == 0) out[blockIdx.x] = red[0];\n"
    "}\n"
    "__global__ void other(float *o) { __shared__ float red[32]; red[threadIdx.x] = 1.f; o[0] = red[0]; }\n"
    "extern \"C\" {\n"
    "extern __shared__ float\n"
    "    file_red[];\n"
    "__global__ void block_sum_file(const float *x, float *out) {\n"
    "  unsigned t = threadIdx.x;\n"
    "  file_red[t] = x[blockIdx.x * blockDim.x + t];\n"
    "  __syncthreads();\n"
    "  if (t == 0) { float s = 0; for (unsigned i = 0; i < blockDim.x; i++) s += file_red[i]; out[blockIdx.x] = s; }\n"
    "}\n"
    "}\n";

/* ---- cache-hinted loads of non-global addresses (a GPU faults: CUDA_ERROR_INVALID_ADDRESS_SPACE) ---- */

static const char *ldcg_src =
    "extern \"C\" __global__ void ldcg_ok(const float *x, float *y) {\n"
    "  y[threadIdx.x] = __ldcg(&x[threadIdx.x]) + __ldg(x + 1); __stcs(&y[0], y[0]);\n"
    "}\n"
    "extern \"C\" __global__ void ldcg_local(const float *x, float *y) {\n"
    "  float4 t = *reinterpret_cast<const float4 *>(x); const float *v = reinterpret_cast<const float *>(&t);\n"
    "  y[threadIdx.x] = __ldcg(&v[1]);\n"
    "}\n"
    "extern \"C\" __global__ void ldcg_shared(const float *x, float *y) {\n"
    "  __shared__ float s[32]; s[threadIdx.x] = x[threadIdx.x]; __syncthreads();\n"
    "  y[threadIdx.x] = __ldcs(&s[31 - threadIdx.x]);\n"
    "}\n"
    "extern \"C\" __global__ void ldcg_past(const float *x, float *y) {\n"
    "  y[threadIdx.x] = __ldcg(&x[threadIdx.x + 1]);\n"
    "}\n";

static void test_global_address_check(void **state)
{
    (void)state;
    static float x[33], y[32]; /* x[32] exists (ldcg_past reads it unchecked) but is not part of the buffer */
    for (int i = 0; i < 33; i++)
        x[i] = (float)i;
    const float *xp = x;
    float *yp = y;
    void *argv[2] = {&xp, &yp};
    void *base[2] = {x, y};
    const size_t bytes[2] = {32 * sizeof(float), sizeof y};
    const unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    const char *entries[] = {"ldcg_ok", "ldcg_local", "ldcg_shared", "ldcg_past"};
    const char *what[] = {NULL, "__ldcg", "__ldcs", "__ldcg"};
    for (size_t i = 0; i < CUT_ARRAY_LEN(entries); i++) {
        cut_emu_kernel *k = compile_call_ok(ldcg_src, entries[i]);
        cut_err e = {{0}};
        /* unchecked without the buffers: every kernel runs */
        if (cut_emu_launch_argv(k, grid, block, argv, &e) != 0)
            fail_msg("%s unchecked: %s", entries[i], e.msg);
        cut_emu_set_globals(k, base, bytes, 2);
        const int rc = cut_emu_launch_argv(k, grid, block, argv, &e);
        if (!what[i]) {
            if (rc != 0)
                fail_msg("%s: %s", entries[i], e.msg);
            assert_true(y[5] == 6.0f);
        } else {
            assert_int_equal(rc, -1);
            assert_non_null(strstr(e.msg, what[i]));
            assert_non_null(strstr(e.msg, "CUDA_ERROR_INVALID_ADDRESS_SPACE"));
        }
        cut_emu_kernel_free(k);
    }
}

/* ---- waits that yield (cut_emu_yield) ---- */

static const char *yield_src =
    "__device__ __forceinline__ void spin_until(volatile int *p, int v)\n"
    "{\n"
    "  for (unsigned long long n = 0; *p != v; n++)\n"
    "    if (cut_emu_yield(n)) return;\n"
    "}\n"
    /* thread 0 waits until every other thread counted in, then lets them go; they wait for that */
    "extern \"C\" __global__ void handoff(int *out) {\n"
    "  __shared__ int count, go;\n"
    "  if (threadIdx.x == 0) { count = 0; go = 0; }\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x == 0) { spin_until(&count, blockDim.x - 1); go = 1000 + blockIdx.x; }\n"
    "  else { count++; spin_until(&go, 1000 + blockIdx.x); }\n"
    "  out[blockIdx.x * blockDim.x + threadIdx.x] = go + count;\n"
    "}\n"
    /* every thread waits for a flag nobody sets */
    "extern \"C\" __global__ void all_wait(int *out) {\n"
    "  __shared__ int flag;\n"
    "  if (threadIdx.x == 0) flag = 0;\n"
    "  __syncthreads();\n"
    "  spin_until(&flag, 1);\n"
    "  out[threadIdx.x] = 1;\n"
    "}\n"
    /* thread 0 waits for a flag the others set after a barrier thread 0 never reaches */
    "extern \"C\" __global__ void wait_vs_barrier(int *out) {\n"
    "  __shared__ int flag;\n"
    "  if (threadIdx.x == 0) flag = 0;\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x == 0) spin_until(&flag, 1);\n"
    "  else { __syncthreads(); flag = 1; }\n"
    "  out[threadIdx.x] = 2;\n"
    "}\n";

/* No barrier word and the yield spelled through a macro: the scan runs this kernel without fibers. */
static const char *hidden_yield_src =
    "#define EMU_WORD(x) cut_emu_##x\n"
    "extern \"C\" __global__ void hidden_wait(int *out) {\n"
    "  out[threadIdx.x] = EMU_WORD(yield)(0);\n"
    "}\n";

static void test_yield_waits(void **state)
{
    (void)state;
    enum { BLOCKS = 5, T = 96 };
    int out[BLOCKS * T];
    int *op = out;
    void *argv[1] = {&op};
    const unsigned grid[3] = {BLOCKS, 1, 1}, block[3] = {T, 1, 1}, one[3] = {1, 1, 1};
    cut_err e = {{0}};
    /* the hand-off completes in every block, each thread seeing the block's final values */
    cut_emu_kernel *k = compile_call_ok(yield_src, "handoff");
    assert_int_equal(cut_emu_launch_argv(k, grid, block, argv, &e), 0);
    for (int b = 0; b < BLOCKS; b++)
        for (int t = 0; t < T; t++)
            assert_int_equal(out[b * T + t], 1000 + b + T - 1);
    cut_emu_kernel_free(k);
    /* waits nobody can end: the launch fails with the deadlock's sentence, every thread having run to its end */
    const char *dead[] = {"all_wait", "wait_vs_barrier"};
    for (size_t i = 0; i < CUT_ARRAY_LEN(dead); i++) {
        memset(out, 0, sizeof out);
        k = compile_call_ok(yield_src, dead[i]);
        assert_int_equal(cut_emu_launch_argv(k, one, block, argv, &e), -1);
        printf("  %s: %s\n", dead[i], e.msg);
        assert_non_null(strstr(e.msg, "deadlocked"));
        for (int t = 0; t < T; t++)
            assert_int_equal(out[t], (int)i + 1);
        cut_emu_kernel_free(k);
    }
    /* a wait in a kernel run without fibers gives up at once and fails the launch */
    k = compile_call_ok(hidden_yield_src, "hidden_wait");
    assert_int_equal(cut_emu_launch_argv(k, one, block, argv, &e), -1);
    assert_non_null(strstr(e.msg, "source scan did not see"));
    assert_int_equal(out[0], 1);
    cut_emu_kernel_free(k);
}

/* The emulated tensor map: the geometry in the words the kernel text reads, and the GPU worker's refusals. */
static void test_tma_encode(void **state)
{
    (void)state;
    static unsigned short buf[64 * 100] __attribute__((aligned(64)));
    const cut_tma_desc t = {.operand = 0, .elem_bytes = 2, .dims = {64, 100}, .row_bytes = 128, .box = {64, 32},
                            .swizzle = 128};
    cut_emu_tmap m;
    cut_err e = {{0}};
    assert_int_equal(cut_emu_tma_encode(&t, buf, sizeof buf, 2, &m, &e), 0);
    assert_true(m.magic == CUT_EMU_TMAP_MAGIC && m.base == (uintptr_t)buf && m.dims[0] == 64 && m.dims[1] == 100 &&
                m.row_bytes == 128 && m.box[0] == 64 && m.box[1] == 32 && m.elem_bytes == 2 && m.swizzle == 128);
    assert_int_equal(cut_emu_tma_encode(&t, buf, sizeof buf, 4, &m, &e), -1); /* the buffer holds 4-byte elements */
    assert_non_null(strstr(e.msg, "2-byte elements"));
    assert_int_equal(cut_emu_tma_encode(&t, buf, sizeof buf - 2, 2, &m, &e), -1);
    assert_non_null(strstr(e.msg, "past the end"));
    cut_tma_desc bad = t;
    bad.row_bytes = 120;
    assert_int_equal(cut_emu_tma_encode(&bad, buf, sizeof buf, 2, &m, &e), -1);
    assert_non_null(strstr(e.msg, "multiple of 16"));
    assert_true(m.magic == 0); /* a refused map is no map */
    /* 3-D (a strided batch): 2 planes of 64 x 50, 6400 bytes apart, fill the buffer; a third reaches past it */
    cut_tma_desc t3 = t;
    t3.dims[1] = 50, t3.planes = 2, t3.plane_bytes = 6400;
    assert_int_equal(cut_emu_tma_encode(&t3, buf, sizeof buf, 2, &m, &e), 0);
    assert_true(m.planes == 2 && m.plane_bytes == 6400 && m.dims[1] == 50);
    t3.planes = 3;
    assert_int_equal(cut_emu_tma_encode(&t3, buf, sizeof buf, 2, &m, &e), -1);
    assert_non_null(strstr(e.msg, "past the end"));
    t3.planes = 2, t3.plane_bytes = 6392; /* shorter than a plane */
    assert_int_equal(cut_emu_tma_encode(&t3, buf, sizeof buf, 2, &m, &e), -1);
    assert_non_null(strstr(e.msg, "plane stride"));
    assert_int_equal(cut_emu_tma_encode(&t, buf, sizeof buf, 2, &m, &e), 0);
    assert_true(m.planes == 1); /* a 2-D map is one plane */
}

static void test_dynamic_smem_reduction(void **state)
{
    (void)state;
    enum { B = 8, T = 128 };
    static float x[B * T];
    float want[B] = {0}, out[B];
    for (int i = 0; i < B * T; i++) {
        x[i] = (float)((i * 13) % 9) - 4.0f; /* small integers: every order sums exactly */
        want[i / T] += x[i];
    }
    const char *entries[] = {"block_sum", "block_sum_file"};
    for (int j = 0; j < 2; j++) {
        cut_emu_kernel *k = compile_call_ok(reduce_src, entries[j]);
        const float *xp = x;
        float *op = out;
        void *argv[2] = {&xp, &op};
        memset(out, 0, sizeof out);
        launch_argv_ok(k, B, T, argv);
        for (int b = 0; b < B; b++)
            assert_true(out[b] == want[b]);
        cut_emu_kernel_free(k);
    }
}

static const char *aligned_src =
    "extern \"C\" __global__ void vec(float *o) {\n"
    "  extern __shared__ __align__(16) float4 s[];\n"
    "  s[threadIdx.x] = make_float4(1.f, 2.f, 3.f, (float)threadIdx.x);\n"
    "  __syncthreads();\n"
    "  float4 v = s[blockDim.x - 1 - threadIdx.x];\n"
    "  o[threadIdx.x] = v.x + v.y + v.z + v.w + ((uintptr_t)s % 16 ? 1000.f : 0.f);\n"
    "}\n";

/* A file-scope declaration becomes a macro: the compiler's line numbers must still be the source's. */
static const char *dsmem_error_src =
    "extern __shared__ float fs[];\n"
    "__global__ void broken(float *o) {\n"
    "  o[0] = fs[0] + undeclared_name;\n"
    "}\n";

static void test_dynamic_smem_aligned_and_lines(void **state)
{
    (void)state;
    cut_emu_kernel *k = compile_call_ok(aligned_src, "vec");
    float o[32], *op = o;
    void *argv[1] = {&op};
    launch_argv_ok(k, 2, 32, argv);
    for (int i = 0; i < 32; i++)
        assert_true(o[i] == 6.0f + (float)(31 - i));
    cut_emu_kernel_free(k);

    cut_err e = {{0}};
    assert_int_equal(cut_emu_compile_call(dsmem_error_src, "broken", work_dir, &k, &e), -1);
    assert_non_null(strstr(e.msg, "kernel.cu:3"));
}

/* ---- the runner's kernel path ---- */

enum { KN = 256 };
static float kx[2][KN];

/* y = 3 x (+ the variations below) over n elements. */
static const char *good_src =
    "extern \"C\" __global__ void scale(const float *x, float *y, float a, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i];\n"
    "}\n";
static const char *wrong_src =
    "extern \"C\" __global__ void scale(const float *x, float *y, float a, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + (i == 7 ? 1.f : 0.f);\n"
    "}\n";
static const char *skip_last_src =
    "extern \"C\" __global__ void scale(const float *x, float *y, float a, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n - 1) y[i] = a * x[i];\n"
    "}\n";
static const char *asm_src =
    "extern \"C\" __global__ void scale(const float *x, float *y, float a, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  float r;\n"
    "  asm volatile(\"mul.f32 %0, %1, %2;\" : \"=f\"(r) : \"f\"(a), \"f\"(x[i]));\n"
    "  if (i < n) y[i] = r;\n"
    "}\n";
static const char *error_src =
    "extern \"C\" __global__ void scale(const float *x, float *y, float a, int n) {\n"
    "  y[0] = a * x[0] + missing;\n"
    "}\n";

/* Work: input x (two sets), output y with the given references (NULL: capture). */
static void make_work(cut_work *w, const void *ref0, const void *ref1)
{
    memset(w, 0, sizeof *w);
    w->nbufs = 2;
    w->atol = 1e-6;
    w->rtol = 1e-5;
    snprintf(w->bufs[0].name, sizeof w->bufs[0].name, "x");
    w->bufs[0].dtype = CUT_EL_F32;
    w->bufs[0].elems = KN;
    w->bufs[0].data[0] = kx[0];
    w->bufs[0].data[1] = kx[1];
    snprintf(w->bufs[1].name, sizeof w->bufs[1].name, "y");
    w->bufs[1].is_output = 1;
    w->bufs[1].dtype = CUT_EL_F32;
    w->bufs[1].elems = KN;
    w->bufs[1].data[0] = ref0;
    w->bufs[1].data[1] = ref1;
}

static void make_call(cut_call *c, const char *src)
{
    memset(c, 0, sizeof *c);
    c->src = src;
    snprintf(c->entry, sizeof c->entry, "scale");
    c->grid[0] = KN / 64;
    c->block[0] = 64;
    c->grid[1] = c->grid[2] = c->block[1] = c->block[2] = 1;
    c->nargs = 4;
    c->args[0].buf = 0;
    c->args[1].buf = 1;
    float a = 3.0f;
    int n = KN;
    c->args[2] = (cut_call_arg){.buf = -1, .size = 4};
    memcpy(c->args[2].bytes, &a, 4);
    c->args[3] = (cut_call_arg){.buf = -1, .size = 4};
    memcpy(c->args[3].bytes, &n, 4);
}

static cut_result run_call(cut_runner *r, const char *src, cut_work_outputs *outs)
{
    cut_call c;
    make_call(&c, src);
    cut_result res;
    cut_err e = {{0}};
    if (cut_runner_run_call(r, &c, &res, outs, &e) != 0)
        fail_msg("run_kernel: %s", e.msg);
    return res;
}

/* A kernel that writes set 0's expected output as constants: right once, wrong on fresh inputs. */
static char *constant_src(void)
{
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_printf(&b, "__device__ const float tab[%d] = {", KN);
    for (int i = 0; i < KN; i++)
        cut_buf_printf(&b, "%.9g%s", 3.0f * kx[0][i], i + 1 < KN ? "," : "};\n");
    cut_buf_printf(&b, "extern \"C\" __global__ void scale(const float *x, float *y, float a, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) y[i] = tab[i];\n"
                       "}\n");
    return b.data;
}

static void test_runner_capture_then_check(void **state)
{
    (void)state;
    for (int i = 0; i < KN; i++) {
        kx[0][i] = (float)(i % 11) * 0.5f;
        kx[1][i] = (float)(i % 7) * -0.25f + 1.0f;
    }
    cut_timing t;
    cut_timing_default(&t);
    t.min_repeats = 2;
    t.max_repeats = 4;
    t.min_total_ms = 0;
    cut_err e = {{0}};
    cut_runner *r = cut_runner_emu_new(work_dir, &t, &e);
    assert_non_null(r);
    assert_non_null(r->prepare);
    assert_non_null(r->run);

    /* capture: no references yet */
    cut_work w;
    make_work(&w, NULL, NULL);
    assert_int_equal(cut_runner_prepare_work(r, &w, &e), 0);
    cut_work_outputs outs;
    cut_result res = run_call(r, good_src, &outs);
    assert_int_equal(res.status, CUT_ST_OK);
    assert_non_null(outs.data[1][0]);
    assert_non_null(outs.data[1][1]);
    assert_null(outs.data[0][0]);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < KN; i++)
            assert_true(((float *)outs.data[1][s])[i] == 3.0f * kx[s][i]);
    cut_call c;
    make_call(&c, good_src);
    assert_int_equal(cut_runner_run_call(r, &c, &res, NULL, &e), -1); /* capture needs outs */

    /* check against the captured references */
    make_work(&w, outs.data[1][0], outs.data[1][1]);
    assert_int_equal(cut_runner_prepare_work(r, &w, &e), 0);
    cut_work_outputs_free(&outs); /* the runner keeps its own copies */
    res = run_call(r, good_src, NULL);
    assert_int_equal(res.status, CUT_ST_OK);
    assert_true(res.repeats >= 2);
    assert_true(res.median_ms >= 0 && res.min_ms <= res.median_ms && res.median_ms <= res.max_ms);

    res = run_call(r, wrong_src, NULL);
    assert_int_equal(res.status, CUT_ST_WRONG_RESULT);
    assert_non_null(strstr(res.error, "y[7]"));
    assert_true(res.median_ms < 0);

    res = run_call(r, skip_last_src, NULL); /* the poison is left in y[255] */
    assert_int_equal(res.status, CUT_ST_WRONG_RESULT);
    assert_non_null(strstr(res.error, "y[255]"));
    printf("unwritten element: %s\n", res.error);

    res = run_call(r, asm_src, NULL);
    assert_int_equal(res.status, CUT_ST_INVALID);
    assert_non_null(strstr(res.error, "inline PTX"));

    res = run_call(r, error_src, NULL);
    assert_int_equal(res.status, CUT_ST_COMPILE_ERROR);
    assert_non_null(strstr(res.error, "missing"));
    printf("compile error: %s\n", res.error);

    char *cs = constant_src();
    res = run_call(r, cs, NULL);
    free(cs);
    assert_int_equal(res.status, CUT_ST_WRONG_OTHER_DATA); /* right on set 0, wrong on set 1 (issue 15) */
    assert_true(strncmp(res.error, "after timing, fresh inputs: ", 28) == 0);
    printf("hard-coded outputs: %s\n", res.error);

    /* more dynamic shared memory than emulated: a refused launch */
    make_call(&c, good_src);
    c.smem = CUT_EMU_DSMEM_BYTES + 1;
    assert_int_equal(cut_runner_run_call(r, &c, &res, NULL, &e), 0);
    assert_int_equal(res.status, CUT_ST_LAUNCH_ERROR);

    /* arguments that do not match the kernel's parameters */
    make_call(&c, good_src);
    c.nargs = 3;
    assert_int_equal(cut_runner_run_call(r, &c, &res, NULL, &e), 0);
    assert_int_equal(res.status, CUT_ST_LAUNCH_ERROR);
    assert_non_null(strstr(res.error, "takes 4 parameters"));
    make_call(&c, good_src);
    c.args[3].size = 8;
    assert_int_equal(cut_runner_run_call(r, &c, &res, NULL, &e), 0);
    assert_int_equal(res.status, CUT_ST_LAUNCH_ERROR);
    assert_non_null(strstr(res.error, "argument 3 is a 8-byte scalar"));
    make_call(&c, good_src);
    c.args[2].buf = 0;
    assert_int_equal(cut_runner_run_call(r, &c, &res, NULL, &e), 0);
    assert_int_equal(res.status, CUT_ST_LAUNCH_ERROR);
    assert_non_null(strstr(res.error, "not a pointer"));

    /* a kernel work is not a conv workload (generated candidates are refused), and a conv prepare replaces it: a
     * call naming the kernel work's fourth buffer no longer fits */
    cut_result mres;
    cut_candidate cand = {NULL, NULL};
    assert_int_equal(cut_runner_measure(r, &cand, 1, &mres, &e), -1);
    cut_conv conv = {.n = 1, .ci = 1, .h = 4, .w = 4, .co = 1, .kh = 1, .kw = 1, .stride = 1, .pad = 0};
    assert_int_equal(cut_runner_prepare_conv(r, &conv, 1, &e), 0);
    assert_int_equal(r->work->op.kind, CUT_WORK_CONV);
    make_call(&c, good_src);
    c.args[1].buf = 3;
    assert_int_equal(cut_runner_run_call(r, &c, &res, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "names buffer 3"));
    cut_runner_free(r);
}

static int setup(void)
{
    const char *base = getenv("CUTUNE_TEST_TMP");
    if (base && *base) {
        snprintf(work_dir, sizeof work_dir, "%s/test_emu_kernel", base);
        cut_err e;
        if (cut_mkdirs(work_dir, &e) != 0) {
            fprintf(stderr, "%s\n", e.msg);
            return -1;
        }
        return 0;
    }
    snprintf(work_dir, sizeof work_dir, "/tmp/test_emu_kernel-XXXXXX");
    return mkdtemp(work_dir) ? 0 : -1;
}

int main(void)
{
    if (setup() != 0)
        return 1;
    /* Skip cleanly where no host C++ compiler exists. */
    cut_emu_kernel *k = NULL;
    cut_err e = {{0}};
    if (cut_emu_compile("extern \"C\" void probe() {}\n", "probe", work_dir, &k, &e) != 0) {
        printf("skipping test_emu_kernel: the host C++ compiler does not work: %s\n", e.msg);
        return 77;
    }
    cut_emu_kernel_free(k);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_typed_scalars),
        cmocka_unit_test(test_global_address_check),
        cmocka_unit_test(test_yield_waits),
        cmocka_unit_test(test_tma_encode),
        cmocka_unit_test(test_dynamic_smem_reduction),
        cmocka_unit_test(test_dynamic_smem_aligned_and_lines),
        cmocka_unit_test(test_runner_capture_then_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
