/* cutune — the measurement worker's wire protocol (internal header).
 *
 * The parent (gpu_runner.c) never creates a CUDA context: it fork+execs `cutune __worker <dev> <in_fd> <out_fd>`
 * connected by two pipes and talks to it in framed binary messages. Parent and worker are the same binary on the
 * same machine, so numbers travel in native byte order; every field is still read through a bounds-checked cursor,
 * so a short or garbage frame is an error, never undefined behaviour.
 *
 * Frame: 16-byte header {u32 magic "CUTW", u32 type, u64 payload length} then the payload.
 *
 * Conversation (worker -> parent replies in brackets). A workload is prepared once; every request that runs
 * something (MEASURE, CUDNN, ENERGY, CUBLAS, VENDOR, RUN_KERNEL, ENERGY_KERNEL: cut_wp_is_run) begins with the timing
 * policy it runs under (cut_wp_run_encode), so a new policy (the final re-timing's longer one) never re-sends the
 * tensors:
 *   worker start        [HELLO name, uuid, sm, L2 bytes  |  ERROR sentence]
 *   PREPARE             [ACK | ERROR]          conv shape; for each of two input sets: input, weights, reference
 *                                              output (float). Candidates are checked on set 0 before timing (and
 *                                              timed on it) and on set 1 after, so a kernel that remembers its
 *                                              inputs or hard-codes its outputs fails; the baselines use set 0
 *   MEASURE             [RESULT]               timing; cubin, entry, grid, block, dynamic smem -> cut_result
 *   CUDNN               [CUDNN_RESULT | ERROR] timing; cuDNN's fastest valid algorithm, same harness -> cut_result +
 *                                              its name
 *   ENERGY              [ENERGY_RESULT]        MEASURE's payload + an energy plan -> cut_result + cut_energy_result
 *   PREPARE_GEMM        [ACK | ERROR]          GEMM shape and dtype; for each of two input sets: A, B (floats
 *                                              already rounded to the dtype), reference C (float, or empty: the
 *                                              worker's DGEMM); the worker stores A and B in the dtype's storage
 *                                              type (16-bit for fp16/bf16). MEASURE then launches kernels (A, B, C),
 *                                              or (TMA map of A, TMA map of B, C) when MEASURE carries two TMA
 *                                              descriptors, and checks them by relative Frobenius error
 *                                              (cut_gemm_rel_error <= cut_gemm_tolerance)
 *   CUBLAS              [CUBLAS_RESULT | ERROR] timing; cuBLAS SGEMM (pedantic fp32) on the prepared fp32 GEMM
 *   VENDOR              [VENDOR_RESULT | ERROR] timing, options -> cuBLAS GemmEx + cuBLASLt heuristic and enumerated
 *                                              algorithms on the prepared GEMM, same harness -> best, counts, top
 *   PREPARE_KERNEL      [ACK | ERROR]          a user kernel's work (kwork.h): tolerances, buffers with both input
 *                                              sets and both references (or none: capture)
 *   RUN_KERNEL          [KERNEL_RESULT | ERROR] timing; cubin, entry, launch, arguments -> cut_result + captured
 *                                              outputs
 *   ENERGY_KERNEL       [ENERGY_RESULT | ERROR] RUN_KERNEL's payload + an energy plan, on a prepared work with
 *                                              references -> cut_result + cut_energy_result (as ENERGY's reply)
 *   QUIT                (worker exits 0)
 * A RESULT with status CUT_ST_FAULT means the worker's context is dead: the worker exits right after sending it. */
#ifndef CUTUNE_MEASURE_WORKER_PROTO_H
#define CUTUNE_MEASURE_WORKER_PROTO_H

#include "cutune/common.h"
#include "cutune/energy.h"
#include "cutune/gemm.h"
#include "cutune/gpu.h"
#include "cutune/work.h"
#include "cutune/measure.h"
#include "cutune/util.h"
#include "cutune/workload.h"

#include <stddef.h>
#include <stdint.h>

#define CUT_WP_MAGIC 0x57545543u /* "CUTW" in memory order on little-endian machines */
#define CUT_WP_HEADER_SIZE 16

