/* cutune — the CLI under an MPI launcher: rank 0 runs the command, the other ranks serve a local runner each. */
#include "cli/mpi_cli.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cutune/emu.h"
#include "cutune/gpu.h"
#include "cutune/util.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cut_cli_compile_threads(void)
{
    const char *v = getenv("CUTUNE_COMPILE_THREADS");
    const int n = v && *v ? atoi(v) : 0;
    return n > 0 && n <= 4096 ? n : 0;
}

/* Caller frees with cut_cli_runner_free (inner is freed with it, also when this fails). */
cut_runner *cut_cli_compile_runner(cut_runner *inner, const cut_devlimits *lim, const char *cache_dir,
                                   const char *nvrtc_opts, cut_err *e)
{
    cut_compile_opts co;
    cut_compile_opts_default(&co);
    co.sm_major = lim->sm_major;
    co.sm_minor = lim->sm_minor;
    co.cache_dir = cache_dir;
    co.extra_opts = nvrtc_opts && *nvrtc_opts ? nvrtc_opts : NULL;
    co.nthreads = cut_cli_compile_threads();
    return cut_runner_compile_new(inner, &co, CUT_COMPILE_LIMIT_S, e);
}

/* A serving rank's compile runner over inner (NULL: compile only), for this rank's GPU (h->limits), its compiles in
 * this host's compile cache ($COMPILE_CACHE_DIR, else the per-user one). */
static cut_runner *rank_compile_runner(cut_runner *inner, const cut_mpi_setup *s, const cut_mpi_hello *h, cut_err *e)
{
    char cache[4200];
    if (cut_cli_cache_dir(NULL, cache, sizeof cache, e) != 0) {
        cut_runner_free(inner);
        return NULL;
    }
    return cut_cli_compile_runner(inner, &h->limits, cache, s->nvrtc_opts, e);
}

/* A serving rank's local runner for s: the GPU runner on GPU <local rank> % <GPUs on this host> ("auto" falls back
 * to the emulator without a GPU), under the compile runner when the rank compiles (s->compile); the compile runner
 * alone (backend "compile"); or the emulation worker runner (each variant in a worker process, as a GPU's), its
 * host-compiled kernels in this host's cache. Caller frees with cut_runner_free. */
static cut_runner *make_local(void *ctx, const cut_mpi_setup *s, cut_mpi_hello *h, cut_err *e)
{
    (void)ctx;
    const char *backend = s->backend;
    if (!strcmp(backend, "compile"))
        return rank_compile_runner(NULL, s, h, e);
    char self[PATH_MAX];
    const char *exe = cut_cli_worker_exe(self, sizeof self);
    cut_err ge = {{0}};
    const int count = strcmp(backend, "emu") ? cut_gpu_init(&ge) : -1;
    if (count >= 1) {
        const int dev = cut_mpi_local_rank() % count;
        cut_gpu_info info;
        if (cut_gpu_query(dev, &info, e) != 0)
            return NULL;
        cut_gpu_limits(&info, &h->limits);
        h->device = dev;
        cut_runner *gpu = cut_runner_gpu_new(dev, exe, NULL, e);
        return gpu && s->compile ? rank_compile_runner(gpu, s, h, e) : gpu;
    }
    if (!strcmp(backend, "cuda")) {
        cut_err_set(e, "no usable GPU: %s", count < 0 ? ge.msg : "the driver reports none");
        return NULL;
    }
    char so_dir[4200];
    if (cut_cli_cache_dir("emu", so_dir, sizeof so_dir, e) != 0)
        return NULL;
    return cut_runner_emu_worker_new(exe, so_dir, NULL, e);
}

/* Rank 0, when mpirun ends the job (a rank died: mpirun sends SIGTERM to the others) or is interrupted: the records
 * are whole up to the trial in flight (one write and an fsync each), which is what a resume needs. */
static void on_stop(int sig)
{
    static const char msg[] = "cutune: the MPI job is being stopped (a rank ended, or mpirun was interrupted: mpirun "
                              "names the rank); every trial recorded so far is kept, and the same command resumes "
                              "from the records\n";
    (void)sig;
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(CUT_EXIT_FAIL);
}

int cut_cli_mpi_main(const char *cmd, int (*fn)(int argc, char **argv), int argc, char **argv, int size,
                     int launcher_rank)
{
    cut_err e = {{0}};
    if (!cut_mpi_built()) {
        if (launcher_rank <= 0)
            fprintf(stderr, "cutune %s: started by an MPI launcher as %d ranks, but this cutune was built without "
                            "MPI (install libopenmpi-dev and build again). Run it without mpirun to tune in one "
                            "process\n", cmd, size);
        return CUT_EXIT_USAGE;
    }
    int rank = 0, n = 1, code;
    if (cut_mpi_init(&rank, &n, &e) != 0) {
        fprintf(stderr, "cutune %s: %s\n", cmd, e.msg);
        cut_mpi_end(CUT_EXIT_FAIL);
        return CUT_EXIT_FAIL;
    }
    if (rank > 0) {
        code = cut_mpi_serve(make_local, NULL, &e) == 0 ? CUT_EXIT_OK : CUT_EXIT_FAIL;
        if (code != CUT_EXIT_OK)
            fprintf(stderr, "cutune %s: %s\n", cmd, e.msg);
        cut_mpi_end(code);
        return code;
    }
    if (n > 1) {
        signal(SIGTERM, on_stop);
        signal(SIGINT, on_stop);
        signal(SIGHUP, on_stop);
    }
    code = fn(argc, argv);
    cut_mpi_quit_servers();
    cut_mpi_end(code);
    return code;
}

