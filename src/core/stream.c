/* stream.c: streaming output and the flight recorder (see stream.h): the chunk pool and queue,
 * the background thread, and the session's calls (start, run, finish, free). What the stream
 * writes is stream_out.c's; the flight recorder's ring and dumps are flight.c's; the symbols of
 * streamed stacks stream_sym.c's (all behind stream_internal.h).
 *
 * Contents: 1. chunk pool and queue (lock-free), 2. refill, 3. the background thread, 4. start,
 * finish, free.
 *
 * Why the pieces are shaped as they are:
 * - The free pool is a stack of chunk indexes with a tag in the head word, so that a pop that
 *   raced with a pop and a push (ABA) fails its compare-and-swap. Only the background thread (or
 *   stop) pushes; any recording thread pops. The queue of full chunks is a plain lock-free stack
 *   that the background thread empties at once and reverses: every thread pushes its own chunks
 *   in order, so the reversed batch keeps each thread's order.
 * - The background thread polls every few milliseconds instead of being woken: a wake-up would
 *   put a system call into the recording thread's refill. Stop and the flight signal wake it
 *   early through a futex word, not a pipe: a program that closes every descriptor (a daemon) or
 *   dup2()s over a range of numbers would take a pipe away, and poll() on a closed descriptor
 *   returns at once, which made the thread spin. */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "ownfd.h"
#include "ownthread.h"
#include "stream.h"
#include "stream_internal.h"
#include "strobe/error.h"
#include "trace/result_internal.h"

#define POLL_MS 5

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

