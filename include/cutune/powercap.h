/* cutune — power caps and energy arithmetic (the energy component; src/energy/).
 *
 * Seed 001 measures each kernel at 5 power caps per GPU model and reports GFLOP/s, energy per iteration and EDP.
 * This header is the library side of `cutune energy --power-caps current|all|W1,W2,.. [--allow-power-cap]`:
 *
 *     cut_powercap_state_dir(dir, sizeof dir, &e);               // per user: restore files and locks
 *     cut_powercap_recover(dir, note, sizeof note, &e);          // every GPU command: undo a crashed run's cap
 *     cut_powercap_query(uuid, &dev, &e);                        // name, current limit, NVML constraints
 *     cut_powercap_parse(arg, &spec, &e);                        // --power-caps syntax
 *     cut_powercap_resolve(&spec, &dev, &caps, &e);              // -> milliwatts, range-checked, in order
 *     cut_powercap_begin(uuid, dir, allow_power_cap, &s, &e);    // records the original limit (restore file)
 *     for each caps.mw[i]:
 *         cut_powercap_set(s, caps.mw[i], &e);                   // refused without allow unless == current
 *         ... measure, sampling cut_nvml_energy_mj into cut_energy_sample[] ...
 *         cut_energy_compute(samples, n, elapsed_s, iters, flops, &st, &e);
 *         cut_energy_format(&st, text, sizeof text);             // kernel_outputs/caseN/powercapP/output_kernelK.txt
 *     cut_powercap_end(s, &e);                                   // restores the original limit
 *
 * Restoring: the original power-management limit is put back by cut_powercap_end, by cut_powercap_set when a set
 * fails, by a handler of every catchable signal that ends a process (interrupts and crashes; it then re-raises the
 * signal), by an atexit handler when the process exits without ending the session, and — after a SIGKILL or power
 * loss, when nothing in the process can run — by cut_powercap_recover in the next cutune command that touches a
 * GPU, from the GPU's restore file in the per-user state folder (cut_powercap_state_dir), written before the
 * first change. Only the session's GPU (by UUID) is ever touched.
 *
 * All functions that can fail return -1 with a sentence in e (Only main() exits). Power limits are in milliwatts
 * (NVML's unit) except the table, which is in watts as in the seed. */
#ifndef CUTUNE_POWERCAP_H
#define CUTUNE_POWERCAP_H

#include "cutune/common.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUT_POWERCAP_PER_MODEL 5 /* caps per GPU model (seed 001: powercap1..powercap5) */
#define CUT_POWERCAP_MAX_LIST 16 /* most caps one --power-caps list may name */
#define CUT_POWERCAP_RESTORE_FILE "powercap_<uuid>.json" /* in the state folder, one per GPU */

/* ---- the caps table ---- */

typedef struct cut_powercap_model {
    const char *name;                   /* the NVML name ("NVIDIA GeForce RTX 3090"), or a family's prefix */
    int family;                         /* 1: name is a prefix ("NVIDIA A100" covers "NVIDIA A100-SXM4-40GB") */
    int caps_w[CUT_POWERCAP_PER_MODEL]; /* ascending, watts */
    /* 0: caps_w are fixed (seed 001's five models). 1: the caps are derived from the device's own NVML constraints
     * with cut_powercap_spread (H100, H200: their PCIe/NVL boards have lower maxima than the SXM ones); caps_w is
     * then the spread of the SXM range nominal_min_w..nominal_max_w, used when the constraints are unknown. */
    int spread;
    int nominal_min_w, nominal_max_w;
} cut_powercap_model;

/* The table (static storage), *n entries. */
const cut_powercap_model *cut_powercap_models(size_t *n);
/* The model whose name equals nvml_name, or (family models) is a prefix of it followed by ' ' or '-'; NULL when
 * unknown. Exact for the single models so that, say, an RTX 3090 Ti is not given the RTX 3090's caps. */
const cut_powercap_model *cut_powercap_find_model(const char *nvml_name);
/* "NVIDIA GeForce RTX 3090, NVIDIA GeForce RTX 4090, ..." into buf. */
void cut_powercap_known_models(char *buf, size_t n);
/* The spread rule for H100/H200: five caps evenly spaced over [min_w, max_w] (both ends included), each rounded to
 * the nearest multiple of 25 W and then clamped into [min_w, max_w]. 200..700 W -> 200, 325, 450, 575, 700. */
void cut_powercap_spread(double min_w, double max_w, int caps_w[CUT_POWERCAP_PER_MODEL]);
/* The 5 caps (W) for a GPU: the fixed ones, or the spread over [min_mw, max_mw] for spread models (pass 0, 0 when
 * the constraints are unknown). Unknown GPU: -1, and e names the GPU and the known models. */
