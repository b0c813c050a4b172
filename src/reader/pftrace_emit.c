/* pftrace_emit.c: the Perfetto decoder's state and what packets become (see pftrace_int.h).
 *
 * Contents:
 *   1. State: sequences (interned strings, clocks, defaults), tracks (descriptor, resolved Kineto
 *      ids, open slices), the queue of elements.
 *   2. Output: the JSON text of the header, of metadata and of events, with each element's
 *      fields recorded for direct mode.
 *   3. Packets: descriptors, interned data, clocks, track events. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_pull.h"
#include "pftrace_int.h"
#include "reader_util.h"

/* ---- 1. State ------------------------------------------------------------------------------- */

/* Starts the record of an element of traceEvents whose text starts at `start` in the buffer it
 * is written to; the caller fills in the rest as it writes the text. In direct mode the record
 * is queued for the reader; else it is a scratch one. @return it, or NULL when out of memory. */
static strobe_rd_pf_elem *push_elem(strobe_rd_pfs *s, uint64_t index, size_t start, char ph) {
    strobe_rd_pf_elem *e = &s->scratch;
    if (s->direct) {
        if (s->ring_len == s->ring_cap) {
            size_t cap = s->ring_cap ? 2 * s->ring_cap : 256;
            strobe_rd_pf_elem *r = malloc(cap * sizeof *r);
            if (!r) {
                strobe__pf_nomem(s);
                return NULL;
            }
            for (size_t i = 0; i < s->ring_len; i++)
                r[i] = s->ring[(s->ring_head + i) & (s->ring_cap - 1)];
            free(s->ring);
            s->ring = r;
            s->ring_cap = cap;
            s->ring_head = 0;
        }
        e = &s->ring[(s->ring_head + s->ring_len++) & (s->ring_cap - 1)];
    }
    memset(e, 0, sizeof *e);
    e->index = index;
    e->offset = (int64_t)start;
    e->ph = ph;
    e->plain = 1;
    e->depth = 1;
    e->cat_len = e->args_len = SIZE_MAX;
    return e;
}

static seq *get_seq(strobe_rd_pfs *s, uint32_t id) {
    uint64_t ix;
    if (strobe__pf_map_get(&s->seq_ix, id, 0, &ix)) return &s->seqs[ix];
    if (s->nseqs == s->capseqs) {
        size_t cap = s->capseqs ? 2 * s->capseqs : 16;
        seq *p = realloc(s->seqs, cap * sizeof *p);
        if (!p) return NULL;
        s->seqs = p;
        s->capseqs = cap;
    }
    if (strobe__pf_map_put(&s->seq_ix, id, 0, s->nseqs)) return NULL;
    seq *q = &s->seqs[s->nseqs++];
    memset(q, 0, sizeof *q);
    q->id = id;
    return q;
}

/* The track with this uuid; created (undeclared) when `create`. */
static track *get_track(strobe_rd_pfs *s, uint64_t uuid, int create) {
    uint64_t ix;
    if (strobe__pf_map_get(&s->track_ix, uuid, 0, &ix)) return &s->tracks[ix];
    if (!create) return NULL;
    if (s->ntracks == s->captracks) {
        size_t cap = s->captracks ? 2 * s->captracks : 16;
        track *p = realloc(s->tracks, cap * sizeof *p);
        if (!p) return NULL;
        s->tracks = p;
        s->captracks = cap;
    }
    if (strobe__pf_map_put(&s->track_ix, uuid, 0, s->ntracks)) return NULL;
    track *t = &s->tracks[s->ntracks++];
    memset(t, 0, sizeof *t);
    t->uuid = uuid;
    return t;
}

/* Kineto's (pid, tid) of a track: from its descriptor, its uuid (strobe's device tracks), its
 * parent, or made up (large numbers that no OS id reaches). A track that only events named has
 * 0 and 0. */
static void resolve(strobe_rd_pfs *s, track *t, int depth) {
    if (t->resolved) return;
    t->resolved = 1;
    uint64_t u = t->uuid;
    if (!t->declared) {
        t->opid = t->otid = 0;
    } else if (t->kind == TK_THREAD) {
        t->opid = t->pid, t->otid = t->tid;
    } else if (t->kind == TK_PROCESS) {
        t->opid = t->pid, t->otid = 0;
    } else if (t->kind == TK_PLAIN && (u >> 56) == PFW_KINETO_MARK) {
        t->opid = (int64_t)((u >> 32) & 0xFFFFFF), t->otid = (int64_t)(int32_t)(uint32_t)u;
    } else if (t->kind == TK_PLAIN && (u >> 56) == PFW_KINETO_PROC_MARK) {
        t->opid = (int64_t)(u & 0xFFFFFF), t->otid = 0;
    } else {
        track *p = t->has_parent && depth < 64 ? get_track(s, t->parent, 0) : NULL;
        if (p && !p->declared) p = NULL;
        if (p) resolve(s, p, depth + 1);
        /* A plain track under a thread's track, or under a Kineto (pid, tid) track, is another
         * track of that thread: strobe convert puts slices that overlap without nesting there,
         * and Perfetto shows such a track as the thread's. */
        t->lane =
            p && t->kind == TK_PLAIN &&
            (p->kind == TK_THREAD || (p->kind == TK_PLAIN && (p->uuid >> 56) == PFW_KINETO_MARK));
        t->opid = p ? p->opid : 2000000000 + (int64_t)t->decl_ix;
        t->otid =
            (t->kind == TK_COUNTER || t->lane) && p ? p->otid : 1000000000 + (int64_t)t->decl_ix;
    }
}

/* ---- 2. Output ------------------------------------------------------------------------------- */

/* Times: strobe writes ns relative to the JSON's baseTimeNanoseconds (which it records on the
 * session slice), so they are written out as they are: "ts" in the JSON is relative to the same
 * base. A trace from elsewhere has no base, and its absolute times stay absolute. */

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
            strobe__pf_printf(b, "\\u%04x", c);
            break;
        }
    }
    put(b, "\"", 1);
}

static void put_cstr(buf *b, const char *s) {
    put_json_string(b, s ? s : "", s ? strlen(s) : 0);
}

/* The nesting depth of text[0..n) (0: a scalar) when it is exactly one JSON value, else -1. */
static int json_value_depth(const char *text, size_t n) {
    strobe_jp jp;
    strobe_jp_init_mem(&jp, text, n);
    jp.max_depth = 256;
    int tok, ok = 1;
    unsigned depth = 0;
    do {
        tok = strobe_jp_next(&jp);
        if (tok == STROBE_JP_ERROR) ok = 0;
        if (strobe_jp_depth(&jp) > depth) depth = strobe_jp_depth(&jp);
    } while (ok && tok != STROBE_JP_EOF && !strobe_jp_complete(&jp));
    if (ok && strobe_jp_complete(&jp))
        ok = strobe_jp_next(&jp) == STROBE_JP_EOF;
    else
        ok = 0;
    strobe_jp_free(&jp);
    return ok ? (int)depth : -1;
}

