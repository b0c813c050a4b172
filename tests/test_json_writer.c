/* test_json_writer.c: the JSON trace writer and strobe_result_save().
 *
 * Contents:
 *   - formatting primitives: timestamps, doubles, string escaping (every byte, UTF-8 edge cases)
 *   - a golden file: a hand-built result with nested ranges, instants, counters, args, metadata
 *   - gzip output equals the plain output once decompressed
 *   - save errors: NULL arguments, already saved, missing directory, target is a directory, and
 *     that failures leave no file (nor temporary file) behind
 *   - the sink: write errors are reported, large writes bypass the buffer
 *
 * Set STROBE_UPDATE_GOLDEN=1 to rewrite tests/golden/ from the current output (then review the
 * diff by hand before committing it). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "util/json_check.h"
#include "trace/result_internal.h"
#include "strobe/strobe.h"
#include "strobe/writer.h"
#include "trace/json_writer.h"
#include "trace/sink.h"
#include "trace/writer.h"

#define OUT STROBE_TEST_OUT_DIR "/json_writer"
#define GOLDEN_DIR STROBE_SOURCE_DIR "/tests/golden"

/* A pid no Linux process can have (above PID_MAX_LIMIT, 2^22), so the writer names the process
 * "strobe" rather than reading this test's /proc/self/comm, and the golden file stays stable. */
#define FAKE_PID 9999999
#define BASE_NS INT64_C(1700000000000000000)

/* ---- helpers --------------------------------------------------------------------------------- */

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    REQUIRE(buf != NULL);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
            REQUIRE(buf != NULL);
        }
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int write_file(const char *path, const char *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (f == NULL) return -1;
    int ok = fwrite(data, 1, len, f) == len;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

static int exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Counts entries of `dir` whose name starts with `prefix` (leftover temporary files). */
static int count_prefixed(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    if (d == NULL) return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0) n++;
    closedir(d);
    return n;
}

/* Runs the JSON writer into memory. The caller frees the text. */
static char *render(const strobe_result *r, size_t *len) {
    strobe__sink s;
    REQUIRE(strobe__sink_open_memory(&s) == 0);
    strobe__writer *w = strobe__writer_open(&strobe__json_writer, &s, 0);
    REQUIRE(w != NULL);
    int rc = strobe__writer_put_result(w, r, STROBE__PUT_WHOLE, NULL);
    CHECK_EQ(rc, 0);
    strobe__writer_free(w);
    char *text = strobe__sink_take_memory(&s, len);
    REQUIRE(text != NULL);
    return text;
}

/* The library version changes from release to release; the golden file should not. */
static void normalize_version(char *text) {
    char *v = strstr(text, "\"version\": \"");
    if (v == NULL) return;
    v += strlen("\"version\": \"");
    char *end = strchr(v, '"');
    if (end == NULL) return;
    memmove(v + 1, end, strlen(end) + 1);
    v[0] = 'X';
}

static strobe_event *ev(strobe_result *r, size_t i, uint8_t kind, const char *cat, const char *name,
                        int64_t tid, int64_t start_us_ns, int64_t dur_ns) {
    strobe_event *e = &r->events[i];
    e->kind = kind;
    e->category = cat;
    e->name = name;
    e->tid = tid;
    e->start_ns = BASE_NS + start_us_ns;
    e->end_ns = e->start_ns + dur_ns;
    e->parent = e->first_child = e->next_sibling = STROBE_NO_EVENT;
    e->device_type = STROBE_DEVICE_CPU;
    e->device_index = -1;
    return e;
}

/* A small result with what a real session produces: two threads (one unnamed), nested ranges,
 * instants (a memory event with args), counters (one NaN sample, skipped), correlation ids,
 * flags, names that need escaping, metadata and warnings. Ranges nest properly, so the file also
 * passes the independent checkers. */
