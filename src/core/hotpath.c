/* hotpath.c: the instrumentation entry points (stage 1 of DESIGN.md's data flow).
 *
 * A record is written by its own thread into its own chunk: no lock, no allocation, no syscall,
 * no formatting. The inline wrappers in instrument.h only call in here while a session records.
 *
 * Each entry point brackets its work with the thread's `busy` flag. The flag serves two purposes:
 * - quiescence: strobe_stop() clears strobe__gen, runs membarrier() (which orders every thread's
 *   earlier `busy = 1` store before the stopper's loads), then waits for busy == 0 on every
 *   thread; a writer that set busy after that sees the new generation and backs off;
 * - signal safety: a signal handler that records while its thread is inside an entry point finds
 *   busy set and drops its record (counted in stats.signal_dropped) instead of interleaving with
 *   the interrupted record.
 *
 * Contents: enter/leave, reserve (chunks.c refills), filter stack, record writers, public entry
 * points. */
#include <string.h>

#include "chunks.h"
#include "hooks.h"
#include "record.h"
#include "state.h"
#include "strobe/instrument.h"
#include "strobe/op.h"
#include "util/json_check.h"

int strobe__active;

/* Keeps the on-demand endpoint (and its STROBE_ONDEMAND=1 constructor) in a static link: every
 * instrumented program links this object. */
__attribute__((used)) static int *const keep_ondemand = &strobe__od_autostart;
/* The same for the markers' STROBE_MARKERS constructor (src/markers). */
__attribute__((used)) static int *const keep_markers = &strobe__markers_autostart;

/* Markers (core/hooks.h): while set, each range's begin and end also goes to the markers' table,
 * before the session's record of it (so a session's range also spans wait_until_completed's
 * wait, which the markers' end does). These entry points run only while strobe__active is
 * nonzero, so the check costs nothing when neither markers nor a session are on; with a session
 * and no markers it is one load and a branch. */
const strobe__marker_ops *strobe__marker_hook;

static inline const strobe__marker_ops *marker_ops(void) {
    return __atomic_load_n(&strobe__marker_hook, __ATOMIC_ACQUIRE);
}

/* Whether a session records: with markers alone, the entry points skip the recording path. */
static inline int recording(void) {
    return __atomic_load_n(&strobe__active, __ATOMIC_RELAXED) & STROBE__ACTIVE_RECORDING;
}

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SIGNAL_FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)

static inline void leave(strobe__tstate *t) {
    SIGNAL_FENCE();
    __atomic_store_n(&t->busy, 0, __ATOMIC_RELEASE);
}

/* With busy set: checks that the thread records in the current session (attaching it if needed)
 * and has room. A record that cannot be written because the buffer is full is counted when it
 * starts an event (`counts`): drops are counted in events, so a range counts once, by its begin.
 * @return 1 to go on; 0 when busy was cleared and nothing is to be recorded. */
static int admit(strobe__tstate *t, int counts) {
    uint32_t g = __atomic_load_n(&strobe__gen, __ATOMIC_RELAXED);
    if (UNLIKELY(t->gen != g)) {
        if (g == 0 || t->denied_gen == g || !strobe__tstate_attach(t)) {
            leave(t);
            return 0;
        }
    }
    if (UNLIKELY(t->full)) {
        /* A streaming session recycles chunks: the thread records again once one is free. */
        if (t->sess->stream == NULL || !strobe__chunk_refill(t, 0, 0)) {
            t->dropped += (uint64_t)counts;
            leave(t);
            return 0;
        }
    }
    return 1;
}

/* Returns the calling thread's state ready to record (busy set), or NULL when this call records
 * nothing. */
