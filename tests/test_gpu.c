/* Tests of the GPU layer (src/gpu/gpu.c, src/gpu/nvml.c), `cutune devices` and the GPU runner's no-GPU paths.
 *
 * Where no NVIDIA driver is present (CI, the build machines) the driver-less behaviour is asserted: clear
 * sentences naming libcuda, exit code 1 from `cutune devices`, no crash. Where one is present those tests assert
 * the opposite (a device is listed). NVML is pointed at a library that does not exist ($CUTUNE_NVML_LIB, set
 * before the first use), so the NVML-absent path is exercised on every machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/gpu.h"
#include "cutune/measure.h"
#include "gpu/cuda_drv.h"
#include "gpu/nvml.h"
#include "measure/worker_proto.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MISSING_NVML "/nonexistent/cutune-test/libnvidia-ml.so.1"

static int driver_present(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h)
        dlclose(h);
    return h != NULL;
}

static void test_uuid_format(void **state)
{
    (void)state;
    const unsigned char b[16] = {0x5e, 0x7a, 0x1c, 0x2b, 0x0d, 0x3f, 0x4e, 0x5a,
                                 0x8b, 0x9c, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab};
    char buf[64];
    cut_gpu_format_uuid(b, buf, sizeof buf);
    assert_string_equal(buf, "GPU-5e7a1c2b-0d3f-4e5a-8b9c-0123456789ab");
    const unsigned char z[16] = {0};
    cut_gpu_format_uuid(z, buf, sizeof buf);
    assert_string_equal(buf, "GPU-00000000-0000-0000-0000-000000000000");
    const unsigned char f[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe};
    cut_gpu_format_uuid(f, buf, sizeof buf);
    assert_string_equal(buf, "GPU-ffffffff-ffff-ffff-ffff-fffffffffffe");
    assert_int_equal(strlen(buf), 40);
    /* A short buffer is truncated, never overrun. */
    char small[8];
    memset(small, 'x', sizeof small);
    cut_gpu_format_uuid(b, small, sizeof small);
    assert_string_equal(small, "GPU-5e7");
}

static void test_init_without_driver(void **state)
{
    (void)state;
    if (driver_present())
        skip();
    cut_err e = {{0}};
    assert_int_equal(cut_gpu_init(&e), -1);
    assert_non_null(strstr(e.msg, "libcuda"));
    assert_non_null(strstr(e.msg, "no NVIDIA driver found"));
    /* Repeatable, same answer. */
    cut_err e2 = {{0}};
    assert_int_equal(cut_gpu_init(&e2), -1);
    assert_string_equal(e.msg, e2.msg);
    assert_null(cut_cu());

    cut_gpu_info info;
    memset(&info, 0x5a, sizeof info);
    assert_int_equal(cut_gpu_query(0, &info, &e), -1);
    assert_non_null(strstr(e.msg, "libcuda"));
    /* The unknown markers are set even on failure. */
    assert_int_equal(info.sm_clock_mhz, -1);
    assert_true(info.power_limit_w == -1.0);
    assert_int_equal(info.nvml_ok, 0);
}

static void test_runner_gpu_new_without_driver(void **state)
{
    (void)state;
    if (driver_present())
        skip();
    cut_err e = {{0}};
    cut_timing t;
    cut_timing_default(&t);
    cut_runner *r = cut_runner_gpu_new(0, "/bin/true", &t, &e);
    assert_null(r);
    assert_non_null(strstr(e.msg, "GPU runner needs a GPU"));
    assert_non_null(strstr(e.msg, "libcuda"));
    cut_runner_free(r); /* NULL: no-op */
}

/* The real worker binary on a machine without a driver says so in its ERROR, and the runner passes it on. */
static void test_real_worker_without_driver(void **state)
{
    (void)state;
    const char *bin = getenv("CUTUNE_BIN");
    if (!bin || driver_present() || access(bin, X_OK) != 0)
        skip();
    cut_err e = {{0}};
    cut_runner *r = cut_runner_gpu_new_with(0, bin, NULL, NULL, &e);
    assert_null(r);
    assert_non_null(strstr(e.msg, "libcuda.so.1 could not be loaded"));
    assert_non_null(strstr(e.msg, "__worker 0"));
    if (!strstr(e.msg, "exit status 1"))
        fail_msg("message: %s", e.msg);
}

