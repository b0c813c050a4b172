/* stream.c: streaming output and the flight recorder (see stream.h).
 *
 * Contents: 1. chunk pool and queue (lock-free), 2. refill, 3. the stream's JSON output,
 * 4. the events of the record decoder (decode.c) written as they come: ranges held open with
 * their details until they end, stacks symbolized per batch, backend events held and laid on
 * lanes, 5. the flight recorder's ring and dumps, 6. the background thread,
 * 7. start, finish (the CPU records), complete (the device activity, the closing), free.
 *
 * Why the pieces are shaped as they are:
 * - The free pool is a stack of chunk indexes with a tag in the head word, so that a pop that
 *   raced with a pop and a push (ABA) fails its compare-and-swap. Only the background thread (or
 *   stop) pushes; any recording thread pops. The queue of full chunks is a plain lock-free stack
 *   that the background thread empties at once and reverses: every thread pushes its own chunks
 *   in order, so the reversed batch keeps each thread's order.
 * - The background thread polls every few milliseconds instead of being woken: a wake-up would
 *   put a system call into the recording thread's refill.
 * - The JSON stream is rewritten so that the file is a whole trace after every append: each
 *   append goes where the previous closing brackets were, with new closing brackets after it, in
 *   one pwrite(). A kill in the middle of a pwrite() leaves whole pages of it: no event crosses a
 *   page of the file (the append sink, trace/sink.h), so the file then ends between two events,
 * an unclosed event array that readers accept.
 * - Operator details wait with their open range (in the thread's args buffer) and are written
 *   with it when it ends; in Perfetto on the slice's end, whose annotations the trace processor
 *   adds to the slice. Stacks are symbolized in the background thread, each address once.
 * - Ranges are written as complete ("X") events when they end. The DevTools engine pairs B/E
 *   events with one stack for all threads, so separate begins and ends of several threads do not
 *   load there; holding the open ranges of each thread costs memory bounded by nesting depth.
 * - Each thread's times are made strictly increasing by 1 ns where the clock did not advance:
 *   a range written as ending in the very nanosecond its parent ends or its sibling begins looks
 *   mis-nested to viewers that compute with doubles (the JSON writer's "display ends" rule), and
 *   the stream cannot revise an event it has written.
 * - The Perfetto stream (.pftrace, .perfetto-trace) writes slice begins and ends as they come,
 *   as whole TracePackets appended to the file: a cut file imports up to its last packet, with the
 *   ranges open at the cut shown unfinished.
 * - Nothing is counted as written before it is in the file: each event's end is marked in the
 *   output buffer (strobe__append_mark), and an append that a full disk cuts short keeps the whole
 * events before the cut, truncates the file there and counts the rest in lost_events, as it counts
 *   every later append's events (strobe__append_flush). The closing part, written at stop, carries
 * the result's stats and the stream's counts (json_closing; the Perfetto writer's session slice).
 * - The flight recorder's dump and its result at stop reuse collect.c over the kept chunks, so a
 *   dump is written by the ordinary writers and has every operator detail. A dump also copies
 *   each thread's current chunk up to the end of records the thread published (release store),
 *   since the newest records are what a flight recorder is for. */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "decode.h"
#include "details.h"
#include "record.h"
#include "trace/result_internal.h"
#include "stack.h"
#include "stream.h"
#include "strobe/error.h"
#include "strobe/instrument.h"
#include "strobe/op.h"
#include "strobe/result.h"
#include "trace/kineto.h"
#include "trace/sink.h"
#include "trace/writer.h"
#include "util/u64map.h"

#define POLL_MS 5
/* Output bytes gathered before an append is written even in the middle of a batch. */
#define FLUSH_BYTES ((size_t)4 << 20)

enum { MODE_STREAM = 1, MODE_RING = 2 };

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
} open_rng;

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
    /* The output: the format's writer, called with STREAMING into a memory sink, from which each
     * event goes to the append sink (trace/sink.h) as one piece, its end marked. */
    const strobe__writer_ops *fmt;
    strobe__writer *wr;
    strobe__sink ms;
    strobe__append a;
    int64_t pid;
    pthread_t thread;
    int thread_started;
    int quit;          /* atomic */
    int pipe_fd[2];    /* signal and stop wake-ups */
    void *queue;       /* atomic: the lock-free stack of full chunks */
    uint64_t free_top; /* atomic: tag << 32 | (index + 1) of the free pool's top; 0 index: empty */
    /* The decoder (stream mode; owned by the background thread, then by stop). */
    strobe__u64map map; /* a thread's state (its address) -> its index in thrs + 1 */
    thr **thrs;
    size_t thr_count, thr_cap;
    strobe__clock_conv conv;
    uint64_t skipped_details, skipped_counters, unmatched, truncated, unfinished;
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
    struct sym_slot {
        uint64_t pc;
        char *name; /* NULL: a free slot */
    } * syms;
    size_t sym_cap, sym_count;
    uint64_t *want_pcs; /* addresses to symbolize before the batch is decoded */
    size_t want_count, want_cap;
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

/* The write end of the flight recorder's pipe, for the signal handler (one session at a time). */
static volatile int signal_fd = -1;

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

