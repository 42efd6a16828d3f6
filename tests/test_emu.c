/* Tests of the host emulation of CUDA (src/measure/ (emu*)): hand-written kernels (naive, shared-memory tiled, tree
 * reduction, float4 loads, warp shuffles, atomics, early return before a barrier) run on the CPU and are
 * compared with the reference; wrong kernels fail; compile errors are reported; the runner works end to end.
 * Skips (77) when no host C++ compiler is available. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/emu.h"
#include "cutune/util.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char work_dir[1024];

/* ---- kernels (CUDA C as the code generator writes it) ---- */

/* Shape macros prepended to each conv kernel: N CI H W CO KH KW S P OH OW. */
static char *with_shape(const cut_conv *c, const char *body)
{
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_printf(&b,
                   "// test kernel\n#define N %d\n#define CI %d\n#define H %d\n#define W %d\n#define CO %d\n"
                   "#define KH %d\n#define KW %d\n#define S %d\n#define P %d\n#define OH %d\n#define OW %d\n",
                   c->n, c->ci, c->h, c->w, c->co, c->kh, c->kw, c->stride, c->pad, cut_conv_oh(c),
                   cut_conv_ow(c));
    cut_buf_append(&b, body, strlen(body) + 1);
    return b.data;
}

/* One thread per output. */
static const char *naive_conv =
    "extern \"C\" __global__ void __launch_bounds__(256) cut_conv2d(const float* __restrict__ in,\n"
    "    const float* __restrict__ w, float* __restrict__ out) {\n"
    "  int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (idx >= N * CO * OH * OW) return;\n"
    "  int ow = idx % OW, oh = (idx / OW) % OH, co = (idx / (OW * OH)) % CO, n = idx / (OW * OH * CO);\n"
    "  float acc = 0.f;\n"
    "  for (int ci = 0; ci < CI; ++ci)\n"
    "    #pragma unroll\n"
    "    for (int kh = 0; kh < KH; ++kh)\n"
    "      #pragma unroll\n"
    "      for (int kw = 0; kw < KW; ++kw) {\n"
    "        int ih = oh * S - P + kh, iw = ow * S - P + kw;\n"
    "        if (ih >= 0 && ih < H && iw >= 0 && iw < W)\n"
    "          acc = fmaf(__ldg(&in[((n * CI + ci) * H + ih) * W + iw]),\n"
    "                     __ldg(&w[((co * CI + ci) * KH + kh) * KW + kw]), acc);\n"
    "      }\n"
    "  out[idx] = acc;\n"
    "}\n";

/* Same, but reads the weights flipped (convolution instead of cross-correlation): race-free and wrong. */
static const char *flipped_conv =
    "extern \"C\" __global__ void cut_conv2d(const float* in, const float* w, float* out) {\n"
    "  int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (idx >= N * CO * OH * OW) return;\n"
    "  int ow = idx % OW, oh = (idx / OW) % OH, co = (idx / (OW * OH)) % CO, n = idx / (OW * OH * CO);\n"
    "  float acc = 0.f;\n"
    "  for (int ci = 0; ci < CI; ++ci)\n"
    "    for (int kh = 0; kh < KH; ++kh)\n"
    "      for (int kw = 0; kw < KW; ++kw) {\n"
    "        int ih = oh * S - P + kh, iw = ow * S - P + kw;\n"
    "        if (ih >= 0 && ih < H && iw >= 0 && iw < W)\n"
    "          acc += in[((n * CI + ci) * H + ih) * W + iw] * w[((co * CI + ci) * KH + (KH - 1 - kh)) * KW + kw];\n"
    "      }\n"
    "  out[idx] = acc;\n"
    "}\n";

/* Forgets the last output element: the NaN poison must catch it. */
static const char *unwritten_conv =
    "extern \"C\" __global__ void cut_conv2d(const float* in, const float* w, float* out) {\n"
    "  int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (idx >= N * CO * OH * OW - 1) return;\n"
    "  int ow = idx % OW, oh = (idx / OW) % OH, co = (idx / (OW * OH)) % CO, n = idx / (OW * OH * CO);\n"
    "  float acc = 0.f;\n"
    "  for (int ci = 0; ci < CI; ++ci) for (int kh = 0; kh < KH; ++kh) for (int kw = 0; kw < KW; ++kw) {\n"
    "    int ih = oh * S - P + kh, iw = ow * S - P + kw;\n"
    "    if (ih >= 0 && ih < H && iw >= 0 && iw < W)\n"
    "      acc += in[((n * CI + ci) * H + ih) * W + iw] * w[((co * CI + ci) * KH + kh) * KW + kw];\n"
    "  }\n"
    "  out[idx] = acc;\n"
    "}\n";

