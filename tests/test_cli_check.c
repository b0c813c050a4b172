/* test_cli_check.c: `strobe check` and `strobe info` on hand-made traces (tests/cli/), whose
 * expected findings were worked out by hand; md_load_mem() against md_load(); the fuzzers'
 * regression inputs replayed through the model; usage errors.
 *
 * Usage: test_cli_check                 the self-contained tests
 *        test_cli_check --shared DIR    check and info on every trace in DIR/traces (exit 77 when
 *                                       DIR/traces is missing): no crash, exit 0 or 1, counts shown
 *
 * The subcommands print to stdout; the test sends stdout to a temporary file while one runs, and
 * reads it back. */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cli.h"
#include "model/model.h"

static char out_path[4096];

/* Runs a subcommand with stdout sent to out_path; @return its exit code, *text its output
 * (malloc'd, NUL-terminated). */
static int run(int (*cmd)(int, char **), char **text, int argc, ...) {
    char *argv[8];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc && i < 8; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    fflush(stdout);
    int saved = dup(1);
    REQUIRE(saved >= 0);
    FILE *f = fopen(out_path, "w");
    REQUIRE(f != NULL);
    REQUIRE(dup2(fileno(f), 1) >= 0);
    fclose(f);
    int rc = cmd(argc, argv);
    fflush(stdout);
    REQUIRE(dup2(saved, 1) >= 0);
    close(saved);
    f = fopen(out_path, "rb");
    REQUIRE(f != NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    REQUIRE(buf != NULL);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    if (text)
        *text = buf;
    else
        free(buf);
    return rc;
}

/* The count on the report line "KIND: N", or 0 when the kind is not reported. */
static long long count_of(const char *text, const char *kind) {
    size_t klen = strlen(kind);
    for (const char *line = text; line && *line;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, kind, klen) == 0 && line[klen] == ':' && line[klen + 1] == ' ')
            return atoll(line + klen + 2);
    return 0;
}

static void cli_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/tests/cli/%s", STROBE_SOURCE_DIR, name);
}

/* Expected findings per hand-made trace, kind by kind (the comments say why). */
typedef struct expect {
    const char *kind;
    long long count;
} expect;

static void check_trace(const char *name, int want_rc, const expect *want, size_t nwant) {
    static const char *const kinds[] = {
        "bad_event",          "negative_dur",          "x_without_dur",
        "partial_overlap",    "child_outlives_parent", "b_without_e",
        "e_without_b",        "be_name_mismatch",      "flow_without_end",
        "flow_without_start", "flow_without_id",       "unknown_phase",
        "bad_metadata_event"};
    char path[4096];
    cli_path(path, sizeof path, name);
    char *text;
    int rc = run(cmd_check, &text, 2, "check", path);
    if (rc != want_rc) fprintf(stderr, "%s: output:\n%s", name, text);
    CHECK_EQ(rc, want_rc);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        long long expected = 0;
        for (size_t w = 0; w < nwant; w++)
            if (strcmp(want[w].kind, kinds[k]) == 0) expected = want[w].count;
        long long got = count_of(text, kinds[k]);
        if (got != expected) fprintf(stderr, "%s: %s\n", name, kinds[k]);
        CHECK_EQ(got, expected);
    }
    free(text);
}

