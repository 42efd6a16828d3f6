/* cutune — the one template registry tagged by op (op.h), built from each op's own registry. */
#include "cutune/op.h"

#include "cutune/gemm_space.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MAX_TPLS 64

static cut_tpl_info tpls[MAX_TPLS];
static int ntpls;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void add(cut_op_kind op, int index, const char *name, int nknobs)
{
    if (ntpls < MAX_TPLS)
        tpls[ntpls++] = (cut_tpl_info){op, index, name, nknobs};
}

static void build(void)
{
    for (int i = 0; i < cut_template_count(); i++)
        add(CUT_OP_CONV2D, i, cut_template_get(i)->name, cut_template_get(i)->nknobs);
    for (int i = 0; i < cut_gemm_template_count(); i++)
        add(CUT_OP_GEMM, i, cut_gemm_template_get(i)->name, cut_gemm_template_get(i)->nknobs);
    add(CUT_OP_KERNEL, 0, "spec", 0);
}

const char *cut_op_name(cut_op_kind op)
{
    static const char *const names[CUT_OP_COUNT] = {"conv2d", "gemm", "kernel"};
    return op >= 0 && op < CUT_OP_COUNT ? names[op] : "?";
}

int cut_tpl_count(void)
{
    pthread_once(&once, build);
    return ntpls;
}

const cut_tpl_info *cut_tpl_at(int i) { return i >= 0 && i < cut_tpl_count() ? &tpls[i] : NULL; }

const cut_tpl_info *cut_tpl_of(cut_op_kind op, int index)
{
    for (int i = 0; i < cut_tpl_count(); i++)
        if (tpls[i].op == op && tpls[i].index == index)
            return &tpls[i];
    return NULL;
}

const cut_tpl_info *cut_tpl_find(cut_op_kind op, const char *name)
{
    for (int i = 0; name && i < cut_tpl_count(); i++)
        if (tpls[i].op == op && !strcmp(tpls[i].name, name))
            return &tpls[i];
    return NULL;
}

const char *cut_tpl_knob(const cut_tpl_info *t, int i)
{
    if (!t || i < 0 || i >= t->nknobs)
        return "?";
    if (t->op == CUT_OP_CONV2D)
        return cut_template_get(t->index)->knob_names[i];
    if (t->op == CUT_OP_GEMM)
        return cut_gemm_template_get(t->index)->knob_name(i);
    return "?";
}

int cut_tpl_sched_json(cut_op_kind op, const cut_sched *s, char *buf, size_t n)
{
    const cut_tpl_info *t = cut_tpl_of(op, s->tpl);
    if (!t || n == 0)
        return -1;
    int w = snprintf(buf, n, "{\"tpl\":\"%s\"", t->name);
    if (w < 0 || (size_t)w >= n)
        return -1;
    size_t len = (size_t)w;
    for (int i = 0; i < t->nknobs && i < CUT_MAX_KNOBS; i++) {
        w = snprintf(buf + len, n - len, ",\"%s\":%d", cut_tpl_knob(t, i), s->k[i]);
        if (w < 0 || (size_t)w >= n - len)
            return -1;
        len += (size_t)w;
    }
    if (len + 2 > n)
        return -1;
    buf[len++] = '}';
    buf[len] = '\0';
    return (int)len;
}

void cut_tpl_sched_describe(cut_op_kind op, const cut_sched *s, char *buf, size_t n)
{
    const cut_tpl_info *t = cut_tpl_of(op, s->tpl);
    if (!t) {
        snprintf(buf, n, "<unknown template %d>", s->tpl);
        return;
    }
    size_t len = (size_t)snprintf(buf, n, "%s", t->name);
    for (int i = 0; i < t->nknobs && i < CUT_MAX_KNOBS && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, " %s=%d", cut_tpl_knob(t, i), s->k[i]);
}
