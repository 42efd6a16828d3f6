/* cutune — kernel specs for the MCGS optimizer (issue 7, seed 002): a user's CUDA kernel, its launch configuration as
 * integer expressions over sizes and tunables, its IO contract and tolerance, read from kernels/NAME.json.
 *
 *   {"name": "softmax_row", "language": "cuda",
 *    "source": "..." | "source_path": "softmax_row.cu" (relative to the spec's folder),
 *    "entry": "softmax_row",
 *    "sizes": {"ROWS": 4096, "COLS": 1024},
 *    "check_sizes": {"ROWS": 1000, "COLS": 77},              optional: a second size set, checked, never timed
 *    "tunables": {"BLOCK": [128, 256, 512]},                 first value: the baseline's
 *    "launch": {"grid": ["ROWS"], "block": ["BLOCK"], "smem": "BLOCK * 4"},   1 to 3 entries; smem optional
 *    "inputs":  [{"name": "x", "dtype": "f32", "shape": ["ROWS", "COLS"], "init": "randn", "seed": 1}],
 *    "outputs": [{"name": "y", "dtype": "f32", "shape": ["ROWS", "COLS"]}],      "accumulate": true optional
 *    "scalars": [{"name": "cols", "dtype": "i32", "value": "COLS"}],   f32/f64/f16/bf16: also any number (0.5)
 *    "args": ["x", "y", "cols"],                              the kernel's parameters in order
 *    "tolerance": {"atol": 1e-5, "rtol": 1e-4},
 *    "reference": {"source_path": "ref.cu", "entry": "k_ref"},   optional: outputs of this kernel (same parameters,
 *                                                              the baseline's launch) are the references
 *    "restrictions": ["BLOCK % VEC == 0", "BLOCK * VEC <= COLS"],   optional: configurations the kernel supports
 *    "flops": "5 * ROWS * COLS", "bytes": "8 * ROWS * COLS"}   optional, over sizes: the op's FLOPs and the bytes it
 *                                                              must move per launch; a variant measured faster than
 *                                                              the GPU's peak or bandwidth allows is too_fast
 *
 * Expressions: integers, names of sizes and tunables, + - * / % (integer, C semantics, checked for overflow and
 * division by zero), comparisons == != < <= > >= and logical && || ! (0 or 1, && and || short-circuit), parentheses,
 * unary minus, min(a, b), max(a, b), cdiv(a, b) = ceil(a / b); C's precedence. A JSON number may stand for a constant
 * expression. Restrictions: up to CUT_KS_MAX_RESTRICTIONS expressions over sizes and tunables; a configuration is
 * allowed when every one is non-zero (one whose arithmetic fails there, a division by zero, forbids it). The
 * baseline must be allowed. Kernel Tuner's `restrictions`, in this syntax.
 * Check sizes: "check_sizes" gives every size of "sizes" another value (an unknown name, a missing one, a value that
 * is not an integer from 1 to 1e12 is refused, naming it). Every candidate checked and timed at "sizes" is then
 * checked once more at these sizes on a work of their own (both input sets, references from the baseline or the
 * reference kernel run at these sizes; the same check protocol with a timing policy of one launch, whose time is
 * discarded), so a kernel that hard-codes the timed sizes, or handles only multiples of its tile, is rejected
 * (WRONG_OTHER_DATA, the message naming check_sizes and its values; another failure there keeps its status). The baseline must resolve and satisfy every restriction at these sizes too. A candidate whose
 * tunables break a restriction at check_sizes (or whose launch does not resolve there) is not checked there and not
 * rejected for it: its result carries a note saying so (the record's "note", result.json's "note"). An input given
 * as "data" holds the same bytes at both size sets, so its shape must not change between them.
 * Init: randn, uniform (in [lo, hi), default [-1, 1)), zeros, ones, full (value),
 * arange; or "data": the tensor's bytes (its dtype, little-endian, row-major) as "encoding" "zlib+base64" (the
 * default) or "base64" — both input sets then hold these bytes. Dtypes: f32, f64, f16, bf16, i32, i64, u8. Every error is one sentence naming the field
 * ("inputs[0].dtype: unknown dtype 'f8' ..."). */
#ifndef CUTUNE_KSPEC_H
#define CUTUNE_KSPEC_H

