/* pftrace_enc.h: an encoder for Perfetto's native protobuf trace format (TracePacket with
 * TrackEvent), written from the field numbers in Perfetto's public .proto documentation.
 *
 * One encoder is one trusted packet sequence with its own interning tables. Each call appends one
 * or more complete TracePacket records (tag, length, body) to an in-memory buffer; the caller
 * takes them with strobe__pft_data() and writes them out, then calls strobe__pft_reset_data().
 * Because every packet is whole, a stream cut after any packet still imports, which streaming
 * output relies on.
 *
 * What is encoded, and why:
 * - Event names, categories and debug annotation names are interned per sequence: the first
 *   packet that uses a string carries it in InternedData, later packets refer to its id. The
 *   first packet of the sequence sets SEQ_INCREMENTAL_STATE_CLEARED. (Packets that depend on it
 *   do not set SEQ_NEEDS_INCREMENTAL_STATE: see begin_packet in pftrace_enc.c.) The tables are
 *   bounded: past STROBE__PFT_INTERN_LIMIT bytes, or at strobe__pft_clear_state, the sequence
 *   starts over with empty tables (the same first packet again), so memory does not grow with
 *   the number of distinct names.
 * - A sequence may have a default track (strobe__pft_set_default_track), left out of the events
 *   on it: with one sequence per thread, a slice's end is about 11 bytes.
 * - Timestamps are deltas on a sequence-scoped incremental clock (declared by a ClockSnapshot in
 *   the first packet, which maps it one to one onto BOOTTIME). A packet whose time is earlier
 *   than the previous timed packet's cannot be a delta (deltas are unsigned), so it is written
 *   with an absolute BOOTTIME timestamp instead; the incremental clock then keeps its value.
 * - Timestamps are strobe's nanoseconds as given: the trace processor shows exactly the values
 *   passed in, so slices compare with the JSON writer's to the nanosecond.
 *
 * Not thread-safe: one encoder per thread, or a lock around it. */
#ifndef STROBE_UTIL_PFTRACE_ENC_H
#define STROBE_UTIL_PFTRACE_ENC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* 1 when `path` names a Perfetto trace: it ends in ".pftrace" or ".perfetto-trace", optionally
 * followed by ".gz". The writer, the reader and `strobe convert` all choose the format by it. */
static inline int strobe__pftrace_path(const char *path) {
    static const char *const suffixes[] = {".pftrace", ".perfetto-trace", ".pftrace.gz",
                                           ".perfetto-trace.gz"};
    size_t n = strlen(path);
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t m = strlen(suffixes[i]);
        if (n >= m && memcmp(path + n - m, suffixes[i], m) == 0) return 1;
    }
    return 0;
}

/* One trusted packet sequence, with its interning tables and its output buffer. */
typedef struct strobe__pft strobe__pft;

/* The value types of a debug annotation (strobe__pft_arg.type). */
enum {
    STROBE__PFT_INT,    /* i */
    STROBE__PFT_UINT,   /* u */
    STROBE__PFT_DOUBLE, /* d */
    STROBE__PFT_BOOL,   /* i (0 or not) */
    STROBE__PFT_STRING, /* s, slen */
    /* s, slen: the text of a JSON value (an array or object, as the JSON writer writes it). It is
     * written as a legacy_json_value, which the trace processor shows as the parsed value. */
    STROBE__PFT_JSON,
};

/* One debug annotation of an event: a name and a typed value. */
typedef struct strobe__pft_arg {
    const char *name; /* NUL-terminated; interned by the encoder */
    int type;         /* STROBE__PFT_INT ... STROBE__PFT_JSON */
    int64_t i;
    uint64_t u;
    double d;
    const char *s;
    size_t slen; /* length of s; (size_t)-1: strlen(s) */
} strobe__pft_arg;

/* Sets `a`'s value from the JSON text of an arg (NUL-terminated; a->name is left alone), as the
 * most specific annotation type that reads back as the same text: an integer as an int, a string
 * without escapes as a string, anything else as a JSON value. a->s points into `json`. */
