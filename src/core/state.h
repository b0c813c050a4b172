/* state.h: the process-wide and per-thread state shared by the hot path (hotpath.c), thread
 * registration (thread.c), the session (session.c) and collection at stop (collect.c).
 *
 * Who writes what:
 * - A thread's hot fields (pos, end, busy, full, filter stack, correlation ids) are written only by
 *   that thread (and read by the stopper after quiescence).
 * - gen / sess_gen and the chunk list are set by the owning thread when it attaches to a session,
 *   under the registry lock.
 * - The session's thread list and the registry list are changed under the registry lock. */
#ifndef STROBE_STATE_H
#define STROBE_STATE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "clock.h"
#include "perf.h"
#include "hooks.h"
#include "util/log.h"
#include "record.h"
#include "strobe/session.h"

/* A chunk of a thread's buffer: header, then records. `used` is set when the chunk is closed; the
 * thread's current chunk is measured by its pos at stop. The fields after `used` serve streaming
 * and the flight recorder (stream.c), which hand full chunks to a background thread and recycle
 * them: they are written by the owning thread when it closes the chunk, before the chunk is
 * published. */
typedef struct strobe__chunk {
    struct strobe__chunk *next;
    uint64_t used;
    struct strobe__chunk *qnext;  /* link in the stream's queue or the flight recorder's ring */
    struct strobe__tstate *owner; /* the thread that wrote the chunk */
    uint64_t last_raw;            /* raw time at which the chunk was closed */
    uint64_t free_next;           /* atomic: index + 1 of the next chunk in the free pool */
} strobe__chunk;
#define STROBE__CHUNK_HDR sizeof(strobe__chunk)
/* Bytes kept free at the end of every chunk for a TRUNC record. */
#define STROBE__CHUNK_RESERVE 8u

#define STROBE__CORR_DEPTH 64
#define STROBE__FILTER_DEPTH 256

typedef struct strobe__tstate {
    /* Hot: written by the owning thread on every record. */
    char *pos;         /* next record; written only by the thread, with strobe__pos_publish */
    char *end;         /* end of the current chunk, less the reserve */
    uint32_t gen;      /* session generation this thread records for; 0: none */
    uint32_t busy;     /* atomic: 1 while a record is being written, 2 while the thread holds the
                          registry lock in a cold-path call (strobe__registry_lock_cold); a signal
                          handler's records are dropped while it is set, stop waits only for 1 */
    uint8_t full;      /* the session's buffer cap was reached: drop everything */
    uint8_t filtering; /* the session keeps a subset of scopes: track raw begins */
    uint8_t slow;      /* STROBE__SLOW_* bits: the fast path does not apply */
    uint8_t pad_;
    uint32_t scopes;    /* the session's kept scopes */
    uint64_t corr_ext;  /* current external correlation id */
    uint64_t corr_user; /* current user correlation id */
    uint32_t filter_depth;
    uint64_t
        filter_bits[STROBE__FILTER_DEPTH / 64]; /* 1: the raw begin at that depth was skipped */

    /* Per-session counters, reset when the thread attaches. */
    uint64_t dropped;
    uint64_t signal_dropped;
    uint64_t truncated_names;
    uint64_t reversed_backend; /* backend events recorded with end < start */
    uint64_t scope_overflow;
    uint64_t corr_overflow;
    uint64_t truncated_details;

    /* Operator details of the session (with_stack, perf_events). */
    int stack_depth;                /* frames per stack; 0: no stacks */
    uintptr_t stack_lo, stack_hi;   /* the thread's stack bounds; 0, 0: unknown */
    int perf_n;                     /* counters open on this thread (0: none) */
    int perf_fds[STROBE__PERF_MAX]; /* perf_fds[0] leads the group */
    int perf_failed;                /* opening the counters failed on this thread (its errno) */

    /* Session data. */
    uint32_t sess_gen;            /* session whose chunks this thread holds; 0: none */
    uint32_t denied_gen;          /* session in which this thread must not record */
    uint32_t optin_gen;           /* session this thread opted into (per-thread mode) */
    struct strobe__session *sess; /* session sess_gen (valid while it records or stops) */
    strobe__chunk *first;         /* chunk list of session sess_gen */
    strobe__chunk *cur;
    struct strobe__tstate *sess_next; /* the session's thread list */

    /* Correlation stacks (persist across sessions). */
    uint32_t corr_ext_depth, corr_user_depth;
    uint64_t corr_ext_stack[STROBE__CORR_DEPTH];
    uint64_t corr_user_stack[STROBE__CORR_DEPTH];

    /* Identity. */
    int64_t tid;
    char name[64];
    int user_named; /* name set by strobe_set_thread_name() */
    int exited; /* the thread has exited: written under the registry lock with atomic stores, read
                 * atomically where the lock is not held (collect.c) */
    struct strobe__tstate *all_next; /* the registry list */
} strobe__tstate;

