/* cutune — a power-cap session: change one GPU's power limit and put the original back on every exit path: end,
 * a failed set, a signal that ends the process (SIGINT/SIGTERM/SIGHUP/SIGQUIT and the crashes SIGSEGV/SIGBUS/
 * SIGABRT/SIGFPE/SIGILL), exit() without end, and (after SIGKILL) the next command's recovery from the GPU's restore
 * file in the per-user state folder. A per-GPU lock keeps two capped runs apart. See cutune/powercap.h.
 *
 * One session per process: the signal handler must find it without arguments, so it lives in file-scope
 * storage. Everything the handler uses is computed at begin; it calls NVML through the function pointer loaded
 * then, and unlink(), sigaction() and raise(), which are async-signal-safe. NVML itself is not documented as
 * async-signal-safe; to keep the handler from re-entering NVML while this thread is inside it, the session blocks
 * the three signals around its own NVML calls. Only the process that began the session acts: a forked child
 * (a measurement worker, say) that exits or is sent SIGTERM leaves the limit alone. */
#include "cutune/powercap.h"
#include "cutune/log.h"

#include "cutune/util.h"
#include "gpu/nvml.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every signal that ends a process and can be caught: a crash (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL) restores
 * the limit as an interrupt does. */
static const int k_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
#define N_SIGNALS ((int)CUT_ARRAY_LEN(k_signals))

struct cut_powercap_session {
    int active, allow;
    pid_t owner;
    nvmlDevice_t dev;
    cut_powercap_device info; /* info.current_mw is the original limit */
    unsigned int current_mw;
    char restore_path[4096];
    int lock_fd;              /* the GPU's lock (held for the session): -1 none */
    int installed[N_SIGNALS];
    struct sigaction old[N_SIGNALS];
};

static cut_powercap_session g_s;

/* What the signal handler reads: written before armed is set, and armed is cleared before any of it changes. */
static struct {
    volatile sig_atomic_t armed;
    pid_t owner;
    nvmlReturn_t (*set)(nvmlDevice_t, unsigned int);
    nvmlDevice_t dev;
    unsigned int original_mw;
} g_sig;

static int g_atexit_registered;

/* ---- signals ---- */

static void signals_block(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < N_SIGNALS; i++)
        sigaddset(&set, k_signals[i]);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

static void signals_restore(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

static void handlers_uninstall(cut_powercap_session *s)
{
    for (int i = 0; i < N_SIGNALS; i++) {
        if (s->installed[i])
            sigaction(k_signals[i], &s->old[i], NULL);
        s->installed[i] = 0;
    }
}

/* Restores the limit, then the previous dispositions, then re-raises: the signal is blocked while its handler
 * runs, so the raise is delivered on return, with the old (usually default) action, and the process ends the way
 * the signal says (exit status, core dump). */
static void on_signal(int sig)
{
    int saved_errno = errno;
    /* A forked child (pid differs) only dies as it would have: the limit is its parent's to restore. */
    if (g_sig.armed && getpid() == g_sig.owner) {
        g_sig.armed = 0;
        /* Keep the restore file if NVML refuses: the next start's recovery retries. */
        if (g_sig.set(g_sig.dev, g_sig.original_mw) == NVML_SUCCESS)
            unlink(g_s.restore_path);
    }
    handlers_uninstall(&g_s); /* always, or the re-raise would land here again */
    errno = saved_errno;
    raise(sig);
}

/* Installs the handler for each signal the process does not ignore: a signal ignored on purpose (nohup's SIGHUP,
 * a background job's SIGINT) must not start ending the run. */
static int handlers_install(cut_powercap_session *s, cut_err *e)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < N_SIGNALS; i++)
        sigaddset(&sa.sa_mask, k_signals[i]); /* one restore at a time */
    for (int i = 0; i < N_SIGNALS; i++) {
        struct sigaction cur;
        if (sigaction(k_signals[i], NULL, &cur) != 0)
            goto fail;
        if (cur.sa_handler == SIG_IGN)
            continue;
        if (sigaction(k_signals[i], &sa, &s->old[i]) != 0)
            goto fail;
        s->installed[i] = 1;
    }
    return 0;
fail:
    handlers_uninstall(s);
    return cut_err_set(e, "cannot install the signal handlers that restore the power limit: %s", strerror(errno));
}

/* ---- NVML, with the signals blocked ---- */

static nvmlReturn_t set_limit(nvmlDevice_t dev, unsigned int mw)
{
    sigset_t old;
    signals_block(&old);
    nvmlReturn_t rc = cut_nvml_set_power_limit_mw(dev, mw);
    signals_restore(&old);
    return rc;
}

