/* test_stream.c: streaming output and the flight recorder (stream.c).
 *
 * - same ranges: a workload streamed gives the same ranges (count per name, depth per name) as the
 *   same workload kept in memory, with chunks small enough that begins and ends fall in different
 *   chunks;
 * - bounded memory: far more records than buffer_bytes hold are streamed; every range is either
 *   in the file or counted as dropped, and the arena never passes its cap;
 * - crash: a child killed with SIGKILL while it streams leaves a file our reader reads to its end
 *   (kept in out/stream/ for validate_traces.sh, which runs the independent checkers on it);
 * - flight recorder: the window keeps recent ranges and loses old ones, dumped by the API, by a
 *   signal, and returned by stop;
 * - bad configs are refused with a clear code;
 * - operator details: shapes, FLOPs (given and computed), modules, stacks, perf counters and
 *   backend events are streamed as the args the in-memory result gets (compared range by range),
 *   with the same nesting. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "reader/trace_reader.h"
#include "strobe/strobe.h"
#include "stream_burst.h"

static char out_dir[512];

static void path_in_out(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", out_dir, name);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the workload --------------------------------------------------------------------------- */

#define NAMES 6
static const char *const dyn_names[NAMES] = {"dyn_a", "dyn_b", "dyn \"quoted\"",
                                             "dyn_d", "dyn_e", "dyn_f"};

/* Per thread: `iters` times an outer site range holding a dynamic range holding a leaf site range,
 * an instant and a counter sample. */
static void workload(int iters) {
    STROBE_SITE_DEFINE(outer, "outer", STROBE_RECORD_SCOPE_FUNCTION);
    STROBE_SITE_DEFINE(leaf, "leaf", STROBE_RECORD_SCOPE_FUNCTION);
    for (int i = 0; i < iters; i++) {
        strobe_range_begin_site(&outer);
        strobe_range_begin(dyn_names[i % NAMES]);
        strobe_range_begin_site(&leaf);
        strobe_range_end();
        strobe_instant("tick");
        strobe_range_end();
        strobe_counter("progress", (double)i);
        strobe_range_end();
    }
}

static void *workload_thread(void *arg) {
    workload((int)(intptr_t)arg);
    return NULL;
}

static void run_workload(int threads, int iters) {
    pthread_t th[8];
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, workload_thread, (void *)(intptr_t)iters);
    workload(iters);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
}

/* ---- reading a trace back ---------------------------------------------------------------------
 */

#define MAX_KEYS 32
typedef struct tally {
    char name[MAX_KEYS][48];
    long long count[MAX_KEYS];
    long long depth_sum[MAX_KEYS];
    int n;
    long long ranges, instants, counters, bad;
    int complete;   /* "strobe_stream": {"complete": true} seen */
    int user_meta;  /* the metadata key "user_key" seen */
    int trace_name; /* "traceName" seen */
    int reached_end;
    int unterminated; /* the event array was not closed (a stream cut short) */
} tally;

static int key_of(tally *t, const char *name, size_t len) {
    for (int i = 0; i < t->n; i++)
        if (strlen(t->name[i]) == len && memcmp(t->name[i], name, len) == 0) return i;
    if (t->n == MAX_KEYS) return -1;
    snprintf(t->name[t->n], sizeof t->name[0], "%.*s", (int)len, name);
    return t->n++;
}

static long long tally_count(const tally *t, const char *name) {
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->name[i], name) == 0) return t->count[i];
    return 0;
}

static long long tally_depth(const tally *t, const char *name) {
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->name[i], name) == 0) return t->depth_sum[i];
    return 0;
}

typedef struct span {
    int64_t tid, start, end;
    int key;
} span;

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->end > y->end ? -1 : (x->end < y->end); /* the longer (outer) first */
}

/* Reads a JSON trace with our reader: counts per name, and each range's depth (by containment on
 * its thread). The "strobe session" span is left out. */
