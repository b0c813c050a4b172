/* trace_reader.h: a streaming reader of Kineto-format Chrome trace JSON (.json and .json.gz), and
 * of Perfetto traces (.pftrace, plain or gzip'd) through their decoding into that JSON, a packet
 * at a time as it is read (pftrace_dec.h).
 *
 * Internal API of strobe (prefix strobe_rd_), used by the round-trip tests and the strobe CLI.
 * It links only zlib and uses strobe/error.h for its error codes.
 *
 * What it reads. A trace is either an object whose "traceEvents" member is an array of events,
 * with other members (schemaVersion, deviceProperties, baseTimeNanoseconds, traceName, user
 * metadata ...) before or after it, or a bare array of events. Both Kineto schemas are accepted:
 * the current one (ts and dur in microseconds with a three-decimal nanosecond fraction, relative
 * to baseTimeNanoseconds) and the 2021 one (integer absolute microseconds, string tids such as
 * "stream 7"). As the Trace Event Format allows, an event array that is never closed (the writer
 * died) is accepted when the input ends between two events, also after a trailing comma.
 *
 * How. strobe_rd_next() pulls one item at a time, in file order: a top-level metadata member, or
 * one element of the event array. Memory use is bounded by the largest single event or metadata
 * value (and by the limits in strobe_rd_options), not by the size of the file. A Perfetto trace
 * yields the same items its JSON conversion holds, in the decoder's order (a slice when its end
 * is read, a track's metadata with its descriptor), and its memory is bounded by the decoder's
 * state (interned strings, tracks, the slices open at one time) and its largest packet. Its events
 * are filled from the fields the decoder gives, not by reading their JSON text again (which is
 * still their raw text), unless those fields do not say all or a limit is near (pftrace_dec.h).
 *
 * CPU samples. A JSON trace's CPU profiles ("Profile" and "ProfileChunk" events, "ph": "P", as
 * Chrome and strobe's JSON writer write them) are not handed out as they are: each of their
 * samples is, as the "cpu_sample" instant strobe's older traces hold (profile_rd.h), at its place
 * in the file; a Perfetto trace's PerfSample packets likewise. Other "P" events are handed out.
 *
 * Errors. Malformed JSON, input that ends inside an event, or a limit exceeded stops the reader
 * with STROBE_EFORMAT and a message "PATH: byte N: reason", where N is the offset in the decoded
 * (decompressed) text. A well-formed event with bad content (no ph, a string ts, a null element)
 * is not an error: it is returned with `bad` flags, so that a checker can count such events.
 * Values are never invented: a field that is missing or unusable is reported as absent.
 *
 * Thread-safety: a reader is used by one thread at a time; separate readers are independent. The
 * free functions (strobe_rd_obj_get, strobe_rd_value_*, strobe_rd_us_to_ns) are reentrant. */
#ifndef STROBE_READER_TRACE_READER_H
#define STROBE_READER_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>

#include "strobe/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A decoded string: s is NUL-terminated (but may contain NUL bytes from \u0000, so use len), or
 * NULL when the field is absent. Owned by the reader; valid until the next strobe_rd_next(). */
typedef struct strobe_rd_str {
    const char *s;
    size_t len;
} strobe_rd_str;

/* The JSON type of a value. */
typedef enum strobe_rd_type {
    STROBE_RD_T_NONE = 0, /* absent */
    STROBE_RD_T_NULL,
    STROBE_RD_T_FALSE,
    STROBE_RD_T_TRUE,
    STROBE_RD_T_NUMBER,
    STROBE_RD_T_STRING,
    STROBE_RD_T_ARRAY,
    STROBE_RD_T_OBJECT
} strobe_rd_type;

/* A JSON value as its raw text (not NUL-terminated; a string keeps its quotes and escapes). */
typedef struct strobe_rd_value {
    strobe_rd_type type;
    const char *raw;
    size_t len;
} strobe_rd_value;

/* An identifier field (pid, tid, id) as written: a JSON integer, or a string. */
typedef enum strobe_rd_id_kind {
    STROBE_RD_ID_ABSENT = 0,
    STROBE_RD_ID_INT,    /* a JSON number with an integer value; num holds it */
    STROBE_RD_ID_STRING, /* a string ("stream 7", "Spans", "25738"); str holds it */
    STROBE_RD_ID_OTHER   /* anything else (fraction, null, object ...); the event is bad */
} strobe_rd_id_kind;

