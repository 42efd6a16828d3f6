/* The MPI conversation's frames (src/dist/mpi_proto.c, mpi_wire.c): the header, the chunking of payloads past
 * INT_MAX, the HELLO, SETUP, RUN_SOURCE and RUN_BUILT codecs, and with MPI built in, frames sent to this rank itself in a one-process MPI. */
#include "dist/mpi_proto.h"

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static void test_header(void **state)
{
    (void)state;
    uint8_t h[CUT_MPI_HEADER_SIZE];
    uint32_t type;
    uint64_t len, chunk;
    cut_err e = {{0}};
    cut_mpi_header(h, CUT_WP_RUN, 1234, 7);
    assert_int_equal(cut_mpi_header_parse(h, 1 << 20, &type, &len, &chunk, &e), 0);
    assert_int_equal(type, CUT_WP_RUN);
    assert_int_equal(len, 1234);
    assert_int_equal(chunk, 7);
    cut_mpi_header(h, CUT_MPI_SETUP, 0, CUT_MPI_CHUNK);
    assert_int_equal(cut_mpi_header_parse(h, 0, &type, &len, &chunk, &e), 0);
    assert_string_equal(cut_mpi_type_name(type), "SETUP");
    /* too long for the receiver, unknown type, no chunk, a chunk MPI cannot count, a bad magic */
    cut_mpi_header(h, CUT_WP_RUN, 1235, 7);
    assert_int_equal(cut_mpi_header_parse(h, 1234, &type, &len, &chunk, &e), -1);
    assert_non_null(strstr(e.msg, "over the 1234 accepted"));
    cut_mpi_header(h, 40, 1, 7);
    assert_int_equal(cut_mpi_header_parse(h, 1 << 20, &type, &len, &chunk, &e), -1);
    cut_mpi_header(h, CUT_MPI_TYPE_END, 1, 7);
    assert_int_equal(cut_mpi_header_parse(h, 1 << 20, &type, &len, &chunk, &e), -1);
    cut_mpi_header(h, CUT_WP_RUN, 1, 0);
    assert_int_equal(cut_mpi_header_parse(h, 1 << 20, &type, &len, &chunk, &e), -1);
    cut_mpi_header(h, CUT_WP_RUN, 1, (uint64_t)INT_MAX + 1);
    assert_int_equal(cut_mpi_header_parse(h, 1 << 20, &type, &len, &chunk, &e), -1);
    cut_mpi_header(h, CUT_WP_RUN, 1, 7);
    h[0] ^= 1;
    assert_int_equal(cut_mpi_header_parse(h, 1 << 20, &type, &len, &chunk, &e), -1);
    assert_non_null(strstr(e.msg, "magic"));
}

/* Chunks cover [0, len) in order, each <= chunk and <= INT_MAX, only the last shorter. */
static void check_chunks(uint64_t len, uint64_t chunk, size_t want)
{
    const size_t n = cut_mpi_nchunks(len, chunk);
    assert_int_equal(n, want);
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t off;
        int size;
        cut_mpi_chunk_at(len, chunk, i, &off, &size);
        assert_true(off == at);
        assert_true(size > 0 && (uint64_t)size <= chunk);
        if (i + 1 < n)
            assert_true((uint64_t)size == chunk);
        at += (uint64_t)size;
    }
    assert_true(at == len);
}

static void test_chunks(void **state)
{
    (void)state;
    check_chunks(0, 7, 0);
    check_chunks(1, 7, 1);
    check_chunks(7, 7, 1);
    check_chunks(8, 7, 2);
    check_chunks(100, 7, 15);
    /* past INT_MAX: a 5 GiB + 3 bytes tensor in 1 GiB chunks */
    check_chunks(((uint64_t)5 << 30) + 3, CUT_MPI_CHUNK, 6);
    assert_true(CUT_MPI_CHUNK <= (size_t)INT_MAX);
}

static void test_hello(void **state)
{
    (void)state;
    cut_mpi_hello h, g;
    memset(&h, 0, sizeof h);
    snprintf(h.env.backend, sizeof h.env.backend, "cuda");
    snprintf(h.env.gpu_name, sizeof h.env.gpu_name, "NVIDIA H100 80GB HBM3");
    snprintf(h.env.gpu_uuid, sizeof h.env.gpu_uuid, "GPU-5e7a1c2b-0d3f-4e5a-8b9c-0123456789ab");
    snprintf(h.env.driver_string, sizeof h.env.driver_string, "580.159.03");
    h.env.driver_version = 13000;
    h.env.sm_clock_mhz = 1980;
    h.env.power_limit_w = 700.5;
    h.env.other_procs = 1;
    h.env.clock_events = 4;
    h.runner_refs = 1;
    h.compiles = 1;
    h.device = 3;
    cut_devlimits_sm90(&h.limits);
    snprintf(h.host, sizeof h.host, "node17");
    cut_buf b;
    cut_buf_init(&b);
    cut_mpi_hello_encode(&h, &b);
    cut_wp_frame f = {CUT_MPI_HELLO, (uint8_t *)b.data, b.len};
    cut_err e = {{0}};
    assert_int_equal(cut_mpi_hello_decode(&f, &g, &e), 0);
    assert_memory_equal(&h.env, &g.env, sizeof h.env);
    assert_memory_equal(&h.limits, &g.limits, sizeof h.limits);
    assert_int_equal(g.runner_refs, 1);
    assert_int_equal(g.compiles, 1);
    assert_int_equal(g.device, 3);
    assert_string_equal(g.host, "node17");
    f.len = b.len - 1; /* short */
    assert_int_equal(cut_mpi_hello_decode(&f, &g, &e), -1);
    cut_buf_append(&b, "x", 1); /* trailing bytes */
    f.data = (uint8_t *)b.data;
    f.len = b.len;
    assert_int_equal(cut_mpi_hello_decode(&f, &g, &e), -1);
    cut_buf_free(&b);
}