static void put_ts(buf *b, int64_t ns) {
    uint64_t mag;
    if (ns >= 0) {
        mag = (uint64_t)ns;
    } else {
        mag = 0 - (uint64_t)ns;
        put(b, "-", 1);
    }
    strobe__pf_put_u64(b, mag / 1000);
    unsigned frac = (unsigned)(mag % 1000);
    char f[4] = {'.', (char)('0' + frac / 100), (char)('0' + frac / 10 % 10),
                 (char)('0' + frac % 10)};
    put(b, f, 4);
}

/* ", \"pid\": P, \"tid\": T, \"ts\": " */
static void put_pid_tid(buf *b, int64_t pid, int64_t tid) {
    puts_(b, ", \"pid\": ");
    strobe__pf_put_i64(b, pid);
    puts_(b, ", \"tid\": ");
    strobe__pf_put_i64(b, tid);
    puts_(b, ", \"ts\": ");
}

/* to - from, 0 when negative, held at INT64_MAX: times are unchecked 64-bit values. */
static int64_t span(int64_t from, int64_t to) {
    int64_t d;
    if (to <= from) return 0;
    return __builtin_sub_overflow(to, from, &d) ? INT64_MAX : d;
}

/* Starts the next element of traceEvents in b. */
static void sep(strobe_rd_pfs *s, buf *b) {
    puts_(b, s->first ? "  " : ",\n  ");
    s->first = 0;
}

/* The annotations of the event being decoded: key i at anns.p + ann_off[2i], its value (JSON
 * text) at anns.p + ann_off[2i + 1]. */
static const char *ann_key(const tevent *e, size_t i) {
    return e->anns.p + e->ann_off[2 * i];
}

static const char *ann_val(const tevent *e, size_t i) {
    return e->anns.p + e->ann_off[2 * i + 1];
}

/* Appends the annotations of e as JSON members ("k": v, ...) to b. */
static void put_args(buf *b, const tevent *e) {
    for (size_t i = 0; i < e->nann; i++) {
        if (i) puts_(b, ", ");
        put_cstr(b, ann_key(e, i));
        puts_(b, ": ");
        puts_(b, ann_val(e, i));
    }
}

static int reserved_key(const char *k) {
    return strcmp(k, "baseTimeNanoseconds") == 0 || strcmp(k, "deviceProperties") == 0 ||
           strcmp(k, "traceName") == 0 || strcmp(k, "schemaVersion") == 0 ||
           strcmp(k, "displayTimeUnit") == 0 || strcmp(k, "traceEvents") == 0;
}

/* The top level up to the event array, from the annotations of the session slice `e` (NULL: none
 * was seen); then the metadata events kept until now. */
static void write_header(strobe_rd_pfs *s, const tevent *e) {
    buf *b = &s->out;
    const char *devprops = "[]";
    int64_t base = 0;
    int has_base = 0;
    for (size_t i = 0; e && i < e->nann; i++) {
        const char *k = ann_key(e, i), *v = ann_val(e, i);
        if (strcmp(k, "baseTimeNanoseconds") == 0) {
            char *end;
            long long x = strtoll(v, &end, 10);
            if (*end == '\0' && end != v) base = x, has_base = 1;
        } else if (strcmp(k, "deviceProperties") == 0) {
            devprops = v;
        } else if (strcmp(k, "traceName") == 0) {
            free(s->trace_name);
            s->trace_name = strobe__rd_dup_n(v, strlen(v));
            if (!s->trace_name) b->err = STROBE_ENOMEM;
        }
    }
    puts_(b, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": ");
    puts_(b, devprops);
    for (size_t i = 0; e && i < e->nann; i++) {
        const char *k = ann_key(e, i);
        if (reserved_key(k)) continue;
        puts_(b, ",\n  ");
        put_cstr(b, k);
        puts_(b, ": ");
        puts_(b, ann_val(e, i));
    }
    puts_(b, ",\n  \"displayTimeUnit\": \"ms\"");
    if (has_base) strobe__pf_printf(b, ",\n  \"baseTimeNanoseconds\": %" PRId64, base);
    puts_(b, ",\n  \"traceEvents\": [");
    s->arr_end = s->out_base + (int64_t)b->len;
    puts_(b, "\n");
    s->phase = PH_EVENTS;
    s->first = 1;
    if (s->pending_m.len) {
        s->first = 0;
        for (size_t i = 0; i < s->ring_len; i++) /* all of them are in pending_m */
            s->ring[(s->ring_head + i) & (s->ring_cap - 1)].offset += (int64_t)b->len;
        put(b, s->pending_m.p, s->pending_m.len);
    }
    free(s->pending_m.p);
    memset(&s->pending_m, 0, sizeof s->pending_m);
}

/* A session slice seen after the header: its members are written after the event array, where
 * the JSON reader takes top-level members too (only the first session slice counts). */
static void late_session(strobe_rd_pfs *s, const tevent *e) {
    buf *b = &s->late_meta;
    for (size_t i = 0; i < e->nann; i++) {
        const char *k = ann_key(e, i), *v = ann_val(e, i);
        if (strcmp(k, "traceName") == 0) {
            free(s->trace_name);
            s->trace_name = strobe__rd_dup_n(v, strlen(v));
            if (!s->trace_name) b->err = STROBE_ENOMEM;
            continue;
        }
        if (strcmp(k, "schemaVersion") == 0 || strcmp(k, "displayTimeUnit") == 0 ||
            strcmp(k, "traceEvents") == 0)
            continue;
        puts_(b, ",\n  ");
        put_cstr(b, k);
        puts_(b, ": ");
        puts_(b, v);
    }
}

/* Makes sure the header was written before an event is. */
void strobe__pf_need_header(strobe_rd_pfs *s) {
    if (s->phase == PH_HEADER) write_header(s, NULL);
}

