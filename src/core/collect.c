/* collect.c: turns the quiesced threads' records into a result (stage 3 of DESIGN.md).
 *
 * Each thread's records are read in order. Begins become events in start order (parents before
 * children) and go on a stack; ends pop it, so the event tree (parent, first_child, next_sibling)
 * comes out of the same pass. Names are copied into the result once each: static call sites by
 * address, run-time names by content.
 *
 * Repairs, each counted in the stats: an end with no open begin is dropped (unmatched_ends);
 * ranges open when a thread's buffer filled close at that time (truncated_ranges) and ranges
 * open at stop close at stop (unfinished_ranges), nested ones 1 ns apart (see close_open). A
 * thread's timestamps are kept monotonic, so a child never starts before its parent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "decode.h"
#include "details.h"
#include "ownthread.h"
#include "record.h"
#include "trace/kineto.h"
#include "trace/result_internal.h"
#include "sample.h"
#include "stack.h"
#include "state.h"
#include "util/bigmem.h"
#include "util/strtab.h"
#include "util/u64map.h"
#include "strobe/error.h"
#include "strobe/instrument.h"
#include "strobe/op.h"

/* ---- name interning -------------------------------------------------------------------- */

typedef struct {
    strobe_result *r;
    strobe__u64map sites;       /* static call sites: site address -> its name in the pool */
    strobe__strtab names;       /* run-time names, by content */
    const void *cache_site[64]; /* direct-mapped cache in front of the site table */
    const char *cache_name[64];

    /* Operator details. */
    const strobe__session *s;
    strobe__decoder dec;
    uint64_t *pcs; /* every stack's frames, one after another */
    size_t pcs_count, pcs_cap;
    struct stack_ref {
        uint32_t event;
        uint32_t n;
        size_t off;
        int sample; /* a CPU sample's stack: its leaf also names the event */
    } * stacks;
    size_t stack_count, stack_cap;
    struct backend_ev {
        int64_t start, end, handle;
        const char *name, *backend;
    } * backend;
    size_t backend_count, backend_cap;
    /* ProfilerStep ranges: which went onto the track of the thread that opened them (1), so that
     * finish_steps() leaves them out; NULL when none can (a streaming or flight session). */
    uint8_t *step_placed;
    /* CPU samples (sample.h), sorted by thread and time; NULL: none. */
    const strobe__sample *samples;
    size_t sample_count;
    const uint64_t *sample_pcs;
    /* Per sample, whether it is placed: a thread can have two states in one session (an exiting
     * thread's last free() attaches it again after its state was let go), and each would place
     * the same samples, past the event array counted for one. */
    uint8_t *sample_placed;
    int64_t sample_lo, sample_hi; /* the window: samples outside it are left out */
    int64_t sample_offset;        /* epoch ns minus CLOCK_MONOTONIC ns */
    /* Memory handed over as the decoder goes (arena_releasable): each 2 MB span of the arena
     * goes back to the kernel once every chunk in it is decoded, and the event array is faulted
     * in just ahead of the events, so that the kernel can reuse the arena's pages for it. (On a
     * VM, a page the guest has not touched recently costs several times its zeroing: a
     * 10-million-event stop spent most of its time there.) NULL: off; the array was faulted in
     * whole. */
    uint32_t *span_left; /* per span: its chunks not yet decoded */
    size_t span_count;
    size_t populated;            /* bytes of the event array faulted in */
    strobe__dec_ops ops_untimed; /* collect_ops without the time callback */
} interner;

static const char *site_name(interner *in, const strobe_site *site) {
    size_t c = ((uintptr_t)site >> 3) & 63u;
    if (in->cache_site[c] == site) return in->cache_name[c];
    /* A site is a static object: its address, below UINT64_MAX, is the key. */
    uint64_t *v = strobe__u64map_put(&in->sites, (uint64_t)(uintptr_t)site, NULL);
    if (v == NULL) return NULL;
    if (*v == 0) { /* new (or left empty when a copy failed) */
        const char *src = site->name ? site->name : "(null)";
        size_t len = strnlen(src, STROBE__MAX_NAME);
        const char *copy = strobe__pool_strndup(&in->r->pool, src, len);
        if (copy == NULL) return NULL;
        *v = (uint64_t)(uintptr_t)copy;
    }
    const char *name = (const char *)(uintptr_t)*v;
    in->cache_site[c] = site;
    in->cache_name[c] = name;
    return name;
}

static const char *bytes_name(interner *in, const char *s, uint32_t len) {
    int64_t id = strobe__strtab_intern(&in->names, s, len);
    return id < 0 ? NULL : strobe__strtab_str(&in->names, (uint32_t)id);
}

/* ---- per-thread pass ------------------------------------------------------------------- */

typedef struct {
    uint32_t *idx;  /* open ranges */
    uint32_t *last; /* last child of each open range */
    size_t depth, cap;
    uint32_t root_last;
} open_stack;

static int stack_push(open_stack *st, uint32_t idx) {
    if (st->depth == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 64;
        uint32_t *a = realloc(st->idx, cap * sizeof *a);
        if (a == NULL) return STROBE_ENOMEM;
        st->idx = a;
        uint32_t *b = realloc(st->last, cap * sizeof *b);
        if (b == NULL) return STROBE_ENOMEM;
        st->last = b;
        st->cap = cap;
    }
    st->idx[st->depth] = idx;
    st->last[st->depth] = STROBE_NO_EVENT;
    st->depth++;
    return 0;
}

static const char *category_of(int kind, int scope) {
    if (kind == STROBE_EVENT_INSTANT) return STROBE_KINETO_CAT_CPU_INSTANT_EVENT;
    if (kind == STROBE_EVENT_COUNTER) return "cpu_counter";
    return scope == STROBE_RECORD_SCOPE_USER_SCOPE ? STROBE_KINETO_CAT_USER_ANNOTATION
                                                   : STROBE_KINETO_CAT_CPU_OP;
}

/* Appends an event and links it under the innermost open range (or as a root). */
static strobe_event *add_event(strobe_result *r, open_stack *st, const strobe__tstate *t,
                               uint32_t thread_index, int kind, int scope, const char *name,
                               int64_t ts) {
    uint32_t idx = (uint32_t)r->event_count++;
    strobe_event *e = &r->events[idx];
    e->name = name;
    e->category = category_of(kind, scope);
    e->start_ns = e->end_ns = ts;
    e->tid = t->tid;
    e->thread_index = thread_index;
    e->first_child = e->next_sibling = STROBE_NO_EVENT;
    e->kind = (uint8_t)kind;
    e->scope = (uint8_t)scope;
    e->device_type = STROBE_DEVICE_CPU;
    e->device_index = -1;
    if (kind == STROBE_EVENT_COUNTER) {
        e->parent = STROBE_NO_EVENT;
        return e;
    }
    if (st->depth) {
        uint32_t parent = st->idx[st->depth - 1];
        uint32_t *last = &st->last[st->depth - 1];
        e->parent = parent;
        e->depth = (uint32_t)st->depth;
        if (*last == STROBE_NO_EVENT) {
            r->events[parent].first_child = idx;
        } else {
            r->events[*last].next_sibling = idx;
        }
        *last = idx;
    } else {
        e->parent = STROBE_NO_EVENT;
        if (st->root_last != STROBE_NO_EVENT) r->events[st->root_last].next_sibling = idx;
        st->root_last = idx;
    }
    return e;
}

