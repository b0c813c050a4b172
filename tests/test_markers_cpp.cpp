// test_markers_cpp.cpp: the C++ half of strobe/markers.h at run time, against the stand-in
// libcuda.so.1: strobe_capture_guard and STROBE_CAPTURE begin a capture for a scope and end it
// (drain, then cuProfilerStop) when the scope closes; a guard that could not begin (a capture
// already running) ends nothing.
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "strobe/strobe.h"

static int failures;
static const char *(*fake_log)(void);
static void (*fake_log_reset)(void);

static void check_log(const char *want, int line) {
    if (strcmp(fake_log(), want) != 0) {
        fprintf(stderr, "line %d: driver calls \"%s\", expected \"%s\"\n", line, fake_log(), want);
        failures++;
    }
}

int main() {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (cuda == nullptr) {
        fprintf(stderr, "cannot load the stand-in libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    *(void **)&fake_log = dlsym(cuda, "fake_cuda_log");
    *(void **)&fake_log_reset = dlsym(cuda, "fake_cuda_log_reset");
    if (!fake_log || !fake_log_reset) return 1;
    fake_log_reset();
    {
        STROBE_CAPTURE(nullptr);
        check_log("cuProfilerStart;", __LINE__);
        if (!strobe_is_capturing()) failures++;
        strobe_capture_guard inner(nullptr); // nested: refused, and its destructor ends nothing
        if (inner.status() != STROBE_EBUSY) {
            fprintf(stderr, "nested guard: %d, expected %d\n", inner.status(), STROBE_EBUSY);
            failures++;
        }
    }
    check_log("cuProfilerStart;cuCtxSynchronize;cuProfilerStop;", __LINE__);
    if (strobe_is_capturing()) failures++;
    fake_log_reset();
    {
        strobe_capture_guard g(nullptr);
        if (g.status() != 0) failures++;
    }
    check_log("cuProfilerStart;cuCtxSynchronize;cuProfilerStop;", __LINE__);
    fprintf(stderr, failures ? "test_markers_cpp: FAILED\n" : "test_markers_cpp: ok\n");
    return failures ? 1 : 0;
}
