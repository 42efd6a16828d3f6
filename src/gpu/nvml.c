/* cutune — dlopen'd NVML (see nvml.h). */
#include "gpu/nvml.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CUT_STR_(x) #x
#define CUT_STR(x) CUT_STR_(x)

static cut_nvml_api g_api;
static const cut_nvml_api *g_loaded;
static char g_load_error[600];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

const char *cut_nvml_lib_path(void)
{
    const char *p = getenv("CUTUNE_NVML_LIB");
    return (p && *p) ? p : "libnvidia-ml.so.1";
}

static void load_once(void)
{
    const char *lib = cut_nvml_lib_path();
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(g_load_error, sizeof g_load_error, "NVML unavailable: %s could not be loaded (%s)", lib,
                 why ? why : "unknown reason");
        return;
    }
#define CUT_NVML_RESOLVE(req, fn, ret, params)                                                                       \
    *(void **)(&g_api.fn) = dlsym(h, CUT_STR(fn));                                                                   \
    if (req && !g_api.fn) {                                                                                          \
        snprintf(g_load_error, sizeof g_load_error, "NVML unavailable: %s lacks %s", lib, CUT_STR(fn));              \
        dlclose(h);                                                                                                  \
        return;                                                                                                      \
    }
    CUT_NVML_FUNCS(CUT_NVML_RESOLVE)
#undef CUT_NVML_RESOLVE
    nvmlReturn_t rc = g_api.nvmlInit_v2();
    if (rc != NVML_SUCCESS) {
        const char *s = g_api.nvmlErrorString(rc);
        snprintf(g_load_error, sizeof g_load_error, "NVML unavailable: nvmlInit_v2 failed (%s, error %d)",
                 s ? s : "?", rc);
        dlclose(h);
        return;
    }
    g_loaded = &g_api;
}

const cut_nvml_api *cut_nvml_load(cut_err *e)
{
    pthread_once(&g_once, load_once);
    if (!g_loaded)
        cut_err_set(e, "%s", g_load_error);
    return g_loaded;
}

const cut_nvml_api *cut_nvml(void) { return g_loaded; }

static const char *const nvml_names[] = {
    [NVML_SUCCESS] = "NVML_SUCCESS",
    [NVML_ERROR_UNINITIALIZED] = "NVML_ERROR_UNINITIALIZED",
    [NVML_ERROR_INVALID_ARGUMENT] = "NVML_ERROR_INVALID_ARGUMENT",
    [NVML_ERROR_NOT_SUPPORTED] = "NVML_ERROR_NOT_SUPPORTED",
    [NVML_ERROR_NO_PERMISSION] = "NVML_ERROR_NO_PERMISSION",
    [NVML_ERROR_ALREADY_INITIALIZED] = "NVML_ERROR_ALREADY_INITIALIZED",
    [NVML_ERROR_NOT_FOUND] = "NVML_ERROR_NOT_FOUND",
    [NVML_ERROR_INSUFFICIENT_SIZE] = "NVML_ERROR_INSUFFICIENT_SIZE",
    [NVML_ERROR_INSUFFICIENT_POWER] = "NVML_ERROR_INSUFFICIENT_POWER",
    [NVML_ERROR_DRIVER_NOT_LOADED] = "NVML_ERROR_DRIVER_NOT_LOADED",
    [NVML_ERROR_TIMEOUT] = "NVML_ERROR_TIMEOUT",
    [NVML_ERROR_IRQ_ISSUE] = "NVML_ERROR_IRQ_ISSUE",
    [NVML_ERROR_LIBRARY_NOT_FOUND] = "NVML_ERROR_LIBRARY_NOT_FOUND",
    [NVML_ERROR_FUNCTION_NOT_FOUND] = "NVML_ERROR_FUNCTION_NOT_FOUND",
    [NVML_ERROR_CORRUPTED_INFOROM] = "NVML_ERROR_CORRUPTED_INFOROM",
    [NVML_ERROR_GPU_IS_LOST] = "NVML_ERROR_GPU_IS_LOST",
    [NVML_ERROR_RESET_REQUIRED] = "NVML_ERROR_RESET_REQUIRED",
    [NVML_ERROR_OPERATING_SYSTEM] = "NVML_ERROR_OPERATING_SYSTEM",
    [NVML_ERROR_LIB_RM_VERSION_MISMATCH] = "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
    [NVML_ERROR_IN_USE] = "NVML_ERROR_IN_USE",
    [NVML_ERROR_MEMORY] = "NVML_ERROR_MEMORY",
    [NVML_ERROR_NO_DATA] = "NVML_ERROR_NO_DATA",
};

