/* wire.c: a model as one flat buffer and back (wire.h).
 *
 * The buffer: the md_model struct as it is (its scalars; its pointers are meaningless on the other
 * side and replaced), the strings in id order (a length and the bytes each; interning them in that
 * order gives them the same ids), then every column as a length in bytes and the bytes, in the
 * order of the COLUMNS list below (UINT64_MAX: a NULL pointer), then each thread's order. Every
 * column is written at the length readers may index (count events, count / 64 words of bits ...),
 * and read back into an array of exactly that size, the capacities set to match. */
#include "wire.h"

#include <stdlib.h>
#include <string.h>

#include "strobe/error.h"

void md_put(md_wbuf *b, const void *src, size_t n) {
    if (b->oom || n == 0) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (p == NULL) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

void md_put_u64(md_wbuf *b, uint64_t v) {
    md_put(b, &v, sizeof v);
}

#define NULL_COLUMN UINT64_MAX

static void put_column(md_wbuf *b, const void *p, size_t bytes) {
    if (p == NULL) {
        md_put_u64(b, NULL_COLUMN);
        return;
    }
    md_put_u64(b, bytes);
    md_put(b, p, bytes);
}

/* Every column of the model: its pointer field and its length in bytes. One list, so that packing
 * and unpacking cannot disagree on the order. */
#define WORDS(m) (((m)->count + 63) / 64)
#define COLUMNS(X, m)                                                                              \
    X(ev_ts, (m)->count * sizeof *(m)->ev_ts)                                                      \
    X(ev_dur, (m)->count * sizeof *(m)->ev_dur)                                                    \
    X(ev_name, (m)->count * sizeof *(m)->ev_name)                                                  \
    X(ev_thread, (m)->count * sizeof *(m)->ev_thread)                                              \
    X(ev_cls, (m)->count * sizeof *(m)->ev_cls)                                                    \
    X(ev_flags, (m)->count * sizeof *(m)->ev_flags)                                                \
    X(ev_parent, (m)->count * sizeof *(m)->ev_parent)                                              \
    X(ev_pdelta, (m)->count * sizeof *(m)->ev_pdelta)                                              \
    X(far_parents, (m)->far_count * sizeof *(m)->far_parents)                                      \
    X(cold_bits, WORDS(m) * sizeof *(m)->cold_bits)                                                \
    X(cold_rank, WORDS(m) * sizeof *(m)->cold_rank)                                                \
    X(cold_off, (m)->cold_count * sizeof *(m)->cold_off)                                           \
    X(cold_buf, (m)->cold_len * sizeof *(m)->cold_buf)                                             \
    X(bads, (m)->bad_count * sizeof *(m)->bads)                                                    \
    X(index_runs, (m)->index_run_count * sizeof *(m)->index_runs)                                  \
    X(threads, (m)->thread_count * sizeof *(m)->threads)                                           \
    X(procs, (m)->proc_count * sizeof *(m)->procs)                                                 \
    X(meta_keys, (m)->meta_count * sizeof *(m)->meta_keys)                                         \
    X(heap_json, (m)->heap_json ? (m)->heap_len + 1 : 0)                                           \
    X(perf_names, (m)->perf_count * sizeof *(m)->perf_names)                                       \
    X(perf, (m)->count *(m)->perf_count * sizeof *(m)->perf)                                       \
    X(kargs, (m)->kargs_count * sizeof *(m)->kargs)                                                \
    X(comms, (m)->comm_count * sizeof *(m)->comms)                                                 \
    X(thread_slots, (m)->thread_slot_cap * sizeof *(m)->thread_slots)                              \
    X(proc_slots, (m)->proc_slot_cap * sizeof *(m)->proc_slots)

int md_pack(const md_model *m, uint8_t **out, size_t *len) {
    md_wbuf b = {0};
    md_put(&b, m, sizeof *m);
    md_put_u64(&b, m->strings.count);
    for (size_t id = 0; id < m->strings.count; id++) {
        md_put_u64(&b, m->strings.lens[id]);
        md_put(&b, m->strings.strs[id], m->strings.lens[id]);
    }
#define PACK(field, bytes) put_column(&b, m->field, (bytes));
    COLUMNS(PACK, m)
#undef PACK
    for (size_t t = 0; m->threads && t < m->thread_count; t++)
        put_column(&b, m->threads[t].order, m->threads[t].count * sizeof *m->threads[t].order);
    if (b.oom) {
        free(b.p);
        return STROBE_ENOMEM;
    }
    *out = b.p;
    *len = b.len;
    return 0;
}

const uint8_t *md_take(md_rbuf *r, size_t n) {
    if (r->bad || n > r->len - r->at) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *p = r->p + r->at;
    r->at += n;
    return p;
}

uint64_t md_take_u64(md_rbuf *r) {
    uint64_t v = 0;
    const uint8_t *p = md_take(r, sizeof v);
    if (p) memcpy(&v, p, sizeof v);
    return v;
}

/* A column of exactly `bytes` bytes (as the model's counts say) into a new array at *dst. */
static int take_column(md_rbuf *r, void *dst, size_t bytes) {
    uint64_t n = md_take_u64(r);
    void *p = NULL;
    if (r->bad) return STROBE_EINVAL;
    if (n != NULL_COLUMN) {
        if (n != bytes) return STROBE_EINVAL;
        const uint8_t *src = md_take(r, (size_t)n);
        if (src == NULL) return STROBE_EINVAL;
        p = malloc(n ? (size_t)n : 1);
        if (p == NULL) return STROBE_ENOMEM;
        memcpy(p, src, (size_t)n);
    }
    memcpy(dst, &p, sizeof p);
    return 0;
}

int md_unpack(md_model *m, const uint8_t *buf, size_t len) {
    md_rbuf r = {buf, len, 0, 0};
    const uint8_t *raw = md_take(&r, sizeof *m);
    memset(m, 0, sizeof *m);
    if (raw == NULL) return STROBE_EINVAL;
    md_model scalars;
    memcpy(&scalars, raw, sizeof scalars);
    /* The scalars, with every pointer NULL until its column is read (md_free frees what was). */
    *m = scalars;
    memset(&m->pool, 0, sizeof m->pool);
#define CLEAR(field, bytes) m->field = NULL;
    COLUMNS(CLEAR, m)
#undef CLEAR
    strobe__strtab_init(&m->strings, &m->pool);
    int rc = 0;
    uint64_t nstr = md_take_u64(&r);
    for (uint64_t id = 0; rc == 0 && !r.bad && id < nstr; id++) {
        uint64_t n = md_take_u64(&r);
        const uint8_t *s = md_take(&r, (size_t)n);
        if (s == NULL) break;
        int64_t got = strobe__strtab_intern(&m->strings, (const char *)s, (size_t)n);
        if (got < 0)
            rc = (int)got;
        else if ((uint64_t)got != id)
            rc = STROBE_EINVAL; /* a repeated string: not md_pack's */
    }
    if (rc == 0 && r.bad) rc = STROBE_EINVAL;
#define UNPACK(field, bytes)                                                                       \
    if (rc == 0) rc = take_column(&r, &m->field, (bytes));
    COLUMNS(UNPACK, m)
#undef UNPACK
    /* The threads' own arrays: their pointers came with the struct, from the other side. */
    for (size_t t = 0; m->threads && t < m->thread_count; t++)
        m->threads[t].order = NULL;
    for (size_t t = 0; rc == 0 && m->threads && t < m->thread_count; t++)
        rc = take_column(&r, &m->threads[t].order,
                         m->threads[t].count * sizeof *m->threads[t].order);
    if (rc == 0 && r.at != r.len) rc = STROBE_EINVAL;
    /* Room as the columns have it: whatever grows later grows from there. */
    m->cap = m->count;
    m->cold_cap = m->cold_count;
    m->cold_buf_cap = m->cold_len;
    m->bad_cap = m->bad_count;
    m->index_run_cap = m->index_run_count;
    m->thread_cap = m->thread_count;
    m->proc_cap = m->proc_count;
    m->meta_cap = m->meta_count;
    m->kargs_cap = m->kargs_count;
    m->comm_cap = m->comm_count;
    m->perf_cap = m->perf ? m->count : 0;
    if (rc) {
        if (m->threads == NULL) m->thread_count = 0;
        md_free(m);
    }
    return rc;
}
