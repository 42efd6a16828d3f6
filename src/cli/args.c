/* cutune — argument helpers. */
#include "cli/args.h"

#include "cutune/gpu.h"
#include "cutune/util.h"
#include "gpu/nvml.h"
#include "cutune/kspec.h"

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

int cut_cli_gemm_types(const char *dtype, const char *layout, cut_gemm *g, cut_err *e)
{
    if (layout && cut_gemm_layout_parse(layout, &g->layout, e) != 0)
        return cut_err_wrap(e, "option --layout");
    if (dtype && cut_dtype_parse(dtype, &g->dtype, e) != 0)
        return cut_err_wrap(e, "option --dtype");
    return 0;
}

int cut_cli_conv_types(const char *dtype, const char *layout, const char *epilogue, cut_conv_list *list, cut_err *e)
{
    cut_dtype d = CUT_DT_FP32;
    cut_conv_layout l = CUT_NCHW;
    cut_conv_epilogue x = CUT_EPI_NONE;
    if (epilogue && cut_conv_epilogue_parse(epilogue, &x, e) != 0)
        return cut_err_wrap(e, "option --epilogue");
    if (layout && cut_conv_layout_parse(layout, &l, e) != 0)
        return cut_err_wrap(e, "option --layout (a conv's; nn and nt are a GEMM's, with --gemm)");
    if (dtype && cut_dtype_parse(dtype, &d, e) != 0)
        return cut_err_wrap(e, "option --dtype");
    for (int i = 0; i < list->count; i++) {
        if (dtype)
            list->cases[i].dtype = d;
        if (layout)
            list->cases[i].layout = l;
        if (epilogue)
            list->cases[i].epilogue = x;
    }
    return 0;
}

