/* cutune — guards that put back the GPU settings a run changes: restore files and locks in the per-user state
 * folder, the signal and atexit handlers, and the next start's recovery (see restore.h). */
#include "energy/restore.h"

#include "cutune/log.h"
#include "cutune/powercap.h"
#include "cutune/util.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every signal that ends a process and can be caught: a crash (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL) restores
 * as an interrupt does. */
static const int k_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
#define N_SIGNALS ((int)CUT_ARRAY_LEN(k_signals))

/* The armed guards, which the signal handler walks: a slot's guard pointer is written before armed is set, and
 * armed is cleared before the pointer changes; both change only with the signals blocked. */
static struct {
    volatile sig_atomic_t armed;
    cut_restore_guard *g;
} g_slots[CUT_RESTORE_MAX_GUARDS];

/* The handlers, installed while any guard is armed, and the dispositions they replaced. */
static int g_installed[N_SIGNALS];
static struct sigaction g_old[N_SIGNALS];
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

static void handlers_uninstall(void)
{
    for (int i = 0; i < N_SIGNALS; i++) {
        if (g_installed[i])
            sigaction(k_signals[i], &g_old[i], NULL);
        g_installed[i] = 0;
    }
}

static int handlers_installed(void)
{
    for (int i = 0; i < N_SIGNALS; i++)
        if (g_installed[i])
            return 1;
    return 0;
}

/* Puts every armed guard of this process back, then the previous dispositions, then re-raises: the signal is
 * blocked while its handler runs, so the raise is delivered on return, with the old (usually default) action, and
 * the process ends the way the signal says (exit status, core dump). A forked child (another pid) only dies as it
 * would have: the settings are its parent's to restore. */
static void on_signal(int sig)
{
    int saved_errno = errno;
    pid_t me = getpid();
    for (int i = 0; i < CUT_RESTORE_MAX_GUARDS; i++) {
        cut_restore_guard *g = g_slots[i].g;
        if (!g_slots[i].armed || !g || g->owner != me)
            continue;
        g_slots[i].armed = 0;
        /* Keep the restore file if NVML refuses: the next start's recovery retries. */
        if (g->kind->set(g->dev, g->original) == NVML_SUCCESS)
            unlink(g->path);
    }
    handlers_uninstall(); /* always, or the re-raise would land here again */
    errno = saved_errno;
    raise(sig);
}

/* Installs the handler for each signal the process does not ignore: a signal ignored on purpose (nohup's SIGHUP,
 * a background job's SIGINT) must not start ending the run. */
static int handlers_install(const cut_restore_kind *k, cut_err *e)
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
        if (sigaction(k_signals[i], &sa, &g_old[i]) != 0)
            goto fail;
        g_installed[i] = 1;
    }
    return 0;
fail:
    handlers_uninstall();
    return cut_err_set(e, "cannot install the signal handlers that restore the %s: %s", k->what, strerror(errno));
}

/* Ends the guards this process exits with (exit() without their end). */
static void at_exit_end(void)
{
    for (int i = 0; i < CUT_RESTORE_MAX_GUARDS; i++) {
        cut_restore_guard *g = g_slots[i].g;
        if (!g_slots[i].armed || !g || g->owner != getpid())
            continue;
        cut_err e = {{0}};
        if (cut_restore_guard_end(g, &e) != 0)
            cut_log(CUT_LOG_ERROR, "cutune: %s\n", e.msg);
    }
}

static int any_armed(void)
{
    for (int i = 0; i < CUT_RESTORE_MAX_GUARDS; i++)
        if (g_slots[i].armed)
            return 1;
    return 0;
}

/* Puts g among the armed guards (installing the handlers for the first one). Signals blocked by the caller. */
static int arm(cut_restore_guard *g, cut_err *e)
{
    int slot = -1;
    for (int i = 0; i < CUT_RESTORE_MAX_GUARDS && slot < 0; i++)
        if (!g_slots[i].armed)
            slot = i;
    if (slot < 0)
        return cut_err_set(e, "more than %d GPU settings guarded at once in one process", CUT_RESTORE_MAX_GUARDS);
    if (!handlers_installed() && handlers_install(g->kind, e) != 0)
        return -1;
    g_slots[slot].g = g;
    g_slots[slot].armed = 1;
    g->slot = slot;
    if (!g_atexit_registered && atexit(at_exit_end) == 0)
        g_atexit_registered = 1;
    return 0;
}