static int read_trace(const char *path, tally *t) {
    memset(t, 0, sizeof *t);
    strobe_rd *rd = NULL;
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    if (strobe_rd_open(&rd, path, &opt) != 0) {
        fprintf(stderr, "cannot open %s: %s\n", path, rd ? strobe_rd_errmsg(rd) : "?");
        strobe_rd_close(rd);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    span *spans = malloc(cap * sizeof *spans);
    strobe_rd_item it;
    int rc;
    while ((rc = strobe_rd_next(rd, &it)) > 0) {
        if (it.kind == STROBE_RD_META) {
            if (it.meta->key.s && strcmp(it.meta->key.s, "strobe_stream") == 0 &&
                memmem(it.meta->value.raw, it.meta->value.len, "\"complete\": true", 16))
                t->complete = 1;
            if (it.meta->key.s && strcmp(it.meta->key.s, "user_key") == 0) t->user_meta = 1;
            if (it.meta->key.s && strcmp(it.meta->key.s, "traceName") == 0) t->trace_name = 1;
            continue;
        }
        const strobe_rd_event *e = it.event;
        if (e->bad) {
            t->bad++;
            continue;
        }
        if (e->ph.len != 1) continue;
        char ph = e->ph.s[0];
        if (ph == 'X' && e->cat.s && strcmp(e->cat.s, "Trace") == 0) continue;
        if (ph == 'X') {
            t->ranges++;
            if (n == cap) {
                cap *= 2;
                spans = realloc(spans, cap * sizeof *spans);
            }
            spans[n].tid = e->tid.num;
            spans[n].start = e->ts_ns;
            spans[n].end = e->ts_ns + e->dur_ns;
            spans[n].key = key_of(t, e->name.s, e->name.len);
            n++;
        } else if (ph == 'i') {
            t->instants++;
            int k = key_of(t, e->name.s, e->name.len);
            if (k >= 0) t->count[k]++;
        } else if (ph == 'C') {
            t->counters++;
        }
    }
    if (rc != 0) fprintf(stderr, "%s: %s\n", path, strobe_rd_errmsg(rd));
    t->reached_end = rc == 0;
    t->unterminated = strobe_rd_get_info(rd)->unterminated;
    strobe_rd_close(rd);
    qsort(spans, n, sizeof *spans, cmp_span);
    /* Depth by containment: a stack of open ends per thread. */
    int64_t stack[256];
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || spans[i].tid != spans[i - 1].tid) depth = 0;
        while (depth > 0 && stack[depth - 1] <= spans[i].start)
            depth--;
        if (spans[i].key >= 0) {
            t->count[spans[i].key]++;
            t->depth_sum[spans[i].key] += depth;
        }
        if (depth < 256) stack[depth++] = spans[i].end;
    }
    free(spans);
    return rc == 0 ? 0 : -1;
}

/* The same figures from a result held in memory. */
static void tally_result(const strobe_result *r, tally *t) {
    memset(t, 0, sizeof *t);
    const strobe_event *ev = strobe_result_events(r);
    for (size_t i = 0; i < strobe_result_event_count(r); i++) {
        const strobe_event *e = &ev[i];
        if (e->kind == STROBE_EVENT_COUNTER) {
            t->counters++;
            continue;
        }
        int k = key_of(t, e->name, strlen(e->name));
        if (k < 0) continue;
        t->count[k]++;
        if (e->kind == STROBE_EVENT_RANGE) {
            t->ranges++;
            t->depth_sum[k] += e->depth;
        } else {
            t->instants++;
        }
    }
}

static const char *meta_value(const strobe_result *r, const char *key) {
    for (size_t i = 0; i < strobe_result_metadata_count(r); i++) {
        const char *k, *v;
        if (strobe_result_metadata(r, i, &k, &v) == 0 && strcmp(k, key) == 0) return v;
    }
    return NULL;
}

/* ---- tests ------------------------------------------------------------------------------------
 */

static int is_json(const char *name) {
    return strstr(name, ".json") != NULL;
}

static void test_same_ranges(const char *file) {
    enum { THREADS = 3, ITERS = 4000 };
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.chunk_bytes = 4096;
    cfg.buffer_bytes = (size_t)64 << 20;
    REQUIRE(strobe_start(&cfg) == 0);
    run_workload(THREADS, ITERS);
    strobe_result *mem = NULL;
    REQUIRE(strobe_stop(&mem) == 0);
    tally want;
    tally_result(mem, &want);
    CHECK_EQ(strobe_result_stats(mem)->dropped_events, 0);
    strobe_result_free(mem);

    char path[600];
    path_in_out(path, sizeof path, file);
    cfg.stream_path = path;
    cfg.trace_name = "streamed";
    REQUIRE(strobe_start(&cfg) == 0);
    run_workload(THREADS, ITERS);
    CHECK_EQ(strobe_add_metadata_json("user_key", "{\"a\": [1, 2]}"), 0);
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    const strobe_stats *st = strobe_result_stats(r);
    CHECK_EQ(strobe_result_event_count(r), 0);
    CHECK_EQ(st->dropped_events, 0);
    CHECK_EQ(st->unmatched_ends, 0);
    CHECK_EQ(st->unfinished_ranges, 0);
    CHECK_EQ(strobe_result_thread_count(r), THREADS + 1);
    const char *sm = meta_value(r, "strobe_stream");
    CHECK(sm != NULL && strstr(sm, "\"mode\": \"stream\"") != NULL);
    strobe_result_free(r);

    tally got;
    REQUIRE(read_trace(path, &got) == 0);
    /* Both formats end with the stream's counts, "complete": true among them. */
    CHECK(got.complete);
    if (is_json(file)) {
        CHECK(got.user_meta);
        CHECK(got.trace_name);
    }
    CHECK_EQ(got.bad, 0);
    CHECK_EQ(got.ranges, want.ranges);
    CHECK_EQ(got.ranges, (long long)(THREADS + 1) * ITERS * 3);
    CHECK_EQ(got.instants, want.instants);
    CHECK_EQ(got.counters, want.counters);
    const char *names[] = {"outer", "leaf", "tick", "dyn_a", "dyn \"quoted\"", "dyn_f"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (tally_count(&got, names[i]) != tally_count(&want, names[i]) ||
            tally_depth(&got, names[i]) != tally_depth(&want, names[i]))
            fprintf(stderr, "name %s\n", names[i]);
        CHECK_EQ(tally_count(&got, names[i]), tally_count(&want, names[i]));
        CHECK_EQ(tally_depth(&got, names[i]), tally_depth(&want, names[i]));
    }
    CHECK_EQ(tally_depth(&got, "leaf"), 2 * tally_count(&got, "leaf"));
}

