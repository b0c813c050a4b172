/* test_limits.c: what happens at the edges, each counted and never fatal: the buffer cap
 * (records dropped, open ranges truncated, a marker instant), fork() during a session, and
 * records made inside signal handlers. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "result_check.h"

static void test_buffer_cap(void) {
    strobe_config c;
    strobe_config_init(&c);
    c.buffer_bytes = 64 << 10; /* sixteen 4 KiB chunks */
    c.chunk_bytes = 4096;
    start_or_die(&c);
    STROBE_RANGE_BEGIN("outer");
    const long pairs = 100000;
    for (long i = 0; i < pairs; i++) {
        STROBE_OP("inner");
    }
    STROBE_RANGE_END();
    strobe_result *r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);
    const strobe_stats *st = strobe_result_stats(r);
    size_t inner = count_named(r, "inner");
    CHECK_INT(inner, >, 100);
    CHECK_INT(inner, <, pairs);
    /* Every range is either in the result (whole, or truncated when the buffer filled) or
     * counted as dropped. */
    long trunc_inner = 0;
    const strobe_event *ev = strobe_result_events(r);
    for (size_t i = 0; i < strobe_result_event_count(r); i++)
        if ((ev[i].flags & STROBE_EVENT_TRUNCATED) && strcmp(ev[i].name, "inner") == 0)
            trunc_inner++;
    CHECK_INT(trunc_inner, <=, 1);
    CHECK_EQ(inner + st->dropped_events, (uint64_t)pairs);
    CHECK_INT(st->buffer_bytes_used, <=, 64 << 10);
    CHECK_EQ(st->buffer_bytes_cap, 64 << 10);
    /* Outer was open when the buffer filled: closed then and flagged, not extended to stop. */
    long outer = find_named(r, "outer");
    REQUIRE(outer == 0);
    CHECK(ev[0].flags & STROBE_EVENT_TRUNCATED);
    CHECK_EQ(st->truncated_ranges, 1 + (uint64_t)trunc_inner);
    long marker = find_named(r, "[strobe] buffer full: records dropped");
    REQUIRE(marker > 0);
    CHECK_EQ(ev[marker].kind, STROBE_EVENT_INSTANT);
    CHECK_EQ(ev[marker].start_ns, ev[0].end_ns);
    REQUIRE(ev[marker].args != NULL);
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)st->dropped_events);
    CHECK_STR(ev[marker].args->json, num);
    CHECK_EQ(strobe_result_threads(r)[0].dropped_events, st->dropped_events);
    strobe_result_free(r);
}

static void test_fork(void) {
    strobe_config c;
    strobe_config_init(&c);
    start_or_die(&c);
    STROBE_RANGE_BEGIN("parent before fork");
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        /* The child inherits no session: records go nowhere, stop is refused, and it can run a
         * session of its own. */
        int bad = 0;
        STROBE_RANGE_BEGIN("child ignored");
        STROBE_RANGE_END();
        strobe_result *r = NULL;
        if (strobe_stop(&r) != STROBE_EFORK) bad |= 1;
        if (strobe_is_running()) bad |= 2;
        if (strobe_add_metadata_json("k", "1") != STROBE_ENOSESSION) bad |= 4;
        if (strobe_start(&c) != 0) bad |= 8;
        STROBE_RANGE_BEGIN("child session");
        STROBE_RANGE_END();
        if (strobe_stop(&r) != 0) bad |= 16;
        if (r && (strobe_result_event_count(r) != 1 || count_named(r, "child session") != 1))
            bad |= 32;
        if (r && strobe_result_thread_count(r) != 1) bad |= 64;
        strobe_result_free(r);
        _exit(bad);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
    STROBE_RANGE_END();
    strobe_result *r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);
    CHECK_EQ(count_named(r, "parent before fork"), 1);
    CHECK_EQ(count_named(r, "child ignored"), 0);
    CHECK_EQ(count_named(r, "child session"), 0);
    CHECK_EQ(strobe_result_stats(r)->unfinished_ranges, 0);
    strobe_result_free(r);
}

static volatile sig_atomic_t handled;

static void on_signal(int sig) {
    (void)sig;
    STROBE_SCOPE("in handler");
    strobe_range_begin("handler dyn");
    strobe_range_end();
    handled++;
}

static void test_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    strobe_config c;
    strobe_config_init(&c);
    start_or_die(&c);
    handled = 0;
    /* Signals land at arbitrary points of the hot path: inside or between records. */
    for (int i = 0; i < 20000; i++) {
        STROBE_OP("loop");
        strobe_range_begin("loop dyn");
        if (i % 10 == 0) raise(SIGUSR1);
        strobe_range_end();
    }
    strobe_result *r = stop_or_die();
    signal(SIGUSR1, SIG_DFL);
    CHECK_EQ(check_wellformed(r), 0);
    CHECK_EQ(count_named(r, "loop"), 20000);
    CHECK_EQ(count_named(r, "loop dyn"), 20000);
    /* raise() delivers synchronously, between records: every handler run is recorded whole. A
     * handler that interrupted a record would be dropped as a whole and counted. */
    const strobe_stats *st = strobe_result_stats(r);
    CHECK_EQ(count_named(r, "in handler") + st->signal_dropped / 4, (size_t)handled);
    CHECK_EQ(count_named(r, "handler dyn"), count_named(r, "in handler"));
    CHECK_EQ(st->unmatched_ends, 0);
    const strobe_event *ev = strobe_result_events(r);
    for (size_t i = 0; i < strobe_result_event_count(r); i++)
        if (strcmp(ev[i].name, "handler dyn") == 0) CHECK_STR(ev[ev[i].parent].name, "in handler");
    strobe_result_free(r);
}

int main(void) {
    test_buffer_cap();
    test_fork();
    test_signals();
    return check_result();
}
