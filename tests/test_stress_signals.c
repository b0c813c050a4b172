/* test_stress_signals.c: records made from signal handlers at a high rate (issue 29's adversarial
 * plan). What is async-signal-safe (README, "What strobe guarantees"): the instrumentation calls
 * (ranges, scoped ranges, instants, counters, correlation ids) on a thread that has made a strobe
 * call before; strobe_is_active(). Not async-signal-safe: strobe_start/stop/prepare and the other
 * cold-path calls, strobe_set_thread_name, and any call on a thread that never called strobe (its
 * first call allocates). So no handler here starts or stops a session: they record, while the
 * interrupted threads record, start and stop sessions, and make cold-path calls that take the
 * thread registry's lock.
 *
 * 1. Storm on a recording thread: SIGALRM from an interval timer (process-directed, every other
 *    thread blocks it) and SIGUSR1 sent by a thread as fast as it can, both to the main thread,
 *    which records 100000 range pairs. Each handler run records a scoped range with a dynamic
 *    range inside, an instant and a counter sample (five records), with the other signal blocked,
 *    so each run is recorded whole or dropped whole: the main thread's ranges are all there, and
 *    (handler runs recorded) + signal_dropped / 5 == handler runs.
 * 2. Storm on start and stop: the main thread starts, records (every other session) and stops
 *    300 sessions while the signals keep coming; every result is well formed, handler ranges
 *    nest, no end is unmatched.
 * 3. Storm on the registry lock: a thread that never records on its own calls
 *    strobe_is_enabled_in_main_thread() and strobe_enable_in_child_thread() (which take the
 *    registry lock as strobe_set_thread_name() does) in a loop while its handler records; the main
 * thread cycles sessions, so that the handler's first record of each session attaches the thread. A
 * handler that attached the thread while the thread held the registry lock would deadlock (the
 *    watchdog fails the test). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/time.h>

#include "stress_util.h"

#define LOOP_PAIRS 20000 /* per batch */
#define CYCLES 300
#define RECORDS_PER_HANDLER 5
/* Each storm goes on until this many handler runs (and at least its planned work), so that a
 * loaded machine, whose threads get fewer time slices and so take fewer signals, still tests
 * something; at the deadline (3 x 30 s, within the watchdog's 120 s) it ends with a note, and
 * only a storm with no handler run at all fails. */
#define MIN_RUNS 200
#define DEADLINE_S 30

/* Fails a storm in which no handler ran; notes one that stayed below MIN_RUNS. */
static void storm_size_note(const char *what, long runs) {
    CHECK_INT(runs, >=, 1);
    if (runs < MIN_RUNS)
        printf("note: %s: only %ld handler runs in %d s (a loaded machine)\n", what, runs,
               DEADLINE_S);
}

static int64_t now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

/* Handler runs, counted by the handler (a lock-free atomic: async-signal-safe, and read by the
 * main thread while test 3's looper takes the signals). */
static atomic_long handler_runs;
static atomic_int storming;
static pthread_t storm_target;

static void on_signal(int sig) {
    (void)sig;
    int saved = errno;
    {
        STROBE_SCOPE("sig scope");
        strobe_range_begin("sig dyn");
        strobe_range_end();
        strobe_instant("sig instant");
        strobe_counter("sig counter", 1.0);
    }
    atomic_fetch_add_explicit(&handler_runs, 1, memory_order_relaxed);
    errno = saved;
}

static void install_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGALRM);
    sigaddset(&sa.sa_mask, SIGUSR1);
    REQUIRE(sigaction(SIGALRM, &sa, NULL) == 0);
    REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
}

static void block_storm_signals(int how) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(how, &set, NULL);
}

/* Sends SIGUSR1 to storm_target as fast as it can while `storming`. */
static void *signaller_body(void *arg) {
    (void)arg;
    unsigned i = 0;
    while (atomic_load(&storming)) {
        pthread_kill(storm_target, SIGUSR1);
        if ((++i & 15) == 0) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static pthread_t storm_begin(pthread_t target, int timer) {
    storm_target = target;
    atomic_store(&storming, 1);
    /* The signaller starts with the signals blocked: else the timer's SIGALRM could land on it
     * before it blocks them itself, and run the handler on a thread of no strobe call. */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, signaller_body, NULL) == 0);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (timer) {
        struct itimerval it = {{0, 50}, {0, 50}};
        REQUIRE(setitimer(ITIMER_REAL, &it, NULL) == 0);
    }
    return th;
}

static void storm_end(pthread_t th) {
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    atomic_store(&storming, 0);
    pthread_join(th, NULL);
}

