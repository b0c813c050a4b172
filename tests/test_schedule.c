/* test_schedule.c: steps, the schedule's state machine, sessions driven by steps (warm-up,
 * recording, on-trace-ready), ProfilerStep#N ranges, strobe_prepare, and the trace-file handler.
 * Saves its traces under tests/out/schedule/ for validate_traces. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "core/hooks.h"
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
    /* Steps are closed by the next step whatever thread calls it: nothing is left open. */
    CHECK_EQ(c.unfinished[0], 0);
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

static uint64_t written_of(strobe_trace_dir_handler *h) {
    uint64_t w = 0;
    strobe_trace_dir_handler_counts(h, &w, NULL);
    return w;
}
static uint64_t failed_of(strobe_trace_dir_handler *h) {
    uint64_t f = 0;
    strobe_trace_dir_handler_counts(h, NULL, &f);
    return f;
}

static void test_handler(void) {
    strobe_trace_dir_handler *h = NULL;
    CHECK_EQ(strobe_trace_dir_handler_create(&h, "", NULL, 0), STROBE_EINVAL);
    CHECK_EQ(strobe_trace_dir_handler_create(&h, OUT, "a/b", 0), STROBE_EINVAL);
    CHECK_EQ(strobe_trace_dir_handler_create(NULL, OUT, NULL, 0), STROBE_EINVAL);
    CHECK(h == NULL);
    strobe_trace_dir_handler_destroy(NULL);
    CHECK_EQ(strobe_trace_dir_handler_create(&h, OUT "/tb/run1", "worker0", 0), 0);
    char last[4400];
    CHECK_EQ(strobe_trace_dir_handler_last_path(h, last, sizeof last), 0);
    CHECK_STR(last, "");
    strobe_schedule s = make_schedule(0, 0, 0, 2, 2);
    CHECK_EQ(strobe_schedule_begin(NULL, &s, strobe_trace_dir_handler_fn, h), 0);
    for (int i = 0; i < 5; i++) {
        work(i);
        strobe_step();
    }
    CHECK_EQ(strobe_schedule_end(), 0);
    CHECK_EQ(written_of(h), 2);
    CHECK_EQ(failed_of(h), 0);
    /* worker0.<epoch ns>.pt.trace.json in the created folder. */
    CHECK_EQ(strobe_trace_dir_handler_last_path(h, last, sizeof last), 0);
    char small[8];
    CHECK_EQ(strobe_trace_dir_handler_last_path(h, small, sizeof small), STROBE_ERANGE);
    CHECK_STR(small, "");
    const char *base = strrchr(last, '/');
    REQUIRE(base != NULL);
    unsigned long long ns = 0;
    char tail[64] = "";
    CHECK_EQ(sscanf(base + 1, "worker0.%llu.%63s", &ns, tail), 2);
    CHECK_STR(tail, "pt.trace.json");
    CHECK(ns > 1600000000000000000ull);
    struct stat sb;
    CHECK_EQ(stat(last, &sb), 0);
    CHECK(sb.st_size > 100);
    strobe_trace_dir_handler_destroy(h);

    strobe_schedule once = make_schedule(0, 0, 0, 2, 1);
    CHECK_EQ(strobe_trace_dir_handler_create(&h, OUT "/tb/gz", NULL, 1), 0);
    CHECK_EQ(strobe_schedule_begin(NULL, &once, strobe_trace_dir_handler_fn, h), 0);
    for (int i = 0; i < 3; i++)
        strobe_step();
    CHECK_EQ(strobe_schedule_end(), 0);
    CHECK_EQ(written_of(h), 1);
    CHECK_EQ(strobe_trace_dir_handler_last_path(h, last, sizeof last), 0);
    /* The default worker is {hostname}_{pid}. */
    char want[64];
    snprintf(want, sizeof want, "_%ld.", (long)getpid());
    CHECK(strstr(last, want) != NULL);
    size_t len = strlen(last);
    CHECK(len > 17 && strcmp(last + len - 17, ".pt.trace.json.gz") == 0);
    FILE *f = fopen(last, "rb");
    REQUIRE(f != NULL);
    unsigned char magic[2] = {0, 0};
    CHECK_EQ(fread(magic, 1, 2, f), 2);
    fclose(f);
    CHECK(magic[0] == 0x1f && magic[1] == 0x8b);
    strobe_trace_dir_handler_destroy(h);

    /* A folder that cannot be made: counted, logged, no crash. */
    CHECK_EQ(strobe_trace_dir_handler_create(&h, "/proc/strobe-no/such", "w", 0), 0);
    CHECK_EQ(strobe_schedule_begin(NULL, &once, strobe_trace_dir_handler_fn, h), 0);
    strobe_step();
    strobe_step();
    CHECK_EQ(strobe_schedule_end(), 0);
    CHECK_EQ(written_of(h), 0);
    CHECK_EQ(failed_of(h), 1);
    strobe_trace_dir_handler_destroy(h);
}

