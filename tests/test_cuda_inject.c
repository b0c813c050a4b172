/* test_cuda_inject.c: CUDA traced from the driver's injection (CUDA_INJECTION64_PATH naming
 * libstrobe.so, whose InitializeInjection the stand-in libcuda.so.1 calls from the process's
 * first cuInit, as the real driver does): a session that started with the CPU only traces the
 * device from the program's cuInit on. This program links libstrobe.so, so that the library the
 * driver opens is the one holding the session.
 *
 * argv: the stand-in libcupti.so, libstrobe.so, and a case:
 *   late   CPU session, then cuInit: the launch and its kernel are in the result, no warning
 *   none   cuInit with no session: nothing happens; a later CPU session has no device work; a
 *          later CUDA session traces CUDA itself (its own cuInit does not inject again)
 *   busy   another CUPTI client (FAKE_CUPTI_BUSY): a warning, the CPU recorded, no kernel
 *   cuda   a session that starts CUDA itself while the injection is set: its cuInit calls strobe
 *          back under the session lock, which must neither deadlock nor trace twice
 *   own    the program loaded CUPTI before its cuInit (as torch's profiler does): it keeps CUPTI,
 *          a warning says so, the CPU is recorded, no kernel
 * The stand-in CUPTI is opened by the test only after cuInit (but in `own`), as strobe would open
 * it, so that it counts as strobe's. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "strobe/strobe.h"

static const char *cupti_path;
static int (*injections)(void);
static int (*cu_init)(unsigned);

/* The stand-in's "a launch happened" (the library strobe opened, or opens now). */
static void mark(void) {
    void *h = dlopen(cupti_path, RTLD_NOW);
    void (*fn)(void) = h ? (void (*)(void))dlsym(h, "fake_cupti_mark_launch") : NULL;
    REQUIRE(fn != NULL);
    fn();
}

static size_t count_cat(const strobe_result *r, const char *cat, const char *name) {
    const strobe_event *ev = strobe_result_events(r);
    size_t n = 0;
    for (size_t i = 0; i < strobe_result_event_count(r); i++)
        if (strcmp(ev[i].category, cat) == 0 && (name == NULL || strcmp(ev[i].name, name) == 0))
            n++;
    return n;
}

static strobe_result *record(uint32_t activities, int call_init) {
    strobe_config c;
    strobe_config_init(&c);
    c.activities = activities;
    REQUIRE(strobe_start(&c) == 0);
    if (call_init) CHECK_EQ(cu_init(0), 0);
    strobe_range_begin_scope("aten::mm", STROBE_RECORD_SCOPE_FUNCTION);
    mark();
    struct timespec pause = {0, 200000};
    nanosleep(&pause, NULL);
    strobe_range_end();
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    for (size_t i = 0; i < strobe_result_warning_count(r); i++)
        printf("warning: %s\n", strobe_result_warning(r, i));
    return r;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: test_cuda_inject FAKE_CUPTI LIBSTROBE late|none|busy|cuda|own\n");
        return 2;
    }
    const char *mode = argv[3];
    setenv("STROBE_CUPTI_PATH", argv[1], 1);
    setenv("CUDA_INJECTION64_PATH", argv[2], 1);
    if (strcmp(mode, "busy") == 0) setenv("FAKE_CUPTI_BUSY", "1", 1);
    cupti_path = argv[1];
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    REQUIRE(cuda != NULL);
    injections = (int (*)(void))dlsym(cuda, "fake_cuda_injections");
    cu_init = (int (*)(unsigned))dlsym(cuda, "cuInit");
    REQUIRE(injections && cu_init);

    if (strcmp(mode, "late") == 0) {
        strobe_result *r = record(STROBE_ACTIVITY_CPU, 1);
        CHECK_EQ(injections(), 1);
        CHECK_EQ(strobe_result_warning_count(r), 0);
        CHECK_EQ(count_cat(r, "cuda_runtime", "cudaLaunchKernel"), 1);
        CHECK_EQ(count_cat(r, "kernel", NULL), 1);
        CHECK_EQ(count_cat(r, "cpu_op", "aten::mm"), 1);
        strobe_result_free(r);
    } else if (strcmp(mode, "none") == 0) {
        CHECK_EQ(cu_init(0), 0);
        CHECK_EQ(injections(), 1);
        strobe_result *r = record(STROBE_ACTIVITY_CPU, 0);
        CHECK_EQ(count_cat(r, "kernel", NULL), 0);
        CHECK_EQ(count_cat(r, "cpu_op", "aten::mm"), 1);
        strobe_result_free(r);
        r = record(STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA, 0);
        CHECK_EQ(strobe_result_warning_count(r), 0);
        CHECK_EQ(count_cat(r, "kernel", NULL), 1);
        CHECK_EQ(injections(), 1);
        strobe_result_free(r);
    } else if (strcmp(mode, "busy") == 0) {
        strobe_result *r = record(STROBE_ACTIVITY_CPU, 1);
        CHECK_EQ(injections(), 1);
        CHECK_EQ(strobe_result_warning_count(r), 1);
        if (strobe_result_warning_count(r) == 1)
            CHECK(strstr(strobe_result_warning(r, 0), "CUDA activity not traced: another CUPTI "
                                                      "client") != NULL);
        CHECK_EQ(count_cat(r, "kernel", NULL), 0);
        CHECK_EQ(count_cat(r, "cpu_op", "aten::mm"), 1);
        strobe_result_free(r);
    } else if (strcmp(mode, "cuda") == 0) {
        strobe_result *r = record(STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA, 0);
        CHECK_EQ(injections(), 1);
        CHECK_EQ(strobe_result_warning_count(r), 0);
        CHECK_EQ(count_cat(r, "kernel", NULL), 1);
        CHECK_EQ(count_cat(r, "cuda_runtime", "cudaLaunchKernel"), 1);
        strobe_result_free(r);
    } else if (strcmp(mode, "own") == 0) {
        REQUIRE(dlopen(argv[1], RTLD_NOW) != NULL); /* the program's own CUPTI */
        strobe_result *r = record(STROBE_ACTIVITY_CPU, 1);
        CHECK_EQ(injections(), 1);
        CHECK_EQ(strobe_result_warning_count(r), 1);
        if (strobe_result_warning_count(r) == 1)
            CHECK(strstr(strobe_result_warning(r, 0), "the program loads CUPTI itself") != NULL);
        CHECK_EQ(count_cat(r, "kernel", NULL), 0);
        CHECK_EQ(count_cat(r, "cpu_op", "aten::mm"), 1);
        strobe_result_free(r);
    } else {
        fprintf(stderr, "test_cuda_inject: unknown case %s\n", mode);
        return 2;
    }
    return check_result();
}
