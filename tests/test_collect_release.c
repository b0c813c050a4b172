/* test_collect_release.c: stop hands the arena's memory back while it decodes (collect.c,
 * interner.span_left): each 2 MB span goes once every chunk in it is decoded, and the event
 * array is faulted in just ahead of the decoder. Threads recording at once interleave their
 * chunks in the arena, and chunks of 40000 bytes straddle the spans: every range must come out
 * whole and in order, with a buffer that holds everything and with one that fills. */
#include <pthread.h>

#include "result_check.h"

#define THREADS 4
#define ITERS 100000

static pthread_barrier_t go;

static void *body(void *arg) {
    int k = (int)(intptr_t)arg;
    char name[48];
    snprintf(name, sizeof name, "release-%d", k);
    strobe_set_thread_name(name);
    pthread_barrier_wait(&go);
    for (int i = 0; i < ITERS; i++) {
        /* Names of several lengths, so that records do not fall at the same offsets. */
        snprintf(name, sizeof name, "t%d-%d%s", k, i, i % 3 ? "" : "-padded-name");
        strobe_range_begin(name);
        STROBE_RANGE_BEGIN("inner");
        STROBE_RANGE_END();
        strobe_range_end();
    }
    return NULL;
}

/* Runs the threads on a buffer of `mb` MB; @return the result. */
static strobe_result *run(size_t mb) {
    strobe_config c;
    strobe_config_init(&c);
    c.buffer_bytes = mb << 20;
    c.chunk_bytes = 40000;
    start_or_die(&c);
    pthread_barrier_init(&go, NULL, THREADS);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, body, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    return stop_or_die();
}

/* Each worker's events: outer "tK-I" ranges, I from 0 up, each with one "inner" child; all of
 * them when `whole`, else a prefix ending at the buffer-full marker. */
static void check_threads(const strobe_result *r, int whole) {
    const strobe_thread_info *ti = strobe_result_threads(r);
    const strobe_event *ev = strobe_result_events(r);
    int workers = 0;
    size_t total = 0;
    for (size_t t = 0; t < strobe_result_thread_count(r); t++) {
        int k = -1;
        if (sscanf(ti[t].name, "release-%d", &k) != 1) continue;
        workers++;
        size_t i = 0, e = ti[t].first_event, end = e + ti[t].event_count;
        int bad = 0;
        while (e < end && !bad) {
            const strobe_event *o = &ev[e];
            if (!whole && o->kind == STROBE_EVENT_INSTANT &&
                strncmp(o->name, "[strobe] buffer full", 20) == 0) {
                e++;
                continue;
            }
            char want[48];
            snprintf(want, sizeof want, "t%d-%zu%s", k, i, i % 3 ? "" : "-padded-name");
            if (strcmp(o->name, want) != 0) {
                fprintf(stderr, "thread %d event %zu: \"%s\", expected \"%s\"\n", k, i, o->name,
                        want);
                bad = 1;
                break;
            }
            /* The inner range follows, as the outer's only child (a range cut by the full
             * buffer may have none). */
            if (e + 1 < end && ev[e + 1].parent == e) {
                if (strcmp(ev[e + 1].name, "inner") != 0 || o->first_child != e + 1 ||
                    ev[e + 1].start_ns < o->start_ns || ev[e + 1].end_ns > o->end_ns)
                    bad = 1;
                e += 2;
            } else {
                if (whole) bad = 1;
                e++;
            }
            i++;
        }
        CHECK(!bad);
        if (whole)
            CHECK_EQ(i, ITERS);
        else
            CHECK(i > 1000 && i <= ITERS);
        total += i;
    }
    CHECK_EQ(workers, THREADS);
    if (whole) CHECK_EQ(total, (size_t)THREADS * ITERS);
}

int main(void) {
    /* Everything fits: 64 B per iteration, 25.6 MB in all, 13 spans. */
    strobe_result *r = run(64);
    const strobe_stats *st = strobe_result_stats(r);
    CHECK_EQ(check_wellformed(r), 0);
    CHECK_EQ(st->dropped_events, 0);
    CHECK(st->buffer_bytes_used > ((size_t)16 << 20));
    check_threads(r, 1);
    strobe_result_free(r);

    /* A buffer that fills: each thread keeps a prefix, closed where its buffer filled. */
    r = run(18);
    st = strobe_result_stats(r);
    CHECK_EQ(check_wellformed(r), 0);
    CHECK(st->dropped_events > 0);
    check_threads(r, 0);
    strobe_result_free(r);

    /* A second session in the same process records into a new arena as before. */
    r = run(64);
    check_threads(r, 1);
    strobe_result_free(r);
    return check_result();
}
