/* cutune — rank 0's runner of a serving rank (cutune/dist.h): the cut_runner interface over MPI.
 *
 * The runner keeps the work (as the GPU runner does) and sends it once per prepare; each call is one RUN, encoded
 * by the worker protocol's own codecs (cut_wp_run_encode, cut_wp_run_body_encode) and answered by RUN_RESULT
 * (cut_wp_run_result_decode). What can be decided here is decided here, as the GPU runner's parent side does: a call
 * that does not fit the work is its LAUNCH_ERROR, a missing cubin its COMPILE_ERROR. A rank whose runner compiles
 * (the compile runner, the emulator) gets each call as its source in a RUN_SOURCE, and says what the compile gave
 * in its RUN_BUILT, which the result carries (res.comp) to the records. A candidate that faults or
 * hangs is the serving rank's local runner's business (it kills its worker and reports the status); a rank that
 * does not answer in time, or an MPI error, is a setup error that names the rank. */
#include "dist/mpi_proto.h"
#include "measure/gpu_runner_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a serving rank may take beyond a call's own time limit (and its NVRTC compile: CUT_COMPILE_LIMIT_S) before
 * rank 0 gives up on it: its runner may start a worker and give it the work twice (120 s each, gpu_runner.c) and
 * compile under emulation (120 s). */
#define SLACK_S 600.0
/* PREPARE: the same slack, plus the transfer at a slow 10 MB/s. */
#define PREPARE_BYTES_PER_S 1e7

typedef struct mpi_impl {
    int rank;
    int dead;           /* the rank was lost: every later request fails at once */
    int source;         /* its local runner compiles CUDA source itself (the emulator, the compile runner): calls
                           travel as source */
    int have_work;
    cut_work work;      /* the prepared work (owned): r->work, for the callers' checks and the replies' decode */
    cut_measure_env env;
    cut_mpi_hello hello;
} mpi_impl;

/* A lost rank: said once with what the user can do, and remembered. */
static int lost(mpi_impl *m, const char *what, const cut_err *why, cut_err *e)
{
    m->dead = 1;
    cut_mpi_mark_lost();
    return cut_err_set(e, "serving rank %d (%s): %s: %s. The job stops; the same command resumes from the records",
                       m->rank, m->hello.host[0] ? m->hello.host : "?", what, why->msg);
}

/* Sends a request and waits up to timeout_s for its reply (at most max_reply bytes). 0 with *f, -1 with e. */
static int request(mpi_impl *m, uint32_t type, const cut_buf *b, double timeout_s, size_t max_reply, cut_wp_frame *f,
                   cut_err *e)
{
    memset(f, 0, sizeof *f);
    if (m->dead)
        return cut_err_set(e, "serving rank %d was lost earlier", m->rank);
    cut_err we = {{0}};
    if (cut_mpi_send(m->rank, type, b ? b->data : NULL, b ? b->len : 0, 0, &we) != 0)
        return lost(m, "sending a request", &we, e);
    const int rc = cut_mpi_recv(m->rank, timeout_s, max_reply, f, &we);
    if (rc == -2) {
        cut_err_set(&we, "no reply to %s within %.0f s: the rank hangs or its host is gone", cut_mpi_type_name(type),
                    timeout_s);
        return lost(m, "waiting", &we, e);
    }
    return rc == 1 ? 0 : lost(m, "waiting", &we, e);
}

/* An ERROR reply as e's sentence (naming the rank), or an unexpected reply: -1 either way; f freed. */
static int bad_reply(mpi_impl *m, cut_wp_frame *f, const char *to, cut_err *e)
{
    int rc;
    if (f->type == CUT_WP_ERROR) {
        char msg[CUT_ERR_LEN - 64];
        cut_wp_error_decode(f, msg, sizeof msg);
        rc = cut_err_set(e, "rank %d: %s", m->rank, msg);
    } else {
        cut_err we = {{0}};
        cut_err_set(&we, "unexpected %s reply to %s", cut_mpi_type_name(f->type), to);
        rc = lost(m, "protocol", &we, e);
    }
    cut_wp_frame_free(f);
    return rc;
}

static int mpi_prepare(cut_runner *r, cut_work *w, int take, cut_err *e)
{
    mpi_impl *m = r->impl;
    cut_work copy;
    if (cut_work_keep(w, take, &copy, e) != 0)
        return -1;
    cut_work_free(&m->work);
    m->work = copy;
    m->have_work = 1;
    r->work = &m->work;
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_work_encode(&m->work, &b);
    cut_wp_frame f;
    int rc = request(m, CUT_WP_PREPARE_WORK, &b, SLACK_S + (double)b.len / PREPARE_BYTES_PER_S, CUT_WP_MAX_REPLY, &f,
                     e);
    cut_buf_free(&b);
    if (rc == 0 && f.type != CUT_WP_ACK)
        rc = bad_reply(m, &f, "PREPARE_WORK", e);
    else
        cut_wp_frame_free(&f);
    if (rc != 0) { /* the rank holds no work now: nothing runs until the next prepare */
        m->have_work = 0;
        r->work = NULL;
    }
    return rc;
}

