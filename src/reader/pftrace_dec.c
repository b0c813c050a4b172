/* pftrace_dec.c: see pftrace_dec.h.
 *
 * Contents:
 *   1. Protobuf primitives over a bounds-checked cursor (every read checks what is left).
 *   2. Decoder state: strings, interned tables, sequences, tracks, events, annotations.
 *   3. Packets: descriptors, interned data, clocks, track events.
 *   4. Output: pairing begins and ends per track, then Kineto JSON.
 *
 * Field numbers are those of Perfetto's public .proto files, as in src/util/pftrace_enc.c. */
#include "pftrace_dec.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/pftrace_enc.h"
#include "json_pull.h"
#include "strobe/error.h"

/* ---- 1. Protobuf primitives -------------------------------------------------------------------
 */

typedef struct dec dec;

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

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

struct dec {
    const uint8_t *start;
    int err;
    char *msg;
    size_t msgsz;
};

static int fail(dec *d, const uint8_t *at, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int fail(dec *d, const uint8_t *at, const char *fmt, ...) {
    if (d->err) return d->err;
    d->err = STROBE_EFORMAT;
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (d->msg && d->msgsz)
        snprintf(d->msg, d->msgsz, "byte %lld: %s", (long long)(at - d->start), why);
    return d->err;
}

static int get_varint(dec *d, cur *c, uint64_t *out) {
    uint64_t v = 0;
    *out = 0;
    const uint8_t *at = c->p;
    for (int shift = 0; shift < 70; shift += 7) {
        if (c->p >= c->end) return fail(d, at, "truncated varint");
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << (shift < 64 ? shift : 63);
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return fail(d, at, "varint longer than 10 bytes");
}

/* Reads the next field of the message in c. @return 1: a field, 0: end of message, <0: error. */
static int next_field(dec *d, cur *c, field *f) {
    /* Every member set before any return, also at the end (gcc's -O3 flow analysis asks). */
    f->num = 0;
    f->wt = 0;
    f->v = 0;
    f->data = NULL;
    f->len = 0;
    f->at = c->p;
    if (c->p >= c->end) return 0;
    uint64_t tag;
    if (get_varint(d, c, &tag)) return d->err;
    f->num = (uint32_t)(tag >> 3);
    f->wt = (int)(tag & 7);
    if ((tag >> 3) == 0 || (tag >> 3) > 536870911u)
        return fail(d, f->at, "invalid field number %" PRIu64, tag >> 3);
    switch (f->wt) {
    case WT_VARINT:
        return get_varint(d, c, &f->v) ? d->err : 1;
    case WT_I64:
    case WT_I32: {
        size_t n = f->wt == WT_I64 ? 8 : 4;
        if ((size_t)(c->end - c->p) < n)
            return fail(d, f->at, "field %u: fixed%zu value cut short", f->num, 8 * n);
        f->v = 0;
        for (size_t i = 0; i < n; i++)
            f->v |= (uint64_t)c->p[i] << (8 * i);
        c->p += n;
        return 1;
    }
    case WT_LEN: {
        uint64_t n;
        if (get_varint(d, c, &n)) return d->err;
        if (n > (uint64_t)(c->end - c->p))
            return fail(d, f->at, "field %u: length %" PRIu64 " past the end (%zu bytes left)",
                        f->num, n, (size_t)(c->end - c->p));
        f->data = c->p;
        f->len = (size_t)n;
        c->p += n;
        return 1;
    }
    default:
        return fail(d, f->at, "field %u: unsupported wire type %d", f->num, f->wt);
    }
}

/* Checks that a known field has the wire type its .proto declares. */
static int want(dec *d, const field *f, int wt) {
    if (f->wt == wt) return 0;
    return fail(d, f->at, "field %u: wire type %d, expected %d", f->num, f->wt, wt);
}

static cur sub(const field *f) {
    return (cur){f->data, f->data + f->len};
}

/* ---- 2. Decoder state ------------------------------------------------------------------------ */

/* A growable byte buffer; `err` is sticky. */
typedef struct buf {
    char *p;
    size_t len, cap;
    int err;
} buf;

static int grow(buf *b, size_t n) {
    if (b->err) return b->err;
    if (b->cap - b->len > n) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len <= n) {
        if (cap > SIZE_MAX / 4) return b->err = STROBE_ENOMEM;
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) return b->err = STROBE_ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

static void put(buf *b, const void *s, size_t n) {
    if (grow(b, n)) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void puts_(buf *b, const char *s) {
    put(b, s, strlen(s));
}

static void printf_(buf *b, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void printf_(buf *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A growable array of fixed-size records. */
typedef struct vec {
    void *p;
    size_t n, cap, size;
} vec;

static void *push(vec *v) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 64;
        if (cap > SIZE_MAX / v->size) return NULL;
        void *p = realloc(v->p, cap * v->size);
        if (!p) return NULL;
        v->p = p;
        v->cap = cap;
    }
    void *e = (char *)v->p + v->n++ * v->size;
    memset(e, 0, v->size);
    return e;
}

#define AT(v, T, i) (((T *)(v).p)[i])

/* A hash map from a (uint64, uint64) key to a uint64 value, open addressing. */
typedef struct map {
    uint64_t *k1, *k2, *val;
    uint8_t *used;
    size_t cap, n;
} map;

static uint64_t mix(uint64_t a, uint64_t b) {
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull + (a << 6) + (a >> 2));
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 29);
}

static int map_put(map *m, uint64_t a, uint64_t b, uint64_t v) {
    if ((m->n + 1) * 2 > m->cap) {
        map g = {0};
        g.cap = m->cap ? 2 * m->cap : 64;
        g.k1 = malloc(g.cap * sizeof *g.k1);
        g.k2 = malloc(g.cap * sizeof *g.k2);
        g.val = malloc(g.cap * sizeof *g.val);
        g.used = calloc(g.cap, 1);
        if (!g.k1 || !g.k2 || !g.val || !g.used) {
            free(g.k1), free(g.k2), free(g.val), free(g.used);
            return STROBE_ENOMEM;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->used[i]) map_put(&g, m->k1[i], m->k2[i], m->val[i]);
        free(m->k1), free(m->k2), free(m->val), free(m->used);
        *m = g;
    }
    size_t i = (size_t)mix(a, b) & (m->cap - 1);
    while (m->used[i] && !(m->k1[i] == a && m->k2[i] == b))
        i = (i + 1) & (m->cap - 1);
    if (!m->used[i]) m->n++;
    m->used[i] = 1;
    m->k1[i] = a;
    m->k2[i] = b;
    m->val[i] = v;
    return 0;
}

static int map_get(const map *m, uint64_t a, uint64_t b, uint64_t *v) {
    if (m->cap == 0) return 0;
    size_t i = (size_t)mix(a, b) & (m->cap - 1);
    while (m->used[i]) {
        if (m->k1[i] == a && m->k2[i] == b) {
            *v = m->val[i];
            return 1;
        }
        i = (i + 1) & (m->cap - 1);
    }
    return 0;
}

static void map_free(map *m) {
    free(m->k1), free(m->k2), free(m->val), free(m->used);
}

enum { TK_PLAIN, TK_PROCESS, TK_THREAD, TK_COUNTER };
enum { EV_BEGIN = 1, EV_END = 2, EV_INSTANT = 3, EV_COUNTER = 4 };
enum { IN_NAME = 1, IN_CAT = 2, IN_ANN = 3, IN_STR = 4 };
#define NO_STR UINT64_MAX

typedef struct track {
    uint64_t uuid, parent;
    int kind, has_parent, has_sort;
    int64_t pid, tid, sort;
    uint64_t name;      /* offset in strs, or NO_STR */
    int64_t opid, otid; /* resolved Kineto pid and tid */
    int resolved;
    int lane; /* another track of its parent's thread: no thread name or sort index of its own */
} track;

typedef struct seq {
    uint32_t id;
    uint32_t gen;       /* bumped when incremental state is cleared: part of interning keys */
    uint64_t inc_clock; /* the sequence's incremental clock id, 0: none */
    uint64_t inc_value; /* its current value */
    int64_t inc_offset; /* BOOTTIME - incremental clock, from the snapshot */
    uint64_t def_clock; /* TracePacketDefaults.timestamp_clock_id, 0: none */
    uint64_t def_track; /* TrackEventDefaults.track_uuid */
    int has_def_track;
} seq;

typedef struct event {
    uint64_t track;
    int64_t ts;
    uint32_t order;
    int type;
    uint64_t name, cat; /* offsets in strs, or NO_STR */
    size_t ann_first, ann_count;
    size_t flow_first, flow_count;
    double value;
    int64_t dur; /* begins, once paired */
    int paired;
    size_t end_ev; /* begins: 1 + the index of the end that closed it (its args follow the
                      begin's), 0: none */
    size_t tix;    /* index of its track in declaration order; past the end: no descriptor */
} event;

typedef struct ann {
    uint64_t key, val; /* offsets in strs: the name and the value as JSON text */
} ann;

typedef struct flow {
    uint64_t id;
    int terminating;
} flow;

typedef struct state {
    dec d;
    buf strs;     /* NUL-terminated strings, by offset */
    map interned; /* (seq << 32 | gen, kind << 60 | iid) -> offset */
    map track_ix; /* (uuid, 0) -> index in tracks */
    map seq_ix;   /* (trusted_packet_sequence_id, 0) -> index in seqs */
    vec tracks, seqs, events, anns, flows;
    uint32_t order;
} state;

static uint64_t add_str(state *s, const void *p, size_t n) {
    uint64_t off = s->strs.len;
    put(&s->strs, p, n);
    put(&s->strs, "", 1);
    return s->strs.err ? NO_STR : off;
}

static const char *str_at(const state *s, uint64_t off) {
    return off == NO_STR || off >= s->strs.len ? "" : s->strs.p + off;
}

/* Appends s[0..n) as a JSON string to b: control characters and quotes escaped, invalid UTF-8 as
 * U+FFFD. */
static void put_json_string(buf *b, const char *str, size_t n) {
    const unsigned char *u = (const unsigned char *)str, *end = u + n;
    put(b, "\"", 1);
    while (u < end) {
        unsigned c = *u;
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x7f) {
            const unsigned char *q = u;
            while (q < end && *q >= 0x20 && *q != '"' && *q != '\\' && *q < 0x7f)
                q++;
            put(b, u, (size_t)(q - u));
            u = q;
            continue;
        }
        if (c >= 0x80) {
            size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                         : c >= 0xe0 && c <= 0xef ? 3
                         : c >= 0xf0 && c <= 0xf4 ? 4
                                                  : 0;
            int ok = len > 0 && (size_t)(end - u) >= len;
            for (size_t i = 1; ok && i < len; i++)
                ok = (u[i] & 0xc0) == 0x80;
            if (ok && len == 3) {
                unsigned cp = ((c & 0x0f) << 12) | ((u[1] & 0x3f) << 6) | (u[2] & 0x3f);
                ok = cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff);
            } else if (ok && len == 4) {
                unsigned cp = ((c & 0x07) << 18) | ((u[1] & 0x3f) << 12);
                ok = cp >= 0x10000 && cp <= 0x10ffff;
            }
            if (ok) {
                put(b, u, len);
                u += len;
            } else {
                puts_(b, "\\ufffd");
                u++;
            }
            continue;
        }
        u++;
        switch (c) {
        case '"':
            puts_(b, "\\\"");
            break;
        case '\\':
            puts_(b, "\\\\");
            break;
        case '\n':
            puts_(b, "\\n");
            break;
        case '\t':
            puts_(b, "\\t");
            break;
        default:
            printf_(b, "\\u%04x", c);
            break;
        }
    }
    put(b, "\"", 1);
}

