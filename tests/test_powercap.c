/* Tests of the energy component (src/energy/): the power-cap table, --power-caps parsing, the cap session and its
 * restore paths, and the energy arithmetic.
 *
 * NVML is the fake library tests/fake_nvml/ ($CUTUNE_FAKE_NVML), loaded through CUTUNE_NVML_LIB by the real loader
 * in src/gpu/nvml.c. Two fake GPUs: 0 = NVIDIA H200 (700 W, 200..700 W), 1 = NVIDIA A100-SXM4-40GB (400 W,
 * 100..400 W). The fake appends "set_limit <gpu> <mW>" to a log for every change and keeps the limits in a state
 * file, so forked children (signalled, killed) and the parent see one driver. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/gpu.h"
#include "cutune/powercap.h"
#include "cutune/util.h"
#include "gpu/nvml.h"
#include "testutil.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define H200_UUID "GPU-fa4e0000-0000-4000-8000-000000000000"
#define A100_UUID "GPU-fa4e0000-0000-4000-8000-000000000001"

static char g_dir[4096];     /* session dir: the restore file lives here */
static char g_log[4200];     /* FAKE_NVML_LOG */
static char g_state[4200];   /* FAKE_NVML_STATE */
static char g_restore[4200]; /* g_dir/powercap_<H200's UUID>.json: its restore file */

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

static unsigned int limit_now(const char *uuid)
{
    cut_powercap_device d;
    cut_err e = {{0}};
    if (cut_powercap_query(uuid, &d, &e) != 0) {
        fprintf(stderr, "%s\n", e.msg);
        return 0;
    }
    return d.current_mw;
}

/* The restore file of the GPU uuid (one per GPU, named by its UUID). */
static void restore_path(const char *uuid, char *buf, size_t n) { snprintf(buf, n, "%s/powercap_%s.json", g_dir, uuid); }

static nvmlDevice_t h200_dev(void)
{
    nvmlDevice_t d;
    assert_int_equal(cut_nvml_device_by_uuid(H200_UUID, &d), NVML_SUCCESS);
    return d;
}

/* Every fake-NVML test starts from a freshly "booted" driver: no log, configured limits, no restore file. */
static int reset_fake(void **state)
{
    (void)state;
    unlink(g_log);
    unlink(g_state);
    char path[4300];
    const char *uuids[3] = {H200_UUID, A100_UUID, "GPU-00000000-0000-0000-0000-00000000dead"};
    for (int i = 0; i < 3; i++) {
        restore_path(uuids[i], path, sizeof path);
        unlink(path);
    }
    unsetenv("FAKE_NVML_SET_ERROR");
    return 0;
}


static void write_restore_file(const char *uuid, unsigned int mw, long pid, unsigned long long start)
{
    char text[512], path[4300];
    snprintf(text, sizeof text, "{\"uuid\":\"%s\",\"name\":\"x\",\"original_mw\":%u,\"pid\":%ld,\"pid_start\":%llu}\n",
             uuid, mw, pid, start);
    restore_path(uuid, path, sizeof path);
    cut_err e = {{0}};
    assert_int_equal(cut_write_file_atomic(path, text, strlen(text), &e), 0);
}

/* ---- the table ---- */

static void test_table_models(void **state)
{
    (void)state;
    static const struct {
        const char *nvml_name;
        int caps[5];
    } want[] = {
        {"NVIDIA GeForce RTX 3090", {100, 200, 300, 420, 450}},
        {"NVIDIA GeForce RTX 4090", {150, 200, 300, 400, 450}},
        {"Tesla V100-SXM2-16GB", {100, 150, 200, 250, 300}},
        {"NVIDIA A30", {100, 120, 140, 160, 165}},
        {"NVIDIA A100-SXM4-40GB", {100, 200, 300, 400, 450}},
        {"NVIDIA A100 80GB PCIe", {100, 200, 300, 400, 450}},
        {"NVIDIA H100 80GB HBM3", {200, 325, 450, 575, 700}},
        {"NVIDIA H200", {200, 325, 450, 575, 700}},
    };
    size_t n = 0;
    const cut_powercap_model *m = cut_powercap_models(&n);
    assert_int_equal(n, 7);
    for (size_t i = 0; i < n; i++)
        for (int k = 1; k < CUT_POWERCAP_PER_MODEL; k++)
            assert_true(m[i].caps_w[k] > m[i].caps_w[k - 1]);
    for (size_t i = 0; i < CUT_ARRAY_LEN(want); i++) {
        assert_non_null(cut_powercap_find_model(want[i].nvml_name));
        int caps[5];
        cut_err e = {{0}};
        assert_int_equal(cut_powercap_caps_for(want[i].nvml_name, 0, 0, caps, &e), 0);
        assert_memory_equal(caps, want[i].caps, sizeof caps);
    }
    /* Exact names for single models, word-boundary prefixes for families. */
    assert_null(cut_powercap_find_model("NVIDIA GeForce RTX 3090 Ti"));
    assert_null(cut_powercap_find_model("NVIDIA A10"));
    assert_null(cut_powercap_find_model("NVIDIA A1000"));
    assert_null(cut_powercap_find_model("NVIDIA H20"));
    assert_null(cut_powercap_find_model(""));
}

