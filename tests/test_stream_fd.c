/* test_stream_fd.c: a stream in a program that closes or reuses descriptors, and the stream's size
 * cap (stream.c, stream_out.c, sample.c, ownfd.c).
 *
 * - cap: a stream with stream_max_bytes stops appending events at the cap, counts each event it
 *   left out ("capped": true, "capped_events"; the events in the file plus those counted lost
 *   are the events recorded), and still ends the file with its footer: strobe's reader reads it
 *   to its end, in JSON and in Perfetto's format, and the file is at most a footer past the cap;
 * - dup2 over the stream's descriptor: strobe never writes into, nor closes, the program's file
 *   now at that number; it opens its own file again and loses nothing;
 * - close of the stream's descriptor, then close_range() over every descriptor: the file is opened
 *   again, nothing lost; the stream's thread does not spin (its wake-up took a pipe, and poll()
 *   on a closed descriptor returns at once), and the flight recorder's signal still dumps;
 * - the CPU sampler with its descriptors closed, or /dev/null put at their numbers: its thread
 *   does not spin, it leaves the program's /dev/null open, and the trace counts the descriptors
 *   lost. Skipped where perf_event_open is refused. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "reader/trace_reader.h"
#include "strobe/strobe.h"

static char out_dir[512];

static const char *meta_value(const strobe_result *r, const char *key) {
    for (size_t i = 0; i < strobe_result_metadata_count(r); i++) {
        const char *k, *v;
        if (strobe_result_metadata(r, i, &k, &v) == 0 && strcmp(k, key) == 0) return v;
    }
    return NULL;
}

/* The number after "\"key\": " in a JSON text; -1 when absent. */
static long long json_number(const char *json, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = json ? strstr(json, pat) : NULL;
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The ranges named `name` in a trace file, whether the reader read it to its end, and its
 * "strobe_stream" object (malloc'ed; NULL when absent). @return the ranges, or -1. */
static long long file_ranges(const char *path, const char *name, int *to_end, char **stream_obj) {
    strobe_rd *rd = NULL;
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    *to_end = 0;
    *stream_obj = NULL;
    if (strobe_rd_open(&rd, path, &opt) != 0) {
        fprintf(stderr, "cannot open %s: %s\n", path, rd ? strobe_rd_errmsg(rd) : "?");
        strobe_rd_close(rd);
        return -1;
    }
    long long n = 0;
    strobe_rd_item it;
    int rc;
    while ((rc = strobe_rd_next(rd, &it)) > 0) {
        if (it.kind == STROBE_RD_META) {
            const strobe_rd_meta *m = it.meta;
            if (m->key.s && strcmp(m->key.s, "strobe_stream") == 0) {
                free(*stream_obj);
                *stream_obj = strndup(m->value.raw, m->value.len);
            }
            continue;
        }
        const strobe_rd_event *e = it.event;
        if (!e->bad && e->ph.len == 1 && e->ph.s[0] == 'X' && e->name.s &&
            strcmp(e->name.s, name) == 0)
            n++;
    }
    if (rc != 0) fprintf(stderr, "%s: %s\n", path, strobe_rd_errmsg(rd));
    *to_end = rc == 0;
    strobe_rd_close(rd);
    return n;
}

static void record(const strobe_site *site, int pairs) {
    for (int i = 0; i < pairs; i++) {
        strobe_range_begin_site(site);
        strobe_range_end();
    }
}

/* The descriptor whose /proc/self/fd link is `target`, else -1. */
static int fd_of(const char *target) {
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) return -1;
    int found = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && found < 0) {
        char link[300], to[700];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, to, sizeof to - 1);
        if (n <= 0) continue;
        to[n] = '\0';
        if (strcmp(to, target) == 0 && atoi(e->d_name) != dirfd(d)) found = atoi(e->d_name);
    }
    closedir(d);
    return found;
}

/* Closes every descriptor from 3 up (a daemon's start). */
static void close_from_3(void) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0) return;
#endif
    for (int fd = 3; fd < 70000; fd++)
        close(fd);
}

/* ---- the cap ---------------------------------------------------------------------------------
 */

