/* test_error.c: the error table generates codes, messages and names consistently. */
#include "check.h"
#include "strobe/strobe.h"

int main(void) {
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
