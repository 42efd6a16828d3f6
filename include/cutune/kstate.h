/* cutune — a user kernel's states for the MCGS optimizer (issue 7, seed 002): materialised sources, state keys,
 * diffs, candidate generators (the rules; an LLM later) and the spec as runner work.
 *
 * A state is a materialised source: the spec's tunables as #define lines in a marked header, then the user's source
 * (cut_kstate_materialise). The launch configuration follows from the tunables through the spec's expressions, so the
 * source alone is the state; its key hashes the source and the resolved launch. A second key hashes the normalised
 * PTX (comments and blank lines dropped): two sources that compile to the same PTX are one state (a transposition).
 *
 * A candidate generator proposes candidates for a state as unified diffs against its source; the optimizer applies
 * each with GNU patch, never by editing lines itself.
 *
 * Restrictions (the spec's "restrictions", cut_kspec_allows): no variant whose tunables break one is ever built.
 * cut_kstate_allowed is the one check, on a materialised source's tunables. The rule generator runs it on every
 * proposal it makes (and repairs a tunable change that breaks one by changing one more tunable); any generator's
 * proposals pass it through cut_cand_gen_propose, which drops the ones that break a restriction. The optimizer must
 * ask generators through cut_cand_gen_propose, never g->propose directly, and must call cut_kspec_allows on the
 * tunables it reads back from every patched source (cut_kstate_tunables) before it builds it: a violating one is
 * the variant's failure ("invalid"), never compiled. */
#ifndef CUTUNE_KSTATE_H
#define CUTUNE_KSTATE_H

#include "cutune/codegen.h"
#include "cutune/common.h"
#include "cutune/costmodel.h"
#include "cutune/devlimits.h"
#include "cutune/strategy.h"
#include "cutune/kspec.h"
#include "cutune/work.h"
#include "cutune/mcgs.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- states ---- */

#define CUT_KST_BEGIN "// cutune: tunables (edit these values, the launch follows)"
#define CUT_KST_END "// cutune: end of tunables"
/* A Triton state's header: Python assignments "NAME = VALUE" between these lines (the worker passes them to the
 * launch as meta-parameters, num_warps and num_stages as its options). */
#define CUT_KST_PY_BEGIN "# cutune: tunables (edit these values, the launch follows)"
#define CUT_KST_PY_END "# cutune: end of tunables"

/* The header's first and last lines for k's language. */
const char *cut_kstate_begin(const cut_kspec *k);
const char *cut_kstate_end(const cut_kspec *k);
/* One tunable's header line with its newline ("#define NAME V\n", or "NAME = V\n" for Triton) into buf. */
void cut_kstate_line(const cut_kspec *k, const char *name, long long v, char *buf, size_t n);

/* The materialised source for tunable values vals (NULL: the baseline's), malloc'd. */
char *cut_kstate_materialise(const cut_kspec *k, const long long *vals);
/* The same header in front of another source (the spec's reference kernel). */
char *cut_kstate_materialise_src(const cut_kspec *k, const long long *vals, const char *source);
/* Reads the tunable values back from a materialised source: each tunable defined exactly once in the header, with an
 * allowed value. 0, or -1 with a sentence ("tunable BLOCK: 384 is not an allowed value (128, 256)"). */
int cut_kstate_tunables(const cut_kspec *k, const char *src, long long *vals, cut_err *e);
/* The spec's restrictions on a materialised source's tunables (cut_kstate_tunables, then cut_kspec_allows): 1
 * allowed, 0 a restriction is broken (why: which, and the values), -1 the tunables cannot be read (why: the reason;
 * the build then fails the variant with it). why (why_n bytes) may be NULL. */
int cut_kstate_allowed(const cut_kspec *k, const char *src, char *why, size_t why_n);
/* The state key: FNV-1a over the source and the resolved launch. */
uint64_t cut_kstate_key(const char *src, const cut_ks_launch *l);
/* Hash of PTX with comments, blank lines and leading/trailing blanks removed. */
uint64_t cut_ptx_norm_hash(const char *ptx);
/* The transposition key: the normalised PTX and the launch (a tunable that only sizes the launch leaves the PTX as
 * it was, yet is another state). */
uint64_t cut_kstate_ptx_key(const char *ptx, const cut_ks_launch *l);

/* ---- diffs (GNU diff and patch) ---- */

/* A unified diff from a to b with file labels a/kernel.cu and b/kernel.cu (`diff -u`), malloc'd into *out ("" when
 * equal). work_dir holds the temporary files. */
int cut_diff_unified(const char *a, const char *b, const char *work_dir, char **out, cut_err *e);
/* Applies a unified diff to src with `patch` (no fuzz beyond patch's default, no reject files): *out gets the new
 * text. A diff that does not apply: -1 with patch's message. */
int cut_patch_apply(const char *src, const char *diff, const char *work_dir, char **out, cut_err *e);

/* ---- candidate generators ---- */

typedef struct cut_cand_gen {
    const char *name; /* "rules", "llm" */
    void *ctx;
    /* Proposes up to max candidates for the state src of spec k: out[0..n), n returned (0: nothing applies), -1 on
     * an error of the generator itself (e). context: what the search knows of the state, as text for a model (its
     * time and its parent's, the path to it, the moves tried; NULL or "": none); a generator may ignore it (the
     * rules do: their proposals depend on the state alone). work_dir: scratch space. */
    int (*propose)(void *ctx, const cut_kspec *k, const char *src, const char *context, const char *work_dir,
                   cut_proposal *out, int max, cut_err *e);
    void (*destroy)(void *ctx);
    int wants_context; /* 1: propose reads its context (the LLM's prompt); 0: the caller need not build one */
} cut_cand_gen;

