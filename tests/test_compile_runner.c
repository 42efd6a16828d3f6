/* The compile runner (cut_runner_compile_new, src/measure/compile_runner.c), compile only (the `compile` backend):
 * a generated conv kernel compiles for sm_90 and comes back as status "compiled" with its registers, spills and
 * compile time and no time at all; a compile error is the candidate's COMPILE_ERROR with the log's first line, and
 * the runner goes on with the next; a call that does not fit the work is its LAUNCH_ERROR; a compile whose process
 * dies is a COMPILE_ERROR that says so (the isolation the serving ranks of an MPI job rely on). The compile process
 * (cut_compile_isolated, an exec'd cutune-worker in its compile mode): the same cubin as cut_compile_one in this
 * process, the disk cache written by it, NVRTC's log for an error, the time limit (also with a helper that never reads
 * a request larger than a pipe holds), a helper that dies, one of another build, a helper whose parent is killed
 * (it dies too), no descriptor of ours in it, no helper found, and 32 compiles from 8 threads at once. Needs NVRTC and the build's cutune-worker ($CUTUNE_WORKER, as tests/CMakeLists.txt sets
 * it), no GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <pthread.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cutune/measure.h"
#include "cutune/space.h"
#include "cutune/util.h"
#include "measure/compile_child.h"
#include "testutil.h"

static const char SYNTAX_ERROR_SRC[] = "extern \"C\" __global__ void cut_conv2d(float *x) { x[0] = ; }\n";

/* NVRTC present: else the tests skip. */
static int setup(void **state)
{
    (void)state;
    cut_err e = {{0}};
    if (cut_nvrtc_version(&e) < 0) {
        printf("SKIP: %s\n", e.msg);
        exit(77);
    }
    return 0;
}

/* A compile-only runner for sm_90, without a disk cache, prepared with a small conv's work. */
static cut_runner *conv_runner(const cut_conv *c)
{
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    cut_err e = {{0}};
    cut_runner *r = cut_runner_compile_new(NULL, &o, 60, &e);
    assert_non_null(r);
    assert_true(cut_runner_compiles(r));
    assert_int_equal(cut_runner_prepare_conv(r, c, 7, &e), 0);
    const cut_measure_env *env = r->env(r);
    assert_string_equal(env->backend, "compile");
    assert_non_null(strstr(env->gpu_name, "sm_90"));
    return r;
}

/* A valid direct-convolution schedule's kernel for c. */
static void generated(const cut_conv *c, cut_kernel_src *ks)
{
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng rng;
    cut_rng_seed(&rng, 11);
    cut_sched s;
    cut_err e = {{0}};
    assert_int_equal(cut_sched_sample_valid(c, &d, cut_template_find("direct"), &rng, &s, 1000), 0);
    assert_int_equal(cut_codegen_conv(c, &s, ks, &e), 0);
}

static void test_compile_only(void **state)
{
    (void)state;
    const cut_conv c = {1, 8, 8, 8, 4, 3, 3, 1, 1};
    cut_runner *r = conv_runner(&c);
    cut_kernel_src ks[3];
    generated(&c, &ks[0]);
    ks[1] = ks[0];
    ks[1].src = (char *)SYNTAX_ERROR_SRC;
    ks[2] = ks[0];
    ks[2].block[0] = 2048; /* more threads than a block may have */
    cut_candidate cands[3] = {{&ks[0], NULL}, {&ks[1], NULL}, {&ks[2], NULL}};
    cut_result res[3];
    cut_err e = {{0}};
    assert_int_equal(cut_runner_measure(r, cands, 3, res, &e), 0);
    for (int i = 0; i < 3; i++)
        printf("candidate %d: %s %s regs %d spills %d+%d %.1f ms\n", i, cut_status_name(res[i].status), res[i].error,
               res[i].comp.regs, res[i].comp.spill_stores, res[i].comp.spill_loads, res[i].comp.compile_ms);
    /* compiled, not run: its compile's numbers and no time */
    assert_int_equal(res[0].status, CUT_ST_COMPILED);
    assert_true(res[0].comp.compiled && res[0].comp.ok);
    assert_true(res[0].comp.regs > 0 && res[0].comp.regs <= 255);
    assert_int_equal(res[0].comp.spill_stores, 0);
    assert_int_equal(res[0].comp.spill_loads, 0);
    assert_true(res[0].comp.compile_ms > 0 && !res[0].comp.cache_hit);
    assert_true(res[0].median_ms < 0 && res[0].repeats == 0);
    /* the syntax error: its log's first line, and the runner went on */
    assert_int_equal(res[1].status, CUT_ST_COMPILE_ERROR);
    assert_non_null(strstr(res[1].error, "compile error"));
    assert_non_null(strstr(res[1].error, "expected an expression"));
    assert_true(res[1].comp.compiled && !res[1].comp.ok);
    assert_int_equal(res[2].status, CUT_ST_LAUNCH_ERROR);
    cut_runner_free(r);
    cut_kernel_src_free(&ks[0]);
}

