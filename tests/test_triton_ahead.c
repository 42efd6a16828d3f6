/* The Triton runner's compile pool (src/measure/triton_ahead.c) without a GPU: compile-only workers compile a suite
 * kernel (kernels/triton/matmul.py) for sm_90 at its sizes and its check_sizes into a fresh Triton cache (two
 * entries: their ints specialise differently), a module with a syntax error fails its compile without breaking the
 * pool (the next compile still ends), a waited compile comes first, and freeing the pool leaves no process behind.
 * Needs the Python with triton and numpy ($CUTUNE_TRITON_PYTHON); exits 77 (skipped) saying why without them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/util.h"
#include "measure/triton_ahead.h"
#include "triton_testutil.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static const char *python, *worker, *fixtures;
static char root[1024]; /* the checkout: kernels/triton/ */

/* The compile request of the suite matmul (BM = BN = 32, BK = 16) with m, n, k, as the runner types it. */
static void matmul_req(char *buf, size_t n, int m, int nn, int k)
{
    snprintf(buf, n,
             "{\"entry\":\"matmul\",\"meta\":{\"BM\":32,\"BN\":32,\"BK\":16},\"num_warps\":4,\"num_stages\":2,"
             "\"args\":[{\"pointer\":\"f32\"},{\"pointer\":\"f32\"},{\"pointer\":\"f32\"},{\"value\":%d,\"dtype\":"
             "\"i32\"},{\"value\":%d,\"dtype\":\"i32\"},{\"value\":%d,\"dtype\":\"i32\"}]}",
             m, nn, k);
}

/* Entries of Triton's cache folder that hold a compiled kernel (a folder with matmul.json). */
static int cache_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *de; d && (de = readdir(d));) {
        char p[2400];
        snprintf(p, sizeof p, "%s/%s/matmul.json", dir, de->d_name);
        n += de->d_name[0] != '.' && cut_path_exists(p);
    }
    if (d)
        closedir(d);
    return n;
}

/* A fresh folder under the test's tmp (removed first). */
static void fresh_dir(char *buf, size_t n, const char *name)
{
    const char *tmp = getenv("CUTUNE_TEST_TMP");
    snprintf(buf, n, "%s/%s", tmp ? tmp : "/tmp", name);
    cut_remove_tree(buf, NULL, NULL);
    cut_err e = {{0}};
    if (cut_mkdirs(buf, &e) != 0)
        fail_msg("%s", e.msg);
}

static void test_triton_ahead(void **state)
{
    (void)state;
    char cache[1100], dir[1100], path[1300], req[600], check_req[600], why[400];
    fresh_dir(cache, sizeof cache, "triton_ahead_cache");
    fresh_dir(dir, sizeof dir, "triton_ahead_dir");
    snprintf(path, sizeof path, "%s/kernels/triton/matmul.py", root);
    char *src = NULL;
    size_t len = 0;
    cut_err e = {{0}};
    if (cut_read_file(path, &src, &len, &e) != 0)
        fail_msg("%s", e.msg);
    cut_tr_ahead *p = cut_tr_ahead_new(python, worker, "cuda:90:32", cache, dir, 2, &e);
    if (!p)
        fail_msg("%s", e.msg);

    /* a syntax error first: its compile fails, the pool goes on */
    const char *bad = "import triton\n@triton.jit\ndef matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM, BN, BK):\n    x = (\n";
    matmul_req(req, sizeof req, 2048, 2048, 2048);
    matmul_req(check_req, sizeof check_req, 37, 45, 53);
    const uint64_t kbad = cut_tr_ahead_key(bad, req), ksz = cut_tr_ahead_key(src, req);
    const uint64_t kchk = cut_tr_ahead_key(src, check_req);
    assert_true(kbad != ksz && ksz != kchk);
    cut_tr_ahead_submit(p, kbad, bad, req);
    cut_tr_ahead_submit(p, ksz, src, req);
    cut_tr_ahead_submit(p, kchk, src, check_req);
    cut_tr_ahead_submit(p, ksz, src, req); /* queued before: not again */
    assert_int_equal(cut_tr_ahead_wait(p, kchk, 300, why, sizeof why), 1);
    assert_int_equal(cut_tr_ahead_wait(p, ksz, 300, why, sizeof why), 1);
    assert_int_equal(cut_tr_ahead_wait(p, kbad, 300, why, sizeof why), -1);
    printf("  the syntax error ahead: %s\n", why);
    assert_non_null(strstr(why, "compile_error"));
    assert_int_equal(cut_tr_ahead_wait(p, 12345, 1, why, sizeof why), 0); /* never queued */
    int queued, ended, failed;
    cut_tr_ahead_counts(p, &queued, &ended, &failed);
    assert_int_equal(queued, 3);
    assert_int_equal(ended, 3);
    assert_int_equal(failed, 1);

    /* both size sets in the cache, for sm_90 */
    char tc[1200];
    snprintf(tc, sizeof tc, "%s/triton", cache);
    assert_int_equal(cache_entries(tc), 2);
    assert_true(cut_tr_ahead_live(p) >= 1);

    /* torn down: every worker killed and reaped, no child left */
    cut_tr_ahead_free(p);
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    free(src);
}

/* A pool whose workers cannot start fails each compile with a sentence, and is freed cleanly. */
static void test_triton_ahead_no_python(void **state)
{
    (void)state;
    char cache[1100], dir[1100], why[400] = "";
    fresh_dir(cache, sizeof cache, "triton_ahead_cache2");
    fresh_dir(dir, sizeof dir, "triton_ahead_dir2");
    cut_err e = {{0}};
    cut_tr_ahead *p = cut_tr_ahead_new("/nonexistent/python3", worker, "cuda:90:32", cache, dir, 1, &e);
    if (!p)
        fail_msg("%s", e.msg);
    cut_tr_ahead_submit(p, 1, "x = 1\n", "{\"entry\":\"k\"}");
    assert_int_equal(cut_tr_ahead_wait(p, 1, 60, why, sizeof why), -1);
    printf("  no python: %s\n", why);
    assert_non_null(strstr(why, "compile worker"));
    cut_tr_ahead_free(p);
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
}

int main(void)
{
    const int skip = tu_triton_env(&python, &worker, &fixtures);
    if (skip)
        return skip;
    snprintf(root, sizeof root, "%s", worker);
    char *slash = strrchr(root, '/'); /* <root>/tools/triton_worker.py */
    for (int i = 0; i < 2 && slash; i++, slash = strrchr(root, '/'))
        *slash = '\0';
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_triton_ahead),
        cmocka_unit_test(test_triton_ahead_no_python),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
