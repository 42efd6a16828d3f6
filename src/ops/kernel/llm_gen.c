/* cutune — the LLM candidate generator beside the rules (cutune/llm_gen.h). */
#include "cutune/llm_gen.h"
#include "cutune/log.h"
#include "cutune/util.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct llm_gen {
    cut_llm_client *client;
    cut_cand_gen *rules;
    int per_expansion;
    char cache_dir[1024], events[1024];
    char model[128];
} llm_gen;

static const char k_system[] =
    "You optimize one CUDA kernel for an NVIDIA Hopper GPU (sm_90). Propose exactly one rewrite, restricted to one "
    "of these nine moves:\n"
    "  enable_async_pipeline: overlap global memory with compute via cp.async/TMA\n"
    "  vectorize_global_loads: use ld/st.v2/v4/v8 when aligned\n"
    "  switch_to_mma_or_wgmma: promote dot/FMA to MMA/WGMMA instructions\n"
    "  pad_tail_and_mask: pad tails (and shared-memory rows) for contiguous vectorization and no bank conflicts\n"
    "  change_block_sizes: retune block sizes or launch parameters for occupancy\n"
    "  cache_policy_cg: use the .cg cache policy to reduce L1 pollution\n"
    "  avoid_atomics_reduce: restructure to avoid atomic operations\n"
    "  grouped_gemm_colmajor: grouped scheduling for better cache reuse\n"
    "  softmax_math_fusion: fuse or approximate math to reduce SFU usage\n"
    "Keep the kernel's name, its arguments and the tunables block between the '// cutune: tunables' lines (change a "
    "tunable's value there to change the launch; the launch follows the spec's expressions). The result must stay "
    "correct for the IO contract. Answer with a line 'MOVE: <move name> GAIN: <x>', x the relative speedup you "
    "expect over this state (0.15 for 15% faster; leave GAIN out if you cannot tell), then the change as a unified "
    "diff against kernel.cu (--- a/kernel.cu, +++ b/kernel.cu) in a ```diff block. If a diff is impossible, give "
    "the whole new kernel.cu in a ```cuda block instead. When the prompt says what the search has tried (times, moves "
    "and their results), build on what helped and do not repeat a move that was tried from this state or failed.";

/* The same moves in Triton's terms, for a spec of "language": "triton". */
static const char k_system_triton[] =
    "You optimize one Triton kernel (a Python module with @triton.jit functions, Triton 3.x) for an NVIDIA Hopper "
    "GPU (sm_90). Propose exactly one rewrite, restricted to one of these nine moves:\n"
    "  enable_async_pipeline: software-pipeline a loop's loads (num_stages, or tl.range(..., num_stages=n))\n"
    "  vectorize_global_loads: wide aligned loads: tl.multiple_of / tl.max_contiguous hints on offsets, contiguous "
    "blocks\n"
    "  switch_to_mma_or_wgmma: tensor cores through tl.dot and its input_precision (\"tf32\", \"tf32x3\", "
    "\"ieee\")\n"
    "  pad_tail_and_mask: power-of-two block shapes with masked tails (mask= and other= on tl.load / tl.store)\n"
    "  change_block_sizes: retune the BLOCK sizes, num_warps and num_stages\n"
    "  cache_policy_cg: tl.load with cache_modifier=\".cg\" or eviction_policy=\"evict_first\" / "
    "\"evict_last\"\n"
    "  avoid_atomics_reduce: reduce in registers (tl.sum) before one tl.atomic_add, or avoid tl.atomic_add\n"
    "  grouped_gemm_colmajor: a grouped program-id raster (tl.program_id / tl.num_programs remapped in groups of "
    "rows) for L2 reuse\n"
    "  softmax_math_fusion: fast math (tl.exp2 with log2(e) folded in, tl.rsqrt) and fused elementwise work\n"
    "Keep the entry function's name and its parameters (the launch passes the same arguments, the tunables as "
    "constexpr keyword arguments) and the tunables block: the Python assignments between the '# cutune: tunables' "
    "and '# cutune: end of tunables' lines (change a tunable's value there to change the launch; the grid follows "
    "the spec's expressions, num_warps and num_stages are launch options). The result must stay correct for the IO "
    "contract. Answer with a line 'MOVE: <move name> GAIN: <x>', x the relative speedup you expect over this state "
    "(0.15 for 15% faster; leave GAIN out if you cannot tell), then the change as a unified diff against kernel.py "
    "(--- a/kernel.py, +++ b/kernel.py) in a ```diff block. If a diff is impossible, give the whole new kernel.py in "
    "a ```python block instead. When the prompt says what the search has tried (times, moves and their results), "
    "build on what helped and do not repeat a move that was tried from this state or failed.";