int cut_cli_mpi_active(void)
{
    return cut_mpi_size() > 1 && cut_mpi_rank() == 0;
}

void cut_cli_runners_free(cut_runner **r, int n)
{
    for (int i = 0; r && i < n; i++)
        cut_runner_free(r[i]);
    free(r);
}

/* Every rank measures where rank 1 does: one backend, one GPU model (their times share a log). */
static int same_device(const cut_mpi_hello *a, const cut_mpi_hello *b, int rank, cut_err *e)
{
    if (strcmp(a->env.backend, b->env.backend) != 0 || strcmp(a->env.gpu_name, b->env.gpu_name) != 0)
        return cut_err_set(e, "rank 1 measures on %s (%s) and rank %d on %s (%s): one run measures on one kind of "
                              "device (start the job on like hosts, or pass --backend)",
                           a->env.gpu_name, a->env.backend, rank, b->env.gpu_name, b->env.backend);
    return 0;
}

/* Two ranks on one GPU would time each other's kernels: refused, unless CUTUNE_MPI_SHARE_GPU=1 asks for it (to
 * measure what overlapping one rank's compiles with another's measurements gives; the times are then disturbed, and
 * rank 0 says so). */
static int one_rank_per_gpu(const cut_mpi_hello *h, int n, cut_err *e)
{
    const char *share = getenv("CUTUNE_MPI_SHARE_GPU");
    if (share && !strcmp(share, "1")) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < i && h[i].env.gpu_uuid[0]; j++)
                if (!strcmp(h[i].env.gpu_uuid, h[j].env.gpu_uuid)) {
                    fprintf(stderr, "cutune: CUTUNE_MPI_SHARE_GPU=1: ranks %d and %d share GPU %s; their kernels' "
                                    "times may include each other's work\n", j + 1, i + 1, h[i].env.gpu_uuid);
                    return 0;
                }
        return 0;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i && h[i].env.gpu_uuid[0]; j++)
            if (!strcmp(h[i].env.gpu_uuid, h[j].env.gpu_uuid))
                return cut_err_set(e, "ranks %d and %d measure on the same GPU (%s, GPU %d of host %s): they would "
                                      "time each other's kernels. Start at most one rank per GPU of a host, plus "
                                      "rank 0 (CUTUNE_MPI_SHARE_GPU=1 allows it, for overlap studies)", j + 1, i + 1, h[i].env.gpu_uuid, h[i].device, h[i].host);
    return 0;
}

/* What k ranks like h measure on, for the line that says who serves. */
static void say_device(const cut_mpi_hello *h, int k, char *buf, size_t n)
{
    if (!strcmp(h->env.backend, "emu"))
        snprintf(buf, n, "the host emulator");
    else if (!strcmp(h->env.backend, "compile"))
        snprintf(buf, n, "NVRTC for sm_%d%d (nothing runs)", h->limits.sm_major, h->limits.sm_minor);
    else
        snprintf(buf, n, "%d GPU%s (%s, sm_%d%d)", k, k == 1 ? "" : "s", h->env.gpu_name, h->limits.sm_major,
                 h->limits.sm_minor);
}

/* Hosts among the hellos (by name). */
static int count_hosts(const cut_mpi_hello *h, int n)
{
    int hosts = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = !strcmp(h[i].host, h[j].host);
        hosts += !seen;
    }
    return hosts;
}

int cut_cli_mpi_runners(const char *cmd, const cut_mpi_setup *s, const cut_timing *tm, cut_runner ***out, int *n,
                        cut_mpi_hello *h0, cut_err *e)
{
    const int k = cut_mpi_size() - 1;
    cut_runner **r = cut_xcalloc((size_t)k, sizeof *r);
    cut_mpi_hello *h = cut_xcalloc((size_t)k, sizeof *h);
    int rc = 0;
    for (int i = 0; i < k && rc == 0; i++)
        if (!(r[i] = cut_runner_mpi_new(i + 1, s, tm, &h[i], e)) || same_device(&h[0], &h[i], i + 1, e) != 0)
            rc = -1;
    if (rc == 0)
        rc = one_rank_per_gpu(h, k, e);
    if (rc != 0) {
        cut_cli_runners_free(r, k);
        free(h);
        return -1;
    }
    char dev[256];
    say_device(&h[0], k, dev, sizeof dev);
    const int hosts = count_hosts(h, k);
    const int compile_only = !strcmp(h[0].env.backend, "compile");
    const int compiles = h[0].compiles && strcmp(h[0].env.backend, "emu") != 0; /* the emulator's own compile aside */
    fprintf(stderr, "cutune %s: MPI job of %d ranks: rank 0 searches and records, %d rank%s %s%s %s %s, on %d host%s\n",
            cmd, k + 1, k, k == 1 ? "" : "s", compile_only ? "compile" : compiles ? "compile and measure" : "measure",
            k == 1 ? "s" : "", compile_only ? "with" : "on", dev, hosts, hosts == 1 ? "" : "s");
    if (h0)
        *h0 = h[0];
    free(h);
    *out = r;
    *n = k;
    return 0;
}