/* Closes every open range at time `at` (stop, or when the buffer filled), flagging it. Nested
 * ranges closed together end 1 ns apart, innermost first: viewers order ends that share a
 * timestamp arbitrarily, and would then see a parent end before its child. */
static void close_open(strobe_result *r, open_stack *st, int64_t at, uint16_t flag) {
    int64_t child_end = INT64_MIN;
    for (size_t j = st->depth; j-- > 0;) {
        strobe_event *e = &r->events[st->idx[j]];
        int64_t end = at - (int64_t)j;
        if (end < e->start_ns) end = e->start_ns;
        if (child_end != INT64_MIN && end <= child_end) end = child_end + 1;
        e->end_ns = end;
        e->flags |= flag;
        child_end = end;
    }
    st->depth = 0;
}

static size_t chunk_used(const strobe__tstate *t, const strobe__chunk *c) {
    return c == t->cur ? (size_t)(t->pos - (const char *)(c + 1)) : (size_t)c->used;
}

/* ---- memory handed over while decoding (interner.span_left) -------------------------------- */

#define SPAN_SHIFT 21 /* 2 MB: a huge page, as the arena and the event array are mapped */

static void span_release(interner *in, size_t sp) {
    const strobe__session *s = in->s;
    size_t off = sp << SPAN_SHIFT, len = (size_t)1 << SPAN_SHIFT;
    if (off + len > s->arena_bytes) len = s->arena_bytes - off;
    (void)madvise(s->arena + off, len, MADV_DONTNEED);
}

/* Counts each used chunk in the spans it overlaps, and releases the spans no chunk uses (the
 * prefaulted rest of the arena). span_left stays NULL where the session does not allow it, the
 * arena is small (under 16 MB) or memory ran out. */
static void spans_init(interner *in, strobe__tstate *const *list, size_t n) {
    const strobe__session *s = in->s;
    if (!s->arena_releasable || s->arena == NULL || s->arena_bytes < ((size_t)8 << SPAN_SHIFT) ||
        ((uintptr_t)s->arena & (((uintptr_t)1 << SPAN_SHIFT) - 1)))
        return;
    in->span_count = (s->arena_bytes + ((size_t)1 << SPAN_SHIFT) - 1) >> SPAN_SHIFT;
    in->span_left = calloc(in->span_count, sizeof *in->span_left);
    if (in->span_left == NULL) return;
    for (size_t i = 0; i < n; i++)
        for (const strobe__chunk *c = list[i]->first; c; c = c->next) {
            size_t off = (size_t)((const char *)c - s->arena);
            for (size_t sp = off >> SPAN_SHIFT; sp <= (off + s->chunk_bytes - 1) >> SPAN_SHIFT;
                 sp++)
                in->span_left[sp]++;
        }
    for (size_t sp = 0; sp < in->span_count; sp++)
        if (in->span_left[sp] == 0) span_release(in, sp);
}

/* Chunk c is decoded: the spans it was the last of go back. */
static void chunk_done(interner *in, const strobe__chunk *c) {
    const strobe__session *s = in->s;
    size_t off = (size_t)((const char *)c - s->arena);
    for (size_t sp = off >> SPAN_SHIFT; sp <= (off + s->chunk_bytes - 1) >> SPAN_SHIFT; sp++)
        if (--in->span_left[sp] == 0) span_release(in, sp);
}

/* Faults in the event array for `more` events past the current end, 16 MB at a time. */
static void populate_ahead(interner *in, size_t more) {
    strobe_result *r = in->r;
    size_t need = (r->event_count + more) * sizeof(strobe_event);
    if (need <= in->populated || in->populated >= r->events_map_bytes) return;
    size_t to =
        need > in->populated + ((size_t)16 << 20) ? need : in->populated + ((size_t)16 << 20);
    to = (to + ((size_t)1 << SPAN_SHIFT) - 1) & ~(((size_t)1 << SPAN_SHIFT) - 1);
    if (to > r->events_map_bytes) to = r->events_map_bytes;
    strobe__big_populate((char *)r->events + in->populated, to - in->populated);
    in->populated = to;
}

/* ---- per-thread pass (continued) ------------------------------------------------------- */

/* Whether a record carries a time: all but correlation ids and the details after a begin. */
static int rec_timed(unsigned kind) {
    return kind != STROBE__REC_CORR && kind != STROBE__REC_SHAPES && kind != STROBE__REC_FLOPS &&
           kind != STROBE__REC_STACK && kind != STROBE__REC_PERF;
}

/* ---- ProfilerStep ranges on their thread's track ------------------------------------------- */

/* Step k of the session (the open one last), its times in ns: an open step ends at stop. */
static size_t step_total(const strobe__session *s) {
    return s->step_count + (s->step_open ? 1u : 0u);
}
static struct strobe__step_range step_at(const strobe__session *s, size_t k) {
    return k < s->step_count ? s->steps[k]
                             : (struct strobe__step_range){s->step_open_number, s->step_open_raw, 0,
                                                           s->step_open_tid};
}
static void step_times(const strobe__session *s, size_t k, const strobe__clock_conv *conv,
                       int64_t stop_ns, int64_t *start, int64_t *end) {
    struct strobe__step_range sr = step_at(s, k);
    *start = strobe__clock_to_ns(conv, sr.start_raw);
    *end = k < s->step_count ? strobe__clock_to_ns(conv, sr.end_raw) : stop_ns;
    if (*end > stop_ns) *end = stop_ns;
    if (*end < *start) *end = *start;
}

/* A begin or end of a step that a thread opened, in time order. */
typedef struct step_mark {
    int64_t ns;
    uint32_t step;
    uint8_t is_end;
} step_mark;

typedef struct step_marks {
    step_mark *m;
    size_t n, next;
    uint8_t *nests;  /* per step (session numbering): both its ends fall where nothing is open */
    uint32_t *event; /* per step: its event, once begun */
} step_marks;

/* A step goes on the track of the thread that opened it, as torch's record_function does, when
 * it nests there: the same ranges of that thread are open at its begin and at its end, and none
 * of them ends in between (a record with the same time as a boundary counts as before it). It
 * is then a child of the innermost of them: a training loop's steps nest inside the Python
 * functions around the loop (with_stack), or inside a user scope around it. A step whose
 * boundaries fall at different depths (one called inside an iteration's user scope) crosses that
 * scope, and stays on the "ProfilerStep" track (finish_steps). One pass over the thread's records
 * finds the depth at each boundary and the least depth between a step's two. @return 0 or
 * STROBE_ENOMEM. */
