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

#include "record.h"
#include "result_internal.h"
#include "state.h"
#include "util/strtab.h"
#include "strobe/error.h"
#include "strobe/instrument.h"

/* ---- name interning -------------------------------------------------------------------- */

typedef struct {
    const void *site;
    const char *name;
} site_slot;

typedef struct {
    strobe_result *r;
    site_slot *sites;
    size_t site_cap, site_count;
    strobe__strtab names;       /* run-time names, by content */
    const void *cache_site[64]; /* direct-mapped cache in front of the site table */
    const char *cache_name[64];
} interner;

static uint64_t hash_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static int grow_sites(interner *in) {
    size_t cap = in->site_cap ? in->site_cap * 2 : 256;
    site_slot *n = calloc(cap, sizeof *n);
    if (n == NULL) return STROBE_ENOMEM;
    for (size_t i = 0; i < in->site_cap; i++) {
        if (!in->sites[i].site) continue;
        size_t j = hash_ptr(in->sites[i].site) & (cap - 1);
        while (n[j].site)
            j = (j + 1) & (cap - 1);
        n[j] = in->sites[i];
    }
    free(in->sites);
    in->sites = n;
    in->site_cap = cap;
    return 0;
}

static const char *site_name(interner *in, const strobe_site *site) {
    size_t c = ((uintptr_t)site >> 3) & 63u;
    if (in->cache_site[c] == site) return in->cache_name[c];
    if ((in->site_count + 1) * 2 > in->site_cap && grow_sites(in)) return NULL;
    size_t j = hash_ptr(site) & (in->site_cap - 1);
    while (in->sites[j].site && in->sites[j].site != site)
        j = (j + 1) & (in->site_cap - 1);
    if (!in->sites[j].site) {
        const char *src = site->name ? site->name : "(null)";
        size_t len = strnlen(src, STROBE__MAX_NAME);
        const char *copy = strobe__pool_strndup(&in->r->pool, src, len);
        if (copy == NULL) return NULL;
        in->sites[j].site = site;
        in->sites[j].name = copy;
        in->site_count++;
    }
    in->cache_site[c] = site;
    in->cache_name[c] = in->sites[j].name;
    return in->sites[j].name;
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
    if (kind == STROBE_EVENT_INSTANT) return "cpu_instant_event";
    if (kind == STROBE_EVENT_COUNTER) return "cpu_counter";
    return scope == STROBE_SCOPE_USER_SCOPE ? "user_annotation" : "cpu_op";
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

/* The size of the record at p (avail bytes left in its chunk), and whether it starts an event.
 * 0 for a record that cannot be read (unknown kind, or longer than what is left), which cannot
 * happen unless memory was overwritten: the rest of the chunk is then skipped. */
static size_t rec_size(const char *p, size_t avail, int *starts_event) {
    uint64_t w[2] = {0, 0};
    memcpy(w, p, avail >= 16 ? 16 : 8);
    size_t size = 0;
    *starts_event = 1;
    switch (STROBE__REC_KIND(w[0])) {
    case STROBE__REC_END:
        *starts_event = 0;
        size = 8;
        break;
    case STROBE__REC_TRUNC: /* becomes the "buffer full" marker */
        size = 8;
        break;
    case STROBE__REC_CORR:
        *starts_event = 0;
        size = 24;
        break;
    case STROBE__REC_BEGIN_SITE:
    case STROBE__REC_INSTANT_SITE:
        size = 16;
        break;
    case STROBE__REC_COUNTER_SITE:
        size = 24;
        break;
    case STROBE__REC_BEGIN_NAME:
    case STROBE__REC_INSTANT_NAME:
    case STROBE__REC_COUNTER_NAME: {
        if (avail < 16 || (uint32_t)w[1] > STROBE__MAX_NAME) return 0;
        size_t head = STROBE__REC_KIND(w[0]) == STROBE__REC_COUNTER_NAME ? 24 : 16;
        size = head + STROBE__NAME_PAD((uint32_t)w[1]);
        break;
    }
    default:
        return 0;
    }
    return size <= avail ? size : 0;
}

static size_t chunk_used(const strobe__tstate *t, const strobe__chunk *c) {
    return c == t->cur ? (size_t)(t->pos - (const char *)(c + 1)) : (size_t)c->used;
}

/* Collects one thread's records. *marker is set to the index of the "buffer full" instant, or
 * STROBE_NO_EVENT when the thread's buffer never filled. */
static int collect_thread(interner *in, const strobe__tstate *t, uint32_t thread_index,
                          const strobe__clock_conv *conv, int64_t stop_ns, strobe_stats *stats,
                          uint32_t *marker) {
    strobe_result *r = in->r;
    open_stack st = {NULL, NULL, 0, 0, STROBE_NO_EVENT};
    uint64_t pend_ext = 0, pend_user = 0;
    int64_t prev = INT64_MIN;
    int rc = 0;
    int64_t trunc_ns = INT64_MIN;
    *marker = STROBE_NO_EVENT;

    for (const strobe__chunk *c = t->first; c && rc == 0; c = c->next) {
        const char *p = (const char *)(c + 1);
        const char *end = p + chunk_used(t, c);
        while (p < end && rc == 0) {
            uint64_t w0;
            memcpy(&w0, p, 8);
            unsigned kind = STROBE__REC_KIND(w0);
            int64_t ts = strobe__clock_to_ns(conv, STROBE__REC_TS(w0));
            if (kind != STROBE__REC_CORR) {
                if (ts < prev) ts = prev;
                prev = ts;
            }
            const uint64_t *w = (const uint64_t *)p;
            int starts_event;
            size_t size = rec_size(p, (size_t)(end - p), &starts_event);
            if (size == 0) break;
            const char *name = NULL;
            strobe_event *e = NULL;
            switch (kind) {
            case STROBE__REC_END:
                if (st.depth == 0) {
                    stats->unmatched_ends++;
                } else {
                    r->events[st.idx[--st.depth]].end_ns = ts;
                }
                break;
            case STROBE__REC_BEGIN_SITE:
            case STROBE__REC_INSTANT_SITE: {
                const strobe_site *site = (const strobe_site *)(uintptr_t)w[1];
                name = site_name(in, site);
                if (name == NULL) {
                    rc = STROBE_ENOMEM;
                    break;
                }
                int range = kind == STROBE__REC_BEGIN_SITE;
                e = add_event(r, &st, t, thread_index,
                              range ? STROBE_EVENT_RANGE : STROBE_EVENT_INSTANT, site->scope, name,
                              ts);
                if (range) rc = stack_push(&st, (uint32_t)(e - r->events));
                break;
            }
            case STROBE__REC_BEGIN_NAME:
            case STROBE__REC_INSTANT_NAME: {
                uint32_t len = (uint32_t)w[1];
                name = bytes_name(in, p + 16, len);
                if (name == NULL) {
                    rc = STROBE_ENOMEM;
                    break;
                }
                int range = kind == STROBE__REC_BEGIN_NAME;
                int scope = range ? (int)(w[1] >> 32) : STROBE_SCOPE_USER_SCOPE;
                e = add_event(r, &st, t, thread_index,
                              range ? STROBE_EVENT_RANGE : STROBE_EVENT_INSTANT, scope, name, ts);
                if (range) rc = stack_push(&st, (uint32_t)(e - r->events));
                break;
            }
            case STROBE__REC_COUNTER_SITE:
            case STROBE__REC_COUNTER_NAME: {
                uint32_t len = 0;
                if (kind == STROBE__REC_COUNTER_SITE) {
                    name = site_name(in, (const strobe_site *)(uintptr_t)w[1]);
                } else {
                    len = (uint32_t)w[1];
                    name = bytes_name(in, p + 24, len);
                }
                if (name == NULL) {
                    rc = STROBE_ENOMEM;
                    break;
                }
                e = add_event(r, &st, t, thread_index, STROBE_EVENT_COUNTER,
                              STROBE_SCOPE_USER_SCOPE, name, ts);
                memcpy(&e->value, &w[2], sizeof e->value);
                break;
            }
            case STROBE__REC_CORR:
                pend_ext = w[1];
                pend_user = w[2];
                break;
            case STROBE__REC_TRUNC:
                trunc_ns = ts;
                break;
            default: /* rec_size() accepted no other kind */
                break;
            }
            if (e != NULL && e->kind != STROBE_EVENT_COUNTER) {
                e->correlation_id = pend_ext;
                e->user_correlation_id = pend_user;
                pend_ext = pend_user = 0;
            }
            p += size;
        }
    }
    if (rc == 0 && trunc_ns != INT64_MIN) {
        stats->truncated_ranges += st.depth;
        close_open(r, &st, trunc_ns, STROBE_EVENT_TRUNCATED);
        strobe_event *m =
            add_event(r, &st, t, thread_index, STROBE_EVENT_INSTANT, STROBE_SCOPE_USER_SCOPE,
                      "[strobe] buffer full: records dropped", trunc_ns);
        *marker = (uint32_t)(m - r->events);
    }
    if (rc == 0) {
        stats->unfinished_ranges += st.depth;
        close_open(r, &st, stop_ns, STROBE_EVENT_UNFINISHED);
    }
    free(st.idx);
    free(st.last);
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
            while (p < end && (size = rec_size(p, (size_t)(end - p), &starts_event)) != 0) {
                events += (size_t)starts_event;
                p += size;
            }
            bytes += used;
        }
    }
    strobe__tstate **list = calloc(n ? n : 1, sizeof *list);
    r->threads = calloc(n ? n : 1, sizeof *r->threads);
    int rc = (list && r->threads) ? strobe__result_alloc_events(r, events) : STROBE_ENOMEM;
    if (rc) {
        free(list);
        return rc;
    }
    r->event_count = 0;
    /* The session list is newest first; report threads in the order they attached. */
    size_t i = n;
    for (strobe__tstate *t = s->threads; t; t = t->sess_next)
        list[--i] = t;

    interner in;
    memset(&in, 0, sizeof in);
    in.r = r;
    strobe__strtab_init(&in.names, &r->pool);
    strobe_stats *st = &r->stats;
    st->buffer_bytes_used = bytes;
    st->buffer_bytes_cap = s->arena_bytes;
    st->threads = n;
    for (i = 0; i < n && rc == 0; i++) {
        strobe__tstate *t = list[i];
        strobe_thread_info *ti = &r->threads[i];
        ti->tid = t->tid;
        ti->name = strobe__pool_strdup(&r->pool, t->name);
        ti->first_event = r->event_count;
        ti->dropped_events = t->dropped;
        ti->exited = t->exited;
        if (ti->name == NULL) rc = STROBE_ENOMEM;
        uint32_t marker = STROBE_NO_EVENT;
        if (rc == 0) rc = collect_thread(&in, t, (uint32_t)i, conv, stop_ns, st, &marker);
        ti->event_count = r->event_count - ti->first_event;
        st->dropped_events += t->dropped;
        st->signal_dropped += t->signal_dropped;
        st->truncated_names += t->truncated_names;
        st->scope_depth_overflow += t->scope_overflow;
        st->correlation_overflow += t->corr_overflow;
        if (rc == 0 && marker != STROBE_NO_EVENT) {
            /* The marker instant carries its thread's count. */
            char num[32];
            snprintf(num, sizeof num, "%llu", (unsigned long long)t->dropped);
            rc = strobe_event_set_arg(r, marker, "dropped events", num);
        }
    }
    r->thread_count = n;
    free(in.sites);
    strobe__strtab_release(&in.names);
    free(list);
    return rc;
}
