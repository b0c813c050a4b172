/* test_stress_sessions.c: sessions started and stopped from many threads at once while other
 * threads record (issue 29's adversarial plan).
 *
 * Sixteen controller threads each make a few dozen random cold-path calls — strobe_start (plain,
 * per-thread mode, flight recorder, streaming), strobe_prepare + strobe_start_prepared,
 * strobe_stop, strobe_flight_dump, strobe_add_metadata_json, strobe_enable_in_child_thread,
 * strobe_is_running — racing each other, while four recorder threads record scoped and dynamic
 * ranges, instants, counters and correlation ids without pause, and name themselves now and then.
 * What must hold: no crash or deadlock (the watchdog fails the test after 120 s); every call
 * returns 0 or one of the codes its header documents for that call; every session that started
 * is stopped exactly once (successful starts equal successful stops); every result is well formed
 * (result_check.h) and holds only the names recorded here; the traces saved from results, and the
 * stream files, are valid JSON whose loss counters equal the result's. */
#include <pthread.h>
#include <stdatomic.h>

#include "stress_util.h"

#define CONTROLLERS 16
#define RECORDERS 4
#define CALLS_PER_CONTROLLER 100

static atomic_int recording_on = 1;
static atomic_long starts_ok, stops_ok, results_checked, traces_saved, streams_checked;
static atomic_long bad_codes;

