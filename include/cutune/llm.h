/* cutune — the LLM candidate generator's reply side (seed 002): what a model's answer to one expansion prompt says.
 *
 * A reply reaches cutune as an OpenAI-compatible API body: Chat Completions (choices[0].message.content) or the
 * Responses API (output_text, or the output_text parts of output[].content[]). Its text is then read robustly:
 *   - the move: a line "MOVE: <name>" (any case, Markdown emphasis and backticks allowed), else the first of the nine
 *     canonical move names (cutune/mcgs.h) that the text mentions;
 *   - the change: the first unified diff (in a ```diff fence, or bare "--- "/"+++ "/"@@" lines), and, as the seed's
 *     fallback, the first fenced block of CUDA source with a __global__ function when there is no diff;
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

/* The text of an API response body (Chat Completions or Responses), malloc'd into *text. Also the usage it reports
 * (tokens; -1 when absent). -1 with a sentence for: not JSON, an API error object ("error": {"message": ...}), no
 * text where either API puts it, a body over CUT_LLM_MAX_REPLY. */
int cut_llm_body_text(const char *body, size_t len, char **text, long *prompt_tokens, long *completion_tokens,
                      cut_err *e);

typedef struct cut_llm_pick {
    cut_move move;  /* the move named */
    char *diff;     /* the unified diff (malloc'd), or NULL */
    char *source;   /* a whole new source (malloc'd) when there is no diff, or NULL */
} cut_llm_pick;
void cut_llm_pick_free(cut_llm_pick *p);

/* Reads a reply's text (see above) into *p: 0 with a move and exactly one of diff and source, or -1 with the reason
 * (a sentence) and *p empty. */
int cut_llm_reply_parse(const char *text, cut_llm_pick *p, cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
