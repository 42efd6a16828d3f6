/* A fake libnvidia-ml.so for cutune's tests (built as libfake_nvml.so; tests load it through CUTUNE_NVML_LIB, so
 * the real loader in src/gpu/nvml.c is what runs). It exports the NVML entry points cutune resolves, with NVML's
 * ABI declared by hand below (enums are ints, handles opaque pointers), and simulates just enough of a driver to
 * test power caps and energy arithmetic without a GPU.
 *
 * Configuration (environment):
 *   FAKE_NVML_GPUS   "name:limit:min:max,name:limit:min:max,..." in mW; default "NVIDIA H200:700000:200000:700000".
 *                    GPU i gets UUID "GPU-fa4e0000-0000-4000-8000-00000000000i". Read at nvmlInit_v2.
 *   FAKE_NVML_MODES  "m0,m1,...": the compute mode each GPU boots with (0 DEFAULT, 1 EXCLUSIVE_THREAD,
 *                    2 PROHIBITED, 3 EXCLUSIVE_PROCESS); missing entries are 0. Read at nvmlInit_v2.
 *   FAKE_NVML_LOG    file; every call that changes state appends one line: "set_limit <gpu index> <mW>" or
 *                    "set_mode <gpu index> <mode>". Read at nvmlInit_v2.
 *   FAKE_NVML_STATE  file; the current limits and compute modes ("<index> <mW> <mode>" lines) live there instead of
 *                    in memory, re-read by every call, so a second process (after a crash, say) sees what the first
 *                    left, as with a real driver. Absent file = the boot values from FAKE_NVML_GPUS and
 *                    FAKE_NVML_MODES. Read at nvmlInit_v2.
 *   FAKE_NVML_ENERGY "W[:step_ms[:start_mJ]]", default "300:100:1000000": the total-energy counter (mJ) is
 *                    start_mJ + W x (whole steps of step_ms in CLOCK_MONOTONIC's time) x step_ms, so it advances
 *                    in steps like the H200's ~100 ms granularity and is the same in every process, as a
 *                    driver's counter is; power usage reads W. Read at every call.
 *   FAKE_NVML_PROCS  "pid,pid,...": the processes nvmlDeviceGetComputeRunningProcesses_v3 reports on every GPU.
 *   FAKE_NVML_SET_ERROR  an nvmlReturn_t code that nvmlDeviceSetPowerManagementLimit returns instead of
 *                    succeeding (4 = NVML_ERROR_NO_PERMISSION). Read at every call.
 *   FAKE_NVML_MODE_SET_ERROR  "CODE" or "CODE:INDEX": an nvmlReturn_t code that nvmlDeviceSetComputeMode returns
 *                    instead of succeeding, on every GPU or only on GPU INDEX. Read at every call.
 *
 * nvmlDeviceSetPowerManagementLimit and nvmlDeviceSetComputeMode may run inside cutune's SIGTERM handler, so they
 * and what they call use only
 * open/read/write/close/rename and hand-written number formatting (no stdio, no malloc). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- NVML's ABI, by hand ---- */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

enum {
    FAKE_SUCCESS = 0,
    FAKE_ERROR_UNINITIALIZED = 1,
    FAKE_ERROR_INVALID_ARGUMENT = 2,
    FAKE_ERROR_NOT_SUPPORTED = 3,
    FAKE_ERROR_NOT_FOUND = 6,
    FAKE_ERROR_INSUFFICIENT_SIZE = 7,
    FAKE_ERROR_UNKNOWN = 999,
};
enum { FAKE_CLOCK_GRAPHICS = 0, FAKE_CLOCK_SM = 1, FAKE_CLOCK_MEM = 2, FAKE_CLOCK_VIDEO = 3 };
#define FAKE_REASON_GPU_IDLE 0x1ULL
#define FAKE_REASON_SW_POWER_CAP 0x4ULL

#define FAKE_MAX_GPUS 8
#define FAKE_PATH_MAX 1024

