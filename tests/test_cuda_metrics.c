/* test_cuda_metrics.c: cuda_metrics (CUPTI range-profiler metrics per kernel) against the
 * stand-ins for libcuda.so.1 and CUPTI (tests/fake_cuda/), without a GPU: the order of the
 * profiler calls, the values on the right kernels (by launch order, on the profiled context
 * only), unknown metric names (EINVAL, named), a CUPTI without the range profiler and an
 * unsupported device (ENOTSUP, with the reason), a mismatch between ranges and kernels (a
 * warning, no values), kernels that CUPTI writes without timestamps under kernel replay (they
 * take their launch's span, marked, and keep their metrics), and that nothing stays set up after
 * a session or a failed start.
 * argv: the stand-in libcupti.so, the one without the range profiler. LD_LIBRARY_PATH (set by
 * CTest) finds the stand-in libcuda.so.1. */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>

#include "core/device.h"
#include "devices/cuda/cupti_metrics.h"
#include "result_check.h"
#include "strobe/backend.h"

extern const strobe__device_backend strobe__cuda_backend;
static const strobe__device_backend *B = &strobe__cuda_backend;

static const char *(*fake_calls)(void);
static void (*fake_reset)(void);
static int (*fake_live)(void);
static int (*fake_primary_refs)(void);
static void (*fake_mark)(void);

static char warnings[8][400];
static int nwarn;
static int add_warning(void *ctx, const char *line) {
    (void)ctx;
    if (nwarn < 8) snprintf(warnings[nwarn++], sizeof warnings[0], "%s", line);
    return 0;
}

static char last_error[512];
static void log_sink(strobe_log_level level, const char *msg, void *ctx) {
    (void)ctx;
    if (level >= STROBE_LOG_ERROR) snprintf(last_error, sizeof last_error, "%s", msg);
}

/* 1 when the calls logged since the reset contain `want` (lines) in that order, contiguously. */
static int calls_have(const char *want) {
    int ok = strstr(fake_calls(), want) != NULL;
    if (!ok) fprintf(stderr, "calls:\n%s\nwanted, in order:\n%s\n", fake_calls(), want);
    return ok;
}

static void metrics_config(strobe_config *c, const char *metrics) {
    strobe_config_init(c);
    c->activities = STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA;
    c->cuda_metrics = metrics;
}

/* A session with two metrics through the public API: one "step" range around one launch of the
 * stand-in. @return the well-formed result. */
static strobe_result *metrics_step(void) {
    strobe_config c;
    metrics_config(&c, "sm__cycles_elapsed.avg,smsp__inst_executed.sum");
    REQUIRE(strobe_start(&c) == 0);
    strobe_range_begin("step");
    fake_mark();
    usleep(1000);
    strobe_range_end();
    strobe_result *r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);
    return r;
}

/* The value of `key` among the args made for act `i`, or NULL. */
static const char *arg_of(size_t i, const char *key) {
    size_t n = 0;
    const strobe__cupti_metric_arg *a = strobe__cupti_metrics_args(&n);
    for (size_t k = 0; k < n; k++)
        if (a[k].act == i && strcmp(a[k].key, key) == 0) return a[k].json;
    return NULL;
}

static long find_kernel(const strobe__gpu_batch *b, const char *name) {
    for (size_t i = 0; i < b->act_count; i++)
        if (b->acts[i].kind == STROBE__GPU_KERNEL && strcmp(b->acts[i].name, name) == 0)
            return (long)i;
    return -1;
}