typedef struct strobe_rd_id {
    strobe_rd_id_kind kind;
    int has_num; /* num is valid: kind INT, or a STRING made only of decimal digits ("25738") */
    int64_t num; /* 0 when !has_num */
    strobe_rd_str str; /* the string for kind STRING, else absent */
} strobe_rd_id;

/* Why an event is bad (bits of strobe_rd_event.bad). */
enum {
    STROBE_RD_BAD_NOT_OBJECT = 1u << 0, /* the element is not an object (null, number ...) */
    STROBE_RD_BAD_PH = 1u << 1,         /* ph missing, not a string, or empty */
    STROBE_RD_BAD_NAME = 1u << 2,       /* name not a string, or missing (ph other than "E") */
    STROBE_RD_BAD_CAT = 1u << 3,        /* cat present but not a string */
    STROBE_RD_BAD_TS = 1u << 4,         /* ts missing (ph other than "M"), not a number, or
                                           beyond int64 nanoseconds */
    STROBE_RD_BAD_DUR = 1u << 5,     /* dur not a number, out of range, negative, or missing on X */
    STROBE_RD_BAD_PID = 1u << 6,     /* pid missing, or neither an integer nor a string */
    STROBE_RD_BAD_TID = 1u << 7,     /* tid missing, or neither an integer nor a string */
    STROBE_RD_BAD_ID = 1u << 8,      /* id present but neither an integer nor a string */
    STROBE_RD_BAD_ARGS = 1u << 9,    /* args present but not an object */
    STROBE_RD_BAD_FIELD = 1u << 10,  /* bp or s present but not a string */
    STROBE_RD_BAD_DUP_KEY = 1u << 11 /* a member repeated (the last one is used, as in JS) */
};

/* One element of traceEvents. Everything it points to is owned by the reader and valid until the
 * next strobe_rd_next() or strobe_rd_close(). */
typedef struct strobe_rd_event {
    uint64_t index; /* position in the event array, from 0; of a Perfetto trace, in the order of
                       the begins (strobe_rd_pf_elem.index) */
    int64_t offset; /* stream offset of the element's first byte */
    strobe_rd_str ph, name, cat;
    strobe_rd_str bp, s; /* flow binding point, instant scope */
    strobe_rd_id pid, tid, id;
    int has_ts, has_dur;
    /* ts and dur in ns, exactly as written (ts is relative to the base time if there is one). */
    int64_t ts_ns, dur_ns;
    /* Absolute start in ns: baseTimeNanoseconds + ts_ns when the trace has a base time, ts_ns when
     * it has none. Known (has_abs) when the base time came before traceEvents, when the file is a
     * bare array, or when options.prescan_base looked ahead; otherwise read
     * strobe_rd_get_info() after the last event and add base_time_ns yourself. */
    int has_abs;
    int64_t abs_ts_ns;
    const char *args; /* raw text of the "args" object, NULL when absent or not an object */
    size_t args_len;
    const char *raw; /* raw text of the whole element */
    size_t raw_len;
    /* With options.arg_keys: arg_values[k] is what strobe_rd_event_arg(ev, arg_keys[k]) gives
     * (zeroed when absent), found while the args were read; NULL when the reader did not look
     * (a Perfetto trace's events): then look them up yourself. */
    const struct strobe_rd_value *arg_values;
    unsigned bad;           /* STROBE_RD_BAD_* bits; 0 for a good event */
    const char *bad_reason; /* a static description of the first problem found, or NULL */
} strobe_rd_event;

/* One top-level member other than traceEvents. */
typedef struct strobe_rd_meta {
    strobe_rd_str key;
    strobe_rd_value value;
    int64_t offset; /* stream offset of the value */
} strobe_rd_meta;

typedef enum strobe_rd_kind {
    STROBE_RD_END = 0, /* the trace was read to its end */
    STROBE_RD_META = 1,
    STROBE_RD_EVENT = 2
} strobe_rd_kind;

/* What strobe_rd_next() returns; exactly one of meta and event is set. */
typedef struct strobe_rd_item {
    strobe_rd_kind kind;
    const strobe_rd_meta *meta;
    const strobe_rd_event *event;
} strobe_rd_item;

/* Facts about the trace gathered so far (complete once strobe_rd_next() returned STROBE_RD_END).
 * Strings and raw text are owned by the reader and valid until strobe_rd_close(). */