struct nvmlDevice_st {
    unsigned int index;
    char name[96];
    char uuid[96];
    unsigned int limit_mw, min_mw, max_mw, default_mw;
    int mode, boot_mode; /* compute mode now, and at boot (FAKE_NVML_MODES) */
};

static struct nvmlDevice_st g_gpus[FAKE_MAX_GPUS];
static unsigned int g_ngpus;
static int g_init_count;
static char g_log_path[FAKE_PATH_MAX];
static char g_state_path[FAKE_PATH_MAX];

/* ---- async-signal-safe helpers ---- */

/* Appends the decimal digits of v at p; returns the new end. */
static char *put_uint(char *p, unsigned long long v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

static char *put_str(char *p, const char *s)
{
    while (*s)
        *p++ = *s++;
    return p;
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t k = write(fd, buf, len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        buf += k;
        len -= (size_t)k;
    }
    return 0;
}

/* Parses an unsigned decimal at *p, advancing it; -1 when there are no digits. */
static int get_uint(const char **p, unsigned long long *v)
{
    const char *s = *p;
    unsigned long long x = 0;
    if (*s < '0' || *s > '9')
        return -1;
    while (*s >= '0' && *s <= '9')
        x = x * 10 + (unsigned long long)(*s++ - '0');
    *v = x;
    *p = s;
    return 0;
}

/* ---- persistent state ---- */

/* Reads "<index> <mW> <mode>" lines from FAKE_NVML_STATE into the in-memory limits and modes (a line without a
 * mode leaves it); a missing file means the boot values from FAKE_NVML_GPUS and FAKE_NVML_MODES. */
static void state_load(void)
{
    if (!g_state_path[0])
        return;
    int fd = open(g_state_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) /* a removed file is a freshly booted driver: the configured limits */
            for (unsigned int i = 0; i < g_ngpus; i++) {
                g_gpus[i].limit_mw = g_gpus[i].default_mw;
                g_gpus[i].mode = g_gpus[i].boot_mode;
            }
        return;
    }
    char buf[1024];
    size_t len = 0;
    for (;;) {
        ssize_t k = read(fd, buf + len, sizeof buf - 1 - len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        len += (size_t)k;
    }
    close(fd);
    buf[len] = '\0';
    const char *p = buf;
    while (*p) {
        unsigned long long idx, mw, mode;
        if (get_uint(&p, &idx) == 0 && *p == ' ' && (p++, get_uint(&p, &mw) == 0) && idx < g_ngpus) {
            g_gpus[idx].limit_mw = (unsigned int)mw;
            if (*p == ' ' && (p++, get_uint(&p, &mode) == 0))
                g_gpus[idx].mode = (int)mode;
        }
        while (*p && *p != '\n')
            p++;
        if (*p == '\n')
            p++;
    }
}

/* Writes all limits and modes to FAKE_NVML_STATE through a temporary file and rename, so a reader never sees half a file. */
static int state_save(void)
{
    if (!g_state_path[0])
        return 0;
    char tmp[FAKE_PATH_MAX + 32];
    char *t = put_str(tmp, g_state_path);
    t = put_str(t, ".tmp.");
    t = put_uint(t, (unsigned long long)getpid());
    *t = '\0';
    char buf[FAKE_MAX_GPUS * 48];
    char *p = buf;
    for (unsigned int i = 0; i < g_ngpus; i++) {
        p = put_uint(p, i);
        *p++ = ' ';
        p = put_uint(p, g_gpus[i].limit_mw);
        *p++ = ' ';
        p = put_uint(p, (unsigned long long)g_gpus[i].mode);
        *p++ = '\n';
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    int rc = write_all(fd, buf, (size_t)(p - buf));
    close(fd);
    if (rc != 0 || rename(tmp, g_state_path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Appends "<what> <idx> <value>" to FAKE_NVML_LOG. */
static void log_set(const char *what, unsigned int idx, unsigned int value)
{
    if (!g_log_path[0])
        return;
    char line[64];
    char *p = put_str(line, what);
    *p++ = ' ';
    p = put_uint(p, idx);
    *p++ = ' ';
    p = put_uint(p, value);
    *p++ = '\n';
    /* One write with O_APPEND: lines from several processes never interleave. */
    int fd = open(g_log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    (void)write_all(fd, line, (size_t)(p - line));
    close(fd);
}

/* ---- configuration ---- */

static int parse_gpu(const char *spec, size_t len, struct nvmlDevice_st *g)
{
    const char *colon = memchr(spec, ':', len);
    if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof g->name)
        return -1;
    memcpy(g->name, spec, (size_t)(colon - spec));
    g->name[colon - spec] = '\0';
    unsigned long long v[3];
    const char *p = colon + 1;
    for (int i = 0; i < 3; i++) {
        if (get_uint(&p, &v[i]) != 0 || v[i] > 0xffffffffULL)
            return -1;
        if (i < 2 && *p++ != ':')
            return -1;
    }
    if (p != spec + len || v[1] > v[2] || v[0] < v[1] || v[0] > v[2])
        return -1;
    g->limit_mw = g->default_mw = (unsigned int)v[0];
    g->min_mw = (unsigned int)v[1];
    g->max_mw = (unsigned int)v[2];
    return 0;
}

static int parse_gpus(const char *list)
{
    g_ngpus = 0;
    while (*list) {
        const char *end = strchr(list, ',');
        size_t len = end ? (size_t)(end - list) : strlen(list);
        if (g_ngpus == FAKE_MAX_GPUS || parse_gpu(list, len, &g_gpus[g_ngpus]) != 0) {
            fprintf(stderr, "fake_nvml: bad FAKE_NVML_GPUS entry '%.*s' (want name:limit_mW:min_mW:max_mW)\n",
                    (int)len, list);
            return -1;
        }
        g_gpus[g_ngpus].index = g_ngpus;
        snprintf(g_gpus[g_ngpus].uuid, sizeof g_gpus[g_ngpus].uuid, "GPU-fa4e0000-0000-4000-8000-%012x", g_ngpus);
        g_ngpus++;
        list += len + (end ? 1 : 0);
    }
    return g_ngpus ? 0 : -1;
}

/* FAKE_NVML_MODES "m0,m1,...": each GPU's boot compute mode (0..3; missing entries 0). */
static int parse_modes(const char *list)
{
    for (unsigned int i = 0; i < g_ngpus; i++)
        g_gpus[i].mode = g_gpus[i].boot_mode = 0;
    for (unsigned int i = 0; list && *list && i < g_ngpus; i++) {
        unsigned long long m;
        if (get_uint(&list, &m) != 0 || m > 3 || (*list && *list != ',')) {
            fprintf(stderr, "fake_nvml: bad FAKE_NVML_MODES '%s' (want modes 0..3, comma-separated)\n",
                    getenv("FAKE_NVML_MODES"));
            return -1;
        }
        g_gpus[i].mode = g_gpus[i].boot_mode = (int)m;
        if (*list == ',')
            list++;
    }
    return 0;
}

static void copy_env(char *dst, size_t n, const char *var)
{
    const char *v = getenv(var);
    snprintf(dst, n, "%s", v ? v : "");
}

/* FAKE_NVML_ENERGY "W[:step_ms[:start_mJ]]". */
static void energy_config(double *watts, double *step_ms, unsigned long long *start_mj)
{
    *watts = 300.0;
    *step_ms = 100.0;
    *start_mj = 1000000ULL;
    const char *s = getenv("FAKE_NVML_ENERGY");
    if (!s || !*s)
        return;
    char *end;
    double w = strtod(s, &end);
    if (end != s && w >= 0)
        *watts = w;
    if (*end == ':') {
        s = end + 1;
        double st = strtod(s, &end);
        if (end != s && st > 0)
            *step_ms = st;
    }
    if (*end == ':') {
        s = end + 1;
        unsigned long long st = strtoull(s, &end, 10);
        if (end != s)
            *start_mj = st;
    }
}

/* ---- the NVML entry points ---- */

#define FAKE_API __attribute__((visibility("default")))
#define REQUIRE_INIT()                                                                                               \
    do {                                                                                                             \
        if (g_init_count <= 0)                                                                                       \
            return FAKE_ERROR_UNINITIALIZED;                                                                         \
    } while (0)
#define REQUIRE_DEV(dev)                                                                                             \
    do {                                                                                                             \
        REQUIRE_INIT();                                                                                              \
        if (!(dev) || (dev) < g_gpus || (dev) >= g_gpus + g_ngpus)                                                   \
            return FAKE_ERROR_INVALID_ARGUMENT;                                                                      \
    } while (0)

FAKE_API nvmlReturn_t nvmlInit_v2(void)
{
    if (g_init_count > 0) {
        g_init_count++;
        return FAKE_SUCCESS;
    }
    const char *gpus = getenv("FAKE_NVML_GPUS");
    if (parse_gpus(gpus && *gpus ? gpus : "NVIDIA H200:700000:200000:700000") != 0 ||
        parse_modes(getenv("FAKE_NVML_MODES")) != 0)
        return FAKE_ERROR_UNKNOWN;
    copy_env(g_log_path, sizeof g_log_path, "FAKE_NVML_LOG");
    copy_env(g_state_path, sizeof g_state_path, "FAKE_NVML_STATE");
    g_init_count = 1;
    return FAKE_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlShutdown(void)
{
    REQUIRE_INIT();
    g_init_count--;
    return FAKE_SUCCESS;
}

FAKE_API const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case FAKE_SUCCESS: return "Success";
    case FAKE_ERROR_UNINITIALIZED: return "Uninitialized";
    case FAKE_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case FAKE_ERROR_NOT_SUPPORTED: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case FAKE_ERROR_NOT_FOUND: return "Not Found";
    case FAKE_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    default: return "Unknown Error";
    }
}

FAKE_API nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int n)
{
    REQUIRE_INIT();
    const char *v = "999.99.99-fake";
    if (!buf || n < strlen(v) + 1)
        return FAKE_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, v, strlen(v) + 1);
    return FAKE_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    REQUIRE_INIT();
    if (!count)
        return FAKE_ERROR_INVALID_ARGUMENT;
    *count = g_ngpus;
    return FAKE_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int idx, nvmlDevice_t *dev)
{
    REQUIRE_INIT();
    if (!dev || idx >= g_ngpus)
        return FAKE_ERROR_INVALID_ARGUMENT;
    *dev = &g_gpus[idx];
    return FAKE_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *dev)
{
    REQUIRE_INIT();
    if (!uuid || !dev)
        return FAKE_ERROR_INVALID_ARGUMENT;
    for (unsigned int i = 0; i < g_ngpus; i++) {
        if (strcmp(g_gpus[i].uuid, uuid) == 0) {
            *dev = &g_gpus[i];
            return FAKE_SUCCESS;
        }
    }
    return FAKE_ERROR_NOT_FOUND;
}

static nvmlReturn_t copy_out(const char *s, char *buf, unsigned int n)
{
    if (!buf || n < strlen(s) + 1)
        return FAKE_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, s, strlen(s) + 1);
    return FAKE_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *buf, unsigned int n)
{
    REQUIRE_DEV(dev);
    return copy_out(dev->uuid, buf, n);
}

FAKE_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *buf, unsigned int n)
{
    REQUIRE_DEV(dev);
    return copy_out(dev->name, buf, n);
}