void strobe__pft_arg_json(strobe__pft_arg *a, const char *json);

/* Track uuids that carry a Kineto (pid, tid) pair, for tracks that have no process or thread
 * descriptor (GPU devices and streams, the session's "Spans" track): the top byte is a marker,
 * then 24 bits of pid and 32 bits of tid. The perfetto writer makes them and the decoder reads
 * them back, so that a strobe .pftrace converts to JSON with Kineto's device pid and stream tid.
 * Tracks of other producers that happen to match are only mislabelled, never misread. */
#define STROBE__PFT_KINETO_MARK UINT64_C(0x5A)
#define STROBE__PFT_KINETO_UUID(pid, tid)                                                          \
    ((STROBE__PFT_KINETO_MARK << 56) | ((uint64_t)((uint32_t)(pid)&0xFFFFFFu) << 32) |             \
     (uint64_t)(uint32_t)(tid))

/* The uuid of a process-like track for Kineto pid `pid` (a device's "GPU N" track): another marker,
 * so that no (pid, tid) track can have it. */
#define STROBE__PFT_KINETO_PROC_MARK UINT64_C(0x5B)
#define STROBE__PFT_KINETO_PROC_UUID(pid)                                                          \
    ((STROBE__PFT_KINETO_PROC_MARK << 56) | (uint64_t)((uint32_t)(pid)&0xFFFFFFu))

/* Sort index meaning "none" for the descriptor calls. */
#define STROBE__PFT_NO_SORT INT32_MIN

/* Creates an encoder for trusted packet sequence `sequence_id` (nonzero; two encoders writing into
 * one file need different ids). @return the encoder, or NULL when out of memory. */
strobe__pft *strobe__pft_new(uint32_t sequence_id);

/* Makes `uuid` the sequence's default track (TrackEventDefaults.track_uuid): events on it are
 * written without their track, 2 to 10 bytes less each. Call it before the sequence's first
 * packet: one sequence per thread, with the thread's track as default, is the compact layout.
 * @return 0, or STROBE_EINVAL after the first packet. */
int strobe__pft_set_default_track(strobe__pft *p, uint64_t uuid);

/* Frees the encoder and its buffer. Accepts NULL. */
void strobe__pft_free(strobe__pft *p);

/* Declares a process track `uuid` (nonzero, unique in the file) for `pid`, named `name` (NULL:
 * none), ordered by `sort_index` (STROBE__PFT_NO_SORT: none). @return 0 or STROBE_ENOMEM. */
int strobe__pft_process(strobe__pft *p, uint64_t uuid, int32_t pid, const char *name,
                        int32_t sort_index);

/* Declares a thread track `uuid` for thread `tid` of process `pid` (whose process track, when
 * declared, groups it). @return 0 or STROBE_ENOMEM. */
int strobe__pft_thread(strobe__pft *p, uint64_t uuid, int32_t pid, int32_t tid, const char *name,
                       int32_t sort_index);

/* Declares a plain track `uuid` under `parent_uuid` (0: top level), e.g. a GPU stream under a GPU
 * "process" track. @return 0 or STROBE_ENOMEM. */
int strobe__pft_track(strobe__pft *p, uint64_t uuid, uint64_t parent_uuid, const char *name,
                      int32_t sort_index);

/* Declares a counter track `uuid` under `parent_uuid` (0: top level). @return 0 or
 * STROBE_ENOMEM. */
int strobe__pft_counter_track(strobe__pft *p, uint64_t uuid, uint64_t parent_uuid,
                              const char *name);

/* Begins a slice on `track` at `ts_ns`, with category `cat` (NULL: none), name `name`, `nargs`
 * debug annotations, the flows it starts or continues (`flow_out`) and the flows it terminates
 * (`flow_in`). Flow ids are global to the trace. @return 0 or STROBE_ENOMEM. */
