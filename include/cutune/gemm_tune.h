/* cutune — the GEMM tuning loop (issue 6); records in cutune/gemm_record.h, the report in cutune/report.h. */
#ifndef CUTUNE_GEMM_TUNE_H
#define CUTUNE_GEMM_TUNE_H

#include "cutune/gemm.h"
#include "cutune/gemm_record.h"
#include "cutune/measure.h"
#include "cutune/tune.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the tuning loop (src/pipeline/tune_gemm.c) ---- */

/* Tunes one GEMM with the templates in tpl_mask (bit i: registry index i; 0: every template that applies), from
 * cfg: records_dir, trials, batch, seed, use_nvrtc + copts (a kernel with arch_a compiles for sm_XXa), limits,
 * progress, kernel_dump_dir, max_seconds (the conv-only fields are ignored). Resumes from an existing log (a log
 * with >= trials lines is finished: st->skipped). st->best_gflops and best_ms are the fastest valid trial of the
 * whole log. Returns -1 only for setup errors (no template applies, a runner refusing the workload, unwritable log,
 * NVRTC unusable). */
int cut_tune_gemm(const cut_tune_cfg *cfg, int tpl_mask, cut_runner *r, const cut_gemm *g, cut_tune_stats *st,
                  cut_err *e);
/* The same over runners r[0..nr) (several GPUs, or MPI ranks: cut_tune_task_on). */
int cut_tune_gemm_on(const cut_tune_cfg *cfg, int tpl_mask, cut_runner **r, int nr, const cut_gemm *g,
                     cut_tune_stats *st, cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