/* 1 when text[0..n) is exactly one JSON value. */
static int is_json_value(const char *text, size_t n) {
    strobe_jp jp;
    strobe_jp_init_mem(&jp, text, n);
    jp.max_depth = 256;
    int tok, ok = 1;
    do {
        tok = strobe_jp_next(&jp);
        if (tok == STROBE_JP_ERROR) ok = 0;
    } while (ok && tok != STROBE_JP_EOF && !strobe_jp_complete(&jp));
    if (ok && strobe_jp_complete(&jp))
        ok = strobe_jp_next(&jp) == STROBE_JP_EOF;
    else
        ok = 0;
    strobe_jp_free(&jp);
    return ok;
}

/* The sequence `id`, added on first sight; a hash lookup, as every packet asks for one and a
 * trace may hold as many sequences as packets. */
static seq *get_seq(state *s, uint32_t id) {
    uint64_t ix;
    if (map_get(&s->seq_ix, id, 0, &ix)) return &AT(s->seqs, seq, ix);
    seq *q = push(&s->seqs);
    if (!q) return NULL;
    q->id = id;
    if (map_put(&s->seq_ix, id, 0, s->seqs.n - 1)) {
        s->seqs.n--;
        return NULL;
    }
    return q;
}

static track *get_track(state *s, uint64_t uuid, int create) {
    uint64_t ix;
    if (map_get(&s->track_ix, uuid, 0, &ix)) return &AT(s->tracks, track, ix);
    if (!create) return NULL;
    track *t = push(&s->tracks);
    if (!t) return NULL;
    t->uuid = uuid;
    t->name = NO_STR;
    if (map_put(&s->track_ix, uuid, 0, s->tracks.n - 1)) {
        s->tracks.n--;
        return NULL;
    }
    return t;
}