int strobe__pft_begin(strobe__pft *p, uint64_t track, int64_t ts_ns, const char *cat,
                      const char *name, const strobe__pft_arg *args, size_t nargs,
                      const uint64_t *flow_out, size_t nflow_out, const uint64_t *flow_in,
                      size_t nflow_in);

/* Ends the innermost open slice on `track` at `ts_ns`. @return 0 or STROBE_ENOMEM. */
int strobe__pft_end(strobe__pft *p, uint64_t track, int64_t ts_ns);

/* Ends the innermost open slice on `track` with debug annotations that the trace processor adds
 * to the slice's args (what is known only at its end: streamed operator details, counter
 * deltas). @return 0 or STROBE_ENOMEM. */
int strobe__pft_end_args(strobe__pft *p, uint64_t track, int64_t ts_ns, const strobe__pft_arg *args,
                         size_t nargs);

/* An instant event on `track`. @return 0 or STROBE_ENOMEM. */
int strobe__pft_instant(strobe__pft *p, uint64_t track, int64_t ts_ns, const char *cat,
                        const char *name, const strobe__pft_arg *args, size_t nargs);

/* A CPU sample of thread `tid` of process `pid` at `ts_ns` (a PerfSample packet, which Perfetto
 * shows as CPU samples), its call stack `frames[0..n)` (lens[i] bytes each), innermost first,
 * interned per sequence. n == 0 writes nothing. @return 0 or STROBE_ENOMEM. */
int strobe__pft_perf_sample(strobe__pft *p, int64_t ts_ns, int32_t pid, int32_t tid,
                            const char *const *frames, const size_t *lens, size_t n);

/* A counter value on counter track `track`. @return 0 or STROBE_ENOMEM. */
int strobe__pft_counter(strobe__pft *p, uint64_t track, int64_t ts_ns, double value);

/* Returns the packets encoded since the last reset (whole packets only) and their length in
 * `*len`. The pointer stays valid until the next call on the encoder. */
const uint8_t *strobe__pft_data(const strobe__pft *p, size_t *len);

/* Empties the output buffer, after the caller wrote the packets out; interning and clock state
 * are kept, so the next packets continue the same sequence. */
void strobe__pft_reset_data(strobe__pft *p);

/* The default bound on the bytes an encoder's interning tables hold (strings and their entries):
 * past it, the next packet starts the sequence over, as strobe__pft_clear_state does. */
#define STROBE__PFT_INTERN_LIMIT ((size_t)1 << 20)

/* Drops the interning tables (freeing their memory); the next packet starts the sequence over:
 * it sets SEQ_INCREMENTAL_STATE_CLEARED, declares the clock again at its current value and
 * re-emits its defaults, and the strings used from then on are interned anew. Packets already
 * in the output buffer are whole and stay valid. For a caller that knows the names used so far
 * will not come back (strobe merge, between ranks), or to bound memory. */
void strobe__pft_clear_state(strobe__pft *p);

/* Sets the bound on the interning tables' bytes (STROBE__PFT_INTERN_LIMIT by default; tests set
 * a small one). */
void strobe__pft_set_intern_limit(strobe__pft *p, size_t limit);

/* The sequence's clock: the last delta-encoded timestamp. */
uint64_t strobe__pft_clock(const strobe__pft *p);

/* Sets the clock before the sequence's first packet, for an encoder that carries on a sequence
 * an earlier one wrote (whose strobe__pft_clock it was): the first packet declares it there, so
 * that a reader that carries the clock on from the earlier packets reads the same times as one
 * that resets it at the declaration. @return 0, or STROBE_EINVAL after the first packet. */
int strobe__pft_set_clock(strobe__pft *p, uint64_t ts);

/* About the bytes the encoder holds: itself, its buffers' capacity and its tables' estimate. */
size_t strobe__pft_memory(const strobe__pft *p);

#endif /* STROBE_UTIL_PFTRACE_ENC_H */
