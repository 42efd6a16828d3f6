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

#endif
