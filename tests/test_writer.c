/* test_writer.c: the public event-level writer (strobe/writer.h).
 *
 * 1. The same calls write a JSON and a Perfetto trace that read back (with strobe's reader) as
 *    the same slices, instants, counters, flows and metadata: a process and a thread, an extra
 *    lane of the thread, a device with a stream, nested slices, a slice in two calls with args
 *    given at its end, a NaN counter sample (left out), a flow from a slice to a stream, and the
 *    session's span (which carries the metadata in Perfetto).
 * 2. Bad calls: NULL arguments, reserved metadata keys, invalid JSON, a track that does not exist;
 *    a file in a folder that does not exist; an abandoned or failed writer leaves no file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "trace_reader.h"
#include "strobe/strobe.h"

#ifndef STROBE_TEST_OUT_DIR
#define STROBE_TEST_OUT_DIR "."
#endif
#define OUT_DIR STROBE_TEST_OUT_DIR "/writer"

#define BASE INT64_C(1700000000000000000)

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Writes the sample trace to `path`. */
static void write_sample(const char *path) {
    strobe_writer_options opt;
    strobe_writer_options_init(&opt);
    opt.base_ns = BASE;
    opt.trace_id = "w-1";
    strobe_writer *w = NULL;
    REQUIRE(strobe_writer_open(&w, path, &opt) == 0);
    strobe_writer_track t = {
        .kind = STROBE_TRACK_PROCESS, .pid = 42, .name = "app", .label = "CPU", .sort_index = 42};
    int64_t proc = strobe_writer_add_track(w, &t);
    CHECK_EQ(proc, 0);
    t = (strobe_writer_track){
        .kind = STROBE_TRACK_THREAD, .pid = 42, .tid = 7, .name = "main", .sort_index = 7};
    int64_t th = strobe_writer_add_track(w, &t);
    t = (strobe_writer_track){.kind = STROBE_TRACK_LANE,
                              .pid = 42,
                              .tid = 7,
                              .name = "main (overlaps, lane 2)",
                              .sort_index = 1,
                              .parent = (uint32_t)th};
    int64_t lane = strobe_writer_add_track(w, &t);
    t = (strobe_writer_track){.kind = STROBE_TRACK_DEVICE,
                              .pid = 0,
                              .name = "GPU 0",
                              .label = "GPU 0",
                              .sort_index = 16777216};
    int64_t dev = strobe_writer_add_track(w, &t);
    t = (strobe_writer_track){.kind = STROBE_TRACK_STREAM,
                              .pid = 0,
                              .tid = 7,
                              .name = "stream 7",
                              .sort_index = 7,
                              .parent = (uint32_t)dev};
    int64_t stream = strobe_writer_add_track(w, &t);
    REQUIRE(th > 0 && lane > th && dev > lane && stream > dev);

    const strobe_writer_arg args[] = {
        {.key = "n", .type = STROBE_ARG_INT, .i = -3},
        {.key = "s", .type = STROBE_ARG_STRING, .s = "x\"y", .len = (size_t)-1},
        {.key = "j", .type = STROBE_ARG_JSON, .s = "[1, 2]", .len = (size_t)-1},
    };
    uint64_t flow = 99;
    strobe_writer_event outer = {.track = (uint32_t)th,
                                 .cat = "cpu_op",
                                 .name = "outer",
                                 .ts = BASE + 1000,
                                 .end = BASE + 9000,
                                 .args = args,
                                 .nargs = 3};
    CHECK_EQ(strobe_writer_slice(w, &outer), 0);
    strobe_writer_event inner = {.track = (uint32_t)th,
                                 .cat = "cuda_runtime",
                                 .name = "launch",
                                 .ts = BASE + 2000,
                                 .flow_out = &flow,
                                 .nflow_out = 1};
    CHECK_EQ(strobe_writer_slice_begin(w, &inner), 0);
    strobe_writer_event mark = {
        .track = (uint32_t)th, .cat = "cpu_instant_event", .name = "mark", .ts = BASE + 2500};
    CHECK_EQ(strobe_writer_instant(w, &mark), 0);
    inner.end = BASE + 3000;
    const strobe_writer_arg late = {.key = "late", .type = STROBE_ARG_UINT, .u = 5};
    CHECK_EQ(strobe_writer_slice_end(w, &inner, &late, 1), 0);
    strobe_writer_event over = {.track = (uint32_t)lane,
                                .cat = "cpu_op",
                                .name = "overlapping",
                                .ts = BASE + 8000,
                                .end = BASE + 12000};
    CHECK_EQ(strobe_writer_slice(w, &over), 0);
    strobe_writer_event k = {.track = (uint32_t)stream,
                             .cat = "kernel",
                             .name = "kern",
                             .ts = BASE + 4000,
                             .end = BASE + 6000,
                             .flow_in = &flow,
                             .nflow_in = 1};
    CHECK_EQ(strobe_writer_slice(w, &k), 0);
    strobe_writer_event c = {.track = (uint32_t)th,
                             .cat = "cpu_counter",
                             .name = "depth",
                             .ts = BASE + 5000,
                             .value = 2.5};
    CHECK_EQ(strobe_writer_counter(w, &c), 0);
    c.value = NAN;
    CHECK_EQ(strobe_writer_counter(w, &c), 1);
    t = (strobe_writer_track){.kind = STROBE_TRACK_THREAD, .pid = 42, .tid = 0, .name = "Spans"};
    int64_t spans = strobe_writer_add_track(w, &t);
    REQUIRE(spans > stream);
    strobe_writer_event session = {.track = (uint32_t)spans,
                                   .flags = STROBE_WRITER_SESSION,
                                   .cat = "Trace",
                                   .name = "strobe session",
                                   .ts = BASE,
                                   .end = BASE + 20000};
    CHECK_EQ(strobe_writer_slice(w, &session), 0);
    CHECK_EQ(strobe_writer_set_meta(w, "user key", "{\"a\": 1}"), 0);
    CHECK_EQ(strobe_writer_close(w), 0);
}

