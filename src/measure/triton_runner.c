/* cutune — the Triton runner (issue 18): drives tools/triton_worker.py, one Python process per GPU (or Triton's
 * interpreter on the CPU), through JSON lines on its stdin and stdout (docs/triton_worker.md).
 *
 * The runner keeps a private folder (mkdtemp under $TMPDIR, removed with the runner): each held work's input sets and
 * references as raw files (work/wN/, written once), each call's module (kN.py), the worker's outputs (out/: captured
 * outputs, PTX) and the worker's stderr (worker.log, appended across restarts). It holds up to CUT_HELD_MAX works
 * (held.h), each known to the worker by its key "wN": a prepare of a work it holds writes nothing and sends only its
 * prepare request again, which the worker, holding that key too, takes as a select. Each work's prepare request is
 * kept, so a fresh worker gets the selected work again. A call is one run request: its source's tunables header (the
 * Python assignments between CUT_KST_PY_BEGIN and CUT_KST_PY_END) becomes the launch's meta-parameters, num_warps
 * and num_stages its options; buffers go by name, scalars by value with their dtype. No reply within
 * timing.timeout_s: the worker is killed (TIMEOUT); its pipe closed: it died (FAULT, how it ended said); a reply with
 * "fatal" (a GPU context lost): the worker exits and the next call starts a fresh one. */
#include "cutune/kstate.h"
#include "cutune/log.h"
#include "cutune/measure.h"
#include "cutune/util.h"
#include "measure/child.h"
#include "measure/held.h"
#include "measure/triton_ahead.h"
#include "measure/triton_proc.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long a new worker may take to import Triton and say hello, or to take a work (prepare). */
#define START_TIMEOUT_S 120.0
/* How long an exiting worker gets before SIGKILL, and how long a killed one is waited for. */
#define EXIT_GRACE_S 2.0
#define REAP_LIMIT_S 30.0
/* The longest reply line read (replies name files; they are small). */
#define MAX_REPLY (1u << 20)

typedef struct tr_impl {
    char python[PATH_MAX], worker_py[PATH_MAX], cache_dir[PATH_MAX], dir[PATH_MAX];
    int device;            /* -1: the interpreter */
    int pid, to_w, from_w; /* pid 0: no worker */
    int starts;
    int prepared;          /* the live worker has the selected work selected */
    cut_held held;         /* the works kept, their prepare requests; the selected one is the prepared work */
    cut_prep_stats *prep;  /* the runner's counters */
    cut_tr_lines lines;    /* the worker's reply lines */
    long seq;
    cut_measure_env env;
    char target[64];       /* what Triton compiles for on the worker's GPU ("cuda:90:32"; "" under the interpreter) */
    int compile_jobs;      /* the compile pool's size (0: none) */
    cut_tr_ahead *ahead;   /* the compile pool, NULL until started (docs/triton_worker.md, "Compiling ahead") */
} tr_impl;

/* The selected work (NULL before the first prepare). */
static const cut_work *cur_work(const tr_impl *g)
{
    const cut_held_work *h = cut_held_cur(&g->held);
    return h ? &h->work : NULL;
}

/* ---- the worker process ---- */

/* Ends the worker: closes the pipes, SIGKILLs it when kill_now (else gives it EXIT_GRACE_S to exit first) and reaps
 * it; how (may be NULL) says how it ended. */
static void worker_stop(tr_impl *g, int kill_now, char *how, size_t n)
{
    cut_child_end(&g->pid, &g->to_w, &g->from_w, kill_now, EXIT_GRACE_S, REAP_LIMIT_S, "Triton worker", how, n);
    g->prepared = 0;
    cut_tr_lines_reset(&g->lines);
}

/* Starts `python worker_py --interpret | --device N` with pipes on its stdin and stdout, its stderr appended to
 * dir/worker.log. */
static int worker_spawn(tr_impl *g, cut_err *e)
{
    char log_path[PATH_MAX + 16], dev_s[16];
    snprintf(log_path, sizeof log_path, "%s/worker.log", g->dir);
    snprintf(dev_s, sizeof dev_s, "%d", g->device);
    char *argv[] = {g->python, g->worker_py, g->device < 0 ? "--interpret" : "--device", g->device < 0 ? NULL : dev_s,
                    NULL};
    if (cut_tr_spawn(argv, g->cache_dir, g->device < 0, log_path, &g->pid, &g->to_w, &g->from_w, e) != 0)
        return -1;
    cut_tr_lines_reset(&g->lines);
    g->starts++;
    return 0;
}