void strobe__stream_pool_push(strobe__stream *st, strobe__chunk *c) {
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

strobe__chunk *strobe__stream_queue_take(strobe__stream *st) {
    strobe__chunk *c = __atomic_exchange_n(&st->queue, NULL, __ATOMIC_ACQUIRE), *fifo = NULL;
    while (c) {
        strobe__chunk *next = c->qnext;
        c->qnext = fifo;
        fifo = c;
        c = next;
    }
    return fifo;
}

/* ---- 2. refill --------------------------------------------------------------------------- */

int strobe__stream_refill(strobe__tstate *t, size_t need, int counts) {
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

/* ---- 3. the background thread ------------------------------------------------------------- */

void strobe__stream_wake(strobe__stream *st, int dump) {
    __atomic_fetch_or(&st->wake, STROBE__WAKE | (dump ? STROBE__WAKE_DUMP : 0u), __ATOMIC_RELEASE);
    (void)syscall(SYS_futex, &st->wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Waits up to POLL_MS for a wake-up. @return the wake-up bits taken (0: the time passed). */
static uint32_t wait_wake(strobe__stream *st) {
    if (__atomic_load_n(&st->wake, __ATOMIC_ACQUIRE) == 0) {
        struct timespec ts = {0, POLL_MS * 1000000L};
        (void)syscall(SYS_futex, &st->wake, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
    }
    return __atomic_exchange_n(&st->wake, 0, __ATOMIC_ACQ_REL);
}

static void *stream_main(void *arg) {
    strobe__stream *st = arg;
    strobe__own_thread_enter("strobe_stream"); /* left out of the CPU samples */
    strobe__own_thread_ready(&st->thread_ready);
    /* This thread records nothing, and its signals belong to the program's threads. */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    int errors_logged = 0;
    /* The writer yields the CPU to the program's threads where they compete for one (nice +10:
     * about a tenth of a contended core), so that what it costs shows less in what is measured; a
     * writer that falls behind leaves chunks queued, and a full buffer's drops are counted. */
    errno = 0;
    int prio = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    if (errno == 0 && prio < 19)
        (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), prio + 10 > 19 ? 19 : prio + 10);
    for (;;) {
        int dump = (wait_wake(st) & STROBE__WAKE_DUMP) != 0;
        int quit = __atomic_load_n(&st->quit, __ATOMIC_ACQUIRE);
        if (quit) break; /* stop takes the last chunks itself */
        /* A fork under way: the chunks wait for the next round (the fork gate, ownthread.h). */
        if (!strobe__own_work_try(STROBE__GATE_STREAM)) {
            /* A dump asked for meanwhile is kept for the next round, 1 ms on. */
            if (dump) __atomic_fetch_or(&st->wake, STROBE__WAKE_DUMP, __ATOMIC_RELEASE);
            struct timespec ms = {0, 1000000L};
            nanosleep(&ms, NULL);
            continue;
        }
        if (st->mode == MODE_STREAM) {
            int rc = strobe__stream_batch(st, strobe__stream_queue_take(st));
            if (rc && !errors_logged++)
                strobe__log(STROBE_LOG_ERROR, "stream %s: %s%s", st->path,
                            rc == STROBE_EIO && st->a.sys_errno ? strerror(st->a.sys_errno)
                                                                : strobe_strerror(rc),
                            "; later events are counted as lost");
        } else {
            /* Taken under the lock, so that a dump taking the queue meanwhile cannot put newer
             * chunks in the ring before older ones. */
            pthread_mutex_lock(&st->ring_lock);
            strobe__flight_ring_add(st, strobe__stream_queue_take(st));
            pthread_mutex_unlock(&st->ring_lock);
            if (dump) strobe__flight_signal_dump(st);
        }
        strobe__own_work_done(STROBE__GATE_STREAM);
    }
    return NULL;
}

/* ---- 4. start, finish, free --------------------------------------------------------------- */

int strobe__stream_check_config(const strobe_config *cfg) {
    int ring = cfg->ring_bytes != 0 || cfg->ring_ms != 0;
    if (cfg->stream_path != NULL) {
        if (cfg->stream_path[0] == '\0' || ring) return STROBE_EINVAL;
    }
    if (cfg->stream_max_bytes != 0 && cfg->stream_path == NULL) return STROBE_EINVAL;
    if (ring && cfg->ring_bytes > cfg->buffer_bytes) return STROBE_EINVAL;
    if (ring && cfg->ring_bytes != 0 && cfg->ring_bytes < cfg->chunk_bytes) return STROBE_EINVAL;
    if (cfg->flight_signal != 0) {
        if (!ring || cfg->flight_signal < 1 || cfg->flight_signal >= NSIG ||
            cfg->flight_signal == SIGKILL || cfg->flight_signal == SIGSTOP)
            return STROBE_EINVAL;
    }
    return 0;
}

static void stream_release(strobe__stream *st) {
    if (st == NULL) return;
    strobe__flight_release(st);
    /* Closed only while it still is the stream's file: the program may own the number now. */
    if (st->a.fd >= 0 && strobe__fd_is(st->a.fd, st->file_dev, st->file_ino)) close(st->a.fd);
    strobe__stream_out_release(st);
    strobe__append_free(&st->a);
    free(st->path);
    free(st->flight_path);
    pthread_mutex_destroy(&st->ring_lock);
    free(st);
}

int strobe__stream_start(strobe__session *s) {
    const strobe_config *cfg = &s->cfg;
    int ring = cfg->ring_bytes != 0 || cfg->ring_ms != 0;
    if (cfg->stream_path == NULL && !ring) return 0;
    strobe__stream *st = calloc(1, sizeof *st);
    if (st == NULL) return STROBE_ENOMEM;
    st->s = s;
    st->mode = ring ? MODE_RING : MODE_STREAM;
    strobe__stream_out_init(st);
    st->a.fd = -1;
    st->max_bytes = cfg->stream_max_bytes;
    pthread_mutex_init(&st->ring_lock, NULL);
    int rc = 0;
    if (st->mode == MODE_STREAM) {
        st->path = strdup(cfg->stream_path);
        if (st->path == NULL) rc = STROBE_ENOMEM;
        if (rc == 0) {
            /* Out of the program's way, and known by its identity from now on. */
            st->a.fd = strobe__fd_open(st->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (st->a.fd < 0 || strobe__fd_identity(st->a.fd, &st->file_dev, &st->file_ino)) {
                strobe__log(STROBE_LOG_ERROR, "stream %s: %s", st->path, strerror(errno));
                rc = STROBE_EIO;
            }
        }
        if (rc == 0) rc = strobe__stream_out_open(st);
    }
    if (rc == 0 && st->mode == MODE_RING) rc = strobe__flight_setup(st);
    if (rc) {
        stream_release(st);
        return rc;
    }
    s->stream = st;
    return 0;
}

int strobe__stream_run(strobe__session *s) {
    strobe__stream *st = s->stream;
    if (st == NULL || st->thread_started) return 0;
    if (st->mode == MODE_STREAM) {
        int rc = strobe__stream_header(st);
        if (rc) {
            /* The system's reason (a full disk: ENOSPC), which the error code alone loses. */
            strobe__log(STROBE_LOG_ERROR, "stream %s: writing the header: %s", st->path,
                        rc == STROBE_EIO && st->a.sys_errno ? strerror(st->a.sys_errno)
                                                            : strobe_strerror(rc));
            return rc;
        }
    }
    st->thread_ready = 0;
    if (pthread_create(&st->thread, NULL, stream_main, st) != 0) return STROBE_ESYS;
    strobe__own_thread_wait(&st->thread_ready, 2000); /* see strobe__own_thread_wait */
    st->thread_started = 1;
    return 0;
}

static void stop_thread(strobe__stream *st) {
    if (!st->thread_started) return;
    if (st->s->pid != getpid()) {
        /* A session inherited through fork(): the background thread stayed in the parent. */
        st->thread_started = 0;
        return;
    }
    __atomic_store_n(&st->quit, 1, __ATOMIC_RELEASE);
    strobe__stream_wake(st, 0);
    pthread_join(st->thread, NULL);
    st->thread_started = 0;
}

int strobe__stream_finish(strobe__session *s, const strobe__clock_conv *conv, int64_t stop_ns) {
    strobe__stream *st = s->stream;
    if (st == NULL) return 0;
    stop_thread(st);
    if (st->mode == MODE_RING) {
        strobe__flight_finish(st);
        return 0;
    }
    return strobe__stream_out_finish(st, conv, stop_ns);
}

void strobe__stream_add_stats(strobe__session *s, strobe_result *r) {
    strobe__stream *st = s->stream;
    if (st == NULL || r == NULL) return;
    uint64_t used = __atomic_load_n(&s->arena_next, __ATOMIC_RELAXED);
    r->stats.buffer_bytes_used = used < s->arena_bytes ? used : s->arena_bytes;
    r->stats.buffer_bytes_cap = s->arena_bytes;
    if (st->mode == MODE_STREAM) {
        r->stats.unmatched_ends += st->unmatched;
        r->stats.truncated_ranges += st->truncated;
        r->stats.unfinished_ranges += st->unfinished;
        r->stats.orphan_details += st->dec.orphan_details;
        r->stats.unmatched_module_pops += st->dec.unmatched_module_pops;
        r->stats.clipped_backend_events += st->clipped_backend;
    }
    strobe__stream_meta(st, r);
}

void strobe__stream_free(strobe__session *s) {
    if (s->stream == NULL) return;
    stop_thread(s->stream);
    stream_release(s->stream);
    s->stream = NULL;
}
