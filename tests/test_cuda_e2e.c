/* test_cuda_e2e.c: CUDA tracing through the public API, from strobe_start() to the saved trace,
 * against the stand-ins for libcuda.so.1 and CUPTI (tests/fake_cuda/): the backend, the merge
 * and the writer together. The stand-in reports a cudaLaunchKernel call 1 us after
 * fake_cupti_mark_launch(), its kernel on stream 7, a copy with no launch, and a kernel far
 * before the window. argv[1]: the stand-in libcupti.so (LD_LIBRARY_PATH finds libcuda.so.1).
 * The same session streamed (JSON and .pftrace) puts the device work in the stream file, read
 * back with the trace reader. */
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "check.h"
#include "reader/trace_reader.h"
#include "result_check.h"
#include "strobe/strobe.h"

/* The same operator and launch, streamed to `path`: the stream file holds the operator, the
 * launch inside it on its thread, the kernel on stream 7 with the launch's External id, and a
 * flow pair. (The operator itself was written before the launch's record arrived, so it has no
 * External id, and no gpu_user_annotation span is made: both need the CPU ranges at stop.) */
static void streamed(void (*mark)(void), const char *path) {
    strobe_config c;
    strobe_config_init(&c);
    c.activities = STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA;
    c.stream_path = path;
    REQUIRE(strobe_start(&c) == 0);
    strobe_range_begin("step");
    strobe_range_begin_scope("aten::mm", STROBE_RECORD_SCOPE_FUNCTION);
    mark();
    struct timespec pause = {0, 200000};
    nanosleep(&pause, NULL);
    strobe_range_end();
    strobe_range_end();
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    CHECK_EQ(strobe_result_warning_count(r), 0);
    /* The result keeps the device work (the CPU ranges are only in the file). */
    CHECK(find_named(r, "aten::mm") < 0);
    strobe_result_free(r);

    strobe_rd *rd = NULL;
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    REQUIRE(strobe_rd_open(&rd, path, &opt) == 0);
    strobe_rd_item it;
    int rc, ops = 0, launches = 0, kernels = 0, flow_s = 0, flow_f = 0;
    int64_t op_tid = -1, launch_tid = -2, launch_ext = -1, kernel_ext = -2, op_start = 0,
            op_end = 0, launch_start = -1, launch_end = -1;
    while ((rc = strobe_rd_next(rd, &it)) > 0) {
        if (it.kind != STROBE_RD_EVENT) continue;
        const strobe_rd_event *e = it.event;
        const char *name = e->name.s ? e->name.s : "", *cat = e->cat.s ? e->cat.s : "";
        char ph = e->ph.len == 1 ? e->ph.s[0] : '?';
        strobe_rd_value v;
        int64_t ext = -3;
        if (strobe_rd_event_arg(e, "External id", &v) == 1) strobe_rd_value_int(&v, &ext);
        if (ph == 'X' && strcmp(name, "aten::mm") == 0 && strcmp(cat, "cpu_op") == 0) {
            ops++;
            op_tid = e->tid.num;
            op_start = e->ts_ns;
            op_end = e->ts_ns + e->dur_ns;
        } else if (ph == 'X' && strcmp(cat, "cuda_runtime") == 0 &&
                   strcmp(name, "cudaLaunchKernel") == 0) {
            launches++;
            launch_tid = e->tid.num;
            launch_ext = ext;
            launch_start = e->ts_ns;
            launch_end = e->ts_ns + e->dur_ns;
        } else if (ph == 'X' && strcmp(cat, "kernel") == 0) {
            kernels++;
            kernel_ext = ext;
            CHECK_EQ(e->tid.num, 7);
        } else if (ph == 's' && strcmp(cat, "ac2g") == 0) {
            flow_s++;
        } else if (ph == 'f' && strcmp(cat, "ac2g") == 0) {
            flow_f++;
        }
    }
    if (rc != 0) fprintf(stderr, "%s: %s\n", path, strobe_rd_errmsg(rd));
    CHECK_EQ(rc, 0);
    CHECK(!strobe_rd_get_info(rd)->unterminated);
    strobe_rd_close(rd);
    CHECK_EQ(ops, 1);
    CHECK_EQ(launches, 1);
    CHECK_EQ(kernels, 1);
    CHECK_EQ(flow_s, 1);
    CHECK_EQ(flow_f, 1);
    CHECK_EQ(launch_tid, op_tid);
    CHECK(launch_ext > 0);
    CHECK_EQ(kernel_ext, launch_ext);
    /* The launch lies inside the operator that made it. */
    CHECK(op_start <= launch_start && launch_end <= op_end);
}

