/* result_check.h: structural checks of a result that every test applies: events grouped by
 * thread and sorted by start, ends after starts, children inside their parents, and tree links
 * (parent, first_child, next_sibling, depth) consistent with each other. */
#ifndef STROBE_TEST_RESULT_CHECK_H
#define STROBE_TEST_RESULT_CHECK_H

#include "check.h"
#include "strobe/strobe.h"

/* Returns the number of problems found (each printed). */
static inline int check_wellformed(const strobe_result *r) {
    int bad = 0;
    const strobe_event *ev = strobe_result_events(r);
    size_t n = strobe_result_event_count(r);
    const strobe_thread_info *th = strobe_result_threads(r);
    size_t nt = strobe_result_thread_count(r), covered = 0;
#define WF(cond, ...)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (bad < 10) fprintf(stderr, "wellformed: " __VA_ARGS__), fputc('\n', stderr);        \
            bad++;                                                                                 \
        }                                                                                          \
    } while (0)
    for (size_t t = 0; t < nt; t++) {
        WF(th[t].first_event == covered, "thread %zu starts at %zu, expected %zu", t,
           th[t].first_event, covered);
        covered += th[t].event_count;
        for (size_t i = th[t].first_event; i < th[t].first_event + th[t].event_count; i++) {
            const strobe_event *e = &ev[i];
            WF(e->thread_index == t, "event %zu thread_index %u != %zu", i, e->thread_index, t);
            WF(e->tid == th[t].tid, "event %zu tid", i);
            WF(e->end_ns >= e->start_ns, "event %zu ends before it starts", i);
            WF(e->name != NULL && e->category != NULL, "event %zu has no name/category", i);
            if (i > th[t].first_event && e->kind != STROBE_EVENT_COUNTER)
                WF(e->start_ns >= ev[i - 1].start_ns || ev[i - 1].kind == STROBE_EVENT_COUNTER,
                   "event %zu starts before event %zu", i, i - 1);
            if (e->parent != STROBE_NO_EVENT) {
                const strobe_event *p = &ev[e->parent];
                WF(e->parent < i, "event %zu parent %u after it", i, e->parent);
                WF(p->kind == STROBE_EVENT_RANGE, "event %zu parent is not a range", i);
                WF(p->start_ns <= e->start_ns && e->end_ns <= p->end_ns,
                   "event %zu [%lld,%lld] outside parent %u [%lld,%lld]", i, (long long)e->start_ns,
                   (long long)e->end_ns, e->parent, (long long)p->start_ns, (long long)p->end_ns);
                WF(e->depth == p->depth + 1, "event %zu depth %u, parent depth %u", i, e->depth,
                   p->depth);
            } else {
                WF(e->depth == 0, "root event %zu has depth %u", i, e->depth);
            }
            for (uint32_t c = e->first_child; c != STROBE_NO_EVENT; c = ev[c].next_sibling) {
                WF(c < n && ev[c].parent == i, "child %u of %zu has parent %u", c, i, ev[c].parent);
                if (c >= n) break;
                if (ev[c].next_sibling != STROBE_NO_EVENT)
                    WF(ev[ev[c].next_sibling].start_ns >= ev[c].end_ns,
                       "siblings %u and %u overlap", c, ev[c].next_sibling);
            }
        }
    }
    WF(covered == n, "threads cover %zu of %zu events", covered, n);
#undef WF
    return bad;
}

/* Counts events named `name` (of any kind) in the result. */
static inline size_t count_named(const strobe_result *r, const char *name) {
    size_t k = 0;
    const strobe_event *ev = strobe_result_events(r);
    for (size_t i = 0; i < strobe_result_event_count(r); i++)
        if (strcmp(ev[i].name, name) == 0) k++;
    return k;
}

/* Returns the index of the first event named `name`, or -1. */
static inline long find_named(const strobe_result *r, const char *name) {
    const strobe_event *ev = strobe_result_events(r);
    for (size_t i = 0; i < strobe_result_event_count(r); i++)
        if (strcmp(ev[i].name, name) == 0) return (long)i;
    return -1;
}

static inline strobe_result *stop_or_die(void) {
    strobe_result *r = NULL;
    int rc = strobe_stop(&r);
    if (rc != 0 || r == NULL) {
        fprintf(stderr, "strobe_stop: %s\n", strobe_strerror(rc));
        exit(1);
    }
    return r;
}

static inline void start_or_die(const strobe_config *cfg) {
    int rc = strobe_start(cfg);
    if (rc != 0) {
        fprintf(stderr, "strobe_start: %s\n", strobe_strerror(rc));
        exit(1);
    }
}

#endif
