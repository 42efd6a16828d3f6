/* cutune — the helpers that the worker protocol's codec files share (internal to worker_wire.c, worker_proto.c and
 * worker_proto_kernel.c; the protocol itself is in worker_proto.h). None of them allocates. */
#ifndef CUTUNE_MEASURE_WORKER_PROTO_INT_H
#define CUTUNE_MEASURE_WORKER_PROTO_INT_H

#include "measure/worker_proto.h"

/* worker_wire.c: copies the next n bytes of the payload into dst. 0, or -1 with r->bad set when fewer are left
 * (nothing copied; every later read fails too). */
int cut_wp_rd_take(cut_wp_rd *r, void *dst, size_t n);

/* worker_proto.c: 0 if f is a message of the given type, else -1 with e naming both types. */
int cut_wp_expect_type(const cut_wp_frame *f, uint32_t type, cut_err *e);
/* A decoder's last step: 0 if every field was read and nothing is left over, else -1 with e saying which. */
int cut_wp_rd_finish(const cut_wp_rd *r, const cut_wp_frame *f, cut_err *e);
/* The timing policy as every run request begins with it (cut_wp_run_encode): appended to b / read from r (a short
 * payload leaves r->bad set for cut_wp_rd_finish). */
void cut_wp_put_timing(cut_buf *b, const cut_timing *t);
void cut_wp_get_timing(cut_wp_rd *r, cut_timing *tm);
/* 0 if the decoded policy is usable, else -1 with e naming the message (what) and the values. */
int cut_wp_check_timing(const cut_timing *tm, const char *what, cut_err *e);
/* An energy plan as an observed RUN carries it (after its call's fields): appended to b / read from r (a
 * short payload leaves r->bad set; the caller checks the plan after cut_wp_rd_finish). */
void cut_wp_put_plan(cut_buf *b, const cut_energy_plan *p);
void cut_wp_get_plan(cut_wp_rd *r, cut_energy_plan *p);
/* Reads a cut_result as cut_wp_result_encode wrote it into res, except its status and repeats (into *st and *reps,
 * for cut_wp_result_status to check), and the algorithm name into algo (algo_len bytes). */
void cut_wp_get_result(cut_wp_rd *r, cut_result *res, int32_t *st, int32_t *reps, char *algo, size_t algo_len);
/* Checks the status read by cut_wp_get_result and stores it and reps in res. 0, or -1 with e set. */
int cut_wp_result_status(const cut_wp_frame *f, cut_result *res, int32_t st, int32_t reps, cut_err *e);

void cut_wp_put_tma(cut_buf *b, const cut_tma_desc *t);
void cut_wp_get_tma(cut_wp_rd *r, cut_tma_desc *t);
/* The energy part of RUN_RESULT (u32 ok, the sentence, the measurement); get: -1 for a malformed one. */
void cut_wp_put_energy(cut_buf *b, int ok, const char *why, const cut_energy_result *er);
int cut_wp_get_energy(cut_wp_rd *r, int *ok, char *why, size_t why_len, cut_energy_result *er, cut_err *e);
void cut_wp_put_vendor(cut_buf *b, const cut_vendor_opts *o);
void cut_wp_get_vendor(cut_wp_rd *r, cut_vendor_opts *o);

#endif
