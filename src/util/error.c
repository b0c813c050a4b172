/* error.c: strobe_strerror() and strobe_err_name(), generated from STROBE_ERRNO_MAP. */
#include "strobe/error.h"

const char *strobe_strerror(int err) {
    switch (err) {
    case 0:
        return "success";
#define STROBE__ERRNO_MSG(name, value, msg)                                                        \
    case value:                                                                                    \
        return msg;
        STROBE_ERRNO_MAP(STROBE__ERRNO_MSG)
#undef STROBE__ERRNO_MSG
    default:
        return "unknown error";
    }
}

const char *strobe_err_name(int err) {
    switch (err) {
    case 0:
        return "0";
#define STROBE__ERRNO_NAME(name, value, msg)                                                       \
    case value:                                                                                    \
        return "STROBE_" #name;
        STROBE_ERRNO_MAP(STROBE__ERRNO_NAME)
#undef STROBE__ERRNO_NAME
    default:
        return "STROBE_UNKNOWN";
    }
}