/* Largest frame each side accepts: replies are small; PREPARE carries three tensors of < 2^31 elements. */
#define CUT_WP_MAX_REPLY ((size_t)1 << 20)
#define CUT_WP_MAX_REQUEST ((size_t)1 << 36)

typedef enum cut_wp_type {
    CUT_WP_HELLO = 1,
    CUT_WP_ERROR,
    CUT_WP_PREPARE,
    CUT_WP_ACK,
    CUT_WP_MEASURE,
    CUT_WP_RESULT,
    CUT_WP_CUDNN,
    CUT_WP_CUDNN_RESULT,
    CUT_WP_QUIT,
    CUT_WP_ENERGY,
    CUT_WP_ENERGY_RESULT,
    CUT_WP_PREPARE_GEMM, /* appended: the values above are unchanged */
    CUT_WP_CUBLAS,
    CUT_WP_CUBLAS_RESULT,
    CUT_WP_VENDOR, /* appended */
    CUT_WP_VENDOR_RESULT,
    CUT_WP_PREPARE_KERNEL, /* appended */
    CUT_WP_RUN_KERNEL,
    CUT_WP_KERNEL_RESULT,
    CUT_WP_ENERGY_KERNEL, /* appended */
    CUT_WP_TYPE_END
} cut_wp_type;

const char *cut_wp_type_name(uint32_t type);

/* ---- framing ---- */

/* A received frame. data is owned (malloc'd; NULL when len is 0); free with cut_wp_frame_free. */
typedef struct cut_wp_frame {
    uint32_t type;
    uint8_t *data;
    size_t len;
} cut_wp_frame;
void cut_wp_frame_free(cut_wp_frame *f);

/* Writes one frame (header + payload), retrying on EINTR and short writes. A closed read end gives -1 with
 * "the other side closed the pipe" (EPIPE) and never kills the process with SIGPIPE. */
/* The frame header of a message of type with a payload of len bytes (what cut_wp_send writes first). */
void cut_wp_header(uint8_t hdr[CUT_WP_HEADER_SIZE], uint32_t type, uint64_t len);
int cut_wp_send(int fd, uint32_t type, const void *payload, size_t len, cut_err *e);

/* Reads one frame. timeout_s < 0 waits forever; otherwise the whole frame must arrive within timeout_s.
 * Returns 1 (frame in *f, caller frees with cut_wp_frame_free), 0 on end of file before the first byte, -1 on an
 * error (read error, truncated frame, bad magic, unknown type, payload over max_len; e set), -2 on timeout (e set). */
int cut_wp_recv(int fd, double timeout_s, size_t max_len, cut_wp_frame *f, cut_err *e);

/* ---- payload cursor: bounds-checked reads; after the first failure every read fails ---- */
typedef struct cut_wp_rd {
    const uint8_t *p;
    size_t len, off;
    int bad;
} cut_wp_rd;
void cut_wp_rd_init(cut_wp_rd *r, const void *data, size_t len);
int cut_wp_get_u32(cut_wp_rd *r, uint32_t *v);
int cut_wp_get_i32(cut_wp_rd *r, int32_t *v);
int cut_wp_get_u64(cut_wp_rd *r, uint64_t *v);
int cut_wp_get_f64(cut_wp_rd *r, double *v);
/* Length-prefixed (u64) bytes: points into the payload (no copy). */
int cut_wp_get_bytes(cut_wp_rd *r, const uint8_t **p, size_t *n);
/* Length-prefixed string copied into buf (NUL-terminated); fails if it does not fit. */
int cut_wp_get_str(cut_wp_rd *r, char *buf, size_t n);

void cut_wp_put_u32(cut_buf *b, uint32_t v);
void cut_wp_put_i32(cut_buf *b, int32_t v);
void cut_wp_put_u64(cut_buf *b, uint64_t v);
void cut_wp_put_f64(cut_buf *b, double v);
void cut_wp_put_bytes(cut_buf *b, const void *p, size_t n);
void cut_wp_put_str(cut_buf *b, const char *s);

