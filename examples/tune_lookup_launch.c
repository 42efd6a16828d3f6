/* cutune example: tune a Conv2D on this GPU, look the best kernel up as a program would at run time, compile it with
 * NVRTC, launch it with the CUDA driver API, check it against a CPU reference and time it.
 *
 *   tune_lookup_launch [--records DIR] [--trials N] [--conv N,H,W,CO,CI,KH,KW,S,P] [--no-tune] [--backend emu]
 *
 * 1. tune: cut_tune_case on GPU 0 (--backend emu: the host emulator), N trials into DIR (resumed when DIR has them);
 * 2. look up: cut_lookup_conv(DIR, shape, this GPU's name), the recorded best, or "no record for this shape on
 *    this GPU" (also shown for a shape that was never tuned);
 * 3. compile the kernel for this GPU (cut_compile_one: NVRTC, sm_XY);
 * 4. launch: cuModuleLoadData, cuLaunchKernel with its grid/block/shared memory and arguments (a split-K kernel's
 *    workspace too), compare with a double-precision CPU convolution, and time 20 launches with CUDA events.
 * Without a GPU (--backend emu) steps 1 to 3 run on the emulator's records and step 4 is skipped, saying so.
 * Exit code: 0 done, 1 a step failed (the message says which), 2 bad arguments.
 *
 * Build: part of cutune's CMake build (examples/CMakeLists.txt); it links libcutune and the CUDA driver library. */
#include <cutune/cutune.h>

#include <cuda.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_CU(x)                                                                                                \
    do {                                                                                                           \
        CUresult rc_ = (x);                                                                                        \
        if (rc_ != CUDA_SUCCESS) {                                                                                 \
            const char *s_ = NULL;                                                                                 \
            cuGetErrorString(rc_, &s_);                                                                            \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_ ? s_ : "unknown CUDA error");            \
            goto fail;                                                                                             \
        }                                                                                                          \
    } while (0)

typedef struct opts {
    const char *records, *backend;
    int trials, tune;
    cut_conv conv;
} opts;

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){.records = "example_records", .backend = "cuda", .trials = 64, .tune = 1,
                .conv = {1, 34, 34, 256, 128, 3, 3, 1, 1}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        cut_err e = {{0}};
        if (!strcmp(a, "--no-tune")) {
            o->tune = 0;
        } else if (!strcmp(a, "--records") && v) {
            o->records = argv[++i];
        } else if (!strcmp(a, "--backend") && v && (!strcmp(v, "cuda") || !strcmp(v, "emu"))) {
            o->backend = argv[++i];
        } else if (!strcmp(a, "--trials") && v && atoi(v) > 0) {
            o->trials = atoi(argv[++i]);
        } else if (!strcmp(a, "--conv") && v) {
            if (cut_conv_parse(argv[++i], &o->conv, &e) != 0) {
                fprintf(stderr, "tune_lookup_launch: --conv: %s\n", e.msg);
                return -1;
            }
        } else {
            fprintf(stderr, "usage: %s [--records DIR] [--trials N] [--conv N,H,W,CO,CI,KH,KW,S,P] [--no-tune] "
                            "[--backend cuda|emu]\n",
                    argv[0]);
            return -1;
        }
    }
    return 0;
}

/* Step 1: tune the shape as case 1 of the records folder. */
static int tune(const opts *o, const cut_gpu_info *gpu, const char *cache)
{
    cut_err e = {{0}};
    cut_timing tm;
    cut_timing_default(&tm);
    tm.min_total_ms = 10;
    cut_tune_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.records_dir = o->records;
    cfg.trials = o->trials;
    cfg.batch = 16;
    cfg.seed = 1;
    cut_compile_opts_default(&cfg.copts);
    cut_runner *r;
    if (gpu) {
        cut_gpu_limits(gpu, &cfg.limits);
        cfg.use_nvrtc = 1;
        cfg.copts.sm_major = gpu->sm_major;
        cfg.copts.sm_minor = gpu->sm_minor;
        cfg.copts.cache_dir = cache;
        r = cut_runner_gpu_new(gpu->index, NULL, &tm, &e);
    } else {
        cut_devlimits_sm90(&cfg.limits);
        r = cut_runner_emu_new(cache, &tm, &e);
    }
    if (!r) {
        fprintf(stderr, "tune: %s\n", e.msg);
        return -1;
    }
    cut_tune_stats st;
    const int rc = cut_tune_case(&cfg, r, &o->conv, 1, &st, &e);
    cut_runner_free(r);
    if (rc != 0) {
        fprintf(stderr, "tune: %s\n", e.msg);
        return -1;
    }
    printf("1. tuned: %d trials in the log (%d new, %d failed) in %.1f s; best %.4f ms\n", st.trials_total,
           st.trials_new, st.failures_new, st.seconds, st.best_ms);
    return 0;
}

