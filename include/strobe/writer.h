/* strobe/writer.h: writing a trace event by event, in any of strobe's formats.
 *
 * The same writers that save a result and stream a session, reached one event at a time: open a
 * file (its format chosen from the path as strobe_result_save() chooses it), declare tracks
 * (processes, threads, devices and their streams, extra lanes of a thread), write slices,
 * instants, counter samples and flows on them, set top-level metadata, and close. The file is
 * written to a temporary name beside the path and renamed over it at a successful close: a
 * failed or abandoned write leaves no partial file. A path ending in ".gz" is compressed.
 *
 * Times are nanoseconds on the caller's clock; they are written relative to the base given at
 * open (JSON's "baseTimeNanoseconds"). Slices must nest on each track: ends come innermost first.
 * A writer is not thread-safe: one thread at a time. */
#ifndef STROBE_WRITER_H
#define STROBE_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "export.h"
#include "result.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An open trace file (opaque). */
typedef struct strobe_writer strobe_writer;

/* Options of strobe_writer_open(). Fill with strobe_writer_options_init(). */
typedef struct strobe_writer_options {
    size_t struct_size;     /* sizeof(strobe_writer_options) in the program's headers */
    strobe_format format;   /* STROBE_FORMAT_AUTO (default): by the path's suffix */
    int64_t base_ns;        /* times are written relative to this (default 0) */
    const char *trace_id;   /* the trace's id (NULL: none); copied */
    const char *trace_name; /* the trace's name (NULL: none); copied */
} strobe_writer_options;

/* Zeroes *opt (every default) and sets struct_size. */
static inline void strobe_writer_options_init(strobe_writer_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->struct_size = sizeof *opt;
}

/* What a track is. Each has Kineto's (pid, tid): a process (pid), a thread (pid, tid), a device
 * (pid: its index), a stream of a device (pid: the device's index, tid: the stream), an extra lane
 * of a thread for slices that overlap its own without nesting (parent: the thread's track; pid,
 * tid: the thread's), which Perfetto shows under the thread and JSON as the thread. A thread with
 * tid 0 is the process's session track (Kineto's "Spans"). */
typedef enum strobe_track_kind {
    STROBE_TRACK_PROCESS = 0,
    STROBE_TRACK_THREAD = 1,
    STROBE_TRACK_DEVICE = 2,
    STROBE_TRACK_STREAM = 3,
    STROBE_TRACK_LANE = 4,
} strobe_track_kind;

typedef struct strobe_writer_track {
    strobe_track_kind kind;
    int64_t pid, tid;
    const char *name;   /* NULL: none */
    const char *label;  /* a process's or device's label ("CPU"); NULL: none */
    int64_t sort_index; /* the order among its siblings; INT64_MIN: none */
    uint32_t parent;    /* a stream's device track, a lane's thread track */
} strobe_writer_track;

/* The type of an arg's value. */
typedef enum strobe_arg_type {
    STROBE_ARG_INT = 0,    /* i */
    STROBE_ARG_UINT = 1,   /* u */
    STROBE_ARG_DOUBLE = 2, /* d */
    STROBE_ARG_BOOL = 3,   /* i: 0 or not */
    STROBE_ARG_STRING = 4, /* s, len */
    STROBE_ARG_JSON = 5,   /* s, len: the text of one JSON value, written as that value */
} strobe_arg_type;

/* An event's arg. len (size_t)-1: s is NUL-terminated. */
typedef struct strobe_writer_arg {
    const char *key;
    int type; /* strobe_arg_type */
    int64_t i;
    uint64_t u;
    double d;
    const char *s;
    size_t len;
} strobe_writer_arg;

/* One event. Flows: ids that this slice starts (flow_out) or ends (flow_in); several slices may
 * end flows that one starts, each with an id of its own. */
/* strobe_writer_event.flags: the session's span (on the process's tid-0 thread track). Perfetto
 * has no top-level members: the trace's metadata goes on this slice, and is lost without one. */
#define STROBE_WRITER_SESSION 2

/* A flow id with this bit set is one of torch's "fwdbwd" flows (forward op -> backward op): JSON
 * writes it with cat and name "fwdbwd" and its id without the bit, Perfetto as given. Other ids
 * (a launch's correlation id) stay below it. */
