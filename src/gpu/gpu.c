/* cutune — the GPU layer: device discovery and facts through the dlopen'd driver API, clocks and power through the
 * dlopen'd NVML (matched to the CUDA device by UUID). Nothing here creates a CUDA context. */
#include "cutune/gpu.h"

#include "gpu/cuda_drv.h"
#include "gpu/nvml.h"

#include <stdio.h>
#include <string.h>

void cut_gpu_format_uuid(const unsigned char b[16], char *buf, size_t n)
{
    snprintf(buf, n,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4],
             b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

int cut_gpu_init(cut_err *e)
{
    const cut_cu_api *cu = cut_cu_load(e);
    if (!cu)
        return -1;
    CUresult rc = cu->cuInit(0);
    if (rc == CUDA_ERROR_NO_DEVICE)
        return 0;
    if (rc != CUDA_SUCCESS) {
        char d[256];
        cut_cu_describe(rc, d, sizeof d);
        return cut_err_set(e, "the NVIDIA driver (libcuda.so.1) failed to initialise: cuInit: %s", d);
    }
    int count = 0;
    CU_CHECK(cu->cuDeviceGetCount(&count), e);
    return count;
}

static int attr(const cut_cu_api *cu, CUdevice d, CUdevice_attribute a, int *out, cut_err *e)
{
    CU_CHECK(cu->cuDeviceGetAttribute(out, a, d), e);
    return 0;
}

/* NVML facts for an already-filled uuid; leaves the "unknown" values when NVML or a query is unavailable. */
static void query_nvml(cut_gpu_info *info)
{
    if (!cut_nvml_load(NULL))
        return;
    nvmlDevice_t dev;
    if (cut_nvml_device_by_uuid(info->uuid, &dev) != NVML_SUCCESS)
        return;
    info->nvml_ok = 1;
    cut_nvml_driver_string(info->driver_string, sizeof info->driver_string);
    unsigned int v = 0, lo = 0, hi = 0;
    if (cut_nvml_clock_mhz(dev, NVML_CLOCK_SM, 0, &v) == NVML_SUCCESS)
        info->sm_clock_mhz = (int)v;
    if (cut_nvml_clock_mhz(dev, NVML_CLOCK_MEM, 0, &v) == NVML_SUCCESS)
        info->mem_clock_mhz = (int)v;
    if (cut_nvml_clock_mhz(dev, NVML_CLOCK_SM, 1, &v) == NVML_SUCCESS)
        info->max_sm_clock_mhz = (int)v;
    if (cut_nvml_clock_mhz(dev, NVML_CLOCK_MEM, 1, &v) == NVML_SUCCESS)
        info->max_mem_clock_mhz = (int)v;
    if (cut_nvml_power_limit_mw(dev, &v) == NVML_SUCCESS)
        info->power_limit_w = v / 1000.0;
    if (cut_nvml_power_constraints_mw(dev, &lo, &hi) == NVML_SUCCESS) {
        info->power_min_w = lo / 1000.0;
        info->power_max_w = hi / 1000.0;
    }
    unsigned long long mj = 0;
    info->energy_counter_ok = cut_nvml_energy_mj(dev, &mj) == NVML_SUCCESS;
}

int cut_gpu_query(int idx, cut_gpu_info *info, cut_err *e)
{
    memset(info, 0, sizeof *info);
    info->index = idx;
    info->sm_clock_mhz = info->mem_clock_mhz = -1;
    info->max_sm_clock_mhz = info->max_mem_clock_mhz = -1;
    info->power_limit_w = info->power_min_w = info->power_max_w = -1.0;

    int count = cut_gpu_init(e);
    if (count < 0)
        return -1;
    if (idx < 0 || idx >= count)
        return cut_err_set(e, "GPU %d does not exist (the driver reports %d device%s)", idx, count,
                           count == 1 ? "" : "s");
    const cut_cu_api *cu = cut_cu();
    CUdevice d;
    CU_CHECK(cu->cuDeviceGet(&d, idx), e);
    CU_CHECK(cu->cuDeviceGetName(info->name, (int)sizeof info->name - 1, d), e);
    info->name[sizeof info->name - 1] = '\0';
    size_t mem = 0;
    CU_CHECK(cu->cuDeviceTotalMem(&mem, d), e);
    info->mem_bytes = mem;
    CUuuid u;
    CU_CHECK(cu->cuDeviceGetUuid(&u, d), e);
    cut_gpu_format_uuid((const unsigned char *)u.bytes, info->uuid, sizeof info->uuid);
    CU_CHECK(cu->cuDriverGetVersion(&info->driver_version), e);
    if (attr(cu, d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info->sm_major, e) ||
        attr(cu, d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info->sm_minor, e) ||
        attr(cu, d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info->sm_count, e) ||
        attr(cu, d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &info->max_threads_per_block, e) ||
        attr(cu, d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &info->max_smem_per_block, e) ||
        attr(cu, d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &info->max_smem_per_block_optin, e) ||
        attr(cu, d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, &info->max_regs_per_block, e) ||
        attr(cu, d, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &info->l2_bytes, e))
        return cut_err_wrap(e, "querying GPU %d", idx);
    query_nvml(info);
    return 0;
}

void cut_gpu_limits(const cut_gpu_info *info, cut_devlimits *d)
{
    cut_devlimits_sm90(d); /* fields the driver does not report keep the sm_90 values */
    d->sm_major = info->sm_major;
    d->sm_minor = info->sm_minor;
    if (info->sm_count > 0)
        d->sm_count = info->sm_count;
    if (info->max_threads_per_block > 0)
        d->max_threads_per_block = info->max_threads_per_block;
    if (info->max_smem_per_block > 0)
        d->max_smem_per_block = info->max_smem_per_block;
    if (info->max_regs_per_block > 0)
        d->max_regs_per_block = info->max_regs_per_block;
    d->max_regs_per_thread = 255;
    d->warp_size = 32;
}

void cut_gpu_sample_load(const char *uuid, const int *ours, int n, int *other_procs, long long *clock_events)
{
    *other_procs = -1;
    *clock_events = -1;
    nvmlDevice_t dev;
    if (!uuid || !uuid[0] || !cut_nvml_load(NULL) || cut_nvml_device_by_uuid(uuid, &dev) != NVML_SUCCESS)
        return;
    int k = 0;
    if (cut_nvml_other_processes(dev, ours, n, &k) == NVML_SUCCESS)
        *other_procs = k;
    unsigned long long r = 0;
    if (cut_nvml_throttle_reasons(dev, &r) == NVML_SUCCESS)
        *clock_events = (long long)r;
}

long long cut_gpu_throttling(long long clock_events)
{
    if (clock_events <= 0)
        return 0;
    return clock_events & (long long)(NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP | NVML_CLOCKS_EVENT_REASON_HW_SLOWDOWN |
                                      NVML_CLOCKS_EVENT_REASON_SW_THERMAL_SLOWDOWN |
                                      NVML_CLOCKS_EVENT_REASON_HW_THERMAL_SLOWDOWN |
                                      NVML_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN);
}

void cut_gpu_sample_clocks(const char *uuid, int *sm_clock_mhz, double *power_limit_w)
{
    if (sm_clock_mhz)
        *sm_clock_mhz = -1;
    if (power_limit_w)
        *power_limit_w = -1.0;
    nvmlDevice_t dev;
    if (!uuid || !cut_nvml_load(NULL) || cut_nvml_device_by_uuid(uuid, &dev) != NVML_SUCCESS)
        return;
    unsigned int v = 0;
    if (sm_clock_mhz && cut_nvml_clock_mhz(dev, NVML_CLOCK_SM, 0, &v) == NVML_SUCCESS)
        *sm_clock_mhz = (int)v;
    if (power_limit_w && cut_nvml_power_limit_mw(dev, &v) == NVML_SUCCESS)
        *power_limit_w = v / 1000.0;
}