/* Writes line and a newline. 0; 1 when the worker closed its end (EPIPE, the SIGPIPE swallowed); -1 with e. */
static int send_line(tr_impl *g, const char *line, cut_err *e)
{
    const int err = cut_child_send(g->to_w, line, strlen(line), "\n", 1);
    if (err == 0)
        return 0;
    return err == EPIPE ? 1 : cut_err_set(e, "writing to the Triton worker failed: %s", strerror(err));
}

/* Reads one reply line before timeout_s passes. 1: *line (NUL-terminated, in g->lines, valid until the next read);
 * 0: end of file (the worker is gone); -1: error (e); -2: timeout. */
static int read_line(tr_impl *g, double timeout_s, char **line, cut_err *e)
{
    const double end = cut_now_s() + timeout_s;
    while (!cut_tr_lines_next(&g->lines, line)) {
        const double left = end - cut_now_s();
        if (left <= 0)
            return -2;
        struct pollfd p = {.fd = g->from_w, .events = POLLIN};
        const int pr = poll(&p, 1, (int)CUT_MIN(left * 1e3 + 1, 60e3));
        if (pr < 0 && errno != EINTR)
            return cut_err_set(e, "waiting for the Triton worker: poll failed: %s", strerror(errno));
        if (pr <= 0)
            continue;
        const long got = cut_tr_lines_read(&g->lines, g->from_w, MAX_REPLY);
        if (got == -2)
            return cut_err_set(e, "the Triton worker's reply is longer than %u bytes", MAX_REPLY);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return cut_err_set(e, "reading from the Triton worker failed: %s", strerror(errno));
        if (got == 0)
            return 0;
    }
    return 1;
}

/* One request and its reply: like read_line (1 with *reply, caller cJSON_Delete; 0 the worker is gone, also when
 * the request could not be written; -1 error; -2 timeout). */
static int request(tr_impl *g, const char *line, double timeout_s, cJSON **reply, cut_err *e)
{
    *reply = NULL;
    const int s = send_line(g, line, e);
    if (s != 0)
        return s > 0 ? 0 : -1;
    char *text = NULL;
    const int rc = read_line(g, timeout_s, &text, e);
    if (rc != 1)
        return rc;
    *reply = cJSON_Parse(text);
    if (!*reply || !cJSON_IsObject(*reply)) {
        cJSON_Delete(*reply);
        *reply = NULL;
        return cut_err_set(e, "the Triton worker replied with something that is not a JSON object: %.120s", text);
    }
    return 1;
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A number of a reply; null (a non-finite value) and absent give dflt. */
static double jnum(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* The last non-empty line of the worker's log into buf ("" when none). */
static void log_tail(const tr_impl *g, char *buf, size_t n)
{
    buf[0] = '\0';
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/worker.log", g->dir);
    char *text = NULL;
    size_t len = 0;
    if (cut_read_file(path, &text, &len, NULL) != 0)
        return;
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
        text[--len] = '\0';
    const char *last = strrchr(text, '\n');
    snprintf(buf, n, "%s", last ? last + 1 : text);
    free(text);
}

/* A failed start or prepare (rc from request, reply when rc is 1): the worker stopped, e a sentence. */
static int start_failed(tr_impl *g, const char *what, int rc, const cJSON *reply, cut_err *e)
{
    char why[CUT_ERR_LEN / 2], how[96], tail[160];
    if (rc == 1)
        snprintf(why, sizeof why, "%s", jstr(reply, "error") ? jstr(reply, "error") : "it did not say ok");
    else if (rc == -2)
        snprintf(why, sizeof why, "no reply within %g s", START_TIMEOUT_S);
    else if (rc == 0)
        snprintf(why, sizeof why, "it exited");
    else
        snprintf(why, sizeof why, "%s", e->msg);
    worker_stop(g, rc != 1, how, sizeof how);
    log_tail(g, tail, sizeof tail);
    return cut_err_set(e, "the Triton worker (%s %s%s) could not %s: %s (%s)%s%s", g->python, g->worker_py,
                       g->device < 0 ? " --interpret" : "", what, why, how, tail[0] ? "; its last words: " : "",
                       tail);
}

/* Sends the selected work's prepare request to the live worker; counts what it cost: a work the worker holds is a
 * select ("held"), else it loaded the work's files ("loaded_bytes"). */
static int worker_prepare(tr_impl *g, cut_err *e)
{
    cJSON *reply = NULL;
    const cut_held_work *h = cut_held_cur(&g->held);
    const int rc = request(g, h->line, START_TIMEOUT_S, &reply, e);
    if (rc == 1 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
        const int held = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "held"));
        const double bytes = jnum(reply, "loaded_bytes", 0);
        cJSON_Delete(reply);
        g->prep->held += held;
        g->prep->sent += !held;
        g->prep->bytes += bytes;
        cut_log(CUT_LOG_DEBUG, "Triton runner: work w%llu %s\n", (unsigned long long)h->id,
                held ? "held by the worker: selected" : "loaded by the worker");
        g->prepared = 1;
        return 0;
    }
    const int r = start_failed(g, "take the work", rc, reply, e);
    cJSON_Delete(reply);
    return r;
}

