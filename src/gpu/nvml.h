/* cutune — NVML, loaded from libnvidia-ml.so.1 with dlopen (internal header).
 *
 * There is no nvml.h on the build machines, so the few types, constants and prototypes cutune needs are declared
 * here with NVML's ABI (enums are ints, handles are opaque pointers). The library path can be overridden with the
 * environment variable CUTUNE_NVML_LIB (tests point it at a fake libnvidia-ml.so).
 *
 * Only nvmlInit_v2, nvmlShutdown, nvmlErrorString and nvmlDeviceGetHandleByUUID are required; every other entry
 * point is optional (NULL when the library lacks it), and the wrappers below then return
 * NVML_ERROR_FUNCTION_NOT_FOUND. The energy component (power caps, energy counter) uses the wrappers too. */
#ifndef CUTUNE_GPU_NVML_H
#define CUTUNE_GPU_NVML_H

#include "cutune/common.h"

#include <stddef.h>

typedef int nvmlReturn_t; /* nvmlReturn_enum */
typedef struct nvmlDevice_st *nvmlDevice_t;
/* nvml.h's nvmlProcessInfo_t (the layout of nvmlDeviceGetComputeRunningProcesses_v3's entries). */
typedef struct nvmlProcessInfo_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_UNKNOWN = 999,
};

/* nvmlClockType_t */
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };
/* nvmlTemperatureSensors_t */
enum { NVML_TEMPERATURE_GPU = 0 };
/* nvmlComputeMode_t: who may create a CUDA context on a device (EXCLUSIVE_THREAD is deprecated, still reported by
 * old drivers). PROHIBITED: nobody, which is how --idle-other-gpus keeps other work off the GPUs not measured. */
enum {
    NVML_COMPUTEMODE_DEFAULT = 0,
    NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
    NVML_COMPUTEMODE_PROHIBITED = 2,
    NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
    NVML_COMPUTEMODE_COUNT = 4,
};

/* Clock event ("throttle") reason bits, nvmlDeviceGetCurrentClocksEventReasons. */
#define NVML_CLOCKS_EVENT_REASON_GPU_IDLE 0x0000000000000001ULL
#define NVML_CLOCKS_EVENT_REASON_APPLICATIONS_CLOCKS_SETTING 0x0000000000000002ULL
#define NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP 0x0000000000000004ULL
#define NVML_CLOCKS_EVENT_REASON_HW_SLOWDOWN 0x0000000000000008ULL
#define NVML_CLOCKS_EVENT_REASON_SYNC_BOOST 0x0000000000000010ULL
#define NVML_CLOCKS_EVENT_REASON_SW_THERMAL_SLOWDOWN 0x0000000000000020ULL
#define NVML_CLOCKS_EVENT_REASON_HW_THERMAL_SLOWDOWN 0x0000000000000040ULL
#define NVML_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN 0x0000000000000080ULL
#define NVML_CLOCKS_EVENT_REASON_DISPLAY_CLOCK_SETTING 0x0000000000000100ULL

#define CUT_NVML_DEVICE_UUID_BUFFER_SIZE 96
#define CUT_NVML_DEVICE_NAME_BUFFER_SIZE 96 /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define CUT_NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80

