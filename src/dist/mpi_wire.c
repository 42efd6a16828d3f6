/* cutune — frames as MPI messages (mpi_proto.h), and MPI's start and end. The only file that calls MPI.
 *
 * Rank 0 talks to every serving rank from a thread of its own (one per runner, the tuning loop's), so every MPI call
 * here is made under one lock and never blocks inside it: requests are started, then tested, with short sleeps
 * between tests outside the lock. That needs only MPI_THREAD_SERIALIZED and leaves no thread waiting on another's
 * receive. The job's rank, size and the lock are process-wide, as MPI's own state is. */
#include "dist/mpi_proto.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef CUTUNE_HAVE_MPI

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

/* One tag for headers and one for chunks: MPI keeps the order of messages between two ranks for each tag. */
enum { TAG_HEAD = 1931, TAG_DATA = 1932 };

static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;
static int job_rank = 0, job_size = 1, job_local = 0, job_started = 0;
static atomic_int job_lost;

int cut_mpi_built(void) { return 1; }

/* A short pause between tests of a request: from 20 us doubling to 2 ms, so that a quick reply is seen at once and
 * a long wait costs little CPU (the ranks share cores with the compilers and the emulator). */
static void backoff(long *ns)
{
    struct timespec ts = {0, *ns};
    nanosleep(&ts, NULL);
    *ns = *ns < 2000000 ? *ns * 2 : 2000000;
}

static int mpi_fail(int rc, const char *what, int peer, cut_err *e)
{
    char s[MPI_MAX_ERROR_STRING] = "";
    int n = 0;
    MPI_Error_string(rc, s, &n);
    cut_mpi_mark_lost();
    return cut_err_set(e, "MPI: %s rank %d failed: %s", what, peer, s);
}

/* Waits until req completes (st may be MPI_STATUS_IGNORE). 0, or an MPI error code. */
static int wait_req(MPI_Request *req, MPI_Status *st)
{
    long ns = 20000;
    for (;;) {
        int done = 0;
        pthread_mutex_lock(&mpi_lock);
        const int rc = MPI_Test(req, &done, st);
        pthread_mutex_unlock(&mpi_lock);
        if (rc != MPI_SUCCESS || done)
            return rc;
        backoff(&ns);
    }
}

/* MPI_Isend of n bytes, then its wait. */
static int send_bytes(int dest, int tag, const void *p, int n)
{
    MPI_Request req;
    pthread_mutex_lock(&mpi_lock);
    int rc = MPI_Isend(p, n, MPI_BYTE, dest, tag, MPI_COMM_WORLD, &req);
    pthread_mutex_unlock(&mpi_lock);
    return rc == MPI_SUCCESS ? wait_req(&req, MPI_STATUS_IGNORE) : rc;
}

int cut_mpi_send(int dest, uint32_t type, const void *payload, size_t len, size_t chunk, cut_err *e)
{
    if (!chunk || chunk > CUT_MPI_CHUNK)
        chunk = CUT_MPI_CHUNK;
    uint8_t hdr[CUT_MPI_HEADER_SIZE];
    cut_mpi_header(hdr, type, len, chunk);
    int rc = send_bytes(dest, TAG_HEAD, hdr, (int)sizeof hdr);
    const size_t nc = cut_mpi_nchunks(len, chunk);
    for (size_t i = 0; rc == MPI_SUCCESS && i < nc; i++) {
        uint64_t off;
        int n;
        cut_mpi_chunk_at(len, chunk, i, &off, &n);
        rc = send_bytes(dest, TAG_DATA, (const uint8_t *)payload + off, n);
    }
    if (rc != MPI_SUCCESS) {
        char what[64];
        snprintf(what, sizeof what, "sending %s to", cut_mpi_type_name(type));
        return mpi_fail(rc, what, dest, e);
    }
    return 0;
}

/* Waits for a header from src until deadline (cut_now_s(); < 0: none). 1 found, 0 timeout, or an MPI error code
 * (negated, so that it is never 0 or 1). */
static int probe_header(int src, double deadline)
{
    long ns = 20000;
    for (;;) {
        int found = 0;
        pthread_mutex_lock(&mpi_lock);
        const int rc = MPI_Iprobe(src, TAG_HEAD, MPI_COMM_WORLD, &found, MPI_STATUS_IGNORE);
        pthread_mutex_unlock(&mpi_lock);
        if (rc != MPI_SUCCESS)
            return -rc;
        if (found)
            return 1;
        if (deadline >= 0 && cut_now_s() >= deadline)
            return 0;
        backoff(&ns);
    }
}

/* Receives n bytes of tag from src into p, checking that exactly n came. 0, -1 (a short message: e), or an MPI
 * error code (e unset). */
static int recv_bytes(int src, int tag, void *p, int n, cut_err *e)
{
    MPI_Request req;
    MPI_Status st;
    pthread_mutex_lock(&mpi_lock);
    int rc = MPI_Irecv(p, n, MPI_BYTE, src, tag, MPI_COMM_WORLD, &req);
    pthread_mutex_unlock(&mpi_lock);
    if (rc == MPI_SUCCESS)
        rc = wait_req(&req, &st);
    if (rc != MPI_SUCCESS)
        return rc;
    int got = -1;
    MPI_Get_count(&st, MPI_BYTE, &got);
    return got == n ? 0 : cut_err_set(e, "a message of %d bytes from rank %d where %d were due", got, src, n);
}

