/* sample_frames_target.cpp: a C++ program for test_sample_frames.sh, which records it with
 * `strobe record --sample`. Its hot functions are a method, a template's method (two
 * instantiations) and a function in a namespace, each with a loop over several source lines, so
 * that samples land on different lines of one function. It calls only C functions, so that it
 * links no libstdc++ (the demangler is then strobe's to find). Runs for about `ms` milliseconds
 * of CPU time (argument 1, default 600). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

namespace strobe_test {

static double cpu_ms() {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

struct Worker {
    volatile double acc = 0;
    __attribute__((noinline)) void hot(int n) {
        for (int i = 0; i < n; i++) {
            acc = acc + i * 0.5;
            acc = acc / 1.0000001;
            acc = acc - 0.25;
            acc = acc * 1.0000002;
        }
    }
};

template <typename T> struct Box {
    volatile T v;
    __attribute__((noinline)) T spin(int n) {
        for (int i = 0; i < n; i++) {
            v = v + (T)i;
            v = v - (T)1;
            v = v + (T)2;
        }
        return v;
    }
};

__attribute__((noinline)) void run(double ms) {
    Worker w;
    Box<double> b{1.0};
    Box<long> c{2};
    double start = cpu_ms();
    while (cpu_ms() - start < ms) {
        w.hot(200000);
        (void)b.spin(200000);
        (void)c.spin(200000);
    }
    printf("%g\n", (double)w.acc + b.v + (double)c.v);
}

} // namespace strobe_test

int main(int argc, char **argv) {
    strobe_test::run(argc > 1 ? atof(argv[1]) : 600.0);
    return 0;
}
