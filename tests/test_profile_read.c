/* test_profile_read.c: the trace reader turns CPU profiles in JSON ("Profile" and "ProfileChunk"
 * events, src/reader/profile_rd.h) into "cpu_sample" instants:
 * - a profile as Chrome writes it (a "(root)" node, nodes split over two chunks, 0-based
 *   lineNumber, integer timeDeltas): one instant per sample, on the chunk's pid and tid, at
 *   startTime plus the deltas so far, named after its leaf function, with its "Call stack"
 *   innermost first and its "Line" where the chunk has "lines"; the profile's events themselves
 *   are not handed out, other events are, in order;
 * - a profile as strobe writes it (json_profile.c, from a result with samples) reads back as the
 *   samples it was written from;
 * - malformed chunks (a parent cycle, unknown nodes, members of the wrong type, numbers out of
 *   range, no args, a chunk of a profile never declared) are read without a crash or a hang:
 *   samples of known nodes are kept, the rest left out, and the reader goes on. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "trace_reader.h"

/* The events of JSON text `json`, as "name|cat|pid|tid|ts_ns|Call stack|Line" lines into out. */
static int read_all(const char *json, char *out, size_t cap) {
    strobe_rd *rd = NULL;
    REQUIRE(strobe_rd_open_mem(&rd, json, strlen(json), "test", NULL) == 0);
    strobe_rd_item it;
    int rc, n = 0;
    size_t len = 0;
    out[0] = '\0';
    while ((rc = strobe_rd_next(rd, &it)) > 0) {
        if (it.kind != STROBE_RD_EVENT) continue;
        const strobe_rd_event *e = it.event;
        char stack[256] = "", line[64] = "";
        strobe_rd_value v;
        if (strobe_rd_event_arg(e, "Call stack", &v) == 1)
            (void)strobe_rd_value_str(&v, stack, sizeof stack, NULL);
        if (strobe_rd_event_arg(e, "Line", &v) == 1)
            (void)strobe_rd_value_str(&v, line, sizeof line, NULL);
        int w = snprintf(out + len, cap - len, "%.*s|%.*s|%lld|%lld|%lld|%s|%s\n", (int)e->name.len,
                         e->name.s ? e->name.s : "", (int)e->cat.len, e->cat.s ? e->cat.s : "",
                         (long long)e->pid.num, (long long)e->tid.num, (long long)e->ts_ns, stack,
                         line);
        REQUIRE(w > 0 && (size_t)w < cap - len);
        len += (size_t)w;
        n++;
    }
    CHECK_EQ(rc, 0);
    strobe_rd_close(rd);
    return n;
}

static void chrome_profile(void) {
    static const char json[] =
        "{\"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op\", \"pid\": 7, \"tid\": 8, \"ts\": "
        "1000,"
        " \"dur\": 600},"
        "{\"ph\": \"P\", \"name\": \"Profile\", \"id\": \"0x2\", \"pid\": 7, \"tid\": 8, \"ts\": "
        "1000,"
        " \"args\": {\"data\": {\"startTime\": 1000}}},"
        "{\"ph\": \"P\", \"name\": \"ProfileChunk\", \"id\": \"0x2\", \"pid\": 7, \"tid\": 8, "
        "\"ts\": "
        "1200, \"args\": {\"data\": {\"cpuProfile\": {\"nodes\": ["
        "{\"id\": 1, \"callFrame\": {\"functionName\": \"(root)\", \"url\": \"\", \"lineNumber\": "
        "-1}},"
        "{\"id\": 2, \"parent\": 1, \"callFrame\": {\"functionName\": \"main\", \"url\": "
        "\"app.js\","
        " \"scriptId\": 3, \"lineNumber\": 9}},"
        "{\"id\": 3, \"parent\": 2, \"callFrame\": {\"functionName\": \"work\", \"url\": \"w.c\","
        " \"lineNumber\": -1}}],"
        " \"samples\": [3, 2], \"lines\": [41, 0]}, \"timeDeltas\": [100, 50]}}},"
        "{\"ph\": \"i\", \"s\": \"t\", \"cat\": \"x\", \"name\": \"mark\", \"pid\": 7, \"tid\": 8, "
        "\"ts\": 1300},"
        "{\"ph\": \"P\", \"name\": \"ProfileChunk\", \"id\": \"0x2\", \"pid\": 7, \"tid\": 8, "
        "\"ts\": "
        "1500, \"args\": {\"data\": {\"cpuProfile\": {\"nodes\": ["
        "{\"id\": 4, \"parent\": 3, \"callFrame\": {\"functionName\": \"in\\\"ner\"}}],"
        " \"samples\": [4]}, \"timeDeltas\": [250]}}}"
        "]}";
    char out[4096];
    int n = read_all(json, out, sizeof out);
    CHECK_EQ(n, 5);
    CHECK_STR(out, "op|cpu_op|7|8|1000000||\n"
                   "work|cpu_sample|7|8|1100000|work (w.c);main (app.js:10)|w.c:41\n"
                   "main|cpu_sample|7|8|1150000|main (app.js:10)|\n"
                   "mark|x|7|8|1300000||\n"
                   "in\"ner|cpu_sample|7|8|1400000|in\"ner;work (w.c);main (app.js:10)|\n");
}

