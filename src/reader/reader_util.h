/* reader_util.h: small helpers that the reader's files share (internal to src/reader/). */
#ifndef STROBE_READER_READER_UTIL_H
#define STROBE_READER_READER_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace_reader.h"

/* A malloc'ed, NUL-terminated copy of p[0..n), or NULL when out of memory. */
static inline char *strobe__rd_dup_n(const void *p, size_t n) {
    char *c = malloc(n + 1);
    if (c) {
        memcpy(c, p, n);
        c[n] = '\0';
    }
    return c;
}

/* Exact decimal parsing (rd_value.c). strobe__rd_decimal_scaled parses the JSON number text
 * t[0..n) as an integer count of units of 10^-scale, exactly, with no floating point; digits below
 * the unit are rounded half away from zero and *inexact (may be NULL) says whether any were
 * nonzero. @return 0, STROBE_EFORMAT or STROBE_ERANGE. strobe__rd_exact_int: a number whose value
 * has no fraction (0 or a negative STROBE_E*). strobe__rd_digits_int: 1 when the string s[0..n)
 * spells an integer in plain decimal ("25738", "-1") and *out holds it, else 0. */
int strobe__rd_decimal_scaled(const char *t, size_t n, int scale, int64_t *out, int *inexact);
int strobe__rd_exact_int(const char *t, size_t n, int64_t *out);
int strobe__rd_digits_int(const char *s, size_t n, int64_t *out);
/* The reader's type of a tokenizer token (json_pull.h's STROBE_JP_*). */
strobe_rd_type strobe__rd_type_of(int tok);

#endif /* STROBE_READER_READER_UTIL_H */
