/* writer.h: the event-level interface every trace output format implements.
 *
 * Each format is one writer: a small table of function pointers with an event-level interface
 * (the shape of uftrace's dump ops: header, task, event, footer), and every output drives it the
 * same way: saving a result (save.c, through strobe__writer_put_result), the streaming output and
 * the flight recorder's dumps (core/stream.c). Adding a format is one file plus one row in the
 * table in save.c.
 *
 * A writer is opened over a sink (sink.h) and called in this order: begin (the trace's header),
 * then tracks and events in any mix (a track before the events on it), then end (the footer, with
 * what became known meanwhile: stats, metadata). Each call formats into the sink; opening,
 * compressing and atomically replacing the file is the caller's job.
 *
 * Slices are two calls, slice_begin and slice_end, with the same event. A caller that knows the
 * end at the begin says so (STROBE__WR_COMPLETE, e->end set); one that does not (the stream: a
 * range is open until it ends) passes the end, and the args only known then, to slice_end. A
 * format whose slices are one record (JSON's "X") writes it at the first call that knows the
 * end; one with begin and end records (Perfetto) writes the begin at once, so a file cut by a
 * kill still holds the slices open at the cut. Ends come innermost first on each track.
 *
 * Not thread-safe: one writer is used by one thread at a time. */
#ifndef STROBE_WRITERS_WRITER_H
#define STROBE_WRITERS_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "result_internal.h"
#include "sink.h"
#include "util/pftrace_enc.h"

/* An event's arg: a key and a typed value, as the Perfetto encoder takes it (util/pftrace_enc.h):
 * STROBE__PFT_INT (i), UINT (u), DOUBLE (d), STRING (s, slen) or JSON (s, slen: the text of one
 * JSON value, which a JSON writer pastes and others convert to the most specific type). */
typedef strobe__pft_arg strobe__wr_arg;

/* What a track is. Kineto's (pid, tid) of each: a process `pid` (tid 0), a thread (pid, tid), a
 * device (pid = its index), a stream of a device (pid = the device index, tid = the stream), an
 * extra lane of a thread (`parent`: the thread's track; tid: the thread's), which formats with
 * tracks show under the thread and JSON as the thread itself. A thread with tid 0 is the
 * process's session track (Kineto's "Spans"). */
enum {
    STROBE__WR_PROCESS,
    STROBE__WR_THREAD,
    STROBE__WR_DEVICE,
    STROBE__WR_STREAM,
    STROBE__WR_LANE,
};

typedef struct strobe__wr_track {
    int kind;           /* STROBE__WR_* */
    int64_t pid, tid;   /* Kineto's (see above) */
    const char *name;   /* the track's name (NULL: none) */
    const char *label;  /* a process's or device's label ("CPU", "GPU 0"); NULL: none */
    int64_t sort_index; /* the viewers' order among its siblings */
    uint32_t parent;    /* a stream's device, a lane's thread: their track ids */
} strobe__wr_track;

/* Flags of an event. */
enum {
    STROBE__WR_COMPLETE = 1, /* slice_begin: `end` is known */
    STROBE__WR_SESSION = 2,  /* the session's span: formats with no top-level metadata carry the
                              * trace's metadata (strobe__wr_info) on it, at end */
};

/* One event: a slice (its begin and its end), an instant, or a counter sample. */
typedef struct strobe__wr_event {
    uint32_t track; /* from strobe__writer_track() */
    int flags;      /* STROBE__WR_* */
    const char *cat;
    const char *name;
    size_t name_len; /* bytes of name (the byte after them readable); (size_t)-1: strlen(name) */
    int64_t ts;      /* epoch ns */
    int64_t end;     /* a slice's end, epoch ns, as recorded */
    /* The end text formats write: where a viewer that computes in doubles would see the slice
     * end after its parent or its next sibling's start, 1 ns earlier (json_writer.c,
     * display ends). 0: `end`. Integer formats write `end`. */
    int64_t shown_end;
    double value; /* a counter's sample */
    const strobe__wr_arg *args;
    size_t nargs;
    /* Flows, in both ways formats spell them. Kineto's ("ac2g"): one start on the launch and a
     * finish on each device event, all with the correlation id (flow_ph STROBE__FLOW_START or
     * STROBE__FLOW_FINISH, json_writer.h). Perfetto's: ids that the slice starts (flow_out) or
     * terminates (flow_in); a terminating id closes its flow, so each device event has its own. */
    int flow_ph;
    uint64_t flow_id;
    const uint64_t *flow_out, *flow_in;
    size_t nflow_out, nflow_in;
    /* A "fwdbwd" flow (torch's forward op -> backward op): fb_ph STROBE__FLOW_START on the
     * forward op, STROBE__FLOW_FINISH on the backward one, with id fb_id (from 1 per trace);
     * STROBE__FLOW_NONE (0): none. */
    int fb_ph;
    uint64_t fb_id;
    /* A fwdbwd start that comes late, with the finish: fb_from 1 on a backward op (fb_ph
     * STROBE__FLOW_FINISH) writes the start of fb_id first, on track fb_from_track at
     * fb_from_ts (its forward op's start). The stream sets it, as it writes a forward op before
     * its backward op exists; JSON writes it, Perfetto (whose flow ids go on the slice's begin)
     * ignores it. 0: none. */
    int fb_from;
    uint32_t fb_from_track;
    int64_t fb_from_ts;
} strobe__wr_event;

