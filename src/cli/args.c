/* cutune — argument helpers. */
#include "cli/args.h"

#include "cutune/util.h"

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
