/* The log callback (cutune/log.h): a handler gets each message with its level and ctx, installing one returns the
 * previous, NULL restores the default; long messages arrive whole; the default handler writes messages verbatim to
 * stderr and drops debug ones; the tuning loop's progress line is an info message, a plain line (no "\r") when a
 * handler other than the default one is installed; library diagnostics (a malformed log line) go through it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/log.h"
#include "record/json.h"
#include <cjson/cJSON.h>
#include "cutune/report.h"
#include "cutune/tune.h"
#include "pipeline/cstream.h"
#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct captured {
    int n;
    cut_log_level level[8];
    char msg[8][8192];
} captured;

static void capture(cut_log_level level, const char *msg, void *ctx)
{
    captured *c = ctx;
    if (c->n < 8) {
        c->level[c->n] = level;
        snprintf(c->msg[c->n], sizeof c->msg[c->n], "%s", msg);
    }
    c->n++;
}

static void other(cut_log_level level, const char *msg, void *ctx)
{
    (void)level, (void)msg, (void)ctx;
}

static void test_handler_and_previous(void **state)
{
    (void)state;
    captured c = {0};
    cut_log_handler prev = cut_log_set_handler(capture, &c);
    assert_ptr_equal(prev.fn, cut_log_default_handler);
    cut_log(CUT_LOG_WARN, "cutune: %d malformed line(s) of %s skipped\n", 3, "x.json");
    cut_log(CUT_LOG_DEBUG, "%s", "details");
    assert_int_equal(c.n, 2);
    assert_int_equal(c.level[0], CUT_LOG_WARN);
    assert_string_equal(c.msg[0], "cutune: 3 malformed line(s) of x.json skipped\n");
    assert_int_equal(c.level[1], CUT_LOG_DEBUG);
    assert_string_equal(c.msg[1], "details");
    assert_false(cut_log_tty()); /* not the default handler: no line rewriting */

    cut_log_handler mine = cut_log_set_handler(other, NULL);
    assert_ptr_equal(mine.fn, capture);
    assert_ptr_equal(mine.ctx, &c);
    cut_log(CUT_LOG_ERROR, "lost\n");
    assert_int_equal(c.n, 2);
    cut_log_handler back = cut_log_set_handler(NULL, &c); /* NULL: the default handler again (ctx ignored) */
    assert_ptr_equal(back.fn, other);
    cut_log_handler def = cut_log_set_handler(prev.fn, prev.ctx);
    assert_ptr_equal(def.fn, cut_log_default_handler);
    assert_null(def.ctx);

    assert_string_equal(cut_log_level_name(CUT_LOG_ERROR), "error");
    assert_string_equal(cut_log_level_name(CUT_LOG_WARN), "warn");
    assert_string_equal(cut_log_level_name(CUT_LOG_INFO), "info");
    assert_string_equal(cut_log_level_name(CUT_LOG_DEBUG), "debug");
    assert_string_equal(cut_log_level_name((cut_log_level)9), "?");
}

