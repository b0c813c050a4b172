/* fuzz_reader.c: libFuzzer harness for the trace reader (src/reader).
 *
 * Build: CC=clang cmake -DSTROBE_FUZZ=ON ... && cmake --build . --target fuzz_reader
 * Run:   ./tests/fuzz_reader -max_total_time=120 CORPUS_DIR ../tests/corpus/reader
 *
 * Each input is read twice: in one window, and fed in small windows the way a file is read. The
 * two readings must agree (same outcome, events, error offset and content), which checks the code
 * for tokens and events that straddle input blocks against the simple path. Every byte the reader
 * hands out is touched, so that AddressSanitizer sees any pointer into freed or foreign memory.
 * A Perfetto input whose JSON conversion (strobe_rd_pf_to_json) succeeds is also read from that
 * JSON text: the events the reader fills from the decoder's fields must be those it reads from
 * their text, and an error the same, at the same offset.
 * A crasher found here goes into tests/corpus/reader/, which test_reader replays. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pftrace_dec.h"
#include "trace_reader.h"

typedef struct outcome {
    int rc;
    uint64_t items, hash, events;
    int64_t err_off;
    char msg[640];
} outcome;

static uint64_t mix(uint64_t h, const void *p, size_t n) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

static uint64_t mix_str(uint64_t h, strobe_rd_str s) {
    return s.s ? mix(h, s.s, s.len + 1) : mix(h, "-", 1); /* + 1: the terminator is there */
}

static uint64_t use_value(uint64_t h, const strobe_rd_value *v) {
    int64_t i;
    double d;
    char buf[32];
    size_t n;
    h = mix(h, v->raw, v->len);
    if (strobe_rd_value_int(v, &i) == 0) h = mix(h, &i, sizeof i);
    if (strobe_rd_value_double(v, &d) == 0) h = mix(h, "d", 1);
    if (strobe_rd_value_str(v, buf, sizeof buf, &n) >= 0) h = mix(h, buf, strlen(buf));
    return h;
}

static outcome read_all(const uint8_t *data, size_t size, size_t chunk, int prescan) {
    strobe_rd_options o;
    strobe_rd_options_init(&o);
    o.max_string = 1 << 16;
    o.max_value = 1 << 20;
    o.mem_chunk = chunk;
    o.prescan_base = prescan;
    outcome out = {.hash = 14695981039346656037ull, .err_off = -1};
    strobe_rd *r;
    if (strobe_rd_open_mem(&r, data, size, "fuzz", &o) != 0) abort();
    strobe_rd_item it;
    int rc;
    while ((rc = strobe_rd_next(r, &it)) > 0) {
        out.items++;
        if (it.kind == STROBE_RD_META) {
            out.hash = mix_str(out.hash, it.meta->key);
            out.hash = use_value(out.hash, &it.meta->value);
            strobe_rd_value v;
            if (it.meta->value.type == STROBE_RD_T_OBJECT &&
                strobe_rd_obj_get(it.meta->value.raw, it.meta->value.len, "rank", &v) == 1)
                out.hash = use_value(out.hash, &v);
            continue;
        }
        const strobe_rd_event *e = it.event;
        out.events++;
        out.hash = mix(out.hash, &e->offset, sizeof e->offset);
        out.hash = mix_str(out.hash, e->ph);
        out.hash = mix_str(out.hash, e->name);
        out.hash = mix_str(out.hash, e->cat);
        out.hash = mix_str(out.hash, e->bp);
        out.hash = mix_str(out.hash, e->s);
        out.hash = mix_str(out.hash, e->pid.str);
        out.hash = mix_str(out.hash, e->tid.str);
        out.hash = mix_str(out.hash, e->id.str);
        int64_t nums[8] = {e->pid.num, e->tid.num,   e->id.num,  e->ts_ns,
                           e->dur_ns,  e->abs_ts_ns, e->has_abs, (int64_t)e->bad};
        out.hash = mix(out.hash, nums, sizeof nums);
        out.hash = mix(out.hash, e->raw, e->raw_len);
        if (e->args) out.hash = mix(out.hash, e->args, e->args_len);
        if (e->bad_reason) out.hash = mix(out.hash, e->bad_reason, strlen(e->bad_reason));
        strobe_rd_value v;
        static const char *const keys[] = {"External id", "correlation", "Call stack", "name"};
        for (size_t k = 0; k < 4; k++)
            if (strobe_rd_event_arg(e, keys[k], &v) == 1) out.hash = use_value(out.hash, &v);
    }
    out.rc = rc;
    out.err_off = strobe_rd_error_offset(r);
    const char *msg = strobe_rd_errmsg(r);
    if ((rc == 0) != (msg[0] == '\0')) abort();
    snprintf(out.msg, sizeof out.msg, "%s", msg);
    const strobe_rd_info *info = strobe_rd_get_info(r);
    if (info->trace_name.s) out.hash = mix_str(out.hash, info->trace_name);
    if (info->device_properties)
        out.hash = mix(out.hash, info->device_properties, info->device_properties_len);
    strobe_rd_close(r);
    return out;
}

/* The events of a Perfetto input against those of its JSON conversion read as JSON (metadata
 * items aside: the JSON path hashes them too, but a Perfetto trace's come from the same text). */
static void check_direct(const uint8_t *data, size_t size, const outcome *a) {
    if (size == 0 || !strobe_rd_pf_sniff(data, size, 1)) return;
    char *json, err[320];
    size_t len;
    int64_t cut;
    if (strobe_rd_pf_to_json(data, size, &json, &len, err, sizeof err, &cut) != 0) return;
    outcome j = read_all((const uint8_t *)json, len, 0, 0);
    free(json);
    if (a->rc != j.rc || a->items != j.items || a->events != j.events || a->hash != j.hash ||
        a->err_off != j.err_off || strcmp(a->msg, j.msg) != 0) {
        fprintf(stderr,
                "direct reading differs from the JSON conversion's: rc %d/%d events %llu/%llu "
                "off %lld/%lld\n'%s'\n'%s'\n",
                a->rc, j.rc, (unsigned long long)a->events, (unsigned long long)j.events,
                (long long)a->err_off, (long long)j.err_off, a->msg, j.msg);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    outcome a = read_all(data, size, 0, 0);
    if (a.rc > 0 || (a.rc < 0 && a.rc != STROBE_EFORMAT)) abort();
    outcome b = read_all(data, size, 1 + size % 5, size & 1);
    /* Prescan changes only abs_ts_ns; compare it with what the one-window reading says. */
    outcome c = read_all(data, size, 1 + size % 5, 0);
    if (a.rc != c.rc || a.items != c.items || a.err_off != c.err_off || a.hash != c.hash) {
        fprintf(stderr, "window reading differs: rc %d/%d items %llu/%llu off %lld/%lld\n", a.rc,
                c.rc, (unsigned long long)a.items, (unsigned long long)c.items,
                (long long)a.err_off, (long long)c.err_off);
        abort();
    }
    if (a.rc != b.rc || a.items != b.items || a.err_off != b.err_off) abort();
    check_direct(data, size, &a);
    int64_t ns;
    (void)strobe_rd_us_to_ns((const char *)data, size, &ns);
    return 0;
}
