/* cutune — --idle-other-gpus for the commands that measure on a GPU (tune, energy): the CLI's side of
 * cutune/idle.h (the measured GPU, the log lines, the exit code). */
#ifndef CUTUNE_CLI_IDLE_H
#define CUTUNE_CLI_IDLE_H

#include "cutune/common.h"
#include "cutune/idle.h"

#include <stddef.h>

#define CUT_CLI_IDLE_HELP                                                                                            \
    "  --idle-other-gpus   set every other GPU's compute mode to PROHIBITED for the run (needs root; it changes\n"    \
    "                      other users' GPUs for the run's duration); each original mode is restored at the end,\n"  \
    "                      on errors, signals and crashes, and after a SIGKILL by the next cutune command\n"

/* The other GPUs idled by one command, for the log lines. */
typedef struct cut_cli_idle {
    const char *cmd;   /* "cutune tune": the log lines' prefix */
    cut_idle_session *s;
} cut_cli_idle;

/* Idles every GPU but the measured one (cut_cli_energy_uuid of backend, gpu, nvml_uuid: with emu, --nvml-uuid or
 * NVML's first device) and says so on stderr, one line naming each GPU and its original mode. -1 with e (nothing
 * left changed) when that cannot be done. */
int cut_cli_idle_begin(cut_cli_idle *idle, const char *backend, int gpu, const char *nvml_uuid, cut_err *e);
/* Puts the original modes back (nothing when no session was begun) and says so on stderr. Returns code, or
 * CUT_EXIT_FAIL with the reason on stderr when a mode could not be restored. */
int cut_cli_idle_end(cut_cli_idle *idle, int code);

#endif