/* Starts a worker, says hello (the device's name kept for env) and sends the work when there is one. */
static int worker_start(tr_impl *g, cut_err *e)
{
    if (worker_spawn(g, e) != 0)
        return -1;
    cJSON *reply = NULL;
    const int rc = request(g, "{\"op\":\"hello\"}", START_TIMEOUT_S, &reply, e);
    if (rc != 1 || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
        const int r = start_failed(g, "start", rc, reply, e);
        cJSON_Delete(reply);
        return r;
    }
    const int interp = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "interpreter"));
    snprintf(g->env.backend, sizeof g->env.backend, interp ? "triton-interp" : "triton");
    snprintf(g->env.gpu_name, sizeof g->env.gpu_name, "%s", jstr(reply, "device") ? jstr(reply, "device") : "?");
    snprintf(g->target, sizeof g->target, "%s", jstr(reply, "target") ? jstr(reply, "target") : "");
    cJSON_Delete(reply);
    return cur_work(g) ? worker_prepare(g, e) : 0;
}

/* A live worker holding the kept work: (re)started as needed, once more on a fresh one if the old one is gone. */
static int worker_ready(tr_impl *g, cut_err *e)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!g->pid && worker_start(g, e) != 0)
            return -1;
        if (!cur_work(g) || g->prepared || worker_prepare(g, e) == 0)
            return 0;
    }
    return -1;
}

/* ---- prepare ---- */

/* The folder of held work h's files. */
static void work_dir(const tr_impl *g, const cut_held_work *h, char *buf, size_t n)
{
    snprintf(buf, n, "%s/work/w%llu", g->dir, (unsigned long long)h->id);
}

/* A held work evicted (held.h): its files go with it. */
static void evict_files(void *ctx, cut_held_work *h)
{
    char wdir[PATH_MAX + 32];
    work_dir(ctx, h, wdir, sizeof wdir);
    cut_remove_tree(wdir, NULL, NULL);
}

/* Held work h's prepare request (h->line), its files written under its folder (each buffer's input sets, or its
 * references): its key, and how many works the worker holds (as many as the runner). */
