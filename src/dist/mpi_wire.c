/* cutune — frames as MPI messages (mpi_proto.h), and MPI's start and end, through the MPI plugin (mpi_shim.h).
 *
 * Rank 0 talks to every serving rank from a thread of its own (one per runner, the tuning loop's), so every MPI call
 * here is made under one lock and never blocks inside it: requests are started, then tested, with short sleeps
 * between tests outside the lock. That needs only MPI_THREAD_SERIALIZED and leaves no thread waiting on another's
 * receive. The plugin, the job's rank and size and the lock are process-wide, as MPI's own state is. */
#define _GNU_SOURCE /* dladdr */
#include "dist/mpi_proto.h"
#include "dist/mpi_shim.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

/* One tag for headers and one for chunks: MPI keeps the order of messages between two ranks for each tag. */
enum { TAG_HEAD = 1931, TAG_DATA = 1932 };

#define PLUGIN_NAME "cutune-mpi.so"

static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;
static const cut_mpi_shim *shim;
static int job_rank = 0, job_size = 1, job_local = 0;
static atomic_int job_lost;

int cut_mpi_built(void)
{
#ifdef CUTUNE_MPI_PLUGIN_BUILD /* CMake sets it when it builds the plugin */
    return 1;
#else
    return 0;
#endif
}

/* The plugin's path: $CUTUNE_MPI_PLUGIN, else beside the running executable, beside libcutune.so in cutune/, the
 * build tree's, the install location. Loaded with RTLD_GLOBAL: Open MPI's own components resolve MPI's symbols
 * through it. NULL with e (the loader's reasons). */
static const cut_mpi_shim *load_plugin(cut_err *e)
{
#ifndef CUTUNE_MPI_PLUGIN_BUILD
#define CUTUNE_MPI_PLUGIN_BUILD ""
#define CUTUNE_MPI_PLUGIN_INSTALLED ""
#endif
    char exe_dir[PATH_MAX] = "", lib_dir[PATH_MAX] = "", real[PATH_MAX];
    const char *exe = (const char *)getauxval(AT_EXECFN);
    if (exe && realpath(exe, real) && strrchr(real, '/'))
        snprintf(exe_dir, sizeof exe_dir, "%.*s", (int)(strrchr(real, '/') - real), real);
    Dl_info info;
    if (dladdr((void *)load_plugin, &info) && info.dli_fname && realpath(info.dli_fname, real) && strrchr(real, '/'))
        snprintf(lib_dir, sizeof lib_dir, "%.*s", (int)(strrchr(real, '/') - real), real);
    char beside_exe[PATH_MAX + 32], beside_lib[PATH_MAX + 32];
    snprintf(beside_exe, sizeof beside_exe, "%s/" PLUGIN_NAME, exe_dir);
    snprintf(beside_lib, sizeof beside_lib, "%s/cutune/" PLUGIN_NAME, lib_dir);
    const char *env = getenv("CUTUNE_MPI_PLUGIN");
    const char *found[] = {exe_dir[0] ? beside_exe : NULL, lib_dir[0] ? beside_lib : NULL, CUTUNE_MPI_PLUGIN_BUILD,
                           CUTUNE_MPI_PLUGIN_INSTALLED};
    const char *const *cands = found;
    size_t ncands = CUT_ARRAY_LEN(found);
    if (env && *env) { /* no fallback: the one named */
        cands = &env;
        ncands = 1;
    }
    char why[CUT_ERR_LEN / 2] = "";
    size_t used = 0;
    for (size_t i = 0; i < ncands; i++) {
        if (!cands[i] || !*cands[i] || (access(cands[i], R_OK) != 0 && !(env && *env)))
            continue;
        void *h = dlopen(cands[i], RTLD_NOW | RTLD_GLOBAL);
        const cut_mpi_shim *(*get)(void) = h ? (const cut_mpi_shim *(*)(void))dlsym(h, CUT_MPI_SHIM_SYMBOL) : NULL;
        const cut_mpi_shim *s = get ? get() : NULL;
        if (s && s->abi == CUT_MPI_SHIM_ABI)
            return s; /* kept loaded: MPI lives in it until the process ends */
        const int k = snprintf(why + used, used < sizeof why ? sizeof why - used : 0, "%s%s: %s", used ? "; " : "",
                               cands[i], !h ? dlerror() : !s ? "not cutune's MPI plugin" : "another version");
        used += k > 0 ? (size_t)k : 0;
        if (h)
            dlclose(h);
    }
    cut_err_set(e, "MPI cannot be used here: %s", used ? why : "the MPI plugin " PLUGIN_NAME " was not found (set "
                "CUTUNE_MPI_PLUGIN to its path)");
    return NULL;
}

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
    char s[256];
    shim->error_string(rc, s, (int)sizeof s);
    cut_mpi_mark_lost();
    return cut_err_set(e, "MPI: %s rank %d failed: %s", what, peer, s);
}

