/* cutune — small argument helpers for the subcommands. */
#ifndef CUTUNE_CLI_ARGS_H
#define CUTUNE_CLI_ARGS_H

#include "cutune/common.h"

/* Takes argv[*i + 1] as the value of option argv[*i]; advances *i. */
int cut_arg_str(int argc, char **argv, int *i, const char **out, cut_err *e);
/* Same, parsed as a whole decimal integer within [lo, hi]. */
int cut_arg_int(int argc, char **argv, int *i, int lo, int hi, int *out, cut_err *e);

#endif
