/* cutune — a kernel spec written back as one self-contained JSON text (include/cutune/kspec.h, cut_kspec_to_json):
 * what cutune optimize keeps next to a search, so that the search can be exported after the spec file, its source
 * file or the --sizes of the run are gone. */
#include "cutune/kspec.h"
#include "cutune/util.h"

#include <cjson/cJSON.h>
#include <zlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The parser's names for cut_ks_init, in enum order. */
static const char *const init_names[CUT_KS_INIT_COUNT] = {"randn", "uniform", "zeros", "ones", "full", "arange"};

/* Standard base64 (RFC 4648, '=' padding, no line breaks) of n bytes, malloc'd. */
static char *base64_encode(const unsigned char *in, size_t n)
{
    static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = cut_xmalloc((n + 2) / 3 * 4 + 1), *o = out;
    for (size_t i = 0; i < n; i += 3) {
        const unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0u) |
                           (i + 2 < n ? (unsigned)in[i + 2] : 0u);
        *o++ = alpha[v >> 18 & 63];
        *o++ = alpha[v >> 12 & 63];
        *o++ = i + 1 < n ? alpha[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? alpha[v & 63] : '=';
    }
    *o = 0;
    return out;
}

/* zlib-compressed then base64-encoded payload, malloc'd into *out. */
static int pack_payload(const void *data, size_t n, char **out, cut_err *e)
{
    uLongf zn = compressBound((uLong)n);
    unsigned char *z = cut_xmalloc(zn);
    if (compress2(z, &zn, data, (uLong)n, Z_BEST_SPEED) != Z_OK) {
        free(z);
        return cut_err_set(e, "cannot compress a %zu-byte input payload", n);
    }
    *out = base64_encode(z, zn);
    free(z);
    return 0;
}

static cJSON *str_array(const char (*items)[CUT_KS_EXPR], int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(items[i]));
    return a;
}

static int add_tensors(cJSON *root, const char *key, const cut_ks_tensor *ts, int n, int is_input, cut_err *e)
{
    cJSON *arr = cJSON_AddArrayToObject(root, key);
    for (int i = 0; i < n; i++) {
        const cut_ks_tensor *t = &ts[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddStringToObject(o, "dtype", cut_elem_name(t->dtype));
        cJSON_AddItemToObject(o, "shape", str_array(t->shape, t->ndims));
        if (!is_input) {
            if (t->accumulate)
                cJSON_AddBoolToObject(o, "accumulate", 1);
            continue;
        }
        if (t->payload) {
            char *b64 = NULL;
            if (pack_payload(t->payload, t->payload_bytes, &b64, e) != 0)
                return cut_err_wrap(e, "%s[%d]", key, i);
            cJSON_AddStringToObject(o, "data", b64);
            cJSON_AddStringToObject(o, "encoding", "zlib+base64");
            free(b64);
            continue;
        }
        if (t->init < 0 || t->init >= CUT_KS_INIT_COUNT)
            return cut_err_set(e, "%s[%d]: unknown init %d", key, i, (int)t->init);
        cJSON_AddStringToObject(o, "init", init_names[t->init]);
        if (t->init == CUT_KS_UNIFORM) {
            cJSON_AddNumberToObject(o, "lo", t->lo);
            cJSON_AddNumberToObject(o, "hi", t->hi);
        }
        if (t->init == CUT_KS_FULL)
            cJSON_AddNumberToObject(o, "value", t->fill);
        if (t->seed > (1ULL << 53))
            return cut_err_set(e, "%s[%d].seed: %llu does not fit a JSON number exactly", key, i, t->seed);
        cJSON_AddNumberToObject(o, "seed", (double)t->seed);
    }
    return 0;
}

static void add_vars(cJSON *root, const cut_kspec *k)
{
    cJSON *sizes = cJSON_AddObjectToObject(root, "sizes");
    for (int i = 0; i < k->nsizes; i++)
        cJSON_AddNumberToObject(sizes, k->sizes[i].name, (double)k->sizes[i].value);
    if (k->has_check_sizes) {
        cJSON *check = cJSON_AddObjectToObject(root, "check_sizes");
        for (int i = 0; i < k->nsizes; i++)
            cJSON_AddNumberToObject(check, k->sizes[i].name, (double)k->check_sizes[i]);
    }
    cJSON *tun = cJSON_AddObjectToObject(root, "tunables");
    for (int i = 0; i < k->ntunables; i++) {
        cJSON *a = cJSON_AddArrayToObject(tun, k->tunables[i].name);
        for (int j = 0; j < k->tunables[i].nvalues; j++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber((double)k->tunables[i].values[j]));
    }
    cJSON *l = cJSON_AddObjectToObject(root, "launch");
    cJSON_AddItemToObject(l, "grid", str_array(k->grid, k->ngrid));
    if (k->lang == CUT_KS_TRITON) /* its block follows from num_warps, its shared memory is Triton's */
        return;
    cJSON_AddItemToObject(l, "block", str_array(k->block, k->nblock));
    cJSON_AddStringToObject(l, "smem", k->smem);
}

static void add_scalars_args(cJSON *root, const cut_kspec *k)
{
    cJSON *sc = cJSON_AddArrayToObject(root, "scalars");
    for (int i = 0; i < k->nscalars; i++) {
        const cut_ks_scalar *s = &k->scalars[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(sc, o);
        cJSON_AddStringToObject(o, "name", s->name);
        cJSON_AddStringToObject(o, "dtype", cut_elem_name(s->dtype));
        if (s->is_number) /* a non-integer number: the parser keeps it as a number again */
            cJSON_AddNumberToObject(o, "value", s->number);
        else
            cJSON_AddStringToObject(o, "value", s->value);
    }
    cJSON *args = cJSON_AddArrayToObject(root, "args");
    for (int i = 0; i < k->nargs; i++)
        cJSON_AddItemToArray(args, cJSON_CreateString(k->args[i]));
    cJSON *tol = cJSON_AddObjectToObject(root, "tolerance");
    cJSON_AddNumberToObject(tol, "atol", k->atol);
    cJSON_AddNumberToObject(tol, "rtol", k->rtol);
}

int cut_kspec_to_json(const cut_kspec *k, const char *note, char **out, cut_err *e)
{
    *out = NULL;
    if (!k->source)
        return cut_err_set(e, "spec '%s' has no source to write", k->name);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "name", k->name);
    cJSON_AddStringToObject(root, "language", cut_ks_lang_name(k->lang));
    if (note)
        cJSON_AddStringToObject(root, "snapshot_of", note);
    cJSON_AddStringToObject(root, "entry", k->entry);
    cJSON_AddStringToObject(root, "source", k->source);
    add_vars(root, k);
    int rc = add_tensors(root, "inputs", k->inputs, k->ninputs, 1, e);
    if (rc == 0)
        rc = add_tensors(root, "outputs", k->outputs, k->noutputs, 0, e);
    if (rc == 0) {
        add_scalars_args(root, k);
        if (k->flops[0])
            cJSON_AddStringToObject(root, "flops", k->flops);
        if (k->bytes[0])
            cJSON_AddStringToObject(root, "bytes", k->bytes);
        if (k->ref_source) {
            cJSON *r = cJSON_AddObjectToObject(root, "reference");
            cJSON_AddStringToObject(r, "source", k->ref_source);
            cJSON_AddStringToObject(r, "entry", k->ref_entry);
        }
        *out = cJSON_Print(root);
        if (!*out)
            rc = cut_err_set(e, "cannot serialise spec '%s'", k->name);
    }
    cJSON_Delete(root);
    return rc;
}
