/* cutune — the LLM candidate generator of kernel states (seed 002), beside the rules: cutune/llm.h asks the model and
 * reads its replies; this turns them into proposals of states (cutune/kstate.h). */
#ifndef CUTUNE_LLM_GEN_H
#define CUTUNE_LLM_GEN_H

#include "cutune/kstate.h"
#include "cutune/llm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the generator (src/ops/kernel/llm_gen.c): LLM proposals beside the rules' ----
 *
 * Each expansion asks the model `per_expansion` times (proposal i of n) for one of the nine moves as a unified
 * diff against the state's source, and adds the answers to the rules' proposals (rules may be NULL: LLM only). The
 * prompt carries the spec's IO contract, sizes, tunables, launch and restrictions, the source, the move vocabulary
 * and the rules' own proposals (so the model proposes something else). A whole new source in reply becomes a diff.
 * A Triton spec gets a Triton system prompt (the same nine moves in Triton's terms: num_stages, BLOCK sizes and
 * num_warps, tl.dot's input_precision, cache_modifier / eviction_policy, tl.multiple_of / tl.max_contiguous, a grouped
 * program-id raster, tl.atomic_add avoided, exp2 / rsqrt), its source as kernel.py in a ```python block, and its
 * whole-source reply in a ```python block with a @triton.jit function (cut_llm_reply_parse_triton).
 * Replies are cached by the hash of model and prompt in cache_dir, so a rerun or --resume sends no request for a
 * prompt already answered. Every ask is one line of events (events_path, JSON lines: the prompt hash, cached or
 * not, requests, tokens, the move or why no proposal came of it); a reply that cannot become a proposal is such a
 * line, never an error of the search. */
typedef struct cut_llm_gen_cfg {
    cut_llm_cfg api;
    int per_expansion;        /* LLM proposals asked per expansion (<= 0: 1) */
    const char *cache_dir;    /* reply cache; NULL: none */
    const char *events_path;  /* JSON lines of every ask; NULL: none */
    cut_cand_gen *rules;      /* owned: freed with the generator; NULL: LLM proposals only */
} cut_llm_gen_cfg;

/* The generator, or NULL with a sentence (cut_llm_client_new's refusals). cfg->rules is taken over either way. */
cut_cand_gen *cut_llm_gen_new(const cut_llm_gen_cfg *cfg, cut_err *e);
/* What the generator's client has used so far (zeros for a generator that is not the LLM's). */
cut_llm_usage cut_llm_gen_usage(const cut_cand_gen *g);

#ifdef __cplusplus
}
#endif

#endif