/* The trace's metadata: what begin knows, and at end all of it. */
typedef struct strobe__wr_info {
    int64_t base_ns;          /* epoch ns that times are written relative to */
    const char *trace_id;     /* NULL: "" */
    const char *device_props; /* "deviceProperties": a JSON array; NULL: [] */
    /* The "strobe" object's source (version, clock, stats, warnings); NULL: not known yet (at
     * begin: then it, and `meta`, come with end). */
    const strobe_result *stats;
    uint64_t skipped_counters; /* samples left out (JSON has no NaN), for the "strobe" object */
    const char *strobe_json;   /* without stats: the "strobe" object's JSON text; NULL: none */
    const strobe__meta *meta;  /* top-level entries, in order; keys strobe writes are skipped */
    size_t meta_count;
    const char *trace_name; /* end: NULL: none */
} strobe__wr_info;

/* Opening flags. */
enum {
    /* Every call leaves its output in the sink, but for what the writer holds back (the ops'
     * held, sync and discard), so that the caller can append each event as one piece and cut
     * between events (the stream). */
    STROBE__WR_STREAMING = 1,
};

/* A writer: the format's state begins with this. */
typedef struct strobe__writer {
    const struct strobe__writer_ops *ops;
    strobe__sink *out;
    int flags;
    int64_t base_ns;          /* times are written relative to it: begin sets it from its info */
    strobe__wr_track *tracks; /* every track declared (names not kept) */
    size_t track_count, track_cap;
} strobe__writer;

typedef struct strobe__writer_ops {
    /* A short name for logs and tests: "json". */
    const char *name;
    /* Returns 1 when this writer produces the format that `path` asks for, judging by its suffix.
     * A trailing ".gz" asks for compression, which save.c applies to any format. */
    int (*accepts_path)(const char *path);
    /* For a file written as it goes (the stream): the text that makes it a whole trace after any
     * event while more may come (JSON: the closing brackets, and a member saying the file is not
     * complete), appended after each batch and overwritten by the next; NULL: none needed. */
    const char *running_tail;
    /* 1 when spaces between events are harmless (text): the stream then keeps each event within
     * a page of the file, so that a write cut by a kill ends between two events. */
    int pad;
    /* 1 when slice_begin writes something for a slice whose end it does not know yet (a begin
     * record); 0 when it writes nothing then, and a caller may leave such calls out (the stream
     * does, for speed). */
    int open_begins;
    /* Allocates the format's state (zeroed, at least `size` bytes, starting with a
     * strobe__writer): its size. */
    size_t size;
    /* Writes the header. @return 0 or the sink's error (STROBE_EIO, STROBE_ENOMEM). */
    int (*begin)(strobe__writer *w, const strobe__wr_info *info);
    /* Declares track `id` (w->tracks[id] is `t`). @return 0 or an error. */
    int (*track)(strobe__writer *w, uint32_t id, const strobe__wr_track *t);
    /* A slice's begin and end (see the top). slice_end's `args` are added to the slice's.
     * @return 0 or an error. */
    int (*slice_begin)(strobe__writer *w, const strobe__wr_event *e);
    int (*slice_end)(strobe__writer *w, const strobe__wr_event *e, const strobe__wr_arg *args,
                     size_t nargs);
    /* An instant. @return 0 or an error. */
    int (*instant)(strobe__writer *w, const strobe__wr_event *e);
    /* A CPU sample (config.cpu_sample_hz): in a result, an instant of category "cpu_sample"
     * named after the sampled function, whose "Call stack" arg (a JSON string) holds its frames,
     * innermost first, joined by ';', one per function, and whose "Line" arg the line it
     * interrupted. NULL: the format writes it with instant(). JSON keeps each thread's samples
     * for its end, and writes them as Chrome writes CPU profiles into traces ("Profile" and
     * "ProfileChunk" events, json_profile.h): DevTools shows them as the thread's profile,
     * Perfetto imports them as CPU samples, speedscope passes them by; strobe's reader reads them
     * back as the instants. Perfetto writes a PerfSample, which its UI shows as CPU samples with
     * flame graphs. @return 0 or an error. */
    int (*sample)(strobe__writer *w, const strobe__wr_event *e);
    /* A counter sample of series e->name on e->track (a thread's or the process's track; a
     * format with counter tracks makes one per track and name). @return 0, 1 when the sample is
     * left out (not finite: JSON has no NaN or infinity, and every format does the same), or an
     * error. */
    int (*counter)(strobe__writer *w, const strobe__wr_event *e);
    /* Writes the footer and what of `info` the header did not have. @return 0 or an error. */
    int (*end)(strobe__writer *w, const strobe__wr_info *info);
    /* Frees the format's own allocations (not `w` itself). */
    void (*release)(strobe__writer *w);
    /* Streaming, optional (NULL: the writer holds nothing back): a writer may hold the bytes of
     * its last calls (Perfetto: one sequence's packets, which then go to the sink in one copy
     * instead of one per event). held() says how many bytes it holds; they are whole events and
     * go to the sink before anything else the writer writes there, or at sync(), so that the
     * caller knows where each event ends in the file. sync() writes them to the sink (@return 0
     * or the sink's error); discard() drops them (the writer's state goes on as if they were
     * never written). Not for formats that pad. */
    size_t (*held)(strobe__writer *w);
    int (*sync)(strobe__writer *w);
    void (*discard)(strobe__writer *w);
    /* Optional (NULL: the writer keeps nothing that grows): writes out what the writer holds and
     * drops the state it keeps to make later events smaller (Perfetto: each sequence's interned
     * names, its buffers), so that a long trace written in parts (strobe merge, rank by rank)
     * takes the memory of one part. Tracks stay declared and usable; events after it may take
     * more bytes (names interned again). Not while streaming holds bytes back (sync first).
     * @return 0 or the sink's error. */
    int (*flush_state)(strobe__writer *w);
} strobe__writer_ops;

