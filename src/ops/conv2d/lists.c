/* cutune — workload lists: data files in workloads/ (seed001, resnet18, yolov3) or any file of the same format. */
#include "cutune/util.h"
#include "cutune/workload.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CUTUNE_WORKLOADS_DIR
#define CUTUNE_WORKLOADS_DIR "workloads"
#endif

static const char *const known_lists[] = {"seed001", "resnet18", "yolov3"};

int cut_conv_list_names(const char *const **names)
{
    if (names)
        *names = known_lists;
    return (int)CUT_ARRAY_LEN(known_lists);
}

const char *cut_workloads_dir(void)
{
    const char *env = getenv("CUTUNE_WORKLOADS");
    if (env && *env)
        return env;
    return CUTUNE_WORKLOADS_DIR;
}

void cut_conv_list_free(cut_conv_list *l)
{
    if (!l)
        return;
    free(l->cases);
    memset(l, 0, sizeof *l);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* A list name: letters, digits, '_' and '-' only. */
static int is_plain_name(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
            return 0;
    return 1;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* "seed001, resnet18, yolov3" followed by the other NAME.txt files of dir in name order. */
static void known_names(const char *dir, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < CUT_ARRAY_LEN(known_lists); i++)
        if (len < n)
            len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", known_lists[i]);
    DIR *d = opendir(dir);
    if (!d)
        return;
    char *extra[64];
    int nextra = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && nextra < 64) {
        char name[256];
        snprintf(name, sizeof name, "%s", de->d_name);
        size_t l = strlen(name);
        if (l <= 4 || strcmp(name + l - 4, ".txt") != 0)
            continue;
        name[l - 4] = 0;
        int builtin = 0;
        for (size_t i = 0; i < CUT_ARRAY_LEN(known_lists); i++)
            builtin |= strcmp(name, known_lists[i]) == 0;
        if (!builtin && is_plain_name(name))
            extra[nextra++] = cut_xstrdup(name);
    }
    closedir(d);
    qsort(extra, (size_t)nextra, sizeof extra[0], cmp_str);
    for (int i = 0; i < nextra; i++) {
        if (len < n)
            len += (size_t)snprintf(buf + len, n - len, ", %s", extra[i]);
        free(extra[i]);
    }
}

/* Parses the text of a list file into out (cases allocated here; freed by cut_conv_list_free). */
static int parse_list_text(const char *path, char *text, cut_conv_list *out, cut_err *e)
{
    int cap = 0;
    int lineno = 0;
    char *p = text;
    while (*p) {
        lineno++;
        char *nl = strchr(p, '\n');
        char *next = nl ? nl + 1 : p + strlen(p);
        if (nl)
            *nl = 0;
        char *hash = strchr(p, '#');
        if (hash)
            *hash = 0;
        /* Trim whitespace (including a CR of CRLF files). */
        while (*p == ' ' || *p == '\t')
            p++;
        size_t len = strlen(p);
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r'))
            p[--len] = 0;
        if (len > 0) {
            cut_conv c;
            if (cut_conv_parse(p, &c, e) != 0) {
                cut_conv_list_free(out);
                return cut_err_wrap(e, "%s:%d", path, lineno);
            }
            if (out->count == cap) {
                cap = cap ? cap * 2 : 16;
                out->cases = cut_xrealloc(out->cases, (size_t)cap * sizeof *out->cases);
            }
            out->cases[out->count++] = c;
        }
        p = next;
    }
    if (out->count == 0) {
        cut_conv_list_free(out);
        return cut_err_set(e, "%s: the workload list contains no cases", path);
    }
    return 0;
}

/* Fills out->cases (caller frees with cut_conv_list_free). */
int cut_conv_list_load(const char *name_or_path, const char *dir, cut_conv_list *out, cut_err *e)
{
    memset(out, 0, sizeof *out);
    if (!name_or_path || !*name_or_path)
        return cut_err_set(e, "empty workload list name (known: seed001, resnet18, yolov3)");
    char path[4096];
    if (strchr(name_or_path, '/') || ends_with(name_or_path, ".txt")) {
        if (strlen(name_or_path) >= sizeof path)
            return cut_err_set(e, "workload list path too long: '%s'", name_or_path);
        strcpy(path, name_or_path);
    } else {
        if (!dir)
            dir = cut_workloads_dir();
        int known = 0;
        for (size_t i = 0; i < CUT_ARRAY_LEN(known_lists); i++)
            known |= strcmp(name_or_path, known_lists[i]) == 0;
        if (snprintf(path, sizeof path, "%s/%s.txt", dir, name_or_path) >= (int)sizeof path)
            return cut_err_set(e, "workload list path too long: '%s/%s.txt'", dir, name_or_path);
        /* Besides the built-in names, any other list file in dir is known by its name (e.g. tiny). */
        if (!known && !(is_plain_name(name_or_path) && cut_path_exists(path))) {
            char names[1024];
            known_names(dir, names, sizeof names);
            return cut_err_set(e, "unknown workload list '%s' (known: %s)", name_or_path, names);
        }
    }
    char *text = NULL;
    if (cut_read_file(path, &text, NULL, e) != 0)
        return cut_err_wrap(e, "workload list '%s'", name_or_path);
    int rc = parse_list_text(path, text, out, e);
    free(text);
    if (rc != 0)
        return -1;
    /* The list's name: the file's base name without .txt. */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(out->name, sizeof out->name, "%s", base);
    size_t bl = strlen(out->name);
    if (bl > 4 && strcmp(out->name + bl - 4, ".txt") == 0)
        out->name[bl - 4] = 0;
    return 0;
}
