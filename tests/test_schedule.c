/* test_schedule.c: steps, the schedule's state machine, sessions driven by steps (warm-up,
 * recording, on-trace-ready), ProfilerStep#N ranges, strobe_prepare, and the trace-file handler.
 * Saves its traces under tests/out/schedule/ for validate_traces. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "result_check.h"
#include "strobe/strobe.h"

#define OUT STROBE_TEST_OUT_DIR "/schedule"

/* A schedule through its init (a brace initializer would fill struct_size), fields in the
 * struct's order. */
static strobe_schedule make_schedule(uint32_t skip_first, uint32_t wait, uint32_t warmup,
                                     uint32_t active, uint32_t repeat) {
    strobe_schedule s;
    strobe_schedule_init(&s);
    s.skip_first = skip_first;
    s.wait = wait;
    s.warmup = warmup;
    s.active = active;
    s.repeat = repeat;
    return s;
}

static void test_actions(void) {
    /* skip 2, then cycles of wait 1, warm-up 1, active 2, twice. */
    strobe_schedule s = make_schedule(2, 1, 1, 2, 2);
    static const char want[] = "NNNWRSNWRSNNNNNN";
    for (uint64_t i = 0; i < sizeof want - 1; i++) {
        strobe_step_action a = strobe_schedule_action(&s, i);
        char got = "NWRS"[a];
        if (got != want[i])
            fprintf(stderr, "step %llu: %c, want %c\n", (unsigned long long)i, got, want[i]);
        CHECK_EQ(got, want[i]);
    }
    strobe_schedule every = make_schedule(0, 0, 0, 1, 0); /* each step records and saves, forever */
    for (uint64_t i = 0; i < 1000; i += 97)
        CHECK_EQ(strobe_schedule_action(&every, i), STROBE_STEP_RECORD_AND_SAVE);
    strobe_schedule none = make_schedule(0, 1, 1, 0, 0);
    CHECK_EQ(strobe_schedule_action(&none, 5), STROBE_STEP_NONE);
    CHECK_EQ(strobe_schedule_action(NULL, 5), STROBE_STEP_NONE);
    strobe_schedule forever = make_schedule(0, 2, 0, 1, 0);
    CHECK_EQ(strobe_schedule_action(&forever, 3000002), STROBE_STEP_RECORD_AND_SAVE);
    CHECK_EQ(strobe_schedule_action(&forever, 3000001), STROBE_STEP_NONE);
}

typedef struct collected {
    int n;
    char names[4][64][32]; /* per result: names of its ranges */
    int counts[4];
    uint64_t unfinished[4];
} collected;

static void collect_fn(strobe_result *r, void *ctx) {
    collected *c = ctx;
    CHECK_EQ(check_wellformed(r), 0);
    if (c->n < 4) {
        const strobe_event *ev = strobe_result_events(r);
        size_t n = strobe_result_event_count(r);
        for (size_t i = 0; i < n && c->counts[c->n] < 64; i++)
            snprintf(c->names[c->n][c->counts[c->n]++], 32, "%s", ev[i].name);
        c->unfinished[c->n] = strobe_result_stats(r)->unfinished_ranges;
        char path[256];
        snprintf(path, sizeof path, OUT "/cycle%d.json", c->n);
        CHECK_EQ(strobe_result_save(r, path), 0);
    }
    c->n++;
}

static int has(const collected *c, int k, const char *name) {
    for (int i = 0; i < c->counts[k]; i++)
        if (strcmp(c->names[k][i], name) == 0) return 1;
    return 0;
}

static void work(int i) {
    char name[32];
    snprintf(name, sizeof name, "work %d", i);
    strobe_range_begin(name);
    strobe_range_end();
}

