/* test_stress_fork.c: fork() during a session, from a thread, while other threads record and
 * while sessions start and stop (issue 29's adversarial plan). The documented behaviour (README,
 * "What strobe guarantees"): the child inherits no session; its records go nowhere, strobe_stop()
 * returns STROBE_EFORK, and it may start a session of its own; the parent's session is unaffected.
 *
 * 1. Forks during one session: four threads record exactly RANGES range pairs each while a fifth
 *    forks FORKS children. Each child checks the inherited state (not running, stop gives
 *    STROBE_EFORK, metadata STROBE_ENOSESSION, its records dropped), runs a session of its own
 *    with a thread of its own (not under TSan, which does not support threads in such a child),
 *    checks that result exactly, saves it and checks the JSON, and prints a bit per failed check
 *    (an alarm kills a child that hangs). The parent's result
 *    holds every range its threads recorded, nothing dropped, nothing unfinished, no child's
 *    event.
 * 2. Forks racing start and stop: one thread cycles sessions, two record, one forks; every child
 *    must be able to start and stop a session of its own (the fork handlers leave no lock of the
 *    library held in the child, whatever the parent was doing). */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "stress_util.h"

/* TSan does not support threads made in the child of a multithreaded fork (die_after_fork), and
 * ASan (clang 14) can deadlock there: its thread registry's lock, taken by a parent thread that
 * starts or exits at the fork, is inherited held, and the child's pthread_create waits on it
 * (seen once in the ASan suite: a child hung until its alarm). */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifdef SANITIZED
#define CHILD_THREAD 0
#endif
#ifndef CHILD_THREAD
#define CHILD_THREAD 1
#endif

#define RECORDERS 4
#define RANGES 20000
#define FORKS 16

static atomic_int go, recorders_done;

static void *recorder_body(void *arg) {
    (void)arg;
    while (!atomic_load(&go))
        sched_yield();
    for (int i = 0; i < RANGES; i++) {
        STROBE_SCOPE("rec");
        strobe_range_begin("rec dyn");
        strobe_range_end();
    }
    atomic_fetch_add(&recorders_done, 1);
    return NULL;
}

static void *child_thread_body(void *arg) {
    (void)arg;
    for (int i = 0; i < 100; i++) {
        STROBE_SCOPE("child thread range");
    }
    return NULL;
}

/* The child's checks. Returns a bit mask of the failures (0: all passed). */
static int child_checks(int index, int expect_inherited) {
    int bad = 0;
    alarm(30); /* a hang in the child ends it with SIGALRM, which the parent reports */
    strobe_result *r = NULL;
    if (expect_inherited) {
        if (strobe_is_running() != 0) bad |= 1 << 0;
        if (strobe_stop(&r) != STROBE_EFORK) bad |= 1 << 1;
        if (strobe_add_metadata_json("k", "1") != STROBE_ENOSESSION) bad |= 1 << 2;
    }
    { STROBE_SCOPE("child ignored"); }
    strobe_config c;
    strobe_config_init(&c);
    c.buffer_bytes = 4 << 20;
    c.prefault_bytes = 0;
    if (strobe_start(&c) != 0) return bad | 1 << 3;
    for (int i = 0; i < 100; i++) {
        STROBE_SCOPE("child range");
    }
    if (CHILD_THREAD) {
        pthread_t th;
        if (pthread_create(&th, NULL, child_thread_body, NULL) != 0) return bad | 1 << 4;
        pthread_join(th, NULL);
    } else {
        child_thread_body(NULL); /* the same records, on the child's one thread */
    }
    if (strobe_stop(&r) != 0 || r == NULL) return bad | 1 << 5;
    if (check_wellformed(r) != 0) bad |= 1 << 6;
    if (count_named(r, "child range") != 100) bad |= 1 << 7;
    if (count_named(r, "child thread range") != 100) bad |= 1 << 8;
    if (strobe_result_event_count(r) != 200) bad |= 1 << 9;
    if (strobe_result_thread_count(r) != (CHILD_THREAD ? 2u : 1u)) bad |= 1 << 10;
    if (strobe_result_pid(r) != (int64_t)getpid()) bad |= 1 << 11;
    char name[64], path[4096];
    snprintf(name, sizeof name, "child_%d.json", index);
    char *text = stress_save_json(r, stress_out_path(path, sizeof path, "stress_fork", name));
    if (text == NULL) bad |= 1 << 12;
    free(text);
    strobe_result_free(r);
    return bad;
}

