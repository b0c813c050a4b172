/* test_session.c: the session API on one thread: start/stop errors, config checks, nesting and
 * the event tree, categories and scopes, instants, counters, correlation ids, unfinished ranges,
 * unmatched ends, names with arbitrary bytes, metadata, trace id, post-processing, scope
 * filtering, and many sessions in one process. */
#include <time.h>

#include "result_check.h"
#include "use_all_macros.h"

static strobe_config default_cfg(void) {
    strobe_config c;
    strobe_config_init(&c);
    return c;
}

static void test_errors(void) {
    strobe_result *r = NULL;
    CHECK_EQ(strobe_stop(&r), STROBE_ENOSESSION);
    CHECK_EQ(strobe_stop(NULL), STROBE_EINVAL);
    CHECK_EQ(strobe_start(NULL), STROBE_EINVAL);
    CHECK_EQ(strobe_add_metadata_json("k", "1"), STROBE_ENOSESSION);
    CHECK_EQ(strobe_enable_in_child_thread(), STROBE_ENOSESSION);
    CHECK_EQ(strobe_is_running(), 0);

    strobe_config c = default_cfg();
    c.chunk_bytes = 100;
    CHECK_EQ(strobe_start(&c), STROBE_EINVAL);
    c = default_cfg();
    c.buffer_bytes = 1000;
    CHECK_EQ(strobe_start(&c), STROBE_EINVAL);
    c = default_cfg();
    c.activities = STROBE_ACTIVITY_CUDA; /* no CPU: nothing this build can trace */
    CHECK_EQ(strobe_start(&c), STROBE_ENOTSUP);
    c = default_cfg();
    c.activities = 1u << 20;
    CHECK_EQ(strobe_start(&c), STROBE_EINVAL);
    c = default_cfg();
    c.thread_mode = (strobe_thread_mode)7;
    CHECK_EQ(strobe_start(&c), STROBE_EINVAL);

    c = default_cfg();
    REQUIRE(strobe_start(&c) == 0);
    CHECK_EQ(strobe_is_running(), 1);
    CHECK_EQ(strobe_start(&c), STROBE_EBUSY);
    r = stop_or_die();
    strobe_result_free(r);
    r = (strobe_result *)&c; /* a failed stop sets *out to NULL */
    CHECK_EQ(strobe_stop(&r), STROBE_ENOSESSION);
    CHECK(r == NULL);
    strobe_result_free(NULL);
}

static void leaf(void) {
    STROBE_FUNC();
}

