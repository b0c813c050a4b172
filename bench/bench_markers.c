/* bench_markers.c: what a marked range costs per sink (issue 18), beside an unmarked one and the
 * floor, measured in the same run. Each line is one child process of this program (NVTX's tool is
 * attached once per process, from the environment it starts with), which measures:
 *
 *   floor      two reads of the TSC (strobe's clock where it is invariant), per iteration
 *   unmarked   a STROBE_OP pair with no session and no markers (the gate closed)
 *   marked     the same pair with markers started in the child's setting
 *   dynamic    strobe_range_begin(run-time name) / strobe_range_end() with the same markers
 *
 * Settings: nvtx with no tool (NVTX_INJECTION64_PATH unset: nothing to reach), nvtx with the test
 * tool attached (tests/markers_tool.c with MARKERS_TOOL_NOOP=1: its functions only count, so the
 * figure is strobe's cost of reaching a tool) in interval, event and both modes, ftrace (where
 * trace_marker is writable; one write() per marker), and a session with nvtx markers.
 * Figures are the best of --runs runs of --pairs pairs, in ns per begin+end pair.
 *
 * Usage: strobe_bench_markers [--pairs N] [--runs R] [--tool LIBMARKERS_TOOL.so] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "strobe/strobe.h"

#ifndef MARKERS_TOOL_PATH
#define MARKERS_TOOL_PATH ""
#endif

static long pairs = 1000000;
static int runs = 7;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) static uint64_t loop_floor(long n) {
    uint64_t acc = 0;
    for (long i = 0; i < n; i++) {
#if defined(__x86_64__)
        acc += __rdtsc();
        acc ^= __rdtsc();
#else
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_gettime(CLOCK_MONOTONIC, &b);
        acc += (uint64_t)a.tv_nsec ^ (uint64_t)b.tv_nsec;
#endif
    }
    return acc;
}

__attribute__((noinline)) static void loop_op(long n) {
    for (long i = 0; i < n; i++) {
        STROBE_OP("bench::op");
    }
}

static char dyn_name[32];
__attribute__((noinline)) static void loop_dynamic(long n) {
    for (long i = 0; i < n; i++) {
        strobe_range_begin(dyn_name);
        strobe_range_end();
    }
}

static double ns_per(double t0, double t1, long n) {
    return (t1 - t0) * 1e9 / (double)n;
}

/* One child: the setting's markers (mode, sinks; session 1: a session records too). */
static int child(const char *label, const char *mode, const char *sinks, int session) {
    snprintf(dyn_name, sizeof dyn_name, "bench::dyn_%d", (int)getpid() % 10);
    double fl = 1e30, off = 1e30, on = 1e30, dyn = 1e30;
    volatile uint64_t sink = 0;
    /* Interleaved: one run of each per round, each keeping its best. */
    for (int r = 0; r < runs; r++) {
        double t0 = now_s();
        sink += loop_floor(pairs);
        double t1 = now_s();
        if (ns_per(t0, t1, pairs) < fl) fl = ns_per(t0, t1, pairs);
        t0 = now_s();
        loop_op(pairs);
        t1 = now_s();
        if (ns_per(t0, t1, pairs) < off) off = ns_per(t0, t1, pairs);
        if (mode != NULL) {
            int rc = strobe_markers_start(mode, sinks, 0);
            if (rc != 0) {
                printf("%-34s markers_start: %s\n", label, strobe_strerror(rc));
                return 0;
            }
        }
        if (session) {
            strobe_config cfg;
            strobe_config_init(&cfg);
            cfg.buffer_bytes = (size_t)pairs * 2 * 64 + (1u << 20);
            cfg.prefault_bytes = cfg.buffer_bytes;
            if (strobe_start(&cfg) != 0) return 1;
        }
        t0 = now_s();
        loop_op(pairs);
        t1 = now_s();
        if (ns_per(t0, t1, pairs) < on) on = ns_per(t0, t1, pairs);
        t0 = now_s();
        loop_dynamic(pairs);
        t1 = now_s();
        if (ns_per(t0, t1, pairs) < dyn) dyn = ns_per(t0, t1, pairs);
        if (session) {
            strobe_result *res = NULL;
            if (strobe_stop(&res) != 0) return 1;
            strobe_result_free(res);
        }
        if (mode != NULL) strobe_markers_stop();
    }
    (void)sink;
    printf("%-34s floor %6.2f  unmarked %6.2f  marked %8.2f  dynamic %8.2f  (%.1fx floor)\n", label,
           fl, off, on, dyn, on / fl);
    fflush(stdout);
    return 0;
}

static int run_child(const char *self, const char *label, const char *mode, const char *sinks,
                     int session, const char *tool) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        if (tool != NULL && tool[0] != '\0') {
            setenv("NVTX_INJECTION64_PATH", tool, 1);
            setenv("MARKERS_TOOL_NOOP", "1", 1);
        } else {
            unsetenv("NVTX_INJECTION64_PATH");
        }
        char p[32], r[16], s[4];
        snprintf(p, sizeof p, "%ld", pairs);
        snprintf(r, sizeof r, "%d", runs);
        snprintf(s, sizeof s, "%d", session);
        execl(self, self, "--child", label, mode ? mode : "-", sinks ? sinks : "-", s, p, r,
              (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(int argc, char **argv) {
    if (argc == 8 && strcmp(argv[1], "--child") == 0) {
        pairs = atol(argv[6]);
        runs = atoi(argv[7]);
        const char *mode = strcmp(argv[3], "-") == 0 ? NULL : argv[3];
        const char *sinks = strcmp(argv[4], "-") == 0 ? NULL : argv[4];
        return child(argv[2], mode, sinks, atoi(argv[5]));
    }
    const char *tool = MARKERS_TOOL_PATH;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pairs") == 0 && i + 1 < argc) {
            pairs = atol(argv[++i]);
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--tool") == 0 && i + 1 < argc) {
            tool = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--pairs N] [--runs R] [--tool LIB]\n", argv[0]);
            return 2;
        }
    }
    if (pairs <= 0 || runs <= 0) return 2;
    printf("strobe %s markers benchmark: ns per begin+end pair, best of %d runs of %ld pairs\n",
           strobe_version(), runs, pairs);
    const char *self = "/proc/self/exe";
    char exe[4096];
    ssize_t n = readlink(self, exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        self = exe;
    }
    int rc = 0;
    rc |= run_child(self, "no markers, no session", NULL, NULL, 0, NULL);
    rc |= run_child(self, "nvtx interval, no tool", "interval", "nvtx", 0, NULL);
    if (tool[0] != '\0') {
        rc |= run_child(self, "nvtx interval, tool", "interval", "nvtx", 0, tool);
        rc |= run_child(self, "nvtx event, tool", "event", "nvtx", 0, tool);
        rc |= run_child(self, "nvtx interval,event, tool", "interval,event", "nvtx", 0, tool);
        rc |= run_child(self, "nvtx interval, tool, + session", "interval", "nvtx", 1, tool);
    } else {
        printf("(no test tool: nvtx with a tool not measured; pass --tool)\n");
    }
    rc |= run_child(self, "session only (no markers)", NULL, NULL, 1, NULL);
    rc |= run_child(self, "ftrace interval", "interval", "ftrace", 0, NULL);
    rc |= run_child(self, "ftrace interval,event", "interval,event", "ftrace", 0, NULL);
    return rc;
}