static void test_cap(const char *file) {
    enum { PAIRS = 200000 };
    const uint64_t cap = 256 << 10;
    char path[600];
    snprintf(path, sizeof path, "%s/%s", out_dir, file);
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.buffer_bytes = (size_t)64 << 20;
    cfg.stream_path = path;
    cfg.stream_max_bytes = cap;
    REQUIRE(strobe_start(&cfg) == 0);
    STROBE_SITE_DEFINE(s, "capped", STROBE_RECORD_SCOPE_FUNCTION);
    for (int i = 0; i < PAIRS / 1000; i++) {
        record(&s, 1000);
        if (i % 20 == 0) sleep_ms(1); /* several appends, not one at stop */
    }
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    uint64_t dropped = strobe_result_stats(r)->dropped_events;
    const char *sm = meta_value(r, "strobe_stream");
    long long events = json_number(sm, "events"), lost = json_number(sm, "lost_events");
    long long capped = json_number(sm, "capped_events");
    fprintf(stderr, "%s: %d recorded, %lld written, %lld lost (%lld for the cap), %llu dropped\n",
            file, PAIRS, events, lost, capped, (unsigned long long)dropped);
    CHECK(sm != NULL && strstr(sm, "\"capped\": true") != NULL);
    CHECK_EQ(json_number(sm, "max_bytes"), (long long)cap);
    CHECK_INT(capped, >, 0);
    CHECK_EQ(lost, capped);
    CHECK_EQ(events + lost + (long long)dropped, PAIRS);
    strobe_result_free(r);

    struct stat sb;
    REQUIRE(stat(path, &sb) == 0);
    fprintf(stderr, "%s: %lld bytes (cap %llu)\n", file, (long long)sb.st_size,
            (unsigned long long)cap);
    CHECK_INT(sb.st_size, <=, (long long)(cap + (16 << 10))); /* the footer past the cap */
    CHECK_INT(sb.st_size, >=, (long long)(cap / 2));          /* it kept what fit */
    int to_end;
    char *fs;
    CHECK_EQ(file_ranges(path, "capped", &to_end, &fs), events);
    CHECK(to_end);
    CHECK(fs != NULL && strstr(fs, "\"capped\": true") != NULL);
    CHECK_EQ(json_number(fs, "capped_events"), capped);
    free(fs);
}

/* A cap needs a stream. */
static void test_cap_config(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.stream_max_bytes = 1 << 20;
    CHECK_EQ(strobe_start(&cfg), STROBE_EINVAL);
}

/* ---- descriptors taken away ------------------------------------------------------------------
 */

/* Streams 2 x 1000 ranges; between the two halves `take` does to the stream's descriptor what a
 * program might. Checks that nothing is lost and the file was opened again. */
static void stream_around(const char *file, void (*take)(int fd, const char *own), int reopens) {
    char path[600], own[600], real[700];
    snprintf(path, sizeof path, "%s/%s", out_dir, file);
    snprintf(own, sizeof own, "%s/%s.own", out_dir, file);
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.buffer_bytes = (size_t)16 << 20;
    cfg.stream_path = path;
    REQUIRE(strobe_start(&cfg) == 0);
    STROBE_SITE_DEFINE(s, "around", STROBE_RECORD_SCOPE_FUNCTION);
    record(&s, 1000);
    sleep_ms(30);
    REQUIRE(realpath(path, real) != NULL);
    int fd = fd_of(real);
    REQUIRE(fd >= 0);
    take(fd, own);
    record(&s, 1000);
    sleep_ms(30);
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    const char *sm = meta_value(r, "strobe_stream");
    fprintf(stderr, "%s: %s\n", file, sm ? sm : "(no strobe_stream)");
    CHECK_EQ(json_number(sm, "events"), 2000);
    CHECK_EQ(json_number(sm, "lost_events"), 0);
    CHECK_INT(json_number(sm, "reopened"), >=, reopens);
    CHECK(sm != NULL && strstr(sm, "\"descriptor_lost\": false") != NULL);
    strobe_result_free(r);
    int to_end;
    char *fs;
    CHECK_EQ(file_ranges(path, "around", &to_end, &fs), 2000);
    CHECK(to_end);
    free(fs);
}

/* The program's own file, put at the stream's number. */
static int own_fd = -1, own_at = -1;