/* A metadata event ("M"): written at once after the header, else kept for it. */
static void meta_event(strobe_rd_pfs *s, const char *name, int64_t pid, int64_t tid,
                       const char *arg, const char *str, int64_t num) {
    buf *b = s->phase == PH_HEADER ? &s->pending_m : &s->out;
    if (s->phase == PH_HEADER)
        puts_(b, b->len ? ",\n  " : "  ");
    else
        sep(s, b);
    size_t start = b->len;
    strobe_rd_pf_elem *e = push_elem(s, s->next_index++, start, 'M');
    if (!e) return;
    puts_(b, "{\"name\": \"");
    e->name_off = b->len - start;
    e->name_len = strlen(name);
    puts_(b, name);
    puts_(b, "\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": ");
    strobe__pf_put_i64(b, pid);
    puts_(b, ", \"tid\": ");
    strobe__pf_put_i64(b, tid);
    puts_(b, ", \"args\": ");
    e->args_off = b->len - start;
    puts_(b, "{\"");
    puts_(b, arg);
    puts_(b, "\": ");
    if (str)
        put_cstr(b, str);
    else
        strobe__pf_put_i64(b, num);
    puts_(b, "}");
    e->args_len = b->len - start - e->args_off;
    puts_(b, "}");
    e->len = b->len - start;
    e->pid = pid;
    e->tid = tid;
    e->depth = 2;
}

/* The metadata events of a track whose descriptor was just read. */
static void track_meta(strobe_rd_pfs *s, track *t) {
    resolve(s, t, 0);
    if (t->kind == TK_COUNTER || t->lane) return;
    int is_proc =
        t->kind == TK_PROCESS || (t->kind == TK_PLAIN && (t->uuid >> 56) == PFW_KINETO_PROC_MARK);
    if (is_proc) {
        if (t->name) meta_event(s, "process_name", t->opid, 0, "name", t->name, 0);
        if (t->has_sort)
            meta_event(s, "process_sort_index", t->opid, 0, "sort_index", NULL, t->sort);
    } else {
        if (t->name) meta_event(s, "thread_name", t->opid, t->otid, "name", t->name, 0);
        if (t->has_sort)
            meta_event(s, "thread_sort_index", t->opid, t->otid, "sort_index", NULL, t->sort);
    }
}

/* Appends a flow event to v. @return 0, or -1 when out of memory. */
static int flows_add(pflows *v, uint64_t id, int term) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 8;
        pflow *p = realloc(v->p, cap * sizeof *p);
        if (!p) return -1;
        v->p = p;
        v->cap = cap;
    }
    v->p[v->n++] = (pflow){id, term};
    return 0;
}

/* The flow events of e, appended to v. Kineto's JSON has one "s" per launch and an "f" per
 * device event, all with the correlation id; in protobuf a terminating flow id closes its flow,
 * so a slice that starts several flows (a CUDA graph's launch) lists one id per device event
 * (strobe's writer: the correlation id first). Such a slice is written with one "s", with its
 * first id, and every flow it starts maps to that id (s->rep): their ends become "f" with the
 * same id, which JSON viewers draw as one arrow each. Flows started alone keep their id. An end
 * read before its launch keeps its own id. @return the number of flow events, or -1 when out of
 * memory. */
static long map_flows(strobe_rd_pfs *s, pflows *v, const tevent *e) {
    uint64_t first = 0;
    size_t outgoing = 0;
    long n = 0;
    for (size_t f = 0; f < e->nflow; f++) {
        if (e->flow_term[f]) continue;
        if (outgoing++ == 0) first = e->flow_id[f];
    }
    for (size_t f = 0; outgoing > 1 && f < e->nflow; f++)
        if (!e->flow_term[f] && e->flow_id[f] != first &&
            strobe__pf_map_put(&s->rep, e->flow_id[f], 0, first))
            return -1;
    int started = 0;
    for (size_t f = 0; f < e->nflow; f++) {
        uint64_t id = e->flow_id[f];
        int term = e->flow_term[f];
        if (!term && started++) continue; /* the slice's first "s" stands for all */
        if (term) strobe__pf_map_get(&s->rep, id, 0, &id);
        if (flows_add(v, id, term)) return -1;
        n++;
    }
    return n;
}

/* Writes a flow event (element `index`) on (pid, tid) at ts to b. */
static void write_flow(strobe_rd_pfs *s, buf *b, uint64_t index, const pflow *f, int64_t pid,
                       int64_t tid, int64_t ts) {
    puts_(b, ",\n  ");
    size_t start = b->len;
    strobe_rd_pf_elem *e = push_elem(s, index, start, f->term ? 'f' : 's');
    if (!e) return;
    puts_(b, f->term ? "{\"ph\": \"f\", \"id\": " : "{\"ph\": \"s\", \"id\": ");
    strobe__pf_put_u64(b, f->id);
    put_pid_tid(b, pid, tid);
    put_ts(b, ts);
    puts_(b, ", \"cat\": \"");
    e->cat_off = b->len - start;
    e->cat_len = 4;
    puts_(b, "ac2g\", \"name\": \"");
    e->name_off = b->len - start;
    e->name_len = 4;
    puts_(b, "ac2g\"");
    if (f->term) {
        puts_(b, ", \"bp\": \"e\"");
        e->bp = "e";
    }
    puts_(b, "}");
    e->len = b->len - start;
    e->pid = pid;
    e->tid = tid;
    e->ts_ns = ts;
    e->id = f->id;
    e->plain = f->id <= (uint64_t)INT64_MAX && ts != INT64_MIN;
}

/* The "cat" and "name" members of e, appended to b; *cat_q gets the length of cat's JSON string.
 * @return 1 when both were written as they are (no escapes), so that the reader can take them
 * from the text without decoding it. */
static int put_head(buf *b, const tevent *e, size_t *cat_q) {
    size_t cat_len = e->cat ? e->cat_len : 0, name_len = e->name ? e->name_len : 0;
    puts_(b, "\"cat\": ");
    size_t at = b->len;
    put_json_string(b, e->cat ? e->cat : "", cat_len);
    *cat_q = b->len - at;
    puts_(b, ", \"name\": ");
    at = b->len;
    put_json_string(b, e->name ? e->name : "", name_len);
    return *cat_q == cat_len + 2 && b->len - at == name_len + 2;
}

/* Sets the name and cat of record e from a head put_head() wrote at h (relative to the
 * element), head_len bytes of it. */
static void head_fields(strobe_rd_pf_elem *e, size_t h, size_t head_len, size_t cat_q, int plain) {
    e->cat_off = h + 8; /* "cat": " */
    e->cat_len = cat_q - 2;
    e->name_off = h + 7 + cat_q + 11; /* , "name": " */
    e->name_len = head_len - (7 + cat_q + 10) - 2;
    if (!plain) e->plain = 0;
}

/* ", \"args\": " and the start of the args object, whose offset goes to e. */
static void args_open(buf *b, size_t start, strobe_rd_pf_elem *e) {
    puts_(b, ", \"args\": ");
    e->args_off = b->len - start;
    puts_(b, "{");
}

/* The end of the args object and of the element, whose lengths go to e. */
static void args_close(buf *b, size_t start, strobe_rd_pf_elem *e) {
    puts_(b, "}");
    e->args_len = b->len - start - e->args_off;
    puts_(b, "}");
    e->len = b->len - start;
}

/* Writes the complete event of the innermost open slice of t, which ended at end_ts, with the
 * end's annotations (end: may be NULL) after the begin's, and drops it. */