static long parent_named(const strobe_result *r, long i, const char *name) {
    const strobe_event *ev = strobe_result_events(r);
    return ev[i].parent != STROBE_NO_EVENT && strcmp(ev[ev[i].parent].name, name) == 0;
}

static long find_cat(const strobe_result *r, const char *cat, const char *name) {
    const strobe_event *ev = strobe_result_events(r);
    for (size_t i = 0; i < strobe_result_event_count(r); i++)
        if (strcmp(ev[i].category, cat) == 0 && (name == NULL || strcmp(ev[i].name, name) == 0))
            return (long)i;
    return -1;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    setenv("STROBE_CUPTI_PATH", argv[1], 1);
    void *fake = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    REQUIRE(fake != NULL);
    void (*mark)(void) = (void (*)(void))dlsym(fake, "fake_cupti_mark_launch");
    REQUIRE(mark != NULL);

    strobe_config c;
    strobe_config_init(&c);
    c.activities = STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA;
    REQUIRE(strobe_start(&c) == 0);
    strobe_range_begin("step");                                         /* a user annotation */
    strobe_range_begin_scope("aten::mm", STROBE_RECORD_SCOPE_FUNCTION); /* the operator */
    mark();
    struct timespec pause = {0, 200000}; /* the launch and its kernel fall inside the range */
    nanosleep(&pause, NULL);
    strobe_range_end();
    strobe_range_end();
    strobe_result *r = stop_or_die();

    for (size_t i = 0; i < strobe_result_warning_count(r); i++)
        printf("warning: %s\n", strobe_result_warning(r, i));
    CHECK_EQ(strobe_result_warning_count(r), 0);
    CHECK_EQ(check_wellformed(r), 0);
    const strobe_event *ev = strobe_result_events(r);
    long launch = find_cat(r, "cuda_runtime", "cudaLaunchKernel");
    long kernel = find_cat(r, "kernel", NULL);
    long op = find_named(r, "aten::mm");
    REQUIRE(launch >= 0 && kernel >= 0 && op >= 0);
    /* The launch is a leaf of the operator that made it, on the same thread. */
    CHECK(parent_named(r, launch, "aten::mm"));
    CHECK_EQ(ev[launch].tid, ev[op].tid);
    /* The kernel is on its stream's track of device 0, after its launch. */
    CHECK_EQ(ev[kernel].device_type, STROBE_DEVICE_CUDA);
    CHECK_EQ(ev[kernel].tid, 7);
    CHECK(ev[kernel].start_ns >= ev[launch].start_ns);
    /* One External id on the operator, the launch and the kernel; one correlation on both. */
    /* ("External id" is the events' correlation_id, which the writer prints under that name.) */
    CHECK(ev[op].correlation_id != 0);
    CHECK_EQ(ev[launch].correlation_id, ev[op].correlation_id);
    CHECK_EQ(ev[kernel].correlation_id, ev[op].correlation_id);
    CHECK_STR(strobe_event_arg(r, (size_t)kernel, "correlation"),
              strobe_event_arg(r, (size_t)launch, "correlation"));
    /* The user annotation covers its kernel on the stream. */
    long ann = find_cat(r, "gpu_user_annotation", "step");
    REQUIRE(ann >= 0);
    CHECK_EQ(ev[ann].tid, 7);
    CHECK(ev[ann].start_ns <= ev[kernel].start_ns && ev[kernel].end_ns <= ev[ann].end_ns);
    /* The kernel stamped long before the window is counted, not shown. */
    CHECK(strobe_result_stats(r)->cuda_outside_window >= 1);

    mkdir(STROBE_TEST_OUT_DIR "/gpu", 0777);
    const char *path = STROBE_TEST_OUT_DIR "/gpu/e2e.json";
    CHECK_EQ(strobe_result_save(r, path), 0);
    FILE *f = fopen(path, "rb");
    REQUIRE(f != NULL);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    CHECK(strstr(text, "\"cat\": \"ac2g\"") != NULL || strstr(text, "\"cat\":\"ac2g\"") != NULL);
    CHECK(strstr(text, "\"deviceProperties\": [{") != NULL ||
          strstr(text, "\"deviceProperties\":[{") != NULL);
    CHECK(strstr(text, "\"GPU 0\"") != NULL);
    char want[64];
    snprintf(want, sizeof want, "\"External id\": %llu",
             (unsigned long long)ev[kernel].correlation_id);
    CHECK(strstr(text, want) != NULL);
    strobe_result_free(r);

    streamed(mark, STROBE_TEST_OUT_DIR "/gpu/e2e_stream.json");
    streamed(mark, STROBE_TEST_OUT_DIR "/gpu/e2e_stream.pftrace");
    return check_result();
}
