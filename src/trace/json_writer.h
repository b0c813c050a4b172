/* json_writer.h: what the JSON writer shares with the Perfetto writer and the result walk
 * (writer.c); its formatting primitives are util/json_fmt.h. The writer itself is reached through
 * strobe__json_writer (writer.h). */
#ifndef STROBE_WRITERS_JSON_WRITER_H
#define STROBE_WRITERS_JSON_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "util/json_fmt.h"

/* ---- Shared with the Perfetto writer (perfetto_writer.c), so that both formats show the same
 * flows, process name and session metadata. ---- */

typedef struct strobe_result strobe_result;
struct strobe__sink;

enum { STROBE__FLOW_NONE = 0, STROBE__FLOW_START = 1, STROBE__FLOW_FINISH = 2 };

/* Which events start or finish an "ac2g" flow (launch -> device work).
 *
 * A launch may have several device events: the kernels of a CUDA graph share the correlation id
 * of its one cudaGraphLaunch. Kineto writes one "f" per device event with id = the correlation
 * id, and viewers draw an arrow to each (Perfetto's JSON importer binds v1 flow ends without
 * closing the flow). In Perfetto's protobuf a terminating flow id closes its flow, so there each
 * device event needs its own flow id, and the launch lists all of them. */
typedef struct strobe__flow_plan {
    uint8_t *ph;     /* per event: STROBE__FLOW_*; NULL when the result has no flows */
    uint64_t *id;    /* per event: the correlation id of its flow (the JSON flow id) */
    uint64_t *pf_id; /* per event: its Perfetto flow id. A device event's own: the earliest of a
                      * launch's keeps the correlation id, the others get ids no launch uses. On a
                      * launch, the correlation id. */
    uint32_t *next;  /* per event: on a launch, its first device event (the earliest); on a device
                      * event, the next of the same launch; STROBE__FLOW_NO_NEXT after the last */
} strobe__flow_plan;

#define STROBE__FLOW_NO_NEXT UINT32_MAX

/* Plans a flow from each launch (cuda_runtime, cuda_driver; the first with a given "correlation")
 * to every device event (kernel, copy, set) with that "correlation": the launch starts one flow,
 * each device event finishes it. Device events whose launch is not in the result get none.
 * Release with strobe__flow_plan_free. @return 0 or STROBE_ENOMEM. */
int strobe__json_plan_flows(const strobe_result *r, strobe__flow_plan *fp);

/* Frees the plan's arrays (the struct itself is the caller's). */
void strobe__flow_plan_free(strobe__flow_plan *fp);

/* One end of a "fwdbwd" flow: event `event` starts (ph STROBE__FLOW_START) or finishes flow `id`.
 */
typedef struct strobe__fwdbwd_mark {
    uint32_t event;
    uint32_t ph;
    uint64_t id;
} strobe__fwdbwd_mark;

/* The "fwdbwd" flows of a result, sorted by event (release with free(marks)). */
typedef struct strobe__fwdbwd_plan {
    strobe__fwdbwd_mark *marks;
    size_t n;
} strobe__fwdbwd_plan;

/* Plans the flows from forward ops to their backward ops as torch does (profiler_kineto.cpp,
 * generateForwardBackwardLink): a backward op ("Fwd thread id" > 0) is linked to the forward op
 * with its "Sequence number" on the thread whose torch id is its Fwd thread id (r->torch_tids)
 * that started last; of the backward ops of one forward op, the first to end gets the flow. Ids
 * count from 1 in that order. A result without torch thread ids has none. @return 0 or
 * STROBE_ENOMEM. */
int strobe__fwdbwd_plan_make(const strobe_result *r, strobe__fwdbwd_plan *fb);

/* The process's name from /proc when the result is this process's own, else "strobe". */
void strobe__json_process_name(const strobe_result *r, char *buf, size_t size);

/* Writes the "strobe" metadata object (version, clock, stats, skipped counter samples, warnings)
 * as one JSON value. Errors are sticky in the sink. */
void strobe__json_write_strobe_object(const strobe_result *r, struct strobe__sink *s,
                                      uint64_t skipped_counters);

#endif /* STROBE_WRITERS_JSON_WRITER_H */