/* Median of n floats (sorts them). */
static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Step 4: launch the compiled kernel on fresh inputs, check it, time it. */
static int launch(const cut_lookup_kernel *k, const cut_compiled *bin, const cut_conv *c)
{
    const size_t ni = (size_t)c->n * c->ci * c->h * c->w, nw = (size_t)c->co * c->ci * c->kh * c->kw;
    const size_t no = cut_conv_out_elems(c);
    float *in = malloc(ni * sizeof *in), *w = malloc(nw * sizeof *w), *out = malloc(no * sizeof *out);
    double *ref = malloc(no * sizeof *ref);
    CUcontext ctx = NULL;
    CUmodule mod = NULL;
    CUdeviceptr din = 0, dw = 0, dout = 0, dws = 0;
    CUevent t0 = NULL, t1 = NULL;
    int rc = -1;
    if (!in || !w || !out || !ref)
        goto fail;
    cut_fill_uniform(in, ni, 42);
    cut_fill_uniform(w, nw, 43);
    cut_conv_reference(c, in, w, ref);
    CUdevice dev;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGet(&dev, 0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuModuleLoadData(&mod, bin->cubin));
    CUfunction f;
    CHECK_CU(cuModuleGetFunction(&f, mod, k->ks.entry));
    if (k->ks.smem_dynamic > 48 * 1024)
        CHECK_CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)k->ks.smem_dynamic));
    CHECK_CU(cuMemAlloc(&din, ni * sizeof(float)));
    CHECK_CU(cuMemAlloc(&dw, nw * sizeof(float)));
    CHECK_CU(cuMemAlloc(&dout, no * sizeof(float)));
    CHECK_CU(cuMemcpyHtoD(din, in, ni * sizeof(float)));
    CHECK_CU(cuMemcpyHtoD(dw, w, nw * sizeof(float)));
    CHECK_CU(cuMemsetD8(dout, 0xff, no * sizeof(float))); /* NaN: an output never written cannot pass */
    /* the op's three pointers, then a split-K kernel's partial sums and tile counters (zeroed once) */
    const size_t ws_bytes = k->ws_partial_floats * sizeof(float) + k->ws_counters * sizeof(unsigned);
    CUdeviceptr dcnt = 0;
    void *args[5] = {&din, &dw, &dout, &dws, &dcnt};
    if (ws_bytes) {
        CHECK_CU(cuMemAlloc(&dws, ws_bytes));
        CHECK_CU(cuMemsetD8(dws, 0, ws_bytes));
        dcnt = dws + k->ws_partial_floats * sizeof(float);
    }
    const unsigned *g = k->ks.grid, *b = k->ks.block;
    CHECK_CU(cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], k->ks.smem_dynamic, NULL, args, NULL));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemcpyDtoH(out, dout, no * sizeof(float)));
    double atol, rtol, maxe = 0;
    cut_conv_tolerance_scaled(c, k->ks.tol_scale, &atol, &rtol);
    size_t bad = 0;
    for (size_t i = 0; i < no; i++) {
        const double err = fabs((double)out[i] - ref[i]);
        if (!(err <= atol + rtol * fabs(ref[i])))
            bad++;
        if (isfinite(err) && err > maxe)
            maxe = err;
    }
    printf("4. launched grid (%u,%u,%u) x block (%u,%u,%u), %u B dynamic shared memory%s: %zu of %zu outputs "
           "outside atol %.2g + rtol %.2g (max |err| %.3g): %s\n",
           g[0], g[1], g[2], b[0], b[1], b[2], k->ks.smem_dynamic, ws_bytes ? ", split-K workspace" : "", bad, no, atol,
           rtol, maxe, bad ? "WRONG" : "correct");
    if (bad)
        goto fail;
    float ms[20];
    CHECK_CU(cuEventCreate(&t0, CU_EVENT_DEFAULT));
    CHECK_CU(cuEventCreate(&t1, CU_EVENT_DEFAULT));
    for (int i = 0; i < 23; i++) {
        CHECK_CU(cuEventRecord(t0, NULL));
        CHECK_CU(cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], k->ks.smem_dynamic, NULL, args, NULL));
        CHECK_CU(cuEventRecord(t1, NULL));
        CHECK_CU(cuEventSynchronize(t1));
        if (i >= 3) /* after 3 warm-up launches */
            CHECK_CU(cuEventElapsedTime(&ms[i - 3], t0, t1));
    }
    qsort(ms, 20, sizeof ms[0], cmp_float);
    printf("   timed: median %.4f ms over 20 launches (recorded while tuning: %.4f ms, L2 flushed there)\n",
           0.5 * (ms[9] + ms[10]), k->median_ms);
    rc = 0;