/* Counts the "bounded" ranges in a stream file as it grows: the bytes past the last one counted
 * are read again next time (the closing brackets there are overwritten by the next append). */
typedef struct file_scan {
    long long off, count;
} file_scan;

static long long count_in_file(const char *path, file_scan *fs) {
    static const char key[] = "\"bounded\"";
    int fd = open(path, O_RDONLY);
    if (fd < 0) return fs->count;
    char buf[1 << 16];
    for (;;) {
        ssize_t n = pread(fd, buf, sizeof buf, fs->off);
        if (n <= 0) break;
        char *p = buf, *last_end = NULL;
        while ((p = memmem(p, (size_t)(buf + n - p), key, sizeof key - 1)) != NULL) {
            fs->count++;
            p += sizeof key - 1;
            last_end = p;
        }
        if (last_end == NULL) break;
        fs->off += last_end - buf;
        if (n < (ssize_t)sizeof buf) break;
    }
    close(fd);
    return fs->count;
}

/* Far more records than the buffer holds. The workload waits, between rounds much smaller than the
 * buffer, until the file shows that the stream has caught up (the disk keeps up): then nothing may
 * be dropped. The waits are bounded and nothing is timed. */
static void test_bounded(void) {
    enum { ROUNDS = 400, PER_ROUND = 1000 };
    file_scan scan = {0, 0};
    char path[600];
    path_in_out(path, sizeof path, "bounded.json");
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.chunk_bytes = 4096;
    cfg.buffer_bytes = (size_t)256 << 10;
    cfg.prefault_bytes = 0;
    cfg.stream_path = path;
    REQUIRE(strobe_start(&cfg) == 0);
    STROBE_SITE_DEFINE(s, "bounded", STROBE_RECORD_SCOPE_FUNCTION);
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < PER_ROUND; i++) {
            strobe_range_begin_site(&s);
            strobe_range_end();
        }
        /* All but the current chunk (at most 4096 / 24 ranges) is on its way to the file. */
        long long want = ((long long)r + 1) * PER_ROUND - 200;
        for (int k = 0; k < 30000 && count_in_file(path, &scan) < want; k++)
            sleep_ms(1);
    }
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    const strobe_stats *st = strobe_result_stats(r);
    long long produced = (long long)ROUNDS * PER_ROUND;
    /* 24 bytes a pair: the records are 36 times the buffer. */
    CHECK(produced * 24 > 30 * (long long)cfg.buffer_bytes);
    CHECK_EQ(st->dropped_events, 0);
    CHECK_INT(st->buffer_bytes_used, <=, st->buffer_bytes_cap);
    CHECK_INT(st->buffer_bytes_cap, <=, cfg.buffer_bytes);
    fprintf(stderr, "bounded: %lld ranges, %llu dropped, arena %llu of %llu bytes\n", produced,
            (unsigned long long)st->dropped_events, (unsigned long long)st->buffer_bytes_used,
            (unsigned long long)st->buffer_bytes_cap);
    uint64_t dropped = st->dropped_events;
    strobe_result_free(r);
    tally got;
    REQUIRE(read_trace(path, &got) == 0);
    CHECK(got.complete);
    /* Every range is in the file or counted as dropped (by its begin). */
    CHECK_EQ(tally_count(&got, "bounded") + (long long)dropped, produced);
    CHECK_EQ(tally_count(&got, "bounded"), produced);
    unlink(path);
}

/* A buffer of two chunks cannot hold a burst while the background thread sleeps between its
 * polls: records are dropped and counted, the file marks where, recording resumes once a chunk
 * is free, and every range is in the file or counted as dropped. */
static void test_drops(void) {
    enum { PAIRS = 2000000 };
    char path[600];
    path_in_out(path, sizeof path, "stream/drops.json");
    strobe_result *r = stream_burst(path, PAIRS);
    const strobe_stats *st = strobe_result_stats(r);
    uint64_t dropped = st->dropped_events;
    CHECK_INT(dropped, >, 0);
    CHECK_INT(dropped, <, PAIRS);
    CHECK_INT(st->buffer_bytes_used, <=, 8192);
    const char *sm = meta_value(r, "strobe_stream");
    CHECK(sm != NULL && strstr(sm, "\"dropped_events\": 0,") == NULL);
    strobe_result_free(r);
    tally got;
    REQUIRE(read_trace(path, &got) == 0);
    CHECK_EQ(tally_count(&got, STREAM_BURST_NAME) + (long long)dropped, PAIRS);
    CHECK_INT(tally_count(&got, "[strobe] buffer full: records dropped"), >, 0);
}