/* The system prompt for k's language. */
static const char *system_for(const cut_kspec *k) { return k->lang == CUT_KS_TRITON ? k_system_triton : k_system; }

/* The launch as the prompt gives it: a CUDA block and shared memory; a Triton grid (its warps are a tunable). */
static void launch_text(cut_buf *b, const cut_kspec *k)
{
    cut_buf_printf(b, "\nLaunch: grid (");
    for (int d = 0; d < k->ngrid; d++)
        cut_buf_printf(b, "%s%s", d ? ", " : "", k->grid[d]);
    if (k->lang == CUT_KS_TRITON) {
        cut_buf_printf(b, ")\nTunables (allowed values):");
        return;
    }
    cut_buf_printf(b, "), block (");
    for (int d = 0; d < k->nblock; d++)
        cut_buf_printf(b, "%s%s", d ? ", " : "", k->block[d]);
    cut_buf_printf(b, "), dynamic shared memory %s bytes\nTunables (allowed values):", k->smem[0] ? k->smem : "0");
}

/* The user message: the spec's contract and the state's source, what the search knows of it (context, when there
 * is any), the rules' proposals, which one of n this is. */
static void user_prompt(cut_buf *b, const cut_kspec *k, const char *src, const char *context,
                        const cut_proposal *rules, int nrules, int i, int n)
{
    cut_buf_printf(b, "Kernel '%s', entry %s.\nSizes:", k->name, k->entry);
    for (int s = 0; s < k->nsizes; s++)
        cut_buf_printf(b, " %s=%lld", k->sizes[s].name, k->sizes[s].value);
    cut_buf_printf(b, "\nInputs:");
    for (int t = 0; t < k->ninputs; t++) {
        cut_buf_printf(b, " %s %s[", k->inputs[t].name, cut_elem_name(k->inputs[t].dtype));
        for (int d = 0; d < k->inputs[t].ndims; d++)
            cut_buf_printf(b, "%s%s", d ? "," : "", k->inputs[t].shape[d]);
        cut_buf_printf(b, "]");
    }
    cut_buf_printf(b, "\nOutputs:");
    for (int t = 0; t < k->noutputs; t++) {
        cut_buf_printf(b, " %s %s[", k->outputs[t].name, cut_elem_name(k->outputs[t].dtype));
        for (int d = 0; d < k->outputs[t].ndims; d++)
            cut_buf_printf(b, "%s%s", d ? "," : "", k->outputs[t].shape[d]);
        cut_buf_printf(b, "]%s", k->outputs[t].accumulate ? " (accumulated into, zeroed before each run)" : "");
    }
    cut_buf_printf(b, "\nArguments in order:");
    for (int a = 0; a < k->nargs; a++)
        cut_buf_printf(b, " %s", k->args[a]);
    launch_text(b, k);
    for (int t = 0; t < k->ntunables; t++) {
        cut_buf_printf(b, " %s {", k->tunables[t].name);
        for (int v = 0; v < k->tunables[t].nvalues; v++)
            cut_buf_printf(b, "%s%lld", v ? "," : "", k->tunables[t].values[v]);
        cut_buf_printf(b, "}");
    }
    for (int r = 0; r < k->nrestrictions; r++)
        cut_buf_printf(b, "%s%s", r ? ", " : "\nRestrictions: ", k->restrictions[r]);
    const int py = k->lang == CUT_KS_TRITON;
    cut_buf_printf(b, "\nTolerance: atol %g, rtol %g.\n\n%s:\n```%s\n%s%s```\n", k->atol, k->rtol,
                   py ? "kernel.py" : "kernel.cu", py ? "python" : "cuda", src,
                   src[0] && src[strlen(src) - 1] == '\n' ? "" : "\n");
    if (context && context[0])
        cut_buf_printf(b, "\nSearch so far:\n%s%s", context, context[strlen(context) - 1] == '\n' ? "" : "\n");
    if (nrules > 0) {
        cut_buf_printf(b, "\nRule-based rewrites already proposed for this state (propose something else):\n");
        for (int r = 0; r < nrules; r++)
            cut_buf_printf(b, "- %s: %s\n", cut_move_name(rules[r].move), rules[r].label);
    }
    cut_buf_printf(b, "\nThis is proposal %d of %d for this state.\n", i + 1, n);
}