static int prepare_request(tr_impl *g, cut_held_work *h, cut_err *e)
{
    const cut_work *w = &h->work;
    char wdir[PATH_MAX + 32];
    work_dir(g, h, wdir, sizeof wdir);
    if (cut_mkdirs(wdir, e) != 0)
        return -1;
    cJSON *q = cJSON_CreateObject(), *bufs = cJSON_AddArrayToObject(q, "buffers");
    char key[32];
    snprintf(key, sizeof key, "w%llu", (unsigned long long)h->id);
    cJSON_AddStringToObject(q, "op", "prepare");
    cJSON_AddStringToObject(q, "key", key);
    cJSON_AddNumberToObject(q, "hold", CUT_HELD_MAX);
    for (int i = 0; i < w->nbufs; i++) {
        const cut_work_buf *b = &w->bufs[i];
        for (int j = 0; j < i; j++)
            if (!strcmp(w->bufs[j].name, b->name)) {
                cJSON_Delete(q);
                return cut_err_set(e, "the Triton runner names buffers: two are named '%s'", b->name);
            }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(bufs, o);
        cJSON_AddStringToObject(o, "name", b->name);
        cJSON_AddStringToObject(o, "dtype", cut_elem_name(b->dtype));
        cJSON_AddItemToObject(o, "shape", cJSON_CreateArray());
        cJSON_AddItemToArray(cJSON_GetObjectItem(o, "shape"), cJSON_CreateNumber((double)b->elems));
        cJSON_AddBoolToObject(o, "is_output", b->is_output);
        if (b->is_output && b->zero_init)
            cJSON_AddBoolToObject(o, "accumulate", 1);
        if (!b->data[0])
            continue; /* an output without references: capture */
        cJSON *files = cJSON_AddArrayToObject(o, b->is_output ? "refs" : "inputs");
        for (int s = 0; s < 2; s++) {
            char path[PATH_MAX + 64];
            snprintf(path, sizeof path, "%s/b%d.%s%d.bin", wdir, i, b->is_output ? "ref" : "in", s);
            if (cut_write_file_atomic(path, b->data[s], b->elems * cut_elem_size(b->dtype), e) != 0) {
                cJSON_Delete(q);
                return cut_err_wrap(e, "the Triton runner's copy of buffer '%s'", b->name);
            }
            cJSON_AddItemToArray(files, cJSON_CreateString(path));
        }
    }
    cJSON_AddNumberToObject(q, "atol", w->atol);
    cJSON_AddNumberToObject(q, "rtol", w->rtol);
    cJSON_AddStringToObject(q, "check", cut_check_rule_name(w->check));
    free(h->line);
    h->line = cJSON_PrintUnformatted(q);
    cJSON_Delete(q);
    return 0;
}

/* Selects the work: a held one as it is (take: w's data freed), else kept (taken over, or a deep copy) in a slot of
 * its own, the least recently used evicted, its files written. Then the worker gets its prepare request: for a work
 * the worker holds too, a select. */
static int tr_prepare(cut_runner *r, cut_work *w, int take, cut_err *e)
{
    tr_impl *g = r->impl;
    int i = cut_held_find(&g->held, w);
    if (i >= 0 && take)
        cut_work_free(w);
    if (i < 0) {
        cut_work copy;
        r->work = NULL;
        if (cut_work_keep(w, take, &copy, e) != 0)
            return -1;
        i = cut_held_put(&g->held, &copy, evict_files, g);
        if (prepare_request(g, &g->held.slot[i], e) != 0) {
            evict_files(g, &g->held.slot[i]);
            cut_held_drop(&g->held, i);
            return -1;
        }
    }
    r->work = &g->held.slot[i].work;
    g->prepared = 0;
    if (worker_ready(g, e) == 0)
        return 0;
    worker_stop(g, 1, NULL, 0); /* once more on a fresh worker: the old one may have died since */
    return worker_ready(g, e);
}

/* ---- run ---- */

/* The tunables header of a Triton source: every "NAME = INTEGER" between CUT_KST_PY_BEGIN and CUT_KST_PY_END into
 * meta, num_warps and num_stages into opts instead. A source without the header has none. 0, or -1 with why. */
static int parse_meta(const char *src, cJSON *meta, cJSON *opts, char *why, size_t n)
{
    const char *p = strstr(src, CUT_KST_PY_BEGIN);
    if (!p)
        return 0;
    p = strchr(p, '\n');
    for (int line = 1; p; line++) {
        p++;
        const char *end = strchr(p, '\n');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len >= strlen(CUT_KST_PY_END) && !strncmp(p, CUT_KST_PY_END, strlen(CUT_KST_PY_END)))
            return 0;
        char name[CUT_WORK_NAME], text[128];
        long long v = 0;
        int used = 0;
        snprintf(text, sizeof text, "%.*s", (int)CUT_MIN(len, sizeof text - 1), p);
        const int blank = strspn(text, " \t\r") == strlen(text) || text[strspn(text, " \t")] == '#';
        if (!blank && (len >= sizeof text || sscanf(text, " %63[A-Za-z0-9_] = %lld %n", name, &v, &used) != 2 ||
                       text[used] != '\0' || (name[0] >= '0' && name[0] <= '9'))) {
            snprintf(why, n, "the tunables header's line %d is not NAME = INTEGER: '%.60s'", line, text);
            return -1;
        }
        if (!blank)
            cJSON_AddNumberToObject(strcmp(name, "num_warps") && strcmp(name, "num_stages") ? meta : opts, name,
                                    (double)v);
        p = end;
    }
    snprintf(why, n, "the tunables header has no end line ('%s')", CUT_KST_PY_END);
    return -1;
}

