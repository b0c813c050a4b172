/* test_pftrace_stream.c: the trace reader reads a Perfetto trace as a stream (pftrace_dec.h).
 *
 *   - A large .pftrace (written packet by packet with strobe's encoder) is read in memory that
 *     does not grow with the file: the peak RSS while reading stays far below the file's size
 *     (the whole-file decoder held the file, its events and its JSON text: several times it).
 *   - A trace cut inside a packet, plain or gzip'd, read through a file: up to the last whole
 *     packet, the cut's offset said, slices open at the cut closed at the last time.
 *   - Rewinding a Perfetto trace reads the same events again. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <zlib.h>

#include "check.h"
#include "reader/pftrace_dec.h"
#include "trace_reader.h"
#include "util/pftrace_enc.h"

#ifndef STROBE_TEST_OUT_DIR
#define STROBE_TEST_OUT_DIR "."
#endif
#define OUT_DIR STROBE_TEST_OUT_DIR

/* Sanitizers keep freed memory in quarantine and map shadow memory: RSS says nothing there. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RSS_MEANINGFUL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define RSS_MEANINGFUL 0
#endif
#endif
#ifndef RSS_MEANINGFUL
#define RSS_MEANINGFUL 1
#endif

static long max_rss_kib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Appends the encoder's packets to f and empties its buffer. */
static void flush_to(strobe__pft *p, FILE *f) {
    size_t len;
    const uint8_t *d = strobe__pft_data(p, &len);
    REQUIRE(fwrite(d, 1, len, f) == len);
    strobe__pft_reset_data(p);
}

enum { PID = 4242, TID = 4243, PROC_UUID = 1, THREAD_UUID = 2, COUNTER_UUID = 3 };

/* A trace of `outer` slices on one thread, each with a nested child, an instant every 16 and a
 * counter every 64, written in pieces so that writing it takes little memory. */
static void write_large(const char *path, long outer) {
    FILE *f = fopen(path, "wb");
    REQUIRE(f != NULL);
    strobe__pft *meta = strobe__pft_new(1);
    REQUIRE(meta != NULL);
    REQUIRE(strobe__pft_process(meta, PROC_UUID, PID, "big", STROBE__PFT_NO_SORT) == 0);
    REQUIRE(strobe__pft_thread(meta, THREAD_UUID, PID, TID, "main", STROBE__PFT_NO_SORT) == 0);
    REQUIRE(strobe__pft_counter_track(meta, COUNTER_UUID, THREAD_UUID, "bytes") == 0);
    flush_to(meta, f);
    strobe__pft *p = strobe__pft_new(2);
    REQUIRE(p != NULL);
    REQUIRE(strobe__pft_set_default_track(p, THREAD_UUID) == 0);
    static const char *const names[] = {"aten::add",    "aten::mul",   "aten::conv2d", "aten::relu",
                                        "aten::matmul", "aten::empty", "aten::copy_",  "aten::sum"};
    int64_t t = 1000;
    for (long i = 0; i < outer; i++) {
        strobe__pft_arg a = {.name = "Sequence number", .type = STROBE__PFT_INT, .i = i};
        REQUIRE(strobe__pft_begin(p, THREAD_UUID, t, "cpu_op", names[i % 8], &a, 1, NULL, 0, NULL,
                                  0) == 0);
        REQUIRE(strobe__pft_begin(p, THREAD_UUID, t + 100, "cpu_op", names[(i + 3) % 8], NULL, 0,
                                  NULL, 0, NULL, 0) == 0);
        REQUIRE(strobe__pft_end(p, THREAD_UUID, t + 700) == 0);
        REQUIRE(strobe__pft_end(p, THREAD_UUID, t + 900) == 0);
        if (i % 16 == 0)
            REQUIRE(strobe__pft_instant(p, THREAD_UUID, t + 950, "cpu_instant_event", "mark", NULL,
                                        0) == 0);
        if (i % 64 == 0) REQUIRE(strobe__pft_counter(meta, COUNTER_UUID, t, (double)i) == 0);
        t += 1000;
        if (i % 4096 == 4095) {
            flush_to(p, f);
            flush_to(meta, f);
        }
    }
    flush_to(p, f);
    flush_to(meta, f);
    strobe__pft_free(p);
    strobe__pft_free(meta);
    REQUIRE(fclose(f) == 0);
}

