/* util/err.h: the internal error idiom, one for every layer (STYLE.md, "Internal errors").
 *
 * Internal functions that can fail return 0 (or a count, or a descriptor: something >= 0) on
 * success and one of the public API's negative STROBE_E* codes (strobe/error.h) on failure, never
 * a bare -1. They say so with these macros, after zstd's RETURN_ERROR_IF and FORWARD_IF_ERROR:
 *
 *     STROBE_RETURN_IF(fd < 0, STROBE_ESYS);          // check, return a code
 *     STROBE_FORWARD_IF_ERR(parse(p, &v));            // pass a callee's error up
 *     STROBE_FAIL_IF(m == NULL, STROBE_ENOMEM, fail); // rc = code; goto fail (cleanup)
 *     STROBE_TRY_GOTO(write_all(f, b, n), fail);      // rc = callee's result; goto fail if < 0
 *
 * The last two set a local `int rc`, which the function declares, and jump to a label that frees
 * what was taken and returns rc. A "not found" answer (a lookup's -1 index) is not an error: such
 * functions name their sentinel and keep it out of these macros. */
#ifndef STROBE_UTIL_ERR_H
#define STROBE_UTIL_ERR_H

#include "strobe/error.h"

/* Returns `err` (a negative STROBE_E* code) from the calling function when `cond` holds. */
#define STROBE_RETURN_IF(cond, err)                                                                \
    do {                                                                                           \
        if (cond) return (err);                                                                    \
    } while (0)

/* Evaluates `expr` (an int) once and returns it from the calling function when it is negative. */
#define STROBE_FORWARD_IF_ERR(expr)                                                                \
    do {                                                                                           \
        int strobe__fwd_rc = (expr);                                                               \
        if (strobe__fwd_rc < 0) return strobe__fwd_rc;                                             \
    } while (0)

/* Sets the local `rc` to `err` and jumps to `label` when `cond` holds. */
#define STROBE_FAIL_IF(cond, err, label)                                                           \
    do {                                                                                           \
        if (cond) {                                                                                \
            rc = (err);                                                                            \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

/* Evaluates `expr` (an int) into the local `rc` and jumps to `label` when it is negative. */
#define STROBE_TRY_GOTO(expr, label)                                                               \
    do {                                                                                           \
        rc = (expr);                                                                               \
        if (rc < 0) goto label;                                                                    \
    } while (0)

#endif /* STROBE_UTIL_ERR_H */