static strobe_result *build_sample(void) {
    strobe_result *r = strobe__result_alloc();
    REQUIRE(r != NULL);
    r->pid = FAKE_PID;
    r->trace_start_ns = BASE_NS;
    r->trace_end_ns = BASE_NS + 10000000;
    r->trace_id = "0123456789abcdef0123456789abcdef";
    r->trace_name = "golden \"sample\"";
    r->clock_source = "tsc";
    r->clock_ns_per_tick = 0.3125;
    r->stats.dropped_events = 3;
    r->stats.unfinished_ranges = 1;
    r->stats.truncated_ranges = 1;
    r->stats.buffer_bytes_used = 65536;
    r->stats.buffer_bytes_cap = 536870912;
    r->stats.threads = 2;
    REQUIRE(strobe__result_add_warning(r, "CUDA was requested but not traced: no CUPTI") == 0);
    REQUIRE(strobe__result_add_warning(r, "a \"quoted\"\tline") == 0);
    REQUIRE(strobe__result_set_meta(r, "distributedInfo", "{\"rank\": 0, \"world_size\": 1}") == 0);
    REQUIRE(strobe__result_set_meta(r, "record_shapes", "1") == 0);

    REQUIRE(strobe__result_alloc_events(r, 11) == 0);
    /* Thread 101 ("main"): a step containing an operator with a child, an instant and a counter,
     * then an unfinished range closed at stop. */
    strobe_event *e;
    e = ev(r, 0, STROBE_EVENT_RANGE, "user_annotation", "ProfilerStep#1", 101, 0, 5000123);
    e->first_child = 1;
    e = ev(r, 1, STROBE_EVENT_RANGE, "cpu_op", "aten::linear", 101, 1000, 3000000);
    e->correlation_id = 7;
    e->user_correlation_id = 99;
    e->parent = 0;
    e->depth = 1;
    e->first_child = 2;
    e->next_sibling = 3;
    e = ev(r, 2, STROBE_EVENT_RANGE, "cpu_op", "aten::addmm", 101, 2001, 2500999);
    e->correlation_id = 8;
    e->parent = 1;
    e->depth = 2;
    e = ev(r, 3, STROBE_EVENT_INSTANT, "cpu_instant_event", "[memory]", 101, 3500000, 0);
    e->parent = 0;
    e->depth = 1;
    e = ev(r, 4, STROBE_EVENT_COUNTER, "cpu_instant_event", "queue depth", 101, 4000000, 0);
    e->value = 3;
    e = ev(r, 5, STROBE_EVENT_RANGE, NULL, "still \"open\"\n\xc3\xa9\xe2\x9c\x93\xff", 101, 6000000,
           4000000);
    e->flags = STROBE_EVENT_UNFINISHED;
    /* Thread 102 (unnamed): a range cut short by a full buffer, counters, one of them NaN. */
    e = ev(r, 6, STROBE_EVENT_RANGE, "user_annotation", "worker_task", 102, 1, 999);
    e->flags = STROBE_EVENT_TRUNCATED;
    e = ev(r, 7, STROBE_EVENT_COUNTER, "cpu_instant_event", "queue depth", 102, 2000, 0);
    e->value = NAN;
    e = ev(r, 8, STROBE_EVENT_COUNTER, "cpu_instant_event", "queue depth", 102, 3000, 0);
    e->value = 0.1;
    e = ev(r, 9, STROBE_EVENT_RANGE, "cpu_op", "aten::empty", 102, 10000, 1000);
    e = ev(r, 10, STROBE_EVENT_COUNTER, "cpu_instant_event", "bytes", 102, 12000, 0);
    e->value = -1.5e300;

    REQUIRE(strobe_event_set_arg(r, 3, "Device Type", "0") == 0);
    REQUIRE(strobe_event_set_arg(r, 3, "Device Id", "-1") == 0);
    REQUIRE(strobe_event_set_arg(r, 3, "Bytes", "4096") == 0);
    REQUIRE(strobe_event_set_arg(r, 2, "Input Dims", "[[2, 3], [3, 4]]") == 0);
    REQUIRE(strobe_event_set_arg(r, 2, "key \"with\" quotes", "\"v\"") == 0);

    r->threads = calloc(2, sizeof *r->threads);
    REQUIRE(r->threads != NULL);
    r->thread_count = 2;
    r->threads[0] =
        (strobe_thread_info){.tid = 101, .name = "main", .first_event = 0, .event_count = 6};
    r->threads[1] = (strobe_thread_info){
        .tid = 102, .name = "", .first_event = 6, .event_count = 5, .dropped_events = 3};
    return r;
}

/* ---- formatting primitives ------------------------------------------------------------------- */

