/* Where the measurement worker is (cut_worker_path, cutune/measure.h; the search in src/measure/locate.c):
 * $CUTUNE_WORKER wins over every other place, and when it names a file that is missing or not executable that is
 * an error naming CUTUNE_WORKER (no fallback); without it the first executable candidate wins, in order; nothing
 * found is an error naming CUTUNE_WORKER and the paths tried. The runners take the same lookup (worker_exe NULL). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/emu.h"
#include "cutune/measure.h"
#include "measure/locate.h"
#include "measure/worker_proto.h"
#include "testutil.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct paths {
    char *dir;
    char exe1[4200], exe2[4200], plain[4200], missing[4200];
} paths;

static void make_file(const char *path, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\nexit 0\n", f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static int setup(void **state)
{
    paths *p = calloc(1, sizeof *p);
    p->dir = tu_tmpdir("test_worker_path");
    if (!p->dir)
        return -1;
    snprintf(p->exe1, sizeof p->exe1, "%s/a/cutune-worker", p->dir);
    snprintf(p->exe2, sizeof p->exe2, "%s/b/cutune-worker", p->dir);
    snprintf(p->plain, sizeof p->plain, "%s/plain", p->dir);
    snprintf(p->missing, sizeof p->missing, "%s/nothing/cutune-worker", p->dir);
    char d[4300];
    snprintf(d, sizeof d, "%s/a", p->dir);
    mkdir(d, 0755);
    snprintf(d, sizeof d, "%s/b", p->dir);
    mkdir(d, 0755);
    make_file(p->exe1, 0755);
    make_file(p->exe2, 0755);
    make_file(p->plain, 0644);
    *state = p;
    return 0;
}

static int teardown(void **state)
{
    paths *p = *state;
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", p->dir);
    int rc = system(cmd);
    free(p->dir);
    free(p);
    return rc == 0 ? 0 : -1;
}

static void test_env_wins(void **state)
{
    paths *p = *state;
    char buf[PATH_MAX];
    cut_err e = {{0}};
    const char *cands[] = {p->exe1, p->exe2};
    assert_int_equal(cut_worker_path_search(p->exe2, cands, 2, buf, sizeof buf, &e), 0);
    assert_string_equal(buf, p->exe2);
    /* an empty variable counts as unset */
    assert_int_equal(cut_worker_path_search("", cands, 2, buf, sizeof buf, &e), 0);
    assert_string_equal(buf, p->exe1);
}

static void test_env_bad_is_an_error(void **state)
{
    paths *p = *state;
    char buf[PATH_MAX];
    cut_err e = {{0}};
    const char *cands[] = {p->exe1};
    assert_int_equal(cut_worker_path_search(p->missing, cands, 1, buf, sizeof buf, &e), -1);
    assert_non_null(strstr(e.msg, "CUTUNE_WORKER="));
    assert_non_null(strstr(e.msg, p->missing));
    assert_int_equal(cut_worker_path_search(p->plain, cands, 1, buf, sizeof buf, &e), -1); /* not executable */
    assert_non_null(strstr(e.msg, "CUTUNE_WORKER="));
    assert_int_equal(cut_worker_path_search(p->dir, cands, 1, buf, sizeof buf, &e), -1); /* a folder */
    assert_non_null(strstr(e.msg, "not a regular file"));
}

static void test_candidates_in_order(void **state)
{
    paths *p = *state;
    char buf[PATH_MAX];
    cut_err e = {{0}};
    const char *order1[] = {NULL, p->missing, p->plain, p->exe2, p->exe1};
    assert_int_equal(cut_worker_path_search(NULL, order1, 5, buf, sizeof buf, &e), 0);
    assert_string_equal(buf, p->exe2);
    const char *order2[] = {p->exe1, p->exe2};
    assert_int_equal(cut_worker_path_search(NULL, order2, 2, buf, sizeof buf, &e), 0);
    assert_string_equal(buf, p->exe1);
    char tiny[8]; /* a path that does not fit is not taken */
    assert_int_equal(cut_worker_path_search(NULL, order2, 2, tiny, sizeof tiny, &e), -1);
}

static void test_nothing_found(void **state)
{
    paths *p = *state;
    char buf[PATH_MAX];
    cut_err e = {{0}};
    const char *cands[] = {p->missing, "", p->plain};
    assert_int_equal(cut_worker_path_search(NULL, cands, 3, buf, sizeof buf, &e), -1);
    assert_non_null(strstr(e.msg, "set CUTUNE_WORKER"));
    assert_non_null(strstr(e.msg, "cutune-worker"));
    assert_non_null(strstr(e.msg, p->missing));
    assert_non_null(strstr(e.msg, p->plain));
    assert_int_equal(cut_worker_path_search(NULL, NULL, 0, buf, sizeof buf, &e), -1);
    assert_non_null(strstr(e.msg, "set CUTUNE_WORKER"));
}

/* The public entry reads the variable. */
static void test_public_entry_env(void **state)
{
    paths *p = *state;
    char buf[PATH_MAX];
    cut_err e = {{0}};
    char *old = getenv(CUT_WORKER_ENV) ? strdup(getenv(CUT_WORKER_ENV)) : NULL;
    setenv(CUT_WORKER_ENV, p->exe1, 1);
    assert_int_equal(cut_worker_path(buf, sizeof buf, &e), 0);
    assert_string_equal(buf, p->exe1);
    setenv(CUT_WORKER_ENV, p->missing, 1);
    assert_int_equal(cut_worker_path(buf, sizeof buf, &e), -1);
    assert_non_null(strstr(e.msg, "CUTUNE_WORKER="));
    /* the runners use it when given no worker: the error reaches their caller */
    cut_timing t;
    cut_timing_default(&t);
    assert_null(cut_runner_gpu_new_with(0, NULL, &t, NULL, &e));
    assert_non_null(strstr(e.msg, "CUTUNE_WORKER="));
    assert_null(cut_runner_emu_worker_new(NULL, NULL, &t, &e));
    assert_non_null(strstr(e.msg, "CUTUNE_WORKER="));
    if (old)
        setenv(CUT_WORKER_ENV, old, 1);
    else
        unsetenv(CUT_WORKER_ENV);
    free(old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_wins),
        cmocka_unit_test(test_env_bad_is_an_error),
        cmocka_unit_test(test_candidates_in_order),
        cmocka_unit_test(test_nothing_found),
        cmocka_unit_test(test_public_entry_env),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