#define STROBE_WRITER_FLOW_FWDBWD (UINT64_C(1) << 62)

typedef struct strobe_writer_event {
    uint32_t track; /* from strobe_writer_add_track() */
    int flags;      /* STROBE_WRITER_SESSION or 0 */
    const char *cat;
    const char *name;
    int64_t ts;   /* ns */
    int64_t end;  /* a slice's end, ns */
    double value; /* a counter's sample */
    const strobe_writer_arg *args;
    size_t nargs;
    const uint64_t *flow_out, *flow_in;
    size_t nflow_out, nflow_in;
} strobe_writer_event;

/* Opens `path` for writing (NULL opt: the defaults); a path that is a device or a pipe
 * (/dev/null, /dev/full) is written in place, not replaced. @return 0 and *out, STROBE_EINVAL
 * (NULL path or out, an empty path, an unknown format, struct_size too small), STROBE_ESYS (the
 * folder cannot take the file; errno holds the system's reason: ENOENT, EACCES, EROFS ...) or
 * STROBE_ENOMEM. */
STROBE_API int strobe_writer_open(strobe_writer **out, const char *path,
                                  const strobe_writer_options *opt);

/* Declares a track. @return its id (0, 1, ...) or a negative STROBE_E* (STROBE_EINVAL: an unknown
 * kind, a parent that is not a track). */
STROBE_API int64_t strobe_writer_add_track(strobe_writer *w, const strobe_writer_track *t);

/* A slice whose end is known (e->end). @return 0 or a negative STROBE_E*. */
STROBE_API int strobe_writer_slice(strobe_writer *w, const strobe_writer_event *e);

/* A slice in two calls, for a caller that learns the end later: begin, then end with the same
 * event (its end set) and the args known only then, which are added to the slice's. @return 0 or
 * a negative STROBE_E*. */
STROBE_API int strobe_writer_slice_begin(strobe_writer *w, const strobe_writer_event *e);
STROBE_API int strobe_writer_slice_end(strobe_writer *w, const strobe_writer_event *e,
                                       const strobe_writer_arg *args, size_t nargs);

/* An instant. @return 0 or a negative STROBE_E*. */
STROBE_API int strobe_writer_instant(strobe_writer *w, const strobe_writer_event *e);

/* A counter sample (series e->name, value e->value) on e->track. A sample that is not finite is
 * left out (JSON has no NaN). @return 0, 1 when left out, or a negative STROBE_E*. */
STROBE_API int strobe_writer_counter(strobe_writer *w, const strobe_writer_event *e);

/* Sets top-level metadata `key` to the JSON value `json` (both copied; the last value of a key
 * wins). Keys strobe writes itself are refused, except "strobe" and "deviceProperties", which
 * replace what strobe would write. @return 0, STROBE_EINVAL (a reserved key, or json not one
 * valid JSON value) or STROBE_ENOMEM. */
STROBE_API int strobe_writer_set_meta(strobe_writer *w, const char *key, const char *json);

/* Writes out what the writer holds and lets it forget the state it keeps to make later events
 * smaller (Perfetto's interned names and per-track buffers; JSON keeps none), so that memory
 * stays flat over a long trace written in parts: call it between parts whose names and tracks
 * are mostly their own (strobe merge calls it after each rank). Every track stays usable; names
 * used again are written again. @return 0 or a negative STROBE_E* (the first error so far). */
STROBE_API int strobe_writer_flush_interned(strobe_writer *w);

/* Writes the footer, closes the file and renames it over the path. After any earlier error the
 * file is removed instead and that error returned. Frees the writer either way; accepts NULL.
 * @return 0 or a negative STROBE_E* (STROBE_EIO: the file could not be written, STROBE_ESYS: not
 * renamed into place; with either, errno holds the system's reason, ENOSPC ...). */
STROBE_API int strobe_writer_close(strobe_writer *w);

/* Frees the writer without finishing the file, which is removed. Accepts NULL. After a write
 * failed (a call returned STROBE_EIO), errno is left at the system's reason. */
STROBE_API void strobe_writer_abort(strobe_writer *w);

#ifdef __cplusplus
}
#endif

#endif /* STROBE_WRITER_H */
