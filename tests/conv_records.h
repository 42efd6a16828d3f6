/* cutune tests — conv tuning records written as cutune tune writes them, and schedules with a chosen knob
 * (header-only; needs cmocka's asserts). */
#ifndef CUTUNE_TEST_CONV_RECORDS_H
#define CUTUNE_TEST_CONV_RECORDS_H

#include "cutune/record.h"
#include "cutune/space.h"

#include <stdio.h>
#include <string.h>

/* A valid schedule of template tpl_name for c from seeds seed0, seed0 + 1, ...; with knob, the first whose knob is
 * above 1 (igemm's "splitk"). */
static inline cut_sched tr_conv_sched(const cut_conv *c, const char *tpl_name, const char *knob, uint64_t seed0)
{
    const int tpl = cut_template_find(tpl_name);
    assert_true(tpl >= 0);
    const cut_template *t = cut_template_get(tpl);
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    for (uint64_t seed = seed0; seed < seed0 + 5000; seed++) {
        cut_rng rng;
        cut_rng_seed(&rng, seed);
        cut_sched s;
        if (cut_sched_sample_valid(c, &d, tpl, &rng, &s, 2000) != 0)
            continue;
        for (int i = 0; i < t->nknobs; i++)
            if (!knob || (!strcmp(t->knob_names[i], knob) && s.k[i] > 1))
                return s;
    }
    fail_msg("no %s schedule with %s > 1", tpl_name, knob ? knob : "-");
    return (cut_sched){0};
}

/* Appends a record of case idx (c, s, median ms, status st, measured by backend on gpu/uuid) to
 * dir/case<idx>_<shape>.json. */
static inline void tr_add_conv(const char *dir, int idx, const cut_conv *c, const cut_sched *s, double ms,
                               cut_status st, const char *backend, const char *gpu, const char *uuid)
{
    char name[512], path[2048];
    cut_conv_case_name(c, idx, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    cut_record r;
    memset(&r, 0, sizeof r);
    r.case_idx = idx;
    r.conv = *c;
    snprintf(r.dtype, sizeof r.dtype, "fp32");
    r.sched = *s;
    r.status = st;
    r.median_ms = r.min_ms = r.max_ms = st == CUT_ST_OK ? ms : -1;
    r.gflops = st == CUT_ST_OK ? cut_conv_gflops(c, ms) : 0;
    r.repeats = 10;
    r.regs = r.spills = -1;
    snprintf(r.env.backend, sizeof r.env.backend, "%s", backend);
    snprintf(r.env.gpu_name, sizeof r.env.gpu_name, "%s", gpu);
    snprintf(r.env.gpu_uuid, sizeof r.env.gpu_uuid, "%s", uuid);
    snprintf(r.ts, sizeof r.ts, "2026-12-07T00:00:00Z");
    cut_buf b;
    cut_buf_init(&b);
    cut_record_to_json(&r, &b);
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fwrite(b.data, 1, b.len, f);
    fclose(f);
    cut_buf_free(&b);
}

#endif
