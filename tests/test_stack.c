/* test_stack.c: stack bounds, the frame-pointer walk (main thread and a pthread, skip and max,
 * bogus bounds) and symbolization (function names innermost first, file:line through addr2line
 * where it is installed, module+offset, "??", STROBE_SYMBOLIZE=0).
 *
 * Built with -fno-omit-frame-pointer -O1. The chain's functions are non-static, noinline (and,
 * under GCC, noclone, so that no "stack_test_c.constprop.0" copy takes the name), and each call
 * is followed by an empty asm so that it is not a tail call, which would drop a frame. */
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "core/stack.h"

#if defined(__clang__)
#define TEST_NOINLINE __attribute__((noinline))
#else
#define TEST_NOINLINE __attribute__((noinline, noclone))
#endif

struct capture {
    uintptr_t lo, hi;
    int skip, max;
    uint64_t pcs[32];
    int n;
};

void stack_test_a(struct capture *cap);
void stack_test_b(struct capture *cap);
void stack_test_c(struct capture *cap);

TEST_NOINLINE void stack_test_c(struct capture *cap) {
    cap->n = strobe__stack_capture(cap->lo, cap->hi, cap->skip, cap->pcs, cap->max);
    __asm__ volatile("" ::: "memory");
}

TEST_NOINLINE void stack_test_b(struct capture *cap) {
    stack_test_c(cap);
    __asm__ volatile("" ::: "memory");
}

TEST_NOINLINE void stack_test_a(struct capture *cap) {
    stack_test_b(cap);
    __asm__ volatile("" ::: "memory");
}

/* Whether s is the function `name`, alone or followed by " (file:line)". */
static int is_function(const char *s, const char *name) {
    size_t len = strlen(name);
    return s != NULL && strncmp(s, name, len) == 0 && (s[len] == '\0' || s[len] == ' ');
}

static int have_addr2line(void) {
    return system("command -v addr2line >/dev/null 2>&1") == 0;
}

/* Captures through the chain within this thread's bounds and checks what the first three
 * frames symbolize to. Runs on the main thread and on a pthread. */
static void capture_and_check(const char *where) {
    struct capture cap = {.skip = 0, .max = 32};
    REQUIRE(strobe__stack_bounds(&cap.lo, &cap.hi) == 0);
    uintptr_t local = (uintptr_t)&cap;
    CHECK(cap.lo < local && local < cap.hi);
    stack_test_a(&cap);
    printf("%s: %d frames captured, stack [%#llx, %#llx)\n", where, cap.n,
           (unsigned long long)cap.lo, (unsigned long long)cap.hi);
    /* c, b, a, then at least the caller of a. */
    CHECK_INT(cap.n, >=, 4);
    if (cap.n < 3) return;

    const char *out[32];
    strobe__symbolizer *s = strobe__symbolize(cap.pcs, (size_t)cap.n, out);
    REQUIRE(s != NULL);
    for (int i = 0; i < cap.n; i++)
        printf("  #%d %#llx %s\n", i, (unsigned long long)cap.pcs[i], out[i]);
    CHECK(is_function(out[0], "stack_test_c"));
    CHECK(is_function(out[1], "stack_test_b"));
    CHECK(is_function(out[2], "stack_test_a"));
    if (have_addr2line()) {
        for (int i = 0; i < 3; i++)
            CHECK(strstr(out[i], "test_stack.c:") != NULL);
    } else {
        printf("note: addr2line is not on PATH, file:line not checked\n");
    }
    strobe__symbolizer_free(s);

    /* skip drops the innermost frames; max bounds how many are written. */
    struct capture skipped = {.lo = cap.lo, .hi = cap.hi, .skip = 1, .max = 32};
    stack_test_a(&skipped);
    CHECK_EQ(skipped.n, cap.n - 1);
    CHECK_EQ(skipped.pcs[0], cap.pcs[1]);
    CHECK_EQ(skipped.pcs[1], cap.pcs[2]);
    struct capture two = {.lo = cap.lo, .hi = cap.hi, .skip = 0, .max = 2};
    stack_test_a(&two);
    CHECK_EQ(two.n, 2);
    CHECK_EQ(two.pcs[0], cap.pcs[0]);
    CHECK_EQ(two.pcs[1], cap.pcs[1]);
}

