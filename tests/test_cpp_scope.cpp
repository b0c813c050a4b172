// test_cpp_scope.cpp: the instrumentation from C++: RAII scopes end with their block, also when
// an exception unwinds it, and every macro compiles in C++.
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "strobe/strobe.h"
#include "use_all_macros.h"

static int failures;
#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "%s:%d: EXPECT failed: %s\n", __FILE__, __LINE__, #cond);         \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

namespace strobe_test {
// A C++ function with a scope, recorded with with_stack: its stack must show it demangled, and
// no frame of strobe's own (the guard's constructor, strobe__guard_open) before it.
__attribute__((noinline)) int cpp_leaf(int x) {
    STROBE_SCOPE("cpp leaf");
    __asm__ volatile("" ::: "memory");
    return x + 1;
}
} // namespace strobe_test

// Checks the stack of the "cpp leaf" range.
static void test_cpp_stack() {
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.with_stack = 1;
    if (strobe_start(&cfg) != 0) {
        failures++;
        return;
    }
    int v = strobe_test::cpp_leaf(1);
    __asm__ volatile("" ::: "memory");
    strobe_result *r = nullptr;
    if (strobe_stop(&r) != 0) {
        failures++;
        return;
    }
    EXPECT(v == 2);
    const strobe_event *ev = strobe_result_events(r);
    const char *stack = nullptr;
    for (size_t i = 0; i < strobe_result_event_count(r); i++)
        if (std::strcmp(ev[i].name, "cpp leaf") == 0) stack = strobe_event_arg(r, i, "Call stack");
    EXPECT(stack != nullptr);
    if (stack != nullptr) {
        std::printf("cpp leaf stack: %s\n", stack);
        // Innermost first: the function itself, demangled, with its argument types.
        EXPECT(std::strncmp(stack, "\"strobe_test::cpp_leaf(int)", 27) == 0);
        EXPECT(std::strstr(stack, "_Z") == nullptr);
        EXPECT(std::strstr(stack, "strobe__") == nullptr);
        EXPECT(std::strstr(stack, "scope_guard") == nullptr);
    }
    strobe_result_free(r);
}

static void throws() {
    STROBE_FUNC();
    throw std::runtime_error("boom");
}

int main() {
    strobe_config cfg;
    strobe_config_init(&cfg);
    if (strobe_start(&cfg) != 0) return 1;
    {
        STROBE_SCOPE("cpp outer");
        { STROBE_OP("cpp inner"); }
        try {
            throws();
        } catch (const std::exception &) {
        }
        use_all_macros(2);
    }
    strobe_result *r = nullptr;
    if (strobe_stop(&r) != 0) return 1;
    const strobe_event *ev = strobe_result_events(r);
    size_t n = strobe_result_event_count(r);
    EXPECT(n > 4);
    EXPECT(std::strcmp(ev[0].name, "cpp outer") == 0);
    EXPECT(std::strcmp(ev[1].name, "cpp inner") == 0 && ev[1].parent == 0);
    EXPECT(std::strcmp(ev[2].name, "throws") == 0 && ev[2].parent == 0);
    // Unwinding closed "throws" before "cpp outer" ended, and nothing was left open.
    EXPECT(ev[2].end_ns <= ev[0].end_ns);
    EXPECT(strobe_result_stats(r)->unfinished_ranges == 0);
    // Scopes on one line (use_all_macros) each got a range.
    int same_line = 0;
    for (size_t i = 0; i < n; i++)
        same_line += std::strncmp(ev[i].name, "same line ", 10) == 0;
    EXPECT(same_line == 4);
    EXPECT(strobe_result_stats(r)->unmatched_ends == 0);
    strobe_result_free(r);
    test_cpp_stack();
    return failures ? 1 : 0;
}
