/* Tests of the NVRTC compile component: cubins for sm_90/sm_90a, the ptxas report, compile errors as values,
 * batches on the thread pool, the disk cache, and the pool itself. Needs NVRTC, no GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/cache.h"
#include "compile/pool.h"
#include "cutune/compile.h"
#include "cutune/util.h"

static const char GOOD_SRC[] =
    "extern \"C\" __global__ void cut_good(float *x)\n"
    "{\n"
    "    __shared__ float s[256];\n"
    "    s[threadIdx.x] = x[threadIdx.x];\n"
    "    __syncthreads();\n"
    "    x[threadIdx.x] = s[255 - threadIdx.x] * 2.0f;\n"
    "}\n";

/* 32 live values each used against all others: far more than 24 registers (ptxas's floor for -maxrregcount). */
static const char HEAVY_SRC[] =
    "extern \"C\" __global__ void cut_heavy(float *x)\n"
    "{\n"
    "    float a[32];\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < 32; i++) a[i] = x[threadIdx.x + i * 128];\n"
    "    float s = 0.0f;\n"
    "#pragma unroll\n"
    "    for (int r = 1; r < 8; r++)\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < 32; i++) s += a[i] * a[(i + r) % 32];\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < 32; i++) x[threadIdx.x + i * 128] = a[i] * s;\n"
    "}\n";

static const char SYNTAX_ERROR_SRC[] = "extern \"C\" __global__ void cut_bad(float *x) { x[0] = ; }\n";

/* setmaxnreg exists only on sm_90a (and later 'a' targets). */
static const char SM90A_SRC[] =
    "extern \"C\" __global__ void cut_regs(float *x)\n"
    "{\n"
    "    asm volatile(\"setmaxnreg.inc.sync.aligned.u32 240;\");\n"
    "    x[threadIdx.x] = 1.0f;\n"
    "}\n";

static int is_elf(const cut_compiled *c)
{
    return c->cubin && c->cubin_size > 4 && memcmp(c->cubin, "\x7f" "ELF", 4) == 0;
}

/* 1 if the bytes of s occur in buf (memmem is a GNU extension). */
static int contains_bytes(const char *buf, size_t n, const char *s)
{
    size_t m = strlen(s);
    for (size_t i = 0; m <= n && i <= n - m; i++)
        if (memcmp(buf + i, s, m) == 0)
            return 1;
    return 0;
}

static cut_compile_opts sm90_opts(void)
{
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    return o;
}