/* Takes g out of the armed guards; the handlers go with the last one. Signals blocked by the caller. */
static void disarm(cut_restore_guard *g)
{
    if (g->slot >= 0 && g_slots[g->slot].g == g) {
        g_slots[g->slot].armed = 0;
        g_slots[g->slot].g = NULL;
    }
    g->slot = -1;
    if (!any_armed())
        handlers_uninstall();
}

/* Whether this process has an armed guard of kind k on GPU uuid. */
static int armed_here(const cut_restore_kind *k, const char *uuid)
{
    for (int i = 0; i < CUT_RESTORE_MAX_GUARDS; i++) {
        const cut_restore_guard *g = g_slots[i].g;
        if (g_slots[i].armed && g && g->kind == k && g->owner == getpid() && !strcmp(g->uuid, uuid))
            return 1;
    }
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

static int pid_alive(pid_t pid, unsigned long long start)
{
    if (kill(pid, 0) != 0 && errno != EPERM)
        return 0;
    unsigned long long now = proc_start_ticks(pid);
    return start == 0 || now == 0 || now == start;
}

static int restore_file_write(const cut_restore_guard *g, cut_err *e)
{
    char started[32];
    cut_utc_timestamp(started, sizeof started);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "uuid", g->uuid);
    cJSON_AddStringToObject(o, "name", g->name);
    cJSON_AddNumberToObject(o, g->kind->key, g->original);
    cJSON_AddNumberToObject(o, "pid", (double)g->owner);
    cJSON_AddNumberToObject(o, "pid_start", (double)proc_start_ticks(g->owner));
    cJSON_AddStringToObject(o, "started", started);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text)
        return cut_err_set(e, "out of memory writing %s", g->path);
    cut_buf b;
    cut_buf_init(&b);
    cut_buf_printf(&b, "%s\n", text);
    cJSON_free(text);
    int rc = cut_write_file_atomic(g->path, b.data, b.len, e);
    cut_buf_free(&b);
    return rc;
}

typedef struct restore_record {
    char uuid[96], name[96];
    unsigned int original;
    pid_t pid;
    unsigned long long pid_start;
} restore_record;

static int restore_file_read(const cut_restore_kind *k, const char *path, restore_record *r, cut_err *e)
{
    char *text = NULL;
    size_t len = 0;
    if (cut_read_file(path, &text, &len, e) != 0)
        return -1;
    cJSON *o = cJSON_Parse(text);
    free(text);
    const cJSON *uuid = cJSON_GetObjectItemCaseSensitive(o, "uuid");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k->key);
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(o, "pid");
    const cJSON *start = cJSON_GetObjectItemCaseSensitive(o, "pid_start");
    int ok = cJSON_IsString(uuid) && cJSON_IsNumber(v) && cJSON_IsNumber(pid) && k->valid(v->valuedouble) &&
             pid->valuedouble > 0 && pid->valuedouble <= 4194304.0; /* PID_MAX_LIMIT */
    if (ok) {
        memset(r, 0, sizeof *r);
        snprintf(r->uuid, sizeof r->uuid, "%s", uuid->valuestring);
        snprintf(r->name, sizeof r->name, "%s", cJSON_IsString(name) ? name->valuestring : "?");
        r->original = (unsigned int)v->valuedouble;
        r->pid = (pid_t)pid->valuedouble;
        r->pid_start = cJSON_IsNumber(start) && start->valuedouble > 0 && start->valuedouble <= 9007199254740992.0
                           ? (unsigned long long)start->valuedouble
                           : 0;
    }
    cJSON_Delete(o);
    if (!ok)
        return cut_err_set(e, "%s restore file %s is not valid (want uuid, %s, pid); check the GPU's %s with %s, then "
                           "remove the file", k->label, path, k->key, k->what, k->check);
    return 0;
}

/* DIR/<prefix>_<uuid><ext> into buf. */
static int state_path(const cut_restore_kind *k, char *buf, size_t n, const char *dir, const char *uuid,
                      const char *ext, cut_err *e)
{
    int len = snprintf(buf, n, "%s/%s_%s%s", dir, k->prefix, uuid, ext);
    if (len < 0 || (size_t)len >= n)
        return cut_err_set(e, "%s state path too long in '%s'", k->label, dir);
    return 0;
}

