/* cutune — the MPI calls cutune makes, as a table the MPI plugin fills (internal header).
 *
 * MPI is not linked into cutune: the plugin cutune-mpi.so (mpi_shim.c, built when CMake finds MPI, linked against
 * it) is loaded with dlopen when an MPI launcher starts cutune (mpi_wire.c), as the CUDA driver and NVML are. So a
 * cutune built where MPI is installed still starts where it is not (a GPU machine without Open MPI), and only an
 * mpirun launch there says why it cannot run as a job. Nothing here includes mpi.h: every call returns 0 for
 * MPI_SUCCESS (0 in every MPI) or MPI's error code. */
#ifndef CUTUNE_DIST_MPI_SHIM_H
#define CUTUNE_DIST_MPI_SHIM_H

#define CUT_MPI_SHIM_ABI 1
/* The symbol the plugin exports: const cut_mpi_shim *cut_mpi_shim_get(void). */
#define CUT_MPI_SHIM_SYMBOL "cut_mpi_shim_get"

/* An MPI_Request, opaque here (an int in MPICH, a pointer in Open MPI). */
typedef struct cut_mpi_req {
    _Alignas(16) unsigned char opaque[32];
} cut_mpi_req;

typedef struct cut_mpi_shim {
    int abi; /* CUT_MPI_SHIM_ABI */
    /* MPI_Init_thread asking for MPI_THREAD_MULTIPLE, MPI_ERRORS_RETURN on MPI_COMM_WORLD; this rank, the job's
     * size, the rank among the ranks on this host; *serialized: the thread level given is MPI_THREAD_SERIALIZED or
     * more; library: MPI_Get_library_version's first line. */
    int (*init)(int *rank, int *size, int *local_rank, int *serialized, char *library, int n);
    /* Byte messages on MPI_COMM_WORLD. test: *done once the request completed, then *count the bytes received. */
    int (*isend)(const void *p, int n, int dest, int tag, cut_mpi_req *r);
    int (*irecv)(void *p, int n, int src, int tag, cut_mpi_req *r);
    int (*test)(cut_mpi_req *r, int *done, int *count);
    int (*iprobe)(int src, int tag, int *found);
    void (*error_string)(int rc, char *buf, int n);
    void (*finalize)(void);
    void (*abort)(int code);
} cut_mpi_shim;

#endif
