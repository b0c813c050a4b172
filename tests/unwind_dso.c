/* unwind_dso.c: a shared library built without frame pointers, which test_unwind opens with
 * dlopen after its session started: dso_a -> dso_b -> dso_c -> dso_hot, each a frame of its own
 * (noinline, and a store after each call so that no call becomes a jump). */
#include <time.h>

static volatile double dso_sink;
static volatile int dso_depth;

static long long dso_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) void dso_hot(int ms) {
    long long end = dso_cpu_ns() + (long long)ms * 1000000;
    double x = 1.0;
    while (dso_cpu_ns() < end)
        for (int i = 0; i < 20000; i++)
            x = x * 1.0000001 + 1e-9;
    dso_sink = x;
}

__attribute__((noinline)) void dso_c(int ms) {
    dso_hot(ms);
    dso_depth = 3;
}

__attribute__((noinline)) void dso_b(int ms) {
    dso_c(ms);
    dso_depth = 2;
}

__attribute__((noinline)) void dso_a(int ms) {
    dso_b(ms);
    dso_depth = 1;
}