static void test_nesting(void) {
    strobe_config c = default_cfg();
    c.trace_id = "test-trace-id";
    c.trace_name = "nesting";
    start_or_die(&c);
    {
        STROBE_SCOPE("outer");
        for (int i = 0; i < 3; i++) {
            STROBE_OP("aten::mm");
            leaf();
        }
        strobe_range_begin_scope("dyn", STROBE_RECORD_SCOPE_BACKWARD_FUNCTION);
        STROBE_INSTANT("marker");
        strobe_instant("dyn marker");
        strobe_range_end();
        STROBE_COUNTER("queue depth", 3.0);
        strobe_counter("dyn counter", -1.5);
    }
    strobe_result *r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);
    CHECK_STR(strobe_result_trace_id(r), "test-trace-id");
    CHECK_EQ(strobe_result_thread_count(r), 1);
    CHECK_EQ(strobe_result_event_count(r), 1 + 3 + 3 + 1 + 2 + 2);
    const strobe_event *ev = strobe_result_events(r);
    long outer = find_named(r, "outer");
    REQUIRE(outer == 0);
    CHECK_STR(ev[0].category, "user_annotation");
    CHECK_EQ(ev[0].kind, STROBE_EVENT_RANGE);
    CHECK_EQ(ev[0].scope, STROBE_RECORD_SCOPE_USER_SCOPE);
    CHECK_EQ(ev[0].device_type, STROBE_DEVICE_CPU);
    CHECK_EQ(ev[0].device_index, -1);
    CHECK_INT(ev[0].start_ns, >=, strobe_result_trace_start_ns(r));
    CHECK_INT(ev[0].end_ns, <=, strobe_result_trace_end_ns(r));
    /* Children of outer, in order: mm, mm, mm, dyn, then counters are outside the tree. */
    const char *want[] = {"aten::mm", "aten::mm", "aten::mm", "dyn"};
    size_t k = 0;
    for (uint32_t i = ev[0].first_child; i != STROBE_NO_EVENT; i = ev[i].next_sibling, k++) {
        REQUIRE(k < 4);
        CHECK_STR(ev[i].name, want[k]);
        CHECK_EQ(ev[i].depth, 1);
        if (k < 3) {
            CHECK_STR(ev[i].category, "cpu_op");
            REQUIRE(ev[i].first_child != STROBE_NO_EVENT);
            CHECK_STR(ev[ev[i].first_child].name, "leaf");
            CHECK_EQ(ev[ev[i].first_child].depth, 2);
        }
    }
    CHECK_EQ(k, 4);
    long dyn = find_named(r, "dyn");
    REQUIRE(dyn > 0);
    CHECK_EQ(ev[dyn].scope, STROBE_RECORD_SCOPE_BACKWARD_FUNCTION);
    CHECK_STR(ev[dyn].category, "cpu_op");
    long m = find_named(r, "marker");
    REQUIRE(m > 0);
    CHECK_EQ(ev[m].kind, STROBE_EVENT_INSTANT);
    CHECK_STR(ev[m].category, "cpu_instant_event");
    CHECK_EQ(ev[m].parent, (uint32_t)dyn);
    CHECK_EQ(ev[m].end_ns, ev[m].start_ns);
    long q = find_named(r, "queue depth");
    REQUIRE(q > 0);
    CHECK_EQ(ev[q].kind, STROBE_EVENT_COUNTER);
    CHECK(ev[q].value == 3.0);
    CHECK_EQ(ev[q].parent, STROBE_NO_EVENT);
    long dc = find_named(r, "dyn counter");
    REQUIRE(dc > 0);
    CHECK(ev[dc].value == -1.5);
    const strobe_stats *st = strobe_result_stats(r);
    CHECK_EQ(st->dropped_events, 0);
    CHECK_EQ(st->unmatched_ends, 0);
    CHECK_EQ(st->unfinished_ranges, 0);
    CHECK_EQ(st->threads, 1);
    CHECK_INT(st->buffer_bytes_used, >, 0);
    strobe_result_free(r);
}

static void test_repairs(void) {
    strobe_config c = default_cfg();
    start_or_die(&c);
    strobe_range_end(); /* no begin: counted */
    strobe_range_end();
    strobe_range_begin("open at stop");
    strobe_range_begin("inner open");
    strobe_result *r = stop_or_die();
    strobe_range_end(); /* after stop: nothing happens */
    strobe_range_end();
    CHECK_EQ(check_wellformed(r), 0);
    const strobe_stats *st = strobe_result_stats(r);
    CHECK_EQ(st->unmatched_ends, 2);
    CHECK_EQ(st->unfinished_ranges, 2);
    const strobe_event *ev = strobe_result_events(r);
    REQUIRE(strobe_result_event_count(r) == 2);
    CHECK(ev[0].flags & STROBE_EVENT_UNFINISHED);
    CHECK(ev[1].flags & STROBE_EVENT_UNFINISHED);
    CHECK_EQ(ev[0].end_ns, strobe_result_trace_end_ns(r));
    /* Nested ranges closed together end 1 ns apart, so that viewers keep their nesting. */
    CHECK_EQ(ev[1].end_ns, strobe_result_trace_end_ns(r) - 1);
    strobe_result_free(r);

    /* A scope opened before the session and closed inside it records nothing. */
    {
        STROBE_SCOPE("before");
        start_or_die(&c);
    }
    r = stop_or_die();
    CHECK_EQ(strobe_result_event_count(r), 0);
    CHECK_EQ(strobe_result_stats(r)->unmatched_ends, 0);
    strobe_result_free(r);

    /* A scope opened in one session and closed in the next records only in the first. */
    start_or_die(&c);
    strobe_result *r1;
    {
        STROBE_SCOPE("spans two sessions");
        r1 = stop_or_die();
        start_or_die(&c);
    }
    strobe_result *r2 = stop_or_die();
    CHECK_EQ(strobe_result_event_count(r1), 1);
    CHECK_EQ(strobe_result_stats(r1)->unfinished_ranges, 1);
    CHECK_EQ(strobe_result_event_count(r2), 0);
    CHECK_EQ(strobe_result_stats(r2)->unmatched_ends, 0);
    strobe_result_free(r1);
    strobe_result_free(r2);
}