/* A child streams until it is killed; the file must read to its end. */
static void test_killed(const char *file) {
    char path[600];
    path_in_out(path, sizeof path, file);
    unlink(path);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        strobe_config cfg;
        strobe_config_init(&cfg);
        cfg.chunk_bytes = 4096;
        cfg.buffer_bytes = (size_t)1 << 20;
        cfg.stream_path = path;
        if (strobe_start(&cfg) != 0) _exit(3);
        for (;;) {
            workload(100);
            sleep_ms(1);
        }
    }
    /* Killed once the file has grown well past its header (a bounded wait, not a timing check). */
    struct stat sb;
    for (int i = 0; i < 20000; i++) {
        if (stat(path, &sb) == 0 && sb.st_size > (1 << 20)) break;
        sleep_ms(1);
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status));
    tally got;
    REQUIRE(read_trace(path, &got) == 0);
    CHECK(got.reached_end);
    CHECK(!got.complete);
    CHECK_EQ(got.bad, 0);
    CHECK_INT(tally_count(&got, "leaf"), >, 1000);
    /* Nesting is whole as far as the file goes: every outer range holds a leaf, except one that
     * the cut left open before its leaf began (a Perfetto begin is written when it happens).
     * Where the writer fell behind (a slow sanitizer build) and dropped records, which the file's
     * marks count, a range may have lost its leaf or its parent: the relation is checked only
     * where nothing was dropped. */
    long long marks = tally_count(&got, "[strobe] buffer full: records dropped");
    if (marks == 0) {
        CHECK_INT(tally_count(&got, "outer"), <=, tally_count(&got, "leaf") + 1);
        CHECK_INT(tally_count(&got, "leaf"), <=, tally_count(&got, "outer") + 1);
    }
    if (is_json(file) && got.unterminated) {
        /* The kill cut an append short: the file ends between two events, without its closing
         * brackets (test_cut_pages checks every such cut). Viewers that need a whole JSON
         * document reject it, so it is not left for validate_traces.sh. */
        char cut[640];
        snprintf(cut, sizeof cut, "%s.cut", path);
        CHECK_EQ(rename(path, cut), 0);
        fprintf(stderr, "killed: the kill cut an append short; %s ends between two events\n", cut);
    }
}

/* A JSON stream cut at any page boundary, as a killed write() leaves it, still reads to its end
 * with every event whole: the writer never lets an event cross a page boundary. Checked on a
 * sample of boundaries of a whole stream file. */
static void test_cut_pages(const char *file) {
    char path[600];
    path_in_out(path, sizeof path, file);
    FILE *f = fopen(path, "rb");
    REQUIRE(f != NULL);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc((size_t)size);
    REQUIRE(data != NULL && fread(data, 1, (size_t)size, f) == (size_t)size);
    fclose(f);
    long pages = size / 4096;
    REQUIRE(pages > 100);
    long step = pages / 29 + 1, tried = 0;
    long long last_events = 0;
    for (long k = 1; k <= pages; k += step) {
        size_t cut = (size_t)k * 4096;
        strobe_rd *rd = NULL;
        strobe_rd_options opt;
        strobe_rd_options_init(&opt);
        REQUIRE(strobe_rd_open_mem(&rd, data, cut, "cut", &opt) == 0);
        strobe_rd_item it;
        int rc;
        long long events = 0, bad = 0;
        while ((rc = strobe_rd_next(rd, &it)) > 0)
            if (it.kind == STROBE_RD_EVENT) {
                events++;
                bad += it.event->bad != 0;
            }
        if (rc != 0) fprintf(stderr, "cut at %zu: %s\n", cut, strobe_rd_errmsg(rd));
        CHECK_EQ(rc, 0);
        CHECK_EQ(bad, 0);
        CHECK(strobe_rd_get_info(rd)->unterminated);
        CHECK_INT(events, >, last_events);
        last_events = events;
        strobe_rd_close(rd);
        tried++;
    }
    CHECK_INT(tried, >=, 20);
    free(data);
}

/* A thread that records `count` "latest" ranges, says so, and (unless `release` is set already)
 * waits to be released: its chunk stays current, never handed over. */
struct waiter {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int recorded, release, count;
};

