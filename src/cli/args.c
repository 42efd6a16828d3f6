/* cutune — argument helpers. */
#include "cli/args.h"

#include "cutune/gpu.h"
#include "cutune/util.h"
#include "gpu/nvml.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

int cut_arg_str(int argc, char **argv, int *i, const char **out, cut_err *e)
{
    if (*i + 1 >= argc)
        return cut_err_set(e, "option %s needs a value", argv[*i]);
    *out = argv[++*i];
    return 0;
}

int cut_arg_int(int argc, char **argv, int *i, int lo, int hi, int *out, cut_err *e)
{
    const char *opt = argv[*i], *s = NULL;
    if (cut_arg_str(argc, argv, i, &s, e) != 0)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end)
        return cut_err_set(e, "option %s needs an integer, got '%s'", opt, s);
    if (v < lo || v > hi)
        return cut_err_set(e, "option %s must be in %d..%d, got %ld", opt, lo, hi, v);
    *out = (int)v;
    return 0;
}

int cut_cli_workloads(const char *conv_str, const char *list_name, cut_conv_list *list, cut_err *e)
{
    memset(list, 0, sizeof *list);
    if (!conv_str)
        return cut_conv_list_load(list_name, cut_workloads_dir(), list, e);
    cut_conv c;
    if (cut_conv_parse(conv_str, &c, e) != 0)
        return cut_err_wrap(e, "--conv");
    snprintf(list->name, sizeof list->name, "custom");
    list->count = 1;
    list->cases = cut_xmalloc(sizeof c);
    list->cases[0] = c;
    return 0;
}

int cut_cli_energy_uuid(const char *backend, int gpu, const char *nvml_uuid, char *uuid, size_t n, cut_err *e)
{
    if (!strcmp(backend, "cuda")) {
        int count = cut_gpu_init(e);
        if (count < 0)
            return cut_err_wrap(e, "no GPU found");
        if (count <= gpu)
            return cut_err_set(e, "no GPU %d: the driver reports %d CUDA device(s)", gpu, count);
        cut_gpu_info info;
        if (cut_gpu_query(gpu, &info, e) != 0)
            return -1;
        snprintf(uuid, n, "%s", info.uuid);
        return 0;
    }
    if (nvml_uuid) {
        snprintf(uuid, n, "%s", nvml_uuid);
        return 0;
    }
    nvmlDevice_t dev;
    if (!cut_nvml_load(e))
        return -1;
    if (cut_nvml_device_by_index(0, &dev) != NVML_SUCCESS || cut_nvml_device_uuid(dev, uuid, n) != NVML_SUCCESS)
        return cut_err_set(e, "NVML lists no GPU whose energy counter could be read");
    return 0;
}
