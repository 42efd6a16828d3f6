/* cutune — scale-out over MPI (issue 19): `mpirun -np K cutune tune|optimize ...`.
 *
 * Rank 0 keeps the strategy, the compile stream and the journal (the records); every other rank owns one local
 * runner (the GPU runner on GPU <local rank> % <GPUs on its host>, or the emulation worker runner) and serves it.
 * Rank 0 sees each serving rank as one runner (cut_runner_mpi_new): the measurement worker's own frames
 * (measure/worker_proto.h: PREPARE_WORK, RUN, RUN_RESULT ...) travel as MPI point-to-point messages, and the
 * serving rank applies them to its local runner, which isolates faults and hangs in a worker process as it does
 * in a single-process run. The tuning loop hands candidates to its runners through a dynamic queue, so a slow GPU
 * or a slow candidate does not hold up the others.
 *
 * Built with MPI when CMake finds it: a plugin, cutune-mpi.so, loaded only when a launcher starts cutune (cutune is
 * never linked against MPI). Without it these functions fail with a sentence that says so, and cutune runs as one
 * process as before. A plain run never initialises MPI: cut_mpi_launched reads the launcher's environment first. */
#ifndef CUTUNE_DIST_H
#define CUTUNE_DIST_H

#include "cutune/common.h"
#include "cutune/devlimits.h"
#include "cutune/measure.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when this cutune was built with MPI (its MPI plugin; cut_mpi_init loads it). */
int cut_mpi_built(void);

/* Whether this process is one of several ranks an MPI launcher started, from its environment only (MPI not
 * touched): OMPI_COMM_WORLD_SIZE (Open MPI), PMI_SIZE (MPICH's Hydra, Slurm's PMI2), or PMIX_RANK with
 * SLURM_STEP_NUM_TASKS (srun --mpi=pmix). 1 with *size ranks (0: a PMIx launch whose size MPI tells) and *rank
 * (-1 unknown); 0 for a plain run or a launch of one rank. */
int cut_mpi_launched(int *size, int *rank);

/* Initialises MPI (threads: at least MPI_THREAD_SERIALIZED; the runners' threads take turns) with errors returned
 * instead of aborting (MPI_ERRORS_RETURN on MPI_COMM_WORLD). MPI is not linked into cutune: its plugin
 * (cutune-mpi.so, built when CMake finds MPI) is loaded now, from $CUTUNE_MPI_PLUGIN, beside the running executable,
 * in <libdir>/cutune/ or where the build put it; a cutune built with MPI so starts on a machine without it. -1 with
 * e (built without MPI, the plugin or its MPI cannot be loaded here, MPI_Init fails). */
int cut_mpi_init(int *rank, int *size, cut_err *e);
/* The job's size and this rank after cut_mpi_init; 1 and 0 before it (or without MPI). */
int cut_mpi_size(void);
int cut_mpi_rank(void);
/* This rank's index among the job's ranks on its host (0 without MPI). */
int cut_mpi_local_rank(void);
/* Ends MPI: MPI_Finalize, or MPI_Abort with code when a serving rank was lost (cut_mpi_lost), which a finalize
 * would wait for. Nothing before cut_mpi_init. */
void cut_mpi_end(int code);
/* 1 once a serving rank stopped answering or an MPI call failed (the job cannot end cleanly). */
int cut_mpi_lost(void);

/* What rank 0 asks of a serving rank's local runner (SETUP). */
typedef struct cut_mpi_setup {
    char backend[16];     /* "cuda", "emu", "auto" or "compile" (compile only, nothing runs) */
    int compile;          /* 1: the rank compiles the candidates it measures, from their CUDA source, with the compile
                             layer (NVRTC for its GPU, its host's compile cache); 0: rank 0 sends cubins. The emulator
                             and the compile backend always compile on the rank */
    char nvrtc_opts[256]; /* extra NVRTC options, as rank 0's compile stream would pass them ("" none) */
} cut_mpi_setup;

/* What a serving rank measures on, as it says when its local runner is made. */
typedef struct cut_mpi_hello {
    cut_measure_env env;  /* its local runner's env() */
    int runner_refs;      /* its local runner computes a GEMM work's references (the GPU runner) */
    int compiles;         /* its local runner compiles calls' CUDA source itself: calls travel as source */
    int device;           /* the local GPU index, -1 for the emulator */
    cut_devlimits limits; /* its GPU's (the sm_90 defaults under emulation) */
    char host[64];
} cut_mpi_hello;

/* Rank 0: a runner whose runs are measured on serving rank `rank` (>= 1) by a local runner as s asks (backend
 * "cuda", "emu", "auto": cuda where the rank finds a GPU, or "compile"). The work is kept here and sent once per
 * prepare; a call travels as its CUDA source when the rank compiles (s->compile, the emulator, the compile backend:
 * the result comes back with the compile's numbers, res.comp, as the tuning loop's own compile would give them) or
 * else as its cubin (compiled on rank 0 for the serving GPU's architecture). rank 0 waits for a call's reply as long
 * as its runner may take, plus CUT_COMPILE_LIMIT_S when the rank compiles. A candidate that faults or hangs is its status, as on a local runner;
 * a serving rank that answers with an MPI error, or not within the longest time its runner may take, is a setup
 * error that names the rank (and every later call fails at once). hello (optional) gets what the rank said. NULL
 * with a sentence when the rank cannot measure (no GPU, no worker). Caller frees with cut_runner_free, which
 * releases the rank's local runner (the rank then waits for the next one). */
cut_runner *cut_runner_mpi_new(int rank, const cut_mpi_setup *s, const cut_timing *t, cut_mpi_hello *hello,
                               cut_err *e);
/* 1 when r is a runner of cut_runner_mpi_new. */
int cut_runner_is_mpi(const cut_runner *r);

/* Rank 0: tells every serving rank to quit (after the command; before cut_mpi_end). */
void cut_mpi_quit_servers(void);

/* Ranks >= 1: serve rank 0 until it says QUIT. make(ctx, s, hello, e) makes the local runner each time rank 0
 * makes a runner for this rank (filling hello->device and ->limits; the rest is filled here; a runner that compiles
 * source itself, cut_runner_compile_new or the emulator's, gets calls as source). 0 after QUIT; -1 with e when MPI
 * fails. */
typedef cut_runner *(*cut_mpi_make_runner)(void *ctx, const cut_mpi_setup *s, cut_mpi_hello *hello, cut_err *e);
int cut_mpi_serve(cut_mpi_make_runner make, void *ctx, cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
