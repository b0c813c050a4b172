/* test_reader.c: the trace reader (src/reader) on hand-written input, self-contained.
 *
 * Contents:
 *   1. Harness: run_mem() reads a text through every input path (one window; windows of 1, 3 and
 *      61 bytes; a file) and checks that they agree, so that every case below also tests tokens
 *      and events that straddle input blocks.
 *   2. Exact microsecond -> nanosecond parsing.
 *   3. Both Kineto schemas, metadata, base time, string ids.
 *   4. Unterminated and truncated input, errors with offsets, limits.
 *   5. Strings and escapes.
 *   6. Bad events.
 *   7. Lookups over args.
 *   8. Files: plain, gzip, large, damaged; the regression corpus in tests/corpus/reader/.
 *   9. Garbage and mutations.
 *
 * Inputs are copied into buffers of their exact size, so that AddressSanitizer catches any read
 * past the end. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>

#include "check.h"
#include "pftrace_dec.h"
#include "trace_reader.h"

/* ---- 1. Harness --------------------------------------------------------------------------- */

typedef struct run {
    int rc; /* 0: read to the end; else the error */
    uint64_t events, metas, bad;
    uint64_t hash; /* of everything the reader returned, to compare input paths */
    int64_t err_off;
    char err[700];
    strobe_rd_info info;
    int info_base;
} run;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return h;
}
static uint64_t fnv_str(uint64_t h, strobe_rd_str s) {
    h = fnv(h, &s.len, sizeof s.len);
    return s.s ? fnv(h, s.s, s.len) : fnv(h, "\xff", 1);
}
static uint64_t fnv_id(uint64_t h, const strobe_rd_id *id) {
    h = fnv(h, &id->kind, sizeof id->kind);
    h = fnv(h, &id->has_num, sizeof id->has_num);
    h = fnv(h, &id->num, sizeof id->num);
    return fnv_str(h, id->str);
}
static uint64_t hash_event(uint64_t h, const strobe_rd_event *e) {
    h = fnv(h, &e->index, sizeof e->index);
    h = fnv(h, &e->offset, sizeof e->offset);
    h = fnv_str(h, e->ph);
    h = fnv_str(h, e->name);
    h = fnv_str(h, e->cat);
    h = fnv_str(h, e->bp);
    h = fnv_str(h, e->s);
    h = fnv_id(h, &e->pid);
    h = fnv_id(h, &e->tid);
    h = fnv_id(h, &e->id);
    int64_t v[6] = {e->has_ts, e->ts_ns, e->has_dur, e->dur_ns, e->has_abs, e->abs_ts_ns};
    h = fnv(h, v, sizeof v);
    h = fnv(h, &e->bad, sizeof e->bad);
    h = fnv(h, &e->raw_len, sizeof e->raw_len);
    h = fnv(h, e->raw, e->raw_len);
    h = fnv(h, &e->args_len, sizeof e->args_len);
    if (e->args) h = fnv(h, e->args, e->args_len);
    return h;
}

/* Reads everything from an open reader into *out. */
static void drain(strobe_rd *r, run *out) {
    memset(out, 0, sizeof *out);
    out->hash = 14695981039346656037ull;
    strobe_rd_item it;
    int rc;
    while ((rc = strobe_rd_next(r, &it)) > 0) {
        if (rc == STROBE_RD_EVENT) {
            CHECK(it.event != NULL && it.meta == NULL);
            out->events++;
            out->bad += it.event->bad != 0;
            CHECK_EQ(it.event->bad != 0, it.event->bad_reason != NULL);
            out->hash = hash_event(out->hash, it.event);
        } else {
            CHECK(it.meta != NULL && it.event == NULL);
            out->metas++;
            out->hash = fnv_str(out->hash, it.meta->key);
            out->hash = fnv(out->hash, &it.meta->value.type, sizeof it.meta->value.type);
            out->hash = fnv(out->hash, it.meta->value.raw, it.meta->value.len);
        }
    }
    out->rc = rc;
    CHECK_EQ(strobe_rd_next(r, &it), rc); /* errors and the end are sticky */
    snprintf(out->err, sizeof out->err, "%s", strobe_rd_errmsg(r));
    out->err_off = strobe_rd_error_offset(r);
    out->info = *strobe_rd_get_info(r);
    CHECK_EQ(out->info.events, out->events);
    CHECK_EQ(out->info.bad_events, out->bad);
    CHECK_EQ(rc == 0, out->err[0] == '\0');
}

static const char *g_out_dir = STROBE_TEST_OUT_DIR;

static int write_file(const char *path, const void *data, size_t len, int gz) {
    if (gz) {
        gzFile f = gzopen(path, "wb6");
        if (!f) return -1;
        /* gzwrite takes an unsigned length: write in pieces. */
        const char *p = data;
        while (len) {
            unsigned n = len > (1u << 30) ? (1u << 30) : (unsigned)len;
            if (gzwrite(f, p, n) != (int)n) {
                gzclose(f);
                return -1;
            }
            p += n;
            len -= n;
        }
        return gzclose(f) == Z_OK ? 0 : -1;
    }
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, len, f);
    return fclose(f) == 0 && w == len ? 0 : -1;
}

static int same_run(const run *a, const run *b) {
    return a->rc == b->rc && a->events == b->events && a->metas == b->metas && a->bad == b->bad &&
           a->hash == b->hash && a->err_off == b->err_off &&
           a->info.unterminated == b->info.unterminated && a->info.bytes == b->info.bytes;
}

/* Reads text[0..len) through all input paths; checks they agree; returns the one-window run. */
static run run_opt(const char *text, size_t len, const strobe_rd_options *opt_in) {
    strobe_rd_options opt;
    if (opt_in)
        opt = *opt_in;
    else
        strobe_rd_options_init(&opt);
    char *copy = malloc(len ? len : 1);
    REQUIRE(copy != NULL);
    memcpy(copy, text, len);
    run first;
    static const size_t chunks[] = {0, 1, 3, 61};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        opt.mem_chunk = chunks[c];
        strobe_rd *r;
        REQUIRE(strobe_rd_open_mem(&r, copy, len, NULL, &opt) == 0);
        run cur;
        drain(r, &cur);
        strobe_rd_close(r);
        if (c == 0) {
            first = cur;
        } else if (!same_run(&first, &cur)) {
            fprintf(stderr,
                    "input paths disagree (window %zu): rc %d/%d events %llu/%llu "
                    "err '%s' / '%s' on: %.200s\n",
                    chunks[c], first.rc, cur.rc, (unsigned long long)first.events,
                    (unsigned long long)cur.events, first.err, cur.err, text);
            CHECK(0);
        }
    }
    /* The same bytes from a file, through zlib (in its transparent mode for plain text). Only the
     * reader's name differs in messages, so compare everything but the message. */
    char path[512];
    snprintf(path, sizeof path, "%s/reader_case.json", g_out_dir);
    if (len < (1u << 20) && write_file(path, copy, len, 0) == 0) {
        strobe_rd *r;
        opt.mem_chunk = 0;
        int rc = strobe_rd_open(&r, path, &opt);
        /* A Perfetto trace (told by content) is decoded at open, which fails there; memory input
         * fails at the first item with the same error. */
        if (rc != 0) CHECK_EQ(rc, first.rc);
        if (r) {
            run cur;
            drain(r, &cur);
            strobe_rd_close(r);
            if (!same_run(&first, &cur)) {
                fprintf(stderr, "file and memory disagree: rc %d/%d err '%s' / '%s' on: %.200s\n",
                        first.rc, cur.rc, first.err, cur.err, text);
                CHECK(0);
            }
        }
    }
    free(copy);
    return first;
}

static run run_text(const char *text) {
    return run_opt(text, strlen(text), NULL);
}

/* Reads a text and returns its n-th event (copied into *ev with strings into buf), for checks of
 * single fields. Returns 0 when there is no such event. */
typedef struct ev_copy {
    strobe_rd_event ev;
    char store[4096];
    size_t used;
} ev_copy;

static const char *keep(ev_copy *c, const char *s, size_t n) {
    if (!s) return NULL;
    REQUIRE(c->used + n + 1 <= sizeof c->store);
    char *d = c->store + c->used;
    memcpy(d, s, n);
    d[n] = '\0';
    c->used += n + 1;
    return d;
}

static int nth_event(const char *text, uint64_t n, const strobe_rd_options *opt, ev_copy *out) {
    strobe_rd *r;
    REQUIRE(strobe_rd_open_mem(&r, text, strlen(text), NULL, opt) == 0);
    strobe_rd_item it;
    int found = 0;
    memset(out, 0, sizeof *out);
    while (strobe_rd_next(r, &it) > 0) {
        if (it.kind != STROBE_RD_EVENT || it.event->index != n) continue;
        const strobe_rd_event *e = it.event;
        out->ev = *e;
        strobe_rd_str *strs[] = {&out->ev.ph, &out->ev.name,    &out->ev.cat,     &out->ev.bp,
                                 &out->ev.s,  &out->ev.pid.str, &out->ev.tid.str, &out->ev.id.str};
        for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
            strs[i]->s = keep(out, strs[i]->s, strs[i]->len);
        out->ev.raw = keep(out, e->raw, e->raw_len);
        out->ev.args = keep(out, e->args, e->args_len);
        found = 1;
        break;
    }
    strobe_rd_close(r);
    return found;
}

/* ---- 2. Exact microsecond -> nanosecond parsing ------------------------------------------- */

static void check_ns(const char *text, int want_rc, int64_t want) {
    int64_t ns = 12345;
    int rc = strobe_rd_us_to_ns(text, strlen(text), &ns);
    if (rc != want_rc || (rc == 0 && ns != want)) {
        fprintf(stderr, "us_to_ns(\"%s\"): rc %d ns %lld, want rc %d ns %lld\n", text, rc,
                (long long)ns, want_rc, (long long)want);
        CHECK(0);
    }
}

