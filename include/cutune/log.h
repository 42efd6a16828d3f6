/* cutune — the library's diagnostics go through one process-wide callback (DESIGN.md: library code logs through a
 * callback, never printf).
 *
 * Every message is the complete text the default handler writes to stderr, newline included: "cutune: prior x
 * skipped: ...\n". The tuning loop's progress line is an info message too; where cut_log_tty() is true it starts
 * with "\r\033[K" and has no newline, so the default handler rewrites it in place on the terminal. A program that
 * installs its own handler gets plain lines (cut_log_tty() is then false). Products a caller asks for (a report
 * written to the FILE* it passes, JSON on stdout) are not messages and never come here. */
#ifndef CUTUNE_LOG_H
#define CUTUNE_LOG_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cut_log_level {
    CUT_LOG_ERROR = 0, /* something failed and the operation gives up or skips a part */
    CUT_LOG_WARN = 1,  /* something was off and the operation goes on (a malformed line skipped, no cost model) */
    CUT_LOG_INFO = 2,  /* progress and what the run uses (the progress line, the cost model's prior logs) */
    CUT_LOG_DEBUG = 3, /* details for developers; the default handler drops them */
} cut_log_level;

/* A handler gets the level, the formatted message (valid during the call only) and the ctx it was installed with.
 * It may be called from any thread; calls are not serialised. */
typedef void (*cut_log_fn)(cut_log_level level, const char *msg, void *ctx);

typedef struct cut_log_handler {
    cut_log_fn fn;
    void *ctx;
} cut_log_handler;

/* Installs fn with ctx for the whole process (fn NULL: the default handler) and returns the previous handler, so
 * that a caller can restore it with cut_log_set_handler(prev.fn, prev.ctx) or pass messages on to it. */
cut_log_handler cut_log_set_handler(cut_log_fn fn, void *ctx);

/* The default handler: writes msg verbatim to stderr and flushes it; CUT_LOG_DEBUG messages are dropped. */
void cut_log_default_handler(cut_log_level level, const char *msg, void *ctx);

/* Formats a message and hands it to the installed handler. */
void cut_log(cut_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cut_logv(cut_log_level level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* 1 when messages go to a terminal through the default handler (stderr is a tty): a line may then be rewritten in
 * place with "\r\033[K". 0 with any other handler. */
int cut_log_tty(void);

/* "error", "warn", "info", "debug" ("?" for anything else). */
const char *cut_log_level_name(cut_log_level level);

#ifdef __cplusplus
}
#endif

#endif
