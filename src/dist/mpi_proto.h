/* cutune — the conversation between rank 0 and a serving rank (internal header).
 *
 * Rank 0's runner (mpi_runner.c) and the serving loop (mpi_serve.c) speak the measurement worker's protocol
 * (measure/worker_proto.h) and its codecs, unchanged, plus four messages of their own:
 *   SETUP what to run     [HELLO what the rank measures on | ERROR sentence]   a local runner is made
 *   PREPARE_WORK          [ACK | ERROR]                                         as to a worker
 *   RUN                   [RUN_RESULT | ERROR]                                  as to a worker (calls only)
 *   RUN_SOURCE            [RUN_BUILT | ERROR]      a RUN whose image is the CUDA source, compiled on the rank (its
 *                                                  target's sm_XXa flag first); the reply is the compile's numbers,
 *                                                  then the RUN_RESULT
 *   ENV                   [ENV the local runner's env(), refreshed]
 *   RELEASE               (no reply: the local runner is freed; the rank waits for the next SETUP)
 *   QUIT                  (no reply: the rank leaves its loop)
 * A frame is one MPI message of its header (the worker's 16 bytes plus the chunk size) and then its payload in
 * chunks of at most that many bytes (MPI counts are ints; a work's tensors can pass 2 GiB). Only MPI
 * point-to-point: no protocol of our own between hosts. */
#ifndef CUTUNE_DIST_MPI_PROTO_H
#define CUTUNE_DIST_MPI_PROTO_H

#include "cutune/dist.h"
#include "measure/worker_proto.h"

#include <stddef.h>
#include <stdint.h>

/* Message types of their own, after the worker protocol's. */
enum { CUT_MPI_SETUP = 64, CUT_MPI_HELLO, CUT_MPI_ENV, CUT_MPI_RELEASE, CUT_MPI_RUN_SOURCE, CUT_MPI_RUN_BUILT,
       CUT_MPI_TYPE_END };

/* 1 for a type either protocol knows. */
int cut_mpi_type_known(uint32_t type);
/* "SETUP", "RUN_RESULT", ..., "UNKNOWN". */
const char *cut_mpi_type_name(uint32_t type);

/* ---- the frame header on MPI: the worker's header, then u64 chunk size ---- */
#define CUT_MPI_HEADER_SIZE (CUT_WP_HEADER_SIZE + 8)
/* Default chunk: 1 GiB, well under INT_MAX. */
#define CUT_MPI_CHUNK ((size_t)1 << 30)

void cut_mpi_header(uint8_t hdr[CUT_MPI_HEADER_SIZE], uint32_t type, uint64_t len, uint64_t chunk);
/* Reads a header: the magic, a known type, a payload of at most max_len and a chunk in [1, CUT_MPI_CHUNK]. -1 with a
 * sentence. */
int cut_mpi_header_parse(const uint8_t hdr[CUT_MPI_HEADER_SIZE], size_t max_len, uint32_t *type, uint64_t *len,
                         uint64_t *chunk, cut_err *e);
/* Chunks of a payload of len bytes cut at chunk bytes (0 for an empty payload). */
size_t cut_mpi_nchunks(uint64_t len, uint64_t chunk);
/* Chunk i's offset and size. */
void cut_mpi_chunk_at(uint64_t len, uint64_t chunk, size_t i, uint64_t *off, int *n);

/* ---- codecs ---- */
void cut_mpi_env_encode(const cut_measure_env *env, cut_buf *b);
int cut_mpi_env_decode(cut_wp_rd *r, cut_measure_env *env);
void cut_mpi_hello_encode(const cut_mpi_hello *h, cut_buf *b);
int cut_mpi_hello_decode(const cut_wp_frame *f, cut_mpi_hello *h, cut_err *e);
/* SETUP: the backend, u32 compile, the NVRTC options. Decode rejects a compile flag over 1 and strings too long. */
void cut_mpi_setup_encode(const cut_mpi_setup *s, cut_buf *b);
int cut_mpi_setup_decode(const cut_wp_frame *f, cut_mpi_setup *s, cut_err *e);
/* RUN_SOURCE: u32 arch_a, then a RUN's payload (run: cut_wp_run_encode's). split gives arch_a and the RUN as a frame
 * that points into f (never free it); -1 with a sentence for a short payload or a flag over 1. */
void cut_mpi_run_source_encode(int arch_a, const cut_buf *run, cut_buf *b);
int cut_mpi_run_source_split(const cut_wp_frame *f, int *arch_a, cut_wp_frame *run, cut_err *e);
/* RUN_BUILT: the compile's numbers (cut_wp_comp_encode), then a RUN_RESULT's payload (rr). split gives them, the RUN_RESULT as a frame
 * that points into f; -1 with a sentence when the numbers do not decode. */
void cut_mpi_run_built_encode(const cut_compile_info *c, const cut_buf *rr, cut_buf *b);
int cut_mpi_run_built_split(const cut_wp_frame *f, cut_compile_info *c, cut_wp_frame *rr, cut_err *e);
/* The most bytes a RUN_BUILT adds to its RUN_RESULT. */
#define CUT_MPI_BUILT_EXTRA 64

/* ---- transport (mpi_wire.c; without MPI every call fails with a sentence) ---- */

/* Sends one frame to rank dest in chunks of chunk bytes (0: CUT_MPI_CHUNK). -1 with e (the MPI error's text). */
int cut_mpi_send(int dest, uint32_t type, const void *payload, size_t len, size_t chunk, cut_err *e);
/* Receives one frame from rank src. timeout_s < 0 waits forever; otherwise the header must come within timeout_s
 * (the payload follows it at once). 1 with *f (free with cut_wp_frame_free), -1 with e (an MPI error, a bad
 * header), -2 on timeout. */
int cut_mpi_recv(int src, double timeout_s, size_t max_len, cut_wp_frame *f, cut_err *e);
/* Notes that the job cannot end cleanly (a rank lost): cut_mpi_end aborts. */
void cut_mpi_mark_lost(void);

#endif