/* The one way to ask a generator: g->propose, then every proposal whose diff, applied to src, gives tunables that
 * break a restriction of k is dropped (freed; the rest keep their order). A diff that does not apply or whose
 * tunables cannot be read is kept: the build records why. Returns the count left in out[0..n), or -1 with e (the
 * generator's own error; nothing left to free). */
int cut_cand_gen_propose(const cut_cand_gen *g, const cut_kspec *k, const char *src, const char *context,
                         const char *work_dir, cut_proposal *out, int max, cut_err *e);

/* The rule generator: every rule of the nine moves that applies to the state (rules.c lists what each recognises).
 * Its proposals never break a restriction of the spec: a tunable change that would is proposed together with the
 * nearest change of one other tunable that makes it allowed ("BX 16 -> 32, TY 1 -> 2"), or not at all. */
cut_cand_gen *cut_rules_gen_new(void);
void cut_cand_gen_free(cut_cand_gen *g);

/* A rule's rewrite as text (what the generator diffs): out malloc'd, NULL when the rule does not apply. Exposed for
 * tests. */
char *cut_rule_cache_cg(const char *src);
char *cut_rule_math_fusion(const char *src);
char *cut_rule_avoid_atomics(const char *src, int block_level);
char *cut_rule_pad_smem(const char *src);
char *cut_rule_grouped_raster(const char *src);
char *cut_rule_async_stage(const char *src);
/* The Triton rewrites (src/ops/kernel/rules_triton.c lists what each recognises): a state's Python module in, the
 * rewritten module out (malloc'd), NULL when nothing in its @triton.jit functions matches. Comments, strings and the
 * tunables header are never touched. precision: Triton's name ("tf32", "tf32x3"). */
char *cut_rule_triton_cache_cg(const char *src);
char *cut_rule_triton_evict_first(const char *src);
char *cut_rule_triton_hints(const char *src);
char *cut_rule_triton_dot_precision(const char *src, const char *precision);
char *cut_rule_triton_fast_math(const char *src);
char *cut_rule_triton_avoid_atomics(const char *src);
char *cut_rule_triton_grouped(const char *src);

/* Move priors from profiling (Nsight Compute, a later issue) plug in here: weights per move for a state, multiplied
 * into the generator's predicted gains before priors are normalised (1: neutral). */
typedef struct cut_prior_src {
    const char *name; /* "ncu" */
    void *ctx;
    /* Fills weight[CUT_MV_COUNT] for the state src of spec k. -1 with e on failure (the search then goes on without
     * profile priors for this state and says so in the trace). */
    int (*weights)(void *ctx, const cut_kspec *k, const char *src, double *weight, cut_err *e);
} cut_prior_src;

/* ---- the spec as a runner workload (kdata.c) ---- */

/* Fills w with the spec's buffers for the baseline's sizes: inputs (set 0 from each input's seed, set 1 from the seed
 * mixed with a constant: fresh values of the same distribution), outputs without references. The input contents are
 * malloc'd into w's data pointers: free with cut_kspec_work_free. 0, or -1 with a sentence. */
int cut_kspec_work(const cut_kspec *k, cut_work *w, cut_err *e);
/* The same at size set set: at CUT_KS_CHECK_SIZES the buffers have the check sizes' shapes (inputs drawn from the
 * same seeds) and the work counts no FLOPs or bytes (it is never timed, so it has no physical floor); its errors
 * name check_sizes. */
int cut_kspec_work_at(const cut_kspec *k, cut_ks_sizeset set, cut_work *w, cut_err *e);
void cut_kspec_work_free(cut_work *w);
/* The call for tunable values vals: launch from the spec's expressions, arguments in the spec's order (buffers:
 * inputs then outputs as in cut_kspec_work; scalars converted to their dtype). src and bin are left to the caller. */
int cut_kspec_call(const cut_kspec *k, const long long *vals, cut_call *c, cut_err *e);
/* The same at size set set: the launch and scalars the expressions give there (the source does not change: sizes
 * reach the kernel only through its arguments and launch). */
int cut_kspec_call_at(const cut_kspec *k, cut_ks_sizeset set, const long long *vals, cut_call *c, cut_err *e);

/* ---- the tunables as a schedule space (kspace.c): `cutune tune --kernel` searches them with any strategy ---- */

/* The space of k's tunables (cutune/strategy.h): one template, knob i the index of tunable i's value in its list; a
 * schedule is valid when it resolves, fits the device's threads per block and satisfies every restriction;
 * enumerable (exhaustive search); features from the tunables' values and the resolved launch. k must outlive the
 * space. NULL with e when k has more tunables than a schedule holds (CUT_MAX_KNOBS). */
cut_space *cut_kspec_space_new(const cut_kspec *k, const cut_devlimits *d, cut_err *e);
/* The tunable values of schedule s of that space (vals: k->ntunables). -1 with e for an index off a list. */
int cut_kspec_sched_values(const cut_kspec *k, const cut_sched *s, long long *vals, cut_err *e);
/* The schedule of tunable values vals. -1 with e for a value not in its tunable's list. */
int cut_kspec_sched_from_values(const cut_kspec *k, const long long *vals, cut_sched *s, cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
