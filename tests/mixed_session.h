/* mixed_session.h: a small recorded session with every kind of CPU event: two named threads
 * (one name with a quote), nested scopes, correlation ids, a run-time name that needs escaping,
 * instants, counters, top-level metadata, and a range left open at stop. The writers' round-trip
 * tests (JSON in test_roundtrip.c, Perfetto in test_perfetto.c) record it and read it back. */
#ifndef STROBE_TEST_MIXED_SESSION_H
#define STROBE_TEST_MIXED_SESSION_H

#include <pthread.h>

#include "result_check.h"

static void *mixed_worker(void *arg) {
    strobe_set_thread_name((const char *)arg);
    for (int i = 0; i < 50; i++) {
        STROBE_SCOPE("step");
        strobe_push_correlation_id((uint64_t)(i + 1));
        STROBE_OP("aten::mm");
        strobe_pop_correlation_id();
        strobe_range_begin("quote \" backslash \\ tab\t nl\n euro \xe2\x82\xac ctl \x01");
        STROBE_INSTANT("tick");
        strobe_range_end();
        STROBE_COUNTER("progress", i * 0.5);
    }
    return NULL;
}

/* Records the session; its threads are named "PREFIX worker a" and "PREFIX worker \"b\"". */
static strobe_result *record_mixed_session(const char *trace_name, const char *trace_id,
                                           const char *prefix) {
    strobe_config c;
    strobe_config_init(&c);
    c.trace_name = trace_name;
    c.trace_id = trace_id;
    start_or_die(&c);
    REQUIRE(strobe_add_metadata_json("user meta", "{\"a\": [1, 2, {\"b\": null}]}") == 0);
    REQUIRE(strobe_add_metadata_json("answer", "42") == 0);
    char name_a[64], name_b[64];
    snprintf(name_a, sizeof name_a, "%s worker a", prefix);
    snprintf(name_b, sizeof name_b, "%s worker \"b\"", prefix);
    pthread_t a, b;
    pthread_create(&a, NULL, mixed_worker, name_a);
    pthread_create(&b, NULL, mixed_worker, name_b);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    strobe_range_begin("left open");
    return stop_or_die();
}

#endif