/* Prints the events flagged unfinished (what a failed unfinished_ranges check is about). */
static void print_unfinished(const strobe_result *r, int cycle) {
    const strobe_event *ev = strobe_result_events(r);
    for (size_t i = 0; i < strobe_result_event_count(r); i++)
        if (ev[i].flags & STROBE_EVENT_UNFINISHED)
            fprintf(stderr, "cycle %d: event %zu \"%s\" (depth %u) unfinished at stop\n", cycle, i,
                    ev[i].name, ev[i].depth);
}

/* Checks the handler's events in a result: "sig dyn" directly inside "sig scope". */
static void check_handler_nesting(const strobe_result *r) {
    const strobe_event *ev = strobe_result_events(r);
    for (size_t i = 0; i < strobe_result_event_count(r); i++) {
        if (strcmp(ev[i].name, "sig dyn") != 0) continue;
        if (ev[i].parent == STROBE_NO_EVENT || strcmp(ev[ev[i].parent].name, "sig scope") != 0) {
            fprintf(stderr, "event %zu \"sig dyn\" is not inside \"sig scope\"\n", i);
            CHECK(0);
            return;
        }
    }
}

static void test_storm_on_recording(void) {
    stress_phase("storm on a recording thread");
    strobe_config c;
    strobe_config_init(&c);
    c.buffer_bytes = 256 << 20; /* nothing dropped for lack of room */
    c.prefault_bytes = 0;
    start_or_die(&c);
    atomic_store(&handler_runs, 0);
    pthread_t sig = storm_begin(pthread_self(), 1);
    int64_t deadline = now_s() + DEADLINE_S;
    long batches = 0;
    do {
        for (int i = 0; i < LOOP_PAIRS; i++) {
            STROBE_OP("loop");
            strobe_range_begin("loop dyn");
            strobe_range_end();
        }
        batches++;
    } while ((batches < 5 || atomic_load(&handler_runs) < MIN_RUNS) && now_s() < deadline);
    storm_end(sig);
    /* Handler runs are counted by the handler itself; none runs from here on (a signal still
     * pending stays so until test 2 unblocks it). */
    block_storm_signals(SIG_BLOCK);
    long runs = atomic_load(&handler_runs);
    strobe_result *r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);
    const strobe_stats *st = strobe_result_stats(r);
    CHECK_EQ(st->dropped_events, 0);
    CHECK_EQ(count_named(r, "loop"), batches * LOOP_PAIRS);
    CHECK_EQ(count_named(r, "loop dyn"), batches * LOOP_PAIRS);
    size_t recorded = count_named(r, "sig scope");
    CHECK_EQ(count_named(r, "sig dyn"), recorded);
    CHECK_EQ(count_named(r, "sig instant"), recorded);
    CHECK_EQ(count_named(r, "sig counter"), recorded);
    CHECK_EQ(st->signal_dropped % RECORDS_PER_HANDLER, 0);
    CHECK_EQ(recorded + st->signal_dropped / RECORDS_PER_HANDLER, runs);
    CHECK_EQ(st->unmatched_ends, 0);
    CHECK_EQ(st->unfinished_ranges, 0);
    check_handler_nesting(r);
    /* The storm must have happened. */
    storm_size_note("storm on recording", runs);
    char path[4096];
    char *text =
        stress_save_json(r, stress_out_path(path, sizeof path, "stress_signals", "storm.json"));
    CHECK(text != NULL);
    if (text) CHECK_EQ(stress_trace_stat(text, "signal_dropped"), st->signal_dropped);
    free(text);
    printf("storm on recording: %ld handler runs, %zu recorded, %llu records dropped\n", runs,
           recorded, (unsigned long long)st->signal_dropped);
    strobe_result_free(r);
    block_storm_signals(SIG_UNBLOCK);
}

