/* libFuzzer target: the tuning-log loaders cut_records_load and cut_records_read (include/cutune/record.h) on a
 * file written from the fuzz input (a per-process temporary file under /tmp, removed at exit).
 *
 * Invariants:
 *   - both loaders agree (same status, same record count, same partial flag), and an error has a sentence;
 *   - success: partial is 1 exactly when the file does not end in '\n'; *recs is NULL exactly when there are no
 *     records; the text is the file's bytes; every line offset/length lies inside the text and ends at a '\n';
 *     both loaders' records and a fresh cut_record_parse of each line serialise to the same text;
 *   - representative sampling (cut_sample_select, keep 2 / 25 / 7) on the loaded records returns distinct,
 *     in-range indices of measured (ok, finite, positive median) records, at most keep of them, in rank order. */
#include "cutune/record.h"
#include "fuzz_common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>


static char tmp_path[256];

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
        snprintf(tmp_path, sizeof tmp_path, "/tmp/cutune-fuzz-%ld-records.json", (long)getpid());
        atexit(remove_tmp);
    }
    int fd = open(tmp_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    CHECK(size == 0 || pwrite(fd, data, size, 0) == (ssize_t)size);
    CHECK(ftruncate(fd, (off_t)size) == 0);
    CHECK(close(fd) == 0);
}

static int measured(const cut_record *r)
{
    return r->status == CUT_ST_OK && isfinite(r->median_ms) && r->median_ms > 0;
}

static void check_sample(const cut_record *recs, int n, int keep)
{
    int *idx = malloc((size_t)keep * sizeof *idx);
    CHECK(idx != NULL);
    int m = 0;
    for (int i = 0; i < n; i++)
        m += measured(&recs[i]);
    int k = cut_sample_select(recs, n, keep, idx);
    CHECK(k >= 0 && k <= keep && k <= m);
    CHECK(m <= keep ? k == m : k == keep);
    for (int j = 0; j < k; j++) {
        CHECK(idx[j] >= 0 && idx[j] < n);
        CHECK(measured(&recs[idx[j]]));
        for (int l = 0; l < j; l++)
            CHECK(idx[l] != idx[j]);
        if (j > 0)
            CHECK(recs[idx[j - 1]].median_ms <= recs[idx[j]].median_ms);
    }
    free(idx);
}

static void reserialise(const cut_record *r, cut_buf *out)
{
    cut_buf_init(out);
    cut_record_to_json(r, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    write_input(data, size);

    cut_record *recs = (cut_record *)(uintptr_t)1;
    int n = -1, partial = -1;
    cut_err e1 = {{0}}, e2 = {{0}};
    int rc1 = cut_records_load(tmp_path, &recs, &n, &partial, &e1);
    cut_records_file f;
    int rc2 = cut_records_read(tmp_path, &f, &e2);
    CHECK(rc1 == rc2);
    if (rc1 != 0) {
        CHECK(rc1 == -1 && e1.msg[0] != 0 && e2.msg[0] != 0);
        CHECK(strcmp(e1.msg, e2.msg) == 0);
        CHECK(recs == NULL && n == 0);
        cut_records_file_free(&f);
        return 0;
    }
    CHECK(n >= 0 && n == f.n);
    CHECK((recs == NULL) == (n == 0));
    CHECK(partial == f.partial);
    CHECK(partial == (size > 0 && data[size - 1] != '\n'));
    CHECK(f.len == size);
    CHECK(size == 0 || memcmp(f.text, data, size) == 0);
    CHECK(f.text == NULL || f.text[f.len] == 0);

    for (int i = 0; i < n; i++) {
        CHECK(f.line_off[i] < f.len && f.line_len[i] < f.len - f.line_off[i]);
        CHECK(f.text[f.line_off[i] + f.line_len[i]] == '\n');
        if (i > 0)
            CHECK(f.line_off[i] > f.line_off[i - 1] + f.line_len[i - 1]);
        cut_buf a, b, c;
        reserialise(&recs[i], &a);
        reserialise(&f.recs[i], &b);
        CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
        cut_record one;
        cut_err e = {{0}};
        CHECK(cut_record_parse(f.text + f.line_off[i], f.line_len[i], &one, &e) == 0);
        reserialise(&one, &c);
        CHECK(c.len == a.len && memcmp(c.data, a.data, a.len) == 0);
        cut_buf_free(&a);
        cut_buf_free(&b);
        cut_buf_free(&c);
    }
    check_sample(recs, n, 2);
    check_sample(recs, n, 25);
    check_sample(recs, n, 7);

    free(recs);
    cut_records_file_free(&f);
    return 0;
}
