/* cutune — the OpenAI-compatible client over a dlopen'd libcurl (cutune/llm.h). */
#include "cutune/llm.h"
#include "cutune/util.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- libcurl, loaded once ----------------------------------------------------------------------------------- */

static struct {
    void *lib;
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    const char *(*easy_strerror)(CURLcode);
    char why[256];
} g_curl;
static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;

static void curl_load(void)
{
    const char *names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !g_curl.lib; i++)
        g_curl.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!g_curl.lib) {
        snprintf(g_curl.why, sizeof g_curl.why, "libcurl could not be loaded (%s)", dlerror());
        return;
    }
#define SYM(field, name)                                                                                           \
    do {                                                                                                           \
        *(void **)&g_curl.field = dlsym(g_curl.lib, name);                                                         \
        if (!g_curl.field) {                                                                                       \
            snprintf(g_curl.why, sizeof g_curl.why, "libcurl lacks %s", name);                                     \
            return;                                                                                                \
        }                                                                                                          \
    } while (0)
    SYM(global_init, "curl_global_init");
    SYM(easy_init, "curl_easy_init");
    SYM(easy_setopt, "curl_easy_setopt");
    SYM(easy_perform, "curl_easy_perform");
    SYM(easy_getinfo, "curl_easy_getinfo");
    SYM(easy_cleanup, "curl_easy_cleanup");
    SYM(slist_append, "curl_slist_append");
    SYM(slist_free_all, "curl_slist_free_all");
    SYM(easy_strerror, "curl_easy_strerror");
#undef SYM
    if (g_curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        snprintf(g_curl.why, sizeof g_curl.why, "curl_global_init failed");
}

/* ---- the client ---------------------------------------------------------------------------------------------- */

struct cut_llm_client {
    cut_llm_cfg cfg;
    char model[128];
    char url[1024];
    char auth[512]; /* "Authorization: Bearer <key>": never printed */
    cut_llm_usage usage;
};

cut_llm_client *cut_llm_client_new(const cut_llm_cfg *cfg, cut_err *e)
{
    if (!cfg || !cfg->model || !cfg->model[0])
        return cut_err_set(e, "no LLM model given (--llm-model)"), NULL;
    const char *key = getenv("OPENAI_API_KEY");
    if (!key || !key[0])
        key = getenv("CUTUNE_LLM_API_KEY");
    if (!key || !key[0])
        return cut_err_set(e, "no API key: set OPENAI_API_KEY (or run with --no-llm)"), NULL;
    pthread_once(&g_curl_once, curl_load);
    if (g_curl.why[0])
        return cut_err_set(e, "%s: install libcurl4 (or run with --no-llm)", g_curl.why), NULL;
    cut_llm_client *c = cut_xcalloc(1, sizeof *c);
    c->cfg = *cfg;
    if (c->cfg.timeout_s <= 0)
        c->cfg.timeout_s = 120;
    if (c->cfg.max_retries < 0)
        c->cfg.max_retries = 4;
    if (c->cfg.backoff_s <= 0)
        c->cfg.backoff_s = 1;
    snprintf(c->model, sizeof c->model, "%s", cfg->model);
    c->cfg.model = c->model;
    const char *base = cfg->base_url && cfg->base_url[0] ? cfg->base_url : getenv("OPENAI_BASE_URL");
    if (!base || !base[0])
        base = "https://api.openai.com/v1";
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/')
        bl--;
    snprintf(c->url, sizeof c->url, "%.*s/%s", (int)bl, base, cfg->responses_api ? "responses" : "chat/completions");
    c->cfg.base_url = NULL;
    if (snprintf(c->auth, sizeof c->auth, "Authorization: Bearer %s", key) >= (int)sizeof c->auth) {
        free(c);
        return cut_err_set(e, "the API key is longer than %zu characters", sizeof c->auth - 32), NULL;
    }
    return c;
}

void cut_llm_client_free(cut_llm_client *c)
{
    if (!c)
        return;
    memset(c->auth, 0, sizeof c->auth);
    free(c);
}

const char *cut_llm_client_url(const cut_llm_client *c) { return c->url; }

cut_llm_usage cut_llm_client_usage(const cut_llm_client *c) { return c->usage; }

/* The request body. */
static char *request_json(const cut_llm_client *c, const char *system, const char *user)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", c->model);
    if (c->cfg.responses_api) {
        cJSON_AddStringToObject(root, "instructions", system ? system : "");
        cJSON_AddStringToObject(root, "input", user ? user : "");
    } else {
        cJSON *msgs = cJSON_AddArrayToObject(root, "messages");
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "system");
        cJSON_AddStringToObject(m, "content", system ? system : "");
        cJSON_AddItemToArray(msgs, m);
        m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "user");
        cJSON_AddStringToObject(m, "content", user ? user : "");
        cJSON_AddItemToArray(msgs, m);
    }
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

typedef struct reply {
    cut_buf body;
    int over;            /* the body passed CUT_LLM_MAX_REPLY */
    double retry_after;  /* seconds from a Retry-After header, -1 none */
} reply;