static int steps_for_thread(interner *in, const strobe__tstate *t, const strobe__clock_conv *conv,
                            int64_t stop_ns, step_marks *sm) {
    const strobe__session *s = in->s;
    memset(sm, 0, sizeof *sm);
    size_t total = step_total(s);
    if (in->step_placed == NULL || total == 0) return 0;
    for (size_t k = 0; k < total; k++)
        sm->n += step_at(s, k).tid == t->tid ? 2u : 0u;
    if (sm->n == 0) return 0;
    sm->m = malloc(sm->n * sizeof *sm->m);
    sm->nests = calloc(total, 1);
    sm->event = malloc(total * sizeof *sm->event);
    if (sm->m == NULL || sm->nests == NULL || sm->event == NULL) return STROBE_ENOMEM;
    /* Per mark: the depth there; per end mark: the least depth since its step's begin. */
    size_t *at = calloc(2 * sm->n, sizeof *at);
    if (at == NULL) return STROBE_ENOMEM;
    size_t *least = at + sm->n;
    size_t n = 0;
    for (size_t k = 0; k < total; k++) {
        if (step_at(s, k).tid != t->tid) continue;
        int64_t a, b;
        step_times(s, k, conv, stop_ns, &a, &b);
        sm->m[n++] = (step_mark){a, (uint32_t)k, 0};
        sm->m[n++] = (step_mark){b, (uint32_t)k, 1};
    }
    size_t depth = 0, mi = 0, low = 0;
    int64_t prev = INT64_MIN;
    int truncated = 0;
    for (const strobe__chunk *c = t->first; c && !truncated; c = c->next) {
        const char *p = (const char *)(c + 1);
        const char *end = p + chunk_used(t, c);
        while (p < end) {
            uint64_t w0;
            memcpy(&w0, p, 8);
            unsigned kind = STROBE__REC_KIND(w0);
            int starts_event;
            size_t size = strobe__rec_size(p, (size_t)(end - p), &starts_event);
            if (size == 0) break;
            if (rec_timed(kind)) {
                /* The same clamp as collect_thread's, so that both passes agree. */
                int64_t ts = strobe__clock_to_ns(conv, STROBE__REC_TS(w0));
                if (ts < prev) ts = prev;
                prev = ts;
                for (; mi < n && sm->m[mi].ns < ts; mi++) {
                    at[mi] = depth;
                    if (sm->m[mi].is_end)
                        least[mi] = low;
                    else
                        low = depth;
                }
                if (kind == STROBE__REC_END) {
                    depth -= depth > 0;
                    if (depth < low) low = depth;
                } else if (kind == STROBE__REC_TRUNC)
                    truncated = 1; /* ranges end where the buffer filled: leave steps apart */
                else if (kind == STROBE__REC_BEGIN_SITE || kind == STROBE__REC_BEGIN_NAME)
                    depth++;
            }
            p += size;
        }
    }
    for (; mi < n; mi++) {
        at[mi] = depth;
        if (sm->m[mi].is_end)
            least[mi] = low;
        else
            low = depth;
    }
    for (size_t i = 0; i + 1 < n && !truncated; i += 2)
        sm->nests[sm->m[i].step] = at[i] == at[i + 1] && least[i + 1] == at[i];
    free(at);
    return 0;
}

static void step_marks_free(step_marks *sm) {
    free(sm->m);
    free(sm->nests);
    free(sm->event);
}

/* Applies the boundaries before time `before` (all of them with INT64_MAX) to the thread's open
 * ranges: a nesting step begins as a child of the innermost open range (or a root), or ends
 * with nothing open inside it. */
static int apply_step_marks(interner *in, step_marks *sm, open_stack *st, const strobe__tstate *t,
                            uint32_t thread_index, int64_t before) {
    strobe_result *r = in->r;
    for (; sm->next < sm->n && sm->m[sm->next].ns < before; sm->next++) {
        const step_mark *mk = &sm->m[sm->next];
        if (!sm->nests[mk->step]) continue;
        if (mk->is_end) {
            uint32_t ev = sm->event[mk->step];
            if (st->depth > 0 && st->idx[st->depth - 1] == ev) {
                r->events[ev].end_ns = mk->ns;
                st->depth--;
            }
            continue;
        }
        char name[40];
        int len = snprintf(name, sizeof name, "ProfilerStep#%llu",
                           (unsigned long long)step_at(in->s, mk->step).number);
        const char *iname = bytes_name(in, name, (uint32_t)len);
        if (iname == NULL) return STROBE_ENOMEM;
        strobe_event *e = add_event(r, st, t, thread_index, STROBE_EVENT_RANGE,
                                    STROBE_RECORD_SCOPE_USER_SCOPE, iname, mk->ns);
        e->correlation_id = e->user_correlation_id = 0;
        sm->event[mk->step] = (uint32_t)(e - r->events);
        in->step_placed[mk->step] = 1;
        int rc = stack_push(st, sm->event[mk->step]);
        if (rc) return rc;
    }
    return 0;
}

/* ---- the decoder's events, into the result ------------------------------------------------ */

/* One thread's collection: the decoder's consumer. */
typedef struct cthread {
    interner *in;
    strobe_result *r;
    open_stack st;
    const strobe__tstate *t;
    uint32_t ti; /* the thread's index */
    strobe_stats *stats;
    step_marks sm;
    int64_t trunc_ns; /* where the buffer filled (not streaming); INT64_MIN: it never did */
    uint32_t marker;  /* the "buffer full" instant, or STROBE_NO_EVENT */
    size_t sample, sample_end; /* the thread's samples not yet placed */
    int64_t last_ts;           /* the start of the thread's latest event */
} cthread;

/* The time of sample k on the session's clock. */
static int64_t sample_ns(const interner *in, size_t k) {
    return in->samples[k].mono_ns + in->sample_offset;
}

/* The samples of thread `tid`: [*lo, *hi) of in->samples (sorted by thread). */
static void sample_range(const interner *in, int64_t tid, size_t *lo, size_t *hi) {
    size_t a = 0, b = in->sample_count;
    while (a < b) {
        size_t m = (a + b) / 2;
        if (in->samples[m].tid < tid)
            a = m + 1;
        else
            b = m;
    }
    *lo = a;
    while (a < in->sample_count && in->samples[a].tid == tid)
        a++;
    *hi = a;
}

/* Places the thread's samples taken before `before` as "cpu_sample" instants inside the ranges
 * open then: each is an event on its thread's timeline, with its stack as "Call stack" (symbolized
 * with the ranges' stacks, in finish_stacks). A sample is never placed before the thread's latest
 * event, so the thread's events stay sorted (the perf clock and the records' clock are read apart
 * by a few ns). */
