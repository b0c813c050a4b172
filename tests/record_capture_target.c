/* record_capture_target: a CUDA program in miniature for `strobe record --capture-range
 * cuda-profiler-api` (test_record_capture.sh): NVTX ranges and marks, some between the CUDA
 * profiler API's cuProfilerStart() and cuProfilerStop() and some outside, against the stand-in
 * libcuda.so.1 and CUPTI (tests/fake_cuda), which report one kernel per window: the stand-in
 * CUPTI (the library the tool loaded, opened again) is told when each window's launch happens,
 * as a CUDA program would launch one. No strobe.
 *
 * Usage: record_capture_target WINDOWS [FAKE_CUPTI [open]]; with "open" the last window is never
 * stopped: the program exits inside it. Prints "pid PID" and, per window, "window I"
 * with the names of the ranges inside it; the ranges outside are "before", "between-I" and "after".
 * Exit 1 when the driver cannot be loaded or initialized. */
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void pause_ms(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static void range(const char *name) {
    nvtxRangePushA(name);
    nvtxMarkA(name);
    pause_ms(1);
    nvtxRangePop();
}

int main(int argc, char **argv) {
    int windows = argc > 1 ? atoi(argv[1]) : 2;
    /* As cudart does: the driver is opened and initialized first (which calls the tool named by
     * CUDA_INJECTION64_PATH), then the profiler API goes through it. */
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    int (*cu_init)(unsigned) = cuda ? (int (*)(unsigned))dlsym(cuda, "cuInit") : NULL;
    int (*start)(void) = cuda ? (int (*)(void))dlsym(cuda, "cuProfilerStart") : NULL;
    int (*stop)(void) = cuda ? (int (*)(void))dlsym(cuda, "cuProfilerStop") : NULL;
    if (cu_init == NULL || start == NULL || stop == NULL || cu_init(0) != 0) return 1;
    void *cupti = argc > 2 ? dlopen(argv[2], RTLD_NOW) : NULL;
    void (*launch)(void) = cupti ? (void (*)(void))dlsym(cupti, "fake_cupti_mark_launch") : NULL;
    printf("pid %ld\n", (long)getpid());
    range("before");
    for (int i = 1; i <= windows; i++) {
        char name[32], nested[32], between[32];
        snprintf(name, sizeof name, "inside-%d", i);
        snprintf(nested, sizeof nested, "nested-%d", i);
        snprintf(between, sizeof between, "between-%d", i);
        if (start() != 0) return 1;
        nvtxRangePushA(name);
        if (launch) launch();
        range(nested);
        pause_ms(2);
        nvtxRangePop();
        if (i == windows && argc > 3 && strcmp(argv[3], "open") == 0) {
            printf("window %d %s %s\n", i, name, nested);
            return 0;
        }
        if (stop() != 0) return 1;
        printf("window %d %s %s\n", i, name, nested);
        if (i < windows) range(between);
    }
    range("after");
    return 0;
}