int cut_mpi_recv(int src, double timeout_s, size_t max_len, cut_wp_frame *f, cut_err *e)
{
    memset(f, 0, sizeof *f);
    int rc = probe_header(src, timeout_s < 0 ? -1.0 : cut_now_s() + timeout_s);
    if (rc == 0)
        return -2;
    if (rc < 0)
        return mpi_fail(-rc, "waiting for a message from", src, e);
    uint8_t hdr[CUT_MPI_HEADER_SIZE];
    uint64_t len, chunk;
    cut_err be = {{0}};
    if ((rc = recv_bytes(src, TAG_HEAD, hdr, (int)sizeof hdr, &be)) != 0 ||
        cut_mpi_header_parse(hdr, max_len, &f->type, &len, &chunk, &be) != 0) {
        if (rc > 0)
            return mpi_fail(rc, "receiving from", src, e);
        cut_mpi_mark_lost(); /* the conversation is out of step: nothing after this can be trusted */
        return cut_err_set(e, "from rank %d: %s", src, be.msg);
    }
    f->len = (size_t)len;
    f->data = len ? cut_xmalloc((size_t)len) : NULL;
    const size_t nc = cut_mpi_nchunks(len, chunk);
    for (size_t i = 0; i < nc; i++) {
        uint64_t off;
        int n;
        cut_mpi_chunk_at(len, chunk, i, &off, &n);
        if ((rc = recv_bytes(src, TAG_DATA, f->data + off, n, &be)) == 0)
            continue;
        cut_wp_frame_free(f);
        if (rc > 0)
            return mpi_fail(rc, "receiving from", src, e);
        cut_mpi_mark_lost();
        return cut_err_set(e, "from rank %d: %s", src, be.msg);
    }
    return 1;
}

int cut_mpi_init(int *argc, char ***argv, int *rank, int *size, cut_err *e)
{
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        return cut_err_set(e, "MPI_Init_thread failed");
    job_started = 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* a dead peer is an error we report, no abort */
    MPI_Comm_rank(MPI_COMM_WORLD, &job_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &job_size);
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &job_local);
        MPI_Comm_free(&node);
    }
    *rank = job_rank;
    *size = job_size;
    if (provided < MPI_THREAD_SERIALIZED)
        return cut_err_set(e, "the MPI library offers thread level %d; cutune needs MPI_THREAD_SERIALIZED (%d) or "
                              "more (rank 0 talks to each serving rank from a thread of its own)",
                           provided, MPI_THREAD_SERIALIZED);
    return 0;
}

int cut_mpi_size(void) { return job_size; }
int cut_mpi_rank(void) { return job_rank; }
int cut_mpi_local_rank(void) { return job_local; }

void cut_mpi_end(int code)
{
    if (!job_started)
        return;
    if (atomic_load(&job_lost))
        MPI_Abort(MPI_COMM_WORLD, code ? code : 1); /* a finalize would wait for the rank that is gone */
    MPI_Finalize();
}

void cut_mpi_mark_lost(void) { atomic_store(&job_lost, 1); }
int cut_mpi_lost(void) { return atomic_load(&job_lost); }

#else /* built without MPI: cutune runs as one process; these say why they cannot do more */

static const char no_mpi[] = "this cutune was built without MPI (install an MPI, e.g. Debian's libopenmpi-dev, and "
                             "build again: CMake finds it)";

int cut_mpi_built(void) { return 0; }

int cut_mpi_send(int dest, uint32_t type, const void *payload, size_t len, size_t chunk, cut_err *e)
{
    (void)dest, (void)type, (void)payload, (void)len, (void)chunk;
    return cut_err_set(e, "%s", no_mpi);
}

int cut_mpi_recv(int src, double timeout_s, size_t max_len, cut_wp_frame *f, cut_err *e)
{
    (void)src, (void)timeout_s, (void)max_len;
    f->data = NULL;
    f->len = 0;
    return cut_err_set(e, "%s", no_mpi);
}

int cut_mpi_init(int *argc, char ***argv, int *rank, int *size, cut_err *e)
{
    (void)argc, (void)argv;
    *rank = 0;
    *size = 1;
    return cut_err_set(e, "%s", no_mpi);
}

int cut_mpi_size(void) { return 1; }
int cut_mpi_rank(void) { return 0; }
int cut_mpi_local_rank(void) { return 0; }
void cut_mpi_end(int code) { (void)code; }
void cut_mpi_mark_lost(void) {}
int cut_mpi_lost(void) { return 0; }

#endif

/* From the launcher's environment only: a plain run never initialises MPI. */
int cut_mpi_launched(int *size, int *rank)
{
    static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
    static const char *const ranks[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK"};
    *size = 1;
    *rank = -1;
    for (int i = 0; i < 2; i++) {
        const char *s = getenv(sizes[i]), *r = getenv(ranks[i]);
        if (s && *s) {
            *size = atoi(s);
            *rank = r && *r ? atoi(r) : -1;
            return *size > 1;
        }
    }
    const char *pmix = getenv("PMIX_RANK");
    if (pmix && *pmix) {
        const char *n = getenv("SLURM_STEP_NUM_TASKS");
        *rank = atoi(pmix);
        *size = n && *n ? atoi(n) : 0; /* 0: MPI tells */
        return *size != 1;
    }
    return 0;
}