typedef struct strobe__session {
    uint32_t gen;
    int recording;   /* under the registry lock: attach is allowed */
    int window_open; /* under the session lock: recording began (strobe_start or
                        strobe_start_prepared) */
    pid_t pid;
    strobe_config cfg;
    strobe__tstate *starter;
    strobe__tstate *threads; /* attached threads, via sess_next */

    /* The buffer arena: one reserved mapping, handed out in chunks by an atomic bump. */
    char *arena;
    size_t arena_bytes;
    size_t chunk_bytes;
    uint64_t arena_next; /* atomic: offset of the next free chunk */
    /* Set by stop when no thread can write into the arena any more and no stream recycles its
     * chunks: collect may hand the arena's pages back as it decodes them. */
    int arena_releasable;

    strobe__clock_anchor start;
    int features;          /* STROBE__ACTIVE_* bits of strobe__active (op.h) */
    strobe__perf_set perf; /* the perf events every thread opens */
    /* Device backends tracing in this session (device.h). */
    const struct strobe__device_backend *dev[4];
    int dev_count;
    /* The session's result, made at start: trace id and name, metadata and warnings go into it
     * as they come; stop adds the events and hands it over. */
    struct strobe_result *result;
    /* CPU sampling (sample.c, config.cpu_sample_hz); NULL: off, or refused. */
    struct strobe__sampler *sampler;
    /* Streaming or flight recorder (stream.c); NULL when the session keeps every chunk. */
    struct strobe__stream *stream;
    /* ProfilerStep ranges (strobe__session_step), under the session lock: those closed, and the
     * open one. Kept apart from the threads' records, so that no range a thread has open pairs
     * with a step's end. */
    struct strobe__step_range {
        uint64_t number, start_raw, end_raw;
        int64_t tid; /* the thread whose strobe_step() opened it */
    } * steps;
    size_t step_count, step_cap;
    int step_open;
    uint64_t step_open_number, step_open_raw;
    int64_t step_open_tid;
    uint64_t steps_lost; /* closed steps not kept (out of memory) */
} strobe__session;

/* Reasons a record cannot take the hot path's fast path (bits of strobe__tstate.slow). */
#define STROBE__SLOW_FULL 1u   /* buffer cap reached */
#define STROBE__SLOW_FILTER 2u /* scope filtering: raw begins and ends use the filter stack */
#define STROBE__SLOW_CORR 4u   /* a correlation id is current: begins write a CORR record */
#define STROBE__SLOW_STACK 8u  /* with_stack: begins capture a stack */
#define STROBE__SLOW_PERF 16u  /* perf events: begins and ends read the counters */

/* A scoped range's token for a begin that scope filtering skipped (ORed with the generation):
 * its end must still pop the filter stack. Generations stay below this bit. */
#define STROBE__TOKEN_FILTERED 0x80000000u
/* A scoped range's token for a begin that markers took (src/markers, core/hooks.h), ORed with the
 * generation (or alone, with no session): its end goes to the markers too. Generations stay
 * below this bit. */
#define STROBE__TOKEN_MARKED 0x40000000u

/* Internal globals are hidden: the hot path reaches them without a GOT load. */
#define STROBE__HIDDEN __attribute__((visibility("hidden")))

