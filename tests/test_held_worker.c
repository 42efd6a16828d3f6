/* Tests of held works in the C worker (issue 18 follow-up): the codecs of HOLD_WORK, SELECT_WORK, DROP_WORK and HELD
 * (src/measure/worker_proto_held.c), the worker's table of held works (src/measure/worker_hold.c), and the whole path
 * through the emulation worker (`cutune __worker emu:<dir>`, started by cut_runner_emu_worker_new from $CUTUNE_BIN),
 * which speaks the GPU worker's protocol:
 *   - a switch back to a held work sends no work (the runner's counters: no work sent, no bytes; the worker stays);
 *   - results stay right across A -> B -> A switches: the kernel passes against A's references, a wrong variant and
 *     one that writes its input are still caught, and A's input is clean again after the switch back;
 *   - a work changed in one byte (an input of set 1, a reference) is sent, and its runs see the change;
 *   - after a worker restart (a candidate that traps) every held work is sent again once, then selected;
 *   - the worker's parser answers malformed SELECT_WORK, DROP_WORK and HOLD_WORK messages with an ERROR that names
 *     the problem and keeps serving; a well-formed SELECT_WORK of a work it does not hold selects none.
 * The kernel is kernels/softmax_row.json at two sizes (the spec's and the check's, as src/pipeline/kcheck.c
 * switches between them), compiled with the host compiler. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/emu.h"
#include "cutune/kspec.h"
#include "cutune/kstate.h"
#include "cutune/measure.h"
#include "measure/worker_hold.h"
#include "measure/worker_proto.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static cut_wp_frame frame_of(uint32_t type, const cut_buf *b)
{
    cut_wp_frame f = {.type = type, .data = (uint8_t *)b->data, .len = b->len};
    return f;
}

/* ---- codecs ---- */