static void test_us_to_ns(void) {
    check_ns("0.001", 0, 1);
    check_ns("1234.5", 0, 1234500);
    check_ns("17.000", 0, 17000);
    check_ns("17", 0, 17000);
    check_ns("0", 0, 0);
    check_ns("-0", 0, 0);
    check_ns("-10", 0, -10000);
    check_ns("1234.567", 0, 1234567);
    /* The magnitudes of real traces: 2021 absolute microseconds, and today's with a ns part. */
    check_ns("1623142623460121", 0, INT64_C(1623142623460121000));
    check_ns("1712195495519695.812", 0, INT64_C(1712195495519695812));
    check_ns("4203669603018.756", 0, INT64_C(4203669603018756));
    /* Rounding below the nanosecond: half away from zero. */
    check_ns("0.0005", 0, 1);
    check_ns("0.0004999", 0, 0);
    check_ns("-0.0005", 0, -1);
    check_ns("1.2345", 0, 1235);
    check_ns("1.23449999999999999999999999999", 0, 1234);
    check_ns("0.00000000000000000000000000001", 0, 0);
    check_ns("1234.5678901234567890123", 0, 1234568);
    /* Exponents. */
    check_ns("1e3", 0, 1000000);
    check_ns("1.5E-3", 0, 2);
    check_ns("1.5e+2", 0, 150000);
    check_ns("25e-4", 0, 3);
    check_ns("0e999999999999", 0, 0);
    check_ns("1e-400", 0, 0);
    check_ns("1e400", STROBE_ERANGE, 0);
    check_ns("1e99999999999999999999", STROBE_ERANGE, 0);
    /* The int64 edge. */
    check_ns("9223372036854775.807", 0, INT64_MAX);
    check_ns("-9223372036854775.807", 0, -INT64_MAX);
    check_ns("9223372036854775.808", STROBE_ERANGE, 0);
    check_ns("9223372036854775.8074", 0, INT64_MAX);
    check_ns("9223372036854775.8075", STROBE_ERANGE, 0);
    check_ns("99999999999999999999", STROBE_ERANGE, 0);
    /* Not JSON numbers. */
    check_ns("", STROBE_EFORMAT, 0);
    check_ns("-", STROBE_EFORMAT, 0);
    check_ns("01", STROBE_EFORMAT, 0);
    check_ns("1.", STROBE_EFORMAT, 0);
    check_ns(".5", STROBE_EFORMAT, 0);
    check_ns("1e", STROBE_EFORMAT, 0);
    check_ns("1e+", STROBE_EFORMAT, 0);
    check_ns("+1", STROBE_EFORMAT, 0);
    check_ns("1 ", STROBE_EFORMAT, 0);
    check_ns("NaN", STROBE_EFORMAT, 0);
    check_ns("Infinity", STROBE_EFORMAT, 0);
    check_ns("0x10", STROBE_EFORMAT, 0);
    check_ns("1.2.3", STROBE_EFORMAT, 0);
    int64_t ns;
    CHECK_EQ(strobe_rd_us_to_ns("12", 1, &ns), 0); /* the length bounds the text */
    CHECK_EQ(ns, 1000);
}

/* ---- 3. Both schemas, metadata, base time, string ids ------------------------------------- */

static const char NEW_TRACE[] =
    "{\n  \"schemaVersion\": 1,\n"
    "  \"deviceProperties\": [\n    {\"id\": 0, \"name\": \"GPU \\\"0\\\"\", \"numSms\": 132}\n"
    "  ],\n"
    "  \"distributedInfo\": {\"rank\": 0},\n"
    "  \"displayTimeUnit\": \"ms\",\n"
    "  \"baseTimeNanoseconds\": 1727743122000000000,\n"
    "  \"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 7, \"tid\": 9,\n"
    "   \"ts\": 10.500, \"dur\": 2.250,\n"
    "   \"args\": {\"External id\": 42, \"Record function id\": 0, \"Ev Idx\": 1}},\n"
    "  {\"ph\": \"s\", \"id\": 42, \"pid\": 7, \"tid\": 9, \"ts\": 10.500, \"cat\": \"ac2g\", "
    "\"name\": \"ac2g\"},\n"
    "  {\"ph\": \"f\", \"id\": 42, \"pid\": 0, \"tid\": 7, \"ts\": 11.001, \"cat\": \"ac2g\", "
    "\"name\": \"ac2g\", \"bp\": \"e\"},\n"
    "  {\"ph\": \"i\", \"s\": \"t\", \"cat\": \"cpu_instant_event\", \"name\": \"[memory]\", "
    "\"pid\": 7, \"tid\": 9, \"ts\": 0.001,\n"
    "   \"args\": {\"Device Type\": 0, \"Device Id\": -1, \"Addr\": 94, \"Bytes\": -512}},\n"
    "  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 7, \"tid\": 0, \"args\": {\"name\": "
    "\"python\"}}\n"
    "  ],\n"
    "  \"traceName\": \"rank0.json\"\n}\n";

static void test_new_schema(void) {
    run r = run_text(NEW_TRACE);
    CHECK_EQ(r.rc, 0);
    CHECK_EQ(r.events, 5);
    CHECK_EQ(r.metas, 6);
    CHECK_EQ(r.bad, 0);
    CHECK(r.info.has_schema_version && r.info.schema_version == 1);
    CHECK(r.info.has_base_time && r.info.base_time_ns == INT64_C(1727743122000000000));
    CHECK_EQ(r.info.unterminated, 0);
    CHECK_EQ(r.info.bare_array, 0);
    CHECK_EQ(r.info.bytes, (int64_t)strlen(NEW_TRACE));

    ev_copy c;
    REQUIRE(nth_event(NEW_TRACE, 0, NULL, &c));
    CHECK_STR(c.ev.ph.s, "X");
    CHECK_STR(c.ev.cat.s, "cpu_op");
    CHECK_STR(c.ev.name.s, "aten::mm");
    CHECK_EQ(c.ev.name.len, 8);
    CHECK_EQ(c.ev.pid.kind, STROBE_RD_ID_INT);
    CHECK_EQ(c.ev.pid.num, 7);
    CHECK_EQ(c.ev.tid.num, 9);
    CHECK(c.ev.has_ts && c.ev.ts_ns == 10500);
    CHECK(c.ev.has_dur && c.ev.dur_ns == 2250);
    CHECK(c.ev.has_abs && c.ev.abs_ts_ns == INT64_C(1727743122000010500));
    CHECK_STR(c.ev.args, "{\"External id\": 42, \"Record function id\": 0, \"Ev Idx\": 1}");
    CHECK_EQ(c.ev.raw[0], '{');
    CHECK_EQ(c.ev.raw[c.ev.raw_len - 1], '}');
    CHECK_EQ(c.ev.offset, (int64_t)(strstr(NEW_TRACE, "{\"ph\": \"X\"") - NEW_TRACE));
    CHECK_EQ(c.ev.bad, 0);

    REQUIRE(nth_event(NEW_TRACE, 2, NULL, &c));
    CHECK_STR(c.ev.ph.s, "f");
    CHECK_STR(c.ev.bp.s, "e");
    CHECK_EQ(c.ev.id.kind, STROBE_RD_ID_INT);
    CHECK_EQ(c.ev.id.num, 42);
    CHECK_EQ(c.ev.ts_ns, 11001);
    CHECK(c.ev.args == NULL);

    REQUIRE(nth_event(NEW_TRACE, 3, NULL, &c));
    CHECK_STR(c.ev.s.s, "t");
    CHECK_EQ(c.ev.ts_ns, 1);
    CHECK_EQ(c.ev.has_dur, 0);

    REQUIRE(nth_event(NEW_TRACE, 4, NULL, &c));
    CHECK_STR(c.ev.ph.s, "M");
    CHECK_EQ(c.ev.has_ts, 0); /* metadata events may omit ts */
    CHECK_EQ(c.ev.has_abs, 0);
    CHECK_EQ(c.ev.bad, 0);

    /* Metadata items, in file order, with raw values. */
    strobe_rd *rd;
    REQUIRE(strobe_rd_open_mem(&rd, NEW_TRACE, strlen(NEW_TRACE), "x.json", NULL) == 0);
    static const char *const keys[] = {"schemaVersion",   "deviceProperties",    "distributedInfo",
                                       "displayTimeUnit", "baseTimeNanoseconds", "traceName"};
    static const char *const raws[] = {
        "1",
        "[\n    {\"id\": 0, \"name\": \"GPU \\\"0\\\"\", \"numSms\": 132}\n  ]",
        "{\"rank\": 0}",
        "\"ms\"",
        "1727743122000000000",
        "\"rank0.json\""};
    static const strobe_rd_type types[] = {STROBE_RD_T_NUMBER, STROBE_RD_T_ARRAY,
                                           STROBE_RD_T_OBJECT, STROBE_RD_T_STRING,
                                           STROBE_RD_T_NUMBER, STROBE_RD_T_STRING};
    strobe_rd_item it;
    int k = 0, rc, nev = 0;
    while ((rc = strobe_rd_next(rd, &it)) > 0) {
        if (it.kind == STROBE_RD_EVENT) {
            nev++;
            continue;
        }
        REQUIRE(k < 6);
        CHECK_STR(it.meta->key.s, keys[k]);
        CHECK_EQ(it.meta->value.type, types[k]);
        CHECK_EQ(it.meta->value.len, strlen(raws[k]));
        CHECK(memcmp(it.meta->value.raw, raws[k], it.meta->value.len) == 0);
        CHECK_EQ(it.meta->offset, (int64_t)(strstr(NEW_TRACE, raws[k]) - NEW_TRACE));
        /* traceName comes after all events. */
        CHECK_EQ(nev, k == 5 ? 5 : 0);
        k++;
    }
    CHECK_EQ(rc, 0);
    CHECK_EQ(k, 6);
    const strobe_rd_info *info = strobe_rd_get_info(rd);
    CHECK_STR(info->display_time_unit.s, "ms");
    CHECK_STR(info->trace_name.s, "rank0.json");
    CHECK_EQ(info->device_properties_len, strlen(raws[1]));
    CHECK(info->device_properties &&
          memcmp(info->device_properties, raws[1], strlen(raws[1])) == 0);
    strobe_rd_close(rd);
}