static size_t on_body(char *ptr, size_t size, size_t n, void *ctx)
{
    reply *r = ctx;
    const size_t len = size * n;
    if (r->body.len + len > CUT_LLM_MAX_REPLY) {
        r->over = 1;
        return 0; /* libcurl stops with CURLE_WRITE_ERROR */
    }
    cut_buf_append(&r->body, ptr, len);
    return len;
}

static size_t on_header(char *ptr, size_t size, size_t n, void *ctx)
{
    reply *r = ctx;
    const size_t len = size * n;
    if (len > 12 && !strncasecmp(ptr, "Retry-After:", 12)) {
        char v[32];
        snprintf(v, sizeof v, "%.*s", (int)(len - 12 < 31 ? len - 12 : 31), ptr + 12);
        char *end = NULL;
        const double s = strtod(v, &end);
        if (end != v && isfinite(s) && s >= 0)
            r->retry_after = s; /* an HTTP date instead of seconds: ignored, the backoff applies */
    }
    return len;
}

static void sleep_s(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* One POST. Returns the HTTP status (0: a transport error, its message in e). */
static long post(cut_llm_client *c, const char *json, reply *r, cut_err *e)
{
    CURL *h = g_curl.easy_init();
    if (!h)
        return cut_err_set(e, "curl_easy_init failed"), 0;
    struct curl_slist *hdr = g_curl.slist_append(NULL, "Content-Type: application/json");
    hdr = g_curl.slist_append(hdr, c->auth);
    const long timeout_ms = (long)(c->cfg.timeout_s * 1000);
    g_curl.easy_setopt(h, CURLOPT_URL, c->url);
    g_curl.easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    g_curl.easy_setopt(h, CURLOPT_POSTFIELDS, json);
    g_curl.easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    g_curl.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 10000 ? timeout_ms : 10000L);
    g_curl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    g_curl.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    g_curl.easy_setopt(h, CURLOPT_WRITEDATA, r);
    g_curl.easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    g_curl.easy_setopt(h, CURLOPT_HEADERDATA, r);
    g_curl.easy_setopt(h, CURLOPT_USERAGENT, "cutune/" CUTUNE_VERSION);
    const CURLcode rc = g_curl.easy_perform(h);
    long status = 0;
    if (rc == CURLE_OK)
        g_curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    else
        cut_err_set(e, "%s", r->over ? "the reply passed the size limit" : g_curl.easy_strerror(rc));
    g_curl.slist_free_all(hdr);
    g_curl.easy_cleanup(h);
    return status;
}

int cut_llm_ask(cut_llm_client *c, const char *system, const char *user, char **text, cut_err *e)
{
    *text = NULL;
    char *json = request_json(c, system, user);
    double backoff = c->cfg.backoff_s;
    int rc = -1;
    for (int attempt = 0;; attempt++) {
        if (c->cfg.max_requests > 0 && c->usage.requests >= c->cfg.max_requests) {
            cut_err_set(e, "the LLM request budget (%ld) is spent", c->cfg.max_requests);
            break;
        }
        if (c->cfg.max_tokens > 0 && c->usage.prompt_tokens + c->usage.completion_tokens >= c->cfg.max_tokens) {
            cut_err_set(e, "the LLM token budget (%ld tokens) is spent", c->cfg.max_tokens);
            break;
        }
        reply r = {.retry_after = -1};
        cut_buf_init(&r.body);
        cut_err why = {{0}};
        c->usage.requests++;
        const long status = post(c, json, &r, &why);
        int retry = 0;
        if (r.over) {
            cut_err_set(e, "%s: the reply passed %u bytes", c->url, CUT_LLM_MAX_REPLY);
        } else if (status == 200) {
            long pt = -1, ct = -1;
            rc = cut_llm_body_text(r.body.data ? r.body.data : "", r.body.len, text, &pt, &ct, e);
            if (pt > 0)
                c->usage.prompt_tokens += pt;
            if (ct > 0)
                c->usage.completion_tokens += ct;
        } else if (status == 429 || status >= 500 || status == 0) {
            retry = 1;
            if (status == 0)
                cut_err_set(e, "%s: %s", c->url, why.msg);
            else
                cut_err_set(e, "%s: HTTP %ld", c->url, status);
        } else {
            cut_err_set(e, "%s: HTTP %ld: %.200s", c->url, status, r.body.data ? r.body.data : "");
        }
        const double wait = r.retry_after >= 0 ? (r.retry_after < 60 ? r.retry_after : 60) : backoff;
        cut_buf_free(&r.body);
        if (!retry)
            break;
        if (attempt >= c->cfg.max_retries) {
            cut_err_wrap(e, "gave up after %d attempts", attempt + 1);
            break;
        }
        c->usage.retries++;
        sleep_s(wait);
        backoff *= 2;
    }
    free(json);
    cut_redact(e->msg); /* a server echoing the request could put the key in an error body */
    return rc;
}
