/* unwind_deep.c: a recursion deeper than DWARF mode's stack copy, built with frame pointers, for
 * test_unwind: deep_frame(40) holds 40 frames of about 600 bytes each (24 KiB) above deep_hot,
 * so a walk of the 8 KiB copy stops about a third of the way, and the kernel's frame-pointer
 * chain, which holds the rest, must complete it. */
#include <time.h>

static volatile double deep_sink;

static long long deep_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) void deep_hot(int ms) {
    long long end = deep_cpu_ns() + (long long)ms * 1000000;
    double x = 1.0;
    while (deep_cpu_ns() < end)
        for (int i = 0; i < 20000; i++)
            x = x * 1.0000001 + 1e-9;
    deep_sink = x;
}

__attribute__((noinline)) void deep_frame(int depth, int ms) {
    volatile char pad[512];
    pad[0] = (char)depth;
    if (depth > 1)
        deep_frame(depth - 1, ms);
    else
        deep_hot(ms);
    deep_sink += pad[0];
}