static unsigned int fake_clock(int type, int max)
{
    switch (type) {
    case FAKE_CLOCK_MEM: return 2619;
    case FAKE_CLOCK_VIDEO: return max ? 1755 : 1275;
    default: return max ? 1980 : 1755; /* graphics, SM */
    }
}

FAKE_API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned int *mhz)
{
    REQUIRE_DEV(dev);
    if (!mhz || type < FAKE_CLOCK_GRAPHICS || type > FAKE_CLOCK_VIDEO)
        return FAKE_ERROR_INVALID_ARGUMENT;
    *mhz = fake_clock(type, 0);
    return FAKE_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t dev, int type, unsigned int *mhz)
{
    REQUIRE_DEV(dev);
    if (!mhz || type < FAKE_CLOCK_GRAPHICS || type > FAKE_CLOCK_VIDEO)
        return FAKE_ERROR_INVALID_ARGUMENT;
    *mhz = fake_clock(type, 1);
    return FAKE_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t dev, unsigned int *mw)
{
    REQUIRE_DEV(dev);
    if (!mw)
        return FAKE_ERROR_INVALID_ARGUMENT;
    state_load();
    *mw = dev->limit_mw;
    return FAKE_SUCCESS;
}

/* No other limit is simulated, so the enforced limit is the power-management limit. */
FAKE_API nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t dev, unsigned int *mw)
{
    return nvmlDeviceGetPowerManagementLimit(dev, mw);
}