static void test_table_spread_within_constraints(void **state)
{
    (void)state;
    /* The literal H100/H200 caps are the rule applied to the SXM range. */
    int caps[5];
    cut_powercap_spread(200, 700, caps);
    const cut_powercap_model *h200 = cut_powercap_find_model("NVIDIA H200");
    assert_memory_equal(caps, h200->caps_w, sizeof caps);
    assert_memory_equal(caps, cut_powercap_find_model("NVIDIA H100 80GB HBM3")->caps_w, sizeof caps);
    /* With the device's constraints: every cap inside them, ascending, multiples of 25 W where the ends allow. */
    static const struct {
        const char *name;
        unsigned int lo, hi;
        int want[5];
    } c[] = {
        {"NVIDIA H100 80GB HBM3", 200000, 700000, {200, 325, 450, 575, 700}},
        {"NVIDIA H100 PCIe", 200000, 350000, {200, 250, 275, 325, 350}},
        {"NVIDIA H100 NVL", 200000, 400000, {200, 250, 300, 350, 400}},
        {"NVIDIA H200", 200000, 700000, {200, 325, 450, 575, 700}},
        {"NVIDIA H200 NVL", 200000, 600000, {200, 300, 400, 500, 600}},
        {"NVIDIA H100 odd", 212000, 588000, {212, 300, 400, 500, 588}},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(c); i++) {
        cut_err e = {{0}};
        assert_int_equal(cut_powercap_caps_for(c[i].name, c[i].lo, c[i].hi, caps, &e), 0);
        assert_memory_equal(caps, c[i].want, sizeof caps);
        for (int k = 0; k < 5; k++) {
            assert_true(caps[k] * 1000u >= c[i].lo && caps[k] * 1000u <= c[i].hi);
            if (k)
                assert_true(caps[k] > caps[k - 1]);
        }
    }
    /* Fixed models ignore the constraints (the seed's caps, exactly). */
    assert_int_equal(cut_powercap_caps_for("NVIDIA A30", 100000, 165000, caps, NULL), 0);
    assert_int_equal(caps[4], 165);
}

static void test_table_unknown_gpu(void **state)
{
    (void)state;
    int caps[5];
    cut_err e = {{0}};
    assert_int_equal(cut_powercap_caps_for("NVIDIA L40S", 0, 0, caps, &e), -1);
    assert_non_null(strstr(e.msg, "'NVIDIA L40S'"));
    assert_non_null(strstr(e.msg, "NVIDIA GeForce RTX 3090"));
    assert_non_null(strstr(e.msg, "Tesla V100-SXM2-16GB"));
    assert_non_null(strstr(e.msg, "NVIDIA H200"));
    assert_non_null(strstr(e.msg, "--power-caps current"));
}

/* ---- --power-caps ---- */

static void test_parse_ok(void **state)
{
    (void)state;
    cut_powercap_spec s;
    cut_err e = {{0}};
    assert_int_equal(cut_powercap_parse("current", &s, &e), 0);
    assert_int_equal(s.kind, CUT_POWERCAP_CURRENT);
    assert_int_equal(cut_powercap_parse("all", &s, &e), 0);
    assert_int_equal(s.kind, CUT_POWERCAP_ALL);
    assert_int_equal(cut_powercap_parse("300,250.5,200,0.001", &s, &e), 0);
    assert_int_equal(s.kind, CUT_POWERCAP_LIST);
    assert_int_equal(s.n, 4);
    assert_int_equal(s.mw[0], 300000);
    assert_int_equal(s.mw[1], 250500);
    assert_int_equal(s.mw[2], 200000);
    assert_int_equal(s.mw[3], 1);
    assert_int_equal(cut_powercap_parse("450", &s, &e), 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.mw[0], 450000);
}

static void test_parse_errors(void **state)
{
    (void)state;
    static const struct {
        const char *arg, *says;
    } bad[] = {
        {"", "needs a value"},
        {"abc", "'abc' is not a number"},
        {"300,x", "'x' is not a number"},
        {"300,,200", "empty item"},
        {"300,", "empty item"},
        {",300", "empty item"},
        {"0", "'0' W is not a power cap"},
        {"0.0", "'0.0' W is not a power cap"},
        {"-5", "'-5' is not a number"},
        {"300,200,300", "300 W is listed twice"},
        {"300,300.0", "300.0 W is listed twice"},
        {"1e3", "'1e3' is not a number"},
        {"inf", "'inf' is not a number"},
        {"nan", "'nan' is not a number"},
        {" 300", "' 300' is not a number"},
        {"300W", "'300W' is not a number"},
        {".", "'.' is not a number"},
        {"99999999999", "not a plausible power cap"},
        {"Current", "'Current' is not a number"},
        {"1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "more than 16 caps"},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad); i++) {
        cut_powercap_spec s;
        cut_err e = {{0}};
        assert_int_equal(cut_powercap_parse(bad[i].arg, &s, &e), -1);
        if (!strstr(e.msg, bad[i].says))
            fprintf(stderr, "'%s': %s\n", bad[i].arg, e.msg);
        assert_non_null(strstr(e.msg, bad[i].says));
        assert_int_equal(s.n, 0);
    }
    cut_powercap_spec s;
    assert_int_equal(cut_powercap_parse(NULL, &s, NULL), -1);
}

static cut_powercap_device fake_dev(const char *name, unsigned int cur, unsigned int lo, unsigned int hi)
{
    cut_powercap_device d;
    memset(&d, 0, sizeof d);
    snprintf(d.uuid, sizeof d.uuid, "GPU-test");
    snprintf(d.name, sizeof d.name, "%s", name);
    d.current_mw = cur;
    d.min_mw = lo;
    d.max_mw = hi;
    return d;
}

static void test_resolve(void **state)
{
    (void)state;
    cut_powercap_device h200 = fake_dev("NVIDIA H200", 700000, 200000, 700000);
    cut_powercap_spec s;
    cut_powercap_list l;
    cut_err e = {{0}};
    assert_int_equal(cut_powercap_parse("current", &s, &e), 0);
    assert_int_equal(cut_powercap_resolve(&s, &h200, &l, &e), 0);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.mw[0], 700000);
    assert_int_equal(cut_powercap_parse("all", &s, &e), 0);
    assert_int_equal(cut_powercap_resolve(&s, &h200, &l, &e), 0);
    assert_int_equal(l.n, 5);
    assert_int_equal(l.mw[0], 200000);
    assert_int_equal(l.mw[4], 700000);
    assert_int_equal(cut_powercap_parse("500,300", &s, &e), 0);
    assert_int_equal(cut_powercap_resolve(&s, &h200, &l, &e), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.mw[0], 500000);
    assert_int_equal(l.mw[1], 300000);

    /* Out of range: names the cap and the allowed range; nothing resolved. */
    assert_int_equal(cut_powercap_parse("300,900", &s, &e), 0);
    assert_int_equal(cut_powercap_resolve(&s, &h200, &l, &e), -1);
    assert_non_null(strstr(e.msg, "900 W"));
    assert_non_null(strstr(e.msg, "200 W to 700 W"));
    assert_int_equal(l.n, 0);
    assert_int_equal(cut_powercap_parse("150", &s, &e), 0);
    assert_int_equal(cut_powercap_resolve(&s, &h200, &l, &e), -1);
    assert_non_null(strstr(e.msg, "150 W"));

    /* The seed's A100 caps top out at 450 W, above a 40 GB SXM4 board's 400 W maximum: refused, not clamped. */
    cut_powercap_device a100 = fake_dev("NVIDIA A100-SXM4-40GB", 400000, 100000, 400000);
    assert_int_equal(cut_powercap_parse("all", &s, &e), 0);
    assert_int_equal(cut_powercap_resolve(&s, &a100, &l, &e), -1);
    assert_non_null(strstr(e.msg, "450 W"));
    assert_non_null(strstr(e.msg, "100 W to 400 W"));

    /* Unknown GPU: "all" fails naming it and the known models; "current" and lists still work. */
    cut_powercap_device l40 = fake_dev("NVIDIA L40S", 350000, 100000, 350000);
    assert_int_equal(cut_powercap_resolve(&s, &l40, &l, &e), -1);
    assert_non_null(strstr(e.msg, "NVIDIA L40S"));
    assert_non_null(strstr(e.msg, "known models"));
    assert_int_equal(cut_powercap_parse("current", &s, &e), 0);
    assert_int_equal(cut_powercap_resolve(&s, &l40, &l, &e), 0);
    assert_int_equal(l.mw[0], 350000);
    assert_int_equal(cut_powercap_parse("200,300", &s, &e), 0);
    assert_int_equal(cut_powercap_resolve(&s, &l40, &l, &e), 0);
    assert_int_equal(l.n, 2);
}