/* 20000 dependent statements: NVRTC and ptxas work on them for many seconds. Caller frees b with cut_buf_free. */
static void slow_src(cut_buf *b)
{
    cut_buf_init(b);
    cut_buf_printf(b, "extern \"C\" __global__ void cut_slow(float *x)\n{\n    float a = x[threadIdx.x];\n");
    for (int i = 0; i < 20000; i++)
        cut_buf_printf(b, "    a = a * x[%d] + sinf(a);\n", (i * 7) % 977);
    cut_buf_printf(b, "    x[0] = a;\n}\n");
}

/* A compile process that runs past its limit is killed: the compile's failure, never the caller's. */
static void test_limit_kills_compile(void **state)
{
    (void)state;
    cut_buf slow;
    slow_src(&slow);
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    cut_compiled out;
    cut_err e = {{0}};
    const double t0 = cut_now_s();
    assert_int_equal(cut_compile_isolated(slow.data, NULL, &o, 0.3, &out, &e), 0);
    printf("killed after %.2f s: %s\n", cut_now_s() - t0, out.log);
    assert_int_equal(out.ok, 0);
    assert_non_null(strstr(out.log, "did not finish within"));
    assert_true(cut_now_s() - t0 < 10);
    cut_compiled_free(&out);
    cut_buf_free(&slow);
    /* and the next compile in this process is not disturbed */
    assert_int_equal(cut_compile_isolated(SYNTAX_ERROR_SRC, NULL, &o, 60, &out, &e), 0);
    assert_int_equal(out.ok, 0);
    assert_non_null(strstr(out.log, "expected an expression"));
    cut_compiled_free(&out);
}

/* A small kernel of its own for each k (no two share a cache entry). */
static void small_src(int k, char *buf, size_t n)
{
    snprintf(buf, n,
             "extern \"C\" __global__ void cut_small(float *x, const float *y, int n)\n{\n"
             "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
             "    if (i < n)\n        x[i] = x[i] * %d.0f + y[(i * %d) %% n];\n}\n",
             k + 2, 2 * k + 1);
}

/* A fresh folder under $CUTUNE_TEST_TMP (or /tmp), its path into buf. */
static void make_tmp_dir(char *buf, size_t n)
{
    const char *base = getenv("CUTUNE_TEST_TMP");
    if (!base || !*base)
        base = "/tmp";
    cut_err e = {{0}};
    assert_int_equal(cut_mkdirs(base, &e), 0);
    snprintf(buf, n, "%s/test_compile_runner.XXXXXX", base);
    assert_non_null(mkdtemp(buf));
}

/* The exec'd helper makes what this process's NVRTC makes (the same cubin, registers and PTX), and writes the disk
 * cache: the same compile in this process then finds it there. */
