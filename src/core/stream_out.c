/* stream_out.c: the streaming output (stream_internal.h): the record decoder's events (decode.c)
 * written through the format's writer (trace/writer.h) as they come, and the file's header and
 * footer.
 *
 * Contents: 1. the output (each writer call's bytes appended as one piece), 2. the decoder's
 * events: ranges held open with their details until they end, 3. stacks (symbolized per batch,
 * stream_sym.c) and backend events held and laid on lanes, 4. the decoder's callbacks and a batch,
 * 5. setup, stop, and the completion of the file.
 *
 * Why the pieces are shaped as they are:
 * - The file is a whole trace after every append: each append goes where the previous running
 *   tail (JSON's closing brackets) was, with a new one after it, in one pwrite(). A kill in the
 *   middle of a pwrite() leaves whole pages of it: in a text format no event crosses a page of the
 *   file (the append sink, trace/sink.h), so the file then ends between two events, an unclosed
 *   event array that readers accept. Perfetto's packets are whole after any packet.
 * - Operator details wait with their open range (in the thread's args buffer) and are given to
 *   the writer when it ends (JSON writes the "X" then; Perfetto puts them on the slice's end,
 *   whose annotations the trace processor adds to the slice). Stacks are symbolized in the
 *   background thread, each address once.
 * - Ranges are whole ("X") events in JSON, written when they end. The DevTools engine pairs B/E
 *   events with one stack for all threads, so separate begins and ends of several threads do not
 *   load there; holding the open ranges of each thread costs memory bounded by nesting depth. A
 *   format that writes begins (Perfetto) gets them as they come, so a cut file shows the ranges
 *   open at the cut as unfinished.
 * - Each thread's times are made strictly increasing by 1 ns where the clock did not advance:
 *   a range written as ending in the very nanosecond its parent ends or its sibling begins looks
 *   mis-nested to viewers that compute with doubles (the writers' "display ends" rule), and the
 *   stream cannot revise an event it has written.
 * - Nothing is counted as written before it is in the file: each event's end is marked in the
 *   output buffer (strobe__append_mark), and an append that a full disk cuts short keeps the whole
 *   events before the cut, truncates the file there and counts the rest in lost_events, as it
 *   counts every later append's events (strobe__append_flush). The footer, written at stop,
 *   carries the result's stats and the stream's counts. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "ownfd.h"
#include "record.h"
#include "stack.h"
#include "stream.h"
#include "stream_internal.h"
#include "strobe/error.h"
#include "strobe/instrument.h"
#include "strobe/op.h"
#include "strobe/result.h"
#include "trace/json_writer.h"
#include "trace/kineto.h"
#include "trace/result_internal.h"

/* Output bytes gathered before an append is written even in the middle of a batch. */
#define FLUSH_BYTES ((size_t)4 << 20)

/* ---- 1. the stream's output ----------------------------------------------------------------- */

/* Bytes the writer holds back (Perfetto: the packets of the sequence written last), which go to
 * the sink before anything else it writes there, or at its sync. */
static size_t wr_held(const strobe__stream *st) {
    return st->wr->ops->held ? st->wr->ops->held(st->wr) : 0;
}

/* Marks the end of `events` events at `end` of the held bytes, grouped as strobe__append_mark
 * groups them. An event that cannot be marked (out of memory) is counted lost, as there. */
static void held_mark(strobe__stream *st, size_t end, uint64_t events) {
    size_t n = st->held_count;
    if (n > 0 && end - (n > 1 ? st->held_marks[n - 2].end : 0) < STROBE__APPEND_PAGE) {
        st->held_marks[n - 1].end = end;
        st->held_marks[n - 1].events += events;
    } else if (strobe__grow((void **)&st->held_marks, &st->held_cap, n + 1,
                            sizeof *st->held_marks) == 0) {
        st->held_marks[st->held_count++] = (strobe__append_boundary){end, events};
    } else {
        st->a.lost += events;
        return;
    }
    st->held_events += events;
}

/* The held bytes of the last emit are the first held_len bytes in the view (the writer handed
 * them over): committed, their events marked. Or, `lost`, they are not in the buffer. */