static void test_storm_on_start_stop(void) {
    stress_phase("storm on start and stop");
    strobe_config c;
    strobe_config_init(&c);
    c.buffer_bytes = 4 << 20;
    c.chunk_bytes = 16 << 10;
    c.prefault_bytes = 0;
    atomic_store(&handler_runs, 0);
    pthread_t sig = storm_begin(pthread_self(), 1);
    size_t handler_events = 0;
    int64_t deadline = now_s() + DEADLINE_S;
    int cycle;
    for (cycle = 0; (cycle < CYCLES || atomic_load(&handler_runs) < MIN_RUNS) && now_s() < deadline;
         cycle++) {
        /* start and stop are interrupted but not called from handlers: EINTR-free by design. */
        int rc = strobe_start(&c);
        if (rc != 0) {
            fprintf(stderr, "cycle %d: strobe_start: %s\n", cycle, strobe_strerror(rc));
            CHECK(0);
            break;
        }
        /* Odd cycles record nothing on this thread: a handler's record then attaches it,
         * wherever in start or stop it lands. */
        int ops = cycle % 2 ? 0 : 50;
        for (int i = 0; i < ops; i++) {
            STROBE_OP("cycle op");
        }
        strobe_result *r = NULL;
        rc = strobe_stop(&r);
        if (rc != 0) {
            fprintf(stderr, "cycle %d: strobe_stop: %s\n", cycle, strobe_strerror(rc));
            CHECK(0);
            break;
        }
        CHECK_EQ(check_wellformed(r), 0);
        CHECK_EQ(count_named(r, "cycle op"), ops);
        CHECK_EQ(strobe_result_stats(r)->unmatched_ends, 0);
        CHECK_EQ(strobe_result_stats(r)->unfinished_ranges, 0);
        if (strobe_result_stats(r)->unfinished_ranges) print_unfinished(r, cycle);
        check_handler_nesting(r);
        handler_events += count_named(r, "sig scope");
        if (cycle == 0) {
            char path[4096];
            char *text = stress_save_json(
                r, stress_out_path(path, sizeof path, "stress_signals", "cycles.json"));
            CHECK(text != NULL);
            free(text);
        }
        strobe_result_free(r);
    }
    storm_end(sig);
    storm_size_note("storm on start/stop", atomic_load(&handler_runs));
    printf("storm on start/stop: %d sessions, %ld handler runs, %zu recorded\n", cycle,
           atomic_load(&handler_runs), handler_events);
}

static atomic_int lock_loop_on;

/* A thread that never records on its own: it only makes calls that take the registry lock. Its
 * handler's first record in each session attaches it. */
static void *lock_looper_body(void *arg) {
    (void)arg;
    block_storm_signals(SIG_UNBLOCK);
    strobe_set_thread_name("lock looper"); /* its state exists before the first signal */
    unsigned i = 0;
    while (atomic_load_explicit(&lock_loop_on, memory_order_relaxed)) {
        /* strobe_set_thread_name takes the lock the same way, but renaming while stop collects
         * is test_stress_rename's subject. */
        if (++i % 2)
            (void)strobe_is_enabled_in_main_thread();
        else
            (void)strobe_enable_in_child_thread();
    }
    return NULL;
}

static void test_storm_on_registry_lock(void) {
    stress_phase("storm on a thread holding the registry lock");
    atomic_store(&lock_loop_on, 1);
    pthread_t looper;
    REQUIRE(pthread_create(&looper, NULL, lock_looper_body, NULL) == 0);
    atomic_store(&handler_runs, 0);
    pthread_t sig = storm_begin(looper, 0);
    strobe_config c;
    strobe_config_init(&c);
    c.buffer_bytes = 4 << 20;
    c.chunk_bytes = 16 << 10;
    c.prefault_bytes = 0;
    size_t looper_events = 0;
    int64_t deadline = now_s() + DEADLINE_S;
    int cycle;
    for (cycle = 0;
         (cycle < CYCLES || atomic_load(&handler_runs) < MIN_RUNS || looper_events == 0) &&
         now_s() < deadline;
         cycle++) {
        start_or_die(&c);
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
        strobe_result *r = stop_or_die();
        CHECK_EQ(check_wellformed(r), 0);
        /* Here a handler run may straddle a start or a stop made by the main thread: its
         * "sig dyn" may be a root (the session started inside the run), and its "sig scope" may
         * be closed at stop. Only the tree's shape is checked. */
        looper_events += count_named(r, "sig scope");
        strobe_result_free(r);
    }
    storm_end(sig);
    atomic_store(&lock_loop_on, 0);
    pthread_join(looper, NULL);
    storm_size_note("storm on the registry lock", atomic_load(&handler_runs));
    CHECK_INT(looper_events, >=, 1);
    printf("storm on the registry lock: %d sessions, %ld handler runs, %zu recorded\n", cycle,
           atomic_load(&handler_runs), looper_events);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    stress_watchdog();
    install_handlers();
    /* Only the thread each storm aims at takes the signals: the signaller and the watchdog block
     * them, and test 3's looper unblocks them for itself after the main thread blocked them. */
    /* The main thread's state exists before the first signal lands (see the file's comment). */
    strobe_set_thread_name("main");
    test_storm_on_recording();
    test_storm_on_start_stop();
    /* The main thread stops taking the signals: test 3 aims them at another thread. */
    block_storm_signals(SIG_BLOCK);
    test_storm_on_registry_lock();
    return check_result();
}