/* The ProfilerStep#N ranges of a result, in order: their number, start and end. */
typedef struct step_ranges {
    int n;
    unsigned long long num[16];
    int64_t start[16], end[16];
} step_ranges;

static step_ranges steps_of(const strobe_result *r) {
    step_ranges sr;
    memset(&sr, 0, sizeof sr);
    const strobe_event *ev = strobe_result_events(r);
    for (size_t i = 0; i < strobe_result_event_count(r) && sr.n < 16; i++) {
        if (strncmp(ev[i].name, "ProfilerStep#", 13) != 0) continue;
        sr.num[sr.n] = strtoull(ev[i].name + 13, NULL, 10);
        sr.start[sr.n] = ev[i].start_ns;
        sr.end[sr.n++] = ev[i].end_ns;
    }
    return sr;
}

/* Each step range runs from its strobe_step() to the next one, whatever the thread has open:
 * here the step is called inside a user scope. */
static void check_steps_in_scope(const strobe_result *r, int want, unsigned long long first) {
    CHECK_EQ(check_wellformed(r), 0);
    step_ranges sr = steps_of(r);
    CHECK_EQ(sr.n, want);
    for (int k = 0; k < sr.n; k++) {
        CHECK_EQ(sr.num[k], first + (unsigned long long)k);
        /* Every step holds one 2 ms sleep: neither microseconds long nor the whole trace. */
        int64_t dur = sr.end[k] - sr.start[k];
        if (k + 1 < sr.n) {
            CHECK_EQ(sr.end[k], sr.start[k + 1]);
            CHECK(dur >= 1500000 && dur < 200000000);
            if (dur < 1500000)
                fprintf(stderr, "ProfilerStep#%llu lasts %lld ns\n", sr.num[k], (long long)dur);
        }
    }
    CHECK_EQ(count_named(r, "iter"), 4);
    CHECK_EQ(strobe_result_stats(r)->unmatched_ends, 0);
    CHECK_EQ(strobe_result_stats(r)->unfinished_ranges, 0);
    /* The user's scopes keep their own extent: each holds its sleep. */
    const strobe_event *ev = strobe_result_events(r);
    for (size_t i = 0; i < strobe_result_event_count(r); i++)
        if (strcmp(ev[i].name, "iter") == 0) CHECK(ev[i].end_ns - ev[i].start_ns >= 1500000);
}

static void iter_then_step(void) {
    STROBE_SCOPE("iter");
    usleep(2000);
    strobe_step();
}

static void check_sched_fn(strobe_result *r, void *ctx) {
    ++*(int *)ctx;
    check_steps_in_scope(r, 5, 0);
}

/* Steps called where nothing is open (the usual training loop) go on the calling thread's track,
 * as torch's record_function puts them: each iteration's ranges nest inside their step, so the
 * step's self time is what its children leave, and a step inside a scope stays apart. */