/* Takes the GPU's lock (DIR/<prefix>_<uuid>.lock, flock): *fd, or -1 with a sentence when another process holds
 * it. */
static int lock_gpu(const cut_restore_kind *k, const char *dir, const char *uuid, int *fd, cut_err *e)
{
    char path[4096];
    if (state_path(k, path, sizeof path, dir, uuid, ".lock", e) != 0)
        return -1;
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (*fd < 0)
        return cut_err_set(e, "cannot open the %s lock %s: %s", k->label, path, strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        close(*fd);
        *fd = -1;
        return cut_err_set(e, "GPU %s is being %s by another cutune process (lock %s): one such run per GPU at a "
                           "time", uuid, k->busy, path);
    }
    return 0;
}

int cut_restore_nvml_fail(const cut_restore_kind *k, nvmlReturn_t rc, const char *what, cut_err *e)
{
    char d[160];
    cut_nvml_describe(rc, d, sizeof d);
    if (rc == NVML_ERROR_NO_PERMISSION)
        return cut_err_set(e, "%s: %s (%s: run cutune with sudo)", what, d, k->root_hint);
    return cut_err_set(e, "%s: %s", what, d);
}

/* ---- recovery ---- */

/* Puts v back on GPU dev (when it differs from NVML's value now). NVML_SUCCESS, or the failed set's code. */
static nvmlReturn_t put_back(const cut_restore_kind *k, nvmlDevice_t dev, unsigned int v, unsigned int *now,
                             int *differs)
{
    *differs = k->get(dev, now) != NVML_SUCCESS || *now != v;
    if (!*differs)
        return NVML_SUCCESS;
    sigset_t old;
    signals_block(&old);
    nvmlReturn_t rc = k->set(dev, v);
    signals_restore(&old);
    return rc;
}

/* The note of a recovery into note. */
static void recovered_note(const cut_restore_kind *k, const char *path, const restore_record *r, int readable,
                           int differs, unsigned int now, char *note, size_t note_n)
{
    if (!note || !note_n)
        return;
    char was[64], orig[64];
    k->format(now, was, sizeof was);
    k->format(r->original, orig, sizeof orig);
    if (!readable)
        snprintf(note, note_n, "%s restore file %s was not valid: set GPU %s to its %s %s (it was %s)", k->label, path,
                 r->uuid, k->fallback_what, orig, was);
    else if (differs)
        snprintf(note, note_n, "restored the %s of GPU %s (%s) from %s to %s, left by cutune pid %d", k->what, r->uuid,
                 r->name, was, orig, (int)r->pid);
    else
        snprintf(note, note_n, "GPU %s (%s) was already at its original %s; removed the stale %s", r->uuid, r->name,
                 orig, path);
}

/* A dead session's restore file for GPU uuid (from its name): the value it recorded put back, or, when the file
 * cannot be read, k's fallback (never whatever the crashed run left); then the file is removed. Returns
 * CUT_POWERCAP_RECOVER_RESTORED with note, or -1 (GPU not found, NVML refused; the file is kept). */
static int recover_file(const cut_restore_kind *k, const char *path, const char *uuid, char *note, size_t note_n,
                        cut_err *e)
{
    restore_record r;
    cut_err why = {{0}};
    const int readable = restore_file_read(k, path, &r, &why) == 0 && !strcmp(r.uuid, uuid);
    if (!readable) {
        memset(&r, 0, sizeof r);
        snprintf(r.uuid, sizeof r.uuid, "%s", uuid);
        snprintf(r.name, sizeof r.name, "?");
    }
    if (!cut_nvml_load(e))
        return cut_err_wrap(e, "cannot restore the %s recorded in %s", k->what, path);
    nvmlDevice_t dev;
    nvmlReturn_t rc = cut_nvml_device_by_uuid(r.uuid, &dev);
    if (rc != NVML_SUCCESS) {
        char what[512];
        snprintf(what, sizeof what, "%s restore file %s names GPU %s (%s), which NVML cannot find", k->label, path,
                 r.uuid, r.name);
        return cut_restore_nvml_fail(k, rc, what, e);
    }
    if (!readable && k->fallback(dev, &r.original) != NVML_SUCCESS)
        return cut_err_set(e, "%s restore file %s is not valid (%s) and NVML gives no %s for GPU %s: check its %s with "
                           "%s, then remove the file", k->label, path, why.msg, k->fallback_what, uuid, k->what,
                           k->check);
    unsigned int now = 0;
    int differs = 0;
    rc = put_back(k, dev, r.original, &now, &differs);
    if (rc != NVML_SUCCESS) {
        char what[512], orig[64];
        k->format(r.original, orig, sizeof orig);
        snprintf(what, sizeof what, "could not restore the %s of GPU %s (%s) to %s from %s", k->what, r.uuid, r.name,
                 orig, path);
        return cut_restore_nvml_fail(k, rc, what, e);
    }
    unlink(path);
    recovered_note(k, path, &r, readable, differs, now, note, note_n);
    return CUT_POWERCAP_RECOVER_RESTORED;
}

