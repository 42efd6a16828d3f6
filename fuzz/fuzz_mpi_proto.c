/* libFuzzer target: the MPI conversation's own parsers (src/dist/mpi_proto.h) on arbitrary bytes: the first
 * CUT_MPI_HEADER_SIZE bytes as a frame header (cut_mpi_header_parse, against a limit picked by the first byte), the
 * rest as a HELLO's payload (cut_mpi_hello_decode).
 * Invariants:
 *   - a header that parses has a known type, a length within the limit and a chunk in [1, CUT_MPI_CHUNK], and
 *     re-encodes to the same bytes; its chunks cover the length, none over the chunk or INT_MAX; a failure has a
 *     sentence;
 *   - a HELLO that decodes re-encodes to exactly the payload, its strings NUL-terminated within their buffers; a
 *     failure has a sentence. */
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

static void check_hello(const uint8_t *p, size_t n)
{
    uint8_t *copy = n ? malloc(n) : NULL; /* exactly sized: a read past the payload is caught */
    if (n)
        memcpy(copy, p, n);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < CUT_MPI_HEADER_SIZE)
        return 0;
    static const size_t limits[4] = {0, 1000, CUT_WP_MAX_REPLY, CUT_WP_MAX_REQUEST};
    check_header(data, limits[data[0] & 3]);
    check_hello(data + CUT_MPI_HEADER_SIZE, size - CUT_MPI_HEADER_SIZE);
    return 0;
}