static void test_same_as_in_process(void **state)
{
    (void)state;
    char src[1024], dir[PATH_MAX];
    small_src(1000 + (int)getpid() % 1000, src, sizeof src);
    make_tmp_dir(dir, sizeof dir);
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    o.want_ptx = 1;
    cut_compiled here, there;
    cut_err e = {{0}};
    assert_int_equal(cut_compile_one(src, "small.cu", &o, &here, &e), 0);
    o.cache_dir = dir;
    const double t0 = cut_now_s();
    assert_int_equal(cut_compile_isolated(src, "small.cu", &o, 60, &there, &e), 0);
    printf("in-process %.1f ms; exec'd helper %.1f ms (NVRTC's part %.1f ms), regs %d, cubin %zu bytes\n",
           here.compile_ms, (cut_now_s() - t0) * 1e3, there.compile_ms, there.regs, there.cubin_size);
    assert_true(here.ok && there.ok);
    assert_true(here.regs > 0);
    assert_int_equal(there.regs, here.regs);
    assert_int_equal(there.spill_stores, here.spill_stores);
    assert_int_equal(there.spill_loads, here.spill_loads);
    assert_int_equal(there.cubin_size, here.cubin_size);
    assert_memory_equal(there.cubin, here.cubin, here.cubin_size);
    assert_non_null(there.ptx);
    assert_string_equal(there.ptx, here.ptx);
    assert_true(there.key == here.key && !there.cache_hit && there.compile_ms > 0);
    cut_compiled_free(&there);
    /* the helper stored it: this process's compile is a cache hit with the same cubin */
    assert_int_equal(cut_compile_one(src, "small.cu", &o, &there, &e), 0);
    assert_true(there.ok && there.cache_hit);
    assert_int_equal(there.cubin_size, here.cubin_size);
    assert_memory_equal(there.cubin, here.cubin, here.cubin_size);
    cut_compiled_free(&there);
    cut_compiled_free(&here);
    assert_int_equal(cut_remove_tree(dir, NULL, &e), 0);
}

/* A source that does not compile: ok = 0 with NVRTC's log, and 0 (the candidate's failure, not the caller's). */
static void test_compile_error_log(void **state)
{
    (void)state;
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    cut_compiled out;
    cut_err e = {{0}};
    assert_int_equal(cut_compile_isolated(SYNTAX_ERROR_SRC, NULL, &o, 60, &out, &e), 0);
    assert_int_equal(out.ok, 0);
    assert_null(out.cubin);
    assert_non_null(strstr(out.log, "expected an expression"));
    assert_null(strstr(out.log, "NVRTC crashed"));
    cut_compiled_free(&out);
}

/* $CUTUNE_WORKER set to a shell script with body (its arguments are the helper's: __worker compile 0 3) for the
 * life of a test; the old value is restored by restore_worker. */
typedef struct worker_env {
    char dir[PATH_MAX], script[PATH_MAX + 16];
    char *old;
} worker_env;

static void fake_worker(worker_env *w, const char *body)
{
    make_tmp_dir(w->dir, sizeof w->dir);
    snprintf(w->script, sizeof w->script, "%s/worker.sh", w->dir);
    FILE *f = fopen(w->script, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(w->script, 0755), 0);
    const char *old = getenv(CUT_WORKER_ENV);
    w->old = old ? strdup(old) : NULL;
    setenv(CUT_WORKER_ENV, w->script, 1);
}

static void restore_worker(worker_env *w)
{
    if (w->old)
        setenv(CUT_WORKER_ENV, w->old, 1);
    else
        unsetenv(CUT_WORKER_ENV);
    free(w->old);
    cut_err e = {{0}};
    assert_int_equal(cut_remove_tree(w->dir, NULL, &e), 0);
}

/* A helper that never reads its request and never replies is killed at the limit, though the request (a source of
 * 4 MiB) is far larger than a pipe holds: the parent never blocks writing it. */
static void test_limit_kills_silent_helper(void **state)
{
    (void)state;
    worker_env w;
    fake_worker(&w, "exec sleep 60");
    cut_buf big;
    cut_buf_init(&big);
    cut_buf_printf(&big, "extern \"C\" __global__ void cut_big(float *x) { x[0] = 1; }\n");
    while (big.len < ((size_t)4 << 20))
        cut_buf_printf(&big, "// %s\n", "padding that no compiler will ever read, in a request no pipe holds at once");
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    cut_compiled out;
    cut_err e = {{0}};
    const double t0 = cut_now_s();
    assert_int_equal(cut_compile_isolated(big.data, NULL, &o, 0.5, &out, &e), 0);
    const double took = cut_now_s() - t0;
    printf("silent helper killed after %.2f s: %s\n", took, out.log);
    assert_int_equal(out.ok, 0);
    assert_non_null(strstr(out.log, "NVRTC did not finish within 0.5 s: the compile was killed"));
    assert_true(took >= 0.45 && took < 10);
    cut_compiled_free(&out);
    cut_buf_free(&big);
    restore_worker(&w);
}

/* A helper that dies is the compile's failure with how it ended; one of another build (it reads a request that is
 * not one) is a setup error that says so. */