typedef struct seen {
    int outer, launch_late, mark, overlapping, kern, counter, user_meta, trace_id, flow;
    int64_t outer_ts, outer_dur;
} seen;

static seen read_back(const char *path) {
    seen s = {0};
    strobe_rd *rd = NULL;
    REQUIRE(strobe_rd_open(&rd, path, NULL) == 0);
    strobe_rd_item it;
    int rc;
    while ((rc = strobe_rd_next(rd, &it)) > 0) {
        if (it.kind == STROBE_RD_META) {
            if (strcmp(it.meta->key.s, "user key") == 0) s.user_meta++;
            if (strcmp(it.meta->key.s, "trace_id") == 0)
                s.trace_id +=
                    it.meta->value.len == 5 && memcmp(it.meta->value.raw, "\"w-1\"", 5) == 0;
            continue;
        }
        const strobe_rd_event *e = it.event;
        CHECK_EQ(e->bad, 0);
        const char *name = e->name.s ? e->name.s : "";
        char ph = e->ph.s ? e->ph.s[0] : '?';
        if (ph == 'X' && strcmp(name, "outer") == 0) {
            s.outer++;
            s.outer_ts = e->ts_ns;
            s.outer_dur = e->dur_ns;
            strobe_rd_value v;
            int64_t n = 0;
            CHECK(strobe_rd_event_arg(e, "n", &v) == 1 && strobe_rd_value_int(&v, &n) == 0);
            CHECK_EQ(n, -3);
        }
        if (ph == 'X' && strcmp(name, "launch") == 0) {
            strobe_rd_value v;
            int64_t n = 0;
            s.launch_late += strobe_rd_event_arg(e, "late", &v) == 1 &&
                             strobe_rd_value_int(&v, &n) == 0 && n == 5;
            CHECK_EQ(e->tid.num, 7);
        }
        if (ph == 'i' && strcmp(name, "mark") == 0) s.mark++;
        if (ph == 'X' && strcmp(name, "overlapping") == 0) {
            s.overlapping++;
            CHECK_EQ(e->tid.num, 7); /* a lane reads back as its thread */
        }
        if (ph == 'X' && strcmp(name, "kern") == 0) {
            s.kern++;
            CHECK_EQ(e->pid.num, 0);
            CHECK_EQ(e->tid.num, 7);
        }
        if (ph == 'C') s.counter++;
        if (ph == 's' || ph == 'f') s.flow++;
    }
    CHECK_EQ(rc, 0);
    strobe_rd_close(rd);
    return s;
}