static int nvml_fail(nvmlReturn_t rc, const char *what, cut_err *e)
{
    char d[160];
    cut_nvml_describe(rc, d, sizeof d);
    return cut_err_set(e, "%s: %s%s", what, d,
                       rc == NVML_ERROR_NO_PERMISSION ? " (setting power limits needs root: run cutune with sudo)"
                                                      : "");
}

/* Puts the original limit back (if it differs from what NVML reports now) and removes the restore file. */
static int restore_original(cut_powercap_session *s, cut_err *e)
{
    unsigned int orig = s->info.current_mw, now = 0;
    if (cut_nvml_power_mgmt_limit_mw(s->dev, &now) != NVML_SUCCESS || now != orig) {
        nvmlReturn_t rc = set_limit(s->dev, orig);
        if (rc != NVML_SUCCESS) {
            char what[512];
            snprintf(what, sizeof what,
                     "could not restore the power limit of GPU %s (%s) to %g W (restore it by hand: sudo nvidia-smi "
                     "-i %s -pl %g; the next cutune start retries from %s)",
                     s->info.uuid, s->info.name, orig / 1000.0, s->info.uuid, orig / 1000.0, s->restore_path);
            return nvml_fail(rc, what, e);
        }
    }
    s->current_mw = orig;
    if (s->restore_path[0])
        unlink(s->restore_path);
    return 0;
}

/* ---- the restore file ---- */

/* Start time of a process in clock ticks since boot (/proc/PID/stat field 22), 0 when unknown: with the pid it
 * tells "our session's process is alive" from "its pid was reused". */
static unsigned long long proc_start_ticks(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may contain spaces and parentheses */
    if (!p)
        return 0;
    /* After ") " come fields 3, 4, ...: skip 19 of them to reach field 22. */
    p++;
    for (int field = 3; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

static int restore_file_write(const cut_powercap_session *s, cut_err *e)
{
    char started[32];
    cut_utc_timestamp(started, sizeof started);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "uuid", s->info.uuid);
    cJSON_AddStringToObject(o, "name", s->info.name);
    cJSON_AddNumberToObject(o, "original_mw", s->info.current_mw);
    cJSON_AddNumberToObject(o, "pid", (double)s->owner);
    cJSON_AddNumberToObject(o, "pid_start", (double)proc_start_ticks(s->owner));
    cJSON_AddStringToObject(o, "started", started);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text)
        return cut_err_set(e, "out of memory writing %s", s->restore_path);
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_printf(&b, "%s\n", text);
    cJSON_free(text);
    int rc = cut_write_file_atomic(s->restore_path, b.data, b.len, e);
    cut_buf_free(&b);
    return rc;
}

typedef struct restore_record {
    char uuid[96], name[96];
    unsigned int original_mw;
    pid_t pid;
    unsigned long long pid_start;
} restore_record;

static int restore_file_read(const char *path, restore_record *r, cut_err *e)
{
    char *text = NULL;
    size_t len = 0;
    if (cut_read_file(path, &text, &len, e) != 0)
        return -1;
    cJSON *o = cJSON_Parse(text);
    free(text);
    const cJSON *uuid = cJSON_GetObjectItemCaseSensitive(o, "uuid");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
    const cJSON *mw = cJSON_GetObjectItemCaseSensitive(o, "original_mw");
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(o, "pid");
    const cJSON *start = cJSON_GetObjectItemCaseSensitive(o, "pid_start");
    int ok = cJSON_IsString(uuid) && cJSON_IsNumber(mw) && cJSON_IsNumber(pid) && mw->valuedouble > 0 &&
             mw->valuedouble < 4e9 && pid->valuedouble > 0;
    if (ok) {
        memset(r, 0, sizeof *r);
        snprintf(r->uuid, sizeof r->uuid, "%s", uuid->valuestring);
        snprintf(r->name, sizeof r->name, "%s", cJSON_IsString(name) ? name->valuestring : "?");
        r->original_mw = (unsigned int)mw->valuedouble;
        r->pid = (pid_t)pid->valuedouble;
        r->pid_start = cJSON_IsNumber(start) && start->valuedouble > 0 ? (unsigned long long)start->valuedouble : 0;
    }
    cJSON_Delete(o);
    if (!ok)
        return cut_err_set(e,
                           "power-cap restore file %s is not valid (want uuid, original_mw, pid); check the GPU's "
                           "power limit with nvidia-smi -q -d POWER, then remove the file",
                           path);
    return 0;
}

