/* pftrace_dec.c: see pftrace_dec.h; the decoder's parts are listed in pftrace_int.h.
 *
 * Contents:
 *   1. Protobuf primitives over a bounds-checked cursor.
 *   2. Buffers and maps.
 *   3. Input: Trace fields one at a time through a bounded buffer; a cut at the end.
 *   4. The stream API, strobe_rd_pf_to_json() and the sniff. */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pftrace_int.h"

/* ---- 1. Protobuf primitives ----------------------------------------------------------------- */

int strobe__pf_fail_at(dec *d, int64_t off, const char *fmt, ...) {
    if (d->err) return d->err;
    d->err = STROBE_EFORMAT;
    d->err_off = off;
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(d->msg, sizeof d->msg, "byte %lld: %s", (long long)off, why);
    return d->err;
}

int strobe__pf_get_varint_slow(dec *d, cur *c, uint64_t *out) {
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
int strobe__pf_next_field(dec *d, cur *c, field *f) {
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
    case PFW_VARINT:
        return get_varint(d, c, &f->v) ? d->err : 1;
    case PFW_I64:
    case PFW_I32: {
        size_t n = f->wt == PFW_I64 ? 8 : 4;
        if ((size_t)(c->end - c->p) < n)
            return fail(d, f->at, "field %u: fixed%zu value cut short", f->num, 8 * n);
        f->v = 0;
        for (size_t i = 0; i < n; i++)
            f->v |= (uint64_t)c->p[i] << (8 * i);
        c->p += n;
        return 1;
    }
    case PFW_LEN: {
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

/* ---- 2. Buffers and maps ------------------------------------------------------------------- */

int strobe__pf_grow(buf *b, size_t n) {
    if (b->err) return b->err;
    if (b->cap - b->len > n) return 0;
    size_t cap = b->cap ? b->cap : 256;
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

void strobe__pf_printf(buf *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Decimal integers, written without printf: there are several per event. */
void strobe__pf_put_u64(buf *b, uint64_t v) {
    char tmp[24];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(b, tmp + i, sizeof tmp - i);
}

void strobe__pf_put_i64(buf *b, int64_t v) {
    if (v < 0) {
        put(b, "-", 1);
        strobe__pf_put_u64(b, 0 - (uint64_t)v);
    } else {
        strobe__pf_put_u64(b, (uint64_t)v);
    }
}

static uint64_t mix(uint64_t a, uint64_t b) {
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull + (a << 6) + (a >> 2));
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 29);
}

int strobe__pf_map_put(map *m, uint64_t a, uint64_t b, uint64_t v) {
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
            if (m->used[i]) strobe__pf_map_put(&g, m->k1[i], m->k2[i], m->val[i]);
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

int strobe__pf_map_get(const map *m, uint64_t a, uint64_t b, uint64_t *v) {
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

void strobe__pf_map_free(map *m) {
    free(m->k1), free(m->k2), free(m->val), free(m->used);
    memset(m, 0, sizeof *m);
}

int strobe__pf_nomem(strobe_rd_pfs *s) {
    if (s->d.err) return s->d.err;
    s->d.err = STROBE_ENOMEM;
    s->d.err_off = -1;
    snprintf(s->d.msg, sizeof s->d.msg, "out of memory");
    return STROBE_ENOMEM;
}

void strobe__pf_seq_clear_interned(seq *q) {
    for (size_t i = 0; i < q->interned.cap; i++)
        if (q->interned.used[i]) free((char *)(uintptr_t)q->interned.val[i]);
    strobe__pf_map_free(&q->interned);
}

/* ---- 3. Input -------------------------------------------------------------------------------- */

/* The input buffer's usual size; a larger packet grows it to that packet's size. */
#define IN_CHUNK (256 * 1024)

/* Puts the input back at its start. Memory input is read in place: s->in is the caller's data. */
static void input_start(strobe_rd_pfs *s) {
    s->in_pos = 0;
    s->in_base = 0;
    s->in_eof = s->mem != NULL;
    s->in_len = s->mem ? s->mem_len : 0;
    memset(&s->gz_sum, 0, sizeof s->gz_sum);
    if (s->mem) s->in = (uint8_t *)(uintptr_t)s->mem;
}

/* Makes at least n unread bytes available in s->in, fewer only at the end of the input.
 * @return the number of unread bytes, or a negative error. */
static int64_t refill(strobe_rd_pfs *s, size_t n) {
    if (s->in_len - s->in_pos >= n || s->in_eof) return (int64_t)(s->in_len - s->in_pos);
    if (s->in_pos > 0) {
        memmove(s->in, s->in + s->in_pos, s->in_len - s->in_pos);
        s->in_base += (int64_t)s->in_pos;
        s->in_len -= s->in_pos;
        s->in_pos = 0;
    }
    if (n > s->in_cap || !s->in) {
        size_t cap = s->in_cap ? s->in_cap : IN_CHUNK;
        while (cap < n)
            cap = cap > SIZE_MAX / 2 ? n : 2 * cap;
        uint8_t *p = realloc(s->in, cap);
        if (!p) return strobe__pf_nomem(s);
        s->in = p;
        s->in_cap = cap;
    }
    while (s->in_len < n && !s->in_eof) {
        size_t room = s->in_cap - s->in_len;
        int r = gzread(s->gz, s->in + s->in_len, (unsigned)(room > (1u << 30) ? 1u << 30 : room));
        if (r < 0) {
            s->d.err = STROBE_EIO;
            s->d.err_off = -1;
            snprintf(s->d.msg, sizeof s->d.msg, "read error (or corrupt gzip data)");
            return s->d.err;
        }
        size_t got = (size_t)r;
        if (got == 0) s->in_eof = s->gz_sum.eof = 1;
        strobe_rd_gzsum_add(&s->gz_sum, s->in + s->in_len, got);
        s->in_len += got;
    }
    return (int64_t)(s->in_len - s->in_pos);
}

/* The input ends inside a Trace field that starts at stream offset `at`: read up to the last
 * whole one, as Perfetto's trace processor does (the caller reports the cut), when cuts are
 * allowed and one was whole; else the error `why`. @return 0 (the end) or the error. */
static int cut_at(strobe_rd_pfs *s, int64_t at, int64_t err_at, const char *why) {
    if (s->allow_cut && s->fields > 0) {
        s->cut = at;
        s->in_pos = s->in_len; /* the rest is dropped */
        s->in_eof = 1;
        return 0;
    }
    return strobe__pf_fail_at(&s->d, err_at, "%s", why);
}

/* Reads a varint from in[*i..in_len). @return 1, 0 when the input ends inside it, or an error. */
static int buf_varint(strobe_rd_pfs *s, size_t *i, uint64_t *out) {
    uint64_t v = 0;
    size_t at = *i;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*i >= s->in_len) return 0;
        uint8_t b = s->in[(*i)++];
        v |= (uint64_t)(b & 0x7f) << (shift < 64 ? shift : 63);
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return strobe__pf_fail_at(&s->d, s->in_base + (int64_t)at, "varint longer than 10 bytes");
}

/* The first pass's look at a packet: the flows its track event starts, when it starts several (a
 * graph launch), go into s->rep. Malformed input just ends the look; the second pass reports it. */
static void scan_packet(strobe_rd_pfs *s, const uint8_t *data, size_t len) {
    dec d = {.start = data};
    cur c = {data, data + len};
    field f;
    while (strobe__pf_next_field(&d, &c, &f) > 0) {
        if (f.num != PFW_PACKET_TRACK_EVENT || f.wt != PFW_LEN) continue;
        cur tc = sub(&f);
        field g;
        uint64_t first = 0;
        size_t n = 0;
        while (strobe__pf_next_field(&d, &tc, &g) > 0) {
            if (g.num != PFW_TE_FLOW_IDS && g.num != PFW_TE_FLOW_IDS_OLD) continue;
            int fixed = g.num == PFW_TE_FLOW_IDS;
            cur vc = sub(&g);
            for (int one = g.wt != PFW_LEN; one || vc.p < vc.end; one = 0) {
                uint64_t id = g.v;
                if (g.wt == PFW_LEN && fixed) {
                    if (vc.end - vc.p < 8) return;
                    id = 0;
                    for (int i = 0; i < 8; i++)
                        id |= (uint64_t)vc.p[i] << (8 * i);
                    vc.p += 8;
                } else if (g.wt == PFW_LEN && get_varint(&d, &vc, &id)) {
                    return;
                }
                if (n++ == 0)
                    first = id;
                else if (id != first && strobe__pf_map_put(&s->rep, id, 0, first))
                    return; /* out of memory: the second pass has the same map to fill */
                if (one) break;
            }
        }
        if (d.err) return;
    }
}

/* Reads the next field of Trace, and decodes it when it is a packet.
 * @return 1: a field was read, 0: the end of the input (or a cut), <0: an error. */
static int next_trace_field(strobe_rd_pfs *s) {
    int64_t avail = refill(s, 20); /* a tag and a length */
    if (avail <= 0) return (int)avail;
    size_t i = s->in_pos;
    int64_t at = s->in_base + (int64_t)s->in_pos;
    uint64_t tag = 0, v = 0;
    char why[160];
    int r = buf_varint(s, &i, &tag);
    if (r < 0) return r;
    if (r == 0) return cut_at(s, at, at, "truncated varint");
    uint32_t num = (uint32_t)(tag >> 3);
    int wt = (int)(tag & 7);
    if ((tag >> 3) == 0 || (tag >> 3) > 536870911u)
        return strobe__pf_fail_at(&s->d, at, "invalid field number %" PRIu64, tag >> 3);
    switch (wt) {
    case PFW_VARINT: {
        size_t vat = i;
        r = buf_varint(s, &i, &v);
        if (r < 0) return r;
        if (r == 0) return cut_at(s, at, s->in_base + (int64_t)vat, "truncated varint");
        break;
    }
    case PFW_I64:
    case PFW_I32: {
        size_t n = wt == PFW_I64 ? 8 : 4;
        size_t rel = i - s->in_pos; /* refill() may move the unread bytes to the start */
        avail = refill(s, rel + n);
        if (avail < 0) return (int)avail;
        i = s->in_pos + rel;
        if (s->in_len - i < n) {
            snprintf(why, sizeof why, "field %u: fixed%zu value cut short", num, 8 * n);
            return cut_at(s, at, at, why);
        }
        i += n;
        break;
    }
    case PFW_LEN: {
        size_t lat = i;
        r = buf_varint(s, &i, &v);
        if (r < 0) return r;
        if (r == 0) return cut_at(s, at, s->in_base + (int64_t)lat, "truncated varint");
        size_t hdr = i - s->in_pos;
        if (v > s->max_packet) {
            /* Too large to hold: skipped when the input has that many bytes (an error for a
             * packet), a cut when it ends first. */
            s->in_pos += hdr;
            uint64_t left = v;
            while (left > 0) {
                avail = refill(s, 1);
                if (avail < 0) return (int)avail;
                if (avail == 0) {
                    snprintf(why, sizeof why,
                             "field %u: length %" PRIu64 " past the end (%" PRIu64 " bytes left)",
                             num, v, v - left);
                    return cut_at(s, at, at, why);
                }
                size_t take = (uint64_t)avail < left ? (size_t)avail : (size_t)left;
                s->in_pos += take;
                left -= take;
            }
            s->fields++;
            if (num == PFW_TRACE_PACKET)
                return strobe__pf_fail_at(
                    &s->d, at, "packet of %" PRIu64 " bytes, larger than the limit of %zu bytes", v,
                    s->max_packet);
            return 1;
        }
        avail = refill(s, hdr + (size_t)v);
        if (avail < 0) return (int)avail;
        if ((uint64_t)avail < hdr + v) {
            snprintf(why, sizeof why, "field %u: length %" PRIu64 " past the end (%zu bytes left)",
                     num, v, (size_t)avail - hdr);
            return cut_at(s, at, at, why);
        }
        i = s->in_pos + hdr + (size_t)v;
        break;
    }
    default:
        return strobe__pf_fail_at(&s->d, at, "field %u: unsupported wire type %d", num, wt);
    }
    /* The field is whole in in[in_pos..i). */
    size_t start = s->in_pos;
    s->fields++;
    if (num == PFW_TRACE_PACKET && s->scanning) {
        if (wt == PFW_LEN) scan_packet(s, s->in + (i - (size_t)v), (size_t)v);
        s->in_pos = i;
        return 1;
    }
    if (num == PFW_TRACE_PACKET) {
        s->d.start = s->in;
        s->d.base = s->in_base;
        field f = {.num = num, .wt = wt, .v = v, .at = s->in + start};
        if (wt != PFW_LEN) {
            s->in_pos = i;
            return want(&s->d, &f, PFW_LEN);
        }
        f.data = s->in + (i - (size_t)v);
        f.len = (size_t)v;
        int rc = strobe__pf_parse_packet(s, &f);
        s->in_pos = i;
        if (rc < 0) return rc;
        return s->d.err ? s->d.err : 1;
    }
    s->in_pos = i; /* Trace has only packets; anything else is skipped */
    return 1;
}

/* The first pass. A graph launch's slice starts one flow per kernel, and the JSON gives all of
 * their ends the launch's id (map_flows); but a writer may put the device tracks before the CPU
 * threads (strobe's does, for test_perfetto's graph), so that the kernels' ends come before the
 * launch that tells which ids to change. This pass gathers them (s->rep), then the input starts
 * again. It keeps nothing per event, and costs a read of the input without decoding it. */
static int prescan_flows(strobe_rd_pfs *s) {
    s->scanned = 1;
    s->scanning = 1;
    while (next_trace_field(s) > 0)
        ;
    s->scanning = 0;
    int err = s->d.err == STROBE_ENOMEM || s->d.err == STROBE_EIO ? s->d.err : 0;
    if (err) return err;
    memset(&s->d, 0, sizeof s->d);
    s->d.err_off = -1;
    s->cut = -1;
    s->fields = 0;
    input_start(s);
    if (s->gz && gzrewind(s->gz) != 0) {
        s->d.err = STROBE_EIO;
        snprintf(s->d.msg, sizeof s->d.msg, "cannot rewind the input");
        return s->d.err;
    }
    return 0;
}

/* One step: a Trace field, or one slice closed at the end, or the end of the JSON text. */
static int step(strobe_rd_pfs *s) {
    if (!s->scanned) return prescan_flows(s);
    switch (s->phase) {
    case PH_HEADER:
    case PH_EVENTS: {
        int r = next_trace_field(s);
        if (r < 0) return r;
        if (r > 0) return 0;
        if (!s->content)
            return strobe__pf_fail_at(&s->d, 0,
                                      "no trace packets with track events or descriptors");
        strobe__pf_need_header(s);
        s->phase = PH_CLOSE;
        s->close_track = 0;
        return s->out.err ? strobe__pf_nomem(s) : 0;
    }
    case PH_CLOSE:
        /* Slices left open: closed at the trace's last time, the innermost first. */
        while (s->close_track < s->ntracks && s->tracks[s->close_track].nopen == 0)
            s->close_track++;
        if (s->close_track < s->ntracks) {
            track *t = &s->tracks[s->close_track];
            strobe__pf_close_slice(s, t, s->last_ts, NULL);
        } else {
            s->phase = PH_TRAILER;
        }
        return s->out.err ? strobe__pf_nomem(s) : 0;
    case PH_TRAILER:
        puts_(&s->out, "\n  ]");
        if (s->late_meta.len) put(&s->out, s->late_meta.p, s->late_meta.len);
        if (s->trace_name) {
            puts_(&s->out, ",\n  \"traceName\": ");
            puts_(&s->out, s->trace_name);
        }
        puts_(&s->out, "\n}\n");
        s->phase = PH_DONE;
        return s->out.err ? strobe__pf_nomem(s) : 0;
    default:
        return 0;
    }
}

/* ---- 4. The stream API ----------------------------------------------------------------------- */

static void free_state(strobe_rd_pfs *s) {
    for (size_t i = 0; i < s->nseqs; i++)
        strobe__pf_seq_clear_interned(&s->seqs[i]);
    free(s->seqs);
    strobe__pf_map_free(&s->seq_ix);
    for (size_t i = 0; i < s->ntracks; i++) {
        track *t = &s->tracks[i];
        free(t->text.p);
        free(t->flows.p);
        free(t->open);
        free(t->name);
    }
    free(s->tracks);
    strobe__pf_map_free(&s->track_ix);
    strobe__pf_map_free(&s->rep);
    free(s->ev.anns.p);
    free(s->ev.ann_off);
    free(s->ev.scratch.p);
    free(s->ev.flow_id);
    free(s->ev.flow_term);
    free(s->out.p);
    free(s->pending_m.p);
    free(s->late_meta.p);
    free(s->trace_name);
    free(s->ring);
    free(s->iflows.p);
    if (!s->mem) free(s->in);
}

/* Sets s to its state at the start of the input (keeping the input and the options). */
static void reset(strobe_rd_pfs *s) {
    gzFile gz = s->gz;
    const uint8_t *mem = s->mem;
    size_t mem_len = s->mem_len, max_packet = s->max_packet;
    int allow_cut = s->allow_cut, direct = s->direct;
    free_state(s);
    memset(s, 0, sizeof *s);
    s->gz = gz;
    s->mem = mem;
    s->mem_len = mem_len;
    s->max_packet = max_packet;
    s->allow_cut = allow_cut;
    s->direct = direct;
    s->arr_end = -1;
    s->cut = -1;
    s->d.err_off = -1;
    s->phase = PH_HEADER;
    input_start(s);
}

static strobe_rd_pfs *pfs_new(size_t max_packet, int allow_cut) {
    strobe_rd_pfs *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->max_packet = max_packet ? max_packet : (size_t)256 << 20;
    s->allow_cut = allow_cut;
    reset(s);
    return s;
}

strobe_rd_pfs *strobe_rd_pfs_open_gz(gzFile gz, size_t max_packet, int allow_cut) {
    strobe_rd_pfs *s = pfs_new(max_packet, allow_cut);
    if (s) s->gz = gz;
    return s;
}

strobe_rd_pfs *strobe_rd_pfs_open_mem(const void *data, size_t len, size_t max_packet,
                                      int allow_cut) {
    strobe_rd_pfs *s = pfs_new(max_packet, allow_cut);
    if (s) {
        s->mem = data ? data : (const void *)"";
        s->mem_len = data ? len : 0;
        input_start(s);
    }
    return s;
}

int strobe_rd_pfs_rewind(strobe_rd_pfs *s) {
    if (s->gz && gzrewind(s->gz) != 0) {
        reset(s);
        s->d.err = STROBE_EIO;
        snprintf(s->d.msg, sizeof s->d.msg, "cannot rewind the input");
        return s->d.err;
    }
    reset(s);
    return 0;
}

void strobe_rd_pfs_close(strobe_rd_pfs *s) {
    if (!s) return;
    free_state(s);
    free(s);
}

/* Runs steps until there is output to hand out. @return 1, 0 at the end, or an error. */
static int pending(strobe_rd_pfs *s) {
    while (s->out_pos == s->out.len) {
        if (s->d.err) return s->d.err;
        if (s->phase == PH_DONE) return 0;
        s->out_base += (int64_t)s->out.len;
        s->out.len = s->out_pos = 0;
        if (step(s)) return s->d.err ? s->d.err : STROBE_EFORMAT;
    }
    return 1;
}

void strobe_rd_pfs_set_direct(strobe_rd_pfs *s) {
    s->direct = 1;
}

long strobe_rd_pfs_read(strobe_rd_pfs *s, const void **text, int64_t *off) {
    int r = pending(s);
    if (r <= 0) return r;
    size_t end = s->out.len;
    if (s->direct) {
        /* Up to the next element, and a piece ends with the "[": the tokenizer reads text in
         * place, and must have none of it left when the elements are handed out apart (which
         * may write over it). */
        if (s->ring_len && (size_t)s->ring[s->ring_head].offset < end)
            end = (size_t)s->ring[s->ring_head].offset;
        int64_t at = s->out_base + (int64_t)s->out_pos;
        if (s->arr_end > at && s->arr_end - s->out_base < (int64_t)end)
            end = (size_t)(s->arr_end - s->out_base);
    }
    size_t n = end - s->out_pos;
    if (n > LONG_MAX) n = LONG_MAX;
    *text = s->out.p + s->out_pos;
    if (off) *off = s->out_base + (int64_t)s->out_pos;
    s->out_pos += n;
    return (long)n;
}

int strobe_rd_pfs_next_elem(strobe_rd_pfs *s, const strobe_rd_pf_elem **e) {
    for (;;) {
        if (s->ring_len) {
            strobe_rd_pf_elem *c = &s->cur;
            *c = s->ring[s->ring_head];
            s->ring_head = (s->ring_head + 1) & (s->ring_cap - 1);
            s->ring_len--;
            size_t at = (size_t)c->offset;
            c->text = s->out.p + at;
            c->offset = s->out_base + c->offset;
            s->out_pos = at + c->len;
            *e = c;
            return 1;
        }
        if (s->d.err) return s->d.err;
        if (s->phase == PH_TRAILER || s->phase == PH_DONE) return 0;
        if (s->out_pos == s->out.len) {
            s->out_base += (int64_t)s->out.len;
            s->out.len = s->out_pos = 0;
        }
        if (step(s)) return s->d.err ? s->d.err : STROBE_EFORMAT;
    }
}

int strobe_rd_pfs_prime(strobe_rd_pfs *s) {
    int r = pending(s);
    return r < 0 ? r : 0;
}

const char *strobe_rd_pfs_errmsg(const strobe_rd_pfs *s) {
    return s->d.err ? s->d.msg : "";
}

int64_t strobe_rd_pfs_error_offset(const strobe_rd_pfs *s) {
    return s->d.err ? s->d.err_off : -1;
}

const strobe_rd_gzsum *strobe_rd_pfs_gz_sum(const strobe_rd_pfs *s) {
    return &s->gz_sum;
}

int64_t strobe_rd_pfs_cut(const strobe_rd_pfs *s) {
    return s->cut;
}

int strobe_rd_pf_to_json(const void *data, size_t len, char **json, size_t *json_len, char *err,
                         size_t errsz, int64_t *cut) {
    *json = NULL;
    *json_len = 0;
    if (err && errsz) err[0] = '\0';
    if (cut) *cut = -1;
    /* A packet is limited only by the input, which is in memory already. */
    strobe_rd_pfs *s = strobe_rd_pfs_open_mem(data, len, len ? len : 1, cut != NULL);
    if (!s) {
        if (err && errsz) snprintf(err, errsz, "out of memory");
        return STROBE_ENOMEM;
    }
    buf out = {0};
    int rc;
    while ((rc = pending(s)) > 0) {
        put(&out, s->out.p + s->out_pos, s->out.len - s->out_pos);
        s->out_pos = s->out.len;
        if (out.err) {
            rc = strobe__pf_nomem(s);
            break;
        }
    }
    if (rc < 0) {
        if (err && errsz) snprintf(err, errsz, "%s", s->d.msg);
        free(out.p);
    } else {
        if (cut) *cut = s->cut;
        *json = out.p;
        *json_len = out.len;
    }
    strobe_rd_pfs_close(s);
    return rc < 0 ? rc : 0;
}

/* ---- The sniff ------------------------------------------------------------------------------- */
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
                if (wt == PFW_I64 || wt == PFW_I32) {
                    size_t n = wt == PFW_I64 ? 8 : 4;
                    if ((size_t)(end - p) < n) return cut;
                    p += n;
                    break;
                }
                if (wt != PFW_VARINT && wt != PFW_LEN) return 0;
            } else if ((v[0] & 7) == PFW_LEN) {
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