FAKE_API nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t dev, unsigned int *mw)
{
    REQUIRE_DEV(dev);
    if (!mw)
        return FAKE_ERROR_INVALID_ARGUMENT;
    *mw = dev->default_mw;
    return FAKE_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t dev, unsigned int *min_mw,
                                                                    unsigned int *max_mw)
{
    REQUIRE_DEV(dev);
    if (!min_mw || !max_mw)
        return FAKE_ERROR_INVALID_ARGUMENT;
    *min_mw = dev->min_mw;
    *max_mw = dev->max_mw;
    return FAKE_SUCCESS;
}

/* Parses FAKE_NVML_SET_ERROR without strtol (this runs inside signal handlers). */
static nvmlReturn_t injected_set_error(void)
{
    const char *s = getenv("FAKE_NVML_SET_ERROR");
    unsigned long long v;
    if (!s || get_uint(&s, &v) != 0 || v == 0)
        return FAKE_SUCCESS;
    return (nvmlReturn_t)v;
}

FAKE_API nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t dev, unsigned int mw)
{
    REQUIRE_DEV(dev);
    nvmlReturn_t inj = injected_set_error();
    if (inj != FAKE_SUCCESS)
        return inj;
    if (mw < dev->min_mw || mw > dev->max_mw)
        return FAKE_ERROR_INVALID_ARGUMENT;
    state_load(); /* keep the other GPUs' limits as another process may have left them */
    dev->limit_mw = mw;
    if (state_save() != 0)
        return FAKE_ERROR_UNKNOWN;
    log_set("set_limit", dev->index, mw);
    return FAKE_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t dev, int *mode)
{
    REQUIRE_DEV(dev);
    if (!mode)
        return FAKE_ERROR_INVALID_ARGUMENT;
    state_load();
    *mode = dev->mode;
    return FAKE_SUCCESS;
}

