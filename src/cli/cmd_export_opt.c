/* cutune export --optimized OPT_DIR [--kernel NAME] — cutune optimize's searches -> stand-alone CUDA projects (one
 * per kernel, under OUTDIR/kernels/opt/NAME/). cmd_export.c parses the options and calls cut_cmd_export_optimized. */
#include "cli/cli.h"
#include "cutune/export.h"

#include <stdio.h>
#include <string.h>

int cut_cmd_export_optimized(const char *opt_dir, const char *name, const char *outdir, const char *arch)
{
    cut_err e = {{0}};
    if (!opt_dir || !*opt_dir) {
        fprintf(stderr, "cutune export: --optimized needs the --outdir folder of cutune optimize\n");
        return CUT_EXIT_USAGE;
    }
    if (!outdir)
        outdir = ".";
    if (!arch)
        arch = "90";
    if (!strncmp(arch, "sm_", 3))
        arch += 3;
    cut_export_opt_set set;
    if (cut_export_opt_load(opt_dir, name, &set, &e) != 0 || cut_export_opt_write(&set, outdir, arch, &e) != 0) {
        fprintf(stderr, "cutune export: %s\n", e.msg);
        cut_export_opt_set_free(&set);
        return CUT_EXIT_USAGE;
    }
    for (int i = 0; i < set.n; i++) {
        const cut_export_opt *x = &set.k[i];
        const int same = !strcmp(x->st[CUT_XO_BEST].id, "baseline");
        printf("exported %s: best %s (%.2fx the baseline%s) -> %s/kernels/opt/%s\n", x->name,
               x->st[CUT_XO_BEST].id, x->speedup, same ? ": no variant was faster" : "", outdir, x->name);
    }
    if (set.n > 0)
        printf("build: cmake -S %s/kernels/opt/%s -B %s/build/opt/%s && cmake --build %s/build/opt/%s -j && "
               "%s/build/opt/%s/driver\n",
               outdir, set.k[0].name, outdir, set.k[0].name, outdir, set.k[0].name, outdir, set.k[0].name);
    cut_export_opt_set_free(&set);
    return CUT_EXIT_OK;
}
