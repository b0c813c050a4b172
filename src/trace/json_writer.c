/* json_writer.c: Chrome trace JSON in Kineto's schema, behind the event-level writer interface
 * (writer.h).
 *
 * Contents (the formatting primitives, integers, microsecond timestamps, doubles and escaped
 * strings, are in util/json_fmt.h):
 *   1. Helpers; the "strobe" object (version, clock, stats, warnings), the process's name, and
 *      the plan of the "ac2g" flows, shared with the Perfetto writer and the result walk.
 *   2. The calls: begin (the top-level object up to traceEvents: schemaVersion,
 *      deviceProperties, trace_id, the "strobe" object and metadata when known, displayTimeUnit,
 *      baseTimeNanoseconds), tracks (metadata events), events (one line each), end (what the
 *      header did not have, traceName).
 *
 * A slice is one "X" line, written at the first call that knows its end: slice_begin when the
 * caller knows it (a saved result), else slice_end (the stream, whose open ranges wait).
 *
 * Speed matters here: a result can hold tens of millions of events, and saving it is the one
 * cost a user waits for. Events are formatted straight into the sink's buffer with hand-written
 * integer and string formatting, one buffer reservation per event; no stdio on the per-event path
 * except for counter values, which are rare. Timestamps never go through a double: consumers
 * parse them as doubles already, and a second rounding here would let children end after their
 * parents. */
#include "json_writer.h"
#include "json_profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strobe/error.h"
#include "kineto.h"
#include "result_internal.h"
#include "strobe/version.h"
#include "strobe/writer.h"
#include "util/u64map.h"
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

/* ---- 1. Helpers, the "strobe" object, flows ------------------------------------------------- */

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

/* ---- Flows: forward op -> backward op ("fwdbwd"), as torch links them ------------------------ */

/* An arg's integer value (args are JSON text), or `none`. */
static int64_t arg_int(const strobe_result *r, size_t i, const char *key, int64_t none) {
    const char *v = strobe_event_arg(r, i, key);
    if (v == NULL) return none;
    char *end;
    long long x = strtoll(v, &end, 10);
    return end == v ? none : (int64_t)x;
}

/* The key of a (torch thread, sequence number) pair: thread ids above 2^16 may collide, which
 * links at worst one op to a wrong one; torch numbers its threads from 1. */
static uint64_t fwd_key(uint64_t tid, int64_t seq) {
    return tid << 48 ^ ((uint64_t)seq & ((UINT64_C(1) << 48) - 1));
}

typedef struct bwd_op {
    int64_t end;
    uint32_t depth, event;
    uint64_t key;
} bwd_op;

static int bwd_cmp(const void *a, const void *b) {
    const bwd_op *x = a, *y = b;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    if (x->depth != y->depth) return x->depth > y->depth ? -1 : 1; /* the inner one ends first */
    return x->event < y->event ? -1 : x->event > y->event;
}

static int mark_cmp(const void *a, const void *b) {
    const strobe__fwdbwd_mark *x = a, *y = b;
    return x->event < y->event ? -1 : x->event > y->event;
}