/* ---- the fake NVML itself, through cutune's loader ---- */

static void test_fake_query(void **state)
{
    (void)state;
    cut_powercap_device d;
    cut_err e = {{0}};
    assert_int_equal(cut_powercap_query(H200_UUID, &d, &e), 0);
    assert_string_equal(d.name, "NVIDIA H200");
    assert_int_equal(d.current_mw, 700000);
    assert_int_equal(d.min_mw, 200000);
    assert_int_equal(d.max_mw, 700000);
    assert_int_equal(d.default_mw, 700000);
    assert_int_equal(cut_powercap_query(A100_UUID, &d, &e), 0);
    assert_string_equal(d.name, "NVIDIA A100-SXM4-40GB");
    assert_int_equal(d.max_mw, 400000);
    assert_int_equal(cut_powercap_query("GPU-00000000-0000-0000-0000-000000000000", &d, &e), -1);
    assert_non_null(strstr(e.msg, "NVML_ERROR_NOT_FOUND"));

    /* The wrappers nvml.c gained for this component. */
    unsigned int count = 0;
    assert_int_equal(cut_nvml_device_count(&count), NVML_SUCCESS);
    assert_int_equal(count, 2);
    nvmlDevice_t dev;
    assert_int_equal(cut_nvml_device_by_index(1, &dev), NVML_SUCCESS);
    char buf[96];
    assert_int_equal(cut_nvml_device_uuid(dev, buf, sizeof buf), NVML_SUCCESS);
    assert_string_equal(buf, A100_UUID);
    char small[8];
    assert_int_equal(cut_nvml_device_name(dev, small, sizeof small), NVML_SUCCESS);
    assert_string_equal(small, "NVIDIA "); /* truncated, terminated */
    assert_string_equal(cut_nvml_lib_path(), getenv("CUTUNE_FAKE_NVML"));
    assert_log("");
}

/* ---- the session ---- */

static void test_session_sets_in_order_and_restores(void **state)
{
    (void)state;
    char note[512];
    cut_err e = {{0}};
    assert_int_equal(cut_powercap_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_NONE);
    cut_powercap_device d;
    cut_powercap_spec spec;
    cut_powercap_list caps;
    assert_int_equal(cut_powercap_query(H200_UUID, &d, &e), 0);
    assert_int_equal(cut_powercap_parse("300,500,250", &spec, &e), 0);
    assert_int_equal(cut_powercap_resolve(&spec, &d, &caps, &e), 0);

    cut_powercap_session *s = NULL;
    assert_int_equal(cut_powercap_begin(H200_UUID, g_dir, 1, &s, &e), 0);
    assert_non_null(s);
    assert_int_equal(cut_powercap_original_mw(s), 700000);
    /* The restore file is there before the first change. */
    char *rf = slurp(g_restore);
    assert_non_null(strstr(rf, "\"uuid\":\"" H200_UUID "\""));
    assert_non_null(strstr(rf, "\"original_mw\":700000"));
    char pid[32];
    snprintf(pid, sizeof pid, "\"pid\":%d", (int)getpid());
    assert_non_null(strstr(rf, pid));
    free(rf);
    assert_log("");

    for (int i = 0; i < caps.n; i++) {
        assert_int_equal(cut_powercap_set(s, caps.mw[i], &e), 0);
        assert_int_equal(cut_powercap_current_mw(s), caps.mw[i]);
        assert_int_equal(limit_now(H200_UUID), caps.mw[i]);
    }
    /* Setting the limit it already has is no change, and not logged. */
    assert_int_equal(cut_powercap_set(s, 250000, &e), 0);
    /* While the session runs, recovery (another cutune start, say) leaves it alone. */
    assert_int_equal(cut_powercap_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_BUSY);
    assert_non_null(strstr(note, "left alone"));
    /* A second session in the same process is refused. */
    cut_powercap_session *s2 = NULL;
    assert_int_equal(cut_powercap_begin(A100_UUID, g_dir, 1, &s2, &e), -1);
    assert_non_null(strstr(e.msg, "already active"));
    assert_null(s2);

    assert_int_equal(cut_powercap_end(s, &e), 0);
    assert_log("set_limit 0 300000\nset_limit 0 500000\nset_limit 0 250000\nset_limit 0 700000\n");
    assert_false(cut_path_exists(g_restore));
    assert_int_equal(limit_now(H200_UUID), 700000);
    assert_int_equal(limit_now(A100_UUID), 400000);
    assert_int_equal(cut_powercap_end(NULL, &e), 0);
    assert_int_equal(cut_powercap_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_NONE);
}