/* ---- 3. Packets ------------------------------------------------------------------------------ */

static int nomem(state *s) {
    s->d.err = STROBE_ENOMEM;
    if (s->d.msg && s->d.msgsz) snprintf(s->d.msg, s->d.msgsz, "out of memory");
    return STROBE_ENOMEM;
}

static int parse_descriptor(state *s, const field *df) {
    cur c = sub(df);
    field f;
    int rc;
    track tmp = {.name = NO_STR};
    int has_uuid = 0;
    while ((rc = next_field(&s->d, &c, &f)) > 0) {
        switch (f.num) {
        case 1: /* uuid */
            if (want(&s->d, &f, WT_VARINT)) return s->d.err;
            tmp.uuid = f.v;
            has_uuid = 1;
            break;
        case 5: /* parent_uuid */
            if (want(&s->d, &f, WT_VARINT)) return s->d.err;
            tmp.parent = f.v;
            tmp.has_parent = 1;
            break;
        case 2:  /* name */
        case 10: /* static_name */
            if (want(&s->d, &f, WT_LEN)) return s->d.err;
            tmp.name = add_str(s, f.data, f.len);
            break;
        case 12: /* sibling_order_rank */
            if (want(&s->d, &f, WT_VARINT)) return s->d.err;
            tmp.sort = (int32_t)f.v;
            tmp.has_sort = 1;
            break;
        case 8: /* counter */
            if (want(&s->d, &f, WT_LEN)) return s->d.err;
            tmp.kind = TK_COUNTER;
            break;
        case 3:   /* process */
        case 4: { /* thread */
            if (want(&s->d, &f, WT_LEN)) return s->d.err;
            tmp.kind = f.num == 3 ? TK_PROCESS : TK_THREAD;
            cur pc = sub(&f);
            field g;
            while ((rc = next_field(&s->d, &pc, &g)) > 0) {
                if (g.num == 1 || (f.num == 4 && g.num == 2)) { /* pid, tid */
                    if (want(&s->d, &g, WT_VARINT)) return s->d.err;
                    if (g.num == 1)
                        tmp.pid = (int32_t)g.v;
                    else
                        tmp.tid = (int32_t)g.v;
                } else if ((f.num == 3 && g.num == 6) || (f.num == 4 && g.num == 5)) {
                    if (want(&s->d, &g, WT_LEN)) return s->d.err;
                    tmp.name = add_str(s, g.data, g.len);
                }
            }
            if (rc < 0) return rc;
            break;
        }
        default:
            break;
        }
    }
    if (rc < 0) return rc;
    if (!has_uuid) return 0; /* nothing can refer to it */
    track *t = get_track(s, tmp.uuid, 1);
    if (!t) return nomem(s);
    *t = tmp;
    return s->strs.err ? nomem(s) : 0;
}

static int parse_interned(state *s, seq *q, const field *idf) {
    cur c = sub(idf);
    field f;
    int rc;
    while ((rc = next_field(&s->d, &c, &f)) > 0) {
        int kind = f.num == 1    ? IN_CAT
                   : f.num == 2  ? IN_NAME
                   : f.num == 3  ? IN_ANN
                   : f.num == 29 ? IN_STR
                                 : 0;
        if (!kind) continue;
        if (want(&s->d, &f, WT_LEN)) return s->d.err;
        cur ec = sub(&f);
        field g;
        uint64_t iid = 0;
        uint64_t name = NO_STR;
        while ((rc = next_field(&s->d, &ec, &g)) > 0) {
            if (g.num == 1) {
                if (want(&s->d, &g, WT_VARINT)) return s->d.err;
                iid = g.v;
            } else if (g.num == 2) {
                if (want(&s->d, &g, WT_LEN)) return s->d.err;
                name = add_str(s, g.data, g.len);
            }
        }
        if (rc < 0) return rc;
        if (name == NO_STR) continue;
        if (map_put(&s->interned, ((uint64_t)q->id << 32) | q->gen, ((uint64_t)kind << 60) | iid,
                    name))
            return nomem(s);
    }
    return rc;
}

static uint64_t lookup(state *s, seq *q, int kind, uint64_t iid) {
    uint64_t off;
    if (map_get(&s->interned, ((uint64_t)q->id << 32) | q->gen, ((uint64_t)kind << 60) | iid, &off))
        return off;
    return NO_STR;
}

static int parse_clock_snapshot(state *s, seq *q, const field *cf) {
    cur c = sub(cf);
    field f;
    int rc;
    int have_boot = 0, have_inc = 0;
    uint64_t boot = 0, inc = 0;
    while ((rc = next_field(&s->d, &c, &f)) > 0) {
        if (f.num != 1) continue;
        if (want(&s->d, &f, WT_LEN)) return s->d.err;
        cur cc = sub(&f);
        field g;
        uint64_t id = 0, ts = 0;
        int is_inc = 0;
        while ((rc = next_field(&s->d, &cc, &g)) > 0) {
            if (g.num >= 1 && g.num <= 3 && want(&s->d, &g, WT_VARINT)) return s->d.err;
            if (g.num == 1) id = g.v;
            if (g.num == 2) ts = g.v;
            if (g.num == 3) is_inc = g.v != 0;
        }
        if (rc < 0) return rc;
        if (is_inc) {
            q->inc_clock = id;
            q->inc_value = ts;
            inc = ts;
            have_inc = 1;
        } else if (id == 6) {
            boot = ts;
            have_boot = 1;
        }
    }
    if (have_inc && have_boot) q->inc_offset = (int64_t)(boot - inc);
    return rc;
}

