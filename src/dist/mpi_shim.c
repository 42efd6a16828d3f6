/* cutune — the MPI plugin (cutune-mpi.so): the MPI calls of mpi_shim.h, linked against MPI. Built only when CMake
 * finds MPI, and never into libcutune: mpi_wire.c loads it when an MPI launcher starts cutune. */
#include "dist/mpi_shim.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

_Static_assert(sizeof(MPI_Request) <= sizeof(cut_mpi_req), "an MPI_Request fits cut_mpi_req");

static MPI_Request *req_of(cut_mpi_req *r) { return (MPI_Request *)(void *)r->opaque; }

static int shim_init(int *rank, int *size, int *local_rank, int *serialized, char *library, int n)
{
    int provided = 0;
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* a dead peer is an error we report, no abort */
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    *local_rank = 0;
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, local_rank);
        MPI_Comm_free(&node);
    }
    *serialized = provided >= MPI_THREAD_SERIALIZED;
    char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    MPI_Get_library_version(v, &len);
    snprintf(library, (size_t)n, "%.*s", (int)strcspn(v, ",\n"), v);
    return MPI_SUCCESS;
}

static int shim_isend(const void *p, int n, int dest, int tag, cut_mpi_req *r)
{
    return MPI_Isend(p, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD, req_of(r));
}

static int shim_irecv(void *p, int n, int src, int tag, cut_mpi_req *r)
{
    return MPI_Irecv(p, n, MPI_BYTE, src, tag, MPI_COMM_WORLD, req_of(r));
}

static int shim_test(cut_mpi_req *r, int *done, int *count)
{
    MPI_Status st;
    int rc = MPI_Test(req_of(r), done, &st);
    if (rc == MPI_SUCCESS && *done)
        rc = MPI_Get_count(&st, MPI_BYTE, count);
    return rc;
}

static int shim_iprobe(int src, int tag, int *found)
{
    return MPI_Iprobe(src, tag, MPI_COMM_WORLD, found, MPI_STATUS_IGNORE);
}

static void shim_error_string(int rc, char *buf, int n)
{
    char s[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
        snprintf(s, sizeof s, "MPI error %d", rc);
    snprintf(buf, (size_t)n, "%s", s);
}

static void shim_finalize(void) { MPI_Finalize(); }

static void shim_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

const cut_mpi_shim *cut_mpi_shim_get(void);

const cut_mpi_shim *cut_mpi_shim_get(void)
{
    static const cut_mpi_shim shim = {CUT_MPI_SHIM_ABI, shim_init,         shim_isend,    shim_irecv,
                                      shim_test,        shim_iprobe,       shim_error_string,
                                      shim_finalize,    shim_abort};
    return &shim;
}
