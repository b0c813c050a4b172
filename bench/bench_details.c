/* bench_details.c: the added cost per range of each operator detail, next to the plain range cost
 * measured in the same run (issue 4's figures).
 *
 *   plain         a STROBE_OP range, no details
 *   details off   the same range calling strobe_range_inputs() (4 inputs) and
 *                 strobe_range_flops() with every detail off: the "free when off" check
 *   record_shapes the range with 4 inputs (two 2-D tensors, an int, a none) recorded
 *   with_flops    record_shapes + with_flops (the FLOPs computed from the inputs at stop)
 *   with_stack    the range with its call stack captured, 16 frames deep
 *   perf x2       the range with two perf counters read at begin and end (task-clock,
 *                 page-faults: software events, which this VM has)
 *   memory        one strobe_record_alloc() (profile_memory), per call
 *
 * Usage: strobe_bench_details [--quick]. Each figure is the best of several sessions, in ns. */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "strobe/strobe.h"

static long n_iter = 200000;
static int reps = 7;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const int64_t d_a[2] = {64, 128}, d_b[2] = {128, 32};

__attribute__((noinline)) static void loop_plain(long n) {
    for (long i = 0; i < n; i++) {
        STROBE_OP("aten::mm");
    }
}

__attribute__((noinline)) static void loop_inputs(long n) {
    strobe_input in[4] = {{STROBE_INPUT_TENSOR, "float", d_a, 2, 0, 0.0},
                          {STROBE_INPUT_TENSOR, "float", d_b, 2, 0, 0.0},
                          {STROBE_INPUT_INT, NULL, NULL, 0, 1, 0.0},
                          {STROBE_INPUT_NONE, NULL, NULL, 0, 0, 0.0}};
    for (long i = 0; i < n; i++) {
        STROBE_OP("aten::mm");
        strobe_range_inputs(in, 4);
    }
}

__attribute__((noinline)) static void loop_memory(long n) {
    static char block[64];
    for (long i = 0; i < n; i++)
        strobe_record_alloc(STROBE_DEVICE_CPU_ID, block, 64, 64 * i, 64 * i);
}

/* Recurses `depth` noinline frames before running the loop, so that a stack walk of 16 frames
 * finds 16 real frames. */
__attribute__((noinline)) static void deep(int depth, void (*fn)(long), long n) {
    if (depth > 0) {
        deep(depth - 1, fn, n);
    } else {
        fn(n);
    }
    __asm__ volatile("" ::: "memory");
}

/* The machine's floor for "perf x2": the two read() calls of a two-event group that a range
 * makes (begin and end), without strobe, in ns per pair of reads. -1 when the group cannot open. */
static double perf_read_floor(long n) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.read_format = PERF_FORMAT_GROUP;
    a.exclude_kernel = 1;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    int lead = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (lead < 0) return -1;
    a.config = PERF_COUNT_SW_PAGE_FAULTS;
    int second = (int)syscall(SYS_perf_event_open, &a, 0, -1, lead, 0);
    if (second < 0) {
        close(lead);
        return -1;
    }
    uint64_t buf[3];
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        for (long i = 0; i < n; i++) {
            if (read(lead, buf, sizeof buf) != (ssize_t)sizeof buf) break;
            if (read(lead, buf, sizeof buf) != (ssize_t)sizeof buf) break;
        }
        double ns = (now_s() - t0) * 1e9 / (double)n;
        if (ns < best) best = ns;
    }
    close(second);
    close(lead);
    return best;
}

typedef struct {
    const char *name;
    void (*loop)(long);
    int shapes, flops, stack, memory;
    const char *perf;
} variant;

static double run(const variant *v, long n, char *warn, size_t warn_size) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        strobe_config c;
        strobe_config_init(&c);
        c.buffer_bytes = (size_t)n * (v->stack ? 200 : 160) + (8u << 20);
        c.prefault_bytes = c.buffer_bytes;
        c.record_shapes = v->shapes;
        c.with_flops = v->flops;
        c.with_stack = v->stack;
        c.stack_depth = 16;
        c.profile_memory = v->memory;
        c.perf_events = v->perf;
        int rc = strobe_start(&c);
        if (rc) {
            fprintf(stderr, "strobe_bench_details: strobe_start: %s\n", strobe_strerror(rc));
            exit(2);
        }
        double t0 = now_s();
        deep(20, v->loop, n);
        double t1 = now_s();
        strobe_result *res = NULL;
        rc = strobe_stop(&res);
        if (rc) exit(2);
        const strobe_stats *st = strobe_result_stats(res);
        if (st->dropped_events)
            fprintf(stderr, "%s: %llu events dropped\n", v->name,
                    (unsigned long long)st->dropped_events);
        if (strobe_result_warning_count(res) && warn[0] == '\0')
            snprintf(warn, warn_size, "%s", strobe_result_warning(res, 0));
        strobe_result_free(res);
        double ns = (t1 - t0) * 1e9 / (double)n;
        if (ns < best) best = ns;
    }
    return best;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            n_iter = 2000;
            reps = 2;
        } else {
            fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
            return 2;
        }
    }
    const variant vs[] = {
        {"plain", loop_plain, 0, 0, 0, 0, NULL},
        {"details off", loop_inputs, 0, 0, 0, 0, NULL},
        {"record_shapes (4 inputs)", loop_inputs, 1, 0, 0, 0, NULL},
        {"record_shapes + with_flops", loop_inputs, 1, 1, 0, 0, NULL},
        {"with_stack (depth 16)", loop_plain, 0, 0, 1, 0, NULL},
        {"perf x2 (task-clock,page-faults)", loop_plain, 0, 0, 0, 0, "task-clock,page-faults"},
        {"memory event (per call)", loop_memory, 0, 0, 0, 1, NULL},
    };
    size_t nv = sizeof vs / sizeof vs[0];
    double plain = 0;
    printf("%-34s %12s %12s\n", "variant", "ns/range", "added ns");
    for (size_t i = 0; i < nv; i++) {
        char warn[256] = "";
        double ns = run(&vs[i], n_iter, warn, sizeof warn);
        if (i == 0) plain = ns;
        printf("%-34s %12.1f %12.1f\n", vs[i].name, ns, i == 0 ? 0.0 : ns - plain);
        if (warn[0]) printf("    warning: %s\n", warn);
    }
    double floor_ns = perf_read_floor(n_iter);
    if (floor_ns >= 0)
        printf("%-34s %12.1f   (machine floor: two read() of a perf group, no strobe)\n",
               "floor: 2 perf group reads", floor_ns);
    return 0;
}