/* Shared-memory tiled conv (stride 1): a TY x TX block computes a TY x TX output tile of one (n, co); per
 * input channel the block stages the (TY+KH-1) x (TX+KW-1) input tile and the KHxKW weights in __shared__. */
static const char *tiled_conv =
    "#define TX 8\n#define TY 4\n#define IX (TX + KW - 1)\n#define IY (TY + KH - 1)\n"
    "static __device__ __forceinline__ float load_in(const float* __restrict__ p, int n, int ci, int ih, int iw) {\n"
    "  return (ih >= 0 && ih < H && iw >= 0 && iw < W) ? __ldg(p + ((n * CI + ci) * H + ih) * W + iw) : 0.f;\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(TX * TY) cut_conv2d(const float* __restrict__ in,\n"
    "    const float* __restrict__ w, float* __restrict__ out) {\n"
    "  __shared__ float s_in[IY][IX];\n"
    "  __shared__ __align__(16) float s_w[KH * KW];\n"
    "  const int tid = threadIdx.y * blockDim.x + threadIdx.x, nt = blockDim.x * blockDim.y;\n"
    "  const int n = blockIdx.z / CO, co = blockIdx.z % CO;\n"
    "  const int oh0 = blockIdx.y * TY, ow0 = blockIdx.x * TX;\n"
    "  float acc = 0.f;\n"
    "  for (int ci = 0; ci < CI; ++ci) {\n"
    "    for (int i = tid; i < IY * IX; i += nt)\n"
    "      s_in[i / IX][i % IX] = load_in(in, n, ci, oh0 - P + i / IX, ow0 - P + i % IX);\n"
    "    for (int i = tid; i < KH * KW; i += nt)\n"
    "      s_w[i] = w[(co * CI + ci) * KH * KW + i];\n"
    "    __syncthreads();\n"
    "    #pragma unroll\n"
    "    for (int kh = 0; kh < KH; ++kh)\n"
    "      #pragma unroll\n"
    "      for (int kw = 0; kw < KW; ++kw)\n"
    "        acc = fmaf(s_in[threadIdx.y + kh][threadIdx.x + kw], s_w[kh * KW + kw], acc);\n"
    "    __syncthreads();\n"
    "  }\n"
    "  const int oh = oh0 + threadIdx.y, ow = ow0 + threadIdx.x;\n"
    "  if (oh < min(OH, oh0 + TY) && ow < OW)\n"
    "    out[((n * CO + co) * OH + oh) * OW + ow] = acc;\n"
    "}\n";

/* 1x1 conv with float4 loads/stores along W (W % 4 == 0). */
static const char *vec4_conv1x1 =
    "extern \"C\" __global__ void cut_conv2d(const float* __restrict__ in, const float* __restrict__ w,\n"
    "    float* __restrict__ out) {\n"
    "  int q = blockIdx.x * blockDim.x + threadIdx.x;        // float4 index within an output plane\n"
    "  int co = blockIdx.y, n = blockIdx.z;\n"
    "  if (q >= H * W / 4) return;\n"
    "  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);\n"
    "  for (int ci = 0; ci < CI; ++ci) {\n"
    "    float4 v = __ldg(reinterpret_cast<const float4*>(in + (n * CI + ci) * H * W) + q);\n"
    "    float wv = w[co * CI + ci];\n"
    "    acc.x = fmaf(v.x, wv, acc.x); acc.y = fmaf(v.y, wv, acc.y);\n"
    "    acc.z = fmaf(v.z, wv, acc.z); acc.w = fmaf(v.w, wv, acc.w);\n"
    "  }\n"
    "  reinterpret_cast<float4*>(out + (n * CO + co) * H * W)[q] = acc;\n"
    "}\n";

/* Block tree reduction over 256 elements per block (9 barriers). */
static const char *tree_reduce =
    "extern \"C\" __global__ void __launch_bounds__(256) block_sum(const float* in, float* out) {\n"
    "  __shared__ float s[256];\n"
    "  unsigned t = threadIdx.x;\n"
    "  s[t] = in[blockIdx.x * 256 + t];\n"
    "  __syncthreads();\n"
    "  for (unsigned st = 128; st > 0; st >>= 1) {\n"
    "    if (t < st) s[t] += s[t + st];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (t == 0) out[blockIdx.x] = s[0];\n"
    "}\n";

