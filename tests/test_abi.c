/* test_abi.c: the version header against the library, and programs built against other layouts of
 * the config structs than the library's (README, "ABI and versions").
 *
 * An "old" program is imitated by a struct of its own that has strobe_config's first fields only,
 * with its struct_size; its init is what strobe_config_init() compiles to in such a program. A
 * canary after the old struct catches a library that writes (defaults) or reads (start) past the
 * old size: read, its 0xa5 bytes would be a perf event list, a stream path and a flight recorder
 * ring, and start would fail. A "new" program is a struct with a field past the library's layout.
 *
 * Uses only the installed headers: tests/install_consumer.sh builds it against an installed
 * strobe too. Links the shared library. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include <strobe/strobe.h>

#define CANARY 0xa5

/* strobe_config up to stack_depth: a program built before perf events, CUDA, streaming and the
 * flight recorder were added. Same types and order as strobe_config's first members. */
typedef struct old_config {
    size_t struct_size;
    uint32_t activities;
    uint32_t scopes;
    strobe_thread_mode thread_mode;
    size_t buffer_bytes;
    size_t chunk_bytes;
    size_t prefault_bytes;
    const char *trace_id;
    const char *trace_name;
    strobe_postprocess_fn postprocess;
    void *postprocess_ctx;
    int record_shapes;
    int profile_memory;
    int with_stack;
    int with_flops;
    int with_modules;
    int stack_depth;
} old_config;

/* The old struct with a canary after it, as it could sit in an old program's memory. */
typedef struct old_with_canary {
    old_config c;
    unsigned char canary[sizeof(strobe_config) + 64];
} old_with_canary;

/* A newer program's config: strobe_config and one field this library does not have. */
typedef struct new_config {
    strobe_config c;
    uint64_t future_field;
} new_config;

static int canary_intact(const old_with_canary *w) {
    for (size_t i = 0; i < sizeof w->canary; i++)
        if (w->canary[i] != CANARY) {
            fprintf(stderr, "canary byte %zu is 0x%02x\n", i, w->canary[i]);
            return 0;
        }
    return 1;
}

static void test_version(void) {
    CHECK_STR(strobe_version(), STROBE_VERSION_STRING);
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", STROBE_VERSION_MAJOR, STROBE_VERSION_MINOR,
             STROBE_VERSION_PATCH);
    CHECK_STR(STROBE_VERSION_STRING, want);
    CHECK_EQ(STROBE_VERSION_NUMBER,
             STROBE_VERSION_MAJOR * 10000 + STROBE_VERSION_MINOR * 100 + STROBE_VERSION_PATCH);
}

static void test_init_sets_size(void) {
    strobe_config c;
    memset(&c, 0xff, sizeof c);
    strobe_config_init(&c);
    CHECK_EQ(c.struct_size, sizeof(strobe_config));
    CHECK_EQ(c.activities, STROBE_ACTIVITY_CPU);
    CHECK_EQ(c.scopes, STROBE_SCOPES_ALL);
    CHECK_EQ(c.buffer_bytes, (size_t)512 << 20);
    CHECK_EQ(c.chunk_bytes, (size_t)64 << 10);
    CHECK_EQ(c.stack_depth, 16);
    CHECK(c.stream_path == NULL && c.flight_path == NULL && c.perf_events == NULL);
    CHECK_EQ(c.ring_bytes, 0);

    strobe_schedule s;
    memset(&s, 0xff, sizeof s);
    strobe_schedule_init(&s);
    CHECK_EQ(s.struct_size, sizeof(strobe_schedule));
    CHECK_EQ(s.active, 0);
    strobe_edge_config e;
    memset(&e, 0xff, sizeof e);
    strobe_edge_config_init(&e);
    CHECK_EQ(e.struct_size, sizeof(strobe_edge_config));
    CHECK(e.name == NULL && e.buffer_bytes == 0);
    strobe_ondemand_options o;
    memset(&o, 0xff, sizeof o);
    strobe_ondemand_options_init(&o);
    CHECK_EQ(o.struct_size, sizeof(strobe_ondemand_options));
    CHECK(o.output_dirs == NULL && o.socket_dir == NULL);
}

static int postprocess_calls;
static void count_postprocess(strobe_result *r, void *ctx) {
    (void)r;
    postprocess_calls += *(int *)ctx;
}

/* An old program's init: what strobe_config_init() compiled to with its headers. */
static void old_init(old_config *c) {
    memset(c, 0, sizeof *c);
    strobe__config_defaults((strobe_config *)(void *)c, sizeof *c);
}

