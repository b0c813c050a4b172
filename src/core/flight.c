/* flight.c: the flight recorder (stream_internal.h, strobe_flight_dump in stream.h): a ring of
 * the newest full chunks, dumps of it while recording goes on, and the signal that asks for one.
 *
 * The dump and the result at stop reuse collect.c over the kept chunks, so a dump is written by
 * the ordinary writers (strobe_result_save, through the event-level writer interface) and has
 * every operator detail. A dump also copies each thread's current chunk up to the end of records
 * the thread published (release store), since the newest records are what a flight recorder is
 * for. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "stream.h"
#include "stream_internal.h"
#include "strobe/error.h"
#include "strobe/result.h"
#include "trace/result_internal.h"

/* The stream whose background thread a flight signal wakes (NULL: none). */
static strobe__stream *volatile signal_stream = NULL;

void strobe__flight_ring_add(strobe__stream *st, strobe__chunk *c) {
    while (c) {
        strobe__chunk *next = c->qnext;
        c->qnext = NULL;
        if (st->ring_tail)
            st->ring_tail->qnext = c;
        else
            st->ring_head = c;
        st->ring_tail = c;
        st->ring_now += st->s->chunk_bytes;
        c = next;
    }
    uint64_t max_age = 0;
    if (st->s->cfg.ring_ms) {
        strobe__clock_conv conv = strobe__clock_calibrate(st->s->start, strobe__clock_anchor_now());
        max_age = (uint64_t)((double)st->s->cfg.ring_ms * 1e6 / conv.ns_per_tick);
    }
    uint64_t now = strobe__now_raw();
    while (st->ring_head &&
           (st->ring_now > st->ring_cap || (max_age && now - st->ring_head->last_raw > max_age &&
                                            now > st->ring_head->last_raw))) {
        strobe__chunk *old = st->ring_head;
        st->ring_head = old->qnext;
        if (st->ring_head == NULL) st->ring_tail = NULL;
        st->ring_now -= st->s->chunk_bytes;
        st->ring_recycled++;
        strobe__chunk_pool_push(st, old);
    }
}

/* Links the ring's chunks of thread `owner` through their `next` fields, oldest first, and
 * returns the first; *tail gets the last (NULL when the ring holds none). Under ring_lock. */
static strobe__chunk *ring_chain(strobe__stream *st, const strobe__tstate *owner,
                                 strobe__chunk **tail) {
    strobe__chunk *first = NULL, *last = NULL;
    for (strobe__chunk *c = st->ring_head; c; c = c->qnext) {
        if (c->owner != owner) continue;
        c->next = NULL;
        if (last)
            last->next = c;
        else
            first = c;
        last = c;
    }
    *tail = last;
    return first;
}

/* A copy of the records a thread has written into its current chunk so far (the chunk it has not
 * handed over yet): its current chunk and end of records, read with acquire loads until both agree
 * (a refill in between changes them), then the bytes before that end, which the thread published
 * with release stores and never rewrites. The chunk cannot be recycled meanwhile: that takes
 * ring_lock, which the caller holds. @return the copy (`used` set, `qnext` the original), or NULL
 * when the thread has no records there (or no memory: the dump then lacks them). */
static strobe__chunk *snapshot_current(strobe__session *s, strobe__tstate *t) {
    strobe__chunk *c = NULL;
    char *pos = NULL;
    for (int tries = 0; tries < 1000; tries++) {
        c = __atomic_load_n(&t->cur, __ATOMIC_ACQUIRE);
        pos = __atomic_load_n(&t->pos, __ATOMIC_ACQUIRE);
        if (c == NULL) return NULL;
        if (__atomic_load_n(&t->cur, __ATOMIC_ACQUIRE) == c && pos >= (char *)(c + 1) &&
            pos <= (char *)c + s->chunk_bytes)
            break;
        c = NULL;
    }
    if (c == NULL || pos == (char *)(c + 1)) return NULL;
    size_t used = (size_t)(pos - (char *)(c + 1));
    strobe__chunk *copy = malloc(sizeof *copy + used);
    if (copy == NULL) return NULL;
    memset(copy, 0, sizeof *copy);
    memcpy(copy + 1, c + 1, used);
    copy->used = used;
    copy->owner = t;
    copy->qnext = c; /* the original, to tell whether it was handed over since */
    return copy;
}