static void test_formats(void) {
    const char *paths[] = {OUT_DIR "/sample.json", OUT_DIR "/sample.pftrace",
                           OUT_DIR "/sample.json.gz"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        write_sample(paths[i]);
        seen s = read_back(paths[i]);
        CHECK_EQ(s.outer, 1);
        CHECK_EQ(s.outer_ts, 1000);
        CHECK_EQ(s.outer_dur, 8000);
        CHECK_EQ(s.launch_late, 1);
        CHECK_EQ(s.mark, 1);
        CHECK_EQ(s.overlapping, 1);
        CHECK_EQ(s.kern, 1);
        CHECK_EQ(s.counter, 1); /* the NaN sample is left out */
        CHECK_EQ(s.flow, 2);
        CHECK_EQ(s.user_meta, 1);
        CHECK_EQ(s.trace_id, 1);
    }
}

static void test_bad_calls(void) {
    strobe_writer *w = NULL;
    CHECK_EQ(strobe_writer_open(NULL, OUT_DIR "/x.json", NULL), STROBE_EINVAL);
    CHECK_EQ(strobe_writer_open(&w, NULL, NULL), STROBE_EINVAL);
    CHECK_EQ(strobe_writer_open(&w, "", NULL), STROBE_EINVAL);
    strobe_writer_options opt;
    strobe_writer_options_init(&opt);
    opt.format = (strobe_format)7;
    CHECK_EQ(strobe_writer_open(&w, OUT_DIR "/x.json", &opt), STROBE_EINVAL);
    opt.format = STROBE_FORMAT_AUTO;
    opt.struct_size = 4;
    CHECK_EQ(strobe_writer_open(&w, OUT_DIR "/x.json", &opt), STROBE_EINVAL);
    CHECK(w == NULL);
    CHECK(strobe_writer_open(&w, OUT_DIR "/no such folder/x.json", NULL) < 0);
    CHECK(!exists(OUT_DIR "/no such folder"));

    const char *path = OUT_DIR "/bad.json";
    unlink(path);
    REQUIRE(strobe_writer_open(&w, path, NULL) == 0);
    strobe_writer_track t = {.kind = STROBE_TRACK_STREAM, .parent = 3};
    CHECK_EQ(strobe_writer_add_track(w, &t), STROBE_EINVAL); /* no such parent */
    t.kind = (strobe_track_kind)9;
    CHECK_EQ(strobe_writer_add_track(w, &t), STROBE_EINVAL);
    strobe_writer_event e = {.track = 0, .name = "x"};
    CHECK_EQ(strobe_writer_slice(w, &e), STROBE_EINVAL); /* no track yet */
    CHECK_EQ(strobe_writer_slice(w, NULL), STROBE_EINVAL);
    CHECK_EQ(strobe_writer_set_meta(w, "traceEvents", "[]"), STROBE_EINVAL);
    CHECK_EQ(strobe_writer_set_meta(w, "k", "{not json"), STROBE_EINVAL);
    CHECK_EQ(strobe_writer_set_meta(w, NULL, "1"), STROBE_EINVAL);
    CHECK_EQ(strobe_writer_set_meta(w, "strobe", "{\"version\": \"x\"}"), 0);
    /* Nothing is under the final name before close; an abandoned writer leaves no file. */
    CHECK(!exists(path));
    strobe_writer_abort(w);
    CHECK(!exists(path));
    CHECK_EQ(strobe_writer_close(NULL), 0);
    strobe_writer_abort(NULL);
    CHECK_EQ(strobe_writer_add_track(NULL, &t), STROBE_EINVAL);
    CHECK_EQ(strobe_writer_instant(NULL, &e), STROBE_EINVAL);
}

int main(void) {
    mkdir(STROBE_TEST_OUT_DIR, 0755);
    mkdir(OUT_DIR, 0755);
    test_formats();
    test_bad_calls();
    return check_result();
}