int strobe__fwdbwd_plan_make(const strobe_result *r, strobe__fwdbwd_plan *fb) {
    fb->marks = NULL;
    fb->n = 0;
    if (r->torch_tids == NULL) return 0;
    strobe__u64map fwd = {0};
    bwd_op *bwd = NULL;
    size_t nb = 0, cap = 0;
    int rc = 0;
    for (size_t i = 0; i < r->event_count && rc == 0; i++) {
        const strobe_event *e = &r->events[i];
        if (e->kind != STROBE_EVENT_RANGE || e->thread_index >= r->torch_tid_count) continue;
        int64_t seq = arg_int(r, i, STROBE_KINETO_ARG_SEQUENCE_NUMBER, -1);
        if (seq < 0) continue;
        int64_t ftid = arg_int(r, i, STROBE_KINETO_ARG_FWD_THREAD_ID, 0);
        if (ftid > 0) {
            if (nb == cap) {
                cap = cap ? 2 * cap : 256;
                bwd_op *p = realloc(bwd, cap * sizeof *p);
                if (p == NULL) {
                    rc = STROBE_ENOMEM;
                    break;
                }
                bwd = p;
            }
            bwd[nb++] = (bwd_op){e->end_ns, e->depth, (uint32_t)i, fwd_key((uint64_t)ftid, seq)};
            continue;
        }
        uint64_t tid = r->torch_tids[e->thread_index];
        if (tid == 0) continue;
        /* Of the forward ops with one number on one thread, the last to start. */
        int inserted;
        uint64_t *v = strobe__u64map_put(&fwd, fwd_key(tid, seq), &inserted);
        if (v == NULL) {
            rc = STROBE_ENOMEM;
        } else if (inserted || r->events[*v].start_ns <= e->start_ns) {
            *v = i;
        }
    }
    if (rc == 0 && nb) {
        qsort(bwd, nb, sizeof *bwd, bwd_cmp);
        fb->marks = malloc(2 * nb * sizeof *fb->marks);
        if (fb->marks == NULL) rc = STROBE_ENOMEM;
    }
    uint64_t id = 0;
    for (size_t k = 0; rc == 0 && k < nb; k++) {
        uint64_t *v = strobe__u64map_get(&fwd, bwd[k].key);
        if (v == NULL || *v == UINT64_MAX) continue;
        id++;
        fb->marks[fb->n++] = (strobe__fwdbwd_mark){(uint32_t)*v, STROBE__FLOW_START, id};
        fb->marks[fb->n++] = (strobe__fwdbwd_mark){bwd[k].event, STROBE__FLOW_FINISH, id};
        *v = UINT64_MAX; /* one flow per forward op, as torch's */
    }
    if (rc == 0 && fb->n) qsort(fb->marks, fb->n, sizeof *fb->marks, mark_cmp);
    free(bwd);
    strobe__u64map_free(&fwd);
    if (rc) {
        free(fb->marks);
        fb->marks = NULL;
        fb->n = 0;
    }
    return rc;
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
           (strcmp(e->category, STROBE_KINETO_CAT_CUDA_RUNTIME) == 0 ||
            strcmp(e->category, STROBE_KINETO_CAT_CUDA_DRIVER) == 0);
}

static int is_device_work(const strobe_event *e) {
    return e->device_type != STROBE_DEVICE_CPU && e->category &&
           (strcmp(e->category, STROBE_KINETO_CAT_KERNEL) == 0 ||
            strcmp(e->category, STROBE_KINETO_CAT_GPU_MEMCPY) == 0 ||
            strcmp(e->category, STROBE_KINETO_CAT_GPU_MEMSET) == 0);
}

