/* cutune — the hidden `cutune __worker <dev> <in_fd> <out_fd>` subcommand: the GPU measurement worker process
 * started by the GPU runner (gpu_runner.c), with `emu:<dir>` as the device the emulation worker
 * (src/measure/emu_worker.c), with `compile` one compile in a process of its own (src/measure/compile_child.c, the
 * compile runner's). Not meant to be run by hand. The cutune-worker executable (worker_main.c) runs the
 * same function for programs that use the library. */
#include "cli/cli.h"
#include "cutune/common.h"
#include "cutune/emu.h"
#include "cutune/measure.h"
#include "measure/compile_child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *cut_cli_worker_exe(char *buf, size_t n)
{
    const char *env = getenv(CUT_WORKER_ENV);
    if ((env && *env) || n < 2)
        return NULL;
    ssize_t k = readlink("/proc/self/exe", buf, n - 1);
    if (k <= 0 || (size_t)k >= n - 1)
        return NULL;
    buf[k] = '\0';
    return buf;
}

/* Parses a non-negative int; -1 if s is not one. */
static int parse_nonneg(const char *s)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > INT_MAX)
        return -1;
    return (int)v;
}

int cut_cmd_worker(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: cutune __worker <device>|emu:<dir>|compile <in_fd> <out_fd>\n"
                        "(internal: the measurement worker started by cutune's GPU runner)\n");
        return CUT_EXIT_USAGE;
    }
    const int emu = strncmp(argv[1], "emu:", 4) == 0 && argv[1][4], compile = strcmp(argv[1], "compile") == 0;
    const int dev = emu || compile ? 0 : parse_nonneg(argv[1]);
    const int in_fd = parse_nonneg(argv[2]), out_fd = parse_nonneg(argv[3]);
    if (dev < 0 || in_fd < 0 || out_fd < 0) {
        fprintf(stderr, "cutune __worker: device and file descriptors must be non-negative integers\n");
        return CUT_EXIT_USAGE;
    }
    if (fcntl(in_fd, F_GETFD) < 0 || fcntl(out_fd, F_GETFD) < 0) {
        fprintf(stderr, "cutune __worker: file descriptor %d or %d is not open\n", in_fd, out_fd);
        return CUT_EXIT_USAGE;
    }
    if (compile)
        return cut_compile_child_main(in_fd, out_fd);
    return emu ? cut_emu_worker_main(argv[1] + 4, in_fd, out_fd) : cut_worker_main(dev, in_fd, out_fd);
}