/* Reads the large trace and checks what it holds and how much memory reading it took. */
static void test_bounded_memory(void) {
    const char *path = OUT_DIR "/stream_large.pftrace";
    const long outer = 600000;
    write_large(path, outer);
    struct stat st;
    REQUIRE(stat(path, &st) == 0);
    long before = max_rss_kib();
    strobe_rd *r = NULL;
    REQUIRE(strobe_rd_open(&r, path, NULL) == 0);
    strobe_rd_item it;
    long x = 0, inst = 0, ctr = 0, meta = 0, other = 0;
    uint64_t index_max = 0, index_sum = 0, count = 0;
    int64_t first_ts = -1, last_end = 0;
    int rc;
    while ((rc = strobe_rd_next(r, &it)) > 0) {
        if (it.kind != STROBE_RD_EVENT) continue;
        const strobe_rd_event *e = it.event;
        CHECK_EQ(e->bad, 0);
        if (e->index > index_max) index_max = e->index;
        index_sum += e->index;
        count++;
        char ph = e->ph.s ? e->ph.s[0] : 0;
        if (ph == 'X') {
            x++;
            CHECK_EQ(e->pid.num, PID);
            CHECK_EQ(e->tid.num, TID);
            if (first_ts < 0) first_ts = e->ts_ns;
            if (e->ts_ns + e->dur_ns > last_end) last_end = e->ts_ns + e->dur_ns;
        } else if (ph == 'i') {
            inst++;
        } else if (ph == 'C') {
            ctr++;
        } else if (ph == 'M') {
            meta++;
        } else {
            other++;
        }
    }
    CHECK_EQ(rc, 0);
    CHECK_STR(strobe_rd_errmsg(r), "");
    CHECK_EQ(strobe_rd_get_info(r)->perfetto, 1);
    CHECK_EQ(strobe_rd_get_info(r)->pf_cut, 0);
    strobe_rd_close(r);
    long after = max_rss_kib();
    CHECK_EQ(x, 2 * outer);
    CHECK_EQ(inst, (outer + 15) / 16);
    CHECK_EQ(ctr, (outer + 63) / 64);
    CHECK_EQ(meta, 2); /* process_name, thread_name */
    CHECK_EQ(other, 0);
    /* The indices are 0 .. count - 1, in some order. */
    CHECK_EQ(index_max, count - 1);
    CHECK_EQ(index_sum, count * (count - 1) / 2);
    CHECK_EQ(first_ts, 1100); /* the first slice to end is the first child */
    CHECK_EQ(last_end, 1000 + (outer - 1) * 1000 + 900);
    long grew = after - before, file_kib = (long)(st.st_size / 1024);
    printf("read %ld KiB of .pftrace (%ld events); peak RSS grew by %ld KiB\n", file_kib,
           x + inst + ctr + meta, grew);
    if (RSS_MEANINGFUL) {
        /* The whole-file decoder held the input, every event and the JSON text at once: several
         * times the file. Streaming holds a packet, a 64 KiB window and the open slices. */
        CHECK_INT(file_kib, >, 16 * 1024);
        CHECK_INT(grew, <, 8 * 1024);
    } else {
        printf("SKIP: peak RSS not checked under a sanitizer\n");
    }
    remove(path);
}

/* Offsets of packet boundaries while writing a small trace: mark[k] is the length after step k. */
typedef struct small_trace {
    uint8_t *data;
    size_t len;
    size_t before_c_end; /* where the packet of C's end starts */
} small_trace;

/* On one thread: A [100, 200]; B begins at 300 and C inside it at 400; C ends at 500, B never.
 * Then one more instant at 600. */
static small_trace write_small(void) {
    strobe__pft *p = strobe__pft_new(7);
    REQUIRE(p != NULL);
    REQUIRE(strobe__pft_thread(p, THREAD_UUID, PID, TID, "t", STROBE__PFT_NO_SORT) == 0);
    REQUIRE(strobe__pft_begin(p, THREAD_UUID, 100, "cpu_op", "A", NULL, 0, NULL, 0, NULL, 0) == 0);
    REQUIRE(strobe__pft_end(p, THREAD_UUID, 200) == 0);
    REQUIRE(strobe__pft_begin(p, THREAD_UUID, 300, "cpu_op", "B", NULL, 0, NULL, 0, NULL, 0) == 0);
    REQUIRE(strobe__pft_begin(p, THREAD_UUID, 400, "cpu_op", "C", NULL, 0, NULL, 0, NULL, 0) == 0);
    small_trace t = {0};
    strobe__pft_data(p, &t.before_c_end);
    REQUIRE(strobe__pft_end(p, THREAD_UUID, 500) == 0);
    REQUIRE(strobe__pft_instant(p, THREAD_UUID, 600, "cpu_instant_event", "I", NULL, 0) == 0);
    const uint8_t *d = strobe__pft_data(p, &t.len);
    t.data = malloc(t.len);
    REQUIRE(t.data != NULL);
    memcpy(t.data, d, t.len);
    strobe__pft_free(p);
    return t;
}

