/* test_pftrace_reset.c: a Perfetto trace whose sequences start over mid-file keeps every name.
 *
 * The encoder bounds its interning tables (STROBE__PFT_INTERN_LIMIT): past the bound, and at
 * strobe_writer_flush_interned(), a sequence starts over with empty tables, and the names used
 * from then on are interned again. The same calls write a JSON trace (no interning: the
 * reference) and a .pftrace with several times more distinct names than the bound, and a flush
 * twice while a slice is open; both read back (strobe's reader) with every slice's name,
 * category, arg, start and duration as the calls gave them, worked out here from the slice's
 * number. The .pftrace must also hold a name used across the resets once per reset: one that
 * never is (no reset happened) fails, as does one that is only once (a reset that forgot to
 * intern it again would leave the reader without it, and the first checks fail).
 *
 * And the encoder alone, with a small bound, holds about the bound's worth of names.
 *
 * The .pftrace goes to out/perfetto/, which validate_traces gives to the checkers. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "strobe/strobe.h"
#include "trace_reader.h"
#include "util/pftrace_enc.h"

#ifndef STROBE_TEST_OUT_DIR
#define STROBE_TEST_OUT_DIR "."
#endif
#define OUT_DIR STROBE_TEST_OUT_DIR "/perfetto"

#define BASE INT64_C(1700000000000000000)
/* Slices on the main thread: each with its own name and arg key, and one of CATS categories.
 * About 70 table bytes each (see INTERN_OVERHEAD in pftrace_enc.c) for the name and as many for
 * the key: N of them hold several times STROBE__PFT_INTERN_LIMIT. */
#define N 30000
#define CATS 1000
/* Every EVERY slices, an instant named MARK on the main thread and one named TICK on the other. */
#define EVERY 100
#define MARK "mark-across-resets"
#define TICK "tick-on-the-other-thread"
/* strobe_writer_flush_interned() before slices FLUSH1 and FLUSH2. */
#define FLUSH1 (N / 3)
#define FLUSH2 (2 * N / 3)

static int64_t slice_ts(int i) {
    return BASE + 10000 + (int64_t)i * 2000;
}

static void write_trace(const char *path) {
    strobe_writer_options opt;
    strobe_writer_options_init(&opt);
    opt.base_ns = BASE;
    strobe_writer *w = NULL;
    REQUIRE(strobe_writer_open(&w, path, &opt) == 0);
    strobe_writer_track t = {
        .kind = STROBE_TRACK_PROCESS, .pid = 42, .name = "app", .sort_index = 42};
    REQUIRE(strobe_writer_add_track(w, &t) == 0);
    t = (strobe_writer_track){
        .kind = STROBE_TRACK_THREAD, .pid = 42, .tid = 7, .name = "main", .sort_index = 7};
    int64_t th = strobe_writer_add_track(w, &t);
    t = (strobe_writer_track){
        .kind = STROBE_TRACK_THREAD, .pid = 42, .tid = 8, .name = "other", .sort_index = 8};
    int64_t th2 = strobe_writer_add_track(w, &t);
    t = (strobe_writer_track){.kind = STROBE_TRACK_THREAD, .pid = 42, .tid = 0, .name = "Spans"};
    int64_t spans = strobe_writer_add_track(w, &t);
    REQUIRE(th > 0 && th2 > 0 && spans > 0);
    /* A slice open across both flushes: its end goes out on a sequence started over. */
    strobe_writer_event outer = {
        .track = (uint32_t)th, .cat = "outer-cat", .name = "outer", .ts = BASE + 5000};
    outer.end = slice_ts(N) + 5000;
    CHECK_EQ(strobe_writer_slice_begin(w, &outer), 0);
    char name[64], cat[32], key[32];
    for (int i = 0; i < N; i++) {
        if (i == FLUSH1 || i == FLUSH2) CHECK_EQ(strobe_writer_flush_interned(w), 0);
        snprintf(name, sizeof name, "op#%d/%d", i, i * 7919 % 10007);
        snprintf(cat, sizeof cat, "cat%d", i % CATS);
        snprintf(key, sizeof key, "key%d", i);
        strobe_writer_arg a = {.key = key, .type = STROBE_ARG_INT, .i = i};
        strobe_writer_event e = {.track = (uint32_t)th,
                                 .cat = cat,
                                 .name = name,
                                 .ts = slice_ts(i),
                                 .end = slice_ts(i) + 1000 + i % 7,
                                 .args = &a,
                                 .nargs = 1};
        CHECK_EQ(strobe_writer_slice(w, &e), 0);
        if (i % EVERY == 0) {
            strobe_writer_event m = {
                .track = (uint32_t)th, .cat = "mark", .name = MARK, .ts = slice_ts(i) + 1500};
            CHECK_EQ(strobe_writer_instant(w, &m), 0);
            m.track = (uint32_t)th2;
            m.name = TICK;
            CHECK_EQ(strobe_writer_instant(w, &m), 0);
        }
    }
    CHECK_EQ(strobe_writer_slice_end(w, &outer, NULL, 0), 0);
    strobe_writer_event s = {.track = (uint32_t)spans,
                             .flags = STROBE_WRITER_SESSION,
                             .cat = "Trace",
                             .name = "strobe session",
                             .ts = BASE,
                             .end = slice_ts(N) + 10000};
    CHECK_EQ(strobe_writer_slice(w, &s), 0);
    CHECK_EQ(strobe_writer_close(w), 0);
}