int cut_powercap_caps_for(const char *nvml_name, unsigned int min_mw, unsigned int max_mw,
                          int caps_w[CUT_POWERCAP_PER_MODEL], cut_err *e);

/* ---- --power-caps ---- */

typedef enum cut_powercap_kind {
    CUT_POWERCAP_CURRENT, /* "current": measure at whatever limit is set; nothing is ever changed */
    CUT_POWERCAP_ALL,     /* "all": the model's 5 caps from the table */
    CUT_POWERCAP_LIST,    /* "300,250.5,200": these, in this order (watts; decimals allowed, to the milliwatt) */
} cut_powercap_kind;

typedef struct cut_powercap_spec {
    cut_powercap_kind kind;
    int n;                                  /* LIST only */
    unsigned int mw[CUT_POWERCAP_MAX_LIST]; /* LIST only, milliwatts, as given */
} cut_powercap_spec;

/* Parses the argument of --power-caps. Errors (each a sentence naming the offending item): empty, non-numeric,
 * <= 0, more than CUT_POWERCAP_MAX_LIST, duplicates. Range is checked later, by cut_powercap_resolve. */
int cut_powercap_parse(const char *arg, cut_powercap_spec *spec, cut_err *e);

/* What NVML says about one GPU (cut_powercap_query). */
typedef struct cut_powercap_device {
    char uuid[96];
    char name[96];
    unsigned int current_mw;     /* power-management limit now */
    unsigned int min_mw, max_mw; /* NVML constraints */
    unsigned int default_mw;     /* boot default; 0 if unknown */
} cut_powercap_device;

/* Loads NVML and reads the facts above for the GPU with this UUID. */
int cut_powercap_query(const char *uuid, cut_powercap_device *dev, cut_err *e);

/* The caps to run, in milliwatts, in order. */
typedef struct cut_powercap_list {
    int n;
    unsigned int mw[CUT_POWERCAP_MAX_LIST];
} cut_powercap_list;

/* spec -> caps for dev: CURRENT gives one entry, dev->current_mw (works for any GPU); ALL gives the model's caps
 * (unknown GPU: error naming it and the known models); LIST gives the list. Every cap must lie in
 * [dev->min_mw, dev->max_mw]; otherwise an error naming the cap and the allowed range, and nothing is changed. */
int cut_powercap_resolve(const cut_powercap_spec *spec, const cut_powercap_device *dev, cut_powercap_list *out,
                         cut_err *e);

/* ---- a cap session (one per process, pinned to one GPU by UUID) ---- */

typedef struct cut_powercap_session cut_powercap_session;

/* The per-user state folder that holds the restore files and locks (of power caps, and of the compute modes
 * --idle-other-gpus changes: cutune/idle.h): $CUTUNE_STATE_DIR, else
 * $XDG_STATE_HOME/cutune, else ~/.local/state/cutune; created mode 0700, refused when another user can write it. */
int cut_powercap_state_dir(char *buf, size_t n, cut_err *e);

/* Starts a session on the GPU with this UUID: records its original power-management limit. allow = the CLI's
 * --allow-power-cap. With allow, before anything changes: takes the GPU's lock DIR/powercap_<uuid>.lock (flock;
 * another process capping the same GPU: refused), refuses when the GPU's restore file DIR/powercap_<uuid>.json
 * belongs to a live process, recovers it when its process is dead (so the original recorded is never a crashed
 * run's cap), writes it ({"uuid", "name", "original_mw", "pid", "pid_start", "started"}), installs the handlers
 * of SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGSEGV/SIGBUS/SIGABRT/SIGFPE/SIGILL (not for signals the process ignores) and
 * the atexit handler. Without allow nothing is written or installed. DIR: cut_powercap_state_dir's (tests use their
 * own). *out is owned by the library until cut_powercap_end, which releases the lock. A second begin before end
 * fails. */
int cut_powercap_begin(const char *uuid, const char *dir, int allow, cut_powercap_session **out, cut_err *e);
/* Sets the power limit to mw. mw == the current limit: nothing is done (needs no allow). Otherwise refused with a
 * sentence when the session was begun without allow, or when mw is outside the NVML constraints. When NVML
 * refuses (not root, ...) the original limit is restored and -1 returned. */
int cut_powercap_set(cut_powercap_session *s, unsigned int mw, cut_err *e);
/* The limit recorded at begin, and the limit as last set (milliwatts). */
unsigned int cut_powercap_original_mw(const cut_powercap_session *s);
unsigned int cut_powercap_current_mw(const cut_powercap_session *s);
/* Restores the original limit (when it differs), removes the restore file, uninstalls the handlers and ends the
 * session. NULL is a no-op. If the restore fails, -1 with a sentence saying how to restore by hand; the restore
 * file is kept so that the next cut_powercap_recover retries. The session is ended either way. */