static void test_names(void) {
    strobe_config c = default_cfg();
    start_or_die(&c);
    char all[256];
    for (int i = 0; i < 255; i++)
        all[i] = (char)(i + 1);
    all[255] = '\0';
    strobe_range_begin(all);
    strobe_range_end();
    strobe_range_begin(NULL);
    strobe_range_end();
    char *longname = malloc(5000);
    memset(longname, 'x', 4999);
    longname[4999] = '\0';
    strobe_range_begin(longname);
    strobe_range_end();
    strobe_range_begin("");
    strobe_range_end();
    strobe_result *r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);
    REQUIRE(strobe_result_event_count(r) == 4);
    const strobe_event *ev = strobe_result_events(r);
    CHECK_STR(ev[0].name, all);
    CHECK_STR(ev[1].name, "(null)");
    CHECK_EQ(strlen(ev[2].name), 1024);
    CHECK_STR(ev[3].name, "");
    CHECK_EQ(strobe_result_stats(r)->truncated_names, 1);
    free(longname);
    strobe_result_free(r);
}

static void test_correlation(void) {
    strobe_config c = default_cfg();
    start_or_die(&c);
    STROBE_RANGE_BEGIN("none");
    STROBE_RANGE_END();
    strobe_push_correlation_id(42);
    STROBE_RANGE_BEGIN("ext");
    strobe_push_user_correlation_id(7);
    strobe_range_begin("both");
    STROBE_INSTANT("inst both");
    strobe_range_end();
    strobe_pop_user_correlation_id();
    STROBE_RANGE_END();
    strobe_pop_correlation_id();
    strobe_pop_correlation_id(); /* extra pop: ignored */
    STROBE_RANGE_BEGIN("after");
    STROBE_RANGE_END();
    /* Deeper than 64: counted, and the 64th stays current. */
    for (uint64_t i = 1; i <= 70; i++)
        strobe_push_correlation_id(i);
    STROBE_RANGE_BEGIN("deep");
    STROBE_RANGE_END();
    for (int i = 0; i < 70; i++)
        strobe_pop_correlation_id();
    STROBE_RANGE_BEGIN("popped");
    STROBE_RANGE_END();
    strobe_result *r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);
    const strobe_event *ev = strobe_result_events(r);
    long i;
    REQUIRE((i = find_named(r, "none")) >= 0);
    CHECK_EQ(ev[i].correlation_id, 0);
    REQUIRE((i = find_named(r, "ext")) >= 0);
    CHECK_EQ(ev[i].correlation_id, 42);
    CHECK_EQ(ev[i].user_correlation_id, 0);
    REQUIRE((i = find_named(r, "both")) >= 0);
    CHECK_EQ(ev[i].correlation_id, 42);
    CHECK_EQ(ev[i].user_correlation_id, 7);
    REQUIRE((i = find_named(r, "inst both")) >= 0);
    CHECK_EQ(ev[i].user_correlation_id, 7);
    REQUIRE((i = find_named(r, "after")) >= 0);
    CHECK_EQ(ev[i].correlation_id, 0);
    REQUIRE((i = find_named(r, "deep")) >= 0);
    CHECK_EQ(ev[i].correlation_id, 64);
    REQUIRE((i = find_named(r, "popped")) >= 0);
    CHECK_EQ(ev[i].correlation_id, 0);
    CHECK_EQ(strobe_result_stats(r)->correlation_overflow, 6);
    strobe_result_free(r);
}