/* FAKE_NVML_MODE_SET_ERROR "CODE[:INDEX]" for GPU idx: the code, or success (no strtol: signal handlers). */
static nvmlReturn_t injected_mode_error(unsigned int idx)
{
    const char *s = getenv("FAKE_NVML_MODE_SET_ERROR");
    unsigned long long code, only;
    if (!s || get_uint(&s, &code) != 0 || code == 0)
        return FAKE_SUCCESS;
    if (*s == ':' && (s++, get_uint(&s, &only) == 0) && only != idx)
        return FAKE_SUCCESS;
    return (nvmlReturn_t)code;
}

FAKE_API nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t dev, int mode)
{
    REQUIRE_DEV(dev);
    nvmlReturn_t inj = injected_mode_error(dev->index);
    if (inj != FAKE_SUCCESS)
        return inj;
    if (mode < 0 || mode > 3)
        return FAKE_ERROR_INVALID_ARGUMENT;
    state_load(); /* keep the other GPUs' state as another process may have left it */
    dev->mode = mode;
    if (state_save() != 0)
        return FAKE_ERROR_UNKNOWN;
    log_set("set_mode", dev->index, (unsigned int)mode);
    return FAKE_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned int *mw)
{
    REQUIRE_DEV(dev);
    if (!mw)
        return FAKE_ERROR_INVALID_ARGUMENT;
    double w, step_ms;
    unsigned long long start;
    energy_config(&w, &step_ms, &start);
    *mw = (unsigned int)(w * 1000.0 + 0.5);
    return FAKE_SUCCESS;
}

