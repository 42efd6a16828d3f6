/* cutune — the log callback (log.h). */
#include "cutune/log.h"
#include "cutune/common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The installed handler: process-wide by nature (as a signal handler is), guarded by its own lock so that a
 * handler installed by one thread is seen whole (fn with its ctx) by every other. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static cut_log_handler g_handler = {cut_log_default_handler, NULL};

static cut_log_handler current(void)
{
    pthread_mutex_lock(&g_lock);
    cut_log_handler h = g_handler;
    pthread_mutex_unlock(&g_lock);
    return h;
}

cut_log_handler cut_log_set_handler(cut_log_fn fn, void *ctx)
{
    pthread_mutex_lock(&g_lock);
    cut_log_handler prev = g_handler;
    g_handler.fn = fn ? fn : cut_log_default_handler;
    g_handler.ctx = fn ? ctx : NULL;
    pthread_mutex_unlock(&g_lock);
    return prev;
}

void cut_log_default_handler(cut_log_level level, const char *msg, void *ctx)
{
    (void)ctx;
    if (level == CUT_LOG_DEBUG || !msg)
        return;
    fputs(msg, stderr);
    fflush(stderr);
}

void cut_logv(cut_log_level level, const char *fmt, va_list ap)
{
    const cut_log_handler h = current();
    char small[2048];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    char *big = NULL;
    /* A longer message is formatted again into the heap; without memory it goes out truncated. */
    if (n >= (int)sizeof small && (big = malloc((size_t)n + 1)) != NULL)
        vsnprintf(big, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        small[0] = '\0';
    cut_redact(big ? big : small);
    h.fn(level, big ? big : small, h.ctx);
    free(big);
}

void cut_log(cut_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cut_logv(level, fmt, ap);
    va_end(ap);
}

int cut_log_tty(void)
{
    return current().fn == cut_log_default_handler && isatty(STDERR_FILENO);
}

const char *cut_log_level_name(cut_log_level level)
{
    switch (level) {
    case CUT_LOG_ERROR:
        return "error";
    case CUT_LOG_WARN:
        return "warn";
    case CUT_LOG_INFO:
        return "info";
    case CUT_LOG_DEBUG:
        return "debug";
    }
    return "?";
}
