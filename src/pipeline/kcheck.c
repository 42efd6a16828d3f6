/* cutune — a user kernel's candidates on the runner (cutune/task.h): checked and timed at the spec's sizes, then,
 * when the spec gives "check_sizes", checked once more on a work of its own at those sizes (cutune/kspec.h).
 *
 * The runner has one work prepared at a time, so a batch runs at the spec's sizes first (the one protocol, verify.h,
 * as for every candidate), then the runner takes the work at check_sizes, each candidate that passed runs there through
 * the same protocol under a timing policy of one launch (its time discarded: the check sizes are never timed, and
 * their work counts no FLOPs or bytes, so no physical floor), and the runner gets the work at the spec's sizes back.
 * A runner that holds both works (the Triton runner, src/measure/held.c) makes each switch a select; the others
 * send the whole work each time (the optimizer's done event counts both).
 * The references at check_sizes come the way those at the spec's sizes do: a capture run of the spec's reference
 * kernel, or of the baseline, at check_sizes. */
#include "cutune/kstate.h"
#include "cutune/task.h"
#include "cutune/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One launch, no warm-up, no L2 flush, no minimum time: a check, not a measurement. */
static cut_timing check_timing(const cut_timing *t)
{
    cut_timing c = *t;
    c.warmup = 0;
    c.min_repeats = c.max_repeats = 1;
    c.min_total_ms = 0;
    c.flush_l2 = 0;
    c.warm = 0;
    return c;
}

void cut_kcheck_free(cut_kcheck *kc)
{
    if (!kc)
        return;
    for (int b = 0; b < CUT_WORK_MAX_BUFS; b++)
        for (int s = 0; s < 2; s++) {
            free(kc->refs[b][s]);
            kc->refs[b][s] = NULL;
            if (b < kc->work.nbufs && kc->work.bufs[b].is_output)
                kc->work.bufs[b].data[s] = NULL; /* they were the refs, freed above */
        }
    cut_kspec_work_free(&kc->work);
    memset(kc, 0, sizeof *kc);
}

/* The capture run of ref at check_sizes on r (kc->work prepared without references): its outputs become kc's
 * references. */
static int capture(cut_kcheck *kc, const cut_kspec *k, cut_runner *r, const cut_call *ref, cut_err *e)
{
    cut_call call;
    char at[256];
    cut_kspec_sizes_text(k, CUT_KS_CHECK_SIZES, at, sizeof at);
    if (cut_kspec_call_at(k, CUT_KS_CHECK_SIZES, NULL, &call, e) != 0)
        return cut_err_wrap(e, "check_sizes");
    call.src = ref->src;
    call.bin = ref->bin;
    call.tol_scale = ref->tol_scale;
    call.gpu_only = ref->gpu_only;
    snprintf(call.entry, sizeof call.entry, "%s", ref->entry);
    cut_result res;
    cut_work_outputs outs;
    memset(&outs, 0, sizeof outs);
    const cut_timing saved = r->timing;
    r->timing = check_timing(&saved);
    int rc = cut_runner_prepare_work(r, &kc->work, e);
    if (rc == 0)
        rc = cut_runner_run_call(r, &call, &res, &outs, e);
    r->timing = saved;
    if (rc == 0 && res.status != CUT_ST_OK)
        rc = cut_err_set(e, "the %s failed its capture run at %s: %s: %s",
                         k->ref_source ? "reference kernel" : "baseline", at, cut_status_name(res.status), res.error);
    for (int b = 0; rc == 0 && b < kc->work.nbufs; b++)
        for (int s = 0; s < 2 && kc->work.bufs[b].is_output; s++) {
            kc->refs[b][s] = outs.data[b][s];
            outs.data[b][s] = NULL;
            kc->work.bufs[b].data[s] = kc->refs[b][s];
        }
    cut_work_outputs_free(&outs);
    return rc;
}

int cut_kcheck_init(cut_kcheck *kc, const cut_kspec *k, cut_runner *r, const cut_call *ref, const cut_work *main,
                    cut_err *e)
{
    cut_kcheck_free(kc); /* zeroed, or from an earlier init */
    if (!k->has_check_sizes)
        return 0;
    kc->main = main;
    if (cut_kspec_work_at(k, CUT_KS_CHECK_SIZES, &kc->work, e) != 0)
        return -1;
    const int rc = capture(kc, k, r, ref, e);
    /* the runner holds the work at the spec's sizes again, whatever happened */
    cut_err pe = {{0}};
    const int prc = cut_runner_prepare_work(r, main, &pe);
    if (rc != 0)
        return -1;
    if (prc != 0) {
        *e = pe;
        return -1;
    }
    kc->on = 1;
    return 0;
}

