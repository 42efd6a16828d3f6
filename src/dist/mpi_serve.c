/* cutune — a serving rank's loop (cutune/dist.h): rank 0's requests applied to a local runner.
 *
 * The requests are the measurement worker's (mpi_proto.h); what a worker process does with them, the local runner
 * does here through the runner interface, so the GPU runner and the emulation worker runner keep doing what they do
 * in a single-process run: a fresh worker after a fault, a killed one after a hang, the work sent to it again. */
#include "dist/mpi_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct serve_state {
    cut_runner *local;
    int source;        /* the local runner compiles calls' source itself (the emulator, the compile runner) */
    cut_mpi_make_runner make;
    void *ctx;
} serve_state;

/* Replies to rank 0. -1 with e when MPI fails. */
static int reply(uint32_t type, const cut_buf *b, cut_err *e)
{
    return cut_mpi_send(0, type, b ? b->data : NULL, b ? b->len : 0, 0, e);
}

static int reply_error(const char *msg, cut_err *e)
{
    cut_buf b;
    cut_buf_init(&b);
    cut_wp_error_encode(msg, &b);
    const int rc = reply(CUT_WP_ERROR, &b, e);
    cut_buf_free(&b);
    return rc;
}

/* SETUP: the local runner, made by the caller's make, then HELLO. */
static int on_setup(serve_state *s, const cut_wp_frame *f, cut_err *e)
{
    cut_mpi_setup setup;
    cut_err me = {{0}};
    if (cut_mpi_setup_decode(f, &setup, &me) != 0)
        return reply_error(me.msg, e);
    cut_runner_free(s->local);
    cut_mpi_hello h;
    memset(&h, 0, sizeof h);
    h.device = -1;
    cut_devlimits_sm90(&h.limits);
    if (!(s->local = s->make(s->ctx, &setup, &h, &me)))
        return reply_error(me.msg, e);
    h.env = *s->local->env(s->local);
    h.runner_refs = s->local->runner_refs;
    h.compiles = cut_runner_compiles(s->local) || !strcmp(h.env.backend, "emu");
    if (gethostname(h.host, sizeof h.host - 1) != 0)
        snprintf(h.host, sizeof h.host, "?");
    s->source = h.compiles;
    cut_buf b;
    cut_buf_init(&b);
    cut_mpi_hello_encode(&h, &b);
    const int rc = reply(CUT_MPI_HELLO, &b, e);
    cut_buf_free(&b);
    return rc;
}

static int on_prepare(serve_state *s, const cut_wp_frame *f, cut_err *e)
{
    cut_work w;
    cut_err pe = {{0}};
    if (cut_wp_work_decode(f, &w, &pe) != 0 || s->local->prepare(s->local, &w, 1, &pe) != 0) {
        cut_work_free(&w); /* a no-op once taken */
        return reply_error(pe.msg, e);
    }
    return reply(CUT_WP_ACK, NULL, e);
}

/* A RUN of a call: the call rebuilt around its image (the cubin, or the source its local runner compiles, for
 * sm_XXa when arch_a) and run as the worker would run it (emu_worker.c: run_call), the reply encoded with the same
 * codec. pe gets a setup error. */
static int run_call(serve_state *s, const cut_wp_frame *body, int arch_a, cut_wp_run_result *rr, cut_buf *out,
                    cut_err *pe)
{
    cut_runner *r = s->local;
    cut_wp_run q;
    if (cut_wp_run_body_decode(body, r->work, &q, pe) != 0)
        return -1;
    if (q.what != CUT_WP_RUN_CALL)
        return cut_err_set(pe, "the vendor baselines (cuDNN, cuBLAS) are not run over MPI yet");
    char *src = NULL;
    cut_compiled bin;
    memset(&bin, 0, sizeof bin);
    if (s->source) {
        src = cut_xmalloc(q.image_size + 1);
        memcpy(src, q.image, q.image_size);
        src[q.image_size] = '\0';
        q.call.src = src;
        q.call.arch_a = arch_a;
    } else {
        bin.ok = 1;
        bin.cubin = (char *)q.image; /* read only, while the frame lives */
        bin.cubin_size = q.image_size;
        bin.regs = bin.spill_stores = bin.spill_loads = bin.smem_static = bin.stack_frame = -1;
        q.call.bin = &bin;
    }
    memset(rr, 0, sizeof *rr);
    rr->energy = q.energy;
    cut_work_outputs outs;
    memset(&outs, 0, sizeof outs);
    int rc;
    if (q.energy) {
        cut_err why = {{0}};
        rc = cut_runner_energy_call(r, &q.call, &q.plan, &rr->res, &rr->er, &why); /* a failure is the meter's */
        rr->energy_ok = rc == 0;
        snprintf(rr->why, sizeof rr->why, "%s", rc == 0 ? "" : why.msg);
        rc = 0;
    } else {
        rc = cut_runner_run_call(r, &q.call, &rr->res, cut_work_has_refs(r->work) ? NULL : &outs, pe);
    }
    if (rc == 0)
        cut_wp_run_result_encode(rr, r->work, rr->res.status == CUT_ST_OK ? &outs : NULL, out);
    cut_work_outputs_free(&outs);
    free(src);
    return rc;
}

