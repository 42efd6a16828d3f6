/* Tests of --idle-other-gpus' library side (src/energy/idle.c on the guards of src/energy/restore.c): every GPU but
 * the measured one set to compute mode PROHIBITED and each original mode put back at the end, after an NVML
 * refusal, on a signal, and (after a SIGKILL) by the next start's recovery.
 *
 * NVML is the fake library tests/fake_nvml/ ($CUTUNE_FAKE_NVML) with three GPUs booted in compute modes DEFAULT,
 * EXCLUSIVE_PROCESS and DEFAULT. The fake appends "set_mode <gpu> <mode>" (and "set_limit <gpu> <mW>") to a log for
 * every change and keeps the state in a file, so forked children (signalled, killed) and the parent see one
 * driver. GPU 0 is the measured one unless a test says otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/idle.h"
#include "cutune/powercap.h"
#include "cutune/util.h"
#include "gpu/nvml.h"
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define UUID0 "GPU-fa4e0000-0000-4000-8000-000000000000"
#define UUID1 "GPU-fa4e0000-0000-4000-8000-000000000001"
#define UUID2 "GPU-fa4e0000-0000-4000-8000-000000000002"

static char g_dir[4096];   /* the state folder: restore files and locks */
static char g_log[4200];   /* FAKE_NVML_LOG */
static char g_state[4200]; /* FAKE_NVML_STATE */

/* ---- helpers ---- */

static char *slurp(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    if (cut_read_file(path, &text, &len, NULL) != 0)
        return cut_xstrdup("");
    return text;
}

static void assert_log(const char *want)
{
    char *got = slurp(g_log);
    if (strcmp(got, want) != 0)
        fprintf(stderr, "fake NVML log:\n%s--- want:\n%s---\n", got, want);
    assert_string_equal(got, want);
    free(got);
}

static int mode_of(const char *uuid)
{
    nvmlDevice_t d;
    int m = -1;
    if (cut_nvml_device_by_uuid(uuid, &d) != NVML_SUCCESS || cut_nvml_compute_mode(d, &m) != NVML_SUCCESS)
        return -1;
    return m;
}

/* The three GPUs' modes, as "m0 m1 m2". */
static void assert_modes(int m0, int m1, int m2)
{
    assert_int_equal(mode_of(UUID0), m0);
    assert_int_equal(mode_of(UUID1), m1);
    assert_int_equal(mode_of(UUID2), m2);
}

static void restore_path(const char *uuid, char *buf, size_t n) { snprintf(buf, n, "%s/computemode_%s.json", g_dir, uuid); }

static int restore_file_exists(const char *uuid)
{
    char p[4300];
    restore_path(uuid, p, sizeof p);
    return cut_path_exists(p);
}

/* Every test starts from a freshly "booted" driver: no log, the boot modes, no restore file. */
static int reset_fake(void **state)
{
    (void)state;
    unlink(g_log);
    unlink(g_state);
    const char *uuids[3] = {UUID0, UUID1, UUID2};
    char p[4300];
    for (int i = 0; i < 3; i++) {
        restore_path(uuids[i], p, sizeof p);
        unlink(p);
        snprintf(p, sizeof p, "%s/powercap_%s.json", g_dir, uuids[i]);
        unlink(p);
    }
    unsetenv("FAKE_NVML_MODE_SET_ERROR");
    unsetenv("FAKE_NVML_SET_ERROR");
    return 0;
}

/* ---- a normal run ---- */

