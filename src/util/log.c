/* log.c: the library's diagnostics go to a replaceable sink; by default they are discarded. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "log.h"

static strobe_log_fn log_fn;
static void *log_ctx;

/* Background threads (the on-demand endpoint's) log at any time, also while the program installs
 * its sink: both words are atomic, the context stored before the function that reads it. */
void strobe_set_log_fn(strobe_log_fn fn, void *ctx) {
    __atomic_store_n(&log_ctx, ctx, __ATOMIC_RELEASE);
    __atomic_store_n(&log_fn, fn, __ATOMIC_RELEASE);
}

void strobe_log_stderr(strobe_log_level level, const char *msg, void *ctx) {
    static const char *const names[] = {"debug", "info", "warning", "error"};
    if ((intptr_t)level < (intptr_t)ctx) return;
    fprintf(stderr, "strobe: %s: %s\n", names[(unsigned)level & 3u], msg);
}

void strobe__log(strobe_log_level level, const char *fmt, ...) {
    strobe_log_fn fn = __atomic_load_n(&log_fn, __ATOMIC_ACQUIRE);
    if (fn == NULL) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fn(level, msg, __atomic_load_n(&log_ctx, __ATOMIC_ACQUIRE));
}