static void test_setup(void **state)
{
    (void)state;
    cut_mpi_setup s = {.compile = 1}, g;
    snprintf(s.backend, sizeof s.backend, "compile");
    snprintf(s.nvrtc_opts, sizeof s.nvrtc_opts, "-lineinfo -DX=1");
    cut_buf b;
    cut_buf_init(&b);
    cut_mpi_setup_encode(&s, &b);
    cut_wp_frame f = {CUT_MPI_SETUP, (uint8_t *)b.data, b.len};
    cut_err e = {{0}};
    assert_int_equal(cut_mpi_setup_decode(&f, &g, &e), 0);
    assert_string_equal(g.backend, "compile");
    assert_int_equal(g.compile, 1);
    assert_string_equal(g.nvrtc_opts, "-lineinfo -DX=1");
    f.len = b.len - 1; /* short */
    assert_int_equal(cut_mpi_setup_decode(&f, &g, &e), -1);
    assert_non_null(strstr(e.msg, "malformed SETUP"));
    cut_buf_free(&b);
    /* a compile flag other than 0 or 1, a backend name too long */
    cut_buf_init(&b);
    cut_wp_put_str(&b, "cuda");
    cut_wp_put_u32(&b, 2);
    cut_wp_put_str(&b, "");
    f = (cut_wp_frame){CUT_MPI_SETUP, (uint8_t *)b.data, b.len};
    assert_int_equal(cut_mpi_setup_decode(&f, &g, &e), -1);
    cut_buf_free(&b);
    cut_buf_init(&b);
    cut_wp_put_str(&b, "a-backend-name-too-long");
    cut_wp_put_u32(&b, 0);
    cut_wp_put_str(&b, "");
    f = (cut_wp_frame){CUT_MPI_SETUP, (uint8_t *)b.data, b.len};
    assert_int_equal(cut_mpi_setup_decode(&f, &g, &e), -1);
    cut_buf_free(&b);
}

/* RUN_SOURCE carries its target flag and a RUN; RUN_BUILT the compile's numbers and a RUN_RESULT, each split back
 * into a frame of the inner type that points into the outer one. */
static void test_run_source_built(void **state)
{
    (void)state;
    cut_buf run, b;
    cut_buf_init(&run);
    cut_buf_init(&b);
    cut_buf_append(&run, "the RUN payload", 15);
    cut_mpi_run_source_encode(1, &run, &b);
    cut_wp_frame f = {CUT_MPI_RUN_SOURCE, (uint8_t *)b.data, b.len}, inner;
    cut_err e = {{0}};
    int arch_a = 0;
    assert_int_equal(cut_mpi_run_source_split(&f, &arch_a, &inner, &e), 0);
    assert_int_equal(arch_a, 1);
    assert_int_equal(inner.type, CUT_WP_RUN);
    assert_int_equal(inner.len, 15);
    assert_memory_equal(inner.data, "the RUN payload", 15);
    f.len = 3; /* shorter than its flag */
    assert_int_equal(cut_mpi_run_source_split(&f, &arch_a, &inner, &e), -1);
    b.data[0] = 2; /* a flag over 1 */
    f.len = b.len;
    assert_int_equal(cut_mpi_run_source_split(&f, &arch_a, &inner, &e), -1);
    cut_buf_free(&b);

    cut_compile_info c = {.compiled = 1, .ok = 1, .regs = 168, .spill_stores = 8, .spill_loads = 12,
                          .smem_static = 4096, .stack_frame = 16, .compile_ms = 812.5, .cache_hit = 0,
                          .key = 0x0123456789abcdefull}, g;
    cut_buf_init(&b);
    cut_mpi_run_built_encode(&c, &run, &b);
    assert_true(b.len <= run.len + CUT_MPI_BUILT_EXTRA);
    f = (cut_wp_frame){CUT_MPI_RUN_BUILT, (uint8_t *)b.data, b.len};
    assert_int_equal(cut_mpi_run_built_split(&f, &g, &inner, &e), 0);
    assert_true(g.compiled == 1 && g.ok == 1 && g.regs == 168 && g.spill_stores == 8 && g.spill_loads == 12 &&
                g.smem_static == 4096 && g.stack_frame == 16 && g.compile_ms == 812.5 && g.cache_hit == 0 &&
                g.key == c.key);
    assert_int_equal(inner.type, CUT_WP_RUN_RESULT);
    assert_int_equal(inner.len, 15);
    f.len = 20; /* the numbers cut short */
    assert_int_equal(cut_mpi_run_built_split(&f, &g, &inner, &e), -1);
    assert_non_null(strstr(e.msg, "malformed RUN_BUILT"));
    cut_buf_free(&b);
    /* a negative compile time, a flag over 1 */
    const cut_compile_info bad[2] = {{.compiled = 1, .compile_ms = -1}, {.compiled = 1}};
    for (int i = 0; i < 2; i++) {
        cut_buf_init(&b);
        cut_mpi_run_built_encode(&bad[i], &run, &b);
        if (i == 1)
            b.data[4] = 7; /* ok */
        f = (cut_wp_frame){CUT_MPI_RUN_BUILT, (uint8_t *)b.data, b.len};
        assert_int_equal(cut_mpi_run_built_split(&f, &g, &inner, &e), -1);
        cut_buf_free(&b);
    }
    cut_buf_free(&run);
    assert_string_equal(cut_mpi_type_name(CUT_MPI_RUN_SOURCE), "RUN_SOURCE");
    assert_string_equal(cut_mpi_type_name(CUT_MPI_RUN_BUILT), "RUN_BUILT");
}

