/* libFuzzer target: the workload list loader cut_conv_list_load (include/cutune/workload.h) on a file written from
 * the fuzz input (a per-process temporary file under /tmp, removed at exit).
 *
 * The result is compared with a model of the documented format: the text up to the first NUL byte, one case per
 * line, '#' starts a comment, blank lines skipped, each remaining line parsed by cut_conv_parse.
 * Invariants:
 *   - the loader succeeds exactly when the model does (every case line parses and there is at least one);
 *   - success: the cases are the model's, in order, each accepted by cut_conv_validate; the list's name is the
 *     file's base name without .txt;
 *   - failure: an error sentence starting "<path>:<line>:" for the first bad line (or naming the empty list), and
 *     the output list is empty (nothing to free). */
#include "cutune/workload.h"
#include "fuzz_common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>


static char tmp_path[256], tmp_base[256];

static void remove_tmp(void)
{
    if (tmp_path[0])
        unlink(tmp_path);
}

/* Rewrites the file in place (pwrite + ftruncate): truncating it to 0 first would make ext4 flush it on every
 * close (auto_da_alloc), which costs more than the parsing under test. */
static void write_input(const uint8_t *data, size_t size)
{
    if (!tmp_path[0]) {
        snprintf(tmp_base, sizeof tmp_base, "cutune-fuzz-%ld-list", (long)getpid());
        snprintf(tmp_path, sizeof tmp_path, "/tmp/%s.txt", tmp_base);
        atexit(remove_tmp);
    }
    int fd = open(tmp_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    CHECK(size == 0 || pwrite(fd, data, size, 0) == (ssize_t)size);
    CHECK(ftruncate(fd, (off_t)size) == 0);
    CHECK(close(fd) == 0);
}


/* The model: fills cases (capacity cap) and returns their count, or -1 with *bad_line set (0: no cases). */
static int model(char *text, cut_conv *cases, int cap, int *bad_line)
{
    int count = 0, lineno = 0;
    char *p = text;
    *bad_line = 0;
    while (*p) {
        lineno++;
        char *nl = strchr(p, '\n');
        char *next = nl ? nl + 1 : p + strlen(p);
        if (nl)
            *nl = 0;
        char *hash = strchr(p, '#');
        if (hash)
            *hash = 0;
        while (*p == ' ' || *p == '\t')
            p++;
        size_t len = strlen(p);
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r'))
            p[--len] = 0;
        if (len > 0) {
            cut_conv c;
            cut_err e;
            if (cut_conv_parse(p, &c, &e) != 0) {
                *bad_line = lineno;
                return -1;
            }
            CHECK(count < cap);
            cases[count++] = c;
        }
        p = next;
    }
    return count > 0 ? count : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    write_input(data, size);

    cut_conv_list l;
    memset(&l, 0x5a, sizeof l);
    cut_err e = {{0}};
    int rc = cut_conv_list_load(tmp_path, NULL, &l, &e);

    char *text = malloc(size + 1);
    CHECK(text != NULL);
    memcpy(text, data, size);
    text[size] = 0;
    int cap = (int)size / 2 + 1, bad_line = 0;
    cut_conv *want = malloc((size_t)cap * sizeof *want);
    CHECK(want != NULL);
    int nwant = model(text, want, cap, &bad_line);

    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        CHECK(l.count == 0 && l.cases == NULL);
        if (nwant >= 0) {
            fprintf(stderr, "invariant failed: loader rejected a list the model accepts (%d cases): %s\n", nwant,
                    e.msg);
            abort();
        }
        char prefix[300];
        if (bad_line > 0)
            snprintf(prefix, sizeof prefix, "%s:%d: ", tmp_path, bad_line);
        else
            snprintf(prefix, sizeof prefix, "%s: ", tmp_path);
        if (strncmp(e.msg, prefix, strlen(prefix)) != 0) {
            fprintf(stderr, "invariant failed: error '%s' does not start with '%s'\n", e.msg, prefix);
            abort();
        }
    } else {
        if (nwant < 0) {
            fprintf(stderr, "invariant failed: loader accepted a list the model rejects (bad line %d), %d cases\n",
                    bad_line, l.count);
            abort();
        }
        CHECK(l.count == nwant && l.cases != NULL);
        for (int i = 0; i < l.count; i++) {
            CHECK(conv_eq(&l.cases[i], &want[i]));
            CHECK(cut_conv_validate(&l.cases[i], &e) == 0);
        }
        CHECK(strcmp(l.name, tmp_base) == 0);
    }
    cut_conv_list_free(&l);
    cut_conv_list_free(&l); /* a freed list frees as a no-op */
    free(want);
    free(text);
    return 0;
}