static void test_check(void) {
    /* A [0,100] holds B and C; D [95,110] starts inside A and lies mostly after it (5 in, 10 out):
     * a partial overlap. F [210,305] lies mostly inside E [200,300] (90 in, 5 out): a child that
     * outlives its parent. H has G's span exactly: nested, fine. On tid 2, J [5,15] crosses
     * I [0,10] by 5 in and 5 out: not mostly inside, so a partial overlap. K is alone on tid 3. */
    const expect nesting[] = {{"partial_overlap", 2}, {"child_outlives_parent", 1}};
    check_trace("check_nesting.json", 1, nesting, 2);
    /* neg: negative dur; nodur: X without dur; null, the nameless X and the string ts: bad events
     * (3); ph "Q" and ph "XY": unknown phases (2); async b/e and a missing cat are legal; the
     * thread_name event without pid is a bad metadata event. */
    const expect events[] = {{"bad_event", 3},
                             {"negative_dur", 1},
                             {"x_without_dur", 1},
                             {"unknown_phase", 2},
                             {"bad_metadata_event", 1}};
    check_trace("check_events.json", 1, events, 5);
    /* id 1 and id "0x10" match; s id 2 has no end; f id 3 has no start; id 4 has a start in cat a
     * and an end in cat b, which do not match; the last s has no id. */
    const expect flows[] = {
        {"flow_without_end", 2}, {"flow_without_start", 2}, {"flow_without_id", 1}};
    check_trace("check_flows.json", 1, flows, 3);
    /* Process 1's steps as a step called inside a user scope paired them: #1 spans the trace,
     * #2 and #3 start inside it. Process 2's steps follow one another across two threads. */
    const expect steps[] = {{"step_overlap", 2}};
    check_trace("check_steps.json", 1, steps, 1);
    /* tid 1: B a, B b, E b, E (nameless, closes a), B c, E d (closes c: name mismatch), E e (no
     * open B), B f (never closed); tid 2: an E with no B. */
    const expect be[] = {{"b_without_e", 1}, {"e_without_b", 2}, {"be_name_mismatch", 1}};
    check_trace("check_be.json", 1, be, 3);
    /* Unsorted, same spans, a child ending with its parent, zero dur, no cat, string tid, old flow
     * cat, instants, counters, and an unterminated bare array: all legal. */
    check_trace("check_clean.json", 0, NULL, 0);

    /* A trace strobe wrote (the writer's golden file) is clean. */
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/golden/sample.json", STROBE_SOURCE_DIR);
    char *text;
    CHECK_EQ(run(cmd_check, &text, 2, "check", path), 0);
    CHECK(strstr(text, "no problems found") != NULL);
    free(text);

    /* --examples 0 keeps the counts and drops the examples. */
    cli_path(path, sizeof path, "check_nesting.json");
    CHECK_EQ(run(cmd_check, &text, 4, "check", "--examples", "0", path), 1);
    CHECK_EQ(count_of(text, "partial_overlap"), 2);
    CHECK(strstr(text, "D_crosses_A") == NULL);
    free(text);
    CHECK_EQ(run(cmd_check, &text, 4, "check", "--examples", "1", path), 1);
    CHECK(strstr(text, "D_crosses_A") != NULL);
    CHECK(strstr(text, "J_crosses_I") == NULL);
    CHECK(strstr(text, "... and 1 more") != NULL);
    free(text);
}

static void test_info(void) {
    char path[4096], want[8192];
    cli_path(path, sizeof path, "info_basic.json");
    /* Worked out by hand from info_basic.json: the span runs from aten::mm at 5 µs to the end of
     * k2 at 12.25 + 4 µs; the thread with a thread_name comes first (first seen in a metadata
     * event); pid 0 holds the kernels on two streams; bad_neg (negative dur) counts as bad. */
    snprintf(want, sizeof want,
             "file:           %s\n"
             "schema version: 1\n"
             "time span:      first ts 5.000 us, last end 16.250 us, duration 11.250 us\n"
             "base time:      1000000000 ns\n"
             "events:         8 (3 metadata events; 1 bad)\n"
             "unterminated:   no\n"
             "processes (2):\n"
             "  pid 10 \"main\"\n"
             "  pid 0 \"GPU 0\"\n"
             "threads (3):\n"
             "  pid 10 tid 11 events 5 \"worker\"\n"
             "  pid 0 tid 7 events 2\n"
             "  pid 0 tid 8 events 1\n"
             "devices (1):\n"
             "  pid 0 streams 2 gpu events 2\n"
             "  deviceProperties[0]: id 0 name \"GPU A\" totalGlobalMem 1024 computeMajor 8 "
             "computeMinor 0 numSms 108\n"
             "by phase:\n"
             "  M 3\n"
             "  X 5\n"
             "  s 1\n"
             "  f 1\n"
             "  i 1\n"
             "by category:\n"
             "  \"cpu_op\" 1\n"
             "  \"cuda_runtime\" 1\n"
             "  \"ac2g\" 2\n"
             "  \"kernel\" 2\n"
             "  \"cpu_instant_event\" 1\n"
             "  \"c\" 1\n"
             "metadata keys (5): schemaVersion, deviceProperties, trace_id, baseTimeNanoseconds, "
             "traceName\n",
             path);
    char *text;
    CHECK_EQ(run(cmd_info, &text, 2, "info", path), 0);
    CHECK_STR(text, want);
    free(text);
    /* The 2021-style unterminated bare array: no schema, no base time, string tid. */
    cli_path(path, sizeof path, "check_clean.json");
    CHECK_EQ(run(cmd_info, &text, 2, "info", path), 0);
    CHECK(strstr(text, "schema version: none\n") != NULL);
    CHECK(strstr(text, "base time:      none\n") != NULL);
    CHECK(strstr(text, "unterminated:   yes\n") != NULL);
    CHECK(strstr(text, "tid \"stream 7\" events 2 \"stream 7\"\n") != NULL);
    free(text);
}