static void test_helper_dies_or_differs(void **state)
{
    (void)state;
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    cut_compiled out;
    cut_err e = {{0}};
    worker_env w;
    fake_worker(&w, "kill -SEGV $$");
    assert_int_equal(cut_compile_isolated(SYNTAX_ERROR_SRC, NULL, &o, 60, &out, &e), 0);
    printf("%s\n", out.log);
    assert_int_equal(out.ok, 0);
    assert_non_null(strstr(out.log, "NVRTC crashed: its process ended with signal 11"));
    cut_compiled_free(&out);
    restore_worker(&w);
    /* a helper that knows no compile mode (an older cutune-worker exits with its usage) */
    fake_worker(&w, "echo 'usage: cutune __worker <device>|emu:<dir> <in_fd> <out_fd>' >&2; exit 2");
    assert_int_equal(cut_compile_isolated(SYNTAX_ERROR_SRC, NULL, &o, 60, &out, &e), 0);
    printf("%s\n", out.log);
    assert_int_equal(out.ok, 0);
    assert_non_null(strstr(out.log, "NVRTC crashed: its process ended with exit status 2 before replying"));
    assert_non_null(strstr(out.log, "another build"));
    cut_compiled_free(&out);
    restore_worker(&w);
    /* the real helper, fed a request that is not one (on descriptor 5 instead of its stdin) */
    char real[PATH_MAX], body[PATH_MAX + 64];
    assert_int_equal(cut_worker_path(real, sizeof real, &e), 0);
    snprintf(body, sizeof body, "echo not-a-request | exec '%s' __worker compile 5 3 5<&0", real);
    fake_worker(&w, body);
    assert_int_equal(cut_compile_isolated(SYNTAX_ERROR_SRC, NULL, &o, 60, &out, &e), -1);
    printf("%s\n", e.msg);
    assert_non_null(strstr(e.msg, "malformed request"));
    assert_non_null(strstr(e.msg, "CUTUNE_WORKER"));
    cut_compiled_free(&out);
    restore_worker(&w);
}

/* The processes whose environment holds CUTUNE_TEST_TAG=tag (a test's helpers): their count; each is sent sig
 * (0: none). */
static int tagged_helpers(const char *tag, int sig)
{
    char want[128];
    const int wn = snprintf(want, sizeof want, "CUTUNE_TEST_TAG=%s", tag);
    DIR *d = opendir("/proc");
    assert_non_null(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));) {
        char path[300], env[65536];
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/environ", de->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        const size_t got = fread(env, 1, sizeof env, f);
        fclose(f);
        for (size_t i = 0; i < got; i += strnlen(env + i, got - i) + 1)
            if (got - i >= (size_t)wn && memcmp(env + i, want, (size_t)wn) == 0 && (got - i == (size_t)wn ||
                                                                                     env[i + wn] == '\0')) {
                n++;
                if (sig)
                    kill((pid_t)atoi(de->d_name), sig);
            }
    }
    closedir(d);
    return n;
}

/* A process killed while its compile runs leaves no helper behind (a killed MPI rank's compiles end with it). */
static void test_helper_dies_with_parent(void **state)
{
    (void)state;
    char tag[64];
    snprintf(tag, sizeof tag, "orphan-%d-%.0f", (int)getpid(), cut_now_s() * 1e3);
    const pid_t kid = fork();
    assert_true(kid >= 0);
    if (kid == 0) { /* this test's process is one thread here: the fork is safe, and NVRTC runs in the helper */
        setenv("CUTUNE_TEST_TAG", tag, 1);
        cut_buf slow;
        slow_src(&slow);
        cut_compile_opts o;
        cut_compile_opts_default(&o);
        cut_compiled out;
        cut_err e = {{0}};
        cut_compile_isolated(slow.data, NULL, &o, 0, &out, &e);
        _exit(0);
    }
    int seen = 0;
    for (int i = 0; i < 200 && !seen; i++, usleep(20000))
        seen = tagged_helpers(tag, 0) == 1;
    kill(kid, SIGKILL);
    int st = 0;
    assert_int_equal(waitpid(kid, &st, 0), kid);
    int left = 1;
    for (int i = 0; i < 250 && left; i++, usleep(20000))
        left = tagged_helpers(tag, 0);
    printf("helpers left after their parent was killed: %d\n", left);
    tagged_helpers(tag, SIGKILL); /* a failure here leaves no compile of minutes behind */
    assert_true(seen); /* its helper was compiling */
    assert_int_equal(left, 0);
}

