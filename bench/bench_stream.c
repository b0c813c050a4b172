/* bench_stream.c: the streaming figures issue 7 asks for, measured in one run.
 *
 *   hot path     ns per begin+end pair (static call site, one thread) with streaming off and on,
 *                alternating, best of several repetitions each
 *   long run     a workload streamed for --seconds: resident memory and file size sampled every
 *                second, then events written per second, records dropped (the disk or the
 *                encoder could not keep up) and whether memory stayed flat after the first minute
 *
 * Usage: strobe_bench_stream [--seconds N] [--out PATH] [--rate PAIRS_PER_S] [--threads T]
 *                            [--buffer MB] [--keep] [--quick] [--punch]
 * --out defaults to /dev/null, which measures the encoder without a disk; a file (.json, or
 * .pftrace for Perfetto) adds the disk, and is removed at the end unless --keep (at full speed
 * the JSON stream writes hundreds of MB a second).
 * --rate 0 (the default) runs as fast as the threads can; a nonzero rate paces each thread to
 * rate / T pairs per second, to find the highest rate that streams without drops.
 * --punch frees the file's blocks behind the writer every second (fallocate PUNCH_HOLE, all but
 * the last 64 MB), as a consumer draining the stream would: every byte still goes through the file
 * system to the disk, but a run of many minutes at a disk's full rate fits a disk smaller than
 * the stream. The file's size stays; "disk MB" shows the blocks it holds. */
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "strobe/strobe.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, int rc) {
    fprintf(stderr, "strobe_bench_stream: %s: %s\n", what, strobe_strerror(rc));
    exit(2);
}

/* CPU time of the calling thread: with more runnable threads than cores (the streaming thread,
 * other programs), wall time also counts the time the thread waited for a core. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double rss_mb(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
        fclose(f);
    }
    return (double)res * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

static double file_mb(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (double)sb.st_size / 1048576.0 : 0.0;
}

static double disk_mb(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (double)sb.st_blocks * 512.0 / 1048576.0 : 0.0;
}

/* Frees the blocks of `fd` before its last 64 MB (the stream only appends past them). */
static void punch(int fd, const char *path) {
    struct stat sb;
    if (fd < 0 || stat(path, &sb) != 0) return;
    off_t keep = (off_t)64 << 20;
    if (sb.st_size <= keep) return;
    off_t len = (sb.st_size - keep) & ~(off_t)4095;
    if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, len) != 0) perror("punch");
}

STROBE_SITE_DEFINE(bench_site, "bench_pair", STROBE_RECORD_SCOPE_FUNCTION);

__attribute__((noinline)) static void pairs(long n) {
    for (long i = 0; i < n; i++) {
        strobe_range_begin_site(&bench_site);
        strobe_range_end();
    }
}

static void start(const char *stream_path, size_t buffer_bytes) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.buffer_bytes = buffer_bytes;
    cfg.prefault_bytes = buffer_bytes < ((size_t)64 << 20) ? buffer_bytes : (size_t)64 << 20;
    cfg.stream_path = stream_path;
    int rc = strobe_start(&cfg);
    if (rc) die("strobe_start", rc);
}

static strobe_result *stop(void) {
    strobe_result *r = NULL;
    int rc = strobe_stop(&r);
    if (rc) die("strobe_stop", rc);
    return r;
}

/* The hot path's cost per pair, streaming off and on, alternating so that both see the same
 * machine. The buffer holds a repetition whole with streaming off. */
static void hot_path(const char *path, long per_rep, int reps) {
    double best[2] = {1e30, 1e30}, best_cpu[2] = {1e30, 1e30};
    unsigned long long dropped[2] = {0, 0};
    for (int rep = 0; rep < reps; rep++) {
        for (int on = 0; on < 2; on++) {
            start(on ? path : NULL, (size_t)per_rep * 24 + ((size_t)16 << 20));
            double t0 = now_s(), c0 = cpu_s();
            pairs(per_rep);
            double t = (now_s() - t0) * 1e9 / (double)per_rep;
            double c = (cpu_s() - c0) * 1e9 / (double)per_rep;
            if (c < best_cpu[on]) best_cpu[on] = c;
            strobe_result *r = stop();
            dropped[on] += strobe_result_stats(r)->dropped_events;
            strobe_result_free(r);
            if (t < best[on]) best[on] = t;
        }
    }
    printf("hot path, %ld pairs x %d reps, best:\n", per_rep, reps);
    printf("  streaming off  %6.2f ns/pair wall, %6.2f ns/pair thread CPU  (dropped %llu)\n",
           best[0], best_cpu[0], dropped[0]);
    printf("  streaming on   %6.2f ns/pair wall, %6.2f ns/pair thread CPU  (dropped %llu)\n",
           best[1], best_cpu[1], dropped[1]);
}

typedef struct worker {
    pthread_t th;
    double rate; /* pairs per second for this thread; 0: unpaced */
    int *quit;
    long done;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    double t0 = now_s();
    long batch = 1000;
    while (!__atomic_load_n(w->quit, __ATOMIC_RELAXED)) {
        pairs(batch);
        __atomic_store_n(&w->done, w->done + batch, __ATOMIC_RELAXED);
        if (w->rate > 0) {
            double due = t0 + (double)w->done / w->rate;
            double wait = due - now_s();
            if (wait > 0) {
                struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
                nanosleep(&ts, NULL);
            }
        }
    }
    return NULL;
}