static void test_usage(void) {
    char *text;
    CHECK_EQ(run(cmd_check, &text, 2, "check", "--help"), 0);
    CHECK(strstr(text, "SYNOPSIS") && strstr(text, "EXIT STATUS"));
    free(text);
    CHECK_EQ(run(cmd_info, &text, 2, "info", "-h"), 0);
    CHECK(strstr(text, "SYNOPSIS") && strstr(text, "EXIT STATUS"));
    free(text);
    CHECK_EQ(run(cmd_check, NULL, 1, "check"), 2);
    CHECK_EQ(run(cmd_check, NULL, 3, "check", "--bogus", "x.json"), 2);
    CHECK_EQ(run(cmd_check, NULL, 3, "check", "a.json", "b.json"), 2);
    CHECK_EQ(run(cmd_check, NULL, 3, "check", "--examples", "x"), 2);
    CHECK_EQ(run(cmd_info, NULL, 1, "info"), 2);
    CHECK_EQ(run(cmd_info, NULL, 3, "info", "--bogus", "x.json"), 2);
    CHECK_EQ(run(cmd_info, NULL, 3, "info", "a.json", "b.json"), 2);
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(n > 0 ? (size_t)n : 1);
    *len = buf ? fread(buf, 1, (size_t)(n > 0 ? n : 0), f) : 0;
    fclose(f);
    return buf;
}

/* md_load_mem() reads what md_load() reads. */
static void test_load_mem(void) {
    static const char *const names[] = {"check_nesting.json", "check_events.json",
                                        "check_flows.json",   "check_be.json",
                                        "check_clean.json",   "info_basic.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[4096];
        cli_path(path, sizeof path, names[i]);
        size_t len;
        char *data = slurp(path, &len);
        REQUIRE(data != NULL);
        md_model a, b;
        int ra = md_load(&a, path), rb = md_load_mem(&b, data, len, path);
        free(data);
        CHECK_EQ(ra, 0);
        CHECK_EQ(rb, 0);
        CHECK_EQ(a.count, b.count);
        CHECK_EQ(a.thread_count, b.thread_count);
        CHECK_EQ(a.bad_events, b.bad_events);
        for (size_t e = 0; e < a.count && e < b.count; e++) {
            CHECK_EQ(md_ts(&a, e), md_ts(&b, e));
            CHECK_EQ(md_parent(&a, e), md_parent(&b, e));
        }
        md_free(&a);
        md_free(&b);
    }
    /* A syntax error names the input and the byte. */
    md_model m;
    CHECK(md_load_mem(&m, "{\"traceEvents\":[}", 17, "mem.json") < 0);
    CHECK(strstr(m.err, "mem.json: byte 16") != NULL);
    md_free(&m);
}

/* Every input the fuzzers kept (tests/corpus/reader and tests/corpus/model) goes through the model
 * and `check` without a crash; under ASan this is the regression test for their crashers. */
static void test_corpus(void) {
    static const char *const dirs[] = {"tests/corpus/reader", "tests/corpus/model"};
    for (size_t d = 0; d < 2; d++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", STROBE_SOURCE_DIR, dirs[d]);
        DIR *dp = opendir(dir);
        if (dp == NULL) continue;
        for (struct dirent *de; (de = readdir(dp)) != NULL;) {
            if (de->d_name[0] == '.') continue;
            char path[8192];
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            size_t len;
            char *data = slurp(path, &len);
            if (data == NULL) continue;
            md_model m;
            int rc = md_load_mem(&m, data, len, de->d_name);
            if (rc != 0) CHECK(m.err[0] != '\0');
            md_free(&m);
            free(data);
            rc = run(cmd_check, NULL, 2, "check", path);
            CHECK(rc >= 0 && rc <= 2);
        }
        closedir(dp);
    }
}