static void test_held_codecs(void **state)
{
    (void)state;
    cut_err e = {{0}};
    cut_buf b;
    cut_buf_init(&b);
    uint64_t id = 77;
    /* SELECT_WORK and DROP_WORK: exactly a u64 id >= 1 */
    cut_wp_id_encode(42, &b);
    cut_wp_frame f = frame_of(CUT_WP_SELECT_WORK, &b);
    assert_int_equal(cut_wp_id_decode(&f, CUT_WP_SELECT_WORK, &id, &e), 0);
    assert_true(id == 42);
    f.type = CUT_WP_DROP_WORK;
    assert_int_equal(cut_wp_id_decode(&f, CUT_WP_DROP_WORK, &id, &e), 0);
    assert_int_equal(cut_wp_id_decode(&f, CUT_WP_SELECT_WORK, &id, &e), -1); /* another type */
    assert_non_null(strstr(e.msg, "expected a SELECT_WORK message, got DROP_WORK"));
    assert_true(id == 0);
    assert_int_equal(cut_wp_id_decode(&f, CUT_WP_RUN, &id, &e), -1);
    assert_non_null(strstr(e.msg, "RUN does not carry a work id"));
    for (size_t n = 0; n < 8; n++) { /* short */
        cut_wp_frame t = {.type = CUT_WP_SELECT_WORK, .data = (uint8_t *)b.data, .len = n};
        assert_int_equal(cut_wp_id_decode(&t, CUT_WP_SELECT_WORK, &id, &e), -1);
        assert_non_null(strstr(e.msg, "malformed SELECT_WORK message"));
        assert_non_null(strstr(e.msg, "runs past the end"));
    }
    cut_buf_append(&b, "xyz", 3); /* long */
    f = frame_of(CUT_WP_SELECT_WORK, &b);
    assert_int_equal(cut_wp_id_decode(&f, CUT_WP_SELECT_WORK, &id, &e), -1);
    assert_string_equal(e.msg, "malformed SELECT_WORK message: 3 trailing bytes");
    b.len = 0;
    cut_wp_id_encode(0, &b); /* id 0 */
    f = frame_of(CUT_WP_DROP_WORK, &b);
    assert_int_equal(cut_wp_id_decode(&f, CUT_WP_DROP_WORK, &id, &e), -1);
    assert_string_equal(e.msg, "malformed DROP_WORK message: work id 0 (ids start at 1)");

    /* HELD: round trip, then each inconsistency */
    cut_wp_held h = {.selected = 9, .n = 3, .id = {4, 9, 5}}, g;
    b.len = 0;
    cut_wp_held_encode(&h, &b);
    f = frame_of(CUT_WP_HELD, &b);
    assert_int_equal(cut_wp_held_decode(&f, &g, &e), 0);
    assert_memory_equal(&g, &h, sizeof h);
    assert_true(cut_wp_held_has(&g, 5) && !cut_wp_held_has(&g, 6));
    for (size_t n = 0; n < b.len; n++) {
        cut_wp_frame t = {.type = CUT_WP_HELD, .data = (uint8_t *)b.data, .len = n};
        assert_int_equal(cut_wp_held_decode(&t, &g, &e), -1);
        assert_true(g.n == 0 && g.selected == 0);
    }
    const struct {
        cut_wp_held h;
        const char *why;
    } bad[] = {
        {{.selected = 6, .n = 2, .id = {4, 5}}, "work 6 selected but not among the 2 held"},
        {{.selected = 0, .n = 2, .id = {4, 4}}, "work id 4 listed twice"},
        {{.selected = 0, .n = 1, .id = {0}}, "work id 0 (ids start at 1)"},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad); i++) {
        b.len = 0;
        cut_wp_held_encode(&bad[i].h, &b);
        f = frame_of(CUT_WP_HELD, &b);
        assert_int_equal(cut_wp_held_decode(&f, &g, &e), -1);
        assert_non_null(strstr(e.msg, bad[i].why));
    }
    b.len = 0;
    cut_wp_put_u64(&b, 0);
    cut_wp_put_u32(&b, CUT_WP_HOLD_MAX + 1);
    f = frame_of(CUT_WP_HELD, &b);
    assert_int_equal(cut_wp_held_decode(&f, &g, &e), -1);
    assert_non_null(strstr(e.msg, "works held (at most"));

    /* HOLD_WORK: an id, then a work as PREPARE_WORK carries it */
    const cut_conv conv = {1, 5, 6, 3, 2, 3, 3, 1, 1};
    cut_work w, q;
    assert_int_equal(cut_conv_work(&conv, 5, &w, &e), 0);
    b.len = 0;
    cut_wp_hold_encode(12, &w, &b);
    f = frame_of(CUT_WP_HOLD_WORK, &b);
    assert_int_equal(cut_wp_hold_decode(&f, &id, &q, &e), 0);
    assert_true(id == 12 && cut_work_same(&w, &q) && q.owns_data);
    cut_work_free(&q);
    f.type = CUT_WP_PREPARE_WORK;
    assert_int_equal(cut_wp_hold_decode(&f, &id, &q, &e), -1);
    assert_non_null(strstr(e.msg, "expected a HOLD_WORK message"));
    for (size_t n = 0; n < b.len; n += (n < 64 ? 1 : 61)) {
        cut_wp_frame t = {.type = CUT_WP_HOLD_WORK, .data = (uint8_t *)b.data, .len = n};
        assert_int_equal(cut_wp_hold_decode(&t, &id, &q, &e), -1);
        assert_true(id == 0 && !q.bufs[0].data[0] && !q.bufs[2].data[1]);
        assert_non_null(strstr(e.msg, "HOLD_WORK"));
    }
    memset(b.data, 0, 8); /* id 0 */
    f = frame_of(CUT_WP_HOLD_WORK, &b);
    assert_int_equal(cut_wp_hold_decode(&f, &id, &q, &e), -1);
    assert_string_equal(e.msg, "malformed HOLD_WORK message: work id 0 (ids start at 1)");
    assert_string_equal(cut_wp_type_name(CUT_WP_SELECT_WORK), "SELECT_WORK");
    assert_string_equal(cut_wp_type_name(CUT_WP_HELD), "HELD");
    cut_work_free(&w);
    cut_buf_free(&b);
}

/* ---- the worker's table, with a fake device of room for `room` works ---- */

typedef struct fake_dev {
    int room, loads, live, selects;
} fake_dev;

static int fd_load(void *ctx, cut_work *w, int others, void **state, cut_err *e)
{
    fake_dev *d = ctx;
    if (d->live >= d->room) {
        cut_work_free(w);
        return others > 0 ? (cut_err_set(e, "no room"), -2) : cut_err_set(e, "no room at all");
    }
    cut_work *k = malloc(sizeof *k);
    *k = *w;
    memset(w, 0, sizeof *w);
    d->loads++;
    d->live++;
    *state = k;
    return 0;
}

