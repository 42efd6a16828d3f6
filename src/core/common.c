/* cutune — error buffers, status names, PRNG, hashing, clocks. */
#include "cutune/common.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- secrets ---- */

/* The environment variables that may hold a secret (the LLM API key of the optimizer's OpenAI-compatible client). */
static const char *const k_secret_vars[] = {"OPENAI_API_KEY", "CUTUNE_LLM_API_KEY", "LLM_API_KEY"};
#define CUT_MAX_SECRETS 8

static struct {
    pthread_once_t once;
    int n;
    char *s[CUT_MAX_SECRETS];
} g_secrets = {PTHREAD_ONCE_INIT, 0, {0}};

static void secrets_init(void)
{
    for (size_t i = 0; i < CUT_ARRAY_LEN(k_secret_vars) && g_secrets.n < CUT_MAX_SECRETS; i++) {
        const char *v = getenv(k_secret_vars[i]);
        if (v && strlen(v) >= 12) /* shorter is no key (and the mark, 10 characters, must fit in its place) */
            g_secrets.s[g_secrets.n++] = strdup(v);
    }
}

void cut_redact(char *buf)
{
    pthread_once(&g_secrets.once, secrets_init);
    for (int i = 0; i < g_secrets.n; i++) {
        const char *sec = g_secrets.s[i];
        if (!sec)
            continue;
        const size_t k = strlen(sec), r = sizeof CUT_REDACTED - 1;
        for (char *p = strstr(buf, sec); p; p = strstr(p + r, sec)) {
            memcpy(p, CUT_REDACTED, r); /* the key is longer than the mark: shift the rest left */
            memmove(p + r, p + k, strlen(p + k) + 1);
        }
    }
}

int cut_err_set(cut_err *e, const char *fmt, ...)
{
    if (!e)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    cut_redact(e->msg);
    return -1;
}

int cut_err_wrap(cut_err *e, const char *fmt, ...)
{
    if (!e)
        return -1;
    char prev[CUT_ERR_LEN], ctx[CUT_ERR_LEN];
    memcpy(prev, e->msg, sizeof prev);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    snprintf(e->msg, sizeof e->msg, "%.400s: %.600s", ctx, prev);
    cut_redact(e->msg);
    return -1;
}

static const char *const status_names[CUT_ST_COUNT] = {
    [CUT_ST_OK] = "ok",
    [CUT_ST_INVALID] = "invalid",
    [CUT_ST_COMPILE_ERROR] = "compile_error",
    [CUT_ST_LAUNCH_ERROR] = "launch_error",
    [CUT_ST_WRONG_RESULT] = "wrong_result",
    [CUT_ST_FAULT] = "fault",
    [CUT_ST_TIMEOUT] = "timeout",
    [CUT_ST_INPUT_MODIFIED] = "input_modified",
    [CUT_ST_STATEFUL] = "stateful",
    [CUT_ST_WRONG_LATER] = "wrong_later",
    [CUT_ST_WRONG_OTHER_DATA] = "wrong_other_data",
    [CUT_ST_TOO_FAST] = "too_fast",
    [CUT_ST_TIMING_ESCAPE] = "timing_escape",
    [CUT_ST_COMPILED] = "compiled",
};

const char *cut_status_name(cut_status s)
{
    return (s >= 0 && s < CUT_ST_COUNT) ? status_names[s] : "unknown";
}

int cut_status_from_name(const char *name)
{
    for (int i = 0; i < CUT_ST_COUNT; i++)
        if (strcmp(name, status_names[i]) == 0)
            return i;
    return -1;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void cut_rng_seed(cut_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t cut_rng_next(cut_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint32_t cut_rng_below(cut_rng *r, uint32_t n)
{
    /* Lemire's multiply-shift; the bias is below 2^-32 and irrelevant here. */
    return (uint32_t)(((cut_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

double cut_rng_double(cut_rng *r) { return (double)(cut_rng_next(r) >> 11) * 0x1.0p-53; }

double cut_rng_normal(cut_rng *r)
{
    double u1 = cut_rng_double(r), u2 = cut_rng_double(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

uint64_t cut_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

double cut_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cut_utc_timestamp(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