/* ---- messages ---- */

typedef struct cut_wp_hello {
    char name[128];
    char uuid[64];
    int sm_major, sm_minor;
    int l2_bytes;
    int driver_version;
} cut_wp_hello;
void cut_wp_hello_encode(const cut_wp_hello *h, cut_buf *b);
int cut_wp_hello_decode(const cut_wp_frame *f, cut_wp_hello *h, cut_err *e);

/* The run requests (MEASURE, ENERGY, CUDNN, CUBLAS, VENDOR, RUN_KERNEL, ENERGY_KERNEL): 1 for those, else 0. */
int cut_wp_is_run(uint32_t type);
/* A run request's payload: the timing policy (i32 warmup, min and max repeats, flush; f64 min total ms, timeout s),
 * then the request's own len bytes (body; the decoders below read only those). */
void cut_wp_run_encode(const cut_timing *t, const void *body, size_t len, cut_buf *b);
/* Splits a run request: its timing policy into *t (checked: warmup >= 0, 1 <= min <= max repeats, a finite min
 * total >= 0, a timeout > 0) and the rest as *body, a frame of the same type that points into f (never free it).
 * -1 with a sentence naming the message for a short payload or an unusable policy. */
int cut_wp_run_split(const cut_wp_frame *f, cut_timing *t, cut_wp_frame *body, cut_err *e);

/* PREPARE. Arrays: decode allocates them (free with cut_wp_prepare_free); encode only reads them. */
typedef struct cut_wp_prepare {
    cut_conv conv;
    float *in[2], *w[2], *ref[2]; /* per input set: cut_conv_in_elems / w_elems / out_elems floats */
} cut_wp_prepare;
void cut_wp_prepare_encode(const cut_wp_prepare *p, cut_buf *b);
/* Validates the shape (cut_conv_validate) and that the array sizes match the shape. */
int cut_wp_prepare_decode(const cut_wp_frame *f, cut_wp_prepare *p, cut_err *e);
void cut_wp_prepare_free(cut_wp_prepare *p);

/* PREPARE_GEMM. Arrays as PREPARE's (decode allocates, free with cut_wp_prepare_gemm_free). Payload: i32 m, n, k,
 * layout, dtype; then per input set A, B and the reference C as length-prefixed floats. */
typedef struct cut_wp_prepare_gemm {
    cut_gemm gemm;
    float *a[2], *b[2], *ref[2]; /* per input set: cut_gemm_a_elems / b_elems / c_elems floats; ref[s] NULL (sent
                                    empty): the worker computes it with cuBLAS DGEMM on the GPU (gemm_ref_gpu.h) */
} cut_wp_prepare_gemm;
void cut_wp_prepare_gemm_encode(const cut_wp_prepare_gemm *p, cut_buf *b);
/* Validates the shape (cut_gemm_validate, layout NN/NT, a known dtype) and the array sizes. */
int cut_wp_prepare_gemm_decode(const cut_wp_frame *f, cut_wp_prepare_gemm *p, cut_err *e);
void cut_wp_prepare_gemm_free(cut_wp_prepare_gemm *p);

/* MEASURE. cubin points into the frame (valid while the frame lives). */
typedef struct cut_wp_measure {
    unsigned grid[3], block[3];
    unsigned smem_dynamic;
    char entry[CUT_ENTRY_LEN];
    const uint8_t *cubin;
    size_t cubin_size;
    double tol_scale; /* the kernel's tolerance factor (cut_kernel_src.tol_scale; 0: 1) */
    int ntma;         /* 0, or 2: the kernel takes TMA maps of tma[0] and tma[1] (cut_kernel_src.ntma) */
    cut_tma_desc tma[2];
} cut_wp_measure;
/* The structural check of a TMA descriptor that MEASURE's decode applies (the parent applies it before sending, so
 * that a bad descriptor is the candidate's LAUNCH_ERROR, not a protocol error): operand 0 or 1, elem_bytes 2 or 4,
 * dims in [1, 2^32], row_bytes a multiple of 16 in [dims[0] * elem_bytes, 2^40), box in [1, 256], swizzle 0, 32,
 * 64 or 128. The driver's own rules (cuTensorMapEncodeTiled) are checked when the worker encodes the map. */