static void write_file(const char *path, const uint8_t *d, size_t n, int gz) {
    if (gz) {
        gzFile g = gzopen(path, "wb");
        REQUIRE(g != NULL);
        REQUIRE(gzwrite(g, d, (unsigned)n) == (int)n);
        REQUIRE(gzclose(g) == Z_OK);
        return;
    }
    FILE *f = fopen(path, "wb");
    REQUIRE(f != NULL);
    REQUIRE(fwrite(d, 1, n, f) == n);
    REQUIRE(fclose(f) == 0);
}

/* The slices read from path: names and durations in the order read. */
static int read_slices(const char *path, char names[][4], int64_t *dur, int cap, int *n,
                       const strobe_rd_info **info_out, strobe_rd **keep) {
    strobe_rd *r = NULL;
    int rc = strobe_rd_open(&r, path, NULL);
    strobe_rd_item it;
    *n = 0;
    while (rc == 0 && (rc = strobe_rd_next(r, &it)) > 0) {
        rc = 0;
        if (it.kind != STROBE_RD_EVENT || !it.event->ph.s) continue;
        if (strcmp(it.event->ph.s, "X") != 0 && strcmp(it.event->ph.s, "i") != 0) continue;
        if (*n < cap) {
            snprintf(names[*n], 4, "%s", it.event->name.s ? it.event->name.s : "?");
            dur[*n] = it.event->has_dur ? it.event->dur_ns : -1;
        }
        (*n)++;
    }
    *info_out = strobe_rd_get_info(r);
    *keep = r;
    return rc;
}

/* The duration of the slice or instant named `name` (-1 for an instant), -2 when absent. */
static int64_t dur_of(char names[][4], const int64_t *dur, int n, const char *name) {
    for (int k = 0; k < n && k < 8; k++)
        if (strcmp(names[k], name) == 0) return dur[k];
    return -2;
}

static void test_cut(void) {
    small_trace t = write_small();
    for (int gz = 0; gz < 2; gz++) {
        const char *path = gz ? OUT_DIR "/stream_cut.pftrace.gz" : OUT_DIR "/stream_cut.pftrace";
        /* Whole: A, C, the instant, and B closed when the input ends (at the last time, 600). */
        write_file(path, t.data, t.len, gz);
        char names[8][4];
        int64_t dur[8];
        int n;
        const strobe_rd_info *info;
        strobe_rd *r;
        CHECK_EQ(read_slices(path, names, dur, 8, &n, &info, &r), 0);
        CHECK_EQ(n, 4);
        CHECK_EQ(info->pf_cut, 0);
        CHECK_EQ(dur_of(names, dur, n, "A"), 100);
        CHECK_EQ(dur_of(names, dur, n, "C"), 100);
        CHECK_EQ(dur_of(names, dur, n, "I"), -1);
        CHECK_EQ(dur_of(names, dur, n, "B"), 300);
        strobe_rd_close(r);
        /* Cut two bytes into the packet of C's end: C and B stay open, closed at the last time
         * read (C's begin, 400); the instant after it is gone. */
        write_file(path, t.data, t.before_c_end + 2, gz);
        CHECK_EQ(read_slices(path, names, dur, 8, &n, &info, &r), 0);
        CHECK_STR(strobe_rd_errmsg(r), "");
        CHECK_EQ(n, 3);
        CHECK_EQ(info->pf_cut, 1);
        CHECK_EQ(info->pf_cut_offset, (int64_t)t.before_c_end);
        CHECK_EQ(dur_of(names, dur, n, "A"), 100);
        CHECK_EQ(dur_of(names, dur, n, "C"), 0);
        CHECK_EQ(dur_of(names, dur, n, "B"), 100);
        CHECK_EQ(dur_of(names, dur, n, "I"), -2);
        strobe_rd_close(r);
        /* Cut inside the first packet: nothing whole, an error that names the offset. */
        write_file(path, t.data, 3, gz);
        strobe_rd *bad = NULL;
        CHECK_EQ(strobe_rd_open(&bad, path, NULL), STROBE_EFORMAT);
        CHECK(strstr(strobe_rd_errmsg(bad), "Perfetto trace: byte 0: ") != NULL);
        CHECK(strstr(strobe_rd_errmsg(bad), "past the end") != NULL);
        CHECK_EQ(strobe_rd_error_offset(bad), 0);
        strobe_rd_close(bad);
        remove(path);
    }
    free(t.data);
}

/* Malformed content after whole packets: the error comes from strobe_rd_next(), with the byte
 * offset of the bad field in the input. */