#include "cutune/common.h"
#include "cutune/work.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUT_KS_NAME 64
#define CUT_KS_EXPR 256
#define CUT_KS_MAX_VARS 32   /* sizes + tunables */
#define CUT_KS_MAX_VALUES 32 /* values of one tunable */
#define CUT_KS_MAX_TENSORS 16
#define CUT_KS_MAX_DIMS 6
#define CUT_KS_MAX_ARGS 32
#define CUT_KS_MAX_RESTRICTIONS 32 /* each at most CUT_KS_EXPR - 1 characters */
#define CUT_KS_MAX_SOURCE (4u << 20) /* bytes of a source_path: a regular file, at most this */
#define CUT_KS_MAX_SPEC (256u << 20) /* bytes of a spec file (its "data" payloads included) */

/* ---- expressions ---- */

typedef struct cut_ks_var {
    char name[CUT_KS_NAME];
    long long value;
} cut_ks_var;

/* Evaluates expr with the given variables. 0, or -1 with a sentence naming the position ("at 'x' (byte 5): unknown
 * name"). */
int cut_ks_eval(const char *expr, const cut_ks_var *vars, int nvars, long long *out, cut_err *e);

/* ---- the spec ---- */

typedef enum cut_ks_init { CUT_KS_RANDN, CUT_KS_UNIFORM, CUT_KS_ZEROS, CUT_KS_ONES, CUT_KS_FULL, CUT_KS_ARANGE,
                           CUT_KS_INIT_COUNT } cut_ks_init;

typedef struct cut_ks_tensor {
    char name[CUT_KS_NAME];
    cut_elem dtype;
    int ndims;
    char shape[CUT_KS_MAX_DIMS][CUT_KS_EXPR];
    cut_ks_init init;        /* inputs; outputs are poisoned before each run */
    double lo, hi, fill;     /* uniform range, full's value */
    unsigned long long seed;
    void *payload;           /* inputs: the "data" payload's bytes (owned), or NULL (init) */
    size_t payload_bytes;
    int accumulate;          /* outputs: "accumulate": true, the kernel adds into it (atomics): cleared to zero
                                before each checked run instead of poisoned */
} cut_ks_tensor;

typedef struct cut_ks_scalar {
    char name[CUT_KS_NAME];
    cut_elem dtype;
    char value[CUT_KS_EXPR]; /* an integer expression over sizes and tunables */
    int is_number;           /* floating-point dtypes: "value" was a non-integer number, kept in number */
    double number;
} cut_ks_scalar;

typedef struct cut_ks_tunable {
    char name[CUT_KS_NAME];
    int nvalues;
    long long values[CUT_KS_MAX_VALUES];
} cut_ks_tunable;

/* The kernel's language: CUDA C++ (NVRTC), or Triton (a Python module with @triton.jit functions, issue 18). A Triton
 * spec has no "launch.block": its threads per block are 32 * num_warps (the tunable "num_warps" when the spec has
 * one, else Triton's default 4); its grid is the launch's "grid"; its tunables are the kernel's tl.constexpr
 * meta-parameters plus num_warps and num_stages, passed to the launch by the Triton worker. */
typedef enum cut_ks_lang { CUT_KS_CUDA, CUT_KS_TRITON } cut_ks_lang;
/* "cuda" or "triton". */
const char *cut_ks_lang_name(cut_ks_lang l);

typedef struct cut_kspec {
    char name[CUT_KS_NAME];
    cut_ks_lang lang;
    char entry[CUT_KS_NAME];
    char *source;              /* owned */
    char source_path[1024];    /* "" when inline */
    char *ref_source;          /* owned; NULL: the baseline's own outputs are the references */
    char ref_entry[CUT_KS_NAME];
    int nsizes;
    cut_ks_var sizes[CUT_KS_MAX_VARS];
    int has_check_sizes;                     /* "check_sizes" given: */
    long long check_sizes[CUT_KS_MAX_VARS];  /* the value of sizes[i] in the second size set */
    int ntunables;
    cut_ks_tunable tunables[CUT_KS_MAX_VARS];
    int ngrid, nblock;
    char grid[3][CUT_KS_EXPR], block[3][CUT_KS_EXPR], smem[CUT_KS_EXPR];
    int ninputs, noutputs, nscalars;
    cut_ks_tensor inputs[CUT_KS_MAX_TENSORS], outputs[CUT_KS_MAX_TENSORS];
    cut_ks_scalar scalars[CUT_KS_MAX_TENSORS];
    int nargs;
    char args[CUT_KS_MAX_ARGS][CUT_KS_NAME];
    double atol, rtol;
    int nrestrictions;
    char restrictions[CUT_KS_MAX_RESTRICTIONS][CUT_KS_EXPR]; /* boolean expressions every variant must satisfy */
    char flops[CUT_KS_EXPR], bytes[CUT_KS_EXPR]; /* the op's FLOPs and least memory traffic per launch, over sizes
                                                    ("" when the spec does not say): the physical floor */
} cut_kspec;