static void test_metadata(void) {
    strobe_config c = default_cfg();
    start_or_die(&c);
    CHECK_EQ(strobe_add_metadata_json("model", "\"resnet\""), 0);
    CHECK_EQ(strobe_add_metadata_json("batch", "{\"size\": 32, \"dims\": [1, 2]}"), 0);
    CHECK_EQ(strobe_add_metadata_json("model", "\"vit\""), 0); /* replaces */
    CHECK_EQ(strobe_add_metadata_json("bad", "{"), STROBE_EJSON);
    CHECK_EQ(strobe_add_metadata_json("bad", "1 2"), STROBE_EJSON);
    CHECK_EQ(strobe_add_metadata_json("bad", "\"\xff\""), STROBE_EJSON);
    /* Every top-level key strobe writes itself is refused: a user value would replace strobe's
     * (Kineto's header keys, and the keys strobe's own metadata and the CLI read). */
    static const char *const reserved[] = {
        "schemaVersion",       "deviceProperties", "traceEvents",     "displayTimeUnit",
        "baseTimeNanoseconds", "traceName",        "trace_id",        "strobe",
        "strobe_perf_events",  "strobe_stream",    "strobe_gpu_clock"};
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
        int rc = strobe_add_metadata_json(reserved[i], "1");
        if (rc != STROBE_EINVAL) fprintf(stderr, "reserved key %s accepted\n", reserved[i]);
        CHECK_EQ(rc, STROBE_EINVAL);
    }
    CHECK_EQ(strobe_add_metadata_json("strobe_user_key", "1"), 0);
    CHECK_EQ(strobe_add_metadata_json("", "1"), STROBE_EINVAL);
    CHECK_EQ(strobe_add_metadata_json(NULL, "1"), STROBE_EINVAL);
    CHECK_EQ(strobe_add_metadata_json("k", NULL), STROBE_EINVAL);
    strobe_result *r = stop_or_die();
    REQUIRE(strobe_result_metadata_count(r) == 3);
    const char *k, *v;
    CHECK_EQ(strobe_result_metadata(r, 0, &k, &v), 0);
    CHECK_STR(k, "model");
    CHECK_STR(v, "\"vit\"");
    CHECK_EQ(strobe_result_metadata(r, 1, &k, &v), 0);
    CHECK_STR(k, "batch");
    CHECK_EQ(strobe_result_metadata(r, 3, &k, &v), STROBE_ERANGE);
    /* A generated trace id is 32 hex digits. */
    CHECK_EQ(strlen(strobe_result_trace_id(r)), 32);
    strobe_result_free(r);
}

static void post(strobe_result *r, void *ctx) {
    int *calls = ctx;
    (*calls)++;
    for (size_t i = 0; i < strobe_result_event_count(r); i++) {
        CHECK_EQ(strobe_event_set_arg(r, i, "enriched", "true"), 0);
        CHECK_EQ(strobe_event_set_arg(r, i, "enriched", "{\"v\": 2}"), 0); /* replaces */
        CHECK_EQ(strobe_event_set_arg(r, i, "second", "[1]"), 0);
    }
    CHECK_EQ(strobe_event_set_arg(r, 0, "bad", "nope"), STROBE_EJSON);
    CHECK_EQ(strobe_event_set_arg(r, 99, "k", "1"), STROBE_ERANGE);
    CHECK_EQ(strobe_event_set_name(r, 0, "renamed"), 0);
    CHECK_EQ(strobe_event_set_name(r, 99, "x"), STROBE_ERANGE);
}