int strobe__flight_dump(strobe__session *s, const char *path) {
    strobe__stream *st = s->stream;
    if (st == NULL || st->mode != MODE_RING) return STROBE_ENOSESSION;
    strobe_result *r = strobe__result_alloc();
    if (r == NULL) return STROBE_ENOMEM;
    /* A session of stand-in threads whose chunk lists are the ring's: collect.c reads only the
     * fields set here. The live threads keep writing their current chunks meanwhile. */
    strobe__session fake;
    memset(&fake, 0, sizeof fake);
    fake.cfg = s->cfg;
    fake.perf = s->perf;
    fake.arena_bytes = s->arena_bytes;
    fake.chunk_bytes = s->chunk_bytes;
    fake.stream = st;
    int rc = 0;
    pthread_mutex_lock(&st->ring_lock);
    size_t n = 0;
    int was_busy = strobe__registry_lock_cold();
    for (strobe__tstate *t = s->threads; t; t = t->sess_next)
        n++;
    strobe__tstate *fakes = calloc(n ? n : 1, sizeof *fakes);
    strobe__tstate **order = calloc(n ? n : 1, sizeof *order);
    if (fakes == NULL || order == NULL) {
        rc = STROBE_ENOMEM;
    } else {
        size_t i = 0;
        for (strobe__tstate *t = s->threads; t; t = t->sess_next)
            order[i++] = t;
        /* Stand-ins in the session list's order (newest first), as collect expects. */
        for (i = 0; i < n; i++) {
            strobe__tstate *f = &fakes[i];
            f->tid = order[i]->tid;
            memcpy(f->name, order[i]->name, sizeof f->name);
            f->sess_next = i + 1 < n ? &fakes[i + 1] : NULL;
        }
        fake.threads = n ? &fakes[0] : NULL;
    }
    /* Each thread's current chunk, as far as it is written: the newest records of all, which a
     * flight recorder is for (an exited thread's is final). Taken under the registry lock, so
     * that no thread attaches or resets its state meanwhile. */
    strobe__chunk **copies = rc == 0 ? calloc(n ? n : 1, sizeof *copies) : NULL;
    if (rc == 0 && copies == NULL) rc = STROBE_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++)
        copies[i] = snapshot_current(s, order[i]);
    strobe__registry_unlock_cold(was_busy);
    if (rc == 0) {
        /* The chunks closed since the background thread last looked belong to the window; taken
         * after the copies, so that a chunk handed over while they were taken is in the ring,
         * whole, and the copy of its beginning is dropped. */
        strobe__flight_ring_add(st, strobe__chunk_queue_take(st));
        for (size_t i = 0; i < n; i++) {
            strobe__chunk *tail;
            fakes[i].first = ring_chain(st, order[i], &tail);
            strobe__chunk *copy = copies[i];
            for (strobe__chunk *c = fakes[i].first; c && copy; c = c->next)
                if (c == copy->qnext) {
                    free(copy);
                    copy = copies[i] = NULL;
                }
            if (copy == NULL) continue;
            copy->qnext = NULL;
            copy->next = NULL;
            if (tail)
                tail->next = copy;
            else
                fakes[i].first = copy;
        }
        strobe__clock_anchor now = strobe__clock_anchor_now();
        strobe__clock_conv conv = strobe__clock_calibrate(s->start, now);
        int64_t now_ns = strobe__clock_to_ns(&conv, now.raw);
        r->trace_start_ns = s->start.real_ns;
        r->trace_end_ns = now_ns;
        r->clock_source = strobe__clock_is_tsc ? "tsc" : "clock_monotonic";
        r->clock_ns_per_tick = conv.ns_per_tick;
        r->trace_id = strobe__pool_strdup(&r->pool, s->result ? s->result->trace_id : "");
        if (r->trace_id == NULL) rc = STROBE_ENOMEM;
        if (rc == 0) rc = strobe__collect(&fake, &conv, now_ns, r);
    }
    pthread_mutex_unlock(&st->ring_lock);
    for (size_t i = 0; copies && i < n; i++)
        free(copies[i]);
    free(copies);
    free(fakes);
    free(order);
    if (rc == 0) {
        rc = strobe_result_save(r, path);
        if (rc != 0 && rc != STROBE_ENOMEM) rc = STROBE_EIO;
    }
    strobe_result_free(r);
    return rc;
}