static const char OLD_TRACE[] =
    "{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"Operator\", \"name\": \"aten::conv2d\", \"pid\": 25738, "
    "\"tid\": \"25738\", \"ts\": 1623142623460121, \"dur\": 79, \"args\": {\"Input dims\": "
    "[[32, 3, 224, 224]]}},\n"
    "  {\"ph\": \"X\", \"cat\": \"Kernel\", \"name\": \"void cudnn::kern<float>(int)\", "
    "\"pid\": 0, \"tid\": \"stream 7\", \"ts\": 1623142623460300, \"dur\": 12, \"args\": "
    "{\"correlation\": 311, \"external id\": 30}},\n"
    "  {\"ph\": \"s\", \"id\": 311, \"pid\": 25738, \"tid\": 25738, \"ts\": 1623142623460150, "
    "\"cat\": \"async\", \"name\": \"launch\"},\n"
    "  {\"ph\": \"X\", \"cat\": \"Trace\", \"ts\": 1623142623460016, \"dur\": 1065723, \"pid\": "
    "\"Traces\", \"tid\": \"PyTorch Profiler\", \"name\": \"PyTorch Profiler (0)\"},\n"
    "  {\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"\", \"tid\": "
    "\"\", \"ts\": 1623142624633484}\n"
    "]}";

static void test_old_schema(void) {
    run r = run_text(OLD_TRACE);
    CHECK_EQ(r.rc, 0);
    CHECK_EQ(r.events, 5);
    CHECK_EQ(r.bad, 0);
    CHECK_EQ(r.info.has_base_time, 0);
    ev_copy c;
    REQUIRE(nth_event(OLD_TRACE, 0, NULL, &c));
    CHECK_EQ(c.ev.pid.kind, STROBE_RD_ID_INT);
    CHECK_EQ(c.ev.tid.kind, STROBE_RD_ID_STRING);
    CHECK(c.ev.tid.has_num && c.ev.tid.num == 25738);
    CHECK_STR(c.ev.tid.str.s, "25738");
    CHECK_EQ(c.ev.ts_ns, INT64_C(1623142623460121000));
    CHECK_EQ(c.ev.dur_ns, 79000);
    /* Without prescan the reader cannot know that no base time follows. */
    CHECK_EQ(c.ev.has_abs, 0);
    REQUIRE(nth_event(OLD_TRACE, 1, NULL, &c));
    CHECK_EQ(c.ev.tid.kind, STROBE_RD_ID_STRING);
    CHECK_EQ(c.ev.tid.has_num, 0);
    CHECK_EQ(c.ev.tid.num, 0);
    CHECK_STR(c.ev.tid.str.s, "stream 7");
    CHECK_STR(c.ev.name.s, "void cudnn::kern<float>(int)");
    REQUIRE(nth_event(OLD_TRACE, 3, NULL, &c));
    CHECK_STR(c.ev.pid.str.s, "Traces");
    CHECK_EQ(c.ev.pid.has_num, 0);
    REQUIRE(nth_event(OLD_TRACE, 4, NULL, &c));
    CHECK_EQ(c.ev.pid.kind, STROBE_RD_ID_STRING);
    CHECK_EQ(c.ev.pid.str.len, 0);
    CHECK_STR(c.ev.pid.str.s, "");
    CHECK_EQ(c.ev.pid.has_num, 0);

    /* With prescan, the absence of a base time is established first: abs = ts. */
    strobe_rd_options o;
    strobe_rd_options_init(&o);
    o.prescan_base = 1;
    REQUIRE(nth_event(OLD_TRACE, 0, &o, &c));
    CHECK(c.ev.has_abs && c.ev.abs_ts_ns == INT64_C(1623142623460121000));
    run r2 = run_opt(OLD_TRACE, strlen(OLD_TRACE), &o);
    CHECK_EQ(r2.rc, 0);
    CHECK_EQ(r2.events, 5);
}

static void test_base_after_events(void) {
    /* ROCm builds of Kineto write baseTimeNanoseconds after traceEvents. */
    const char *t = "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,"
                    "\"ts\":4203669603018.756,\"dur\":1}],\"traceName\":\"x\","
                    "\"baseTimeNanoseconds\":1735632360000000000}";
    ev_copy c;
    REQUIRE(nth_event(t, 0, NULL, &c));
    CHECK_EQ(c.ev.ts_ns, INT64_C(4203669603018756));
    CHECK_EQ(c.ev.has_abs, 0);
    run r = run_text(t);
    CHECK_EQ(r.rc, 0);
    CHECK(r.info.has_base_time && r.info.base_time_ns == INT64_C(1735632360000000000));
    strobe_rd_options o;
    strobe_rd_options_init(&o);
    o.prescan_base = 1;
    REQUIRE(nth_event(t, 0, &o, &c));
    CHECK(c.ev.has_abs &&
          c.ev.abs_ts_ns == INT64_C(1735632360000000000) + INT64_C(4203669603018756));
    run r2 = run_opt(t, strlen(t), &o);
    CHECK_EQ(r2.rc, 0);
    /* The look-ahead also works on files: it opens the path a second time. */
    char path[512];
    snprintf(path, sizeof path, "%s/reader_late_base.json.gz", g_out_dir);
    REQUIRE(write_file(path, t, strlen(t), 1) == 0);
    strobe_rd *rd;
    REQUIRE(strobe_rd_open(&rd, path, &o) == 0);
    strobe_rd_item it;
    CHECK_EQ(strobe_rd_next(rd, &it), STROBE_RD_EVENT);
    CHECK(it.event->has_abs &&
          it.event->abs_ts_ns == INT64_C(1735632360000000000) + INT64_C(4203669603018756));
    strobe_rd_close(rd);

    /* A base time that is not an integer is an error: every absolute time depends on it. */
    r = run_text("{\"baseTimeNanoseconds\":\"17\",\"traceEvents\":[]}");
    CHECK_EQ(r.rc, STROBE_EFORMAT);
    CHECK_EQ(r.err_off, 23);
    r = run_text("{\"baseTimeNanoseconds\":1.5,\"traceEvents\":[]}");
    CHECK_EQ(r.rc, STROBE_EFORMAT);
    r = run_text("{\"baseTimeNanoseconds\":1.0e3,\"traceEvents\":[]}");
    CHECK_EQ(r.rc, 0);
    CHECK_EQ(r.info.base_time_ns, 1000);
    /* A base time plus ts beyond int64 makes that event bad, not the trace. */
    r = run_text("{\"baseTimeNanoseconds\":9223372036854775000,\"traceEvents\":["
                 "{\"ph\":\"i\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1}]}");
    CHECK_EQ(r.rc, 0);
    CHECK_EQ(r.bad, 1);
}

static void test_bare_and_shapes(void) {
    const char *bare = " [ {\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":2} ,"
                       "{\"ph\":\"i\",\"name\":\"b\",\"pid\":1,\"tid\":1,\"ts\":3} ] \n";
    run r = run_text(bare);
    CHECK_EQ(r.rc, 0);
    CHECK_EQ(r.events, 2);
    CHECK_EQ(r.info.bare_array, 1);
    ev_copy c;
    REQUIRE(nth_event(bare, 1, NULL, &c));
    CHECK(c.ev.has_abs && c.ev.abs_ts_ns == 3000); /* a bare array has no base time */
    CHECK_EQ(run_text("[]").rc, 0);
    CHECK_EQ(run_text("{\"traceEvents\":[]}").rc, 0);
    r = run_text("{\"a\":[1,{\"b\":null}],\"traceEvents\":[],\"c\":true,\"d\":false,\"e\":-1.5e3,"
                 "\"f\":null}");
    CHECK_EQ(r.rc, 0);
    CHECK_EQ(r.metas, 5);
    /* A UTF-8 byte order mark is tolerated. */
    r = run_text("\xEF\xBB\xBF{\"traceEvents\":[]}");
    CHECK_EQ(r.rc, 0);
    r = run_text("\xEF\xBB{\"traceEvents\":[]}");
    CHECK_EQ(r.rc, STROBE_EFORMAT);
    CHECK_EQ(r.err_off, 0);
}

/* ---- 4. Unterminated and truncated input, errors with offsets, limits -------------------- */

static void expect_error(const char *text, int64_t off, const char *reason_part) {
    run r = run_text(text);
    if (r.rc != STROBE_EFORMAT || (off >= 0 && r.err_off != off) ||
        (reason_part && !strstr(r.err, reason_part))) {
        fprintf(stderr, "on %.80s: want EFORMAT at %lld with '%s'; got rc %d at %lld: %s\n", text,
                (long long)off, reason_part ? reason_part : "", r.rc, (long long)r.err_off, r.err);
        CHECK(0);
    }
}

static void test_unterminated(void) {
    static const char *const ok[] = {
        "[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":2},\n",
        "[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":2}",
        "[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":2} , \n\t ",
        ("{\"schemaVersion\":1,\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,"
         "\"tid\":1,\"ts\":1,\"dur\":2},"),
        "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":2}\n"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        run r = run_text(ok[i]);
        CHECK_EQ(r.rc, 0);
        CHECK_EQ(r.events, 1);
        CHECK_EQ(r.info.unterminated, 1);
    }
    run r = run_text("{\"traceEvents\":[");
    CHECK_EQ(r.rc, 0);
    CHECK_EQ(r.events, 0);
    CHECK_EQ(r.info.unterminated, 1);
    /* Cut inside an event: an error that names where the input ended and where the event began. */
    expect_error("[{\"ph\":\"X\",\"name\":\"a\"", 21, "inside the event that starts at byte 1");
    expect_error("[{\"ph\":\"X\",\"name\":\"a\",", 22, "unexpected end of input");
    expect_error("[{\"ph\":\"X\",\"name\":\"a", 18, "unterminated string");
    expect_error("[{\"ph\":\"X\",\"ts\":12", 18, "unexpected end of input");
    expect_error("[{\"ph\":\"X\",\"ts\":", 16, "unexpected end of input");
    expect_error("[{\"ph\":\"X\",\"ts\"", 15, "unexpected end of input");
    expect_error("[{\"ph\":\"X\",\"args\":{\"a\":[1,2", 27, "inside the event");
    expect_error("[{\"ph\":\"X\",\"ok\":tru", 19, "unexpected end of input");
    expect_error("[null,[1,", 9, "unexpected end of input");
    /* The object around traceEvents must be closed once the array is. */
    expect_error("{\"traceEvents\":[]", 17, "not closed");
    expect_error("{\"traceEvents\":[],", 18, "not closed");
    expect_error("{\"traceName\":\"x\"", 16, "not closed");
    expect_error("{\"traceName\":", 13, "has no value");
    expect_error("{\"traceName\":{\"a\":", 18, "inside the value of \"traceName\"");
}