static strobe__tstate *enter(int counts) {
    strobe__tstate *t = strobe__tls;
    if (UNLIKELY(t == NULL)) {
        t = strobe__tstate_get();
        if (t == NULL) return NULL;
    }
    uint32_t busy = __atomic_load_n(&t->busy, __ATOMIC_RELAXED);
    if (UNLIKELY(busy)) {
        /* A handler that interrupted a record: counted on the thread, which stop reads after
         * quiescence. One that interrupted a cold-path call holding the registry lock (2), which
         * quiescence does not wait for: counted process-wide while a session records, and added
         * to the session's count at stop. */
        if (busy == 1)
            t->signal_dropped++;
        else if (__atomic_load_n(&strobe__gen, __ATOMIC_RELAXED) != 0)
            __atomic_fetch_add(&strobe__cold_signal_dropped, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    __atomic_store_n(&t->busy, 1, __ATOMIC_RELAXED);
    SIGNAL_FENCE();
    return admit(t, counts) ? t : NULL;
}

/* The fast path: the thread is attached to the recording session, records every scope, has no
 * correlation id (`mask` says which slow bits matter) and its chunk has `need` bytes. Sets busy
 * and returns 1; else returns 0 with busy untouched, and the caller takes the full path. */
static inline int fast_enter(strobe__tstate *t, unsigned mask, size_t need) {
    if (UNLIKELY(t == NULL || __atomic_load_n(&t->busy, __ATOMIC_RELAXED))) return 0;
    __atomic_store_n(&t->busy, 1, __ATOMIC_RELAXED);
    SIGNAL_FENCE();
    if (LIKELY(t->gen == __atomic_load_n(&strobe__gen, __ATOMIC_RELAXED) && !(t->slow & mask) &&
               (size_t)(t->end - t->pos) >= need))
        return 1;
    leave(t);
    return 0;
}

/* Makes room for `need` bytes; 0 when the record must be dropped (already counted). */
static inline int reserve(strobe__tstate *t, size_t need, int counts) {
    if (LIKELY((size_t)(t->end - t->pos) >= need)) return 1;
    return strobe__chunk_refill(t, need, counts);
}

/* Raw begins of a scope the session does not keep must also skip their ends: a bit per nesting
 * level remembers which were skipped. Beyond STROBE__FILTER_DEPTH levels, ranges are kept. */
static int filter_push(strobe__tstate *t, int scope) {
    int skip = !((t->scopes >> (scope & 31)) & 1u);
    uint32_t d = t->filter_depth++;
    if (d >= STROBE__FILTER_DEPTH) {
        if (skip) t->scope_overflow++;
        return 0;
    }
    uint64_t bit = UINT64_C(1) << (d % 64);
    if (skip) {
        t->filter_bits[d / 64] |= bit;
    } else {
        t->filter_bits[d / 64] &= ~bit;
    }
    return skip;
}

static int filter_pop(strobe__tstate *t) {
    if (t->filter_depth == 0) return 0; /* an end without a begin: the collector counts it */
    uint32_t d = --t->filter_depth;
    if (d >= STROBE__FILTER_DEPTH) return 0;
    return (int)((t->filter_bits[d / 64] >> (d % 64)) & 1u);
}

static inline size_t corr_bytes(const strobe__tstate *t) {
    return (t->corr_ext | t->corr_user) ? 24u : 0u;
}

static inline void put_corr(strobe__tstate *t) {
    uint64_t *w = (uint64_t *)t->pos;
    w[0] = STROBE__REC_WORD(STROBE__REC_CORR, 0);
    w[1] = t->corr_ext;
    w[2] = t->corr_user;
    strobe__pos_publish(t, t->pos + (24));
}

static inline void put_site(strobe__tstate *t, unsigned kind, const strobe_site *site) {
    if (UNLIKELY(!reserve(t, 16u + corr_bytes(t), 1))) return;
    if (UNLIKELY(corr_bytes(t))) put_corr(t);
    uint64_t *w = (uint64_t *)t->pos;
    w[1] = (uint64_t)(uintptr_t)site;
    w[0] = STROBE__REC_WORD(kind, strobe__now_raw());
    strobe__pos_publish(t, t->pos + (16));
}

static void put_name(strobe__tstate *t, unsigned kind, const char *name, uint64_t extra,
                     int with_value, double value) {
    if (name == NULL) name = "(null)";
    size_t len = strnlen(name, STROBE__MAX_NAME + 1);
    if (len > STROBE__MAX_NAME) {
        len = STROBE__MAX_NAME;
        t->truncated_names++;
    }
    size_t head = with_value ? 24u : 16u;
    size_t cb =
        kind == STROBE__REC_BEGIN_NAME || kind == STROBE__REC_INSTANT_NAME ? corr_bytes(t) : 0;
    if (!reserve(t, cb + head + STROBE__NAME_PAD(len), 1)) return;
    if (cb) put_corr(t);
    uint64_t *w = (uint64_t *)t->pos;
    w[1] = (uint64_t)len | extra << 32;
    if (with_value) memcpy(&w[2], &value, sizeof value);
    char *bytes = t->pos + head;
    memcpy(bytes, name, len);
    memset(bytes + len, 0, STROBE__NAME_PAD(len) - len);
    w[0] = STROBE__REC_WORD(kind, strobe__now_raw());
    strobe__pos_publish(t, t->pos + (head + STROBE__NAME_PAD(len)));
}

static inline void put_end(strobe__tstate *t) {
    uint64_t now = strobe__now_raw();
    if (UNLIKELY(!reserve(t, 8, 0))) return;
    *(uint64_t *)t->pos = STROBE__REC_WORD(STROBE__REC_END, now);
    strobe__pos_publish(t, t->pos + (8));
}

/* ---- Details that follow a begin or precede an end (with_stack, perf_events) ------------ */

/* Walks frame pointers from `fp` (the frame of the entry point the user called), so the first
 * address kept is the return address into the user's code. Every frame read lies within the
 * thread's stack, and frames must move up the stack, so a frame built without a frame pointer
 * ends the walk instead of faulting. */
static int walk_frames(const strobe__tstate *t, const void *fp, uint64_t *pcs, int max) {
    uintptr_t f = (uintptr_t)fp, lo = t->stack_lo, hi = t->stack_hi;
    int n = 0;
    while (n < max && f >= lo && f + 16 <= hi && (f & 7u) == 0) {
        const uintptr_t *frame = (const uintptr_t *)f;
        uintptr_t next = frame[0], ret = frame[1];
        if (ret == 0) break;
        pcs[n++] = (uint64_t)ret;
        if (next <= f) break;
        f = next;
    }
    return n;
}

static void put_stack(strobe__tstate *t, const void *fp) {
    size_t need = 8u + 8u * (size_t)t->stack_depth;
    if (!reserve(t, need, 0)) return;
    uint64_t *w = (uint64_t *)t->pos;
    int n = walk_frames(t, fp, w + 1, t->stack_depth);
    w[0] = STROBE__REC_WORD(STROBE__REC_STACK, (uint64_t)n);
    strobe__pos_publish(t, t->pos + (8u + 8u * (size_t)n));
}

static void put_perf(strobe__tstate *t, int at_end) {
    int n = t->perf_n;
    if (!reserve(t, 8u + 8u * (size_t)n, 0)) return;
    uint64_t *w = (uint64_t *)t->pos;
    (void)strobe__perf_read(t->perf_fds[0], n, w + 1);
    w[0] = STROBE__REC_WORD(STROBE__REC_PERF, (uint64_t)n | (uint64_t)at_end << 8);
    strobe__pos_publish(t, t->pos + (8u + 8u * (size_t)n));
}

/* After a begin record: the stack, then the counters (read last, closest to the user's code). */
static inline void put_begin_details(strobe__tstate *t, const void *fp) {
    if (UNLIKELY(t->slow & (STROBE__SLOW_STACK | STROBE__SLOW_PERF))) {
        if ((t->slow & STROBE__SLOW_STACK) && !t->full) put_stack(t, fp);
        if ((t->slow & STROBE__SLOW_PERF) && !t->full) put_perf(t, 0);
    }
}

/* Before an end record: the counters (read first, closest to the user's code). */
static inline void put_end_details(strobe__tstate *t) {
    if (UNLIKELY(t->slow & STROBE__SLOW_PERF)) put_perf(t, 1);
}

/* With scope filtering, whether the innermost open range was recorded (details given inside a
 * skipped range belong to nothing that is kept). */
static int innermost_recorded(const strobe__tstate *t) {
    if (!t->filtering || t->filter_depth == 0 || t->filter_depth > STROBE__FILTER_DEPTH) return 1;
    uint32_t d = t->filter_depth - 1;
    return !((t->filter_bits[d / 64] >> (d % 64)) & 1u);
}

/* The fast path's writes: fast_enter() checked the room. */
static inline void fast_put_begin_site(strobe__tstate *t, const strobe_site *site) {
    uint64_t *w = (uint64_t *)t->pos;
    w[1] = (uint64_t)(uintptr_t)site;
    w[0] = STROBE__REC_WORD(STROBE__REC_BEGIN_SITE, strobe__now_raw());
    strobe__pos_publish(t, t->pos + (16));
}

static inline void fast_put_end(strobe__tstate *t) {
    *(uint64_t *)t->pos = STROBE__REC_WORD(STROBE__REC_END, strobe__now_raw());
    strobe__pos_publish(t, t->pos + (8));
}

/* ---- Entry points ---------------------------------------------------------------------- */

/* Slow bits that send a begin, or an end, off the fast path. */
#define BEGIN_SLOW                                                                                 \
    (STROBE__SLOW_FULL | STROBE__SLOW_FILTER | STROBE__SLOW_CORR | STROBE__SLOW_STACK |            \
     STROBE__SLOW_PERF)
#define END_SLOW (STROBE__SLOW_FULL | STROBE__SLOW_FILTER | STROBE__SLOW_PERF)

/* `fp` is the frame of the entry point the user called: stacks start at its return address. */
__attribute__((noinline)) static void begin_site_full(const strobe_site *site, const void *fp) {
    strobe__tstate *t = enter(1);
    if (t == NULL) return;
    if (UNLIKELY(t->filtering) && filter_push(t, site->scope)) {
        leave(t);
        return;
    }
    put_site(t, STROBE__REC_BEGIN_SITE, site);
    put_begin_details(t, fp);
    leave(t);
}

/* The recording half of strobe__begin_site, inlined into it and into strobe__begin_site_record
 * (core/hooks.h), which callers that read strobe__active themselves call without the markers'
 * check. `fp`: the entry point's frame. */
static inline __attribute__((always_inline)) void begin_site_rec(const strobe_site *site,
                                                                 const void *fp) {
    strobe__tstate *t = strobe__tls;
    if (LIKELY(fast_enter(t, BEGIN_SLOW, 16))) {
        fast_put_begin_site(t, site);
        leave(t);
        return;
    }
    begin_site_full(site, fp);
}

void strobe__begin_site(const strobe_site *site) {
    const strobe__marker_ops *m = marker_ops();
    if (UNLIKELY(m != NULL)) {
        (void)m->begin(site->name, STROBE__SITE_SCOPE(site->scope), 1);
        if (!recording()) return;
    }
    begin_site_rec(site, __builtin_frame_address(0));
}

void strobe__begin_site_record(const strobe_site *site) {
    begin_site_rec(site, __builtin_frame_address(0));
}

/* The slow-path start of a range begin by name: gives the range to the markers (when on), then
 * enters the thread's recording state unless the range's scope is filtered out. @return the
 * entered state (the caller records and leaves it), or NULL when nothing is to be recorded. */
static strobe__tstate *begin_named_enter(const char *name, int scope, int name_is_static) {
    const strobe__marker_ops *m = marker_ops();
    if (UNLIKELY(m != NULL)) {
        (void)m->begin(name ? name : "(null)", scope, name_is_static);
        if (!recording()) return NULL;
    }
    strobe__tstate *t = enter(1);
    if (t == NULL) return NULL;
    if (UNLIKELY(t->filtering) && filter_push(t, scope)) {
        leave(t);
        return NULL;
    }
    return t;
}

void strobe__begin_name(const char *name, int scope) {
    strobe__tstate *t = begin_named_enter(name, scope, 0);
    if (t == NULL) return;
    put_name(t, STROBE__REC_BEGIN_NAME, name, (uint64_t)(uint32_t)scope, 0, 0.0);
    put_begin_details(t, __builtin_frame_address(0));
    leave(t);
}

__attribute__((noinline)) static void end_full(void) {
    strobe__tstate *t = enter(0);
    if (t == NULL) return;
    if (UNLIKELY(t->filtering) && filter_pop(t)) {
        leave(t);
        return;
    }
    put_end_details(t);
    put_end(t);
    leave(t);
}

static inline __attribute__((always_inline)) void end_rec(void) {
    strobe__tstate *t = strobe__tls;
    if (LIKELY(fast_enter(t, END_SLOW, 8))) {
        fast_put_end(t);
        leave(t);
        return;
    }
    end_full();
}

void strobe__end(void) {
    const strobe__marker_ops *m = marker_ops();
    if (UNLIKELY(m != NULL)) {
        m->end();
        if (!recording()) return;
    }
    end_rec();
}

void strobe__end_record(void) {
    end_rec();
}

/* The same entry points for callers inside the library (src/nvtx), called directly rather than
 * through the PLT that an exported symbol's calls take in a shared library. */
extern __typeof(strobe__begin_site) strobe__begin_site_internal
    __attribute__((alias("strobe__begin_site"), visibility("hidden")));
extern __typeof(strobe__end) strobe__end_internal
    __attribute__((alias("strobe__end"), visibility("hidden")));

/* Scoped ranges know whether their begin was recorded: the token is the session generation, so a
 * filtered begin, or one from an earlier session, skips its end without any per-thread stack.
 * Only while scopes are filtered do they also keep the filter stack (a skipped begin's token
 * carries STROBE__TOKEN_FILTERED), so that details given inside a skipped range are dropped with
 * it rather than landing on its parent. */
__attribute__((noinline)) static uint32_t guard_begin_site_full(const strobe_site *site,
                                                                const void *fp) {
    strobe__tstate *t = enter(1);
    if (t == NULL) return 0;
    uint32_t token = 0;
    if (UNLIKELY(t->filtering)) {
        if (filter_push(t, site->scope)) {
            token = t->gen | STROBE__TOKEN_FILTERED;
            leave(t);
            return token;
        }
    } else if (UNLIKELY(((t->scopes >> (site->scope & 31)) & 1u) == 0)) {
        leave(t);
        return 0;
    }
    put_site(t, STROBE__REC_BEGIN_SITE, site);
    put_begin_details(t, fp);
    token = t->gen;
    leave(t);
    return token;
}

/* Inlined into both callers: with_stack's walk starts at the entry point's frame. */
static inline __attribute__((always_inline)) uint32_t guard_begin_name(const char *name, int scope);

uint32_t strobe__guard_begin_name(const char *name, int scope) {
    const strobe__marker_ops *m = marker_ops();
    if (UNLIKELY(m != NULL)) {
        uint32_t mark = m->begin(name ? name : "(null)", scope, 0) ? STROBE__TOKEN_MARKED : 0u;
        return mark | (recording() ? guard_begin_name(name, scope) : 0u);
    }
    return guard_begin_name(name, scope);
}

static inline __attribute__((always_inline)) uint32_t guard_begin_name(const char *name,
                                                                       int scope) {
    strobe__tstate *t = enter(1);
    if (t == NULL) return 0;
    uint32_t token = 0;
    if (UNLIKELY(t->filtering)) {
        if (filter_push(t, scope)) {
            token = t->gen | STROBE__TOKEN_FILTERED;
            leave(t);
            return token;
        }
    } else if (((t->scopes >> (scope & 31)) & 1u) == 0) {
        leave(t);
        return 0;
    }
    put_name(t, STROBE__REC_BEGIN_NAME, name, (uint64_t)(uint32_t)scope, 0, 0.0);
    put_begin_details(t, __builtin_frame_address(0));
    token = t->gen;
    leave(t);
    return token;
}

__attribute__((noinline)) static uint32_t
guard_begin_site_marked(const strobe__marker_ops *m, const strobe_site *site, const void *fp) {
    uint32_t mark =
        m->begin(site->name, STROBE__SITE_SCOPE(site->scope), 1) ? STROBE__TOKEN_MARKED : 0u;
    return mark | (recording() ? guard_begin_site_full(site, fp) : 0u);
}

uint32_t strobe__guard_begin_site(const strobe_site *site) {
    const strobe__marker_ops *m = marker_ops();
    if (UNLIKELY(m != NULL)) return guard_begin_site_marked(m, site, __builtin_frame_address(0));
    strobe__tstate *t = strobe__tls;
    if (LIKELY(fast_enter(t, BEGIN_SLOW, 16))) {
        fast_put_begin_site(t, site);
        uint32_t token = t->gen;
        leave(t);
        return token;
    }
    return guard_begin_site_full(site, __builtin_frame_address(0));
}

__attribute__((noinline)) static void guard_end_full(uint32_t token) {
    uint32_t gen = token & ~STROBE__TOKEN_FILTERED;
    strobe__tstate *t = strobe__tls;
    if (t == NULL || t->gen != gen) return;
    t = enter(0);
    if (t == NULL) return;
    if (LIKELY(t->gen == gen)) {
        int skipped = t->filtering ? filter_pop(t) : 0;
        if (!skipped && !(token & STROBE__TOKEN_FILTERED)) {
            put_end_details(t);
            put_end(t);
        }
    }
    leave(t);
}

__attribute__((noinline)) static void guard_end_marked(uint32_t token) {
    const strobe__marker_ops *m = marker_ops();
    if (m != NULL) m->end();
    token &= ~STROBE__TOKEN_MARKED;
    if (token != 0) guard_end_full(token);
}

void strobe__guard_end(uint32_t token) {
    if (UNLIKELY(token & STROBE__TOKEN_MARKED)) {
        guard_end_marked(token);
        return;
    }
    strobe__tstate *t = strobe__tls;
    /* A guard's end needs no filter stack unless scopes are filtered: its begin was recorded in
     * session `token`. */
    if (LIKELY(fast_enter(t, END_SLOW, 8))) {
        if (LIKELY(t->gen == token)) fast_put_end(t);
        leave(t);
        return;
    }
    guard_end_full(token);
}

void strobe__instant_site(const strobe_site *site) {
    strobe__tstate *t = enter(1);
    if (t == NULL) return;
    put_site(t, STROBE__REC_INSTANT_SITE, site);
    leave(t);
}

void strobe__instant_name(const char *name) {
    strobe__tstate *t = enter(1);
    if (t == NULL) return;
    put_name(t, STROBE__REC_INSTANT_NAME, name, 0, 0, 0.0);
    leave(t);
}

void strobe__counter_site(const strobe_site *site, double value) {
    strobe__tstate *t = enter(1);
    if (t == NULL) return;
    if (reserve(t, 24, 1)) {
        uint64_t *w = (uint64_t *)t->pos;
        w[1] = (uint64_t)(uintptr_t)site;
        memcpy(&w[2], &value, sizeof value);
        w[0] = STROBE__REC_WORD(STROBE__REC_COUNTER_SITE, strobe__now_raw());
        strobe__pos_publish(t, t->pos + (24));
    }
    leave(t);
}

void strobe__counter_name(const char *name, double value) {
    strobe__tstate *t = enter(1);
    if (t == NULL) return;
    put_name(t, STROBE__REC_COUNTER_NAME, name, 0, 1, value);
    leave(t);
}

/* A site with a payload: the EXT payload record and the begin or instant share one reserve (the
 * payload never lands on another event when the buffer fills) and one time. */
static void put_site_payload(strobe__tstate *t, unsigned kind, const strobe_site *site, int type,
                             uint64_t bits) {
    size_t cb = corr_bytes(t);
    if (!reserve(t, cb + 32u + 16u, 1)) return;
    if (cb) put_corr(t);
    uint64_t now = strobe__now_raw();
    uint64_t *w = (uint64_t *)t->pos;
    w[1] = (uint64_t)STROBE__EXT_PAYLOAD | (uint64_t)16 << 8 | (uint64_t)16 << 32;
    w[2] = (uint64_t)(uint32_t)type;
    w[3] = bits;
    w[0] = STROBE__REC_WORD(STROBE__REC_EXT, now);
    w[5] = (uint64_t)(uintptr_t)site;
    w[4] = STROBE__REC_WORD(kind, now);
    strobe__pos_publish(t, t->pos + (48));
}

/* The start of a begin with details (payload, args): the markers' begin, then the thread's state
 * entered, unless the scope filter drops the range. @return the state (leave() it), or NULL when
 * nothing is to be recorded. */
static inline strobe__tstate *begin_enter(const strobe_site *site) {
    const strobe__marker_ops *m = marker_ops();
    if (UNLIKELY(m != NULL)) {
        (void)m->begin(site->name, STROBE__SITE_SCOPE(site->scope), 1);
        if (!recording()) return NULL;
    }
    strobe__tstate *t = enter(1);
    if (t == NULL) return NULL;
    if (UNLIKELY(t->filtering) && filter_push(t, site->scope)) {
        leave(t);
        return NULL;
    }
    return t;
}

void strobe__begin_site_payload(const strobe_site *site, int type, uint64_t bits) {
    if (type == STROBE__PAYLOAD_NONE) {
        strobe__begin_site(site);
        return;
    }
    strobe__tstate *t = begin_enter(site);
    if (t == NULL) return;
    put_site_payload(t, STROBE__REC_BEGIN_SITE, site, type, bits);
    put_begin_details(t, __builtin_frame_address(0));
    leave(t);
}

void strobe__begin_site_args(const strobe_site *site, const char *args, size_t len) {
    if (args == NULL || len == 0 || len > STROBE__ARGS_MAX_BYTES) {
        strobe__begin_site(site);
        return;
    }
    strobe__tstate *t = begin_enter(site);
    if (t == NULL) return;
    /* As put_site_payload(): the ARGS record and the begin share one reserve and one time. */
    size_t cb = corr_bytes(t);
    size_t padded = STROBE__NAME_PAD(len);
    if (reserve(t, cb + 16u + padded + 16u, 1)) {
        if (cb) put_corr(t);
        uint64_t now = strobe__now_raw();
        uint64_t *w = (uint64_t *)t->pos;
        w[1] = (uint64_t)STROBE__EXT_ARGS | (uint64_t)padded << 8 | (uint64_t)len << 32;
        memcpy(w + 2, args, len);
        memset((char *)(w + 2) + len, 0, padded - len);
        w[0] = STROBE__REC_WORD(STROBE__REC_EXT, now);
        uint64_t *b = w + 2 + padded / 8u;
        b[1] = (uint64_t)(uintptr_t)site;
        b[0] = STROBE__REC_WORD(STROBE__REC_BEGIN_SITE, now);
        strobe__pos_publish(t, t->pos + (16u + padded + 16u));
    }
    put_begin_details(t, __builtin_frame_address(0));
    leave(t);
}

/* A torch op's begin: the EXT torch record (16 + 32 bytes) and the begin share one reserve and
 * one time, as put_site_payload(). */
static void put_torch_op(strobe__tstate *t, const strobe_site *site, const char *name, int scope,
                         const int64_t ids[4]) {
    size_t len = 0;
    if (site == NULL) {
        if (name == NULL) name = "(null)";
        len = strnlen(name, STROBE__MAX_NAME + 1);
        if (len > STROBE__MAX_NAME) {
            len = STROBE__MAX_NAME;
            t->truncated_names++;
        }
    }
    size_t cb = corr_bytes(t);
    size_t begin = site ? 16u : 16u + STROBE__NAME_PAD(len);
    if (!reserve(t, cb + 48u + begin, 1)) return;
    if (cb) put_corr(t);
    uint64_t now = strobe__now_raw();
    uint64_t *w = (uint64_t *)t->pos;
    w[1] = (uint64_t)STROBE__EXT_TORCH | (uint64_t)32 << 8 | (uint64_t)32 << 32;
    memcpy(w + 2, ids, 32);
    w[0] = STROBE__REC_WORD(STROBE__REC_EXT, now);
    uint64_t *b = w + 6;
    if (site) {
        b[1] = (uint64_t)(uintptr_t)site;
        b[0] = STROBE__REC_WORD(STROBE__REC_BEGIN_SITE, now);
    } else {
        b[1] = (uint64_t)len | (uint64_t)(uint32_t)scope << 32;
        char *bytes = (char *)(b + 2);
        memcpy(bytes, name, len);
        memset(bytes + len, 0, STROBE__NAME_PAD(len) - len);
        b[0] = STROBE__REC_WORD(STROBE__REC_BEGIN_NAME, now);
    }
    strobe__pos_publish(t, t->pos + (48u + begin));
}

void strobe__begin_torch_op(const strobe_site *site, const char *name, int scope,
                            const int64_t ids[4]) {
    if (site != NULL) {
        /* The fast path: no markers, nothing slow on the thread, room in its chunk. */
        strobe__tstate *t = strobe__tls;
        if (LIKELY(marker_ops() == NULL) && LIKELY(fast_enter(t, BEGIN_SLOW, 64))) {
            uint64_t now = strobe__now_raw();
            uint64_t *w = (uint64_t *)t->pos;
            w[1] = (uint64_t)STROBE__EXT_TORCH | (uint64_t)32 << 8 | (uint64_t)32 << 32;
            memcpy(w + 2, ids, 32);
            w[0] = STROBE__REC_WORD(STROBE__REC_EXT, now);
            w[7] = (uint64_t)(uintptr_t)site;
            w[6] = STROBE__REC_WORD(STROBE__REC_BEGIN_SITE, now);
            strobe__pos_publish(t, t->pos + 64);
            leave(t);
            return;
        }
        scope = STROBE__SITE_SCOPE(site->scope);
        name = site->name;
    }
    strobe__tstate *t = begin_named_enter(name, scope, site != NULL);
    if (t == NULL) return;
    put_torch_op(t, site, name, scope, ids);
    put_begin_details(t, __builtin_frame_address(0));
    leave(t);
}

void strobe__instant_site_payload(const strobe_site *site, int type, uint64_t bits) {
    strobe__tstate *t = enter(1);
    if (t == NULL) return;
    if (type == STROBE__PAYLOAD_NONE) {
        put_site(t, STROBE__REC_INSTANT_SITE, site);
    } else {
        put_site_payload(t, STROBE__REC_INSTANT_SITE, site, type, bits);
    }
    leave(t);
}

/* ---- Operator details (op.h) ------------------------------------------------------------- */

/* Words of one input in a SHAPES record, beyond its header word (dtype bytes not included). */
static size_t input_words(const strobe_input *in, uint32_t ndims) {
    if (in->kind == STROBE_INPUT_TENSOR || in->kind == STROBE_INPUT_INT_LIST) return ndims;
    if (in->kind == STROBE_INPUT_NONE) return 0;
    return 1;
}

void strobe__range_inputs(const strobe_input *inputs, int n) {
    if (inputs == NULL || n <= 0) return;
    strobe__tstate *t = enter(0);
    if (t == NULL) return;
    if (!innermost_recorded(t)) {
        leave(t);
        return;
    }
    uint32_t count = (uint32_t)n;
    if (count > STROBE_MAX_INPUTS) {
        t->truncated_details++;
        count = STROBE_MAX_INPUTS;
    }
    /* Sizes first, so the record is reserved once; each dtype's length is measured once. */
    size_t payload = 0;
    uint8_t dls[STROBE_MAX_INPUTS];
    for (uint32_t i = 0; i < count; i++) {
        const strobe_input *in = &inputs[i];
        int listed = in->kind == STROBE_INPUT_TENSOR || in->kind == STROBE_INPUT_INT_LIST;
        uint32_t nd = listed && in->ndims > 0 && in->dims ? (uint32_t)in->ndims : 0;
        if (nd > STROBE__MAX_DIMS) nd = STROBE__MAX_DIMS;
        size_t dl = in->dtype ? strnlen(in->dtype, STROBE__MAX_DTYPE) : 0;
        dls[i] = (uint8_t)dl;
        payload += 8u + 8u * input_words(in, nd) + STROBE__NAME_PAD(dl);
    }
    if (!reserve(t, 16u + payload, 0)) {
        leave(t);
        return;
    }
    uint64_t *w = (uint64_t *)t->pos;
    uint64_t *o = w + 2;
    for (uint32_t i = 0; i < count; i++) {
        const strobe_input *in = &inputs[i];
        uint32_t kind = (uint32_t)in->kind;
        if (kind > STROBE_INPUT_INT_LIST) kind = STROBE_INPUT_NONE;
        int listed = kind == STROBE_INPUT_TENSOR || kind == STROBE_INPUT_INT_LIST;
        uint32_t nd = listed && in->ndims > 0 && in->dims ? (uint32_t)in->ndims : 0;
        if (nd > STROBE__MAX_DIMS) {
            nd = STROBE__MAX_DIMS;
            t->truncated_details++;
        }
        size_t dl = dls[i];
        if (dl == STROBE__MAX_DTYPE && in->dtype[dl] != '\0') t->truncated_details++;
        *o++ = (uint64_t)kind | (uint64_t)nd << 8 | (uint64_t)dl << 16;
        if (listed) {
            memcpy(o, in->dims, 8u * nd);
            o += nd;
        } else if (kind == STROBE_INPUT_DOUBLE) {
            memcpy(o++, &in->double_value, 8);
        } else if (kind != STROBE_INPUT_NONE) {
            memcpy(o++, &in->int_value, 8);
        }
        if (dl) {
            /* The last word zeroed first: the pad after the name. */
            o[STROBE__NAME_PAD(dl) / 8 - 1] = 0;
            memcpy(o, in->dtype, dl);
            o += STROBE__NAME_PAD(dl) / 8;
        }
    }
    w[1] = (uint64_t)((char *)o - (char *)(w + 2));
    w[0] = STROBE__REC_WORD(STROBE__REC_SHAPES, count);
    strobe__pos_publish(t, (char *)o);
    leave(t);
}

void strobe__range_flops(int64_t flops) {
    strobe__tstate *t = enter(0);
    if (t == NULL) return;
    if (innermost_recorded(t) && reserve(t, 16, 0)) {
        uint64_t *w = (uint64_t *)t->pos;
        w[1] = (uint64_t)flops;
        w[0] = STROBE__REC_WORD(STROBE__REC_FLOPS, 0);
        strobe__pos_publish(t, t->pos + (16));
    }
    leave(t);
}

/* An EXT record: subkind, then `len` payload bytes from `a` and `b` (each padded to 8). */
static void put_ext(strobe__tstate *t, unsigned sub, const void *a, size_t alen, int counts) {
    size_t padded = STROBE__NAME_PAD(alen);
    if (!reserve(t, 16u + padded, counts)) return;
    uint64_t *w = (uint64_t *)t->pos;
    w[1] = (uint64_t)sub | (uint64_t)padded << 8 | (uint64_t)alen << 32;
    if (alen) {
        memcpy(w + 2, a, alen);
        memset((char *)(w + 2) + alen, 0, padded - alen);
    }
    w[0] = STROBE__REC_WORD(STROBE__REC_EXT, strobe__now_raw());
    strobe__pos_publish(t, t->pos + (16u + padded));
}

void strobe__range_arg(const char *key, const char *json) {
    strobe__tstate *t = enter(0);
    if (t == NULL) return;
    if (innermost_recorded(t)) {
        size_t kl = key ? strnlen(key, STROBE__MAX_ARG_KEY + 1) : 0;
        size_t jl = json ? strnlen(json, STROBE__MAX_ARG_JSON + 1) : 0;
        if (kl == 0 || kl > STROBE__MAX_ARG_KEY || jl == 0 || jl > STROBE__MAX_ARG_JSON ||
            !strobe__json_valid(json, jl)) {
            t->truncated_details++;
        } else {
            char buf[STROBE__MAX_ARG_KEY + 1 + STROBE__MAX_ARG_JSON];
            memcpy(buf, key, kl);
            buf[kl] = '\0';
            memcpy(buf + kl + 1, json, jl);
            put_ext(t, STROBE__EXT_ARG, buf, kl + 1 + jl, 0);
        }
    }
    leave(t);
}

void strobe__module_push(const char *name) {
    strobe__tstate *t = enter(0);
    if (t == NULL) return;
    if (name == NULL) name = "(null)";
    size_t len = strnlen(name, STROBE__MAX_NAME + 1);
    if (len > STROBE__MAX_NAME) {
        len = STROBE__MAX_NAME;
        t->truncated_names++;
    }
    put_ext(t, STROBE__EXT_MODULE_PUSH, name, len, 0);
    leave(t);
}

void strobe__module_pop(void) {
    strobe__tstate *t = enter(0);
    if (t == NULL) return;
    put_ext(t, STROBE__EXT_MODULE_POP, NULL, 0, 0);
    leave(t);
}

/* A MEM record, followed by its call stack (`n` return addresses, STROBE__MEM_STACK set) when
 * n > 0: one reserve and one publish, so the decoder always finds the two together. */
static inline __attribute__((always_inline)) void
put_memory(int32_t device, const void *ptr, int64_t bytes, int64_t total_allocated,
           int64_t total_reserved, const uint64_t *pcs, uint32_t n, uint64_t weight_bits) {
    strobe__tstate *t = enter(1);
    if (t == NULL) return;
    size_t sb = n ? 8u + 8u * (size_t)n : 0;
    if (reserve(t, 48 + sb, 1)) {
        uint64_t *w = (uint64_t *)t->pos;
        w[1] = (uint64_t)(uintptr_t)ptr;
        w[2] = (uint64_t)bytes;
        w[3] = (uint64_t)total_allocated;
        w[4] = (uint64_t)total_reserved;
        w[5] = (uint64_t)(uint32_t)device | (n ? STROBE__MEM_STACK : 0) |
               weight_bits << STROBE__MEM_WEIGHT_SHIFT;
        if (n) {
            w[6] = STROBE__REC_WORD(STROBE__REC_STACK, (uint64_t)n);
            memcpy(w + 7, pcs, 8u * (size_t)n);
        }
        w[0] = STROBE__REC_WORD(STROBE__REC_MEM, strobe__now_raw());
        strobe__pos_publish(t, t->pos + (48 + sb));
    }
    leave(t);
}

void strobe__memory(int32_t device, const void *ptr, int64_t bytes, int64_t total_allocated,
                    int64_t total_reserved) {
    put_memory(device, ptr, bytes, total_allocated, total_reserved, NULL, 0, 0);
}

void strobe__memory_stack(int32_t device, const void *ptr, int64_t bytes, int64_t total_allocated,
                          int64_t total_reserved, const uint64_t *pcs, int n) {
    if (pcs == NULL || n < 0) n = 0;
    if (n > (int)STROBE__MAX_STACK) n = (int)STROBE__MAX_STACK;
    put_memory(device, ptr, bytes, total_allocated, total_reserved, pcs, (uint32_t)n, 0);
}

void strobe__memory_sample(int32_t device, const void *ptr, int64_t bytes, int64_t total_allocated,
                           int64_t total_reserved, const uint64_t *pcs, int n, double weight) {
    if (pcs == NULL || n < 0) n = 0;
    if (n > (int)STROBE__MAX_STACK) n = (int)STROBE__MAX_STACK;
    /* A positive finite single's bits (the sign bit clear); anything else: no weight. */
    float f = weight > 0 && weight < 3e38 ? (float)weight : 0.0f;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    put_memory(device, ptr, bytes, total_allocated, total_reserved, pcs, (uint32_t)n,
               bits & 0x7fffffffu);
}

void strobe__backend_record(int64_t start_ns, int64_t end_ns, int64_t debug_handle,
                            const char *event_name, const char *backend_name) {
    strobe__tstate *t = enter(1);
    if (t == NULL) return;
    size_t nl = strnlen(event_name ? event_name : "", STROBE__MAX_NAME + 1);
    size_t bl = strnlen(backend_name ? backend_name : "", 256 + 1);
    if (nl > STROBE__MAX_NAME) {
        nl = STROBE__MAX_NAME;
        t->truncated_names++;
    }
    if (bl > 256) {
        bl = 256;
        t->truncated_names++;
    }
    /* Payload: start, end, handle, lengths, then the two names (the EXT header's length counts
     * the whole payload). */
    size_t len = 32u + nl + bl;
    size_t padded = STROBE__NAME_PAD(len);
    if (reserve(t, 16u + padded, 1)) {
        uint64_t *w = (uint64_t *)t->pos;
        w[1] = (uint64_t)STROBE__EXT_BACKEND | (uint64_t)padded << 8 | (uint64_t)len << 32;
        w[2] = (uint64_t)start_ns;
        w[3] = (uint64_t)end_ns;
        w[4] = (uint64_t)debug_handle;
        w[5] = (uint64_t)nl | (uint64_t)bl << 32;
        char *b = (char *)(w + 6);
        if (nl) memcpy(b, event_name, nl);
        if (bl) memcpy(b + nl, backend_name, bl);
        memset(b + nl + bl, 0, padded - len);
        w[0] = STROBE__REC_WORD(STROBE__REC_EXT, strobe__now_raw());
        strobe__pos_publish(t, t->pos + (16u + padded));
        /* Kept as it came; the collector and the stream make it zero-length. */
        if (end_ns < start_ns) t->reversed_backend++;
    }
    leave(t);
}