static int fd_select(void *ctx, void *state, cut_err *e)
{
    (void)state;
    (void)e;
    ((fake_dev *)ctx)->selects++;
    return 0;
}

static void fd_free(void *ctx, void *state, int context_dead)
{
    (void)context_dead;
    ((fake_dev *)ctx)->live--;
    cut_work_free(state);
    free(state);
}

/* One request to the table; the reply's HELD decoded into *said (ACK: said untouched). The table's return. */
static int ask(cut_wk_hold *h, uint32_t type, uint64_t id, const cut_work *w, cut_wp_held *said, cut_err *e)
{
    cut_buf b, rb;
    cut_buf_init(&b);
    cut_buf_init(&rb);
    if (type == CUT_WP_HOLD_WORK)
        cut_wp_hold_encode(id, w, &b);
    else if (type == CUT_WP_PREPARE_WORK)
        cut_wp_work_encode(w, &b);
    else
        cut_wp_id_encode(id, &b);
    const cut_wp_frame f = frame_of(type, &b);
    uint32_t reply = 0;
    const int rc = cut_wk_hold_request(h, &f, &reply, &rb, e);
    if (rc == 0) {
        assert_int_equal(reply, type == CUT_WP_PREPARE_WORK ? CUT_WP_ACK : CUT_WP_HELD);
        const cut_wp_frame r = frame_of(reply, &rb);
        if (reply == CUT_WP_HELD)
            assert_int_equal(cut_wp_held_decode(&r, said, e), 0);
    }
    cut_buf_free(&b);
    cut_buf_free(&rb);
    return rc;
}

static void test_held_table(void **state)
{
    (void)state;
    cut_err e = {{0}};
    const cut_conv conv = {1, 5, 6, 3, 2, 3, 3, 1, 1};
    cut_work w;
    assert_int_equal(cut_conv_work(&conv, 5, &w, &e), 0);
    fake_dev d = {.room = CUT_WP_HOLD_MAX + 1};
    const cut_wk_hold_ops ops = {.load = fd_load, .select = fd_select, .free = fd_free, .ctx = &d};
    cut_wk_hold h;
    cut_wk_hold_init(&h, &ops);
    cut_wp_held s;
    /* PREPARE_WORK's work is held without an id; a HOLD_WORK replaces it */
    assert_int_equal(ask(&h, CUT_WP_PREPARE_WORK, 0, &w, &s, &e), 0);
    assert_true(d.live == 1 && cut_wk_hold_cur(&h));
    assert_int_equal(ask(&h, CUT_WP_HOLD_WORK, 3, &w, &s, &e), 0);
    assert_true(d.live == 1 && s.selected == 3 && s.n == 1);
    for (uint64_t id = 4; id < 3 + CUT_WP_HOLD_MAX; id++)
        assert_int_equal(ask(&h, CUT_WP_HOLD_WORK, id, &w, &s, &e), 0);
    assert_true(d.live == CUT_WP_HOLD_MAX && s.n == CUT_WP_HOLD_MAX && s.selected == 2 + CUT_WP_HOLD_MAX);
    /* full: refused, none selected; the same id again replaces its work */
    assert_int_equal(ask(&h, CUT_WP_HOLD_WORK, 99, &w, &s, &e), -1);
    assert_non_null(strstr(e.msg, "drop one first"));
    assert_null(cut_wk_hold_cur(&h));
    assert_int_equal(ask(&h, CUT_WP_HOLD_WORK, 4, &w, &s, &e), 0);
    assert_true(d.live == CUT_WP_HOLD_MAX && s.selected == 4);
    /* select: held, not held (none selected); drop: held, not held */
    assert_int_equal(ask(&h, CUT_WP_SELECT_WORK, 3, NULL, &s, &e), 0);
    assert_true(s.selected == 3 && d.selects == 1 && cut_wk_hold_cur(&h));
    assert_int_equal(ask(&h, CUT_WP_SELECT_WORK, 50, NULL, &s, &e), 0);
    assert_true(s.selected == 0 && s.n == CUT_WP_HOLD_MAX && !cut_wk_hold_cur(&h));
    assert_int_equal(ask(&h, CUT_WP_DROP_WORK, 3, NULL, &s, &e), 0);
    assert_true(s.n == CUT_WP_HOLD_MAX - 1 && !cut_wp_held_has(&s, 3) && d.live == CUT_WP_HOLD_MAX - 1);
    assert_int_equal(ask(&h, CUT_WP_DROP_WORK, 3, NULL, &s, &e), 0);
    assert_int_equal(s.n, CUT_WP_HOLD_MAX - 1);
    /* no room beside the others: they are dropped and the new work loaded (once more); drop_idle keeps the selected */
    d.room = d.live;
    const int loads = d.loads;
    assert_int_equal(ask(&h, CUT_WP_HOLD_WORK, 20, &w, &s, &e), 0);
    assert_true(s.n == 1 && s.selected == 20 && d.live == 1 && d.loads == loads + 1);
    d.room = 2;
    assert_int_equal(ask(&h, CUT_WP_HOLD_WORK, 21, &w, &s, &e), 0);
    assert_int_equal(ask(&h, CUT_WP_SELECT_WORK, 20, NULL, &s, &e), 0);
    assert_int_equal(cut_wk_hold_drop_idle(&h), 1);
    cut_wk_hold_said(&h, &s);
    assert_true(s.n == 1 && s.selected == 20 && d.live == 1);
    /* a malformed request changes nothing */
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_append(&b, "abc", 3);
    const cut_wp_frame f = frame_of(CUT_WP_SELECT_WORK, &b);
    uint32_t reply = 0;
    assert_int_equal(cut_wk_hold_request(&h, &f, &reply, &b, &e), -1);
    assert_non_null(strstr(e.msg, "malformed SELECT_WORK message (3 bytes)"));
    assert_non_null(cut_wk_hold_cur(&h));
    const cut_wp_frame run = {.type = CUT_WP_RUN};
    assert_int_equal(cut_wk_hold_request(&h, &run, &reply, &b, &e), 1); /* not ours */
    cut_buf_free(&b);
    cut_wk_hold_free(&h, 0);
    assert_int_equal(d.live, 0);
    cut_work_free(&w);
}