/* Neighbour exchange through shared memory, 10 rounds = 20 barriers; a missing barrier gives wrong sums. */
static const char *ring20 =
    "extern \"C\" __global__ void ring(float* out) {\n"
    "  __shared__ float s[1024];\n"
    "  unsigned t = threadIdx.x, B = blockDim.x;\n"
    "  float v = (float)(t + blockIdx.x);\n"
    "  for (int i = 0; i < 10; ++i) {\n"
    "    s[t] = v;\n"
    "    __syncthreads();\n"
    "    v += s[(t + 1) % B];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  out[blockIdx.x * B + t] = v;\n"
    "}\n";

/* Threads beyond n leave early; the others still meet at barriers (exited threads leave the barrier). */
static const char *early_exit =
    "extern \"C\" __global__ void early(const int* n, float* out) {\n"
    "  __shared__ float s[128];\n"
    "  unsigned t = threadIdx.x;\n"
    "  if (t >= (unsigned)*n) return;\n"
    "  s[t] = (float)t;\n"
    "  __syncthreads();\n"
    "  out[t] = s[(*n - 1) - t];\n"
    "  __syncthreads();\n"
    "}\n";

/* Warp shuffle reduction and ballot, 2-D block of 16x4 (two warps), plus a float atomicAdd over the grid. */
static const char *warp_ops =
    "extern \"C\" __global__ void warp_ops(const float* in, float* warp_sums, unsigned* ballots, float* total,\n"
    "                                       float* bcasts) {\n"
    "  unsigned t = threadIdx.y * blockDim.x + threadIdx.x;\n"
    "  unsigned g = blockIdx.x * blockDim.x * blockDim.y + t;\n"
    "  float v = in[g];\n"
    "  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);\n"
    "  unsigned b = __ballot_sync(0xffffffffu, in[g] > 0.f);\n"
    "  float bcast = __shfl_sync(0xffffffffu, v, 0);\n"
    "  if ((t & 31) == 0) { warp_sums[g / 32] = v; ballots[g / 32] = b; }\n"
    "  if ((t & 31) == 5) bcasts[g / 32] = bcast; /* lane 5 sees lane 0's full sum */\n"
    "  atomicAdd(total, in[g]);\n"
    "}\n";

/* Every block keeps its own id in __shared__ (namespace-scope and function-scope) across 50 barriers while other
 * blocks run concurrently on other workers; any sharing between blocks shows up as a wrong count. */
static const char *smem_isolation =
    "__shared__ int g_tag[64];\n"
    "static __device__ __forceinline__ int read_tag(int i) { return g_tag[i]; }\n"
    "extern \"C\" __global__ void iso(int* bad) {\n"
    "  __shared__ int s_tag[64];\n"
    "  unsigned t = threadIdx.x;\n"
    "  int me = (int)(blockIdx.x + 1000 * blockIdx.y);\n"
    "  int errors = 0;\n"
    "  for (int i = 0; i < 50; ++i) {\n"
    "    g_tag[t] = me + i; s_tag[t] = -me - i;\n"
    "    __syncthreads();\n"
    "    unsigned o = (t + 1) % blockDim.x;\n"
    "    errors += read_tag(o) != me + i; errors += s_tag[o] != -me - i;\n"
    "    __syncthreads();\n"
    "  }\n"
    "  atomicAdd(bad, errors);\n"
    "}\n";

static const char *syntax_error = "extern \"C\" __global__ void cut_conv2d(const float* in, const float* w, "
                                  "float* out) {\n  out[0] = in[0] +* ;\n}\n";

/* ---- helpers ---- */

static cut_emu_kernel *compile_ok(const char *src, const char *entry)
{
    cut_emu_kernel *k = NULL;
    cut_err e = {{0}};
    if (cut_emu_compile(src, entry, work_dir, &k, &e) != 0)
        fail_msg("compile failed: %s", e.msg);
    return k;
}

static void launch_ok(cut_emu_kernel *k, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                      unsigned bz, void **args, int nargs)
{
    unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    cut_err e = {{0}};
    if (cut_emu_launch(k, grid, block, args, nargs, &e) != 0)
        fail_msg("launch failed: %s", e.msg);
}

typedef struct conv_data {
    cut_conv c;
    float *in, *w, *out;
    double *ref;
    size_t no;
    double atol, rtol;
} conv_data;

