/* cutune sample — tuningrecords/ -> tuningresults/ (representatives; raw logs untouched). */
#include "cli/args.h"
#include "cli/cli.h"
#include "cutune/record.h"

#include <stdio.h>
#include <string.h>

int cut_cmd_sample(int argc, char **argv)
{
    const char *in = "tuningrecords", *out = "tuningresults";
    int keep = 25;
    cut_objective obj = CUT_OBJ_TIME;
    const char *obj_s = NULL;
    cut_err e = {{0}};
    for (int i = 1; i < argc; i++) {
        int rc = 0;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: cutune sample [--keep N] [--test] [--objective time|energy|edp] [--in DIR] [--out DIR]\n"
                   "  --keep N   representatives per case: 25 = top-5 + 5 each at p10/p25/p50/p75 (default);\n"
                   "             2 = top-2; other N: N/5 groups of 5 over the same percentiles\n"
                   "  --test     same as --keep 2 (seed 001's test mode)\n"
                   "  --objective O  rank by time (default), energy or edp: trials with O measured (tune\n"
                   "             --objective) first by O, then the others by time\n"
                   "  --in DIR   raw logs (default tuningrecords)\n"
                   "  --out DIR  output (default tuningresults)\n");
            return CUT_EXIT_OK;
        } else if (!strcmp(argv[i], "--test")) {
            keep = 2;
        } else if (!strcmp(argv[i], "--keep")) {
            rc = cut_arg_int(argc, argv, &i, 1, 100000, &keep, &e);
        } else if (!strcmp(argv[i], "--objective")) {
            if ((rc = cut_arg_str(argc, argv, &i, &obj_s, &e)) == 0)
                rc = cut_objective_parse(obj_s, &obj, &e);
        } else if (!strcmp(argv[i], "--in")) {
            rc = cut_arg_str(argc, argv, &i, &in, &e);
        } else if (!strcmp(argv[i], "--out")) {
            rc = cut_arg_str(argc, argv, &i, &out, &e);
        } else {
            rc = cut_err_set(&e, "unknown option '%s' (see cutune help sample)", argv[i]);
        }
        if (rc != 0) {
            fprintf(stderr, "cutune sample: %s\n", e.msg);
            return CUT_EXIT_USAGE;
        }
    }
    int n = cut_sample_dir(in, out, keep, obj, &e);
    if (n < 0) {
        fprintf(stderr, "cutune sample: %s\n", e.msg);
        return CUT_EXIT_USAGE;
    }
    printf("wrote %d file(s) to %s (keep %d per case%s%s)\n", n, out, keep, obj ? ", ranked by " : "",
           obj ? cut_objective_name(obj) : "");
    return CUT_EXIT_OK;
}