/* The whole sequence, through the backend table: start, stop, the args of each kernel. */
static void test_per_kernel(void) {
    setenv("FAKE_CUPTI_EXTRA_KERNELS", "2", 1);
    setenv("FAKE_CUPTI_OTHER_CTX", "1", 1);
    strobe_config c;
    metrics_config(&c, " sm__cycles_elapsed.avg , smsp__inst_executed.sum");
    char why[300] = "";
    fake_reset();
    int64_t lo = strobe_clock_now_ns();
    int rc = B->start(&c, why, sizeof why);
    CHECK_EQ(rc, 0);
    if (rc) {
        fprintf(stderr, "start: %s\n", why);
        return;
    }
    /* Config image for the metrics (one name at a time, so that a bad one is named), the counter
     * data image initialized before the config is set, and the config set before the start. */
    CHECK(calls_have("cuptiProfilerInitialize\n"
                     "cuptiProfilerDeviceSupported\n"
                     "cuptiDeviceGetChipName\n"
                     "cuptiProfilerGetCounterAvailability\n"
                     "cuptiProfilerGetCounterAvailability\n"
                     "cuptiProfilerHostInitialize\n"
                     "cuptiProfilerHostConfigAddMetrics\n"
                     "cuptiProfilerHostConfigAddMetrics\n"
                     "cuptiProfilerHostGetConfigImageSize\n"
                     "cuptiProfilerHostGetConfigImage\n"
                     "cuptiProfilerHostGetNumOfPasses\n"
                     "cuptiRangeProfilerEnable\n"
                     "cuptiRangeProfilerGetCounterDataSize\n"
                     "cuptiRangeProfilerCounterDataImageInitialize\n"
                     "cuptiRangeProfilerSetConfig\n"
                     "cuptiRangeProfilerStart\n"));
    CHECK_EQ(fake_primary_refs(), 1); /* no current context: device 0's primary one */
    fake_reset();
    usleep(20000);
    int64_t hi = strobe_clock_now_ns();
    strobe__gpu_batch b;
    nwarn = 0;
    CHECK_EQ(B->stop(lo, hi, &b, add_warning, NULL), 0);
    /* Stop, decode, one evaluation per range (three kernels), then everything torn down. */
    CHECK(calls_have("cuptiRangeProfilerStop\n"
                     "cuptiRangeProfilerDecodeData\n"
                     "cuptiRangeProfilerGetCounterDataInfo\n"
                     "cuptiProfilerHostEvaluateToGpuValues\n"
                     "cuptiProfilerHostEvaluateToGpuValues\n"
                     "cuptiProfilerHostEvaluateToGpuValues\n"
                     "cuptiRangeProfilerDisable\n"
                     "cuptiProfilerHostDeinitialize\n"
                     "cuptiProfilerDeInitialize\n"));
    CHECK_EQ(fake_live(), 0);
    CHECK_EQ(fake_primary_refs(), 0);
    for (int i = 0; i < nwarn; i++)
        printf("warning: %s\n", warnings[i]);
    CHECK_EQ(nwarn, 0);
    /* Ranges in launch order: the first kernel (square), then kernel_a, kernel_b; the kernel on
     * the other context gets nothing. Range r, metric j: 1000 (r + 1) + j, + 0.25 for .avg. */
    long sq = find_kernel(&b, "square(float*, int)");
    long ka = find_kernel(&b, "kernel_a"), kb = find_kernel(&b, "kernel_b");
    long other = find_kernel(&b, "kernel_other_ctx");
    REQUIRE(sq >= 0 && ka >= 0 && kb >= 0 && other >= 0);
    CHECK_STR(arg_of((size_t)sq, "sm__cycles_elapsed.avg"), "1000.25");
    CHECK_STR(arg_of((size_t)sq, "smsp__inst_executed.sum"), "1001");
    CHECK_STR(arg_of((size_t)ka, "sm__cycles_elapsed.avg"), "2000.25");
    CHECK_STR(arg_of((size_t)kb, "smsp__inst_executed.sum"), "3001");
    CHECK(arg_of((size_t)other, "sm__cycles_elapsed.avg") == NULL);
    size_t n = 0;
    strobe__cupti_metrics_args(&n);
    CHECK_EQ(n, 6);
    CHECK_EQ(b.arg_count, 6);
    B->release();
    strobe__cupti_metrics_args(&n);
    CHECK_EQ(n, 0);
    unsetenv("FAKE_CUPTI_EXTRA_KERNELS");
    unsetenv("FAKE_CUPTI_OTHER_CTX");
}

/* The API call with correlation id `corr` (the runtime's launch), or -1. */
static long find_launch(const strobe__gpu_batch *b, uint32_t corr) {
    for (size_t i = 0; i < b->act_count; i++)
        if (b->acts[i].kind == STROBE__GPU_RUNTIME && b->acts[i].correlation == corr)
            return (long)i;
    return -1;
}

/* The value of the batch's arg `key` on act `i`, or NULL. */
static const char *batch_arg(const strobe__gpu_batch *b, size_t i, const char *key) {
    for (size_t k = 0; k < b->arg_count; k++)
        if (b->args[k].act == i && strcmp(b->args[k].key, key) == 0) return b->args[k].json;
    return NULL;
}

