/* strobe/result.h: what a session recorded, and saving it as a trace.
 *
 * A result is owned by the caller of strobe_stop() and freed with strobe_result_free(). Reading
 * it from several threads at once is safe; changing it (set_arg, set_name, save) is not.
 *
 * Events are grouped by thread: each strobe_thread_info names a contiguous run of events sorted by
 * start time (parents before their children). Within a thread, ranges and instants form a tree
 * (parent / first_child / next_sibling); counters are outside the tree. Times are integer
 * nanoseconds on one clock (CLOCK_REALTIME-based: nanoseconds since the Unix epoch). */
#ifndef STROBE_RESULT_H
#define STROBE_RESULT_H

#include <stddef.h>
#include <stdint.h>
#include "export.h"
#include "session.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An index meaning "no event" in parent / first_child / next_sibling. */
#define STROBE_NO_EVENT UINT32_MAX

typedef enum strobe_event_kind {
    STROBE_EVENT_RANGE = 0,   /* "ph":"X" */
    STROBE_EVENT_INSTANT = 1, /* "ph":"i" */
    STROBE_EVENT_COUNTER = 2  /* "ph":"C" */
} strobe_event_kind;

typedef enum strobe_device_type {
    STROBE_DEVICE_CPU = 0,
    STROBE_DEVICE_CUDA = 1,
    STROBE_DEVICE_XPU = 2,
    STROBE_DEVICE_HPU = 3,
    STROBE_DEVICE_MTIA = 4,
    STROBE_DEVICE_PRIVATEUSE1 = 5
} strobe_device_type;

/* Event flags. */
#define STROBE_EVENT_UNFINISHED 0x1u /* still open at stop: closed at stop time */
#define STROBE_EVENT_TRUNCATED 0x2u  /* open when its thread's buffer filled: closed then */

/* One extra argument of an event: a key and a JSON value (both owned by the result). */
typedef struct strobe_arg {
    const char *key;
    const char *json;
    const struct strobe_arg *next;
} strobe_arg;

/* One event. All pointers are owned by the result. */
typedef struct strobe_event {
    const char *name;
    const char *category;         /* "cpu_op", "user_annotation", "cpu_instant_event", ... */
    int64_t start_ns;             /* epoch ns */
    int64_t end_ns;               /* == start_ns for instants and counters */
    double value;                 /* counters: the sample */
    uint64_t correlation_id;      /* external correlation id current at begin, 0: none */
    uint64_t user_correlation_id; /* user correlation id current at begin, 0: none */
    const strobe_arg *args;       /* extra args (set by post-processing), NULL: none */
    int64_t tid;                  /* OS thread id */
    uint32_t thread_index;        /* index into the result's threads */
    uint32_t parent, first_child, next_sibling; /* event indexes or STROBE_NO_EVENT */
    uint32_t depth;                             /* 0 for a root */
    uint16_t flags;                             /* STROBE_EVENT_* */
    uint8_t kind;                               /* strobe_event_kind */
    uint8_t scope;                              /* strobe_record_scope */
    int16_t device_type;                        /* strobe_device_type */
    int16_t device_index;                       /* -1 for the CPU */
} strobe_event;

/* Duration of an event in ns. */
static inline int64_t strobe_event_dur_ns(const strobe_event *e) {
    return e->end_ns - e->start_ns;
}

/* One thread that recorded in the session. */
typedef struct strobe_thread_info {
    int64_t tid;
    const char *name;        /* "" when never named */
    size_t first_event;      /* index of its first event */
    size_t event_count;      /* its events are [first_event, first_event + event_count) */
    uint64_t dropped_events; /* events this thread lost to the buffer cap (see strobe_stats) */
    int exited;              /* 1 when the thread exited before stop */
    int16_t device_type;     /* strobe_device_type: a device track (one CUDA stream) or the CPU */
    int16_t device_index;    /* the device of a device track, -1 for the CPU */
} strobe_thread_info;

/* What was lost or repaired, and buffer use. Nothing is lost without appearing here. */
typedef struct strobe_stats {
    uint64_t dropped_events;    /* buffer cap reached: events (ranges, instants, counter samples)
                                    not recorded. A range counts once; a range whose begin was
                                    recorded but whose end was not is kept, closed when the
                                    buffer filled, and counted in truncated_ranges instead. */
    uint64_t unmatched_ends;    /* range ends with no begin in the session */
    uint64_t unfinished_ranges; /* ranges open at stop, closed at stop time */
    uint64_t truncated_ranges;  /* ranges open when their thread's buffer filled */
    uint64_t signal_dropped;    /* records from a signal handler that interrupted another record */
    uint64_t truncated_names;   /* names longer than 1024 bytes, cut */
    uint64_t scope_depth_overflow; /* filtered ranges nested deeper than 256: kept instead */
    uint64_t correlation_overflow; /* correlation id pushes deeper than 64: not kept */
    uint64_t buffer_bytes_used;
    uint64_t buffer_bytes_cap;
    uint64_t threads;
    uint64_t truncated_details;       /* inputs beyond 64 per range, dims beyond 32, dtype names
                                         beyond 64 bytes, stacks beyond 64 frames: cut */
    uint64_t orphan_details;          /* inputs, FLOPs or counters given with no open range */
    uint64_t unmatched_module_pops;   /* module pops with no push in the session */
    uint64_t clipped_backend_events;  /* backend events moved to nest: those that overlapped an
                                         earlier one on their track without nesting in it (ended
                                         at its end), and those outside the session (brought
                                         inside it) */
    uint64_t cuda_dropped_records;    /* CUPTI records lost: buffers full or the cap reached */
    uint64_t cuda_outside_window;     /* CUDA records before start or after stop: left out */
    uint64_t cuda_moved_events;       /* device events that appeared to start before their launch
                                         call: moved to start with it */
    uint64_t reversed_backend_events; /* backend events whose end preceded their start: kept with
                                         zero length */
} strobe_stats;