static void take_dup2(int fd, const char *own) {
    own_fd = open(own, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(own_fd >= 0);
    REQUIRE(write(own_fd, "mine", 4) == 4);
    REQUIRE(dup2(own_fd, fd) == fd);
    own_at = fd;
}

static void test_dup2(void) {
    stream_around("fd_dup2.json", take_dup2, 1);
    /* strobe neither wrote into the program's file nor closed it. */
    struct stat sb;
    CHECK(fstat(own_fd, &sb) == 0 && sb.st_size == 4);
    CHECK(fcntl(own_at, F_GETFD) != -1);
    close(own_at);
    close(own_fd);
}

static void take_close(int fd, const char *own) {
    (void)own;
    close(fd);
}

static void test_close(void) {
    stream_around("fd_close.json", take_close, 1);
}

static double spin_cpu_ms;

/* Every descriptor closed, then 200 ms of nothing: the stream's thread must not spin. */
static void take_all(int fd, const char *own) {
    (void)fd;
    (void)own;
    close_from_3();
    double t0 = cpu_ms();
    sleep_ms(200);
    spin_cpu_ms = cpu_ms() - t0;
}

static void test_close_all(void) {
    stream_around("fd_close_all.json", take_all, 1);
    fprintf(stderr, "close_range: %.1f ms of CPU in 200 ms of sleep\n", spin_cpu_ms);
    CHECK_INT(spin_cpu_ms, <, 60);
}

/* The flight recorder's signal dumps after the program closed every descriptor. */
static void test_flight_signal(void) {
    char path[600];
    snprintf(path, sizeof path, "%s/fd_flight.json", out_dir);
    unlink(path);
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.buffer_bytes = (size_t)1 << 20;
    cfg.ring_bytes = (size_t)256 << 10;
    cfg.flight_signal = SIGUSR2;
    cfg.flight_path = path;
    REQUIRE(strobe_start(&cfg) == 0);
    STROBE_SITE_DEFINE(s, "flight", STROBE_RECORD_SCOPE_FUNCTION);
    record(&s, 1000);
    close_from_3();
    double t0 = cpu_ms();
    sleep_ms(100);
    double spent = cpu_ms() - t0;
    raise(SIGUSR2);
    int found = 0;
    for (int i = 0; i < 200 && !found; i++) {
        sleep_ms(10);
        found = access(path, F_OK) == 0;
    }
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    strobe_result_free(r);
    fprintf(stderr, "flight: dump %s, %.1f ms of CPU in 100 ms of sleep\n",
            found ? "written" : "missing", spent);
    CHECK(found);
    CHECK_INT(spent, <, 40);
}

/* ---- the CPU sampler -------------------------------------------------------------------------
 */

/* The descriptors of perf events, at most `max`. */
static int perf_fds(int *fds, int max) {
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < max) {
        char link[300], to[128];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(link, to, sizeof to - 1);
        if (k <= 0) continue;
        to[k] = '\0';
        if (strcmp(to, "anon_inode:[perf_event]") == 0) fds[n++] = atoi(e->d_name);
    }
    closedir(d);
    return n;
}

/* The sampler's descriptors closed (`devnull` 0) or /dev/null put at their numbers. */
static void test_sampler(int devnull) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.cpu_sample_hz = 1000;
    REQUIRE(strobe_start(&cfg) == 0);
    int fds[256];
    int n = perf_fds(fds, 256);
    if (n == 0) {
        strobe_result *r = NULL;
        (void)strobe_stop(&r);
        strobe_result_free(r);
        fprintf(stderr, "sampler test skipped: no perf events (sampling refused here)\n");
        return;
    }
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    REQUIRE(null_fd >= 0);
    for (int i = 0; i < n; i++) {
        if (devnull)
            REQUIRE(dup2(null_fd, fds[i]) == fds[i]);
        else
            close(fds[i]);
    }
    /* Work for samples, then sleep: a spinning drain thread shows as CPU time in the sleep. */
    volatile double x = 0;
    for (long i = 0; i < 20000000; i++)
        x += (double)i;
    (void)x;
    double t0 = cpu_ms();
    sleep_ms(300);
    double spent = cpu_ms() - t0;
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    const char *sm = meta_value(r, "strobe_cpu_sampling");
    fprintf(stderr, "sampler, %d descriptors %s: %.1f ms of CPU in 300 ms of sleep; %s\n", n,
            devnull ? "replaced by /dev/null" : "closed", spent, sm ? sm : "(no sampling)");
    CHECK_INT(spent, <, 60);
    CHECK_EQ(json_number(sm, "descriptors_lost"), n);
    strobe_result_free(r);
    if (devnull) {
        /* The program's /dev/null at those numbers is still open: strobe did not close it. */
        for (int i = 0; i < n; i++) {
            CHECK(fcntl(fds[i], F_GETFD) != -1);
            close(fds[i]);
        }
    }
    close(null_fd);
}

/* Whether test `name` runs: every one without arguments, else those named. */
static int runs(int argc, char **argv, const char *name) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0) return 1;
    return argc < 2;
}

int main(int argc, char **argv) {
    snprintf(out_dir, sizeof out_dir, "%s", STROBE_TEST_OUT_DIR);
    mkdir(out_dir, 0755);
    if (runs(argc, argv, "cap")) {
        test_cap("fd_cap.json");
        test_cap("fd_cap.pftrace");
        test_cap_config();
    }
    if (runs(argc, argv, "dup2")) test_dup2();
    if (runs(argc, argv, "close")) test_close();
    if (runs(argc, argv, "sampler")) {
        test_sampler(1);
        test_sampler(0);
    }
    /* Last: these close every descriptor of the process. */
    if (runs(argc, argv, "flight")) test_flight_signal();
    if (runs(argc, argv, "close_all")) test_close_all();
    return check_result();
}
