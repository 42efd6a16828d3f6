/* cutune — the measurement worker's wire protocol (internal header).
 *
 * The parent (gpu_runner.c) never creates a CUDA context: it fork+execs `cutune __worker <dev> <in_fd> <out_fd>`
 * connected by two pipes and talks to it in framed binary messages. Parent and worker are the same binary on the
 * same machine, so numbers travel in native byte order; every field is still read through a bounds-checked cursor,
 * so a short or garbage frame is an error, never undefined behaviour.
 *
 * Frame: 16-byte header {u32 magic "CUTW", u32 type, u64 payload length} then the payload.
 *
 * Conversation (worker -> parent replies in brackets): two requests, whatever op built the work.
 *   worker start        [HELLO name, uuid, sm, L2 bytes  |  ERROR sentence]
 *   PREPARE_WORK        [ACK | ERROR]          a work (work.h): typed buffers with both input sets and both
 *                                              references (or none: capture; or the runner's: a GEMM's references
 *                                              from the worker's cuBLAS DGEMM), the check rule and tolerances, the
 *                                              op (for the vendor baselines), FLOPs per call. Replaces every work
 *                                              the worker holds (the MPI rank's way, src/dist)
 *   HOLD_WORK           [HELD | ERROR]         an id and a work as PREPARE_WORK's: the worker prepares it beside the
 *                                              works it holds (at most CUT_WP_HOLD_MAX) and selects it; when the
 *                                              device has no room for it, it drops every other held work and tries
 *                                              once more (HELD says which it still holds)
 *   SELECT_WORK         [HELD | ERROR]         an id: selects that held work, nothing sent again; an id the worker
 *                                              does not hold selects none (HELD's selected 0: send it again)
 *   DROP_WORK           [HELD | ERROR]         an id: frees that held work's buffers (an id not held: nothing)
 *   RUN                 [RUN_RESULT | VENDOR_RESULT | ERROR]
 *                                              the timing policy (cut_wp_run_encode: a new policy never re-sends the
 *                                              buffers), then what to run: a CALL (module image, launch, arguments:
 *                                              buffers, scalars, TMA maps of buffers), checked on set 0, timed on
 *                                              set 0, checked on set 1 (work.h), optionally observed by an energy
 *                                              plan; or the op's vendor baseline on set 0: CUDNN (a conv's fastest
 *                                              cuDNN algorithm), CUBLAS (a GEMM's pedantic SGEMM), VENDOR (a GEMM's
 *                                              cuBLAS + cuBLASLt candidates: VENDOR_RESULT)
 *   QUIT                (worker exits 0)
 * A RESULT with status CUT_ST_FAULT means the worker's context is dead: the worker exits right after sending it.
 * Held works (the runners' held.h: a user kernel's spec sizes and check sizes, switched between for every checked
 * build) live as long as the worker: a fresh worker holds none, and the runner sends them again. The worker may drop
 * an unselected held work when it needs the memory (it says so in the next HELD, or by selecting none). */
#ifndef CUTUNE_MEASURE_WORKER_PROTO_H
#define CUTUNE_MEASURE_WORKER_PROTO_H

#include "cutune/common.h"
#include "cutune/energy.h"
#include "cutune/gemm.h"
#include "cutune/gpu.h"
#include "cutune/measure.h"
#include "cutune/util.h"
#include "cutune/work.h"
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
    CUT_WP_ACK,
    CUT_WP_QUIT,
    CUT_WP_PREPARE_WORK,
    CUT_WP_RUN,
    CUT_WP_RUN_RESULT,
    CUT_WP_VENDOR_RESULT,
    CUT_WP_HOLD_WORK,
    CUT_WP_SELECT_WORK,
    CUT_WP_DROP_WORK,
    CUT_WP_HELD,
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

/* The run request (RUN): 1 for it, else 0. */
int cut_wp_is_run(uint32_t type);
/* A run request's payload: the timing policy (i32 warmup, min and max repeats, flush; f64 min total ms, timeout s),
 * then the request's own len bytes (body; the decoders below read only those). */
void cut_wp_run_encode(const cut_timing *t, const void *body, size_t len, cut_buf *b);
/* Splits a run request: its timing policy into *t (checked: warmup >= 0, 1 <= min <= max repeats, a finite min
 * total >= 0, a timeout > 0) and the rest as *body, a frame of the same type that points into f (never free it).
 * -1 with a sentence naming the message for a short payload or an unusable policy. */
int cut_wp_run_split(const cut_wp_frame *f, cut_timing *t, cut_wp_frame *body, cut_err *e);