static void pool_push(strobe__stream *st, strobe__chunk *c) {
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

/* Takes every queued chunk, oldest first. */
static strobe__chunk *queue_take(strobe__stream *st) {
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

/* ---- 3. the stream's output ----------------------------------------------------------------- */

/* Moves what the writer wrote for the last call into the append sink, as one piece, and marks the
 * end of `events` events there (0: a track, a slice's begin). A piece that finds no memory is
 * dropped and its events counted lost. */
static void emit(strobe__stream *st, uint64_t events) {
    size_t n = st->ms.len;
    if (st->ms.err) {
        st->a.lost += events;
        (void)strobe__sink_clear(&st->ms);
        return;
    }
    if (n) {
        char *p = strobe__append_reserve(&st->a, n);
        if (p == NULL) {
            st->a.lost += events;
            st->ms.len = 0;
            return;
        }
        memcpy(p, st->ms.buf, n);
        strobe__append_commit(&st->a, p + n);
        st->ms.len = 0;
    }
    if (events) strobe__append_mark(&st->a, st->a.len, events);
}

/* After a writer call for one event: marks it, or counts it lost when the call failed. */
static void emitted(strobe__stream *st, int rc) {
    if (rc < 0) {
        st->ms.len = 0;
        st->a.lost++;
        return;
    }
    emit(st, 1);
}

/* ---- 4. the decoder's events, written -------------------------------------------------------- */

static thr *thr_find(strobe__stream *st, const strobe__tstate *t) {
    int inserted = 0;
    uint64_t *slot = strobe__u64map_put(&st->map, (uint64_t)(uintptr_t)t, &inserted);
    if (slot == NULL) return NULL;
    if (!inserted) return st->thrs[*slot - 1];
    *slot = 0; /* filled in below: a failure leaves a key that the next call retries */
    if (strobe__grow((void **)&st->thrs, &st->thr_cap, st->thr_count + 1, sizeof *st->thrs))
        return NULL;
    thr *h = calloc(1, sizeof *h);
    if (h == NULL) return NULL;
    h->key = t;
    strobe__dec_thread_init(&h->dt);
    /* The name may change under the registry lock (strobe_set_thread_name). */
    char name[64];
    pthread_mutex_lock(&strobe__registry_lock);
    h->tid = t->tid;
    memcpy(name, t->name, sizeof name);
    pthread_mutex_unlock(&strobe__registry_lock);
    name[sizeof name - 1] = '\0';
    if (name[0] == '\0') snprintf(name, sizeof name, STROBE_KINETO_THREAD_FMT, (long long)h->tid);
    strobe__wr_track tr = {.kind = STROBE__WR_THREAD,
                           .pid = st->pid,
                           .tid = h->tid,
                           .name = name,
                           .sort_index = h->tid};
    int64_t id = strobe__writer_track(st->wr, &tr);
    if (id < 0) {
        st->ms.len = 0;
        strobe__dec_thread_free(&h->dt);
        free(h);
        return NULL;
    }
    emit(st, 0);
    h->track = (uint32_t)id;
    st->thrs[st->thr_count++] = h;
    *slot = st->thr_count;
    return h;
}

static const char *range_category(int scope) {
    return scope == STROBE_RECORD_SCOPE_USER_SCOPE ? STROBE_KINETO_CAT_USER_ANNOTATION
                                                   : STROBE_KINETO_CAT_CPU_OP;
}

/* Kineto's correlation args of a range or instant ("External id", "User External id"). */
static size_t corr_args(strobe__wr_arg *a, uint64_t ext, uint64_t user) {
    size_t n = 0;
    if (ext)
        a[n++] = (strobe__wr_arg){
            .name = STROBE_KINETO_ARG_EXTERNAL_ID, .type = STROBE__PFT_UINT, .u = ext};
    if (user)
        a[n++] = (strobe__wr_arg){.name = "User External id", .type = STROBE__PFT_UINT, .u = user};
    return n;
}

/* Walks the args entries in [p, end): @return the next entry, and the key and value of this one. */
static const char *arg_next(const char *p, const char **key, const char **json) {
    *key = p + 1;
    *json = *key + strlen(*key) + 1;
    return *json + strlen(*json) + 1;
}

/* Adds an arg to the innermost open range of `h`: `json` is the value's JSON text. An earlier value
 * of the key is replaced when `replace`, else kept. @return 0 or STROBE_ENOMEM. */
static int arg_add(thr *h, const char *key, const char *json, size_t jlen, int replace) {
    const open_rng *o = &h->open[h->depth - 1];
    size_t klen = strlen(key);
    if (h->args.len > o->args_off) {
        const char *p = h->args.s + o->args_off, *end = h->args.s + h->args.len;
        while (p < end) {
            const char *k, *v;
            const char *next = arg_next(p, &k, &v);
            if (*p == '1' && strcmp(k, key) == 0) {
                if (!replace) return 0;
                h->args.s[p - h->args.s] = '0';
            }
            p = next;
        }
    }
    int rc = strobe__buf_put(&h->args, "1", 1);
    if (rc == 0) rc = strobe__buf_put(&h->args, key, klen + 1);
    if (rc == 0) rc = strobe__buf_put(&h->args, json, jlen);
    if (rc == 0) rc = strobe__buf_put(&h->args, "", 1);
    return rc;
}

/* The writer's event of open range `o` of `h` at its begin or `at_end` (its correlation args in
 * `a`, room for two). */
static void range_event(const thr *h, const open_rng *o, int at_end, strobe__wr_arg *a,
                        strobe__wr_event *e) {
    memset(e, 0, sizeof *e);
    e->track = h->track;
    e->cat = range_category(o->scope);
    if (o->site_name) {
        /* A site's name is a C string; JSON takes at most STROBE__MAX_NAME bytes of it. */
        e->name = o->site_name;
        e->name_len = at_end ? strnlen(o->site_name, STROBE__MAX_NAME) : (size_t)-1;
    } else {
        e->name = h->names.s + o->name_off;
        e->name_len = o->name_len;
    }
    e->ts = o->start;
    e->args = a;
    e->nargs = corr_args(a, o->ext, o->user);
}

/* Writes a range that ends at `end` with its details (the thread's args from o->args_off: `o` is
 * the innermost open range) and, when `flag` names one, that flag set to 1: args known only at
 * its end. */
static void write_range(strobe__stream *st, thr *h, const open_rng *o, int64_t end,
                        const char *flag) {
    const char *args = h->args.s ? h->args.s + o->args_off : NULL;
    const char *args_end = h->args.s ? h->args.s + h->args.len : NULL;
    if (h->args.len < o->args_off) args = args_end = NULL;
    size_t n = flag != NULL;
    for (const char *p = args; p && p < args_end;) {
        const char *k, *v;
        const char *next = arg_next(p, &k, &v);
        n += *p == '1';
        p = next;
    }
    if (strobe__grow((void **)&st->wargs, &st->wargs_cap, n + 1, sizeof *st->wargs)) {
        st->a.lost++;
        return;
    }
    size_t k = 0;
    for (const char *p = args; p && p < args_end;) {
        const char *key, *v;
        const char *next = arg_next(p, &key, &v);
        if (*p == '1')
            st->wargs[k++] =
                (strobe__wr_arg){.name = key, .type = STROBE__PFT_JSON, .s = v, .slen = (size_t)-1};
        p = next;
    }
    if (flag) st->wargs[k++] = (strobe__wr_arg){.name = flag, .type = STROBE__PFT_INT, .i = 1};
    strobe__wr_arg corr[2];
    strobe__wr_event e;
    range_event(h, o, 1, corr, &e);
    e.end = end;
    emitted(st, st->wr->ops->slice_end(st->wr, &e, st->wargs, k));
}

static void write_instant(strobe__stream *st, thr *h, const char *name, size_t nlen, int64_t ts,
                          uint64_t ext, uint64_t user) {
    strobe__wr_arg a[2];
    strobe__wr_event e = {.track = h->track,
                          .cat = STROBE_KINETO_CAT_CPU_INSTANT_EVENT,
                          .name = name,
                          .name_len = nlen,
                          .ts = ts,
                          .args = a};
    e.nargs = corr_args(a, ext, user);
    emitted(st, st->wr->ops->instant(st->wr, &e));
}

static void write_counter(strobe__stream *st, thr *h, const char *name, size_t nlen, int64_t ts,
                          double v) {
    strobe__wr_event e = {.track = h->track,
                          .cat = "cpu_counter",
                          .name = name,
                          .name_len = nlen,
                          .ts = ts,
                          .value = v};
    int rc = st->wr->ops->counter(st->wr, &e);
    if (rc == 1) {
        /* Not finite: the sample is left out and counted. */
        st->skipped_counters++;
        return;
    }
    emitted(st, rc);
}

/* Ends every open range of a thread at `at`: the innermost first, each 1 ns after the one inside
 * it, so that no two share an end. */
static void close_all(strobe__stream *st, thr *h, int64_t at, const char *flag) {
    if (h->dt.prev != INT64_MIN && at <= h->dt.prev) at = h->dt.prev + 1;
    while (h->depth) {
        const open_rng *o = &h->open[--h->depth];
        int64_t end = at < o->start ? o->start : at;
        write_range(st, h, o, end, flag);
        if (h->args.len > o->args_off) h->args.len = o->args_off;
        at = end + 1;
    }
    h->dt.prev = at - 1;
    h->names.len = 0;
    h->args.len = 0;
}

static int push_range(thr *h, const strobe__dec_event *e) {
    const char *site_name = e->site ? e->name : NULL;
    if (strobe__grow((void **)&h->open, &h->cap, h->depth + 1, sizeof *h->open))
        return STROBE_ENOMEM;
    open_rng *o = &h->open[h->depth];
    o->start = e->ts;
    o->site_name = site_name;
    o->scope = (uint8_t)e->scope;
    o->ext = e->ext;
    o->user = e->user;
    o->name_off = (uint32_t)h->names.len;
    o->name_len = (uint32_t)e->name_len;
    o->args_off = (uint32_t)h->args.len;
    if (site_name == NULL) {
        /* Copied with a terminating NUL (the Perfetto encoder takes C strings): the chunk the
         * name came from is recycled before the range ends. */
        if (strobe__buf_put(&h->names, e->name, e->name_len) != 0) return STROBE_ENOMEM;
        h->names.len++; /* keep the NUL strobe__buf_put wrote: the next name goes after it */
    }
    h->depth++;
    return 0;
}

/* A range has begun: formats that write begins (Perfetto) write it now. @return 0. */
static int begin_out(strobe__stream *st, thr *h) {
    if (!st->fmt->open_begins) return 0;
    strobe__wr_arg corr[2];
    strobe__wr_event e;
    range_event(h, &h->open[h->depth - 1], 0, corr, &e);
    if (st->wr->ops->slice_begin(st->wr, &e))
        st->ms.len = 0; /* its end is counted when it fails too */
    else
        emit(st, 0);
    return 0;
}

static void pop_range(strobe__stream *st, thr *h, int64_t ts) {
    if (h->depth == 0) {
        st->unmatched++;
        return;
    }
    const open_rng *o = &h->open[--h->depth];
    write_range(st, h, o, ts, NULL);
    if (o->site_name == NULL) h->names.len = o->name_off;
    if (h->args.len > o->args_off) h->args.len = o->args_off;
}

/* A memory event: an instant with Kineto's args on the allocating thread, and the allocator's
 * totals as counters. */
static int s_memory(void *ctx, const strobe__dec_memory *m) {
    strobe__stream *st = ctx;
    thr *h = st->cur;
    const strobe__wr_arg a[6] = {
        {.name = STROBE_KINETO_ARG_DEVICE_TYPE, .type = STROBE__PFT_INT, .i = m->c10_type},
        {.name = STROBE_KINETO_ARG_DEVICE_ID, .type = STROBE__PFT_INT, .i = m->index},
        {.name = STROBE_KINETO_ARG_ADDR, .type = STROBE__PFT_UINT, .u = m->addr},
        {.name = STROBE_KINETO_ARG_MEM_BYTES, .type = STROBE__PFT_INT, .i = m->bytes},
        {.name = STROBE_KINETO_ARG_TOTAL_ALLOCATED,
         .type = STROBE__PFT_INT,
         .i = m->total_allocated},
        {.name = STROBE_KINETO_ARG_TOTAL_RESERVED, .type = STROBE__PFT_INT, .i = m->total_reserved},
    };
    strobe__wr_event e = {.track = h->track,
                          .cat = STROBE_KINETO_CAT_CPU_INSTANT_EVENT,
                          .name = STROBE_KINETO_MEMORY_EVENT_NAME,
                          .name_len = (size_t)-1,
                          .ts = m->ts,
                          .args = a,
                          .nargs = 6};
    emitted(st, st->wr->ops->instant(st->wr, &e));
    for (int k = 0; k < 2; k++)
        write_counter(st, h, m->counter[k], strlen(m->counter[k]), m->ts,
                      (double)(k ? m->total_reserved : m->total_allocated));
    return 0;
}

/* ---- stacks ---------------------------------------------------------------------------------- */

/* The innermost open range's name (NUL-terminated). */
static const char *top_name(const thr *h) {
    const open_rng *o = &h->open[h->depth - 1];
    return o->site_name ? o->site_name : h->names.s + o->name_off;
}

/* Adds `text` as a JSON string arg. */
static int arg_string(strobe__stream *st, thr *h, const char *key, const char *text, size_t len) {
    st->json.len = 0;
    int rc = strobe__buf_put_json_string(&st->json, text, len);
    return rc ? rc : arg_add(h, key, st->json.s, st->json.len, 1);
}

/* The symbol of a return address seen before (NULL: not yet symbolized). */
static const char *sym_get(const strobe__stream *st, uint64_t pc) {
    if (st->sym_cap == 0) return NULL;
    size_t j = (size_t)((pc * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & (st->sym_cap - 1);
    while (st->syms[j].name) {
        if (st->syms[j].pc == pc) return st->syms[j].name;
        j = (j + 1) & (st->sym_cap - 1);
    }
    return NULL;
}

static int sym_put(strobe__stream *st, uint64_t pc, const char *name) {
    if ((st->sym_count + 1) * 2 > st->sym_cap) {
        size_t cap = st->sym_cap ? st->sym_cap * 2 : 256;
        struct sym_slot *m = calloc(cap, sizeof *m);
        if (m == NULL) return STROBE_ENOMEM;
        struct sym_slot *old = st->syms;
        size_t old_cap = st->sym_cap;
        st->syms = m;
        st->sym_cap = cap;
        st->sym_count = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].name) {
                size_t j = (size_t)((old[i].pc * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & (cap - 1);
                while (m[j].name)
                    j = (j + 1) & (cap - 1);
                m[j] = old[i];
                st->sym_count++;
            }
        free(old);
    }
    char *copy = strdup(name);
    if (copy == NULL) return STROBE_ENOMEM;
    size_t j = (size_t)((pc * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & (st->sym_cap - 1);
    while (st->syms[j].name)
        j = (j + 1) & (st->sym_cap - 1);
    st->syms[j].pc = pc;
    st->syms[j].name = copy;
    st->sym_count++;
    return 0;
}

/* Notes the return addresses of a chunk's stacks that have no symbol yet. */
static int scan_stacks(strobe__stream *st, const char *p, size_t used) {
    const char *end = p + used;
    while (p < end) {
        size_t size = strobe__rec_size(p, (size_t)(end - p), NULL);
        if (size == 0) break;
        const uint64_t *w = (const uint64_t *)p;
        if (STROBE__REC_KIND(w[0]) == STROBE__REC_STACK) {
            uint32_t n = (uint32_t)(STROBE__REC_TS(w[0]) & 0xff);
            for (uint32_t i = 0; i < n; i++) {
                if (sym_get(st, w[1 + i])) continue;
                if (strobe__grow((void **)&st->want_pcs, &st->want_cap, st->want_count + 1,
                                 sizeof *st->want_pcs))
                    return STROBE_ENOMEM;
                st->want_pcs[st->want_count++] = w[1 + i];
            }
        }
        p += size;
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Symbolizes the addresses scan_stacks noted, all in one call (one addr2line run per module):
 * a long session looks up each address once, in the batch where it first appears. */
static int resolve_stacks(strobe__stream *st) {
    if (st->want_count == 0) return 0;
    qsort(st->want_pcs, st->want_count, sizeof *st->want_pcs, cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < st->want_count; i++)
        if (u == 0 || st->want_pcs[u - 1] != st->want_pcs[i]) st->want_pcs[u++] = st->want_pcs[i];
    st->want_count = 0;
    const char **out = calloc(u, sizeof *out);
    if (out == NULL) return STROBE_ENOMEM;
    strobe__symbolizer *sz = strobe__symbolize(st->want_pcs, u, out);
    int rc = sz ? 0 : STROBE_ENOMEM;
    for (size_t i = 0; i < u && rc == 0; i++)
        rc = sym_put(st, st->want_pcs[i], out[i] ? out[i] : "??");
    strobe__symbolizer_free(sz);
    free(out);
    return rc;
}

static int s_stack(void *ctx, const uint64_t *pcs, uint32_t n) {
    strobe__stream *st = ctx;
    thr *h = st->cur;
    st->text.len = 0;
    int rc = 0;
    int leading = 1; /* strobe's own frames before the caller's are left out */
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        const char *name = sym_get(st, pcs[i]);
        if (name == NULL) name = "??";
        if (leading && strobe__frame_is_own(name) && i + 1 < n) continue;
        if (!leading) rc = strobe__buf_put(&st->text, ";", 1);
        leading = 0;
        if (rc == 0) rc = strobe__buf_put(&st->text, name, strlen(name));
    }
    return rc ? rc : arg_string(st, h, "Call stack", st->text.s, st->text.len);
}

static int s_backend(void *ctx, const strobe__dec_backend *d) {
    strobe__stream *st = ctx;
    if (strobe__grow((void **)&st->bk, &st->bk_cap, st->bk_count + 1, sizeof *st->bk))
        return STROBE_ENOMEM;
    /* The names are copied: the chunk is recycled before the batch's backend events are written. */
    bk_event *b = &st->bk[st->bk_count];
    b->start = d->start;
    b->end = d->end;
    b->handle = d->handle;
    b->name_off = st->bk_names.len;
    int rc = strobe__buf_put(&st->bk_names, d->name, d->name_len);
    if (rc == 0) rc = strobe__buf_put(&st->bk_names, "", 1);
    b->backend_off = st->bk_names.len;
    if (rc == 0) rc = strobe__buf_put(&st->bk_names, d->backend, d->backend_len);
    if (rc == 0) rc = strobe__buf_put(&st->bk_names, "", 1);
    if (rc == 0) st->bk_count++;
    return rc;
}

static int cmp_bk(const void *a, const void *b, void *arg) {
    const bk_event *x = a, *y = b;
    const char *names = ((const strobe__stream *)arg)->bk_names.s;
    int c = strcmp(names + x->backend_off, names + y->backend_off);
    if (c) return c;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->end > y->end ? -1 : (x->end < y->end); /* outer first */
}

/* A lane of `backend`, declared (a track of its own) on first use; NULL when out of memory. */
static struct bk_lane *bk_lane(strobe__stream *st, const char *backend, int lane) {
    bk_track *t = NULL;
    for (size_t i = 0; i < st->bkt_count && t == NULL; i++)
        if (strcmp(st->bkt[i].backend, backend) == 0) t = &st->bkt[i];
    if (t == NULL) {
        bk_track *a = realloc(st->bkt, (st->bkt_count + 1) * sizeof *a);
        if (a == NULL) return NULL;
        st->bkt = a;
        t = &a[st->bkt_count];
        memset(t, 0, sizeof *t);
        t->backend = strdup(backend);
        if (t->backend == NULL) return NULL;
        st->bkt_count++;
    }
    if (lane < t->lanes) return &t->lane[lane];
    struct bk_lane *l = &t->lane[t->lanes];
    memset(l, 0, sizeof *l);
    l->tid = BACKEND_TID_BASE + (int64_t)((size_t)(t - st->bkt) * BACKEND_LANES) + t->lanes;
    l->last = INT64_MIN;
    char name[300];
    if (t->lanes == 0) {
        snprintf(name, sizeof name, "Backend: %s", backend);
    } else {
        snprintf(name, sizeof name, "Backend: %s (%d)", backend, t->lanes + 1);
    }
    strobe__wr_track tr = {.kind = STROBE__WR_THREAD,
                           .pid = st->pid,
                           .tid = l->tid,
                           .name = name,
                           .sort_index = l->tid};
    int64_t id = strobe__writer_track(st->wr, &tr);
    if (id < 0) {
        st->ms.len = 0;
        return NULL;
    }
    emit(st, 0);
    l->track = (uint32_t)id;
    t->lanes++;
    return l;
}

static void write_backend_event(strobe__stream *st, struct bk_lane *l, const char *name,
                                const char *backend, int64_t start, int64_t end, int64_t handle) {
    const strobe__wr_arg a[2] = {
        {.name = STROBE_KINETO_ARG_BACKEND,
         .type = STROBE__PFT_STRING,
         .s = backend,
         .slen = (size_t)-1},
        {.name = "Debug handle", .type = STROBE__PFT_INT, .i = handle},
    };
    strobe__wr_event e = {.track = l->track,
                          .flags = STROBE__WR_COMPLETE,
                          .cat = STROBE_KINETO_CAT_CPU_OP,
                          .name = name,
                          .name_len = (size_t)-1,
                          .ts = start,
                          .end = end,
                          .args = a,
                          .nargs = 2};
    int rc = st->wr->ops->slice_begin(st->wr, &e);
    if (rc == 0) rc = st->wr->ops->slice_end(st->wr, &e, NULL, 0);
    emitted(st, rc);
}

/* Writes the backend events that started more than BACKEND_HOLD_NS ago (all of them when `all`)
 * on their backends' lanes, in start order. Each goes on the first lane where it starts no
 * earlier than the lane's last event and nests in the events still open there (an end past the
 * enclosing event's is brought inside it and counted, as collect.c does); one that fits no lane
 * is counted as skipped. Times before the session start are brought to it (counted). Each event
 * is written 1 ns short of its end, so that an event never ends in the nanosecond its parent ends
 * or its next sibling begins (the JSON writer's display rule): the stream cannot revise what it
 * wrote. */
static void flush_backend(strobe__stream *st, int all) {
    if (st->bk_count == 0) return;
    qsort_r(st->bk, st->bk_count, sizeof *st->bk, cmp_bk, st);
    int64_t session_start = st->s->start.real_ns;
    int64_t cutoff =
        all ? INT64_MAX : strobe__clock_to_ns(&st->conv, strobe__now_raw()) - BACKEND_HOLD_NS;
    size_t kept = 0;
    strobe__buf keep = {0};
    for (size_t i = 0; i < st->bk_count; i++) {
        const bk_event *b = &st->bk[i];
        const char *name = st->bk_names.s + b->name_off;
        const char *backend = st->bk_names.s + b->backend_off;
        if (b->start > cutoff) {
            /* Held: moved to the front, its names into the new names buffer. */
            bk_event *k = &st->bk[kept++];
            int64_t start = b->start, end = b->end, handle = b->handle;
            size_t no = keep.len;
            int rc = strobe__buf_put(&keep, name, strlen(name) + 1);
            size_t bo = keep.len;
            if (rc == 0) rc = strobe__buf_put(&keep, backend, strlen(backend) + 1);
            if (rc) {
                kept--;
                st->skipped_backend++;
                continue;
            }
            k->start = start;
            k->end = end;
            k->handle = handle;
            k->name_off = no;
            k->backend_off = bo;
            continue;
        }
        int64_t start = b->start, end = b->end < b->start ? b->start : b->end;
        if (start < session_start) {
            st->clipped_backend++;
            start = session_start;
            if (end < start) end = start;
        }
        struct bk_lane *l = NULL;
        for (int k = 0; k < BACKEND_LANES; k++) {
            struct bk_lane *c = bk_lane(st, backend, k);
            if (c == NULL) break;
            if (start < c->last) continue;
            while (c->depth && c->ends[c->depth - 1] <= start)
                c->depth--;
            if (c->depth == sizeof c->ends / sizeof c->ends[0]) continue;
            l = c;
            break;
        }
        if (l == NULL) {
            st->skipped_backend++;
            continue;
        }
        if (end - start >= 2) end--;
        if (l->depth && end >= l->ends[l->depth - 1]) {
            if (end > l->ends[l->depth - 1]) st->clipped_backend++;
            end = l->ends[l->depth - 1] - 1;
            if (end < start) end = start;
        }
        l->last = start;
        l->ends[l->depth++] = end;
        write_backend_event(st, l, name, backend, start, end, b->handle);
    }
    st->bk_count = kept;
    strobe__buf_free(&st->bk_names);
    st->bk_names = keep;
}

/* ---- the decoder's callbacks ----------------------------------------------------------------- */

static int s_begin(void *ctx, const strobe__dec_event *e) {
    strobe__stream *st = ctx;
    int rc = push_range(st->cur, e);
    return rc ? rc : begin_out(st, st->cur);
}

static int s_end(void *ctx, int64_t ts) {
    strobe__stream *st = ctx;
    pop_range(st, st->cur, ts);
    return 0;
}

static int s_instant(void *ctx, const strobe__dec_event *e) {
    strobe__stream *st = ctx;
    write_instant(st, st->cur, e->name, e->name_len, e->ts, e->ext, e->user);
    return 0;
}

static int s_counter(void *ctx, int64_t ts, const strobe_site *site, const char *name, size_t len,
                     double value) {
    strobe__stream *st = ctx;
    (void)site;
    write_counter(st, st->cur, name, len, ts, value);
    return 0;
}

/* The thread's records were dropped from here until it found a free chunk: ranges open now are
 * ended here, and ends that arrive for them later are counted as unmatched. */
static int s_truncated(void *ctx, int64_t ts) {
    strobe__stream *st = ctx;
    thr *h = st->cur;
    st->truncated += h->depth;
    close_all(st, h, ts, "strobe_truncated");
    static const char marker[] = "[strobe] buffer full: records dropped";
    write_instant(st, h, marker, sizeof marker - 1, h->dt.prev + 1, 0, 0);
    h->dt.prev++;
    return 0;
}

static const char *s_top(void *ctx, size_t *depth) {
    const thr *h = ((strobe__stream *)ctx)->cur;
    *depth = h->depth;
    return h->depth ? top_name(h) : NULL;
}

static int s_arg(void *ctx, const char *key, const char *json, size_t len, int replace) {
    return arg_add(((strobe__stream *)ctx)->cur, key, json, len, replace);
}

static const strobe__dec_ops stream_ops = {
    .begin = s_begin,
    .end = s_end,
    .instant = s_instant,
    .counter = s_counter,
    .memory = s_memory,
    .backend = s_backend,
    .truncated = s_truncated,
    .top = s_top,
    .arg = s_arg,
    .stack = s_stack,
};

/* Turns one chunk's records of thread `h` into events. @return 0 or STROBE_ENOMEM. */
static int decode(strobe__stream *st, thr *h, const char *p, size_t used) {
    st->cur = h;
    return strobe__decode(&st->dec, &h->dt, p, used);
}

/* Bytes encoded and not yet written. */
static size_t out_pending(const strobe__stream *st) {
    return st->a.len;
}

/* Appends what is encoded, with the format's running tail after it. `retry`: see
 * strobe__append_flush. @return 0 or the output's error. */
static int out_flush(strobe__stream *st, int retry) {
    const char *tail = st->fmt->running_tail;
    return strobe__append_flush(&st->a, tail ? tail : "", retry);
}

/* Decodes a batch of chunks (oldest first), recycling each into the free pool, and appends the
 * events to the file. @return 0 or the first error. */
static int stream_batch(strobe__stream *st, strobe__chunk *c) {
    int rc = 0;
    if (c == NULL) return 0;
    st->conv = strobe__clock_calibrate(st->s->start, strobe__clock_anchor_now());
    if (st->s->cfg.with_stack) {
        for (strobe__chunk *k = c; k && rc == 0; k = k->qnext)
            rc = scan_stacks(st, (const char *)(k + 1), (size_t)k->used);
        if (rc == 0) rc = resolve_stacks(st);
    }
    while (c) {
        strobe__chunk *next = c->qnext;
        thr *h = thr_find(st, c->owner);
        int drc = h ? decode(st, h, (const char *)(c + 1), (size_t)c->used) : STROBE_ENOMEM;
        if (rc == 0) rc = drc;
        pool_push(st, c);
        if (out_pending(st) >= FLUSH_BYTES) out_flush(st, 0);
        c = next;
    }
    flush_backend(st, 0);
    if (out_pending(st)) out_flush(st, 0);
    return rc ? rc : st->a.err;
}

/* ---- 5. the flight recorder's ring and dumps ---------------------------------------------- */

/* Adds a batch to the ring and recycles the oldest chunks beyond the window. Under ring_lock. */
static void ring_add(strobe__stream *st, strobe__chunk *c) {
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
        pool_push(st, old);
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
    pthread_mutex_lock(&strobe__registry_lock);
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
    pthread_mutex_unlock(&strobe__registry_lock);
    if (rc == 0) {
        /* The chunks closed since the background thread last looked belong to the window; taken
         * after the copies, so that a chunk handed over while they were taken is in the ring,
         * whole, and the copy of its beginning is dropped. */
        ring_add(st, queue_take(st));
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

/* ---- 6. the background thread ------------------------------------------------------------- */

static void on_signal(int sig) {
    (void)sig;
    int saved = errno;
    char b = 'd';
    int fd = signal_fd;
    if (fd >= 0) (void)!write(fd, &b, 1);
    errno = saved;
}

/* A signal's dump: to a temporary file, then renamed over flight_path, so that the file is
 * always a whole trace. */
static void signal_dump(strobe__stream *st) {
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

static void *stream_main(void *arg) {
    strobe__stream *st = arg;
    /* This thread records nothing, and its signals belong to the program's threads. */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    int errors_logged = 0;
    for (;;) {
        struct pollfd pfd = {st->pipe_fd[0], POLLIN, 0};
        int dump = 0;
        if (poll(&pfd, 1, POLL_MS) > 0 && (pfd.revents & POLLIN)) {
            char b[64];
            ssize_t got = read(st->pipe_fd[0], b, sizeof b);
            for (ssize_t i = 0; i < got; i++)
                dump |= b[i] == 'd';
        }
        int quit = __atomic_load_n(&st->quit, __ATOMIC_ACQUIRE);
        if (quit) break; /* stop takes the last chunks itself */
        if (st->mode == MODE_STREAM) {
            int rc = stream_batch(st, queue_take(st));
            if (rc && !errors_logged++)
                strobe__log(STROBE_LOG_ERROR, "stream %s: %s", st->path, strobe_strerror(rc));
        } else {
            /* Taken under the lock, so that a dump taking the queue meanwhile cannot put newer
             * chunks in the ring before older ones. */
            pthread_mutex_lock(&st->ring_lock);
            ring_add(st, queue_take(st));
            pthread_mutex_unlock(&st->ring_lock);
            if (dump) signal_dump(st);
        }
    }
    return NULL;
}

/* ---- 7. start, finish, free --------------------------------------------------------------- */

int strobe__stream_check_config(const strobe_config *cfg) {
    int ring = cfg->ring_bytes != 0 || cfg->ring_ms != 0;
    if (cfg->stream_path != NULL) {
        if (cfg->stream_path[0] == '\0' || ring) return STROBE_EINVAL;
    }
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
    if (st->sig) {
        sigaction(st->sig, &st->old_action, NULL);
        signal_fd = -1;
    }
    if (st->pipe_fd[0] >= 0) close(st->pipe_fd[0]);
    if (st->pipe_fd[1] >= 0) close(st->pipe_fd[1]);
    if (st->a.fd >= 0) close(st->a.fd);
    strobe__writer_free(st->wr);
    if (st->ms.buf) free(strobe__sink_take_memory(&st->ms, &(size_t){0}));
    for (size_t i = 0; i < st->thr_count; i++) {
        thr *h = st->thrs[i];
        free(h->open);
        strobe__buf_free(&h->names);
        strobe__buf_free(&h->args);
        strobe__dec_thread_free(&h->dt);
        free(h);
    }
    free(st->thrs);
    strobe__u64map_free(&st->map);
    strobe__decoder_free(&st->dec);
    strobe__buf_free(&st->text);
    strobe__buf_free(&st->json);
    free(st->wargs);
    for (size_t i = 0; i < st->sym_cap; i++)
        free(st->syms[i].name);
    free(st->syms);
    free(st->want_pcs);
    free(st->bk);
    strobe__buf_free(&st->bk_names);
    for (size_t i = 0; i < st->bkt_count; i++)
        free(st->bkt[i].backend);
    free(st->bkt);
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
    st->dec.s = s;
    st->dec.conv = &st->conv;
    st->dec.strict = 1;
    st->dec.ops = &stream_ops;
    st->dec.ctx = st;
    st->a.fd = st->pipe_fd[0] = st->pipe_fd[1] = -1;
    pthread_mutex_init(&st->ring_lock, NULL);
    int rc = 0;
    if (pipe2(st->pipe_fd, O_CLOEXEC | O_NONBLOCK) != 0) rc = STROBE_ESYS;
    if (rc == 0 && st->mode == MODE_STREAM) {
        st->path = strdup(cfg->stream_path);
        if (st->path == NULL) rc = STROBE_ENOMEM;
        if (rc == 0) {
            st->a.fd = open(st->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (st->a.fd < 0) {
                strobe__log(STROBE_LOG_ERROR, "stream %s: %s", st->path, strerror(errno));
                rc = STROBE_EIO;
            }
        }
        st->pid = (int64_t)s->pid;
        snprintf(st->pname, sizeof st->pname, "strobe");
        FILE *f = fopen("/proc/self/comm", "re");
        if (f) {
            if (fgets(st->pname, sizeof st->pname, f) == NULL)
                snprintf(st->pname, sizeof st->pname, "strobe");
            fclose(f);
            st->pname[strcspn(st->pname, "\n")] = '\0';
        }
        /* The format by the path's suffix, as a saved trace's (never compressed: the file is
         * appended to as it grows). */
        st->fmt = strobe__writer_for_path(st->path);
        st->a.page_pad = st->fmt->pad;
        if (rc == 0) rc = strobe__sink_open_memory(&st->ms);
        if (rc == 0) {
            st->wr = strobe__writer_open(st->fmt, &st->ms, STROBE__WR_STREAMING);
            if (st->wr == NULL) rc = STROBE_ENOMEM;
        }
    }
    if (rc == 0 && st->mode == MODE_RING) {
        st->ring_cap = cfg->ring_bytes ? cfg->ring_bytes : s->arena_bytes / 2;
        if (st->ring_cap < s->chunk_bytes) st->ring_cap = s->chunk_bytes;
        char def[64];
        snprintf(def, sizeof def, "strobe_flight_%d.json", (int)s->pid);
        st->flight_path = strdup(cfg->flight_path ? cfg->flight_path : def);
        if (st->flight_path == NULL) rc = STROBE_ENOMEM;
        if (rc == 0 && cfg->flight_signal) {
            signal_fd = st->pipe_fd[1];
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_signal;
            sa.sa_flags = SA_RESTART;
            sigemptyset(&sa.sa_mask);
            if (sigaction(cfg->flight_signal, &sa, &st->old_action) != 0) {
                signal_fd = -1;
                rc = STROBE_ESYS;
            } else {
                st->sig = cfg->flight_signal;
            }
        }
    }
    if (rc) {
        stream_release(st);
        return rc;
    }
    s->stream = st;
    return 0;
}

/* The stream's header: what is known when the window opens (the trace id, the time base), and
 * the process's track. Stats, metadata and the trace name come at the end. @return 0 or the
 * output's error. */
static int stream_header(strobe__stream *st) {
    const strobe_result *r = st->s->result;
    /* Times are written relative to the base a saved result gets (1 us before the window
     * opened), so that the device activity appended at stop lines up with the stream's events. */
    strobe__wr_info info = {.base_ns = st->s->start.real_ns - 1000,
                            .trace_id = r && r->trace_id ? r->trace_id : ""};
    int rc = st->wr->ops->begin(st->wr, &info);
    strobe__wr_track p = {.kind = STROBE__WR_PROCESS,
                          .pid = st->pid,
                          .name = st->pname,
                          .label = STROBE_KINETO_CPU_PROCESS_LABEL,
                          .sort_index = st->pid};
    if (rc == 0) rc = (int)strobe__writer_track(st->wr, &p);
    if (rc < 0) return rc;
    emit(st, 0);
    return out_flush(st, 0);
}

int strobe__stream_run(strobe__session *s) {
    strobe__stream *st = s->stream;
    if (st == NULL || st->thread_started) return 0;
    if (st->mode == MODE_STREAM) {
        int rc = stream_header(st);
        if (rc) return rc;
    }
    if (pthread_create(&st->thread, NULL, stream_main, st) != 0) return STROBE_ESYS;
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
    char b = 'q';
    (void)!write(st->pipe_fd[1], &b, 1);
    pthread_join(st->thread, NULL);
    st->thread_started = 0;
}

int strobe__stream_finish(strobe__session *s, const strobe__clock_conv *conv, int64_t stop_ns) {
    strobe__stream *st = s->stream;
    if (st == NULL) return 0;
    stop_thread(st);
    strobe__chunk *batch = queue_take(st);
    if (st->mode == MODE_RING) {
        pthread_mutex_lock(&st->ring_lock);
        ring_add(st, batch);
        /* Each thread's chunk list becomes its kept chunks, then its current chunk. */
        for (strobe__tstate *t = s->threads; t; t = t->sess_next) {
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
        return 0;
    }
    int rc = stream_batch(st, batch);
    st->conv = *conv;
    if (s->cfg.with_stack) {
        for (strobe__tstate *t = s->threads; t && rc == 0; t = t->sess_next)
            if (t->cur != NULL)
                rc = scan_stacks(st, (const char *)(t->cur + 1),
                                 (size_t)(t->pos - (char *)(t->cur + 1)));
        if (rc == 0) rc = resolve_stacks(st);
    }
    for (strobe__tstate *t = s->threads; t; t = t->sess_next) {
        if (t->cur != NULL) {
            thr *h = thr_find(st, t);
            int drc = h ? decode(st, h, (const char *)(t->cur + 1),
                                 (size_t)(t->pos - (char *)(t->cur + 1)))
                        : STROBE_ENOMEM;
            if (rc == 0) rc = drc;
        }
        /* The records are in the file: the result gets none. */
        t->first = t->cur = NULL;
        t->pos = t->end = NULL;
    }
    flush_backend(st, 1);
    for (size_t i = 0; i < st->thr_count; i++) {
        thr *h = st->thrs[i];
        st->unfinished += h->depth;
        close_all(st, h, stop_ns, "strobe_unfinished");
    }
    st->stop_ns = stop_ns;
    return rc;
}

/* The "strobe_stream" object: what the stream or the ring did. A stream's file ends with the same
 * object the result gets (`complete`: the file's closing part was written). */
static void stream_json(const strobe__stream *st, const strobe_result *r, int complete, char *json,
                        size_t size) {
    unsigned long long dropped = r ? (unsigned long long)r->stats.dropped_events : 0;
    if (st->mode == MODE_STREAM) {
        snprintf(json, size,
                 "{\"mode\": \"stream\", \"complete\": %s, \"events\": %llu, "
                 "\"device_events\": %llu, \"bytes\": %llu, \"dropped_events\": %llu, "
                 "\"lost_events\": %llu, \"skipped_details\": %llu, "
                 "\"skipped_counter_samples\": %llu, \"skipped_backend_events\": %llu, "
                 "\"write_error\": %s}",
                 complete ? "true" : "false",
                 (unsigned long long)(st->stopping ? st->cpu_events : st->a.events),
                 (unsigned long long)st->device_events, (unsigned long long)st->event_bytes,
                 dropped, (unsigned long long)st->a.lost, (unsigned long long)st->skipped_details,
                 (unsigned long long)st->skipped_counters, (unsigned long long)st->skipped_backend,
                 st->a.failed ? "true" : "false");
    } else {
        snprintf(json, size,
                 "{\"mode\": \"flight\", \"ring_bytes\": %llu, \"kept_bytes\": %llu, "
                 "\"recycled_chunks\": %llu, \"signal_dumps\": %llu, \"failed_dumps\": %llu, "
                 "\"dropped_events\": %llu}",
                 (unsigned long long)st->ring_cap, (unsigned long long)st->ring_now,
                 (unsigned long long)st->ring_recycled, (unsigned long long)st->dumps,
                 (unsigned long long)st->dump_errors, dropped);
    }
}

/* Sets the result's "strobe_stream" metadata. */
static void stream_meta(const strobe__stream *st, strobe_result *r) {
    if (r == NULL) return;
    char json[768];
    stream_json(st, r, st->complete, json, sizeof json);
    (void)strobe__result_set_meta(r, "strobe_stream", json);
}

/* Appends the device activity of `r` (NULL: stop failed) and completes the file. Where earlier
 * appends failed, one more try is made: the file may take the footer once the cut part of a failed
 * append is gone. Everything goes through the stream's writer: the result's events as a saved
 * result's (strobe__writer_put_result), the session's span, and the footer, which carries the
 * stats, the stream's counts ("strobe_stream", as if the footer's write succeeds; if it fails,
 * the file does not hold them), the warnings and the metadata. */
int strobe__stream_complete(strobe__session *s, strobe_result *r) {
    strobe__stream *st = s->stream;
    if (st == NULL || st->mode != MODE_STREAM) return 0;
    int64_t stop_ns = st->stop_ns;
    strobe__writer *w = st->wr;
    /* The stream's own events first (the ranges left open at stop are still in the buffer). */
    (void)out_flush(st, 0);
    st->event_bytes = st->a.off;
    st->cpu_events = st->a.events;
    st->stopping = 1;
    uint64_t skipped = st->skipped_counters;
    if (r != NULL && r->event_count) {
        /* What the backends merged into the result (kernels, copies, runtime calls, their
         * flows), written as one piece. */
        uint64_t n = 0, bad = 0;
        for (size_t i = 0; i < r->event_count; i++)
            bad += r->events[i].kind == STROBE_EVENT_COUNTER && !isfinite(r->events[i].value);
        skipped += bad;
        if (strobe__writer_put_result(w, r, STROBE__PUT_EVENTS, &n) != 0) {
            (void)strobe__sink_clear(&st->ms);
            st->a.lost += r->event_count - bad;
        } else {
            emit(st, n);
        }
    }
    /* The session's span on its own track, as a saved result has it. */
    strobe__wr_track sp = {
        .kind = STROBE__WR_THREAD, .pid = st->pid, .tid = 0, .name = "Spans", .sort_index = 0};
    int64_t spans = strobe__writer_track(w, &sp);
    int src = spans < 0 ? (int)spans : 0;
    if (src == 0) {
        strobe__wr_event e = {.track = (uint32_t)spans,
                              .flags = STROBE__WR_COMPLETE | STROBE__WR_SESSION,
                              .cat = "Trace",
                              .name = "strobe session",
                              .name_len = (size_t)-1,
                              .ts = s->start.real_ns,
                              .end = stop_ns > s->start.real_ns ? stop_ns : s->start.real_ns};
        src = w->ops->slice_begin(w, &e);
        if (src == 0) src = w->ops->slice_end(w, &e, NULL, 0);
    }
    if (src) (void)strobe__sink_clear(&st->ms);
    emit(st, 0);
    int rc = out_flush(st, 1);
    st->device_events = st->a.events - st->cpu_events;

    /* The footer: the stream's counts first, then the result's metadata. */
    char json[768];
    stream_json(st, r, 1, json, sizeof json);
    size_t nmeta = 1 + (r ? r->meta_count : 0), k = 0;
    strobe__meta *meta = malloc(nmeta * sizeof *meta);
    int crc = meta ? 0 : STROBE_ENOMEM;
    if (meta) {
        meta[k++] = (strobe__meta){.key = "strobe_stream", .json = json};
        for (size_t i = 0; r && i < r->meta_count; i++)
            if (r->meta[i].key && strcmp(r->meta[i].key, "strobe_stream") != 0)
                meta[k++] = r->meta[i];
        strobe__wr_info info = {.base_ns = w->base_ns,
                                .trace_id = r && r->trace_id ? r->trace_id : "",
                                .device_props = r ? r->device_props : NULL,
                                .stats = r,
                                .skipped_counters = skipped,
                                .meta = meta,
                                .meta_count = k,
                                .trace_name = r ? r->trace_name : NULL};
        crc = w->ops->end(w, &info);
    }
    free(meta);
    if (crc == 0 && st->fmt->running_tail) {
        /* The footer replaces the running tail. */
        char *p = strobe__sink_reserve(&st->ms, 1);
        if (p) *p = '\0';
        crc = p ? strobe__append_flush(&st->a, st->ms.buf, 1) : STROBE_ENOMEM;
        st->ms.len = 0;
    } else if (crc == 0) {
        emit(st, 0);
        crc = strobe__append_flush(&st->a, "", 1);
    }
    st->complete = crc == 0;
    if (rc == 0) rc = crc;
    if (close(st->a.fd) != 0 && rc == 0) rc = STROBE_EIO;
    st->a.fd = -1;
    stream_meta(st, r);
    return rc;
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
    stream_meta(st, r);
}

void strobe__stream_free(strobe__session *s) {
    if (s->stream == NULL) return;
    stop_thread(s->stream);
    stream_release(s->stream);
    s->stream = NULL;
}