void strobe__pf_close_slice(strobe_rd_pfs *s, track *t, int64_t end_ts, const tevent *end) {
    open_slice *o = &t->open[--t->nopen];
    buf *b = &s->out;
    strobe__pf_need_header(s);
    const char *head = t->text.p + o->text, *args = head + o->head_len;
    size_t args_len = t->text.len - o->text - o->head_len;
    sep(s, b);
    size_t start = b->len;
    strobe_rd_pf_elem *e = push_elem(s, o->index, start, 'X');
    if (!e) return;
    puts_(b, "{\"ph\": \"X\", ");
    head_fields(e, b->len - start, o->head_len, o->cat_q, o->plain);
    put(b, head, o->head_len);
    put_pid_tid(b, o->pid, o->tid);
    put_ts(b, o->ts);
    puts_(b, ", \"dur\": ");
    int64_t dur = span(o->ts, end_ts);
    put_ts(b, dur);
    args_open(b, start, e);
    unsigned depth = 0;
    if (!o->session) {
        put(b, args, args_len);
        depth = o->adepth;
        if (end && end->nann) {
            if (args_len) puts_(b, ", ");
            put_args(b, end);
            if (end->adepth > depth) depth = end->adepth;
        }
    }
    args_close(b, start, e);
    e->pid = o->pid;
    e->tid = o->tid;
    e->ts_ns = o->ts;
    e->dur_ns = dur;
    e->depth = 2 + depth;
    if (o->ts == INT64_MIN) e->plain = 0; /* out of range in the JSON */
    for (size_t k = 0; k < o->nflows; k++)
        write_flow(s, b, o->index + 1 + k, &t->flows.p[o->flow_at + k], o->pid, o->tid, o->ts);
    t->text.len = o->text;
    t->flows.n = o->flow_at;
}

/* ---- 3. Packets ------------------------------------------------------------------------------ */