/* Kernel replay as CUPTI 2025.3 does it on an H100: the replayed kernels' records come with
 * start = end = 0 (right correlation id and context). Each kernel is kept, inside the window,
 * with its launch call's span (the launch blocks while the kernel is replayed) and an arg that
 * says so, and carries its range's metrics: ranges in launch order, matched by correlation id
 * (the records come in another order). With CUPTI's clock (calibrated) as with strobe's. With
 * lost_launch, kernel_b's launch record is missing: kernel_b is left out (outside the window,
 * with a warning), and the others still get their ranges. */
static void replay_batch(int calibrated, int lost_launch) {
    if (calibrated) setenv("FAKE_CUPTI_NO_TSCB", "1", 1);
    setenv("FAKE_CUPTI_REPLAY_UNTIMED", lost_launch ? "2" : "1", 1);
    strobe_config c;
    metrics_config(&c, "sm__cycles_elapsed.avg,smsp__inst_executed.sum");
    char why[300] = "";
    int64_t lo = strobe_clock_now_ns();
    REQUIRE(B->start(&c, why, sizeof why) == 0);
    usleep(20000);
    int64_t hi = strobe_clock_now_ns();
    strobe__gpu_batch b;
    nwarn = 0;
    CHECK_EQ(B->stop(lo, hi, &b, add_warning, NULL), 0);
    CHECK_STR(b.clock_method, calibrated ? "calibrated" : "callback");
    for (int i = 0; i < nwarn; i++)
        printf("warning: %s\n", warnings[i]);
    if (lost_launch) {
        REQUIRE(nwarn == 1);
        CHECK(strstr(warnings[0], "1 kernel came without timestamps") != NULL);
        CHECK(strstr(warnings[0], "without the launch call") != NULL);
    } else {
        CHECK_EQ(nwarn, 0);
    }
    /* The kernel from before the window, and kernel_b when its launch is lost. */
    CHECK_EQ(b.outside_window, lost_launch ? 2 : 1);
    static const struct {
        const char *name;
        uint32_t corr;
        const char *avg, *sum;
    } want[] = {{"square(float*, int)", 1, "1000.25", "1001"},
                {"kernel_a", 201, "2000.25", "2001"},
                {"kernel_b", 202, "3000.25", "3001"}};
    size_t nwant = lost_launch ? 2 : 3;
    for (size_t w = 0; w < nwant; w++) {
        long k = find_kernel(&b, want[w].name), l = find_launch(&b, want[w].corr);
        if (k < 0 || l < 0) fprintf(stderr, "kernel %s or its launch missing\n", want[w].name);
        REQUIRE(k >= 0 && l >= 0);
        const strobe__gpu_act *ka = &b.acts[k], *la = &b.acts[l];
        CHECK_EQ(ka->correlation, want[w].corr);
        CHECK_EQ(ka->start_ns, la->start_ns);
        CHECK_EQ(ka->end_ns, la->end_ns);
        CHECK(ka->start_ns >= lo && ka->end_ns <= hi);
        CHECK_EQ(ka->queued_ns, -1);
        CHECK_STR(batch_arg(&b, (size_t)k, "timestamps"), "\"launch (kernel replay)\"");
        CHECK_STR(batch_arg(&b, (size_t)k, "sm__cycles_elapsed.avg"), want[w].avg);
        CHECK_STR(batch_arg(&b, (size_t)k, "smsp__inst_executed.sum"), want[w].sum);
    }
    if (lost_launch) CHECK_EQ(find_kernel(&b, "kernel_b"), -1);
    CHECK_EQ(b.arg_count, 3 * nwant); /* two metrics and the marker on each kernel kept */
    for (size_t i = 1; i < b.arg_count; i++)
        CHECK(b.args[i - 1].act <= b.args[i].act); /* in act order, as the merge walks them */
    B->release();
    unsetenv("FAKE_CUPTI_NO_TSCB");
}

