/* test_perfetto.c: the Perfetto writer and decoder.
 *
 * 1. Round trip: a recorded session is saved as .json and as .pftrace (into tests/out/perfetto/,
 *    where validate_traces.sh checks every .pftrace with Perfetto's trace processor); both are
 *    read back with strobe_rd (the .pftrace through the decoder) and compared slice by slice:
 *    count per name, the parent of each slice (rebuilt from the times read), starts and
 *    durations to the nanosecond. The JSON writer writes a range that ends in the very
 *    nanosecond its parent ends (or its next sibling starts) 1 ns shorter (display_ends in
 *    json_writer.c); the Perfetto writer writes the true end. Such ranges are compared with the
 *    result instead, and their count is checked against the result's ties.
 * 2. The encoder's edge cases: time going back on one sequence, a stream cut after any packet.
 * 3. Decode errors: truncated varints, lengths past the end, wrong wire types, garbage; and a
 *    bounded fuzz of the decoder (random mutations of a valid trace must never crash). */
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "reader/pftrace_dec.h"
#include "mixed_session.h"
#include "result_check.h"
#include "trace/result_internal.h"
#include "trace_reader.h"
#include "util/pftrace_enc.h"

#ifndef STROBE_TEST_OUT_DIR
#define STROBE_TEST_OUT_DIR "."
#endif
#define OUT_DIR STROBE_TEST_OUT_DIR "/perfetto"

static strobe_result *record(void) {
    return record_mixed_session("perfetto round trip", "pf-1", "pf");
}

/* ---- Reading a trace back: the slices ("X" events) of each (pid, tid) ----------------------- */

typedef struct slice {
    char *name;
    int64_t pid, tid, ts, dur;
    long parent; /* index in the list, -1: root */
} slice;

typedef struct slices {
    slice *v;
    size_t n, cap;
    int64_t base;
    size_t instants, counters, flows, metas;
} slices;

static int read_slices(const char *path, slices *out) {
    memset(out, 0, sizeof *out);
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    opt.prescan_base = 1;
    strobe_rd *rd = NULL;
    int rc = strobe_rd_open(&rd, path, &opt);
    strobe_rd_item it;
    if (rc != 0) fprintf(stderr, "%s: %s\n", path, strobe_rd_errmsg(rd));
    while (rc == 0 && strobe_rd_next(rd, &it) > 0) {
        if (it.kind != STROBE_RD_EVENT) continue;
        const strobe_rd_event *e = it.event;
        char ph = e->ph.s ? e->ph.s[0] : 0;
        out->instants += ph == 'i';
        out->counters += ph == 'C';
        out->flows += ph == 's' || ph == 'f';
        out->metas += ph == 'M';
        if (ph != 'X') continue;
        if (out->n == out->cap) {
            out->cap = out->cap ? 2 * out->cap : 256;
            out->v = realloc(out->v, out->cap * sizeof *out->v);
            REQUIRE(out->v != NULL);
        }
        slice *s = &out->v[out->n++];
        s->name = strndup(e->name.s ? e->name.s : "", e->name.len);
        s->pid = e->pid.num;
        s->tid = e->tid.num;
        s->ts = e->ts_ns;
        s->dur = e->dur_ns;
        s->parent = -1;
    }
    if (rc == 0 && strobe_rd_errmsg(rd)[0]) {
        fprintf(stderr, "%s: %s\n", path, strobe_rd_errmsg(rd));
        rc = STROBE_EFORMAT;
    }
    if (rc == 0) out->base = strobe_rd_get_info(rd)->base_time_ns;
    strobe_rd_close(rd);
    /* Parents from the times: the innermost earlier slice of the same thread that contains it. */
    for (size_t i = 0; i < out->n; i++) {
        slice *s = &out->v[i];
        for (size_t k = 0; k < out->n; k++) {
            slice *p = &out->v[k];
            if (k == i || p->pid != s->pid || p->tid != s->tid) continue;
            int inside = p->ts <= s->ts && s->ts + s->dur <= p->ts + p->dur &&
                         (p->ts < s->ts || p->dur > s->dur || k < i);
            if (!inside) continue;
            if (s->parent < 0 || out->v[s->parent].dur > p->dur ||
                (out->v[s->parent].dur == p->dur && (long)k > s->parent))
                s->parent = (long)k;
        }
    }
    return rc;
}

static void free_slices(slices *s) {
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].name);
    free(s->v);
}

static int same_slice(const slice *a, const slice *b) {
    return a->pid == b->pid && a->tid == b->tid && a->ts == b->ts && strcmp(a->name, b->name) == 0;
}