static void test_session_last_cap_is_original(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_powercap_session *s = NULL;
    assert_int_equal(cut_powercap_begin(H200_UUID, g_dir, 1, &s, &e), 0);
    assert_int_equal(cut_powercap_set(s, 450000, &e), 0);
    assert_int_equal(cut_powercap_set(s, 700000, &e), 0);
    assert_int_equal(cut_powercap_end(s, &e), 0);
    /* Nothing to restore: already at the original. */
    assert_log("set_limit 0 450000\nset_limit 0 700000\n");
    assert_false(cut_path_exists(g_restore));
}

static void test_session_refused_without_allow(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_powercap_session *s = NULL;
    assert_int_equal(cut_powercap_begin(H200_UUID, g_dir, 0, &s, &e), 0);
    assert_false(cut_path_exists(g_restore)); /* nothing can change, so nothing to restore */
    assert_int_equal(cut_powercap_set(s, 700000, &e), 0); /* the current limit: allowed */
    assert_int_equal(cut_powercap_set(s, 300000, &e), -1);
    assert_non_null(strstr(e.msg, "refusing to change the power limit of GPU " H200_UUID " (NVIDIA H200)"));
    assert_non_null(strstr(e.msg, "from 700 W to 300 W"));
    assert_non_null(strstr(e.msg, "--allow-power-cap"));
    assert_int_equal(cut_powercap_end(s, &e), 0);
    assert_log("");
    assert_int_equal(limit_now(H200_UUID), 700000);
}

static void test_session_out_of_range_before_any_set(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_powercap_device d;
    cut_powercap_spec spec;
    cut_powercap_list caps;
    assert_int_equal(cut_powercap_query(H200_UUID, &d, &e), 0);
    assert_int_equal(cut_powercap_parse("300,250,900", &spec, &e), 0);
    assert_int_equal(cut_powercap_resolve(&spec, &d, &caps, &e), -1); /* the CLI stops here */
    assert_non_null(strstr(e.msg, "900 W is outside the range GPU " H200_UUID " (NVIDIA H200) allows: 200 W to 700 W"));
    /* The session checks too, before calling NVML. */
    cut_powercap_session *s = NULL;
    assert_int_equal(cut_powercap_begin(H200_UUID, g_dir, 1, &s, &e), 0);
    assert_int_equal(cut_powercap_set(s, 900000, &e), -1);
    assert_non_null(strstr(e.msg, "200 W to 700 W"));
    assert_int_equal(cut_powercap_set(s, 199999, &e), -1);
    assert_int_equal(cut_powercap_end(s, &e), 0);
    assert_log("");
}

static void test_session_set_failure_restores(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_powercap_session *s = NULL;
    assert_int_equal(cut_powercap_begin(H200_UUID, g_dir, 1, &s, &e), 0);
    assert_int_equal(cut_powercap_set(s, 300000, &e), 0);
    /* NVML refuses (not root): the error says so, and the original is put back at once. Here the restore is
     * refused too, so the message says how to restore by hand and the restore file stays for the next start. */
    setenv("FAKE_NVML_SET_ERROR", "4", 1);
    assert_int_equal(cut_powercap_set(s, 400000, &e), -1);
    assert_non_null(strstr(e.msg, "to 400 W failed: NVML_ERROR_NO_PERMISSION"));
    assert_non_null(strstr(e.msg, "needs root"));
    assert_non_null(strstr(e.msg, "sudo nvidia-smi -i " H200_UUID " -pl 700"));
    unsetenv("FAKE_NVML_SET_ERROR");
    assert_true(cut_path_exists(g_restore));
    assert_int_equal(cut_powercap_end(s, &e), 0);
    assert_log("set_limit 0 300000\nset_limit 0 700000\n");
    assert_false(cut_path_exists(g_restore));

    /* End cannot restore while NVML refuses: it says how to restore by hand and keeps the restore file, from
     * which the next start's recovery restores. */
    assert_int_equal(cut_powercap_begin(H200_UUID, g_dir, 1, &s, &e), 0);
    assert_int_equal(cut_powercap_set(s, 300000, &e), 0);
    setenv("FAKE_NVML_SET_ERROR", "4", 1);
    assert_int_equal(cut_powercap_end(s, &e), -1); /* end cannot restore: says so, keeps the file */
    assert_non_null(strstr(e.msg, "could not restore the power limit of GPU " H200_UUID));
    assert_true(cut_path_exists(g_restore));
    unsetenv("FAKE_NVML_SET_ERROR");
    char note[512];
    assert_int_equal(cut_powercap_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_RESTORED);
    assert_int_equal(limit_now(H200_UUID), 700000);
    assert_log("set_limit 0 300000\nset_limit 0 700000\nset_limit 0 300000\nset_limit 0 700000\n");
}