/* The seconds rank 0 waits for a call's reply: the rank's runner's longest, and its compile when it compiles. */
static double call_deadline_s(const cut_runner *r, const cut_energy_plan *p)
{
    const mpi_impl *m = r->impl;
    const double t = r->timing.timeout_s > 0 ? r->timing.timeout_s : 10.0;
    return SLACK_S + 3.0 * (p ? cut_wp_energy_timeout_s(t, p) : t) + (m->source ? CUT_COMPILE_LIMIT_S : 0);
}

/* What the rank cannot run is decided here, as the GPU runner's parent side decides it (gpu_runner_kernel.c:
 * cut_gr_call): a call that does not fit the work or whose TMA map the worker would refuse (LAUNCH_ERROR), a
 * missing cubin (COMPILE_ERROR). 1 when res holds such a status, 0 to send the call, -1 for a setup error. */
static int decided_here(mpi_impl *m, const cut_call *c, cut_result *res, cut_err *e)
{
    cut_err ce = {{0}};
    int bad = cut_call_check(&m->work, c, &ce) != 0;
    for (int i = 0; !bad && i < c->nargs; i++)
        bad = c->args[i].tma && cut_wp_tma_check(&c->args[i].desc, &ce) != 0;
    if (bad) {
        res->status = CUT_ST_LAUNCH_ERROR;
        snprintf(res->error, sizeof res->error, "%.250s", ce.msg);
        return 1;
    }
    if (m->source && !c->src)
        return cut_err_set(e, "rank %d compiles what it runs: a call without the kernel's source", m->rank);
    /* a cubin that failed is a compile error even where the rank compiles (the optimizer's NVRTC check) */
    return (!m->source || c->bin) && cut_gr_compile_failed(c->bin, res) != 0;
}

/* The request of call c: a RUN with its cubin, or a RUN_SOURCE with its source. */
static void call_request(const cut_runner *r, const cut_call *c, const cut_energy_plan *plan, cut_buf *b)
{
    const mpi_impl *m = r->impl;
    cut_wp_run q = {.what = CUT_WP_RUN_CALL, .call = *c, .energy = plan != NULL};
    if (plan)
        q.plan = *plan;
    q.image = m->source ? (const uint8_t *)c->src : (const uint8_t *)c->bin->cubin;
    q.image_size = m->source ? strlen(c->src) : c->bin->cubin_size;
    cut_buf body, run;
    cut_buf_init(&body);
    cut_buf_init(&run);
    cut_wp_run_body_encode(&q, &body);
    cut_wp_run_encode(&r->timing, body.data, body.len, m->source ? &run : b);
    if (m->source)
        cut_mpi_run_source_encode(c->arch_a, &run, b);
    cut_buf_free(&body);
    cut_buf_free(&run);
}

/* The reply to a call: RUN_RESULT, or RUN_BUILT (the compile's numbers into comp); f freed. */
static int call_reply(mpi_impl *m, cut_wp_frame *f, const cut_run_opts *o, cut_wp_run_result *rr, cut_err *e)
{
    const uint32_t want = m->source ? CUT_MPI_RUN_BUILT : CUT_WP_RUN_RESULT;
    if (f->type != want)
        return bad_reply(m, f, m->source ? "RUN_SOURCE" : "RUN", e);
    cut_compile_info comp = {0};
    cut_wp_frame res = *f;
    cut_work_outputs none;
    cut_err de = {{0}};
    int rc = m->source ? cut_mpi_run_built_split(f, &comp, &res, &de) : 0;
    if (rc == 0)
        rc = cut_wp_run_result_decode(&res, &m->work, rr, o && o->outs ? o->outs : &none, &de);
    cut_wp_frame_free(f);
    if (rc != 0)
        return lost(m, m->source ? "its RUN_BUILT" : "its RUN_RESULT", &de, e);
    if (!(o && o->outs))
        cut_work_outputs_free(&none);
    rr->res.comp = comp;
    return 0;
}