/* X(required, name, return type, parameter list). */
#define CUT_NVML_FUNCS(X)                                                                                            \
    X(1, nvmlInit_v2, nvmlReturn_t, (void))                                                                          \
    X(1, nvmlShutdown, nvmlReturn_t, (void))                                                                         \
    X(1, nvmlErrorString, const char *, (nvmlReturn_t))                                                              \
    X(1, nvmlDeviceGetHandleByUUID, nvmlReturn_t, (const char *, nvmlDevice_t *))                                    \
    X(0, nvmlSystemGetDriverVersion, nvmlReturn_t, (char *, unsigned int))                                           \
    X(0, nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned int *))                                                      \
    X(0, nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t, (unsigned int, nvmlDevice_t *))                                \
    X(0, nvmlDeviceGetUUID, nvmlReturn_t, (nvmlDevice_t, char *, unsigned int))                                      \
    X(0, nvmlDeviceGetName, nvmlReturn_t, (nvmlDevice_t, char *, unsigned int))                                      \
    X(0, nvmlDeviceGetClockInfo, nvmlReturn_t, (nvmlDevice_t, int, unsigned int *))                                  \
    X(0, nvmlDeviceGetMaxClockInfo, nvmlReturn_t, (nvmlDevice_t, int, unsigned int *))                               \
    X(0, nvmlDeviceGetEnforcedPowerLimit, nvmlReturn_t, (nvmlDevice_t, unsigned int *))                              \
    X(0, nvmlDeviceGetPowerManagementLimit, nvmlReturn_t, (nvmlDevice_t, unsigned int *))                            \
    X(0, nvmlDeviceGetPowerManagementDefaultLimit, nvmlReturn_t, (nvmlDevice_t, unsigned int *))                     \
    X(0, nvmlDeviceGetPowerManagementLimitConstraints, nvmlReturn_t, (nvmlDevice_t, unsigned int *, unsigned int *)) \
    X(0, nvmlDeviceSetPowerManagementLimit, nvmlReturn_t, (nvmlDevice_t, unsigned int))                              \
    X(0, nvmlDeviceGetPowerUsage, nvmlReturn_t, (nvmlDevice_t, unsigned int *))                                      \
    X(0, nvmlDeviceGetTotalEnergyConsumption, nvmlReturn_t, (nvmlDevice_t, unsigned long long *))                    \
    X(0, nvmlDeviceGetTemperature, nvmlReturn_t, (nvmlDevice_t, int, unsigned int *))                                \
    X(0, nvmlDeviceGetCurrentClocksEventReasons, nvmlReturn_t, (nvmlDevice_t, unsigned long long *))                 \
    X(0, nvmlDeviceGetCurrentClocksThrottleReasons, nvmlReturn_t, (nvmlDevice_t, unsigned long long *))              \
    X(0, nvmlDeviceGetComputeRunningProcesses_v3, nvmlReturn_t, (nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *)) \
    X(0, nvmlDeviceGetComputeMode, nvmlReturn_t, (nvmlDevice_t, int *))                                              \
    X(0, nvmlDeviceSetComputeMode, nvmlReturn_t, (nvmlDevice_t, int))

#define CUT_NVML_FIELD(req, fn, ret, params) ret(*fn) params;
typedef struct cut_nvml_api {
    CUT_NVML_FUNCS(CUT_NVML_FIELD)
} cut_nvml_api;
#undef CUT_NVML_FIELD

/* Loads NVML ($CUTUNE_NVML_LIB, else libnvidia-ml.so.1) once (thread-safe) and calls nvmlInit_v2. Returns the
 * table, or NULL with a sentence in e ("NVML unavailable: libnvidia-ml.so.1 could not be loaded (...)"). The
 * outcome is remembered for the life of the process; NVML is never shut down (the driver cleans up at exit). */
const cut_nvml_api *cut_nvml_load(cut_err *e);
/* The loaded table (NULL before a successful cut_nvml_load). */
const cut_nvml_api *cut_nvml(void);
/* The library path cut_nvml_load uses: $CUTUNE_NVML_LIB if set and non-empty, else "libnvidia-ml.so.1". */
const char *cut_nvml_lib_path(void);

/* "NVML_ERROR_NOT_SUPPORTED (Not Supported)" into buf. */
void cut_nvml_describe(nvmlReturn_t r, char *buf, size_t n);

/* NVML_CHECK: for setup paths; on failure sets e with the expression, file:line and the error, returns -1. */
#define NVML_CHECK(expr, e)                                                                                          \
    do {                                                                                                             \
        nvmlReturn_t cut_nrc_ = (expr);                                                                              \
        if (cut_nrc_ != NVML_SUCCESS) {                                                                              \
            char cut_nd_[160];                                                                                       \
            cut_nvml_describe(cut_nrc_, cut_nd_, sizeof cut_nd_);                                                    \
            return cut_err_set((e), "%s failed at %s:%d: %s%s", #expr, __FILE__, __LINE__, cut_nd_,                  \
                               cut_nrc_ == NVML_ERROR_NO_PERMISSION ? " (needs root or nvidia-smi -pm 1?)" : "");    \
        }                                                                                                            \
    } while (0)

/* ---- small wrappers (the energy component uses these). All return NVML_SUCCESS or an NVML error code; they
 * return NVML_ERROR_UNINITIALIZED when NVML is not loaded and NVML_ERROR_FUNCTION_NOT_FOUND when the library
 * lacks the entry point. Outputs are left untouched on failure. ---- */