static void malformed(void) {
    static const char json[] =
        "{\"traceEvents\": ["
        /* A parent cycle (1 -> 1), a cycle of two (2 -> 3 -> 2), an unknown and a negative node. */
        "{\"ph\": \"P\", \"name\": \"ProfileChunk\", \"id\": 1, \"pid\": 7, \"tid\": 8, \"ts\": 1,"
        " \"args\": {\"data\": {\"cpuProfile\": {\"nodes\": ["
        "{\"id\": 1, \"parent\": 1, \"callFrame\": {\"functionName\": \"loop\"}},"
        "{\"id\": 2, \"parent\": 3, \"callFrame\": {\"functionName\": \"a\"}},"
        "{\"id\": 3, \"parent\": 2, \"callFrame\": {\"functionName\": \"b\"}}],"
        " \"samples\": [1, 99, -5]}, \"timeDeltas\": [1]}}},"
        /* Members of the wrong type. */
        "{\"ph\": \"P\", \"name\": \"ProfileChunk\", \"id\": 1, \"pid\": 7, \"tid\": 8, \"ts\": 1,"
        " \"args\": {\"data\": {\"cpuProfile\": {\"nodes\": \"x\", \"samples\": [1]},"
        " \"timeDeltas\": \"y\"}}},"
        "{\"ph\": \"P\", \"name\": \"ProfileChunk\", \"id\": 1, \"pid\": 7, \"tid\": 8, \"ts\": 1,"
        " \"args\": {\"data\": [1, 2]}},"
        "{\"ph\": \"P\", \"name\": \"ProfileChunk\", \"id\": 1, \"pid\": 7, \"tid\": 8, \"ts\": 1,"
        " \"args\": 5},"
        "{\"ph\": \"P\", \"name\": \"ProfileChunk\", \"pid\": 7, \"tid\": 8, \"ts\": 1},"
        /* Numbers out of range: the sample's delta is refused, the rest of the chunk left out. */
        "{\"ph\": \"P\", \"name\": \"ProfileChunk\", \"id\": 9, \"pid\": 7, \"tid\": 8, \"ts\": 5,"
        " \"args\": {\"data\": {\"cpuProfile\": {\"nodes\": [{\"id\": 5, \"callFrame\":"
        " {\"functionName\": \"c\", \"lineNumber\": 1e400}}], \"samples\": [5, \"z\"]},"
        " \"timeDeltas\": [1e999]}}},"
        /* Another "P" event: handed out as it is. */
        "{\"ph\": \"P\", \"name\": \"Other\", \"pid\": 7, \"tid\": 8, \"ts\": 1}"
        "]}";
    char out[8192];
    int n = read_all(json, out, sizeof out);
    /* The cycles end at the node count; the unknown and negative nodes have no frame and are
     * left out; the second chunk's sample of the same profile is read; the chunk with numbers
     * out of range keeps the sample read before them, at the chunk's time; "Other" is kept. */
    CHECK_EQ(n, 4);
    CHECK_STR(out, "loop|cpu_sample|7|8|2000|loop;loop;loop;loop|\n"
                   "loop|cpu_sample|7|8|2000|loop;loop;loop;loop|\n"
                   "c|cpu_sample|7|8|5000|c|\n"
                   "Other||7|8|1000||\n");
}

int main(void) {
    chrome_profile();
    malformed();
    return check_result();
}
