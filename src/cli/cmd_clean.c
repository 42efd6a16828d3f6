/* cutune clean — removes what cutune export and the energy phase generated (never tuningrecords/ or tuningresults/),
 * or with --cache cutune's cache folders; the rules are in include/cutune/export.h (cut_clean, cut_clean_cache). */
#include "cli/args.h"
#include "cli/cli.h"
#include "cutune/export.h"

#include <stdio.h>
#include <string.h>

static void print_entry(void *ctx, const char *path, int removed, const char *why)
{
    (void)ctx;
    if (removed)
        printf("removed %s (%s)\n", path, why);
    else
        printf("kept %s: %s\n", path, why);
}

int cut_cmd_clean(int argc, char **argv)
{
    const char *outdir = ".";
    int cache = 0;
    cut_err e = {{0}};
    for (int i = 1; i < argc; i++) {
        int rc = 0;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: cutune clean [--outdir DIR] [--cache]\n"
                   "  removes from DIR (default .) what cutune generated, and prints each path:\n"
                   "    kernels/, kernel_outputs/, scripts/  if they hold the " CUT_EXPORT_MARKER " marker file\n"
                   "    build/     if it holds the marker, or is the CMake build of DIR/kernels (CMakeCache.txt)\n"
                   "    kernel_metadata.csv  if its first line is cutune export's header\n"
                   "    CMakeLists.txt, run_all.sh, run_layer_*.sh  if export wrote them (\"" CUT_EXPORT_ROOT_TAG "\" at\n"
                   "               the top); build/ also when it is the CMake build of that CMakeLists.txt\n"
                   "  tuningrecords/ and tuningresults/ are never removed.\n"
                   "  --cache    instead, removes cutune's cache folder: $XDG_CACHE_HOME/cutune (else\n"
                   "             ~/.cache/cutune: NVRTC cubins, the emulator's kernels under emu/), and DIR/.cutune_emu\n"
                   "             and DIR/.cutune_cache of earlier versions; only real folders of yours (a symbolic\n"
                   "             link is kept); a $COMPILE_CACHE_DIR folder is yours to remove\n");
            return CUT_EXIT_OK;
        } else if (!strcmp(argv[i], "--cache")) {
            cache = 1;
        } else if (!strcmp(argv[i], "--outdir")) {
            rc = cut_arg_str(argc, argv, &i, &outdir, &e);
        } else {
            rc = cut_err_set(&e, "unknown option '%s' (see cutune help clean)", argv[i]);
        }
        if (rc != 0) {
            fprintf(stderr, "cutune clean: %s\n", e.msg);
            return CUT_EXIT_USAGE;
        }
    }
    int n = cache ? cut_clean_cache(outdir, print_entry, NULL, &e) : cut_clean(outdir, print_entry, NULL, &e);
    if (n < 0) {
        fprintf(stderr, "cutune clean: %s\n", e.msg);
        return cache ? CUT_EXIT_FAIL : CUT_EXIT_USAGE;
    }
    if (n == 0 && cache)
        printf("no cache of cutune to remove\n");
    else if (n == 0)
        printf("nothing to remove in %s\n", outdir);
    return CUT_EXIT_OK;
}
