/* test_threads.c: many threads at once. Exact counts under concurrency, threads that exit before
 * stop, per-thread (opt-in) mode, and stop/start racing threads that never stop recording. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "result_check.h"

#define STRESS_THREADS 4
#define STRESS_ITERS 20000

static void *stress_body(void *arg) {
    char name[32];
    snprintf(name, sizeof name, "worker-%d", (int)(intptr_t)arg);
    strobe_set_thread_name(name);
    for (int i = 0; i < STRESS_ITERS; i++) {
        STROBE_SCOPE("iter");
        STROBE_OP("op");
        strobe_range_begin(i % 2 ? "odd" : "even");
        STROBE_INSTANT("tick");
        strobe_range_end();
    }
    return NULL;
}

static void test_stress(void) {
    strobe_config c;
    strobe_config_init(&c);
    start_or_die(&c);
    pthread_t th[STRESS_THREADS];
    for (int i = 0; i < STRESS_THREADS; i++)
        pthread_create(&th[i], NULL, stress_body, (void *)(intptr_t)i);
    for (int i = 0; i < STRESS_THREADS; i++)
        pthread_join(th[i], NULL);
    strobe_result *r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);
    CHECK_EQ(strobe_result_stats(r)->dropped_events, 0);
    CHECK_EQ(strobe_result_stats(r)->unmatched_ends, 0);
    CHECK_EQ(strobe_result_stats(r)->unfinished_ranges, 0);
    CHECK_EQ(count_named(r, "iter"), STRESS_THREADS * STRESS_ITERS);
    CHECK_EQ(count_named(r, "op"), STRESS_THREADS * STRESS_ITERS);
    CHECK_EQ(count_named(r, "odd") + count_named(r, "even"), STRESS_THREADS * STRESS_ITERS);
    CHECK_EQ(count_named(r, "tick"), STRESS_THREADS * STRESS_ITERS);
    /* All worker threads exited before stop; each is reported with its name and its events. */
    const strobe_thread_info *ti = strobe_result_threads(r);
    int workers = 0;
    for (size_t i = 0; i < strobe_result_thread_count(r); i++) {
        if (strncmp(ti[i].name, "worker-", 7) != 0) continue;
        workers++;
        CHECK_EQ(ti[i].exited, 1);
        CHECK_EQ(ti[i].event_count, 4 * STRESS_ITERS);
    }
    CHECK_EQ(workers, STRESS_THREADS);
    strobe_result_free(r);
}

static void *unattached_body(void *arg) {
    (void)arg;
    STROBE_SCOPE("child not enabled");
    return NULL;
}

static void *enabled_body(void *arg) {
    (void)arg;
    CHECK_EQ(strobe_enable_in_child_thread(), 0);
    { STROBE_SCOPE("child enabled"); }
    CHECK_EQ(strobe_disable_in_child_thread(), 0);
    { STROBE_SCOPE("child after disable"); }
    return NULL;
}

static void test_opt_in(void) {
    strobe_config c;
    strobe_config_init(&c);
    c.thread_mode = STROBE_THREADS_OPT_IN;
    CHECK_EQ(strobe_is_enabled_in_main_thread(), 0);
    start_or_die(&c);
    CHECK_EQ(strobe_is_enabled_in_main_thread(), 1);
    { STROBE_SCOPE("main"); }
    pthread_t a, b;
    pthread_create(&a, NULL, unattached_body, NULL);
    pthread_join(a, NULL);
    pthread_create(&b, NULL, enabled_body, NULL);
    pthread_join(b, NULL);
    strobe_result *r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);
    CHECK_EQ(count_named(r, "main"), 1);
    CHECK_EQ(count_named(r, "child not enabled"), 0);
    CHECK_EQ(count_named(r, "child enabled"), 1);
    CHECK_EQ(count_named(r, "child after disable"), 0);
    CHECK_EQ(strobe_result_stats(r)->unmatched_ends, 0);
    strobe_result_free(r);

    /* Global mode: disabling a thread stops it for the rest of the session. */
    strobe_config_init(&c);
    start_or_die(&c);
    pthread_create(&b, NULL, enabled_body, NULL);
    pthread_join(b, NULL);
    CHECK_EQ(strobe_disable_in_child_thread(), 0);
    CHECK_EQ(strobe_is_enabled_in_main_thread(), 0);
    { STROBE_SCOPE("main disabled"); }
    r = stop_or_die();
    CHECK_EQ(count_named(r, "child enabled"), 1);
    CHECK_EQ(count_named(r, "main disabled"), 0);
    strobe_result_free(r);
}

static atomic_int keep_running;

static void *racer_body(void *arg) {
    (void)arg;
    unsigned i = 0;
    while (atomic_load(&keep_running)) {
        STROBE_OP("racer");
        strobe_range_begin("racer dyn");
        if ((++i & 63) == 0) strobe_push_correlation_id(i);
        STROBE_COUNTER("racer counter", (double)i);
        if ((i & 63) == 0) strobe_pop_correlation_id();
        strobe_range_end();
    }
    return NULL;
}

static void test_stop_races_writers(void) {
    atomic_store(&keep_running, 1);
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, racer_body, NULL);
    strobe_config c;
    strobe_config_init(&c);
    c.buffer_bytes = 4 << 20;
    c.prefault_bytes = 0;
    for (int cycle = 0; cycle < 40; cycle++) {
        start_or_die(&c);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        strobe_result *r = stop_or_die();
        CHECK_EQ(check_wellformed(r), 0);
        /* Ranges cut by start and stop are repaired, never mis-paired: every "racer dyn" sits
         * directly under a "racer". */
        const strobe_event *ev = strobe_result_events(r);
        for (size_t i = 0; i < strobe_result_event_count(r); i++) {
            if (strcmp(ev[i].name, "racer dyn") == 0 && ev[i].parent != STROBE_NO_EVENT)
                CHECK_STR(ev[ev[i].parent].name, "racer");
        }
        strobe_result_free(r);
    }
    atomic_store(&keep_running, 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
}

/* A thread that records during the session, waits for stop to close it, and exits a little later,
 * while stop collects. */
static void *short_lived_body(void *arg) {
    for (int i = 0; i < 2000; i++) {
        STROBE_SCOPE("short");
    }
    while (strobe_is_active())
        sched_yield();
    struct timespec ts = {0, (long)(intptr_t)arg * 100000};
    nanosleep(&ts, NULL);
    return NULL;
}

/* Threads that exit while strobe_stop() collects: stop reads each thread's exited flag, which the
 * exiting thread sets (a data race under TSan unless both sides agree on how it is accessed). */
static void test_stop_races_exits(void) {
    strobe_config c;
    strobe_config_init(&c);
    c.buffer_bytes = 16 << 20;
    c.prefault_bytes = 0;
    for (int cycle = 0; cycle < 20; cycle++) {
        start_or_die(&c);
        pthread_t th[8];
        for (int i = 0; i < 8; i++)
            pthread_create(&th[i], NULL, short_lived_body, (void *)(intptr_t)(i + cycle % 3));
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        strobe_result *r = stop_or_die();
        CHECK_EQ(check_wellformed(r), 0);
        strobe_result_free(r);
        for (int i = 0; i < 8; i++)
            pthread_join(th[i], NULL);
    }
}

int main(void) {
    test_stress();
    test_stop_races_exits();
    test_opt_in();
    test_stop_races_writers();
    return check_result();
}
