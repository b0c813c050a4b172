/* json_check.h: validates that a string holds exactly one JSON value (RFC 8259), so that values
 * users hand us (metadata, args) can be pasted into a trace verbatim. */
#ifndef STROBE_JSON_CHECK_H
#define STROBE_JSON_CHECK_H

#include <stddef.h>

/* Returns 1 when s[0..len) is one JSON value with optional surrounding whitespace, else 0.
 * Nesting deeper than 256 levels is rejected. Strings must be valid UTF-8. */
int strobe__json_valid(const char *s, size_t len);

#endif
