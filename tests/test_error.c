/* test_error.c: the error table generates codes, messages and names consistently; the internal
 * idiom's macros (util/err.h) return, forward and jump as documented. */
#include "check.h"
#include "strobe/strobe.h"
#include "util/err.h"

static int calls; /* how often callee() ran: a forwarded expression is evaluated once */

static int callee(int rc) {
    calls++;
    return rc;
}

static int return_if(int fail) {
    STROBE_RETURN_IF(fail, STROBE_ERANGE);
    return 0;
}

/* A count (positive) passes through FORWARD_IF_ERR; only a negative value is returned. */
static int forward(int rc) {
    STROBE_FORWARD_IF_ERR(callee(rc));
    return 7;
}

/* Both jump macros leave their code in rc for the cleanup label. */
static int with_cleanup(int fail_at, int *cleaned) {
    int rc = 0;
    STROBE_FAIL_IF(fail_at == 1, STROBE_ENOMEM, fail);
    STROBE_TRY_GOTO(callee(fail_at == 2 ? STROBE_EIO : 3), fail);
    CHECK_EQ(rc, 3);
    return 0;
fail:
    (*cleaned)++;
    return rc;
}

static void test_idiom(void) {
    CHECK_EQ(return_if(0), 0);
    CHECK_EQ(return_if(1), STROBE_ERANGE);
    calls = 0;
    CHECK_EQ(forward(0), 7);
    CHECK_EQ(forward(5), 7);
    CHECK_EQ(forward(STROBE_EFORMAT), STROBE_EFORMAT);
    CHECK_EQ(calls, 3);
    int cleaned = 0;
    CHECK_EQ(with_cleanup(0, &cleaned), 0);
    CHECK_EQ(cleaned, 0);
    CHECK_EQ(with_cleanup(1, &cleaned), STROBE_ENOMEM);
    CHECK_EQ(with_cleanup(2, &cleaned), STROBE_EIO);
    CHECK_EQ(cleaned, 2);
}

int main(void) {
    test_idiom();
    CHECK_STR(strobe_strerror(0), "success");
    CHECK_STR(strobe_strerror(STROBE_EALREADY), "trace is already saved");
    CHECK_STR(strobe_err_name(STROBE_EBUSY), "STROBE_EBUSY");
    CHECK_STR(strobe_strerror(12345), "unknown error");
    CHECK_STR(strobe_err_name(-999), "STROBE_UNKNOWN");
    /* Every code has a distinct negative value and its own message. */
    int codes[] = {
#define X(name, value, msg) STROBE_##name,
        STROBE_ERRNO_MAP(X)
#undef X
    };
    size_t n = sizeof codes / sizeof codes[0];
    for (size_t i = 0; i < n; i++) {
        CHECK_INT(codes[i], <, 0);
        CHECK(strcmp(strobe_strerror(codes[i]), "unknown error") != 0);
        for (size_t j = i + 1; j < n; j++)
            CHECK(codes[i] != codes[j]);
    }
    return check_result();
}
