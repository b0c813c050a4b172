/* unwind_record_target.c: a program that knows nothing of strobe, built without frame pointers,
 * for test_record_call_graph.sh: rec_a -> rec_b -> rec_c -> rec_hot spins for argv[2] ms of CPU
 * time, then the library argv[1] (unwind_dso, also without frame pointers) is opened with dlopen
 * and its dso_a -> dso_b -> dso_c -> dso_hot spins as long. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;
static volatile int depth;

static long long cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) static void rec_hot(int ms) {
    long long end = cpu_ns() + (long long)ms * 1000000;
    double x = 1.0;
    while (cpu_ns() < end)
        for (int i = 0; i < 20000; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

__attribute__((noinline)) static void rec_c(int ms) {
    rec_hot(ms);
    depth = 3;
}

__attribute__((noinline)) static void rec_b(int ms) {
    rec_c(ms);
    depth = 2;
}

__attribute__((noinline)) static void rec_a(int ms) {
    rec_b(ms);
    depth = 1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: unwind_record_target LIBRARY MS\n");
        return 2;
    }
    int ms = atoi(argv[2]);
    rec_a(ms);
    void *h = dlopen(argv[1], RTLD_NOW);
    void (*dso_a)(int) = NULL;
    if (h) *(void **)&dso_a = dlsym(h, "dso_a");
    if (dso_a == NULL) {
        fprintf(stderr, "unwind_record_target: %s: %s\n", argv[1], dlerror());
        return 1;
    }
    dso_a(ms);
    return 0;
}