static void conv_setup(conv_data *d, cut_conv c)
{
    d->c = c;
    size_t ni = cut_conv_in_elems(&c), nw = cut_conv_w_elems(&c);
    d->no = cut_conv_out_elems(&c);
    assert_int_equal(posix_memalign((void **)&d->in, 64, ni * sizeof(float)), 0);
    assert_int_equal(posix_memalign((void **)&d->out, 64, d->no * sizeof(float)), 0);
    d->w = malloc(nw * sizeof(float));
    d->ref = malloc(d->no * sizeof(double));
    cut_fill_uniform(d->in, ni, 11);
    cut_fill_uniform(d->w, nw, 12);
    cut_conv_reference(&c, d->in, d->w, d->ref);
    cut_conv_tolerance(&c, &d->atol, &d->rtol);
    for (size_t i = 0; i < d->no; i++)
        d->out[i] = NAN;
}

static void conv_free(conv_data *d)
{
    free(d->in);
    free(d->w);
    free(d->out);
    free(d->ref);
}

static size_t conv_check(conv_data *d, char *msg, size_t n)
{
    double maxe;
    return cut_compare(d->out, d->ref, d->no, d->atol, d->rtol, &maxe, msg, n);
}

/* ---- tests ---- */

static void test_naive_conv(void **state)
{
    (void)state;
    const cut_conv shapes[] = {{1, 9, 7, 5, 3, 3, 3, 1, 1}, {2, 11, 10, 4, 2, 3, 5, 2, 2}, {1, 8, 8, 3, 4, 1, 1, 1, 0}};
    for (size_t s = 0; s < CUT_ARRAY_LEN(shapes); s++) {
        conv_data d;
        conv_setup(&d, shapes[s]);
        char *src = with_shape(&d.c, naive_conv);
        cut_emu_kernel *k = compile_ok(src, "cut_conv2d");
        void *args[3] = {d.in, d.w, d.out};
        launch_ok(k, (unsigned)CUT_CEIL_DIV(d.no, 64), 1, 1, 64, 1, 1, args, 3);
        char msg[256];
        size_t bad = conv_check(&d, msg, sizeof msg);
        if (bad)
            fail_msg("shape %zu: %zu wrong: %s", s, bad, msg);
        cut_emu_kernel_free(k);
        free(src);
        conv_free(&d);
    }
}

static void test_tiled_conv_smem(void **state)
{
    (void)state;
    const cut_conv shapes[] = {{2, 10, 13, 3, 4, 3, 3, 1, 1}, {1, 7, 9, 2, 3, 5, 3, 1, 2}};
    for (size_t s = 0; s < CUT_ARRAY_LEN(shapes); s++) {
        conv_data d;
        conv_setup(&d, shapes[s]);
        char *src = with_shape(&d.c, tiled_conv);
        cut_emu_kernel *k = compile_ok(src, "cut_conv2d");
        void *args[3] = {d.in, d.w, d.out};
        int OH = cut_conv_oh(&d.c), OW = cut_conv_ow(&d.c);
        launch_ok(k, (unsigned)CUT_CEIL_DIV(OW, 8), (unsigned)CUT_CEIL_DIV(OH, 4), (unsigned)(d.c.n * d.c.co), 8, 4,
                  1, args, 3);
        char msg[256];
        size_t bad = conv_check(&d, msg, sizeof msg);
        if (bad)
            fail_msg("shape %zu: %zu wrong: %s", s, bad, msg);
        cut_emu_kernel_free(k);
        free(src);
        conv_free(&d);
    }
}

static void test_vec4_conv1x1(void **state)
{
    (void)state;
    conv_data d;
    conv_setup(&d, (cut_conv){2, 6, 8, 5, 7, 1, 1, 1, 0});
    char *src = with_shape(&d.c, vec4_conv1x1);
    cut_emu_kernel *k = compile_ok(src, "cut_conv2d");
    void *args[3] = {d.in, d.w, d.out};
    launch_ok(k, 1, 5, 2, 16, 1, 1, args, 3); /* 12 float4 per plane, 16 threads */
    char msg[256];
    size_t bad = conv_check(&d, msg, sizeof msg);
    if (bad)
        fail_msg("%zu wrong: %s", bad, msg);
    cut_emu_kernel_free(k);
    free(src);
    conv_free(&d);
}

static void test_wrong_index_fails(void **state)
{
    (void)state;
    conv_data d;
    conv_setup(&d, (cut_conv){1, 6, 6, 4, 3, 3, 3, 1, 1});
    char *src = with_shape(&d.c, flipped_conv);
    cut_emu_kernel *k = compile_ok(src, "cut_conv2d");
    void *args[3] = {d.in, d.w, d.out};
    launch_ok(k, (unsigned)CUT_CEIL_DIV(d.no, 32), 1, 1, 32, 1, 1, args, 3);
    char msg[256];
    size_t bad = conv_check(&d, msg, sizeof msg);
    assert_true(bad > d.no / 2);
    for (size_t i = 0; i < d.no; i++)
        assert_true(isfinite(d.out[i])); /* every element written, just wrong */
    assert_non_null(strstr(msg, "idx "));
    cut_emu_kernel_free(k);
    free(src);
    conv_free(&d);
}

