/* log.h: the library's diagnostics (log.c), for every layer: a message goes to the sink set with
 * strobe_set_log_fn(), or nowhere. Any thread. */
#ifndef STROBE_UTIL_LOG_H
#define STROBE_UTIL_LOG_H

#include "strobe/session.h"

void strobe__log(strobe_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif /* STROBE_UTIL_LOG_H */