int cut_powercap_end(cut_powercap_session *s, cut_err *e);

typedef enum cut_powercap_recovery {
    CUT_POWERCAP_RECOVER_NONE = 0,     /* no restore file */
    CUT_POWERCAP_RECOVER_RESTORED = 1, /* a dead process's file: limit restored (if it differed), file removed */
    CUT_POWERCAP_RECOVER_BUSY = 2,     /* the file's process is alive (a session is running): left alone */
} cut_powercap_recovery;

/* Run by every command that touches a GPU: for each restore file DIR/powercap_<uuid>.json whose session is over
 * (its lock is free and its pid gone, or reused by another process: the start time in /proc differs), restores
 * the limit it names on that GPU (no other GPU is touched) and removes the file; a file that cannot be read gives
 * the GPU (named by the file) NVML's default limit. Returns a cut_powercap_recovery (>= 0: RESTORED when any was,
 * else BUSY when any session runs) with sentences for the user in note (may be NULL), or -1 (GPU not found, NVML
 * refused; the file is kept). */
int cut_powercap_recover(const char *dir, char *note, size_t note_n, cut_err *e);

/* ---- energy arithmetic ---- */

#define CUT_ENERGY_MIN_STEPS 10         /* counter steps a measurement must span to be trusted */
#define CUT_ENERGY_DEFAULT_STEP_S 0.100 /* the H200's (and A100's) energy-counter update period, ~100 ms */

/* One reading of nvmlDeviceGetTotalEnergyConsumption (cut_nvml_energy_mj) and when it was taken (cut_now_s). */
typedef struct cut_energy_sample {
    double t_s;
    unsigned long long mj;
} cut_energy_sample;

typedef struct cut_energy_stats {
    long long iters;
    double energy_mj;          /* last - first sample */
    double window_s;           /* last - first sample time */
    double energy_per_iter_mj; /* "Mean energy per iteration: X mJ" */
    double time_per_iter_ms;   /* "Mean time per iteration: X ms" */
    double gflops;             /* "GFLOP/s: X"; 0 when flops_per_iter is 0 */
    double avg_power_w;        /* energy / window */
    double edp_ms_mj;          /* time_per_iter_ms x energy_per_iter_mj, as seed 001's generate_perfenergy.py */
    int counter_steps;         /* times the counter changed between consecutive samples */
} cut_energy_stats;

/* From n >= 2 samples polled around and during a run of iters iterations that took elapsed_s (kernel time, e.g.
 * from CUDA events; <= 0: the samples' window is used). The counter moves in steps, so poll it often (every
 * round) to count them; counter_steps < CUT_ENERGY_MIN_STEPS means the energy is too coarse to trust (the
 * caller decides; see cut_energy_iters_for_steps). Errors: n < 2, iters <= 0, a counter going backwards, time not
 * increasing. */
int cut_energy_compute(const cut_energy_sample *s, size_t n, double elapsed_s, long long iters,
                       double flops_per_iter, cut_energy_stats *out, cut_err *e);
/* The counter's update period estimated from polled samples: the time between the first and the last observed
 * change over the changes in between; 0 when fewer than 2 changes were seen. */
double cut_energy_step_period_s(const cut_energy_sample *s, size_t n);
/* Iterations needed for a measurement to span >= min_steps counter steps, from a calibration run of calib_iters
 * iterations taking calib_s: enough for (min_steps + 1) periods (one spare for where the window starts relative to
 * the counter's updates). step_period_s <= 0: CUT_ENERGY_DEFAULT_STEP_S. Returns >= 1, or -1 for bad input. */
long long cut_energy_iters_for_steps(double calib_s, long long calib_iters, double step_period_s, int min_steps);
/* Coefficient of variation of x[0..n) (e.g. energy per iteration over lrounds): sample standard deviation
 * (n - 1) over |mean|. 0 when n < 2; NAN when the mean is 0 and the values are not all 0. */
double cut_energy_cv(const double *x, size_t n);
/* Seed 001's output lines (its generate_perfenergy.py parses the first three) into buf:
 *   GFLOP/s: 1234.56 / Mean energy per iteration: 15.6700 mJ / Mean time per iteration: 0.123000 ms /
 *   Average power: 300.00 W / EDP: 1.92876600 ms*mJ / Energy counter steps: 12 */
void cut_energy_format(const cut_energy_stats *st, char *buf, size_t n);

#ifdef __cplusplus
}
#endif

#endif