static void on_signal(int sig) {
    (void)sig;
    int saved = errno;
    strobe__stream *st = signal_stream;
    if (st != NULL) strobe__stream_wake(st, 1);
    errno = saved;
}

/* A signal's dump: to a temporary file, then renamed over flight_path, so that the file is
 * always a whole trace. */
void strobe__flight_signal_dump(strobe__stream *st) {
    size_t n = strlen(st->flight_path);
    char *tmp = malloc(n + 32);
    if (tmp == NULL) {
        st->dump_errors++;
        return;
    }
    /* The writers choose the format by suffix: the temporary name keeps it. */
    const char *dot = strrchr(st->flight_path, '.');
    const char *slash = strrchr(st->flight_path, '/');
    if (dot == NULL || (slash && dot < slash)) dot = st->flight_path + n;
    snprintf(tmp, n + 32, "%.*s.tmp%d%s", (int)(dot - st->flight_path), st->flight_path,
             (int)getpid(), dot);
    int rc = strobe__flight_dump(st->s, tmp);
    if (rc == 0 && rename(tmp, st->flight_path) != 0) rc = STROBE_EIO;
    if (rc) {
        unlink(tmp);
        st->dump_errors++;
        strobe__log(STROBE_LOG_WARN, "flight recorder: dump to %s failed (%s)", st->flight_path,
                    strobe_strerror(rc));
    } else {
        st->dumps++;
    }
    free(tmp);
}

int strobe__flight_setup(strobe__stream *st) {
    strobe__session *s = st->s;
    const strobe_config *cfg = &s->cfg;
    st->ring_cap = cfg->ring_bytes ? cfg->ring_bytes : s->arena_bytes / 2;
    if (st->ring_cap < s->chunk_bytes) st->ring_cap = s->chunk_bytes;
    char def[64];
    snprintf(def, sizeof def, "strobe_flight_%d.json", (int)s->pid);
    st->flight_path = strdup(cfg->flight_path ? cfg->flight_path : def);
    if (st->flight_path == NULL) return STROBE_ENOMEM;
    if (cfg->flight_signal) {
        signal_stream = st;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(cfg->flight_signal, &sa, &st->old_action) != 0) {
            signal_stream = NULL;
            return STROBE_ESYS;
        }
        st->sig = cfg->flight_signal;
    }
    return 0;
}

void strobe__flight_release(strobe__stream *st) {
    if (st->sig) {
        sigaction(st->sig, &st->old_action, NULL);
        signal_stream = NULL;
        st->sig = 0;
    }
}

void strobe__flight_finish(strobe__stream *st) {
    strobe__chunk *batch = strobe__chunk_queue_take(st);
    pthread_mutex_lock(&st->ring_lock);
    strobe__flight_ring_add(st, batch);
    for (strobe__tstate *t = st->s->threads; t; t = t->sess_next) {
        strobe__chunk *tail;
        strobe__chunk *first = ring_chain(st, t, &tail);
        if (first == NULL) continue;
        tail->next = t->cur;
        t->first = first;
        if (t->cur == NULL) {
            /* collect measures the current chunk by pos: the last kept chunk stands in. */
            t->cur = tail;
            t->pos = (char *)(tail + 1) + tail->used;
        }
    }
    pthread_mutex_unlock(&st->ring_lock);
}
