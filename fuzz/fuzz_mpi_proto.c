/* libFuzzer target: the MPI conversation's own parsers (src/dist/mpi_proto.h) on arbitrary bytes: the first
 * CUT_MPI_HEADER_SIZE bytes as a frame header (cut_mpi_header_parse, against a limit picked by the first byte), the
 * rest as the payload of a HELLO (cut_mpi_hello_decode), a SETUP (cut_mpi_setup_decode), a RUN_SOURCE
 * (cut_mpi_run_source_split) and a RUN_BUILT (cut_mpi_run_built_split).
 * Invariants:
 *   - a header that parses has a known type, a length within the limit and a chunk in [1, CUT_MPI_CHUNK], and
 *     re-encodes to the same bytes; its chunks cover the length, none over the chunk or INT_MAX; a failure has a
 *     sentence;
 *   - a HELLO or SETUP that decodes re-encodes to exactly the payload, its strings NUL-terminated within their
 *     buffers; a failure has a sentence;
 *   - a RUN_SOURCE or RUN_BUILT that splits re-encodes (its flag or compile numbers, then the inner frame) to exactly
 *     the payload, the inner frame inside it and of the inner type; a failure has a sentence. */
#include "dist/mpi_proto.h"
#include "fuzz_common.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_header(const uint8_t *hdr, size_t max_len)
{
    uint32_t type = 0;
    uint64_t len = 0, chunk = 0;
    cut_err e = {{0}};
    if (cut_mpi_header_parse(hdr, max_len, &type, &len, &chunk, &e) != 0) {
        CHECK(e.msg[0] != 0);
        return;
    }
    CHECK(cut_mpi_type_known(type) && len <= max_len && chunk >= 1 && chunk <= CUT_MPI_CHUNK);
    uint8_t again[CUT_MPI_HEADER_SIZE];
    cut_mpi_header(again, type, len, chunk);
    CHECK(memcmp(again, hdr, sizeof again) == 0);
    const size_t n = cut_mpi_nchunks(len, chunk);
    CHECK(n == (len + chunk - 1) / chunk);
    if (n == 0)
        return;
    uint64_t off;
    int first, last;
    cut_mpi_chunk_at(len, chunk, 0, &off, &first);
    CHECK(off == 0 && first > 0 && (uint64_t)first <= chunk && first <= INT_MAX);
    cut_mpi_chunk_at(len, chunk, n - 1, &off, &last);
    CHECK(last > 0 && (uint64_t)last <= chunk && off + (uint64_t)last == len);
}

/* An exactly sized copy of p (a read past the payload is caught); free it. */
static uint8_t *copy_of(const uint8_t *p, size_t n)
{
    uint8_t *copy = n ? malloc(n) : NULL;
    if (n)
        memcpy(copy, p, n);
    return copy;
}

static void check_hello(const uint8_t *p, size_t n)
{
    uint8_t *copy = copy_of(p, n);
    cut_wp_frame f = {CUT_MPI_HELLO, copy, n};
    cut_mpi_hello h;
    cut_err e = {{0}};
    if (cut_mpi_hello_decode(&f, &h, &e) != 0) {
        CHECK(e.msg[0] != 0);
    } else {
        CHECK(memchr(h.env.backend, 0, sizeof h.env.backend) && memchr(h.env.gpu_name, 0, sizeof h.env.gpu_name) &&
              memchr(h.env.gpu_uuid, 0, sizeof h.env.gpu_uuid) &&
              memchr(h.env.driver_string, 0, sizeof h.env.driver_string) && memchr(h.host, 0, sizeof h.host));
        cut_buf b;
        cut_buf_init(&b);
        cut_mpi_hello_encode(&h, &b);
        CHECK(b.len == n && (n == 0 || memcmp(b.data, p, n) == 0));
        cut_buf_free(&b);
    }
    free(copy);
}

static void check_setup(const uint8_t *p, size_t n)
{
    uint8_t *copy = copy_of(p, n);
    cut_wp_frame f = {CUT_MPI_SETUP, copy, n};
    cut_mpi_setup s;
    cut_err e = {{0}};
    if (cut_mpi_setup_decode(&f, &s, &e) != 0) {
        CHECK(e.msg[0] != 0);
    } else {
        CHECK(memchr(s.backend, 0, sizeof s.backend) && memchr(s.nvrtc_opts, 0, sizeof s.nvrtc_opts) &&
              (s.compile == 0 || s.compile == 1));
        cut_buf b;
        cut_buf_init(&b);
        cut_mpi_setup_encode(&s, &b);
        CHECK(b.len == n && (n == 0 || memcmp(b.data, p, n) == 0));
        cut_buf_free(&b);
    }
    free(copy);
}

/* The inner frame of a split lies inside the outer payload, at its end. */
static void check_inner(const cut_wp_frame *outer, const cut_wp_frame *inner, uint32_t type)
{
    CHECK(inner->type == type && inner->len <= outer->len && inner->data == outer->data + (outer->len - inner->len));
}

static void check_run_frames(const uint8_t *p, size_t n)
{
    uint8_t *copy = copy_of(p, n);
    cut_wp_frame f = {CUT_MPI_RUN_SOURCE, copy, n}, inner;
    cut_err e = {{0}};
    int arch_a = -1;
    cut_buf b, rest;
    if (cut_mpi_run_source_split(&f, &arch_a, &inner, &e) != 0) {
        CHECK(e.msg[0] != 0);
    } else {
        check_inner(&f, &inner, CUT_WP_RUN);
        cut_buf_init(&b);
        cut_buf_init(&rest);
        cut_buf_append(&rest, inner.data, inner.len);
        cut_mpi_run_source_encode(arch_a, &rest, &b);
        CHECK(b.len == n && memcmp(b.data, p, n) == 0);
        cut_buf_free(&b);
        cut_buf_free(&rest);
    }
    f.type = CUT_MPI_RUN_BUILT;
    cut_compile_info c;
    e.msg[0] = 0;
    if (cut_mpi_run_built_split(&f, &c, &inner, &e) != 0) {
        CHECK(e.msg[0] != 0);
    } else {
        check_inner(&f, &inner, CUT_WP_RUN_RESULT);
        cut_buf_init(&b);
        cut_buf_init(&rest);
        cut_buf_append(&rest, inner.data, inner.len);
        cut_mpi_run_built_encode(&c, &rest, &b);
        CHECK(b.len == n && memcmp(b.data, p, n) == 0);
        cut_buf_free(&b);
        cut_buf_free(&rest);
    }
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < CUT_MPI_HEADER_SIZE)
        return 0;
    static const size_t limits[4] = {0, 1000, CUT_WP_MAX_REPLY, CUT_WP_MAX_REQUEST};
    check_header(data, limits[data[0] & 3]);
    check_hello(data + CUT_MPI_HEADER_SIZE, size - CUT_MPI_HEADER_SIZE);
    check_setup(data + CUT_MPI_HEADER_SIZE, size - CUT_MPI_HEADER_SIZE);
    check_run_frames(data + CUT_MPI_HEADER_SIZE, size - CUT_MPI_HEADER_SIZE);
    return 0;
}
