/* cutune report — tuningresults/ -> performance/ (one integer GFLOP/s per line, seed 000). */
#include "cli/args.h"
#include "cli/cli.h"
#include "cutune/record.h"

#include <stdio.h>
#include <string.h>

int cut_cmd_report(int argc, char **argv)
{
    const char *in = "tuningresults", *out = "performance";
    cut_err e = {{0}};
    for (int i = 1; i < argc; i++) {
        int rc = 0;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: cutune report [--in DIR] [--out DIR]\n"
                   "  --in DIR   representatives (default tuningresults)\n"
                   "  --out DIR  GFLOP/s files (default performance)\n");
            return CUT_EXIT_OK;
        } else if (!strcmp(argv[i], "--in")) {
            rc = cut_arg_str(argc, argv, &i, &in, &e);
        } else if (!strcmp(argv[i], "--out")) {
            rc = cut_arg_str(argc, argv, &i, &out, &e);
        } else {
            rc = cut_err_set(&e, "unknown option '%s' (see cutune report --help)", argv[i]);
        }
        if (rc != 0) {
            fprintf(stderr, "cutune report: %s\n", e.msg);
            return CUT_EXIT_USAGE;
        }
    }
    int n = cut_report_perf_dir(in, out, &e);
    if (n < 0) {
        fprintf(stderr, "cutune report: %s\n", e.msg);
        return CUT_EXIT_USAGE;
    }
    printf("wrote %d file(s) to %s\n", n, out);
    return CUT_EXIT_OK;
}