static void test_late_error(void) {
    small_trace t = write_small();
    size_t n = t.len + 2;
    uint8_t *d = malloc(n);
    REQUIRE(d != NULL);
    memcpy(d, t.data, t.len);
    d[t.len] = 0x0b; /* a group (wire type 3) as the next Trace field */
    d[t.len + 1] = 0x0c;
    const char *path = OUT_DIR "/stream_bad.pftrace";
    write_file(path, d, n, 0);
    strobe_rd *r = NULL;
    REQUIRE(strobe_rd_open(&r, path, NULL) == 0);
    strobe_rd_item it;
    int rc;
    while ((rc = strobe_rd_next(r, &it)) > 0)
        ;
    CHECK_EQ(rc, STROBE_EFORMAT);
    char want[128];
    snprintf(want, sizeof want, "Perfetto trace: byte %zu: field 1: unsupported wire type 3",
             t.len);
    if (!strstr(strobe_rd_errmsg(r), want)) fprintf(stderr, "%s\n", strobe_rd_errmsg(r));
    CHECK(strstr(strobe_rd_errmsg(r), want) != NULL);
    CHECK_EQ(strobe_rd_error_offset(r), (int64_t)t.len);
    CHECK_EQ(strobe_rd_next(r, &it), STROBE_EFORMAT); /* sticky */
    strobe_rd_close(r);
    remove(path);
    free(d);
    free(t.data);
}

/* A parent and a child with the same start and end: the slices come at their ends (the child
 * first), but their indices keep the order of the begins, which the CLI's model takes for the
 * order of equal intervals (parent first), as in the JSON. */
static void test_tie_order(void) {
    strobe__pft *p = strobe__pft_new(9);
    REQUIRE(p != NULL);
    REQUIRE(strobe__pft_thread(p, THREAD_UUID, PID, TID, "t", STROBE__PFT_NO_SORT) == 0);
    REQUIRE(strobe__pft_begin(p, THREAD_UUID, 100, "cpu_op", "Parent", NULL, 0, NULL, 0, NULL, 0) ==
            0);
    REQUIRE(strobe__pft_begin(p, THREAD_UUID, 100, "cpu_op", "Child", NULL, 0, NULL, 0, NULL, 0) ==
            0);
    REQUIRE(strobe__pft_end(p, THREAD_UUID, 200) == 0);
    REQUIRE(strobe__pft_end(p, THREAD_UUID, 200) == 0);
    size_t len;
    const uint8_t *d = strobe__pft_data(p, &len);
    strobe_rd *r = NULL;
    REQUIRE(strobe_rd_open_mem(&r, d, len, "tie.pftrace", NULL) == 0);
    strobe_rd_item it;
    int64_t parent = -1, child = -1;
    int rc;
    while ((rc = strobe_rd_next(r, &it)) > 0) {
        if (it.kind != STROBE_RD_EVENT || !it.event->name.s) continue;
        if (strcmp(it.event->name.s, "Parent") == 0) parent = (int64_t)it.event->index;
        if (strcmp(it.event->name.s, "Child") == 0) child = (int64_t)it.event->index;
    }
    CHECK_EQ(rc, 0);
    CHECK(parent >= 0 && child >= 0);
    CHECK_INT(parent, <, child);
    strobe_rd_close(r);
    strobe__pft_free(p);
}

/* Rewinding reads the same items again (the CLI's second pass does). */
static void test_rewind(void) {
    small_trace t = write_small();
    const char *path = OUT_DIR "/stream_rewind.pftrace";
    write_file(path, t.data, t.len, 1);
    strobe_rd *r = NULL;
    REQUIRE(strobe_rd_open(&r, path, NULL) == 0);
    char first[2048] = "", second[2048] = "";
    for (int pass = 0; pass < 2; pass++) {
        char *out = pass ? second : first;
        strobe_rd_item it;
        int rc;
        size_t len = 0;
        while ((rc = strobe_rd_next(r, &it)) > 0 && len < 1500) {
            if (it.kind == STROBE_RD_EVENT)
                len += (size_t)snprintf(out + len, 2048 - len, "%.*s|", (int)it.event->raw_len,
                                        it.event->raw);
            else
                len += (size_t)snprintf(out + len, 2048 - len, "%s|", it.meta->key.s);
        }
        CHECK_EQ(rc, 0);
        if (pass == 0) CHECK_EQ(strobe_rd_rewind(r), 0);
    }
    CHECK(first[0] != '\0');
    CHECK_STR(first, second);
    strobe_rd_close(r);
    remove(path);
    free(t.data);
}

int main(void) {
    test_bounded_memory(); /* first: the peak RSS of the process is what it measures */
    test_cut();
    test_rewind();
    test_tie_order();
    test_late_error();
    return check_result();
}
