/* cutune — learned cost model (Ansor's method): gradient-boosted trees (XGBoost C API) trained on the measured
 * trials of a case, predicting how fast an unmeasured schedule will be, so the search measures the promising
 * ones first.
 *
 * Each schedule becomes a fixed-length feature vector (src/strategy/features.c): a one-hot of the template, its knobs
 * and what follows from them (threads, work per thread and per block, shared memory, estimated occupancy, waves,
 * arithmetic intensity of a block tile, loads per FMA, unrolled body size, memory sectors per warp, bank
 * conflicts, ...). The model learns to order schedules by log(GFLOP/s) (XGBoost rank:pairwise; src/strategy/costmodel.c
 * says why not regression): only the order of its scores is meaningful. Failed trials are learned as "slower than
 * anything measured". Not thread-safe: one model per search. */
#ifndef CUTUNE_COSTMODEL_H
#define CUTUNE_COSTMODEL_H

#include "cutune/common.h"
#include "cutune/codegen.h"
#include "cutune/devlimits.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Length of every feature vector, whatever the template (unused slots are 0). */
#define CUT_FEAT_LEN 80

typedef struct cut_costmodel cut_costmodel;

/* Creates an empty, untrained model. Caller frees with cut_costmodel_free. Returns NULL with e set on failure. */
cut_costmodel *cut_costmodel_new(cut_err *e);
/* Frees the model and its booster. NULL is a no-op. */
void cut_costmodel_free(cut_costmodel *m);

/* Overrides a training parameter: an XGBoost booster parameter ("objective" = "reg:squarederror", "max_depth", "eta",
 * "nthread", ...) or "rounds" (boosting rounds, default 100). XGBoost checks its own parameters at the next
 * cut_costmodel_train. Returns -1 with e set for a bad "rounds" value or too many/too long parameters. */
int cut_costmodel_set_param(cut_costmodel *m, const char *key, const char *value, cut_err *e);

/* Adds one training point: CUT_FEAT_LEN features and the measured throughput. gflops <= 0 (or NaN) marks a failed
 * trial, learned as a value below the slowest success. The features are copied. */
void cut_costmodel_add(cut_costmodel *m, const float *features, double gflops);
/* The same for a point of another workload (a prior, as in Ansor's transfer learning): group != 0 names that
 * workload. With a ranking objective pairs are formed only within a group, so workloads of different speed do not
 * mix; the features carry the workload's shape, so the trees can tell them apart. */
void cut_costmodel_add_group(cut_costmodel *m, const float *features, double gflops, int group);
/* Number of points added so far, and of those with a valid measurement. */
int cut_costmodel_count(const cut_costmodel *m);
int cut_costmodel_count_valid(const cut_costmodel *m);

/* (Re)trains a booster from scratch on all points added (XGBoost rank:pairwise on log GFLOP/s, hist trees, 100
 * rounds of depth 6, eta 0.3, 1 thread: about 0.2 s for 2000 points). Needs at least 2 valid points; with
 * fewer it returns 0 and the model stays as it was. XGBoost errors -> -1 with XGBGetLastError's text in e (the
 * previous booster, if any, is kept). */
int cut_costmodel_train(cut_costmodel *m, cut_err *e);
/* 1 once a training has succeeded. */
int cut_costmodel_trained(const cut_costmodel *m);

/* Scores n feature vectors (row-major n x CUT_FEAT_LEN); higher = faster. Returns -1 if the model is untrained or
 * XGBoost fails (cut_costmodel_error says why); scores are then untouched. */
int cut_costmodel_predict(cut_costmodel *m, const float *feats, int n, float *scores);
/* The last error of predict/rank (empty if none). Owned by the model. */
const char *cut_costmodel_error(const cut_costmodel *m);

/* Orders n feature vectors (row-major n x CUT_FEAT_LEN) best-first by the model: order[0..n) is a permutation of
 * 0..n-1; rows with bad[i] set (bad may be NULL) come last. Returns 0 when ranked by the model; 1 when the model is
 * untrained (order is then the identity, so the caller's own order stands); -1 on an error (order is the identity
 * too, and cut_costmodel_error says why). Ties keep the rows' order. */
int cut_costmodel_rank_features(cut_costmodel *m, const float *x, const char *bad, int n, int *order);

/* Spearman rank correlation of a and b (n values each, ties get their average rank). 0 when n < 2 or either
 * side is constant. */
double cut_costmodel_spearman(const float *a, const float *b, int n);

#ifdef __cplusplus
}
#endif

#endif