static void *waiter_main(void *arg) {
    struct waiter *w = arg;
    STROBE_SITE_DEFINE(latest_site, "latest", STROBE_RECORD_SCOPE_FUNCTION);
    for (int i = 0; i < w->count; i++) {
        strobe_range_begin_site(&latest_site);
        strobe_range_end();
    }
    pthread_mutex_lock(&w->lock);
    w->recorded = 1;
    pthread_cond_broadcast(&w->cond);
    while (!w->release)
        pthread_cond_wait(&w->cond, &w->lock);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static void test_flight(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.chunk_bytes = 4096;
    cfg.buffer_bytes = (size_t)1 << 20;
    cfg.ring_bytes = (size_t)64 << 10;
    cfg.flight_signal = SIGUSR2;
    char sigpath[600], apipath[600];
    path_in_out(sigpath, sizeof sigpath, "stream/flight_signal.json");
    path_in_out(apipath, sizeof apipath, "stream/flight_api.json");
    unlink(sigpath);
    cfg.flight_path = sigpath;
    REQUIRE(strobe_start(&cfg) == 0);
    STROBE_SITE_DEFINE(old_site, "old_phase", STROBE_RECORD_SCOPE_FUNCTION);
    STROBE_SITE_DEFINE(new_site, "new_phase", STROBE_RECORD_SCOPE_FUNCTION);
    for (int i = 0; i < 50000; i++) {
        strobe_range_begin_site(&old_site);
        strobe_range_end();
        if (i % 1000 == 0) sleep_ms(1);
    }
    /* 200 KB of records: three times the window. */
    for (int i = 0; i < 8000; i++) {
        strobe_range_begin_site(&new_site);
        strobe_range_end();
        if (i % 1000 == 0) sleep_ms(1);
    }
    /* The newest records sit in chunks their threads have not handed over yet: 40 ranges here, 30
     * on a thread that waits (alive, its chunk current) and 20 on one that has exited. */
    STROBE_SITE_DEFINE(latest_site, "latest", STROBE_RECORD_SCOPE_FUNCTION);
    for (int i = 0; i < 40; i++) {
        strobe_range_begin_site(&latest_site);
        strobe_range_end();
    }
    struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 30};
    pthread_t live, gone;
    pthread_create(&live, NULL, waiter_main, &w);
    struct waiter g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 1, 20};
    pthread_create(&gone, NULL, waiter_main, &g);
    pthread_join(gone, NULL);
    pthread_mutex_lock(&w.lock);
    while (!w.recorded)
        pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    CHECK_EQ(strobe_flight_dump(apipath), 0);
    pthread_mutex_lock(&w.lock);
    w.release = 1;
    pthread_cond_broadcast(&w.cond);
    pthread_mutex_unlock(&w.lock);
    pthread_join(live, NULL);
    tally got;
    REQUIRE(read_trace(apipath, &got) == 0);
    CHECK_EQ(tally_count(&got, "old_phase"), 0);
    CHECK_INT(tally_count(&got, "new_phase"), >, 1000);
    CHECK_EQ(tally_count(&got, "latest"), 40 + 30 + 20);
    /* The window is at most ring_bytes of records: 24 bytes a range. */
    CHECK_INT(tally_count(&got, "new_phase"), <=, (64 << 10) / 24);
    /* Any format the writers know: the suffix chooses. */
    char pfpath[600];
    path_in_out(pfpath, sizeof pfpath, "stream/flight_api.pftrace");
    CHECK_EQ(strobe_flight_dump(pfpath), 0);
    tally pf;
    REQUIRE(read_trace(pfpath, &pf) == 0);
    CHECK_EQ(tally_count(&pf, "old_phase"), 0);
    CHECK_INT(tally_count(&pf, "new_phase"), >, 1000);

    raise(SIGUSR2);
    for (int i = 0; i < 10000 && access(sigpath, F_OK) != 0; i++)
        sleep_ms(1);
    tally sig;
    REQUIRE(read_trace(sigpath, &sig) == 0);
    CHECK_EQ(tally_count(&sig, "old_phase"), 0);
    CHECK_INT(tally_count(&sig, "new_phase"), >, 1000);

    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    tally res;
    tally_result(r, &res);
    CHECK_EQ(tally_count(&res, "old_phase"), 0);
    CHECK_INT(tally_count(&res, "new_phase"), >, 1000);
    const char *sm = meta_value(r, "strobe_stream");
    CHECK(sm != NULL && strstr(sm, "\"signal_dumps\": 1") != NULL);
    strobe_result_free(r);
    /* The program's own handler is back. */
    struct sigaction sa;
    sigaction(SIGUSR2, NULL, &sa);
    CHECK(sa.sa_handler == SIG_DFL);
}

/* Dumps while two threads record without pause: each dump copies the threads' current chunks as
 * they are being written (under TSan: no race), and reads back whole, its newest ranges later
 * than the previous dump's. */
static int busy_stop;

static void *busy_main(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&busy_stop, __ATOMIC_RELAXED))
        workload(10);
    return NULL;
}

static void test_flight_busy(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.chunk_bytes = 4096;
    cfg.buffer_bytes = (size_t)2 << 20;
    cfg.ring_bytes = (size_t)256 << 10;
    REQUIRE(strobe_start(&cfg) == 0);
    __atomic_store_n(&busy_stop, 0, __ATOMIC_RELAXED);
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, busy_main, NULL);
    char path[600];
    path_in_out(path, sizeof path, "stream/flight_busy.json");
    for (int d = 0; d < 10; d++) {
        sleep_ms(5);
        CHECK_EQ(strobe_flight_dump(path), 0);
        tally got;
        REQUIRE(read_trace(path, &got) == 0);
        CHECK_EQ(got.bad, 0);
        CHECK_INT(tally_count(&got, "leaf"), >, 0);
    }
    __atomic_store_n(&busy_stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    strobe_result_free(r);
}