/* The structural check of a TMA descriptor that RUN's decode applies (the parent applies it before sending, so
 * that a bad descriptor is the candidate's LAUNCH_ERROR, not a protocol error): operand 0 or 1, elem_bytes 2 or 4,
 * dims in [1, 2^32], row_bytes a multiple of 16 in [dims[0] * elem_bytes, 2^40), box in [1, 256], swizzle 0, 32,
 * 64 or 128; planes at most 2^32 and, when not 0, plane_bytes a multiple of 16 in [dims[1] * row_bytes, 2^40). The
 * driver's own rules (cuTensorMapEncodeTiled) are checked when the worker encodes the map. */
int cut_wp_tma_check(const cut_tma_desc *t, cut_err *e);
/* The bytes a map of t reaches from its base: (planes - 1) * plane_bytes + (dims[1] - 1) * row_bytes + dims[0] *
 * elem_bytes (planes 0: no plane term); ~0 on overflow. */
unsigned long long cut_wp_tma_span(const cut_tma_desc *t);
/* "A dims 4096x4096 row 8192 B box 64x128 elem 2 swizzle 128" into buf. */
void cut_wp_tma_describe(const cut_tma_desc *t, char *buf, size_t n);
/* RESULT's fields: i32 status, the error, f64 median, min, max, i32 repeats, f64 max error, the algorithm name. */
void cut_wp_result_encode(const cut_result *r, const char *algo, cut_buf *b);

/* The ranges of cut_vendor_opts (heuristic 0..256, enumerate 0 or 1, max configs 0..4096, budget in (0, 1e6] s). */
int cut_wp_vendor_check(const cut_vendor_opts *o, cut_err *e);
/* VENDOR_RESULT: the best entry (RESULT's fields, config as the algorithm name), i32 tried, valid, heuristic,
 * enumerated, budget_hit, the note, i32 ntop and ntop entries. Decode rejects unknown statuses, negative counts,
 * valid > tried, budget_hit > 1 and ntop outside [0, CUT_VENDOR_TOP]. */
void cut_wp_vendor_result_encode(const cut_vendor_result *v, cut_buf *b);
int cut_wp_vendor_result_decode(const cut_wp_frame *f, cut_vendor_result *v, cut_err *e);

/* PREPARE_WORK: u32 check rule, f64 atol, rtol, i32 op kind, i32 op ndims and as many i64, u32 runner_refs, f64
 * flops, i32 nbufs; per buffer: name, u32 flags (1 output, 2 zero-initialised output), i32 dtype, u64 elems, then
 * the bytes of set 0 and set 1 (inputs), or the two references or two empty byte strings (outputs). Decode copies
 * every byte string into its own allocation (w->owns_data: free with cut_work_free, also after a failed decode) and
 * checks the work (cut_work_check, every size elems * dtype size). */
void cut_wp_work_encode(const cut_work *w, cut_buf *b);
int cut_wp_work_decode(const cut_wp_frame *f, cut_work *w, cut_err *e);

/* The most works a worker holds (HOLD_WORK); the runners hold fewer (held.h's CUT_HELD_MAX). */
#define CUT_WP_HOLD_MAX 4

/* HOLD_WORK: u64 id (>= 1), then PREPARE_WORK's payload. Decode reads the id (0 is refused) and the work as
 * cut_wp_work_decode does (w->owns_data; freed again on failure). -1 with a sentence naming HOLD_WORK. */
void cut_wp_hold_encode(uint64_t id, const cut_work *w, cut_buf *b);
int cut_wp_hold_decode(const cut_wp_frame *f, uint64_t *id, cut_work *w, cut_err *e);
/* SELECT_WORK and DROP_WORK: exactly u64 id (>= 1). Decode checks that f is of type (one of the two): -1 with a
 * sentence naming the message for another type, a short or long payload, or id 0. */
void cut_wp_id_encode(uint64_t id, cut_buf *b);
int cut_wp_id_decode(const cut_wp_frame *f, uint32_t type, uint64_t *id, cut_err *e);
/* HELD: u64 selected (0: none), u32 n (0..CUT_WP_HOLD_MAX), then the n ids the worker holds (each >= 1, no two
 * alike); selected, when not 0, is one of them. Decode rejects anything else. */
typedef struct cut_wp_held {
    uint64_t selected;
    int n;
    uint64_t id[CUT_WP_HOLD_MAX];
} cut_wp_held;
void cut_wp_held_encode(const cut_wp_held *h, cut_buf *b);
int cut_wp_held_decode(const cut_wp_frame *f, cut_wp_held *h, cut_err *e);
/* 1 when h lists id. */
int cut_wp_held_has(const cut_wp_held *h, uint64_t id);