static int parse_descriptor(strobe_rd_pfs *s, const field *df) {
    cur c = sub(df);
    field f;
    int rc;
    track tmp = {0};
    const uint8_t *name = NULL;
    size_t name_len = 0;
    int has_uuid = 0;
    while ((rc = strobe__pf_next_field(&s->d, &c, &f)) > 0) {
        switch (f.num) {
        case PFW_TD_UUID:
            if (want(&s->d, &f, PFW_VARINT)) return s->d.err;
            tmp.uuid = f.v;
            has_uuid = 1;
            break;
        case PFW_TD_PARENT:
            if (want(&s->d, &f, PFW_VARINT)) return s->d.err;
            tmp.parent = f.v;
            tmp.has_parent = 1;
            break;
        case PFW_TD_NAME:
        case PFW_TD_STATIC_NAME:
            if (want(&s->d, &f, PFW_LEN)) return s->d.err;
            name = f.data, name_len = f.len;
            break;
        case PFW_TD_SIBLING_RANK:
            if (want(&s->d, &f, PFW_VARINT)) return s->d.err;
            tmp.sort = (int32_t)f.v;
            tmp.has_sort = 1;
            break;
        case PFW_TD_COUNTER:
            if (want(&s->d, &f, PFW_LEN)) return s->d.err;
            tmp.kind = TK_COUNTER;
            break;
        case PFW_TD_PROCESS:
        case PFW_TD_THREAD: {
            if (want(&s->d, &f, PFW_LEN)) return s->d.err;
            int thread = f.num == PFW_TD_THREAD;
            tmp.kind = thread ? TK_THREAD : TK_PROCESS;
            cur pc = sub(&f);
            field g;
            while ((rc = strobe__pf_next_field(&s->d, &pc, &g)) > 0) {
                if (g.num == PFW_PROC_PID || (thread && g.num == PFW_THREAD_TID)) {
                    if (want(&s->d, &g, PFW_VARINT)) return s->d.err;
                    if (g.num == PFW_PROC_PID)
                        tmp.pid = (int32_t)g.v;
                    else
                        tmp.tid = (int32_t)g.v;
                } else if ((!thread && g.num == PFW_PROC_NAME) ||
                           (thread && g.num == PFW_THREAD_NAME)) {
                    if (want(&s->d, &g, PFW_LEN)) return s->d.err;
                    name = g.data, name_len = g.len;
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
    s->content = 1;
    track *t = get_track(s, tmp.uuid, 1);
    if (!t) return strobe__pf_nomem(s);
    /* A descriptor repeated as it was (writers emit them again after a state clear) says
     * nothing new. */
    if (t->declared && t->kind == tmp.kind && t->has_parent == tmp.has_parent &&
        t->parent == tmp.parent && t->pid == tmp.pid && t->tid == tmp.tid &&
        t->has_sort == tmp.has_sort && t->sort == tmp.sort &&
        (t->name ? name && strlen(t->name) == name_len && memcmp(t->name, name, name_len) == 0
                 : name == NULL))
        return 0;
    char *nm = NULL;
    if (name && !(nm = strobe__rd_dup_n(name, name_len))) return strobe__pf_nomem(s);
    free(t->name);
    t->name = nm;
    if (!t->declared) t->decl_ix = s->ndeclared++;
    t->declared = 1;
    t->kind = tmp.kind;
    t->has_parent = tmp.has_parent;
    t->parent = tmp.parent;
    t->pid = tmp.pid;
    t->tid = tmp.tid;
    t->has_sort = tmp.has_sort;
    t->sort = tmp.sort;
    t->resolved = 0;
    track_meta(s, t);
    return s->out.err || s->pending_m.err ? strobe__pf_nomem(s) : 0;
}

/* ---- CPU samples (PerfSample) ---- */

/* The interned map's key of entry `iid` of `kind`: the kind in the top 4 bits. */
static uint64_t interned_key(int kind, uint64_t iid) {
    return ((uint64_t)kind << 60) | (iid & ((UINT64_C(1) << 60) - 1));
}

/* Keeps `copy` (malloc'd; taken in every case) as the sequence's interned entry `iid` of `kind`,
 * freeing the entry it replaces. @return 0, or STROBE_ENOMEM (copy NULL or no room). */
static int keep_interned(strobe_rd_pfs *s, seq *q, int kind, uint64_t iid, char *copy) {
    if (!copy) return strobe__pf_nomem(s);
    uint64_t old;
    uint64_t key = interned_key(kind, iid);
    int had = strobe__pf_map_get(&q->interned, key, iid, &old);
    if (strobe__pf_map_put(&q->interned, key, iid, (uint64_t)(uintptr_t)copy)) {
        free(copy);
        return strobe__pf_nomem(s);
    }
    if (had) free((char *)(uintptr_t)old);
    return 0;
}

/* A Frame or Callstack entry of InternedData, kept as the decimal iids it refers to (a frame:
 * its function name's; a callstack: its frames', outermost first, joined by ','). */
static int parse_sample_entry(strobe_rd_pfs *s, seq *q, int kind, const field *ef) {
    cur c = sub(ef);
    field g;
    int rc;
    uint64_t iid = 0;
    buf ids = {0};
    while ((rc = strobe__pf_next_field(&s->d, &c, &g)) > 0) {
        if (g.num == PFW_INTERNED_IID && g.wt == PFW_VARINT) {
            iid = g.v;
        } else if (kind == IN_FRAME && g.num == PFW_FRAME_FUNCTION_NAME_ID && g.wt == PFW_VARINT) {
            ids.len = 0;
            strobe__pf_put_u64(&ids, g.v);
        } else if (kind == IN_STACK && g.num == PFW_CALLSTACK_FRAME_IDS && g.wt == PFW_VARINT) {
            if (ids.len) put(&ids, ",", 1);
            strobe__pf_put_u64(&ids, g.v);
        } else if (kind == IN_STACK && g.num == PFW_CALLSTACK_FRAME_IDS && g.wt == PFW_LEN) {
            /* Packed: varints one after the other. */
            for (size_t o = 0; o < g.len;) {
                uint64_t v = 0;
                for (int shift = 0; o < g.len && shift < 64; shift += 7) {
                    uint8_t byte = g.data[o++];
                    v |= (uint64_t)(byte & 0x7f) << shift;
                    if (!(byte & 0x80)) break;
                }
                if (ids.len) put(&ids, ",", 1);
                strobe__pf_put_u64(&ids, v);
            }
        }
    }
    char *copy = rc < 0 || ids.err ? NULL : strobe__rd_dup_n(ids.p ? ids.p : "", ids.len);
    free(ids.p);
    if (rc < 0) return rc;
    return keep_interned(s, q, kind, iid, copy);
}

static const char *lookup(seq *q, int kind, uint64_t iid);

/* A PerfSample as a "cpu_sample" instant on its pid and tid at `ts`, named after its leaf, its
 * frames (innermost first, joined by ';') as its "Call stack", as strobe's JSON has them; read
 * back from the text (not plain). A sample whose callstack is unknown is left out. */
static int parse_perf_sample(strobe_rd_pfs *s, seq *q, const field *pf, int64_t ts) {
    cur c = sub(pf);
    field g;
    int rc;
    int64_t pid = 0, tid = 0;
    uint64_t stack = 0;
    while ((rc = strobe__pf_next_field(&s->d, &c, &g)) > 0) {
        if (g.wt != PFW_VARINT) continue;
        if (g.num == PFW_PS_PID) pid = (int64_t)(uint32_t)g.v;
        if (g.num == PFW_PS_TID) tid = (int64_t)(uint32_t)g.v;
        if (g.num == PFW_PS_CALLSTACK_IID) stack = g.v;
    }
    if (rc < 0) return rc;
    const char *ids = lookup(q, IN_STACK, stack);
    if (ids == NULL || ids[0] == '\0') return 0;
    /* The frames' names, outermost first in ids: written innermost first. */
    size_t n = 1;
    for (const char *p = ids; *p; p++)
        n += *p == ',';
    const char **names = malloc(n * sizeof *names);
    if (!names) return strobe__pf_nomem(s);
    const char *p = ids;
    for (size_t k = 0; k < n; k++) {
        uint64_t fr = strtoull(p, (char **)&p, 10);
        if (*p == ',') p++;
        const char *fn = lookup(q, IN_FRAME, fr);
        const char *name = fn ? lookup(q, IN_FUNC, strtoull(fn, NULL, 10)) : NULL;
        names[k] = name ? name : "??";
    }
    strobe__pf_need_header(s);
    buf *b = &s->out;
    sep(s, b);
    size_t start = b->len;
    strobe_rd_pf_elem *x = push_elem(s, s->next_index++, start, 'i');
    if (!x) {
        free(names);
        return s->d.err;
    }
    /* The leaf's function: its frame less the location (" (file)") that ends it. */
    const char *leaf = names[n - 1];
    size_t leaf_len = strlen(leaf);
    const char *o = leaf_len > 3 && leaf[leaf_len - 1] == ')' ? strrchr(leaf, '(') : NULL;
    if (o && o > leaf && o[-1] == ' ') leaf_len = (size_t)(o - 1 - leaf);
    puts_(b, "{\"ph\": \"i\", \"s\": \"t\", \"cat\": \"cpu_sample\", \"name\": ");
    put_json_string(b, leaf, leaf_len);
    put_pid_tid(b, pid, tid);
    put_ts(b, ts);
    args_open(b, start, x);
    puts_(b, "\"Call stack\": ");
    buf st = {0};
    for (size_t k = n; k-- > 0;) {
        if (k + 1 < n) put(&st, ";", 1);
        put(&st, names[k], strlen(names[k]));
    }
    put_json_string(b, st.p ? st.p : "", st.len);
    int err = st.err;
    free(st.p);
    free(names);
    args_close(b, start, x);
    x->plain = 0; /* read from its text */
    x->pid = pid;
    x->tid = tid;
    x->ts_ns = ts;
    x->depth = 2;
    return err || b->err ? strobe__pf_nomem(s) : 0;
}

static int parse_interned(strobe_rd_pfs *s, seq *q, const field *idf) {
    cur c = sub(idf);
    field f;
    int rc;
    while ((rc = strobe__pf_next_field(&s->d, &c, &f)) > 0) {
        int kind = f.num == PFW_INTERNED_CATEGORIES       ? IN_CAT
                   : f.num == PFW_INTERNED_NAMES          ? IN_NAME
                   : f.num == PFW_INTERNED_ANN_NAMES      ? IN_ANN
                   : f.num == PFW_INTERNED_STRINGS        ? IN_STR
                   : f.num == PFW_INTERNED_FUNCTION_NAMES ? IN_FUNC
                   : f.num == PFW_INTERNED_FRAMES         ? IN_FRAME
                   : f.num == PFW_INTERNED_CALLSTACKS     ? IN_STACK
                                                          : 0;
        if (!kind) continue;
        if (kind == IN_FRAME || kind == IN_STACK) {
            rc = parse_sample_entry(s, q, kind, &f);
            if (rc < 0) return rc;
            continue;
        }
        if (want(&s->d, &f, PFW_LEN)) return s->d.err;
        cur ec = sub(&f);
        field g;
        uint64_t iid = 0;
        const uint8_t *str = NULL;
        size_t len = 0;
        while ((rc = strobe__pf_next_field(&s->d, &ec, &g)) > 0) {
            if (g.num == PFW_INTERNED_IID) {
                if (want(&s->d, &g, PFW_VARINT)) return s->d.err;
                iid = g.v;
            } else if (g.num == PFW_INTERNED_STR) {
                if (want(&s->d, &g, PFW_LEN)) return s->d.err;
                str = g.data, len = g.len;
            }
        }
        if (rc < 0) return rc;
        if (!str) continue;
        int krc = keep_interned(s, q, kind, iid, strobe__rd_dup_n(str, len));
        if (krc < 0) return krc;
    }
    return rc;
}

static const char *lookup(seq *q, int kind, uint64_t iid) {
    uint64_t v;
    uint64_t key = interned_key(kind, iid);
    return strobe__pf_map_get(&q->interned, key, iid, &v) ? (const char *)(uintptr_t)v : NULL;
}

static int parse_clock_snapshot(strobe_rd_pfs *s, seq *q, const field *cf) {
    cur c = sub(cf);
    field f;
    int rc;
    int have_boot = 0, have_inc = 0;
    uint64_t boot = 0, inc = 0;
    while ((rc = strobe__pf_next_field(&s->d, &c, &f)) > 0) {
        if (f.num != PFW_SNAPSHOT_CLOCK) continue;
        if (want(&s->d, &f, PFW_LEN)) return s->d.err;
        cur cc = sub(&f);
        field g;
        uint64_t id = 0, ts = 0;
        int is_inc = 0;
        while ((rc = strobe__pf_next_field(&s->d, &cc, &g)) > 0) {
            if (g.num >= 1 && g.num <= 3 && want(&s->d, &g, PFW_VARINT)) return s->d.err;
            if (g.num == PFW_CLOCK_ID) id = g.v;
            if (g.num == PFW_CLOCK_TIMESTAMP) ts = g.v;
            if (g.num == PFW_CLOCK_INCREMENTAL) is_inc = g.v != 0;
        }
        if (rc < 0) return rc;
        if (is_inc) {
            q->inc_clock = id;
            q->inc_value = ts;
            inc = ts;
            have_inc = 1;
        } else if (id == PFW_BUILTIN_BOOTTIME) {
            boot = ts;
            have_boot = 1;
        }
    }
    if (have_inc && have_boot) q->inc_offset = (int64_t)(boot - inc);
    return rc;
}

/* Adds a string to e->anns. @return its offset, or SIZE_MAX when out of memory. */
static size_t ann_str(tevent *e, const void *p, size_t n) {
    size_t off = e->anns.len;
    put(&e->anns, p, n);
    put(&e->anns, "", 1);
    return e->anns.err ? SIZE_MAX : off;
}

/* One DebugAnnotation: its name and its value as JSON text, added to e. */
static int parse_annotation(strobe_rd_pfs *s, seq *q, tevent *e, const field *af) {
    cur c = sub(af);
    field f;
    int rc, have = 0;
    const char *name = NULL;
    size_t name_len = 0;
    buf *b = &e->scratch;
    b->len = 0;
    while ((rc = strobe__pf_next_field(&s->d, &c, &f)) > 0) {
        switch (f.num) {
        case PFW_ANN_NAME_IID:
            if (want(&s->d, &f, PFW_VARINT)) return s->d.err;
            name = lookup(q, IN_ANN, f.v);
            name_len = name ? strlen(name) : 0;
            break;
        case PFW_ANN_NAME:
            if (want(&s->d, &f, PFW_LEN)) return s->d.err;
            name = (const char *)f.data, name_len = f.len;
            break;
        case PFW_ANN_BOOL:
        case PFW_ANN_UINT:
        case PFW_ANN_INT:
        case PFW_ANN_POINTER:
            if (want(&s->d, &f, PFW_VARINT)) return s->d.err;
            b->len = 0;
            if (f.num == PFW_ANN_BOOL)
                puts_(b, f.v ? "true" : "false");
            else if (f.num == PFW_ANN_UINT)
                strobe__pf_put_u64(b, f.v);
            else if (f.num == PFW_ANN_INT)
                strobe__pf_put_i64(b, (int64_t)f.v);
            else
                strobe__pf_printf(b, "\"0x%" PRIx64 "\"", f.v);
            have = 1;
            break;
        case PFW_ANN_DOUBLE: {
            if (want(&s->d, &f, PFW_I64)) return s->d.err;
            double v;
            memcpy(&v, &f.v, sizeof v);
            b->len = 0;
            if (isfinite(v))
                strobe__pf_printf(b, "%.17g", v);
            else
                puts_(b, "null");
            have = 1;
            break;
        }
        case PFW_ANN_STRING:
            if (want(&s->d, &f, PFW_LEN)) return s->d.err;
            b->len = 0;
            put_json_string(b, (const char *)f.data, f.len);
            have = 1;
            break;
        case PFW_ANN_STRING_IID: {
            if (want(&s->d, &f, PFW_VARINT)) return s->d.err;
            b->len = 0;
            put_cstr(b, lookup(q, IN_STR, f.v));
            have = 1;
            break;
        }
        case PFW_ANN_LEGACY_JSON:
            if (want(&s->d, &f, PFW_LEN)) return s->d.err;
            b->len = 0;
            /* Pasted only when it is one valid JSON value; else kept as a string. */
            int depth = json_value_depth((const char *)f.data, f.len);
            if (depth >= 0)
                put(b, f.data, f.len);
            else
                put_json_string(b, (const char *)f.data, f.len);
            if (depth > (int)e->adepth) e->adepth = (unsigned)depth;
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
    if (b->err) return strobe__pf_nomem(s);
    if (e->nann == e->capann) {
        size_t cap = e->capann ? 2 * e->capann : 16;
        size_t *p = realloc(e->ann_off, 2 * cap * sizeof *p);
        if (!p) return strobe__pf_nomem(s);
        e->ann_off = p;
        e->capann = cap;
    }
    size_t k = ann_str(e, name ? name : "", name ? name_len : 0);
    size_t v = ann_str(e, b->p, b->len);
    if (k == SIZE_MAX || v == SIZE_MAX) return strobe__pf_nomem(s);
    e->ann_off[2 * e->nann] = k;
    e->ann_off[2 * e->nann + 1] = v;
    e->nann++;
    return 0;
}

static int add_flow(strobe_rd_pfs *s, tevent *e, uint64_t id, int terminating) {
    if (e->nflow == e->capflow) {
        size_t cap = e->capflow ? 2 * e->capflow : 8;
        uint64_t *ids = realloc(e->flow_id, cap * sizeof *ids);
        if (!ids) return strobe__pf_nomem(s);
        e->flow_id = ids;
        uint8_t *term = realloc(e->flow_term, cap);
        if (!term) return strobe__pf_nomem(s);
        e->flow_term = term;
        e->capflow = cap;
    }
    e->flow_id[e->nflow] = id;
    e->flow_term[e->nflow++] = (uint8_t)terminating;
    return 0;
}

/* flow_ids and terminating_flow_ids: fixed64 (fields 47, 48), also packed; the older uint64
 * fields 36 and 42. */
static int parse_flow_field(strobe_rd_pfs *s, tevent *e, const field *f) {
    int terminating = f->num == PFW_TE_TERM_FLOW_IDS || f->num == PFW_TE_TERM_FLOW_IDS_OLD;
    int fixed = f->num == PFW_TE_FLOW_IDS || f->num == PFW_TE_TERM_FLOW_IDS;
    if (f->wt == PFW_LEN) {
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
    if (want(&s->d, f, fixed ? PFW_I64 : PFW_VARINT)) return s->d.err;
    return add_flow(s, e, f->v, terminating);
}

static int is_session(const tevent *e) {
    return e->type == PFW_TYPE_BEGIN && e->name && e->cat && e->name_len == 14 &&
           memcmp(e->name, "strobe session", 14) == 0 && e->cat_len == 5 &&
           memcmp(e->cat, "Trace", 5) == 0;
}

/* What a decoded track event becomes: a begin is held on its track until its end, which writes
 * the complete event; instants and counters are written at once. */
static int emit_event(strobe_rd_pfs *s, tevent *e) {
    if (e->ts > s->last_ts) s->last_ts = e->ts;
    track *t = get_track(s, e->track, e->type == PFW_TYPE_BEGIN);
    if (e->type == PFW_TYPE_BEGIN && !t) return strobe__pf_nomem(s);
    if (t) resolve(s, t, 0);
    int64_t pid = t ? t->opid : 0, tid = t ? t->otid : 0;
    buf *b = &s->out;
    switch (e->type) {
    case PFW_TYPE_BEGIN: {
        int session = 0;
        if (is_session(e) && !s->session) {
            s->session = 1;
            session = 1;
            if (s->phase == PH_HEADER)
                write_header(s, e);
            else
                late_session(s, e);
        }
        if (t->nopen == t->capopen) {
            size_t cap = t->capopen ? 2 * t->capopen : 8;
            open_slice *p = realloc(t->open, cap * sizeof *p);
            if (!p) return strobe__pf_nomem(s);
            t->open = p;
            t->capopen = cap;
        }
        buf *tx = &t->text;
        size_t text = tx->len, cat_q;
        int plain = put_head(tx, e, &cat_q);
        size_t head_len = tx->len - text;
        put_args(tx, e);
        size_t flow_at = t->flows.n;
        long nflows = map_flows(s, &t->flows, e);
        if (tx->err || nflows < 0) return strobe__pf_nomem(s);
        uint64_t index = s->next_index; /* the slice's index is that of its begin */
        s->next_index += 1 + (uint64_t)nflows;
        t->open[t->nopen++] = (open_slice){.index = index,
                                           .ts = e->ts,
                                           .pid = pid,
                                           .tid = tid,
                                           .session = session,
                                           .text = text,
                                           .head_len = head_len,
                                           .cat_q = cat_q,
                                           .plain = plain,
                                           .adepth = e->adepth,
                                           .flow_at = flow_at,
                                           .nflows = (size_t)nflows};
        break;
    }
    case PFW_TYPE_END:
        if (t && t->nopen > 0) strobe__pf_close_slice(s, t, e->ts, e);
        break;
    case PFW_TYPE_COUNTER: {
        strobe__pf_need_header(s);
        sep(s, b);
        size_t start = b->len;
        strobe_rd_pf_elem *x = push_elem(s, s->next_index++, start, 'C');
        if (!x) return s->d.err;
        const char *name = t && t->name ? t->name : "counter";
        size_t name_len = strlen(name);
        puts_(b, "{\"ph\": \"C\", \"cat\": \"");
        x->cat_off = b->len - start;
        x->cat_len = 7;
        puts_(b, "counter\", \"name\": ");
        size_t at = b->len;
        put_json_string(b, name, name_len);
        x->name_off = at + 1 - start;
        x->name_len = name_len;
        if (b->len - at != name_len + 2) x->plain = 0;
        put_pid_tid(b, pid, tid);
        put_ts(b, e->ts);
        args_open(b, start, x);
        put_cstr(b, name);
        if (isfinite(e->value))
            strobe__pf_printf(b, ": %.17g", e->value);
        else
            puts_(b, ": 0");
        args_close(b, start, x);
        x->pid = pid;
        x->tid = tid;
        x->ts_ns = e->ts;
        x->depth = 2;
        if (e->ts == INT64_MIN) x->plain = 0;
        break;
    }
    default: { /* instants, and TYPE_UNSPECIFIED (legacy events), shown as instants */
        strobe__pf_need_header(s);
        sep(s, b);
        size_t start = b->len, cat_q;
        strobe_rd_pf_elem *x = push_elem(s, s->next_index++, start, 'i');
        if (!x) return s->d.err;
        puts_(b, "{\"ph\": \"i\", \"s\": \"t\", ");
        size_t h = b->len - start;
        int plain = put_head(b, e, &cat_q);
        head_fields(x, h, b->len - start - h, cat_q, plain);
        x->scope = "t";
        put_pid_tid(b, pid, tid);
        put_ts(b, e->ts);
        args_open(b, start, x);
        put_args(b, e);
        args_close(b, start, x);
        x->pid = pid;
        x->tid = tid;
        x->ts_ns = e->ts;
        x->depth = 2 + e->adepth;
        if (e->ts == INT64_MIN) x->plain = 0;
        s->iflows.n = 0;
        long n = map_flows(s, &s->iflows, e);
        if (n < 0) return strobe__pf_nomem(s);
        for (size_t k = 0; k < s->iflows.n; k++)
            write_flow(s, b, s->next_index++, &s->iflows.p[k], pid, tid, e->ts);
        break;
    }
    }
    return b->err || s->late_meta.err ? strobe__pf_nomem(s) : 0;
}

static int parse_track_event(strobe_rd_pfs *s, seq *q, const field *tf, int64_t ts) {
    tevent *e = &s->ev;
    e->type = 0;
    e->ts = ts;
    e->track = q->has_def_track ? q->def_track : 0;
    e->name = e->cat = NULL;
    e->name_len = e->cat_len = 0;
    e->value = 0;
    e->adepth = 0;
    e->anns.len = 0;
    e->nann = 0;
    e->nflow = 0;
    s->content = 1;
    cur c = sub(tf);
    field f;
    int rc;
    while ((rc = strobe__pf_next_field(&s->d, &c, &f)) > 0) {
        switch (f.num) {
        case PFW_TE_TYPE:
            if (want(&s->d, &f, PFW_VARINT)) return s->d.err;
            if (f.v >= 1 && f.v <= 4) e->type = (int)f.v;
            break;
        case PFW_TE_TRACK:
            if (want(&s->d, &f, PFW_VARINT)) return s->d.err;
            e->track = f.v;
            break;
        case PFW_TE_NAME_IID:
            if (want(&s->d, &f, PFW_VARINT)) return s->d.err;
            e->name = lookup(q, IN_NAME, f.v);
            e->name_len = e->name ? strlen(e->name) : 0;
            break;
        case PFW_TE_NAME:
            if (want(&s->d, &f, PFW_LEN)) return s->d.err;
            e->name = (const char *)f.data; /* points into the packet, which outlives e */
            e->name_len = f.len;
            break;
        case PFW_TE_CATEGORY_IIDS: /* maybe packed: the first one counts */
            if (f.wt == PFW_LEN) {
                cur pc = sub(&f);
                uint64_t v;
                if (pc.p < pc.end && get_varint(&s->d, &pc, &v) == 0) {
                    e->cat = lookup(q, IN_CAT, v);
                    e->cat_len = e->cat ? strlen(e->cat) : 0;
                }
                if (s->d.err) return s->d.err;
            } else {
                if (want(&s->d, &f, PFW_VARINT)) return s->d.err;
                if (!e->cat) {
                    e->cat = lookup(q, IN_CAT, f.v);
                    e->cat_len = e->cat ? strlen(e->cat) : 0;
                }
            }
            break;
        case PFW_TE_CATEGORIES:
            if (want(&s->d, &f, PFW_LEN)) return s->d.err;
            if (!e->cat) e->cat = (const char *)f.data, e->cat_len = f.len;
            break;
        case PFW_TE_COUNTER_VALUE:
            if (want(&s->d, &f, PFW_VARINT)) return s->d.err;
            e->value = (double)(int64_t)f.v;
            break;
        case PFW_TE_DOUBLE_COUNTER:
            if (want(&s->d, &f, PFW_I64)) return s->d.err;
            memcpy(&e->value, &f.v, sizeof e->value);
            break;
        case PFW_TE_DEBUG_ANNOTATIONS:
            if (want(&s->d, &f, PFW_LEN)) return s->d.err;
            if (parse_annotation(s, q, e, &f)) return s->d.err;
            break;
        case PFW_TE_FLOW_IDS_OLD:
        case PFW_TE_TERM_FLOW_IDS_OLD:
        case PFW_TE_FLOW_IDS:
        case PFW_TE_TERM_FLOW_IDS:
            if (parse_flow_field(s, e, &f)) return s->d.err;
            break;
        default:
            break;
        }
    }
    if (rc < 0) return rc;
    /* name and cat may point into the packet, where they are not NUL-terminated: everything
     * after this uses their lengths. */
    return emit_event(s, e);
}

static int parse_defaults(strobe_rd_pfs *s, seq *q, const field *df) {
    cur c = sub(df);
    field f;
    int rc;
    while ((rc = strobe__pf_next_field(&s->d, &c, &f)) > 0) {
        if (f.num == PFW_DEFAULTS_CLOCK) {
            if (want(&s->d, &f, PFW_VARINT)) return s->d.err;
            q->def_clock = f.v;
        } else if (f.num == PFW_DEFAULTS_TRACK_EVENT) {
            if (want(&s->d, &f, PFW_LEN)) return s->d.err;
            cur tc = sub(&f);
            field g;
            while ((rc = strobe__pf_next_field(&s->d, &tc, &g)) > 0) {
                if (g.num != PFW_TE_DEFAULTS_TRACK) continue;
                if (want(&s->d, &g, PFW_VARINT)) return s->d.err;
                q->def_track = g.v;
                q->has_def_track = 1;
            }
            if (rc < 0) return rc;
        }
    }
    return rc;
}

/* The fields of a packet that the later steps read, kept from the first walk over it. */
#define PACKET_KEEP 16

int strobe__pf_parse_packet(strobe_rd_pfs *s, const field *pf) {
    /* First: the fields the others depend on (sequence, flags, defaults, clock, interned data),
     * wherever they are in the packet; the message fields are kept for the steps after. */
    cur c = sub(pf);
    field f, keep[PACKET_KEEP];
    size_t nkeep = 0;
    int overflow = 0;
    int rc;
    uint32_t seq_id = 0;
    uint64_t flags = 0, ts = 0, clock = 0;
    int has_ts = 0, has_clock = 0, cleared = 0;
    while ((rc = strobe__pf_next_field(&s->d, &c, &f)) > 0) {
        int wt = -1;
        switch (f.num) {
        case PFW_PACKET_SEQUENCE_ID:
            wt = PFW_VARINT;
            seq_id = (uint32_t)f.v;
            break;
        case PFW_PACKET_SEQUENCE_FLAGS:
            wt = PFW_VARINT;
            flags = f.v;
            break;
        case PFW_PACKET_STATE_CLEARED:
            wt = PFW_VARINT;
            cleared = f.v != 0;
            break;
        case PFW_PACKET_TIMESTAMP:
            wt = PFW_VARINT;
            ts = f.v;
            has_ts = 1;
            break;
        case PFW_PACKET_TIMESTAMP_CLOCK:
            wt = PFW_VARINT;
            clock = f.v;
            has_clock = 1;
            break;
        case PFW_PACKET_CLOCK_SNAPSHOT:
        case PFW_PACKET_TRACK_EVENT:
        case PFW_PACKET_INTERNED_DATA:
        case PFW_PACKET_DEFAULTS:
        case PFW_PACKET_TRACK_DESCRIPTOR:
        case PFW_PACKET_PERF_SAMPLE:
            wt = PFW_LEN;
            if (nkeep < PACKET_KEEP)
                keep[nkeep++] = f;
            else
                overflow = 1;
            break;
        default:
            break;
        }
        if (wt >= 0 && want(&s->d, &f, wt)) return s->d.err;
    }
    if (rc < 0) return rc;
    seq *q = get_seq(s, seq_id);
    if (!q) return strobe__pf_nomem(s);
    if ((flags & PFW_SEQ_INCREMENTAL_STATE_CLEARED) || cleared) {
        strobe__pf_seq_clear_interned(q);
        q->inc_value = 0;
    }
    /* Then the state the packet sets, then its track events; with more fields than were kept
     * (no writer makes such packets), the packet is walked again for each. */
    int64_t when = 0;
    for (int pass = 0; pass < 2; pass++) {
        c = sub(pf);
        for (size_t k = 0;; k++) {
            if (overflow) {
                if ((rc = strobe__pf_next_field(&s->d, &c, &f)) <= 0) break;
            } else {
                if (k == nkeep) break;
                f = keep[k];
            }
            if (pass == 0) {
                if (f.num == PFW_PACKET_DEFAULTS && parse_defaults(s, q, &f)) return s->d.err;
                if (f.num == PFW_PACKET_CLOCK_SNAPSHOT && parse_clock_snapshot(s, q, &f))
                    return s->d.err;
                if (f.num == PFW_PACKET_INTERNED_DATA && parse_interned(s, q, &f)) return s->d.err;
                if (f.num == PFW_PACKET_TRACK_DESCRIPTOR && parse_descriptor(s, &f))
                    return s->d.err;
                continue;
            }
            if (f.num == PFW_PACKET_TRACK_EVENT && parse_track_event(s, q, &f, when))
                return s->d.err;
            if (f.num == PFW_PACKET_PERF_SAMPLE && (rc = parse_perf_sample(s, q, &f, when)) < 0)
                return rc;
        }
        if (rc < 0) return rc;
        if (pass == 0 && has_ts) { /* the packet's time, once its clock state is known */
            uint64_t id = has_clock ? clock : q->def_clock;
            if (q->inc_clock && id == q->inc_clock) {
                q->inc_value += ts;
                when = (int64_t)(q->inc_value + (uint64_t)q->inc_offset);
            } else {
                when = (int64_t)ts;
            }
        }
    }
    return 0;
}