/* The value of one DebugAnnotation as JSON text, appended to b. */
static int annotation_value(state *s, seq *q, const field *af, buf *b, uint64_t *name) {
    cur c = sub(af);
    field f;
    int rc, have = 0;
    *name = NO_STR;
    while ((rc = next_field(&s->d, &c, &f)) > 0) {
        switch (f.num) {
        case 1: /* name_iid */
            if (want(&s->d, &f, WT_VARINT)) return s->d.err;
            *name = lookup(s, q, IN_ANN, f.v);
            break;
        case 10: /* name */
            if (want(&s->d, &f, WT_LEN)) return s->d.err;
            *name = add_str(s, f.data, f.len);
            break;
        case 2: /* bool */
        case 3: /* uint */
        case 4: /* int */
        case 7: /* pointer */
            if (want(&s->d, &f, WT_VARINT)) return s->d.err;
            b->len = 0;
            if (f.num == 2)
                puts_(b, f.v ? "true" : "false");
            else if (f.num == 3)
                printf_(b, "%" PRIu64, f.v);
            else if (f.num == 4)
                printf_(b, "%" PRId64, (int64_t)f.v);
            else
                printf_(b, "\"0x%" PRIx64 "\"", f.v);
            have = 1;
            break;
        case 5: { /* double */
            if (want(&s->d, &f, WT_I64)) return s->d.err;
            double v;
            memcpy(&v, &f.v, sizeof v);
            b->len = 0;
            if (isfinite(v))
                printf_(b, "%.17g", v);
            else
                puts_(b, "null");
            have = 1;
            break;
        }
        case 6: /* string */
            if (want(&s->d, &f, WT_LEN)) return s->d.err;
            b->len = 0;
            put_json_string(b, (const char *)f.data, f.len);
            have = 1;
            break;
        case 17: { /* string_value_iid */
            if (want(&s->d, &f, WT_VARINT)) return s->d.err;
            const char *v = str_at(s, lookup(s, q, IN_STR, f.v));
            b->len = 0;
            put_json_string(b, v, strlen(v));
            have = 1;
            break;
        }
        case 9: /* legacy_json_value */
            if (want(&s->d, &f, WT_LEN)) return s->d.err;
            b->len = 0;
            /* Pasted only when it is one valid JSON value; else kept as a string. */
            if (is_json_value((const char *)f.data, f.len))
                put(b, f.data, f.len);
            else
                put_json_string(b, (const char *)f.data, f.len);
            have = 1;
            break;
        default:
            break;
        }
    }
    if (rc < 0) return rc;
    if (!have) {
        b->len = 0;
        puts_(b, "null"); /* nested values (dicts, arrays) are not converted */
    }
    return b->err ? nomem(s) : 0;
}

static int add_flow(state *s, event *e, uint64_t id, int terminating) {
    flow *fl = push(&s->flows);
    if (!fl) return nomem(s);
    if (e->flow_count == 0) e->flow_first = s->flows.n - 1;
    e->flow_count++;
    fl->id = id;
    fl->terminating = terminating;
    return 0;
}

/* flow_ids and terminating_flow_ids: fixed64 (fields 47, 48), also packed; the older uint64
 * fields 36 and 42. */
static int parse_flow_field(state *s, event *e, const field *f) {
    int terminating = f->num == 48 || f->num == 42;
    int fixed = f->num == 47 || f->num == 48;
    if (f->wt == WT_LEN) {
        cur c = sub(f);
        while (c.p < c.end) {
            uint64_t v = 0;
            if (fixed) {
                if (c.end - c.p < 8) return fail(&s->d, c.p, "packed fixed64 cut short");
                for (int i = 0; i < 8; i++)
                    v |= (uint64_t)c.p[i] << (8 * i);
                c.p += 8;
            } else if (get_varint(&s->d, &c, &v)) {
                return s->d.err;
            }
            if (add_flow(s, e, v, terminating)) return s->d.err;
        }
        return 0;
    }
    if (want(&s->d, f, fixed ? WT_I64 : WT_VARINT)) return s->d.err;
    return add_flow(s, e, f->v, terminating);
}

static int parse_track_event(state *s, seq *q, const field *tf, int64_t ts) {
    event *e = push(&s->events);
    if (!e) return nomem(s);
    size_t ei = s->events.n - 1;
    e->name = e->cat = NO_STR;
    e->ts = ts;
    e->order = s->order++;
    e->type = EV_INSTANT; /* TYPE_UNSPECIFIED: legacy events; shown as instants */
    e->track = q->has_def_track ? q->def_track : 0;
    buf vb = {0};
    cur c = sub(tf);
    field f;
    int rc;
    while ((rc = next_field(&s->d, &c, &f)) > 0) {
        e = &AT(s->events, event, ei); /* push() below may move the array */
        switch (f.num) {
        case 9: /* type */
            if (want(&s->d, &f, WT_VARINT)) goto out;
            if (f.v >= 1 && f.v <= 4) e->type = (int)f.v;
            break;
        case 11: /* track_uuid */
            if (want(&s->d, &f, WT_VARINT)) goto out;
            e->track = f.v;
            break;
        case 10: /* name_iid */
            if (want(&s->d, &f, WT_VARINT)) goto out;
            e->name = lookup(s, q, IN_NAME, f.v);
            break;
        case 23: /* name */
            if (want(&s->d, &f, WT_LEN)) goto out;
            e->name = add_str(s, f.data, f.len);
            break;
        case 3: /* category_iids, maybe packed */
            if (f.wt == WT_LEN) {
                cur pc = sub(&f);
                uint64_t v;
                if (pc.p < pc.end && get_varint(&s->d, &pc, &v) == 0)
                    e->cat = lookup(s, q, IN_CAT, v);
                if (s->d.err) goto out;
            } else {
                if (want(&s->d, &f, WT_VARINT)) goto out;
                if (e->cat == NO_STR) e->cat = lookup(s, q, IN_CAT, f.v);
            }
            break;
        case 22: /* categories */
            if (want(&s->d, &f, WT_LEN)) goto out;
            if (e->cat == NO_STR) e->cat = add_str(s, f.data, f.len);
            break;
        case 30: /* counter_value */
            if (want(&s->d, &f, WT_VARINT)) goto out;
            e->value = (double)(int64_t)f.v;
            break;
        case 44: /* double_counter_value */
            if (want(&s->d, &f, WT_I64)) goto out;
            memcpy(&e->value, &f.v, sizeof e->value);
            break;
        case 4: { /* debug_annotations */
            if (want(&s->d, &f, WT_LEN)) goto out;
            uint64_t name;
            if (annotation_value(s, q, &f, &vb, &name)) goto out;
            ann *a = push(&s->anns);
            if (!a) {
                nomem(s);
                goto out;
            }
            e = &AT(s->events, event, ei);
            if (e->ann_count == 0) e->ann_first = s->anns.n - 1;
            e->ann_count++;
            a->key = name;
            a->val = add_str(s, vb.p ? vb.p : "null", vb.p ? vb.len : 4);
            break;
        }
        case 36:
        case 42:
        case 47:
        case 48:
            if (parse_flow_field(s, e, &f)) goto out;
            break;
        default:
            break;
        }
    }
out:
    free(vb.p);
    if (rc < 0 || s->d.err) return s->d.err ? s->d.err : rc;
    return s->strs.err ? nomem(s) : 0;
}