void cut_nvml_describe(nvmlReturn_t r, char *buf, size_t n)
{
    const char *name = (r >= 0 && (size_t)r < CUT_ARRAY_LEN(nvml_names)) ? nvml_names[r] : NULL;
    if (!name && r == NVML_ERROR_UNKNOWN)
        name = "NVML_ERROR_UNKNOWN";
    const char *str = g_loaded ? g_loaded->nvmlErrorString(r) : NULL;
    if (!str && r == NVML_ERROR_UNINITIALIZED)
        str = "NVML is not loaded";
    if (!str && r == NVML_ERROR_FUNCTION_NOT_FOUND)
        str = "the NVML library lacks this function";
    if (name)
        snprintf(buf, n, "%s (%s)", name, str ? str : "no description");
    else
        snprintf(buf, n, "nvmlReturn %d (%s)", r, str ? str : "no description");
}

/* ---- wrappers ---- */

#define NVML_FN(fn)                                                                                                  \
    do {                                                                                                             \
        if (!g_loaded)                                                                                               \
            return NVML_ERROR_UNINITIALIZED;                                                                         \
        if (!g_loaded->fn)                                                                                           \
            return NVML_ERROR_FUNCTION_NOT_FOUND;                                                                    \
    } while (0)

nvmlReturn_t cut_nvml_device_by_uuid(const char *uuid, nvmlDevice_t *dev)
{
    NVML_FN(nvmlDeviceGetHandleByUUID);
    if (!uuid || !*uuid)
        return NVML_ERROR_INVALID_ARGUMENT;
    return g_loaded->nvmlDeviceGetHandleByUUID(uuid, dev);
}

