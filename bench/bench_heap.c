/* bench_heap.c: the cost of one malloc+free pair, for `strobe record --heap` and --heap-stacks
 * (bench_heap.sh runs it bare, the floor, and under both). No strobe: it is the program that
 * strobe record runs.
 *
 *   strobe_bench_heap [--pairs N] [--runs R]
 *
 * Each run times N pairs of malloc(64) and free, made DEPTH calls deep (a stack to walk, as in a
 * real program), with CLOCK_MONOTONIC; prints the median and the fastest run in ns per pair.
 * Built with frame pointers (the stacks are walked through them) and -fno-builtin, so the pairs
 * are not optimized away. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEPTH 6
#define MAX_RUNS 101

static void *volatile sink;

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* `depth` frames down, then the pairs. */
__attribute__((noinline)) static void pairs(int depth, long n) {
    if (depth > 0) {
        pairs(depth - 1, n);
        __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
        return;
    }
    for (long i = 0; i < n; i++) {
        void *p = malloc(64);
        sink = p;
        free(p);
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    long n = 50000;
    int runs = 7;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--pairs") == 0) {
            n = atol(argv[i + 1]);
        } else if (strcmp(argv[i], "--runs") == 0) {
            runs = atoi(argv[i + 1]);
        } else {
            fprintf(stderr, "strobe_bench_heap: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (n <= 0 || runs <= 0 || runs > MAX_RUNS) {
        fprintf(stderr, "strobe_bench_heap: --pairs > 0, --runs 1..%d\n", MAX_RUNS);
        return 2;
    }
    pairs(DEPTH, n / 10 + 1); /* warm the allocator and the caches */
    double per[MAX_RUNS];
    for (int r = 0; r < runs; r++) {
        double t0 = now_ns();
        pairs(DEPTH, n);
        per[r] = (now_ns() - t0) / (double)n;
    }
    qsort(per, (size_t)runs, sizeof per[0], cmp_double);
    printf("median %.1f min %.1f ns/pair (%ld pairs x %d runs)\n", per[runs / 2], per[0], n, runs);
    return 0;
}