/* One line of the events log: the ask, and the proposal's move and predicted gain (move NULL: why there is none). */
static void event(const llm_gen *g, const cut_kspec *k, uint64_t hash, int cached, const cut_llm_usage *before,
                  const cut_llm_usage *after, const char *move, double gain, const char *why)
{
    if (!g->events[0])
        return;
    cJSON *o = cJSON_CreateObject();
    char ts[32], h[24];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(h, sizeof h, "%016llx", (unsigned long long)hash);
    cJSON_AddStringToObject(o, "ts", ts);
    cJSON_AddStringToObject(o, "event", "llm_ask");
    cJSON_AddStringToObject(o, "kernel", k->name);
    cJSON_AddStringToObject(o, "model", g->model);
    cJSON_AddStringToObject(o, "prompt_hash", h);
    cJSON_AddBoolToObject(o, "cached", cached);
    cJSON_AddNumberToObject(o, "requests", (double)(after->requests - before->requests));
    cJSON_AddNumberToObject(o, "retries", (double)(after->retries - before->retries));
    cJSON_AddNumberToObject(o, "prompt_tokens", (double)(after->prompt_tokens - before->prompt_tokens));
    cJSON_AddNumberToObject(o, "completion_tokens", (double)(after->completion_tokens - before->completion_tokens));
    if (move) {
        cJSON_AddStringToObject(o, "move", move);
        cJSON_AddNumberToObject(o, "pred_gain", gain);
    } else
        cJSON_AddStringToObject(o, "failed", why ? why : "?");
    char *line = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    cut_redact(line);
    FILE *f = fopen(g->events, "a");
    if (f) {
        fprintf(f, "%s\n", line);
        fclose(f);
    }
    free(line);
}

/* The reply to (system, user): from the cache, else asked (and cached). */
static int reply_for(llm_gen *g, const char *system, const char *user, uint64_t hash, int *cached, char **text,
                     cut_err *e)
{
    char path[1200];
    *cached = 0;
    if (g->cache_dir[0]) {
        snprintf(path, sizeof path, "%s/%016llx.txt", g->cache_dir, (unsigned long long)hash);
        size_t len;
        if (cut_path_exists(path) && cut_read_file(path, text, &len, e) == 0) {
            *cached = 1;
            return 0;
        }
    }
    if (cut_llm_ask(g->client, system, user, text, e) != 0)
        return -1;
    if (g->cache_dir[0]) {
        cut_err ignore = {{0}};
        cut_write_file_atomic(path, *text, strlen(*text), &ignore); /* a cache that cannot be written costs requests */
    }
    return 0;
}

/* The context with every number masked ("0.1209 ms, 1.86x" -> "# ms, #x"): the reply cache's key. A rerun whose
 * search reaches the same states by the same moves then asks nothing again, although its measured times differ in
 * their last digits; the cached reply is a diff against the same source either way. */
static char *masked(const char *context)
{
    char *m = cut_xstrdup(context ? context : "");
    char *w = m;
    for (const char *p = m; *p;) {
        if (!isdigit((unsigned char)*p)) {
            *w++ = *p++;
            continue;
        }
        while (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1])))
            p++;
        *w++ = '#';
    }
    *w = '\0';
    return m;
}