static void test_nvml_absent(void **state)
{
    (void)state;
    assert_string_equal(cut_nvml_lib_path(), MISSING_NVML);
    cut_err e = {{0}};
    assert_null(cut_nvml_load(&e));
    assert_non_null(strstr(e.msg, "NVML unavailable"));
    assert_non_null(strstr(e.msg, MISSING_NVML));
    assert_null(cut_nvml());
    /* Wrappers report "not loaded" and leave outputs alone. */
    nvmlDevice_t dev = NULL;
    assert_int_equal(cut_nvml_device_by_uuid("GPU-00000000-0000-0000-0000-000000000000", &dev),
                     NVML_ERROR_UNINITIALIZED);
    unsigned long long mj = 77;
    assert_int_equal(cut_nvml_energy_mj(dev, &mj), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(mj, 77);
    unsigned int v = 5, lo = 6, hi = 7;
    assert_int_equal(cut_nvml_power_mw(dev, &v), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(cut_nvml_clock_mhz(dev, NVML_CLOCK_SM, 1, &v), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(cut_nvml_power_constraints_mw(dev, &lo, &hi), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(cut_nvml_set_power_limit_mw(dev, 300000), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(cut_nvml_throttle_reasons(dev, &mj), NVML_ERROR_UNINITIALIZED);
    assert_true(v == 5 && lo == 6 && hi == 7 && mj == 77);
    char s[32] = "untouched";
    assert_int_equal(cut_nvml_driver_string(s, sizeof s), NVML_ERROR_UNINITIALIZED);
    assert_string_equal(s, "untouched");

    int clk = 123;
    double pl = 456;
    cut_gpu_sample_clocks("GPU-00000000-0000-0000-0000-000000000000", &clk, &pl);
    assert_int_equal(clk, -1);
    assert_true(pl == -1.0);
    cut_gpu_sample_clocks(NULL, &clk, NULL);
    assert_int_equal(clk, -1);

    char d[128];
    cut_nvml_describe(NVML_ERROR_NOT_SUPPORTED, d, sizeof d);
    assert_non_null(strstr(d, "NVML_ERROR_NOT_SUPPORTED"));
    cut_nvml_describe(NVML_ERROR_UNINITIALIZED, d, sizeof d);
    assert_string_equal(d, "NVML_ERROR_UNINITIALIZED (NVML is not loaded)");
    cut_nvml_describe(4242, d, sizeof d);
    assert_non_null(strstr(d, "4242"));
}

static int nvml_check_user(cut_err *e)
{
    NVML_CHECK(NVML_ERROR_NO_PERMISSION, e);
    return 0;
}

static void test_nvml_check_macro(void **state)
{
    (void)state;
    cut_err e = {{0}};
    assert_int_equal(nvml_check_user(&e), -1);
    assert_non_null(strstr(e.msg, "NVML_ERROR_NO_PERMISSION failed at"));
    assert_non_null(strstr(e.msg, "test_gpu.c:"));
    assert_non_null(strstr(e.msg, "needs root"));
}

static void test_throttle_describe(void **state)
{
    (void)state;
    char b[128];
    cut_nvml_throttle_describe(0, b, sizeof b);
    assert_string_equal(b, "none");
    cut_nvml_throttle_describe(NVML_CLOCKS_EVENT_REASON_GPU_IDLE | NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP, b, sizeof b);
    assert_string_equal(b, "idle,sw_power_cap");
    cut_nvml_throttle_describe(NVML_CLOCKS_EVENT_REASON_HW_THERMAL_SLOWDOWN | 0x10000ULL, b, sizeof b);
    assert_string_equal(b, "hw_thermal,other(0x10000)");
    char tiny[6];
    cut_nvml_throttle_describe(NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP, tiny, sizeof tiny);
    assert_int_equal(strlen(tiny), 0); /* does not fit: left empty rather than cut mid-name */
}

static void test_limits_from_info(void **state)
{
    (void)state;
    cut_gpu_info g;
    memset(&g, 0, sizeof g);
    g.sm_major = 8;
    g.sm_minor = 6;
    g.sm_count = 84;
    g.max_threads_per_block = 1024;
    g.max_smem_per_block = 49152;
    g.max_smem_per_block_optin = 101376;
    g.max_regs_per_block = 65536;
    cut_devlimits d;
    cut_gpu_limits(&g, &d);
    assert_int_equal(d.sm_major, 8);
    assert_int_equal(d.sm_minor, 6);
    assert_int_equal(d.sm_count, 84);
    assert_int_equal(d.max_threads_per_block, 1024);
    assert_int_equal(d.max_smem_per_block, 49152);
    assert_int_equal(d.max_regs_per_block, 65536);
    assert_int_equal(d.max_regs_per_thread, 255);
    assert_int_equal(d.warp_size, 32);
    /* Unknown (zero) fields keep the sm_90 defaults. */
    g.sm_count = 0;
    cut_gpu_limits(&g, &d);
    cut_devlimits ref;
    cut_devlimits_sm90(&ref);
    assert_int_equal(d.sm_count, ref.sm_count);
}

/* Runs argv with stdout/stderr captured (each truncated to n-1 bytes). Returns the exit status or -1. */
static int run_capture(char *const argv[], char *out, char *err, size_t n)
{
    char po[] = "/tmp/cutune-test-gpu-out.XXXXXX", pe[] = "/tmp/cutune-test-gpu-err.XXXXXX";
    int fo = mkstemp(po), fe = mkstemp(pe);
    if (fo < 0 || fe < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fo, 1);
        dup2(fe, 2);
        setenv("CUTUNE_NVML_LIB", MISSING_NVML, 1);
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    ssize_t k;
    lseek(fo, 0, SEEK_SET);
    k = read(fo, out, n - 1);
    out[k > 0 ? k : 0] = '\0';
    lseek(fe, 0, SEEK_SET);
    k = read(fe, err, n - 1);
    err[k > 0 ? k : 0] = '\0';
    close(fo);
    close(fe);
    unlink(po);
    unlink(pe);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_devices_command(void **state)
{
    (void)state;
    const char *bin = getenv("CUTUNE_BIN");
    if (!bin || access(bin, X_OK) != 0) {
        printf("CUTUNE_BIN not set or not built: skipping the command-line checks\n");
        skip();
    }
    static char out[65536], err[65536];
    char *help[] = {(char *)bin, "devices", "--help", NULL};
    assert_int_equal(run_capture(help, out, err, sizeof out), 0);
    assert_non_null(strstr(out, "usage: cutune devices [--json]"));

    char *bogus[] = {(char *)bin, "devices", "--bogus", NULL};
    assert_int_equal(run_capture(bogus, out, err, sizeof out), 2);
    assert_non_null(strstr(err, "unknown option '--bogus'"));

    char *plain[] = {(char *)bin, "devices", NULL};
    char *json[] = {(char *)bin, "devices", "--json", NULL};
    if (!driver_present()) {
        assert_int_equal(run_capture(plain, out, err, sizeof out), 1);
        assert_string_equal(out, "");
        assert_non_null(strstr(err, "cutune: no NVIDIA GPU found: "));
        assert_non_null(strstr(err, "libcuda.so.1"));
        assert_non_null(strstr(err, "tuning needs a GPU or --backend emu"));
        assert_null(strchr(strchr(err, '\n') + 1, '\n')); /* one line */
        assert_int_equal(run_capture(json, out, err, sizeof out), 1);
        assert_non_null(strstr(err, "no NVIDIA GPU found"));
    } else {
        int rc = run_capture(plain, out, err, sizeof out);
        if (rc == 1 && strstr(err, "no NVIDIA GPU found")) {
            printf("driver present but no usable GPU: %s", err);
            return;
        }
        assert_int_equal(rc, 0);
        assert_non_null(strstr(out, "GPU 0: "));
        assert_non_null(strstr(out, "UUID            GPU-"));
        assert_non_null(strstr(out, "NVML unavailable")); /* NVML pointed at a missing library */
        assert_int_equal(run_capture(json, out, err, sizeof out), 0);
        assert_non_null(strstr(out, "\"devices\""));
        assert_non_null(strstr(out, "\"energy_counter\":\tfalse"));
    }

    char *worker_bad[] = {(char *)bin, "__worker", "0", NULL};
    assert_int_equal(run_capture(worker_bad, out, err, sizeof out), 2);
    assert_non_null(strstr(err, "usage: cutune __worker"));
    char *worker_badfd[] = {(char *)bin, "__worker", "0", "987", "988", NULL};
    assert_int_equal(run_capture(worker_badfd, out, err, sizeof out), 2);
    assert_non_null(strstr(err, "not open"));
}

int main(void)
{
    /* Before anything loads NVML: this process (and the commands it runs) use a library that does not exist. */
    setenv("CUTUNE_NVML_LIB", MISSING_NVML, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uuid_format),
        cmocka_unit_test(test_init_without_driver),
        cmocka_unit_test(test_runner_gpu_new_without_driver),
        cmocka_unit_test(test_real_worker_without_driver),
        cmocka_unit_test(test_nvml_absent),
        cmocka_unit_test(test_nvml_check_macro),
        cmocka_unit_test(test_throttle_describe),
        cmocka_unit_test(test_limits_from_info),
        cmocka_unit_test(test_devices_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
