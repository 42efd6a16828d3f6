/* cutune — small argument helpers for the subcommands. */
#ifndef CUTUNE_CLI_ARGS_H
#define CUTUNE_CLI_ARGS_H

#include "cutune/common.h"
#include "cutune/gemm.h"
#include "cutune/workload.h"

/* Takes argv[*i + 1] as the value of option argv[*i]; advances *i. */
int cut_arg_str(int argc, char **argv, int *i, const char **out, cut_err *e);
/* Same, parsed as a whole decimal integer within [lo, hi]. */
int cut_arg_int(int argc, char **argv, int *i, int lo, int hi, int *out, cut_err *e);

/* The cases a command works on: the one shape of --conv (list 'custom') when conv_str is set, else the named
 * list. Errors name the option. Caller frees with cut_conv_list_free. */
int cut_cli_workloads(const char *conv_str, const char *list_name, cut_conv_list *list, cut_err *e);

/* --dtype and --layout of tune and baseline mean a GEMM's (nn|nt) or a conv's (nchw|nhwc), which only the other
 * options tell: the commands keep the strings (NULL: not given) and apply them once the op is known. Each is an
 * error naming its option; the conv form sets every case of the list (and --epilogue, a conv's only). */
int cut_cli_gemm_types(const char *dtype, const char *layout, cut_gemm *g, cut_err *e);
int cut_cli_conv_types(const char *dtype, const char *layout, const char *epilogue, cut_conv_list *list, cut_err *e);

/* cutune's cache folder, where NVRTC cubins and (under sub "emu") the emulator's host-compiled kernels are kept:
 * $COMPILE_CACHE_DIR when set (seed 002's name), else the per-user cut_default_cache_dir ($XDG_CACHE_HOME/cutune,
 * else ~/.cache/cutune), never the working folder; with sub (NULL: none) appended. Created and checked to be a
 * private folder of ours (it holds code that is loaded). 0, or -1 with e naming the folder. */
int cut_cli_cache_dir(const char *sub, char *buf, size_t n, cut_err *e);

/* The UUID of the GPU whose NVML energy counter measures kernels of backend ("cuda": CUDA device gpu's UUID;
 * "emu": nvml_uuid when set, else NVML's first device, since the emulator runs on the CPU). Shared by cutune
 * energy and tune --objective. */
int cut_cli_energy_uuid(const char *backend, int gpu, const char *nvml_uuid, char *uuid, size_t n, cut_err *e);

/* GEMM options of cutune tune. cut_gemm_cli_init clears g (M, N, K unset = 0; nn, fp32). cut_gemm_parse_cli looks
 * at argv[*i]: "--gemm" takes the seed-004 words that follow it (each word that does not start with '-', or that
 * contains '=' and does not start with "--"; see cut_gemm_parse_args), and "--m N", "--n N", "--k N",
 * "--layout nn|nt", "--dtype fp32|tf32|fp16|bf16" take their value. It returns 1 when it took the option (*i then
 * is the last word used), 0 when argv[*i] is no GEMM option (nothing changed), -1 on an error (a sentence that
 * names the option or word; also M, N or K given twice, while a later --layout or --dtype replaces an earlier one). *trials gets t of the --gemm words
 * (left as is when they give none). cut_gemm_cli_finish checks, once every option is read, that M, N and K are set
 * and cut_gemm_validate accepts g. */
void cut_gemm_cli_init(cut_gemm *g);
int cut_gemm_parse_cli(int argc, char **argv, int *i, cut_gemm *g, int *trials, cut_err *e);
int cut_gemm_cli_finish(const cut_gemm *g, cut_err *e);

/* --sizes N=V,...: sets each size N the spec has to V (cut_kspec_set_size; other names are left for other specs). */
struct cut_kspec;
int cut_cli_apply_sizes(const char *sizes, struct cut_kspec *k, cut_err *e);
/* -1 with a sentence when --sizes names a size that none of the n specs has (a typo would otherwise run the
 * default size without a word). */
int cut_cli_sizes_known(const char *sizes, const struct cut_kspec *specs, int n, cut_err *e);

#endif