/* Handle of the device with this UUID ("GPU-xxxxxxxx-..."), as cuDeviceGetUuid formats it (cut_gpu_format_uuid). */
nvmlReturn_t cut_nvml_device_by_uuid(const char *uuid, nvmlDevice_t *dev);
/* System driver version string, "580.95.05". */
nvmlReturn_t cut_nvml_driver_string(char *buf, size_t n);
/* Total energy since the driver was loaded, millijoules (Volta and later). */
nvmlReturn_t cut_nvml_energy_mj(nvmlDevice_t dev, unsigned long long *mj);
/* Current board power draw, milliwatts. */
nvmlReturn_t cut_nvml_power_mw(nvmlDevice_t dev, unsigned int *mw);
/* Clock in MHz: type is NVML_CLOCK_SM / NVML_CLOCK_MEM / ...; max = 1 for the maximum clock. */
nvmlReturn_t cut_nvml_clock_mhz(nvmlDevice_t dev, int type, int max, unsigned int *mhz);
/* Number of devices NVML sees. */
nvmlReturn_t cut_nvml_device_count(unsigned int *count);
/* Handle of device idx in NVML's enumeration (not necessarily CUDA's order: match by UUID). */
nvmlReturn_t cut_nvml_device_by_index(unsigned int idx, nvmlDevice_t *dev);
/* The device's UUID ("GPU-...") and product name ("NVIDIA H200"), NUL-terminated into buf. */
nvmlReturn_t cut_nvml_device_uuid(nvmlDevice_t dev, char *buf, size_t n);
nvmlReturn_t cut_nvml_device_name(nvmlDevice_t dev, char *buf, size_t n);
/* Enforced power limit (min of all limits), milliwatts. */
nvmlReturn_t cut_nvml_power_limit_mw(nvmlDevice_t dev, unsigned int *mw);
/* The power-management limit itself (what cut_nvml_set_power_limit_mw changes, and so what a power-cap session
 * records and restores; the enforced limit can be lower when another limit is active), milliwatts. */
nvmlReturn_t cut_nvml_power_mgmt_limit_mw(nvmlDevice_t dev, unsigned int *mw);
/* Default power limit (what the board boots with), milliwatts. */
nvmlReturn_t cut_nvml_power_default_mw(nvmlDevice_t dev, unsigned int *mw);
/* Allowed range for the power-management limit, milliwatts. */
nvmlReturn_t cut_nvml_power_constraints_mw(nvmlDevice_t dev, unsigned int *min_mw, unsigned int *max_mw);
/* Sets the power-management limit (needs root). Callers restore the original limit on every exit path. */
nvmlReturn_t cut_nvml_set_power_limit_mw(nvmlDevice_t dev, unsigned int mw);
/* GPU core temperature, degrees C. */
nvmlReturn_t cut_nvml_temperature_c(nvmlDevice_t dev, unsigned int *celsius);
/* Current clock event ("throttle") reasons, NVML_CLOCKS_EVENT_REASON_* bits (falls back to the older
 * nvmlDeviceGetCurrentClocksThrottleReasons on old drivers). */
nvmlReturn_t cut_nvml_throttle_reasons(nvmlDevice_t dev, unsigned long long *reasons);
/* The processes with a compute context on dev other than this one and its children (pids in ours[0..n)): their
 * count into *others. */
nvmlReturn_t cut_nvml_other_processes(nvmlDevice_t dev, const int *ours, int n, int *others);
/* The device's compute mode (NVML_COMPUTEMODE_*). */
nvmlReturn_t cut_nvml_compute_mode(nvmlDevice_t dev, int *mode);
/* Sets the compute mode (needs root). Callers restore the original mode on every exit path. Only the NVML call: it
 * may run inside a signal handler. */
nvmlReturn_t cut_nvml_set_compute_mode(nvmlDevice_t dev, int mode);
/* "DEFAULT", "EXCLUSIVE_THREAD", "PROHIBITED", "EXCLUSIVE_PROCESS" (nvidia-smi -c takes these names); "UNKNOWN"
 * for anything else. */
const char *cut_nvml_compute_mode_name(int mode);
/* Comma-separated names of the reason bits ("idle", "sw_power_cap", "hw_slowdown", ...; "none" for 0). */
void cut_nvml_throttle_describe(unsigned long long reasons, char *buf, size_t n);

#endif