static void test_driven(void) {
    collected c;
    memset(&c, 0, sizeof c);
    strobe_schedule s = make_schedule(0, 1, 1, 2, 2); /* N W R S  N W R S  then nothing */
    CHECK_EQ(strobe_schedule_begin(NULL, &s, collect_fn, &c), 0);
    CHECK_EQ(strobe_schedule_begin(NULL, &s, collect_fn, &c), STROBE_EBUSY);
    for (int i = 0; i < 12; i++) {
        work(i);
        strobe_step();
        CHECK_EQ(strobe_is_running(), (i >= 0 && i <= 2) || (i >= 4 && i <= 6));
    }
    CHECK_EQ(c.n, 2);
    /* Cycle 1 recorded steps 2 and 3; cycle 2 steps 6 and 7. */
    CHECK(has(&c, 0, "work 2") && has(&c, 0, "work 3"));
    CHECK(!has(&c, 0, "work 1") && !has(&c, 0, "work 4"));
    CHECK(has(&c, 0, "ProfilerStep#2") && has(&c, 0, "ProfilerStep#3"));
    CHECK(!has(&c, 0, "ProfilerStep#1"));
    CHECK(has(&c, 1, "work 6") && has(&c, 1, "work 7") && !has(&c, 1, "work 5"));
    CHECK(has(&c, 1, "ProfilerStep#6") && has(&c, 1, "ProfilerStep#7"));
    CHECK_EQ(c.unfinished[0], 0);
    CHECK_EQ(strobe_schedule_end(), 0);
    CHECK_EQ(strobe_schedule_end(), STROBE_ENOSESSION);
    CHECK_EQ(c.n, 2); /* nothing was recording */

    /* Ending in the middle of a cycle hands over what was recorded. */
    memset(&c, 0, sizeof c);
    strobe_schedule rec = make_schedule(0, 0, 0, 5, 1);
    CHECK_EQ(strobe_schedule_begin(NULL, &rec, collect_fn, &c), 0);
    CHECK(strobe_is_running());
    work(100);
    strobe_step();
    work(101);
    CHECK_EQ(strobe_schedule_end(), 0);
    CHECK_EQ(c.n, 1);
    CHECK(has(&c, 0, "work 100") && has(&c, 0, "work 101"));
    CHECK(has(&c, 0, "ProfilerStep#0") && has(&c, 0, "ProfilerStep#1"));
    CHECK(!strobe_is_running());
}

static void *stepper(void *arg) {
    (void)arg;
    strobe_step();
    return NULL;
}

static void test_other_thread(void) {
    collected c;
    memset(&c, 0, sizeof c);
    strobe_schedule s = make_schedule(0, 0, 0, 3, 1);
    CHECK_EQ(strobe_schedule_begin(NULL, &s, collect_fn, &c), 0);
    strobe_step(); /* ProfilerStep#1 opens on this thread */
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, stepper, NULL) == 0);
    pthread_join(th, NULL); /* step 2 from another thread: #1 cannot be closed there */
    strobe_step();          /* step 3 ends the cycle */
    CHECK_EQ(c.n, 1);
    CHECK(has(&c, 0, "ProfilerStep#1") && has(&c, 0, "ProfilerStep#2"));
    /* #1 (this thread) and #2 (the other thread, which left it open) could not be closed by the
     * step that followed them: both are closed at stop, flagged and counted, not hidden. */
    CHECK_EQ(c.unfinished[0], 2);
    CHECK_EQ(strobe_schedule_end(), 0);
}

static void test_errors(void) {
    strobe_schedule s = make_schedule(0, 0, 0, 1, 0), zero = make_schedule(0, 1, 1, 0, 0);
    CHECK_EQ(strobe_schedule_begin(NULL, &s, NULL, NULL), STROBE_EINVAL);
    CHECK_EQ(strobe_schedule_begin(NULL, NULL, collect_fn, NULL), STROBE_EINVAL);
    CHECK_EQ(strobe_schedule_begin(NULL, &zero, collect_fn, NULL), STROBE_EINVAL);
    strobe_config cfg;
    strobe_config_init(&cfg);
    REQUIRE(strobe_start(&cfg) == 0);
    CHECK_EQ(strobe_schedule_begin(NULL, &s, collect_fn, NULL), STROBE_EBUSY);
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    strobe_result_free(r);
    /* A bad config is reported when the first cycle starts: at once here. */
    cfg.chunk_bytes = 3;
    CHECK_EQ(strobe_schedule_begin(&cfg, &s, collect_fn, NULL), STROBE_EINVAL);
    CHECK(!strobe_is_running());
    uint64_t ready = 0, failures = 0;
    strobe_schedule_counts(&ready, &failures);
    CHECK(ready >= 3 && failures >= 1);
}