static void test_old_layout(void) {
    CHECK(sizeof(old_config) < sizeof(strobe_config));
    CHECK(sizeof(old_config) >= STROBE_CONFIG_MIN_SIZE);
    CHECK_EQ(offsetof(old_config, stack_depth), offsetof(strobe_config, stack_depth));

    /* The defaults routine fills the old struct and stops at its end. */
    old_with_canary w;
    memset(&w, CANARY, sizeof w);
    old_init(&w.c);
    CHECK(canary_intact(&w));
    CHECK_EQ(w.c.struct_size, sizeof(old_config));
    CHECK_EQ(w.c.activities, STROBE_ACTIVITY_CPU);
    CHECK_EQ(w.c.thread_mode, STROBE_THREADS_ALL);
    CHECK_EQ(w.c.buffer_bytes, (size_t)512 << 20);
    CHECK_EQ(w.c.chunk_bytes, (size_t)64 << 10);
    CHECK_EQ(w.c.prefault_bytes, (size_t)32 << 20);
    CHECK(w.c.trace_id == NULL && w.c.postprocess == NULL);
    CHECK_EQ(w.c.stack_depth, 16);

    /* A session from the old struct: its fields are used, the ones it lacks take defaults (the
     * canary, read as strobe_config's later fields, would fail the start). */
    int one = 1;
    w.c.buffer_bytes = 8u << 20;
    w.c.prefault_bytes = 0;
    w.c.trace_id = "old-layout-trace";
    w.c.postprocess = count_postprocess;
    w.c.postprocess_ctx = &one;
    postprocess_calls = 0;
    int rc = strobe_start((const strobe_config *)(const void *)&w.c);
    CHECK_EQ(rc, 0);
    if (rc == 0) {
        STROBE_RANGE_BEGIN("old program's range");
        STROBE_RANGE_END();
        strobe_result *r = NULL;
        CHECK_EQ(strobe_stop(&r), 0);
        CHECK(r != NULL);
        if (r) {
            CHECK_EQ(strobe_result_event_count(r), 1);
            if (strobe_result_event_count(r) == 1)
                CHECK_STR(strobe_result_events(r)[0].name, "old program's range");
            CHECK_STR(strobe_result_trace_id(r), "old-layout-trace");
            /* Not a stream: stream_path took its default, NULL. */
            for (size_t i = 0; i < strobe_result_metadata_count(r); i++) {
                const char *key = NULL, *value = NULL;
                CHECK_EQ(strobe_result_metadata(r, i, &key, &value), 0);
                if (key) CHECK(strcmp(key, "strobe_stream") != 0);
            }
            CHECK_EQ(strobe_result_stats(r)->dropped_events, 0);
            strobe_result_free(r);
        }
        CHECK_EQ(postprocess_calls, 1);
    }
    CHECK(canary_intact(&w));
    CHECK_EQ(w.c.struct_size, sizeof(old_config)); /* the caller's struct is not written */

    /* Prepared sessions and schedules take old configs too. */
    CHECK_EQ(strobe_prepare((const strobe_config *)(const void *)&w.c), 0);
    strobe_result *r = NULL;
    CHECK_EQ(strobe_stop(&r), 0);
    strobe_result_free(r);
}

static void test_sizes_refused(void) {
    strobe_config c;
    strobe_config_init(&c);
    c.struct_size = 0; /* a config that never saw strobe_config_init() */
    CHECK_EQ(strobe_start(&c), STROBE_EINVAL);
    CHECK_EQ(strobe_prepare(&c), STROBE_EINVAL);
    c.struct_size = STROBE_CONFIG_MIN_SIZE - 1;
    CHECK_EQ(strobe_start(&c), STROBE_EINVAL);
    c.struct_size = (size_t)1 << 20; /* garbage: reading that far could leave the object */
    CHECK_EQ(strobe_start(&c), STROBE_EINVAL);
    CHECK(!strobe_is_running());
    CHECK_EQ(strobe_start(NULL), STROBE_EINVAL);

    /* The smallest layout is enough: everything past it takes its default. */
    old_with_canary w;
    memset(&w, CANARY, sizeof w);
    old_init(&w.c);
    w.c.struct_size = STROBE_CONFIG_MIN_SIZE;
    w.c.buffer_bytes = 8u << 20;
    w.c.prefault_bytes = 0;
    /* Past the size, so not read: read, they would fail the start (stack_depth out of range). */
    w.c.with_stack = 1;
    w.c.stack_depth = 0;
    CHECK_EQ(strobe_start((const strobe_config *)(const void *)&w.c), 0);
    strobe_result *r = NULL;
    CHECK_EQ(strobe_stop(&r), 0);
    strobe_result_free(r);

    /* The defaults routine never writes a size it cannot hold, nor past the size it is given. */
    _Alignas(strobe_config) unsigned char tiny[sizeof(size_t) + 8];
    memset(tiny, CANARY, sizeof tiny);
    strobe__config_defaults((strobe_config *)(void *)tiny, sizeof(size_t) - 1);
    for (size_t i = 0; i < sizeof tiny; i++)
        CHECK_EQ(tiny[i], CANARY);
    strobe__config_defaults((strobe_config *)(void *)tiny, sizeof(size_t) + 4);
    size_t got;
    memcpy(&got, tiny, sizeof got);
    CHECK_EQ(got, sizeof(size_t) + 4);
    for (size_t i = sizeof(size_t) + 4; i < sizeof tiny; i++)
        CHECK_EQ(tiny[i], CANARY);
}

