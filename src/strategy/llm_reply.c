/* cutune — an LLM's reply to an expansion prompt: API body -> text -> move and diff (cutune/llm.h). */
#include "cutune/llm.h"
#include "cutune/util.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- the API body ------------------------------------------------------------------------------------------- */

static long usage_field(const cJSON *usage, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(usage, a);
    if (!cJSON_IsNumber(x))
        x = cJSON_GetObjectItemCaseSensitive(usage, b);
    /* a count no server reports (negative, fractional or past 2^53) reads as absent, never as a wrapped long */
    return cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble <= 9007199254740992.0 ? (long)x->valuedouble
                                                                                          : -1;
}

/* The Responses API's text: output_text, else every output_text part of output[].content[] joined. */
static char *responses_text(const cJSON *root)
{
    const cJSON *ot = cJSON_GetObjectItemCaseSensitive(root, "output_text");
    if (cJSON_IsString(ot) && ot->valuestring[0])
        return cut_xstrdup(ot->valuestring);
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(root, "output");
    if (!cJSON_IsArray(out))
        return NULL;
    cut_buf b;
    cut_buf_init(&b);
    const cJSON *item;
    cJSON_ArrayForEach(item, out)
    {
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(item, "content"), *part;
        if (!cJSON_IsArray(content))
            continue;
        cJSON_ArrayForEach(part, content)
        {
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
            const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
            if (cJSON_IsString(type) && !strcmp(type->valuestring, "output_text") && cJSON_IsString(text))
                cut_buf_printf(&b, "%s%s", b.len ? "\n" : "", text->valuestring);
        }
    }
    return b.data; /* NULL when nothing was appended */
}

int cut_llm_body_text(const char *body, size_t len, char **text, long *prompt_tokens, long *completion_tokens,
                      cut_err *e)
{
    *text = NULL;
    *prompt_tokens = *completion_tokens = -1;
    if (len > CUT_LLM_MAX_REPLY)
        return cut_err_set(e, "the reply has %zu bytes, over the %u-byte limit", len, CUT_LLM_MAX_REPLY);
    cJSON *root = cJSON_ParseWithLength(body, len);
    if (!root)
        return cut_err_set(e, "the reply is not JSON (%zu bytes)", len);
    int rc = 0;
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(err, "message");
    if (cJSON_IsObject(err)) {
        rc = cut_err_set(e, "the API answered with an error: %.200s", cJSON_IsString(msg) ? msg->valuestring : "?");
    } else {
        const cJSON *choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
        const cJSON *first = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
        const cJSON *message = cJSON_GetObjectItemCaseSensitive(first, "message");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(message, "content");
        if (cJSON_IsString(content))
            *text = cut_xstrdup(content->valuestring);
        else
            *text = responses_text(root);
        if (!*text)
            rc = cut_err_set(e, "the reply has no text (neither choices[0].message.content nor a Responses API "
                                "output_text)");
        const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
        if (cJSON_IsObject(usage)) {
            *prompt_tokens = usage_field(usage, "prompt_tokens", "input_tokens");
            *completion_tokens = usage_field(usage, "completion_tokens", "output_tokens");
        }
    }
    cJSON_Delete(root);
    return rc;
}

/* ---- the text ----------------------------------------------------------------------------------------------- */

void cut_llm_pick_free(cut_llm_pick *p)
{
    if (!p)
        return;
    free(p->diff);
    free(p->source);
    memset(p, 0, sizeof *p);
}

static int ident_char(int c) { return isalnum(c) || c == '_'; }

/* The value of a "word: value" at the start of line (Markdown around both allowed, any case), or NULL. */
static const char *keyed(const char *line, const char *word)
{
    const char *p = line;
    while (*p == ' ' || *p == '\t' || *p == '*' || *p == '#' || *p == '-' || *p == '>')
        p++;
    const size_t n = strlen(word);
    if (strncasecmp(p, word, n) != 0 || ident_char((unsigned char)p[n]))
        return NULL;
    p += n;
    while (*p == '*' || *p == ' ')
        p++;
    if (*p != ':')
        return NULL;
    p++;
    while (*p == ' ' || *p == '*' || *p == '`' || *p == '"' || *p == '\'')
        p++;
    return p;
}