static void check_ts(int64_t ns, int64_t base, const char *want) {
    char buf[STROBE__JSON_TS_MAX + 1];
    char *end = strobe__json_put_ts(buf, ns, base);
    CHECK_INT(end - buf, <=, STROBE__JSON_TS_MAX);
    *end = '\0';
    CHECK_STR(buf, want);
}

static void test_ts(void) {
    check_ts(0, 0, "0.000");
    check_ts(1, 0, "0.001");
    check_ts(999, 0, "0.999");
    check_ts(1000, 0, "1.000");
    check_ts(1001, 0, "1.001");
    check_ts(1234567, 0, "1234.567");
    check_ts(INT64_C(1000000000000000), 0, "1000000000000.000");
    check_ts(BASE_NS + 1234567, BASE_NS, "1234.567");
    check_ts(BASE_NS, BASE_NS, "0.000");
    check_ts(-1, 0, "-0.001");
    check_ts(0, 1, "-0.001");
    check_ts(-999, 0, "-0.999");
    check_ts(-1000, 0, "-1.000");
    check_ts(BASE_NS - 1234567, BASE_NS, "-1234.567");
    /* The full int64 range: the difference overflows int64 but not the writer. */
    check_ts(INT64_MAX, INT64_MIN, "18446744073709551.615");
    check_ts(INT64_MIN, INT64_MAX, "-18446744073709551.615");
    check_ts(INT64_MIN, 0, "-9223372036854775.808");

    /* And through the writer: ts and dur of an event, relative to baseTimeNanoseconds, which is
     * 1 us (1000 ns) before the session start. */
    strobe_result *r = strobe__result_alloc();
    REQUIRE(r != NULL && strobe__result_alloc_events(r, 2) == 0);
    r->trace_start_ns = BASE_NS;
    ev(r, 0, STROBE_EVENT_RANGE, "cpu_op", "a", 1, 1234567, 999);
    ev(r, 1, STROBE_EVENT_RANGE, "cpu_op", "b", 1, -1, 1);
    size_t len;
    char *text = render(r, &len);
    CHECK(strstr(text, "\"ts\": 1235.567, \"dur\": 0.999") != NULL);
    CHECK(strstr(text, "\"ts\": 0.999, \"dur\": 0.001") != NULL);
    CHECK(strstr(text, "\"baseTimeNanoseconds\": 1699999999999999000,") != NULL);
    CHECK(strobe__json_valid(text, len));
    free(text);
    strobe_result_free(r);
}

static void check_double(double v, const char *want) {
    char buf[STROBE__JSON_DOUBLE_MAX + 1];
    char *end = strobe__json_put_double(buf, v);
    if (want == NULL) {
        CHECK(end == NULL);
        return;
    }
    REQUIRE(end != NULL);
    CHECK_INT(end - buf, <=, STROBE__JSON_DOUBLE_MAX);
    *end = '\0';
    CHECK_STR(buf, want);
    CHECK(strobe__json_valid(buf, strlen(buf)));
    CHECK(strtod(buf, NULL) == v);
}

static void test_double(void) {
    check_double(0, "0");
    check_double(3, "3");
    check_double(-2.5, "-2.5");
    check_double(0.1, "0.1");
    check_double(0.1 + 0.2, "0.30000000000000004");
    check_double(1e300, "1e+300");
    check_double(-1.5e-300, "-1.5e-300");
    check_double(5e-324, "4.94065645841247e-324");
    check_double(NAN, NULL);
    check_double(INFINITY, NULL);
    check_double(-INFINITY, NULL);
    /* A locale whose decimal point is a comma must not leak into the trace. Skipped quietly where
     * no such locale is installed. */
    const char *locales[] = {"de_DE.UTF-8", "fr_FR.UTF-8", "de_DE", "fr_FR"};
    for (size_t i = 0; i < sizeof locales / sizeof locales[0]; i++) {
        if (setlocale(LC_NUMERIC, locales[i]) != NULL) {
            char buf[STROBE__JSON_DOUBLE_MAX + 1];
            char *end = strobe__json_put_double(buf, 2.5);
            REQUIRE(end != NULL);
            *end = '\0';
            CHECK_STR(buf, "2.5");
            setlocale(LC_NUMERIC, "C");
            break;
        }
    }
}