static void test_tree_reduction(void **state)
{
    (void)state;
    enum { BLOCKS = 6 };
    float in[BLOCKS * 256], out[BLOCKS];
    cut_fill_uniform(in, BLOCKS * 256, 5);
    cut_emu_kernel *k = compile_ok(tree_reduce, "block_sum");
    void *args[2] = {in, out};
    launch_ok(k, BLOCKS, 1, 1, 256, 1, 1, args, 2);
    for (int b = 0; b < BLOCKS; b++) {
        double want = 0;
        for (int i = 0; i < 256; i++)
            want += in[b * 256 + i];
        assert_true(fabs(out[b] - want) < 1e-4);
    }
    cut_emu_kernel_free(k);
}

/* Correctness of 20 barriers per block, and the cost: printed, never asserted (no timed assertions). */
static void test_barrier_ring_and_speed(void **state)
{
    (void)state;
    cut_emu_kernel *k = compile_ok(ring20, "ring");
    const unsigned sizes[] = {32, 256, 1024};
    for (size_t s = 0; s < CUT_ARRAY_LEN(sizes); s++) {
        unsigned B = sizes[s], G = 4;
        float *out = malloc(sizeof(float) * B * G);
        void *args[1] = {out};
        double t0 = cut_now_s();
        launch_ok(k, G, 1, 1, B, 1, 1, args, 1);
        double ms = (cut_now_s() - t0) * 1e3;
        printf("emulation: %u blocks x %u threads x 20 barriers: %.2f ms (%.3f ms per block, %.1f us per barrier)\n",
               G, B, ms, ms / G, ms * 1e3 / (G * 20.0));
        float *v = malloc(sizeof(float) * B), *nv = malloc(sizeof(float) * B);
        for (unsigned b = 0; b < G; b++) {
            for (unsigned t = 0; t < B; t++)
                v[t] = (float)(t + b);
            for (int i = 0; i < 10; i++) {
                for (unsigned t = 0; t < B; t++)
                    nv[t] = v[t] + v[(t + 1) % B];
                memcpy(v, nv, sizeof(float) * B);
            }
            for (unsigned t = 0; t < B; t++)
                if (out[b * B + t] != v[t])
                    fail_msg("block size %u, block %u thread %u: got %g want %g", B, b, t, out[b * B + t], v[t]);
        }
        free(v);
        free(nv);
        free(out);
    }
    cut_emu_kernel_free(k);
}

static void test_smem_isolation_parallel_blocks(void **state)
{
    (void)state;
    cut_emu_kernel *k = compile_ok(smem_isolation, "iso");
    int bad = 0;
    void *args[1] = {&bad};
    launch_ok(k, 12, 3, 1, 64, 1, 1, args, 1);
    assert_int_equal(bad, 0);
    cut_emu_kernel_free(k);
}

static void test_early_exit_barrier(void **state)
{
    (void)state;
    cut_emu_kernel *k = compile_ok(early_exit, "early");
    int n = 37;
    float out[128];
    for (int i = 0; i < 128; i++)
        out[i] = -1;
    void *args[2] = {&n, out};
    launch_ok(k, 3, 1, 1, 128, 1, 1, args, 2);
    for (int t = 0; t < 128; t++)
        assert_true(out[t] == (t < n ? (float)(n - 1 - t) : -1.0f));
    cut_emu_kernel_free(k);
}

static void test_warp_ops_and_atomics(void **state)
{
    (void)state;
    enum { BLOCKS = 3, T = 64 };
    float in[BLOCKS * T], sums[BLOCKS * T / 32], bcasts[BLOCKS * T / 32], total = 0;
    unsigned ballots[BLOCKS * T / 32];
    for (int i = 0; i < BLOCKS * T; i++)
        in[i] = (float)((i * 7) % 11) - 5.0f; /* small integers: sums are exact */
    cut_emu_kernel *k = compile_ok(warp_ops, "warp_ops");
    void *args[5] = {in, sums, ballots, &total, bcasts};
    launch_ok(k, BLOCKS, 1, 1, 16, 4, 1, args, 5);
    double all = 0;
    for (int wi = 0; wi < BLOCKS * T / 32; wi++) {
        float want = 0;
        unsigned wb = 0;
        for (int l = 0; l < 32; l++) {
            want += in[wi * 32 + l];
            wb |= (in[wi * 32 + l] > 0 ? 1u : 0u) << l;
        }
        all += want;
        assert_true(sums[wi] == want);
        assert_true(bcasts[wi] == want);
        assert_int_equal(ballots[wi], wb);
    }
    assert_true(total == (float)all);
    cut_emu_kernel_free(k);
}