static void test_errors(void) {
    expect_error("", 0, "empty input");
    expect_error(" \n\t ", 4, "empty input");
    expect_error("this is not json", 0, "invalid literal");
    expect_error("42", 0, "neither an object nor an array");
    expect_error("\"traceEvents\"", 0, "neither an object nor an array");
    expect_error("{}", 1, "no traceEvents");
    expect_error("{\"foo\":1}", 8, "no traceEvents");
    expect_error("{\"traceEvents\":null}", 15, "traceEvents is not an array");
    expect_error("{\"traceEvents\":{}}", 15, "traceEvents is not an array");
    expect_error("{\"traceEvents\":[] x", 18, "expected ',' or '}'");
    expect_error("{\"traceEvents\":[]} x", 19, "after the end of the JSON value");
    expect_error("[] []", 3, "after the end");
    expect_error("[{\"a\":1} {\"a\":2}]", 9, "expected ',' or ']'");
    expect_error("[{\"a\" 1}]", 6, "expected ':'");
    expect_error("[{\"a\":1,}]", 8, "expected a string key");
    expect_error("[{1:1}]", 2, "expected a string key or '}'");
    expect_error("[1,]", 3, "expected a value, found ']'");
    expect_error("[,1]", 1, "expected a value");
    expect_error("{\"traceEvents\":[{\"ts\":NaN}]}", 22, "expected a value, found 'N'");
    expect_error("{\"traceEvents\":[{\"ts\":-Infinity}]}", 22, "invalid number");
    expect_error("[{\"ts\":01}]", 7, "invalid number");
    expect_error("[{\"ts\":1.}]", 7, "invalid number");
    expect_error("[{\"ts\":.5}]", 7, "expected a value");
    expect_error("[{\"ts\":+1}]", 7, "expected a value");
    expect_error("[{\"ts\":1e}]", 7, "invalid number");
    expect_error("[{\"ts\":--1}]", 7, "invalid number");
    expect_error("[{\"ts\":truex}]", 11, "expected ',' or '}'");
    expect_error("[{\"ts\":nul}]", 7, "invalid literal");
    expect_error("[{\"ts\":'a'}]", 7, "expected a value, found '''");
    expect_error("[{\"ts\":\x01}]", 7, "byte 0x01");
    expect_error("[{\"ts\":1}}", 9, "expected ',' or ']'");
    expect_error("[{\"ts\":1]]", 8, "expected ',' or '}'");
    /* A number longer than the tokenizer's limit. */
    char big[700];
    memcpy(big, "[{\"ts\":", 7);
    memset(big + 7, '1', 600);
    memcpy(big + 607, "}]", 3);
    expect_error(big, 7, "number longer than");
    /* The message format. */
    run r = run_text("[{\"a\":1} {\"a\":2}]");
    CHECK_STR(r.err, "<memory>: byte 9: expected ',' or ']', found '{'");
}

static void test_limits(void) {
    /* Nesting: 600 levels inside args exceed the default limit of 512. */
    size_t depth = 600;
    char *t = malloc(2 * depth + 200);
    REQUIRE(t != NULL);
    size_t n = (size_t)sprintf(t, "{\"traceEvents\":[{\"ph\":\"X\",\"args\":");
    size_t args_at = n;
    for (size_t i = 0; i < depth; i++)
        t[n++] = '[';
    for (size_t i = 0; i < depth; i++)
        t[n++] = ']';
    n += (size_t)sprintf(t + n, "}]}");
    t[n] = '\0';
    /* Levels: object, array, event object, then args arrays; the 513th level is args' 510th. */
    run r = run_text(t);
    CHECK_EQ(r.rc, STROBE_EFORMAT);
    CHECK_EQ(r.err_off, (int64_t)(args_at + 509));
    CHECK(strstr(r.err, "nesting deeper than 512 levels") != NULL);
    strobe_rd_options o;
    strobe_rd_options_init(&o);
    o.max_depth = 1000;
    r = run_opt(t, n, &o);
    CHECK_EQ(r.rc, 0);
    CHECK_EQ(r.events, 1);
    o.max_depth = 100000; /* clamped to the tokenizer's ceiling, not trusted */
    r = run_opt(t, n, &o);
    CHECK_EQ(r.rc, 0);
    free(t);

    /* A deep value in the metadata, and a deep bare document, hit the same limit. */
    char deep[5000];
    memset(deep, '[', 4999);
    deep[4999] = '\0';
    r = run_text(deep);
    CHECK_EQ(r.rc, STROBE_EFORMAT);
    CHECK_EQ(r.err_off, 512);

    /* Strings: a 3 MiB name is fine; a limit of 1000 bytes stops it with its offset. */
    size_t big = 3u << 20;
    t = malloc(big + 200);
    REQUIRE(t != NULL);
    n = (size_t)sprintf(t, "[{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1,\"name\":\"");
    size_t name_at = n - 1;
    for (size_t i = 0; i < big; i++)
        t[n++] = (char)('a' + i % 26);
    n += (size_t)sprintf(t + n, "\"}]");
    strobe_rd *rd;
    REQUIRE(strobe_rd_open_mem(&rd, t, n, NULL, NULL) == 0);
    strobe_rd_item it;
    CHECK_EQ(strobe_rd_next(rd, &it), STROBE_RD_EVENT);
    CHECK_EQ(it.event->name.len, big);
    CHECK(it.event->name.s && it.event->name.s[big - 1] == (char)('a' + (big - 1) % 26));
    CHECK_EQ(it.event->raw_len, n - 2);
    CHECK_EQ(strobe_rd_next(rd, &it), 0);
    strobe_rd_close(rd);
    o.max_depth = 0; /* 0 means the default */
    o.max_string = 1000;
    r = run_opt(t, n, &o);
    CHECK_EQ(r.rc, STROBE_EFORMAT);
    CHECK_EQ(r.err_off, (int64_t)name_at);
    CHECK(strstr(r.err, "string longer than the limit of 1000 bytes") != NULL);
    /* The limit on one metadata value's raw text. */
    strobe_rd_options_init(&o);
    o.max_value = 8;
    const char *dp = "{\"deviceProperties\":[{\"id\":0}],\"traceEvents\":[]}";
    r = run_opt(dp, strlen(dp), &o);
    CHECK_EQ(r.rc, STROBE_EFORMAT);
    CHECK_EQ(r.err_off, 20);
    CHECK(strstr(r.err, "value larger than the limit of 8 bytes") != NULL);
    /* The limit on one event's raw text. */
    strobe_rd_options_init(&o);
    o.max_value = 1u << 20;
    r = run_opt(t, n, &o);
    CHECK_EQ(r.rc, STROBE_EFORMAT);
    CHECK_EQ(r.err_off, 1);
    CHECK(strstr(r.err, "value larger than the limit") != NULL);
    free(t);
}

/* Every prefix of a valid trace is either accepted (it ends between events) or an error at an
 * offset within the prefix; accepted prefixes yield the leading events of the full trace. */
static void test_truncation(void) {
    const char *texts[] = {NEW_TRACE, OLD_TRACE,
                           "[{\"ph\":\"X\",\"name\":\"\\u00e9\\ud83d\\ude00\",\"pid\":1,\"tid\":"
                           "\"stream 7\",\"ts\":1.5,\"dur\":2e1},null,[1,{}],\"s\",{}]"};
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        const char *full = texts[k];
        size_t len = strlen(full);
        run whole = run_opt(full, len, NULL);
        CHECK_EQ(whole.rc, 0);
        uint64_t accepted = 0, last_events = 0;
        for (size_t cut = 0; cut < len; cut++) {
            run r = run_opt(full, cut, NULL);
            if (r.rc == 0) {
                accepted++;
                CHECK(r.events <= whole.events);
                CHECK(r.events >= last_events);
                last_events = r.events;
            } else {
                CHECK_EQ(r.rc, STROBE_EFORMAT);
                CHECK(r.err_off >= 0 && r.err_off <= (int64_t)cut);
            }
        }
        /* At least one accepted prefix per event boundary. */
        CHECK(accepted >= whole.events);
    }
}

/* ---- 5. Strings and escapes --------------------------------------------------------------- */

static void check_name(const char *json_name, const char *want, size_t want_len) {
    char t[512];
    snprintf(t, sizeof t, "[{\"ph\":\"i\",\"pid\":1,\"tid\":1,\"ts\":1,\"name\":\"%s\"}]",
             json_name);
    ev_copy c;
    run r = run_text(t);
    if (r.rc != 0) {
        fprintf(stderr, "name \"%s\": %s\n", json_name, r.err);
        CHECK(0);
        return;
    }
    REQUIRE(nth_event(t, 0, NULL, &c));
    if (c.ev.name.len != want_len || memcmp(c.ev.name.s, want, want_len) != 0) {
        fprintf(stderr, "name \"%s\": decoded to %zu bytes, want %zu\n", json_name, c.ev.name.len,
                want_len);
        CHECK(0);
    }
}

