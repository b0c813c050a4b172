/* pftrace_enc.c: see pftrace_enc.h.
 *
 * Contents:
 *   1. Field numbers, from Perfetto's .proto files (trace_packet.proto, track_event.proto,
 *      track_descriptor.proto, interned_data.proto, debug_annotation.proto, clock_snapshot.proto,
 *      trace_packet_defaults.proto).
 *   2. A growable byte buffer with protobuf's varint, fixed and length-delimited writers.
 *   3. Packets: the sequence's first packet, interning, and one function per packet kind.
 *
 * A packet is built in scratch buffers (its TrackEvent, its InternedData) and then copied whole
 * into the output buffer with its length in front; nested messages are short, so building each
 * before its length is known costs one copy and keeps the code simple. */
#include "pftrace_enc.h"

#include <stdlib.h>
#include <string.h>

#include "strobe/error.h"
#include "strpool.h"
#include "strtab.h"

/* ---- 1. Field numbers ------------------------------------------------------------------------ */

enum {
    /* Trace */
    F_TRACE_PACKET = 1,
    /* TracePacket */
    F_PKT_CLOCK_SNAPSHOT = 6,
    F_PKT_TIMESTAMP = 8,
    F_PKT_SEQUENCE_ID = 10,
    F_PKT_TRACK_EVENT = 11,
    F_PKT_INTERNED_DATA = 12,
    F_PKT_SEQUENCE_FLAGS = 13,
    F_PKT_TIMESTAMP_CLOCK_ID = 58,
    F_PKT_DEFAULTS = 59,
    F_PKT_TRACK_DESCRIPTOR = 60,
    /* TracePacket.sequence_flags */
    SEQ_INCREMENTAL_STATE_CLEARED = 1,
    /* TracePacketDefaults, TrackEventDefaults */
    F_DEF_TIMESTAMP_CLOCK_ID = 58,
    F_DEF_TRACK_EVENT_DEFAULTS = 11,
    F_TED_TRACK_UUID = 11,
    /* ClockSnapshot, ClockSnapshot.Clock */
    F_CS_CLOCKS = 1,
    F_CLK_ID = 1,
    F_CLK_TIMESTAMP = 2,
    F_CLK_IS_INCREMENTAL = 3,
    /* BuiltinClock BOOTTIME: the trace processor's default trace clock. */
    CLOCK_BOOTTIME = 6,
    /* The first sequence-scoped clock id (64..127 are scoped to their sequence). */
    CLOCK_SEQ_INCREMENTAL = 64,
    /* TrackDescriptor, ProcessDescriptor, ThreadDescriptor, CounterDescriptor */
    F_TD_UUID = 1,
    F_TD_NAME = 2,
    F_TD_PROCESS = 3,
    F_TD_THREAD = 4,
    F_TD_PARENT_UUID = 5,
    F_TD_COUNTER = 8,
    F_TD_SIBLING_ORDER_RANK = 12,
    F_PD_PID = 1,
    F_PD_PROCESS_NAME = 6,
    F_TH_PID = 1,
    F_TH_TID = 2,
    F_TH_THREAD_NAME = 5,
    /* TrackEvent */
    F_TE_CATEGORY_IIDS = 3,
    F_TE_DEBUG_ANNOTATIONS = 4,
    F_TE_TYPE = 9,
    F_TE_NAME_IID = 10,
    F_TE_TRACK_UUID = 11,
    F_TE_DOUBLE_COUNTER_VALUE = 44,
    F_TE_FLOW_IDS = 47,
    F_TE_TERMINATING_FLOW_IDS = 48,
    TYPE_SLICE_BEGIN = 1,
    TYPE_SLICE_END = 2,
    TYPE_INSTANT = 3,
    TYPE_COUNTER = 4,
    /* DebugAnnotation */
    F_DA_NAME_IID = 1,
    F_DA_BOOL = 2,
    F_DA_UINT = 3,
    F_DA_INT = 4,
    F_DA_DOUBLE = 5,
    F_DA_STRING = 6,
    F_DA_LEGACY_JSON = 9,
    /* InternedData, and its entries (EventCategory, EventName, DebugAnnotationName): iid 1,
     * name 2. */
    F_ID_EVENT_CATEGORIES = 1,
    F_ID_EVENT_NAMES = 2,
    F_ID_DEBUG_ANNOTATION_NAMES = 3,
    F_IE_IID = 1,
    F_IE_NAME = 2,
    /* CPU samples: TracePacket.perf_sample (PerfSample, profile_packet.proto) and the interned
     * tables it refers to (InternedData: function_names, frames, callstacks, mappings,
     * mapping_paths; Frame, Callstack and Mapping in profile_common.proto). */
    F_PKT_PERF_SAMPLE = 66,
    F_PS_PID = 2,
    F_PS_TID = 3,
    F_PS_CALLSTACK_IID = 4,
    F_PS_CPU_MODE = 5,
    CPU_MODE_USER = 2,
    F_ID_FUNCTION_NAMES = 5,
    F_ID_FRAMES = 6,
    F_ID_CALLSTACKS = 7,
    F_ID_MAPPING_PATHS = 17,
    F_ID_MAPPINGS = 19,
    F_FR_IID = 1,
    F_FR_FUNCTION_NAME_ID = 2,
    F_FR_MAPPING_ID = 3,
    F_FR_REL_PC = 4,
    F_CSK_IID = 1,
    F_CSK_FRAME_IDS = 2,
    F_MAP_IID = 1,
    F_MAP_START = 4,
    F_MAP_END = 5,
    F_MAP_PATH_STRING_IDS = 7,
    /* Wire types */
    WT_VARINT = 0,
    WT_I64 = 1,
    WT_LEN = 2,
};