static void test_compile_error(void **state)
{
    (void)state;
    cut_emu_kernel *k = (cut_emu_kernel *)1;
    cut_err e = {{0}};
    assert_int_equal(cut_emu_compile(syntax_error, "cut_conv2d", work_dir, &k, &e), -1);
    assert_null(k);
    assert_non_null(strstr(e.msg, "host compiler failed"));
    assert_non_null(strstr(e.msg, "kernel.cu:2")); /* line numbers refer to the kernel source */

    /* missing entry point */
    assert_int_equal(cut_emu_compile(tree_reduce, "no_such_kernel", work_dir, &k, &e), -1);
    assert_non_null(strstr(e.msg, "no_such_kernel"));

    /* an unusable host compiler is named in the error */
    char *old = getenv("CUTUNE_HOST_CXX") ? strdup(getenv("CUTUNE_HOST_CXX")) : NULL;
    setenv("CUTUNE_HOST_CXX", "/nonexistent/cxx", 1);
    assert_int_equal(cut_emu_compile("extern \"C\" void f() {}\n", "f", work_dir, &k, &e), -1);
    assert_non_null(strstr(e.msg, "/nonexistent/cxx"));
    if (old) {
        setenv("CUTUNE_HOST_CXX", old, 1);
        free(old);
    } else {
        unsetenv("CUTUNE_HOST_CXX");
    }
}

static int count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    size_t ls = strlen(suffix);
    while (d && (de = readdir(d))) {
        size_t l = strlen(de->d_name);
        n += l > ls && strcmp(de->d_name + l - ls, suffix) == 0;
    }
    if (d)
        closedir(d);
    return n;
}

static void test_cache(void **state)
{
    (void)state;
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/cache", work_dir);
    const char *src = "extern \"C\" __global__ void k(float* o) { o[threadIdx.x] = 2.f * threadIdx.x; }\n";
    cut_emu_kernel *a = NULL, *b = NULL;
    cut_err e;
    DIR *d = opendir(dir); /* start empty: earlier runs may have left other .so files */
    struct dirent *de;
    char p[2400];
    while (d && (de = readdir(d)))
        if (de->d_name[0] != '.' && snprintf(p, sizeof p, "%s/%s", dir, de->d_name) > 0)
            unlink(p);
    if (d)
        closedir(d);
    assert_int_equal(cut_emu_compile(src, "k", dir, &a, &e), 0);
    double t0 = cut_now_s();
    assert_int_equal(cut_emu_compile(src, "k", dir, &b, &e), 0);
    double cached_ms = (cut_now_s() - t0) * 1e3;
    assert_int_equal(count_files(dir, ".so"), 1);
    printf("cached compile: %.2f ms\n", cached_ms);
    float o[8];
    void *args[1] = {o};
    launch_ok(b, 1, 1, 1, 8, 1, 1, args, 1);
    for (int i = 0; i < 8; i++)
        assert_true(o[i] == 2.0f * i);
    cut_emu_kernel_free(a);
    cut_emu_kernel_free(b);

    /* a damaged cache entry is rebuilt */
    d = opendir(dir);
    while (d && (de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l > 3 && strcmp(de->d_name + l - 3, ".so") == 0) {
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            FILE *f = fopen(p, "w");
            assert_non_null(f);
            fputs("not an ELF file", f);
            fclose(f);
        }
    }
    if (d)
        closedir(d);
    assert_int_equal(cut_emu_compile(src, "k", dir, &a, &e), 0);
    for (int i = 0; i < 8; i++)
        o[i] = 0;
    launch_ok(a, 1, 1, 1, 8, 1, 1, args, 1);
    assert_true(o[7] == 14.0f);
    cut_emu_kernel_free(a);
}

static void test_launch_errors(void **state)
{
    (void)state;
    cut_emu_kernel *k = compile_ok(tree_reduce, "block_sum");
    cut_err e;
    unsigned g[3] = {1, 1, 1}, big[3] = {1025, 1, 1}, zero[3] = {0, 1, 1};
    void *args[2] = {NULL, NULL};
    assert_int_equal(cut_emu_launch(k, g, big, args, 2, &e), -1);
    assert_non_null(strstr(e.msg, "1025"));
    assert_int_equal(cut_emu_launch(k, zero, g, args, 2, &e), -1);
    assert_int_equal(cut_emu_launch(k, g, g, args, 13, &e), -1);
    cut_emu_kernel_free(k);
}