static void long_run(const char *path, double seconds, double rate, int threads, size_t buffer,
                     int do_punch) {
    start(path, buffer);
    int pfd = do_punch ? open(path, O_WRONLY | O_CLOEXEC) : -1;
    int quit = 0;
    worker w[64];
    for (int i = 0; i < threads; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].rate = rate / threads;
        w[i].quit = &quit;
        pthread_create(&w[i].th, NULL, work, &w[i]);
    }
    double t0 = now_s(), rss_first_min = 0, rss_max_after = 0, rss_min_after = 1e30;
    printf("long run: %s, %d thread(s), rate %s, buffer %zu MB\n", path, threads,
           rate > 0 ? "paced" : "unpaced", buffer >> 20);
    printf("  %6s %10s %10s %10s %12s\n", "s", "rss MB", "file MB", "disk MB", "pairs");
    for (int s = 1; s <= (int)seconds; s++) {
        double next = t0 + s;
        double wait = next - now_s();
        if (wait > 0) {
            struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
            nanosleep(&ts, NULL);
        }
        long done = 0;
        for (int i = 0; i < threads; i++)
            done += __atomic_load_n(&w[i].done, __ATOMIC_RELAXED);
        double rss = rss_mb();
        if (s <= 60) rss_first_min = rss > rss_first_min ? rss : rss_first_min;
        if (s > 60 || seconds <= 60) {
            if (rss > rss_max_after) rss_max_after = rss;
            if (rss < rss_min_after) rss_min_after = rss;
        }
        punch(pfd, path);
        if (s <= 10 || s % 10 == 0)
            printf("  %6d %10.1f %10.1f %10.1f %12ld\n", s, rss, file_mb(path), disk_mb(path),
                   done);
        fflush(stdout);
    }
    __atomic_store_n(&quit, 1, __ATOMIC_RELAXED);
    long produced = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(w[i].th, NULL);
        produced += w[i].done;
    }
    double elapsed = now_s() - t0;
    double t_stop = now_s();
    strobe_result *r = stop();
    t_stop = now_s() - t_stop;
    const strobe_stats *st = strobe_result_stats(r);
    const char *meta = NULL;
    for (size_t i = 0; i < strobe_result_metadata_count(r); i++) {
        const char *k, *v;
        if (strobe_result_metadata(r, i, &k, &v) == 0 && strcmp(k, "strobe_stream") == 0) meta = v;
    }
    unsigned long long events = 0;
    if (meta) {
        const char *e = strstr(meta, "\"events\": ");
        if (e) events = strtoull(e + 10, NULL, 10);
    }
    printf("  produced %ld pairs in %.1f s: %.2f M pairs/s offered\n", produced, elapsed,
           (double)produced / elapsed / 1e6);
    printf("  streamed %llu events: %.2f M events/s written; dropped %llu (%.2f%%)\n", events,
           (double)events / elapsed / 1e6, (unsigned long long)st->dropped_events,
           produced ? 100.0 * (double)st->dropped_events / (double)produced : 0.0);
    printf("  file %.1f MB; stop took %.3f s; arena used %llu of %llu bytes\n", file_mb(path),
           t_stop, (unsigned long long)st->buffer_bytes_used,
           (unsigned long long)st->buffer_bytes_cap);
    if (seconds > 60)
        printf("  rss: max in first minute %.1f MB; after it %.1f .. %.1f MB (%s within 10%%)\n",
               rss_first_min, rss_min_after, rss_max_after,
               rss_max_after <= rss_min_after * 1.10 ? "flat," : "NOT");
    else
        printf("  rss: %.1f .. %.1f MB (run > 60 s for the after-first-minute figure)\n",
               rss_min_after, rss_max_after);
    strobe_result_free(r);
    if (pfd >= 0) close(pfd);
}

int main(int argc, char **argv) {
    double seconds = 20, rate = 0;
    int threads = 1, quick = 0;
    size_t buffer = (size_t)64 << 20;
    const char *path = "/dev/null";
    int keep = 0, do_punch = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            path = argv[++i];
        else if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc)
            rate = atof(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--buffer") == 0 && i + 1 < argc)
            buffer = (size_t)atol(argv[++i]) << 20;
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--keep") == 0)
            keep = 1;
        else if (strcmp(argv[i], "--punch") == 0)
            do_punch = 1;
        else {
            fprintf(stderr,
                    "usage: %s [--seconds N] [--out PATH] [--rate PAIRS_PER_S] [--threads T] "
                    "[--buffer MB] [--keep] [--quick] [--punch]\n",
                    argv[0]);
            return 2;
        }
    }
    if (threads < 1 || threads > 64) threads = 1;
    if (quick) seconds = 2;
    hot_path(path, quick ? 100000 : 2000000, quick ? 2 : 7);
    long_run(path, seconds, rate, threads, buffer, do_punch);
    struct stat sb;
    if (!keep && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) unlink(path);
    return 0;
}
