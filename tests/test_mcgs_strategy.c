/* The MCGS strategy (cutune/mcgs.h) driven through propose/observe alone, as the one loop drives it, over a fake move
 * space: a state is a string of letters, a move appends one letter it lacks, and a state's key is its sorted letters,
 * so "ab" and "ba" are one state (a transposition). No kernel, no runner, no disk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/mcgs.h"
#include "cutune/strategy.h"
#include "cutune/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LETTERS "abc"

typedef struct fake_ms {
    int fail;    /* 1: propose fails (the generator's error) */
    int notes[8]; /* notes heard, by kind */
} fake_ms;

/* The state src with diff (one letter) appended; malloc'd. */
static char *apply(const char *src, const char *diff)
{
    char *out = cut_xmalloc(strlen(src) + strlen(diff) + 1);
    sprintf(out, "%s%s", src, diff);
    return out;
}

static int cmp_char(const void *a, const void *b) { return *(const char *)a - *(const char *)b; }

/* The key of a state: its letters sorted, hashed (never 0). */
static uint64_t key_of(const char *src)
{
    char buf[16];
    snprintf(buf, sizeof buf, "%s", src);
    qsort(buf, strlen(buf), 1, cmp_char);
    return cut_fnv1a(CUT_FNV_INIT, buf, strlen(buf)) | 1;
}

static int f_propose(const cut_move_space *ms, int node, const char *src, cut_proposal *out, int cap, cut_err *e)
{
    const fake_ms *f = ms->impl;
    (void)node;
    if (f->fail)
        return cut_err_set(e, "generator broken");
    int n = 0;
    for (const char *l = LETTERS; *l && n < cap; l++) {
        if (strchr(src, *l))
            continue;
        memset(&out[n], 0, sizeof out[n]);
        out[n].move = CUT_MV_BLOCK_SIZES;
        snprintf(out[n].label, sizeof out[n].label, "append %c", *l);
        out[n].diff = cut_xmalloc(2);
        out[n].diff[0] = *l, out[n].diff[1] = 0;
        out[n].pred_gain = 0.1 + 0.01 * (*l - 'a');
        n++;
    }
    return n;
}

static uint64_t f_key(const cut_move_space *ms, const char *src, const char *diff)
{
    (void)ms;
    char *s = apply(src, diff);
    const uint64_t k = key_of(s);
    free(s);
    return k;
}

static int f_note(void *ctx, const cut_mcgs_search *s, const cut_mcgs_note *n, cut_err *e)
{
    (void)s, (void)e;
    ((fake_ms *)ctx)->notes[n->kind]++;
    return 0;
}

/* A measured root: the baseline at 1 ms. */
static void add_root(cut_mcgs_search *s)
{
    const int r = cut_mcgs_search_add(s, "baseline", cut_xstrdup(""), 0, -1, "");
    cut_node *n = &s->g.nodes[r];
    n->status = CUT_NODE_OK;
    n->ms = 1.0;
    n->speedup = 1.0;
    n->key = key_of("");
    n->visits = 1;
    n->value_sum = cut_mcgs_value(1.0);
    s->baseline_ms = 1.0;
    s->best = 0;
}

/* The time of a state: more letters are faster, "c" fails. */
static double time_of(const char *src) { return strchr(src, 'c') ? -1 : 1.0 / (1.0 + (double)strlen(src)); }

/* Runs the strategy to exhaustion in rounds of `round`, as the one loop does: propose, build (the state, its key),
 * observe. Writes the variant ids in proposal order into order (comma separated). Returns the tickets handed out. */
static int drive(uint64_t seed, int round, fake_ms *f, cut_mcgs_search *s, char *order, size_t on)
{
    cut_move_space ms = {.impl = f, .propose = f_propose, .key = f_key};
    cut_mcgs_search_init(s, &ms, seed, 0.02, f_note, f);
    add_root(s);
    cut_strategy *st = cut_strategy_mcgs_new(s);
    assert_string_equal(st->name, "mcgs");
    cut_sched buf[4];
    int total = 0;
    order[0] = 0;
    for (int guard = 0; guard < 100; guard++) {
        const int n = st->propose(st, round, buf);
        assert_in_range(n, 0, round);
        if (n == 0)
            break;
        double t_ms[4];
        for (int i = 0; i < n; i++) { /* the round is built first, then observed, as the loop does */
            assert_int_equal(buf[i].tpl, CUT_TPL_TICKET);
            const cut_mcgs_ticket *t = cut_mcgs_ticket_get(s, buf[i].k[0]);
            assert_non_null(t);
            assert_true(t->plen >= 1);
            assert_int_equal(t->path[0], 0); /* every path starts at the root */
            const cut_edge *ed = &s->g.nodes[t->parent].edges[t->edge];
            char *src = apply(s->src[t->parent], ed->diff);
            snprintf(order + strlen(order), on - strlen(order), "%s%s", total ? "," : "", t->id);
            t_ms[i] = time_of(src);
            /* a state known at selection is linked there and never handed out as a ticket */
            assert_int_equal(cut_mcgs_ticket_built(s, buf[i].k[0], src, key_of(src)), -1);
            total++;
        }
        for (int i = 0; i < n; i++) {
            st->observe(st, &buf[i], t_ms[i], -1);
            assert_null(cut_mcgs_ticket_get(s, buf[i].k[0])); /* settled */
        }
    }
    cut_strategy_free(st);
    return total;
}

