/* cutune — common types: error buffer, candidate status, small helpers.
 *
 * Two tiers of errors (DESIGN.md): setup errors are returned as -1 with a sentence in a caller-owned
 * cut_err; a candidate's failure is a cut_status value that gets recorded. Only main() exits. */
#ifndef CUTUNE_COMMON_H
#define CUTUNE_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUT_ERR_LEN 1024

typedef struct cut_err {
    char msg[CUT_ERR_LEN];
} cut_err;

/* Formats a message into e (if non-NULL) and returns -1, so `return cut_err_set(e, ...)` reads well. */
int cut_err_set(cut_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prepends context: "ctx: previous message". Returns -1. */
int cut_err_wrap(cut_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Exit codes used by the CLI. */
enum { CUT_EXIT_OK = 0, CUT_EXIT_FAIL = 1, CUT_EXIT_USAGE = 2 };

/* Outcome of one candidate (a trial). Recorded, never fatal. */
typedef enum cut_status {
    CUT_ST_OK = 0,
    CUT_ST_INVALID,       /* schedule rejected by the space's validity check */
    CUT_ST_COMPILE_ERROR, /* NVRTC or host compiler failed */
    CUT_ST_LAUNCH_ERROR,  /* launch refused (resources, bad config) */
    CUT_ST_WRONG_RESULT,  /* output differs from the reference (or NaN, or unwritten) */
    CUT_ST_FAULT,         /* kernel faulted (illegal address, ...) or the worker died */
    CUT_ST_TIMEOUT,       /* kernel hung; the worker was killed */
    /* measurement trust (issue 15, src/measure/verify.h): the kernel is correct once but cannot be trusted */
    CUT_ST_INPUT_MODIFIED,   /* it wrote one of its inputs */
    CUT_ST_STATEFUL,         /* a second launch, finding what the first left in module variables, is wrong */
    CUT_ST_WRONG_LATER,      /* right at first, wrong on a later launch (after timing) */
    CUT_ST_WRONG_OTHER_DATA, /* right on the first input set, wrong on the fresh second one */
    CUT_ST_TOO_FAST,         /* faster than the GPU's peak or bandwidth allows for the op's FLOPs and bytes */
    CUT_ST_TIMING_ESCAPE,    /* the host's clock sees far more time than the timer: work escapes the timed region */
    CUT_ST_COMPILED,      /* compiled and not run (the compile-only runner): no time, never ranked as timed */
    CUT_ST_COUNT
} cut_status;

const char *cut_status_name(cut_status s);

/* Secrets (issue 15): the values of $OPENAI_API_KEY, $CUTUNE_LLM_API_KEY and $LLM_API_KEY (12 characters or more),
 * read once, are replaced by CUT_REDACTED in buf wherever they occur. cut_err_set, cut_err_wrap, the log and every
 * string a record line holds go through it, so a key never reaches a log, a record or an error message. */
#define CUT_REDACTED "[redacted]"
void cut_redact(char *buf);
/* Returns -1 for an unknown name. */
int cut_status_from_name(const char *name);

/* Deterministic PRNG (splitmix64 seeded xoshiro256**). */
typedef struct cut_rng {
    uint64_t s[4];
} cut_rng;
void cut_rng_seed(cut_rng *r, uint64_t seed);
uint64_t cut_rng_next(cut_rng *r);
/* Uniform integer in [0, n). n > 0. */
uint32_t cut_rng_below(cut_rng *r, uint32_t n);
/* Uniform double in [0, 1). */
double cut_rng_double(cut_rng *r);
/* Standard normal (Box-Muller). */
double cut_rng_normal(cut_rng *r);

/* FNV-1a 64-bit over bytes, chainable: pass the previous hash as h (start with CUT_FNV_INIT). */
#define CUT_FNV_INIT 0xcbf29ce484222325ULL
uint64_t cut_fnv1a(uint64_t h, const void *data, size_t n);

/* Wall-clock seconds since an arbitrary origin (CLOCK_MONOTONIC). */
double cut_now_s(void);
/* ISO-8601 UTC timestamp "2026-11-22T19:00:00Z" into buf (>= 21 bytes). */
void cut_utc_timestamp(char *buf, size_t n);

#define CUT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define CUT_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CUT_MAX(a, b) ((a) > (b) ? (a) : (b))
#define CUT_CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

#ifdef __cplusplus
}
#endif

#endif
