/* strobe/error.h: error codes of the cold-path API.
 *
 * Every cold-path call returns 0 on success or one of the negative STROBE_E* values below. The
 * table STROBE_ERRNO_MAP generates the enum, strobe_strerror() and strobe_err_name(). */
#ifndef STROBE_ERROR_H
#define STROBE_ERROR_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(NAME, value, message). Values are negative and stable: never renumber, only append. */
#define STROBE_ERRNO_MAP(X)                                                                        \
    X(EINVAL, -1, "invalid argument")                                                              \
    X(ENOMEM, -2, "out of memory")                                                                 \
    X(EBUSY, -3, "a profiling session is already running in this process")                         \
    X(ENOSESSION, -4, "no profiling session is running")                                           \
    X(ENOTSUP, -5, "not supported by this build or machine")                                       \
    X(EIO, -6, "input/output error")                                                               \
    X(EALREADY, -7, "trace is already saved")                                                      \
    X(EFORK, -8, "the session belongs to the parent process (called after fork)")                  \
    X(EJSON, -9, "value is not valid JSON")                                                        \
    X(ERANGE, -10, "index or value out of range")                                                  \
    X(EFORMAT, -11, "malformed input")                                                             \
    X(ESYS, -12, "a system call failed")

typedef enum strobe_errno {
#define STROBE__ERRNO_ENUM(name, value, msg) STROBE_##name = (value),
    STROBE_ERRNO_MAP(STROBE__ERRNO_ENUM)
#undef STROBE__ERRNO_ENUM
} strobe_errno;

/* Returns a static, human-readable message for an error code (0 gives "success"; unknown codes
 * give "unknown error"). Thread-safe. */
STROBE_API const char *strobe_strerror(int err);

/* Returns the symbolic name of an error code ("STROBE_EINVAL"), "0" for success, or
 * "STROBE_UNKNOWN". Thread-safe. */
STROBE_API const char *strobe_err_name(int err);

#ifdef __cplusplus
}
#endif
#endif /* STROBE_ERROR_H */