/* A scalar argument as the worker takes it: {"value": v, "dtype": d}, v exact for any integer (raw JSON). */
static cJSON *scalar_arg(const cut_call_arg *a)
{
    static const cut_elem by_size[9] = {CUT_EL_U8, CUT_EL_U8, CUT_EL_I32, CUT_EL_I32, CUT_EL_I32,
                                        CUT_EL_I64, CUT_EL_I64, CUT_EL_I64, CUT_EL_I64};
    const int typed = a->scalar_type > 0 && a->scalar_type <= CUT_EL_COUNT;
    const cut_elem d = typed ? (cut_elem)(a->scalar_type - 1) : by_size[CUT_MIN(a->size, 8u)];
    char text[64];
    if (d == CUT_EL_I32 || d == CUT_EL_I64 || d == CUT_EL_U8) {
        long long v = 0;
        if (a->size == 1) {
            v = a->bytes[0];
        } else if (a->size == 2) {
            int16_t x;
            memcpy(&x, a->bytes, 2);
            v = x;
        } else if (a->size == 4) {
            int32_t x;
            memcpy(&x, a->bytes, 4);
            v = x;
        } else {
            int64_t x;
            memcpy(&x, a->bytes, 8);
            v = x;
        }
        snprintf(text, sizeof text, "%lld", v);
    } else {
        const double x = cut_elem_get(d, a->bytes, 0);
        snprintf(text, sizeof text, isnan(x) ? "\"nan\"" : isinf(x) ? (x > 0 ? "\"inf\"" : "\"-inf\"") : "%.17g", x);
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "value", cJSON_CreateRaw(text));
    cJSON_AddStringToObject(o, "dtype", cut_elem_name(d));
    return o;
}

/* What the worker's JIT specialises a launch of call c on, as a JSON object: the entry, the header's meta-parameters,
 * num_warps and num_stages, the arguments (buffers by name; typed: {"pointer": dtype} instead, for a compile-only
 * worker, which holds no work). NULL with why (the call's own failure: COMPILE_ERROR). */
static cJSON *launch_json(const tr_impl *g, const cut_call *c, int typed, char *why, size_t n)
{
    cJSON *q = cJSON_CreateObject(), *meta = cJSON_CreateObject(), *opts = cJSON_CreateObject();
    if (parse_meta(c->src, meta, opts, why, n) != 0) {
        cJSON_Delete(q);
        cJSON_Delete(meta);
        cJSON_Delete(opts);
        return NULL;
    }
    cJSON_AddStringToObject(q, "entry", c->entry);
    cJSON_AddItemToObject(q, "meta", meta);
    for (cJSON *o = opts->child; o; o = o->next)
        cJSON_AddNumberToObject(q, o->string, o->valuedouble);
    cJSON_Delete(opts);
    cJSON *args = cJSON_AddArrayToObject(q, "args");
    for (int i = 0; i < c->nargs; i++) {
        const cut_call_arg *a = &c->args[i];
        cJSON *v;
        if (a->buf < 0) {
            v = scalar_arg(a);
        } else if (!typed) {
            v = cJSON_CreateString(cur_work(g)->bufs[a->buf].name);
        } else {
            v = cJSON_CreateObject();
            cJSON_AddStringToObject(v, "pointer", cut_elem_name(cur_work(g)->bufs[a->buf].dtype));
        }
        cJSON_AddItemToArray(args, v);
    }
    return q;
}

/* The run request for call c whose module is at module; NULL with why (the call's own failure: COMPILE_ERROR). */
static char *run_request(const cut_runner *r, const tr_impl *g, const cut_call *c, const char *module, char *why,
                         size_t n)
{
    cJSON *q = launch_json(g, c, 0, why, n);
    if (!q)
        return NULL;
    cJSON_AddStringToObject(q, "op", "run");
    cJSON_AddStringToObject(q, "module", module);
    cJSON *grid = cJSON_AddArrayToObject(q, "grid");
    for (int i = 0; i < 3; i++)
        cJSON_AddItemToArray(grid, cJSON_CreateNumber(c->grid[i]));
    cJSON *t = cJSON_AddObjectToObject(q, "timing");
    cJSON_AddNumberToObject(t, "warmup", r->timing.warmup);
    cJSON_AddNumberToObject(t, "min_repeats", r->timing.min_repeats);
    cJSON_AddNumberToObject(t, "max_repeats", r->timing.max_repeats);
    cJSON_AddNumberToObject(t, "min_total_ms", r->timing.min_total_ms);
    cJSON_AddBoolToObject(t, "flush_l2", r->timing.flush_l2);
    cJSON_AddBoolToObject(q, "capture", !cut_work_has_refs(cur_work(g)));
    char out_dir[PATH_MAX + 8];
    snprintf(out_dir, sizeof out_dir, "%s/out", g->dir);
    cJSON_AddStringToObject(q, "out_dir", out_dir);
    if (c->keep_dir)
        cJSON_AddStringToObject(q, "keep_dir", c->keep_dir);
    char *line = cJSON_PrintUnformatted(q);
    cJSON_Delete(q);
    return line;
}