static int event_correlation(const strobe_result *r, size_t i, uint64_t *out) {
    const char *v = strobe_event_arg(r, i, STROBE_KINETO_ARG_CORRELATION);
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

/* ---- 2. The writer's calls: header, tracks, events, footer ----------------------------------- */

typedef struct jw {
    strobe__writer base;
    int first;     /* the next element of traceEvents is its first: no separator */
    int meta_done; /* the header had the "strobe" object and the metadata */
    char cat[32];  /* the last category (when short), and as a JSON string (cat_len 0: none) */
    char cat_json[STROBE__JSON_STRING_MAX(32)];
    size_t cat_len;
    strobe__json_profiles *prof; /* the CPU samples, written at end (json_profile.h) */
} jw;

/* Writes the "strobe" object and the user's metadata as top-level members. */
static void write_top_meta(strobe__sink *s, const strobe__wr_info *in) {
    if (in->stats) {
        emit(s, ",\n  \"strobe\": ");
        strobe__json_write_strobe_object(in->stats, s, in->skipped_counters);
    } else if (in->strobe_json) {
        emit(s, ",\n  \"strobe\": ");
        emit(s, in->strobe_json);
    }
    /* User metadata values were validated as JSON when they were added: pasted verbatim. */
    for (size_t i = 0; i < in->meta_count; i++) {
        const strobe__meta *m = &in->meta[i];
        if (m->key == NULL || m->json == NULL || strobe__meta_key_reserved(m->key) == 2) continue;
        emit(s, ",\n  ");
        emit_string(s, m->key);
        emit(s, ": ");
        emit(s, m->json);
    }
}

static int json_begin(strobe__writer *w, const strobe__wr_info *in) {
    jw *j = (jw *)w;
    strobe__sink *s = w->out;
    w->base_ns = in->base_ns;
    /* deviceProperties was built as JSON by the device merge (gpu.c). */
    emit(s, "{\n  \"" STROBE_KINETO_KEY_SCHEMA_VERSION
            "\": 1,\n  \"" STROBE_KINETO_KEY_DEVICE_PROPERTIES "\": ");
    emit(s, in->device_props ? in->device_props : "[]");
    emit(s, ",\n  \"" STROBE_KINETO_KEY_TRACE_ID "\": ");
    emit_string(s, in->trace_id ? in->trace_id : "");
    if (in->stats) {
        write_top_meta(s, in);
        j->meta_done = 1;
    }
    emit(s, ",\n  \"" STROBE_KINETO_KEY_DISPLAY_TIME_UNIT
            "\": \"ms\",\n  \"" STROBE_KINETO_KEY_BASE_TIME_NS "\": ");
    emit_i64(s, in->base_ns);
    emit(s, ",\n  \"" STROBE_KINETO_KEY_TRACE_EVENTS "\": [\n");
    j->first = 1;
    return s->err;
}

static int json_end(strobe__writer *w, const strobe__wr_info *in) {
    jw *j = (jw *)w;
    strobe__sink *s = w->out;
    int rc = strobe__json_profiles_write(j->prof, w, &j->first);
    if (rc) return rc;
    emit(s, "\n  ]");
    if (!j->meta_done) write_top_meta(s, in);
    if (in->trace_name) {
        emit(s, ",\n  \"" STROBE_KINETO_KEY_TRACE_NAME "\": ");
        emit_string(s, in->trace_name);
    }
    emit(s, "\n}\n");
    return s->err;
}

/* One metadata event ("ph":"M"), Kineto's way of naming and ordering processes and threads.
 * Exactly one of str_value / int_value is used. */
static void write_meta_event(jw *j, const char *name, int64_t pid, int64_t tid, const char *arg,
                             const char *str_value, int64_t int_value) {
    strobe__sink *s = j->base.out;
    emit(s, j->first ? "  {\"name\": \"" : ",\n  {\"name\": \"");
    j->first = 0;
    emit(s, name);
    emit(s, "\", \"ph\": \"" STROBE_KINETO_PH_METADATA "\", \"ts\": 0.000, \"pid\": ");
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

/* Processes and devices: name, label, sort index; threads and streams: name, sort index. A lane
 * is its thread's (pid, tid) in JSON, which nests slices by time alone: nothing to declare. */
static int json_track(strobe__writer *w, uint32_t id, const strobe__wr_track *t) {
    jw *j = (jw *)w;
    (void)id;
    const char *name = t->name ? t->name : "";
    switch (t->kind) {
    case STROBE__WR_PROCESS:
    case STROBE__WR_DEVICE:
        write_meta_event(j, STROBE_KINETO_META_PROCESS_NAME, t->pid, 0, STROBE_KINETO_META_ARG_NAME,
                         name, 0);
        if (t->label)
            write_meta_event(j, STROBE_KINETO_META_PROCESS_LABELS, t->pid, 0,
                             STROBE_KINETO_META_ARG_LABELS, t->label, 0);
        write_meta_event(j, STROBE_KINETO_META_PROCESS_SORT_INDEX, t->pid, 0,
                         STROBE_KINETO_META_ARG_SORT_INDEX, NULL, t->sort_index);
        break;
    case STROBE__WR_THREAD:
    case STROBE__WR_STREAM:
        write_meta_event(j, STROBE_KINETO_META_THREAD_NAME, t->pid, t->tid,
                         STROBE_KINETO_META_ARG_NAME, name, 0);
        write_meta_event(j, STROBE_KINETO_META_THREAD_SORT_INDEX, t->pid, t->tid,
                         STROBE_KINETO_META_ARG_SORT_INDEX, NULL, t->sort_index);
        break;
    default:
        break;
    }
    return w->out->err;
}

/* Room for everything of an event line except its strings and args: the literals (about 150
 * bytes) and at most eight numbers of at most 24 bytes. */
#define EVENT_FIXED 512

static size_t name_len(const strobe__wr_event *e) {
    if (e->name == NULL) return 0;
    return e->name_len == (size_t)-1 ? strlen(e->name) : e->name_len;
}

/* The phases of the lines event_head starts. */
enum { PH_COMPLETE, PH_INSTANT, PH_COUNTER };

/* The line's head, up to and including the ts. A category is escaped once and kept while the
 * events that follow have the same. */
static char *event_head(jw *j, char *p, int ph, const strobe__wr_event *e, size_t nlen) {
    const strobe__wr_track *t = &j->base.tracks[e->track];
    j->first = 0;
    switch (ph) {
    case PH_COMPLETE:
        p = LIT(p, ",\n  {\"ph\": \"" STROBE_KINETO_PH_COMPLETE "\", \"cat\": ");
        break;
    case PH_INSTANT:
        p = LIT(p, ",\n  {\"ph\": \"" STROBE_KINETO_PH_INSTANT "\", \"s\": \"t\", \"cat\": ");
        break;
    default:
        p = LIT(p, ",\n  {\"ph\": \"" STROBE_KINETO_PH_COUNTER "\", \"cat\": ");
        break;
    }
    const char *cat = e->cat ? e->cat : "";
    if (j->cat_len == 0 || strcmp(cat, j->cat) != 0) {
        size_t clen = strlen(cat);
        j->cat_len = 0;
        if (clen < sizeof j->cat) {
            memcpy(j->cat, cat, clen + 1);
            j->cat_len = (size_t)(put_string(j->cat_json, cat, clen) - j->cat_json);
        } else {
            p = put_string(p, cat, clen);
        }
    }
    if (j->cat_len) {
        memcpy(p, j->cat_json, j->cat_len);
        p += j->cat_len;
    }
    p = LIT(p, ", \"name\": ");
    p = put_string(p, e->name ? e->name : "", nlen);
    p = LIT(p, ", \"pid\": ");
    p = put_i64(p, t->pid);
    p = LIT(p, ", \"tid\": ");
    p = put_i64(p, t->tid);
    p = LIT(p, ", \"ts\": ");
    return put_ts(p, e->ts, j->base.base_ns);
}

/* Writes args as members of the args object (after `sep` for the first). Returns the separator
 * for the next, or NULL on the sink's error. */
static const char *write_args(strobe__sink *s, const strobe__wr_arg *a, size_t n, const char *sep) {
    for (size_t i = 0; i < n; i++, a++) {
        if (a->name == NULL) continue;
        size_t klen = strlen(a->name);
        size_t vlen = 0;
        if (a->type == STROBE__PFT_STRING || a->type == STROBE__PFT_JSON)
            vlen = a->s == NULL ? 0 : a->slen == (size_t)-1 ? strlen(a->s) : a->slen;
        char *p = strobe__sink_reserve(s, STROBE__JSON_STRING_MAX(klen) +
                                              STROBE__JSON_STRING_MAX(vlen) + 48);
        if (p == NULL) return NULL;
        memcpy(p, sep, strlen(sep));
        p += strlen(sep);
        sep = ", ";
        p = put_string(p, a->name, klen);
        p = LIT(p, ": ");
        switch (a->type) {
        case STROBE__PFT_INT:
            p = put_i64(p, a->i);
            break;
        case STROBE__PFT_UINT:
            p = put_u64(p, a->u);
            break;
        case STROBE__PFT_BOOL:
            p = a->i ? LIT(p, "true") : LIT(p, "false");
            break;
        case STROBE__PFT_DOUBLE: {
            char *v = strobe__json_put_double(p, a->d);
            p = v ? v : LIT(p, "null");
            break;
        }
        case STROBE__PFT_STRING:
            p = put_string(p, a->s ? a->s : "", vlen);
            break;
        default: /* JSON text: pasted */
            if (vlen == 0) {
                p = LIT(p, "null");
            } else {
                memcpy(p, a->s, vlen);
                p += vlen;
            }
            break;
        }
        strobe__sink_commit(s, p);
    }
    return sep;
}

/* A flow event on track `track` at `ts` (an event's own: its start). */
static void write_flow(jw *j, uint32_t track, int64_t ts, int ph, uint64_t id, int fwdbwd) {
    strobe__sink *s = j->base.out;
    const strobe__wr_track *t = &j->base.tracks[track];
    char *p = strobe__sink_reserve(s, 256);
    if (p == NULL) return;
    p = ph == STROBE__FLOW_START
            ? LIT(p, ",\n  {\"ph\": \"" STROBE_KINETO_PH_FLOW_START "\", \"id\": ")
            : LIT(p, ",\n  {\"ph\": \"" STROBE_KINETO_PH_FLOW_FINISH "\", \"id\": ");
    p = put_u64(p, id);
    p = LIT(p, ", \"pid\": ");
    p = put_i64(p, t->pid);
    p = LIT(p, ", \"tid\": ");
    p = put_i64(p, t->tid);
    p = LIT(p, ", \"ts\": ");
    p = put_ts(p, ts, j->base.base_ns);
    p = fwdbwd ? LIT(p, ", \"cat\": \"" STROBE_KINETO_CAT_FWDBWD
                        "\", \"name\": \"" STROBE_KINETO_CAT_FWDBWD "\"")
               : LIT(p, ", \"cat\": \"" STROBE_KINETO_CAT_FLOW
                        "\", \"name\": \"" STROBE_KINETO_CAT_FLOW "\"");
    if (ph == STROBE__FLOW_FINISH) p = LIT(p, ", \"bp\": \"e\"");
    p = LIT(p, "}");
    strobe__sink_commit(s, p);
}

/* A flow given by a Perfetto-style id: torch's fwdbwd flows carry STROBE_WRITER_FLOW_FWDBWD
 * (strobe merge keeps their category so), written with their own category and id. */
static void write_id_flow(jw *j, const strobe__wr_event *e, int ph, uint64_t id) {
    int fb = (id & STROBE_WRITER_FLOW_FWDBWD) != 0;
    write_flow(j, e->track, e->ts, ph, id & ~STROBE_WRITER_FLOW_FWDBWD, fb);
}

/* A slice ("X") or an instant, with its args and those given at its end, then its flow. */
static int write_event(jw *j, const strobe__wr_event *e, int slice, const strobe__wr_arg *more,
                       size_t nmore) {
    strobe__sink *s = j->base.out;
    size_t nlen = name_len(e), clen = e->cat ? strlen(e->cat) : 0;
    char *p = strobe__sink_reserve(s, EVENT_FIXED + STROBE__JSON_STRING_MAX(nlen) +
                                          STROBE__JSON_STRING_MAX(clen));
    if (p == NULL) return s->err;
    if (slice) {
        p = event_head(j, p, PH_COMPLETE, e, nlen);
        p = LIT(p, ", \"dur\": ");
        p = put_ts(p, e->shown_end ? e->shown_end : e->end, e->ts);
    } else {
        p = event_head(j, p, PH_INSTANT, e, nlen);
    }
    p = LIT(p, ", \"args\": {");
    strobe__sink_commit(s, p);
    const char *sep = write_args(s, e->args, e->nargs, "");
    if (sep) sep = write_args(s, more, nmore, sep);
    p = sep ? strobe__sink_reserve(s, 2) : NULL;
    if (p == NULL) return s->err;
    strobe__sink_commit(s, LIT(p, "}}"));
    if (e->flow_ph != STROBE__FLOW_NONE) {
        write_flow(j, e->track, e->ts, e->flow_ph, e->flow_id, 0);
    } else {
        /* Perfetto's ids only (the public writer's callers): a start per id going out, a finish
         * per id coming in. */
        for (size_t i = 0; i < e->nflow_out; i++)
            write_id_flow(j, e, STROBE__FLOW_START, e->flow_out[i]);
        for (size_t i = 0; i < e->nflow_in; i++)
            write_id_flow(j, e, STROBE__FLOW_FINISH, e->flow_in[i]);
    }
    /* A stream's late start: its forward op was written before this backward op existed. */
    if (e->fb_ph == STROBE__FLOW_FINISH && e->fb_from)
        write_flow(j, e->fb_from_track, e->fb_from_ts, STROBE__FLOW_START, e->fb_id, 1);
    if (e->fb_ph != STROBE__FLOW_NONE) write_flow(j, e->track, e->ts, e->fb_ph, e->fb_id, 1);
    return s->err;
}

static int json_slice_begin(strobe__writer *w, const strobe__wr_event *e) {
    if (!(e->flags & STROBE__WR_COMPLETE)) return 0;
    return write_event((jw *)w, e, 1, NULL, 0);
}

static int json_slice_end(strobe__writer *w, const strobe__wr_event *e, const strobe__wr_arg *args,
                          size_t nargs) {
    if (e->flags & STROBE__WR_COMPLETE) return 0;
    return write_event((jw *)w, e, 1, args, nargs);
}

static int json_instant(strobe__writer *w, const strobe__wr_event *e) {
    return write_event((jw *)w, e, 0, NULL, 0);
}

/* A counter's args are its series: nothing else may go there, or it becomes a series. */
static int json_counter(strobe__writer *w, const strobe__wr_event *e) {
    jw *j = (jw *)w;
    strobe__sink *s = w->out;
    if (!isfinite(e->value)) return 1;
    size_t nlen = name_len(e), clen = e->cat ? strlen(e->cat) : 0;
    char *p = strobe__sink_reserve(s, EVENT_FIXED + 2 * STROBE__JSON_STRING_MAX(nlen) +
                                          STROBE__JSON_STRING_MAX(clen));
    if (p == NULL) return s->err;
    p = event_head(j, p, PH_COUNTER, e, nlen);
    p = LIT(p, ", \"args\": {");
    p = put_string(p, e->name ? e->name : "", nlen);
    p = LIT(p, ": ");
    p = strobe__json_put_double(p, e->value);
    strobe__sink_commit(s, LIT(p, "}}"));
    return 0;
}

/* A CPU sample: kept for the thread's profile, which end writes (json_profile.h). */
static int json_sample(strobe__writer *w, const strobe__wr_event *e) {
    return strobe__json_profiles_add(&((jw *)w)->prof, e);
}

static void json_release(strobe__writer *w) {
    jw *j = (jw *)w;
    strobe__json_profiles_free(j->prof);
    j->prof = NULL;
}

/* The default format: any path that no other writer claims is written as JSON. */
static int json_accepts_path(const char *path) {
    (void)path;
    return 1;
}

const strobe__writer_ops strobe__json_writer = {
    .name = "json",
    .accepts_path = json_accepts_path,
    .running_tail = "\n  ],\n  \"strobe_stream\": {\"complete\": false}\n}\n",
    .pad = 1,
    .size = sizeof(jw),
    .begin = json_begin,
    .track = json_track,
    .slice_begin = json_slice_begin,
    .slice_end = json_slice_end,
    .instant = json_instant,
    .sample = json_sample,
    .counter = json_counter,
    .end = json_end,
    .release = json_release,
};