static int place_samples(cthread *c, int64_t before) {
    interner *in = c->in;
    for (; c->sample < c->sample_end; c->sample++) {
        int64_t ts = sample_ns(in, c->sample);
        if (ts >= before) break;
        if (ts < in->sample_lo || ts > in->sample_hi || in->sample_placed[c->sample]) continue;
        in->sample_placed[c->sample] = 1;
        /* The steps that begin or end before it come first (the thread's events stay sorted). */
        if (c->sm.n) {
            int rc = apply_step_marks(in, &c->sm, &c->st, c->t, c->ti, ts);
            if (rc) return rc;
        }
        if (ts < c->last_ts) ts = c->last_ts;
        c->last_ts = ts;
        const strobe__sample *sm = &in->samples[c->sample];
        if (strobe__grow((void **)&in->pcs, &in->pcs_cap, in->pcs_count + sm->n, sizeof *in->pcs) ||
            strobe__grow((void **)&in->stacks, &in->stack_cap, in->stack_count + 1,
                         sizeof *in->stacks))
            return STROBE_ENOMEM;
        strobe_event *e =
            add_event(c->r, &c->st, c->t, c->ti, STROBE_EVENT_INSTANT,
                      STROBE_RECORD_SCOPE_USER_SCOPE, STROBE_KINETO_CAT_CPU_SAMPLE, ts);
        e->category = STROBE_KINETO_CAT_CPU_SAMPLE;
        memcpy(in->pcs + in->pcs_count, in->sample_pcs + sm->off, 8u * sm->n);
        in->stacks[in->stack_count++] =
            (struct stack_ref){(uint32_t)(e - c->r->events), sm->n, in->pcs_count, 1};
        in->pcs_count += sm->n;
    }
    return 0;
}

static int c_time(void *ctx, int64_t ts) {
    cthread *c = ctx;
    int rc = c->sample < c->sample_end ? place_samples(c, ts) : 0;
    c->last_ts = ts;
    if (rc == 0 && c->sm.n) rc = apply_step_marks(c->in, &c->sm, &c->st, c->t, c->ti, ts);
    return rc;
}

static const char *c_name(cthread *c, const strobe_site *site, const char *name, size_t len) {
    return site ? site_name(c->in, site) : bytes_name(c->in, name, (uint32_t)len);
}

/* The event's own args (a site's constant args, kept as they are: they live as long as the
 * process; a payload and args copied into the record, copied, keys too). */
static int event_args(cthread *c, uint32_t idx, const strobe__dec_event *d) {
    int rc = 0;
    for (size_t i = 0; i < d->nargs && rc == 0; i++) {
        const strobe__dec_arg *a = &d->args[i];
        const char *key = a->key;
        if (a->transient) {
            key = strobe__pool_strdup(&c->r->pool, key);
            if (key == NULL) return STROBE_ENOMEM;
        }
        rc = strobe__event_put_arg(c->r, idx, key, a->json, a->transient, 1);
    }
    return rc;
}

static int c_begin(void *ctx, const strobe__dec_event *d) {
    cthread *c = ctx;
    const char *name = c_name(c, d->site, d->name, d->name_len);
    if (name == NULL) return STROBE_ENOMEM;
    strobe_event *e =
        add_event(c->r, &c->st, c->t, c->ti, STROBE_EVENT_RANGE, d->scope, name, d->ts);
    e->correlation_id = d->ext;
    e->user_correlation_id = d->user;
    uint32_t idx = (uint32_t)(e - c->r->events);
    int rc = event_args(c, idx, d);
    return rc ? rc : stack_push(&c->st, idx);
}

static int c_end(void *ctx, int64_t ts) {
    cthread *c = ctx;
    if (c->st.depth == 0) {
        c->stats->unmatched_ends++;
    } else {
        c->r->events[c->st.idx[--c->st.depth]].end_ns = ts;
    }
    return 0;
}

static int c_instant(void *ctx, const strobe__dec_event *d) {
    cthread *c = ctx;
    const char *name = c_name(c, d->site, d->name, d->name_len);
    if (name == NULL) return STROBE_ENOMEM;
    strobe_event *e =
        add_event(c->r, &c->st, c->t, c->ti, STROBE_EVENT_INSTANT, d->scope, name, d->ts);
    e->correlation_id = d->ext;
    e->user_correlation_id = d->user;
    return event_args(c, (uint32_t)(e - c->r->events), d);
}

static int c_counter(void *ctx, int64_t ts, const strobe_site *site, const char *name, size_t len,
                     double value) {
    cthread *c = ctx;
    const char *n = c_name(c, site, name, len);
    if (n == NULL) return STROBE_ENOMEM;
    strobe_event *e = add_event(c->r, &c->st, c->t, c->ti, STROBE_EVENT_COUNTER,
                                STROBE_RECORD_SCOPE_USER_SCOPE, n, ts);
    e->value = value;
    return 0;
}

static int put_arg_i64(strobe_result *r, uint32_t ev, const char *key, int64_t v) {
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)v);
    return strobe__event_put_arg(r, ev, key, num, 1, 1);
}

/* Keeps event `ev`'s stack, to be symbolized with all the others at the end (finish_stacks). */
static int keep_stack(interner *in, uint32_t ev, const uint64_t *pcs, uint32_t n) {
    if (strobe__grow((void **)&in->pcs, &in->pcs_cap, in->pcs_count + n, sizeof *in->pcs) ||
        strobe__grow((void **)&in->stacks, &in->stack_cap, in->stack_count + 1, sizeof *in->stacks))
        return STROBE_ENOMEM;
    memcpy(in->pcs + in->pcs_count, pcs, 8u * n);
    in->stacks[in->stack_count++] = (struct stack_ref){ev, n, in->pcs_count, 0};
    in->pcs_count += n;
    return 0;
}

/* A memory record: the [memory] instant (torch's args) and a sample on each of the device's
 * two counter tracks. */
static int c_memory(void *ctx, const strobe__dec_memory *m) {
    cthread *c = ctx;
    strobe_result *r = c->r;
    strobe_event *e =
        add_event(r, &c->st, c->t, c->ti, STROBE_EVENT_INSTANT, STROBE_RECORD_SCOPE_USER_SCOPE,
                  STROBE_KINETO_MEMORY_EVENT_NAME, m->ts);
    uint32_t ev = (uint32_t)(e - r->events);
    char addr[32];
    snprintf(addr, sizeof addr, "%llu", (unsigned long long)m->addr);
    int rc = put_arg_i64(r, ev, STROBE_KINETO_ARG_DEVICE_TYPE, m->c10_type);
    if (rc == 0) rc = put_arg_i64(r, ev, STROBE_KINETO_ARG_DEVICE_ID, m->index);
    if (rc == 0) rc = strobe__event_put_arg(r, ev, STROBE_KINETO_ARG_ADDR, addr, 1, 1);
    if (rc == 0) rc = put_arg_i64(r, ev, STROBE_KINETO_ARG_MEM_BYTES, m->bytes);
    if (rc == 0) rc = put_arg_i64(r, ev, STROBE_KINETO_ARG_TOTAL_ALLOCATED, m->total_allocated);
    if (rc == 0) rc = put_arg_i64(r, ev, STROBE_KINETO_ARG_TOTAL_RESERVED, m->total_reserved);
    /* A sample's weight (strobe record --heap), in whole bytes. */
    if (rc == 0 && m->weight > 0)
        rc = put_arg_i64(r, ev, STROBE__ARG_MEM_WEIGHT, (int64_t)(m->weight + 0.5));
    /* The allocating call stack (--heap-stacks): "Call stack", as a range's. */
    if (rc == 0 && m->npcs) rc = keep_stack(c->in, ev, m->pcs, m->npcs);
    for (int k = 0; k < 2 && rc == 0; k++) {
        const char *n = bytes_name(c->in, m->counter[k], (uint32_t)strlen(m->counter[k]));
        if (n == NULL) return STROBE_ENOMEM;
        strobe_event *ce = add_event(r, &c->st, c->t, c->ti, STROBE_EVENT_COUNTER,
                                     STROBE_RECORD_SCOPE_USER_SCOPE, n, m->ts);
        ce->value = (double)(k ? m->total_reserved : m->total_allocated);
    }
    return rc;
}