static int pid_alive(pid_t pid, unsigned long long start)
{
    if (kill(pid, 0) != 0 && errno != EPERM)
        return 0;
    unsigned long long now = proc_start_ticks(pid);
    return start == 0 || now == 0 || now == start;
}

/* ---- the session ---- */

static void at_exit_restore(void)
{
    if (!g_s.active || !g_s.allow || getpid() != g_s.owner)
        return;
    cut_err e = {{0}};
    if (cut_powercap_end(&g_s, &e) != 0)
        cut_log(CUT_LOG_ERROR, "cutune: %s\n", e.msg);
}

static int recover_file(const char *path, const char *uuid, char *note, size_t note_n, cut_err *e);

/* DIR/powercap_<uuid><ext> into buf. */
static int state_path(char *buf, size_t n, const char *dir, const char *uuid, const char *ext, cut_err *e)
{
    int len = snprintf(buf, n, "%s/powercap_%s%s", dir, uuid, ext);
    if (len < 0 || (size_t)len >= n)
        return cut_err_set(e, "power-cap state path too long in '%s'", dir);
    return 0;
}

/* Takes the GPU's lock (DIR/powercap_<uuid>.lock, flock): *fd, or -1 with a sentence when another process holds
 * it. */
static int lock_gpu(const char *dir, const char *uuid, int *fd, cut_err *e)
{
    char path[4096];
    if (state_path(path, sizeof path, dir, uuid, ".lock", e) != 0)
        return -1;
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (*fd < 0)
        return cut_err_set(e, "cannot open the power-cap lock %s: %s", path, strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        close(*fd);
        *fd = -1;
        return cut_err_set(e, "GPU %s is being power-capped by another cutune process (lock %s): one capped run per "
                           "GPU at a time", uuid, path);
    }
    return 0;
}

/* Fills s for the GPU; with allow, takes the GPU's lock, recovers a dead session's restore file for it (so that the
 * original limit recorded now is never a crashed run's cap), and writes the restore file (before anything
 * changes). */
static int session_prepare(cut_powercap_session *s, const char *uuid, const char *dir, int allow, cut_err *e)
{
    memset(s, 0, sizeof *s);
    s->lock_fd = -1;
    if (cut_powercap_query(uuid, &s->info, e) != 0)
        return -1;
    NVML_CHECK(cut_nvml_device_by_uuid(uuid, &s->dev), e);
    s->allow = allow;
    s->owner = getpid();
    s->current_mw = s->info.current_mw;
    if (!allow)
        return 0;
    if (!cut_nvml()->nvmlDeviceSetPowerManagementLimit)
        return cut_err_set(e, "cannot cap power: %s lacks nvmlDeviceSetPowerManagementLimit", cut_nvml_lib_path());
    if (cut_private_dir(dir, e) != 0 || state_path(s->restore_path, sizeof s->restore_path, dir, uuid, ".json", e) != 0)
        return -1;
    if (lock_gpu(dir, uuid, &s->lock_fd, e) != 0)
        return -1;
    if (cut_path_exists(s->restore_path)) {
        restore_record r;
        char note[512] = "";
        int rc = restore_file_read(s->restore_path, &r, e) == 0 && (r.pid == getpid() || pid_alive(r.pid, r.pid_start))
                     ? cut_err_set(e, "power-cap restore file %s exists and cutune pid %d, which wrote it, is alive: "
                                   "another session is capping GPU %s", s->restore_path, (int)r.pid, uuid)
                     : recover_file(s->restore_path, uuid, note, sizeof note, e);
        if (rc < 0) {
            close(s->lock_fd);
            s->lock_fd = -1;
            return -1;
        }
        if (note[0])
            cut_log(CUT_LOG_WARN, "cutune: %s\n", note);
        if (cut_powercap_query(uuid, &s->info, e) != 0) /* the original, as restored */
            return -1;
        s->current_mw = s->info.current_mw;
    }
    if (restore_file_write(s, e) != 0) {
        close(s->lock_fd);
        s->lock_fd = -1;
        return -1;
    }
    return 0;
}

