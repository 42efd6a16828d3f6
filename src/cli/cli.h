/* cutune — subcommands. Each returns the process exit code (CUT_EXIT_*); only main() exits. */
#ifndef CUTUNE_CLI_H
#define CUTUNE_CLI_H

#include <stddef.h>

int cut_cmd_devices(int argc, char **argv);
int cut_cmd_tune(int argc, char **argv);
int cut_cmd_sample(int argc, char **argv);
int cut_cmd_report(int argc, char **argv);
int cut_cmd_worker(int argc, char **argv);
int cut_cmd_baseline(int argc, char **argv);
int cut_cmd_export(int argc, char **argv);
int cut_cmd_clean(int argc, char **argv);
int cut_cmd_energy(int argc, char **argv);
int cut_cmd_optimize(int argc, char **argv);

/* The worker executable the CLI's runners start: NULL when $CUTUNE_WORKER is set (the library's cut_worker_path
 * then takes it), else this program itself (`cutune __worker`, found through /proc/self/exe into buf, n bytes), so
 * the worker is always the same build as the CLI; NULL (cut_worker_path) when that cannot be read. */
const char *cut_cli_worker_exe(char *buf, size_t n);
/* cutune export --optimized OPT_DIR [--kernel NAME] [--outdir DIR] [--arch SM] (cmd_export_opt.c): exports every
 * finished search of OPT_DIR (the --outdir of cutune optimize; name: only that kernel, or NULL) to
 * DIR/kernels/opt/NAME/ for sm_ARCH (NULL outdir: ".", NULL arch: "90"; "sm_90" accepted), printing one line per
 * kernel. Returns the exit code: 0, or 2 with one sentence on stderr. cmd_export.c parses the options. */
int cut_cmd_export_optimized(const char *opt_dir, const char *name, const char *outdir, const char *arch);

#endif