/* The captured outputs a reply names ("outputs": {"y": [set0, set1]}) into outs. 0, or -1 with why. */
static int read_captured(const tr_impl *g, const cJSON *reply, cut_work_outputs *outs, char *why, size_t n)
{
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(reply, "outputs");
    const cut_work *w = cur_work(g);
    for (int i = 0; i < w->nbufs; i++) {
        const cut_work_buf *b = &w->bufs[i];
        if (!b->is_output)
            continue;
        const cJSON *pair = cJSON_GetObjectItemCaseSensitive(files, b->name);
        for (int s = 0; s < 2; s++) {
            const cJSON *p = cJSON_GetArrayItem(pair, s);
            char *data = NULL;
            size_t len = 0;
            cut_err fe = {{0}};
            if (!cJSON_IsString(p) || cut_read_file(p->valuestring, &data, &len, &fe) != 0 ||
                len != b->elems * cut_elem_size(b->dtype)) {
                snprintf(why, n, "the Triton worker's captured output '%s' (set %d) is missing or not %zu bytes%s%.120s",
                         b->name, s, b->elems * cut_elem_size(b->dtype), fe.msg[0] ? ": " : "", fe.msg);
                free(data);
                return -1;
            }
            outs->data[i][s] = data;
        }
    }
    return 0;
}

/* A reply's result into res; the worker stopped when the reply says the device is gone ("fatal"). */
static void take_reply(tr_impl *g, const cJSON *reply, cut_result *res)
{
    const char *status = jstr(reply, "status");
    const char *err = jstr(reply, "error");
    if (!status) { /* {"ok": false, "error": ...}: the worker could not take the request */
        res->status = CUT_ST_LAUNCH_ERROR;
        snprintf(res->error, sizeof res->error, "the Triton worker refused the call: %.200s", err ? err : "no reason");
        return;
    }
    const int st = cut_status_from_name(status);
    if (st < 0) {
        res->status = CUT_ST_FAULT;
        snprintf(res->error, sizeof res->error, "the Triton worker replied with an unknown status '%.60s'", status);
        return;
    }
    res->status = (cut_status)st;
    snprintf(res->error, sizeof res->error, "%s", err ? err : "");
    res->median_ms = jnum(reply, "median_ms", -1.0);
    res->min_ms = jnum(reply, "min_ms", -1.0);
    res->max_ms = jnum(reply, "max_ms", -1.0);
    res->repeats = (int)jnum(reply, "repeats", 0);
    res->max_abs_err = jnum(reply, "max_abs_err", INFINITY);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "fatal")))
        worker_stop(g, 0, NULL, 0); /* it exits 3: the next call starts a fresh one */
}

/* No reply (rc from request): the worker is stopped and the call's status says why. */
static void no_reply(tr_impl *g, int rc, double timeout_s, const cut_err *err, cut_result *res)
{
    char how[96];
    if (rc == -2) {
        worker_stop(g, 1, NULL, 0);
        res->status = CUT_ST_TIMEOUT;
        snprintf(res->error, sizeof res->error, "timeout after %g s", timeout_s);
    } else if (rc == 0) {
        worker_stop(g, 0, how, sizeof how);
        res->status = CUT_ST_FAULT;
        const char *why = g->device < 0 && !strncmp(how, "signal 11:", 10)
                              ? ": an out-of-bounds memory access (a guard page past a buffer), as a GPU faults"
                              : "";
        snprintf(res->error, sizeof res->error, "the Triton worker died (%s)%s", how, why);
    } else {
        worker_stop(g, 1, NULL, 0);
        res->status = CUT_ST_FAULT;
        snprintf(res->error, sizeof res->error, "Triton worker protocol error: %.200s", err->msg);
    }
}

