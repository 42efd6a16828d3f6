/* cutune — schedule space: a schedule is a template id and a small array of integer knobs.
 *
 * Each template (direct convolution first; implicit GEMM, Winograd later) describes its knobs, how to sample,
 * mutate and check them against the device limits, and how to generate CUDA C from them (codegen.h). */
#ifndef CUTUNE_SPACE_H
#define CUTUNE_SPACE_H

#include "cutune/codegen.h"
#include "cutune/costmodel.h"
#include "cutune/common.h"
#include "cutune/devlimits.h"
#include "cutune/search.h"
#include "cutune/strategy.h"
#include "cutune/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A template: knob names, sampling, mutation, validity. All functions are pure given the rng. */
typedef struct cut_template {
    const char *name; /* "direct" */
    int nknobs;
    const char *const *knob_names;
    /* NULL, or per knob the value a schedule written before the knob existed means (a record's JSON without it);
     * an entry < 0 marks a knob every schedule must carry. */
    const int *knob_defaults;
    /* 1 if this template applies to the workload at all (e.g. Winograd needs 3x3 stride 1). */
    int (*applies)(const cut_conv *c);
    /* Draws a random schedule; it may be invalid (callers check). */
    void (*sample)(const cut_conv *c, const cut_devlimits *d, cut_rng *r, cut_sched *out);
    /* Changes one or a few knobs of s in place. */
    void (*mutate)(const cut_conv *c, const cut_devlimits *d, cut_rng *r, cut_sched *s);
    /* 0 if valid; -1 with a reason (threads, shared memory, registers estimate, tiling) otherwise. */
    int (*check)(const cut_conv *c, const cut_sched *s, const cut_devlimits *d, cut_err *e);
} cut_template;

int cut_template_count(void);
const cut_template *cut_template_get(int tpl);
/* Returns -1 if no template has that name. */
int cut_template_find(const char *name);

/* Draws a valid schedule of template tpl (tries up to max_tries samples). Returns 0 or -1 if none found. */
int cut_sched_sample_valid(const cut_conv *c, const cut_devlimits *d, int tpl, cut_rng *r, cut_sched *out,
                           int max_tries);
/* Validity check through the template. */
int cut_sched_check(const cut_conv *c, const cut_sched *s, const cut_devlimits *d, cut_err *e);
/* Uniform crossover of two schedules of the same template. */
void cut_sched_crossover(const cut_sched *a, const cut_sched *b, cut_rng *r, cut_sched *out);
/* Stable hash of a schedule (template + knobs). */
uint64_t cut_sched_hash(const cut_sched *s);
int cut_sched_equal(const cut_sched *a, const cut_sched *b);

/* Parses a cJSON object (void* to keep cJSON out of the public header). */
int cut_sched_from_cjson(const void *obj, cut_sched *s, cut_err *e);
/* Short human form "direct tco=4 toh=2 ..." */
void cut_sched_describe(const cut_sched *s, char *buf, size_t n);

/* ---- code generation of the conv templates (src/ops/conv2d/codegen.c) ---- */

/* Generates the kernel for a valid schedule. Caller frees with cut_kernel_src_free. */
int cut_codegen_conv(const cut_conv *c, const cut_sched *s, cut_kernel_src *out, cut_err *e);
/* As cut_codegen_conv, with the entry named `entry` instead of "cut_conv2d" (NULL: the default), so that several
 * kernels can be linked into one program (cutune export). entry must be a C identifier shorter than
 * CUT_ENTRY_LEN. Caller frees with cut_kernel_src_free, also after an error. */
int cut_codegen_conv_named(const cut_conv *c, const cut_sched *s, const char *entry, cut_kernel_src *out,
                           cut_err *e);
/* ---- cost-model features (src/ops/conv2d/features.c) ---- */

/* Fills out[0..cap) (cap >= CUT_FEAT_LEN) with the features of schedule s for workload c on device d. regs: the
 * compiler's registers per thread, or -1 (unknown: an estimate is used). Pure and deterministic; every value is
 * finite. Templates direct, igemm and winograd get derived features; any other template its one-hot, the workload
 * and its knobs. Returns the number of features written (CUT_FEAT_LEN), or -1 for a template id outside the registry (or
 * past CUT_FEAT_NTPL), a knob the geometry divides by at 0 or below, or a too-small cap. */
int cut_features_conv(const cut_conv *c, const cut_sched *s, const cut_devlimits *d, int regs, float *out, int cap);

/* Name of conv feature i ("onehot_direct", "log2_threads", ..., "knob3": knob 3 of the schedule's template), "" for
 * unused slots. Static storage. */
const char *cut_features_name(int i);

/* ---- the cost model on conv schedules (src/ops/conv2d/features.c) ---- */

/* Convenience: features of schedule s (regs from the compiler, -1 if unknown) plus cut_costmodel_add.
 * Returns -1 with e set if the features cannot be computed (unknown template). */
int cut_costmodel_add_sched(cut_costmodel *m, const cut_conv *c, const cut_devlimits *d, const cut_sched *s,
                            int regs, double gflops, cut_err *e);

/* Orders n candidate schedules of workload c best-first by the model: order[0..n) is a permutation of 0..n-1.
 * Registers are unknown before compiling, so the features use the estimate. Returns 0 when ranked by the model;
 * 1 when the model is untrained (order is then the identity, so the caller's own order stands); -1 on an error
 * (order is the identity too, and cut_costmodel_error says why). Ties keep the candidates' order. */
int cut_costmodel_rank(cut_costmodel *m, const cut_conv *c, const cut_devlimits *d, const cut_sched *cands, int n,
                       int *order);


/* ---- the conv space as strategies see it (src/ops/conv2d/space_op.c) ---- */

/* The schedule space of conv c under the device limits d (cutune/strategy.h). Caller frees with cut_space_free (or
 * hands it to a strategy, which takes ownership). */
cut_space *cut_conv_space_new(const cut_conv *c, const cut_devlimits *d);
/* A search over cut_conv_space_new(c, d). Caller frees with cut_search_free. */
cut_search *cut_search_new(const cut_conv *c, const cut_devlimits *d, const cut_search_opts *o);
/* Gives a conv search's cost model a measured trial of another conv workload c (a prior, e.g. the other cases of a
 * list): group (!= 0) names that workload. It is not marked seen and does not enter the population. Returns -1 (and
 * ignores it) for a search of another op, without a model, for group 0 or a schedule without features. */
int cut_search_add_prior(cut_search *s, const cut_conv *c, const cut_sched *sc, double time_ms, int regs, int group);


#ifdef __cplusplus
}
#endif

#endif
