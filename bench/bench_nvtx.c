/* bench_nvtx.c: what a captured NVTX push/pop pair costs (issue 17: at most 2x the floor of two
 * timestamp reads), measured in one run.
 *
 *   floor        two reads of strobe's raw clock (the TSC where strobe uses it, else
 *                CLOCK_MONOTONIC, as src/core/clock.c chooses), per iteration
 *   fixed        nvtxRangePushA("literal") / nvtxRangePop()
 *   registered   nvtxDomainRangePushEx(domain, registered string) / nvtxDomainRangePop(domain)
 *   dynamic      nvtxRangePushA(buf) / nvtxRangePop(), buf a 24-byte name built at run time once
 *                and reused
 *   idle         the fixed pair with the tool attached and no session
 *
 * Each is measured in two child processes of this program: one with NVTX_INJECTION64_PATH naming
 * libstrobe.so and a session recording (the captured pair), one without (NVTX with no tool
 * attached: NVTX's own cost). Each child measures the floor itself; figures are medians of
 * --runs runs of --pairs pairs (default 5 runs of 10 million), one session per run.
 *
 * With --record STROBE, a third child runs under `STROBE record --no-follow` (a streaming session
 * from the preloaded library, into a .pftrace under /tmp, removed after) and measures the floor
 * and the fixed pair there: the pair as `strobe record` users get it, against the in-process
 * session of the same run.
 *
 * Usage: strobe_bench_nvtx [--pairs N] [--runs R] [--lib LIBSTROBE.so] [--record STROBE] */
#include <nvtx3/nvToolsExt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "strobe/strobe.h"

#ifndef STROBE_LIB_PATH
#define STROBE_LIB_PATH "libstrobe.so"
#endif

static long pairs = 10000000;
static int runs = 5;
static int use_tsc;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* src/core/clock.c's choice: the TSC when it is invariant and STROBE_CLOCK is not "monotonic". */
static int strobe_uses_tsc(void) {
#if defined(__x86_64__)
    const char *force = getenv("STROBE_CLOCK");
    if (force && strcmp(force, "monotonic") == 0) return 0;
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return 0;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    return (d >> 8) & 1u;
#else
    return 0;
#endif
}