/* ---- 2. Byte buffer -------------------------------------------------------------------------- */

typedef struct bytes {
    uint8_t *p;
    size_t len, cap;
    int err; /* sticky: STROBE_ENOMEM once an append failed */
} bytes;

static int reserve(bytes *b, size_t n) {
    if (b->err) return b->err;
    if (b->cap - b->len >= n) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < n) {
        if (cap > SIZE_MAX / 2) return b->err = STROBE_ENOMEM;
        cap *= 2;
    }
    uint8_t *p = realloc(b->p, cap);
    if (p == NULL) return b->err = STROBE_ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

/* Inline, with the capacity check first: a packet is a dozen varints, and this is the hot spot
 * of a save. */
static inline void put_varint(bytes *b, uint64_t v) {
    if (b->cap - b->len < 10 && reserve(b, 10)) return;
    uint8_t *q = b->p + b->len;
    while (v >= 0x80) {
        *q++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *q++ = (uint8_t)v;
    b->len = (size_t)(q - b->p);
}

static void put_tag(bytes *b, unsigned field, unsigned wire) {
    put_varint(b, ((uint64_t)field << 3) | wire);
}

static void put_uint(bytes *b, unsigned field, uint64_t v) {
    put_tag(b, field, WT_VARINT);
    put_varint(b, v);
}

/* int32/int64 fields: negative values as ten-byte two's complement, as protobuf specifies. */
static void put_int(bytes *b, unsigned field, int64_t v) {
    put_uint(b, field, (uint64_t)v);
}

static void put_fixed64(bytes *b, unsigned field, uint64_t v) {
    put_tag(b, field, WT_I64);
    if (reserve(b, 8)) return;
    for (int i = 0; i < 8; i++)
        b->p[b->len++] = (uint8_t)(v >> (8 * i));
}

static void put_double(bytes *b, unsigned field, double d) {
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    put_fixed64(b, field, v);
}

static void put_len(bytes *b, unsigned field, const void *data, size_t n) {
    put_tag(b, field, WT_LEN);
    put_varint(b, n);
    if (n == 0 || reserve(b, n)) return;
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void put_str(bytes *b, unsigned field, const char *s) {
    put_len(b, field, s, strlen(s));
}

/* Appends `sub` as field `field` of `b` (a nested message) and empties `sub`. */
static void put_msg(bytes *b, unsigned field, bytes *sub) {
    if (sub->err) b->err = sub->err;
    put_len(b, field, sub->p, sub->len);
    sub->len = 0;
}

/* ---- 3. Packets ------------------------------------------------------------------------------ */

/* What a table entry costs beside its bytes: its pool copy's NUL and alignment, its id, length
 * and hash, and its share of the hash slots (kept at most half full), about. */
#define INTERN_OVERHEAD 48

struct strobe__pft {
    uint32_t seq;
    int started;      /* the first packet (clock, defaults, SEQ_INCREMENTAL_STATE_CLEARED) is out */
    uint64_t last_ts; /* the incremental clock's value: the last delta-encoded timestamp */
    uint64_t default_track;                /* TrackEventDefaults.track_uuid; 0: none */
    bytes out;                             /* whole packets, each a Trace.packet field */
    bytes pkt, te, interned, entry, ann;   /* scratch */
    strobe__strtab names, cats, ann_names; /* interned strings: iid = id + 1 */
    strobe__strtab funcs, stacks; /* CPU samples: frames by name, callstacks by their frames */
    int mapping;                  /* the samples' one mapping is declared */
    /* About the bytes the tables hold (each string and its entry's overhead): past `limit`, the
     * next packet starts the sequence over (see begin_packet). */
    size_t interned_bytes, limit;
    /* The last strings seen at each of a few addresses, per table: callers pass the same static
     * names again and again, and a pointer compare and a memcmp cost less than hashing. The
     * bytes are compared, so a reused buffer with new contents is never mistaken. */
    struct {
        const char *ptr;
        size_t len;
        uint64_t iid;
    } cache[4][64];
    strobe__pool pool;
};

strobe__pft *strobe__pft_new(uint32_t sequence_id) {
    strobe__pft *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    p->seq = sequence_id ? sequence_id : 1;
    p->limit = STROBE__PFT_INTERN_LIMIT;
    strobe__strtab_init(&p->names, &p->pool);
    strobe__strtab_init(&p->cats, &p->pool);
    strobe__strtab_init(&p->ann_names, &p->pool);
    strobe__strtab_init(&p->funcs, &p->pool);
    strobe__strtab_init(&p->stacks, &p->pool);
    return p;
}

void strobe__pft_free(strobe__pft *p) {
    if (p == NULL) return;
    free(p->out.p);
    free(p->pkt.p);
    free(p->te.p);
    free(p->interned.p);
    free(p->entry.p);
    free(p->ann.p);
    strobe__strtab_release(&p->names);
    strobe__strtab_release(&p->cats);
    strobe__strtab_release(&p->ann_names);
    strobe__strtab_release(&p->funcs);
    strobe__strtab_release(&p->stacks);
    strobe__pool_release(&p->pool);
    free(p);
}

const uint8_t *strobe__pft_data(const strobe__pft *p, size_t *len) {
    *len = p->out.len;
    return p->out.p;
}

void strobe__pft_reset_data(strobe__pft *p) {
    p->out.len = 0;
}

/* Moves the packet built in p->pkt into the output, as one Trace.packet field. A failed
 * allocation anywhere leaves the output as it was before this packet: never a partial packet. */
static int finish_packet(strobe__pft *p) {
    int err = p->pkt.err | p->te.err | p->interned.err | p->entry.err | p->ann.err;
    size_t before = p->out.len;
    if (err == 0) {
        put_msg(&p->out, F_TRACE_PACKET, &p->pkt);
        err = p->out.err;
    }
    if (err) {
        p->out.len = before;
        p->out.err = p->pkt.err = p->te.err = p->interned.err = p->entry.err = p->ann.err = 0;
        p->pkt.len = p->te.len = p->interned.len = p->entry.len = p->ann.len = 0;
        return STROBE_ENOMEM;
    }
    p->pkt.len = 0;
    return 0;
}

/* The sequence's first packet: it clears incremental state, declares the sequence-scoped
 * incremental clock (mapped one to one onto BOOTTIME, so that the trace processor shows the
 * values given to this encoder), and makes it the default clock of the sequence's packets.
 *
 * The same packet starts the sequence over after strobe__pft_clear_state (or the interning
 * bound): the snapshot then gives the incremental clock its current value, not 0, so that the
 * next delta means the same whether a reader resets the clock at the new snapshot (strobe's
 * decoder does) or carries it on from the last packet. */
static int start_sequence(strobe__pft *p) {
    if (p->started) return 0;
    /* Scratch buffers that no caller has filled yet: descriptor calls fill p->entry first. */
    bytes *b = &p->pkt, *e = &p->interned, *c = &p->ann;
    put_uint(b, F_PKT_SEQUENCE_ID, p->seq);
    put_uint(b, F_PKT_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    put_uint(c, F_CLK_ID, CLOCK_SEQ_INCREMENTAL);
    put_uint(c, F_CLK_TIMESTAMP, p->last_ts);
    put_uint(c, F_CLK_IS_INCREMENTAL, 1);
    put_msg(e, F_CS_CLOCKS, c);
    put_uint(c, F_CLK_ID, CLOCK_BOOTTIME);
    put_uint(c, F_CLK_TIMESTAMP, p->last_ts);
    put_msg(e, F_CS_CLOCKS, c);
    put_msg(b, F_PKT_CLOCK_SNAPSHOT, e);
    put_uint(e, F_DEF_TIMESTAMP_CLOCK_ID, CLOCK_SEQ_INCREMENTAL);
    if (p->default_track) {
        put_uint(c, F_TED_TRACK_UUID, p->default_track);
        put_msg(e, F_DEF_TRACK_EVENT_DEFAULTS, c);
    }
    put_msg(b, F_PKT_DEFAULTS, e);
    int rc = finish_packet(p);
    if (rc == 0) p->started = 1;
    return rc;
}

/* Empties the interning tables and their pool (freeing their memory) and marks the sequence to
 * start over at its next packet; the clock keeps its value (see start_sequence). */
static void clear_tables(strobe__pft *p) {
    strobe__strtab_release(&p->names);
    strobe__strtab_release(&p->cats);
    strobe__strtab_release(&p->ann_names);
    strobe__strtab_release(&p->funcs);
    strobe__strtab_release(&p->stacks);
    strobe__pool_release(&p->pool);
    strobe__strtab_init(&p->names, &p->pool);
    strobe__strtab_init(&p->cats, &p->pool);
    strobe__strtab_init(&p->ann_names, &p->pool);
    strobe__strtab_init(&p->funcs, &p->pool);
    strobe__strtab_init(&p->stacks, &p->pool);
    p->mapping = 0;
    memset(p->cache, 0, sizeof p->cache);
    p->interned_bytes = 0;
    p->started = 0;
}

/* After a packet was lost to a failed allocation, its interned strings are in the tables but not
 * in the output: the sequence starts over (the next packet clears the incremental state), with
 * empty tables and its clock at 0. */
static void forget_state(strobe__pft *p) {
    clear_tables(p);
    p->last_ts = 0;
}

void strobe__pft_clear_state(strobe__pft *p) {
    if (p->started) clear_tables(p);
}

void strobe__pft_set_intern_limit(strobe__pft *p, size_t limit) {
    p->limit = limit;
}

uint64_t strobe__pft_clock(const strobe__pft *p) {
    return p->last_ts;
}

int strobe__pft_set_clock(strobe__pft *p, uint64_t ts) {
    if (p->started) return STROBE_EINVAL;
    p->last_ts = ts;
    return 0;
}

size_t strobe__pft_memory(const strobe__pft *p) {
    return sizeof *p + p->out.cap + p->pkt.cap + p->te.cap + p->interned.cap + p->entry.cap +
           p->ann.cap + p->interned_bytes;
}

/* Starts a packet on this sequence.
 *
 * Packets that use interned data or the incremental clock do not set SEQ_NEEDS_INCREMENTAL_STATE:
 * the flag lets the trace processor drop such packets after a lost packet left the state unknown,
 * and a strobe file never loses a packet inside a sequence (packets are whole and in order; a cut
 * stream loses only its tail). Leaving it out saves 2 of the about 17 bytes a slice's end takes. */
static int begin_packet(strobe__pft *p) {
    /* Past the bound, the tables go and the sequence starts over: the strings used from here on
     * are interned again, so that a thread with ever new names (a step number in each) holds
     * what a bound's worth of them takes, however long it runs. */
    if (p->interned_bytes > p->limit) clear_tables(p);
    int rc = start_sequence(p);
    if (rc) return rc;
    put_uint(&p->pkt, F_PKT_SEQUENCE_ID, p->seq);
    return 0;
}

int strobe__pft_set_default_track(strobe__pft *p, uint64_t uuid) {
    if (p->started) return STROBE_EINVAL;
    p->default_track = uuid;
    return 0;
}

/* Writes the packet's timestamp: a delta on the incremental clock when time did not go back,
 * else the absolute value on BOOTTIME (which leaves the incremental clock where it was). Times
 * before 0 cannot be represented and become 0. */
static void put_timestamp(strobe__pft *p, int64_t ts_ns) {
    uint64_t ts = ts_ns > 0 ? (uint64_t)ts_ns : 0;
    if (ts >= p->last_ts) {
        put_uint(&p->pkt, F_PKT_TIMESTAMP, ts - p->last_ts);
        p->last_ts = ts;
    } else {
        put_uint(&p->pkt, F_PKT_TIMESTAMP, ts);
        put_uint(&p->pkt, F_PKT_TIMESTAMP_CLOCK_ID, CLOCK_BOOTTIME);
    }
}

/* Returns the iid of s[0..len) in table `t`; a string seen for the first time is added to the
 * packet's InternedData under `field`. 0 on allocation failure (iids start at 1). */
static uint64_t intern(strobe__pft *p, strobe__strtab *t, unsigned field, const char *s,
                       size_t len) {
    int which = t == &p->names ? 0 : t == &p->cats ? 1 : t == &p->ann_names ? 2 : 3;
    size_t slot = ((uintptr_t)s >> 3) & 63;
    if (p->cache[which][slot].ptr == s && p->cache[which][slot].len == len) {
        uint64_t iid = p->cache[which][slot].iid;
        if (memcmp(t->strs[iid - 1], s, len) == 0) return iid;
    }
    size_t before = t->count;
    int64_t id = strobe__strtab_intern(t, s, len);
    if (id < 0) {
        p->interned.err = STROBE_ENOMEM;
        return 0;
    }
    uint64_t iid = (uint64_t)id + 1;
    p->cache[which][slot].ptr = s;
    p->cache[which][slot].len = len;
    p->cache[which][slot].iid = iid;
    if ((size_t)id >= before) {
        p->interned_bytes += len + INTERN_OVERHEAD;
        put_uint(&p->entry, F_IE_IID, iid);
        put_len(&p->entry, F_IE_NAME, s, len);
        put_msg(&p->interned, field, &p->entry);
    }
    return iid;
}

/* A string that is a whole JSON value is written as one. */
static void put_annotation(strobe__pft *p, const strobe__pft_arg *a) {
    bytes *b = &p->ann;
    const char *name = a->name ? a->name : "";
    put_uint(b, F_DA_NAME_IID,
             intern(p, &p->ann_names, F_ID_DEBUG_ANNOTATION_NAMES, name, strlen(name)));
    size_t n = a->s == NULL ? 0 : a->slen == (size_t)-1 ? strlen(a->s) : a->slen;
    switch (a->type) {
    case STROBE__PFT_INT:
        put_int(b, F_DA_INT, a->i);
        break;
    case STROBE__PFT_UINT:
        put_uint(b, F_DA_UINT, a->u);
        break;
    case STROBE__PFT_DOUBLE:
        put_double(b, F_DA_DOUBLE, a->d);
        break;
    case STROBE__PFT_BOOL:
        put_uint(b, F_DA_BOOL, a->i != 0);
        break;
    case STROBE__PFT_JSON:
        put_len(b, F_DA_LEGACY_JSON, a->s ? a->s : "", n);
        break;
    default:
        put_len(b, F_DA_STRING, a->s ? a->s : "", n);
        break;
    }
    put_msg(&p->te, F_TE_DEBUG_ANNOTATIONS, b);
}

/* Builds a TrackEvent of `type` into p->te, then the packet around it. */
static int event_packet(strobe__pft *p, int type, uint64_t track, int64_t ts_ns, const char *cat,
                        const char *name, const strobe__pft_arg *args, size_t nargs,
                        const uint64_t *flow_out, size_t nflow_out, const uint64_t *flow_in,
                        size_t nflow_in, const double *counter) {
    int rc = begin_packet(p);
    if (rc) return rc;
    put_timestamp(p, ts_ns);
    bytes *te = &p->te;
    put_uint(te, F_TE_TYPE, (uint64_t)type);
    if (track != p->default_track) put_uint(te, F_TE_TRACK_UUID, track);
    if (cat)
        put_uint(te, F_TE_CATEGORY_IIDS,
                 intern(p, &p->cats, F_ID_EVENT_CATEGORIES, cat, strlen(cat)));
    if (name)
        put_uint(te, F_TE_NAME_IID, intern(p, &p->names, F_ID_EVENT_NAMES, name, strlen(name)));
    for (size_t i = 0; i < nargs; i++)
        put_annotation(p, &args[i]);
    for (size_t i = 0; i < nflow_out; i++)
        put_fixed64(te, F_TE_FLOW_IDS, flow_out[i]);
    for (size_t i = 0; i < nflow_in; i++)
        put_fixed64(te, F_TE_TERMINATING_FLOW_IDS, flow_in[i]);
    if (counter) put_double(te, F_TE_DOUBLE_COUNTER_VALUE, *counter);
    /* InternedData goes before the event that uses it; the order of fields in a message does not
     * matter to a decoder, but it reads naturally in a dump. */
    if (p->interned.len) put_msg(&p->pkt, F_PKT_INTERNED_DATA, &p->interned);
    put_msg(&p->pkt, F_PKT_TRACK_EVENT, te);
    rc = finish_packet(p);
    if (rc) forget_state(p);
    return rc;
}

int strobe__pft_begin(strobe__pft *p, uint64_t track, int64_t ts_ns, const char *cat,
                      const char *name, const strobe__pft_arg *args, size_t nargs,
                      const uint64_t *flow_out, size_t nflow_out, const uint64_t *flow_in,
                      size_t nflow_in) {
    return event_packet(p, TYPE_SLICE_BEGIN, track, ts_ns, cat, name ? name : "", args, nargs,
                        flow_out, nflow_out, flow_in, nflow_in, NULL);
}

int strobe__pft_end(strobe__pft *p, uint64_t track, int64_t ts_ns) {
    return event_packet(p, TYPE_SLICE_END, track, ts_ns, NULL, NULL, NULL, 0, NULL, 0, NULL, 0,
                        NULL);
}

int strobe__pft_end_args(strobe__pft *p, uint64_t track, int64_t ts_ns, const strobe__pft_arg *args,
                         size_t nargs) {
    return event_packet(p, TYPE_SLICE_END, track, ts_ns, NULL, NULL, args, nargs, NULL, 0, NULL, 0,
                        NULL);
}

int strobe__pft_instant(strobe__pft *p, uint64_t track, int64_t ts_ns, const char *cat,
                        const char *name, const strobe__pft_arg *args, size_t nargs) {
    return event_packet(p, TYPE_INSTANT, track, ts_ns, cat, name ? name : "", args, nargs, NULL, 0,
                        NULL, 0, NULL);
}

int strobe__pft_counter(strobe__pft *p, uint64_t track, int64_t ts_ns, double value) {
    return event_packet(p, TYPE_COUNTER, track, ts_ns, NULL, NULL, NULL, 0, NULL, 0, NULL, 0,
                        &value);
}

/* A CPU sample: frames are interned by name (a frame per distinct name, its iid the name's, in
 * one made-up mapping "[strobe: symbolized]" with the iid as rel_pc, so that no two names share a
 * frame), callstacks by their frames' iids. */
int strobe__pft_perf_sample(strobe__pft *p, int64_t ts_ns, int32_t pid, int32_t tid,
                            const char *const *frames, const size_t *lens, size_t n) {
    if (n == 0) return 0;
    int rc = begin_packet(p);
    if (rc) return rc;
    put_timestamp(p, ts_ns);
    bytes *e = &p->entry, *m = &p->ann, *key = &p->te;
    if (!p->mapping) {
        static const char path[] = "[strobe: symbolized]";
        put_uint(e, F_IE_IID, 1);
        put_len(e, F_IE_NAME, path, sizeof path - 1);
        put_msg(&p->interned, F_ID_MAPPING_PATHS, e);
        put_uint(m, F_MAP_IID, 1);
        put_uint(m, F_MAP_START, 0);
        put_uint(m, F_MAP_END, UINT64_C(1) << 47);
        put_uint(m, F_MAP_PATH_STRING_IDS, 1);
        put_msg(&p->interned, F_ID_MAPPINGS, m);
    }
    /* The callstack's key: its frames' iids, outermost first (Callstack.frame_ids' order). */
    for (size_t i = n; i-- > 0;) {
        size_t before = p->funcs.count;
        uint64_t iid = intern(p, &p->funcs, F_ID_FUNCTION_NAMES, frames[i], lens[i]);
        if (p->funcs.count > before) {
            put_uint(m, F_FR_IID, iid);
            put_uint(m, F_FR_FUNCTION_NAME_ID, iid);
            put_uint(m, F_FR_MAPPING_ID, 1);
            put_uint(m, F_FR_REL_PC, iid);
            put_msg(&p->interned, F_ID_FRAMES, m);
        }
        put_varint(key, iid);
    }
    size_t before = p->stacks.count;
    int64_t sid = key->err ? -1 : strobe__strtab_intern(&p->stacks, (const char *)key->p, key->len);
    if (sid < 0) p->interned.err = STROBE_ENOMEM;
    uint64_t stack_iid = sid < 0 ? 0 : (uint64_t)sid + 1;
    if (sid >= 0 && p->stacks.count > before) {
        p->interned_bytes += key->len + INTERN_OVERHEAD;
        put_uint(m, F_CSK_IID, stack_iid);
        /* proto2 repeated scalars, unpacked: one tag per frame. */
        for (size_t off = 0; off < key->len;) {
            uint64_t v = 0;
            for (int shift = 0; off < key->len; shift += 7) {
                uint8_t byte = key->p[off++];
                v |= (uint64_t)(byte & 0x7f) << shift;
                if (!(byte & 0x80)) break;
            }
            put_uint(m, F_CSK_FRAME_IDS, v);
        }
        put_msg(&p->interned, F_ID_CALLSTACKS, m);
    }
    key->len = 0;
    put_uint(m, F_PS_PID, (uint32_t)pid);
    put_uint(m, F_PS_TID, (uint32_t)tid);
    put_uint(m, F_PS_CALLSTACK_IID, stack_iid);
    put_uint(m, F_PS_CPU_MODE, CPU_MODE_USER);
    if (p->interned.len) put_msg(&p->pkt, F_PKT_INTERNED_DATA, &p->interned);
    put_msg(&p->pkt, F_PKT_PERF_SAMPLE, m);
    rc = finish_packet(p);
    if (rc) {
        forget_state(p);
        return rc;
    }
    p->mapping = 1;
    return 0;
}

/* Writes a TrackDescriptor packet; `inner` (field `inner_field`) is its process, thread or
 * counter descriptor, empty for a plain track. */
static int descriptor_packet(strobe__pft *p, uint64_t uuid, uint64_t parent_uuid, const char *name,
                             int32_t sort_index, unsigned inner_field, int always_inner) {
    int rc = begin_packet(p);
    if (rc) return rc;
    bytes *td = &p->te;
    put_uint(td, F_TD_UUID, uuid);
    if (parent_uuid) put_uint(td, F_TD_PARENT_UUID, parent_uuid);
    if (name && inner_field != F_TD_PROCESS && inner_field != F_TD_THREAD)
        put_str(td, F_TD_NAME, name);
    if (inner_field && (always_inner || p->entry.len)) put_msg(td, inner_field, &p->entry);
    if (sort_index != STROBE__PFT_NO_SORT) put_int(td, F_TD_SIBLING_ORDER_RANK, sort_index);
    put_msg(&p->pkt, F_PKT_TRACK_DESCRIPTOR, td);
    return finish_packet(p);
}

int strobe__pft_process(strobe__pft *p, uint64_t uuid, int32_t pid, const char *name,
                        int32_t sort_index) {
    put_int(&p->entry, F_PD_PID, pid);
    if (name) put_str(&p->entry, F_PD_PROCESS_NAME, name);
    return descriptor_packet(p, uuid, 0, name, sort_index, F_TD_PROCESS, 1);
}

int strobe__pft_thread(strobe__pft *p, uint64_t uuid, int32_t pid, int32_t tid, const char *name,
                       int32_t sort_index) {
    put_int(&p->entry, F_TH_PID, pid);
    put_int(&p->entry, F_TH_TID, tid);
    if (name) put_str(&p->entry, F_TH_THREAD_NAME, name);
    return descriptor_packet(p, uuid, 0, name, sort_index, F_TD_THREAD, 1);
}

int strobe__pft_track(strobe__pft *p, uint64_t uuid, uint64_t parent_uuid, const char *name,
                      int32_t sort_index) {
    return descriptor_packet(p, uuid, parent_uuid, name, sort_index, 0, 0);
}

int strobe__pft_counter_track(strobe__pft *p, uint64_t uuid, uint64_t parent_uuid,
                              const char *name) {
    return descriptor_packet(p, uuid, parent_uuid, name, STROBE__PFT_NO_SORT, F_TD_COUNTER, 1);
}

void strobe__pft_arg_json(strobe__pft_arg *a, const char *json) {
    size_t n = strlen(json);
    a->s = json;
    a->slen = n;
    a->type = STROBE__PFT_JSON;
    if (n >= 2 && json[0] == '"' && json[n - 1] == '"') {
        for (size_t i = 1; i + 1 < n; i++)
            if (json[i] == '\\' || json[i] == '"' || (unsigned char)json[i] < 0x20) return;
        a->type = STROBE__PFT_STRING;
        a->s = json + 1;
        a->slen = n - 2;
        return;
    }
    size_t i = json[0] == '-';
    if (i == n || n - i > 18 || (json[i] == '0' && n - i > 1)) return;
    for (size_t k = i; k < n; k++)
        if (json[k] < '0' || json[k] > '9') return;
    if (i == 1 && n == 2 && json[1] == '0') return; /* "-0" would read back as "0" */
    a->type = STROBE__PFT_INT;
    a->i = strtoll(json, NULL, 10);
}