static void test_step_on_thread(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    start_or_die(&cfg);
    strobe_step();
    for (int i = 0; i < 3; i++) {
        work(i);
        usleep(1000);
        strobe_step();
    }
    /* The step called inside "iter" ends the open step in it and begins the next in it: both
     * cross "iter", so both go apart. */
    iter_then_step();
    strobe_result *r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);
    const strobe_event *ev = strobe_result_events(r);
    size_t n = strobe_result_event_count(r);
    int on_thread = 0, apart = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(ev[i].name, "ProfilerStep#", 13) != 0) continue;
        const strobe_thread_info *th = &strobe_result_threads(r)[ev[i].thread_index];
        if (strcmp(th->name, "ProfilerStep") == 0) {
            apart++;
            continue;
        }
        on_thread++;
        CHECK_EQ(ev[i].depth, 0);
        CHECK_EQ(ev[i].tid, (int64_t)syscall(SYS_gettid));
        /* Each holds one "work" range. */
        CHECK(ev[i].first_child != STROBE_NO_EVENT);
        if (ev[i].first_child != STROBE_NO_EVENT)
            CHECK_EQ(strncmp(ev[ev[i].first_child].name, "work ", 5), 0);
    }
    CHECK_EQ(on_thread, 3);
    CHECK_EQ(apart, 2);
    for (size_t i = 0; i < n; i++)
        if (strncmp(ev[i].name, "work ", 5) == 0) {
            CHECK(ev[i].parent != STROBE_NO_EVENT);
            if (ev[i].parent != STROBE_NO_EVENT)
                CHECK_EQ(strncmp(ev[ev[i].parent].name, "ProfilerStep#", 13), 0);
        }
    CHECK_EQ(strobe_result_stats(r)->unfinished_ranges, 0);
    strobe_result_free(r);
}

/* Steps called inside a scope that encloses the whole loop (the Python functions around a
 * training loop, with with_stack) nest inside that scope, on the calling thread's track: the
 * same ranges are open at each step's begin and end, and none ends in between. */
static void test_step_in_outer_scope(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    start_or_die(&cfg);
    {
        STROBE_SCOPE("loop");
        strobe_step();
        for (int i = 0; i < 3; i++) {
            work(i);
            strobe_step();
        }
        strobe__session_step_end(); /* as profile.stop() ends the open step */
    }
    strobe_result *r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);
    const strobe_event *ev = strobe_result_events(r);
    size_t n = strobe_result_event_count(r), loop = STROBE_NO_EVENT;
    for (size_t i = 0; i < n; i++)
        if (strcmp(ev[i].name, "loop") == 0) loop = i;
    REQUIRE(loop != STROBE_NO_EVENT);
    int steps = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(ev[i].name, "ProfilerStep#", 13) != 0) continue;
        CHECK_EQ(ev[i].parent, (uint32_t)loop);
        CHECK_EQ(ev[i].depth, 1);
        if (++steps == 4) continue; /* begun after the last work, ended by step_end: empty */
        CHECK(ev[i].first_child != STROBE_NO_EVENT);
        if (ev[i].first_child != STROBE_NO_EVENT)
            CHECK_EQ(strncmp(ev[ev[i].first_child].name, "work ", 5), 0);
    }
    /* Three steps hold work; the fourth begins after the last and ends at step_end. */
    CHECK_EQ(steps, 4);
    strobe_result_free(r);
}

static void test_step_in_scope(void) {
    /* A plain session: every strobe_step() records its ProfilerStep#N range (as torch's
     * prof.step()): the first opens one, each next closes it and opens the following, stop closes
     * the last. */
    strobe_config cfg;
    strobe_config_init(&cfg);
    start_or_die(&cfg);
    unsigned long long first = strobe_step_count() + 1;
    for (int i = 0; i < 4; i++)
        iter_then_step();
    strobe_result *r = stop_or_die();
    check_steps_in_scope(r, 4, first);
    strobe_result_free(r);

    /* Under a schedule: the schedule's steps 0 .. 4 recorded, #4 closed by the schedule's end. */
    int calls = 0;
    strobe_schedule s = make_schedule(0, 0, 0, 5, 1);
    CHECK_EQ(strobe_schedule_begin(NULL, &s, check_sched_fn, &calls), 0);
    for (int i = 0; i < 4; i++)
        iter_then_step();
    CHECK_EQ(strobe_schedule_end(), 0);
    CHECK_EQ(calls, 1);
}

