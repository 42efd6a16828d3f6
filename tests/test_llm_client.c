/* cutune's OpenAI-compatible client (cutune/llm.h) against a scripted server on loopback (tests/llm_server.py): a
 * good reply and its usage, the request it sent, 429 with Retry-After then success, 5xx retried with backoff and
 * given up, a reply slower than the timeout, a 10 MB reply, malformed JSON, an error body that echoes the key
 * (redacted), the request budget, the Responses API; and the key never in an error. Also the LLM generator's prompt
 * and reply for a Triton spec (test_llm_gen_triton). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/kstate.h"
#include "cutune/llm.h"
#include "cutune/llm_gen.h"
#include "cutune/util.h"
#include "testutil.h"

#include <cjson/cJSON.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KEY "sk-test-cutune-0123456789abcdef"

typedef struct server {
    pid_t pid;
    char url[128], log[1024];
} server;

/* Starts llm_server.py with the replies in script (JSON); fills s. */
static void server_start(const char *script, server *s)
{
    char *dir = tu_tmpdir("llm_server");
    char spath[1024], port[1024];
    snprintf(spath, sizeof spath, "%s/script.json", dir);
    snprintf(port, sizeof port, "%s/port", dir);
    snprintf(s->log, sizeof s->log, "%s/requests.jsonl", dir);
    cut_err e = {{0}};
    assert_int_equal(cut_write_file_atomic(spath, script, strlen(script), &e), 0);
    const char *fixtures = getenv("CUTUNE_FIXTURES");
    assert_non_null(fixtures);
    char py[1024];
    snprintf(py, sizeof py, "%s/../llm_server.py", fixtures);
    s->pid = fork();
    assert_true(s->pid >= 0);
    if (s->pid == 0) {
        execlp("python3", "python3", py, spath, port, s->log, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500 && access(port, F_OK) != 0; i++)
        usleep(20000);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(cut_read_file(port, &text, &len, &e), 0);
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d/v1", atoi(text));
    free(text);
    free(dir);
}

static void server_stop(server *s)
{
    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
}

static cut_llm_client *client(const server *s, int responses, double timeout, int retries, long budget)
{
    cut_llm_cfg cfg = {.base_url = s->url, .model = "test-model", .responses_api = responses, .timeout_s = timeout,
                       .max_retries = retries, .backoff_s = 0.05, .max_requests = budget};
    cut_err e = {{0}};
    cut_llm_client *c = cut_llm_client_new(&cfg, &e);
    if (!c)
        fail_msg("client: %s", e.msg);
    return c;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static int setup(void **state)
{
    (void)state;
    setenv("OPENAI_API_KEY", KEY, 1);
    unsetenv("OPENAI_BASE_URL");
    return 0;
}

static void test_good_and_request(void **state)
{
    (void)state;
    server s;
    server_start("[{\"text\": \"MOVE: change_block_sizes\"}]", &s);
    cut_llm_client *c = client(&s, 0, 10, 0, 0);
    char *text = NULL;
    cut_err e = {{0}};
    assert_int_equal(cut_llm_ask(c, "be brief", "the kernel", &text, &e), 0);
    assert_string_equal(text, "MOVE: change_block_sizes");
    free(text);
    const cut_llm_usage u = cut_llm_client_usage(c);
    assert_int_equal(u.requests, 1);
    assert_int_equal(u.retries, 0);
    assert_int_equal(u.prompt_tokens, 11);
    assert_int_equal(u.completion_tokens, 5);
    /* what was sent: the Chat Completions path, the key as a bearer token, the model and both messages */
    char *log = NULL;
    size_t len;
    assert_int_equal(cut_read_file(s.log, &log, &len, &e), 0);
    assert_non_null(strstr(log, "\"path\": \"/v1/chat/completions\""));
    assert_non_null(strstr(log, "\"auth\": \"Bearer " KEY "\""));
    assert_non_null(strstr(log, "\\\"model\\\":\\\"test-model\\\""));
    assert_non_null(strstr(log, "\\\"role\\\":\\\"system\\\",\\\"content\\\":\\\"be brief\\\""));
    assert_non_null(strstr(log, "\\\"role\\\":\\\"user\\\",\\\"content\\\":\\\"the kernel\\\""));
    free(log);
    cut_llm_client_free(c);
    /* the token budget: the first request's 16 tokens pass 10, so a second is not sent */
    cut_llm_cfg cfg = {.base_url = s.url, .model = "test-model", .timeout_s = 10, .max_tokens = 10};
    c = cut_llm_client_new(&cfg, &e);
    assert_non_null(c);
    assert_int_equal(cut_llm_ask(c, "be brief", "the kernel", &text, &e), 0);
    free(text);
    text = NULL;
    assert_int_equal(cut_llm_ask(c, "be brief", "the kernel", &text, &e), -1);
    assert_null(text);
    assert_non_null(strstr(e.msg, "token budget (10 tokens) is spent"));
    assert_int_equal(cut_llm_client_usage(c).requests, 1);
    cut_llm_client_free(c);
    server_stop(&s);
}

static void test_retries(void **state)
{
    (void)state;
    server s;
    /* 429 with Retry-After 1, then 503, then success */
    server_start("[{\"status\": 429, \"body\": \"{}\", \"retry_after\": 1}, {\"status\": 503, \"body\": \"busy\"},"
                 " {\"text\": \"ok\"}]",
                 &s);
    cut_llm_client *c = client(&s, 0, 10, 4, 0);
    char *text = NULL;
    cut_err e = {{0}};
    const double t0 = now();
    assert_int_equal(cut_llm_ask(c, "s", "u", &text, &e), 0);
    assert_true(now() - t0 >= 0.95); /* Retry-After honoured */
    assert_string_equal(text, "ok");
    free(text);
    assert_int_equal(cut_llm_client_usage(c).requests, 3);
    assert_int_equal(cut_llm_client_usage(c).retries, 2);
    /* every further reply is the last: give up after max_retries + 1 attempts on a 500 */
    cut_llm_client_free(c);
    server_stop(&s);
    server_start("[{\"status\": 500, \"body\": \"oops\"}]", &s);
    c = client(&s, 0, 10, 2, 0);
    assert_int_equal(cut_llm_ask(c, "s", "u", &text, &e), -1);
    assert_null(text);
    assert_non_null(strstr(e.msg, "gave up after 3 attempts"));
    assert_non_null(strstr(e.msg, "HTTP 500"));
    assert_int_equal(cut_llm_client_usage(c).requests, 3);
    /* the budget: no request beyond it */
    cut_llm_client_free(c);
    c = client(&s, 0, 10, 5, 2);
    assert_int_equal(cut_llm_ask(c, "s", "u", &text, &e), -1);
    assert_non_null(strstr(e.msg, "budget (2) is spent"));
    assert_int_equal(cut_llm_client_usage(c).requests, 2);
    cut_llm_client_free(c);
    server_stop(&s);
}

static void test_bad_replies(void **state)
{
    (void)state;
    server s;
    server_start("[{\"delay_s\": 3, \"text\": \"late\"}, {\"bytes\": 10485760}, {\"body\": \"{not json\"},"
                 " {\"status\": 400, \"body\": \"{\\\"error\\\": {\\\"message\\\": \\\"bad key " KEY "\\\"}}\"},"
                 " {\"body\": \"{\\\"choices\\\": []}\"}]",
                 &s);
    cut_llm_client *c = client(&s, 0, 1, 0, 0);
    char *text = NULL;
    cut_err e = {{0}};
    const double t0 = now();
    assert_int_equal(cut_llm_ask(c, "s", "u", &text, &e), -1); /* slower than the 1 s timeout */
    assert_true(now() - t0 < 2.9);
    assert_non_null(strstr(e.msg, "imeout"));
    assert_int_equal(cut_llm_ask(c, "s", "u", &text, &e), -1); /* 10 MB */
    assert_non_null(strstr(e.msg, "passed"));
    assert_int_equal(cut_llm_ask(c, "s", "u", &text, &e), -1);
    assert_non_null(strstr(e.msg, "not JSON"));
    assert_int_equal(cut_llm_ask(c, "s", "u", &text, &e), -1); /* 400, not retried, the echoed key redacted */
    assert_non_null(strstr(e.msg, "HTTP 400"));
    assert_non_null(strstr(e.msg, CUT_REDACTED));
    assert_null(strstr(e.msg, KEY));
    assert_int_equal(cut_llm_ask(c, "s", "u", &text, &e), -1);
    assert_non_null(strstr(e.msg, "no text"));
    assert_null(text);
    cut_llm_client_free(c);
    server_stop(&s);
}

static void test_responses_api_and_setup(void **state)
{
    (void)state;
    server s;
    server_start("[{\"body\": \"{\\\"output_text\\\": \\\"MOVE: cache_policy_cg\\\", \\\"usage\\\": "
                 "{\\\"input_tokens\\\": 3, \\\"output_tokens\\\": 4}}\"}]",
                 &s);
    cut_llm_client *c = client(&s, 1, 10, 0, 0);
    assert_non_null(strstr(cut_llm_client_url(c), "/v1/responses"));
    char *text = NULL;
    cut_err e = {{0}};
    assert_int_equal(cut_llm_ask(c, "sys", "usr", &text, &e), 0);
    assert_string_equal(text, "MOVE: cache_policy_cg");
    free(text);
    assert_int_equal(cut_llm_client_usage(c).completion_tokens, 4);
    char *log = NULL;
    size_t len;
    assert_int_equal(cut_read_file(s.log, &log, &len, &e), 0);
    assert_non_null(strstr(log, "\\\"instructions\\\":\\\"sys\\\",\\\"input\\\":\\\"usr\\\""));
    free(log);
    cut_llm_client_free(c);
    server_stop(&s);
    /* no key, no model: refused up front */
    unsetenv("OPENAI_API_KEY");
    cut_llm_cfg cfg = {.model = "m"};
    assert_null(cut_llm_client_new(&cfg, &e));
    assert_non_null(strstr(e.msg, "no API key: set OPENAI_API_KEY"));
    setenv("OPENAI_API_KEY", KEY, 1);
    cfg.model = NULL;
    assert_null(cut_llm_client_new(&cfg, &e));
    assert_non_null(strstr(e.msg, "no LLM model"));
    /* nothing refused above said the key */
    assert_null(strstr(e.msg, KEY));
}

/* The generator on a Triton spec (cutune/llm_gen.h): the Triton system prompt (the moves in Triton's terms, kernel.py
 * in a ```python block), and a reply with the whole new module in a ```python block becomes a proposal whose diff
 * gives that module. */
static const char triton_spec[] =
    "{\"name\": \"tcopy\", \"language\": \"triton\", \"entry\": \"copy_kernel\",\n"
    " \"source\": \"import triton\\nimport triton.language as tl\\n\\n@triton.jit\\n"
    "def copy_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):\\n    row = tl.program_id(0)\\n"
    "    offs = tl.arange(0, BLOCK)\\n    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols)\\n"
    "    tl.store(y_ptr + row * n_cols + offs, x, mask=offs < n_cols)\\n\",\n"
    " \"sizes\": {\"ROWS\": 4, \"COLS\": 100},\n"
    " \"tunables\": {\"BLOCK\": [128, 256], \"num_warps\": [4, 8]},\n"
    " \"launch\": {\"grid\": [\"ROWS\"]},\n"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"ROWS\", \"COLS\"], \"init\": \"randn\", \"seed\": 1}],\n"
    " \"outputs\": [{\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [\"ROWS\", \"COLS\"]}],\n"
    " \"scalars\": [{\"name\": \"n_cols\", \"dtype\": \"i32\", \"value\": \"COLS\"}],\n"
    " \"args\": [\"x\", \"y\", \"n_cols\"], \"tolerance\": {\"atol\": 0, \"rtol\": 0}}";

static void test_llm_gen_triton(void **state)
{
    (void)state;
    cut_kspec k;
    cut_err e = {{0}};
    if (cut_kspec_parse(triton_spec, strlen(triton_spec), NULL, &k, &e) != 0)
        fail_msg("%s", e.msg);
    char *src = cut_kstate_materialise(&k, NULL);
    char *module = cut_rule_triton_cache_cg(src);
    assert_non_null(module);
    /* the script: one reply, the new module in a ```python block */
    cut_buf reply;
    cut_buf_init(&reply);
    cut_buf_printf(&reply, "MOVE: cache_policy_cg GAIN: 0.1\nThe loads bypass L1:\n```python\n%s```\n", module);
    cJSON *script = cJSON_CreateArray(), *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "text", reply.data);
    cJSON_AddItemToArray(script, r);
    char *json = cJSON_PrintUnformatted(script);
    cJSON_Delete(script);
    cut_buf_free(&reply);
    server s;
    server_start(json, &s);
    free(json);
    cut_llm_gen_cfg cfg = {.api = {.base_url = s.url, .model = "test-model", .timeout_s = 10, .max_retries = 0},
                           .per_expansion = 1};
    cut_cand_gen *g = cut_llm_gen_new(&cfg, &e);
    if (!g) {
        server_stop(&s);
        fail_msg("%s", e.msg);
    }
    char *dir = tu_tmpdir("llm_gen_triton");
    cut_proposal p[4];
    const int n = g->propose(g->ctx, &k, src, NULL, dir, p, 4, &e);
    char *log = NULL;
    size_t len;
    server_stop(&s); /* before any assertion: a server left running holds ctest's output open */
    assert_int_equal(cut_read_file(s.log, &log, &len, &e), 0);
    assert_int_equal(n, 1);
    assert_int_equal(p[0].move, CUT_MV_CACHE_CG);
    char *out = NULL;
    if (cut_patch_apply(src, p[0].diff, dir, &out, &e) != 0)
        fail_msg("%s", e.msg);
    assert_string_equal(out, module);
    free(out);
    cut_proposal_free(&p[0]);
    /* what was asked: the Triton system prompt and the module as kernel.py */
    assert_non_null(strstr(log, "You optimize one Triton kernel"));
    assert_non_null(strstr(log, "eviction_policy"));
    assert_non_null(strstr(log, "--- a/kernel.py"));
    assert_non_null(strstr(log, "kernel.py:\\\\n```python\\\\n# cutune: tunables"));
    assert_null(strstr(log, "kernel.cu"));
    assert_null(strstr(log, "dynamic shared memory"));
    free(log);
    cut_cand_gen_free(g);
    free(dir);
    free(module);
    free(src);
    cut_kspec_free(&k);
}

int main(void)
{
    if (system("python3 -c 'import http.server' >/dev/null 2>&1") != 0) {
        printf("python3 is missing: skipping the LLM client tests\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_and_request),
        cmocka_unit_test(test_retries),
        cmocka_unit_test(test_bad_replies),
        cmocka_unit_test(test_responses_api_and_setup),
        cmocka_unit_test(test_llm_gen_triton),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