static void check_escape(const char *in, size_t n, const char *want) {
    char buf[STROBE__JSON_STRING_MAX(64) + 1];
    REQUIRE(n <= 64);
    char *end = strobe__json_put_string(buf, in, n);
    CHECK_INT((size_t)(end - buf), <=, STROBE__JSON_STRING_MAX(n));
    *end = '\0';
    CHECK_STR(buf, want);
    CHECK(strobe__json_valid(buf, (size_t)(end - buf)));
}
#define ESC(lit, want) check_escape(lit, sizeof(lit) - 1, want)

static void test_escape(void) {
    ESC("", "\"\"");
    ESC("aten::add", "\"aten::add\"");
    ESC("a\"b", "\"a\\\"b\"");
    ESC("a\\b", "\"a\\\\b\"");
    ESC("\n\t\r\b\f", "\"\\n\\t\\r\\b\\f\"");
    ESC("\x01\x1f", "\"\\u0001\\u001f\"");
    ESC("\0x", "\"\\u0000x\"");
    ESC("\x7f", "\"\\u007f\"");
    ESC("/", "\"/\"");
    /* Valid UTF-8 of every length stays as it is. */
    ESC("\xc3\xa9", "\"\xc3\xa9\"");
    ESC("\xe2\x82\xac", "\"\xe2\x82\xac\"");
    ESC("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");
    ESC("\xef\xbf\xbf", "\"\xef\xbf\xbf\"");
    ESC("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"");
    ESC("\xed\x9f\xbf", "\"\xed\x9f\xbf\"");
    /* Invalid UTF-8: one U+FFFD per maximal ill-formed prefix, the rest rescanned. */
    ESC("\x80", "\"\\ufffd\"");
    ESC("\xbf", "\"\\ufffd\"");
    ESC("\xc0\xaf", "\"\\ufffd\\ufffd\"");                       /* overlong '/' */
    ESC("\xc1\xbf", "\"\\ufffd\\ufffd\"");                       /* overlong */
    ESC("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");            /* overlong, 3 bytes */
    ESC("\xf0\x80\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* overlong, 4 bytes */
    ESC("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");            /* surrogate U+D800 */
    ESC("\xed\xbf\xbf", "\"\\ufffd\\ufffd\\ufffd\"");            /* surrogate U+DFFF */
    ESC("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* U+110000 */
    ESC("\xf5\x80", "\"\\ufffd\\ufffd\"");
    ESC("\xff", "\"\\ufffd\"");
    ESC("\xfe\xff", "\"\\ufffd\\ufffd\"");
    ESC("x\xe2\x82", "\"x\\ufffd\"");   /* truncated at the end: one replacement */
    ESC("x\xe2\x82y", "\"x\\ufffdy\""); /* truncated in the middle */
    ESC("\xf0\x9f\x98", "\"\\ufffd\""); /* 3 of 4 bytes */
    ESC("\xc3", "\"\\ufffd\"");
    ESC("\xc3\xc3\xa9", "\"\\ufffd\xc3\xa9\""); /* a lead byte interrupting a lead byte */

    /* Every byte value, alone and all together, comes out as valid JSON. */
    /* all[1..255] doubles as a C string below. */
    char all[257];
    for (int i = 0; i < 256; i++)
        all[i] = (char)i;
    all[256] = '\0';
    static char out[STROBE__JSON_STRING_MAX(256)];
    for (int i = 0; i < 256; i++) {
        char *end = strobe__json_put_string(out, all + i, 1);
        CHECK(strobe__json_valid(out, (size_t)(end - out)));
    }
    char *end = strobe__json_put_string(out, all, 256);
    CHECK(strobe__json_valid(out, (size_t)(end - out)));
    CHECK_INT((size_t)(end - out), <=, STROBE__JSON_STRING_MAX(256));

    /* Random byte strings, biased towards UTF-8 lead and continuation bytes. */
    unsigned seed = 12345;
    char rnd[40];
    static char rout[STROBE__JSON_STRING_MAX(40)];
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = (size_t)(iter % 40);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            unsigned b = (seed >> 16) & 0xff;
            if (b & 1) b = 0x80 | (b >> 2); /* continuation-heavy */
            rnd[i] = (char)b;
        }
        char *e = strobe__json_put_string(rout, rnd, n);
        if (!strobe__json_valid(rout, (size_t)(e - rout))) {
            CHECK(!"random string produced invalid JSON");
            break;
        }
    }

    /* Through the writer: names, categories, thread names, arg keys, metadata keys and warnings
     * holding every byte 0x01..0xff (C strings cannot hold 0x00). */
    strobe_result *r = strobe__result_alloc();
    REQUIRE(r != NULL && strobe__result_alloc_events(r, 255) == 0);
    char names[255][4];
    for (int i = 1; i < 256; i++) {
        names[i - 1][0] = (char)i;
        names[i - 1][1] = 'x';
        names[i - 1][2] = (char)i;
        names[i - 1][3] = '\0';
        strobe_event *e =
            ev(r, (size_t)i - 1, (uint8_t)(i % 3), names[i - 1], names[i - 1], 5, i, 10);
        e->value = i;
    }
    REQUIRE(strobe_event_set_arg(r, 0, all + 1, "true") == 0);
    REQUIRE(strobe__result_set_meta(r, all + 1, "null") == 0);
    REQUIRE(strobe__result_add_warning(r, all + 1) == 0);
    r->trace_id = all + 1;
    r->trace_name = all + 1;
    r->threads = calloc(1, sizeof *r->threads);
    REQUIRE(r->threads != NULL);
    r->thread_count = 1;
    r->threads[0] = (strobe_thread_info){.tid = 5, .name = all + 1, .event_count = 255};
    size_t len;
    char *text = render(r, &len);
    CHECK(strobe__json_valid(text, len));
    free(text);
    strobe_result_free(r);
}

/* ---- the whole file -------------------------------------------------------------------------- */

/* Compares `text` with the golden file `name`; prints the first differing line on mismatch. */
static void check_golden(const char *name, char *text, size_t len) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", GOLDEN_DIR, name);
    const char *update = getenv("STROBE_UPDATE_GOLDEN");
    if (update && update[0] == '1') {
        CHECK_EQ(write_file(path, text, len), 0);
        fprintf(stderr, "golden file %s rewritten: review it\n", path);
        return;
    }
    size_t glen = 0;
    char *golden = read_file(path, &glen);
    if (golden == NULL) {
        fprintf(stderr, "missing golden file %s (STROBE_UPDATE_GOLDEN=1 writes it)\n", path);
        CHECK(golden != NULL);
        return;
    }
    if (glen != len || memcmp(golden, text, len) != 0) {
        size_t line = 1, i = 0;
        while (i < len && i < glen && text[i] == golden[i])
            line += text[i++] == '\n';
        size_t a = i, b = i;
        while (a > 0 && text[a - 1] != '\n')
            a--;
        while (text[b] && text[b] != '\n')
            b++;
        size_t c = i;
        while (golden[c] && golden[c] != '\n')
            c++;
        fprintf(stderr,
                "output differs from %s at line %zu, byte %zu:\n  want: %.*s\n  got:  %.*s\n"
                "(STROBE_UPDATE_GOLDEN=1 rewrites the golden file)\n",
                path, line, i, (int)(c - a), golden + a, (int)(b - a), text + a);
        CHECK(!"output matches the golden file");
    }
    free(golden);
}