/* ---- crashes: forked children ---- */

/* Child body: begins a session, caps the H200 at mw, tells the parent, then waits to be signalled. Exit codes
 * 10.. mean a step failed (the parent reports them). */
static void child_cap_and_wait(int ready_fd, long mw)
{
    cut_err e = {{0}};
    cut_powercap_session *s = NULL;
    if (cut_powercap_begin(H200_UUID, g_dir, 1, &s, &e) != 0)
        _exit(10);
    if (cut_powercap_set(s, (unsigned int)mw, &e) != 0)
        _exit(11);
    if (write(ready_fd, "r", 1) != 1)
        _exit(12);
    for (;;)
        pause();
}

/* A child running child_cap_and_wait, signalled once it has capped: its wait status. */
static int run_capped_child(unsigned int mw, int sig)
{
    const int status = tu_signal_child(child_cap_and_wait, (long)mw, sig, "capping");
    if (status == -1)
        fail();
    return status;
}

static void child_signal_restores(int sig)
{
    int status = run_capped_child(300000, sig);
    /* The handler restored, then re-raised: the child died of the signal, not by exit. */
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), sig);
    assert_log("set_limit 0 300000\nset_limit 0 700000\n");
    assert_false(cut_path_exists(g_restore));
    assert_int_equal(limit_now(H200_UUID), 700000);
    cut_err e = {{0}};
    assert_int_equal(cut_powercap_recover(g_dir, NULL, 0, &e), CUT_POWERCAP_RECOVER_NONE);
}

static void test_sigterm_restores(void **state)
{
    (void)state;
    child_signal_restores(SIGTERM);
}

static void test_sigint_restores(void **state)
{
    (void)state;
    child_signal_restores(SIGINT);
}

static void test_sigkill_then_recover(void **state)
{
    (void)state;
    int status = run_capped_child(250000, SIGKILL);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
    /* Nothing ran in the child: the cap stays, the restore file names the original. */
    assert_log("set_limit 0 250000\n");
    assert_true(cut_path_exists(g_restore));
    assert_int_equal(limit_now(H200_UUID), 250000);

    char note[512];
    cut_err e = {{0}};
    assert_int_equal(cut_powercap_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_RESTORED);
    assert_non_null(strstr(note, "from 250 W to 700 W"));
    assert_non_null(strstr(note, H200_UUID));
    assert_log("set_limit 0 250000\nset_limit 0 700000\n"); /* GPU 1 never touched */
    assert_false(cut_path_exists(g_restore));
    assert_int_equal(limit_now(H200_UUID), 700000);
    assert_int_equal(limit_now(A100_UUID), 400000);
    assert_int_equal(cut_powercap_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_NONE);
}

/* A child that exits without ending its session: the atexit handler restores. Its own forked child (a worker)
 * exiting first must not. */
static void test_exit_without_end_restores_and_workers_do_not(void **state)
{
    (void)state;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cut_err e = {{0}};
        cut_powercap_session *s = NULL;
        if (cut_powercap_begin(H200_UUID, g_dir, 1, &s, &e) != 0 || cut_powercap_set(s, 350000, &e) != 0)
            _exit(10);
        pid_t worker = fork();
        if (worker == 0)
            exit(0); /* runs the inherited atexit handler: must leave the cap alone */
        int st = 0;
        if (worker < 0 || waitpid(worker, &st, 0) != worker || limit_now(H200_UUID) != 350000)
            _exit(11);
        exit(0); /* no cut_powercap_end */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_log("set_limit 0 350000\nset_limit 0 700000\n");
    assert_false(cut_path_exists(g_restore));
}

static void test_recover_cases(void **state)
{
    (void)state;
    char note[512], a100[4300], dead_path[4300];
    cut_err e = {{0}};
    restore_path(A100_UUID, a100, sizeof a100);
    /* A live process (our parent, ctest) owns the file: busy. */
    write_restore_file(H200_UUID, 300000, (long)getppid(), 0);
    assert_int_equal(cut_powercap_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_BUSY);
    assert_true(cut_path_exists(g_restore));
    /* Begin refuses while the file's process is alive, naming the file. */
    cut_powercap_session *s = NULL;
    assert_int_equal(cut_powercap_begin(H200_UUID, g_dir, 1, &s, &e), -1);
    assert_non_null(strstr(e.msg, "powercap_" H200_UUID ".json"));
    assert_null(s);
    unlink(g_restore);

    /* The same pid with another start time: the pid was reused, the session's process is gone. The limit is
     * already the original one, so nothing is set; the stale file goes. */
    write_restore_file(A100_UUID, 400000, (long)getppid(), 1);
    assert_int_equal(cut_powercap_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_RESTORED);
    assert_non_null(strstr(note, "already at its original 400 W"));
    assert_false(cut_path_exists(a100));
    assert_log("");

    /* A dead pid naming the A100 with a different original: only the A100 is set. */
    fflush(NULL);
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    write_restore_file(A100_UUID, 250000, (long)dead, 0);
    assert_int_equal(cut_powercap_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_RESTORED);
    assert_log("set_limit 1 250000\n");
    assert_int_equal(limit_now(H200_UUID), 700000);

    /* A GPU that is not there: error, file kept. */
    write_restore_file("GPU-00000000-0000-0000-0000-00000000dead", 250000, (long)dead, 0);
    restore_path("GPU-00000000-0000-0000-0000-00000000dead", dead_path, sizeof dead_path);
    assert_int_equal(cut_powercap_recover(g_dir, note, sizeof note, &e), -1);
    assert_non_null(strstr(e.msg, "which NVML cannot find"));
    assert_true(cut_path_exists(dead_path));
    unlink(dead_path);

    /* A corrupt file (issue 15): the GPU its name gives goes to NVML's default limit, never to what a crashed run
     * left, and the file goes (before: an error, the file kept). */
    cut_powercap_session *c = NULL;
    assert_int_equal(cut_powercap_begin(H200_UUID, g_dir, 1, &c, &e), 0);
    assert_int_equal(cut_powercap_set(c, 300000, &e), 0);
    assert_int_equal(cut_powercap_end(c, &e), 0);
    assert_int_equal(cut_nvml_set_power_limit_mw(h200_dev(), 300000), NVML_SUCCESS); /* as a crash would leave it */
    cut_write_file_atomic(g_restore, "{\"uuid\":", 8, NULL);
    assert_int_equal(cut_powercap_recover(g_dir, note, sizeof note, &e), CUT_POWERCAP_RECOVER_RESTORED);
    assert_non_null(strstr(note, "was not valid"));
    assert_int_equal(limit_now(H200_UUID), 700000);
    assert_false(cut_path_exists(g_restore));
}