/* Compares the slices of the .pftrace (decoded) with those of the .json of one result. */
static void compare_files(const strobe_result *r, const char *json, const char *pf) {
    slices j, p;
    REQUIRE(read_slices(json, &j) == 0);
    REQUIRE(read_slices(pf, &p) == 0);
    CHECK_EQ(j.n, p.n);
    CHECK_EQ(j.instants, p.instants);
    CHECK_EQ(j.counters, p.counters);
    CHECK_EQ(j.flows, p.flows);
    CHECK_EQ(j.base, p.base);
    /* Ranges the JSON writer shortened: their true duration is the result's. */
    size_t shortened = 0;
    const strobe_event *ev = strobe_result_events(r);
    size_t n = strobe_result_event_count(r);
    for (size_t i = 0; i < j.n && i < p.n; i++) {
        const slice *a = &j.v[i], *b = &p.v[i];
        /* Both writers write a thread's slices in the same order; find b's match if not. */
        if (!same_slice(a, b)) {
            b = NULL;
            for (size_t k = 0; k < p.n && !b; k++)
                if (same_slice(a, &p.v[k])) b = &p.v[k];
        }
        CHECK(b != NULL);
        if (b == NULL) {
            fprintf(stderr,
                    "  no pftrace slice for \"%s\" at %lld (pid %lld tid %lld); at %zu: \"%s\" "
                    "%lld (pid %lld tid %lld)\n",
                    a->name, (long long)a->ts, (long long)a->pid, (long long)a->tid, i, p.v[i].name,
                    (long long)p.v[i].ts, (long long)p.v[i].pid, (long long)p.v[i].tid);
            continue;
        }
        if (a->dur != b->dur) {
            /* 1 ns per level of nesting that ends in the same nanosecond. */
            CHECK_INT(a->dur, <, b->dur);
            CHECK_INT(b->dur - a->dur, <=, 8);
            shortened++;
            /* The true end is the result's. */
            int found = 0;
            for (size_t e = 0; e < n && !found; e++)
                found = ev[e].kind == STROBE_EVENT_RANGE && strcmp(ev[e].name, b->name) == 0 &&
                        ev[e].start_ns - j.base == b->ts && strobe_event_dur_ns(&ev[e]) == b->dur;
            CHECK(found);
        }
        long pa = a->parent, pb = b->parent;
        /* Parents compared by identity (name, thread, start), not index. */
        CHECK((pa < 0) == (pb < 0));
        if (pa >= 0 && pb >= 0) CHECK(same_slice(&j.v[pa], &p.v[pb]));
    }
    /* Count per name: the multiset of names is the same. */
    for (size_t i = 0; i < j.n; i++) {
        size_t cj = 0, cp = 0;
        for (size_t k = 0; k < j.n; k++)
            cj += strcmp(j.v[k].name, j.v[i].name) == 0;
        for (size_t k = 0; k < p.n; k++)
            cp += strcmp(p.v[k].name, j.v[i].name) == 0;
        if (cj != cp)
            fprintf(stderr, "  name \"%s\": json %zu, pftrace %zu\n", j.v[i].name, cj, cp);
        CHECK_EQ(cj, cp);
        if (cj != cp) break;
    }
    printf("compared %zu slices (%zu written 1 ns shorter in JSON), %zu instants, %zu counters, "
           "%zu flow events\n",
           j.n, shortened, j.instants, j.counters, j.flows);
    free_slices(&j);
    free_slices(&p);
}

/* Saves `r` again (a result is saved once through the API; the writers are pure, so a test can
 * write one result in several formats by clearing the flag). */
static int save_again(strobe_result *r, const char *path, strobe_format fmt) {
    r->saved = 0;
    return strobe_result_save_as(r, path, fmt);
}

static void test_roundtrip(void) {
    strobe_result *r = record();
    REQUIRE(check_wellformed(r) == 0);
    const char *json = OUT_DIR "/roundtrip.json", *pf = OUT_DIR "/roundtrip.pftrace";
    const char *pfgz = OUT_DIR "/roundtrip_gz.pftrace.gz", *forced = OUT_DIR "/forced.bin";
    REQUIRE(strobe_result_save(r, json) == 0);
    CHECK_EQ(strobe_result_save(r, pf), STROBE_EALREADY);
    REQUIRE(save_again(r, pf, STROBE_FORMAT_AUTO) == 0);
    REQUIRE(save_again(r, pfgz, STROBE_FORMAT_AUTO) == 0);
    /* The format option wins over the suffix; the reader recognizes the bytes. */
    REQUIRE(save_again(r, forced, STROBE_FORMAT_PERFETTO) == 0);
    CHECK_EQ(save_again(r, forced, (strobe_format)7), STROBE_EINVAL);
    compare_files(r, json, pf);
    compare_files(r, json, pfgz);
    compare_files(r, json, forced);
    strobe_result_free(r);
}

/* ---- A hand-built result: ties, device work and flows ------------------------------------- */

#define BASE_NS INT64_C(1700000000000000000)

static strobe_event *put_ev(strobe_result *r, size_t i, uint8_t kind, const char *cat,
                            const char *name, uint32_t thread, int64_t tid, int64_t start,
                            int64_t dur) {
    strobe_event *e = &r->events[i];
    e->kind = kind;
    e->category = cat;
    e->name = name;
    e->tid = tid;
    e->thread_index = thread;
    e->start_ns = BASE_NS + start;
    e->end_ns = e->start_ns + dur;
    e->parent = e->first_child = e->next_sibling = STROBE_NO_EVENT;
    e->device_type = STROBE_DEVICE_CPU;
    e->device_index = -1;
    return e;
}

