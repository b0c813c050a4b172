/* chunks.c: the session's buffer arena and the chunks it is handed out in (see chunks.h): the
 * mapping, the refill that gives a recording thread its next chunk, and, for streaming and
 * flight-recorder sessions, the pool of recycled chunks and the queue of full ones.
 *
 * Contents: 1. the arena, 2. the pool and queue of streaming sessions, 3. refill.
 *
 * Why the pool and queue are shaped as they are:
 * - The free pool is a stack of chunk indexes with a tag in the head word, so that a pop that
 *   raced with a pop and a push (ABA) fails its compare-and-swap. Only the background thread (or
 *   stop) pushes; any recording thread pops. The queue of full chunks is a plain lock-free stack
 *   that the background thread empties at once and reverses: every thread pushes its own chunks
 *   in order, so the reversed batch keeps each thread's order.
 */
#include "chunks.h"

#include <sys/mman.h>

#include "stream_internal.h"
#include "strobe/error.h"
#include "util/bigmem.h"

/* ---- 1. the arena -------------------------------------------------------------------------- */

int strobe__arena_map(strobe__session *s, size_t prefault_bytes) {
    s->arena = strobe__big_map(s->arena_bytes, 1);
    if (s->arena == NULL) return STROBE_ENOMEM;
    if (prefault_bytes) {
        /* Faulting pages in now keeps page faults out of the hot path for the first chunks. */
        size_t pre = prefault_bytes < s->arena_bytes ? prefault_bytes : s->arena_bytes;
#ifdef MADV_POPULATE_WRITE
        if (madvise(s->arena, pre, MADV_POPULATE_WRITE) != 0)
#endif
            for (size_t off = 0; off < pre; off += 4096)
                s->arena[off] = 0;
    }
    return 0;
}

void strobe__arena_unmap(strobe__session *s) {
    strobe__big_unmap(s->arena, s->arena_bytes);
}

/* ---- 1. chunk pool and queue ------------------------------------------------------------- */

static strobe__chunk *chunk_at(const strobe__session *s, uint32_t index) {
    return (strobe__chunk *)(s->arena + (size_t)index * s->chunk_bytes);
}

static uint32_t chunk_index(const strobe__session *s, const strobe__chunk *c) {
    return (uint32_t)(((const char *)c - s->arena) / s->chunk_bytes);
}

