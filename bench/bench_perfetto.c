/* bench_perfetto.c: trace size and save speed of Perfetto protobuf against JSON, for one result
 * (issue 7's figure: bytes per begin+end pair, goal .pftrace <= 1/4 of JSON).
 *
 * One session records N ranges on one thread: three quarters from static call sites (STROBE_OP),
 * a quarter with run-time names (strobe_range_begin, 64 distinct names), nested two deep as
 * operators are. The same result is saved as .json and as .pftrace (the saved flag is cleared
 * between the saves: the writers only read the result), each several times; the best time of
 * each gives the throughput in MB/s of the file written.
 *
 * Usage: strobe_bench_perfetto [--quick] [--pairs N] [--out DIR]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "trace/result_internal.h"
#include "strobe/strobe.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Saves r to path `reps` times; returns the best time in seconds, or -1 on error. */
static double best_save(strobe_result *r, const char *path, int reps) {
    double best = -1;
    for (int i = 0; i < reps; i++) {
        r->saved = 0;
        double t0 = now_s();
        int rc = strobe_result_save(r, path);
        double t = now_s() - t0;
        if (rc) {
            fprintf(stderr, "bench_perfetto: saving %s: %s\n", path, strobe_strerror(rc));
            return -1;
        }
        if (best < 0 || t < best) best = t;
    }
    return best;
}

int main(int argc, char **argv) {
    long pairs = 1000000;
    int reps = 5;
    const char *out = ".";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            pairs = 20000;
            reps = 1;
        } else if (strcmp(argv[i], "--pairs") == 0 && i + 1 < argc) {
            pairs = atol(argv[++i]);
        } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else {
            fprintf(stderr, "usage: strobe_bench_perfetto [--quick] [--pairs N] [--out DIR]\n");
            return 2;
        }
    }
    strobe_config c;
    strobe_config_init(&c);
    c.buffer_bytes = (size_t)2 << 30;
    int rc = strobe_start(&c);
    if (rc) {
        fprintf(stderr, "bench_perfetto: start: %s\n", strobe_strerror(rc));
        return 1;
    }
    char names[64][32];
    for (int i = 0; i < 64; i++)
        snprintf(names[i], sizeof names[i], "user_region_%d", i);
    for (long i = 0; i < pairs; i += 2) {
        STROBE_OP("aten::linear");
        if (i % 4 == 0) {
            strobe_range_begin(names[(i / 4) % 64]);
            strobe_range_end();
        } else {
            STROBE_OP("aten::addmm");
        }
    }
    strobe_result *r = NULL;
    rc = strobe_stop(&r);
    if (rc) {
        fprintf(stderr, "bench_perfetto: stop: %s\n", strobe_strerror(rc));
        return 1;
    }
    size_t events = strobe_result_event_count(r);
    char json[1024], pf[1024];
    snprintf(json, sizeof json, "%s/bench_perfetto.json", out);
    snprintf(pf, sizeof pf, "%s/bench_perfetto.pftrace", out);
    double tj = best_save(r, json, reps), tp = best_save(r, pf, reps);
    long sj = file_size(json), sp = file_size(pf);
    if (tj < 0 || tp < 0 || sj < 0 || sp < 0) return 1;
    printf("ranges (begin+end pairs): %zu\n", events);
    printf("JSON:     %10ld bytes  %6.1f bytes/pair  save %.3f s  %7.1f MB/s\n", sj,
           (double)sj / (double)events, tj, (double)sj / tj / 1e6);
    printf("pftrace:  %10ld bytes  %6.1f bytes/pair  save %.3f s  %7.1f MB/s\n", sp,
           (double)sp / (double)events, tp, (double)sp / tp / 1e6);
    printf("pftrace / JSON size: %.3f (goal <= 0.25); save time ratio %.2f; ranges/s: JSON %.1f M, "
           "pftrace %.1f M\n",
           (double)sp / (double)sj, tp / tj, (double)events / tj / 1e6, (double)events / tp / 1e6);
    strobe_result_free(r);
    /* Without --out the files are scratch; with it they are kept (to validate them). */
    if (strcmp(out, ".") == 0) {
        remove(json);
        remove(pf);
    }
    return 0;
}
