/* cutune — argument helpers. */
#include "cli/args.h"

#include <errno.h>
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