/* The signal matrix (issue 15): every catchable signal that ends a process, interrupts and crashes alike, restores
 * the limit before the process dies of it. */
static void test_crash_signals_restore(void **state)
{
    (void)state;
    const int sigs[] = {SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        reset_fake(NULL);
        child_signal_restores(sigs[i]);
        printf("signal %d (%s): restored\n", sigs[i], strsignal(sigs[i]));
    }
}

/* After a SIGKILL, the next session on that GPU recovers first: the original it records is the GPU's own limit,
 * never the crashed run's cap. */
static void test_original_never_a_crashed_cap(void **state)
{
    (void)state;
    int status = run_capped_child(250000, SIGKILL);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(limit_now(H200_UUID), 250000);
    cut_err e = {{0}};
    cut_powercap_session *s = NULL;
    assert_int_equal(cut_powercap_begin(H200_UUID, g_dir, 1, &s, &e), 0);
    assert_int_equal(cut_powercap_original_mw(s), 700000);
    assert_int_equal(cut_powercap_set(s, 400000, &e), 0);
    assert_int_equal(cut_powercap_end(s, &e), 0);
    assert_int_equal(limit_now(H200_UUID), 700000);
}

/* Two capped runs on one GPU: the second (another process) is refused while the first holds the GPU's lock; a
 * session on the other GPU is not. */
static void test_one_capped_run_per_gpu(void **state)
{
    (void)state;
    const pid_t pid = tu_fork_ready(child_cap_and_wait, 300000, "capping");
    assert_true(pid > 0);
    cut_err e = {{0}};
    cut_powercap_session *s = NULL;
    assert_int_equal(cut_powercap_begin(H200_UUID, g_dir, 1, &s, &e), -1);
    assert_non_null(strstr(e.msg, "being power-capped by another cutune process"));
    assert_int_equal(limit_now(H200_UUID), 300000); /* untouched */
    assert_int_equal(cut_powercap_begin(A100_UUID, g_dir, 1, &s, &e), 0);
    assert_int_equal(cut_powercap_end(s, &e), 0);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    assert_int_equal(limit_now(H200_UUID), 700000);
}

/* A busy or throttled GPU (issue 15): other processes on it (not this one, not our worker) and the clock-event
 * reasons that slow it, read from NVML for every trial's record. */
static void test_busy_and_throttled(void **state)
{
    (void)state;
    char procs[64];
    snprintf(procs, sizeof procs, "4242,%d,777", (int)getpid());
    setenv("FAKE_NVML_PROCS", procs, 1);
    int others = 0;
    long long events = 0;
    const int worker = 777;
    cut_gpu_sample_load(H200_UUID, &worker, 1, &others, &events);
    assert_int_equal(others, 1); /* 4242: ours and our worker's contexts do not count */
    assert_true(events >= 0);
    assert_int_equal(cut_gpu_throttling(events), 0); /* 300 W drawn under a 700 W limit */
    unsetenv("FAKE_NVML_PROCS");
    cut_gpu_sample_load(H200_UUID, NULL, 0, &others, &events);
    assert_int_equal(others, 0);
    /* capped under the fake's 300 W draw: the software power cap holds the clocks back */
    assert_int_equal(cut_nvml_set_power_limit_mw(h200_dev(), 250000), NVML_SUCCESS);
    cut_gpu_sample_load(H200_UUID, NULL, 0, &others, &events);
    assert_true(cut_gpu_throttling(events) & (long long)NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP);
    assert_int_equal(cut_gpu_throttling(NVML_CLOCKS_EVENT_REASON_GPU_IDLE), 0);
    assert_int_equal(cut_gpu_throttling(-1), 0);
    cut_gpu_sample_load("GPU-00000000-0000-0000-0000-00000000dead", NULL, 0, &others, &events);
    assert_int_equal(others, -1);
    assert_true(events == -1);
}

/* ---- energy arithmetic ---- */

/* Samples of a counter that steps by step_mj every period_s, polled every poll_s for dur_s from t0. */
static size_t synth(cut_energy_sample *s, size_t cap, double t0, double dur_s, double poll_s, double period_s,
                    unsigned long long step_mj)
{
    size_t n = 0;
    for (double t = t0; t <= t0 + dur_s + 1e-9 && n < cap; t += poll_s) {
        s[n].t_s = t;
        s[n].mj = 5000000ULL + (unsigned long long)floor(t / period_s + 1e-9) * step_mj;
        n++;
    }
    return n;
}