/* ---- compiling ahead (triton_ahead.h) ---- */

/* The compile pool, on a GPU whose worker said its target: started once. When it cannot start, every launch
 * compiles in the worker as before (a warning says why). */
static void ahead_start(tr_impl *g)
{
    if (g->ahead || g->device < 0 || g->compile_jobs < 1 || !g->target[0])
        return;
    char dir[PATH_MAX + 8];
    snprintf(dir, sizeof dir, "%s/ahead", g->dir);
    cut_err e = {{0}};
    if (cut_mkdirs(dir, &e) != 0 ||
        !(g->ahead = cut_tr_ahead_new(g->python, g->worker_py, g->target, g->cache_dir, dir, g->compile_jobs, &e))) {
        cut_log(CUT_LOG_WARN, "Triton runner: no compiling ahead (the worker compiles every launch): %s\n", e.msg);
        g->compile_jobs = 0;
    }
}

/* The compile request of call c (malloc'd) and its key: what the worker's JIT specialises the launch on. NULL when
 * there is no pool, no source, no work held (it types the buffers: the same dtypes at every size set of a spec) or a
 * header that does not parse (the run says so). */
static char *ahead_request(const tr_impl *g, const cut_call *c, uint64_t *key)
{
    char why[160];
    const cut_work *w = cur_work(g);
    if (!g->ahead || !c->src || !w)
        return NULL;
    for (int i = 0; i < c->nargs; i++)
        if (c->args[i].buf >= w->nbufs)
            return NULL;
    cJSON *q = launch_json(g, c, 1, why, sizeof why);
    char *req = q ? cJSON_PrintUnformatted(q) : NULL;
    cJSON_Delete(q);
    if (req)
        *key = cut_tr_ahead_key(c->src, req);
    return req;
}

/* The runner's ahead(): call c queued on the compile pool. */
static void tr_ahead(cut_runner *r, const cut_call *c)
{
    tr_impl *g = r->impl;
    uint64_t key = 0;
    char *req = ahead_request(g, c, &key);
    if (req)
        cut_tr_ahead_submit(g->ahead, key, c->src, req);
    free(req);
}

/* Before call c runs: its compile ahead, when one was queued, finished first (the worker's JIT then finds it in the
 * cache). A failed one is left to the worker, which compiles the launch again and reports the failure as its own. */
static void ahead_wait(tr_impl *g, const cut_call *c, double timeout_s)
{
    uint64_t key = 0;
    char *req = ahead_request(g, c, &key), why[400];
    if (req && cut_tr_ahead_wait(g->ahead, key, timeout_s, why, sizeof why) < 0)
        cut_log(CUT_LOG_DEBUG, "Triton runner: a compile ahead failed (the run reports it): %s\n", why);
    free(req);
}

/* One call: its module written, one run request. -1 only for setup errors (no worker, the folder unwritable). */
static int run_one(cut_runner *r, const cut_call *c, const cut_run_opts *o, cut_result *res, cut_err *e)
{
    tr_impl *g = r->impl;
    cut_result_reset(res);
    cut_err ce = {{0}};
    if (cut_call_check(cur_work(g), c, &ce) != 0 || !c->src) {
        res->status = c->src ? CUT_ST_LAUNCH_ERROR : CUT_ST_COMPILE_ERROR;
        snprintf(res->error, sizeof res->error, "%.250s", c->src ? ce.msg : "the call has no Triton source");
        return 0;
    }
    char module[PATH_MAX + 32];
    snprintf(module, sizeof module, "%s/k%ld.py", g->dir, ++g->seq);
    char *line = run_request(r, g, c, module, res->error, sizeof res->error);
    if (!line) {
        res->status = CUT_ST_COMPILE_ERROR;
        return 0;
    }
    if (cut_write_file_atomic(module, c->src, strlen(c->src), e) != 0 || worker_ready(g, e) != 0) {
        free(line);
        unlink(module);
        return -1;
    }
    const double timeout_s = r->timing.timeout_s > 0 ? r->timing.timeout_s : 10.0;
    ahead_wait(g, c, timeout_s);
    cJSON *reply = NULL;
    cut_err err = {{0}};
    const int rc = request(g, line, timeout_s, &reply, &err);
    free(line);
    unlink(module);
    if (rc != 1) {
        no_reply(g, rc, timeout_s, &err, res);
        return 0;
    }
    take_reply(g, reply, res);
    if (res->status == CUT_ST_OK && o && o->outs && !cut_work_has_refs(cur_work(g)) &&
        read_captured(g, reply, o->outs, res->error, sizeof res->error) != 0) {
        cut_work_outputs_free(o->outs);
        res->status = CUT_ST_FAULT;
    }
    cJSON_Delete(reply);
    return 0;
}

