/* cutune — Nsight Compute priors (seed 002's region model): the metrics cutune asks ncu for, the parser of its raw
 * CSV page, the six regions a profile points at, and the move weights they give the search.
 *
 * A profile is read from `ncu --csv --page raw --clock-control none --metrics <cut_ncu_metrics_arg>`: a header row of
 * column names, a row of units, then one row per profiled kernel (numbers may carry thousands separators, lines that
 * are not CSV rows, such as ncu's own ==PROF== notes, are skipped). tests/fixtures/ncu/ holds such output recorded on
 * an H100 for five kernels, each limited by one region (make_fixtures.sh, regions.cu).
 *
 * Regions, each scored in [0, 1]:
 *   compute   the FMA or tensor pipe busy (pct of peak)                      -> switch_to_mma_or_wgmma, block sizes
 *   gmem      DRAM throughput (pct of peak)                                  -> vectorize, .cg, async copies, raster
 *   sfu       the XU (transcendental) pipe busy                              -> softmax_math_fusion
 *   atomics   global atomic and reduction requests per instruction           -> avoid_atomics_reduce
 *   smem      shared-memory bank conflicts per wavefront, where L1 is busy   -> pad_tail_and_mask
 *   overlap   long-scoreboard stalls while neither SM nor DRAM is busy, and  -> async pipeline, block sizes
 *             not explained by atomics (which stall the same way)
 * A move's weight is 0.5 + 1.5 * max over regions of (score * the move's affinity to the region), so 0.5 (no region
 * calls for it) to 2 (it addresses a saturated region); the search multiplies its predicted gains by the weights
 * before normalising its priors (cut_prior_src, cutune/kstate.h). */
#ifndef CUTUNE_NCU_H
#define CUTUNE_NCU_H

#include "cutune/common.h"
#include "cutune/mcgs.h"
#include "cutune/util.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cut_ncu_metric {
    CUT_NCU_TIME_NS,        /* gpu__time_duration.sum */
    CUT_NCU_SM_PCT,         /* sm__throughput.avg.pct_of_peak_sustained_elapsed */
    CUT_NCU_DRAM_PCT,       /* dram__throughput.avg.pct_of_peak_sustained_elapsed */
    CUT_NCU_L1_PCT,         /* l1tex__throughput.avg.pct_of_peak_sustained_active */
    CUT_NCU_FMA_PCT,        /* sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active */
    CUT_NCU_XU_PCT,         /* sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active */
    CUT_NCU_TENSOR_PCT,     /* sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active */
    CUT_NCU_BANK_CONFLICTS, /* l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum */
    CUT_NCU_SMEM_WAVEFRONTS,/* l1tex__data_pipe_lsu_wavefronts_mem_shared.sum */
    CUT_NCU_ATOM_REQ,       /* l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum */
    CUT_NCU_RED_REQ,        /* l1tex__t_requests_pipe_lsu_mem_global_op_red.sum */
    CUT_NCU_WARPS_PCT,      /* sm__warps_active.avg.pct_of_peak_sustained_active (achieved occupancy) */
    CUT_NCU_STALL_LONG_SB,  /* smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio */
    CUT_NCU_STALL_BARRIER,  /* smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio */
    CUT_NCU_INST,           /* smsp__inst_executed.sum */
    CUT_NCU_NMETRICS
} cut_ncu_metric;

/* The metric's ncu name (NULL outside the enum). */
const char *cut_ncu_metric_name(cut_ncu_metric m);
/* All of them, comma-separated: the --metrics argument. Returns the length, or -1 when buf is too small. */
int cut_ncu_metrics_arg(char *buf, size_t n);

typedef struct cut_ncu_profile {
    char kernel[256];                /* the row's "Kernel Name" */
    double v[CUT_NCU_NMETRICS];      /* values in the units ncu reports (ns, %, counts, ratios) */
    unsigned have;                   /* bit m set when metric m had a column and a value */
} cut_ncu_profile;

/* Parses ncu's raw CSV page (len bytes of text, NUL not needed) into *p: the last row whose kernel name starts with
 * kernel (NULL: the last row). A metric without a column, or with an empty value, is left out of p->have; a value
 * that is not a number is an error. -1 with a sentence naming name and the line for: no header row, no units row,
 * no kernel row (or none matching), a row with another number of fields than the header, an unterminated quote. */
int cut_ncu_parse(const char *text, size_t len, const char *name, const char *kernel, cut_ncu_profile *p, cut_err *e);

typedef enum cut_region { CUT_RG_COMPUTE, CUT_RG_GMEM, CUT_RG_SFU, CUT_RG_ATOMICS, CUT_RG_SMEM, CUT_RG_OVERLAP,
                          CUT_RG_COUNT } cut_region;
/* "compute", "gmem", "sfu", "atomics", "smem", "overlap" ("?" outside the enum). */
const char *cut_region_name(cut_region r);
/* The profile's region scores, each in [0, 1] (a region whose metrics are missing scores 0). */
void cut_ncu_regions(const cut_ncu_profile *p, double score[CUT_RG_COUNT]);
/* The region with the highest score (the first on a tie). */
cut_region cut_ncu_dominant(const double score[CUT_RG_COUNT]);
/* Move weights in [0.5, 2] from region scores (see above). */
void cut_ncu_move_weights(const double score[CUT_RG_COUNT], double weight[CUT_MV_COUNT]);
/* One paragraph for a trace or an LLM prompt: time, the regions by score, the raw metrics behind them. */
void cut_ncu_summary(const cut_ncu_profile *p, const double score[CUT_RG_COUNT], cut_buf *b);

#ifdef __cplusplus
}
#endif

#endif