/* The size sets of a spec: "sizes" (checked and timed) and "check_sizes" (checked only; the spec must have them). */
typedef enum cut_ks_sizeset { CUT_KS_SIZES, CUT_KS_CHECK_SIZES } cut_ks_sizeset;

/* A launch and buffer sizes resolved for one choice of tunables. */
typedef struct cut_ks_launch {
    unsigned grid[3], block[3];
    unsigned smem;
    size_t in_elems[CUT_KS_MAX_TENSORS], out_elems[CUT_KS_MAX_TENSORS];
    long long scalars[CUT_KS_MAX_TENSORS]; /* each scalar's value */
} cut_ks_launch;

/* Parses a spec from JSON text; source_path is read relative to base_dir (NULL: the current folder). Checks every
 * field, then resolves the baseline (each tunable's first value): shapes >= 1, grid and block >= 1, at most 1024
 * threads per block, the entry defined in the source as a __global__ function, args naming each tensor and scalar
 * exactly once, every restriction well-formed and true for the baseline. 0, or -1 with one sentence naming the field
 * ("restrictions[1]: expression 'BX == BY *': expected a number, a name or '(' at its end"). Caller frees out with
 * cut_kspec_free (also on failure). */
int cut_kspec_parse(const char *json, size_t len, const char *base_dir, cut_kspec *out, cut_err *e);
/* Reads and parses a spec file ("<path>: <sentence>" on failure). */
int cut_kspec_load(const char *path, cut_kspec *out, cut_err *e);
void cut_kspec_free(cut_kspec *k);

/* Sets size name to value (an override of the spec's, e.g. a smaller problem for emulation) and checks that the
 * baseline still resolves and satisfies the restrictions. 0, or -1 with a sentence (the size is then unchanged). */
int cut_kspec_set_size(cut_kspec *k, const char *name, long long value, cut_err *e);

/* The launch and buffer sizes for tunable values vals[0..ntunables) (NULL: each tunable's first value). */
int cut_kspec_resolve(const cut_kspec *k, const long long *vals, cut_ks_launch *out, cut_err *e);
/* The same at size set set (CUT_KS_CHECK_SIZES: -1 for a spec without check_sizes). */
int cut_kspec_resolve_at(const cut_kspec *k, cut_ks_sizeset set, const long long *vals, cut_ks_launch *out,
                         cut_err *e);
/* The size set as text for messages: "check_sizes (ROWS=1000, COLS=77)", "sizes (N=4096)". */
void cut_kspec_sizes_text(const cut_kspec *k, cut_ks_sizeset set, char *buf, size_t n);
/* The spec's "flops" and "bytes" at its sizes (0 where it gives none). 0, or -1 naming the field. */
int cut_kspec_work_size(const cut_kspec *k, double *flops, double *bytes, cut_err *e);

/* Whether tunable values vals[0..ntunables) (NULL: the baseline's) satisfy every restriction of the spec: 1, or 0
 * with the first one they break written into why (why_n bytes, may be NULL), one line naming it and the values it
 * reads: "restrictions[0] 'BX == BY * TY' is false for BX=32, BY=16, TY=1". Every proposal of the optimizer passes
 * this check (cutune/kstate.h). */
int cut_kspec_allows(const cut_kspec *k, const long long *vals, char *why, size_t why_n);
/* The same at size set set (CUT_KS_CHECK_SIZES: 0 for a spec without check_sizes, why saying so). */
int cut_kspec_allows_at(const cut_kspec *k, cut_ks_sizeset set, const long long *vals, char *why, size_t why_n);

/* The spec as one self-contained JSON text, malloc'd into *out: sources inline (never a source_path), the sizes as they
 * are now (cut_kspec_set_size overrides included), given data as "zlib+base64". cut_kspec_parse of it (any base_dir)
 * gives back the same spec. note (may be NULL) is kept as "snapshot_of", a member the parser ignores. cutune optimize
 * writes it next to each search (kernels/_NAME/spec.json), so the search can be exported after the spec moved. */
int cut_kspec_to_json(const cut_kspec *k, const char *note, char **out, cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