static void test_newer_program(void) {
    /* A newer program's init: its memset covers the whole struct, the library fills its own
     * layout and records the program's size. */
    new_config n;
    memset(&n, 0, sizeof n);
    strobe__config_defaults(&n.c, sizeof n);
    CHECK_EQ(n.c.struct_size, sizeof n);
    CHECK_EQ(n.c.buffer_bytes, (size_t)512 << 20);
    CHECK_EQ(n.future_field, 0);
    n.c.buffer_bytes = 8u << 20;
    n.c.prefault_bytes = 0;
    /* Unset, the field this library lacks asks for nothing: the session starts. */
    CHECK_EQ(strobe_start(&n.c), 0);
    strobe_result *r = NULL;
    CHECK_EQ(strobe_stop(&r), 0);
    strobe_result_free(r);
    /* Set, it asks for something this library cannot do: refused, not ignored. */
    n.future_field = 1;
    CHECK_EQ(strobe_start(&n.c), STROBE_ENOTSUP);
    CHECK(!strobe_is_running());
}

static void on_ready(strobe_result *r, void *ctx) {
    (void)r;
    (void)ctx;
}

static void test_other_structs(void) {
    /* strobe_schedule */
    strobe_schedule s;
    strobe_schedule_init(&s);
    s.active = 1;
    CHECK_EQ(strobe_schedule_action(&s, 0), STROBE_STEP_RECORD_AND_SAVE);
    s.struct_size = 0;
    CHECK_EQ(strobe_schedule_action(&s, 0), STROBE_STEP_NONE);
    CHECK_EQ(strobe_schedule_begin(NULL, &s, on_ready, NULL), STROBE_EINVAL);
    s.struct_size = STROBE_SCHEDULE_MIN_SIZE - 1;
    CHECK_EQ(strobe_schedule_begin(NULL, &s, on_ready, NULL), STROBE_EINVAL);
    struct {
        strobe_schedule s;
        uint64_t future_field;
    } ns;
    memset(&ns, 0, sizeof ns);
    ns.s.struct_size = sizeof ns;
    ns.s.active = 1;
    ns.s.wait = 1; /* step 0 waits: begin only installs the schedule */
    CHECK_EQ(strobe_schedule_action(&ns.s, 1), STROBE_STEP_RECORD_AND_SAVE);
    ns.future_field = 7;
    CHECK_EQ(strobe_schedule_action(&ns.s, 1), STROBE_STEP_NONE);
    CHECK_EQ(strobe_schedule_begin(NULL, &ns.s, on_ready, NULL), STROBE_ENOTSUP);
    /* A config from an old program is taken by the schedule too. */
    old_with_canary w;
    memset(&w, CANARY, sizeof w);
    old_init(&w.c);
    w.c.buffer_bytes = 8u << 20;
    w.c.prefault_bytes = 0;
    ns.future_field = 0;
    CHECK_EQ(
        strobe_schedule_begin((const strobe_config *)(const void *)&w.c, &ns.s, on_ready, NULL), 0);
    CHECK_EQ(strobe_schedule_end(), 0);
    CHECK(canary_intact(&w));

    /* strobe_edge_config */
    strobe_edge_config e;
    strobe_edge_config_init(&e);
    e.name = "model";
    e.output_path = "/nonexistent/never-written.json";
    e.struct_size = 0;
    strobe_edge_profiler *p = NULL;
    CHECK_EQ(strobe_edge_profiler_begin(&e, &p), STROBE_EINVAL);
    CHECK(p == NULL && !strobe_is_running());
    e.struct_size = STROBE_EDGE_CONFIG_MIN_SIZE - 1;
    CHECK_EQ(strobe_edge_profiler_begin(&e, &p), STROBE_EINVAL);
    struct {
        strobe_edge_config e;
        uint64_t future_field;
    } ne;
    memset(&ne, 0, sizeof ne);
    ne.e = e;
    ne.e.struct_size = sizeof ne;
    ne.future_field = 1;
    CHECK_EQ(strobe_edge_profiler_begin(&ne.e, &p), STROBE_ENOTSUP);
    CHECK(p == NULL && !strobe_is_running());

    /* strobe_ondemand_options: refused before anything starts. */
    strobe_ondemand_options o;
    strobe_ondemand_options_init(&o);
    o.struct_size = 0;
    CHECK_EQ(strobe_ondemand_start(&o), STROBE_EINVAL);
    struct {
        strobe_ondemand_options o;
        uint64_t future_field;
    } no;
    memset(&no, 0, sizeof no);
    no.o.struct_size = sizeof no;
    no.future_field = 1;
    CHECK_EQ(strobe_ondemand_start(&no.o), STROBE_ENOTSUP);
    CHECK_EQ(strobe_ondemand_stop(), STROBE_ENOSESSION); /* nothing was started */
}

int main(void) {
    test_version();
    test_init_sets_size();
    test_old_layout();
    test_sizes_refused();
    test_newer_program();
    test_other_structs();
    if (check__failures == 0) printf("test_abi: ok (library %s)\n", strobe_version());
    return check_result();
}