/* The handler called from several threads at once (strobe_step() may come from any thread, and
 * each cycle's callback runs on the thread that ended it). */
#define HT_THREADS 4
#define HT_EACH 25
static strobe_result *ht_results[HT_THREADS][HT_EACH];
static strobe_trace_dir_handler *ht_h;

static void *ht_body(void *arg) {
    strobe_result **mine = arg;
    for (int i = 0; i < HT_EACH; i++)
        strobe_trace_dir_handler_fn(mine[i], ht_h);
    return NULL;
}

static size_t count_files(const char *dir) {
    DIR *d = opendir(dir);
    if (d == NULL) return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_handler_threads(void) {
    strobe_config c;
    strobe_config_init(&c);
    for (int t = 0; t < HT_THREADS; t++) {
        for (int i = 0; i < HT_EACH; i++) {
            start_or_die(&c);
            work(i);
            ht_results[t][i] = stop_or_die();
        }
    }
    CHECK_EQ(strobe_trace_dir_handler_create(&ht_h, OUT "/tb/threads", "w", 0), 0);
    pthread_t th[HT_THREADS];
    for (int t = 0; t < HT_THREADS; t++)
        pthread_create(&th[t], NULL, ht_body, ht_results[t]);
    for (int t = 0; t < HT_THREADS; t++)
        pthread_join(th[t], NULL);
    CHECK_EQ(written_of(ht_h), HT_THREADS * HT_EACH);
    CHECK_EQ(failed_of(ht_h), 0);
    /* Every trace has a file of its own. */
    CHECK_EQ(count_files(OUT "/tb/threads"), HT_THREADS * HT_EACH);
    char last[4400];
    CHECK_EQ(strobe_trace_dir_handler_last_path(ht_h, last, sizeof last), 0);
    struct stat sb;
    CHECK_EQ(stat(last, &sb), 0);
    strobe_trace_dir_handler_destroy(ht_h);
    for (int t = 0; t < HT_THREADS; t++)
        for (int i = 0; i < HT_EACH; i++)
            strobe_result_free(ht_results[t][i]);
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

/* The schedule keeps copies of the config's strings: a stream_path the caller reuses after
 * strobe_schedule_begin() must not redirect the scheduled sessions. */
static void test_config_strings_copied(void) {
    char stream[256], name[64];
    snprintf(stream, sizeof stream, OUT "/copied_stream.json");
    snprintf(name, sizeof name, "copied name");
    unlink(stream);
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.stream_path = stream;
    cfg.trace_name = name;
    /* One step of waiting: the session starts at the first strobe_step(), after the change. */
    strobe_schedule s = make_schedule(0, 1, 0, 1, 1);
    collected c;
    memset(&c, 0, sizeof c);
    REQUIRE(strobe_schedule_begin(&cfg, &s, collect_fn, &c) == 0);
    /* The caller's buffers change: a path that cannot be created, a different name. */
    snprintf(stream, sizeof stream, OUT "/no/such/dir/stream.json");
    snprintf(name, sizeof name, "changed");
    strobe_step();
    work(7);
    strobe_step();
    CHECK_EQ(strobe_schedule_end(), 0);
    CHECK_EQ(c.n, 1);
    struct stat sb;
    CHECK_EQ(stat(OUT "/copied_stream.json", &sb), 0);
    CHECK(sb.st_size > 0);
}

int main(void) {
    mkdir(STROBE_TEST_OUT_DIR, 0777);
    mkdir(OUT, 0777);
    clear_dir(OUT "/tb/run1");
    clear_dir(OUT "/tb/gz");
    clear_dir(OUT "/tb/threads");
    test_actions();
    test_driven();
    test_other_thread();
    test_errors();
    test_prepare();
    test_handler();
    test_handler_threads();
    test_step_in_scope();
    test_step_on_thread();
    test_step_in_outer_scope();
    test_config_strings_copied();
    uint64_t before = strobe_step_count();
    strobe_step();
    CHECK_EQ(strobe_step_count(), before + 1);
    return check_result();
}
