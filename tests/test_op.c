/* Tests of the one template registry tagged by op (src/ops/registry.c, op.h): every op's templates listed once with
 * their op, index, name and knobs as their own registry has them; a name is found under its own op only (a GEMM
 * template never under Conv2D: the cross-registry mix-up issue 14 names); the one schedule JSON writer round-trips
 * through each op's reader; too small a buffer, an unknown template and an unknown index are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cutune/gemm_record.h"
#include "cutune/gemm_space.h"
#include "cutune/op.h"
#include "cutune/space.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static void test_every_template_once(void **state)
{
    (void)state;
    const int nc = cut_template_count(), ng = cut_gemm_template_count();
    assert_true(nc >= 3 && ng >= 3);
    assert_int_equal(cut_tpl_count(), nc + ng + 1);
    int seen[CUT_OP_COUNT] = {0};
    for (int i = 0; i < cut_tpl_count(); i++) {
        const cut_tpl_info *t = cut_tpl_at(i);
        assert_non_null(t);
        assert_ptr_equal(cut_tpl_of(t->op, t->index), t);
        assert_ptr_equal(cut_tpl_find(t->op, t->name), t);
        assert_int_equal(t->index, seen[t->op]++); /* each op's templates in its own registry order */
        if (t->op == CUT_OP_CONV2D) {
            const cut_template *c = cut_template_get(t->index);
            assert_string_equal(t->name, c->name);
            assert_int_equal(t->nknobs, c->nknobs);
            for (int k = 0; k < c->nknobs; k++)
                assert_string_equal(cut_tpl_knob(t, k), c->knob_names[k]);
        } else if (t->op == CUT_OP_GEMM) {
            const cut_gemm_template *g = cut_gemm_template_get(t->index);
            assert_string_equal(t->name, g->name);
            assert_int_equal(t->nknobs, g->nknobs);
            for (int k = 0; k < g->nknobs; k++)
                assert_string_equal(cut_tpl_knob(t, k), g->knob_name(k));
        } else {
            assert_int_equal(t->op, CUT_OP_KERNEL);
            assert_int_equal(t->nknobs, 0);
        }
        assert_string_equal(cut_tpl_knob(t, t->nknobs), "?");
        assert_string_equal(cut_tpl_knob(t, -1), "?");
    }
    assert_int_equal(seen[CUT_OP_CONV2D], nc);
    assert_int_equal(seen[CUT_OP_GEMM], ng);
    assert_int_equal(seen[CUT_OP_KERNEL], 1);
    assert_null(cut_tpl_at(cut_tpl_count()));
    assert_null(cut_tpl_at(-1));
    /* names are found under their own op only */
    assert_non_null(cut_tpl_find(CUT_OP_GEMM, "wgmma"));
    assert_null(cut_tpl_find(CUT_OP_CONV2D, "wgmma"));
    assert_non_null(cut_tpl_find(CUT_OP_CONV2D, "direct"));
    assert_null(cut_tpl_find(CUT_OP_GEMM, "direct"));
    assert_null(cut_tpl_find(CUT_OP_GEMM, NULL));
    assert_null(cut_tpl_of(CUT_OP_GEMM, ng));
    assert_string_equal(cut_op_name(CUT_OP_GEMM), "gemm");
    assert_string_equal(cut_op_name(CUT_OP_COUNT), "?");
}

static void test_sched_json_round_trips(void **state)
{
    (void)state;
    char buf[512], desc[512];
    cut_err e = {{0}};
    /* a GEMM schedule: every knob of its template, read back by the GEMM reader */
    const cut_tpl_info *w = cut_tpl_find(CUT_OP_GEMM, "wgmma");
    cut_sched s = {.tpl = w->index};
    for (int k = 0; k < w->nknobs; k++)
        s.k[k] = 3 + k;
    const int n = cut_tpl_sched_json(CUT_OP_GEMM, &s, buf, sizeof buf);
    assert_true(n > 0 && (size_t)n == strlen(buf));
    assert_true(strncmp(buf, "{\"tpl\":\"wgmma\"", 14) == 0);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    cut_sched back;
    assert_int_equal(cut_gemm_sched_from_cjson(o, &back, &e), 0);
    cJSON_Delete(o);
    assert_int_equal(back.tpl, s.tpl);
    assert_memory_equal(back.k, s.k, sizeof s.k[0] * (size_t)w->nknobs);
    assert_int_equal(cut_tpl_sched_json(CUT_OP_GEMM, &s, buf, (size_t)n), -1); /* no room for the NUL */
    cut_tpl_sched_describe(CUT_OP_GEMM, &s, desc, sizeof desc);
    assert_true(strncmp(desc, "wgmma ", 6) == 0);
    /* a conv schedule of the same index is another template, read back by the conv reader */
    const cut_tpl_info *c = cut_tpl_of(CUT_OP_CONV2D, w->index);
    assert_non_null(c);
    cut_sched cs = {.tpl = c->index};
    for (int k = 0; k < c->nknobs; k++)
        cs.k[k] = 1 + k;
    assert_true(cut_tpl_sched_json(CUT_OP_CONV2D, &cs, buf, sizeof buf) > 0);
    char want[64];
    snprintf(want, sizeof want, "{\"tpl\":\"%s\"", c->name);
    assert_true(strncmp(buf, want, strlen(want)) == 0);
    o = cJSON_Parse(buf);
    assert_int_equal(cut_sched_from_cjson(o, &back, &e), 0);
    cJSON_Delete(o);
    assert_int_equal(back.tpl, cs.tpl);
    assert_memory_equal(back.k, cs.k, sizeof cs.k[0] * (size_t)c->nknobs);
    /* unknown templates */
    cut_sched bad = {.tpl = cut_gemm_template_count()};
    assert_int_equal(cut_tpl_sched_json(CUT_OP_GEMM, &bad, buf, sizeof buf), -1);
    cut_tpl_sched_describe(CUT_OP_GEMM, &bad, desc, sizeof desc);
    assert_non_null(strstr(desc, "unknown template"));
    /* the kernel op's one template has no knobs of its own here */
    cut_sched ks = {.tpl = 0};
    assert_int_equal(cut_tpl_sched_json(CUT_OP_KERNEL, &ks, buf, sizeof buf), 14);
    assert_string_equal(buf, "{\"tpl\":\"spec\"}");
    ks.tpl = 1;
    assert_int_equal(cut_tpl_sched_json(CUT_OP_KERNEL, &ks, buf, sizeof buf), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_template_once),
        cmocka_unit_test(test_sched_json_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