/* One call, as the GPU runner's parent side checks and sends it. */
static int run_one(cut_runner *r, const cut_call *c, const cut_run_opts *o, cut_result *res, cut_err *e)
{
    mpi_impl *m = r->impl;
    cut_result_reset(res);
    const int here = decided_here(m, c, res, e);
    if (here != 0)
        return here < 0 ? -1 : 0;
    const cut_energy_plan *plan = o ? o->energy : NULL;
    cut_buf b;
    cut_buf_init(&b);
    call_request(r, c, plan, &b);
    cut_wp_frame f;
    const size_t max = cut_wp_run_result_max(&m->work) + CUT_MPI_BUILT_EXTRA;
    int rc = request(m, m->source ? CUT_MPI_RUN_SOURCE : CUT_WP_RUN, &b, call_deadline_s(r, plan), max, &f, e);
    cut_buf_free(&b);
    cut_wp_run_result rr;
    if (rc != 0 || call_reply(m, &f, o, &rr, e) != 0)
        return -1;
    *res = rr.res;
    if (!plan)
        return 0;
    if (res->status != CUT_ST_OK) {
        memset(o->er, 0, sizeof *o->er); /* no energy for a call that failed */
        return 0;
    }
    *o->er = rr.er;
    return rr.energy && rr.energy_ok ? 0 : cut_err_set(e, "rank %d: %s", m->rank,
                                                       rr.why[0] ? rr.why : "the energy measurement failed");
}

static int mpi_run(cut_runner *r, const cut_call *calls, int n, const cut_run_opts *o, cut_result *res, cut_err *e)
{
    mpi_impl *m = r->impl;
    if (!m->have_work)
        return cut_err_set(e, "MPI runner: run called before prepare");
    if (cut_run_opts_check("MPI runner", n, o, NULL, e) != 0) /* references: the serving rank's runner checks */
        return -1;
    return cut_runner_run_each(r, calls, n, o, res, run_one, e);
}

/* The serving rank's env, refreshed there (clocks, other processes); the last one known when it cannot answer. */
static const cut_measure_env *mpi_env(cut_runner *r)
{
    mpi_impl *m = r->impl;
    cut_wp_frame f;
    cut_err e = {{0}};
    if (!m->dead && request(m, CUT_MPI_ENV, NULL, SLACK_S, CUT_WP_MAX_REPLY, &f, &e) == 0) {
        cut_wp_rd rd;
        cut_wp_rd_init(&rd, f.data, f.len);
        cut_measure_env env;
        if (f.type == CUT_MPI_ENV && cut_mpi_env_decode(&rd, &env) == 0)
            m->env = env;
        cut_wp_frame_free(&f);
    }
    return &m->env;
}

static void mpi_destroy(cut_runner *r)
{
    if (!r)
        return;
    mpi_impl *m = r->impl;
    if (m) {
        cut_err ignore;
        if (!m->dead) /* the rank frees its local runner and waits for the next SETUP or QUIT */
            cut_mpi_send(m->rank, CUT_MPI_RELEASE, NULL, 0, 0, &ignore);
        cut_work_free(&m->work);
        free(m);
    }
    free(r);
}

int cut_runner_is_mpi(const cut_runner *r)
{
    return r && r->run == mpi_run;
}

/* Caller frees with cut_runner_free. */
cut_runner *cut_runner_mpi_new(int rank, const cut_mpi_setup *s, const cut_timing *t, cut_mpi_hello *hello,
                               cut_err *e)
{
    if (rank < 1 || rank >= cut_mpi_size()) {
        cut_err_set(e, "MPI runner: rank %d is not a serving rank of this job (%d ranks)", rank, cut_mpi_size());
        return NULL;
    }
    mpi_impl *m = cut_xcalloc(1, sizeof *m);
    m->rank = rank;
    cut_runner *r = cut_xcalloc(1, sizeof *r);
    r->impl = m;
    r->prepare = mpi_prepare;
    r->run = mpi_run;
    r->env = mpi_env;
    r->destroy = mpi_destroy;
    if (t)
        r->timing = *t;
    else
        cut_timing_default(&r->timing);
    cut_buf b;
    cut_buf_init(&b);
    cut_mpi_setup_encode(s, &b);
    cut_wp_frame f;
    int rc = request(m, CUT_MPI_SETUP, &b, SLACK_S, CUT_WP_MAX_REPLY, &f, e);
    cut_buf_free(&b);
    if (rc == 0 && f.type != CUT_MPI_HELLO)
        rc = bad_reply(m, &f, "SETUP", e);
    else if (rc == 0) {
        rc = cut_mpi_hello_decode(&f, &m->hello, e);
        cut_wp_frame_free(&f);
    }
    if (rc != 0) {
        m->dead = 1; /* nothing to release */
        mpi_destroy(r);
        return NULL;
    }
    m->env = m->hello.env;
    m->source = m->hello.compiles;
    r->runner_refs = m->hello.runner_refs;
    if (hello)
        *hello = m->hello;
    return r;
}

void cut_mpi_quit_servers(void)
{
    if (cut_mpi_rank() != 0 || cut_mpi_lost())
        return; /* a lost rank cannot be told: cut_mpi_end aborts the job instead */
    for (int i = 1; i < cut_mpi_size(); i++) {
        cut_err ignore;
        cut_mpi_send(i, CUT_WP_QUIT, NULL, 0, 0, &ignore);
    }
}