/* Thread 101: a step [0, 10000) holding a launch [100, 600) and an operator [600, 10000) that
 * ends in the step's very nanosecond, whose two children touch ([600, 5000), [5000, 10000)): the
 * JSON writer shortens three ranges by 1 ns. Device 0, stream 7: the launched kernel (flow) and
 * a copy. */
static strobe_result *build_ties(void) {
    strobe_result *r = strobe__result_alloc();
    REQUIRE(r != NULL);
    r->pid = 4242;
    r->trace_start_ns = BASE_NS;
    r->trace_end_ns = BASE_NS + 20000;
    r->trace_id = "ties";
    r->clock_source = "tsc";
    r->clock_ns_per_tick = 1.0;
    r->device_props = "[{\"id\": 0, \"name\": \"Fake GPU\"}]";
    REQUIRE(strobe__result_alloc_events(r, 8) == 0);
    strobe_event *e;
    e = put_ev(r, 0, STROBE_EVENT_RANGE, "user_annotation", "step", 0, 101, 0, 10000);
    e->first_child = 1;
    e = put_ev(r, 1, STROBE_EVENT_RANGE, "cuda_runtime", "cudaLaunchKernel", 0, 101, 100, 500);
    e->parent = 0, e->depth = 1, e->next_sibling = 2;
    e = put_ev(r, 2, STROBE_EVENT_RANGE, "cpu_op", "aten::op", 0, 101, 600, 9400);
    e->parent = 0, e->depth = 1, e->first_child = 3;
    e = put_ev(r, 3, STROBE_EVENT_RANGE, "cpu_op", "child a", 0, 101, 600, 4400);
    e->parent = 2, e->depth = 2, e->next_sibling = 4;
    e = put_ev(r, 4, STROBE_EVENT_RANGE, "cpu_op", "child b", 0, 101, 5000, 5000);
    e->parent = 2, e->depth = 2;
    e = put_ev(r, 5, STROBE_EVENT_INSTANT, "cpu_instant_event", "[memory]", 0, 101, 7000, 0);
    e->parent = 4, e->depth = 3;
    e = put_ev(r, 6, STROBE_EVENT_RANGE, "kernel", "my_kernel", 1, 7, 800, 3000);
    e->device_type = STROBE_DEVICE_CUDA, e->device_index = 0, e->next_sibling = 7;
    e = put_ev(r, 7, STROBE_EVENT_RANGE, "gpu_memcpy", "Memcpy HtoD", 1, 7, 4000, 100);
    e->device_type = STROBE_DEVICE_CUDA, e->device_index = 0;
    REQUIRE(strobe_event_set_arg(r, 1, "correlation", "77") == 0);
    REQUIRE(strobe_event_set_arg(r, 6, "correlation", "77") == 0);
    REQUIRE(strobe_event_set_arg(r, 6, "grid", "[1, 2, 3]") == 0);
    REQUIRE(strobe_event_set_arg(r, 5, "Bytes", "-4096") == 0);
    REQUIRE(strobe_event_set_arg(r, 5, "Addr", "\"0x7f\\\"00\"") == 0);
    r->threads = calloc(2, sizeof *r->threads);
    REQUIRE(r->threads != NULL);
    r->thread_count = 2;
    r->threads[0] = (strobe_thread_info){
        .tid = 101, .name = "main", .first_event = 0, .event_count = 6, .device_index = -1};
    r->threads[1] = (strobe_thread_info){.tid = 7,
                                         .name = "",
                                         .first_event = 6,
                                         .event_count = 2,
                                         .device_type = STROBE_DEVICE_CUDA,
                                         .device_index = 0};
    return r;
}