typedef struct strobe_rd_info {
    int bare_array;   /* the top level is an array of events */
    int unterminated; /* the event array was not closed (accepted; see above) */
    int has_schema_version;
    int64_t schema_version;
    int has_base_time;
    int64_t base_time_ns; /* baseTimeNanoseconds */
    strobe_rd_str display_time_unit, trace_name;
    const char *device_properties; /* raw text of deviceProperties, NULL when absent */
    size_t device_properties_len;
    uint64_t events;     /* elements of traceEvents read so far */
    uint64_t bad_events; /* of which bad */
    uint64_t metas;      /* top-level members other than traceEvents */
    int64_t bytes;       /* decoded bytes consumed so far */
    int perfetto;        /* the input is a Perfetto trace, read as the JSON it is decoded to */
    /* A Perfetto trace cut inside a packet (accepted, as Perfetto's trace processor does): it was
     * read up to its last whole packet, and pf_cut_offset is where the incomplete one starts in
     * the (decompressed) input. Known once strobe_rd_next() returned STROBE_RD_END. */
    int pf_cut;
    int64_t pf_cut_offset;
    /* A gzip'd file with data after its last gzip member, which is ignored, as gzip ignores it
     * ("trailing garbage ignored"; concatenated members are read as one stream): how many bytes
     * (0: none), where they start in the compressed file, and whether they are all zero bytes
     * (padding). Known once strobe_rd_next() returned STROBE_RD_END. */
    int64_t gz_trailing_bytes, gz_trailing_offset;
    int gz_trailing_zeros;
} strobe_rd_info;

/* Options, filled with defaults by strobe_rd_options_init(). */
typedef struct strobe_rd_options {
    size_t max_depth;  /* nesting limit (default 512, at most 4096) */
    size_t max_string; /* longest decoded string (default 64 MiB) */
    size_t max_value;  /* largest raw event or metadata value, and largest Perfetto packet
                          (default 256 MiB) */
    /* When traceEvents comes before baseTimeNanoseconds (some ROCm builds of Kineto write it
     * last), look ahead for the base time in a second pass over the input before returning the
     * first event, so that every event has abs_ts_ns. This decodes the input twice when the base
     * time is late or absent; it costs nothing when it comes first. Default 0. */
    int prescan_base;
    /* For tests and fuzzers: feed memory input in windows of this many bytes, as a file is read,
     * so that the paths for tokens and events that straddle windows run. 0: one window. */
    size_t mem_chunk;
    /* Args to find in each event while its args are read (strobe_rd_event.arg_values), so that
     * they are not read again for each key: at most STROBE_RD_ARG_KEYS keys, which must outlive
     * the reader. */
    const char *const *arg_keys;
    size_t arg_key_count;
} strobe_rd_options;

#define STROBE_RD_ARG_KEYS 32

/* Fills *opt with the defaults. */
void strobe_rd_options_init(strobe_rd_options *opt);

typedef struct strobe_rd strobe_rd;

/* Opens the trace at path, "-" for standard input (which is copied into an unlinked temporary
 * file first, as it is read more than once). The format is told by content, whatever the name:
 * Kineto JSON or a Perfetto trace (decoded as it is read, see pftrace_dec.h), either one plain
 * or gzip'd. opt may be NULL.
 * @return 0, or a negative STROBE_E* error (STROBE_EIO when the file cannot be opened). Except for
 * STROBE_ENOMEM and STROBE_EINVAL (path NULL), after which *out is NULL, *out is set even on
 * failure, so that strobe_rd_errmsg() can say what failed; close it in every case. Only the first
 * 4 KiB are read here (to tell the format); of a Perfetto trace, the packets up to its first
 * event (an error in those, or a trace cut inside its first packet, is returned here,
 * STROBE_EFORMAT; a later one by strobe_rd_next(), as "PATH: Perfetto trace: byte N: reason"). */
int strobe_rd_open(strobe_rd **out, const char *path, const strobe_rd_options *opt);

/* Opens a reader over data[0..len), which must stay valid and unchanged until strobe_rd_close().
 * Gzip data is not decoded here; a Perfetto trace (told by content) is decoded as it is read, as
 * from a file. name (may be NULL: "<memory>") is used in messages.
 * @return 0, or STROBE_ENOMEM (*out is NULL). A Perfetto trace that cannot be decoded fails
 * strobe_rd_next(), with STROBE_EFORMAT and a message. */