static int parse_defaults(state *s, seq *q, const field *df) {
    cur c = sub(df);
    field f;
    int rc;
    while ((rc = next_field(&s->d, &c, &f)) > 0) {
        if (f.num == 58) {
            if (want(&s->d, &f, WT_VARINT)) return s->d.err;
            q->def_clock = f.v;
        } else if (f.num == 11) {
            if (want(&s->d, &f, WT_LEN)) return s->d.err;
            cur tc = sub(&f);
            field g;
            while ((rc = next_field(&s->d, &tc, &g)) > 0) {
                if (g.num != 11) continue;
                if (want(&s->d, &g, WT_VARINT)) return s->d.err;
                q->def_track = g.v;
                q->has_def_track = 1;
            }
            if (rc < 0) return rc;
        }
    }
    return rc;
}

static int parse_packet(state *s, const field *pf) {
    /* First pass: the fields the others depend on (sequence, flags, defaults, clock, interned
     * data), wherever they are in the packet. */
    cur c = sub(pf);
    field f;
    int rc;
    uint32_t seq_id = 0;
    uint64_t flags = 0, ts = 0, clock = 0;
    int has_ts = 0, has_clock = 0, cleared = 0;
    while ((rc = next_field(&s->d, &c, &f)) > 0) {
        int wt = -1;
        switch (f.num) {
        case 10: /* trusted_packet_sequence_id */
            wt = WT_VARINT;
            seq_id = (uint32_t)f.v;
            break;
        case 13: /* sequence_flags */
            wt = WT_VARINT;
            flags = f.v;
            break;
        case 41: /* incremental_state_cleared */
            wt = WT_VARINT;
            cleared = f.v != 0;
            break;
        case 8: /* timestamp */
            wt = WT_VARINT;
            ts = f.v;
            has_ts = 1;
            break;
        case 58: /* timestamp_clock_id */
            wt = WT_VARINT;
            clock = f.v;
            has_clock = 1;
            break;
        case 6:
        case 11:
        case 12:
        case 59:
        case 60:
            wt = WT_LEN;
            break;
        default:
            break;
        }
        if (wt >= 0 && want(&s->d, &f, wt)) return s->d.err;
    }
    if (rc < 0) return rc;
    seq *q = get_seq(s, seq_id);
    if (!q) return nomem(s);
    if ((flags & 1) || cleared) {
        q->gen++;
        q->inc_value = 0;
    }
    c = sub(pf);
    while ((rc = next_field(&s->d, &c, &f)) > 0) {
        if (f.num == 59 && parse_defaults(s, q, &f)) return s->d.err;
        if (f.num == 6 && parse_clock_snapshot(s, q, &f)) return s->d.err;
        if (f.num == 12 && parse_interned(s, q, &f)) return s->d.err;
        if (f.num == 60 && parse_descriptor(s, &f)) return s->d.err;
    }
    if (rc < 0) return rc;

    int64_t when = 0;
    if (has_ts) {
        uint64_t id = has_clock ? clock : q->def_clock;
        if (q->inc_clock && id == q->inc_clock) {
            q->inc_value += ts;
            when = (int64_t)(q->inc_value + (uint64_t)q->inc_offset);
        } else {
            when = (int64_t)ts;
        }
    }
    c = sub(pf);
    while ((rc = next_field(&s->d, &c, &f)) > 0)
        if (f.num == 11 && parse_track_event(s, q, &f, when)) return s->d.err;
    return rc;
}

/* ---- 4. Output ------------------------------------------------------------------------------- */

/* Times: strobe writes ns relative to the JSON's baseTimeNanoseconds (which it records on the
 * session slice), so they are written out as they are: "ts" in the JSON is relative to the same
 * base. A trace from elsewhere has no base, and its absolute times stay absolute. */

/* Kineto's (pid, tid) of a track: from its descriptor, its uuid (strobe's device tracks), its
 * parent, or made up (large numbers that no OS id reaches). */
static void resolve(state *s, track *t, int depth) {
    if (t->resolved) return;
    t->resolved = 1;
    uint64_t u = t->uuid;
    if (t->kind == TK_THREAD) {
        t->opid = t->pid, t->otid = t->tid;
    } else if (t->kind == TK_PROCESS) {
        t->opid = t->pid, t->otid = 0;
    } else if (t->kind == TK_PLAIN && (u >> 56) == STROBE__PFT_KINETO_MARK) {
        t->opid = (int64_t)((u >> 32) & 0xFFFFFF), t->otid = (int64_t)(int32_t)(uint32_t)u;
    } else if (t->kind == TK_PLAIN && (u >> 56) == STROBE__PFT_KINETO_PROC_MARK) {
        t->opid = (int64_t)(u & 0xFFFFFF), t->otid = 0;
    } else {
        track *p = t->has_parent && depth < 64 ? get_track(s, t->parent, 0) : NULL;
        if (p) resolve(s, p, depth + 1);
        size_t ix = (size_t)(t - &AT(s->tracks, track, 0));
        /* A plain track under a thread's track, or under a Kineto (pid, tid) track, is another
         * track of that thread (strobe convert puts slices that overlap without nesting there,
         * and Perfetto shows such a track as the thread's). */
        t->lane = p && t->kind == TK_PLAIN &&
                  (p->kind == TK_THREAD ||
                   (p->kind == TK_PLAIN && (p->uuid >> 56) == STROBE__PFT_KINETO_MARK));
        t->opid = p ? p->opid : 2000000000 + (int64_t)ix;
        t->otid = (t->kind == TK_COUNTER || t->lane) && p ? p->otid : 1000000000 + (int64_t)ix;
    }
}

