/* cutune — the one check-and-time protocol (verify.h): the sequence, the comparisons and the verdicts, on any
 * device. */
#include "measure/verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t buf_bytes(const cut_work_buf *b) { return b->elems * cut_elem_size(b->dtype); }

static void set_status(cut_result *res, cut_status st, const char *msg)
{
    res->status = st;
    snprintf(res->error, sizeof res->error, "%s", msg);
}

static void drop_times(cut_result *res)
{
    res->median_ms = res->min_ms = res->max_ms = res->warm_ms = -1.0;
    res->repeats = 0;
}

/* The largest output, for one host buffer every comparison shares. */
static size_t largest(const cut_work *w, int outputs)
{
    size_t n = 0;
    for (int i = 0; i < w->nbufs; i++)
        if (w->bufs[i].is_output == outputs && buf_bytes(&w->bufs[i]) > n)
            n = buf_bytes(&w->bufs[i]);
    return n;
}

/* Reads every output and compares it with reference s (or, capturing, keeps it as set s's). 0 when they pass, else
 * -1 with res st and the first mismatch after when. */
static int compare_outputs(const cut_vf *v, const cut_vf_dev *d, int s, cut_status st, const char *when,
                           cut_result *res, int *fatal)
{
    const cut_work *w = v->work;
    void *host = v->scratch;
    int rc = 0;
    for (int i = 0; i < w->nbufs && rc == 0; i++) {
        const cut_work_buf *b = &w->bufs[i];
        if (!b->is_output)
            continue;
        if (!v->capture && d->out_check) {
            size_t bad = 0;
            double maxe = 0;
            const int dc = d->out_check(d->ctx, i, s, v->atol, v->rtol, &bad, &maxe, res, fatal);
            if (dc < 0) {
                rc = -1;
                break;
            }
            if (dc == 0 && bad == 0) {
                res->max_abs_err = CUT_MAX(res->max_abs_err, maxe);
                continue;
            }
        }
        if (d->read(d->ctx, i, s, host, res, fatal) != 0) {
            rc = -1;
            break;
        }
        if (v->capture) {
            free(v->capture->data[i][s]);
            v->capture->data[i][s] = cut_xmalloc(buf_bytes(b));
            memcpy(v->capture->data[i][s], host, buf_bytes(b));
            continue;
        }
        char msg[200];
        double maxe = 0;
        const size_t bad = cut_work_compare(b, host, b->data[s], w->check, v->atol, v->rtol, &maxe, msg, sizeof msg);
        if (maxe > res->max_abs_err)
            res->max_abs_err = maxe;
        if (bad) {
            char full[256];
            snprintf(full, sizeof full, "%s%s", when, msg);
            set_status(res, st, full);
            rc = -1;
        }
    }
    return rc;
}

/* Compares every input of set s with the work's bytes; a modified one is restored. 0 when none was modified, else -1
 * with res INPUT_MODIFIED naming the first (unless res already holds a failure, which stays). */
static int check_inputs(const cut_vf *v, const cut_vf_dev *d, int s, const char *when, cut_result *res, int *fatal)
{
    const cut_work *w = v->work;
    unsigned char *host = v->scratch;
    int rc = 0;
    for (int i = 0; i < w->nbufs && !*fatal; i++) {
        const cut_work_buf *b = &w->bufs[i];
        if (b->is_output)
            continue;
        cut_result tmp;
        cut_result_reset(&tmp);
        int same = 0;
        const int dc = d->in_same ? d->in_same(d->ctx, i, s, &same, &tmp, fatal) : 1;
        if (dc == 0 && same)
            continue;
        if (dc < 0 || d->read(d->ctx, i, s, host, &tmp, fatal) != 0) {
            if (res->status == CUT_ST_OK)
                *res = tmp;
            rc = -1;
            break;
        }
        const unsigned char *want = b->data[s];
        const size_t n = buf_bytes(b), es = cut_elem_size(b->dtype);
        if (!memcmp(host, want, n)) /* the common case, at memory speed; elements are counted only when it differs */
            continue;
        size_t first = n, count = 0;
        for (size_t j = 0; j < n; j += es)
            if (memcmp(host + j, want + j, es)) {
                if (first == n)
                    first = j;
                count++;
            }
        if (res->status == CUT_ST_OK) {
            char msg[256];
            snprintf(msg, sizeof msg, "%sthe kernel wrote its input '%s' (set %d): %zu of %zu elements changed, "
                     "%s[%zu] = %.6g, was %.6g", when, b->name, s, count, b->elems, b->name, first / es,
                     cut_elem_get(b->dtype, host, first / es), cut_elem_get(b->dtype, want, first / es));
            set_status(res, CUT_ST_INPUT_MODIFIED, msg);
        }
        rc = -1;
        cut_result tmp2;
        cut_result_reset(&tmp2);
        if (d->restore(d->ctx, i, s, &tmp2, fatal) != 0)
            break;
    }
    return rc;
}