static void test_postprocess(void) {
    int calls = 0;
    strobe_config c = default_cfg();
    c.postprocess = post;
    c.postprocess_ctx = &calls;
    start_or_die(&c);
    STROBE_RANGE_BEGIN("a");
    STROBE_RANGE_END();
    strobe_result *r = stop_or_die();
    CHECK_EQ(calls, 1);
    const strobe_event *ev = strobe_result_events(r);
    CHECK_STR(ev[0].name, "renamed");
    REQUIRE(ev[0].args != NULL);
    CHECK_STR(ev[0].args->key, "enriched");
    CHECK_STR(ev[0].args->json, "{\"v\": 2}");
    REQUIRE(ev[0].args->next != NULL);
    CHECK_STR(ev[0].args->next->key, "second");
    CHECK(ev[0].args->next->next == NULL);
    strobe_result_free(r);
}

static void test_warnings(void) {
    strobe_config c = default_cfg();
    c.activities = STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA | STROBE_ACTIVITY_XPU;
    start_or_die(&c);
    strobe_result *r = stop_or_die();
    /* Here CUDA is not traced either (no GPU, or no CUPTI): one warning each, in any order.
     * (Where a GPU is traced, there is only the XPU one.) */
    size_t n = strobe_result_warning_count(r), cuda = 0, xpu = 0;
    for (size_t i = 0; i < n; i++) {
        cuda += strstr(strobe_result_warning(r, i), "CUDA activity requested but not") != NULL;
        xpu += strstr(strobe_result_warning(r, i), "XPU activity requested but not") != NULL;
    }
    CHECK_EQ(xpu, 1);
    CHECK(cuda <= 1);
    CHECK_EQ(n, cuda + xpu);
    CHECK(strobe_result_warning(r, n) == NULL);
    strobe_result_free(r);
}

static void filtered_ops(void) {
    strobe_range_begin_scope("kept fn", STROBE_RECORD_SCOPE_FUNCTION);
    strobe_range_begin_scope("dropped user", STROBE_RECORD_SCOPE_USER_SCOPE);
    strobe_range_begin_scope("kept inner fn", STROBE_RECORD_SCOPE_FUNCTION);
    strobe_range_end();
    strobe_range_end();
    {
        STROBE_SCOPE("dropped scope");
        STROBE_OP("kept op");
        STROBE_SCOPE_NAME("dropped dyn scope", STROBE_RECORD_SCOPE_USER_SCOPE);
    }
    strobe_range_end();
}

static void test_scope_filter(void) {
    strobe_config c = default_cfg();
    c.scopes = STROBE_SCOPE_BIT(STROBE_RECORD_SCOPE_FUNCTION);
    start_or_die(&c);
    filtered_ops();
    strobe_result *r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);
    CHECK_EQ(strobe_result_event_count(r), 3);
    CHECK_EQ(count_named(r, "kept fn"), 1);
    CHECK_EQ(count_named(r, "kept inner fn"), 1);
    CHECK_EQ(count_named(r, "kept op"), 1);
    const strobe_event *ev = strobe_result_events(r);
    long inner = find_named(r, "kept inner fn");
    REQUIRE(inner > 0);
    /* The dropped user range's end must not have closed "kept fn" early. */
    CHECK_STR(ev[ev[inner].parent].name, "kept fn");
    CHECK_EQ(strobe_result_stats(r)->unmatched_ends, 0);
    CHECK_EQ(strobe_result_stats(r)->unfinished_ranges, 0);
    strobe_result_free(r);

    /* Deeper than the filter stack: ranges are kept and counted. */
    start_or_die(&c);
    for (int i = 0; i < 300; i++)
        strobe_range_begin_scope("deep user", STROBE_RECORD_SCOPE_USER_SCOPE);
    for (int i = 0; i < 300; i++)
        strobe_range_end();
    r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);
    CHECK_EQ(strobe_result_event_count(r), 300 - 256);
    CHECK_EQ(strobe_result_stats(r)->scope_depth_overflow, 300 - 256);
    CHECK_EQ(strobe_result_stats(r)->unmatched_ends, 0);
    strobe_result_free(r);
}