fail:
    if (t0)
        cuEventDestroy(t0);
    if (t1)
        cuEventDestroy(t1);
    if (din)
        cuMemFree(din);
    if (dw)
        cuMemFree(dw);
    if (dout)
        cuMemFree(dout);
    if (dws)
        cuMemFree(dws);
    if (mod)
        cuModuleUnload(mod);
    if (ctx)
        cuDevicePrimaryCtxRelease(0);
    free(in);
    free(w);
    free(out);
    free(ref);
    return rc;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o) != 0)
        return 2;
    cut_err e = {{0}};
    const int emu = !strcmp(o.backend, "emu");
    cut_gpu_info gpu;
    memset(&gpu, 0, sizeof gpu);
    if (!emu) {
        const int n = cut_gpu_init(&e);
        if (n <= 0 || cut_gpu_query(0, &gpu, &e) != 0) {
            fprintf(stderr, "no usable GPU: %s\n(--backend emu runs the tune and look-up steps on the emulator)\n",
                    n == 0 ? "no device found" : e.msg);
            return 1;
        }
        printf("GPU 0: %s (sm_%d%d)\n", gpu.name, gpu.sm_major, gpu.sm_minor);
    }
    char cache[1200];
    snprintf(cache, sizeof cache, "%s/.cache", o.records);
    if (cut_mkdirs(cache, &e) != 0) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    if (o.tune && tune(&o, emu ? NULL : &gpu, cache) != 0)
        return 1;

    /* 2. look up, as the program would at run time */
    cut_lookup_query q = {.records_dir = o.records, .gpu = emu ? NULL : gpu.name, .backend = o.backend};
    cut_lookup_kernel k;
    int rc = cut_lookup_conv(&q, &o.conv, "example_conv", &k, &e);
    if (rc != CUT_LOOKUP_FOUND) {
        fprintf(stderr, "look-up: %s\n", e.msg);
        cut_lookup_kernel_free(&k);
        return 1;
    }
    printf("2. looked up: %s, %.4f ms (%.1f GFLOP/s) as recorded, the best of %d valid records (%s line %d)\n",
           k.sched, k.median_ms, k.gflops, k.candidates, k.file, k.line);
    cut_conv never = o.conv;
    never.co += 1; /* a shape nobody tuned */
    cut_lookup_kernel none;
    cut_err why = {{0}};
    if (cut_lookup_conv(&q, &never, NULL, &none, &why) == CUT_LOOKUP_NONE)
        printf("   and for a shape never tuned: %s\n", why.msg);
    cut_lookup_kernel_free(&none);

    /* 3. compile for this GPU */
    cut_compile_opts co;
    cut_compile_opts_default(&co);
    if (!emu) {
        co.sm_major = gpu.sm_major;
        co.sm_minor = gpu.sm_minor;
    }
    cut_compile_opts_for_kernel(&co, k.ks.arch_a, &co);
    cut_compiled bin;
    if (cut_compile_one(k.ks.src, "example_conv.cu", &co, &bin, &e) != 0 || !bin.ok) {
        fprintf(stderr, "compile: %s\n", bin.log ? bin.log : e.msg);
        cut_compiled_free(&bin);
        cut_lookup_kernel_free(&k);
        return 1;
    }
    printf("3. compiled with NVRTC for sm_%d%d%s: %zu-byte cubin, %d registers\n", co.sm_major, co.sm_minor,
           co.arch_suffix_a ? "a" : "", bin.cubin_size, bin.regs);

    rc = 0;
    if (emu)
        printf("4. not launched: no GPU here (the emulator's records chose the kernel)\n");
    else
        rc = launch(&k, &bin, &o.conv) == 0 ? 0 : 1;
    cut_compiled_free(&bin);
    cut_lookup_kernel_free(&k);
    return rc;
}