static void test_long_message(void **state)
{
    (void)state;
    char big[6000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    captured *c = calloc(1, sizeof *c);
    cut_log_handler prev = cut_log_set_handler(capture, c);
    cut_log(CUT_LOG_INFO, "<%s>", big);
    cut_log_set_handler(prev.fn, prev.ctx);
    assert_int_equal(c->n, 1);
    assert_int_equal(strlen(c->msg[0]), sizeof big - 1 + 2);
    assert_int_equal(c->msg[0][0], '<');
    assert_int_equal(c->msg[0][sizeof big], '>');
    free(c);
}

/* Runs fn with stderr redirected into a file and returns what was written there (caller frees). */
static char *stderr_of(void (*fn)(void))
{
    char *dir = tu_tmpdir("test_log");
    assert_non_null(dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *text = calloc(1, 8192);
    size_t n = fread(text, 1, 8191, f);
    text[n] = '\0';
    fclose(f);
    free(dir);
    return text;
}

static void default_messages(void)
{
    cut_log(CUT_LOG_ERROR, "cutune: %s\n", "an error");
    cut_log(CUT_LOG_DEBUG, "never shown\n");
    cut_log(CUT_LOG_INFO, "no newline");
}

static void test_default_handler_verbatim(void **state)
{
    (void)state;
    char *text = stderr_of(default_messages);
    assert_string_equal(text, "cutune: an error\nno newline");
    free(text);
}

static void test_progress_through_handler(void **state)
{
    (void)state;
    cut_tune_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.progress = 1;
    captured c = {0};
    cut_log_handler prev = cut_log_set_handler(capture, &c);
    cut_progress p = {0};
    cut_tune_progress(&cfg, &p, "case 1/2", 10, 100, 1, 123.45, 2.5, 1);
    cut_tune_progress(&cfg, &p, "case 1/2", 10, 100, 1, 123.45, 2.6, 1); /* the same count again: not twice */
    cut_tune_progress(&cfg, &p, "case 1/2", 12, 100, 1, 123.45, 2.5, 0); /* within 10 s of the last: not yet */
    cfg.progress = 0;
    cut_tune_progress(&cfg, &p, "case 1/2", 20, 100, 1, 123.45, 2.5, 1); /* progress off: nothing */
    cut_log_set_handler(prev.fn, prev.ctx);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.level[0], CUT_LOG_INFO);
    assert_string_equal(c.msg[0],
                        "case 1/2 | trials 10/100 | failed 1 | best 123.5 GFLOP/s | 2.50 trials/s | ETA 36 s\n");
}

/* A library diagnostic: a GEMM log with a malformed line, loaded for the report, warns through the handler. */
static void test_library_diagnostic(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("test_log_report");
    assert_non_null(dir);
    char rec[4200], res[4200], cmd[9000];
    snprintf(rec, sizeof rec, "%s/rec", dir);
    snprintf(res, sizeof res, "%s/res", dir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' '%s' && echo 'not json' > '%s/gemm_nn_fp32_M_8_N_8_K_8.json'", rec, res,
             rec);
    assert_int_equal(system(cmd), 0);
    captured c = {0};
    cut_log_handler prev = cut_log_set_handler(capture, &c);
    cut_err e = {{0}};
    cut_gemm_report_row *rows = NULL;
    int n = cut_gemm_report_collect(rec, res, &rows, &e);
    cut_log_set_handler(prev.fn, prev.ctx);
    free(rows);
    assert_true(n >= 0);
    assert_true(c.n >= 1);
    int warned = 0;
    for (int i = 0; i < c.n && i < 8; i++)
        warned |= c.level[i] == CUT_LOG_WARN && strncmp(c.msg[i], "cutune report: ", 15) == 0;
    if (!warned)
        fail_msg("no 'cutune report:' warning; first message: %s", c.msg[0]);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

#define TEST_KEY "sk-test-0123456789abcdefXYZ"

/* Secrets (issue 15): an API key in the environment never reaches a log message, an error message or a record line,
 * wherever it is formatted into one. */
static void test_secrets_redacted(void **state)
{
    (void)state;
    captured c = {0};
    cut_log_handler prev = cut_log_set_handler(capture, &c);
    cut_log(CUT_LOG_ERROR, "POST https://api.example/v1 with key %s failed; key again: %s.\n", TEST_KEY, TEST_KEY);
    cut_log_set_handler(prev.fn, prev.ctx);
    assert_int_equal(c.n, 1);
    assert_null(strstr(c.msg[0], "0123456789abcdef"));
    assert_string_equal(c.msg[0], "POST https://api.example/v1 with key [redacted] failed; key again: [redacted].\n");
    cut_err e = {{0}};
    cut_err_set(&e, "LLM request refused (key %s)", TEST_KEY);
    assert_string_equal(e.msg, "LLM request refused (key [redacted])");
    cut_err_set(&e, "inner %s", TEST_KEY);
    cut_err_wrap(&e, "outer %s", TEST_KEY);
    assert_null(strstr(e.msg, "0123456789abcdef"));
    cJSON *o = cJSON_CreateObject();
    cut_rec_add_str(o, "error", "a trial's message quoting " TEST_KEY);
    char *text = cJSON_PrintUnformatted(o);
    assert_null(strstr(text, "0123456789abcdef"));
    assert_non_null(strstr(text, "[redacted]"));
    cJSON_free(text);
    cJSON_Delete(o);
}

int main(void)
{
    setenv("OPENAI_API_KEY", TEST_KEY, 1); /* before anything reads it (once) */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secrets_redacted),
        cmocka_unit_test(test_handler_and_previous),
        cmocka_unit_test(test_long_message),
        cmocka_unit_test(test_default_handler_verbatim),
        cmocka_unit_test(test_progress_through_handler),
        cmocka_unit_test(test_library_diagnostic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
