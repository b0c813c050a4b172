/* test_cuda_missing.c: CUDA requested where it cannot be traced. The session goes on with the
 * CPU and says why in a warning; bad CUDA config values fail the start, the same way on every
 * machine (the config is checked before anything is loaded). Built with and without the CUPTI
 * headers. */
#include <dlfcn.h>
#include <stdlib.h>

#include "result_check.h"

/* The last error line logged, for the messages that come with a failed start. */
static char last_error[512];
static void log_sink(strobe_log_level level, const char *msg, void *ctx) {
    (void)ctx;
    if (level >= STROBE_LOG_ERROR) snprintf(last_error, sizeof last_error, "%s", msg);
}

/* Lines logged that say a device is not traced: one per condition. */
static int not_traced_lines;
static void count_sink(strobe_log_level level, const char *msg, void *ctx) {
    (void)level;
    (void)ctx;
    if (strstr(msg, "not traced") != NULL) not_traced_lines++;
}

static int have_driver(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (h == NULL) h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return h != NULL;
}

/* The warning about CUDA, or NULL. */
static const char *cuda_warning(const strobe_result *r) {
    for (size_t i = 0; i < strobe_result_warning_count(r); i++) {
        const char *w = strobe_result_warning(r, i);
        if (strstr(w, "CUDA") != NULL) return w;
    }
    return NULL;
}

/* Starts CPU|CUDA, records two ranges, stops. @return the result. */
static strobe_result *cpu_and_cuda(void) {
    strobe_config c;
    strobe_config_init(&c);
    c.activities = STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA;
    int rc = strobe_start(&c);
    CHECK_EQ(rc, 0);
    if (rc != 0) exit(1);
    STROBE_RANGE_BEGIN("outer");
    STROBE_OP("inner");
    STROBE_RANGE_END();
    return stop_or_die();
}

static void test_cupti_path_missing(void) {
    setenv("STROBE_CUPTI_PATH", "/nonexistent/strobe-test/libcupti.so", 1);
    strobe_set_log_fn(count_sink, NULL);
    not_traced_lines = 0;
    strobe_result *r = cpu_and_cuda();
    strobe_set_log_fn(NULL, NULL);
    CHECK_EQ(check_wellformed(r), 0);
    CHECK_EQ(count_named(r, "outer"), 1);
    CHECK_EQ(count_named(r, "inner"), 1);
    const char *w = cuda_warning(r);
    if (w == NULL && have_driver()) {
        /* CUPTI was found on the default path after the missing one, and a driver is here. */
        printf("a CUDA driver is present and CUPTI was found elsewhere: CUDA was traced\n");
    } else {
        REQUIRE(w != NULL);
        printf("warning: %s\n", w);
        CHECK(strstr(w, "not traced: ") != NULL);
        /* A reason follows. */
        const char *why = strstr(w, "not traced: ");
        CHECK(why != NULL && strlen(why) > strlen("not traced: ") + 5);
        /* The condition is logged once, as it is warned once. */
        CHECK_EQ(not_traced_lines, 1);
    }
    const strobe_stats *st = strobe_result_stats(r);
    CHECK_EQ(st->cuda_dropped_records, 0);
    strobe_result_free(r);
    unsetenv("STROBE_CUPTI_PATH");
}

static void test_default_search(void) {
    if (have_driver()) {
        printf("a CUDA driver (libcuda.so.1) is present: the no-driver warning is not checked\n");
        return;
    }
    strobe_result *r = cpu_and_cuda();
    const char *w = cuda_warning(r);
    REQUIRE(w != NULL);
    printf("warning: %s\n", w);
#if STROBE_HAVE_CUPTI_HEADERS
    CHECK(strstr(w, "no CUDA driver (libcuda.so.1 not found)") != NULL);
#else
    CHECK(strstr(w, "without the CUPTI headers") != NULL);
#endif
    CHECK_EQ(count_named(r, "outer"), 1);
    strobe_result_free(r);
    /* A second session in the same process behaves the same. */
    r = cpu_and_cuda();
    CHECK(cuda_warning(r) != NULL);
    CHECK_EQ(count_named(r, "inner"), 1);
    strobe_result_free(r);
}

static void test_bad_config(void) {
    strobe_set_log_fn(log_sink, NULL);
    strobe_config c;
    strobe_config_init(&c);
    c.activities = STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA;
    CHECK_EQ(c.cuda_buffer_bytes, (size_t)64 << 20);

    c.cuda_buffer_bytes = ((size_t)1 << 20) - 8;
    last_error[0] = '\0';
    CHECK_EQ(strobe_start(&c), STROBE_EINVAL);
    printf("error: %s\n", last_error);
    CHECK(strstr(last_error, "cuda_buffer_bytes") != NULL);
    /* Not checked where CUDA is not requested. */
    c.activities = STROBE_ACTIVITY_CPU;
    CHECK_EQ(strobe_start(&c), 0);
    strobe_result *r = stop_or_die();
    CHECK(cuda_warning(r) == NULL);
    strobe_result_free(r);

    /* The config is checked before the driver: the same error with or without a GPU. */
    strobe_config_init(&c);
    c.activities = STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA;
    c.cuda_metrics = "sm__cycles_elapsed.avg,";
    last_error[0] = '\0';
    CHECK_EQ(strobe_start(&c), STROBE_EINVAL);
    printf("error: %s\n", last_error);
    CHECK(strstr(last_error, "cuda_metrics") != NULL);
    CHECK(strstr(last_error, "empty metric name") != NULL);
    /* Both wrong: the first checked wins, whatever the machine. */
    c.cuda_buffer_bytes = 4096;
    CHECK_EQ(strobe_start(&c), STROBE_EINVAL);
    CHECK(strstr(last_error, "empty metric name") != NULL);
    /* Per range is not supported, on any machine. */
    strobe_config_init(&c);
    c.activities = STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA;
    c.cuda_metrics = "sm__cycles_elapsed.avg";
    c.cuda_flags = STROBE_CUDA_METRICS_PER_RANGE;
    CHECK_EQ(strobe_start(&c), STROBE_ENOTSUP);
    printf("error: %s\n", last_error);
    CHECK(strstr(last_error, "per range") != NULL);
    strobe_set_log_fn(NULL, NULL);
    /* Metrics are part of CUDA tracing: where CUDA cannot be traced at all, the session goes on
     * with the CPU and the same warning as without metrics. */
    if (!have_driver()) {
        c.cuda_flags = 0;
        CHECK_EQ(strobe_start(&c), 0);
        r = stop_or_die();
        const char *w = cuda_warning(r);
        REQUIRE(w != NULL);
        printf("warning: %s\n", w);
        CHECK(strstr(w, "not traced: ") != NULL);
        strobe_result_free(r);
    }

    /* Exactly 1 MiB is accepted; after the failures, sessions start again. */
    strobe_config_init(&c);
    c.activities = STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA;
    c.cuda_buffer_bytes = (size_t)1 << 20;
    CHECK_EQ(strobe_start(&c), 0);
    r = stop_or_die();
    CHECK_EQ(count_named(r, "outer"), 0);
    strobe_result_free(r);
}

int main(void) {
    test_cupti_path_missing();
    test_default_search();
    test_bad_config();
    return check_result();
}