/* t->gen of a thread that records for no session (never equal to strobe__gen). */
#define STROBE__GEN_NONE UINT32_MAX

/* The calling thread's state (NULL until its first strobe call). */
extern STROBE__HIDDEN __thread strobe__tstate *strobe__tls;

/* Process-wide state. */
extern STROBE__HIDDEN pthread_mutex_t strobe__registry_lock;
extern STROBE__HIDDEN strobe__session *strobe__current; /* under strobe__registry_lock */
extern STROBE__HIDDEN uint32_t
    strobe__gen; /* atomic: generation of the recording session; 0 none */

/* Epoch ns minus CLOCK_MONOTONIC ns at the start of the latest session (0: none yet): the offset
 * that puts monotonic readings on session times (strobe_clock_now_ns). */
extern STROBE__HIDDEN int64_t strobe__epoch_offset_ns;

/* The device backend that takes strobe_push_correlation_id()'s ids as its external correlation
 * (atomic; NULL: none traces). */
extern STROBE__HIDDEN const struct strobe__device_backend *strobe__ext_backend;

/* thread.c */
/* Returns the calling thread's state, creating and registering it on first use (allocates; not
 * async-signal-safe). NULL when out of memory. */
strobe__tstate *strobe__tstate_get(void);
/* Attaches the calling thread to the recording session if it may record. Called with t->busy set.
 * @return 1 when the thread now records (t->gen == strobe__gen), else 0. */
int strobe__tstate_attach(strobe__tstate *t);
/* The registry lock, taken by cold-path code on a thread that may record from a signal handler
 * (every caller but the hot path's attach, which runs with busy set already): the calling thread
 * is marked busy while it holds the lock, so that a handler interrupting it there drops its
 * records (counted in signal_dropped) instead of attaching the thread, which takes the lock again
 * and would wait for itself forever. The flag is 2 then, which stop's quiescence does not wait for
 * (no record is being written). Returns what unlock needs: the thread's busy flag before. */
int strobe__registry_lock_cold(void);
/* Records dropped by signal handlers that interrupted such a call while a session recorded
 * (atomic); strobe_stop() adds them to the session's stats.signal_dropped. */
extern STROBE__HIDDEN uint64_t strobe__cold_signal_dropped;
void strobe__registry_unlock_cold(int was_busy);
/* Frees the states of threads that exited and hold no session data. Under the registry lock. */
void strobe__registry_sweep(void);
/* Marks every state except the caller's as exited (in a child after fork). */
void strobe__registry_after_fork_child(void);

/* chunks.c: strobe__chunk_refill() and strobe__mark_full() are in chunks.h. */

/* Records a backend event (backend.c's entry point; times already on the session's clock). */
void strobe__backend_record(int64_t start_ns, int64_t end_ns, int64_t debug_handle,
                            const char *event_name, const char *backend_name);

/* session.c: strobe__config_in() and strobe__session_step() are in hooks.h (the drivers use them).
 */

/* collect.c */
struct strobe_result;
/* Builds the result from the session's quiesced threads. @return 0 or STROBE_ENOMEM. */
int strobe__collect(strobe__session *s, const strobe__clock_conv *conv, int64_t stop_ns,
                    struct strobe_result *r);

/* Moves the end of the thread's records. A release store: the records before `p` are complete
 * for whoever reads pos with an acquire load (the flight recorder's dump reads a live thread's
 * current chunk that way). On x86 it is the same plain store. */
static inline void strobe__pos_publish(strobe__tstate *t, char *p) {
    __atomic_store_n(&t->pos, p, __ATOMIC_RELEASE);
}

/* Makes `c` the thread's current chunk and `p` its end of records (see strobe__pos_publish). */
static inline void strobe__cur_publish(strobe__tstate *t, strobe__chunk *c, char *p) {
    __atomic_store_n(&t->cur, c, __ATOMIC_RELEASE);
    __atomic_store_n(&t->pos, p, __ATOMIC_RELEASE);
}

#endif
