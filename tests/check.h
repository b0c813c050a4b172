/* check.h: a tiny assertion harness for strobe's tests. A failed check prints the expression, both
 * values, file and line, and marks the test failed; main() returns check_result(). */
#ifndef STROBE_TEST_CHECK_H
#define STROBE_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check__failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            check__failures++;                                                                     \
        }                                                                                          \
    } while (0)

#define CHECK_INT(a, op, b)                                                                        \
    do {                                                                                           \
        long long check__a = (long long)(a), check__b = (long long)(b);                            \
        if (!(check__a op check__b)) {                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s %s %s (%lld vs %lld)\n", __FILE__, __LINE__,  \
                    #a, #op, #b, check__a, check__b);                                              \
            check__failures++;                                                                     \
        }                                                                                          \
    } while (0)
#define CHECK_EQ(a, b) CHECK_INT(a, ==, b)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *check__sa = (a), *check__sb = (b);                                             \
        if (check__sa == NULL || check__sb == NULL || strcmp(check__sa, check__sb) != 0) {         \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (\"%s\" vs \"%s\")\n", __FILE__,        \
                    __LINE__, #a, #b, check__sa ? check__sa : "(null)",                            \
                    check__sb ? check__sb : "(null)");                                             \
            check__failures++;                                                                     \
        }                                                                                          \
    } while (0)

/* A check whose failure makes the rest of the test meaningless. */
#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond);             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static inline int check_result(void) {
    if (check__failures) fprintf(stderr, "%d check(s) failed\n", check__failures);
    return check__failures ? 1 : 0;
}

#endif
