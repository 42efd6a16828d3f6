/* cutune — the CLI under an MPI launcher (mpi_cli.c): `mpirun -np K cutune tune|optimize ...`. */
#ifndef CUTUNE_CLI_MPI_CLI_H
#define CUTUNE_CLI_MPI_CLI_H

#include "cutune/dist.h"
#include "cutune/measure.h"

/* Runs command cmd (fn, with argc/argv as main gives them to it) as one rank of an MPI job the launcher's
 * environment announced (size ranks, this one launcher_rank; cut_mpi_launched): rank 0 runs fn, its runners
 * served by the other ranks (cut_cli_mpi_runners), then tells them to quit; every other rank serves until then.
 * Without MPI built in, one sentence that says so (from rank 0) and CUT_EXIT_USAGE. Returns the exit code. */
int cut_cli_mpi_main(const char *cmd, int (*fn)(int argc, char **argv), int argc, char **argv, int size,
                     int launcher_rank);

/* 1 when this process is rank 0 of an MPI job with serving ranks: the commands take their runners from
 * cut_cli_mpi_runners. */
int cut_cli_mpi_active(void);

/* Rank 0: one runner per serving rank (*out allocated, *n of them; free with cut_cli_runners_free), their local
 * runners as s asks (backend "cuda", "emu", "auto", "compile"; compiles on the ranks or not) under timing tm. Every
 * rank must measure on the same kind of device (one backend, one GPU model). h0 gets rank 1's hello. Prints the one
 * line that says who serves. -1 with e. */
int cut_cli_mpi_runners(const char *cmd, const cut_mpi_setup *s, const cut_timing *tm, cut_runner ***out, int *n,
                        cut_mpi_hello *h0, cut_err *e);
/* $CUTUNE_COMPILE_THREADS (1..4096): how many compiles run at once in this process (the tuning loop's compile stream,
 * the compile runner); 0 (the online CPUs) when unset or out of range. */
int cut_cli_compile_threads(void);
/* The compile runner (cut_runner_compile_new) over inner (NULL: compile only) for the architecture of lim, its
 * compiles in cache_dir, with nvrtc_opts (NULL or "": none), cut_cli_compile_threads() at once, each killed after
 * CUT_COMPILE_LIMIT_S. NULL with e (inner freed). Caller frees with cut_runner_free. */
cut_runner *cut_cli_compile_runner(cut_runner *inner, const cut_devlimits *lim, const char *cache_dir,
                                   const char *nvrtc_opts, cut_err *e);
void cut_cli_runners_free(cut_runner **r, int n);

#endif