int strobe_rd_open_mem(strobe_rd **out, const void *data, size_t len, const char *name,
                       const strobe_rd_options *opt);

/* Whether the file at path (plain or gzip) holds a Perfetto trace rather than JSON, by content, as
 * strobe_rd_open() tells them apart. @return 1, 0, or STROBE_EIO (it cannot be read). */
int strobe_rd_is_perfetto(const char *path);

/* Starts reading again from the beginning (also standard input, which was kept), as if just
 * opened; an error is cleared. @return 0, or a negative error (as strobe_rd_next() would give). */
int strobe_rd_rewind(strobe_rd *r);

/* Closes the reader and frees everything it owns. Accepts NULL. */
void strobe_rd_close(strobe_rd *r);

/* Reads the next item into *item.
 * @return STROBE_RD_META or STROBE_RD_EVENT, STROBE_RD_END (0) at the end of the trace, or a
 * negative error: STROBE_EFORMAT (malformed input), STROBE_EIO, STROBE_ENOMEM. An error is
 * sticky: later calls return it again. */
int strobe_rd_next(strobe_rd *r, strobe_rd_item *item);

/* What the reader learned so far; see strobe_rd_info. Never NULL. */
const strobe_rd_info *strobe_rd_get_info(const strobe_rd *r);

/* The last error as "PATH: byte N: reason" (or "PATH: reason" when no offset applies), or "" when
 * there was none. Valid until strobe_rd_close(). */
const char *strobe_rd_errmsg(const strobe_rd *r);

/* Stream offset of the last error, or -1 when there is none or it has no offset. */
int64_t strobe_rd_error_offset(const strobe_rd *r);

/* Finds member key of the JSON object text[0..len) (top-level members only; the first match).
 * @return 1 and *out filled when found, 0 when absent, STROBE_EFORMAT when text is not an object
 * (a malformed member after the match is not noticed). */
int strobe_rd_obj_get(const char *text, size_t len, const char *key, strobe_rd_value *out);

/* Finds several members of the JSON object text[0..len) in one pass: out[k] is what
 * strobe_rd_obj_get(text, len, keys[k], &out[k]) would give (the first match; zeroed, raw NULL,
 * when absent or past a malformed member). Reading the text once instead of once per key is what
 * makes it worth having: an event's args are looked up for several keys.
 * @return how many keys were found, or STROBE_EINVAL. */
int strobe_rd_obj_get_keys(const char *text, size_t len, const char *const *keys, size_t n,
                           strobe_rd_value *out);

/* strobe_rd_obj_get() over ev->args ("External id", "correlation", "Call stack" ...).
 * @return 1 found, 0 absent (also when the event has no args), or STROBE_EFORMAT. */
int strobe_rd_event_arg(const strobe_rd_event *ev, const char *key, strobe_rd_value *out);

/* Reads an integer value exactly (also written as 1.0 or 1e3).
 * @return 0, STROBE_EFORMAT (not a number with an integer value) or STROBE_ERANGE. */
int strobe_rd_value_int(const strobe_rd_value *v, int64_t *out);

/* Reads a number value as a double (strtod, so the C locale's decimal point is assumed).
 * @return 0 or STROBE_EFORMAT (not a number). */
int strobe_rd_value_double(const strobe_rd_value *v, double *out);

/* Decodes a string value into buf[0..cap) (NUL-terminated, truncated to fit) and sets *len (may be
 * NULL) to its full decoded length. @return 0, STROBE_ERANGE when it was truncated, or
 * STROBE_EFORMAT (not a string). */
int strobe_rd_value_str(const strobe_rd_value *v, char *buf, size_t cap, size_t *len);

/* Converts a JSON number text in microseconds to integer nanoseconds without floating point:
 * "1234.567" -> 1234567, "17" -> 17000, "1.5e3" -> 1500000. Digits beyond the nanosecond are
 * rounded half away from zero ("0.0005" -> 1). @return 0, STROBE_EFORMAT (not a JSON number) or
 * STROBE_ERANGE (beyond int64). */
int strobe_rd_us_to_ns(const char *text, size_t len, int64_t *ns);

#ifdef __cplusplus
}
#endif
#endif /* STROBE_READER_TRACE_READER_H */