static void held_out(strobe__stream *st, int lost) {
    if (lost) {
        st->a.lost += st->held_events;
    } else if (st->held_len) {
        size_t base = st->a.len;
        strobe__append_commit(&st->a, st->ms.buf + base + st->held_len);
        for (size_t i = 0; i < st->held_count; i++)
            strobe__append_mark(&st->a, base + st->held_marks[i].end, st->held_marks[i].events);
    }
    st->held_len = 0;
    st->held_count = 0;
    st->held_events = 0;
}

/* Drops what the writer wrote since the last emit (a failed call). What it held before stays: in
 * the view when the writer handed it over (committed then), else still held; with an error in the
 * view, it is gone. Bytes the failed call left held are discarded, with those before them. */
static void drop(strobe__stream *st) {
    if (st->held_len) {
        size_t v = st->ms.err ? 0 : st->ms.len - st->a.len;
        if (st->ms.err || (v > 0 && v < st->held_len))
            held_out(st, 1);
        else if (v > 0)
            held_out(st, 0);
    }
    size_t h = wr_held(st);
    if (h > st->held_len) {
        st->wr->ops->discard(st->wr);
        held_out(st, 1);
    }
    strobe__sink_view(&st->ms, &st->a);
}

/* Commits what the writer wrote for the last call (straight into the append sink's buffer, through
 * the view st->ms) as one piece, and marks the end of `events` events there (0: a track, a
 * slice's begin); or, when the writer holds the call's bytes back, at their end in the held bytes,
 * marked when they reach the buffer. A piece that found no memory is dropped and its events
 * counted lost. */
static void emit(strobe__stream *st, uint64_t events) {
    if (st->ms.err) {
        st->a.lost += events;
        drop(st);
        return;
    }
    int moved = st->ms.len > st->a.len;
    if (moved) {
        /* The writer handed over what it held first. */
        if (st->held_len) held_out(st, st->ms.len - st->a.len < st->held_len);
        if (st->ms.len > st->a.len) strobe__append_commit(&st->a, st->ms.buf + st->ms.len);
    }
    size_t h = wr_held(st);
    if (events) {
        if (h)
            held_mark(st, h, events);
        else
            strobe__append_mark(&st->a, st->a.len, events);
    }
    st->held_len = h;
    /* Nothing written to the view: it still is one of the buffer as it is. */
    if (moved) strobe__sink_view(&st->ms, &st->a);
}

/* After a writer call for one event: marks it, or counts it lost when the call failed. */
static void emitted(strobe__stream *st, int rc) {
    if (rc < 0) {
        drop(st);
        st->a.lost++;
        return;
    }
    emit(st, 1);
}

/* ---- 2. the decoder's events, written -------------------------------------------------------- */

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
        drop(st);
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
    /* at_end 2: the writer wrote the begin (open_begins), and the end needs no name length. */
    /* Every field set one by one: a memset of the struct (rep stos) cost more than the rest of
     * this function on the streaming thread's path. */
    e->track = h->track;
    e->flags = 0;
    e->cat = range_category(o->scope);
    if (o->site_name) {
        /* A site's name is a C string; JSON takes at most STROBE__MAX_NAME bytes of it. */
        e->name = o->site_name;
        e->name_len = at_end == 1 ? strnlen(o->site_name, STROBE__MAX_NAME) : (size_t)-1;
    } else {
        e->name = h->names.s + o->name_off;
        e->name_len = o->name_len;
    }
    e->ts = o->start;
    e->end = e->shown_end = 0;
    e->value = 0;
    e->args = a;
    e->nargs = corr_args(a, o->ext, o->user);
    e->flow_ph = 0;
    e->flow_id = 0;
    e->flow_out = e->flow_in = NULL;
    e->nflow_out = e->nflow_in = 0;
    e->fb_ph = 0; /* write_range sets a backward op's fwdbwd flow */
    e->fb_id = 0;
    e->fb_from = 0;
}

/* ---- fwdbwd flows: each backward op linked to its forward op ------------------------------- */

/* The key of a (torch thread, sequence number) pair, never 0: as json_writer.c's fwd_key, thread
 * ids above 2^16 may collide. */
static uint64_t fwd_key(uint64_t tid, int64_t seq) {
    return (tid << 48 ^ ((uint64_t)seq & ((UINT64_C(1) << 48) - 1))) | UINT64_C(1) << 63;
}

