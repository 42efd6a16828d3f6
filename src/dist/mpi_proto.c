/* cutune — the MPI conversation's frame header, chunking and the messages of its own (mpi_proto.h). No MPI here:
 * these build and are tested without it. */
#include "dist/mpi_proto.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

int cut_mpi_type_known(uint32_t type)
{
    return (type > 0 && type < CUT_WP_TYPE_END) || (type >= CUT_MPI_SETUP && type < CUT_MPI_TYPE_END);
}

const char *cut_mpi_type_name(uint32_t type)
{
    static const char *const names[] = {"SETUP", "HELLO", "ENV", "RELEASE", "RUN_SOURCE", "RUN_BUILT"};
    if (type >= CUT_MPI_SETUP && type < CUT_MPI_TYPE_END)
        return names[type - CUT_MPI_SETUP];
    return cut_wp_type_name(type);
}

void cut_mpi_header(uint8_t hdr[CUT_MPI_HEADER_SIZE], uint32_t type, uint64_t len, uint64_t chunk)
{
    cut_wp_header(hdr, type, len);
    memcpy(hdr + CUT_WP_HEADER_SIZE, &chunk, 8);
}

int cut_mpi_header_parse(const uint8_t hdr[CUT_MPI_HEADER_SIZE], size_t max_len, uint32_t *type, uint64_t *len,
                         uint64_t *chunk, cut_err *e)
{
    uint32_t magic;
    memcpy(&magic, hdr, 4);
    memcpy(type, hdr + 4, 4);
    memcpy(len, hdr + 8, 8);
    memcpy(chunk, hdr + CUT_WP_HEADER_SIZE, 8);
    if (magic != CUT_WP_MAGIC)
        return cut_err_set(e, "a frame with a bad magic number (0x%08x): not cutune, or another version", magic);
    if (!cut_mpi_type_known(*type))
        return cut_err_set(e, "a frame of unknown type %u", *type);
    if (*len > max_len)
        return cut_err_set(e, "a %s frame of %llu bytes, over the %zu accepted", cut_mpi_type_name(*type),
                           (unsigned long long)*len, max_len);
    if (*chunk < 1 || *chunk > CUT_MPI_CHUNK)
        return cut_err_set(e, "a %s frame in chunks of %llu bytes (1 .. %zu)", cut_mpi_type_name(*type),
                           (unsigned long long)*chunk, CUT_MPI_CHUNK);
    return 0;
}

size_t cut_mpi_nchunks(uint64_t len, uint64_t chunk)
{
    return chunk ? (size_t)((len + chunk - 1) / chunk) : 0;
}

void cut_mpi_chunk_at(uint64_t len, uint64_t chunk, size_t i, uint64_t *off, int *n)
{
    *off = (uint64_t)i * chunk;
    const uint64_t left = *off < len ? len - *off : 0;
    *n = (int)(left < chunk ? left : chunk); /* chunk <= CUT_MPI_CHUNK < INT_MAX */
}

void cut_mpi_env_encode(const cut_measure_env *env, cut_buf *b)
{
    cut_wp_put_str(b, env->backend);
    cut_wp_put_str(b, env->gpu_name);
    cut_wp_put_str(b, env->gpu_uuid);
    cut_wp_put_i32(b, env->driver_version);
    cut_wp_put_str(b, env->driver_string);
    cut_wp_put_i32(b, env->sm_clock_mhz);
    cut_wp_put_f64(b, env->power_limit_w);
    cut_wp_put_i32(b, env->other_procs);
    cut_wp_put_u64(b, (uint64_t)env->clock_events);
}

int cut_mpi_env_decode(cut_wp_rd *r, cut_measure_env *env)
{
    int32_t drv, clk, procs;
    uint64_t events;
    memset(env, 0, sizeof *env);
    cut_wp_get_str(r, env->backend, sizeof env->backend);
    cut_wp_get_str(r, env->gpu_name, sizeof env->gpu_name);
    cut_wp_get_str(r, env->gpu_uuid, sizeof env->gpu_uuid);
    cut_wp_get_i32(r, &drv);
    cut_wp_get_str(r, env->driver_string, sizeof env->driver_string);
    cut_wp_get_i32(r, &clk);
    cut_wp_get_f64(r, &env->power_limit_w);
    cut_wp_get_i32(r, &procs);
    if (cut_wp_get_u64(r, &events) != 0)
        return -1; /* the cursor fails every read after its first failure */
    env->driver_version = drv;
    env->sm_clock_mhz = clk;
    env->other_procs = procs;
    env->clock_events = (long long)events;
    return 0;
}

