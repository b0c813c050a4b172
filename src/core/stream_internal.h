/* stream_internal.h: what the streaming output's files share (core-internal): the stream's
 * state, and the calls between the lifecycle and chunk pool (stream.c), the writing of the
 * decoder's events (stream_out.c), the symbols of stacks (stream_sym.c) and the flight recorder
 * (flight.c). */
#ifndef STROBE_STREAM_INTERNAL_H
#define STROBE_STREAM_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "chunks.h"
#include "decode.h"
#include "details.h"
#include "state.h"
#include "trace/sink.h"
#include "trace/writer.h"
#include "util/u64map.h"

enum { MODE_STREAM = 1, MODE_RING = 2 };

/* The symbols of the return addresses seen so far (stream_sym.c). */
typedef struct strobe__stream_syms {
    strobe__u64map map; /* pc -> index in names + 1 */
    char **names;
    size_t count, cap;
    uint64_t *want; /* addresses to symbolize before the batch is decoded */
    size_t want_count, want_cap;
} strobe__stream_syms;

/* Notes the return addresses of a chunk's stacks that have no symbol yet. @return 0 or
 * STROBE_ENOMEM. */
int strobe__stream_syms_scan(strobe__stream_syms *y, const char *p, size_t used);
/* Symbolizes the addresses noted, all in one call (one addr2line run per module): a long session
 * looks up each address once, in the batch where it first appears. @return 0 or STROBE_ENOMEM. */
int strobe__stream_syms_resolve(strobe__stream_syms *y);
/* The symbol of a return address seen before (NULL: not yet symbolized). */
const char *strobe__stream_syms_get(const strobe__stream_syms *y, uint64_t pc);
void strobe__stream_syms_free(strobe__stream_syms *y);

/* Backend event tracks: each backend gets up to BACKEND_LANES tracks ("lanes"); an event that
 * cannot nest on a lane among the events already written there goes on the next. */
#define BACKEND_LANES 4
/* Backend events are held this long after they start before they are written, so that an outer
 * event reported after its inner ones (a delegate reports each when it ends) is still sorted
 * before them. */
#define BACKEND_HOLD_NS INT64_C(1000000000)
/* Backend tracks' tids: above any the kernel hands out, as collect.c makes them. */
#define BACKEND_TID_BASE INT64_C(0x7fff0000)

/* One range open on a thread: its name is the site's (static) or copied into the thread's name
 * stack; its operator details wait in the thread's args buffer until it ends. */
typedef struct open_rng {
    int64_t start;
    const char *site_name; /* NULL: names[name_off .. name_off + name_len) */
    uint32_t name_off, name_len;
    uint32_t args_off; /* its args: h->args from here to the end (details go to the innermost) */
    uint8_t scope;
    uint64_t ext, user;
    /* torch's "Sequence number" (-1: none) and "Fwd thread id" (0: a forward op). */
    int64_t seq;
    uint64_t fwd_tid;
} open_rng;

/* The forward ops that a backward op may link to with a "fwdbwd" flow: a slot per
 * (torch thread, sequence number), hashed, the latest forward op to start of that key. */
#define FWDBWD_SLOTS ((size_t)1 << 16)
typedef struct fwd_slot {
    uint64_t key; /* 0: free (or linked already) */
    int64_t ts;   /* the forward op's start */
    uint32_t track;
    uint64_t id; /* Perfetto: the flow id its slice's begin carries */
} fwd_slot;

/* The decoder's state of one thread. */
typedef struct thr {
    const strobe__tstate *key;
    int64_t tid;
    uint32_t track;        /* its track in the writer */
    strobe__dec_thread dt; /* the decoder's state of the thread (dt.prev: the last time) */
    open_rng *open;
    size_t depth, cap;
    strobe__buf names; /* copied names of open ranges, each followed by its NUL */
    /* The open ranges' args, one entry after another: a live byte ('1'; '0' once replaced), the
     * key and the value's JSON text, each NUL-terminated. */
    strobe__buf args;
} thr;

/* A backend event waiting for the end of its batch (names in the stream's bk_names). */
typedef struct bk_event {
    int64_t start, end, handle;
    size_t name_off, backend_off;
} bk_event;

/* A backend's lanes. */
typedef struct bk_track {
    char *backend;
    struct bk_lane {
        int64_t tid;
        uint32_t track;   /* its track in the writer */
        int64_t last;     /* the latest start written on it */
        int64_t ends[64]; /* the written events still open at `last`, outermost first */
        size_t depth;
    } lane[BACKEND_LANES];
    int lanes;
} bk_track;