/* In a child (so that Open MPI's allocations, kept until exit by design, never meet the leak check: _exit): frames
 * sent to this rank itself, one empty, one in 7-byte chunks; a receive with nothing to come times out. 0 when all
 * is well, else the failed step. */
static int self_frames(void)
{
    cut_err e = {{0}};
    int rank, size;
    if (cut_mpi_init(&rank, &size, &e) != 0 || rank != 0 || size != 1)
        return 1;
    uint8_t payload[100];
    for (int i = 0; i < 100; i++)
        payload[i] = (uint8_t)(i * 7 + 1);
    cut_wp_frame f;
    int step = 0;
    if (cut_mpi_send(0, CUT_WP_QUIT, NULL, 0, 0, &e) != 0 || cut_mpi_send(0, CUT_WP_RUN, payload, 100, 7, &e) != 0)
        step = 2;
    else if (cut_mpi_recv(0, 5.0, 1000, &f, &e) != 1 || f.type != CUT_WP_QUIT || f.len != 0)
        step = 3;
    else if (cut_mpi_recv(0, 5.0, 1000, &f, &e) != 1 || f.type != CUT_WP_RUN || f.len != 100 ||
             memcmp(f.data, payload, 100) != 0)
        step = 4;
    else if ((cut_wp_frame_free(&f), cut_mpi_recv(0, 0.2, 1000, &f, &e)) != -2)
        step = 5;
    else if (cut_mpi_lost())
        step = 6;
    if (step)
        fprintf(stderr, "self_frames step %d: %s\n", step, e.msg);
    cut_mpi_end(0);
    return step;
}

static void test_self(void **state)
{
    (void)state;
    if (!cut_mpi_built()) { /* every call says why it cannot */
        cut_err e = {{0}};
        cut_wp_frame f;
        int rank, size;
        assert_int_equal(cut_mpi_init(&rank, &size, &e), -1);
        assert_non_null(strstr(e.msg, "built without MPI"));
        assert_int_equal(size, 1);
        assert_int_equal(cut_mpi_send(1, CUT_WP_QUIT, NULL, 0, 0, &e), -1);
        assert_non_null(strstr(e.msg, "not started"));
        assert_int_equal(cut_mpi_recv(1, 0, 0, &f, &e), -1);
        skip();
    }
    fflush(NULL);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(self_frames());
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_launched(void **state)
{
    (void)state;
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_SIZE", "PMI_RANK",
                                       "PMIX_RANK", "SLURM_STEP_NUM_TASKS"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        unsetenv(vars[i]);
    int size, rank;
    assert_int_equal(cut_mpi_launched(&size, &rank), 0);
    setenv("OMPI_COMM_WORLD_SIZE", "1", 1); /* one rank: a plain run */
    assert_int_equal(cut_mpi_launched(&size, &rank), 0);
    setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
    setenv("OMPI_COMM_WORLD_RANK", "2", 1);
    assert_int_equal(cut_mpi_launched(&size, &rank), 1);
    assert_int_equal(size, 3);
    assert_int_equal(rank, 2);
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("OMPI_COMM_WORLD_RANK");
    setenv("PMIX_RANK", "0", 1); /* srun --mpi=pmix: the size from Slurm, or MPI's to tell */
    assert_int_equal(cut_mpi_launched(&size, &rank), 1);
    assert_int_equal(size, 0);
    setenv("SLURM_STEP_NUM_TASKS", "4", 1);
    assert_int_equal(cut_mpi_launched(&size, &rank), 1);
    assert_int_equal(size, 4);
    unsetenv("PMIX_RANK");
    unsetenv("SLURM_STEP_NUM_TASKS");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header), cmocka_unit_test(test_chunks), cmocka_unit_test(test_hello),
        cmocka_unit_test(test_setup), cmocka_unit_test(test_run_source_built),
        cmocka_unit_test(test_launched), cmocka_unit_test(test_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
