/* cutune — on-disk compile cache: <key>.cubin + <key>.json sidecar, atomic writes, validated reads. */
#include "compile/cache.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cutune/util.h"

/* cut_write_file_atomic names its temporary file after the pid only, so two threads of this process storing the
 * same key at once would share it; one lock for all stores is cheap next to a compile. */
static pthread_mutex_t cache_store_mu = PTHREAD_MUTEX_INITIALIZER;

int cut_cache_path(const char *dir, uint64_t key, const char *ext, char *buf, size_t n, cut_err *e)
{
    int len = snprintf(buf, n, "%s/%016" PRIx64 "%s", dir, key, ext);
    if (len < 0 || (size_t)len >= n)
        return cut_err_set(e, "compile cache path too long in '%s'", dir);
    return 0;
}

static int json_int(const cJSON *obj, const char *name, int *v)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsNumber(it))
        return -1;
    *v = it->valueint;
    return 0;
}

static int parse_hex64(const char *s, uint64_t *v)
{
    if (!s || strlen(s) != 16)
        return -1;
    char *end = NULL;
    unsigned long long x = strtoull(s, &end, 16);
    if (!end || *end)
        return -1;
    *v = (uint64_t)x;
    return 0;
}

int cut_cache_load(const char *dir, uint64_t key, cut_compiled *out)
{
    char jpath[4096], cpath[4096];
    if (cut_cache_path(dir, key, ".json", jpath, sizeof jpath, NULL) ||
        cut_cache_path(dir, key, ".cubin", cpath, sizeof cpath, NULL))
        return 0;
    if (!cut_path_exists(jpath) || !cut_path_exists(cpath))
        return 0;
    char *jtext = NULL, *cubin = NULL;
    size_t jlen = 0, clen = 0;
    cJSON *j = NULL;
    int hit = 0;
    if (cut_read_file(jpath, &jtext, &jlen, NULL) != 0)
        goto done;
    j = cJSON_ParseWithLength(jtext, jlen);
    if (!j)
        goto done;
    int format = 0, size = -1, regs, st, ld, smem, stack;
    uint64_t k = 0, fnv = 0;
    const cJSON *log = cJSON_GetObjectItemCaseSensitive(j, "log");
    if (json_int(j, "format", &format) || format != CUT_CACHE_FORMAT)
        goto done;
    if (parse_hex64(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "key")), &k) || k != key)
        goto done;
    if (parse_hex64(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "cubin_fnv")), &fnv))
        goto done;
    if (json_int(j, "cubin_size", &size) || size < 4 || json_int(j, "regs", &regs) ||
        json_int(j, "spill_stores", &st) || json_int(j, "spill_loads", &ld) || json_int(j, "smem_static", &smem) ||
        json_int(j, "stack_frame", &stack) || !cJSON_IsString(log))
        goto done;
    if (cut_read_file(cpath, &cubin, &clen, NULL) != 0)
        goto done;
    if (clen != (size_t)size || memcmp(cubin, "\x7f" "ELF", 4) != 0 || cut_fnv1a(CUT_FNV_INIT, cubin, clen) != fnv)
        goto done;

    free(out->cubin);
    free(out->log);
    out->ok = 1;
    out->cubin = cubin;
    cubin = NULL;
    out->cubin_size = clen;
    out->log = cut_xstrdup(log->valuestring);
    out->regs = regs;
    out->spill_stores = st;
    out->spill_loads = ld;
    out->smem_static = smem;
    out->stack_frame = stack;
    out->compile_ms = 0;
    out->cache_hit = 1;
    char ppath[4096];
    size_t plen = 0;
    free(out->ptx);
    out->ptx = NULL;
    if (cut_cache_path(dir, key, ".ptx", ppath, sizeof ppath, NULL) == 0 && cut_path_exists(ppath) &&
        cut_read_file(ppath, &out->ptx, &plen, NULL) != 0)
        out->ptx = NULL;
    out->key = key;
    hit = 1;
done:
    cJSON_Delete(j);
    free(jtext);
    free(cubin);
    return hit;
}

int cut_cache_store(const char *dir, uint64_t key, const char *opts, const cut_compiled *c, cut_err *e)
{
    if (!c->ok || !c->cubin || c->cubin_size < 4)
        return cut_err_set(e, "compile cache: refusing to store a failed compile");
    char jpath[4096], cpath[4096], hex[17];
    if (cut_cache_path(dir, key, ".json", jpath, sizeof jpath, e) ||
        cut_cache_path(dir, key, ".cubin", cpath, sizeof cpath, e))
        return -1;

    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "format", CUT_CACHE_FORMAT);
    snprintf(hex, sizeof hex, "%016" PRIx64, key);
    cJSON_AddStringToObject(j, "key", hex);
    cJSON_AddStringToObject(j, "options", opts ? opts : "");
    cJSON_AddNumberToObject(j, "cubin_size", (double)c->cubin_size);
    snprintf(hex, sizeof hex, "%016" PRIx64, cut_fnv1a(CUT_FNV_INIT, c->cubin, c->cubin_size));
    cJSON_AddStringToObject(j, "cubin_fnv", hex);
    cJSON_AddNumberToObject(j, "regs", c->regs);
    cJSON_AddNumberToObject(j, "spill_stores", c->spill_stores);
    cJSON_AddNumberToObject(j, "spill_loads", c->spill_loads);
    cJSON_AddNumberToObject(j, "smem_static", c->smem_static);
    cJSON_AddNumberToObject(j, "stack_frame", c->stack_frame);
    cJSON_AddStringToObject(j, "log", c->log ? c->log : "");
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!text)
        return cut_err_set(e, "compile cache: cannot serialise the sidecar for '%s'", jpath);

    pthread_mutex_lock(&cache_store_mu);
    int rc = cut_write_file_atomic(cpath, c->cubin, c->cubin_size, e);
    char ppath[4096];
    if (rc == 0 && c->ptx && (rc = cut_cache_path(dir, key, ".ptx", ppath, sizeof ppath, e)) == 0)
        rc = cut_write_file_atomic(ppath, c->ptx, strlen(c->ptx), e); /* before the sidecar: a hit finds it */
    if (rc == 0)
        rc = cut_write_file_atomic(jpath, text, strlen(text), e);
    pthread_mutex_unlock(&cache_store_mu);
    free(text);
    if (rc != 0)
        return cut_err_wrap(e, "compile cache");
    return 0;
}