/* Backend events wait for finish_backend, which puts them on their backends' tracks. */
static int c_backend(void *ctx, const strobe__dec_backend *b) {
    cthread *c = ctx;
    interner *in = c->in;
    if (strobe__grow((void **)&in->backend, &in->backend_cap, in->backend_count + 1,
                     sizeof *in->backend))
        return STROBE_ENOMEM;
    struct backend_ev *e = &in->backend[in->backend_count];
    e->start = b->start;
    e->end = b->end;
    e->handle = b->handle;
    e->name = bytes_name(in, b->name, (uint32_t)b->name_len);
    e->backend = bytes_name(in, b->backend, (uint32_t)b->backend_len);
    if (e->name == NULL || e->backend == NULL) return STROBE_ENOMEM;
    in->backend_count++;
    return 0;
}

static int c_truncated(void *ctx, int64_t ts) {
    cthread *c = ctx;
    if (c->in->s->stream == NULL) {
        c->trunc_ns = ts;
        return 0;
    }
    /* A flight recorder's thread records again once a chunk is free: the ranges open when its
     * buffer filled end here, and later records go on. */
    c->stats->truncated_ranges += c->st.depth;
    close_open(c->r, &c->st, ts, STROBE_EVENT_TRUNCATED);
    strobe_event *m =
        add_event(c->r, &c->st, c->t, c->ti, STROBE_EVENT_INSTANT, STROBE_RECORD_SCOPE_USER_SCOPE,
                  "[strobe] buffer full: records dropped", ts);
    c->marker = (uint32_t)(m - c->r->events);
    return 0;
}

static const char *c_top(void *ctx, size_t *depth) {
    cthread *c = ctx;
    *depth = c->st.depth;
    return c->st.depth ? c->r->events[c->st.idx[c->st.depth - 1]].name : NULL;
}

static int c_arg(void *ctx, const char *key, const char *json, size_t len, int replace) {
    cthread *c = ctx;
    uint32_t top = c->st.idx[c->st.depth - 1];
    if (replace & STROBE__DEC_ARG_KEY_TRANSIENT) {
        key = bytes_name(c->in, key, (uint32_t)strlen(key));
        if (key == NULL) return STROBE_ENOMEM;
        replace &= 1;
    }
    if (strcmp(key, STROBE_KINETO_ARG_MODULE_HIERARCHY) == 0) {
        /* The same path for many ranges: stored once. */
        const char *v = bytes_name(c->in, json, (uint32_t)len);
        return v ? strobe__event_put_arg(c->r, top, key, v, 0, replace) : STROBE_ENOMEM;
    }
    return strobe__event_put_arg(c->r, top, key, json, 1, replace);
}

/* The innermost open range's stack. */
static int c_stack(void *ctx, const uint64_t *pcs, uint32_t n) {
    cthread *c = ctx;
    return keep_stack(c->in, c->st.idx[c->st.depth - 1], pcs, n);
}

static const strobe__dec_ops collect_ops = {
    .time = c_time,
    .begin = c_begin,
    .end = c_end,
    .instant = c_instant,
    .counter = c_counter,
    .memory = c_memory,
    .backend = c_backend,
    .truncated = c_truncated,
    .top = c_top,
    .arg = c_arg,
    .stack = c_stack,
};

/* Collects one thread's records. *marker is set to the index of the "buffer full" instant, or
 * STROBE_NO_EVENT when the thread's buffer never filled. */
static int collect_thread(interner *in, const strobe__tstate *t, uint32_t thread_index,
                          const strobe__clock_conv *conv, int64_t stop_ns, strobe_stats *stats,
                          uint32_t *marker) {
    cthread c;
    memset(&c, 0, sizeof c);
    c.in = in;
    c.r = in->r;
    c.st.root_last = STROBE_NO_EVENT;
    c.t = t;
    c.ti = thread_index;
    c.stats = stats;
    c.trunc_ns = INT64_MIN;
    c.marker = STROBE_NO_EVENT;
    c.last_ts = INT64_MIN;
    sample_range(in, t->tid, &c.sample, &c.sample_end);
    in->dec.conv = conv;
    strobe__dec_thread dt;
    strobe__dec_thread_init(&dt);
    in->dec.ctx = &c;
    int rc = steps_for_thread(in, t, conv, stop_ns, &c.sm);
    /* A thread with no samples and no steps to place needs no time callback: all c_time would
     * do is keep last_ts, which only placing samples reads. */
    in->dec.ops = c.sample < c.sample_end || c.sm.n ? &collect_ops : &in->ops_untimed;
    for (const strobe__chunk *k = t->first, *next; k && rc == 0; k = next) {
        size_t used = chunk_used(t, k);
        next = k->next; /* read before the chunk's memory may go */
        /* A record is 8 bytes at least and starts one event at most (a memory record: three in
         * 48 bytes). */
        if (in->span_left) populate_ahead(in, used / 8 + 1);
        rc = strobe__decode(&in->dec, &dt, (const char *)(k + 1), used);
        if (in->span_left) chunk_done(in, k);
    }
    strobe_result *r = in->r;
    if (rc == 0 && dt.torch_tid) rc = strobe__result_set_torch_tid(r, thread_index, dt.torch_tid);
    strobe__dec_thread_free(&dt);
    /* The samples after the thread's last record: inside the ranges still open (those the
     * buffer's filling closed end before the samples that came after it), with the steps. */
    if (rc == 0 && c.trunc_ns != INT64_MIN) rc = place_samples(&c, c.trunc_ns);
    if (rc == 0 && c.trunc_ns == INT64_MIN) rc = place_samples(&c, INT64_MAX);
    /* The steps that end after the thread's last record (the last one ends at stop). */
    if (rc == 0 && c.sm.n) rc = apply_step_marks(in, &c.sm, &c.st, t, thread_index, INT64_MAX);
    step_marks_free(&c.sm);
    if (rc == 0 && c.trunc_ns != INT64_MIN) {
        stats->truncated_ranges += c.st.depth;
        close_open(r, &c.st, c.trunc_ns, STROBE_EVENT_TRUNCATED);
        strobe_event *m = add_event(r, &c.st, t, thread_index, STROBE_EVENT_INSTANT,
                                    STROBE_RECORD_SCOPE_USER_SCOPE,
                                    "[strobe] buffer full: records dropped", c.trunc_ns);
        c.marker = (uint32_t)(m - r->events);
        c.last_ts = c.trunc_ns;
        rc = place_samples(&c, INT64_MAX);
    }
    if (rc == 0) {
        stats->unfinished_ranges += c.st.depth;
        close_open(r, &c.st, stop_ns, STROBE_EVENT_UNFINISHED);
    }
    *marker = c.marker;
    free(c.st.idx);
    free(c.st.last);
    return rc;
}

