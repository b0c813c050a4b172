/* encode.h: a result encoded into memory, for the core's outputs that are not a file of their own
 * (the streaming output appends a session's device activity and metadata at stop, and a flight
 * dump of the Perfetto stream). Saving a result to a file is strobe_result_save() (save.c). */
#ifndef STROBE_TRACE_ENCODE_H
#define STROBE_TRACE_ENCODE_H

#include <stddef.h>

struct strobe_result;

/* Encodes `r` into a malloc'ed buffer (*out, *len; the caller frees it): with `perfetto`, the
 * Perfetto writer's whole output; else the JSON writer's event lines for appending to a trace
 * that has its header (strobe__writer_put_result's STROBE__PUT_EVENTS). On failure *out is NULL and
 * *len 0.
 * @return 0, STROBE_ENOMEM or STROBE_EIO. */
int strobe__result_encode(const struct strobe_result *r, int perfetto, char **out, size_t *len);

#endif /* STROBE_TRACE_ENCODE_H */
