/* bench_sample.c: what CPU sampling (config.cpu_sample_hz) costs a CPU-bound program (issue 17:
 * under 2% at 1 kHz), measured in one run.
 *
 * The program: --threads threads, each running a fixed amount of arithmetic (calibrated at start
 * to about --ms milliseconds) a few frames deep, built with frame pointers. One run times the
 * threads from their creation to the last join, in wall time and in the process's CPU time
 * (user + system, which includes the kernel's sampling interrupts and strobe's drain thread):
 *
 *   floor      no session
 *   sampling   a session with cpu_sample_hz = --hz (and nothing else recorded)
 *
 * Runs alternate (floor, sampling, sampling, floor, floor, ...) so that drift in the machine's
 * load hits both and neither is always second; the figures are the medians of --runs runs of
 * each, and the median of each pair's own ratio (a sampled run against the floor run beside it,
 * which cancels drift between pairs). --hz 0 runs a session without sampling in place of the
 * sampling one: the control, whose "overhead" shows the noise of the measurement. strobe_stop()'s
 * time (collecting and symbolizing the samples) is reported apart: it is not spent while the
 * program runs.
 *
 * --call-graph fp or dwarf chooses how the samples' stacks are taken (config.cpu_sample_call_graph;
 * default: the library's default). The threads' work is built with frame pointers either way.
 *
 * Usage: strobe_bench_sample [--threads N] [--runs R] [--hz HZ] [--ms MS] [--call-graph fp|dwarf]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "strobe/strobe.h"

static int threads = 2, runs = 7, ms = 500;
static unsigned hz = 1000;
static uint32_t call_graph = STROBE_CALL_GRAPH_DEFAULT; /* --call-graph */
static long iters;                                      /* per thread, calibrated */
static volatile double sink;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* The work: a few frames deep, so that samples carry a stack like a real program's. */
__attribute__((noinline)) static double leaf(long n, double x) {
    for (long i = 0; i < n; i++)
        x = x * 1.0000001 + 1e-9;
    return x;
}
__attribute__((noinline)) static double middle(long n, double x) {
    for (int k = 0; k < 10; k++)
        x = leaf(n / 10, x);
    return x;
}
static void *worker(void *arg) {
    (void)arg;
    sink = middle(iters, 1.0);
    return NULL;
}