/* ---- through the emulation worker ---- */

typedef struct kwork {
    cut_kspec spec;
    cut_work work; /* with the baseline's outputs as references (owned: cut_kspec_work_free) */
    cut_call call;
    char *src;     /* the materialised baseline */
} kwork;

static char *g_tmp;
static char g_so[4200];

static void quick_timing(cut_timing *t)
{
    cut_timing_default(t);
    t->warmup = 1;
    t->min_repeats = 2;
    t->max_repeats = 3;
    t->min_total_ms = 0.0;
    t->timeout_s = 60.0;
}

static int have_worker(void)
{
    const char *bin = getenv("CUTUNE_BIN");
    return bin && access(bin, X_OK) == 0 && getenv("CUTUNE_FIXTURES");
}

/* softmax_row at rows x cols, its references captured from the baseline on r (a prepare without references, a
 * capture run, the outputs moved into the work). */
static void kwork_make(cut_runner *r, kwork *k, int rows, int cols)
{
    cut_err e = {{0}};
    char path[4200];
    snprintf(path, sizeof path, "%s/../../kernels/softmax_row.json", getenv("CUTUNE_FIXTURES"));
    if (cut_kspec_load(path, &k->spec, &e) != 0 || cut_kspec_set_size(&k->spec, "ROWS", rows, &e) != 0 ||
        cut_kspec_set_size(&k->spec, "COLS", cols, &e) != 0 || cut_kspec_work(&k->spec, &k->work, &e) != 0 ||
        cut_kspec_call(&k->spec, NULL, &k->call, &e) != 0)
        fail_msg("softmax_row %dx%d: %s", rows, cols, e.msg);
    k->src = cut_kstate_materialise(&k->spec, NULL);
    k->call.src = k->src;
    assert_int_equal(cut_runner_prepare_work(r, &k->work, &e), 0);
    cut_result res;
    cut_work_outputs outs;
    if (cut_runner_run_call(r, &k->call, &res, &outs, &e) != 0 || res.status != CUT_ST_OK)
        fail_msg("capture %dx%d: %s %s", rows, cols, e.msg, res.error);
    for (int i = 0; i < k->work.nbufs; i++)
        for (int s = 0; s < 2 && k->work.bufs[i].is_output; s++) {
            k->work.bufs[i].data[s] = outs.data[i][s];
            outs.data[i][s] = NULL;
        }
    cut_work_outputs_free(&outs);
    assert_int_equal(cut_work_has_refs(&k->work), 1);
}