static int propose(void *ctx, const cut_kspec *k, const char *src, const char *context, const char *work_dir,
                   cut_proposal *out, int max, cut_err *e)
{
    llm_gen *g = ctx;
    int n = 0;
    if (g->rules) {
        n = g->rules->propose(g->rules->ctx, k, src, context, work_dir, out, max, e);
        if (n < 0)
            return -1;
    }
    const int nrules = n;
    for (int i = 0; i < g->per_expansion && n < max; i++) {
        cut_buf user, key;
        cut_buf_init(&user);
        cut_buf_init(&key);
        user_prompt(&user, k, src, context, out, nrules, i, g->per_expansion);
        char *mask = masked(context);
        user_prompt(&key, k, src, mask, out, nrules, i, g->per_expansion);
        free(mask);
        uint64_t h = cut_fnv1a(CUT_FNV_INIT, g->model, strlen(g->model));
        const char *sys = system_for(k);
        h = cut_fnv1a(h, sys, strlen(sys));
        h = cut_fnv1a(h, key.data, key.len);
        cut_buf_free(&key);
        const cut_llm_usage before = cut_llm_client_usage(g->client);
        char *text = NULL;
        int cached = 0;
        cut_err why = {{0}};
        cut_llm_pick pick = {0};
        char *diff = NULL;
        if (reply_for(g, sys, user.data, h, &cached, &text, &why) == 0 &&
            (k->lang == CUT_KS_TRITON ? cut_llm_reply_parse_triton : cut_llm_reply_parse)(text, &pick, &why) == 0) {
            if (pick.diff) {
                diff = pick.diff;
                pick.diff = NULL;
            } else if (cut_diff_unified(src, pick.source, work_dir, &diff, &why) != 0 || !diff[0]) {
                free(diff);
                diff = NULL;
                if (!why.msg[0])
                    cut_err_set(&why, "the reply's source is the state's own");
            }
        }
        const cut_llm_usage after = cut_llm_client_usage(g->client);
        if (diff) {
            cut_proposal *p = &out[n++];
            memset(p, 0, sizeof *p);
            p->move = pick.move;
            snprintf(p->label, sizeof p->label, "llm %s: %s #%d", g->model, cut_move_name(pick.move), i + 1);
            p->diff = diff;
            p->pred_gain = pick.gain; /* the model's bounded estimate, else a rule's typical one; history updates it */
            event(g, k, h, cached, &before, &after, cut_move_name(pick.move), p->pred_gain, NULL);
        } else {
            event(g, k, h, cached, &before, &after, NULL, 0, why.msg);
            cut_log(CUT_LOG_WARN, "llm: %s: no proposal: %s", k->name, why.msg);
        }
        cut_llm_pick_free(&pick);
        free(text);
        cut_buf_free(&user);
    }
    return n;
}

static void destroy(void *ctx)
{
    llm_gen *g = ctx;
    if (!g)
        return;
    cut_cand_gen_free(g->rules);
    cut_llm_client_free(g->client);
    free(g);
}

cut_cand_gen *cut_llm_gen_new(const cut_llm_gen_cfg *cfg, cut_err *e)
{
    cut_llm_client *c = cut_llm_client_new(&cfg->api, e);
    if (!c) {
        cut_cand_gen_free(cfg->rules);
        return NULL;
    }
    llm_gen *g = cut_xcalloc(1, sizeof *g);
    g->client = c;
    g->rules = cfg->rules;
    g->per_expansion = cfg->per_expansion > 0 ? cfg->per_expansion : 1;
    snprintf(g->model, sizeof g->model, "%s", cfg->api.model);
    if (cfg->cache_dir && cut_mkdirs(cfg->cache_dir, NULL) == 0)
        snprintf(g->cache_dir, sizeof g->cache_dir, "%s", cfg->cache_dir);
    if (cfg->events_path)
        snprintf(g->events, sizeof g->events, "%s", cfg->events_path);
    cut_cand_gen *gen = cut_xcalloc(1, sizeof *gen);
    gen->name = "llm";
    gen->ctx = g;
    gen->propose = propose;
    gen->wants_context = 1;
    gen->destroy = destroy;
    return gen;
}

cut_llm_usage cut_llm_gen_usage(const cut_cand_gen *g)
{
    cut_llm_usage none = {0};
    if (!g || !g->name || strcmp(g->name, "llm") != 0)
        return none;
    return cut_llm_client_usage(((const llm_gen *)g->ctx)->client);
}