/* ring_ms: chunks older than the window are recycled even when the bytes would fit. */
static void test_flight_ms(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.chunk_bytes = 4096;
    cfg.buffer_bytes = (size_t)4 << 20;
    cfg.ring_ms = 50;
    REQUIRE(strobe_start(&cfg) == 0);
    STROBE_SITE_DEFINE(old_site, "old_phase", STROBE_RECORD_SCOPE_FUNCTION);
    STROBE_SITE_DEFINE(new_site, "new_phase", STROBE_RECORD_SCOPE_FUNCTION);
    for (int i = 0; i < 5000; i++) {
        strobe_range_begin_site(&old_site);
        strobe_range_end();
    }
    /* Closes the old chunk into the ring, then lets it age past the window. */
    for (int i = 0; i < 200; i++) {
        strobe_range_begin_site(&new_site);
        strobe_range_end();
    }
    sleep_ms(300);
    for (int i = 0; i < 2000; i++) {
        strobe_range_begin_site(&new_site);
        strobe_range_end();
    }
    char path[600];
    path_in_out(path, sizeof path, "stream/flight_ms.json");
    CHECK_EQ(strobe_flight_dump(path), 0);
    tally got;
    REQUIRE(read_trace(path, &got) == 0);
    CHECK_EQ(tally_count(&got, "old_phase"), 0);
    CHECK_INT(tally_count(&got, "new_phase"), >, 0);
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    strobe_result_free(r);
}

static void test_bad_configs(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.stream_path = "/nonexistent-dir/x/stream.json";
    CHECK_EQ(strobe_start(&cfg), STROBE_EIO);
    CHECK_EQ(strobe_is_running(), 0);
    cfg.stream_path = "";
    CHECK_EQ(strobe_start(&cfg), STROBE_EINVAL);
    char path[600];
    path_in_out(path, sizeof path, "bad.json");
    cfg.stream_path = path;
    cfg.ring_bytes = 1 << 20;
    CHECK_EQ(strobe_start(&cfg), STROBE_EINVAL); /* streaming and flight recorder at once */
    cfg.ring_bytes = 0;
    cfg.flight_signal = SIGUSR2;
    CHECK_EQ(strobe_start(&cfg), STROBE_EINVAL); /* a signal without the flight recorder */
    strobe_config_init(&cfg);
    cfg.ring_bytes = cfg.buffer_bytes * 2;
    CHECK_EQ(strobe_start(&cfg), STROBE_EINVAL);
    cfg.ring_bytes = 1 << 20;
    cfg.flight_signal = SIGKILL;
    CHECK_EQ(strobe_start(&cfg), STROBE_EINVAL);
    CHECK_EQ(strobe_flight_dump(path), STROBE_ENOSESSION);
    CHECK_EQ(strobe_flight_dump(NULL), STROBE_EINVAL);
    /* A session without the flight recorder has no window to dump. */
    strobe_config_init(&cfg);
    REQUIRE(strobe_start(&cfg) == 0);
    CHECK_EQ(strobe_flight_dump(path), STROBE_ENOSESSION);
    strobe_result *r = NULL;
    CHECK_EQ(strobe_stop(&r), 0);
    strobe_result_free(r);
    /* A dump to a folder that does not exist. */
    cfg.ring_bytes = 1 << 20;
    REQUIRE(strobe_start(&cfg) == 0);
    CHECK_EQ(strobe_flight_dump("/nonexistent-dir/x/dump.json"), STROBE_EIO);
    CHECK_EQ(strobe_stop(&r), 0);
    strobe_result_free(r);
}

/* A child forked while the parent streams starts a session of its own (dropping its copy of the
 * parent's, whose background thread it does not have) and leaves the parent's file alone. */
static void test_fork(void) {
    char path[600];
    path_in_out(path, sizeof path, "stream/forked_parent.json");
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.chunk_bytes = 4096;
    cfg.buffer_bytes = (size_t)1 << 20;
    cfg.stream_path = path;
    REQUIRE(strobe_start(&cfg) == 0);
    workload(500);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        strobe_config c2;
        strobe_config_init(&c2);
        c2.buffer_bytes = (size_t)1 << 20;
        if (strobe_start(&c2) != 0) _exit(3);
        workload(10);
        strobe_result *r = NULL;
        if (strobe_stop(&r) != 0) _exit(4);
        int ok = strobe_result_event_count(r) == 10 * 5;
        strobe_result_free(r);
        _exit(ok ? 0 : 5);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
    workload(500);
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    strobe_result_free(r);
    tally got;
    REQUIRE(read_trace(path, &got) == 0);
    CHECK(got.complete);
    CHECK_EQ(tally_count(&got, "leaf"), 1000);
}

/* ---- operator details ------------------------------------------------------------------------ */

/* Per iteration: module scopes around an aten::mm (inputs: FLOPs computed) holding a run-time named
 * range with FLOPs given, then two backend events reported inner first (as a delegate reports them
 * when each ends), on the thread's own backend, apart from the previous iteration's. */
