/* cutune — the one check-and-time protocol (issue 15): how every candidate of every op is checked and timed, on
 * whatever device runs it. The GPU worker (worker_work.c, through CUDA) and the host emulator (emu_runner.c) each
 * give it a device (cut_vf_dev: a handful of hooks); the sequence, the comparisons and the verdicts live here once.
 *
 * The sequence, on a work (work.h) and one prepared call:
 *   A  state snapshot S0 (the kernel's writable module variables as loaded); outputs poisoned (0xFF), state reset,
 *      one launch on set 0, outputs compared with reference 0            -> WRONG_RESULT (unwritten: the poison)
 *      inputs of set 0 compared with the work's                          -> INPUT_MODIFIED
 *   B  (A changed the kernel's module state) a second launch that finds that state, *no* reset, on set 1 with the
 *      other poison (0x7F): a kernel that skips its work once it ran, or copies out what it kept, is wrong
 *                                                                        -> STATEFUL
 *   T  timed launches on set 0, each after the outputs are poisoned and the state reset (outside the timed region),
 *      so nothing a launch leaves behind, in the output or in a module variable, can make the next one skip work;
 *      then the last timed launch's outputs compared with reference 0     -> WRONG_LATER
 *      inputs of set 0 again                                             -> INPUT_MODIFIED
 *      median below the physical floor (the work's FLOPs at the device's peak, its bytes at its bandwidth): timed
 *      again, still below                                                -> TOO_FAST
 *      (a device with a wall clock apart from its timer) the fastest synchronised launch, by the host's clock, far
 *      slower than the timer says                                         -> TIMING_ESCAPE
 *   C  (unless fixed) poisoned with 0x7F, state reset, one launch on set 1 (fresh inputs), compared with
 *      reference 1                                                        -> WRONG_OTHER_DATA
 *      unless the same launch on set 0 with 0x7F is wrong too (the kernel depends on its output's old contents, on
 *      time, on a race, not on the data)                                 -> WRONG_LATER
 *      inputs of set 1                                                    -> INPUT_MODIFIED
 *   W  (a device with a warm timer, all passed) the warm back-to-back time: only a number, after the verdicts
 * Whatever the outcome, every input the call modified is restored before the next call runs. A work without
 * references captures the outputs of A and C instead of comparing them (a user kernel's baseline). */
#ifndef CUTUNE_MEASURE_VERIFY_H
#define CUTUNE_MEASURE_VERIFY_H

#include "cutune/measure.h"
#include "cutune/work.h"

#include <stddef.h>

/* A device the protocol runs on. Every hook returns 0, or -1 with res set (a status and its sentence; *fatal = 1 when
 * the device is gone: nothing more may run on it). */
typedef struct cut_vf_dev {
    void *ctx;
    /* Readies the next launch on input set s: every output filled with byte poison (an accumulated output, zero_init,
     * with zero), and with reset the kernel's module state put back to its load-time bytes. */
    int (*arm)(void *ctx, int s, unsigned char poison, int reset, cut_result *res, int *fatal);
    /* One launch on the armed set, synchronised. */
    int (*launch)(void *ctx, cut_result *res, int *fatal);
    /* Buffer i's bytes into host (an input: of set s). */
    int (*read)(void *ctx, int i, int s, void *host, cut_result *res, int *fatal);
    /* Input i of set s back to the work's bytes. */
    int (*restore)(void *ctx, int i, int s, cut_result *res, int *fatal);
    /* The kernel's writable module state (state_bytes of it, 0: none, state may be NULL) into host. */
    size_t state_bytes;
    int (*state)(void *ctx, void *host, cut_result *res, int *fatal);
    /* Timed launches on set 0, each armed (poisoned, state reset) outside the timed region: res's times and repeats.
     * The last launch's outputs stay in place. */
    int (*time)(void *ctx, cut_result *res, int *fatal);
    /* Optional (NULL: none): the fastest of a few launches, each synchronised, by the host's clock less the cost of
     * an empty synchronisation (ms). */
    int (*wall)(void *ctx, double *ms, cut_result *res, int *fatal);
    /* Optional (NULL: the host compares every buffer it reads): output i of the last launch against reference s,
     * compared where it lies by the work's rule: 0 with *bad the elements out of tolerance and *max_err the largest
     * error; 1 when the device cannot for this buffer; -1 with res. It only ever clears a buffer: with *bad > 0 the
     * host reads and compares it, and its verdict and message stand. */
    int (*out_check)(void *ctx, int i, int s, double atol, double rtol, size_t *bad, double *max_err, cut_result *res,
                     int *fatal);
    /* Optional: input i of set s against the work's bytes, where it lies: 0 with *same; 1 when the device cannot;
     * -1 with res. As out_check, it only clears: a difference is read and named by the host. */
    int (*in_same)(void *ctx, int i, int s, int *same, cut_result *res, int *fatal);
    /* Optional: once every check passed, the warm back-to-back time into res->warm_ms (or nothing, as the device's
     * timing policy says). 0, or -1 with res (a fault while timing). */
    int (*warm)(void *ctx, cut_result *res, int *fatal);
    /* The device's peak FLOP/s and bandwidth (bytes/s) for the physical floor; 0: no floor of that kind. */
    double peak_flops, peak_bytes_s;
} cut_vf_dev;

/* What is checked. */
typedef struct cut_vf {
    const cut_work *work;
    double atol, rtol;           /* the call's tolerances (cut_call_tolerance) */
    int fixed;                   /* 1: every pass on set 0 (a vendor baseline, bound to set 0's tensors): no C */
    cut_work_outputs *capture;   /* the work has no references: A's and C's outputs go here */
    void *scratch;               /* the protocol's own: one host buffer for every read of a run (NULL for callers) */
} cut_vf;

/* The timer says the work escaped it when the host's fastest synchronised launch is over this factor times the
 * median plus CUT_VF_ESCAPE_SLACK_MS. */
#define CUT_VF_ESCAPE_FACTOR 2.0
#define CUT_VF_ESCAPE_SLACK_MS 0.05
/* Times under floor / this factor are too fast (a peak or bandwidth a little above the device's own). */
#define CUT_VF_FLOOR_SLACK 1.25

/* The sequence above into res (reset first). *fatal = 1 when the device is gone. */
void cut_vf_check_and_time(const cut_vf *v, const cut_vf_dev *d, cut_result *res, int *fatal);

/* One more checked launch on set s (armed with poison, state reset), compared with reference s (status st on a
 * mismatch, its message prefixed with when), then the inputs of set s. 0 when it passes. */
int cut_vf_checked(const cut_vf *v, const cut_vf_dev *d, int s, unsigned char poison, cut_status st, const char *when,
                   cut_result *res, int *fatal);

/* The fastest time (ms) a call on work w can take on d: its FLOPs at peak_flops, its bytes at peak_bytes_s,
 * whichever is longer, divided by CUT_VF_FLOOR_SLACK; 0 when neither is known. */
double cut_vf_floor_ms(const cut_work *w, const cut_vf_dev *d);

#endif