/* Threads that were sampled but never recorded (they never called strobe, or not in this
 * session): a track each, with their samples, after the threads that recorded. */

/* Appends a CPU track of its own (named `name`, copied) for thread `tid`, its events to follow
 * from the result's current end; *index gets its position. @return it, or NULL (out of memory:
 * the result keeps what it had). */
static strobe_thread_info *new_track(strobe_result *r, int64_t tid, const char *name,
                                     uint32_t *index) {
    strobe_thread_info *ti = realloc(r->threads, (r->thread_count + 1) * sizeof *ti);
    if (ti == NULL) return NULL;
    r->threads = ti;
    *index = (uint32_t)r->thread_count;
    strobe_thread_info *th = &r->threads[r->thread_count];
    memset(th, 0, sizeof *th);
    th->device_index = -1;
    th->tid = tid;
    th->name = strobe__pool_strdup(&r->pool, name);
    th->first_event = r->event_count;
    if (th->name == NULL) return NULL;
    r->thread_count++;
    return th;
}

static int sample_threads(interner *in, strobe__tstate *const *list, size_t n) {
    strobe_result *r = in->r;
    size_t k = 0;
    while (k < in->sample_count) {
        int64_t tid = in->samples[k].tid;
        size_t lo, hi;
        sample_range(in, tid, &lo, &hi);
        k = hi;
        /* strobe's own threads (its sampler, its stream writer ...) are left out, uncounted:
         * their samples are not the program's. */
        if (strobe__own_thread_is(tid)) continue;
        int known = 0;
        for (size_t i = 0; i < n && !known; i++)
            known = list[i]->tid == tid;
        if (known) continue;
        uint32_t tindex;
        strobe_thread_info *th =
            new_track(r, tid, strobe__sampler_thread_name(in->s->sampler, tid), &tindex);
        if (th == NULL) return STROBE_ENOMEM;
        strobe__tstate fake;
        memset(&fake, 0, sizeof fake);
        fake.tid = tid;
        cthread c;
        memset(&c, 0, sizeof c);
        c.in = in;
        c.r = r;
        c.st.root_last = STROBE_NO_EVENT;
        c.t = &fake;
        c.ti = tindex;
        c.last_ts = INT64_MIN;
        c.sample = lo;
        c.sample_end = hi;
        int rc = place_samples(&c, INT64_MAX);
        th->event_count = r->event_count - th->first_event;
        if (rc) return rc;
    }
    return 0;
}

/* The length of the ":LINE" that ends the location of frame f[0..n) ("name (file:LINE)"), or 0
 * where it has none. */
static size_t frame_line_len(const char *f, size_t n) {
    if (n < 4 || f[n - 1] != ')') return 0;
    size_t i = n - 1;
    while (i > 0 && f[i - 1] >= '0' && f[i - 1] <= '9')
        i--;
    if (i == n - 1 || i < 2 || f[i - 1] != ':') return 0;
    /* The location is the last parenthesized part, opened by " (". */
    for (size_t k = i - 1; k >= 2; k--)
        if (f[k] == '(') return f[k - 1] == ' ' ? n - 1 - (i - 1) : 0;
    return 0;
}

/* Makes a sample's frames (text, innermost first, ';' between) one per function: the line is cut
 * from each location ("hot (x.c:11)" becomes "hot (x.c)"), so that samples taken on different
 * lines of one function fold into one node. The interrupted frame's "file:line" goes to
 * line[0..*line_len) (empty where it has none). @return the text's new length. */
static size_t sample_frames_by_function(char *text, size_t len, char *line, size_t line_cap,
                                        size_t *line_len) {
    size_t out = 0, start = 0;
    *line_len = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] != ';') continue;
        size_t n = i - start, cut = frame_line_len(text + start, n);
        if (start == 0 && cut) {
            /* "file:LINE" lies between the last " (" and the closing ')'. */
            size_t open = n - 1;
            while (text[start + open] != '(')
                open--;
            size_t ll = n - 1 - (open + 1);
            if (ll < line_cap) {
                memcpy(line, text + start + open + 1, ll);
                *line_len = ll;
            }
        }
        if (n > 0) {
            memmove(text + out, text + start, n - cut - 1);
            out += n - cut - 1;
            text[out++] = text[start + n - 1];
        }
        if (i < len) text[out++] = ';';
        start = i + 1;
    }
    return out;
}

/* Symbolizes every distinct frame once and gives each stack's range its "Call stack": frames
 * innermost first, joined by ';' as torch joins them. */