static void test_golden(void) {
    strobe_result *r = build_sample();
    size_t len;
    char *text = render(r, &len);
    CHECK(strobe__json_valid(text, len));
    normalize_version(text);
    len = strlen(text);
    check_golden("sample.json", text, len);

    /* The same bytes reach a file through strobe_result_save(). */
    const char *path = OUT "/sample.json";
    CHECK_EQ(strobe_result_save(r, path), 0);
    CHECK_EQ(r->saved, 1);
    size_t flen = 0;
    char *file = read_file(path, &flen);
    REQUIRE(file != NULL);
    normalize_version(file);
    CHECK_STR(file, text);

    /* A new trace gets the mode a new file of this process gets, not mkstemp's 0600. */
    mode_t mask = umask(0);
    umask(mask);
    struct stat st;
    REQUIRE(stat(path, &st) == 0);
    CHECK_EQ(st.st_mode & 0777, 0666 & ~mask);

    /* A result is saved once, like Kineto's "Trace is already saved". */
    CHECK_EQ(strobe_result_save(r, OUT "/sample2.json"), STROBE_EALREADY);
    CHECK(!exists(OUT "/sample2.json"));
    free(file);
    free(text);
    strobe_result_free(r);
}

static void test_structure(void) {
    strobe_result *r = build_sample();
    size_t len;
    char *text = render(r, &len);
    /* Top-level keys in Kineto's order, traceName last. */
    const char *keys[] = {"\"schemaVersion\": 1", "\"deviceProperties\": []", "\"trace_id\"",
                          "\"strobe\"",           "\"distributedInfo\"",      "\"record_shapes\"",
                          "\"displayTimeUnit\"",  "\"baseTimeNanoseconds\"",  "\"traceEvents\"",
                          "\"traceName\""};
    const char *prev = text;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *k = strstr(text, keys[i]);
        CHECK(k != NULL && k >= prev);
        if (k) prev = k;
    }
    CHECK(strstr(text, "\"skipped_counter_samples\": 1") != NULL);
    CHECK(strstr(text, "\"dropped_events\": 3") != NULL);
    CHECK(strstr(text, "\"thread 102\"") != NULL);
    CHECK(strstr(text, "NaN") == NULL && strstr(text, "nan") == NULL);
    CHECK(strstr(text, "\"External id\": 7, \"User External id\": 99, \"Ev Idx\": 1") != NULL);
    CHECK(strstr(text, "\"strobe_unfinished\": 1") != NULL);
    CHECK(strstr(text, "\"strobe_truncated\": 1") != NULL);
    CHECK(strstr(text, "\"cat\": \"cpu_op\", \"name\": \"still") != NULL);
    CHECK(strstr(text, "\"args\": {\"queue depth\": 0.1}") != NULL);
    free(text);

    /* A user key that collides with one of the writer's is left out: the file stays valid and
     * has one traceEvents. */
    REQUIRE(strobe__result_set_meta(r, "traceEvents", "1") == 0);
    REQUIRE(strobe__result_set_meta(r, "strobe", "2") == 0);
    text = render(r, &len);
    CHECK(strobe__json_valid(text, len));
    CHECK(strstr(text, "\"traceEvents\": 1") == NULL);
    CHECK(strstr(strstr(text, "\"traceEvents\"") + 1, "\"traceEvents\"") == NULL);
    free(text);

    /* A metadata value larger than the sink's buffer goes through whole. */
    size_t big = 3u << 20;
    char *value = malloc(big + 3);
    REQUIRE(value != NULL);
    value[0] = '"';
    memset(value + 1, 'a', big);
    value[big + 1] = '"';
    value[big + 2] = '\0';
    REQUIRE(strobe__result_set_meta(r, "big", value) == 0);
    text = render(r, &len);
    CHECK(strobe__json_valid(text, len));
    CHECK(strstr(text, value) != NULL);
    CHECK_EQ(strobe_result_save(r, OUT "/big.json"), 0);
    size_t flen;
    char *file = read_file(OUT "/big.json", &flen);
    REQUIRE(file != NULL);
    CHECK_EQ(flen, len);
    CHECK(flen == len && memcmp(file, text, len) == 0);
    free(file);
    free(value);
    free(text);
    strobe_result_free(r);

    /* An empty result is still a complete trace. */
    r = strobe__result_alloc();
    REQUIRE(r != NULL);
    text = render(r, &len);
    CHECK(strobe__json_valid(text, len));
    CHECK(strstr(text, "traceName") == NULL);
    free(text);
    strobe_result_free(r);
}