/* Chrome trace JSON in Kineto's schema (json_writer.c). Accepts every path: it is the default. */
extern const strobe__writer_ops strobe__json_writer;

/* Perfetto's protobuf trace format (perfetto_writer.c): paths ending in ".pftrace" or
 * ".perfetto-trace", optionally followed by ".gz". */
extern const strobe__writer_ops strobe__perfetto_writer;

/* Returns the writer for `path`: the first in the table whose accepts_path() says yes. Never
 * NULL (the JSON writer takes any path). */
const strobe__writer_ops *strobe__writer_for_path(const char *path);

/* The writer for a format (STROBE_FORMAT_AUTO: by the path); NULL for an unknown format. */
const strobe__writer_ops *strobe__writer_for_format(const char *path, strobe_format fmt);

/* The file of a save (save.c): a temporary file beside `path` (*tmp, malloc'ed) and a sink over
 * it, compressed for ".gz"; `path` itself, with *tmp "", where it is a device or a pipe.
 * @return 0, STROBE_ESYS (errno set) or STROBE_ENOMEM (logged). */
int strobe__file_open(const char *path, char **tmp, strobe__sink *sink);
/* Closes the sink and, when `rc` is 0 and all went well, renames the file over `path`; else
 * removes it (a failure is logged). Frees tmp. @return rc, or the first error of closing and
 * renaming; with STROBE_EIO or STROBE_ESYS, errno holds the system's reason. */
int strobe__file_finish(const char *path, char *tmp, strobe__sink *sink, int rc);

/* ---- Driving a writer (writer.c) ---------------------------------------------------------- */

/* Opens a writer of format `ops` over `out` (the caller's, which it closes after
 * strobe__writer_free) with STROBE__WR_* opening flags. @return the writer or NULL (ENOMEM). */
strobe__writer *strobe__writer_open(const strobe__writer_ops *ops, strobe__sink *out, int flags);

/* Frees the writer (not its sink). Accepts NULL. */
void strobe__writer_free(strobe__writer *w);

/* Declares a track. @return its id (>= 0) or STROBE_ENOMEM. */
int64_t strobe__writer_track(strobe__writer *w, const strobe__wr_track *t);

/* The id of the track of thread (pid, tid) declared earlier, or -1. */
int64_t strobe__writer_find_thread(const strobe__writer *w, int64_t pid, int64_t tid);

/* What strobe__writer_put_result writes. */
enum {
    /* The whole trace: header, the process and its threads, the session's span, the devices
     * and their streams, every event, the footer. */
    STROBE__PUT_WHOLE = 1,
    /* The devices and their streams and every event, into a trace whose header, process and
     * session the caller writes (the stream appends a session's device activity). The result's
     * CPU threads use tracks already declared for them where there are. */
    STROBE__PUT_EVENTS = 2,
};

/* Writes a result through `w`: its events as slices (begin in start order, ends innermost
 * first), instants and counters, with Kineto's args ("External id", "Ev Idx", ...), the "ac2g"
 * flows, and the JSON display ends. `events` (may be NULL) gets the number of events written
 * (counter samples left out are not). @return 0 or the first error. */
int strobe__writer_put_result(strobe__writer *w, const strobe_result *r, int what,
                              uint64_t *events);

#endif /* STROBE_WRITERS_WRITER_H */
