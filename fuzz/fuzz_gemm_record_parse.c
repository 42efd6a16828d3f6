/* libFuzzer target: cut_gemm_record_parse (include/cutune/gemm_tune.h) on one line of arbitrary bytes, and
 * cut_gemm_records_load on the same bytes as a whole log.
 *
 * Invariants:
 *   - failure returns -1 with a sentence and leaves the output record untouched;
 *   - success: cut_gemm_record_to_json writes exactly one line ending in '\n' that parses again and serialises to
 *     the very same text; the workload, schedule, status and integer fields survive the round trip;
 *   - the tolerant loader never fails on readable bytes: records + malformed lines never exceed the lines. */
#include "cutune/gemm_tune.h"
#include "fuzz_common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const cut_gemm_record *r1)
{
    cut_gemm_record *r2 = malloc(sizeof *r2);
    CHECK(r2);
    cut_buf t1, t2;
    cut_buf_init(&t1);
    cut_buf_init(&t2);
    cut_gemm_record_to_json(r1, &t1);
    CHECK(t1.len > 0 && t1.data[t1.len - 1] == '\n');
    CHECK(memchr(t1.data, '\n', t1.len - 1) == NULL);
    cut_err e = {{0}};
    if (cut_gemm_record_parse(t1.data, t1.len, r2, &e) != 0) {
        fprintf(stderr, "serialised GEMM record rejected (%s): %.*s\n", e.msg, (int)t1.len, t1.data);
        abort();
    }
    cut_gemm_record_to_json(r2, &t2);
    CHECK(t1.len == t2.len && memcmp(t1.data, t2.data, t1.len) == 0);
    CHECK(r1->gemm.m == r2->gemm.m && r1->gemm.n == r2->gemm.n && r1->gemm.k == r2->gemm.k);
    CHECK(r1->gemm.layout == r2->gemm.layout && r1->gemm.dtype == r2->gemm.dtype);
    CHECK(cut_sched_equal(&r1->sched, &r2->sched) && r1->status == r2->status && r1->trial == r2->trial);
    CHECK(r1->repeats == r2->repeats && r1->regs == r2->regs && r1->spills == r2->spills);
    cut_buf_free(&t1);
    cut_buf_free(&t2);
    free(r2);
}

static void load_as_file(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/fuzz_gemm_log_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return;
    CHECK(write(fd, data, size) == (ssize_t)size);
    close(fd);
    cut_gemm_record *recs = NULL;
    int n = 0, partial = 0, bad = 0;
    char note[256];
    cut_err e = {{0}};
    CHECK(cut_gemm_records_load(path, &recs, &n, &partial, &bad, note, sizeof note, &e) == 0);
    size_t lines = 0;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    CHECK((size_t)n + (size_t)bad <= lines);
    CHECK(bad == 0 || note[0] != 0);
    free(recs);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cut_gemm_record *r1 = malloc(sizeof *r1);
    CHECK(r1);
    memset(r1, 0xa5, sizeof *r1);
    cut_err e = {{0}};
    int rc = cut_gemm_record_parse((const char *)data, size, r1, &e);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        const unsigned char *p = (const unsigned char *)r1;
        for (size_t i = 0; i < sizeof *r1; i++)
            CHECK(p[i] == 0xa5);
    } else {
        round_trip(r1);
    }
    free(r1);
    load_as_file(data, size);
    return 0;
}