static void test_propose_observe(void **state)
{
    (void)state;
    fake_ms f;
    memset(&f, 0, sizeof f);
    cut_mcgs_search s;
    char order[512];
    const int n = drive(5, 2, &f, &s, order, sizeof order);
    /* states without "c": a, b, ab (ba is ab); with "c": ac, bc, ... fail and are never expanded. Built: a, b, c from the
     * root, then c and the other letter from a and from b (one of them a transposition of ab) */
    assert_int_equal(s.measured + s.failed, n);
    assert_true(s.measured >= 3);
    assert_true(s.failed >= 1);
    assert_true(s.transpositions >= 1);
    assert_int_equal(f.notes[CUT_MCGS_NOTE_VARIANT], n);
    assert_int_equal(f.notes[CUT_MCGS_NOTE_TRANSPOSITION], s.transpositions);
    assert_int_equal(f.notes[CUT_MCGS_NOTE_EXHAUSTED], 1);
    assert_true(f.notes[CUT_MCGS_NOTE_BEST] >= 1);
    /* the best is the fastest state: two letters, no "c" */
    assert_int_equal((int)strlen(s.src[s.best]), 2);
    assert_true(strchr(s.src[s.best], 'c') == NULL);
    assert_true(s.g.nodes[s.best].speedup > 2.9 && s.g.nodes[s.best].speedup < 3.1);
    for (int i = 0; i < s.g.nnodes; i++) {
        assert_true(s.g.nodes[i].visits >= 1); /* every node backed up */
        assert_int_equal(s.g.nodes[i].virtual_loss, 0); /* every virtual loss undone */
    }
    assert_int_equal(s.ntickets, 0);
    /* ids follow the tickets: v0001, v0002, ... */
    assert_int_equal(strncmp(order, "v0001,v0002", 11), 0);
    cut_mcgs_search_free(&s);

    /* the same seed chooses the same moves in the same order */
    fake_ms g;
    memset(&g, 0, sizeof g);
    cut_mcgs_search s2;
    char order2[512];
    assert_int_equal(drive(5, 2, &g, &s2, order2, sizeof order2), n);
    assert_string_equal(order, order2);
    cut_mcgs_search_free(&s2);
}

static void test_transposition_at_build_and_ptx(void **state)
{
    (void)state;
    fake_ms f;
    memset(&f, 0, sizeof f);
    cut_move_space ms = {.impl = &f, .propose = f_propose, .key = f_key};
    cut_mcgs_search s;
    cut_mcgs_search_init(&s, &ms, 1, 0.02, f_note, &f);
    add_root(&s);
    s.g.nodes[0].ptx_hash = 42;
    cut_strategy *st = cut_strategy_mcgs_new(&s);
    cut_sched sc[2];
    assert_int_equal(st->propose(st, 2, sc), 2);
    /* the build finds the root's key: a transposition, observed without a time */
    assert_int_equal(cut_mcgs_ticket_built(&s, sc[0].k[0], cut_xstrdup(""), key_of("")), 0);
    st->observe(st, &sc[0], -1, -1);
    assert_int_equal(s.transpositions, 1);
    assert_int_equal(s.failed, 0);
    /* the compile finds the root's PTX */
    assert_int_equal(cut_mcgs_ticket_built(&s, sc[1].k[0], cut_xstrdup("zz"), key_of("zz")), -1);
    assert_int_equal(cut_mcgs_ticket_ptx(&s, sc[1].k[0], 42), 0);
    st->observe(st, &sc[1], -1, -1);
    assert_int_equal(s.transpositions, 2);
    assert_int_equal(s.g.nnodes, 1); /* nothing new in the graph */
    /* an unknown ticket, and a schedule that is not a ticket, are ignored */
    assert_null(cut_mcgs_ticket_get(&s, 999));
    cut_sched other = {.tpl = 0};
    st->observe(st, &other, 1.0, -1);
    assert_int_equal(cut_mcgs_ticket_built(&s, 999, cut_xstrdup("x"), 1), -1);
    cut_strategy_free(st);
    cut_mcgs_search_free(&s);
}

static void test_move_space_failure(void **state)
{
    (void)state;
    fake_ms f;
    memset(&f, 0, sizeof f);
    f.fail = 1;
    cut_move_space ms = {.impl = &f, .propose = f_propose, .key = f_key};
    cut_mcgs_search s;
    cut_mcgs_search_init(&s, &ms, 1, 0.02, f_note, &f);
    cut_strategy *st = cut_strategy_mcgs_new(&s);
    cut_sched sc[1];
    assert_int_equal(st->propose(st, 1, sc), 0); /* no root yet: nothing to propose */
    add_root(&s);
    assert_int_equal(st->propose(st, 1, sc), 0);
    assert_int_equal(f.notes[CUT_MCGS_NOTE_ERROR], 1); /* the journal hears why */
    assert_int_equal(f.notes[CUT_MCGS_NOTE_EXHAUSTED], 0);
    cut_strategy_free(st);
    cut_mcgs_search_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_propose_observe),
        cmocka_unit_test(test_transposition_at_build_and_ptx),
        cmocka_unit_test(test_move_space_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