/* One GPU's restore file in dir: busy (this process guards it, its lock is held, or its process is alive), else
 * recovered. */
static int recover_one(const cut_restore_kind *k, const char *dir, const char *uuid, char *note, size_t note_n,
                       cut_err *e)
{
    char path[4096];
    if (state_path(k, path, sizeof path, dir, uuid, ".json", e) != 0)
        return -1;
    if (!cut_path_exists(path))
        return CUT_POWERCAP_RECOVER_NONE;
    int fd = -1;
    cut_err locked = {{0}};
    restore_record r;
    const int known = restore_file_read(k, path, &r, NULL) == 0;
    int busy = armed_here(k, uuid) || lock_gpu(k, dir, uuid, &fd, &locked) != 0 ||
               (known && r.pid != getpid() && pid_alive(r.pid, r.pid_start));
    if (busy) {
        if (fd >= 0)
            close(fd);
        if (note && note_n)
            snprintf(note, note_n, "a cutune process is changing the %s of GPU %s (restore file %s); left alone",
                     k->what, uuid, path);
        return CUT_POWERCAP_RECOVER_BUSY;
    }
    int rc = recover_file(k, path, uuid, note, note_n, e);
    close(fd);
    return rc;
}

int cut_restore_recover(const cut_restore_kind *k, const char *dir, char *note, size_t note_n, cut_err *e)
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
    const size_t plen = strlen(k->prefix) + 1, ext = 5; /* "<prefix>_", ".json" */
    while ((de = readdir(d)) && n < 16) {
        const char *nm = de->d_name;
        const size_t len = strlen(nm);
        if (len < plen + ext + 1 || strncmp(nm, k->prefix, plen - 1) || nm[plen - 1] != '_' ||
            strcmp(nm + len - ext, ".json") || len - plen - ext >= 96)
            continue;
        snprintf(uuids[n], sizeof uuids[n], "%.*s", (int)(len - plen - ext), nm + plen);
        n++;
    }
    closedir(d);
    for (int i = 0; i < n; i++) {
        char one[512] = "";
        int rc = recover_one(k, dir, uuids[i], one, sizeof one, e);
        if (rc < 0)
            return -1;
        if (rc == CUT_POWERCAP_RECOVER_RESTORED ||
            (rc == CUT_POWERCAP_RECOVER_BUSY && result == CUT_POWERCAP_RECOVER_NONE))
            result = rc;
        if (one[0] && note && note_n)
            snprintf(note + strlen(note), note_n - strlen(note), "%s%s", note[0] ? "; " : "", one);
    }
    return result;
}

/* ---- the guard ---- */

/* A restore file already there for g's GPU: refused when its process is alive, else recovered (note in g). */
static int take_over_file(cut_restore_guard *g, cut_err *e)
{
    const cut_restore_kind *k = g->kind;
    restore_record r;
    if (restore_file_read(k, g->path, &r, NULL) == 0 && (r.pid == getpid() || pid_alive(r.pid, r.pid_start)))
        return cut_err_set(e, "%s restore file %s exists and cutune pid %d, which wrote it, is alive: another session "
                           "is changing the %s of GPU %s", k->label, g->path, (int)r.pid, k->what, g->uuid);
    if (recover_file(k, g->path, g->uuid, g->note, sizeof g->note, e) < 0)
        return -1;
    if (g->note[0])
        cut_log(CUT_LOG_WARN, "cutune: %s\n", g->note);
    return 0;
}

