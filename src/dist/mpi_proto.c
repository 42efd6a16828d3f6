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
    static const char *const names[] = {"SETUP", "HELLO", "ENV", "RELEASE"};
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
    uint32_t refs = 0;
    int32_t dev = -1, lim[8] = {0};
    cut_mpi_env_decode(&r, &h->env);
    cut_wp_get_u32(&r, &refs);
    cut_wp_get_i32(&r, &dev);
    for (int i = 0; i < 8; i++)
        cut_wp_get_i32(&r, &lim[i]);
    cut_wp_get_str(&r, h->host, sizeof h->host);
    if (r.bad || r.off != r.len || refs > 1)
        return cut_err_set(e, "a malformed HELLO from a serving rank");
    h->runner_refs = (int)refs;
    h->device = dev;
    h->limits = (cut_devlimits){lim[0], lim[1], lim[2], lim[3], lim[4], lim[5], lim[6], lim[7]};
    return 0;
}