/* v with its scratch buffer, large enough for any buffer of the work (caller frees ->scratch): every read of a run
 * goes to the same host memory, not to a fresh allocation the kernel must fault in each time. */
static cut_vf with_scratch(const cut_vf *v)
{
    cut_vf r = *v;
    const size_t in = largest(v->work, 0), out = largest(v->work, 1);
    r.scratch = cut_xmalloc(CUT_MAX(CUT_MAX(in, out), (size_t)1));
    return r;
}

/* cut_vf_checked on a v that has its scratch. */
static int checked(const cut_vf *v, const cut_vf_dev *d, int s, unsigned char poison, cut_status st, const char *when,
                   cut_result *res, int *fatal)
{
    if (d->arm(d->ctx, s, poison, 1, res, fatal) != 0 || d->launch(d->ctx, res, fatal) != 0)
        return -1;
    const int out = compare_outputs(v, d, s, st, when, res, fatal);
    if (*fatal)
        return -1;
    const int in = check_inputs(v, d, s, when, res, fatal);
    return out || in ? -1 : 0;
}

int cut_vf_checked(const cut_vf *v, const cut_vf_dev *d, int s, unsigned char poison, cut_status st, const char *when,
                   cut_result *res, int *fatal)
{
    cut_vf w = with_scratch(v);
    const int rc = checked(&w, d, s, poison, st, when, res, fatal);
    free(w.scratch);
    return rc;
}

double cut_vf_floor_ms(const cut_work *w, const cut_vf_dev *d)
{
    double s = 0;
    if (d->peak_flops > 0 && w->flops > 0)
        s = w->flops / d->peak_flops;
    if (d->peak_bytes_s > 0 && w->bytes > 0 && w->bytes / d->peak_bytes_s > s)
        s = w->bytes / d->peak_bytes_s;
    return s * 1e3 / CUT_VF_FLOOR_SLACK;
}

/* Which module variable changed between two snapshots, as "byte 12 of 4096". */
static void state_diff(const unsigned char *a, const unsigned char *b, size_t n, char *out, size_t len)
{
    size_t first = 0, count = 0;
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i] && !count++)
            first = i;
    snprintf(out, len, "%zu of its %zu bytes of module variables changed (the first at byte %zu)", count, n, first);
}

/* C failed: the same launch on set 0 with C's poison tells a kernel that is wrong on other data (it passes) from one
 * that is wrong later whatever the data (it fails too: it depends on the output's old contents, on time, on a race). */
static void diagnose_c(const cut_vf *v, const cut_vf_dev *d, cut_result *res, int *fatal)
{
    cut_result r0;
    cut_result_reset(&r0);
    if (d->arm(d->ctx, 0, CUT_WORK_POISON1, 1, &r0, fatal) != 0 || d->launch(d->ctx, &r0, fatal) != 0 ||
        compare_outputs(v, d, 0, CUT_ST_WRONG_LATER, "", &r0, fatal) == 0 || *fatal)
        return;
    char msg[256];
    snprintf(msg, sizeof msg, "after timing, wrong on either input set (set 0: %.90s; set 1: %.90s)", r0.error,
             res->error);
    set_status(res, CUT_ST_WRONG_LATER, msg);
}

/* B: when A changed the kernel's module state, a second launch that finds it, on the fresh inputs of set 1 with the
 * other poison: a kernel that skips its work once it ran, or copies out what it kept, is wrong there. When it is, the
 * same launch with the state reset tells whether the state is why (it passes: STATEFUL) or not (C's verdicts). 0
 * when B passes or A left the state as it was. */
static int check_state(const cut_vf *v, const cut_vf_dev *d, const unsigned char *s0, cut_result *res, int *fatal)
{
    const int s = v->fixed ? 0 : 1;
    unsigned char *s1 = cut_xmalloc(d->state_bytes);
    int rc = d->state(d->ctx, s1, res, fatal);
    if (rc == 0 && memcmp(s0, s1, d->state_bytes) != 0 &&
        (rc = d->arm(d->ctx, s, CUT_WORK_POISON1, 0, res, fatal)) == 0 && (rc = d->launch(d->ctx, res, fatal)) == 0) {
        rc = compare_outputs(v, d, s, CUT_ST_STATEFUL, "", res, fatal);
        if (rc != 0 && !*fatal) {
            char first[256];
            snprintf(first, sizeof first, "%s", res->error);
            cut_result_reset(res);
            if (checked(v, d, s, CUT_WORK_POISON1, CUT_ST_WRONG_OTHER_DATA, "after timing, fresh inputs: ", res,
                               fatal) == 0) {
                char diff[160], msg[256];
                state_diff(s0, s1, d->state_bytes, diff, sizeof diff);
                snprintf(msg, sizeof msg, "state kept across launches: the first launch left %s, and a second "
                         "launch that finds them is wrong: %.100s", diff, first);
                set_status(res, CUT_ST_STATEFUL, msg);
            } else if (res->status == CUT_ST_WRONG_OTHER_DATA && !*fatal) {
                diagnose_c(v, d, res, fatal);
            }
            rc = -1;
        } else if (!*fatal && check_inputs(v, d, s, "a second launch: ", res, fatal) != 0) {
            rc = -1;
        }
    }
    free(s1);
    return rc;
}