static void test_ties_and_devices(void) {
    strobe_result *r = build_ties();
    REQUIRE(check_wellformed(r) == 0);
    const char *json = OUT_DIR "/ties.json", *pf = OUT_DIR "/ties.pftrace";
    REQUIRE(strobe_result_save(r, json) == 0);
    REQUIRE(save_again(r, pf, STROBE_FORMAT_AUTO) == 0);
    size_t before = check__failures;
    compare_files(r, json, pf);
    CHECK_EQ(check__failures, before);
    /* The device track and stream come back with Kineto's pid and tid, the flow with both ends,
     * the args with their values. */
    strobe_rd *rd = NULL;
    REQUIRE(strobe_rd_open(&rd, pf, NULL) == 0);
    strobe_rd_item it;
    int kernel = 0, flows = 0, memory = 0, props = 0;
    while (strobe_rd_next(rd, &it) > 0) {
        if (it.kind == STROBE_RD_META) {
            if (strcmp(it.meta->key.s, "deviceProperties") == 0)
                props = it.meta->value.len == strlen(r->device_props);
            continue;
        }
        const strobe_rd_event *e = it.event;
        strobe_rd_value v;
        if (e->name.s && strcmp(e->name.s, "my_kernel") == 0) {
            kernel = e->pid.num == 0 && e->tid.num == 7 && e->ts_ns == 1800 && e->dur_ns == 3000;
            CHECK(strobe_rd_event_arg(e, "grid", &v) == 1 && v.len == 9 &&
                  memcmp(v.raw, "[1, 2, 3]", 9) == 0);
        }
        if (e->ph.s && (e->ph.s[0] == 's' || e->ph.s[0] == 'f')) {
            CHECK(e->id.num == 77);
            flows++;
        }
        if (e->name.s && strcmp(e->name.s, "[memory]") == 0) {
            int64_t b = 0;
            char addr[32];
            size_t alen = 0;
            CHECK(strobe_rd_event_arg(e, "Bytes", &v) == 1 && strobe_rd_value_int(&v, &b) == 0);
            CHECK(strobe_rd_event_arg(e, "Addr", &v) == 1 &&
                  strobe_rd_value_str(&v, addr, sizeof addr, &alen) == 0);
            memory = b == -4096 && alen == 7 && memcmp(addr, "0x7f\"00", 7) == 0;
        }
    }
    CHECK(strobe_rd_errmsg(rd)[0] == '\0');
    strobe_rd_close(rd);
    CHECK(kernel);
    CHECK_EQ(flows, 2);
    CHECK(memory);
    CHECK(props);
    strobe_result_free(r);
}

/* ---- A CUDA graph launch: one correlation id, several kernels ----------------------------- */

/* Thread 101: cudaGraphLaunch (correlation 88) and cudaLaunchKernel (89) in a step. The graph's
 * three kernels run on device 0, streams 7 and 9; kernel 89 on stream 7. The device events are
 * listed before the launches, and the graph's latest kernel before its earliest. */
static strobe_result *build_graph(void) {
    strobe_result *r = strobe__result_alloc();
    REQUIRE(r != NULL);
    r->pid = 4243;
    r->trace_start_ns = BASE_NS;
    r->trace_end_ns = BASE_NS + 20000;
    r->trace_id = "graph";
    r->clock_source = "tsc";
    r->clock_ns_per_tick = 1.0;
    r->device_props = "[{\"id\": 0, \"name\": \"Fake GPU\"}]";
    REQUIRE(strobe__result_alloc_events(r, 7) == 0);
    strobe_event *e;
    static const struct {
        const char *name;
        int64_t tid, start, dur;
        const char *corr;
    } dev[] = {{"graph_k1", 7, 1000, 1000, "88"},
               {"graph_k3", 7, 3000, 500, "88"},
               {"single_k", 7, 5000, 500, "89"},
               {"graph_k2", 9, 1500, 1000, "88"}};
    for (size_t i = 0; i < 4; i++) {
        e = put_ev(r, i, STROBE_EVENT_RANGE, "kernel", dev[i].name, i < 3 ? 0 : 1, dev[i].tid,
                   dev[i].start, dev[i].dur);
        e->device_type = STROBE_DEVICE_CUDA, e->device_index = 0;
        if (i == 0 || i == 1) e->next_sibling = (uint32_t)i + 1;
        REQUIRE(strobe_event_set_arg(r, i, "correlation", dev[i].corr) == 0);
    }
    e = put_ev(r, 4, STROBE_EVENT_RANGE, "user_annotation", "step", 2, 101, 0, 10000);
    e->first_child = 5;
    e = put_ev(r, 5, STROBE_EVENT_RANGE, "cuda_runtime", "cudaGraphLaunch", 2, 101, 100, 500);
    e->parent = 4, e->depth = 1, e->next_sibling = 6;
    e = put_ev(r, 6, STROBE_EVENT_RANGE, "cuda_runtime", "cudaLaunchKernel", 2, 101, 700, 200);
    e->parent = 4, e->depth = 1;
    REQUIRE(strobe_event_set_arg(r, 5, "correlation", "88") == 0);
    REQUIRE(strobe_event_set_arg(r, 6, "correlation", "89") == 0);
    r->threads = calloc(3, sizeof *r->threads);
    REQUIRE(r->threads != NULL);
    r->thread_count = 3;
    r->threads[0] = (strobe_thread_info){.tid = 7,
                                         .name = "",
                                         .first_event = 0,
                                         .event_count = 3,
                                         .device_type = STROBE_DEVICE_CUDA,
                                         .device_index = 0};
    r->threads[1] = r->threads[0];
    r->threads[1].tid = 9;
    r->threads[1].first_event = 3;
    r->threads[1].event_count = 1;
    r->threads[2] = (strobe_thread_info){
        .tid = 101, .name = "main", .first_event = 4, .event_count = 3, .device_index = -1};
    return r;
}

static long long mtime_ns(const struct stat *st) {
    return st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
}

/* Whether tp_query (stat `b`) has settled: no newer tp_query.cc beside it (`src`), and nothing
 * written to it for 2 seconds (the linker writes the new one after the compile, and then the
 * source is older). */