static int finish_stacks(interner *in) {
    if (in->stack_count == 0) return 0;
    size_t n = in->pcs_count;
    uint64_t *uniq = malloc(n * sizeof *uniq);
    const char **sym = calloc(n, sizeof *sym);
    int rc = uniq && sym ? 0 : STROBE_ENOMEM;
    size_t u = 0;
    if (rc == 0) {
        memcpy(uniq, in->pcs, n * sizeof *uniq);
        /* Sort and dedupe, so each address is looked up once. */
        for (size_t gap = n / 2; gap > 0; gap /= 2)
            for (size_t i = gap; i < n; i++)
                for (size_t j = i; j >= gap && uniq[j - gap] > uniq[j]; j -= gap) {
                    uint64_t x = uniq[j];
                    uniq[j] = uniq[j - gap];
                    uniq[j - gap] = x;
                }
        for (size_t i = 0; i < n; i++)
            if (u == 0 || uniq[u - 1] != uniq[i]) uniq[u++] = uniq[i];
    }
    strobe__symbolizer *sz = rc == 0 ? strobe__symbolize(uniq, u, sym) : NULL;
    if (rc == 0 && sz == NULL) rc = STROBE_ENOMEM;
    strobe__buf text = {0}, json = {0};
    for (size_t k = 0; k < in->stack_count && rc == 0; k++) {
        const struct stack_ref *sr = &in->stacks[k];
        text.len = 0;
        int leading = 1; /* strobe's own frames before the caller's are left out */
        for (uint32_t f = 0; f < sr->n && rc == 0; f++) {
            uint64_t pc = in->pcs[sr->off + f];
            size_t lo = 0, hi = u;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (uniq[mid] < pc) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            const char *name = lo < u && sym[lo] ? sym[lo] : "??";
            if (leading && !sr->sample && strobe__frame_is_own(name) && f + 1 < sr->n) continue;
            if (!leading) rc = strobe__buf_put(&text, ";", 1);
            leading = 0;
            if (rc == 0) rc = strobe__buf_put(&text, name, strlen(name));
        }
        if (rc == 0 && sr->sample) {
            char line[512];
            size_t line_len = 0;
            if (text.len)
                text.len =
                    sample_frames_by_function(text.s, text.len, line, sizeof line, &line_len);
            json.len = 0;
            if (line_len) rc = strobe__buf_put_json_string(&json, line, line_len);
            const char *lv = rc || !line_len ? NULL : bytes_name(in, json.s, (uint32_t)json.len);
            if (rc == 0 && line_len && lv == NULL) rc = STROBE_ENOMEM;
            if (lv)
                rc = strobe__event_put_arg(in->r, sr->event, STROBE_KINETO_ARG_SAMPLE_LINE, lv, 0,
                                           1);
        }
        if (rc == 0 && sr->sample) {
            /* A sample is named after the function it interrupted: the stack's first frame
             * (its innermost inlined level where it has several). */
            size_t leaf = 0;
            while (leaf < text.len && text.s[leaf] != ';')
                leaf++;
            const char *nm = leaf ? bytes_name(in, text.s, (uint32_t)leaf) : NULL;
            if (nm) in->r->events[sr->event].name = nm;
        }
        json.len = 0;
        if (rc == 0) rc = strobe__buf_put_json_string(&json, text.s, text.len);
        const char *v = rc ? NULL : bytes_name(in, json.s, (uint32_t)json.len);
        if (rc == 0 && v == NULL) rc = STROBE_ENOMEM;
        if (rc == 0)
            rc = strobe__event_put_arg(in->r, sr->event, STROBE_KINETO_ARG_CALL_STACK, v, 0, 1);
    }
    strobe__buf_free(&text);
    strobe__buf_free(&json);
    strobe__symbolizer_free(sz);
    free(uniq);
    free(sym);
    return rc;
}

static int cmp_backend(const void *a, const void *b) {
    const struct backend_ev *x = a, *y = b;
    int c = strcmp(x->backend, y->backend);
    if (c) return c;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end > y->end ? -1 : 1; /* outer first */
    return 0;
}

/* The ProfilerStep ranges that could not go on their thread's track (steps_for_thread) go on a
 * track of their own ("ProfilerStep"): each step's range runs from its strobe_step() to the next
 * (or to stop), whatever the calling thread had open, so on the thread's own track it would
 * cross the user's ranges. One after the other, they always nest. */
static int finish_steps(interner *in, const strobe__session *s, const strobe__clock_conv *conv,
                        int64_t stop_ns, int64_t tid) {
    strobe_result *r = in->r;
    r->stats.dropped_events += s->steps_lost;
    size_t total = step_total(s), n = 0;
    for (size_t k = 0; k < total; k++)
        n += in->step_placed == NULL || !in->step_placed[k];
    if (n == 0) return 0;
    uint32_t tindex;
    strobe_thread_info *th = new_track(r, tid, "ProfilerStep", &tindex);
    if (th == NULL) return STROBE_ENOMEM;
    strobe__tstate fake;
    memset(&fake, 0, sizeof fake);
    fake.tid = tid;
    open_stack st = {NULL, NULL, 0, 0, STROBE_NO_EVENT};
    for (size_t k = 0; k < total; k++) {
        if (in->step_placed && in->step_placed[k]) continue;
        int64_t start, end;
        step_times(s, k, conv, stop_ns, &start, &end);
        /* A flight recorder's window may begin after a step did. */
        if (start < r->trace_start_ns) start = r->trace_start_ns;
        if (end < start) end = start;
        char name[40];
        int len = snprintf(name, sizeof name, "ProfilerStep#%llu",
                           (unsigned long long)step_at(s, k).number);
        const char *iname = bytes_name(in, name, (uint32_t)len);
        if (iname == NULL) return STROBE_ENOMEM;
        strobe_event *e = add_event(r, &st, &fake, tindex, STROBE_EVENT_RANGE,
                                    STROBE_RECORD_SCOPE_USER_SCOPE, iname, start);
        e->end_ns = end;
    }
    th->event_count = r->event_count - th->first_event;
    return 0;
}

/* Backend events go on one track per backend ("Backend: NAME", a thread of their own), sorted
 * and nested there: an event that overlaps an earlier one without nesting in it is ended at the
 * outer one's end (counted in stats.clipped_backend_events), so the track always nests. */
static int finish_backend(interner *in, int64_t tid_base) {
    strobe_result *r = in->r;
    if (in->backend_count == 0) return 0;
    qsort(in->backend, in->backend_count, sizeof *in->backend, cmp_backend);
    size_t tracks = 0;
    for (size_t i = 0; i < in->backend_count; i++)
        tracks += i == 0 || strcmp(in->backend[i].backend, in->backend[i - 1].backend) != 0;
    strobe_thread_info *ti = realloc(r->threads, (r->thread_count + tracks) * sizeof *ti);
    if (ti == NULL) return STROBE_ENOMEM;
    r->threads = ti;
    int rc = 0;
    size_t i = 0;
    while (i < in->backend_count && rc == 0) {
        size_t j = i;
        while (j < in->backend_count && strcmp(in->backend[j].backend, in->backend[i].backend) == 0)
            j++;
        uint32_t tindex = (uint32_t)r->thread_count;
        strobe_thread_info *th = &r->threads[r->thread_count++];
        memset(th, 0, sizeof *th);
        th->device_index = -1;
        /* A made-up tid that no OS thread of this process has: above the kernel's pid limit. */
        th->tid = tid_base + (int64_t)tindex;
        char tname[300];
        snprintf(tname, sizeof tname, "Backend: %s", in->backend[i].backend);
        th->name = strobe__pool_strdup(&r->pool, tname);
        th->first_event = r->event_count;
        if (th->name == NULL) return STROBE_ENOMEM;
        strobe__tstate fake;
        memset(&fake, 0, sizeof fake);
        fake.tid = th->tid;
        open_stack st = {NULL, NULL, 0, 0, STROBE_NO_EVENT};
        for (size_t k = i; k < j && rc == 0; k++) {
            struct backend_ev *b = &in->backend[k];
            /* Times outside the session are brought inside it, and counted. */
            int64_t start = b->start, end = b->end < b->start ? b->start : b->end;
            if (start < r->trace_start_ns || end > r->trace_end_ns) {
                r->stats.clipped_backend_events++;
                if (start < r->trace_start_ns) start = r->trace_start_ns;
                if (start > r->trace_end_ns) start = r->trace_end_ns;
                if (end > r->trace_end_ns) end = r->trace_end_ns;
                if (end < start) end = start;
            }
            /* Close the ranges that ended before this one starts. */
            while (st.depth && r->events[st.idx[st.depth - 1]].end_ns <= start)
                st.depth--;
            if (st.depth) {
                int64_t outer_end = r->events[st.idx[st.depth - 1]].end_ns;
                if (end > outer_end) {
                    end = outer_end;
                    r->stats.clipped_backend_events++;
                }
            }
            strobe_event *e = add_event(r, &st, &fake, tindex, STROBE_EVENT_RANGE,
                                        STROBE_RECORD_SCOPE_LITE_INTERPRETER, b->name, start);
            e->end_ns = end;
            e->category = STROBE_KINETO_CAT_CPU_OP;
            uint32_t ev = (uint32_t)(e - r->events);
            rc = stack_push(&st, ev);
            strobe__buf bj = {0};
            if (rc == 0) rc = strobe__buf_put_json_string(&bj, b->backend, strlen(b->backend));
            if (rc == 0) rc = strobe__event_put_arg(r, ev, STROBE_KINETO_ARG_BACKEND, bj.s, 1, 1);
            strobe__buf_free(&bj);
            if (rc == 0) rc = put_arg_i64(r, ev, "Debug handle", b->handle);
        }
        free(st.idx);
        free(st.last);
        th->event_count = r->event_count - th->first_event;
        i = j;
    }
    return rc;
}