/* A fresh folder under $CUTUNE_TEST_TMP (or /tmp), its path into buf. */
static void make_tmp_dir(char *buf, size_t n)
{
    const char *base = getenv("CUTUNE_TEST_TMP");
    if (!base || !*base)
        base = "/tmp";
    cut_err e;
    assert_int_equal(cut_mkdirs(base, &e), 0);
    snprintf(buf, n, "%s/test_compile.XXXXXX", base);
    assert_non_null(mkdtemp(buf));
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char path[4096];
    for (struct dirent *de; (de = readdir(d));) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* ---- version, defaults, setup errors -------------------------------------------------------------------------- */

static void test_version(void **state)
{
    (void)state;
    cut_err e = {{0}};
    int major = 0, minor = 0;
    assert_int_equal(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
    int v = cut_nvrtc_version(&e);
    assert_int_equal(v, major * 1000 + minor * 10);
    assert_true(v >= 12000);
}

/* A kernel with arch_a compiles for sm_90a: the options say so, and the cubin's key differs from sm_90's. */
static void test_opts_for_kernel(void **state)
{
    (void)state;
    cut_err e = {{0}};
    const cut_compile_opts base = sm90_opts();
    cut_compile_opts o;
    cut_compile_opts_for_kernel(&base, 0, &o);
    assert_memory_equal(&o, &base, sizeof o);
    cut_compile_opts_for_kernel(&base, 1, &o);
    assert_int_equal(o.arch_suffix_a, 1);
    assert_int_equal(o.sm_major, base.sm_major);
    cut_compiled plain, arch_a;
    assert_int_equal(cut_compile_one(GOOD_SRC, NULL, &base, &plain, &e), 0);
    assert_int_equal(cut_compile_one(GOOD_SRC, NULL, &o, &arch_a, &e), 0);
    assert_true(plain.ok && arch_a.ok);
    assert_true(plain.key != arch_a.key);
    cut_compiled_free(&plain);
    cut_compiled_free(&arch_a);
}

static void test_setup_errors(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_compiled c;
    cut_compile_opts o = sm90_opts();

    o.sm_major = 0; /* not an architecture */
    assert_int_equal(cut_compile_one(GOOD_SRC, NULL, &o, &c, &e), -1);
    assert_non_null(strstr(e.msg, "architecture"));
    assert_non_null(c.log);
    cut_compiled_free(&c);

    o = sm90_opts();
    o.extra_opts = "--no-such-nvrtc-flag";
    assert_int_equal(cut_compile_one(GOOD_SRC, NULL, &o, &c, &e), -1);
    assert_non_null(strstr(e.msg, "--no-such-nvrtc-flag"));
    assert_int_equal(c.ok, 0);
    assert_null(c.cubin);
    cut_compiled_free(&c);

    /* A cache "folder" that is a regular file. */
    char dir[4096], file[4200];
    make_tmp_dir(dir, sizeof dir);
    snprintf(file, sizeof file, "%s/plainfile", dir);
    assert_int_equal(cut_write_file_atomic(file, "x", 1, &e), 0);
    o = sm90_opts();
    o.cache_dir = file;
    assert_int_equal(cut_compile_one(GOOD_SRC, NULL, &o, &c, &e), -1);
    assert_non_null(strstr(e.msg, "cache"));
    cut_compiled_free(&c);
    remove_dir(dir);

    cut_compiled_free(NULL);
    cut_compiled zero;
    memset(&zero, 0, sizeof zero);
    cut_compiled_free(&zero);
}

/* ---- single compiles ------------------------------------------------------------------------------------------ */

static void test_good_kernel_sm90(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_compile_opts o = sm90_opts();
    cut_compiled c;
    assert_int_equal(cut_compile_one(GOOD_SRC, "good.cu", &o, &c, &e), 0);
    assert_int_equal(c.ok, 1);
    assert_true(is_elf(&c));
    assert_true(c.regs > 0 && c.regs <= 255);
    assert_int_equal(c.spill_stores, 0);
    assert_int_equal(c.spill_loads, 0);
    assert_int_equal(c.stack_frame, 0);
    assert_int_equal(c.smem_static, 256 * 4);
    assert_true(c.compile_ms > 0);
    assert_int_equal(c.cache_hit, 0);
    assert_non_null(strstr(c.log, "sm_90"));
    assert_non_null(strstr(c.log, "cut_good")); /* the ptxas report names the entry */
    assert_true(contains_bytes(c.cubin, c.cubin_size, "cut_good"));
    assert_true(c.key != 0);
    cut_compiled_free(&c);
}

/* The cubin's own register count (EIATTR_REGCOUNT) is what the ptxas report says, for a light and a heavy kernel
 * and under -maxrregcount; anything that is not a cubin, or a cubin cut short anywhere, gives -1 or a count, never a
 * read outside the image (ASan checks that). */
static void test_cubin_regs(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_compile_opts o = sm90_opts();
    const char *srcs[] = {GOOD_SRC, HEAVY_SRC, HEAVY_SRC};
    for (int i = 0; i < 3; i++) {
        o.extra_opts = i == 2 ? "-maxrregcount=16" : NULL;
        cut_compiled c;
        assert_int_equal(cut_compile_one(srcs[i], NULL, &o, &c, &e), 0);
        cut_compiled from_log = c;
        cut_parse_ptxas_info(c.log, &from_log);
        assert_true(from_log.regs > 0);
        assert_int_equal(cut_cubin_regs(c.cubin, c.cubin_size), from_log.regs);
        assert_int_equal(c.regs, from_log.regs);
        for (size_t cut = 0; cut < c.cubin_size; cut += 1 + cut / 8) {
            int r = cut_cubin_regs(c.cubin, cut);
            assert_true(r == -1 || r == from_log.regs);
        }
        cut_compiled_free(&c);
    }
    assert_int_equal(cut_cubin_regs(NULL, 0), -1);
    assert_int_equal(cut_cubin_regs("not an elf image at all, long enough to pass the size check ........", 70), -1);
}

/* The writable module variables of a cubin (the protocol resets them between launches, issue 15): a plain and a
 * static __device__ array and an initialised scalar are found with their sizes; a __constant__ and a kernel without
 * any are not; a truncated image never yields more than the whole one. */
typedef struct globals_seen {
    int n;
    char names[8][64];
    unsigned long long bytes[8];
} globals_seen;

static void note_global(void *ctx, const char *name, unsigned long long bytes)
{
    globals_seen *g = ctx;
    if (g->n < 8) {
        snprintf(g->names[g->n], sizeof g->names[g->n], "%s", name);
        g->bytes[g->n++] = bytes;
    }
}

static unsigned long long global_bytes(const globals_seen *g, const char *part)
{
    for (int i = 0; i < g->n; i++)
        if (strstr(g->names[i], part))
            return g->bytes[i];
    return 0;
}

static void test_cubin_globals(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_compile_opts o = sm90_opts();
    static const char *src =
        "__device__ int done_flags[16];\n"
        "static __device__ float workspace[8];\n"
        "__device__ unsigned long long counter = 5;\n"
        "__constant__ float coeffs[4];\n"
        "extern \"C\" __global__ void k(float *y) {\n"
        "  int i = threadIdx.x;\n"
        "  if (i < 8) { workspace[i] = y[i] * coeffs[i % 4]; y[i] = workspace[7 - i]; }\n"
        "  if (i == 0) { done_flags[0] = 1; counter++; }\n"
        "}\n";
    cut_compiled c;
    assert_int_equal(cut_compile_one(src, NULL, &o, &c, &e), 0);
    globals_seen g = {0};
    assert_int_equal(cut_cubin_globals(c.cubin, c.cubin_size, note_global, &g), 3);
    assert_int_equal(g.n, 3);
    assert_true(global_bytes(&g, "done_flags") == 64);
    assert_true(global_bytes(&g, "workspace") == 32);
    assert_true(global_bytes(&g, "counter") == 8);
    assert_true(global_bytes(&g, "coeffs") == 0); /* read-only: not state */
    for (size_t cut = 0; cut < c.cubin_size; cut += 1 + cut / 8) {
        int n = cut_cubin_globals(c.cubin, cut, NULL, NULL);
        assert_true(n >= -1 && n <= 3);
    }
    cut_compiled_free(&c);
    assert_int_equal(cut_compile_one(GOOD_SRC, NULL, &o, &c, &e), 0);
    assert_int_equal(cut_cubin_globals(c.cubin, c.cubin_size, NULL, NULL), 0);
    cut_compiled_free(&c);
    assert_int_equal(cut_cubin_globals("not an elf image at all, long enough to pass the size check ........", 70,
                                       NULL, NULL), -1);
}

static void test_spills_reported(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_compile_opts o = sm90_opts();
    cut_compiled free_regs, tight;

    assert_int_equal(cut_compile_one(HEAVY_SRC, NULL, &o, &free_regs, &e), 0);
    assert_int_equal(free_regs.ok, 1);
    assert_int_equal(free_regs.spill_stores, 0);
    assert_true(free_regs.regs > 32);

    o.extra_opts = "  -maxrregcount=16   -DUNUSED_MACRO=1 "; /* extra spaces are separators only */
    assert_int_equal(cut_compile_one(HEAVY_SRC, NULL, &o, &tight, &e), 0);
    assert_int_equal(tight.ok, 1);
    assert_true(is_elf(&tight));
    assert_true(tight.regs > 0 && tight.regs <= 24);
    assert_true(tight.spill_stores > 0);
    assert_true(tight.spill_loads > 0);
    assert_true(tight.stack_frame >= tight.spill_stores / 2);
    assert_true(tight.key != free_regs.key);
    cut_compiled_free(&free_regs);
    cut_compiled_free(&tight);
}

static void test_syntax_error_is_a_value(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_compile_opts o = sm90_opts();
    cut_compiled c;
    assert_int_equal(cut_compile_one(SYNTAX_ERROR_SRC, "bad.cu", &o, &c, &e), 0);
    assert_int_equal(c.ok, 0);
    assert_null(c.cubin);
    assert_int_equal(c.cubin_size, 0);
    assert_non_null(c.log);
    assert_non_null(strstr(c.log, "error"));
    assert_non_null(strstr(c.log, "expected an expression"));
    assert_non_null(strstr(c.log, "bad.cu")); /* the program name is used in messages */
    assert_int_equal(c.regs, -1);
    assert_int_equal(c.spill_stores, -1);
    cut_compiled_free(&c);
}

static void test_sm90a_only_instruction(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_compile_opts o = sm90_opts();
    cut_compiled plain, a;
    assert_int_equal(cut_compile_one(SM90A_SRC, NULL, &o, &plain, &e), 0);
    assert_int_equal(plain.ok, 0);
    assert_non_null(strstr(plain.log, "setmaxnreg"));

    o.arch_suffix_a = 1;
    assert_int_equal(cut_compile_one(SM90A_SRC, NULL, &o, &a, &e), 0);
    assert_int_equal(a.ok, 1);
    assert_true(is_elf(&a));
    assert_non_null(strstr(a.log, "sm_90a"));
    assert_true(a.regs > 0);
    cut_compiled_free(&plain);
    cut_compiled_free(&a);
}

/* ---- ptxas report parser on canned text ----------------------------------------------------------------------- */

static void test_parse_ptxas_nvrtc13(void **state)
{
    (void)state;
    cut_compiled c;
    const char *log13 =
        "ptxas warning : For profile sm_90 adjusting per thread register count of 16 to lower bound of 24\n"
        "ptxas info    : Overriding maximum register limit 256 for 'k' with  24 of maxrregcount option\n"
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
        "ptxas info    : Function properties for k\n"
        "ptxas         .     6168 bytes stack frame, 6180 bytes spill stores, 12648 bytes spill loads\n"
        "ptxas info    : Used 24 registers, used 0 barriers, 6168 bytes cumulative stack size\n"
        "ptxas info    : Compile time = 569.989 ms\n";
    cut_parse_ptxas_info(log13, &c);
    assert_int_equal(c.regs, 24);
    assert_int_equal(c.stack_frame, 6168);
    assert_int_equal(c.spill_stores, 6180);
    assert_int_equal(c.spill_loads, 12648);
    assert_int_equal(c.smem_static, 0); /* no "bytes smem": none used */

    /* Two entries and a non-inlined callee: the largest of each field. */
    const char *multi =
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function 'k2' for 'sm_90'\n"
        "ptxas info    : Function properties for k2\n"
        "ptxas         .     128 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 72 registers, used 0 barriers, 128 bytes cumulative stack size\n"
        "ptxas info    : Function properties for _Z1fPfi\n"
        "ptxas         .     0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
        "ptxas info    : Function properties for k\n"
        "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 10 registers, used 1 barriers, 1024 bytes smem\n"
        "ptxas info    : Compile time = 2.786 ms";
    cut_parse_ptxas_info(multi, &c);
    assert_int_equal(c.regs, 72);
    assert_int_equal(c.stack_frame, 128);
    assert_int_equal(c.spill_stores, 8);
    assert_int_equal(c.spill_loads, 4);
    assert_int_equal(c.smem_static, 1024);
}

static void test_parse_ptxas_older_and_empty(void **state)
{
    (void)state;
    cut_compiled c;
    const char *old =
        "ptxas info    : Compiling entry function '_Z4convPKfS0_Pf' for 'sm_80'\n"
        "ptxas info    : Function properties for _Z4convPKfS0_Pf\n"
        "    16 bytes stack frame, 12 bytes spill stores, 20 bytes spill loads\n"
        "ptxas info    : Used 40 registers, 4096 bytes smem, 368 bytes cmem[0]\n";
    cut_parse_ptxas_info(old, &c);
    assert_int_equal(c.regs, 40);
    assert_int_equal(c.smem_static, 4096);
    assert_int_equal(c.stack_frame, 16);
    assert_int_equal(c.spill_stores, 12);
    assert_int_equal(c.spill_loads, 20);

    cut_parse_ptxas_info("", &c);
    assert_int_equal(c.regs, -1);
    assert_int_equal(c.spill_stores, -1);
    assert_int_equal(c.spill_loads, -1);
    assert_int_equal(c.smem_static, -1);
    assert_int_equal(c.stack_frame, -1);
    cut_parse_ptxas_info(NULL, &c);
    assert_int_equal(c.regs, -1);
    /* A compile error mentioning "Used" words is not a register report. */
    cut_parse_ptxas_info("k.cu(3): error: Used before set\n", &c);
    assert_int_equal(c.regs, -1);
}

/* ---- batches -------------------------------------------------------------------------------------------------- */

#define NBATCH 16
#define BAD_INDEX 5

/* Kernels of different sizes (so they finish out of order), each with its own entry name; one does not compile. */
static char **batch_sources(void)
{
    char **srcs = cut_xcalloc(NBATCH, sizeof *srcs);
    for (int i = 0; i < NBATCH; i++) {
        cut_buf b;
        cut_buf_init(&b);
        cut_buf_printf(&b,
                       "extern \"C\" __global__ void kern_%03d(float *x)\n"
                       "{\n"
                       "    float v = x[threadIdx.x];\n"
                       "#pragma unroll\n"
                       "    for (int r = 0; r < %d; r++) v = v * %d.5f + x[threadIdx.x + r * 32];\n"
                       "    x[threadIdx.x] = v%s;\n"
                       "}\n",
                       i, 1 + ((i * 7) % NBATCH) * 24, i, i == BAD_INDEX ? " +" : "");
        srcs[i] = b.data;
    }
    return srcs;
}

static void free_sources(char **srcs)
{
    for (int i = 0; i < NBATCH; i++)
        free(srcs[i]);
    free(srcs);
}

static void test_batch_matches_one_by_one(void **state)
{
    (void)state;
    cut_err e = {{0}};
    char **srcs = batch_sources();
    cut_compile_opts o = sm90_opts();
    o.nthreads = 2;
    cut_compiled batch[NBATCH], one[NBATCH];
    assert_int_equal(cut_compile_batch((const char *const *)srcs, NBATCH, &o, batch, &e), 0);
    for (int i = 0; i < NBATCH; i++) {
        assert_int_equal(cut_compile_one(srcs[i], NULL, &o, &one[i], &e), 0);
        assert_int_equal(batch[i].ok, i != BAD_INDEX);
        assert_int_equal(one[i].ok, batch[i].ok);
        assert_true(batch[i].key == one[i].key);
        assert_int_equal(batch[i].regs, one[i].regs);
        assert_int_equal(batch[i].spill_stores, one[i].spill_stores);
        assert_int_equal(batch[i].cache_hit, 0);
        assert_non_null(batch[i].log);
        if (i == BAD_INDEX) {
            assert_null(batch[i].cubin);
            assert_non_null(strstr(batch[i].log, "error"));
            continue;
        }
        char entry[16];
        snprintf(entry, sizeof entry, "kern_%03d", i);
        assert_true(is_elf(&batch[i]));
        assert_true(contains_bytes(batch[i].cubin, batch[i].cubin_size, entry));
        assert_int_equal(batch[i].cubin_size, one[i].cubin_size);
        assert_memory_equal(batch[i].cubin, one[i].cubin, one[i].cubin_size);
        assert_non_null(strstr(batch[i].log, entry));
        assert_true(batch[i].compile_ms > 0);
    }
    for (int i = 0; i < NBATCH; i++) {
        cut_compiled_free(&batch[i]);
        cut_compiled_free(&one[i]);
    }
    free_sources(srcs);
}

static void test_batch_setup_error_names_source(void **state)
{
    (void)state;
    cut_err e = {{0}};
    const char *srcs[3] = {GOOD_SRC, GOOD_SRC, GOOD_SRC};
    cut_compile_opts o = sm90_opts();
    o.nthreads = 2;
    o.extra_opts = "--definitely-not-an-option";
    cut_compiled out[3];
    assert_int_equal(cut_compile_batch(srcs, 3, &o, out, &e), -1);
    assert_non_null(strstr(e.msg, "source 0 of 3"));
    for (int i = 0; i < 3; i++) {
        assert_int_equal(out[i].ok, 0);
        cut_compiled_free(&out[i]);
    }
    assert_int_equal(cut_compile_batch(srcs, 0, &o, out, &e), 0);
}

/* ---- disk cache ----------------------------------------------------------------------------------------------- */

static void cache_paths(const char *dir, uint64_t key, char *cubin, char *json, size_t n)
{
    cut_err e;
    assert_int_equal(cut_cache_path(dir, key, ".cubin", cubin, n, &e), 0);
    assert_int_equal(cut_cache_path(dir, key, ".json", json, n, &e), 0);
}

static void test_cache(void **state)
{
    (void)state;
    cut_err e = {{0}};
    char dir[4096], cpath[4200], jpath[4200];
    make_tmp_dir(dir, sizeof dir);
    cut_compile_opts o = sm90_opts();
    o.cache_dir = dir;

    cut_compiled first, again, other_opt, other_arch, after_trunc, after_rewrite, after_json, failed;
    assert_int_equal(cut_compile_one(GOOD_SRC, NULL, &o, &first, &e), 0);
    assert_int_equal(first.ok, 1);
    assert_int_equal(first.cache_hit, 0);
    assert_true(first.compile_ms > 0);
    cache_paths(dir, first.key, cpath, jpath, sizeof cpath);
    assert_true(cut_path_exists(cpath));
    assert_true(cut_path_exists(jpath));
    assert_int_equal(count_files(dir), 2);

    /* Second compile: a hit with the same bytes and report. */
    assert_int_equal(cut_compile_one(GOOD_SRC, NULL, &o, &again, &e), 0);
    assert_int_equal(again.ok, 1);
    assert_int_equal(again.cache_hit, 1);
    assert_true(again.compile_ms == 0.0);
    assert_true(again.key == first.key);
    assert_int_equal(again.cubin_size, first.cubin_size);
    assert_memory_equal(again.cubin, first.cubin, first.cubin_size);
    assert_int_equal(again.regs, first.regs);
    assert_int_equal(again.smem_static, first.smem_static);
    assert_int_equal(again.spill_stores, first.spill_stores);
    assert_int_equal(again.stack_frame, first.stack_frame);
    assert_string_equal(again.log, first.log);

    /* An entry stored with an unknown register count (a report that lacked the line, before the cubin was read):
     * the hit still gives the cubin's count. */
    {
        char *j = NULL;
        size_t jl = 0;
        char needle[32], *at;
        assert_int_equal(cut_read_file(jpath, &j, &jl, &e), 0);
        snprintf(needle, sizeof needle, "\"regs\":\t%d", first.regs);
        if (!(at = strstr(j, needle))) {
            snprintf(needle, sizeof needle, "\"regs\":%d", first.regs);
            at = strstr(j, needle);
        }
        assert_non_null(at);
        cut_buf nb;
        cut_buf_init(&nb);
        cut_buf_append(&nb, j, (size_t)(at - j));
        cut_buf_printf(&nb, "\"regs\":-1");
        cut_buf_printf(&nb, "%s", at + strlen(needle));
        assert_int_equal(cut_write_file_atomic(jpath, nb.data, nb.len, &e), 0);
        cut_buf_free(&nb);
        free(j);
        cut_compiled minus;
        assert_int_equal(cut_compile_one(GOOD_SRC, NULL, &o, &minus, &e), 0);
        assert_int_equal(minus.cache_hit, 1);
        assert_int_equal(minus.regs, first.regs);
        cut_compiled_free(&minus);
    }

    /* A different option or architecture: a miss under another key. */
    o.extra_opts = "-DVARIANT=1";
    assert_int_equal(cut_compile_one(GOOD_SRC, NULL, &o, &other_opt, &e), 0);
    assert_int_equal(other_opt.cache_hit, 0);
    assert_true(other_opt.key != first.key);
    o.extra_opts = NULL;
    o.arch_suffix_a = 1;
    assert_int_equal(cut_compile_one(GOOD_SRC, NULL, &o, &other_arch, &e), 0);
    assert_int_equal(other_arch.cache_hit, 0);
    assert_int_equal(other_arch.ok, 1);
    assert_true(other_arch.key != first.key && other_arch.key != other_opt.key);
    o.arch_suffix_a = 0;
    assert_int_equal(count_files(dir), 6);

    /* A truncated cubin: a miss, recompiled and rewritten, then a hit again. */
    assert_int_equal(truncate(cpath, (off_t)(first.cubin_size / 2)), 0);
    assert_int_equal(cut_compile_one(GOOD_SRC, NULL, &o, &after_trunc, &e), 0);
    assert_int_equal(after_trunc.ok, 1);
    assert_int_equal(after_trunc.cache_hit, 0);
    assert_memory_equal(after_trunc.cubin, first.cubin, first.cubin_size);
    char *disk = NULL;
    size_t disk_len = 0;
    assert_int_equal(cut_read_file(cpath, &disk, &disk_len, &e), 0);
    assert_int_equal(disk_len, first.cubin_size);
    assert_memory_equal(disk, first.cubin, disk_len);
    free(disk);
    assert_int_equal(cut_compile_one(GOOD_SRC, NULL, &o, &after_rewrite, &e), 0);
    assert_int_equal(after_rewrite.cache_hit, 1);

    /* A truncated (unparseable) sidecar: a miss as well. */
    char *json = NULL;
    size_t json_len = 0;
    assert_int_equal(cut_read_file(jpath, &json, &json_len, &e), 0);
    assert_int_equal(cut_write_file_atomic(jpath, json, json_len / 2, &e), 0);
    assert_int_equal(cut_compile_one(GOOD_SRC, NULL, &o, &after_json, &e), 0);
    assert_int_equal(after_json.ok, 1);
    assert_int_equal(after_json.cache_hit, 0);
    free(json);

    /* A cubin replaced by other bytes of the same length (bit rot, foreign writer): its hash no longer matches. */
    char *garbled = cut_xmalloc(first.cubin_size);
    memcpy(garbled, first.cubin, first.cubin_size);
    garbled[first.cubin_size - 1] ^= 0x5a;
    assert_int_equal(cut_write_file_atomic(cpath, garbled, first.cubin_size, &e), 0);
    free(garbled);
    assert_int_equal(cut_cache_load(dir, first.key, &after_json), 0);
    assert_int_equal(after_json.cache_hit, 0); /* untouched by a miss */

    /* Failed compiles are not cached. */
    int before = count_files(dir);
    assert_int_equal(cut_compile_one(SYNTAX_ERROR_SRC, NULL, &o, &failed, &e), 0);
    assert_int_equal(failed.ok, 0);
    assert_int_equal(count_files(dir), before);
    cut_compiled_free(&failed);
    assert_int_equal(cut_compile_one(SYNTAX_ERROR_SRC, NULL, &o, &failed, &e), 0);
    assert_int_equal(failed.cache_hit, 0);
    assert_int_equal(failed.ok, 0);

    cut_compiled *all[] = {&first, &again, &other_opt, &other_arch, &after_trunc, &after_rewrite, &after_json, &failed};
    for (size_t i = 0; i < CUT_ARRAY_LEN(all); i++)
        cut_compiled_free(all[i]);
    remove_dir(dir);
}

/* Threads of one batch compiling the same source into the same cache entry at once. */
static void test_cache_concurrent_same_key(void **state)
{
    (void)state;
    cut_err e = {{0}};
    char dir[4096];
    make_tmp_dir(dir, sizeof dir);
    cut_compile_opts o = sm90_opts();
    o.cache_dir = dir;
    o.nthreads = 2;
    enum { N = 6 };
    const char *srcs[N];
    for (int i = 0; i < N; i++)
        srcs[i] = GOOD_SRC;
    cut_compiled out[N], hit;
    assert_int_equal(cut_compile_batch(srcs, N, &o, out, &e), 0);
    for (int i = 0; i < N; i++) {
        assert_int_equal(out[i].ok, 1);
        assert_true(out[i].key == out[0].key);
        assert_int_equal(out[i].cubin_size, out[0].cubin_size);
        assert_memory_equal(out[i].cubin, out[0].cubin, out[0].cubin_size);
    }
    assert_int_equal(count_files(dir), 2); /* one entry, no temporary files left behind */
    assert_int_equal(cut_compile_one(GOOD_SRC, NULL, &o, &hit, &e), 0);
    assert_int_equal(hit.cache_hit, 1);
    assert_memory_equal(hit.cubin, out[0].cubin, out[0].cubin_size);
    for (int i = 0; i < N; i++)
        cut_compiled_free(&out[i]);
    cut_compiled_free(&hit);
    remove_dir(dir);
}

/* ---- thread pool ---------------------------------------------------------------------------------------------- */

typedef struct pool_ctx {
    long *slots;
    int *runs;
    pthread_mutex_t mu;
    int total;
} pool_ctx;

static void square_job(void *arg, int i)
{
    pool_ctx *c = arg;
    if (i % 97 == 0)
        usleep(2000); /* some jobs finish late */
    c->slots[i] = (long)i * i;
    pthread_mutex_lock(&c->mu);
    c->runs[i]++;
    c->total++;
    pthread_mutex_unlock(&c->mu);
}

static void test_pool(void **state)
{
    (void)state;
    cut_err e = {{0}};
    enum { N = 1000 };
    pool_ctx a = {cut_xcalloc(N, sizeof(long)), cut_xcalloc(N, sizeof(int)), PTHREAD_MUTEX_INITIALIZER, 0};
    pool_ctx b = {cut_xcalloc(N, sizeof(long)), cut_xcalloc(N, sizeof(int)), PTHREAD_MUTEX_INITIALIZER, 0};

    cut_pool *p = cut_pool_new(3, &e);
    assert_non_null(p);
    assert_int_equal(cut_pool_size(p), 3);
    /* Two batches queued before one wait, then the pool is reused. */
    cut_pool_submit(p, N, square_job, &a);
    cut_pool_submit(p, N / 2, square_job, &b);
    cut_pool_submit(p, 0, square_job, &b);
    cut_pool_wait(p);
    assert_int_equal(a.total, N);
    assert_int_equal(b.total, N / 2);
    for (int i = 0; i < N; i++) {
        assert_int_equal(a.runs[i], 1);
        assert_int_equal(a.slots[i], (long)i * i);
        assert_int_equal(b.runs[i], i < N / 2);
    }
    cut_pool_submit(p, N, square_job, &b);
    cut_pool_wait(p);
    assert_int_equal(b.total, N / 2 + N);
    cut_pool_wait(p); /* nothing outstanding: returns at once */
    /* Free with queued work: the work is finished first. */
    cut_pool_submit(p, N, square_job, &a);
    cut_pool_free(p);
    assert_int_equal(a.total, 2 * N);
    cut_pool_free(NULL);

    p = cut_pool_new(0, &e);
    assert_non_null(p);
    assert_int_equal(cut_pool_size(p), cut_pool_online_cpus());
    cut_pool_free(p);

    memset(a.runs, 0, N * sizeof(int));
    a.total = 0;
    assert_int_equal(cut_pool_run(4, N, square_job, &a, &e), 0);
    assert_int_equal(a.total, N);
    assert_int_equal(cut_pool_run(1, 10, square_job, &a, &e), 0);
    assert_int_equal(a.total, N + 10);
    assert_int_equal(cut_pool_run(4, 0, square_job, &a, &e), 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(a.runs[i], 1 + (i < 10));

    free(a.slots);
    free(a.runs);
    free(b.slots);
    free(b.runs);
}

int main(void)
{
    cut_err e = {{0}};
    if (cut_nvrtc_version(&e) < 0) {
        printf("skipping test_compile: %s\n", e.msg);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_setup_errors),
        cmocka_unit_test(test_opts_for_kernel),
        cmocka_unit_test(test_good_kernel_sm90),
        cmocka_unit_test(test_spills_reported),
        cmocka_unit_test(test_cubin_regs),
        cmocka_unit_test(test_cubin_globals),
        cmocka_unit_test(test_syntax_error_is_a_value),
        cmocka_unit_test(test_sm90a_only_instruction),
        cmocka_unit_test(test_parse_ptxas_nvrtc13),
        cmocka_unit_test(test_parse_ptxas_older_and_empty),
        cmocka_unit_test(test_batch_matches_one_by_one),
        cmocka_unit_test(test_batch_setup_error_names_source),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_cache_concurrent_same_key),
        cmocka_unit_test(test_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