static void test_energy_compute(void **state)
{
    (void)state;
    /* 300 W, 100 ms steps (30 J each), polled every 10 ms for 1 s; 1000 iterations of 2 GFLOP in exactly 1 s. */
    cut_energy_sample s[200];
    size_t n = synth(s, 200, 0.0, 1.0, 0.01, 0.1, 30000);
    cut_energy_stats st;
    cut_err e = {{0}};
    assert_int_equal(cut_energy_compute(s, n, 1.0, 1000, 2e9, &st, &e), 0);
    assert_int_equal(st.iters, 1000);
    assert_true(fabs(st.energy_mj - 300000) <= 30000);
    assert_int_equal(st.counter_steps, 10);
    assert_true(fabs(st.energy_per_iter_mj - 300.0) <= 30.0);
    assert_true(fabs(st.time_per_iter_ms - 1.0) < 1e-9);
    assert_true(fabs(st.gflops - 2000.0) < 1e-6);
    assert_true(fabs(st.avg_power_w - 300.0) <= 30.0);
    assert_true(fabs(st.edp_ms_mj - st.time_per_iter_ms * st.energy_per_iter_mj) < 1e-9);
    assert_true(fabs(cut_energy_step_period_s(s, n) - 0.1) < 0.011);

    /* elapsed <= 0: the samples' window is the time. */
    assert_int_equal(cut_energy_compute(s, n, 0, 500, 0, &st, &e), 0);
    assert_true(fabs(st.time_per_iter_ms - 2.0) < 1e-6);
    assert_true(st.gflops == 0);

    /* Errors. */
    assert_int_equal(cut_energy_compute(s, 1, 1.0, 10, 0, &st, &e), -1);
    assert_non_null(strstr(e.msg, "at least 2"));
    assert_int_equal(cut_energy_compute(s, n, 1.0, 0, 0, &st, &e), -1);
    cut_energy_sample back[3] = {{0, 100}, {0.1, 200}, {0.2, 150}};
    assert_int_equal(cut_energy_compute(back, 3, 1.0, 10, 0, &st, &e), -1);
    assert_non_null(strstr(e.msg, "went backwards"));
    cut_energy_sample flat[2] = {{1.0, 100}, {1.0, 100}};
    assert_int_equal(cut_energy_compute(flat, 2, 0, 10, 0, &st, &e), -1);
    assert_non_null(strstr(e.msg, "no measurable time"));
    /* No change seen: 0 steps, the caller's cue to run longer. */
    assert_int_equal(cut_energy_compute(flat, 2, 0.05, 10, 0, &st, &e), 0);
    assert_int_equal(st.counter_steps, 0);
    assert_true(cut_energy_step_period_s(flat, 2) == 0);
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* 300 W for 1 s through the fake's stepping counter and cutune's NVML wrapper: 300 J, give or take one step. */
static void test_energy_fake_counter(void **state)
{
    (void)state;
    nvmlDevice_t dev;
    assert_int_equal(cut_nvml_device_by_uuid(H200_UUID, &dev), NVML_SUCCESS);
    unsigned int mw = 0;
    assert_int_equal(cut_nvml_power_mw(dev, &mw), NVML_SUCCESS);
    assert_int_equal(mw, 300000);
    cut_energy_sample s[400];
    size_t n = 0;
    double t0 = cut_now_s();
    for (;;) {
        double t = cut_now_s();
        assert_int_equal(cut_nvml_energy_mj(dev, &s[n].mj), NVML_SUCCESS);
        s[n].t_s = t;
        n++;
        if (t - t0 >= 1.0 || n == CUT_ARRAY_LEN(s))
            break;
        sleep_s(0.005);
    }
    cut_energy_stats st;
    cut_err e = {{0}};
    assert_int_equal(cut_energy_compute(s, n, 0, 100, 0, &st, &e), 0);
    if (fabs(st.energy_mj - 300000) > 30000 || st.counter_steps < 9 || st.counter_steps > 11)
        fprintf(stderr, "energy %.0f mJ over %.3f s, %d steps, %zu samples\n", st.energy_mj, st.window_s,
                st.counter_steps, n);
    assert_true(fabs(st.energy_mj - 300000) <= 30000);
    assert_true(st.counter_steps >= 9 && st.counter_steps <= 11);
    assert_true(fabs(st.energy_per_iter_mj - 3000) <= 300);
    assert_true(fabs(st.avg_power_w - 300) <= 30);
    double period = cut_energy_step_period_s(s, n);
    assert_true(period > 0.08 && period < 0.12);

    /* Iterations to span 10 steps, calibrated on this run: (10 + 1) x 100 ms at 10 ms per iteration. */
    assert_int_equal(cut_energy_iters_for_steps(1.0, 100, 0.1, CUT_ENERGY_MIN_STEPS), 110);
    long long need = cut_energy_iters_for_steps(st.window_s, 100, period, CUT_ENERGY_MIN_STEPS);
    assert_true(need >= 100 && need <= 160);

    /* Throttle reasons follow the cap: 300 W drawn under a 250 W limit is a software power cap. */
    unsigned long long r = 1;
    assert_int_equal(cut_nvml_throttle_reasons(dev, &r), NVML_SUCCESS);
    assert_int_equal(r, 0);
    assert_int_equal(cut_nvml_set_power_limit_mw(dev, 250000), NVML_SUCCESS);
    assert_int_equal(cut_nvml_throttle_reasons(dev, &r), NVML_SUCCESS);
    assert_true(r & NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP);
    assert_int_equal(cut_nvml_set_power_limit_mw(dev, 700000), NVML_SUCCESS);
}

static void test_iters_for_steps(void **state)
{
    (void)state;
    /* 100 us per iteration, 100 ms steps: 11 periods = 1.1 s = 11000 iterations. */
    assert_int_equal(cut_energy_iters_for_steps(0.01, 100, 0.1, 10), 11000);
    assert_int_equal(cut_energy_iters_for_steps(0.01, 100, 0, 10), 11000); /* default period */
    assert_int_equal(cut_energy_iters_for_steps(0.01, 100, 0.02, 10), 2200);
    assert_int_equal(cut_energy_iters_for_steps(100.0, 1, 0.1, 10), 1); /* one slow iteration spans enough */
    assert_int_equal(cut_energy_iters_for_steps(0, 100, 0.1, 10), -1);
    assert_int_equal(cut_energy_iters_for_steps(0.01, 0, 0.1, 10), -1);
    assert_int_equal(cut_energy_iters_for_steps(-1, 1, 0.1, 10), -1);
    assert_true(cut_energy_iters_for_steps(1e-300, 1, 0.1, 10) > 0); /* saturates, no overflow */
}

static void test_cv(void **state)
{
    (void)state;
    const double same[] = {5, 5, 5};
    assert_true(cut_energy_cv(same, 3) == 0);
    const double x[] = {1, 2, 3};
    assert_true(fabs(cut_energy_cv(x, 3) - 0.5) < 1e-12); /* sd 1 (n - 1), mean 2 */
    const double y[] = {10, 12};
    assert_true(fabs(cut_energy_cv(y, 2) - sqrt(2.0) / 11.0) < 1e-12);
    assert_true(cut_energy_cv(x, 1) == 0);
    assert_true(cut_energy_cv(NULL, 3) == 0);
    const double zeros[] = {0, 0};
    assert_true(cut_energy_cv(zeros, 2) == 0);
    const double sym[] = {-1, 1};
    assert_true(isnan(cut_energy_cv(sym, 2)));
    const double neg[] = {-1, -2, -3};
    assert_true(fabs(cut_energy_cv(neg, 3) - 0.5) < 1e-12);
}

static void test_energy_format(void **state)
{
    (void)state;
    cut_energy_stats st = {.iters = 1000,
                           .energy_mj = 300000,
                           .window_s = 1,
                           .energy_per_iter_mj = 15.67,
                           .time_per_iter_ms = 0.1231,
                           .gflops = 1234.5,
                           .avg_power_w = 300,
                           .edp_ms_mj = 0.1231 * 15.67,
                           .counter_steps = 12};
    char buf[512];
    cut_energy_format(&st, buf, sizeof buf);
    /* The lines seed 001's generate_perfenergy.py looks for. */
    assert_non_null(strstr(buf, "GFLOP/s: 1234.50\n"));
    assert_non_null(strstr(buf, "Mean energy per iteration: 15.6700 mJ\n"));
    assert_non_null(strstr(buf, "Mean time per iteration: 0.123100 ms\n"));
    assert_non_null(strstr(buf, "Energy counter steps: 12\n"));
}

int main(void)
{
    const char *fake = getenv("CUTUNE_FAKE_NVML");
    if (!fake || !*fake || access(fake, R_OK) != 0) {
        fprintf(stderr, "skipping: CUTUNE_FAKE_NVML does not name the fake NVML library (run under ctest)\n");
        return 77;
    }
    char *dir = tu_tmpdir("powercap");
    if (!dir)
        return 1;
    snprintf(g_dir, sizeof g_dir, "%s/run", dir);
    snprintf(g_log, sizeof g_log, "%s/nvml.log", dir);
    snprintf(g_state, sizeof g_state, "%s/nvml.state", dir);
    snprintf(g_restore, sizeof g_restore, "%s/powercap_%s.json", g_dir, H200_UUID);
    free(dir);
    /* Before the first NVML use: the loader reads CUTUNE_NVML_LIB once, the fake reads its config at init. */
    setenv("CUTUNE_NVML_LIB", fake, 1);
    setenv("FAKE_NVML_GPUS", "NVIDIA H200:700000:200000:700000,NVIDIA A100-SXM4-40GB:400000:100000:400000", 1);
    setenv("FAKE_NVML_LOG", g_log, 1);
    setenv("FAKE_NVML_STATE", g_state, 1);
    setenv("FAKE_NVML_ENERGY", "300:100", 1);
    cut_err e = {{0}};
    if (!cut_nvml_load(&e)) {
        fprintf(stderr, "cannot load the fake NVML: %s\n", e.msg);
        return 1;
    }
    if (cut_mkdirs(g_dir, &e) != 0)
        return 1;

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_models),
        cmocka_unit_test(test_table_spread_within_constraints),
        cmocka_unit_test(test_table_unknown_gpu),
        cmocka_unit_test(test_parse_ok),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_resolve),
        cmocka_unit_test_setup(test_fake_query, reset_fake),
        cmocka_unit_test_setup(test_session_sets_in_order_and_restores, reset_fake),
        cmocka_unit_test_setup(test_session_last_cap_is_original, reset_fake),
        cmocka_unit_test_setup(test_session_refused_without_allow, reset_fake),
        cmocka_unit_test_setup(test_session_out_of_range_before_any_set, reset_fake),
        cmocka_unit_test_setup(test_session_set_failure_restores, reset_fake),
        cmocka_unit_test_setup(test_sigterm_restores, reset_fake),
        cmocka_unit_test_setup(test_sigint_restores, reset_fake),
        cmocka_unit_test_setup(test_sigkill_then_recover, reset_fake),
        cmocka_unit_test_setup(test_exit_without_end_restores_and_workers_do_not, reset_fake),
        cmocka_unit_test_setup(test_recover_cases, reset_fake),
        cmocka_unit_test_setup(test_crash_signals_restore, reset_fake),
        cmocka_unit_test_setup(test_original_never_a_crashed_cap, reset_fake),
        cmocka_unit_test_setup(test_one_capped_run_per_gpu, reset_fake),
        cmocka_unit_test_setup(test_busy_and_throttled, reset_fake),
        cmocka_unit_test(test_energy_compute),
        cmocka_unit_test_setup(test_energy_fake_counter, reset_fake),
        cmocka_unit_test(test_iters_for_steps),
        cmocka_unit_test(test_cv),
        cmocka_unit_test(test_energy_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
