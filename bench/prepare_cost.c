/* cutune bench driver: what switching a runner's work costs (kcheck.c switches to a spec's check sizes and back for
 * every build checked there).
 *
 *   prepare_cost triton|emu SPEC.json [ROUNDS]
 *
 * Prepares the spec's work at its sizes (with references: the inputs' bytes stand in, as a prepare does not look at
 * them), then ROUNDS times (default 3) the work at check_sizes and the work at the spec's sizes again, as kcheck.c
 * does for a build, on the Triton runner under Triton's interpreter ($CUTUNE_TRITON_PYTHON, else python3; the worker
 * $CUTUNE_TRITON_WORKER, else tools/triton_worker.py) or on the emulation worker (the GPU worker's protocol: the
 * cutune binary, $CUTUNE_BIN or cut_worker_path). Prints each prepare's wall time, then the runner's counters (sent,
 * held, bytes) as one JSON object on stdout. Needs no GPU. Setup errors: a sentence on stderr, exit 1. */
#include "cutune/emu.h"
#include "cutune/kspec.h"
#include "cutune/kstate.h"
#include "cutune/measure.h"
#include "cutune/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int die(const char *what, const cut_err *e)
{
    fprintf(stderr, "prepare_cost: %s: %s\n", what, e->msg);
    return 1;
}

/* The work at set, every output's references its input's bytes (same shape and dtype in the suite's softmax). */
static int work_at(const cut_kspec *k, cut_ks_sizeset set, cut_work *w, cut_err *e)
{
    if (cut_kspec_work_at(k, set, w, e) != 0)
        return -1;
    for (int b = 0; b < w->nbufs; b++)
        for (int s = 0; s < 2 && w->bufs[b].is_output; s++) {
            if (w->bufs[0].is_output || w->bufs[0].elems != w->bufs[b].elems || w->bufs[0].dtype != w->bufs[b].dtype)
                return cut_err_set(e, "the bench wants the first buffer an input of each output's shape");
            w->bufs[b].data[s] = w->bufs[0].data[s];
        }
    return 0;
}

static void unref(cut_work *w)
{
    for (int b = 0; b < w->nbufs; b++)
        if (w->bufs[b].is_output)
            w->bufs[b].data[0] = w->bufs[b].data[1] = NULL;
    cut_kspec_work_free(w);
}

static cut_runner *runner(const char *kind, cut_err *e)
{
    cut_timing t;
    cut_timing_default(&t);
    if (!strcmp(kind, "emu"))
        return cut_runner_emu_worker_new(getenv("CUTUNE_BIN"), NULL, &t, e);
    const char *py = getenv("CUTUNE_TRITON_PYTHON"), *worker = getenv("CUTUNE_TRITON_WORKER");
    const char *tmp = getenv("TMPDIR");
    char cache[1024];
    snprintf(cache, sizeof cache, "%s/cutune-prepare-cost-cache", tmp && *tmp ? tmp : "/tmp");
    return cut_runner_triton_new(py ? py : "python3", worker ? worker : "tools/triton_worker.py", -1, &t, cache, 0, e);
}

static int timed(cut_runner *r, const cut_work *w, const char *what)
{
    cut_err e = {{0}};
    const double t0 = cut_now_s();
    if (cut_runner_prepare_work(r, w, &e) != 0)
        return die(what, &e);
    fprintf(stderr, "  %-12s %8.1f ms\n", what, (cut_now_s() - t0) * 1e3);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "triton") && strcmp(argv[1], "emu"))) {
        fprintf(stderr, "usage: prepare_cost triton|emu SPEC.json [ROUNDS]\n");
        return 2;
    }
    const int rounds = argc > 3 ? atoi(argv[3]) : 3;
    cut_err e = {{0}};
    cut_kspec k;
    cut_work main_w, check_w;
    memset(&main_w, 0, sizeof main_w);
    memset(&check_w, 0, sizeof check_w);
    if (cut_kspec_load(argv[2], &k, &e) != 0 || work_at(&k, CUT_KS_SIZES, &main_w, &e) != 0 ||
        work_at(&k, CUT_KS_CHECK_SIZES, &check_w, &e) != 0)
        return die(argv[2], &e);
    cut_runner *r = runner(argv[1], &e);
    if (!r)
        return die(argv[1], &e);
    int rc = timed(r, &main_w, "sizes");
    for (int i = 0; rc == 0 && i < rounds; i++)
        rc = timed(r, &check_w, "check_sizes") || timed(r, &main_w, "sizes");
    if (rc == 0)
        printf("{\"runner\": \"%s\", \"rounds\": %d, \"sent\": %ld, \"held\": %ld, \"bytes\": %.0f}\n", argv[1], rounds,
               r->prep.sent, r->prep.held, r->prep.bytes);
    cut_runner_free(r);
    unref(&main_w);
    unref(&check_w);
    cut_kspec_free(&k);
    return rc;
}