static void test_strings(void) {
    check_name("plain", "plain", 5);
    check_name("", "", 0);
    check_name("a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t", "a\"b\\c/d\b\f\n\r\t", 12);
    check_name("\\u0041\\u00e9\\u20AC", "A\xC3\xA9\xE2\x82\xAC", 6);
    check_name("\\ud83d\\ude00", "\xF0\x9F\x98\x80", 4); /* a surrogate pair */
    check_name("\\uDBFF\\uDFFF", "\xF4\x8F\xBF\xBF", 4); /* U+10FFFF */
    check_name("x\\u0000y", "x\0y", 3);                  /* NUL kept, length says so */
    check_name("\\ud83d", "\xEF\xBF\xBD", 3);            /* lone high surrogate */
    check_name("\\ude00x", "\xEF\xBF\xBDx", 4);          /* lone low surrogate */
    check_name("\\ud83dx", "\xEF\xBF\xBDx", 4);          /* high, then text */
    check_name("\\ud83d\\n", "\xEF\xBF\xBD\n", 4);       /* high, then another escape */
    check_name("\\ud83d\\ud83d\\ude00", "\xEF\xBF\xBD\xF0\x9F\x98\x80", 7); /* high, pair */
    check_name("\\ud83d\\u0041",
               "\xEF\xBF\xBD"
               "A",
               4);                                                 /* high, then a BMP escape */
    check_name("\xC3\xA9\xE6\x97\xA5", "\xC3\xA9\xE6\x97\xA5", 5); /* raw UTF-8 passes */
    check_name("\xFF\xFE", "\xFF\xFE", 2); /* invalid UTF-8 passes through, unchecked */
    expect_error("[{\"name\":\"a\\qb\"}]", 11, "invalid escape '\\q'");
    expect_error("[{\"name\":\"a\\\x01\"}]", 11, "invalid escape in string");
    expect_error("[{\"name\":\"a\\u12G4\"}]", 15, "invalid \\u escape");
    expect_error("[{\"name\":\"a\\u12", 15, "unterminated string");
    expect_error("[{\"name\":\"a\\", 11, "unterminated string");
    expect_error("[{\"name\":\"a\nb\"}]", 11, "control character 0x0a");
    expect_error("[{\"name\":\"a\tb\"}]", 11, "control character 0x09");
    expect_error("[{\"name\":\"\\ud83d\\", 16, "unterminated string");
    /* Keys are decoded before they are compared: "\u0070h" is "ph". */
    ev_copy c;
    REQUIRE(
        nth_event("[{\"\\u0070h\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":0}]", 0,
                  NULL, &c));
    CHECK_STR(c.ev.ph.s, "X");
    CHECK_EQ(c.ev.bad, 0);
}

/* ---- 6. Bad events ------------------------------------------------------------------------ */

static void expect_bad(const char *event, unsigned bits, const char *reason) {
    char t[600];
    snprintf(t, sizeof t, "{\"traceEvents\":[%s]}", event);
    run r = run_text(t);
    ev_copy c;
    if (r.rc != 0 || !nth_event(t, 0, NULL, &c) || c.ev.bad != bits ||
        (reason && (!c.ev.bad_reason || strcmp(c.ev.bad_reason, reason) != 0))) {
        fprintf(stderr, "event %s: rc %d (%s) bad 0x%x (%s); want 0x%x (%s)\n", event, r.rc, r.err,
                c.ev.bad, c.ev.bad_reason ? c.ev.bad_reason : "-", bits, reason ? reason : "-");
        CHECK(0);
    }
}

#define GOOD_TAIL "\"pid\":1,\"tid\":1"

static void test_bad_events(void) {
    expect_bad("{\"ph\":\"X\",\"name\":\"a\"," GOOD_TAIL ",\"ts\":1,\"dur\":2}", 0, NULL);
    expect_bad("{\"ph\":\"E\"," GOOD_TAIL ",\"ts\":1}", 0, NULL); /* E needs no name */
    expect_bad("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"args\":{}}", 0, NULL);
    expect_bad("{\"ph\":\"X\",\"name\":\"a\"," GOOD_TAIL ",\"ts\":1,\"dur\":2,\"cat\":null}",
               STROBE_RD_BAD_CAT, "cat is not a string");
    expect_bad("{\"cat\":\"c\",\"name\":\"a\"," GOOD_TAIL ",\"ts\":1,\"dur\":2}", STROBE_RD_BAD_PH,
               "missing ph");
    expect_bad("{\"ph\":\"\",\"name\":\"a\"," GOOD_TAIL ",\"ts\":1}", STROBE_RD_BAD_PH, "empty ph");
    expect_bad("{\"ph\":88,\"name\":\"a\"," GOOD_TAIL ",\"ts\":1}", STROBE_RD_BAD_PH,
               "ph is not a string");
    expect_bad("{\"ph\":\"X\"," GOOD_TAIL ",\"ts\":1,\"dur\":2}", STROBE_RD_BAD_NAME,
               "missing name");
    expect_bad("{\"ph\":\"X\",\"name\":[\"a\"]," GOOD_TAIL ",\"ts\":1,\"dur\":2}",
               STROBE_RD_BAD_NAME, "name is not a string");
    expect_bad("{\"ph\":\"X\",\"name\":\"a\"," GOOD_TAIL ",\"ts\":\"100\",\"dur\":\"10\"}",
               STROBE_RD_BAD_TS | STROBE_RD_BAD_DUR, "ts is not a number");
    expect_bad("{\"ph\":\"X\",\"name\":\"a\"," GOOD_TAIL ",\"ts\":1e400,\"dur\":2}",
               STROBE_RD_BAD_TS, "ts is out of range");
    expect_bad("{\"ph\":\"X\",\"name\":\"a\"," GOOD_TAIL ",\"dur\":2}", STROBE_RD_BAD_TS,
               "missing ts");
    expect_bad("{\"ph\":\"X\",\"name\":\"a\"," GOOD_TAIL ",\"ts\":1}", STROBE_RD_BAD_DUR,
               "complete event without dur");
    expect_bad("{\"ph\":\"X\",\"name\":\"a\"," GOOD_TAIL ",\"ts\":1,\"dur\":-10}",
               STROBE_RD_BAD_DUR, "negative dur");
    expect_bad("{\"ph\":\"X\",\"name\":\"a\"," GOOD_TAIL ",\"ts\":1,\"dur\":true}",
               STROBE_RD_BAD_DUR, "dur is not a number");
    expect_bad("{\"ph\":\"X\",\"name\":\"a\",\"tid\":1,\"ts\":1,\"dur\":1}", STROBE_RD_BAD_PID,
               "missing pid");
    expect_bad("{\"ph\":\"X\",\"name\":\"a\",\"pid\":1.5,\"tid\":null,\"ts\":1,\"dur\":1}",
               STROBE_RD_BAD_PID | STROBE_RD_BAD_TID, "pid is neither an integer nor a string");
    expect_bad("{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"ts\":1,\"dur\":1}", STROBE_RD_BAD_TID,
               "missing tid");
    expect_bad("{\"ph\":\"s\",\"name\":\"a\"," GOOD_TAIL ",\"ts\":1,\"id\":{}}", STROBE_RD_BAD_ID,
               "id is neither an integer nor a string");
    expect_bad("{\"ph\":\"i\",\"name\":\"a\"," GOOD_TAIL ",\"ts\":1,\"args\":[1]}",
               STROBE_RD_BAD_ARGS, "args is not an object");
    expect_bad("{\"ph\":\"f\",\"name\":\"a\"," GOOD_TAIL ",\"ts\":1,\"bp\":1,\"s\":false}",
               STROBE_RD_BAD_FIELD, "bp is not a string");
    expect_bad("{\"ph\":\"i\",\"name\":\"a\"," GOOD_TAIL ",\"ts\":1,\"ts\":2}",
               STROBE_RD_BAD_DUP_KEY, "a member is repeated");
    expect_bad("null", STROBE_RD_BAD_NOT_OBJECT, "the event is not an object");
    expect_bad("[1,[2]]", STROBE_RD_BAD_NOT_OBJECT, NULL);
    expect_bad("\"x\"", STROBE_RD_BAD_NOT_OBJECT, NULL);
    expect_bad("-3.5", STROBE_RD_BAD_NOT_OBJECT, NULL);
    expect_bad("{}",
               STROBE_RD_BAD_PH | STROBE_RD_BAD_NAME | STROBE_RD_BAD_TS | STROBE_RD_BAD_PID |
                   STROBE_RD_BAD_TID,
               "missing ph");

    /* Values of bad events are not invented. */
    ev_copy c;
    REQUIRE(nth_event("[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":\"100\","
                      "\"dur\":1e999}]",
                      0, NULL, &c));
    CHECK_EQ(c.ev.has_ts, 0);
    CHECK_EQ(c.ev.ts_ns, 0);
    CHECK_EQ(c.ev.has_dur, 0);
    CHECK_EQ(c.ev.has_abs, 0);
    /* A repeated member: the last one counts, as in JavaScript. */
    REQUIRE(nth_event("[{\"ph\":\"i\",\"name\":\"a\",\"name\":\"b\",\"pid\":1,\"tid\":1,"
                      "\"ts\":1,\"ts\":2}]",
                      0, NULL, &c));
    CHECK_STR(c.ev.name.s, "b");
    CHECK_EQ(c.ev.ts_ns, 2000);
    /* The raw text of a non-object element. */
    REQUIRE(nth_event("[ 1 , null ,{\"a\":[true]}]", 1, NULL, &c));
    CHECK_STR(c.ev.raw, "null");
    CHECK_EQ(c.ev.offset, 6);
    REQUIRE(nth_event("[ 1 , null ,[{\"a\":[true]}, 2]]", 2, NULL, &c));
    CHECK_STR(c.ev.raw, "[{\"a\":[true]}, 2]");
    /* Unknown members, of any shape, are skipped. */
    REQUIRE(nth_event("[{\"x\":{\"y\":[1,2,{\"z\":\"}\"}]},\"ph\":\"i\",\"name\":\"a\",\"pid\":1,"
                      "\"tid\":1,\"ts\":1,\"w\":[]}]",
                      0, NULL, &c));
    CHECK_EQ(c.ev.bad, 0);
    CHECK_STR(c.ev.ph.s, "i");
}

/* ---- 7. Lookups over args ----------------------------------------------------------------- */