static void test_idles_the_others_and_restores(void **state)
{
    (void)state;
    cut_err e = {{0}};
    char note[1024];
    assert_int_equal(cut_idle_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_NONE);
    assert_modes(NVML_COMPUTEMODE_DEFAULT, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS, NVML_COMPUTEMODE_DEFAULT);

    cut_idle_session *s = NULL;
    assert_int_equal(cut_idle_begin(UUID0, g_dir, &s, &e), 0);
    assert_non_null(s);
    assert_int_equal(cut_idle_count(s), 2);
    assert_string_equal(cut_idle_uuid(s, 0), UUID1);
    assert_string_equal(cut_idle_original(s, 0), "EXCLUSIVE_PROCESS");
    assert_string_equal(cut_idle_name(s, 0), "NVIDIA H200");
    assert_string_equal(cut_idle_uuid(s, 1), UUID2);
    assert_string_equal(cut_idle_original(s, 1), "DEFAULT");
    assert_null(cut_idle_uuid(s, 2));
    /* The others are PROHIBITED, the measured one untouched; each other GPU has its restore file, naming its
     * original mode and this process. */
    assert_modes(NVML_COMPUTEMODE_DEFAULT, NVML_COMPUTEMODE_PROHIBITED, NVML_COMPUTEMODE_PROHIBITED);
    assert_log("set_mode 1 2\nset_mode 2 2\n");
    assert_false(restore_file_exists(UUID0));
    char p[4300], pid[32];
    restore_path(UUID1, p, sizeof p);
    char *rf = slurp(p);
    snprintf(pid, sizeof pid, "\"pid\":%d", (int)getpid());
    assert_non_null(strstr(rf, "\"uuid\":\"" UUID1 "\""));
    assert_non_null(strstr(rf, "\"original_mode\":3"));
    assert_non_null(strstr(rf, pid));
    free(rf);
    restore_path(UUID2, p, sizeof p);
    rf = slurp(p);
    assert_non_null(strstr(rf, "\"original_mode\":0"));
    free(rf);

    /* While the session runs, recovery (another cutune start) leaves it alone; a second session is refused. */
    assert_int_equal(cut_idle_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_BUSY);
    assert_non_null(strstr(note, "left alone"));
    cut_idle_session *s2 = NULL;
    assert_int_equal(cut_idle_begin(UUID1, g_dir, &s2, &e), -1);
    assert_non_null(strstr(e.msg, "already"));
    assert_null(s2);

    assert_int_equal(cut_idle_end(s, &e), 0);
    assert_log("set_mode 1 2\nset_mode 2 2\nset_mode 1 3\nset_mode 2 0\n");
    assert_modes(NVML_COMPUTEMODE_DEFAULT, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS, NVML_COMPUTEMODE_DEFAULT);
    assert_false(restore_file_exists(UUID1));
    assert_false(restore_file_exists(UUID2));
    assert_int_equal(cut_idle_end(NULL, &e), 0);
    assert_int_equal(cut_idle_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_NONE);
}

/* The measured GPU is any of them; a GPU already PROHIBITED is recorded and left as it is. */
static void test_other_measured_and_already_prohibited(void **state)
{
    (void)state;
    cut_err e = {{0}};
    nvmlDevice_t d2;
    assert_int_equal(cut_nvml_device_by_uuid(UUID2, &d2), NVML_SUCCESS);
    assert_int_equal(cut_nvml_set_compute_mode(d2, NVML_COMPUTEMODE_PROHIBITED), NVML_SUCCESS); /* an admin's */
    unlink(g_log);
    cut_idle_session *s = NULL;
    assert_int_equal(cut_idle_begin(UUID1, g_dir, &s, &e), 0);
    assert_int_equal(cut_idle_count(s), 2);
    assert_string_equal(cut_idle_uuid(s, 0), UUID0);
    assert_string_equal(cut_idle_original(s, 1), "PROHIBITED");
    assert_modes(NVML_COMPUTEMODE_PROHIBITED, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS, NVML_COMPUTEMODE_PROHIBITED);
    assert_int_equal(cut_idle_end(s, &e), 0);
    assert_log("set_mode 0 2\nset_mode 0 0\n"); /* GPU 1 (measured) and GPU 2 (already idle) never set */
    assert_modes(NVML_COMPUTEMODE_DEFAULT, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS, NVML_COMPUTEMODE_PROHIBITED);
}

/* A measured GPU NVML does not list: which are the others is unknown, so nothing is touched. */
static void test_unknown_measured_gpu(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_idle_session *s = NULL;
    assert_int_equal(cut_idle_begin("GPU-00000000-0000-0000-0000-00000000dead", g_dir, &s, &e), -1);
    assert_null(s);
    assert_non_null(strstr(e.msg, "GPU-00000000-0000-0000-0000-00000000dead is not among the 3 GPU(s)"));
    assert_log("");
    assert_false(restore_file_exists(UUID1));
}

