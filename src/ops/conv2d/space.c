/* cutune — the schedule space: template registry, sampling, crossover, hashing and JSON of schedules. */
#include "cutune/space.h"
#include "ops/conv2d/templates.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

static const cut_template *const registry[] = {
    &cut_tpl_direct,
    &cut_tpl_igemm,
    &cut_tpl_winograd,
    &cut_tpl_igemm_tc,
    &cut_tpl_wgmma_conv,
};

int cut_template_count(void) { return (int)CUT_ARRAY_LEN(registry); }

const cut_template *cut_template_get(int tpl)
{
    return (tpl >= 0 && tpl < cut_template_count()) ? registry[tpl] : NULL;
}

int cut_template_find(const char *name)
{
    for (int i = 0; i < cut_template_count(); i++)
        if (strcmp(registry[i]->name, name) == 0)
            return i;
    return -1;
}

int cut_sched_check(const cut_conv *c, const cut_sched *s, const cut_devlimits *d, cut_err *e)
{
    const cut_template *t = cut_template_get(s->tpl);
    if (!t)
        return cut_err_set(e, "unknown template index %d", s->tpl);
    if (!t->applies(c))
        return cut_err_set(e, "template '%s' does not apply to this workload", t->name);
    return t->check(c, s, d, e);
}

int cut_sched_sample_valid(const cut_conv *c, const cut_devlimits *d, int tpl, cut_rng *r, cut_sched *out,
                           int max_tries)
{
    const cut_template *t = cut_template_get(tpl);
    if (!t || !t->applies(c))
        return -1;
    for (int i = 0; i < max_tries; i++) {
        t->sample(c, d, r, out);
        out->tpl = tpl;
        if (t->check(c, out, d, NULL) == 0)
            return 0;
    }
    return -1;
}

void cut_sched_crossover(const cut_sched *a, const cut_sched *b, cut_rng *r, cut_sched *out)
{
    const cut_template *t = cut_template_get(a->tpl);
    *out = *a;
    if (!t || a->tpl != b->tpl)
        return;
    for (int i = 0; i < t->nknobs; i++)
        out->k[i] = (cut_rng_next(r) & 1) ? a->k[i] : b->k[i];
}

uint64_t cut_sched_hash(const cut_sched *s)
{
    const cut_template *t = cut_template_get(s->tpl);
    int nk = t ? t->nknobs : CUT_MAX_KNOBS;
    uint64_t h = cut_fnv1a(CUT_FNV_INIT, &s->tpl, sizeof s->tpl);
    return cut_fnv1a(h, s->k, sizeof s->k[0] * (size_t)nk);
}

int cut_sched_equal(const cut_sched *a, const cut_sched *b)
{
    if (a->tpl != b->tpl)
        return 0;
    const cut_template *t = cut_template_get(a->tpl);
    int nk = t ? t->nknobs : CUT_MAX_KNOBS;
    return memcmp(a->k, b->k, sizeof a->k[0] * (size_t)nk) == 0;
}

int cut_sched_from_cjson(const void *obj, cut_sched *s, cut_err *e)
{
    const cJSON *o = obj;
    if (!cJSON_IsObject(o))
        return cut_err_set(e, "schedule is not a JSON object");
    const cJSON *tn = cJSON_GetObjectItemCaseSensitive(o, "tpl");
    if (!cJSON_IsString(tn))
        return cut_err_set(e, "schedule has no string field 'tpl'");
    int tpl = cut_template_find(tn->valuestring);
    if (tpl < 0)
        return cut_err_set(e, "schedule names unknown template '%s'", tn->valuestring);
    const cut_template *t = cut_template_get(tpl);
    memset(s, 0, sizeof *s);
    s->tpl = tpl;
    for (int i = 0; i < t->nknobs; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, t->knob_names[i]);
        if (!v && t->knob_defaults && t->knob_defaults[i] >= 0) {
            s->k[i] = t->knob_defaults[i]; /* a schedule recorded before this knob existed */
            continue;
        }
        if (!cJSON_IsNumber(v) || !(v->valuedouble >= INT_MIN && v->valuedouble <= INT_MAX) ||
            v->valuedouble != (double)(int)v->valuedouble)
            return cut_err_set(e, "schedule of template '%s' lacks integer knob '%s'", t->name, t->knob_names[i]);
        s->k[i] = (int)v->valuedouble;
    }
    return 0;
}

void cut_sched_describe(const cut_sched *s, char *buf, size_t n)
{
    const cut_template *t = cut_template_get(s->tpl);
    if (!t) {
        snprintf(buf, n, "<unknown template %d>", s->tpl);
        return;
    }
    size_t len = (size_t)snprintf(buf, n, "%s", t->name);
    for (int i = 0; i < t->nknobs && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, " %s=%d", t->knob_names[i], s->k[i]);
}