static int tr_run(cut_runner *r, const cut_call *calls, int n, const cut_run_opts *o, cut_result *res, cut_err *e)
{
    tr_impl *g = r->impl;
    if (!cur_work(g))
        return cut_err_set(e, "Triton runner: run called before prepare");
    if (o && o->outs && n != 1)
        return cut_err_set(e, "Triton runner: captured outputs are for one call at a time (%d given)", n);
    if (o && o->energy)
        return cut_err_set(e, "Triton runner: energy is not measured for Triton kernels yet");
    if (o && o->outs)
        memset(o->outs, 0, sizeof *o->outs);
    return cut_runner_run_each(r, calls, n, o, res, run_one, e);
}

static const cut_measure_env *tr_env(cut_runner *r)
{
    return &((tr_impl *)r->impl)->env;
}

static void tr_destroy(cut_runner *r)
{
    if (!r)
        return;
    tr_impl *g = r->impl;
    if (g) {
        cut_tr_ahead_free(g->ahead);
        if (g->pid) {
            cut_err ignore;
            if (send_line(g, "{\"op\":\"quit\"}", &ignore) == 0)
                worker_stop(g, 0, NULL, 0);
            else
                worker_stop(g, 1, NULL, 0);
        }
        cut_held_free(&g->held);
        cut_tr_lines_free(&g->lines);
        if (g->dir[0])
            cut_remove_tree(g->dir, NULL, NULL);
        free(g);
    }
    free(r);
}

/* Caller frees with cut_runner_free. */
cut_runner *cut_runner_triton_new(const char *python, const char *worker_py, int device, const cut_timing *t,
                                  const char *cache_dir, int compile_jobs, cut_err *e)
{
    if (!python || !*python || !worker_py || !*worker_py || !cache_dir || !*cache_dir) {
        cut_err_set(e, "the Triton runner needs a Python, the worker script and a cache folder");
        return NULL;
    }
    if (access(worker_py, R_OK) != 0) {
        cut_err_set(e, "the Triton worker %s cannot be read: %s", worker_py, strerror(errno));
        return NULL;
    }
    tr_impl *g = cut_xcalloc(1, sizeof *g);
    cut_held_init(&g->held);
    g->device = device < 0 ? -1 : device;
    g->compile_jobs = compile_jobs;
    g->to_w = g->from_w = -1;
    if (snprintf(g->python, sizeof g->python, "%s", python) >= (int)sizeof g->python ||
        snprintf(g->worker_py, sizeof g->worker_py, "%s", worker_py) >= (int)sizeof g->worker_py ||
        snprintf(g->cache_dir, sizeof g->cache_dir, "%s", cache_dir) >= (int)sizeof g->cache_dir - 8) {
        cut_err_set(e, "the Triton runner's paths are too long");
        free(g);
        return NULL;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(g->dir, sizeof g->dir, "%s/cutune-triton-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g->dir)) {
        cut_err_set(e, "cannot create the Triton runner's folder %s: %s", g->dir, strerror(errno));
        free(g);
        return NULL;
    }
    snprintf(g->env.backend, sizeof g->env.backend, device < 0 ? "triton-interp" : "triton");
    g->env.sm_clock_mhz = -1;
    g->env.power_limit_w = -1.0;
    g->env.other_procs = -1;
    g->env.clock_events = -1;
    cut_runner *r = cut_xcalloc(1, sizeof *r);
    r->impl = g;
    g->prep = &r->prep;
    r->prepare = tr_prepare;
    r->run = tr_run;
    r->env = tr_env;
    r->destroy = tr_destroy;
    r->ahead = tr_ahead;
    if (t)
        r->timing = *t;
    else
        cut_timing_default(&r->timing);
    if (worker_start(g, e) != 0) {
        tr_destroy(r);
        return NULL;
    }
    ahead_start(g);
    return r;
}
