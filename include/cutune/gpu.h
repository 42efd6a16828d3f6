/* cutune — the GPU layer: CUDA driver API and NVML loaded with dlopen (no link-time libcuda or libnvidia-ml;
 * CI has no driver). All entry points work, and say so clearly, when no driver is present. */
#ifndef CUTUNE_GPU_H
#define CUTUNE_GPU_H

#include "cutune/common.h"
#include "cutune/devlimits.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cut_gpu_info {
    int index;
    char name[128];
    char uuid[64];           /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
    int sm_major, sm_minor;
    int sm_count;
    size_t mem_bytes;
    int driver_version;      /* cuDriverGetVersion: 13000 */
    char driver_string[32];  /* NVML: "580.159.03", "" if NVML absent */
    int max_threads_per_block, max_smem_per_block, max_smem_per_block_optin, max_regs_per_block;
    int l2_bytes;
    int sm_clock_mhz, mem_clock_mhz;         /* current, NVML; -1 if unknown */
    int max_sm_clock_mhz, max_mem_clock_mhz; /* NVML; -1 if unknown */
    double power_limit_w;                    /* NVML current enforced limit; -1 if unknown */
    double power_min_w, power_max_w;         /* NVML allowed range; -1 if unknown */
    int energy_counter_ok;                   /* nvmlDeviceGetTotalEnergyConsumption works */
    int nvml_ok;
} cut_gpu_info;

/* Loads libcuda.so.1 and calls cuInit. Returns the device count (>= 0), or -1 with a sentence in e
 * ("no NVIDIA driver found (libcuda.so.1 could not be loaded): ..."). Safe to call repeatedly. */
int cut_gpu_init(cut_err *e);
/* Fills info for device idx (driver + NVML where available). */
int cut_gpu_query(int idx, cut_gpu_info *info, cut_err *e);
/* Device limits for the space, from a queried device. */
void cut_gpu_limits(const cut_gpu_info *info, cut_devlimits *d);
/* Current SM clock and enforced power limit via NVML, re-read (for records). -1 when unknown. */
void cut_gpu_sample_clocks(const char *uuid, int *sm_clock_mhz, double *power_limit_w);
/* What else weighs on the GPU, via NVML (issue 15): the processes with a compute context on it other than this one
 * and the pids in ours[0..n) (a worker), and its clock-event (throttle) reasons (NVML's bit mask). -1 when
 * unknown. */
void cut_gpu_sample_load(const char *uuid, const int *ours, int n, int *other_procs, long long *clock_events);
/* The reasons of a clock-event mask that slow a measurement down (power cap, thermal and hardware slowdowns), 0 for
 * the harmless ones (idle, application clocks, sync boost, display). */
long long cut_gpu_throttling(long long clock_events);

/* Formats the 16 bytes of a CUuuid the way NVML prints UUIDs: "GPU-" then the bytes in order as lowercase hex,
 * grouped 4-2-2-2-6 with dashes ("GPU-5e7a1c2b-0d3f-4e5a-8b9c-0123456789ab"). buf: >= 41 bytes. */
void cut_gpu_format_uuid(const unsigned char bytes[16], char *buf, size_t n);

#ifdef __cplusplus
}
#endif

#endif