/* A controller's pseudo-random numbers (xorshift), so that each run makes the same choices. */
static uint32_t next_rand(uint32_t *s) {
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

/* Fails the test when rc is neither 0 nor a nor b, the codes the call's header documents for
 * what these races can cause. */
static void expect_code(const char *call, int rc, int a, int b) {
    if (rc == 0 || rc == a || rc == b) return;
    fprintf(stderr, "%s returned %d (%s), not 0/%s/%s%s\n", call, rc, strobe_err_name(rc),
            strobe_err_name(a), strobe_err_name(b),
            stress_known_code(rc) ? "" : ": not a documented code");
    atomic_fetch_add(&bad_codes, 1);
}

static const char *const known_names[] = {
    "rec scope", "rec dyn", "rec instant", "rec counter", "[strobe] buffer full: records dropped",
};

static void check_stop_result(strobe_result *r, int controller, int call) {
    int bad = check_wellformed(r);
    if (bad) {
        fprintf(stderr, "controller %d call %d: result not well formed (%d problems)\n", controller,
                call, bad);
        atomic_fetch_add(&bad_codes, 1);
    }
    const strobe_event *ev = strobe_result_events(r);
    for (size_t i = 0; i < strobe_result_event_count(r); i++) {
        int known = 0;
        for (size_t k = 0; k < sizeof known_names / sizeof *known_names; k++)
            if (strcmp(ev[i].name, known_names[k]) == 0) known = 1;
        if (!known) {
            fprintf(stderr, "controller %d: unexpected event name \"%s\"\n", controller,
                    ev[i].name);
            atomic_fetch_add(&bad_codes, 1);
            break;
        }
    }
    atomic_fetch_add(&results_checked, 1);
}

/* Saves the result as JSON, checks the file and its loss counters against the result's. */
static void save_and_check(strobe_result *r, int controller, int call) {
    char name[64];
    snprintf(name, sizeof name, "c%02d_%02d.json", controller, call);
    char path[4096];
    stress_out_path(path, sizeof path, "stress_sessions", name);
    char *text = stress_save_json(r, path);
    if (text == NULL) {
        atomic_fetch_add(&bad_codes, 1);
        return;
    }
    const strobe_stats *st = strobe_result_stats(r);
    long long dropped = stress_trace_stat(text, "dropped_events");
    if (dropped != (long long)st->dropped_events) {
        fprintf(stderr, "%s: dropped_events %lld in the trace, %llu in the result\n", path, dropped,
                (unsigned long long)st->dropped_events);
        atomic_fetch_add(&bad_codes, 1);
    }
    free(text);
    atomic_fetch_add(&traces_saved, 1);
}

/* Checks that a file strobe wrote while a session ran (a stream, a flight dump) is valid JSON. */
static void check_stream_file(const char *path) {
    size_t n = 0;
    char *text = stress_read_file(path, &n);
    if (text == NULL || !strobe__json_valid(text, n)) {
        fprintf(stderr, "stream file %s: %s\n", path, text ? "not valid JSON" : "unreadable");
        atomic_fetch_add(&bad_codes, 1);
    } else {
        atomic_fetch_add(&streams_checked, 1);
    }
    free(text);
}

static void *controller_body(void *arg) {
    int id = (int)(intptr_t)arg;
    uint32_t seed = 0x9e3779b9u * (uint32_t)(id + 1);
    /* The stream file this controller's streaming sessions write, if it started one. A session
     * may be stopped by another controller: each checks the files it named after the stop that it
     * saw succeed, so a file is only checked once its session has ended. */
    char stream_path[4096], name[64];
    snprintf(name, sizeof name, "stream_c%02d.json", id);
    stress_out_path(stream_path, sizeof stream_path, "stress_sessions", name);
    int my_stream_started = 0;
    for (int call = 0; call < CALLS_PER_CONTROLLER; call++) {
        uint32_t pick = next_rand(&seed) % 16;
        strobe_config c;
        strobe_config_init(&c);
        c.buffer_bytes = 1 << 20;
        c.chunk_bytes = 16 << 10;
        c.prefault_bytes = 0;
        int rc;
        switch (pick) {
        case 0:
        case 1:
        case 2:
            rc = strobe_start(&c);
            expect_code("strobe_start", rc, STROBE_EBUSY, STROBE_EBUSY);
            if (rc == 0) atomic_fetch_add(&starts_ok, 1);
            break;
        case 3:
            c.thread_mode = STROBE_THREADS_OPT_IN;
            rc = strobe_start(&c);
            expect_code("strobe_start (opt-in)", rc, STROBE_EBUSY, STROBE_EBUSY);
            if (rc == 0) atomic_fetch_add(&starts_ok, 1);
            break;
        case 4:
            c.ring_bytes = 256 << 10;
            rc = strobe_start(&c);
            expect_code("strobe_start (flight)", rc, STROBE_EBUSY, STROBE_EBUSY);
            if (rc == 0) atomic_fetch_add(&starts_ok, 1);
            break;
        case 5:
            c.stream_path = stream_path;
            rc = strobe_start(&c);
            expect_code("strobe_start (stream)", rc, STROBE_EBUSY, STROBE_EBUSY);
            if (rc == 0) {
                atomic_fetch_add(&starts_ok, 1);
                my_stream_started = 1;
            }
            break;
        case 6:
            rc = strobe_prepare(&c);
            expect_code("strobe_prepare", rc, STROBE_EBUSY, STROBE_EBUSY);
            if (rc == 0) atomic_fetch_add(&starts_ok, 1);
            break;
        case 7:
            rc = strobe_start_prepared();
            expect_code("strobe_start_prepared", rc, STROBE_ENOSESSION, STROBE_EBUSY);
            break;
        case 8:
        case 9:
        case 10:
        case 11: {
            strobe_result *r = NULL;
            rc = strobe_stop(&r);
            expect_code("strobe_stop", rc, STROBE_ENOSESSION, STROBE_ENOSESSION);
            if (rc == 0) {
                atomic_fetch_add(&stops_ok, 1);
                if (r == NULL) {
                    fprintf(stderr, "strobe_stop returned 0 and no result\n");
                    atomic_fetch_add(&bad_codes, 1);
                    break;
                }
                check_stop_result(r, id, call);
                if (call % 3 == 0) save_and_check(r, id, call);
                strobe_result_free(r);
                /* A stop by anyone ends this controller's streaming session, if it had one. */
                if (my_stream_started && !strobe_is_running()) {
                    /* Not certain it was ours that just stopped: the file is complete either way
                     * once its session stopped, and a session of ours that still runs has not
                     * written its closing text yet, so look only when nothing runs. */
                    check_stream_file(stream_path);
                    my_stream_started = 0;
                }
            } else if (r != NULL) {
                fprintf(stderr, "strobe_stop failed and set a result\n");
                atomic_fetch_add(&bad_codes, 1);
            }
            break;
        }
        case 12: {
            char path[4096];
            snprintf(name, sizeof name, "flight_c%02d.json", id);
            rc = strobe_flight_dump(stress_out_path(path, sizeof path, "stress_sessions", name));
            expect_code("strobe_flight_dump", rc, STROBE_ENOSESSION, STROBE_ENOSESSION);
            if (rc == 0) check_stream_file(path);
            break;
        }
        case 13:
            rc = strobe_add_metadata_json("stress_key", "{\"controller\": 1}");
            expect_code("strobe_add_metadata_json", rc, STROBE_ENOSESSION, STROBE_ENOSESSION);
            break;
        case 14:
            rc = strobe_enable_in_child_thread();
            expect_code("strobe_enable_in_child_thread", rc, STROBE_ENOSESSION, STROBE_ENOSESSION);
            break;
        default:
            (void)strobe_is_running();
            (void)strobe_is_enabled_in_main_thread();
            break;
        }
        /* Now and then give the recorders a moment inside a session. */
        if ((next_rand(&seed) & 3) == 0) {
            struct timespec ts = {0, (long)(next_rand(&seed) % 200000)};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static void *recorder_body(void *arg) {
    int id = (int)(intptr_t)arg;
    unsigned i = 0;
    char name[32];
    snprintf(name, sizeof name, "recorder %d", id);
    /* Named once, before any session: renaming while stop collects is test_stress_rename's. */
    strobe_set_thread_name(name);
    while (atomic_load_explicit(&recording_on, memory_order_relaxed)) {
        STROBE_SCOPE("rec scope");
        strobe_range_begin("rec dyn");
        if ((++i & 31) == 0) strobe_push_correlation_id(i);
        strobe_instant("rec instant");
        strobe_counter("rec counter", (double)i);
        if ((i & 31) == 0) strobe_pop_correlation_id();
        strobe_range_end();
        if ((i & 1023) == 0) sched_yield();
    }
    return NULL;
}

int main(void) {
    stress_watchdog();
    pthread_t rec[RECORDERS], ctl[CONTROLLERS];
    for (int i = 0; i < RECORDERS; i++)
        REQUIRE(pthread_create(&rec[i], NULL, recorder_body, (void *)(intptr_t)i) == 0);
    stress_phase("controllers racing");
    for (int i = 0; i < CONTROLLERS; i++)
        REQUIRE(pthread_create(&ctl[i], NULL, controller_body, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < CONTROLLERS; i++)
        pthread_join(ctl[i], NULL);
    stress_phase("final stop");
    /* The session the controllers left running, if any, is stopped here. */
    strobe_result *r = NULL;
    int rc = strobe_stop(&r);
    expect_code("final strobe_stop", rc, STROBE_ENOSESSION, STROBE_ENOSESSION);
    if (rc == 0) {
        atomic_fetch_add(&stops_ok, 1);
        check_stop_result(r, -1, 0);
        strobe_result_free(r);
    }
    atomic_store(&recording_on, 0);
    for (int i = 0; i < RECORDERS; i++)
        pthread_join(rec[i], NULL);
    CHECK_EQ(strobe_is_running(), 0);
    CHECK_EQ(atomic_load(&bad_codes), 0);
    CHECK_EQ(atomic_load(&starts_ok), atomic_load(&stops_ok));
    /* The race must have happened: many sessions, each checked, some saved. */
    CHECK_INT(atomic_load(&starts_ok), >=, 20);
    CHECK_EQ(atomic_load(&results_checked), atomic_load(&stops_ok));
    CHECK_INT(atomic_load(&traces_saved), >=, 3);
    printf("sessions: %ld started and stopped, %ld traces saved, %ld stream files checked\n",
           atomic_load(&starts_ok), atomic_load(&traces_saved), atomic_load(&streams_checked));
    return check_result();
}