nvmlReturn_t cut_nvml_driver_string(char *buf, size_t n)
{
    NVML_FN(nvmlSystemGetDriverVersion);
    char tmp[CUT_NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {0};
    nvmlReturn_t rc = g_loaded->nvmlSystemGetDriverVersion(tmp, sizeof tmp);
    if (rc == NVML_SUCCESS) {
        tmp[sizeof tmp - 1] = '\0';
        snprintf(buf, n, "%s", tmp);
    }
    return rc;
}

nvmlReturn_t cut_nvml_energy_mj(nvmlDevice_t dev, unsigned long long *mj)
{
    NVML_FN(nvmlDeviceGetTotalEnergyConsumption);
    return g_loaded->nvmlDeviceGetTotalEnergyConsumption(dev, mj);
}

nvmlReturn_t cut_nvml_power_mw(nvmlDevice_t dev, unsigned int *mw)
{
    NVML_FN(nvmlDeviceGetPowerUsage);
    return g_loaded->nvmlDeviceGetPowerUsage(dev, mw);
}

nvmlReturn_t cut_nvml_clock_mhz(nvmlDevice_t dev, int type, int max, unsigned int *mhz)
{
    if (max) {
        NVML_FN(nvmlDeviceGetMaxClockInfo);
        return g_loaded->nvmlDeviceGetMaxClockInfo(dev, type, mhz);
    }
    NVML_FN(nvmlDeviceGetClockInfo);
    return g_loaded->nvmlDeviceGetClockInfo(dev, type, mhz);
}

nvmlReturn_t cut_nvml_device_count(unsigned int *count)
{
    NVML_FN(nvmlDeviceGetCount_v2);
    return g_loaded->nvmlDeviceGetCount_v2(count);
}

nvmlReturn_t cut_nvml_device_by_index(unsigned int idx, nvmlDevice_t *dev)
{
    NVML_FN(nvmlDeviceGetHandleByIndex_v2);
    return g_loaded->nvmlDeviceGetHandleByIndex_v2(idx, dev);
}

/* NVML fills a fixed-size buffer; copy through a temporary so a short caller buffer truncates instead of failing
 * with NVML_ERROR_INSUFFICIENT_SIZE, and the result is always NUL-terminated. */
static nvmlReturn_t device_string(nvmlReturn_t (*fn)(nvmlDevice_t, char *, unsigned int), nvmlDevice_t dev,
                                  char *buf, size_t n)
{
    char tmp[CUT_NVML_DEVICE_UUID_BUFFER_SIZE > CUT_NVML_DEVICE_NAME_BUFFER_SIZE ? CUT_NVML_DEVICE_UUID_BUFFER_SIZE
                                                                                  : CUT_NVML_DEVICE_NAME_BUFFER_SIZE] = {0};
    nvmlReturn_t rc = fn(dev, tmp, sizeof tmp);
    if (rc == NVML_SUCCESS) {
        tmp[sizeof tmp - 1] = '\0';
        snprintf(buf, n, "%s", tmp);
    }
    return rc;
}

nvmlReturn_t cut_nvml_device_uuid(nvmlDevice_t dev, char *buf, size_t n)
{
    NVML_FN(nvmlDeviceGetUUID);
    return device_string(g_loaded->nvmlDeviceGetUUID, dev, buf, n);
}

nvmlReturn_t cut_nvml_device_name(nvmlDevice_t dev, char *buf, size_t n)
{
    NVML_FN(nvmlDeviceGetName);
    return device_string(g_loaded->nvmlDeviceGetName, dev, buf, n);
}

nvmlReturn_t cut_nvml_power_mgmt_limit_mw(nvmlDevice_t dev, unsigned int *mw)
{
    NVML_FN(nvmlDeviceGetPowerManagementLimit);
    return g_loaded->nvmlDeviceGetPowerManagementLimit(dev, mw);
}

nvmlReturn_t cut_nvml_power_limit_mw(nvmlDevice_t dev, unsigned int *mw)
{
    if (g_loaded && !g_loaded->nvmlDeviceGetEnforcedPowerLimit && g_loaded->nvmlDeviceGetPowerManagementLimit)
        return g_loaded->nvmlDeviceGetPowerManagementLimit(dev, mw);
    NVML_FN(nvmlDeviceGetEnforcedPowerLimit);
    return g_loaded->nvmlDeviceGetEnforcedPowerLimit(dev, mw);
}

nvmlReturn_t cut_nvml_power_default_mw(nvmlDevice_t dev, unsigned int *mw)
{
    NVML_FN(nvmlDeviceGetPowerManagementDefaultLimit);
    return g_loaded->nvmlDeviceGetPowerManagementDefaultLimit(dev, mw);
}

nvmlReturn_t cut_nvml_power_constraints_mw(nvmlDevice_t dev, unsigned int *min_mw, unsigned int *max_mw)
{
    NVML_FN(nvmlDeviceGetPowerManagementLimitConstraints);
    unsigned int lo = 0, hi = 0;
    nvmlReturn_t rc = g_loaded->nvmlDeviceGetPowerManagementLimitConstraints(dev, &lo, &hi);
    if (rc == NVML_SUCCESS) {
        *min_mw = lo;
        *max_mw = hi;
    }
    return rc;
}

nvmlReturn_t cut_nvml_set_power_limit_mw(nvmlDevice_t dev, unsigned int mw)
{
    NVML_FN(nvmlDeviceSetPowerManagementLimit);
    return g_loaded->nvmlDeviceSetPowerManagementLimit(dev, mw);
}

nvmlReturn_t cut_nvml_temperature_c(nvmlDevice_t dev, unsigned int *celsius)
{
    NVML_FN(nvmlDeviceGetTemperature);
    return g_loaded->nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, celsius);
}

nvmlReturn_t cut_nvml_throttle_reasons(nvmlDevice_t dev, unsigned long long *reasons)
{
    if (g_loaded && !g_loaded->nvmlDeviceGetCurrentClocksEventReasons &&
        g_loaded->nvmlDeviceGetCurrentClocksThrottleReasons)
        return g_loaded->nvmlDeviceGetCurrentClocksThrottleReasons(dev, reasons);
    NVML_FN(nvmlDeviceGetCurrentClocksEventReasons);
    return g_loaded->nvmlDeviceGetCurrentClocksEventReasons(dev, reasons);
}

