/* pftrace_int.h: the insides of the Perfetto decoder (pftrace_dec.h), which two files share:
 *   pftrace_dec.c   protobuf primitives, buffers and maps; the input, a Trace field at a time
 *                   through a bounded buffer, and a cut at its end; the stream API, the JSON
 *                   conversion (strobe_rd_pf_to_json) and the sniff.
 *   pftrace_emit.c  the decoder's state (sequences, tracks) and what packets become: track
 *                   descriptors, interned data, clocks and track events, decoded into the
 *                   elements of traceEvents (their JSON text and, in direct mode, their fields).
 * Internal to src/reader/. Field numbers are in pftrace_wire.h. */
#ifndef STROBE_READER_PFTRACE_INT_H
#define STROBE_READER_PFTRACE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "pftrace_dec.h"
#include "pftrace_wire.h"
#include "strobe/error.h"

/* ---- Protobuf primitives, over a bounds-checked cursor (every read checks what is left) ---- */

typedef struct cur {
    const uint8_t *p, *end;
} cur;

typedef struct field {
    uint32_t num;
    int wt;
    uint64_t v;          /* varint, fixed64 or fixed32 value */
    const uint8_t *data; /* length-delimited payload */
    size_t len;
    const uint8_t *at; /* where the field's tag starts, for messages */
} field;

/* Error state. Offsets are stream offsets: `start` is the buffer that holds the packet being
 * decoded, and `base` the stream offset of start[0]. */
typedef struct dec {
    const uint8_t *start;
    int64_t base;
    int err;
    int64_t err_off;
    char msg[300];
} dec;

/* Records a format error at stream offset off (unless one is recorded) as "byte N: reason".
 * @return d->err. */