typedef struct strobe__stream {
    strobe__session *s;
    int mode;
    char *path, *flight_path;
    /* The output: the format's writer, called with STREAMING into a view of the append sink's
     * buffer (trace/sink.h), where each event is committed as one piece, its end marked. */
    const strobe__writer_ops *fmt;
    strobe__writer *wr;
    strobe__sink ms;
    strobe__append a;
    /* The file's identity (device, inode), checked before each append: a descriptor the program
     * closed or reused is never written through; the file is opened again by its path instead
     * (`reopens`), or, where that fails, the rest is counted lost (`fd_lost`; stop tries once
     * more; `fd_was_lost` stays). */
    uint64_t file_dev, file_ino;
    uint64_t reopens;
    int fd_lost, fd_was_lost;
    /* config.stream_max_bytes (0: none); `capped` once an append met it, with the events left out
     * for it in `capped_events` (also in a.lost). `nocap`: the header and the closing part at stop
     * are written whatever the cap. */
    uint64_t max_bytes, capped_events;
    int capped, nocap;
    /* The bytes the writer holds back (its ops' held) at the last emit, and the ends of the
     * events in them (offsets from their start), marked when they reach the buffer. */
    size_t held_len;
    strobe__append_boundary *held_marks;
    size_t held_count, held_cap;
    uint64_t held_events;
    int64_t pid;
    pthread_t thread;
    int thread_started;
    uint32_t thread_ready; /* the writer has started (strobe__own_thread_ready) */
    int quit;              /* atomic */
    /* Wake-ups of the background thread (a futex word, no descriptor: a program that closes or
     * reuses descriptors cannot take it): WAKE_ bits, set by stop and the flight signal. */
    uint32_t wake;
    void *queue;       /* atomic: the lock-free stack of full chunks */
    uint64_t free_top; /* atomic: tag << 32 | (index + 1) of the free pool's top; 0 index: empty */
    /* The decoder (stream mode; owned by the background thread, then by stop). */
    strobe__u64map map; /* a thread's state (its address) -> its index in thrs + 1 */
    thr **thrs;
    size_t thr_count, thr_cap;
    strobe__clock_conv conv;
    uint64_t skipped_details, skipped_counters, unmatched, truncated, unfinished;
    /* Forward ops waiting for their backward op (allocated with the first); the fwdbwd flows
     * linked so far (JSON: the last id); forward ops pushed out of their slot by another before
     * their backward op came (their flow is lost). */
    fwd_slot *fwd;
    uint64_t fb_ids, fb_evicted;
    uint64_t fb_next;       /* Perfetto: the last flow id given to a forward op's begin */
    uint64_t device_events; /* the result's events appended at stop (strobe__stream_complete) */
    uint64_t event_bytes;   /* the file's bytes before what stop appends (device work, closing) */
    int complete;           /* the file's closing part is written */
    int stopping;           /* strobe__stream_complete has begun: cpu_events is set */
    uint64_t cpu_events;    /* the stream's own events in the file (not the device activity) */
    char pname[64];         /* the process's name */
    int64_t stop_ns;
    uint64_t clipped_backend, skipped_backend;
    /* Operator details: formatting scratch, symbols of the stacks seen so far, backend events of
     * the current batch and the backends' tracks. */
    strobe__decoder dec; /* the records' decoder; its events go to the thread `cur` */
    thr *cur;
    strobe__buf text, json;
    strobe__wr_arg *wargs;
    size_t wargs_cap;
    strobe__stream_syms syms;
    bk_event *bk;
    size_t bk_count, bk_cap;
    strobe__buf bk_names;
    bk_track *bkt;
    size_t bkt_count;
    /* The flight recorder's ring (under ring_lock). */
    pthread_mutex_t ring_lock;
    strobe__chunk *ring_head, *ring_tail;
    size_t ring_now, ring_cap;
    uint64_t ring_recycled, dumps, dump_errors;
    int sig;
    struct sigaction old_action;
} strobe__stream;

/* ---- stream.c ---- */
/* Bits of strobe__stream.wake. */
#define STROBE__WAKE 1u
#define STROBE__WAKE_DUMP 2u
/* Wakes the background thread, asking for a flight dump when `dump`. Async-signal-safe (an atomic
 * or and a futex wake). */
void strobe__stream_wake(strobe__stream *st, int dump);
/* The pool of free chunks and the queue of full ones are chunks.c's (chunks.h). */

/* ---- stream_out.c: the decoder's events written through the format's writer ---- */
/* Sets up the decoder (every mode). */
void strobe__stream_out_init(strobe__stream *st);
/* Opens the writer for st->path (stream mode). @return 0 or STROBE_ENOMEM. */
int strobe__stream_out_open(strobe__stream *st);
/* Frees what stream_out.c allocated. */
void strobe__stream_out_release(strobe__stream *st);
/* Writes the file's header and the process's track. @return 0 or the output's error. */
int strobe__stream_header(strobe__stream *st);
/* Decodes a batch of chunks (oldest first), recycling each, and appends the events to the file.
 * @return 0 or the first error. */
int strobe__stream_batch(strobe__stream *st, strobe__chunk *c);
/* At stop, after the last batch: the threads' current chunks, the held backend events, and the
 * ranges still open, ended at `stop_ns`. @return 0 or the first error. */
int strobe__stream_out_finish(strobe__stream *st, const strobe__clock_conv *conv, int64_t stop_ns);
/* Sets the result's "strobe_stream" metadata. */
void strobe__stream_meta(const strobe__stream *st, strobe_result *r);

/* ---- flight.c: the flight recorder ---- */
/* Sets up the ring, the dump path and the signal handler. @return 0, STROBE_ENOMEM or
 * STROBE_ESYS. */
int strobe__flight_setup(strobe__stream *st);
/* Restores the signal's old action. */
void strobe__flight_release(strobe__stream *st);
/* Adds a batch to the ring and recycles the oldest chunks beyond the window (ring_lock held). */
void strobe__flight_ring_add(strobe__stream *st, strobe__chunk *c);
/* A signal's dump, to a temporary file renamed over flight_path. */
void strobe__flight_signal_dump(strobe__stream *st);
/* At stop: each thread's chunk list becomes its kept chunks, then its current chunk. */
void strobe__flight_finish(strobe__stream *st);

#endif /* STROBE_STREAM_INTERNAL_H */