static void test_many_sessions(void) {
    /* Start/stop many times: ASan's leak checker and the arena accounting catch leaks. */
    strobe_config c = default_cfg();
    c.buffer_bytes = 1 << 20;
    c.prefault_bytes = 0;
    for (int i = 0; i < 300; i++) {
        start_or_die(&c);
        STROBE_RANGE_BEGIN("iteration");
        strobe_range_begin("dyn");
        strobe_range_end();
        STROBE_RANGE_END();
        strobe_result *r = stop_or_die();
        if (strobe_result_event_count(r) != 2) {
            CHECK_EQ(strobe_result_event_count(r), 2);
            break;
        }
        strobe_result_free(r);
    }
}

static void test_monotonic_times(void) {
    /* Ranges measured against sleeps: the durations are on the right scale. */
    strobe_config c = default_cfg();
    start_or_die(&c);
    STROBE_RANGE_BEGIN("sleep 20ms");
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
    STROBE_RANGE_END();
    strobe_result *r = stop_or_die();
    REQUIRE(strobe_result_event_count(r) == 1);
    int64_t d = strobe_event_dur_ns(&strobe_result_events(r)[0]);
    CHECK_INT(d, >=, 20000000);
    CHECK_INT(d, <, 200000000);
    strobe_result_free(r);
}

/* Every macro from C, with several scopes on one source line. */
static void test_all_macros(void) {
    strobe_config c;
    strobe_config_init(&c);
    start_or_die(&c);
    use_all_macros(2);
    strobe_result *r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);
    CHECK_EQ(count_named(r, "loop"), 2);
    const char *same[] = {"same line a", "same line b", "same line c", "same line d"};
    long idx[4];
    for (int k = 0; k < 4; k++) {
        CHECK_EQ(count_named(r, same[k]), 1);
        idx[k] = find_named(r, same[k]);
    }
    const strobe_event *ev = strobe_result_events(r);
    for (int k = 1; k < 4; k++)
        if (idx[k] >= 0 && idx[k - 1] >= 0) CHECK_EQ(ev[idx[k]].parent, (uint32_t)idx[k - 1]);
    CHECK_EQ(strobe_result_stats(r)->unmatched_ends, 0);
    CHECK_EQ(strobe_result_stats(r)->unfinished_ranges, 0);
    strobe_result_free(r);
}

/* Many static call sites, each named once in the result however often it recurs: enough that the
 * site map grows several times and the cache in front of it keeps missing (sites 64 slots apart
 * share a cache line, so alternating between them always goes to the map). */
static void test_many_sites(void) {
    enum { NSITES = 3000 };
    static strobe_site sites[NSITES];
    static char names[NSITES][16];
    for (int i = 0; i < NSITES; i++) {
        snprintf(names[i], sizeof names[i], "site%d", i);
        sites[i] = (strobe_site){names[i], __FILE__, __LINE__, STROBE_RECORD_SCOPE_USER_SCOPE};
    }
    strobe_config c = default_cfg();
    start_or_die(&c);
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < NSITES; i++) {
            strobe_range_begin_site(&sites[i]);
            strobe_range_end();
        }
    strobe_result *r = stop_or_die();
    REQUIRE(strobe_result_event_count(r) == 2 * NSITES);
    const strobe_event *ev = strobe_result_events(r);
    int wrong = 0;
    for (int k = 0; k < 2 * NSITES; k++)
        wrong += strcmp(ev[k].name, names[k % NSITES]) != 0;
    CHECK_EQ(wrong, 0);
    /* The same site's two events share one copy of its name. */
    CHECK(ev[7].name == ev[NSITES + 7].name);
    CHECK(ev[7].name != names[7]);
    strobe_result_free(r);
}

int main(void) {
    test_all_macros();
    test_errors();
    test_nesting();
    test_repairs();
    test_names();
    test_many_sites();
    test_correlation();
    test_metadata();
    test_postprocess();
    test_warnings();
    test_scope_filter();
    test_many_sessions();
    test_monotonic_times();
    return check_result();
}