/* A Conv2D or GEMM work's shape from its op into *conv or *gemm, checked against its buffers: two inputs and one
 * output of the shape's sizes, fp32 (a GEMM's inputs in its dtype's storage type), as the vendor baselines and the
 * worker's references read them. A PLAIN work passes untouched. 0, or -1 naming the shape or the buffer. Decode of
 * PREPARE_WORK applies it. */
int cut_wp_work_op(const cut_work *w, cut_conv *conv, cut_gemm *gemm, cut_err *e);

/* What a RUN runs. */
typedef enum cut_wp_what { CUT_WP_RUN_CALL, CUT_WP_RUN_CUDNN, CUT_WP_RUN_CUBLAS, CUT_WP_RUN_VENDOR,
                           CUT_WP_RUN_CUDNN_TF32, /* fp32 data through cuDNN's TF32 tensor-core math */
                           CUT_WP_RUN_WHAT_END } cut_wp_what;
typedef struct cut_wp_run {
    cut_wp_what what;
    cut_call call;          /* CALL: src and bin NULL (the image below is its module) */
    const uint8_t *image;   /* CALL: the cubin (the emulation worker: the source); decode points into the frame */
    size_t image_size;
    int energy;             /* CALL: 1 when plan observes the run (energy.h) */
    cut_energy_plan plan;
    cut_vendor_opts vendor; /* VENDOR */
} cut_wp_run;
/* RUN's body (after the timing policy): u32 what; a CALL: u32 grid[3], block[3], smem, the entry, the image, f64
 * tol_scale, i32 nargs and per argument i32 buf, u32 size, its 8 bytes, u32 tma and (tma) the descriptor, then u32
 * energy and (energy) the plan (string uuid, i32 lrounds, min_steps, f64 warmup_s, chunk_ms, max_wait_s); VENDOR:
 * i32 heuristic_n, enumerate, max_configs, f64 budget_s. */
void cut_wp_run_body_encode(const cut_wp_run *q, cut_buf *b);
/* Decodes a RUN's body (the frame cut_wp_run_split gives) against the prepared work w (NULL: none, which only a
 * malformed or early request meets: an error). A CALL is checked: a non-empty image, the call against w
 * (cut_call_check), every TMA descriptor (cut_wp_tma_check); an energy plan (cut_energy_plan_check) only on a work
 * with references; CUDNN needs a conv work, CUBLAS and VENDOR a GEMM work, VENDOR options in range
 * (cut_wp_vendor_check). -1 with a sentence naming the field. */
int cut_wp_run_body_decode(const cut_wp_frame *body, const cut_work *w, cut_wp_run *q, cut_err *e);

/* RUN_RESULT: RESULT's fields (the algorithm: CUDNN's and CUBLAS's name, "" for a call), u32 energy and (energy) u32
 * ok, the meter's sentence when not ok, the measurement; then for each output buffer of w in order the captured
 * bytes of set 0 and set 1, present exactly when the run was an OK call on a work without references, else two
 * empty byte strings. Decode rejects unknown statuses and allocates the outputs into o (o is cleared first; freed
 * again on failure). */
typedef struct cut_wp_run_result {
    cut_result res;
    char algo[64];
    int energy;                 /* the run was observed by an energy plan: */
    int energy_ok;              /*   the meter succeeded (er is meaningful) */
    char why[CUT_ERR_LEN - 64]; /*   its sentence when not */
    cut_energy_result er;
} cut_wp_run_result;
void cut_wp_run_result_encode(const cut_wp_run_result *rr, const cut_work *w, const cut_work_outputs *o, cut_buf *b);
int cut_wp_run_result_decode(const cut_wp_frame *f, const cut_work *w, cut_wp_run_result *rr, cut_work_outputs *o,
                             cut_err *e);
/* The largest RUN_RESULT for w: both sets of every output plus room for the result. */
size_t cut_wp_run_result_max(const cut_work *w);

/* How long an energy-observed run may take in the worker: the per-candidate timeout_s (<= 0: 10 s), plus the
 * plan's warm-up and the longest its windows may wait for counter changes. The parent waits this long for such a
 * RUN (plus its compile allowance for the emulation worker, whose watchdog uses this). */
double cut_wp_energy_timeout_s(double timeout_s, const cut_energy_plan *p);

/* A compile's numbers (cut_compile_info): u32 compiled, ok, i32 regs, spill stores and loads, static smem, stack
 * frame, f64 compile ms, u32 cache hit, u64 key. Decode rejects flags over 1 and a negative or non-finite time (-1;
 * the cursor's position is then undefined). */
void cut_wp_comp_encode(const cut_compile_info *c, cut_buf *b);
int cut_wp_comp_decode(cut_wp_rd *r, cut_compile_info *c);

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