/* Writes text[0..len) to a temporary file named after `tag`; @return its path (static). */
static const char *temp_file(const char *tag, const char *text, size_t len) {
    static char path[4200];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/test_cli_check.%ld.%s", tmp && *tmp ? tmp : "/tmp",
             (long)getpid(), tag);
    FILE *f = fopen(path, "wb");
    REQUIRE(f != NULL);
    REQUIRE(fwrite(text, 1, len, f) == len);
    REQUIRE(fclose(f) == 0);
    return path;
}

static int has_line(const char *text, const char *line) {
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0')) return 1;
    return 0;
}

#define CHECK_LINE(text, line)                                                                     \
    do {                                                                                           \
        if (!has_line(text, line)) fprintf(stderr, "no line \"%s\" in:\n%s\n", line, text);        \
        CHECK(has_line(text, line));                                                               \
    } while (0)

/* A baseTimeNanoseconds after traceEvents (as torch writes it) is applied to the events read
 * before it, with the checks a base known from the start gets: each event's time, its being bad
 * when ts plus the base leaves int64 or the model's +-2^62 ns, its end, and the trace's span are
 * those of the same trace with the base first. Worked out: base 10^18 ns; "a" ts 1.5 us ->
 * 10^18 + 1500; "big" ts 9.2e15 us = 9.2e18 ns, plus the base beyond int64: bad; "c" ts 4.0e15 us
 * = 4.0e18 ns, plus the base 5.0e18 >= 2^62 (4.61e18): bad; "d" ts -4.0e15 us, plus the base
 * -3.0e18: kept. */
static void test_base_after_events(void) {
    static const char events[] =
        "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1.5,\"dur\":3,\"pid\":1,\"tid\":1},"
        "{\"ph\":\"X\",\"name\":\"big\",\"ts\":9.2e15,\"dur\":1,\"pid\":1,\"tid\":1},"
        "{\"ph\":\"X\",\"name\":\"c\",\"ts\":4.0e15,\"dur\":1,\"pid\":1,\"tid\":2},"
        "{\"ph\":\"X\",\"name\":\"d\",\"ts\":-4.0e15,\"dur\":2,\"pid\":1,\"tid\":2}]";
    char after[1024], first[1024];
    snprintf(after, sizeof after, "{\"traceEvents\":%s,\"baseTimeNanoseconds\":%s}", events,
             "1000000000000000000");
    snprintf(first, sizeof first, "{\"baseTimeNanoseconds\":%s,\"traceEvents\":%s}",
             "1000000000000000000", events);
    md_model a, b;
    REQUIRE(md_load_mem(&a, after, strlen(after), "after.json") == 0);
    REQUIRE(md_load_mem(&b, first, strlen(first), "first.json") == 0);
    CHECK_EQ(a.count, 4);
    CHECK_EQ(b.count, 4);
    CHECK_EQ(a.bad_events, 2);
    CHECK_EQ(b.bad_events, 2);
    static const int64_t want_ts[4] = {1000000000000001500LL, 0, 0, -3000000000000000000LL};
    static const int want_time[4] = {1, 0, 0, 1};
    for (size_t i = 0; i < 4 && i < a.count && i < b.count; i++) {
        const md_event x_ev = md_at(&a, i), *x = &x_ev, y_ev = md_at(&b, i), *y = &y_ev;
        CHECK_EQ(x->ts, want_ts[i]);
        CHECK_EQ(x->has_time, want_time[i]);
        CHECK_EQ(x->ts, y->ts);
        CHECK_EQ(x->dur, y->dur);
        CHECK_EQ(x->has_time, y->has_time);
        CHECK_EQ(x->bad, y->bad);
        CHECK_EQ(x->bad_bits, y->bad_bits);
        CHECK_EQ(x->dur_state, y->dur_state);
        CHECK_STR(md_str(&a, x->bad_why), md_str(&b, y->bad_why));
    }
    CHECK_EQ(a.min_ts, -3000000000000000000LL);
    CHECK_EQ(a.max_ts, 1000000000000004500LL);
    CHECK_EQ(a.min_ts, b.min_ts);
    CHECK_EQ(a.max_ts, b.max_ts);
    md_free(&a);
    md_free(&b);
}