/* ---- NVML refuses ---- */

static void test_no_permission_changes_nothing(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_idle_session *s = NULL;
    /* GPU 2 refuses (not root) after GPU 1 was idled: GPU 1 is put back, the error names GPU 2 and why. */
    setenv("FAKE_NVML_MODE_SET_ERROR", "4:2", 1);
    assert_int_equal(cut_idle_begin(UUID0, g_dir, &s, &e), -1);
    assert_null(s);
    assert_non_null(strstr(e.msg, "setting the compute mode of GPU " UUID2 " (NVIDIA H200) to PROHIBITED failed"));
    assert_non_null(strstr(e.msg, "NVML_ERROR_NO_PERMISSION"));
    assert_non_null(strstr(e.msg, "needs root"));
    assert_log("set_mode 1 2\nset_mode 1 3\n");
    assert_modes(NVML_COMPUTEMODE_DEFAULT, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS, NVML_COMPUTEMODE_DEFAULT);
    assert_false(restore_file_exists(UUID1));
    assert_false(restore_file_exists(UUID2));

    /* Every GPU refuses: the first one's error, and no change at all. */
    unlink(g_log);
    setenv("FAKE_NVML_MODE_SET_ERROR", "4", 1);
    assert_int_equal(cut_idle_begin(UUID0, g_dir, &s, &e), -1);
    assert_non_null(strstr(e.msg, "GPU " UUID1));
    assert_non_null(strstr(e.msg, "NVML_ERROR_NO_PERMISSION"));
    assert_log("");
    assert_false(restore_file_exists(UUID1));

    /* The session is not left half begun: one can start now. */
    unsetenv("FAKE_NVML_MODE_SET_ERROR");
    assert_int_equal(cut_idle_begin(UUID0, g_dir, &s, &e), 0);
    assert_int_equal(cut_idle_end(s, &e), 0);
    assert_modes(NVML_COMPUTEMODE_DEFAULT, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS, NVML_COMPUTEMODE_DEFAULT);
}

/* End cannot restore while NVML refuses: it says how to restore by hand, keeps the restore files, and the next
 * start's recovery puts the modes back. */
static void test_end_refused_then_recovered(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_idle_session *s = NULL;
    assert_int_equal(cut_idle_begin(UUID0, g_dir, &s, &e), 0);
    setenv("FAKE_NVML_MODE_SET_ERROR", "4:1", 1);
    assert_int_equal(cut_idle_end(s, &e), -1);
    assert_non_null(strstr(e.msg, "could not restore the compute mode of GPU " UUID1));
    assert_non_null(strstr(e.msg, "sudo nvidia-smi -i " UUID1 " -c EXCLUSIVE_PROCESS"));
    assert_true(restore_file_exists(UUID1));
    assert_false(restore_file_exists(UUID2)); /* the other one was restored all the same */
    assert_modes(NVML_COMPUTEMODE_DEFAULT, NVML_COMPUTEMODE_PROHIBITED, NVML_COMPUTEMODE_DEFAULT);
    unsetenv("FAKE_NVML_MODE_SET_ERROR");
    char note[1024];
    assert_int_equal(cut_idle_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_RESTORED);
    assert_non_null(strstr(note, "restored the compute mode of GPU " UUID1));
    assert_modes(NVML_COMPUTEMODE_DEFAULT, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS, NVML_COMPUTEMODE_DEFAULT);
    assert_false(restore_file_exists(UUID1));
}

/* ---- crashes: forked children ---- */

/* Child body: caps GPU 0 at 300 W (a power-cap session) when cap, idles the others, tells the parent, then waits to
 * be signalled. Exit codes 10.. mean a step failed. */