static void test_gzip(void) {
    strobe_result *r = build_sample();
    size_t len;
    char *text = render(r, &len);
    const char *path = OUT "/sample.json.gz";
    CHECK_EQ(strobe_result_save(r, path), 0);

    size_t raw_len;
    char *raw = read_file(path, &raw_len);
    REQUIRE(raw != NULL);
    CHECK(raw_len >= 2 && (unsigned char)raw[0] == 0x1f && (unsigned char)raw[1] == 0x8b);
    free(raw);

    gzFile gz = gzopen(path, "rb");
    REQUIRE(gz != NULL);
    char *plain = malloc(len + 1024);
    REQUIRE(plain != NULL);
    size_t n = 0;
    int got;
    while ((got = gzread(gz, plain + n, (unsigned)(len + 1024 - n))) > 0)
        n += (size_t)got;
    CHECK_EQ(got, 0);
    CHECK_EQ(gzclose(gz), Z_OK);
    CHECK_EQ(n, len);
    CHECK(n == len && memcmp(plain, text, len) == 0);
    free(plain);
    free(text);
    strobe_result_free(r);
}

static char last_log[1024];
static void capture_log(strobe_log_level level, const char *msg, void *ctx) {
    (void)level;
    (void)ctx;
    snprintf(last_log, sizeof last_log, "%s", msg);
}