int strobe__collect(strobe__session *s, const strobe__clock_conv *conv, int64_t stop_ns,
                    strobe_result *r) {
    /* A first pass counts the events, so that the event array is mapped at its exact size and
     * faulted in with one call: page faults one by one cost microseconds each on a VM. */
    size_t n = 0, bytes = 0, events = 0;
    for (strobe__tstate *t = s->threads; t; t = t->sess_next) {
        n++;
        for (const strobe__chunk *c = t->first; c; c = c->next) {
            size_t used = chunk_used(t, c);
            const char *p = (const char *)(c + 1), *end = p + used;
            int starts_event;
            size_t size;
            while (p < end && (size = strobe__rec_size(p, (size_t)(end - p), &starts_event)) != 0) {
                events += (size_t)starts_event;
                p += size;
            }
            bytes += used;
        }
    }
    events += s->step_count + (s->step_open ? 1u : 0u);
    size_t nsamples = 0;
    const strobe__sample *samples = strobe__sampler_samples(s->sampler, &nsamples);
    events += nsamples;
    strobe__tstate **list = calloc(n ? n : 1, sizeof *list);
    r->threads = calloc(n ? n : 1, sizeof *r->threads);
    if (list == NULL || r->threads == NULL) {
        free(list);
        return STROBE_ENOMEM;
    }
    /* The session list is newest first; report threads in the order they attached. */
    size_t i = n;
    for (strobe__tstate *t = s->threads; t; t = t->sess_next)
        list[--i] = t;

    interner in;
    memset(&in, 0, sizeof in);
    in.r = r;
    in.s = s;
    spans_init(&in, list, n);
    int rc = strobe__result_map_events(r, events, in.span_left == NULL);
    if (rc) {
        free(in.span_left);
        free(list);
        return rc;
    }
    r->event_count = 0;
    in.dec.s = s;
    in.dec.ops = &collect_ops;
    in.ops_untimed = collect_ops;
    in.ops_untimed.time = NULL;
    in.samples = samples;
    in.sample_count = nsamples;
    in.sample_pcs = strobe__sampler_pcs(s->sampler);
    if (nsamples) {
        in.sample_placed = calloc(nsamples, 1);
        if (in.sample_placed == NULL) rc = STROBE_ENOMEM;
    }
    in.sample_offset = s->start.real_ns - s->start.mono_ns;
    in.sample_lo = r->trace_start_ns;
    in.sample_hi = stop_ns;
    strobe__strtab_init(&in.names, &r->pool);
    /* In memory, steps can go on their thread's track; a stream has written the threads' ranges
     * already, and a flight recorder's window may hold only part of a step's thread. */
    if (s->stream == NULL && step_total(s) > 0) {
        in.step_placed = calloc(step_total(s), 1);
        if (in.step_placed == NULL) rc = STROBE_ENOMEM;
    }
    strobe_stats *st = &r->stats;
    st->buffer_bytes_used = bytes;
    st->buffer_bytes_cap = s->arena_bytes;
    st->threads = n;
    for (i = 0; i < n && rc == 0; i++) {
        strobe__tstate *t = list[i];
        strobe_thread_info *ti = &r->threads[i];
        ti->tid = t->tid;
        /* The thread may rename itself meanwhile (strobe_set_thread_name, under the registry
         * lock): its name is copied under the same lock. */
        char tname[sizeof t->name];
        int was_busy = strobe__registry_lock_cold();
        memcpy(tname, t->name, sizeof tname);
        strobe__registry_unlock_cold(was_busy);
        tname[sizeof tname - 1] = '\0';
        ti->name = strobe__pool_strdup(&r->pool, tname);
        ti->first_event = r->event_count;
        ti->dropped_events = t->dropped;
        /* Read without the registry lock: a thread may exit while stop collects (its records
         * are quiescent; only the flag changes), so the flag is atomic on both sides. */
        ti->exited = __atomic_load_n(&t->exited, __ATOMIC_RELAXED);
        ti->device_type = STROBE_DEVICE_CPU;
        ti->device_index = -1;
        if (ti->name == NULL) rc = STROBE_ENOMEM;
        uint32_t marker = STROBE_NO_EVENT;
        if (rc == 0) rc = collect_thread(&in, t, (uint32_t)i, conv, stop_ns, st, &marker);
        ti->event_count = r->event_count - ti->first_event;
        st->dropped_events += t->dropped;
        st->signal_dropped += t->signal_dropped;
        st->truncated_names += t->truncated_names;
        st->reversed_backend_events += t->reversed_backend;
        st->scope_depth_overflow += t->scope_overflow;
        st->correlation_overflow += t->corr_overflow;
        st->truncated_details += t->truncated_details;
        if (rc == 0 && marker != STROBE_NO_EVENT) {
            /* The marker instant carries its thread's count. */
            char num[32];
            snprintf(num, sizeof num, "%llu", (unsigned long long)t->dropped);
            rc = strobe_event_set_arg(r, marker, "dropped events", num);
        }
    }
    r->thread_count = n;
    if (rc == 0) rc = sample_threads(&in, list, n);
    if (rc == 0) rc = finish_stacks(&in);
    /* Backend tracks get tids above any the kernel hands out (pid_max is at most 2^22). */
    if (rc == 0) rc = finish_backend(&in, INT64_C(0x7fff0000));
    /* The steps' track below the backends' tids, equally out of the kernel's range. */
    if (rc == 0) rc = finish_steps(&in, s, conv, stop_ns, INT64_C(0x7ffe0000));
    strobe__u64map_free(&in.sites);
    free(in.span_left);
    free(in.pcs);
    free(in.stacks);
    free(in.backend);
    free(in.step_placed);
    free(in.sample_placed);
    st->orphan_details += in.dec.orphan_details;
    st->unmatched_module_pops += in.dec.unmatched_module_pops;
    strobe__decoder_free(&in.dec);
    strobe__strtab_release(&in.names);
    free(list);
    return rc;
}