static cut_kernel_src ksrc(char *src, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by)
{
    cut_kernel_src k;
    memset(&k, 0, sizeof k);
    k.src = src;
    snprintf(k.entry, sizeof k.entry, "cut_conv2d");
    k.grid[0] = gx;
    k.grid[1] = gy;
    k.grid[2] = gz;
    k.block[0] = bx;
    k.block[1] = by;
    k.block[2] = 1;
    return k;
}

/* The runner end to end on N=1, H=W=6, CI=3, CO=4, 3x3, pad 1. */
static void test_runner_end_to_end(void **state)
{
    (void)state;
    cut_conv c = {1, 6, 6, 4, 3, 3, 3, 1, 1};
    cut_timing t;
    cut_timing_default(&t);
    cut_err e = {{0}};
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/runner", work_dir);
    cut_runner *r = cut_runner_emu_new(dir, &t, &e);
    assert_non_null(r);
    cut_result res0;
    cut_candidate none = {0};
    assert_int_equal(cut_runner_measure(r, &none, 1, &res0, &e), -1); /* before prepare */
    assert_int_equal(cut_runner_prepare_conv(r, &c, 1234, &e), 0);
    const cut_measure_env *env = r->env(r);
    assert_string_equal(env->backend, "emu");
    assert_string_equal(env->gpu_name, "host-emulation");

    char *good = with_shape(&c, naive_conv), *tiled = with_shape(&c, tiled_conv);
    char *wrong = with_shape(&c, flipped_conv), *unwritten = with_shape(&c, unwritten_conv);
    char *bad = strdup(syntax_error);
    enum { NC = 8 };
    cut_kernel_src ks[NC] = {
        ksrc(good, 3, 1, 1, 64, 1),      ksrc(tiled, 1, 2, 4, 8, 4), ksrc(wrong, 3, 1, 1, 64, 1),
        ksrc(unwritten, 3, 1, 1, 64, 1), ksrc(bad, 1, 1, 1, 32, 1),  ksrc(good, 3, 1, 1, 64, 1),
        ksrc(good, 3, 1, 1, 64, 1),      ksrc(good, 1, 1, 1, 2048, 1),
    };
    ks[5].uses_inline_ptx = 1;
    ks[0].smem_dynamic = 1024;                    /* emulated: a per-block buffer */
    ks[6].smem_dynamic = CUT_EMU_DSMEM_BYTES + 1; /* more than that buffer */
    cut_candidate cands[NC];
    for (int i = 0; i < NC; i++)
        cands[i] = (cut_candidate){&ks[i], NULL};
    cut_result res[NC];
    assert_int_equal(cut_runner_measure(r, cands, NC, res, &e), 0);
    for (int i = 0; i < NC; i++)
        printf("candidate %d: %s %s median %.3f ms (%d repeats) max_abs_err %.3g\n", i,
               cut_status_name(res[i].status), res[i].error, res[i].median_ms, res[i].repeats, res[i].max_abs_err);

    for (int i = 0; i < 2; i++) {
        assert_int_equal(res[i].status, CUT_ST_OK);
        assert_true(res[i].repeats >= 3);
        assert_true(res[i].min_ms > 0 && res[i].min_ms <= res[i].median_ms && res[i].median_ms <= res[i].max_ms);
        assert_true(res[i].max_abs_err < 1e-5);
    }
    assert_int_equal(res[2].status, CUT_ST_WRONG_RESULT);
    assert_non_null(strstr(res[2].error, "outputs wrong: out["));
    assert_int_equal(res[3].status, CUT_ST_WRONG_RESULT);
    assert_non_null(strstr(res[3].error, "out[143] = ")); /* 4*6*6 - 1: the poison shows */
    assert_non_null(strstr(res[3].error, "nan, want"));
    assert_int_equal(res[4].status, CUT_ST_COMPILE_ERROR);
    assert_non_null(strstr(res[4].error, "kernel.cu"));
    assert_int_equal(res[5].status, CUT_ST_INVALID);
    assert_non_null(strstr(res[5].error, "inline PTX"));
    assert_int_equal(res[6].status, CUT_ST_LAUNCH_ERROR); /* a GPU refuses it too: 227 KiB is sm_90's limit */
    assert_non_null(strstr(res[6].error, "dynamic shared memory"));
    assert_int_equal(res[7].status, CUT_ST_LAUNCH_ERROR); /* 2048 threads per block */
    assert_non_null(strstr(res[7].error, "2048"));

    cut_runner_free(r);
    free(good);
    free(tiled);
    free(wrong);
    free(unwritten);
    free(bad);

    /* NULL work_dir: a private temporary directory, removed again on free */
    r = cut_runner_emu_new(NULL, NULL, &e);
    assert_non_null(r);
    assert_int_equal(r->timing.min_repeats, 5);
    cut_runner_free(r);
}