int cut_wp_tma_check(const cut_tma_desc *t, cut_err *e);
/* "A dims 4096x4096 row 8192 B box 64x128 elem 2 swizzle 128" into buf. */
void cut_wp_tma_describe(const cut_tma_desc *t, char *buf, size_t n);
void cut_wp_measure_encode(const cut_wp_measure *m, cut_buf *b);
int cut_wp_measure_decode(const cut_wp_frame *f, cut_wp_measure *m, cut_err *e);

/* RESULT, CUDNN_RESULT and CUBLAS_RESULT (algo is "" for RESULT). Decode rejects unknown statuses. */
void cut_wp_result_encode(const cut_result *r, const char *algo, cut_buf *b);
int cut_wp_result_decode(const cut_wp_frame *f, cut_result *r, char *algo, size_t algo_len, cut_err *e);

/* ENERGY: MEASURE's fields, then the plan (cutune/energy.h). Decode checks the plan (cut_energy_plan_check). */
void cut_wp_energy_encode(const cut_wp_measure *m, const cut_energy_plan *p, cut_buf *b);
int cut_wp_energy_decode(const cut_wp_frame *f, cut_wp_measure *m, cut_energy_plan *p, cut_err *e);
/* ENERGY_RESULT: RESULT's fields, then u32 ok (the meter succeeded), the meter's sentence when not, and the
 * measurement (meaningful when ok). */
void cut_wp_energy_result_encode(const cut_result *r, int ok, const char *why, const cut_energy_result *er,
                                 cut_buf *b);
int cut_wp_energy_result_decode(const cut_wp_frame *f, cut_result *r, int *ok, char *why, size_t why_len,
                                cut_energy_result *er, cut_err *e);

/* VENDOR: i32 heuristic_n, enumerate, max_configs; f64 budget_s. Decode checks the ranges of cut_vendor_opts. */
void cut_wp_vendor_encode(const cut_vendor_opts *o, cut_buf *b);
int cut_wp_vendor_decode(const cut_wp_frame *f, cut_vendor_opts *o, cut_err *e);
/* VENDOR_RESULT: the best entry (RESULT's fields, config as the algorithm name), i32 tried, valid, heuristic,
 * enumerated, budget_hit, the note, i32 ntop and ntop entries. Decode rejects unknown statuses, negative counts,
 * valid > tried, budget_hit > 1 and ntop outside [0, CUT_VENDOR_TOP]. */
void cut_wp_vendor_result_encode(const cut_vendor_result *v, cut_buf *b);
int cut_wp_vendor_result_decode(const cut_wp_frame *f, cut_vendor_result *v, cut_err *e);

/* PREPARE_KERNEL: f64 atol, rtol; i32 nbufs; per buffer: name, u32 flags (1 output, 2 zero-initialised output), i32
 * dtype, u64 elems, then the bytes of set 0 and set 1 (inputs), or the two references or two empty byte strings
 * (outputs). Decode copies every byte string into its own allocation (aligned for the comparison; free with
 * cut_wp_prepare_kernel_free, also after a failed decode) and checks the work (cut_work_check, every size
 * elems * dtype size). */
typedef struct cut_wp_prepare_kernel {
    cut_work work; /* decode: data pointers owned */
} cut_wp_prepare_kernel;
void cut_wp_prepare_kernel_encode(const cut_wp_prepare_kernel *p, cut_buf *b);
int cut_wp_prepare_kernel_decode(const cut_wp_frame *f, cut_wp_prepare_kernel *p, cut_err *e);
void cut_wp_prepare_kernel_free(cut_wp_prepare_kernel *p);

/* RUN_KERNEL: MEASURE's grid, block, dynamic smem, entry and cubin; then i32 nargs and per argument i32 buf, u32 size
 * and its 8 bytes. Decode fills c (src and bin NULL; the cubin points into the frame) and checks it against the
 * prepared work w (cut_call_check) and for a non-empty cubin. */