static void test_args(void) {
    const char *t = "[{\"ph\":\"X\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":1,\"args\":"
                    "{\"External id\": 49220, \"Call stack\": \"a.py(1): f\\nb.py(2): g\", "
                    "\"Input Dims\": [[1, 2], []], \"grid\": [1, 2, 3], \"nested\": {\"External "
                    "id\": 5}, \"est. achieved occupancy %\": 12.5, \"big\": 1e30, "
                    "\"stream\": \"7\", \"\\u0063orrelation\": 311, \"neg\": -16}}]";
    ev_copy c;
    REQUIRE(nth_event(t, 0, NULL, &c));
    strobe_rd_value v;
    int64_t i;
    double d;
    char buf[64];
    size_t n;
    CHECK_EQ(strobe_rd_event_arg(&c.ev, "External id", &v), 1);
    CHECK_EQ(v.type, STROBE_RD_T_NUMBER);
    CHECK_EQ(strobe_rd_value_int(&v, &i), 0);
    CHECK_EQ(i, 49220);
    CHECK_EQ(strobe_rd_event_arg(&c.ev, "correlation", &v), 1); /* the key was escaped */
    CHECK_EQ(strobe_rd_value_int(&v, &i), 0);
    CHECK_EQ(i, 311);
    CHECK_EQ(strobe_rd_event_arg(&c.ev, "neg", &v), 1);
    CHECK_EQ(strobe_rd_value_int(&v, &i), 0);
    CHECK_EQ(i, -16);
    CHECK_EQ(strobe_rd_event_arg(&c.ev, "Call stack", &v), 1);
    CHECK_EQ(v.type, STROBE_RD_T_STRING);
    CHECK_EQ(strobe_rd_value_str(&v, buf, sizeof buf, &n), 0);
    CHECK_STR(buf, "a.py(1): f\nb.py(2): g");
    CHECK_EQ(n, 21);
    CHECK_EQ(strobe_rd_value_str(&v, buf, 5, &n), STROBE_ERANGE);
    CHECK_STR(buf, "a.py");
    CHECK_EQ(n, 21);
    CHECK_EQ(strobe_rd_value_int(&v, &i), STROBE_EFORMAT);
    CHECK_EQ(strobe_rd_event_arg(&c.ev, "Input Dims", &v), 1);
    CHECK_EQ(v.type, STROBE_RD_T_ARRAY);
    CHECK_EQ(v.len, strlen("[[1, 2], []]"));
    CHECK(memcmp(v.raw, "[[1, 2], []]", v.len) == 0);
    CHECK_EQ(strobe_rd_value_str(&v, buf, sizeof buf, &n), STROBE_EFORMAT);
    CHECK_EQ(strobe_rd_event_arg(&c.ev, "nested", &v), 1);
    CHECK_EQ(v.type, STROBE_RD_T_OBJECT);
    CHECK_EQ(strobe_rd_obj_get(v.raw, v.len, "External id", &v), 1);
    CHECK_EQ(strobe_rd_value_int(&v, &i), 0);
    CHECK_EQ(i, 5);
    CHECK_EQ(strobe_rd_event_arg(&c.ev, "est. achieved occupancy %", &v), 1);
    CHECK_EQ(strobe_rd_value_int(&v, &i), STROBE_EFORMAT);
    CHECK_EQ(strobe_rd_value_double(&v, &d), 0);
    CHECK(d == 12.5);
    CHECK_EQ(strobe_rd_event_arg(&c.ev, "big", &v), 1);
    CHECK_EQ(strobe_rd_value_int(&v, &i), STROBE_ERANGE);
    CHECK_EQ(strobe_rd_event_arg(&c.ev, "stream", &v), 1);
    CHECK_EQ(strobe_rd_value_int(&v, &i), STROBE_EFORMAT); /* a string is not a number */
    CHECK_EQ(strobe_rd_event_arg(&c.ev, "grid", &v), 1);
    CHECK_EQ(strobe_rd_event_arg(&c.ev, "missing", &v), 0);
    CHECK_EQ(v.type, STROBE_RD_T_NONE);
    CHECK_EQ(strobe_rd_event_arg(&c.ev, "External", &v), 0);
    CHECK_EQ(strobe_rd_event_arg(&c.ev, "external id", &v), 0); /* keys are case-sensitive */

    /* No args. */
    c.ev.args = NULL;
    CHECK_EQ(strobe_rd_event_arg(&c.ev, "External id", &v), 0);
    /* Malformed or non-object text, never read past its length. */
    CHECK_EQ(strobe_rd_obj_get("[1]", 3, "a", &v), STROBE_EFORMAT);
    CHECK_EQ(strobe_rd_obj_get("", 0, "a", &v), STROBE_EFORMAT);
    CHECK_EQ(strobe_rd_obj_get("{\"a\":1", 6, "b", &v), STROBE_EFORMAT);
    CHECK_EQ(strobe_rd_obj_get("{\"a\":1", 6, "a", &v), 1);
    CHECK_EQ(strobe_rd_obj_get("{\"a\":1}", 5, "a", &v), STROBE_EFORMAT); /* no value */
    CHECK_EQ(strobe_rd_obj_get("{\"a\":1}", 4, "a", &v), STROBE_EFORMAT);
    CHECK_EQ(strobe_rd_obj_get("{\"a\":{\"b\":}", 11, "c", &v), STROBE_EFORMAT);
    CHECK_EQ(strobe_rd_obj_get("{}", 2, "a", &v), 0);
    strobe_rd_value s = {STROBE_RD_T_STRING, "\"ab\" x", 6};
    CHECK_EQ(strobe_rd_value_str(&s, buf, sizeof buf, NULL), STROBE_EFORMAT);
    strobe_rd_value num = {STROBE_RD_T_NUMBER, "1.5e", 4};
    CHECK_EQ(strobe_rd_value_double(&num, &d), STROBE_EFORMAT);
    CHECK_EQ(strobe_rd_value_int(&num, &i), STROBE_EFORMAT);
}

/* ---- 8. Files ----------------------------------------------------------------------------- */

/* A trace big enough to span many 64 KiB blocks, with strings and events across block edges. */
static char *make_big_trace(size_t nev, size_t *len_out) {
    size_t cap = nev * 400 + 300000, n = 0;
    char *t = malloc(cap);
    REQUIRE(t != NULL);
    n += (size_t)sprintf(t + n, "{\"schemaVersion\":1,\"baseTimeNanoseconds\":1000000000000,"
                                "\"traceEvents\":[\n");
    for (size_t i = 0; i < nev; i++) {
        if (i == nev / 2) {
            /* One event with a 200 KB name, larger than an input block. */
            n += (size_t)sprintf(t + n, "{\"ph\":\"i\",\"pid\":1,\"tid\":1,\"ts\":0,\"name\":\"");
            for (size_t k = 0; k < 200000; k++)
                t[n++] = (char)('A' + k % 26);
            n += (size_t)sprintf(t + n, "\"},\n");
        }
        n += (size_t)sprintf(t + n,
                             "  {\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\\u0023%zu\","
                             "\"pid\":%zu,\"tid\":\"stream %zu\",\"ts\":%zu.%03zu,\"dur\":%zu,"
                             "\"args\":{\"External id\":%zu,\"Call stack\":\"f%zu\\ng\"}}%s\n",
                             i, i % 7, i % 5, i * 3, i % 1000, i % 100, i, i,
                             i + 1 < nev ? "," : "");
    }
    n += (size_t)sprintf(t + n, "],\"traceName\":\"big\"}\n");
    *len_out = n;
    return t;
}

static int check_big(strobe_rd *r, size_t nev) {
    strobe_rd_item it;
    int rc;
    size_t i = 0;
    int errors = 0;
    while ((rc = strobe_rd_next(r, &it)) > 0) {
        if (it.kind != STROBE_RD_EVENT) continue;
        const strobe_rd_event *e = it.event;
        if (e->name.len == 200000) {
            errors += e->name.s[199999] != (char)('A' + 199999 % 26);
            continue;
        }
        char name[64], tid[64];
        snprintf(name, sizeof name, "op#%zu", i);
        snprintf(tid, sizeof tid, "stream %zu", i % 5);
        strobe_rd_value v;
        int64_t ext = -1;
        if (strobe_rd_event_arg(e, "External id", &v) == 1) strobe_rd_value_int(&v, &ext);
        int ok = e->bad == 0 && e->name.s && strcmp(e->name.s, name) == 0 && e->tid.str.s &&
                 strcmp(e->tid.str.s, tid) == 0 && e->pid.num == (int64_t)(i % 7) &&
                 e->ts_ns == (int64_t)(i * 3000 + i % 1000) &&
                 e->dur_ns == (int64_t)(i % 100 * 1000) &&
                 e->abs_ts_ns == 1000000000000 + e->ts_ns && ext == (int64_t)i &&
                 e->raw[0] == '{' && e->raw[e->raw_len - 1] == '}';
        if (!ok && errors++ < 3) fprintf(stderr, "big trace: event %zu differs\n", i);
        i++;
    }
    CHECK_EQ(rc, 0);
    CHECK_EQ(i, nev);
    return errors;
}

