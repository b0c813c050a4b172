/* output.h: the writers as the core sees them (stage 4 of DESIGN.md, reached from stage 3).
 *
 * Some core modules write results while a session runs or as it ends: the streaming output (its
 * device activity at stop, the flight recorder's dumps), the schedule's trace handler and the edge
 * profiler. They go through this table, which src/outputs.c fills with the writers, so that the
 * core includes no writer and dependencies point from the writers to the core. */
#ifndef STROBE_CORE_OUTPUT_H
#define STROBE_CORE_OUTPUT_H

#include <stddef.h>

struct strobe_result;

typedef struct strobe__output_ops {
    /* strobe_result_save()'s contract: the format by the path's suffix, gzip with ".gz". */
    int (*save)(struct strobe_result *r, const char *path);
    /* Encodes `r` into a malloc'ed buffer (*out, *len; the caller frees it): with `perfetto`, the
     * Perfetto writer's whole output; else the JSON writer's event lines for appending to a trace
     * that has its header (strobe__json_write_events). @return 0, STROBE_ENOMEM or STROBE_EIO. */
    int (*encode)(const struct strobe_result *r, int perfetto, char **out, size_t *len);
} strobe__output_ops;

extern const strobe__output_ops strobe__outputs;

#endif /* STROBE_CORE_OUTPUT_H */