static void *thread_main(void *arg) {
    (void)arg;
    capture_and_check("pthread");
    return NULL;
}

/* Bounds that do not hold the stack end the walk at once, whatever they are. */
static void test_bogus_bounds(void) {
    struct capture cap = {.lo = 0, .hi = 0, .max = 32};
    stack_test_a(&cap);
    CHECK_EQ(cap.n, 0);
    cap = (struct capture){.lo = 4096, .hi = 1, .max = 32}; /* lo above hi */
    stack_test_a(&cap);
    CHECK_EQ(cap.n, 0);
    cap = (struct capture){.lo = 4096, .hi = 8192, .max = 32}; /* not the stack */
    stack_test_a(&cap);
    CHECK_EQ(cap.n, 0);
    cap = (struct capture){.lo = 0, .hi = UINTPTR_MAX, .max = 0}; /* room for nothing */
    stack_test_a(&cap);
    CHECK_EQ(cap.n, 0);
    uintptr_t lo, hi;
    REQUIRE(strobe__stack_bounds(&lo, &hi) == 0);
    CHECK_EQ(strobe__stack_capture(lo, hi, 0, NULL, 8), 0);
    CHECK_EQ(strobe__stack_bounds(NULL, &hi), -1);
}

extern char __executable_start; /* the main program's first byte (GNU ld, gold and lld) */

static void test_symbolize_odd(void) {
    /* No addresses at all: an empty symbolizer, not NULL (which means out of memory). */
    strobe__symbolizer *s = strobe__symbolize(NULL, 0, NULL);
    CHECK(s != NULL);
    strobe__symbolizer_free(s);
    strobe__symbolizer_free(NULL);

    /* 0x1 and 0 lie in no module; the ELF header's bytes are in the program but in no function;
     * getpid + 1 stands for a return address into libc. */
    uint64_t pcs[4] = {0x1, 0, (uint64_t)(uintptr_t)&__executable_start + 0x10,
                       (uint64_t)(uintptr_t)&getpid + 1};
    const char *out[4];
    s = strobe__symbolize(pcs, 4, out);
    REQUIRE(s != NULL);
    for (int i = 0; i < 4; i++)
        printf("  odd #%d %#llx %s\n", i, (unsigned long long)pcs[i], out[i]);
    CHECK_STR(out[0], "??");
    CHECK_STR(out[1], "??");
    CHECK(strncmp(out[2], "test_stack+0x", 13) == 0);
    CHECK(strstr(out[3], "getpid") != NULL);
    strobe__symbolizer_free(s);
}

/* STROBE_SYMBOLIZE=0 skips addr2line: names alone, from the symbol table. */
static void test_no_addr2line(void) {
    struct capture cap = {.max = 3};
    REQUIRE(strobe__stack_bounds(&cap.lo, &cap.hi) == 0);
    stack_test_a(&cap);
    REQUIRE(cap.n == 3);
    REQUIRE(setenv("STROBE_SYMBOLIZE", "0", 1) == 0);
    const char *out[3];
    strobe__symbolizer *s = strobe__symbolize(cap.pcs, 3, out);
    REQUIRE(s != NULL);
    CHECK_STR(out[0], "stack_test_c");
    CHECK_STR(out[1], "stack_test_b");
    CHECK_STR(out[2], "stack_test_a");
    strobe__symbolizer_free(s);
    REQUIRE(unsetenv("STROBE_SYMBOLIZE") == 0);
}

int main(void) {
    capture_and_check("main");
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, thread_main, NULL) == 0);
    REQUIRE(pthread_join(t, NULL) == 0);
    test_bogus_bounds();
    test_symbolize_odd();
    test_no_addr2line();
    return check_result();
}