static void test_save_errors(void) {
    strobe_result *r = build_sample();
    CHECK_EQ(strobe_result_save(NULL, OUT "/x.json"), STROBE_EINVAL);
    CHECK_EQ(strobe_result_save(r, NULL), STROBE_EINVAL);
    CHECK_EQ(strobe_result_save(r, ""), STROBE_EINVAL);

    /* A directory that does not exist: no file, nothing saved, and the log names the path and
     * the system's reason (not a generic "input/output error"). */
    strobe_set_log_fn(capture_log, NULL);
    last_log[0] = '\0';
    CHECK_EQ(strobe_result_save(r, OUT "/no/such/dir/t.json"), STROBE_ESYS);
    CHECK(!exists(OUT "/no"));
    CHECK_EQ(r->saved, 0);
    CHECK(strstr(last_log, OUT "/no/such/dir/t.json") != NULL);
    CHECK(strstr(last_log, strerror(ENOENT)) != NULL);
    if (strstr(last_log, strerror(ENOENT)) == NULL) fprintf(stderr, "log: %s\n", last_log);
    strobe_set_log_fn(NULL, NULL);
    /* errno holds the system's reason for the caller's message (result.h). */
    errno = 0;
    CHECK_EQ(strobe_result_save(r, OUT "/no/such/dir/t.json"), STROBE_ESYS);
    CHECK_EQ(errno, ENOENT);
    strobe_writer *w = NULL;
    errno = 0;
    CHECK_EQ(strobe_writer_open(&w, OUT "/no/such/dir/t.pftrace", NULL), STROBE_ESYS);
    CHECK_EQ(errno, ENOENT);

    /* A full disk, on a device that works as /dev/full does (made here, so that a save that
     * renamed over its path would replace this node, not /dev/full): written in place, the
     * device stays, and errno says ENOSPC. mknod needs privileges: skipped without them. */
    const char *full = OUT "/full_device.json";
    unlink(full);
    if (mknod(full, S_IFCHR | 0666, makedev(1, 7)) == 0) {
        strobe_result *r3 = build_sample();
        errno = 0;
        CHECK_EQ(strobe_result_save(r3, full), STROBE_EIO);
        CHECK_EQ(errno, ENOSPC);
        struct stat fs;
        CHECK(stat(full, &fs) == 0 && S_ISCHR(fs.st_mode));
        CHECK_EQ(count_prefixed(OUT, "full_device.json.tmp."), 0);
        errno = 0;
        CHECK_EQ(strobe_writer_open(&w, full, NULL), 0);
        CHECK_EQ(strobe_writer_close(w), STROBE_EIO);
        CHECK_EQ(errno, ENOSPC);
        CHECK(stat(full, &fs) == 0 && S_ISCHR(fs.st_mode));
        /* /dev/null takes everything: a save there succeeds and leaves it a device. */
        unlink(full);
        CHECK(mknod(full, S_IFCHR | 0666, makedev(1, 3)) == 0);
        CHECK_EQ(strobe_result_save(r3, full), 0);
        CHECK(stat(full, &fs) == 0 && S_ISCHR(fs.st_mode));
        unlink(full);
        strobe_result_free(r3);
    } else {
        printf("full device: mknod: %s; not checked\n", strerror(errno));
    }

    /* File names up to NAME_MAX bytes save: the temporary name must fit NAME_MAX too. */
    for (size_t len = 240; len <= 255; len += 5) {
        char name[600];
        int k = snprintf(name, sizeof name, "%s/", OUT);
        for (size_t i = 0; i < len - 5; i++)
            name[k++] = (char)('a' + i % 26);
        memcpy(name + k, ".json", 6);
        strobe_result *r2 = build_sample();
        int rc = strobe_result_save(r2, name);
        CHECK_EQ(rc, 0);
        CHECK(exists(name));
        unlink(name);
        strobe_result_free(r2);
    }

    /* The target is a directory: the rename fails after the whole trace was written. The
     * directory stays, and the temporary file is gone. */
    const char *dir = OUT "/existing_dir";
    mkdir(dir, 0755);
    CHECK_EQ(strobe_result_save(r, dir), STROBE_ESYS);
    mkdir(OUT "/existing_dir2.gz", 0755);
    CHECK_EQ(strobe_result_save(r, OUT "/existing_dir2.gz"), STROBE_ESYS);
    struct stat st;
    CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK_EQ(count_prefixed(OUT, "existing_dir.tmp."), 0);
    CHECK_EQ(count_prefixed(OUT, "existing_dir2.gz.tmp."), 0);
    CHECK_EQ(r->saved, 0);

    /* After failures the result still saves. */
    CHECK_EQ(strobe_result_save(r, OUT "/after_errors.json"), 0);
    CHECK_EQ(strobe_result_save(r, OUT "/after_errors.json"), STROBE_EALREADY);
    CHECK_EQ(count_prefixed(OUT, "after_errors.json.tmp."), 0);
    strobe_result_free(r);
}