/* cut_runner_prepare_like: a second runner gets the first's conv work (built once), keyed as its own build. */
static void test_prepare_like(void **state)
{
    (void)state;
    cut_conv c = {1, 6, 6, 4, 3, 3, 3, 1, 1};
    cut_err e = {{0}};
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/like", work_dir);
    cut_runner *r0 = cut_runner_emu_new(dir, NULL, &e), *r1 = cut_runner_emu_new(dir, NULL, &e);
    assert_non_null(r0);
    assert_non_null(r1);
    assert_int_equal(cut_runner_prepare_like(r1, r0, &e), 0); /* r0 holds nothing yet */
    assert_int_equal(cut_runner_prepare_conv(r0, &c, 1234, &e), 0);
    r1->runner_refs = 1; /* a runner that computes references itself needs a work without them */
    assert_int_equal(cut_runner_prepare_like(r1, r0, &e), 0);
    r1->runner_refs = 0;
    assert_int_equal(cut_runner_prepare_like(r1, r0, &e), 1);
    assert_true(r1->keyed && r1->key_seed == 1234 && !memcmp(&r1->key_op, &r0->key_op, sizeof r0->key_op));
    assert_int_equal(r1->work->nbufs, r0->work->nbufs);
    for (int b = 0; b < r0->work->nbufs; b++)
        for (int set = 0; set < 2; set++)
            assert_memory_equal(r1->work->bufs[b].data[set], r0->work->bufs[b].data[set],
                                r0->work->bufs[b].elems * cut_elem_size(r0->work->bufs[b].dtype));
    assert_int_equal(cut_runner_prepare_like(r1, r0, &e), 1); /* held already */
    char *good = with_shape(&c, naive_conv);
    cut_kernel_src ks = ksrc(good, 3, 1, 1, 64, 1);
    cut_candidate cand = {&ks, NULL};
    cut_result res;
    assert_int_equal(cut_runner_measure(r1, &cand, 1, &res, &e), 0);
    assert_int_equal(res.status, CUT_ST_OK);
    free(good);
    cut_runner_free(r0);
    cut_runner_free(r1);
}

static int setup(void **state)
{
    (void)state;
    const char *base = getenv("CUTUNE_TEST_TMP");
    char tmpl[1024];
    if (base && *base) {
        snprintf(work_dir, sizeof work_dir, "%s/test_emu", base);
        cut_err e;
        if (cut_mkdirs(work_dir, &e) != 0) {
            fprintf(stderr, "%s\n", e.msg);
            return -1;
        }
    } else {
        snprintf(tmpl, sizeof tmpl, "/tmp/test_emu-XXXXXX");
        if (!mkdtemp(tmpl))
            return -1;
        snprintf(work_dir, sizeof work_dir, "%s", tmpl);
    }
    return 0;
}

int main(void)
{
    if (setup(NULL) != 0)
        return 1;
    /* Skip cleanly where no host C++ compiler exists. */
    cut_emu_kernel *k = NULL;
    cut_err e = {{0}};
    if (cut_emu_compile("extern \"C\" void probe() {}\n", "probe", work_dir, &k, &e) != 0) {
        printf("skipping test_emu: the host C++ compiler does not work: %s\n", e.msg);
        return 77;
    }
    cut_emu_kernel_free(k);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_naive_conv),
        cmocka_unit_test(test_tiled_conv_smem),
        cmocka_unit_test(test_vec4_conv1x1),
        cmocka_unit_test(test_wrong_index_fails),
        cmocka_unit_test(test_tree_reduction),
        cmocka_unit_test(test_barrier_ring_and_speed),
        cmocka_unit_test(test_smem_isolation_parallel_blocks),
        cmocka_unit_test(test_early_exit_barrier),
        cmocka_unit_test(test_warp_ops_and_atomics),
        cmocka_unit_test(test_compile_error),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_launch_errors),
        cmocka_unit_test(test_runner_end_to_end),
        cmocka_unit_test(test_prepare_like),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
