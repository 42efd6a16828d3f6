/* libFuzzer target: the one record line of version 2 (cut_trial_parse, include/cutune/record.h) on one line of
 * arbitrary bytes, with a kernel spec's schedule parser ({"tpl":"tunables","BX":v,"BY":v}, each value one of its
 * tunable's list), and cut_trial_log_load on the same bytes as a whole log.
 *
 * Invariants:
 *   - failure returns -1 with a sentence and leaves the output untouched;
 *   - success: the trial written again (cut_rec_add_trial, the writer every op shares) parses to the same numbers,
 *     and writing that gives the very same text (strings are cleaned to valid UTF-8 once, then stay);
 *   - the tolerant loader never fails on readable bytes: trials + unreadable lines never exceed the lines. */
#include "cutune/record.h"
#include "fuzz_common.h"
#include "record/json.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[2] = {"BX", "BY"};
static const int values[2][3] = {{8, 16, 32}, {1, 2, 4}};

static int parse_sched(const void *ctx, const void *obj, cut_sched *out, cut_err *e)
{
    (void)ctx;
    const cJSON *o = obj, *tpl = cJSON_GetObjectItemCaseSensitive(o, "tpl");
    if (!cJSON_IsObject(o) || !cJSON_IsString(tpl) || strcmp(tpl->valuestring, "tunables") != 0)
        return cut_err_set(e, "not tunables");
    memset(out, 0, sizeof *out);
    for (int i = 0; i < 2; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, names[i]);
        int at = -1;
        for (int j = 0; j < 3 && cJSON_IsNumber(v); j++)
            if (v->valuedouble == values[i][j])
                at = j;
        if (at < 0)
            return cut_err_set(e, "tunable %s missing or off its list", names[i]);
        out->k[i] = at;
    }
    return 0;
}

/* The line of trial t (kernel op, this target's tunables) into b. */
static void write_line(const cut_trial *t, cut_buf *b)
{
    cJSON *root = cJSON_CreateObject();
    CHECK(root);
    cJSON_AddNumberToObject(root, "v", CUT_TRIAL_VERSION);
    cJSON_AddStringToObject(root, "op", "kernel");
    cJSON_AddNumberToObject(root, "trial", t->trial);
    cJSON *s = cJSON_AddObjectToObject(root, "sched");
    cJSON_AddStringToObject(s, "tpl", "tunables");
    for (int i = 0; i < 2; i++)
        cJSON_AddNumberToObject(s, names[i], values[i][t->sched.k[i]]);
    cut_rec_add_trial(root, t, 0);
    cut_rec_print(root, b);
}

static void round_trip(const cut_trial *t1)
{
    cut_buf b1, b2;
    cut_buf_init(&b1);
    cut_buf_init(&b2);
    write_line(t1, &b1);
    CHECK(b1.len > 0 && b1.data[b1.len - 1] == '\n' && memchr(b1.data, '\n', b1.len - 1) == NULL);
    cut_trial *t2 = malloc(sizeof *t2);
    CHECK(t2);
    cut_err e = {{0}};
    if (cut_trial_parse(b1.data, b1.len, "kernel", parse_sched, NULL, t2, &e) != 0) {
        fprintf(stderr, "a written trial was rejected (%s): %.*s\n", e.msg, (int)b1.len, b1.data);
        abort();
    }
    CHECK(t2->trial == t1->trial && t2->status == t1->status && t2->repeats == t1->repeats);
    CHECK(t2->regs == t1->regs && t2->spills == t1->spills && memcmp(t2->sched.k, t1->sched.k, 2 * sizeof(int)) == 0);
    write_line(t2, &b2);
    CHECK(b1.len == b2.len && memcmp(b1.data, b2.data, b1.len) == 0);
    free(t2);
    cut_buf_free(&b1);
    cut_buf_free(&b2);
}

static void load_as_file(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/fuzz_trial_log_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return;
    CHECK(write(fd, data, size) == (ssize_t)size);
    close(fd);
    cut_trial *out = NULL;
    int n = 0, extra = 0;
    cut_err e = {{0}};
    CHECK(cut_trial_log_load(path, "kernel", parse_sched, NULL, &out, &n, &extra, &e) == 0);
    size_t lines = 0;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    CHECK((size_t)n + (size_t)extra <= lines);
    free(out);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cut_trial *t1 = malloc(sizeof *t1);
    CHECK(t1);
    memset(t1, 0xa5, sizeof *t1);
    cut_err e = {{0}};
    int rc = cut_trial_parse((const char *)data, size, "kernel", parse_sched, NULL, t1, &e);
    if (rc != 0) {
        CHECK(rc == -1 && e.msg[0] != 0);
        const unsigned char *p = (const unsigned char *)t1;
        for (size_t i = 0; i < sizeof *t1; i++)
            CHECK(p[i] == 0xa5);
    } else {
        round_trip(t1);
    }
    free(t1);
    load_as_file(data, size);
    return 0;
}