/* Forks `count` children, each running child_checks(); returns the number that failed. */
static int fork_children(int count, int expect_inherited, int base) {
    int failed = 0;
    for (int k = 0; k < count; k++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return failed + 1;
        }
        if (pid == 0) {
            int bad = child_checks(base + k, expect_inherited);
            if (bad) fprintf(stderr, "child %d: failed checks, mask 0x%x\n", base + k, bad);
            _exit(bad ? 1 : 0);
        }
        int status = 0;
        if (waitpid(pid, &status, 0) != pid) {
            perror("waitpid");
            failed++;
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            if (WIFSIGNALED(status))
                fprintf(stderr, "child %d: killed by signal %d%s\n", base + k, WTERMSIG(status),
                        WTERMSIG(status) == SIGALRM ? " (hung: deadlock after fork?)" : "");
            else
                fprintf(stderr, "child %d: exit status %d\n", base + k, WEXITSTATUS(status));
            failed++;
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return failed;
}

static atomic_int forker_failed;

static void *forker_body(void *arg) {
    (void)arg;
    while (!atomic_load(&go))
        sched_yield();
    atomic_store(&forker_failed, fork_children(FORKS, 1, 0));
    return NULL;
}

static void test_fork_during_session(void) {
    stress_phase("forks during one session");
    strobe_config c;
    strobe_config_init(&c);
    c.buffer_bytes = 64 << 20; /* room for every range: nothing may be dropped */
    c.prefault_bytes = 0;
    start_or_die(&c);
    pthread_t rec[RECORDERS], forker;
    for (int i = 0; i < RECORDERS; i++)
        REQUIRE(pthread_create(&rec[i], NULL, recorder_body, NULL) == 0);
    REQUIRE(pthread_create(&forker, NULL, forker_body, NULL) == 0);
    atomic_store(&go, 1);
    for (int i = 0; i < RECORDERS; i++)
        pthread_join(rec[i], NULL);
    pthread_join(forker, NULL);
    strobe_result *r = stop_or_die();
    CHECK_EQ(atomic_load(&forker_failed), 0);
    CHECK_EQ(check_wellformed(r), 0);
    const strobe_stats *st = strobe_result_stats(r);
    CHECK_EQ(st->dropped_events, 0);
    CHECK_EQ(st->unfinished_ranges, 0);
    CHECK_EQ(st->unmatched_ends, 0);
    CHECK_EQ(count_named(r, "rec"), RECORDERS * RANGES);
    CHECK_EQ(count_named(r, "rec dyn"), RECORDERS * RANGES);
    CHECK_EQ(count_named(r, "child ignored"), 0);
    CHECK_EQ(count_named(r, "child range"), 0);
    CHECK_EQ(count_named(r, "child thread range"), 0);
    CHECK_EQ(strobe_result_pid(r), (int64_t)getpid());
    char path[4096];
    char *text =
        stress_save_json(r, stress_out_path(path, sizeof path, "stress_fork", "parent.json"));
    CHECK(text != NULL);
    free(text);
    strobe_result_free(r);
}

static atomic_int cycling;

static void *cycler_body(void *arg) {
    (void)arg;
    strobe_config c;
    strobe_config_init(&c);
    c.buffer_bytes = 4 << 20;
    c.chunk_bytes = 16 << 10;
    c.prefault_bytes = 0;
    while (atomic_load(&cycling)) {
        int rc = strobe_start(&c);
        if (rc != 0) {
            fprintf(stderr, "cycler: strobe_start: %s\n", strobe_strerror(rc));
            CHECK(0);
            return NULL;
        }
        strobe_result *r = NULL;
        rc = strobe_stop(&r);
        if (rc != 0) {
            fprintf(stderr, "cycler: strobe_stop: %s\n", strobe_strerror(rc));
            CHECK(0);
            return NULL;
        }
        if (check_wellformed(r) != 0) CHECK(0);
        strobe_result_free(r);
    }
    return NULL;
}

static void *looping_recorder_body(void *arg) {
    (void)arg;
    while (atomic_load_explicit(&cycling, memory_order_relaxed)) {
        STROBE_SCOPE("rec");
        strobe_instant("rec instant");
    }
    return NULL;
}

static void test_fork_racing_start_stop(void) {
    stress_phase("forks racing start and stop");
    atomic_store(&cycling, 1);
    pthread_t cycler, rec[2];
    REQUIRE(pthread_create(&cycler, NULL, cycler_body, NULL) == 0);
    for (int i = 0; i < 2; i++)
        REQUIRE(pthread_create(&rec[i], NULL, looping_recorder_body, NULL) == 0);
    /* The child may or may not inherit a session here: it does not check what it inherited. */
    int failed = fork_children(FORKS, 0, 100);
    atomic_store(&cycling, 0);
    pthread_join(cycler, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(rec[i], NULL);
    CHECK_EQ(failed, 0);
    CHECK_EQ(strobe_is_running(), 0);
}

int main(void) {
#ifdef SANITIZED
    /* The sanitizers' allocators (clang 14) are not fork-safe: a child forked while another
     * thread allocates can inherit an allocator lock held, and its first calloc waits for ever
     * (seen in the TSan and ASan suites: a child hung in SizeClassAllocator64::GetFromAllocator
     * under strobe_stop). The plain build runs this test. */
    printf("SKIP: fork from a thread while others allocate hangs in the sanitizer's allocator\n");
    return 77;
#endif
    stress_watchdog();
    test_fork_during_session();
    test_fork_racing_start_stop();
    return check_result();
}
