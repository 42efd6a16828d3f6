/* cutune — small argument helpers for the subcommands. */
#ifndef CUTUNE_CLI_ARGS_H
#define CUTUNE_CLI_ARGS_H

#include "cutune/common.h"
#include "cutune/workload.h"

/* Takes argv[*i + 1] as the value of option argv[*i]; advances *i. */
int cut_arg_str(int argc, char **argv, int *i, const char **out, cut_err *e);
/* Same, parsed as a whole decimal integer within [lo, hi]. */
int cut_arg_int(int argc, char **argv, int *i, int lo, int hi, int *out, cut_err *e);

/* The cases a command works on: the one shape of --conv (list 'custom') when conv_str is set, else the named
 * list. Errors name the option. Caller frees with cut_conv_list_free. */
int cut_cli_workloads(const char *conv_str, const char *list_name, cut_conv_list *list, cut_err *e);

/* The UUID of the GPU whose NVML energy counter measures kernels of backend ("cuda": CUDA device gpu's UUID;
 * "emu": nvml_uuid when set, else NVML's first device, since the emulator runs on the CPU). Shared by cutune
 * energy and tune --objective. */
int cut_cli_energy_uuid(const char *backend, int gpu, const char *nvml_uuid, char *uuid, size_t n, cut_err *e);

#endif
