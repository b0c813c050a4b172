/* test_dynolog_config.c: reading libkineto on-demand configs (src/ondemand/dynolog.c) into trigger
 * requests: the configs `dyno gputrace` sends (dynolog's cli/src/commands/gputrace.rs), the file
 * name libkineto writes (_PID before .json), defaults, refusals, and a bounded fuzz (mutated and
 * random configs: an answer or an error, never a crash); and the environment switches. The wire
 * protocol itself is tested end to end against a stand-in daemon (test_dynolog.py). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ondemand/od_internal.h"
#include "strobe/error.h"
#include "strobe/session.h"

static int parse(const char *text, strobe__od_request *rq, int64_t *start, char *note, char *err) {
    return strobe__dyno_parse_config(text, strlen(text), rq, start, note, 200, err, 300);
}

static void test_gputrace(void) {
    strobe__od_request rq;
    int64_t start;
    char note[200], err[300], want[128];
    /* dyno gputrace --duration-ms 42 --log-file /tmp/test_trace.json --record-shapes */
    const char *dur = "ACTIVITIES_LOG_FILE=/tmp/test_trace.json\nPROFILE_START_TIME=0\n"
                      "ACTIVITIES_DURATION_MSECS=42\nPROFILE_REPORT_INPUT_SHAPES=true\n"
                      "PROFILE_PROFILE_MEMORY=false\nPROFILE_WITH_STACK=true\n"
                      "PROFILE_WITH_FLOPS=false\nPROFILE_WITH_MODULES=true\n";
    CHECK_EQ(parse(dur, &rq, &start, note, err), 1);
    snprintf(want, sizeof want, "/tmp/test_trace_%ld.json", (long)getpid());
    CHECK_STR(rq.output, want);
    CHECK_EQ(rq.verb, STROBE__OD_TRIGGER);
    CHECK_EQ(rq.duration_ms, 42);
    CHECK_EQ(rq.iterations, 0);
    CHECK_EQ(rq.flags, STROBE__OD_RECORD_SHAPES | STROBE__OD_WITH_STACK | STROBE__OD_WITH_MODULES);
    CHECK_EQ(rq.activities, STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA);
    CHECK_STR(note, "");

    /* dyno gputrace --iterations 5 --profile-start-iteration-roundup 100 */
    const char *it = "ACTIVITIES_LOG_FILE=/tmp/t.pt.trace.json\nPROFILE_START_ITERATION=0\n"
                     "PROFILE_START_ITERATION_ROUNDUP=100\nACTIVITIES_ITERATIONS=5\n";
    CHECK_EQ(parse(it, &rq, &start, note, err), 1);
    snprintf(want, sizeof want, "/tmp/t_%ld.pt.trace.json", (long)getpid());
    CHECK_STR(rq.output, want);
    CHECK_EQ(rq.iterations, 5);
    CHECK_EQ(rq.duration_ms, 0);
    CHECK_EQ(rq.roundup, 100);
    CHECK_EQ(start, 0);

    /* An absolute start step, Windows line ends, spaces, comments, unknown keys. */
    CHECK_EQ(parse("# a comment\r\n  ACTIVITIES_ITERATIONS = 3 \r\nPROFILE_START_ITERATION=250\r\n"
                   "REQUEST_TRACE_ID=abc\nVERBOSE_LOG_LEVEL=1\nACTIVITY_TYPES=cpu_op,"
                   "user_annotation\nACTIVITIES_LOG_FILE=/tmp/plain\n",
                   &rq, &start, note, err),
             1);
    CHECK_EQ(rq.iterations, 3);
    CHECK_EQ(start, 250);
    CHECK_STR(rq.output, "/tmp/plain"); /* no .json: the name as given */
    CHECK_EQ(rq.activities, STROBE_ACTIVITY_CPU);

    /* Defaults: no log file, no duration -> libkineto's file name and 500 ms. */
    CHECK_EQ(parse("ACTIVITIES_DURATION_SECS=2\n", &rq, &start, note, err), 1);
    CHECK_EQ(rq.duration_ms, 2000);
    snprintf(want, sizeof want, "/tmp/libkineto_activities_%ld.json", (long)getpid());
    CHECK_STR(rq.output, want);
    CHECK_EQ(
        parse("ACTIVITIES_LOG_FILE=/tmp/x.json\nACTIVITY_TYPES=kernel\n", &rq, &start, note, err),
        1);
    CHECK_EQ(rq.duration_ms, 500);
    CHECK_EQ(rq.activities, STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA);

    /* Iterations win over a duration, as in libkineto. */
    CHECK_EQ(
        parse("ACTIVITIES_DURATION_MSECS=100\nACTIVITIES_ITERATIONS=2\n", &rq, &start, note, err),
        1);
    CHECK_EQ(rq.duration_ms, 0);
    CHECK_EQ(rq.iterations, 2);

    /* A start time in the future is said, not honoured. */
    CHECK_EQ(parse("PROFILE_START_TIME=99999999999999\nACTIVITIES_DURATION_MSECS=5\n", &rq, &start,
                   note, err),
             1);
    CHECK(strstr(note, "PROFILE_START_TIME") != NULL);
}