/* Accessors. `r` must not be NULL. */
STROBE_API int64_t strobe_result_trace_start_ns(const strobe_result *r);
STROBE_API int64_t strobe_result_trace_end_ns(const strobe_result *r);
STROBE_API size_t strobe_result_event_count(const strobe_result *r);
/* The events array (strobe_result_event_count() entries). */
STROBE_API const strobe_event *strobe_result_events(const strobe_result *r);
STROBE_API size_t strobe_result_thread_count(const strobe_result *r);
STROBE_API const strobe_thread_info *strobe_result_threads(const strobe_result *r);
STROBE_API const strobe_stats *strobe_result_stats(const strobe_result *r);
STROBE_API const char *strobe_result_trace_id(const strobe_result *r);
/* The process id the session ran in. */
STROBE_API int64_t strobe_result_pid(const strobe_result *r);
/* Warnings of the session (e.g. an activity that was not traced), each one line. */
STROBE_API size_t strobe_result_warning_count(const strobe_result *r);
STROBE_API const char *strobe_result_warning(const strobe_result *r, size_t i);
/* Metadata added with strobe_add_metadata_json(), in insertion order. @return 0 or STROBE_ERANGE.
 */
STROBE_API size_t strobe_result_metadata_count(const strobe_result *r);
STROBE_API int strobe_result_metadata(const strobe_result *r, size_t i, const char **key,
                                      const char **json_value);

/* Returns the JSON text of event `index`'s extra argument `key` ("Input Dims", "Call stack",
 * "flops", "Module Hierarchy", "Backend", a perf event's name, ...), or NULL when it has none or
 * the index is out of range. The text is owned by the result. */
STROBE_API const char *strobe_event_arg(const strobe_result *r, size_t index, const char *key);

/* Post-processing: sets an extra argument (a JSON value, checked and copied) on event `index`;
 * setting a key twice keeps the last value. @return 0, STROBE_ERANGE, STROBE_EINVAL, STROBE_EJSON
 * or STROBE_ENOMEM. */
STROBE_API int strobe_event_set_arg(strobe_result *r, size_t index, const char *key,
                                    const char *json_value);
/* Post-processing: renames event `index` (copied). @return 0, STROBE_ERANGE, STROBE_EINVAL or
 * STROBE_ENOMEM. */
STROBE_API int strobe_event_set_name(strobe_result *r, size_t index, const char *name);

/* Saves the result in the format its path asks for: Perfetto's protobuf trace format when the
 * path ends in ".pftrace" or ".perfetto-trace", else Chrome trace JSON in Kineto's schema; either
 * gzip-compressed when the path ends in ".gz" (".pftrace.gz"). The file is written to a temporary
 * name beside `path` and renamed, so a failed save leaves no partial file. A result is saved at
 * most once. A failure is logged with the path and the system's reason (strobe_set_log_fn).
 * @return 0, STROBE_EINVAL, STROBE_EALREADY ("trace is already saved"), STROBE_ESYS (the file
 * could not be created, its mode set or renamed into place: no such folder, no permission, ...),
 * STROBE_EIO (writing failed: disk full, ...) or STROBE_ENOMEM; with STROBE_ESYS and STROBE_EIO,
 * errno holds the system's reason (ENOENT, EACCES, EROFS, ENOSPC ...). A path that is a device or
 * a pipe (/dev/null) is written in place, not replaced. */
STROBE_API int strobe_result_save(strobe_result *r, const char *path);

/* Trace file formats for strobe_result_save_as(). */
typedef enum strobe_format {
    STROBE_FORMAT_AUTO = 0,    /* by the path's suffix, as strobe_result_save() does */
    STROBE_FORMAT_JSON = 1,    /* Chrome trace JSON in Kineto's schema, whatever the path */
    STROBE_FORMAT_PERFETTO = 2 /* Perfetto's protobuf format (TracePacket, TrackEvent) */
} strobe_format;

/* Saves the result like strobe_result_save(), in format `fmt` whatever the path's suffix (a
 * trailing ".gz" still asks for gzip). @return as strobe_result_save(); STROBE_EINVAL also for an
 * unknown format. */
STROBE_API int strobe_result_save_as(strobe_result *r, const char *path, strobe_format fmt);

/* Frees a result. Accepts NULL. */
STROBE_API void strobe_result_free(strobe_result *r);

#ifdef __cplusplus
}
#endif
#endif /* STROBE_RESULT_H */