/* The helper gets its request (0), the reply pipe (3) and the standard streams, none of this process's other
 * descriptors: not one opened without close-on-exec either (here at 200; the shell keeps its script's at 10). */
static void test_no_descriptor_leaks(void **state)
{
    (void)state;
    worker_env w;
    char body[2 * PATH_MAX], fds[PATH_MAX + 16];
    make_tmp_dir(fds, sizeof fds);
    strcat(fds, "/fds");
    snprintf(body, sizeof body, "exec ls /proc/self/fd > '%s'", fds);
    fake_worker(&w, body);
    const int leak = fcntl(open("/dev/null", O_RDONLY), F_DUPFD, 200);
    assert_true(leak >= 200);
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    cut_compiled out;
    cut_err e = {{0}};
    assert_int_equal(cut_compile_isolated(SYNTAX_ERROR_SRC, NULL, &o, 60, &out, &e), 0);
    assert_non_null(strstr(out.log, "NVRTC crashed")); /* it replied nothing */
    cut_compiled_free(&out);
    close(leak);
    char *list = NULL;
    assert_int_equal(cut_read_file(fds, &list, NULL, &e), 0);
    printf("the helper's descriptors: %s\n", list);
    int seen[4] = {0}, other = 0;
    for (char *tok = strtok(list, "\n"); tok; tok = strtok(NULL, "\n")) {
        const int fd = atoi(tok);
        if (fd >= 0 && fd <= 3)
            seen[fd] = 1;
        else if (fd == leak)
            other = 1;
    }
    assert_true(seen[0] && seen[1] && seen[2] && seen[3]);
    assert_false(other);
    free(list);
    restore_worker(&w);
    *strrchr(fds, '/') = '\0';
    assert_int_equal(cut_remove_tree(fds, NULL, &e), 0);
}

/* No helper to be found: a setup error naming CUTUNE_WORKER, from the compile and from the runner's creation. */
static void test_no_helper(void **state)
{
    (void)state;
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    cut_compiled out;
    cut_err e = {{0}};
    char *old = getenv(CUT_WORKER_ENV) ? strdup(getenv(CUT_WORKER_ENV)) : NULL;
    setenv(CUT_WORKER_ENV, "/nonexistent/cutune-worker", 1);
    assert_int_equal(cut_compile_isolated(SYNTAX_ERROR_SRC, NULL, &o, 60, &out, &e), -1);
    printf("%s\n", e.msg);
    assert_non_null(strstr(e.msg, "CUTUNE_WORKER=/nonexistent/cutune-worker"));
    assert_non_null(strstr(e.msg, "cutune-worker executable"));
    assert_int_equal(out.ok, 0);
    cut_compiled_free(&out);
    assert_null(cut_runner_compile_new(NULL, &o, 60, &e));
    assert_non_null(strstr(e.msg, "CUTUNE_WORKER=/nonexistent/cutune-worker"));
    /* unset: the paths tried are named (a test binary has no cutune-worker beside it; a machine with cutune
     * installed may have one where the search ends, and then there is nothing to see) */
    unsetenv(CUT_WORKER_ENV);
    char where[PATH_MAX];
    if (cut_worker_path(where, sizeof where, &e) != 0) {
        assert_int_equal(cut_compile_isolated(SYNTAX_ERROR_SRC, NULL, &o, 60, &out, &e), -1);
        printf("%s\n", e.msg);
        assert_non_null(strstr(e.msg, "set CUTUNE_WORKER"));
        assert_non_null(strstr(e.msg, "tried: "));
        cut_compiled_free(&out);
    } else {
        printf("a cutune-worker is installed at %s: the unset case is not seen here\n", where);
    }
    if (old)
        setenv(CUT_WORKER_ENV, old, 1);
    free(old);
}

/* A compile the disk cache holds is read from it: no helper is started for it (a bogus CUTUNE_WORKER does not
 * matter), and it is the cubin the helper wrote; a source the cache lacks still needs the helper. */