static inline uint64_t raw_now(void) {
#if defined(__x86_64__)
    if (use_tsc) return __rdtsc();
#endif
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static uint64_t loop_floor(long n) {
    uint64_t acc = 0;
    for (long i = 0; i < n; i++) {
        acc += raw_now();
        acc ^= raw_now();
    }
    return acc;
}

__attribute__((noinline)) static void loop_fixed(long n) {
    for (long i = 0; i < n; i++) {
        nvtxRangePushA("bench::fixed");
        nvtxRangePop();
    }
}

static nvtxDomainHandle_t domain;
static nvtxEventAttributes_t reg_attr;

__attribute__((noinline)) static void loop_registered(long n) {
    for (long i = 0; i < n; i++) {
        nvtxDomainRangePushEx(domain, &reg_attr);
        nvtxDomainRangePop(domain);
    }
}

static char dyn_name[32];

__attribute__((noinline)) static void loop_dynamic(long n) {
    for (long i = 0; i < n; i++) {
        nvtxRangePushA(dyn_name);
        nvtxRangePop();
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ns per pair of one run; with `session`, inside a session of its own. */
static double run_once(void (*fn)(long), int session) {
    if (session) {
        strobe_config cfg;
        strobe_config_init(&cfg);
        cfg.buffer_bytes = (size_t)pairs * 24 + (8u << 20);
        cfg.prefault_bytes = cfg.buffer_bytes;
        int rc = strobe_start(&cfg);
        if (rc) {
            fprintf(stderr, "strobe_bench_nvtx: strobe_start: %s\n", strobe_strerror(rc));
            exit(2);
        }
    }
    double t0 = now_s();
    fn(pairs);
    double t1 = now_s();
    if (session) {
        strobe_result *r = NULL;
        int rc = strobe_stop(&r);
        if (rc) {
            fprintf(stderr, "strobe_bench_nvtx: strobe_stop: %s\n", strobe_strerror(rc));
            exit(2);
        }
        const strobe_stats *st = strobe_result_stats(r);
        if (st && st->dropped_events) {
            fprintf(stderr, "strobe_bench_nvtx: %llu events dropped\n",
                    (unsigned long long)st->dropped_events);
            exit(2);
        }
        strobe_result_free(r);
    }
    return (t1 - t0) * 1e9 / (double)pairs;
}

/* A child under `strobe record` (--record): its session, streaming to a part file, records the
 * pairs; prints the floor and the fixed pair as "NAME NS" (medians). */
static int child_record(void) {
    use_tsc = strobe_uses_tsc();
    double fl[64], v[64];
    volatile uint64_t sink = 0;
    loop_fixed(pairs / 10);
    long faults = 0;
    for (int r = 0; r < runs; r++) {
        double t0 = now_s();
        sink += loop_floor(pairs);
        fl[r] = (now_s() - t0) * 1e9 / (double)pairs;
        struct rusage ru0, ru1;
        getrusage(RUSAGE_THREAD, &ru0);
        v[r] = run_once(loop_fixed, 0);
        getrusage(RUSAGE_THREAD, &ru1);
        faults += ru1.ru_minflt - ru0.ru_minflt;
    }
    (void)sink;
    /* Page faults taken by the recording thread, per 1000 pairs: fresh chunk pages. */
    printf("floor %.3f\nfixed %.3f\nfaults %.3f\nclock %s\n", median(fl, runs), median(v, runs),
           (double)faults * 1000.0 / ((double)pairs * runs), use_tsc ? "tsc" : "monotonic");
    return 0;
}

/* A child: prints "NAME NS" per figure (medians). `tool`: NVTX_INJECTION64_PATH is set. */
static int child(int tool) {
    use_tsc = strobe_uses_tsc();
    domain = nvtxDomainCreateA("bench");
    reg_attr.version = NVTX_VERSION;
    reg_attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    reg_attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    reg_attr.message.registered = nvtxDomainRegisterStringA(domain, "bench::registered");
    /* 24 bytes, built at run time. */
    snprintf(dyn_name, sizeof dyn_name, "layers.%02d.attention.proj", runs % 100);
    struct {
        const char *name;
        void (*fn)(long);
        int session;
    } cases[] = {{"fixed", loop_fixed, tool},
                 {"registered", loop_registered, tool},
                 {"dynamic", loop_dynamic, tool},
                 {"idle", loop_fixed, 0}};
    double v[4][64], fl[64];
    int ncase = tool ? 4 : 3;
    volatile uint64_t sink = 0;
    loop_fixed(pairs / 10); /* warm up: NVTX's first call loads the tool */
    for (int r = 0; r < runs; r++) {
        double t0 = now_s();
        sink += loop_floor(pairs);
        fl[r] = (now_s() - t0) * 1e9 / (double)pairs;
        for (int c = 0; c < ncase; c++)
            v[c][r] = run_once(cases[c].fn, cases[c].session);
    }
    (void)sink;
    printf("floor %.3f\n", median(fl, runs));
    for (int c = 0; c < ncase; c++)
        printf("%s %.3f\n", cases[c].name, median(v[c], runs));
    printf("clock %s\n", use_tsc ? "tsc" : "monotonic");
    return 0;
}

typedef struct figures {
    double floor, fixed, registered, dynamic, idle, faults;
    char clock[32];
} figures;

static int spawn(const char *self, const char *lib, const char *record, figures *f) {
    char cmd[8192];
    if (record)
        snprintf(cmd, sizeof cmd,
                 "'%s' record --no-follow -o /tmp/strobe_bench_nvtx.%d.pftrace -- '%s' --child "
                 "record --pairs %ld --runs %d && rm -f /tmp/strobe_bench_nvtx.%d.pftrace",
                 record, (int)getpid(), self, pairs, runs, (int)getpid());
    else if (lib)
        snprintf(cmd, sizeof cmd,
                 "NVTX_INJECTION64_PATH='%s' '%s' --child tool --pairs %ld --runs %d", lib, self,
                 pairs, runs);
    else
        snprintf(cmd, sizeof cmd,
                 "env -u NVTX_INJECTION64_PATH '%s' --child none --pairs %ld --runs %d", self,
                 pairs, runs);
    FILE *p = popen(cmd, "r");
    if (p == NULL) return -1;
    char key[32], val[32];
    memset(f, 0, sizeof *f);
    while (fscanf(p, "%31s %31s", key, val) == 2) {
        double x = strtod(val, NULL);
        if (!strcmp(key, "floor")) f->floor = x;
        if (!strcmp(key, "fixed")) f->fixed = x;
        if (!strcmp(key, "registered")) f->registered = x;
        if (!strcmp(key, "dynamic")) f->dynamic = x;
        if (!strcmp(key, "idle")) f->idle = x;
        if (!strcmp(key, "faults")) f->faults = x;
        if (!strcmp(key, "clock")) snprintf(f->clock, sizeof f->clock, "%s", val);
    }
    return pclose(p) == 0 && f->floor > 0 ? 0 : -1;
}

static void cpu_model(char *out, size_t cap) {
    snprintf(out, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c += 2;
                c[strcspn(c, "\n")] = '\0';
                snprintf(out, cap, "%s", c);
            }
            break;
        }
    }
    fclose(f);
}

int main(int argc, char **argv) {
    const char *lib = STROBE_LIB_PATH, *mode = NULL, *record = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pairs") && i + 1 < argc) {
            pairs = atol(argv[++i]);
        } else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--record") && i + 1 < argc) {
            record = argv[++i];
        } else if (!strcmp(argv[i], "--lib") && i + 1 < argc) {
            lib = argv[++i];
        } else if (!strcmp(argv[i], "--child") && i + 1 < argc) {
            mode = argv[++i];
        } else {
            fprintf(stderr, "usage: strobe_bench_nvtx [--pairs N] [--runs R] [--lib LIBSTROBE] "
                            "[--record STROBE]\n");
            return 2;
        }
    }
    if (pairs < 1 || runs < 1 || runs > 64) {
        fprintf(stderr, "strobe_bench_nvtx: --pairs must be >= 1 and --runs 1..64\n");
        return 2;
    }
    if (mode)
        return strcmp(mode, "record") == 0 ? child_record() : child(strcmp(mode, "tool") == 0);

    /* This program's path (the shell that popen runs has its own /proc/self/exe). */
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "strobe_bench_nvtx: cannot read /proc/self/exe\n");
        return 1;
    }
    self[n] = '\0';
    figures tool, none, rec;
    if (spawn(self, lib, NULL, &tool) || spawn(self, NULL, NULL, &none) ||
        (record && spawn(self, NULL, record, &rec))) {
        fprintf(stderr, "strobe_bench_nvtx: a measuring child failed\n");
        return 1;
    }
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    printf("CPU: %s; clock: %s; %ld pairs per run, median of %d runs; ns per push/pop pair\n", cpu,
           tool.clock, pairs, runs);
    printf("%-12s %10s %8s   %12s %8s\n", "", "strobe", "/floor", "NVTX no tool", "/floor");
    printf("%-12s %10.2f %8s   %12.2f %8s\n", "floor", tool.floor, "1.00x", none.floor, "1.00x");
    const char *names[] = {"fixed", "registered", "dynamic"};
    double tv[] = {tool.fixed, tool.registered, tool.dynamic};
    double nv[] = {none.fixed, none.registered, none.dynamic};
    for (int i = 0; i < 3; i++)
        printf("%-12s %10.2f %7.2fx   %12.2f %7.2fx\n", names[i], tv[i], tv[i] / tool.floor, nv[i],
               nv[i] / none.floor);
    printf("%-12s %10.2f %7.2fx   (tool attached, no session)\n", "idle", tool.idle,
           tool.idle / tool.floor);
    if (record)
        printf("%-12s %10.2f %7.2fx   (under strobe record, streaming; its floor %.2f; %.2f "
               "page faults per 1000 pairs)\n",
               "recorded", rec.fixed, rec.fixed / rec.floor, rec.floor, rec.faults);
    return 0;
}