static void kwork_free(kwork *k)
{
    cut_kspec_work_free(&k->work);
    cut_kspec_free(&k->spec);
    free(k->src);
}

/* The baseline with `what` replaced by `with` (NULL: the baseline itself), run on the prepared work. */
static cut_result run_variant(cut_runner *r, const kwork *k, const char *what, const char *with)
{
    char *src = strdup(k->src);
    if (what) {
        const char *at = strstr(k->src, what);
        assert_non_null(at);
        const size_t n = strlen(k->src) + strlen(with) + 1;
        free(src);
        src = malloc(n);
        snprintf(src, n, "%.*s%s%s", (int)(at - k->src), k->src, with, at + strlen(what));
    }
    cut_call c = k->call;
    c.src = src;
    cut_result res;
    cut_err e = {{0}};
    if (cut_runner_run_call(r, &c, &res, NULL, &e) != 0)
        fail_msg("run: %s", e.msg);
    free(src);
    return res;
}

#define WRITE_OUT "v[j] = expf(v[j] - m) * inv;"
#define WRONG "v[j] = expf(v[j] - m) * inv * 2.0f;"
#define LAST_STORE "*reinterpret_cast<vec_t *>(out + c) = t;"
#define WRITES_INPUT LAST_STORE " if (c == 0) const_cast<float *>(row)[0] += 1.0f;"
#define TRAPS LAST_STORE " if (c == 0) __trap();"

static void prepare_ok(cut_runner *r, const cut_work *w)
{
    cut_err e = {{0}};
    if (cut_runner_prepare_work(r, w, &e) != 0)
        fail_msg("prepare: %s", e.msg);
}

static cut_runner *new_runner(void)
{
    cut_timing t;
    quick_timing(&t);
    cut_err e = {{0}};
    cut_runner *r = cut_runner_emu_worker_new(getenv("CUTUNE_BIN"), g_so, &t, &e);
    if (!r)
        fail_msg("cut_runner_emu_worker_new: %s", e.msg);
    return r;
}

/* A -> B -> A switches: nothing sent after each work's first prepare, results as a fresh prepare's, wrong variants
 * still caught; then works changed in one byte are sent and run as changed. */
static void test_held_emu_switch(void **state)
{
    (void)state;
    if (!have_worker())
        skip();
    cut_runner *r = new_runner();
    kwork a, b;
    kwork_make(r, &a, 8, 256);
    kwork_make(r, &b, 5, 77);
    prepare_ok(r, &a.work);
    const cut_result fresh = run_variant(r, &a, NULL, NULL);
    assert_int_equal(fresh.status, CUT_ST_OK);
    prepare_ok(r, &b.work);
    const cut_result fresh_b = run_variant(r, &b, NULL, NULL);
    assert_int_equal(fresh_b.status, CUT_ST_OK);
    const int pid = cut_runner_gpu_worker_pid(r), starts = cut_runner_gpu_worker_starts(r);

    const cut_prep_stats before = r->prep;
    prepare_ok(r, &a.work);
    cut_result res = run_variant(r, &a, NULL, NULL);
    assert_int_equal(res.status, CUT_ST_OK);
    assert_true(res.max_abs_err == fresh.max_abs_err); /* the same data: the same outputs */
    res = run_variant(r, &a, WRITE_OUT, WRONG);
    assert_int_equal(res.status, CUT_ST_WRONG_RESULT);
    assert_non_null(strstr(res.error, "want"));
    assert_int_equal(run_variant(r, &a, LAST_STORE, WRITES_INPUT).status, CUT_ST_INPUT_MODIFIED);
    prepare_ok(r, &b.work);
    res = run_variant(r, &b, NULL, NULL);
    assert_int_equal(res.status, CUT_ST_OK);
    assert_true(res.max_abs_err == fresh_b.max_abs_err);
    assert_int_equal(run_variant(r, &b, WRITE_OUT, WRONG).status, CUT_ST_WRONG_RESULT);
    prepare_ok(r, &a.work);
    res = run_variant(r, &a, NULL, NULL);
    assert_int_equal(res.status, CUT_ST_OK); /* the input the earlier candidate wrote was restored */
    assert_true(res.max_abs_err == fresh.max_abs_err);
    printf("  held: %ld sent (%.0f bytes), %ld held\n", r->prep.sent - before.sent, r->prep.bytes - before.bytes,
           r->prep.held - before.held);
    assert_int_equal(r->prep.sent, before.sent);
    assert_true(r->prep.bytes == before.bytes);
    assert_int_equal(r->prep.held, before.held + 3);
    assert_int_equal(cut_runner_gpu_worker_pid(r), pid);
    assert_int_equal(cut_runner_gpu_worker_starts(r), starts);

    /* one element of set 1's input changed: another work, sent (B evicted: A was used more recently); its set-1
     * check fails against the old references */
    cut_err e = {{0}};
    cut_work changed;
    assert_int_equal(cut_work_keep(&a.work, 0, &changed, &e), 0);
    ((float *)changed.bufs[0].data[1])[7] += 1.0f;
    prepare_ok(r, &changed);
    assert_int_equal(r->prep.sent, before.sent + 1);
    assert_true(r->prep.bytes > before.bytes);
    assert_int_equal(run_variant(r, &a, NULL, NULL).status, CUT_ST_WRONG_OTHER_DATA);
    cut_work_free(&changed);
    /* one reference element of set 0 changed: sent too (A evicted now); set 0's check fails */
    assert_int_equal(cut_work_keep(&a.work, 0, &changed, &e), 0);
    ((float *)changed.bufs[1].data[0])[3] += 0.5f;
    prepare_ok(r, &changed);
    assert_int_equal(r->prep.sent, before.sent + 2);
    assert_int_equal(run_variant(r, &a, NULL, NULL).status, CUT_ST_WRONG_RESULT);
    cut_work_free(&changed);
    /* A itself again: evicted from the runner (and dropped by the worker), so sent, and right */
    prepare_ok(r, &a.work);
    assert_int_equal(r->prep.sent, before.sent + 3);
    res = run_variant(r, &a, NULL, NULL);
    assert_int_equal(res.status, CUT_ST_OK);
    assert_true(res.max_abs_err == fresh.max_abs_err);
    assert_int_equal(cut_runner_gpu_worker_starts(r), starts);
    kwork_free(&a);
    kwork_free(&b);
    cut_runner_free(r);
}