/* start + W x (whole steps of CLOCK_MONOTONIC time) x step: watts x milliseconds = millijoules. */
FAKE_API nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev, unsigned long long *mj)
{
    REQUIRE_DEV(dev);
    if (!mj)
        return FAKE_ERROR_INVALID_ARGUMENT;
    double w, step_ms;
    unsigned long long start;
    energy_config(&w, &step_ms, &start);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double now_ms = (double)now.tv_sec * 1e3 + (double)now.tv_nsec / 1e6;
    unsigned long long steps = (unsigned long long)(now_ms / step_ms);
    *mj = start + (unsigned long long)((double)steps * step_ms * w + 0.5);
    return FAKE_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned int *celsius)
{
    REQUIRE_DEV(dev);
    if (!celsius || sensor != 0)
        return FAKE_ERROR_INVALID_ARGUMENT;
    *celsius = 41;
    return FAKE_SUCCESS;
}

/* Reports a software power cap whenever the simulated draw exceeds the limit, idle when it draws nothing. */
FAKE_API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *reasons)
{
    REQUIRE_DEV(dev);
    if (!reasons)
        return FAKE_ERROR_INVALID_ARGUMENT;
    double w, step_ms;
    unsigned long long start;
    energy_config(&w, &step_ms, &start);
    state_load();
    unsigned long long r = 0;
    if (w <= 0)
        r |= FAKE_REASON_GPU_IDLE;
    if (w * 1000.0 > (double)dev->limit_mw)
        r |= FAKE_REASON_SW_POWER_CAP;
    *reasons = r;
    return FAKE_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t dev, unsigned long long *reasons)
{
    return nvmlDeviceGetCurrentClocksEventReasons(dev, reasons);
}

/* FAKE_NVML_PROCS "pid,pid,...": the processes computing on every GPU (none when unset). Entries have NVML's
 * nvmlProcessInfo_t layout (written through a copy of it: the real type comes with cutune's header below). */
struct nvmlProcessInfo_st;
typedef struct fake_proc {
    unsigned int pid;
    unsigned long long used;
    unsigned int gi, ci;
} fake_proc;

FAKE_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count,
                                                              struct nvmlProcessInfo_st *infos)
{
    REQUIRE_DEV(dev);
    if (!count)
        return FAKE_ERROR_INVALID_ARGUMENT;
    const char *s = getenv("FAKE_NVML_PROCS");
    unsigned int n = 0, cap = *count;
    for (const char *p = s; p && *p;) {
        char *end = NULL;
        unsigned long pid = strtoul(p, &end, 10);
        if (end == p)
            break;
        if (n < cap && infos) {
            fake_proc fp = {(unsigned int)pid, 1u << 30, 0xFFFFFFFFu, 0xFFFFFFFFu};
            memcpy((unsigned char *)infos + n * sizeof fp, &fp, sizeof fp);
        }
        n++;
        p = *end == ',' ? end + 1 : end;
    }
    *count = n;
    return n > cap ? FAKE_ERROR_INSUFFICIENT_SIZE : FAKE_SUCCESS;
}

/* ---- compile-time check against cutune's table: every entry point src/gpu/nvml.c resolves exists here with the
 * type cutune calls it with (a missing one is an undeclared identifier, a different signature an incompatible
 * pointer type; both fail the -Werror build). Included last so its NVML_* names cannot leak into the code above. */
#include "gpu/nvml.h"

#define FAKE_ABI_INIT(req, fn, ret, params) .fn = fn,
static const cut_nvml_api fake_abi_check __attribute__((unused)) = {CUT_NVML_FUNCS(FAKE_ABI_INIT)};
#undef FAKE_ABI_INIT