static void details_workload(int iters, const char *backend) {
    STROBE_SITE_DEFINE(mm, "aten::mm", STROBE_RECORD_SCOPE_FUNCTION);
    static const int64_t a[2] = {4, 8}, b[2] = {8, 2};
    strobe_input in[3];
    memset(in, 0, sizeof in);
    in[0].kind = in[1].kind = STROBE_INPUT_TENSOR;
    in[0].dtype = in[1].dtype = "float";
    in[0].dims = a;
    in[1].dims = b;
    in[0].ndims = in[1].ndims = 2;
    in[2].kind = STROBE_INPUT_INT;
    in[2].int_value = 7;
    int64_t last = strobe_clock_now_ns();
    for (int i = 0; i < iters; i++) {
        strobe_module_push("net");
        strobe_module_push(i % 2 ? "fc1" : "fc2 \"x\"");
        strobe_range_begin_site(&mm);
        strobe_range_inputs(in, 3);
        strobe_range_begin(i % 3 ? "aten::relu" : "aten::gelu");
        strobe_range_flops(1000 + i % 7);
        strobe_range_end();
        strobe_range_end();
        strobe_module_pop();
        strobe_module_pop();
        int64_t now = strobe_clock_now_ns();
        while (now < last + 2500)
            now = strobe_clock_now_ns();
        last = now;
        strobe_record_backend_event_ns(now - 1500, now - 1200, 2 * i + 1, "inner_op", backend);
        strobe_record_backend_event_ns(now - 2000, now - 1000, 2 * i, "delegate_op", backend);
    }
}

static int details_iters;

static void *details_thread(void *arg) {
    (void)arg;
    details_workload(details_iters, "npu1");
    return NULL;
}

static void run_details(int iters) {
    pthread_t th;
    details_iters = iters;
    pthread_create(&th, NULL, details_thread, NULL);
    details_workload(iters, "npu0");
    pthread_join(th, NULL);
}

/* The detail args of every range, one line per range: its name, then each detail key present
 * with its value (strings decoded; perf counters by presence only, their values differ from run
 * to run). Sorted, so that two traces compare as multisets. */
typedef struct sigs {
    char **line;
    size_t n, cap;
} sigs;

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int read_sigs(const char *path, sigs *out) {
    static const char *const keys[] = {"Input Dims", "Input type",  "Concrete Inputs",
                                       "flops",      "Call stack",  "Module Hierarchy",
                                       "Backend",    "Debug handle"};
    memset(out, 0, sizeof *out);
    strobe_rd *rd = NULL;
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    if (strobe_rd_open(&rd, path, &opt) != 0) {
        strobe_rd_close(rd);
        return -1;
    }
    strobe_rd_item it;
    int rc;
    char *line = malloc(1 << 16);
    while ((rc = strobe_rd_next(rd, &it)) > 0) {
        if (it.kind != STROBE_RD_EVENT) continue;
        const strobe_rd_event *e = it.event;
        if (e->ph.len != 1 || e->ph.s[0] != 'X' || (e->cat.s && strcmp(e->cat.s, "Trace") == 0))
            continue;
        size_t len = (size_t)snprintf(line, 1 << 16, "%s", e->name.s);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            strobe_rd_value v;
            if (strobe_rd_event_arg(e, keys[k], &v) != 1) continue;
            char text[4096];
            if (v.type == STROBE_RD_T_STRING) {
                strobe_rd_value_str(&v, text, sizeof text, NULL);
            } else {
                snprintf(text, sizeof text, "%.*s", (int)v.len, v.raw);
            }
            len += (size_t)snprintf(line + len, (1 << 16) - len, "|%s=%s", keys[k], text);
        }
        strobe_rd_value v;
        if (strobe_rd_event_arg(e, "task-clock", &v) == 1)
            len += (size_t)snprintf(line + len, (1 << 16) - len, "|task-clock");
        if (out->n == out->cap) {
            out->cap = out->cap ? out->cap * 2 : 1024;
            out->line = realloc(out->line, out->cap * sizeof *out->line);
        }
        out->line[out->n++] = strdup(line);
    }
    free(line);
    strobe_rd_close(rd);
    qsort(out->line, out->n, sizeof *out->line, cmp_str);
    return rc == 0 ? 0 : -1;
}

static void sigs_free(sigs *s) {
    for (size_t i = 0; i < s->n; i++)
        free(s->line[i]);
    free(s->line);
}