int cut_cli_cache_dir(const char *sub, char *buf, size_t n, cut_err *e)
{
    const char *env = getenv("COMPILE_CACHE_DIR");
    char root[4096];
    if (env && *env) {
        if (snprintf(root, sizeof root, "%s", env) >= (int)sizeof root)
            return cut_err_set(e, "COMPILE_CACHE_DIR is too long");
        if (cut_mkdirs(root, e) != 0 || cut_private_dir(root, e) != 0)
            return cut_err_wrap(e, "COMPILE_CACHE_DIR");
    } else if (cut_default_cache_dir(root, sizeof root, e) != 0) {
        return -1;
    }
    int len = sub ? snprintf(buf, n, "%s/%s", root, sub) : snprintf(buf, n, "%s", root);
    if (len < 0 || (size_t)len >= n)
        return cut_err_set(e, "cache folder path too long: %s", root);
    if (sub && (cut_mkdirs(buf, e) != 0 || cut_private_dir(buf, e) != 0))
        return -1;
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

void cut_gemm_cli_init(cut_gemm *g)
{
    memset(g, 0, sizeof *g);
    g->layout = CUT_GEMM_NN;
    g->dtype = CUT_DT_FP32;
}

/* A seed-004 word after --gemm: anything but an option ("M=-1" and "1024" are words, "--m" and "-h" are not). */
static int is_gemm_word(const char *w)
{
    return w[0] != '-' || (strchr(w, '=') && strncmp(w, "--", 2) != 0);
}

/* Splits the arguments argv[0..n) at blanks into at most cap words in *words (pointers into *buf, which the caller
 * frees): --gemm "M=1 N=4096 K=4096 t=100" reads as the four words. The count, or -1 past cap. */
static int split_words(int n, char **argv, char **buf, char **words, int cap)
{
    size_t len = 1;
    for (int j = 0; j < n; j++)
        len += strlen(argv[j]) + 1;
    *buf = cut_xmalloc(len);
    (*buf)[0] = 0;
    for (int j = 0; j < n; j++)
        strcat(strcat(*buf, argv[j]), " ");
    int count = 0;
    for (char *save = NULL, *w = strtok_r(*buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (count == cap)
            return -1;
        words[count++] = w;
    }
    return count;
}

/* --gemm WORDS...: M, N and K must not be set yet (by --m/--n/--k or an earlier --gemm). */
static int gemm_words(int argc, char **argv, int *i, cut_gemm *g, int *trials, cut_err *e)
{
    int first = *i + 1, n = 0;
    while (first + n < argc && is_gemm_word(argv[first + n]))
        n++;
    char *buf = NULL, *words[32];
    const int nw = n ? split_words(n, argv + first, &buf, words, (int)CUT_ARRAY_LEN(words)) : 0;
    if (nw <= 0) {
        free(buf);
        return nw < 0 ? cut_err_set(e, "--gemm: more than %d words", (int)CUT_ARRAY_LEN(words))
                      : cut_err_set(e, "--gemm needs seed-004 words after it, e.g. --gemm M=1024 N=2048 K=3072 t=2000");
    }
    if (g->m || g->n || g->k) {
        free(buf);
        return cut_err_set(e, "--gemm %s: M, N or K is already given (by --m, --n, --k or another --gemm)",
                           argv[first]);
    }
    int t = 0;
    const int rc = cut_gemm_parse_args(nw, (const char *const *)words, g, &t, NULL, e);
    free(buf);
    if (rc != 0)
        return cut_err_wrap(e, "--gemm");
    if (t > 0)
        *trials = t;
    *i = first + n - 1;
    return 1;
}

/* --m/--n/--k N: one dimension, given once. */
static int gemm_dim(int argc, char **argv, int *i, int *dim, cut_err *e)
{
    const char *opt = argv[*i];
    if (*dim)
        return cut_err_set(e, "option %s: %c is already given (by --%c or --gemm)", opt, opt[2] - 'a' + 'A', opt[2]);
    return cut_arg_int(argc, argv, i, 1, 2147483647, dim, e) == 0 ? 1 : -1;
}

int cut_gemm_parse_cli(int argc, char **argv, int *i, cut_gemm *g, int *trials, cut_err *e)
{
    const char *a = argv[*i], *s = NULL;
    if (!strcmp(a, "--gemm"))
        return gemm_words(argc, argv, i, g, trials, e);
    if (!strcmp(a, "--m"))
        return gemm_dim(argc, argv, i, &g->m, e);
    if (!strcmp(a, "--n"))
        return gemm_dim(argc, argv, i, &g->n, e);
    if (!strcmp(a, "--k"))
        return gemm_dim(argc, argv, i, &g->k, e);
    if (!strcmp(a, "--layout")) {
        if (cut_arg_str(argc, argv, i, &s, e) != 0)
            return -1;
        return cut_gemm_layout_parse(s, &g->layout, e) == 0 ? 1 : cut_err_wrap(e, "option --layout");
    }
    if (!strcmp(a, "--dtype")) {
        if (cut_arg_str(argc, argv, i, &s, e) != 0)
            return -1;
        return cut_dtype_parse(s, &g->dtype, e) == 0 ? 1 : cut_err_wrap(e, "option --dtype");
    }
    return 0;
}

int cut_gemm_cli_finish(const cut_gemm *g, cut_err *e)
{
    const char *flag[3] = {"--m", "--n", "--k"};
    const int v[3] = {g->m, g->n, g->k};
    for (int d = 0; d < 3; d++)
        if (v[d] == 0)
            return cut_err_set(e, "GEMM size %c is missing: give it with %s N or with --gemm M=.. N=.. K=..",
                               "MNK"[d], flag[d]);
    return cut_gemm_validate(g, e);
}

/* Calls fn(ctx, name, value) for each NAME=VALUE of a --sizes list; -1 (e set) at the first malformed one or the
 * first fn that fails. */
static int sizes_each(const char *sizes, int (*fn)(void *ctx, const char *name, long long v, cut_err *e), void *ctx,
                      cut_err *e)
{
    if (!sizes)
        return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", sizes);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        char *end = NULL;
        long long v = eq ? strtoll(eq + 1, &end, 10) : 0;
        if (!eq || end == eq + 1 || *end)
            return cut_err_set(e, "--sizes: '%s' is not NAME=VALUE", tok);
        *eq = 0;
        if (fn(ctx, tok, v, e) != 0)
            return -1;
    }
    return 0;
}

typedef struct spec_list {
    const cut_kspec *specs;
    int n;
} spec_list;

static int size_known(void *ctx, const char *name, long long v, cut_err *e)
{
    (void)v;
    const spec_list *l = ctx;
    char names[256] = "";
    for (int k = 0; k < l->n; k++)
        for (int i = 0; i < l->specs[k].nsizes; i++) {
            const char *s = l->specs[k].sizes[i].name;
            if (!strcmp(s, name))
                return 0;
            if (!strstr(names, s) && strlen(names) + strlen(s) + 3 < sizeof names)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "", s);
        }
    return cut_err_set(e, "--sizes: no kernel spec has a size named '%s' (its sizes: %s)", name,
                       names[0] ? names : "none");
}

int cut_cli_sizes_known(const char *sizes, const cut_kspec *specs, int n, cut_err *e)
{
    spec_list l = {specs, n};
    return sizes_each(sizes, size_known, &l, e);
}

static int size_apply(void *ctx, const char *name, long long v, cut_err *e)
{
    cut_kspec *k = ctx;
    for (int i = 0; i < k->nsizes; i++)
        if (!strcmp(k->sizes[i].name, name))
            return cut_kspec_set_size(k, name, v, e) == 0 ? 0 : cut_err_wrap(e, "--sizes");
    return 0; /* left for the other specs */
}

/* Applies --sizes to one spec: each N=V whose N the spec has. */
int cut_cli_apply_sizes(const char *sizes, cut_kspec *k, cut_err *e)
{
    return sizes_each(sizes, size_apply, k, e);
}