/* The slot of a key: sequence numbers count up per thread, so consecutive ones take consecutive
 * slots and a forward pass of up to FWDBWD_SLOTS numbered ops keeps them all. */
static fwd_slot *fwd_slot_of(strobe__stream *st, uint64_t key) {
    return &st->fwd[(key ^ key >> 48 ^ key >> 55) & (FWDBWD_SLOTS - 1)];
}

/* A torch op is about to be written (JSON: it has ended; Perfetto: it begins, as the slice's flow
 * ids go with its begin): a forward op takes its key's slot (that key's latest to start, as
 * torch's generateForwardBackwardLink keeps it); a backward op that finds its forward op's there
 * gets a flow from it in `e`, and the slot is freed (one flow per forward op). A forward op only
 * seen later (its thread's records decoded after the backward op's) has none. */
static void fwdbwd_link(strobe__stream *st, const thr *h, const open_rng *o, strobe__wr_event *e) {
    if (st->fwd == NULL) {
        if (o->fwd_tid) return; /* no forward op seen yet */
        st->fwd = calloc(FWDBWD_SLOTS, sizeof *st->fwd);
        if (st->fwd == NULL) {
            st->fb_evicted++;
            return;
        }
    }
    if (o->fwd_tid) {
        uint64_t key = fwd_key(o->fwd_tid, o->seq);
        fwd_slot *f = fwd_slot_of(st, key);
        if (f->key != key) return;
        f->key = 0;
        e->fb_ph = STROBE__FLOW_FINISH;
        st->fb_ids++;
        if (st->fmt->open_begins) {
            /* Perfetto: the flow its forward op's begin started ends here. */
            e->fb_id = f->id;
            return;
        }
        e->fb_id = st->fb_ids;
        e->fb_from = 1;
        e->fb_from_track = f->track;
        e->fb_from_ts = f->ts;
        return;
    }
    if (h->dt.torch_tid == 0) return;
    uint64_t key = fwd_key(h->dt.torch_tid, o->seq);
    fwd_slot *f = fwd_slot_of(st, key);
    if (f->key == key && f->ts > o->start) return; /* a later one of the key is there */
    if (f->key != 0 && f->key != key) st->fb_evicted++;
    *f = (fwd_slot){key, o->start, h->track, 0};
    if (st->fmt->open_begins) {
        /* Perfetto: a slice's flow ids go with its begin, before anyone knows whether a backward
         * op will come, so every numbered forward op starts a flow of its own; those that no
         * backward op ends link nothing. */
        f->id = ++st->fb_next;
        e->fb_ph = STROBE__FLOW_START;
        e->fb_id = f->id;
    }
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
    range_event(h, o, st->fmt->open_begins ? 2 : 1, corr, &e);
    e.end = end;
    if (o->seq >= 0 && !st->fmt->open_begins) fwdbwd_link(st, h, o, &e);
    emitted(st, st->wr->ops->slice_end(st->wr, &e, st->wargs, k));
}

static void write_instant(strobe__stream *st, thr *h, const char *name, size_t nlen, int64_t ts,
                          uint64_t ext, uint64_t user, const strobe__dec_arg *own, size_t nown) {
    strobe__wr_arg a[2 + STROBE__DEC_MAX_ARGS];
    strobe__wr_event e = {.track = h->track,
                          .cat = STROBE_KINETO_CAT_CPU_INSTANT_EVENT,
                          .name = name,
                          .name_len = nlen,
                          .ts = ts,
                          .args = a};
    e.nargs = corr_args(a, ext, user);
    for (size_t i = 0; i < nown && i < STROBE__DEC_MAX_ARGS; i++)
        a[e.nargs++] = (strobe__wr_arg){
            .name = own[i].key, .type = STROBE__PFT_JSON, .s = own[i].json, .slen = own[i].len};
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
    o->seq = -1;
    o->fwd_tid = 0;
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
    const open_rng *o = &h->open[h->depth - 1];
    range_event(h, o, 0, corr, &e);
    if (o->seq >= 0) fwdbwd_link(st, h, o, &e); /* at its begin, with its flow ids */
    if (st->wr->ops->slice_begin(st->wr, &e))
        drop(st); /* its end is counted when it fails too */
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

/* A stack's frames, symbolized (the batch's addresses were symbolized before it was decoded),
 * innermost first and joined by ';', into st->text. @return 0 or STROBE_ENOMEM. */
static int stack_text(strobe__stream *st, const uint64_t *pcs, uint32_t n) {
    st->text.len = 0;
    int rc = 0;
    int leading = 1; /* strobe's own frames before the caller's are left out */
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        const char *name = strobe__stream_syms_get(&st->syms, pcs[i]);
        if (name == NULL) name = "??";
        if (leading && strobe__frame_is_own(name) && i + 1 < n) continue;
        if (!leading) rc = strobe__buf_put(&st->text, ";", 1);
        leading = 0;
        if (rc == 0) rc = strobe__buf_put(&st->text, name, strlen(name));
    }
    return rc;
}