static void test_nothing(void) {
    strobe__od_request rq;
    int64_t start;
    char note[200], err[300];
    /* The daemon's "nothing to do", and an event profiler's config. */
    CHECK_EQ(parse("", &rq, &start, note, err), 0);
    CHECK_EQ(parse("\n\n", &rq, &start, note, err), 0);
    CHECK_EQ(parse("EVENTS=elapsed_cycles_sm\nSAMPLE_PERIOD_MSECS=100\n", &rq, &start, note, err),
             0);
}

static void test_bad(void) {
    strobe__od_request rq;
    int64_t start;
    char note[200], err[300];
    static const char *const bad[] = {
        "no equals sign\n",
        "ACTIVITIES_DURATION_MSECS=-5\n",
        "ACTIVITIES_DURATION_MSECS=12abc\n",
        "ACTIVITIES_DURATION_MSECS=\n",
        "ACTIVITIES_DURATION_MSECS=999999999999999999999\n",
        "ACTIVITIES_DURATION_MSECS=86400001\n", /* over a day */
        "ACTIVITIES_ITERATIONS=1000001\n",
        "PROFILE_START_ITERATION=x\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK_EQ(parse(bad[i], &rq, &start, note, err), STROBE_EFORMAT);
        CHECK(err[0] != '\0');
    }
    /* A NUL byte inside the config, and a path too long for a request. */
    const char nul[] = "ACTIVITIES_DURATION_MSECS=5\0\nX=1\n";
    CHECK_EQ(strobe__dyno_parse_config(nul, sizeof nul - 1, &rq, &start, note, 200, err, 300),
             STROBE_EFORMAT);
    size_t n = STROBE__OD_MAX_PATH + 200;
    char *big = malloc(n + 1);
    CHECK(big != NULL);
    if (big) {
        memcpy(big, "ACTIVITIES_LOG_FILE=/", 21);
        memset(big + 21, 'a', n - 21);
        big[n] = '\0';
        CHECK(parse(big, &rq, &start, note, err) < 0);
        free(big);
    }
}

/* Mutations of a valid config and random bytes: each gets an answer or an error. */
static void test_fuzz(void) {
    const char *seed = "ACTIVITIES_LOG_FILE=/tmp/f.json\nPROFILE_START_ITERATION=0\n"
                       "PROFILE_START_ITERATION_ROUNDUP=10\nACTIVITIES_ITERATIONS=4\n";
    char buf[512], note[200], err[300];
    strobe__od_request rq;
    int64_t start;
    unsigned seedv = 12345;
    int answered = 0;
    for (int round = 0; round < 20000; round++) {
        size_t len = strlen(seed);
        memcpy(buf, seed, len);
        int muts = 1 + (int)(rand_r(&seedv) % 6);
        for (int m = 0; m < muts; m++)
            buf[rand_r(&seedv) % len] = (char)(rand_r(&seedv) & 0xff);
        if (round % 4 == 0) {
            len = rand_r(&seedv) % sizeof buf;
            for (size_t k = 0; k < len; k++)
                buf[k] = (char)(rand_r(&seedv) & 0xff);
        }
        int rc =
            strobe__dyno_parse_config(buf, len, &rq, &start, note, sizeof note, err, sizeof err);
        CHECK(rc == 0 || rc == 1 || rc == STROBE_EFORMAT || rc == STROBE_ERANGE);
        if (rc == 1) {
            answered++;
            CHECK(rq.duration_ms > 0 || rq.iterations > 0);
            CHECK(memchr(rq.output, '\0', sizeof rq.output) != NULL);
        }
    }
    CHECK(answered > 0);
}

static void test_env(void) {
    unsetenv("STROBE_DYNOLOG");
    unsetenv("KINETO_USE_DAEMON");
    CHECK_EQ(strobe__dyno_enabled(), 0);
    setenv("KINETO_USE_DAEMON", "1", 1);
    CHECK_EQ(strobe__dyno_enabled(), 1);
    setenv("STROBE_DYNOLOG", "0", 1); /* strobe's switch wins */
    CHECK_EQ(strobe__dyno_enabled(), 0);
    unsetenv("KINETO_USE_DAEMON");
    setenv("STROBE_DYNOLOG", "1", 1);
    CHECK_EQ(strobe__dyno_enabled(), 1);
    unsetenv("STROBE_DYNOLOG");
    CHECK_EQ(strobe__dyno_interval_ms(), 5000);
    setenv("STROBE_DYNOLOG_POLL_MS", "250", 1);
    CHECK_EQ(strobe__dyno_interval_ms(), 250);
    setenv("STROBE_DYNOLOG_POLL_MS", "1", 1); /* out of range: the default */
    CHECK_EQ(strobe__dyno_interval_ms(), 5000);
    unsetenv("STROBE_DYNOLOG_POLL_MS");
    CHECK_STR(strobe__dyno_daemon_name(), "dynolog");
}

int main(void) {
    test_gputrace();
    test_nothing();
    test_bad();
    test_fuzz();
    test_env();
    return check_result();
}
