/* reader_util.h: small helpers that the reader's files share (internal to src/reader/). */
#ifndef STROBE_READER_READER_UTIL_H
#define STROBE_READER_READER_UTIL_H

#include <stdlib.h>
#include <string.h>

/* A malloc'ed, NUL-terminated copy of p[0..n), or NULL when out of memory. */
static inline char *strobe__rd_dup_n(const void *p, size_t n) {
    char *c = malloc(n + 1);
    if (c) {
        memcpy(c, p, n);
        c[n] = '\0';
    }
    return c;
}

#endif /* STROBE_READER_READER_UTIL_H */