/* The move of a "MOVE: name" line: its index, -2 for a line naming an unknown move (name copied into unknown), -1
 * when there is no such line. */
static int move_line(const char *text, char *unknown, size_t n)
{
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        const char *p = keyed(line, "move");
        if (!p)
            continue;
        size_t len = 0;
        while (ident_char((unsigned char)p[len]))
            len++;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), p);
        for (char *c = name; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        const int m = cut_move_parse(name);
        if (m >= 0)
            return m;
        snprintf(unknown, n, "%s", name);
        return -2;
    }
    return -1;
}

/* A "GAIN: x" at p as a gain: x a number ("15%": 0.15) clamped to [CUT_LLM_MIN_GAIN, CUT_LLM_MAX_GAIN]; -1 when p
 * holds none, or one that is not a finite number >= 0. */
static double gain_at(const char *p)
{
    p = keyed(p, "gain");
    if (!p || isspace((unsigned char)*p)) /* strtod would read the next line's number */
        return -1;
    char *end;
    double g = strtod(p, &end);
    if (end == p || !isfinite(g) || g < 0)
        return -1;
    if (*end == '%')
        g /= 100;
    return g < CUT_LLM_MIN_GAIN ? CUT_LLM_MIN_GAIN : g > CUT_LLM_MAX_GAIN ? CUT_LLM_MAX_GAIN : g;
}

/* The first whole word w (any case) of the line at line, or NULL. */
static const char *word_in_line(const char *line, const char *w)
{
    const size_t n = strlen(w);
    for (const char *q = line; *q && *q != '\n'; q++)
        if ((q == line || !ident_char((unsigned char)q[-1])) && strncasecmp(q, w, n) == 0 &&
            !ident_char((unsigned char)q[n]))
            return q;
    return NULL;
}

/* The gain the reply states: on the MOVE line after the name, else on a line of its own; CUT_LLM_DEFAULT_GAIN when
 * neither states a usable one. */
static double stated_gain(const char *text)
{
    double on_move = -1, own = -1;
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        const char *g = keyed(line, "move") ? word_in_line(line, "gain") : NULL;
        if (g && on_move < 0)
            on_move = gain_at(g);
        else if (!g && own < 0)
            own = gain_at(line);
    }
    return on_move >= 0 ? on_move : own >= 0 ? own : CUT_LLM_DEFAULT_GAIN;
}

/* The first canonical move name mentioned as a whole word, or -1. */
static int move_mentioned(const char *text)
{
    const char *best = NULL;
    int which = -1;
    for (int m = 0; m < CUT_MV_COUNT; m++) {
        const char *name = cut_move_name((cut_move)m);
        const size_t len = strlen(name);
        for (const char *p = strstr(text, name); p; p = strstr(p + 1, name))
            if ((p == text || !ident_char((unsigned char)p[-1])) && !ident_char((unsigned char)p[len])) {
                if (!best || p < best) {
                    best = p;
                    which = m;
                }
                break;
            }
    }
    return which;
}

/* A fenced block: start (the fence line), its info string, its body [body, body_end), and where the text goes on. */
typedef struct fence {
    const char *body, *body_end, *after;
    char info[32];
} fence;