static int tp_settled(const char *src, const struct stat *b) {
    struct stat cc;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return !(stat(src, &cc) == 0 && mtime_ns(&cc) > mtime_ns(b)) &&
           now.tv_sec * 1000000000LL + now.tv_nsec - mtime_ns(b) >= 2000000000LL;
}

/* Whether the ELF file's first bytes `h` (n of a file of `size` bytes) put its section header
 * table inside the file: the linker writes it last. */
static int elf_whole(const unsigned char *h, size_t n, size_t size) {
    if (n < 64 || memcmp(h, "\177ELF", 4) != 0 || h[4] != 2) return 0;
    uint64_t shoff = 0;
    for (int i = 7; i >= 0; i--)
        shoff = shoff << 8 | h[0x28 + i];
    uint64_t entsize = (uint64_t)(h[0x3a] | h[0x3b] << 8), num = (uint64_t)(h[0x3c] | h[0x3d] << 8);
    return shoff > 0 && shoff + entsize * num <= size;
}

/* The validators' tp_query (Perfetto's trace processor) copied to `copy`, once it is whole: the
 * shared cache's binary is rebuilt in place whenever someone runs the validators' check_all.sh
 * directly (its setup.sh copies tp_query.cc into the cache, so it is always newer, and relinks),
 * and running it while the linker writes it fails ("Text file busy") or runs half a binary: the
 * count then depended on whether anyone else checked a trace at that moment (on a loaded
 * machine, a rebuild takes 10-20 s). Whole: settled (tp_settled) before and after the copy, not
 * replaced meanwhile, and the copy an ELF file with its section headers in it. Taken under a shared
 * lock of the file the test scripts' setup takes exclusively (tests/validators.sh); a rebuild in
 * progress is waited for (up to 2 minutes, the time it takes on a loaded machine several times
 * over). @return 0, -1 where tp_query is not installed, -2 when it never settled (said). */