/* Everything of begin after the lock is taken; -1 leaves the lock for the caller to release. */
static int begin_locked(cut_restore_guard *g, cut_err *e)
{
    const cut_restore_kind *k = g->kind;
    if (cut_path_exists(g->path) && take_over_file(g, e) != 0)
        return -1;
    nvmlReturn_t rc = k->get(g->dev, &g->original); /* after any recovery: the GPU's own value */
    if (rc != NVML_SUCCESS) {
        char what[256];
        snprintf(what, sizeof what, "cannot read the %s of GPU %s (%s)", k->what, g->uuid, g->name);
        return cut_restore_nvml_fail(k, rc, what, e);
    }
    if (restore_file_write(g, e) != 0)
        return -1;
    sigset_t old;
    signals_block(&old);
    int armed = arm(g, e);
    signals_restore(&old);
    if (armed != 0)
        unlink(g->path);
    return armed;
}

int cut_restore_guard_begin(cut_restore_guard *g, const cut_restore_kind *k, const char *dir, const char *uuid,
                            cut_err *e)
{
    memset(g, 0, sizeof *g);
    g->kind = k;
    g->lock_fd = -1;
    g->slot = -1;
    g->owner = getpid();
    snprintf(g->uuid, sizeof g->uuid, "%s", uuid);
    nvmlReturn_t rc = cut_nvml_device_by_uuid(uuid, &g->dev);
    if (rc != NVML_SUCCESS) {
        char what[256];
        snprintf(what, sizeof what, "NVML cannot find GPU %s", uuid);
        return cut_restore_nvml_fail(k, rc, what, e);
    }
    if (cut_nvml_device_name(g->dev, g->name, sizeof g->name) != NVML_SUCCESS)
        snprintf(g->name, sizeof g->name, "?");
    if (cut_private_dir(dir, e) != 0 || state_path(k, g->path, sizeof g->path, dir, uuid, ".json", e) != 0 ||
        lock_gpu(k, dir, uuid, &g->lock_fd, e) != 0)
        return -1;
    if (begin_locked(g, e) != 0) {
        close(g->lock_fd);
        g->lock_fd = -1;
        return -1;
    }
    g->active = 1;
    return 0;
}

nvmlReturn_t cut_restore_guard_set(cut_restore_guard *g, unsigned int v)
{
    sigset_t old;
    signals_block(&old);
    nvmlReturn_t rc = g->kind->set(g->dev, v);
    signals_restore(&old);
    return rc;
}

int cut_restore_guard_restore(cut_restore_guard *g, cut_err *e)
{
    const cut_restore_kind *k = g->kind;
    unsigned int now = 0;
    int differs = 0;
    nvmlReturn_t rc = put_back(k, g->dev, g->original, &now, &differs);
    if (rc != NVML_SUCCESS) {
        char what[1024], orig[64], fix[256];
        k->format(g->original, orig, sizeof orig);
        k->by_hand(g->uuid, g->original, fix, sizeof fix);
        snprintf(what, sizeof what, "could not restore the %s of GPU %s (%s) to %s (restore it by hand: %s; the next "
                 "cutune start retries from %s)", k->what, g->uuid, g->name, orig, fix, g->path);
        return cut_restore_nvml_fail(k, rc, what, e);
    }
    if (g->path[0])
        unlink(g->path);
    return 0;
}

int cut_restore_guard_end(cut_restore_guard *g, cut_err *e)
{
    if (!g || !g->active)
        return 0;
    sigset_t old;
    signals_block(&old); /* a signal now waits until the value is back and the old handlers are in place */
    const int mine = getpid() == g->owner;
    if (g->slot >= 0 && g_slots[g->slot].g == g)
        g_slots[g->slot].armed = 0; /* the handler must not restore what is being restored here */
    int rc = mine ? cut_restore_guard_restore(g, e) : 0;
    disarm(g);
    g->active = 0;
    if (g->lock_fd >= 0 && mine) {
        close(g->lock_fd); /* the lock goes with the guard (a failed restore leaves the file for recovery) */
        g->lock_fd = -1;
    }
    signals_restore(&old);
    return rc;
}

/* ---- the state folder ---- */

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
        return cut_err_set(e, "no state folder for the restore files of GPU settings: set CUTUNE_STATE_DIR, "
                           "XDG_STATE_HOME or HOME");
    if (len < 0 || (size_t)len >= n)
        return cut_err_set(e, "state folder path too long");
    if (cut_mkdirs(buf, e) != 0)
        return -1;
    (void)chmod(buf, 0700);
    return cut_private_dir(buf, e);
}
