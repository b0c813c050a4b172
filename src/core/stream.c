/* stream.c: streaming output and the flight recorder (see stream.h): the background thread, and
 * the session's calls (start, run, finish, free). What the stream writes is stream_out.c's; the
 * flight recorder's ring and dumps are flight.c's; the symbols of streamed stacks stream_sym.c's
 * (all behind stream_internal.h).
 *
 * Contents: 1. the background thread, 2. start, finish, free. The chunk pool and queue and the
 * refill that feeds them are chunks.c's.
 *
 * Why the background thread is shaped as it is: it polls every few milliseconds instead of being
 * woken: a wake-up would put a system call into the recording thread's refill. Stop and the flight
 * signal wake it early through a futex word, not a pipe: a program that closes every descriptor (a
 * daemon) or dup2()s over a range of numbers would take a pipe away, and poll() on a closed
 * descriptor returns at once, which made the thread spin. */
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

#include "chunks.h"
#include "util/log.h"
#include "ownfd.h"
#include "ownthread.h"
#include "stream.h"
#include "stream_internal.h"
#include "strobe/error.h"
#include "trace/result_internal.h"

#define POLL_MS 5

/* ---- 1. the background thread ------------------------------------------------------------- */

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
            int rc = strobe__stream_batch(st, strobe__chunk_queue_take(st));
            if (rc && !errors_logged++)
                strobe__log(STROBE_LOG_ERROR, "stream %s: %s%s", st->path,
                            rc == STROBE_EIO && st->a.sys_errno ? strerror(st->a.sys_errno)
                                                                : strobe_strerror(rc),
                            "; later events are counted as lost");
        } else {
            /* Taken under the lock, so that a dump taking the queue meanwhile cannot put newer
             * chunks in the ring before older ones. */
            pthread_mutex_lock(&st->ring_lock);
            strobe__flight_ring_add(st, strobe__chunk_queue_take(st));
            pthread_mutex_unlock(&st->ring_lock);
            if (dump) strobe__flight_signal_dump(st);
        }
        strobe__own_work_done(STROBE__GATE_STREAM);
    }
    return NULL;
}

/* ---- 2. start, finish, free --------------------------------------------------------------- */

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