/* Waits until r completes; *count (if non-NULL) gets the bytes received. 0, or an MPI error code. */
static int wait_req(cut_mpi_req *r, int *count)
{
    long ns = 20000;
    for (;;) {
        int done = 0, n = 0;
        pthread_mutex_lock(&mpi_lock);
        const int rc = shim->test(r, &done, &n);
        pthread_mutex_unlock(&mpi_lock);
        if (rc != 0 || done) {
            if (count)
                *count = n;
            return rc;
        }
        backoff(&ns);
    }
}

/* An isend of n bytes, then its wait. */
static int send_bytes(int dest, int tag, const void *p, int n)
{
    cut_mpi_req r;
    pthread_mutex_lock(&mpi_lock);
    const int rc = shim->isend(p, n, dest, tag, &r);
    pthread_mutex_unlock(&mpi_lock);
    return rc == 0 ? wait_req(&r, NULL) : rc;
}

int cut_mpi_send(int dest, uint32_t type, const void *payload, size_t len, size_t chunk, cut_err *e)
{
    if (!shim)
        return cut_err_set(e, "MPI is not started (cut_mpi_init)");
    if (!chunk || chunk > CUT_MPI_CHUNK)
        chunk = CUT_MPI_CHUNK;
    uint8_t hdr[CUT_MPI_HEADER_SIZE];
    cut_mpi_header(hdr, type, len, chunk);
    int rc = send_bytes(dest, TAG_HEAD, hdr, (int)sizeof hdr);
    const size_t nc = cut_mpi_nchunks(len, chunk);
    for (size_t i = 0; rc == 0 && i < nc; i++) {
        uint64_t off;
        int n;
        cut_mpi_chunk_at(len, chunk, i, &off, &n);
        rc = send_bytes(dest, TAG_DATA, (const uint8_t *)payload + off, n);
    }
    if (rc != 0) {
        char what[64];
        snprintf(what, sizeof what, "sending %s to", cut_mpi_type_name(type));
        return mpi_fail(rc, what, dest, e);
    }
    return 0;
}

/* Waits for a header from src until deadline (cut_now_s(); < 0: none). 1 found, 0 timeout, or minus an MPI error
 * code (never 0 or 1). */
static int probe_header(int src, double deadline)
{
    long ns = 20000;
    for (;;) {
        int found = 0;
        pthread_mutex_lock(&mpi_lock);
        const int rc = shim->iprobe(src, TAG_HEAD, &found);
        pthread_mutex_unlock(&mpi_lock);
        if (rc != 0)
            return -rc;
        if (found)
            return 1;
        if (deadline >= 0 && cut_now_s() >= deadline)
            return 0;
        backoff(&ns);
    }
}

/* Receives n bytes of tag from src into p, checking that exactly n came. 0, -1 (a message of another size: e), or
 * an MPI error code (e unset). */
static int recv_bytes(int src, int tag, void *p, int n, cut_err *e)
{
    cut_mpi_req r;
    pthread_mutex_lock(&mpi_lock);
    int rc = shim->irecv(p, n, src, tag, &r);
    pthread_mutex_unlock(&mpi_lock);
    int got = -1;
    if (rc == 0)
        rc = wait_req(&r, &got);
    if (rc != 0)
        return rc;
    return got == n ? 0 : cut_err_set(e, "a message of %d bytes from rank %d where %d were due", got, src, n);
}

int cut_mpi_recv(int src, double timeout_s, size_t max_len, cut_wp_frame *f, cut_err *e)
{
    memset(f, 0, sizeof *f);
    if (!shim)
        return cut_err_set(e, "MPI is not started (cut_mpi_init)");
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

int cut_mpi_init(int *rank, int *size, cut_err *e)
{
    *rank = 0;
    *size = 1;
    if (!cut_mpi_built())
        return cut_err_set(e, "this cutune was built without MPI (install an MPI, e.g. Debian's libopenmpi-dev, and "
                              "build again: CMake finds it)");
    const cut_mpi_shim *s = shim ? shim : load_plugin(e);
    if (!s)
        return -1;
    char library[128] = "", msg[256];
    int serialized = 0;
    const int rc = s->init(&job_rank, &job_size, &job_local, &serialized, library, (int)sizeof library);
    if (rc != 0) {
        s->error_string(rc, msg, (int)sizeof msg);
        return cut_err_set(e, "MPI_Init_thread failed: %s", msg);
    }
    shim = s;
    *rank = job_rank;
    *size = job_size;
    if (!serialized)
        return cut_err_set(e, "%s offers no MPI_THREAD_SERIALIZED; cutune needs it (rank 0 talks to each serving rank "
                              "from a thread of its own)", library[0] ? library : "this MPI");
    return 0;
}

int cut_mpi_size(void) { return job_size; }
int cut_mpi_rank(void) { return job_rank; }
int cut_mpi_local_rank(void) { return job_local; }

void cut_mpi_end(int code)
{
    if (!shim)
        return;
    if (atomic_load(&job_lost))
        shim->abort(code ? code : 1); /* a finalize would wait for the rank that is gone */
    shim->finalize();
}

void cut_mpi_mark_lost(void) { atomic_store(&job_lost, 1); }
int cut_mpi_lost(void) { return atomic_load(&job_lost); }

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