/* Write errors are caught, in plain and in gzip output: /dev/full fails every write with ENOSPC. */
static void test_sink_errors(void) {
    static char block[1 << 16];
    memset(block, 'x', sizeof block);
    for (int level = 0; level <= 1; level++) {
        int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            fprintf(stderr, "no /dev/full: sink error test skipped\n");
            return;
        }
        strobe__sink s;
        REQUIRE(strobe__sink_open_fd(&s, fd, level) == 0);
        /* Small writes stay buffered: the error shows at the latest when closing. */
        CHECK_EQ(strobe__sink_write(&s, "{}", 2), 0);
        CHECK_EQ(strobe__sink_close(&s), STROBE_EIO);

        fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
        REQUIRE(fd >= 0);
        REQUIRE(strobe__sink_open_fd(&s, fd, level) == 0);
        int rc = 0;
        for (int i = 0; i < 64 && rc == 0; i++)
            rc = strobe__sink_write(&s, block, sizeof block);
        /* zlib compresses 4 MiB of 'x' into very little: only gzclose() may see the error. */
        if (level == 0) CHECK_EQ(rc, STROBE_EIO);
        CHECK(strobe__sink_reserve(&s, 1) == NULL || level != 0);
        CHECK_EQ(strobe__sink_close(&s), STROBE_EIO);
    }

    /* A write larger than the buffer goes straight through, in order. */
    const char *path = OUT "/sink_big.bin";
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    strobe__sink s;
    REQUIRE(strobe__sink_open_fd(&s, fd, 0) == 0);
    size_t big = 2 * STROBE__SINK_BUFFER + 7;
    char *data = malloc(big);
    REQUIRE(data != NULL);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)('a' + i % 26);
    CHECK_EQ(strobe__sink_write(&s, "<", 1), 0);
    CHECK_EQ(strobe__sink_write(&s, data, big), 0);
    CHECK_EQ(strobe__sink_write(&s, ">", 1), 0);
    CHECK_EQ(s.total, big + 2);
    CHECK_EQ(strobe__sink_close(&s), 0);
    size_t len;
    char *back = read_file(path, &len);
    REQUIRE(back != NULL);
    CHECK_EQ(len, big + 2);
    CHECK(len == big + 2 && back[0] == '<' && memcmp(back + 1, data, big) == 0 &&
          back[big + 1] == '>');
    free(back);
    free(data);
}

static void test_writer_table(void) {
    CHECK(strobe__writer_for_path("t.json") == &strobe__json_writer);
    CHECK(strobe__writer_for_path("t.json.gz") == &strobe__json_writer);
    CHECK(strobe__writer_for_path("t.pt.trace.json") == &strobe__json_writer);
    CHECK_STR(strobe__json_writer.name, "json");
}

int main(void) {
    mkdir(STROBE_TEST_OUT_DIR, 0755);
    mkdir(OUT, 0755);
    test_ts();
    test_double();
    test_escape();
    test_golden();
    test_structure();
    test_gzip();
    test_save_errors();
    test_sink_errors();
    test_writer_table();
    return check_result();
}