/* Numeric ids of any size are numbers, and strings are strings, whatever their values: pid
 * 2^63-1 (which crashed info and check), tid 2^62 beside tid "" (which the model numbered 2^62
 * + 0, the same), and a flow whose start has the number 2^62 as id and whose end the string "". */
static void test_id_kinds(void) {
    static const char text[] =
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1,\"pid\":9223372036854775807,\"tid\":1},"
        "{\"ph\":\"X\",\"name\":\"b\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":4611686018427387904},"
        "{\"ph\":\"X\",\"name\":\"c\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":\"\"},"
        "{\"ph\":\"s\",\"cat\":\"f\",\"name\":\"s\",\"id\":4611686018427387904,\"ts\":1,"
        "\"pid\":1,\"tid\":4611686018427387904},"
        "{\"ph\":\"f\",\"cat\":\"f\",\"name\":\"f\",\"id\":\"\",\"ts\":2,\"bp\":\"e\","
        "\"pid\":1,\"tid\":\"\"},"
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":9223372036854775807,"
        "\"args\":{\"name\":\"big\"}},"
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":\"9x\",\"args\":{\"name\":\"str\"}}]}";
    const char *path = temp_file("ids.json", text, sizeof text - 1);
    md_model m;
    CHECK_EQ(md_load(&m, path), 0);
    CHECK_EQ(m.thread_count, 3);
    CHECK_EQ(m.proc_count, 2);
    md_free(&m);
    char *out;
    CHECK_EQ(run(cmd_info, &out, 2, "info", path), 0);
    CHECK_LINE(out, "threads (3):");
    CHECK_LINE(out, "  pid 9223372036854775807 tid 1 events 1");
    CHECK_LINE(out, "  pid 1 tid 4611686018427387904 events 2");
    CHECK_LINE(out, "  pid 1 tid \"\" events 2");
    CHECK_LINE(out, "  pid 9223372036854775807 \"big\"");
    CHECK_LINE(out, "  pid \"9x\" \"str\"");
    free(out);
    CHECK_EQ(run(cmd_check, &out, 2, "check", path), 1);
    CHECK_EQ(count_of(out, "flow_without_end"), 1);
    CHECK_EQ(count_of(out, "flow_without_start"), 1);
    CHECK(strstr(out, "id 4611686018427387904") != NULL);
    CHECK(strstr(out, "id \"\"") != NULL);
    free(out);
    remove(path);
}

/* A growable text buffer for the generated traces below. */
typedef struct gen_text {
    char *p;
    size_t len, cap;
} gen_text;