static void test_replay_untimed(void) {
    setenv("FAKE_CUPTI_EXTRA_KERNELS", "2", 1);
    replay_batch(0, 0);
    replay_batch(1, 0);
    replay_batch(0, 1);
    unsetenv("FAKE_CUPTI_EXTRA_KERNELS");

    setenv("FAKE_CUPTI_REPLAY_UNTIMED", "1", 1);
    /* Through the public API: the kernel event has the launch's span, the marker and the
     * metrics, and nothing is counted outside the window but the kernel from before it. */
    strobe_result *r = metrics_step();
    const strobe_event *ev = strobe_result_events(r);
    long k = -1, l = -1;
    for (size_t i = 0; i < strobe_result_event_count(r); i++) {
        if (strcmp(ev[i].category, "kernel") == 0) k = (long)i;
        if (strcmp(ev[i].category, "cuda_runtime") == 0 &&
            strcmp(ev[i].name, "cudaLaunchKernel") == 0)
            l = (long)i;
    }
    REQUIRE(k >= 0 && l >= 0);
    CHECK_EQ(ev[k].start_ns, ev[l].start_ns);
    CHECK_EQ(ev[k].end_ns, ev[l].end_ns);
    CHECK_STR(strobe_event_arg(r, (size_t)k, "timestamps"), "\"launch (kernel replay)\"");
    CHECK_STR(strobe_event_arg(r, (size_t)k, "sm__cycles_elapsed.avg"), "1000.25");
    CHECK_STR(strobe_event_arg(r, (size_t)k, "smsp__inst_executed.sum"), "1001");
    CHECK_EQ(strobe_result_stats(r)->cuda_outside_window, 1);
    CHECK_EQ(strobe_result_warning_count(r), 0);
    strobe_result_free(r);
    CHECK_EQ(fake_live(), 0);
    unsetenv("FAKE_CUPTI_REPLAY_UNTIMED");
}

/* Refusals at start: each fails the start with the reason, and leaves nothing set up. */
static void test_refusals(void) {
    strobe_config c;
    char why[300] = "";
    metrics_config(&c, "sm__cycles_elapsed.avg,bogus_metric,smsp__inst_executed.sum");
    fake_reset();
    CHECK_EQ(B->start(&c, why, sizeof why), STROBE_EINVAL);
    printf("unknown metric: %s\n", why);
    CHECK(strstr(why, "\"bogus_metric\"") != NULL);
    CHECK(calls_have("cuptiProfilerHostDeinitialize\ncuptiProfilerDeInitialize\n"));
    CHECK_EQ(fake_live(), 0);
    CHECK_EQ(fake_primary_refs(), 0);

    metrics_config(&c, "sm__cycles_elapsed.avg");
    setenv("FAKE_CUPTI_PROFILER_UNSUPPORTED", "1", 1);
    CHECK_EQ(B->start(&c, why, sizeof why), STROBE_ENOTSUP);
    printf("unsupported device: %s\n", why);
    CHECK(strstr(why, "compute capability") != NULL);
    CHECK(strstr(why, "not supported") != NULL);
    CHECK_EQ(fake_live(), 0);
    unsetenv("FAKE_CUPTI_PROFILER_UNSUPPORTED");

    setenv("FAKE_CUPTI_PROFILER_PRIVILEGES", "1", 1);
    CHECK_EQ(B->start(&c, why, sizeof why), STROBE_ENOTSUP);
    printf("no privileges: %s\n", why);
    CHECK(strstr(why, "administrators") != NULL);
    CHECK_EQ(fake_live(), 0);
    CHECK_EQ(fake_primary_refs(), 0);
    unsetenv("FAKE_CUPTI_PROFILER_PRIVILEGES");

    /* After the refusals, a session with metrics works. */
    CHECK_EQ(B->start(&c, why, sizeof why), 0);
    strobe__gpu_batch b;
    CHECK_EQ(B->stop(0, INT64_MAX, &b, NULL, NULL), 0);
    long sq = find_kernel(&b, "square(float*, int)");
    REQUIRE(sq >= 0);
    CHECK_STR(arg_of((size_t)sq, "sm__cycles_elapsed.avg"), "1000.25");
    B->release();
    CHECK_EQ(fake_live(), 0);
}

/* More ranges than kernel records: the values are left out, with a warning. */
static void test_mismatch(void) {
    setenv("FAKE_CUPTI_RANGE_SKEW", "1", 1);
    strobe_config c;
    metrics_config(&c, "sm__cycles_elapsed.avg");
    char why[300] = "";
    REQUIRE(B->start(&c, why, sizeof why) == 0);
    strobe__gpu_batch b;
    nwarn = 0;
    CHECK_EQ(B->stop(0, INT64_MAX, &b, add_warning, NULL), 0);
    size_t n = 1;
    strobe__cupti_metrics_args(&n);
    CHECK_EQ(n, 0);
    REQUIRE(nwarn == 1);
    printf("mismatch: %s\n", warnings[0]);
    CHECK(strstr(warnings[0], "2 kernel ranges measured for 1 kernel records") != NULL);
    B->release();
    unsetenv("FAKE_CUPTI_RANGE_SKEW");
}