static void put_ts(buf *b, int64_t ns, int64_t base) {
    uint64_t mag;
    if (ns >= base) {
        mag = (uint64_t)ns - (uint64_t)base;
    } else {
        mag = (uint64_t)base - (uint64_t)ns;
        put(b, "-", 1);
    }
    printf_(b, "%" PRIu64 ".%03u", mag / 1000, (unsigned)(mag % 1000));
}

static int cmp_events(const void *a, const void *b, void *arg) {
    const state *s = arg;
    const event *x = &AT(s->events, event, *(const size_t *)a);
    const event *y = &AT(s->events, event, *(const size_t *)b);
    if (x->tix != y->tix) return x->tix < y->tix ? -1 : 1;
    if (x->track != y->track) return x->track < y->track ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* to - from, 0 when negative, held at INT64_MAX: times are unchecked 64-bit values. */
static int64_t span(int64_t from, int64_t to) {
    int64_t d;
    if (to <= from) return 0;
    return __builtin_sub_overflow(to, from, &d) ? INT64_MAX : d;
}

/* Pairs begins and ends per track (ends close the innermost open slice). */
static int pair_slices(state *s, int64_t last_ts) {
    size_t n = s->events.n;
    size_t *ix = malloc((n ? n : 1) * sizeof *ix);
    size_t *stack = malloc((n ? n : 1) * sizeof *stack);
    if (!ix || !stack) {
        free(ix);
        free(stack);
        return nomem(s);
    }
    for (size_t i = 0; i < n; i++) {
        event *e = &AT(s->events, event, i);
        uint64_t t;
        e->tix = map_get(&s->track_ix, e->track, 0, &t) ? (size_t)t : s->tracks.n;
        ix[i] = i;
    }
    qsort_r(ix, n, sizeof *ix, cmp_events, s);
    size_t depth = 0;
    for (size_t k = 0; k < n; k++) {
        event *e = &AT(s->events, event, ix[k]);
        if (k > 0 && AT(s->events, event, ix[k - 1]).track != e->track) {
            while (depth > 0) { /* left open: closed at the trace's last time */
                event *b = &AT(s->events, event, stack[--depth]);
                b->dur = span(b->ts, last_ts);
            }
        }
        if (e->type == EV_BEGIN) {
            e->paired = 1;
            e->dur = 0;
            stack[depth++] = ix[k];
        } else if (e->type == EV_END && depth > 0) {
            event *b = &AT(s->events, event, stack[--depth]);
            b->dur = span(b->ts, e->ts);
            b->end_ev = ix[k] + 1;
        }
    }
    while (depth > 0) {
        event *b = &AT(s->events, event, stack[--depth]);
        b->dur = span(b->ts, last_ts);
    }
    free(ix);
    free(stack);
    return 0;
}

static int is_session(const state *s, const event *e) {
    return e->type == EV_BEGIN && strcmp(str_at(s, e->name), "strobe session") == 0 &&
           strcmp(str_at(s, e->cat), "Trace") == 0;
}

static void meta_event(buf *b, int *first, const char *name, int64_t pid, int64_t tid,
                       const char *arg, const char *str, int64_t num) {
    puts_(b, *first ? "  " : ",\n  ");
    *first = 0;
    printf_(b,
            "{\"name\": \"%s\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": %" PRId64
            ", \"tid\": %" PRId64 ", \"args\": {\"%s\": ",
            name, pid, tid, arg);
    if (str)
        put_json_string(b, str, strlen(str));
    else
        printf_(b, "%" PRId64, num);
    puts_(b, "}}");
}

/* The args of an event: its annotations, then (a slice) those of the end that closed it. */
static void write_args(const state *s, buf *b, const event *e, int skip_all) {
    puts_(b, ", \"args\": {");
    const event *end = e->end_ev ? &AT(s->events, event, e->end_ev - 1) : NULL;
    size_t written = 0;
    for (int part = 0; part < 2 && !skip_all; part++) {
        const event *src = part == 0 ? e : end;
        for (size_t i = 0; src && i < src->ann_count; i++) {
            const ann *a = &AT(s->anns, ann, src->ann_first + i);
            if (written++) puts_(b, ", ");
            const char *k = str_at(s, a->key);
            put_json_string(b, k, strlen(k));
            puts_(b, ": ");
            puts_(b, str_at(s, a->val));
        }
    }
    puts_(b, "}}");
}

/* Kineto's JSON has one "s" per launch and an "f" per device event, all with the correlation id;
 * in protobuf a terminating flow id closes its flow, so a slice that starts several flows (a CUDA
 * graph's launch) lists one id per device event (strobe's writer: the correlation id first). Such
 * a slice is written with one "s", with its first id, and every flow it starts maps to that id:
 * its ends become "f" with the same id, which JSON viewers draw as one arrow each. Flows started
 * alone keep their id. */
static int fan_out_ids(state *s, map *rep) {
    for (size_t i = 0; i < s->events.n; i++) {
        const event *e = &AT(s->events, event, i);
        uint64_t first = 0;
        size_t outgoing = 0;
        for (size_t f = 0; f < e->flow_count; f++) {
            const flow *fl = &AT(s->flows, flow, e->flow_first + f);
            if (fl->terminating) continue;
            if (outgoing++ == 0) first = fl->id;
        }
        if (outgoing < 2) continue;
        for (size_t f = 0; f < e->flow_count; f++) {
            const flow *fl = &AT(s->flows, flow, e->flow_first + f);
            if (!fl->terminating && fl->id != first && map_put(rep, fl->id, 0, first))
                return nomem(s);
        }
    }
    return 0;
}

static int write_json(state *s, buf *b) {
    /* The metadata: the annotations of strobe's session slice. */
    const event *session = NULL;
    for (size_t i = 0; i < s->events.n && !session; i++)
        if (is_session(s, &AT(s->events, event, i))) session = &AT(s->events, event, i);
    int64_t base = 0;
    int has_base = 0;
    const char *devprops = "[]", *trace_name = NULL;
    if (session) {
        for (size_t i = 0; i < session->ann_count; i++) {
            const ann *a = &AT(s->anns, ann, session->ann_first + i);
            const char *k = str_at(s, a->key), *v = str_at(s, a->val);
            if (strcmp(k, "baseTimeNanoseconds") == 0) {
                char *end;
                long long x = strtoll(v, &end, 10);
                if (*end == '\0' && end != v) base = x, has_base = 1;
            } else if (strcmp(k, "deviceProperties") == 0) {
                devprops = v;
            } else if (strcmp(k, "traceName") == 0) {
                trace_name = v;
            }
        }
    }
    printf_(b, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": ");
    puts_(b, devprops);
    for (size_t i = 0; session && i < session->ann_count; i++) {
        const ann *a = &AT(s->anns, ann, session->ann_first + i);
        const char *k = str_at(s, a->key);
        if (strcmp(k, "baseTimeNanoseconds") == 0 || strcmp(k, "deviceProperties") == 0 ||
            strcmp(k, "traceName") == 0 || strcmp(k, "schemaVersion") == 0 ||
            strcmp(k, "displayTimeUnit") == 0 || strcmp(k, "traceEvents") == 0)
            continue;
        puts_(b, ",\n  ");
        put_json_string(b, k, strlen(k));
        puts_(b, ": ");
        puts_(b, str_at(s, a->val));
    }
    puts_(b, ",\n  \"displayTimeUnit\": \"ms\"");
    if (has_base) printf_(b, ",\n  \"baseTimeNanoseconds\": %" PRId64, base);
    puts_(b, ",\n  \"traceEvents\": [\n");

    int first = 1;
    for (size_t i = 0; i < s->tracks.n; i++) {
        track *t = &AT(s->tracks, track, i);
        resolve(s, t, 0);
        if (t->kind == TK_COUNTER || t->lane) continue;
        const char *name = t->name == NO_STR ? NULL : str_at(s, t->name);
        int is_proc = t->kind == TK_PROCESS ||
                      (t->kind == TK_PLAIN && (t->uuid >> 56) == STROBE__PFT_KINETO_PROC_MARK);
        if (is_proc) {
            if (name) meta_event(b, &first, "process_name", t->opid, 0, "name", name, 0);
            if (t->has_sort)
                meta_event(b, &first, "process_sort_index", t->opid, 0, "sort_index", NULL,
                           t->sort);
        } else {
            if (name) meta_event(b, &first, "thread_name", t->opid, t->otid, "name", name, 0);
            if (t->has_sort)
                meta_event(b, &first, "thread_sort_index", t->opid, t->otid, "sort_index", NULL,
                           t->sort);
        }
    }

    /* Events by track (in the order the tracks were declared), then by time. */
    size_t n = s->events.n;
    size_t *ix = malloc((n ? n : 1) * sizeof *ix);
    if (!ix) return nomem(s);
    map rep = {0};
    if (fan_out_ids(s, &rep)) {
        free(ix);
        map_free(&rep);
        return s->d.err;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        ix[k++] = i;
    qsort_r(ix, n, sizeof *ix, cmp_events, s);
    /* By track in declaration order (tix, set by pair_slices), as the writer wrote them. */
    for (size_t i = 0; i < n; i++) {
        const event *e = &AT(s->events, event, ix[i]);
        if (e->type == EV_END) continue;
        track *t = get_track(s, e->track, 0);
        int64_t pid = t ? t->opid : 0, tid = t ? t->otid : 0;
        const char *name = str_at(s, e->name);
        const char *cat = e->cat == NO_STR ? "" : str_at(s, e->cat);
        puts_(b, first ? "  " : ",\n  ");
        first = 0;
        if (e->type == EV_COUNTER) {
            name = t && t->name != NO_STR ? str_at(s, t->name) : "counter";
            puts_(b, "{\"ph\": \"C\", \"cat\": \"counter\", \"name\": ");
        } else if (e->type == EV_BEGIN) {
            puts_(b, "{\"ph\": \"X\", \"cat\": ");
            put_json_string(b, cat, strlen(cat));
            puts_(b, ", \"name\": ");
        } else {
            puts_(b, "{\"ph\": \"i\", \"s\": \"t\", \"cat\": ");
            put_json_string(b, cat, strlen(cat));
            puts_(b, ", \"name\": ");
        }
        put_json_string(b, name, strlen(name));
        printf_(b, ", \"pid\": %" PRId64 ", \"tid\": %" PRId64 ", \"ts\": ", pid, tid);
        put_ts(b, e->ts, 0);
        if (e->type == EV_COUNTER) {
            puts_(b, ", \"args\": {");
            put_json_string(b, name, strlen(name));
            if (isfinite(e->value))
                printf_(b, ": %.17g}}", e->value);
            else
                puts_(b, ": 0}}");
            continue;
        }
        if (e->type == EV_BEGIN) {
            puts_(b, ", \"dur\": ");
            put_ts(b, e->dur, 0);
        }
        write_args(s, b, e, e == session);
        int started = 0;
        for (size_t f = 0; f < e->flow_count; f++) {
            const flow *fl = &AT(s->flows, flow, e->flow_first + f);
            uint64_t id = fl->id;
            if (!fl->terminating && started++) continue; /* the slice's first "s" stands for all */
            if (fl->terminating) map_get(&rep, id, 0, &id);
            printf_(b,
                    ",\n  {\"ph\": \"%s\", \"id\": %" PRIu64 ", \"pid\": %" PRId64
                    ", \"tid\": %" PRId64 ", \"ts\": ",
                    fl->terminating ? "f" : "s", id, pid, tid);
            put_ts(b, e->ts, 0);
            puts_(b, ", \"cat\": \"ac2g\", \"name\": \"ac2g\"");
            if (fl->terminating) puts_(b, ", \"bp\": \"e\"");
            puts_(b, "}");
        }
    }
    free(ix);
    map_free(&rep);
    puts_(b, "\n  ]");
    if (trace_name) {
        puts_(b, ",\n  \"traceName\": ");
        puts_(b, trace_name);
    }
    puts_(b, "\n}\n");
    return b->err ? nomem(s) : 0;
}

/* Whether p[0..end) reads as the fields of one protobuf message: known wire types, field numbers
 * above 0, lengths inside. `cut`: the message continues past end (what is there must be valid). */
static int plausible_fields(const uint8_t *p, const uint8_t *end, int cut) {
    while (p < end) {
        uint64_t v[2] = {0, 0};
        for (int k = 0; k < 2; k++) { /* the tag, then a varint value or a length */
            int shift = 0;
            for (;;) {
                if (p >= end) return cut;
                uint8_t b = *p++;
                if (shift < 64) v[k] |= (uint64_t)(b & 0x7f) << shift;
                shift += 7;
                if (!(b & 0x80)) break;
                if (shift >= 70) return 0;
            }
            if (k == 0) {
                int wt = (int)(v[0] & 7);
                if ((v[0] >> 3) == 0) return 0;
                if (wt == WT_I64 || wt == WT_I32) {
                    size_t n = wt == WT_I64 ? 8 : 4;
                    if ((size_t)(end - p) < n) return cut;
                    p += n;
                    break;
                }
                if (wt != WT_VARINT && wt != WT_LEN) return 0;
            } else if ((v[0] & 7) == WT_LEN) {
                if (v[1] > (uint64_t)(end - p)) return cut;
                p += v[1];
            }
        }
    }
    return 1;
}

int strobe_rd_pf_sniff(const void *data, size_t len, int complete) {
    /* A Perfetto trace starts with a packet's tag, 0x0a, which is also a newline: JSON text that
     * starts with blank lines has '{' or '[' as its first other byte. That alone is ambiguous
     * (a first packet of 91 or 123 bytes has '[' or '{' as its length; a packet of 9, 10, 13 or
     * 32 bytes a blank), so then the packets in view are checked: each a Trace.packet field
     * whose payload reads as protobuf fields. JSON text fails that at once: ',', '{' and '['
     * read as the wire types 4 and 3, which no trace uses. */
    const uint8_t *p = data, *end = p + len;
    if (len == 0 || p[0] != 0x0a) return 0;
    size_t i = 0;
    while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    if (i == len) return 0;
    if (p[i] != '{' && p[i] != '[') return 1;
    for (int packets = 0; p < end && packets < 16; packets++) {
        if (*p++ != 0x0a) return 0;
        uint64_t n = 0;
        int shift = 0;
        for (;;) {
            if (p >= end) return packets > 0 || !complete;
            uint8_t b = *p++;
            if (shift < 64) n |= (uint64_t)(b & 0x7f) << shift;
            shift += 7;
            if (!(b & 0x80)) break;
            if (shift >= 70) return 0;
        }
        /* A packet past the end: the head ends inside it, or the input is cut there, which
         * counts after whole packets. */
        if (n > (uint64_t)(end - p))
            return (packets > 0 || !complete) && plausible_fields(p, end, 1);
        if (!plausible_fields(p, p + n, 0)) return 0;
        p += n;
    }
    return 1;
}

/* The length of the whole Trace fields at the start of data[0..len): the input up to where a
 * field's tag, length or payload is cut short by its end. */
static size_t whole_prefix(const uint8_t *p, size_t len) {
    size_t at = 0;
    while (at < len) {
        size_t i = at;
        uint64_t v[2] = {0, 0};
        int nv = 1;
        for (int k = 0; k < nv; k++) {
            int shift = 0;
            for (;;) {
                if (i >= len) return at;
                uint8_t b = p[i++];
                if (shift < 64) v[k] |= (uint64_t)(b & 0x7f) << shift;
                shift += 7;
                if (!(b & 0x80)) break;
                if (shift >= 70) return len; /* malformed, not cut: the decoder says so */
            }
            if (k == 0) {
                int wt = (int)(v[0] & 7);
                if (wt == WT_VARINT || wt == WT_LEN)
                    nv = 2;
                else if (wt == WT_I64 || wt == WT_I32) {
                    size_t n = wt == WT_I64 ? 8 : 4;
                    if (len - i < n) return at;
                    i += n;
                } else {
                    return len;
                }
            }
        }
        if ((v[0] & 7) == WT_LEN) {
            if (v[1] > len - i) return at;
            i += (size_t)v[1];
        }
        at = i;
    }
    return at;
}

int strobe_rd_pf_to_json(const void *data, size_t len, char **json, size_t *json_len, char *err,
                         size_t errsz, int64_t *cut) {
    *json = NULL;
    *json_len = 0;
    if (cut) {
        /* A trace cut inside a packet (the writer died, the copy stopped) is read up to its last
         * whole packet, as Perfetto's trace processor does; the caller reports the cut. */
        size_t whole = whole_prefix(data, len);
        *cut = -1;
        if (whole > 0 && whole < len) { /* cut inside the first packet: an error, said below */
            *cut = (int64_t)whole;
            len = whole;
        }
    }
    if (err && errsz) err[0] = '\0';
    state s = {0};
    s.d.start = data;
    s.d.msg = err;
    s.d.msgsz = errsz;
    s.tracks.size = sizeof(track);
    s.seqs.size = sizeof(seq);
    s.events.size = sizeof(event);
    s.anns.size = sizeof(ann);
    s.flows.size = sizeof(flow);
    cur c = {data, (const uint8_t *)data + len};
    field f;
    int rc;
    int64_t last_ts = 0;
    while ((rc = next_field(&s.d, &c, &f)) > 0) {
        if (f.num != 1) continue; /* Trace has only packets; anything else is skipped */
        if (want(&s.d, &f, WT_LEN)) break;
        if (parse_packet(&s, &f)) break;
    }
    if (rc < 0 || s.d.err) rc = s.d.err ? s.d.err : rc;
    for (size_t i = 0; rc == 0 && i < s.events.n; i++)
        if (AT(s.events, event, i).ts > last_ts) last_ts = AT(s.events, event, i).ts;
    if (rc == 0 && s.events.n == 0 && s.tracks.n == 0)
        rc = fail(&s.d, s.d.start, "no trace packets with track events or descriptors");
    if (rc == 0) rc = pair_slices(&s, last_ts);
    buf out = {0};
    if (rc == 0) rc = write_json(&s, &out);
    free(s.strs.p);
    map_free(&s.interned);
    map_free(&s.track_ix);
    map_free(&s.seq_ix);
    free(s.tracks.p);
    free(s.seqs.p);
    free(s.events.p);
    free(s.anns.p);
    free(s.flows.p);
    if (rc) {
        free(out.p);
        return rc;
    }
    *json = out.p;
    *json_len = out.len;
    return 0;
}
