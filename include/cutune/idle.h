/* cutune — idling the other GPUs while one is measured (the energy component; src/energy/idle.c).
 *
 * Seed 001 "idles the other GPUs" while it measures, so that other work on the same board (power, heat, PCIe,
 * a shared power supply) does not move the numbers. cutune does it only when asked (`--idle-other-gpus` of
 * `cutune tune` and `cutune energy`; it needs root and changes other users' GPUs for the run's duration):
 *
 *     cut_powercap_state_dir(dir, sizeof dir, &e);              // per user: restore files and locks
 *     cut_idle_recover(dir, note, sizeof note, &e);             // every GPU command: undo a crashed run's idling
 *     cut_idle_begin(measured_uuid, dir, &s, &e);               // every other GPU -> compute mode PROHIBITED
 *     ... measure ...
 *     cut_idle_end(s, &e);                                      // every original compute mode back
 *
 * Every GPU NVML lists other than the measured one (by UUID) is set to NVML_COMPUTEMODE_PROHIBITED (no new CUDA
 * context can be created on it; work already running there goes on). Each one's original compute mode is
 * recorded first in its own restore file DIR/computemode_<uuid>.json under a per-GPU lock, and put back exactly as
 * a power cap is (cutune/powercap.h): by cut_idle_end, by the handler of every catchable signal that ends the
 * process, by an atexit handler, and after a SIGKILL by cut_idle_recover in the next cutune command that touches a
 * GPU. A GPU already PROHIBITED is recorded and left as it is.
 *
 * All functions that can fail return -1 with a sentence in e (only main() exits). */
#ifndef CUTUNE_IDLE_H
#define CUTUNE_IDLE_H

#include "cutune/common.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUT_IDLE_RESTORE_FILE "computemode_<uuid>.json" /* in the state folder, one per idled GPU */

typedef struct cut_idle_session cut_idle_session;

/* Loads NVML and sets every GPU other than measured_uuid to compute mode PROHIBITED, recording each original mode
 * first (DIR: cut_powercap_state_dir's). Refused before anything changes when NVML lacks the compute-mode calls,
 * does not list measured_uuid, or another process idles one of the GPUs. When a set fails (NVML_ERROR_NO_PERMISSION
 * without root, ...), every GPU already changed is put back and -1 says which GPU and why. *out is owned by the
 * library until cut_idle_end. A second begin before end fails. A machine with one GPU gives a session with none. */
int cut_idle_begin(const char *measured_uuid, const char *dir, cut_idle_session **out, cut_err *e);
/* How many GPUs the session idles. */
int cut_idle_count(const cut_idle_session *s);
/* GPU i of the session (0 <= i < count): its UUID, product name and original compute mode name ("DEFAULT",
 * "EXCLUSIVE_PROCESS", ...); NULL outside the range. */
const char *cut_idle_uuid(const cut_idle_session *s, int i);
const char *cut_idle_name(const cut_idle_session *s, int i);
const char *cut_idle_original(const cut_idle_session *s, int i);
/* Puts every original compute mode back, removes the restore files, releases the locks and ends the session.
 * NULL is a no-op. A GPU whose mode cannot be restored: -1 with a sentence saying how to restore it by hand (its
 * restore file is kept for the next cut_idle_recover); the others are restored all the same. */
int cut_idle_end(cut_idle_session *s, cut_err *e);

/* Run by every command that touches a GPU: the compute mode recorded in each restore file DIR/computemode_<uuid>.json
 * whose session is over is put back on that GPU (a file that cannot be read gives the GPU mode DEFAULT) and the file
 * removed. Returns a cut_powercap_recovery (cutune/powercap.h: NONE, RESTORED, BUSY) with sentences in note (may be
 * NULL), or -1 (GPU not found, NVML refused; the file is kept). */
int cut_idle_recover(const char *dir, char *note, size_t note_n, cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
