/* json_writer.c: Chrome trace JSON in Kineto's schema.
 *
 * Contents (the formatting primitives, integers, microsecond timestamps, doubles and escaped
 * strings, are in util/json_fmt.h, shared with the streaming output):
 *   2. The top-level object: schemaVersion, deviceProperties, metadata, displayTimeUnit,
 *      baseTimeNanoseconds (write_header), traceName (write_footer).
 *   3. traceEvents: process and thread metadata events, then one line per event.
 *
 * Speed matters here: a result can hold tens of millions of events, and saving it is the one
 * cost a user waits for. Events are formatted straight into the sink's buffer with hand-written
 * integer and string formatting, one buffer reservation per event; no stdio on the per-event path
 * except for counter values, which are rare. Timestamps never go through a double: consumers
 * parse them as doubles already, and a second rounding here would let children end after their
 * parents. */
#include "json_writer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strobe/error.h"
#include "strobe/version.h"
#include "writer.h"

#define LIT(p, s) (memcpy((p), (s), sizeof(s) - 1), (p) + sizeof(s) - 1)

/* Sink-level helpers for the header and metadata, where speed does not matter. Errors are sticky
 * in the sink, so callers check s->err once at the end. */
static void emit(strobe__sink *s, const char *text) {
    strobe__sink_write(s, text, strlen(text));
}

static void emit_string(strobe__sink *s, const char *str) {
    size_t n = strlen(str);
    char *p = strobe__sink_reserve(s, STROBE__JSON_STRING_MAX(n));
    if (p) strobe__sink_commit(s, put_string(p, str, n));
}

static void emit_i64(strobe__sink *s, int64_t v) {
    char *p = strobe__sink_reserve(s, 24);
    if (p) strobe__sink_commit(s, put_i64(p, v));
}

static void emit_u64(strobe__sink *s, uint64_t v) {
    char *p = strobe__sink_reserve(s, 24);
    if (p) strobe__sink_commit(s, put_u64(p, v));
}

/* ---- 2. The top-level object ----------------------------------------------------------------- */

/* Every field of strobe_stats, by its C name. The static assertion below fails when a field is
 * added to the struct and not here, so the trace never silently omits a loss counter. */
#define STATS_FIELDS(X)                                                                            \
    X(dropped_events)                                                                              \
    X(unmatched_ends)                                                                              \
    X(unfinished_ranges)                                                                           \
    X(truncated_ranges)                                                                            \
    X(signal_dropped)                                                                              \
    X(truncated_names)                                                                             \
    X(scope_depth_overflow)                                                                        \
    X(correlation_overflow)                                                                        \
    X(buffer_bytes_used)                                                                           \
    X(buffer_bytes_cap)                                                                            \
    X(threads)                                                                                     \
    X(truncated_details)                                                                           \
    X(orphan_details)                                                                              \
    X(unmatched_module_pops)                                                                       \
    X(clipped_backend_events)                                                                      \
    X(cuda_dropped_records)                                                                        \
    X(cuda_outside_window)                                                                         \
    X(cuda_moved_events)                                                                           \
    X(reversed_backend_events)
#define COUNT_FIELD(f) +1
_Static_assert(sizeof(strobe_stats) == (0 STATS_FIELDS(COUNT_FIELD)) * sizeof(uint64_t),
               "json_writer.c: STATS_FIELDS must list every field of strobe_stats");
#undef COUNT_FIELD

/* "baseTimeNanoseconds": 1 us before the session start. Every ts is relative to it, so no event
 * sits at ts 0, which the Chrome DevTools engine takes for "unset" and leaves out of the trace's
 * bounds; absolute times (base + ts) stay exact. */
static int64_t base_ns(const strobe_result *r) {
    return r->trace_start_ns - 1000;
}

/* The "strobe" member's value: version, clock, calibration, loss counters and warnings. Shared
 * with the Perfetto writer, which attaches it to the session slice. */
