/* cutune — `cutune devices [--json]`: the GPUs, their sm_XX, SMs, memory, UUID, driver/CUDA versions, clocks,
 * power limits and whether NVML's energy counter works. Without a driver it says so in one sentence (exit 1). */
#include "cli/cli.h"
#include "cutune/common.h"
#include "cutune/gpu.h"
#include "gpu/nvml.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: cutune devices [--json]\n\n"
               "Lists the NVIDIA GPUs: name, sm_XX, SM count, memory, UUID, driver and CUDA versions, SM and memory\n"
               "clocks (current/max), the enforced power limit and its allowed range, and whether NVML's energy\n"
               "counter works (needed by `cutune energy`). Clocks, power and energy come from NVML ($CUTUNE_NVML_LIB\n"
               "overrides libnvidia-ml.so.1) and read 'unknown' without it.\n\n"
               "  --json    one JSON object {\"devices\": [...]} on stdout\n"
               "  --help    this text\n");
}

static void cuda_version(int v, char *buf, size_t n)
{
    if (v > 0)
        snprintf(buf, n, "%d.%d", v / 1000, (v % 1000) / 10);
    else
        snprintf(buf, n, "unknown");
}

static void mhz_pair(int cur, int max, char *buf, size_t n)
{
    char a[16] = "unknown", b[16] = "unknown";
    if (cur >= 0)
        snprintf(a, sizeof a, "%d", cur);
    if (max >= 0)
        snprintf(b, sizeof b, "%d", max);
    snprintf(buf, n, "%s / %s MHz (current / max)", a, b);
}

static void print_text(const cut_gpu_info *g)
{
    char cuda[16], buf[96];
    cuda_version(g->driver_version, cuda, sizeof cuda);
    printf("GPU %d: %s\n", g->index, g->name);
    printf("  architecture    sm_%d%d, %d SMs\n", g->sm_major, g->sm_minor, g->sm_count);
    printf("  memory          %.1f GiB\n", (double)g->mem_bytes / (1024.0 * 1024.0 * 1024.0));
    printf("  UUID            %s\n", g->uuid);
    printf("  driver          %s, CUDA %s\n", g->driver_string[0] ? g->driver_string : "unknown", cuda);
    mhz_pair(g->sm_clock_mhz, g->max_sm_clock_mhz, buf, sizeof buf);
    printf("  SM clock        %s\n", buf);
    mhz_pair(g->mem_clock_mhz, g->max_mem_clock_mhz, buf, sizeof buf);
    printf("  memory clock    %s\n", buf);
    if (g->power_limit_w >= 0)
        printf("  power limit     %.0f W", g->power_limit_w);
    else
        printf("  power limit     unknown");
    if (g->power_min_w >= 0 && g->power_max_w >= 0)
        printf(" (allowed %.0f-%.0f W)\n", g->power_min_w, g->power_max_w);
    else
        printf(" (allowed range unknown)\n");
    printf("  energy counter  %s\n", g->energy_counter_ok ? "yes" : "no");
    printf("  shared memory   %d KiB per block (%d KiB opt-in), L2 %.0f MiB\n", g->max_smem_per_block / 1024,
           g->max_smem_per_block_optin / 1024, g->l2_bytes / (1024.0 * 1024.0));
}

static void add_num_or_null(cJSON *o, const char *key, double v, int known)
{
    if (known)
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

static cJSON *to_json(const cut_gpu_info *g)
{
    char s[32];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", g->index);
    cJSON_AddStringToObject(o, "name", g->name);
    snprintf(s, sizeof s, "sm_%d%d", g->sm_major, g->sm_minor);
    cJSON_AddStringToObject(o, "arch", s);
    cJSON_AddNumberToObject(o, "sm_count", g->sm_count);
    cJSON_AddNumberToObject(o, "memory_bytes", (double)g->mem_bytes);
    cJSON_AddStringToObject(o, "uuid", g->uuid);
    if (g->driver_string[0])
        cJSON_AddStringToObject(o, "driver", g->driver_string);
    else
        cJSON_AddNullToObject(o, "driver");
    cuda_version(g->driver_version, s, sizeof s);
    cJSON_AddStringToObject(o, "cuda_driver_version", s);
    cJSON_AddNumberToObject(o, "cuda_driver_version_int", g->driver_version);
    add_num_or_null(o, "sm_clock_mhz", g->sm_clock_mhz, g->sm_clock_mhz >= 0);
    add_num_or_null(o, "max_sm_clock_mhz", g->max_sm_clock_mhz, g->max_sm_clock_mhz >= 0);
    add_num_or_null(o, "mem_clock_mhz", g->mem_clock_mhz, g->mem_clock_mhz >= 0);
    add_num_or_null(o, "max_mem_clock_mhz", g->max_mem_clock_mhz, g->max_mem_clock_mhz >= 0);
    add_num_or_null(o, "power_limit_w", g->power_limit_w, g->power_limit_w >= 0);
    add_num_or_null(o, "power_min_w", g->power_min_w, g->power_min_w >= 0);
    add_num_or_null(o, "power_max_w", g->power_max_w, g->power_max_w >= 0);
    cJSON_AddBoolToObject(o, "energy_counter", g->energy_counter_ok);
    cJSON_AddBoolToObject(o, "nvml", g->nvml_ok);
    cJSON_AddNumberToObject(o, "max_threads_per_block", g->max_threads_per_block);
    cJSON_AddNumberToObject(o, "max_smem_per_block", g->max_smem_per_block);
    cJSON_AddNumberToObject(o, "max_smem_per_block_optin", g->max_smem_per_block_optin);
    cJSON_AddNumberToObject(o, "max_regs_per_block", g->max_regs_per_block);
    cJSON_AddNumberToObject(o, "l2_bytes", g->l2_bytes);
    return o;
}

int cut_cmd_devices(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return CUT_EXIT_OK;
        } else {
            fprintf(stderr, "cutune devices: unknown option '%s' (see cutune help devices)\n", argv[i]);
            return CUT_EXIT_USAGE;
        }
    }

    cut_err e = {{0}};
    int count = cut_gpu_init(&e);
    if (count <= 0) {
        const char *why = count < 0 ? e.msg : "the NVIDIA driver reports no CUDA devices";
        const char *prefix = "no NVIDIA driver found: ";
        if (strncmp(why, prefix, strlen(prefix)) == 0)
            why += strlen(prefix);
        fprintf(stderr, "cutune: no NVIDIA GPU found: %s — tuning needs a GPU or --backend emu\n", why);
        return CUT_EXIT_FAIL;
    }

    int rc = CUT_EXIT_OK;
    cJSON *root = json ? cJSON_CreateObject() : NULL;
    cJSON *arr = json ? cJSON_AddArrayToObject(root, "devices") : NULL;
    for (int i = 0; i < count; i++) {
        cut_gpu_info g;
        if (cut_gpu_query(i, &g, &e) != 0) {
            fprintf(stderr, "cutune devices: GPU %d: %s\n", i, e.msg);
            rc = CUT_EXIT_FAIL;
            continue;
        }
        if (json) {
            cJSON_AddItemToArray(arr, to_json(&g));
        } else {
            if (i)
                printf("\n");
            print_text(&g);
        }
    }
    if (json) {
        char *s = cJSON_Print(root);
        if (s)
            printf("%s\n", s);
        cJSON_free(s);
        cJSON_Delete(root);
    } else {
        cut_err ne = {{0}};
        if (!cut_nvml_load(&ne))
            printf("\nnote: %s — clocks, power limits and the energy counter are unknown\n", ne.msg);
    }
    return rc;
}