/* The next fenced block at or after p: 1 found, 0 none, -1 an unclosed fence (truncated reply). */
static int next_fence(const char *p, fence *f)
{
    for (const char *line = p; line && *line;) {
        const char *q = line;
        while (*q == ' ')
            q++;
        if (!strncmp(q, "```", 3)) {
            q += 3;
            size_t n = 0;
            while (q[n] && q[n] != '\n' && n + 1 < sizeof f->info) {
                f->info[n] = (char)tolower((unsigned char)q[n]);
                n++;
            }
            f->info[n] = '\0';
            const char *nl = strchr(q, '\n');
            if (!nl)
                return -1;
            f->body = nl + 1;
            for (const char *l = f->body; l && *l;) {
                const char *r = l;
                while (*r == ' ')
                    r++;
                if (!strncmp(r, "```", 3)) {
                    f->body_end = l;
                    const char *end = strchr(r, '\n');
                    f->after = end ? end + 1 : r + strlen(r);
                    return 1;
                }
                l = strchr(l, '\n');
                l = l ? l + 1 : NULL;
            }
            return -1;
        }
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    return 0;
}

/* The unified diff starting at the first "--- " line of [p, end) that is followed by "+++ " and an "@@" hunk; it
 * runs while lines are diff lines. *out malloc'd, or NULL. */
static char *diff_in(const char *p, const char *end)
{
    for (const char *line = p; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *next = nl ? nl + 1 : end;
        if (!strncmp(line, "--- ", 4) && next < end && !strncmp(next, "+++ ", 4)) {
            const char *hunk = memchr(next, '\n', (size_t)(end - next));
            if (hunk && hunk + 1 < end && !strncmp(hunk + 1, "@@", 2)) {
                const char *q = hunk + 1;
                while (q < end) { /* diff lines: hunks, context, -, +, "\ No newline", file headers */
                    if (!(*q == ' ' || *q == '-' || *q == '+' || *q == '@' || *q == '\\' || *q == '\n'))
                        break;
                    const char *qn = memchr(q, '\n', (size_t)(end - q));
                    q = qn ? qn + 1 : end;
                }
                cut_buf b;
                cut_buf_init(&b);
                cut_buf_append(&b, line, (size_t)(q - line));
                if (!b.len || b.data[b.len - 1] != '\n')
                    cut_buf_append(&b, "\n", 1);
                cut_buf_append(&b, "", 1);
                return b.data;
            }
        }
        line = next;
    }
    return NULL;
}

/* 1 when [a, b) contains needle. */
static int contains(const char *a, const char *b, const char *needle)
{
    const size_t n = strlen(needle);
    for (const char *p = a; p + n <= b; p++)
        if (!memcmp(p, needle, n))
            return 1;
    return 0;
}

static char *dup_range(const char *a, const char *b)
{
    char *s = cut_xmalloc((size_t)(b - a) + 1);
    memcpy(s, a, (size_t)(b - a));
    s[b - a] = '\0';
    return s;
}

/* The parse of both languages: a whole new source is a fenced block containing marker (what: its words for the
 * refusal). */
static int parse_reply(const char *text, const char *marker, const char *what, cut_llm_pick *p, cut_err *e)
{
    memset(p, 0, sizeof *p);
    if (!text)
        return cut_err_set(e, "no reply");
    const size_t len = strlen(text);
    if (len > CUT_LLM_MAX_REPLY)
        return cut_err_set(e, "the reply has %zu bytes, over the %u-byte limit", len, CUT_LLM_MAX_REPLY);
    const char *t = text;
    while (isspace((unsigned char)*t))
        t++;
    if (!*t)
        return cut_err_set(e, "the reply is empty");
    char unknown[64] = "";
    int move = move_line(text, unknown, sizeof unknown);
    if (move == -2)
        return cut_err_set(e, "the reply names the move '%s', which is none of the nine canonical moves", unknown);
    if (move < 0)
        move = move_mentioned(text);
    if (move < 0)
        return cut_err_set(e, "the reply names none of the nine canonical moves");
    /* fenced blocks first: a diff in a fence, else the first source (CUDA or Triton); then a bare diff in the text */
    fence f;
    const char *at = text;
    int st;
    while ((st = next_fence(at, &f)) == 1) {
        char *d = diff_in(f.body, f.body_end);
        if (d) {
            p->diff = d;
            break;
        }
        if (!p->source && contains(f.body, f.body_end, marker))
            p->source = dup_range(f.body, f.body_end);
        at = f.after;
    }
    if (st < 0 && !p->diff && !p->source) {
        cut_llm_pick_free(p);
        return cut_err_set(e, "the reply ends inside a ``` block (truncated)");
    }
    if (!p->diff)
        p->diff = diff_in(text, text + len);
    if (p->diff) {
        free(p->source);
        p->source = NULL;
    }
    if (!p->diff && !p->source)
        return cut_err_set(e, "the reply has neither a unified diff nor %s", what);
    p->move = (cut_move)move;
    p->gain = stated_gain(text);
    return 0;
}

int cut_llm_reply_parse(const char *text, cut_llm_pick *p, cut_err *e)
{
    return parse_reply(text, "__global__", "a fenced CUDA source with a __global__ function", p, e);
}

int cut_llm_reply_parse_triton(const char *text, cut_llm_pick *p, cut_err *e)
{
    return parse_reply(text, "triton.jit", "a fenced Python module with a @triton.jit function", p, e);
}