/* Candidate i's verdict at check_sizes (chk) folded into its result at the spec's sizes (res, status OK): a wrong
 * result there is WRONG_OTHER_DATA (right on the timed sizes' data, wrong on other sizes' data); any other failure
 * (a fault, a modified input, state kept across launches, ...) keeps its status. Either names the size set. */
static void fold(cut_result *res, const cut_result *chk, const char *at)
{
    if (chk->status == CUT_ST_OK) {
        res->max_abs_err = CUT_MAX(res->max_abs_err, chk->max_abs_err);
        return;
    }
    char msg[sizeof res->error];
    snprintf(msg, sizeof msg, "at %.120s: %s", at, chk->error);
    cut_result_reset(res); /* no times: the candidate failed its check */
    res->status = chk->status == CUT_ST_WRONG_RESULT ? CUT_ST_WRONG_OTHER_DATA : chk->status;
    res->max_abs_err = chk->max_abs_err;
    snprintf(res->error, sizeof res->error, "%s", msg);
}

/* The candidates of c[0..n) whose results passed (vals[i]: their tunables), checked at check_sizes on r: the runner
 * takes kc's work, then kc->main again. A candidate whose tunables break a restriction there, or whose launch does
 * not resolve there, is not checked there: it keeps its result with a note saying so. -1 only for setup errors. */
static int check_all(const cut_kspec *k, const cut_kcheck *kc, cut_runner *r, const cut_candidate *c, int n,
                     long long (*vals)[CUT_KS_MAX_VARS], cut_result *res, cut_err *e)
{
    char at[256];
    cut_kspec_sizes_text(k, CUT_KS_CHECK_SIZES, at, sizeof at);
    const cut_timing saved = r->timing;
    int rc = cut_runner_prepare_work(r, &kc->work, e);
    r->timing = check_timing(&saved);
    for (int i = 0; rc == 0 && i < n; i++) {
        if (res[i].status != CUT_ST_OK || res[i].not_run)
            continue;
        char why[sizeof res[i].error - 64];
        cut_err ce = {{0}};
        cut_call call;
        if (!cut_kspec_allows_at(k, CUT_KS_CHECK_SIZES, vals[i], why, sizeof why)) {
            snprintf(res[i].error, sizeof res[i].error, "not checked at %.80s: %s", at, why);
            continue;
        }
        if (cut_kspec_call_at(k, CUT_KS_CHECK_SIZES, vals[i], &call, &ce) != 0) {
            snprintf(why, sizeof why, "%s", ce.msg);
            snprintf(res[i].error, sizeof res[i].error, "not checked at %.80s: its launch does not resolve there: %s",
                     at, why);
            continue;
        }
        call.src = c[i].ks->src;
        call.bin = c[i].bin;
        call.arch_a = c[i].ks->arch_a;
        cut_result chk;
        if ((rc = cut_runner_run_call(r, &call, &chk, NULL, e)) == 0)
            fold(&res[i], &chk, at);
    }
    r->timing = saved;
    cut_err pe = {{0}};
    if (cut_runner_prepare_work(r, kc->main, &pe) != 0 && rc == 0) {
        *e = pe;
        rc = -1;
    }
    return rc;
}

int cut_kspec_run_candidates(const cut_kspec *k, const cut_kcheck *kc, cut_runner *r, const cut_candidate *c, int n,
                             cut_result *res, cut_err *e)
{
    const int check = kc && kc->on;
    long long (*vals)[CUT_KS_MAX_VARS] = cut_xcalloc((size_t)(n > 0 ? n : 1), sizeof *vals);
    /* with a check to come, no result is final after the first run: the loop must not record it yet */
    void (*on_result)(void *, const cut_result *) = r->on_result;
    if (check)
        r->on_result = NULL;
    int rc = 0, passed = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        cut_call call;
        cut_err why = {{0}};
        cut_result_reset(&res[i]);
        if (cut_kstate_tunables(k, c[i].ks->src, vals[i], &why) != 0 ||
            cut_kspec_call(k, vals[i], &call, &why) != 0) {
            res[i].status = CUT_ST_LAUNCH_ERROR;
            snprintf(res[i].error, sizeof res[i].error, "%s", why.msg);
            continue;
        }
        call.src = c[i].ks->src;
        call.bin = c[i].bin;
        call.arch_a = c[i].ks->arch_a;
        call.keep_dir = c[i].ks->keep_dir;
        rc = cut_runner_run_call(r, &call, &res[i], NULL, e);
        passed += rc == 0 && res[i].status == CUT_ST_OK && !res[i].not_run;
    }
    if (rc == 0 && check && passed > 0)
        rc = check_all(k, kc, r, c, n, vals, res, e);
    r->on_result = on_result;
    free(vals);
    return rc;
}