/* One run: the threads' work, timed. */
static void run_once(double *wall, double *cpu) {
    pthread_t *t = malloc((size_t)threads * sizeof *t);
    double c0 = cpu_s(), w0 = now_s();
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    *wall = now_s() - w0;
    *cpu = cpu_s() - c0;
    free(t);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void cpu_model(char *buf, size_t size) {
    snprintf(buf, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            const char *v = strchr(line, ':');
            if (v) {
                snprintf(buf, size, "%s", v + 2);
                buf[strcspn(buf, "\n")] = '\0';
            }
            break;
        }
    }
    fclose(f);
}

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--threads") == 0)
            threads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--runs") == 0)
            runs = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--hz") == 0)
            hz = (unsigned)atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--ms") == 0)
            ms = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--call-graph") == 0 && strcmp(argv[i + 1], "fp") == 0)
            call_graph = STROBE_CALL_GRAPH_FP;
        else if (strcmp(argv[i], "--call-graph") == 0 && strcmp(argv[i + 1], "dwarf") == 0)
            call_graph = STROBE_CALL_GRAPH_DWARF;
        else {
            fprintf(stderr,
                    "usage: strobe_bench_sample [--threads N] [--runs R] [--hz HZ] [--ms MS] "
                    "[--call-graph fp|dwarf]\n");
            return 2;
        }
    }
    if (threads < 1 || runs < 1 || ms < 1 || hz > 10000) {
        fprintf(stderr, "strobe_bench_sample: --threads, --runs and --ms must be positive, --hz "
                        "at most 10000\n");
        return 2;
    }
    /* Calibrate: iterations for about `ms` of one thread. */
    long n = 1000000;
    for (;;) {
        double t0 = now_s();
        sink = leaf(n, 1.0);
        double dt = now_s() - t0;
        if (dt > 0.05) {
            iters = (long)((double)n * ms / 1000.0 / dt);
            break;
        }
        n *= 2;
    }
    char model[256];
    cpu_model(model, sizeof model);
    printf("cpu: %s (%ld online)\n", model, sysconf(_SC_NPROCESSORS_ONLN));
    printf("work: %d threads x %ld iterations (about %d ms each), %d runs of each, %u Hz\n",
           threads, iters, ms, runs, hz);

    double *fw = calloc((size_t)runs, sizeof *fw), *fc = calloc((size_t)runs, sizeof *fc);
    double *sw = calloc((size_t)runs, sizeof *sw), *sc = calloc((size_t)runs, sizeof *sc);
    double *stop = calloc((size_t)runs, sizeof *stop);
    long samples = 0;
    unsigned long long lost = 0;
    for (int r = 0; r < runs; r++) {
        /* Which goes first alternates too: a pair's second run is not always the same one. */
        if (r % 2 == 0) run_once(&fw[r], &fc[r]);
        strobe_config cfg;
        strobe_config_init(&cfg);
        cfg.cpu_sample_hz = hz;
        cfg.cpu_sample_call_graph = call_graph;
        if (strobe_start(&cfg) != 0) {
            fprintf(stderr, "strobe_bench_sample: strobe_start failed\n");
            return 1;
        }
        run_once(&sw[r], &sc[r]);
        strobe_result *res = NULL;
        double t0 = now_s();
        if (strobe_stop(&res) != 0) {
            fprintf(stderr, "strobe_bench_sample: strobe_stop failed\n");
            return 1;
        }
        stop[r] = now_s() - t0;
        const strobe_event *ev = strobe_result_events(res);
        for (size_t i = 0; i < strobe_result_event_count(res); i++)
            samples += strcmp(ev[i].category, "cpu_sample") == 0;
        for (size_t i = 0; i < strobe_result_warning_count(res); i++)
            fprintf(stderr, "warning: %s\n", strobe_result_warning(res, i));
        for (size_t i = 0; i < strobe_result_metadata_count(res); i++) {
            const char *k, *v;
            if (strobe_result_metadata(res, i, &k, &v) == 0 &&
                strcmp(k, "strobe_cpu_sampling") == 0) {
                const char *l = strstr(v, "\"lost\": ");
                if (l) lost += strtoull(l + 8, NULL, 10);
            }
        }
        strobe_result_free(res);
        if (r % 2 == 1) run_once(&fw[r], &fc[r]);
    }
    /* Each sampled run against the floor run beside it (the same pair of the alternation), before
     * median() reorders the arrays: drift in the machine's load between pairs cancels out. */
    double *pw = calloc((size_t)runs, sizeof *pw), *pc = calloc((size_t)runs, sizeof *pc);
    if (pw == NULL || pc == NULL) return 1;
    for (int r = 0; r < runs; r++) {
        pw[r] = sw[r] / fw[r] - 1;
        pc[r] = sc[r] / fc[r] - 1;
    }
    double ppw = median(pw, runs), ppc = median(pc, runs);
    double mfw = median(fw, runs), mfc = median(fc, runs);
    double msw = median(sw, runs), msc = median(sc, runs), mstop = median(stop, runs);
    printf("floor (no session):  wall %8.1f ms   cpu %8.1f ms\n", mfw * 1e3, mfc * 1e3);
    printf("sampling %5u Hz:    wall %8.1f ms   cpu %8.1f ms\n", hz, msw * 1e3, msc * 1e3);
    printf("overhead:            wall %+7.2f %%    cpu %+7.2f %%\n", (msw / mfw - 1) * 100,
           (msc / mfc - 1) * 100);
    printf("paired:              wall %+7.2f %%    cpu %+7.2f %%  (median of each pair's ratio)\n",
           ppw * 100, ppc * 100);
    printf("samples per run: %.0f (expected about %.0f from the floor's cpu time), lost %llu in "
           "all; strobe_stop: %.1f ms (median)\n",
           (double)samples / runs, mfc * hz, lost, mstop * 1e3);
    free(fw);
    free(fc);
    free(sw);
    free(sc);
    free(stop);
    free(pw);
    free(pc);
    return 0;
}
