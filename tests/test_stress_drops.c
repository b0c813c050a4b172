/* test_stress_drops.c: a full buffer shared by many threads, every dropped event counted (issue
 * 29's adversarial plan; README: "Nothing is lost silently").
 *
 * Eight threads each make ITERS attempts of four events — a scoped range with a dynamic range
 * inside it, an instant and a counter sample — into a 1 MiB buffer of 4 KiB chunks, which fills
 * long before they are done. Then, for the result and for the saved trace alike:
 *   attempts - events recorded == dropped_events,
 * per event kind and in total, where a range counts once and a range kept truncated (its begin
 * recorded, its end lost when the buffer filled) counts as recorded; the per-thread drop counts
 * add up to the total; the trace's "strobe" stats equal the result's; each "[strobe] buffer full:
 * records dropped" marker carries its thread's count (a thread that never got a chunk has no
 * marker: its drops are in its strobe_thread_info and the totals). The trace is read back with
 * strobe's trace reader and counted event by event. */
#include <pthread.h>

#include "stress_util.h"
#include "trace_reader.h"

#define THREADS 8
#define ITERS 20000
#define KINDS 4

static const char *const names[KINDS] = {"drop scope", "drop dyn", "drop instant", "drop counter"};
static const char *const marker = "[strobe] buffer full: records dropped";
static pthread_barrier_t go;

static void *writer_body(void *arg) {
    (void)arg;
    pthread_barrier_wait(&go);
    for (int i = 0; i < ITERS; i++) {
        STROBE_SCOPE("drop scope");
        strobe_range_begin("drop dyn");
        strobe_instant("drop instant");
        strobe_counter("drop counter", (double)i);
        strobe_range_end();
    }
    return NULL;
}

/* Counts the trace's events by name (and the markers), reading it with the trace reader. */
static int count_trace(const char *path, uint64_t counts[KINDS], uint64_t *markers,
                       uint64_t *marker_args) {
    strobe_rd *rd = NULL;
    int rc = strobe_rd_open(&rd, path, NULL);
    if (rc != 0) {
        fprintf(stderr, "open %s: %s\n", path, strobe_strerror(rc));
        return -1;
    }
    strobe_rd_item it;
    while ((rc = strobe_rd_next(rd, &it)) > 0) {
        if (it.kind != STROBE_RD_EVENT || it.event->name.s == NULL) continue;
        const strobe_rd_event *e = it.event;
        if (e->ph.s && strcmp(e->ph.s, "M") == 0) continue;
        for (int k = 0; k < KINDS; k++)
            if (strcmp(e->name.s, names[k]) == 0) counts[k]++;
        if (strcmp(e->name.s, marker) == 0) {
            (*markers)++;
            strobe_rd_value v;
            int64_t n = 0;
            if (strobe_rd_event_arg(e, "dropped events", &v) == 1 &&
                strobe_rd_value_int(&v, &n) == 0)
                *marker_args += (uint64_t)n;
        }
    }
    if (rc < 0) fprintf(stderr, "read %s: %s\n", path, strobe_rd_errmsg(rd));
    strobe_rd_close(rd);
    return rc == 0 ? 0 : -1;
}

int main(void) {
    stress_watchdog();
    strobe_config c;
    strobe_config_init(&c);
    c.buffer_bytes = 1 << 20;
    c.chunk_bytes = 4096;
    c.prefault_bytes = 0;
    start_or_die(&c);
    pthread_t th[THREADS];
    pthread_barrier_init(&go, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        REQUIRE(pthread_create(&th[i], NULL, writer_body, NULL) == 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    strobe_result *r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);
    const strobe_stats *st = strobe_result_stats(r);
    const uint64_t attempts = (uint64_t)THREADS * ITERS * KINDS;

    /* The result. */
    uint64_t recorded = 0;
    for (int k = 0; k < KINDS; k++) {
        size_t n = count_named(r, names[k]);
        CHECK_INT(n, <, (size_t)THREADS * ITERS); /* the buffer did fill */
        recorded += n;
    }
    CHECK_INT(st->dropped_events, >, 0);
    CHECK_EQ(attempts - recorded, st->dropped_events);
    uint64_t per_thread = 0;
    const strobe_thread_info *ti = strobe_result_threads(r);
    size_t threads_dropping = 0;
    for (size_t t = 0; t < strobe_result_thread_count(r); t++) {
        per_thread += ti[t].dropped_events;
        threads_dropping += ti[t].dropped_events > 0;
    }
    CHECK_EQ(per_thread, st->dropped_events);
    /* A thread that got a chunk and then hit the cap has a marker carrying its own count; one
     * that never got a chunk (the others had taken them all) has no record to put a marker on,
     * and its drops are in its strobe_thread_info and the totals only. */
    size_t markers_in_result = count_named(r, marker);
    uint64_t marked_drops = 0;
    const strobe_event *ev = strobe_result_events(r);
    for (size_t t = 0; t < strobe_result_thread_count(r); t++) {
        for (size_t i = ti[t].first_event; i < ti[t].first_event + ti[t].event_count; i++) {
            if (strcmp(ev[i].name, marker) != 0) continue;
            const char *arg = strobe_event_arg(r, i, "dropped events");
            REQUIRE(arg != NULL);
            CHECK_EQ(strtoull(arg, NULL, 10), ti[t].dropped_events);
            marked_drops += ti[t].dropped_events;
        }
    }
    CHECK_INT(markers_in_result, >=, 1);
    CHECK_INT(markers_in_result, <=, threads_dropping);
    CHECK_INT(st->buffer_bytes_used, <=, st->buffer_bytes_cap);

    /* The trace. */
    char path[4096];
    char *text =
        stress_save_json(r, stress_out_path(path, sizeof path, "stress_drops", "drops.json"));
    REQUIRE(text != NULL);
    CHECK_EQ(stress_trace_stat(text, "dropped_events"), st->dropped_events);
    CHECK_EQ(stress_trace_stat(text, "truncated_ranges"), st->truncated_ranges);
    free(text);
    uint64_t counts[KINDS] = {0}, markers = 0, marker_args = 0;
    REQUIRE(count_trace(path, counts, &markers, &marker_args) == 0);
    uint64_t in_trace = 0;
    for (int k = 0; k < KINDS; k++) {
        CHECK_EQ(counts[k], count_named(r, names[k]));
        in_trace += counts[k];
    }
    CHECK_EQ(attempts - in_trace, st->dropped_events);
    CHECK_EQ(markers, markers_in_result);
    CHECK_EQ(marker_args, marked_drops);
    printf("drops: %llu attempts, %llu recorded, %llu dropped, %llu ranges truncated, %zu threads "
           "hit the cap, %zu of them with a marker\n",
           (unsigned long long)attempts, (unsigned long long)in_trace,
           (unsigned long long)st->dropped_events, (unsigned long long)st->truncated_ranges,
           threads_dropping, markers_in_result);
    strobe_result_free(r);
    return check_result();
}