static void test_files(void) {
    size_t nev = 20000, len;
    char *t = make_big_trace(nev, &len);
    char plain[512], gz[512], cut[512];
    snprintf(plain, sizeof plain, "%s/reader_big.json", g_out_dir);
    snprintf(gz, sizeof gz, "%s/reader_big.json.gz", g_out_dir);
    snprintf(cut, sizeof cut, "%s/reader_cut.json.gz", g_out_dir);
    REQUIRE(write_file(plain, t, len, 0) == 0);
    REQUIRE(write_file(gz, t, len, 1) == 0);
    const char *paths[] = {plain, gz};
    for (int k = 0; k < 2; k++) {
        strobe_rd *r;
        REQUIRE(strobe_rd_open(&r, paths[k], NULL) == 0);
        CHECK_EQ(check_big(r, nev), 0);
        CHECK_EQ(strobe_rd_get_info(r)->bytes, (int64_t)len);
        CHECK_STR(strobe_rd_get_info(r)->trace_name.s, "big");
        strobe_rd_close(r);
    }
    strobe_rd *r;
    REQUIRE(strobe_rd_open_mem(&r, t, len, NULL, NULL) == 0);
    CHECK_EQ(check_big(r, nev), 0);
    strobe_rd_close(r);
    strobe_rd_options o;
    strobe_rd_options_init(&o);
    o.mem_chunk = 4093;
    REQUIRE(strobe_rd_open_mem(&r, t, len, NULL, &o) == 0);
    CHECK_EQ(check_big(r, nev), 0);
    strobe_rd_close(r);

    /* A gzip file cut in the middle: an error, never a crash. */
    FILE *f = fopen(gz, "rb");
    REQUIRE(f != NULL);
    char *zbuf = malloc(len);
    REQUIRE(zbuf != NULL);
    size_t zlen = fread(zbuf, 1, len, f);
    fclose(f);
    REQUIRE(write_file(cut, zbuf, zlen / 2, 0) == 0);
    REQUIRE(strobe_rd_open(&r, cut, NULL) == 0);
    run res;
    drain(r, &res);
    strobe_rd_close(r);
    CHECK(res.rc == STROBE_EFORMAT);
    CHECK(res.events > 0);
    CHECK(strstr(res.err, cut) == res.err);
    fprintf(stderr, "cut gzip: %s\n", res.err);
    /* Damaged compressed data. */
    zbuf[zlen / 2] ^= 0x55;
    zbuf[zlen / 2 + 1] ^= 0x55;
    REQUIRE(write_file(cut, zbuf, zlen, 0) == 0);
    REQUIRE(strobe_rd_open(&r, cut, NULL) == 0);
    drain(r, &res);
    strobe_rd_close(r);
    CHECK(res.rc < 0);
    fprintf(stderr, "damaged gzip: %s\n", res.err);
    free(zbuf);
    free(t);

    /* Files that cannot be read. */
    char missing[512];
    snprintf(missing, sizeof missing, "%s/no/such/trace.json", g_out_dir);
    int rc = strobe_rd_open(&r, missing, NULL);
    CHECK_EQ(rc, STROBE_EIO);
    REQUIRE(r != NULL);
    CHECK(strstr(strobe_rd_errmsg(r), missing) == strobe_rd_errmsg(r));
    CHECK(strstr(strobe_rd_errmsg(r), "cannot open") != NULL);
    CHECK_EQ(strobe_rd_error_offset(r), -1);
    strobe_rd_item it;
    CHECK_EQ(strobe_rd_next(r, &it), STROBE_EIO);
    strobe_rd_close(r);
    CHECK_EQ(strobe_rd_open(&r, g_out_dir, NULL), 0); /* a directory opens, then fails to read */
    CHECK_EQ(strobe_rd_next(r, &it), STROBE_EIO);
    fprintf(stderr, "directory: %s\n", strobe_rd_errmsg(r));
    strobe_rd_close(r);
    strobe_rd_close(NULL);
}

/* Every file in tests/corpus/reader/ (inputs that once crashed or hung the reader, and seeds)
 * must read to an end or an error, through every input path. */
static void test_corpus(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tests/corpus/reader", STROBE_SOURCE_DIR);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "no corpus at %s\n", dir);
        CHECK(0);
        return;
    }
    struct dirent *de;
    int files = 0;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        char *buf = malloc(1 << 20);
        REQUIRE(buf != NULL);
        size_t n = fread(buf, 1, 1 << 20, f);
        fclose(f);
        run r = run_opt(buf, n, NULL);
        CHECK(r.rc == 0 || r.rc == STROBE_EFORMAT);
        strobe_rd_options o;
        strobe_rd_options_init(&o);
        o.prescan_base = 1;
        run r2 = run_opt(buf, n, &o);
        CHECK_EQ(r2.rc, r.rc);
        CHECK_EQ(r2.events, r.events);
        free(buf);
        files++;
    }
    closedir(d);
    fprintf(stderr, "corpus: %d files\n", files);
    CHECK(files > 0);
}

/* ---- 9. Garbage and mutations ------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_garbage(void) {
    char buf[512];
    /* Random bytes, and random bytes from JSON's alphabet (which get further). */
    static const char alphabet[] = "{}[],:\"\\ \n0123456789.-+eEtrufalsn\"u";
    for (int iter = 0; iter < 1500; iter++) {
        size_t n = rnd() % sizeof buf;
        for (size_t i = 0; i < n; i++)
            buf[i] = iter % 2 ? (char)rnd() : alphabet[rnd() % (sizeof alphabet - 1)];
        run r = run_opt(buf, n, NULL);
        CHECK(r.rc == 0 || r.rc == STROBE_EFORMAT);
        CHECK(r.rc == 0 || (r.err_off >= 0 && r.err_off <= (int64_t)n));
    }
    /* Mutations of valid traces: flipped, inserted and deleted bytes. */
    const char *seeds[] = {NEW_TRACE, OLD_TRACE};
    for (int iter = 0; iter < 1500; iter++) {
        const char *s = seeds[iter % 2];
        size_t n = strlen(s);
        char *m = malloc(n + 16);
        REQUIRE(m != NULL);
        memcpy(m, s, n);
        int edits = 1 + (int)(rnd() % 4);
        for (int e = 0; e < edits && n > 1; e++) {
            size_t at = rnd() % n;
            switch (rnd() % 3) {
            case 0:
                m[at] = (char)rnd();
                break;
            case 1:
                memmove(m + at, m + at + 1, n - at - 1);
                n--;
                break;
            default:
                memmove(m + at + 1, m + at, n - at);
                m[at] = "{}[],:\"\\0"[rnd() % 9];
                n++;
            }
        }
        run r = run_opt(m, n, NULL);
        CHECK(r.rc == 0 || r.rc == STROBE_EFORMAT);
        free(m);
    }
}

/* ---- 10. Perfetto input by content, cut Perfetto input, messages ---------------------------- */

/* A growable byte buffer for hand-made protobuf. */
typedef struct pb {
    uint8_t *p;
    size_t len, cap;
} pb;

static void pb_bytes(pb *b, const void *d, size_t n) {
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->p = realloc(b->p, b->cap);
        REQUIRE(b->p != NULL);
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
}