int strobe__pf_fail_at(dec *d, int64_t off, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* An error at a pointer into the packet being decoded. */
#define fail(d, at, ...)                                                                           \
    strobe__pf_fail_at((d), (d)->base + (int64_t)((at) - (d)->start), __VA_ARGS__)

/* The slow path of get_varint(). @return 0 or an error. */
int strobe__pf_get_varint_slow(dec *d, cur *c, uint64_t *out);

/* Reads the next field of the message in c. @return 1: a field, 0: end of message, <0: error. */
int strobe__pf_next_field(dec *d, cur *c, field *f);

/* A varint; most are one byte. */
static inline int get_varint(dec *d, cur *c, uint64_t *out) {
    if (c->p < c->end && !(*c->p & 0x80)) {
        *out = *c->p++;
        return 0;
    }
    return strobe__pf_get_varint_slow(d, c, out);
}

/* Checks that a known field has the wire type its .proto declares. */
static inline int want(dec *d, const field *f, int wt) {
    if (f->wt == wt) return 0;
    return fail(d, f->at, "field %u: wire type %d, expected %d", f->num, f->wt, wt);
}

/* The payload of a length-delimited field as a message; empty for any other field (whose data is
 * NULL, and NULL + 0 is undefined). */
static inline cur sub(const field *f) {
    if (!f->data) return (cur){NULL, NULL};
    return (cur){f->data, f->data + f->len};
}

/* ---- Buffers and maps ---------------------------------------------------------------------- */

/* A growable byte buffer, NUL-terminated; `err` is sticky. */
typedef struct buf {
    char *p;
    size_t len, cap;
    int err;
} buf;

/* Makes room for n more bytes (and a NUL). @return 0 or STROBE_ENOMEM (also set in b->err). */
int strobe__pf_grow(buf *b, size_t n);

/* Appends s[0..n) to b. */
static inline void put(buf *b, const void *s, size_t n) {
    if (b->cap - b->len <= n && strobe__pf_grow(b, n)) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static inline void puts_(buf *b, const char *s) {
    put(b, s, strlen(s));
}

/* Appends formatted text (at most 127 bytes) to b. */
void strobe__pf_printf(buf *b, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Decimal integers, written without printf: there are several per event. */
void strobe__pf_put_u64(buf *b, uint64_t v);
void strobe__pf_put_i64(buf *b, int64_t v);

/* A hash map from a (uint64, uint64) key to a uint64 value, open addressing. */
typedef struct map {
    uint64_t *k1, *k2, *val;
    uint8_t *used;
    size_t cap, n;
} map;

/* Sets the value of key (a, b). @return 0 or STROBE_ENOMEM. */
int strobe__pf_map_put(map *m, uint64_t a, uint64_t b, uint64_t v);
/* @return 1 and *v set when key (a, b) is there, else 0. */
int strobe__pf_map_get(const map *m, uint64_t a, uint64_t b, uint64_t *v);
void strobe__pf_map_free(map *m);

/* ---- The decoder's state -------------------------------------------------------------------- */

enum { TK_PLAIN, TK_PROCESS, TK_THREAD, TK_COUNTER };
/* Interned kinds; a frame's value is its function name's iid and a callstack's its frames' iids
 * (outermost first), as decimal text separated by ',' (pftrace_emit.c, CPU samples). */
enum { IN_NAME = 1, IN_CAT = 2, IN_ANN = 3, IN_STR = 4, IN_FUNC = 5, IN_FRAME = 6, IN_STACK = 7 };

/* A slice whose begin was read and whose end was not yet: the parts of its JSON text known at
 * the begin, kept until the end gives its duration. */
typedef struct open_slice {
    uint64_t index; /* its element's index; its flows have the next ones */
    int64_t ts;
    int64_t pid, tid;
    int session; /* strobe's session slice: written with empty args */
    /* Its text, at `text` in its track's text stack: "\"cat\": C, \"name\": N" (head_len bytes,
     * C cat_q of them), then the begin's annotations as JSON members (the rest). */
    size_t text, head_len, cat_q;
    int plain;       /* cat and name were written as they are (see strobe_rd_pf_elem) */
    unsigned adepth; /* nesting depth of the deepest annotation value */
    size_t flow_at;  /* its flows, at flow_at in its track's flow stack */
    size_t nflows;   /* flow events in it */
} open_slice;

/* A flow event to write: its id (as the JSON gives it, see map_flows) and whether it ends. */
typedef struct pflow {
    uint64_t id;
    int term;
} pflow;

typedef struct pflows {
    pflow *p;
    size_t n, cap;
} pflows;

typedef struct track {
    uint64_t uuid, parent;
    int declared; /* a descriptor was read (else only events named it) */
    int kind, has_parent, has_sort;
    int64_t pid, tid, sort;
    char *name;         /* malloc'ed, or NULL */
    int64_t opid, otid; /* resolved Kineto pid and tid */
    int resolved;
    int lane; /* another track of its parent's thread: no thread name or sort index of its own */
    size_t decl_ix; /* its place among declared tracks, for made-up ids */
    open_slice *open;
    size_t nopen, capopen;
    buf text;     /* the texts of the open slices, innermost last: slices close in reverse order */
    pflows flows; /* the flows of the open slices, in the same order */
} track;

/* A packet sequence. Its interned strings are dropped when its incremental state is cleared, so
 * that they are bounded by what one state holds. */
typedef struct seq {
    uint32_t id;
    map interned;       /* (kind, iid) -> malloc'ed string */
    uint64_t inc_clock; /* the sequence's incremental clock id, 0: none */
    uint64_t inc_value; /* its current value */
    int64_t inc_offset; /* BOOTTIME - incremental clock, from the snapshot */
    uint64_t def_clock; /* TracePacketDefaults.timestamp_clock_id, 0: none */
    uint64_t def_track; /* TrackEventDefaults.track_uuid */
    int has_def_track;
} seq;

/* The TrackEvent being decoded. */
typedef struct tevent {
    int type;
    uint64_t track;
    int64_t ts;
    const char *name, *cat; /* NULL: absent */
    size_t name_len, cat_len;
    double value;
    unsigned adepth; /* nesting depth of the deepest annotation value (0: all scalars) */
    buf anns;        /* annotation keys and values (JSON text), NUL-separated; see ann_key() */
    size_t *ann_off;
    size_t nann, capann;
    buf scratch; /* the name and categories given as strings, and a value being formatted */
    uint64_t *flow_id;
    uint8_t *flow_term;
    size_t nflow, capflow;
} tevent;

enum { PH_HEADER, PH_EVENTS, PH_CLOSE, PH_TRAILER, PH_DONE };

struct strobe_rd_pfs {
    /* Input: a gzFile (borrowed) or memory. in[in_pos..in_len) is unread, in[0] is at stream
     * offset in_base. */
    gzFile gz;
    const uint8_t *mem;
    size_t mem_len;
    uint8_t *in;
    size_t in_pos, in_len, in_cap;
    int64_t in_base;
    int in_eof;
    strobe_rd_gzsum gz_sum; /* what gzread() gave, for the check of data after it (gz_tail.h) */
    size_t max_packet;
    int allow_cut;
    int scanning; /* the first pass, which only gathers fanned-out flows (prescan_flows) */
    int scanned;
    int64_t cut;     /* where an incomplete last field starts, -1: none */
    uint64_t fields; /* whole Trace fields read */

    dec d;
    seq *seqs;
    size_t nseqs, capseqs;
    map seq_ix; /* (sequence id, 0) -> index in seqs */
    track *tracks;
    size_t ntracks, captracks, ndeclared;
    map track_ix; /* (uuid, 0) -> index in tracks */
    map rep;      /* fanned-out flow id -> the id its launch's "s" carries */
    tevent ev;
    int64_t last_ts;
    int content; /* a track event or descriptor was read */

    /* Output: out[out_pos..out.len) not yet handed out; out[0] is at offset out_base in the whole
     * text. In direct mode, each element of traceEvents written is queued in a ring (its offset
     * relative to out, or to pending_m before the header) until the reader takes it; elements
     * are numbered in the order of the begins (next_index). */
    buf out;
    int64_t out_base;
    int direct;
    int64_t arr_end; /* offset (in the whole text) just after the event array's "[", -1: none */
    uint64_t next_index;
    strobe_rd_pf_elem *ring, scratch, cur;
    size_t ring_head, ring_len, ring_cap; /* ring_cap: a power of 2 */
    pflows iflows;                        /* the flows of an instant */
    size_t out_pos;
    int phase;
    int first;          /* no event written yet */
    int session;        /* the session slice was seen */
    buf pending_m;      /* metadata events read before the header was written */
    buf late_meta;      /* top-level members of a session slice seen after the header */
    char *trace_name;   /* the traceName member's JSON value, written last */
    size_t close_track; /* PH_CLOSE: the next track whose open slices are closed */
};

/* Records running out of memory as the decoder's error. @return its error. */
int strobe__pf_nomem(strobe_rd_pfs *s);

/* Frees a sequence's interned strings. */
void strobe__pf_seq_clear_interned(seq *q);

/* ---- pftrace_emit.c ------------------------------------------------------------------------- */

/* Decodes a TracePacket (pf: the Trace field that holds it) into the output. @return 0 or an
 * error (the decoder's, s->d). */
int strobe__pf_parse_packet(strobe_rd_pfs *s, const field *pf);

/* Writes the top level up to the event array, unless it was written. */
void strobe__pf_need_header(strobe_rd_pfs *s);

/* Writes the complete event of the innermost open slice of t, which ended at end_ts, with the
 * end's annotations (end: may be NULL) after the begin's, and drops it. */
void strobe__pf_close_slice(strobe_rd_pfs *s, track *t, int64_t end_ts, const tevent *end);

#endif /* STROBE_READER_PFTRACE_INT_H */