/* A memory event: an instant with Kineto's args on the allocating thread, and the allocator's
 * totals as counters. */
static int s_memory(void *ctx, const strobe__dec_memory *m) {
    strobe__stream *st = ctx;
    thr *h = st->cur;
    strobe__wr_arg a[8] = {
        {.name = STROBE_KINETO_ARG_DEVICE_TYPE, .type = STROBE__PFT_INT, .i = m->c10_type},
        {.name = STROBE_KINETO_ARG_DEVICE_ID, .type = STROBE__PFT_INT, .i = m->index},
        {.name = STROBE_KINETO_ARG_ADDR, .type = STROBE__PFT_UINT, .u = m->addr},
        {.name = STROBE_KINETO_ARG_MEM_BYTES, .type = STROBE__PFT_INT, .i = m->bytes},
        {.name = STROBE_KINETO_ARG_TOTAL_ALLOCATED,
         .type = STROBE__PFT_INT,
         .i = m->total_allocated},
        {.name = STROBE_KINETO_ARG_TOTAL_RESERVED, .type = STROBE__PFT_INT, .i = m->total_reserved},
    };
    size_t na = 6;
    /* A sample's weight (strobe record --heap), in whole bytes. */
    if (m->weight > 0)
        a[na++] = (strobe__wr_arg){.name = STROBE__ARG_MEM_WEIGHT,
                                   .type = STROBE__PFT_INT,
                                   .i = (int64_t)(m->weight + 0.5)};
    /* The allocating call stack (--heap-stacks), as a range's "Call stack". */
    if (m->npcs && stack_text(st, m->pcs, m->npcs) == 0)
        a[na++] = (strobe__wr_arg){.name = STROBE_KINETO_ARG_CALL_STACK,
                                   .type = STROBE__PFT_STRING,
                                   .s = st->text.s,
                                   .slen = st->text.len};
    strobe__wr_event e = {.track = h->track,
                          .cat = STROBE_KINETO_CAT_CPU_INSTANT_EVENT,
                          .name = STROBE_KINETO_MEMORY_EVENT_NAME,
                          .name_len = (size_t)-1,
                          .ts = m->ts,
                          .args = a,
                          .nargs = na};
    emitted(st, st->wr->ops->instant(st->wr, &e));
    for (int k = 0; k < 2; k++)
        write_counter(st, h, m->counter[k], strlen(m->counter[k]), m->ts,
                      (double)(k ? m->total_reserved : m->total_allocated));
    return 0;
}

/* ---- 3. stacks and backend events ------------------------------------------------------------ */

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

