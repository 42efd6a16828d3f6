/* cutune — --idle-other-gpus: every GPU but the measured one set to compute mode PROHIBITED for a run, each
 * original mode guarded like a power cap (restore.h) and put back on every way out. See cutune/idle.h. */
#include "cutune/idle.h"

#include "cutune/util.h"
#include "energy/restore.h"
#include "gpu/nvml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the compute mode as a guarded setting ---- */

static nvmlReturn_t get_mode(nvmlDevice_t dev, unsigned int *mode)
{
    int m = 0;
    nvmlReturn_t rc = cut_nvml_compute_mode(dev, &m);
    if (rc == NVML_SUCCESS)
        *mode = (unsigned int)m;
    return rc;
}

/* Runs inside signal handlers too: the NVML call only. */
static nvmlReturn_t set_mode(nvmlDevice_t dev, unsigned int mode) { return cut_nvml_set_compute_mode(dev, (int)mode); }

/* What a restore file that cannot be read restores: the mode a GPU boots with. */
static nvmlReturn_t default_mode(nvmlDevice_t dev, unsigned int *mode)
{
    (void)dev;
    *mode = NVML_COMPUTEMODE_DEFAULT;
    return NVML_SUCCESS;
}

static int valid_mode(double m) { return m >= 0 && m < NVML_COMPUTEMODE_COUNT && m == (double)(int)m; }

static void format_mode(unsigned int mode, char *buf, size_t n)
{
    snprintf(buf, n, "mode %s", cut_nvml_compute_mode_name((int)mode));
}

static void by_hand_mode(const char *uuid, unsigned int mode, char *buf, size_t n)
{
    snprintf(buf, n, "sudo nvidia-smi -i %s -c %s", uuid, cut_nvml_compute_mode_name((int)mode));
}

static const cut_restore_kind k_compute_mode = {
    .prefix = "computemode",
    .label = "compute-mode",
    .what = "compute mode",
    .key = "original_mode",
    .fallback_what = "default",
    .check = "nvidia-smi -q -d COMPUTE",
    .root_hint = "changing the compute mode of a GPU needs root",
    .busy = "idled",
    .get = get_mode,
    .set = set_mode,
    .fallback = default_mode,
    .valid = valid_mode,
    .format = format_mode,
    .by_hand = by_hand_mode,
};

/* ---- the session ---- */

struct cut_idle_session {
    int n;                    /* GPUs idled */
    cut_restore_guard *gpus;  /* n guards, one per idled GPU (their addresses stay fixed: the handlers hold them) */
};

static int g_active; /* one session per process, as for power caps */

/* The UUIDs of NVML's devices other than measured: *out (caller frees) and *n. Refused when NVML does not list
 * measured, so that a typo never idles the GPU that is to be measured. */
static int other_gpus(const char *measured, char (**out)[96], int *n, cut_err *e)
{
    unsigned int count = 0;
    *out = NULL;
    *n = 0;
    NVML_CHECK(cut_nvml_device_count(&count), e);
    char(*uuids)[96] = cut_xmalloc(sizeof *uuids * (count ? count : 1));
    int found = 0, k = 0;
    for (unsigned int i = 0; i < count; i++) {
        nvmlDevice_t dev;
        char uuid[96];
        nvmlReturn_t rc = cut_nvml_device_by_index(i, &dev);
        if (rc == NVML_SUCCESS)
            rc = cut_nvml_device_uuid(dev, uuid, sizeof uuid);
        if (rc != NVML_SUCCESS) {
            char d[160];
            cut_nvml_describe(rc, d, sizeof d);
            free(uuids);
            return cut_err_set(e, "cannot read the UUID of NVML device %u: %s", i, d);
        }
        if (!strcmp(uuid, measured))
            found = 1;
        else
            snprintf(uuids[k++], sizeof uuids[0], "%s", uuid);
    }
    if (!found) {
        free(uuids);
        return cut_err_set(e, "the measured GPU %s is not among the %u GPU(s) NVML lists, so which GPUs are the "
                           "others is unknown; nothing was changed", measured, count);
    }
    *out = uuids;
    *n = k;
    return 0;
}

