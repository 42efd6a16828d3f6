/* cutune — the measurement worker's codecs of held works (both sides): HOLD_WORK (an id and a work), SELECT_WORK and
 * DROP_WORK (an id), and the worker's reply HELD (the selected id and every id it holds). worker_proto.h has the
 * conversation. */
#include "measure/worker_proto.h"
#include "measure/worker_proto_int.h"

#include <stdio.h>
#include <string.h>

void cut_wp_hold_encode(uint64_t id, const cut_work *w, cut_buf *b)
{
    cut_wp_put_u64(b, id);
    cut_wp_work_encode(w, b);
}

int cut_wp_hold_decode(const cut_wp_frame *f, uint64_t *id, cut_work *w, cut_err *e)
{
    memset(w, 0, sizeof *w);
    *id = 0;
    if (cut_wp_expect_type(f, CUT_WP_HOLD_WORK, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    uint64_t v = 0;
    if (cut_wp_get_u64(&r, &v) != 0)
        return cut_err_set(e, "malformed HOLD_WORK message (%zu bytes): no room for the work's id", f->len);
    if (v == 0)
        return cut_err_set(e, "malformed HOLD_WORK message: work id 0 (ids start at 1)");
    /* the rest is PREPARE_WORK's payload, decoded as such */
    const cut_wp_frame body = {CUT_WP_PREPARE_WORK, f->len > 8 ? f->data + 8 : NULL, f->len - 8};
    if (cut_wp_work_decode(&body, w, e) != 0)
        return cut_err_wrap(e, "HOLD_WORK of work %llu", (unsigned long long)v);
    *id = v;
    return 0;
}

void cut_wp_id_encode(uint64_t id, cut_buf *b) { cut_wp_put_u64(b, id); }

int cut_wp_id_decode(const cut_wp_frame *f, uint32_t type, uint64_t *id, cut_err *e)
{
    *id = 0;
    if (type != CUT_WP_SELECT_WORK && type != CUT_WP_DROP_WORK)
        return cut_err_set(e, "%s does not carry a work id", cut_wp_type_name(type));
    if (cut_wp_expect_type(f, type, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    uint64_t v = 0;
    cut_wp_get_u64(&r, &v);
    if (cut_wp_rd_finish(&r, f, e) != 0)
        return -1;
    if (v == 0)
        return cut_err_set(e, "malformed %s message: work id 0 (ids start at 1)", cut_wp_type_name(type));
    *id = v;
    return 0;
}

void cut_wp_held_encode(const cut_wp_held *h, cut_buf *b)
{
    cut_wp_put_u64(b, h->selected);
    cut_wp_put_u32(b, (uint32_t)h->n);
    for (int i = 0; i < h->n; i++)
        cut_wp_put_u64(b, h->id[i]);
}

int cut_wp_held_has(const cut_wp_held *h, uint64_t id)
{
    for (int i = 0; i < h->n; i++)
        if (h->id[i] == id)
            return 1;
    return 0;
}

int cut_wp_held_decode(const cut_wp_frame *f, cut_wp_held *h, cut_err *e)
{
    memset(h, 0, sizeof *h);
    if (cut_wp_expect_type(f, CUT_WP_HELD, e))
        return -1;
    cut_wp_rd r;
    cut_wp_rd_init(&r, f->data, f->len);
    uint64_t sel = 0;
    uint32_t n = 0;
    cut_wp_get_u64(&r, &sel);
    cut_wp_get_u32(&r, &n);
    if (!r.bad && n > CUT_WP_HOLD_MAX)
        return cut_err_set(e, "malformed HELD message: %u works held (at most %d)", n, CUT_WP_HOLD_MAX);
    for (uint32_t i = 0; i < n && !r.bad; i++)
        cut_wp_get_u64(&r, &h->id[i]);
    if (cut_wp_rd_finish(&r, f, e) != 0) {
        memset(h, 0, sizeof *h);
        return -1;
    }
    h->n = (int)n;
    for (int i = 0; i < h->n; i++)
        for (int j = 0; j <= i; j++)
            if (h->id[i] == 0 || (j < i && h->id[j] == h->id[i])) {
                const unsigned long long bad = h->id[i];
                memset(h, 0, sizeof *h);
                return cut_err_set(e, "malformed HELD message: work id %llu %s", bad,
                                   bad ? "listed twice" : "(ids start at 1)");
            }
    h->selected = sel;
    if (sel && !cut_wp_held_has(h, sel)) {
        memset(h, 0, sizeof *h);
        return cut_err_set(e, "malformed HELD message: work %llu selected but not among the %u held",
                           (unsigned long long)sel, n);
    }
    return 0;
}