static void test_cache_hit_needs_no_helper(void **state)
{
    (void)state;
    const cut_conv c = {1, 8, 8, 8, 4, 3, 3, 1, 1};
    cut_kernel_src ks;
    generated(&c, &ks);
    char *dir = tu_tmpdir("compile_cache_hit");
    assert_non_null(dir);
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    o.cache_dir = dir;
    cut_compiled first, again, miss;
    cut_err e = {{0}};
    assert_int_equal(cut_compile_lookup(ks.src, &o, &first, &e), 0); /* nothing cached yet */
    assert_int_equal(first.ok, 0);
    cut_compiled_free(&first);
    assert_int_equal(cut_compile_isolated(ks.src, NULL, &o, 120, &first, &e), 0);
    assert_true(first.ok && !first.cache_hit);
    char *old = getenv(CUT_WORKER_ENV) ? strdup(getenv(CUT_WORKER_ENV)) : NULL;
    setenv(CUT_WORKER_ENV, "/nonexistent/cutune-worker", 1);
    assert_int_equal(cut_compile_isolated(ks.src, NULL, &o, 120, &again, &e), 0);
    assert_true(again.ok && again.cache_hit);
    assert_true(again.cubin_size == first.cubin_size && memcmp(again.cubin, first.cubin, first.cubin_size) == 0);
    assert_int_equal(again.regs, first.regs);
    assert_true(again.key == first.key);
    const size_t n = strlen(ks.src) + 32;
    char *other = malloc(n);
    assert_non_null(other);
    snprintf(other, n, "%s\n// another source\n", ks.src);
    assert_int_equal(cut_compile_isolated(other, NULL, &o, 120, &miss, &e), -1);
    assert_non_null(strstr(e.msg, "CUTUNE_WORKER=/nonexistent/cutune-worker"));
    if (old)
        setenv(CUT_WORKER_ENV, old, 1);
    else
        unsetenv(CUT_WORKER_ENV);
    free(old), free(other);
    cut_compiled_free(&first), cut_compiled_free(&again), cut_compiled_free(&miss);
    cut_kernel_src_free(&ks);
    assert_int_equal(cut_remove_tree(dir, NULL, &e), 0);
    free(dir);
}

enum { POOL_THREADS = 8, PER_THREAD = 4 };

typedef struct pool_arg {
    int t;
    cut_compiled out[PER_THREAD];
    int rc[PER_THREAD];
} pool_arg;

static void *pool_thread(void *p)
{
    pool_arg *a = p;
    cut_compile_opts o;
    cut_compile_opts_default(&o);
    for (int k = 0; k < PER_THREAD; k++) {
        char src[1024];
        small_src(a->t * PER_THREAD + k, src, sizeof src);
        cut_err e = {{0}};
        a->rc[k] = cut_compile_isolated(src, NULL, &o, 120, &a->out[k], &e);
        if (a->rc[k] != 0)
            printf("thread %d compile %d: %s\n", a->t, k, e.msg);
    }
    return NULL;
}

/* Compiles from many threads at once (the compile pool's way) each start a helper of their own: all succeed. */
static void test_many_threads(void **state)
{
    (void)state;
    pool_arg a[POOL_THREADS];
    pthread_t th[POOL_THREADS];
    const double t0 = cut_now_s();
    for (int t = 0; t < POOL_THREADS; t++) {
        a[t].t = t;
        assert_int_equal(pthread_create(&th[t], NULL, pool_thread, &a[t]), 0);
    }
    for (int t = 0; t < POOL_THREADS; t++)
        assert_int_equal(pthread_join(th[t], NULL), 0);
    printf("%d compiles from %d threads in %.2f s\n", POOL_THREADS * PER_THREAD, POOL_THREADS, cut_now_s() - t0);
    for (int t = 0; t < POOL_THREADS; t++)
        for (int k = 0; k < PER_THREAD; k++) {
            if (!a[t].out[k].ok)
                printf("thread %d compile %d: %s\n", t, k, a[t].out[k].log);
            assert_int_equal(a[t].rc[k], 0);
            assert_int_equal(a[t].out[k].ok, 1);
            assert_true(a[t].out[k].regs > 0 && a[t].out[k].cubin_size > 0);
            cut_compiled_free(&a[t].out[k]);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compile_only),          cmocka_unit_test(test_limit_kills_compile),
        cmocka_unit_test(test_same_as_in_process),    cmocka_unit_test(test_compile_error_log),
        cmocka_unit_test(test_limit_kills_silent_helper), cmocka_unit_test(test_helper_dies_or_differs),
        cmocka_unit_test(test_helper_dies_with_parent), cmocka_unit_test(test_no_descriptor_leaks),
        cmocka_unit_test(test_no_helper),             cmocka_unit_test(test_cache_hit_needs_no_helper),
        cmocka_unit_test(test_many_threads),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