/* Ends the first n guards of s, each whatever the others do; the first failure's sentence in e. */
static int end_guards(cut_idle_session *s, int n, cut_err *e)
{
    int rc = 0;
    for (int i = 0; i < n; i++) {
        cut_err one = {{0}};
        if (cut_restore_guard_end(&s->gpus[i], &one) != 0 && rc == 0) {
            rc = -1;
            if (e)
                *e = one;
        }
    }
    return rc;
}

/* Guards GPU uuid's compute mode (its original recorded) and sets it PROHIBITED. */
static int idle_one(cut_restore_guard *g, const char *uuid, const char *dir, cut_err *e)
{
    if (cut_restore_guard_begin(g, &k_compute_mode, dir, uuid, e) != 0)
        return -1;
    if (g->original == NVML_COMPUTEMODE_PROHIBITED)
        return 0;
    nvmlReturn_t rc = cut_restore_guard_set(g, NVML_COMPUTEMODE_PROHIBITED);
    if (rc == NVML_SUCCESS)
        return 0;
    char what[512];
    snprintf(what, sizeof what, "setting the compute mode of GPU %s (%s) to PROHIBITED failed", g->uuid, g->name);
    return cut_restore_nvml_fail(&k_compute_mode, rc, what, e);
}

int cut_idle_begin(const char *measured_uuid, const char *dir, cut_idle_session **out, cut_err *e)
{
    *out = NULL;
    if (g_active)
        return cut_err_set(e, "this process idles the other GPUs already; end that session first");
    if (!cut_nvml_load(e))
        return cut_err_wrap(e, "idling the other GPUs needs NVML");
    if (!cut_nvml()->nvmlDeviceGetComputeMode || !cut_nvml()->nvmlDeviceSetComputeMode)
        return cut_err_set(e, "cannot idle the other GPUs: %s lacks nvmlDeviceGetComputeMode/nvmlDeviceSetComputeMode",
                           cut_nvml_lib_path());
    char(*uuids)[96] = NULL;
    int n = 0;
    if (other_gpus(measured_uuid, &uuids, &n, e) != 0)
        return -1;
    cut_idle_session *s = cut_xmalloc(sizeof *s);
    s->n = 0;
    s->gpus = cut_xmalloc(sizeof *s->gpus * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        cut_restore_guard *g = &s->gpus[i];
        if (idle_one(g, uuids[i], dir, e) == 0) {
            s->n++;
            continue;
        }
        /* Put back what changed: this GPU (a failed set) and every one before it. */
        int begun = s->n + (g->active ? 1 : 0);
        cut_err undo = {{0}};
        if (end_guards(s, begun, &undo) != 0) {
            char first[CUT_ERR_LEN];
            memcpy(first, e->msg, sizeof first);
            cut_err_set(e, "%s; also %s", first, undo.msg);
        }
        free(uuids);
        free(s->gpus);
        free(s);
        return -1;
    }
    free(uuids);
    g_active = 1;
    *out = s;
    return 0;
}

int cut_idle_count(const cut_idle_session *s) { return s ? s->n : 0; }

const char *cut_idle_uuid(const cut_idle_session *s, int i)
{
    return s && i >= 0 && i < s->n ? s->gpus[i].uuid : NULL;
}

const char *cut_idle_name(const cut_idle_session *s, int i)
{
    return s && i >= 0 && i < s->n ? s->gpus[i].name : NULL;
}

const char *cut_idle_original(const cut_idle_session *s, int i)
{
    return s && i >= 0 && i < s->n ? cut_nvml_compute_mode_name((int)s->gpus[i].original) : NULL;
}

int cut_idle_end(cut_idle_session *s, cut_err *e)
{
    if (!s)
        return 0;
    int rc = end_guards(s, s->n, e);
    free(s->gpus);
    free(s);
    g_active = 0;
    return rc;
}

int cut_idle_recover(const char *dir, char *note, size_t note_n, cut_err *e)
{
    return cut_restore_recover(&k_compute_mode, dir, note, note_n, e);
}
