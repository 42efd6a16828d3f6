/* libFuzzer target: an LLM's reply (include/cutune/llm.h): the input as an API body (cut_llm_body_text) and, as a
 * NUL-terminated text, as the reply itself (cut_llm_reply_parse), then the text the body gave.
 *
 * Invariants:
 *   - a refused body or reply has a sentence and leaves nothing allocated (text NULL; pick empty);
 *   - a body's text is NUL-terminated; token counts are -1 or >= 0;
 *   - a pick has a canonical move and exactly one of diff and source; a diff starts with "--- ", has a "+++ " line
 *     and an "@@" hunk and ends with a newline; a source has a __global__ and no fence line;
 *   - a pick's gain is within [CUT_LLM_MIN_GAIN, CUT_LLM_MAX_GAIN] (NaN fails the comparison). */
#include "cutune/llm.h"
#include "fuzz_common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_reply(const char *text)
{
    cut_llm_pick p;
    cut_err e = {{0}};
    if (cut_llm_reply_parse(text, &p, &e) != 0) {
        CHECK(e.msg[0] != 0);
        CHECK(p.diff == NULL && p.source == NULL);
        return;
    }
    CHECK((unsigned)p.move < CUT_MV_COUNT);
    CHECK(p.gain >= CUT_LLM_MIN_GAIN && p.gain <= CUT_LLM_MAX_GAIN);
    CHECK((p.diff == NULL) != (p.source == NULL));
    if (p.diff) {
        const size_t n = strlen(p.diff);
        CHECK(strncmp(p.diff, "--- ", 4) == 0 && strstr(p.diff, "\n+++ ") && strstr(p.diff, "\n@@"));
        CHECK(n > 0 && p.diff[n - 1] == '\n');
    } else {
        CHECK(strstr(p.source, "__global__") != NULL);
    }
    cut_llm_pick_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = NULL;
    long pt = 0, ct = 0;
    cut_err e = {{0}};
    if (cut_llm_body_text((const char *)data, size, &text, &pt, &ct, &e) != 0) {
        CHECK(e.msg[0] != 0 && text == NULL);
    } else {
        CHECK(text != NULL && pt >= -1 && ct >= -1);
        check_reply(text);
        free(text);
    }
    char *raw = malloc(size + 1);
    CHECK(raw);
    memcpy(raw, data, size);
    raw[size] = '\0';
    check_reply(raw);
    free(raw);
    return 0;
}