/* A candidate that traps ends the worker; the fresh one holds nothing: each held work is sent again once (and runs
 * right), then switching is a select again. */
static void test_held_emu_restart(void **state)
{
    (void)state;
    if (!have_worker())
        skip();
    cut_runner *r = new_runner();
    kwork a, b;
    kwork_make(r, &a, 8, 256);
    kwork_make(r, &b, 5, 77);
    prepare_ok(r, &a.work);
    const cut_result fresh = run_variant(r, &a, NULL, NULL);
    prepare_ok(r, &b.work);
    assert_int_equal(run_variant(r, &b, NULL, NULL).status, CUT_ST_OK);
    prepare_ok(r, &a.work); /* held */
    const int starts = cut_runner_gpu_worker_starts(r);
    const cut_result trap = run_variant(r, &a, LAST_STORE, TRAPS);
    assert_int_equal(trap.status, CUT_ST_FAULT);
    assert_non_null(strstr(trap.error, "worker died"));
    assert_int_equal(cut_runner_gpu_worker_pid(r), 0);

    const cut_prep_stats before = r->prep;
    prepare_ok(r, &b.work); /* B: held by the runner, not by the fresh worker */
    assert_int_equal(cut_runner_gpu_worker_starts(r), starts + 1);
    assert_int_equal(r->prep.sent, before.sent + 1);
    assert_int_equal(run_variant(r, &b, NULL, NULL).status, CUT_ST_OK);
    prepare_ok(r, &a.work);
    assert_int_equal(r->prep.sent, before.sent + 2);
    cut_result res = run_variant(r, &a, NULL, NULL);
    assert_int_equal(res.status, CUT_ST_OK);
    assert_true(res.max_abs_err == fresh.max_abs_err);
    prepare_ok(r, &b.work);
    prepare_ok(r, &a.work);
    assert_int_equal(r->prep.sent, before.sent + 2);
    assert_int_equal(r->prep.held, before.held + 2);
    assert_int_equal(run_variant(r, &a, NULL, NULL).status, CUT_ST_OK);
    assert_int_equal(cut_runner_gpu_worker_starts(r), starts + 1);
    kwork_free(&a);
    kwork_free(&b);
    cut_runner_free(r);
}