nvmlReturn_t cut_nvml_other_processes(nvmlDevice_t dev, const int *ours, int n, int *others)
{
    NVML_FN(nvmlDeviceGetComputeRunningProcesses_v3);
    nvmlProcessInfo_t info[64];
    unsigned int count = 64;
    nvmlReturn_t rc = g_loaded->nvmlDeviceGetComputeRunningProcesses_v3(dev, &count, info);
    if (rc != NVML_SUCCESS)
        return rc;
    int k = 0;
    for (unsigned int i = 0; i < count && i < 64; i++) {
        int mine = info[i].pid == (unsigned int)getpid();
        for (int j = 0; j < n && !mine; j++)
            mine = info[i].pid == (unsigned int)ours[j];
        k += !mine;
    }
    *others = k;
    return NVML_SUCCESS;
}

nvmlReturn_t cut_nvml_compute_mode(nvmlDevice_t dev, int *mode)
{
    NVML_FN(nvmlDeviceGetComputeMode);
    return g_loaded->nvmlDeviceGetComputeMode(dev, mode);
}

nvmlReturn_t cut_nvml_set_compute_mode(nvmlDevice_t dev, int mode)
{
    NVML_FN(nvmlDeviceSetComputeMode);
    return g_loaded->nvmlDeviceSetComputeMode(dev, mode);
}

const char *cut_nvml_compute_mode_name(int mode)
{
    static const char *const names[NVML_COMPUTEMODE_COUNT] = {
        [NVML_COMPUTEMODE_DEFAULT] = "DEFAULT",
        [NVML_COMPUTEMODE_EXCLUSIVE_THREAD] = "EXCLUSIVE_THREAD",
        [NVML_COMPUTEMODE_PROHIBITED] = "PROHIBITED",
        [NVML_COMPUTEMODE_EXCLUSIVE_PROCESS] = "EXCLUSIVE_PROCESS",
    };
    return mode >= 0 && mode < NVML_COMPUTEMODE_COUNT ? names[mode] : "UNKNOWN";
}

void cut_nvml_throttle_describe(unsigned long long reasons, char *buf, size_t n)
{
    static const struct {
        unsigned long long bit;
        const char *name;
    } names[] = {
        {NVML_CLOCKS_EVENT_REASON_GPU_IDLE, "idle"},
        {NVML_CLOCKS_EVENT_REASON_APPLICATIONS_CLOCKS_SETTING, "app_clocks"},
        {NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP, "sw_power_cap"},
        {NVML_CLOCKS_EVENT_REASON_HW_SLOWDOWN, "hw_slowdown"},
        {NVML_CLOCKS_EVENT_REASON_SYNC_BOOST, "sync_boost"},
        {NVML_CLOCKS_EVENT_REASON_SW_THERMAL_SLOWDOWN, "sw_thermal"},
        {NVML_CLOCKS_EVENT_REASON_HW_THERMAL_SLOWDOWN, "hw_thermal"},
        {NVML_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN, "hw_power_brake"},
        {NVML_CLOCKS_EVENT_REASON_DISPLAY_CLOCK_SETTING, "display_clocks"},
    };
    if (!n)
        return;
    buf[0] = '\0';
    if (reasons == 0) {
        snprintf(buf, n, "none");
        return;
    }
    size_t used = 0;
    unsigned long long known = 0;
    for (size_t i = 0; i < CUT_ARRAY_LEN(names); i++) {
        known |= names[i].bit;
        if (!(reasons & names[i].bit))
            continue;
        int k = snprintf(buf + used, n - used, "%s%s", used ? "," : "", names[i].name);
        if (k < 0 || (size_t)k >= n - used) {
            buf[used] = '\0'; /* no half names */
            return;
        }
        used += (size_t)k;
    }
    if (reasons & ~known)
        snprintf(buf + used, n - used, "%sother(0x%llx)", used ? "," : "", reasons & ~known);
}
