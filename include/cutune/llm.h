/* cutune — the LLM candidate generator's reply side (seed 002): what a model's answer to one expansion prompt says.
 *
 * A reply reaches cutune as an OpenAI-compatible API body: Chat Completions (choices[0].message.content) or the
 * Responses API (output_text, or the output_text parts of output[].content[]). Its text is then read robustly:
 *   - the move: a line "MOVE: <name>" (any case, Markdown emphasis and backticks allowed), else the first of the nine
 *     canonical move names (cutune/mcgs.h) that the text mentions;
 *   - the gain the model expects: "GAIN: <x>" after the move's name on the MOVE line, else on a line of its own (x a
 *     relative speedup, 0.15 for 15% faster; "15%" reads the same), clamped to [CUT_LLM_MIN_GAIN, CUT_LLM_MAX_GAIN];
 *     CUT_LLM_DEFAULT_GAIN when there is none or it is not a finite number >= 0;
 *   - the change: the first unified diff (in a ```diff fence, or bare "--- "/"+++ "/"@@" lines), and, as the seed's
 *     fallback, the first fenced block of CUDA source with a __global__ function when there is no diff (for a
 *     Triton state, the first fenced block with a @triton.jit function: cut_llm_reply_parse_triton);
 *   - several diffs: the first; prose before, between and after is ignored.
 * Everything that cannot become a candidate is a reason, never a crash: an empty or huge reply, JSON that is not an
 * API body, no move or an unknown one, no diff and no source, an unclosed fence (a truncated reply). */
#ifndef CUTUNE_LLM_H
#define CUTUNE_LLM_H

#include "cutune/common.h"
#include "cutune/mcgs.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Replies above this many bytes are refused unread (a model that loops, or a hostile server). */
#define CUT_LLM_MAX_REPLY (1u << 20)
/* A reply's predicted gain: a rule's typical one when the model states none; what it states kept within bounds, so
 * one boastful reply does not take over the priors and a stated 0 still leaves the move a chance. */
#define CUT_LLM_DEFAULT_GAIN 0.10
#define CUT_LLM_MIN_GAIN 0.01
#define CUT_LLM_MAX_GAIN 1.0

/* The text of an API response body (Chat Completions or Responses), malloc'd into *text. Also the usage it reports
 * (tokens; -1 when absent). -1 with a sentence for: not JSON, an API error object ("error": {"message": ...}), no
 * text where either API puts it, a body over CUT_LLM_MAX_REPLY. */
int cut_llm_body_text(const char *body, size_t len, char **text, long *prompt_tokens, long *completion_tokens,
                      cut_err *e);

typedef struct cut_llm_pick {
    cut_move move;  /* the move named */
    double gain;    /* the relative gain the model expects (GAIN), or CUT_LLM_DEFAULT_GAIN */
    char *diff;     /* the unified diff (malloc'd), or NULL */
    char *source;   /* a whole new source (malloc'd) when there is no diff, or NULL */
} cut_llm_pick;
void cut_llm_pick_free(cut_llm_pick *p);

/* Reads a reply's text (see above) into *p: 0 with a move and exactly one of diff and source, or -1 with the reason
 * (a sentence) and *p empty. */
int cut_llm_reply_parse(const char *text, cut_llm_pick *p, cut_err *e);
/* The same for a Triton state: a whole new source is a fenced block (```python) with a @triton.jit function. */
int cut_llm_reply_parse_triton(const char *text, cut_llm_pick *p, cut_err *e);

/* ---- the client (src/strategy/llm_client.c): one OpenAI-compatible endpoint over libcurl ----
 *
 * libcurl (libcurl.so.4) is loaded when a client is made, so cutune runs without it unless it asks a model. Each
 * request is a POST of JSON to {base}/chat/completions (or {base}/responses) with "Authorization: Bearer $KEY".
 * A 429, a 5xx or a transport error (timeout, refused connection) is retried up to max_retries times after a backoff
 * that doubles from backoff_s, or after the server's Retry-After (seconds, at most 60); any other status is an error
 * at once. A reply body over CUT_LLM_MAX_REPLY is cut off and refused. The key is read from $OPENAI_API_KEY (else
 * $CUTUNE_LLM_API_KEY) and never written anywhere: errors go through cut_redact. */

typedef struct cut_llm_cfg {
    const char *base_url; /* NULL: $OPENAI_BASE_URL, else https://api.openai.com/v1 */
    const char *model;    /* required */
    int responses_api;    /* 1: the Responses API; 0: Chat Completions */
    double timeout_s;     /* per request; <= 0: 120 */
    int max_retries;      /* < 0: 4 */
    double backoff_s;     /* <= 0: 1 */
    long max_requests;    /* the run's request budget, retries included; <= 0: unlimited */
    long max_tokens;      /* the run's token budget (prompt + completion, as the server reports them); no request
                           * is sent once it is reached; <= 0: unlimited */
} cut_llm_cfg;

typedef struct cut_llm_usage {
    long requests;          /* HTTP requests sent, retries included */
    long retries;
    long prompt_tokens, completion_tokens; /* as the server reported them (0 when it did not) */
} cut_llm_usage;

typedef struct cut_llm_client cut_llm_client;

/* A client for cfg; -1 cases (NULL with a sentence): no model, no API key in the environment, libcurl missing. */
cut_llm_client *cut_llm_client_new(const cut_llm_cfg *cfg, cut_err *e);
void cut_llm_client_free(cut_llm_client *c);
/* The endpoint the client posts to ("http://127.0.0.1:8080/v1/chat/completions"). */
const char *cut_llm_client_url(const cut_llm_client *c);
/* Asks once (system and user messages), with the retries above: the reply's text (cut_llm_body_text) malloc'd into
 * *text. Counts into c's usage (cut_llm_client_usage). -1 with a sentence: the budget spent, a status that is not
 * retried, retries exhausted, a body that is not an API reply. */
int cut_llm_ask(cut_llm_client *c, const char *system, const char *user, char **text, cut_err *e);
cut_llm_usage cut_llm_client_usage(const cut_llm_client *c);

#ifdef __cplusplus
}
#endif

#endif