static void child_idle_and_wait(int ready_fd, long cap)
{
    cut_err e = {{0}};
    cut_powercap_session *pc = NULL;
    cut_idle_session *s = NULL;
    if (cap && (cut_powercap_begin(UUID0, g_dir, 1, &pc, &e) != 0 || cut_powercap_set(pc, 300000, &e) != 0))
        _exit(10);
    if (cut_idle_begin(UUID0, g_dir, &s, &e) != 0)
        _exit(11);
    if (write(ready_fd, "r", 1) != 1)
        _exit(12);
    for (;;)
        pause();
}

/* A child running child_idle_and_wait, signalled once it has idled: its wait status. */
static int run_idling_child(int cap, int sig)
{
    const int status = tu_signal_child(child_idle_and_wait, cap, sig, "idling");
    if (status == -1)
        fail();
    return status;
}

/* SIGTERM and a crash (SIGSEGV): one handler puts back both the power cap and the other GPUs' modes, then the
 * child dies of the signal. */
static void test_signals_restore_modes_and_cap(void **state)
{
    (void)state;
    const int sigs[] = {SIGTERM, SIGSEGV};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        reset_fake(NULL);
        int status = run_idling_child(1, sigs[i]);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), sigs[i]);
        char *log = slurp(g_log);
        /* the changes in order, then the handler's restores, one per setting */
        const char *changes = "set_limit 0 300000\nset_mode 1 2\nset_mode 2 2\n";
        const size_t n = strlen(changes);
        assert_int_equal(strncmp(log, changes, n), 0);
        assert_non_null(strstr(log + n, "set_limit 0 700000\n"));
        assert_non_null(strstr(log + n, "set_mode 1 3\n"));
        assert_non_null(strstr(log + n, "set_mode 2 0\n"));
        assert_int_equal(strlen(log + n), strlen("set_limit 0 700000\nset_mode 1 3\nset_mode 2 0\n"));
        free(log);
        assert_modes(NVML_COMPUTEMODE_DEFAULT, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS, NVML_COMPUTEMODE_DEFAULT);
        assert_false(restore_file_exists(UUID1));
        assert_false(restore_file_exists(UUID2));
        cut_err e = {{0}};
        assert_int_equal(cut_idle_recover(g_dir, NULL, 0, &e), CUT_POWERCAP_RECOVER_NONE);
        assert_int_equal(cut_powercap_recover(g_dir, NULL, 0, &e), CUT_POWERCAP_RECOVER_NONE);
    }
}

static void test_sigkill_then_recover(void **state)
{
    (void)state;
    int status = run_idling_child(0, SIGKILL);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
    /* Nothing ran in the child: the others stay PROHIBITED, their restore files name the originals. */
    assert_log("set_mode 1 2\nset_mode 2 2\n");
    assert_modes(NVML_COMPUTEMODE_DEFAULT, NVML_COMPUTEMODE_PROHIBITED, NVML_COMPUTEMODE_PROHIBITED);
    assert_true(restore_file_exists(UUID1));
    assert_true(restore_file_exists(UUID2));

    char note[1024];
    cut_err e = {{0}};
    assert_int_equal(cut_powercap_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_NONE); /* its own */
    assert_int_equal(cut_idle_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_RESTORED);
    assert_non_null(strstr(note, "restored the compute mode of GPU " UUID1 " (NVIDIA H200) from mode PROHIBITED to "
                                 "mode EXCLUSIVE_PROCESS"));
    assert_non_null(strstr(note, "restored the compute mode of GPU " UUID2));
    assert_modes(NVML_COMPUTEMODE_DEFAULT, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS, NVML_COMPUTEMODE_DEFAULT);
    assert_false(restore_file_exists(UUID1));
    assert_false(restore_file_exists(UUID2));
    assert_int_equal(cut_idle_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_NONE);
}

/* After a SIGKILL, the next session recovers first: the originals it records are the GPUs' own modes, never the
 * crashed run's PROHIBITED. */
