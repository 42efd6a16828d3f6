/* cutune — a power-cap session: change one GPU's power limit and put the original back on every exit path: end,
 * a failed set, a signal that ends the process (SIGINT/SIGTERM/SIGHUP/SIGQUIT and the crashes SIGSEGV/SIGBUS/
 * SIGABRT/SIGFPE/SIGILL), exit() without end, and (after SIGKILL) the next command's recovery from the GPU's restore
 * file in the per-user state folder. A per-GPU lock keeps two capped runs apart. See cutune/powercap.h.
 *
 * The restore file, the lock, the handlers and the recovery are a guard of the power limit (restore.h, shared with
 * --idle-other-gpus' compute modes); this file adds what is the power limit's own: the allowed range, the refusal
 * without --allow-power-cap, one session per process. */
#include "cutune/powercap.h"

#include "energy/restore.h"
#include "gpu/nvml.h"

#include <stdio.h>
#include <string.h>

/* ---- the power limit as a guarded setting ---- */

static nvmlReturn_t default_limit(nvmlDevice_t dev, unsigned int *mw)
{
    unsigned int def = 0;
    nvmlReturn_t rc = cut_nvml_power_default_mw(dev, &def);
    if (rc == NVML_SUCCESS && def == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    if (rc == NVML_SUCCESS)
        *mw = def;
    return rc;
}

static int valid_mw(double mw) { return mw > 0 && mw < 4e9; }

static void format_mw(unsigned int mw, char *buf, size_t n) { snprintf(buf, n, "%g W", mw / 1000.0); }

static void by_hand_mw(const char *uuid, unsigned int mw, char *buf, size_t n)
{
    snprintf(buf, n, "sudo nvidia-smi -i %s -pl %g", uuid, mw / 1000.0);
}

static const cut_restore_kind k_power_limit = {
    .prefix = "powercap",
    .label = "power-cap",
    .what = "power limit",
    .key = "original_mw",
    .fallback_what = "default limit",
    .check = "nvidia-smi -q -d POWER",
    .root_hint = "setting power limits needs root",
    .busy = "power-capped",
    .get = cut_nvml_power_mgmt_limit_mw,
    .set = cut_nvml_set_power_limit_mw,
    .fallback = default_limit,
    .valid = valid_mw,
    .format = format_mw,
    .by_hand = by_hand_mw,
};

/* ---- the session ---- */

struct cut_powercap_session {
    int active, allow;
    nvmlDevice_t dev;
    cut_powercap_device info; /* info.current_mw is the original limit */
    unsigned int current_mw;
    cut_restore_guard guard; /* with allow: the limit's restore file, lock and handlers */
};

/* One session per process (the guard's handlers find it through a pointer into this storage). */
static cut_powercap_session g_s;

/* Fills s for the GPU; with allow, guards its limit (the lock, a dead session's restore file recovered so that the
 * original recorded is never a crashed run's cap, the restore file written before anything changes). */
static int session_prepare(cut_powercap_session *s, const char *uuid, const char *dir, int allow, cut_err *e)
{
    memset(s, 0, sizeof *s);
    if (cut_powercap_query(uuid, &s->info, e) != 0)
        return -1;
    NVML_CHECK(cut_nvml_device_by_uuid(uuid, &s->dev), e);
    s->allow = allow;
    s->current_mw = s->info.current_mw;
    if (!allow)
        return 0;
    if (!cut_nvml()->nvmlDeviceSetPowerManagementLimit)
        return cut_err_set(e, "cannot cap power: %s lacks nvmlDeviceSetPowerManagementLimit", cut_nvml_lib_path());
    if (cut_restore_guard_begin(&s->guard, &k_power_limit, dir, uuid, e) != 0)
        return -1;
    s->info.current_mw = s->current_mw = s->guard.original; /* the original, as restored */
    return 0;
}

int cut_powercap_begin(const char *uuid, const char *dir, int allow, cut_powercap_session **out, cut_err *e)
{
    *out = NULL;
    if (g_s.active)
        return cut_err_set(e, "a power-cap session is already active in this process (GPU %s); end it first",
                           g_s.info.uuid);
    /* Prepared in place: the guard is armed where it stays. */
    if (session_prepare(&g_s, uuid, dir, allow, e) != 0) {
        memset(&g_s, 0, sizeof g_s);
        return -1;
    }
    g_s.active = 1;
    *out = &g_s;
    return 0;
}

unsigned int cut_powercap_original_mw(const cut_powercap_session *s) { return s ? s->info.current_mw : 0; }

unsigned int cut_powercap_current_mw(const cut_powercap_session *s) { return s ? s->current_mw : 0; }

int cut_powercap_set(cut_powercap_session *s, unsigned int mw, cut_err *e)
{
    if (!s || !s->active)
        return cut_err_set(e, "no power-cap session is active");
    if (mw == s->current_mw)
        return 0;
    if (mw < s->info.min_mw || mw > s->info.max_mw)
        return cut_err_set(e, "power cap %g W is outside the range GPU %s (%s) allows: %g W to %g W", mw / 1000.0,
                           s->info.uuid, s->info.name, s->info.min_mw / 1000.0, s->info.max_mw / 1000.0);
    if (!s->allow)
        return cut_err_set(e,
                           "refusing to change the power limit of GPU %s (%s) from %g W to %g W without "
                           "--allow-power-cap (cutune then restores the original limit at the end, on errors and "
                           "on SIGINT/SIGTERM)",
                           s->info.uuid, s->info.name, s->current_mw / 1000.0, mw / 1000.0);
    nvmlReturn_t rc = cut_restore_guard_set(&s->guard, mw);
    if (rc != NVML_SUCCESS) {
        char what[256];
        snprintf(what, sizeof what, "setting the power limit of GPU %s (%s) to %g W failed", s->info.uuid,
                 s->info.name, mw / 1000.0);
        cut_restore_nvml_fail(&k_power_limit, rc, what, e);
        cut_err e2 = {{0}};
        /* The state is unknown after a failed set: go back to the original. */
        if (cut_restore_guard_restore(&s->guard, &e2) != 0 && e) {
            char first[CUT_ERR_LEN];
            memcpy(first, e->msg, sizeof first);
            cut_err_set(e, "%s; also %s", first, e2.msg);
        } else {
            s->current_mw = s->info.current_mw;
        }
        return -1;
    }
    s->current_mw = mw;
    return 0;
}

int cut_powercap_end(cut_powercap_session *s, cut_err *e)
{
    if (!s || !s->active)
        return 0;
    int rc = cut_restore_guard_end(&s->guard, e); /* not begun (no allow): a no-op */
    if (rc == 0 && s->allow)
        s->current_mw = s->info.current_mw;
    s->active = 0;
    return rc;
}

int cut_powercap_recover(const char *dir, char *note, size_t note_n, cut_err *e)
{
    return cut_restore_recover(&k_power_limit, dir, note, note_n, e);
}