/* Sends one frame (type, payload b) to the worker and reads its reply. */
static cut_wp_frame request(int to, int from, uint32_t type, const cut_buf *b)
{
    cut_err e = {{0}};
    assert_int_equal(cut_wp_send(to, type, b ? b->data : NULL, b ? b->len : 0, &e), 0);
    cut_wp_frame f;
    if (cut_wp_recv(from, 60.0, CUT_WP_MAX_REPLY, &f, &e) != 1)
        fail_msg("no reply to %s: %s", cut_wp_type_name(type), e.msg);
    return f;
}

/* The reply is ERROR with a sentence containing want. */
static void expect_error(cut_wp_frame *f, const char *want)
{
    char msg[CUT_ERR_LEN];
    assert_int_equal(f->type, CUT_WP_ERROR);
    assert_int_equal(cut_wp_error_decode(f, msg, sizeof msg), 0);
    if (!strstr(msg, want))
        fail_msg("ERROR '%s' does not say '%s'", msg, want);
    cut_wp_frame_free(f);
}

/* The emulation worker's own parser, over the pipe: malformed requests about works get an ERROR naming the problem
 * and the worker goes on; a SELECT_WORK of a work it does not hold selects none, so a RUN then has no work. */
static void test_held_emu_parser(void **state)
{
    (void)state;
    if (!have_worker())
        skip();
    char dir[4300];
    snprintf(dir, sizeof dir, "emu:%s", g_so);
    int pid, to, from;
    cut_err e = {{0}};
    assert_int_equal(cut_wp_spawn_arg(getenv("CUTUNE_BIN"), dir, &pid, &to, &from, &e), 0);
    cut_wp_frame f;
    assert_int_equal(cut_wp_recv(from, 60.0, CUT_WP_MAX_REPLY, &f, &e), 1);
    assert_int_equal(f.type, CUT_WP_HELLO);
    cut_wp_frame_free(&f);
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_append(&b, "abc", 3);
    f = request(to, from, CUT_WP_SELECT_WORK, &b);
    expect_error(&f, "malformed SELECT_WORK message (3 bytes): a field runs past the end");
    b.len = 0;
    cut_wp_id_encode(5, &b);
    cut_wp_put_u32(&b, 1);
    f = request(to, from, CUT_WP_SELECT_WORK, &b);
    expect_error(&f, "malformed SELECT_WORK message: 4 trailing bytes");
    b.len = 0;
    cut_wp_id_encode(0, &b);
    f = request(to, from, CUT_WP_SELECT_WORK, &b);
    expect_error(&f, "malformed SELECT_WORK message: work id 0 (ids start at 1)");
    f = request(to, from, CUT_WP_DROP_WORK, NULL);
    expect_error(&f, "malformed DROP_WORK message (0 bytes)");
    b.len = 0;
    cut_wp_id_encode(6, &b);
    f = request(to, from, CUT_WP_HOLD_WORK, &b); /* an id and no work */
    expect_error(&f, "HOLD_WORK of work 6: malformed PREPARE_WORK message");
    f = request(to, from, CUT_WP_HELD, NULL); /* a reply sent as a request */
    expect_error(&f, "unexpected HELD message");
    /* well formed, a work it does not hold: HELD selects none */
    f = request(to, from, CUT_WP_SELECT_WORK, &b);
    assert_int_equal(f.type, CUT_WP_HELD);
    cut_wp_held h;
    assert_int_equal(cut_wp_held_decode(&f, &h, &e), 0);
    assert_true(h.selected == 0 && h.n == 0);
    cut_wp_frame_free(&f);
    cut_buf_free(&b);
    assert_int_equal(cut_wp_send(to, CUT_WP_QUIT, NULL, 0, &e), 0);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* it served every request and quit cleanly */
    close(to);
    close(from);
}

static int setup(void **state)
{
    (void)state;
    g_tmp = tu_tmpdir("test_held_worker");
    if (!g_tmp)
        return -1;
    snprintf(g_so, sizeof g_so, "%s/so", g_tmp);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(g_tmp);
    return 0;
}

int main(void)
{
    if (!have_worker())
        printf("note: CUTUNE_BIN or CUTUNE_FIXTURES is not set (run through ctest): the emulation worker's tests "
               "skip\n");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_held_codecs),
        cmocka_unit_test(test_held_table),
        cmocka_unit_test(test_held_emu_parser),
        cmocka_unit_test(test_held_emu_switch),
        cmocka_unit_test(test_held_emu_restart),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