static void test_prepare(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    CHECK_EQ(strobe_start_prepared(), STROBE_ENOSESSION);
    REQUIRE(strobe_prepare(&cfg) == 0);
    CHECK_EQ(strobe_prepare(&cfg), STROBE_EBUSY);
    work(1); /* not recorded: the window is not open */
    CHECK_EQ(strobe_start_prepared(), 0);
    CHECK_EQ(strobe_start_prepared(), STROBE_EBUSY);
    work(2);
    strobe_result *r = stop_or_die();
    CHECK_EQ(count_named(r, "work 1"), 0);
    CHECK_EQ(count_named(r, "work 2"), 1);
    strobe_result_free(r);
    /* A prepared session stopped before it recorded gives an empty result. */
    REQUIRE(strobe_prepare(&cfg) == 0);
    work(3);
    r = stop_or_die();
    CHECK_EQ(count_named(r, "work 3"), 0);
    CHECK(strobe_result_trace_end_ns(r) >= strobe_result_trace_start_ns(r));
    strobe_result_free(r);
}

static void test_handler(void) {
    strobe_trace_dir_handler h;
    CHECK_EQ(strobe_trace_dir_handler_init(&h, "", NULL, 0), STROBE_EINVAL);
    CHECK_EQ(strobe_trace_dir_handler_init(&h, OUT, "a/b", 0), STROBE_EINVAL);
    CHECK_EQ(strobe_trace_dir_handler_init(&h, OUT "/tb/run1", "worker0", 0), 0);
    strobe_schedule s = make_schedule(0, 0, 0, 2, 2);
    CHECK_EQ(strobe_schedule_begin(NULL, &s, strobe_trace_dir_handler_fn, &h), 0);
    for (int i = 0; i < 5; i++) {
        work(i);
        strobe_step();
    }
    CHECK_EQ(strobe_schedule_end(), 0);
    CHECK_EQ(h.written, 2);
    CHECK_EQ(h.failed, 0);
    /* worker0.<epoch ns>.pt.trace.json in the created folder. */
    const char *base = strrchr(h.last_path, '/');
    REQUIRE(base != NULL);
    unsigned long long ns = 0;
    char tail[64] = "";
    CHECK_EQ(sscanf(base + 1, "worker0.%llu.%63s", &ns, tail), 2);
    CHECK_STR(tail, "pt.trace.json");
    CHECK(ns > 1600000000000000000ull);
    struct stat sb;
    CHECK_EQ(stat(h.last_path, &sb), 0);
    CHECK(sb.st_size > 100);

    strobe_schedule once = make_schedule(0, 0, 0, 2, 1);
    CHECK_EQ(strobe_trace_dir_handler_init(&h, OUT "/tb/gz", NULL, 1), 0);
    char want[64];
    snprintf(want, sizeof want, "_%ld", (long)getpid());
    CHECK(strstr(h.worker, want) != NULL);
    CHECK_EQ(strobe_schedule_begin(NULL, &once, strobe_trace_dir_handler_fn, &h), 0);
    for (int i = 0; i < 3; i++)
        strobe_step();
    CHECK_EQ(strobe_schedule_end(), 0);
    CHECK_EQ(h.written, 1);
    size_t len = strlen(h.last_path);
    CHECK(len > 3 && strcmp(h.last_path + len - 17, ".pt.trace.json.gz") == 0);
    FILE *f = fopen(h.last_path, "rb");
    REQUIRE(f != NULL);
    unsigned char magic[2] = {0, 0};
    CHECK_EQ(fread(magic, 1, 2, f), 2);
    fclose(f);
    CHECK(magic[0] == 0x1f && magic[1] == 0x8b);

    /* A folder that cannot be made: counted, logged, no crash. */
    CHECK_EQ(strobe_trace_dir_handler_init(&h, "/proc/strobe-no/such", "w", 0), 0);
    CHECK_EQ(strobe_schedule_begin(NULL, &once, strobe_trace_dir_handler_fn, &h), 0);
    strobe_step();
    strobe_step();
    CHECK_EQ(strobe_schedule_end(), 0);
    CHECK_EQ(h.written, 0);
    CHECK_EQ(h.failed, 1);
}

/* Removes the files of an earlier run from `dir` (the handler's names are unique per run). */
static void clear_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d == NULL) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

int main(void) {
    mkdir(STROBE_TEST_OUT_DIR, 0777);
    mkdir(OUT, 0777);
    clear_dir(OUT "/tb/run1");
    clear_dir(OUT "/tb/gz");
    test_actions();
    test_driven();
    test_other_thread();
    test_errors();
    test_prepare();
    test_handler();
    uint64_t before = strobe_step_count();
    strobe_step();
    CHECK_EQ(strobe_step_count(), before + 1);
    return check_result();
}
