/* use_all_macros.h: one function that uses every instrumentation macro and inline call, shared by
 * the compile tests (enabled and compiled out, C and C++). */
#ifndef STROBE_TEST_USE_ALL_MACROS_H
#define STROBE_TEST_USE_ALL_MACROS_H
#include "strobe/instrument.h"

static inline int use_all_macros(int n) {
    int acc = 0;
    STROBE_THREAD_NAME("worker");
    STROBE_RANGE_BEGIN("literal");
    STROBE_RANGE_BEGIN_SCOPE("literal fn", STROBE_RECORD_SCOPE_FUNCTION);
    STROBE_RANGE_END();
    STROBE_RANGE_END();
    for (int i = 0; i < n; i++) {
        STROBE_SCOPE("loop");
        STROBE_OP("op");
        STROBE_FUNC();
        STROBE_SCOPE_NAME("dynamic", STROBE_RECORD_SCOPE_USER_SCOPE);
        STROBE_INSTANT("instant");
        STROBE_COUNTER("counter", (double)i);
        acc += i;
    }
    {
        /* Two scopes on one line each need their own generated names. */
        // clang-format off
        STROBE_SCOPE("same line a"); STROBE_OP("same line b"); STROBE_SCOPE_NAME("same line c", STROBE_RECORD_SCOPE_USER_SCOPE); STROBE_SCOPE_NAME("same line d", STROBE_RECORD_SCOPE_USER_SCOPE);
        // clang-format on
        acc += 0;
    }
    strobe_range_begin("dyn");
    strobe_range_begin_scope("dyn fn", STROBE_RECORD_SCOPE_FUNCTION);
    strobe_range_end();
    strobe_range_end();
    strobe_instant("dyn instant");
    strobe_counter("dyn counter", 1.0);
    strobe_push_correlation_id(1);
    strobe_push_user_correlation_id(2);
    strobe_pop_user_correlation_id();
    strobe_pop_correlation_id();
    strobe_set_thread_name("t");
    return acc + strobe_is_active();
}
#endif