/* Reads `path` back: every slice and instant where and as write_trace() put it. */
static void read_back(const char *path) {
    unsigned char *seen = calloc(N, 1);
    REQUIRE(seen != NULL);
    strobe_rd *rd = NULL;
    REQUIRE(strobe_rd_open(&rd, path, NULL) == 0);
    strobe_rd_item it;
    int rc;
    long marks = 0, ticks = 0, outer = 0, wrong = 0;
    char name[64], cat[32], key[32];
    while ((rc = strobe_rd_next(rd, &it)) > 0) {
        if (it.kind != STROBE_RD_EVENT) continue;
        const strobe_rd_event *e = it.event;
        if (e->ph.s == NULL || e->name.s == NULL) continue;
        char ph = e->ph.s[0];
        int64_t tid = e->tid.num;
        if (ph == 'i' && strcmp(e->name.s, MARK) == 0 && tid == 7) marks++;
        if (ph == 'i' && strcmp(e->name.s, TICK) == 0 && tid == 8) ticks++;
        if (ph == 'X' && strcmp(e->name.s, "outer") == 0) {
            outer++;
            CHECK_EQ(e->ts_ns, 5000);
            CHECK_EQ(e->dur_ns, slice_ts(N) + 5000 - (BASE + 5000));
            CHECK_STR(e->cat.s, "outer-cat");
        }
        int i, j;
        if (ph != 'X' || sscanf(e->name.s, "op#%d/%d", &i, &j) != 2) continue;
        if (i < 0 || i >= N) {
            wrong++;
            continue;
        }
        snprintf(name, sizeof name, "op#%d/%d", i, i * 7919 % 10007);
        snprintf(cat, sizeof cat, "cat%d", i % CATS);
        snprintf(key, sizeof key, "key%d", i);
        strobe_rd_value v;
        int64_t x = -1;
        int ok = strcmp(e->name.s, name) == 0 && e->cat.s && strcmp(e->cat.s, cat) == 0 &&
                 tid == 7 && e->ts_ns == slice_ts(i) - BASE && e->dur_ns == 1000 + i % 7 &&
                 strobe_rd_event_arg(e, key, &v) == 1 && strobe_rd_value_int(&v, &x) == 0 && x == i;
        if (!ok && wrong++ < 5)
            fprintf(stderr,
                    "%s: slice %d read back as %s (cat %s) at %" PRId64 " for %" PRId64
                    ", arg %" PRId64 "\n",
                    path, i, e->name.s, e->cat.s ? e->cat.s : "-", e->ts_ns, e->dur_ns, x);
        if (ok) seen[i]++;
    }
    CHECK_EQ(rc, 0);
    strobe_rd_close(rd);
    long once = 0;
    for (int i = 0; i < N; i++)
        once += seen[i] == 1;
    CHECK_EQ(once, N);
    CHECK_EQ(wrong, 0);
    CHECK_EQ(outer, 1);
    CHECK_EQ(marks, N / EVERY);
    CHECK_EQ(ticks, N / EVERY);
    free(seen);
}

/* How many times `needle` occurs in the file at `path`. */
static long count_in_file(const char *path, const char *needle) {
    FILE *f = fopen(path, "rb");
    REQUIRE(f != NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    REQUIRE(b != NULL && fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    size_t m = strlen(needle);
    long count = 0;
    for (long k = 0; k + (long)m <= n; k++)
        count += memcmp(b + k, needle, m) == 0;
    free(b);
    return count;
}

/* The encoder alone, with a small bound: however many distinct names it has seen, it holds
 * about the bound's worth of them (without the bound, 5000 names of 11 bytes: over 250 KB). */
static void encoder_bound(void) {
    strobe__pft *p = strobe__pft_new(1);
    REQUIRE(p != NULL);
    strobe__pft_set_intern_limit(p, 4096);
    size_t most = 0, total = 0;
    char name[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "name%07d", i);
        CHECK_EQ(strobe__pft_instant(p, 1, i * 10, "c", name, NULL, 0), 0);
        size_t len, m = strobe__pft_memory(p);
        (void)strobe__pft_data(p, &len);
        total += len;
        strobe__pft_reset_data(p);
        if (m > most) most = m;
    }
    /* Every name went out, each in its own packet's InternedData. */
    CHECK_INT(total, >, 5000 * 11);
    CHECK_INT(most, <, 32 * 1024);
    strobe__pft_free(p);
}

int main(void) {
    encoder_bound();
    mkdir(STROBE_TEST_OUT_DIR, 0755);
    mkdir(OUT_DIR, 0755);
    const char *json = OUT_DIR "/reset.json", *pf = OUT_DIR "/reset.pftrace";
    write_trace(json);
    write_trace(pf);
    read_back(json);
    read_back(pf);
    /* The other thread's one name is interned at its first use and again after each flush. */
    CHECK_EQ(count_in_file(pf, TICK), 3);
    /* The main thread's: also after each time its tables outgrew the bound. N slices intern a
     * name and a key each, about (15 + 48) + (8 + 48) bytes, more than twice the bound. */
    long bound_resets = (long)((size_t)N * 119 / STROBE__PFT_INTERN_LIMIT);
    CHECK_INT(bound_resets, >=, 2);
    CHECK_INT(count_in_file(pf, MARK), >=, 1 + 2 + bound_resets);
    return check_result();
}