static int copy_tp_query(const char *home, const char *copy) {
    char tp[600], src[600];
    snprintf(tp, sizeof tp, "%s/tp_query", home);
    snprintf(src, sizeof src, "%s/tp_query.cc", home);
    if (access(tp, X_OK) != 0) return -1;
    int lock = open("/tmp/strobe-trace-validators.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    int ok = 0;
    for (int tries = 0; tries < 120 && !ok; tries++) {
        if (tries) sleep(1);
        if (lock >= 0) flock(lock, LOCK_SH);
        struct stat b, a;
        FILE *in = stat(tp, &b) == 0 && tp_settled(src, &b) ? fopen(tp, "rb") : NULL;
        FILE *out = in ? fopen(copy, "wb") : NULL;
        unsigned char buf[1 << 16], head[64];
        size_t n, total = 0, nhead = 0;
        while (out && (n = fread(buf, 1, sizeof buf, in)) > 0) {
            if (total == 0) memcpy(head, buf, nhead = n < sizeof head ? n : sizeof head);
            total += fwrite(buf, 1, n, out) == n ? n : 0;
        }
        ok = out && !ferror(in);
        if (out && fclose(out) != 0) ok = 0;
        if (in) fclose(in);
        ok = ok && stat(tp, &a) == 0 && a.st_ino == b.st_ino && a.st_size == b.st_size &&
             mtime_ns(&a) == mtime_ns(&b) && total == (size_t)a.st_size && tp_settled(src, &a) &&
             elf_whole(head, nhead, total) && chmod(copy, 0755) == 0;
        if (lock >= 0) flock(lock, LOCK_UN);
    }
    if (lock >= 0) close(lock);
    if (ok) return 0;
    fprintf(stderr, "%s is being rebuilt and did not settle in 2 minutes\n", tp);
    return -2;
}

/* `select count(*) from flow` in Perfetto's trace processor (a settled copy of the validators'
 * tp_query, see copy_tp_query), or -1 where it is not installed. */
static long tp_flow_count(const char *path) {
    static int copied; /* 0: not yet, 1: copied, -1: not installed, -2: never settled */
    const char *home = getenv("TRACE_VALIDATORS_HOME");
    char dir[512], cmd[1200], line[256];
    const char *tp = OUT_DIR "/tp_query";
    if (home)
        snprintf(dir, sizeof dir, "%s", home);
    else
        snprintf(dir, sizeof dir, "%s/.cache/trace-validators",
                 getenv("HOME") ? getenv("HOME") : "");
    if (copied == 0) {
        int rc = copy_tp_query(dir, tp);
        copied = rc == 0 ? 1 : rc;
    }
    if (copied != 1) return copied;
    snprintf(cmd, sizeof cmd, "'%s' '%s' --sql 'select count(*) as n from flow' 2>&1", tp, path);
    FILE *f = popen(cmd, "r");
    if (f == NULL) return -2;
    long n = -2, prev_n = 0;
    char said[2048] = "";
    while (fgets(line, sizeof line, f)) {
        /* The count is the line after the column name "n". */
        if (prev_n) n = strtol(line, NULL, 10);
        prev_n = strcmp(line, "n\n") == 0;
        if (strlen(said) + strlen(line) < sizeof said) strcat(said, line);
    }
    int st = pclose(f);
    if (st != 0 || n < 0) {
        fprintf(stderr, "%s on %s: status %d, said:\n%s", tp, path, st, said);
        return -2;
    }
    return n;
}

/* Flow events read back from a trace: how many "s" and "f" with each id, and the "f" that are
 * at a graph kernel (same pid, tid and ts). */
typedef struct flows_seen {
    int s88, f88, s89, f89, other, f88_at_kernel;
} flows_seen;

static void read_flows(const char *path, flows_seen *o) {
    memset(o, 0, sizeof *o);
    strobe_rd *rd = NULL;
    REQUIRE(strobe_rd_open(&rd, path, NULL) == 0);
    strobe_rd_item it;
    int64_t kts[3] = {0}, ktid[3] = {0};
    int nk = 0;
    int64_t fts[8] = {0}, ftid[8] = {0};
    int nf = 0;
    while (strobe_rd_next(rd, &it) > 0) {
        if (it.kind != STROBE_RD_EVENT) continue;
        const strobe_rd_event *e = it.event;
        char ph = e->ph.s ? e->ph.s[0] : 0;
        if (ph == 'X' && e->name.s && strncmp(e->name.s, "graph_k", 7) == 0 && nk < 3) {
            kts[nk] = e->ts_ns, ktid[nk++] = e->tid.num;
            CHECK_EQ(e->pid.num, 0);
        }
        if (ph != 's' && ph != 'f') continue;
        uint64_t id = (uint64_t)e->id.num;
        if (ph == 's') {
            o->s88 += id == 88, o->s89 += id == 89;
        } else {
            o->f88 += id == 88, o->f89 += id == 89;
            if (id == 88 && nf < 8) fts[nf] = e->ts_ns, ftid[nf++] = e->tid.num;
        }
        o->other += id != 88 && id != 89;
    }
    CHECK(strobe_rd_errmsg(rd)[0] == '\0');
    strobe_rd_close(rd);
    CHECK_EQ(nk, 3);
    for (int k = 0; k < nk; k++) {
        int here = 0;
        for (int f = 0; f < nf; f++)
            here += fts[f] == kts[k] && ftid[f] == ktid[k];
        CHECK_EQ(here, 1);
        o->f88_at_kernel += here == 1;
    }
}

/* Kineto's flows for a graph: one "s" on the launch, one "f" on each of its kernels, all with the
 * correlation id; the .pftrace gives each kernel its own flow id, and reads back as the JSON. */
static void test_graph_launch(void) {
    strobe_result *r = build_graph();
    REQUIRE(check_wellformed(r) == 0);
    const char *json = OUT_DIR "/graph.json", *pf = OUT_DIR "/graph.pftrace";
    REQUIRE(strobe_result_save(r, json) == 0);
    REQUIRE(save_again(r, pf, STROBE_FORMAT_AUTO) == 0);
    compare_files(r, json, pf);
    const char *paths[] = {json, pf};
    for (int k = 0; k < 2; k++) {
        flows_seen o;
        read_flows(paths[k], &o);
        CHECK_EQ(o.s88, 1);
        CHECK_EQ(o.f88, 3);
        CHECK_EQ(o.f88_at_kernel, 3);
        CHECK_EQ(o.s89, 1);
        CHECK_EQ(o.f89, 1);
        CHECK_EQ(o.other, 0);
        /* What a viewer draws: an arrow per kernel. */
        long n = tp_flow_count(paths[k]);
        if (n == -1)
            printf("SKIP: tp_query not installed, flows of %s not counted by Perfetto\n", paths[k]);
        else
            CHECK_EQ(n, 4);
    }
    strobe_result_free(r);
}

/* ---- The encoder alone --------------------------------------------------------------------- */

static int decode(const uint8_t *d, size_t n, char **json, size_t *len, char *err, size_t errsz) {
    return strobe_rd_pf_to_json(d, n, json, len, err, errsz, NULL);
}

/* Time going back on one sequence (a second thread's events start before the first's end), and
 * a stream cut after every packet: each prefix decodes. */
static void test_encoder(void) {
    strobe__pft *p = strobe__pft_new(5);
    REQUIRE(p != NULL);
    CHECK_EQ(strobe__pft_process(p, 1, 10, "proc", 10), 0);
    CHECK_EQ(strobe__pft_thread(p, 2, 10, 11, "t1", STROBE__PFT_NO_SORT), 0);
    CHECK_EQ(strobe__pft_thread(p, 3, 10, 12, "t2", STROBE__PFT_NO_SORT), 0);
    CHECK_EQ(strobe__pft_counter_track(p, 4, 1, "ctr"), 0);
    strobe__pft_arg args[3] = {{.name = "n", .type = STROBE__PFT_INT, .i = -5},
                               {.name = "s", .type = STROBE__PFT_STRING, .s = "x\"y", .slen = 3},
                               {.name = "d", .type = STROBE__PFT_DOUBLE, .d = 0.25}};
    size_t marks[32], nmarks = 0, len;
#define MARK() (strobe__pft_data(p, &len), marks[nmarks++] = len)
    CHECK_EQ(strobe__pft_begin(p, 2, 5000, "cat", "outer", args, 3, NULL, 0, NULL, 0), 0);
    MARK();
    CHECK_EQ(strobe__pft_begin(p, 2, 6000, "cat", "inner", NULL, 0, NULL, 0, NULL, 0), 0);
    MARK();
    CHECK_EQ(strobe__pft_end(p, 2, 7000), 0);
    MARK();
    CHECK_EQ(strobe__pft_end(p, 2, 9000), 0);
    MARK();
    /* Back in time on another track: an absolute timestamp. */
    CHECK_EQ(strobe__pft_begin(p, 3, 1000, "cat", "early", NULL, 0, NULL, 0, NULL, 0), 0);
    MARK();
    CHECK_EQ(strobe__pft_instant(p, 3, 1500, NULL, "point", args, 1), 0);
    MARK();
    CHECK_EQ(strobe__pft_end(p, 3, 2000), 0);
    MARK();
    CHECK_EQ(strobe__pft_counter(p, 4, 1200, 2.5), 0);
    MARK();
    /* Later again: the incremental clock continues from 9000. */
    CHECK_EQ(strobe__pft_begin(p, 2, 9500, "cat", "outer", NULL, 0, NULL, 0, NULL, 0), 0);
    CHECK_EQ(strobe__pft_end(p, 2, 9600), 0);
    MARK();
#undef MARK
    const uint8_t *d = strobe__pft_data(p, &len);
    char *json = NULL, err[256];
    size_t jlen;
    REQUIRE(decode(d, len, &json, &jlen, err, sizeof err) == 0);
    /* Every slice at its time, to the nanosecond. */
    const char *want[] = {
        "\"name\": \"outer\", \"pid\": 10, \"tid\": 11, \"ts\": 5.000, \"dur\": 4.000",
        "\"name\": \"inner\", \"pid\": 10, \"tid\": 11, \"ts\": 6.000, \"dur\": 1.000",
        "\"name\": \"early\", \"pid\": 10, \"tid\": 12, \"ts\": 1.000, \"dur\": 1.000",
        "\"name\": \"outer\", \"pid\": 10, \"tid\": 11, \"ts\": 9.500, \"dur\": 0.100",
        "\"name\": \"point\", \"pid\": 10, \"tid\": 12, \"ts\": 1.500",
        "{\"n\": -5, \"s\": \"x\\\"y\", \"d\": 0.25}",
        "\"ctr\": 2.5"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int found = strstr(json, want[i]) != NULL;
        if (!found) fprintf(stderr, "missing %s in\n%s\n", want[i], json);
        CHECK(found);
    }
    free(json);
    /* Cut after any whole packet: still a trace. */
    for (size_t i = 0; i < nmarks; i++) {
        int rc = decode(d, marks[i], &json, &jlen, err, sizeof err);
        if (rc) fprintf(stderr, "cut at %zu: %s\n", marks[i], err);
        CHECK_EQ(rc, 0);
        free(json);
    }
    /* Reset keeps the interning: the next batch decodes after the first. */
    size_t first_len = len;
    uint8_t *all = malloc(first_len + 4096);
    REQUIRE(all != NULL);
    memcpy(all, d, first_len);
    strobe__pft_reset_data(p);
    CHECK_EQ(strobe__pft_begin(p, 2, 9700, "cat", "outer", NULL, 0, NULL, 0, NULL, 0), 0);
    CHECK_EQ(strobe__pft_end(p, 2, 9800), 0);
    d = strobe__pft_data(p, &len);
    REQUIRE(len < 4096);
    memcpy(all + first_len, d, len);
    REQUIRE(decode(all, first_len + len, &json, &jlen, err, sizeof err) == 0);
    CHECK(strstr(json,
                 "\"name\": \"outer\", \"pid\": 10, \"tid\": 11, \"ts\": 9.700, \"dur\": 0.100") !=
          NULL);
    free(json);
    free(all);
    strobe__pft_free(p);
    strobe__pft_free(NULL);
}

/* ---- Decode errors and a bounded fuzz ---------------------------------------------------------
 */

static void expect_error(const char *what, const uint8_t *d, size_t n, const char *msg_part) {
    char *json = NULL, err[256];
    size_t jlen;
    int rc = decode(d, n, &json, &jlen, err, sizeof err);
    if (rc != STROBE_EFORMAT || strstr(err, msg_part) == NULL)
        fprintf(stderr, "%s: rc %d, message \"%s\", wanted \"%s\"\n", what, rc, err, msg_part);
    CHECK_EQ(rc, STROBE_EFORMAT);
    CHECK(strstr(err, msg_part) != NULL);
    CHECK(json == NULL);
}

static void test_decode_errors(void) {
    static const uint8_t trunc_varint[] = {0x0a, 0x03, 0x40, 0xff, 0xff};
    expect_error("truncated varint", trunc_varint, sizeof trunc_varint, "truncated varint");
    static const uint8_t long_varint[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                          0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    expect_error("long varint", long_varint, sizeof long_varint, "longer than 10 bytes");
    static const uint8_t past_end[] = {0x0a, 0x7f, 0x40, 0x01};
    expect_error("length past the end", past_end, sizeof past_end, "past the end");
    static const uint8_t huge_len[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    expect_error("oversize length", huge_len, sizeof huge_len, "past the end");
    static const uint8_t wrong_wt[] = {0x08, 0x05}; /* Trace.packet as a varint */
    expect_error("wrong wire type", wrong_wt, sizeof wrong_wt, "wire type 0, expected 2");
    static const uint8_t inner_wt[] = {0x0a, 0x02, 0x58, 0x00}; /* track_event as varint */
    expect_error("inner wrong wire type", inner_wt, sizeof inner_wt, "field 11: wire type 0");
    static const uint8_t group[] = {0x0b, 0x0c};
    expect_error("group", group, sizeof group, "unsupported wire type 3");
    static const uint8_t field0[] = {0x00, 0x00};
    expect_error("field 0", field0, sizeof field0, "invalid field number 0");
    const char *garbage = "{\"traceEvents\": []}";
    expect_error("JSON given as protobuf", (const uint8_t *)garbage, strlen(garbage), "");
    expect_error("empty", (const uint8_t *)"", 0, "no trace packets");
    /* Through the reader: the message names the file. */
    const char *bad = OUT_DIR "/bad.pftrace";
    FILE *f = fopen(bad, "wb");
    REQUIRE(f != NULL);
    fwrite(past_end, 1, sizeof past_end, f);
    fclose(f);
    strobe_rd *rd = NULL;
    CHECK_EQ(strobe_rd_open(&rd, bad, NULL), STROBE_EFORMAT);
    CHECK(strstr(strobe_rd_errmsg(rd), "bad.pftrace: Perfetto trace: byte 0: field 1: length") !=
          NULL);
    strobe_rd_close(rd);
    remove(bad);
    /* A JSON file that starts with a newline is still JSON. */
    const char *nl = OUT_DIR "/newline.json";
    f = fopen(nl, "wb");
    REQUIRE(f != NULL);
    fputs("\n\n{\"traceEvents\": []}\n", f);
    fclose(f);
    CHECK_EQ(strobe_rd_open(&rd, nl, NULL), 0);
    strobe_rd_item it;
    CHECK_EQ(strobe_rd_next(rd, &it), 0);
    CHECK(strobe_rd_errmsg(rd)[0] == '\0');
    strobe_rd_close(rd);
    remove(nl);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Random mutations of a valid trace: bytes flipped, inserted, deleted, cut. Each must decode or
 * fail with a message; ASan and UBSan watch for the rest. */
static void test_fuzz(void) {
    FILE *f = fopen(OUT_DIR "/ties.pftrace", "rb");
    REQUIRE(f != NULL);
    static uint8_t orig[1 << 16], buf[(1 << 16) + 64];
    size_t n = fread(orig, 1, sizeof orig, f);
    fclose(f);
    REQUIRE(n > 100 && n < sizeof orig);
    size_t ok = 0, failed = 0;
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(buf, orig, n);
        size_t m = n;
        int edits = 1 + (int)(rnd() % 4);
        for (int k = 0; k < edits; k++) {
            size_t at = (size_t)(rnd() % m);
            switch (rnd() % 5) {
            case 0:
                buf[at] ^= (uint8_t)(1u << (rnd() % 8));
                break;
            case 1:
                buf[at] = (uint8_t)rnd();
                break;
            case 2:
                if (m + 1 < sizeof buf) {
                    memmove(buf + at + 1, buf + at, m - at);
                    buf[at] = (uint8_t)rnd();
                    m++;
                }
                break;
            case 3:
                if (m > 1) {
                    memmove(buf + at, buf + at + 1, m - at - 1);
                    m--;
                }
                break;
            default:
                m = at + 1;
                break;
            }
        }
        char *json = NULL, err[256];
        size_t jlen;
        int rc = decode(buf, m, &json, &jlen, err, sizeof err);
        if (rc == 0) {
            ok++;
            /* What decodes is JSON the reader accepts (or rejects with a message). */
            strobe_rd *rd = NULL;
            if (strobe_rd_open_mem(&rd, json, jlen, "fuzz", NULL) == 0) {
                strobe_rd_item it;
                while (strobe_rd_next(rd, &it) > 0) {
                }
            }
            strobe_rd_close(rd);
            free(json);
        } else {
            CHECK(rc == STROBE_EFORMAT);
            CHECK(err[0] != '\0');
            failed++;
        }
    }
    printf("fuzz: %zu decoded, %zu rejected\n", ok, failed);
}

int main(void) {
    mkdir(OUT_DIR, 0777);
    test_roundtrip();
    test_ties_and_devices();
    test_graph_launch();
    test_encoder();
    test_decode_errors();
    test_fuzz();
    return check_result();
}