void cut_wp_run_kernel_encode(const cut_call *c, const void *cubin, size_t cubin_size, cut_buf *b);
int cut_wp_run_kernel_decode(const cut_wp_frame *f, const cut_work *w, cut_call *c, const uint8_t **cubin,
                             size_t *cubin_size, cut_err *e);

/* KERNEL_RESULT: RESULT's fields (no algorithm), then for each output buffer of w in order the captured bytes of set
 * 0 and set 1. They are present exactly when the run was OK and w has no references, else two empty byte strings.
 * Decode allocates them into o (o is cleared first; freed again on failure). */
void cut_wp_kernel_result_encode(const cut_result *r, const cut_work *w, const cut_work_outputs *o, cut_buf *b);
int cut_wp_kernel_result_decode(const cut_wp_frame *f, const cut_work *w, cut_result *r, cut_work_outputs *o,
                                cut_err *e);
/* The largest KERNEL_RESULT for w: both sets of every output plus room for the result. */
size_t cut_wp_kernel_result_max(const cut_work *w);

/* ENERGY_KERNEL: RUN_KERNEL's payload, then the plan exactly as ENERGY carries it (string uuid, i32 lrounds,
 * min_steps, f64 warmup_s, chunk_ms, max_wait_s). Decode fills c and the cubin as RUN_KERNEL's decode does (checked
 * against w, non-empty cubin), checks the plan (cut_energy_plan_check) and that w has references (an energy run
 * never captures). The reply is ENERGY_RESULT. */
void cut_wp_energy_kernel_encode(const cut_call *c, const void *cubin, size_t cubin_size, const cut_energy_plan *p,
                                 cut_buf *b);
int cut_wp_energy_kernel_decode(const cut_wp_frame *f, const cut_work *w, cut_call *c, const uint8_t **cubin,
                                size_t *cubin_size, cut_energy_plan *p, cut_err *e);

/* How long an energy request may take in the worker: the per-candidate timeout_s (<= 0: 10 s), plus the plan's
 * warm-up and the longest its windows may wait for counter changes. The parent waits this long for ENERGY and
 * ENERGY_KERNEL (plus its compile allowance for the emulation worker, whose watchdog uses this). */
double cut_wp_energy_timeout_s(double timeout_s, const cut_energy_plan *p);

/* ERROR: one sentence. */
void cut_wp_error_encode(const char *msg, cut_buf *b);
int cut_wp_error_decode(const cut_wp_frame *f, char *msg, size_t n);

/* ---- worker side ---- */

/* Sends a reply (b NULL: empty); a failure is printed to stderr. 0 or -1. */
int cut_wp_reply(int fd, uint32_t type, const cut_buf *b);
/* Sends ERROR with msg. 0 or -1. */
int cut_wp_reply_error(int fd, const char *msg);

/* ---- parent side (gpu_runner.c, gpu_runner_kernel.c) ---- */

/* Starts `exe __worker dev in_fd out_fd` with two close-on-exec pipes (only the worker's two ends survive its
 * exec; its stdout goes to the parent's stderr). *to_worker / *from_worker are the parent's ends. */
int cut_wp_spawn(const char *exe, int dev, int *pid, int *to_worker, int *from_worker, cut_err *e);
/* The same with the device argument as text ("emu:<dir>" starts the emulation worker). */
int cut_wp_spawn_arg(const char *exe, const char *dev_arg, int *pid, int *to_worker, int *from_worker, cut_err *e);

/* The GPU runner without querying a GPU in the parent: info NULL takes name/UUID/sm from the worker's HELLO.
 * cut_runner_gpu_new is cut_gpu_query + this. Tests use it with a fake worker. Caller frees with cut_runner_free. */
cut_runner *cut_runner_gpu_new_with(int dev, const char *worker_exe, const cut_timing *t, const cut_gpu_info *info,
                                    cut_err *e);
/* Introspection for tests: the current worker's pid (0 if none) and how many workers were started so far. */
int cut_runner_gpu_worker_pid(const cut_runner *r);
int cut_runner_gpu_worker_starts(const cut_runner *r);

#endif
