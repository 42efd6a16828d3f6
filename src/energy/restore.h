/* cutune — putting back a GPU setting that a run changed (internal to src/energy/): the machinery behind power-cap
 * sessions (capsession.c) and --idle-other-gpus (idle.c).
 *
 * A guard covers one setting (a kind: the power limit, the compute mode) of one GPU, named by its UUID, that this
 * process changes. cut_restore_guard_begin, before anything changes: takes the GPU's lock DIR/<prefix>_<uuid>.lock
 * (flock; another process holding it: refused), refuses when the GPU's restore file DIR/<prefix>_<uuid>.json
 * belongs to a live process, recovers it when its process is dead (so the original recorded is never what a crashed
 * run left), reads the original value, writes the restore file ({"uuid", "name", <key>, "pid", "pid_start",
 * "started"}) and arms the guard. While any guard is armed, a handler of SIGINT/SIGTERM/SIGHUP/SIGQUIT and the
 * crashes SIGSEGV/SIGBUS/SIGABRT/SIGFPE/SIGILL (not of signals the process ignores) puts every armed guard's
 * original back, removes its restore file and re-raises the signal; an atexit handler ends the guards a process
 * exits with. After a SIGKILL or a power loss, when nothing in the process can run, cut_restore_recover (run by every
 * cutune command that touches a GPU) puts back what a dead process's restore file records.
 *
 * Only the process that armed a guard acts on it: a forked child (a measurement worker) that exits or is signalled
 * leaves the setting alone. The signal handler calls the kind's set function (NVML through the pointer loaded
 * before), unlink(), sigaction() and raise(), which are async-signal-safe; NVML is not documented as such, so the
 * guarded signals are blocked around every set made through a guard, and the handler never re-enters NVML.
 *
 * The restore files and locks live in the per-user state folder, cut_powercap_state_dir (tests use their own). */
#ifndef CUTUNE_ENERGY_RESTORE_H
#define CUTUNE_ENERGY_RESTORE_H

#include "cutune/common.h"
#include "gpu/nvml.h"

#include <stddef.h>
#include <sys/types.h>

#define CUT_RESTORE_MAX_GUARDS 64 /* armed at once in one process */

/* One kind of setting: how it is read, set, shown and named in messages. Static storage. */
typedef struct cut_restore_kind {
    const char *prefix;       /* file names: DIR/<prefix>_<uuid>.json and .lock ("powercap") */
    const char *label;        /* "power-cap" restore file */
    const char *what;         /* the "power limit" of GPU X */
    const char *key;          /* the restore file's field for the original: "original_mw" */
    const char *fallback_what; /* what an unreadable file restores: its "default limit" */
    const char *check;        /* how to look by hand: "nvidia-smi -q -d POWER" */
    const char *root_hint;    /* "setting power limits needs root" */
    const char *busy;         /* GPU X is being "power-capped" by another cutune process */
    nvmlReturn_t (*get)(nvmlDevice_t dev, unsigned int *v);
    nvmlReturn_t (*set)(nvmlDevice_t dev, unsigned int v);       /* also from signal handlers: the NVML call only */
    nvmlReturn_t (*fallback)(nvmlDevice_t dev, unsigned int *v); /* the value of fallback_what */
    int (*valid)(double v);                                      /* a plausible recorded value */
    void (*format)(unsigned int v, char *buf, size_t n);         /* "250 W" */
    void (*by_hand)(const char *uuid, unsigned int v, char *buf, size_t n); /* "sudo nvidia-smi -i U -pl 250" */
} cut_restore_kind;

/* One guarded setting of one GPU. Caller-owned storage that must stay where it is from begin to end (the signal
 * handler finds it through a pointer). */
typedef struct cut_restore_guard {
    const cut_restore_kind *kind;
    int active;            /* begun and not ended */
    char uuid[96], name[96];
    nvmlDevice_t dev;
    unsigned int original; /* the value recorded at begin, put back at the end */
    pid_t owner;           /* the process that began it: only it restores */
    int lock_fd;           /* the GPU's lock, held from begin to end: -1 none */
    int slot;              /* its place among the armed guards: -1 none */
    char path[4096];       /* the restore file */
    char note[512];        /* what begin recovered from a dead run's restore file ("": nothing) */
} cut_restore_guard;

/* Begins guarding kind k of GPU uuid (see the top of this header). NVML must be loaded. Errors (g is then not
 * active and nothing is held): NVML cannot find the GPU or read the setting, the lock is held, the restore file's
 * process is alive, a dead run's file cannot be recovered, the file cannot be written, CUT_RESTORE_MAX_GUARDS are
 * armed, the handlers cannot be installed. */
int cut_restore_guard_begin(cut_restore_guard *g, const cut_restore_kind *k, const char *dir, const char *uuid,
                            cut_err *e);
/* Sets the guarded setting to v, with the signals that restore blocked. NVML's code. */
nvmlReturn_t cut_restore_guard_set(cut_restore_guard *g, unsigned int v);
/* Puts the original back (when NVML reports another value now) and removes the restore file. When NVML refuses:
 * -1 with a sentence saying how to restore by hand; the file is kept for the next start's recovery. */
int cut_restore_guard_restore(cut_restore_guard *g, cut_err *e);
/* Ends the guard: in the process that began it, restores (cut_restore_guard_restore) and releases the lock; in any
 * process, disarms it and, when no guard is left armed, uninstalls the signal handlers. Not active: a no-op. The
 * guard is ended even when the restore fails (-1 with e). */
int cut_restore_guard_end(cut_restore_guard *g, cut_err *e);

/* An NVML failure as a sentence: "what: NVML_ERROR_... (...)", with k's root hint for NVML_ERROR_NO_PERMISSION.
 * Returns -1. */
int cut_restore_nvml_fail(const cut_restore_kind *k, nvmlReturn_t rc, const char *what, cut_err *e);

/* For every restore file of kind k in dir whose session is over (its lock is free, and its pid gone or reused by
 * another process: the start time in /proc differs), puts the value it records back on that GPU (no other GPU is
 * touched) and removes the file; a file that cannot be read gives the GPU its name names k's fallback. Returns a
 * cut_powercap_recovery (>= 0: RESTORED when any was, else BUSY when any session runs) with sentences for the user
 * in note (may be NULL), or -1 (GPU not found, NVML refused; the file is kept). */
int cut_restore_recover(const cut_restore_kind *k, const char *dir, char *note, size_t note_n, cut_err *e);

#endif