static void addf(gen_text *t, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p ? t->p + t->len : NULL, t->p ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        REQUIRE(n >= 0);
        if (t->p && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = (t->cap + (size_t)n + 1) * 2;
        t->p = realloc(t->p, t->cap);
        REQUIRE(t->p != NULL);
    }
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Shapes that cost quadratic time or memory before: 300,000 perf counter names (a per-event array
 * per name, names deduplicated by a scan), and 100,000 threads that are each a device's stream
 * (info's device tally, kernels' per-device scan of every event, summary's search for a thread's
 * string-tid twin, convert's track lookup). The
 * counts are checked where they tell (at most MD_PERF_MAX names kept); the time bounds are
 * generous backups: the quadratic versions took tens of seconds on these. */
static void test_scale(void) {
    enum { NAMES = 300000, EVENTS = 100, THREADS = 100000 };
    gen_text t = {0};
    addf(&t, "{\"strobe_perf_events\":[");
    for (int k = 0; k < NAMES; k++)
        addf(&t, "%s\"p%d\"", k ? "," : "", k);
    addf(&t, "],\"traceEvents\":[");
    for (int i = 0; i < EVENTS; i++)
        addf(&t,
             "%s{\"ph\":\"X\",\"name\":\"a\",\"ts\":%d,\"dur\":1,\"pid\":1,\"tid\":1,"
             "\"args\":{\"p0\":%d,\"p%d\":7}}",
             i ? "," : "", i * 2, i, NAMES - 1);
    addf(&t, "]}");
    double t0 = now_s();
    md_model m;
    CHECK_EQ(md_load_mem(&m, t.p, t.len, "perf.json"), 0);
    CHECK_EQ(m.perf_count, MD_PERF_MAX);
    CHECK_EQ(m.perf_dropped, NAMES - MD_PERF_MAX);
    CHECK_EQ(m.count, EVENTS);
    if (m.perf_count == MD_PERF_MAX && m.count == EVENTS) CHECK_EQ(m.perf[5 * m.perf_count], 5);
    md_free(&m);
    const char *path = temp_file("perf.json", t.p, t.len);
    CHECK_EQ(run(cmd_info, NULL, 2, "info", path), 0);
    double perf_s = now_s() - t0;
    remove(path);

    t.len = 0;
    addf(&t, "{\"traceEvents\":[");
    for (int i = 0; i < THREADS; i++)
        addf(&t,
             "%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":%d,\"dur\":1,"
             "\"pid\":%d,\"tid\":7}",
             i ? "," : "", i, i);
    addf(&t, "]}");
    path = temp_file("threads.json", t.p, t.len);
    t0 = now_s();
    char *out;
    CHECK_EQ(run(cmd_info, &out, 2, "info", path), 0);
    CHECK_LINE(out, "devices (100000):");
    free(out);
    CHECK_EQ(run(cmd_kernels, NULL, 4, "kernels", "--format", "csv", path), 0);
    CHECK_EQ(run(cmd_summary, NULL, 2, "summary", path), 0); /* the link's thread twins */
    char pf[4300];
    snprintf(pf, sizeof pf, "%s.pftrace", path);
    CHECK_EQ(run(cmd_convert, NULL, 3, "convert", path, pf), 0);
    CHECK_EQ(run(cmd_info, &out, 2, "info", pf), 0);
    CHECK_LINE(out, "devices (100000):");
    free(out);
    double threads_s = now_s() - t0;
    remove(pf);
    remove(path);
    free(t.p);
    printf("scale: perf names %.2f s, 100000 threads %.2f s\n", perf_s, threads_s);
    /* Bounds that catch a quadratic blowup, not timings: 12x under the sanitizers (TSan runs the
     * 100000 threads' convert, 1.8 GB of encoders, in 86 s on a loaded 2-CPU machine). */
#ifdef STROBE_UNDER_SANITIZER
    const double slow = 12;
#else
    const double slow = 1;
#endif
    CHECK(perf_s < 20 * slow);
    CHECK(threads_s < 60 * slow);
}

/* check and info on the real traces: they must load; PyTorch's have findings, which is fine. */
static int test_shared(const char *shared) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/traces", shared);
    DIR *dp = opendir(dir);
    if (dp == NULL) {
        printf("SKIP: %s not found\n", dir);
        return 77;
    }
    for (struct dirent *de; (de = readdir(dp)) != NULL;) {
        size_t n = strlen(de->d_name);
        if (!((n > 5 && strcmp(de->d_name + n - 5, ".json") == 0) ||
              (n > 8 && strcmp(de->d_name + n - 8, ".json.gz") == 0)))
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        char *text;
        int rc = run(cmd_check, &text, 4, "check", "--examples", "0", path);
        CHECK(rc == 0 || rc == 1);
        /* The first line sums up; print it so that the log shows the counts. */
        char *nl = strchr(text, '\n');
        printf("check rc=%d: %.*s\n", rc, nl ? (int)(nl - text) : (int)strlen(text), text);
        free(text);
        CHECK_EQ(run(cmd_info, NULL, 2, "info", path), 0);
    }
    closedir(dp);
    return check_result();
}

int main(int argc, char **argv) {
    const char *tmp = getenv("TMPDIR");
    snprintf(out_path, sizeof out_path, "%s/test_cli_check.%ld.out", tmp && *tmp ? tmp : "/tmp",
             (long)getpid());
    int rc;
    if (argc == 3 && strcmp(argv[1], "--shared") == 0) {
        rc = test_shared(argv[2]);
    } else {
        test_check();
        test_info();
        test_usage();
        test_load_mem();
        test_id_kinds();
        test_base_after_events();
        test_scale();
        test_corpus();
        rc = check_result();
    }
    remove(out_path);
    return rc;
}