static void pb_varint(pb *b, uint64_t v) {
    uint8_t t[10];
    size_t n = 0;
    do {
        t[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    pb_bytes(b, t, n);
}

/* Appends field `num` (length-delimited) holding inner[0..n). */
static void pb_len(pb *b, unsigned num, const void *inner, size_t n) {
    pb_varint(b, (uint64_t)num << 3 | 2);
    pb_varint(b, n);
    pb_bytes(b, inner, n);
}

/* A Trace packet with a thread track descriptor (uuid, pid 1, tid, and a name of name_len 'n's). */
static void pb_thread_packet(pb *b, uint64_t uuid, int tid, size_t name_len) {
    pb thread = {0}, desc = {0}, packet = {0};
    pb_varint(&thread, 1 << 3), pb_varint(&thread, 1);
    pb_varint(&thread, 2 << 3), pb_varint(&thread, (uint64_t)tid);
    pb_varint(&desc, 1 << 3), pb_varint(&desc, uuid);
    pb_len(&desc, 4, thread.p, thread.len);
    char name[256];
    memset(name, 'n', sizeof name);
    if (name_len) pb_len(&desc, 2, name, name_len < sizeof name ? name_len : sizeof name);
    pb_len(&packet, 60, desc.p, desc.len);
    pb_len(b, 1, packet.p, packet.len);
    free(thread.p), free(desc.p), free(packet.p);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Drains a reader; @return the final rc. */
static int drain_rc(strobe_rd *r) {
    strobe_rd_item it;
    int rc;
    while ((rc = strobe_rd_next(r, &it)) > 0) {
    }
    return rc;
}

static void test_perfetto_input(void) {
    /* A first packet of 123 bytes has '{' as its length byte: the sniff checks the packet. */
    pb b = {0};
    for (size_t name = 0; name < 200 && b.len != 125; name++) {
        b.len = 0;
        pb_thread_packet(&b, 42, 7, name);
    }
    REQUIRE(b.len == 125 && b.p[1] == '{');
    pb_thread_packet(&b, 43, 8, 3);
    CHECK_EQ(strobe_rd_pf_sniff(b.p, b.len, 1), 1);
    CHECK_EQ(strobe_rd_pf_sniff(b.p, 60, 0), 1); /* a head that ends inside the packet */
    static const char *const json[] = {"\n{\"traceEvents\":[]}", "\n\n[{\"ph\":\"X\"}]", "\n[]",
                                       "\n {\"a\":1,\"traceEvents\":[{}]}", "\n\n\n"};
    for (size_t i = 0; i < sizeof json / sizeof json[0]; i++) {
        if (strobe_rd_pf_sniff(json[i], strlen(json[i]), 1)) fprintf(stderr, "%s\n", json[i]);
        CHECK_EQ(strobe_rd_pf_sniff(json[i], strlen(json[i]), 1), 0);
    }
    /* Read from memory as a trace, whatever it is called. */
    strobe_rd *r;
    REQUIRE(strobe_rd_open_mem(&r, b.p, b.len, "t.json", NULL) == 0);
    CHECK_EQ(drain_rc(r), 0);
    CHECK_EQ(strobe_rd_get_info(r)->perfetto, 1);
    CHECK_EQ(strobe_rd_get_info(r)->pf_cut, 0);
    strobe_rd_close(r);
    /* Cut inside the second packet: read up to the first, and the cut said. */
    REQUIRE(strobe_rd_open_mem(&r, b.p, b.len - 2, "t.json", NULL) == 0);
    CHECK_EQ(drain_rc(r), 0);
    CHECK_EQ(strobe_rd_get_info(r)->pf_cut, 1);
    CHECK_EQ(strobe_rd_get_info(r)->pf_cut_offset, 125);
    strobe_rd_close(r);
    /* Cut inside the first packet: nothing whole, an error as before. */
    pb small = {0};
    pb_thread_packet(&small, 42, 7, 3);
    REQUIRE(strobe_rd_open_mem(&r, small.p, small.len - 1, "t.json", NULL) == 0);
    CHECK_EQ(drain_rc(r), STROBE_EFORMAT);
    CHECK(strstr(strobe_rd_errmsg(r), "past the end") != NULL);
    strobe_rd_close(r);
    free(small.p);

    /* 300,000 packet sequences, one packet each: the decoder found a packet's sequence by a scan
     * of all of them (86 s for this shape); the bound is a generous backup. */
    b.len = 0;
    pb_thread_packet(&b, 42, 7, 1);
    for (uint64_t seq = 1; seq <= 300000; seq++) {
        pb packet = {0};
        pb_varint(&packet, 10 << 3);
        pb_varint(&packet, seq);
        pb_len(&b, 1, packet.p, packet.len);
        free(packet.p);
    }
    double t0 = now_s();
    REQUIRE(strobe_rd_open_mem(&r, b.p, b.len, "seqs.pftrace", NULL) == 0);
    CHECK_EQ(drain_rc(r), 0);
    strobe_rd_close(r);
    double secs = now_s() - t0;
    printf("300000 sequences: %.2f s\n", secs);
    CHECK(secs < 10);
    free(b.p);
}

/* A track event packet: type, track 42, time ts, a name, a category (NULL: none), annotations
 * (ann: a DebugAnnotation's bytes, ann_len of them, or NULL), a flow id (0: none). */
static void pb_event(pb *b, int type, uint64_t ts, const char *name, size_t name_len,
                     const char *cat, const void *ann, size_t ann_len, uint64_t flow, int term) {
    pb te = {0}, packet = {0};
    pb_varint(&te, 9 << 3), pb_varint(&te, (uint64_t)type);
    pb_varint(&te, 11 << 3), pb_varint(&te, 42);
    if (name) pb_len(&te, 23, name, name_len);
    if (cat) pb_len(&te, 22, cat, strlen(cat));
    if (ann) pb_len(&te, 4, ann, ann_len);
    if (flow) pb_varint(&te, (term ? 42u : 36u) << 3), pb_varint(&te, flow);
    if (type == 4) pb_varint(&te, 30 << 3), pb_varint(&te, 5);
    pb_varint(&packet, 8 << 3), pb_varint(&packet, ts);
    pb_varint(&packet, 10 << 3), pb_varint(&packet, 1);
    pb_len(&packet, 11, te.p, te.len);
    pb_len(b, 1, packet.p, packet.len);
    free(te.p), free(packet.p);
}

/* A DebugAnnotation "k" whose value is the legacy JSON text json. */
static void pb_json_ann(pb *a, const char *json) {
    a->len = 0;
    pb_len(a, 10, "k", 1);
    pb_len(a, 9, json, strlen(json));
}

/* Every field of the events of two readers, and how they end. */
static void same_reading(strobe_rd *a, strobe_rd *b, const char *what) {
    strobe_rd_item x, y;
    int ra, rb;
    size_t n = 0;
    do {
        do
            ra = strobe_rd_next(a, &x);
        while (ra == STROBE_RD_META);
        do
            rb = strobe_rd_next(b, &y);
        while (rb == STROBE_RD_META);
        CHECK_EQ(ra, rb);
        if (ra != rb || ra != STROBE_RD_EVENT) break;
        const strobe_rd_event *e = x.event, *f = y.event;
        n++;
        CHECK_EQ(e->offset, f->offset);
        const strobe_rd_str *sa[] = {&e->ph, &e->name,    &e->cat,     &e->bp,
                                     &e->s,  &e->pid.str, &e->tid.str, &e->id.str};
        const strobe_rd_str *sb[] = {&f->ph, &f->name,    &f->cat,     &f->bp,
                                     &f->s,  &f->pid.str, &f->tid.str, &f->id.str};
        for (size_t k = 0; k < sizeof sa / sizeof sa[0]; k++) {
            CHECK_EQ(!sa[k]->s, !sb[k]->s);
            CHECK_EQ(sa[k]->len, sb[k]->len);
            if (sa[k]->s && sb[k]->s && sa[k]->len == sb[k]->len)
                CHECK(memcmp(sa[k]->s, sb[k]->s, sa[k]->len + 1) == 0);
        }
        int64_t na[] = {e->pid.kind, e->pid.num,   e->tid.kind, e->tid.num,    e->id.kind,
                        e->id.num,   e->has_ts,    e->ts_ns,    e->has_dur,    e->dur_ns,
                        e->has_abs,  e->abs_ts_ns, e->bad,      e->pid.has_num};
        int64_t nb[] = {f->pid.kind, f->pid.num,   f->tid.kind, f->tid.num,    f->id.kind,
                        f->id.num,   f->has_ts,    f->ts_ns,    f->has_dur,    f->dur_ns,
                        f->has_abs,  f->abs_ts_ns, f->bad,      f->pid.has_num};
        for (size_t k = 0; k < sizeof na / sizeof na[0]; k++)
            CHECK_EQ(na[k], nb[k]);
        CHECK_EQ(e->raw_len, f->raw_len);
        CHECK(e->raw_len == f->raw_len && memcmp(e->raw, f->raw, e->raw_len) == 0);
        CHECK_EQ(!e->args, !f->args);
        CHECK(e->args_len == f->args_len &&
              (!e->args || memcmp(e->args, f->args, e->args_len) == 0));
        CHECK_STR(e->bad_reason ? e->bad_reason : "", f->bad_reason ? f->bad_reason : "");
    } while (1);
    CHECK_STR(strobe_rd_errmsg(a), strobe_rd_errmsg(b));
    CHECK_EQ(strobe_rd_error_offset(a), strobe_rd_error_offset(b));
    if (check__failures) printf("%s: after %zu events\n", what, n);
}

/* The reader fills a Perfetto trace's events from the decoder's fields; they must be what the
 * trace's JSON conversion (strobe_rd_pf_to_json) gives when it is read as JSON, also where the
 * fields alone do not say it (escapes, values out of range) and at the limits. */
static void test_perfetto_direct(void) {
    pb b = {0}, ann = {0};
    pb_thread_packet(&b, 42, 7, 4);
    pb_event(&b, 1, 1000, "outer", 5, "cpu_op", NULL, 0, 5, 0);
    pb_event(&b, 1, 1100, "q\"uo\\te", 8, "c\nat", NULL, 0, 0, 0);
    pb_event(&b, 2, 1200, NULL, 0, NULL, NULL, 0, 0, 0);
    pb_event(&b, 1, 1300, "bad\xff utf8 \xe2\x82", 12, "cpu_op", NULL, 0, 0, 0);
    pb_event(&b, 2, 1400, NULL, 0, NULL, NULL, 0, 0, 0);
    pb_event(&b, 1, 1500, "nul\0byte", 8, NULL, NULL, 0, UINT64_MAX, 0);
    pb_event(&b, 2, 1600, NULL, 0, NULL, NULL, 0, 0, 0);
    pb_json_ann(&ann, "[[1, 2], {\"a\": [3]}]"); /* depth 3 */
    pb_event(&b, 1, 1700, "nested", 6, "cpu_op", ann.p, ann.len, 0, 0);
    pb_json_ann(&ann, "\""
                      "a long string value, longer than some limits"
                      "\"");
    pb_event(&b, 2, 1800, NULL, 0, NULL, ann.p, ann.len, 0, 0);
    pb_event(&b, 3, 1900, "mark", 4, "i\"nst", ann.p, ann.len, UINT64_MAX, 1);
    pb_event(&b, 4, 2000, NULL, 0, NULL, NULL, 0, 0, 0);
    pb_event(&b, 1, (uint64_t)INT64_MIN, "min", 3, "cpu_op", NULL, 0, 0, 0);
    pb_event(&b, 2, 2100, NULL, 0, NULL, NULL, 0, 0, 0);
    pb_event(&b, 3, 2200, "inst", 4, NULL, NULL, 0, 5, 1);
    pb_event(&b, 1, 2300, "left open, with a name of 40 bytes ....", 40, "cpu_op", NULL, 0, 0, 0);
    char *json;
    size_t len;
    char err[320];
    REQUIRE(strobe_rd_pf_to_json(b.p, b.len, &json, &len, err, sizeof err, NULL) == 0);
    static const struct {
        size_t depth, string, value;
    } lim[] = {{0, 0, 0}, {3, 0, 0},  {4, 0, 0},  {5, 0, 0},   {6, 0, 0},  {7, 0, 0},
               {0, 8, 0}, {0, 30, 0}, {0, 0, 60}, {0, 0, 150}, {0, 0, 200}};
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++) {
        strobe_rd_options o;
        strobe_rd_options_init(&o);
        if (lim[i].depth) o.max_depth = lim[i].depth;
        if (lim[i].string) o.max_string = lim[i].string;
        if (lim[i].value) o.max_value = lim[i].value;
        strobe_rd *r, *j;
        REQUIRE(strobe_rd_open_mem(&r, b.p, b.len, "t", &o) == 0);
        REQUIRE(strobe_rd_open_mem(&j, json, len, "t", &o) == 0);
        char what[64];
        snprintf(what, sizeof what, "limits %zu/%zu/%zu", lim[i].depth, lim[i].string,
                 lim[i].value);
        same_reading(r, j, what);
        strobe_rd_close(r);
        strobe_rd_close(j);
    }
    free(json);
    free(b.p);
    free(ann.p);
}

/* Keys and names from the file in messages: control characters escaped, one line. */
static void test_message_escapes(void) {
    static const char text[] = "{\"traceEvents\":[],\"a\\nb\\u001b[2J\\t\\u007f\":";
    run r = run_text(text);
    CHECK_EQ(r.rc, STROBE_EFORMAT);
    CHECK(strstr(r.err, "member \"a\\nb\\e[2J\\t\\x7f\" has no value") != NULL);
    for (const char *p = r.err; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            fprintf(stderr, "control character 0x%02x in '%s'\n", (unsigned)*p, r.err);
            CHECK(0);
            break;
        }
}

int main(void) {
    mkdir(g_out_dir, 0777);
    test_us_to_ns();
    test_new_schema();
    test_old_schema();
    test_base_after_events();
    test_bare_and_shapes();
    test_unterminated();
    test_errors();
    test_limits();
    test_truncation();
    test_strings();
    test_bad_events();
    test_args();
    test_files();
    test_corpus();
    test_garbage();
    test_perfetto_input();
    test_perfetto_direct();
    test_message_escapes();
    return check_result();
}