int cut_powercap_begin(const char *uuid, const char *dir, int allow, cut_powercap_session **out, cut_err *e)
{
    *out = NULL;
    if (g_s.active)
        return cut_err_set(e, "a power-cap session is already active in this process (GPU %s); end it first",
                           g_s.info.uuid);
    cut_powercap_session s;
    if (session_prepare(&s, uuid, dir, allow, e) != 0)
        return -1;
    g_s = s;
    g_s.active = 1;
    if (allow) {
        g_sig.owner = g_s.owner;
        g_sig.set = cut_nvml()->nvmlDeviceSetPowerManagementLimit;
        g_sig.dev = g_s.dev;
        g_sig.original_mw = g_s.info.current_mw;
        g_sig.armed = 1;
        if (handlers_install(&g_s, e) != 0) {
            g_sig.armed = 0;
            unlink(g_s.restore_path);
            close(g_s.lock_fd);
            g_s.lock_fd = -1;
            g_s.active = 0;
            return -1;
        }
        if (!g_atexit_registered && atexit(at_exit_restore) == 0)
            g_atexit_registered = 1;
    }
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
    nvmlReturn_t rc = set_limit(s->dev, mw);
    if (rc != NVML_SUCCESS) {
        char what[256];
        snprintf(what, sizeof what, "setting the power limit of GPU %s (%s) to %g W failed", s->info.uuid,
                 s->info.name, mw / 1000.0);
        nvml_fail(rc, what, e);
        cut_err e2 = {{0}};
        /* The state is unknown after a failed set: go back to the original. */
        if (restore_original(s, &e2) != 0 && e) {
            char first[CUT_ERR_LEN];
            memcpy(first, e->msg, sizeof first);
            cut_err_set(e, "%s; also %s", first, e2.msg);
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
    sigset_t old;
    signals_block(&old); /* a signal now waits until the limit is back and the old handlers are in place */
    g_sig.armed = 0;
    int rc = 0;
    if (s->allow && getpid() == s->owner)
        rc = restore_original(s, e);
    handlers_uninstall(s);
    s->active = 0;
    if (s->lock_fd >= 0 && getpid() == s->owner) {
        close(s->lock_fd); /* the lock goes with the session (a failed restore leaves the file for recovery) */
        s->lock_fd = -1;
    }
    signals_restore(&old);
    return rc;
}

/* ---- recovery at the next start ---- */

/* Puts mw back on the GPU dev (when it differs from now's limit). NVML_SUCCESS, or the failed set's code. */
static nvmlReturn_t put_back(nvmlDevice_t dev, unsigned int mw, unsigned int *now, int *differs)
{
    *differs = cut_nvml_power_mgmt_limit_mw(dev, now) != NVML_SUCCESS || *now != mw;
    return *differs ? set_limit(dev, mw) : NVML_SUCCESS;
}

/* A dead session's restore file for GPU uuid (from its name): the limit it recorded put back, or, when the file
 * cannot be read, NVML's default limit (never whatever the crashed run left); then the file is removed. Returns
 * CUT_POWERCAP_RECOVER_RESTORED with note, or -1 (GPU not found, NVML refused; the file is kept). */
static int recover_file(const char *path, const char *uuid, char *note, size_t note_n, cut_err *e)
{
    restore_record r;
    cut_err why = {{0}};
    const int readable = restore_file_read(path, &r, &why) == 0 && !strcmp(r.uuid, uuid);
    if (!readable) {
        memset(&r, 0, sizeof r);
        snprintf(r.uuid, sizeof r.uuid, "%s", uuid);
        snprintf(r.name, sizeof r.name, "?");
    }
    if (!cut_nvml_load(e))
        return cut_err_wrap(e, "cannot restore the power limit recorded in %s", path);
    nvmlDevice_t dev;
    nvmlReturn_t rc = cut_nvml_device_by_uuid(r.uuid, &dev);
    if (rc != NVML_SUCCESS) {
        char what[512];
        snprintf(what, sizeof what, "power-cap restore file %s names GPU %s (%s), which NVML cannot find", path,
                 r.uuid, r.name);
        return nvml_fail(rc, what, e);
    }
    if (!readable) {
        unsigned int def = 0;
        if (!cut_nvml()->nvmlDeviceGetPowerManagementDefaultLimit ||
            cut_nvml()->nvmlDeviceGetPowerManagementDefaultLimit(dev, &def) != NVML_SUCCESS || def == 0)
            return cut_err_set(e, "power-cap restore file %s is not valid (%s) and NVML gives no default limit for "
                               "GPU %s: check its limit with nvidia-smi -q -d POWER, then remove the file", path,
                               why.msg, uuid);
        r.original_mw = def;
    }
    unsigned int now = 0;
    int differs = 0;
    rc = put_back(dev, r.original_mw, &now, &differs);
    if (rc != NVML_SUCCESS) {
        char what[512];
        snprintf(what, sizeof what, "could not restore the power limit of GPU %s (%s) to %g W from %s", r.uuid,
                 r.name, r.original_mw / 1000.0, path);
        return nvml_fail(rc, what, e);
    }
    unlink(path);
    if (note && note_n) {
        if (!readable)
            snprintf(note, note_n, "power-cap restore file %s was not valid: set GPU %s to its default limit %g W "
                     "(it was %g W)", path, uuid, r.original_mw / 1000.0, now / 1000.0);
        else if (differs)
            snprintf(note, note_n, "restored the power limit of GPU %s (%s) from %g W to %g W, left by cutune pid %d",
                     r.uuid, r.name, now / 1000.0, r.original_mw / 1000.0, (int)r.pid);
        else
            snprintf(note, note_n, "GPU %s (%s) was already at its original %g W; removed the stale %s", r.uuid,
                     r.name, r.original_mw / 1000.0, path);
    }
    return CUT_POWERCAP_RECOVER_RESTORED;
}

/* One GPU's restore file in dir: busy (its lock is held, or its process is alive), else recovered. */
static int recover_one(const char *dir, const char *uuid, char *note, size_t note_n, cut_err *e)
{
    char path[4096];
    if (state_path(path, sizeof path, dir, uuid, ".json", e) != 0)
        return -1;
    if (!cut_path_exists(path))
        return CUT_POWERCAP_RECOVER_NONE;
    int fd = -1;
    cut_err locked = {{0}};
    restore_record r;
    const int known = restore_file_read(path, &r, NULL) == 0;
    /* our own session's file, a held lock, a live writer: a session is running */
    int busy = (g_s.active && !strcmp(g_s.info.uuid, uuid)) || lock_gpu(dir, uuid, &fd, &locked) != 0 ||
               (known && r.pid != getpid() && pid_alive(r.pid, r.pid_start));
    if (busy) {
        if (fd >= 0)
            close(fd);
        if (note && note_n)
            snprintf(note, note_n, "a cutune process is capping GPU %s (restore file %s); left alone", uuid, path);
        return CUT_POWERCAP_RECOVER_BUSY;
    }
    int rc = recover_file(path, uuid, note, note_n, e);
    close(fd);
    return rc;
}

int cut_powercap_recover(const char *dir, char *note, size_t note_n, cut_err *e)
{
    if (note && note_n)
        note[0] = '\0';
    DIR *d = opendir(dir);
    if (!d)
        return CUT_POWERCAP_RECOVER_NONE;
    int result = CUT_POWERCAP_RECOVER_NONE;
    struct dirent *de;
    char uuids[16][96];
    int n = 0;
    while ((de = readdir(d)) && n < 16) {
        const char *nm = de->d_name;
        const size_t len = strlen(nm);
        if (strncmp(nm, "powercap_", 9) || len < 9 + 5 + 1 || strcmp(nm + len - 5, ".json") || len - 14 >= 96)
            continue;
        snprintf(uuids[n], sizeof uuids[n], "%.*s", (int)(len - 14), nm + 9);
        n++;
    }
    closedir(d);
    for (int i = 0; i < n; i++) {
        char one[512] = "";
        int rc = recover_one(dir, uuids[i], one, sizeof one, e);
        if (rc < 0)
            return -1;
        if (rc == CUT_POWERCAP_RECOVER_RESTORED || (rc == CUT_POWERCAP_RECOVER_BUSY && result == CUT_POWERCAP_RECOVER_NONE))
            result = rc;
        if (one[0] && note && note_n)
            snprintf(note + strlen(note), note_n - strlen(note), "%s%s", note[0] ? "; " : "", one);
    }
    return result;
}

int cut_powercap_state_dir(char *buf, size_t n, cut_err *e)
{
    const char *over = getenv("CUTUNE_STATE_DIR"), *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    int len;
    if (over && *over)
        len = snprintf(buf, n, "%s", over);
    else if (xdg && xdg[0] == '/')
        len = snprintf(buf, n, "%s/cutune", xdg);
    else if (home && home[0] == '/')
        len = snprintf(buf, n, "%s/.local/state/cutune", home);
    else
        return cut_err_set(e, "no state folder for power-cap restore files: set CUTUNE_STATE_DIR, XDG_STATE_HOME or "
                           "HOME");
    if (len < 0 || (size_t)len >= n)
        return cut_err_set(e, "state folder path too long");
    if (cut_mkdirs(buf, e) != 0)
        return -1;
    (void)chmod(buf, 0700);
    return cut_private_dir(buf, e);
}