void cut_mpi_hello_encode(const cut_mpi_hello *h, cut_buf *b)
{
    cut_mpi_env_encode(&h->env, b);
    cut_wp_put_u32(b, h->runner_refs ? 1u : 0u);
    cut_wp_put_u32(b, h->compiles ? 1u : 0u);
    cut_wp_put_i32(b, h->device);
    const cut_devlimits *d = &h->limits;
    const int lim[8] = {d->sm_major,           d->sm_minor,          d->sm_count,           d->max_threads_per_block,
                        d->max_smem_per_block, d->max_regs_per_block, d->max_regs_per_thread, d->warp_size};
    for (int i = 0; i < 8; i++)
        cut_wp_put_i32(b, lim[i]);
    cut_wp_put_str(b, h->host);
}

int cut_mpi_hello_decode(const cut_wp_frame *f, cut_mpi_hello *h, cut_err *e)
{
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    memset(h, 0, sizeof *h);
    uint32_t refs = 0, compiles = 0;
    int32_t dev = -1, lim[8] = {0};
    cut_mpi_env_decode(&r, &h->env);
    cut_wp_get_u32(&r, &refs);
    cut_wp_get_u32(&r, &compiles);
    cut_wp_get_i32(&r, &dev);
    for (int i = 0; i < 8; i++)
        cut_wp_get_i32(&r, &lim[i]);
    cut_wp_get_str(&r, h->host, sizeof h->host);
    if (r.bad || r.off != r.len || refs > 1 || compiles > 1)
        return cut_err_set(e, "a malformed HELLO from a serving rank");
    h->runner_refs = (int)refs;
    h->compiles = (int)compiles;
    h->device = dev;
    h->limits = (cut_devlimits){lim[0], lim[1], lim[2], lim[3], lim[4], lim[5], lim[6], lim[7]};
    return 0;
}

void cut_mpi_setup_encode(const cut_mpi_setup *s, cut_buf *b)
{
    cut_wp_put_str(b, s->backend);
    cut_wp_put_u32(b, s->compile ? 1u : 0u);
    cut_wp_put_str(b, s->nvrtc_opts);
}

int cut_mpi_setup_decode(const cut_wp_frame *f, cut_mpi_setup *s, cut_err *e)
{
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    memset(s, 0, sizeof *s);
    uint32_t compile = 0;
    cut_wp_get_str(&r, s->backend, sizeof s->backend);
    cut_wp_get_u32(&r, &compile);
    cut_wp_get_str(&r, s->nvrtc_opts, sizeof s->nvrtc_opts);
    if (r.bad || r.off != r.len || compile > 1)
        return cut_err_set(e, "a malformed SETUP from rank 0");
    s->compile = (int)compile;
    return 0;
}

void cut_mpi_run_source_encode(int arch_a, const cut_buf *run, cut_buf *b)
{
    cut_wp_put_u32(b, arch_a ? 1u : 0u);
    cut_buf_append(b, run->data, run->len);
}

/* The rest of f after the cursor's position, as a frame of type (pointing into f). */
static void rest_of(const cut_wp_frame *f, const cut_wp_rd *r, uint32_t type, cut_wp_frame *out)
{
    out->type = type;
    out->data = f->data + r->off;
    out->len = f->len - r->off;
}

int cut_mpi_run_source_split(const cut_wp_frame *f, int *arch_a, cut_wp_frame *run, cut_err *e)
{
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    uint32_t a = 0;
    if (cut_wp_get_u32(&r, &a) != 0 || a > 1)
        return cut_err_set(e, "a malformed RUN_SOURCE (its target flag)");
    *arch_a = (int)a;
    rest_of(f, &r, CUT_WP_RUN, run);
    return 0;
}

void cut_mpi_run_built_encode(const cut_compile_info *c, const cut_buf *rr, cut_buf *b)
{
    cut_wp_comp_encode(c, b);
    cut_buf_append(b, rr->data, rr->len);
}

int cut_mpi_run_built_split(const cut_wp_frame *f, cut_compile_info *c, cut_wp_frame *rr, cut_err *e)
{
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    if (cut_wp_comp_decode(&r, c) != 0)
        return cut_err_set(e, "a malformed RUN_BUILT (the compile's numbers)");
    rest_of(f, &r, CUT_WP_RUN_RESULT, rr);
    return 0;
}