static strobe__chunk *pool_pop(strobe__stream *st) {
    strobe__session *s = st->s;
    uint64_t top = __atomic_load_n(&st->free_top, __ATOMIC_ACQUIRE);
    for (;;) {
        uint32_t i1 = (uint32_t)top;
        if (i1 == 0) return NULL;
        strobe__chunk *c = chunk_at(s, i1 - 1);
        uint64_t next = __atomic_load_n(&c->free_next, __ATOMIC_RELAXED);
        uint64_t want = (((top >> 32) + 1) << 32) | (uint32_t)next;
        if (__atomic_compare_exchange_n(&st->free_top, &top, want, 1, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            return c;
    }
}

void strobe__chunk_pool_push(strobe__stream *st, strobe__chunk *c) {
    uint64_t idx1 = (uint64_t)chunk_index(st->s, c) + 1;
    uint64_t top = __atomic_load_n(&st->free_top, __ATOMIC_RELAXED);
    for (;;) {
        __atomic_store_n(&c->free_next, (uint64_t)(uint32_t)top, __ATOMIC_RELAXED);
        uint64_t want = (((top >> 32) + 1) << 32) | idx1;
        if (__atomic_compare_exchange_n(&st->free_top, &top, want, 1, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
            return;
    }
}

static void queue_push(strobe__stream *st, strobe__chunk *c) {
    void *top = __atomic_load_n(&st->queue, __ATOMIC_RELAXED);
    do {
        c->qnext = top;
    } while (
        !__atomic_compare_exchange_n(&st->queue, &top, c, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

strobe__chunk *strobe__chunk_queue_take(strobe__stream *st) {
    strobe__chunk *c = __atomic_exchange_n(&st->queue, NULL, __ATOMIC_ACQUIRE), *fifo = NULL;
    while (c) {
        strobe__chunk *next = c->qnext;
        c->qnext = fifo;
        fifo = c;
        c = next;
    }
    return fifo;
}

/* The refill of a streaming or flight-recorder session (strobe__chunk_refill's contract): closes
 * the thread's current chunk and queues it for the background thread, then makes a recycled or
 * new chunk current. When none is free, writes a TRUNC record, marks the thread full and counts
 * the record as dropped when `counts`; a later call with the thread full resumes recording when a
 * chunk is free. Lock-free; async-signal-safe. */
static int stream_refill(strobe__tstate *t, size_t need, int counts) {
    strobe__session *s = t->sess;
    strobe__stream *st = s->stream;
    size_t cb = s->chunk_bytes;
    if (need > cb - STROBE__CHUNK_HDR - STROBE__CHUNK_RESERVE) {
        t->dropped += (uint64_t)counts;
        return 0;
    }
    strobe__chunk *c = pool_pop(st);
    if (c == NULL) {
        /* The bump allocator is only advanced while it has room, so that a thread retrying
         * from a full buffer does not push it ever further past the end. */
        uint64_t off = __atomic_load_n(&s->arena_next, __ATOMIC_RELAXED);
        while (off + cb <= s->arena_bytes) {
            if (__atomic_compare_exchange_n(&s->arena_next, &off, off + cb, 1, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED)) {
                c = (strobe__chunk *)(s->arena + off);
                break;
            }
        }
    }
    if (c == NULL) {
        if (!t->full) strobe__mark_full(t);
        t->dropped += (uint64_t)counts;
        return 0;
    }
    c->next = NULL;
    c->used = 0;
    c->qnext = NULL;
    c->owner = t;
    c->last_raw = 0;
    if (t->cur != NULL) {
        t->cur->used = (uint64_t)(t->pos - (char *)(t->cur + 1));
        t->cur->last_raw = strobe__now_raw();
        queue_push(st, t->cur);
    }
    t->first = c;
    strobe__cur_publish(t, c, (char *)(c + 1));
    t->end = (char *)c + cb - STROBE__CHUNK_RESERVE;
    if (t->full) {
        t->full = 0;
        t->slow &= (uint8_t)~STROBE__SLOW_FULL;
    }
    return 1;
}

/* ---- 3. refill --------------------------------------------------------------------------- */

void strobe__mark_full(strobe__tstate *t) {
    /* The reserve at the end of the current chunk always has room for the TRUNC record that
     * tells the collector when this thread stopped recording. */
    if (t->cur != NULL) {
        *(uint64_t *)t->pos = STROBE__REC_WORD(STROBE__REC_TRUNC, strobe__now_raw());
        strobe__pos_publish(t, t->pos + (8));
    }
    t->full = 1;
    t->slow |= STROBE__SLOW_FULL;
}

int strobe__chunk_refill(strobe__tstate *t, size_t need, int counts) {
    strobe__session *s = t->sess;
    if (s->stream != NULL) return stream_refill(t, need, counts);
    size_t cb = s->chunk_bytes;
    uint64_t off = __atomic_fetch_add(&s->arena_next, (uint64_t)cb, __ATOMIC_RELAXED);
    if (off + cb > s->arena_bytes || need > cb - STROBE__CHUNK_HDR - STROBE__CHUNK_RESERVE) {
        strobe__mark_full(t); /* the cap is reached */
        t->dropped += (uint64_t)counts;
        return 0;
    }
    strobe__chunk *c = (strobe__chunk *)(s->arena + off);
    c->next = NULL;
    c->used = 0;
    if (t->cur != NULL) {
        t->cur->used = (uint64_t)(t->pos - (char *)(t->cur + 1));
        t->cur->next = c;
    } else {
        t->first = c;
    }
    strobe__cur_publish(t, c, (char *)(c + 1));
    t->end = (char *)c + cb - STROBE__CHUNK_RESERVE;
    return 1;
}
