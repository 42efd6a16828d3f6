/* cutune — command-line entry: dispatches to one file per subcommand. */
#include "cli/cli.h"
#include "cli/mpi_cli.h"
#include "cutune/common.h"
#include "cutune/idle.h"
#include "cutune/powercap.h"

#include <stdio.h>
#include <string.h>

typedef struct subcommand {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
    int gpu; /* touches a GPU: what a crashed run changed (power limit, other GPUs' compute modes) is restored first */
    int mpi; /* runs as an MPI job when a launcher started several ranks (issue 19) */
} subcommand;

static const subcommand commands[] = {
    {"devices", cut_cmd_devices, "list GPUs: sm_XX, SMs, memory, UUID, driver/CUDA, clocks, power limits, energy", 1},
    {"tune", cut_cmd_tune, "tune Conv2D workloads (--workloads seed001|resnet18|yolov3, --conv, --case, --trials) or a GEMM (--gemm M=.. N=.. K=.. t=..)", 1, 1},
    {"sample", cut_cmd_sample, "tuningrecords/ -> tuningresults/ (top-5 + p10/p25/p50/p75, or top-2 with --test)", 0},
    {"baseline", cut_cmd_baseline, "cuDNN's fastest fp32 algorithm vs the best tuned kernels, same harness", 1},
    {"report", cut_cmd_report, "tuningresults/ -> performance/ (one integer GFLOP/s per line)", 0},
    {"export", cut_cmd_export, "tuningresults/ -> kernels/: kernels, launchers, driver, CMakeLists.txt, metadata CSV", 0},
    {"energy", cut_cmd_energy, "time + energy of each representative under power caps (NVML) -> kernel_outputs/", 1},
    {"optimize", cut_cmd_optimize, "MCGS over transformation moves of a user's CUDA kernel (kernels/*.json specs)", 1, 1},
    {"clean", cut_cmd_clean, "remove what export generated (kernels/, its build/, metadata; never tuning data)", 0},
};

/* Before a command that touches a GPU: a power limit a crashed (SIGKILL'd) capped run left, and the compute modes
 * a crashed --idle-other-gpus run left on the other GPUs, are put back from the per-user state folder. Only when a
 * restore file is there is NVML loaded; a failure is a warning (the energy command, which caps, refuses on its own;
 * --idle-other-gpus recovers the GPUs it idles before it records their modes). */
static void recover_gpu_settings(void)
{
    char dir[4096];
    cut_err e = {{0}};
    if (cut_powercap_state_dir(dir, sizeof dir, &e) != 0)
        return;
    int (*const recover[2])(const char *, char *, size_t, cut_err *) = {cut_powercap_recover, cut_idle_recover};
    for (int i = 0; i < 2; i++) {
        char note[1024] = "";
        int rc = recover[i](dir, note, sizeof note, &e);
        if (rc < 0)
            fprintf(stderr, "cutune: warning: %s\n", e.msg);
        else if (rc == CUT_POWERCAP_RECOVER_RESTORED && note[0])
            fprintf(stderr, "cutune: %s\n", note);
    }
}

static void usage(FILE *f)
{
    fprintf(f, "cutune %s — auto-tunes CUDA kernels\n\nusage: cutune <command> [options]\n\ncommands:\n",
            CUTUNE_VERSION);
    for (size_t i = 0; i < CUT_ARRAY_LEN(commands); i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\n'cutune help <command>' or 'cutune <command> --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CUT_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 && argc >= 3) { /* `cutune help tune`: the command's own help */
        for (size_t i = 0; i < CUT_ARRAY_LEN(commands); i++)
            if (strcmp(argv[2], commands[i].name) == 0) {
                char *help_argv[] = {argv[2], "--help", NULL};
                return commands[i].fn(2, help_argv);
            }
        fprintf(stderr, "cutune help: unknown command '%s' (commands:", argv[2]);
        for (size_t i = 0; i < CUT_ARRAY_LEN(commands); i++)
            fprintf(stderr, " %s", commands[i].name);
        fprintf(stderr, ")\n");
        return CUT_EXIT_USAGE;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return CUT_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("cutune %s\n", CUTUNE_VERSION);
        return CUT_EXIT_OK;
    }
    if (strcmp(cmd, "__worker") == 0)
        return cut_cmd_worker(argc - 1, argv + 1);
    for (size_t i = 0; i < CUT_ARRAY_LEN(commands); i++)
        if (strcmp(cmd, commands[i].name) == 0) {
            if (commands[i].gpu)
                recover_gpu_settings();
            int size, rank; /* read from the launcher's environment: a plain run never initialises MPI */
            if (commands[i].mpi && cut_mpi_launched(&size, &rank))
                return cut_cli_mpi_main(cmd, commands[i].fn, argc - 1, argv + 1, size, rank);
            return commands[i].fn(argc - 1, argv + 1);
        }
    fprintf(stderr, "cutune: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return CUT_EXIT_USAGE;
}