static void test_original_never_a_crashed_run(void **state)
{
    (void)state;
    run_idling_child(0, SIGKILL);
    cut_err e = {{0}};
    cut_idle_session *s = NULL;
    assert_int_equal(cut_idle_begin(UUID0, g_dir, &s, &e), 0);
    assert_string_equal(cut_idle_original(s, 0), "EXCLUSIVE_PROCESS");
    assert_string_equal(cut_idle_original(s, 1), "DEFAULT");
    assert_int_equal(cut_idle_end(s, &e), 0);
    assert_modes(NVML_COMPUTEMODE_DEFAULT, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS, NVML_COMPUTEMODE_DEFAULT);
}

/* Another live process idling a GPU: refused, nothing changed. An unreadable restore file gives mode DEFAULT. */
static void test_busy_and_corrupt(void **state)
{
    (void)state;
    const pid_t pid = tu_fork_ready(child_idle_and_wait, 0, "idling");
    assert_true(pid > 0);
    cut_err e = {{0}};
    cut_idle_session *s = NULL;
    assert_int_equal(cut_idle_begin(UUID0, g_dir, &s, &e), -1);
    assert_non_null(strstr(e.msg, "being idled by another cutune process"));
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    assert_modes(NVML_COMPUTEMODE_DEFAULT, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS, NVML_COMPUTEMODE_DEFAULT);

    nvmlDevice_t d1;
    assert_int_equal(cut_nvml_device_by_uuid(UUID1, &d1), NVML_SUCCESS);
    assert_int_equal(cut_nvml_set_compute_mode(d1, NVML_COMPUTEMODE_PROHIBITED), NVML_SUCCESS); /* as a crash left */
    char p[4300], note[1024];
    restore_path(UUID1, p, sizeof p);
    assert_int_equal(cut_write_file_atomic(p, "{\"uuid\":", 8, &e), 0);
    assert_int_equal(cut_idle_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_RESTORED);
    assert_non_null(strstr(note, "was not valid"));
    assert_int_equal(mode_of(UUID1), NVML_COMPUTEMODE_DEFAULT);
    assert_false(cut_path_exists(p));
}

int main(void)
{
    const char *fake = getenv("CUTUNE_FAKE_NVML");
    if (!fake || !*fake || access(fake, R_OK) != 0) {
        fprintf(stderr, "skipping: CUTUNE_FAKE_NVML does not name the fake NVML library (run under ctest)\n");
        return 77;
    }
    char *dir = tu_tmpdir("idle");
    if (!dir)
        return 1;
    snprintf(g_dir, sizeof g_dir, "%s/state", dir);
    snprintf(g_log, sizeof g_log, "%s/nvml.log", dir);
    snprintf(g_state, sizeof g_state, "%s/nvml.state", dir);
    free(dir);
    /* Before the first NVML use: the loader reads CUTUNE_NVML_LIB once, the fake reads its config at init. */
    setenv("CUTUNE_NVML_LIB", fake, 1);
    setenv("FAKE_NVML_GPUS", "NVIDIA H200:700000:200000:700000,NVIDIA H200:700000:200000:700000,"
                             "NVIDIA H200:700000:200000:700000", 1);
    setenv("FAKE_NVML_MODES", "0,3,0", 1);
    setenv("FAKE_NVML_LOG", g_log, 1);
    setenv("FAKE_NVML_STATE", g_state, 1);
    cut_err e = {{0}};
    if (!cut_nvml_load(&e)) {
        fprintf(stderr, "cannot load the fake NVML: %s\n", e.msg);
        return 1;
    }
    if (cut_mkdirs(g_dir, &e) != 0)
        return 1;

    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_idles_the_others_and_restores, reset_fake),
        cmocka_unit_test_setup(test_other_measured_and_already_prohibited, reset_fake),
        cmocka_unit_test_setup(test_unknown_measured_gpu, reset_fake),
        cmocka_unit_test_setup(test_no_permission_changes_nothing, reset_fake),
        cmocka_unit_test_setup(test_end_refused_then_recovered, reset_fake),
        cmocka_unit_test_setup(test_signals_restore_modes_and_cap, reset_fake),
        cmocka_unit_test_setup(test_sigkill_then_recover, reset_fake),
        cmocka_unit_test_setup(test_original_never_a_crashed_run, reset_fake),
        cmocka_unit_test_setup(test_busy_and_corrupt, reset_fake),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
