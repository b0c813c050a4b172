/* log.c: the library's diagnostics go to a replaceable sink; by default they are discarded. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "state.h"

static strobe_log_fn log_fn;
static void *log_ctx;

void strobe_set_log_fn(strobe_log_fn fn, void *ctx) {
    log_fn = fn;
    log_ctx = ctx;
}

void strobe_log_stderr(strobe_log_level level, const char *msg, void *ctx) {
    static const char *const names[] = {"debug", "info", "warning", "error"};
    if ((intptr_t)level < (intptr_t)ctx) return;
    fprintf(stderr, "strobe: %s: %s\n", names[(unsigned)level & 3u], msg);
}

void strobe__log(strobe_log_level level, const char *fmt, ...) {
    strobe_log_fn fn = log_fn;
    if (fn == NULL) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fn(level, msg, log_ctx);
}
