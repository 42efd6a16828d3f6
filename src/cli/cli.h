/* cutune — subcommands. Each returns the process exit code (CUT_EXIT_*); only main() exits. */
#ifndef CUTUNE_CLI_H
#define CUTUNE_CLI_H

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

#endif