static int s_stack(void *ctx, const uint64_t *pcs, uint32_t n) {
    strobe__stream *st = ctx;
    int rc = stack_text(st, pcs, n);
    return rc ? rc : arg_string(st, st->cur, "Call stack", st->text.s, st->text.len);
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
        drop(st);
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

/* ---- 4. the decoder's callbacks -----------------------------------------------------------------
 */

static int s_begin(void *ctx, const strobe__dec_event *e) {
    strobe__stream *st = ctx;
    int rc = push_range(st->cur, e);
    open_rng *o = &st->cur->open[st->cur->depth - 1];
    for (size_t i = 0; i < e->nargs && rc == 0; i++) {
        const strobe__dec_arg *a = &e->args[i];
        rc = arg_add(st->cur, a->key, a->json, a->len, 1);
        /* torch's ids (decode.c writes them as integers), for the fwdbwd flows. */
        if (rc == 0 && strcmp(a->key, STROBE_KINETO_ARG_SEQUENCE_NUMBER) == 0)
            o->seq = strtoll(a->json, NULL, 10);
        else if (rc == 0 && strcmp(a->key, STROBE_KINETO_ARG_FWD_THREAD_ID) == 0)
            o->fwd_tid = strtoull(a->json, NULL, 10);
    }
    return rc ? rc : begin_out(st, st->cur);
}

static int s_end(void *ctx, int64_t ts) {
    strobe__stream *st = ctx;
    pop_range(st, st->cur, ts);
    return 0;
}

static int s_instant(void *ctx, const strobe__dec_event *e) {
    strobe__stream *st = ctx;
    write_instant(st, st->cur, e->name, e->name_len, e->ts, e->ext, e->user, e->args, e->nargs);
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
    write_instant(st, h, marker, sizeof marker - 1, h->dt.prev + 1, 0, 0, NULL, 0);
    h->dt.prev++;
    return 0;
}

static const char *s_top(void *ctx, size_t *depth) {
    const thr *h = ((strobe__stream *)ctx)->cur;
    *depth = h->depth;
    return h->depth ? top_name(h) : NULL;
}

static int s_arg(void *ctx, const char *key, const char *json, size_t len, int replace) {
    /* arg_add copies the key: a transient one needs nothing more. */
    return arg_add(((strobe__stream *)ctx)->cur, key, json, len, replace & 1);
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
    return st->a.len + st->held_len;
}

/* Makes sure the descriptor about to be written through still is the stream's file. A program
 * may have closed it (a daemon closing every descriptor, close_range()) or put a file of its own
 * at its number (dup2()): that number is then left alone, never written or closed, and the file is
 * opened again by its path (not truncated: the next append goes where the last one ended), if the
 * path still names the same file. Where it does not, the stream's descriptor is gone for good and
 * every later append's events are counted lost (strobe__append_flush with no descriptor).
 * @return 0, or STROBE_EIO when the file could not be found again. */
static int out_own_fd(strobe__stream *st) {
    if (st->fd_lost) return STROBE_EIO;
    if (st->a.fd >= 0 && strobe__fd_is(st->a.fd, st->file_dev, st->file_ino)) return 0;
    st->a.fd = -1;
    int fd = strobe__fd_open(st->path, O_WRONLY, 0);
    if (fd >= 0 && !strobe__fd_is(fd, st->file_dev, st->file_ino)) {
        close(fd);
        fd = -1;
        errno = ESTALE;
    }
    if (fd < 0) {
        strobe__log(STROBE_LOG_ERROR,
                    "stream %s: the program closed or reused the file's descriptor, and the file "
                    "cannot be opened again (%s): the rest of the stream is lost (counted)",
                    st->path, strerror(errno));
        st->fd_lost = st->fd_was_lost = 1;
        return STROBE_EIO;
    }
    if (st->reopens++ == 0)
        strobe__log(STROBE_LOG_WARN,
                    "stream %s: the program closed or reused the file's descriptor; opened again",
                    st->path);
    st->a.fd = fd;
    return 0;
}

/* The cap (config.stream_max_bytes): keeps the whole events of the buffer that fit in the file
 * with `closing` after them, and leaves out and counts the rest, and every event after (the
 * stream then has a gap at most at its end). Nothing happens while `nocap` (the header and the
 * closing part). */
static void out_cap(strobe__stream *st, size_t closing) {
    strobe__append *a = &st->a;
    if (st->max_bytes == 0 || st->nocap || a->len == 0) return;
    uint64_t room = st->max_bytes > a->off + closing ? st->max_bytes - a->off - closing : 0;
    if (!st->capped && a->len <= room) return;
    size_t keep = 0;
    uint64_t kept = 0;
    for (size_t i = 0; !st->capped && i < a->mark_count && a->marks[i].end <= room; i++) {
        keep = a->marks[i].end;
        kept += a->marks[i].events;
    }
    if (!st->capped)
        strobe__log(STROBE_LOG_WARN,
                    "stream %s: the file reached its cap of %llu bytes; later events are left "
                    "out (counted)",
                    st->path, (unsigned long long)st->max_bytes);
    st->capped = 1;
    st->capped_events += a->pending - kept;
    a->lost += a->pending - kept;
    a->pending = 0;
    a->len = keep;
    a->mark_count = 0;
    if (kept) strobe__append_mark(a, keep, kept); /* one group: the events kept */
}

/* Appends what is encoded (what the writer holds too), with the format's running tail after it.
 * `retry`: see strobe__append_flush. @return 0 or the output's error. */
static int out_flush(strobe__stream *st, int retry) {
    if (st->held_len) {
        (void)st->wr->ops->sync(st->wr); /* an error: emit counts the held events lost */
        emit(st, 0);
    }
    const char *tail = st->fmt->running_tail;
    out_cap(st, tail ? strlen(tail) : 0);
    if (out_own_fd(st) != 0) {
        /* The append fails without a descriptor, and counts its events lost. */
        st->a.fd = -1;
        st->a.err = STROBE_EIO;
        retry = 0;
    }
    int rc = strobe__append_flush(&st->a, tail ? tail : "", retry);
    strobe__sink_view(&st->ms, &st->a); /* the buffer starts over */
    return rc;
}

/* Whether records may carry stacks: a range's (with_stack) or an allocation's (profile_memory:
 * the heap interposer's --heap-stacks), whose addresses are symbolized before each batch. */
static int wants_syms(const strobe__stream *st) {
    return st->s->cfg.with_stack || st->s->cfg.profile_memory;
}

int strobe__stream_batch(strobe__stream *st, strobe__chunk *c) {
    int rc = 0;
    if (c == NULL) return 0;
    st->conv = strobe__clock_calibrate(st->s->start, strobe__clock_anchor_now());
    if (wants_syms(st)) {
        for (strobe__chunk *k = c; k && rc == 0; k = k->qnext)
            rc = strobe__stream_syms_scan(&st->syms, (const char *)(k + 1), (size_t)k->used);
        if (rc == 0) rc = strobe__stream_syms_resolve(&st->syms);
    }
    while (c) {
        strobe__chunk *next = c->qnext;
        thr *h = thr_find(st, c->owner);
        int drc = h ? decode(st, h, (const char *)(c + 1), (size_t)c->used) : STROBE_ENOMEM;
        if (rc == 0) rc = drc;
        strobe__chunk_pool_push(st, c);
        if (out_pending(st) >= FLUSH_BYTES) out_flush(st, 0);
        c = next;
    }
    flush_backend(st, 0);
    if (out_pending(st)) out_flush(st, 0);
    return rc ? rc : st->a.err;
}

/* ---- 5. setup, stop, completion ------------------------------------------------------------- */

void strobe__stream_out_init(strobe__stream *st) {
    st->dec.s = st->s;
    st->dec.conv = &st->conv;
    st->dec.strict = 1;
    st->dec.ops = &stream_ops;
    st->dec.ctx = st;
}

int strobe__stream_out_open(strobe__stream *st) {
    strobe__session *s = st->s;
    st->pid = (int64_t)s->pid;
    snprintf(st->pname, sizeof st->pname, "strobe");
    FILE *f = fopen("/proc/self/comm", "re");
    if (f) {
        if (fgets(st->pname, sizeof st->pname, f) == NULL)
            snprintf(st->pname, sizeof st->pname, "strobe");
        fclose(f);
        st->pname[strcspn(st->pname, "\n")] = '\0';
    }
    /* The format by the path's suffix, as a saved trace's (never compressed: the file is appended
     * to as it grows). */
    st->fmt = strobe__writer_for_path(st->path);
    st->a.page_pad = st->fmt->pad;
    strobe__sink_view(&st->ms, &st->a);
    st->wr = strobe__writer_open(st->fmt, &st->ms, STROBE__WR_STREAMING);
    return st->wr ? 0 : STROBE_ENOMEM;
}

void strobe__stream_out_release(strobe__stream *st) {
    strobe__writer_free(st->wr);
    st->wr = NULL;
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
    free(st->fwd);
    free(st->held_marks);
    strobe__stream_syms_free(&st->syms);
    free(st->bk);
    strobe__buf_free(&st->bk_names);
    for (size_t i = 0; i < st->bkt_count; i++)
        free(st->bkt[i].backend);
    free(st->bkt);
}

/* The stream's header: what is known when the window opens (the trace id, the time base), and
 * the process's track. Stats, metadata and the trace name come at the end. @return 0 or the
 * output's error. */
int strobe__stream_header(strobe__stream *st) {
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
    /* The header is written whatever the cap: the file is a trace from the start. */
    st->nocap = 1;
    rc = out_flush(st, 0);
    st->nocap = 0;
    return rc;
}

int strobe__stream_out_finish(strobe__stream *st, const strobe__clock_conv *conv, int64_t stop_ns) {
    int rc = strobe__stream_batch(st, strobe__chunk_queue_take(st));
    st->conv = *conv;
    if (wants_syms(st)) {
        for (strobe__tstate *t = st->s->threads; t && rc == 0; t = t->sess_next)
            if (t->cur != NULL)
                rc = strobe__stream_syms_scan(&st->syms, (const char *)(t->cur + 1),
                                              (size_t)(t->pos - (char *)(t->cur + 1)));
        if (rc == 0) rc = strobe__stream_syms_resolve(&st->syms);
    }
    for (strobe__tstate *t = st->s->threads; t; t = t->sess_next) {
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
                 "\"write_error\": %s, \"max_bytes\": %llu, \"capped\": %s, "
                 "\"capped_events\": %llu, \"reopened\": %llu, \"descriptor_lost\": %s, "
                 "\"fwdbwd_flows\": %llu, \"fwdbwd_evicted\": %llu}",
                 complete ? "true" : "false",
                 (unsigned long long)(st->stopping ? st->cpu_events : st->a.events),
                 (unsigned long long)st->device_events, (unsigned long long)st->event_bytes,
                 dropped, (unsigned long long)st->a.lost, (unsigned long long)st->skipped_details,
                 (unsigned long long)st->skipped_counters, (unsigned long long)st->skipped_backend,
                 st->a.failed ? "true" : "false", (unsigned long long)st->max_bytes,
                 st->capped ? "true" : "false", (unsigned long long)st->capped_events,
                 (unsigned long long)st->reopens, st->fd_was_lost ? "true" : "false",
                 (unsigned long long)st->fb_ids, (unsigned long long)st->fb_evicted);
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

void strobe__stream_meta(const strobe__stream *st, strobe_result *r) {
    if (r == NULL) return;
    char json[1024];
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
    /* One more try to find a lost file again: the program may have given descriptors back. */
    st->fd_lost = 0;
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
            drop(st);
            st->a.lost += r->event_count - bad;
        } else {
            emit(st, n);
        }
    }
    int rc = out_flush(st, 1);
    /* The session's span on its own track, as a saved result has it, and the footer after it are
     * written whatever the cap (config.stream_max_bytes), so that the file stays a whole trace with
     * its counts. */
    st->nocap = 1;
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
    if (src) drop(st);
    emit(st, 0);
    int frc = out_flush(st, 1);
    if (rc == 0) rc = frc;
    st->device_events = st->a.events - st->cpu_events;

    /* The footer: the stream's counts first, then the result's metadata. */
    char json[1024];
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
        /* The footer replaces the running tail: taken out of the view as the closing text. */
        size_t n = st->ms.len - st->a.len;
        char *tail = malloc(n + 1);
        if (tail) {
            memcpy(tail, st->ms.buf + st->a.len, n);
            tail[n] = '\0';
        }
        drop(st);
        crc = tail ? out_own_fd(st) : STROBE_ENOMEM;
        if (crc == 0) crc = strobe__append_flush(&st->a, tail, 1);
        free(tail);
    } else if (crc == 0) {
        emit(st, 0);
        crc = out_own_fd(st);
        if (crc == 0) crc = strobe__append_flush(&st->a, "", 1);
    }
    drop(st);
    st->complete = crc == 0;
    if (rc == 0) rc = crc;
    /* Closed only while it still is the stream's file (the program may own the number now). */
    if (st->a.fd >= 0 && strobe__fd_is(st->a.fd, st->file_dev, st->file_ino) &&
        close(st->a.fd) != 0 && rc == 0)
        rc = STROBE_EIO;
    st->a.fd = -1;
    strobe__stream_meta(st, r);
    return rc;
}