static void test_details_streamed(const char *file) {
    enum { ITERS = 3000 };
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.chunk_bytes = 4096; /* a range's details and its end often fall in the next chunk */
    cfg.buffer_bytes = (size_t)64 << 20;
    cfg.record_shapes = cfg.with_flops = cfg.with_modules = cfg.with_stack = 1;
    cfg.perf_events = "task-clock";
    char mem_path[600], path[600];
    path_in_out(mem_path, sizeof mem_path, "stream/details_memory.json");
    path_in_out(path, sizeof path, file);
    /* Both sessions from one call site, so that their stacks are the same: in memory, then
     * streamed (with an unmatched module pop and an orphan FLOP count, both counted). */
    uint64_t mem_clipped = 0, mem_orphans = 0;
    strobe_result *r = NULL;
    for (int streamed = 0; streamed < 2; streamed++) {
        cfg.stream_path = streamed ? path : NULL;
        REQUIRE(strobe_start(&cfg) == 0);
        run_details(ITERS);
        if (streamed) {
            strobe_module_pop();
            strobe_range_flops(5);
        }
        REQUIRE(strobe_stop(&r) == 0);
        if (streamed) break;
        REQUIRE(strobe_result_save(r, mem_path) == 0);
        mem_clipped = strobe_result_stats(r)->clipped_backend_events;
        mem_orphans = strobe_result_stats(r)->orphan_details;
        strobe_result_free(r);
    }
    const strobe_stats *st = strobe_result_stats(r);
    CHECK_EQ(st->dropped_events, 0);
    CHECK_EQ(st->unmatched_module_pops, 1);
    CHECK_EQ(st->orphan_details, mem_orphans + 1);
    CHECK_EQ(st->clipped_backend_events, mem_clipped);
    const char *sm = meta_value(r, "strobe_stream");
    CHECK(sm != NULL && strstr(sm, "\"skipped_details\": 0") != NULL);
    CHECK(sm != NULL && strstr(sm, "\"skipped_backend_events\": 0") != NULL);
    strobe_result_free(r);

    sigs want, got;
    REQUIRE(read_sigs(mem_path, &want) == 0);
    REQUIRE(read_sigs(path, &got) == 0);
    /* Two threads: per iteration aten::mm, its child and the two backend events. */
    CHECK_EQ(want.n, 2 * ITERS * 4);
    CHECK_EQ(got.n, want.n);
    size_t mismatches = 0;
    for (size_t i = 0; i < got.n && i < want.n; i++) {
        if (strcmp(got.line[i], want.line[i]) == 0) continue;
        if (mismatches++ < 3)
            fprintf(stderr, "%s: range %zu differs:\n  stream: %s\n  memory: %s\n", file, i,
                    got.line[i], want.line[i]);
    }
    CHECK_EQ(mismatches, 0);
    /* What the lines must hold, so that two empty traces cannot compare equal. */
    int mm_ok = 0, relu_ok = 0, stack_ok = 0, backend_ok = 0;
    for (size_t i = 0; i < got.n; i++) {
        const char *l = got.line[i];
        mm_ok += strncmp(l, "aten::mm|", 9) == 0 &&
                 strstr(l, "|Input Dims=[[4, 8], [8, 2], []]|") != NULL &&
                 strstr(l, "|flops=128|") != NULL &&
                 (strstr(l, "|Module Hierarchy=net.fc1") != NULL ||
                  strstr(l, "|Module Hierarchy=net.fc2 \"x\"") != NULL);
        relu_ok += strncmp(l, "aten::relu|", 11) == 0 && strstr(l, "|flops=100") != NULL;
        stack_ok += strstr(l, "|Call stack=") != NULL && strstr(l, "details_workload") != NULL;
        backend_ok += strncmp(l, "delegate_op|", 12) == 0 && strstr(l, "|Backend=npu") != NULL;
    }
    CHECK_EQ(mm_ok, 2 * ITERS);
    CHECK_EQ(relu_ok, 2 * (ITERS - ITERS / 3));
    CHECK_INT(stack_ok, >=, 2 * ITERS);
    CHECK_EQ(backend_ok, 2 * ITERS);
    sigs_free(&want);
    sigs_free(&got);

    /* The same nesting: the relu in its mm, the inner backend event in its delegate_op. */
    tally tw, tg;
    REQUIRE(read_trace(mem_path, &tw) == 0);
    REQUIRE(read_trace(path, &tg) == 0);
    const char *names[] = {"aten::mm", "aten::relu", "aten::gelu", "delegate_op", "inner_op"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        CHECK_EQ(tally_count(&tg, names[i]), tally_count(&tw, names[i]));
        CHECK_EQ(tally_depth(&tg, names[i]), tally_depth(&tw, names[i]));
    }
    CHECK_EQ(tally_depth(&tg, "inner_op"), tally_count(&tg, "inner_op"));
}

int main(void) {
    snprintf(out_dir, sizeof out_dir, "%s", STROBE_TEST_OUT_DIR);
    mkdir(out_dir, 0755);
    char sub[600];
    path_in_out(sub, sizeof sub, "stream");
    mkdir(sub, 0755);
    test_bad_configs();
    test_same_ranges("stream/same_ranges.json");
    test_same_ranges("stream/same_ranges.pftrace");
    test_cut_pages("stream/same_ranges.json");
    test_details_streamed("stream/details.json");
    test_details_streamed("stream/details.pftrace");
    test_bounded();
    test_drops();
    test_killed("stream/killed.json");
    test_killed("stream/killed.pftrace");
    test_flight();
    test_flight_ms();
    test_flight_busy();
    test_fork();
    return check_result();
}