/* T's verdicts on the times: too fast for the device, or escaping the timer. 0 when they stand. */
static int check_times(const cut_vf *v, const cut_vf_dev *d, cut_result *res, int *fatal)
{
    const double floor = cut_vf_floor_ms(v->work, d);
    if (floor > 0 && res->median_ms < floor) {
        const double first = res->median_ms;
        if (d->time(d->ctx, res, fatal) != 0)
            return -1;
        if (res->median_ms < floor) {
            char msg[256];
            snprintf(msg, sizeof msg, "too fast: median %.4g ms (%.4g ms before) is under the %.4g ms the GPU's "
                     "peak allows for %.4g GFLOP and %.4g MB", res->median_ms, first, floor * CUT_VF_FLOOR_SLACK,
                     v->work->flops * 1e-9, v->work->bytes * 1e-6);
            set_status(res, CUT_ST_TOO_FAST, msg);
            return -1;
        }
    }
    if (d->wall) {
        double wall = 0;
        if (d->wall(d->ctx, &wall, res, fatal) != 0)
            return -1;
        if (wall > CUT_VF_ESCAPE_FACTOR * res->median_ms + CUT_VF_ESCAPE_SLACK_MS) {
            char msg[256];
            snprintf(msg, sizeof msg, "work escapes the timed region: a synchronised launch takes %.4g ms by the "
                     "host's clock, the timer says %.4g ms", wall, res->median_ms);
            set_status(res, CUT_ST_TIMING_ESCAPE, msg);
            return -1;
        }
    }
    return 0;
}

/* Every input of both sets compared (and restored where modified), after a failure that may have skipped a check. */
static void sweep_inputs(const cut_vf *v, const cut_vf_dev *d, cut_result *res, int *fatal)
{
    for (int s = 0; s < (v->fixed ? 1 : 2) && !*fatal; s++)
        check_inputs(v, d, s, "", res, fatal);
}

static void check_and_time(const cut_vf *v, const cut_vf_dev *d, unsigned char *s0, cut_result *res, int *fatal)
{
    if (d->state_bytes && d->state(d->ctx, s0, res, fatal) != 0)
        return;
    /* A */
    if (checked(v, d, 0, CUT_WORK_POISON0, CUT_ST_WRONG_RESULT, "", res, fatal) != 0)
        return;
    const double first_err = res->max_abs_err;
    /* B */
    if (d->state_bytes && !v->capture && check_state(v, d, s0, res, fatal) != 0)
        return;
    /* T */
    if (d->time(d->ctx, res, fatal) != 0)
        return;
    if (!v->capture && compare_outputs(v, d, 0, CUT_ST_WRONG_LATER, "after timing: ", res, fatal) != 0)
        return;
    if (*fatal || check_inputs(v, d, 0, "after timing: ", res, fatal) != 0)
        return;
    if (check_times(v, d, res, fatal) != 0)
        return;
    /* C */
    if (!v->fixed && checked(v, d, 1, CUT_WORK_POISON1, CUT_ST_WRONG_OTHER_DATA, "after timing, fresh inputs: ",
                                    res, fatal) != 0) {
        if (res->status == CUT_ST_WRONG_OTHER_DATA && !v->capture && !*fatal)
            diagnose_c(v, d, res, fatal);
        return;
    }
    res->max_abs_err = CUT_MAX(first_err, res->max_abs_err);
    /* W */
    if (d->warm)
        d->warm(d->ctx, res, fatal);
}

void cut_vf_check_and_time(const cut_vf *v, const cut_vf_dev *d, cut_result *res, int *fatal)
{
    cut_result_reset(res);
    *fatal = 0;
    unsigned char *s0 = d->state_bytes ? cut_xmalloc(d->state_bytes) : NULL;
    cut_vf w = with_scratch(v);
    check_and_time(&w, d, s0, res, fatal);
    free(s0);
    if (res->status != CUT_ST_OK) {
        drop_times(res);
        if (!*fatal)
            sweep_inputs(&w, d, res, fatal);
    }
    free(w.scratch);
}