/* RUN (a cubin) or RUN_SOURCE (the source, compiled here): RUN_RESULT, or RUN_BUILT with the compile's numbers. */
static int on_run(serve_state *s, const cut_wp_frame *f, cut_err *e)
{
    cut_wp_frame run = *f, body;
    cut_err pe = {{0}};
    int arch_a = 0;
    if (!s->local->work)
        return reply_error("a RUN before PREPARE_WORK", e);
    const int with_source = f->type == CUT_MPI_RUN_SOURCE;
    if (with_source != s->source)
        return reply_error(s->source ? "a RUN with a cubin, and this rank compiles what it runs (RUN_SOURCE)"
                                     : "a RUN_SOURCE, and this rank runs cubins (RUN)", e);
    if (with_source && cut_mpi_run_source_split(f, &arch_a, &run, &pe) != 0)
        return reply_error(pe.msg, e);
    if (cut_wp_run_split(&run, &s->local->timing, &body, &pe) != 0)
        return reply_error(pe.msg, e);
    cut_buf b, built;
    cut_buf_init(&b);
    cut_buf_init(&built);
    cut_wp_run_result rr;
    int rc;
    if (run_call(s, &body, arch_a, &rr, &b, &pe) != 0)
        rc = reply_error(pe.msg, e);
    else if (s->source) {
        cut_mpi_run_built_encode(&rr.res.comp, &b, &built);
        rc = reply(CUT_MPI_RUN_BUILT, &built, e);
    } else
        rc = reply(CUT_WP_RUN_RESULT, &b, e);
    cut_buf_free(&b);
    cut_buf_free(&built);
    return rc;
}

static int on_env(serve_state *s, cut_err *e)
{
    cut_buf b;
    cut_buf_init(&b);
    cut_mpi_env_encode(s->local->env(s->local), &b);
    const int rc = reply(CUT_MPI_ENV, &b, e);
    cut_buf_free(&b);
    return rc;
}

int cut_mpi_serve(cut_mpi_make_runner make, void *ctx, cut_err *e)
{
    serve_state s = {.make = make, .ctx = ctx};
    int rc = 0;
    for (int quit = 0; !quit && rc == 0;) {
        cut_wp_frame f;
        if (cut_mpi_recv(0, -1.0, CUT_WP_MAX_REQUEST, &f, e) != 1)
            return cut_err_wrap(e, "rank %d", cut_mpi_rank());
        if (!s.local && f.type != CUT_MPI_SETUP && f.type != CUT_MPI_RELEASE && f.type != CUT_WP_QUIT) {
            char msg[96];
            snprintf(msg, sizeof msg, "%s before SETUP", cut_mpi_type_name(f.type));
            rc = reply_error(msg, e);
            cut_wp_frame_free(&f);
            continue;
        }
        switch (f.type) {
        case CUT_MPI_SETUP:
            rc = on_setup(&s, &f, e);
            break;
        case CUT_WP_PREPARE_WORK:
            rc = on_prepare(&s, &f, e);
            break;
        case CUT_WP_RUN:
        case CUT_MPI_RUN_SOURCE:
            rc = on_run(&s, &f, e);
            break;
        case CUT_MPI_ENV:
            rc = on_env(&s, e);
            break;
        case CUT_MPI_RELEASE:
            cut_runner_free(s.local);
            s.local = NULL;
            break;
        case CUT_WP_QUIT:
            quit = 1;
            break;
        default: {
            char msg[96];
            snprintf(msg, sizeof msg, "unexpected %s", cut_mpi_type_name(f.type));
            rc = reply_error(msg, e);
        }
        }
        cut_wp_frame_free(&f);
    }
    cut_runner_free(s.local);
    return rc;
}