void strobe__json_write_strobe_object(const strobe_result *r, strobe__sink *s,
                                      uint64_t skipped_counters) {
    emit(s, "{\"version\": ");
    emit_string(s, STROBE_VERSION_STRING);
    emit(s, ", \"clock\": ");
    emit_string(s, r->clock_source ? r->clock_source : "unknown");
    emit(s, ", \"ns_per_tick\": ");
    char *p = strobe__sink_reserve(s, STROBE__JSON_DOUBLE_MAX);
    if (p) {
        char *e = strobe__json_put_double(p, r->clock_ns_per_tick);
        strobe__sink_commit(s, e ? e : LIT(p, "null"));
    }
    emit(s, ", \"stats\": {");
    const char *sep = "";
#define EMIT_FIELD(f)                                                                              \
    emit(s, sep);                                                                                  \
    emit(s, "\"" #f "\": ");                                                                       \
    emit_u64(s, r->stats.f);                                                                       \
    sep = ", ";
    STATS_FIELDS(EMIT_FIELD)
#undef EMIT_FIELD
    emit(s, "}, \"skipped_counter_samples\": ");
    emit_u64(s, skipped_counters);
    emit(s, ", \"warnings\": [");
    for (size_t i = 0; i < r->warning_count; i++) {
        if (i) emit(s, ", ");
        emit_string(s, r->warnings[i] ? r->warnings[i] : "");
    }
    emit(s, "]}");
}

static void write_header(const strobe_result *r, strobe__sink *s, uint64_t skipped_counters) {
    /* deviceProperties was built as JSON by the device merge (gpu.c). */
    emit(s, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": ");
    emit(s, r->device_props ? r->device_props : "[]");
    emit(s, ",\n  \"trace_id\": ");
    emit_string(s, r->trace_id ? r->trace_id : "");

    emit(s, ",\n  \"strobe\": ");
    strobe__json_write_strobe_object(r, s, skipped_counters);
    /* User metadata values were validated as JSON when they were added: pasted verbatim. */
    for (size_t i = 0; i < r->meta_count; i++) {
        const strobe__meta *m = &r->meta[i];
        if (m->key == NULL || m->json == NULL || strobe__meta_key_reserved(m->key) == 2) continue;
        emit(s, ",\n  ");
        emit_string(s, m->key);
        emit(s, ": ");
        emit(s, m->json);
    }

    emit(s, ",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
    emit_i64(s, base_ns(r));
    emit(s, ",\n  \"traceEvents\": [\n");
}

static void write_footer(const strobe_result *r, strobe__sink *s) {
    emit(s, "\n  ]");
    if (r->trace_name) {
        emit(s, ",\n  \"traceName\": ");
        emit_string(s, r->trace_name);
    }
    emit(s, "\n}\n");
}

/* ---- 3. traceEvents -------------------------------------------------------------------------- */

/* One metadata event ("ph":"M") at the trace's start, Kineto's way of naming and ordering
 * processes and threads. Exactly one of str_value / int_value is used. */
static void write_meta_event(strobe__sink *s, int first, const char *name, int64_t pid, int64_t tid,
                             const char *arg, const char *str_value, int64_t int_value) {
    emit(s, first ? "  {\"name\": \"" : ",\n  {\"name\": \"");
    emit(s, name);
    emit(s, "\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": ");
    emit_i64(s, pid);
    emit(s, ", \"tid\": ");
    emit_i64(s, tid);
    emit(s, ", \"args\": {\"");
    emit(s, arg);
    emit(s, "\": ");
    if (str_value)
        emit_string(s, str_value);
    else
        emit_i64(s, int_value);
    emit(s, "}}");
}

/* The process's name from /proc when the result is this process's own, else "strobe". */
void strobe__json_process_name(const strobe_result *r, char *buf, size_t size) {
    snprintf(buf, size, "strobe");
    if (r->pid != (int64_t)getpid()) return;
    FILE *f = fopen("/proc/self/comm", "re");
    if (f == NULL) return;
    if (fgets(buf, (int)size, f) == NULL) snprintf(buf, size, "strobe");
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    if (buf[0] == '\0') snprintf(buf, size, "strobe");
}

/* The whole session as one span on its own track (tid 0, named "Spans"), as Kineto writes its
 * "PyTorch Profiler (N)" span: viewers show the true extent of the profile, and a session that
 * recorded nothing still has a well-defined time range. */
static void write_session_span(const strobe_result *r, strobe__sink *s) {
    write_meta_event(s, 0, "thread_name", r->pid, 0, "name", "Spans", 0);
    write_meta_event(s, 0, "thread_sort_index", r->pid, 0, "sort_index", NULL, 0);
    int64_t dur = r->trace_end_ns > r->trace_start_ns ? r->trace_end_ns - r->trace_start_ns : 0;
    char *p = strobe__sink_reserve(s, 256);
    if (p == NULL) return;
    static const char head[] =
        ",\n  {\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"strobe session\", \"pid\": ";
    memcpy(p, head, sizeof head - 1);
    p += sizeof head - 1;
    p = put_i64(p, r->pid);
    static const char mid[] = ", \"tid\": 0, \"ts\": ";
    memcpy(p, mid, sizeof mid - 1);
    p += sizeof mid - 1;
    p = put_ts(p, r->trace_start_ns, base_ns(r));
    static const char d[] = ", \"dur\": ";
    memcpy(p, d, sizeof d - 1);
    p += sizeof d - 1;
    p = put_ts(p, dur, 0);
    static const char tail[] = ", \"args\": {}}";
    memcpy(p, tail, sizeof tail - 1);
    p += sizeof tail - 1;
    strobe__sink_commit(s, p);
}

/* Device tracks: one process per device (pid = its index, "GPU N"), sorted after the CPU
 * process (whose sort index is its pid, below 2^22) as Kineto does, and one thread per stream
 * ("stream S", sorted by stream). */
static void write_device_metadata(const strobe_result *r, strobe__sink *s) {
    for (size_t i = 0; i < r->thread_count; i++) {
        const strobe_thread_info *t = &r->threads[i];
        if (t->device_type == STROBE_DEVICE_CPU) continue;
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++)
            seen = r->threads[k].device_type == t->device_type &&
                   r->threads[k].device_index == t->device_index;
        if (seen) continue;
        char pname[32];
        snprintf(pname, sizeof pname, "GPU %d", (int)t->device_index);
        write_meta_event(s, 0, "process_name", t->device_index, 0, "name", pname, 0);
        write_meta_event(s, 0, "process_labels", t->device_index, 0, "labels", pname, 0);
        write_meta_event(s, 0, "process_sort_index", t->device_index, 0, "sort_index", NULL,
                         INT64_C(16777216) + t->device_index);
        for (size_t k = i; k < r->thread_count; k++) {
            const strobe_thread_info *u = &r->threads[k];
            if (u->device_type != t->device_type || u->device_index != t->device_index) continue;
            char tname[40];
            const char *n = u->name;
            if (n == NULL || n[0] == '\0') {
                snprintf(tname, sizeof tname, "stream %lld", (long long)u->tid);
                n = tname;
            }
            write_meta_event(s, 0, "thread_name", u->device_index, u->tid, "name", n, 0);
            write_meta_event(s, 0, "thread_sort_index", u->device_index, u->tid, "sort_index", NULL,
                             u->tid);
        }
    }
}

static void write_metadata_events(const strobe_result *r, strobe__sink *s) {
    char pname[64];
    strobe__json_process_name(r, pname, sizeof pname);
    write_meta_event(s, 1, "process_name", r->pid, 0, "name", pname, 0);
    write_meta_event(s, 0, "process_labels", r->pid, 0, "labels", "CPU", 0);
    write_meta_event(s, 0, "process_sort_index", r->pid, 0, "sort_index", NULL, r->pid);
    for (size_t i = 0; i < r->thread_count; i++) {
        const strobe_thread_info *t = &r->threads[i];
        char fallback[40];
        const char *tname = t->name;
        if (tname == NULL || tname[0] == '\0') {
            snprintf(fallback, sizeof fallback, "thread %lld", (long long)t->tid);
            tname = fallback;
        }
        if (t->device_type != STROBE_DEVICE_CPU) continue;
        write_meta_event(s, 0, "thread_name", r->pid, t->tid, "name", tname, 0);
        write_meta_event(s, 0, "thread_sort_index", r->pid, t->tid, "sort_index", NULL, t->tid);
    }
    write_session_span(r, s);
    write_device_metadata(r, s);
}

/* Room for everything of an event line except its strings and extra args: the literals
 * (about 150 bytes) and at most eight numbers of at most 24 bytes. */
#define EVENT_FIXED 512

/* Writes the extra args of an event (after the ones the writer makes), then closes the args
 * object and the event. Returns 0 or the sink's error. */
static int write_args_tail(strobe__sink *s, const strobe_arg *a) {
    for (; a; a = a->next) {
        if (a->key == NULL || a->json == NULL) continue;
        size_t klen = strlen(a->key), vlen = strlen(a->json);
        char *p = strobe__sink_reserve(s, STROBE__JSON_STRING_MAX(klen) + vlen + 4);
        if (p == NULL) return s->err;
        p = LIT(p, ", ");
        p = put_string(p, a->key, klen);
        p = LIT(p, ": ");
        memcpy(p, a->json, vlen);
        strobe__sink_commit(s, p + vlen);
    }
    char *p = strobe__sink_reserve(s, 2);
    if (p == NULL) return s->err;
    strobe__sink_commit(s, LIT(p, "}}"));
    return 0;
}

/* Writes one event as one line, preceded by the separator from the previous element. */
static int write_event(const strobe_result *r, strobe__sink *s, const strobe_event *e,
                       int64_t end_ns, size_t index) {
    const char *name = e->name ? e->name : "";
    const char *cat = e->category && e->category[0] ? e->category : "cpu_op";
    size_t nlen = strlen(name), clen = strlen(cat);
    /* A counter writes its name twice: as the event's name and as its series in args. */
    size_t need = EVENT_FIXED + 2 * STROBE__JSON_STRING_MAX(nlen) + STROBE__JSON_STRING_MAX(clen);
    char *p = strobe__sink_reserve(s, need);
    if (p == NULL) return s->err;
    /* Device work goes under the device's index as pid, like Kineto; CPU work under the OS pid. */
    int64_t pid = e->device_type == STROBE_DEVICE_CPU ? r->pid : (int64_t)e->device_index;

    switch (e->kind) {
    case STROBE_EVENT_RANGE:
        p = LIT(p, ",\n  {\"ph\": \"X\", \"cat\": ");
        break;
    case STROBE_EVENT_COUNTER:
        p = LIT(p, ",\n  {\"ph\": \"C\", \"cat\": ");
        break;
    default:
        /* Instants, and (defensively) any kind this writer does not know, which a point in time
         * represents without claiming a duration. */
        p = LIT(p, ",\n  {\"ph\": \"i\", \"s\": \"t\", \"cat\": ");
        break;
    }
    p = put_string(p, cat, clen);
    p = LIT(p, ", \"name\": ");
    p = put_string(p, name, nlen);
    p = LIT(p, ", \"pid\": ");
    p = put_i64(p, pid);
    p = LIT(p, ", \"tid\": ");
    p = put_i64(p, e->tid);
    p = LIT(p, ", \"ts\": ");
    p = put_ts(p, e->start_ns, base_ns(r));

    if (e->kind == STROBE_EVENT_COUNTER) {
        /* A counter's args are its series: nothing else may go there, or it becomes a series. */
        p = LIT(p, ", \"args\": {");
        p = put_string(p, name, nlen);
        p = LIT(p, ": ");
        char *v = strobe__json_put_double(p, e->value);
        p = v ? v : LIT(p, "0"); /* non-finite samples were skipped by the caller */
        p = LIT(p, "}}");
        strobe__sink_commit(s, p);
        return 0;
    }
    if (e->kind == STROBE_EVENT_RANGE) {
        p = LIT(p, ", \"dur\": ");
        p = put_ts(p, end_ns, e->start_ns);
    }
    p = LIT(p, ", \"args\": {");
    if (e->correlation_id) {
        p = LIT(p, "\"External id\": ");
        p = put_u64(p, e->correlation_id);
        p = LIT(p, ", ");
    }
    if (e->user_correlation_id) {
        p = LIT(p, "\"User External id\": ");
        p = put_u64(p, e->user_correlation_id);
        p = LIT(p, ", ");
    }
    p = LIT(p, "\"Ev Idx\": ");
    p = put_u64(p, index);
    if (e->flags & STROBE_EVENT_UNFINISHED) p = LIT(p, ", \"strobe_unfinished\": 1");
    if (e->flags & STROBE_EVENT_TRUNCATED) p = LIT(p, ", \"strobe_truncated\": 1");
    if (e->args == NULL) {
        p = LIT(p, "}}");
        strobe__sink_commit(s, p);
        return 0;
    }
    strobe__sink_commit(s, p);
    return write_args_tail(s, e->args);
}

/* ---- Flows: launch -> device work ("ac2g"), as Kineto writes them ------------------------------
 */

enum {
    FLOW_NONE = STROBE__FLOW_NONE,
    FLOW_START = STROBE__FLOW_START,
    FLOW_FINISH = STROBE__FLOW_FINISH
};
typedef strobe__flow_plan flow_plan;

static int is_launch(const strobe_event *e) {
    return e->device_type == STROBE_DEVICE_CPU && e->category &&
           (strcmp(e->category, "cuda_runtime") == 0 || strcmp(e->category, "cuda_driver") == 0);
}

static int is_device_work(const strobe_event *e) {
    return e->device_type != STROBE_DEVICE_CPU && e->category &&
           (strcmp(e->category, "kernel") == 0 || strcmp(e->category, "gpu_memcpy") == 0 ||
            strcmp(e->category, "gpu_memset") == 0);
}

static int event_correlation(const strobe_result *r, size_t i, uint64_t *out) {
    const char *v = strobe_event_arg(r, i, "correlation");
    if (v == NULL || *v < '0' || *v > '9') return 0;
    char *end;
    unsigned long long c = strtoull(v, &end, 10);
    if (c == 0) return 0;
    *out = c;
    return 1;
}

void strobe__flow_plan_free(strobe__flow_plan *fp) {
    free(fp->ph);
    free(fp->id);
    free(fp->pf_id);
    free(fp->next);
    fp->ph = NULL;
    fp->id = NULL;
    fp->pf_id = NULL;
    fp->next = NULL;
}

/* The slot of correlation id c in an open-addressing table of cap (a power of two) keys: its own,
 * or the empty one where it would go. */
static size_t flow_slot(const uint64_t *keys, size_t cap, uint64_t c) {
    size_t h = (size_t)((c * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
    while (keys[h] != 0 && keys[h] != c)
        h = (h + 1) & (cap - 1);
    return h;
}

/* Three passes: the launches by correlation id (the first of an id wins), then each device event
 * onto its launch's list (the earliest first), then the flow ids. A Perfetto id for a second or
 * later device event of a launch is taken above the largest correlation id, skipping any that is
 * a launch's (wrapping around, if ever, past 0). */
int strobe__json_plan_flows(const strobe_result *r, strobe__flow_plan *fp) {
    memset(fp, 0, sizeof *fp);
    size_t launches = 0, work = 0;
    for (size_t i = 0; i < r->event_count; i++) {
        launches += (size_t)is_launch(&r->events[i]);
        work += (size_t)is_device_work(&r->events[i]);
    }
    if (launches == 0 || work == 0) return 0;
    size_t cap = 16;
    while (cap < 2 * launches)
        cap *= 2;
    uint64_t *keys = calloc(cap, sizeof *keys);
    uint32_t *from = malloc(cap * sizeof *from), *head = malloc(cap * sizeof *head);
    fp->ph = calloc(r->event_count, 1);
    fp->id = calloc(r->event_count, sizeof *fp->id);
    fp->pf_id = calloc(r->event_count, sizeof *fp->pf_id);
    fp->next = malloc(r->event_count * sizeof *fp->next);
    int rc = keys && from && head && fp->ph && fp->id && fp->pf_id && fp->next ? 0 : STROBE_ENOMEM;
    uint64_t top = 0; /* the largest launch correlation id */
    for (size_t i = 0; rc == 0 && i < r->event_count; i++) {
        uint64_t c;
        if (!is_launch(&r->events[i]) || !event_correlation(r, i, &c)) continue;
        size_t h = flow_slot(keys, cap, c);
        if (keys[h] != 0) continue;
        keys[h] = c;
        from[h] = (uint32_t)i;
        head[h] = STROBE__FLOW_NO_NEXT;
        if (c > top) top = c;
    }
    for (size_t i = 0; rc == 0 && i < r->event_count; i++) {
        uint64_t c;
        if (!is_device_work(&r->events[i]) || !event_correlation(r, i, &c)) continue;
        size_t h = flow_slot(keys, cap, c);
        if (keys[h] == 0) continue;
        fp->ph[i] = FLOW_FINISH;
        fp->id[i] = c;
        uint32_t first = head[h];
        if (first == STROBE__FLOW_NO_NEXT || r->events[i].start_ns < r->events[first].start_ns) {
            fp->next[i] = first;
            head[h] = (uint32_t)i;
        } else {
            fp->next[i] = fp->next[first];
            fp->next[first] = (uint32_t)i;
        }
    }
    uint64_t fresh = top;
    for (size_t h = 0; rc == 0 && h < cap; h++) {
        if (keys[h] == 0 || head[h] == STROBE__FLOW_NO_NEXT) continue;
        uint32_t l = from[h];
        fp->ph[l] = FLOW_START;
        fp->id[l] = fp->pf_id[l] = keys[h];
        fp->next[l] = head[h];
        fp->pf_id[head[h]] = keys[h];
        for (uint32_t k = fp->next[head[h]]; k != STROBE__FLOW_NO_NEXT; k = fp->next[k]) {
            do
                fresh++;
            while (fresh == 0 || keys[flow_slot(keys, cap, fresh)] == fresh);
            fp->pf_id[k] = fresh;
        }
    }
    free(keys);
    free(from);
    free(head);
    if (rc) strobe__flow_plan_free(fp);
    return rc;
}

/* The flow event of an event that has one, on its track at its start. */
static void write_flow(const strobe_result *r, strobe__sink *s, const strobe_event *e, int ph,
                       uint64_t id) {
    char *p = strobe__sink_reserve(s, 256);
    if (p == NULL) return;
    p = ph == FLOW_START ? LIT(p, ",\n  {\"ph\": \"s\", \"id\": ")
                         : LIT(p, ",\n  {\"ph\": \"f\", \"id\": ");
    p = put_u64(p, id);
    p = LIT(p, ", \"pid\": ");
    p = put_i64(p, e->device_type == STROBE_DEVICE_CPU ? r->pid : (int64_t)e->device_index);
    p = LIT(p, ", \"tid\": ");
    p = put_i64(p, e->tid);
    p = LIT(p, ", \"ts\": ");
    p = put_ts(p, e->start_ns, base_ns(r));
    p = LIT(p, ", \"cat\": \"ac2g\", \"name\": \"ac2g\"");
    if (ph == FLOW_FINISH) p = LIT(p, ", \"bp\": \"e\"");
    p = LIT(p, "}");
    strobe__sink_commit(s, p);
}

static int is_skipped(const strobe_event *e) {
    return e->kind == STROBE_EVENT_COUNTER && !isfinite(e->value);
}

/* The end each range is written with.
 *
 * Viewers compute with doubles: Chrome DevTools and speedscope take ts relative to the first event
 * and add dur to it, and the sum lands an ulp either side of the same instant computed another
 * way (0.07 + 0.01 != 0.08). A range that ends in the very nanosecond its parent ends, or its next
 * sibling begins (the clock did not advance between the two reads), then looks mis-nested. Such a
 * range is written ending 1 ns earlier (never before its start), which no rounding can undo; the
 * result itself keeps the times as read. Ranges come after their parents, so one pass does. */
static int64_t *display_ends(const strobe_result *r) {
    int64_t *end = malloc((r->event_count ? r->event_count : 1) * sizeof *end);
    if (end == NULL) return NULL;
    for (size_t i = 0; i < r->event_count; i++) {
        const strobe_event *e = &r->events[i];
        int64_t d = e->end_ns;
        if (e->kind == STROBE_EVENT_RANGE) {
            if (e->next_sibling != STROBE_NO_EVENT && e->next_sibling < r->event_count) {
                const strobe_event *nx = &r->events[e->next_sibling];
                if (nx->kind == STROBE_EVENT_RANGE && d >= nx->start_ns) d = nx->start_ns - 1;
            }
            if (e->parent != STROBE_NO_EVENT && e->parent < i && d >= end[e->parent])
                d = end[e->parent] - 1;
            if (d < e->start_ns) d = e->start_ns;
        }
        end[i] = d;
    }
    return end;
}

/* Every event of the result with its display end and its flows, after the whole trace's header
 * and metadata events (`whole`), or after the device tracks' metadata alone (events appended to a
 * trace that has its header: strobe__json_write_events). @return 0 or the sink's error. */
static int write_events(const strobe_result *r, strobe__sink *s, int whole) {
    /* JSON has no NaN or infinity, and a made-up value would mislead: such counter samples are
     * left out and counted in the header, which comes first, hence this pass. */
    uint64_t skipped = 0;
    for (size_t i = 0; i < r->event_count; i++)
        skipped += (uint64_t)is_skipped(&r->events[i]);
    int64_t *end = display_ends(r);
    if (end == NULL) return STROBE_ENOMEM;
    flow_plan fp;
    if (strobe__json_plan_flows(r, &fp)) {
        free(end);
        return STROBE_ENOMEM;
    }
    if (whole) {
        write_header(r, s, skipped);
        write_metadata_events(r, s);
    } else {
        write_device_metadata(r, s);
    }
    int rc = 0;
    for (size_t i = 0; i < r->event_count && s->err == 0 && rc == 0; i++) {
        const strobe_event *e = &r->events[i];
        if (is_skipped(e)) continue;
        rc = write_event(r, s, e, end[i], i);
        if (rc == 0 && fp.ph && fp.ph[i]) write_flow(r, s, e, fp.ph[i], fp.id[i]);
    }
    free(end);
    strobe__flow_plan_free(&fp);
    return rc ? rc : s->err;
}

static int json_write(const strobe_result *r, strobe__sink *s) {
    int rc = write_events(r, s, 1);
    if (rc) return rc;
    write_footer(r, s);
    return s->err;
}

int strobe__json_write_events(const strobe_result *r, strobe__sink *s) {
    return write_events(r, s, 0);
}

/* The default format: any path that no other writer claims is written as JSON. */
static int json_accepts_path(const char *path) {
    (void)path;
    return 1;
}

const strobe__writer_ops strobe__json_writer = {
    .name = "json",
    .accepts_path = json_accepts_path,
    .write = json_write,
};