/* Config errors, through strobe_start: the same on every machine. */
static void test_config(void) {
    strobe_config c;
    metrics_config(&c, "sm__cycles_elapsed.avg,,smsp__inst_executed.sum");
    last_error[0] = '\0';
    CHECK_EQ(strobe_start(&c), STROBE_EINVAL);
    printf("error: %s\n", last_error);
    CHECK(strstr(last_error, "empty metric name") != NULL);
    metrics_config(&c, "sm__cycles_elapsed.avg");
    c.cuda_flags = STROBE_CUDA_METRICS_PER_RANGE;
    CHECK_EQ(strobe_start(&c), STROBE_ENOTSUP);
    printf("error: %s\n", last_error);
    CHECK(strstr(last_error, "per range") != NULL);
    c.cuda_metrics = NULL;
    CHECK_EQ(strobe_start(&c), STROBE_EINVAL);
    printf("error: %s\n", last_error);
    /* An unknown metric fails strobe_start too, with the name in the log. */
    metrics_config(&c, "no_such_metric");
    CHECK_EQ(strobe_start(&c), STROBE_EINVAL);
    printf("error: %s\n", last_error);
    CHECK(strstr(last_error, "\"no_such_metric\"") != NULL);
}

/* Through the public API: the values end up as args of the kernel event. */
static void test_end_to_end(void) {
    strobe_result *r = metrics_step();
    const strobe_event *ev = strobe_result_events(r);
    long k = -1;
    for (size_t i = 0; i < strobe_result_event_count(r); i++)
        if (strcmp(ev[i].category, "kernel") == 0) k = (long)i;
    REQUIRE(k >= 0);
    for (size_t i = 0; i < strobe_result_warning_count(r); i++)
        printf("warning: %s\n", strobe_result_warning(r, i));
    CHECK_EQ(strobe_result_warning_count(r), 0);
    CHECK_STR(strobe_event_arg(r, (size_t)k, "sm__cycles_elapsed.avg"), "1000.25");
    CHECK_STR(strobe_event_arg(r, (size_t)k, "smsp__inst_executed.sum"), "1001");
    strobe_result_free(r);
    CHECK_EQ(fake_live(), 0);
    CHECK_EQ(fake_primary_refs(), 0);
}

/* A CUPTI without the range profiler (before 12.6). CUPTI stays loaded for the process once
 * opened, so this runs in a child, before the parent loads the full stand-in. */
static void test_old_cupti(const char *norange) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("STROBE_CUPTI_PATH", norange, 1);
        strobe_set_log_fn(log_sink, NULL);
        strobe_config c;
        metrics_config(&c, "sm__cycles_elapsed.avg");
        int rc = strobe_start(&c);
        printf("old CUPTI: %s\n", last_error);
        fflush(stdout);
        int ok = rc == STROBE_ENOTSUP && strstr(last_error, "lacks cuptiProfilerInitialize") &&
                 strstr(last_error, "12.6");
        /* Without metrics, the same CUPTI traces. */
        c.cuda_metrics = NULL;
        ok = ok && strobe_start(&c) == 0;
        strobe_result *r = NULL;
        ok = ok && strobe_stop(&r) == 0 && strobe_result_warning_count(r) == 0;
        strobe_result_free(r);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv) {
    REQUIRE(argc == 3);
    test_old_cupti(argv[2]);
    setenv("STROBE_CUPTI_PATH", argv[1], 1);
    void *fake = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    REQUIRE(fake != NULL && cuda != NULL);
    *(void **)&fake_calls = dlsym(fake, "fake_cupti_calls");
    *(void **)&fake_reset = dlsym(fake, "fake_cupti_reset_calls");
    *(void **)&fake_live = dlsym(fake, "fake_cupti_live");
    *(void **)&fake_mark = dlsym(fake, "fake_cupti_mark_launch");
    *(void **)&fake_primary_refs = dlsym(cuda, "fake_cuda_primary_refs");
    REQUIRE(fake_calls && fake_reset && fake_live && fake_mark && fake_primary_refs);
    strobe_set_log_fn(log_sink, NULL);
    test_per_kernel();
    test_replay_untimed();
    test_refusals();
    test_mismatch();
    test_config();
    test_end_to_end();
    strobe_set_log_fn(NULL, NULL);
    dlclose(cuda);
    dlclose(fake);
    return check_result();
}
